//! libtest, as `cargo test` runs it: one `running N tests` … `test result:` block per test binary
//! (unit tests, each integration test, doc-tests), the failing tests' captured output in
//! `---- name stdout ----` sections, and their names again under a second `failures:`. When the
//! build fails no test runs, and the compiler's first error becomes the one failure.

use super::text::{self, Lines, location};
use super::{Failure, Runner, TestReport};

pub(super) fn is_marker(line: &str) -> bool {
    line.starts_with("test result: ")
        || line.starts_with("error: could not compile `")
        || line
            .strip_prefix("running ")
            .and_then(|rest| rest.strip_suffix(" tests").or_else(|| rest.strip_suffix(" test")))
            .is_some_and(|n| n.parse::<u64>().is_ok())
}

/// The failing tests of one test binary.
#[derive(Default)]
struct Binary<'a> {
    /// Names in the order they were first seen.
    failing: Vec<&'a str>,
    sections: Vec<(&'a str, Vec<&'a str>)>,
}

impl<'a> Binary<'a> {
    fn fail(&mut self, name: &'a str) {
        if !self.failing.contains(&name) {
            self.failing.push(name);
        }
    }

    fn into_failures(self, out: &mut Vec<Failure>) {
        for name in &self.failing {
            let body = self
                .sections
                .iter()
                .find(|(n, _)| n == name)
                .map_or(&[][..], |(_, b)| b.as_slice());
            out.push(failure(name, body));
        }
    }
}

pub(super) fn parse(text: &str) -> Option<TestReport> {
    let mut lines = Lines::new(text);
    let mut report = TestReport::new(Runner::Cargo);
    let mut counted = TestReport::new(Runner::Cargo);
    let (mut binaries, mut results, mut tests) = (0, 0, 0);
    let mut binary = Binary::default();
    while let Some(line) = lines.next() {
        if is_binary_header(line) {
            binaries += 1;
            std::mem::take(&mut binary).into_failures(&mut report.failures);
        } else if let Some((passed, failed, skipped)) = result_line(line) {
            results += 1;
            report.passed += passed;
            report.failed += failed;
            report.skipped += skipped;
        } else if let Some((name, outcome)) = test_line(line) {
            tests += 1;
            match outcome {
                Outcome::Passed => counted.passed += 1,
                Outcome::Failed => {
                    counted.failed += 1;
                    binary.fail(name);
                }
                Outcome::Skipped => counted.skipped += 1,
            }
        } else if let Some(name) = section_header(line) {
            binary.sections.push((name, lines.until(ends_section).to_vec()));
            binary.fail(name);
        } else if line == "failures:" {
            // The list of names: indented lines, after blank ones.
            lines.until(|line| !line.trim().is_empty());
            for name in lines.until(|line| !line.starts_with("    ") || line.trim().is_empty()) {
                binary.fail(name.trim());
            }
        }
    }
    binary.into_failures(&mut report.failures);

    if results > 0 {
        report.complete = results >= binaries;
        return Some(report);
    }
    if tests > 0 || !report.failures.is_empty() {
        counted.failures = report.failures;
        return Some(counted);
    }
    build_failure(lines.all()).map(|failure| {
        report.failures.push(failure);
        report
    })
}

fn is_binary_header(line: &str) -> bool {
    let trimmed = line.trim_start();
    line.starts_with(' ') && (trimmed.starts_with("Running ") || trimmed.starts_with("Doc-tests "))
}

/// `test result: FAILED. 1 passed; 3 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.41s`
pub(super) fn result_line(line: &str) -> Option<(u64, u64, u64)> {
    let rest = line.trim_start().strip_prefix("test result: ")?;
    let (_status, rest) = rest.split_once(". ")?;
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for item in rest.split("; ") {
        let Some((number, word)) = item.trim().split_once(' ') else {
            continue;
        };
        let Ok(number) = number.parse::<u64>() else { continue };
        match word {
            "passed" => passed = number,
            "failed" => failed = number,
            "ignored" => skipped = number,
            _ => {}
        }
    }
    Some((passed, failed, skipped))
}

enum Outcome {
    Passed,
    Failed,
    Skipped,
}

/// `test tests::adds ... ok`, `test src/lib.rs - add (line 7) ... FAILED`, `… ignored, slow`.
fn test_line(line: &str) -> Option<(&str, Outcome)> {
    let (name, result) = line.strip_prefix("test ")?.rsplit_once(" ... ")?;
    let outcome = if result == "ok" {
        Outcome::Passed
    } else if result.starts_with("FAILED") {
        Outcome::Failed
    } else if result.starts_with("ignored") {
        Outcome::Skipped
    } else {
        return None;
    };
    Some((name, outcome))
}

/// `---- tests::adds_wrong stdout ----`
fn section_header(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("---- ")?;
    rest.strip_suffix(" stdout ----")
        .or_else(|| rest.strip_suffix(" stderr ----"))
}

fn ends_section(line: &str) -> bool {
    section_header(line).is_some() || line == "failures:" || line.starts_with("test result: ")
}

/// The failure of test `name` from its captured output.
fn failure(name: &str, body: &[&str]) -> Failure {
    let mut failure = Failure::named(name);
    if let Some(panic) = panic_message(body) {
        failure.message = panic.message;
        if let Some(place) = panic.location {
            failure.locate(place);
        }
    } else {
        failure.message = text::message(body.iter().copied());
    }
    // A doc-test panics in a generated file; the test's name says where the example is.
    if let Some(place) = doctest_location(name) {
        failure.locate(place);
    }
    failure
}

pub(super) struct Panic {
    pub location: Option<(String, u32)>,
    pub message: String,
}

/// The first panic in captured output: `thread 'x' (123) panicked at src/lib.rs:5:9:` and the
/// message lines after it (Rust 1.73 and later), or `thread 'x' panicked at 'message',
/// src/lib.rs:5:9` (before).
pub(super) fn panic_message(body: &[&str]) -> Option<Panic> {
    let index = body.iter().position(|line| line.contains(" panicked at "))?;
    let (_, rest) = body[index].split_once(" panicked at ")?;
    if let Some(old) = rest.strip_prefix('\'') {
        // The message may span lines; it ends with `', location`.
        let mut message = Vec::new();
        let mut location_found = None;
        for (k, line) in std::iter::once(old)
            .chain(body[index + 1..].iter().copied())
            .enumerate()
        {
            if let Some((head, tail)) = line.rsplit_once("', ")
                && let Some(loc) = location(tail.trim())
            {
                message.push(head);
                location_found = Some(loc);
                break;
            }
            message.push(line);
            if k > 20 {
                break;
            }
        }
        return Some(Panic {
            location: location_found,
            message: text::message(message),
        });
    }
    let location = location(rest.trim().trim_end_matches(':'));
    let message = body[index + 1..]
        .iter()
        .copied()
        .take_while(|line| !line.trim().is_empty() && !line.starts_with("note: ") && *line != "stack backtrace:");
    Some(Panic {
        location,
        message: text::message(message),
    })
}

/// `src/lib.rs - add (line 7)` → `src/lib.rs`, 7.
fn doctest_location(name: &str) -> Option<(String, u32)> {
    let (file, rest) = name.split_once(" - ")?;
    let line = rest.rsplit_once("(line ")?.1.strip_suffix(')')?.parse().ok()?;
    Some((file.to_owned(), line))
}

/// The compiler's first error when the build failed: `error[E0425]: …` and its ` --> file:line:col`.
fn build_failure(lines: &[&str]) -> Option<Failure> {
    let summary = lines
        .iter()
        .find_map(|line| line.strip_prefix("error: could not compile "))?;
    let summary = summary.split_once(" due to").map_or(summary, |(head, _)| head);
    let mut failure = Failure::named(format!("build: could not compile {summary}"));
    let first_error = lines.iter().position(|line| {
        (line.starts_with("error[") || line.starts_with("error: ")) && !line.starts_with("error: could not compile ")
    });
    if let Some(index) = first_error {
        failure.message = text::message([lines[index]]);
        let arrow = lines[index + 1..]
            .iter()
            .take(3)
            .find_map(|line| line.trim_start().strip_prefix("--> "));
        if let Some(place) = arrow.and_then(location) {
            failure.locate(place);
        }
    }
    Some(failure)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::testparse::parse;
    use crate::testparse::test_support::{assert_complete, failure, unplaced};

    #[test]
    fn failures_across_binaries_are_summed() {
        let report = parse(include_str!("samples/cargo_test_failures.txt"), None).unwrap();
        assert_complete(
            &report,
            Runner::Cargo,
            (3, 5, 1),
            &[
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
                unplaced("tests::returns_err", "Error: \"bad result\""),
                failure(
                    "integration_fails",
                    "tests/integration.rs",
                    8,
                    "one plus one was not three",
                ),
                failure(
                    "src/lib.rs - add (line 7)",
                    "src/lib.rs",
                    7,
                    "assertion `left == right` failed\n  left: 3\n right: 4",
                ),
            ],
        );
    }

    #[test]
    fn backtraces_stay_out_of_the_message() {
        let report = parse(include_str!("samples/cargo_test_backtrace.txt"), None).unwrap();
        assert_eq!((report.passed, report.failed, report.skipped), (1, 3, 1));
        let names: Vec<_> = report.failures.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            ["tests::panics_with_message", "tests::adds_wrong", "tests::returns_err"]
        );
        assert_eq!(report.failures[0].message, "boom: vector had 0 items");
        assert_eq!(
            report.failures[1].message,
            "assertion `left == right` failed\n  left: 4\n right: 5"
        );
    }

    #[test]
    fn colours_are_ignored() {
        let report = parse(include_str!("samples/cargo_test_color.txt"), None).unwrap();
        assert_eq!((report.passed, report.failed, report.skipped), (1, 1, 0));
        assert_eq!(
            report.failures,
            vec![failure(
                "integration_fails",
                "tests/integration.rs",
                8,
                "one plus one was not three"
            )]
        );
    }

    #[test]
    fn a_passing_run_has_no_failures() {
        let report = parse(include_str!("samples/cargo_test_pass.txt"), None).unwrap();
        assert_eq!((report.passed, report.failed, report.skipped), (1, 0, 0));
        assert!(report.complete && report.succeeded());
    }

    #[test]
    fn a_build_error_is_the_failure() {
        let report = parse(include_str!("samples/cargo_test_build_error.txt"), None).unwrap();
        assert_eq!(report.total(), 0);
        assert!(!report.complete);
        assert_eq!(
            report.failures,
            vec![failure(
                "build: could not compile `broken` (lib)",
                "src/lib.rs",
                2,
                "error[E0425]: cannot find value `missing_value` in this scope"
            )]
        );
    }

    #[test]
    fn cut_output_is_counted_from_test_lines() {
        let full = include_str!("samples/cargo_test_failures.txt");
        let cut = &full[..full.find("---- tests::returns_err").unwrap()];
        let report = parse(cut, Some(Runner::Cargo)).unwrap();
        assert!(!report.complete);
        assert_eq!((report.passed, report.failed, report.skipped), (1, 3, 1));
        assert_eq!(report.failures.len(), 3);
        assert_eq!(report.failures[2].name, "tests::returns_err");
        assert_eq!(report.failures[2].message, "");
    }

    #[test]
    fn a_crashed_binary_leaves_the_counts_incomplete() {
        let output = "     Running unittests src/lib.rs (target/debug/deps/a-1)\n\nrunning 2 tests\ntest a ... ok\n\
                      test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n\
                      \n     Running tests/b.rs (target/debug/deps/b-2)\n\nrunning 1 test\n\
                      error: test failed, to rerun pass `--test b`\n\nCaused by:\n  process didn't exit successfully: \
                      (signal: 11, SIGSEGV: invalid memory reference)\n";
        let report = parse(output, None).unwrap();
        assert_eq!(report.passed, 1);
        assert!(!report.complete);
    }

    #[test]
    fn old_style_panic_messages_are_read() {
        let body = [
            "thread 'tests::x' panicked at 'assertion failed: `(left == right)`",
            "  left: `4`,",
            " right: `5`', src/lib.rs:16:9",
            "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
        ];
        let panic = panic_message(&body).unwrap();
        assert_eq!(panic.location, Some(("src/lib.rs".into(), 16)));
        assert_eq!(
            panic.message,
            "assertion failed: `(left == right)`\n  left: `4`,\n right: `5`"
        );
        let panic = panic_message(&["thread 'main' panicked at 'boom', src/main.rs:2:5"]).unwrap();
        assert_eq!(
            (panic.location, panic.message.as_str()),
            (Some(("src/main.rs".into(), 2)), "boom")
        );
    }
}
