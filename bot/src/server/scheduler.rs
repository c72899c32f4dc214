//! The chore scheduler of `pitcrew serve`: once a minute it reads the `[chores.deps] schedule` of
//! every repository the App is installed on and queues a dependency chore for each schedule that
//! came due. When a schedule fired is kept in the job store, with the job it queued in the same
//! transaction, so a restart neither skips nor repeats a firing; a schedule seen for the first
//! time starts counting from then (no catch-up of past times). One chore per repository runs at a
//! time: a schedule that comes due while its last chore is still queued or running is marked and
//! skipped.

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::chores::schedule::{Schedule, time_zone};
use crate::config::repo::{REPO_CONFIG_PATH, RepoConfig};
use crate::github::{AppAuth, GithubClient, InstallationId, RepoName, Repository};
use crate::jobs::{JobFilter, JobId, JobState, JobStore, NewJob, WorkerPool};
use crate::triggers::{Chore, JobKind, JobRequest, JobSource, ReplyTarget, RepoRef, Requester, chore_key};

/// How often schedules are read.
const INTERVAL: Duration = Duration::from_secs(60);

/// Who a scheduled job is "requested by" in reports and co-author lines.
pub const SCHEDULE_LOGIN: &str = "pitcrew-schedule";

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
    /// Reads the schedules every minute until stopped; new jobs wake `pool`.
    pub fn start(app: Arc<AppAuth>, store: Arc<dyn JobStore>, pool: Arc<WorkerPool>, job_attempts: u32) -> Scheduler {
        let stop = CancellationToken::new();
        let token = stop.clone();
        let task = tokio::spawn(async move {
            loop {
                let tick = run_once(&app, store.as_ref(), Timestamp::now(), job_attempts).await;
                if !tick.queued.is_empty() {
                    tracing::info!(queued = ?tick.queued, "scheduled chores queued");
                    pool.wake();
                }
                for (repo, problem) in &tick.problems {
                    tracing::warn!(repo, problem, "a chore schedule could not be used");
                }
                tokio::select! {
                    () = token.cancelled() => return,
                    () = tokio::time::sleep(INTERVAL) => {}
                }
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

/// One pass over every installation's repositories at `now` (the clock is the caller's: tests
/// move it).
pub async fn run_once(app: &Arc<AppAuth>, store: &dyn JobStore, now: Timestamp, job_attempts: u32) -> Tick {
    let mut tick = Tick::default();
    let installations = match app.installations().await {
        Ok(installations) => installations,
        Err(error) => {
            tick.problems
                .push(("*".into(), format!("listing the App's installations: {error}")));
            return tick;
        }
    };
    for installation in installations {
        let client = app.client(installation.id);
        let repos = match client.installation_repositories().await {
            Ok(repos) => repos,
            Err(error) => {
                tick.problems.push((
                    format!("installation {}", installation.id.0),
                    format!("listing its repositories: {error}"),
                ));
                continue;
            }
        };
        for repo in repos {
            if let Err(problem) = consider(&client, store, installation.id, &repo, now, job_attempts, &mut tick).await {
                tick.problems.push((repo.full_name.clone(), problem));
            }
        }
    }
    tick
}

/// Queues the repository's chore if its schedule is due.
async fn consider(
    client: &GithubClient,
    store: &dyn JobStore,
    installation: InstallationId,
    repo: &Repository,
    now: Timestamp,
    job_attempts: u32,
    tick: &mut Tick,
) -> Result<(), String> {
    let (owner, name) = repo
        .full_name
        .split_once('/')
        .ok_or_else(|| format!("`{}` is not owner/name", repo.full_name))?;
    let repo_name = RepoName::new(owner, name).map_err(|e| e.to_string())?;
    let text = client
        .get_file(&repo_name, REPO_CONFIG_PATH, &repo.default_branch)
        .await
        .map_err(|e| format!("reading {REPO_CONFIG_PATH}: {e}"))?;
    let Some(text) = text else {
        return Ok(());
    };
    // A file with problems elsewhere still schedules: its schedule line is valid on its own.
    let config = RepoConfig::parse_lenient(&text).0;
    let Some(schedule) = config.deps.schedule.clone() else {
        return Ok(());
    };
    let tz = time_zone(config.deps.timezone.as_deref().unwrap_or("UTC"))?;
    let repo_ref = RepoRef {
        owner: owner.to_owned(),
        name: name.to_owned(),
        clone_url: repo.clone_url.clone(),
        default_branch: repo.default_branch.clone(),
        private: repo.private,
    };
    let key = chore_key(&repo_ref, Chore::Deps);
    let mark_name = key.clone();
    let now_ms = now.as_millisecond();
    let Some(last) = store.schedule_mark(&mark_name).await.map_err(|e| e.to_string())? else {
        store
            .fire_schedule(&mark_name, now_ms, None)
            .await
            .map_err(|e| e.to_string())?;
        tick.first_seen.push(repo.full_name.clone());
        return Ok(());
    };
    if !is_due(&schedule, last, now, &tz) {
        return Ok(());
    }
    if busy(store, &key).await? {
        store
            .fire_schedule(&mark_name, now_ms, None)
            .await
            .map_err(|e| e.to_string())?;
        tick.skipped.push(repo.full_name.clone());
        return Ok(());
    }
    let request = JobRequest {
        kind: JobKind::Chore(Chore::Deps),
        repo: repo_ref,
        installation_id: Some(installation.0),
        number: 0,
        is_pull_request: false,
        requested_by: Requester {
            login: SCHEDULE_LOGIN.into(),
            id: None,
            association: None,
        },
        reply_to: ReplyTarget::Issue {
            number: 0,
            comment_id: None,
        },
        source: JobSource::Schedule {
            schedule: schedule.to_string(),
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
        request: serde_json::to_value(&request).map_err(|e| e.to_string())?,
        delivery: None,
        max_attempts: job_attempts.max(1),
    };
    let id = store
        .fire_schedule(&mark_name, now_ms, Some(job))
        .await
        .map_err(|e| e.to_string())?;
    if let Some(id) = id {
        tick.queued.push((repo.full_name.clone(), id));
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

/// A chore of this repository is queued or running.
async fn busy(store: &dyn JobStore, key: &str) -> Result<bool, String> {
    for state in [JobState::Queued, JobState::Running] {
        let filter = JobFilter {
            state: Some(state),
            key: Some(key.to_owned()),
            limit: 1,
            ..JobFilter::default()
        };
        if !store.jobs(&filter).await.map_err(|e| e.to_string())?.is_empty() {
            return Ok(true);
        }
    }
    Ok(false)
}
