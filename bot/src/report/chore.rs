//! The texts of a dependency chore: the pull request's title and body (a table with one row per
//! change — the manifest updates, then every other change of the lockfiles with its kind: in
//! range, git commit, replaced, new, removed — the manifests left alone, the tests' result,
//! compared with the tests before the update when they fail, and, when the update broke them, what
//! the agent did), the commit message, and the answer to whoever asked for the chore.

use crate::chores::lock::{self, Change, ChangeKind};
use crate::chores::{HeldBack, Hold, Update, UpdateKind};
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
    /// The `[[chores.deps.rules]]` group it is for, if any (its title names it).
    pub group: Option<String>,
    pub major: bool,
    /// The manifest edits.
    pub updates: Vec<Update>,
    /// Every change of the lockfiles that no manifest edit above accounts for.
    pub lock: Vec<Change>,
    pub tests: TestOutcome,
    /// What the agent said it did, when the tests failed on the update.
    pub agent_summary: Option<String>,
    /// Updates the agent reverted (their names), from comparing the manifests after its run.
    pub reverted: Vec<String>,
    /// What could not be looked up for its ecosystems (a registry unreachable, a certificate
    /// refused): updates this pull request may be missing.
    pub unchecked: Vec<String>,
    /// Newer releases not proposed: they need a newer Rust or Python than the project declares, or
    /// are younger than `min_release_age`.
    pub held_back: Vec<HeldBack>,
    /// Manifests left as they were, one sentence each (a lockfile that could not be refreshed, a
    /// crate outside the workspace: `fuzz/Cargo.toml — outside the workspace …`).
    pub not_updated: Vec<String>,
}

fn ecosystem_words(ecosystems: &[Ecosystem]) -> String {
    match ecosystems {
        [one] => one.as_str().to_owned(),
        _ => "dependency".to_owned(),
    }
}

/// `chore(deps): update cargo dependencies` / `…: update cargo dependencies (major)`; with one
/// row, `update calcutil to 1.1.0` (a git dependency's short commit for its version).
pub fn title(pull: &ChorePull) -> String {
    let what = match &pull.group {
        Some(group) => group.clone(),
        None => ecosystem_words(&pull.ecosystems),
    };
    let single = match (pull.updates.as_slice(), pull.lock.as_slice()) {
        ([update], []) => Some((update.name.clone(), update.to.clone())),
        ([], [change]) => match &change.kind {
            ChangeKind::Updated { to, .. } | ChangeKind::Replaced { to, .. } => Some((change.name.clone(), to.clone())),
            ChangeKind::GitMoved { to, .. } => Some((change.name.clone(), lock::short_sha(to).to_owned())),
            ChangeKind::Alongside { .. } | ChangeKind::Added { .. } | ChangeKind::Removed { .. } => None,
        },
        _ => None,
    };
    match (pull.major, single) {
        (true, Some((name, to))) => format!("chore(deps): update {name} to {to} (major)"),
        (true, None) => format!("chore(deps): major {what} updates"),
        (false, Some((name, to))) => format!("chore(deps): update {name} to {to}"),
        (false, None) => format!("chore(deps): update {what} dependencies"),
    }
}

/// How many rows the pull request's table has.
fn rows(pull: &ChorePull) -> usize {
    pull.updates.len() + pull.lock.len()
}

fn kind_words(kind: UpdateKind) -> &'static str {
    match kind {
        UpdateKind::Patch => "patch",
        UpdateKind::Minor => "minor",
        UpdateKind::Major => "**major**",
    }
}

/// The table of the pull request's changes: its manifest updates, then its lockfiles' other
/// changes.
pub fn table(pull: &ChorePull) -> String {
    let mut out = String::from("| Package | Change | Kind | Where | Release notes |\n|---|---|---|---|---|\n");
    for u in &pull.updates {
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
    for change in &pull.lock {
        out.push_str(&lock_row(change));
    }
    out.trim_end().to_owned()
}

/// The packages the table of a chore pull request's `body` lists (each row's first cell, as
/// [`table`] writes it); empty when the body has no such table.
pub fn table_packages(body: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut in_table = false;
    for line in body.lines() {
        if line.starts_with("| Package | Change |") {
            in_table = true;
            continue;
        }
        if !in_table {
            continue;
        }
        if !line.starts_with('|') {
            break;
        }
        let Some(name) = line
            .strip_prefix("| `")
            .and_then(|rest| rest.split_once('`'))
            .map(|(name, _)| name)
        else {
            continue;
        };
        if !out.iter().any(|n| n == name) {
            out.push(name.to_owned());
        }
    }
    out
}

/// One lockfile change's row: what moved, its kind, which lockfile, and for a git dependency on
/// GitHub the comparison of its two commits.
fn lock_row(change: &Change) -> String {
    let code = markdown::code_cell;
    let (what, kind) = match &change.kind {
        ChangeKind::Updated { from, to } => (format!("{} → {}", code(from), code(to)), "lockfile"),
        ChangeKind::GitMoved { from, to, .. } => (
            format!("{} → {}", code(lock::short_sha(from)), code(lock::short_sha(to))),
            "git commit",
        ),
        ChangeKind::Replaced { from, to } => (format!("{} → {}", code(from), code(to)), "replaced (new major)"),
        ChangeKind::Alongside { version, beside } => {
            let beside: Vec<String> = beside.iter().map(|v| code(v)).collect();
            (
                format!("{} beside {}", code(version), beside.join(", ")),
                "added beside",
            )
        }
        ChangeKind::Added { version } => (code(version), "new"),
        ChangeKind::Removed { version } => (code(version), "removed"),
    };
    let place = if change.scope.is_empty() {
        "lockfile".to_owned()
    } else {
        format!("{} lockfile", code(&change.scope))
    };
    let notes = match &change.kind {
        ChangeKind::GitMoved { repository, from, to } => github_compare(repository, from, to)
            .map(|url| format!("[compare]({url})"))
            .unwrap_or_else(|| "—".to_owned()),
        _ => "—".to_owned(),
    };
    format!("| {} | {what} | {kind} | {place} | {notes} |\n", code(&change.name))
}

/// `https://github.com/o/r/compare/a...b` for a repository on GitHub whose owner, name and commits
/// are plain (no character a link could be bent with); else `None`.
fn github_compare(repository: &str, from: &str, to: &str) -> Option<String> {
    let path = repository
        .strip_prefix("https://github.com/")
        .or_else(|| repository.strip_prefix("ssh://git@github.com/"))?;
    let path = path.trim_end_matches('/').trim_end_matches(".git");
    let (owner, repo) = path.split_once('/')?;
    let plain = |part: &str| {
        !part.is_empty()
            && part != ".."
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    let sha = |s: &str| !s.is_empty() && s.len() <= 64 && s.chars().all(|c| c.is_ascii_hexdigit());
    (plain(owner) && plain(repo) && sha(from) && sha(to))
        .then(|| format!("https://github.com/{owner}/{repo}/compare/{from}...{to}"))
}

/// The pull request's body.
pub fn body(pull: &ChorePull, job_id: &str) -> String {
    let mut doc = Doc::new();
    doc.fixed(markdown::marker(job_id));
    let n = rows(pull);
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
    doc.cuttable(table(pull));
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
    let (young, toolchain): (Vec<&HeldBack>, Vec<&HeldBack>) =
        pull.held_back.iter().partition(|h| h.reason == Hold::Young);
    let instead = |h: &HeldBack| {
        h.instead
            .as_deref()
            .map(|v| format!(" ({} is proposed instead)", markdown::code_span(v)))
            .unwrap_or_default()
    };
    if !toolchain.is_empty() {
        let rust = toolchain.iter().any(|h| h.reason == Hold::Rust);
        let python = toolchain.iter().any(|h| h.reason == Hold::Python);
        let declared = match (rust, python) {
            (true, true) => "`rust-version` and Python",
            (true, false) => "`rust-version`",
            _ => "Python",
        };
        doc.fixed(format!(
            "**Held back** for the declared {declared} (raise it to take them):"
        ));
        let items: Vec<String> = toolchain
            .iter()
            .map(|h| {
                let (needs, declares) = match h.reason {
                    Hold::Rust => ("Rust", "this package declares `rust-version`"),
                    Hold::Python | Hold::Young => ("Python", "the requirement is for Python"),
                };
                format!(
                    "- {} {} needs {needs} {}; {declares} {}{}",
                    markdown::code_span(&h.name),
                    markdown::code_span(&h.version),
                    markdown::code_span(&h.needs),
                    markdown::code_span(&h.declared),
                    instead(h),
                )
            })
            .collect();
        doc.cuttable(items.join("\n"));
    }
    if !young.is_empty() {
        doc.fixed("**Not yet proposed**, younger than this repository's `min_release_age`:");
        let items: Vec<String> = young
            .iter()
            .map(|h| {
                format!(
                    "- {} {} waits until {} (`min_release_age` {}){}",
                    markdown::code_span(&h.name),
                    markdown::code_span(&h.version),
                    markdown::inline(&h.needs),
                    markdown::code_span(&h.declared),
                    instead(h),
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
    for change in &pull.lock {
        message.push_str(&format!("- {} {}\n", change.name, change.describe()));
    }
    message
}

/// The update list for the agent when the tests fail: the manifest updates, then the lockfiles'
/// other changes.
pub fn updates_for_prompt(updates: &[Update], lock: &[Change]) -> String {
    let lock_lines = lock.iter().map(|c| {
        let file = if c.scope.is_empty() {
            "the lockfile".to_owned()
        } else {
            format!("the lockfile of {}", c.scope)
        };
        format!("- {} {}: {} (in {file})", c.ecosystem.as_str(), c.name, c.describe())
    });
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
        .chain(lock_lines)
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

    /// A compatible Cargo pull request with nothing in it and passing tests; each test sets what
    /// it is about.
    fn empty_pull() -> ChorePull {
        ChorePull {
            branch: "pitcrew/deps-cargo".into(),
            ecosystems: vec![Ecosystem::Cargo],
            group: None,
            major: false,
            updates: Vec::new(),
            lock: Vec::new(),
            not_updated: Vec::new(),
            tests: TestOutcome::Passed { after_fix: false },
            agent_summary: None,
            reverted: Vec::new(),
            unchecked: Vec::new(),
            held_back: Vec::new(),
        }
    }

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

    fn change(name: &str, kind: ChangeKind) -> Change {
        Change {
            ecosystem: Ecosystem::Cargo,
            scope: String::new(),
            name: name.into(),
            kind,
        }
    }

    fn in_range(name: &str, from: &str, to: &str) -> Change {
        change(
            name,
            ChangeKind::Updated {
                from: from.into(),
                to: to.into(),
            },
        )
    }

    #[test]
    fn the_body_tabulates_the_updates_and_says_how_the_tests_went() {
        let pull = ChorePull {
            updates: vec![update(
                "fmtutil",
                "0.3.1",
                "0.3.4",
                UpdateKind::Minor,
                Some("Cargo.toml"),
            )],
            lock: vec![in_range("calcutil", "1.0.0", "1.1.0")],
            tests: TestOutcome::Passed { after_fix: true },
            agent_summary: Some("`fmt` changed its signature; adapted `src/lib.rs`.".into()),
            ..empty_pull()
        };
        assert_eq!(title(&pull), "chore(deps): update cargo dependencies");
        insta::assert_snapshot!(body(&pull, "9"), @r"
        <!-- pitcrew:job=9 -->

        pitcrew updated 2 cargo dependencies within compatible versions.

        | Package | Change | Kind | Where | Release notes |
        |---|---|---|---|---|
        | `fmtutil` | `0.3.1` → `0.3.4` | minor | `Cargo.toml` `dependencies` | [notes](https://github.com/o/r/releases) |
        | `calcutil` | `1.0.0` → `1.1.0` | lockfile | lockfile | — |

        **Tests:** failed on the update and pass after pitcrew adapted the code (below).

        ### What pitcrew changed

        `fmt` changed its signature; adapted `src/lib.rs`.

        Later runs update this pull request in place (branch `pitcrew/deps-cargo`), and close it once nothing is left to update.
        ");
        assert_eq!(
            commit_message(&pull),
            "chore(deps): update cargo dependencies\n\n- fmtutil 0.3.1 -> 0.3.4 (minor)\n- calcutil 1.0.0 -> 1.1.0 (lockfile, in range)\n"
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
            lock: Vec::new(),
            ..pull.clone()
        };
        assert_eq!(title(&major), "chore(deps): update calcutil to 2.0.0 (major)");
        let lockfile_only = ChorePull {
            updates: Vec::new(),
            ..pull
        };
        assert_eq!(title(&lockfile_only), "chore(deps): update calcutil to 1.1.0");
    }

    #[test]
    fn every_lockfile_change_is_a_row_of_its_kind_and_excluded_manifests_are_said() {
        let pubgrub = "https://github.com/astral-sh/pubgrub";
        let pull = ChorePull {
            lock: vec![
                in_range("anstream", "0.6.15", "0.6.18"),
                change(
                    "pubgrub",
                    ChangeKind::GitMoved {
                        repository: pubgrub.into(),
                        from: "73d6ecf5a4e4eb1c754b8c3255c4d31bdc266fdb".into(),
                        to: "06ec5a5f59ffaeb6cf5079c6cb184467da06c9db".into(),
                    },
                ),
                change(
                    "forked",
                    ChangeKind::GitMoved {
                        repository: "https://example.test/o/forked](javascript:x)".into(),
                        from: "0123456789".into(),
                        to: "abcdef0123".into(),
                    },
                ),
                change(
                    "rustix",
                    ChangeKind::Alongside {
                        version: "1.0.1".into(),
                        beside: vec!["0.38.44".into()],
                    },
                ),
                change(
                    "windows-sys",
                    ChangeKind::Replaced {
                        from: "0.52.0".into(),
                        to: "0.59.0".into(),
                    },
                ),
                change(
                    "wasi",
                    ChangeKind::Added {
                        version: "0.13.3+wasi-0.2.2".into(),
                    },
                ),
                change(
                    "instant",
                    ChangeKind::Removed {
                        version: "0.1.13".into(),
                    },
                ),
            ],
            not_updated: vec!["fuzz/Cargo.toml — outside the workspace (`libfuzzer-sys` 0.4.7 → 0.4.8)".into()],
            ..empty_pull()
        };
        assert_eq!(title(&pull), "chore(deps): update cargo dependencies");
        insta::assert_snapshot!(body(&pull, "9"), @r"
        <!-- pitcrew:job=9 -->

        pitcrew updated 7 cargo dependencies within compatible versions.

        | Package | Change | Kind | Where | Release notes |
        |---|---|---|---|---|
        | `anstream` | `0.6.15` → `0.6.18` | lockfile | lockfile | — |
        | `pubgrub` | `73d6ecf` → `06ec5a5` | git commit | lockfile | [compare](https://github.com/astral-sh/pubgrub/compare/73d6ecf5a4e4eb1c754b8c3255c4d31bdc266fdb...06ec5a5f59ffaeb6cf5079c6cb184467da06c9db) |
        | `forked` | `0123456` → `abcdef0` | git commit | lockfile | — |
        | `rustix` | `1.0.1` beside `0.38.44` | added beside | lockfile | — |
        | `windows-sys` | `0.52.0` → `0.59.0` | replaced (new major) | lockfile | — |
        | `wasi` | `0.13.3+wasi-0.2.2` | new | lockfile | — |
        | `instant` | `0.1.13` | removed | lockfile | — |

        **Tests:** pass on the updated dependencies.

        **Not updated:**

        - fuzz/Cargo.toml — outside the workspace (`libfuzzer-sys` 0.4.7 → 0.4.8)

        Later runs update this pull request in place (branch `pitcrew/deps-cargo`), and close it once nothing is left to update.
        ");
        let git_only = ChorePull {
            lock: pull.lock[1..2].to_vec(),
            ..pull.clone()
        };
        assert_eq!(title(&git_only), "chore(deps): update pubgrub to 06ec5a5");
        assert!(
            commit_message(&git_only)
                .ends_with("- pubgrub git 73d6ecf -> 06ec5a5 (https://github.com/astral-sh/pubgrub)\n"),
            "{}",
            commit_message(&git_only)
        );
        assert_eq!(
            updates_for_prompt(&[], &pull.lock[4..5]),
            "- cargo windows-sys: 0.52.0 -> 0.59.0 (replaced: a new major) (in the lockfile)"
        );
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
            lock: vec![in_range("chrono", "0.4.30", "0.4.38")],
            tests: TestOutcome::Failing {
                comparison: Box::new(Comparison::new(Some(&before), &after)),
                after_fix: true,
            },
            ..empty_pull()
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
    fn the_table_is_read_back_for_its_packages() {
        let pull = ChorePull {
            updates: vec![update(
                "serde",
                "1.0.100",
                "1.0.250",
                UpdateKind::Patch,
                Some("Cargo.toml"),
            )],
            lock: vec![in_range("calcutil", "1.0.0", "1.1.0")],
            ..empty_pull()
        };
        assert_eq!(table_packages(&body(&pull, "9")), ["serde", "calcutil"]);
        assert!(table_packages("no table here\n| `x` | y |").is_empty());
    }

    #[test]
    fn the_body_says_what_could_not_be_looked_up() {
        let pull = ChorePull {
            lock: vec![in_range("calcutil", "1.0.0", "1.1.0")],
            // As the registry client says them.
            unchecked: vec![
                "could not reach crates.io for `fmtutil`: invalid peer certificate: UnknownIssuer".into(),
                "crates.io answered 503 for `serde`".into(),
            ],
            ..empty_pull()
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
            reason: Hold::Rust,
            name: "serde".into(),
            version: version.into(),
            needs: "1.80".into(),
            declared: "1.70".into(),
            major: false,
            instead: instead.map(str::to_owned),
        };
        let pull = ChorePull {
            updates: vec![update(
                "serde",
                "1.0.100",
                "1.0.250",
                UpdateKind::Patch,
                Some("Cargo.toml"),
            )],
            held_back: vec![held("1.0.300", Some("1.0.250")), held("2.0.0", None)],
            ..empty_pull()
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

    #[test]
    fn the_body_says_which_releases_wait_for_min_release_age() {
        let held = |reason: Hold, version: &str, instead: Option<&str>| HeldBack {
            reason,
            name: "serde".into(),
            version: version.into(),
            needs: if reason == Hold::Young {
                "2026-12-05 10:00 UTC"
            } else {
                "1.80"
            }
            .into(),
            declared: if reason == Hold::Young { "3d" } else { "1.70" }.into(),
            major: false,
            instead: instead.map(str::to_owned),
        };
        let pull = ChorePull {
            updates: vec![update(
                "serde",
                "1.0.100",
                "1.0.250",
                UpdateKind::Patch,
                Some("Cargo.toml"),
            )],
            held_back: vec![
                held(Hold::Young, "1.0.260", Some("1.0.250")),
                held(Hold::Rust, "1.0.300", Some("1.0.250")),
            ],
            ..empty_pull()
        };
        let body = body(&pull, "9");
        assert!(
            body.contains(
                "**Held back** for the declared `rust-version` (raise it to take them):\n\n\
                 - `serde` `1.0.300` needs Rust `1.80`; this package declares `rust-version` `1.70` (`1.0.250` is \
                 proposed instead)\n\n\
                 **Not yet proposed**, younger than this repository's `min_release_age`:\n\n\
                 - `serde` `1.0.260` waits until 2026-12-05 10:00 UTC (`min_release_age` `3d`) (`1.0.250` is \
                 proposed instead)\n"
            ),
            "{body}"
        );
        let grouped = ChorePull {
            group: Some("aws".into()),
            ..pull
        };
        assert_eq!(title(&grouped), "chore(deps): update serde to 1.0.250");
        let two = ChorePull {
            updates: [grouped.updates.clone(), grouped.updates.clone()].concat(),
            ..grouped
        };
        assert_eq!(title(&two), "chore(deps): update aws dependencies");
    }
}
