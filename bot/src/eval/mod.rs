//! `pitcrew eval`: runs suites of cases through the same session as real jobs and measures how
//! well the agent solves them — pass rate, cost, steps and time, per configuration side by side.
//!
//! `case.rs` reads the suites; `workcopy.rs` makes a case's working copy and writes its check's
//! files; `run.rs` runs cases and checks them; `replay.rs` records and replays the model's
//! answers; `results.rs` is a case run's outcome, one line of `results.jsonl`; `report.rs` (with
//! `stats.rs` and `svg.rs`) turns results into `report.md` and its charts; `mine.rs` proposes
//! cases from a repository's history; `check_cases.rs` proves that a suite's cases flip;
//! `command.rs` is what the terminal sees of all this.

pub mod case;
pub mod check_cases;
pub mod command;
pub mod mine;
pub mod replay;
pub mod report;
pub mod results;
pub mod run;
pub mod stats;
pub mod svg;
pub mod workcopy;
