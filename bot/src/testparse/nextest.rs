//! cargo-nextest: one status line per test (`FAIL [   0.003s] (1/6) crate::bin tests::name`), the
//! output of failing tests (indented under `stdout ───` / `stderr ───` since nextest 0.9.9x,
//! between `--- STDOUT:  crate::bin tests::name ---` headers before), and
//! `Summary [ 0.09s] 6 tests run: 2 passed, 4 failed, 1 skipped`.

use std::collections::HashMap;

use super::libtest::panic_message;
use super::text::{self, Lines, counts};
use super::{Failure, Runner, TestReport};

pub(super) fn is_marker(line: &str) -> bool {
    let trimmed = line.trim_start();
    trimmed.starts_with("Nextest run ID ")
        || (trimmed.starts_with("Summary [") && trimmed.contains(" run: "))
        || trimmed.starts_with("--- STDOUT: ")
        || trimmed.starts_with("--- STDERR: ")
        || status_line(line).is_some_and(|s| s.outcome != Outcome::Other)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Passed,
    Failed,
    Skipped,
    /// `START`, `SLOW` and other progress lines.
    Other,
}

struct Status<'a> {
    word: &'a str,
    outcome: Outcome,
    /// `binary test`, the key of a test.
    id: &'a str,
    test: &'a str,
}

/// `        FAIL [   0.033s] (1/6) scratch tests::adds_wrong`, `  SIGSEGV [ 0.1s] b t`,
/// `   TRY 2 PASS [ 0.1s] b t`, `       START [         ] (1/1) b t`, `   FLAKY 2/2 [ 0.1s] b t`
/// (passed on a retry), ` FLKY-FL 2/2 [ 0.1s] b t` (the same, failed by `--flaky-result fail`).
fn status_line(line: &str) -> Option<Status<'_>> {
    let (word, rest) = line.trim_start().split_once(" [")?;
    if !word.starts_with(|c: char| c.is_ascii_uppercase())
        || !word
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || matches!(c, ' ' | '-' | '/'))
    {
        return None;
    }
    let (_duration, rest) = rest.split_once("] ")?;
    let id = match rest.strip_prefix('(') {
        Some(counter) => counter.split_once(") ")?.1,
        None => rest,
    };
    let (_binary, test) = id.split_once(' ')?;
    if test.is_empty() || test.contains(' ') {
        return None;
    }
    let last = word
        .strip_prefix("TRY ")
        .map_or(word, |rest| rest.split_once(' ').map_or(rest, |(_, w)| w));
    let outcome = match last {
        "PASS" | "LEAK" => Outcome::Passed,
        // `--flaky-result fail` (nextest 0.9.131+): it passed on a retry, and that fails it.
        _ if last.starts_with("FLKY-FL") => Outcome::Failed,
        _ if last.starts_with("FLAKY") => Outcome::Passed,
        "SKIP" => Outcome::Skipped,
        "FAIL" | "TIMEOUT" | "ABORT" | "LEAK-FAIL" => Outcome::Failed,
        _ if last.starts_with("SIG") || last.contains("FAIL") => Outcome::Failed,
        _ => Outcome::Other,
    };
    Some(Status {
        word,
        outcome,
        id,
        test,
    })
}

/// The start of a section of captured output, and the test it belongs to when it says.
fn section_header(line: &str) -> Option<(Stream, Option<&str>)> {
    let trimmed = line.trim();
    for (prefix, stream) in [
        ("--- STDOUT:", Stream::Stdout),
        ("--- STDERR:", Stream::Stderr),
        ("--- OUTPUT:", Stream::Stdout),
    ] {
        if let Some(id) = trimmed.strip_prefix(prefix).and_then(|rest| rest.strip_suffix("---")) {
            return Some((stream, Some(id.trim())));
        }
    }
    let (word, bar) = trimmed.split_once(' ')?;
    if bar.is_empty() || !bar.chars().all(|c| c == '─') {
        return None;
    }
    match word {
        "stdout" | "output" => Some((Stream::Stdout, None)),
        "stderr" => Some((Stream::Stderr, None)),
        _ => None,
    }
}

#[derive(Clone, Copy)]
enum Stream {
    Stdout,
    Stderr,
}

fn is_separator(line: &str) -> bool {
    let trimmed = line.trim();
    trimmed.len() >= 3 && (trimmed.chars().all(|c| c == '─') || trimmed.chars().all(|c| c == '-'))
}

struct Test<'a> {
    name: &'a str,
    word: &'a str,
    outcome: Outcome,
    stdout: Vec<&'a str>,
    stderr: Vec<&'a str>,
}

pub(super) fn parse(text: &str) -> Option<TestReport> {
    let mut lines = Lines::new(text);
    let mut tests: Vec<Test<'_>> = Vec::new();
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    let mut summary = None;
    let mut last: Option<usize> = None;
    while let Some(line) = lines.next() {
        if let Some(status) = status_line(line) {
            if status.outcome == Outcome::Other {
                continue;
            }
            let index = match by_id.get(status.id) {
                Some(index) => *index,
                None => {
                    by_id.insert(status.id, tests.len());
                    tests.push(Test {
                        name: status.test,
                        word: status.word,
                        outcome: status.outcome,
                        stdout: Vec::new(),
                        stderr: Vec::new(),
                    });
                    tests.len() - 1
                }
            };
            tests[index].outcome = status.outcome;
            tests[index].word = status.word;
            last = Some(index);
        } else if let Some((stream, id)) = section_header(line) {
            let target = match id {
                Some(id) => by_id.get(id).copied(),
                None => last,
            };
            let body = lines.until(ends_section);
            let Some(test) = target.and_then(|index| tests.get_mut(index)) else {
                continue;
            };
            // The new layout indents captured output by four spaces.
            let body = body.iter().copied().map(|l| {
                if id.is_none() {
                    l.strip_prefix("    ").unwrap_or(l)
                } else {
                    l
                }
            });
            match stream {
                Stream::Stdout => test.stdout.extend(body),
                Stream::Stderr => test.stderr.extend(body),
            }
        } else if let Some(counts) = summary_line(line) {
            summary = Some(counts);
        }
    }
    if tests.is_empty() && summary.is_none() {
        return None;
    }
    let mut counted = TestReport::new(Runner::Nextest);
    for test in &tests {
        match test.outcome {
            Outcome::Passed => counted.passed += 1,
            Outcome::Failed => counted.failed += 1,
            Outcome::Skipped => counted.skipped += 1,
            Outcome::Other => {}
        }
    }
    let mut report = TestReport::new(Runner::Nextest);
    // Every failure is a test with a status line, so none is missing from the count.
    report.settle(summary, &counted, 0);
    report.failures = tests
        .iter()
        .filter(|t| t.outcome == Outcome::Failed)
        .map(failure)
        .collect();
    Some(report)
}

fn ends_section(line: &str) -> bool {
    status_line(line).is_some()
        || section_header(line).is_some()
        || is_separator(line)
        || summary_line(line).is_some()
        || line.trim_start().starts_with("Cancelling due to ")
}

/// `Summary [   0.090s] 6 tests run: 2 passed, 4 failed, 1 skipped`, `2/6 tests run: …`.
fn summary_line(line: &str) -> Option<(u64, u64, u64)> {
    let rest = line.trim_start().strip_prefix("Summary [")?;
    let (_, list) = rest.split_once(" run: ")?;
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for (number, word) in counts(list, ", ")? {
        match word {
            "passed" => passed += number,
            "failed" | "timed out" | "exec failed" | "leak-failed" => failed += number,
            "skipped" => skipped += number,
            _ => {}
        }
    }
    Some((passed, failed, skipped))
}

fn failure(test: &Test<'_>) -> Failure {
    let mut failure = Failure::named(test.name);
    if let Some(panic) = panic_message(&test.stderr).or_else(|| panic_message(&test.stdout)) {
        failure.message = panic.message;
        if let Some(place) = panic.location {
            failure.locate(place);
        }
        return failure;
    }
    let useful =
        |lines: &[&str]| text::message(lines.iter().copied().filter(|line| !is_libtest_noise(line, test.name)));
    failure.message = useful(&test.stderr);
    if failure.message.is_empty() {
        failure.message = useful(&test.stdout);
    }
    if failure.message.is_empty() {
        // A crash or a timeout says nothing itself.
        failure.message = test.word.to_owned();
    }
    failure
}

/// What libtest prints around a single test's run.
fn is_libtest_noise(line: &str, name: &str) -> bool {
    let trimmed = line.trim();
    trimmed.starts_with("running ")
        || trimmed.starts_with("test ")
        || trimmed == "failures:"
        || trimmed == name
        || trimmed.starts_with("note: run with `RUST_BACKTRACE")
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::testparse::parse;
    use crate::testparse::test_support::{assert_complete, failure, unplaced};

    fn expected() -> Vec<Failure> {
        vec![
            failure(
                "tests::adds_wrong",
                "src/lib.rs",
                25,
                "assertion `left == right` failed\n  left: 4\n right: 5",
            ),
            failure(
                "tests::panics_with_message",
                "src/lib.rs",
                32,
                "boom: vector had 0 items",
            ),
            failure(
                "integration_fails",
                "tests/integration.rs",
                8,
                "one plus one was not three",
            ),
            unplaced("tests::returns_err", "Error: \"bad result\""),
        ]
    }

    #[test]
    fn the_summary_and_the_failures_are_read() {
        let report = parse(include_str!("samples/nextest_failures.txt"), None).unwrap();
        assert_complete(&report, Runner::Nextest, (2, 4, 1), &expected());
    }

    #[test]
    fn a_fail_fast_run_counts_what_ran() {
        let report = parse(include_str!("samples/nextest_fail_fast.txt"), None).unwrap();
        assert_eq!((report.passed, report.failed, report.skipped), (1, 1, 1));
        assert_eq!(report.failures, expected()[..1]);
    }

    #[test]
    fn colours_are_ignored() {
        let report = parse(include_str!("samples/nextest_color.txt"), None).unwrap();
        assert_eq!((report.passed, report.failed, report.skipped), (1, 1, 5));
        assert_eq!(report.failures, expected()[2..3]);
    }

    #[test]
    fn the_old_layout_and_crashes_are_read() {
        let report = parse(include_str!("samples/nextest_old_format.txt"), None).unwrap();
        assert_eq!((report.passed, report.failed, report.skipped), (2, 4, 1));
        assert_eq!(
            report.failures,
            vec![
                expected()[0].clone(),
                expected()[2].clone(),
                unplaced("tests::segfaults", "SIGSEGV"),
                unplaced("tests::hangs", "TIMEOUT"),
            ]
        );
    }

    #[test]
    fn cut_output_is_counted_from_status_lines() {
        let full = include_str!("samples/nextest_failures.txt");
        let cut = &full[..full.find("FAIL [   0.018s] (5/6)").unwrap()];
        let report = parse(cut, None).unwrap();
        assert!(!report.complete);
        assert_eq!((report.passed, report.failed, report.skipped), (1, 3, 0));
        assert_eq!(report.failures, expected()[..3]);
    }

    #[test]
    fn a_test_that_passes_on_a_retry_fails_only_when_flakiness_fails_it() {
        // cargo-nextest 0.9.143, `--retries 1`, on a crate with a test failing on its first
        // attempt only and one failing always; then again with `--flaky-result fail`.
        let always = failure(
            "tests::always_fails",
            "src/lib.rs",
            25,
            "assertion `left == right` failed: arithmetic\n  left: 2\n right: 3",
        );
        let report = parse(include_str!("samples/nextest_retries.txt"), None).unwrap();
        assert_complete(&report, Runner::Nextest, (2, 1, 0), std::slice::from_ref(&always));
        let report = parse(include_str!("samples/nextest_flaky_result_fail.txt"), None).unwrap();
        assert_complete(
            &report,
            Runner::Nextest,
            (1, 2, 0),
            &[
                always,
                failure(
                    "tests::flaky_once",
                    "src/lib.rs",
                    10,
                    "first attempt fails: /tmp/flaky/target/flaky_once",
                ),
            ],
        );
    }

    #[test]
    fn summaries_with_notes_are_read() {
        assert_eq!(
            summary_line("     Summary [   0.025s] 1 test run: 1 passed, 6 skipped"),
            Some((1, 0, 6))
        );
        assert_eq!(
            summary_line("     Summary [   2.0s] 9 tests run: 6 passed (1 slow, 1 flaky), 2 failed, 1 timed out"),
            Some((6, 3, 0))
        );
    }
}
