//! Job handlers: what a job does from its request to its report on GitHub. The worker pool calls
//! [`job_handler`]'s function with each claimed job; it reads the [`JobRequest`], acts for the kind
//! of job ([`fix`] on a pull request or an issue, `review`, `explain`, [`describe`], [`triage`] of
//! failed CI, [`chore`] and its pull requests' `rebase`, [`dashboard`]'s `ignore`), and returns how
//! it ended.
//!
//! A handler never loses a failure: whatever goes wrong is said on GitHub in plain words (the
//! progress comment and the check run), and the job ends failed with the same words.

pub mod chore;
pub mod ci_loop;
pub mod config_check;
pub mod dashboard;
pub mod describe;
pub mod explain;
pub mod fix;
pub mod live;
pub mod record;
pub mod review;
pub mod session;
pub mod triage;

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use crate::config::Config;
use crate::config::command::CommandKind;
use crate::config::repo::{REPO_CONFIG_PATH, RepoConfig};
use crate::github::PullRequest;
use crate::github::{
    CheckStatus, CommitSha, GithubAccess, GithubClient, GithubError, InstallationId, IssueNumber, NewCheckRun, RepoName,
};
use crate::jobs::{Finish, Job, JobControl, JobHandler, StopCause, StopRequest};
use crate::llm::Model;
use crate::prompts::{PromptError, Prompts, Template};
use crate::report;
use crate::tools::ReviewFinding;
use crate::triggers::{JobKind, JobRequest, ReplyTarget, Subject};
use crate::workspace::mirror::{MirrorCache, RemoteRepo, Target};
use crate::workspace::pool::{Lease, WorkspacePool};

use live::{ProgressComment, Targets};
use record::{JobRecord, Summary};

/// What every job shares: configuration, the GitHub App, the git cache and the model.
pub struct Services {
    pub config: Config,
    /// This server among others on one Docker engine (see [`crate::instance::instance_id`]).
    pub instance: String,
    pub prompts: Prompts,
    pub github: GithubAccess,
    pub mirrors: MirrorCache,
    pub pool: WorkspacePool,
    /// Replaces the configured model (tests hand in a scripted one).
    pub model: Option<Arc<dyn Model>>,
    /// Where finished jobs are counted for `/metrics` (the server's).
    pub metrics: Option<Arc<crate::metrics::Metrics>>,
    /// Finished sessions' code indexes, for the next job on their repository.
    pub index_shelf: crate::index::shelf::IndexShelf,
}

/// The function the worker pool runs for every job.
pub fn job_handler(services: Arc<Services>) -> JobHandler {
    Arc::new(move |job: Job, control: JobControl| {
        let services = services.clone();
        Box::pin(async move { services.run(job, control).await })
    })
}

/// Why a job could not go on. `Reported` failures were already said on GitHub.
#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    #[error("{0}")]
    Github(#[from] GithubError),
    #[error("{0}")]
    Workspace(#[from] crate::workspace::WorkspaceError),
    #[error("{0}")]
    Sandbox(#[from] crate::sandbox::SandboxError),
    #[error("{0}")]
    Model(#[from] crate::llm::LlmError),
    #[error("{0}")]
    Prompt(#[from] PromptError),
    #[error("{0}")]
    Fenced(#[from] crate::jobs::Fenced),
    #[error("{0}")]
    Other(String),
    /// Already said on GitHub; the job ends with these words.
    #[error("{0}")]
    Reported(String),
}

/// One job's view of the services: its request, its installation's client and its control.
pub struct JobEnv {
    pub services: Arc<Services>,
    pub job: Job,
    pub control: JobControl,
    pub request: JobRequest,
    pub repo: RepoName,
    pub installation: Option<InstallationId>,
    pub github: GithubClient,
    /// What the final report should also say (files left out of the commit, …).
    notes: std::sync::Mutex<Vec<String>>,
}

impl JobEnv {
    /// The issue or pull request the job is about; an error for a job about a commit or the whole
    /// repository (the trigger never asks for that; a stored request from elsewhere gets words).
    pub fn number(&self) -> Result<IssueNumber, HandlerError> {
        self.request.subject.number().ok_or_else(|| {
            HandlerError::Other(format!(
                "`{}` needs an issue or a pull request, not {}",
                self.request.kind.as_str(),
                self.request.subject
            ))
        })
    }

    /// The job's id as reports show it.
    pub fn job_id(&self) -> String {
        self.job.id.to_string()
    }

    /// Adds a line to the final report.
    pub fn note(&self, text: String) {
        self.notes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(text);
    }

    /// The job's sandbox name, unique on the Docker engine: `<instance>-<job>`.
    pub fn sandbox_id(&self) -> String {
        format!("{}-{}", self.services.instance, self.job.id)
    }

    pub fn config(&self) -> &Config {
        &self.services.config
    }

    /// The trigger word people use in this repository.
    pub fn trigger(&self, repo_config: &RepoConfig) -> String {
        repo_config
            .triggers
            .trigger
            .clone()
            .unwrap_or_else(|| self.config().agent.trigger.clone())
    }

    pub fn info(&self) -> report::JobInfo {
        report::JobInfo {
            id: self.job_id(),
            // The config check, which no command asks for, never reports through a job's
            // progress comment or check run.
            kind: self.request.kind.command().unwrap_or(CommandKind::Review),
            requested_by: report::RequestedBy::User(self.request.requested_by.login.to_string()),
            instructions: self.request.instructions.clone(),
            check_run_url: None,
        }
    }

    /// Posts `body` where the request came from: the review thread, else the conversation; a job
    /// with nowhere to answer (a scheduled chore, a commit's triage) posts nothing.
    pub async fn reply(&self, body: &str) -> Result<(), GithubError> {
        match &self.request.reply_to {
            ReplyTarget::Nowhere => {}
            ReplyTarget::ReviewThread {
                pull_number,
                comment_id,
            } => {
                self.github
                    .reply_to_review_comment(&self.repo, *pull_number, *comment_id, body)
                    .await?;
            }
            ReplyTarget::Issue { number, .. } => {
                self.github.create_issue_comment(&self.repo, *number, body).await?;
            }
        }
        Ok(())
    }

    /// The repository's `.github/pitcrew.toml` from its default branch. An invalid file is
    /// reported (file, line, problem) and ends the job: nothing runs on a configuration the
    /// repository's owners did not mean. A job with no issue or pull request to answer on (a
    /// scheduled chore, a CI failure GitHub names no pull request for) has nobody to tell, and an
    /// automatic job on a pull request (a review or description as it opens or changes) must not
    /// repeat the problems on every push: their valid settings count, and the problems go to the
    /// log.
    pub async fn repo_config(&self) -> Result<RepoConfig, HandlerError> {
        let text = self
            .github
            .get_file(&self.repo, REPO_CONFIG_PATH, &self.request.repo.default_branch)
            .await?;
        let Some(text) = text else {
            return Ok(RepoConfig::default());
        };
        let automatic = matches!(self.request.source, crate::triggers::JobSource::PullRequest { .. });
        if self.request.subject.number().is_none() || automatic {
            let (config, problems) = RepoConfig::parse_lenient(&text);
            for problem in &problems {
                tracing::warn!(%problem, "ignored a problem in the repository's configuration");
            }
            return Ok(config);
        }
        match RepoConfig::parse(&text) {
            Ok(config) => Ok(config),
            Err(problems) => {
                let file_url = format!(
                    "{}/blob/{}/{REPO_CONFIG_PATH}",
                    web_url(&self.request.repo),
                    self.request.repo.default_branch
                );
                let problems: Vec<report::replies::ConfigProblem> = problems
                    .iter()
                    .map(|p| report::replies::ConfigProblem {
                        line: Some(p.line),
                        message: p.message.clone(),
                    })
                    .collect();
                let body = report::replies::invalid_config(REPO_CONFIG_PATH, Some(&file_url), &problems);
                self.reply(&body).await?;
                Err(HandlerError::Reported(format!(
                    "{REPO_CONFIG_PATH} is invalid ({} problem{})",
                    problems.len(),
                    if problems.len() == 1 { "" } else { "s" }
                )))
            }
        }
    }
}

impl Services {
    async fn run(self: Arc<Self>, job: Job, control: JobControl) -> Finish {
        let started = Instant::now();
        let kind = job.kind.clone();
        let (finish, spent) = self.clone().run_job(job, control).await;
        if let Some(metrics) = &self.metrics {
            metrics.record_job(&kind, finish.state(), started.elapsed(), &spent.usage, spent.cost_usd);
        }
        finish
    }

    async fn run_job(self: Arc<Self>, job: Job, control: JobControl) -> (Finish, session::Spent) {
        let request: JobRequest = match serde_json::from_value(job.request.clone()) {
            Ok(request) => request,
            Err(error) => {
                return (
                    Finish::Failed(format!("the stored request is not a job request: {error}")),
                    session::Spent::default(),
                );
            }
        };
        if let Some(subject) = subject(&request) {
            crate::jobs::record_subject(&subject);
        }
        let installation = request.installation_id;
        let Some(github) = self.github.client(installation) else {
            return (
                Finish::Failed("the request names no GitHub App installation".into()),
                session::Spent::default(),
            );
        };
        // Every write to GitHub for the job asks first whether the job is still this attempt's.
        let fence_control = control.clone();
        let github = github.fenced(Arc::new(move || {
            let control = fence_control.clone();
            Box::pin(async move { control.fence().await.map_err(|fenced| fenced.to_string()) })
        }));
        let repo = request.repo.name.clone();
        let env = JobEnv {
            services: self,
            job,
            control,
            request,
            repo,
            installation,
            github,
            notes: std::sync::Mutex::new(Vec::new()),
        };
        let started = JobRecord::Started {
            kind: env.job.kind.clone(),
        };
        let _ = env.control.record(&started).await;
        let result = match (&env.request.kind, &env.request.subject) {
            (JobKind::Fix, Subject::PullRequest { .. }) => fix::on_pull_request(&env).await,
            (JobKind::Fix, Subject::Issue { .. }) => fix::on_issue(&env).await,
            (JobKind::Fix, subject) => Err(HandlerError::Other(format!(
                "`fix` needs an issue or a pull request, not {subject}"
            ))),
            (JobKind::Review, Subject::PullRequest { .. }) => review::on_pull_request(&env).await,
            // The trigger refuses these; a stored request from elsewhere still gets plain words.
            (JobKind::Review, _) => Err(HandlerError::Other("`review` works on pull requests only".into())),
            (JobKind::Explain, _) => explain::run(&env).await,
            (JobKind::Describe, Subject::PullRequest { .. }) => describe::on_pull_request(&env).await,
            (JobKind::Describe, _) => Err(HandlerError::Other("`describe` works on pull requests only".into())),
            (JobKind::Triage, _) => triage::run(&env).await,
            (JobKind::Chore(_), _) => chore::run(&env).await,
            (JobKind::Ignore { .. }, _) => dashboard::ignore(&env).await,
            (JobKind::Rebase, _) => chore::rebase(&env).await,
            (JobKind::ConfigCheck, _) => config_check::run(&env).await,
        };
        match result {
            Ok((finish, spent)) => (finish, spent),
            Err(HandlerError::Reported(words)) => (Finish::Failed(words), session::Spent::default()),
            Err(error) => {
                // Said on GitHub in plain words; the full chain goes to the log.
                let reference = format!("job-{}", env.job.id);
                tracing::error!(%error, "job failed");
                let cause = report::StopCause::Internal {
                    reference: reference.clone(),
                };
                let body = report::replies::failure(&cause, &env.config().agent.trigger, None);
                let _ = env.reply(&format!("{body}\n\n{}", public_error(&error))).await;
                (Finish::Failed(public_error(&error)), session::Spent::default())
            }
        }
    }
}

/// What a job is about, for its log span: the commit a triage of failed CI looks at, else the pull
/// request or issue (`#12`); a scheduled chore is about its repository alone.
fn subject(request: &JobRequest) -> Option<String> {
    match (&request.kind, &request.head_sha, &request.subject) {
        (JobKind::Triage, Some(sha), _) if request.ci().is_some() => Some(sha.to_string()),
        (_, _, Subject::PullRequest { number } | Subject::Issue { number }) => Some(format!("#{number}")),
        (_, _, Subject::Commit { sha }) => Some(sha.to_string()),
        (_, head_sha, Subject::Repository) => head_sha.as_ref().map(ToString::to_string),
    }
}

/// An error's text when it is safe to show on GitHub: errors from git, GitHub and the sandbox
/// name what failed without secrets; anything else is summarised.
pub(crate) fn public_error(error: &HandlerError) -> String {
    match error {
        HandlerError::Github(e) => format!("GitHub answered with an error: {e}"),
        HandlerError::Workspace(e) => format!("git failed: {e}"),
        // Its own words already say it was the sandbox.
        HandlerError::Sandbox(e) => e.to_string(),
        HandlerError::Model(e) => format!("the model provider failed: {e}"),
        HandlerError::Prompt(_) => "the prompt templates are broken; the operator must fix them".into(),
        HandlerError::Fenced(e) => e.to_string(),
        HandlerError::Other(text) | HandlerError::Reported(text) => text.clone(),
    }
}

/// Creates the progress comment where the request came from and, when the job is about a commit
/// (`head_sha`), the `pitcrew` check run on it; returns what the job keeps up to date.
pub(crate) async fn start_reporting(env: &JobEnv, head_sha: Option<&CommitSha>) -> Result<Targets, HandlerError> {
    let info = env.info();
    if let Some(targets) = earlier_reporting(env, &info).await {
        return Ok(targets);
    }
    let check_run = match head_sha {
        Some(head_sha) => {
            let output = report::check_run::in_progress(&info, &Default::default(), Some("starting"));
            Some(start_check_run(env, "pitcrew", head_sha, output).await?)
        }
        None => None,
    };
    let body = report::progress::live(&info, &Default::default(), Some("starting"));
    let comment = match &env.request.reply_to {
        ReplyTarget::Nowhere => {
            return Err(HandlerError::Other(format!(
                "`{}` needs a conversation to report in, and {} has none",
                env.request.kind.as_str(),
                env.request.subject
            )));
        }
        ReplyTarget::ReviewThread {
            pull_number,
            comment_id,
        } => {
            let reply = env
                .github
                .reply_to_review_comment(&env.repo, *pull_number, *comment_id, &body)
                .await?;
            ProgressComment::Review(reply.id)
        }
        ReplyTarget::Issue { number, .. } => {
            let comment = env.github.create_issue_comment(&env.repo, *number, &body).await?;
            ProgressComment::Issue(comment.id)
        }
    };
    let mut info = info;
    info.check_run_url = check_run
        .as_ref()
        .map(|run| run.html_url.clone())
        .filter(|url| !url.is_empty());
    let reporting = JobRecord::Reporting {
        check_run: check_run.as_ref().map(|run| run.id),
        check_run_url: info.check_run_url.clone(),
        comment,
    };
    let _ = env.control.record(&reporting).await;
    Ok(Targets {
        github: env.github.clone(),
        repo: env.repo.clone(),
        check_run: check_run.map(|run| run.id),
        comment: Some(comment),
        info,
        frame: None,
    })
}

/// Creates the job's check run `name` on `head_sha`, in progress, showing `output`.
pub(crate) async fn start_check_run(
    env: &JobEnv,
    name: &str,
    head_sha: &CommitSha,
    output: crate::github::CheckRunOutput,
) -> Result<crate::github::CheckRun, GithubError> {
    env.github
        .create_check_run(
            &env.repo,
            &NewCheckRun {
                name: name.to_owned(),
                head_sha: head_sha.clone(),
                status: CheckStatus::InProgress,
                started_at: Some(SystemTime::now()),
                conclusion: None,
                completed_at: None,
                details_url: None,
                external_id: Some(env.job_id()),
                output: Some(output),
            },
        )
        .await
}

/// The check run and progress comment an earlier attempt of this job made (its process died):
/// the retry reports there, instead of leaving them "in progress" and starting new ones.
async fn earlier_reporting(env: &JobEnv, info: &report::JobInfo) -> Option<Targets> {
    // Any job may have reported before: a retry after a crash, and one requeued by a shutdown
    // (which keeps its attempt count).
    let events = env.control.events().await.ok()?;
    let (check_run, check_run_url, comment) = events.iter().rev().find_map(|event| match event.record() {
        Some(JobRecord::Reporting {
            check_run,
            check_run_url,
            comment,
        }) => Some((check_run, check_run_url, comment)),
        _ => None,
    })?;
    let mut info = info.clone();
    info.check_run_url = check_run_url;
    let targets = Targets {
        github: env.github.clone(),
        repo: env.repo.clone(),
        check_run,
        comment: Some(comment),
        info,
        frame: None,
    };
    let body = report::progress::live(&targets.info, &Default::default(), Some("starting again"));
    if let Err(error) = targets.set_comment(&body).await {
        tracing::warn!(%error, "could not reuse the earlier attempt's progress comment");
        return None;
    }
    Some(targets)
}

/// [`report_failure`] for a job's result once its reporting has started.
pub(crate) async fn closed_out(
    env: &JobEnv,
    targets: &Targets,
    result: Result<(Finish, session::Spent), HandlerError>,
) -> Result<(Finish, session::Spent), HandlerError> {
    match result {
        Ok(done) => Ok(done),
        Err(error) => Err(report_failure(env, targets, error).await),
    }
}

/// Ends a job whose reporting had started: the check run fails and the progress comment says why in
/// plain words (the chain goes to the log), so nothing is left "in progress". The error comes back
/// as [`HandlerError::Reported`].
pub(crate) async fn report_failure(env: &JobEnv, targets: &Targets, error: HandlerError) -> HandlerError {
    if let HandlerError::Reported(_) = error {
        return error;
    }
    tracing::error!(%error, "job failed");
    let words = public_error(&error);
    // The sandbox's and the provider's messages are safe to show and say it best; anything else gets
    // the reference to find it in the log, and its public words under the report.
    let (cause, note) = match &error {
        HandlerError::Sandbox(e) => (report::StopCause::Sandbox { message: e.to_string() }, None),
        HandlerError::Model(e) => (report::StopCause::ModelProvider { message: e.to_string() }, None),
        _ => (
            report::StopCause::Internal {
                reference: format!("job-{}", env.job.id),
            },
            Some(&words),
        ),
    };
    let result = report::JobResult {
        job: targets.info.clone(),
        end: report::JobEnd::Stopped { cause, saved: None },
        summary: String::new(),
        plan: Default::default(),
        changed_files: Vec::new(),
        tests: None,
        stats: Default::default(),
    };
    let trigger = &env.config().agent.trigger;
    let conclusion = report::check_run::conclusion(&result);
    let mut output = report::check_run::completed(&result, &[], trigger);
    let mut comment = report::progress::finished(&result, trigger);
    if let Some(note) = note {
        let note = report::markdown::prose(note);
        output.summary.push_str(&format!("\n\n{note}"));
        comment.push_str(&format!("\n\n{note}"));
    }
    targets.complete(conclusion.kind, output, &comment).await;
    let finished = JobRecord::Finished {
        headline: words.clone(),
    };
    let _ = env.control.record(&finished).await;
    HandlerError::Reported(words)
}

/// A repository's clone URL, parsed.
pub(crate) fn parse_clone_url(text: &str) -> Result<url::Url, HandlerError> {
    url::Url::parse(text)
        .map_err(|e| HandlerError::Other(format!("the repository's clone URL {text:?} is invalid: {e}")))
}

/// `text` as a markdown quote, capped: a description is context, not the task.
pub(crate) fn quote_capped(text: &str) -> String {
    let text: String = text.chars().take(8000).collect();
    text.lines().map(|l| format!("> {l}")).collect::<Vec<_>>().join("\n")
}

/// What a job did, for the store's result and the Action's outputs.
pub(crate) struct Ended {
    pub end: report::JobEnd,
    pub outcome: crate::agent::Outcome,
    pub changed_files: Vec<crate::workspace::diff::FileStat>,
    pub tests: Option<report::TestDelta>,
    /// The fix loop's timeline, when the job waited for CI after pushing.
    pub ci: Option<report::ci_loop::Timeline>,
}

/// Writes the final check run and progress comment, and returns the job's end for the store: its
/// result holds what the Action's outputs need (`conclusion`, `commit`, `pull_request`,
/// `summary`, and `report`, the final comment's markdown).
pub(crate) async fn conclude(
    env: &JobEnv,
    targets: &Targets,
    ended: Ended,
    findings: &[ReviewFinding],
    settings: &crate::config::repo::EffectiveSettings,
) -> (Finish, session::Spent) {
    conclude_with_comment(env, targets, ended, findings, settings, None).await
}

/// [`conclude`], with the final comment written by the job (`comment`) instead of the standard
/// report; the store's result keeps the job's own text.
pub(crate) async fn conclude_with_comment(
    env: &JobEnv,
    targets: &Targets,
    ended: Ended,
    findings: &[ReviewFinding],
    settings: &crate::config::repo::EffectiveSettings,
    comment_override: Option<&str>,
) -> (Finish, session::Spent) {
    let spent = session::Spent::from_outcome(&ended.outcome);
    let stop = env.control.stop_cause().and_then(|cause| match cause {
        StopCause::Requested(request) => Some(request),
        StopCause::Shutdown | StopCause::LeaseLost => None,
    });
    let end = match ended.end {
        report::JobEnd::Stopped {
            cause: report::StopCause::Cancelled { .. },
            saved,
        } => report::JobEnd::Stopped {
            cause: match &stop {
                Some(StopRequest::ByUser { login }) => report::StopCause::Cancelled {
                    by: Some(login.clone()),
                },
                Some(StopRequest::Superseded { head }) => report::StopCause::Superseded { head: head.clone() },
                None => report::StopCause::Cancelled { by: None },
            },
            saved,
        },
        other => other,
    };
    let result = report::JobResult {
        job: targets.info.clone(),
        end,
        summary: ended.outcome.summary.clone(),
        plan: ended.outcome.plan.clone(),
        changed_files: ended.changed_files,
        tests: ended.tests,
        stats: report::RunStats {
            usage: spent.usage,
            cost_usd: spent.cost_usd,
            duration_ms: spent.duration_ms,
            steps: spent.steps,
            tool_calls: spent.tool_calls,
        },
    };
    let trigger = settings.triggers.trigger.clone();
    let mut conclusion = report::check_run::conclusion(&result);
    let mut output = report::check_run::completed(&result, findings, &trigger);
    let mut comment = report::progress::finished(&result, &trigger);
    let mut words = report::headline(&result.end);
    let ci_passed = ended.ci.as_ref().is_none_or(report::ci_loop::Timeline::passed);
    if let Some(timeline) = &ended.ci {
        let web = web_url(&env.request.repo);
        let section = timeline.render(&|sha| format!("{web}/commit/{sha}"));
        if let Some(headline) = timeline.headline() {
            words = headline;
            output.title = report::markdown::inline(&words);
        }
        // Both were rendered up to GitHub's limits: the timeline takes its room from their ends.
        let room = report::markdown::CHECK_TEXT_LIMIT.saturating_sub(section.len() + 2);
        output.summary = format!("{section}\n\n{}", crate::agent::context::cut(&output.summary, room));
        let room = report::markdown::BODY_LIMIT.saturating_sub(section.len() + 2);
        comment = format!("{}\n\n{section}", crate::agent::context::cut(&comment, room));
        if !ci_passed && conclusion.kind == crate::github::CheckConclusion::Success {
            conclusion.kind = match timeline.end {
                Some(report::ci_loop::LoopEnd::StillFailing { .. } | report::ci_loop::LoopEnd::RoundFailed { .. }) => {
                    crate::github::CheckConclusion::Failure
                }
                _ => crate::github::CheckConclusion::Neutral,
            };
        }
    }
    let job_notes = env
        .notes
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let notes: Vec<&String> = settings.notes.iter().chain(&job_notes).collect();
    if !notes.is_empty() {
        comment.push_str("\n\n");
        for note in notes {
            comment.push_str(&format!("> {}\n", report::markdown::prose(note)));
        }
    }
    if let Some(own) = comment_override {
        comment = own.to_owned();
    }
    targets.complete(conclusion.kind, output, &comment).await;
    let finished = JobRecord::Finished {
        headline: words.clone(),
    };
    let _ = env.control.record(&finished).await;
    let (commit, pull_request) = match &result.end {
        report::JobEnd::Pushed { commit, .. } => (Some(commit.sha.clone()), None),
        report::JobEnd::PullRequestOpened { number, .. } => (None, Some(*number)),
        _ => (None, None),
    };
    let summary = Summary {
        headline: words.clone(),
        conclusion: conclusion.kind,
        commit,
        pull_request,
        summary: result.summary,
        report: comment,
        detail: None,
    };
    let finish = match &result.end {
        report::JobEnd::Stopped {
            cause: report::StopCause::Cancelled { .. } | report::StopCause::Superseded { .. },
            ..
        } => Finish::Cancelled(stop.map_or(words, |request| request.to_string())),
        report::JobEnd::Stopped { .. } => {
            let _ = env.control.record(&JobRecord::Result(summary)).await;
            Finish::Failed(words)
        }
        // The change is pushed, but CI still fails on it: the job did not get it green.
        _ if !ci_passed && conclusion.kind == crate::github::CheckConclusion::Failure => {
            let _ = env.control.record(&JobRecord::Result(summary)).await;
            Finish::Failed(words)
        }
        _ => succeeded(&summary),
    };
    (finish, spent)
}

/// A job that succeeded, with its summary as its result.
pub(crate) fn succeeded(summary: &Summary) -> Finish {
    match serde_json::to_value(summary) {
        Ok(result) => Finish::Succeeded(result),
        // Plain strings, numbers and lists: never seen.
        Err(error) => Finish::Failed(format!(
            "internal error: the job's summary could not be encoded ({error})"
        )),
    }
}

/// Fetches the pull request's head into the mirror and leases a working copy of it.
pub(crate) async fn lease_pull_head(env: &JobEnv, pull: &PullRequest) -> Result<Lease, HandlerError> {
    let token = env.github.token().await?;
    let remote = RemoteRepo {
        url: parse_clone_url(&env.request.repo.clone_url)?,
        full_name: env.repo.to_string(),
    };
    let pull_ref = format!("refs/pull/{}/head", pull.number.0);
    let mirror = env
        .services
        .mirrors
        .prepare(&remote, &token, &[pull_ref.as_str()])
        .await?;
    Ok(env
        .services
        .pool
        .lease(&mirror, Target::Commit(pull.head.sha.as_str().to_owned()))
        .await?)
}

/// What the agent is told about the pull request; `role` says what it is there to do.
pub(crate) fn pull_context(env: &JobEnv, pull: &PullRequest, role: &str) -> Result<String, PromptError> {
    let prompts = &env.services.prompts;
    let asked = match &env.request.source {
        crate::triggers::JobSource::Ci(_) => format!(
            "Started by pitcrew's triage after CI failed on a push by @{}.",
            env.request.requested_by.login
        ),
        crate::triggers::JobSource::PullRequest { action } => format!(
            "Nobody asked: the repository's settings start this job when a pull request changes, and this one {}.",
            report::pull_action_words(action)
        ),
        _ => format!("Asked by @{} in a comment.", env.request.requested_by.login),
    };
    let mut context = prompts.render(
        Template::ContextPullRequest,
        &[
            ("number", &pull.number.0.to_string()),
            ("repo", &env.repo.to_string()),
            ("title", &pull.title),
            ("author", &pull.user.login),
            ("head", &pull.head.branch),
            ("base", &pull.base.branch),
            ("asked", &asked),
            ("role", role),
        ],
    )?;
    // The author's own text: pitcrew's section of it is pitcrew's words, not the author's intent.
    let body = report::describe::without_section(&pull.body);
    if !body.trim().is_empty() {
        let description = prompts.render(
            Template::ContextPullDescription,
            &[("description", &quote_capped(&body))],
        )?;
        push_block(&mut context, &description);
    }
    if let Some(review) = &env.request.review_comment {
        let comment = prompts.render(
            Template::ContextReviewComment,
            &[
                ("path", &review.path),
                (
                    "at_line",
                    &review.line.map(|l| format!(" at line {l}")).unwrap_or_default(),
                ),
                ("diff_hunk", &review.diff_hunk),
            ],
        )?;
        push_block(&mut context, &comment);
    }
    Ok(context)
}

/// Appends a block of a context, a blank line after what is there.
pub(crate) fn push_block(context: &mut String, block: &str) {
    context.push_str("\n\n");
    context.push_str(block);
}

/// The repository's web page from its clone URL (`https://host/owner/name.git` → without `.git`).
pub(crate) fn web_url(repo: &crate::triggers::RepoRef) -> String {
    repo.clone_url.trim_end_matches(".git").to_owned()
}
