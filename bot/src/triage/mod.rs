//! CI-failure triage of one job log: the failing step found, its failures parsed into findings
//! (test-runner failures through [`crate::testparse`], compiler errors, or the lines around the
//! first error), and the failure classified. Pure over text: fetching logs and reporting live
//! elsewhere.

use serde::{Deserialize, Serialize};

use crate::testparse::{self, Runner};

pub mod classify;
pub mod compiler;
pub mod log;
pub mod paths;

#[cfg(test)]
mod tests;

pub use classify::{Class, Classification};
pub use compiler::Compiler;
pub use log::JobLog;

/// The most of the failing step quoted in [`Analysis::excerpt`].
pub const MAX_EXCERPT_BYTES: usize = 16 * 1024;
/// Of a cut excerpt, how much of the step's start is kept (the command); the rest is its end.
const EXCERPT_HEAD_BYTES: usize = 3 * 1024;
/// Lines kept before and after the first error line by the generic fallback.
const CONTEXT_BEFORE: usize = 3;
const CONTEXT_AFTER: usize = 8;

/// What kind of failure a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    TestFailure,
    CompileError,
    /// No parser recognised the output: the lines around its first error.
    Generic,
}

/// One failure found in a log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub kind: FindingKind,
    /// The test runner, for a test failure.
    pub runner: Option<Runner>,
    /// The compiler, for a compile error.
    pub compiler: Option<Compiler>,
    /// The test's name as its runner gives it.
    pub test: Option<String>,
    /// Relative to the repository when the log said so or the runner's checkout prefix could be
    /// removed.
    pub file: Option<String>,
    pub line: Option<u32>,
    pub message: String,
}

/// The triage of one job log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    /// The failing step's title (`Run cargo test`), when the log has steps.
    pub step: Option<String>,
    pub findings: Vec<Finding>,
    pub classification: Classification,
    /// The failing step's clean text, capped at [`MAX_EXCERPT_BYTES`] keeping head and tail.
    pub excerpt: String,
}

/// Triage of a raw job log as the Actions API serves it (timestamps, ANSI codes, markers).
pub fn analyse(raw: &str) -> Analysis {
    let log = JobLog::parse(raw);
    let failing = log.failing_step();
    let text = failing.map(log::Step::text).unwrap_or_default();
    let findings = findings(&text);
    let step = failing.map(|s| s.title.clone());
    let classification = classify::classify(&log, step.as_deref(), &findings);
    Analysis {
        step,
        findings,
        classification,
        excerpt: log::cap(&text, MAX_EXCERPT_BYTES, EXCERPT_HEAD_BYTES),
    }
}

/// The failures in one step's clean text: compiler errors, then test failures, or else the
/// generic fallback.
pub fn findings(text: &str) -> Vec<Finding> {
    let mut out: Vec<Finding> = compiler::parse(text)
        .into_iter()
        .map(|e| Finding {
            kind: FindingKind::CompileError,
            runner: None,
            compiler: Some(e.compiler),
            test: None,
            file: e.file.as_deref().map(relative),
            line: e.line,
            message: e.message,
        })
        .collect();
    let compiled = !out.is_empty();
    if let Some(report) = testparse::parse(text, None) {
        for failure in report.failures {
            // libtest reports a build that failed as a failure of its own; the compiler's errors
            // above say the same, placed better.
            if compiled && failure.name.starts_with("build: ") {
                continue;
            }
            out.push(Finding {
                kind: FindingKind::TestFailure,
                runner: Some(report.runner),
                compiler: None,
                test: Some(failure.name),
                file: failure.file.as_deref().map(relative),
                line: failure.line,
                message: failure.message,
            });
        }
    }
    if out.is_empty()
        && let Some(message) = around_first_error(text)
    {
        out.push(Finding {
            kind: FindingKind::Generic,
            runner: None,
            compiler: None,
            test: None,
            file: None,
            line: None,
            message,
        });
    }
    out
}

/// The lines around the first line that mentions an error. The runner's own closing
/// `Process completed with exit code N.` is taken only when nothing else mentions one.
fn around_first_error(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let is_error = |line: &&str| {
        let lower = line.to_lowercase();
        lower.contains("error") || lower.contains("fatal") || lower.contains("failed")
    };
    let boilerplate = |line: &&str| line.starts_with("Error: Process completed with exit code");
    let at = lines
        .iter()
        .position(|l| is_error(l) && !boilerplate(l))
        .or_else(|| lines.iter().position(boilerplate))?;
    let from = at.saturating_sub(CONTEXT_BEFORE);
    let to = (at + CONTEXT_AFTER + 1).min(lines.len());
    Some(lines[from..to].join("\n").trim_end().to_owned())
}

/// A path made relative to the checkout when the runner printed it absolute: GitHub-hosted
/// runners check out into `/home/runner/work/<repo>/<repo>/` (`/Users/runner/work/…` on macOS).
fn relative(path: &str) -> String {
    for root in ["/home/runner/work/", "/Users/runner/work/"] {
        if let Some(rest) = path.strip_prefix(root) {
            let mut parts = rest.splitn(3, '/');
            if let (Some(_), Some(_), Some(inside)) = (parts.next(), parts.next(), parts.next()) {
                return inside.to_owned();
            }
        }
    }
    path.to_owned()
}

impl Analysis {
    /// The analysis for a terminal: the class and why, then one entry per finding.
    pub fn render_text(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let c = &self.classification;
        let _ = writeln!(
            out,
            "classification: {} (confidence {:.2})",
            c.class.name(),
            c.confidence
        );
        for reason in &c.reasons {
            let _ = writeln!(out, "  - {reason}");
        }
        if let Some(step) = &self.step {
            let _ = writeln!(out, "failing step: {step}");
        }
        let _ = writeln!(out, "findings: {}", self.findings.len());
        for f in &self.findings {
            let what = match f.kind {
                FindingKind::TestFailure => "test failure",
                FindingKind::CompileError => "compile error",
                FindingKind::Generic => "error",
            };
            let by = f
                .runner
                .map(Runner::name)
                .or(f.compiler.map(Compiler::name))
                .map(|n| format!(" ({n})"))
                .unwrap_or_default();
            let name = f.test.as_deref().map(|t| format!(" {t}")).unwrap_or_default();
            let place = match (&f.file, f.line) {
                (Some(file), Some(line)) => format!(" at {file}:{line}"),
                (Some(file), None) => format!(" in {file}"),
                _ => String::new(),
            };
            let _ = writeln!(out, "- {what}{by}{name}{place}");
            for line in f.message.lines() {
                let _ = writeln!(out, "    {line}");
            }
        }
        out
    }
}
