//! Human-readable durations: `45s`, `250ms`, `1h30m`, `2d`.

mod format;
mod parse;

pub use format::format_duration;
pub use parse::{parse_duration, ParseError};
