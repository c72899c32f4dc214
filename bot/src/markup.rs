//! Text made safe inside HTML and XML: the status page, `pitcrew setup app`'s pages, the eval
//! report's charts.

/// Escapes text for element content and quoted attribute values (HTML and XML alike). Characters
/// XML 1.0 cannot hold at all (most control characters) become U+FFFD and line breaks and tabs a
/// space, so a hostile name cannot make the document invalid or break out of an attribute.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(' '),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_control_characters_are_escaped() {
        assert_eq!(escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
        assert_eq!(escape("x\u{0}y\nz"), "x\u{fffd}y z");
        assert_eq!(escape("ünï-code_1.2"), "ünï-code_1.2");
    }
}
