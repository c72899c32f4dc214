//! `review`: a pull request review by the read-only agent. The diff is the pull request's own (from
//! the merge base of its base and head, as GitHub shows it); the agent records findings with the
//! `review_comment` tool; they are posted as one `COMMENT` review on the head commit, inline only on
//! lines the diff shows, with everything else listed in its body. Nothing is committed or pushed.
//!
//! The read-only machinery shared with [`super::explain`] lives here too: leasing a pull request's
//! head, running the agent without write tools, and writing the final check run and comment.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use git2::Oid;

use crate::agent::Outcome;
use crate::agent::events::EventSink;
use crate::config::repo::EffectiveSettings;
use crate::github::{GithubError, NewReview, PullRequest, ReviewEvent};
use crate::jobs::Finish;
use crate::prompts::Template;
use crate::report::{self, JobEnd, StopCause};
use crate::session::{AgentSession, Toolset};
use crate::tools::ReviewFinding;
use crate::tools::{ReviewComment, Tool};
use crate::workspace::diff::{DiffPositions, unified_diff};
use crate::workspace::{LocalRepo, WorkspaceError};

use super::live::{Live, Targets};
use super::record::JobRecord;
use super::session::{Spent, agent_run, run_dir};
use super::{HandlerError, JobEnv};

/// The diff shown in a review prompt is cut past this many bytes: a larger one would crowd out the
/// code the agent reads, and the agent can read the changed files itself.
pub const MAX_PROMPT_DIFF_BYTES: usize = 60 * 1024;

/// `@agent review` on a pull request.
pub async fn on_pull_request(env: &JobEnv) -> Result<(Finish, Spent), HandlerError> {
    let pull = env.github.get_pull(&env.repo, env.number()?).await?;
    let repo_config = env.repo_config().await?;
    let settings = repo_config.apply(env.config());
    let targets = super::start_reporting(env, Some(&pull.head.sha)).await?;
    match review(env, &pull, &settings, &targets).await {
        Ok(done) => Ok(done),
        Err(error) => Err(super::report_failure(env, &targets, error).await),
    }
}

async fn review(
    env: &JobEnv,
    pull: &PullRequest,
    settings: &EffectiveSettings,
    targets: &Targets,
) -> Result<(Finish, Spent), HandlerError> {
    let lease = super::lease_pull_head(env, pull).await?;
    // The lease's repository handle may not be held across an await: the diff is made first.
    let reviewed = match pull_diff(lease.repo(), pull) {
        Ok(diff) => review_on(env, pull, settings, targets, lease.path().to_owned(), diff).await,
        Err(error) => Err(error),
    };
    lease.release().await;
    let (outcome, findings, end) = reviewed?;
    finish(env, targets, end, outcome, &findings, settings).await
}

/// The agent's review of the leased head, and the review posted when it finished.
async fn review_on(
    env: &JobEnv,
    pull: &PullRequest,
    settings: &EffectiveSettings,
    targets: &Targets,
    root: PathBuf,
    diff: String,
) -> Result<(Outcome, Vec<ReviewFinding>, JobEnd), HandlerError> {
    let positions = DiffPositions::from_unified(&diff);
    let request = env
        .request
        .instructions
        .clone()
        .filter(|text| !text.trim().is_empty())
        .unwrap_or_else(|| "Review this pull request.".to_owned());
    let context = super::pull_context(
        env,
        pull,
        "You are reviewing it: change nothing. Your findings and your final message become a review on the pull \
         request.",
    )?;
    let shown_diff = if diff.trim().is_empty() {
        "(The pull request changes nothing against its base.)".to_owned()
    } else {
        cap_diff(&diff, MAX_PROMPT_DIFF_BYTES)
    };
    let findings = Arc::new(Mutex::new(Vec::new()));
    let tool: Arc<dyn Tool> = Arc::new(ReviewComment::new(findings.clone()).with_diff(positions.clone()));
    let outcome = run_read_only(env, settings, targets, &root, vec![tool], |session| {
        env.services.prompts.render(
            Template::Review,
            &[
                ("request", request.trim()),
                ("context", &context),
                ("diff", &shown_diff),
                ("instructions", &session.instructions()),
            ],
        )
    })
    .await?;
    let findings = findings.lock().unwrap_or_else(PoisonError::into_inner).clone();
    let end = match StopCause::from_stop(&outcome.stop) {
        // The findings so far still reach the check run's annotations.
        Some(cause) => JobEnd::Stopped { cause, saved: None },
        None => post_review(env, pull, &outcome.summary, &findings, &positions).await?,
    };
    Ok((outcome, findings, end))
}

/// Posts the review: inline comments on the diff's lines, the rest in its body. Should GitHub refuse
/// the inline comments (its diff disagreeing with ours), every finding goes to the body instead, so
/// none is lost.
async fn post_review(
    env: &JobEnv,
    pull: &PullRequest,
    summary: &str,
    findings: &[ReviewFinding],
    positions: &DiffPositions,
) -> Result<JobEnd, HandlerError> {
    let job_id = env.job_id();
    let draft = report::review::draft(&job_id, summary, findings, positions);
    let post = |draft: report::review::ReviewDraft| NewReview {
        commit_id: Some(pull.head.sha.clone()),
        body: draft.body,
        event: ReviewEvent::Comment,
        comments: draft.comments,
    };
    let inline = draft.comments.len();
    let posted = env.github.create_review(&env.repo, pull.number, &post(draft)).await;
    let (review, inline) = match posted {
        Ok(review) => (review, inline),
        Err(GithubError::Validation { message, .. }) if inline > 0 => {
            tracing::warn!(%message, "GitHub refused the inline comments; posting every finding in the body");
            let draft = report::review::draft(&job_id, summary, findings, &DiffPositions::default());
            (env.github.create_review(&env.repo, pull.number, &post(draft)).await?, 0)
        }
        Err(error) => return Err(error.into()),
    };
    let posted = JobRecord::ReviewPosted {
        review: review.id,
        inline_comments: inline,
    };
    let _ = env.control.record(&posted).await;
    Ok(JobEnd::Reviewed {
        url: Some(review.html_url).filter(|url| !url.is_empty()),
        inline_comments: inline,
    })
}

/// The pull request's diff as GitHub shows it: from the merge base of its base and head to its head.
pub(super) fn pull_diff(repo: &LocalRepo, pull: &PullRequest) -> Result<String, HandlerError> {
    let raw = repo.raw();
    let head = Oid::from_str(pull.head.sha.as_str()).map_err(WorkspaceError::from)?;
    // The base commit GitHub named, else the base branch as the mirror has it.
    let base = Oid::from_str(pull.base.sha.as_str())
        .ok()
        .filter(|oid| raw.find_commit(*oid).is_ok())
        .or_else(|| {
            raw.refname_to_id(&format!("refs/remotes/origin/{}", pull.base.branch))
                .ok()
        })
        .ok_or_else(|| {
            HandlerError::Other(format!(
                "the base branch `{}` of the pull request is not in the repository's mirror",
                pull.base.branch
            ))
        })?;
    let merge_base = raw.merge_base(base, head).map_err(|_| {
        HandlerError::Other(format!(
            "the pull request's head has no history in common with `{}`",
            pull.base.branch
        ))
    })?;
    Ok(unified_diff(repo, merge_base, Some(head))?)
}

/// `diff` cut to about `max` bytes at a line end, with a note of what was cut and which files the
/// agent must read for itself.
pub(super) fn cap_diff(diff: &str, max: usize) -> String {
    if diff.len() <= max {
        return diff.to_owned();
    }
    let cut = crate::agent::context::cut(diff, max);
    let cut = cut.rfind('\n').map_or(cut, |end| &cut[..=end]);
    // Every file whose section does not end inside the part shown.
    let mut starts: Vec<(usize, &str)> = Vec::new();
    let mut offset = 0;
    for line in diff.split_inclusive('\n') {
        if let Some(header) = line.strip_prefix("diff --git ") {
            let path = header
                .trim_end()
                .rsplit_once(" b/")
                .map_or(header.trim_end(), |(_, b)| b);
            starts.push((offset, path));
        }
        offset += line.len();
    }
    let mut partial = Vec::new();
    for (index, (_, path)) in starts.iter().enumerate() {
        let end = starts.get(index + 1).map_or(diff.len(), |(next, _)| *next);
        if end > cut.len() {
            partial.push(format!("`{path}`"));
        }
    }
    format!(
        "{cut}\n[The diff is cut here: it is {} KB, and only the first {} KB are shown. Read the changes to these \
         files with read_file: {}.]",
        diff.len() / 1024,
        cut.len() / 1024,
        partial.join(", ")
    )
}

/// Runs the read-only agent (plus `extra_tools`) over `root` in the sandbox, with the prompt that
/// `prompt` renders once the session is up (it may read the repository's instructions).
pub(super) async fn run_read_only(
    env: &JobEnv,
    settings: &EffectiveSettings,
    targets: &Targets,
    root: &Path,
    extra_tools: Vec<Arc<dyn Tool>>,
    prompt: impl FnOnce(&AgentSession) -> Result<String, crate::prompts::PromptError>,
) -> Result<Outcome, HandlerError> {
    let run_dir = run_dir(env.config(), &env.job_id());
    let session = AgentSession::start(agent_run(env, settings, root, run_dir)).await?;
    let prompt = match prompt(&session) {
        Ok(prompt) => prompt,
        Err(error) => {
            let _ = session.stop().await;
            return Err(error.into());
        }
    };
    let live = Live::start(targets.clone());
    let outcome = session
        .run_agent(
            prompt,
            Toolset::ReadOnly(extra_tools),
            live.clone() as Arc<dyn EventSink>,
        )
        .await;
    live.close().await;
    let _ = session.stop().await;
    Ok(outcome?)
}

/// Writes the final check run (with `findings` as annotations) and progress comment, and the job's
/// end for the store.
pub(super) async fn finish(
    env: &JobEnv,
    targets: &Targets,
    end: JobEnd,
    outcome: Outcome,
    findings: &[ReviewFinding],
    settings: &EffectiveSettings,
) -> Result<(Finish, Spent), HandlerError> {
    let ended = super::Ended {
        end,
        outcome,
        changed_files: Vec::new(),
        tests: None,
    };
    Ok(super::conclude(env, targets, ended, findings, settings).await)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn section(path: &str, lines: usize) -> String {
        let mut text =
            format!("diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1,{lines} +1,{lines} @@\n");
        for n in 0..lines {
            text.push_str(&format!("+line {n} of {path}\n"));
        }
        text
    }

    #[test]
    fn a_small_diff_is_shown_whole() {
        let diff = section("a.rs", 3);
        assert_eq!(cap_diff(&diff, 10_000), diff);
    }

    #[test]
    fn a_large_diff_is_cut_at_a_line_end_and_names_the_files_not_shown_in_full() {
        let first = section("a.rs", 10);
        let diff = format!("{first}{}{}", section("b.rs", 200), section("c d.rs", 5));
        let max = first.len() + 100;
        let capped = cap_diff(&diff, max);
        let (shown, note) = capped.split_once("\n[The diff is cut here").unwrap();
        assert!(shown.len() <= max, "{}", shown.len());
        assert!(shown.ends_with('\n'));
        assert!(diff.starts_with(shown));
        assert!(shown.starts_with(&first));
        assert!(note.ends_with("with read_file: `b.rs`, `c d.rs`.]"), "{note}");
    }
}
