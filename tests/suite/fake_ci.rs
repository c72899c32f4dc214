//! The fake CI seen from outside: a push to the real git server runs the workflow's jobs in a
//! checkout of the commit, the fake GitHub serves the run, its jobs, their logs (through the signed
//! redirect) and the commit's check suites, the pull request from the branch moves to the pushed
//! commit, and signed `workflow_run` and `check_suite` deliveries reach a receiver (and pitcrew's
//! own parser); lost deliveries, and pushes that git refused or that delete a branch.

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use pitcrew::triggers::Event;
use pitcrew_tests::fake_ci::{CiJob, FakeCi, Workflow, signature};
use pitcrew_tests::fake_github::{ExternalCheckRun, FakeGithub, Issue, Spec};
use pitcrew_tests::git_server::GitServer;
use pitcrew_tests::scenario::{CALC, REPO_CONFIG, calc_repo};
use pitcrew_tests::server_thread::ServerThread;
use serde_json::Value;

const REPO: &str = "acme/calc";
const TOKEN: &str = "ghs_fakeCiTestToken0123456789";
const GIT_TOKEN: &str = "git-token";
const SECRET: &str = "It's a Secret to Everybody";
const INSTALLATION: u64 = 4242;
const WAIT: Duration = Duration::from_secs(120);
const FIXED_CALC: &str = "add() {\n    echo $(($1 + $2))\n}\n";

/// One delivery as the receiver got it.
#[derive(Debug, Clone)]
struct Received {
    event: String,
    delivery: String,
    signature: String,
    user_agent: String,
    content_type: String,
    body: Bytes,
}

impl Received {
    fn payload(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// A webhook receiver on 127.0.0.1 that records every delivery and answers 202.
struct Receiver {
    server: ServerThread,
    got: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    fn start() -> Receiver {
        let got = Arc::new(Mutex::new(Vec::new()));
        let app = Router::new()
            .route("/webhook", post(receive))
            .with_state(Arc::clone(&got));
        Receiver {
            server: ServerThread::start("webhook-receiver", app, 0).unwrap(),
            got,
        }
    }

    fn url(&self) -> String {
        format!("http://{}/webhook", self.server.addr())
    }

    fn received(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }
}

async fn receive(State(got): State<Arc<Mutex<Vec<Received>>>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    got.lock().unwrap().push(Received {
        event: header("x-github-event"),
        delivery: header("x-github-delivery"),
        signature: header("x-hub-signature-256"),
        user_agent: header("user-agent"),
        content_type: header("content-type"),
        body,
    });
    StatusCode::ACCEPTED
}

fn workflow() -> Workflow {
    Workflow::new(
        "CI",
        vec![
            CiJob::new("test", "sh run-tests.sh"),
            CiJob::new("lint", "! grep -n TODO *.sh"),
        ],
    )
}

/// The calc repository on both fakes, and a plain HTTP client for the fake GitHub.
fn world() -> (GitServer, FakeGithub, String) {
    let git = GitServer::start(GIT_TOKEN);
    let github = FakeGithub::start();
    github.allow_token(TOKEN);
    let base = calc_repo(&git, &github, REPO, REPO_CONFIG).unwrap();
    (git, github, base)
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

async fn get(github: &FakeGithub, path: &str) -> reqwest::Response {
    client()
        .get(format!("{}{path}", github.url()))
        .bearer_auth(TOKEN)
        .header("user-agent", "pitcrew-tests")
        .header("accept", "application/vnd.github+json")
        .send()
        .await
        .unwrap()
}

async fn get_json(github: &FakeGithub, path: &str) -> Value {
    let response = get(github, path).await;
    assert_eq!(response.status(), 200, "{path}");
    serde_json::from_str(&response.text().await.unwrap()).unwrap()
}

/// A job's log as a client gets it: the API's redirect, then the storage without the token.
async fn job_log(github: &FakeGithub, job_id: u64) -> String {
    let redirect = get(github, &format!("/repos/{REPO}/actions/jobs/{job_id}/logs")).await;
    assert_eq!(redirect.status(), 302);
    let location = redirect.headers()["location"].to_str().unwrap().to_owned();
    let response = client().get(location).send().await.unwrap();
    assert_eq!(response.status(), 200);
    response.text().await.unwrap()
}

/// Fails when a response the fake gave breaks the schema GitHub's description gives for it.
fn assert_responses_match_the_description(github: &FakeGithub) {
    let mut problems = Vec::new();
    for request in github.requests() {
        let Ok((spec, operation)) = Spec::route_github(&request.method, &request.path) else {
            continue;
        };
        if request.response.is_null() {
            continue;
        }
        for error in spec.validate_response(&operation, request.status, &request.response) {
            problems.push(format!("{} {}: {error}", request.method, request.path));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// Every log line starts with the runner's timestamp: `2026-12-07T08:00:00.1234567Z `.
fn assert_runner_timestamps(log: &str) {
    for line in log.lines() {
        let (stamp, _) = line.split_once(' ').unwrap_or((line, ""));
        assert_eq!(stamp.len(), 28, "{line:?}");
        assert!(
            stamp.ends_with('Z') && stamp.as_bytes()[10] == b'T' && stamp.as_bytes()[19] == b'.',
            "{line:?}"
        );
    }
}

// Multi-thread, as the harness's runtime: `run_branch` blocks in place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_runs_the_workflow_and_delivers_signed_webhooks() {
    let (git, github, base) = world();
    let receiver = Receiver::start();
    let ci = FakeCi::attach(&git, &github, REPO, workflow());
    ci.deliver_to(&receiver.url(), SECRET, INSTALLATION);

    // `main` gets a history: its `add` subtracts.
    let main_run = ci.run_branch("main");
    assert_eq!(main_run.sha, base);
    assert_eq!(main_run.conclusion, "failure");
    assert_eq!(
        main_run
            .jobs
            .iter()
            .map(|j| (j.name.as_str(), j.conclusion.as_str()))
            .collect::<Vec<_>>(),
        [("test", "failure"), ("lint", "success")]
    );
    assert!(
        main_run.jobs[0].log.contains("test adds_two_numbers ... FAILED"),
        "{}",
        main_run.jobs[0].log
    );

    // A pull request from `fix`; the push moves its head and the run lists it.
    github.add_issue(
        REPO,
        Issue::pull_request(7, "Fix add", ("fix", &base), ("main", &base)).user("alice"),
    );
    let head = git
        .commit(
            REPO,
            "fix",
            &[("calc.sh", &format!("{FIXED_CALC}# TODO: subtract\n"))],
            "add adds",
        )
        .unwrap();
    let run = ci.wait_for_run(&head, WAIT).await;
    assert_eq!(run.branch, "fix");
    assert_eq!(run.conclusion, "failure");
    let [test, lint] = &run.jobs[..] else {
        panic!("{run:#?}");
    };
    assert_eq!((test.name.as_str(), test.conclusion.as_str()), ("test", "success"));
    assert_eq!((lint.name.as_str(), lint.conclusion.as_str()), ("lint", "failure"));

    // The job and its log, as the API serves them.
    let jobs = get_json(&github, &format!("/repos/{REPO}/actions/runs/{}/jobs", run.run_id)).await;
    assert_eq!(jobs["total_count"], 2);
    let listed = &jobs["jobs"][1];
    assert_eq!(listed["id"], lint.job_id);
    assert_eq!(listed["status"], "completed");
    assert_eq!(listed["conclusion"], "failure");
    assert_eq!(listed["head_sha"], head.as_str());
    assert_eq!(listed["steps"][0]["name"], "Run ! grep -n TODO *.sh");
    assert_eq!(listed["steps"][0]["conclusion"], "failure");
    let log = job_log(&github, lint.job_id).await;
    assert_eq!(log, lint.log);
    assert_runner_timestamps(&log);
    let lines: Vec<&str> = log.lines().map(|l| l.split_once(' ').unwrap().1).collect();
    assert_eq!(lines[0], "##[group]Run ! grep -n TODO *.sh");
    assert!(lines.contains(&"##[endgroup]"), "{log}");
    assert!(lines.contains(&"calc.sh:4:# TODO: subtract"), "{log}");
    assert_eq!(lines.last(), Some(&"##[error]Process completed with exit code 1."));
    let runs = get_json(&github, &format!("/repos/{REPO}/actions/runs?head_sha={head}")).await;
    assert_eq!(runs["total_count"], 1);
    assert_eq!(runs["workflow_runs"][0]["conclusion"], "failure");
    assert_eq!(runs["workflow_runs"][0]["pull_requests"][0]["number"], 7);

    // The pull request's head moved to the pushed commit.
    let pull = get_json(&github, &format!("/repos/{REPO}/pulls/7")).await;
    assert_eq!(pull["head"]["sha"], head.as_str());

    // The commit's check suites: GitHub Actions' for the run, and another app's.
    github.add_external_check_run(REPO, ExternalCheckRun::new(0, "coverage", &head, "codecov"));
    let suites = get_json(&github, &format!("/repos/{REPO}/commits/fix/check-suites")).await;
    assert_eq!(suites["total_count"], 2, "{suites:#}");
    let actions = suites["check_suites"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["app"]["slug"] == "github-actions")
        .unwrap();
    assert_eq!(actions["id"], run.check_suite_id);
    assert_eq!(actions["head_sha"], head.as_str());
    assert_eq!(actions["head_branch"], "fix");
    assert_eq!(actions["status"], "completed");
    assert_eq!(actions["conclusion"], "failure");
    assert_eq!(actions["latest_check_runs_count"], 2);
    assert_eq!(actions["pull_requests"][0]["number"], 7);
    let only_actions = get_json(
        &github,
        &format!("/repos/{REPO}/commits/{head}/check-suites?app_id=15368&check_name=lint"),
    )
    .await;
    assert_eq!(only_actions["total_count"], 1);
    assert_eq!(only_actions["check_suites"][0]["id"], run.check_suite_id);
    let suite = get_json(&github, &format!("/repos/{REPO}/check-suites/{}", run.check_suite_id)).await;
    assert_eq!(suite["conclusion"], "failure");

    // The deliveries: two per run, signed, in order, and pitcrew reads them.
    let received = receiver.received();
    assert_eq!(
        received.iter().map(|r| r.event.as_str()).collect::<Vec<_>>(),
        ["workflow_run", "check_suite", "workflow_run", "check_suite"]
    );
    let sent = ci.deliveries();
    assert_eq!(
        sent,
        received
            .iter()
            .map(|r| (r.event.clone(), r.delivery.clone(), 202))
            .collect::<Vec<_>>()
    );
    for delivery in &received {
        assert_eq!(delivery.signature, expected_signature(&delivery.body));
        assert_eq!(delivery.user_agent, "GitHub-Hookshot/fake");
        assert_eq!(delivery.content_type, "application/json");
        assert_eq!(delivery.delivery.len(), 36);
        let payload = delivery.payload();
        assert_eq!(payload["action"], "completed");
        assert_eq!(payload["installation"]["id"], INSTALLATION);
        assert_eq!(payload["repository"]["full_name"], REPO);
    }
    let mut ids: Vec<&str> = received.iter().map(|r| r.delivery.as_str()).collect();
    ids.dedup();
    assert_eq!(ids.len(), 4);
    match Event::parse("workflow_run", &received[2].payload()).unwrap() {
        Event::WorkflowRunCompleted(parsed) => {
            assert_eq!(parsed.id, run.run_id);
            assert_eq!(parsed.name.as_deref(), Some("CI"));
            assert_eq!(parsed.head_sha.as_str(), head);
            assert_eq!(parsed.head_branch.as_deref(), Some("fix"));
            assert_eq!(parsed.pull_requests.iter().map(|n| n.0).collect::<Vec<_>>(), [7]);
            assert_eq!(parsed.run_attempt, Some(1));
            assert!(parsed.conclusion.as_ref().is_some_and(|c| c.is_failure()), "{parsed:?}");
            assert_eq!(parsed.ctx.installation_id.map(|i| i.0), Some(INSTALLATION));
        }
        other => panic!("{other:?}"),
    }
    match Event::parse("check_suite", &received[3].payload()).unwrap() {
        Event::CheckSuiteCompleted(parsed) => {
            assert_eq!(parsed.id, run.check_suite_id);
            assert_eq!(parsed.head_sha.as_str(), head);
            assert_eq!(parsed.head_branch.as_deref(), Some("fix"));
            assert_eq!(parsed.pull_requests.iter().map(|n| n.0).collect::<Vec<_>>(), [7]);
            assert_eq!(
                parsed.app.as_ref().and_then(|a| a.slug.as_deref()),
                Some("github-actions")
            );
        }
        other => panic!("{other:?}"),
    }
    let main_delivery = received[0].payload();
    assert_eq!(main_delivery["workflow_run"]["head_sha"], base.as_str());
    assert_eq!(main_delivery["workflow_run"]["pull_requests"], serde_json::json!([]));

    // Lost deliveries: the run happens, nothing arrives.
    ci.lose_next_deliveries(2);
    let green = git.commit(REPO, "fix", &[("calc.sh", FIXED_CALC)], "no TODO").unwrap();
    let run = ci.wait_for_run(&green, WAIT).await;
    assert_eq!(run.conclusion, "success");
    assert_eq!(receiver.received().len(), 4);
    assert_eq!(ci.deliveries().len(), 4);
    let runs = get_json(&github, &format!("/repos/{REPO}/actions/runs?branch=fix")).await;
    assert_eq!(runs["total_count"], 2);
    assert_eq!(runs["workflow_runs"][0]["id"], run.run_id);
    assert_eq!(runs["workflow_runs"][0]["conclusion"], "success");
    let pull = get_json(&github, &format!("/repos/{REPO}/pulls/7")).await;
    assert_eq!(pull["head"]["sha"], green.as_str());
    assert_eq!(ci.runs().len(), 3);

    assert_responses_match_the_description(&github);
}

fn expected_signature(body: &[u8]) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, SECRET.as_bytes());
    let tag = ring::hmac::sign(&key, body);
    let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    let expected = format!("sha256={hex}");
    // The fake's own helper agrees.
    assert_eq!(signature(SECRET, body), expected);
    expected
}

/// Runs git in `dir`; whether it succeeded, and its stderr.
fn git_in(dir: &Path, args: &[&str]) -> (bool, String) {
    let output = Command::new("git")
        .args([
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.com",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn a_refused_push_or_a_deleted_branch_runs_nothing() {
    let (git, github, base) = world();
    let ci = FakeCi::attach(&git, &github, REPO, workflow());
    let url = git
        .url(REPO)
        .replace("http://", &format!("http://x-access-token:{GIT_TOKEN}@"));
    let dir = tempfile::tempdir().unwrap();
    let clone = dir.path().join("clone");
    assert!(git_in(dir.path(), &["clone", "-q", &url, clone.to_str().unwrap()]).0);
    // `main` moves on the server; the clone's commit on the old `main` is not a fast-forward.
    let moved = git
        .commit(REPO, "main", &[("calc.sh", FIXED_CALC)], "add adds")
        .unwrap();
    assert_eq!(ci.wait_for_run(&moved, WAIT).await.conclusion, "success");
    std::fs::write(clone.join("calc.sh"), format!("{CALC}# stale\n")).unwrap();
    assert!(git_in(&clone, &["commit", "-qam", "stale"]).0);
    let workflow_runs = || github.state(|s| s.workflow_runs.len());
    assert_eq!(workflow_runs(), 1);

    let (pushed, stderr) = git_in(&clone, &["push", "-q", "origin", "HEAD:main"]);
    assert!(!pushed, "a non-fast-forward went through: {stderr}");
    // A lease on a `main` that has moved since does not hold either.
    let lease = format!("--force-with-lease=main:{base}");
    let (pushed, stderr) = git_in(&clone, &["push", "-q", &lease, "origin", "HEAD:main"]);
    assert!(!pushed, "a stale lease held: {stderr}");
    // The hook hears of a push before git's answer ends: a run would be queued by now.
    assert_eq!(workflow_runs(), 1);

    // A branch pushed over HTTP runs; deleting it does not.
    assert!(git_in(&clone, &["push", "-q", "origin", "HEAD:refs/heads/topic"]).0);
    let topic = String::from_utf8(
        Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(&clone)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .to_owned();
    // Queued before git's answer ended, as the refused pushes would have been.
    assert_eq!(workflow_runs(), 2);
    let run = ci.wait_for_run(&topic, WAIT).await;
    assert_eq!(run.branch, "topic");
    assert_eq!(run.conclusion, "failure");
    assert!(git_in(&clone, &["push", "-q", "origin", ":refs/heads/topic"]).0);
    assert_eq!(workflow_runs(), 2);
    assert_eq!(ci.runs().len(), 2);
    assert!(ci.deliveries().is_empty(), "no target, no delivery");
}
