//! The tests before and after a dependency update, compared: what the update broke (compile errors,
//! Python import errors and failing tests that are new), what failed before it too, and what it
//! fixed. A run is read from its report and its log ([`Observed::read`]): compile errors with the
//! CI-triage parsers, import errors with [`testparse::import_errors`], failing tests by name, the
//! suite-level failures that only echo a compile or import error left out. Paths under the working
//! copy's root are made relative first, since the two runs are in two copies of the repository.
//!
//! What the agent is told ([`Comparison::for_agent`]) is only what the update broke; the pull
//! request tells all three ([`Comparison::headline`], [`Comparison::details`]).

use std::collections::BTreeSet;

use crate::testparse::{self, Failure, ImportError, ImportKind};
use crate::triage::compiler::{self, CompileError};

use super::TestRun;
use super::markdown;

/// Items shown per list; the rest are counted.
const MAX_SHOWN: usize = 10;
/// Failing tests whose message the agent is shown; the rest are named.
const AGENT_FAILURES: usize = 20;

/// What fails in one run of the tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Problems {
    pub compile_errors: Vec<CompileError>,
    pub import_errors: Vec<ImportError>,
    /// Failing tests (and suite-level failures no compile or import error explains).
    pub tests: Vec<Failure>,
}

impl Problems {
    pub fn is_empty(&self) -> bool {
        self.compile_errors.is_empty() && self.import_errors.is_empty() && self.tests.is_empty()
    }

    fn count(&self) -> usize {
        self.compile_errors.len() + self.import_errors.len() + self.tests.len()
    }

    /// What is in `self` and not in `other`: compile errors as printed, import errors by what
    /// failed to import and the error, tests by name.
    fn without(&self, other: &Problems) -> Problems {
        let imports: BTreeSet<(&str, &str)> = other.import_errors.iter().map(import_key).collect();
        let tests: BTreeSet<&str> = other.tests.iter().map(|t| t.name.as_str()).collect();
        Problems {
            compile_errors: self
                .compile_errors
                .iter()
                .filter(|e| !other.compile_errors.contains(e))
                .cloned()
                .collect(),
            import_errors: self
                .import_errors
                .iter()
                .filter(|e| !imports.contains(&import_key(e)))
                .cloned()
                .collect(),
            tests: self
                .tests
                .iter()
                .filter(|t| !tests.contains(t.name.as_str()))
                .cloned()
                .collect(),
        }
    }

    /// One name per problem, for a list: `` `tests::adds` ``, `` compile error at `src/lib.rs:2` ``.
    fn names(&self) -> Vec<String> {
        let compile = self.compile_errors.iter().map(|e| match (&e.file, e.line) {
            (Some(file), Some(line)) => format!("compile error at {}", markdown::code_span(&format!("{file}:{line}"))),
            (Some(file), None) => format!("compile error in {}", markdown::code_span(file)),
            _ => format!("compile error {}", markdown::code_span(&e.message)),
        });
        let imports = self.import_errors.iter().map(|e| match &e.missing {
            Some(missing) => format!(
                "{} cannot import {}",
                markdown::code_span(&e.importer),
                markdown::code_span(missing)
            ),
            None => format!("{} cannot be imported", markdown::code_span(&e.importer)),
        });
        let tests = self.tests.iter().map(|t| markdown::code_span(&t.name));
        compile.chain(imports).chain(tests).collect()
    }
}

fn import_key(error: &ImportError) -> (&str, &str) {
    (error.importer.as_str(), error.message.as_str())
}

/// One run of the tests, read for comparing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    /// Passed and failed tests, when the run printed results.
    pub counts: Option<(u64, u64)>,
    pub problems: Problems,
}

impl Observed {
    /// Reads a run from its report and its `log` (stdout, then stderr); `roots` are the working
    /// copy's root as the commands saw it (and as this process sees it), stripped from paths. `None`
    /// when the tests were not run.
    pub fn read(run: &TestRun, log: &str, roots: &[&str]) -> Option<Observed> {
        let relative = |text: &str| -> String {
            roots
                .iter()
                .filter(|root| !root.is_empty())
                .fold(text.to_owned(), |text, root| {
                    text.replace(&format!("{}/", root.trim_end_matches('/')), "")
                })
        };
        let log = relative(&testparse::strip_ansi(log));
        let (counts, mut tests) = match run {
            TestRun::NotRun => return None,
            // What looks like an error in the output of a run that passed (a test printing
            // compiler output) failed nothing.
            TestRun::Ran(report) if report.succeeded() => {
                return Some(Observed {
                    counts: Some((report.passed, report.failed)),
                    problems: Problems::default(),
                });
            }
            TestRun::NoResults => {
                let mut failure = Failure::named("the test command");
                failure.message = "printed no results pitcrew could read".into();
                (None, vec![failure])
            }
            TestRun::Ran(report) => {
                let failures = report
                    .failures
                    .iter()
                    .map(|f| Failure {
                        name: relative(&f.name),
                        file: f.file.as_deref().map(relative),
                        line: f.line,
                        message: relative(&f.message),
                    })
                    .collect();
                (Some((report.passed, report.failed)), failures)
            }
        };
        let compile_errors = compiler::parse(&log);
        let import_errors = testparse::import_errors(&log);
        let explained = !compile_errors.is_empty() || !import_errors.is_empty();
        let no_tests_ran = counts.is_none_or(|(passed, failed)| passed + failed == 0);
        if explained && no_tests_ran {
            // The build or the imports stopped the run: its failures are their echoes (cargo's
            // `build: could not compile`, a collection error, an unrecognised exit).
            tests.clear();
        } else {
            tests.retain(|t| {
                let echoes_import = import_errors.iter().any(|e| e.importer == t.name);
                let echoes_compile = t.file.is_some()
                    && compile_errors
                        .iter()
                        .any(|e| e.file == t.file && e.line.is_some() && e.line == t.line);
                !echoes_import && !echoes_compile
            });
        }
        let mut seen = BTreeSet::new();
        tests.retain(|t| seen.insert(t.name.clone()));
        if let Some((_, failed)) = counts
            && failed > 0
            && tests.is_empty()
            && !explained
        {
            // Counted, not named (the output was cut): still a failure, told apart by its count.
            tests.push(Failure::named(format!(
                "{failed} failing tests the output does not name"
            )));
        }
        Some(Observed {
            counts,
            problems: Problems {
                compile_errors,
                import_errors,
                tests,
            },
        })
    }

    /// Whether anything fails.
    pub fn fails(&self) -> bool {
        !self.problems.is_empty()
    }

    /// Whether the tests could all run: nothing failed to build or to import.
    fn ran_whole(&self) -> bool {
        self.counts.is_some() && self.problems.compile_errors.is_empty() && self.problems.import_errors.is_empty()
    }
}

/// The tests after the update compared with the tests before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comparison {
    /// Failing after the update and not before; everything failing after when there was no run
    /// before to compare with.
    pub broken: Problems,
    /// Failing before the update and after it.
    pub before_too: Problems,
    /// Failing before the update, not after (tests only when the tests after it all ran).
    pub fixed: Problems,
    /// Passed and failed tests after the update.
    pub counts: Option<(u64, u64)>,
    /// Whether there was a run before the update to compare with.
    pub compared: bool,
}

impl Comparison {
    pub fn new(before: Option<&Observed>, after: &Observed) -> Comparison {
        let Some(before) = before else {
            return Comparison {
                broken: after.problems.clone(),
                before_too: Problems::default(),
                fixed: Problems::default(),
                counts: after.counts,
                compared: false,
            };
        };
        let broken = after.problems.without(&before.problems);
        let before_too = after.problems.without(&broken);
        let mut fixed = before.problems.without(&after.problems);
        if !after.ran_whole() {
            // Tests that did not run are not fixed.
            fixed.tests.clear();
        }
        Comparison {
            broken,
            before_too,
            fixed,
            counts: after.counts,
            compared: true,
        }
    }

    /// Whether the update broke anything (or, with nothing to compare with, anything fails).
    pub fn update_broke_something(&self) -> bool {
        !self.broken.is_empty()
    }

    /// What the agent is told: only what the update broke, compile errors first, then the import
    /// errors, then the failing tests with their messages; what failed before too is counted, not
    /// shown.
    pub fn for_agent(&self) -> String {
        let mut out = String::new();
        if !self.compared {
            out.push_str(
                "(The tests could not be run on the code before the update: every failure is shown, some may be \
                 older than the update.)\n\n",
            );
        }
        let broken = &self.broken;
        if !broken.compile_errors.is_empty() {
            out.push_str(&format!(
                "The project no longer builds: {} compile {}.\n",
                broken.compile_errors.len(),
                plural(broken.compile_errors.len(), "error", "errors")
            ));
            for error in broken.compile_errors.iter().take(AGENT_FAILURES) {
                out.push_str(&format!(
                    "\n- {}{}\n",
                    error.message,
                    place(error.file.as_deref(), error.line)
                ));
            }
            out.push('\n');
        }
        if !broken.import_errors.is_empty() {
            out.push_str("What the tests need cannot be imported:\n");
            for error in &broken.import_errors {
                let what = match error.kind {
                    ImportKind::TestModule => format!("test module {}", error.importer),
                    ImportKind::Conftest => format!("conftest {}", error.importer),
                    ImportKind::Runner => format!("the test runner {}", error.importer),
                };
                out.push_str(&format!("\n- {what}: {}\n", error.message));
            }
            out.push('\n');
        }
        if !broken.tests.is_empty() {
            let failed = broken.tests.len();
            match (self.compared, self.counts) {
                (true, _) => out.push_str(&format!(
                    "{failed} {} that did not fail before the update:\n",
                    plural(failed, "test fails", "tests fail")
                )),
                (false, Some((passed, failed))) => out.push_str(&format!("{passed} passed, {failed} failed.\n")),
                (false, None) => {}
            }
            for failure in broken.tests.iter().take(AGENT_FAILURES) {
                out.push_str(&format!(
                    "\n- {}{}:\n{}\n",
                    failure.name,
                    place(failure.file.as_deref(), failure.line),
                    failure.message
                ));
            }
            if failed > AGENT_FAILURES {
                out.push_str(&format!("\n… and {} more.\n", failed - AGENT_FAILURES));
            }
        }
        let before = self.before_too.count();
        if before > 0 {
            out.push_str(&format!(
                "\n{before} other {} failed before the update too: {} not the update's doing, leave {}.\n",
                plural(before, "failure", "failures"),
                plural(before, "it is", "they are"),
                plural(before, "it", "them")
            ));
        }
        out.trim_end().to_owned()
    }

    /// The pull request's `**Tests:**` line for tests that fail after the update (`after_fix`: and
    /// after the agent's work on what it broke).
    pub fn headline(&self, after_fix: bool) -> String {
        if !self.update_broke_something() {
            return if after_fix {
                "**Tests:** failed on the update and pass after pitcrew adapted the code (below), but for what failed \
                 before the update too."
                    .to_owned()
            } else {
                "**Tests:** the update breaks nothing: what fails failed before it too (below).".to_owned()
            };
        }
        let broken = &self.broken;
        let mut parts = Vec::new();
        if !broken.compile_errors.is_empty() {
            let n = broken.compile_errors.len();
            parts.push(format!(
                "the project does not build ({n} compile {})",
                plural(n, "error", "errors")
            ));
        }
        for error in broken.import_errors.iter().filter(|e| e.kind == ImportKind::Runner) {
            parts.push(format!(
                "the test runner {} cannot be imported",
                markdown::code_span(&error.importer)
            ));
        }
        let modules = broken
            .import_errors
            .iter()
            .filter(|e| e.kind != ImportKind::Runner)
            .count();
        if modules > 0 {
            parts.push(format!(
                "{modules} test {} cannot be imported",
                plural(modules, "module", "modules")
            ));
        }
        if !broken.tests.is_empty() {
            let n = broken.tests.len();
            let counts = self
                .counts
                .map(|(passed, failed)| format!(" ({passed} passed, {failed} failed)"))
                .unwrap_or_default();
            parts.push(if self.compared {
                format!(
                    "{n} {} that did not fail before{counts}",
                    plural(n, "test fails", "tests fail")
                )
            } else {
                format!("{n} {}{counts}", plural(n, "test fails", "tests fail"))
            });
        }
        format!(
            "**Tests:** still fail after the update: {}. Review before merging.",
            parts.join("; ")
        )
    }

    /// The blocks below the headline: the compile and import errors the update caused, the tests
    /// it broke, what failed before it too, and what it fixed.
    pub fn details(&self) -> Vec<String> {
        let mut out = Vec::new();
        let broken = &self.broken;
        if !broken.compile_errors.is_empty() {
            let items: Vec<String> = broken
                .compile_errors
                .iter()
                .map(|e| {
                    let at = match (&e.file, e.line) {
                        (Some(file), Some(line)) => format!("{}: ", markdown::code_span(&format!("{file}:{line}"))),
                        (Some(file), None) => format!("{}: ", markdown::code_span(file)),
                        _ => String::new(),
                    };
                    format!("- {at}{}", markdown::code_span(&e.message))
                })
                .collect();
            out.push(format!("**Compile errors:**\n\n{}", capped(items)));
        }
        if !broken.import_errors.is_empty() {
            let items: Vec<String> = broken
                .import_errors
                .iter()
                .map(|e| {
                    format!(
                        "- {}: {}",
                        markdown::code_span(&e.importer),
                        markdown::code_span(&e.message)
                    )
                })
                .collect();
            out.push(format!("**Cannot be imported:**\n\n{}", capped(items)));
        }
        if !broken.tests.is_empty() {
            let label = if self.compared {
                "Broken by the update"
            } else {
                "Failing"
            };
            out.push(list(
                label,
                &broken
                    .tests
                    .iter()
                    .map(|t| markdown::code_span(&t.name))
                    .collect::<Vec<_>>(),
            ));
        }
        if !self.before_too.is_empty() {
            out.push(list("Failing before the update too", &self.before_too.names()));
        }
        if !self.fixed.is_empty() {
            out.push(list("Fixed by the update", &self.fixed.names()));
        }
        out
    }
}

/// ` at src/lib.rs:2`, or nothing.
fn place(file: Option<&str>, line: Option<u32>) -> String {
    match (file, line) {
        (Some(file), Some(line)) => format!(" at {file}:{line}"),
        (Some(file), None) => format!(" in {file}"),
        _ => String::new(),
    }
}

fn plural<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

/// `items` (list lines), the first [`MAX_SHOWN`] of them, the rest counted.
fn capped(items: Vec<String>) -> String {
    let more = items.len().saturating_sub(MAX_SHOWN);
    let mut text = items.into_iter().take(MAX_SHOWN).collect::<Vec<_>>().join("\n");
    if more > 0 {
        text.push_str(&format!("\n- and {more} more"));
    }
    text
}

/// `**Label (n):** a, b and 3 more`.
fn list(label: &str, names: &[String]) -> String {
    let shown = names.iter().take(MAX_SHOWN).cloned().collect::<Vec<_>>().join(", ");
    let more = match names.len().saturating_sub(MAX_SHOWN) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    format!("**{label} ({}):** {shown}{more}", names.len())
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::testparse::{Runner, TestReport};

    fn ran(passed: u64, failing: &[&str]) -> TestRun {
        let mut report = TestReport::new(Runner::Pytest);
        report.passed = passed;
        report.failed = failing.len() as u64;
        report.complete = true;
        report.failures = failing
            .iter()
            .map(|name| {
                let mut failure = Failure::named(*name);
                failure.message = format!("{name} failed");
                failure
            })
            .collect();
        TestRun::Ran(report)
    }

    fn observed(run: &TestRun, log: &str) -> Observed {
        Observed::read(run, log, &["/w/copy-1", "/w/copy-2"]).unwrap()
    }

    fn names(failures: &[Failure]) -> Vec<&str> {
        failures.iter().map(|f| f.name.as_str()).collect()
    }

    #[test]
    fn tests_are_told_apart_by_name_into_broken_failing_before_and_fixed() {
        let before = observed(&ran(8, &["test_old", "test_flaky_fixed"]), "");
        let after = observed(&ran(8, &["test_old", "test_new"]), "");
        let comparison = Comparison::new(Some(&before), &after);
        assert_eq!(names(&comparison.broken.tests), ["test_new"]);
        assert_eq!(names(&comparison.before_too.tests), ["test_old"]);
        assert_eq!(names(&comparison.fixed.tests), ["test_flaky_fixed"]);
        assert!(comparison.update_broke_something());

        let agent = comparison.for_agent();
        assert!(
            agent.starts_with("1 test fails that did not fail before the update:\n\n- test_new:\ntest_new failed"),
            "{agent}"
        );
        assert!(
            agent.ends_with("1 other failure failed before the update too: it is not the update's doing, leave it."),
            "{agent}"
        );
        assert!(!agent.contains("test_old"), "{agent}");

        assert_eq!(
            comparison.headline(false),
            "**Tests:** still fail after the update: 1 test fails that did not fail before (8 passed, 2 failed). Review before merging."
        );
        assert_eq!(
            comparison.details(),
            [
                "**Broken by the update (1):** `test_new`",
                "**Failing before the update too (1):** `test_old`",
                "**Fixed by the update (1):** `test_flaky_fixed`",
            ]
        );
    }

    #[test]
    fn failures_that_were_all_there_before_are_not_the_update_s() {
        let before = observed(&ran(3, &["test_colour"]), "");
        let after = observed(&ran(3, &["test_colour"]), "");
        let comparison = Comparison::new(Some(&before), &after);
        assert!(!comparison.update_broke_something());
        assert_eq!(
            comparison.headline(false),
            "**Tests:** the update breaks nothing: what fails failed before it too (below)."
        );
        assert_eq!(
            comparison.details(),
            ["**Failing before the update too (1):** `test_colour`"]
        );
        // The agent fixed what the update broke; what failed before still fails.
        assert_eq!(
            comparison.headline(true),
            "**Tests:** failed on the update and pass after pitcrew adapted the code (below), but for what failed \
             before the update too."
        );
    }

    #[test]
    fn without_a_run_before_everything_failing_is_the_update_s() {
        let after = observed(&ran(4, &["test_a"]), "");
        let comparison = Comparison::new(None, &after);
        assert_eq!(names(&comparison.broken.tests), ["test_a"]);
        assert!(!comparison.compared);
        let agent = comparison.for_agent();
        assert!(
            agent.starts_with(
                "(The tests could not be run on the code before the update: every failure is shown, some may be older \
                 than the update.)\n\n4 passed, 1 failed.\n\n- test_a:"
            ),
            "{agent}"
        );
        assert_eq!(comparison.details(), ["**Failing (1):** `test_a`"]);
    }

    #[test]
    fn a_compile_error_is_a_compile_error_not_zero_tests() {
        let log = include_str!("../testparse/samples/cargo_test_build_error.txt");
        let run = TestRun::Ran(testparse::parse(log, Some(Runner::Cargo)).unwrap());
        let before = observed(&ran(1, &[]), "");
        let after = observed(&run, log);
        // cargo's `build: could not compile` is the compile error's echo, not a failing test.
        assert_eq!(after.problems.tests, []);
        let comparison = Comparison::new(Some(&before), &after);
        assert_eq!(comparison.broken.compile_errors.len(), 1);
        assert_eq!(
            comparison.headline(false),
            "**Tests:** still fail after the update: the project does not build (1 compile error). Review before merging."
        );
        assert_eq!(
            comparison.details(),
            [
                "**Compile errors:**\n\n- `src/lib.rs:2`: ``error[E0425]: cannot find value `missing_value` in this scope``"
            ]
        );
        assert_eq!(
            comparison.for_agent(),
            "The project no longer builds: 1 compile error.\n\n- error[E0425]: cannot find value `missing_value` in this \
             scope at src/lib.rs:2"
        );
        // The same error before: the update broke nothing.
        let same = Comparison::new(Some(&observed(&run, log)), &after);
        assert!(!same.update_broke_something());
        assert_eq!(
            same.details(),
            ["**Failing before the update too (1):** compile error at `src/lib.rs:2`"]
        );
    }

    #[test]
    fn import_errors_are_import_errors_compared_across_working_copies() {
        let conftest = include_str!("../testparse/samples/pytest_conftest_import_error.txt");
        let log = |copy: &str| conftest.replace("/tmp/tp/pyproj", copy);
        // pytest printed no results: the run keeps the command's exit as its failure.
        let mut unread = TestReport::new(Runner::Pytest);
        unread.failures.push(Failure::named("python3 -m pytest -q -rA"));
        let run = TestRun::Ran(unread);
        let before = observed(&run, &log("/w/copy-1"));
        let after = observed(&run, &log("/w/copy-2"));
        assert_eq!(after.problems.tests, []);
        assert_eq!(after.problems.import_errors[0].importer, "tests/conftest.py");
        assert!(!Comparison::new(Some(&before), &after).update_broke_something());

        let after = observed(&run, include_str!("../testparse/samples/python_no_module.txt"));
        let comparison = Comparison::new(Some(&observed(&ran(2, &[]), "")), &after);
        assert_eq!(
            comparison.headline(false),
            "**Tests:** still fail after the update: the test runner `pytest` cannot be imported. Review before merging."
        );
        assert_eq!(
            comparison.for_agent(),
            "What the tests need cannot be imported:\n\n- the test runner pytest: No module named pytest"
        );
    }

    #[test]
    fn a_collection_error_beside_tests_that_ran_is_one_import_error() {
        let log = include_str!("../testparse/samples/pytest_import_errors.txt");
        let run = TestRun::Ran(testparse::parse(log, Some(Runner::Pytest)).unwrap());
        let after = observed(&run, log);
        assert_eq!(after.problems.tests, []);
        let comparison = Comparison::new(Some(&observed(&ran(3, &["test_fails"]), "")), &after);
        assert_eq!(
            comparison.headline(false),
            "**Tests:** still fail after the update: 2 test modules cannot be imported. Review before merging."
        );
        // `test_fails` did not run: it is not fixed.
        assert!(comparison.fixed.is_empty(), "{:?}", comparison.fixed);
        assert_eq!(
            comparison.details()[0],
            "**Cannot be imported:**\n\n- `tests/test_name.py`: `ImportError: cannot import name 'not_there' from 'json' \
             (/root/.pyenv/versions/3.11.7/lib/python3.11/json/__init__.py)`\n- `tests/test_needs.py`: \
             `ModuleNotFoundError: No module named 'requests_mock_missing'`"
        );
    }

    #[test]
    fn a_passing_run_fails_nothing_and_a_counted_failure_is_one() {
        let log = include_str!("../testparse/samples/cargo_test_build_error.txt");
        assert!(!observed(&ran(3, &[]), log).fails());
        let TestRun::Ran(mut report) = ran(3, &[]) else {
            unreachable!()
        };
        report.failed = 2;
        let counted = observed(&TestRun::Ran(report), "");
        assert_eq!(
            names(&counted.problems.tests),
            ["2 failing tests the output does not name"]
        );
    }

    #[test]
    fn tests_not_run_are_not_compared() {
        assert_eq!(Observed::read(&TestRun::NotRun, "", &[]), None);
        let unread = observed(&TestRun::NoResults, "");
        assert!(unread.fails());
        assert_eq!(names(&unread.problems.tests), ["the test command"]);
    }
}
