//! Fix until green (issue 21): how soon the next round starts once CI has reported.
//!
//! `pitcrew serve` with the real job handlers runs in this process beside the fakes (the fake
//! GitHub, the tests' git server with the fake CI attached, the scripted model). The calc project's
//! pull requests are fixed one after another on one server, so every measured round runs warm (the
//! mirror fetched, a working copy to reuse): `@agent fix add`, round 1 fixes `add` but leaves a
//! `TODO` that the CI's lint (which the sandbox never runs) fails on; the fake CI runs the workflow
//! on the pushed commit and sends the signed `workflow_run` and `check_suite` deliveries; the
//! loop wakes, reads the failure (the jobs, the lint's log, the base branch's history), leases the
//! branch's new head, starts the sandbox, runs the tests before the agent, and sends round 2's first
//! request. Measured: from pitcrew's answer to the first CI delivery to the model's receiving round
//! 2's first request, per pull request; the first (cold) one is left out of the median.
//!
//! Every job must end `succeeded` with CI green after two rounds: a broken set-up fails the bench
//! rather than giving a figure.
//!
//! Run: `cargo bench -p pitcrew --bench ci_loop` (figures go in BENCHMARKS.md).

#![allow(
    clippy::print_stderr,
    clippy::print_stdout,
    reason = "a benchmark reports on the terminal"
)]

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use pitcrew::config::{Config, LoadOptions};
use pitcrew::jobs::{EndOutcome, JobState};
use pitcrew::serve::ServeOptions;
use pitcrew::server::RunningServer;
use pitcrew::server::signature::sign;
use pitcrew_tests::fake_ci::{CiJob, FakeCi, Workflow};
use pitcrew_tests::fake_github::{FakeGithub, Issue};
use pitcrew_tests::git_server::GitServer;
use pitcrew_tests::scenario::{Comment, REPO_CONFIG, calc_pull_request_with, comment_payload};
use pitcrew_tests::scripted_model::{Reply, Script, ScriptedModel};
use pitcrew_tests::server_config::ServerOverrides;
use secrecy::SecretString;
use serde_json::json;

type Error = Box<dyn std::error::Error + Send + Sync>;

const REPO: &str = "acme/calc";
const SECRET: &str = "the ci loop benchmark's webhook secret";
/// Pull requests fixed; the first is the cold one.
const PULLS: u64 = 11;
const LINT: &str = "if grep -n TODO calc.sh; then echo 'lint: calc.sh has a TODO left in it'; exit 1; fi";

fn script(pulls: u64) -> Script {
    let read = || Reply::new().tool_call("read_file", json!({"path": "calc.sh"}));
    let edit = |old: &str, new: &str| {
        Reply::new().tool_call(
            "edit_file",
            json!({"path": "calc.sh", "old_string": old, "new_string": new}),
        )
    };
    let mut script = Script::new();
    for _ in 0..pulls {
        script = script
            .turn(read())
            .turn(edit("$(($1 - $2))", "$(($1 + $2)) # TODO: check for overflow"))
            .turn(Reply::text("`add` adds now."))
            .turn(read())
            .turn(edit(" # TODO: check for overflow", ""))
            .turn(Reply::text("Removed the TODO."));
    }
    script
}

struct World {
    github: FakeGithub,
    git: GitServer,
    model: ScriptedModel,
    ci: FakeCi,
    server: RunningServer,
    base: String,
    _data: tempfile::TempDir,
}

impl World {
    async fn start(configure: impl FnOnce(ServerOverrides) -> ServerOverrides) -> Result<World, Error> {
        let github = FakeGithub::start();
        let git = GitServer::start_with(github.token_check());
        let pull = calc_pull_request_with(&git, &github, REPO, 1, REPO_CONFIG)?;
        let ci = FakeCi::attach(
            &git,
            &github,
            REPO,
            Workflow::new(
                "CI",
                vec![CiJob::new("test", "sh run-tests.sh"), CiJob::new("lint", LINT)],
            ),
        );
        ci.run_branch("main");
        let model = ScriptedModel::start(script(PULLS));
        let data = tempfile::TempDir::new()?;
        let overrides = configure(ServerOverrides::new(&github, SECRET, data.path()).model(&model));
        let config = Config::load(LoadOptions {
            config_path: None,
            env: &BTreeMap::new(),
            overrides: &overrides.build(),
        })
        .map_err(|errors| format!("the bench's configuration: {errors}"))?;
        let server = pitcrew::serve::start(
            config,
            ServeOptions {
                listener: Some(std::net::TcpListener::bind("127.0.0.1:0")?),
                ..ServeOptions::default()
            },
        )
        .await?;
        ci.deliver_to(&format!("{}/webhook", server.url()), SECRET, github.installation_id());
        Ok(World {
            github,
            git,
            model,
            ci,
            server,
            base: pull.base_sha,
            _data: data,
        })
    }

    /// Opens pull request `number` (a README change on its own branch off `main`).
    fn open_pull(&self, number: u64) -> Result<String, Error> {
        let branch = format!("docs-{number}");
        let head = self.git.create_pull_head(
            REPO,
            number,
            "main",
            &[("README.md", &format!("calc, take {number}\n"))],
            &branch,
        )?;
        let status = Command::new("git")
            .args(["update-ref", &format!("refs/heads/{branch}"), &head])
            .current_dir(self.git.repo_path(REPO))
            .status()?;
        if !status.success() {
            return Err("git update-ref failed".into());
        }
        self.github.add_issue(
            REPO,
            Issue::pull_request(number, "Document calc", (&branch, &head), ("main", &self.base)).user("bob"),
        );
        Ok(head)
    }

    /// Asks for the fix of pull request `number` and waits for its job; returns the time from
    /// pitcrew's answer to the first delivery of round 1's CI to round 2's first model request.
    async fn fix(&self, number: u64, head: &str) -> Result<Duration, Error> {
        let mut ends = self.server.pool().subscribe();
        let answered_before = self.ci.answered_at().len();
        let id = self.github.add_issue_comment(REPO, number, "alice", "@agent fix add");
        let comment = Comment {
            id,
            login: "alice",
            user_id: 4242,
            association: "COLLABORATOR",
            body: "@agent fix add",
        };
        let payload = comment_payload(
            REPO,
            &self.git.url(REPO),
            number,
            &comment,
            Some(self.github.installation_id()),
        );
        let body = serde_json::to_vec(&payload)?;
        let response = reqwest::Client::new()
            .post(format!("{}/webhook", self.server.url()))
            .header("X-GitHub-Event", "issue_comment")
            .header("X-GitHub-Delivery", format!("bench-fix-{number}"))
            .header("X-Hub-Signature-256", sign(&SecretString::from(SECRET), &body))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await?;
        if response.status() != 202 {
            return Err(format!("the comment's delivery was answered {}", response.status()).into());
        }
        let end = tokio::time::timeout(Duration::from_secs(300), ends.recv()).await??;
        if end.outcome != EndOutcome::Finished(JobState::Succeeded) {
            return Err(format!("the fix of #{number} ended {:?}", end.outcome).into());
        }
        let branch = format!("docs-{number}");
        let first = self
            .git
            .rev_parse(REPO, &format!("refs/heads/{branch}"))
            .ok_or("no branch")?;
        if first == head {
            return Err(format!("nothing was pushed to #{number}").into());
        }
        let answered = self.ci.answered_at();
        let woke = *answered
            .get(answered_before)
            .ok_or("the first CI delivery was never answered")?;
        let requests = self.model.requests();
        let round_two = requests
            .iter()
            .filter(|r| r.received_at > woke)
            .find(|r| r.raw_body.contains("CI failed on"))
            .ok_or("round 2 never asked the model")?;
        Ok(round_two.received_at - woke)
    }
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

async fn run(configure: impl FnOnce(ServerOverrides) -> ServerOverrides) -> Result<Vec<Duration>, Error> {
    let world = World::start(configure).await?;
    let mut figures = Vec::new();
    for number in 2..=PULLS + 1 {
        let head = world.open_pull(number)?;
        figures.push(world.fix(number, &head).await?);
    }
    let violations = world.github.violations();
    if !violations.is_empty() {
        return Err(format!("the fake GitHub saw invalid requests: {violations:#?}").into());
    }
    world.server.shutdown(Duration::from_secs(10)).await;
    Ok(figures)
}

fn report(label: &str, figures: &[Duration]) {
    let warm = figures[1..].to_vec();
    let ms = |d: Duration| format!("{:.0} ms", d.as_secs_f64() * 1000.0);
    println!("\n== {label} ==");
    println!("cold (the server's first job): {}", ms(figures[0]));
    println!(
        "warm, {} pull requests: median {}, min {}, max {}",
        warm.len(),
        ms(median(warm.clone())),
        ms(*warm.iter().min().unwrap_or(&Duration::ZERO)),
        ms(*warm.iter().max().unwrap_or(&Duration::ZERO))
    );
}

fn main() -> Result<(), Error> {
    // What `pitcrew serve` logs, formatted as for a log collector, then discarded.
    let _ = tracing_subscriber::fmt()
        .json()
        .with_max_level(tracing::Level::INFO)
        .with_writer(std::io::sink)
        .try_init();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    println!("fix until green: CI's first delivery → round 2's first model request");
    let local = runtime.block_on(run(|overrides| overrides))?;
    report("local sandbox (pitcrew's own overhead)", &local);
    match pitcrew_tests::docker::test_image() {
        Some(image) => {
            let docker = runtime.block_on(run(|overrides| overrides.docker(image)))?;
            report(&format!("Docker sandbox ({image})"), &docker);
        }
        None => println!("\n(no Docker engine: the Docker sandbox's figures are left out)"),
    }
    Ok(())
}
