//! Words for POSIX `sh`: the one quoting of the command lines pitcrew builds (the sandbox's
//! wrapping, test filters, lockfile refreshes).

/// `text` as one single-quoted `sh` word: nothing in it is expanded, and a `'` is written `'\''`.
pub fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_quotes_survive_and_nothing_expands() {
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote("$HOME `x`"), "'$HOME `x`'");
        assert_eq!(quote(""), "''");
    }
}
