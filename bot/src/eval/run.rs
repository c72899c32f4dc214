//! Running a suite: every case under every variant, `repeat` times, each in its own working copy
//! and sandbox, up to `concurrency` at once, through the same [`AgentSession`] as real jobs; then
//! the check. Each result is appended to `results.jsonl` as it finishes, so a run stopped with
//! Ctrl-C keeps what finished.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::agent::StopReason;
use crate::agent::events::{AgentEvent, EventSink};
use crate::config::repo::{EffectiveSettings, ImageSource};
use crate::config::{Config, SandboxBackend};
use crate::llm::{self, Model};
use crate::prompts::{Prompts, Template};
use crate::sandbox::{ExecRequest, docker};
use crate::session::{AgentRun, AgentSession, CodeIndex, Toolset, image};
use crate::testparse;
use crate::workspace::LocalRepo;

use super::case::Case;
use super::replay::{Normalizer, Recorder, Replayer};
use super::results::{CaseResult, CheckOutcome, Status, Timings, Tokens};
use super::workcopy;

/// How long a case's setup may run on the local backend (in a container, the sandbox's own setup
/// limit holds).
const SETUP_TIMEOUT: Duration = Duration::from_secs(15 * 60);
/// Output kept of a check, each of stdout and stderr.
const CHECK_OUTPUT_LIMIT: usize = 256 * 1024;
/// Lines of the check's output kept in the result.
const TAIL_LINES: usize = 40;

/// One configuration the cases run under, named for the report.
#[derive(Clone)]
pub struct Variant {
    pub label: String,
    pub config: Config,
}

/// Where the model's answers come from.
#[derive(Debug, Clone)]
pub enum Models {
    /// The configured model.
    Live,
    /// The configured model, every exchange recorded under this directory.
    Record(PathBuf),
    /// This directory's recordings, no model at all.
    Replay(PathBuf),
}

pub struct EvalOptions {
    pub cases: Vec<Case>,
    pub variants: Vec<Variant>,
    pub repeat: u32,
    pub concurrency: usize,
    /// `results.jsonl`, the runs' trajectories (`runs/`) and the report go here.
    pub out: PathBuf,
    pub models: Models,
    pub prompts: Prompts,
    pub cancel: CancellationToken,
}

/// Where a suite run stands, after each case run.
#[derive(Debug, Clone)]
pub struct Progress {
    pub done: usize,
    pub total: usize,
    pub passed: usize,
    pub cost_usd: f64,
    pub last: CaseResult,
}

/// What a suite run did.
#[derive(Debug)]
pub struct EvalRun {
    /// In variant, case and repetition order.
    pub results: Vec<CaseResult>,
    /// Case runs planned: more than `results` when the run was cancelled.
    pub planned: usize,
    pub cancelled: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("{}: {source}", path.display())]
    Output { path: PathBuf, source: std::io::Error },
    #[error("nothing to run: {0}")]
    Nothing(&'static str),
}

/// What every case run shares.
struct Shared {
    out: PathBuf,
    models: Models,
    prompts: Prompts,
    cancel: CancellationToken,
    /// Distinguishes this run's sandboxes from another eval's on the same engine.
    run_tag: String,
}

/// Runs the suite; `progress` hears of every finished case run.
pub async fn run(options: EvalOptions, progress: &(dyn Fn(&Progress) + Send + Sync)) -> Result<EvalRun, EvalError> {
    if options.cases.is_empty() {
        return Err(EvalError::Nothing("the suites hold no cases"));
    }
    if options.variants.is_empty() {
        return Err(EvalError::Nothing("no configuration to run"));
    }
    let output = |path: &Path| {
        let path = path.to_owned();
        move |source| EvalError::Output { path, source }
    };
    std::fs::create_dir_all(&options.out).map_err(output(&options.out))?;
    let results_path = options.out.join("results.jsonl");
    let mut results_file = std::fs::File::create(&results_path).map_err(output(&results_path))?;

    let shared = Arc::new(Shared {
        out: options.out.clone(),
        models: options.models,
        prompts: options.prompts,
        cancel: options.cancel.clone(),
        run_tag: format!("{}-{:04x}", std::process::id(), fastrand::u16(..)),
    });
    let mut plan = Vec::new();
    for (v, variant) in options.variants.iter().enumerate() {
        for (c, case) in options.cases.iter().enumerate() {
            for repetition in 0..options.repeat.max(1) {
                plan.push((v, c, repetition, variant.clone(), case.clone()));
            }
        }
    }
    let planned = plan.len();
    let permits = Arc::new(Semaphore::new(options.concurrency.max(1)));
    let mut tasks = JoinSet::new();
    // What each task runs, to report a task that panicked as that case run's error.
    let mut runs = std::collections::HashMap::new();
    for (v, c, repetition, variant, case) in plan {
        let permits = permits.clone();
        let shared = shared.clone();
        let blank = CaseResult {
            case: case.id.clone(),
            variant: variant.label.clone(),
            repetition,
            tags: case.tags.clone(),
            ..empty_result()
        };
        let handle = tasks.spawn(async move {
            let _permit = permits.acquire_owned().await.ok()?;
            if shared.cancel.is_cancelled() {
                return None;
            }
            let result = run_case(&shared, &case, &variant, repetition).await?;
            Some(((v, c, repetition), result))
        });
        runs.insert(handle.id(), ((v, c, repetition), blank));
    }

    let mut finished = Vec::new();
    let (mut passed, mut cost) = (0, 0.0);
    while let Some(joined) = tasks.join_next_with_id().await {
        let (order, result) = match joined {
            Ok((_, Some(done))) => done,
            Ok((_, None)) => continue,
            Err(error) => {
                tracing::error!(%error, "a case run panicked");
                let Some((order, mut result)) = runs.remove(&error.id()) else {
                    continue;
                };
                result.error = Some(format!("the case run panicked: {error}"));
                (order, result)
            }
        };
        writeln!(results_file, "{}", result.to_line())
            .and_then(|()| results_file.flush())
            .map_err(output(&results_path))?;
        passed += usize::from(result.status == Status::Pass);
        cost += result.cost_usd.unwrap_or(0.0);
        let last = result.clone();
        finished.push((order, result));
        progress(&Progress {
            done: finished.len(),
            total: planned,
            passed,
            cost_usd: cost,
            last,
        });
    }
    finished.sort_by_key(|(order, _)| *order);
    Ok(EvalRun {
        results: finished.into_iter().map(|(_, result)| result).collect(),
        planned,
        cancelled: options.cancel.is_cancelled(),
    })
}

/// A result with nothing in it yet: what a case run starts from.
fn empty_result() -> CaseResult {
    CaseResult {
        case: String::new(),
        variant: String::new(),
        repetition: 0,
        tags: Vec::new(),
        status: Status::Error,
        error: None,
        check: None,
        stop: None,
        steps: 0,
        tool_calls: BTreeMap::new(),
        tokens: Tokens::default(),
        cost_usd: None,
        wall_ms: 0,
        timings: Timings::default(),
        expectations_missed: Vec::new(),
        changed_files: Vec::new(),
        replay_notes: Vec::new(),
        trajectory: None,
    }
}

/// A label as a directory or sandbox name: letters, digits, `.`, `_`, `-`.
pub fn file_name(label: &str) -> String {
    let name: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    match name.trim_start_matches('.') {
        "" => "_".to_owned(),
        name => name.to_owned(),
    }
}

/// Counts the tools the agent called.
#[derive(Default)]
struct ToolCounter(Mutex<BTreeMap<String, u32>>);

impl EventSink for ToolCounter {
    fn emit(&self, event: &AgentEvent) {
        if let AgentEvent::ToolStarted { tool, .. } = event {
            *self
                .0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(tool.clone())
                .or_default() += 1;
        }
    }
}

/// One case run; `None` when it was cancelled before it could be judged.
async fn run_case(shared: &Shared, case: &Case, variant: &Variant, repetition: u32) -> Option<CaseResult> {
    let started = Instant::now();
    let variant_dir = file_name(&variant.label);
    let run_name = format!("{}.{repetition}", case.id);
    let run_dir = shared.out.join("runs").join(&variant_dir).join(&run_name);
    let work = shared.out.join("work").join(&variant_dir).join(&run_name);
    let mut result = CaseResult {
        case: case.id.clone(),
        variant: variant.label.clone(),
        repetition,
        tags: case.tags.clone(),
        ..empty_result()
    };
    let span = tracing::info_span!("eval_case", case = %case.id, variant = %variant.label, repetition);
    let outcome = judge(shared, case, variant, &run_dir, &work, &mut result)
        .instrument(span)
        .await;
    if let Err(error) = std::fs::remove_dir_all(&work)
        && error.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(path = %work.display(), %error, "removing a case's working copy failed");
    }
    result.wall_ms = started.elapsed().as_millis() as u64;
    if run_dir.join("trajectory.jsonl").exists() {
        result.trajectory = Some(format!("runs/{variant_dir}/{run_name}/trajectory.jsonl"));
    }
    match outcome {
        Judged::Cancelled => None,
        Judged::Error(error) => {
            result.status = Status::Error;
            result.error = Some(error);
            Some(result)
        }
        Judged::Done => Some(result),
    }
}

enum Judged {
    Done,
    Error(String),
    Cancelled,
}

async fn judge(
    shared: &Shared,
    case: &Case,
    variant: &Variant,
    run_dir: &Path,
    work: &Path,
    result: &mut CaseResult,
) -> Judged {
    // The working copy.
    let clock = Instant::now();
    if let Err(error) = std::fs::remove_dir_all(work)
        && error.kind() != std::io::ErrorKind::NotFound
    {
        return Judged::Error(format!("{}: {error}", work.display()));
    }
    if let Some(parent) = work.parent()
        && let Err(error) = std::fs::create_dir_all(parent)
    {
        return Judged::Error(format!("{}: {error}", parent.display()));
    }
    let prepared = {
        let (case, work) = (case.clone(), work.to_owned());
        tokio::task::spawn_blocking(move || workcopy::prepare(&case, &work)).await
    };
    let start = match prepared {
        Ok(Ok(start)) => start,
        Ok(Err(error)) => return Judged::Error(format!("the working copy: {error}")),
        Err(error) => return Judged::Error(format!("the working copy: {error}")),
    };
    result.timings.copy_ms = clock.elapsed().as_millis() as u64;

    // The session, as a job's.
    let config = &variant.config;
    let settings = case_settings(case, config, work);
    let root_text = work.display().to_string();
    let normalizer = Normalizer::new(&[root_text.as_str(), docker::WORKDIR], run_dir);
    let recording = |dir: &Path| {
        dir.join(file_name(&variant.label))
            .join(format!("{}.{}.jsonl", case.id, result.repetition))
    };
    let mut replayer = None;
    let model: Option<Arc<dyn Model>> = match &shared.models {
        Models::Live => None,
        Models::Record(dir) => {
            let mut model_settings = config.model.settings();
            model_settings.model = settings.model_name.clone();
            let inner = match llm::connect(model_settings) {
                Ok(inner) => inner,
                Err(error) => return Judged::Error(format!("the model: {error}")),
            };
            match Recorder::create(inner, normalizer, &recording(dir)) {
                Ok(recorder) => Some(Arc::new(recorder)),
                Err(error) => return Judged::Error(format!("the recording {}: {error}", recording(dir).display())),
            }
        }
        Models::Replay(dir) => match Replayer::load(&recording(dir), &settings.model_name, normalizer) {
            Ok(loaded) => {
                let loaded = Arc::new(loaded);
                replayer = Some(loaded.clone());
                Some(loaded)
            }
            Err(error) => return Judged::Error(error.to_string()),
        },
    };
    let clock = Instant::now();
    let session = AgentSession::start(AgentRun {
        config,
        settings: &settings,
        prompts: &shared.prompts,
        model,
        sandbox_id: file_name(&format!("eval-{}-{}-{}", shared.run_tag, variant.label, case.id))
            + &format!("-{}", result.repetition),
        root: work.to_owned(),
        run_dir: run_dir.to_owned(),
        network_step: None,
        // The code index as jobs have it; its parse cache is the suite run's, shared by its cases.
        index: config.agent.code_index.then(|| CodeIndex {
            cache_dir: Some(shared.out.join("index-cache")),
            cache_bytes: config.agent.index_cache_bytes,
            shelf: None,
        }),
        cancel: shared.cancel.clone(),
    })
    .await;
    let session = match session {
        Ok(session) => session,
        Err(error) => return Judged::Error(format!("the sandbox or the case's setup failed: {error}")),
    };
    let judged = with_session(shared, case, &session, &settings, config, result, clock).await;
    if let Err(error) = session.stop().await {
        tracing::warn!(%error, "stopping a case's sandbox failed");
    }
    // What the agent changed, read once the sandbox has handed the working copy back; the files
    // the check wrote over it are not the agent's.
    let written = result
        .check
        .as_ref()
        .map(|c| c.files_written.clone())
        .unwrap_or_default();
    let root = work.to_owned();
    result.changed_files = tokio::task::spawn_blocking(move || {
        LocalRepo::open(&root)
            .and_then(|repo| repo.changed_files(start))
            .map(|files| {
                files
                    .into_iter()
                    .map(|f| f.path)
                    .filter(|p| !written.contains(p))
                    .collect()
            })
    })
    .await
    .unwrap_or_else(|error| {
        Err(crate::workspace::WorkspaceError::Io {
            context: "listing the changed files".to_owned(),
            source: std::io::Error::other(error.to_string()),
        })
    })
    .unwrap_or_else(|error| {
        tracing::warn!(%error, "listing a case's changed files failed");
        Vec::new()
    });
    if let Some(replayer) = replayer {
        result.replay_notes = replayer.notes();
        if let Some(drift) = replayer.drift() {
            return Judged::Error(format!("replay: {drift}"));
        }
    }
    judged
}

/// The repository's settings under `config`, narrowed by the case: its image, its setup, its
/// budgets (each the smaller of the two).
pub(crate) fn case_settings(case: &Case, config: &Config, root: &Path) -> EffectiveSettings {
    let mut settings = image::checkout_config(root).apply(config);
    if let Some(image) = &case.image {
        settings.image = image.clone();
        settings.image_source = ImageSource::Operator;
    }
    if case.setup.is_some() {
        settings.setup = case.setup.clone();
    }
    if let Some(steps) = case.budget.max_steps {
        settings.max_steps = settings.max_steps.min(steps);
    }
    if let Some(cost) = case.budget.max_cost_usd {
        settings.max_cost_usd = Some(settings.max_cost_usd.map_or(cost, |c| c.min(cost)));
    }
    if let Some(secs) = case.budget.max_wall_time_secs {
        settings.max_wall_time = settings.max_wall_time.min(Duration::from_secs(secs));
    }
    settings
}

async fn with_session(
    shared: &Shared,
    case: &Case,
    session: &AgentSession,
    settings: &EffectiveSettings,
    config: &Config,
    result: &mut CaseResult,
    clock: Instant,
) -> Judged {
    if let Err(error) = local_setup(session, config, settings).await {
        return Judged::Error(error);
    }
    result.timings.sandbox_ms = clock.elapsed().as_millis() as u64;

    // The agent, as `pitcrew run` runs it.
    let clock = Instant::now();
    let context = "An evaluation run of `pitcrew eval`: the task below stands for a real request. Work as you \
                   would on it, and end with a short report of what you changed.";
    let instructions = session.instructions();
    let prompt = match shared.prompts.render(
        Template::Fix,
        &[
            ("task", case.task.trim()),
            ("context", context),
            ("instructions", &instructions),
        ],
    ) {
        Ok(prompt) => prompt,
        Err(error) => return Judged::Error(format!("the prompt: {error}")),
    };
    let counter = Arc::new(ToolCounter::default());
    let outcome = match session.run_agent(prompt, Toolset::Full, counter.clone()).await {
        Ok(outcome) => outcome,
        Err(error) => return Judged::Error(format!("the agent could not run: {error}")),
    };
    result.timings.agent_ms = clock.elapsed().as_millis() as u64;
    result.stop = Some(outcome.stop.label().to_owned());
    result.steps = outcome.steps;
    result.tool_calls = std::mem::take(&mut *counter.0.lock().unwrap_or_else(PoisonError::into_inner));
    let usage = outcome.usage.usage;
    result.tokens = Tokens {
        input: usage.input_tokens,
        output: usage.output_tokens,
        cache_read: usage.cache_read_tokens,
        cache_write: usage.cache_write_tokens,
    };
    result.cost_usd = outcome.usage.cost_usd;
    if outcome.stop == StopReason::Cancelled && shared.cancel.is_cancelled() {
        return Judged::Cancelled;
    }
    result.expectations_missed = expectations_missed(case, result);

    // The check.
    let clock = Instant::now();
    let check = match check(session, case).await {
        Ok(check) => check,
        Err(error) => return Judged::Error(error),
    };
    result.timings.check_ms = clock.elapsed().as_millis() as u64;
    result.status = if check.passed { Status::Pass } else { Status::Fail };
    result.check = Some(check);
    Judged::Done
}

/// Runs the case's check in `session`: the sandbox paused while the check's files are written
/// over the working copy, then its command.
pub(crate) async fn check(session: &AgentSession, case: &Case) -> Result<CheckOutcome, String> {
    let root = session.ctx.workspace.root().to_owned();
    session
        .ctx
        .sandbox
        .quiesce()
        .await
        .map_err(|error| format!("the sandbox could not be paused for the check: {error}"))?;
    let mut written = Vec::new();
    if let Some(files) = &case.check.files {
        let files = files.clone();
        written = match tokio::task::spawn_blocking(move || workcopy::overlay(&files, &root)).await {
            Ok(Ok(written)) => written,
            Ok(Err(error)) => return Err(format!("the check's files: {error}")),
            Err(error) => return Err(format!("the check's files: {error}")),
        };
    }
    let mut request = ExecRequest::new(case.check.run.clone(), Duration::from_secs(case.check.timeout_secs));
    request.output_limit = CHECK_OUTPUT_LIMIT;
    let output = session
        .ctx
        .sandbox
        .exec(request)
        .await
        .map_err(|error| format!("the check could not run: {error}"))?;
    let mut outcome = judge_check(case, output.exit_code, output.timed_out, &output.stdout, &output.stderr);
    outcome.files_written = written;
    Ok(outcome)
}

/// Runs the case's setup where the sandbox did not (the local backend: in a container it ran as
/// the sandbox started).
pub(crate) async fn local_setup(
    session: &AgentSession,
    config: &Config,
    settings: &EffectiveSettings,
) -> Result<(), String> {
    if config.sandbox.backend != SandboxBackend::Local {
        return Ok(());
    }
    let Some(setup) = &settings.setup else {
        return Ok(());
    };
    match session
        .ctx
        .sandbox
        .exec(ExecRequest::new(setup.clone(), SETUP_TIMEOUT))
        .await
    {
        Ok(output) if output.exit_code == Some(0) => Ok(()),
        Ok(output) => Err(format!(
            "the case's setup failed (exit {:?}): {}",
            output.exit_code,
            tail(&format!("{}{}", output.stdout, output.stderr), 10)
        )),
        Err(error) => Err(format!("the case's setup failed: {error}")),
    }
}

/// The check's verdict from its exit and output.
pub fn judge_check(case: &Case, exit_code: Option<i32>, timed_out: bool, stdout: &str, stderr: &str) -> CheckOutcome {
    // Runners colour their output on some terminals; the report reads it as text.
    let combined = testparse::strip_ansi(&format!("{stdout}\n{stderr}"));
    let failing: Vec<String> = testparse::parse(&combined, None)
        .map(|report| report.failures.into_iter().map(|f| f.name).collect())
        .unwrap_or_default();
    let still_failing = |tests: &[String]| -> Vec<String> {
        tests
            .iter()
            .filter(|test| failing.iter().any(|name| names_test(name, test)))
            .cloned()
            .collect()
    };
    let not_fixed = still_failing(&case.check.fail_to_pass);
    let broken = still_failing(&case.check.pass_to_pass);
    CheckOutcome {
        passed: exit_code == Some(0) && !timed_out && not_fixed.is_empty() && broken.is_empty(),
        exit_code,
        timed_out,
        failing_tests: failing,
        not_fixed,
        broken,
        output_tail: tail(&combined, TAIL_LINES),
        files_written: Vec::new(),
    }
}

/// Whether the failing test a runner named (`tests/test_x.py::test_y`, `tests::adds`, `TestX/sub`)
/// is `entry` of a case's list: that test, a test inside it (a file, a class, a parent test), or
/// the same test named without its qualification.
pub fn names_test(failure: &str, entry: &str) -> bool {
    let entry = entry.trim();
    if failure == entry {
        return true;
    }
    let inside = failure
        .strip_prefix(entry)
        .is_some_and(|rest| ["::", "/", ".", " "].iter().any(|sep| rest.starts_with(sep)));
    let unqualified = failure
        .strip_suffix(entry)
        .is_some_and(|rest| ["::", "/", ".", " › "].iter().any(|sep| rest.ends_with(sep)));
    inside || unqualified
}

fn expectations_missed(case: &Case, result: &CaseResult) -> Vec<String> {
    let mut missed = Vec::new();
    if let Some(max) = case.expect.max_steps
        && result.steps > max
    {
        missed.push(format!("took {} steps, expected at most {max}", result.steps));
    }
    for tool in &case.expect.tools_used {
        if !result.tool_calls.contains_key(tool) {
            missed.push(format!("never used `{tool}`"));
        }
    }
    missed
}

/// The last `lines` lines of `text`, at most 8,000 bytes.
fn tail(text: &str, lines: usize) -> String {
    let text = text.trim_end();
    let start = text
        .rmatch_indices('\n')
        .nth(lines.saturating_sub(1))
        .map_or(0, |(i, _)| i + 1);
    let mut tail = &text[start..];
    if tail.len() > 8_000 {
        let mut cut = tail.len() - 8_000;
        while !tail.is_char_boundary(cut) {
            cut += 1;
        }
        tail = &tail[cut..];
    }
    tail.to_owned()
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn a_list_entry_names_a_test_a_file_or_a_parent() {
        assert!(names_test("tests/test_add.py::test_sum", "tests/test_add.py::test_sum"));
        assert!(names_test("tests/test_add.py::test_sum", "tests/test_add.py"));
        assert!(names_test(
            "tests/test_add.py::TestX::test_sum",
            "tests/test_add.py::TestX"
        ));
        assert!(names_test("TestParse/empty", "TestParse"));
        assert!(names_test("tests::median_of_even", "median_of_even"));
        assert!(names_test("math › adds", "adds"));
        assert!(!names_test(
            "tests/test_add.py::test_summary",
            "tests/test_add.py::test_sum"
        ));
        assert!(!names_test("TestParser", "TestParse"));
        assert!(!names_test("tests::not_median_of_even", "median_of_even"));
    }

    #[test]
    fn the_check_passes_on_exit_zero_with_none_of_its_tests_failing() {
        let case = crate::eval::case::parse(
            "- {id: c, repo: r, task: t, check: {run: x, fail_to_pass: [t::fixed], pass_to_pass: [t::kept]}}",
            Path::new("s.yaml"),
            Path::new("."),
        )
        .unwrap()
        .remove(0);
        let output = "running 2 tests\ntest t::fixed ... FAILED\ntest t::kept ... ok\n\nfailures:\n    t::fixed\n\n\
                      test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n";
        let failed = judge_check(&case, Some(101), false, output, "");
        assert!(!failed.passed);
        assert_eq!(failed.not_fixed, ["t::fixed"]);
        assert!(failed.broken.is_empty());
        assert_eq!(failed.failing_tests, ["t::fixed"]);
        assert!(failed.output_tail.ends_with("0 filtered out"), "{}", failed.output_tail);
        let coloured = judge_check(
            &case,
            Some(101),
            false,
            "\u{1b}[31mtest t::fixed ... FAILED\u{1b}[0m",
            "",
        );
        assert_eq!(coloured.output_tail, "test t::fixed ... FAILED");
        let passed = judge_check(&case, Some(0), false, "test result: ok. 2 passed; 0 failed", "");
        assert!(passed.passed);
        assert!(!judge_check(&case, None, true, "", "").passed);
    }

    #[test]
    fn labels_become_safe_names() {
        assert_eq!(file_name("gpt-4.1"), "gpt-4.1");
        assert_eq!(file_name("configs/a b+gpt"), "configs_a_b_gpt");
        assert_eq!(file_name("../.."), "_..");
        assert_eq!(file_name(".."), "_");
    }
}
