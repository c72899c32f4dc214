//! `go test`: the `-json` event stream (`{"Action":"fail","Package":…,"Test":…}`, one per line,
//! with the build errors of go ≤ 1.23 as plain lines between them, and `build-output` events
//! since 1.24), and the text of `go test -v` (`=== RUN`, `--- FAIL: TestX (0.00s)`) or plain
//! `go test` (only failures, their log lines after the `--- FAIL` line).
//!
//! A test with subtests counts only through its subtests: `TestTable` fails when `TestTable/two`
//! does, and reporting both would say the same thing twice.

use std::collections::{HashMap, HashSet};
use std::hash::Hash;

use serde::Deserialize;

use super::libtest::unprefixed_text;
use super::text::{self, indent, location};
use super::{Failure, Runner, TestReport};

pub(super) fn is_json_event(line: &str) -> bool {
    line.trim_start().starts_with('{') && line.contains("\"Action\":")
}

pub(super) fn is_text_marker(line: &str) -> bool {
    let line = super::libtest::unprefixed(line);
    after_marker(line, "=== RUN ").is_some()
        || result_line(line).is_some_and(|(_, outcome)| outcome != Outcome::Skipped)
        || timeout_panic(line).is_some()
        || package_line(line).is_some()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Passed,
    Failed,
    Skipped,
}

impl Outcome {
    fn from_action(action: &str) -> Option<Outcome> {
        match action {
            "pass" => Some(Outcome::Passed),
            "fail" => Some(Outcome::Failed),
            "skip" => Some(Outcome::Skipped),
            _ => None,
        }
    }
}

struct Test {
    package: usize,
    name: String,
    outcome: Option<Outcome>,
    output: Vec<String>,
}

#[derive(Default)]
struct Package {
    name: String,
    outcome: Option<Outcome>,
    build_failed: bool,
    /// Output not attributed to a test: build errors, a panic outside tests, a timeout.
    output: Vec<String>,
}

#[derive(Default)]
struct Run {
    tests: Vec<Test>,
    index: HashMap<(usize, String), usize>,
    packages: Vec<Package>,
    build: BuildOutput,
}

impl Run {
    fn test(&mut self, package: usize, name: &str) -> usize {
        let next = self.tests.len();
        let index = *self.index.entry((package, name.to_owned())).or_insert(next);
        if index == next {
            self.tests.push(Test {
                package,
                name: name.to_owned(),
                outcome: None,
                output: Vec::new(),
            });
        }
        index
    }

    fn package(&mut self, name: &str) -> usize {
        match self.packages.iter().position(|p| p.name == name) {
            Some(index) => index,
            None => {
                self.packages.push(Package {
                    name: name.to_owned(),
                    ..Package::default()
                });
                self.packages.len() - 1
            }
        }
    }
}

/// Compiler output, by the package its `# pkg [pkg.test]` header names. It reaches us on stderr
/// (or as `build-output` events), apart from the `FAIL pkg [build failed]` line on stdout.
#[derive(Default)]
struct BuildOutput {
    blocks: Vec<(String, Vec<String>)>,
    open: bool,
}

impl BuildOutput {
    /// Takes `line` when it belongs to build output; false otherwise.
    fn take(&mut self, line: &str) -> bool {
        if let Some(header) = line.strip_prefix("# ") {
            let package = header.split(' ').next().unwrap_or(header);
            self.add(package, None);
            self.open = true;
            return true;
        }
        if self.open
            && let Some((_, lines)) = self.blocks.last_mut()
        {
            lines.push(line.to_owned());
            return true;
        }
        false
    }

    fn add(&mut self, package: &str, line: Option<&str>) {
        let index = match self.blocks.iter().position(|(p, _)| p == package) {
            Some(index) => index,
            None => {
                self.blocks.push((package.to_owned(), Vec::new()));
                self.blocks.len() - 1
            }
        };
        self.blocks[index].1.extend(line.map(str::to_owned));
    }

    fn close(&mut self) {
        self.open = false;
    }

    /// Gives each package its build output; output of a package that is not in the run (a
    /// dependency that failed to build) goes to the first package whose build failed without any.
    fn attach(self, packages: &mut [Package]) {
        for (name, lines) in self.blocks {
            let target = match packages.iter().position(|p| p.name == name) {
                Some(index) => Some(index),
                None => packages.iter().position(|p| p.build_failed && p.output.is_empty()),
            };
            if let Some(package) = target.and_then(|index| packages.get_mut(index)) {
                package.output.splice(0..0, lines);
            }
        }
    }
}

pub(super) fn parse(text: &str) -> Option<TestReport> {
    if text.lines().any(is_json_event) {
        parse_json(text)
    } else {
        parse_text(text)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Event {
    action: String,
    package: Option<String>,
    test: Option<String>,
    output: Option<String>,
    import_path: Option<String>,
    failed_build: Option<String>,
}

fn parse_json(text: &str) -> Option<TestReport> {
    let mut run = Run::default();
    for line in text.lines() {
        let event = is_json_event(line)
            .then(|| serde_json::from_str::<Event>(line.trim()).ok())
            .flatten();
        let Some(event) = event else {
            // Plain lines of go ≤ 1.23: `# pkg`, compiler errors, `FAIL\tpkg [build failed]`.
            if let Some((name, outcome, build_failed)) = package_line(line) {
                run.build.close();
                let index = run.package(name);
                let package = &mut run.packages[index];
                package.outcome = package.outcome.or(Some(outcome));
                package.build_failed |= build_failed;
            } else {
                run.build.take(line);
            }
            continue;
        };
        if let Some(path) = event
            .import_path
            .as_deref()
            .filter(|_| event.action.starts_with("build-"))
        {
            let package = path.split(' ').next().unwrap_or(path);
            for line in event
                .output
                .as_deref()
                .unwrap_or_default()
                .lines()
                .filter(|l| !l.starts_with("# "))
            {
                run.build.add(package, Some(line));
            }
            continue;
        }
        let Some(package_name) = event.package.as_deref() else {
            continue;
        };
        let package = run.package(package_name);
        match (event.test.as_deref(), event.action.as_str()) {
            (Some(test), "output") => {
                let test = run.test(package, test);
                run.tests[test]
                    .output
                    .extend(event.output.unwrap_or_default().lines().map(str::to_owned));
            }
            (Some(test), action) => {
                let index = run.test(package, test);
                let test = &mut run.tests[index];
                test.outcome = Outcome::from_action(action).or(test.outcome);
            }
            (None, "output") => {
                let output = event.output.unwrap_or_default();
                run.packages[package].output.extend(output.lines().map(str::to_owned));
            }
            (None, action) => {
                let package = &mut run.packages[package];
                package.outcome = Outcome::from_action(action).or(package.outcome);
                package.build_failed |= event.failed_build.is_some();
            }
        }
    }
    if run.tests.is_empty() && run.packages.is_empty() {
        return None;
    }
    let complete = run.packages.iter().all(|p| p.outcome.is_some());
    Some(finish(run, complete))
}

/// `ok  \tpkg\t0.01s`, `FAIL\tpkg\t0.01s`, `FAIL\tpkg [build failed]`, `?   \tpkg\t[no test files]`;
/// or with the tabs turned into spaces (`ok      pkg     0.004s`, as pasted or as a build tool
/// relays it), when the package is followed by its duration or a note.
fn package_line(line: &str) -> Option<(&str, Outcome, bool)> {
    let (status, rest) = match line.split_once('\t') {
        Some(split) => split,
        None => {
            let (status, rest) = line.split_once("  ")?;
            let mut fields = rest.split_whitespace();
            fields.next()?;
            let noted = fields.next().is_some_and(|next| {
                next.starts_with('[')
                    || next == "(cached)"
                    || next.strip_suffix('s').is_some_and(|d| d.parse::<f64>().is_ok())
            });
            if !noted {
                return None;
            }
            (status, rest.trim_start())
        }
    };
    let outcome = match status.trim_end() {
        "ok" => Outcome::Passed,
        "FAIL" => Outcome::Failed,
        "?" => Outcome::Skipped,
        _ => return None,
    };
    let field = rest.split('\t').next()?;
    let field = field.split("  ").next().unwrap_or(field);
    let (name, note) = field.split_once(" [").unwrap_or((field, ""));
    let name = name.trim();
    (!name.is_empty() && !name.contains(' ')).then_some((name, outcome, note.starts_with("build failed")))
}

fn parse_text(text: &str) -> Option<TestReport> {
    let text = unprefixed_text(text);
    let mut run = Run::default();
    // Tests belong to the package whose result line comes after them.
    let mut package = 0;
    let mut current: Option<usize> = None;
    let mut pending: Vec<String> = Vec::new();
    let mut verbose = false;
    let mut timeout: Option<Timeout> = None;
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let started = ["=== RUN", "=== CONT", "=== NAME", "=== PAUSE"]
            .iter()
            .find_map(|marker| after_marker(line, marker));
        if let Some(name) = started {
            run.build.close();
            verbose = true;
            current = Some(run.test(package, name.trim()));
        } else if let Some((name, outcome)) = result_line(line) {
            run.build.close();
            let test = run.test(package, name);
            run.tests[test].outcome = Some(outcome);
            current = Some(test);
        } else if let Some((name, outcome, build_failed)) = package_line(line) {
            run.build.close();
            if let Some(timeout) = timeout.take() {
                timeout.fail(&mut run, package);
            }
            if run.packages.len() <= package {
                run.packages.resize_with(package + 1, Package::default);
            }
            run.packages[package] = Package {
                name: name.to_owned(),
                outcome: Some(outcome),
                build_failed,
                output: std::mem::take(&mut pending),
            };
            package += 1;
            current = None;
        } else if let Some(message) = timeout_panic(line) {
            // `running tests:` and one tab-indented `TestX (10m0s)` per test, since go 1.20.
            let mut running = Vec::new();
            if lines
                .next_if(|next| next.trim_end().ends_with("running tests:"))
                .is_some()
            {
                while let Some(name) = lines.peek().and_then(|next| running_test(next)) {
                    running.push(name.to_owned());
                    lines.next();
                }
            }
            timeout = Some(Timeout {
                message: message.to_owned(),
                running,
            });
            match current {
                Some(index) => run.tests[index].output.push(line.to_owned()),
                None => pending.push(line.to_owned()),
            }
        } else if let Some(name) = failed_after_completion(line) {
            // `t.Error` from a goroutine the test left running: the test fails, late.
            let test = run.test(package, name);
            run.tests[test].outcome = Some(Outcome::Failed);
            run.tests[test].output.push(line.trim_start().to_owned());
            current = Some(test);
        } else if line == "PASS" || line == "FAIL" || run.build.take(line) {
            // Nothing more to learn.
        } else if let Some(index) = current {
            run.tests[index].output.push(line.to_owned());
        } else {
            pending.push(line.to_owned());
        }
    }
    if let Some(timeout) = timeout.take() {
        timeout.fail(&mut run, package);
    }
    if run.tests.is_empty() && run.packages.is_empty() {
        return None;
    }
    let ended = run.tests.iter().all(|t| t.package < run.packages.len());
    let complete = verbose && ended;
    Some(finish(run, complete))
}

/// The test binary's `panic: test timed out after 10m0s`, and the tests it lists as running.
struct Timeout {
    message: String,
    running: Vec<String>,
}

impl Timeout {
    /// Fails the tests that were running when the binary was killed: the ones listed, or, from a
    /// go too old to list them, the ones of `package` that started and never ended.
    fn fail(self, run: &mut Run, package: usize) {
        let tests: Vec<usize> = if self.running.is_empty() {
            (0..run.tests.len())
                .filter(|&i| run.tests[i].package == package && run.tests[i].outcome.is_none())
                .collect()
        } else {
            self.running.iter().map(|name| run.test(package, name)).collect()
        };
        for index in tests {
            let test = &mut run.tests[index];
            if test.outcome != Some(Outcome::Passed) {
                test.outcome = Some(Outcome::Failed);
                if !test.output.iter().any(|line| line.contains(&self.message)) {
                    test.output.insert(0, self.message.clone());
                }
            }
        }
    }
}

/// The rest of `line` after the first `marker` in it: go's markers may follow a prefix (a
/// timestamp, a `[package]` tag, a build tool's prefix) and subtests' are indented.
fn after_marker<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    line.find(marker).map(|i| &line[i + marker.len()..])
}

/// `panic: test timed out after 10m0s`, wherever it starts in the line.
fn timeout_panic(line: &str) -> Option<&str> {
    let at = line.find("panic: test timed out after ")?;
    Some(line[at..].trim_end())
}

/// `\tTestX/sub (10m0s)` in the list of the tests running when the binary timed out, indented
/// under `running tests:` and behind the same prefix as the panic (`Jun 06 12:03:54 ` of `ts`).
fn running_test(line: &str) -> Option<&str> {
    let (before, duration) = line.trim_end().rsplit_once(" (")?;
    let name = before.rsplit(char::is_whitespace).next()?;
    let indented = before[..before.len() - name.len()].ends_with(char::is_whitespace);
    (indented && is_test_name(name) && duration.ends_with("s)")).then_some(name)
}

/// `panic: Fail in goroutine after TestX has completed` (or `Log in goroutine …`).
fn failed_after_completion(line: &str) -> Option<&str> {
    let rest = ["panic: Fail in goroutine after ", "panic: Log in goroutine after "]
        .iter()
        .find_map(|marker| after_marker(line, marker))?;
    let name = rest.strip_suffix(" has completed")?;
    is_test_name(name).then_some(name)
}

/// A name `go test` gives a test: `TestX`, `ExampleX`, `BenchmarkX` or `FuzzX`, and its
/// subtests after slashes, without spaces.
fn is_test_name(name: &str) -> bool {
    ["Test", "Example", "Benchmark", "Fuzz"]
        .iter()
        .any(|prefix| name.starts_with(prefix))
        && !name.contains(char::is_whitespace)
}

/// `--- FAIL: TestX/sub (0.00s)`, indented for a subtest or behind a prefix
/// (`2024-05-01 10:00:00 --- FAIL: TestX (0.01s)`, `[pkg] --- FAIL: …`).
fn result_line(line: &str) -> Option<(&str, Outcome)> {
    for (marker, outcome) in [
        ("--- FAIL: ", Outcome::Failed),
        ("--- PASS: ", Outcome::Passed),
        ("--- SKIP: ", Outcome::Skipped),
    ] {
        let Some(at) = line.find(marker) else { continue };
        let rest = &line[at + marker.len()..];
        let name = rest.rsplit_once(" (").map_or(rest, |(name, _)| name).trim();
        let at_start = line[..at].trim().is_empty();
        // Behind a prefix only a test's name with its duration is taken for the marker.
        let timed = is_test_name(name) && rest.trim_end().ends_with("s)");
        if name.is_empty() || !(at_start || timed) {
            return None;
        }
        return Some((name, outcome));
    }
    None
}

/// Go's subtests (`TestX/sub`): a test that has some counts only when it failed in its own body,
/// its subtests all passing; otherwise its subtests say it all.
pub(super) struct Subtests<'a, K> {
    parents: HashSet<(K, &'a str)>,
    /// Parents with a failing subtest, at any depth.
    failing: HashSet<(K, &'a str)>,
}

impl<'a, K: Copy + Eq + Hash> Subtests<'a, K> {
    /// From each test's group (package or class), name, and whether it failed.
    pub(super) fn new(tests: impl Iterator<Item = (K, &'a str, bool)>) -> Self {
        let mut subtests = Subtests {
            parents: HashSet::new(),
            failing: HashSet::new(),
        };
        for (group, mut name, failed) in tests {
            while let Some((parent, _)) = name.rsplit_once('/') {
                subtests.parents.insert((group, parent));
                if failed {
                    subtests.failing.insert((group, parent));
                }
                name = parent;
            }
        }
        subtests
    }

    /// Whether a test counts by itself.
    pub(super) fn counts(&self, group: K, name: &'a str, failed: bool) -> bool {
        !self.parents.contains(&(group, name)) || (failed && !self.failing.contains(&(group, name)))
    }
}

fn finish(mut run: Run, complete: bool) -> TestReport {
    std::mem::take(&mut run.build).attach(&mut run.packages);
    let mut report = TestReport::new(Runner::GoTest);
    report.complete = complete;
    let tests = &run.tests;
    let mut failed_packages = vec![false; run.packages.len()];
    let subtests = Subtests::new(
        tests
            .iter()
            .map(|t| (t.package, t.name.as_str(), t.outcome == Some(Outcome::Failed))),
    );
    for test in tests {
        let counted = test
            .outcome
            .filter(|o| subtests.counts(test.package, &test.name, *o == Outcome::Failed));
        match counted {
            Some(Outcome::Passed) => report.passed += 1,
            Some(Outcome::Skipped) => report.skipped += 1,
            Some(Outcome::Failed) => {
                report.failed += 1;
                if let Some(flag) = failed_packages.get_mut(test.package) {
                    *flag = true;
                }
                report.failures.push(failure(&test.name, &test.output));
            }
            None => {}
        }
    }
    for (package, had_failures) in run.packages.iter().zip(failed_packages) {
        if package.outcome == Some(Outcome::Failed) && !had_failures {
            let name = if package.build_failed {
                format!("build: {}", package.name)
            } else {
                package.name.clone()
            };
            report.failures.push(failure(&name, &package.output));
        }
    }
    report
}

/// The failure message of a test (or a package) from its output: a panic and the first frame of
/// the code under test, or the first `file_test.go:12: message` log line (with its indented
/// continuation lines), or the first line that says anything.
pub(super) fn failure(name: &str, output: &[String]) -> Failure {
    let mut failure = Failure::named(name);
    let lines: Vec<&str> = output
        .iter()
        .map(String::as_str)
        .filter(|line| !is_marker(line))
        .collect();
    if let Some(start) = lines.iter().position(|line| line.trim_start().starts_with("panic: ")) {
        let panic = lines[start].trim_start();
        failure.message = text::message([panic.strip_suffix(" [recovered]").unwrap_or(panic)]);
        if let Some(place) = panic_frame(&lines[start + 1..]) {
            failure.locate(place);
        }
        return failure;
    }
    for (k, line) in lines.iter().enumerate() {
        let Some((file, number, first)) = log_line(line) else {
            continue;
        };
        let depth = indent(line);
        let rest = lines[k + 1..]
            .iter()
            .take_while(|next| indent(next) > depth && !next.trim().is_empty());
        failure.message = text::message(std::iter::once(first).chain(rest.map(|l| l.trim())));
        failure.locate((file, number));
        return failure;
    }
    failure.message = text::message(lines.iter().copied().filter(|line| !line.trim().is_empty()).take(1));
    failure
}

fn is_marker(line: &str) -> bool {
    let trimmed = line.trim_start();
    [
        "=== RUN",
        "=== PAUSE",
        "=== CONT",
        "=== NAME",
        "--- FAIL:",
        "--- PASS:",
        "--- SKIP:",
    ]
    .iter()
    .any(|p| trimmed.starts_with(p))
        || matches!(trimmed, "PASS" | "FAIL")
        || trimmed.starts_with("exit status ")
        || package_line(line).is_some()
}

/// `    calc_test.go:17: Add(2, 2) = 4, want 5`, or a compiler error `pkg/x.go:3:23: message`;
/// testify's `    x_test.go:144: ` ends the line and puts its message on the lines below.
fn log_line(line: &str) -> Option<(String, u32, &str)> {
    let trimmed = line.trim();
    let (place, message) = trimmed
        .split_once(": ")
        .or_else(|| trimmed.strip_suffix(':').map(|place| (place, "")))?;
    let (file, number) = location(place)?;
    file.ends_with(".go").then_some((file, number, message))
}

/// The first frame of a goroutine trace below the panic that is not the runtime or `testing`:
/// `example.com/m/calc.Div(...)` followed by `\t/src/calc/calc.go:5 +0x12`.
fn panic_frame(lines: &[&str]) -> Option<(String, u32)> {
    let mut frames = lines.iter().skip_while(|line| !line.starts_with("goroutine "));
    while let Some(function) = frames.next() {
        if function.starts_with('\t') || function.starts_with("goroutine ") || function.trim().is_empty() {
            continue;
        }
        let place = frames.next()?;
        let ours = !["testing.", "runtime.", "panic(", "created by ", "main.main("]
            .iter()
            .any(|p| function.starts_with(p));
        if ours {
            return location(place.trim().split(' ').next()?);
        }
    }
    None
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::testparse::parse;
    use crate::testparse::test_support::{assert_complete, failure, unplaced};

    fn expected() -> Vec<Failure> {
        vec![
            failure("TestAddWrong", "calc_test.go", 17, "Add(2, 2) = 4, want 5"),
            failure("TestTable/two", "calc_test.go", 34, "got 5\nwant 6"),
            failure(
                "TestPanics",
                "/tmp/tp/goproj/calc/calc.go",
                5,
                "panic: runtime error: integer divide by zero",
            ),
        ]
    }

    #[test]
    fn the_json_stream_is_read() {
        let report = parse(include_str!("samples/go_test.json"), None).unwrap();
        assert_complete(&report, Runner::GoTest, (3, 3, 1), &expected());
    }

    #[test]
    fn verbose_text_is_read() {
        let report = parse(include_str!("samples/go_test_v.txt"), None).unwrap();
        assert_eq!((report.passed, report.failed, report.skipped), (3, 3, 1));
        assert!(report.complete);
        assert_eq!(report.failures, expected());
    }

    #[test]
    fn plain_text_has_failures_only() {
        let report = parse(include_str!("samples/go_test_plain.txt"), None).unwrap();
        assert_eq!((report.passed, report.failed, report.skipped), (0, 3, 0));
        assert!(!report.complete);
        assert_eq!(report.failures, expected());
    }

    #[test]
    fn build_failures_are_package_failures() {
        let build = failure(
            "build: example.com/goproj/broken",
            "broken/broken.go",
            3,
            "cannot use \"s\" (untyped string constant) as int value in return statement",
        );
        let samples = [
            include_str!("samples/go_test_build_failed.json"),
            include_str!("samples/go_test_build_failed_go124.json"),
        ];
        for sample in samples {
            let report = parse(sample, None).unwrap();
            assert_eq!((report.passed, report.failed, report.skipped), (1, 0, 0));
            assert!(report.complete);
            assert_eq!(report.failures, vec![build.clone()]);
            assert!(!report.succeeded());
        }
        // Text, as `run_tests` saves it: stdout, then the compiler's stderr.
        let text = "FAIL\texample.com/goproj/broken [build failed]\nok  \texample.com/goproj/util\t0.003s\nFAIL\n\
                    # example.com/goproj/broken [example.com/goproj/broken.test]\nbroken/broken.go:3:23: cannot use \
                    \"s\" (untyped string constant) as int value in return statement\n";
        assert_eq!(parse(text, None).unwrap().failures, vec![build]);
    }

    #[test]
    fn a_cut_stream_is_incomplete() {
        let full = include_str!("samples/go_test.json");
        let cut = &full[..full.find(r#""Test":"TestPanics""#).unwrap()];
        let cut = &cut[..cut.rfind('\n').unwrap()];
        let report = parse(cut, None).unwrap();
        assert!(!report.complete);
        assert_eq!((report.passed, report.failed, report.skipped), (3, 2, 1));
    }

    #[test]
    fn the_tests_running_at_a_timeout_fail() {
        // go 1.20+ lists them (a GitHub Actions job quoted in ava-labs/hypersdk#212, cut in the
        // goroutine dump: no package line follows).
        let report = parse(include_str!("samples/go_test_timeout_running.txt"), None).unwrap();
        assert_eq!(report.runner, Runner::GoTest);
        assert!(!report.complete);
        assert_eq!(
            report.failures,
            [unplaced("TestServerPublish", "panic: test timed out after 3m0s")]
        );
        // Tab-indented, a test and its subtest (scylladb/gocql#319): the subtest says it all.
        let listed = "panic: test timed out after 10m0s\n\trunning tests:\n\t\tTestSimpleDebouncer (10m0s)\n\
                      \t\tTestSimpleDebouncer/Case_2 (10m0s)\n";
        assert_eq!(
            parse(listed, None).unwrap().failures,
            [unplaced(
                "TestSimpleDebouncer/Case_2",
                "panic: test timed out after 10m0s"
            )]
        );
        // Behind `ts`'s timestamps (minio/minio#21363, a `go test -v … | ts` in a container).
        let stamped = "Jun 06 12:03:39 === RUN   TestCreateServerEndpoints/#05\n\
                       Jun 06 12:03:54 panic: test timed out after 15s\n\
                       Jun 06 12:03:54     running tests:\n\
                       Jun 06 12:03:54         TestCreateServerEndpoints (15s)\n\
                       Jun 06 12:03:54         TestCreateServerEndpoints/#05 (15s)\n\
                       Jun 06 12:03:54 \n\
                       Jun 06 12:03:54 goroutine 78 [running]:\n";
        let names: Vec<_> = parse(stamped, None)
            .unwrap()
            .failures
            .into_iter()
            .map(|f| f.name)
            .collect();
        assert_eq!(names, ["TestCreateServerEndpoints/#05"]);
        // go 1.19 lists none: with -v, the tests that started and never ended were running.
        let report = parse(include_str!("samples/go_test_timeout_v.txt"), None).unwrap();
        assert_eq!((report.passed, report.failed), (1, 1));
        assert_eq!(
            report.failures,
            [failure(
                "TestHangs/inner",
                "/tmp/gotimeout/hang_test.go",
                11,
                "panic: test timed out after 2s"
            )]
        );
        // Without -v nothing names a test: the package failed.
        let report = parse(include_str!("samples/go_test_timeout_plain.txt"), None).unwrap();
        let names: Vec<_> = report.failures.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["example.com/hang"]);
        assert_eq!(report.failures[0].message, "panic: test timed out after 2s");
    }

    #[test]
    fn a_failure_after_the_test_completed_is_the_tests() {
        // go 1.19 -v: the test had passed; the binary died while the next one ran, which did not
        // fail.
        let report = parse(include_str!("samples/go_test_fail_after_completion.txt"), None).unwrap();
        assert_eq!(
            report.failures,
            [failure(
                "TestLeaksAGoroutine",
                "/tmp/golate/late_test.go",
                11,
                "panic: Fail in goroutine after TestLeaksAGoroutine has completed"
            )]
        );
    }

    #[test]
    fn results_behind_a_prefix_are_read() {
        // A Nix build's `go test` (openpubkey/opkssh#184): tabs relayed as spaces, testify's
        // message below its location.
        let report = parse(include_str!("samples/go_test_nix_testify.txt"), None).unwrap();
        assert_eq!(
            report.failures,
            [failure(
                "TestLoadUserPolicy_ErrorFile",
                "policyloader_test.go",
                144,
                "Error Trace:    /build/source/policy/policyloader_test.go:144\nError:          Should be false\n\
                 Test:           TestLoadUserPolicy_ErrorFile"
            )]
        );
        // By hand: a timestamp and a `[package]` tag before the markers; a log line quoting a
        // marker is no result.
        let tagged = "2024-05-01 10:00:00.123 === RUN   TestA\n[calc] --- FAIL: TestA (0.01s)\n\
                      [calc]     calc_test.go:9: want 2\n    x_test.go:3: output said --- FAIL: not a test\n";
        let report = parse(tagged, None).unwrap();
        let names: Vec<_> = report.failures.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["TestA"]);
    }

    #[test]
    fn a_parent_failing_in_its_own_body_is_reported() {
        let output = "=== RUN   TestP\n=== RUN   TestP/a\n=== NAME  TestP\n    p_test.go:9: cleanup failed\n\
                      --- FAIL: TestP (0.00s)\n    --- PASS: TestP/a (0.00s)\nFAIL\nFAIL\texample.com/p\t0.01s\n";
        let report = parse(output, None).unwrap();
        assert_eq!((report.passed, report.failed), (1, 1));
        assert_eq!(
            report.failures,
            vec![failure("TestP", "p_test.go", 9, "cleanup failed")]
        );
    }
}
