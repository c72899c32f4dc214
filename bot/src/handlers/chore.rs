//! `chore deps`: keep a repository's dependencies current. On the default branch's head, each
//! enabled ecosystem's manifests are scanned and its registry asked for newer versions; the
//! policy (`[chores.deps]`) picks the updates, grouped into pull requests (one per ecosystem by
//! default, majors apart, and one for each named group of `[[chores.deps.rules]]`). For each pull request a fresh working copy gets the manifest edits on
//! the host (not those of a crate the workspace excludes), the lockfile refresh in the sandbox
//! (with network for that step only, as the operator allows; the whole lockfile for the compatible
//! updates, only what the edits need for the majors, so that the two pull requests merge in either
//! order), and the tests; if the tests fail, they are run on the untouched base too (once per run,
//! only then: the baseline), and the agent gets what the update broke — not what failed before it
//! too — and the updates, and adapts the code or reverts the update it cannot make work; when the
//! update broke nothing, the agent is not run. The lockfiles' changes are compared before and after
//! ([`crate::chores::lock`]), one row each. Only the files the edits, the refresh and the agent
//! changed are committed, as the bot, force-pushed to `pitcrew/deps-<ecosystem>` and opened as a
//! pull request, or the existing one is updated; pull requests of earlier runs whose updates are
//! no longer needed are closed. A run that finds nothing to do posts nothing (unless someone
//! asked). The packages ignored by `@agent ignore` and the boxes ticked on the dependency
//! dashboard ([`super::dashboard`]) are read when a run starts; with `[chores.deps] dashboard` the
//! run rewrites that issue at its end. `@agent rebase` runs the chore for its pull request's group
//! alone; so does a rule group's own schedule for that group, and the repository's schedule (or a
//! ticked box) leaves such a group's pull requests alone.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::agent::StopReason;
use crate::beneath::Beneath;
use crate::chores::HeldBack;
use crate::chores::lock::{self, Change};
use crate::chores::plan::{self, Found};
use crate::chores::python;
use crate::chores::{RegistryClient, Update, UpdateKind};
use crate::config::deps::{Ecosystem, Policy};
use crate::config::repo::{DepsChore, DepsGrouping, EffectiveSettings, Reviewer};
use crate::github::{CheckConclusion, IssueNumber, NewPull, PullRequest, PullUpdate};
use crate::jobs::Finish;
use crate::prompts::Template;
use crate::report::baseline::{Comparison, Observed};
use crate::report::chore::{self as text, ChorePull, TestOutcome};
use crate::report::dashboard as text_dashboard;
use crate::session::{AgentRun, AgentSession, NetworkStep, SessionError, Toolset};
use crate::triggers::JobSource;
use crate::triggers::PackageName;
use crate::workspace::mirror::{Mirror, RemoteRepo, Target};
use crate::workspace::scope::TreeState;
use crate::workspace::{CommitIdentity, LocalRepo, WorkspaceError};

use super::dashboard::{self, Dashboard};
use super::record::{ChoreDetail, ChorePullRequest, Detail, EcosystemPlan, JobRecord, Summary};
use super::session::{Spent, agent_run, run_dir, run_tests_with_output};
use super::{HandlerError, JobEnv};

/// The longest a lockfile refresh may take.
const LOCK_TIMEOUT: Duration = Duration::from_secs(15 * 60);
/// The prefix of every branch a dependency chore pushes.
pub(super) const BRANCH_PREFIX: &str = "pitcrew/deps";

/// One pull request to make: its branch and the manifest updates that go into it.
#[derive(Debug, Clone)]
struct Group {
    branch: String,
    ecosystems: Vec<Ecosystem>,
    /// The rule's group name, for a `[[chores.deps.rules]]` group; `None` for an ecosystem's (or
    /// every ecosystem's) pull request.
    name: Option<String>,
    major: bool,
    updates: Vec<Update>,
    /// What could not be looked up for its ecosystems: updates this pull request may miss.
    unchecked: Vec<String>,
    /// Releases held back (for the package's toolchain, or too young to propose).
    held_back: Vec<HeldBack>,
}

/// Which of the chore's pull requests a run makes (and may close).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Scope {
    /// Every one: someone asked (`@agent chore deps`, the Action's workflow).
    Everything,
    /// Every one but those of the rule groups with a schedule of their own: the repository's
    /// schedule fired, or a box was ticked on the dashboard.
    Unscheduled,
    /// A rule group's own (compatible and majors'): its schedule fired.
    Group(String),
    /// One pull request's: `@agent rebase` on it.
    Branch(String),
}

impl Scope {
    /// Whether a run of this scope makes (or closes) the pull request of `branch`, given the rule
    /// groups with a schedule of their own.
    fn covers(&self, branch: &str, named: &[String], scheduled: &BTreeSet<String>) -> bool {
        let group = group_of(branch, named);
        match self {
            Scope::Everything => true,
            Scope::Unscheduled => group.is_none_or(|g| !scheduled.contains(g)),
            Scope::Group(name) => group == Some(name.as_str()),
            Scope::Branch(only) => branch == only,
        }
    }

    /// Whether a run of this scope sees every pull request, and so may rewrite the dashboard.
    fn whole(&self) -> bool {
        matches!(self, Scope::Everything | Scope::Unscheduled)
    }
}

/// The rule group (of `named`) whose pull request `branch` is: `pitcrew/deps-<group>` or
/// `pitcrew/deps-<group>-major`.
fn group_of<'a>(branch: &str, named: &'a [String]) -> Option<&'a str> {
    let rest = branch.strip_prefix(BRANCH_PREFIX)?.strip_prefix('-')?;
    let name = rest.strip_suffix("-major").unwrap_or(rest);
    named.iter().find(|n| *n == name).map(String::as_str)
}

/// The chore, from its request to its pull requests.
pub async fn run(env: &JobEnv) -> Result<(Finish, Spent), HandlerError> {
    let scope = match &env.request.source {
        JobSource::Schedule { group: Some(group), .. } => Scope::Group(group.clone()),
        JobSource::Schedule { group: None, .. } | JobSource::Dashboard => Scope::Unscheduled,
        _ => Scope::Everything,
    };
    run_chore(env, scope).await
}

/// `rebase` on a dependency pull request: its group made again on the default branch's head now
/// and force-pushed (or the pull request closed when nothing is left for it); the other groups
/// and the dashboard are left for the next run.
pub async fn rebase(env: &JobEnv) -> Result<(Finish, Spent), HandlerError> {
    let pull = dashboard::chore_pull(env, "rebase").await?;
    run_chore(env, Scope::Branch(pull.head.branch)).await
}

/// The chore run over the pull requests of `scope`.
async fn run_chore(env: &JobEnv, scope: Scope) -> Result<(Finish, Spent), HandlerError> {
    // A schedule tells nobody; a box ticked on the dashboard is answered by the dashboard itself.
    let asked = !matches!(env.request.source, JobSource::Schedule { .. } | JobSource::Dashboard)
        && env.request.subject.number().is_some();
    let repo_config = env.repo_config().await?;
    let settings = repo_config.apply(env.config());
    let deps = &repo_config.deps;
    let registry = RegistryClient::new(env.config().chores.registries.clone())
        .map_err(|error| HandlerError::Other(error.to_string()))?;
    let token = env.github.token().await?;
    let remote = RemoteRepo {
        url: super::parse_clone_url(&env.request.repo.clone_url)?,
        full_name: env.repo.to_string(),
    };
    let mirror = env.services.mirrors.prepare(&remote, &token, &[]).await?;

    // What the dashboard records: the packages ignored by command, the waiting branches asked for.
    let dashboard = dashboard::find(env).await?;
    let ledger = dashboard.as_ref().map(Dashboard::ledger).unwrap_or_default();
    let ignored = ledger.still_ignored();
    let (base, found) = find_updates(env, &mirror, &registry, deps, &ignored).await?;
    let mut problems: Vec<String> = found.values().flat_map(|f| f.problems.clone()).collect();
    // Lookups that failed (a registry unreachable, a certificate refused) leave the run
    // incomplete: it may not end in a plain success.
    let unchecked = problems.len();
    record_plan(env, &base, &found, &problems).await;

    let open = open_chore_pulls(env).await?;
    let chore = ChoreRun {
        env,
        deps,
        settings: &settings,
        mirror: &mirror,
        remote: &remote,
        token: &token,
        base: &base,
        baselines: Default::default(),
        asked_for: ledger.asked_for(),
    };
    let mut groups = groups(&found, deps.group, &deps.policy());
    // A run makes and closes only the pull requests of its scope: a rebase its own, a group's
    // schedule that group's, the others every one but the groups with a schedule of their own.
    let named: Vec<String> = deps.rules.iter().filter_map(|r| r.group.clone()).collect();
    let scheduled: BTreeSet<String> = deps.policy().group_schedules().into_keys().collect();
    groups.retain(|g| scope.covers(&g.branch, &named, &scheduled));
    let mut closable = open.clone();
    closable.retain(|p| scope.covers(&p.head.branch, &named, &scheduled));
    let delivered = match deliver(&chore, &groups, &open, &mut problems).await? {
        Delivery::Done(delivered) => delivered,
        Delivery::Stopped(spent) => {
            return Ok((Finish::Cancelled("stopped before the chore finished".into()), spent));
        }
    };
    let closed = close_superseded(env, &closable, &found, &delivered.wanted, deps.group, &named).await?;
    // Boxes ticked under "Ignored" were read: the record is rewritten without them.
    let unignored = ledger.ignored.iter().any(|e| e.ticked);
    if scope.whole() && (deps.dashboard || unignored) {
        let state = text_dashboard::RunState {
            open: open
                .iter()
                .filter(|p| !closed.contains(&p.number.0))
                .map(|p| {
                    let title = delivered
                        .pulls
                        .iter()
                        .find(|(_, n, _)| *n == p.number.0)
                        .map_or(p.title.clone(), |(t, _, _)| t.clone());
                    (p.number.0, title, p.head.branch.clone())
                })
                .chain(delivered.opened.iter().cloned())
                .collect(),
            waiting: delivered.waiting.clone(),
            max_open_prs: deps.max_open_prs,
            failed: problems.clone(),
            ignored,
        };
        let trigger = env.trigger(&repo_config);
        let body = if deps.dashboard {
            text_dashboard::render(&state, &trigger)
        } else {
            text_dashboard::with_ignored(dashboard.as_ref().map(|d| d.body.as_str()), &state.ignored, &trigger)
        };
        if let Err(error) = dashboard::write(env, dashboard.as_ref(), &body).await {
            tracing::warn!(%error, "the dependency dashboard could not be written");
            env.note(format!("the dependency dashboard could not be written: {error}"));
        }
    }
    report_run(env, asked, base, delivered, closed, problems, unchecked).await
}

/// Scans the default branch's head for each enabled ecosystem's dependencies and asks the
/// registries for newer versions; returns the commit scanned and what each ecosystem that has
/// dependencies (or problems) came to.
async fn find_updates(
    env: &JobEnv,
    mirror: &Mirror,
    registry: &RegistryClient,
    deps: &DepsChore,
    ignored: &[PackageName],
) -> Result<(String, BTreeMap<Ecosystem, Found>), HandlerError> {
    let mut policy = deps.policy();
    // The packages ignored by command (`@agent ignore`) stay ignored whatever the rules say.
    policy.ignored_by_command = ignored.iter().map(ToString::to_string).collect();
    let ecosystems: Vec<Ecosystem> = match &deps.ecosystems {
        Some(set) => set.iter().copied().collect(),
        None => Ecosystem::ALL.to_vec(),
    };
    let lease = env
        .services
        .pool
        .lease(mirror, Target::Branch(env.request.repo.default_branch.clone()))
        .await?;
    let base = match lease.repo().head() {
        Ok(oid) => oid.to_string(),
        Err(error) => {
            lease.release().await;
            return Err(error.into());
        }
    };
    let mut found: BTreeMap<Ecosystem, Found> = BTreeMap::new();
    for ecosystem in ecosystems {
        let f = plan::find(ecosystem, lease.path(), registry, &env.github, &policy).await;
        if f.dependencies > 0 || !f.problems.is_empty() {
            found.insert(ecosystem, f);
        }
    }
    lease.release().await;
    Ok((base, found))
}

/// Writes what the scan found in the job's history.
async fn record_plan(env: &JobEnv, base: &str, found: &BTreeMap<Ecosystem, Found>, problems: &[String]) {
    let plan = JobRecord::ChorePlan {
        base: base.to_owned(),
        ecosystems: found
            .iter()
            .map(|(ecosystem, f)| EcosystemPlan {
                ecosystem: *ecosystem,
                dependencies: f.dependencies,
                updates: f.updates.len(),
            })
            .collect(),
        problems: problems.to_vec(),
    };
    let _ = env.control.record(&plan).await;
}

/// The open pull requests of earlier dependency runs (from this repository's own branches).
async fn open_chore_pulls(env: &JobEnv) -> Result<Vec<PullRequest>, HandlerError> {
    Ok(env
        .github
        .list_open_pulls(&env.repo)
        .await?
        .into_iter()
        .filter(|p| p.head.branch.starts_with(BRANCH_PREFIX) && !p.is_cross_repository())
        .collect())
}

/// What the groups' pull requests came to.
struct Delivered {
    /// Opened or updated: title, number, and whether it was an update.
    pulls: Vec<(String, u64, bool)>,
    /// Opened by this run: number, title, branch.
    opened: Vec<(u64, String, String)>,
    /// Branches whose updates are still wanted (delivered, or failed this time): not superseded.
    wanted: Vec<String>,
    /// Groups whose work failed.
    failed: usize,
    /// Branches whose new pull request waits: `max_open_prs` are open.
    waiting: Vec<String>,
    max_open_prs: Option<u32>,
    spent: Spent,
}

enum Delivery {
    Done(Delivered),
    /// The job was asked to stop between two groups; what was spent so far.
    Stopped(Spent),
}

/// Makes each group's pull request, or updates the open one of its branch. One pull request's
/// failure (a lockfile that will not refresh, a push refused) is added to `problems` and the
/// others still go out.
async fn deliver(
    chore: &ChoreRun<'_>,
    groups: &[Group],
    open: &[PullRequest],
    problems: &mut Vec<String>,
) -> Result<Delivery, HandlerError> {
    let env = chore.env;
    let mut delivered = Delivered {
        pulls: Vec::new(),
        opened: Vec::new(),
        wanted: Vec::new(),
        failed: 0,
        waiting: Vec::new(),
        max_open_prs: chore.deps.max_open_prs,
        spent: Spent::default(),
    };
    // Open chore pull requests: the earlier runs' and the ones this run opens.
    let mut open_now = open.len();
    for group in groups {
        if env.control.is_cancelled() {
            return Ok(Delivery::Stopped(delivered.spent));
        }
        let existing = open.iter().find(|p| p.head.branch == group.branch);
        // A waiting branch someone ticked on the dashboard goes out whatever the limit.
        if existing.is_none()
            && let Some(max) = chore.deps.max_open_prs
            && open_now >= max as usize
            && !chore.asked_for.contains(&group.branch)
        {
            // Not worked on at all: a later run makes it once one is merged or closed.
            delivered.waiting.push(group.branch.clone());
            continue;
        }
        let outcome = match run_group(chore, group, existing.is_some()).await {
            Ok(outcome) => outcome,
            Err(error) => {
                tracing::warn!(branch = %group.branch, %error, "a dependency pull request failed");
                problems.push(format!("`{}`: {}", group.branch, super::public_error(&error)));
                delivered.failed += 1;
                // Its branch is not closed as superseded: its updates are still wanted.
                delivered.wanted.push(group.branch.clone());
                continue;
            }
        };
        let (pull, group_spent) = match outcome {
            Grouped::Nothing => continue,
            Grouped::Declined => {
                problems.push(format!(
                    "`{}`: not proposed again: a pull request with exactly these updates was closed without merging",
                    group.branch
                ));
                continue;
            }
            Grouped::Pushed(pushed) => *pushed,
        };
        delivered.spent.add(&group_spent);
        delivered.wanted.push(group.branch.clone());
        let proposed = propose(env, group, &pull, existing).await?;
        if !proposed.2 {
            open_now += 1;
            delivered
                .opened
                .push((proposed.1, proposed.0.clone(), group.branch.clone()));
            decorate(env, chore.deps, IssueNumber(proposed.1)).await;
        }
        delivered.pulls.push(proposed);
    }
    Ok(Delivery::Done(delivered))
}

/// Opens the pull request of a pushed group, or updates its branch's open one; returns its title,
/// number and whether it was an update.
async fn propose(
    env: &JobEnv,
    group: &Group,
    pull: &ChorePull,
    existing: Option<&PullRequest>,
) -> Result<(String, u64, bool), HandlerError> {
    let title = text::title(pull);
    let body = text::body(pull, &env.job_id());
    match existing {
        Some(existing) => {
            let change = PullUpdate {
                title: Some(&title),
                body: Some(&body),
                state: None,
            };
            env.github.update_pull(&env.repo, existing.number, &change).await?;
            Ok((title, existing.number.0, true))
        }
        None => {
            let created = env
                .github
                .create_pull(
                    &env.repo,
                    &NewPull {
                        title: title.clone(),
                        body,
                        head: group.branch.clone(),
                        base: env.request.repo.default_branch.clone(),
                        draft: false,
                    },
                )
                .await?;
            Ok((title, created.number.0, false))
        }
    }
}

/// Puts the configured labels, assignees and reviewers on a pull request the chore opened. A
/// failure (a reviewer who is not a collaborator) is noted and costs nothing else.
async fn decorate(env: &JobEnv, deps: &DepsChore, number: IssueNumber) {
    if !deps.labels.is_empty()
        && let Err(error) = env.github.add_labels(&env.repo, number, &deps.labels).await
    {
        env.note(format!("#{number}: the labels could not be added: {error}"));
    }
    if !deps.assignees.is_empty()
        && let Err(error) = env.github.add_assignees(&env.repo, number, &deps.assignees).await
    {
        env.note(format!("#{number}: the assignees could not be added: {error}"));
    }
    let users: Vec<String> = deps
        .reviewers
        .iter()
        .filter_map(|r| match r {
            Reviewer::User(login) => Some(login.clone()),
            Reviewer::Team(_) => None,
        })
        .collect();
    let teams: Vec<String> = deps
        .reviewers
        .iter()
        .filter_map(|r| match r {
            Reviewer::Team(slug) => Some(slug.clone()),
            Reviewer::User(_) => None,
        })
        .collect();
    if !(users.is_empty() && teams.is_empty())
        && let Err(error) = env.github.request_reviewers(&env.repo, number, &users, &teams).await
    {
        env.note(format!("#{number}: the reviewers could not be asked: {error}"));
    }
}

/// Closes earlier runs' pull requests whose branch got nothing this time: their updates were
/// merged or went elsewhere. Only for ecosystems read without a problem (a registry outage must
/// not close a pull request). Returns their numbers.
async fn close_superseded(
    env: &JobEnv,
    open: &[PullRequest],
    found: &BTreeMap<Ecosystem, Found>,
    wanted: &[String],
    grouping: DepsGrouping,
    named: &[String],
) -> Result<Vec<u64>, HandlerError> {
    let clean: Vec<Ecosystem> = found
        .iter()
        .filter(|(_, f)| f.problems.is_empty())
        .map(|(e, _)| *e)
        .collect();
    let all_clean = clean.len() == found.len();
    let mut closed = Vec::new();
    for pull in open {
        let branch = pull.head.branch.as_str();
        if wanted.iter().any(|b| b == branch) || !closable(branch, &clean, all_clean, grouping, named) {
            continue;
        }
        let note = "Closing: a newer dependency run found nothing left to update on this branch (the updates were \
                    merged, or are in another pull request).";
        env.github.create_issue_comment(&env.repo, pull.number, note).await?;
        let change = PullUpdate {
            state: Some("closed"),
            ..PullUpdate::default()
        };
        env.github.update_pull(&env.repo, pull.number, &change).await?;
        closed.push(pull.number.0);
    }
    Ok(closed)
}

/// Answers the person who asked (a scheduled run tells nobody), and ends the job: failed when
/// nothing went out and something broke, else succeeded with what was done.
async fn report_run(
    env: &JobEnv,
    asked: bool,
    base: String,
    delivered: Delivered,
    closed: Vec<u64>,
    problems: Vec<String>,
    unchecked: usize,
) -> Result<(Finish, Spent), HandlerError> {
    let waiting = delivered.max_open_prs.map(|max| (max, delivered.waiting.as_slice()));
    let report = text::answer(&delivered.pulls, &problems, waiting, &env.job_id());
    if asked {
        env.reply(&report).await?;
    }
    let headline = match (delivered.pulls.len(), unchecked) {
        (0, 0) if !delivered.waiting.is_empty() => format!(
            "{} dependency pull request(s) waiting: max_open_prs are open",
            delivered.waiting.len()
        ),
        (0, 0) => "dependencies are up to date".to_owned(),
        (0, n) => format!("{n} dependency lookup(s) failed; nothing could be proposed"),
        (1, 0) => "1 dependency pull request".to_owned(),
        (n, 0) => format!("{n} dependency pull requests"),
        (1, failed) => format!("1 dependency pull request; {failed} lookup(s) failed"),
        (n, failed) => format!("{n} dependency pull requests; {failed} lookup(s) failed"),
    };
    let finished = JobRecord::Finished {
        headline: headline.clone(),
    };
    let _ = env.control.record(&finished).await;
    // Nothing went out and something broke (a pull request, or the lookups): the job failed. Some
    // went out and some did not, or some lookups failed: neutral, never a plain success.
    let incomplete = delivered.failed > 0 || unchecked > 0;
    let failed = incomplete && delivered.pulls.is_empty();
    let summary = Summary {
        headline: headline.clone(),
        conclusion: if incomplete {
            CheckConclusion::Neutral
        } else {
            CheckConclusion::Success
        },
        commit: None,
        pull_request: delivered.pulls.first().map(|(_, n, _)| *n),
        summary: headline,
        report,
        detail: Some(Detail::Chore(ChoreDetail {
            base,
            pull_requests: delivered
                .pulls
                .into_iter()
                .map(|(title, number, updated)| ChorePullRequest { number, title, updated })
                .collect(),
            closed,
            problems: problems.clone(),
        })),
    };
    if failed {
        // Nothing went out and something broke: the job failed, with the reasons.
        let _ = env.control.record(&JobRecord::Result(summary)).await;
        return Ok((Finish::Failed(problems.join("; ")), delivered.spent));
    }
    Ok((super::succeeded(&summary), delivered.spent))
}

/// A pull request from `branch` with exactly these updates (its body's `table`) was closed without
/// being merged: the same proposal is not made again until newer versions change it.
async fn declined(env: &JobEnv, branch: &str, table: &str) -> bool {
    match env.github.closed_pulls_from(&env.repo, branch).await {
        Ok(pulls) => pulls.iter().any(|p| !p.merged && p.body.contains(table)),
        Err(error) => {
            tracing::warn!(%error, "could not list the branch's closed pull requests");
            false
        }
    }
}

/// The pull requests to make: per ecosystem (or all together), the compatible updates, and the
/// majors apart. An ecosystem with a lockfile gets its pull request even without manifest
/// updates: the lockfile refresh may find versions inside the ranges.
/// The pull requests a run would make of what the scan found, as they stand before the lockfile
/// refresh, the tests and the agent (`pitcrew chore --dry-run`): branch, group, manifest updates,
/// what was held back or could not be looked up.
pub fn planned_pulls(found: &BTreeMap<Ecosystem, Found>, grouping: DepsGrouping, policy: &Policy) -> Vec<ChorePull> {
    groups(found, grouping, policy)
        .into_iter()
        .map(|group| ChorePull {
            branch: group.branch,
            ecosystems: group.ecosystems,
            group: group.name,
            major: group.major,
            updates: group.updates,
            lock: Vec::new(),
            tests: TestOutcome::NotRun,
            agent_summary: None,
            reverted: Vec::new(),
            unchecked: group.unchecked,
            held_back: group.held_back,
            not_updated: Vec::new(),
        })
        .collect()
}

fn groups(found: &BTreeMap<Ecosystem, Found>, grouping: DepsGrouping, policy: &Policy) -> Vec<Group> {
    let named = |ecosystem: Ecosystem, name: &str| policy.for_package(ecosystem, name).group;
    // The updates of the ecosystem's (or every ecosystem's) pull requests: those no rule names a
    // group for.
    let split = |f: &Found, major: bool| -> Vec<Update> {
        f.updates
            .iter()
            .filter(|u| (u.kind == UpdateKind::Major) == major && named(u.ecosystem, &u.name).is_none())
            .cloned()
            .collect()
    };
    // The rules' named groups with updates, across ecosystems.
    let mut by_name: BTreeMap<String, Vec<&Update>> = BTreeMap::new();
    for u in found.values().flat_map(|f| f.updates.iter()) {
        if let Some(name) = named(u.ecosystem, &u.name) {
            by_name.entry(name).or_default().push(u);
        }
    }
    // The held-back notes of a pull request: a package's go to its group's pull requests when it
    // has some, else to its ecosystem's; the majors' to the majors' one when there is one, else
    // with the compatible ones.
    let held = |founds: &[(&Ecosystem, &Found)], group: Option<&str>, major: bool, majors_pr: bool| -> Vec<HeldBack> {
        founds
            .iter()
            .flat_map(|(e, f)| f.held_back.iter().map(move |h| (**e, h)))
            .filter(|(e, h)| {
                let own = named(*e, &h.name).filter(|g| by_name.contains_key(g));
                own.as_deref() == group
            })
            .filter(|(_, h)| if major { h.major } else { !h.major || !majors_pr })
            .map(|(_, h)| h.clone())
            .collect()
    };
    let mut out = Vec::new();
    match grouping {
        DepsGrouping::Ecosystem => {
            for (ecosystem, f) in found {
                let compatible = split(f, false);
                let majors = split(f, true);
                if !compatible.is_empty() || f.has_lockfile {
                    out.push(Group {
                        branch: format!("{BRANCH_PREFIX}-{}", ecosystem.as_str()),
                        ecosystems: vec![*ecosystem],
                        name: None,
                        major: false,
                        updates: compatible,
                        unchecked: f.problems.clone(),
                        held_back: held(&[(ecosystem, f)], None, false, !majors.is_empty()),
                    });
                }
                if !majors.is_empty() {
                    out.push(Group {
                        branch: format!("{BRANCH_PREFIX}-{}-major", ecosystem.as_str()),
                        ecosystems: vec![*ecosystem],
                        name: None,
                        major: true,
                        updates: majors,
                        unchecked: f.problems.clone(),
                        held_back: held(&[(ecosystem, f)], None, true, true),
                    });
                }
            }
        }
        DepsGrouping::All => {
            let ecosystems: Vec<Ecosystem> = found.keys().copied().collect();
            let unchecked: Vec<String> = found.values().flat_map(|f| f.problems.clone()).collect();
            let founds: Vec<(&Ecosystem, &Found)> = found.iter().collect();
            let compatible: Vec<Update> = found.values().flat_map(|f| split(f, false)).collect();
            let majors: Vec<Update> = found.values().flat_map(|f| split(f, true)).collect();
            if !compatible.is_empty() || found.values().any(|f| f.has_lockfile) {
                out.push(Group {
                    branch: BRANCH_PREFIX.to_owned(),
                    ecosystems: ecosystems.clone(),
                    name: None,
                    major: false,
                    updates: compatible,
                    unchecked: unchecked.clone(),
                    held_back: held(&founds, None, false, !majors.is_empty()),
                });
            }
            if !majors.is_empty() {
                out.push(Group {
                    branch: format!("{BRANCH_PREFIX}-major"),
                    ecosystems,
                    name: None,
                    major: true,
                    updates: majors,
                    unchecked,
                    held_back: held(&founds, None, true, true),
                });
            }
        }
    }
    // The named groups: a pull request of their own (majors apart), whatever the grouping of the
    // rest. Their refresh moves only what their edits need, as the majors' does: the ecosystem's
    // pull request holds the rest of the lockfile.
    for (name, updates) in &by_name {
        let ecosystems: BTreeSet<Ecosystem> = updates.iter().map(|u| u.ecosystem).collect();
        let founds: Vec<(&Ecosystem, &Found)> = found.iter().filter(|(e, _)| ecosystems.contains(e)).collect();
        let unchecked: Vec<String> = founds.iter().flat_map(|(_, f)| f.problems.clone()).collect();
        let (majors, compatible): (Vec<&Update>, Vec<&Update>) =
            updates.iter().copied().partition(|u| u.kind == UpdateKind::Major);
        for (major, updates) in [(false, compatible), (true, majors.clone())] {
            if updates.is_empty() {
                continue;
            }
            out.push(Group {
                branch: format!("{BRANCH_PREFIX}-{name}{}", if major { "-major" } else { "" }),
                ecosystems: ecosystems.iter().copied().collect(),
                name: Some(name.clone()),
                major,
                updates: updates.into_iter().cloned().collect(),
                unchecked: unchecked.clone(),
                held_back: held(&founds, Some(name), major, major || !majors.is_empty()),
            });
        }
    }
    out
}

/// Whether an open pull request on `branch` belongs to a group this run computed cleanly: an
/// ecosystem's whose lookups all answered, or a rule's named group (in `named`) when every
/// ecosystem's did.
fn closable(branch: &str, clean: &[Ecosystem], all_clean: bool, grouping: DepsGrouping, named: &[String]) -> bool {
    let Some(rest) = branch.strip_prefix(BRANCH_PREFIX) else {
        return false;
    };
    let name = rest.trim_start_matches('-').trim_end_matches("-major");
    if named.iter().any(|n| n == name) {
        return all_clean;
    }
    match grouping {
        DepsGrouping::All => matches!(rest, "" | "-major"),
        DepsGrouping::Ecosystem => Ecosystem::parse(name).is_some_and(|e| clean.contains(&e)),
    }
}

/// How one pull request's work ended.
enum Grouped {
    /// Nothing to update.
    Nothing,
    /// The same updates were proposed before and closed unmerged: nothing pushed.
    Declined,
    /// Committed and pushed to the group's branch.
    Pushed(Box<(ChorePull, Spent)>),
}

/// What every pull request of one chore run shares: the job, its settings, the mirror and remote
/// of the repository, the token and the base commit, and the tests on the base once run.
struct ChoreRun<'a> {
    env: &'a JobEnv,
    deps: &'a DepsChore,
    settings: &'a EffectiveSettings,
    mirror: &'a Mirror,
    remote: &'a RemoteRepo,
    token: &'a secrecy::SecretString,
    base: &'a str,
    /// The tests on the untouched base ([`baseline`]), run the first time a group's tests fail:
    /// one for groups whose sandbox's setup had network, one for the others.
    baselines: [tokio::sync::OnceCell<Option<Observed>>; 2],
    /// Waiting branches ticked on the dependency dashboard: made whatever `max_open_prs`.
    asked_for: Vec<String>,
}

/// One pull request's work in a fresh copy of the base: edits, lockfile refresh, tests, the agent
/// when they fail, the commit and the push (not when the same updates were closed unmerged before
/// and no pull request of the branch is open).
async fn run_group(chore: &ChoreRun<'_>, group: &Group, open_pull: bool) -> Result<Grouped, HandlerError> {
    let env = chore.env;
    let lease = env
        .services
        .pool
        .lease(chore.mirror, Target::Commit(chore.base.to_owned()))
        .await?;
    let root = lease.path().to_owned();
    let result = run_group_in(chore, &root, group).await;
    let result = match result {
        Ok(Some(Prepared { pull, .. })) if !open_pull && declined(env, &group.branch, &text::table(&pull)).await => {
            Ok(Grouped::Declined)
        }
        Ok(Some(Prepared { pull, spent, scope })) => {
            let message = text::commit_message(&pull);
            let identity = CommitIdentity {
                name: env.config().github.bot_name.clone(),
                email: env.config().github.bot_email.clone(),
            };
            let limit = env.config().agent.max_new_file_bytes;
            let path = root.clone();
            let committed = tokio::task::spawn_blocking(move || -> Result<Option<String>, WorkspaceError> {
                let repo = LocalRepo::open(&path)?;
                Ok(repo
                    .commit_scoped(&scope, &message, limit, &[], Some(&identity))?
                    .commit)
            })
            .await
            .map_err(|e| HandlerError::Other(format!("the commit task failed: {e}")))??;
            match committed {
                Some(_) => {
                    super::fix::push_branch(&chore.env.control, &root, chore.remote, chore.token, &pull.branch).await?;
                    Ok(Grouped::Pushed(Box::new((pull, spent))))
                }
                None => Ok(Grouped::Nothing),
            }
        }
        Ok(None) => Ok(Grouped::Nothing),
        Err(error) => Err(error),
    };
    lease.release().await;
    result
}

/// A group's pull request, ready to commit: its texts, what the agent spent, and the files to
/// commit (the manifests and lockfiles the chore changed, and what the agent changed).
struct Prepared {
    pull: ChorePull,
    spent: Spent,
    scope: BTreeSet<String>,
}

async fn run_group_in(chore: &ChoreRun<'_>, root: &Path, group: &Group) -> Result<Option<Prepared>, HandlerError> {
    let env = chore.env;
    let registries = &env.config().chores.registries;
    // What the Python lockfiles and their manifests held before the edits: a lockfile whose
    // refresh fails is put back with its manifest, and that manifest's updates left out.
    let python_locks: Vec<(python::Lock, Saved)> = if group.ecosystems.contains(&Ecosystem::Python) {
        python::locks(root)
            .into_iter()
            .map(|lock| {
                let saved = [lock.manifest(), lock.file()]
                    .into_iter()
                    .filter_map(|path| read_regular(root, &path).map(|bytes| (path, bytes)))
                    .collect();
                (lock, saved)
            })
            .collect()
    } else {
        Vec::new()
    };
    let mut updates = Vec::new();
    // Why updates were not made, each with the packages it kept from being updated.
    let mut skipped: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for update in &group.updates {
        match plan::apply(root, update) {
            Ok(()) => updates.push(update.clone()),
            Err(problem) => {
                env.note(format!("{} {} was not updated: {problem}", update.name, update.to));
                skipped
                    .entry(problem.to_string())
                    .or_default()
                    .push(format!("`{}` {}", update.name, update.to));
            }
        }
    }
    let mut not_updated: Vec<String> = skipped
        .into_iter()
        .map(|(problem, packages)| format!("{problem}: {}", packages.join(", ")))
        .collect();
    // The majors' and a named group's refresh moves only what their manifest edits need: the
    // ecosystem's compatible pull request holds the rest of the refresh, and they merge in any
    // order.
    let refresh = if group.major || group.name.is_some() {
        lock::Refresh::Minimal
    } else {
        lock::Refresh::Full
    };
    let mut commands: Vec<(String, String)> = group
        .ecosystems
        .iter()
        .flat_map(|e| plan::lock_commands(*e, root, registries, refresh))
        .collect();
    let before: Vec<_> = group
        .ecosystems
        .iter()
        .map(|e| (*e, plan::snapshot(*e, root)))
        .collect();

    // The lockfile refresh is the one step with network (when the operator allows it): the
    // session runs it first, then the network is gone for the tests and the agent.
    let run_dir = run_dir(
        env.config(),
        &format!("{}-{}", env.job_id(), group.branch.replace('/', "-")),
    );
    let session = loop {
        let run = AgentRun {
            sandbox_id: format!("{}-{}", env.sandbox_id(), short(&group.branch)),
            network_step: (!commands.is_empty()).then(|| NetworkStep {
                commands: commands.clone(),
                network: env.config().chores.lock_network,
                timeout: LOCK_TIMEOUT,
            }),
            ..agent_run(env, chore.settings, root, run_dir.clone())
        };
        let error = match AgentSession::start(run).await {
            Ok(session) => break session,
            Err(error) => error,
        };
        // A Python lockfile its tool could not refresh (the tool missing, the new version not
        // resolvable): that manifest is not edited, rather than committed with a stale lock.
        let said = error.to_string();
        let failed = python_locks
            .iter()
            .find(|(lock, _)| said.contains(&lock.failure_line()) && commands.iter().any(|(dir, _)| *dir == lock.dir));
        let Some((lock, saved)) = failed else {
            return Err(lock_refresh_failed(error, &group.branch));
        };
        restore(root, saved)?;
        let manifest = lock.manifest();
        let dropped: Vec<String> = updates
            .iter()
            .filter(|u| u.manifest.as_deref() == Some(manifest.as_str()))
            .map(|u| format!("{} {}", u.name, u.to))
            .collect();
        updates.retain(|u| u.manifest.as_deref() != Some(manifest.as_str()));
        commands.retain(|(dir, _)| *dir != lock.dir);
        let why = said
            .lines()
            .rfind(|line| !line.trim().is_empty() && !line.contains(&lock.failure_line()))
            .unwrap_or("the refresh failed")
            .trim()
            .to_owned();
        let sentence = format!(
            "{manifest}: not updated ({}), because {} could not be refreshed: {why}",
            dropped.join(", "),
            lock.file()
        );
        env.note(sentence.clone());
        not_updated.push(sentence);
        if updates.is_empty() {
            return Ok(None);
        }
    };
    // Whether the sandbox's setup had network (for the refresh): the baseline's gets the same.
    let setup_network = !commands.is_empty() && env.config().chores.lock_network;
    let outcome = in_session(
        chore,
        &session,
        root,
        group,
        updates,
        before,
        not_updated,
        setup_network,
    )
    .await;
    // Nothing of the sandbox may run while git reads the working tree: a container that could not
    // be removed may still hold a process racing it, so the group commits nothing then.
    if let Err(error) = session.stop().await {
        outcome?;
        return Err(HandlerError::Other(format!(
            "the sandbox of `{}` could not be stopped ({error}), so nothing was committed: a process in it could \
             still be changing the working tree",
            group.branch
        )));
    }
    outcome
}

/// A short, engine-safe suffix for the group's sandbox name.
fn short(branch: &str) -> String {
    branch
        .trim_start_matches("pitcrew/")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// The changes of the lockfiles since `before` (the group's ecosystems' snapshots) that no
/// manifest update of `updates` accounts for.
pub(crate) fn lock_rows(root: &Path, before: &[(Ecosystem, lock::Snapshot)], updates: &[Update]) -> Vec<Change> {
    before
        .iter()
        .flat_map(|(ecosystem, snapshot)| lock::diff(*ecosystem, snapshot, &plan::snapshot(*ecosystem, root)))
        .filter(|change| {
            !updates
                .iter()
                .any(|u| u.ecosystem == change.ecosystem && u.name == change.name)
        })
        .collect()
}

/// What of the working tree differs from the base now (see [`crate::workspace::scope`]).
async fn tree_state(root: &Path) -> Result<TreeState, HandlerError> {
    let root = root.to_owned();
    tokio::task::spawn_blocking(move || LocalRepo::open(&root)?.tree_state())
        .await
        .map_err(|e| HandlerError::Other(format!("reading the working tree failed: {e}")))?
        .map_err(HandlerError::from)
}

/// The session start's failure as the chore says it.
fn lock_refresh_failed(error: SessionError, branch: &str) -> HandlerError {
    match error {
        SessionError::NetworkStep {
            command,
            exit_code,
            stderr_tail,
        } => HandlerError::Other(format!(
            "the lockfile refresh `{command}` failed (exit {exit_code:?}):\n{stderr_tail}"
        )),
        error => HandlerError::Other(format!(
            "the lockfile refresh for `{branch}` failed: {}",
            HandlerError::from(error)
        )),
    }
}

/// Files of the working copy as they were: (path relative to the root, bytes).
type Saved = Vec<(String, Vec<u8>)>;

/// The bytes of the regular file `relative` in the working copy, opened without following a
/// symlink (a lockfile or manifest: at most 64 MiB).
fn read_regular(root: &Path, relative: &str) -> Option<Vec<u8>> {
    Beneath::open(root)
        .ok()?
        .read_regular(Path::new(relative), 64 << 20)
        .ok()
}

/// Writes `saved` files back into the working copy, never through a symlink.
fn restore(root: &Path, saved: &Saved) -> Result<(), HandlerError> {
    let beneath =
        Beneath::open(root).map_err(|e| HandlerError::Other(format!("could not open the working copy: {e}")))?;
    for (path, bytes) in saved {
        beneath
            .write(Path::new(path), bytes)
            .map_err(|e| HandlerError::Other(format!("could not put {path} back: {e}")))?;
    }
    Ok(())
}

/// The tests after the refresh, the agent when they fail, and the updates that are left.
/// `setup_network`: whether the session's setup had network (for the lockfile refresh).
#[expect(
    clippy::too_many_arguments,
    reason = "what one group's refresh left, each from a different step of run_group_in"
)]
async fn in_session(
    chore: &ChoreRun<'_>,
    session: &AgentSession,
    root: &Path,
    group: &Group,
    mut updates: Vec<Update>,
    before: Vec<(Ecosystem, lock::Snapshot)>,
    not_updated: Vec<String>,
    setup_network: bool,
) -> Result<Option<Prepared>, HandlerError> {
    let env = chore.env;
    if updates.is_empty() && lock_rows(root, &before, &updates).is_empty() {
        return Ok(None);
    }
    // The manifests and lockfiles the edits and the refresh changed; the tests' leavings are not.
    let mut scope = tree_state(root).await?.paths();

    let mut spent = Spent::default();
    let mut agent_summary = None;
    let observe = async || {
        let (run, output) = run_tests_with_output(session).await;
        Observed::read(&run, &output, &[&root.display().to_string(), session.shown_root()])
    };
    let tests = match observe().await {
        None => TestOutcome::NotRun,
        Some(after) if !after.fails() => TestOutcome::Passed { after_fix: false },
        Some(after) => {
            let base_run = chore.baselines[usize::from(setup_network)]
                .get_or_init(|| baseline(chore, setup_network))
                .await
                .as_ref();
            let comparison = Comparison::new(base_run, &after);
            if comparison.update_broke_something() {
                let prompt = env.services.prompts.render(
                    Template::Chore,
                    &[
                        (
                            "updates",
                            &text::updates_for_prompt(&updates, &lock_rows(root, &before, &updates)),
                        ),
                        ("failure", &comparison.for_agent()),
                        ("instructions", &session.instructions()),
                    ],
                )?;
                let before_agent = tree_state(root).await?;
                let outcome = session
                    .run_agent(prompt, Toolset::Full, Arc::new(crate::agent::events::NoEvents))
                    .await?;
                // What the agent changed (its own test runs' leavings aside) is committed too.
                scope.extend(tree_state(root).await?.since(&before_agent));
                spent = Spent::from_outcome(&outcome);
                if matches!(outcome.stop, StopReason::Finished) && !outcome.summary.trim().is_empty() {
                    agent_summary = Some(outcome.summary.clone());
                }
                match observe().await {
                    None => TestOutcome::NotRun,
                    Some(after) if !after.fails() => TestOutcome::Passed { after_fix: true },
                    Some(after) => TestOutcome::Failing {
                        comparison: Box::new(Comparison::new(base_run, &after)),
                        after_fix: true,
                    },
                }
            } else {
                env.note(format!(
                    "`{}`: every failing test failed before the update too; the agent was not run",
                    group.branch
                ));
                TestOutcome::Failing {
                    comparison: Box::new(comparison),
                    after_fix: false,
                }
            }
        }
    };
    // Updates the agent reverted: their manifest no longer holds the new requirement.
    let mut reverted = Vec::new();
    for ecosystem in &group.ecosystems {
        let now = plan::scan(*ecosystem, root).unwrap_or_default();
        updates.retain(|u| {
            let Some(requirement) = &u.new_requirement else {
                return true;
            };
            if u.ecosystem != *ecosystem {
                return true;
            }
            let kept = now
                .iter()
                .any(|d| d.name == u.name && Some(&d.manifest) == u.manifest.as_ref() && &d.requirement == requirement);
            if !kept {
                reverted.push(u.name.clone());
            }
            kept
        });
    }
    // The lockfiles as they are now, after the agent and the tests: what the commit holds. A
    // lockfile only the tests touched is not committed, so its changes are no rows.
    let mut lock = lock_rows(root, &before, &updates);
    lock.retain(|change| {
        let dir = if change.scope.is_empty() {
            String::new()
        } else {
            format!("{}/", change.scope)
        };
        let files: &[&str] = match change.ecosystem {
            Ecosystem::Npm => &["package-lock.json", "npm-shrinkwrap.json"],
            _ => &["Cargo.lock"],
        };
        files.iter().any(|file| scope.contains(&format!("{dir}{file}")))
    });
    // A majors' pull request whose majors were all reverted has nothing of its own left; a
    // compatible one still has its refresh.
    if updates.is_empty() && (group.major || lock.is_empty()) {
        env.note(format!("every update of `{}` was reverted", group.branch));
        return Ok(None);
    }
    Ok(Some(Prepared {
        pull: ChorePull {
            branch: group.branch.clone(),
            ecosystems: group.ecosystems.clone(),
            group: group.name.clone(),
            major: group.major,
            updates,
            lock,
            not_updated,
            tests,
            agent_summary,
            reverted,
            unchecked: group.unchecked.clone(),
            held_back: group.held_back.clone(),
        },
        spent,
        scope,
    }))
}

/// The tests on the untouched base commit, in a copy and a sandbox of their own, set up as the
/// update's was: no network for the tests, and for the repository's own setup only what the
/// update's sandbox had (`setup_network`: the lockfile refresh's, given here to a step that
/// changes nothing, since refreshing would change the base). What failed before the update; `None`
/// when the tests could not be run there, and then every failure counts as the update's.
async fn baseline(chore: &ChoreRun<'_>, setup_network: bool) -> Option<Observed> {
    let env = chore.env;
    let lease = match env
        .services
        .pool
        .lease(chore.mirror, Target::Commit(chore.base.to_owned()))
        .await
    {
        Ok(lease) => lease,
        Err(error) => {
            tracing::warn!(%error, "no copy of the base for the tests before the update");
            env.note(format!("the tests before the update could not be run: {error}"));
            return None;
        }
    };
    let root = lease.path().to_owned();
    let name = if setup_network { "base-net" } else { "base" };
    let run = AgentRun {
        sandbox_id: format!("{}-{name}", env.sandbox_id()),
        // It only runs the tests.
        index: None,
        network_step: setup_network.then(|| NetworkStep {
            commands: vec![(String::new(), "true".to_owned())],
            network: true,
            timeout: LOCK_TIMEOUT,
        }),
        ..agent_run(
            env,
            chore.settings,
            &root,
            run_dir(env.config(), &format!("{}-{name}", env.job_id())),
        )
    };
    let observed = match AgentSession::start(run).await {
        Ok(session) => {
            let (run, output) = run_tests_with_output(&session).await;
            let observed = Observed::read(&run, &output, &[&root.display().to_string(), session.shown_root()]);
            if let Err(error) = session.stop().await {
                tracing::warn!(%error, "stopping the sandbox of the tests before the update failed");
            }
            observed
        }
        Err(error) => {
            let error = HandlerError::from(error);
            tracing::warn!(%error, "no sandbox for the tests before the update");
            env.note(format!("the tests before the update could not be run: {error}"));
            None
        }
    };
    lease.release().await;
    observed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chores::Hold;
    use crate::config::deps::Rule;

    fn update(ecosystem: Ecosystem, name: &str, kind: UpdateKind) -> Update {
        Update {
            ecosystem,
            name: name.into(),
            manifest: Some("Cargo.toml".into()),
            section: Some("dependencies".into()),
            from: "1.0.0".into(),
            to: "2.0.0".into(),
            kind,
            new_requirement: Some("2.0".into()),
            notes_url: None,
            marker: None,
        }
    }

    #[test]
    fn a_rules_group_gets_pull_requests_of_its_own_across_ecosystems() {
        let young = HeldBack {
            reason: Hold::Young,
            name: "aws-sdk".into(),
            version: "1.3.0".into(),
            needs: "2026-12-05 10:00 UTC".into(),
            declared: "3d".into(),
            major: false,
            instead: Some("2.0.0".into()),
        };
        let found = BTreeMap::from([
            (
                Ecosystem::Cargo,
                Found {
                    updates: vec![
                        update(Ecosystem::Cargo, "serde", UpdateKind::Minor),
                        update(Ecosystem::Cargo, "aws-sdk", UpdateKind::Minor),
                        update(Ecosystem::Cargo, "aws-types", UpdateKind::Major),
                    ],
                    has_lockfile: true,
                    held_back: vec![young],
                    ..Found::default()
                },
            ),
            (
                Ecosystem::Npm,
                Found {
                    updates: vec![update(Ecosystem::Npm, "aws-cdk", UpdateKind::Patch)],
                    problems: vec!["the npm registry did not answer".into()],
                    ..Found::default()
                },
            ),
        ]);
        let policy = Policy {
            major: true,
            rules: vec![Rule {
                matches: vec!["aws-*".into()],
                group: Some("aws".into()),
                ..Rule::default()
            }],
            ..Policy::default()
        };
        let made = groups(&found, DepsGrouping::Ecosystem, &policy);
        let summary: Vec<(&str, Vec<&str>, Vec<Ecosystem>, usize)> = made
            .iter()
            .map(|g| {
                let names = g.updates.iter().map(|u| u.name.as_str()).collect();
                (g.branch.as_str(), names, g.ecosystems.clone(), g.held_back.len())
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("pitcrew/deps-cargo", vec!["serde"], vec![Ecosystem::Cargo], 0),
                (
                    "pitcrew/deps-aws",
                    vec!["aws-sdk", "aws-cdk"],
                    vec![Ecosystem::Cargo, Ecosystem::Npm],
                    1
                ),
                (
                    "pitcrew/deps-aws-major",
                    vec!["aws-types"],
                    vec![Ecosystem::Cargo, Ecosystem::Npm],
                    0
                ),
            ]
        );
        let aws = &made[1];
        assert_eq!((aws.name.as_deref(), aws.major), (Some("aws"), false));
        assert_eq!(aws.unchecked, ["the npm registry did not answer"]);
        assert_eq!(made[0].name, None);

        // With every ecosystem in one pull request, the group still has its own.
        let all: Vec<String> = groups(&found, DepsGrouping::All, &policy)
            .into_iter()
            .map(|g| g.branch)
            .collect();
        assert_eq!(all, ["pitcrew/deps", "pitcrew/deps-aws", "pitcrew/deps-aws-major"]);

        // A group with no update this run: its packages' notes go to their ecosystem's pull request.
        let quiet = Policy {
            rules: vec![Rule {
                matches: vec!["aws-sdk".into()],
                group: Some("sdk".into()),
                ..Rule::default()
            }],
            ..policy
        };
        let mut found = found;
        if let Some(cargo) = found.get_mut(&Ecosystem::Cargo) {
            cargo.updates.retain(|u| u.name != "aws-sdk");
        }
        let made = groups(&found, DepsGrouping::Ecosystem, &quiet);
        assert_eq!(made[0].branch, "pitcrew/deps-cargo");
        assert_eq!(made[0].held_back.len(), 1);
        assert!(made.iter().all(|g| !g.branch.contains("sdk")));

        // A group's branch closes only after a run whose every lookup answered.
        let named = ["aws".to_owned()];
        let clean = [Ecosystem::Cargo];
        assert!(!closable(
            "pitcrew/deps-aws",
            &clean,
            false,
            DepsGrouping::Ecosystem,
            &named
        ));
        assert!(closable(
            "pitcrew/deps-aws-major",
            &clean,
            true,
            DepsGrouping::Ecosystem,
            &named
        ));
        assert!(closable(
            "pitcrew/deps-cargo",
            &clean,
            false,
            DepsGrouping::Ecosystem,
            &named
        ));
        assert!(!closable(
            "pitcrew/deps-gcp",
            &clean,
            true,
            DepsGrouping::Ecosystem,
            &named
        ));
    }
}
