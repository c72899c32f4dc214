//! Vitest's default reporter: `✓`/`×`/`↓` lines per test (with `→ message` under failures), a
//! ` FAIL  file > describe > test` block per failure (the error, `❯ file:line:col` frames, a code
//! frame) between `⎯⎯⎯` rules, and ` Tests  1 failed | 2 passed | 1 skipped (4)`. Vitest writes
//! the summary to stdout and the failures to stderr, so either may come first.

use super::jest::project_frame;
use super::text::{self, Lines, counts, location};
use super::{Failure, Runner, TestReport};

pub(super) fn is_marker(line: &str) -> bool {
    let trimmed = line.trim_start();
    trimmed.starts_with("Test Files  ")
        || trimmed.starts_with("RUN  v")
        || summary_line(line).is_some()
        || fail_header(line).is_some()
}

/// `      Tests  2 failed | 3 passed | 1 skipped | 1 todo (7)`
fn summary_line(line: &str) -> Option<(u64, u64, u64)> {
    let rest = line.trim_start().strip_prefix("Tests  ")?;
    let (list, total) = rest.trim().strip_suffix(')')?.rsplit_once(" (")?;
    total.parse::<u64>().ok()?;
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for (number, word) in counts(list.trim(), " | ")? {
        match word {
            "passed" => passed += number,
            "failed" => failed += number,
            "skipped" | "todo" => skipped += number,
            _ => {}
        }
    }
    Some((passed, failed, skipped))
}

/// ` FAIL  src/x.test.ts > suite > test`, ` FAIL  |project| src/x.test.ts > test`, or a suite
/// that failed to load: ` FAIL  src/x.test.ts [ src/x.test.ts ]`. → (file, name).
fn fail_header(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim_start().strip_prefix("FAIL  ")?.trim();
    let rest = match rest.strip_prefix('|') {
        Some(labelled) => labelled.split_once("| ")?.1.trim_start(),
        None => rest,
    };
    match rest.split_once(" > ") {
        Some((file, name)) => Some((file, name)),
        // Not jest's ` FAIL  src/x.test.js (5.1 s)`.
        None if rest.ends_with(" ]") => {
            let file = rest.split_once(" [").map_or(rest, |(file, _)| file);
            Some((file, file))
        }
        None => None,
    }
}

/// `⎯⎯⎯⎯ Failed Tests 2 ⎯⎯⎯⎯` and `⎯⎯⎯⎯⎯[1/2]⎯`.
fn is_rule(line: &str) -> bool {
    line.trim_start().starts_with("⎯⎯")
}

fn ends_block(line: &str) -> bool {
    is_rule(line)
        || fail_header(line).is_some()
        || summary_line(line).is_some()
        || line.trim_start().starts_with("Test Files  ")
}

/// `    21|   })`, `       |    ^`
fn is_code_frame(line: &str) -> bool {
    let trimmed = line.trim_start();
    trimmed
        .split_once('|')
        .is_some_and(|(number, _)| number.is_empty() || number.trim().parse::<u32>().is_ok())
}

/// ` ❯ src/x.test.ts:9:23` or ` ❯ Object.getElementError node_modules/…/config.js:37:19`.
fn frame(line: &str) -> Option<(String, u32)> {
    let rest = line.trim_start().strip_prefix("❯ ")?;
    location(rest.split_whitespace().last()?)
}

pub(super) fn parse(text: &str) -> Option<TestReport> {
    let mut lines = Lines::new(text);
    let mut report = TestReport::new(Runner::Vitest);
    let mut counted = TestReport::new(Runner::Vitest);
    // `× name` lines and their `→ message`, for output cut before the failure blocks.
    let mut listed: Vec<Failure> = Vec::new();
    let mut summary = None;
    while let Some(line) = lines.next() {
        if let Some(counts) = summary_line(line) {
            summary = Some(counts);
        } else if let Some((file, name)) = fail_header(line) {
            report.failures.push(block(file, name, lines.until(ends_block)));
        } else if let Some(name) = test_line(line, "× ") {
            counted.failed += 1;
            listed.push(Failure::named(name));
        } else if let Some(message) = line.trim_start().strip_prefix("→ ") {
            if let Some(failure) = listed.last_mut().filter(|f| f.message.is_empty()) {
                failure.message = text::message([message]);
            }
        } else if test_line(line, "✓ ").is_some() {
            counted.passed += 1;
        } else if test_line(line, "↓ ").is_some() {
            counted.skipped += 1;
        }
    }
    if summary.is_none() && report.failures.is_empty() && counted.total() == 0 {
        return None;
    }
    if report.failures.is_empty() {
        report.failures = listed;
    }
    let failing = report.failed_tests();
    report.settle(summary, &counted, failing);
    Some(report)
}

/// `   × math > adds wrong 5ms` → `math > adds wrong`; not the per-file lines
/// (` ✓ src/x.test.ts (2 tests) 3ms`).
fn test_line<'a>(line: &'a str, mark: &str) -> Option<&'a str> {
    let rest = line.trim_start().strip_prefix(mark)?.trim_end();
    if rest
        .split_once(" (")
        .is_some_and(|(_, tail)| tail.starts_with(|c: char| c.is_ascii_digit()) && tail.contains(" test"))
    {
        return None;
    }
    // The duration, when there is one.
    let name = match rest.rsplit_once(' ') {
        Some((name, duration)) if duration.ends_with("ms") && duration[..duration.len() - 2].parse::<f64>().is_ok() => {
            name
        }
        _ => rest,
    };
    Some(name)
}

fn block(file: &str, name: &str, body: &[&str]) -> Failure {
    let mut failure = Failure::named(name);
    let message = body
        .iter()
        .copied()
        .skip_while(|line| line.trim().is_empty())
        .take_while(|line| frame(line).is_none() && !is_code_frame(line));
    failure.message = text::message(message);
    match project_frame(body, frame) {
        Some(place) => failure.locate(place),
        None => failure.file = Some(file.to_owned()),
    }
    failure
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::testparse::parse;
    use crate::testparse::test_support::{assert_complete, failure, unplaced};

    #[test]
    fn failures_after_the_summary_are_read() {
        let report = parse(include_str!("samples/vitest.txt"), None).unwrap();
        assert_complete(
            &report,
            Runner::Vitest,
            (3, 2, 2),
            &[
                failure(
                    "src/broken.test.ts",
                    "src/broken.test.ts",
                    1,
                    "Error: Cannot find module './nope' imported from '/home/dev/proj/src/broken.test.ts'",
                ),
                failure(
                    "math > adds wrong",
                    "src/sum.test.ts",
                    9,
                    "AssertionError: expected 4 to be 5 // Object.is equality\n- Expected\n+ Received\n- 5\n+ 4",
                ),
                failure(
                    "math > throws",
                    "src/sum.test.ts",
                    14,
                    "TypeError: Cannot read properties of undefined (reading 'x')",
                ),
            ],
        );
    }

    #[test]
    fn workspace_labels_and_library_frames_are_skipped() {
        let report = parse(include_str!("samples/vitest_workspace.txt"), None).unwrap();
        assert_eq!((report.passed, report.failed, report.skipped), (4, 1, 0));
        assert_eq!(report.failures.len(), 1);
        let failure = &report.failures[0];
        assert_eq!(failure.name, "Search > shows the results");
        assert_eq!(
            (failure.file.as_deref(), failure.line),
            (Some("src/pages/Search.test.tsx"), Some(22))
        );
        assert!(
            failure
                .message
                .starts_with("TestingLibraryElementError: Unable to find an element")
        );
        assert_eq!(failure.message.lines().count(), 5);
    }

    #[test]
    fn cut_output_is_read_from_the_test_lines() {
        let full = include_str!("samples/vitest.txt");
        let cut = &full[..full.find(" Test Files").unwrap()];
        let report = parse(cut, None).unwrap();
        assert!(!report.complete);
        assert_eq!((report.passed, report.failed, report.skipped), (1, 2, 2));
        assert_eq!(
            report.failures,
            vec![
                unplaced("math > adds wrong", "expected 4 to be 5 // Object.is equality"),
                unplaced("math > throws", "Cannot read properties of undefined (reading 'x')"),
            ]
        );
    }
}
