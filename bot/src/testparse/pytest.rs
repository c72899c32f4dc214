//! pytest: the final `== 4 failed, 2 passed, 1 skipped in 0.10s ==` line, the
//! `____ test_name ____` sections under FAILURES and ERRORS (their `E   ` lines and the
//! `file.py:12: AssertionError` crash location, the innermost frame of the project's code), the
//! short test summary (`FAILED tests/test_x.py::test_y - message`) for full node ids, and the
//! per-test lines of `-v` (`tests/test_x.py::test_y FAILED  [ 50%]`). pytest-rerunfailures'
//! `RERUN` lines (progress and `-rR` summary) make one failure per test that never passed, however
//! often it ran; the lists of tests that "failed consistently" (PyTorch's `run_test.py`, a
//! `FAILED CONSISTENTLY` line) and the flaky plugin's `x failed; it passed 0 out of the required 1
//! times.` name failures too. Without the summary line (output cut), counts come from the
//! progress characters (`.FsxER`) or the short summary. Sections outside FAILURES and ERRORS
//! (coverage reports, `-rP` passes) and after the final summary line (tox's `___ summary ___`)
//! are not failures.
//!
//! [`python_traceback`] reads a Python program's crash outside pytest.

use super::text::{self, Lines, counts, location};
use super::{Failure, Runner, TestReport};

pub(super) fn is_marker(line: &str) -> bool {
    (line.starts_with("===") && (line.contains(" test session starts ") || line.contains(" short test summary info ")))
        || summary_line(line).is_some()
        || ((line.starts_with("FAILED ") || line.starts_with("ERROR ")) && line.contains(".py"))
        || (line.contains(".py::") && line.trim_end().ends_with("%]"))
        || consistent_failures(line).is_some()
        // A log cut to its FAILURES or ERRORS (an excerpt pasted in an issue).
        || (line.starts_with("==") && matches!(banner(line), Some("FAILURES" | "ERRORS")))
        || section_header(line).is_some_and(|(error, head)| error && head.contains(".py"))
}

/// `4 failed, 2 passed, 1 skipped, 1 xfailed, 1 error in 0.10s`, framed in `=` or not (`-q`).
fn summary_line(line: &str) -> Option<(u64, u64, u64)> {
    let line = line.trim().trim_matches('=').trim();
    let (list, time) = line.rsplit_once(" in ")?;
    time.split(' ').next()?.strip_suffix('s')?.parse::<f64>().ok()?;
    if list == "no tests ran" {
        return Some((0, 0, 0));
    }
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for (number, word) in counts(list, ", ")? {
        match word {
            "passed" | "xpassed" => passed += number,
            "failed" | "error" | "errors" => failed += number,
            "skipped" | "xfailed" => skipped += number,
            "warning" | "warnings" | "deselected" | "rerun" | "reruns" => {}
            _ => return None,
        }
    }
    Some((passed, failed, skipped))
}

/// A `FAILED` or `ERROR` line of the short test summary.
struct Listed<'a> {
    error: bool,
    nodeid: &'a str,
    message: Option<&'a str>,
}

fn listed(line: &str) -> Option<Listed<'_>> {
    let (error, rest) = match line.strip_prefix("FAILED ") {
        Some(rest) => (false, rest),
        None => (true, line.strip_prefix("ERROR ")?),
    };
    let (nodeid, message) = match rest.split_once(" - ") {
        Some((nodeid, message)) => (nodeid, Some(message)),
        None => (rest.trim(), None),
    };
    (!nodeid.contains(' ')).then_some(Listed { error, nodeid, message })
}

/// A `____ head ____` section of FAILURES or ERRORS.
struct Section<'a> {
    error: bool,
    /// As pytest titles it: `test_y`, `TestGroup.test_y`, `test_p[1-2]`, or a path for a module
    /// that could not be collected.
    head: &'a str,
    body: Vec<&'a str>,
    used: bool,
}

/// `____ test_y ____`: a title between runs of underscores (pytest centres it, so a long title
/// may have a single one each side). `_ _ _ _` separators inside a traceback are no header.
fn section_header(line: &str) -> Option<(bool, &str)> {
    let inner = line.strip_prefix('_')?.strip_suffix('_')?;
    let inner = inner.trim_start_matches('_').trim_end_matches('_');
    let head = inner.strip_prefix(' ')?.strip_suffix(' ')?.trim();
    if head.is_empty() || head.starts_with('_') {
        return None;
    }
    for prefix in ["ERROR at setup of ", "ERROR at teardown of ", "ERROR collecting "] {
        if let Some(head) = head.strip_prefix(prefix) {
            return Some((true, head));
        }
    }
    Some((false, head))
}

/// A `==== title ====` banner's title.
fn banner(line: &str) -> Option<&str> {
    let title = line
        .strip_prefix("==")?
        .trim_end()
        .strip_suffix("==")?
        .trim_matches('=')
        .trim();
    (!title.is_empty()).then_some(title)
}

/// Where in pytest's output a line is: the FAILURES and ERRORS sections hold failures; other
/// banners (warnings, coverage, passes, summaries) open parts that do not.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Region {
    /// No banner seen yet (output cut), or the session's start.
    Unknown,
    Failures,
    Other,
}

fn ends_section(line: &str) -> bool {
    section_header(line).is_some()
        || line.starts_with("===")
        || line.starts_with("!!!")
        || (line.starts_with("---") && line.contains(" Captured "))
}

pub(super) fn parse(text: &str) -> Option<TestReport> {
    let mut lines = Lines::new(text);
    let mut summary = None;
    let mut sections: Vec<Section<'_>> = Vec::new();
    let mut listed_failures = Vec::new();
    let mut progress = TestReport::new(Runner::Pytest);
    let mut listed_counts = TestReport::new(Runner::Pytest);
    // Per node id, in first-seen order: its last outcome on a `-v` line or in a `-rA`/`-rR`
    // summary (`RERUN` when it was re-run and no outcome followed).
    let mut outcomes: Vec<(&str, &str)> = Vec::new();
    let mut consistent: Vec<String> = Vec::new();
    let mut region = Region::Unknown;
    let mut ended = false;
    while let Some(line) = lines.next() {
        if let Some(counts) = summary_line(line) {
            summary = Some(counts);
            // What follows the final line (tox's `___ summary ___`) is pytest's no more.
            ended = true;
            region = Region::Other;
        } else if let Some(title) = banner(line) {
            region = match title {
                "FAILURES" | "ERRORS" => Region::Failures,
                _ if title.contains("test session starts") => Region::Unknown,
                _ => Region::Other,
            };
            ended &= region == Region::Other;
        } else if let Some((error, head)) = section_header(line) {
            let body = lines.until(ends_section).to_vec();
            if region != Region::Other && !ended {
                sections.push(Section {
                    error,
                    head,
                    body,
                    used: false,
                });
            }
        } else if let Some(entry) = listed(line) {
            listed_counts.failed += 1;
            record(
                &mut outcomes,
                entry.nodeid,
                if entry.error { "ERROR" } else { "FAILED" },
            );
            listed_failures.push(entry);
        } else if let Some(nodeid) = line.strip_prefix("RERUN ").map(str::trim) {
            if !nodeid.contains(' ') {
                record(&mut outcomes, nodeid, "RERUN");
            }
        } else if let Some(rest) = line.strip_prefix("PASSED ").or_else(|| line.strip_prefix("XPASS ")) {
            listed_counts.passed += 1;
            record(&mut outcomes, rest.trim(), "PASSED");
        } else if line.starts_with("XFAIL ") {
            listed_counts.skipped += 1;
        } else if let Some(rest) = line.strip_prefix("SKIPPED [") {
            listed_counts.skipped += rest.split_once(']').and_then(|(n, _)| n.parse().ok()).unwrap_or(1);
        } else if let Some(names) = consistent_failures(line) {
            consistent.extend(names);
        } else {
            if let Some((nodeid, outcome)) = verbose_outcome(line) {
                record(&mut outcomes, nodeid, outcome);
            }
            count_progress(line, &mut progress);
        }
    }
    if summary.is_none()
        && sections.is_empty()
        && listed_failures.is_empty()
        && progress.total() == 0
        && outcomes.is_empty()
        && consistent.is_empty()
    {
        return None;
    }

    let mut report = TestReport::new(Runner::Pytest);
    for entry in &listed_failures {
        let head = head_of(entry.nodeid);
        let section = sections
            .iter_mut()
            .find(|s| !s.used && s.error == entry.error && s.head == head);
        let mut failure = match section {
            Some(section) => {
                section.used = true;
                from_section(entry.nodeid, &section.body)
            }
            None => Failure::named(entry.nodeid),
        };
        if failure.message.is_empty() {
            failure.message = entry.message.map(|m| text::message([m])).unwrap_or_default();
        }
        if !report.failures.iter().any(|f| f.name == failure.name) {
            report.failures.push(failure);
        }
    }
    // Sections the short summary did not list (older pytest, `-rN`, a cut summary), named by the
    // node id of a `-v` line when one matches.
    let failing: Vec<&str> = outcomes
        .iter()
        .filter(|(_, outcome)| matches!(*outcome, "FAILED" | "ERROR" | "RERUN"))
        .map(|(nodeid, _)| *nodeid)
        .collect();
    for section in sections.iter().filter(|s| !s.used) {
        let mut named = failing.iter().filter(|nodeid| head_of(nodeid) == section.head);
        let name = match (named.next(), named.next()) {
            (Some(nodeid), None) => nodeid,
            _ => section.head,
        };
        if !report.failures.iter().any(|f| f.name == name) {
            report.failures.push(from_section(name, &section.body));
        }
    }
    // Tests whose failure only a per-test line or a rerun shows (output cut before the
    // sections), and the lists of tests that failed consistently.
    let named = |report: &TestReport, name: &str| {
        report
            .failures
            .iter()
            .any(|f| f.name == name || f.name == head_of(name) || head_of(&f.name) == head_of(name))
    };
    for nodeid in failing {
        if !named(&report, nodeid) {
            report.failures.push(Failure::named(nodeid));
        }
    }
    for name in consistent {
        if !named(&report, &name) {
            report.failures.push(Failure::named(name));
        }
    }

    let counted = if progress.total() > 0 {
        &progress
    } else {
        &listed_counts
    };
    let failing = report.failures.len() as u64;
    report.settle(summary, counted, failing);
    Some(report)
}

/// Notes `outcome` as the latest of `nodeid`. A `RERUN` never undoes an outcome already seen: the
/// `-rR` summary lists the reruns again after the progress lines.
fn record<'a>(outcomes: &mut Vec<(&'a str, &'a str)>, nodeid: &'a str, outcome: &'a str) {
    match outcomes.iter_mut().find(|(seen, _)| *seen == nodeid) {
        Some(_) if outcome == "RERUN" => {}
        Some((_, last)) => *last = outcome,
        None => outcomes.push((nodeid, outcome)),
    }
}

/// A `-v` line: `tests/test_x.py::test_y FAILED  [ 50%]` → the node id and the outcome.
/// Parameters may hold spaces (`test_p[a b]`): the outcome is the last word.
fn verbose_outcome(line: &str) -> Option<(&str, &str)> {
    let head = line.trim_end().strip_suffix("%]")?.rsplit_once('[')?.0.trim_end();
    let (nodeid, outcome) = head.rsplit_once(' ')?;
    let nodeid = nodeid.trim();
    (nodeid.contains("::")
        && matches!(
            outcome,
            "PASSED" | "FAILED" | "ERROR" | "RERUN" | "SKIPPED" | "XFAIL" | "XPASS"
        ))
    .then_some((nodeid, outcome))
}

/// Tests a rerun harness reports as failing every attempt: PyTorch's `run_test.py`
/// (`The following tests failed consistently: ['test/a.py::T::t']`), a `FAILED CONSISTENTLY:
/// test/a.py::T::t` line, and the flaky plugin's `test_x failed; it passed 0 out of the required
/// 1 times.`
fn consistent_failures(line: &str) -> Option<Vec<String>> {
    let line = line.trim();
    if let Some((_, list)) = line.split_once("The following tests failed consistently: ") {
        let names: Vec<String> = list
            .trim()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .split(',')
            .map(|name| name.trim().trim_matches(|c| c == '\'' || c == '"').to_owned())
            .filter(|name| !name.is_empty() && !name.contains(' '))
            .collect();
        return (!names.is_empty()).then_some(names);
    }
    if let Some((_, rest)) = line.split_once("FAILED CONSISTENTLY") {
        let name = rest.trim_start_matches(':').split_whitespace().next()?;
        return Some(vec![name.to_owned()]);
    }
    let (name, rest) = line.split_once(" failed; it passed ")?;
    (rest.contains(" out of the required ") && !name.contains(' ')).then(|| vec![name.to_owned()])
}

/// The section title pytest gives a node id: `tests/t.py::TestA::test_b[1]` → `TestA.test_b[1]`.
fn head_of(nodeid: &str) -> String {
    match nodeid.split_once("::") {
        Some((_, rest)) => rest.replace("::", "."),
        None => nodeid.to_owned(),
    }
}

/// The failure in a section: the last group of `E` lines, and the last `path:line:` line (where
/// the exception was raised).
pub(super) fn from_section(name: &str, body: &[&str]) -> Failure {
    let mut failure = Failure::named(name);
    let mut groups: Vec<Vec<&str>> = Vec::new();
    let mut in_group = false;
    let mut places: Vec<(String, u32)> = Vec::new();
    for line in body {
        if let Some(rest) = line
            .strip_prefix('E')
            .filter(|rest| rest.is_empty() || rest.starts_with(' '))
        {
            if !in_group {
                groups.push(Vec::new());
            }
            if let Some(group) = groups.last_mut() {
                group.push(rest.trim_start());
            }
            in_group = true;
            // A SyntaxError's own `  File "tests/t.py", line 2` is among its `E` lines.
            if rest.trim_start().starts_with("File \"")
                && let Some(place) = crash_location(rest)
            {
                places.push(place);
            }
        } else {
            in_group = false;
            if let Some(place) = crash_location(line) {
                places.push(place);
            }
        }
    }
    if let Some(place) = innermost(places) {
        failure.locate(place);
    }
    failure.message = match groups.pop() {
        Some(group) => text::message(group),
        None => text::message(body.iter().rev().find(|line| !line.trim().is_empty()).copied()),
    };
    failure
}

/// The innermost frame of the project's own code, or else the innermost frame.
fn innermost(places: Vec<(String, u32)>) -> Option<(String, u32)> {
    let own = places.iter().rposition(|(file, _)| !is_library(file));
    match own {
        Some(at) => places.into_iter().nth(at),
        None => places.into_iter().last(),
    }
}

/// A file of the standard library, of an installed package or of the interpreter itself
/// (`<frozen runpy>`), not of the project under test.
fn is_library(file: &str) -> bool {
    let file = file.replace('\\', "/");
    file.starts_with('<')
        || file.contains("site-packages/")
        || file.contains("dist-packages/")
        || file.contains("/lib/python")
        || file.contains("/Lib/")
        || file.contains("/hostedtoolcache/")
        // An environment's console-script wrapper (`venv/bin/pytest`).
        || (file.contains("/bin/") && !file.ends_with(".py"))
}

/// `tests/test_x.py:12: AssertionError`, `pkg/m.py:6: in f`, `tests/test_x.py:15: `,
/// `tests/test_x.py:25` (where a missing fixture was requested), or a native traceback's
/// `  File "tests/test_x.py", line 12, in test_y`.
pub(super) fn crash_location(line: &str) -> Option<(String, u32)> {
    if let Some(rest) = line.trim_start().strip_prefix("File \"") {
        let (file, rest) = rest.split_once("\", line ")?;
        let number = rest.split(',').next()?.trim().parse().ok()?;
        return Some((file.to_owned(), number));
    }
    if line.starts_with(char::is_whitespace) {
        return None;
    }
    let (place, _) = line
        .split_once(": ")
        .or_else(|| line.strip_suffix(':').map(|place| (place, "")))
        // A fixture that is not found: `/w/tests/test_x.py:25` alone.
        .or_else(|| Some((line.trim_end(), "")).filter(|(place, _)| place.contains(".py:")))?;
    location(place)
}

/// Progress output: `tests/test_x.py .F.s  [ 50%]` (default), `.F.s  [ 50%]` (`-q`), or
/// `tests/test_x.py::test_y PASSED  [ 50%]` (`-v`).
fn count_progress(line: &str, report: &mut TestReport) {
    let Some(head) = line
        .trim_end()
        .strip_suffix("%]")
        .and_then(|rest| rest.rsplit_once('['))
        .map(|(head, _)| head)
    else {
        return;
    };
    if let Some((_, outcome)) = verbose_outcome(line) {
        match outcome {
            "PASSED" | "XPASS" => report.passed += 1,
            "FAILED" | "ERROR" => report.failed += 1,
            "SKIPPED" | "XFAIL" => report.skipped += 1,
            _ => {}
        }
        return;
    }
    if head.split_whitespace().next().unwrap_or_default().contains("::") {
        return;
    }
    let Some(marks) = head.split_whitespace().last() else {
        return;
    };
    if !marks.chars().all(|c| ".FEsxXR".contains(c)) {
        return;
    }
    for c in marks.chars() {
        match c {
            '.' | 'X' => report.passed += 1,
            'F' | 'E' => report.failed += 1,
            // A rerun: the test's outcome follows.
            'R' => {}
            _ => report.skipped += 1,
        }
    }
}

/// A Python program's crash outside pytest: the last `Traceback (most recent call last):` of
/// `text`, its exception line as the message and its innermost frame of the project's code (not
/// of the standard library or an installed package) as the place; no place when every frame is a
/// library's. The failure is named after the exception's type.
pub fn python_traceback(text: &str) -> Option<Failure> {
    let lines: Vec<&str> = text.lines().collect();
    let Some(start) = lines
        .iter()
        .rposition(|l| l.trim_start() == "Traceback (most recent call last):")
    else {
        return fatal_exception(&lines);
    };
    let mut places = Vec::new();
    let mut exception = None;
    for line in &lines[start + 1..] {
        if line.starts_with(char::is_whitespace) {
            if let Some(place) = crash_location(line) {
                places.push(place);
            }
            continue;
        }
        exception = Some(line.trim_end()).filter(|l| is_exception_line(l));
        break;
    }
    let exception = exception?;
    let kind = exception.split(':').next().unwrap_or(exception);
    let mut failure = Failure::named(kind);
    if let Some(place) = places
        .iter()
        .rposition(|(file, _)| !is_library(file))
        .and_then(|at| places.into_iter().nth(at))
    {
        failure.locate(place);
    }
    failure.message = text::message([exception]);
    Some(failure)
}

/// A program that reports its fatal exception without a traceback (conda's
/// `PackagesNotFoundError: The following packages are not available …`): the last line that opens
/// with a named error (`…Error: message`, not a bare `Error:`).
fn fatal_exception(lines: &[&str]) -> Option<Failure> {
    let line = lines.iter().rev().map(|l| l.trim_end()).find(|l| {
        let kind = l.split(':').next().unwrap_or(l);
        is_exception_line(l) && kind.len() > "Error".len() && kind.ends_with("Error") && kind.len() < l.len()
    })?;
    let mut failure = Failure::named(line.split(':').next().unwrap_or(line));
    failure.message = text::message([line]);
    Some(failure)
}

/// `json.decoder.JSONDecodeError: Expecting …`, `KeyboardInterrupt`: a dotted name, then a
/// message or nothing.
fn is_exception_line(line: &str) -> bool {
    let kind = line.split(':').next().unwrap_or(line);
    !kind.is_empty()
        && kind.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.')
        && kind.chars().next().is_some_and(char::is_alphabetic)
        && (kind.len() == line.len() || line[kind.len()..].starts_with(": "))
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
                "tests/test_calc.py::test_add_wrong",
                "tests/test_calc.py",
                11,
                "assert 4 == 5\n+  where 4 = add(2, 2)",
            ),
            failure(
                "tests/test_calc.py::test_div_zero",
                "pkg/calc.py",
                6,
                "ZeroDivisionError: division by zero",
            ),
            failure(
                "tests/test_calc.py::test_param[2-3-6]",
                "tests/test_calc.py",
                25,
                "assert 5 == 6\n+  where 5 = add(2, 3)",
            ),
            failure(
                "tests/test_calc.py::TestGroup::test_in_class",
                "tests/test_calc.py",
                32,
                "AssertionError: a should be two\nassert 1 == 2",
            ),
            failure(
                "tests/test_calc.py::test_error",
                "tests/test_calc.py",
                42,
                "RuntimeError: fixture blew up",
            ),
        ]
    }

    #[test]
    fn the_default_output_is_read() {
        let report = parse(include_str!("samples/pytest_default.txt"), None).unwrap();
        assert_complete(&report, Runner::Pytest, (2, 5, 2), &expected());
    }

    #[test]
    fn the_report_of_all_outcomes_is_read() {
        let report = parse(include_str!("samples/pytest_qrA.txt"), None).unwrap();
        assert_eq!((report.passed, report.failed, report.skipped), (2, 5, 2));
        // `-rA` lists errors before failures.
        let mut expected = expected();
        expected.rotate_right(1);
        assert_eq!(report.failures, expected);
    }

    #[test]
    fn a_collection_error_is_a_failure() {
        let report = parse(include_str!("samples/pytest_collection_error.txt"), None).unwrap();
        assert_eq!((report.passed, report.failed, report.skipped), (0, 1, 0));
        assert_eq!(
            report.failures,
            vec![failure(
                "tests/test_broken.py",
                "tests/test_broken.py",
                1,
                "ModuleNotFoundError: No module named 'not_a_module'"
            )]
        );
    }

    #[test]
    fn colours_are_ignored() {
        let report = parse(include_str!("samples/pytest_color.txt"), None).unwrap();
        assert_eq!((report.passed, report.failed, report.skipped), (1, 1, 0));
        assert_eq!(report.failures, expected()[..1]);
    }

    #[test]
    fn cut_output_is_counted_from_progress() {
        let full = include_str!("samples/pytest_default.txt");
        let cut = &full[..full.find("____ test_param").unwrap()];
        let report = parse(cut, None).unwrap();
        assert!(!report.complete);
        // `.FFs.FFxE`: the progress line is all there is.
        assert_eq!((report.passed, report.failed, report.skipped), (2, 5, 2));
        let names: Vec<_> = report.failures.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["test_error", "test_add_wrong", "test_div_zero"]);
        assert_eq!(report.failures[2].message, "ZeroDivisionError: division by zero");
    }

    #[test]
    fn verbose_progress_and_native_tracebacks_are_read() {
        let output = "tests/test_a.py::test_ok PASSED                    [ 50%]\n\
                      tests/test_a.py::test_bad FAILED                   [100%]\n\
                      ___ test_bad ___\n\
                      Traceback (most recent call last):\n  File \"tests/test_a.py\", line 7, in test_bad\n    \
                      assert f() == 2\nAssertionError\n";
        let report = parse(output, None).unwrap();
        assert_eq!((report.passed, report.failed), (1, 1));
        assert_eq!(
            report.failures,
            vec![failure(
                "tests/test_a.py::test_bad",
                "tests/test_a.py",
                7,
                "AssertionError"
            )]
        );
    }

    #[test]
    fn reruns_make_one_failure_per_test_that_never_passed() {
        // Real: pytest 9.2 with pytest-rerunfailures 16.7, `--reruns 2`, default and `-v`.
        for (sample, verbose) in [
            (include_str!("samples/pytest_rerun_rR.txt"), false),
            (include_str!("samples/pytest_rerun_verbose.txt"), true),
        ] {
            let report = parse(sample, None).unwrap();
            assert_eq!((report.passed, report.failed, report.skipped), (2, 1, 0));
            assert!(report.complete);
            let message = if verbose {
                "AssertionError: assert {'a': 1} == {'a': 2}\nDiffering items:\n{'a': 1} != {'a': 2}\nFull diff: (-: missing in left side, +: extra in left side)\n{\n-     'a': 2,..."
            } else {
                "AssertionError: assert {'a': 1} == {'a': 2}\nDiffering items:\n{'a': 1} != {'a': 2}\nUse -v to get more diff"
            };
            assert_eq!(
                report.failures,
                vec![failure(
                    "tests/test_flaky.py::test_always_fails",
                    "tests/test_flaky.py",
                    17,
                    message
                )]
            );
        }
    }

    #[test]
    fn a_test_cut_off_while_rerunning_is_a_failure_once() {
        let full = include_str!("samples/pytest_rerun_verbose.txt");
        let cut = &full[..full.find("test_always_fails FAILED").unwrap()];
        let report = parse(cut, None).unwrap();
        assert!(!report.complete);
        assert_eq!(
            report.failures,
            vec![unplaced("tests/test_flaky.py::test_always_fails", "")]
        );
        // The flaky test passed on its rerun: no failure.
        assert_eq!(report.passed, 2);
    }

    #[test]
    fn tests_that_failed_consistently_are_failures() {
        let output = "The following tests failed consistently: ['test/test_ops.py::TestCommonCPU::test_out_abs_cpu_float32', 'test/test_nn.py::TestNN::test_conv']\n\
                      FAILED CONSISTENTLY: test/inductor/test_torchinductor.py::CpuTests::test_add_cpu\n\
                      test_pass failed; it passed 0 out of the required 1 times.\n\
                      test_flaky failed (1 runs remaining out of 2).\n\
                      test_flaky passed 1 out of the required 1 times. Success!\n";
        let report = parse(output, None).unwrap();
        let names: Vec<_> = report.failures.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "test/test_ops.py::TestCommonCPU::test_out_abs_cpu_float32",
                "test/test_nn.py::TestNN::test_conv",
                "test/inductor/test_torchinductor.py::CpuTests::test_add_cpu",
                "test_pass",
            ]
        );
    }

    #[test]
    fn a_syntax_error_in_a_test_module_is_placed_in_the_module() {
        // Real: pytest 9.2 collecting a module with an unclosed parenthesis.
        let report = parse(include_str!("samples/pytest_collection_syntax_error.txt"), None).unwrap();
        assert_eq!((report.passed, report.failed, report.skipped), (0, 1, 0));
        assert_eq!(
            report.failures,
            vec![failure(
                "tests/test_syntax.py",
                "/tmp/tb/tests/test_syntax.py",
                2,
                "File \"/tmp/tb/tests/test_syntax.py\", line 2\nassert (1 ==\n^\nSyntaxError: '(' was never closed"
            )]
        );
    }

    #[test]
    fn sections_outside_failures_are_no_failures() {
        // Cut from real logs of the triage corpus: pytest-cov's report (isobar-cli) and tox's
        // closing banner after pytest's final line (scrapy).
        let output = "=================================== FAILURES ===================================\n\
                      _________________________ test_main_metric_flag_exists _________________________\n\
                      \n\
                      tests/test_main.py:15: AssertionError\n\
                      ================================ tests coverage ================================\n\
                      _______________ coverage: platform linux, python 3.11.14-final-0 _______________\n\
                      \n\
                      TOTAL                          307     78    75%\n\
                      ========================= 1 failed, 13 passed in 4.58s =========================\n\
                      ERROR: InvocationError: '/w/.tox/py27/bin/py.test scrapy tests'\n\
                      ___________________________________ summary ____________________________________\n\
                      ERROR:   py27: commands failed\n";
        let report = parse(output, None).unwrap();
        let names: Vec<_> = report.failures.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["test_main_metric_flag_exists"]);
    }

    #[test]
    fn long_titles_and_verbose_node_ids_are_read() {
        // Cut from tests/fixtures/ci-logs/python-thefuck-fixture-not-found.log (real, pytest 4):
        // a title too long for more than two underscores a side, a parameter with spaces.
        let output = "tests/rules/test_x.py::test_get[command1-nix-env -iA nixos.pacman] ERROR [ 73%]\n\
                      ==================================== ERRORS ====================================\n\
                      __ ERROR at setup of test_get[command1-nix-env -iA nixos.pacman] ___\n\
                      file /w/tests/rules/test_x.py, line 25\n\
                      E       fixture 'packages' not found\n\
                      /w/tests/rules/test_x.py:25\n\
                      _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _\n";
        let report = parse(output, None).unwrap();
        assert_eq!(report.failed, 1);
        assert_eq!(
            report.failures,
            vec![failure(
                "tests/rules/test_x.py::test_get[command1-nix-env -iA nixos.pacman]",
                "/w/tests/rules/test_x.py",
                25,
                "fixture 'packages' not found"
            )]
        );
    }

    #[test]
    fn a_crash_is_placed_at_the_innermost_frame_of_the_project() {
        // Real: a script run with `python -m app.main` on a malformed JSON file.
        let crash = python_traceback(include_str!("samples/python_traceback.txt")).unwrap();
        assert_eq!(
            crash,
            failure(
                "json.decoder.JSONDecodeError",
                "/tmp/tb/app/config.py",
                6,
                "json.decoder.JSONDecodeError: Expecting property name enclosed in double quotes: line 1 column 15 (char 14)"
            )
        );
    }

    #[test]
    fn a_crash_in_library_code_only_has_no_place() {
        // Cut from tests/fixtures/ci-logs/python-scikit-learn-pytest-cov-plugin.log (real): a
        // chained traceback; the last one ends the program.
        let output = "Traceback (most recent call last):\n  File \"/e/lib/python3.4/site-packages/pluggy/__init__.py\", line 397, in load\n    plugin = ep.load()\n\
                      pkg_resources.VersionConflict: (pytest 3.5.0)\n\nDuring handling of the above exception, another exception occurred:\n\n\
                      Traceback (most recent call last):\n  File \"/e/bin/pytest\", line 11, in <module>\n    sys.exit(main())\n\
                      \x20 File \"/e/lib/python3.4/site-packages/pluggy/__init__.py\", line 402, in load\n    \"Plugin %r could not be loaded: %s!\" % (ep.name, e))\n\
                      pluggy.PluginValidationError: Plugin 'pytest_cov' could not be loaded!\n";
        assert_eq!(
            python_traceback(output),
            Some(unplaced(
                "pluggy.PluginValidationError",
                "pluggy.PluginValidationError: Plugin 'pytest_cov' could not be loaded!"
            ))
        );
        assert_eq!(
            python_traceback("Traceback (most recent call last):\n  File \"a.py\", line 1\n"),
            None
        );
        assert_eq!(python_traceback("no crash here\n"), None);
    }

    #[test]
    fn summary_lines_are_read() {
        assert_eq!(summary_line("==== 3 passed, 1 warning in 0.02s ===="), Some((3, 0, 0)));
        assert_eq!(
            summary_line("1 failed, 2 errors, 1 deselected in 1.5s"),
            Some((0, 3, 0))
        );
        assert_eq!(
            summary_line("===== 120 passed in 124.31s (0:02:04) ====="),
            Some((120, 0, 0))
        );
        assert_eq!(summary_line("no tests ran in 0.01s"), Some((0, 0, 0)));
        assert_eq!(summary_line("checked 3 files in 2s"), None);
    }
}
