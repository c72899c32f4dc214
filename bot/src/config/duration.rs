//! Human durations in configuration: "500ms", "90s", "10m", "1h30m", "2d", or a bare number of seconds.

use std::time::Duration;

const UNITS: &[(&str, u64)] = &[
    ("d", 86_400_000),
    ("h", 3_600_000),
    ("m", 60_000),
    ("s", 1_000),
    ("ms", 1),
];

/// Why a text is not a duration: a sentence fragment for a `ConfigError::Invalid` message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DurationError {
    #[error("empty duration; expected e.g. \"90s\", \"10m\", \"1h30m\" or \"500ms\"")]
    Empty,
    #[error("duration is too large")]
    TooLarge,
    #[error(
        "expected a number at `{0}`; write durations like \"90s\", \"10m\", \"1h30m\" or \"500ms\" (no fractions or spaces)"
    )]
    NoNumber(String),
    #[error("fractions are not supported (no fractions: write \"1h30m\" or \"90m\", not \"1.5h\")")]
    Fraction,
    #[error("write durations without spaces, like \"{0}s\", \"{0}m\" or \"1h30m\"")]
    Space(String),
    #[error("missing unit after `{0}`; use one of ms, s, m, h, d (e.g. \"{0}s\")")]
    NoUnit(String),
    #[error("unknown unit `{0}`; use one of ms, s, m, h, d")]
    UnknownUnit(String),
}

/// Parses a duration.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let s = text.trim();
    if s.is_empty() {
        return Err(DurationError::Empty);
    }
    if s.bytes().all(|b| b.is_ascii_digit()) {
        return s
            .parse::<u64>()
            .map(Duration::from_secs)
            .map_err(|_| DurationError::TooLarge);
    }

    let mut total_ms: u64 = 0;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(DurationError::NoNumber(rest.to_owned()));
        }
        let (number, after) = rest.split_at(digits);
        if after.starts_with(['.', ',']) {
            return Err(DurationError::Fraction);
        }
        let unit_len = after.bytes().take_while(u8::is_ascii_alphabetic).count();
        let (unit, after) = after.split_at(unit_len);
        if unit.is_empty() && after.starts_with(char::is_whitespace) {
            return Err(DurationError::Space(number.to_owned()));
        }
        if unit.is_empty() {
            return Err(DurationError::NoUnit(number.to_owned()));
        }
        let Some(&(_, unit_ms)) = UNITS.iter().find(|(u, _)| *u == unit) else {
            return Err(DurationError::UnknownUnit(unit.to_owned()));
        };
        let number: u64 = number.parse().map_err(|_| DurationError::TooLarge)?;
        total_ms = number
            .checked_mul(unit_ms)
            .and_then(|ms| total_ms.checked_add(ms))
            .ok_or(DurationError::TooLarge)?;
        rest = after;
    }
    Ok(Duration::from_millis(total_ms))
}

/// The shortest canonical spelling, e.g. 5400s → "1h30m"; parses back to the same value
/// (at millisecond precision, which is all the parser accepts).
pub(crate) fn format_duration(d: Duration) -> String {
    let mut ms = d.as_millis();
    if ms == 0 {
        return "0s".into();
    }
    let mut out = String::new();
    for (unit, unit_ms) in UNITS {
        let unit_ms = u128::from(*unit_ms);
        let n = ms / unit_ms;
        if n > 0 {
            out.push_str(&format!("{n}{unit}"));
            ms %= unit_ms;
        }
    }
    out
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_forms() {
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2d").unwrap(), Duration::from_secs(172_800));
        assert_eq!(parse_duration("45").unwrap(), Duration::from_secs(45));
        assert_eq!(parse_duration(" 1m5s ").unwrap(), Duration::from_secs(65));
    }

    #[test]
    fn rejects_bad_durations_with_a_reason() {
        assert!(parse_duration("").unwrap_err().to_string().contains("empty"));
        assert!(
            parse_duration("10x")
                .unwrap_err()
                .to_string()
                .contains("unknown unit `x`")
        );
        assert!(parse_duration("1.5h").unwrap_err().to_string().contains("no fractions"));
        assert!(
            parse_duration("5m10")
                .unwrap_err()
                .to_string()
                .contains("missing unit after `10`")
        );
        assert!(
            parse_duration("10 minutes")
                .unwrap_err()
                .to_string()
                .contains("without spaces")
        );
        assert!(
            parse_duration("-5s")
                .unwrap_err()
                .to_string()
                .contains("expected a number")
        );
        assert!(
            parse_duration("h")
                .unwrap_err()
                .to_string()
                .contains("expected a number")
        );
        assert!(
            parse_duration("99999999999999999999d")
                .unwrap_err()
                .to_string()
                .contains("too large")
        );
    }

    #[test]
    fn formats_canonically_and_round_trips() {
        for (text, canonical) in [
            ("90s", "1m30s"),
            ("600", "10m"),
            ("1h30m", "1h30m"),
            ("500ms", "500ms"),
            ("60s", "1m"),
            ("0", "0s"),
        ] {
            let d = parse_duration(text).unwrap();
            assert_eq!(format_duration(d), canonical);
            assert_eq!(parse_duration(canonical).unwrap(), d);
        }
    }
}
