//! What the loop reports while it runs: typed events, the sinks that consume them, and the
//! trajectory log (one JSON object per line in the run directory).

use std::io::Write;
use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use serde::Serialize;

use crate::llm::{Usage, UsageTotals};
use crate::tools::Plan;

use super::Outcome;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    RunStarted {
        model: String,
        tools: Vec<String>,
        task: String,
    },
    StepStarted {
        step: u32,
    },
    /// The model call failed and is being retried; what was streamed of it is void.
    ModelRetrying {
        step: u32,
        attempt: u32,
        delay_ms: u64,
        reason: String,
    },
    AssistantText {
        step: u32,
        text: String,
    },
    ToolStarted {
        step: u32,
        call_id: String,
        tool: String,
        /// The arguments as the model sent them, shortened.
        arguments: String,
    },
    ToolFinished {
        step: u32,
        call_id: String,
        tool: String,
        duration_ms: u64,
        is_error: bool,
        /// Characters of output the tool produced.
        output_chars: usize,
        /// Where the full output went when it was too large for the context.
        #[serde(skip_serializing_if = "Option::is_none")]
        persisted_to: Option<String>,
    },
    PlanUpdated {
        plan: Plan,
    },
    /// The harness added a message of its own (a nudge, a repetition warning, a budget warning).
    Note {
        step: u32,
        kind: NoteKind,
        text: String,
    },
    Compacted {
        step: u32,
        messages_before: usize,
        messages_after: usize,
        tokens_before: u64,
        tokens_after: u64,
    },
    CompactionFailed {
        step: u32,
        reason: String,
    },
    Usage {
        step: u32,
        usage: Usage,
        cost_usd: Option<f64>,
        totals: UsageTotals,
    },
    Finished {
        outcome: Outcome,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoteKind {
    Nudge,
    Repetition,
    BudgetWarning,
    Grace,
}

/// Something that wants to hear about a run. Emitting must be cheap and must not fail the run.
pub trait EventSink: Send + Sync {
    fn emit(&self, event: &AgentEvent);
}

/// Discards events.
pub struct NoEvents;

impl EventSink for NoEvents {
    fn emit(&self, _: &AgentEvent) {}
}

/// Sends each event to several sinks.
pub struct Fanout(pub Vec<Box<dyn EventSink>>);

impl EventSink for Fanout {
    fn emit(&self, event: &AgentEvent) {
        for sink in &self.0 {
            sink.emit(event);
        }
    }
}

/// Collects events in memory (tests, and front ends that render at the end).
#[derive(Default)]
pub struct Recorder(Mutex<Vec<AgentEvent>>);

impl Recorder {
    pub fn events(&self) -> Vec<AgentEvent> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl EventSink for Recorder {
    fn emit(&self, event: &AgentEvent) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(event.clone());
    }
}

impl<T: EventSink + ?Sized> EventSink for std::sync::Arc<T> {
    fn emit(&self, event: &AgentEvent) {
        (**self).emit(event);
    }
}

/// `trajectory.jsonl`: every event with the milliseconds since the run started.
pub struct TrajectoryLog {
    file: Mutex<std::io::BufWriter<std::fs::File>>,
    started: Instant,
}

impl TrajectoryLog {
    pub fn create(path: &Path) -> std::io::Result<Self> {
        let file = std::fs::File::create(path)?;
        Ok(TrajectoryLog {
            file: Mutex::new(std::io::BufWriter::new(file)),
            started: Instant::now(),
        })
    }
}

#[derive(Serialize)]
struct Line<'a> {
    t_ms: u64,
    #[serde(flatten)]
    event: &'a AgentEvent,
}

impl EventSink for TrajectoryLog {
    fn emit(&self, event: &AgentEvent) {
        let line = Line {
            t_ms: self.started.elapsed().as_millis() as u64,
            event,
        };
        let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        let written = serde_json::to_writer(&mut *file, &line)
            .map_err(std::io::Error::from)
            .and_then(|()| {
                file.write_all(b"\n")?;
                // Flushed per event: the log must survive the process being killed mid-run.
                file.flush()
            });
        if let Err(err) = written {
            tracing::warn!(%err, "could not write the trajectory log");
        }
    }
}
