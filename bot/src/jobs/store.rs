//! The job store's contract: the records (deliveries, jobs, job events), the state machine of a job,
//! the signals between the processes sharing a store, and the [`JobStore`] trait, implemented by
//! SQLite (one process) and PostgreSQL (any number of replicas).
//!
//! Times are unix milliseconds passed in by the caller, so a store is deterministic under test; only
//! the worker pool reads the clock. Every method returns a boxed `'static` future: SQLite work is
//! blocking and runs on tokio's blocking threads, a PostgreSQL client is natively async, and callers
//! (axum handlers, the pool) can spawn or `select!` on the futures without borrowing the store.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What every store method returns.
pub type StoreFuture<T> = BoxFuture<'static, Result<T, StoreError>>;

/// GitHub's `X-GitHub-Delivery` header: unique per delivery, repeated on a redelivery.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DeliveryId(pub String);

impl fmt::Display for DeliveryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A job's id; ids grow with insertion order and are never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct JobId(pub i64);

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// queued → running → succeeded | failed | cancelled. A running job may go back to queued when its
/// worker stopped (graceful shutdown, or a crash seen through an expired lease).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    Queued,
    Running,
    Succeeded,
    Failed,
    Cancelled,
}

impl JobState {
    pub const ALL: [JobState; 5] = [
        JobState::Queued,
        JobState::Running,
        JobState::Succeeded,
        JobState::Failed,
        JobState::Cancelled,
    ];

    /// The name stored in the database and shown in metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Succeeded => "succeeded",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
        }
    }

    pub fn parse(text: &str) -> Option<JobState> {
        JobState::ALL.into_iter().find(|state| state.as_str() == text)
    }

    /// Whether the job is over (succeeded, failed or cancelled).
    pub fn is_final(self) -> bool {
        matches!(self, JobState::Succeeded | JobState::Failed | JobState::Cancelled)
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A job to create.
#[derive(Debug, Clone, PartialEq)]
pub struct NewJob {
    /// What the handler should do, e.g. `fix`, `review`.
    pub kind: String,
    /// `owner/name`.
    pub repo: String,
    /// The serialisation key, e.g. `owner/name#12`: at most one job per key runs at a time, and a
    /// newer one waits in the queue behind it.
    pub key: String,
    /// Everything the handler needs, as the triggers produced it.
    pub request: Value,
    /// The delivery that caused the job; set by [`JobStore::process_delivery`] when left empty.
    pub delivery: Option<DeliveryId>,
    /// How many times the job may be started; interruptions (crash, lost lease) beyond this fail it.
    pub max_attempts: u32,
}

impl NewJob {
    /// The default bound on attempts: one crash is retried, a job that kills its worker twice more
    /// is probably what kills it.
    pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;
}

/// A stored job.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub id: JobId,
    pub kind: String,
    pub repo: String,
    pub key: String,
    pub request: Value,
    pub delivery: Option<DeliveryId>,
    pub state: JobState,
    /// Starts so far, the current one included; a graceful requeue does not count.
    pub attempts: u32,
    pub max_attempts: u32,
    pub created_at: i64,
    /// When the latest attempt started.
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
    pub lease_owner: Option<String>,
    pub lease_expires_at: Option<i64>,
    /// Who asked the job to stop while it ran (`@agent stop`); its worker learns it at the next
    /// heartbeat.
    pub cancel_requested: Option<StopRequest>,
    pub result: Option<Value>,
    /// Why the job failed or was cancelled, in plain words.
    pub error: Option<String>,
}

/// The right to act on one attempt of a running job. A lease names the attempt, not just the worker,
/// so a worker that was presumed dead and whose job was restarted elsewhere (or by itself, under the
/// same name) can no longer write over the newer attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub job: JobId,
    pub worker: String,
    pub attempt: u32,
}

/// A job just claimed, with the lease to heartbeat and finish it.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    pub job: Job,
    pub lease: Lease,
}

/// One line of a job's history as stored: lifecycle changes recorded by the store
/// ([`crate::jobs::Lifecycle`]) and the handler's own records. [`JobEvent::record`] reads it as
/// one writer's [`crate::jobs::Record`].
#[derive(Debug, Clone, PartialEq)]
pub struct JobEvent {
    pub job_id: JobId,
    /// 1, 2, 3… per job, in the order the events were appended.
    pub seq: u64,
    pub at: i64,
    pub kind: String,
    pub data: Value,
}

/// A webhook delivery as received (headers already checked by the route).
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    pub id: DeliveryId,
    /// `X-GitHub-Event`.
    pub event: String,
    pub received_at: i64,
    /// Empty once [`JobStore::prune`] has dropped it (see [`Retention::payloads`]).
    pub payload: Vec<u8>,
    /// When it was turned into jobs (possibly none); `None` while it waits for the dispatcher.
    pub processed_at: Option<i64>,
}

/// An unprocessed delivery as the dispatcher lists it: without its payload (read once, when it is
/// first handled), with who holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub id: DeliveryId,
    /// `X-GitHub-Event`.
    pub event: String,
    /// Its claim, while a worker holds one (it may have run out: compare `until` with now).
    pub claim: Option<HeldClaim>,
}

/// An unprocessed delivery a worker may handle ([`JobStore::available_deliveries`]): nobody holds
/// it, or that worker does, or its holder's claim ran out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Available {
    pub id: DeliveryId,
    /// `X-GitHub-Event`.
    pub event: String,
    /// Its claim as stored, if any (the worker's own, or one that ran out).
    pub claim: Option<HeldClaim>,
    /// An older unprocessed delivery of its key is held by another live worker: it waits for that
    /// one to be handled.
    pub behind: bool,
}

/// A claim on a delivery as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldClaim {
    /// The delivery's serialisation key (its pull request or issue).
    pub key: String,
    pub worker: String,
    /// Until when (ms since the epoch) other workers keep off it.
    pub until: i64,
}

impl HeldClaim {
    /// The claim from its three columns, as stored: all set, or none (no claim).
    pub(super) fn from_columns(key: Option<String>, worker: Option<String>, until: Option<i64>) -> Option<HeldClaim> {
        match (key, worker, until) {
            (Some(key), Some(worker), Some(until)) => Some(HeldClaim { key, worker, until }),
            _ => None,
        }
    }
}

/// A claim to take on a delivery: by [`JobStore::record_delivery`] on the delivery it stores (the
/// replica that received it handles it, unless it dies), or by [`JobStore::claim_delivery`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryClaim {
    /// The delivery's serialisation key: one key's deliveries are handled in order.
    pub key: String,
    pub worker: String,
    pub lease_for: Duration,
}

/// The answer to [`JobStore::record_delivery`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// Stored durably; the dispatcher will process it.
    New,
    /// A redelivery of an id already stored; nothing changed.
    Duplicate,
}

/// The answer to [`JobStore::process_delivery`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dispatch {
    /// The delivery is now processed and these jobs exist (possibly none).
    Created(Vec<JobId>),
    /// It had been processed before; no job was added.
    AlreadyProcessed,
}

/// The answer to [`JobStore::heartbeat`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heartbeat {
    /// The lease is renewed.
    Ok,
    /// The lease is renewed, and someone asked the job to stop.
    CancelRequested(StopRequest),
    /// The lease is no longer this attempt's (it expired and the job was recovered, requeued or
    /// finished elsewhere): stop, and write nothing.
    LeaseLost,
}

/// The answer to [`JobStore::finish`] and [`JobStore::requeue`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    Done,
    /// Only from [`JobStore::requeue`]: a stop had been asked, so the job was cancelled instead.
    Cancelled,
    /// Refused: the lease is no longer this attempt's.
    LeaseLost,
}

/// How a job ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Finish {
    Succeeded(Value),
    /// A plain-words reason.
    Failed(String),
    /// A plain-words reason, e.g. "stopped by @alice" (a [`StopRequest`]'s words).
    Cancelled(String),
}

impl Finish {
    pub fn state(&self) -> JobState {
        match self {
            Finish::Succeeded(_) => JobState::Succeeded,
            Finish::Failed(_) => JobState::Failed,
            Finish::Cancelled(_) => JobState::Cancelled,
        }
    }
}

/// Who asked a job to stop. Its words (`Display`) are the cancelled job's error.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StopRequest {
    /// `@agent stop`, by this GitHub login.
    ByUser { login: String },
    /// A newer commit came (its sha): an automatic review of the older one is no longer wanted.
    Superseded { head: String },
}

impl fmt::Display for StopRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopRequest::ByUser { login } => write!(f, "stopped by @{login}"),
            StopRequest::Superseded { head } => {
                write!(f, "superseded by a newer push ({})", head.get(..7).unwrap_or(head))
            }
        }
    }
}

/// The answer to [`JobStore::cancel`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cancellation {
    /// Queued jobs, now cancelled.
    pub cancelled: Vec<JobId>,
    /// Running jobs, asked to stop; their workers see it at the next heartbeat.
    pub stopping: Vec<JobId>,
}

impl Cancellation {
    pub fn is_empty(&self) -> bool {
        self.cancelled.is_empty() && self.stopping.is_empty()
    }
}

/// The answer to [`JobStore::recover`]: running jobs whose lease had expired.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovery {
    /// Queued again, to be retried.
    pub requeued: Vec<JobId>,
    /// Out of attempts: failed, with the reason in `error`.
    pub failed: Vec<JobId>,
    /// A stop had been asked before the worker vanished: cancelled rather than retried.
    pub cancelled: Vec<JobId>,
}

impl Recovery {
    pub fn is_empty(&self) -> bool {
        self.requeued.is_empty() && self.failed.is_empty() && self.cancelled.is_empty()
    }
}

/// Which jobs [`JobStore::jobs`] lists: all conditions given must hold; newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobFilter {
    pub state: Option<JobState>,
    pub key: Option<String>,
    pub repo: Option<String>,
    pub limit: u32,
}

impl Default for JobFilter {
    fn default() -> Self {
        JobFilter {
            state: None,
            key: None,
            repo: None,
            limit: 100,
        }
    }
}

/// What [`JobStore::prune`] forgets, as ages in milliseconds before its `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Finished jobs (with their events) and processed deliveries without a job left are deleted
    /// this long after they finished or were processed.
    pub rows: Duration,
    /// A processed delivery's payload is emptied this long after processing, once none of its jobs
    /// is queued or running: the jobs carry their own requests, so only a person looking into a
    /// delivery ever reads it again.
    pub payloads: Duration,
}

/// The answer to [`JobStore::prune`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    pub jobs: u64,
    pub deliveries: u64,
    /// Payloads emptied (of deliveries kept).
    pub payloads: u64,
    /// Database pages given back to the file system.
    pub pages_freed: u64,
}

/// What one process sharing a store tells the others (PostgreSQL: `NOTIFY`; SQLite: the process
/// itself). A hint to look now, never the only way to learn something: every listener also polls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signal {
    /// A delivery was stored: the dispatchers look.
    Deliveries,
    /// A job may be claimable now (queued, or its key was freed): the pools look.
    Jobs,
    /// Someone asked this running job to stop: its worker looks at once.
    Stop(JobId),
    /// Something happened to this commit's CI (`owner/name`, sha): jobs waiting on it look.
    Commit { repo: String, sha: String },
    /// Something happened to this key's pull request or issue: jobs waiting on it look.
    Key(String),
    /// Signals may have been missed (a listener reconnected or fell behind): look at everything.
    Resync,
}

impl Signal {
    /// The signal as a `NOTIFY` payload (at most a few hundred bytes: keys and shas are short).
    pub fn encode(&self) -> String {
        match self {
            Signal::Deliveries => "d".to_owned(),
            Signal::Jobs => "j".to_owned(),
            Signal::Stop(job) => format!("s:{job}"),
            Signal::Commit { repo, sha } => format!("c:{repo}@{sha}"),
            Signal::Key(key) => format!("k:{key}"),
            Signal::Resync => "r".to_owned(),
        }
    }

    /// A payload back into its signal; anything unknown (a newer pitcrew's) is a [`Signal::Resync`].
    pub fn decode(payload: &str) -> Signal {
        match payload.split_once(':') {
            None if payload == "d" => Signal::Deliveries,
            None if payload == "j" => Signal::Jobs,
            Some(("s", id)) => id.parse().map_or(Signal::Resync, |id| Signal::Stop(JobId(id))),
            Some(("c", commit)) => match commit.rsplit_once('@') {
                Some((repo, sha)) => Signal::Commit {
                    repo: repo.to_owned(),
                    sha: sha.to_owned(),
                },
                None => Signal::Resync,
            },
            Some(("k", key)) => Signal::Key(key.to_owned()),
            _ => Signal::Resync,
        }
    }
}

/// The right to run a singleton (the chore scheduler) among the processes sharing a store, held
/// until dropped or lost. PostgreSQL: a session advisory lock on a connection of its own, lost with
/// that connection; SQLite: one process, always the leader.
pub struct Leadership {
    lost: tokio_util::sync::CancellationToken,
    /// Aborted on drop: the task that holds the lock (and its connection).
    holder: Option<tokio::task::JoinHandle<()>>,
}

impl fmt::Debug for Leadership {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Leadership")
            .field("lost", &self.lost.is_cancelled())
            .finish()
    }
}

impl Leadership {
    /// A leadership nobody else can hold (one process owns the store).
    pub fn sole() -> Leadership {
        Leadership {
            lost: tokio_util::sync::CancellationToken::new(),
            holder: None,
        }
    }

    /// One held by `holder`, which cancels `lost` when it can no longer vouch for it.
    pub(crate) fn held(lost: tokio_util::sync::CancellationToken, holder: tokio::task::JoinHandle<()>) -> Leadership {
        Leadership {
            lost,
            holder: Some(holder),
        }
    }

    /// Resolves when the leadership is lost (another process may lead from then on).
    pub async fn lost(&self) {
        self.lost.cancelled().await;
    }

    pub fn is_lost(&self) -> bool {
        self.lost.is_cancelled()
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        self.lost.cancel();
        if let Some(holder) = self.holder.take() {
            holder.abort();
        }
    }
}

/// The answer to [`JobStore::fire_schedule`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fired {
    /// The mark moved to the new time, with the job queued if one was given.
    Done(Option<JobId>),
    /// The mark was no longer the one read: another process fired the schedule meanwhile; nothing
    /// was written.
    Raced,
}

/// Why a store call failed. Messages name the database but never hold payloads or request data.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database could not be created, opened or migrated (unwritable directory, corrupt file…).
    #[error("cannot open the job database {path}: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The database was written by a newer pitcrew; an older one must not guess at its schema.
    #[error(
        "the job database {path} has schema version {found}, newer than this pitcrew knows ({supported}); \
         upgrade pitcrew or point it at another data directory"
    )]
    NewerSchema { path: PathBuf, found: i64, supported: i64 },
    /// A query failed (disk full, I/O error, a database locked for longer than the busy timeout…).
    #[error("job database {path}: {source}")]
    Database {
        path: PathBuf,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("there is no job {0}")]
    UnknownJob(JobId),
    #[error("there is no delivery {0}")]
    UnknownDelivery(DeliveryId),
    /// The blocking task running the query died (a panic) or the runtime is shutting down.
    #[error("the job database task failed: {0}")]
    Task(String),
    /// A record could not be written as JSON (a bug in its type, never in its content).
    #[error("a job event could not be encoded: {0}")]
    Encode(#[source] serde_json::Error),
}

/// The durable state of the bot: webhook deliveries, jobs with their leases, job events.
///
/// Implementations must make every method atomic: a crash between two statements of one method
/// leaves the state as before the call or as after it, never in between.
pub trait JobStore: Send + Sync + 'static {
    /// Stores a delivery durably (it is on disk when the future resolves), or recognises a
    /// redelivery of the same id. With `claim`, the new delivery is stored claimed (as
    /// [`JobStore::claim_delivery`] would, without its checks: nobody else has seen it yet), and the
    /// other processes sharing the store are not signalled: the receiver handles it, and should it
    /// die, its claim runs out and the others find the delivery when they next look.
    fn record_delivery(
        &self,
        id: &DeliveryId,
        event: &str,
        payload: Bytes,
        claim: Option<DeliveryClaim>,
        now: i64,
    ) -> StoreFuture<Recorded>;

    fn delivery(&self, id: &DeliveryId) -> StoreFuture<Option<Delivery>>;

    /// Deliveries not processed yet, oldest first, without their payloads, with who holds them:
    /// what was accepted but not yet turned into jobs.
    fn unprocessed_deliveries(&self, limit: u32) -> StoreFuture<Vec<Pending>>;

    /// The unprocessed deliveries `worker` may handle at `now`, oldest first, without their
    /// payloads: the dispatcher's work. Those other live workers hold are left out (a replica whose
    /// backlog is deep does not hide the others' work from them), and each says whether it waits
    /// behind an older delivery of its key that another live worker holds.
    fn available_deliveries(&self, worker: &str, now: i64, limit: u32) -> StoreFuture<Vec<Available>>;

    /// Takes `id` for handling by `claim.worker` until `now + claim.lease_for` (again, when it
    /// already holds it): `false` when the delivery is processed, held by another live worker, or
    /// when an older unprocessed delivery of the same `claim.key` (its pull request or issue) is
    /// held by another live worker — deliveries of one key are handled in order even across
    /// processes.
    fn claim_delivery(&self, id: &DeliveryId, claim: &DeliveryClaim, now: i64) -> StoreFuture<bool>;

    /// Gives up the claims `worker` holds on unprocessed deliveries (it is stopping): the other
    /// processes sharing the store may take them at once, and are signalled when there were any.
    /// Returns how many were released.
    fn release_deliveries(&self, worker: &str) -> StoreFuture<u64>;

    /// Marks the delivery processed and creates its jobs in one transaction, so a crash can neither
    /// lose them nor create them twice. A delivery processed before is left alone.
    fn process_delivery(&self, id: &DeliveryId, jobs: Vec<NewJob>, now: i64) -> StoreFuture<Dispatch>;

    fn count_deliveries(&self) -> StoreFuture<u64>;

    /// Creates a queued job that no delivery caused (a schedule, the CLI).
    fn enqueue(&self, job: NewJob, now: i64) -> StoreFuture<JobId>;

    /// Takes the oldest queued job whose key has no running job: running, one more attempt, leased
    /// to `worker` until `now + lease_for`. Two claimers never get the same job.
    fn claim(&self, worker: &str, lease_for: Duration, now: i64) -> StoreFuture<Option<Claim>>;

    /// Extends the lease until `now + lease_for`, and says whether a stop was asked.
    fn heartbeat(&self, lease: &Lease, lease_for: Duration, now: i64) -> StoreFuture<Heartbeat>;

    /// Ends the job; refused when the lease is no longer this attempt's.
    fn finish(&self, lease: &Lease, outcome: Finish, now: i64) -> StoreFuture<Release>;

    /// Puts the job back in the queue without counting the attempt (graceful shutdown). A job asked
    /// to stop is cancelled instead.
    fn requeue(&self, lease: &Lease, now: i64) -> StoreFuture<Release>;

    /// `@agent stop` for a key: its queued jobs are cancelled at once (the request's words are their
    /// error); a running one is asked to stop, and keeps the first request made.
    fn cancel(&self, key: &str, request: &StopRequest, now: i64) -> StoreFuture<Cancellation>;

    /// Like [`JobStore::cancel`], for the jobs of `key` of one `kind` only (a newer push supersedes
    /// a review, never a fix of the same pull request).
    fn supersede(&self, key: &str, kind: &str, request: &StopRequest, now: i64) -> StoreFuture<Cancellation>;

    /// Running jobs whose lease expired before `now` (their worker crashed or hung): queued again
    /// while attempts remain, else failed with a plain reason; cancelled if a stop had been asked.
    fn recover(&self, now: i64) -> StoreFuture<Recovery>;

    /// [`JobStore::recover`] for every running job, expired or not, and every delivery's claim
    /// released: for a caller that knows no worker of it is alive (a server that holds the data
    /// directory's lock, at start-up).
    fn recover_all(&self, now: i64) -> StoreFuture<Recovery>;

    /// Appends to a job's history (a [`crate::jobs::Record`]'s columns); returns the event's `seq`.
    fn append_event(&self, id: JobId, kind: &str, data: Value, now: i64) -> StoreFuture<u64>;

    /// A job's history, in order.
    fn events(&self, id: JobId) -> StoreFuture<Vec<JobEvent>>;

    fn job(&self, id: JobId) -> StoreFuture<Option<Job>>;

    fn jobs(&self, filter: &JobFilter) -> StoreFuture<Vec<Job>>;

    /// When the schedule `name` (`owner/repo:deps`) last fired, or was first seen; `None` when never.
    fn schedule_mark(&self, name: &str) -> StoreFuture<Option<i64>>;

    /// Records that schedule `name` fired (or was first seen) at `at`, and queues `job` in the same
    /// transaction: a crash neither loses the job nor lets the schedule fire it twice. Only when its
    /// mark is still `last` (what [`JobStore::schedule_mark`] read): two schedulers that read the
    /// same mark fire once.
    fn fire_schedule(&self, name: &str, last: Option<i64>, at: i64, job: Option<NewJob>) -> StoreFuture<Fired>;

    /// How many jobs are in each state; every state is present, zeros included (for /metrics).
    fn count_by_state(&self) -> StoreFuture<BTreeMap<JobState, u64>>;

    /// Forgets what `retention` says is old at `now`: never a queued or running job, never an
    /// unprocessed delivery nor one a job still refers to, never a schedule's mark. Works in short
    /// transactions, so the webhook route and the pool wait for none of it, and gives the space
    /// freed back to the file system.
    fn prune(&self, retention: Retention, now: i64) -> StoreFuture<Pruned>;

    /// The signals of every process sharing the store (this one's included) from now on.
    fn signals(&self) -> tokio::sync::broadcast::Receiver<Signal>;

    /// Sends `signal` to every process sharing the store, this one included.
    fn publish(&self, signal: Signal) -> StoreFuture<()>;

    /// The leadership of `role` if no other process holds it now; `None` when one does.
    fn lead(&self, role: &str) -> StoreFuture<Option<Leadership>>;

    /// Whether other processes may share the store (their leases are not this process's to take
    /// back at start-up: see [`JobStore::recover_all`]).
    fn shared(&self) -> bool;
}

pub(super) fn age_cutoff(now: i64, age: Duration) -> i64 {
    now.saturating_sub(i64::try_from(age.as_millis()).unwrap_or(i64::MAX))
}

pub(super) fn lease_end(now: i64, lease_for: Duration) -> i64 {
    now.saturating_add(i64::try_from(lease_for.as_millis()).unwrap_or(i64::MAX))
}

/// What `cancel_by` holds for a stop by a newer push: `superseded:` and its sha (a GitHub login
/// has no `:`, so the two never mix).
const SUPERSEDED_BY: &str = "superseded:";

/// The stop asked of a job, from its `cancel_by` column.
pub(super) fn stop_request(cancel_by: Option<String>) -> Option<StopRequest> {
    cancel_by.map(|by| match by.strip_prefix(SUPERSEDED_BY) {
        Some(head) => StopRequest::Superseded { head: head.to_owned() },
        None => StopRequest::ByUser { login: by },
    })
}

/// The columns a stop request is kept in: its words and who (or what) asked.
pub(super) fn stop_columns(request: &StopRequest) -> (String, String) {
    match request {
        StopRequest::ByUser { login } => (request.to_string(), login.clone()),
        StopRequest::Superseded { head } => (request.to_string(), format!("{SUPERSEDED_BY}{head}")),
    }
}

/// Why a job that ran out of attempts failed, in words a user can act on.
pub(super) fn interrupted_error(attempts: u32) -> String {
    let times = match attempts {
        1 => "once".to_owned(),
        2 => "twice".to_owned(),
        n => format!("{n} times"),
    };
    format!("interrupted {times} (the worker stopped or crashed mid-job); not retrying")
}
