//! `pitcrew eval` end to end: suites of small projects run through the real session (Docker
//! sandboxes, or the local backend), the scripted model solving some cases and not others over
//! real HTTP, real checks; record and replay; `check-cases`; and the starter suite under `eval/`
//! replayed from its recording.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pitcrew::config::{Config, LoadOptions};
use pitcrew::eval::case::{Case, load_suites};
use pitcrew::eval::check_cases::{Verdict, check_cases};
use pitcrew::eval::results::{CaseResult, Status, read_results};
use pitcrew::eval::run::{EvalOptions, EvalRun, Models, Variant, run};
use pitcrew::prompts::Prompts;
use pitcrew_tests::scripted_model::{Reply, Script, ScriptedModel};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn config(model: &str, overrides: &[String]) -> Config {
    let mut set = vec![format!("model.base_url={model}"), "model.name=gpt-4o-mini".to_owned()];
    set.extend_from_slice(overrides);
    Config::load(LoadOptions {
        config_path: None,
        env: &BTreeMap::new(),
        overrides: &set,
    })
    .unwrap()
}

fn local() -> Vec<String> {
    // The projects' toolchains live under the invoking user's home (see run_command.rs).
    vec!["sandbox.backend=local".to_owned(), "sandbox.local_user=self".to_owned()]
}

/// A small project whose `value.txt` says 1.
fn project(dir: &Path) -> PathBuf {
    let root = dir.join("project");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("value.txt"), "1\n").unwrap();
    std::fs::write(root.join("README.md"), "The value must be 2.\n").unwrap();
    root
}

/// The agent's session for a task: one command, then its report.
fn solving(command: &str) -> Script {
    Script::new()
        .turn(
            Reply::text("Changing the value.")
                .tool_call("bash", json!({"command": command}))
                .usage(1_500, 40),
        )
        .turn(Reply::text("Done: the value is changed.").usage(1_700, 12))
}

fn suite(dir: &Path, yaml: &str) -> Vec<Case> {
    let path = dir.join("suite.yaml");
    std::fs::write(&path, yaml).unwrap();
    load_suites(&[path]).unwrap()
}

async fn eval(cases: Vec<Case>, config: Config, out: &Path, models: Models, concurrency: usize) -> EvalRun {
    run(
        EvalOptions {
            cases,
            variants: vec![Variant {
                label: "scripted".to_owned(),
                config,
            }],
            repeat: 1,
            concurrency,
            out: out.to_owned(),
            models,
            prompts: Prompts::embedded(),
            cancel: CancellationToken::new(),
        },
        &|_| {},
    )
    .await
    .unwrap()
}

fn by_case(results: &[CaseResult]) -> BTreeMap<&str, &CaseResult> {
    results.iter().map(|r| (r.case.as_str(), r)).collect()
}

/// Four cases in Docker sandboxes: one solved, one the agent gets wrong, one whose setup fails,
/// one whose repository is missing — a pass, a failure and two errors, counted as such, each in
/// its own working copy and container.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suite_in_docker_counts_passes_failures_and_errors_each_case_in_its_own_sandbox() {
    let Some(image) = pitcrew_tests::docker::test_image() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    let cases = suite(
        dir.path(),
        r#"
- id: solved
  repo: project
  task: "The value must be 2 (case one)."
  check: { run: "grep -qx 2 value.txt && test ! -e other-case-was-here" }
  expect: { tools_used: [bash, run_tests] }
  tags: [shell, easy]
- id: wrong
  repo: project
  task: "The value must be 2 (case two)."
  check: { run: "grep -qx 2 value.txt" }
  tags: [shell]
- id: setup-fails
  repo: project
  task: "The value must be 2 (case three)."
  setup: "echo preparing; exit 3"
  check: { run: "true" }
- id: no-repository
  repo: missing
  task: "The value must be 2 (case four)."
  check: { run: "true" }
"#,
    );
    let model = ScriptedModel::start_routed(
        Script::new(),
        vec![
            ("(case one)".to_owned(), solving("echo 2 > value.txt")),
            (
                "(case two)".to_owned(),
                solving("echo 3 > value.txt; touch other-case-was-here"),
            ),
        ],
    );
    let out = dir.path().join("out");
    let config = config(&model.openai_base_url(), &[format!("sandbox.image={image}")]);
    let ran = eval(cases, config, &out, Models::Live, 4).await;
    model.assert_script_consumed();

    let results = by_case(&ran.results);
    assert_eq!(ran.planned, 4);
    assert!(!ran.cancelled);
    let solved = results["solved"];
    assert_eq!(solved.status, Status::Pass, "{solved:#?}");
    assert_eq!(solved.stop.as_deref(), Some("finished"));
    assert_eq!(solved.steps, 2);
    assert_eq!(solved.tool_calls, BTreeMap::from([("bash".to_owned(), 1)]));
    assert_eq!(solved.tokens.input + solved.tokens.cache_read, 3_200);
    assert_eq!(solved.tokens.output, 52);
    assert!(solved.cost_usd.is_some_and(|c| c > 0.0));
    assert_eq!(solved.changed_files, ["value.txt"]);
    assert_eq!(solved.expectations_missed, ["never used `run_tests`"]);
    assert_eq!(solved.tags, ["shell", "easy"]);
    let trajectory = out.join(solved.trajectory.as_deref().unwrap());
    assert!(
        std::fs::read_to_string(trajectory)
            .unwrap()
            .contains("\"tool_started\"")
    );

    let wrong = results["wrong"];
    assert_eq!(wrong.status, Status::Fail, "{wrong:#?}");
    let check = wrong.check.as_ref().unwrap();
    assert_eq!(check.exit_code, Some(1));
    assert_eq!(wrong.error, None);

    let setup = results["setup-fails"];
    assert_eq!(setup.status, Status::Error);
    assert!(
        setup
            .error
            .as_deref()
            .unwrap()
            .starts_with("the sandbox or the case's setup failed"),
        "{setup:#?}"
    );
    assert_eq!(setup.stop, None);
    let missing = results["no-repository"];
    assert_eq!(missing.status, Status::Error);
    assert!(
        missing
            .error
            .as_deref()
            .unwrap()
            .starts_with("the working copy: the repository")
    );

    // results.jsonl holds the same, one line per case run; no working copy is left behind.
    let mut written = read_results(&out.join("results.jsonl")).unwrap();
    written.sort_by(|a, b| a.case.cmp(&b.case));
    let mut expected = ran.results.clone();
    expected.sort_by(|a, b| a.case.cmp(&b.case));
    assert_eq!(written, expected);
    assert_eq!(std::fs::read_dir(out.join("work/scripted")).unwrap().count(), 0);
}

/// Two cases whose checks each wait for the other's: both pass only when they run at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cases_run_at_once_up_to_the_concurrency() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    let meeting = dir.path().join("meeting");
    std::fs::create_dir(&meeting).unwrap();
    let meet = |me: &str, other: &str| {
        format!(
            "touch {m}/{me}; i=0; while [ ! -e {m}/{other} ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; test -e \
             {m}/{other}",
            m = meeting.display()
        )
    };
    let cases = suite(
        dir.path(),
        &format!(
            "- {{id: a, repo: project, task: 'first (case a)', check: {{run: '{}'}}}}\n\
             - {{id: b, repo: project, task: 'second (case b)', check: {{run: '{}'}}}}\n",
            meet("a", "b"),
            meet("b", "a")
        ),
    );
    let model = ScriptedModel::start_routed(
        Script::new(),
        vec![
            ("(case a)".to_owned(), solving("true")),
            ("(case b)".to_owned(), solving("true")),
        ],
    );
    let ran = eval(
        cases,
        config(&model.openai_base_url(), &local()),
        &dir.path().join("out"),
        Models::Live,
        2,
    )
    .await;
    let statuses: Vec<_> = ran.results.iter().map(|r| (r.case.as_str(), r.status)).collect();
    assert_eq!(
        statuses,
        [("a", Status::Pass), ("b", Status::Pass)],
        "{:#?}",
        ran.results
    );
}

/// A run recorded with the model replays with none to identical results; a changed prompt is
/// refused on replay with where it changed, and the case is an error, not a failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_then_replay_gives_identical_results_and_a_changed_prompt_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    let yaml = "- {id: solved, repo: project, task: 'The value must be 2 (case one).', check: {run: 'grep -qx 2 value.txt'}}\n\
                - {id: wrong, repo: project, task: 'The value must be 2 (case two).', check: {run: 'grep -qx 2 value.txt'}}\n";
    let model = ScriptedModel::start_routed(
        Script::new(),
        vec![
            (
                "(case one)".to_owned(),
                solving("echo 2 > value.txt; echo took 0.0123s"),
            ),
            ("(case two)".to_owned(), solving("echo 3 > value.txt")),
        ],
    );
    let recording = dir.path().join("recording");
    let recorded = eval(
        suite(dir.path(), yaml),
        config(&model.openai_base_url(), &local()),
        &dir.path().join("first"),
        Models::Record(recording.clone()),
        2,
    )
    .await;
    model.assert_script_consumed();
    let requests = model.requests().len();
    drop(model);

    // No model at all: the address answers nothing.
    let dead = "http://127.0.0.1:9/v1";
    let replayed = eval(
        suite(dir.path(), yaml),
        config(dead, &local()),
        &dir.path().join("second"),
        Models::Replay(recording.clone()),
        2,
    )
    .await;
    assert_eq!(requests, 4);
    let comparable = |results: &[CaseResult]| -> Vec<_> {
        results
            .iter()
            .map(|r| {
                (
                    r.case.clone(),
                    r.status,
                    r.stop.clone(),
                    r.steps,
                    r.tool_calls.clone(),
                    r.tokens,
                    r.cost_usd,
                    r.changed_files.clone(),
                    r.check.as_ref().map(|c| (c.passed, c.exit_code)),
                )
            })
            .collect()
    };
    assert_eq!(comparable(&replayed.results), comparable(&recorded.results));
    assert_eq!(
        recorded.results.iter().map(|r| r.status).collect::<Vec<_>>(),
        [Status::Pass, Status::Fail]
    );

    // A prompt changed since the recording.
    let prompts_dir = dir.path().join("prompts");
    std::fs::create_dir(&prompts_dir).unwrap();
    let system = Prompts::embedded()
        .source(pitcrew::prompts::Template::System)
        .to_owned();
    std::fs::write(prompts_dir.join("system.md"), system.replacen("", "Be brief. ", 1)).unwrap();
    let changed = run(
        EvalOptions {
            cases: suite(dir.path(), yaml),
            variants: vec![Variant {
                label: "scripted".to_owned(),
                config: config(dead, &local()),
            }],
            repeat: 1,
            concurrency: 1,
            out: dir.path().join("third"),
            models: Models::Replay(recording),
            prompts: Prompts::load(Some(&prompts_dir)).unwrap(),
            cancel: CancellationToken::new(),
        },
        &|_| {},
    )
    .await
    .unwrap();
    for result in &changed.results {
        assert_eq!(result.status, Status::Error, "{result:#?}");
        let error = result.error.as_deref().unwrap();
        assert!(
            error.starts_with("replay: request 1 of 2: request.system differs at byte 0: recorded \""),
            "{error}"
        );
        assert!(error.contains("now \"Be brief. "), "{error}");
    }
}

/// `check-cases` proves a case that flips, and catches one whose reference does not fix it and
/// one whose check passes without any change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_cases_proves_the_cases_that_flip_and_catches_the_others() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    let patch = |to: &str| {
        format!("diff --git a/value.txt b/value.txt\n--- a/value.txt\n+++ b/value.txt\n@@ -1 +1 @@\n-1\n+{to}\n")
    };
    std::fs::write(dir.path().join("fix.patch"), patch("2")).unwrap();
    std::fs::write(dir.path().join("wrong.patch"), patch("3")).unwrap();
    std::fs::create_dir_all(dir.path().join("checks/tests")).unwrap();
    std::fs::write(
        dir.path().join("checks/tests/value.sh"),
        "grep -qx 2 value.txt && echo 'ok 1 - value' || { echo 'not ok 1 - value'; exit 1; }\n",
    )
    .unwrap();
    let cases = suite(
        dir.path(),
        "- {id: flips, repo: project, task: t, reference: fix.patch, check: {files: checks, run: 'sh tests/value.sh'}}\n\
         - {id: reference-wrong, repo: project, task: t, reference: wrong.patch, check: {files: checks, run: 'sh tests/value.sh'}}\n\
         - {id: always-passes, repo: project, task: t, reference: fix.patch, check: {run: 'true'}}\n\
         - {id: unproven, repo: project, task: t, check: {run: 'true'}}\n",
    );
    let scratch = dir.path().join("scratch");
    let config = config("http://127.0.0.1:9/v1", &local());
    let verdicts = check_cases(
        &cases,
        &config,
        &Prompts::embedded(),
        &scratch,
        &CancellationToken::new(),
        &|_, _| {},
    )
    .await;
    let verdicts: BTreeMap<_, _> = verdicts.into_iter().collect();
    assert_eq!(verdicts["flips"], Verdict::Flips);
    assert_eq!(
        verdicts["always-passes"],
        Verdict::Broken("the check passes without the reference: it proves nothing".to_owned())
    );
    match &verdicts["reference-wrong"] {
        Verdict::Broken(why) => assert!(
            why.starts_with("the check fails with the reference applied (exit 1):\nnot ok 1 - value"),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(verdicts["unproven"], Verdict::NoReference);
}

/// The starter suite under `eval/` replays from its recording: every case passes, as the
/// scripted model solved them when the recording was made. `PITCREW_EVAL_RECORD=1` makes the
/// recording again (after a prompt or tool change), from each case's `eval/solutions/<id>.json`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_starter_suite_replays_from_its_recording() {
    let eval_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../eval");
    let cases = load_suites(std::slice::from_ref(&eval_dir)).unwrap();
    assert!(cases.len() >= 12, "{} cases", cases.len());
    let recording = eval_dir.join("recording");
    let out = tempfile::tempdir().unwrap();
    let record = std::env::var_os("PITCREW_EVAL_RECORD").is_some_and(|v| v == "1");
    let (model, models) = if record {
        let routes = cases
            .iter()
            .map(|case| {
                let path = eval_dir.join("solutions").join(format!("{}.json", case.id));
                let script = Script::from_json(&std::fs::read_to_string(&path).unwrap()).unwrap();
                (case.task.trim().to_owned(), script)
            })
            .collect();
        let model = ScriptedModel::start_routed(Script::new(), routes);
        std::fs::remove_dir_all(&recording).ok();
        (Some(model), Models::Record(recording.clone()))
    } else {
        (None, Models::Replay(recording.clone()))
    };
    let url = model
        .as_ref()
        .map_or_else(|| "http://127.0.0.1:9/v1".to_owned(), ScriptedModel::openai_base_url);
    let mut variant_config = config(&url, &local());
    variant_config.agent.code_index = true;
    let ran = run(
        EvalOptions {
            cases,
            variants: vec![Variant {
                label: "gpt-4o-mini".to_owned(),
                config: variant_config,
            }],
            repeat: 1,
            concurrency: 2,
            out: out.path().to_owned(),
            models,
            prompts: Prompts::embedded(),
            cancel: CancellationToken::new(),
        },
        &|_| {},
    )
    .await
    .unwrap();
    if let Some(model) = model {
        model.assert_script_consumed();
    }
    let failed: Vec<_> = ran.results.iter().filter(|r| r.status != Status::Pass).collect();
    assert!(
        failed.is_empty(),
        "cases that did not pass (a prompt or tool change? re-record with PITCREW_EVAL_RECORD=1): {failed:#?}"
    );
}

/// Two configurations (each its own model) run the same case twice: the results pair up per
/// repetition and the report sets them side by side; a Ctrl-C after the first result stops the
/// run with what finished.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configurations_are_compared_over_repetitions_and_a_cancelled_run_keeps_what_finished() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    let yaml = "- {id: value, repo: project, task: 'The value must be 2.', check: {run: 'grep -qx 2 value.txt'}, tags: [shell]}\n";
    let twice = |command: &str| {
        let mut script = solving(command);
        for turn in solving(command).turns {
            script = script.turn(turn);
        }
        script
    };
    let (good, bad) = (
        ScriptedModel::start(twice("echo 2 > value.txt")),
        ScriptedModel::start(twice("echo 3 > value.txt")),
    );
    let variants = vec![
        Variant {
            label: "baseline".to_owned(),
            config: config(&bad.openai_base_url(), &local()),
        },
        Variant {
            label: "new-prompt".to_owned(),
            config: config(&good.openai_base_url(), &local()),
        },
    ];
    let ran = run(
        EvalOptions {
            cases: suite(dir.path(), yaml),
            variants,
            repeat: 2,
            // One at a time: a configuration's model plays one script for both repetitions, which
            // must not interleave.
            concurrency: 1,
            out: dir.path().join("out"),
            models: Models::Live,
            prompts: Prompts::embedded(),
            cancel: CancellationToken::new(),
        },
        &|_| {},
    )
    .await
    .unwrap();
    good.assert_script_consumed();
    bad.assert_script_consumed();
    let runs: Vec<_> = ran
        .results
        .iter()
        .map(|r| (r.variant.as_str(), r.repetition, r.status))
        .collect();
    assert_eq!(
        runs,
        [
            ("baseline", 0, Status::Fail),
            ("baseline", 1, Status::Fail),
            ("new-prompt", 0, Status::Pass),
            ("new-prompt", 1, Status::Pass),
        ]
    );
    let report = pitcrew::eval::report::render(&ran.results, &["baseline".to_owned(), "new-prompt".to_owned()]);
    assert!(
        report
            .markdown
            .contains("## new-prompt against baseline (the baseline)"),
        "{}",
        report.markdown
    );
    assert!(
        report.markdown.contains("- Per case: 1 win, 0 losses, 0 ties."),
        "{}",
        report.markdown
    );

    // Cancelled as the first result comes in: that one is kept, nothing else starts.
    let cancel = CancellationToken::new();
    let model = ScriptedModel::start(twice("echo 2 > value.txt"));
    let stop = cancel.clone();
    let cancelled = run(
        EvalOptions {
            cases: suite(dir.path(), yaml),
            variants: vec![Variant {
                label: "one".to_owned(),
                config: config(&model.openai_base_url(), &local()),
            }],
            repeat: 2,
            concurrency: 1,
            out: dir.path().join("cancelled"),
            models: Models::Live,
            prompts: Prompts::embedded(),
            cancel: cancel.clone(),
        },
        &move |_| stop.cancel(),
    )
    .await
    .unwrap();
    assert!(cancelled.cancelled);
    assert_eq!(cancelled.planned, 2);
    assert_eq!(cancelled.results.len(), 1);
    assert_eq!(cancelled.results[0].status, Status::Pass);
    assert_eq!(
        read_results(&dir.path().join("cancelled/results.jsonl")).unwrap(),
        cancelled.results
    );
}
