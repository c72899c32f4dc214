//! Cron schedules for chores: the five-field syntax (`minute hour day-of-month month
//! day-of-week`, with `*`, lists, ranges, steps, month and day names, and `@hourly`, `@daily`,
//! `@weekly`, `@monthly`, `@yearly`) read in a time zone, and the next time one fires.
//!
//! As in Vixie cron, when both the day of the month and the day of the week are restricted, a day
//! matching either fires. Local times that a daylight-saving change skips fire at the first instant
//! after the gap; times that happen twice fire once, the first time.

use std::fmt;

use jiff::Timestamp;
use jiff::civil::{Date, DateTime};
use jiff::tz::TimeZone;

/// Days searched for the next firing: four years and a day cover `0 0 29 2 *`.
const MAX_DAYS: u32 = 4 * 366 + 1;

/// A schedule or a time zone that cannot be read; the message names the field and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    #[error("unknown schedule `{0}`; use five fields (`0 6 * * 1`) or @hourly, @daily, @weekly, @monthly, @yearly")]
    UnknownShorthand(String),
    #[error(
        "`{text}` has {count} field{}; a schedule has five: minute hour day-of-month month day-of-week (e.g. `0 6 * * 1`)",
        plural(.count)
    )]
    FieldCount { text: String, count: usize },
    #[error("{field} `{item}` has a step that is not a whole number above 0")]
    Step { field: &'static str, item: String },
    #[error("{field} `{item}` is not a value")]
    Value { field: &'static str, item: String },
    #[error("{field} `{item}` is outside {min}–{max}")]
    Outside {
        field: &'static str,
        item: String,
        min: u32,
        max: u32,
    },
    #[error("a field is out of range")]
    OutOfRange,
    #[error("unknown time zone `{0}`; use an IANA name such as `UTC`, `Europe/Berlin` or `America/New_York`")]
    TimeZone(String),
}

fn plural(count: &usize) -> &'static str {
    if *count == 1 { "" } else { "s" }
}

/// A parsed schedule.
#[derive(Clone, PartialEq, Eq)]
pub struct Schedule {
    text: String,
    minutes: u64,
    hours: u32,
    /// Bits 1–31.
    days: u32,
    /// Bits 1–12.
    months: u16,
    /// Bits 0–6, Sunday first.
    weekdays: u8,
    /// Day of month written as `*` (or `?`).
    any_day: bool,
    /// Day of week written as `*` (or `?`).
    any_weekday: bool,
}

impl fmt::Debug for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Schedule({:?})", self.text)
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

struct Field {
    name: &'static str,
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const FIELDS: [Field; 5] = [
    Field {
        name: "minute",
        min: 0,
        max: 59,
        names: &[],
    },
    Field {
        name: "hour",
        min: 0,
        max: 23,
        names: &[],
    },
    Field {
        name: "day of month",
        min: 1,
        max: 31,
        names: &[],
    },
    Field {
        name: "month",
        min: 1,
        max: 12,
        names: &MONTHS,
    },
    Field {
        name: "day of week",
        min: 0,
        max: 7,
        names: &WEEKDAYS,
    },
];

impl Schedule {
    /// Parses a cron expression; the error names the field and what is wrong with it.
    pub fn parse(text: &str) -> Result<Schedule, ScheduleError> {
        let trimmed = text.trim();
        let expanded = match trimmed {
            "@hourly" => "0 * * * *",
            "@daily" | "@midnight" => "0 0 * * *",
            "@weekly" => "0 0 * * 0",
            "@monthly" => "0 0 1 * *",
            "@yearly" | "@annually" => "0 0 1 1 *",
            other if other.starts_with('@') => return Err(ScheduleError::UnknownShorthand(other.to_owned())),
            other => other,
        };
        let parts: Vec<&str> = expanded.split_whitespace().collect();
        if parts.len() != 5 {
            return Err(ScheduleError::FieldCount {
                text: trimmed.to_owned(),
                count: parts.len(),
            });
        }
        let mut bits = [0u64; 5];
        for (i, (part, field)) in parts.iter().zip(&FIELDS).enumerate() {
            bits[i] = parse_field(part, field)?;
        }
        // Sunday may be written 0 or 7.
        let weekdays = bits[4] | u64::from(bits[4] & (1 << 7) != 0);
        let narrow = |value: u64| u32::try_from(value).map_err(|_| ScheduleError::OutOfRange);
        Ok(Schedule {
            text: trimmed.to_owned(),
            minutes: bits[0],
            hours: narrow(bits[1])?,
            days: narrow(bits[2])?,
            months: u16::try_from(bits[3]).map_err(|_| ScheduleError::OutOfRange)?,
            weekdays: u8::try_from(weekdays & 0x7f).map_err(|_| ScheduleError::OutOfRange)?,
            any_day: matches!(parts[2], "*" | "?"),
            any_weekday: matches!(parts[4], "*" | "?"),
        })
    }

    fn day_matches(&self, date: Date) -> bool {
        let month = u32::try_from(date.month()).unwrap_or(0);
        if self.months & (1 << month) == 0 {
            return false;
        }
        let day = self.days & (1 << u32::try_from(date.day()).unwrap_or(0)) != 0;
        let weekday = self.weekdays & (1 << date.weekday().to_sunday_zero_offset()) != 0;
        match (self.any_day, self.any_weekday) {
            (true, true) => true,
            (false, true) => day,
            (true, false) => weekday,
            (false, false) => day || weekday,
        }
    }

    /// The first time after `after` (strictly) that the schedule fires in `tz`; `None` for a
    /// schedule that never does (`0 0 31 2 *`).
    pub fn next_after(&self, after: Timestamp, tz: &TimeZone) -> Option<Timestamp> {
        let local = after.to_zoned(tz.clone()).datetime();
        let mut date = local.date();
        for day in 0..MAX_DAYS {
            if self.day_matches(date) {
                for hour in 0..24u8 {
                    if self.hours & (1 << hour) == 0 {
                        continue;
                    }
                    for minute in 0..60u8 {
                        if self.minutes & (1 << minute) == 0 {
                            continue;
                        }
                        let candidate = DateTime::from_parts(
                            date,
                            jiff::civil::time(i8::try_from(hour).ok()?, i8::try_from(minute).ok()?, 0, 0),
                        );
                        if day == 0 && candidate <= local.with().second(0).subsec_nanosecond(0).build().ok()? {
                            // Earlier today (or this very minute, which `after` is in): not next.
                            continue;
                        }
                        let Ok(zoned) = candidate.to_zoned(tz.clone()) else {
                            continue;
                        };
                        let at = zoned.timestamp();
                        if at > after {
                            return Some(at);
                        }
                    }
                }
            }
            date = date.tomorrow().ok()?;
        }
        None
    }
}

/// One field's values as bits.
fn parse_field(text: &str, field: &Field) -> Result<u64, ScheduleError> {
    let mut bits = 0u64;
    for item in text.split(',') {
        let not_a_value = || ScheduleError::Value {
            field: field.name,
            item: item.to_owned(),
        };
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => {
                let step: u32 = step
                    .parse()
                    .ok()
                    .filter(|s| *s > 0)
                    .ok_or_else(|| ScheduleError::Step {
                        field: field.name,
                        item: item.to_owned(),
                    })?;
                (range, step)
            }
            None => (item, 1),
        };
        let (from, to) = if matches!(range, "*" | "?") {
            (field.min, field.max)
        } else if let Some((a, b)) = range.split_once('-') {
            (
                value(a, field).ok_or_else(not_a_value)?,
                value(b, field).ok_or_else(not_a_value)?,
            )
        } else {
            let v = value(range, field).ok_or_else(not_a_value)?;
            // `5/15`: from 5 to the end in steps.
            (v, if item.contains('/') { field.max } else { v })
        };
        if from < field.min || to > field.max || from > to {
            return Err(ScheduleError::Outside {
                field: field.name,
                item: item.to_owned(),
                min: field.min,
                max: field.max,
            });
        }
        let mut v = from;
        while v <= to {
            bits |= 1 << v;
            v += step;
        }
    }
    Ok(bits)
}

fn value(text: &str, field: &Field) -> Option<u32> {
    if let Ok(n) = text.parse::<u32>() {
        return Some(n);
    }
    let lower = text.to_ascii_lowercase();
    field
        .names
        .iter()
        .position(|name| *name == lower)
        .and_then(|i| u32::try_from(i).ok())
        .map(|i| i + field.min)
}

/// The time zone named `name` (IANA: `Europe/Berlin`), or `UTC`.
pub fn time_zone(name: &str) -> Result<TimeZone, ScheduleError> {
    TimeZone::get(name).map_err(|_| ScheduleError::TimeZone(name.to_owned()))
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn next(schedule: &str, after: &str, tz: &str) -> String {
        let tz = time_zone(tz).unwrap();
        Schedule::parse(schedule)
            .unwrap()
            .next_after(at(after), &tz)
            .unwrap()
            .to_string()
    }

    #[test]
    fn mondays_at_six_in_a_time_zone() {
        // 2026-11-30 is a Monday.
        assert_eq!(next("0 6 * * 1", "2026-11-30T05:59:00Z", "UTC"), "2026-11-30T06:00:00Z");
        assert_eq!(next("0 6 * * 1", "2026-11-30T06:00:00Z", "UTC"), "2026-12-07T06:00:00Z");
        assert_eq!(
            next("0 6 * * mon", "2026-11-30T04:00:00Z", "Europe/Berlin"),
            "2026-11-30T05:00:00Z"
        );
        assert_eq!(next("@weekly", "2026-11-30T00:00:00Z", "UTC"), "2026-12-06T00:00:00Z");
    }

    #[test]
    fn lists_ranges_steps_and_names() {
        assert_eq!(
            next("*/15 9-17 * * mon-fri", "2026-11-28T12:00:00Z", "UTC"),
            "2026-11-30T09:00:00Z"
        );
        assert_eq!(
            next("5,35 * * * *", "2026-11-30T10:06:00Z", "UTC"),
            "2026-11-30T10:35:00Z"
        );
        assert_eq!(
            next("0 0 1 jan,jul *", "2026-11-30T00:00:00Z", "UTC"),
            "2027-01-01T00:00:00Z"
        );
        assert_eq!(
            next("0 0 29 2 *", "2026-11-30T00:00:00Z", "UTC"),
            "2028-02-29T00:00:00Z"
        );
        // Sunday as 7.
        assert_eq!(
            next("0 12 * * 7", "2026-11-30T00:00:00Z", "UTC"),
            "2026-12-06T12:00:00Z"
        );
    }

    #[test]
    fn a_restricted_day_of_month_and_day_of_week_fire_on_either() {
        // The 1st of the month or any Friday: Friday 2026-12-04 comes first.
        assert_eq!(next("0 0 1 * 5", "2026-11-30T00:00:00Z", "UTC"), "2026-12-01T00:00:00Z");
        assert_eq!(next("0 0 1 * 5", "2026-12-01T00:00:00Z", "UTC"), "2026-12-04T00:00:00Z");
    }

    #[test]
    fn daylight_saving_gaps_fire_after_and_repeats_fire_once() {
        // Europe/Berlin skips 02:00–03:00 on 2027-03-28 and repeats 02:00–03:00 on 2026-10-25.
        assert_eq!(
            next("30 2 * * *", "2027-03-27T12:00:00Z", "Europe/Berlin"),
            "2027-03-28T01:30:00Z"
        );
        let first = next("30 2 * * *", "2026-10-24T12:00:00Z", "Europe/Berlin");
        assert_eq!(first, "2026-10-25T00:30:00Z");
        assert_eq!(next("30 2 * * *", &first, "Europe/Berlin"), "2026-10-26T01:30:00Z");
    }

    #[test]
    fn mistakes_name_the_field() {
        let err = |s: &str| Schedule::parse(s).unwrap_err().to_string();
        assert_eq!(
            err("0 6 * *"),
            "`0 6 * *` has 4 fields; a schedule has five: minute hour day-of-month month day-of-week (e.g. `0 6 * * 1`)"
        );
        assert_eq!(err("61 6 * * 1"), "minute `61` is outside 0–59");
        assert_eq!(err("0 6 * * funday"), "day of week `funday` is not a value");
        assert_eq!(
            err("*/0 6 * * 1"),
            "minute `*/0` has a step that is not a whole number above 0"
        );
        assert!(err("@fortnightly").starts_with("unknown schedule `@fortnightly`"));
        assert!(
            time_zone("Mars/Olympus")
                .unwrap_err()
                .to_string()
                .contains("unknown time zone `Mars/Olympus`")
        );
        assert!(
            Schedule::parse("0 0 31 2 *")
                .unwrap()
                .next_after(at("2026-01-01T00:00:00Z"), &TimeZone::UTC)
                .is_none()
        );
    }
}
