//! Vitest's default reporter: per test file a tree of `✓`/`×`/`↓` lines (suites as `❯ name (N)`
//! above their tests, `→ message` under failures; the verbose reporter names each test
//! `file > suite > test` instead), a ` FAIL  file > describe > test` block per failure (the error,
//! `❯ file:line:col` frames, a code frame) between `⎯⎯⎯` rules, and
//! ` Tests  1 failed | 2 passed | 1 skipped (4)`. Vitest writes the summary to stdout and the
//! failures to stderr, so either may come first.
//!
//! Failures come from the blocks and from the tree's `×` lines both: a cut log may hold only one
//! of them. A skipped (`↓`) or passing (`✓`) test is never a failure, whatever its name says.

use super::jest::project_frame;
use super::text::{self, Lines, counts, indent, location};
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
    // The file and name of each failure block's header, to match the tree's `×` lines against.
    let mut headers: Vec<(String, String)> = Vec::new();
    let mut summary = None;
    while let Some(line) = lines.next() {
        if let Some(counts) = summary_line(line) {
            summary = Some(counts);
        } else if let Some((file, name)) = fail_header(line) {
            let failure = block(file, name, lines.until(ends_block));
            // A test reported twice (a workspace running a file in two projects) is one failure.
            if !headers.iter().any(|(f, n)| f == file && n == name) {
                headers.push((file.to_owned(), name.to_owned()));
                report.failures.push(failure);
            }
        }
    }
    let (counted, listed) = tree(lines.all());
    if summary.is_none() && report.failures.is_empty() && counted.total() == 0 {
        return None;
    }
    // The tree's failures whose block is missing (cut output, a reporter that prints none).
    for failure in listed {
        let has_block = headers
            .iter()
            .any(|(file, name)| *name == failure.name && failure.file.as_deref().is_none_or(|f| f == file));
        if !has_block {
            report.failures.push(failure);
        }
    }
    let failing = report.failed_tests();
    report.settle(summary, &counted, failing);
    Some(report)
}

/// A line of the tree vitest prints per test file: the mark (`✓`, `×`, `✗`, `↓`, `❯`), the text
/// after it and the line's indentation.
fn tree_line(line: &str) -> Option<(char, &str, usize)> {
    let trimmed = line.trim_start();
    let mut chars = trimmed.chars();
    let mark = chars.next().filter(|c| matches!(c, '✓' | '×' | '✗' | '↓' | '❯'))?;
    let rest = chars.as_str().strip_prefix(' ')?.trim_end();
    // A workspace project's label: `❯ |web| src/x.test.ts (2 tests | 1 failed)`.
    let rest = match rest.strip_prefix('|').and_then(|r| r.split_once("| ")) {
        Some((_, after)) => after,
        None => rest,
    };
    (!rest.is_empty()).then_some((mark, rest, indent(line)))
}

/// `src/x.test.ts (5 tests | 2 failed) 9ms` or `src/x.test.ts (0 test)` → the file.
fn file_entry(text: &str) -> Option<&str> {
    let (file, tail) = text.split_once(" (")?;
    (tail.starts_with(|c: char| c.is_ascii_digit()) && tail.contains(" test")).then_some(file)
}

/// Whether the first part of a verbose name (`src/x.test.ts > suite > test`) is a test file.
fn is_test_file(part: &str) -> bool {
    !part.contains(' ')
        && [
            ".ts", ".tsx", ".js", ".jsx", ".mts", ".cts", ".mjs", ".cjs", ".vue", ".svelte",
        ]
        .iter()
        .any(|ext| part.ends_with(ext))
}

/// A test's title without its duration (`adds wrong 5ms` → `adds wrong`) or a suite's name without
/// its count (`math (3)` → `math`).
fn title(text: &str) -> &str {
    let text = match text.rsplit_once(' ') {
        Some((head, duration))
            if duration
                .strip_suffix("ms")
                .or_else(|| duration.strip_suffix('s'))
                .is_some_and(|n| n.parse::<f64>().is_ok()) =>
        {
            head
        }
        _ => text,
    };
    match text.rsplit_once(" (") {
        Some((head, count)) if count.strip_suffix(')').is_some_and(|n| n.parse::<u64>().is_ok()) => head,
        _ => text,
    }
}

/// The tests the tree lists: `✓` passed, `↓` skipped (never a failure, whatever its name says),
/// `×`/`✗` failed, each named by its suites (`math > adds wrong`) and placed in its file; the
/// `→ message` under a failure is its message. A line is a suite when the lines below it are
/// deeper.
fn tree(lines: &[&str]) -> (TestReport, Vec<Failure>) {
    let mut counted = TestReport::new(Runner::Vitest);
    let mut listed: Vec<Failure> = Vec::new();
    // The file and the suites above the current line, with their indentation.
    let mut file: Option<(usize, &str)> = None;
    let mut suites: Vec<(usize, &str)> = Vec::new();
    let mut last_failed: Option<usize> = None;
    for (i, line) in lines.iter().enumerate() {
        if let Some(message) = line.trim_start().strip_prefix("→ ") {
            if let Some(failure) = last_failed
                .and_then(|at| listed.get_mut(at))
                .filter(|f| f.message.is_empty())
            {
                failure.message = text::message([message]);
            }
            continue;
        }
        last_failed = None;
        let Some((mark, rest, depth)) = tree_line(line) else {
            continue;
        };
        suites.retain(|(d, _)| *d < depth);
        if let Some(path) = file_entry(rest) {
            file = Some((depth, path));
            suites.clear();
            continue;
        }
        if file.is_some_and(|(d, _)| d >= depth) {
            file = None;
        }
        let deeper_below = lines[i + 1..]
            .iter()
            .find(|l| !l.trim().is_empty())
            .and_then(|l| tree_line(l))
            .is_some_and(|(_, _, d)| d > depth);
        if deeper_below {
            suites.push((depth, title(rest)));
            continue;
        }
        let mut path: Vec<&str> = suites.iter().map(|(_, s)| *s).collect();
        path.push(title(rest));
        let mut name = path.join(" > ");
        let mut place = file.map(|(_, f)| f.to_owned());
        // The verbose reporter names the file first: `src/x.test.ts > suite > test`.
        if let Some((first, after)) = name.split_once(" > ")
            && is_test_file(first)
        {
            place = Some(first.to_owned());
            name = after.to_owned();
        }
        match mark {
            '✓' => counted.passed += 1,
            '↓' => counted.skipped += 1,
            '×' | '✗' => {
                counted.failed += 1;
                let mut failure = Failure::named(name);
                failure.file = place;
                last_failed = Some(listed.len());
                listed.push(failure);
            }
            // `❯` with nothing below it: a suite or file still running when the output was cut.
            _ => {}
        }
    }
    (counted, listed)
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
        let in_file = |mut failure: Failure| {
            failure.file = Some("src/sum.test.ts".into());
            failure
        };
        assert_eq!(
            report.failures,
            vec![
                in_file(unplaced(
                    "math > adds wrong",
                    "expected 4 to be 5 // Object.is equality"
                )),
                in_file(unplaced(
                    "math > throws",
                    "Cannot read properties of undefined (reading 'x')"
                )),
            ]
        );
    }

    /// By hand, after vitest 3's default reporter on a failing file: suites as `❯ name (N)` lines
    /// above their tests, a skipped test whose name says a secret is missing and a passing one that
    /// mentions a timeout, and a failure block for only one of the two failures (the output was cut).
    const TREE: &str = "
 RUN  v3.2.4 /home/runner/work/hooks/hooks

 ❯ src/webhook.test.ts (5 tests | 2 failed | 1 skipped) 31ms
   ❯ webhook (5)
     ✓ accepts a signed delivery 3ms
     ✓ retries after a timeout 12ms
     ❯ signatures (3)
       × rejects a bad signature 4ms
         → expected 401 to be 403 // Object.is equality
       ↓ fails when the webhook secret is missing
       × rejects a replayed delivery 2ms
         → expected true to be false // Object.is equality
 ✓ src/util.test.ts (2 tests) 2ms

 Test Files  1 failed | 1 passed (2)
      Tests  2 failed | 4 passed | 1 skipped (7)

⎯⎯⎯⎯⎯⎯⎯ Failed Tests 2 ⎯⎯⎯⎯⎯⎯⎯

 FAIL  src/webhook.test.ts > webhook > signatures > rejects a bad signature
AssertionError: expected 401 to be 403 // Object.is equality
 ❯ src/webhook.test.ts:41:28
";

    #[test]
    fn the_tree_names_failures_by_their_suites_and_never_takes_a_skipped_test() {
        let report = parse(TREE, None).unwrap();
        assert_eq!(report.runner, Runner::Vitest);
        assert_eq!((report.passed, report.failed, report.skipped), (4, 2, 1));
        assert!(report.complete);
        let mut replayed = unplaced(
            "webhook > signatures > rejects a replayed delivery",
            "expected true to be false // Object.is equality",
        );
        replayed.file = Some("src/webhook.test.ts".into());
        assert_eq!(
            report.failures,
            vec![
                failure(
                    "webhook > signatures > rejects a bad signature",
                    "src/webhook.test.ts",
                    41,
                    "AssertionError: expected 401 to be 403 // Object.is equality",
                ),
                replayed,
            ]
        );
        assert!(
            report
                .failures
                .iter()
                .all(|f| !f.name.contains("secret") && !f.name.contains("timeout"))
        );
    }

    #[test]
    fn verbose_names_with_the_file_first_are_placed_in_it() {
        let output = " ✓ src/a.test.ts > parses > a header 1ms
 × src/a.test.ts > parses > a footer 3ms
   → expected 'x' to be 'y' // Object.is equality
 ↓ src/a.test.ts > parses > a missing secret
";
        // Nothing but test lines: the runner is known from the command.
        let report = parse(output, Some(Runner::Vitest)).unwrap();
        assert_eq!((report.passed, report.failed, report.skipped), (1, 1, 1));
        let mut footer = unplaced("parses > a footer", "expected 'x' to be 'y' // Object.is equality");
        footer.file = Some("src/a.test.ts".into());
        assert_eq!(report.failures, vec![footer]);
    }
}
