use std::time::Duration;

use durparse::{format_duration, parse_duration};

#[test]
fn formatted_durations_parse_back() {
    for millis in [0, 1, 999, 1_000, 59_999, 3_600_000, 90_061_001] {
        let duration = Duration::from_millis(millis);
        assert_eq!(
            parse_duration(&format_duration(duration)),
            Ok(duration),
            "{millis} ms"
        );
    }
}
