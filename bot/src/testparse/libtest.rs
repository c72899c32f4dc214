//! libtest, as `cargo test` runs it: one `running N tests` … `test result:` block per test binary
//! (unit tests, each integration test, doc-tests), the failing tests' captured output in
//! `---- name stdout ----` sections, and their names again under a second `failures:`. When the
//! build fails no test runs, and the compiler's first error becomes the one failure.
//!
//! Real logs are often cut (a killed job, a log excerpt) before the `failures:` list and the
//! `test result:` line, so a test fails by any of: its `... FAILED` line, its captured-output
//! section, its name in the list, or a `thread 'name' panicked at` line outside any section (with
//! `--nocapture`, or output interleaved by parallel jobs). A test that passed never fails: the
//! sections printed under `successes:` (`--show-output`) and the panics of `should_panic` tests
//! that end `... ok` are not failures. Lines behind a build tool's prefix (Nix's `       > `, or
//! `name> ` of `nix build -L`) are read without it.

use std::borrow::Cow;
use std::collections::HashSet;

use super::text::{self, Lines, location};
use super::{Failure, Runner, TestReport};

pub(super) fn is_marker(line: &str) -> bool {
    let line = unprefixed(line);
    line.starts_with("test result: ")
        || line.starts_with("error: could not compile `")
        || section_header(line).is_some()
        || line
            .strip_prefix("running ")
            .and_then(|rest| rest.strip_suffix(" tests").or_else(|| rest.strip_suffix(" test")))
            .is_some_and(|n| n.parse::<u64>().is_ok())
}

/// `line` without the prefix a build tool puts on the lines of the build it runs: Nix's
/// `       > ` (`       >` on an empty line) in a failed build's last log lines, and the
/// `drvname> ` of `nix build -L`.
pub(super) fn unprefixed(line: &str) -> &str {
    let indented = line.trim_start_matches(' ');
    if indented.len() < line.len()
        && let Some(rest) = indented.strip_prefix('>')
        && (rest.is_empty() || rest.starts_with(' '))
    {
        return rest.strip_prefix(' ').unwrap_or(rest);
    }
    if let Some((name, rest)) = line.split_once("> ")
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+'))
    {
        return rest;
    }
    line
}

/// `text` with every line [`unprefixed`]; borrowed when no line has a prefix.
pub(super) fn unprefixed_text(text: &str) -> Cow<'_, str> {
    if text.lines().all(|line| unprefixed(line).len() == line.len()) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        out.push_str(unprefixed(line));
        out.push('\n');
    }
    Cow::Owned(out)
}

/// The failing tests of one test binary.
#[derive(Default)]
struct Binary<'a> {
    /// Names in the order they were first seen.
    failing: Vec<&'a str>,
    /// Of those, the ones only a panic outside any section names: a `should_panic` test that
    /// passed under `--nocapture` prints its panic too.
    only_panicked: HashSet<&'a str>,
    /// Tests whose `... ok` line was seen: whatever else the output says of them, they passed.
    passed: HashSet<&'a str>,
    /// Whether the `failures:` list of names was read: it names every failure of the binary.
    listed: bool,
    sections: Vec<(&'a str, Vec<&'a str>)>,
}

impl<'a> Binary<'a> {
    fn fail(&mut self, name: &'a str) {
        self.only_panicked.remove(name);
        if !self.failing.contains(&name) {
            self.failing.push(name);
        }
    }

    fn panicked(&mut self, name: &'a str) {
        if !self.failing.contains(&name) {
            self.failing.push(name);
            self.only_panicked.insert(name);
        }
    }

    /// A test's result line.
    fn record(&mut self, name: &'a str, outcome: Outcome, counted: &mut TestReport) {
        match outcome {
            Outcome::Passed => {
                counted.passed += 1;
                self.passed.insert(name);
            }
            Outcome::Failed => {
                counted.failed += 1;
                self.fail(name);
            }
            Outcome::Skipped => counted.skipped += 1,
        }
    }

    fn into_failures(self, out: &mut Vec<Failure>) {
        let failed = |name: &&&str| {
            let passed = self.passed.contains(**name);
            let unlisted = self.listed && self.only_panicked.contains(**name);
            !passed && !unlisted
        };
        for name in self.failing.iter().filter(failed) {
            // An interleaved log may print a section's header twice, the first time empty.
            let body = self
                .sections
                .iter()
                .filter(|(n, _)| n == name)
                .map(|(_, b)| b.as_slice())
                .find(|b| b.iter().any(|line| !line.trim().is_empty()))
                .unwrap_or_default();
            out.push(failure(name, body));
        }
    }
}

pub(super) fn parse(text: &str) -> Option<TestReport> {
    let text = unprefixed_text(text);
    let mut lines = Lines::new(&text);
    let mut report = TestReport::new(Runner::Cargo);
    let mut counted = TestReport::new(Runner::Cargo);
    let (mut binaries, mut results, mut tests) = (0, 0, 0);
    let mut binary = Binary::default();
    let mut successes = false;
    // With `--nocapture` a test's own output follows `test x ... ` and its result comes later,
    // alone on a line.
    let mut pending: Option<&str> = None;
    while let Some(line) = lines.next() {
        if is_binary_header(line) {
            binaries += 1;
            successes = false;
            pending = None;
            std::mem::take(&mut binary).into_failures(&mut report.failures);
        } else if let Some((passed, failed, skipped)) = result_line(line) {
            results += 1;
            report.passed += passed;
            report.failed += failed;
            report.skipped += skipped;
        } else if let Some((name, outcome)) = test_line(line) {
            tests += 1;
            pending = None;
            match outcome {
                Some(outcome) => binary.record(name, outcome, &mut counted),
                None => pending = Some(name),
            }
        } else if let Some(outcome) = late_result(line)
            && let Some(name) = pending.take()
        {
            binary.record(name, outcome, &mut counted);
        } else if let Some(name) = section_header(line) {
            binary.sections.push((name, lines.until(ends_section).to_vec()));
            if !successes {
                binary.fail(name);
            }
        } else if line == "successes:" {
            // `--show-output` prints the output of passing tests in sections under it.
            successes = true;
        } else if let Some(name) = panicking_test(line) {
            let mut body = vec![line];
            body.extend_from_slice(lines.until(|l| {
                l.trim().is_empty() || ends_section(l) || test_line(l).is_some() || late_result(l).is_some()
            }));
            binary.sections.push((name, body));
            binary.panicked(name);
        } else if line == "failures:" {
            successes = false;
            // The list of names: indented lines, after blank ones.
            lines.until(|line| !line.trim().is_empty());
            for name in lines.until(|line| !line.starts_with("    ") || line.trim().is_empty()) {
                binary.fail(name.trim());
                binary.listed = true;
            }
        }
    }
    binary.into_failures(&mut report.failures);

    if results > 0 {
        report.complete = results >= binaries;
        return Some(report);
    }
    if tests > 0 || !report.failures.is_empty() {
        // A failure seen only by its section or panic was not counted by a result line.
        counted.failed = counted.failed.max(report.failures.len() as u64);
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

/// `test tests::adds ... ok`, `test src/lib.rs - add (line 7) ... FAILED`, `… ignored, slow`,
/// `test tests::overflows - should panic ... ok`; the quiet format's `tests::adds --- FAILED`.
/// The outcome is `None` when the test's own output follows (`--nocapture`): its result comes
/// later, on a line of its own.
fn test_line(line: &str) -> Option<(&str, Option<Outcome>)> {
    if let Some(name) = line.strip_suffix(" --- FAILED")
        && !name.is_empty()
        && !name.starts_with(char::is_whitespace)
    {
        return Some((name, Some(Outcome::Failed)));
    }
    let (name, result) = line.strip_prefix("test ")?.split_once(" ... ")?;
    let name = name.strip_suffix(" - should panic").unwrap_or(name);
    let outcome = if result == "ok" {
        Some(Outcome::Passed)
    } else if result.starts_with("FAILED") {
        Some(Outcome::Failed)
    } else if result.starts_with("ignored") {
        Some(Outcome::Skipped)
    } else {
        None
    };
    Some((name, outcome))
}

/// A test's result alone on a line, after its output under `--nocapture`.
fn late_result(line: &str) -> Option<Outcome> {
    match line {
        "ok" => Some(Outcome::Passed),
        "FAILED" => Some(Outcome::Failed),
        _ => None,
    }
}

/// `---- tests::adds_wrong stdout ----`
fn section_header(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("---- ")?;
    rest.strip_suffix(" stdout ----")
        .or_else(|| rest.strip_suffix(" stderr ----"))
}

fn ends_section(line: &str) -> bool {
    section_header(line).is_some() || line == "failures:" || line == "successes:" || line.starts_with("test result: ")
}

/// The test whose thread panicked, outside its captured output: `thread 'tests::x' panicked at
/// src/lib.rs:5:9:` or, since Rust 1.87, `thread 'tests::x' (4711) panicked at …`. libtest runs
/// each test on a thread named after it; `main`, `<unnamed>` and threads a test spawned with a
/// name of its own (`tokio-runtime-worker`) are not tests.
fn panicking_test(line: &str) -> Option<&str> {
    let (name, rest) = line.strip_prefix("thread '")?.split_once('\'')?;
    let rest = rest.trim_start();
    let rest = match rest.strip_prefix('(') {
        Some(id) => id.split_once(") ")?.1,
        None => rest,
    };
    if !rest.starts_with("panicked at ") || name == "main" {
        return None;
    }
    let is_path = name.split("::").all(|part| {
        part.starts_with(|c: char| c.is_alphabetic() || c == '_')
            && part.chars().all(|c| c.is_alphanumeric() || c == '_')
    });
    is_path.then_some(name)
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
        // A `should_panic` test that returned: `note: test did not panic as expected at
        // src/lib.rs:12:8` (since Rust 1.76; the location is the test's).
        let place = body.iter().find_map(|line| {
            let (_, place) = line.split_once("test did not panic as expected at ")?;
            location(place.trim())
        });
        if let Some(place) = place {
            failure.locate(place);
        }
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

    /// The failures of the scratch crate of `cargo_test_show_output.txt` and its siblings.
    fn scratch_failures() -> Vec<Failure> {
        vec![
            failure(
                "tests::adds_wrong",
                "src/lib.rs",
                18,
                "assertion `left == right` failed\n  left: 4\n right: 5",
            ),
            failure(
                "tests::does_not_panic",
                "src/lib.rs",
                29,
                "note: test did not panic as expected at src/lib.rs:29:8",
            ),
        ]
    }

    #[test]
    fn sections_under_successes_are_passing_tests() {
        let report = parse(include_str!("samples/cargo_test_show_output.txt"), None).unwrap();
        assert_complete(&report, Runner::Cargo, (2, 2, 0), &scratch_failures());
    }

    #[test]
    fn a_should_panic_test_is_named_without_its_note() {
        let line = "test tests::does_not_panic - should panic ... FAILED";
        assert!(matches!(
            test_line(line),
            Some(("tests::does_not_panic", Some(Outcome::Failed)))
        ));
    }

    #[test]
    fn nocapture_output_is_read_and_a_passing_should_panic_is_no_failure() {
        let full = include_str!("samples/cargo_test_nocapture.txt");
        let report = parse(full, None).unwrap();
        assert_complete(&report, Runner::Cargo, (2, 2, 0), &scratch_failures());
        // Cut before the `failures:` list: the panic outside any section and the late `FAILED`
        // say which test failed; the should_panic test's panic is followed by its `ok`.
        let cut = &full[..full.find("\nfailures:").unwrap()];
        let report = parse(cut, None).unwrap();
        assert!(!report.complete);
        assert_eq!((report.passed, report.failed, report.skipped), (2, 2, 0));
        let names: Vec<_> = report.failures.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["tests::adds_wrong", "tests::does_not_panic"]);
        assert_eq!(report.failures[0], scratch_failures()[0]);
    }

    #[test]
    fn a_panic_the_failures_list_leaves_out_is_no_failure() {
        // `--nocapture` with the quiet format: passing tests are not named, their panics are
        // printed (`RUST_BACKTRACE` unset is what the sample has; the rule is the list's).
        let output = "running 2 tests\n.\nthread 'tests::overflows' (28418) panicked at src/lib.rs:2:5:\n\
                      attempt to add with overflow\n.\nfailures:\n\nfailures:\n    tests::other\n\n\
                      test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.08s\n";
        let report = parse(output, None).unwrap();
        let names: Vec<_> = report.failures.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["tests::other"]);
    }

    #[test]
    fn the_quiet_format_names_its_failures() {
        let report = parse(include_str!("samples/cargo_test_quiet.txt"), None).unwrap();
        assert_complete(&report, Runner::Cargo, (2, 2, 0), &scratch_failures());
    }

    #[test]
    fn a_prefixed_cut_log_without_a_summary_has_its_sections_failing() {
        let report = parse(include_str!("samples/cargo_test_nix_cut.txt"), None).unwrap();
        assert!(!report.complete);
        assert_eq!((report.passed, report.failed, report.skipped), (10, 2, 0));
        assert_eq!(
            report.failures,
            [
                failure(
                    "tests::test_run_phase_duplicate_late_panics_in_debug",
                    "crates/rustledger-validate/src/lib.rs",
                    2767,
                    "note: test did not panic as expected at crates/rustledger-validate/src/lib.rs:2767:8",
                ),
                unplaced("tests::test_run_phase_late_before_early_panics_in_debug", ""),
            ]
        );
    }

    #[test]
    fn a_repeated_section_header_keeps_the_message() {
        let report = parse(include_str!("samples/cargo_test_interleaved.txt"), None).unwrap();
        assert_eq!((report.passed, report.failed), (904, 4));
        let down = &report.failures[2];
        assert_eq!(down.name, "f64::tests::test_next_down");
        assert_eq!(
            (down.file.as_deref(), down.line),
            (Some("library/std/src/f64/tests.rs"), Some(336))
        );
        assert_eq!(
            down.message,
            "assertion failed: `(left == right)`\n right: `9219619037165300394`"
        );
    }

    #[test]
    fn a_panicking_thread_outside_sections_names_a_test_only_when_it_is_one() {
        assert_eq!(
            panicking_test("thread 'tests::x' (4711) panicked at src/lib.rs:5:9:"),
            Some("tests::x")
        );
        assert_eq!(
            panicking_test("thread 'adds' panicked at 'boom', src/lib.rs:5:9"),
            Some("adds")
        );
        for line in [
            "thread 'main' panicked at src/main.rs:2:5:",
            "thread '<unnamed>' panicked at src/lib.rs:5:9:",
            "thread 'tokio-runtime-worker' panicked at src/lib.rs:5:9:",
            "thread 'tests::x' has overflowed its stack",
        ] {
            assert_eq!(panicking_test(line), None, "{line}");
        }
    }

    #[test]
    fn build_tool_prefixes_are_removed() {
        assert_eq!(unprefixed("       > test a ... ok"), "test a ... ok");
        assert_eq!(unprefixed("       >"), "");
        assert_eq!(unprefixed("niri> running 149 tests"), "running 149 tests");
        assert_eq!(unprefixed("> a quote"), "> a quote");
        assert_eq!(unprefixed("    a < b > c"), "    a < b > c");
        assert_eq!(unprefixed("Vec<u8>> x"), "Vec<u8>> x");
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
