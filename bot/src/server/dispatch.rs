//! The dispatcher: turns stored deliveries into work, so that nothing the webhook route accepted is
//! lost. Woken by the route, on a slow interval and once at start-up (for what a crash left), it
//! reads the unprocessed deliveries oldest first and handles several at once — but one at a time per
//! pull request or issue, in the order received, so `@agent stop` never overtakes the request it
//! stops — and never the same delivery twice at once.
//!
//! Handling one delivery: parse the event, decide, check the requester's permission with GitHub,
//! then react 👀, stop what was asked to stop, create the jobs and mark the delivery processed in one
//! store transaction, wake the pool, and post the replies. GitHub calls that must succeed (the
//! permission check) come before the transaction: a transient failure leaves the delivery
//! unprocessed and it is retried with backoff, a permanent one (the repository gone, the App
//! uninstalled) drops it. Replies come after it and are best effort, so a retry never posts them
//! twice.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::backoff::{self, Jitter};
use crate::config::repo::{REPO_CONFIG_PATH, RepoConfig, TriggerSettings};
use crate::github::{
    CommentId, GithubAccess, GithubClient, GithubError, InstallationId, IssueNumber, Login, Reaction, RepoName,
};
use crate::jobs::{
    Delivery, DeliveryId, Dispatch, JobFilter, JobState, JobStore, NewJob, StopRequest, WorkerPool, now_ms,
};
use crate::report::replies;
use crate::triggers::{
    Action, Decision, Event, EventError, JobKind, JobRequest, PermissionGate, ReplyTarget, Request, TriggerConfig,
    decide,
};

/// The answer to `@agent stop` when nothing runs or waits on the pull request.
// Not in `report::replies` (owned elsewhere) yet; it belongs there.
const NOTHING_TO_STOP: &str = "There is no job running or waiting here, so there is nothing to stop.";

/// How the dispatcher works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DispatchSettings {
    /// The mention and the bot's login (`[agent] trigger`, `[github] bot_name`).
    pub triggers: TriggerConfig,
    /// `max_attempts` of every job created (`[server] job_attempts`).
    pub job_attempts: u32,
    /// How often stored deliveries are looked at without a wake-up.
    pub poll_interval: Duration,
    /// Deliveries handled at once.
    pub concurrency: usize,
    /// Unprocessed deliveries read per pass.
    pub batch: u32,
    /// Tries of a delivery that keeps failing transiently before it is dropped (logged as an error).
    pub max_tries: u32,
    /// The first retry delay; each next one doubles, up to `max_backoff`.
    pub base_backoff: Duration,
    pub max_backoff: Duration,
}

impl DispatchSettings {
    pub fn new(triggers: TriggerConfig, job_attempts: u32) -> Self {
        DispatchSettings {
            triggers,
            job_attempts,
            poll_interval: Duration::from_secs(30),
            concurrency: 8,
            // Enough to keep every slot busy and to see past a blocked pull request's backlog,
            // without reading megabytes of payloads on every pass.
            batch: 64,
            // With the doubling below capped at five minutes: about half an hour of trying.
            max_tries: 10,
            base_backoff: Duration::from_secs(2),
            max_backoff: Duration::from_secs(300),
        }
    }

    fn backoff(&self, tries: u32) -> Duration {
        // Half fixed, half jitter: deliveries that failed together do not retry in lockstep.
        backoff::delay(self.base_backoff, self.max_backoff, tries, Jitter::Half)
    }
}

/// What the dispatcher uses.
struct Ctx {
    store: Arc<dyn JobStore>,
    pool: Arc<WorkerPool>,
    github: GithubAccess,
    settings: DispatchSettings,
    /// Each repository's `.github/pitcrew.toml` (its `[triggers]`), read from the default branch
    /// and kept for a minute, so that a burst of deliveries costs one read.
    repo_configs: Mutex<HashMap<String, (Instant, RepoConfig)>>,
    /// Deliveries given up on after their retries.
    dropped: Arc<std::sync::atomic::AtomicU64>,
}

/// How long a repository's configuration is reused before it is read again.
const REPO_CONFIG_TTL: Duration = Duration::from_secs(60);

/// What the repository allows: its trigger settings, or `Err` to try the delivery again later.
async fn repo_triggers(ctx: &Ctx, event: &Event) -> Result<Option<TriggerSettings>, Retry> {
    let (event_ctx, body) = match event {
        Event::Comment(comment) => (&comment.ctx, Some(comment.body.as_str())),
        Event::IssueAssigned { ctx, .. } | Event::IssueLabeled { ctx, .. } => (ctx, None),
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
    let Some(client) = ctx.github.client(event_ctx.installation_id.map(InstallationId)) else {
        return Ok(None);
    };
    let full_name = event_ctx.repo.full_name();
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
            let Ok(repo) = RepoName::new(&event_ctx.repo.owner, &event_ctx.repo.name) else {
                return Ok(None);
            };
            let text = match client
                .get_file(&repo, REPO_CONFIG_PATH, &event_ctx.repo.default_branch)
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
    Ok(Some(config.trigger_settings(&ctx.settings.triggers.trigger)))
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
    }
}

/// The running dispatcher task.
#[derive(Debug)]
pub struct Dispatcher {
    wake: Arc<Notify>,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
    dropped: Arc<std::sync::atomic::AtomicU64>,
}

impl Dispatcher {
    /// Starts the task; its first pass runs at once, for deliveries a previous process left.
    pub fn start(
        store: Arc<dyn JobStore>,
        pool: Arc<WorkerPool>,
        github: GithubAccess,
        settings: DispatchSettings,
    ) -> Dispatcher {
        let wake = Arc::new(Notify::new());
        let stop = CancellationToken::new();
        let dropped = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let ctx = Arc::new(Ctx {
            store,
            pool,
            github,
            settings,
            repo_configs: Mutex::new(HashMap::new()),
            dropped: Arc::clone(&dropped),
        });
        let task = tokio::spawn(run(ctx, Arc::clone(&wake), stop.clone()));
        Dispatcher {
            wake,
            stop,
            task: Some(task),
            dropped,
        }
    }

    /// How many deliveries were given up on: after their retries, or at once when GitHub refused for
    /// good (each logged).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// What the webhook route notifies after storing a delivery.
    pub fn waker(&self) -> Arc<Notify> {
        Arc::clone(&self.wake)
    }

    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Stops taking deliveries, waits up to [`Dispatcher::STOP_WAIT`] for those being handled, and
    /// abandons the rest (still unprocessed in the store: the next start handles them).
    pub async fn stop(mut self) {
        self.stop.cancel();
        if let Some(mut task) = self.task.take() {
            // The task bounds its own drain; this is the backstop should it hang anyway.
            if tokio::time::timeout(Self::STOP_WAIT * 2, &mut task).await.is_err() {
                task.abort();
                let _ = task.await;
            }
        }
    }

    /// How long stopping waits for deliveries being handled.
    pub const STOP_WAIT: Duration = Duration::from_secs(10);
}

impl Drop for Dispatcher {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Why a delivery should be tried again later.
#[derive(Debug)]
struct Retry(String);

struct Backoff {
    tries: u32,
    next: Instant,
}

struct Loop {
    ctx: Arc<Ctx>,
    tasks: JoinSet<Result<(), Retry>>,
    /// Task → (delivery, serialisation key).
    running: HashMap<tokio::task::Id, (DeliveryId, String)>,
    busy_keys: HashSet<String>,
    backoff: HashMap<DeliveryId, Backoff>,
    /// Each pending delivery's serialisation key, parsed once: under a backlog every scan sees the
    /// same deliveries again, and parsing them again took the CPU the webhook route needs.
    keys: HashMap<DeliveryId, String>,
}

async fn run(ctx: Arc<Ctx>, wake: Arc<Notify>, stop: CancellationToken) {
    let poll = ctx.settings.poll_interval;
    let mut state = Loop {
        ctx,
        tasks: JoinSet::new(),
        running: HashMap::new(),
        busy_keys: HashSet::new(),
        backoff: HashMap::new(),
        keys: HashMap::new(),
    };
    let mut scan = true;
    loop {
        if scan && !stop.is_cancelled() {
            state.scan().await;
        }
        // Only future retries: one due now is in hand or waits behind its key, and both end in a
        // task ending, which scans again.
        let now = Instant::now();
        let next_retry = state.backoff.values().map(|b| b.next).filter(|at| *at > now).min();
        scan = tokio::select! {
            biased;
            () = stop.cancelled() => break,
            Some(joined) = state.tasks.join_next_with_id() => {
                state.ended(joined).await;
                true
            }
            () = wake.notified() => true,
            () = tokio::time::sleep(poll) => true,
            () = sleep_until(next_retry) => true,
        };
    }
    // Let the deliveries in hand finish (their GitHub calls are bounded by the client's timeouts),
    // but not forever: an abandoned one stays unprocessed and is handled after the restart.
    let drain = async {
        while let Some(joined) = state.tasks.join_next_with_id().await {
            state.ended(joined).await;
        }
    };
    if tokio::time::timeout(Dispatcher::STOP_WAIT, drain).await.is_err() {
        tracing::warn!(
            deliveries = state.tasks.len(),
            "stopping with deliveries still being handled; they will be handled after the restart"
        );
        state.tasks.abort_all();
        while state.tasks.join_next().await.is_some() {}
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

impl Loop {
    /// Starts handling every unprocessed delivery that is not in hand, not waiting for a retry, and
    /// not behind an older one on the same pull request.
    async fn scan(&mut self) {
        // Nothing could start: reading the backlog again would only cost the route time.
        if self.tasks.len() >= self.ctx.settings.concurrency.max(1) {
            return;
        }
        let deliveries = match self.ctx.store.unprocessed_deliveries(self.ctx.settings.batch).await {
            Ok(deliveries) => deliveries,
            Err(error) => {
                tracing::error!(error = %error, "could not read the stored deliveries");
                return;
            }
        };
        let now = Instant::now();
        let in_hand: HashSet<DeliveryId> = self.running.values().map(|(id, _)| id.clone()).collect();
        // Keys an older delivery holds, in hand or waiting for its retry: younger ones wait behind it.
        let mut blocked = self.busy_keys.clone();
        for delivery in deliveries {
            if in_hand.contains(&delivery.id) {
                continue;
            }
            let key = match self.keys.get(&delivery.id) {
                Some(key) => key.clone(),
                None => {
                    let key = match Event::from_json(&delivery.event, &delivery.payload) {
                        Ok(event) => serial_key(&event).unwrap_or_else(|| delivery.id.0.clone()),
                        Err(_) => delivery.id.0.clone(),
                    };
                    self.keys.insert(delivery.id.clone(), key.clone());
                    key
                }
            };
            if blocked.contains(&key) {
                continue;
            }
            if self.backoff.get(&delivery.id).is_some_and(|b| b.next > now) {
                blocked.insert(key);
                continue;
            }
            if self.tasks.len() >= self.ctx.settings.concurrency.max(1) {
                break;
            }
            blocked.insert(key.clone());
            self.busy_keys.insert(key.clone());
            let id = delivery.id.clone();
            let event = Event::from_json(&delivery.event, &delivery.payload);
            let handle = self.tasks.spawn(handle(Arc::clone(&self.ctx), delivery, event));
            self.running.insert(handle.id(), (id, key));
        }
    }

    async fn ended(&mut self, joined: Result<(tokio::task::Id, Result<(), Retry>), tokio::task::JoinError>) {
        let (task, result) = match joined {
            Ok((task, result)) => (task, result),
            Err(error) => {
                let retry = if error.is_panic() {
                    Retry("handling it panicked".to_owned())
                } else {
                    Retry("handling it was aborted".to_owned())
                };
                (error.id(), Err(retry))
            }
        };
        let Some((id, key)) = self.running.remove(&task) else {
            return;
        };
        self.busy_keys.remove(&key);
        match result {
            Ok(()) => {
                self.backoff.remove(&id);
                self.keys.remove(&id);
            }
            Err(Retry(reason)) => {
                let tries = self.backoff.get(&id).map_or(0, |b| b.tries) + 1;
                if tries >= self.ctx.settings.max_tries {
                    tracing::error!(delivery = %id, tries, reason,
                        "giving up on a delivery that kept failing; it is dropped (redeliver it from the App's settings)");
                    self.backoff.remove(&id);
                    self.keys.remove(&id);
                    self.ctx.dropped.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if let Err(error) = self.ctx.store.process_delivery(&id, Vec::new(), now_ms()).await {
                        tracing::error!(delivery = %id, error = %error, "could not mark the delivery dropped");
                    }
                    return;
                }
                let delay = self.ctx.settings.backoff(tries);
                tracing::warn!(delivery = %id, tries, reason, retry_in_ms = delay.as_millis() as u64,
                    "could not handle the delivery; trying again later");
                self.backoff.insert(
                    id,
                    Backoff {
                        tries,
                        next: Instant::now() + delay,
                    },
                );
            }
        }
    }
}

/// Deliveries about the same pull request or issue are handled one at a time, oldest first.
fn serial_key(event: &Event) -> Option<String> {
    let (ctx, number) = match event {
        Event::Comment(comment) => (&comment.ctx, comment.issue.number),
        Event::IssueAssigned { ctx, issue, .. } | Event::IssueLabeled { ctx, issue, .. } => (ctx, issue.number),
        // The failures of one commit arrive together (a check run per job, a suite, a workflow run):
        // one at a time, so that the first queues the triage and the others find it.
        Event::WorkflowRunCompleted(run) => return Some(format!("{}@{}", run.ctx.repo.full_name(), run.head_sha)),
        Event::CheckRunCompleted(run) => return Some(format!("{}@{}", run.ctx.repo.full_name(), run.head_sha)),
        Event::CheckSuiteCompleted(suite) => {
            return Some(format!("{}@{}", suite.ctx.repo.full_name(), suite.head_sha));
        }
        _ => return None,
    };
    Some(format!("{}#{number}", ctx.repo.full_name()))
}

/// Handles one delivery to the end: `Ok` once it is processed (with or without jobs).
async fn handle(ctx: Arc<Ctx>, delivery: Delivery, event: Result<Event, EventError>) -> Result<(), Retry> {
    let id = delivery.id.clone();
    let event = match event {
        Ok(event) => event,
        Err(error) => {
            tracing::warn!(delivery = %id, error = %error, "the payload does not have its event's shape; dropped");
            return mark_processed(&ctx, &id, Vec::new()).await.map(|_| ());
        }
    };
    let repo_settings = repo_triggers(&ctx, &event).await?;
    let triggers = match &repo_settings {
        Some(settings) => with_repo(&ctx.settings.triggers, settings),
        None => ctx.settings.triggers.clone(),
    };
    match decide(&event, &triggers).with_delivery(&id.0) {
        Decision::Ignore { reason } => {
            tracing::debug!(delivery = %id, reason, "nothing to do");
            mark_processed(&ctx, &id, Vec::new()).await.map(|_| ())
        }
        Decision::Pong { .. } => mark_processed(&ctx, &id, Vec::new()).await.map(|_| ()),
        Decision::Act(request) => act(&ctx, &id, &event, *request, &triggers, repo_settings.as_ref()).await,
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

async fn act(
    ctx: &Ctx,
    id: &DeliveryId,
    event: &Event,
    request: Request,
    triggers: &TriggerConfig,
    repo_settings: Option<&TriggerSettings>,
) -> Result<(), Retry> {
    let login = request.requested_by.login.clone();
    let Some(client) = ctx.github.client(request.installation_id.map(InstallationId)) else {
        tracing::warn!(delivery = %id, "the delivery names no App installation, so pitcrew cannot act on it; dropped");
        return mark_processed(ctx, id, Vec::new()).await.map(|_| ());
    };
    let repo = match RepoName::new(&request.repo.owner, &request.repo.name) {
        Ok(repo) => repo,
        Err(error) => {
            tracing::warn!(delivery = %id, error = %error, "the delivery's repository name is not valid; dropped");
            return mark_processed(ctx, id, Vec::new()).await.map(|_| ());
        }
    };

    let permitted = match request.permission {
        PermissionGate::Trusted => true,
        PermissionGate::Refuse => false,
        // The repository's allow list is checked first: no API call for someone not on it.
        PermissionGate::NeedsPermissionCheck if repo_settings.is_some_and(|s| !s.allows_user(&login)) => false,
        PermissionGate::NeedsPermissionCheck => match Login::parse(&login) {
            // The event parser ignores deliveries with a malformed login; a request that still has
            // one (a delivery stored before that check) is dropped without asking GitHub about it.
            Err(error) => {
                tracing::warn!(delivery = %id, error = %error, "the requester's login is not valid; dropped");
                return mark_processed(ctx, id, Vec::new()).await.map(|_| ());
            }
            Ok(valid) => match client.collaborator_permission(&repo, &valid).await {
                Ok(permission) => match repo_settings {
                    Some(settings) => settings.min_permission.allows(permission),
                    None => permission.may_write(),
                },
                Err(error) if is_transient(&error) => {
                    return Err(Retry(format!("checking the permission of the requester: {error}")));
                }
                Err(error) => {
                    tracing::warn!(delivery = %id, repo = %repo, error = %error,
                    "could not check the requester's permission (the repository may be gone or the App uninstalled); dropped");
                    ctx.dropped.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    return mark_processed(ctx, id, Vec::new()).await.map(|_| ());
                }
            },
        },
    };
    if !permitted {
        tracing::info!(delivery = %id, repo = %repo, user = %login, "request refused: no write access");
        mark_processed(ctx, id, Vec::new()).await?;
        post(&client, &repo, &request.reply_to, &replies::not_permitted(&login)).await;
        return Ok(());
    }

    react_eyes(&client, &repo, event).await;

    let trigger = &triggers.trigger;
    let mut texts = Vec::new();
    let mut jobs = Vec::new();
    for action in &request.actions {
        match action {
            Action::Stop { key } => {
                let stop = StopRequest::ByUser { login: login.clone() };
                let cancellation = ctx
                    .pool
                    .cancel(key, &stop)
                    .await
                    .map_err(|error| Retry(format!("stopping the jobs of {key}: {error}")))?;
                tracing::info!(delivery = %id, key, cancelled = ?cancellation.cancelled,
                    stopping = ?cancellation.stopping, "stop asked");
                texts.push(if cancellation.is_empty() {
                    NOTHING_TO_STOP.to_owned()
                } else {
                    replies::stopped_by(Some(&login))
                });
            }
            Action::Help => texts.push(replies::help(trigger, replies::COMMANDS)),
            Action::Invalid { message } => texts.push(message.clone()),
            Action::Run(job) if duplicate_triage(ctx, job).await? => {
                tracing::info!(delivery = %id, key = %job.key(), "a triage of this commit is already queued");
            }
            Action::Run(job) => match serde_json::to_value(job.as_ref()) {
                Ok(value) => jobs.push(NewJob {
                    kind: job.kind.as_str().to_owned(),
                    repo: job.repo.full_name(),
                    key: job.key(),
                    request: value,
                    delivery: Some(id.clone()),
                    max_attempts: ctx.settings.job_attempts.max(1),
                }),
                Err(error) => {
                    tracing::error!(delivery = %id, error = %error, "could not encode a job request; skipped");
                }
            },
        }
    }
    // Nobody asked for a CI triage, so nobody is told it waits.
    if !jobs.is_empty() && request.permission != PermissionGate::Trusted {
        let ahead = jobs_ahead(ctx, &request.key()).await?;
        if ahead > 0 {
            texts.push(replies::queued(trigger, ahead));
        }
    }
    match mark_processed(ctx, id, jobs).await? {
        Dispatch::Created(created) => {
            if !created.is_empty() {
                tracing::info!(delivery = %id, jobs = ?created, key = %request.key(), "jobs queued");
                ctx.pool.wake();
            }
        }
        Dispatch::AlreadyProcessed => {
            // Another process got there first and has answered.
            tracing::info!(delivery = %id, "the delivery was already processed");
            return Ok(());
        }
    }
    for text in texts {
        post(&client, &repo, &request.reply_to, &text).await;
    }
    Ok(())
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
                .add_review_comment_reaction(repo, CommentId(comment.comment_id), Reaction::Eyes)
                .await
        }
        Event::Comment(comment) => {
            client
                .add_issue_comment_reaction(repo, CommentId(comment.comment_id), Reaction::Eyes)
                .await
        }
        Event::IssueAssigned { issue, .. } | Event::IssueLabeled { issue, .. } => {
            client
                .add_issue_reaction(repo, IssueNumber(issue.number), Reaction::Eyes)
                .await
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
        ReplyTarget::Issue { number, .. } => client
            .create_issue_comment(repo, IssueNumber(*number), body)
            .await
            .map(drop),
        ReplyTarget::ReviewThread {
            pull_number,
            comment_id,
        } => client
            .reply_to_review_comment(repo, IssueNumber(*pull_number), CommentId(*comment_id), body)
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
    fn backoff_doubles_up_to_the_cap_with_jitter() {
        let settings = DispatchSettings::new(TriggerConfig::new("@agent", "pitcrew[bot]"), 3);
        for (tries, ceiling) in [(1, 2), (2, 4), (3, 8), (9, 300), (30, 300)] {
            let delay = settings.backoff(tries);
            let ceiling = Duration::from_secs(ceiling);
            assert!(delay >= ceiling / 2 && delay <= ceiling, "{tries}: {delay:?}");
        }
    }

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
