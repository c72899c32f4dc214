//! `pitcrew run`: one task on a local repository, end to end — a branch, the agent in a sandbox
//! session, a commit of what it changed, and a report for the terminal or as JSON.
//!
//! Once the agent has run, the report always comes back, with what the run spent: a commit that
//! fails is the report's `error`, and the change stays in the working tree.

pub mod chore;
pub mod index;
pub mod progress;
pub mod review;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::agent::StopReason;
use crate::agent::events::EventSink;
use crate::config::Config;
use crate::llm::{Model, Usage};
use crate::prompts::{Prompts, Template};
use crate::session::{AgentRun, AgentSession, CodeIndex, SessionError, Toolset, image};
use crate::tools::Plan;
use crate::workspace::{self, ChangedFile, LocalRepo, WorkspaceError};

pub struct RunOptions {
    pub repo: PathBuf,
    pub task: String,
    /// Work on the current branch instead of a new `pitcrew/<slug>` one.
    pub in_place: bool,
    pub config: Config,
    pub prompts: Prompts,
    /// The front end (progress display); the trajectory log is added by the run.
    pub events: Arc<dyn EventSink>,
    /// Replaces the configured model (tests hand in a scripted one).
    pub model: Option<Arc<dyn Model>>,
    pub cancel: CancellationToken,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    #[error(transparent)]
    Session(#[from] SessionError),
}

/// Everything a run did, for people (`render_text`) and machines (`--json`).
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// `finished`, `budget_exhausted`, `stuck`, `cancelled`, `model_error` or `tool_failed`; or
    /// `commit_failed` when the agent's change could not be committed (see `error`).
    pub status: &'static str,
    pub stop: StopReason,
    pub branch: Option<String>,
    pub commit: Option<String>,
    pub changed_files: Vec<ChangedFile>,
    /// New files left uncommitted because of their size.
    pub skipped_files: Vec<String>,
    /// New directories left uncommitted because they are git repositories of their own (`dir/`).
    pub skipped_repositories: Vec<String>,
    /// What failed after the agent's work (the commit); the change is left in the working tree.
    pub error: Option<String>,
    pub tests: Option<TestSummary>,
    pub plan: Plan,
    pub usage: Usage,
    pub cost_usd: Option<f64>,
    pub steps: u32,
    pub tool_calls: u32,
    pub duration_ms: u64,
    pub summary: String,
    pub run_dir: String,
    pub sandbox: String,
}

/// The last test run of the agent.
#[derive(Debug, Clone, Serialize)]
pub struct TestSummary {
    pub passed: u64,
    pub failed: u64,
    pub skipped: u64,
    pub failures: Vec<String>,
}

impl RunReport {
    pub fn finished(&self) -> bool {
        self.stop == StopReason::Finished
    }
}

/// Runs `options.task` in `options.repo`.
pub async fn run(options: RunOptions) -> Result<RunReport, RunError> {
    let repo = LocalRepo::open(&options.repo)?;
    repo.ensure_clean()?;
    let start = repo.head()?;
    let branch = if options.in_place {
        repo.current_branch()
    } else {
        Some(repo.create_branch(&format!("pitcrew/{}", workspace::slug(&options.task, 40)))?)
    };
    let root = repo.root().to_owned();

    let id = run_id();
    let run_dir = repo.git_dir().join("pitcrew").join("runs").join(&id);
    // A local run has no server whose limits a repository's file could lower: only the image is
    // the checkout's to choose.
    let settings = image::checkout_config(&root).apply(&options.config);
    let session = AgentSession::start(AgentRun {
        config: &options.config,
        settings: &settings,
        prompts: &options.prompts,
        model: options.model,
        sandbox_id: id,
        root: root.clone(),
        run_dir: run_dir.clone(),
        network_step: None,
        index: CodeIndex::for_checkout(&options.config, repo.git_dir()),
        cancel: options.cancel.clone(),
    })
    .await?;

    let context = format!(
        "A local run of `pitcrew run` in {}, on branch {}. The person who started it reads your final report \
         in their terminal.",
        root.display(),
        branch.as_deref().unwrap_or("(detached HEAD)")
    );
    let instructions = session.instructions();
    let prompt = options.prompts.render(
        Template::Fix,
        &[
            ("task", options.task.trim()),
            ("context", &context),
            ("instructions", &instructions),
        ],
    );
    let outcome = match prompt {
        Ok(prompt) => session.run_agent(prompt, Toolset::Full, options.events).await,
        Err(error) => Err(error.into()),
    };
    // Nothing of the sandbox may run while git reads the working tree: a container that could not
    // be removed may still hold a process racing it, so nothing is committed then.
    let stopped = session.stop().await;
    let outcome = outcome?;

    // Listed before the commit, which may fail half-way through staging.
    let changed_files = repo.changed_files(start).unwrap_or_else(|error| {
        tracing::warn!(%error, "listing the changed files failed");
        Vec::new()
    });
    let (commit, error) = match &stopped {
        Err(err) => (
            workspace::CommitResult::default(),
            Some(format!(
                "the sandbox could not be stopped ({err}), so nothing was committed: a process in it could still \
                 be changing the working tree"
            )),
        ),
        Ok(()) => match repo.commit_all(
            &commit_message(&options.task, &outcome.summary),
            options.config.agent.max_new_file_bytes,
            &[],
            // Local runs commit as the repository's configured user, not as the bot.
            None,
        ) {
            Ok(commit) => (commit, None),
            Err(error) => {
                tracing::error!(%error, "committing the change failed");
                (
                    workspace::CommitResult::default(),
                    Some(format!("the commit failed: {error}")),
                )
            }
        },
    };
    // A nested repository left out is listed as such, not as an added file.
    let changed_files = changed_files
        .into_iter()
        .filter(|file| !commit.skipped_repositories.contains(&file.path))
        .collect();
    let tests = session.ctx.tests().map(|report| TestSummary {
        passed: report.passed,
        failed: report.failed,
        skipped: report.skipped,
        failures: report.failures.iter().map(|f| f.name.clone()).collect(),
    });
    Ok(RunReport {
        status: if error.is_some() {
            "commit_failed"
        } else {
            outcome.stop.label()
        },
        stop: outcome.stop,
        branch,
        commit: commit.commit,
        changed_files,
        skipped_files: commit.skipped_large,
        skipped_repositories: commit.skipped_repositories,
        error,
        tests,
        plan: outcome.plan,
        usage: outcome.usage.usage,
        cost_usd: outcome.usage.cost_usd,
        steps: outcome.steps,
        tool_calls: outcome.tool_calls,
        duration_ms: outcome.duration_ms,
        summary: outcome.summary,
        run_dir: run_dir.display().to_string(),
        sandbox: session.describe(),
    })
}

fn commit_message(task: &str, summary: &str) -> String {
    let first_line = task.lines().find(|l| !l.trim().is_empty()).unwrap_or("task").trim();
    let title = crate::agent::context::cut(first_line, 60);
    let ellipsis = if title.len() < first_line.len() { "…" } else { "" };
    let body = crate::agent::context::cut(summary.trim(), 4_000);
    if body.is_empty() {
        format!("pitcrew: {title}{ellipsis}")
    } else {
        format!("pitcrew: {title}{ellipsis}\n\n{body}")
    }
}

pub(crate) fn run_id() -> String {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("{seconds}-{:04x}", fastrand::u16(..))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_messages_are_titled_by_the_task_and_carry_the_report() {
        assert_eq!(
            commit_message("Fix the parser\nmore detail", "Fixed it."),
            "pitcrew: Fix the parser\n\nFixed it."
        );
        let long = "x".repeat(100);
        assert_eq!(commit_message(&long, ""), format!("pitcrew: {}…", "x".repeat(60)));
    }
}
