use std::time::Duration;

const UNITS: [(&str, u64); 4] = [("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)];

/// Prints a duration the way `parse_duration` reads it: largest units first, zero parts
/// left out, milliseconds last; `"0s"` for zero.
pub fn format_duration(duration: Duration) -> String {
    let mut seconds = duration.as_secs();
    let millis = duration.subsec_millis();
    let mut out = String::new();
    for (unit, size) in UNITS {
        let count = seconds / size;
        if count > 0 {
            out.push_str(&format!("{count}{unit}"));
            seconds %= size;
        }
    }
    if millis > 0 {
        out.push_str(&format!("{millis}ms"));
    }
    if out.is_empty() {
        out.push_str("0s");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_largest_units_first() {
        assert_eq!(format_duration(Duration::from_secs(5400)), "1h30m");
        assert_eq!(format_duration(Duration::from_millis(61_500)), "1m1s500ms");
        assert_eq!(format_duration(Duration::ZERO), "0s");
    }
}
