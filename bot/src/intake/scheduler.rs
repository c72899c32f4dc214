//! The chore scheduler of `pitcrew serve`: once a minute it reads the `[chores.deps] schedule` of
//! every repository the App is installed on, and the schedules of its `[[chores.deps.rules]]`
//! groups, and queues a dependency chore for each schedule that came due (a group's: a chore of
//! that group only). When a schedule fired is kept in the job store, with the job it queued in the same
//! transaction, so a restart neither skips nor repeats a firing; a schedule seen for the first
//! time starts counting from then (no catch-up of past times). One chore per repository runs at a
//! time: a schedule that comes due while its last chore is still queued or running is marked and
//! skipped (a group's schedule counts only its own group's chores). Repository lists and schedules are read again every [`REFRESH`], not every minute.
//! Of replicas sharing a store, one runs the schedules at a time (`JobStore::lead`), and every
//! firing is on condition that the schedule's mark is the one read, so a leadership changing hands
//! fires nothing twice.

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::repo::{REPO_CONFIG_PATH, RepoConfig};
use crate::config::schedule::{Schedule, ScheduleError, time_zone};
use crate::github::{
    AppAuth, GithubClient, GithubError, InstallationId, Login, LoginError, RepoName, RepoNameError, Repository,
};
use crate::jobs::{Fired, JobFilter, JobId, JobState, JobStore, NewJob, StoreError, WorkerPool};
use crate::triggers::{Chore, JobKind, JobRequest, JobSource, ReplyTarget, RepoRef, Requester, Subject, chore_key};

/// How often due schedules are checked.
const INTERVAL: Duration = Duration::from_secs(60);
/// How long the installations' repository lists and each repository's schedule are reused before
/// they are read again: a minute's check must not cost a call per repository (an installation
/// has 5,000 calls an hour).
pub const REFRESH: Duration = Duration::from_secs(10 * 60);

/// How often a replica that does not lead the schedules asks again (the leader may have died).
pub const LEAD_RETRY: Duration = Duration::from_secs(15);

/// The leadership the scheduler holds among replicas.
const LEADER_ROLE: &str = "chore-scheduler";

/// Who a scheduled job is "requested by" in reports and co-author lines.
pub const SCHEDULE_LOGIN: &str = "pitcrew-schedule";

/// Why a repository's schedule could not be read or used.
#[derive(Debug, thiserror::Error)]
enum ScheduleProblem {
    #[error(transparent)]
    RepoName(#[from] RepoNameError),
    #[error(transparent)]
    Login(#[from] LoginError),
    #[error("reading {REPO_CONFIG_PATH}: {0}")]
    ReadConfig(#[source] GithubError),
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Request(#[from] serde_json::Error),
}

/// A repository's schedules as last read.
#[derive(Debug, Clone)]
struct Known {
    installation: InstallationId,
    repo: Repository,
    /// Empty: no schedule (no file, no `[chores.deps] schedule`, no group with one).
    schedules: Vec<Firing>,
    tz: jiff::tz::TimeZone,
}

/// One schedule of a repository: the whole chore's, or a rule group's.
#[derive(Debug, Clone)]
struct Firing {
    /// `None`: the repository's `[chores.deps] schedule`; else the `[[chores.deps.rules]]` group
    /// whose pull request this schedule makes.
    group: Option<String>,
    schedule: Schedule,
}

/// What the scheduler read, reused for [`REFRESH`].
#[derive(Debug, Default)]
pub struct Cache {
    read_at: Option<Timestamp>,
    known: Vec<Known>,
}

impl Cache {
    fn fresh(&self, now: Timestamp) -> bool {
        self.read_at
            .is_some_and(|at| now.duration_since(at).unsigned_abs() < REFRESH && now >= at)
    }
}

/// What one pass did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tick {
    /// The chores queued, by repository.
    pub queued: Vec<(String, JobId)>,
    /// Schedules seen for the first time (they count from now).
    pub first_seen: Vec<String>,
    /// Schedules due while their repository's chore still runs.
    pub skipped: Vec<String>,
    /// Repositories whose schedule could not be read or used, and why.
    pub problems: Vec<(String, String)>,
}

/// The running scheduler task.
pub struct Scheduler {
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl Scheduler {
    /// Reads the schedules every minute until stopped, while this process leads the schedules
    /// among the replicas sharing the store (one at a time; another takes over within
    /// [`LEAD_RETRY`] when the leader stops or dies); new jobs wake `pool`.
    pub fn start(app: Arc<AppAuth>, store: Arc<dyn JobStore>, pool: Arc<WorkerPool>, job_attempts: u32) -> Scheduler {
        Scheduler::start_every(app, store, pool, job_attempts, INTERVAL)
    }

    /// [`Scheduler::start`], looking every `interval` (tests look more often than every minute).
    pub fn start_every(
        app: Arc<AppAuth>,
        store: Arc<dyn JobStore>,
        pool: Arc<WorkerPool>,
        job_attempts: u32,
        interval: Duration,
    ) -> Scheduler {
        let stop = CancellationToken::new();
        let token = stop.clone();
        let task = tokio::spawn(async move {
            let mut cache = Cache::default();
            loop {
                let leadership = match store.lead(LEADER_ROLE).await {
                    Ok(Some(leadership)) => leadership,
                    Ok(None) => {
                        tokio::select! {
                            () = token.cancelled() => return,
                            () = tokio::time::sleep(LEAD_RETRY.min(interval)) => continue,
                        }
                    }
                    Err(error) => {
                        tracing::warn!(error = %error, "could not ask for the chore schedules' leadership");
                        tokio::select! {
                            () = token.cancelled() => return,
                            () = tokio::time::sleep(LEAD_RETRY) => continue,
                        }
                    }
                };
                if store.shared() {
                    tracing::info!("this replica runs the chore schedules");
                }
                while !leadership.is_lost() {
                    let tick = run_once(&app, store.as_ref(), &mut cache, Timestamp::now(), job_attempts).await;
                    if !tick.queued.is_empty() {
                        tracing::info!(queued = ?tick.queued, "scheduled chores queued");
                        pool.wake();
                    }
                    for (repo, problem) in &tick.problems {
                        tracing::warn!(repo, problem, "a chore schedule could not be used");
                    }
                    tokio::select! {
                        () = token.cancelled() => return,
                        () = leadership.lost() => {}
                        () = tokio::time::sleep(interval) => {}
                    }
                }
                tracing::warn!("lost the chore schedules' leadership; another replica may take it");
            }
        });
        Scheduler { stop, task: Some(task) }
    }

    pub async fn stop(mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// One pass at `now` (the clock is the caller's: tests move it): the installations' repositories
/// and their schedules, from `cache` while it is fresh, and every schedule that came due.
pub async fn run_once(
    app: &Arc<AppAuth>,
    store: &dyn JobStore,
    cache: &mut Cache,
    now: Timestamp,
    job_attempts: u32,
) -> Tick {
    let mut tick = Tick::default();
    if !cache.fresh(now) {
        match read_schedules(app, &mut tick).await {
            Some(known) => {
                cache.known = known;
                cache.read_at = Some(now);
            }
            // Keep what was known: an API hiccup must not stop the schedules.
            None if cache.read_at.is_some() => {}
            None => return tick,
        }
    }
    for known in &cache.known {
        if let Err(problem) = consider(store, known, now, job_attempts, &mut tick).await {
            tick.problems.push((known.repo.full_name.clone(), problem.to_string()));
        }
    }
    tick
}

/// Every repository of every installation, with its schedule; `None` when the installations
/// could not be listed.
async fn read_schedules(app: &Arc<AppAuth>, tick: &mut Tick) -> Option<Vec<Known>> {
    let installations = match app.installations().await {
        Ok(installations) => installations,
        Err(error) => {
            tick.problems
                .push(("*".into(), format!("listing the App's installations: {error}")));
            return None;
        }
    };
    let mut known = Vec::new();
    for installation in installations {
        let client = GithubClient::for_installation(app, installation.id);
        let repos = match client.installation_repositories().await {
            Ok(listing) => {
                if listing.truncated {
                    tracing::warn!(
                        installation = installation.id.0,
                        read = listing.items.len(),
                        "the installation has more repositories than pitcrew reads; the rest are not scheduled"
                    );
                    tick.problems.push((
                        format!("installation {}", installation.id.0),
                        format!(
                            "pitcrew reads at most {} of its repositories and it has more: the rest are not scheduled",
                            crate::github::paging::limits::INSTALLATION_REPOSITORIES.max_items()
                        ),
                    ));
                }
                listing.items
            }
            Err(error) => {
                tick.problems.push((
                    format!("installation {}", installation.id.0),
                    format!("listing its repositories: {error}"),
                ));
                continue;
            }
        };
        for repo in repos {
            match schedules_of(&client, &repo).await {
                Ok((schedules, tz)) => known.push(Known {
                    installation: installation.id,
                    repo,
                    schedules,
                    tz,
                }),
                Err(problem) => tick.problems.push((repo.full_name.clone(), problem.to_string())),
            }
        }
    }
    Some(known)
}

/// The repository's schedules — `[chores.deps] schedule` and its rule groups' — and their time
/// zone.
async fn schedules_of(
    client: &GithubClient,
    repo: &Repository,
) -> Result<(Vec<Firing>, jiff::tz::TimeZone), ScheduleProblem> {
    let repo_name: RepoName = repo.full_name.parse()?;
    let text = client
        .get_file(&repo_name, REPO_CONFIG_PATH, &repo.default_branch)
        .await
        .map_err(ScheduleProblem::ReadConfig)?;
    let Some(text) = text else {
        return Ok((Vec::new(), jiff::tz::TimeZone::UTC));
    };
    // A file with problems elsewhere still schedules: its schedule lines are valid on their own.
    let config = RepoConfig::parse_lenient(&text).0;
    let mut schedules: Vec<Firing> = config
        .deps
        .schedule
        .iter()
        .map(|schedule| Firing {
            group: None,
            schedule: schedule.clone(),
        })
        .collect();
    schedules.extend(
        config
            .deps
            .policy()
            .group_schedules()
            .into_iter()
            .map(|(group, schedule)| Firing {
                group: Some(group),
                schedule,
            }),
    );
    if schedules.is_empty() {
        return Ok((schedules, jiff::tz::TimeZone::UTC));
    }
    let tz = time_zone(config.deps.timezone.as_deref().unwrap_or("UTC"))?;
    Ok((schedules, tz))
}

/// Queues the repository's chores whose schedules are due.
async fn consider(
    store: &dyn JobStore,
    known: &Known,
    now: Timestamp,
    job_attempts: u32,
    tick: &mut Tick,
) -> Result<(), ScheduleProblem> {
    for firing in &known.schedules {
        consider_one(store, known, firing, now, job_attempts, tick).await?;
    }
    Ok(())
}

/// Queues the chore of one schedule if it is due: the whole chore, or one rule group's.
async fn consider_one(
    store: &dyn JobStore,
    known: &Known,
    firing: &Firing,
    now: Timestamp,
    job_attempts: u32,
    tick: &mut Tick,
) -> Result<(), ScheduleProblem> {
    let repo = &known.repo;
    let repo_ref = RepoRef {
        name: repo.full_name.parse()?,
        clone_url: repo.clone_url.clone(),
        default_branch: repo.default_branch.clone(),
        private: repo.private,
    };
    let key = chore_key(&repo_ref, Chore::Deps);
    // The whole chore's mark keeps its historical name (the chore's key); a group's is its own.
    let (mark_name, label) = match &firing.group {
        None => (key.clone(), repo.full_name.clone()),
        Some(group) => (format!("{key}/{group}"), format!("{} (group {group})", repo.full_name)),
    };
    let now_ms = now.as_millisecond();
    // Every write below is on condition that the mark is still the one read here: a scheduler of
    // another replica that read it too (a leadership changing hands) fires the schedule once between
    // them.
    let Some(last) = store.schedule_mark(&mark_name).await? else {
        if store.fire_schedule(&mark_name, None, now_ms, None).await? != Fired::Raced {
            tick.first_seen.push(label);
        }
        return Ok(());
    };
    if !is_due(&firing.schedule, last, now, &known.tz) {
        return Ok(());
    }
    if busy(store, &key, firing.group.as_deref()).await? {
        if store.fire_schedule(&mark_name, Some(last), now_ms, None).await? != Fired::Raced {
            tick.skipped.push(label);
        }
        return Ok(());
    }
    let request = JobRequest {
        kind: JobKind::Chore(Chore::Deps),
        repo: repo_ref,
        installation_id: Some(known.installation),
        subject: Subject::Repository,
        requested_by: Requester {
            login: Login::parse(SCHEDULE_LOGIN)?,
            id: None,
            association: None,
        },
        reply_to: ReplyTarget::Nowhere,
        source: JobSource::Schedule {
            schedule: firing.schedule.to_string(),
            group: firing.group.clone(),
        },
        instructions: None,
        review_comment: None,
        head_sha: None,
        delivery_id: None,
    };
    let job = NewJob {
        kind: request.kind.as_str().to_owned(),
        repo: repo.full_name.clone(),
        key,
        request: serde_json::to_value(&request)?,
        delivery: None,
        max_attempts: job_attempts.max(1),
    };
    match store.fire_schedule(&mark_name, Some(last), now_ms, Some(job)).await? {
        Fired::Done(Some(id)) => tick.queued.push((label, id)),
        Fired::Done(None) => {}
        Fired::Raced => tracing::info!(schedule = mark_name, "another replica fired this schedule"),
    }
    Ok(())
}

/// Whether the schedule fired between `last` (when it last fired or was first seen) and `now`.
fn is_due(schedule: &Schedule, last_ms: i64, now: Timestamp, tz: &jiff::tz::TimeZone) -> bool {
    let Ok(last) = Timestamp::from_millisecond(last_ms) else {
        return true;
    };
    schedule.next_after(last, tz).is_some_and(|next| next <= now)
}

/// A dependency chore of this repository that does this schedule's work is queued or running: for
/// the whole chore, any chore run but a group's own; for a group, that group's. (Other jobs of the
/// key — a group's run when the whole chore is due, `@agent ignore` — are waited for, not skipped
/// for: the store runs one job of a key at a time.)
async fn busy(store: &dyn JobStore, key: &str, group: Option<&str>) -> Result<bool, StoreError> {
    for state in [JobState::Queued, JobState::Running] {
        let filter = JobFilter {
            state: Some(state),
            key: Some(key.to_owned()),
            limit: 100,
            ..JobFilter::default()
        };
        for job in store.jobs(&filter).await? {
            let Ok(request) = serde_json::from_value::<JobRequest>(job.request.clone()) else {
                // Not readable as a request: count it, as before schedules had groups.
                return Ok(true);
            };
            if request.kind != JobKind::Chore(Chore::Deps) {
                continue;
            }
            let its_group = match &request.source {
                JobSource::Schedule { group, .. } => group.as_deref(),
                _ => None,
            };
            if its_group == group {
                return Ok(true);
            }
        }
    }
    Ok(false)
}
