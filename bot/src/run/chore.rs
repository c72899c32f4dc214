//! `pitcrew chore`: the dependency chore on a local checkout, without GitHub (as Renovate's local
//! platform does). The scan and plan (`--dry-run`, which changes nothing): each ecosystem's
//! manifests in the working tree, the registries the operator's `[chores]` names, the checkout's own
//! `.github/pitcrew.toml` policy (`[chores.deps]`), and the pull requests a run would open, each
//! with the table it would carry. Without `--dry-run` the updates are made on a new local branch,
//! as `pitcrew run` works: the manifests edited, the lockfiles refreshed in the sandbox (the one
//! step with network), the tests run there, and the result committed as the repository's user.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use secrecy::SecretString;
use serde::Serialize;

use crate::beneath::Beneath;
use crate::chores::plan::{self, Found};
use crate::chores::{RegistryClient, Update, lock};
use crate::config::Config;
use crate::config::deps::Ecosystem;
use crate::config::repo::{REPO_CONFIG_PATH, RepoConfig, RepoConfigProblem};
use crate::github::{Auth, ClientOptions, GithubClient};
use crate::handlers::chore::{lock_rows, planned_pulls};
use crate::handlers::session::run_tests_with_output;
use crate::prompts::Prompts;
use crate::report::baseline::Observed;
use crate::report::chore::{self as text, ChorePull, TestOutcome};
use crate::session::{AgentRun, AgentSession, NetworkStep, SessionError, image};
use crate::workspace::{LocalRepo, WorkspaceError};

/// The longest a lockfile refresh may take.
const LOCK_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// The largest `.github/pitcrew.toml` read.
const MAX_REPO_CONFIG: u64 = 1024 * 1024;

/// What `pitcrew chore --dry-run` was asked.
#[derive(Debug, Clone)]
pub struct ChoreOptions {
    pub repo: PathBuf,
    /// Only these ecosystems (within the repository's `[chores.deps] ecosystems`); empty: all of
    /// those.
    pub ecosystems: Vec<Ecosystem>,
    /// For GitHub Actions' releases (their tags, through GitHub's API); without it the Actions
    /// ecosystem is not looked up, and the plan says so.
    pub github_token: Option<SecretString>,
}

#[derive(Debug, thiserror::Error)]
pub enum ChoreError {
    #[error("{path}: {source}")]
    Repo { path: PathBuf, source: io::Error },
    #[error("{REPO_CONFIG_PATH} is invalid:\n{}", list(.0))]
    RepoConfig(Vec<RepoConfigProblem>),
    #[error("{0}")]
    Client(String),
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
}

fn list(problems: &[RepoConfigProblem]) -> String {
    problems.iter().map(|p| format!("  {p}")).collect::<Vec<_>>().join("\n")
}

/// One ecosystem's scan.
#[derive(Debug, Clone, Serialize)]
pub struct Scanned {
    pub ecosystem: Ecosystem,
    pub dependencies: usize,
    pub updates: usize,
    pub has_lockfile: bool,
    /// What could not be looked up, or why the ecosystem was not.
    pub problems: Vec<String>,
}

/// One pull request the chore would open.
#[derive(Debug, Clone, Serialize)]
pub struct PlannedPull {
    pub branch: String,
    pub title: String,
    pub major: bool,
    pub updates: Vec<Update>,
    /// The table its description would carry (Markdown), before the lockfile refresh.
    pub table: String,
    /// Releases not proposed, one sentence each.
    pub held_back: Vec<String>,
}

/// The dry run's answer.
#[derive(Debug, Clone, Serialize)]
pub struct DryRun {
    pub repo: PathBuf,
    pub ecosystems: Vec<Scanned>,
    pub pulls: Vec<PlannedPull>,
}

/// Scans and plans; changes nothing.
pub async fn dry_run(config: &Config, options: &ChoreOptions) -> Result<DryRun, ChoreError> {
    let repo_config = read_repo_config(&options.repo)?;
    let deps = &repo_config.deps;
    let policy = deps.policy();
    let wanted: Vec<Ecosystem> = Ecosystem::ALL
        .into_iter()
        .filter(|e| deps.ecosystems.as_ref().is_none_or(|set| set.contains(e)))
        .filter(|e| options.ecosystems.is_empty() || options.ecosystems.contains(e))
        .collect();
    let registry =
        RegistryClient::new(config.chores.registries.clone()).map_err(|e| ChoreError::Client(e.to_string()))?;
    // Only the Actions ecosystem asks GitHub; without a token it is left out rather than asked
    // anonymously under GitHub's 60 requests an hour.
    let token = options.github_token.clone();
    let github = GithubClient::new(
        &config.github.api_url,
        Auth::Token(token.clone().unwrap_or_else(|| SecretString::from(String::new()))),
        ClientOptions::default(),
    )
    .map_err(|e| ChoreError::Client(e.to_string()))?;
    let mut found: BTreeMap<Ecosystem, Found> = BTreeMap::new();
    let mut ecosystems = Vec::new();
    for ecosystem in wanted {
        if ecosystem == Ecosystem::Actions && token.is_none() {
            let dependencies = plan::scan(ecosystem, &options.repo).map_or(0, |d| d.len());
            if dependencies > 0 {
                ecosystems.push(Scanned {
                    ecosystem,
                    dependencies,
                    updates: 0,
                    has_lockfile: false,
                    problems: vec![
                        "GitHub Actions' releases are their tags on GitHub: set GITHUB_TOKEN to look them up"
                            .to_owned(),
                    ],
                });
            }
            continue;
        }
        let f = plan::find(ecosystem, &options.repo, &registry, &github, &policy).await;
        if f.dependencies > 0 || !f.problems.is_empty() {
            ecosystems.push(Scanned {
                ecosystem,
                dependencies: f.dependencies,
                updates: f.updates.len(),
                has_lockfile: f.has_lockfile,
                problems: f.problems.clone(),
            });
            found.insert(ecosystem, f);
        }
    }
    let pulls = planned_pulls(&found, deps.group, &policy)
        .into_iter()
        .map(|pull| PlannedPull {
            title: text::title(&pull),
            table: text::table(&pull),
            held_back: pull
                .held_back
                .iter()
                .map(|h| {
                    format!(
                        "{} {}: needs {}, the project declares {}{}",
                        h.name,
                        h.version,
                        h.needs,
                        h.declared,
                        h.instead
                            .as_deref()
                            .map(|v| format!(" ({v} proposed instead)"))
                            .unwrap_or_default()
                    )
                })
                .collect(),
            branch: pull.branch,
            major: pull.major,
            updates: pull.updates,
        })
        .collect();
    Ok(DryRun {
        repo: options.repo.clone(),
        ecosystems,
        pulls,
    })
}

/// The checkout's `.github/pitcrew.toml`, read below the checkout without following a symlink; the
/// defaults when there is none.
fn read_repo_config(root: &Path) -> Result<RepoConfig, ChoreError> {
    let beneath = Beneath::open(root).map_err(|source| ChoreError::Repo {
        path: root.to_owned(),
        source,
    })?;
    match beneath.read_regular(Path::new(REPO_CONFIG_PATH), MAX_REPO_CONFIG) {
        Ok(bytes) => RepoConfig::parse(&String::from_utf8_lossy(&bytes)).map_err(ChoreError::RepoConfig),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(RepoConfig::default()),
        Err(source) => Err(ChoreError::Repo {
            path: root.join(REPO_CONFIG_PATH),
            source,
        }),
    }
}

/// The dry run as the terminal shows it.
pub fn render(run: &DryRun) -> String {
    let mut out = render_scan(run);
    if run.pulls.is_empty() {
        out.push_str("\nNothing to update.\n");
    }
    for pull in &run.pulls {
        out.push_str(&format!("\n{} — {}\n\n", pull.branch, pull.title));
        if pull.updates.is_empty() {
            out.push_str("(the lockfile refresh alone)\n");
        } else {
            out.push_str(&pull.table);
            out.push('\n');
        }
        for held in &pull.held_back {
            out.push_str(&format!("  held back: {held}\n"));
        }
    }
    out.push_str(
        "\nDry run: nothing was changed. A chore run also refreshes the lockfiles, which may move more \
         than the manifests' updates, and runs the tests.\n",
    );
    out
}

/// What was scanned, per ecosystem.
fn render_scan(run: &DryRun) -> String {
    let mut out = format!("Scanned {} (the working tree):\n", run.repo.display());
    if run.ecosystems.is_empty() {
        out.push_str("  no dependencies found\n");
    }
    for scanned in &run.ecosystems {
        out.push_str(&format!(
            "  {}: {} dependencies, {} updates{}\n",
            scanned.ecosystem.as_str(),
            scanned.dependencies,
            scanned.updates,
            if scanned.has_lockfile {
                ", a lockfile to refresh"
            } else {
                ""
            }
        ));
        for problem in &scanned.problems {
            out.push_str(&format!("    ! {problem}\n"));
        }
    }
    out
}

/// How the project's tests ended on the updated dependencies.
#[derive(Debug, Clone, Serialize)]
pub struct TestsResult {
    /// `passed`, `failing` or `not_run` (no test command pitcrew could find or run).
    pub status: &'static str,
    pub passed: Option<u64>,
    pub failed: Option<u64>,
    /// What fails: the failing tests, or the build's and imports' errors.
    pub failures: Vec<String>,
}

/// What applying the updates came to.
#[derive(Debug, Clone, Serialize)]
pub struct Applied {
    /// The new branch; `None` when there was nothing to update.
    pub branch: Option<String>,
    pub commit: Option<String>,
    pub title: Option<String>,
    /// The manifest updates made.
    pub updates: Vec<Update>,
    /// Updates that could not be made, one sentence each.
    pub not_updated: Vec<String>,
    /// The table of the commit: its manifest updates, then the lockfiles' other changes.
    pub table: String,
    pub tests: Option<TestsResult>,
    /// What failed after the edits (the refresh, stopping the sandbox, the commit); the change is
    /// then left in the working tree on the new branch.
    pub error: Option<String>,
    /// The plan the updates came from.
    pub plan: DryRun,
}

/// Makes the planned updates on a new branch `pitcrew/deps` of the checkout (which must be clean):
/// every pull request's updates together (the majors too, when the policy proposes them), the
/// lockfiles refreshed in full, the tests run, and the result committed as the repository's user.
pub async fn apply(config: &Config, prompts: &Prompts, options: &ChoreOptions) -> Result<Applied, ChoreError> {
    let repo = LocalRepo::open(&options.repo)?;
    repo.ensure_clean()?;
    let root = repo.root().to_owned();
    let plan = dry_run(
        config,
        &ChoreOptions {
            repo: root.clone(),
            ..options.clone()
        },
    )
    .await?;
    let updates: Vec<Update> = plan.pulls.iter().flat_map(|p| p.updates.clone()).collect();
    // The ecosystems the commit touches: those with updates, and those with a lockfile to refresh
    // (what their requirements already allow).
    let ecosystems: BTreeSet<Ecosystem> = plan
        .ecosystems
        .iter()
        .filter(|s| s.has_lockfile || s.updates > 0)
        .map(|s| s.ecosystem)
        .collect();
    let mut applied = Applied {
        branch: None,
        commit: None,
        title: None,
        updates: Vec::new(),
        not_updated: Vec::new(),
        table: String::new(),
        tests: None,
        error: None,
        plan,
    };
    if ecosystems.is_empty() {
        return Ok(applied);
    }
    let branch = repo.create_branch("pitcrew/deps")?;
    applied.branch = Some(branch.clone());
    for update in updates {
        match plan::apply(&root, &update) {
            Ok(()) => applied.updates.push(update),
            Err(problem) => applied
                .not_updated
                .push(format!("{} {} was not updated: {problem}", update.name, update.to)),
        }
    }
    let commands: Vec<(String, String)> = ecosystems
        .iter()
        .flat_map(|e| plan::lock_commands(*e, &root, &config.chores.registries, lock::Refresh::Full))
        .collect();
    let before: Vec<_> = ecosystems.iter().map(|e| (*e, plan::snapshot(*e, &root))).collect();
    let id = crate::run::run_id();
    let settings = image::checkout_config(&root).apply(config);
    let started = AgentSession::start(AgentRun {
        config,
        settings: &settings,
        prompts,
        model: None,
        sandbox_id: id.clone(),
        root: root.clone(),
        run_dir: repo.git_dir().join("pitcrew").join("runs").join(&id),
        network_step: (!commands.is_empty()).then_some(NetworkStep {
            commands,
            network: config.chores.lock_network,
            timeout: LOCK_TIMEOUT,
        }),
        index: None,
        cancel: tokio_util::sync::CancellationToken::new(),
    })
    .await;
    let session = match started {
        Ok(session) => session,
        Err(error) => {
            applied.error = Some(refresh_failed(&error));
            applied.table = edits_table(&applied);
            return Ok(applied);
        }
    };
    let (run, output) = run_tests_with_output(&session).await;
    let observed = Observed::read(&run, &output, &[&root.display().to_string(), session.shown_root()]);
    // Nothing of the sandbox may run while git reads the working tree: a sandbox that could not be
    // stopped may still hold a process racing it, so nothing is committed then.
    if let Err(error) = session.stop().await {
        applied.error = Some(format!(
            "the sandbox could not be stopped ({error}), so nothing was committed: a process in it could still be \
             changing the working tree"
        ));
        return Ok(applied);
    }
    let lock = lock_rows(&root, &before, &applied.updates);
    let outcome = match &observed {
        None => TestOutcome::NotRun,
        Some(after) if !after.fails() => TestOutcome::Passed { after_fix: false },
        Some(after) => TestOutcome::Failing {
            comparison: Box::new(crate::report::baseline::Comparison::new(None, after)),
            after_fix: false,
        },
    };
    applied.tests = Some(tests_result(observed.as_ref()));
    let pull = ChorePull {
        branch,
        ecosystems: ecosystems.into_iter().collect(),
        group: None,
        major: applied
            .updates
            .iter()
            .all(|u| u.kind == crate::chores::UpdateKind::Major)
            && !applied.updates.is_empty(),
        updates: applied.updates.clone(),
        lock,
        tests: outcome,
        agent_summary: None,
        reverted: Vec::new(),
        unchecked: Vec::new(),
        held_back: Vec::new(),
        not_updated: applied.not_updated.clone(),
    };
    applied.title = Some(text::title(&pull));
    applied.table = text::table(&pull);
    match repo.commit_all(&text::commit_message(&pull), config.agent.max_new_file_bytes, &[], None) {
        Ok(commit) => applied.commit = commit.commit,
        Err(error) => applied.error = Some(format!("the commit failed: {error}")),
    }
    Ok(applied)
}

/// The table of the manifest edits alone, when the refresh failed before anything else ran.
fn edits_table(applied: &Applied) -> String {
    let pull = ChorePull {
        branch: applied.branch.clone().unwrap_or_default(),
        ecosystems: Vec::new(),
        group: None,
        major: false,
        updates: applied.updates.clone(),
        lock: Vec::new(),
        tests: TestOutcome::NotRun,
        agent_summary: None,
        reverted: Vec::new(),
        unchecked: Vec::new(),
        held_back: Vec::new(),
        not_updated: Vec::new(),
    };
    text::table(&pull)
}

fn refresh_failed(error: &SessionError) -> String {
    format!(
        "the lockfile refresh failed, so nothing was committed (the manifest edits are in the working tree): {error}"
    )
}

fn tests_result(observed: Option<&Observed>) -> TestsResult {
    let Some(observed) = observed else {
        return TestsResult {
            status: "not_run",
            passed: None,
            failed: None,
            failures: Vec::new(),
        };
    };
    let problems = &observed.problems;
    let mut failures: Vec<String> = problems.tests.iter().map(|t| t.name.clone()).collect();
    failures.extend(problems.compile_errors.iter().map(|e| match (&e.file, e.line) {
        (Some(file), Some(line)) => format!("{file}:{line}: {}", e.message),
        (Some(file), None) => format!("{file}: {}", e.message),
        _ => e.message.clone(),
    }));
    failures.extend(
        problems
            .import_errors
            .iter()
            .map(|e| format!("{}: {}", e.importer, e.message)),
    );
    TestsResult {
        status: if observed.fails() { "failing" } else { "passed" },
        passed: observed.counts.map(|(passed, _)| passed),
        failed: observed.counts.map(|(_, failed)| failed),
        failures,
    }
}

/// What applying came to, as the terminal shows it.
pub fn render_applied(applied: &Applied) -> String {
    let Some(branch) = &applied.branch else {
        return format!(
            "{}\nNothing to update: no branch was made.\n",
            render_scan(&applied.plan)
        );
    };
    let mut out = render_scan(&applied.plan);
    out.push_str(&format!(
        "\nOn the new branch {branch}: {}\n\n{}\n",
        applied.title.as_deref().unwrap_or("the updates"),
        applied.table
    ));
    for problem in &applied.not_updated {
        out.push_str(&format!("  ! {problem}\n"));
    }
    if let Some(tests) = &applied.tests {
        match tests.status {
            "passed" => out.push_str(&format!(
                "Tests: passed{}\n",
                tests.passed.map(|n| format!(" ({n})")).unwrap_or_default()
            )),
            "failing" => out.push_str(&format!("Tests: failing: {}\n", tests.failures.join(", "))),
            _ => out.push_str("Tests: not run (no test command pitcrew could find)\n"),
        }
    }
    match (&applied.commit, &applied.error) {
        (_, Some(error)) => out.push_str(&format!("Not committed: {error}\n")),
        (Some(commit), None) => out.push_str(&format!("Committed {}.\n", &commit[..commit.len().min(12)])),
        (None, None) => out.push_str("Nothing changed, so nothing was committed.\n"),
    }
    out
}
