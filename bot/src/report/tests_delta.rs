//! The test delta: the project's tests before and after the change, compared by counts and by the
//! names of failing tests — what newly fails, what was fixed, what still fails — and the rule the
//! runner applies before pushing: a change that makes a previously passing test fail is a regression.

use std::collections::BTreeSet;

use crate::testparse::{Failure, TestReport};

use super::markdown;

/// Names shown per list; the rest are counted.
const MAX_NAMES: usize = 10;

/// One run of the tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestRun {
    /// The tests were not run.
    NotRun,
    /// The test command ran but printed no results pitcrew could read: most often the project no
    /// longer builds.
    NoResults,
    Ran(TestReport),
}

impl TestRun {
    fn report(&self) -> Option<&TestReport> {
        match self {
            TestRun::Ran(report) => Some(report),
            _ => None,
        }
    }
}

/// The tests before and after a change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestDelta {
    pub before: TestRun,
    pub after: TestRun,
    /// Failing after, not before.
    pub newly_failing: Vec<String>,
    /// Failing before, not after (with results after).
    pub fixed: Vec<String>,
    /// Failing before and after.
    pub still_failing: Vec<String>,
    /// Failing after when there is nothing to compare with (no results before).
    pub failing: Vec<String>,
}

impl TestDelta {
    pub fn compare(before: TestRun, after: TestRun) -> TestDelta {
        let names = |run: &TestRun| -> Vec<String> {
            let mut seen = BTreeSet::new();
            run.report()
                .map(|r| r.failures.iter().map(|f| f.name.clone()).collect::<Vec<_>>())
                .unwrap_or_default()
                .into_iter()
                .filter(|name| seen.insert(name.clone()))
                .collect()
        };
        let (was, now) = (names(&before), names(&after));
        let mut delta = TestDelta {
            newly_failing: Vec::new(),
            fixed: Vec::new(),
            still_failing: Vec::new(),
            failing: Vec::new(),
            before,
            after,
        };
        match (delta.before.report(), delta.after.report()) {
            (Some(_), Some(_)) => {
                let was_set: BTreeSet<&String> = was.iter().collect();
                let now_set: BTreeSet<&String> = now.iter().collect();
                delta.newly_failing = now.iter().filter(|n| !was_set.contains(n)).cloned().collect();
                delta.still_failing = now.iter().filter(|n| was_set.contains(n)).cloned().collect();
                delta.fixed = was.iter().filter(|n| !now_set.contains(n)).cloned().collect();
            }
            (None, Some(_)) => delta.failing = now,
            (Some(_), None) | (None, None) => {}
        }
        delta
    }

    /// True when a test that passed before fails after, as far as the results tell: a failing
    /// test that was not failing before (pitcrew cannot tell "passed" from "did not exist", and a
    /// new failing test is no reason to push either), more failures than before, or no results
    /// at all after a run that had passing tests (the change broke the build).
    pub fn is_regression(&self) -> bool {
        match (&self.before, &self.after) {
            (TestRun::Ran(before), TestRun::Ran(after)) => {
                !self.newly_failing.is_empty() || after.failed > before.failed
            }
            (TestRun::Ran(before), TestRun::NoResults) => before.passed > 0,
            _ => false,
        }
    }

    /// True when the tests ran after the change and nothing failed.
    pub fn passes_after(&self) -> bool {
        self.after.report().is_some_and(TestReport::succeeded)
    }

    /// Failures after the change (with their file and line where the runner said).
    pub fn failures_after(&self) -> &[Failure] {
        self.after.report().map(|r| r.failures.as_slice()).unwrap_or_default()
    }

    /// Whether a failure after the change is new (else it was failing before, or nothing is known).
    pub fn is_new_failure(&self, name: &str) -> bool {
        self.newly_failing.iter().any(|n| n == name)
    }

    /// One line: `12 passed, 0 failed (before: 10 passed, 2 failed)`.
    pub fn one_line(&self) -> String {
        let counts = |run: &TestRun| match run {
            TestRun::NotRun => "not run".to_owned(),
            TestRun::NoResults => "no results".to_owned(),
            TestRun::Ran(r) => format!("{} passed, {} failed", r.passed, r.failed),
        };
        match &self.before {
            TestRun::NotRun => counts(&self.after),
            before => format!("{} (before: {})", counts(&self.after), counts(before)),
        }
    }

    /// A small markdown table of the counts, then the failing tests by category.
    pub fn render(&self) -> String {
        let row = |label: &str, run: &TestRun| match run {
            TestRun::NotRun => format!("| {label} | not run | | |"),
            TestRun::NoResults => format!("| {label} | no results (the tests did not run to the end) | | |"),
            TestRun::Ran(r) => {
                let partial = if r.complete { "" } else { " (from partial output)" };
                format!("| {label}{partial} | {} | {} | {} |", r.passed, r.failed, r.skipped)
            }
        };
        let mut out = String::from("| Tests | Passed | Failed | Skipped |\n|---|---:|---:|---:|\n");
        if self.before != TestRun::NotRun {
            out.push_str(&row("Before", &self.before));
            out.push('\n');
        }
        out.push_str(&row("After", &self.after));
        let lists = [
            ("Newly failing", &self.newly_failing),
            ("Fixed", &self.fixed),
            ("Still failing", &self.still_failing),
            ("Failing", &self.failing),
        ];
        let mut first = true;
        for (label, names) in lists {
            if names.is_empty() {
                continue;
            }
            out.push_str(if first { "\n\n" } else { "\n" });
            first = false;
            let shown: Vec<String> = names.iter().take(MAX_NAMES).map(|n| markdown::code_span(n)).collect();
            let more = match names.len().saturating_sub(MAX_NAMES) {
                0 => String::new(),
                n => format!(" and {n} more"),
            };
            out.push_str(&format!("- **{label} ({}):** {}{more}", names.len(), shown.join(", ")));
        }
        if let (TestRun::Ran(before), TestRun::Ran(after)) = (&self.before, &self.after)
            && after.total() < before.total()
        {
            out.push_str(&format!(
                "\n\n⚠️ {} fewer tests ran after the change than before.",
                before.total() - after.total()
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testparse::Runner;

    pub(crate) fn report(passed: u64, failing: &[&str]) -> TestReport {
        TestReport {
            runner: Runner::Cargo,
            passed,
            failed: failing.len() as u64,
            skipped: 1,
            failures: failing
                .iter()
                .map(|name| Failure {
                    name: (*name).to_owned(),
                    file: None,
                    line: None,
                    message: String::new(),
                })
                .collect(),
            complete: true,
        }
    }

    #[test]
    fn categories_and_regression() {
        let delta = TestDelta::compare(
            TestRun::Ran(report(10, &["a", "b"])),
            TestRun::Ran(report(11, &["b", "c"])),
        );
        assert_eq!(delta.newly_failing, ["c"]);
        assert_eq!(delta.fixed, ["a"]);
        assert_eq!(delta.still_failing, ["b"]);
        assert!(delta.is_regression());
        assert!(delta.is_new_failure("c") && !delta.is_new_failure("b"));

        let fixed = TestDelta::compare(TestRun::Ran(report(10, &["a"])), TestRun::Ran(report(11, &[])));
        assert!(!fixed.is_regression());
        assert!(fixed.passes_after());
        assert_eq!(fixed.fixed, ["a"]);

        // Still failing, nothing new: not a regression, but not passing either.
        let same = TestDelta::compare(TestRun::Ran(report(10, &["a"])), TestRun::Ran(report(10, &["a"])));
        assert!(!same.is_regression());
        assert!(!same.passes_after());
    }

    #[test]
    fn unnamed_failures_and_broken_builds_count() {
        // More failures than before, though the output named none of them.
        let mut after = report(8, &[]);
        after.failed = 2;
        let delta = TestDelta::compare(TestRun::Ran(report(10, &[])), TestRun::Ran(after));
        assert!(delta.newly_failing.is_empty());
        assert!(delta.is_regression());
        // The tests no longer produce results: the change broke the build.
        let broken = TestDelta::compare(TestRun::Ran(report(10, &[])), TestRun::NoResults);
        assert!(broken.is_regression());
        // Nothing passed before: nothing to break.
        assert!(!TestDelta::compare(TestRun::Ran(report(0, &["x"])), TestRun::NoResults).is_regression());
        // No baseline: failures are listed, not judged.
        let fresh = TestDelta::compare(TestRun::NotRun, TestRun::Ran(report(3, &["x"])));
        assert!(!fresh.is_regression());
        assert_eq!(fresh.failing, ["x"]);
        assert!(!TestDelta::compare(TestRun::NoResults, TestRun::Ran(report(0, &["x"]))).is_regression());
    }

    #[test]
    fn renders_a_table_with_lists() {
        let many: Vec<String> = (1..=12).map(|n| format!("t{n}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let delta = TestDelta::compare(TestRun::Ran(report(20, &["old|pipe"])), TestRun::Ran(report(7, &many)));
        insta::assert_snapshot!(delta.render(), @r"
        | Tests | Passed | Failed | Skipped |
        |---|---:|---:|---:|
        | Before | 20 | 1 | 1 |
        | After | 7 | 12 | 1 |

        - **Newly failing (12):** `t1`, `t2`, `t3`, `t4`, `t5`, `t6`, `t7`, `t8`, `t9`, `t10` and 2 more
        - **Fixed (1):** `old|pipe`

        ⚠️ 2 fewer tests ran after the change than before.
        ");
        assert_eq!(delta.one_line(), "7 passed, 12 failed (before: 20 passed, 1 failed)");

        let broken = TestDelta::compare(TestRun::Ran(report(5, &[])), TestRun::NoResults);
        insta::assert_snapshot!(broken.render(), @r"
        | Tests | Passed | Failed | Skipped |
        |---|---:|---:|---:|
        | Before | 5 | 0 | 1 |
        | After | no results (the tests did not run to the end) | | |
        ");
        let only_after = TestDelta::compare(TestRun::NotRun, TestRun::Ran(report(4, &[])));
        assert_eq!(only_after.one_line(), "4 passed, 0 failed");
    }
}
