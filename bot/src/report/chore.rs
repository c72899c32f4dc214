//! The texts of a dependency chore: the pull request's title and body (a table of the updates —
//! package, from → to, kind, release notes — the tests' result, compared with the tests before the
//! update when they fail, and, when the update broke them, what the agent did), the commit
//! message, and the answer to whoever asked for the chore.

use crate::chores::{HeldBack, Toolchain, Update, UpdateKind};
use crate::config::deps::Ecosystem;

use super::baseline::Comparison;
use super::markdown::{self, BODY_LIMIT, Doc};

/// How the project's tests ended on the updated dependencies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestOutcome {
    /// They pass (`after_fix`: only after the agent changed the code).
    Passed { after_fix: bool },
    /// Something fails after the update, compared with the tests before it; `after_fix`: after the
    /// agent's work on what the update broke (not run when it broke nothing).
    Failing {
        comparison: Box<Comparison>,
        after_fix: bool,
    },
    /// The project has no test command pitcrew could find or run.
    NotRun,
}

/// One pull request of a chore run.
#[derive(Debug, Clone, PartialEq)]
pub struct ChorePull {
    pub branch: String,
    /// The ecosystems in it (one, unless the repository groups them all).
    pub ecosystems: Vec<Ecosystem>,
    pub major: bool,
    pub updates: Vec<Update>,
    pub tests: TestOutcome,
    /// What the agent said it did, when the tests failed on the update.
    pub agent_summary: Option<String>,
    /// Updates the agent reverted (their names), from comparing the manifests after its run.
    pub reverted: Vec<String>,
    /// What could not be looked up for its ecosystems (a registry unreachable, a certificate
    /// refused): updates this pull request may be missing.
    pub unchecked: Vec<String>,
    /// Newer releases not proposed because they need a newer Rust or Python than the project
    /// declares.
    pub held_back: Vec<HeldBack>,
    /// Manifests left as they were, one sentence each (a lockfile that could not be refreshed).
    pub not_updated: Vec<String>,
}

fn ecosystem_words(ecosystems: &[Ecosystem]) -> String {
    match ecosystems {
        [one] => one.as_str().to_owned(),
        _ => "dependency".to_owned(),
    }
}

/// `chore(deps): update cargo dependencies` / `…: update cargo dependencies (major)`.
pub fn title(pull: &ChorePull) -> String {
    let what = ecosystem_words(&pull.ecosystems);
    let count = pull.updates.len();
    match (pull.major, count) {
        (true, 1) => format!(
            "chore(deps): update {} to {} (major)",
            pull.updates[0].name, pull.updates[0].to
        ),
        (true, _) => format!("chore(deps): major {what} updates"),
        (false, 1) => format!("chore(deps): update {} to {}", pull.updates[0].name, pull.updates[0].to),
        (false, _) => format!("chore(deps): update {what} dependencies"),
    }
}

fn kind_words(kind: UpdateKind) -> &'static str {
    match kind {
        UpdateKind::Lockfile => "lockfile",
        UpdateKind::Patch => "patch",
        UpdateKind::Minor => "minor",
        UpdateKind::Major => "**major**",
    }
}

/// The table of updates.
pub fn table(updates: &[Update]) -> String {
    let mut out = String::from("| Package | Change | Kind | Where | Release notes |\n|---|---|---|---|---|\n");
    for u in updates {
        let place = match (&u.manifest, &u.section) {
            (Some(manifest), Some(section)) => {
                format!("{} `{}`", markdown::code_cell(manifest), markdown::cell(section))
            }
            (Some(manifest), None) => markdown::code_cell(manifest),
            (None, _) => "lockfile".to_owned(),
        };
        let notes = match &u.notes_url {
            Some(url) if url.starts_with("https://") || url.starts_with("http://") => {
                format!("[notes]({})", url.replace(' ', "%20").replace(')', "%29"))
            }
            _ => "—".to_owned(),
        };
        out.push_str(&format!(
            "| {} | {} → {} | {} | {place} | {notes} |\n",
            markdown::code_cell(&u.name),
            markdown::code_cell(&u.from),
            markdown::code_cell(&u.to),
            kind_words(u.kind),
        ));
    }
    out.trim_end().to_owned()
}

/// The pull request's body.
pub fn body(pull: &ChorePull, job_id: &str) -> String {
    let mut doc = Doc::new();
    doc.fixed(markdown::marker(job_id));
    let n = pull.updates.len();
    doc.fixed(format!(
        "pitcrew updated {n} {} {}{}.",
        ecosystem_words(&pull.ecosystems),
        if n == 1 { "dependency" } else { "dependencies" },
        if pull.major {
            " across major versions: read the release notes before merging"
        } else {
            " within compatible versions"
        }
    ));
    doc.cuttable(table(&pull.updates));
    let tests = match &pull.tests {
        TestOutcome::Passed { after_fix: false } => "**Tests:** pass on the updated dependencies.".to_owned(),
        TestOutcome::Passed { after_fix: true } => {
            "**Tests:** failed on the update and pass after pitcrew adapted the code (below).".to_owned()
        }
        TestOutcome::Failing { comparison, after_fix } => comparison.headline(*after_fix),
        TestOutcome::NotRun => "**Tests:** not run (no test command was found); review before merging.".to_owned(),
    };
    doc.fixed(tests);
    if let TestOutcome::Failing { comparison, .. } = &pull.tests {
        for block in comparison.details() {
            doc.cuttable(block);
        }
    }
    if !pull.unchecked.is_empty() {
        let n = pull.unchecked.len();
        doc.fixed(format!(
            "**Not checked:** {n} {} could not be looked up, so this pull request may be missing \
             their updates:",
            if n == 1 { "dependency" } else { "dependencies" }
        ));
        let items: Vec<String> = pull
            .unchecked
            .iter()
            .map(|p| format!("- {}", markdown::inline(p)))
            .collect();
        doc.cuttable(items.join("\n"));
    }
    if !pull.held_back.is_empty() {
        let rust = pull.held_back.iter().any(|h| h.toolchain == Toolchain::Rust);
        let python = pull.held_back.iter().any(|h| h.toolchain == Toolchain::Python);
        let declared = match (rust, python) {
            (true, true) => "`rust-version` and Python",
            (true, false) => "`rust-version`",
            _ => "Python",
        };
        doc.fixed(format!(
            "**Held back** for the declared {declared} (raise it to take them):"
        ));
        let items: Vec<String> = pull
            .held_back
            .iter()
            .map(|h| {
                let instead = h
                    .instead
                    .as_deref()
                    .map(|v| format!(" ({} is proposed instead)", markdown::code_span(v)))
                    .unwrap_or_default();
                let (needs, declares) = match h.toolchain {
                    Toolchain::Rust => ("Rust", "this package declares `rust-version`"),
                    Toolchain::Python => ("Python", "the requirement is for Python"),
                };
                format!(
                    "- {} {} needs {needs} {}; {declares} {}{instead}",
                    markdown::code_span(&h.name),
                    markdown::code_span(&h.version),
                    markdown::code_span(&h.needs),
                    markdown::code_span(&h.declared),
                )
            })
            .collect();
        doc.cuttable(items.join("\n"));
    }
    if !pull.not_updated.is_empty() {
        doc.fixed("**Not updated:**");
        let items: Vec<String> = pull
            .not_updated
            .iter()
            .map(|sentence| format!("- {}", markdown::inline(sentence)))
            .collect();
        doc.cuttable(items.join("\n"));
    }
    if !pull.reverted.is_empty() {
        let names: Vec<String> = pull.reverted.iter().map(|n| markdown::code_span(n)).collect();
        doc.fixed(format!(
            "Reverted because they could not be made to work: {}.",
            names.join(", ")
        ));
    }
    if let Some(summary) = &pull.agent_summary {
        doc.cuttable(format!(
            "### What pitcrew changed\n\n{}",
            markdown::prose(summary.trim())
        ));
    }
    doc.fixed(format!(
        "Later runs update this pull request in place (branch {}), and close it once nothing is left to update.",
        markdown::code_span(&pull.branch)
    ));
    doc.render(BODY_LIMIT)
}

/// The commit message: the title, then one line per update.
pub fn commit_message(pull: &ChorePull) -> String {
    let mut message = title(pull);
    message.push_str("\n\n");
    for u in &pull.updates {
        message.push_str(&format!("- {} {} -> {} ({})\n", u.name, u.from, u.to, u.kind.as_str()));
    }
    message
}

/// The update list for the agent when the tests fail.
pub fn updates_for_prompt(updates: &[Update]) -> String {
    updates
        .iter()
        .map(|u| {
            let place = u.manifest.as_deref().unwrap_or("the lockfile");
            let notes = u
                .notes_url
                .as_deref()
                .map(|n| format!(", release notes: {n}"))
                .unwrap_or_default();
            format!(
                "- {} {}: {} -> {} ({}, in {place}{notes})",
                u.ecosystem.as_str(),
                u.name,
                u.from,
                u.to,
                u.kind.as_str()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What a person who asked for the chore is told: the pull requests, or that nothing needed doing.
/// `waiting`: the limit of open chore pull requests and the branches whose new pull request waits
/// for it.
pub fn answer(
    opened: &[(String, u64, bool)],
    problems: &[String],
    waiting: Option<(u32, &[String])>,
    job_id: &str,
) -> String {
    let mut doc = Doc::new();
    doc.fixed(markdown::marker(job_id));
    let waits = waiting.is_some_and(|(_, branches)| !branches.is_empty());
    if opened.is_empty() && waits {
        doc.fixed("**pitcrew · chore deps:** no pull request opened this time.");
    } else if opened.is_empty() {
        doc.fixed("**pitcrew · chore deps:** every dependency is up to date under this repository's policy.");
    } else {
        let items: Vec<String> = opened
            .iter()
            .map(|(title, number, updated)| {
                format!(
                    "- #{number} {} ({})",
                    markdown::inline(title),
                    if *updated { "updated" } else { "opened" }
                )
            })
            .collect();
        doc.fixed(format!("**pitcrew · chore deps:**\n\n{}", items.join("\n")));
    }
    if let Some((max, branches)) = waiting
        && !branches.is_empty()
    {
        let names: Vec<String> = branches.iter().map(|b| markdown::code_span(b)).collect();
        doc.fixed(format!(
            "Waiting: {} — {max} chore pull request{} may be open at once (`max_open_prs`); a later run opens it \
             once one is merged or closed.",
            names.join(", "),
            if max == 1 { "" } else { "s" }
        ));
    }
    if !problems.is_empty() {
        let items: Vec<String> = problems.iter().map(|p| format!("- {}", markdown::inline(p))).collect();
        doc.cuttable(format!("Not checked:\n\n{}", items.join("\n")));
    }
    doc.render(BODY_LIMIT)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(name: &str, from: &str, to: &str, kind: UpdateKind, manifest: Option<&str>) -> Update {
        Update {
            ecosystem: Ecosystem::Cargo,
            name: name.into(),
            manifest: manifest.map(str::to_owned),
            section: manifest.map(|_| "dependencies".to_owned()),
            from: from.into(),
            to: to.into(),
            kind,
            new_requirement: manifest.map(|_| to.to_owned()),
            notes_url: (kind == UpdateKind::Minor).then(|| "https://github.com/o/r/releases".to_owned()),
            marker: None,
        }
    }

    #[test]
    fn the_body_tabulates_the_updates_and_says_how_the_tests_went() {
        let pull = ChorePull {
            branch: "pitcrew/deps-cargo".into(),
            ecosystems: vec![Ecosystem::Cargo],
            major: false,
            updates: vec![
                update("calcutil", "1.0.0", "1.1.0", UpdateKind::Lockfile, None),
                update("fmtutil", "0.3.1", "0.3.4", UpdateKind::Minor, Some("Cargo.toml")),
            ],
            tests: TestOutcome::Passed { after_fix: true },
            agent_summary: Some("`fmt` changed its signature; adapted `src/lib.rs`.".into()),
            reverted: Vec::new(),
            unchecked: Vec::new(),
            held_back: Vec::new(),
            not_updated: Vec::new(),
        };
        assert_eq!(title(&pull), "chore(deps): update cargo dependencies");
        insta::assert_snapshot!(body(&pull, "9"), @r"
        <!-- pitcrew:job=9 -->

        pitcrew updated 2 cargo dependencies within compatible versions.

        | Package | Change | Kind | Where | Release notes |
        |---|---|---|---|---|
        | `calcutil` | `1.0.0` → `1.1.0` | lockfile | lockfile | — |
        | `fmtutil` | `0.3.1` → `0.3.4` | minor | `Cargo.toml` `dependencies` | [notes](https://github.com/o/r/releases) |

        **Tests:** failed on the update and pass after pitcrew adapted the code (below).

        ### What pitcrew changed

        `fmt` changed its signature; adapted `src/lib.rs`.

        Later runs update this pull request in place (branch `pitcrew/deps-cargo`), and close it once nothing is left to update.
        ");
        assert_eq!(
            commit_message(&pull),
            "chore(deps): update cargo dependencies\n\n- calcutil 1.0.0 -> 1.1.0 (lockfile)\n- fmtutil 0.3.1 -> 0.3.4 (minor)\n"
        );
        let major = ChorePull {
            major: true,
            updates: vec![update(
                "calcutil",
                "1.1.0",
                "2.0.0",
                UpdateKind::Major,
                Some("Cargo.toml"),
            )],
            ..pull
        };
        assert_eq!(title(&major), "chore(deps): update calcutil to 2.0.0 (major)");
    }

    #[test]
    fn the_body_tells_what_the_update_broke_from_what_failed_before_it() {
        use crate::report::TestRun;
        use crate::report::baseline::Observed;
        use crate::testparse::{Failure, Runner, TestReport};

        let run = |passed: u64, failing: &[&str]| {
            let mut report = TestReport::new(Runner::Cargo);
            report.passed = passed;
            report.failed = failing.len() as u64;
            report.failures = failing.iter().map(|name| Failure::named(*name)).collect();
            Observed::read(&TestRun::Ran(report), "", &[]).unwrap_or_else(|| unreachable!("the tests ran"))
        };
        let before = run(5, &["tests::colour"]);
        let after = run(4, &["tests::colour", "tests::parses_dates"]);
        let pull = ChorePull {
            branch: "pitcrew/deps-cargo".into(),
            ecosystems: vec![Ecosystem::Cargo],
            major: false,
            updates: vec![update("chrono", "0.4.30", "0.4.38", UpdateKind::Lockfile, None)],
            tests: TestOutcome::Failing {
                comparison: Box::new(Comparison::new(Some(&before), &after)),
                after_fix: true,
            },
            agent_summary: None,
            reverted: Vec::new(),
            unchecked: Vec::new(),
            held_back: Vec::new(),
            not_updated: Vec::new(),
        };
        insta::assert_snapshot!(body(&pull, "9"), @r"
        <!-- pitcrew:job=9 -->

        pitcrew updated 1 cargo dependency within compatible versions.

        | Package | Change | Kind | Where | Release notes |
        |---|---|---|---|---|
        | `chrono` | `0.4.30` → `0.4.38` | lockfile | lockfile | — |

        **Tests:** still fail after the update: 1 test fails that did not fail before (4 passed, 2 failed). Review before merging.

        **Broken by the update (1):** `tests::parses_dates`

        **Failing before the update too (1):** `tests::colour`

        Later runs update this pull request in place (branch `pitcrew/deps-cargo`), and close it once nothing is left to update.
        ");
    }

    #[test]
    fn the_body_says_what_could_not_be_looked_up() {
        let pull = ChorePull {
            branch: "pitcrew/deps-cargo".into(),
            ecosystems: vec![Ecosystem::Cargo],
            major: false,
            updates: vec![update("calcutil", "1.0.0", "1.1.0", UpdateKind::Lockfile, None)],
            tests: TestOutcome::Passed { after_fix: false },
            agent_summary: None,
            reverted: Vec::new(),
            // As the registry client says them.
            unchecked: vec![
                "could not reach crates.io for `fmtutil`: invalid peer certificate: UnknownIssuer".into(),
                "crates.io answered 503 for `serde`".into(),
            ],
            held_back: Vec::new(),
            not_updated: Vec::new(),
        };
        let body = body(&pull, "9");
        assert!(
            body.contains(
                "**Not checked:** 2 dependencies could not be looked up, so this pull request may be missing their \
                 updates:\n\n- could not reach crates.io for `fmtutil`: invalid peer certificate: UnknownIssuer\n- \
                 crates.io answered 503 for `serde`"
            ),
            "{body}"
        );
    }

    #[test]
    fn the_body_says_what_was_held_back_for_the_rust_version() {
        let held = |version: &str, instead: Option<&str>| HeldBack {
            toolchain: Toolchain::Rust,
            name: "serde".into(),
            version: version.into(),
            needs: "1.80".into(),
            declared: "1.70".into(),
            major: false,
            instead: instead.map(str::to_owned),
        };
        let pull = ChorePull {
            branch: "pitcrew/deps-cargo".into(),
            ecosystems: vec![Ecosystem::Cargo],
            major: false,
            updates: vec![update(
                "serde",
                "1.0.100",
                "1.0.250",
                UpdateKind::Patch,
                Some("Cargo.toml"),
            )],
            tests: TestOutcome::Passed { after_fix: false },
            agent_summary: None,
            reverted: Vec::new(),
            unchecked: Vec::new(),
            held_back: vec![held("1.0.300", Some("1.0.250")), held("2.0.0", None)],
            not_updated: Vec::new(),
        };
        let body = body(&pull, "9");
        assert!(
            body.contains(
                "**Held back** for the declared `rust-version` (raise it to take them):\n\n\
                 - `serde` `1.0.300` needs Rust `1.80`; this package declares `rust-version` `1.70` (`1.0.250` is \
                 proposed instead)\n\
                 - `serde` `2.0.0` needs Rust `1.80`; this package declares `rust-version` `1.70`\n"
            ),
            "{body}"
        );
        assert_eq!(
            held("1.0.300", Some("1.0.250")).to_string(),
            "`serde` 1.0.300 needs Rust 1.80; this package declares rust-version 1.70 (1.0.250 is proposed instead)"
        );
    }
}
