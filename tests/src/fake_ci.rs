//! A fake GitHub Actions for end-to-end tests: attached to a [`GitServer`]'s pushes to one
//! repository, it runs a workflow (jobs that are shell scripts) on every branch a push creates or
//! moves, in a checkout of that exact commit, keeps the run, its jobs, their steps and logs (in the
//! Actions log format) in a [`FakeGithub`], and delivers signed `workflow_run` and `check_suite`
//! `completed` webhooks (GitHub's own example payloads, pointed at the repository) to pitcrew.
//!
//! As on GitHub, the push itself moves the head of every open pull request from the branch and
//! queues the run (listed at once by the API, `queued`); one runner thread of the fake's own then
//! takes the runs in push order: the run and its jobs go `in_progress`, each job's script runs with
//! `sh -c` at the root of a fresh checkout (stdin closed, stdout and stderr as one stream, killed
//! after [`JOB_TIMEOUT`]), each job completes with its log, then the run, then the deliveries go
//! out, unretried. A test waits for a run with [`FakeCi::wait_for_run`], woken by each finished
//! run, never by polling.
//!
//! ```no_run
//! # async fn demo(git: &pitcrew_tests::git_server::GitServer, github: &pitcrew_tests::fake_github::FakeGithub) {
//! use std::time::Duration;
//! use pitcrew_tests::fake_ci::{CiJob, FakeCi, Workflow};
//!
//! let ci = FakeCi::attach(git, github, "acme/calc", Workflow::new("CI", vec![CiJob::new("test", "sh run-tests.sh")]));
//! ci.deliver_to("http://127.0.0.1:8080/webhook", "secret", 4242);
//! let sha = git.commit("acme/calc", "fix", &[("calc.sh", "…")], "fix").unwrap();
//! let run = ci.wait_for_run(&sha, Duration::from_secs(60)).await;
//! assert_eq!(run.conclusion, "success");
//! # }
//! ```

use std::io::{Read as _, Seek as _};
use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, mpsc};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ring::hmac;
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::fake_github::wire;
use crate::fake_github::{ActionsJob, Alarm, FakeGithub, GithubState, JobStep, Repo, StateHandle, WorkflowRun};
use crate::git_server::{GitServer, Push};
use crate::scenario::example_payload;

/// How long one job's script may run before it is killed (and the job fails).
pub const JOB_TIMEOUT: Duration = Duration::from_secs(120);

/// How long one delivery may take, connecting included.
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(30);

/// One job of a workflow: `script` runs with `sh -c` at the root of a checkout of the commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CiJob {
    pub name: String,
    pub script: String,
}

impl CiJob {
    pub fn new(name: &str, script: &str) -> Self {
        CiJob {
            name: name.to_owned(),
            script: script.to_owned(),
        }
    }
}

/// A workflow (`CI`) and its jobs, run in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workflow {
    pub name: String,
    pub jobs: Vec<CiJob>,
}

impl Workflow {
    pub fn new(name: &str, jobs: Vec<CiJob>) -> Self {
        Workflow {
            name: name.to_owned(),
            jobs,
        }
    }
}

/// A completed run, as the fake GitHub holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CiRun {
    pub run_id: u64,
    pub check_suite_id: u64,
    pub sha: String,
    pub branch: String,
    /// `success`, or `failure` when a job failed.
    pub conclusion: String,
    pub jobs: Vec<CiJobResult>,
}

/// A completed job of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CiJobResult {
    /// Also its check run's id.
    pub job_id: u64,
    pub name: String,
    /// `success` or `failure`.
    pub conclusion: String,
    /// The whole log, in the Actions format.
    pub log: String,
}

/// A handle on the fake CI of one repository; clones share it.
#[derive(Debug, Clone)]
pub struct FakeCi {
    core: Arc<Core>,
    queue: mpsc::Sender<Queued>,
}

#[derive(Debug)]
struct Core {
    /// `owner/name`.
    repo: String,
    git_dir: PathBuf,
    github: StateHandle,
    state: Mutex<CiState>,
    /// Woken when a run has finished (deliveries included).
    finished: Notify,
}

#[derive(Debug)]
struct CiState {
    workflow: Workflow,
    target: Option<Target>,
    /// How many of the next deliveries are lost.
    lose: usize,
    runs: Vec<CiRun>,
    deliveries: Vec<(String, String, u16)>,
    /// When pitcrew answered each of `deliveries`.
    answered: Vec<Instant>,
}

#[derive(Debug, Clone)]
struct Target {
    url: String,
    secret: String,
    installation: u64,
}

/// A run the push queued: its ids in the fake GitHub and what it runs.
#[derive(Debug)]
struct Queued {
    run_id: u64,
    check_suite_id: u64,
    sha: String,
    branch: String,
    pull_requests: Vec<u64>,
    jobs: Vec<(u64, CiJob)>,
    workflow: String,
    /// Told the finished run ([`FakeCi::run_branch`] waits on it).
    done: Option<mpsc::Sender<CiRun>>,
}

impl Core {
    fn state(&self) -> MutexGuard<'_, CiState> {
        // A test that panicked while holding the lock leaves consistent data behind.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What a push of `branch` to `sha` does at once on GitHub: the pull requests from the branch
    /// move to `sha`, and the workflow's run and jobs are queued.
    fn queue_run(&self, branch: &str, sha: &str, done: Option<mpsc::Sender<CiRun>>) -> Queued {
        let workflow = self.state().workflow.clone();
        let repo = self.repo.as_str();
        self.github.change(|s| {
            let pull_requests = s.branch_pushed(repo, branch, sha);
            let mut run = WorkflowRun::new(0, &workflow.name, sha)
                .head_branch(branch)
                .event("push")
                .status("queued");
            run.pull_requests.clone_from(&pull_requests);
            let run_id = s.add_workflow_run(repo, run);
            let check_suite_id = s.workflow_runs.get(&run_id).map_or(0, |r| r.check_suite_id);
            let jobs = workflow
                .jobs
                .iter()
                .map(|job| {
                    let mut queued = ActionsJob::new(0, run_id, &job.name).status("queued");
                    queued.steps.push(JobStep {
                        name: step_name(&job.script),
                        number: 1,
                        status: "queued".to_owned(),
                        conclusion: None,
                    });
                    (s.add_actions_job(repo, queued), job.clone())
                })
                .collect();
            Queued {
                run_id,
                check_suite_id,
                sha: sha.to_owned(),
                branch: branch.to_owned(),
                pull_requests,
                jobs,
                workflow: workflow.name.clone(),
                done,
            }
        })
    }

    /// Runs a queued run to its end: jobs, run, deliveries; then records it.
    fn run(&self, queued: &Queued, runtime: &tokio::runtime::Runtime, client: &reqwest::Client) -> CiRun {
        let started = wire::now_rfc3339();
        self.github.change(|s| {
            if let Some(run) = s.workflow_runs.get_mut(&queued.run_id) {
                "in_progress".clone_into(&mut run.status);
            }
            for (id, _) in &queued.jobs {
                if let Some(job) = s.actions_jobs.get_mut(id) {
                    "in_progress".clone_into(&mut job.status);
                    job.started_at.clone_from(&started);
                    for step in &mut job.steps {
                        "in_progress".clone_into(&mut step.status);
                    }
                }
            }
        });
        let mut results = Vec::new();
        for (id, job) in &queued.jobs {
            let outcome = self.run_job(job, &queued.sha);
            let conclusion = if outcome.passed() { "success" } else { "failure" };
            let log = outcome.log;
            let finished = wire::now_rfc3339();
            self.github.change(|s| {
                if let Some(stored) = s.actions_jobs.get_mut(id) {
                    "completed".clone_into(&mut stored.status);
                    stored.conclusion = Some(conclusion.to_owned());
                    stored.completed_at = Some(finished);
                    stored.log = log.clone().into_bytes();
                    for step in &mut stored.steps {
                        "completed".clone_into(&mut step.status);
                        step.conclusion = Some(conclusion.to_owned());
                    }
                }
            });
            results.push(CiJobResult {
                job_id: *id,
                name: job.name.clone(),
                conclusion: conclusion.to_owned(),
                log,
            });
        }
        let conclusion = if results.iter().all(|j| j.conclusion == "success") {
            "success"
        } else {
            "failure"
        };
        let repo = self.github.change(|s| {
            if let Some(run) = s.workflow_runs.get_mut(&queued.run_id) {
                "completed".clone_into(&mut run.status);
                run.conclusion = Some(conclusion.to_owned());
            }
            s.repo(&self.repo).cloned()
        });
        let run = CiRun {
            run_id: queued.run_id,
            check_suite_id: queued.check_suite_id,
            sha: queued.sha.clone(),
            branch: queued.branch.clone(),
            conclusion: conclusion.to_owned(),
            jobs: results,
        };
        let repo = repo.unwrap_or_else(|| Repo::new(&self.repo));
        self.deliver(&run, queued, &repo, runtime, client);
        self.state().runs.push(run.clone());
        self.finished.notify_waiters();
        run
    }

    /// Runs `job` in a fresh checkout of `sha`.
    fn run_job(&self, job: &CiJob, sha: &str) -> Outcome {
        let started = SystemTime::now();
        let output = match tempfile::tempdir() {
            Ok(dir) => match checkout(&self.git_dir, sha, dir.path()) {
                Ok(()) => run_script(&job.script, dir.path(), sha),
                Err(error) => Err(format!("checking out {sha}: {error}")),
            },
            Err(error) => Err(format!("making the checkout's directory: {error}")),
        };
        let (text, end) = match output {
            Ok((text, end)) => (text, end),
            Err(error) => (format!("{error}\n"), End::Exit(1)),
        };
        Outcome {
            log: actions_log(&job.script, &text, &end, started),
            end,
        }
    }

    /// Sends the run's `workflow_run` and `check_suite` deliveries to the target, if one is set,
    /// each lost instead while losses are pending.
    fn deliver(
        &self,
        run: &CiRun,
        queued: &Queued,
        repo: &Repo,
        runtime: &tokio::runtime::Runtime,
        client: &reqwest::Client,
    ) {
        let Some(target) = self.state().target.clone() else {
            return;
        };
        let pulls = self
            .github
            .read(|s| pull_objects(s, repo, &queued.pull_requests, &run.branch, &run.sha));
        let deliveries = [
            (
                "workflow_run",
                workflow_run_payload(run, queued, repo, &pulls, target.installation),
            ),
            (
                "check_suite",
                check_suite_payload(run, repo, &pulls, target.installation),
            ),
        ];
        for (event, payload) in deliveries {
            {
                let mut state = self.state();
                if state.lose > 0 {
                    state.lose -= 1;
                    continue;
                }
            }
            let id = delivery_id();
            let body = payload.to_string();
            let status = runtime.block_on(send(client, &target, event, &id, body));
            let mut state = self.state();
            state.answered.push(Instant::now());
            state.deliveries.push((event.to_owned(), id, status));
        }
    }
}

impl FakeCi {
    /// Attaches to `git`'s pushes to `repo` (`owner/name`): from now on every push that creates or
    /// moves a branch `refs/heads/X` runs `workflow` on the new commit (ref deletions, tags and
    /// other refs do nothing). The run is kept in `github`.
    ///
    /// # Panics
    /// When the runner's thread cannot start.
    pub fn attach(git: &GitServer, github: &FakeGithub, repo: &str, workflow: Workflow) -> FakeCi {
        let core = Arc::new(Core {
            repo: repo.to_owned(),
            git_dir: git.repo_path(repo),
            github: github.handle(),
            state: Mutex::new(CiState {
                workflow,
                target: None,
                lose: 0,
                runs: Vec::new(),
                deliveries: Vec::new(),
                answered: Vec::new(),
            }),
            finished: Notify::new(),
        });
        let (queue, work) = mpsc::channel::<Queued>();
        let runner = Arc::clone(&core);
        let name = format!("fake-ci-{}", repo.replace('/', "-"));
        if let Err(error) = std::thread::Builder::new()
            .name(name)
            .spawn(move || run_queue(&runner, &work))
        {
            panic!("fake CI: could not start the runner: {error}");
        }
        let hook_core = Arc::clone(&core);
        let hook_queue = queue.clone();
        git.on_push(Arc::new(move |push: &Push| {
            if push.repo != hook_core.repo {
                return;
            }
            for update in &push.updates {
                let Some(branch) = update.name.strip_prefix("refs/heads/") else {
                    continue;
                };
                if update.new.bytes().all(|b| b == b'0') {
                    continue;
                }
                let queued = hook_core.queue_run(branch, &update.new, None);
                // The runner is gone only when the process is ending.
                let _ = hook_queue.send(queued);
            }
        }));
        FakeCi { core, queue }
    }

    /// Where completed runs' deliveries go from now on: `url` (pitcrew's full webhook URL),
    /// signed with `secret` (`X-Hub-Signature-256`), naming installation `installation`. Until
    /// then runs happen but nothing is delivered.
    pub fn deliver_to(&self, url: &str, secret: &str, installation: u64) {
        self.core.state().target = Some(Target {
            url: url.to_owned(),
            secret: secret.to_owned(),
            installation,
        });
    }

    /// The next `n` deliveries are lost (not sent, not listed by [`FakeCi::deliveries`]), though
    /// their runs complete as usual in the fake GitHub. Only deliveries that would be sent count:
    /// none is lost while no target is set.
    pub fn lose_next_deliveries(&self, n: usize) {
        self.core.state().lose += n;
    }

    /// Replaces what runs queued from now on execute.
    pub fn set_workflow(&self, workflow: Workflow) {
        self.core.state().workflow = workflow;
    }

    /// Runs the workflow on the head of `branch` now, after the runs already queued, and returns
    /// it completed, its deliveries sent (if a target is set). Blocks the calling thread: on a
    /// multi-thread tokio runtime (the harness's) through `block_in_place`, so a target served by
    /// that runtime still answers; on a current-thread runtime serving the target, call it before
    /// [`FakeCi::deliver_to`] (or the deliveries time out, status 0).
    ///
    /// # Panics
    /// When the branch does not exist, or the runner has stopped.
    pub fn run_branch(&self, branch: &str) -> CiRun {
        let reference = format!("refs/heads/{branch}");
        let sha = Command::new("git")
            .arg("--git-dir")
            .arg(&self.core.git_dir)
            .args(["rev-parse", "--verify", "-q", &reference])
            .stdin(Stdio::null())
            .output()
            .ok()
            .filter(|out| out.status.success())
            .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
            .unwrap_or_else(|| panic!("fake CI: {} has no branch {branch}", self.core.repo));
        let (done, finished) = mpsc::channel();
        let queued = self.core.queue_run(branch, &sha, Some(done));
        if self.queue.send(queued).is_err() {
            panic!("fake CI: the runner has stopped");
        }
        // On a multi-thread runtime the other workers go on serving (the target, if it runs
        // there); on a current-thread one nothing else runs until the run is over.
        let on_workers = tokio::runtime::Handle::try_current()
            .is_ok_and(|handle| handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        let run = if on_workers {
            tokio::task::block_in_place(|| finished.recv())
        } else {
            finished.recv()
        };
        match run {
            Ok(run) => run,
            Err(_) => panic!("fake CI: the runner stopped during the run of {branch}"),
        }
    }

    /// Every completed run so far, oldest first.
    pub fn runs(&self) -> Vec<CiRun> {
        self.core.state().runs.clone()
    }

    /// Waits until a run of `sha` has completed and its deliveries were sent (or lost); returns
    /// the latest such run. Woken by each finished run; `timeout` is wall-clock time, so paused
    /// tokio time does not shorten it.
    ///
    /// # Panics
    /// When `timeout` passes first, listing the runs there were.
    pub async fn wait_for_run(&self, sha: &str, timeout: Duration) -> CiRun {
        let deadline = Instant::now() + timeout;
        let alarm = Alarm::set(deadline);
        loop {
            let notified = self.core.finished.notified();
            tokio::pin!(notified);
            // Registered before the check, so a run finishing in between wakes us.
            notified.as_mut().enable();
            if let Some(run) = self.latest_run(sha) {
                return run;
            }
            if Instant::now() >= deadline {
                let runs: Vec<(String, String)> = self.runs().into_iter().map(|r| (r.sha, r.conclusion)).collect();
                panic!("fake CI: no run of {sha} completed within {timeout:?}; runs: {runs:?}");
            }
            tokio::select! {
                () = &mut notified => {}
                () = alarm.rang() => {}
            }
        }
    }

    /// Deliveries sent so far, in order: (event, delivery id, the HTTP status answered; 0 when
    /// the request failed).
    pub fn deliveries(&self) -> Vec<(String, String, u16)> {
        self.core.state().deliveries.clone()
    }

    /// When pitcrew answered each delivery of [`FakeCi::deliveries`], in the same order.
    pub fn answered_at(&self) -> Vec<Instant> {
        self.core.state().answered.clone()
    }

    fn latest_run(&self, sha: &str) -> Option<CiRun> {
        self.core.state().runs.iter().rev().find(|r| r.sha == sha).cloned()
    }
}

/// The runner: takes queued runs one at a time until every sender is gone.
fn run_queue(core: &Core, work: &mpsc::Receiver<Queued>) {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => panic!("fake CI: no runtime for deliveries: {error}"),
    };
    let client = match reqwest::Client::builder().timeout(DELIVERY_TIMEOUT).build() {
        Ok(client) => client,
        Err(error) => panic!("fake CI: no HTTP client for deliveries: {error}"),
    };
    for queued in work {
        let run = core.run(&queued, &runtime, &client);
        if let Some(done) = &queued.done {
            // The caller may have given up.
            let _ = done.send(run);
        }
    }
}

/// How a job's script ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Exit(i32),
    TimedOut,
}

struct Outcome {
    log: String,
    end: End,
}

impl Outcome {
    fn passed(&self) -> bool {
        self.end == End::Exit(0)
    }
}

/// Writes the tree of `sha` into `dir`.
fn checkout(git_dir: &Path, sha: &str, dir: &Path) -> Result<(), String> {
    let output = Command::new("sh")
        .args([
            "-c",
            "git --git-dir \"$1\" archive --format=tar \"$2\" | tar -x -C \"$3\"",
            "sh",
        ])
        .arg(git_dir)
        .arg(sha)
        .arg(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    if output.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

/// Runs `script` with `sh -c` in `dir` in a process group of its own, stdout and stderr into one
/// file; the group is killed after [`JOB_TIMEOUT`]. Returns the output and how it ended.
fn run_script(script: &str, dir: &Path, sha: &str) -> Result<(String, End), String> {
    let mut log = tempfile::tempfile().map_err(|e| format!("the log file: {e}"))?;
    let stdout = log.try_clone().map_err(|e| format!("the log file: {e}"))?;
    let stderr = log.try_clone().map_err(|e| format!("the log file: {e}"))?;
    let mut child = Command::new("sh")
        .args(["-c", script])
        .current_dir(dir)
        .env("CI", "true")
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_SHA", sha)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("starting sh: {e}"))?;
    let pid = child.id();
    let (ended, end) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = ended.send(child.wait());
    });
    let end = match end.recv_timeout(JOB_TIMEOUT) {
        Ok(Ok(status)) => End::Exit(status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0))),
        Ok(Err(error)) => return Err(format!("waiting for sh: {error}")),
        Err(_) => {
            // The whole group: the script and whatever it started.
            let _ = Command::new("kill").args(["-KILL", &format!("-{pid}")]).status();
            End::TimedOut
        }
    };
    let mut text = Vec::new();
    log.rewind()
        .and_then(|()| log.read_to_end(&mut text))
        .map_err(|e| format!("reading the log file: {e}"))?;
    Ok((String::from_utf8_lossy(&text).into_owned(), end))
}

/// The step's name, as Actions names a `run:` step: `Run` and the script's first line.
fn step_name(script: &str) -> String {
    format!("Run {}", script.lines().next().unwrap_or(""))
}

/// The job's log as the runner writes it: every line after a timestamp, the step's group (its
/// script and shell), the output, and the error line of a failure.
fn actions_log(script: &str, output: &str, end: &End, started: SystemTime) -> String {
    let mut lines = vec![format!("##[group]{}", step_name(script))];
    lines.extend(script.lines().map(str::to_owned));
    lines.push("shell: /usr/bin/sh -c {0}".to_owned());
    lines.push("##[endgroup]".to_owned());
    lines.extend(output.lines().map(str::to_owned));
    match end {
        End::Exit(0) => {}
        End::Exit(code) => lines.push(format!("##[error]Process completed with exit code {code}.")),
        End::TimedOut => lines.push(format!(
            "##[error]The action '{}' has timed out after {} minutes.",
            step_name(script),
            JOB_TIMEOUT.as_secs() / 60
        )),
    }
    let start = started.duration_since(UNIX_EPOCH).unwrap_or_default();
    lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            // A tenth of a microsecond apart, so that the lines keep their order.
            let at = start + Duration::from_nanos(100 * i as u64);
            format!("{} {line}\n", timestamp(at))
        })
        .collect()
}

/// `2026-12-07T08:00:00.1234567Z`: RFC 3339 with the runner's seven fractional digits.
fn timestamp(since_epoch: Duration) -> String {
    let seconds = wire::rfc3339(since_epoch.as_secs());
    let whole = seconds.strip_suffix('Z').unwrap_or(&seconds);
    format!("{whole}.{:07}Z", since_epoch.subsec_nanos() / 100)
}

/// The pull requests of a delivery, as GitHub lists them: number, head and base, with the
/// repository's id (pitcrew keeps only those based in the repository).
fn pull_objects(state: &GithubState, repo: &Repo, numbers: &[u64], branch: &str, sha: &str) -> Vec<Value> {
    let api = format!("https://api.github.com/repos/{}", repo.full_name);
    let side = |reference: &str, sha: &str| json!({"ref": reference, "sha": sha, "repo": {"id": repo.id, "url": api, "name": repo.name()}});
    numbers
        .iter()
        .map(|number| {
            let issue = state.issue(&repo.full_name, *number);
            let (head, base) = match issue.and_then(|i| i.pull.as_ref()) {
                Some(pull) => (
                    side(&pull.head.ref_name, &pull.head.sha),
                    side(&pull.base.ref_name, &pull.base.sha),
                ),
                None => (side(branch, sha), side(&repo.default_branch, "")),
            };
            json!({
                "url": format!("{api}/pulls/{number}"),
                "id": issue.map_or(*number, |i| i.id),
                "number": number,
                "head": head,
                "base": base,
            })
        })
        .collect()
}

/// GitHub's example delivery of `event` pointed at `repo`: its names, ids and URLs.
fn repo_payload(event: &str, file: &str, repo: &Repo, installation: u64) -> Value {
    let mut payload = example_payload(event, file, &repo.full_name, &repo.clone_url, Some(installation));
    payload["repository"]["id"] = json!(repo.id);
    payload["repository"]["html_url"] = json!(repo.html_url);
    payload["repository"]["private"] = json!(repo.private);
    payload["repository"]["default_branch"] = json!(repo.default_branch);
    payload["repository"]["url"] = json!(format!("https://api.github.com/repos/{}", repo.full_name));
    payload
}

/// The `workflow_run` `completed` delivery (octokit's example with pull requests) of `run`.
fn workflow_run_payload(run: &CiRun, queued: &Queued, repo: &Repo, pulls: &[Value], installation: u64) -> Value {
    let mut payload = repo_payload(
        "workflow_run",
        "completed.with-pull-requests.payload.json",
        repo,
        installation,
    );
    payload["action"] = json!("completed");
    let repository = payload["repository"].clone();
    let api = format!(
        "https://api.github.com/repos/{}/actions/runs/{}",
        repo.full_name, run.run_id
    );
    let object = &mut payload["workflow_run"];
    object["id"] = json!(run.run_id);
    object["node_id"] = json!(format!("WFR_fake{}", run.run_id));
    object["name"] = json!(queued.workflow);
    object["display_title"] = json!(queued.workflow);
    object["event"] = json!("push");
    object["status"] = json!("completed");
    object["conclusion"] = json!(run.conclusion);
    object["head_sha"] = json!(run.sha);
    object["head_branch"] = json!(run.branch);
    object["head_commit"]["id"] = json!(run.sha);
    object["check_suite_id"] = json!(run.check_suite_id);
    object["check_suite_node_id"] = json!(format!("CS_fake{}", run.check_suite_id));
    object["check_suite_url"] = json!(format!(
        "https://api.github.com/repos/{}/check-suites/{}",
        repo.full_name, run.check_suite_id
    ));
    object["run_number"] = json!(run.run_id % 10_000);
    object["run_attempt"] = json!(1);
    object["previous_attempt_url"] = Value::Null;
    object["url"] = json!(api);
    object["html_url"] = json!(format!("{}/actions/runs/{}", repo.html_url, run.run_id));
    object["jobs_url"] = json!(format!("{api}/jobs"));
    object["logs_url"] = json!(format!("{api}/logs"));
    object["cancel_url"] = json!(format!("{api}/cancel"));
    object["rerun_url"] = json!(format!("{api}/rerun"));
    object["artifacts_url"] = json!(format!("{api}/artifacts"));
    object["pull_requests"] = json!(pulls);
    object["repository"] = repository.clone();
    object["head_repository"] = repository;
    payload
}

/// The `check_suite` `completed` delivery (octokit's example of GitHub Actions' suite) of `run`.
fn check_suite_payload(run: &CiRun, repo: &Repo, pulls: &[Value], installation: u64) -> Value {
    let mut payload = repo_payload("check_suite", "completed.1.payload.json", repo, installation);
    payload["action"] = json!("completed");
    let url = format!(
        "https://api.github.com/repos/{}/check-suites/{}",
        repo.full_name, run.check_suite_id
    );
    let suite = &mut payload["check_suite"];
    suite["id"] = json!(run.check_suite_id);
    suite["node_id"] = json!(format!("CS_fake{}", run.check_suite_id));
    suite["head_sha"] = json!(run.sha);
    suite["after"] = json!(run.sha);
    suite["head_branch"] = json!(run.branch);
    suite["head_commit"]["id"] = json!(run.sha);
    suite["status"] = json!("completed");
    suite["conclusion"] = json!(run.conclusion);
    suite["url"] = json!(url);
    suite["check_runs_url"] = json!(format!("{url}/check-runs"));
    suite["latest_check_runs_count"] = json!(run.jobs.len());
    suite["pull_requests"] = json!(pulls);
    suite["app"]["id"] = json!(crate::fake_github::GITHUB_ACTIONS_APP_ID);
    suite["app"]["slug"] = json!(crate::fake_github::GITHUB_ACTIONS_APP_SLUG);
    payload
}

/// Posts one delivery as GitHub's hookshot does; the status answered, 0 when none came.
async fn send(client: &reqwest::Client, target: &Target, event: &str, id: &str, body: String) -> u16 {
    let signature = signature(&target.secret, body.as_bytes());
    let sent = client
        .post(&target.url)
        .header("content-type", "application/json")
        .header("user-agent", "GitHub-Hookshot/fake")
        .header("x-github-event", event)
        .header("x-github-delivery", id)
        .header("x-github-hook-id", "1")
        .header("x-github-hook-installation-target-type", "integration")
        .header("x-hub-signature-256", signature)
        .body(body)
        .send()
        .await;
    match sent {
        Ok(response) => response.status().as_u16(),
        Err(_) => 0,
    }
}

/// `sha256=<hex>`: the HMAC-SHA256 of `body` under `secret`.
pub fn signature(secret: &str, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let tag = hmac::sign(&key, body);
    let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
}

/// A fresh delivery id, shaped like GitHub's (a UUID).
fn delivery_id() -> String {
    use std::hash::{BuildHasher as _, Hasher as _};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let state = std::collections::hash_map::RandomState::new();
    let mut words = [0u64; 2];
    for word in &mut words {
        let mut hasher = state.build_hasher();
        hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        *word = hasher.finish();
    }
    let hex = format!("{:016x}{:016x}", words[0], words[1]);
    format!(
        "{}-{}-4{}-a{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_in_the_runners_format() {
        let start = UNIX_EPOCH + Duration::from_secs(1_796_630_400) + Duration::from_nanos(123_456_700);
        let log = actions_log("sh run-tests.sh\necho done", "one\ntwo\n", &End::Exit(101), start);
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines[0], "2026-12-07T08:00:00.1234567Z ##[group]Run sh run-tests.sh");
        assert_eq!(lines[1], "2026-12-07T08:00:00.1234568Z sh run-tests.sh");
        assert!(lines[4].ends_with(" ##[endgroup]"), "{log}");
        assert!(lines[5].ends_with(" one"), "{log}");
        assert!(
            lines[7].ends_with(" ##[error]Process completed with exit code 101."),
            "{log}"
        );
        assert_eq!(lines.len(), 8);
    }

    #[test]
    fn delivery_ids_are_uuids_and_unique() {
        let (a, b) = (delivery_id(), delivery_id());
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(a.matches('-').count(), 4);
    }
}
