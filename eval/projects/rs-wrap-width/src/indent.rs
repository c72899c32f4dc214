//! Wrapping under a prefix, for option descriptions.

use crate::wrap;

/// Wraps `text` so that each line, with `prefix` in front of it, is at most `width` columns.
pub fn wrap_indented(text: &str, width: usize, prefix: &str) -> Vec<String> {
    let room = width.saturating_sub(prefix.chars().count()).max(1);
    wrap(text, room)
        .into_iter()
        .map(|line| format!("{prefix}{line}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_gets_the_prefix() {
        assert_eq!(
            wrap_indented("write the report to this file", 16, "    "),
            ["    write the", "    report to", "    this file"]
        );
    }
}
