//! CI triage end to end through `pitcrew serve`: a signed `workflow_run` delivery for a failed run
//! (GitHub's own example payload pointed at the local repository), the fake GitHub serving the
//! run's jobs and their logs (real `cargo test` and Python output wrapped in the Actions log
//! format) and another CI service's failed check run, the scripted model for the root cause, the
//! real git server and the Docker sandbox. The repository opts into the comment, the re-run of a
//! flaky job and the automatic fix, whose job gets the findings and pushes its commit.

use std::path::Path;

use pitcrew::jobs::JobFilter;
use pitcrew_tests::ci_log::{actions_log, failing_output};
use pitcrew_tests::fake_github::{ActionsJob, ExternalCheckRun, FakeGithub, Issue, Permission, Repo, WorkflowRun};
use pitcrew_tests::git_server::GitServer;
use pitcrew_tests::scenario::{check_run_payload, workflow_run_payload};
use pitcrew_tests::scripted_model::{Reply, Script, ScriptedModel};
use serde_json::{Value, json};
use tempfile::TempDir;

use super::harness::Bot;

const REPO: &str = "acme/tiny";
const PR: u64 = 7;

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

/// The repository with its failing pull request, the fake GitHub, and a running server.
struct World {
    bot: Bot,
    head_sha: String,
}

impl World {
    async fn start(image: &str, repo_config: &str, script: Script) -> World {
        let github = FakeGithub::start();
        let git = GitServer::start_with(github.token_check());
        let base_sha = git
            .create_repo(
                REPO,
                &[
                    ("Cargo.toml", CARGO_TOML),
                    ("src/lib.rs", FIXED_LIB),
                    (".github/pitcrew.toml", repo_config),
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
        github.set_permission(REPO, "alice", Permission::Write);
        let model = ScriptedModel::start(script);
        let bot = Bot::start(github, git, model, |overrides| overrides.docker(image)).await;
        World { bot, head_sha }
    }

    async fn post(&self, event: &str, delivery: &str, payload: &Value) {
        self.bot.deliver(event, delivery, payload).await;
    }

    /// Waits until no delivery or job is left and the triage check runs are completed.
    async fn settled(&self) {
        self.bot.settled().await;
        self.bot
            .wait_for("every triage check run completed", |s| {
                s.check_runs_named(REPO, "pitcrew triage")
                    .iter()
                    .all(|run| run.status == "completed")
            })
            .await;
    }

    fn bot_comments(&self) -> Vec<String> {
        self.bot.bot_comments_on(REPO, PR)
    }
}

#[test]
fn a_failed_workflow_run_is_triaged_annotated_commented_rerun_and_fixed() {
    let Some(image) = pitcrew_tests::docker::test_image() else {
        return;
    };
    super::harness::run_test(|| async move {
        let world = World::start(image, REPO_CONFIG, script()).await;
        let (github, git, model, head_sha) = (
            &world.bot.github,
            &world.bot.git,
            &world.bot.model,
            world.head_sha.clone(),
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
        // On `main`, `test` passed in its last two runs.
        for sha in [
            "1111111111111111111111111111111111111111",
            "2222222222222222222222222222222222222222",
        ] {
            let run = github.add_workflow_run(REPO, WorkflowRun::new(0, "CI", sha).conclusion("success"));
            github.add_actions_job(REPO, ActionsJob::new(0, run, "test").conclusion("success"));
        }
        let mut lint = ExternalCheckRun::new(0, "lint", &head_sha, "buildkite");
        lint.conclusion = Some("failure".into());
        lint.title = Some("shellcheck failed".into());
        lint.summary = Some("error: scripts/release.sh: unexpected end of file".into());
        github.add_external_check_run(REPO, lint);

        let payload = workflow_run_payload(
            REPO,
            &git.url(REPO),
            run_id,
            &head_sha,
            PR,
            Some(github.installation_id()),
        );
        world.post("workflow_run", "triage-1", &payload).await;

        // The triage, then the fix it started: both report on check runs.
        let done = github
            .wait_until(super::harness::LIMIT, |state| {
                let completed = |name: &str| {
                    state
                        .check_runs_named(REPO, name)
                        .iter()
                        .any(|run| run.status == "completed")
                };
                completed("pitcrew triage") && completed("pitcrew")
            })
            .await;
        assert!(
            done,
            "the triage and its fix never finished: {:#?}",
            github.check_runs()
        );
        // Read once both jobs have ended: their reports go out before their ends are written.
        world.settled().await;
        let runs = github.check_runs();
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
            summary.contains("| code failure | 85% | `Run cargo test --offline` | 1 |"),
            "{summary}"
        );
        assert!(
            summary.contains("`test` passed in each of the last 2 runs on `main`"),
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
        let comments: Vec<_> = world
            .bot_comments()
            .into_iter()
            .filter(|c| c.contains("CI triage"))
            .collect();
        assert_eq!(comments.len(), 1, "{comments:#?}");
        assert!(comments[0].contains("`add` in src/lib.rs:2 subtracts"));
        assert!(comments[0].contains("the `pitcrew triage` check run"));
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
        world.bot
    });
}

#[test]
fn the_failures_of_one_commit_make_one_check_run_and_one_comment_and_asking_answers() {
    let Some(image) = pitcrew_tests::docker::test_image() else {
        return;
    };
    super::harness::run_test(|| async move {
        let answer = || Reply::text("The `e2e` job left no log to read, so its cause cannot be established.");
        let script = Script::new()
            .turn(answer())
            .turn(answer())
            .turn(answer())
            .turn(answer());
        let config = "[agent]\ntest_command = \"true\"\n\n[triage]\ncomment = true\n";
        let world = World::start(image, config, script).await;
        let (github, git, head_sha) = (&world.bot.github, &world.bot.git, world.head_sha.clone());

        // A full re-run: `unit` passed in attempt 1 and failed in attempt 2 (real cargo output, yet
        // flaky); `e2e` failed and its log has expired.
        let run_id = github.add_workflow_run(
            REPO,
            WorkflowRun::new(0, "CI", &head_sha)
                .head_branch("fix-add")
                .pull_request(PR)
                .run_attempt(2)
                .conclusion("failure"),
        );
        github.add_actions_job(
            REPO,
            ActionsJob::new(0, run_id, "unit").step("Run cargo test --offline", "success"),
        );
        let unit = github.add_actions_job(
            REPO,
            ActionsJob::new(0, run_id, "unit")
                .run_attempt(2)
                .step("Run cargo test --offline", "failure")
                .conclusion("failure")
                .log(cargo_test_log()),
        );
        let e2e = github.add_actions_job(
            REPO,
            ActionsJob::new(0, run_id, "e2e")
                .run_attempt(2)
                .step("Set up job", "success")
                .step("Run ./e2e.sh", "failure")
                .conclusion("failure"),
        );
        github.expire_job_logs(e2e);
        // On `main`, `e2e` failed once and passed once lately: it fails now and then.
        for (sha, conclusion) in [
            ("1111111111111111111111111111111111111111", "failure"),
            ("2222222222222222222222222222222222222222", "success"),
        ] {
            let run = github.add_workflow_run(REPO, WorkflowRun::new(0, "CI", sha).conclusion(conclusion));
            github.add_actions_job(REPO, ActionsJob::new(0, run, "e2e").conclusion(conclusion));
        }

        // Every failure of the commit is delivered: each job's check run, then the workflow run.
        let installation = github.installation_id();
        world
            .post(
                "check_run",
                "cr-unit",
                &check_run_payload(REPO, &git.url(REPO), unit, "unit", &head_sha, PR, Some(installation)),
            )
            .await;
        world
            .post(
                "check_run",
                "cr-e2e",
                &check_run_payload(REPO, &git.url(REPO), e2e, "e2e", &head_sha, PR, Some(installation)),
            )
            .await;
        world
            .post(
                "workflow_run",
                "wr",
                &workflow_run_payload(REPO, &git.url(REPO), run_id, &head_sha, PR, Some(installation)),
            )
            .await;
        world.settled().await;
        github.assert_no_violations();

        let runs = github.state(|s| {
            s.check_runs_named(REPO, "pitcrew triage")
                .into_iter()
                .cloned()
                .collect::<Vec<_>>()
        });
        assert_eq!(runs.len(), 1, "{runs:#?}");
        let run = &runs[0];
        assert_eq!(run.conclusion.as_deref(), Some("neutral"));
        let summary = run.output["summary"].as_str().unwrap();
        assert_eq!(
            run.output["title"].as_str(),
            Some("2 failed jobs: 2 flaky"),
            "{summary}"
        );
        assert!(
            summary.contains("`e2e` failed in 1 and passed in 1 of the last 2 runs on `main`"),
            "{summary}"
        );
        assert!(
            summary.contains("the same job passed in attempt 1 of this run"),
            "{summary}"
        );
        assert!(summary.contains("its log could not be read"), "{summary}");
        assert!(summary.contains("410"), "{summary}");
        // A flaky failure still points at its line, as a warning.
        assert_eq!(run.annotations.last().unwrap()["annotation_level"], "warning");
        let triages = world
            .bot
            .store()
            .jobs(&JobFilter::default())
            .await
            .unwrap()
            .into_iter()
            .filter(|job| job.kind == "triage")
            .count();
        assert!((1..=3).contains(&triages), "{triages} triage jobs");
        let ci_comments: Vec<String> = world
            .bot_comments()
            .into_iter()
            .filter(|c| c.contains("CI triage"))
            .collect();
        assert_eq!(
            ci_comments.len(),
            1,
            "later triages of the commit update its comment: {ci_comments:#?}"
        );

        // Asking answers in the conversation, and the check run is still the one.
        let asked = world
            .bot
            .comment((REPO, PR), "asked", ("alice", "COLLABORATOR"), "@agent triage")
            .await;
        let answered = github
            .wait_until(super::harness::LIMIT, |state| {
                state
                    .comments_on(REPO, PR)
                    .iter()
                    .filter(|c| c.body.contains("CI triage"))
                    .count()
                    == 2
            })
            .await;
        assert!(answered, "{:#?}", world.bot_comments());
        world.settled().await;
        let runs = github.state(|s| s.check_runs_named(REPO, "pitcrew triage").len());
        assert_eq!(runs, 1);
        assert_eq!(world.bot.reactions_on_comment(asked), ["eyes"]);
        github.assert_no_violations();
        world.bot
    });
}
