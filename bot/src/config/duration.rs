//! Human durations in configuration: "500ms", "90s", "10m", "1h30m", "2d", or a bare number of seconds.

use std::time::Duration;

const UNITS: &[(&str, u64)] = &[
    ("d", 86_400_000),
    ("h", 3_600_000),
    ("m", 60_000),
    ("s", 1_000),
    ("ms", 1),
];

/// Parses a duration. The error is a sentence fragment for a `ConfigError::Invalid` message.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let s = text.trim();
    if s.is_empty() {
        return Err("empty duration; expected e.g. \"90s\", \"10m\", \"1h30m\" or \"500ms\"".into());
    }
    if s.bytes().all(|b| b.is_ascii_digit()) {
        return s
            .parse::<u64>()
            .map(Duration::from_secs)
            .map_err(|_| "duration is too large".to_owned());
    }

    let mut total_ms: u64 = 0;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(format!(
                "expected a number at `{rest}`; write durations like \"90s\", \"10m\", \"1h30m\" or \"500ms\" (no fractions or spaces)"
            ));
        }
        let (number, after) = rest.split_at(digits);
        if after.starts_with(['.', ',']) {
            return Err("fractions are not supported (no fractions: write \"1h30m\" or \"90m\", not \"1.5h\")".into());
        }
        let unit_len = after.bytes().take_while(u8::is_ascii_alphabetic).count();
        let (unit, after) = after.split_at(unit_len);
        if unit.is_empty() && after.starts_with(char::is_whitespace) {
            return Err(format!(
                "write durations without spaces, like \"{number}s\", \"{number}m\" or \"1h30m\""
            ));
        }
        if unit.is_empty() {
            return Err(format!(
                "missing unit after `{number}`; use one of ms, s, m, h, d (e.g. \"{number}s\")"
            ));
        }
        let Some(&(_, unit_ms)) = UNITS.iter().find(|(u, _)| *u == unit) else {
            return Err(format!("unknown unit `{unit}`; use one of ms, s, m, h, d"));
        };
        let number: u64 = number.parse().map_err(|_| "duration is too large".to_owned())?;
        total_ms = number
            .checked_mul(unit_ms)
            .and_then(|ms| total_ms.checked_add(ms))
            .ok_or_else(|| "duration is too large".to_owned())?;
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
        assert!(parse_duration("").unwrap_err().contains("empty"));
        assert!(parse_duration("10x").unwrap_err().contains("unknown unit `x`"));
        assert!(parse_duration("1.5h").unwrap_err().contains("no fractions"));
        assert!(parse_duration("5m10").unwrap_err().contains("missing unit after `10`"));
        assert!(parse_duration("10 minutes").unwrap_err().contains("without spaces"));
        assert!(parse_duration("-5s").unwrap_err().contains("expected a number"));
        assert!(parse_duration("h").unwrap_err().contains("expected a number"));
        assert!(
            parse_duration("99999999999999999999d")
                .unwrap_err()
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
