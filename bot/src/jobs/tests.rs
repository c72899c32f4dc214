//! Tests of the SQLite store and the worker pool, on real database files in temporary directories.
//! The store gets explicit times; the pool runs on the real clock, and tests synchronise on handler
//! starts and job ends (channels), never on sleeps. Timeouts only turn a hang into a failure.

#![expect(clippy::unwrap_used, reason = "tests")]

use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use serde_json::json;
use tokio::sync::{broadcast, mpsc, oneshot};

use super::*;

const LEASE: Duration = Duration::from_secs(60);
const LEASE_MS: i64 = 60_000;
const T0: i64 = 1_700_000_000_000;

/// Turns a hang into a failure; never part of what a test asserts.
async fn within<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), future).await.unwrap()
}

fn open(dir: &Path) -> SqliteStore {
    SqliteStore::open(dir).unwrap()
}

/// A database the store contract runs on: a SQLite file, or a throwaway PostgreSQL server.
enum Db {
    Sqlite(tempfile::TempDir),
    Postgres(pitcrew_tests::postgres::Postgres),
}

impl Db {
    fn sqlite() -> Db {
        Db::Sqlite(tempfile::tempdir().unwrap())
    }

    /// `None` (said on stderr) when PostgreSQL is not installed and not required.
    fn postgres() -> Option<Db> {
        pitcrew_tests::postgres::Postgres::start().map(Db::Postgres)
    }

    /// A store on the database; each call opens another one on the same data, as another process
    /// (or a reopening) would.
    async fn open(&self) -> Arc<dyn JobStore> {
        match self {
            Db::Sqlite(dir) => Arc::new(SqliteStore::open(dir.path()).unwrap()),
            Db::Postgres(server) => Arc::new(PgStore::connect(&server.url()).await.unwrap()),
        }
    }

    fn sqlite_file(&self) -> Option<std::path::PathBuf> {
        match self {
            Db::Sqlite(dir) => Some(dir.path().join(FILE_NAME)),
            Db::Postgres(_) => None,
        }
    }
}

/// Runs each named contract test (an `async fn name(db: Db)`) on SQLite and on PostgreSQL:
/// `jobs::tests::on_sqlite::name` and `jobs::tests::on_postgres::name`.
macro_rules! contract_tests {
    ($($name:ident),* $(,)?) => {
        mod on_sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Db::sqlite()).await;
                }
            )*
        }
        mod on_postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    if let Some(db) = super::Db::postgres() {
                        super::$name(db).await;
                    }
                }
            )*
        }
    };
}

contract_tests!(
    a_redelivery_is_recognised_also_after_reopening,
    processing_a_delivery_creates_its_jobs_exactly_once,
    claims_take_the_oldest_job_and_one_job_per_key_at_a_time,
    concurrent_claimers_never_get_the_same_job,
    expired_leases_are_retried_then_failed_visibly,
    recover_all_takes_back_running_jobs_whose_lease_has_not_run_out,
    cancel_stops_queued_jobs_at_once_and_asks_the_running_one,
    a_newer_push_supersedes_only_the_reviews_of_its_key,
    a_lost_lease_refuses_heartbeats_and_results,
    requeue_gives_the_attempt_back_unless_a_stop_was_asked,
    events_keep_their_order_beside_the_lifecycle,
    jobs_are_counted_by_state_and_listed_newest_first,
    the_pool_never_runs_more_jobs_than_its_concurrency,
    a_wake_starts_a_new_job_at_once_and_same_pr_jobs_run_in_turn,
    a_stop_reaches_the_running_handler_directly_and_through_the_heartbeat,
    a_panicking_handler_fails_its_job_and_the_pool_goes_on,
    a_lost_lease_stops_the_handler_and_its_result_is_not_written,
    shutdown_lets_quick_jobs_finish_and_requeues_the_rest,
    a_job_whose_process_vanished_is_recovered_after_a_restart_and_completes,
    a_schedule_remembers_when_it_fired_with_its_job_across_reopening,
    prune_forgets_old_finished_work_keeps_the_rest_and_gives_the_space_back,
    every_lifecycle_entry_is_written_in_the_shape_it_always_had,
    a_job_waiting_idle_gives_its_slot_to_another_and_a_shutdown_requeues_it_at_once,
    deliveries_are_claimed_by_one_worker_and_in_order_per_key,
    a_delivery_stored_claimed_is_its_receivers_until_the_claim_runs_out,
    signals_tell_of_deliveries_jobs_and_stops,
    a_fence_refuses_a_worker_whose_lease_went_to_another,
);

fn new_job(key: &str) -> NewJob {
    NewJob {
        kind: "fix".to_owned(),
        repo: key.split('#').next().unwrap().to_owned(),
        key: key.to_owned(),
        request: json!({ "instructions": "fix it", "key": key }),
        delivery: None,
        max_attempts: 3,
    }
}

fn delivery(id: &str) -> DeliveryId {
    DeliveryId(id.to_owned())
}

/// What the tests' handlers record.
#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", content = "data", rename_all = "snake_case")]
enum Note {
    Note { retried: bool },
    Working {},
}

impl Record for Note {}

/// `@agent stop` by `login`.
fn stop_by(login: &str) -> StopRequest {
    StopRequest::ByUser {
        login: login.to_owned(),
    }
}

async fn a_redelivery_is_recognised_also_after_reopening(db: Db) {
    let store = db.open().await;
    let payload = Bytes::from_static(br#"{"action":"created"}"#);
    let id = delivery("72d3162e-cc78-11e3-81ab-4c9367dc0958");
    assert_eq!(
        store
            .record_delivery(&id, "issue_comment", payload.clone(), None, T0)
            .await
            .unwrap(),
        Recorded::New
    );
    assert_eq!(
        store
            .record_delivery(&id, "issue_comment", payload.clone(), None, T0 + 5)
            .await
            .unwrap(),
        Recorded::Duplicate
    );
    drop(store);

    let store = db.open().await;
    assert_eq!(
        store
            .record_delivery(&id, "issue_comment", payload, None, T0 + 10)
            .await
            .unwrap(),
        Recorded::Duplicate
    );
    let stored = store.delivery(&id).await.unwrap().unwrap();
    assert_eq!(stored.event, "issue_comment");
    assert_eq!(stored.received_at, T0, "the first receipt is kept");
    assert_eq!(stored.payload, br#"{"action":"created"}"#);
    assert_eq!(stored.processed_at, None);
    assert_eq!(store.count_deliveries().await.unwrap(), 1);
    assert_eq!(store.delivery(&delivery("other")).await.unwrap(), None);
}

async fn processing_a_delivery_creates_its_jobs_exactly_once(db: Db) {
    let store = db.open().await;
    for (n, id) in ["d1", "d2", "d3"].into_iter().enumerate() {
        let at = T0 + i64::try_from(n).unwrap();
        store
            .record_delivery(&delivery(id), "issue_comment", Bytes::new(), None, at)
            .await
            .unwrap();
    }
    let pending: Vec<String> = store
        .unprocessed_deliveries(10)
        .await
        .unwrap()
        .into_iter()
        .map(|d| d.id.0)
        .collect();
    assert_eq!(pending, ["d1", "d2", "d3"], "oldest first");

    let jobs = vec![new_job("o/r#1"), new_job("o/r#2")];
    let Dispatch::Created(ids) = store
        .process_delivery(&delivery("d1"), jobs.clone(), T0 + 10)
        .await
        .unwrap()
    else {
        panic!("the first processing creates the jobs");
    };
    assert_eq!(ids.len(), 2);
    assert_eq!(
        store.process_delivery(&delivery("d1"), jobs, T0 + 11).await.unwrap(),
        Dispatch::AlreadyProcessed
    );
    assert_eq!(
        store.process_delivery(&delivery("d2"), vec![], T0 + 12).await.unwrap(),
        Dispatch::Created(vec![])
    );
    let job = store.job(ids[0]).await.unwrap().unwrap();
    assert_eq!(job.delivery, Some(delivery("d1")));
    assert_eq!(job.state, JobState::Queued);
    assert_eq!(job.request, json!({ "instructions": "fix it", "key": "o/r#1" }));
    assert_eq!(store.count_by_state().await.unwrap()[&JobState::Queued], 2);
    assert_eq!(
        store.delivery(&delivery("d1")).await.unwrap().unwrap().processed_at,
        Some(T0 + 10)
    );

    // A job that cannot be stored (it names a delivery that does not exist) rolls back the whole
    // processing: the delivery stays unprocessed and the first job is not created either.
    let broken = NewJob {
        delivery: Some(delivery("missing")),
        ..new_job("o/r#4")
    };
    let error = store
        .process_delivery(&delivery("d3"), vec![new_job("o/r#3"), broken], T0 + 13)
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::Database { .. }), "{error}");
    let pending: Vec<String> = store
        .unprocessed_deliveries(10)
        .await
        .unwrap()
        .into_iter()
        .map(|d| d.id.0)
        .collect();
    assert_eq!(pending, ["d3"]);
    assert_eq!(store.count_by_state().await.unwrap()[&JobState::Queued], 2);

    let error = store.process_delivery(&delivery("nope"), vec![], T0).await.unwrap_err();
    assert!(matches!(error, StoreError::UnknownDelivery(_)), "{error}");
}

async fn claims_take_the_oldest_job_and_one_job_per_key_at_a_time(db: Db) {
    let store = db.open().await;
    let first = store.enqueue(new_job("o/r#1"), T0).await.unwrap();
    let second_same_pr = store.enqueue(new_job("o/r#1"), T0 + 1).await.unwrap();
    let other_pr = store.enqueue(new_job("o/r#2"), T0 + 2).await.unwrap();

    let a = store.claim("w1", LEASE, T0 + 10).await.unwrap().unwrap();
    assert_eq!(a.job.id, first);
    assert_eq!(a.job.state, JobState::Running);
    assert_eq!(a.job.attempts, 1);
    assert_eq!(a.job.started_at, Some(T0 + 10));
    assert_eq!(a.job.lease_owner.as_deref(), Some("w1"));
    assert_eq!(a.job.lease_expires_at, Some(T0 + 10 + LEASE_MS));
    assert_eq!(
        a.lease,
        Lease {
            job: first,
            worker: "w1".to_owned(),
            attempt: 1
        }
    );

    // The newer request on the same pull request waits; the other pull request's job does not.
    let b = store.claim("w2", LEASE, T0 + 11).await.unwrap().unwrap();
    assert_eq!(b.job.id, other_pr);
    assert_eq!(store.claim("w2", LEASE, T0 + 12).await.unwrap(), None);

    let result = json!({ "commit": "abc123" });
    assert_eq!(
        store
            .finish(&a.lease, Finish::Succeeded(result.clone()), T0 + 20)
            .await
            .unwrap(),
        Release::Done
    );
    let c = store.claim("w2", LEASE, T0 + 21).await.unwrap().unwrap();
    assert_eq!(c.job.id, second_same_pr);

    let done = store.job(first).await.unwrap().unwrap();
    assert_eq!(done.state, JobState::Succeeded);
    assert_eq!(done.result, Some(result));
    assert_eq!(done.finished_at, Some(T0 + 20));
    assert_eq!(done.lease_owner, None);
}

async fn concurrent_claimers_never_get_the_same_job(db: Db) {
    // Two stores on one file: their writes contend across connections, as two processes would.
    let stores = [db.open().await, db.open().await];
    const JOBS: usize = 60;
    for n in 0..JOBS {
        stores[0].enqueue(new_job(&format!("o/r#{n}")), T0).await.unwrap();
    }
    let mut claimers = Vec::new();
    for worker in 0..8 {
        let store = stores[worker % 2].clone();
        claimers.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            while let Some(claim) = store.claim(&format!("w{worker}"), LEASE, T0 + 1).await.unwrap() {
                mine.push(claim.job.id);
            }
            mine
        }));
    }
    let mut all = Vec::new();
    for claimer in claimers {
        all.extend(within(claimer).await.unwrap());
    }
    let unique: HashSet<JobId> = all.iter().copied().collect();
    assert_eq!(all.len(), JOBS, "every job claimed once: {all:?}");
    assert_eq!(unique.len(), JOBS);
    assert_eq!(
        stores[1].count_by_state().await.unwrap()[&JobState::Running],
        JOBS as u64
    );
}

async fn expired_leases_are_retried_then_failed_visibly(db: Db) {
    let store = db.open().await;
    let id = store
        .enqueue(
            NewJob {
                max_attempts: 2,
                ..new_job("o/r#1")
            },
            T0,
        )
        .await
        .unwrap();

    let first = store.claim("w1", LEASE, T0).await.unwrap().unwrap();
    // A heartbeat moves the expiry: recovery just before it leaves the job alone.
    assert_eq!(
        store.heartbeat(&first.lease, LEASE, T0 + 1_000).await.unwrap(),
        Heartbeat::Ok
    );
    assert_eq!(store.recover(T0 + LEASE_MS).await.unwrap(), Recovery::default());
    let recovery = store.recover(T0 + 1_000 + LEASE_MS).await.unwrap();
    assert_eq!(recovery.requeued, [id]);
    let job = store.job(id).await.unwrap().unwrap();
    assert_eq!((job.state, job.attempts, job.lease_owner), (JobState::Queued, 1, None));

    let second = store.claim("w2", LEASE, T0 + 100_000).await.unwrap().unwrap();
    assert_eq!(second.lease.attempt, 2);
    let recovery = store.recover(T0 + 100_000 + LEASE_MS).await.unwrap();
    assert_eq!(recovery.failed, [id]);
    let job = store.job(id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Failed);
    assert_eq!(job.attempts, 2);
    assert_eq!(job.finished_at, Some(T0 + 100_000 + LEASE_MS));
    assert_eq!(
        job.error.as_deref(),
        Some("interrupted twice (the worker stopped or crashed mid-job); not retrying")
    );
    assert_eq!(store.claim("w3", LEASE, T0 + 200_000).await.unwrap(), None);
}

async fn recover_all_takes_back_running_jobs_whose_lease_has_not_run_out(db: Db) {
    let store = db.open().await;
    let id = store.enqueue(new_job("o/r#1"), T0).await.unwrap();
    store.claim("w1", LEASE, T0).await.unwrap().unwrap();
    // The lease is still good: plain recovery leaves the job to its worker.
    assert_eq!(store.recover(T0 + 1).await.unwrap(), Recovery::default());
    // A server that holds the data directory's lock knows that worker is gone.
    let recovery = store.recover_all(T0 + 1).await.unwrap();
    assert_eq!(recovery.requeued, [id]);
    let job = store.job(id).await.unwrap().unwrap();
    assert_eq!((job.state, job.lease_owner), (JobState::Queued, None));
    let events = store.events(id).await.unwrap();
    assert_eq!(events.last().unwrap().kind, "interrupted");
    assert_eq!(events.last().unwrap().at, T0 + 1);
}

async fn cancel_stops_queued_jobs_at_once_and_asks_the_running_one(db: Db) {
    let store = db.open().await;
    let running = store.enqueue(new_job("o/r#1"), T0).await.unwrap();
    let queued = store.enqueue(new_job("o/r#1"), T0 + 1).await.unwrap();
    let elsewhere = store.enqueue(new_job("o/r#2"), T0 + 2).await.unwrap();
    let claim = store.claim("w1", LEASE, T0 + 3).await.unwrap().unwrap();
    assert_eq!(claim.job.id, running);

    let cancellation = store.cancel("o/r#1", &stop_by("alice"), T0 + 4).await.unwrap();
    assert_eq!(
        cancellation,
        Cancellation {
            cancelled: vec![queued],
            stopping: vec![running]
        }
    );
    let job = store.job(queued).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Cancelled);
    assert_eq!(job.error.as_deref(), Some("stopped by @alice"));
    let job = store.job(running).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Running);
    assert_eq!(job.cancel_requested, Some(stop_by("alice")));
    assert_eq!(store.job(elsewhere).await.unwrap().unwrap().state, JobState::Queued);

    assert_eq!(
        store.heartbeat(&claim.lease, LEASE, T0 + 5).await.unwrap(),
        Heartbeat::CancelRequested(stop_by("alice"))
    );
    // Asking again changes nothing but still names the running job.
    let again = store.cancel("o/r#1", &stop_by("bob"), T0 + 6).await.unwrap();
    assert_eq!(again.stopping, [running]);
    assert!(again.cancelled.is_empty());
    let job = store.job(running).await.unwrap().unwrap();
    assert_eq!(job.cancel_requested, Some(stop_by("alice")));

    let reason = Finish::Cancelled("stopped by @alice".to_owned());
    assert_eq!(store.finish(&claim.lease, reason, T0 + 7).await.unwrap(), Release::Done);
    assert_eq!(store.job(running).await.unwrap().unwrap().state, JobState::Cancelled);
    assert!(
        store
            .cancel("o/r#1", &stop_by("carol"), T0 + 8)
            .await
            .unwrap()
            .is_empty()
    );
}

async fn a_newer_push_supersedes_only_the_reviews_of_its_key(db: Db) {
    let store = db.open().await;
    let review = |key: &str| NewJob {
        kind: "review".to_owned(),
        ..new_job(key)
    };
    let running = store.enqueue(review("o/r#1"), T0).await.unwrap();
    let fix = store.enqueue(new_job("o/r#1"), T0 + 1).await.unwrap();
    let queued = store.enqueue(review("o/r#1"), T0 + 2).await.unwrap();
    let elsewhere = store.enqueue(review("o/r#2"), T0 + 3).await.unwrap();
    let claim = store.claim("w1", LEASE, T0 + 4).await.unwrap().unwrap();
    assert_eq!(claim.job.id, running);

    let head = "f".repeat(40);
    let stop = StopRequest::Superseded { head: head.clone() };
    let superseded = store.supersede("o/r#1", "review", &stop, T0 + 5).await.unwrap();
    assert_eq!(
        superseded,
        Cancellation {
            cancelled: vec![queued],
            stopping: vec![running]
        }
    );
    let job = store.job(queued).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Cancelled);
    assert_eq!(job.error.as_deref(), Some("superseded by a newer push (fffffff)"));
    // The fix of the same pull request and another pull request's review go on.
    assert_eq!(store.job(fix).await.unwrap().unwrap().state, JobState::Queued);
    assert_eq!(store.job(elsewhere).await.unwrap().unwrap().state, JobState::Queued);
    // The running review's worker hears why, across a reopening of the store too.
    assert_eq!(
        store.heartbeat(&claim.lease, LEASE, T0 + 6).await.unwrap(),
        Heartbeat::CancelRequested(stop.clone())
    );
    drop(store);
    let store = db.open().await;
    assert_eq!(store.job(running).await.unwrap().unwrap().cancel_requested, Some(stop));
}

async fn a_lost_lease_refuses_heartbeats_and_results(db: Db) {
    let store = db.open().await;
    let id = store.enqueue(new_job("o/r#1"), T0).await.unwrap();
    let stale = store.claim("w1", LEASE, T0).await.unwrap().unwrap().lease;
    store.recover(T0 + LEASE_MS).await.unwrap();
    // The same worker name claims it again: the attempt number still tells the two leases apart.
    let fresh = store
        .claim("w1", LEASE, T0 + LEASE_MS + 1)
        .await
        .unwrap()
        .unwrap()
        .lease;
    assert_eq!(fresh.attempt, 2);

    assert_eq!(
        store.heartbeat(&stale, LEASE, T0 + LEASE_MS + 2).await.unwrap(),
        Heartbeat::LeaseLost
    );
    let late = Finish::Succeeded(json!("stale"));
    assert_eq!(
        store.finish(&stale, late, T0 + LEASE_MS + 3).await.unwrap(),
        Release::LeaseLost
    );
    assert_eq!(
        store.requeue(&stale, T0 + LEASE_MS + 3).await.unwrap(),
        Release::LeaseLost
    );
    assert_eq!(store.job(id).await.unwrap().unwrap().state, JobState::Running);

    let failed = Finish::Failed("the tests still fail".to_owned());
    assert_eq!(
        store.finish(&fresh, failed, T0 + LEASE_MS + 4).await.unwrap(),
        Release::Done
    );
    let job = store.job(id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Failed);
    assert_eq!(job.error.as_deref(), Some("the tests still fail"));
    assert_eq!(job.result, None);
    // A finished job's lease is gone for good.
    assert_eq!(
        store.heartbeat(&fresh, LEASE, T0 + LEASE_MS + 5).await.unwrap(),
        Heartbeat::LeaseLost
    );
}

async fn requeue_gives_the_attempt_back_unless_a_stop_was_asked(db: Db) {
    let store = db.open().await;
    let id = store.enqueue(new_job("o/r#1"), T0).await.unwrap();
    let lease = store.claim("w1", LEASE, T0).await.unwrap().unwrap().lease;
    assert_eq!(store.requeue(&lease, T0 + 1).await.unwrap(), Release::Done);
    let job = store.job(id).await.unwrap().unwrap();
    assert_eq!((job.state, job.attempts, job.started_at), (JobState::Queued, 0, None));

    let lease = store.claim("w2", LEASE, T0 + 2).await.unwrap().unwrap().lease;
    assert_eq!(lease.attempt, 1, "the requeued attempt was not counted");
    store.cancel("o/r#1", &stop_by("alice"), T0 + 3).await.unwrap();
    assert_eq!(store.requeue(&lease, T0 + 4).await.unwrap(), Release::Cancelled);
    let job = store.job(id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Cancelled);
    assert_eq!(job.error.as_deref(), Some("stopped by @alice"));
}

async fn events_keep_their_order_beside_the_lifecycle(db: Db) {
    let store = db.open().await;
    let id = store.enqueue(new_job("o/r#1"), T0).await.unwrap();
    let lease = store.claim("w1", LEASE, T0 + 1).await.unwrap().unwrap().lease;
    for step in 0..3 {
        let seq = store
            .append_event(id, "step", json!({ "n": step }), T0 + 2 + step)
            .await
            .unwrap();
        assert_eq!(seq, u64::try_from(step).unwrap() + 3);
    }
    store
        .finish(&lease, Finish::Succeeded(json!(null)), T0 + 9)
        .await
        .unwrap();

    let events = store.events(id).await.unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["queued", "claimed", "step", "step", "step", "finished"]);
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5, 6]);
    assert_eq!(events[1].data, json!({ "worker": "w1", "attempt": 1 }));
    assert_eq!(events[3].data, json!({ "n": 1 }));
    assert_eq!(events[3].at, T0 + 3);
    assert_eq!(events[5].data["state"], "succeeded");

    let error = store.append_event(JobId(999), "step", json!({}), T0).await.unwrap_err();
    assert!(matches!(error, StoreError::UnknownJob(JobId(999))), "{error}");
}

async fn jobs_are_counted_by_state_and_listed_newest_first(db: Db) {
    let store = db.open().await;
    let zero: BTreeMap<JobState, u64> = JobState::ALL.into_iter().map(|s| (s, 0)).collect();
    assert_eq!(store.count_by_state().await.unwrap(), zero);

    let a = store.enqueue(new_job("o/r#1"), T0).await.unwrap();
    let b = store.enqueue(new_job("o/r#2"), T0).await.unwrap();
    let c = store.enqueue(new_job("x/y#2"), T0).await.unwrap();
    let d = store.enqueue(new_job("x/y#3"), T0).await.unwrap();
    let lease = store.claim("w", LEASE, T0).await.unwrap().unwrap().lease;
    store.finish(&lease, Finish::Failed("no".to_owned()), T0).await.unwrap();
    store.claim("w", LEASE, T0).await.unwrap().unwrap();
    store.cancel("x/y#3", &stop_by("alice"), T0).await.unwrap();

    let counts = store.count_by_state().await.unwrap();
    let expected = [
        (JobState::Queued, 1),
        (JobState::Running, 1),
        (JobState::Succeeded, 0),
        (JobState::Failed, 1),
        (JobState::Cancelled, 1),
    ];
    assert_eq!(counts, BTreeMap::from(expected));

    let ids = |jobs: Vec<Job>| jobs.into_iter().map(|j| j.id).collect::<Vec<_>>();
    assert_eq!(ids(store.jobs(&JobFilter::default()).await.unwrap()), [d, c, b, a]);
    let filter = JobFilter {
        repo: Some("o/r".to_owned()),
        ..JobFilter::default()
    };
    assert_eq!(ids(store.jobs(&filter).await.unwrap()), [b, a]);
    let filter = JobFilter {
        state: Some(JobState::Queued),
        ..JobFilter::default()
    };
    assert_eq!(ids(store.jobs(&filter).await.unwrap()), [c]);
    let filter = JobFilter {
        key: Some("o/r#1".to_owned()),
        state: Some(JobState::Failed),
        ..JobFilter::default()
    };
    assert_eq!(ids(store.jobs(&filter).await.unwrap()), [a]);
    let filter = JobFilter {
        limit: 2,
        ..JobFilter::default()
    };
    assert_eq!(ids(store.jobs(&filter).await.unwrap()), [d, c]);
}

#[test]
fn the_database_is_in_wal_mode_at_the_current_schema() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("nested").join("data");
    let store = SqliteStore::open(&data_dir).unwrap();
    assert_eq!(store.path(), data_dir.join("pitcrew.sqlite3"));
    drop(store);
    let connection = rusqlite::Connection::open(data_dir.join(FILE_NAME)).unwrap();
    let mode: String = connection
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let version: i64 = connection
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    // Reopening an up-to-date database migrates nothing and keeps the data.
    drop(connection);
    SqliteStore::open(&data_dir).unwrap();
}

#[tokio::test]
async fn the_database_and_its_side_files_are_readable_by_their_owner_alone() {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    let side = |suffix: &str| dir.path().join(format!("{FILE_NAME}{suffix}"));
    let store = SqliteStore::open(dir.path()).unwrap();
    store
        .record_delivery(&delivery("d-mode"), "ping", Bytes::from_static(b"{}"), None, T0)
        .await
        .unwrap();
    for file in [path.clone(), side("-wal"), side("-shm")] {
        assert_eq!(mode(&file), 0o600, "{}", file.display());
    }
    drop(store);
    // A database made before pitcrew narrowed it (or by hand) is narrowed at the next start.
    for file in [path.clone(), side("-wal"), side("-shm")] {
        if file.exists() {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
    }
    SqliteStore::open(dir.path()).unwrap();
    assert_eq!(mode(&path), 0o600);
}

#[test]
fn a_database_from_a_newer_pitcrew_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    let connection = rusqlite::Connection::open(&path).unwrap();
    connection
        .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    drop(connection);
    let error = SqliteStore::open(dir.path()).unwrap_err();
    assert!(
        matches!(error, StoreError::NewerSchema { found, supported, .. } if found == SCHEMA_VERSION + 1 && supported == SCHEMA_VERSION),
        "{error}"
    );
    let message = error.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("upgrade pitcrew"), "{message}");
}

#[test]
fn a_corrupt_database_is_reported_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    std::fs::write(&path, vec![0x5a; 8192]).unwrap();
    let error = SqliteStore::open(dir.path()).unwrap_err();
    assert!(matches!(error, StoreError::Open { .. }), "{error}");
    let message = error.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("not a database"), "{message}");

    // A data directory that is a file cannot hold the database either.
    let file = dir.path().join("plain-file");
    std::fs::write(&file, "x").unwrap();
    let error = SqliteStore::open(&file).unwrap_err();
    assert!(error.to_string().contains("plain-file"), "{error}");
}

// --- the worker pool ---

/// A handler start, handed to the test, which decides when and how the job ends.
struct Started {
    job: Job,
    control: JobControl,
    done: oneshot::Sender<Finish>,
}

#[derive(Default)]
struct Gauge {
    current: AtomicUsize,
    max: AtomicUsize,
}

/// A handler that reports each start and returns what the test sends. Jobs of kind `panic` panic;
/// jobs whose request has `"obey": false` ignore their token.
fn scripted() -> (JobHandler, mpsc::UnboundedReceiver<Started>, Arc<Gauge>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let gauge = Arc::new(Gauge::default());
    let handler_gauge = Arc::clone(&gauge);
    let handler: JobHandler = Arc::new(move |job: Job, control: JobControl| {
        let tx = tx.clone();
        let gauge = Arc::clone(&handler_gauge);
        Box::pin(async move {
            if job.kind == "panic" {
                panic!("the handler blew up");
            }
            let now = gauge.current.fetch_add(1, Ordering::SeqCst) + 1;
            gauge.max.fetch_max(now, Ordering::SeqCst);
            let obey = job.request["obey"].as_bool().unwrap_or(true);
            let token = control.token().clone();
            let (done, finish) = oneshot::channel();
            let _ = tx.send(Started { job, control, done });
            let finish = tokio::select! {
                finish = finish => finish.unwrap_or_else(|_| Finish::Failed("the test went away".to_owned())),
                () = token.cancelled(), if obey => Finish::Cancelled("stopped".to_owned()),
            };
            gauge.current.fetch_sub(1, Ordering::SeqCst);
            finish
        })
    });
    (handler, rx, gauge)
}

fn pool_config(concurrency: usize) -> PoolConfig {
    PoolConfig {
        concurrency,
        lease: LEASE,
        heartbeat: Duration::from_millis(20),
        // Longer than any test: jobs start because the pool is woken, never because it polled.
        poll_interval: Duration::from_secs(3600),
        cancel_grace: Duration::from_millis(100),
        worker_name: "test-worker".to_owned(),
    }
}

async fn next_start(rx: &mut mpsc::UnboundedReceiver<Started>) -> Started {
    within(rx.recv()).await.unwrap()
}

async fn end_of(events: &mut broadcast::Receiver<JobEnd>, id: JobId) -> EndOutcome {
    within(async {
        loop {
            let end = events.recv().await.unwrap();
            if end.job == id {
                return end.outcome;
            }
        }
    })
    .await
}

async fn the_pool_never_runs_more_jobs_than_its_concurrency(db: Db) {
    let store = db.open().await;
    let (handler, mut starts, gauge) = scripted();
    const JOBS: usize = 10;
    for n in 0..JOBS {
        store.enqueue(new_job(&format!("o/r#{n}")), now_ms()).await.unwrap();
    }
    let pool = WorkerPool::start(store.clone(), handler, pool_config(3));
    let mut events = pool.subscribe();

    // Three run at once; each release lets exactly one more in.
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(next_start(&mut starts).await);
    }
    let mut finished = 0;
    while let Some(started) = held.pop() {
        let id = started.job.id;
        started.done.send(Finish::Succeeded(json!({ "n": finished }))).unwrap();
        assert_eq!(end_of(&mut events, id).await, EndOutcome::Finished(JobState::Succeeded));
        finished += 1;
        if finished + held.len() < JOBS {
            held.push(next_start(&mut starts).await);
        }
    }
    assert_eq!(finished, JOBS);
    assert_eq!(gauge.max.load(Ordering::SeqCst), 3);
    assert_eq!(store.count_by_state().await.unwrap()[&JobState::Succeeded], JOBS as u64);
    let report = pool.shutdown(Duration::from_secs(5)).await;
    assert_eq!(report, ShutdownReport::default());
}

async fn a_wake_starts_a_new_job_at_once_and_same_pr_jobs_run_in_turn(db: Db) {
    let store = db.open().await;
    let (handler, mut starts, _) = scripted();
    let pool = WorkerPool::start(store.clone(), handler, pool_config(4));
    let mut events = pool.subscribe();

    let first = store.enqueue(new_job("o/r#7"), now_ms()).await.unwrap();
    pool.wake();
    let started = next_start(&mut starts).await;
    assert_eq!(started.job.id, first);
    assert_eq!(pool.running(), [first]);

    // A newer request on the same pull request waits for the running one, though slots are free.
    let second = store.enqueue(new_job("o/r#7"), now_ms()).await.unwrap();
    let other = store.enqueue(new_job("o/r#8"), now_ms()).await.unwrap();
    pool.wake();
    let started_other = next_start(&mut starts).await;
    assert_eq!(started_other.job.id, other);
    started.done.send(Finish::Succeeded(json!(1))).unwrap();
    assert_eq!(
        end_of(&mut events, first).await,
        EndOutcome::Finished(JobState::Succeeded)
    );
    let started_second = next_start(&mut starts).await;
    assert_eq!(started_second.job.id, second);

    started_other.done.send(Finish::Succeeded(json!(2))).unwrap();
    started_second.done.send(Finish::Succeeded(json!(3))).unwrap();
    assert_eq!(
        end_of(&mut events, second).await,
        EndOutcome::Finished(JobState::Succeeded)
    );
    let job = store.job(second).await.unwrap().unwrap();
    assert_eq!((job.state, job.result), (JobState::Succeeded, Some(json!(3))));
    pool.shutdown(Duration::from_secs(5)).await;
}

async fn a_stop_reaches_the_running_handler_directly_and_through_the_heartbeat(db: Db) {
    let store = db.open().await;
    let (handler, mut starts, _) = scripted();
    let pool = WorkerPool::start(store.clone(), handler, pool_config(2));
    let mut events = pool.subscribe();

    // Through the pool: the token fires without waiting for a heartbeat.
    let here = store.enqueue(new_job("o/r#1"), now_ms()).await.unwrap();
    pool.wake();
    let started = next_start(&mut starts).await;
    let cancellation = pool.cancel("o/r#1", &stop_by("alice")).await.unwrap();
    assert_eq!(cancellation.stopping, [here]);
    within(started.control.token().cancelled()).await;
    assert_eq!(
        started.control.stop_cause(),
        Some(StopCause::Requested(stop_by("alice")))
    );
    assert_eq!(
        end_of(&mut events, here).await,
        EndOutcome::Finished(JobState::Cancelled)
    );

    // Through the store only (as from another replica): the heartbeat brings the request.
    let there = store.enqueue(new_job("o/r#2"), now_ms()).await.unwrap();
    pool.wake();
    let started = next_start(&mut starts).await;
    assert_eq!(started.job.id, there);
    store.cancel("o/r#2", &stop_by("bob"), now_ms()).await.unwrap();
    within(started.control.token().cancelled()).await;
    assert_eq!(started.control.stop_cause(), Some(StopCause::Requested(stop_by("bob"))));
    assert_eq!(
        end_of(&mut events, there).await,
        EndOutcome::Finished(JobState::Cancelled)
    );

    // A handler that ignores its token is dropped after the grace and the job is cancelled.
    let stubborn = store
        .enqueue(
            NewJob {
                request: json!({ "obey": false }),
                ..new_job("o/r#3")
            },
            now_ms(),
        )
        .await
        .unwrap();
    pool.wake();
    let started = next_start(&mut starts).await;
    pool.cancel("o/r#3", &stop_by("carol")).await.unwrap();
    assert_eq!(
        end_of(&mut events, stubborn).await,
        EndOutcome::Finished(JobState::Cancelled)
    );
    let job = store.job(stubborn).await.unwrap().unwrap();
    assert_eq!(job.error.as_deref(), Some("stopped by @carol"));
    drop(started);
    pool.shutdown(Duration::from_secs(5)).await;
}

async fn a_panicking_handler_fails_its_job_and_the_pool_goes_on(db: Db) {
    let store = db.open().await;
    let (handler, mut starts, _) = scripted();
    let boom = store
        .enqueue(
            NewJob {
                kind: "panic".to_owned(),
                ..new_job("o/r#1")
            },
            now_ms(),
        )
        .await
        .unwrap();
    let fine = store.enqueue(new_job("o/r#2"), now_ms()).await.unwrap();
    let pool = WorkerPool::start(store.clone(), handler, pool_config(1));
    let mut events = pool.subscribe();

    // One slot: the second job starts only after the first one's end was written.
    let started = next_start(&mut starts).await;
    assert_eq!(started.job.id, fine);
    let job = store.job(boom).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Failed);
    assert_eq!(
        job.error.as_deref(),
        Some("internal error: the job handler panicked (the handler blew up)")
    );
    started.done.send(Finish::Succeeded(json!("ok"))).unwrap();
    assert_eq!(
        end_of(&mut events, fine).await,
        EndOutcome::Finished(JobState::Succeeded)
    );
    pool.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_jobs_lines_carry_its_ids_from_its_start_to_its_end() {
    // A current-thread runtime: the pool's tasks log on this thread, into the capture.
    let (logs, _guard) = crate::logging::capture::json();
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(open(dir.path()));
    store
        .record_delivery(&delivery("d-7"), "issue_comment", Bytes::new(), None, now_ms())
        .await
        .unwrap();
    let Dispatch::Created(ids) = store
        .process_delivery(&delivery("d-7"), vec![new_job("o/r#7")], now_ms())
        .await
        .unwrap()
    else {
        panic!("the delivery was not processed before");
    };
    let handler: JobHandler = Arc::new(|_job: Job, _control: JobControl| {
        Box::pin(async {
            record_subject("#7");
            tracing::warn!(step = "testing", "at work");
            Finish::Succeeded(json!("ok"))
        })
    });
    let pool = WorkerPool::start(store.clone(), handler, pool_config(1));
    let mut events = pool.subscribe();
    assert_eq!(
        end_of(&mut events, ids[0]).await,
        EndOutcome::Finished(JobState::Succeeded)
    );
    pool.shutdown(Duration::from_secs(5)).await;

    let span = json!({
        "name": "job", "job": ids[0].to_string(), "kind": "fix", "repo": "o/r", "key": "o/r#7",
        "attempt": 1, "subject": "#7", "delivery": "d-7",
    });
    let at_work = &logs.with_message("at work")[0];
    assert_eq!(at_work["span"], span);
    assert_eq!(at_work["spans"], json!([span]));
    assert_eq!(at_work["fields"]["step"], "testing");
    // Before the handler said what the job is about, and after it returned.
    let started = &logs.with_message("job started")[0];
    let mut unsubjected = span.clone();
    unsubjected.as_object_mut().unwrap().remove("subject");
    assert_eq!(started["span"], unsubjected);
    assert_eq!(logs.with_message("job ended")[0]["span"], span);
}

async fn a_lost_lease_stops_the_handler_and_its_result_is_not_written(db: Db) {
    let store = db.open().await;
    let (handler, mut starts, _) = scripted();
    let id = store.enqueue(new_job("o/r#1"), now_ms()).await.unwrap();
    let pool = WorkerPool::start(store.clone(), handler, pool_config(1));
    let mut events = pool.subscribe();

    let first = next_start(&mut starts).await;
    // Another replica decides this worker is dead (its clock ran past the lease).
    let recovery = store.recover(now_ms() + 2 * LEASE_MS).await.unwrap();
    assert_eq!(recovery.requeued, [id]);
    within(first.control.token().cancelled()).await;
    assert_eq!(first.control.stop_cause(), Some(StopCause::LeaseLost));
    assert_eq!(end_of(&mut events, id).await, EndOutcome::LeaseLost);

    let second = next_start(&mut starts).await;
    assert_eq!((second.job.id, second.job.attempts), (id, 2));
    second.done.send(Finish::Succeeded(json!("second"))).unwrap();
    assert_eq!(end_of(&mut events, id).await, EndOutcome::Finished(JobState::Succeeded));
    assert_eq!(store.job(id).await.unwrap().unwrap().result, Some(json!("second")));
    pool.shutdown(Duration::from_secs(5)).await;
}

async fn shutdown_lets_quick_jobs_finish_and_requeues_the_rest(db: Db) {
    let store = db.open().await;
    let (handler, mut starts, _) = scripted();
    let ignore_token = |key: &str| NewJob {
        request: json!({ "obey": false }),
        ..new_job(key)
    };
    let quick = store.enqueue(ignore_token("o/r#1"), now_ms()).await.unwrap();
    let slow = store.enqueue(ignore_token("o/r#2"), now_ms()).await.unwrap();
    let waiting = store.enqueue(new_job("o/r#3"), now_ms()).await.unwrap();
    let pool = WorkerPool::start(store.clone(), handler, pool_config(2));
    let (a, b) = (next_start(&mut starts).await, next_start(&mut starts).await);
    let (quick_run, slow_run) = if a.job.id == quick { (a, b) } else { (b, a) };
    assert_eq!(slow_run.job.id, slow);

    pool.stop_claiming();
    quick_run.done.send(Finish::Succeeded(json!("quick"))).unwrap();
    let report = within(pool.shutdown(Duration::from_millis(300))).await;
    assert_eq!(
        report,
        ShutdownReport {
            finished: vec![(quick, JobState::Succeeded)],
            requeued: vec![slow],
            abandoned: vec![],
        }
    );
    assert_eq!(slow_run.control.stop_cause(), Some(StopCause::Shutdown));
    let job = store.job(slow).await.unwrap().unwrap();
    assert_eq!((job.state, job.attempts, job.lease_owner), (JobState::Queued, 0, None));
    assert_eq!(store.job(quick).await.unwrap().unwrap().state, JobState::Succeeded);
    assert_eq!(store.job(waiting).await.unwrap().unwrap().state, JobState::Queued);
    assert!(starts.try_recv().is_err(), "nothing started after claiming stopped");
    drop(slow_run);
}

async fn a_job_whose_process_vanished_is_recovered_after_a_restart_and_completes(db: Db) {
    let started_at = now_ms();
    let (id, delivery_id) = {
        // The first process accepts a delivery, dispatches it, claims the job, then dies (SIGKILL):
        // nothing is finished, requeued or closed in order.
        let store = db.open().await;
        let delivery_id = delivery("d-crash");
        store
            .record_delivery(
                &delivery_id,
                "issue_comment",
                Bytes::from_static(b"{}"),
                None,
                started_at,
            )
            .await
            .unwrap();
        let accepted = delivery("d-accepted-only");
        store
            .record_delivery(&accepted, "issue_comment", Bytes::from_static(b"{}"), None, started_at)
            .await
            .unwrap();
        let Dispatch::Created(ids) = store
            .process_delivery(&delivery_id, vec![new_job("o/r#1")], started_at)
            .await
            .unwrap()
        else {
            panic!("new delivery");
        };
        let claim = store.claim("doomed-process", LEASE, started_at).await.unwrap().unwrap();
        assert_eq!(claim.job.id, ids[0]);
        (ids[0], delivery_id)
    };

    let store = db.open().await;
    // The accepted but undispatched delivery is still there for the dispatcher.
    let pending = store.unprocessed_deliveries(10).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].id, delivery("d-accepted-only"));
    assert_eq!(store.job(id).await.unwrap().unwrap().delivery, Some(delivery_id));
    // Before the lease runs out the job may still be alive somewhere: hands off.
    assert!(store.recover(started_at + LEASE_MS - 1).await.unwrap().is_empty());
    let recovery = store.recover(started_at + LEASE_MS).await.unwrap();
    assert_eq!(recovery.requeued, [id]);

    let (handler, mut starts, _) = scripted();
    let pool = WorkerPool::start(store.clone(), handler, pool_config(1));
    let mut events = pool.subscribe();
    let started = next_start(&mut starts).await;
    assert_eq!((started.job.id, started.job.attempts), (id, 2));
    started.control.record(&Note::Note { retried: true }).await.unwrap();
    started.done.send(Finish::Succeeded(json!({ "pr": 1 }))).unwrap();
    assert_eq!(end_of(&mut events, id).await, EndOutcome::Finished(JobState::Succeeded));

    let history = store.events(id).await.unwrap();
    let kinds: Vec<&str> = history.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        ["queued", "claimed", "interrupted", "claimed", "note", "finished"]
    );
    assert_eq!(history[4].record(), Some(Note::Note { retried: true }));
    pool.shutdown(Duration::from_secs(5)).await;
}

/// Where [`sigkill_child`] keeps its database; set only in the child process.
const CHILD_DIR: &str = "PITCREW_JOBS_TEST_SIGKILL_DIR";

#[tokio::test]
async fn a_sigkilled_worker_process_loses_no_delivery_and_its_job_runs_again() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let dir = tempfile::tempdir().unwrap();
    // The test binary itself is the doomed process: it runs the helper below and is killed mid-job.
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "jobs::tests::sigkill_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DIR, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let ready = tokio::task::spawn_blocking(move || {
        // libtest prints "test … ... " before the helper's line, without a newline.
        BufReader::new(stdout).lines().map_while(Result::ok).find_map(|line| {
            line.rsplit_once("READY ")
                .map(|(_, id)| JobId(id.trim().parse().unwrap()))
        })
    });
    let ready = tokio::time::timeout(Duration::from_secs(30), ready).await;
    // SIGKILL: no destructor, no graceful anything. Killed before asserting, so a failing test does
    // not leave the helper running.
    child.kill().unwrap();
    child.wait().unwrap();
    let id = ready.unwrap().unwrap().unwrap();

    let store = Arc::new(open(dir.path()));
    let delivery = store.delivery(&delivery("d-killed")).await.unwrap().unwrap();
    assert!(delivery.processed_at.is_some());
    let accepted = store.unprocessed_deliveries(10).await.unwrap();
    assert_eq!(accepted.len(), 1, "the delivery accepted but not dispatched survives");
    let job = store.job(id).await.unwrap().unwrap();
    assert_eq!((job.state, job.attempts), (JobState::Running, 1));
    let lease_end = job.lease_expires_at.unwrap();
    assert!(store.recover(lease_end - 1).await.unwrap().is_empty());
    assert_eq!(store.recover(lease_end).await.unwrap().requeued, [id]);

    let (handler, mut starts, _) = scripted();
    let pool = WorkerPool::start(store.clone(), handler, pool_config(1));
    let mut events = pool.subscribe();
    let started = next_start(&mut starts).await;
    assert_eq!((started.job.id, started.job.attempts), (id, 2));
    started.done.send(Finish::Succeeded(json!("done"))).unwrap();
    assert_eq!(end_of(&mut events, id).await, EndOutcome::Finished(JobState::Succeeded));
    let kinds: Vec<String> = store.events(id).await.unwrap().into_iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        ["queued", "claimed", "working", "interrupted", "claimed", "finished"]
    );
    pool.shutdown(Duration::from_secs(5)).await;
}

/// The process killed by the test above: accepts two deliveries, dispatches one, and starts its job
/// in a pool, then announces the job and waits to be killed. Does nothing when run on its own.
#[tokio::test]
#[ignore = "run by a_sigkilled_worker_process_loses_no_delivery_and_its_job_runs_again in a child process"]
async fn sigkill_child() {
    use std::io::Write;

    let Some(dir) = std::env::var_os(CHILD_DIR) else {
        return;
    };
    let store = Arc::new(open(Path::new(&dir)));
    let now = now_ms();
    for id in ["d-killed", "d-accepted"] {
        store
            .record_delivery(&delivery(id), "issue_comment", Bytes::from_static(b"{}"), None, now)
            .await
            .unwrap();
    }
    store
        .process_delivery(&delivery("d-killed"), vec![new_job("o/r#1")], now)
        .await
        .unwrap();
    let handler: JobHandler = Arc::new(|job: Job, control: JobControl| {
        Box::pin(async move {
            control.record(&Note::Working {}).await.unwrap();
            {
                let mut stdout = std::io::stdout().lock();
                writeln!(stdout, "READY {}", job.id).unwrap();
                stdout.flush().unwrap();
            }
            std::future::pending::<Finish>().await
        })
    });
    let _pool = WorkerPool::start(store, handler, pool_config(1));
    std::future::pending::<()>().await;
}

async fn a_schedule_remembers_when_it_fired_with_its_job_across_reopening(db: Db) {
    let store = db.open().await;
    assert_eq!(within(store.schedule_mark("acme/calc:deps")).await.unwrap(), None);
    // First seen: marked, nothing queued.
    assert_eq!(
        within(store.fire_schedule("acme/calc:deps", None, T0, None))
            .await
            .unwrap(),
        Fired::Done(None)
    );
    // A second scheduler that read "never" too loses: the schedule is seen once.
    assert_eq!(
        within(store.fire_schedule("acme/calc:deps", None, T0 + 5, None))
            .await
            .unwrap(),
        Fired::Raced
    );
    let Fired::Done(Some(id)) =
        within(store.fire_schedule("acme/calc:deps", Some(T0), T0 + 60_000, Some(new_job("acme/calc:deps"))))
            .await
            .unwrap()
    else {
        panic!("the due schedule fires its job");
    };
    // Another scheduler that read the mark before that firing fires nothing, and queues nothing.
    assert_eq!(
        within(store.fire_schedule("acme/calc:deps", Some(T0), T0 + 60_500, Some(new_job("acme/calc:deps"))))
            .await
            .unwrap(),
        Fired::Raced
    );
    assert_eq!(
        within(store.jobs(&JobFilter::default())).await.unwrap().len(),
        1,
        "one job queued"
    );
    drop(store);
    let store = db.open().await;
    assert_eq!(
        within(store.schedule_mark("acme/calc:deps")).await.unwrap(),
        Some(T0 + 60_000)
    );
    assert_eq!(within(store.schedule_mark("acme/other:deps")).await.unwrap(), None);
    let job = within(store.job(id)).await.unwrap().unwrap();
    assert_eq!(
        (job.state, job.created_at, job.key.as_str()),
        (JobState::Queued, T0 + 60_000, "acme/calc:deps")
    );
}

#[test]
fn a_database_of_the_first_schema_is_migrated_with_its_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let connection = rusqlite::Connection::open(dir.path().join(FILE_NAME)).unwrap();
    connection.execute_batch(sqlite::MIGRATIONS[0]).unwrap();
    connection.pragma_update(None, "user_version", 1).unwrap();
    connection
        .execute(
            "INSERT INTO jobs (kind, repo, key, request, state, max_attempts, created_at)
             VALUES ('fix', 'acme/calc', 'acme/calc#1', '{}', 'queued', 3, 1)",
            [],
        )
        .unwrap();
    drop(connection);
    let store = open(dir.path());
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let jobs = runtime.block_on(store.jobs(&JobFilter::default())).unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(runtime.block_on(store.schedule_mark("x")).unwrap(), None);
}

const DAY_MS: i64 = 86_400_000;

fn page_count(path: &Path) -> (i64, i64) {
    let connection = rusqlite::Connection::open(path).unwrap();
    let pages = connection.pragma_query_value(None, "page_count", |r| r.get(0)).unwrap();
    let free = connection
        .pragma_query_value(None, "freelist_count", |r| r.get(0))
        .unwrap();
    (pages, free)
}

/// The store never forgot anything: 5,100 fuzzed deliveries made a 2.8 GiB database.
async fn prune_forgets_old_finished_work_keeps_the_rest_and_gives_the_space_back(db: Db) {
    let store = db.open().await;
    let big = Bytes::from(vec![b'x'; 64 * 1024]);
    let retention = Retention {
        rows: Duration::from_secs(30 * 86_400),
        payloads: Duration::from_secs(7 * 86_400),
    };
    let now = T0 + 40 * DAY_MS;

    // Old and finished: forgotten, the delivery, its job and the job's events.
    for n in 0..40 {
        let id = delivery(&format!("old-{n}"));
        store
            .record_delivery(&id, "issue_comment", big.clone(), None, T0)
            .await
            .unwrap();
        let job = NewJob {
            delivery: Some(id.clone()),
            ..new_job(&format!("acme/calc#{n}"))
        };
        store.process_delivery(&id, vec![job], T0).await.unwrap();
        let claim = store.claim("w", LEASE, T0).await.unwrap().unwrap();
        store
            .append_event(claim.job.id, "note", json!({ "n": n }), T0)
            .await
            .unwrap();
        let done = Finish::Succeeded(json!({ "n": n }));
        assert_eq!(store.finish(&claim.lease, done, T0 + 1).await.unwrap(), Release::Done);
    }
    let old_job = store.jobs(&JobFilter::default()).await.unwrap().last().unwrap().id;
    // Old but never processed (the dispatcher has not got to it): kept whole.
    let pending = delivery("pending");
    store
        .record_delivery(&pending, "issue_comment", big.clone(), None, T0)
        .await
        .unwrap();
    // Old, processed, but its job still waits: kept whole, the job too.
    let waiting = delivery("waiting");
    store
        .record_delivery(&waiting, "issue_comment", big.clone(), None, T0)
        .await
        .unwrap();
    let waiting_job = match store
        .process_delivery(&waiting, vec![new_job("acme/calc#900")], T0)
        .await
        .unwrap()
    {
        Dispatch::Created(ids) => ids[0],
        other => panic!("{other:?}"),
    };
    // Ten days old and handled: the row stays (a redelivery is still recognised), the payload goes.
    let handled = delivery("handled");
    store
        .record_delivery(&handled, "issue_comment", big.clone(), None, now - 10 * DAY_MS)
        .await
        .unwrap();
    store
        .process_delivery(&handled, Vec::new(), now - 10 * DAY_MS)
        .await
        .unwrap();
    // Yesterday's: kept whole.
    let recent = delivery("recent");
    store
        .record_delivery(&recent, "issue_comment", big.clone(), None, now - DAY_MS)
        .await
        .unwrap();
    store.process_delivery(&recent, Vec::new(), now - DAY_MS).await.unwrap();
    // A schedule last fired long ago: its mark is what stops it firing twice; kept.
    store.fire_schedule("acme/calc:deps", None, T0, None).await.unwrap();

    let file = db.sqlite_file();
    let pages_before = file.as_deref().map(|path| page_count(path).0);
    let pruned = within(store.prune(retention, now)).await.unwrap();
    assert_eq!((pruned.jobs, pruned.deliveries, pruned.payloads), (40, 40, 40 + 1));
    // SQLite gives the file's pages back; PostgreSQL leaves the space to its autovacuum.
    if let (Some(path), Some(pages_before)) = (file, pages_before) {
        assert!(pruned.pages_freed > 0, "{pruned:?}");
        let (pages_after, free_after) = page_count(&path);
        assert_eq!(free_after, 0);
        assert!(
            pages_after < pages_before / 4,
            "{pages_before} pages, then {pages_after}"
        );
    }

    assert!(store.delivery(&delivery("old-0")).await.unwrap().is_none());
    assert!(store.job(old_job).await.unwrap().is_none());
    assert!(store.events(old_job).await.unwrap().is_empty());
    assert_eq!(store.delivery(&pending).await.unwrap().unwrap().payload, big);
    assert_eq!(store.delivery(&waiting).await.unwrap().unwrap().payload, big);
    assert_eq!(store.job(waiting_job).await.unwrap().unwrap().state, JobState::Queued);
    let kept = store.delivery(&handled).await.unwrap().unwrap();
    assert!(kept.payload.is_empty() && kept.processed_at.is_some());
    assert_eq!(
        store
            .record_delivery(&handled, "issue_comment", big.clone(), None, now)
            .await
            .unwrap(),
        Recorded::Duplicate
    );
    assert_eq!(store.delivery(&recent).await.unwrap().unwrap().payload, big);
    assert_eq!(store.schedule_mark("acme/calc:deps").await.unwrap(), Some(T0));
    assert_eq!(store.count_deliveries().await.unwrap(), 4);

    // Nothing more is old: a second pass changes nothing.
    assert_eq!(within(store.prune(retention, now)).await.unwrap(), Pruned::default());
}

#[test]
fn a_database_of_schema_2_moves_to_incremental_vacuum() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    let connection = rusqlite::Connection::open(&path).unwrap();
    connection.execute_batch(sqlite::MIGRATIONS[0]).unwrap();
    connection.execute_batch(sqlite::MIGRATIONS[1]).unwrap();
    connection.pragma_update(None, "user_version", 2).unwrap();
    let mode: i64 = connection
        .pragma_query_value(None, "auto_vacuum", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, 0);
    drop(connection);
    drop(open(dir.path()));
    let connection = rusqlite::Connection::open(&path).unwrap();
    let mode: i64 = connection
        .pragma_query_value(None, "auto_vacuum", |r| r.get(0))
        .unwrap();
    let version: i64 = connection
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!((mode, version), (2, SCHEMA_VERSION));
    // A new database is made in that mode from the start.
    let fresh = tempfile::tempdir().unwrap();
    drop(open(fresh.path()));
    let connection = rusqlite::Connection::open(fresh.path().join(FILE_NAME)).unwrap();
    let mode: i64 = connection
        .pragma_query_value(None, "auto_vacuum", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, 2);
}

/// The store's entries as the store wrote them before they were typed (copied from its `json!`s),
/// each with the record it reads as.
fn lifecycle_rows() -> Vec<(&'static str, serde_json::Value, Lifecycle)> {
    vec![
        (
            "queued",
            json!({ "kind": "fix", "key": "o/r#1", "delivery": "d-1" }),
            Lifecycle::Queued {
                kind: "fix".into(),
                key: "o/r#1".into(),
                delivery: Some(delivery("d-1")),
            },
        ),
        (
            "queued",
            json!({ "kind": "chore", "key": "o/r:deps", "delivery": null }),
            Lifecycle::Queued {
                kind: "chore".into(),
                key: "o/r:deps".into(),
                delivery: None,
            },
        ),
        (
            "claimed",
            json!({ "worker": "w1", "attempt": 1 }),
            Lifecycle::Claimed {
                worker: "w1".into(),
                attempt: 1,
            },
        ),
        (
            "cancel_requested",
            json!({ "reason": "stopped by @alice" }),
            Lifecycle::CancelRequested {
                reason: "stopped by @alice".into(),
            },
        ),
        (
            "requeued",
            json!({ "worker": "w1", "attempt": 2 }),
            Lifecycle::Requeued {
                worker: "w1".into(),
                attempt: 2,
            },
        ),
        (
            "interrupted",
            json!({ "worker": "w2", "attempt": 2 }),
            Lifecycle::Interrupted {
                worker: Some("w2".into()),
                attempt: 2,
            },
        ),
        (
            "finished",
            json!({ "state": "succeeded", "attempt": 1, "error": null }),
            Lifecycle::Finished {
                state: JobState::Succeeded,
                attempt: Some(1),
                error: None,
            },
        ),
        (
            "finished",
            json!({ "state": "failed", "attempt": 3, "error": "interrupted 3 times (the worker stopped or crashed mid-job); not retrying" }),
            Lifecycle::Finished {
                state: JobState::Failed,
                attempt: Some(3),
                error: Some("interrupted 3 times (the worker stopped or crashed mid-job); not retrying".into()),
            },
        ),
        // A queued job cancelled before it ran has no attempt.
        (
            "finished",
            json!({ "state": "cancelled", "error": "stopped by @alice" }),
            Lifecycle::Finished {
                state: JobState::Cancelled,
                attempt: None,
                error: Some("stopped by @alice".into()),
            },
        ),
    ]
}

#[test]
fn the_stores_entries_of_before_they_were_typed_read_and_write_back_the_same() {
    for (kind, data, record) in lifecycle_rows() {
        let event = JobEvent {
            job_id: JobId(1),
            seq: 1,
            at: T0,
            kind: kind.to_owned(),
            data: data.clone(),
        };
        assert_eq!(event.record::<Lifecycle>().as_ref(), Some(&record), "{kind} {data}");
        assert_eq!(record.to_row().unwrap(), (kind.to_owned(), data));
    }
}

async fn every_lifecycle_entry_is_written_in_the_shape_it_always_had(db: Db) {
    let store = db.open().await;
    store
        .record_delivery(&delivery("d-1"), "issue_comment", Bytes::from_static(b"{}"), None, T0)
        .await
        .unwrap();
    let Dispatch::Created(created) = store
        .process_delivery(&delivery("d-1"), vec![new_job("o/r#1"), new_job("o/r#1")], T0)
        .await
        .unwrap()
    else {
        panic!("the delivery was processed before");
    };
    let (first, second) = (created[0], created[1]);
    let lease = store.claim("w1", LEASE, T0 + 1).await.unwrap().unwrap().lease;
    assert_eq!(store.requeue(&lease, T0 + 2).await.unwrap(), Release::Done);
    store.claim("w1", LEASE, T0 + 3).await.unwrap().unwrap();
    store.cancel("o/r#1", &stop_by("alice"), T0 + 4).await.unwrap();
    store.recover(T0 + 3 + LEASE_MS).await.unwrap();

    let rows = |events: Vec<JobEvent>| -> Vec<(String, serde_json::Value)> {
        events.into_iter().map(|e| (e.kind, e.data)).collect()
    };
    let row = |kind: &str, data: serde_json::Value| (kind.to_owned(), data);
    assert_eq!(
        rows(store.events(first).await.unwrap()),
        [
            row("queued", json!({ "kind": "fix", "key": "o/r#1", "delivery": "d-1" })),
            row("claimed", json!({ "worker": "w1", "attempt": 1 })),
            row("requeued", json!({ "worker": "w1", "attempt": 1 })),
            row("claimed", json!({ "worker": "w1", "attempt": 1 })),
            row("cancel_requested", json!({ "reason": "stopped by @alice" })),
            row("interrupted", json!({ "worker": "w1", "attempt": 1 })),
            row(
                "finished",
                json!({ "state": "cancelled", "attempt": 1, "error": "stopped by @alice" })
            ),
        ]
    );
    assert_eq!(
        rows(store.events(second).await.unwrap()),
        [
            row("queued", json!({ "kind": "fix", "key": "o/r#1", "delivery": "d-1" })),
            row(
                "finished",
                json!({ "state": "cancelled", "error": "stopped by @alice" })
            ),
        ]
    );
}

/// A server upgraded while a stop was asked of a running job: what the store of schema 3 wrote
/// (the stop's words only, `stopped by @alice`) reads as who asked, and the job ends as before.
#[test]
fn stops_asked_before_the_upgrade_name_who_asked() {
    let dir = tempfile::tempdir().unwrap();
    let connection = rusqlite::Connection::open(dir.path().join(FILE_NAME)).unwrap();
    for migration in &sqlite::MIGRATIONS[..3] {
        connection.execute_batch(migration).unwrap();
    }
    connection.pragma_update(None, "user_version", 3).unwrap();
    // Rows as the old store wrote them: a running job asked to stop by `@agent stop`, and two
    // with words the old handler read the same way (`@bob`, and a bare name).
    for (key, reason) in [("o/r#1", "stopped by @alice"), ("o/r#2", "@bob"), ("o/r#3", "carol")] {
        connection
            .execute(
                "INSERT INTO jobs (kind, repo, key, request, state, attempts, max_attempts, created_at,
                                   started_at, lease_owner, lease_expires_at, cancel_reason)
                 VALUES ('fix', 'o/r', ?1, '{}', 'running', 1, 3, ?2, ?2, 'w1', ?3, ?4)",
                rusqlite::params![key, T0, T0 + LEASE_MS, reason],
            )
            .unwrap();
    }
    connection
        .execute(
            "INSERT INTO job_events (job_id, seq, at, kind, data)
             VALUES (1, 1, ?1, 'cancel_requested', '{\"reason\":\"stopped by @alice\"}')",
            [T0],
        )
        .unwrap();
    drop(connection);

    let store = open(dir.path());
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let lease = Lease {
        job: JobId(1),
        worker: "w1".into(),
        attempt: 1,
    };
    assert_eq!(
        runtime.block_on(store.heartbeat(&lease, LEASE, T0 + 1)).unwrap(),
        Heartbeat::CancelRequested(stop_by("alice"))
    );
    let asked: Vec<Option<StopRequest>> = (1..=3)
        .map(|id| {
            runtime
                .block_on(store.job(JobId(id)))
                .unwrap()
                .unwrap()
                .cancel_requested
        })
        .collect();
    assert_eq!(
        asked,
        [Some(stop_by("alice")), Some(stop_by("bob")), Some(stop_by("carol"))]
    );
    let events = runtime.block_on(store.events(JobId(1))).unwrap();
    assert_eq!(
        events[0].record::<Lifecycle>(),
        Some(Lifecycle::CancelRequested {
            reason: "stopped by @alice".into()
        })
    );
    // Its worker is gone: recovery cancels it with the same words as before.
    let recovery = runtime.block_on(store.recover_all(T0 + 2)).unwrap();
    assert_eq!(recovery.cancelled, [JobId(1), JobId(2), JobId(3)]);
    let job = runtime.block_on(store.job(JobId(1))).unwrap().unwrap();
    assert_eq!(
        (job.state, job.error.as_deref()),
        (JobState::Cancelled, Some("stopped by @alice"))
    );
}

async fn a_job_waiting_idle_gives_its_slot_to_another_and_a_shutdown_requeues_it_at_once(db: Db) {
    let store = db.open().await;
    let (handler, mut starts, _) = scripted();
    let waiter = store.enqueue(new_job("o/r#1"), now_ms()).await.unwrap();
    let pool = WorkerPool::start(store.clone(), handler, pool_config(1));
    let waiting = next_start(&mut starts).await;
    assert_eq!(waiting.job.id, waiter);

    // The only slot is given back while the job waits for something outside: the next job runs.
    let control = waiting.control.clone();
    let (release, released) = oneshot::channel::<()>();
    let idle = tokio::spawn(async move {
        control
            .idle(async {
                let _ = released.await;
            })
            .await;
    });
    let other = store.enqueue(new_job("o/r#2"), now_ms()).await.unwrap();
    pool.wake();
    let running = next_start(&mut starts).await;
    assert_eq!(running.job.id, other);
    running.done.send(Finish::Succeeded(json!("done"))).unwrap();

    // A shutdown does not wait for the idle job's grace: it is stopped, and requeued.
    let mut events = pool.subscribe();
    assert_eq!(
        end_of(&mut events, other).await,
        EndOutcome::Finished(JobState::Succeeded)
    );
    let shutdown = tokio::spawn(pool.shutdown(Duration::from_secs(3600)));
    within(waiting.control.token().cancelled()).await;
    assert_eq!(waiting.control.stop_cause(), Some(StopCause::Shutdown));
    let _ = release.send(());
    within(idle).await.unwrap();
    drop(waiting.done);
    let report = within(shutdown).await.unwrap();
    assert_eq!(report.requeued, vec![waiter], "{report:?}");
    assert_eq!(store.job(waiter).await.unwrap().unwrap().state, JobState::Queued);
}

async fn deliveries_are_claimed_by_one_worker_and_in_order_per_key(db: Db) {
    let (a, b) = (db.open().await, db.open().await);
    for (n, id) in ["d1", "d2", "d3"].into_iter().enumerate() {
        let at = T0 + i64::try_from(n).unwrap();
        a.record_delivery(&delivery(id), "issue_comment", Bytes::new(), None, at)
            .await
            .unwrap();
    }
    // d1 and d2 are about o/r#1, d3 about o/r#2.
    let claim = |store: &Arc<dyn JobStore>, id: &str, key: &str, worker: &str, now: i64| {
        let claim = DeliveryClaim {
            key: key.to_owned(),
            worker: worker.to_owned(),
            lease_for: LEASE,
        };
        store.claim_delivery(&delivery(id), &claim, now)
    };
    assert!(claim(&a, "d1", "o/r#1", "A", T0 + 10).await.unwrap());
    assert!(!claim(&b, "d1", "o/r#1", "B", T0 + 10).await.unwrap(), "held by A");
    assert!(
        !claim(&b, "d2", "o/r#1", "B", T0 + 10).await.unwrap(),
        "an older delivery of its key is held by A: it waits"
    );
    assert!(
        claim(&b, "d3", "o/r#2", "B", T0 + 10).await.unwrap(),
        "another key goes on"
    );
    assert!(
        claim(&a, "d1", "o/r#1", "A", T0 + 20).await.unwrap(),
        "A takes it again (a retry)"
    );

    a.process_delivery(&delivery("d1"), Vec::new(), T0 + 30).await.unwrap();
    assert!(!claim(&a, "d1", "o/r#1", "A", T0 + 31).await.unwrap(), "processed");
    assert!(claim(&b, "d2", "o/r#1", "B", T0 + 31).await.unwrap(), "its turn now");

    // B stops (a crash): its claims run out, and A takes over.
    assert!(!claim(&a, "d3", "o/r#2", "A", T0 + 32).await.unwrap());
    assert!(claim(&a, "d3", "o/r#2", "A", T0 + 10 + LEASE_MS + 1).await.unwrap());

    let error = claim(&a, "nope", "o/r#9", "A", T0).await.unwrap_err();
    assert!(matches!(error, StoreError::UnknownDelivery(_)), "{error}");
}

async fn a_delivery_stored_claimed_is_its_receivers_until_the_claim_runs_out(db: Db) {
    let (a, b) = (db.open().await, db.open().await);
    let mut signals = b.signals();
    let claimed = |key: &str, worker: &str| DeliveryClaim {
        key: key.to_owned(),
        worker: worker.to_owned(),
        lease_for: LEASE,
    };
    // A received d1 and d3, B received d2; d1 and d2 are about o/r#1.
    for (id, key, store, worker, at) in [
        ("d1", "o/r#1", &a, "A", T0),
        ("d2", "o/r#1", &b, "B", T0 + 1),
        ("d3", "o/r#2", &a, "A", T0 + 2),
    ] {
        let recorded = store
            .record_delivery(
                &delivery(id),
                "issue_comment",
                Bytes::from_static(b"{}"),
                Some(claimed(key, worker)),
                at,
            )
            .await
            .unwrap();
        assert_eq!(recorded, Recorded::New);
    }
    // A redelivery changes nothing, its claim included.
    let again = b
        .record_delivery(
            &delivery("d1"),
            "issue_comment",
            Bytes::new(),
            Some(claimed("o/r#1", "B")),
            T0 + 3,
        )
        .await
        .unwrap();
    assert_eq!(again, Recorded::Duplicate);

    let pending = b.unprocessed_deliveries(10).await.unwrap();
    let held: Vec<(&str, &str, &str, i64)> = pending
        .iter()
        .map(|p| {
            let claim = p.claim.as_ref().unwrap();
            (p.id.0.as_str(), claim.key.as_str(), claim.worker.as_str(), claim.until)
        })
        .collect();
    assert_eq!(
        held,
        [
            ("d1", "o/r#1", "A", T0 + LEASE_MS),
            ("d2", "o/r#1", "B", T0 + 1 + LEASE_MS),
            ("d3", "o/r#2", "A", T0 + 2 + LEASE_MS),
        ],
        "listed oldest first, with their holders, without payloads"
    );
    assert!(pending.iter().all(|p| p.event == "issue_comment"));
    // What each may handle: its own, and B's waits behind A's older delivery of the same key.
    let available = |store: &Arc<dyn JobStore>, worker: &'static str, now: i64| {
        let listing = store.available_deliveries(worker, now, 10);
        async move {
            listing
                .await
                .unwrap()
                .into_iter()
                .map(|d| (d.id.0, d.behind))
                .collect::<Vec<_>>()
        }
    };
    let owned = |list: &[(&str, bool)]| {
        list.iter()
            .map(|(id, behind)| ((*id).to_owned(), *behind))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        available(&a, "A", T0 + 10).await,
        owned(&[("d1", false), ("d3", false)])
    );
    assert_eq!(available(&b, "B", T0 + 10).await, owned(&[("d2", true)]));
    assert_eq!(
        available(&b, "B", T0 + 2 + LEASE_MS + 1).await,
        owned(&[("d1", false), ("d2", false), ("d3", false)]),
        "A's claims ran out: B may take them over"
    );

    let claim = |store: &Arc<dyn JobStore>, id: &str, key: &str, worker: &str, now: i64| {
        store.claim_delivery(&delivery(id), &claimed(key, worker), now)
    };
    assert!(!claim(&b, "d1", "o/r#1", "B", T0 + 10).await.unwrap(), "the receiver's");
    assert!(
        !claim(&b, "d2", "o/r#1", "B", T0 + 10).await.unwrap(),
        "B's own, but behind A's older delivery of the same key"
    );
    assert!(
        claim(&a, "d1", "o/r#1", "A", T0 + 10).await.unwrap(),
        "the receiver takes it again"
    );
    a.process_delivery(&delivery("d1"), Vec::new(), T0 + 20).await.unwrap();
    assert!(claim(&b, "d2", "o/r#1", "B", T0 + 21).await.unwrap(), "its turn now");
    assert_eq!(available(&b, "B", T0 + 21).await, owned(&[("d2", false)]));
    if b.shared() {
        // Stored claimed, nobody else was told; its key's turn passing is told (signals come in
        // order: the first one B hears is the one about d1).
        assert_eq!(next_signal(&mut signals).await, Signal::Deliveries);
        a.publish(Signal::Jobs).await.unwrap();
        assert_eq!(next_signal(&mut signals).await, Signal::Jobs, "nothing else was told");
    }

    // A dies with d3 in hand: B takes it once the claim ran out.
    assert!(!claim(&b, "d3", "o/r#2", "B", T0 + 30).await.unwrap());
    assert!(claim(&b, "d3", "o/r#2", "B", T0 + 2 + LEASE_MS + 1).await.unwrap());

    // A stops: what it received and did not handle is anyone's at once.
    a.record_delivery(
        &delivery("d5"),
        "issue_comment",
        Bytes::new(),
        Some(claimed("o/r#4", "A")),
        T0 + 35,
    )
    .await
    .unwrap();
    assert_eq!(
        a.release_deliveries("A").await.unwrap(),
        1,
        "d1 is processed, d3 is B's"
    );
    assert!(claim(&b, "d5", "o/r#4", "B", T0 + 36).await.unwrap());
    assert_eq!(a.release_deliveries("A").await.unwrap(), 0);

    // A store whose workers are known dead (a server restarting on its own data directory)
    // releases every claim at once.
    a.record_delivery(
        &delivery("d4"),
        "issue_comment",
        Bytes::new(),
        Some(claimed("o/r#3", "A")),
        T0 + 40,
    )
    .await
    .unwrap();
    a.recover_all(T0 + 41).await.unwrap();
    let pending = a.unprocessed_deliveries(10).await.unwrap();
    assert!(pending.iter().all(|p| p.claim.is_none()), "{pending:?}");
    assert!(claim(&a, "d4", "o/r#3", "A2", T0 + 42).await.unwrap());
}

/// The next signal that is not a resync (a listener that connected says one).
async fn next_signal(signals: &mut broadcast::Receiver<Signal>) -> Signal {
    loop {
        match within(signals.recv()).await.unwrap() {
            Signal::Resync => {}
            signal => return signal,
        }
    }
}

async fn signals_tell_of_deliveries_jobs_and_stops(db: Db) {
    let store = db.open().await;
    let mut signals = store.signals();
    store
        .record_delivery(&delivery("d1"), "issue_comment", Bytes::new(), None, T0)
        .await
        .unwrap();
    assert_eq!(next_signal(&mut signals).await, Signal::Deliveries);
    // A redelivery is nothing new.
    store
        .record_delivery(&delivery("d1"), "issue_comment", Bytes::new(), None, T0)
        .await
        .unwrap();
    let id = store.enqueue(new_job("o/r#1"), T0).await.unwrap();
    assert_eq!(next_signal(&mut signals).await, Signal::Jobs);
    let claim = store.claim("w1", LEASE, T0).await.unwrap().unwrap();
    store.cancel("o/r#1", &stop_by("alice"), T0 + 1).await.unwrap();
    assert_eq!(next_signal(&mut signals).await, Signal::Stop(id));
    store
        .finish(&claim.lease, Finish::Cancelled("stopped".into()), T0 + 2)
        .await
        .unwrap();
    assert_eq!(next_signal(&mut signals).await, Signal::Jobs, "its key is free");
    let ci = Signal::Commit {
        repo: "o/r".into(),
        sha: "abc123".into(),
    };
    store.publish(ci.clone()).await.unwrap();
    assert_eq!(next_signal(&mut signals).await, ci);
    store.publish(Signal::Key("o/r#1".into())).await.unwrap();
    assert_eq!(next_signal(&mut signals).await, Signal::Key("o/r#1".into()));
}

async fn a_fence_refuses_a_worker_whose_lease_went_to_another(db: Db) {
    let store = db.open().await;
    let (handler, mut starts, _) = scripted();
    let id = store.enqueue(new_job("o/r#1"), now_ms()).await.unwrap();
    // No heartbeat during the test: the fence alone is to find out (a heartbeat finding the lease
    // lost first would free the job for this very pool).
    let config = PoolConfig {
        lease: Duration::from_secs(600),
        heartbeat: Duration::from_secs(300),
        ..pool_config(1)
    };
    let pool = WorkerPool::start(store.clone(), handler, config);
    let mut events = pool.subscribe();
    let started = next_start(&mut starts).await;
    assert_eq!(started.job.id, id);
    within(started.control.fence()).await.unwrap();

    // The worker is presumed dead (paused or cut off past its lease): the job is taken back and
    // another worker runs it.
    let other = db.open().await;
    assert_eq!(other.recover_all(now_ms()).await.unwrap().requeued, [id]);
    let taken = other.claim("other-worker", LEASE, now_ms()).await.unwrap().unwrap();
    assert_eq!((taken.job.id, taken.lease.attempt), (id, 2));

    let fenced = within(started.control.fence()).await.unwrap_err();
    assert!(matches!(fenced, Fenced::LeaseLost), "{fenced}");
    assert!(started.control.is_cancelled());
    assert_eq!(started.control.stop_cause(), Some(StopCause::LeaseLost));
    assert_eq!(end_of(&mut events, id).await, EndOutcome::LeaseLost);
    let job = other.job(id).await.unwrap().unwrap();
    assert_eq!(
        (job.state, job.lease_owner.as_deref(), job.attempts),
        (JobState::Running, Some("other-worker"), 2),
        "the other attempt is untouched"
    );
    pool.shutdown(Duration::from_secs(5)).await;
}

/// What only replicas sharing PostgreSQL do: migrate together, signal each other, lead in turn,
/// race for claims.
mod replicas {
    use super::*;
    use pitcrew_tests::postgres::Postgres;

    async fn server() -> Option<Postgres> {
        tokio::task::spawn_blocking(Postgres::start).await.unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn replicas_starting_together_on_an_empty_database_migrate_once() {
        let Some(server) = server().await else { return };
        let url = server.url();
        let starts: Vec<_> = (0..4)
            .map(|_| {
                let url = url.clone();
                tokio::spawn(async move { PgStore::connect(&url).await })
            })
            .collect();
        for start in starts {
            within(start).await.unwrap().unwrap();
        }
        assert_eq!(
            server
                .psql("SELECT count(*), max(version) FROM pitcrew_schema")
                .unwrap(),
            format!("1|{PG_SCHEMA_VERSION}")
        );
        // A database a newer pitcrew migrated is refused, not guessed at.
        server.psql("UPDATE pitcrew_schema SET version = version + 1").unwrap();
        let error = PgStore::connect(&url).await.unwrap_err();
        assert!(matches!(error, StoreError::NewerSchema { .. }), "{error}");
        assert!(!error.to_string().contains("pitcrew@"), "no URL in: {error}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_bad_or_unreachable_database_is_an_error_that_shows_no_password() {
        let error = PgStore::connect("postgres://pitcrew:hunter2@127.0.0.1:1/pitcrew")
            .await
            .unwrap_err();
        let text = error.to_string();
        assert!(text.contains("postgres://127.0.0.1:1/pitcrew"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
        let error = PgStore::connect("mysql://root:hunter2@db/x").await.unwrap_err();
        assert!(!error.to_string().contains("hunter2"), "{error}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stop_asked_through_another_replica_reaches_the_running_job_at_once() {
        let Some(server) = server().await else { return };
        let (a, b) = (
            Arc::new(PgStore::connect(&server.url()).await.unwrap()) as Arc<dyn JobStore>,
            Arc::new(PgStore::connect(&server.url()).await.unwrap()) as Arc<dyn JobStore>,
        );
        let (handler, mut starts, _) = scripted();
        let id = a.enqueue(new_job("o/r#1"), now_ms()).await.unwrap();
        // Heartbeats every five minutes: only the signal can bring the stop within the test.
        let config = PoolConfig {
            lease: Duration::from_secs(600),
            heartbeat: Duration::from_secs(300),
            ..pool_config(1)
        };
        let pool = WorkerPool::start(a.clone(), handler, config);
        let mut events = pool.subscribe();
        let started = next_start(&mut starts).await;
        assert_eq!(started.job.id, id);
        let cancellation = b.cancel("o/r#1", &stop_by("alice"), now_ms()).await.unwrap();
        assert_eq!(cancellation.stopping, [id]);
        within(started.control.token().cancelled()).await;
        assert_eq!(
            started.control.stop_cause(),
            Some(StopCause::Requested(stop_by("alice")))
        );
        assert_eq!(end_of(&mut events, id).await, EndOutcome::Finished(JobState::Cancelled));
        pool.shutdown(Duration::from_secs(5)).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_replica_leads_at_a_time_and_another_takes_over_when_it_goes() {
        let Some(server) = server().await else { return };
        let (a, b) = (
            PgStore::connect(&server.url()).await.unwrap(),
            PgStore::connect(&server.url()).await.unwrap(),
        );
        let leader = a.lead("scheduler").await.unwrap().unwrap();
        assert!(b.lead("scheduler").await.unwrap().is_none());
        assert!(b.lead("another role").await.unwrap().is_some());
        // Stepping down (a shutdown) frees it.
        drop(leader);
        let leader = take_over(&b).await;
        assert!(a.lead("scheduler").await.unwrap().is_none());
        // The leader's connection dies (a cut network, a killed process): it learns it has lost,
        // and the other replica leads.
        server
            .psql(
                "SELECT pg_terminate_backend(pid) FROM pg_locks \
                 WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid()",
            )
            .unwrap();
        within(leader.lost()).await;
        let _again = take_over(&a).await;
    }

    /// `store`'s leadership, asked for until the last leader's lock is gone (the server frees it
    /// when it sees the connection close).
    async fn take_over(store: &PgStore) -> Leadership {
        within(async {
            loop {
                if let Some(leadership) = store.lead("scheduler").await.unwrap() {
                    return leadership;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn claims_across_replicas_keep_one_running_job_per_key_in_arrival_order() {
        let Some(server) = server().await else { return };
        let mut stores: Vec<Arc<dyn JobStore>> = Vec::new();
        for _ in 0..3 {
            stores.push(Arc::new(PgStore::connect(&server.url()).await.unwrap()));
        }
        const JOBS: usize = 60;
        let mut order: BTreeMap<String, Vec<JobId>> = BTreeMap::new();
        for n in 0..JOBS {
            let key = format!("o/r#{}", n % 6);
            let id = stores[0].enqueue(new_job(&key), T0).await.unwrap();
            order.entry(key).or_default().push(id);
        }
        let running = Arc::new(std::sync::Mutex::new(HashSet::new()));
        let taken = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut claimers = Vec::new();
        for worker in 0..9 {
            let store = Arc::clone(&stores[worker % 3]);
            let (running, taken) = (Arc::clone(&running), Arc::clone(&taken));
            claimers.push(tokio::spawn(async move {
                let mut idle = 0;
                while idle < 50 {
                    let Some(claim) = store.claim(&format!("w{worker}"), LEASE, T0 + 1).await.unwrap() else {
                        idle += 1;
                        tokio::task::yield_now().await;
                        continue;
                    };
                    idle = 0;
                    assert!(
                        running.lock().unwrap().insert(claim.job.key.clone()),
                        "two running jobs of {}",
                        claim.job.key
                    );
                    taken.lock().unwrap().push((claim.job.key.clone(), claim.job.id));
                    // Out of the set before the job ends: nobody can claim its successor sooner.
                    running.lock().unwrap().remove(&claim.job.key);
                    let done = store
                        .finish(&claim.lease, Finish::Succeeded(json!({})), T0 + 2)
                        .await
                        .unwrap();
                    assert_eq!(done, Release::Done);
                }
            }));
        }
        for claimer in claimers {
            within(claimer).await.unwrap();
        }
        let taken = taken.lock().unwrap().clone();
        assert_eq!(taken.len(), JOBS, "every job once");
        for (key, ids) in order {
            let claimed: Vec<JobId> = taken.iter().filter(|(k, _)| *k == key).map(|(_, id)| *id).collect();
            assert_eq!(claimed, ids, "{key}'s jobs in arrival order");
        }
    }
}

/// TLS to the database: used and verified when the URL requires it, refused when the server's
/// certificate cannot be verified, not attempted otherwise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_to_the_database_is_verified_when_the_url_requires_it() {
    let Some(server) = tokio::task::spawn_blocking(pitcrew_tests::postgres::Postgres::start_with_tls)
        .await
        .unwrap()
    else {
        return;
    };
    let ca = server.ca_file().unwrap().display().to_string();
    let url = format!(
        "{}?sslmode=require&sslrootcert={ca}&application_name=pitcrew-tls",
        server.url()
    );
    let store = PgStore::connect(&url).await.unwrap();
    store.enqueue(new_job("o/r#1"), T0).await.unwrap();
    let encrypted = server
        .psql(
            "SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) \
             WHERE ssl AND application_name = 'pitcrew-tls'",
        )
        .unwrap();
    assert_ne!(encrypted, "0", "the store's connections are encrypted");
    let plain = server
        .psql(
            "SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) \
             WHERE NOT ssl AND application_name = 'pitcrew-tls'",
        )
        .unwrap();
    assert_eq!(plain, "0");

    // A certificate nothing here trusts is refused: no silent fall back to plain text.
    let error = PgStore::connect(&format!("{}?sslmode=require", server.url()))
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::Open { .. }), "{error}");
    // Without `require`, no TLS is attempted.
    let plain = PgStore::connect(&server.url()).await.unwrap();
    assert_eq!(plain.count_deliveries().await.unwrap(), 0);
    let missing = PgStore::connect(&format!(
        "{}?sslmode=require&sslrootcert=/nonexistent/ca.pem",
        server.url()
    ))
    .await
    .unwrap_err();
    assert!(missing.to_string().contains("/nonexistent/ca.pem"), "{missing}");
}
