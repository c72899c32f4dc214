//! `review`: a pull request review by the read-only agent, asked for (`@agent review`) or automatic
//! (`[review] auto`: as the pull request opens, is reopened or marked ready, and gets new commits).
//!
//! The first review covers the whole pull request (its diff from the merge base, as GitHub shows
//! it); later ones only what changed since the last reviewed head, whose commit the pull request's
//! summary comment records ([`crate::review::state`]); a force-push that only rebased reviewed
//! changes is recognised by patch id and not reviewed again ([`crate::review::scope`]). Files the
//! repository ignores, generated, vendored and binary files are left out and named in the coverage
//! line. Large diffs are reviewed in chunks of related files, one agent run each in one sandbox,
//! sharing the job's budgets. The agent may run the tests and commands to confirm a finding.
//!
//! Findings carry a fingerprint; those already on the pull request are never posted again. New
//! findings go inline (at most `[review] max_comments`, by severity) in one review — `COMMENT`, or
//! `REQUEST_CHANGES` when `[review] event = "request_changes"` and a verified blocking finding
//! exists; a later review without one dismisses the bot's earlier request. Earlier findings on code
//! the new commits changed are rechecked: an addressed one is answered in its thread ("Addressed in
//! abc1234") and the thread resolved (GraphQL's `resolveReviewThread`, the only way to resolve one);
//! a thread someone resolved by hand is left alone. Everything else is in the one summary comment per pull
//! request, edited in place (the newest review on top, earlier ones collapsed), which is also where
//! the review's progress shows while it runs. Nothing is committed or pushed.
//!
//! The read-only machinery shared with [`super::explain`] and [`super::triage`] lives here too:
//! running the agent without write tools, and writing the final check run and comment.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Instant, SystemTime};

use git2::Oid;

use crate::agent::Outcome;
use crate::agent::events::EventSink;
use crate::config::repo::{EffectiveSettings, ReviewSettings, ReviewVerdict};
use crate::github::{
    CheckStatus, CommentId, GithubError, IssueComment, NewCheckRun, NewReview, PullRequest, ReviewComment, ReviewEvent,
};
use crate::jobs::Finish;
use crate::prompts::Template;
use crate::report::review::{Covered, Placement, Rechecked, SummaryInput};
use crate::report::{self, JobEnd, StopCause, markdown};
use crate::review::Severity;
use crate::review::chunks;
use crate::review::coverage::{self, Counted, Coverage};
use crate::review::diff::{FileDiff, split};
use crate::review::fingerprint::{Fingerprint, Posted, words};
use crate::review::scope::{self, Scope, Unchanged};
use crate::review::state::{ReviewState, SUMMARY_MARKER};
use crate::session::{AgentSession, INSTRUCTION_FILES, Toolset, format_instructions};
use crate::tools::{Recheck, RecheckFinding, ReviewComment as ReviewCommentTool, ReviewFinding, Tool};
use crate::triggers::JobSource;
use crate::workspace::diff::{DiffPositions, unified_diff};
use crate::workspace::{LocalRepo, WorkspaceError};

use super::live::{Live, ProgressComment, Targets};
use super::record::JobRecord;
use super::session::{Spent, agent_run, run_dir};
use super::{HandlerError, JobEnv};

/// The diff shown in a review prompt is cut past this many bytes: a larger one would crowd out the
/// code the agent reads, and the agent can read the changed files itself.
pub const MAX_PROMPT_DIFF_BYTES: usize = 60 * 1024;

/// Earlier findings listed in a prompt as "already raised" at most.
const MAX_EARLIER_LISTED: usize = 40;
/// Earlier findings one review rechecks at most.
const MAX_RECHECKS: usize = 20;
/// An earlier finding is rechecked when the new commits added a line this close to it.
const RECHECK_DISTANCE: u64 = 3;
/// The steps each chunk gets at least, whatever the share of the job's budget.
const MIN_CHUNK_STEPS: u32 = 6;

/// `@agent review` on a pull request, or an automatic review of one that opened or changed.
pub async fn on_pull_request(env: &JobEnv) -> Result<(Finish, Spent), HandlerError> {
    let number = env.number()?;
    let pull = env.github.get_pull(&env.repo, number).await?;
    let repo_config = env.repo_config().await?;
    let settings = repo_config.apply(env.config());
    let automatic = matches!(env.request.source, JobSource::PullRequest { .. });
    if automatic && (pull.state != "open" || pull.draft) {
        return Ok(quiet(
            env,
            &format!("pull request #{number} is closed or a draft now: not reviewed"),
        )
        .await);
    }
    let bot = env.config().github.bot_name.clone();
    let summary = find_summary(env, &pull, &bot).await?;
    let previous = summary.as_ref().and_then(|c| ReviewState::read(&c.body));
    let lease = super::lease_pull_head(env, &pull).await?;
    // The lease's repository handle may not be held across an await: the git work is done first.
    let prepared = prepare(lease.repo(), &pull, previous.as_ref(), &settings.review, automatic);
    let prepared = match prepared {
        Ok(prepared) => prepared,
        Err(error) => {
            lease.release().await;
            return Err(error);
        }
    };
    if let Some(why) = prepared.nothing_new(automatic) {
        lease.release().await;
        // The new head is what the next review compares with (a rebase moved the reviewed changes).
        if let (Some(summary), Some(state)) = (&summary, &prepared.state_now)
            && previous.as_ref() != Some(state)
        {
            let body = format!(
                "{}{}",
                crate::review::state::without_state(&summary.body).trim_end(),
                format_args!("\n{}", state.to_marker())
            );
            env.github.update_issue_comment(&env.repo, summary.id, &body).await?;
        }
        return Ok(quiet(env, &why).await);
    }
    let targets = match start_reporting(env, &pull, summary.as_ref(), previous.as_ref()).await {
        Ok(targets) => targets,
        Err(error) => {
            lease.release().await;
            return Err(error);
        }
    };
    let result = review(
        env,
        &pull,
        &settings,
        &targets,
        lease.path(),
        &prepared,
        previous.as_ref(),
        &bot,
    )
    .await;
    lease.release().await;
    super::closed_out(env, &targets, result).await
}

/// An automatic job that found nothing to do (a review with nothing new to look at, a description
/// of a pull request closed since): no check run, no comment; the job succeeds saying why.
pub(super) async fn quiet(env: &JobEnv, why: &str) -> (Finish, Spent) {
    tracing::info!(why, "nothing to do");
    let finished = JobRecord::Finished {
        headline: why.to_owned(),
    };
    let _ = env.control.record(&finished).await;
    let summary = super::record::Summary {
        headline: why.to_owned(),
        conclusion: crate::github::CheckConclusion::Skipped,
        commit: None,
        pull_request: None,
        summary: why.to_owned(),
        report: why.to_owned(),
        detail: None,
    };
    (super::succeeded(&summary), Spent::default())
}

/// The bot's summary comment on the pull request, if it has one (the first, should there be two).
async fn find_summary(env: &JobEnv, pull: &PullRequest, bot: &str) -> Result<Option<IssueComment>, HandlerError> {
    let comments = env.github.list_issue_comments(&env.repo, pull.number).await?;
    Ok(comments
        .items
        .into_iter()
        .find(|c| c.user.login.eq_ignore_ascii_case(bot) && c.body.starts_with(SUMMARY_MARKER)))
}

/// What the git side of a review found.
struct Prepared {
    head: Oid,
    merge_base: Oid,
    /// The pull request's diff, whole.
    diff: String,
    files: Vec<FileDiff>,
    scope: Scope,
    /// Indices into `files` of the files this review reads.
    reviewable: Vec<usize>,
    coverage: Coverage,
    /// The repository's agent instructions, from the pull request's merge base (a pull request
    /// cannot rewrite the rules its own review follows).
    instructions: String,
    /// What the summary's state says after this review.
    state_now: Option<ReviewState>,
}

impl Prepared {
    /// Why there is nothing to review, when there is nothing: an automatic review of a head already
    /// reviewed, of a force-push that only rebased, of commits that changed no file of the pull
    /// request, or of files all left out. A review someone asked for always runs.
    fn nothing_new(&self, automatic: bool) -> Option<String> {
        if !automatic {
            return None;
        }
        match &self.scope {
            Scope::Unchanged(Unchanged::SameHead) => Some("this head was reviewed already".into()),
            Scope::Unchanged(Unchanged::Rebased) => {
                Some("the push only rebased changes that were reviewed already".into())
            }
            Scope::Unchanged(Unchanged::BaseOnly) => {
                Some("the new commits change none of the pull request's own files".into())
            }
            Scope::Since { .. } if self.reviewable.is_empty() => {
                Some("the new commits change only files the review leaves out".into())
            }
            _ => None,
        }
    }
}

/// Diffs the pull request, decides the scope from the last review's state, and sorts the files
/// into reviewed and left out.
fn prepare(
    repo: &LocalRepo,
    pull: &PullRequest,
    previous: Option<&ReviewState>,
    review: &ReviewSettings,
    automatic: bool,
) -> Result<Prepared, HandlerError> {
    let raw = repo.raw();
    let head = Oid::from_str(pull.head.sha.as_str()).map_err(WorkspaceError::from)?;
    let base = base_commit(repo, pull)?;
    let merge_base = raw.merge_base(base, head).map_err(|_| {
        HandlerError::Other(format!(
            "the pull request's head has no history in common with `{}`",
            pull.base.branch
        ))
    })?;
    let diff = unified_diff(repo, merge_base, Some(head))?;
    let files = split(&diff);
    let mut scope = scope::scope(repo, previous, head, &files)?;
    if !automatic && matches!(scope, Scope::Unchanged(_)) {
        // Asked for: the whole pull request again (findings already posted are still not repeated).
        scope = Scope::Whole;
    }
    let mut coverage = Coverage {
        total_files: files.len(),
        total_lines: files.iter().map(FileDiff::changed_lines).sum(),
        since: match &scope {
            Scope::Since { since, .. } => Some(since.clone()),
            _ => None,
        },
        ..Coverage::default()
    };
    let mut reviewable = Vec::new();
    for (index, file) in files.iter().enumerate() {
        if !scope.covers(&file.path) {
            continue;
        }
        let header = scope::file_at(repo, head, &file.path, coverage::HEADER_BYTES);
        let counted = Counted {
            path: file.path.clone(),
            lines: file.changed_lines(),
        };
        match coverage::skip_reason(review, file, header.as_deref()) {
            Some(why) => coverage.skipped.push((counted, why)),
            None => {
                coverage.reviewed.push(counted);
                reviewable.push(index);
            }
        }
    }
    let instructions = format_instructions(INSTRUCTION_FILES.iter().filter_map(|name| {
        let bytes = scope::file_at(repo, merge_base, name, 256 * 1024)?;
        Some((*name, String::from_utf8_lossy(&bytes).into_owned()))
    }));
    let state_now = Some(ReviewState {
        head: head.to_string(),
        merge_base: merge_base.to_string(),
        fingerprints: previous.map(|p| p.fingerprints.clone()).unwrap_or_default(),
    });
    Ok(Prepared {
        head,
        merge_base,
        diff,
        files,
        scope,
        reviewable,
        coverage,
        instructions,
        state_now,
    })
}

/// The base commit GitHub named, else the base branch as the mirror has it.
fn base_commit(repo: &LocalRepo, pull: &PullRequest) -> Result<Oid, HandlerError> {
    let raw = repo.raw();
    Oid::from_str(pull.base.sha.as_str())
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
        })
}

/// The check run on the head, and the summary comment (made now if there is none) as the place
/// the review's progress shows, above the earlier reviews, which stay as they were.
async fn start_reporting(
    env: &JobEnv,
    pull: &PullRequest,
    summary: Option<&IssueComment>,
    previous: Option<&ReviewState>,
) -> Result<Targets, HandlerError> {
    let mut info = env.info();
    if let JobSource::PullRequest { action } = &env.request.source {
        info.requested_by = report::RequestedBy::PullRequestEvent(action.clone());
    }
    let output = report::check_run::in_progress(&info, &Default::default(), Some("starting"));
    let check_run = env
        .github
        .create_check_run(
            &env.repo,
            &NewCheckRun {
                name: "pitcrew".into(),
                head_sha: pull.head.sha.clone(),
                status: CheckStatus::InProgress,
                started_at: Some(SystemTime::now()),
                conclusion: None,
                completed_at: None,
                details_url: None,
                external_id: Some(env.job_id()),
                output: Some(output),
            },
        )
        .await?;
    info.check_run_url = Some(check_run.html_url.clone()).filter(|url| !url.is_empty());
    let earlier = earlier_sections(summary.map(|c| c.body.as_str()));
    let frame = frame(&earlier, previous);
    let live = report::progress::live(&info, &Default::default(), Some("starting"));
    let framed = format!("{}{live}{}", frame.0, frame.1);
    let comment = match summary {
        Some(comment) => {
            env.github.update_issue_comment(&env.repo, comment.id, &framed).await?;
            comment.id
        }
        None => {
            env.github
                .create_issue_comment(&env.repo, pull.number, &framed)
                .await?
                .id
        }
    };
    let reporting = JobRecord::Reporting {
        check_run: Some(check_run.id),
        check_run_url: info.check_run_url.clone(),
        comment: ProgressComment::Issue(comment),
    };
    let _ = env.control.record(&reporting).await;
    Ok(Targets {
        github: env.github.clone(),
        repo: env.repo.clone(),
        check_run: Some(check_run.id),
        comment: Some(ProgressComment::Issue(comment)),
        info,
        frame: Some(frame),
    })
}

/// The reviews a summary comment holds, newest first: its top section when it is a finished
/// review (not an earlier job's progress or failure), then the collapsed ones.
fn earlier_sections(body: Option<&str>) -> Vec<String> {
    let Some(body) = body else {
        return Vec::new();
    };
    let (current, mut earlier) = report::review::sections(body);
    if let Some(current) = current.filter(|c| c.starts_with("### pitcrew review")) {
        earlier.insert(0, current);
    }
    earlier
}

/// What stays around the job's own text in the summary comment: the marker before, the earlier
/// reviews and the last review's state after.
fn frame(earlier: &[String], state: Option<&ReviewState>) -> (String, String) {
    const HOLE: &str = "\u{0}pitcrew-review-body\u{0}";
    let whole = report::review::summary_comment(HOLE, earlier, state);
    match whole.split_once(HOLE) {
        Some((before, after)) => (before.to_owned(), after.to_owned()),
        None => (format!("{SUMMARY_MARKER}\n"), String::new()),
    }
}

/// One chunk's agent run: what it found and said.
struct ChunkRun {
    outcome: Outcome,
    findings: Vec<ReviewFinding>,
    rechecks: Vec<Recheck>,
}

/// An earlier finding of the bot's, from its inline comment.
#[derive(Debug, Clone)]
struct Earlier {
    comment: ReviewComment,
    fingerprint: Option<Fingerprint>,
    severity: Option<Severity>,
    verified: bool,
    /// Answered in its thread already (a reply of the bot's says it was addressed), or its thread
    /// was resolved.
    addressed: bool,
    /// Its review thread's node id and whether it is resolved, when GraphQL answered.
    thread: Option<(String, bool)>,
}

impl Earlier {
    fn title(&self) -> String {
        finding_text(&self.comment.body)
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned()
    }
}

/// The finding's own words in one of the bot's inline comments: without its label line and marker.
fn finding_text(body: &str) -> String {
    let mut lines: Vec<&str> = body.lines().collect();
    if lines.first().is_some_and(|l| l.starts_with("**") && l.contains('·')) {
        lines.remove(0);
    }
    lines
        .into_iter()
        .filter(|l| !l.trim_start().starts_with("<!-- pitcrew:finding"))
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned()
}

/// The severity and verification a bot comment's label line says.
fn label_of(body: &str) -> (Option<Severity>, bool) {
    let first = body.lines().next().unwrap_or_default();
    let severity = Severity::ALL.into_iter().find(|s| first.contains(s.as_str()));
    (severity, !first.contains("unverified"))
}

/// The bot's inline comments on the pull request: the findings it raised, with the replies that
/// closed them and their threads (resolved or not). Without the threads (GraphQL refused), a
/// finding counts as open until the bot answered it addressed.
async fn earlier_findings(env: &JobEnv, pull: &PullRequest, bot: &str) -> Result<Vec<Earlier>, HandlerError> {
    let comments = env.github.list_review_comments(&env.repo, pull.number).await?.items;
    let threads: BTreeMap<u64, (String, bool)> = match env.github.review_threads(&env.repo, pull.number).await {
        Ok(threads) => threads
            .into_iter()
            .filter_map(|t| Some((t.first_comment()?.id?.0, (t.id.clone(), t.resolved))))
            .collect(),
        Err(error) => {
            tracing::warn!(%error, "could not read the pull request's review threads; none will be resolved");
            BTreeMap::new()
        }
    };
    let addressed: BTreeSet<u64> = comments
        .iter()
        .filter(|c| c.user.login.eq_ignore_ascii_case(bot) && c.body.starts_with("Addressed in "))
        .filter_map(|c| c.in_reply_to_id)
        .collect();
    Ok(comments
        .into_iter()
        .filter(|c| c.user.login.eq_ignore_ascii_case(bot) && c.in_reply_to_id.is_none())
        .filter_map(|comment| {
            let fingerprint = Fingerprint::in_comment(&comment.body);
            fingerprint.as_ref()?;
            let (severity, verified) = label_of(&comment.body);
            let thread = threads.get(&comment.id.0).cloned();
            Some(Earlier {
                addressed: addressed.contains(&comment.id.0) || thread.as_ref().is_some_and(|(_, resolved)| *resolved),
                fingerprint,
                severity,
                verified,
                thread,
                comment,
            })
        })
        .collect())
}

/// Whether the new commits touched the code an earlier finding is about: its line moved out of the
/// diff (GitHub marks it outdated) or an added line of the scope is close to it.
fn touched(earlier: &Earlier, scope: &Scope, files: &[FileDiff]) -> bool {
    let path = &earlier.comment.path;
    let added: Option<&BTreeSet<u32>> = match scope {
        Scope::Since { touched, .. } => touched.get(path),
        Scope::Whole => files.iter().find(|f| &f.path == path).map(|f| &f.added),
        Scope::Unchanged(_) => None,
    };
    let Some(added) = added else {
        return false;
    };
    match earlier.comment.line {
        None => true,
        Some(line) => added.iter().any(|a| u64::from(*a).abs_diff(line) <= RECHECK_DISTANCE),
    }
}

#[expect(clippy::too_many_arguments, reason = "one review's inputs, each used once")]
async fn review(
    env: &JobEnv,
    pull: &PullRequest,
    settings: &EffectiveSettings,
    targets: &Targets,
    root: &Path,
    prepared: &Prepared,
    previous: Option<&ReviewState>,
    bot: &str,
) -> Result<(Finish, Spent), HandlerError> {
    let started = Instant::now();
    let earlier = earlier_findings(env, pull, bot).await?;
    let open: Vec<&Earlier> = earlier.iter().filter(|e| !e.addressed).collect();
    let to_recheck: Vec<&Earlier> = open
        .iter()
        .copied()
        .filter(|e| touched(e, &prepared.scope, &prepared.files))
        .take(MAX_RECHECKS)
        .collect();
    let positions = DiffPositions::from_unified(&prepared.diff);
    let reviewable: Vec<&FileDiff> = prepared.reviewable.iter().map(|i| &prepared.files[*i]).collect();
    let chunks = chunks::chunk(&reviewable);

    let run_dir = run_dir(env.config(), &env.job_id());
    let mut session = AgentSession::start(agent_run(env, settings, root, run_dir)).await?;
    let live = Live::start(targets.clone());
    let mut runs: Vec<(Vec<usize>, Result<ChunkRun, HandlerError>)> = Vec::new();
    let mut spent = Spent::default();
    let mut rechecks_asked = false;
    // With no file to read (every one left out) the agent is not run: the summary says so.
    for (n, chunk) in chunks.iter().enumerate() {
        if env.control.is_cancelled() {
            break;
        }
        let left = chunks.len() - n;
        let steps_left = settings.max_steps.saturating_sub(spent.steps);
        let cost_left = settings
            .max_cost_usd
            .map(|max| (max - spent.cost_usd.unwrap_or(0.0)).max(0.0));
        let time_left = settings.max_wall_time.saturating_sub(started.elapsed());
        if steps_left == 0 || cost_left.is_some_and(|c| c <= 0.0) || time_left.is_zero() {
            break;
        }
        let share = |total: u32| (total / u32::try_from(left).unwrap_or(u32::MAX)).max(MIN_CHUNK_STEPS);
        session.set_budget(
            share(steps_left).min(steps_left),
            cost_left.map(|c| c / left as f64),
            time_left / u32::try_from(left).unwrap_or(1).max(1),
        );
        // Earlier findings are rechecked by the chunk that holds their file (the first, for a file
        // no chunk holds).
        let chunk_files: BTreeSet<&str> = chunk.iter().map(|i| reviewable[*i].path.as_str()).collect();
        let rechecks: Vec<&Earlier> = to_recheck
            .iter()
            .copied()
            .filter(|e| {
                chunk_files.contains(e.comment.path.as_str())
                    || (n == 0 && !reviewable.iter().any(|f| f.path == e.comment.path))
            })
            .collect();
        rechecks_asked |= !rechecks.is_empty();
        let run = run_chunk(
            env,
            &session,
            &live,
            pull,
            settings,
            prepared,
            (n, chunks.len(), chunk, &reviewable),
            (&open, &to_recheck, &rechecks),
            &positions,
        )
        .await;
        if let Ok(run) = &run {
            spent.add(&Spent::from_outcome(&run.outcome));
        }
        let failed = run.is_err();
        runs.push((chunk.clone(), run));
        if failed {
            break;
        }
    }
    live.close().await;
    let _ = session.stop().await;

    // A chunk that failed outright fails the review (its findings so far are lost with it); one
    // stopped by a budget or a stop keeps what it found and names its files as not reviewed.
    let mut findings: Vec<ReviewFinding> = Vec::new();
    let mut summaries: Vec<(Vec<usize>, String)> = Vec::new();
    let mut rechecked: Vec<Recheck> = Vec::new();
    let mut stopped: Option<StopCause> = None;
    let mut last_outcome: Option<Outcome> = None;
    let mut done_chunks = BTreeSet::new();
    for (n, (chunk, run)) in runs.into_iter().enumerate() {
        let run = run?;
        findings.extend(run.findings);
        rechecked.extend(run.rechecks);
        match StopCause::from_stop(&run.outcome.stop) {
            Some(cause) => stopped = stopped.or(Some(cause)),
            None => {
                done_chunks.insert(n);
            }
        }
        summaries.push((chunk, run.outcome.summary.clone()));
        last_outcome = Some(run.outcome);
    }
    let mut coverage = prepared.coverage.clone();
    for (n, chunk) in chunks.iter().enumerate() {
        if done_chunks.contains(&n) {
            continue;
        }
        for index in chunk {
            let file = reviewable[*index];
            coverage.reviewed.retain(|c| c.path != file.path);
            coverage.unfinished.push(Counted {
                path: file.path.clone(),
                lines: file.changed_lines(),
            });
        }
    }
    // Stopped on request (or superseded by a newer push): nothing is posted; the report says so.
    if let Some(cause @ (StopCause::Cancelled { .. } | StopCause::Superseded { .. })) = &stopped {
        let outcome = last_outcome.unwrap_or_else(|| empty_outcome(&spent));
        let end = JobEnd::Stopped {
            cause: cause.clone(),
            saved: None,
        };
        return Ok(finish(env, targets, end, outcome, &findings, settings).await);
    }
    if env.control.is_cancelled() {
        let outcome = last_outcome.unwrap_or_else(|| empty_outcome(&spent));
        let end = JobEnd::Stopped {
            cause: StopCause::Cancelled { by: None },
            saved: None,
        };
        return Ok(finish(env, targets, end, outcome, &findings, settings).await);
    }

    let head = prepared.head.to_string();
    let fingerprinted = fingerprints(root, prepared.head, &findings);
    let mut posted: Vec<Posted> = earlier
        .iter()
        .filter_map(|e| {
            Some(Posted {
                fingerprint: e.fingerprint.clone()?,
                path: Some(e.comment.path.clone()),
                words: words(&finding_text(&e.comment.body)),
            })
        })
        .collect();
    posted.extend(
        previous
            .into_iter()
            .flat_map(|p| p.fingerprints.iter())
            .filter_map(|f| Fingerprint::parse(f))
            .map(|fingerprint| Posted {
                fingerprint,
                path: None,
                words: BTreeSet::new(),
            }),
    );
    let max_inline = usize::try_from(settings.review.max_comments).unwrap_or(usize::MAX);
    let plan = report::review::plan(&fingerprinted, &positions, &posted, max_inline);

    // Earlier findings the agent judged addressed: answered in their thread.
    let mut rechecked_report = Vec::new();
    let mut addressed_ids: BTreeSet<u64> = BTreeSet::new();
    for answer in &rechecked {
        let Some(earlier) = to_recheck_for(&to_recheck, answer.id) else {
            continue;
        };
        if !answer.still_applies {
            let note = if answer.note.is_empty() {
                String::new()
            } else {
                format!(": {}", markdown::inline(&answer.note))
            };
            let reply = format!("Addressed in {}{note}", report::short_sha(&head));
            match env
                .github
                .reply_to_review_comment(&env.repo, pull.number, earlier.comment.id, &reply)
                .await
            {
                Ok(_) => {
                    addressed_ids.insert(earlier.comment.id.0);
                }
                Err(error) => {
                    tracing::warn!(%error, "could not answer an addressed finding's thread");
                    continue;
                }
            }
            if let Some((thread, false)) = &earlier.thread
                && let Err(error) = env.github.resolve_review_thread(thread).await
            {
                tracing::warn!(%error, "could not resolve an addressed finding's thread");
            }
        }
        rechecked_report.push(Rechecked {
            path: earlier.comment.path.clone(),
            line: earlier.comment.line.or(earlier.comment.original_line),
            title: earlier.title(),
            addressed: !answer.still_applies,
            note: answer.note.clone(),
        });
    }
    if !rechecks_asked {
        rechecked_report.clear();
    }

    // The review itself: new inline findings, and the verdict.
    let requesting = settings.review.event == ReviewVerdict::RequestChanges && plan.verified_blocking() > 0;
    let summary_url = summary_link(targets, pull);
    let inline: Vec<_> = plan.inline().map(report::review::inline_comment).collect();
    let mut review_url = None;
    let mut inline_posted = 0;
    if !inline.is_empty() || requesting {
        let body = report::review::review_body(&env.job_id(), &head, &plan, summary_url.as_deref(), requesting);
        let new_review = NewReview {
            commit_id: Some(pull.head.sha.clone()),
            body: body.clone(),
            event: if requesting {
                ReviewEvent::RequestChanges
            } else {
                ReviewEvent::Comment
            },
            comments: inline.clone(),
        };
        let posted = env.github.create_review(&env.repo, pull.number, &new_review).await;
        let review = match posted {
            Ok(review) => {
                inline_posted = inline.len();
                review
            }
            Err(GithubError::Validation { message, .. }) if !inline.is_empty() => {
                // GitHub's diff disagrees with ours: every finding goes to the summary instead.
                tracing::warn!(%message, "GitHub refused the inline comments; the findings are in the summary");
                let without = NewReview {
                    comments: Vec::new(),
                    ..new_review
                };
                env.github.create_review(&env.repo, pull.number, &without).await?
            }
            Err(error) => return Err(error.into()),
        };
        review_url = Some(review.html_url.clone()).filter(|url| !url.is_empty());
        let posted = JobRecord::ReviewPosted {
            review: review.id,
            inline_comments: inline_posted,
        };
        let _ = env.control.record(&posted).await;
    }
    if settings.review.event == ReviewVerdict::RequestChanges && !requesting {
        let still_blocking = open
            .iter()
            .any(|e| !addressed_ids.contains(&e.comment.id.0) && e.severity == Some(Severity::Blocking) && e.verified);
        if !still_blocking {
            dismiss_requests(env, pull, bot, &head).await;
        }
    }

    // The summary comment: this review on top of the earlier ones, and the state for the next.
    let mut state = prepared.state_now.clone().unwrap_or_else(|| ReviewState {
        head: head.clone(),
        merge_base: prepared.merge_base.to_string(),
        fingerprints: Vec::new(),
    });
    state.remember(
        plan.findings
            .iter()
            .filter(|p| p.placement != Placement::Inline || inline_posted == 0)
            .map(|p| p.fingerprint.to_string()),
    );
    let covered = match &prepared.scope {
        Scope::Since { since, rebased, .. } => Covered::Since {
            commit: since.clone(),
            rebased: *rebased,
        },
        _ => Covered::Whole,
    };
    let summary_text = overall_summary(&summaries, &reviewable);
    let blob_url = format!("{}/blob/{head}", super::web_url(&env.request.repo));
    let footer = format!(
        "job {} · {} · {}",
        env.job_id(),
        markdown::cost(spent.cost_usd),
        markdown::duration(u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX))
    );
    let mut plan = plan;
    if inline_posted == 0 {
        // Nothing went inline (GitHub refused, or there was nothing): the summary lists them all.
        for planned in &mut plan.findings {
            if planned.placement == Placement::Inline {
                planned.placement = Placement::OverLimit;
            }
        }
    }
    let section = report::review::summary_section(&SummaryInput {
        head: &head,
        covered: &covered,
        summary: &summary_text,
        plan: &plan,
        coverage: &coverage,
        rechecked: &rechecked_report,
        blob_url: Some(&blob_url),
        footer: &footer,
    });
    let earlier_reviews = targets
        .frame
        .as_ref()
        .map(|(_, after)| report::review::sections(&format!("{SUMMARY_MARKER}\n{after}")).1)
        .unwrap_or_default();
    let body = report::review::summary_comment(&section, &earlier_reviews, Some(&state));

    let outcome = last_outcome.unwrap_or_else(|| empty_outcome(&spent));
    let mut outcome = Outcome {
        usage: outcome.usage,
        ..outcome
    };
    outcome.summary = summary_text.clone();
    let end = match stopped {
        Some(cause) => JobEnd::Stopped { cause, saved: None },
        None => JobEnd::Reviewed {
            url: review_url.or(summary_url),
            inline_comments: inline_posted,
        },
    };
    let kept: Vec<ReviewFinding> = plan.findings.iter().map(|p| p.finding.clone()).collect();
    Ok(finish_with_comment(env, targets, end, outcome, &kept, settings, spent, &body).await)
}

/// The earlier finding a recheck answer is about (answers are numbered from 1).
fn to_recheck_for<'a>(list: &[&'a Earlier], id: u32) -> Option<&'a Earlier> {
    list.get(usize::try_from(id).ok()?.checked_sub(1)?).copied()
}

/// One chunk's run of the agent.
#[expect(clippy::too_many_arguments, reason = "a chunk's place in the review, each used once")]
async fn run_chunk(
    env: &JobEnv,
    session: &AgentSession,
    live: &Arc<Live>,
    pull: &PullRequest,
    settings: &EffectiveSettings,
    prepared: &Prepared,
    (n, count, chunk, reviewable): (usize, usize, &[usize], &[&FileDiff]),
    (open, all_rechecks, rechecks): (&[&Earlier], &[&Earlier], &[&Earlier]),
    positions: &DiffPositions,
) -> Result<ChunkRun, HandlerError> {
    let request = env
        .request
        .instructions
        .clone()
        .filter(|text| !text.trim().is_empty())
        .unwrap_or_else(|| "Review this pull request.".to_owned());
    let role = "You are reviewing it: change nothing. Your findings and your final message become a review on the \
                pull request.";
    let context = super::pull_context(env, pull, role)?;
    let chunk_files: Vec<&FileDiff> = chunk.iter().map(|i| reviewable[*i]).collect();
    let diff: String = chunk_files.iter().map(|f| f.text.as_str()).collect();
    let shown_diff = if diff.trim().is_empty() {
        "(Nothing to show: the files of this review change nothing line by line.)".to_owned()
    } else {
        cap_diff(&diff, MAX_PROMPT_DIFF_BYTES)
    };
    let scope = scope_text(prepared, n, count, &chunk_files);
    let files = files_text(prepared, &chunk_files);
    let earlier = earlier_text(open, rechecks);
    let mut instructions = prepared.instructions.clone();
    if let Some(extra) = &settings.review.instructions {
        instructions.push_str(&format!(
            "\n\n## [review] instructions in .github/pitcrew.toml\n\n{}",
            extra.trim()
        ));
    }
    let prompt = env.services.prompts.render(
        Template::Review,
        &[
            ("request", request.trim()),
            ("context", &context),
            ("scope", &scope),
            ("files", &files),
            ("diff", &shown_diff),
            ("earlier", &earlier),
            ("instructions", &instructions),
        ],
    )?;
    let findings = Arc::new(Mutex::new(Vec::new()));
    let answers = Arc::new(Mutex::new(Vec::new()));
    let mut tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(ReviewCommentTool::new(findings.clone()).with_diff(positions.clone())),
        Arc::new(crate::tools::bash::Bash),
    ];
    if !rechecks.is_empty() {
        let count = u32::try_from(rechecks.len()).unwrap_or(u32::MAX);
        tools.push(Arc::new(RecheckFinding::new(count, answers.clone())));
    }
    let outcome = session
        .run_agent(prompt, Toolset::ReadOnly(tools), live.clone() as Arc<dyn EventSink>)
        .await?;
    let findings = findings.lock().unwrap_or_else(PoisonError::into_inner).clone();
    // Answers are numbered within the chunk; the review numbers them in its own list of rechecks.
    let answers = answers.lock().unwrap_or_else(PoisonError::into_inner).clone();
    Ok(ChunkRun {
        outcome,
        findings,
        rechecks: answers
            .into_iter()
            .filter_map(|mut answer| {
                let earlier = rechecks.get(usize::try_from(answer.id).ok()?.checked_sub(1)?)?;
                let index = all_rechecks.iter().position(|e| e.comment.id == earlier.comment.id)?;
                answer.id = u32::try_from(index + 1).ok()?;
                Some(answer)
            })
            .collect(),
    })
}

/// What the chunk's run covers, for its prompt.
fn scope_text(prepared: &Prepared, n: usize, count: usize, files: &[&FileDiff]) -> String {
    let mut text = match &prepared.scope {
        Scope::Since {
            since, rebased: false, ..
        } => format!(
            "Only what changed since the last review (commit `{}`): this pull request was reviewed before, and its \
             earlier findings are listed below. The diff shows the whole pull request's changes to the files the new \
             commits touched; concentrate on the lines the new commits changed.",
            report::short_sha(since)
        ),
        Scope::Since {
            since, rebased: true, ..
        } => format!(
            "Only the files whose changes differ from what was reviewed last (commit `{}`, before a force-push).",
            report::short_sha(since)
        ),
        _ => "The whole pull request.".to_owned(),
    };
    if count > 1 {
        text.push_str(&format!(
            "\n\nThe pull request is large, so it is reviewed in {count} parts of related files; this is part {} of \
             {count}, with {} file{}. Other parts review the other files: read them only where this part's code \
             depends on them.",
            n + 1,
            files.len(),
            if files.len() == 1 { "" } else { "s" }
        ));
    }
    text
}

/// Every changed file of the pull request, one line each, marked where this run does not review it.
fn files_text(prepared: &Prepared, chunk: &[&FileDiff]) -> String {
    const MAX_LISTED_FILES: usize = 400;
    let in_chunk: BTreeSet<&str> = chunk.iter().map(|f| f.path.as_str()).collect();
    let skipped: BTreeMap<&str, &str> = prepared
        .coverage
        .skipped
        .iter()
        .map(|(c, why)| (c.path.as_str(), why.words()))
        .collect();
    let mut lines = Vec::new();
    for file in prepared.files.iter().take(MAX_LISTED_FILES) {
        let mark = if in_chunk.contains(file.path.as_str()) {
            " ← in this review".to_owned()
        } else if let Some(why) = skipped.get(file.path.as_str()) {
            format!(" (left out: {why})")
        } else if !prepared.scope.covers(&file.path) {
            " (reviewed before)".to_owned()
        } else {
            " (another part)".to_owned()
        };
        let renamed = file
            .old_path
            .as_ref()
            .map(|old| format!(" (renamed from `{old}`)"))
            .unwrap_or_default();
        lines.push(format!(
            "- `{}`{renamed} +{} -{}{mark}",
            file.path, file.additions, file.deletions
        ));
    }
    let more = prepared.files.len().saturating_sub(MAX_LISTED_FILES);
    if more > 0 {
        lines.push(format!("- … and {more} more files"));
    }
    lines.join("\n")
}

/// The earlier findings block of a prompt: those already raised (not to repeat), and those to
/// recheck, numbered.
fn earlier_text(open: &[&Earlier], rechecks: &[&Earlier]) -> String {
    if open.is_empty() {
        return "None: this is the first review of this pull request, or its earlier findings are all resolved."
            .to_owned();
    }
    let place = |e: &Earlier| match e.comment.line.or(e.comment.original_line) {
        Some(line) => format!("{}:{line}", e.comment.path),
        None => e.comment.path.clone(),
    };
    let mut text = String::from("Already raised on this pull request (do not raise them again):\n\n");
    for e in open.iter().take(MAX_EARLIER_LISTED) {
        text.push_str(&format!(
            "- `{}` {} — {}\n",
            place(e),
            e.severity.map_or("", Severity::as_str),
            crate::agent::context::cut(&e.title(), 300)
        ));
    }
    if open.len() > MAX_EARLIER_LISTED {
        text.push_str(&format!("- … and {} more\n", open.len() - MAX_EARLIER_LISTED));
    }
    if !rechecks.is_empty() {
        text.push_str(
            "\nEarlier findings to recheck — the new commits changed the code they are about. Read that code and \
             answer each with `recheck_finding`:\n\n",
        );
        for (n, e) in rechecks.iter().enumerate() {
            text.push_str(&format!(
                "{}. `{}` — {}\n",
                n + 1,
                place(e),
                crate::agent::context::cut(&finding_text(&e.comment.body), 800).replace('\n', " ")
            ));
        }
    }
    text.trim_end().to_owned()
}

/// Each finding with its fingerprint: the code it is about is read from the head commit.
fn fingerprints(root: &Path, head: Oid, findings: &[ReviewFinding]) -> Vec<(ReviewFinding, Fingerprint)> {
    let repo = LocalRepo::open(root).ok();
    let mut files: BTreeMap<String, Option<String>> = BTreeMap::new();
    findings
        .iter()
        .map(|finding| {
            let text = files.entry(finding.path.clone()).or_insert_with(|| {
                let repo = repo.as_ref()?;
                let bytes = scope::file_at(repo, head, &finding.path, 8 * 1024 * 1024)?;
                Some(String::from_utf8_lossy(&bytes).into_owned())
            });
            let (start, end) = finding.range();
            let code: String = text
                .as_deref()
                .map(|text| {
                    text.lines()
                        .skip(usize::try_from(start.saturating_sub(1)).unwrap_or(0))
                        .take(usize::try_from(end - start + 1).unwrap_or(1))
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .unwrap_or_default();
            let fingerprint = Fingerprint::of(&finding.path, &code, &finding.body);
            (finding.clone(), fingerprint)
        })
        .collect()
}

/// What the pull request does and the verdict: the one run's final words, or each part's under its
/// files.
fn overall_summary(summaries: &[(Vec<usize>, String)], reviewable: &[&FileDiff]) -> String {
    match summaries {
        [] => {
            if reviewable.is_empty() {
                "Nothing to review: every changed file is left out (see below).".to_owned()
            } else {
                String::new()
            }
        }
        [(_, only)] => only.trim().to_owned(),
        parts => parts
            .iter()
            .enumerate()
            .map(|(n, (chunk, text))| {
                let first = chunk.first().map(|i| reviewable[*i].path.as_str()).unwrap_or_default();
                let dir = first.rsplit_once('/').map_or("the repository root", |(dir, _)| dir);
                format!(
                    "**Part {} ({} files, from `{dir}`):** {}",
                    n + 1,
                    chunk.len(),
                    text.trim()
                )
            })
            .collect::<Vec<_>>()
            .join("\n\n"),
    }
}

/// The summary comment's address (`…#issuecomment-N`).
fn summary_link(targets: &Targets, pull: &PullRequest) -> Option<String> {
    match targets.comment {
        Some(ProgressComment::Issue(CommentId(id))) if !pull.html_url.is_empty() => {
            Some(format!("{}#issuecomment-{id}", pull.html_url))
        }
        _ => None,
    }
}

/// Dismisses the bot's reviews that still request changes: the newest review found no blocking
/// finding, and none of the earlier ones still stands.
async fn dismiss_requests(env: &JobEnv, pull: &PullRequest, bot: &str, head: &str) {
    let reviews = match env.github.list_reviews(&env.repo, pull.number).await {
        Ok(reviews) => reviews.items,
        Err(error) => {
            tracing::warn!(%error, "could not list the pull request's reviews");
            return;
        }
    };
    let message = format!(
        "The review of {} found no blocking problem left.",
        report::short_sha(head)
    );
    for review in reviews
        .iter()
        .filter(|r| r.user.login.eq_ignore_ascii_case(bot) && r.state == "CHANGES_REQUESTED")
    {
        if let Err(error) = env
            .github
            .dismiss_review(&env.repo, pull.number, review.id, &message)
            .await
        {
            tracing::warn!(%error, review = review.id, "could not dismiss an earlier review");
        }
    }
}

fn empty_outcome(spent: &Spent) -> Outcome {
    Outcome {
        stop: crate::agent::StopReason::Finished,
        summary: String::new(),
        plan: Default::default(),
        usage: crate::llm::UsageTotals {
            usage: spent.usage,
            cost_usd: spent.cost_usd,
            ..Default::default()
        },
        steps: spent.steps,
        tool_calls: spent.tool_calls,
        duration_ms: spent.duration_ms,
    }
}

/// Writes the check run and the whole summary comment `body`, and the job's end.
#[expect(clippy::too_many_arguments, reason = "the review's end, each part used once")]
async fn finish_with_comment(
    env: &JobEnv,
    targets: &Targets,
    end: JobEnd,
    outcome: Outcome,
    findings: &[ReviewFinding],
    settings: &EffectiveSettings,
    spent: Spent,
    body: &str,
) -> (Finish, Spent) {
    let ended = super::Ended {
        end,
        outcome,
        changed_files: Vec::new(),
        tests: None,
    };
    let (finish, _) =
        super::conclude_with_comment(env, &targets.unframed(), ended, findings, settings, Some(body)).await;
    (finish, spent)
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

/// The pull request's diff as GitHub shows it: from the merge base of its base and head to its head.
pub(super) fn pull_diff(repo: &LocalRepo, pull: &PullRequest) -> Result<String, HandlerError> {
    let head = Oid::from_str(pull.head.sha.as_str()).map_err(WorkspaceError::from)?;
    let base = base_commit(repo, pull)?;
    let merge_base = repo.raw().merge_base(base, head).map_err(|_| {
        HandlerError::Other(format!(
            "the pull request's head has no history in common with `{}`",
            pull.base.branch
        ))
    })?;
    Ok(unified_diff(repo, merge_base, Some(head))?)
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
    let run_dir: PathBuf = run_dir(env.config(), &env.job_id());
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
) -> (Finish, Spent) {
    let ended = super::Ended {
        end,
        outcome,
        changed_files: Vec::new(),
        tests: None,
    };
    super::conclude(env, targets, ended, findings, settings).await
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

    #[test]
    fn a_bot_comment_gives_back_its_finding_and_label() {
        let body = "**🔴 blocking · bug · unverified**\n\nDivides by zero.\n\nWhen empty.\n\n<!-- pitcrew:finding 0123456789abcdef-0123456789abcdef -->";
        assert_eq!(finding_text(body), "Divides by zero.\n\nWhen empty.");
        assert_eq!(label_of(body), (Some(Severity::Blocking), false));
        assert_eq!(label_of("**⚪ nit · style**\n\nx"), (Some(Severity::Nit), true));
    }
}
