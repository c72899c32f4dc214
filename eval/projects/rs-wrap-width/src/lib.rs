//! Greedy word wrapping for terminal help text.

pub mod indent;

/// The display width of `s`: one column per character (help text is plain ASCII or close).
fn columns(s: &str) -> usize {
    s.chars().count()
}

/// Breaks `text` into lines of at most `width` columns at whitespace; runs of whitespace
/// collapse to one space, and a word wider than `width` gets a line of its own.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut current = String::new();
    for word in text.split_whitespace() {
        if current.is_empty() {
            current.push_str(word);
        } else if columns(&current) + 1 + columns(word) < width {
            current.push(' ');
            current.push_str(word);
        } else {
            lines.push(std::mem::take(&mut current));
            current.push_str(word);
        }
    }
    if !current.is_empty() {
        lines.push(current);
    }
    lines
}

/// [`wrap`], joined with newlines.
pub fn fill(text: &str, width: usize) -> String {
    wrap(text, width).join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_one_line() {
        assert_eq!(wrap("print the help", 40), ["print the help"]);
    }

    #[test]
    fn breaks_between_words() {
        assert_eq!(
            wrap("the quick brown fox jumps over the lazy dog", 13),
            ["the quick", "brown fox", "jumps over", "the lazy dog"]
        );
    }

    #[test]
    fn long_words_get_their_own_line() {
        assert_eq!(
            wrap("see --configuration-file", 6),
            ["see", "--configuration-file"]
        );
    }

    #[test]
    fn whitespace_collapses() {
        assert_eq!(fill("  a \n b\tc  ", 80), "a b c");
        assert!(wrap("   ", 10).is_empty());
    }
}
