//! pytest: the final `== 4 failed, 2 passed, 1 skipped in 0.10s ==` line, the
//! `____ test_name ____` sections under FAILURES and ERRORS (their `E   ` lines and the
//! `file.py:12: AssertionError` crash location), and the short test summary
//! (`FAILED tests/test_x.py::test_y - message`) for full node ids. Without the summary line
//! (output cut), counts come from the progress characters (`.FsxE`) or the short summary.

use super::text::{self, Lines, counts, location};
use super::{Failure, Runner, TestReport};

pub(super) fn is_marker(line: &str) -> bool {
    (line.starts_with("===") && (line.contains(" test session starts ") || line.contains(" short test summary info ")))
        || summary_line(line).is_some()
        || ((line.starts_with("FAILED ") || line.starts_with("ERROR ")) && line.contains(".py"))
        || (line.contains(".py::") && line.trim_end().ends_with("%]"))
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

fn section_header(line: &str) -> Option<(bool, &str)> {
    if !line.starts_with("___") || !line.ends_with("___") {
        return None;
    }
    let head = line.trim_matches('_').trim();
    if head.is_empty() {
        return None;
    }
    for prefix in ["ERROR at setup of ", "ERROR at teardown of ", "ERROR collecting "] {
        if let Some(head) = head.strip_prefix(prefix) {
            return Some((true, head));
        }
    }
    Some((false, head))
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
    while let Some(line) = lines.next() {
        if let Some(counts) = summary_line(line) {
            summary = Some(counts);
        } else if let Some((error, head)) = section_header(line) {
            sections.push(Section {
                error,
                head,
                body: lines.until(ends_section).to_vec(),
                used: false,
            });
        } else if let Some(entry) = listed(line) {
            listed_counts.failed += 1;
            listed_failures.push(entry);
        } else if line.starts_with("PASSED ") || line.starts_with("XPASS ") {
            listed_counts.passed += 1;
        } else if line.starts_with("XFAIL ") {
            listed_counts.skipped += 1;
        } else if let Some(rest) = line.strip_prefix("SKIPPED [") {
            listed_counts.skipped += rest.split_once(']').and_then(|(n, _)| n.parse().ok()).unwrap_or(1);
        } else {
            count_progress(line, &mut progress);
        }
    }
    if summary.is_none() && sections.is_empty() && listed_failures.is_empty() && progress.total() == 0 {
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
        report.failures.push(failure);
    }
    // Sections the short summary did not list (older pytest, `-rN`, a cut summary).
    for section in sections.iter().filter(|s| !s.used) {
        report.failures.push(from_section(section.head, &section.body));
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
        } else {
            in_group = false;
        }
        if let Some(place) = crash_location(line) {
            failure.locate(place);
        }
    }
    failure.message = match groups.pop() {
        Some(group) => text::message(group),
        None => text::message(body.iter().rev().find(|line| !line.trim().is_empty()).copied()),
    };
    failure
}

/// `tests/test_x.py:12: AssertionError`, `pkg/m.py:6: in f`, `tests/test_x.py:15: `, or a native
/// traceback's `  File "tests/test_x.py", line 12, in test_y`.
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
        .or_else(|| line.strip_suffix(':').map(|place| (place, "")))?;
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
    let mut words = head.split_whitespace();
    let first = words.next().unwrap_or_default();
    if first.contains("::") {
        match words.next().unwrap_or_default() {
            "PASSED" | "XPASS" => report.passed += 1,
            "FAILED" | "ERROR" => report.failed += 1,
            "SKIPPED" | "XFAIL" => report.skipped += 1,
            _ => {}
        }
        return;
    }
    let Some(marks) = head.split_whitespace().last() else {
        return;
    };
    if !marks.chars().all(|c| ".FEsxX".contains(c)) {
        return;
    }
    for c in marks.chars() {
        match c {
            '.' | 'X' => report.passed += 1,
            'F' | 'E' => report.failed += 1,
            _ => report.skipped += 1,
        }
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::testparse::parse;
    use crate::testparse::test_support::{assert_complete, failure};

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
            vec![failure("test_bad", "tests/test_a.py", 7, "AssertionError")]
        );
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
