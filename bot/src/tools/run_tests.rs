//! `run_tests`: runs the project's tests in the sandbox, keeps the full log in the run directory,
//! and answers with what the model needs to act on: counts, each failing test with its first
//! message and location, and the log's path. The parsed report is also kept in
//! [`ToolContext::tests`] for the run summary, and the output in [`ToolContext::test_output`].
//!
//! The command is the model's, else the configured one, else the one the project's files point to
//! (`Cargo.toml` → `cargo test`, and so on). A filter is added in the runner's own syntax, quoted
//! for the shell.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::PoisonError;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{BoxFuture, Tool, ToolContext, ToolError, parse_args};
use crate::sandbox::{ExecOutput, ExecRequest, SandboxError};
use crate::testparse::{self, Failure, Runner, TestReport};

/// The longest a test run may take; also the default.
const MAX_TIMEOUT_SECS: u64 = 600;
/// Bytes kept of each of stdout and stderr: enough that the runner's summary, at the end, survives.
const OUTPUT_LIMIT: usize = 4 * 1024 * 1024;
/// Failures shown to the model; the rest are counted, and in the log.
const SHOWN_FAILURES: usize = 20;
/// Lines of output shown when it could not be parsed.
const TAIL_LINES: usize = 60;

/// `run_tests`.
pub struct RunTests;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    filter: Option<String>,
    #[serde(default)]
    timeout_secs: Option<u64>,
}

impl Tool for RunTests {
    fn name(&self) -> &'static str {
        "run_tests"
    }

    fn description(&self) -> &'static str {
        "Run the project's tests and get a compact result: the command, exit code and duration, how many tests \
         passed, failed and were skipped, and each failing test with its first failure message and location. The \
         full output is saved to a log file whose path is in the result; open it with read_file when you need more. \
         Without `command`, the configured test command is used, or one detected from the project (cargo test, \
         pytest, npm/yarn/pnpm test, go test, make test). Use `filter` to run only matching tests (a test name or \
         part of it, in the runner's own sense). Prefer this over bash for running tests."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "description": "Shell command to run instead of the configured or detected one, e.g. \"cargo test -p mycrate\"."
                },
                "filter": {
                    "type": "string",
                    "description": "Only run tests matching this (cargo test FILTER, pytest -k FILTER, go test -run FILTER, jest/vitest -t FILTER)."
                },
                "timeout_secs": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_TIMEOUT_SECS,
                    "description": "Kill the run after this many seconds (default and maximum 600)."
                }
            },
            "additionalProperties": false
        })
    }

    fn runs_commands(&self) -> bool {
        true
    }

    fn read_only(&self) -> bool {
        // Tests write files: build output, caches, snapshots.
        false
    }

    fn call<'a>(&'a self, ctx: &'a ToolContext, args: Map<String, Value>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let args: Args = parse_args(self.name(), args)?;
            let command = resolve(
                ctx.sandbox.workspace(),
                args.command.as_deref(),
                ctx.test_command.as_deref(),
                args.filter.as_deref(),
            )
            .map_err(|e| ToolError::Respond(e.to_string()))?;
            let timeout = Duration::from_secs(args.timeout_secs.unwrap_or(MAX_TIMEOUT_SECS).clamp(1, MAX_TIMEOUT_SECS));
            let mut request = ExecRequest::new(command.command.clone(), timeout);
            request.output_limit = OUTPUT_LIMIT;
            // CI=true keeps watch-mode runners (react-scripts, vitest) from waiting for keys. Nothing
            // else is imposed (no NO_COLOR, no TERM): a project's colour-sensitive tests must see
            // what its own CI gives them; the parsers strip what colour there is.
            request.env = vec![("CI".into(), "true".into())];
            let output = tokio::select! {
                output = ctx.sandbox.exec(request) => output,
                () = ctx.cancel.cancelled() => return Err(ToolError::Fatal("the run was cancelled".into())),
            };
            // Tests write files too (caches, snapshots, generated code).
            ctx.commands_ran();
            let output = output.map_err(sandbox_error)?;

            let log = combined(&output);
            let report = testparse::parse(&log, command.runner);
            let runner = report
                .as_ref()
                .map(|r| r.runner)
                .or(command.runner)
                .unwrap_or(Runner::Unknown);
            let log_path = save_log(&ctx.run_dir, runner, &log);
            let text = render(&command.command, &output, report.as_ref(), &log, &log_path);
            let stored = report.unwrap_or_else(|| unparsed_report(&command, &output));
            *ctx.tests.lock().unwrap_or_else(PoisonError::into_inner) = Some(stored);
            *ctx.test_output.lock().unwrap_or_else(PoisonError::into_inner) = Some(log);
            Ok(text)
        })
    }
}

fn sandbox_error(err: SandboxError) -> ToolError {
    match err {
        SandboxError::Spawn(_) => ToolError::Respond(err.to_string()),
        SandboxError::Backend(_) | SandboxError::Stopped => ToolError::Fatal(err.to_string()),
    }
}

/// Why no test command could be made; said to the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    #[error(
        "no test command is configured and none could be detected (looked for Cargo.toml, pyproject.toml, \
         setup.py, setup.cfg, pytest.ini, tox.ini, tests/test_*.py, package.json with a test script, go.mod \
         and a Makefile with a test target); pass the command to run as `command`"
    )]
    NotDetected,
    #[error("`filter` must be a test name or pattern, not `{0}`; put options into `command`")]
    BadFilter(String),
    #[error(
        "cannot add a filter to `{0}`: its test runner is unknown; pass the whole command, filter included, as \
         `command`"
    )]
    UnknownRunner(String),
}

/// Why the test log could not be saved.
#[derive(Debug, thiserror::Error)]
enum LogError {
    #[error("could not create {}: {source}", dir.display())]
    CreateDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("could not read {}: {source}", dir.display())]
    ReadDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("could not write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A test command, and the runner that prints its output when that is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestCommand {
    pub command: String,
    pub runner: Option<Runner>,
}

/// Chooses the command: `command` (from the model), else `configured`, else detection from the
/// project root; then adds `filter` in that runner's syntax. The error is for the model.
pub fn resolve(
    root: &Path,
    command: Option<&str>,
    configured: Option<&str>,
    filter: Option<&str>,
) -> Result<TestCommand, CommandError> {
    let given = command.or(configured).map(str::trim).filter(|c| !c.is_empty());
    let base = match given {
        Some(command) => command.to_owned(),
        None => detect(root).ok_or(CommandError::NotDetected)?,
    };
    let runner = runner_of(root, &base);
    let command = match filter.map(str::trim).filter(|f| !f.is_empty()) {
        Some(filter) => with_filter(root, &base, filter)?,
        None => base,
    };
    Ok(TestCommand { command, runner })
}

/// The test command the project's files point to.
pub fn detect(root: &Path) -> Option<String> {
    if root.join("Cargo.toml").is_file() {
        // At a workspace's root plain `cargo test` tests only the root package (or the default
        // members): the whole workspace is what a change must keep passing.
        return Some(if is_cargo_workspace(root) {
            "cargo test --workspace".into()
        } else {
            "cargo test".into()
        });
    }
    let python_markers = ["pyproject.toml", "setup.py", "setup.cfg", "pytest.ini", "tox.ini"];
    if python_markers.iter().any(|m| root.join(m).is_file()) || has_python_tests(root) {
        return Some("python3 -m pytest -q -rA".into());
    }
    if test_script(root).is_some() {
        return Some(format!("{} test", package_manager(root)));
    }
    if root.join("go.mod").is_file() {
        return Some("go test -json ./...".into());
    }
    if has_make_test_target(root) {
        return Some("make test".into());
    }
    None
}

/// Whether `root/Cargo.toml` declares a workspace with members (a virtual manifest, or a package
/// with members); an empty `[workspace]` only keeps a package out of an enclosing one.
fn is_cargo_workspace(root: &Path) -> bool {
    std::fs::read_to_string(root.join("Cargo.toml"))
        .ok()
        .and_then(|text| text.parse::<toml::Table>().ok())
        .is_some_and(|manifest| manifest.get("workspace").is_some_and(|w| w.get("members").is_some()))
}

fn has_python_tests(root: &Path) -> bool {
    ["tests", "test"].iter().any(|dir| {
        std::fs::read_dir(root.join(dir))
            .into_iter()
            .flatten()
            .flatten()
            .any(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                name.ends_with(".py") && (name.starts_with("test_") || name.ends_with("_test.py"))
            })
    })
}

/// `scripts.test` of `package.json`, unless it is npm's placeholder.
fn test_script(root: &Path) -> Option<String> {
    let text = std::fs::read_to_string(root.join("package.json")).ok()?;
    let manifest: Value = serde_json::from_str(&text).ok()?;
    let script = manifest.get("scripts")?.get("test")?.as_str()?;
    (!script.contains("no test specified")).then(|| script.to_owned())
}

fn package_manager(root: &Path) -> &'static str {
    if root.join("pnpm-lock.yaml").is_file() {
        "pnpm"
    } else if root.join("yarn.lock").is_file() {
        "yarn"
    } else {
        "npm"
    }
}

fn has_make_test_target(root: &Path) -> bool {
    ["GNUmakefile", "makefile", "Makefile"].iter().any(|name| {
        std::fs::read_to_string(root.join(name)).is_ok_and(|text| {
            text.lines().any(|line| {
                line.strip_prefix("test")
                    .map(str::trim_start)
                    .is_some_and(|rest| rest.starts_with(':') && !rest.starts_with(":="))
            })
        })
    })
}

/// How a command's runner takes a test filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FilterStyle {
    /// `cargo test FILTER`, `cargo nextest run FILTER`: before any ` -- `.
    Positional,
    /// `pytest -k FILTER`
    Pytest,
    /// `go test -run FILTER`
    Go,
    /// `jest -t FILTER`, `vitest -t FILTER`, `yarn test -t FILTER`
    NamePattern,
    /// `npm test -- -t FILTER`
    NpmNamePattern,
}

fn words(command: &str) -> Vec<&str> {
    command.split_whitespace().collect()
}

fn contains_words(command: &str, needle: &[&str]) -> bool {
    words(command).windows(needle.len()).any(|w| w == needle)
}

/// The runner of a command, from its words (and `package.json` for `npm test` and the like).
fn runner_of(root: &Path, command: &str) -> Option<Runner> {
    if contains_words(command, &["cargo", "nextest"]) {
        Some(Runner::Nextest)
    } else if contains_words(command, &["cargo", "test"]) || contains_words(command, &["cargo", "t"]) {
        Some(Runner::Cargo)
    } else if command.contains("pytest") {
        Some(Runner::Pytest)
    } else if contains_words(command, &["go", "test"]) || command.contains("gotestsum") {
        Some(Runner::GoTest)
    } else if command.contains("vitest") {
        Some(Runner::Vitest)
    } else if command.contains("jest") {
        Some(Runner::Jest)
    } else if is_package_script(command) {
        let script = test_script(root)?;
        if script.contains("vitest") {
            Some(Runner::Vitest)
        } else if script.contains("jest") || script.contains("react-scripts test") {
            Some(Runner::Jest)
        } else {
            None
        }
    } else {
        None
    }
}

/// `npm test`, `npm run test`, `yarn test`, `pnpm test`, …
fn is_package_script(command: &str) -> bool {
    matches!(
        words(command).as_slice(),
        ["npm" | "yarn" | "pnpm", "test" | "t", ..] | ["npm" | "yarn" | "pnpm", "run", "test", ..]
    )
}

fn filter_style(root: &Path, command: &str) -> Option<FilterStyle> {
    match runner_of(root, command)? {
        Runner::Cargo | Runner::Nextest => Some(FilterStyle::Positional),
        Runner::Pytest => Some(FilterStyle::Pytest),
        Runner::GoTest if contains_words(command, &["go", "test"]) => Some(FilterStyle::Go),
        Runner::Jest | Runner::Vitest if command.trim_start().starts_with("npm ") => Some(FilterStyle::NpmNamePattern),
        Runner::Jest | Runner::Vitest => Some(FilterStyle::NamePattern),
        Runner::GoTest | Runner::JUnitXml | Runner::Maven | Runner::Gradle | Runner::Tap | Runner::Unknown => None,
    }
}

/// `command` with `filter` added in its runner's syntax.
fn with_filter(root: &Path, command: &str, filter: &str) -> Result<String, CommandError> {
    if filter.starts_with('-') || filter.contains('\n') {
        return Err(CommandError::BadFilter(filter.to_owned()));
    }
    let quoted = shell_word(filter);
    let Some(style) = filter_style(root, command) else {
        return Err(CommandError::UnknownRunner(command.to_owned()));
    };
    Ok(match style {
        FilterStyle::Positional => match command.split_once(" -- ") {
            Some((head, tail)) => format!("{head} {quoted} -- {tail}"),
            None => format!("{command} {quoted}"),
        },
        FilterStyle::Pytest => format!("{command} -k {quoted}"),
        FilterStyle::Go => match command.split_once(" ./...") {
            // Before the packages reads best; go accepts flags after them too.
            Some((head, tail)) => format!("{head} -run {quoted} ./...{tail}"),
            None => format!("{command} -run {quoted}"),
        },
        FilterStyle::NamePattern => format!("{command} -t {quoted}"),
        FilterStyle::NpmNamePattern if command.contains(" -- ") => format!("{command} -t {quoted}"),
        FilterStyle::NpmNamePattern => format!("{command} -- -t {quoted}"),
    })
}

/// `value` as one `sh` word, quoted only when it needs it.
fn shell_word(value: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c);
    if !value.is_empty() && value.chars().all(plain) {
        value.to_owned()
    } else {
        crate::shell::quote(value)
    }
}

/// stdout, then stderr: what the parser reads and the log keeps.
fn combined(output: &ExecOutput) -> String {
    let mut log = output.stdout.clone();
    if !output.stderr.is_empty() {
        if !log.is_empty() && !log.ends_with('\n') {
            log.push('\n');
        }
        log.push_str(&output.stderr);
    }
    log
}

/// Writes `<run_dir>/tests/<n>-<runner>.log`, `n` one more than the highest so far.
fn save_log(run_dir: &Path, runner: Runner, log: &str) -> Result<PathBuf, LogError> {
    let dir = run_dir.join("tests");
    std::fs::create_dir_all(&dir).map_err(|source| LogError::CreateDir {
        dir: dir.clone(),
        source,
    })?;
    let last = std::fs::read_dir(&dir)
        .map_err(|source| LogError::ReadDir {
            dir: dir.clone(),
            source,
        })?
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.split_once('-')?.0.parse::<u64>().ok())
        .max()
        .unwrap_or(0);
    let path = dir.join(format!("{}-{}.log", last + 1, runner.name()));
    std::fs::write(&path, log).map_err(|source| LogError::Write {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

/// The answer to the model.
fn render(
    command: &str,
    output: &ExecOutput,
    report: Option<&TestReport>,
    log: &str,
    log_path: &Result<PathBuf, LogError>,
) -> String {
    let mut text = format!("$ {command}\n");
    let status = match output.exit_code {
        _ if output.timed_out => format!("timed out after {:.1}s and was killed", output.duration.as_secs_f64()),
        Some(code) => format!("exit code {code} after {:.1}s", output.duration.as_secs_f64()),
        None => format!("killed by a signal after {:.1}s", output.duration.as_secs_f64()),
    };
    let _ = writeln!(text, "{status}");
    match log_path {
        Ok(path) => {
            let _ = writeln!(text, "full log ({} lines): {}", log.lines().count(), path.display());
        }
        Err(err) => {
            let _ = writeln!(text, "the log could not be saved: {err}");
        }
    }
    if output.truncated {
        let _ = writeln!(
            text,
            "the output was larger than {} MiB per stream: only its beginning and end were kept",
            OUTPUT_LIMIT / (1024 * 1024)
        );
    }
    let Some(report) = report else {
        let _ = writeln!(
            text,
            "\nThe output was not recognised as a test runner's. Its last lines:"
        );
        text.push_str(&tail(log, TAIL_LINES));
        return text;
    };

    let _ = write!(
        text,
        "\n{}: {} passed, {} failed, {} skipped",
        report.runner.name(),
        report.passed,
        report.failed,
        report.skipped
    );
    if !report.complete {
        text.push_str(" (counted from per-test lines: the runner's summary is missing, so these may be incomplete)");
    }
    text.push('\n');
    if !report.failures.is_empty() {
        let _ = writeln!(text, "\nFailures:");
        for failure in report.failures.iter().take(SHOWN_FAILURES) {
            render_failure(&mut text, failure);
        }
        if report.failures.len() > SHOWN_FAILURES {
            let _ = writeln!(
                text,
                "… and {} more (see the log)",
                report.failures.len() - SHOWN_FAILURES
            );
        }
    }
    let failed_without_tests = output.exit_code != Some(0) && report.succeeded();
    if failed_without_tests || output.timed_out {
        // Something failed that no test explains (a crash, a build step, a timeout): show how it ended.
        let _ = writeln!(
            text,
            "\nThe command failed, but no failing test explains it. The last lines of output:"
        );
        text.push_str(&tail(log, TAIL_LINES));
    }
    text
}

fn render_failure(text: &mut String, failure: &Failure) {
    let _ = write!(text, "- {}", failure.name);
    match (&failure.file, failure.line) {
        (Some(file), Some(line)) => {
            let _ = write!(text, " ({file}:{line})");
        }
        (Some(file), None) => {
            let _ = write!(text, " ({file})");
        }
        _ => {}
    }
    text.push('\n');
    for line in failure.message.lines() {
        let _ = writeln!(text, "    {line}");
    }
}

/// The last `lines` lines of `log`, without ANSI codes.
fn tail(log: &str, lines: usize) -> String {
    let clean = testparse::strip_ansi(log);
    let all: Vec<&str> = clean.lines().collect();
    let mut out = all[all.len().saturating_sub(lines)..].join("\n");
    out.push('\n');
    out
}

/// What the run summary keeps of a run whose output was not recognised.
fn unparsed_report(command: &TestCommand, output: &ExecOutput) -> TestReport {
    let mut report = TestReport::new(command.runner.unwrap_or(Runner::Unknown));
    if output.exit_code != Some(0) {
        let mut failure = Failure::named(command.command.clone());
        failure.message = match output.exit_code {
            _ if output.timed_out => "timed out".into(),
            Some(code) => format!("exited with code {code}; the output was not recognised"),
            None => "killed by a signal".into(),
        };
        report.failures.push(failure);
    }
    report
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::sandbox::local::{LocalOptions, LocalSession};
    use crate::tools::test_support::{self, write_files};

    fn project(files: Files<'_>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        write_files(dir.path(), files);
        dir
    }

    /// Paths and contents of a project's files.
    type Files<'a> = &'a [(&'a str, &'a str)];

    fn detected(files: Files<'_>, filter: Option<&str>) -> Result<TestCommand, CommandError> {
        let dir = project(files);
        resolve(dir.path(), None, None, filter)
    }

    fn command(text: &str, runner: Option<Runner>) -> TestCommand {
        TestCommand {
            command: text.into(),
            runner,
        }
    }

    #[test]
    fn commands_are_detected_from_project_files() {
        let cases: &[(Files<'_>, &str, Option<Runner>)] = &[
            (&[("Cargo.toml", "[package]")], "cargo test", Some(Runner::Cargo)),
            (
                &[("Cargo.toml", "[package]\nname = \"x\"\n\n[workspace]\n")],
                "cargo test",
                Some(Runner::Cargo),
            ),
            (
                &[("Cargo.toml", "[workspace]\nmembers = [\"a\", \"b\"]\n")],
                "cargo test --workspace",
                Some(Runner::Cargo),
            ),
            (
                &[(
                    "Cargo.toml",
                    "[package]\nname = \"x\"\n\n[workspace]\nmembers = [\"sub\"]\n",
                )],
                "cargo test --workspace",
                Some(Runner::Cargo),
            ),
            (
                &[("pyproject.toml", "")],
                "python3 -m pytest -q -rA",
                Some(Runner::Pytest),
            ),
            (&[("setup.py", "")], "python3 -m pytest -q -rA", Some(Runner::Pytest)),
            (&[("tox.ini", "")], "python3 -m pytest -q -rA", Some(Runner::Pytest)),
            (
                &[("tests/test_app.py", "")],
                "python3 -m pytest -q -rA",
                Some(Runner::Pytest),
            ),
            (
                &[("package.json", r#"{"scripts": {"test": "jest"}}"#)],
                "npm test",
                Some(Runner::Jest),
            ),
            (
                &[
                    ("package.json", r#"{"scripts": {"test": "vitest run"}}"#),
                    ("yarn.lock", ""),
                ],
                "yarn test",
                Some(Runner::Vitest),
            ),
            (
                &[
                    ("package.json", r#"{"scripts": {"test": "mocha"}}"#),
                    ("pnpm-lock.yaml", ""),
                ],
                "pnpm test",
                None,
            ),
            (&[("go.mod", "module x")], "go test -json ./...", Some(Runner::GoTest)),
            (
                &[("Makefile", "build:\n\tcc x.c\n\ntest: build\n\t./run\n")],
                "make test",
                None,
            ),
        ];
        for (files, expected, runner) in cases {
            assert_eq!(detected(files, None), Ok(command(expected, *runner)), "{files:?}");
        }
    }

    #[test]
    fn placeholders_and_lookalikes_are_not_test_commands() {
        let npm_placeholder = r#"{"scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}"#;
        let cases: &[Files<'_>] = &[
            &[],
            &[("package.json", npm_placeholder)],
            &[("Makefile", "tests:\n\t./run\ntest := 1\n")],
            &[("tests/helpers.py", "")],
        ];
        for files in cases {
            let err = detected(files, None).unwrap_err().to_string();
            assert!(err.contains("pass the command to run as `command`"), "{files:?}: {err}");
        }
    }

    #[test]
    fn the_model_s_command_wins_over_the_configured_one() {
        let dir = project(&[("Cargo.toml", "")]);
        let root = dir.path();
        assert_eq!(
            resolve(root, Some("cargo nextest run"), Some("make check"), None),
            Ok(command("cargo nextest run", Some(Runner::Nextest)))
        );
        assert_eq!(
            resolve(root, None, Some("make check"), None),
            Ok(command("make check", None))
        );
        assert_eq!(
            resolve(root, Some("  "), None, None),
            Ok(command("cargo test", Some(Runner::Cargo)))
        );
    }

    #[test]
    fn filters_use_the_runner_s_syntax_and_are_quoted() {
        let cargo = [("Cargo.toml", "")];
        assert_eq!(
            detected(&cargo, Some("tests::adds")).unwrap().command,
            "cargo test tests::adds"
        );
        assert_eq!(
            detected(&cargo, Some("it's odd")).unwrap().command,
            r"cargo test 'it'\''s odd'"
        );
        assert_eq!(
            detected(&[("pyproject.toml", "")], Some("add and not slow"))
                .unwrap()
                .command,
            "python3 -m pytest -q -rA -k 'add and not slow'"
        );
        assert_eq!(
            detected(&[("go.mod", "")], Some("TestAdd$")).unwrap().command,
            "go test -json -run 'TestAdd$' ./..."
        );
        let jest = [("package.json", r#"{"scripts": {"test": "jest --ci"}}"#)];
        assert_eq!(
            detected(&jest, Some("math adds")).unwrap().command,
            "npm test -- -t 'math adds'"
        );
        let vitest = [
            ("package.json", r#"{"scripts": {"test": "vitest"}}"#),
            ("pnpm-lock.yaml", ""),
        ];
        assert_eq!(detected(&vitest, Some("adds")).unwrap().command, "pnpm test -t adds");

        let dir = project(&[]);
        let root = dir.path();
        let with = |command: &str, filter: &str| resolve(root, Some(command), None, Some(filter)).map(|c| c.command);
        assert_eq!(
            with("cargo test --workspace -- --nocapture", "adds").unwrap(),
            "cargo test --workspace adds -- --nocapture"
        );
        assert_eq!(
            with("cargo nextest run -p x", "adds").unwrap(),
            "cargo nextest run -p x adds"
        );
        assert_eq!(with("npx vitest run", "a b").unwrap(), "npx vitest run -t 'a b'");
        assert!(
            with("make check", "adds")
                .unwrap_err()
                .to_string()
                .contains("cannot add a filter to `make check`")
        );
        assert!(
            with("cargo test", "--ignored")
                .unwrap_err()
                .to_string()
                .contains("must be a test name")
        );
    }

    fn context(dir: &Path, test_command: Option<&str>) -> ToolContext {
        let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
        let options = LocalOptions {
            cargo_home: std::env::var_os("CARGO_HOME")
                .map(PathBuf::from)
                .or_else(|| Some(home.join(".cargo"))),
            rustup_home: std::env::var_os("RUSTUP_HOME")
                .map(PathBuf::from)
                .or_else(|| Some(home.join(".rustup"))),
            ..LocalOptions::default()
        };
        let mut ctx = test_support::context(dir);
        ctx.sandbox = Arc::new(LocalSession::start(dir, options).unwrap());
        ctx.run_dir = dir.join(".run");
        ctx.test_command = test_command.map(str::to_owned);
        ctx
    }

    async fn run(ctx: &ToolContext, args: Value) -> Result<String, ToolError> {
        test_support::call(&RunTests, ctx, args).await
    }

    #[tokio::test]
    async fn cargo_test_runs_end_to_end() {
        let dir = project(&[
            (
                "Cargo.toml",
                "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
            ),
            (
                "src/lib.rs",
                "pub fn add(a: u32, b: u32) -> u32 {\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    \
                 fn adds() {\n        assert_eq!(super::add(2, 2), 4);\n    }\n\n    #[test]\n    fn adds_wrong() {\n        \
                 assert_eq!(super::add(2, 2), 5, \"two and two\");\n    }\n\n    #[test]\n    #[ignore]\n    fn slow() {}\n}\n",
            ),
        ]);
        let ctx = context(dir.path(), None);

        let text = run(&ctx, json!({})).await.unwrap();
        assert!(text.starts_with("$ cargo test\nexit code 101 after "), "{text}");
        assert!(text.contains("\ncargo-test: 1 passed, 1 failed, 1 skipped\n"), "{text}");
        assert!(
            text.contains(
                "- tests::adds_wrong (src/lib.rs:14)\n    assertion `left == right` failed: two and two\n      left: 4\n     \
                 right: 5\n"
            ),
            "{text}"
        );
        let log = dir.path().join(".run/tests/1-cargo-test.log");
        assert!(text.contains(&format!("{}\n", log.display())), "{text}");
        assert!(std::fs::read_to_string(&log).unwrap().contains("test result: FAILED."));
        let stored = ctx.tests.lock().unwrap().clone().unwrap();
        assert_eq!(
            (stored.runner, stored.passed, stored.failed, stored.skipped),
            (Runner::Cargo, 1, 1, 1)
        );

        // A filter; the log number goes up.
        let text = run(&ctx, json!({"filter": "tests::adds", "timeout_secs": 300}))
            .await
            .unwrap();
        assert!(text.starts_with("$ cargo test tests::adds\n"), "{text}");
        assert!(dir.path().join(".run/tests/2-cargo-test.log").is_file());
        let text = run(&ctx, json!({"command": "cargo test -- --exact tests::adds"}))
            .await
            .unwrap();
        assert!(
            text.contains("exit code 0 after ") && text.contains("cargo-test: 1 passed, 0 failed, 0 skipped"),
            "{text}"
        );
        assert!(ctx.tests.lock().unwrap().as_ref().unwrap().succeeded());
    }

    #[tokio::test]
    async fn unrecognised_output_shows_its_tail() {
        let dir = project(&[]);
        let ctx = context(dir.path(), Some("seq 1 100; echo oops >&2; exit 3"));
        let text = run(&ctx, json!({})).await.unwrap();
        assert!(text.contains("exit code 3 after "), "{text}");
        assert!(
            text.contains("not recognised as a test runner's. Its last lines:\n42\n43\n"),
            "{text}"
        );
        assert!(text.ends_with("100\noops\n"), "{text}");
        assert!(!text.contains("\n41\n"), "{text}");
        let stored = ctx.tests.lock().unwrap().clone().unwrap();
        assert_eq!(stored.runner, Runner::Unknown);
        assert_eq!(
            stored.failures[0].message,
            "exited with code 3; the output was not recognised"
        );
        assert!(dir.path().join(".run/tests/1-unknown.log").is_file());

        let err = run(&ctx, json!({"command": "make check", "filter": "x"}))
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::Respond(_)));
        let err = run(&ctx, json!({"comand": "x"})).await.unwrap_err();
        assert!(err.to_string().contains("unknown field `comand`"));
    }

    #[test]
    fn long_failure_lists_are_cut() {
        let mut report = TestReport::new(Runner::Pytest);
        report.failed = 25;
        report.complete = true;
        report.failures = (0..25).map(|i| Failure::named(format!("t{i}"))).collect();
        let output = ExecOutput {
            exit_code: Some(1),
            stdout: String::new(),
            stderr: String::new(),
            stdout_bytes: 0,
            stderr_bytes: 0,
            truncated: false,
            timed_out: false,
            oom_killed: false,
            duration: Duration::from_millis(1500),
        };
        let text = render(
            "pytest",
            &output,
            Some(&report),
            "",
            &Ok(PathBuf::from("/run/tests/1-pytest.log")),
        );
        assert!(text.starts_with("$ pytest\nexit code 1 after 1.5s\nfull log (0 lines): /run/tests/1-pytest.log\n"));
        assert!(text.contains("- t19\n… and 5 more (see the log)\n"), "{text}");
        assert!(!text.contains("- t20\n"));
    }
}
