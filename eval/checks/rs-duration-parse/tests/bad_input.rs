use std::time::Duration;

use durparse::{parse_duration, ParseError};

#[test]
fn empty_input_is_an_error() {
    assert_eq!(parse_duration(""), Err(ParseError::Empty));
    assert_eq!(parse_duration("   "), Err(ParseError::Empty));
}

#[test]
fn unit_without_a_number_is_an_error() {
    assert!(parse_duration("h").is_err());
    assert!(parse_duration("ms").is_err());
    assert!(parse_duration("1h m").is_err());
}

#[test]
fn number_too_large_for_u64_is_an_error() {
    assert!(parse_duration("99999999999999999999s").is_err());
}

#[test]
fn duration_too_long_is_an_error() {
    assert!(parse_duration("9999999999999999999d").is_err());
    assert!(parse_duration("18446744073709551615s18446744073709551615s").is_err());
}

#[test]
fn valid_durations_still_parse() {
    assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
    assert_eq!(
        parse_duration("18446744073709551615s"),
        Ok(Duration::from_secs(u64::MAX))
    );
}
