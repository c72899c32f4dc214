//! `@agent fix` end to end through `pitcrew serve` with the real job handlers: a signed comment
//! delivery (the real triagebot recording, pointed at a local repository), the fake GitHub for
//! every API call (validated against GitHub's REST description), installation tokens that the
//! real git server (`git http-backend`) accepts, the scripted model, and the Docker sandbox with
//! the busybox test image. The repository's test suite is a shell script that prints libtest's
//! format, run in the container before and after the agent.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use pitcrew::config::{Config, LoadOptions};
use pitcrew::jobs::{JobFilter, JobState};
use pitcrew::serve::ServeOptions;
use pitcrew::server::RunningServer;
use pitcrew::server::signature::sign;
use pitcrew_tests::fake_github::openapi::fixtures_root;
use pitcrew_tests::fake_github::{FakeGithub, Issue, Permission, ReactionTarget, Repo};
use pitcrew_tests::git_server::GitServer;
use pitcrew_tests::scripted_model::{Reply, Script, ScriptedModel};
use secrecy::SecretString;
use serde_json::{Value, json};
use tempfile::TempDir;

const REPO: &str = "acme/calc";
const PR: u64 = 7;
const SECRET: &str = "the fix test's webhook secret";
const WAIT: Duration = Duration::from_secs(120);

const CALC: &str = "add() {\n    echo $(($1 - $2))\n}\n";
const TESTS: &str = r#"#!/bin/sh
# The project's tests, in libtest's output format.
. ./calc.sh
pass=0
fail=0
failed=""
check() {
    if [ "$2" = "$3" ]; then
        echo "test $1 ... ok"
        pass=$((pass + 1))
    else
        echo "test $1 ... FAILED"
        fail=$((fail + 1))
        failed="$failed $1"
    fi
}
echo
echo "running 2 tests"
check adds_two_numbers "$(add 2 3)" 5
check adds_zero "$(add 4 0)" 4
echo
if [ "$fail" -gt 0 ]; then
    echo "failures:"
    for name in $failed; do echo "    $name"; done
    echo
    echo "test result: FAILED. $pass passed; $fail failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s"
    exit 101
fi
echo "test result: ok. $pass passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s"
"#;
const REPO_CONFIG: &str = "[agent]\ntest_command = \"sh run-tests.sh\"\n";

fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git").args(args).current_dir(dir).output().unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

fn plan(statuses: [&str; 2]) -> Value {
    json!({"steps": [
        {"id": "1", "title": "Fix add", "status": statuses[0]},
        {"id": "2", "title": "Run the tests", "status": statuses[1]},
    ]})
}

fn fixing_script() -> Script {
    Script::new()
        .turn(
            Reply::text("Reading the code under test.")
                .tool_call("update_plan", plan(["in_progress", "pending"]))
                .tool_call("read_file", json!({"path": "calc.sh"}))
                .usage(1_000, 50),
        )
        .turn(
            Reply::new()
                .tool_call(
                    "edit_file",
                    json!({"path": "calc.sh", "old_string": "$(($1 - $2))", "new_string": "$(($1 + $2))"}),
                )
                .tool_call("update_plan", plan(["done", "in_progress"]))
                .usage(1_200, 40),
        )
        .turn(Reply::new().tool_call("run_tests", json!({})).usage(1_400, 20))
        .turn(
            Reply::new()
                .tool_call("update_plan", plan(["done", "done"]))
                .usage(1_500, 20),
        )
        .turn(Reply::text("`add` subtracted its arguments; it adds them now and both tests pass.").usage(1_600, 30))
}

struct World {
    github: FakeGithub,
    git: GitServer,
    model: ScriptedModel,
    _data: TempDir,
    server: RunningServer,
    base_sha: String,
    head_sha: String,
}

impl World {
    async fn start(image: &str, script: Script) -> World {
        let github = FakeGithub::start();
        let git_server = GitServer::start_with(github.token_check());
        let base_sha = git_server
            .create_repo(
                REPO,
                &[
                    ("calc.sh", CALC),
                    ("run-tests.sh", TESTS),
                    (".github/pitcrew.toml", REPO_CONFIG),
                ],
            )
            .unwrap();
        let head_sha = git_server
            .create_pull_head(REPO, PR, "main", &[("README.md", "calc: shell arithmetic\n")], "docs")
            .unwrap();
        // The pull request's branch, as a same-repository pull request has it.
        git(
            &git_server.repo_path(REPO),
            &["update-ref", "refs/heads/docs", &head_sha],
        );
        github.add_repo(
            Repo::new(REPO)
                .default_branch("main")
                .clone_url(&git_server.url(REPO))
                .git_dir(git_server.repo_path(REPO)),
        );
        github.add_issue(
            REPO,
            Issue::pull_request(PR, "Document calc", ("docs", &head_sha), ("main", &base_sha)).user("bob"),
        );
        github.set_permission(REPO, "alice", Permission::Write);

        let model = ScriptedModel::start(script);
        let data = TempDir::new().unwrap();
        let overrides = vec![
            "model.name=gpt-4o".to_owned(),
            format!("model.base_url={}", model.openai_base_url()),
            "model.max_retries=0".to_owned(),
            format!("github.api_url={}", github.url()),
            format!("github.app_id={}", github.app_id()),
            format!(
                "github.private_key_path={}",
                FakeGithub::test_private_key_path().display()
            ),
            format!("github.webhook_secret={SECRET}"),
            format!("github.bot_name={}", github.bot_login()),
            format!("server.data_dir={}", data.path().display()),
            "sandbox.backend=docker".to_owned(),
            format!("sandbox.image={image}"),
            "sandbox.memory=256MiB".to_owned(),
        ];
        let config = Config::load(LoadOptions {
            config_path: None,
            env: &BTreeMap::new(),
            overrides: &overrides,
        })
        .unwrap();
        let server = pitcrew::serve::start(
            config,
            ServeOptions {
                listener: Some(std::net::TcpListener::bind("127.0.0.1:0").unwrap()),
                ..ServeOptions::default()
            },
        )
        .await
        .unwrap();
        World {
            github,
            git: git_server,
            model,
            _data: data,
            server,
            base_sha,
            head_sha,
        }
    }

    /// `login` comments `body` on the pull request; the signed delivery is posted to the server.
    async fn comment(&self, delivery: &str, login: &str, body: &str) -> u64 {
        let id = self.github.add_issue_comment(REPO, PR, login, body);
        let path =
            fixtures_root().join("webhooks/issue_comment/rust-lang-triagebot/07-webhook-issue111_comment_created.json");
        let recording: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let mut payload = recording["payload"].clone();
        payload["repository"]["full_name"] = json!(REPO);
        payload["repository"]["name"] = json!("calc");
        payload["repository"]["owner"]["login"] = json!("acme");
        payload["repository"]["clone_url"] = json!(self.git.url(REPO));
        payload["repository"]["default_branch"] = json!("main");
        payload["issue"]["number"] = json!(PR);
        payload["comment"]["id"] = json!(id);
        payload["comment"]["body"] = json!(body);
        payload["comment"]["user"]["login"] = json!(login);
        payload["comment"]["user"]["id"] = json!(4242);
        payload["comment"]["author_association"] = json!("COLLABORATOR");
        payload["sender"]["login"] = json!(login);
        payload["installation"] = json!({ "id": self.github.installation_id() });
        let body = serde_json::to_vec(&payload).unwrap();
        let response = reqwest::Client::new()
            .post(format!("{}/webhook", self.server.url()))
            .header("X-GitHub-Event", "issue_comment")
            .header("X-GitHub-Delivery", delivery)
            .header("X-Hub-Signature-256", sign(&SecretString::from(SECRET), &body))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 202);
        id
    }

    /// Waits until the job has reported its end (check run completed, progress comment final);
    /// returns the check run.
    async fn finished(&self) -> pitcrew_tests::fake_github::CheckRun {
        let bot = self.github.bot_login();
        let done = self
            .github
            .wait_until(WAIT, |state| {
                let completed = state
                    .check_runs_named(REPO, "pitcrew")
                    .iter()
                    .any(|run| run.status == "completed");
                let final_comment = state
                    .comments_on(REPO, PR)
                    .iter()
                    .any(|c| c.user == bot && !c.body.contains("this comment updates as I go"));
                completed && final_comment
            })
            .await;
        let runs = self.github.check_runs();
        assert!(
            done,
            "the job never finished: {runs:#?}\nbot comments: {:#?}",
            self.bot_comments()
        );
        runs.into_iter().find(|run| run.name == "pitcrew").unwrap()
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
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_fix_comment_on_a_pull_request_ends_in_a_tested_commit_on_its_branch() {
    let Some(image) = pitcrew_tests::docker::test_image() else {
        return;
    };
    let world = World::start(image, fixing_script()).await;
    let comment = world
        .comment("delivery-fix-1", "alice", "@agent fix the failing add test")
        .await;

    let run = world.finished().await;
    assert_eq!(run.head_sha, world.head_sha);
    assert_eq!(run.status_history().first().map(String::as_str), Some("in_progress"));
    assert_eq!(run.status_history().last().map(String::as_str), Some("completed"));
    assert_eq!(run.conclusion.as_deref(), Some("success"), "{run:#?}");
    let summary = run.output["summary"].as_str().unwrap_or_default().to_owned();
    // The test delta, measured in the container before and after the agent.
    assert!(summary.contains("| Before | 1 | 1 | 0 |"), "{summary}");
    assert!(summary.contains("| After | 2 | 0 | 0 |"), "{summary}");
    assert!(summary.contains("**Fixed (1):** `adds_two_numbers`"), "{summary}");

    // The eyes reaction, then one progress comment edited in place to the result.
    let bot = world.github.bot_login();
    let reacted = world.github.state(|state| {
        state
            .reactions
            .iter()
            .any(|r| r.target == ReactionTarget::IssueComment(comment) && r.content == "eyes" && r.user == bot)
    });
    assert!(reacted, "no eyes reaction");
    let comments = world.bot_comments();
    assert_eq!(comments.len(), 1, "{comments:#?}");
    assert!(comments[0].contains("Pushed"), "{}", comments[0]);

    // The commit on the pull request's branch: the fix, by the bot, with the requester as co-author.
    let pushed = world.git.rev_parse(REPO, "refs/heads/docs").unwrap();
    assert_ne!(pushed, world.head_sha);
    let bare = world.git.repo_path(REPO);
    assert_eq!(git(&bare, &["rev-parse", &format!("{pushed}^")]), world.head_sha);
    assert_eq!(
        git(&bare, &["show", &format!("{pushed}:calc.sh")]),
        CALC.replace(" - ", " + ").trim()
    );
    assert_eq!(
        git(&bare, &["log", "-1", "--format=%an <%ae>", &pushed]),
        format!("{bot} <{bot}@users.noreply.github.com>")
    );
    let message = git(&bare, &["log", "-1", "--format=%B", &pushed]);
    assert!(message.starts_with("pitcrew: fix the failing add test"), "{message}");
    assert!(
        message.contains("Co-authored-by: alice <4242+alice@users.noreply.github.com>"),
        "{message}"
    );
    assert_eq!(
        git(&bare, &["diff", "--name-only", &world.head_sha, &pushed]),
        "calc.sh"
    );
    assert_ne!(world.base_sha, pushed);

    // The job ended succeeded in the store, and the model was used as scripted.
    let jobs = world.server.store().jobs(&JobFilter::default()).await.unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].state, JobState::Succeeded, "{:?}", jobs[0].error);
    world.model.assert_script_consumed();
    world.github.assert_no_violations();
}
