//! `pitcrew eval`'s overhead per case: the working copy, the Docker sandbox's start, a setup
//! command, the agent loop with a model that answers at once (one command, then its report) and
//! the check, on a small repository. Then 20 cases at concurrency 4, end to end.
//!
//! Run: `cargo bench -p pitcrew --bench eval` (needs a Docker engine and Debian's busybox-static;
//! figures go in BENCHMARKS.md).

#![allow(
    clippy::print_stderr,
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark reports on the terminal and stops at the first failure"
)]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use pitcrew::config::{Config, LoadOptions};
use pitcrew::eval::case::load_suites;
use pitcrew::eval::results::{CaseResult, Status};
use pitcrew::eval::run::{EvalOptions, Models, Variant, run};
use pitcrew::prompts::Prompts;
use pitcrew_tests::scripted_model::{Reply, Script, ScriptedModel};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// A small project: a package of a few modules, its tests and a README.
fn project(root: &Path) {
    for dir in ["src", "tests", "docs"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    for i in 0..20 {
        std::fs::write(
            root.join(format!("src/module_{i}.sh")),
            format!("value_{i}() {{\n  echo {i}\n}}\n"),
        )
        .unwrap();
        std::fs::write(
            root.join(format!("tests/test_{i}.sh")),
            format!(
                ". ./src/module_{i}.sh\n[ \"$(value_{i})\" = {i} ] && echo 'ok {} - value_{i}'\n",
                i + 1
            ),
        )
        .unwrap();
    }
    std::fs::write(root.join("value.txt"), "1\n").unwrap();
    std::fs::write(root.join("README.md"), "A small project.\n").unwrap();
}

fn suite(dir: &Path, cases: usize) -> Vec<pitcrew::eval::case::Case> {
    let mut yaml = String::new();
    for i in 0..cases {
        yaml.push_str(&format!(
            "- {{id: case-{i}, repo: project, task: 'Make the value 2 (case {i}).', setup: 'test -d src', \
             check: {{run: 'grep -qx 2 value.txt && for t in tests/*.sh; do sh $t; done'}}}}\n"
        ));
    }
    let path = dir.join("suite.yaml");
    std::fs::write(&path, yaml).unwrap();
    load_suites(&[path]).unwrap()
}

async fn run_suite(
    dir: &Path,
    image: &str,
    cases: usize,
    concurrency: usize,
    out: &str,
) -> (Duration, Vec<CaseResult>) {
    let routes = (0..cases)
        .map(|i| {
            (
                format!("(case {i})"),
                Script::new()
                    .turn(Reply::new().tool_call("bash", json!({"command": "echo 2 > value.txt"})))
                    .turn(Reply::text("The value is 2.")),
            )
        })
        .collect();
    let model = ScriptedModel::start_routed(Script::new(), routes);
    let config = Config::load(LoadOptions {
        config_path: None,
        env: &BTreeMap::new(),
        overrides: &[
            format!("model.base_url={}", model.openai_base_url()),
            "model.name=gpt-4o-mini".to_owned(),
            format!("sandbox.image={image}"),
        ],
    })
    .unwrap();
    let started = Instant::now();
    let ran = run(
        EvalOptions {
            cases: suite(dir, cases),
            variants: vec![Variant {
                label: "instant".to_owned(),
                config,
            }],
            repeat: 1,
            concurrency,
            out: dir.join(out),
            models: Models::Live,
            prompts: Prompts::embedded(),
            cancel: CancellationToken::new(),
        },
        &|_| {},
    )
    .await
    .unwrap();
    let elapsed = started.elapsed();
    model.assert_script_consumed();
    assert!(
        ran.results.iter().all(|r| r.status == Status::Pass),
        "{:#?}",
        ran.results
    );
    (elapsed, ran.results)
}

fn median(mut values: Vec<u64>) -> u64 {
    values.sort_unstable();
    values[values.len() / 2]
}

fn main() {
    let Some(image) = pitcrew_tests::docker::test_image() else {
        eprintln!("no Docker engine: nothing measured");
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    project(&dir.path().join("project"));

    runtime.block_on(async {
        // Warm the engine and the page cache once.
        run_suite(dir.path(), image, 1, 1, "warm-up").await;

        let (elapsed, results) = run_suite(dir.path(), image, 5, 1, "one-at-a-time").await;
        let phase = |f: fn(&CaseResult) -> u64| median(results.iter().map(f).collect());
        println!("## one case at a time (5 cases, medians)");
        println!("per case (wall)        {:>6} ms", phase(|r| r.wall_ms));
        println!("  working copy         {:>6} ms", phase(|r| r.timings.copy_ms));
        println!("  sandbox and setup    {:>6} ms", phase(|r| r.timings.sandbox_ms));
        println!(
            "  agent (2 model calls, 1 command) {:>6} ms",
            phase(|r| r.timings.agent_ms)
        );
        println!("  check                {:>6} ms", phase(|r| r.timings.check_ms));
        println!(
            "  the rest (stop, changed files, clean-up) {:>6} ms",
            phase(|r| r.wall_ms - r.timings.copy_ms - r.timings.sandbox_ms - r.timings.agent_ms - r.timings.check_ms)
        );
        println!("5 cases in {:.2} s", elapsed.as_secs_f64());

        let (elapsed, results) = run_suite(dir.path(), image, 20, 4, "twenty").await;
        println!("\n## 20 cases, concurrency 4");
        println!(
            "all 20 in {:.2} s (median case {} ms)",
            elapsed.as_secs_f64(),
            median(results.iter().map(|r| r.wall_ms).collect())
        );
    });
}
