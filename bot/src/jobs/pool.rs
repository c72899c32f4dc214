//! The worker pool: claims jobs from the store (at most `concurrency` at once, one per key, which the
//! store's claim enforces), runs each with the job handler under a heartbeated lease, writes how it
//! ended, and on shutdown lets running jobs finish within a grace period and requeues the rest.
//!
//! Each running job has a supervisor task that owns its lease: it heartbeats, turns "stop asked",
//! "lease lost" and "shutting down" into the handler's cancellation token, drops a handler that does
//! not return within `cancel_grace` of its token firing, and writes the outcome. The handler itself
//! runs in its own task, so a panic fails the job instead of taking the pool down.
//!
//! A job that waits for something outside (CI on the commit it pushed) gives its slot back while it
//! waits ([`JobControl::idle`]) and keeps its lease; a shutdown stops such a job at once, and it is
//! requeued to wait again after the restart.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::future::BoxFuture;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, broadcast, watch};
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::record::Record;
use super::store::{
    Cancellation, Claim, Finish, Heartbeat, Job, JobFilter, JobId, JobState, JobStore, Lease, NewJob, Release, Signal,
    StopRequest, StoreError,
};
use super::watch::CiWatch;

/// Runs one job. It should return soon after `control`'s token fires (a stop was asked, the lease
/// was lost, or the pool is shutting down); one that does not is dropped after `cancel_grace`.
pub type JobHandler = Arc<dyn Fn(Job, JobControl) -> BoxFuture<'static, Finish> + Send + Sync>;

/// The current time as unix milliseconds, the store's clock.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolConfig {
    /// Jobs running at once in this process.
    pub concurrency: usize,
    /// How long a claim or a heartbeat holds a job; a worker silent for longer is presumed dead.
    pub lease: Duration,
    /// How often a running job's lease is renewed (and a stop request noticed). Capped at half the
    /// lease, so one late heartbeat never loses it.
    pub heartbeat: Duration,
    /// How often the pool looks for work without being woken, and recovers expired leases.
    pub poll_interval: Duration,
    /// How long a handler whose token fired may take to return before it is dropped.
    pub cancel_grace: Duration,
    /// Names this process in leases and job events.
    pub worker_name: String,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            concurrency: 4,
            lease: Duration::from_secs(60),
            heartbeat: Duration::from_secs(10),
            poll_interval: Duration::from_secs(2),
            cancel_grace: Duration::from_secs(30),
            worker_name: default_worker_name(),
        }
    }
}

/// Names this process in leases: its host (replicas on several machines, or containers that are all
/// process 1), its process id and a random part (a restarted process is another worker).
pub fn default_worker_name() -> String {
    let host = nix::unistd::gethostname()
        .ok()
        .and_then(|name| name.into_string().ok())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "pitcrew".to_owned());
    format!("{host}-{}-{:08x}", std::process::id(), fastrand::u32(..))
}

/// Why a job did not get to act: see [`JobControl::fence`].
#[derive(Debug, Clone, thiserror::Error)]
pub enum Fenced {
    /// Another worker may run the job now (this one was paused, cut off or presumed dead).
    #[error("this worker no longer holds the job's lease; another may be running it")]
    LeaseLost,
    /// The store could not be asked (unreachable, failing): acting could be acting twice.
    #[error("could not confirm the job's lease with the job store: {0}")]
    Unconfirmed(String),
}

/// Why a job's token fired; the first cause wins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopCause {
    /// `@agent stop`, and who asked.
    Requested(StopRequest),
    /// The pool is shutting down: the job will be requeued unless it succeeds first.
    Shutdown,
    /// Another worker may run the job now: nothing this attempt returns is written.
    LeaseLost,
}

/// What a handler gets besides the job: its cancellation token and its event log.
#[derive(Clone)]
pub struct JobControl {
    job: JobId,
    store: Arc<dyn JobStore>,
    token: CancellationToken,
    cause: Arc<OnceLock<StopCause>>,
    /// The pool, to wake for a job this one queues.
    pool: std::sync::Weak<Shared>,
    /// The job's slot among the pool's `concurrency`; empty while it waits idle.
    slot: Arc<Mutex<Option<OwnedSemaphorePermit>>>,
    /// Whether the job waits idle now (a shutdown stops it at once).
    idle: Arc<std::sync::atomic::AtomicBool>,
    /// The attempt's lease, and how long a renewal holds it.
    lease: Lease,
    lease_for: Duration,
    /// Asks the supervisor to heartbeat now (a stop was signalled by another process).
    beat: Arc<Notify>,
}

impl std::fmt::Debug for JobControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobControl")
            .field("job", &self.job)
            .field("cancelled", &self.token.is_cancelled())
            .field("cause", &self.cause.get())
            .finish()
    }
}

impl JobControl {
    pub fn job(&self) -> JobId {
        self.job
    }

    /// Fires when the job should stop; pass it (or child tokens) to model calls, sandboxes and tools.
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Why the token fired, once it has.
    pub fn stop_cause(&self) -> Option<StopCause> {
        self.cause.get().cloned()
    }

    /// Appends to the job's history (progress a user or an operator can follow, what a retry
    /// picks up).
    pub async fn record(&self, record: &impl Record) -> Result<u64, StoreError> {
        let (kind, data) = record.to_row().map_err(StoreError::Encode)?;
        self.store.append_event(self.job, &kind, data, now_ms()).await
    }

    /// The job's history so far, earlier attempts included.
    pub async fn events(&self) -> Result<Vec<crate::jobs::JobEvent>, StoreError> {
        self.store.events(self.job).await
    }

    /// Queues a job that this one hands its work to (a triage's fix), and wakes the pool for it.
    pub async fn enqueue(&self, job: NewJob) -> Result<JobId, StoreError> {
        let id = self.store.enqueue(job, now_ms()).await?;
        if let Some(pool) = self.pool.upgrade() {
            pool.wake.notify_one();
        }
        Ok(id)
    }

    /// Another job's history (a triage asks whether a fix loop pushed the commit it looks at).
    pub async fn events_of(&self, job: JobId) -> Result<Vec<crate::jobs::JobEvent>, StoreError> {
        self.store.events(job).await
    }

    /// The jobs waiting for CI in this process (empty for a control outside a pool).
    pub fn ci_watch(&self) -> CiWatch {
        self.pool.upgrade().map(|pool| pool.watch.clone()).unwrap_or_default()
    }

    /// Runs `wait` — a wait for something outside, with no sandbox or working copy held — with
    /// the job's slot given back to the pool, so that waiting jobs do not keep others from
    /// running; the slot is taken again after (or not, when the job is being stopped). The lease
    /// stays the job's throughout.
    pub async fn idle<F: Future>(&self, wait: F) -> F::Output {
        // Dropped here: the slot is the pool's again while the job waits.
        let released = lock(&self.slot).take().map(drop).is_some();
        let pool = self.pool.upgrade();
        if released && let Some(pool) = &pool {
            pool.wake.notify_one();
        }
        self.idle.store(true, std::sync::atomic::Ordering::SeqCst);
        let output = wait.await;
        self.idle.store(false, std::sync::atomic::Ordering::SeqCst);
        if released && let Some(pool) = pool {
            let permit = tokio::select! {
                permit = Arc::clone(&pool.slots).acquire_owned() => permit.ok(),
                () = self.token.cancelled() => None,
            };
            *lock(&self.slot) = permit;
        }
        output
    }

    /// The jobs of a serialisation key in any state, newest first (at most `limit`).
    pub async fn jobs_of(&self, key: &str, limit: u32) -> Result<Vec<Job>, StoreError> {
        let filter = JobFilter {
            key: Some(key.to_owned()),
            limit,
            ..JobFilter::default()
        };
        self.store.jobs(&filter).await
    }

    /// Confirms with the store, renewing it, that this attempt still holds the job's lease: call it
    /// right before a side effect another attempt could also perform (a push, a pull request, a
    /// review, a comment, the final report). A worker paused or cut off past its lease learns here
    /// that the job may be another worker's now, and must not act; its token fires.
    pub async fn fence(&self) -> Result<(), Fenced> {
        let mut tries = 0u32;
        loop {
            match self.store.heartbeat(&self.lease, self.lease_for, now_ms()).await {
                Ok(Heartbeat::Ok) => return Ok(()),
                // Still the job's: it may report, and learns of the stop now rather than at the
                // next heartbeat.
                Ok(Heartbeat::CancelRequested(request)) => {
                    self.stop(StopCause::Requested(request));
                    return Ok(());
                }
                Ok(Heartbeat::LeaseLost) => {
                    tracing::warn!("the job's lease is gone; not acting on it");
                    self.stop(StopCause::LeaseLost);
                    return Err(Fenced::LeaseLost);
                }
                Err(error) if tries < 2 => {
                    tries += 1;
                    tracing::warn!(error = %error, "could not confirm the job's lease; trying again");
                    tokio::time::sleep(Duration::from_millis(250 * u64::from(tries))).await;
                }
                Err(error) => return Err(Fenced::Unconfirmed(error.to_string())),
            }
        }
    }

    fn stop(&self, cause: StopCause) {
        let _ = self.cause.set(cause);
        self.token.cancel();
    }
}

/// How a job this pool ran ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobEnd {
    pub job: JobId,
    pub outcome: EndOutcome,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndOutcome {
    /// Written to the store in this final state.
    Finished(JobState),
    /// Back in the queue (shutdown), the attempt not counted.
    Requeued,
    /// The lease was lost; nothing was written (the job belongs to whoever holds it now).
    LeaseLost,
    /// The store refused the write; the lease will expire and recovery will retry or fail the job.
    NotRecorded,
}

/// What [`WorkerPool::shutdown`] did with the jobs that were running when claiming stopped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Ended during the shutdown, in this state.
    pub finished: Vec<(JobId, JobState)>,
    /// Did not finish within the grace period; queued again.
    pub requeued: Vec<JobId>,
    /// Could not be written back (lease lost, store failure); recovery deals with them.
    pub abandoned: Vec<JobId>,
}

struct Shared {
    store: Arc<dyn JobStore>,
    handler: JobHandler,
    config: PoolConfig,
    slots: Arc<Semaphore>,
    wake: Notify,
    stopping: CancellationToken,
    running: Mutex<HashMap<JobId, JobControl>>,
    /// How many supervisors are alive (jobs waiting idle hold no slot, so the slots alone do not
    /// say when all have ended).
    supervisors: watch::Sender<usize>,
    /// Jobs waiting for CI, and what wakes them.
    watch: CiWatch,
    /// Ends recorded once claiming has stopped, for the shutdown report.
    ended: Mutex<Vec<JobEnd>>,
    events: broadcast::Sender<JobEnd>,
}

/// Runs jobs from a store until shut down. Dropping it stops claiming; jobs already running go on.
pub struct WorkerPool {
    shared: Arc<Shared>,
    dispatcher: Option<JoinHandle<()>>,
    recovery: Option<JoinHandle<()>>,
    /// Follows the store's signals (see [`follow_signals`]).
    follower: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for WorkerPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerPool")
            .field("config", &self.shared.config)
            .field("running", &self.running())
            .finish()
    }
}

impl WorkerPool {
    /// Starts claiming at once. Must be called inside a tokio runtime.
    pub fn start(store: Arc<dyn JobStore>, handler: JobHandler, mut config: PoolConfig) -> WorkerPool {
        config.concurrency = config
            .concurrency
            .clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize));
        config.heartbeat = config.heartbeat.min(config.lease / 2).max(Duration::from_millis(1));
        let shared = Arc::new(Shared {
            store,
            handler,
            slots: Arc::new(Semaphore::new(config.concurrency)),
            config,
            wake: Notify::new(),
            stopping: CancellationToken::new(),
            running: Mutex::new(HashMap::new()),
            supervisors: watch::Sender::new(0),
            watch: CiWatch::default(),
            ended: Mutex::new(Vec::new()),
            events: broadcast::channel(256).0,
        });
        // Subscribed before the first claim: nothing signalled from here on is missed.
        let signals = shared.store.signals();
        let follower = tokio::spawn(follow_signals(Arc::clone(&shared), signals));
        let dispatcher = tokio::spawn(dispatch(Arc::clone(&shared)));
        let recovery = tokio::spawn(recover_periodically(Arc::clone(&shared)));
        WorkerPool {
            shared,
            dispatcher: Some(dispatcher),
            recovery: Some(recovery),
            follower: Some(follower),
        }
    }

    /// Looks for work now (call it after enqueueing, so a job starts within milliseconds rather than
    /// at the next poll).
    pub fn wake(&self) {
        self.shared.wake.notify_one();
    }

    /// Every job end from now on (tests and the server's metrics follow jobs with it).
    pub fn subscribe(&self) -> broadcast::Receiver<JobEnd> {
        self.shared.events.subscribe()
    }

    /// Names this process in leases.
    pub fn worker_name(&self) -> &str {
        &self.shared.config.worker_name
    }

    /// The jobs waiting for CI in this process, and what wakes them.
    pub fn ci_watch(&self) -> &CiWatch {
        &self.shared.watch
    }

    /// The jobs running in this process.
    pub fn running(&self) -> Vec<JobId> {
        let mut ids: Vec<JobId> = lock(&self.shared.running).keys().copied().collect();
        ids.sort();
        ids
    }

    /// `@agent stop`: cancels the key's queued jobs and asks its running one to stop. A job running
    /// in this process sees its token fire at once; one running elsewhere, at its next heartbeat.
    pub async fn cancel(&self, key: &str, request: &StopRequest) -> Result<Cancellation, StoreError> {
        let cancellation = self.shared.store.cancel(key, request, now_ms()).await?;
        let running = lock(&self.shared.running);
        for id in &cancellation.stopping {
            if let Some(control) = running.get(id) {
                control.stop(StopCause::Requested(request.clone()));
            }
        }
        Ok(cancellation)
    }

    /// [`JobStore::supersede`], and the running job's worker told at once.
    pub async fn supersede(&self, key: &str, kind: &str, request: &StopRequest) -> Result<Cancellation, StoreError> {
        let cancellation = self.shared.store.supersede(key, kind, request, now_ms()).await?;
        let running = lock(&self.shared.running);
        for id in &cancellation.stopping {
            if let Some(control) = running.get(id) {
                control.stop(StopCause::Requested(request.clone()));
            }
        }
        Ok(cancellation)
    }

    /// Stops claiming new jobs; running ones go on. [`WorkerPool::shutdown`] does this first.
    pub fn stop_claiming(&self) {
        self.shared.stopping.cancel();
        self.shared.wake.notify_one();
    }

    /// SIGTERM: stops claiming, waits up to `grace` for running jobs, then fires the tokens of the
    /// rest, gives them `cancel_grace` to return, and requeues them (a job that succeeds in the
    /// meantime is recorded as such).
    pub async fn shutdown(mut self, grace: Duration) -> ShutdownReport {
        self.stop_claiming();
        if let Some(dispatcher) = self.dispatcher.take() {
            // The dispatcher only ends by seeing `stopping`; a panic in it has nothing to clean up.
            let _ = dispatcher.await;
        }
        if let Some(recovery) = self.recovery.take() {
            recovery.abort();
        }
        // A job waiting idle (for CI) has nothing to finish: it is requeued, and waits again after
        // the restart.
        let idle: Vec<JobControl> = lock(&self.shared.running)
            .values()
            .filter(|control| control.idle.load(std::sync::atomic::Ordering::SeqCst))
            .cloned()
            .collect();
        for control in idle {
            control.stop(StopCause::Shutdown);
        }
        let all = u32::try_from(self.shared.config.concurrency).unwrap_or(u32::MAX);
        let slots = Arc::clone(&self.shared.slots);
        // Every slot free again means every supervisor has written its job's end.
        if tokio::time::timeout(grace, slots.acquire_many(all)).await.is_err() {
            let running: Vec<JobControl> = lock(&self.shared.running).values().cloned().collect();
            tracing::info!(jobs = running.len(), "grace period over; stopping the running jobs");
            for control in running {
                control.stop(StopCause::Shutdown);
            }
            // Bounded: each supervisor drops its handler after `cancel_grace`.
            let _ = slots.acquire_many(all).await;
        }
        // Jobs that were waiting idle held no slot: wait for their supervisors too (bounded the
        // same way). One that goes idle after the first look is stopped here.
        let mut supervisors = self.shared.supervisors.subscribe();
        loop {
            let idle: Vec<JobControl> = lock(&self.shared.running).values().cloned().collect();
            for control in idle {
                control.stop(StopCause::Shutdown);
            }
            if *supervisors.borrow_and_update() == 0 {
                break;
            }
            if supervisors.changed().await.is_err() {
                break;
            }
        }
        let mut report = ShutdownReport::default();
        for end in lock(&self.shared.ended).drain(..) {
            match end.outcome {
                EndOutcome::Finished(state) => report.finished.push((end.job, state)),
                EndOutcome::Requeued => report.requeued.push(end.job),
                EndOutcome::LeaseLost | EndOutcome::NotRecorded => report.abandoned.push(end.job),
            }
        }
        if let Some(follower) = self.follower.take() {
            follower.abort();
        }
        report
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        self.shared.stopping.cancel();
        if let Some(recovery) = self.recovery.take() {
            recovery.abort();
        }
        if let Some(follower) = self.follower.take() {
            follower.abort();
        }
    }
}

/// Acts on the store's signals — those of every process sharing it —, until the pool goes: a job
/// queued or a key freed anywhere wakes the claimer; a stop asked anywhere makes the job's
/// supervisor heartbeat now (the heartbeat says who asked); CI news or a pull request's change
/// wakes the job waiting on it. A signal missed (a lag, a reconnection) wakes everything.
async fn follow_signals(shared: Arc<Shared>, mut signals: broadcast::Receiver<Signal>) {
    loop {
        match signals.recv().await {
            Ok(Signal::Jobs) => shared.wake.notify_one(),
            Ok(Signal::Stop(job)) => {
                if let Some(control) = lock(&shared.running).get(&job) {
                    control.beat.notify_one();
                }
            }
            Ok(Signal::Commit { repo, sha }) => {
                shared.watch.wake_commit(&repo, &sha);
            }
            Ok(Signal::Key(key)) => {
                shared.watch.wake_key(&key);
            }
            Ok(Signal::Deliveries) => {}
            Ok(Signal::Resync) | Err(broadcast::error::RecvError::Lagged(_)) => {
                shared.wake.notify_one();
                for control in lock(&shared.running).values() {
                    control.beat.notify_one();
                }
                shared.watch.wake_all();
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

async fn dispatch(shared: Arc<Shared>) {
    loop {
        let permit = tokio::select! {
            biased;
            () = shared.stopping.cancelled() => return,
            permit = Arc::clone(&shared.slots).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => return,
            },
        };
        let claimed = shared
            .store
            .claim(&shared.config.worker_name, shared.config.lease, now_ms())
            .await;
        match claimed {
            Ok(Some(claim)) => {
                let span = job_span(&claim);
                span.in_scope(|| tracing::info!("job started"));
                tokio::spawn(supervise(Arc::clone(&shared), claim, permit).instrument(span));
                // Look again at once: more jobs may be waiting.
            }
            Ok(None) => {
                drop(permit);
                idle(&shared).await;
            }
            Err(error) => {
                drop(permit);
                tracing::error!(error = %error, "could not claim a job");
                idle(&shared).await;
            }
        }
    }
}

/// The span everything a job does is logged in — its supervisor (heartbeats, the end), its
/// handler, and the tasks the handler spawns, which instrument themselves with the current span —
/// so that its ids are on every line, with the delivery that asked for it when one did. `subject`
/// (what the job is about: `#12`, a commit) is the handler's to record ([`record_subject`]): the
/// pool does not read requests.
fn job_span(claim: &Claim) -> tracing::Span {
    let job = &claim.job;
    // At the error level, so that it is on whatever the filter: a span says what a line is about,
    // not how much it matters, and a warning logged under `RUST_LOG=warn` still names its job.
    tracing::error_span!("job", job = %job.id, kind = %job.kind, repo = %job.repo, key = %job.key,
        attempt = claim.lease.attempt, subject = tracing::field::Empty,
        delivery = job.delivery.as_ref().map(|delivery| delivery.0.as_str()))
}

/// Records what the running job is about (its pull request or issue, `#12`; the commit a CI triage
/// looks at) on its span. Call it from the handler, inside the job's span.
pub fn record_subject(subject: &str) {
    tracing::Span::current().record("subject", subject);
}

/// Waits for a wake-up, the poll interval, or shutdown. `Notify` keeps one wake-up that arrives while
/// nobody waits, so an enqueue between a fruitless claim and this wait is not missed.
async fn idle(shared: &Shared) {
    tokio::select! {
        () = shared.stopping.cancelled() => {}
        () = shared.wake.notified() => {}
        () = tokio::time::sleep(shared.config.poll_interval) => {}
    }
}

async fn recover_periodically(shared: Arc<Shared>) {
    loop {
        match shared.store.recover(now_ms()).await {
            Ok(recovery) if !recovery.is_empty() => {
                tracing::warn!(requeued = ?recovery.requeued, failed = ?recovery.failed,
                    cancelled = ?recovery.cancelled, "recovered jobs whose worker stopped heartbeating");
                shared.wake.notify_one();
            }
            Ok(_) => {}
            Err(error) => tracing::error!(error = %error, "could not recover expired jobs"),
        }
        tokio::select! {
            () = shared.stopping.cancelled() => return,
            () = tokio::time::sleep(shared.config.poll_interval) => {}
        }
    }
}

/// How the handler's task ended.
enum Ended {
    Returned(Finish),
    Panicked(String),
    /// Dropped after not returning within `cancel_grace` of its token firing.
    Dropped,
}

async fn supervise(shared: Arc<Shared>, claim: Claim, permit: OwnedSemaphorePermit) {
    let Claim { job, lease } = claim;
    let id = job.id;
    let control = JobControl {
        job: id,
        store: Arc::clone(&shared.store),
        token: CancellationToken::new(),
        cause: Arc::new(OnceLock::new()),
        pool: Arc::downgrade(&shared),
        slot: Arc::new(Mutex::new(Some(permit))),
        idle: Arc::new(std::sync::atomic::AtomicBool::new(false)),
        lease: lease.clone(),
        lease_for: shared.config.lease,
        beat: Arc::new(Notify::new()),
    };
    shared.supervisors.send_modify(|n| *n += 1);
    lock(&shared.running).insert(id, control.clone());

    let ended = run_handler(&shared, job, &lease, &control).await;
    let outcome = record(&shared, &lease, &control, ended).await;

    lock(&shared.running).remove(&id);
    let end = JobEnd { job: id, outcome };
    tracing::info!(outcome = ?end.outcome, "job ended");
    if shared.stopping.is_cancelled() {
        lock(&shared.ended).push(end.clone());
    }
    // Nobody listening is fine.
    let _ = shared.events.send(end);
    drop(lock(&control.slot).take());
    shared.supervisors.send_modify(|n| *n -= 1);
    // The slot is free, and a job waiting behind this one's key may be claimable now.
    shared.wake.notify_one();
}

async fn run_handler(shared: &Shared, job: Job, lease: &Lease, control: &JobControl) -> Ended {
    let handler = Arc::clone(&shared.handler);
    let handler_control = control.clone();
    // The handler is called inside the task too, so that a panic before its future exists is caught.
    let mut task =
        tokio::spawn(async move { handler(job, handler_control).await }.instrument(tracing::Span::current()));
    let period = shared.config.heartbeat;
    let mut beat = tokio::time::interval_at(Instant::now() + period, period);
    beat.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let deadline = tokio::time::sleep(Duration::MAX);
    tokio::pin!(deadline);
    let mut dropping = false;
    loop {
        tokio::select! {
            joined = &mut task => {
                return match joined {
                    Ok(finish) => Ended::Returned(finish),
                    Err(error) if error.is_panic() => Ended::Panicked(panic_message(error.into_panic())),
                    Err(_) => Ended::Dropped,
                };
            }
            _ = beat.tick() => heartbeat(shared, lease, control).await,
            () = control.beat.notified() => heartbeat(shared, lease, control).await,
            () = control.token.cancelled(), if !dropping => {
                dropping = true;
                deadline.as_mut().reset(Instant::now() + shared.config.cancel_grace);
            }
            () = &mut deadline, if dropping => {
                tracing::warn!("the job did not stop within the grace period; dropping it");
                task.abort();
                return Ended::Dropped;
            }
        }
    }
}

/// Renews the lease, and turns what the store says into the job's stop.
async fn heartbeat(shared: &Shared, lease: &Lease, control: &JobControl) {
    match shared.store.heartbeat(lease, shared.config.lease, now_ms()).await {
        Ok(Heartbeat::Ok) => {}
        Ok(Heartbeat::CancelRequested(request)) => control.stop(StopCause::Requested(request)),
        Ok(Heartbeat::LeaseLost) => {
            tracing::warn!("lost the job's lease; stopping it");
            control.stop(StopCause::LeaseLost);
        }
        // The lease outlives a few failed heartbeats; if it expires meanwhile, recovery requeues
        // the job and the next heartbeat reports the loss.
        Err(error) => tracing::warn!(error = %error, "heartbeat failed"),
    }
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "no message".to_owned()
    }
}

/// Writes how the job ended, according to why it stopped.
async fn record(shared: &Shared, lease: &Lease, control: &JobControl, ended: Ended) -> EndOutcome {
    let panicked = |message: String| Finish::Failed(format!("internal error: the job handler panicked ({message})"));
    let finish = match (control.stop_cause(), ended) {
        (Some(StopCause::LeaseLost), _) => return EndOutcome::LeaseLost,
        (_, Ended::Panicked(message)) => panicked(message),
        // A job that made it despite the shutdown keeps its result; anything else (an error caused
        // by the cancellation, most likely) runs again after the restart.
        (Some(StopCause::Shutdown), Ended::Returned(Finish::Succeeded(result))) => Finish::Succeeded(result),
        (Some(StopCause::Shutdown), _) => return requeue(shared, lease).await,
        (Some(StopCause::Requested(request)), Ended::Dropped) => Finish::Cancelled(request.to_string()),
        (_, Ended::Returned(finish)) => finish,
        (None, Ended::Dropped) => Finish::Failed("internal error: the job was aborted".to_owned()),
    };
    let state = finish.state();
    let mut attempt = 0;
    loop {
        match shared.store.finish(lease, finish.clone(), now_ms()).await {
            Ok(Release::Done | Release::Cancelled) => return EndOutcome::Finished(state),
            Ok(Release::LeaseLost) => return EndOutcome::LeaseLost,
            Err(error) if attempt < 2 => {
                attempt += 1;
                tracing::warn!(error = %error, "could not record the job's end; retrying");
                tokio::time::sleep(Duration::from_millis(200 * attempt)).await;
            }
            Err(error) => {
                tracing::error!(error = %error, "could not record the job's end");
                return EndOutcome::NotRecorded;
            }
        }
    }
}

async fn requeue(shared: &Shared, lease: &Lease) -> EndOutcome {
    match shared.store.requeue(lease, now_ms()).await {
        Ok(Release::Done) => EndOutcome::Requeued,
        Ok(Release::Cancelled) => EndOutcome::Finished(JobState::Cancelled),
        Ok(Release::LeaseLost) => EndOutcome::LeaseLost,
        Err(error) => {
            tracing::error!(error = %error, "could not requeue the job");
            EndOutcome::NotRecorded
        }
    }
}
