//! Live progress on GitHub while a job runs: its check run and its one progress comment show the
//! agent's plan, updated in place at most once every few seconds (GitHub's guidance for objects
//! that change often), and the final state at once when the job ends.

use std::sync::Arc;
use std::time::SystemTime;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::Instrument as _;

use crate::agent::events::{AgentEvent, EventSink};
use crate::github::{
    CheckConclusion, CheckRunId, CheckRunOutput, CheckRunUpdate, CheckStatus, CommentId, GithubClient, GithubError,
    RepoName,
};
use crate::report::throttle::Throttle;
use crate::report::{self, JobInfo};
use crate::tools::Plan;

/// Where the job's progress comment is: in the conversation, or a reply in a review thread.
/// Recorded as `{"kind": "issue", "id": 1}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", content = "id", rename_all = "lowercase")]
pub enum ProgressComment {
    Issue(CommentId),
    Review(CommentId),
}

/// The GitHub objects a job keeps up to date.
#[derive(Clone)]
pub struct Targets {
    pub github: GithubClient,
    pub repo: RepoName,
    pub check_run: Option<CheckRunId>,
    pub comment: Option<ProgressComment>,
    pub info: JobInfo,
    /// What stays around the job's text in a comment it shares with earlier jobs (a review's
    /// summary comment keeps the earlier reviews below): `(before, after)`.
    pub frame: Option<(String, String)>,
}

impl Targets {
    /// Writes the job's text into its comment, inside its frame.
    pub async fn set_comment(&self, body: &str) -> Result<(), GithubError> {
        let framed;
        let body = match &self.frame {
            Some((before, after)) => {
                framed = format!("{before}{body}{after}");
                framed.as_str()
            }
            None => body,
        };
        match self.comment {
            Some(ProgressComment::Issue(id)) => {
                self.github.update_issue_comment(&self.repo, id, body).await?;
            }
            Some(ProgressComment::Review(id)) => {
                self.github.update_review_comment(&self.repo, id, body).await?;
            }
            None => {}
        }
        Ok(())
    }

    /// The same targets writing whole comment bodies (no frame).
    pub fn unframed(&self) -> Targets {
        Targets {
            frame: None,
            ..self.clone()
        }
    }

    pub async fn set_check_run(&self, update: CheckRunUpdate) -> Result<(), GithubError> {
        if let Some(id) = self.check_run {
            self.github.update_check_run(&self.repo, id, &update).await?;
        }
        Ok(())
    }

    /// The check run's and the comment's final state, sent at once.
    pub async fn complete(&self, conclusion: CheckConclusion, output: CheckRunOutput, comment: &str) {
        let update = CheckRunUpdate {
            status: Some(CheckStatus::Completed),
            conclusion: Some(conclusion),
            completed_at: Some(SystemTime::now()),
            details_url: None,
            output: Some(output),
        };
        if let Err(error) = self.set_check_run(update).await {
            tracing::warn!(%error, "could not complete the check run");
        }
        if let Err(error) = self.set_comment(comment).await {
            tracing::warn!(%error, "could not write the final progress comment");
        }
    }
}

/// Forwards the agent's plan and activity to GitHub, throttled.
pub struct Live {
    tx: mpsc::UnboundedSender<Update>,
    task: JoinHandle<()>,
}

enum Update {
    Plan(Plan),
    Activity(String),
}

impl Live {
    pub fn start(targets: Targets) -> Arc<Live> {
        let (tx, rx) = mpsc::unbounded_channel();
        // In the job's span, like the rest of the job (a task does not inherit it).
        let task = tokio::spawn(forward(targets, rx).in_current_span());
        Arc::new(Live { tx, task })
    }

    /// Stops forwarding (after sending what waits): the caller then writes the final state.
    pub async fn close(self: Arc<Self>) {
        match Arc::try_unwrap(self) {
            Ok(live) => {
                drop(live.tx);
                let _ = live.task.await;
            }
            Err(shared) => shared.task.abort(),
        }
    }
}

impl EventSink for Live {
    fn emit(&self, event: &AgentEvent) {
        let update = match event {
            AgentEvent::PlanUpdated { plan, .. } => Update::Plan(plan.clone()),
            AgentEvent::ToolStarted { tool, .. } => Update::Activity(activity(tool)),
            _ => return,
        };
        let _ = self.tx.send(update);
    }
}

fn activity(tool: &str) -> String {
    match tool {
        "run_tests" => "running the tests".into(),
        "bash" => "running a command".into(),
        "edit_file" | "write_file" => "editing files".into(),
        "read_file" | "grep" | "glob" | "list_dir" => "reading the code".into(),
        "task" => "investigating in a sub-agent".into(),
        "update_plan" => "planning".into(),
        other => format!("using `{other}`"),
    }
}

async fn forward(targets: Targets, mut rx: mpsc::UnboundedReceiver<Update>) {
    let mut plan = Plan::default();
    let mut current: Option<String> = None;
    let mut throttle: Throttle<(Plan, Option<String>)> = Throttle::default();
    loop {
        let state = tokio::select! {
            update = rx.recv() => {
                match update {
                    Some(Update::Plan(new)) => plan = new,
                    Some(Update::Activity(text)) => {
                        // Activity alone changes often: it rides along with the next plan update.
                        current = Some(text);
                        if throttle.has_pending() {
                            continue;
                        }
                    }
                    None => break,
                }
                throttle.offer((plan.clone(), current.clone()))
            }
            state = throttle.ready(), if throttle.has_pending() => Some(state),
        };
        if let Some((plan, activity)) = state {
            send(&targets, &plan, activity.as_deref()).await;
        }
    }
    if throttle.has_pending() {
        let (plan, activity) = throttle.finish((plan, current));
        send(&targets, &plan, activity.as_deref()).await;
    }
}

async fn send(targets: &Targets, plan: &Plan, activity: Option<&str>) {
    let output = report::check_run::in_progress(&targets.info, plan, activity);
    let update = CheckRunUpdate {
        status: Some(CheckStatus::InProgress),
        output: Some(output),
        ..CheckRunUpdate::default()
    };
    if let Err(error) = targets.set_check_run(update).await {
        tracing::warn!(%error, "could not update the check run");
    }
    let body = report::progress::live(&targets.info, plan, activity);
    if let Err(error) = targets.set_comment(&body).await {
        tracing::warn!(%error, "could not update the progress comment");
    }
}
