//! RFC 3339 timestamps as GitHub writes and reads them (`2016-07-11T22:14:10Z`), converted to and from
//! `SystemTime` without a date-time crate: the civil-calendar arithmetic is Howard Hinnant's
//! `days_from_civil` / `civil_from_days`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `YYYY-MM-DDTHH:MM:SSZ` in UTC, whole seconds (what the Checks API documents). Times before 1970
/// are written as the epoch: GitHub has no use for them.
pub fn format_rfc3339(time: SystemTime) -> String {
    let seconds = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let days = (seconds / 86_400) as i64;
    let of_day = seconds % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60
    )
}

/// Reads `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`; `None` for anything else or a time before 1970.
pub fn parse_rfc3339(text: &str) -> Option<SystemTime> {
    let bytes = text.as_bytes();
    if bytes.len() < 20 || bytes[4] != b'-' || bytes[7] != b'-' || !matches!(bytes[10], b'T' | b't' | b' ') {
        return None;
    }
    if bytes[13] != b':' || bytes[16] != b':' {
        return None;
    }
    let number = |range: std::ops::Range<usize>| -> Option<i64> {
        let digits = text.get(range)?;
        digits
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| digits.parse().ok())?
    };
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    // 60 is a leap second; SystemTime has none, so it counts as the next second.
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = &text[19..];
    let mut nanos = 0_u32;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        for (i, digit) in fraction[..digits].bytes().take(9).enumerate() {
            nanos += u32::from(digit - b'0') * 10_u32.pow(8 - i as u32);
        }
        rest = &fraction[digits..];
    }
    let offset_seconds = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let offset = rest.get(1..)?;
            let (hours, minutes) = offset.split_once(':')?;
            if hours.len() != 2
                || minutes.len() != 2
                || !(hours.bytes().chain(minutes.bytes())).all(|b| b.is_ascii_digit())
            {
                return None;
            }
            let (hours, minutes): (i64, i64) = (hours.parse().ok()?, minutes.parse().ok()?);
            if hours > 23 || minutes > 59 {
                return None;
            }
            sign * (hours * 3600 + minutes * 60)
        }
    };
    let local = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
    let utc = u64::try_from(local - offset_seconds).ok()?;
    Some(UNIX_EPOCH + Duration::new(utc, nanos))
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn at(seconds: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(seconds)
    }

    #[test]
    fn known_instants_are_written_and_read() {
        // `date -u -d @1468275250` = 2016-07-11T22:14:10Z (the installation-token example).
        assert_eq!(format_rfc3339(at(1_468_275_250)), "2016-07-11T22:14:10Z");
        assert_eq!(parse_rfc3339("2016-07-11T22:14:10Z"), Some(at(1_468_275_250)));
        assert_eq!(format_rfc3339(at(0)), "1970-01-01T00:00:00Z");
        assert_eq!(format_rfc3339(at(951_782_400)), "2000-02-29T00:00:00Z");
        assert_eq!(format_rfc3339(at(4_107_542_399)), "2100-02-28T23:59:59Z");
    }

    #[test]
    fn every_day_for_centuries_round_trips() {
        for day in (0..200 * 366).step_by(7) {
            let time = at(day * 86_400 + 12_345);
            assert_eq!(parse_rfc3339(&format_rfc3339(time)), Some(time));
        }
    }

    #[test]
    fn offsets_and_fractions_are_understood() {
        let z = parse_rfc3339("2024-03-01T10:00:00Z").unwrap();
        assert_eq!(parse_rfc3339("2024-03-01T10:00:00+00:00"), Some(z));
        assert_eq!(parse_rfc3339("2024-03-01T12:30:00+02:30"), Some(z));
        assert_eq!(parse_rfc3339("2024-03-01T09:00:00-01:00"), Some(z));
        assert_eq!(
            parse_rfc3339("2024-03-01T10:00:00.250Z"),
            Some(z + Duration::from_millis(250))
        );
    }

    #[test]
    fn malformed_timestamps_are_refused() {
        for bad in [
            "",
            "2024-03-01",
            "2024-03-01T10:00:00",
            "2024-02-30T10:00:00Z",
            "2024-13-01T10:00:00Z",
            "2024-03-01T24:00:00Z",
            "2024-03-01T10:00:00+0000",
            "2024-03-01T10:00:00.Z",
            "2024-03-01T10:00:00Zjunk",
            "1969-12-31T23:59:59Z",
            "２０24-03-01T10:00:00Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }
}
