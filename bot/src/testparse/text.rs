//! Text helpers shared by the parsers: ANSI stripping, a cursor over lines that takes blocks whole,
//! `path:line` locations, `N word` count lists and the capping of failure messages.

/// Lines kept of a failure message.
const MESSAGE_LINES: usize = 6;
/// Characters kept of one line of a failure message.
const MESSAGE_LINE_CHARS: usize = 240;

/// Removes ANSI escape sequences (colours, cursor moves, charset switches) and resolves carriage
/// returns the way a terminal shows them: of a line rewritten with `\r`, the last version stays.
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                // CSI: parameters and intermediates, then one final byte in @..~.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC (hyperlinks, titles): up to BEL or ESC \.
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' {
                            chars.next_if_eq(&'\\');
                            break;
                        }
                    }
                }
                // Charset designation (`ESC ( B`, which tput's sgr0 emits).
                Some('(' | ')' | '*' | '+') => {
                    chars.next();
                }
                // Any other two-character sequence.
                _ => {}
            },
            '\r' => {
                // `\r\n`, and `\r\r\n` (a CRLF written through a terminal that adds its own CR).
                while chars.next_if_eq(&'\r').is_some() {}
                if chars.peek() == Some(&'\n') {
                    continue;
                }
                // A bare carriage return: what follows overwrites the line so far.
                let start = out.rfind('\n').map_or(0, |i| i + 1);
                if chars.peek().is_some_and(|c| *c != '\n') {
                    out.truncate(start);
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// The lines of a runner's output, read one at a time by a parser that takes some blocks (a
/// failure's message, a test's captured output) whole.
pub(crate) struct Lines<'a> {
    lines: Vec<&'a str>,
    next: usize,
}

impl<'a> Lines<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Lines {
            lines: text.lines().collect(),
            next: 0,
        }
    }

    /// The lines from the next one up to the first that `ends` the block (not taken) or the end of
    /// the output. Reading goes on after them.
    pub(crate) fn until(&mut self, ends: impl Fn(&str) -> bool) -> &[&'a str] {
        let start = self.next;
        while self.next < self.lines.len() && !ends(self.lines[self.next]) {
            self.next += 1;
        }
        &self.lines[start..self.next]
    }

    /// Every line, read or not.
    pub(crate) fn all(&self) -> &[&'a str] {
        &self.lines
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let line = self.lines.get(self.next).copied()?;
        self.next += 1;
        Some(line)
    }
}

/// `path:line` or `path:line:column` → the path and the line. The path must not be empty nor
/// hold whitespace.
pub(crate) fn location(text: &str) -> Option<(String, u32)> {
    let (rest, last) = text.rsplit_once(':')?;
    let last: u32 = last.parse().ok()?;
    let (path, line) = match rest
        .rsplit_once(':')
        .and_then(|(path, middle)| Some((path, middle.parse().ok()?)))
    {
        Some(path_and_line) => path_and_line,
        None => (rest, last),
    };
    if path.is_empty() || path.contains(char::is_whitespace) {
        return None;
    }
    Some((path.to_owned(), line))
}

/// `N word, N word (note), …` → the numbers and words, notes in parentheses dropped. `None` when
/// an item is not a count.
pub(crate) fn counts<'a>(list: &'a str, separator: &str) -> Option<Vec<(u64, &'a str)>> {
    let mut out = Vec::new();
    for item in list.split(separator) {
        let item = item.trim();
        let item = item.split_once(" (").map_or(item, |(head, _)| head).trim();
        let (number, word) = item.split_once(' ')?;
        out.push((number.parse().ok()?, word.trim()));
    }
    Some(out)
}

/// Joins the lines of a failure message: blank lines dropped, trailing whitespace trimmed, at most
/// a few lines of bounded length.
pub(crate) fn message<'a>(lines: impl IntoIterator<Item = &'a str>) -> String {
    let mut kept: Vec<String> = Vec::new();
    for line in lines {
        let line = line.trim_end();
        if line.trim().is_empty() {
            continue;
        }
        if kept.len() == MESSAGE_LINES {
            break;
        }
        kept.push(clip(line, MESSAGE_LINE_CHARS));
    }
    kept.join("\n")
}

/// At most `max` characters, with `…` when cut.
pub(crate) fn clip(line: &str, max: usize) -> String {
    match line.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line.to_owned(),
    }
}

/// The number of leading spaces (tabs count as one).
pub(crate) fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_codes_and_carriage_returns_are_removed() {
        assert_eq!(strip_ansi("\u{1b}[31;1mFAIL\u{1b}[0m x"), "FAIL x");
        assert_eq!(
            strip_ansi("test x ... \u{1b}[31mFAILED\u{1b}(B\u{1b}[m\n"),
            "test x ... FAILED\n"
        );
        assert_eq!(strip_ansi("\u{1b}]8;;http://x\u{7}link\u{1b}]8;;\u{7}"), "link");
        assert_eq!(strip_ansi("\u{1b}]8;;http://x\u{1b}\\link"), "link");
        assert_eq!(strip_ansi("a\r\nb\r\n"), "a\nb\n");
        assert_eq!(strip_ansi("a\r\r\nb\r\r\n"), "a\nb\n");
        assert_eq!(strip_ansi("one\n[  1%]\r[ 50%]\r[100%]\ndone"), "one\n[100%]\ndone");
        assert_eq!(strip_ansi("trailing\r"), "trailing");
    }

    #[test]
    fn locations_have_a_path_and_a_line() {
        assert_eq!(location("src/lib.rs:25:9"), Some(("src/lib.rs".into(), 25)));
        assert_eq!(
            location("tests/test_calc.py:11"),
            Some(("tests/test_calc.py".into(), 11))
        );
        assert_eq!(location("C:/x/y.ts:3:1"), Some(("C:/x/y.ts".into(), 3)));
        assert_eq!(location("a b.rs:1:2"), None);
        assert_eq!(location("src/lib.rs"), None);
        assert_eq!(location(":3"), None);
    }

    #[test]
    fn count_lists_are_read() {
        assert_eq!(
            counts("2 passed (1 slow), 4 failed", ", "),
            Some(vec![(2, "passed"), (4, "failed")])
        );
        assert_eq!(
            counts("1 failed | 3 passed", " | "),
            Some(vec![(1, "failed"), (3, "passed")])
        );
        assert_eq!(counts("many passed", ", "), None);
    }

    #[test]
    fn messages_are_capped() {
        let long = "x".repeat(500);
        let lines = ["", "one", "  ", "two", &long, "4", "5", "6", "7"];
        let text = message(lines);
        assert_eq!(text.lines().count(), MESSAGE_LINES);
        assert!(text.starts_with("one\ntwo\nxxx"));
        assert!(text.lines().nth(2).unwrap_or_default().ends_with('…'));
    }
}
