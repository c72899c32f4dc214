//! Gradle's console output of its `Test` tasks (`gradle test`, `./gradlew check`, Android's
//! `testDebugUnitTest`):
//! - per test event its `testLogging` shows, `com.example.CalcTest > addsWrong FAILED` (JUnit 5:
//!   `CalcTest > addsWrong() FAILED`; nested classes and display names add ` > ` parts), also
//!   `PASSED` and `SKIPPED` when configured;
//! - under a failure, indented by four spaces, the exception: in the default `SHORT` format one line
//!   per exception, `java.lang.AssertionError at CalcTest.java:13` (the frame Gradle picks is the
//!   test class's); in the `FULL` format the message and `at …` frames;
//! - per task with failures, `6 tests completed, 3 failed, 1 skipped`, and in the build's failure
//!   `There were failing tests. See the report at: file:///…/build/reports/tests/test/index.html`.
//!
//! Tests are named as Gradle prints them, `Class > method`. A failure is placed at the test class's
//! frame of its stack trace, or else at the first frame in the test class's package. The file is
//! derived as Maven's parser derives it: the class's package path and the frame's file name, under
//! the module's test sources (`src/test/java`, …) when the report path names the module and the task
//! is a unit-test task; otherwise the frame's bare file name.

use std::collections::HashSet;

use super::maven::{frame, test_root};
use super::text::{self, Lines, indent};
use super::{Failure, Runner, TestReport};

pub(super) fn is_marker(line: &str) -> bool {
    event(line).is_some() || summary_line(line).is_some()
}

/// What Gradle says of one test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Failed,
    Passed,
    Skipped,
}

/// `com.example.CalcTest > addsWrong FAILED` → the test (`com.example.CalcTest > addsWrong`), its
/// class and its outcome. The class is a Java name (no spaces); Gradle's own task lines
/// (`> Task :test FAILED`, `:test FAILED`) are not test events.
fn event(line: &str) -> Option<(&str, &str, Outcome)> {
    let line = line.trim_end();
    let (name, outcome) = [
        (" FAILED", Outcome::Failed),
        (" PASSED", Outcome::Passed),
        (" SKIPPED", Outcome::Skipped),
    ]
    .iter()
    .find_map(|(word, outcome)| Some((line.strip_suffix(word)?, *outcome)))?;
    let (class, _) = name.split_once(" > ")?;
    let is_class = !class.is_empty()
        && class
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '.' | '_' | '$'))
        && class.chars().next().is_some_and(char::is_alphabetic);
    is_class.then_some((name, class, outcome))
}

/// `6 tests completed, 3 failed, 1 skipped` (`1 test completed, 1 failed`) → passed, failed,
/// skipped.
fn summary_line(line: &str) -> Option<(u64, u64, u64)> {
    let items = text::counts(line.trim(), ", ")?;
    let (&(completed, first), rest) = items.split_first()?;
    if !matches!(first, "tests completed" | "test completed") {
        return None;
    }
    let (mut failed, mut skipped) = (0, 0);
    for (number, word) in rest {
        match *word {
            "failed" => failed += number,
            "skipped" => skipped += number,
            _ => return None,
        }
    }
    Some((completed.saturating_sub(failed + skipped), failed, skipped))
}

/// `> There were failing tests. See the report at: file:///w/core/build/reports/tests/test/index.html`
/// → the module's directory (`/w/core`) and the task (`test`).
fn report_dir(line: &str) -> Option<(&str, &str)> {
    let (_, url) = line.split_once("There were failing tests. See the report at: ")?;
    let path = url.trim().strip_prefix("file://")?;
    let path = path.strip_suffix("/index.html")?;
    let (module, task) = path.rsplit_once("/build/reports/tests/")?;
    (!module.is_empty() && !task.contains('/')).then_some((module, task))
}

/// Whether a task runs the unit tests under `src/test`: `test`, Android's `testDebugUnitTest`.
fn unit_test_task(task: &str) -> bool {
    task == "test" || (task.starts_with("test") && task.ends_with("UnitTest"))
}

/// The package of a fully qualified class, when it has one: `com.example` of `com.example.CalcTest`.
fn package(class: &str) -> Option<&str> {
    class.rsplit_once('.').map(|(package, _)| package)
}

/// A failure's indented lines: the exception(s), in the short or the full format.
fn block(name: &str, class: &str, body: &[&str]) -> Failure {
    let mut failure = Failure::named(name);
    let simple = class.rsplit('.').next().unwrap_or(class);
    let in_class = |frame_class: &str| {
        let frame_simple = frame_class.rsplit('.').next().unwrap_or(frame_class);
        frame_class == class
            || frame_simple == simple
            || frame_simple
                .strip_prefix(simple)
                .is_some_and(|inner| inner.starts_with('$'))
    };
    // The full format: frames below the message.
    let frames: Vec<_> = body.iter().filter_map(|l| frame(l)).collect();
    let found = frames.iter().find(|f| in_class(f.class)).or_else(|| {
        let package = package(class)?;
        frames
            .iter()
            .find(|f| f.class.strip_prefix(package).is_some_and(|r| r.starts_with('.')))
    });
    let mut message = Vec::new();
    let mut short_place = None;
    for line in body.iter().take_while(|l| frame(l).is_none()) {
        let line = line.trim();
        // The short format: `java.lang.AssertionError at CalcTest.java:13`.
        match short(line) {
            Some((exception, place)) => {
                short_place.get_or_insert(place);
                message.push(exception);
            }
            None => message.push(line),
        }
    }
    failure.message = text::message(message);
    match found {
        Some(f) => failure.locate((source_path(f.class, f.file), f.line)),
        None => {
            // Gradle picks the test class's frame: the file is the class's.
            if let Some((file, line)) = short_place {
                failure.locate((source_path(class, file), line));
            }
        }
    }
    failure
}

/// `java.lang.AssertionError at CalcTest.java:13`, `Caused by: java.net.ConnectException at
/// HelloTest.groovy:11` → the exception and where.
fn short(line: &str) -> Option<(&str, (&str, u32))> {
    let (exception, place) = line.rsplit_once(" at ")?;
    let (file, number) = place.rsplit_once(':')?;
    let number = number.parse().ok()?;
    let is_file = !file.is_empty() && !file.contains(char::is_whitespace) && file.contains('.');
    (is_file && !exception.trim().is_empty()).then_some((exception, (file, number)))
}

/// `com/example/CalcTest.java` for `com.example.CalcTest$Inner` in `CalcTest.java`.
fn source_path(class: &str, file: &str) -> String {
    match package(class) {
        Some(package) => format!("{}/{file}", package.replace('.', "/")),
        None => file.to_owned(),
    }
}

/// A failure's path placed in its module when the module is known: `<dir>/src/test/java/com/x/T.java`.
fn in_module(path: &str, dir: Option<&str>) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    match (dir, test_root(file)) {
        (Some(dir), Some(root)) if path.contains('/') => format!("{dir}/{root}/{path}"),
        _ => file.to_owned(),
    }
}

pub(super) fn parse(text: &str) -> Option<TestReport> {
    let mut lines = Lines::new(text);
    let mut report = TestReport::new(Runner::Gradle);
    let mut counted = TestReport::new(Runner::Gradle);
    let mut summary: Option<(u64, u64, u64)> = None;
    let mut passed_later: HashSet<String> = HashSet::new();
    let mut dirs: Vec<&str> = Vec::new();
    let mut found = false;
    while let Some(line) = lines.next() {
        if let Some((name, class, outcome)) = event(line) {
            found = true;
            match outcome {
                Outcome::Failed => {
                    counted.failed += 1;
                    // The exception, indented; blank lines may come inside a message.
                    let body = lines.until(|l| !l.trim().is_empty() && indent(l) == 0);
                    let failure = block(name, class, body);
                    // A test re-run (the test-retry plugin, `--rerun`) is reported once.
                    if !report.failures.iter().any(|f| f.name == failure.name) {
                        report.failures.push(failure);
                    }
                    passed_later.remove(name);
                }
                Outcome::Passed => {
                    counted.passed += 1;
                    passed_later.insert(name.to_owned());
                }
                Outcome::Skipped => counted.skipped += 1,
            }
        } else if let Some((passed, failed, skipped)) = summary_line(line) {
            found = true;
            let total = summary.get_or_insert((0, 0, 0));
            total.0 += passed;
            total.1 += failed;
            total.2 += skipped;
        } else if let Some((dir, task)) = report_dir(line)
            && unit_test_task(task)
        {
            dirs.push(dir);
        }
    }
    if !found {
        return None;
    }
    // A test that failed and then passed on a re-run is flaky, not failing.
    report.failures.retain(|f| !passed_later.contains(&f.name));
    // Failures are placed in their module only when one module's tests failed: Gradle's output
    // does not say which task printed which failure when tasks run in parallel.
    let dir = match dirs.as_slice() {
        [dir] => Some(*dir),
        _ => None,
    };
    for failure in &mut report.failures {
        if let Some(file) = failure.file.take() {
            failure.file = Some(in_module(&file, dir));
        }
    }
    let failing = report.failures.len() as u64;
    match summary {
        // The summary lines are the runner's own counts, but a task whose tests all passed prints
        // none: complete only when they account for every failure seen.
        Some(counts) if counts.1 >= failing => {
            (report.passed, report.failed, report.skipped) = counts;
            report.complete = true;
        }
        _ => {
            (report.passed, report.skipped) = (counted.passed, counted.skipped);
            report.failed = counted.failed.max(failing).max(summary.map_or(0, |s| s.1));
        }
    }
    Some(report)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::testparse::parse;
    use crate::testparse::test_support::{assert_complete, failure};

    #[test]
    fn the_default_short_format_is_read() {
        let report = parse(include_str!("samples/gradle_default.txt"), None).unwrap();
        let dir = "/tmp/gcalc/src/test/java/com/example";
        assert_complete(
            &report,
            Runner::Gradle,
            (2, 3, 1),
            &[
                failure(
                    "com.example.CalcTest > addsWrong",
                    &format!("{dir}/CalcTest.java"),
                    13,
                    "java.lang.AssertionError",
                ),
                failure(
                    "com.example.CalcTest > divides",
                    &format!("{dir}/CalcTest.java"),
                    23,
                    "java.lang.ArithmeticException",
                ),
                failure(
                    "com.example.ShoutTest > shoutsWrong",
                    &format!("{dir}/ShoutTest.java"),
                    10,
                    "org.junit.ComparisonFailure",
                ),
            ],
        );
    }

    #[test]
    fn the_full_format_gives_messages_and_the_test_class_frame() {
        let report = parse(include_str!("samples/gradle_full.txt"), None).unwrap();
        let dir = "/tmp/gcalc/src/test/java/com/example";
        assert_complete(
            &report,
            Runner::Gradle,
            (2, 3, 1),
            &[
                failure(
                    "com.example.CalcTest > addsWrong",
                    &format!("{dir}/CalcTest.java"),
                    13,
                    "java.lang.AssertionError: two and two expected:<5> but was:<4>",
                ),
                // The exception is thrown in Calc.div; the test's own line is the one reported.
                failure(
                    "com.example.CalcTest > divides",
                    &format!("{dir}/CalcTest.java"),
                    23,
                    "java.lang.ArithmeticException: / by zero",
                ),
                failure(
                    "com.example.ShoutTest > shoutsWrong",
                    &format!("{dir}/ShoutTest.java"),
                    10,
                    "org.junit.ComparisonFailure: expected:<HI[!]> but was:<HI[]>",
                ),
            ],
        );
    }

    #[test]
    fn a_skipped_test_is_never_a_failure() {
        // The skipped test's name and reason mention a timeout and a missing secret.
        let full = include_str!("samples/gradle_full.txt");
        assert!(full.contains("skippedWithAlarmingName SKIPPED"));
        let report = parse(full, None).unwrap();
        assert!(report.failures.iter().all(|f| !f.name.contains("skipped")));
        assert_eq!(report.skipped, 1);
    }

    #[test]
    fn a_multi_project_build_sums_its_tasks_and_keeps_bare_files() {
        let report = parse(include_str!("samples/gradle_multiproject.txt"), None).unwrap();
        // Two modules' tests failed: which printed which is not said, so the files stay bare.
        assert_complete(
            &report,
            Runner::Gradle,
            (1, 2, 0),
            &[
                failure(
                    "com.shop.cart.CartTest > totalsPrices",
                    "CartTest.java",
                    13,
                    "java.lang.AssertionError",
                ),
                failure(
                    "com.shop.pricing.RatesTest > classMethod",
                    "RatesTest.java",
                    13,
                    "java.lang.IllegalStateException",
                ),
            ],
        );
    }

    #[test]
    fn output_cut_before_the_summary_is_counted_from_the_events() {
        let full = include_str!("samples/gradle_full.txt");
        let cut = &full[..full.find("6 tests completed").unwrap()];
        let report = parse(cut, None).unwrap();
        assert!(!report.complete);
        assert_eq!((report.passed, report.failed, report.skipped), (2, 3, 1));
        assert_eq!(report.failures.len(), 3);
        // Nothing names the module yet: the file stays bare.
        assert_eq!(report.failures[0].file.as_deref(), Some("CalcTest.java"));
    }

    #[test]
    fn a_test_that_passes_on_a_re_run_is_flaky_and_a_repeated_failure_is_one() {
        let output = "\
com.example.CalcTest > flaky FAILED
    java.lang.AssertionError at CalcTest.java:30

com.example.CalcTest > flaky PASSED

com.example.CalcTest > broken FAILED
    java.lang.AssertionError at CalcTest.java:40

com.example.CalcTest > broken FAILED
    java.lang.AssertionError at CalcTest.java:40
";
        let report = parse(output, None).unwrap();
        assert_eq!(report.runner, Runner::Gradle);
        assert_eq!(report.failures.len(), 1);
        assert_eq!(report.failures[0].name, "com.example.CalcTest > broken");
        assert_eq!(report.failures[0].file.as_deref(), Some("CalcTest.java"));
    }

    #[test]
    fn lines_are_recognised() {
        assert_eq!(
            event("com.example.CalcTest > addsWrong FAILED"),
            Some((
                "com.example.CalcTest > addsWrong",
                "com.example.CalcTest",
                Outcome::Failed
            ))
        );
        assert_eq!(
            event("CcdRouteTest > testRoute() FAILED").map(|e| e.0),
            Some("CcdRouteTest > testRoute()")
        );
        assert_eq!(
            event("a.PactTest > Our Little Consumer - a request FAILED").map(|e| e.0),
            Some("a.PactTest > Our Little Consumer - a request")
        );
        assert_eq!(event("> Task :test FAILED"), None);
        assert_eq!(event(":app:testDebugUnitTest FAILED"), None);
        assert_eq!(event("Run 1 > 2 FAILED"), None);
        assert_eq!(summary_line("6 tests completed, 3 failed, 1 skipped"), Some((2, 3, 1)));
        assert_eq!(summary_line("1 test completed, 1 failed"), Some((0, 1, 0)));
        assert_eq!(summary_line("4 actionable tasks: 4 executed"), None);
        assert_eq!(
            report_dir(
                "> There were failing tests. See the report at: file:///w/a/build/reports/tests/test/index.html"
            ),
            Some(("/w/a", "test"))
        );
        assert_eq!(
            short("java.lang.AssertionError at CalcTest.java:13"),
            Some(("java.lang.AssertionError", ("CalcTest.java", 13)))
        );
        assert_eq!(short("expected: <1> but was: <2> at index 3"), None);
    }
}
