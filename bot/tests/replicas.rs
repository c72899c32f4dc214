//! Several `pitcrew serve` processes sharing one PostgreSQL database, as a deployment with replicas
//! runs them: separate data directories, one fake GitHub, git server and scripted model, signed
//! deliveries spread over the replicas. A replica killed (SIGKILL) or frozen (SIGSTOP) past its
//! lease loses its jobs to the others, and nothing is done twice; `@agent stop` reaches the job
//! wherever it runs; the chore schedule fires once, and goes on firing once after its leader dies.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "a failing test should panic")]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pitcrew::jobs::{DeliveryId, Job, JobFilter, JobState, JobStore, Lifecycle, PgStore};
use pitcrew_tests::fake_github::FakeGithub;
use pitcrew_tests::git_server::GitServer;
use pitcrew_tests::postgres::Postgres;
use pitcrew_tests::scenario::{CALC, Comment, calc_pull_request, comment_payload};
use pitcrew_tests::scripted_model::{Reply, Script, ScriptedModel};
use pitcrew_tests::serve_process::ServeProcess;
use pitcrew_tests::server_config::ServerOverrides;
use serde_json::json;

const SECRET: &str = "the replicas' webhook secret";
/// How long a test waits for what it expects; never part of what it asserts.
const WAIT: Duration = Duration::from_secs(240);

/// The shared pieces and the replicas.
struct Cluster {
    postgres: Postgres,
    github: FakeGithub,
    git: GitServer,
    dir: PathBuf,
    replicas: Vec<ServeProcess>,
    /// Each replica's worker name (its leases' owner), in the same order.
    workers: Vec<String>,
}

impl Cluster {
    /// `None` when PostgreSQL is not installed and not required.
    async fn start(name: &str) -> Option<Cluster> {
        let postgres = tokio::task::spawn_blocking(Postgres::start).await.unwrap()?;
        let github = FakeGithub::start();
        let git = GitServer::start_with(github.token_check());
        let dir = std::env::temp_dir().join(format!("pitcrew-replicas-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Some(Cluster {
            postgres,
            github,
            git,
            dir,
            replicas: Vec::new(),
            workers: Vec::new(),
        })
    }

    /// Starts `count` replicas with `settings` (each its own data directory).
    async fn replicas(&mut self, count: usize, settings: impl Fn(ServerOverrides) -> ServerOverrides) {
        let url = self.postgres.url();
        for n in 0..count {
            let data = self.dir.join(format!("data-{n}"));
            let overrides = ServerOverrides::new(&self.github, SECRET, &data)
                .set("server.store", "postgres")
                .set("server.concurrency", "3");
            let args = settings(overrides).args();
            // The database URL in the environment, as a deployment passes secrets.
            let replica = ServeProcess::start(
                Path::new(env!("CARGO_BIN_EXE_pitcrew")),
                &self.dir,
                &args,
                &[("PITCREW_SERVER_DATABASE_URL", &url)],
            )
            .await;
            let worker = worker_of(&replica.log());
            assert!(!replica.log().contains(&url), "the database URL was logged");
            self.workers.push(worker);
            self.replicas.push(replica);
        }
    }

    async fn store(&self) -> PgStore {
        PgStore::connect(&self.postgres.url()).await.unwrap()
    }

    /// Sends `login`'s comment `body` on pull request 7 of `repo` to replica `to`, signed.
    async fn comment(&self, to: usize, repo: &str, login: &str, body: &str, delivery: &str) {
        let comment = self.github.add_issue_comment(repo, 7, login, body);
        let payload = comment_payload(
            repo,
            &self.git.url(repo),
            7,
            &Comment {
                id: comment,
                login,
                user_id: 4242,
                association: "COLLABORATOR",
                body,
            },
            Some(self.github.installation_id()),
        );
        let body = serde_json::to_vec(&payload).unwrap();
        let response = reqwest::Client::new()
            .post(format!("{}/webhook", self.replicas[to].url()))
            .header("X-GitHub-Event", "issue_comment")
            .header("X-GitHub-Delivery", delivery)
            .header(
                "X-Hub-Signature-256",
                pitcrew::server::signature::sign(&secrecy::SecretString::from(SECRET), &body),
            )
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 202, "delivery {delivery} to replica {to}");
    }

    /// The replica running `job` now, once one does.
    async fn runner_of(&self, store: &PgStore, job: impl Fn(&Job) -> bool) -> usize {
        let found = until(|| async {
            let running = running(store).await;
            running
                .iter()
                .filter(|j| job(j))
                .find_map(|j| self.workers.iter().position(|w| Some(w) == j.lease_owner.as_ref()))
        })
        .await;
        found.unwrap_or_else(|| panic!("no replica ran the job:\n{}", self.logs()))
    }

    fn logs(&self) -> String {
        self.replicas
            .iter()
            .enumerate()
            .map(|(n, r)| format!("--- replica {n} ---\n{}", r.log()))
            .collect()
    }
}

/// The jobs running now, on any replica.
async fn running(store: &PgStore) -> Vec<Job> {
    store
        .jobs(&JobFilter {
            state: Some(JobState::Running),
            ..JobFilter::default()
        })
        .await
        .unwrap()
}

/// The worker name a replica's "listening" line gives.
fn worker_of(log: &str) -> String {
    let line = log
        .lines()
        .find(|line| line.contains("pitcrew serve is listening"))
        .unwrap();
    let start = line
        .find("worker=")
        .map(|at| at + "worker=".len())
        .or_else(|| line.find("\"worker\":\"").map(|at| at + "\"worker\":\"".len()))
        .unwrap_or_else(|| panic!("no worker in: {line}"));
    line[start..]
        .trim_start_matches('"')
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != '"' && *c != ',')
        .collect()
}

/// Asks `check` until it answers `Some` (the state it reads lives in other processes, which
/// announce nothing); `None` after [`WAIT`].
async fn until<T, F, Fut>(check: F) -> Option<T>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + WAIT;
    while Instant::now() < deadline {
        if let Some(found) = check().await {
            return Some(found);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

/// A fix of `calc.sh` in three turns (read, edit, report); `slow` holds the edit.
fn fix_script(slow: Duration) -> Script {
    Script::new()
        .turn(Reply::new().tool_call("read_file", json!({"path": "calc.sh"})))
        .turn(
            Reply::new()
                .tool_call(
                    "edit_file",
                    json!({"path": "calc.sh", "old_string": "$(($1 - $2))", "new_string": "$(($1 + $2))"}),
                )
                .chunk_delay(slow),
        )
        .turn(Reply::text("`add` adds now."))
}

/// 30 fixes sent round-robin to three replicas; one replica is killed while it runs jobs. Every job
/// ends once: one check run concluded, one push, one final comment per pull request; no delivery is
/// lost; the killed replica's jobs run again elsewhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_spread_over_three_replicas_end_once_when_one_is_killed() {
    const JOBS: usize = 30;
    let Some(mut cluster) = Cluster::start("killed").await else {
        return;
    };
    let repos: Vec<String> = (0..JOBS).map(|n| format!("acme/calc{n}")).collect();
    let mut routes = Vec::new();
    for (n, repo) in repos.iter().enumerate() {
        calc_pull_request(&cluster.git, &cluster.github, repo, 7).unwrap();
        routes.push((format!("fix-task-{n:02}"), fix_script(Duration::from_millis(400))));
    }
    let model = ScriptedModel::start_replayed(routes);
    cluster
        .replicas(3, |settings| settings.model(&model).set("server.lease_ttl", "3s"))
        .await;
    for (n, repo) in repos.iter().enumerate() {
        let body = format!("@agent fix fix-task-{n:02}: make add add");
        cluster
            .comment(n % 3, repo, "alice", &body, &format!("delivery-{n}"))
            .await;
    }

    // Replica 0 dies while it runs a job.
    let store = cluster.store().await;
    let victim = cluster.workers[0].clone();
    until(|| async {
        let running = running(&store).await;
        running
            .iter()
            .any(|job| job.lease_owner.as_deref() == Some(victim.as_str()))
            .then_some(())
    })
    .await
    .unwrap_or_else(|| panic!("replica 0 never ran a job:\n{}", cluster.logs()));
    cluster.replicas[0].kill().await;

    let ended = until(|| async {
        let counts = store.count_by_state().await.unwrap();
        let over: u64 = [JobState::Succeeded, JobState::Failed, JobState::Cancelled]
            .iter()
            .map(|state| counts[state])
            .sum();
        (over == JOBS as u64).then_some(())
    })
    .await;
    if ended.is_none() {
        let jobs = store.jobs(&JobFilter::default()).await.unwrap();
        let states: Vec<_> = jobs
            .iter()
            .filter(|job| !job.state.is_final())
            .map(|job| {
                (
                    job.id,
                    job.state,
                    job.attempts,
                    job.lease_owner.clone(),
                    job.lease_expires_at,
                )
            })
            .collect();
        let counts = store.count_by_state().await.unwrap();
        panic!("not every job ended: {counts:?} {states:?}\n{}", cluster.logs());
    }

    let jobs = store
        .jobs(&JobFilter {
            limit: 1000,
            ..JobFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(jobs.len(), JOBS, "one job per delivery");
    let mut retried = 0;
    for job in &jobs {
        assert_eq!(job.state, JobState::Succeeded, "{}: {:?}", job.key, job.error);
        let events = store.events(job.id).await.unwrap();
        if events.iter().any(|e| e.kind == "interrupted") {
            retried += 1;
            assert!(job.attempts >= 2, "{job:?}");
        }
        let finished = events
            .iter()
            .filter(|e| matches!(e.record(), Some(Lifecycle::Finished { .. })))
            .count();
        assert_eq!(finished, 1, "{}: {events:#?}", job.key);
    }
    assert!(retried >= 1, "the killed replica's jobs ran again elsewhere");
    for n in 0..JOBS {
        let delivery = store
            .delivery(&DeliveryId(format!("delivery-{n}")))
            .await
            .unwrap()
            .unwrap();
        assert!(delivery.processed_at.is_some(), "delivery {n} was never handled");
    }
    assert!(store.unprocessed_deliveries(10).await.unwrap().is_empty());

    let bot = cluster.github.bot_login();
    let pushes = cluster.git.pushes();
    for repo in &repos {
        let runs: Vec<_> = cluster
            .github
            .check_runs()
            .into_iter()
            .filter(|run| run.name == "pitcrew" && run.repo == *repo)
            .collect();
        assert_eq!(runs.len(), 1, "{repo}: {runs:#?}");
        assert_eq!(runs[0].conclusion.as_deref(), Some("success"), "{repo}");
        let progress: Vec<_> = cluster
            .github
            .comments_on(repo, 7)
            .into_iter()
            .filter(|c| c.user == bot && c.body.starts_with("<!-- pitcrew:job="))
            .collect();
        assert_eq!(progress.len(), 1, "{repo}: {progress:#?}");
        assert!(
            !progress[0].body.contains("this comment updates as I go"),
            "{repo}: {}",
            progress[0].body
        );
        let to_docs = pushes
            .iter()
            .filter(|push| push.repo == *repo && push.updates.iter().any(|u| u.name == "refs/heads/docs"))
            .count();
        assert_eq!(to_docs, 1, "{repo}: one push");
        assert_eq!(
            cluster.git.show(repo, "refs/heads/docs", "calc.sh").unwrap(),
            CALC.replace(" - ", " + ")
        );
    }
    cluster.github.assert_no_violations();
    for replica in cluster.replicas.drain(1..) {
        let log = replica.log();
        assert!(replica.stop().await.success(), "{log}");
    }
}

/// A replica frozen (SIGSTOP) past its lease while its job waits for the model's last answer —
/// about to push — and then thawed (SIGCONT): its job has been run by another replica meanwhile,
/// and it pushes nothing and writes nothing to GitHub.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_frozen_past_its_lease_pushes_and_reports_nothing_when_it_wakes() {
    let Some(mut cluster) = Cluster::start("frozen").await else {
        return;
    };
    let repo = "acme/calc";
    calc_pull_request(&cluster.git, &cluster.github, repo, 7).unwrap();
    // The last answer comes slowly: the replica is frozen while it waits for it.
    let script = Script::new()
        .turn(Reply::new().tool_call("read_file", json!({"path": "calc.sh"})))
        .turn(Reply::new().tool_call(
            "edit_file",
            json!({"path": "calc.sh", "old_string": "$(($1 - $2))", "new_string": "$(($1 + $2))"}),
        ))
        .turn(Reply::text("`add` adds now.").chunk_delay(Duration::from_millis(1500)));
    let model = ScriptedModel::start_replayed(vec![("fix-task-frozen".to_owned(), script)]);
    cluster
        .replicas(3, |settings| settings.model(&model).set("server.lease_ttl", "3s"))
        .await;
    cluster
        .comment(
            0,
            repo,
            "alice",
            "@agent fix fix-task-frozen: make add add",
            "delivery-frozen",
        )
        .await;

    // The first attempt asks for its last answer.
    until(|| async { (model.requests().len() >= 3).then_some(()) })
        .await
        .unwrap_or_else(|| panic!("the job never got to its last turn:\n{}", cluster.logs()));
    let store = cluster.store().await;
    let frozen = cluster.runner_of(&store, |_| true).await;
    cluster.replicas[frozen].signal("STOP");

    // Another replica takes the job over once the lease has run out, and finishes it.
    let done = until(|| async {
        let jobs = store.jobs(&JobFilter::default()).await.unwrap();
        let job = jobs.first()?;
        job.state.is_final().then(|| job.clone())
    })
    .await
    .unwrap_or_else(|| panic!("the job never ended:\n{}", cluster.logs()));
    assert_eq!(done.state, JobState::Succeeded, "{:?}", done.error);
    assert_eq!(done.attempts, 2);
    let writes_before = github_writes(&cluster.github);
    let pushes_before = cluster.git.pushes().len();
    assert_eq!(pushes_before, 1, "{:#?}", cluster.github.comments_on(repo, 7));

    // Thawed, the frozen replica finds its lease gone and stops without acting.
    cluster.replicas[frozen].signal("CONT");
    let stopped = cluster.replicas[frozen]
        .wait_for_log("job ended", Duration::from_secs(60))
        .await;
    assert!(stopped, "{}", cluster.replicas[frozen].log());
    let log = cluster.replicas[frozen].log();
    assert!(log.contains("LeaseLost"), "{log}");
    assert_eq!(cluster.git.pushes().len(), 1, "{:#?}", cluster.git.pushes());
    assert_eq!(github_writes(&cluster.github), writes_before, "{log}");
    assert_eq!(
        cluster.git.show(repo, "refs/heads/docs", "calc.sh").unwrap(),
        CALC.replace(" - ", " + ")
    );
    cluster.github.assert_no_violations();
}

/// What the bot wrote to GitHub: every request but reads.
fn github_writes(github: &FakeGithub) -> Vec<String> {
    github
        .requests()
        .into_iter()
        .filter(|request| request.method != "GET")
        .map(|request| format!("{} {}", request.method, request.path))
        .collect()
}

/// `@agent stop` sent to one replica stops the job another replica runs, at once (heartbeats are
/// minutes apart here: only the signal between replicas can bring it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_sent_to_one_replica_stops_the_job_running_on_another() {
    let Some(mut cluster) = Cluster::start("stop").await else {
        return;
    };
    let repo = "acme/calc";
    calc_pull_request(&cluster.git, &cluster.github, repo, 7).unwrap();
    let model = ScriptedModel::start_replayed(vec![("fix-task-stop".to_owned(), fix_script(Duration::from_secs(600)))]);
    cluster
        .replicas(2, |settings| settings.model(&model).set("server.lease_ttl", "10m"))
        .await;
    cluster
        .comment(
            0,
            repo,
            "alice",
            "@agent fix fix-task-stop: make add add",
            "delivery-fix",
        )
        .await;
    let store = cluster.store().await;
    let runner = cluster.runner_of(&store, |_| true).await;
    until(|| async { (!model.requests().is_empty()).then_some(()) })
        .await
        .unwrap();
    let other = 1 - runner;
    cluster
        .comment(other, repo, "alice", "@agent stop", "delivery-stop")
        .await;
    let job = until(|| async {
        let jobs = store.jobs(&JobFilter::default()).await.unwrap();
        let job = jobs.first()?;
        job.state.is_final().then(|| job.clone())
    })
    .await
    .unwrap_or_else(|| panic!("the job was not stopped:\n{}", cluster.logs()));
    assert_eq!(job.state, JobState::Cancelled, "{job:?}");
    assert_eq!(job.error.as_deref(), Some("stopped by @alice"));
    assert_eq!(job.attempts, 1);
    assert!(cluster.git.pushes().is_empty());
    cluster.github.assert_no_violations();
}

/// Three replicas run the chore schedules one at a time: a due schedule fires once; its leader
/// killed, another replica takes the schedules over and the next firing happens once too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_due_schedule_fires_once_and_its_leaders_death_hands_it_over() {
    let Some(mut cluster) = Cluster::start("schedule").await else {
        return;
    };
    let repo = "acme/calc";
    calc_pull_request(&cluster.git, &cluster.github, repo, 7).unwrap();
    cluster.github.add_file(
        repo,
        "main",
        ".github/pitcrew.toml",
        "[chores.deps]\nschedule = \"0 6 * * mon\"\n",
    );
    // Last fired long ago: due at the first look.
    let long_ago = pitcrew::jobs::now_ms() - 30 * 86_400_000;
    let store = cluster.store().await;
    cluster
        .postgres
        .psql(&format!(
            "INSERT INTO schedules (name, last_at) VALUES ('acme/calc:deps', {long_ago})"
        ))
        .unwrap();
    cluster
        .replicas(3, |settings| settings.set("chores.schedules", "true"))
        .await;
    let chores = || async {
        store
            .jobs(&JobFilter {
                key: Some("acme/calc:deps".to_owned()),
                ..JobFilter::default()
            })
            .await
            .unwrap()
    };
    let first = until(|| async {
        let jobs = chores().await;
        (jobs.len() == 1 && jobs[0].state.is_final()).then(|| jobs[0].clone())
    })
    .await
    .unwrap_or_else(|| panic!("the schedule never fired:\n{}", cluster.logs()));
    let leader = cluster
        .replicas
        .iter()
        .position(|r| r.log().contains("this replica runs the chore schedules"))
        .unwrap();
    assert_eq!(
        cluster
            .replicas
            .iter()
            .filter(|r| r.log().contains("this replica runs the chore schedules"))
            .count(),
        1,
        "one leader:\n{}",
        cluster.logs()
    );

    // The leader dies; the schedule comes due again (as next Monday would).
    cluster.replicas[leader].kill().await;
    cluster
        .postgres
        .psql(&format!(
            "UPDATE schedules SET last_at = {long_ago} WHERE name = 'acme/calc:deps'"
        ))
        .unwrap();
    let second = until(|| async {
        let jobs = chores().await;
        (jobs.len() >= 2).then(|| jobs.clone())
    })
    .await
    .unwrap_or_else(|| panic!("no replica took the schedules over:\n{}", cluster.logs()));
    assert_eq!(second.len(), 2, "fired once more: {second:#?}");
    assert_ne!(second[0].id, first.id);
    let mark = store.schedule_mark("acme/calc:deps").await.unwrap().unwrap();
    assert!(mark > long_ago, "the firing moved the mark");
    let leaders = cluster
        .replicas
        .iter()
        .enumerate()
        .filter(|(n, r)| *n != leader && r.log().contains("this replica runs the chore schedules"))
        .count();
    assert_eq!(leaders, 1, "{}", cluster.logs());
}
