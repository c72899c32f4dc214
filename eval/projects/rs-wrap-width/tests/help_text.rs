use linewrap::{fill, wrap};

#[test]
fn no_line_is_wider_than_asked() {
    let text = "Reads the configuration from FILE instead of the default location, \
                which is searched for in the current directory and then in the home directory.";
    for width in 14..60 {
        for line in wrap(text, width) {
            assert!(
                line.chars().count() <= width,
                "{line:?} is wider than {width}"
            );
        }
    }
}

#[test]
fn fill_keeps_every_word() {
    let text = "one two three four five six seven";
    assert_eq!(
        fill(text, 11)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
        text
    );
}
