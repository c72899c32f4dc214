//! Memory per concurrent job: `pitcrew serve` with the real job handlers (`[server] concurrency =
//! 20`, the local sandbox backend) runs 20 `@agent fix` jobs at once, on 20 pull requests of one
//! repository served by the tests' git server (`git http-backend`, installation tokens from the fake
//! GitHub), with the scripted model streaming its first answer to every job slowly enough that all
//! 20 jobs are inside a model call at the same time.
//!
//! The server runs in this process, beside the fakes (the fake GitHub, the git server and the
//! scripted model, each on its own thread), so the resident set (`VmRSS`) is sampled with the fakes
//! up and no job run (the baseline), after one warm-up job (the mirror cloned, one-time
//! initialisation done), with all 20 jobs in flight, and after they all ended. Growth per job is
//! the difference to each baseline, divided by 20. `git` and the tests' shell commands run in child
//! processes and are not counted.
//!
//! Run: `cargo bench -p pitcrew --bench jobs_memory` (figures go in BENCHMARKS.md).

#![allow(
    clippy::print_stderr,
    clippy::print_stdout,
    reason = "a benchmark reports on the terminal"
)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use pitcrew::config::{Config, LoadOptions};
use pitcrew::jobs::{EndOutcome, JobEnd, JobState};
use pitcrew::serve::ServeOptions;
use pitcrew::server::RunningServer;
use pitcrew::server::signature::sign;
use pitcrew_tests::fake_github::{FakeGithub, Issue, Permission, Repo};
use pitcrew_tests::git_server::GitServer;
use pitcrew_tests::scenario::{Comment, comment_payload};
use pitcrew_tests::scripted_model::{Reply, Script, ScriptedModel};
use pitcrew_tests::server_config::ServerOverrides;
use secrecy::SecretString;
use serde_json::json;
use tokio::sync::broadcast;

const REPO: &str = "acme/calc";
const SECRET: &str = "the memory benchmark's webhook secret";
const JOBS: u64 = 20;
/// The pull request the warm-up job runs on; the measured jobs run on 1..=JOBS.
const WARMUP_PR: u64 = JOBS + 1;
/// Words in the slow first answer, one streamed event each, `CHUNK_DELAY` apart: about 24 s per
/// stream, far longer than it takes the 20 jobs to reach the model.
const SLOW_WORDS: usize = 120;
const CHUNK_DELAY: Duration = Duration::from_millis(200);
const WAIT: Duration = Duration::from_secs(300);
const MIB: f64 = 1024.0 * 1024.0;

const CALC: &str = "add() {\n    echo $(($1 + $2))\n}\n";
const TESTS: &str = r#"#!/bin/sh
. ./calc.sh
echo
echo "running 1 test"
if [ "$(add 2 3)" = 5 ]; then
    echo "test adds_two_numbers ... ok"
    echo
    echo "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s"
else
    echo "test adds_two_numbers ... FAILED"
    echo
    echo "test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s"
    exit 101
fi
"#;
const REPO_CONFIG: &str = "[agent]\ntest_command = \"sh run-tests.sh\"\n";

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The process's resident set, in bytes (`VmRSS` of `/proc/self/status`).
fn rss() -> Result<u64, Error> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let line = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .ok_or("no VmRSS in /proc/self/status")?;
    let kib: u64 = line.trim().trim_end_matches("kB").trim().parse()?;
    Ok(kib * 1024)
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / MIB
}

fn git(dir: &Path, args: &[&str]) -> Result<(), Error> {
    let output = Command::new("git").args(args).current_dir(dir).output()?;
    if !output.status.success() {
        return Err(format!("git {args:?}: {}", String::from_utf8_lossy(&output.stderr)).into());
    }
    Ok(())
}

/// The model's answers. Turns go to whichever request comes next, so every job gets the same kind
/// of answer: the warm-up job first (alone: a quick look, then done), then the 20 slow first
/// answers (text and a `read_file` call), then 20 quick final answers. A job handed a second slow
/// turn would just look once more; each job ends on the first final answer it gets.
fn script() -> Script {
    let look = || Reply::text("Let me look at the code first.").tool_call("read_file", json!({"path": "calc.sh"}));
    let done = || Reply::text("`add` already adds its arguments and the test passes; nothing to change.");
    let mut script = Script::new()
        .turn(look().usage(1_000, 20))
        .turn(done().usage(1_100, 20));
    let slow: String = (0..SLOW_WORDS)
        .map(|i| format!("word{i} "))
        .collect::<String>()
        .trim_end()
        .to_owned();
    for _ in 0..JOBS {
        script = script.turn(
            Reply::text(slow.clone())
                .tool_call("read_file", json!({"path": "calc.sh"}))
                .usage(1_000, 200)
                .chunk_delay(CHUNK_DELAY),
        );
    }
    for _ in 0..JOBS {
        script = script.turn(done().usage(1_300, 20));
    }
    script
}

struct World {
    github: FakeGithub,
    git: GitServer,
    model: ScriptedModel,
    server: RunningServer,
    http: reqwest::Client,
    _data: tempfile::TempDir,
}

impl World {
    async fn start() -> Result<World, Error> {
        let github = FakeGithub::start();
        let git_server = GitServer::start_with(github.token_check());
        let base = git_server.create_repo(
            REPO,
            &[
                ("calc.sh", CALC),
                ("run-tests.sh", TESTS),
                (".github/pitcrew.toml", REPO_CONFIG),
            ],
        )?;
        github.add_repo(
            Repo::new(REPO)
                .default_branch("main")
                .clone_url(&git_server.url(REPO))
                .git_dir(git_server.repo_path(REPO)),
        );
        for pr in 1..=WARMUP_PR {
            let branch = format!("notes-{pr}");
            let head = git_server.create_pull_head(
                REPO,
                pr,
                "main",
                &[(&format!("notes/{pr}.md"), &format!("notes for change {pr}\n"))],
                &format!("notes {pr}"),
            )?;
            // The pull request's branch, as a same-repository pull request has it.
            git(
                &git_server.repo_path(REPO),
                &["update-ref", &format!("refs/heads/{branch}"), &head],
            )?;
            github.add_issue(
                REPO,
                Issue::pull_request(pr, &format!("Notes {pr}"), (&branch, &head), ("main", &base)).user("bob"),
            );
        }
        github.set_permission(REPO, "alice", Permission::Write);

        let model = ScriptedModel::try_start(script())?;
        // On the same disk as a server's data directory would be (not a tmpfs).
        let data = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
        let overrides = ServerOverrides::new(&github, SECRET, data.path())
            .model(&model)
            .set("server.concurrency", JOBS.to_string())
            .build();
        let config = Config::load(LoadOptions {
            config_path: None,
            env: &BTreeMap::new(),
            overrides: &overrides,
        })
        .map_err(|error| format!("the configuration: {error}"))?;
        let server = pitcrew::serve::start(
            config,
            ServeOptions {
                listener: Some(std::net::TcpListener::bind("127.0.0.1:0")?),
                ..ServeOptions::default()
            },
        )
        .await?;

        Ok(World {
            github,
            git: git_server,
            model,
            server,
            http: reqwest::Client::new(),
            _data: data,
        })
    }

    /// alice comments `@agent fix …` on pull request `pr`; the signed delivery is posted.
    async fn ask_for_a_fix(&self, pr: u64) -> Result<(), Error> {
        let text = "@agent fix the notes";
        let id = self.github.add_issue_comment(REPO, pr, "alice", text);
        let comment = Comment {
            id,
            login: "alice",
            user_id: 4242,
            association: "COLLABORATOR",
            body: text,
        };
        let payload = comment_payload(
            REPO,
            &self.git.url(REPO),
            pr,
            &comment,
            Some(self.github.installation_id()),
        );
        let body = serde_json::to_vec(&payload)?;
        let response = self
            .http
            .post(format!("{}/webhook", self.server.url()))
            .header("X-GitHub-Event", "issue_comment")
            .header("X-GitHub-Delivery", format!("memory-bench-{pr}"))
            .header("X-Hub-Signature-256", sign(&SecretString::from(SECRET), &body))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await?;
        if response.status().as_u16() != 202 {
            return Err(format!("the delivery for #{pr} was answered {}", response.status()).into());
        }
        Ok(())
    }

    /// Waits until the model has received `n` requests. The scripted model has no notification,
    /// so it is asked every 10 ms.
    async fn model_requests(&self, n: usize) -> Result<(), Error> {
        let deadline = Instant::now() + WAIT;
        while self.model.requests().len() < n {
            if Instant::now() > deadline {
                return Err(format!(
                    "only {} of {n} model requests arrived in time",
                    self.model.requests().len()
                )
                .into());
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(())
    }
}

/// Waits for `n` job ends; fails on any job that did not succeed.
async fn job_ends(ends: &mut broadcast::Receiver<JobEnd>, n: u64) -> Result<(), Error> {
    tokio::time::timeout(WAIT, async {
        for _ in 0..n {
            let end = ends.recv().await?;
            if end.outcome != EndOutcome::Finished(JobState::Succeeded) {
                return Err(format!("job {:?} ended {:?}", end.job, end.outcome).into());
            }
        }
        Ok::<(), Error>(())
    })
    .await
    .map_err(|_| "the jobs did not end in time")?
}

/// Samples `VmRSS` every 20 ms on its own thread until stopped; returns the highest value seen.
struct Sampler {
    stop: Arc<AtomicBool>,
    highest: Arc<AtomicU64>,
    thread: std::thread::JoinHandle<()>,
}

impl Sampler {
    fn start() -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let highest = Arc::new(AtomicU64::new(0));
        let thread = std::thread::spawn({
            let (stop, highest) = (Arc::clone(&stop), Arc::clone(&highest));
            move || {
                while !stop.load(Ordering::Relaxed) {
                    if let Ok(now) = rss() {
                        highest.fetch_max(now, Ordering::Relaxed);
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        });
        Sampler { stop, highest, thread }
    }

    fn finish(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
        self.highest.load(Ordering::Relaxed)
    }
}

fn main() -> Result<(), Error> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(bench())
}

async fn bench() -> Result<(), Error> {
    let world = World::start().await?;
    let mut ends = world.server.pool().subscribe();
    let idle = rss()?;

    // One job alone: clones the mirror and initialises what is initialised once.
    world.ask_for_a_fix(WARMUP_PR).await?;
    job_ends(&mut ends, 1).await?;
    let warm = rss()?;
    let warmup_requests = world.model.requests().len();

    let sampler = Sampler::start();
    let asked = Instant::now();
    for pr in 1..=JOBS {
        world.ask_for_a_fix(pr).await?;
    }
    world.model_requests(warmup_requests + JOBS as usize).await?;
    let all_in_model = asked.elapsed();
    let peak = rss()?;
    // Proof that the 20 jobs were all in flight at the sample: the store says so, no job has sent a
    // second request, and the first slow stream (the shortest-lived) is still being sent.
    let running = world
        .server
        .store()
        .count_by_state()
        .await?
        .get(&JobState::Running)
        .copied()
        .unwrap_or(0);
    let requests = world.model.requests();
    let first_slow = requests
        .get(warmup_requests)
        .map(|request| request.received_at)
        .ok_or("no first slow request")?;
    let shortest_stream = CHUNK_DELAY * u32::try_from(SLOW_WORDS)?;
    if running != JOBS || requests.len() != warmup_requests + JOBS as usize || first_slow.elapsed() >= shortest_stream {
        return Err(format!(
            "the 20 jobs did not overlap: {running} running, {} model requests, the first slow stream started {:?} ago",
            requests.len(),
            first_slow.elapsed()
        )
        .into());
    }
    job_ends(&mut ends, JOBS).await?;
    let highest = sampler.finish();
    let after = rss()?;
    world.model.assert_script_consumed();
    let violations = world.github.violations();
    if !violations.is_empty() {
        return Err(format!("the fake GitHub saw invalid requests: {violations:#?}").into());
    }

    let per_job = |from: u64| mib(peak.saturating_sub(from)) / JOBS as f64;
    println!("memory per concurrent job: {JOBS} `@agent fix` jobs, local sandbox, scripted model (VmRSS):");
    println!("  fakes and server up, no job run          {:>8.1} MiB", mib(idle));
    println!("  after one warm-up job                    {:>8.1} MiB", mib(warm));
    println!(
        "  {JOBS} jobs in flight (all in a model call)  {:>8.1} MiB   (reached {:.1} s after the first delivery)",
        mib(peak),
        all_in_model.as_secs_f64()
    );
    println!(
        "  highest sample during the {JOBS} jobs       {:>8.1} MiB",
        mib(highest)
    );
    println!("  after all {JOBS} ended                      {:>8.1} MiB", mib(after));
    println!(
        "  growth per job: {:.2} MiB over the idle baseline, {:.2} MiB over the warm one; highest sample: \
         {:.2} MiB per job over the warm one",
        per_job(idle),
        per_job(warm),
        mib(highest.saturating_sub(warm)) / JOBS as f64
    );
    println!(
        "  git fetches: {}, GitHub API calls: {}",
        world.git.fetch_count(REPO),
        world.github.requests().len()
    );
    world.server.shutdown(Duration::from_secs(5)).await;
    Ok(())
}
