//! Jest's default reporter: a `PASS`/`FAIL path` line per test file, a `● describe › test` block
//! per failure (the message, a code frame, the stack), and
//! `Tests:       1 failed, 1 skipped, 1 todo, 2 passed, 5 total`. `--verbose` adds a `✓`/`✕`/`○`
//! line per test, counted when the summary is missing.

use super::text::{self, Lines, counts, location};
use super::{Failure, Runner, TestReport};

pub(super) fn is_marker(line: &str) -> bool {
    line.starts_with("Test Suites: ") || summary_line(line).is_some() || block_header(line).is_some()
}

/// `Tests:       3 failed, 1 skipped, 1 todo, 2 passed, 7 total`
fn summary_line(line: &str) -> Option<(u64, u64, u64)> {
    let list = line.strip_prefix("Tests:")?.trim();
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    let mut total = false;
    for (number, word) in counts(list, ", ")? {
        match word {
            "passed" => passed += number,
            "failed" => failed += number,
            "skipped" | "todo" => skipped += number,
            "total" => total = true,
            _ => {}
        }
    }
    total.then_some((passed, failed, skipped))
}

/// ` FAIL  src/x.test.js (5.1 s)` (coloured) or `FAIL src/x.test.js` → the path.
fn file_line(line: &str) -> Option<&str> {
    let trimmed = line.trim_start();
    let rest = trimmed
        .strip_prefix("PASS ")
        .or_else(|| trimmed.strip_prefix("FAIL "))?;
    rest.split_whitespace().next()
}

fn block_header(line: &str) -> Option<&str> {
    line.strip_prefix("  ● ").map(str::trim)
}

fn ends_block(line: &str) -> bool {
    block_header(line).is_some()
        || file_line(line).is_some()
        || line.starts_with("Test Suites: ")
        || line.starts_with("Tests:")
        || line.starts_with("Summary of all failing tests")
}

pub(super) fn parse(text: &str) -> Option<TestReport> {
    let mut lines = Lines::new(text);
    let mut report = TestReport::new(Runner::Jest);
    let mut counted = TestReport::new(Runner::Jest);
    let mut summary = None;
    let mut file: Option<&str> = None;
    while let Some(line) = lines.next() {
        if let Some(path) = file_line(line) {
            file = Some(path);
        } else if let Some(counts) = summary_line(line) {
            summary = Some(counts);
        } else if let Some(name) = block_header(line) {
            let failure = block(name, file, lines.until(ends_block));
            // The "Summary of all failing tests" repeats the blocks.
            if !report
                .failures
                .iter()
                .any(|f| f.name == failure.name && f.file == failure.file)
            {
                report.failures.push(failure);
            }
        } else {
            let trimmed = line.trim_start();
            if trimmed.starts_with("✓ ") {
                counted.passed += 1;
            } else if trimmed.starts_with("✕ ") {
                counted.failed += 1;
            } else if trimmed.starts_with("○ ") || trimmed.starts_with("✎ ") {
                counted.skipped += 1;
            }
        }
    }
    if summary.is_none() && report.failures.is_empty() && counted.total() == 0 {
        return None;
    }
    let failing = report.failed_tests();
    report.settle(summary, &counted, failing);
    Some(report)
}

/// One `●` block: the message up to the code frame or the stack, and the first stack frame
/// outside `node_modules`. A suite that failed to run is named after its file.
fn block(name: &str, file: Option<&str>, body: &[&str]) -> Failure {
    let suite = name == "Test suite failed to run";
    let mut failure = Failure::named(if suite { file.unwrap_or(name) } else { name });
    let message = body
        .iter()
        .map(|line| line.strip_prefix("    ").unwrap_or(line))
        .skip_while(|line| line.trim().is_empty())
        .take_while(|line| !is_code_frame(line) && stack_frame(line).is_none());
    failure.message = text::message(message);
    match project_frame(body, stack_frame) {
        Some(place) => failure.locate(place),
        None => failure.file = file.map(str::to_owned),
    }
    failure
}

/// `  > 10 |     expect(x).toBe(5);` or `    11 |   });`
fn is_code_frame(line: &str) -> bool {
    let trimmed = line.trim_start().trim_start_matches('>').trim_start();
    trimmed
        .split_once(" |")
        .is_some_and(|(number, _)| number.parse::<u32>().is_ok())
        || trimmed.starts_with('|')
}

/// `at Object.<anonymous> (src/sum.test.js:9:23)` or `at src/x.spec.ts:264:24`.
pub(super) fn stack_frame(line: &str) -> Option<(String, u32)> {
    let rest = line.trim_start().strip_prefix("at ")?;
    let place = match rest.strip_suffix(')') {
        Some(rest) => rest.rsplit_once('(')?.1,
        None => rest,
    };
    location(place)
}

pub(super) fn is_project_path(path: &str) -> bool {
    !path.contains("node_modules") && !path.starts_with("node:") && !path.starts_with("internal/")
}

/// The first frame of `body`, as `frame` reads one, in the code under test.
pub(super) fn project_frame(body: &[&str], frame: fn(&str) -> Option<(String, u32)>) -> Option<(String, u32)> {
    body.iter()
        .filter_map(|line| frame(line))
        .find(|(path, _)| is_project_path(path))
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
                "math › adds wrong",
                "src/sum.test.js",
                9,
                "expect(received).toBe(expected) // Object.is equality\nExpected: 5\nReceived: 4",
            ),
            failure(
                "math › throws",
                "src/sum.test.js",
                14,
                "TypeError: Cannot read properties of undefined (reading 'x')",
            ),
            failure(
                "deep equality fails",
                "src/util.test.js",
                6,
                "expect(received).toEqual(expected) // deep equality\n- Expected  - 1\n+ Received  + 1\n  Object {\n    \
                 \"a\": 1,\n    \"b\": Array [",
            ),
            failure(
                "src/broken.test.js",
                "src/broken.test.js",
                1,
                "Cannot find module './nope' from 'src/broken.test.js'",
            ),
        ]
    }

    #[test]
    fn the_default_reporter_is_read() {
        let report = parse(include_str!("samples/jest.txt"), None).unwrap();
        assert_complete(&report, Runner::Jest, (2, 3, 2), &expected());
    }

    #[test]
    fn verbose_and_coloured_output_is_read() {
        let report = parse(include_str!("samples/jest_verbose.txt"), None).unwrap();
        assert_eq!((report.passed, report.failed, report.skipped), (1, 2, 2));
        assert_eq!(report.failures, expected()[..2]);
        let report = parse(include_str!("samples/jest_color.txt"), None).unwrap();
        assert_eq!((report.passed, report.failed, report.skipped), (1, 1, 0));
        assert_eq!(report.failures, expected()[2..3]);
    }

    #[test]
    fn cut_output_is_counted_from_the_tree() {
        let full = include_str!("samples/jest_verbose.txt");
        let cut = &full[..full.find("Test Suites:").unwrap()];
        let report = parse(cut, Some(Runner::Jest)).unwrap();
        assert!(!report.complete);
        assert_eq!((report.passed, report.failed, report.skipped), (1, 2, 2));
        assert_eq!(report.failures, expected()[..2]);
    }
}
