//! CI triage end to end through `pitcrew serve`: a signed `workflow_run` delivery for a failed run
//! (GitHub's own example payload pointed at the local repository), the fake GitHub serving the
//! run's jobs and their logs (real `cargo test` and Python output wrapped in the Actions log
//! format) and another CI service's failed check run, the scripted model for the root cause, the
//! real git server and the Docker sandbox. The repository opts into the comment, the re-run of a
//! flaky job and the automatic fix, whose job gets the findings and pushes its commit.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use pitcrew::config::{Config, LoadOptions};
use pitcrew::serve::ServeOptions;
use pitcrew::server::RunningServer;
use pitcrew_tests::ci_log::{actions_log, failing_output};
use pitcrew_tests::fake_github::openapi::fixtures_root;
use pitcrew_tests::fake_github::{ActionsJob, ExternalCheckRun, FakeGithub, Issue, Repo, WorkflowRun};
use pitcrew_tests::git_server::GitServer;
use pitcrew_tests::scripted_model::{Reply, Script, ScriptedModel};
use pitcrew_tests::server_config::ServerOverrides;
use serde_json::{Value, json};
use tempfile::TempDir;

const REPO: &str = "acme/tiny";
const PR: u64 = 7;
const SECRET: &str = "the triage test's webhook secret";
const WAIT: Duration = Duration::from_secs(180);

const CARGO_TOML: &str = "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n";
/// The pull request's `add` subtracts; its test is on line 9.
const BUGGY_LIB: &str = "pub fn add(a: u32, b: u32) -> u32 {\n    a - b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    \
                         fn adds() {\n        assert_eq!(super::add(3, 2), 5);\n    }\n}\n";
const FIXED_LIB: &str = "pub fn add(a: u32, b: u32) -> u32 {\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    \
                         fn adds() {\n        assert_eq!(super::add(3, 2), 5);\n    }\n}\n";
const REPO_CONFIG: &str =
    "[agent]\ntest_command = \"true\"\n\n[triage]\ncomment = true\nrerun_flaky = true\nauto_fix = true\n";

/// The real output of `cargo test` on the pull request's crate, as the Actions log of job `test`.
fn cargo_test_log() -> String {
    let dir = TempDir::new().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("Cargo.toml"), CARGO_TOML).unwrap();
    std::fs::write(dir.path().join("src/lib.rs"), BUGGY_LIB).unwrap();
    let target = dir.path().join("target");
    let output = failing_output(
        dir.path(),
        "cargo test --offline",
        &[
            ("CARGO_TARGET_DIR", target.to_str().unwrap()),
            ("CARGO_TERM_COLOR", "always"),
        ],
    );
    actions_log("cargo test --offline", &output, 101)
}

/// The real output of an integration check whose server never answers: Python's socket timeout.
fn timeout_log(dir: &Path) -> String {
    let script = "python3 -c \"import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); \
                  c = socket.create_connection(s.getsockname(), timeout=0.3); c.recv(1)\"";
    let output = failing_output(dir, script, &[]);
    assert!(output.contains("timed out"), "{output}");
    actions_log("python3 integration.py", &output, 1)
}

/// GitHub's example `workflow_run.completed` delivery, made a failure of run `run_id` on `head_sha`
/// for pull request `PR` of the local repository.
fn workflow_run_payload(clone_url: &str, run_id: u64, head_sha: &str, installation: u64) -> Value {
    let path = fixtures_root().join("webhooks/workflow_run/completed.with-pull-requests.payload.json");
    let mut payload: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let repo_id = payload["repository"]["id"].clone();
    let (owner, name) = REPO.split_once('/').unwrap();
    payload["repository"]["full_name"] = json!(REPO);
    payload["repository"]["name"] = json!(name);
    payload["repository"]["owner"]["login"] = json!(owner);
    payload["repository"]["clone_url"] = json!(clone_url);
    payload["repository"]["default_branch"] = json!("main");
    let run = &mut payload["workflow_run"];
    run["id"] = json!(run_id);
    run["name"] = json!("CI");
    run["conclusion"] = json!("failure");
    run["head_sha"] = json!(head_sha);
    run["head_branch"] = json!("fix-add");
    run["pull_requests"][0]["number"] = json!(PR);
    run["pull_requests"][0]["head"]["sha"] = json!(head_sha);
    run["pull_requests"][0]["base"]["repo"]["id"] = repo_id;
    payload["installation"] = json!({ "id": installation });
    payload
}

fn script() -> Script {
    Script::new()
        // The triage's root cause.
        .turn(Reply::text("Reading the function under test.").tool_call("read_file", json!({"path": "src/lib.rs"})))
        .turn(Reply::text(
            "`add` in src/lib.rs:2 subtracts its arguments, so `tests::adds` gets 1 instead of 5. Change `a - b` to \
             `a + b`. The `integration` job timed out on a connection and is unrelated.",
        ))
        // The fix job it hands the failure to.
        .turn(Reply::text("Reading the code.").tool_call("read_file", json!({"path": "src/lib.rs"})))
        .turn(Reply::new().tool_call(
            "edit_file",
            json!({"path": "src/lib.rs", "old_string": "    a - b\n", "new_string": "    a + b\n"}),
        ))
        .turn(Reply::text("`add` adds again."))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_workflow_run_is_triaged_annotated_commented_rerun_and_fixed() {
    let Some(image) = pitcrew_tests::docker::test_image() else {
        return;
    };
    let github = FakeGithub::start();
    let git = GitServer::start_with(github.token_check());
    let base_sha = git
        .create_repo(
            REPO,
            &[
                ("Cargo.toml", CARGO_TOML),
                ("src/lib.rs", FIXED_LIB),
                (".github/pitcrew.toml", REPO_CONFIG),
            ],
        )
        .unwrap();
    let head_sha = git
        .create_pull_head(REPO, PR, "main", &[("src/lib.rs", BUGGY_LIB)], "add: simplify")
        .unwrap();
    let status = std::process::Command::new("git")
        .args(["update-ref", "refs/heads/fix-add", &head_sha])
        .current_dir(git.repo_path(REPO))
        .status()
        .unwrap();
    assert!(status.success());
    github.add_repo(
        Repo::new(REPO)
            .default_branch("main")
            .clone_url(&git.url(REPO))
            .git_dir(git.repo_path(REPO)),
    );
    github.add_issue(
        REPO,
        Issue::pull_request(PR, "Simplify add", ("fix-add", &head_sha), ("main", &base_sha)).user("bob"),
    );

    // CI: a workflow run whose `test` job fails for real and whose `integration` job times out,
    // one job that passed, and another CI service's lint check that failed.
    let logs = TempDir::new().unwrap();
    let run_id = github.add_workflow_run(
        REPO,
        WorkflowRun::new(0, "CI", &head_sha)
            .head_branch("fix-add")
            .pull_request(PR)
            .conclusion("failure"),
    );
    let test_job = github.add_actions_job(
        REPO,
        ActionsJob::new(0, run_id, "test")
            .step("Set up job", "success")
            .step("Run cargo test --offline", "failure")
            .conclusion("failure")
            .log(cargo_test_log()),
    );
    let integration_job = github.add_actions_job(
        REPO,
        ActionsJob::new(0, run_id, "integration")
            .step("Set up job", "success")
            .step("Run python3 integration.py", "failure")
            .conclusion("failure")
            .log(timeout_log(logs.path())),
    );
    github.add_actions_job(
        REPO,
        ActionsJob::new(0, run_id, "fmt").step("Run cargo fmt --check", "success"),
    );
    let mut lint = ExternalCheckRun::new(0, "lint", &head_sha, "buildkite");
    lint.conclusion = Some("failure".into());
    lint.title = Some("shellcheck failed".into());
    lint.summary = Some("error: scripts/release.sh: unexpected end of file".into());
    github.add_external_check_run(REPO, lint);

    let model = ScriptedModel::start(script());
    let data = TempDir::new().unwrap();
    let overrides = ServerOverrides::new(&github, SECRET, data.path())
        .model(&model)
        .docker(image)
        .build();
    let config = Config::load(LoadOptions {
        config_path: None,
        env: &BTreeMap::new(),
        overrides: &overrides,
    })
    .unwrap();
    let server: RunningServer = pitcrew::serve::start(
        config,
        ServeOptions {
            listener: Some(std::net::TcpListener::bind("127.0.0.1:0").unwrap()),
            ..ServeOptions::default()
        },
    )
    .await
    .unwrap();

    let payload = workflow_run_payload(&git.url(REPO), run_id, &head_sha, github.installation_id());
    let (status, text) = super::webhook::post(
        &server.url(),
        SECRET,
        "workflow_run",
        "triage-1",
        serde_json::to_vec(&payload).unwrap(),
        None,
    )
    .await;
    assert_eq!(status, 202, "{text}");

    // The triage, then the fix it started: both report on check runs.
    let done = github
        .wait_until(WAIT, |state| {
            let completed = |name: &str| {
                state
                    .check_runs_named(REPO, name)
                    .iter()
                    .any(|run| run.status == "completed")
            };
            completed("pitcrew triage") && completed("pitcrew")
        })
        .await;
    let runs = github.check_runs();
    assert!(done, "the triage and its fix never finished: {runs:#?}");
    github.assert_no_violations();

    // One triage check run on the failing commit, neutral, with the table, the root cause and an
    // annotation at the failing assertion.
    let triage: Vec<_> = runs.iter().filter(|r| r.name == "pitcrew triage").collect();
    assert_eq!(triage.len(), 1, "{triage:#?}");
    let triage = triage[0];
    assert_eq!(triage.head_sha, head_sha);
    assert_eq!(triage.conclusion.as_deref(), Some("neutral"));
    let summary = triage.output["summary"].as_str().unwrap();
    assert_eq!(
        triage.output["title"].as_str(),
        Some("3 failed jobs: 1 code, 1 flaky, 1 unknown"),
        "{summary}"
    );
    assert!(summary.contains("| [CI / test]("), "{summary}");
    assert!(
        summary.contains("| code failure | 80% | `Run cargo test --offline` | 1 |"),
        "{summary}"
    );
    assert!(summary.contains("| flaky |"), "{summary}");
    assert!(summary.contains("buildkite / lint"), "{summary}");
    assert!(summary.contains("`add` in src/lib.rs:2 subtracts"), "{summary}");
    assert!(summary.contains("`tests::adds` at `src/lib.rs:9`"), "{summary}");
    assert!(summary.contains("Re-ran `CI / integration` once"), "{summary}");
    assert!(summary.contains("Started a fix of the code failures"), "{summary}");
    assert_eq!(triage.annotations.len(), 1, "{:#?}", triage.annotations);
    let annotation = &triage.annotations[0];
    assert_eq!(annotation["path"], "src/lib.rs");
    assert_eq!(annotation["start_line"], 9);
    assert_eq!(annotation["annotation_level"], "failure");
    assert_eq!(annotation["title"], "tests::adds failed in CI / test");
    assert!(
        annotation["message"].as_str().unwrap().contains("left: 1"),
        "{annotation}"
    );
    let text = triage.output["text"].as_str().unwrap();
    assert!(text.contains("test result: FAILED."), "{text}");
    assert!(!text.contains("\u{1b}["), "colour codes are stripped");

    // The logs were fetched from the storage the API redirected to, never with the token.
    let downloads = github.log_downloads();
    assert_eq!(downloads.len(), 2, "{downloads:#?}");
    assert!(
        downloads.iter().all(|d| !d.authorization && d.status == 200),
        "{downloads:#?}"
    );
    // The flaky job was re-run once; the code failure was not.
    let reruns: Vec<u64> = github.job_reruns().iter().map(|r| r.job_id).collect();
    assert_eq!(reruns, [integration_job]);
    assert_ne!(integration_job, test_job);

    // The comment on the pull request, linked from the check run's details.
    let bot = github.bot_login();
    let comments: Vec<_> = github
        .comments_on(REPO, PR)
        .into_iter()
        .filter(|c| c.user == bot && c.body.contains("CI triage"))
        .collect();
    assert_eq!(comments.len(), 1, "{comments:#?}");
    assert!(comments[0].body.contains("`add` in src/lib.rs:2 subtracts"));
    assert!(comments[0].body.contains("the `pitcrew triage` check run"));
    assert!(
        triage
            .details_url
            .as_deref()
            .is_some_and(|url| url.contains("#issuecomment-")),
        "{:?}",
        triage.details_url
    );

    // The root cause was written from the evidence, read-only.
    let requests = model.requests();
    let first_user = |body: &Value| -> String {
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    let triage_prompt = first_user(&requests[0].body);
    assert!(
        triage_prompt.contains("### tests::adds at src/lib.rs:9"),
        "{triage_prompt}"
    );
    assert!(triage_prompt.contains("do not modify files"), "{triage_prompt}");
    let tools: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(
        !tools.contains(&"edit_file") && !tools.contains(&"write_file"),
        "{tools:?}"
    );
    // The fix job got the code failure, not the flaky one, and pushed its commit to the PR.
    let fix_prompt = first_user(&requests[2].body);
    assert!(fix_prompt.contains("tests::adds at src/lib.rs:9"), "{fix_prompt}");
    assert!(!fix_prompt.contains("## CI / integration"), "{fix_prompt}");
    assert!(
        fix_prompt.contains("Started by pitcrew's triage after CI failed"),
        "{fix_prompt}"
    );
    let pushed = git.rev_parse(REPO, "refs/heads/fix-add").unwrap();
    assert_ne!(pushed, head_sha, "the fix was not pushed");
    let file = std::process::Command::new("git")
        .args(["show", &format!("{pushed}:src/lib.rs")])
        .current_dir(git.repo_path(REPO))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&file.stdout), FIXED_LIB);
    server.shutdown(Duration::from_secs(5)).await;
}
