//! `pitcrew run` end to end: a real repository with a failing test, the scripted model driving the
//! real tools and the real test runner, and the branch, commit and report that come out.

use std::collections::BTreeMap;
use std::sync::Arc;

use pitcrew::agent::StopReason;
use pitcrew::agent::events::Recorder;
use pitcrew::config::{Config, LoadOptions};
use pitcrew::llm::Provider;
use pitcrew::prompts::Prompts;
use pitcrew::run::{RunOptions, RunReport};
use pitcrew_tests::repo::TestRepo;
use pitcrew_tests::scripted_model::{Reply, Script, ScriptedModel};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::agent_loop::model;

fn config(server: &ScriptedModel) -> Config {
    let overrides = vec![
        format!("model.base_url={}", server.openai_base_url()),
        "model.name=gpt-4o".to_owned(),
        "sandbox.backend=local".to_owned(),
        // The projects' toolchains (cargo, pytest) live under the invoking user's home, which the
        // sandbox user pitcrew switches to as root could not use.
        "sandbox.local_user=self".to_owned(),
    ];
    Config::load(LoadOptions {
        config_path: None,
        env: &BTreeMap::new(),
        overrides: &overrides,
    })
    .unwrap()
}

async fn run(repo: &TestRepo, server: &ScriptedModel, task: &str) -> RunReport {
    pitcrew::run::run(RunOptions {
        repo: repo.path().to_owned(),
        task: task.into(),
        in_place: false,
        config: config(server),
        prompts: Prompts::embedded(),
        events: Arc::new(Recorder::default()),
        model: Some(model(server, Provider::OpenAi)),
        cancel: CancellationToken::new(),
    })
    .await
    .unwrap()
}

fn plan(statuses: [&str; 3]) -> serde_json::Value {
    json!({"steps": [
        {"id": "1", "title": "Find the failing test", "status": statuses[0]},
        {"id": "2", "title": "Fix the code", "status": statuses[1]},
        {"id": "3", "title": "Run the tests", "status": statuses[2]},
    ]})
}

/// The scripted session of a careful agent: plan, search, read, fix, test, close the plan.
fn fixing_script(search: &str, file: &str, old: &str, new: &str) -> Script {
    Script::new()
        .turn(
            Reply::text("I'll find the code under test first.")
                .tool_call("update_plan", plan(["in_progress", "pending", "pending"]))
                .tool_call("grep", json!({"pattern": search}))
                .usage(2_000, 80),
        )
        .turn(
            Reply::new()
                .tool_call("read_file", json!({"path": file}))
                .usage(2_400, 30),
        )
        .turn(
            Reply::text("The function is off by one.")
                .tool_call("edit_file", json!({"path": file, "old_string": old, "new_string": new}))
                .tool_call("update_plan", plan(["done", "done", "in_progress"]))
                .usage(2_800, 60),
        )
        .turn(Reply::new().tool_call("run_tests", json!({})).usage(3_000, 20))
        .turn(
            Reply::new()
                .tool_call("update_plan", plan(["done", "done", "done"]))
                .usage(3_400, 40),
        )
        .turn(Reply::text("Fixed the off-by-one in `add`; the tests pass.").usage(3_500, 30))
}

fn assert_fixed(repo: &TestRepo, server: &ScriptedModel, report: &RunReport, file: &str) {
    assert_eq!(report.stop, StopReason::Finished, "{report:#?}");
    assert_eq!(report.summary, "Fixed the off-by-one in `add`; the tests pass.");
    assert_eq!(report.branch.as_deref(), Some("pitcrew/fix-the-failing-test"));
    let commit = report.commit.as_deref().expect("a commit");
    // The branch holds the commit, which holds the fix; main is untouched.
    assert_eq!(
        repo.git(&["rev-parse", "pitcrew/fix-the-failing-test"]).unwrap().trim(),
        commit
    );
    assert_eq!(repo.git(&["diff", "--name-only", "main", commit]).unwrap().trim(), file);
    let message = repo.git(&["log", "-1", "--format=%B", commit]).unwrap();
    assert!(
        message.starts_with("pitcrew: Fix the failing test\n\nFixed the off-by-one"),
        "{message}"
    );
    assert_eq!(
        repo.git(&["status", "--porcelain"]).unwrap(),
        "",
        "the run left uncommitted files"
    );
    let tests = report.tests.as_ref().expect("a test result");
    assert_eq!((tests.passed, tests.failed), (2, 0), "{tests:?}");
    assert_eq!(
        report
            .plan
            .steps
            .iter()
            .filter(|s| s.status == pitcrew::tools::StepStatus::Done)
            .count(),
        3
    );
    assert_eq!(report.steps, 6);
    assert_eq!(report.usage.input_tokens, 2_000 + 2_400 + 2_800 + 3_000 + 3_400 + 3_500);
    assert!(report.cost_usd.is_some_and(|c| c > 0.0));
    // No tool call failed along the way.
    for request in server.requests() {
        for message in request.body["messages"].as_array().unwrap() {
            if message["role"] == "tool" {
                let content = message["content"].as_str().unwrap();
                assert!(!content.starts_with("Error:"), "a tool failed: {content}");
            }
        }
    }
    // The trajectory log holds every event.
    let log = std::fs::read_to_string(format!("{}/trajectory.jsonl", report.run_dir)).unwrap();
    assert!(log.lines().next().unwrap().contains("\"type\":\"run_started\""));
    assert!(log.lines().last().unwrap().contains("\"type\":\"finished\""));
    server.assert_script_consumed();
}

#[tokio::test]
async fn a_rust_crate_with_a_failing_test_is_fixed_on_a_branch() {
    let repo = TestRepo::new(&[
        ("Cargo.toml", "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n"),
        (".gitignore", "/target\n"),
        (
            "Cargo.lock",
            "# This file is automatically @generated by Cargo.\n# It is not intended for manual editing.\nversion = 4\n\n\
             [[package]]\nname = \"calc\"\nversion = \"0.1.0\"\n",
        ),
        (
            "src/lib.rs",
            "pub fn add(a: i32, b: i32) -> i32 {\n    a + b - 1\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    \
             #[test]\n    fn adds() {\n        assert_eq!(add(2, 2), 4);\n    }\n\n    #[test]\n    fn zero() {\n        \
             assert_eq!(add(0, 0), 0);\n    }\n}\n",
        ),
    ])
    .unwrap();
    let server = ScriptedModel::start(fixing_script("fn add", "src/lib.rs", "a + b - 1", "a + b"));
    let report = run(&repo, &server, "Fix the failing test").await;
    assert_fixed(&repo, &server, &report, "src/lib.rs");
    assert!(repo.read("src/lib.rs").unwrap().contains("    a + b\n"));
}

#[tokio::test]
async fn a_python_package_with_a_failing_test_is_fixed_on_a_branch() {
    let repo = TestRepo::new(&[
        ("pyproject.toml", "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n"),
        (".gitignore", "__pycache__/\n.pytest_cache/\n"),
        ("calc.py", "def add(a, b):\n    return a + b - 1\n"),
        (
            "tests/test_calc.py",
            "from calc import add\n\n\ndef test_adds():\n    assert add(2, 2) == 4\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n",
        ),
        ("tests/conftest.py", "import sys, pathlib\nsys.path.insert(0, str(pathlib.Path(__file__).parent.parent))\n"),
    ])
    .unwrap();
    let server = ScriptedModel::start(fixing_script("def add", "calc.py", "a + b - 1", "a + b"));
    let report = run(&repo, &server, "Fix the failing test").await;
    assert_fixed(&repo, &server, &report, "calc.py");
}

#[tokio::test]
async fn a_dirty_working_tree_is_refused() {
    let repo = TestRepo::new(&[("a.txt", "a\n")]).unwrap();
    repo.write("a.txt", "changed\n").unwrap();
    let server = ScriptedModel::start(Script::new());
    let err = pitcrew::run::run(RunOptions {
        repo: repo.path().to_owned(),
        task: "anything".into(),
        in_place: false,
        config: config(&server),
        prompts: Prompts::embedded(),
        events: Arc::new(Recorder::default()),
        model: Some(model(&server, Provider::OpenAi)),
        cancel: CancellationToken::new(),
    })
    .await
    .expect_err("a dirty tree must be refused");
    assert!(err.to_string().contains("uncommitted changes (a.txt)"), "{err}");
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn nothing_to_commit_is_reported_not_an_error() {
    let repo = TestRepo::new(&[("a.txt", "a\n")]).unwrap();
    let server = ScriptedModel::start(
        Script::new()
            .turn(Reply::new().tool_call("read_file", json!({"path": "a.txt"})))
            .turn(Reply::text("a.txt is already correct; nothing to change.")),
    );
    let report = run(&repo, &server, "Check a.txt").await;
    assert_eq!(report.stop, StopReason::Finished);
    assert_eq!(report.commit, None);
    assert!(report.changed_files.is_empty());
    let text = pitcrew::run::progress::render_text(&report);
    assert!(text.contains("commit:   none (nothing changed)"), "{text}");
}

#[tokio::test]
async fn with_the_docker_sandbox_commands_run_in_the_container() {
    let Some(image) = pitcrew_tests::docker::test_image() else {
        return;
    };
    let repo = TestRepo::new(&[("tests.sh", "echo 'test result: ok. 1 passed; 0 failed; 0 ignored'\n")]).unwrap();
    let host_name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_owned();
    let server = ScriptedModel::start(
        Script::new()
            .turn(Reply::new().tool_call(
                "bash",
                json!({"command": "hostname; test -f /.dockerenv && echo in-a-container; pwd; echo made inside > inside.txt; touch .git/evil"}),
            ))
            .turn(Reply::new().tool_call("run_tests", json!({"command": "sh tests.sh"})))
            .turn(Reply::text("Checked where commands run.")),
    );
    let overrides = vec![
        format!("model.base_url={}", server.openai_base_url()),
        "model.name=gpt-4o".to_owned(),
        "sandbox.backend=docker".to_owned(),
        format!("sandbox.image={image}"),
    ];
    let config = Config::load(LoadOptions {
        config_path: None,
        env: &BTreeMap::new(),
        overrides: &overrides,
    })
    .unwrap();
    let report = pitcrew::run::run(RunOptions {
        repo: repo.path().to_owned(),
        task: "Check the sandbox".into(),
        in_place: false,
        config,
        prompts: Prompts::embedded(),
        events: Arc::new(Recorder::default()),
        model: Some(model(&server, Provider::OpenAi)),
        cancel: CancellationToken::new(),
    })
    .await
    .unwrap();
    assert_eq!(report.stop, StopReason::Finished, "{report:#?}");
    assert!(report.sandbox.starts_with("docker"), "{}", report.sandbox);

    let bash = &server.requests()[1];
    let output = bash.body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let lines: Vec<&str> = output.lines().collect();
    let inside_name = lines
        .iter()
        .skip_while(|l| !l.starts_with("--- stdout"))
        .nth(1)
        .unwrap()
        .trim();
    assert_ne!(inside_name, host_name, "{output}");
    assert!(
        output.contains("in-a-container") && output.contains("/workspace"),
        "{output}"
    );
    assert!(
        output.contains(".git/evil") && !repo.file(".git/evil").exists(),
        ".git was writable: {output}"
    );
    // The system prompt told the model where the checkout is inside the container.
    assert!(
        server.requests()[0].body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("`/workspace`")
    );
    // What the command wrote inside is on the host, and committed.
    assert_eq!(repo.read("inside.txt").unwrap(), "made inside\n");
    let commit = report.commit.as_deref().unwrap();
    assert_eq!(
        repo.git(&["show", &format!("{commit}:inside.txt")]).unwrap(),
        "made inside\n"
    );
    assert_eq!(report.tests.as_ref().map(|t| t.passed), Some(1));
    // The container is gone.
    let job = std::path::Path::new(&report.run_dir)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert_eq!(pitcrew_tests::docker::containers_of(&job).unwrap().trim(), "");
}

/// The security issue's case: a command of the agent's made a repository inside the checkout (a
/// fixture the tests create, a vendored checkout). libgit2 refused to stage it (`invalid path
/// 'fixture/'`), the commit failed and the run's report and work were lost. Now it is left out, as
/// git leaves it, and said.
#[tokio::test]
async fn a_nested_repository_is_committed_around_and_reported() {
    let repo = TestRepo::new(&[("a.txt", "a\n")]).unwrap();
    let server = ScriptedModel::start(
        Script::new()
            .turn(
                Reply::new()
                    .tool_call(
                        "bash",
                        json!({"command": "mkdir fixture && git -C fixture init -q && echo data > fixture/data.txt"}),
                    )
                    .tool_call("write_file", json!({"path": "b.txt", "content": "b\n"}))
                    .usage(1_000, 10),
            )
            .turn(Reply::text("Added b.txt and a fixture repository.").usage(1_100, 10)),
    );
    let report = run(&repo, &server, "Add b").await;
    assert_eq!(report.error, None, "{report:#?}");
    assert_eq!(report.status, "finished");
    assert_eq!(report.skipped_repositories, ["fixture/"]);
    let commit = report.commit.as_deref().expect("a commit");
    assert_eq!(repo.git(&["show", &format!("{commit}:b.txt")]).unwrap(), "b\n");
    assert_eq!(
        repo.git(&["ls-tree", "--name-only", commit]).unwrap().trim(),
        "a.txt\nb.txt"
    );
    let changed: Vec<&str> = report.changed_files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(changed, ["b.txt"]);
    assert_eq!(repo.read("fixture/data.txt").unwrap(), "data\n");
    let text = pitcrew::run::progress::render_text(&report);
    assert!(
        text.contains("not committed (a git repository of its own): fixture/"),
        "{text}"
    );
}

/// A commit that fails (here: another git process holds the index lock, as a crashed `git add`
/// leaves it) ends the run with its report, what the agent spent included, and the change left in
/// the working tree; before, the error replaced the report.
#[tokio::test]
async fn a_failed_commit_still_yields_the_report_with_its_usage() {
    let repo = TestRepo::new(&[("a.txt", "a\n")]).unwrap();
    std::fs::write(repo.file(".git/index.lock"), "").unwrap();
    let server = ScriptedModel::start(
        Script::new()
            .turn(
                Reply::new()
                    .tool_call("read_file", json!({"path": "a.txt"}))
                    .usage(1_000, 10),
            )
            .turn(
                Reply::new()
                    .tool_call(
                        "edit_file",
                        json!({"path": "a.txt", "old_string": "a", "new_string": "b"}),
                    )
                    .usage(1_100, 10),
            )
            .turn(Reply::text("Changed a to b.").usage(1_200, 20)),
    );
    let report = run(&repo, &server, "Change a").await;
    assert_eq!(report.status, "commit_failed", "{report:#?}");
    let error = report.error.as_deref().unwrap();
    assert!(
        error.starts_with("the commit failed: ") && error.contains("the index is locked"),
        "{error}"
    );
    assert_eq!(report.commit, None);
    assert_eq!(report.usage.input_tokens, 3_300);
    assert_eq!(report.usage.output_tokens, 40);
    assert_eq!(report.steps, 3);
    assert_eq!(report.summary, "Changed a to b.");
    let changed: Vec<(&str, &str)> = report
        .changed_files
        .iter()
        .map(|f| (f.path.as_str(), f.change))
        .collect();
    assert_eq!(changed, [("a.txt", "modified")]);
    assert_eq!(repo.read("a.txt").unwrap(), "b\n");
    let text = pitcrew::run::progress::render_text(&report);
    assert!(
        text.contains("commit:   failed; the change is left uncommitted"),
        "{text}"
    );
    assert!(text.contains("tokens:   3300 in, 40 out"), "{text}");
}

/// The content the model got back for each tool call, by tool name, in order.
fn tool_results(server: &ScriptedModel) -> Vec<(String, String)> {
    let Some(last) = server.last_request() else {
        return Vec::new();
    };
    let messages = last.body["messages"].as_array().unwrap();
    let mut names = BTreeMap::new();
    let mut results = Vec::new();
    for message in messages {
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            names.insert(
                call["id"].as_str().unwrap().to_owned(),
                call["function"]["name"].as_str().unwrap().to_owned(),
            );
        }
        if message["role"] == "tool" {
            let name = names[message["tool_call_id"].as_str().unwrap()].clone();
            results.push((name, message["content"].as_str().unwrap().to_owned()));
        }
    }
    results
}

#[tokio::test]
async fn the_agent_finds_a_function_by_name_reads_its_range_and_fixes_it() {
    // Two modules with look-alike code: the circle's area is wrong, its perimeter right.
    let area = "import math\n\n\ndef square_area(side):\n    return side * side\n\n\n\
                def circle_area(radius):\n    \"\"\"The area of a circle.\"\"\"\n    return 2 * math.pi * radius\n\n\n\
                def area(shape, size):\n    return {\"square\": square_area, \"circle\": circle_area}[shape](size)\n";
    let repo = TestRepo::new(&[
        ("pyproject.toml", "[project]\nname = \"shapes\"\nversion = \"0.1.0\"\n"),
        (".gitignore", "__pycache__/\n.pytest_cache/\n"),
        ("shapes/__init__.py", "from .area import area\n"),
        ("shapes/area.py", area),
        (
            "shapes/perimeter.py",
            "import math\n\n\ndef circle_perimeter(radius):\n    return 2 * math.pi * radius\n",
        ),
        (
            "tests/test_shapes.py",
            "import math\n\nfrom shapes import area\nfrom shapes.perimeter import circle_perimeter\n\n\n\
             def test_circle_area():\n    assert math.isclose(area(\"circle\", 2.0), 4 * math.pi)\n\n\n\
             def test_circle_perimeter():\n    assert math.isclose(circle_perimeter(1.0), 2 * math.pi)\n",
        ),
        (
            "tests/conftest.py",
            "import sys, pathlib\nsys.path.insert(0, str(pathlib.Path(__file__).parent.parent))\n",
        ),
    ])
    .unwrap();
    let script = Script::new()
        .turn(
            Reply::text("I'll find where the circle's area is computed.")
                .tool_call("find_symbol", json!({"query": "circle_area"}))
                .usage(2_000, 40),
        )
        .turn(
            Reply::new()
                .tool_call("read_file", json!({"path": "shapes/area.py", "offset": 8, "limit": 3}))
                .tool_call("find_references", json!({"symbol": "circle_area"}))
                .usage(2_200, 40),
        )
        .turn(
            Reply::text("It computes the circumference.")
                .tool_call(
                    "edit_file",
                    json!({"path": "shapes/area.py", "old_string": "return 2 * math.pi * radius", "new_string": "return math.pi * radius * radius"}),
                )
                .usage(2_400, 40),
        )
        .turn(Reply::new().tool_call("run_tests", json!({})).usage(2_600, 20))
        .turn(Reply::text("Fixed `circle_area`: it returned the circumference.").usage(2_800, 20));
    let server = ScriptedModel::start(script);
    let report = run(&repo, &server, "The area of a circle is wrong").await;
    assert_eq!(report.stop, StopReason::Finished, "{report:#?}");

    let results = tool_results(&server);
    let names: Vec<&str> = results.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        ["find_symbol", "read_file", "find_references", "edit_file", "run_tests"]
    );
    // The index named the range that read_file then opened.
    assert_eq!(
        results[0].1,
        "1 definition for `circle_area` (best: exact):\nshapes/area.py:8-10  function circle_area\n    \
         def circle_area(radius):\n    // The area of a circle."
    );
    let read = &results[1].1;
    assert!(
        read.contains("def circle_area(radius):")
            && read.contains("return 2 * math.pi * radius")
            && !read.contains("def area("),
        "{read}"
    );
    assert!(
        results[2]
            .1
            .starts_with("1 use of `circle_area` in 1 file:\nshapes/area.py  (defines it at line 8)\n  14:"),
        "{}",
        results[2].1
    );
    // The right function in the right file changed; the look-alike did not.
    let commit = report.commit.as_deref().expect("a commit");
    assert_eq!(
        repo.git(&["diff", "--name-only", "main", commit]).unwrap().trim(),
        "shapes/area.py"
    );
    assert!(
        repo.read("shapes/area.py")
            .unwrap()
            .contains("return math.pi * radius * radius")
    );
    assert!(
        repo.read("shapes/perimeter.py")
            .unwrap()
            .contains("return 2 * math.pi * radius")
    );
    let tests = report.tests.as_ref().expect("a test result");
    assert_eq!((tests.passed, tests.failed), (2, 0), "{tests:?}");
    // What the index parsed is kept for the next run, in the repository's git directory.
    let cache = repo.path().join(".git/pitcrew/index-cache");
    let entries = walkdir_count(&cache);
    assert_eq!(entries, 5, "one entry per Python file");
    server.assert_script_consumed();
}

/// The regular files below `dir`.
fn walkdir_count(dir: &std::path::Path) -> usize {
    let mut count = 0;
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        if entry.file_type().unwrap().is_dir() {
            count += walkdir_count(&entry.path());
        } else {
            count += 1;
        }
    }
    count
}
