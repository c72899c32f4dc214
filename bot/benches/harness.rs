//! Harness overhead of the agent loop: a 100-step trajectory of read_file / grep / edit_file calls
//! on a generated repository of 5,000 files, driven by an in-process model that answers instantly.
//! Reports the median and p90 overhead per step (step wall time minus the time spent inside tools)
//! and the process's peak RSS.
//!
//! Run: `cargo bench -p pitcrew --bench harness` (figures go in BENCHMARKS.md).

#![allow(
    clippy::print_stderr,
    clippy::print_stdout,
    reason = "a benchmark reports on the terminal"
)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pitcrew::agent::events::{AgentEvent, EventSink};
use pitcrew::agent::{Agent, AgentConfig, Meter, StopReason, Task};
use pitcrew::llm::{
    AssistantPart, EventStream, LlmError, Model, PriceTable, Request, Response, StopReason as ModelStop, StreamEvent,
    ToolCall, Usage,
};
use pitcrew::sandbox::local::{LocalOptions, LocalSession};
use pitcrew::tools::{self, Plan, Registry, ToolContext, Workspace};
use tokio_util::sync::CancellationToken;

const FILES: usize = 5_000;
const STEPS: usize = 100;

/// Answers each call with the next scripted turn, at once.
struct InstantModel {
    turns: Mutex<VecDeque<Response>>,
}

impl Model for InstantModel {
    fn name(&self) -> &str {
        "instant"
    }

    fn stream(&self, _request: Request, _cancel: CancellationToken) -> EventStream {
        let next = self
            .turns
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop_front();
        let event = next
            .map(StreamEvent::Completed)
            .ok_or_else(|| LlmError::protocol("script exhausted"));
        Box::pin(futures_util::stream::iter([event]))
    }
}

fn turn(step: usize, name: &str, arguments: serde_json::Value) -> Response {
    Response {
        id: None,
        model: None,
        parts: vec![
            AssistantPart::Text {
                text: format!("Step {step}: calling {name}."),
            },
            AssistantPart::ToolCall(ToolCall {
                id: format!("call_{step}"),
                name: name.into(),
                arguments: arguments.to_string(),
            }),
        ],
        stop_reason: ModelStop::ToolUse,
        usage: Usage {
            input_tokens: 1_000,
            output_tokens: 50,
            ..Usage::default()
        },
    }
}

/// 100 steps: read a file, edit it, grep the tree — over and over, on different files.
fn trajectory() -> VecDeque<Response> {
    let mut turns = VecDeque::new();
    for step in 0..STEPS {
        let file = format!("src/m{:02}/f{:04}.rs", (step / 3) % 50, (step / 3) * 37 % FILES);
        let turn = match step % 3 {
            0 => turn(step, "read_file", serde_json::json!({"path": file})),
            1 => turn(
                step,
                "edit_file",
                serde_json::json!({"path": file, "old_string": "value + 1", "new_string": "value + 2"}),
            ),
            _ => turn(
                step,
                "grep",
                serde_json::json!({"pattern": format!("fn item_{}\\b", step * 13 % FILES), "mode": "files"}),
            ),
        };
        turns.push_back(turn);
    }
    turns.push_back(Response {
        id: None,
        model: None,
        parts: vec![AssistantPart::Text { text: "done".into() }],
        stop_reason: ModelStop::EndTurn,
        usage: Usage::default(),
    });
    turns
}

/// Files spread over 50 directories, each a small Rust module.
fn repository(root: &std::path::Path) -> std::io::Result<()> {
    for i in 0..FILES {
        let dir = root.join(format!("src/m{:02}", (i / 100) % 50));
        std::fs::create_dir_all(&dir)?;
        let body = format!(
            "//! Module {i}.\n\npub fn item_{i}(value: u64) -> u64 {{\n    value + 1\n}}\n\n#[cfg(test)]\nmod tests {{\n    #[test]\n    fn works() {{\n        assert_eq!(super::item_{i}(1), 2);\n    }}\n}}\n"
        );
        std::fs::write(dir.join(format!("f{i:04}.rs")), body)?;
    }
    // Make every module exist where the trajectory looks for it.
    for step in 0..STEPS {
        let i = (step / 3) * 37 % FILES;
        let dir = root.join(format!("src/m{:02}", (step / 3) % 50));
        std::fs::create_dir_all(&dir)?;
        std::fs::write(
            dir.join(format!("f{i:04}.rs")),
            format!("pub fn item_{i}(value: u64) -> u64 {{\n    value + 1\n}}\n"),
        )?;
    }
    Ok(())
}

/// When each step started (and when the run finished).
#[derive(Default)]
struct Timing {
    marks: Mutex<Vec<Instant>>,
    /// Tool calls that failed: the trajectory must exercise the tools, not their error paths.
    errors: std::sync::atomic::AtomicUsize,
}

impl EventSink for Timing {
    fn emit(&self, event: &AgentEvent) {
        if let AgentEvent::ToolFinished {
            is_error: true, tool, ..
        } = event
        {
            eprintln!("tool call failed: {tool}");
            self.errors.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        if matches!(event, AgentEvent::StepStarted { .. } | AgentEvent::Finished { .. }) {
            self.marks
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(Instant::now());
        }
    }
}

/// Each call's time inside the tool, measured around it (the event carries whole milliseconds
/// only). Every step of the trajectory makes exactly one call, so the n-th entry is step n's.
struct TimedTools {
    inner: Arc<dyn tools::Tool>,
    spent: Arc<Mutex<Vec<Duration>>>,
}

impl tools::Tool for TimedTools {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn description(&self) -> &'static str {
        self.inner.description()
    }
    fn parameters(&self) -> serde_json::Value {
        self.inner.parameters()
    }
    fn read_only(&self) -> bool {
        self.inner.read_only()
    }
    fn paginated(&self) -> bool {
        self.inner.paginated()
    }
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        args: serde_json::Map<String, serde_json::Value>,
    ) -> tools::BoxFuture<'a, Result<String, tools::ToolError>> {
        Box::pin(async move {
            let started = Instant::now();
            let result = self.inner.call(ctx, args).await;
            self.spent
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(started.elapsed());
            result
        })
    }
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let repo = tempfile::tempdir()?;
    let run_dir = tempfile::tempdir()?;
    repository(repo.path())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let spent = Arc::new(Mutex::new(Vec::new()));
    let mut registry = Registry::new();
    for tool in tools::all_tools() {
        registry.add(Arc::new(TimedTools {
            inner: tool,
            spent: spent.clone(),
        }));
    }
    let timing = Arc::new(Timing::default());
    let agent = Agent {
        model: Arc::new(InstantModel {
            turns: Mutex::new(trajectory()),
        }),
        tools: registry,
        system: "You are pitcrew.".into(),
        config: AgentConfig {
            max_steps: STEPS as u32 + 10,
            max_wall_time: None,
            ..AgentConfig::default()
        },
        events: timing.clone(),
        meter: Meter::new(PriceTable::default()),
    };
    let ctx = ToolContext {
        workspace: Workspace::new(repo.path())?.with_read_root(run_dir.path())?,
        sandbox: Arc::new(LocalSession::start(repo.path(), LocalOptions::default())?),
        run_dir: run_dir.path().to_owned(),
        test_command: None,
        plan: Mutex::new(Plan::default()),
        reads: Default::default(),
        tests: Mutex::new(None),
        test_output: Mutex::new(None),
        cancel: CancellationToken::new(),
        index: None,
    };

    let started = Instant::now();
    let outcome = runtime.block_on(agent.run(
        &ctx,
        Task {
            prompt: "benchmark".into(),
            requires_change: false,
        },
        &CancellationToken::new(),
    ));
    let total = started.elapsed();
    assert_eq!(outcome.stop, StopReason::Finished, "{outcome:?}");
    assert_eq!(outcome.tool_calls as usize, STEPS);
    assert_eq!(
        timing.errors.load(std::sync::atomic::Ordering::Relaxed),
        0,
        "some tool calls failed"
    );

    let tool_times = spent.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    let marks = timing
        .marks
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    // Step n runs from its start to the next step's start; the last (answer-only) step is left out.
    let mut overheads: Vec<Duration> = marks
        .windows(2)
        .zip(&tool_times)
        .map(|(w, tool)| (w[1] - w[0]).saturating_sub(*tool))
        .collect();
    overheads.sort();
    let mut tools_sorted = tool_times.clone();
    tools_sorted.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let tool_total: Duration = tool_times.iter().sum();
    println!(
        "steps:                  {} ({} tool calls) on {FILES} files",
        outcome.steps, outcome.tool_calls
    );
    println!(
        "total wall time:        {:.1} ms, of which {:.1} ms inside tools",
        ms(total),
        ms(tool_total)
    );
    println!(
        "overhead per step:      median {:.3} ms, p90 {:.3} ms, max {:.3} ms",
        ms(percentile(&overheads, 0.5)),
        ms(percentile(&overheads, 0.9)),
        ms(percentile(&overheads, 1.0))
    );
    println!(
        "tool time per call:     median {:.3} ms, p90 {:.3} ms",
        ms(percentile(&tools_sorted, 0.5)),
        ms(percentile(&tools_sorted, 0.9))
    );
    if let Some(kib) = peak_rss_kib() {
        println!("peak RSS:               {:.1} MB", kib as f64 / 1024.0);
    }
    Ok(())
}
