//! `review`: a pull request review by the read-only agent, asked for (`@agent review`) or automatic
//! (`[review] auto`: as the pull request opens, is reopened or marked ready, and gets new commits).
//!
//! The first review covers the whole pull request (its diff from the merge base, as GitHub shows
//! it); later ones only what changed since the last reviewed head, whose commit the pull request's
//! summary comment records ([`crate::review::state`]); a force-push that only rebased reviewed
//! changes is recognised by patch id and not reviewed again ([`crate::review::scope`]). Files the
//! repository ignores, generated, vendored and binary files are left out and named in the coverage
//! line. Large diffs are reviewed in chunks of related files, one agent run each in one sandbox,
//! sharing the job's budgets ([`crate::reviewer`], which `pitcrew review` shares). The agent may run
//! the tests and commands to confirm a finding.
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
use std::sync::Arc;
use std::time::Instant;

use git2::Oid;

use crate::agent::Outcome;
use crate::agent::events::EventSink;
use crate::config::repo::{EffectiveSettings, ReviewVerdict};
use crate::github::{
    CommentId, GithubError, IssueComment, IssueNumber, NewReview, PullRequest, ReviewComment, ReviewEvent,
};
use crate::jobs::Finish;
use crate::report::review::{Covered, Placement, Rechecked, SummaryInput};
use crate::report::{self, JobEnd, StopCause, markdown};
use crate::review::Severity;
use crate::review::diff::FileDiff;
use crate::review::fingerprint::{Fingerprint, Posted, words};
use crate::review::scope::Scope;
use crate::review::state::{ReviewState, SUMMARY_MARKER};
use crate::reviewer::{self, Budget, Prepared, Request};
use crate::session::{AgentSession, Toolset};
use crate::tools::{ReviewFinding, Tool};
use crate::triggers::JobSource;
use crate::workspace::diff::unified_diff;
use crate::workspace::{LocalRepo, WorkspaceError};

use super::live::{Live, ProgressComment, Targets};
use super::record::JobRecord;
use super::session::{Spent, agent_run, run_dir};
use super::{HandlerError, JobEnv};

pub(super) use crate::reviewer::cap_diff;

/// Earlier findings one review rechecks at most.
const MAX_RECHECKS: usize = 20;
/// An earlier finding is rechecked when the new commits added a line this close to it.
const RECHECK_DISTANCE: u64 = 3;

/// `@agent review` on a pull request, or an automatic review of one that opened or changed.
pub async fn on_pull_request(env: &JobEnv) -> Result<(Finish, Spent), HandlerError> {
    let number = env.number()?;
    let bot = env.config().github.bot_name.clone();
    // Three independent reads, at once: each is a round trip to GitHub.
    let get_pull = async { Ok::<_, HandlerError>(env.github.get_pull(&env.repo, number).await?) };
    let (pull, repo_config, summary) = tokio::try_join!(get_pull, env.repo_config(), find_summary(env, number, &bot))?;
    let settings = repo_config.apply(env.config());
    let automatic = matches!(env.request.source, JobSource::PullRequest { .. });
    if automatic && (pull.state != "open" || pull.draft) {
        return Ok(quiet(
            env,
            &format!("pull request #{number} is closed or a draft now: not reviewed"),
        )
        .await);
    }
    let previous = summary.as_ref().and_then(|c| ReviewState::read(&c.body));
    let lease = super::lease_pull_head(env, &pull).await?;
    // The lease's repository handle may not be held across an await: the git work is done first.
    let prepared = prepare(lease.repo(), &pull, previous.as_ref(), &settings, automatic);
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
        let state = prepared.state(previous.as_ref());
        if let Some(summary) = &summary
            && previous.as_ref() != Some(&state)
        {
            let body = format!(
                "{}{}",
                crate::review::state::without_state(&summary.body).trim_end(),
                format_args!("\n{}", state.to_marker())
            );
            env.github.update_issue_comment(&env.repo, summary.id, &body).await?;
        }
        return Ok(quiet(env, why).await);
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
async fn find_summary(env: &JobEnv, number: IssueNumber, bot: &str) -> Result<Option<IssueComment>, HandlerError> {
    let comments = env.github.list_issue_comments(&env.repo, number).await?;
    Ok(comments
        .items
        .into_iter()
        .find(|c| c.user.login.eq_ignore_ascii_case(bot) && c.body.starts_with(SUMMARY_MARKER)))
}

/// The pull request's diff, scope and coverage ([`reviewer::prepare`]).
fn prepare(
    repo: &LocalRepo,
    pull: &PullRequest,
    previous: Option<&ReviewState>,
    settings: &EffectiveSettings,
    automatic: bool,
) -> Result<Prepared, HandlerError> {
    let head = Oid::from_str(pull.head.sha.as_str()).map_err(WorkspaceError::from)?;
    let base = base_commit(repo, pull)?;
    Ok(reviewer::prepare(
        repo,
        base,
        head,
        &pull.base.branch,
        previous,
        &settings.review,
        automatic,
    )?)
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
    let check_run = super::start_check_run(env, "pitcrew", &pull.head.sha, output).await?;
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
    // The sandbox starts (a container: a few hundred milliseconds) while GitHub lists the earlier
    // findings.
    let run_dir = run_dir(env.config(), &env.job_id());
    let (earlier, session) = tokio::join!(
        earlier_findings(env, pull, bot),
        AgentSession::start(agent_run(env, settings, root, run_dir))
    );
    let mut session = session?;
    let earlier = match earlier {
        Ok(earlier) => earlier,
        Err(error) => {
            let _ = session.stop().await;
            return Err(error);
        }
    };
    let open: Vec<&Earlier> = earlier.iter().filter(|e| !e.addressed).collect();
    let listed: Vec<reviewer::Earlier> = open
        .iter()
        .map(|e| reviewer::Earlier {
            path: e.comment.path.clone(),
            line: e.comment.line.or(e.comment.original_line),
            severity: e.severity,
            text: finding_text(&e.comment.body),
        })
        .collect();
    let to_recheck: Vec<usize> = (0..open.len())
        .filter(|i| touched(open[*i], &prepared.scope, &prepared.files))
        .take(MAX_RECHECKS)
        .collect();
    let request_text = env
        .request
        .instructions
        .clone()
        .filter(|text| !text.trim().is_empty())
        .unwrap_or_else(|| "Review this pull request.".to_owned());
    let role = "You are reviewing it: change nothing. Your findings and your final message become a review on the \
                pull request.";
    let context = super::pull_context(env, pull, role)?;
    let request = Request {
        prompts: &env.services.prompts,
        request: &request_text,
        context: &context,
        extra_instructions: settings.review.instructions.as_deref(),
        open: &listed,
        to_recheck: &to_recheck,
    };
    let budget = Budget {
        max_steps: settings.max_steps,
        max_cost_usd: settings.max_cost_usd,
        max_wall_time: settings.max_wall_time,
    };

    let live = Live::start(targets.clone());
    let control = env.control.clone();
    let cancelled = move || control.is_cancelled();
    let reviewed = reviewer::review(
        &mut session,
        prepared,
        &request,
        budget,
        live.clone() as Arc<dyn EventSink>,
        &cancelled,
    )
    .await;
    live.close().await;
    let _ = session.stop().await;
    let reviewed = reviewed.map_err(|error| match error {
        reviewer::ReviewerError::Session(error) => HandlerError::from(error),
        reviewer::ReviewerError::Prompt(error) => HandlerError::from(error),
    })?;
    let mut spent = Spent::default();
    for outcome in &reviewed.outcomes {
        spent.add(&Spent::from_outcome(outcome));
    }
    let stopped = reviewed.stopped.as_ref().and_then(StopCause::from_stop);
    let last_outcome = reviewed.outcomes.last().cloned();
    // Stopped on request (or superseded by a newer push): nothing is posted; the report says so.
    if matches!(stopped, Some(StopCause::Cancelled { .. })) || env.control.is_cancelled() {
        let outcome = last_outcome.unwrap_or_else(|| empty_outcome(&spent));
        let end = JobEnd::Stopped {
            cause: StopCause::Cancelled { by: None },
            saved: None,
        };
        return Ok(finish(env, targets, end, outcome, &reviewed.findings, settings).await);
    }

    let head = prepared.head.to_string();
    let fingerprinted = reviewer::fingerprints(root, prepared.head, &reviewed.findings);
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
                words: Default::default(),
            }),
    );
    let max_inline = usize::try_from(settings.review.max_comments).unwrap_or(usize::MAX);
    let positions = crate::workspace::diff::DiffPositions::from_unified(&prepared.diff);
    let mut plan = report::review::plan(&fingerprinted, &positions, &posted, max_inline);

    // Earlier findings the agent judged addressed: answered in their thread, the thread resolved.
    let mut rechecked_report = Vec::new();
    let mut addressed_ids = BTreeSet::new();
    for answer in &reviewed.rechecks {
        let Some(earlier) = usize::try_from(answer.id)
            .ok()
            .and_then(|id| id.checked_sub(1))
            .and_then(|place| to_recheck.get(place))
            .map(|index| open[*index])
        else {
            continue;
        };
        if !answer.still_applies {
            let note = if answer.note.is_empty() {
                String::new()
            } else {
                format!(": {}", markdown::inline(&answer.note))
            };
            let reply = format!("Addressed in {}{note}", report::short_sha(&head));
            if let Err(error) = env
                .github
                .reply_to_review_comment(&env.repo, pull.number, earlier.comment.id, &reply)
                .await
            {
                tracing::warn!(%error, "could not answer an addressed finding's thread");
                continue;
            }
            addressed_ids.insert(earlier.comment.id.0);
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
    if !reviewed.rechecks_asked {
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
            body,
            event: if requesting {
                ReviewEvent::RequestChanges
            } else {
                ReviewEvent::Comment
            },
            comments: inline.clone(),
        };
        let review = match env.github.create_review(&env.repo, pull.number, &new_review).await {
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
    if inline_posted == 0 {
        // Nothing went inline (GitHub refused, or there was nothing): the summary lists them all.
        for planned in &mut plan.findings {
            if planned.placement == Placement::Inline {
                planned.placement = Placement::OverLimit;
            }
        }
    }

    // The summary comment: this review on top of the earlier ones, and the state for the next.
    let mut state = prepared.state(previous);
    state.remember(
        plan.findings
            .iter()
            .filter(|p| p.placement != Placement::Inline)
            .map(|p| p.fingerprint.to_string()),
    );
    let covered = match &prepared.scope {
        Scope::Since { since, rebased, .. } => Covered::Since {
            commit: since.clone(),
            rebased: *rebased,
        },
        _ => Covered::Whole,
    };
    let blob_url = format!("{}/blob/{head}", super::web_url(&env.request.repo));
    let footer = format!(
        "job {} · {} · {}",
        env.job_id(),
        markdown::cost(spent.cost_usd),
        markdown::duration(u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX))
    );
    let section = report::review::summary_section(&SummaryInput {
        head: &head,
        covered: &covered,
        summary: &reviewed.summary,
        plan: &plan,
        coverage: &reviewed.coverage,
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

    let mut outcome = last_outcome.unwrap_or_else(|| empty_outcome(&spent));
    outcome.summary = reviewed.summary.clone();
    let end = match stopped {
        Some(cause) => JobEnd::Stopped { cause, saved: None },
        None => JobEnd::Reviewed {
            url: review_url.or(summary_url),
            inline_comments: inline_posted,
        },
    };
    let kept: Vec<ReviewFinding> = plan.findings.iter().map(|p| p.finding.clone()).collect();
    let ended = super::Ended {
        end,
        outcome,
        changed_files: Vec::new(),
        tests: None,
        ci: None,
    };
    // The whole summary comment replaces the frame; the job spent what every chunk did.
    let (finish, _) = super::conclude_with_comment(env, &targets.unframed(), ended, &kept, settings, Some(&body)).await;
    Ok((finish, spent))
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

/// Appends the pull request's diff (from the merge base, cut to `max` bytes) to `context` as its
/// own block; nothing when the pull request changes nothing.
pub(super) fn push_pull_diff(
    env: &JobEnv,
    repo: &LocalRepo,
    pull: &PullRequest,
    context: &mut String,
    max: usize,
) -> Result<(), HandlerError> {
    let diff = pull_diff(repo, pull)?;
    if !diff.trim().is_empty() {
        let shown = env.services.prompts.render(
            crate::prompts::Template::ContextPullDiff,
            &[("diff", &cap_diff(&diff, max))],
        )?;
        super::push_block(context, &shown);
    }
    Ok(())
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
        ci: None,
    };
    super::conclude(env, targets, ended, findings, settings).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bot_comment_gives_back_its_finding_and_label() {
        let body = "**🔴 blocking · bug · unverified**\n\nDivides by zero.\n\nWhen empty.\n\n<!-- pitcrew:finding 0123456789abcdef-0123456789abcdef -->";
        assert_eq!(finding_text(body), "Divides by zero.\n\nWhen empty.");
        assert_eq!(label_of(body), (Some(Severity::Blocking), false));
        assert_eq!(label_of("**⚪ nit · style**\n\nx"), (Some(Severity::Nit), true));
    }
}
