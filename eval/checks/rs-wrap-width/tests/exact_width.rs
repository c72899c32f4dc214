use linewrap::indent::wrap_indented;
use linewrap::{fill, wrap};

#[test]
fn a_line_of_exactly_width_fits() {
    assert_eq!(wrap("the quick", 9), ["the quick"]);
    assert_eq!(wrap("the quick brown fox", 9), ["the quick", "brown fox"]);
}

#[test]
fn fill_uses_the_whole_width() {
    assert_eq!(fill("ab cd ef gh", 5), "ab cd\nef gh");
}

#[test]
fn indented_lines_use_the_whole_width() {
    assert_eq!(wrap_indented("ab cd ef", 7, "  "), ["  ab cd", "  ef"]);
}

#[test]
fn one_column_over_still_breaks() {
    assert_eq!(wrap("the quick", 8), ["the", "quick"]);
}
