//! The chore scheduler against the fake GitHub (the App's installations, their repositories, each
//! repository's `.github/pitcrew.toml`) and a real SQLite job store, with the clock in the test's
//! hands: a schedule counts from when it is first seen, fires once when it comes due in its time
//! zone, is skipped while its chore still runs, and survives a restart. A rule group's schedule
//! fires on its own, for that group only, and counts only its own group's chores as busy.

use std::time::Duration;

use jiff::Timestamp;
use pitcrew::github::{AppAuth, AppCredentials, ClientOptions};
use pitcrew::intake::scheduler::{Cache, run_once};
use pitcrew::jobs::{Finish, JobStore, SqliteStore};
use pitcrew::triggers::{JobKind, JobRequest, JobSource};
use pitcrew_tests::fake_github::{FakeGithub, Repo};
use std::sync::Arc;

fn at(text: &str) -> Timestamp {
    text.parse().unwrap()
}

/// The App's authentication against `github`, as `pitcrew serve` makes it.
pub(crate) fn app(github: &FakeGithub) -> Arc<AppAuth> {
    let credentials = AppCredentials::load(github.app_id(), &FakeGithub::test_private_key_path()).unwrap();
    Arc::new(AppAuth::new(&github.url().parse().unwrap(), credentials, ClientOptions::default()).unwrap())
}

#[tokio::test]
async fn a_weekly_schedule_fires_once_in_its_time_zone_and_waits_for_its_chore() {
    let github = FakeGithub::start();
    for name in ["acme/calc", "acme/quiet", "acme/broken"] {
        github.add_repo(Repo::new(name).default_branch("main"));
    }
    // Mondays at 06:00 in Berlin (05:00 UTC in winter).
    github.add_file(
        "acme/calc",
        "main",
        ".github/pitcrew.toml",
        "[chores.deps]\nschedule = \"0 6 * * mon\"\ntimezone = \"Europe/Berlin\"\n",
    );
    github.add_file(
        "acme/broken",
        "main",
        ".github/pitcrew.toml",
        "[chores.deps]\nschedule = \"every monday\"\n",
    );
    let data = tempfile::tempdir().unwrap();
    let store: Arc<dyn JobStore> = Arc::new(SqliteStore::open(data.path()).unwrap());
    let app = app(&github);
    let mut cache = Cache::default();

    // Sunday: first seen, nothing fires for the past.
    let tick = run_once(&app, store.as_ref(), &mut cache, at("2026-11-29T12:00:00Z"), 3).await;
    assert_eq!(tick.first_seen, ["acme/calc"]);
    assert!(tick.queued.is_empty() && tick.problems.is_empty(), "{tick:?}");
    // 05:59 in Berlin: not yet.
    let tick = run_once(&app, store.as_ref(), &mut cache, at("2026-11-30T04:59:00Z"), 3).await;
    assert!(tick.queued.is_empty() && tick.first_seen.is_empty(), "{tick:?}");
    // 06:00 in Berlin: the chore is queued, once; what was read four minutes ago is reused.
    let reads = github.requests_to("repos/get-content").len();
    assert!(reads >= 3, "each repository's configuration was read: {reads}");
    let tick = run_once(&app, store.as_ref(), &mut cache, at("2026-11-30T05:00:30Z"), 3).await;
    assert_eq!(tick.queued.len(), 1, "{tick:?}");
    let (repo, id) = tick.queued[0].clone();
    assert_eq!(repo, "acme/calc");
    let job = store.job(id).await.unwrap().unwrap();
    assert_eq!((job.kind.as_str(), job.key.as_str()), ("chore", "acme/calc:deps"));
    let request: JobRequest = serde_json::from_value(job.request.clone()).unwrap();
    assert!(matches!(request.kind, JobKind::Chore(_)));
    assert_eq!(
        request.source,
        JobSource::Schedule {
            schedule: "0 6 * * mon".into(),
            group: None,
        }
    );
    assert_eq!(request.installation_id.map(|id| id.0), Some(github.installation_id()));
    assert_eq!(request.repo.default_branch, "main");
    let tick = run_once(&app, store.as_ref(), &mut cache, at("2026-11-30T05:01:00Z"), 3).await;
    assert!(tick.queued.is_empty(), "{tick:?}");
    assert_eq!(
        github.requests_to("repos/get-content").len(),
        reads,
        "schedules are reread every ten minutes"
    );

    // A week later the first chore is still queued: this firing is skipped.
    let tick = run_once(&app, store.as_ref(), &mut cache, at("2026-12-07T05:00:00Z"), 3).await;
    assert_eq!(
        (tick.queued.len(), tick.skipped.as_slice()),
        (0, &["acme/calc".to_owned()][..])
    );

    // The chore ends; after a restart (a new store on the same directory) the next Monday fires.
    let claim = store
        .claim(
            "worker",
            Duration::from_secs(60),
            at("2026-12-07T05:00:01Z").as_millisecond(),
        )
        .await
        .unwrap()
        .unwrap();
    store
        .finish(
            &claim.lease,
            Finish::Succeeded(serde_json::json!({})),
            at("2026-12-07T05:10:00Z").as_millisecond(),
        )
        .await
        .unwrap();
    drop(store);
    let store: Arc<dyn JobStore> = Arc::new(SqliteStore::open(data.path()).unwrap());
    let mut cache = Cache::default();
    let tick = run_once(&app, store.as_ref(), &mut cache, at("2026-12-14T04:00:00Z"), 3).await;
    assert!(tick.queued.is_empty(), "{tick:?}");
    let tick = run_once(&app, store.as_ref(), &mut cache, at("2026-12-14T05:00:00Z"), 3).await;
    assert_eq!(tick.queued.len(), 1, "{tick:?}");
    github.assert_no_violations();
}

#[tokio::test]
async fn a_rule_groups_schedule_fires_its_own_chore_beside_the_repositorys() {
    let github = FakeGithub::start();
    github.add_repo(Repo::new("acme/calc").default_branch("main"));
    // The repository's chore on Mondays at 06:00 UTC; the aws group's on the first of the month at
    // 06:00, whatever day that is.
    github.add_file(
        "acme/calc",
        "main",
        ".github/pitcrew.toml",
        "[chores.deps]\nschedule = \"0 6 * * mon\"\n\n\
         [[chores.deps.rules]]\nmatch = [\"aws-*\"]\ngroup = \"aws\"\nschedule = \"0 6 1 * *\"\n",
    );
    let data = tempfile::tempdir().unwrap();
    let store: Arc<dyn JobStore> = Arc::new(SqliteStore::open(data.path()).unwrap());
    let app = app(&github);
    let mut cache = Cache::default();
    let sources = |ids: &[(String, pitcrew::jobs::JobId)]| {
        let store = Arc::clone(&store);
        let ids = ids.to_vec();
        async move {
            let mut out = Vec::new();
            for (label, id) in ids {
                let job = store.job(id).await.unwrap().unwrap();
                assert_eq!(job.key, "acme/calc:deps");
                let request: JobRequest = serde_json::from_value(job.request).unwrap();
                out.push((label, request.source));
            }
            out
        }
    };

    let tick = run_once(&app, store.as_ref(), &mut cache, at("2026-05-20T12:00:00Z"), 3).await;
    assert_eq!(tick.first_seen, ["acme/calc", "acme/calc (group aws)"], "{tick:?}");
    // Monday 1 June 2026, 06:00: both come due in the same minute, and both are queued: the
    // group's chore is not the repository's (which leaves the aws group alone).
    let tick = run_once(&app, store.as_ref(), &mut cache, at("2026-06-01T06:00:10Z"), 3).await;
    assert!(tick.skipped.is_empty() && tick.problems.is_empty(), "{tick:?}");
    assert_eq!(
        sources(&tick.queued).await,
        [
            (
                "acme/calc".to_owned(),
                JobSource::Schedule {
                    schedule: "0 6 * * mon".into(),
                    group: None
                }
            ),
            (
                "acme/calc (group aws)".to_owned(),
                JobSource::Schedule {
                    schedule: "0 6 1 * *".into(),
                    group: Some("aws".into())
                }
            ),
        ]
    );
    // The repository's chore runs and ends; the group's is still queued.
    let claim = store
        .claim(
            "worker",
            Duration::from_secs(60),
            at("2026-06-01T06:00:20Z").as_millisecond(),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(claim.job.id, tick.queued[0].1, "the older job runs first");
    store
        .finish(
            &claim.lease,
            Finish::Succeeded(serde_json::json!({})),
            at("2026-06-01T06:10:00Z").as_millisecond(),
        )
        .await
        .unwrap();
    // The next Monday the repository's fires and is queued: the group's queued chore does not do
    // its work.
    let tick = run_once(&app, store.as_ref(), &mut cache, at("2026-06-08T06:00:10Z"), 3).await;
    assert!(tick.skipped.is_empty(), "{tick:?}");
    assert_eq!(
        sources(&tick.queued).await,
        [(
            "acme/calc".to_owned(),
            JobSource::Schedule {
                schedule: "0 6 * * mon".into(),
                group: None
            }
        )]
    );
    // 1 July: each finds its own chore still queued, and is skipped.
    let tick = run_once(&app, store.as_ref(), &mut cache, at("2026-07-01T06:00:10Z"), 3).await;
    assert!(tick.queued.is_empty(), "{tick:?}");
    assert_eq!(tick.skipped, ["acme/calc", "acme/calc (group aws)"], "{tick:?}");
    github.assert_no_violations();
}
