//! `pitcrew serve` end to end: signed deliveries over real HTTP on 127.0.0.1 (real payloads from
//! `../shared/fixtures/webhooks`), the SQLite store in a temporary data directory, the fake GitHub
//! for every API call, and a job handler that records what it is given and can be held until
//! released. Everything waits on events (channels, the fake's state, the pool's job ends).

#![expect(clippy::unwrap_used, reason = "tests")]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pitcrew::config::{Config, LoadOptions};
use pitcrew::jobs::{
    DeliveryClaim, DeliveryId, EndOutcome, Finish, Job, JobControl, JobEnd, JobFilter, JobHandler, JobId, JobState,
    JobStore, SqliteStore, StopCause,
};
use pitcrew::report::replies;
use pitcrew::server::signature::sign;
use pitcrew::server::{RunningServer, ServeError, Server, ServerOptions};
use pitcrew::triggers::{JobKind, JobRequest};
use pitcrew_tests::fake_github::openapi::fixtures_root;
use pitcrew_tests::fake_github::{FakeGithub, Issue, Permission, ReactionTarget, Repo};
use pitcrew_tests::server_config::ServerOverrides;
use secrecy::SecretString;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::sync::{Semaphore, broadcast, mpsc};

const REPO: &str = "ehuss/triagebot-test";
const PR: u64 = 111;
const SECRET: &str = "a webhook secret for the tests";
const TRIGGER: &str = "@agent";
const WAIT: Duration = Duration::from_secs(30);

/// What the test handler was given.
#[derive(Debug)]
struct Started {
    job: JobId,
    request: JobRequest,
}

/// The test's job handler: reports each job it starts, and while `hold` is set, waits for a
/// release (or its token) before returning.
struct Recorder {
    started: mpsc::UnboundedSender<Started>,
    hold: AtomicBool,
    release: Semaphore,
}

fn handler(recorder: Arc<Recorder>) -> JobHandler {
    Arc::new(move |job: Job, control: JobControl| {
        let recorder = Arc::clone(&recorder);
        Box::pin(async move {
            let request: JobRequest = serde_json::from_value(job.request.clone()).unwrap();
            let _ = recorder.started.send(Started { job: job.id, request });
            if recorder.hold.load(Ordering::SeqCst) {
                tokio::select! {
                    permit = recorder.release.acquire() => permit.unwrap().forget(),
                    () = control.token().cancelled() => {
                        return match control.stop_cause() {
                            Some(StopCause::Requested(request)) => Finish::Cancelled(request.to_string()),
                            _ => Finish::Failed("interrupted".to_owned()),
                        };
                    }
                }
            }
            Finish::Succeeded(json!({ "done": true }))
        })
    })
}

struct Harness {
    github: FakeGithub,
    data: TempDir,
    recorder: Arc<Recorder>,
    started: mpsc::UnboundedReceiver<Started>,
    server: Option<RunningServer>,
    http: reqwest::Client,
}

fn fake_github() -> FakeGithub {
    FakeGithub::builder()
        .repo(Repo::new(REPO))
        .permission(REPO, "alice", Permission::Write)
        .permission(REPO, "mallory", Permission::Read)
        .issue(
            REPO,
            Issue::pull_request(
                PR,
                "Fix the parser",
                ("fix-parser", "6dcb09b5b57875f334f61aebed695e2e4193db5e"),
                ("main", "e7fdf7640066d71ad16a86fbcbb9c6a10a18af4f"),
            ),
        )
        .start()
}

async fn start_server(
    github: &FakeGithub,
    data_dir: &std::path::Path,
    recorder: &Arc<Recorder>,
) -> Result<RunningServer, ServeError> {
    // No job here talks to a model.
    start_server_with(ServerOverrides::new(github, SECRET, data_dir), recorder).await
}

fn config(github: &FakeGithub, data_dir: &std::path::Path) -> Config {
    load(&ServerOverrides::new(github, SECRET, data_dir))
}

fn load(overrides: &ServerOverrides) -> Config {
    Config::load(LoadOptions {
        config_path: None,
        env: &BTreeMap::new(),
        overrides: &overrides.build(),
    })
    .unwrap()
}

/// A server with the test settings `overrides` holds.
async fn start_server_with(overrides: ServerOverrides, recorder: &Arc<Recorder>) -> Result<RunningServer, ServeError> {
    Server::start(ServerOptions {
        config: load(&overrides),
        handler: handler(Arc::clone(recorder)),
        listener: Some(std::net::TcpListener::bind("127.0.0.1:0").unwrap()),
        github: None,
        metrics: None,
        copies: None,
        instance: None,
    })
    .await
}

/// The real pull request comment delivery (triagebot's recording), as `login` saying `body`.
fn comment_payload(github: &FakeGithub, comment_id: u64, login: &str, association: &str, body: &str) -> Vec<u8> {
    let path =
        fixtures_root().join("webhooks/issue_comment/rust-lang-triagebot/07-webhook-issue111_comment_created.json");
    let recording: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut payload = recording["payload"].clone();
    assert_eq!(payload["repository"]["full_name"], REPO);
    assert_eq!(payload["issue"]["number"], PR);
    payload["comment"]["id"] = json!(comment_id);
    payload["comment"]["body"] = json!(body);
    payload["comment"]["user"]["login"] = json!(login);
    payload["comment"]["author_association"] = json!(association);
    payload["sender"]["login"] = json!(login);
    payload["installation"] =
        json!({ "id": github.installation_id(), "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==" });
    serde_json::to_vec(&payload).unwrap()
}

fn fixture(relative: &str) -> Vec<u8> {
    std::fs::read(fixtures_root().join("webhooks").join(relative)).unwrap()
}

impl Harness {
    async fn start() -> Harness {
        let github = fake_github();
        let data = TempDir::new().unwrap();
        let (tx, started) = mpsc::unbounded_channel();
        let recorder = Arc::new(Recorder {
            started: tx,
            hold: AtomicBool::new(false),
            release: Semaphore::new(0),
        });
        let server = start_server(&github, data.path(), &recorder).await.unwrap();
        Harness {
            github,
            data,
            recorder,
            started,
            server: Some(server),
            http: reqwest::Client::new(),
        }
    }

    fn server(&self) -> &RunningServer {
        self.server.as_ref().unwrap()
    }

    fn store(&self) -> Arc<dyn JobStore> {
        Arc::clone(self.server().store())
    }

    /// Waits until the dispatcher has dealt with every stored delivery, woken each time it is done
    /// with one.
    async fn deliveries_dealt_with(&self) {
        let mut settled = self.server().deliveries_settled();
        let store = self.store();
        let dealt_with = async {
            loop {
                settled.borrow_and_update();
                if store.unprocessed_deliveries(10).await.unwrap().is_empty() {
                    return;
                }
                settled.changed().await.expect("the dispatcher stopped");
            }
        };
        tokio::time::timeout(WAIT, dealt_with)
            .await
            .expect("the deliveries were never dispatched");
    }

    fn job_ends(&self) -> broadcast::Receiver<JobEnd> {
        self.server().pool().subscribe()
    }

    /// Posts a delivery signed with the right secret (or `signature`, when given).
    async fn post(&self, event: &str, delivery: &str, body: Vec<u8>, signature: Option<String>) -> (u16, String) {
        super::webhook::post(&self.server().url(), SECRET, event, delivery, body, signature).await
    }

    /// A new comment on the pull request by `login`, delivered; returns the comment's id.
    async fn comment(&self, delivery: &str, login: &str, association: &str, body: &str) -> u64 {
        let id = self.github.add_issue_comment(REPO, PR, login, body);
        let payload = comment_payload(&self.github, id, login, association, body);
        let (status, text) = self.post("issue_comment", delivery, payload, None).await;
        assert_eq!(status, 202, "{text}");
        id
    }

    async fn next_start(&mut self) -> Started {
        tokio::time::timeout(WAIT, self.started.recv())
            .await
            .expect("no job started in time")
            .unwrap()
    }

    /// Waits until the bot has said exactly `text` on the pull request.
    async fn wait_for_reply(&self, text: &str) {
        let bot = self.github.bot_login();
        let said = self
            .github
            .wait_until(WAIT, |state| {
                state
                    .comments_on(REPO, PR)
                    .iter()
                    .any(|c| c.user == bot && c.body == text)
            })
            .await;
        assert!(said, "the bot never said {text:?}; it said {:?}", self.bot_comments());
    }

    fn bot_comments(&self) -> Vec<String> {
        let bot = self.github.bot_login();
        self.github
            .comments_on(REPO, PR)
            .into_iter()
            .filter(|c| c.user == bot)
            .map(|c| c.body)
            .collect()
    }

    async fn get(&self, path: &str) -> (u16, String, String) {
        let response = self
            .http
            .get(format!("{}{path}", self.server().url()))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        (status, content_type, response.text().await.unwrap())
    }
}

async fn wait_for_end(ends: &mut broadcast::Receiver<JobEnd>, job: JobId) -> EndOutcome {
    tokio::time::timeout(WAIT, async {
        loop {
            let end = ends.recv().await.unwrap();
            if end.job == job {
                return end.outcome;
            }
        }
    })
    .await
    .expect("the job did not end in time")
}

/// `name{labels} value` lines of a scrape, as a map from the series to its value.
fn parse_metrics(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').unwrap();
            (series.to_owned(), value.parse().unwrap())
        })
        .collect()
}

#[tokio::test]
async fn a_fix_request_is_acknowledged_run_once_and_counted() {
    let mut h = Harness::start().await;
    let mut ends = h.job_ends();
    let comment = h
        .comment("d-fix-1", "alice", "COLLABORATOR", "@agent fix the test")
        .await;

    let started = h.next_start().await;
    assert_eq!(started.request.kind, JobKind::Fix);
    assert_eq!(started.request.instructions.as_deref(), Some("the test"));
    assert_eq!(started.request.subject.number().map(|n| n.0), Some(PR));
    assert_eq!(started.request.requested_by.login.as_str(), "alice");
    assert_eq!(started.request.delivery_id.as_deref(), Some("d-fix-1"));
    assert_eq!(
        wait_for_end(&mut ends, started.job).await,
        EndOutcome::Finished(JobState::Succeeded)
    );
    let bot = h.github.bot_login();
    let eyes = h.github.state(|state| {
        state
            .reactions
            .iter()
            .filter(|r| r.target == ReactionTarget::IssueComment(comment) && r.content == "eyes" && r.user == bot)
            .count()
    });
    assert_eq!(eyes, 1);
    assert!(h.bot_comments().is_empty(), "{:?}", h.bot_comments());

    // A redelivery of the same id is recognised, and nothing runs again.
    let payload = comment_payload(&h.github, comment, "alice", "COLLABORATOR", "@agent fix the test");
    let (status, text) = h.post("issue_comment", "d-fix-1", payload, None).await;
    assert_eq!(
        (status, serde_json::from_str::<Value>(&text).unwrap()),
        (200, json!({ "duplicate": true }))
    );
    let store = h.store();
    assert_eq!(store.count_deliveries().await.unwrap(), 1);
    let jobs = store.jobs(&JobFilter::default()).await.unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].delivery, Some(DeliveryId("d-fix-1".to_owned())));
    assert!(store.unprocessed_deliveries(10).await.unwrap().is_empty());
    assert!(h.started.try_recv().is_err(), "the handler ran twice");

    let (status, _, body) = h.get("/healthz").await;
    assert_eq!((status, body.as_str()), (200, "ok"));
    let (status, content_type, text) = h.get("/metrics").await;
    assert_eq!(status, 200);
    assert!(content_type.starts_with("text/plain; version=0.0.4"), "{content_type}");
    let series = parse_metrics(&text);
    assert_eq!(
        series[r#"pitcrew_webhook_deliveries_total{event="issue_comment",outcome="accepted"}"#],
        1.0
    );
    assert_eq!(
        series[r#"pitcrew_webhook_deliveries_total{event="issue_comment",outcome="duplicate"}"#],
        1.0
    );
    assert_eq!(series[r#"pitcrew_jobs{state="succeeded"}"#], 1.0);
    for state in JobState::ALL {
        assert!(
            series.contains_key(&format!("pitcrew_jobs{{state=\"{state}\"}}")),
            "{text}"
        );
    }
    assert!(
        series[r#"pitcrew_github_api_calls_total{class="2xx"}"#] >= 2.0,
        "{text}"
    );
    assert!(series.contains_key("pitcrew_github_rate_limit_remaining"), "{text}");
    h.github.assert_no_violations();
}

#[tokio::test]
async fn refused_and_ignored_requests_are_answered_and_never_stored() {
    let h = Harness::start().await;
    let body = comment_payload(&h.github, 1, "alice", "COLLABORATOR", "@agent fix it");

    let wrong = sign(&SecretString::from("not the secret"), &body);
    let (status, text) = h.post("issue_comment", "d-bad-sig", body.clone(), Some(wrong)).await;
    assert_eq!(status, 401, "{text}");
    assert!(text.contains("signature does not match the payload"), "{text}");
    let (status, _) = h
        .post("issue_comment", "d-no-sig", body, Some("sha256=".to_owned()))
        .await;
    assert_eq!(status, 401);

    let (status, text) = h
        .post("issue_comment", "d-huge", vec![b' '; 26 * 1024 * 1024], None)
        .await;
    assert_eq!(status, 413, "{text}");

    let (status, text) = h
        .post(
            "issue_comment",
            "d-malformed",
            b"{\"action\": \"created\",".to_vec(),
            None,
        )
        .await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("malformed JSON"), "{text}");

    let (status, text) = h.post("push", "d-push", fixture("push/payload.json"), None).await;
    assert_eq!(status, 202);
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({ "ignored": "push" })
    );

    let ping = fixture("ping/payload.json");
    let zen = serde_json::from_slice::<Value>(&ping).unwrap()["zen"].clone();
    let (status, text) = h.post("ping", "d-ping", ping, None).await;
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({ "ok": true, "zen": zen })
    );

    assert_eq!(h.store().count_deliveries().await.unwrap(), 0);
    let series = parse_metrics(&h.get("/metrics").await.2);
    assert_eq!(
        series[r#"pitcrew_webhook_deliveries_total{event="unverified",outcome="unauthorized"}"#],
        2.0
    );
    assert_eq!(
        series[r#"pitcrew_webhook_deliveries_total{event="unverified",outcome="too_large"}"#],
        1.0
    );
    assert_eq!(
        series[r#"pitcrew_webhook_deliveries_total{event="push",outcome="ignored"}"#],
        1.0
    );
    assert!(h.github.requests().is_empty(), "{:?}", h.github.requests());
}

#[tokio::test]
async fn people_without_write_access_get_a_polite_no_and_nothing_runs() {
    let h = Harness::start().await;
    // NONE cannot have write access: refused without asking GitHub.
    let stranger = h.comment("d-none", "stranger", "NONE", "@agent fix everything").await;
    h.wait_for_reply(&replies::not_permitted("stranger")).await;
    assert!(
        h.github
            .requests_to("repos/get-collaborator-permission-level")
            .is_empty()
    );

    // A member may have write access; GitHub says read.
    let member = h
        .comment("d-member", "mallory", "MEMBER", "@agent fix everything")
        .await;
    h.wait_for_reply(&replies::not_permitted("mallory")).await;
    let checks = h.github.requests_to("repos/get-collaborator-permission-level");
    assert_eq!(checks.len(), 1);
    assert!(
        checks[0].path.ends_with("/collaborators/mallory/permission"),
        "{}",
        checks[0].path
    );

    let store = h.store();
    assert!(store.jobs(&JobFilter::default()).await.unwrap().is_empty());
    assert!(store.unprocessed_deliveries(10).await.unwrap().is_empty());
    let reactions = h.github.state(|state| {
        state
            .reactions
            .iter()
            .filter(|r| {
                [
                    ReactionTarget::IssueComment(stranger),
                    ReactionTarget::IssueComment(member),
                ]
                .contains(&r.target)
            })
            .count()
    });
    assert_eq!(reactions, 0, "a refused request got a reaction");
    h.github.assert_no_violations();
}

#[tokio::test]
async fn a_comment_whose_author_login_is_malformed_is_ignored_without_asking_github() {
    // Regression: an empty `comment.user.login` made pitcrew call `…/collaborators//permission`.
    let h = Harness::start().await;
    for (i, login) in ["", "a--b", "-x"].into_iter().enumerate() {
        // The sender is a real login: only the comment's author is malformed.
        let mut payload: Value = serde_json::from_slice(&comment_payload(
            &h.github,
            900 + i as u64,
            login,
            "MEMBER",
            "@agent fix it",
        ))
        .unwrap();
        payload["sender"]["login"] = json!("alice");
        let (status, text) = h
            .post(
                "issue_comment",
                &format!("d-login-{i}"),
                serde_json::to_vec(&payload).unwrap(),
                None,
            )
            .await;
        assert_eq!(status, 202, "{login:?}: {text}");
    }
    h.deliveries_dealt_with().await;
    let store = h.store();
    let asked: Vec<String> = h
        .github
        .requests()
        .iter()
        .map(|r| r.path.clone())
        .filter(|path| path.contains("/collaborators/"))
        .collect();
    assert!(asked.is_empty(), "asked GitHub about {asked:?}");
    assert!(store.jobs(&JobFilter::default()).await.unwrap().is_empty());
    assert!(h.bot_comments().is_empty(), "{:?}", h.bot_comments());
    // A well-formed login on the same pull request is still checked with GitHub.
    h.comment("d-member", "mallory", "MEMBER", "@agent fix everything")
        .await;
    h.wait_for_reply(&replies::not_permitted("mallory")).await;
    let checks = h.github.requests_to("repos/get-collaborator-permission-level");
    assert_eq!(checks.len(), 1);
    assert!(checks[0].path.ends_with("/collaborators/mallory/permission"));
    h.github.assert_no_violations();
}

#[tokio::test]
async fn help_answers_with_the_command_list() {
    let h = Harness::start().await;
    h.comment("d-help", "alice", "OWNER", "@agent help").await;
    h.wait_for_reply(&replies::help(TRIGGER, replies::COMMANDS)).await;
    assert!(h.store().jobs(&JobFilter::default()).await.unwrap().is_empty());
    h.github.assert_no_violations();
}

#[tokio::test]
async fn stop_cancels_the_running_job_at_once() {
    let mut h = Harness::start().await;
    h.recorder.hold.store(true, Ordering::SeqCst);
    let mut ends = h.job_ends();
    h.comment("d-long", "alice", "COLLABORATOR", "@agent fix the flaky test")
        .await;
    let started = h.next_start().await;

    h.comment("d-stop", "alice", "COLLABORATOR", "@agent stop").await;
    assert_eq!(
        wait_for_end(&mut ends, started.job).await,
        EndOutcome::Finished(JobState::Cancelled)
    );
    h.wait_for_reply(&replies::stopped_by(Some("alice"))).await;
    let job = h.store().job(started.job).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Cancelled);
    assert_eq!(job.error.as_deref(), Some("stopped by @alice"));
    h.github.assert_no_violations();
}

#[tokio::test]
async fn a_second_request_on_a_busy_pull_request_waits_its_turn() {
    let mut h = Harness::start().await;
    h.recorder.hold.store(true, Ordering::SeqCst);
    let mut ends = h.job_ends();
    h.comment("d-first", "alice", "COLLABORATOR", "@agent fix the test")
        .await;
    let first = h.next_start().await;

    h.comment("d-second", "alice", "COLLABORATOR", "@agent review").await;
    h.wait_for_reply(&replies::queued(TRIGGER, 1)).await;
    let store = h.store();
    let queued = store
        .jobs(&JobFilter {
            state: Some(JobState::Queued),
            ..JobFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(queued.len(), 1);
    assert_eq!(queued[0].kind, "review");
    assert!(h.started.try_recv().is_err(), "the second job started beside the first");

    h.recorder.release.add_permits(1);
    assert_eq!(
        wait_for_end(&mut ends, first.job).await,
        EndOutcome::Finished(JobState::Succeeded)
    );
    let second = h.next_start().await;
    assert_eq!(second.request.kind, JobKind::Review);
    assert_eq!(second.job, queued[0].id);
    h.recorder.release.add_permits(1);
    assert_eq!(
        wait_for_end(&mut ends, second.job).await,
        EndOutcome::Finished(JobState::Succeeded)
    );
    h.github.assert_no_violations();
}

#[tokio::test]
async fn graceful_shutdown_requeues_a_job_that_does_not_finish() {
    let mut h = Harness::start().await;
    h.recorder.hold.store(true, Ordering::SeqCst);
    h.comment("d-slow", "alice", "COLLABORATOR", "@agent fix the test")
        .await;
    let started = h.next_start().await;
    let url = h.server().url();

    let report = h.server.take().unwrap().shutdown(Duration::ZERO).await;
    assert_eq!(report.requeued, vec![started.job]);
    assert!(report.finished.is_empty());

    // The listener is closed, and the job waits in the store for the next start.
    assert!(h.http.get(format!("{url}/healthz")).send().await.is_err());
    let store = SqliteStore::open(h.data.path()).unwrap();
    let job = store.job(started.job).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Queued);
    h.github.assert_no_violations();
}

#[tokio::test]
async fn a_delivery_stored_before_a_crash_is_dispatched_after_the_restart() {
    let mut h = Harness::start().await;
    // One server per data directory.
    let second = start_server(&h.github, h.data.path(), &h.recorder).await;
    assert!(matches!(second, Err(ServeError::DataDirInUse { .. })), "{second:?}");
    // The store, which holds every payload, is readable by the server's user alone.
    let database = std::fs::metadata(h.data.path().join(pitcrew::jobs::FILE_NAME)).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&database.permissions()) & 0o777,
        0o600
    );

    // The crash: no shutdown. Then what the route had stored before it, undispatched and still
    // claimed for an hour by the process that crashed: the next server on this data directory
    // knows no one else is handling it.
    drop(h.server.take());
    let comment = h
        .github
        .add_issue_comment(REPO, PR, "alice", "@agent explain the parser");
    let payload = comment_payload(&h.github, comment, "alice", "MEMBER", "@agent explain the parser");
    {
        let store = SqliteStore::open(h.data.path()).unwrap();
        store
            .record_delivery(
                &DeliveryId("d-before-crash".to_owned()),
                "issue_comment",
                payload.into(),
                Some(DeliveryClaim {
                    key: format!("{REPO}#{PR}"),
                    worker: "the-process-that-crashed".to_owned(),
                    lease_for: Duration::from_secs(3600),
                }),
                pitcrew::jobs::now_ms(),
            )
            .await
            .unwrap();
    }

    h.server = Some(start_server(&h.github, h.data.path(), &h.recorder).await.unwrap());
    let started = h.next_start().await;
    assert_eq!(started.request.kind, JobKind::Explain);
    assert_eq!(started.request.delivery_id.as_deref(), Some("d-before-crash"));
    let bot = h.github.bot_login();
    assert!(
        h.github
            .wait_until(WAIT, |state| state
                .reactions
                .iter()
                .any(|r| r.target == ReactionTarget::IssueComment(comment) && r.user == bot))
            .await
    );
    h.github.assert_no_violations();
}

#[tokio::test]
async fn a_stopping_server_leaves_the_deliveries_it_could_not_handle_to_the_other_replicas() {
    let mut h = Harness::start().await;
    h.server.take().unwrap().shutdown(Duration::ZERO).await;
    // GitHub unreachable: the delivery is stored, but handling it fails and waits for a retry.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let unreachable = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let overrides = ServerOverrides::new(&h.github, SECRET, h.data.path()).set("github.api_url", unreachable);
    h.server = Some(start_server_with(overrides, &h.recorder).await.unwrap());
    let worker = h.server().pool().worker_name().to_owned();
    let mut settled = h.server().deliveries_settled();
    h.comment("d-unhandled", "alice", "COLLABORATOR", "@agent fix the test")
        .await;
    tokio::time::timeout(WAIT, settled.changed()).await.unwrap().unwrap();
    let store = h.store();
    let pending = store.unprocessed_deliveries(10).await.unwrap();
    assert_eq!(pending.len(), 1, "it waits for its retry");
    let claim = pending[0].claim.clone().unwrap();
    assert_eq!(
        (claim.worker.as_str(), claim.key.as_str()),
        (worker.as_str(), format!("{REPO}#{PR}").as_str()),
        "stored claimed by the server that received it"
    );

    h.server.take().unwrap().shutdown(Duration::ZERO).await;
    let pending = store.unprocessed_deliveries(10).await.unwrap();
    assert_eq!(pending.len(), 1, "kept");
    assert_eq!(pending[0].claim, None, "released: another replica may take it at once");
}

#[tokio::test]
async fn the_status_page_shows_the_app_and_its_queue_and_nothing_private_and_the_webhook_path_is_configurable() {
    let github = fake_github();
    let data = TempDir::new().unwrap();
    let (tx, mut started) = mpsc::unbounded_channel();
    let recorder = Arc::new(Recorder {
        started: tx,
        hold: AtomicBool::new(true),
        release: Semaphore::new(0),
    });
    let overrides =
        ServerOverrides::new(&github, SECRET, data.path()).set("server.webhook_path", "/api/github/webhook");
    let server = start_server_with(overrides, &recorder).await.unwrap();
    let url = server.url();

    // Deliveries go to the configured path, and only there.
    let comment = github.add_issue_comment(REPO, PR, "alice", "@agent fix the parser");
    let payload = comment_payload(&github, comment, "alice", "COLLABORATOR", "@agent fix the parser");
    let (status, _) = super::webhook::post(&url, SECRET, "issue_comment", "d-elsewhere", payload.clone(), None).await;
    assert_eq!(status, 404, "/webhook is not the path any more");
    let api = format!("{url}/api/github");
    let (status, text) = super::webhook::post(&api, SECRET, "issue_comment", "d-status", payload, None).await;
    assert_eq!(status, 202, "{text}");
    tokio::time::timeout(WAIT, started.recv()).await.unwrap().unwrap();

    let response = reqwest::get(format!("{url}/")).await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let content_type = response.headers()["content-type"].to_str().unwrap().to_owned();
    assert_eq!(content_type, "text/html; charset=utf-8");
    let page = response.text().await.unwrap();
    let slug = github.bot_login().trim_end_matches("[bot]").to_owned();
    for shown in [
        format!("pitcrew {}", env!("CARGO_PKG_VERSION")),
        format!("GitHub App: {slug}"),
        "Jobs: 0 queued, 1 running".to_owned(),
        "POST /api/github/webhook".to_owned(),
        "Up for ".to_owned(),
    ] {
        assert!(page.contains(&shown), "{shown:?} not in {page}");
    }
    let key = std::fs::read_to_string(FakeGithub::test_private_key_path()).unwrap();
    let key_line = key.lines().nth(1).unwrap();
    for private in [SECRET, REPO, "alice", "fix the parser", key_line] {
        assert!(!page.contains(private), "{private:?} shown: {page}");
    }

    recorder.release.add_permits(1);
    server.shutdown(Duration::from_secs(10)).await;
    github.assert_no_violations();
}

#[tokio::test]
async fn the_webhook_secret_and_the_app_are_required() {
    let github = fake_github();
    let data = TempDir::new().unwrap();
    let (tx, _rx) = mpsc::unbounded_channel();
    let recorder = Arc::new(Recorder {
        started: tx,
        hold: AtomicBool::new(false),
        release: Semaphore::new(0),
    });
    let mut config = config(&github, data.path());
    config.github.webhook_secret = None;
    let result = Server::start(ServerOptions {
        config: config.clone(),
        handler: handler(Arc::clone(&recorder)),
        listener: None,
        github: None,
        metrics: None,
        copies: None,
        instance: None,
    })
    .await;
    let error = result.unwrap_err();
    assert!(matches!(error, ServeError::MissingWebhookSecret), "{error}");
    assert!(error.to_string().contains("webhook_secret"), "{error}");

    config.github.webhook_secret = Some(SecretString::from(SECRET));
    config.github.app = None;
    let error = Server::start(ServerOptions {
        config,
        handler: handler(recorder),
        listener: None,
        github: None,
        metrics: None,
        copies: None,
        instance: None,
    })
    .await
    .unwrap_err();
    assert!(matches!(error, ServeError::MissingApp), "{error}");
}

#[tokio::test]
async fn the_repository_configuration_decides_the_trigger_word_the_commands_and_who_may_ask() {
    let mut h = Harness::start().await;
    h.github.add_file(
        REPO,
        "main",
        ".github/pitcrew.toml",
        "[triggers]\ntrigger = \"@crew\"\ncommands = [\"fix\"]\nallowed_users = [\"alice\"]\n",
    );
    h.github.set_permission(REPO, "carol", Permission::Admin);

    // The operator's word does nothing here; the repository's does.
    h.comment("d-old-word", "alice", "OWNER", "@agent fix the parser").await;
    h.comment("d-review", "alice", "OWNER", "@crew review").await;
    h.wait_for_reply("`review` is turned off in this repository.").await;
    // Not on the allow list: refused without asking GitHub, whatever the permission.
    h.comment("d-carol", "carol", "OWNER", "@crew fix the parser").await;
    h.wait_for_reply(&replies::not_permitted("carol")).await;
    assert!(
        h.github
            .requests_to("repos/get-collaborator-permission-level")
            .iter()
            .all(|r| !r.path.ends_with("/collaborators/carol/permission"))
    );

    h.comment("d-fix", "alice", "OWNER", "@crew fix the parser").await;
    let started = h.next_start().await;
    assert_eq!(started.request.kind, JobKind::Fix);
    assert_eq!(started.request.instructions.as_deref(), Some("the parser"));
    assert_eq!(started.request.delivery_id.as_deref(), Some("d-fix"));
    // One read of the file served every delivery.
    assert_eq!(h.github.requests_to("repos/get-content").len(), 1);
    let jobs = h.store().jobs(&JobFilter::default()).await.unwrap();
    assert_eq!(jobs.len(), 1, "only @crew fix made a job");
    h.github.assert_no_violations();
}

/// The failures of one commit arrive together (a check run per job, then the workflow run): the
/// first starts a triage, the next queues one behind it (the running one may have looked too
/// early), and the rest find that one queued and add nothing. Nobody asked, so nothing is said and
/// no permission is checked.
#[tokio::test]
async fn the_failures_of_one_commit_queue_at_most_one_more_triage() {
    use pitcrew_tests::scenario::{check_run_payload, workflow_run_payload};

    let mut h = Harness::start().await;
    h.recorder.hold.store(true, Ordering::SeqCst);
    let mut ends = h.job_ends();
    let sha = "6dcb09b5b57875f334f61aebed695e2e4193db5e";
    let clone_url = format!("https://github.com/{REPO}.git");
    let installation = Some(h.github.installation_id());
    let deliveries = [
        (
            "check_run",
            check_run_payload(REPO, &clone_url, 11, "test", sha, PR, installation),
        ),
        (
            "check_run",
            check_run_payload(REPO, &clone_url, 12, "lint", sha, PR, installation),
        ),
        (
            "workflow_run",
            workflow_run_payload(REPO, &clone_url, 7, sha, PR, installation),
        ),
    ];
    let (event, payload) = &deliveries[0];
    let (status, text) = h.post(event, "ci-0", serde_json::to_vec(payload).unwrap(), None).await;
    assert_eq!(status, 202, "{text}");
    let first = h.next_start().await;
    assert_eq!(first.request.kind, JobKind::Triage);
    assert_eq!(first.request.head_sha.as_ref().map(|sha| sha.as_str()), Some(sha));
    for (i, (event, payload)) in deliveries.iter().enumerate().skip(1) {
        let (status, text) = h
            .post(event, &format!("ci-{i}"), serde_json::to_vec(payload).unwrap(), None)
            .await;
        assert_eq!(status, 202, "{text}");
    }
    h.deliveries_dealt_with().await;
    let store = h.store();
    let jobs = store.jobs(&JobFilter::default()).await.unwrap();
    let states: Vec<(String, JobState)> = jobs.iter().map(|j| (j.kind.clone(), j.state)).collect();
    assert_eq!(
        states,
        [
            ("triage".to_owned(), JobState::Queued),
            ("triage".to_owned(), JobState::Running)
        ],
        "newest first"
    );
    assert!(h.bot_comments().is_empty(), "{:?}", h.bot_comments());
    assert!(
        h.github
            .requests_to("repos/get-collaborator-permission-level")
            .is_empty()
    );

    h.recorder.release.add_permits(2);
    assert_eq!(
        wait_for_end(&mut ends, first.job).await,
        EndOutcome::Finished(JobState::Succeeded)
    );
    let second = h.next_start().await;
    assert_eq!(second.request.kind, JobKind::Triage);
    h.github.assert_no_violations();
}
