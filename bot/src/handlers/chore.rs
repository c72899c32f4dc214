//! `chore deps`: keep a repository's dependencies current. On the default branch's head, each
//! enabled ecosystem's manifests are scanned and its registry asked for newer versions; the
//! policy (`[chores.deps]`) picks the updates, grouped into pull requests (one per ecosystem by
//! default, majors apart). For each pull request a fresh working copy gets the manifest edits on
//! the host, the lockfile refresh in the sandbox (with network for that step only, as the operator
//! allows), and the tests; if the tests fail, the agent gets the failure and the updates and adapts
//! the code or reverts the update it cannot make work. The result is committed as the bot,
//! force-pushed to `pitcrew/deps-<ecosystem>` and opened as a pull request, or the existing one
//! is updated; pull requests of earlier runs whose updates are no longer needed are closed. A run
//! that finds nothing to do posts nothing (unless someone asked).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::agent::StopReason;
use crate::chores::plan::{self, Found};
use crate::chores::{RegistryClient, Update, UpdateKind};
use crate::config::deps::Ecosystem;
use crate::config::repo::{DepsGrouping, EffectiveSettings};
use crate::github::{NewPull, PullRequest, PullUpdate};
use crate::jobs::Finish;
use crate::prompts::Template;
use crate::report::TestRun;
use crate::report::chore::{self as text, ChorePull, TestOutcome};
use crate::session::{AgentRun, AgentSession, NetworkStep, SessionError, Toolset};
use crate::triggers::JobSource;
use crate::workspace::mirror::{Mirror, RemoteRepo, Target};
use crate::workspace::{CommitIdentity, LocalRepo, WorkspaceError};

use super::session::{Spent, agent_run, run_dir, run_tests};
use super::{HandlerError, JobEnv};

/// The longest a lockfile refresh may take.
const LOCK_TIMEOUT: Duration = Duration::from_secs(15 * 60);
/// The prefix of every branch a dependency chore pushes.
const BRANCH_PREFIX: &str = "pitcrew/deps";

/// One pull request to make: its branch and the manifest updates that go into it.
#[derive(Debug, Clone)]
struct Group {
    branch: String,
    ecosystems: Vec<Ecosystem>,
    major: bool,
    updates: Vec<Update>,
}

/// The chore, from its request to its pull requests.
pub async fn run(env: &JobEnv) -> Result<(Finish, Spent), HandlerError> {
    let asked = !matches!(env.request.source, JobSource::Schedule { .. }) && env.request.number != 0;
    let repo_config = env.repo_config().await?;
    let settings = repo_config.apply(env.config());
    let deps = &repo_config.deps;
    let policy = deps.policy();
    let ecosystems: Vec<Ecosystem> = match &deps.ecosystems {
        Some(set) => set.iter().copied().collect(),
        None => Ecosystem::ALL.to_vec(),
    };
    let registry = RegistryClient::new(env.config().chores.registries.clone()).map_err(HandlerError::Other)?;

    let token = env.github.token().await?;
    let remote = RemoteRepo {
        url: super::parse_clone_url(&env.request.repo.clone_url)?,
        full_name: env.repo.to_string(),
    };
    let mirror = env.services.mirrors.prepare(&remote, &token, &[]).await?;
    let lease = env
        .services
        .pool
        .lease(&mirror, Target::Branch(env.request.repo.default_branch.clone()))
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
        let f = plan::find(ecosystem, lease.path(), &registry, &env.github, &policy).await;
        if f.dependencies > 0 || !f.problems.is_empty() {
            found.insert(ecosystem, f);
        }
    }
    lease.release().await;
    let mut problems: Vec<String> = found.values().flat_map(|f| f.problems.clone()).collect();
    let _ = env
        .control
        .event(
            "chore_plan",
            json!({
                "base": base,
                "ecosystems": found.iter().map(|(e, f)| json!({
                    "ecosystem": e.as_str(), "dependencies": f.dependencies, "updates": f.updates.len(),
                })).collect::<Vec<_>>(),
                "problems": problems,
            }),
        )
        .await;

    let groups = groups(&found, deps.group);
    let open: Vec<PullRequest> = env
        .github
        .list_open_pulls(&env.repo)
        .await?
        .into_iter()
        .filter(|p| p.head.branch.starts_with(BRANCH_PREFIX) && !p.is_cross_repository())
        .collect();
    let chore = ChoreRun {
        env,
        settings: &settings,
        mirror: &mirror,
        remote: &remote,
        token: &token,
        base: &base,
    };
    let mut spent = Spent::default();
    let mut delivered: Vec<(String, u64, bool)> = Vec::new();
    let mut branches_with_updates = Vec::new();
    let mut failed_groups = 0;
    for group in &groups {
        if env.control.is_cancelled() {
            return Ok((Finish::Cancelled("stopped before the chore finished".into()), spent));
        }
        // One pull request's failure (a lockfile that will not refresh, a push refused) is said
        // and the others still go out.
        let existing = open.iter().find(|p| p.head.branch == group.branch);
        let outcome = match run_group(&chore, group, existing.is_some()).await {
            Ok(outcome) => outcome,
            Err(error) => {
                tracing::warn!(branch = %group.branch, %error, "a dependency pull request failed");
                problems.push(format!("`{}`: {}", group.branch, super::public_error(&error)));
                failed_groups += 1;
                // Its branch is not closed as superseded: its updates are still wanted.
                branches_with_updates.push(group.branch.clone());
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
        spent.add(&group_spent);
        branches_with_updates.push(group.branch.clone());
        let title = text::title(&pull);
        let body = text::body(&pull, &env.job_id());
        match existing {
            Some(existing) => {
                let change = PullUpdate {
                    title: Some(&title),
                    body: Some(&body),
                    state: None,
                };
                env.github.update_pull(&env.repo, existing.number, &change).await?;
                delivered.push((title, existing.number.0, true));
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
                delivered.push((title, created.number.0, false));
            }
        }
    }

    // Earlier runs' pull requests whose branch got nothing this time: their updates were merged
    // or went elsewhere. Only for ecosystems read without a problem (a registry outage must not
    // close a pull request).
    let clean: Vec<Ecosystem> = found
        .iter()
        .filter(|(_, f)| f.problems.is_empty())
        .map(|(e, _)| *e)
        .collect();
    let mut closed = Vec::new();
    for pull in &open {
        let branch = pull.head.branch.as_str();
        if branches_with_updates.iter().any(|b| b == branch) || !closable(branch, &clean, deps.group) {
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

    let report = text::answer(&delivered, &problems, &env.job_id());
    if asked {
        env.reply(&report).await?;
    }
    let headline = match delivered.len() {
        0 => "dependencies are up to date".to_owned(),
        1 => "1 dependency pull request".to_owned(),
        n => format!("{n} dependency pull requests"),
    };
    let _ = env.control.event("finished", json!({ "headline": headline })).await;
    let details = json!({
        "headline": headline,
        "conclusion": "success",
        "commit": null,
        "pull_request": delivered.first().map(|(_, n, _)| *n),
        "summary": headline,
        "report": report,
        "chore": {
            "base": base,
            "pull_requests": delivered.iter().map(|(t, n, u)| json!({"number": n, "title": t, "updated": u})).collect::<Vec<_>>(),
            "closed": closed,
            "problems": problems,
        },
    });
    if failed_groups > 0 && delivered.is_empty() {
        // Nothing went out and something broke: the job failed, with the reasons.
        let _ = env.control.event("result", details).await;
        return Ok((Finish::Failed(problems.join("; ")), spent));
    }
    Ok((Finish::Succeeded(details), spent))
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
fn groups(found: &BTreeMap<Ecosystem, Found>, grouping: DepsGrouping) -> Vec<Group> {
    let split = |f: &Found, major: bool| -> Vec<Update> {
        f.updates
            .iter()
            .filter(|u| (u.kind == UpdateKind::Major) == major)
            .cloned()
            .collect()
    };
    let mut out = Vec::new();
    match grouping {
        DepsGrouping::Ecosystem => {
            for (ecosystem, f) in found {
                let compatible = split(f, false);
                if !compatible.is_empty() || f.has_lockfile {
                    out.push(Group {
                        branch: format!("{BRANCH_PREFIX}-{}", ecosystem.as_str()),
                        ecosystems: vec![*ecosystem],
                        major: false,
                        updates: compatible,
                    });
                }
                let majors = split(f, true);
                if !majors.is_empty() {
                    out.push(Group {
                        branch: format!("{BRANCH_PREFIX}-{}-major", ecosystem.as_str()),
                        ecosystems: vec![*ecosystem],
                        major: true,
                        updates: majors,
                    });
                }
            }
        }
        DepsGrouping::All => {
            let ecosystems: Vec<Ecosystem> = found.keys().copied().collect();
            let compatible: Vec<Update> = found.values().flat_map(|f| split(f, false)).collect();
            if !compatible.is_empty() || found.values().any(|f| f.has_lockfile) {
                out.push(Group {
                    branch: BRANCH_PREFIX.to_owned(),
                    ecosystems: ecosystems.clone(),
                    major: false,
                    updates: compatible,
                });
            }
            let majors: Vec<Update> = found.values().flat_map(|f| split(f, true)).collect();
            if !majors.is_empty() {
                out.push(Group {
                    branch: format!("{BRANCH_PREFIX}-major"),
                    ecosystems,
                    major: true,
                    updates: majors,
                });
            }
        }
    }
    out
}

/// Whether an open pull request on `branch` belongs to a group this run computed cleanly.
fn closable(branch: &str, clean: &[Ecosystem], grouping: DepsGrouping) -> bool {
    let Some(rest) = branch.strip_prefix(BRANCH_PREFIX) else {
        return false;
    };
    match grouping {
        DepsGrouping::All => matches!(rest, "" | "-major"),
        DepsGrouping::Ecosystem => {
            let name = rest.trim_start_matches('-').trim_end_matches("-major");
            Ecosystem::parse(name).is_some_and(|e| clean.contains(&e))
        }
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
/// of the repository, the token and the base commit.
struct ChoreRun<'a> {
    env: &'a JobEnv,
    settings: &'a EffectiveSettings,
    mirror: &'a Mirror,
    remote: &'a RemoteRepo,
    token: &'a secrecy::SecretString,
    base: &'a str,
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
        Ok(Some((pull, _))) if !open_pull && declined(env, &group.branch, &text::table(&pull.updates)).await => {
            Ok(Grouped::Declined)
        }
        Ok(Some((pull, spent))) => {
            let message = text::commit_message(&pull);
            let identity = CommitIdentity {
                name: env.config().github.bot_name.clone(),
                email: env.config().github.bot_email.clone(),
            };
            let limit = env.config().agent.max_new_file_bytes;
            let path = root.clone();
            let committed = tokio::task::spawn_blocking(move || -> Result<Option<String>, WorkspaceError> {
                let repo = LocalRepo::open(&path)?;
                Ok(repo.commit_all(&message, limit, &[], Some(&identity))?.commit)
            })
            .await
            .map_err(|e| HandlerError::Other(format!("the commit task failed: {e}")))??;
            match committed {
                Some(_) => {
                    super::fix::push_branch(&root, chore.remote, chore.token, &pull.branch).await?;
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

async fn run_group_in(
    chore: &ChoreRun<'_>,
    root: &Path,
    group: &Group,
) -> Result<Option<(ChorePull, Spent)>, HandlerError> {
    let env = chore.env;
    let mut updates = Vec::new();
    for update in &group.updates {
        match plan::apply(root, update) {
            Ok(()) => updates.push(update.clone()),
            Err(problem) => env.note(format!("{} {} was not updated: {problem}", update.name, update.to)),
        }
    }
    let registries = &env.config().chores.registries;
    let commands: Vec<(String, String)> = group
        .ecosystems
        .iter()
        .flat_map(|e| plan::lock_commands(*e, root, registries))
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
    let run = AgentRun {
        sandbox_id: format!("{}-{}", env.sandbox_id(), short(&group.branch)),
        network_step: (!commands.is_empty()).then(|| NetworkStep {
            commands,
            network: env.config().chores.lock_network,
            timeout: LOCK_TIMEOUT,
        }),
        ..agent_run(env, chore.settings, root, run_dir)
    };
    let session = AgentSession::start(run).await.map_err(|error| match error {
        SessionError::NetworkStep {
            command,
            exit_code,
            stderr_tail,
        } => HandlerError::Other(format!(
            "the lockfile refresh `{command}` failed (exit {exit_code:?}):\n{stderr_tail}"
        )),
        error => HandlerError::Other(format!(
            "the lockfile refresh for `{}` failed: {}",
            group.branch,
            HandlerError::from(error)
        )),
    })?;
    let outcome = in_session(chore, &session, root, group, updates, before).await;
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

/// The tests after the refresh, the agent when they fail, and the updates that are left.
async fn in_session(
    chore: &ChoreRun<'_>,
    session: &AgentSession,
    root: &Path,
    group: &Group,
    mut updates: Vec<Update>,
    before: Vec<(Ecosystem, plan::Snapshot)>,
) -> Result<Option<(ChorePull, Spent)>, HandlerError> {
    let env = chore.env;
    let manifest_updated: Vec<String> = updates.iter().map(|u| u.name.clone()).collect();
    for (ecosystem, snapshot) in &before {
        let after = plan::snapshot(*ecosystem, root);
        updates.extend(plan::lock_changes(*ecosystem, snapshot, &after, &manifest_updated));
    }
    if updates.is_empty() {
        return Ok(None);
    }

    let mut spent = Spent::default();
    let mut agent_summary = None;
    let first = run_tests(session).await;
    let tests = match failing(&first) {
        None => match first {
            TestRun::NotRun => TestOutcome::NotRun,
            _ => TestOutcome::Passed { after_fix: false },
        },
        Some(failure) => {
            let prompt = env.services.prompts.render(
                Template::Chore,
                &[
                    ("updates", &text::updates_for_prompt(&updates)),
                    ("failure", &failure),
                    ("instructions", &session.instructions()),
                ],
            )?;
            let outcome = session
                .run_agent(prompt, Toolset::Full, Arc::new(crate::agent::events::NoEvents))
                .await?;
            spent = Spent::from_outcome(&outcome);
            if matches!(outcome.stop, StopReason::Finished) && !outcome.summary.trim().is_empty() {
                agent_summary = Some(outcome.summary.clone());
            }
            let second = run_tests(session).await;
            match failing(&second) {
                None => TestOutcome::Passed { after_fix: true },
                Some(_) => TestOutcome::Failing {
                    summary: summary_line(&second),
                },
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
    if updates.is_empty() {
        env.note(format!("every update of `{}` was reverted", group.branch));
        return Ok(None);
    }
    Ok(Some((
        ChorePull {
            branch: group.branch.clone(),
            ecosystems: group.ecosystems.clone(),
            major: group.major,
            updates,
            tests,
            agent_summary,
            reverted,
        },
        spent,
    )))
}

/// What the agent is told about failing tests; `None` when they pass or did not run.
fn failing(run: &TestRun) -> Option<String> {
    match run {
        TestRun::NotRun => None,
        TestRun::NoResults => Some(
            "The test command printed no results pitcrew could read: most often the project no longer builds. Run \
             the tests to see the errors."
                .to_owned(),
        ),
        TestRun::Ran(report) if report.failed == 0 && report.failures.is_empty() => None,
        TestRun::Ran(report) => {
            let mut out = format!("{} passed, {} failed.\n", report.passed, report.failed);
            for failure in report.failures.iter().take(20) {
                let place = match (&failure.file, failure.line) {
                    (Some(file), Some(line)) => format!(" at {file}:{line}"),
                    _ => String::new(),
                };
                out.push_str(&format!("\n- {}{place}:\n{}\n", failure.name, failure.message));
            }
            Some(out)
        }
    }
}

fn summary_line(run: &TestRun) -> String {
    match run {
        TestRun::Ran(report) => format!("{} passed, {} failed", report.passed, report.failed),
        TestRun::NoResults => "no results: the project may not build".into(),
        TestRun::NotRun => "not run".into(),
    }
}
