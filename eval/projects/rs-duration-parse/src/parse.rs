use std::fmt;
use std::time::Duration;

/// Why a string is not a duration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// The input is empty (or only whitespace).
    Empty,
    /// A part does not start with a number that fits in a `u64`.
    InvalidNumber(String),
    /// A number is followed by something other than `ms`, `s`, `m`, `h` or `d`.
    UnknownUnit(String),
    /// A number has no unit after it.
    MissingUnit,
    /// The duration is too long to represent.
    Overflow,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Empty => write!(f, "empty duration"),
            ParseError::InvalidNumber(part) => write!(f, "invalid number in {part:?}"),
            ParseError::UnknownUnit(unit) => {
                write!(f, "unknown unit {unit:?} (expected ms, s, m, h or d)")
            }
            ParseError::MissingUnit => write!(f, "a number needs a unit (ms, s, m, h or d)"),
            ParseError::Overflow => write!(f, "duration too long"),
        }
    }
}

impl std::error::Error for ParseError {}

/// Seconds in one of each unit, except `ms`.
fn unit_seconds(unit: &str) -> Option<u64> {
    match unit {
        "s" => Some(1),
        "m" => Some(60),
        "h" => Some(60 * 60),
        "d" => Some(24 * 60 * 60),
        _ => None,
    }
}

/// Parses a duration such as `"1h30m"`; surrounding whitespace is ignored.
pub fn parse_duration(input: &str) -> Result<Duration, ParseError> {
    let mut rest = input.trim();
    let mut total = Duration::ZERO;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let value: u64 = rest[..digits].parse().unwrap();
        rest = &rest[digits..];

        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];

        let part = match unit {
            "" => return Err(ParseError::MissingUnit),
            "ms" => Duration::from_millis(value),
            unit => match unit_seconds(unit) {
                Some(seconds) => Duration::from_secs(value * seconds),
                None => return Err(ParseError::UnknownUnit(unit.to_owned())),
            },
        };
        total += part;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_units() {
        assert_eq!(parse_duration("45s"), Ok(Duration::from_secs(45)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2d"), Ok(Duration::from_secs(2 * 86_400)));
    }

    #[test]
    fn parts_add_up() {
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(
            parse_duration(" 1m1s500ms "),
            Ok(Duration::from_millis(61_500))
        );
    }

    #[test]
    fn unknown_unit() {
        assert_eq!(
            parse_duration("10x"),
            Err(ParseError::UnknownUnit("x".into()))
        );
    }

    #[test]
    fn missing_unit() {
        assert_eq!(parse_duration("1h30"), Err(ParseError::MissingUnit));
    }
}
