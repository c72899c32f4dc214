//! CI-failure triage of one job log: the failing step found, its failures parsed into findings
//! (test-runner failures through [`crate::testparse`], compiler errors, or the lines around the
//! first error), and the failure classified. Pure over text: fetching logs and reporting live
//! elsewhere.

use serde::{Deserialize, Serialize};

use crate::testparse::{self, Runner};

pub mod classify;
pub mod compiler;
mod kotlin;
pub mod lint;
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
    /// A linter's error (flake8, ruff, pylint, mypy, eslint): its file, line and `CODE message`.
    LintError,
    /// No parser recognised the output: a Python program's crash (its exception, placed at the
    /// innermost frame of the project's code), or else the lines around its first error.
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
    /// How often the log reports it (a test a rerun plugin ran three times is one finding, 3).
    #[serde(default = "one")]
    pub attempts: u32,
    /// The 1-based lines of the log that show it.
    #[serde(default)]
    pub evidence: Vec<usize>,
}

fn one() -> u32 {
    1
}

impl Finding {
    /// A finding of `kind` saying `message`, placed nowhere yet.
    pub fn new(kind: FindingKind, message: impl Into<String>) -> Self {
        Finding {
            kind,
            runner: None,
            compiler: None,
            test: None,
            file: None,
            line: None,
            message: message.into(),
            attempts: 1,
            evidence: Vec::new(),
        }
    }
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
    let failing_index = failing.and_then(|step| log.steps.iter().position(|s| std::ptr::eq(s, step)));
    let lines: &[String] = failing.map_or(&[], |step| step.lines.as_slice());
    let text = failing.map(log::Step::text).unwrap_or_default();
    let mut findings = fold(findings(&text));
    let mut found_at: Vec<Option<usize>> = findings.iter().map(|f| locate(f, lines)).collect();
    let anchors: Vec<usize> = found_at.iter().flatten().copied().collect();
    let (mut classification, places) = classify::classify(&log, failing_index, &findings, &anchors);
    // The line that decided a configuration or infrastructure failure becomes the finding (in place
    // of the fallback's guess) when no test, build or lint failure was found; when one was, that is
    // the finding, and the decisive line is in the classification's reasons and evidence.
    let code_findings = findings.iter().any(|f| f.kind != FindingKind::Generic);
    if matches!(classification.class, Class::Configuration | Class::Infrastructure)
        && !code_findings
        && let Some(&(step, at)) = places.first()
        && Some(step) == failing_index
        && !found_at.contains(&Some(at))
    {
        findings.clear();
        found_at.clear();
        findings.push(Finding::new(FindingKind::Generic, context(lines, at)));
        found_at.push(Some(at));
    }
    for (finding, at) in findings.iter_mut().zip(&found_at) {
        let mut shown: Vec<usize> = at.iter().copied().chain(place_of(finding, lines)).collect();
        shown.sort_unstable();
        shown.dedup();
        finding.evidence = shown
            .into_iter()
            .filter_map(|at| log.line_number(failing_index?, at))
            .collect();
    }
    classification.evidence = places
        .iter()
        .filter_map(|&(step, at)| log.line_number(step, at))
        .collect();
    if classification.evidence.is_empty() && matches!(classification.class, Class::Code | Class::Flaky) {
        classification.evidence = findings.iter().flat_map(|f| f.evidence.iter().copied()).collect();
    }
    let step = failing.and_then(log::Step::name).map(str::to_owned);
    Analysis {
        step,
        findings,
        classification,
        excerpt: log::cap(&text, MAX_EXCERPT_BYTES, EXCERPT_HEAD_BYTES),
    }
}

/// The failures in one step's clean text: compiler errors, test failures and lint errors, or else
/// a Python crash, or else the generic fallback.
pub fn findings(text: &str) -> Vec<Finding> {
    let mut out: Vec<Finding> = compiler::parse(text)
        .into_iter()
        .map(|e| Finding {
            compiler: Some(e.compiler),
            file: e.file.as_deref().map(relative),
            line: e.line,
            ..Finding::new(FindingKind::CompileError, e.message)
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
                runner: Some(report.runner),
                test: Some(failure.name),
                file: failure.file.as_deref().map(relative),
                line: failure.line,
                ..Finding::new(FindingKind::TestFailure, failure.message)
            });
        }
    }
    // Lint errors; mypy's `path:line: error:` lines are read as compile errors already.
    for lint in lint::parse(text) {
        let file = relative(&lint.file);
        let compiled_here = |f: &Finding| {
            f.kind == FindingKind::CompileError && f.file.as_deref() == Some(file.as_str()) && f.line == Some(lint.line)
        };
        if out.iter().any(compiled_here) {
            continue;
        }
        let message = if lint.code.is_empty() {
            lint.message
        } else {
            format!("{} {}", lint.code, lint.message)
        };
        out.push(Finding {
            file: Some(file),
            line: Some(lint.line),
            ..Finding::new(FindingKind::LintError, message)
        });
    }
    if out.is_empty()
        && let Some(crash) = testparse::python_traceback(text)
    {
        out.push(Finding {
            file: crash.file.as_deref().map(relative),
            line: crash.line,
            ..Finding::new(FindingKind::Generic, crash.message)
        });
    }
    if out.is_empty()
        && let Some(message) = around_first_error(text)
    {
        out.push(Finding::new(FindingKind::Generic, message));
    }
    out
}

/// The same failure reported more than once (a rerun plugin, a runner printing its failures both
/// as they happen and in a summary) folded into one, with its attempts counted; first seen first.
fn fold(findings: Vec<Finding>) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::with_capacity(findings.len());
    for finding in findings {
        let same = |f: &Finding| {
            f.kind == finding.kind
                && match (&f.test, &finding.test) {
                    (Some(a), Some(b)) => a == b,
                    (None, None) => f.file == finding.file && f.line == finding.line && f.message == finding.message,
                    _ => false,
                }
        };
        match out.iter_mut().find(|f| same(f)) {
            Some(kept) => {
                kept.attempts += finding.attempts;
                if kept.file.is_none() {
                    kept.file = finding.file;
                    kept.line = finding.line;
                }
                if kept.message.is_empty() {
                    kept.message = finding.message;
                }
            }
            None => out.push(finding),
        }
    }
    out
}

/// The line of `lines` that shows `finding`: where its test is said to fail, its diagnostic's
/// place, or its message's first line.
fn locate(finding: &Finding, lines: &[String]) -> Option<usize> {
    let first = |pred: &dyn Fn(&str) -> bool| lines.iter().position(|line| pred(line));
    if let Some(test) = &finding.test {
        let failing_word = |line: &str| {
            ["FAIL", "panicked", "----", "●", "×", "✗", "ERROR", "Error", "error"]
                .iter()
                .any(|w| line.contains(w))
        };
        let short = test
            .rsplit([':', '.', '/', ' ', '>'])
            .find(|p| !p.is_empty())
            .unwrap_or(test);
        if let Some(at) = first(&|line| line.contains(test.as_str()) && failing_word(line))
            .or_else(|| first(&|line| line.contains(test.as_str())))
            .or_else(|| first(&|line| line.contains(short) && failing_word(line)))
        {
            return Some(at);
        }
    }
    if let Some(at) = place_of(finding, lines) {
        return Some(at);
    }
    let message = finding.message.lines().find(|l| !l.trim().is_empty())?.trim();
    first(&|line| line.contains(message))
}

/// The line of `lines` that names the finding's file and line (`calc.py:10`, `x.cpp(253`).
fn place_of(finding: &Finding, lines: &[String]) -> Option<usize> {
    let (file, line) = (finding.file.as_ref()?, finding.line?);
    let name = file.rsplit(['/', '\\']).next().unwrap_or(file);
    let places = [
        format!("{name}:{line}"),
        format!("{name}({line}"),
        format!("{name}: ({line},"),
    ];
    lines
        .iter()
        .position(|text| places.iter().any(|p| text.contains(p.as_str())))
}

/// The lines around line `at`: a few before, more after.
fn context(lines: &[String], at: usize) -> String {
    let from = at.saturating_sub(CONTEXT_BEFORE);
    let to = (at + CONTEXT_AFTER + 1).min(lines.len());
    lines[from..to].join("\n").trim_end().to_owned()
}

/// The lines around the decisive error line of `text` (see [`decisive_line`]).
fn around_first_error(text: &str) -> Option<String> {
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let at = decisive_line(&lines)?;
    Some(context(&lines, at))
}

/// The line that says why the output failed, when no parser understood it. Jobs print warnings and
/// retried errors all along and fail at the end: the decisive line is the first of the last run of
/// error lines (an error with its follow-ups, a compiler's errors before its summary). The runner's
/// own verdict (`Process completed with exit code N.`, `Done. Your build exited with 1.`) is taken
/// only when nothing else says more.
pub(crate) fn decisive_line(lines: &[String]) -> Option<usize> {
    /// Error lines this far apart belong to one run.
    const RUN_GAP: usize = 15;
    let strong: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, line)| is_error_line(line) && !is_verdict(line))
        .map(|(at, _)| at)
        .collect();
    let Some(&last) = strong.last() else {
        return lines.iter().position(|line| is_verdict(line));
    };
    let mut first = last;
    for &at in strong.iter().rev().skip(1) {
        if first - at > RUN_GAP {
            break;
        }
        first = at;
    }
    Some(first)
}

/// A line that reports an error (not a warning, not a count of zero errors).
pub(crate) fn is_error_line(line: &str) -> bool {
    let trimmed = line.trim_start();
    let lower = trimmed.to_lowercase();
    if lower.contains("0 errors") || lower.contains("no errors") || lower.starts_with("warning") {
        return false;
    }
    const STARTS: &[&str] = &[
        "error",
        "fatal",
        "failed",
        "failure",
        "build failed",
        "traceback",
        "panic:",
        "npm err!",
        "err!",
        "e: ",
        "exception",
        "cmake error",
        "killed",
        "🚨 error",
        "> task",
        "* what went wrong",
        "make: ***",
        "ninja: build stopped",
        "[error]",
    ];
    const ANYWHERE: &[&str] = &[
        ": error",
        ": fatal error",
        " error:",
        "error ts",
        "error c",
        "exception:",
        "error response from daemon",
        "] error ",
        "command failed",
        "not found",
        "no such file",
        "permission denied",
        "cannot ",
        "could not ",
        "couldn't ",
        "unable to ",
        "failed to ",
        " failed",
        "timed out",
    ];
    STARTS.iter().any(|p| lower.starts_with(p)) || ANYWHERE.iter().any(|p| lower.contains(p))
}

/// A runner's closing verdict: says the job failed, not why.
fn is_verdict(line: &str) -> bool {
    let lower = line.trim().to_lowercase();
    lower.starts_with("error: process completed with exit code")
        || lower.starts_with("done. your build exited with")
        || lower.starts_with("exited with code")
        || lower.contains("user command error: exit status")
        || lower.starts_with("🚨 error: the command exited with status")
        || (lower.starts_with("the command \"") && lower.contains("\" exited with"))
        || lower.starts_with("error: job failed")
        || lower.starts_with("##[error]process completed")
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
                FindingKind::LintError => "lint error",
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
