//! The agent loop: call the model with the tools, run the calls it makes, feed the results back,
//! stop when it calls no tool. Around that plain loop sit budgets (with a grace call), output
//! budgets and compaction, a repetition guard, bounded concurrency for read-only tools, and events.
//!
//! The conversation only ever grows by appending (state such as budget warnings is a new message,
//! never an edit), so between compactions each request extends the previous one exactly and the
//! provider's prompt cache keeps hitting.

pub mod context;
pub mod events;
pub mod subagent;

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures_util::{FutureExt, StreamExt};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::llm::{
    LlmError, Message, Model, PriceTable, Request, Response, StopReason as ModelStop, StreamEvent, ToolCall,
    UsageTotals,
};
use crate::prompts::{Prompts, Template};
use crate::tools::{Plan, Registry, ToolContext, ToolError};

use context::{OutputBudget, PendingResult, SizeTracker};
use events::{AgentEvent, EventSink, NoteKind};

/// Limits and knobs of one run.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub max_steps: u32,
    pub max_cost_usd: Option<f64>,
    pub max_wall_time: Option<Duration>,
    /// The model's context window in tokens.
    pub context_window: u64,
    /// Compact when a request is estimated above this fraction of the window.
    pub compact_at: f64,
    /// Assistant turns kept verbatim by compaction.
    pub keep_recent_turns: usize,
    pub output: OutputBudget,
    /// Read-only calls of one turn run at most this many at once.
    pub read_only_concurrency: usize,
    /// The templates of the loop's own messages: notes, compaction, the sub-agent's system prompt.
    pub prompts: Prompts,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            max_steps: 80,
            max_cost_usd: None,
            max_wall_time: Some(Duration::from_secs(30 * 60)),
            context_window: 128_000,
            compact_at: 0.85,
            keep_recent_turns: 2,
            output: OutputBudget::default(),
            read_only_concurrency: 8,
            prompts: Prompts::embedded(),
        }
    }
}

/// Which budget ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Budget {
    Steps,
    Cost,
    WallTime,
    /// The conversation no longer fits the context window and could not be compacted.
    Context,
}

/// Why a run ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum StopReason {
    /// The model stopped calling tools.
    Finished,
    BudgetExhausted {
        budget: Budget,
    },
    /// The model kept repeating the same call after being told to change strategy.
    Stuck {
        tool: String,
    },
    Cancelled,
    ModelError {
        message: String,
    },
    /// A tool failed in a way the run cannot survive (the sandbox died).
    ToolFailed {
        message: String,
    },
}

impl StopReason {
    pub fn label(&self) -> &'static str {
        match self {
            StopReason::Finished => "finished",
            StopReason::BudgetExhausted { .. } => "budget_exhausted",
            StopReason::Stuck { .. } => "stuck",
            StopReason::Cancelled => "cancelled",
            StopReason::ModelError { .. } => "model_error",
            StopReason::ToolFailed { .. } => "tool_failed",
        }
    }
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StopReason::Finished => f.write_str("finished"),
            StopReason::BudgetExhausted { budget } => {
                let what = match budget {
                    Budget::Steps => "step",
                    Budget::Cost => "cost",
                    Budget::WallTime => "wall-time",
                    Budget::Context => "context",
                };
                write!(f, "the {what} budget is exhausted")
            }
            StopReason::Stuck { tool } => write!(f, "stuck: the model kept repeating the same `{tool}` call"),
            StopReason::Cancelled => f.write_str("cancelled"),
            StopReason::ModelError { message } => write!(f, "model error: {message}"),
            StopReason::ToolFailed { message } => write!(f, "tool failure: {message}"),
        }
    }
}

/// The result of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    pub stop: StopReason,
    /// The model's final message (or the grace call's summary).
    pub summary: String,
    pub plan: Plan,
    pub usage: UsageTotals,
    pub steps: u32,
    /// Tool calls that ran: identical calls of one turn, which share one run, count once.
    pub tool_calls: u32,
    pub duration_ms: u64,
}

/// What to do.
#[derive(Debug, Clone)]
pub struct Task {
    /// The first user message: the rendered job template.
    pub prompt: String,
    /// The task asks for a change: a first answer without any tool call earns one nudge.
    pub requires_change: bool,
}

/// Usage and cost of a run, shared with its sub-agents.
#[derive(Debug)]
pub struct Meter {
    totals: Mutex<UsageTotals>,
    prices: PriceTable,
}

impl Meter {
    pub fn new(prices: PriceTable) -> Arc<Self> {
        Arc::new(Meter {
            totals: Mutex::new(UsageTotals::new()),
            prices,
        })
    }

    /// Records one call; returns its cost and the new totals.
    pub fn record(&self, model: &str, response: &Response) -> (Option<f64>, UsageTotals) {
        let price = self
            .prices
            .lookup(response.model.as_deref().unwrap_or(model))
            .or_else(|| self.prices.lookup(model));
        let mut totals = self.totals.lock().unwrap_or_else(PoisonError::into_inner);
        let cost = totals.record(&response.usage, price);
        (cost, totals.clone())
    }

    pub fn totals(&self) -> UsageTotals {
        self.totals.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// Consecutive turns making the same calls that earn a warning; one more after it stops the run.
const REPEAT_WARN: u32 = 3;
/// Consecutive failed compactions that stop the run.
const MAX_COMPACTION_FAILURES: u32 = 3;

/// A model and tools, ready to run tasks.
pub struct Agent {
    pub model: Arc<dyn Model>,
    pub tools: Registry,
    pub system: String,
    pub config: AgentConfig,
    pub events: Arc<dyn EventSink>,
    pub meter: Arc<Meter>,
}

struct RunState {
    messages: Vec<Message>,
    step: u32,
    tool_calls: u32,
    /// The distinct calls of the last turn, for the repetition guard.
    last_turn: Vec<CallKey>,
    /// Consecutive turns that asked for exactly `last_turn`.
    repeats: u32,
    warned_repetition: bool,
    nudged: bool,
    budget_warned: bool,
    compaction_failures: u32,
    size: SizeTracker,
    plan_version: u64,
}

impl Agent {
    /// Runs `task` to the end. Never fails: every way a run can end is an [`Outcome`].
    pub async fn run(&self, ctx: &ToolContext, task: Task, cancel: &CancellationToken) -> Outcome {
        let started = Instant::now();
        self.events.emit(&AgentEvent::RunStarted {
            model: self.model.name().to_owned(),
            tools: self.tools.names().map(str::to_owned).collect(),
            task: context::cut(&task.prompt, 2_000).to_owned(),
        });
        let mut state = RunState {
            messages: vec![Message::user(task.prompt.clone())],
            step: 0,
            tool_calls: 0,
            last_turn: Vec::new(),
            repeats: 0,
            warned_repetition: false,
            nudged: false,
            budget_warned: false,
            compaction_failures: 0,
            size: SizeTracker::default(),
            plan_version: ctx.plan().version,
        };
        let (stop, summary) = self.run_loop(ctx, &task, &mut state, started, cancel).await;
        let outcome = Outcome {
            stop,
            summary,
            plan: ctx.plan(),
            usage: self.meter.totals(),
            steps: state.step,
            tool_calls: state.tool_calls,
            duration_ms: started.elapsed().as_millis() as u64,
        };
        self.events.emit(&AgentEvent::Finished {
            outcome: outcome.clone(),
        });
        outcome
    }

    async fn run_loop(
        &self,
        ctx: &ToolContext,
        task: &Task,
        state: &mut RunState,
        started: Instant,
        cancel: &CancellationToken,
    ) -> (StopReason, String) {
        let specs = self.tools.specs();
        loop {
            if cancel.is_cancelled() {
                return (StopReason::Cancelled, String::new());
            }
            if let Some(budget) = self.exhausted_budget(state, started) {
                return self.grace(state, &specs, budget, cancel).await;
            }
            self.warn_if_budget_low(state, started);

            // Compact ahead of the call when the request would come close to the window.
            let request = self.request(&state.messages, &specs);
            if state.size.tokens(&request) as f64 > self.config.compact_at * self.config.context_window as f64
                && let Err(stop) = self.compact(state, &specs, cancel).await
            {
                return (stop, String::new());
            }

            state.step += 1;
            self.events.emit(&AgentEvent::StepStarted { step: state.step });
            let response = match self.call(state, &specs, cancel).await {
                Ok(response) => response,
                Err(LlmError::ContextWindowExceeded { message }) => {
                    tracing::info!(%message, "context window exceeded; compacting and retrying once");
                    if let Err(stop) = self.compact(state, &specs, cancel).await {
                        return (stop, String::new());
                    }
                    match self.call(state, &specs, cancel).await {
                        Ok(response) => response,
                        Err(LlmError::ContextWindowExceeded { .. }) => {
                            return (
                                StopReason::BudgetExhausted {
                                    budget: Budget::Context,
                                },
                                String::new(),
                            );
                        }
                        Err(err) => return (model_stop(err), String::new()),
                    }
                }
                Err(err) => return (model_stop(err), String::new()),
            };

            let calls: Vec<ToolCall> = response.tool_calls().cloned().collect();
            let text = response.text();
            if !text.trim().is_empty() {
                self.events.emit(&AgentEvent::AssistantText {
                    step: state.step,
                    text: text.clone(),
                });
            }
            state.messages.push(response.message());

            if calls.is_empty() {
                if response.stop_reason == ModelStop::MaxTokens && text.trim().is_empty() {
                    return (
                        StopReason::ModelError {
                            message: "the model hit its output limit without answering".into(),
                        },
                        String::new(),
                    );
                }
                if task.requires_change && state.tool_calls == 0 && !state.nudged {
                    state.nudged = true;
                    let text = self.text(Template::NoteNudge, &[]);
                    self.note(state, NoteKind::Nudge, &text);
                    continue;
                }
                return (StopReason::Finished, text);
            }

            if let Some(stop) = self.run_calls(ctx, state, &calls, cancel).await {
                return (stop, String::new());
            }
            let plan = ctx.plan();
            if plan.version != state.plan_version {
                state.plan_version = plan.version;
                self.events.emit(&AgentEvent::PlanUpdated { plan });
            }
        }
    }

    fn request(&self, messages: &[Message], specs: &[crate::llm::ToolSpec]) -> Request {
        Request {
            system: self.system.clone(),
            messages: messages.to_vec(),
            tools: specs.to_vec(),
            ..Request::default()
        }
    }

    /// One model call, streamed so that retries are reported and cancellation is prompt.
    async fn call(
        &self,
        state: &mut RunState,
        specs: &[crate::llm::ToolSpec],
        cancel: &CancellationToken,
    ) -> Result<Response, LlmError> {
        let request = self.request(&state.messages, specs);
        let mut stream = self.model.stream(request, cancel.child_token());
        let mut response = None;
        while let Some(event) = stream.next().await {
            match event? {
                StreamEvent::Retrying { attempt, delay, reason } => self.events.emit(&AgentEvent::ModelRetrying {
                    step: state.step,
                    attempt,
                    delay_ms: delay.as_millis() as u64,
                    reason,
                }),
                StreamEvent::Completed(done) => response = Some(done),
                _ => {}
            }
        }
        let response = response.ok_or_else(|| LlmError::protocol("the model call ended without a response"))?;
        let (cost, totals) = self.meter.record(self.model.name(), &response);
        state.size.measured(state.messages.len(), &response.usage);
        self.events.emit(&AgentEvent::Usage {
            step: state.step,
            usage: response.usage,
            cost_usd: cost,
            totals,
        });
        Ok(response)
    }

    fn exhausted_budget(&self, state: &RunState, started: Instant) -> Option<Budget> {
        if state.step >= self.config.max_steps {
            return Some(Budget::Steps);
        }
        if let (Some(limit), Some(spent)) = (self.config.max_cost_usd, self.meter.totals().cost_usd)
            && spent >= limit
        {
            return Some(Budget::Cost);
        }
        if self
            .config
            .max_wall_time
            .is_some_and(|limit| started.elapsed() >= limit)
        {
            return Some(Budget::WallTime);
        }
        None
    }

    /// Once, when 80% of the steps, cost or time is spent: a note, appended like any message.
    fn warn_if_budget_low(&self, state: &mut RunState, started: Instant) {
        if state.budget_warned {
            return;
        }
        let steps = f64::from(state.step) / f64::from(self.config.max_steps.max(1));
        let cost = match (self.config.max_cost_usd, self.meter.totals().cost_usd) {
            (Some(limit), Some(spent)) if limit > 0.0 => spent / limit,
            _ => 0.0,
        };
        let time = self
            .config
            .max_wall_time
            .map_or(0.0, |limit| started.elapsed().as_secs_f64() / limit.as_secs_f64());
        if steps.max(cost).max(time) < 0.8 {
            return;
        }
        state.budget_warned = true;
        let left = self.config.max_steps.saturating_sub(state.step);
        let text = self.text(
            Template::NoteBudget,
            &[
                ("steps_left", &left.to_string()),
                ("max_steps", &self.config.max_steps.to_string()),
            ],
        );
        self.note(state, NoteKind::BudgetWarning, &text);
    }

    /// A budget ran out: one last call, told to summarise instead of working on.
    async fn grace(
        &self,
        state: &mut RunState,
        specs: &[crate::llm::ToolSpec],
        budget: Budget,
        cancel: &CancellationToken,
    ) -> (StopReason, String) {
        let stop = StopReason::BudgetExhausted { budget };
        let text = self.text(Template::NoteGrace, &[("stop", &stop.to_string())]);
        self.note(state, NoteKind::Grace, &text);
        match self.call(state, specs, cancel).await {
            Ok(response) => {
                let summary = response.text();
                state.messages.push(response.message());
                let summary = if summary.trim().is_empty() {
                    "(the model gave no summary)".to_owned()
                } else {
                    summary
                };
                (stop, summary)
            }
            Err(err) => {
                tracing::warn!(%err, "the grace call failed");
                (stop, String::new())
            }
        }
    }

    fn text(&self, template: Template, vars: &[(&str, &str)]) -> String {
        loop_text(&self.config.prompts, template, vars)
    }

    fn note(&self, state: &mut RunState, kind: NoteKind, text: &str) {
        self.events.emit(&AgentEvent::Note {
            step: state.step,
            kind,
            text: text.to_owned(),
        });
        state.messages.push(Message::user(text));
    }

    /// Runs the calls of one turn and appends their results. `Some` ends the run.
    async fn run_calls(
        &self,
        ctx: &ToolContext,
        state: &mut RunState,
        calls: &[ToolCall],
        cancel: &CancellationToken,
    ) -> Option<StopReason> {
        let read_only = |call: &ToolCall| self.tools.get(&call.name).is_some_and(|t| t.read_only());
        // The repetition guard compares whole turns, before anything of this one runs: a turn that
        // asks for exactly what the turn before asked for, again and again, is a loop. Identical calls
        // within one turn are not (a model fanning out the same call runs it once, below).
        let mut repetition_note = None;
        let signature = turn_signature(calls);
        if state.last_turn == signature {
            state.repeats += 1;
        } else {
            state.last_turn = signature;
            state.repeats = 1;
            state.warned_repetition = false;
        }
        if state.repeats > REPEAT_WARN && state.warned_repetition {
            return Some(StopReason::Stuck {
                tool: calls.first().map(|c| c.name.clone()).unwrap_or_default(),
            });
        }
        if state.repeats == REPEAT_WARN {
            state.warned_repetition = true;
            repetition_note = Some(self.text(
                Template::NoteRepetition,
                &[("tools", &tool_names(calls)), ("times", &REPEAT_WARN.to_string())],
            ));
        }

        let turn = TurnPlan::new(calls, read_only);
        let runs: Vec<&ToolCall> = turn.runs.iter().map(|&i| &calls[i]).collect();
        // Consecutive read-only calls run together (bounded); each mutating call runs alone, in order.
        let mut outcomes: Vec<CallOutcome> = Vec::with_capacity(runs.len());
        let mut index = 0;
        while index < runs.len() {
            let end = if read_only(runs[index]) {
                index + runs[index..].iter().take_while(|c| read_only(c)).count()
            } else {
                index + 1
            };
            let step = state.step;
            let running: Vec<_> = runs[index..end]
                .iter()
                .map(|call| self.execute(ctx, step, call, cancel))
                .collect();
            let batch = futures_util::stream::iter(running)
                .buffered(self.config.read_only_concurrency.max(1))
                .collect::<Vec<_>>()
                .await;
            outcomes.extend(batch);
            index = end;
        }
        state.tool_calls += runs.len() as u32;

        let fatal = outcomes.iter().find_map(|o| o.fatal.clone());
        // The budgets apply to what ran: a result shared by fifty identical calls counts once.
        let mut pending: Vec<PendingResult> = outcomes
            .iter()
            .zip(&runs)
            .map(|(outcome, call)| PendingResult {
                call_id: call.id.clone(),
                content: outcome.content.clone(),
                paginated: self.tools.get(&call.name).is_some_and(|t| t.paginated()),
                persisted_to: None,
            })
            .collect();
        self.config
            .output
            .apply(&mut pending, &ctx.run_dir.join("tool-results"));
        for ((result, outcome), call) in pending.iter().zip(&outcomes).zip(&runs) {
            self.events.emit(&AgentEvent::ToolFinished {
                step: state.step,
                call_id: call.id.clone(),
                tool: call.name.clone(),
                duration_ms: outcome.duration.as_millis() as u64,
                is_error: outcome.is_error,
                output_chars: outcome.content.len(),
                persisted_to: result.persisted_to.as_ref().map(|p| p.display().to_string()),
            });
        }
        // Every call id gets its own result, in the model's order: both providers refuse a
        // conversation where a call has no result.
        for (call, &run) in calls.iter().zip(&turn.source) {
            state.messages.push(Message::tool_result(
                call.id.clone(),
                pending[run].content.clone(),
                outcomes[run].is_error,
            ));
        }
        if let Some(message) = fatal {
            return Some(StopReason::ToolFailed { message });
        }
        if cancel.is_cancelled() {
            return Some(StopReason::Cancelled);
        }
        if let Some(text) = repetition_note {
            self.note(state, NoteKind::Repetition, &text);
        }
        None
    }

    /// One call: every failure becomes an error result for the model, never a crash.
    async fn execute(&self, ctx: &ToolContext, step: u32, call: &ToolCall, cancel: &CancellationToken) -> CallOutcome {
        let started = Instant::now();
        self.events.emit(&AgentEvent::ToolStarted {
            step,
            call_id: call.id.clone(),
            tool: call.name.clone(),
            arguments: context::cut(&call.arguments, 500).to_owned(),
        });
        let result = self.dispatch(ctx, call, cancel).await;
        let (content, is_error, fatal) = match result {
            Ok(content) => (content, false, None),
            Err(ToolError::Respond(message)) => (message, true, None),
            Err(ToolError::Fatal(message)) => (message.clone(), true, Some(message)),
        };
        CallOutcome {
            content,
            is_error,
            fatal,
            duration: started.elapsed(),
        }
    }

    async fn dispatch(
        &self,
        ctx: &ToolContext,
        call: &ToolCall,
        cancel: &CancellationToken,
    ) -> Result<String, ToolError> {
        let Some(tool) = self.tools.get(&call.name) else {
            let names: Vec<_> = self.tools.names().collect();
            return Err(ToolError::respond(format!(
                "there is no tool named `{}`; the tools are: {}",
                call.name,
                names.join(", ")
            )));
        };
        let args = call.parse_arguments().map_err(|e| ToolError::Respond(e.to_string()))?;
        if !tool.runs_commands() {
            // The host is about to touch the working copy: nothing in the sandbox may run
            // meanwhile. The tools open paths safely on their own, so a backend that cannot
            // freeze costs this defence only.
            if let Err(error) = ctx.sandbox.quiesce().await {
                tracing::warn!(tool = %call.name, %error, "could not freeze the sandbox before a file tool");
            }
        }
        let running = AssertUnwindSafe(tool.call(ctx, args)).catch_unwind();
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(ToolError::respond("cancelled")),
            result = running => match result {
                Ok(result) => result,
                Err(panic) => {
                    let what = panic
                        .downcast_ref::<&str>()
                        .map(|s| (*s).to_owned())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "unknown panic".into());
                    tracing::error!(tool = %call.name, %what, "a tool panicked");
                    Err(ToolError::respond(format!("the `{}` tool failed internally: {what}", call.name)))
                }
            },
        }
    }

    /// Replaces the older turns by a summary the model writes. `Err` ends the run.
    async fn compact(
        &self,
        state: &mut RunState,
        specs: &[crate::llm::ToolSpec],
        cancel: &CancellationToken,
    ) -> Result<(), StopReason> {
        let (head, keep_from) = context::split_for_compaction(&state.messages, self.config.keep_recent_turns);
        if keep_from <= head {
            return self.compaction_failed(state, "there are no older turns to summarise");
        }
        let before = state.messages.len();
        let tokens_before = state.size.tokens(&self.request(&state.messages, specs));
        // The summary request shares the prefix of the conversation (cache hit) and asks for prose.
        let mut drop_oldest = 0;
        let summary = loop {
            let mut messages: Vec<Message> = state.messages[..head].to_vec();
            let start = align_to_turn(&state.messages, head + drop_oldest).min(keep_from);
            if drop_oldest > 0 {
                messages.push(Message::user(self.text(Template::CompactDropped, &[])));
            }
            messages.extend_from_slice(&state.messages[start..keep_from]);
            messages.push(Message::user(self.text(Template::Compact, &[])));
            let request = Request {
                system: self.system.clone(),
                messages,
                tools: specs.to_vec(),
                ..Request::default()
            };
            match self
                .model
                .stream(request, cancel.child_token())
                .collect::<Vec<_>>()
                .await
                .into_iter()
                .last()
            {
                Some(Ok(StreamEvent::Completed(response))) => {
                    let (cost, totals) = self.meter.record(self.model.name(), &response);
                    self.events.emit(&AgentEvent::Usage {
                        step: state.step,
                        usage: response.usage,
                        cost_usd: cost,
                        totals,
                    });
                    let text = response.text();
                    if text.trim().is_empty() {
                        return self.compaction_failed(state, "the model wrote an empty summary");
                    }
                    break text;
                }
                Some(Err(LlmError::Cancelled)) => return Err(StopReason::Cancelled),
                // The summary request itself is too long: leave out the oldest half of what is left.
                Some(Err(LlmError::ContextWindowExceeded { .. })) if keep_from - (head + drop_oldest) > 1 => {
                    drop_oldest += (keep_from - head - drop_oldest).div_ceil(2);
                }
                Some(Err(err)) => return self.compaction_failed(state, &err.to_string()),
                _ => return self.compaction_failed(state, "the summary call ended without a response"),
            }
        };
        let mut messages: Vec<Message> = state.messages[..head].to_vec();
        messages.push(Message::user(
            self.text(Template::CompactSummary, &[("summary", summary.trim())]),
        ));
        messages.extend_from_slice(&state.messages[keep_from..]);
        state.messages = messages;
        state.size.reset();
        state.compaction_failures = 0;
        let tokens_after = state.size.tokens(&self.request(&state.messages, specs));
        self.events.emit(&AgentEvent::Compacted {
            step: state.step,
            messages_before: before,
            messages_after: state.messages.len(),
            tokens_before,
            tokens_after,
        });
        Ok(())
    }

    fn compaction_failed(&self, state: &mut RunState, reason: &str) -> Result<(), StopReason> {
        state.compaction_failures += 1;
        self.events.emit(&AgentEvent::CompactionFailed {
            step: state.step,
            reason: reason.to_owned(),
        });
        tracing::warn!(failures = state.compaction_failures, %reason, "compaction failed");
        if state.compaction_failures >= MAX_COMPACTION_FAILURES {
            Err(StopReason::BudgetExhausted {
                budget: Budget::Context,
            })
        } else {
            Ok(())
        }
    }
}

struct CallOutcome {
    content: String,
    is_error: bool,
    fatal: Option<String>,
    duration: Duration,
}

/// One of the loop's own messages. Templates are checked against their variables when they are
/// loaded and every caller passes all of them, so rendering does not fail; were it to, the run
/// carries on with the template's text as it is rather than ending over a note.
fn loop_text(prompts: &Prompts, template: Template, vars: &[(&str, &str)]) -> String {
    prompts.render(template, vars).unwrap_or_else(|error| {
        tracing::error!(%error, "rendering one of the agent loop's messages failed");
        prompts.source(template).to_owned()
    })
}

fn model_stop(err: LlmError) -> StopReason {
    match err {
        LlmError::Cancelled => StopReason::Cancelled,
        other => StopReason::ModelError {
            message: other.to_string(),
        },
    }
}

/// A call without its id: the tool and its arguments in a canonical form (sorted keys), so
/// `{"a":1,"b":2}` and `{"b":2,"a":1}` count as the same call.
type CallKey = (String, String);

fn call_key(call: &ToolCall) -> CallKey {
    let arguments = match call.parse_arguments() {
        Ok(map) => serde_json::Value::Object(map).to_string(),
        Err(_) => call.arguments.trim().to_owned(),
    };
    (call.name.clone(), arguments)
}

/// The distinct calls of a turn, in a fixed order: two turns asking for the same things in another
/// order or number are the same turn to the repetition guard.
fn turn_signature(calls: &[ToolCall]) -> Vec<CallKey> {
    let mut keys: Vec<CallKey> = calls.iter().map(call_key).collect();
    keys.sort();
    keys.dedup();
    keys
}

/// "`grep`", or "`grep` and `read_file`": the tools of a turn, each once, for the warning.
fn tool_names(calls: &[ToolCall]) -> String {
    let mut names: Vec<String> = Vec::new();
    for call in calls {
        let name = format!("`{}`", call.name);
        if !names.contains(&name) {
            names.push(name);
        }
    }
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.concat(),
    }
}

/// Which calls of a turn run. A call identical to an earlier one of the same turn shares that run's
/// result, unless a different mutating call ran between them (it may have changed the answer:
/// `read_file` after an `edit_file` of the same file must read again).
#[derive(Debug, PartialEq, Eq)]
struct TurnPlan {
    /// Indices of the calls that run, in the model's order.
    runs: Vec<usize>,
    /// For each call, the index in `runs` of the run whose result it gets.
    source: Vec<usize>,
}

impl TurnPlan {
    fn new(calls: &[ToolCall], read_only: impl Fn(&ToolCall) -> bool) -> Self {
        let mut runs = Vec::new();
        let mut source = Vec::with_capacity(calls.len());
        // Runs whose result still holds, by call: cleared by each mutating call that runs.
        let mut valid: Vec<(CallKey, usize)> = Vec::new();
        for (index, call) in calls.iter().enumerate() {
            let key = call_key(call);
            if let Some((_, run)) = valid.iter().find(|(k, _)| *k == key) {
                source.push(*run);
                continue;
            }
            if !read_only(call) {
                valid.clear();
            }
            valid.push((key, runs.len()));
            source.push(runs.len());
            runs.push(index);
        }
        TurnPlan { runs, source }
    }
}

/// The first index at or after `index` where an assistant turn starts (so no tool result loses its call).
fn align_to_turn(messages: &[Message], index: usize) -> usize {
    messages[index..]
        .iter()
        .position(|m| matches!(m, Message::Assistant { .. }))
        .map_or(messages.len(), |offset| index + offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    fn plan(calls: &[ToolCall]) -> TurnPlan {
        TurnPlan::new(calls, |c| c.name != "bash" && c.name != "edit_file")
    }

    #[test]
    fn identical_calls_of_a_turn_run_once() {
        let calls: Vec<ToolCall> = (0..50)
            .map(|i| call(&format!("c{i}"), "bash", r#"{"command":"echo hi"}"#))
            .collect();
        let turn = plan(&calls);
        assert_eq!(turn.runs, [0]);
        assert_eq!(turn.source, vec![0; 50]);
        // The same arguments in another key order are the same call.
        let turn = plan(&[
            call("a", "grep", r#"{"pattern":"x","path":"."}"#),
            call("b", "grep", r#"{"path":".","pattern":"x"}"#),
            call("c", "grep", r#"{"pattern":"y"}"#),
        ]);
        assert_eq!((turn.runs, turn.source), (vec![0, 2], vec![0, 0, 1]));
    }

    #[test]
    fn a_mutating_call_between_identical_calls_makes_the_second_run_again() {
        let read = || call("r", "read_file", r#"{"path":"a"}"#);
        let turn = plan(&[
            read(),
            read(),
            call("e", "edit_file", r#"{"path":"a"}"#),
            read(),
            call("e2", "edit_file", r#"{"path":"a"}"#),
        ]);
        // The second edit is identical to the first but a read ran between them: nothing mutated
        // in between, so it shares the first edit's result.
        assert_eq!(turn.runs, [0, 2, 3]);
        assert_eq!(turn.source, [0, 0, 1, 2, 1]);
        let turn = plan(&[
            call("t", "bash", r#"{"command":"cargo test"}"#),
            call("e", "edit_file", r#"{"path":"a"}"#),
            call("t2", "bash", r#"{"command":"cargo test"}"#),
        ]);
        assert_eq!(turn.runs, [0, 1, 2]);
    }

    #[test]
    fn turns_compare_by_their_distinct_calls() {
        let a = call("1", "grep", r#"{"pattern":"x"}"#);
        let b = call("2", "read_file", r#"{"path":"f"}"#);
        assert_eq!(
            turn_signature(&[a.clone(), b.clone(), a.clone()]),
            turn_signature(&[b.clone(), a.clone()])
        );
        assert_ne!(
            turn_signature(std::slice::from_ref(&a)),
            turn_signature(&[a.clone(), b.clone()])
        );
        assert_eq!(tool_names(&[a.clone(), b, a]), "`grep` and `read_file`");
    }
}
