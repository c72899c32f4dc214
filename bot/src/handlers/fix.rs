//! `fix`: on a pull request, change the code as asked and push the commit to its head branch; on an
//! issue, do the same on a new branch and open a pull request that closes the issue.
//!
//! The guard rails, in order: the repository's tests run before and after the agent, and a change
//! that makes a passing test fail is never pushed to the pull request; a job that cannot deliver
//! (budget, stop, regression, conflict) keeps its work on `pitcrew/partial-<job>` and says so; a
//! fork that does not take the bot's push gets the patch in the comment; a commit that fails ends
//! the job with its report (usage included), never as a bare internal error.
//!
//! Every commit carries the job's `Pitcrew-Job` trailer: a job retried after its process died just
//! after the push finds its own commit on the branch and reports it instead of pushing again.

use std::sync::Arc;

use crate::agent::Outcome;
use crate::agent::events::EventSink;
use crate::config::repo::EffectiveSettings;
use crate::github::{CommitSha, Issue, IssueNumber, NewPull, PullRequest};
use crate::jobs::Finish;
use crate::prompts::{PromptError, Template};
use crate::report::{self, BranchRef, CommitRef, JobEnd, StopCause, TestDelta};
use crate::session::{AgentSession, Toolset};
use crate::workspace::deliver::{self, Delivery, PullHead};
use crate::workspace::diff::file_stats;
use crate::workspace::mirror::{RemoteRepo, Target};
use crate::workspace::pool::Lease;
use crate::workspace::push::Oid;
use crate::workspace::{CommitIdentity, JOB_TRAILER, LocalRepo, WorkspaceError};

use super::live::{Live, Targets};
use super::record::JobRecord;
use super::session::{Spent, agent_run, run_dir, run_tests};
use super::{HandlerError, JobEnv};

/// `@agent fix` on a pull request.
pub async fn on_pull_request(env: &JobEnv) -> Result<(Finish, Spent), HandlerError> {
    let number = env.number()?;
    let pull = env.github.get_pull(&env.repo, number).await?;
    if pull.state != "open" {
        env.reply("This pull request is closed, so I will not change it. Reopen it and ask again.")
            .await?;
        return Ok((Finish::Failed("the pull request is closed".into()), Spent::default()));
    }
    let repo_config = env.repo_config().await?;
    let settings = repo_config.apply(env.config());
    let targets = super::start_reporting(env, Some(&pull.head.sha)).await?;
    // An earlier attempt that pushed and was waiting for CI when its process stopped waits again.
    let result = match super::ci_loop::resumed(env).await {
        Some(state) => super::ci_loop::run(env, &settings, &targets, state).await,
        None => fix_pull_request(env, &settings, &targets, &pull).await,
    };
    super::closed_out(env, &targets, result).await
}

/// The fix, then — when it was pushed and the repository has CI — the loop that waits for CI and
/// fixes what the commit broke; the final report.
async fn fix_pull_request(
    env: &JobEnv,
    settings: &EffectiveSettings,
    targets: &Targets,
    pull: &PullRequest,
) -> Result<(Finish, Spent), HandlerError> {
    let attempt = attempt(env, settings, targets, pull, None).await?;
    if let JobEnd::Pushed { commit, .. } = &attempt.end
        && super::ci_loop::applies(env, settings, pull, &commit.sha).await
    {
        let commit = commit.sha.clone();
        let state = super::ci_loop::LoopState::first(settings, pull, pull.head.sha.as_str(), &commit, attempt);
        return super::ci_loop::run(env, settings, targets, state).await;
    }
    let Attempt {
        end,
        outcome,
        changed,
        tests,
    } = attempt;
    finish(env, targets, end, outcome, changed, tests, settings).await
}

/// What one change of a pull request came to: delivered (`end`), what the agent did, the files
/// changed since `start` and the tests before and after.
pub(crate) struct Attempt {
    pub end: JobEnd,
    pub outcome: Outcome,
    pub changed: Vec<crate::workspace::diff::FileStat>,
    pub tests: (report::TestRun, report::TestRun),
}

/// One change of the pull request at its head: the agent at work (on `task`, else what was asked),
/// the commit and its delivery to the branch, with a lease on the head it started from; nothing
/// reported yet. `since`: the commit the changed files are counted from (else the head).
pub(crate) async fn attempt(
    env: &JobEnv,
    settings: &EffectiveSettings,
    targets: &Targets,
    pull: &PullRequest,
    task: Option<(String, Oid)>,
) -> Result<Attempt, HandlerError> {
    let token = env.github.token().await?;
    let remote = RemoteRepo {
        url: super::parse_clone_url(&env.request.repo.clone_url)?,
        full_name: env.repo.to_string(),
    };
    let context = super::pull_context(
        env,
        pull,
        "Your commit is pushed to the pull request's branch, so keep the change to what was asked.",
    )?;
    let lease = super::lease_pull_head(env, pull).await?;
    let start = lease.repo().head()?;
    let (task, since) = match task {
        Some((task, since)) => (Some(task), since),
        None => (None, start),
    };

    let root = lease.path().to_owned();
    let work = work(env, settings, targets, &root, context, task).await;
    let (outcome, tests, stopped) = match work {
        Ok(done) => done,
        Err(error) => {
            lease.release().await;
            return Err(error);
        }
    };
    let mut changed = changed_stats(lease.repo(), since);
    if let Err(why) = stopped {
        // Not back to the pool either: a dropped lease deletes its copy.
        drop(lease);
        let end = commit_failed_end(why);
        return Ok(Attempt {
            end,
            outcome,
            changed,
            tests,
        });
    }
    let commit = match commit(env, lease.repo(), &outcome, &mut changed) {
        Ok(commit) => commit,
        Err(error) => {
            lease.release().await;
            let end = commit_failed_end(error);
            return Ok(Attempt {
                end,
                outcome,
                changed,
                tests,
            });
        }
    };
    let head_repo = pull.head.repo.as_ref().map(|r| RemoteRepo {
        url: super::parse_clone_url(&r.clone_url).unwrap_or_else(|_| remote.url.clone()),
        full_name: r.full_name.clone(),
    });
    let cause = stop_cause(&outcome, &tests);
    let end = match (commit, cause) {
        (None, Some(cause)) => JobEnd::Stopped { cause, saved: None },
        (None, None) => JobEnd::NoChanges,
        (Some(_), Some(cause)) => {
            let saved = save_partial(env, &root, &remote, &token).await;
            JobEnd::Stopped { cause, saved }
        }
        (Some(_), None) => {
            let pull_head = PullHead {
                base_repo: env.repo.to_string(),
                head_repo,
                head_ref: pull.head.branch.clone(),
                maintainer_can_modify: pull.maintainer_can_modify,
            };
            // The last moment this attempt can learn that the job is another worker's now.
            env.control.fence().await?;
            let delivered = {
                let token = token.clone();
                let raw_path = root.clone();
                tokio::task::spawn_blocking(move || {
                    let repo = LocalRepo::open(&raw_path)?;
                    deliver::deliver_to_pull_request(&repo, &pull_head, &token, start)
                })
                .await
                .map_err(|e| HandlerError::Other(format!("the push task failed: {e}")))??
            };
            match delivered {
                Delivery::Pushed { commit, rebased, .. } => JobEnd::Pushed {
                    branch: pull.head.branch.clone(),
                    commit: commit_ref(env, commit),
                    rebased,
                },
                Delivery::NothingToPush => JobEnd::NoChanges,
                Delivery::AlreadyPushed { commit } => {
                    tracing::info!(%commit, "an earlier attempt of this job already pushed its commit");
                    env.note(format!(
                        "An earlier attempt of this job already pushed {commit} to `{}` before it was interrupted; \
                         this attempt pushed nothing new.",
                        pull.head.branch
                    ));
                    JobEnd::Pushed {
                        branch: pull.head.branch.clone(),
                        commit: commit_ref(env, commit),
                        rebased: false,
                    }
                }
                Delivery::AlreadyApplied { remote_tip } => {
                    env.note(format!(
                        "`{}` already has this change (at {remote_tip}); nothing was pushed.",
                        pull.head.branch
                    ));
                    JobEnd::NoChanges
                }
                Delivery::Conflict { files, .. } => {
                    let saved = save_partial(env, &root, &remote, &token).await;
                    JobEnd::Stopped {
                        cause: StopCause::PushConflict { files },
                        saved,
                    }
                }
                Delivery::Patch { patch, reason } => {
                    tracing::info!(%reason, "offering a patch instead of a push");
                    let saved = save_partial(env, &root, &remote, &token).await;
                    JobEnd::Patch {
                        diff: patch,
                        branch: saved,
                    }
                }
            }
        }
    };
    lease.release().await;
    Ok(Attempt {
        end,
        outcome,
        changed,
        tests,
    })
}

/// What the agent is told about the issue it fixes.
fn issue_context(env: &JobEnv, issue: &Issue) -> Result<String, PromptError> {
    let prompts = &env.services.prompts;
    let mut context = prompts.render(
        Template::ContextIssue,
        &[
            ("number", &issue.number.0.to_string()),
            ("repo", &env.repo.to_string()),
            ("title", &issue.title),
            ("author", &issue.user.login),
            ("asked", &format!("Asked by @{}.", env.request.requested_by.login)),
            (
                "role",
                &format!(
                    "Your change goes to a new branch off `{}` and a pull request that closes the issue.",
                    env.request.repo.default_branch
                ),
            ),
        ],
    )?;
    let body = prompts.render(
        Template::ContextIssueBody,
        &[("body", &super::quote_capped(&issue.body))],
    )?;
    super::push_block(&mut context, &body);
    Ok(context)
}

/// `@agent fix` on an issue (or an assignment or label): a new branch and a pull request.
pub async fn on_issue(env: &JobEnv) -> Result<(Finish, Spent), HandlerError> {
    let number = env.number()?;
    let issue = env.github.get_issue(&env.repo, number).await?;
    let repo_config = env.repo_config().await?;
    let settings = repo_config.apply(env.config());

    let token = env.github.token().await?;
    let remote = RemoteRepo {
        url: super::parse_clone_url(&env.request.repo.clone_url)?,
        full_name: env.repo.to_string(),
    };
    let default_branch = env.request.repo.default_branch.clone();
    let mirror = env.services.mirrors.prepare(&remote, &token, &[]).await?;
    let lease = env
        .services
        .pool
        .lease(&mirror, Target::Branch(default_branch.clone()))
        .await?;
    let start = lease.repo().head()?;
    let targets = super::start_reporting(env, Some(&CommitSha(start.to_string()))).await?;
    // An earlier attempt that opened the pull request and was waiting for its CI waits again.
    if let Some(state) = super::ci_loop::resumed(env).await {
        lease.release().await;
        let result = super::ci_loop::run(env, &settings, &targets, state).await;
        return super::closed_out(env, &targets, result).await;
    }
    let checkout = Checkout {
        lease,
        start,
        remote,
        token,
    };
    let result = fix_issue(env, &settings, &targets, &issue, checkout).await;
    super::closed_out(env, &targets, result).await
}

/// An issue job's working copy (leased at the default branch's head `start`) and how to push.
struct Checkout {
    lease: Lease,
    start: Oid,
    remote: RemoteRepo,
    token: secrecy::SecretString,
}

/// Everything after the reports exist: the work, the branch, the pull request and the final report.
async fn fix_issue(
    env: &JobEnv,
    settings: &EffectiveSettings,
    targets: &Targets,
    issue: &Issue,
    checkout: Checkout,
) -> Result<(Finish, Spent), HandlerError> {
    let Checkout {
        lease,
        start,
        remote,
        token,
    } = checkout;
    let default_branch = env.request.repo.default_branch.clone();
    let root = lease.path().to_owned();
    let work = match issue_context(env, issue) {
        Ok(context) => work(env, settings, targets, &root, context, None).await,
        Err(error) => Err(error.into()),
    };
    let (outcome, tests, stopped) = match work {
        Ok(done) => done,
        Err(error) => {
            lease.release().await;
            return Err(error);
        }
    };
    let mut changed = changed_stats(lease.repo(), start);
    if let Err(why) = stopped {
        // Not back to the pool either: a dropped lease deletes its copy.
        drop(lease);
        return commit_failed(env, targets, why, outcome, changed, tests, settings).await;
    }
    let branch = deliver::issue_branch(issue.number.0, &issue.title);
    let created = lease.repo().create_branch(&branch);
    let commit = match commit(env, lease.repo(), &outcome, &mut changed) {
        Ok(commit) => commit,
        Err(error) => {
            lease.release().await;
            return commit_failed(env, targets, error, outcome, changed, tests, settings).await;
        }
    };
    let cause = stop_cause(&outcome, &tests);
    let end = match (commit, cause, created) {
        (None, Some(cause), _) => JobEnd::Stopped { cause, saved: None },
        (None, None, _) => JobEnd::NoChanges,
        (Some(_), Some(cause), _) => {
            let saved = save_partial(env, &root, &remote, &token).await;
            JobEnd::Stopped { cause, saved }
        }
        (Some(_), None, Err(error)) => {
            lease.release().await;
            return Err(error.into());
        }
        (Some(_), None, Ok(_)) => {
            push_branch(&env.control, &root, &remote, &token, &branch).await?;
            let title = format!("Fix #{}: {}", issue.number.0, issue.title);
            let stats = file_stats(lease.repo(), start, None).unwrap_or_default();
            let delta = tests_delta(&tests);
            let body =
                report::replies::issue_pr_body(&env.job_id(), issue.number.0, &outcome.summary, &stats, delta.as_ref());
            let created = env
                .github
                .create_pull(
                    &env.repo,
                    &NewPull {
                        title: report::markdown::inline(&title),
                        body,
                        head: branch.clone(),
                        base: default_branch.clone(),
                        draft: false,
                    },
                )
                .await?;
            JobEnd::PullRequestOpened {
                number: created.number.0,
                url: created.html_url,
            }
        }
    };
    let pushed = lease.repo().head().ok();
    lease.release().await;
    // The pull request it opened runs CI on the branch's commit: wait for it, and fix what it broke.
    if let (JobEnd::PullRequestOpened { number, .. }, Some(pushed)) = (&end, pushed) {
        let pull = env.github.get_pull(&env.repo, IssueNumber(*number)).await?;
        let commit = pushed.to_string();
        if super::ci_loop::applies(env, settings, &pull, &commit).await {
            let attempt = Attempt {
                end,
                outcome,
                changed,
                tests,
            };
            let state = super::ci_loop::LoopState::first(settings, &pull, &start.to_string(), &commit, attempt);
            return super::ci_loop::run(env, settings, targets, state).await;
        }
    }
    finish(env, targets, end, outcome, changed, tests, settings).await
}

/// The tests before, the agent, the tests after — in the sandbox over the lease's copy.
/// What the agent did, the tests before and after, and whether the sandbox stopped (else why not).
type Worked = (Outcome, (report::TestRun, report::TestRun), Result<(), String>);

async fn work(
    env: &JobEnv,
    settings: &EffectiveSettings,
    targets: &Targets,
    root: &std::path::Path,
    context: String,
    task: Option<String>,
) -> Result<Worked, HandlerError> {
    let run_dir = run_dir(env.config(), &env.job_id());
    let session = AgentSession::start(agent_run(env, settings, root, run_dir)).await?;
    let before = run_tests(&session).await;
    let tests_before = JobRecord::TestsBefore {
        summary: test_line(&before),
    };
    let _ = env.control.record(&tests_before).await;
    let instructions = session.instructions();
    let task = task.unwrap_or_else(|| asked_task(env));
    let prompt = env.services.prompts.render(
        Template::Fix,
        &[
            ("task", task.trim()),
            ("context", &context),
            ("instructions", &instructions),
        ],
    )?;
    let live = Live::start(targets.clone());
    let outcome = session
        .run_agent(prompt, Toolset::Full, live.clone() as Arc<dyn EventSink>)
        .await;
    live.close().await;
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(error) => {
            let _ = session.stop().await;
            return Err(error.into());
        }
    };
    let after = if env.control.is_cancelled() {
        report::TestRun::NotRun
    } else {
        run_tests(&session).await
    };
    // Nothing of the sandbox may run while git reads the working tree: a container that could not
    // be removed may still hold a process racing it, and then nothing is committed.
    let stopped = session.stop().await.map_err(|error| {
        format!(
            "the sandbox could not be stopped ({error}), so nothing was committed: a process in it could still be \
             changing the working tree"
        )
    });
    Ok((outcome, (before, after), stopped))
}

/// What was asked, in the requester's words, or the plain task of a fix.
pub(crate) fn asked_task(env: &JobEnv) -> String {
    env.request
        .instructions
        .clone()
        .filter(|text| !text.trim().is_empty())
        .unwrap_or_else(|| "Fix the problem this pull request or issue is about.".to_owned())
}

/// Commits what the agent changed as the bot, with the requester as co-author and the job's
/// trailer; says in the report what was left out, and takes left-out repositories off `changed`.
fn commit(
    env: &JobEnv,
    repo: &LocalRepo,
    outcome: &Outcome,
    changed: &mut Vec<crate::workspace::diff::FileStat>,
) -> Result<Option<String>, WorkspaceError> {
    let identity = CommitIdentity {
        name: env.config().github.bot_name.clone(),
        email: env.config().github.bot_email.clone(),
    };
    let requester = &env.request.requested_by;
    let co_author = format!(
        "{} <{}>",
        requester.login,
        match requester.id {
            Some(id) => format!("{id}+{}@users.noreply.github.com", requester.login),
            None => format!("{}@users.noreply.github.com", requester.login),
        }
    );
    let message = commit_message(env, &outcome.summary);
    let limit = env.config().agent.max_new_file_bytes;
    // The sandbox id (`<instance>-<job>`) names the job across attempts and across servers.
    let job = env.sandbox_id();
    let trailers = [("Co-authored-by", co_author.as_str()), (JOB_TRAILER, job.as_str())];
    let result = repo.commit_all(&message, limit, &trailers, Some(&identity))?;
    if !result.skipped_large.is_empty() {
        tracing::info!(files = ?result.skipped_large, "new files over the size limit were not committed");
        env.note(format!(
            "New files larger than {} were left out of the commit: {}. Raise `[agent] max_new_file` if they belong \
             in the repository.",
            crate::config::bytesize::format_byte_size(limit),
            code_list(&result.skipped_large)
        ));
    }
    if !result.skipped_repositories.is_empty() {
        changed.retain(|file| !result.skipped_repositories.contains(&file.path));
        tracing::info!(dirs = ?result.skipped_repositories, "nested git repositories were not committed");
        env.note(format!(
            "Directories that are git repositories of their own were left out of the commit, as git leaves them: {}. \
             Add one as a submodule if it belongs in the repository.",
            code_list(&result.skipped_repositories)
        ));
    }
    if let Some(note) = withheld_note(&result) {
        tracing::warn!(redacted = ?result.redacted, left_out = ?result.withheld, "secrets withheld from the commit");
        env.note(note);
    }
    Ok(result.commit)
}

/// The report's sentence about files the secret filter changed or left out of the commit.
fn withheld_note(result: &crate::workspace::CommitResult) -> Option<String> {
    let list = |files: &[String]| files.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ");
    let mut parts = Vec::new();
    if !result.redacted.is_empty() {
        parts.push(format!(
            "committed with `[redacted]` in place of it: {}",
            list(&result.redacted)
        ));
    }
    if !result.withheld.is_empty() {
        parts.push(format!("left out of the commit: {}", list(&result.withheld)));
    }
    (!parts.is_empty()).then(|| {
        format!(
            "pitcrew withheld a secret (a key or token it holds, or one shaped like it) from files the agent changed; {}.",
            parts.join("; ")
        )
    })
}

fn code_list(paths: &[String]) -> String {
    paths.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
}

/// The end of a change whose commit failed: git's words; nothing was pushed.
fn commit_failed_end(error: impl std::fmt::Display) -> JobEnd {
    tracing::error!(%error, "committing the change failed");
    JobEnd::Stopped {
        cause: StopCause::Commit {
            message: error.to_string(),
        },
        saved: None,
    }
}

/// Ends a job whose commit failed with the usual report, what the agent did and spent included:
/// the failure is git's, said in its words, and nothing was pushed.
async fn commit_failed(
    env: &JobEnv,
    targets: &Targets,
    error: impl std::fmt::Display,
    outcome: Outcome,
    changed: Vec<crate::workspace::diff::FileStat>,
    tests: (report::TestRun, report::TestRun),
    settings: &EffectiveSettings,
) -> Result<(Finish, Spent), HandlerError> {
    tracing::error!(%error, "committing the change failed");
    let end = JobEnd::Stopped {
        cause: StopCause::Commit {
            message: error.to_string(),
        },
        saved: None,
    };
    finish(env, targets, end, outcome, changed, tests, settings).await
}

fn commit_message(env: &JobEnv, summary: &str) -> String {
    // The request in its own words: `@agent fix the flaky test` → `pitcrew: fix the flaky test`.
    let subject = match env
        .request
        .instructions
        .as_deref()
        .and_then(|text| text.lines().find(|l| !l.trim().is_empty()))
    {
        Some(line) => format!("fix {}", line.trim()),
        None => format!("fix what was asked in {}", env.request.subject),
    };
    let subject: String = subject.chars().take(72).collect();
    let body: String = summary.chars().take(4000).collect();
    format!(
        "pitcrew: {subject}\n\n{}\n\nRequested by @{} in {}{}.",
        body.trim(),
        env.request.requested_by.login,
        env.repo,
        env.request.subject
    )
}

/// Why the job must not deliver to the pull request, if it must not.
fn stop_cause(outcome: &Outcome, tests: &(report::TestRun, report::TestRun)) -> Option<StopCause> {
    if let Some(cause) = StopCause::from_stop(&outcome.stop) {
        return Some(cause);
    }
    let delta = TestDelta::compare(tests.0.clone(), tests.1.clone());
    delta.is_regression().then_some(StopCause::TestsRegressed)
}

pub(crate) fn tests_delta(tests: &(report::TestRun, report::TestRun)) -> Option<TestDelta> {
    match tests {
        (report::TestRun::NotRun, report::TestRun::NotRun) => None,
        (before, after) => Some(TestDelta::compare(before.clone(), after.clone())),
    }
}

/// Pushes the work to `pitcrew/partial-<job>` so nothing is lost; `None` when that fails too.
async fn save_partial(
    env: &JobEnv,
    repo: &std::path::Path,
    remote: &RemoteRepo,
    token: &secrecy::SecretString,
) -> Option<BranchRef> {
    let name = report::partial_branch_name(&env.job_id());
    match push_branch(&env.control, repo, remote, token, &name).await {
        Ok(()) => Some(BranchRef {
            url: format!("{}/tree/{name}", super::web_url(&env.request.repo)),
            clone_url: remote.url.to_string(),
            name,
        }),
        Err(error) => {
            tracing::warn!(%error, "could not save the partial work");
            None
        }
    }
}

/// Pushes `branch` of the bot's own (after confirming the job is still this attempt's).
pub(crate) async fn push_branch(
    control: &crate::jobs::JobControl,
    repo: &std::path::Path,
    remote: &RemoteRepo,
    token: &secrecy::SecretString,
    branch: &str,
) -> Result<(), HandlerError> {
    control.fence().await?;
    let path = repo.to_owned();
    let remote = remote.clone();
    let token = token.clone();
    let branch = branch.to_owned();
    tokio::task::spawn_blocking(move || -> Result<(), WorkspaceError> {
        let repo = LocalRepo::open(&path)?;
        deliver::push_bot_branch(&repo, &remote, &token, &branch)?;
        Ok(())
    })
    .await
    .map_err(|e| HandlerError::Other(format!("the push task failed: {e}")))??;
    Ok(())
}

/// The job's end, reported (see [`super::conclude`]).
pub(crate) async fn finish(
    env: &JobEnv,
    targets: &Targets,
    end: JobEnd,
    outcome: Outcome,
    changed_files: Vec<crate::workspace::diff::FileStat>,
    tests: (report::TestRun, report::TestRun),
    settings: &EffectiveSettings,
) -> Result<(Finish, Spent), HandlerError> {
    let ended = super::Ended {
        end,
        outcome,
        changed_files,
        tests: tests_delta(&tests),
        ci: None,
    };
    Ok(super::conclude(env, targets, ended, &[], settings).await)
}

fn changed_stats(repo: &LocalRepo, start: Oid) -> Vec<crate::workspace::diff::FileStat> {
    file_stats(repo, start, None).unwrap_or_default()
}

pub(crate) fn commit_ref(env: &JobEnv, commit: Oid) -> CommitRef {
    CommitRef {
        sha: commit.to_string(),
        url: format!("{}/commit/{commit}", super::web_url(&env.request.repo)),
    }
}

fn test_line(run: &report::TestRun) -> String {
    match run {
        report::TestRun::NotRun => "not run".into(),
        report::TestRun::NoResults => "no results".into(),
        report::TestRun::Ran(report) => format!("{} passed, {} failed", report.passed, report.failed),
    }
}
