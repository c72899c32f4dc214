//! The `pitcrew` binary as a user runs it: exit codes, what reaches stdout and stderr, and that no
//! secret is ever printed.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "a failing test should panic")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pitcrew_tests::serve_process::ServeProcess;

/// A fresh directory for one test (the binary reads `./pitcrew.toml` when it exists).
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pitcrew-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `pitcrew ARGS` in `dir` with only the given environment (plus PATH).
fn pitcrew(dir: &PathBuf, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pitcrew"));
    command.args(args).current_dir(dir).env_clear();
    if let Some(path) = std::env::var_os("PATH") {
        command.env("PATH", path);
    }
    command.envs(env.iter().copied()).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn version_and_help() {
    let dir = scratch("version");
    let out = pitcrew(&dir, &["--version"], &[]);
    assert!(out.status.success());
    assert_eq!(
        text(&out.stdout).trim(),
        format!("pitcrew {}", env!("CARGO_PKG_VERSION"))
    );
    let out = pitcrew(&dir, &["--help"], &[]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    assert!(help.contains("config") && help.contains("--log-format"), "{help}");
}

#[test]
fn a_good_configuration_is_printed_with_every_secret_redacted() {
    let dir = scratch("good");
    std::fs::write(
        dir.join("pitcrew.toml"),
        "[model]\nprovider = \"anthropic\"\nname = \"claude-sonnet-4-5\"\n\n[github]\nwebhook_secret = \"whsec-from-file-123\"\n",
    )
    .unwrap();
    let out = pitcrew(
        &dir,
        &["--log-format", "json", "config", "check", "--set", "agent.max_steps=12"],
        &[
            ("ANTHROPIC_API_KEY", "sk-ant-very-secret-456"),
            ("PITCREW_AGENT_TRIGGER", "@crew"),
        ],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("name = \"claude-sonnet-4-5\""), "{stdout}");
    assert!(stdout.contains("max_steps = 12"), "{stdout}");
    assert!(stdout.contains("trigger = \"@crew\""), "{stdout}");
    assert!(stdout.contains("webhook_secret = \"[redacted]\""), "{stdout}");
    assert!(stdout.contains("$ANTHROPIC_API_KEY (set)"), "{stdout}");
    for secret in ["whsec-from-file-123", "sk-ant-very-secret-456"] {
        assert!(!stdout.contains(secret) && !stderr.contains(secret), "{secret} leaked");
    }
}

#[test]
fn each_kind_of_bad_configuration_is_reported_clearly() {
    let dir = scratch("bad");
    let file = dir.join("bad.toml");
    let file_arg = file.to_str().unwrap();
    let check = |contents: &str, env: &[(&str, &str)]| {
        std::fs::write(&file, contents).unwrap();
        let out = pitcrew(&dir, &["config", "check", "--config", file_arg], env);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
        assert!(out.stdout.is_empty());
        text(&out.stderr)
    };
    let key = [("OPENAI_API_KEY", "sk-x")];

    let stderr = check("[model]\nname = \"gpt-4o\nprovider = \"openai\"\n", &key);
    assert!(
        stderr.starts_with(&format!("error: {file_arg}:2:")),
        "malformed TOML: {stderr}"
    );

    let stderr = check("[model]\nname = \"gpt-4o\"\nnmae = \"x\"\n", &key);
    assert!(
        stderr.contains(&format!("{file_arg}:3")) && stderr.contains("model.nmae"),
        "unknown key: {stderr}"
    );

    let stderr = check("[agent]\nmax_steps = \"many\"\n[model]\nname = \"gpt-4o\"\n", &key);
    assert!(
        stderr.contains(&format!("{file_arg}:2")) && stderr.contains("agent.max_steps"),
        "wrong type: {stderr}"
    );

    let stderr = check("[model]\nprovider = \"openai\"\n", &key);
    assert!(
        stderr.contains("model.name") && stderr.contains("[model]") && stderr.contains("PITCREW_MODEL_NAME"),
        "missing key: {stderr}"
    );

    let stderr = check("[model]\nname = \"gpt-4o\"\n", &[]);
    assert!(
        stderr.contains("OPENAI_API_KEY") && stderr.contains("api_key_env"),
        "missing API key: {stderr}"
    );

    let stderr = check(
        "[model]\nname = \"gpt-4o\"\n",
        &[("OPENAI_API_KEY", "sk-x"), ("PITCREW_MODEL_NAM", "y")],
    );
    assert!(
        stderr.contains("PITCREW_MODEL_NAM") && stderr.contains("PITCREW_MODEL_NAME"),
        "unknown env: {stderr}"
    );

    // Several problems at once are all reported, one line each, and never with a Rust debug dump.
    let stderr = check(
        "[model]\nname = \"gpt-4o\"\nprovider = \"openia\"\n[agent]\nmax_wall_time = \"soon\"\n",
        &key,
    );
    assert_eq!(
        stderr.lines().filter(|l| l.starts_with("error: ")).count(),
        2,
        "{stderr}"
    );
    assert!(!stderr.contains("panicked") && !stderr.contains("Error {"), "{stderr}");
}

#[test]
fn a_local_server_needs_no_key() {
    let dir = scratch("local");
    let out = pitcrew(
        &dir,
        &[
            "config",
            "check",
            "--set",
            "model.base_url=http://127.0.0.1:11434/v1",
            "--set",
            "model.name=qwen2.5-coder",
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("not required"), "{}", text(&out.stdout));
}

#[test]
fn run_prints_one_json_report_and_exits_by_its_status() {
    use pitcrew_tests::repo::TestRepo;
    use pitcrew_tests::scripted_model::{Reply, Script, ScriptedModel};

    let repo = TestRepo::new(&[("greeting.txt", "helo\n")]).unwrap();
    let server = ScriptedModel::start(
        Script::new()
            .turn(
                Reply::new()
                    .tool_call("read_file", serde_json::json!({"path": "greeting.txt"}))
                    .usage(500, 20),
            )
            .turn(
                Reply::new()
                    .tool_call(
                        "edit_file",
                        serde_json::json!({"path": "greeting.txt", "old_string": "helo", "new_string": "hello"}),
                    )
                    .usage(600, 30),
            )
            .turn(Reply::text("Fixed the typo in greeting.txt.").usage(700, 10)),
    );
    let base_url = server.openai_base_url();
    let out = pitcrew(
        &repo.path().to_owned(),
        &[
            "run",
            "--json",
            "--model",
            "gpt-4o",
            "--base-url",
            &base_url,
            "--sandbox",
            "local",
            "Fix the typo in greeting.txt",
        ],
        &[],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}\n{stdout}");
    assert!(stderr.contains("  edit_file {"), "progress lines: {stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    for key in [
        "status",
        "branch",
        "commit",
        "changed_files",
        "tests",
        "plan",
        "usage",
        "cost_usd",
        "steps",
        "duration_ms",
        "summary",
    ] {
        assert!(report.get(key).is_some(), "missing {key}: {stdout}");
    }
    assert_eq!(report["status"], "finished");
    assert_eq!(report["branch"], "pitcrew/fix-the-typo-in-greeting-txt");
    assert_eq!(
        report["changed_files"],
        serde_json::json!([{"path": "greeting.txt", "change": "modified"}])
    );
    assert_eq!(report["usage"]["input_tokens"], 1800);
    assert_eq!(
        repo.git(&["show", "pitcrew/fix-the-typo-in-greeting-txt:greeting.txt"])
            .unwrap(),
        "hello\n"
    );

    // A model that keeps failing: the run stops with model_error and a non-zero exit.
    let broken = ScriptedModel::start(Script::new().turn(pitcrew_tests::scripted_model::Turn::unauthorized()));
    let out = pitcrew(
        &repo.path().to_owned(),
        &[
            "run",
            "--model",
            "gpt-4o",
            "--base-url",
            &broken.openai_base_url(),
            "--sandbox",
            "local",
            "--in-place",
            "Anything",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("stopped: model error"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn review_prints_the_findings_of_a_local_branch_and_fails_on_a_blocking_one() {
    use pitcrew_tests::repo::TestRepo;
    use pitcrew_tests::scripted_model::{Reply, Script, ScriptedModel};

    let repo = TestRepo::new(&[
        ("calc.sh", "add() {\n    echo $(($1 + $2))\n}\n"),
        ("README.md", "calc\n"),
    ])
    .unwrap();
    repo.git(&["checkout", "-q", "-b", "feature"]).unwrap();
    repo.write("calc.sh", "add() {\n    echo $(($1 - $2))\n}\n").unwrap();
    repo.git(&["commit", "-q", "-am", "calc: subtract"]).unwrap();
    let head = repo.git(&["rev-parse", "HEAD"]).unwrap();
    let finding = || {
        Script::new()
            .turn(Reply::new().tool_call(
                "review_comment",
                serde_json::json!({
                    "path": "calc.sh", "line": 2, "severity": "blocking", "category": "bug", "verified": true,
                    "body": "`add` now subtracts.\nEvery caller breaks.",
                    "suggestion": "    echo $(($1 + $2))"
                }),
            ))
            .turn(Reply::text("Makes `add` subtract.\nIt breaks every caller."))
    };
    let model = ScriptedModel::start(finding());
    let base_url = model.openai_base_url();
    let args = |base_url: &str, extra: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = [
            "review",
            "--base",
            "main",
            "--model",
            "gpt-4o",
            "--base-url",
            base_url,
            "--sandbox",
            "local",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect();
        args.extend(extra.iter().map(|a| (*a).to_owned()));
        args
    };
    let run = |args: Vec<String>| {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        pitcrew(&repo.path().to_owned(), &refs, &[])
    };
    let out = run(args(&base_url, &["--fail-on", "blocking"]));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stderr}\n{stdout}");
    assert!(
        stdout.starts_with(
            "calc.sh:2: blocking (bug): `add` now subtracts.\n    Every caller breaks.\n    suggested:\n    |     echo $(($1 + $2))\n"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("Makes `add` subtract."), "{stdout}");
    assert!(
        stdout.contains("Reviewed 1 of 1 changed file (2 of 2 lines)."),
        "{stdout}"
    );
    // The model saw the branch's diff against main, and the prompt says where it runs.
    let prompt = model.requests()[0].raw_body.clone();
    assert!(
        prompt.contains("-    echo $(($1 + $2))") && prompt.contains("+    echo $(($1 - $2))"),
        "{prompt}"
    );
    assert!(prompt.contains("A local run of `pitcrew review`"), "{prompt}");
    // The developer's checkout is as it was: same head, nothing changed or left behind.
    assert_eq!(repo.git(&["rev-parse", "HEAD"]).unwrap(), head);
    assert_eq!(repo.git(&["status", "--porcelain"]).unwrap(), "");

    // As JSON, and without --fail-on the exit status is 0 whatever was found.
    let model = ScriptedModel::start(finding());
    let out = run(args(&model.openai_base_url(), &["--json"]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let review: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    assert_eq!(review["findings"][0]["severity"], "blocking");
    assert_eq!(review["findings"][0]["path"], "calc.sh");
    assert_eq!(review["findings"][0]["on_diff"], true);
    assert_eq!(review["base"], "main");
    assert_eq!(review["status"], "finished");
    assert_eq!(review["files_reviewed"], 1);

    // A base that names nothing: a clear error, exit 3.
    let mut wrong = args(&model.openai_base_url(), &[]);
    wrong[2] = "no-such-branch".to_owned();
    let out = run(wrong);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        text(&out.stderr).contains("`no-such-branch` names no commit of this repository"),
        "{}",
        text(&out.stderr)
    );
}

/// The dev-container image the documentation promises, through `pitcrew run` (which honoured it
/// before the server's jobs did; `suite::fix_job` has their regression test): with no image from
/// the operator and none in `.github/pitcrew.toml`, the agent's commands run in the image of the
/// repository's `.devcontainer/devcontainer.json`.
#[test]
fn run_with_the_docker_sandbox_uses_the_dev_containers_image() {
    use pitcrew_tests::docker::{DEV_CONTAINER_MARKER, DEV_CONTAINER_MARKER_TEXT};
    use pitcrew_tests::repo::TestRepo;
    use pitcrew_tests::scripted_model::{Reply, Script, ScriptedModel};

    let Some(image) = pitcrew_tests::docker::dev_container_image() else {
        return;
    };
    let dev_container = format!("{{\n  // the project's development image\n  \"image\": \"{image}\",\n}}\n");
    let repo = TestRepo::new(&[("a.txt", "a\n"), (".devcontainer/devcontainer.json", &dev_container)]).unwrap();
    let model = ScriptedModel::start(
        Script::new()
            .turn(Reply::new().tool_call(
                "bash",
                serde_json::json!({ "command": format!("cat {DEV_CONTAINER_MARKER}") }),
            ))
            .turn(Reply::text("Looked at the image.")),
    );
    let out = pitcrew(
        &repo.path().to_owned(),
        &[
            "run",
            "--json",
            "--model",
            "gpt-4o",
            "--base-url",
            &model.openai_base_url(),
            "--sandbox",
            "docker",
            "--set",
            "sandbox.memory=256MiB",
            "--in-place",
            "Look at the image",
        ],
        &[],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}\n{stdout}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let sandbox = report["sandbox"].as_str().unwrap();
    assert!(sandbox.starts_with(&format!("docker {image} ")), "{sandbox}");
    model.assert_script_consumed();
    let requests = model.requests();
    assert!(
        requests[1].raw_body.contains(DEV_CONTAINER_MARKER_TEXT),
        "the command did not run in the dev container's image:\n{}",
        requests[1].raw_body
    );
}

/// What a model following injected text would try: the secrets through `/proc` and `ps`.
const PROC_SNOOP: [&str; 3] = [
    "cat /proc/$PPID/environ; echo \" rc=$?\"",
    "for p in /proc/[0-9]*; do cat $p/environ 2>/dev/null; echo; done; cat /proc/self/environ; echo \" rc=$?\"",
    "ps e 2>&1 || echo no ps",
];

/// The model's last request holds the output of each [`PROC_SNOOP`] command.
fn assert_ran(last_request: &str) {
    assert!(
        last_request.matches(" rc=").count() >= 2,
        "no command output reached the model:\n{last_request}"
    );
    assert!(
        last_request.contains("PID") || last_request.contains("no ps"),
        "no output of ps:\n{last_request}"
    );
}

/// Regression test for the security issue (`pitcrew run --sandbox local` and `OPENAI_API_KEY`):
/// the key in pitcrew's environment is not readable by the commands the model runs, and still
/// reaches the model server.
#[test]
fn run_with_the_local_sandbox_keeps_the_api_key_from_commands() {
    use pitcrew_tests::repo::TestRepo;
    use pitcrew_tests::scripted_model::{Reply, Script, ScriptedModel};

    const KEY: &str = "sk-the-run-key-0123456789abcdef";
    let repo = TestRepo::new(&[("a.txt", "a\n")]).unwrap();
    let mut script = Script::new();
    for command in PROC_SNOOP {
        script = script.turn(Reply::new().tool_call("bash", serde_json::json!({ "command": command })));
    }
    let model = ScriptedModel::start(script.turn(Reply::text("Looked around.")));
    let out = pitcrew(
        &repo.path().to_owned(),
        &[
            "run",
            "--json",
            "--model",
            "gpt-4o",
            "--base-url",
            &model.openai_base_url(),
            "--sandbox",
            "local",
            "--in-place",
            "Look around",
        ],
        &[("OPENAI_API_KEY", KEY)],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    model.assert_script_consumed();
    let requests = model.requests();
    assert_ran(&requests.last().unwrap().raw_body);
    for request in &requests {
        assert!(
            !request.raw_body.contains(KEY),
            "a command read the key:\n{}",
            request.raw_body
        );
        assert_eq!(request.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
    }
}

/// The security issue's `pitcrew run --json`: a repository the agent's command made inside the
/// checkout used to fail the commit (exit 3, nothing on stdout, the work uncommitted). It is left
/// out and listed; and a commit that does fail (a stale index lock) still prints the JSON report,
/// with what the run spent, and exits 1.
#[test]
fn run_json_reports_a_nested_repository_and_a_failed_commit() {
    use pitcrew_tests::repo::TestRepo;
    use pitcrew_tests::scripted_model::{Reply, Script, ScriptedModel};
    use serde_json::json;

    let run = |repo: &TestRepo, server: &ScriptedModel, task: &str| {
        let base_url = server.openai_base_url();
        let out = pitcrew(
            &repo.path().to_owned(),
            &[
                "run",
                "--json",
                "--model",
                "gpt-4o",
                "--base-url",
                &base_url,
                "--sandbox",
                "local",
                task,
            ],
            &[],
        );
        let stdout = text(&out.stdout);
        let report: serde_json::Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("stdout is no JSON report ({e}): {stdout}\n{}", text(&out.stderr)));
        (out.status.code(), report)
    };

    let repo = TestRepo::new(&[("a.txt", "a\n")]).unwrap();
    let server = ScriptedModel::start(
        Script::new()
            .turn(
                Reply::new()
                    .tool_call(
                        "bash",
                        json!({"command": "mkdir -p tests/fixture && git -C tests/fixture init -q && echo x > tests/fixture/x.txt && echo b > b.txt"}),
                    )
                    .usage(500, 20),
            )
            .turn(Reply::text("Added b.txt.").usage(600, 10)),
    );
    let (code, report) = run(&repo, &server, "Add b");
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(report["status"], "finished");
    assert_eq!(report["error"], serde_json::Value::Null);
    assert_eq!(report["skipped_repositories"], json!(["tests/fixture/"]));
    assert_eq!(report["changed_files"], json!([{"path": "b.txt", "change": "added"}]));
    let commit = report["commit"].as_str().unwrap();
    assert_eq!(
        repo.git(&["ls-tree", "-r", "--name-only", commit]).unwrap(),
        "a.txt\nb.txt\n"
    );

    let repo = TestRepo::new(&[("a.txt", "a\n")]).unwrap();
    std::fs::write(repo.file(".git/index.lock"), "").unwrap();
    let server = ScriptedModel::start(
        Script::new()
            .turn(
                Reply::new()
                    .tool_call("bash", json!({"command": "echo b > b.txt"}))
                    .usage(500, 20),
            )
            .turn(Reply::text("Added b.txt.").usage(600, 10)),
    );
    let (code, report) = run(&repo, &server, "Add b");
    assert_eq!(code, Some(1), "{report:#}");
    assert_eq!(report["status"], "commit_failed");
    assert!(
        report["error"].as_str().unwrap().contains("the index is locked"),
        "{report:#}"
    );
    assert_eq!(report["commit"], serde_json::Value::Null);
    assert_eq!(report["usage"]["input_tokens"], 1100);
    assert_eq!(report["usage"]["output_tokens"], 30);
    assert_eq!(report["summary"], "Added b.txt.");
    assert_eq!(repo.read("b.txt").unwrap(), "b\n");
}

/// `pitcrew serve` killed with SIGKILL while the agent waits for the model, then started again on
/// the same data directory: the orphaned container is removed at start-up, the job runs again as
/// its second attempt and pushes its fix, and the one delivery is processed once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_killed_mid_job_retries_the_job_after_a_restart() {
    use std::time::Duration;

    use pitcrew::jobs::{DeliveryId, JobFilter, JobState, JobStore, SqliteStore};
    use pitcrew_tests::fake_github::FakeGithub;
    use pitcrew_tests::git_server::GitServer;
    use pitcrew_tests::scenario::{CALC, Comment, calc_pull_request, comment_payload};
    use pitcrew_tests::scripted_model::{Reply, Script, ScriptedModel};
    use pitcrew_tests::server_config::ServerOverrides;
    use serde_json::json;

    const REPO: &str = "acme/calc";
    const SECRET: &str = "the restart test's webhook secret";
    const WAIT: Duration = Duration::from_secs(150);
    let Some(image) = pitcrew_tests::docker::test_image() else {
        return;
    };

    let github = FakeGithub::start();
    let git_server = GitServer::start_with(github.token_check());
    let pull = calc_pull_request(&git_server, &github, REPO, 7).unwrap();
    let bare = git_server.repo_path(REPO);

    // The first answer is held far longer than the test runs: the process dies while it waits.
    let model = ScriptedModel::start(Script::new().turn(Reply::text("Looking.").chunk_delay(Duration::from_secs(600))));

    let dir = scratch("serve-restart");
    let data = dir.join("data");
    let settings = ServerOverrides::new(&github, SECRET, &data)
        .model(&model)
        .docker(image)
        .set("server.job_attempts", "2")
        .args();

    // The first life: a fix request, and the agent waiting for the model.
    let mut first = serve(&dir, &settings).await;
    let url = first.url().to_owned();
    let comment = github.add_issue_comment(REPO, 7, "alice", "@agent fix the add test");
    let payload = comment_payload(
        REPO,
        &git_server.url(REPO),
        7,
        &Comment {
            id: comment,
            login: "alice",
            user_id: 4242,
            association: "COLLABORATOR",
            body: "@agent fix the add test",
        },
        Some(github.installation_id()),
    );
    let body = serde_json::to_vec(&payload).unwrap();
    let response = reqwest::Client::new()
        .post(format!("{url}/webhook"))
        .header("X-GitHub-Event", "issue_comment")
        .header("X-GitHub-Delivery", "delivery-restart-1")
        .header(
            "X-Hub-Signature-256",
            pitcrew::server::signature::sign(&secrecy::SecretString::from(SECRET), &body),
        )
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 202);
    // The scripted model offers no wait: look at what it received until the first request is in.
    let deadline = std::time::Instant::now() + WAIT;
    while model.requests().is_empty() {
        assert!(std::time::Instant::now() < deadline, "the model was never asked");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The server names the job's sandbox after its instance (`data_dir/instance`) and the job.
    let instance = std::fs::read_to_string(data.join("instance")).unwrap();
    let sandbox = format!("{}-1", instance.trim());
    let orphan = docker(&[
        "ps",
        "-a",
        "-q",
        "--no-trunc",
        "--filter",
        &format!("label=pitcrew.job={sandbox}"),
    ]);
    assert!(!orphan.is_empty(), "the job's container is not running");
    first.kill().await;
    let by_id = format!("id={orphan}");
    assert_eq!(docker(&["ps", "-a", "-q", "--no-trunc", "--filter", &by_id]), orphan);

    // The second life: the orphan is gone before it listens; the job runs again and delivers.
    model.push(Reply::new().tool_call("read_file", json!({"path": "calc.sh"})));
    model.push(Reply::new().tool_call(
        "edit_file",
        json!({"path": "calc.sh", "old_string": "$(($1 - $2))", "new_string": "$(($1 + $2))"}),
    ));
    model.push(Reply::text("`add` adds now."));
    let second = serve(&dir, &settings).await;
    let log = second.log();
    // Gone before the server listens (the second attempt may have a container of its own by now).
    assert_eq!(
        docker(&["ps", "-a", "-q", "--no-trunc", "--filter", &by_id]),
        "",
        "the orphaned container was not removed at start-up:\n{log}"
    );
    let bot = github.bot_login();
    let done = github
        .wait_until(WAIT, |state| {
            let succeeded = state
                .check_runs_named(REPO, "pitcrew")
                .iter()
                .any(|run| run.conclusion.as_deref() == Some("success"));
            let reported = state
                .comments_on(REPO, 7)
                .iter()
                .any(|c| c.user == bot && c.body.contains("Pushed"));
            succeeded && reported
        })
        .await;
    assert!(done, "the job never succeeded: {:#?}", github.check_runs());
    // The retry reported in the first attempt's check run and progress comment: none is left behind
    // "in progress".
    let runs = github.check_runs();
    assert_eq!(runs.len(), 1, "{runs:#?}");
    let progress: Vec<_> = github
        .comments_on(REPO, 7)
        .into_iter()
        .filter(|c| c.user == bot && c.body.starts_with("<!-- pitcrew:job="))
        .collect();
    assert_eq!(progress.len(), 1, "{progress:#?}");
    assert!(
        !progress[0].body.contains("this comment updates as I go"),
        "{}",
        progress[0].body
    );
    let pushed = git_server.rev_parse(REPO, "refs/heads/docs").unwrap();
    assert_ne!(pushed, pull.head_sha);
    let shown = Command::new("git")
        .args(["show", &format!("{pushed}:calc.sh")])
        .current_dir(&bare)
        .output()
        .unwrap();
    assert_eq!(text(&shown.stdout), CALC.replace(" - ", " + "));

    // Stopped gracefully, the store tells the rest: one delivery, one job, two attempts.
    let log = second.log();
    let status = second.stop().await;
    assert!(status.success(), "{log}");
    let store = SqliteStore::open(&data).unwrap();
    let jobs = store.jobs(&JobFilter::default()).await.unwrap();
    assert_eq!(jobs.len(), 1, "{jobs:#?}");
    assert_eq!(jobs[0].state, JobState::Succeeded, "{:?}", jobs[0].error);
    assert_eq!(jobs[0].attempts, 2);
    let delivery = store
        .delivery(&DeliveryId("delivery-restart-1".to_owned()))
        .await
        .unwrap()
        .unwrap();
    assert!(delivery.processed_at.is_some(), "{delivery:?}");
    let events = store.events(jobs[0].id).await.unwrap();
    assert!(events.iter().any(|e| e.kind == "interrupted"), "{events:#?}");
    assert_eq!(pitcrew_tests::docker::containers_of(&sandbox).unwrap().trim(), "");
    model.assert_script_consumed();
}

/// `docker ARGS`' standard output, trimmed.
fn docker(args: &[&str]) -> String {
    let output = Command::new("docker").args(args).output().unwrap();
    assert!(output.status.success(), "docker {args:?}: {}", text(&output.stderr));
    text(&output.stdout).trim().to_owned()
}

/// `pitcrew SETTINGS serve` in `dir`, once it listens.
async fn serve(dir: &Path, settings: &[String]) -> ServeProcess {
    ServeProcess::start(Path::new(env!("CARGO_BIN_EXE_pitcrew")), dir, settings, &[]).await
}

/// `pitcrew action` with a simulated Actions environment: the event file, `GITHUB_*`, the inputs
/// as `INPUT_*`, and the step's output and summary files.
mod action {
    use std::path::{Path, PathBuf};
    use std::process::Output;

    use pitcrew_tests::ci_log::{actions_log, failing_output};
    use pitcrew_tests::fake_github::{ActionsJob, FakeGithub, Permission, ReactionTarget, WorkflowRun};
    use pitcrew_tests::git_server::GitServer;
    use pitcrew_tests::scenario::{CALC, CalcPull, Comment, calc_pull_request, comment_payload, workflow_run_payload};
    use pitcrew_tests::scripted_model::{Reply, Script, ScriptedModel};
    use serde_json::json;

    use super::{PROC_SNOOP, assert_ran, scratch, text};

    const REPO: &str = "acme/calc";
    const PR: u64 = 7;
    const TOKEN: &str = "ghs_theActionsRunnersToken0123";
    const ACTIONS: &str = "github-actions[bot]";

    struct Step {
        github: FakeGithub,
        git: GitServer,
        pull: CalcPull,
        dir: PathBuf,
    }

    impl Step {
        fn new(name: &str) -> Step {
            let github = FakeGithub::start();
            github.allow_token_as(TOKEN, ACTIONS);
            let git = GitServer::start_with(github.token_check());
            let pull = calc_pull_request(&git, &github, REPO, PR).unwrap();
            github.set_permission(REPO, "mallory", Permission::Read);
            Step {
                github,
                git,
                pull,
                dir: scratch(name),
            }
        }

        /// Runs the step on `login`'s comment `body`, with `model` and `image` (the sandbox).
        fn run(
            &self,
            login: &str,
            association: &str,
            body: &str,
            model: &ScriptedModel,
            image: Option<&str>,
        ) -> Output {
            let event = self.comment(login, association, body);
            self.run_event("issue_comment", &event, "auto", model, image)
        }

        /// `login`'s comment `body` on the pull request, and the `issue_comment` event for it.
        fn comment(&self, login: &str, association: &str, body: &str) -> serde_json::Value {
            let id = self.github.add_issue_comment(REPO, PR, login, body);
            let comment = Comment {
                id,
                login,
                user_id: 4242,
                association,
                body,
            };
            comment_payload(REPO, &self.git.url(REPO), PR, &comment, None)
        }

        /// Runs the step in `mode` on event `name` of repository `repo`, with the local Cargo
        /// registry of the chore tests as the Cargo index and the sandbox on the host.
        fn run_event_in(
            &self,
            repo: &str,
            name: &str,
            event: &serde_json::Value,
            mode: &str,
            model: &ScriptedModel,
        ) -> Output {
            self.run_with(repo, name, event, mode, model, None)
        }

        /// Runs the step on event `name` with `payload`, in `mode`.
        fn run_event(
            &self,
            name: &str,
            event: &serde_json::Value,
            mode: &str,
            model: &ScriptedModel,
            image: Option<&str>,
        ) -> Output {
            self.run_with(REPO, name, event, mode, model, image)
        }

        fn run_with(
            &self,
            repo: &str,
            name: &str,
            event: &serde_json::Value,
            mode: &str,
            model: &ScriptedModel,
            image: Option<&str>,
        ) -> Output {
            let sandbox = match image {
                Some(image) => format!("[sandbox]\nbackend = \"docker\"\nimage = \"{image}\"\nmemory = \"256MiB\"\n"),
                // The chores run the host's toolchain, which lives under the invoking user's home:
                // as root, the default sandbox user could not use it.
                None if repo != REPO => "[sandbox]\nbackend = \"local\"\nlocal_user = \"self\"\n".to_owned(),
                None => "[sandbox]\nbackend = \"local\"\n".to_owned(),
            };
            self.run_configured(repo, (name, event), mode, model, &sandbox, &[])
        }

        /// Runs the step with `sandbox` as the config file's `[sandbox]` section and `extra`
        /// variables on top of the runner's.
        fn run_configured(
            &self,
            repo: &str,
            (name, event): (&str, &serde_json::Value),
            mode: &str,
            model: &ScriptedModel,
            sandbox: &str,
            extra: &[(&str, &str)],
        ) -> Output {
            let event_path = self.dir.join("event.json");
            std::fs::write(&event_path, serde_json::to_vec(&event).unwrap()).unwrap();
            let config = self.dir.join("pitcrew.toml");
            std::fs::write(&config, format!("[model]\nmax_retries = 0\n\n{sandbox}")).unwrap();
            let temp = self.dir.join("runner-temp");
            std::fs::create_dir_all(&temp).unwrap();
            let vars: Vec<(String, String)> = vec![
                ("GITHUB_ACTIONS".into(), "true".into()),
                ("GITHUB_EVENT_NAME".into(), name.into()),
                ("GITHUB_EVENT_PATH".into(), event_path.display().to_string()),
                ("GITHUB_REPOSITORY".into(), repo.into()),
                ("GITHUB_API_URL".into(), self.github.url()),
                ("GITHUB_SERVER_URL".into(), "http://github.invalid".into()),
                ("GITHUB_WORKSPACE".into(), self.dir.display().to_string()),
                ("GITHUB_RUN_ID".into(), "1001".into()),
                ("GITHUB_RUN_ATTEMPT".into(), "1".into()),
                ("GITHUB_OUTPUT".into(), self.output().display().to_string()),
                ("GITHUB_STEP_SUMMARY".into(), self.summary().display().to_string()),
                ("RUNNER_TEMP".into(), temp.display().to_string()),
                ("INPUT_GITHUB_TOKEN".into(), TOKEN.into()),
                ("INPUT_API_KEY".into(), "sk-the-model-key-0123".into()),
                ("INPUT_MODEL".into(), "gpt-4o".into()),
                ("INPUT_BASE_URL".into(), model.openai_base_url()),
                ("INPUT_TRIGGER".into(), "@agent".into()),
                ("INPUT_MODE".into(), mode.into()),
                ("INPUT_CONFIG".into(), config.display().to_string()),
            ];
            // A runner has a HOME, and the toolchain the project's commands need under it.
            let vars: Vec<(String, String)> = vars
                .into_iter()
                .chain(
                    ["HOME", "CARGO_HOME", "RUSTUP_HOME"]
                        .into_iter()
                        .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_owned(), v))),
                )
                .chain(extra.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())))
                .collect();
            let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            super::pitcrew(&self.dir, &["action"], &vars)
        }

        fn output(&self) -> PathBuf {
            self.dir.join("github-output")
        }

        fn summary(&self) -> PathBuf {
            self.dir.join("step-summary.md")
        }

        fn outputs(&self) -> std::collections::BTreeMap<String, String> {
            parse_outputs(&std::fs::read_to_string(self.output()).unwrap_or_default())
        }
    }

    /// `name<<DELIMITER` … `DELIMITER` blocks, as the runner reads `GITHUB_OUTPUT`.
    fn parse_outputs(text: &str) -> std::collections::BTreeMap<String, String> {
        let mut outputs = std::collections::BTreeMap::new();
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            let (name, delimiter) = line.split_once("<<").unwrap();
            let value: Vec<&str> = lines.by_ref().take_while(|l| *l != delimiter).collect();
            outputs.insert(name.to_owned(), value.join("\n"));
        }
        outputs
    }

    fn git(dir: &Path, args: &[&str]) -> String {
        text(
            &std::process::Command::new("git")
                .args(args)
                .current_dir(dir)
                .output()
                .unwrap()
                .stdout,
        )
        .trim()
        .to_owned()
    }

    fn script() -> Script {
        Script::new()
            .turn(
                Reply::new()
                    .tool_call("read_file", json!({"path": "calc.sh"}))
                    .usage(900, 20),
            )
            .turn(
                Reply::new()
                    .tool_call(
                        "edit_file",
                        json!({"path": "calc.sh", "old_string": "$(($1 - $2))", "new_string": "$(($1 + $2))"}),
                    )
                    .usage(1_000, 30),
            )
            .turn(Reply::text("`add` subtracted; it adds now.").usage(1_100, 20))
    }

    /// A token of GitHub's installation-token shape that pitcrew never held.
    const SHAPED: &str = "ghs_PlantedByAHostilePullRequest01234567";

    /// Regression test for the security issue "the Action's default `sandbox: local` hands the
    /// step's secrets to the agent": the commands cannot read them, and what the model says about
    /// them anyway is withheld from every GitHub write, the commit and the step summary.
    #[test]
    fn with_the_local_sandbox_commands_cannot_read_the_steps_secrets_and_nothing_leaks_to_github() {
        const KEY: &str = "sk-the-model-key-0123";
        let step = Step::new("action-secrets");
        let mut script = Script::new();
        for command in PROC_SNOOP {
            script = script.turn(
                Reply::new()
                    .tool_call("bash", json!({ "command": command }))
                    .usage(900, 20),
            );
        }
        let script = script
            .turn(
                Reply::new()
                    .tool_call("read_file", json!({"path": "calc.sh"}))
                    .usage(900, 20),
            )
            .turn(
                Reply::new()
                    .tool_call(
                        "edit_file",
                        json!({"path": "calc.sh", "old_string": "$(($1 - $2))", "new_string": "$(($1 + $2))"}),
                    )
                    .usage(1_000, 30),
            )
            .turn(
                Reply::new()
                    .tool_call(
                        "write_file",
                        json!({"path": "notes.txt", "content": format!("found {SHAPED} and {TOKEN}\n")}),
                    )
                    .usage(1_000, 30),
            )
            .turn(
                Reply::text(format!(
                    "Fixed `add`. The token is {TOKEN}, the key {KEY}, and {SHAPED}."
                ))
                .usage(1_100, 20),
            );
        let model = ScriptedModel::start(script);
        let out = step.run("alice", "COLLABORATOR", "@agent fix the add test", &model, None);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(out.status.success(), "{stdout}\n{stderr}");
        model.assert_script_consumed();

        // Each command ran and its output went back to the model, without a secret in it.
        // The requests up to the one that carries the last command's output (the later ones hold
        // the model's own planted text).
        let requests = model.requests();
        let snooped = &requests[..=PROC_SNOOP.len()];
        let last = snooped.last().unwrap();
        assert_ran(&last.raw_body);
        for request in snooped {
            for secret in [TOKEN, KEY] {
                assert!(
                    !request.raw_body.contains(secret),
                    "a command read {secret}:\n{}",
                    request.raw_body
                );
            }
        }
        // The key reached the model server the proper way.
        assert_eq!(last.header("authorization"), Some(format!("Bearer {KEY}").as_str()));

        // Every write GitHub received passed the filter, and the reports say something was withheld.
        let writes: Vec<String> = step
            .github
            .requests()
            .into_iter()
            .filter(|r| r.method != "GET")
            .map(|r| r.body.to_string())
            .collect();
        for body in &writes {
            for secret in [TOKEN, KEY, SHAPED] {
                assert!(!body.contains(secret), "{secret} was sent to GitHub: {body}");
            }
        }
        assert!(writes.iter().any(|b| b.contains("[redacted]")), "{writes:?}");
        let comments = step.github.comments_on(REPO, PR);
        assert!(
            comments
                .iter()
                .any(|c| c.user == ACTIONS && c.body.contains("withheld a secret")),
            "{comments:?}"
        );
        let runs = step.github.check_runs();
        assert_eq!(runs.len(), 1);
        let run = runs[0].output.to_string();
        assert!(!run.contains(TOKEN) && !run.contains(SHAPED), "{run}");

        // The step summary and the outputs too.
        let summary = std::fs::read_to_string(step.summary()).unwrap();
        let outputs = std::fs::read_to_string(step.output()).unwrap();
        for secret in [TOKEN, KEY, SHAPED] {
            assert!(!summary.contains(secret), "{secret} in the step summary:\n{summary}");
            assert!(!outputs.contains(secret), "{secret} in the outputs:\n{outputs}");
        }
        assert!(summary.contains("[redacted]"), "{summary}");
        assert!(step.outputs()["summary"].contains("[redacted]"));

        // The commit: the planted file went out redacted, and the report says so.
        let pushed = step
            .git
            .rev_parse(REPO, &format!("refs/heads/{}", step.pull.branch))
            .unwrap();
        let bare = step.git.repo_path(REPO);
        assert_eq!(
            git(&bare, &["show", &format!("{pushed}:notes.txt")]),
            "found [redacted] and [redacted]"
        );
        let message = git(&bare, &["log", "-1", "--format=%B", &pushed]);
        for secret in [TOKEN, KEY, SHAPED] {
            assert!(!message.contains(secret), "{message}");
        }
        assert!(summary.contains("`notes.txt`"), "{summary}");
        step.github.assert_no_violations();
    }

    /// Issue "fix until green": pushed with the workflow's own `GITHUB_TOKEN`, pitcrew's commit
    /// starts no workflow on GitHub. The repository has CI (a run on `main`), so the step waits
    /// for CI on its commit; none starts, and the step ends saying why and what to do.
    #[test]
    fn a_push_whose_token_starts_no_ci_ends_the_wait_with_the_token_explained() {
        let step = Step::new("action-no-ci");
        let run = step
            .github
            .add_workflow_run(REPO, WorkflowRun::new(0, "CI", &step.pull.base_sha));
        step.github.add_actions_job(REPO, ActionsJob::new(0, run, "test"));
        let model = ScriptedModel::start(script());
        let event = step.comment("alice", "COLLABORATOR", "@agent fix the add test");
        let sandbox = "[sandbox]\nbackend = \"local\"\n\n[ci_loop]\nstart_timeout = \"2s\"\npoll_interval = \"1s\"\n";
        let out = step.run_configured(REPO, ("issue_comment", &event), "auto", &model, sandbox, &[]);
        let stdout = text(&out.stdout);
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{stdout}\n{stderr}");

        let pushed = step
            .git
            .rev_parse(REPO, &format!("refs/heads/{}", step.pull.branch))
            .unwrap();
        assert_ne!(pushed, step.pull.head_sha);
        let outputs = step.outputs();
        assert_eq!(outputs["conclusion"], "neutral", "{outputs:?}\n{stderr}");
        assert_eq!(outputs["commit_sha"], pushed);
        let summary = std::fs::read_to_string(step.summary()).unwrap();
        assert!(
            summary.contains(&format!("**No CI started on {}.**", &pushed[..7])),
            "{summary}"
        );
        assert!(
            summary.contains("Pushes made with a workflow's `GITHUB_TOKEN` do not start workflows"),
            "{summary}"
        );
        assert!(summary.contains("`actions/create-github-app-token`"), "{summary}");
        let runs = step.github.check_runs();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].output["title"], format!("No CI ran on {}", &pushed[..7]));
        // The wait polled the commit's check suites, and no model call was made after the push.
        assert!(!step.github.requests_to("checks/list-suites-for-ref").is_empty());
        model.assert_script_consumed();
        step.github.assert_no_violations();
    }

    #[test]
    fn a_fix_comment_runs_the_job_and_writes_the_outputs_and_the_summary() {
        let Some(image) = pitcrew_tests::docker::test_image() else {
            return;
        };
        let step = Step::new("action-fix");
        let model = ScriptedModel::start(script());
        let out = step.run("alice", "COLLABORATOR", "@agent fix the add test", &model, Some(image));
        let stdout = text(&out.stdout);
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{stdout}\n{stderr}");

        // Secrets masked before anything else, then the job in a log group.
        assert!(
            stdout.starts_with(&format!("::add-mask::{TOKEN}\n::add-mask::sk-the-model-key-0123\n")),
            "{stdout}"
        );
        assert!(stdout.contains("::group::pitcrew: fix job on acme/calc#7"), "{stdout}");
        assert!(stdout.contains("::endgroup::"), "{stdout}");
        for secret in [TOKEN, "sk-the-model-key-0123"] {
            assert_eq!(stderr.matches(secret).count(), 0, "a secret reached the log");
        }

        let pushed = step
            .git
            .rev_parse(REPO, &format!("refs/heads/{}", step.pull.branch))
            .unwrap();
        assert_ne!(pushed, step.pull.head_sha);
        let bare = step.git.repo_path(REPO);
        assert_eq!(
            git(&bare, &["show", &format!("{pushed}:calc.sh")]),
            CALC.replace(" - ", " + ").trim()
        );
        let outputs = step.outputs();
        assert_eq!(outputs["conclusion"], "success", "{outputs:?}");
        assert_eq!(outputs["commit_sha"], pushed);
        assert_eq!(outputs["pr_number"], "");
        assert_eq!(outputs["summary"], "`add` subtracted; it adds now.");
        let summary = std::fs::read_to_string(step.summary()).unwrap();
        assert!(summary.contains("Pushed"), "{summary}");
        assert!(summary.contains("| After | 2 | 0 | 0 |"), "{summary}");

        // The same reports as the server's: eyes, check run, one progress comment, all as the token's account.
        let comments: Vec<_> = step
            .github
            .comments_on(REPO, PR)
            .into_iter()
            .filter(|c| c.user == ACTIONS)
            .collect();
        assert_eq!(comments.len(), 1, "{comments:?}");
        let runs = step.github.check_runs();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].conclusion.as_deref(), Some("success"));
        let reacted = step.github.state(|s| {
            s.reactions
                .iter()
                .any(|r| matches!(r.target, ReactionTarget::IssueComment(_)) && r.content == "eyes")
        });
        assert!(reacted);
        model.assert_script_consumed();
        step.github.assert_no_violations();
    }

    #[test]
    fn a_failed_workflow_run_is_triaged_into_a_check_run_and_the_outputs() {
        let step = Step::new("action-triage");
        // The calc project's own test suite, run for real, as the failing job's log.
        let checkout = step.dir.join("ci-checkout");
        std::fs::create_dir_all(&checkout).unwrap();
        std::fs::write(checkout.join("calc.sh"), CALC).unwrap();
        std::fs::write(checkout.join("run-tests.sh"), pitcrew_tests::scenario::TESTS).unwrap();
        let output = failing_output(&checkout, "sh run-tests.sh", &[]);
        let run_id = step.github.add_workflow_run(
            REPO,
            WorkflowRun::new(0, "CI", &step.pull.head_sha)
                .head_branch(&step.pull.branch)
                .pull_request(PR)
                .conclusion("failure"),
        );
        step.github.add_actions_job(
            REPO,
            ActionsJob::new(0, run_id, "test")
                .step("Run sh run-tests.sh", "failure")
                .conclusion("failure")
                .log(actions_log("sh run-tests.sh", &output, 101)),
        );
        let model = ScriptedModel::start(
            Script::new().turn(Reply::text("`add` in calc.sh:2 subtracts; both tests of `add` fail.").usage(800, 30)),
        );
        let event = workflow_run_payload(REPO, &step.git.url(REPO), run_id, &step.pull.head_sha, PR, None);
        let out = step.run_event("workflow_run", &event, "auto", &model, None);
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
        assert!(
            stdout.contains("::group::pitcrew: triage job on acme/calc#7"),
            "{stdout}"
        );

        let runs = step.github.check_runs();
        assert_eq!(runs.len(), 1, "{runs:#?}");
        assert_eq!(runs[0].name, "pitcrew triage");
        assert_eq!(runs[0].head_sha, step.pull.head_sha);
        let summary = runs[0].output["summary"].as_str().unwrap();
        assert!(summary.contains("| code failure |"), "{summary}");
        assert!(summary.contains("`adds_two_numbers`"), "{summary}");
        assert!(summary.contains("`add` in calc.sh:2 subtracts"), "{summary}");
        let outputs = step.outputs();
        assert_eq!(outputs["conclusion"], "neutral", "{outputs:?}");
        assert_eq!(outputs["pr_number"], "7");
        assert_eq!(
            outputs["summary"],
            "`add` in calc.sh:2 subtracts; both tests of `add` fail."
        );
        let report = std::fs::read_to_string(step.summary()).unwrap();
        assert!(report.contains("**pitcrew · CI triage**"), "{report}");
        // No comment unless the repository asks for one, and nothing pushed.
        assert!(step.github.comments_on(REPO, PR).is_empty());
        assert_eq!(
            step.git.rev_parse(REPO, &format!("refs/heads/{}", step.pull.branch)),
            Some(step.pull.head_sha.clone())
        );
        model.assert_script_consumed();
        step.github.assert_no_violations();
    }

    #[test]
    fn a_scheduled_chore_opens_a_tested_pull_request_and_writes_the_outputs() {
        use pitcrew_tests::cargo_registry::CargoRegistry;
        use pitcrew_tests::chore_fixture::{calcutil, cargo_config, fmtutil, locked, lockfile, write_project};

        const CRATE: &str = "acme/tally";
        let registry = CargoRegistry::start();
        registry
            .publish("calcutil", "1.0.0", &calcutil("1.0.0", "add"), &[])
            .unwrap();
        registry.publish("fmtutil", "0.3.1", &fmtutil("0.3.1"), &[]).unwrap();
        let lock = lockfile(&registry);
        registry
            .publish("calcutil", "1.1.0", &calcutil("1.1.0", "add"), &[])
            .unwrap();

        let step = Step::new("action-chore");
        let project = step.dir.join("project");
        write_project(&project, &registry).unwrap();
        let files: Vec<(String, String)> = ["Cargo.toml", "src/lib.rs", ".cargo/config.toml"]
            .iter()
            .map(|f| (f.to_string(), std::fs::read_to_string(project.join(f)).unwrap()))
            .chain([
                ("Cargo.lock".to_owned(), lock),
                (
                    ".github/pitcrew.toml".to_owned(),
                    "[agent]\ntest_command = \"cargo test\"\n".to_owned(),
                ),
            ])
            .collect();
        let refs: Vec<(&str, &str)> = files.iter().map(|(p, c)| (p.as_str(), c.as_str())).collect();
        step.git.create_repo(CRATE, &refs).unwrap();
        step.github.add_repo(
            pitcrew_tests::fake_github::Repo::new(CRATE)
                .default_branch("main")
                .clone_url(&step.git.url(CRATE))
                .git_dir(step.git.repo_path(CRATE)),
        );
        assert!(cargo_config(&registry).contains(&registry.index_url()));

        // A `schedule` event's payload is the cron line alone: the repository comes from
        // GITHUB_REPOSITORY and the API.
        let model = ScriptedModel::start(Script::new());
        let event = json!({ "schedule": "0 6 * * 1" });
        let out = step.run_event_in(CRATE, "schedule", &event, "chore", &model);
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
        assert!(
            stdout.contains("::group::pitcrew: chore job on acme/tally:deps"),
            "{stdout}"
        );

        let pulls: Vec<_> = step.github.state(|s| {
            s.issues
                .iter()
                .filter(|((repo, _), i)| repo == CRATE && i.pull.is_some())
                .map(|(_, i)| i.clone())
                .collect()
        });
        assert_eq!(pulls.len(), 1, "{pulls:#?}");
        assert_eq!(pulls[0].title, "chore(deps): update calcutil to 1.1.0");
        let pushed = git(
            &step.git.repo_path(CRATE),
            &["show", "refs/heads/pitcrew/deps-cargo:Cargo.lock"],
        );
        assert_eq!(locked(&pushed, "calcutil"), ["1.1.0"]);
        let outputs = step.outputs();
        assert_eq!(outputs["conclusion"], "success", "{outputs:?}");
        assert_eq!(outputs["pr_number"], pulls[0].number.to_string());
        assert_eq!(outputs["summary"], "1 dependency pull request");
        assert!(model.requests().is_empty(), "the tests passed: no agent");
        step.github.assert_no_violations();
    }

    #[test]
    fn a_comment_without_the_trigger_exits_quietly() {
        let step = Step::new("action-quiet");
        let model = ScriptedModel::start(Script::new());
        let out = step.run("alice", "COLLABORATOR", "Looks good to me, thanks!", &model, None);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        assert!(!stdout.contains("::group::"), "{stdout}");
        assert_eq!(step.outputs()["conclusion"], "skipped");
        assert!(step.github.check_runs().is_empty());
        assert!(model.requests().is_empty());
        assert!(
            step.github.requests().is_empty(),
            "no API call for a comment that asks nothing"
        );
    }

    /// `sandbox: auto` (the input's default): the runner's Docker engine is used when it answers, and
    /// the step falls back to `local` when it does not; the log says which and why.
    #[test]
    fn an_auto_sandbox_is_docker_when_the_engine_answers() {
        let Some(image) = pitcrew_tests::docker::test_image() else {
            return;
        };
        let (out, ran_in, _) = run_auto("action-auto-docker", image, &[]);
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(
            stderr.contains("sandbox: docker (the runner's Docker engine answered)"),
            "{stderr}"
        );
        assert_eq!(ran_in, "/workspace", "the command ran in the container\n{stderr}");
    }

    #[test]
    fn an_auto_sandbox_falls_back_to_local_when_no_engine_answers() {
        let image = pitcrew_tests::docker::test_image().unwrap_or("busybox:unused");
        let missing = scratch("action-auto-no-engine").join("docker.sock");
        let host = format!("unix://{}", missing.display());
        let (out, ran_in, dir) = run_auto("action-auto-local", image, &[("DOCKER_HOST", &host)]);
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(stderr.contains("sandbox: local ("), "{stderr}");
        assert!(
            stderr.contains(&format!("cannot reach the Docker engine at {host}")),
            "{stderr}"
        );
        // On the runner: the working copy under `RUNNER_TEMP`, where a local step keeps its data.
        let data = dir.join("runner-temp").join("pitcrew");
        assert!(
            Path::new(&ran_in).starts_with(&data),
            "{ran_in} is not under {}",
            data.display()
        );
    }

    /// A fix on the pull request with `INPUT_SANDBOX=auto` over a config whose backend is `local`
    /// and whose image is `image`: the step's output, the directory the agent's command ran in and
    /// the step's directory.
    fn run_auto(name: &str, image: &str, extra: &[(&str, &str)]) -> (Output, String, PathBuf) {
        let step = Step::new(name);
        let script = Script::new()
            .turn(
                Reply::new()
                    .tool_call("bash", json!({"command": "echo \"ran-in:$PWD\""}))
                    .usage(900, 20),
            )
            .turn(
                Reply::new()
                    .tool_call(
                        "edit_file",
                        json!({"path": "calc.sh", "old_string": "$(($1 - $2))", "new_string": "$(($1 + $2))"}),
                    )
                    .usage(1_000, 30),
            )
            .turn(Reply::text("Fixed `add`.").usage(1_100, 20));
        let model = ScriptedModel::start(script);
        let event = step.comment("alice", "COLLABORATOR", "@agent fix the add test");
        let sandbox = format!("[sandbox]\nbackend = \"local\"\nimage = \"{image}\"\nmemory = \"256MiB\"\n");
        // The runner's HOME of this step alone: a step with the Docker sandbox keeps its data there.
        let home = step.dir.join("home");
        std::fs::create_dir_all(&home).unwrap();
        let home = home.display().to_string();
        let mut vars = vec![("INPUT_SANDBOX", "auto"), ("HOME", home.as_str())];
        vars.extend_from_slice(extra);
        let out = step.run_configured(REPO, ("issue_comment", &event), "auto", &model, &sandbox, &vars);
        let requests = model.requests();
        // The second request is the first to carry a tool result (the command's).
        let after_pwd = requests.get(1).map(|r| r.raw_body.clone()).unwrap_or_default();
        // The tool result's text, as the JSON of the request carries it: `ran-in:<dir>\n`.
        let ran_in = after_pwd
            .split_once("ran-in:/")
            .and_then(|(_, rest)| rest.split(['\\', '"']).next())
            .map(|dir| format!("/{dir}"))
            .unwrap_or_default();
        step.github.assert_no_violations();
        (out, ran_in, step.dir)
    }

    #[test]
    fn a_commenter_without_write_access_is_refused_and_nothing_runs() {
        let step = Step::new("action-refused");
        let model = ScriptedModel::start(Script::new());
        let out = step.run("mallory", "MEMBER", "@agent fix everything", &model, None);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let bodies: Vec<String> = step
            .github
            .comments_on(REPO, PR)
            .into_iter()
            .filter(|c| c.user == ACTIONS)
            .map(|c| c.body)
            .collect();
        assert_eq!(bodies.len(), 1, "{bodies:?}");
        assert!(bodies[0].contains("@mallory"), "{}", bodies[0]);
        assert!(step.github.check_runs().is_empty());
        assert!(model.requests().is_empty());
        assert_eq!(step.git.rev_parse(REPO, "refs/heads/docs").unwrap(), step.pull.head_sha);
        step.github.assert_no_violations();
    }

    #[test]
    fn a_token_github_refuses_fails_the_step_with_a_clear_message() {
        let step = Step::new("action-refused-token");
        step.github.fail_next(
            "GET",
            "/repos/{owner}/{repo}/collaborators/{username}/permission",
            5,
            401,
            &[],
            json!({"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"}),
        );
        let model = ScriptedModel::start(Script::new());
        let out = step.run("alice", "COLLABORATOR", "@agent fix the add test", &model, None);
        assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
        let stderr = text(&out.stderr);
        assert!(stderr.contains("GitHub refused or kept failing"), "{stderr}");
        assert!(!stderr.contains(TOKEN), "{stderr}");
        assert!(model.requests().is_empty());
        assert!(step.github.check_runs().is_empty());
    }
}

mod triage {
    //! `pitcrew triage --log FILE`: a real pytest failure in the Actions log format, read back as
    //! findings and a class.
    use super::{pitcrew, scratch, text};
    use std::process::Command;

    /// A failing pytest run's output, captured for real, as the Actions log stores its step.
    fn pytest_log(dir: &std::path::Path) -> String {
        std::fs::write(
            dir.join("test_calc.py"),
            "def add(a, b):\n    return a + b\n\n\ndef test_adds():\n    assert add(1, 1) == 2\n\n\n\
             def test_adds_wrong():\n    assert add(2, 2) == 5\n",
        )
        .unwrap();
        let out = Command::new("python3")
            .args(["-m", "pytest", "-q", "-rA", "--color=yes", "-p", "no:cacheprovider"])
            .current_dir(dir)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        let mut lines = vec![
            "##[group]Run python3 -m pytest".to_owned(),
            "python3 -m pytest".into(),
            "##[endgroup]".into(),
        ];
        lines.extend(text(&out.stdout).lines().map(str::to_owned));
        lines.push("##[error]Process completed with exit code 1.".into());
        lines
            .iter()
            .map(|line| format!("2024-05-01T12:00:00.1234567Z {line}\n"))
            .collect()
    }

    #[test]
    fn a_pytest_log_is_triaged_as_json() {
        let dir = scratch("triage-json");
        std::fs::write(dir.join("job.log"), pytest_log(&dir)).unwrap();
        let out = pitcrew(&dir, &["triage", "--log", "job.log", "--json"], &[]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let analysis: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        // The evidence: the log's lines that say the test failed and where.
        let log = std::fs::read_to_string(dir.join("job.log")).unwrap();
        let clean = |line: &str| {
            let mut out = String::new();
            let mut chars = line.chars();
            while let Some(c) = chars.next() {
                if c == '\u{1b}' {
                    chars.by_ref().find(char::is_ascii_alphabetic);
                } else {
                    out.push(c);
                }
            }
            out
        };
        let line_of = |needle: &str| 1 + log.lines().position(|l| clean(l).contains(needle)).unwrap();
        let evidence = [
            line_of("test_calc.py:10: AssertionError"),
            line_of("FAILED test_calc.py::test_adds_wrong"),
        ];
        assert_eq!(
            analysis["findings"],
            serde_json::json!([{
                "kind": "test_failure",
                "runner": "pytest",
                "compiler": null,
                "test": "test_calc.py::test_adds_wrong",
                "file": "test_calc.py",
                "line": 10,
                "message": "assert 4 == 5\n+  where 4 = add(2, 2)",
                "attempts": 1,
                "evidence": evidence,
            }])
        );
        assert_eq!(analysis["classification"]["evidence"], serde_json::json!(evidence));
        assert_eq!(analysis["classification"]["class"], "code");
        assert_eq!(analysis["step"], "Run python3 -m pytest");

        let out = pitcrew(&dir, &["triage", "--log", "job.log"], &[]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let summary = text(&out.stdout);
        assert!(
            summary.starts_with("classification: code (confidence 0.80)\n"),
            "{summary}"
        );
        assert!(
            summary.contains(
                "- test failure (pytest) test_calc.py::test_adds_wrong at test_calc.py:10\n    assert 4 == 5\n"
            ),
            "{summary}"
        );
    }

    #[test]
    fn with_the_repository_the_paths_of_another_checkout_resolve_and_show_their_lines() {
        // The job ran in another checkout of the repository, and pytest, started from `/`, printed
        // paths from there.
        let runner = scratch("triage-runner");
        let checkout = runner.join("work/calc/calc");
        let tests = checkout.join("tests");
        std::fs::create_dir_all(&tests).unwrap();
        pytest_log(&tests);
        let out = Command::new("python3")
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
            .arg(&tests)
            .current_dir("/")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        let printed = text(&out.stdout);
        let mut log = String::from("##[group]Run python3 -m pytest\n##[endgroup]\n");
        log.push_str(&printed);
        log.push_str("##[error]Process completed with exit code 1.\n");

        let repo = scratch("triage-repo");
        std::fs::create_dir_all(repo.join("tests")).unwrap();
        std::fs::copy(tests.join("test_calc.py"), repo.join("tests/test_calc.py")).unwrap();
        std::fs::write(repo.join("job.log"), log).unwrap();

        let out = pitcrew(&repo, &["triage", "--log", "job.log", "--json"], &[]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let unresolved: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let printed_path = unresolved["findings"][0]["file"].as_str().unwrap().to_owned();
        assert!(
            printed_path.ends_with("work/calc/calc/tests/test_calc.py"),
            "{printed_path}"
        );

        let out = pitcrew(&repo, &["triage", "--log", "job.log", "--json", "--repo", "."], &[]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let resolved: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(resolved["findings"][0]["file"], "tests/test_calc.py");
        assert_eq!(
            resolved["sources"],
            serde_json::json!([{ "file": "tests/test_calc.py", "line": 10, "source": "    assert add(2, 2) == 5" }])
        );
        let out = pitcrew(&repo, &["triage", "--log", "job.log", "--repo", "."], &[]);
        assert!(
            text(&out.stdout).ends_with("source lines:\n  tests/test_calc.py:10: assert add(2, 2) == 5\n"),
            "{}",
            text(&out.stdout)
        );
        let out = pitcrew(&repo, &["triage", "--log", "job.log", "--repo", "no-such-dir"], &[]);
        assert_eq!(out.status.code(), Some(2));
        assert!(text(&out.stderr).contains("--repo no-such-dir is not a directory"));
    }

    #[test]
    fn an_unreadable_log_exits_2() {
        let dir = scratch("triage-missing");
        let out = pitcrew(&dir, &["triage", "--log", "no-such.log"], &[]);
        assert_eq!(out.status.code(), Some(2));
        assert!(
            text(&out.stderr).contains("could not read the log no-such.log"),
            "{}",
            text(&out.stderr)
        );
        assert!(out.stdout.is_empty());
    }
}

/// A TLS-terminating proxy in front of a plain-HTTP server, as a company's intercepting proxy or an
/// internal service looks to pitcrew: its certificate is signed by a CA of its own (made here with
/// `openssl`) that is in no trust store but the file `SSL_CERT_FILE` names. Returns the CA's file,
/// the proxy (killed on drop) and its port.
struct TlsProxy {
    child: std::process::Child,
    port: u16,
    ca: PathBuf,
}

impl Drop for TlsProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What both test proxies share: a listener on a free loopback port (printed first), `splice`
/// (bytes both ways between two sockets until both ends close), and the accept loop that hands
/// each connection to the script's `serve`.
const PROXY_HEAD: &str = r#"import socket, ssl, sys, threading
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(16)
print(srv.getsockname()[1], flush=True)
def pump(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    finally:
        try:
            b.shutdown(socket.SHUT_WR)
        except OSError:
            pass
def splice(conn, up):
    t = threading.Thread(target=pump, args=(up, conn), daemon=True)
    t.start()
    pump(conn, up)
    t.join()
    conn.close()
    up.close()
"#;
const PROXY_LOOP: &str = r#"
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"#;

/// Terminates TLS with the certificate and key it is given and forwards to a loopback port.
const TLS_PROXY: &str = r#"
cert, key, backend = sys.argv[1], sys.argv[2], int(sys.argv[3])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
ctx.set_alpn_protocols(["http/1.1"])
def serve(conn):
    try:
        tls = ctx.wrap_socket(conn, server_side=True)
    except (ssl.SSLError, OSError):
        conn.close()
        return
    splice(tls, socket.create_connection(("127.0.0.1", backend)))
"#;

/// An HTTP proxy that tunnels `CONNECT host:port` requests and writes each to the file it is given.
const CONNECT_PROXY: &str = r#"
log = open(sys.argv[1], "a", buffering=1)
def serve(conn):
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = conn.recv(4096)
        if not chunk:
            conn.close()
            return
        head += chunk
    method, target, _ = head.split(b"\r\n")[0].decode().split(" ")
    if method != "CONNECT":
        conn.sendall(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
        conn.close()
        return
    log.write(target + "\n")
    host, port = target.rsplit(":", 1)
    up = socket.create_connection(("127.0.0.1" if host == "localhost" else host, int(port)))
    conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
    splice(conn, up)
"#;

/// Starts the proxy `script` (its `serve`, between [`PROXY_HEAD`] and [`PROXY_LOOP`]) with `args`
/// under python3 in `dir`; returns it and the port it printed.
fn python_server(dir: &Path, name: &str, script: &str, args: &[&str]) -> (std::process::Child, u16) {
    std::fs::write(dir.join(name), format!("{PROXY_HEAD}{script}{PROXY_LOOP}")).unwrap();
    let mut child = Command::new("python3")
        .arg(name)
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
    let port = line.trim().parse().unwrap_or_else(|_| panic!("{name} said {line:?}"));
    (child, port)
}

fn tls_proxy(dir: &Path, backend_port: u16) -> TlsProxy {
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl").args(args).current_dir(dir).output().unwrap();
        assert!(out.status.success(), "openssl {args:?}: {}", text(&out.stderr));
    };
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=pitcrew test intercepting CA",
    ]);
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=localhost",
    ]);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "server.ext",
    ]);
    let (child, port) = python_server(
        dir,
        "tls-proxy.py",
        TLS_PROXY,
        &["server.pem", "server.key", &backend_port.to_string()],
    );
    TlsProxy {
        child,
        port,
        ca: dir.join("ca.pem"),
    }
}

#[test]
fn a_server_reached_through_https_proxy_whose_ca_is_only_in_ssl_cert_file_is_trusted_and_without_it_the_run_says_why() {
    use pitcrew_tests::repo::TestRepo;
    use pitcrew_tests::scripted_model::{Reply, Script, ScriptedModel};

    let dir = scratch("tls-trust");
    let repo = TestRepo::new(&[("a.txt", "a\n")]).unwrap();
    let model = ScriptedModel::start(
        Script::new()
            .turn(Reply::new().tool_call("bash", serde_json::json!({ "command": "cat a.txt" })))
            .turn(Reply::text("Looked around.")),
    );
    let backend: url::Url = model.openai_base_url().parse().unwrap();
    let proxy = tls_proxy(&dir, backend.port().unwrap());
    let base_url = format!("https://localhost:{}{}", proxy.port, backend.path());
    let run = |env: &[(&str, &str)]| {
        pitcrew(
            &repo.path().to_owned(),
            &[
                "run",
                "--json",
                "--model",
                "gpt-4o",
                "--base-url",
                &base_url,
                "--sandbox",
                "local",
                "--in-place",
                "Look around",
            ],
            env,
        )
    };
    let ca = proxy.ca.to_str().unwrap();
    // Through the company's HTTP proxy too, as HTTPS_PROXY says.
    let connects = dir.join("connects.log");
    let (mut forward, forward_port) =
        python_server(&dir, "connect-proxy.py", CONNECT_PROXY, &[connects.to_str().unwrap()]);
    let https_proxy = format!("http://127.0.0.1:{forward_port}");
    let trusted = run(&[
        ("OPENAI_API_KEY", "sk-test"),
        ("SSL_CERT_FILE", ca),
        ("HTTPS_PROXY", &https_proxy),
    ]);
    let _ = forward.kill();
    let _ = forward.wait();
    assert!(trusted.status.success(), "{}", text(&trusted.stderr));
    model.assert_script_consumed();
    let tunnelled = std::fs::read_to_string(&connects).unwrap_or_default();
    assert!(
        !tunnelled.is_empty() && tunnelled.lines().all(|l| l == format!("localhost:{}", proxy.port)),
        "the calls did not go through HTTPS_PROXY: {tunnelled:?}"
    );

    // The same run without the trust store: refused at once (a certificate does not change on a
    // retry), and the message says it is the certificate and what to do.
    let refused = run(&[("OPENAI_API_KEY", "sk-test")]);
    assert!(!refused.status.success());
    let said = format!("{}{}", text(&refused.stdout), text(&refused.stderr));
    assert!(said.contains("invalid peer certificate: UnknownIssuer"), "{said}");
    assert!(said.contains("SSL_CERT_FILE"), "{said}");
    assert!(!said.contains("retry 1"), "a refused certificate was retried: {said}");
}

/// The starter suite under `eval/`, as a user runs it without a model: its cases prove
/// themselves (`check-cases`), one language's cases replay from the recording to a report, and
/// `--min-pass-rate` fails a run whose cases could not be replayed.
#[test]
fn eval_proves_the_starter_suite_and_replays_it_to_a_report() {
    let dir = scratch("eval");
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("../eval");
    let suite = suite.canonicalize().unwrap();
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".to_owned());
    let env = [("HOME", home.as_str())];
    let local = ["--sandbox", "local", "--set", "sandbox.local_user=self"];

    let mut args = vec!["eval", "check-cases", suite.to_str().unwrap()];
    args.extend(local);
    let out = pitcrew(&dir, &args, &env);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(
        stdout.ends_with("12 flip, 0 broken, 0 error, 0 without a reference\n"),
        "{stdout}"
    );
    assert!(stdout.contains("ok       py-median-even\n"), "{stdout}");

    let python = suite.join("python.yaml");
    let recording = suite.join("recording");
    let mut args = vec![
        "eval",
        python.to_str().unwrap(),
        "--replay",
        recording.to_str().unwrap(),
        "--set",
        "model.name=gpt-4o-mini",
        "--out",
        "out",
        "--min-pass-rate",
        "1",
    ];
    args.extend(local);
    let out = pitcrew(&dir, &args, &env);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(
        stdout.starts_with("gpt-4o-mini: 3 pass, 0 fail, 0 error of 3 (100.0%), $0.0"),
        "{stdout}"
    );
    let results = std::fs::read_to_string(dir.join("out/results.jsonl")).unwrap();
    assert_eq!(results.lines().count(), 3);
    let report = std::fs::read_to_string(dir.join("out/report.md")).unwrap();
    assert!(
        report.contains("| pass rate (95% CI) | 100.0% (43.9%–100.0%) |"),
        "{report}"
    );
    for chart in ["pass-rate.svg", "cost-vs-steps.svg"] {
        assert!(
            std::fs::read_to_string(dir.join("out").join(chart))
                .unwrap()
                .starts_with("<svg")
        );
    }

    // Replayed under another model's name, the recording has nothing: every case is an error.
    let mut args = vec![
        "eval",
        python.to_str().unwrap(),
        "--replay",
        recording.to_str().unwrap(),
        "--set",
        "model.name=gpt-4o",
        "--out",
        "other",
        "--min-pass-rate",
        "0.5",
    ];
    args.extend(local);
    let out = pitcrew(&dir, &args, &env);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("gpt-4o: 0 pass, 0 fail, 3 error of 3 (0.0%)"));
    assert!(text(&out.stderr).contains("under --min-pass-rate 50.0%: gpt-4o (0.0%)"));
}

#[test]
fn only_eval_takes_several_configurations() {
    let dir = scratch("configs");
    let out = pitcrew(
        &dir,
        &["--config", "a.toml", "--config", "b.toml", "config", "check"],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr).trim(),
        "error: --config is given 2 times; only `pitcrew eval` compares configurations"
    );
}
