//! Handling one stored delivery: read the repository's trigger settings, decide, check the
//! requester's permission with GitHub, then react 👀, stop what was asked to stop, create the jobs
//! and mark the delivery processed in one store transaction, wake the pool, and post the replies.
//! GitHub calls that must succeed (the permission check) come before the transaction: a transient
//! failure leaves the delivery unprocessed and the loop (`dispatch.rs`) retries it with backoff, a
//! permanent one (the repository gone, the App uninstalled) drops it. Replies come after it and are
//! best effort, so a retry never posts them twice.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::dispatch::DispatchSettings;
use crate::config::repo::{REPO_CONFIG_PATH, RepoConfig, TriggerSettings};
use crate::github::{GithubAccess, GithubClient, GithubError, Reaction, RepoName};
use crate::jobs::{
    DeliveryId, Dispatch, JobFilter, JobState, JobStore, NewJob, Signal, StopRequest, WorkerPool, now_ms,
};
use crate::report::{dashboard, replies};
use crate::triggers::{
    Action, Decision, Event, EventError, JobKind, JobRequest, JobSource, PermissionGate, ReplyTarget, Request,
    TriggerConfig, decide,
};

/// What handling a delivery uses.
pub(super) struct Ctx {
    pub(super) store: Arc<dyn JobStore>,
    pub(super) pool: Arc<WorkerPool>,
    pub(super) github: GithubAccess,
    pub(super) settings: DispatchSettings,
    /// Each repository's `.github/pitcrew.toml` (its `[triggers]`), read from the default branch
    /// and kept for a minute, so that a burst of deliveries costs one read.
    pub(super) repo_configs: Mutex<HashMap<String, (Instant, RepoConfig)>>,
    /// Deliveries given up on after their retries.
    pub(super) dropped: Arc<std::sync::atomic::AtomicU64>,
}

/// How long a repository's configuration is reused before it is read again.
const REPO_CONFIG_TTL: Duration = Duration::from_secs(60);

/// What the repository allows: its trigger settings, or `Err` to try the delivery again later.
async fn repo_triggers(ctx: &Ctx, event: &Event) -> Result<Option<TriggerSettings>, Retry> {
    let (event_ctx, body) = match event {
        Event::Comment(comment) => (&comment.ctx, Some(comment.body.as_str())),
        Event::IssueAssigned { ctx, .. } | Event::IssueLabeled { ctx, .. } => (ctx, None),
        // Whether it is reviewed without being asked is the repository's choice.
        Event::PullRequestChanged { ctx, .. } => (ctx, None),
        // Only a person's edit of a dependency dashboard can ask for anything: every other issue
        // edit costs no read of the configuration.
        Event::IssueEdited { ctx, issue, .. }
            if !ctx.sender.is_bot() && issue.body.as_deref().is_some_and(dashboard::is_dashboard_body) =>
        {
            (ctx, None)
        }
        // Only a failure can start a triage: a passing run needs no settings.
        Event::WorkflowRunCompleted(run) if run.conclusion.as_ref().is_some_and(|c| c.is_failure()) => (&run.ctx, None),
        Event::CheckRunCompleted(run) if run.conclusion.as_ref().is_some_and(|c| c.is_failure()) => (&run.ctx, None),
        Event::CheckSuiteCompleted(suite) if suite.conclusion.as_ref().is_some_and(|c| c.is_failure()) => {
            (&suite.ctx, None)
        }
        _ => return Ok(None),
    };
    // Every trigger word starts with `@`: a comment without one addresses nobody.
    if body.is_some_and(|body| !body.contains('@')) {
        return Ok(None);
    }
    let Some(client) = ctx.github.client(event_ctx.installation_id) else {
        return Ok(None);
    };
    let full_name = event_ctx.repo.name.to_string();
    let cached = ctx
        .repo_configs
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(&full_name)
        .filter(|(at, _)| at.elapsed() < REPO_CONFIG_TTL)
        .map(|(_, config)| config.clone());
    let config = match cached {
        Some(config) => config,
        None => {
            let repo = &event_ctx.repo.name;
            let text = match client
                .get_file(repo, REPO_CONFIG_PATH, &event_ctx.repo.default_branch)
                .await
            {
                Ok(text) => text,
                Err(error) if is_transient(&error) => {
                    return Err(Retry(format!("reading {REPO_CONFIG_PATH}: {error}")));
                }
                Err(error) => {
                    tracing::warn!(repo = %repo, %error, "could not read the repository's configuration; using the defaults");
                    None
                }
            };
            // The valid settings count here; the job reports the file's problems where it runs.
            let config = text.map(|text| RepoConfig::parse_lenient(&text).0).unwrap_or_default();
            ctx.repo_configs
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(full_name, (Instant::now(), config.clone()));
            config
        }
    };
    let base = &ctx.settings.triggers;
    Ok(Some(config.trigger_settings(&base.trigger, base.review.auto)))
}

/// The operator's trigger configuration with a repository's settings applied.
fn with_repo(base: &TriggerConfig, repo: &TriggerSettings) -> TriggerConfig {
    TriggerConfig {
        trigger: repo.trigger.clone(),
        bot_login: base.bot_login.clone(),
        label: repo.label.clone(),
        assign: repo.assign,
        commands: repo.commands.clone(),
        ci_triage: repo.ci_triage,
        review: repo.review.clone(),
    }
}

/// Why a delivery should be tried again later.
#[derive(Debug)]
pub(super) struct Retry(pub(super) String);

/// Handles one delivery to the end: `Ok` once it is processed (with or without jobs).
pub(super) async fn handle(ctx: Arc<Ctx>, id: DeliveryId, event: Arc<Result<Event, EventError>>) -> Result<(), Retry> {
    let event = match event.as_ref() {
        Ok(event) => event,
        Err(error) => {
            tracing::warn!(error = %error, "the payload does not have its event's shape; dropped");
            return mark_processed(&ctx, &id, Vec::new()).await.map(|_| ());
        }
    };
    let waiting_loop = wake_waiting(&ctx, event).await;
    let repo_settings = repo_triggers(&ctx, event).await?;
    let triggers = match &repo_settings {
        Some(settings) => with_repo(&ctx.settings.triggers, settings),
        None => ctx.settings.triggers.clone(),
    };
    match decide(event, &triggers).with_delivery(&id.0) {
        Decision::Ignore { reason } => {
            tracing::debug!(reason, "nothing to do");
            mark_processed(&ctx, &id, Vec::new()).await.map(|_| ())
        }
        Decision::Pong { .. } => mark_processed(&ctx, &id, Vec::new()).await.map(|_| ()),
        // The fix loop that pushed the commit reads its CI itself: no triage, no second fix.
        Decision::Act(request) if waiting_loop.is_some() && request.actions.iter().all(is_ci_triage) => {
            tracing::info!(loop_job = ?waiting_loop, "a fix loop waits on this commit and reads its CI; no triage");
            mark_processed(&ctx, &id, Vec::new()).await.map(|_| ())
        }
        Decision::Act(request) => {
            if !request.not_run.is_empty() {
                tracing::debug!(not_run = ?request.not_run, "jobs the event did not start");
            }
            act(&ctx, &id, event, *request, &triggers, repo_settings.as_ref()).await
        }
    }
}

async fn mark_processed(ctx: &Ctx, id: &DeliveryId, jobs: Vec<NewJob>) -> Result<Dispatch, Retry> {
    ctx.store
        .process_delivery(id, jobs, now_ms())
        .await
        .map_err(|error| Retry(format!("storing its outcome: {error}")))
}

/// Rate limits, 5xx and lost connections pass; so may a JWT that cannot be signed right now. A 404
/// (the repository is gone or hidden), a 401 (the App was uninstalled) or a refusal will not.
fn is_transient(error: &GithubError) -> bool {
    match error {
        GithubError::RateLimited { .. }
        | GithubError::Server { .. }
        | GithubError::Transport { .. }
        | GithubError::Jwt { .. } => true,
        GithubError::Status { status, .. } => matches!(status, 408 | 429) || *status >= 500,
        _ => false,
    }
}

/// Acts on a request: the permission gate, 👀, the stops and the jobs with the delivery's
/// "processed" mark in one transaction, then the replies.
async fn act(
    ctx: &Ctx,
    id: &DeliveryId,
    event: &Event,
    request: Request,
    triggers: &TriggerConfig,
    repo_settings: Option<&TriggerSettings>,
) -> Result<(), Retry> {
    let Some(client) = ctx.github.client(request.installation_id) else {
        tracing::warn!("the delivery names no App installation, so pitcrew cannot act on it; dropped");
        return mark_processed(ctx, id, Vec::new()).await.map(|_| ());
    };
    let repo = request.repo.name.clone();
    match permission(ctx, &client, &repo, &request, repo_settings).await? {
        Permission::Granted => {}
        Permission::Refused => {
            let login = &request.requested_by.login;
            tracing::info!(repo = %repo, user = %login, "request refused: no write access");
            mark_processed(ctx, id, Vec::new()).await?;
            post(
                &client,
                &repo,
                &request.reply_to,
                &replies::not_permitted(login.as_str()),
            )
            .await;
            return Ok(());
        }
        Permission::Unknowable => return mark_processed(ctx, id, Vec::new()).await.map(|_| ()),
    }
    react_eyes(&client, &repo, event).await;
    let Planned { jobs, texts } = carry_out(ctx, id, &request, &triggers.trigger).await?;
    if store_jobs(ctx, id, &request, jobs).await? == Stored::ByAnother {
        return Ok(());
    }
    for text in texts {
        post(&client, &repo, &request.reply_to, &text).await;
    }
    Ok(())
}

/// What the permission gate says about a request.
enum Permission {
    Granted,
    /// No write access (or not on the repository's allow list): answered with a refusal.
    Refused,
    /// It cannot be known (the repository gone, the App uninstalled): the
    /// delivery is dropped without an answer.
    Unknowable,
}

/// The gate: trusted events pass, the repository's allow list is checked first (no API call for
/// someone not on it), then GitHub's collaborator permission against the repository's minimum.
/// `Err` only for a transient GitHub failure, to try again later.
async fn permission(
    ctx: &Ctx,
    client: &GithubClient,
    repo: &RepoName,
    request: &Request,
    repo_settings: Option<&TriggerSettings>,
) -> Result<Permission, Retry> {
    let login = &request.requested_by.login;
    let granted = |yes: bool| if yes { Permission::Granted } else { Permission::Refused };
    match request.permission {
        PermissionGate::Trusted => Ok(Permission::Granted),
        PermissionGate::Refuse => Ok(Permission::Refused),
        PermissionGate::NeedsPermissionCheck if repo_settings.is_some_and(|s| !s.allows_user(login.as_str())) => {
            Ok(Permission::Refused)
        }
        // The login was checked against GitHub's rules when the payload was read.
        PermissionGate::NeedsPermissionCheck => match client.collaborator_permission(repo, login).await {
            Ok(permission) => Ok(granted(match repo_settings {
                Some(settings) => settings.min_permission.allows(permission),
                None => permission.may_write(),
            })),
            Err(error) if is_transient(&error) => {
                Err(Retry(format!("checking the permission of the requester: {error}")))
            }
            Err(error) => {
                tracing::warn!(repo = %repo, error = %error,
                    "could not check the requester's permission (the repository may be gone or the App uninstalled); dropped");
                ctx.dropped.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Ok(Permission::Unknowable)
            }
        },
    }
}

/// What a request comes to once its stops are done: the jobs to create and the replies to post.
struct Planned {
    jobs: Vec<NewJob>,
    texts: Vec<String>,
}

/// Goes through the request's actions in the order asked: stops happen now (before the new jobs
/// exist, so `stop` never cancels what the same comment asks for after it), runs become jobs, help
/// and invalid commands become replies; a job that has to wait behind others says so.
async fn carry_out(ctx: &Ctx, id: &DeliveryId, request: &Request, trigger: &str) -> Result<Planned, Retry> {
    let login = &request.requested_by.login;
    let mut planned = Planned {
        jobs: Vec::new(),
        texts: Vec::new(),
    };
    for action in &request.actions {
        match action {
            Action::Stop { key } => {
                let stop = StopRequest::ByUser {
                    login: login.to_string(),
                };
                let cancellation = ctx
                    .pool
                    .cancel(key, &stop)
                    .await
                    .map_err(|error| Retry(format!("stopping the jobs of {key}: {error}")))?;
                tracing::info!(key, cancelled = ?cancellation.cancelled,
                    stopping = ?cancellation.stopping, "stop asked");
                planned.texts.push(if cancellation.is_empty() {
                    replies::NOTHING_TO_STOP.to_owned()
                } else {
                    replies::stopped_by(Some(login.as_str()))
                });
            }
            Action::Help => planned.texts.push(replies::help(trigger, replies::COMMANDS)),
            Action::Invalid { message } => planned.texts.push(message.clone()),
            Action::Run(job) if duplicate_triage(ctx, job).await? => {
                tracing::info!(key = %job.key(), "a triage of this commit is already queued");
            }
            Action::Run(job) => {
                supersede_reviews(ctx, job).await?;
                match serde_json::to_value(job.as_ref()) {
                    Ok(value) => planned.jobs.push(NewJob {
                        kind: job.kind.as_str().to_owned(),
                        repo: job.repo.name.to_string(),
                        key: job.key(),
                        request: value,
                        delivery: Some(id.clone()),
                        max_attempts: ctx.settings.job_attempts.max(1),
                    }),
                    Err(error) => {
                        tracing::error!(error = %error, "could not encode a job request; skipped");
                    }
                }
            }
        }
    }
    // Nobody asked for a CI triage, so nobody is told it waits.
    if !planned.jobs.is_empty() && request.permission != PermissionGate::Trusted {
        let ahead = jobs_ahead(ctx, &request.key()).await?;
        if ahead > 0 {
            planned.texts.push(replies::queued(trigger, ahead));
        }
    }
    Ok(planned)
}

/// Wakes a job that waits for CI when the event concerns it: CI completed on its commit, or its
/// pull request changed — in this process at once, in the other replicas sharing the store through
/// its signals. Returns the job of this process whose loop pushed the commit of a CI event (waiting
/// on it now, or done with it).
async fn wake_waiting(ctx: &Ctx, event: &Event) -> Option<crate::jobs::JobId> {
    let watch = ctx.pool.ci_watch();
    let ci = match event {
        Event::WorkflowRunCompleted(run) => Some((&run.ctx, &run.head_sha)),
        Event::CheckRunCompleted(run) => Some((&run.ctx, &run.head_sha)),
        Event::CheckSuiteCompleted(suite) => Some((&suite.ctx, &suite.head_sha)),
        _ => None,
    };
    let (signal, found) = if let Some((ctx, head_sha)) = ci {
        let repo = ctx.repo.name.to_string();
        watch.wake_commit(&repo, head_sha.as_str());
        let found = watch.loop_of(&repo, head_sha.as_str());
        let sha = head_sha.as_str().to_owned();
        (Signal::Commit { repo, sha }, found)
    } else {
        let key = match event {
            Event::PullRequestChanged { ctx, pull, .. } => format!("{}#{}", ctx.repo.name, pull.number),
            Event::PullRequestClosed { ctx, number, .. } => format!("{}#{number}", ctx.repo.name),
            _ => return None,
        };
        watch.wake_key(&key);
        (Signal::Key(key), None)
    };
    tell_replicas(ctx, signal).await;
    found
}

/// Sends `signal` to the other replicas sharing the store (none with SQLite); they also poll, so a
/// failure costs only time.
async fn tell_replicas(ctx: &Ctx, signal: Signal) {
    if ctx.store.shared()
        && let Err(error) = ctx.store.publish(signal).await
    {
        tracing::warn!(error = %error, "could not signal the other replicas");
    }
}

/// A triage that failed CI asks for (and nothing else).
fn is_ci_triage(action: &Action) -> bool {
    matches!(action, Action::Run(job) if job.kind == JobKind::Triage && job.ci().is_some())
}

/// Whether this process stored the delivery's outcome or another one got there first.
#[derive(Debug, PartialEq, Eq)]
enum Stored {
    Here,
    ByAnother,
}

/// Creates the jobs and marks the delivery processed in one transaction, and wakes the pool.
async fn store_jobs(ctx: &Ctx, id: &DeliveryId, request: &Request, jobs: Vec<NewJob>) -> Result<Stored, Retry> {
    match mark_processed(ctx, id, jobs).await? {
        Dispatch::Created(created) => {
            if !created.is_empty() {
                tracing::info!(jobs = ?created, key = %request.key(), "jobs queued");
                ctx.pool.wake();
                // A job of the same pull request that waits for CI hears of the new request.
                ctx.pool.ci_watch().wake_key(&request.key());
                tell_replicas(ctx, Signal::Key(request.key())).await;
            }
            Ok(Stored::Here)
        }
        Dispatch::AlreadyProcessed => {
            // Another process got there first and has answered.
            tracing::info!("the delivery was already processed");
            Ok(Stored::ByAnother)
        }
    }
}

/// A CI failure whose commit already has a triage waiting in the queue: one triage covers every
/// failure of a commit (it reads them all when it runs), so a second one would only repeat it. A
/// triage that is already running is not a duplicate: the later failure may not have been there when
/// it looked, and the next one updates the same check run.
async fn duplicate_triage(ctx: &Ctx, job: &JobRequest) -> Result<bool, Retry> {
    if job.ci().is_none() {
        return Ok(false);
    }
    let key = job.key();
    let filter = JobFilter {
        state: Some(JobState::Queued),
        key: Some(key.clone()),
        ..JobFilter::default()
    };
    let queued = ctx
        .store
        .jobs(&filter)
        .await
        .map_err(|error| Retry(format!("listing the jobs of {key}: {error}")))?;
    Ok(queued.iter().any(|queued| {
        serde_json::from_value::<JobRequest>(queued.request.clone()).is_ok_and(|other| {
            other.kind == JobKind::Triage && other.head_sha == job.head_sha && other.repo == job.repo
        })
    }))
}

/// An automatic review of a newer head supersedes the pull request's queued and running reviews:
/// one review per pull request, of its newest commits. Other jobs of the pull request (a fix) go on.
async fn supersede_reviews(ctx: &Ctx, job: &JobRequest) -> Result<(), Retry> {
    let (JobKind::Review, JobSource::PullRequest { .. }, Some(head)) = (&job.kind, &job.source, &job.head_sha) else {
        return Ok(());
    };
    let key = job.key();
    let stop = StopRequest::Superseded { head: head.to_string() };
    let superseded = ctx
        .pool
        .supersede(&key, JobKind::Review.as_str(), &stop)
        .await
        .map_err(|error| Retry(format!("superseding the reviews of {key}: {error}")))?;
    if !superseded.is_empty() {
        tracing::info!(key, cancelled = ?superseded.cancelled, stopping = ?superseded.stopping,
            "earlier reviews superseded by a newer push");
    }
    Ok(())
}

/// Jobs on `key` that a new one would wait behind: queued ones, and the running one unless it is
/// already stopping.
async fn jobs_ahead(ctx: &Ctx, key: &str) -> Result<usize, Retry> {
    let mut ahead = 0;
    for state in [JobState::Queued, JobState::Running] {
        let filter = JobFilter {
            state: Some(state),
            key: Some(key.to_owned()),
            ..JobFilter::default()
        };
        let jobs = ctx
            .store
            .jobs(&filter)
            .await
            .map_err(|error| Retry(format!("listing the jobs of {key}: {error}")))?;
        ahead += jobs.iter().filter(|job| job.cancel_requested.is_none()).count();
    }
    Ok(ahead)
}

/// 👀 on what asked: the comment, or the issue for an assignment or a label. Best effort: a missing
/// reaction must not hold up the work.
async fn react_eyes(client: &GithubClient, repo: &RepoName, event: &Event) {
    let result = match event {
        Event::Comment(comment) if comment.review.is_some() => {
            client
                .add_review_comment_reaction(repo, comment.comment_id, Reaction::Eyes)
                .await
        }
        Event::Comment(comment) => {
            client
                .add_issue_comment_reaction(repo, comment.comment_id, Reaction::Eyes)
                .await
        }
        Event::IssueAssigned { issue, .. } | Event::IssueLabeled { issue, .. } => {
            client.add_issue_reaction(repo, issue.number, Reaction::Eyes).await
        }
        _ => return,
    };
    if let Err(error) = result {
        tracing::warn!(repo = %repo, error = %error, "could not add the eyes reaction");
    }
}

/// Posts `body` where the request was made. Best effort (logged): the delivery is already processed.
async fn post(client: &GithubClient, repo: &RepoName, target: &ReplyTarget, body: &str) {
    let result = match target {
        ReplyTarget::Nowhere => return,
        ReplyTarget::Issue { number, .. } => client.create_issue_comment(repo, *number, body).await.map(drop),
        ReplyTarget::ReviewThread {
            pull_number,
            comment_id,
        } => client
            .reply_to_review_comment(repo, *pull_number, *comment_id, body)
            .await
            .map(drop),
    };
    if let Err(error) = result {
        tracing::warn!(repo = %repo, error = %error, "could not post a reply");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_and_permanent_github_failures() {
        let request = || "GET /repos/o/r/collaborators/u/permission".to_owned();
        assert!(is_transient(&GithubError::Server {
            request: request(),
            status: 502
        }));
        assert!(is_transient(&GithubError::RateLimited {
            request: request(),
            reset_at: None
        }));
        assert!(is_transient(&GithubError::Transport {
            request: request(),
            message: "connection reset".to_owned()
        }));
        assert!(!is_transient(&GithubError::NotFound { what: request() }));
        assert!(!is_transient(&GithubError::Unauthorized { request: request() }));
        assert!(!is_transient(&GithubError::Status {
            request: request(),
            status: 410,
            message: "gone".to_owned()
        }));
    }
}
