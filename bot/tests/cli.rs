//! The `pitcrew` binary as a user runs it: exit codes, what reaches stdout and stderr, and that no
//! secret is ever printed.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "a failing test should panic")]

use std::path::PathBuf;
use std::process::{Command, Output};

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
