//! Parsers of test-runner output: counts and failing tests out of what `cargo test`, nextest,
//! pytest, `go test`, jest, vitest, Maven Surefire, Gradle and JUnit XML reports print, and the
//! Python import errors that keep tests from running ([`import_errors`]). Pure functions over
//! text, shared by the `run_tests` tool, CI-failure triage and the dependency chore's baseline.
//!
//! Every parser is lenient: output is often cut (by a timeout, an output limit, a log excerpt), so
//! a parser takes what it can find and says, through [`TestReport::complete`], whether the counts
//! are the runner's own totals or were counted from a possibly partial listing.

use serde::{Deserialize, Serialize};

mod gotest;
mod gradle;
mod imports;
mod jest;
mod junit;
mod libtest;
mod maven;
mod nextest;
mod pytest;
mod tap;
mod text;
mod vitest;

pub use imports::{ImportError, ImportKind, import_errors};
pub use junit::JunitError;
pub use pytest::python_traceback;
pub use text::strip_ansi;

/// The test runner whose output was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Runner {
    /// libtest, as run by `cargo test`.
    Cargo,
    Nextest,
    Pytest,
    /// `go test`, `-json` or text.
    GoTest,
    Jest,
    Vitest,
    /// A JUnit XML report (pytest `--junitxml`, Maven Surefire, jest-junit, gotestsum, …).
    JUnitXml,
    /// Maven's console output of Surefire or Failsafe (`mvn test`, `mvn verify`).
    Maven,
    /// The Test Anything Protocol (tape, node-tap, bats, prove).
    Tap,
    /// Gradle's console output of its test tasks (`Class > method FAILED`).
    Gradle,
    Unknown,
}

impl Runner {
    /// A short name for logs and file names.
    pub fn name(self) -> &'static str {
        match self {
            Runner::Cargo => "cargo-test",
            Runner::Nextest => "nextest",
            Runner::Pytest => "pytest",
            Runner::GoTest => "go-test",
            Runner::Jest => "jest",
            Runner::Vitest => "vitest",
            Runner::JUnitXml => "junit",
            Runner::Maven => "maven",
            Runner::Tap => "tap",
            Runner::Gradle => "gradle",
            Runner::Unknown => "unknown",
        }
    }
}

/// What one test run did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestReport {
    pub runner: Runner,
    pub passed: u64,
    /// Failed tests, errors (pytest) included. Suite-level problems (a file that cannot be
    /// imported, a package that does not build) appear in `failures` but are counted here only
    /// when the runner counts them.
    pub failed: u64,
    /// Skipped and ignored tests, expected failures (`xfail`) and `todo`s included.
    pub skipped: u64,
    /// In the order the runner reported them.
    pub failures: Vec<Failure>,
    /// True when the counts are the runner's own totals: a summary line it printed, a complete
    /// JUnit report or `go test -json` stream. False when they were counted from per-test lines
    /// of output that may have been cut.
    pub complete: bool,
}

impl TestReport {
    pub fn new(runner: Runner) -> Self {
        TestReport {
            runner,
            passed: 0,
            failed: 0,
            skipped: 0,
            failures: Vec::new(),
            complete: false,
        }
    }

    pub fn total(&self) -> u64 {
        self.passed + self.failed + self.skipped
    }

    /// True when nothing failed, as far as the output tells.
    pub fn succeeded(&self) -> bool {
        self.failed == 0 && self.failures.is_empty()
    }

    /// Settles the counts of a parser that reads a summary line: the runner's own totals when it
    /// printed them, which makes the report complete; or else what was `counted` from per-test
    /// lines, with at least `failing` failed (the failures the output still shows when their
    /// per-test lines were not printed or were cut).
    pub(crate) fn settle(&mut self, summary: Option<(u64, u64, u64)>, counted: &TestReport, failing: u64) {
        match summary {
            Some((passed, failed, skipped)) => {
                (self.passed, self.failed, self.skipped) = (passed, failed, skipped);
                self.complete = true;
            }
            None => {
                (self.passed, self.skipped) = (counted.passed, counted.skipped);
                self.failed = counted.failed.max(failing);
            }
        }
    }

    /// The failures of tests, leaving out suite-level ones named after their file (how jest and
    /// vitest report a test file that failed to run).
    pub(crate) fn failed_tests(&self) -> u64 {
        self.failures
            .iter()
            .filter(|f| Some(f.name.as_str()) != f.file.as_deref())
            .count() as u64
    }
}

/// One failing test, or one suite-level failure (named after its file, package or crate).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// As the runner names it: `tests::adds`, `tests/test_x.py::test_y`, `TestX/sub`,
    /// `math › adds`.
    pub name: String,
    /// Where it failed, as the runner printed it (relative to the project root for most runners;
    /// a bare file name for Go's `t.Error` lines and Java stack frames).
    pub file: Option<String>,
    pub line: Option<u32>,
    /// The first failure message, a few lines at most.
    pub message: String,
}

impl Failure {
    pub(crate) fn named(name: impl Into<String>) -> Self {
        Failure {
            name: name.into(),
            file: None,
            line: None,
            message: String::new(),
        }
    }

    /// Places the failure at `file:line`.
    pub(crate) fn locate(&mut self, (file, line): (String, u32)) {
        self.file = Some(file);
        self.line = Some(line);
    }
}

/// Parses the output of a test command. `hint` names the runner when the caller knows it (from
/// the command); otherwise, or when the hinted parser finds nothing, the runner is detected from
/// the text. `None` when the output holds no recognisable test results.
pub fn parse(output: &str, hint: Option<Runner>) -> Option<TestReport> {
    let text = strip_ansi(output);
    if let Some(runner) = hint.filter(|r| *r != Runner::Unknown)
        && let Some(report) = parse_as(&text, runner)
    {
        return Some(report);
    }
    let detected = detect(&text)?;
    if Some(detected) == hint {
        return None;
    }
    parse_as(&text, detected)
}

/// Parses a JUnit XML report. The error says why the document could not be read.
pub fn parse_junit_xml(xml: &str) -> Result<TestReport, JunitError> {
    junit::parse(xml)
}

fn parse_as(text: &str, runner: Runner) -> Option<TestReport> {
    match runner {
        Runner::Cargo => libtest::parse(text),
        Runner::Nextest => nextest::parse(text),
        Runner::Pytest => pytest::parse(text),
        Runner::GoTest => gotest::parse(text),
        Runner::Jest => jest::parse(text),
        Runner::Vitest => vitest::parse(text),
        Runner::JUnitXml => junit::find_and_parse(text),
        Runner::Maven => maven::parse(text),
        Runner::Tap => tap::parse(text),
        Runner::Gradle => gradle::parse(text),
        Runner::Unknown => None,
    }
}

/// Which runner printed `text` (already without ANSI codes). Nextest before libtest, since
/// nextest shows the libtest output of failing tests; vitest before jest, since both print a
/// `Tests` line.
pub fn detect(text: &str) -> Option<Runner> {
    let head = text.trim_start();
    if head.starts_with("<?xml") || head.starts_with("<testsuite") {
        return Some(Runner::JUnitXml);
    }
    let lines: Vec<&str> = text.lines().collect();
    let any = |pred: &dyn Fn(&str) -> bool| lines.iter().any(|line| pred(line));
    if any(&gotest::is_json_event) {
        return Some(Runner::GoTest);
    }
    if any(&nextest::is_marker) {
        return Some(Runner::Nextest);
    }
    if any(&libtest::is_marker) {
        return Some(Runner::Cargo);
    }
    if any(&pytest::is_marker) {
        return Some(Runner::Pytest);
    }
    if any(&vitest::is_marker) {
        return Some(Runner::Vitest);
    }
    if any(&jest::is_marker) {
        return Some(Runner::Jest);
    }
    if any(&maven::is_marker) {
        return Some(Runner::Maven);
    }
    if any(&gradle::is_marker) {
        return Some(Runner::Gradle);
    }
    if any(&gotest::is_text_marker) {
        return Some(Runner::GoTest);
    }
    if text.contains("<testsuite") {
        return Some(Runner::JUnitXml);
    }
    if any(&tap::is_marker) {
        return Some(Runner::Tap);
    }
    None
}

/// What the parsers' tests share: the failures they expect, and the check of a complete report.
#[cfg(test)]
pub(crate) mod test_support {
    use super::{Failure, Runner, TestReport};

    /// A failure at `file:line`.
    pub(crate) fn failure(name: &str, file: &str, line: u32, message: &str) -> Failure {
        Failure {
            name: name.into(),
            file: Some(file.into()),
            line: Some(line),
            message: message.into(),
        }
    }

    /// A failure whose output says nowhere where it happened.
    pub(crate) fn unplaced(name: &str, message: &str) -> Failure {
        Failure {
            name: name.into(),
            file: None,
            line: None,
            message: message.into(),
        }
    }

    /// Asserts that `report` is `runner`'s, with the runner's own totals (passed, failed, skipped)
    /// and these failures.
    #[track_caller]
    pub(crate) fn assert_complete(report: &TestReport, runner: Runner, counts: (u64, u64, u64), failures: &[Failure]) {
        assert_eq!(report.runner, runner);
        assert_eq!((report.passed, report.failed, report.skipped), counts);
        assert!(report.complete);
        assert_eq!(report.failures, failures);
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn every_sample_is_detected_as_its_runner() {
        let cases: &[(&str, Runner)] = &[
            (include_str!("samples/cargo_test_failures.txt"), Runner::Cargo),
            (include_str!("samples/cargo_test_color.txt"), Runner::Cargo),
            (include_str!("samples/cargo_test_build_error.txt"), Runner::Cargo),
            (include_str!("samples/nextest_failures.txt"), Runner::Nextest),
            (include_str!("samples/nextest_color.txt"), Runner::Nextest),
            (include_str!("samples/nextest_old_format.txt"), Runner::Nextest),
            (include_str!("samples/pytest_qrA.txt"), Runner::Pytest),
            (include_str!("samples/pytest_collection_error.txt"), Runner::Pytest),
            (include_str!("samples/go_test.json"), Runner::GoTest),
            (include_str!("samples/go_test_build_failed.json"), Runner::GoTest),
            (include_str!("samples/go_test_v.txt"), Runner::GoTest),
            (include_str!("samples/go_test_plain.txt"), Runner::GoTest),
            (include_str!("samples/jest.txt"), Runner::Jest),
            (include_str!("samples/jest_color.txt"), Runner::Jest),
            (include_str!("samples/vitest.txt"), Runner::Vitest),
            (include_str!("samples/vitest_workspace.txt"), Runner::Vitest),
            (include_str!("samples/pytest_junit.xml"), Runner::JUnitXml),
            (include_str!("samples/surefire_junit.xml"), Runner::JUnitXml),
            (include_str!("samples/maven_multimodule.txt"), Runner::Maven),
            (include_str!("samples/maven_rerun.txt"), Runner::Maven),
            (include_str!("samples/maven_surefire3.txt"), Runner::Maven),
            (include_str!("samples/gradle_default.txt"), Runner::Gradle),
            (include_str!("samples/gradle_multiproject.txt"), Runner::Gradle),
        ];
        for (sample, runner) in cases {
            let report = parse(sample, None).unwrap_or_else(|| panic!("{runner:?} sample not parsed"));
            assert_eq!(report.runner, *runner);
        }
    }

    #[test]
    fn a_wrong_hint_falls_back_to_detection() {
        let report = parse(include_str!("samples/pytest_qrA.txt"), Some(Runner::Cargo)).unwrap();
        assert_eq!(report.runner, Runner::Pytest);
        assert_eq!((report.passed, report.failed), (2, 5));
    }

    #[test]
    fn output_without_tests_is_not_a_report() {
        assert_eq!(parse("", None), None);
        assert_eq!(parse("make: *** No rule to make target 'test'.  Stop.\n", None), None);
        assert_eq!(parse("hello\n", Some(Runner::Cargo)), None);
    }
}
