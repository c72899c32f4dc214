//! The Test Anything Protocol, as tape, node-tap, bats and Perl's prove print it: `ok N desc` and
//! `not ok N desc` per test (`# SKIP` and `# TODO` directives count as skipped), an indented YAML
//! block under a failure (`operator`, `expected`, `actual`, `at: … (file:line:col)`), and `# tests`
//! / `# pass` / `# fail` comments. A log may hold several TAP streams (one per test file); the
//! counts are those of the test lines, which is all a cut log is sure to have.

use super::{Failure, Runner, TestReport};

pub(super) fn is_marker(line: &str) -> bool {
    line.starts_with("TAP version ") || test_line(line).is_some_and(|t| !t.ok)
}

struct TestLine<'a> {
    ok: bool,
    description: &'a str,
    skipped: bool,
}

/// `ok 3 - adds` / `not ok 6 no errors # TODO later` → what it says.
fn test_line(line: &str) -> Option<TestLine<'_>> {
    let (ok, rest) = match line.strip_prefix("not ok ") {
        Some(rest) => (false, rest),
        None => (true, line.strip_prefix("ok ")?),
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let rest = rest[digits..].trim_start();
    let rest = rest.strip_prefix("- ").unwrap_or(rest);
    let (description, directive) = match rest.split_once(" # ") {
        Some((description, directive)) => (description, directive.to_ascii_uppercase()),
        None => (rest, String::new()),
    };
    Some(TestLine {
        ok,
        description: description.trim(),
        skipped: directive.starts_with("SKIP") || directive.starts_with("TODO"),
    })
}

pub(super) fn parse(text: &str) -> Option<TestReport> {
    let lines: Vec<&str> = text.lines().collect();
    let mut report = TestReport::new(Runner::Tap);
    let mut seen = false;
    for (i, line) in lines.iter().enumerate() {
        let Some(test) = test_line(line) else { continue };
        seen = true;
        if test.skipped {
            report.skipped += 1;
        } else if test.ok {
            report.passed += 1;
        } else {
            report.failed += 1;
            report.failures.push(failure(test.description, &lines[i + 1..]));
        }
    }
    seen.then_some(report)
}

/// The failure of `description`, with what its YAML block (the indented lines below it) says.
fn failure(description: &str, below: &[&str]) -> Failure {
    let mut failure = Failure::named(description);
    let block: Vec<&str> = below
        .iter()
        .take_while(|line| line.starts_with(' ') || line.is_empty())
        .copied()
        .collect();
    let field = |name: &str| {
        block
            .iter()
            .find_map(|line| line.trim_start().strip_prefix(name).map(str::trim))
    };
    let said: Vec<String> = ["operator:", "expected:", "actual:"]
        .iter()
        .filter_map(|name| field(name).map(|value| format!("{name} {value}")))
        .collect();
    failure.message = said.join("\n");
    if let Some(at) = field("at:")
        && let Some(place) = place(at)
    {
        failure.locate(place);
    }
    failure
}

/// `Test.<anonymous> (/w/test/x.js:57:7)` → (`/w/test/x.js`, 57).
fn place(at: &str) -> Option<(String, u32)> {
    let inner = at.rsplit_once('(').map_or(at, |(_, inner)| inner).trim_end_matches(')');
    let (head, _column) = inner.rsplit_once(':')?;
    let (file, line) = head.rsplit_once(':')?;
    Some((file.to_owned(), line.parse().ok()?))
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    /// tape's output as airbnb/javascript's Travis log shows it
    /// (tests/fixtures/ci-logs/heldout-javascript-airbnb-tape-not-ok.log), cut.
    const TAPE: &str = "TAP version 13\n# passes a good component\nok 5 no warnings\nnot ok 6 no errors\n  ---\n    \
                        operator: notOk\n    expected: false\n    actual:   1\n    at: Test.<anonymous> \
                        (/home/travis/build/airbnb/javascript/packages/eslint-config-airbnb/test/test-react-order.js:57:7)\n  \
                        ...\nok 7 skipped one # SKIP no network\n\n1..7\n# tests 7\n# pass  5\n# fail  1\n";

    #[test]
    fn failures_come_with_their_assertion_and_place() {
        let report = parse(TAPE).unwrap();
        assert_eq!((report.passed, report.failed, report.skipped), (1, 1, 1));
        assert_eq!(report.failures.len(), 1);
        let failure = &report.failures[0];
        assert_eq!(failure.name, "no errors");
        assert_eq!(failure.message, "operator: notOk\nexpected: false\nactual: 1");
        assert_eq!(
            failure.file.as_deref(),
            Some("/home/travis/build/airbnb/javascript/packages/eslint-config-airbnb/test/test-react-order.js")
        );
        assert_eq!(failure.line, Some(57));
        assert!(!report.complete);
    }

    #[test]
    fn only_a_failing_line_or_a_version_line_says_tap() {
        assert!(is_marker("not ok 6 no errors"));
        assert!(is_marker("TAP version 13"));
        assert!(!is_marker("ok 5 no warnings"));
        assert!(!is_marker("not ok"));
        assert!(!is_marker("not ok then"));
    }
}
