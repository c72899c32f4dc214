//! JUnit XML reports: `<testsuites>` / `<testsuite>` / `<testcase classname name [file line]>`
//! with a `<failure>`, `<error>` or `<skipped>` child. Producers fill them differently, so the
//! failure message and location are read from the body in the producer's own format when it has
//! one: Go test output (gotestsum), pytest's `E` lines, Java and JavaScript stack traces.

use roxmltree::{Document, Node};

use super::gotest::Subtests;
use super::jest::{is_project_path, stack_frame};
use super::text;
use super::{Failure, Runner, TestReport, gotest, pytest};

/// Why a document is not a JUnit XML report.
#[derive(Debug, thiserror::Error)]
pub enum JunitError {
    #[error("not a JUnit XML report: {0}")]
    Xml(#[source] roxmltree::Error),
    #[error("not a JUnit XML report: the root element is <{0}>, not <testsuites>")]
    Root(String),
}

pub(super) fn parse(xml: &str) -> Result<TestReport, JunitError> {
    let doc = Document::parse(xml).map_err(JunitError::Xml)?;
    let root = doc.root_element();
    let root_name = root.tag_name().name();
    if root_name != "testsuites" && root_name != "testsuite" {
        return Err(JunitError::Root(root_name.to_owned()));
    }
    let cases: Vec<Case<'_, '_>> = root
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .map(Case::new)
        .collect();
    let mut report = TestReport::new(Runner::JUnitXml);
    report.complete = true;
    if cases.is_empty() {
        count_suites(root, &mut report);
        return Ok(report);
    }
    let subtests = Subtests::new(
        cases
            .iter()
            .map(|c| (c.classname, c.name, c.outcome == Outcome::Failed)),
    );
    for case in &cases {
        let counts = subtests.counts(case.classname, case.name, case.outcome == Outcome::Failed);
        match counts.then_some(case.outcome) {
            Some(Outcome::Passed) => report.passed += 1,
            Some(Outcome::Skipped) => report.skipped += 1,
            Some(Outcome::Failed) => {
                report.failed += 1;
                report.failures.push(case.failure());
            }
            None => {}
        }
    }
    Ok(report)
}

/// A report inside other output (`cat report.xml`, a CI log).
pub(super) fn find_and_parse(text: &str) -> Option<TestReport> {
    let start = text
        .find("<?xml")
        .or_else(|| text.find("<testsuites"))
        .or_else(|| text.find("<testsuite"))?;
    let rest = &text[start..];
    let end = ["</testsuites>", "</testsuite>"]
        .iter()
        .find_map(|tag| rest.rfind(tag).map(|i| i + tag.len()))?;
    parse(&rest[..end]).ok()
}

/// Counts from the suites' attributes, for a report without test cases.
fn count_suites(root: Node<'_, '_>, report: &mut TestReport) {
    let suites: Vec<Node<'_, '_>> = if root.has_tag_name("testsuite") {
        vec![root]
    } else {
        root.children().filter(|n| n.has_tag_name("testsuite")).collect()
    };
    for suite in suites {
        let number = |name: &str| suite.attribute(name).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        let failed = number("failures") + number("errors");
        let skipped = number("skipped") + number("disabled");
        report.failed += failed;
        report.skipped += skipped;
        report.passed += number("tests").saturating_sub(failed + skipped);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Passed,
    Failed,
    Skipped,
}

struct Case<'a, 'input> {
    node: Node<'a, 'input>,
    classname: &'a str,
    name: &'a str,
    outcome: Outcome,
}

impl<'a, 'input> Case<'a, 'input> {
    fn new(node: Node<'a, 'input>) -> Self {
        let children: Vec<&str> = node
            .children()
            .filter(Node::is_element)
            .map(|n| n.tag_name().name())
            .collect();
        let outcome = if children.iter().any(|c| *c == "failure" || *c == "error") {
            Outcome::Failed
        } else if children.contains(&"skipped") {
            Outcome::Skipped
        } else {
            Outcome::Passed
        };
        Case {
            node,
            classname: node.attribute("classname").unwrap_or_default(),
            name: node.attribute("name").unwrap_or_default(),
            outcome,
        }
    }

    fn full_name(&self) -> String {
        if self.classname.is_empty() || self.name.starts_with(self.classname) {
            self.name.to_owned()
        } else {
            format!("{}.{}", self.classname, self.name)
        }
    }

    fn failure(&self) -> Failure {
        let name = self.full_name();
        let element = self
            .node
            .children()
            .find(|n| n.has_tag_name("failure") || n.has_tag_name("error"));
        let body: String = element
            .map(|e| e.children().filter_map(|c| c.text()).collect())
            .unwrap_or_default();
        let attribute = |name: &str| element.and_then(|e| e.attribute(name)).unwrap_or_default();
        let lines: Vec<&str> = body.lines().collect();

        let mut failure = if body.contains("--- FAIL:") || body.contains("=== RUN") {
            let output: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
            gotest::failure(&name, &output)
        } else if lines.iter().any(|l| l.starts_with("E ")) {
            pytest::from_section(&name, &lines)
        } else {
            let mut failure = Failure::named(name.clone());
            failure.message = text::message(
                lines
                    .iter()
                    .copied()
                    .take_while(|l| stack_frame(l).is_none() && !l.trim().is_empty()),
            );
            if let Some(place) = self.frame(&lines) {
                failure.locate(place);
            }
            failure
        };
        failure.name = name;
        if failure.message.is_empty() {
            let message = attribute("message");
            failure.message = text::message([if message.is_empty() { attribute("type") } else { message }]);
        }
        if failure.file.is_none() {
            failure.file = self.node.attribute("file").map(str::to_owned);
            failure.line = self.node.attribute("line").and_then(|l| l.parse().ok());
        }
        failure
    }

    /// The frame of a stack trace in the code under test: a Java frame of the test class's
    /// package (`at com.example.Calc.div(Calc.java:9)`), a JavaScript frame outside
    /// `node_modules`, or the last frame of a Python traceback.
    fn frame(&self, lines: &[&str]) -> Option<(String, u32)> {
        let package = self
            .classname
            .rsplit_once('.')
            .map_or(self.classname, |(package, _)| package);
        let java = lines.iter().find_map(|line| {
            let method = line.trim_start().strip_prefix("at ")?;
            (!package.is_empty() && method.starts_with(package))
                .then(|| stack_frame(line))
                .flatten()
        });
        java.or_else(|| {
            lines
                .iter()
                .filter_map(|line| stack_frame(line))
                .find(|(path, _)| path.contains('/') && is_project_path(path))
        })
        .or_else(|| lines.iter().rev().find_map(|line| pytest::crash_location(line)))
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::testparse::test_support::{assert_complete, failure};
    use crate::testparse::{parse as parse_output, parse_junit_xml};

    #[test]
    fn pytest_reports_are_read() {
        let report = parse_junit_xml(include_str!("samples/pytest_junit.xml")).unwrap();
        assert_complete(
            &report,
            Runner::JUnitXml,
            (2, 5, 2),
            &[
                failure(
                    "tests.test_calc.test_add_wrong",
                    "tests/test_calc.py",
                    11,
                    "assert 4 == 5\n+  where 4 = add(2, 2)",
                ),
                failure(
                    "tests.test_calc.test_div_zero",
                    "pkg/calc.py",
                    6,
                    "ZeroDivisionError: division by zero",
                ),
                failure(
                    "tests.test_calc.test_param[2-3-6]",
                    "tests/test_calc.py",
                    25,
                    "assert 5 == 6\n+  where 5 = add(2, 3)",
                ),
                failure(
                    "tests.test_calc.TestGroup.test_in_class",
                    "tests/test_calc.py",
                    32,
                    "AssertionError: a should be two\nassert 1 == 2",
                ),
                failure(
                    "tests.test_calc.test_error",
                    "tests/test_calc.py",
                    42,
                    "RuntimeError: fixture blew up",
                ),
            ],
        );
    }

    #[test]
    fn gotestsum_reports_count_subtests_once() {
        let report = parse_junit_xml(include_str!("samples/gotestsum_junit.xml")).unwrap();
        assert_eq!((report.passed, report.failed, report.skipped), (3, 3, 1));
        assert_eq!(
            report.failures,
            vec![
                failure(
                    "example.com/goproj/calc.TestAddWrong",
                    "calc_test.go",
                    17,
                    "Add(2, 2) = 4, want 5"
                ),
                failure(
                    "example.com/goproj/calc.TestTable/two",
                    "calc_test.go",
                    34,
                    "got 5\nwant 6"
                ),
                failure(
                    "example.com/goproj/calc.TestPanics",
                    "/tmp/tp/goproj/calc/calc.go",
                    5,
                    "panic: runtime error: integer divide by zero"
                ),
            ]
        );
    }

    #[test]
    fn surefire_reports_point_at_the_code_under_test() {
        let report = parse_junit_xml(include_str!("samples/surefire_junit.xml")).unwrap();
        assert_eq!((report.passed, report.failed, report.skipped), (1, 2, 1));
        assert_eq!(
            report.failures,
            vec![
                failure(
                    "com.example.CalcTest.addsWrong",
                    "CalcTest.java",
                    17,
                    "org.opentest4j.AssertionFailedError: expected: <5> but was: <4>"
                ),
                failure(
                    "com.example.CalcTest.divides",
                    "Calc.java",
                    9,
                    "java.lang.ArithmeticException: / by zero"
                ),
            ]
        );
    }

    #[test]
    fn jest_junit_reports_are_read() {
        let report = parse_junit_xml(include_str!("samples/jest_junit.xml")).unwrap();
        assert_eq!((report.passed, report.failed, report.skipped), (2, 2, 1));
        assert_eq!(
            report.failures,
            vec![
                failure(
                    "math adds wrong",
                    "/home/dev/proj/src/sum.test.js",
                    9,
                    "Error: expect(received).toBe(expected) // Object.is equality"
                ),
                failure(
                    "math throws",
                    "/home/dev/proj/src/sum.test.js",
                    14,
                    "TypeError: Cannot read properties of undefined (reading 'x')"
                ),
            ]
        );
    }

    #[test]
    fn reports_inside_other_output_are_found() {
        let output = format!(
            "$ cat report.xml\n{}\n$ echo done\n",
            include_str!("samples/surefire_junit.xml")
        );
        let report = parse_output(&output, None).unwrap();
        assert_eq!(report.runner, Runner::JUnitXml);
        assert_eq!(report.failed, 2);
    }

    #[test]
    fn suites_without_cases_are_counted_from_attributes() {
        let xml = r#"<testsuites><testsuite name="a" tests="5" failures="1" errors="1" skipped="1"/></testsuites>"#;
        let report = parse_junit_xml(xml).unwrap();
        assert_eq!((report.passed, report.failed, report.skipped), (2, 2, 1));
    }

    #[test]
    fn other_documents_are_refused() {
        assert!(
            parse_junit_xml("<html/>")
                .unwrap_err()
                .to_string()
                .contains("root element is <html>")
        );
        assert!(parse_junit_xml("not xml").is_err());
    }
}
