//! `pitcrew chore --dry-run`: the dependency chore's scan and plan on a local checkout, without
//! GitHub (as Renovate's local platform does): each ecosystem's manifests in the working tree, the
//! registries the operator's `[chores]` names, the checkout's own `.github/pitcrew.toml` policy
//! (`[chores.deps]`), and the pull requests a run would open, each with the table it would carry.
//! Nothing is changed: the lockfile refresh, the tests and the agent happen when a chore applies
//! the updates.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use secrecy::SecretString;
use serde::Serialize;

use crate::beneath::Beneath;
use crate::chores::RegistryClient;
use crate::chores::plan::{self, Found};
use crate::config::Config;
use crate::config::deps::Ecosystem;
use crate::config::repo::{REPO_CONFIG_PATH, RepoConfig, RepoConfigProblem};
use crate::github::{Auth, ClientOptions, GithubClient};
use crate::handlers::chore::planned_pulls;
use crate::report::chore as text;

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
    pub updates: Vec<crate::chores::Update>,
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
