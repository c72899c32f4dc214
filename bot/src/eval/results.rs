//! What one run of one case produced: a line of `results.jsonl`, read back by the report.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// How a case run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The check passed.
    Pass,
    /// The agent ran and the check did not pass.
    Fail,
    /// The case could not be judged: its repository, setup, sandbox, check or recording failed.
    Error,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Error => "error",
        }
    }
}

/// One run of one case under one variant (a configuration and model).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    pub case: String,
    /// The variant's label (`default`, a configuration file's stem, a model name, or both).
    pub variant: String,
    /// 0-based, below `--repeat`.
    pub repetition: u32,
    pub tags: Vec<String>,
    pub status: Status,
    /// Why the case is an error (or what else went wrong around a judged run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The check, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<CheckOutcome>,
    /// The agent's stop reason (`finished`, `budget_exhausted`, …), when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<String>,
    pub steps: u32,
    /// Tool calls by tool name.
    pub tool_calls: BTreeMap<String, u32>,
    pub tokens: Tokens,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// The whole case: copy, sandbox, setup, agent and check.
    pub wall_ms: u64,
    pub timings: Timings,
    /// Soft expectations the run did not meet, one sentence each.
    #[serde(default)]
    pub expectations_missed: Vec<String>,
    /// The files the agent changed, relative to the repository.
    #[serde(default)]
    pub changed_files: Vec<String>,
    /// What a replay answered although the tools printed something else than when it was
    /// recorded (another version of a test runner, say).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replay_notes: Vec<String>,
    /// The trajectory (one JSON event per line), relative to the output directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trajectory: Option<String>,
}

/// Tokens spent, summed over the run's model calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

/// Where a case's time went, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timings {
    /// The working copy.
    pub copy_ms: u64,
    /// Starting the sandbox, its setup included.
    pub sandbox_ms: u64,
    pub agent_ms: u64,
    pub check_ms: u64,
}

/// What the check found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckOutcome {
    pub passed: bool,
    /// `None` when the command was killed (its time limit).
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// The failing tests the check's output names (any runner `testparse` reads).
    pub failing_tests: Vec<String>,
    /// `fail_to_pass` tests still failing.
    pub not_fixed: Vec<String>,
    /// `pass_to_pass` tests that fail now: regressions.
    pub broken: Vec<String>,
    /// The last lines of its output.
    pub output_tail: String,
    /// The check's own files written over the working copy (relative paths).
    #[serde(default)]
    pub files_written: Vec<String>,
}

impl CaseResult {
    /// One JSON line.
    pub fn to_line(&self) -> String {
        // A struct of strings, numbers and maps always serialises.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Why `results.jsonl` could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("{}: {source}", path.display())]
    Read {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{}:{line}: {source}", path.display())]
    Parse {
        path: std::path::PathBuf,
        line: usize,
        source: serde_json::Error,
    },
}

/// Reads a `results.jsonl`; blank lines are skipped.
pub fn read_results(path: &Path) -> Result<Vec<CaseResult>, ResultsError> {
    let text = std::fs::read_to_string(path).map_err(|source| ResultsError::Read {
        path: path.to_owned(),
        source,
    })?;
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(n, line)| {
            serde_json::from_str(line).map_err(|source| ResultsError::Parse {
                path: path.to_owned(),
                line: n + 1,
                source,
            })
        })
        .collect()
}
