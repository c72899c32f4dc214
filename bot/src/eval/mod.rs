//! `pitcrew eval`: runs suites of cases through the same session as real jobs and measures how
//! well the agent solves them — pass rate, cost, steps and time, per configuration side by side.
//!
//! `case.rs` reads the suites; `results.rs` is a case run's outcome, one line of `results.jsonl`.

pub mod case;
pub mod mine;
pub mod results;
