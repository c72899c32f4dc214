//! `pitcrew eval`: runs suites of cases through the same session as real jobs and measures how
//! well the agent solves them — pass rate, cost, steps and time, per configuration side by side.
//!
//! `case.rs` reads the suites; `results.rs` is a case run's outcome, one line of `results.jsonl`;
//! `report.rs` renders `report.md` from the results, with the statistics of `stats.rs` and the
//! charts of `svg.rs`.

pub mod case;
pub mod report;
pub mod results;
pub mod stats;
pub mod svg;
