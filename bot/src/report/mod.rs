//! Reporting on GitHub: the text of progress comments, check runs, reviews and replies.
//!
//! Everything here is pure rendering and deciding: the job runner describes a job ([`JobInfo`]) and,
//! at the end, what came of it ([`JobResult`]); these modules turn that into the bodies it sends with
//! the GitHub client. No HTTP, no clock except the [`throttle::Throttle`] of live updates.

pub mod baseline;
pub mod check_run;
pub mod chore;
pub mod ci_loop;
pub mod dashboard;
pub mod describe;
pub mod markdown;
pub mod progress;
pub mod replies;
pub mod review;
pub mod tests_delta;
pub mod throttle;
pub mod triage;

use crate::agent::{Budget, StopReason};
use crate::config::command::CommandKind;
use crate::llm::Usage;
use crate::tools::Plan;
use crate::workspace::diff::FileStat;

pub use tests_delta::{TestDelta, TestRun};

/// Who or what started a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestedBy {
    /// A person, by GitHub login (a comment, an assignment, a label).
    User(String),
    /// A failed check or workflow run, by name.
    FailedCheck(String),
    /// A scheduled chore.
    Schedule,
    /// An automatic review or description: what happened to the pull request (`opened`,
    /// `synchronize`, …).
    PullRequestEvent(String),
}

/// The job a report is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobInfo {
    /// The job's id, as stored; it goes into the hidden marker of every body.
    pub id: String,
    /// What the job was asked to do.
    pub kind: CommandKind,
    pub requested_by: RequestedBy,
    /// The instructions that came with the request, as written.
    pub instructions: Option<String>,
    /// The job's check run on GitHub, once created.
    pub check_run_url: Option<String>,
}

/// A commit on GitHub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitRef {
    /// The full id; shown shortened.
    pub sha: String,
    /// Its page on GitHub.
    pub url: String,
}

impl CommitRef {
    pub fn short(&self) -> &str {
        self.sha.get(..7).unwrap_or(&self.sha)
    }
}

/// A branch on GitHub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchRef {
    /// `pitcrew/partial-<job>`.
    pub name: String,
    /// Its page on GitHub (`…/tree/<name>`).
    pub url: String,
    /// The repository's clone URL, for `git fetch` instructions.
    pub clone_url: String,
}

/// The side branch where a job that could not deliver leaves its work.
pub fn partial_branch_name(job_id: &str) -> String {
    format!("pitcrew/partial-{}", crate::workspace::slug(job_id, 40))
}

/// Why a job stopped without delivering what it was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopCause {
    /// A step, cost, wall-time (the job's timeout) or context budget ran out.
    Budget(Budget),
    /// The model kept repeating the same call.
    Stuck { tool: String },
    /// `@agent stop` (by that user), or a shutdown when `None`.
    Cancelled { by: Option<String> },
    /// A newer push (its head) made this automatic review moot; that one is reviewed instead.
    Superseded { head: String },
    /// The change made tests fail that passed before; it was not pushed.
    TestsRegressed,
    /// The branch moved while the job worked and the change conflicts with it in these files.
    PushConflict { files: Vec<String> },
    /// The model provider failed (after retries). The message must be safe to show: the provider's
    /// status and error text, never a request with its headers.
    ModelProvider { message: String },
    /// The sandbox failed: it did not start, or died. Same rule for the message.
    Sandbox { message: String },
    /// Committing the agent's change failed (git's message, which names paths, not secrets); nothing
    /// was pushed and the change is lost with the job's working copy.
    Commit { message: String },
    /// Anything else; the details are in the logs under `reference`, never in the comment.
    Internal { reference: String },
}

impl StopCause {
    /// The cause of an agent run that did not finish; `None` for [`StopReason::Finished`].
    pub fn from_stop(stop: &StopReason) -> Option<StopCause> {
        match stop {
            StopReason::Finished => None,
            StopReason::BudgetExhausted { budget } => Some(StopCause::Budget(*budget)),
            StopReason::Stuck { tool } => Some(StopCause::Stuck { tool: tool.clone() }),
            StopReason::Cancelled => Some(StopCause::Cancelled { by: None }),
            StopReason::ModelError { message } => Some(StopCause::ModelProvider {
                message: message.clone(),
            }),
            StopReason::ToolFailed { message } => Some(StopCause::Sandbox {
                message: message.clone(),
            }),
        }
    }
}

/// How a job ended, as far as GitHub is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobEnd {
    /// The change is on the pull request's branch.
    Pushed {
        branch: String,
        commit: CommitRef,
        /// The branch had moved; the change was replayed onto it.
        rebased: bool,
    },
    /// An issue job opened a pull request.
    PullRequestOpened { number: u64, url: String },
    /// A review was posted.
    Reviewed {
        url: Option<String>,
        inline_comments: usize,
    },
    /// An `explain` or `triage` job answered; the answer is the summary.
    Answered,
    /// A `describe` job wrote its section of the pull request's description (at `url`); the
    /// section's text is the summary.
    Described { url: Option<String> },
    /// The agent finished without changing anything.
    NoChanges,
    /// The pull request comes from a fork that does not allow maintainer edits: the change as a
    /// patch, and the side branch holding it when there is one.
    Patch { diff: String, branch: Option<BranchRef> },
    /// The job stopped short; `saved` is the side branch with the work so far, if there was any.
    Stopped { cause: StopCause, saved: Option<BranchRef> },
}

/// Figures for the footer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunStats {
    pub usage: Usage,
    pub cost_usd: Option<f64>,
    pub duration_ms: u64,
    pub steps: u32,
    pub tool_calls: u32,
}

/// Everything the final reports say about a job.
#[derive(Debug, Clone, PartialEq)]
pub struct JobResult {
    pub job: JobInfo,
    pub end: JobEnd,
    /// The model's final message: what changed and why, or (when it stopped) what is left.
    pub summary: String,
    pub plan: Plan,
    pub changed_files: Vec<FileStat>,
    /// Before and after the change; `None` when the job ran no tests.
    pub tests: Option<TestDelta>,
    pub stats: RunStats,
}

/// The one-line result, in words, for a heading or a check-run title (no markdown links).
pub fn headline(end: &JobEnd) -> String {
    match end {
        JobEnd::Pushed {
            branch,
            commit,
            rebased,
        } => {
            let onto = rebased_note(*rebased);
            format!("Pushed {} to {branch}{onto}", commit.short())
        }
        JobEnd::PullRequestOpened { number, .. } => format!("Opened pull request #{number}"),
        JobEnd::Reviewed { inline_comments, .. } => match inline_comments {
            0 => "Review posted".to_owned(),
            1 => "Review posted with 1 inline comment".to_owned(),
            n => format!("Review posted with {n} inline comments"),
        },
        JobEnd::Answered => "Answered".to_owned(),
        JobEnd::Described { .. } => "Description updated".to_owned(),
        JobEnd::NoChanges => "Finished without changes".to_owned(),
        JobEnd::Patch { .. } => "Done, but the change could not be pushed to the fork".to_owned(),
        JobEnd::Stopped { cause, .. } => match cause {
            StopCause::Budget(budget) => format!("Stopped: {}", replies::budget_words(*budget)),
            StopCause::Stuck { .. } => "Stopped: no progress".to_owned(),
            StopCause::Cancelled { .. } => "Stopped on request".to_owned(),
            StopCause::Superseded { head } => format!("Superseded by a newer push ({})", short_sha(head)),
            StopCause::TestsRegressed => "Not pushed: the change broke tests that passed before".to_owned(),
            StopCause::PushConflict { .. } => "Not pushed: conflict with new commits on the branch".to_owned(),
            StopCause::ModelProvider { .. } => "Failed: the model provider returned an error".to_owned(),
            StopCause::Sandbox { .. } => "Failed: the sandbox failed".to_owned(),
            StopCause::Commit { .. } => "Failed: the change could not be committed".to_owned(),
            StopCause::Internal { .. } => "Failed: internal error".to_owned(),
        },
    }
}

/// A commit's first seven characters, as GitHub shows it.
pub(crate) fn short_sha(sha: &str) -> &str {
    sha.get(..7).unwrap_or(sha)
}

/// What a headline adds after a push that had to rebase onto new commits of the branch.
pub(crate) fn rebased_note(rebased: bool) -> &'static str {
    if rebased { " (rebased onto its new commits)" } else { "" }
}

/// The footer line: tokens, cost, duration, steps.
pub(crate) fn footer(stats: &RunStats) -> String {
    let usage = &stats.usage;
    let cached = usage.cache_read_tokens;
    let input = if cached > 0 {
        format!(
            "{} tokens in ({} cached)",
            markdown::thousands(usage.total_input_tokens()),
            markdown::thousands(cached)
        )
    } else {
        format!("{} tokens in", markdown::thousands(usage.total_input_tokens()))
    };
    format!(
        "{input} · {} out · {} · {} · {} steps, {} tool calls",
        markdown::thousands(usage.output_tokens),
        markdown::cost(stats.cost_usd),
        markdown::duration(stats.duration_ms),
        stats.steps,
        stats.tool_calls
    )
}

/// Changed files as a table with their additions and deletions; at most `max` rows.
pub(crate) fn files_table(files: &[FileStat], max: usize) -> String {
    if files.is_empty() {
        return String::new();
    }
    let mut out = String::from("| File | + | − |\n|---|---:|---:|\n");
    for file in files.iter().take(max) {
        let name = match &file.old_path {
            Some(old) => format!("{} → {}", markdown::code_cell(old), markdown::code_cell(&file.path)),
            None => markdown::code_cell(&file.path),
        };
        let (add, del) = if file.binary {
            ("binary".to_owned(), String::new())
        } else {
            (file.additions.to_string(), file.deletions.to_string())
        };
        let note = match file.change {
            "added" | "deleted" => format!(" ({})", file.change),
            _ => String::new(),
        };
        out.push_str(&format!("| {name}{note} | {add} | {del} |\n"));
    }
    if files.len() > max {
        out.push_str(&format!("\n…and {} more files.\n", files.len() - max));
    }
    out.trim_end().to_owned()
}

/// The plan as a markdown task list. GitHub task lists only know done and not done, so the step in
/// progress and failed steps carry a visible mark as well.
pub(crate) fn plan_list(plan: &Plan) -> String {
    use crate::tools::StepStatus;
    plan.steps
        .iter()
        .map(|step| {
            let title = markdown::inline(&step.title);
            match step.status {
                StepStatus::Done => format!("- [x] {title}"),
                StepStatus::Pending => format!("- [ ] {title}"),
                StepStatus::InProgress => format!("- [ ] ⏳ **{title}** (in progress)"),
                StepStatus::Failed => format!("- [ ] ❌ ~~{title}~~ (failed)"),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// "Requested by @alice" and the like, for a job of `kind`; the login is GitHub's, so the mention is
/// safe and wanted.
pub(crate) fn requested_by(kind: CommandKind, requested: &RequestedBy) -> String {
    match requested {
        RequestedBy::User(login) => format!("@{}", login_text(login)),
        RequestedBy::FailedCheck(name) => format!("the failed check {}", markdown::code_span(name)),
        RequestedBy::Schedule => "the schedule".to_owned(),
        RequestedBy::PullRequestEvent(action) => {
            let what = pull_action_words(action);
            let setting = match kind {
                CommandKind::Describe => "`[review] describe`",
                _ => "`[review] auto`",
            };
            format!("{setting} (the pull request {what})")
        }
    }
}

/// What happened to a pull request, from a `pull_request` event's `action`: "was opened", "got new
/// commits", …
pub(crate) fn pull_action_words(action: &str) -> &'static str {
    match action {
        "opened" => "was opened",
        "reopened" => "was reopened",
        "ready_for_review" => "was marked ready for review",
        "synchronize" => "got new commits",
        _ => "changed",
    }
}

/// A login as GitHub allows it (letters, digits, `-`, and `[bot]`); anything else is replaced, so a
/// login can never carry markup.
pub(crate) fn login_text(login: &str) -> String {
    login
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '[' | ']') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod fixtures;
