//! Test data shared by the report tests: one job, its plan, files, tests and results.

use crate::config::command::CommandKind;
use crate::llm::Usage;
use crate::testparse::{Failure, Runner, TestReport};
use crate::tools::{Plan, PlanStep, StepStatus};
use crate::workspace::diff::FileStat;

use super::*;

pub fn job() -> JobInfo {
    JobInfo {
        id: "42".into(),
        kind: CommandKind::Fix,
        requested_by: RequestedBy::User("alice".into()),
        instructions: Some("make the parser accept\nempty input | please".into()),
        check_run_url: Some("https://github.com/o/r/runs/9".into()),
    }
}

pub fn branch() -> BranchRef {
    BranchRef {
        name: "pitcrew/partial-42".into(),
        url: "https://github.com/o/r/tree/pitcrew/partial-42".into(),
        clone_url: "https://github.com/o/r.git".into(),
    }
}

pub fn commit() -> CommitRef {
    CommitRef {
        sha: "0123456789abcdef0123456789abcdef01234567".into(),
        url: "https://github.com/o/r/commit/0123456789abcdef0123456789abcdef01234567".into(),
    }
}

pub fn plan(statuses: &[StepStatus]) -> Plan {
    let titles = ["Reproduce the failure", "Fix the parser", "Run the tests"];
    Plan {
        steps: statuses
            .iter()
            .zip(titles)
            .enumerate()
            .map(|(i, (status, title))| PlanStep {
                id: (i + 1).to_string(),
                title: title.into(),
                status: *status,
            })
            .collect(),
        version: 1,
    }
}

pub fn files() -> Vec<FileStat> {
    vec![
        FileStat {
            path: "src/parser.rs".into(),
            old_path: None,
            change: "modified",
            additions: 12,
            deletions: 3,
            binary: false,
        },
        FileStat {
            path: "tests/empty.rs".into(),
            old_path: None,
            change: "added",
            additions: 20,
            deletions: 0,
            binary: false,
        },
    ]
}

pub fn tests(passed: u64, failing: &[(&str, Option<(&str, u32)>)]) -> TestReport {
    TestReport {
        runner: Runner::Cargo,
        passed,
        failed: failing.len() as u64,
        skipped: 0,
        failures: failing
            .iter()
            .map(|(name, place)| Failure {
                name: (*name).into(),
                file: place.map(|(file, _)| file.into()),
                line: place.map(|(_, line)| line),
                message: "assertion failed: parse(\"\").is_ok()".into(),
            })
            .collect(),
        complete: true,
    }
}

/// 41 passing and one failing test, fixed.
pub fn fixed_tests() -> TestDelta {
    TestDelta::compare(
        TestRun::Ran(tests(41, &[("parser::tests::empty", None)])),
        TestRun::Ran(tests(43, &[])),
    )
}

/// All passing before; one test fails after.
pub fn regressed_tests() -> TestDelta {
    TestDelta::compare(
        TestRun::Ran(tests(42, &[])),
        TestRun::Ran(tests(41, &[("parser::tests::empty", Some(("src/parser.rs", 88)))])),
    )
}

pub fn stats() -> RunStats {
    RunStats {
        usage: Usage {
            input_tokens: 12_000,
            output_tokens: 3_456,
            cache_read_tokens: 40_000,
            cache_write_tokens: 0,
            reasoning_tokens: 0,
        },
        cost_usd: Some(0.0812),
        duration_ms: 125_000,
        steps: 14,
        tool_calls: 23,
    }
}

/// A finished fix that was pushed.
pub fn pushed() -> JobResult {
    JobResult {
        job: job(),
        end: JobEnd::Pushed {
            branch: "feature/parser".into(),
            commit: commit(),
            rebased: false,
        },
        summary: "The parser returned an error on empty input; it now returns an empty document. Added a \
                  regression test."
            .into(),
        plan: plan(&[StepStatus::Done, StepStatus::Done, StepStatus::Done]),
        changed_files: files(),
        tests: Some(fixed_tests()),
        stats: stats(),
    }
}
