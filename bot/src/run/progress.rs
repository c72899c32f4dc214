//! What `pitcrew run` shows while it works and when it is done: live progress on stderr (one
//! rewritten status line on a terminal, plain lines otherwise) and the final summary.

use std::io::Write;
use std::sync::{Mutex, PoisonError};

use crate::agent::context::cut;
use crate::agent::events::{AgentEvent, EventSink, NoteKind};
use crate::tools::StepStatus;

use super::RunReport;

/// Writes progress to stderr.
pub struct Progress {
    terminal: bool,
    /// A status line is on screen and must be cleared before anything else is written.
    status_shown: Mutex<bool>,
}

impl Progress {
    pub fn new(terminal: bool) -> Self {
        Progress {
            terminal,
            status_shown: Mutex::new(false),
        }
    }

    fn line(&self, text: &str) {
        let mut shown = self.status_shown.lock().unwrap_or_else(PoisonError::into_inner);
        let mut err = std::io::stderr().lock();
        let clear = if *shown { "\r\x1b[K" } else { "" };
        let _ = writeln!(err, "{clear}{text}");
        *shown = false;
    }

    fn status(&self, text: &str) {
        if !self.terminal {
            return;
        }
        let mut shown = self.status_shown.lock().unwrap_or_else(PoisonError::into_inner);
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[K{}", cut(text, 100));
        let _ = err.flush();
        *shown = true;
    }
}

impl EventSink for Progress {
    fn emit(&self, event: &AgentEvent) {
        match event {
            AgentEvent::RunStarted { model, tools, .. } => {
                self.line(&format!("pitcrew: running with {model} ({} tools)", tools.len()));
            }
            AgentEvent::StepStarted { step } => self.status(&format!("step {step} · thinking…")),
            AgentEvent::ModelRetrying {
                attempt,
                delay_ms,
                reason,
                ..
            } => {
                self.line(&format!(
                    "  model call failed ({reason}); retry {attempt} in {:.1}s",
                    *delay_ms as f64 / 1e3
                ));
            }
            AgentEvent::AssistantText { step, text } => {
                let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                if !first.is_empty() {
                    self.line(&format!("step {step}: {}", cut(first.trim(), 160)));
                }
            }
            AgentEvent::ToolStarted {
                step, tool, arguments, ..
            } => {
                let args = arguments.replace('\n', " ");
                if self.terminal {
                    self.status(&format!("step {step} · {tool} {args}"));
                } else {
                    self.line(&format!("  {tool} {}", cut(&args, 160)));
                }
            }
            AgentEvent::ToolFinished {
                tool,
                duration_ms,
                is_error: true,
                ..
            } => {
                self.line(&format!("  {tool} failed ({duration_ms} ms)"));
            }
            AgentEvent::PlanUpdated { plan } => {
                let done = plan.count(StepStatus::Done);
                self.line(&format!("plan ({done}/{} done):", plan.steps.len()));
                for line in plan.render().lines() {
                    self.line(&format!("  {line}"));
                }
            }
            AgentEvent::Note { kind, .. } => {
                let what = match kind {
                    NoteKind::Nudge => "nudged the model to inspect the repository",
                    NoteKind::Repetition => "warned the model that it is repeating itself",
                    NoteKind::BudgetWarning => "warned the model that the budget is nearly spent",
                    NoteKind::Grace => "budget spent: asking the model for its final report",
                };
                self.line(&format!("  ({what})"));
            }
            AgentEvent::Compacted {
                messages_before,
                messages_after,
                tokens_before,
                tokens_after,
                ..
            } => {
                self.line(&format!(
                    "  (compacted the conversation: {messages_before} → {messages_after} messages, ~{tokens_before} → \
                     ~{tokens_after} tokens)"
                ));
            }
            AgentEvent::CompactionFailed { reason, .. } => self.line(&format!("  (compaction failed: {reason})")),
            AgentEvent::Finished { .. } => {
                let mut shown = self.status_shown.lock().unwrap_or_else(PoisonError::into_inner);
                if *shown {
                    let _ = write!(std::io::stderr(), "\r\x1b[K");
                    *shown = false;
                }
            }
            AgentEvent::ToolFinished { .. } | AgentEvent::Usage { .. } => {}
        }
    }
}

/// The summary printed at the end of a run.
pub fn render_text(report: &RunReport) -> String {
    let mut out = String::new();
    let status = if let Some(error) = &report.error {
        format!("failed: {error}")
    } else if report.finished() {
        "finished".to_owned()
    } else {
        format!("stopped: {}", report.stop)
    };
    out.push_str(&format!("pitcrew {status}\n\n"));
    if !report.summary.trim().is_empty() {
        out.push_str(report.summary.trim());
        out.push_str("\n\n");
    }
    let branch = report.branch.as_deref().unwrap_or("(detached HEAD)");
    match (&report.commit, &report.error) {
        (Some(commit), _) => out.push_str(&format!("commit:   {} on {branch}\n", &commit[..commit.len().min(12)])),
        (None, Some(_)) => out.push_str(&format!(
            "commit:   failed; the change is left uncommitted on {branch}\n"
        )),
        (None, None) => out.push_str(&format!("commit:   none (nothing changed) on {branch}\n")),
    }
    if report.changed_files.is_empty() {
        out.push_str("changed:  nothing\n");
    } else {
        out.push_str("changed:\n");
        for file in &report.changed_files {
            out.push_str(&format!("  {:<9} {}\n", file.change, file.path));
        }
    }
    for file in &report.skipped_files {
        out.push_str(&format!("  not committed (over 1 MiB): {file}\n"));
    }
    for dir in &report.skipped_repositories {
        out.push_str(&format!("  not committed (a git repository of its own): {dir}\n"));
    }
    match &report.tests {
        Some(tests) => {
            out.push_str(&format!(
                "tests:    {} passed, {} failed, {} skipped\n",
                tests.passed, tests.failed, tests.skipped
            ));
            for name in tests.failures.iter().take(10) {
                out.push_str(&format!("  failing: {name}\n"));
            }
        }
        None => out.push_str("tests:    not run\n"),
    }
    if !report.plan.is_empty() {
        out.push_str("plan:\n");
        for line in report.plan.render().lines() {
            out.push_str(&format!("  {line}\n"));
        }
    }
    let usage = &report.usage;
    out.push_str(&format!(
        "tokens:   {} in, {} out, {} cache read, {} cache write\n",
        usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens
    ));
    match report.cost_usd {
        Some(cost) => out.push_str(&format!("cost:     ${cost:.4}\n")),
        None => out.push_str("cost:     unknown (no price for this model; set one under [prices])\n"),
    }
    out.push_str(&format!(
        "steps:    {} ({} tool calls) in {:.1}s\nsandbox:  {}\nlog:      {}/trajectory.jsonl\n",
        report.steps,
        report.tool_calls,
        report.duration_ms as f64 / 1e3,
        report.sandbox,
        report.run_dir
    ));
    out
}
