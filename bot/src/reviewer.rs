//! The reviewer: a review of a diff by the read-only agent, the same for a pull request on GitHub
//! (`handlers/review.rs`) and for a local branch (`pitcrew review`, `run/review.rs`).
//!
//! [`prepare`] diffs the head against its merge base with the base, decides the scope from the last
//! review's state ([`crate::review::scope`]) and sorts the files into reviewed and left out
//! ([`crate::review::coverage`]). [`review`] runs the agent on the reviewable files in chunks of
//! related files, in one sandbox session, sharing the budgets among the chunks: each run gets the
//! request, where it comes from, what the review covers, every changed file, its chunk's diff, the
//! earlier findings (not to be repeated; those on changed code to recheck, numbered), and the
//! repository's instructions read from the merge base — a change cannot rewrite the rules its own
//! review follows. Its tools: the read-only ones, `run_tests` and `bash` to confirm a finding,
//! `review_comment`, and `recheck_finding` when there is something to recheck.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use git2::Oid;

use crate::agent::events::EventSink;
use crate::agent::{Outcome, StopReason};
use crate::config::repo::ReviewSettings;
use crate::prompts::{PromptError, Prompts, Template};
use crate::review::Severity;
use crate::review::chunks;
use crate::review::coverage::{self, Counted, Coverage};
use crate::review::diff::{FileDiff, split};
use crate::review::fingerprint::Fingerprint;
use crate::review::scope::{self, Scope, Unchanged};
use crate::review::state::ReviewState;
use crate::session::{AgentSession, INSTRUCTION_FILES, SessionError, Toolset, format_instructions};
use crate::tools::{Recheck, RecheckFinding, ReviewComment, ReviewFinding, Tool};
use crate::workspace::diff::{DiffPositions, unified_diff};
use crate::workspace::{LocalRepo, WorkspaceError};

/// The diff shown in a review prompt is cut past this many bytes: a larger one would crowd out the
/// code the agent reads, and the agent can read the changed files itself.
pub const MAX_PROMPT_DIFF_BYTES: usize = 60 * 1024;
/// Earlier findings listed in a prompt as "already raised" at most.
const MAX_EARLIER_LISTED: usize = 40;
/// The steps each chunk gets at least, whatever its share of the budget.
const MIN_CHUNK_STEPS: u32 = 6;
/// The bytes of a file read to fingerprint a finding on it.
const MAX_FINGERPRINTED_FILE: usize = 8 * 1024 * 1024;

/// What the git side of a review found.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub head: Oid,
    pub merge_base: Oid,
    /// The whole diff from the merge base to the head.
    pub diff: String,
    pub files: Vec<FileDiff>,
    pub scope: Scope,
    /// Indices into `files` of the files this review reads.
    pub reviewable: Vec<usize>,
    pub coverage: Coverage,
    /// The repository's agent instructions, from the merge base.
    pub instructions: String,
}

impl Prepared {
    /// Why there is nothing to review, when there is nothing: an automatic review of a head already
    /// reviewed, of a force-push that only rebased, of commits that changed no file of the pull
    /// request, or of files all left out. A review someone asked for always runs.
    pub fn nothing_new(&self, automatic: bool) -> Option<&'static str> {
        if !automatic {
            return None;
        }
        match &self.scope {
            Scope::Unchanged(Unchanged::SameHead) => Some("this head was reviewed already"),
            Scope::Unchanged(Unchanged::Rebased) => Some("the push only rebased changes that were reviewed already"),
            Scope::Unchanged(Unchanged::BaseOnly) => {
                Some("the new commits change none of the pull request's own files")
            }
            Scope::Since { .. } if self.reviewable.is_empty() => {
                Some("the new commits change only files the review leaves out")
            }
            _ => None,
        }
    }

    /// The state the next review reads once this one is posted.
    pub fn state(&self, previous: Option<&ReviewState>) -> ReviewState {
        ReviewState {
            head: self.head.to_string(),
            merge_base: self.merge_base.to_string(),
            fingerprints: previous.map(|p| p.fingerprints.clone()).unwrap_or_default(),
        }
    }

    pub fn reviewable_files(&self) -> Vec<&FileDiff> {
        self.reviewable.iter().map(|i| &self.files[*i]).collect()
    }
}

/// Diffs `head` against its merge base with `base` (`base_name` names the base in messages),
/// decides the scope from `previous` (the last review; an unchanged scope becomes the whole diff
/// unless the review is `automatic`), and sorts the files into reviewed and left out.
pub fn prepare(
    repo: &LocalRepo,
    base: Oid,
    head: Oid,
    base_name: &str,
    previous: Option<&ReviewState>,
    review: &ReviewSettings,
    automatic: bool,
) -> Result<Prepared, WorkspaceError> {
    let merge_base = repo
        .raw()
        .merge_base(base, head)
        .map_err(|_| WorkspaceError::Unrelated {
            base: base_name.to_owned(),
        })?;
    let diff = unified_diff(repo, merge_base, Some(head))?;
    let files = split(&diff);
    let mut scope = scope::scope(repo, previous, head, &files)?;
    if !automatic && matches!(scope, Scope::Unchanged(_)) {
        // Asked for: the whole diff again (findings already posted are still not repeated).
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
    Ok(Prepared {
        head,
        merge_base,
        diff,
        files,
        scope,
        reviewable,
        coverage,
        instructions,
    })
}

/// An earlier finding, as the prompt shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Earlier {
    pub path: String,
    pub line: Option<u64>,
    pub severity: Option<Severity>,
    /// The finding's words.
    pub text: String,
}

impl Earlier {
    fn place(&self) -> String {
        match self.line {
            Some(line) => format!("{}:{line}", self.path),
            None => self.path.clone(),
        }
    }

    fn title(&self) -> &str {
        self.text.lines().next().unwrap_or_default()
    }
}

/// What the agent is asked, besides the diff.
pub struct Request<'a> {
    pub prompts: &'a Prompts,
    /// What was asked (`Review this pull request.` when nothing more).
    pub request: &'a str,
    /// Where the request comes from, and who will read the review.
    pub context: &'a str,
    /// The repository's own `[review] instructions`.
    pub extra_instructions: Option<&'a str>,
    /// Findings already raised and still open: not to be raised again.
    pub open: &'a [Earlier],
    /// Those of `open` (by index) whose code changed: to recheck. `Recheck::id` is the 1-based place
    /// in this list.
    pub to_recheck: &'a [usize],
}

/// The budgets of the whole review, shared among its chunks.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub max_steps: u32,
    pub max_cost_usd: Option<f64>,
    pub max_wall_time: Duration,
}

/// What the agent's runs came to.
#[derive(Debug, Default)]
pub struct Reviewed {
    pub findings: Vec<ReviewFinding>,
    /// Answers about `Request::to_recheck`.
    pub rechecks: Vec<Recheck>,
    /// Whether some run was asked to recheck earlier findings.
    pub rechecks_asked: bool,
    /// What the pull request does and the verdict: the one run's final words, or each part's.
    pub summary: String,
    /// The request's coverage, with the files of unfinished chunks moved to `unfinished`.
    pub coverage: Coverage,
    /// Every run, in order.
    pub outcomes: Vec<Outcome>,
    /// Why a run stopped early (a budget, a stop, the provider), the first one.
    pub stopped: Option<StopReason>,
}

/// Reviews the reviewable files of `prepared` in chunks, one agent run each in `session`, within
/// `budget`; `cancelled` is asked before each chunk. A run that fails outright (the model or the
/// sandbox) fails the review; one stopped by a budget keeps what it found and its files are named
/// as not reviewed.
pub async fn review(
    session: &mut AgentSession,
    prepared: &Prepared,
    request: &Request<'_>,
    budget: Budget,
    events: Arc<dyn EventSink>,
    cancelled: &(dyn Fn() -> bool + Send + Sync),
) -> Result<Reviewed, ReviewerError> {
    let started = Instant::now();
    let positions = DiffPositions::from_unified(&prepared.diff);
    let reviewable = prepared.reviewable_files();
    let chunks = chunks::chunk(&reviewable);
    let mut out = Reviewed {
        coverage: prepared.coverage.clone(),
        ..Reviewed::default()
    };
    let mut summaries: Vec<(Vec<usize>, String)> = Vec::new();
    let mut done = BTreeSet::new();
    let (mut steps, mut cost) = (0u32, 0f64);
    for (n, chunk) in chunks.iter().enumerate() {
        if cancelled() {
            break;
        }
        let left = chunks.len() - n;
        let steps_left = budget.max_steps.saturating_sub(steps);
        let cost_left = budget.max_cost_usd.map(|max| (max - cost).max(0.0));
        let time_left = budget.max_wall_time.saturating_sub(started.elapsed());
        if steps_left == 0 || cost_left.is_some_and(|c| c <= 0.0) || time_left.is_zero() {
            break;
        }
        let parts = u32::try_from(left).unwrap_or(u32::MAX).max(1);
        session.set_budget(
            (steps_left / parts).max(MIN_CHUNK_STEPS).min(steps_left),
            cost_left.map(|c| c / f64::from(parts)),
            time_left / parts,
        );
        // Earlier findings are rechecked by the chunk that holds their file (the first, for a file
        // no chunk holds).
        let chunk_files: BTreeSet<&str> = chunk.iter().map(|i| reviewable[*i].path.as_str()).collect();
        let rechecks: Vec<usize> = request
            .to_recheck
            .iter()
            .copied()
            .filter(|i| {
                let path = request.open[*i].path.as_str();
                chunk_files.contains(path) || (n == 0 && !reviewable.iter().any(|f| f.path == path))
            })
            .collect();
        out.rechecks_asked |= !rechecks.is_empty();
        let files: Vec<&FileDiff> = chunk.iter().map(|i| reviewable[*i]).collect();
        let run = run_chunk(
            session,
            prepared,
            request,
            (n, chunks.len(), &files),
            &rechecks,
            &positions,
            events.clone(),
        )
        .await?;
        steps += run.outcome.steps;
        cost += run.outcome.usage.cost_usd.unwrap_or(0.0);
        out.findings.extend(run.findings);
        out.rechecks.extend(run.rechecks);
        if run.outcome.stop == StopReason::Finished {
            done.insert(n);
        } else if out.stopped.is_none() {
            out.stopped = Some(run.outcome.stop.clone());
        }
        summaries.push((chunk.clone(), run.outcome.summary.clone()));
        out.outcomes.push(run.outcome);
    }
    for (n, chunk) in chunks.iter().enumerate() {
        if done.contains(&n) {
            continue;
        }
        for index in chunk {
            let file = reviewable[*index];
            out.coverage.reviewed.retain(|c| c.path != file.path);
            out.coverage.unfinished.push(Counted {
                path: file.path.clone(),
                lines: file.changed_lines(),
            });
        }
    }
    out.summary = overall_summary(&summaries, &reviewable);
    Ok(out)
}

/// Why a review could not run.
#[derive(Debug, thiserror::Error)]
pub enum ReviewerError {
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error(transparent)]
    Prompt(#[from] PromptError),
}

/// One chunk's run of the agent: what it found and answered.
struct ChunkRun {
    outcome: Outcome,
    findings: Vec<ReviewFinding>,
    rechecks: Vec<Recheck>,
}

async fn run_chunk(
    session: &AgentSession,
    prepared: &Prepared,
    request: &Request<'_>,
    (n, count, files): (usize, usize, &[&FileDiff]),
    rechecks: &[usize],
    positions: &DiffPositions,
    events: Arc<dyn EventSink>,
) -> Result<ChunkRun, ReviewerError> {
    let diff: String = files.iter().map(|f| f.text.as_str()).collect();
    let shown_diff = if diff.trim().is_empty() {
        "(Nothing to show: the files of this review change nothing line by line.)".to_owned()
    } else {
        cap_diff(&diff, MAX_PROMPT_DIFF_BYTES)
    };
    let mut instructions = prepared.instructions.clone();
    if let Some(extra) = request.extra_instructions {
        instructions.push_str(&format!(
            "\n\n## [review] instructions in .github/pitcrew.toml\n\n{}",
            extra.trim()
        ));
    }
    let prompt = request.prompts.render(
        Template::Review,
        &[
            ("request", request.request.trim()),
            ("context", request.context),
            ("scope", &scope_text(prepared, n, count, files)),
            ("files", &files_text(prepared, files)),
            ("diff", &shown_diff),
            ("earlier", &earlier_text(request.open, rechecks)),
            ("instructions", &instructions),
        ],
    )?;
    let findings = Arc::new(Mutex::new(Vec::new()));
    let answers = Arc::new(Mutex::new(Vec::new()));
    let mut tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(ReviewComment::new(findings.clone()).with_diff(positions.clone())),
        Arc::new(crate::tools::bash::Bash),
    ];
    if !rechecks.is_empty() {
        let count = u32::try_from(rechecks.len()).unwrap_or(u32::MAX);
        tools.push(Arc::new(RecheckFinding::new(count, answers.clone())));
    }
    let outcome = session.run_agent(prompt, Toolset::ReadOnly(tools), events).await?;
    let findings = findings.lock().unwrap_or_else(PoisonError::into_inner).clone();
    // Answers are numbered within the chunk; the review numbers them in its own list of rechecks.
    let answers = answers.lock().unwrap_or_else(PoisonError::into_inner).clone();
    let rechecks = answers
        .into_iter()
        .filter_map(|mut answer| {
            let open_index = rechecks.get(usize::try_from(answer.id).ok()?.checked_sub(1)?)?;
            let place = request.to_recheck.iter().position(|i| i == open_index)?;
            answer.id = u32::try_from(place + 1).ok()?;
            Some(answer)
        })
        .collect();
    Ok(ChunkRun {
        outcome,
        findings,
        rechecks,
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
            short_sha(since)
        ),
        Scope::Since {
            since, rebased: true, ..
        } => format!(
            "Only the files whose changes differ from what was reviewed last (commit `{}`, before a force-push).",
            short_sha(since)
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

fn short_sha(sha: &str) -> &str {
    sha.get(..7).unwrap_or(sha)
}

/// Every changed file, one line each, marked where this run does not review it.
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

/// The earlier findings block of a prompt: those already raised (not to repeat), and those of
/// `rechecks` (indices into `open`) to recheck, numbered.
fn earlier_text(open: &[Earlier], rechecks: &[usize]) -> String {
    if open.is_empty() {
        return "None: this is the first review of this pull request, or its earlier findings are all resolved."
            .to_owned();
    }
    let mut text = String::from("Already raised on this pull request (do not raise them again):\n\n");
    for e in open.iter().take(MAX_EARLIER_LISTED) {
        text.push_str(&format!(
            "- `{}` {} — {}\n",
            e.place(),
            e.severity.map_or("", Severity::as_str),
            crate::agent::context::cut(e.title(), 300)
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
        for (n, index) in rechecks.iter().enumerate() {
            let e = &open[*index];
            text.push_str(&format!(
                "{}. `{}` — {}\n",
                n + 1,
                e.place(),
                crate::agent::context::cut(&e.text, 800).replace('\n', " ")
            ));
        }
    }
    text.trim_end().to_owned()
}

/// Each finding with its fingerprint: the code it is about is read from the head commit of the
/// repository at `root`.
pub fn fingerprints(root: &Path, head: Oid, findings: &[ReviewFinding]) -> Vec<(ReviewFinding, Fingerprint)> {
    let repo = LocalRepo::open(root).ok();
    let mut files: BTreeMap<String, Option<String>> = BTreeMap::new();
    findings
        .iter()
        .map(|finding| {
            let text = files.entry(finding.path.clone()).or_insert_with(|| {
                let repo = repo.as_ref()?;
                let bytes = scope::file_at(repo, head, &finding.path, MAX_FINGERPRINTED_FILE)?;
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

/// `diff` cut to about `max` bytes at a line end, with a note of what was cut and which files the
/// agent must read for itself.
pub fn cap_diff(diff: &str, max: usize) -> String {
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
    fn earlier_findings_are_listed_and_those_to_recheck_numbered() {
        let open = [
            Earlier {
                path: "a.rs".into(),
                line: Some(3),
                severity: Some(Severity::Blocking),
                text: "Divides by zero.\n\nWhen empty.".into(),
            },
            Earlier {
                path: "b.rs".into(),
                line: None,
                severity: None,
                text: "Outdated.".into(),
            },
        ];
        insta::assert_snapshot!(earlier_text(&open, &[1]), @r"
        Already raised on this pull request (do not raise them again):

        - `a.rs:3` blocking — Divides by zero.
        - `b.rs`  — Outdated.

        Earlier findings to recheck — the new commits changed the code they are about. Read that code and answer each with `recheck_finding`:

        1. `b.rs` — Outdated.
        ");
        assert!(earlier_text(&[], &[]).starts_with("None: "));
    }
}
