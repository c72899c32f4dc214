//! `pitcrew review`: the pull-request reviewer ([`crate::reviewer`]) on a local branch — the diff of
//! its head against the merge base with a base (`--base`, else the default branch: `origin/HEAD`,
//! `origin/main`, `origin/master`, `main`, `master`), with the checkout's `.github/pitcrew.toml`
//! `[review]` settings. The agent works in a copy of the head that borrows the repository's
//! objects, so whatever it runs cannot touch the developer's working tree or branches; only
//! committed changes are reviewed. The findings come back for the terminal (`file:line: severity:
//! text`) or as JSON, and the exit status says whether one reached `--fail-on`.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::agent::events::EventSink;
use crate::config::Config;
use crate::llm::{Model, Usage};
use crate::prompts::Prompts;
use crate::report::review::{Placement, plan};
use crate::review::{Category, Severity};
use crate::reviewer::{self, Budget, Request, ReviewerError};
use crate::session::{AgentRun, AgentSession, CodeIndex, SessionError, image};
use crate::workspace::diff::DiffPositions;
use crate::workspace::{LocalRepo, WorkspaceError};

/// The bases tried, in order, when none is given.
const DEFAULT_BASES: &[&str] = &["origin/HEAD", "origin/main", "origin/master", "main", "master"];

pub struct ReviewOptions {
    pub repo: PathBuf,
    /// The base to diff against (any revision); `None`: the default branch.
    pub base: Option<String>,
    pub config: Config,
    pub prompts: Prompts,
    /// The front end (progress display).
    pub events: Arc<dyn EventSink>,
    /// Replaces the configured model (tests hand in a scripted one).
    pub model: Option<Arc<dyn Model>>,
    pub cancel: CancellationToken,
}

#[derive(Debug, thiserror::Error)]
pub enum ReviewRunError {
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error(transparent)]
    Reviewer(#[from] ReviewerError),
    #[error("{0}")]
    Base(String),
}

/// One finding, for the terminal and for `--json`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct LocalFinding {
    pub path: String,
    pub line: u32,
    pub end_line: Option<u32>,
    pub severity: Severity,
    pub category: Category,
    pub verified: bool,
    pub body: String,
    pub suggestion: Option<String>,
    /// Whether the lines are among those the branch changed.
    pub on_diff: bool,
}

/// What the review found, for people ([`render_text`]) and machines (`--json`).
#[derive(Debug, Clone, Serialize)]
pub struct LocalReview {
    pub head: String,
    /// The base as given or found, and where the branch left it.
    pub base: String,
    pub merge_base: String,
    /// Most important first.
    pub findings: Vec<LocalFinding>,
    /// What the change does and the verdict.
    pub summary: String,
    /// The coverage line (every file left out is named).
    pub coverage: String,
    pub files_reviewed: usize,
    pub files_changed: usize,
    /// `finished`, or why a part of the review stopped early (`budget_exhausted`, …).
    pub status: &'static str,
    pub usage: Usage,
    pub cost_usd: Option<f64>,
    pub steps: u32,
    pub duration_ms: u64,
}

impl LocalReview {
    /// Whether a finding at `threshold` or above exists (blocking is above suggestion, above nit).
    pub fn reaches(&self, threshold: Severity) -> bool {
        self.findings.iter().any(|f| f.severity <= threshold)
    }
}

/// Reviews the branch of `options.repo`.
pub async fn review(options: ReviewOptions) -> Result<LocalReview, ReviewRunError> {
    let repo = LocalRepo::open(&options.repo)?;
    let head = repo.head()?;
    let (base_name, base) = match &options.base {
        Some(given) => {
            let base = repo
                .resolve(given)
                .ok_or_else(|| ReviewRunError::Base(format!("`{given}` names no commit of this repository")))?;
            (given.clone(), base)
        }
        None => DEFAULT_BASES
            .iter()
            .find_map(|name| Some((name.to_string(), repo.resolve(name)?)))
            .ok_or_else(|| {
                ReviewRunError::Base(format!(
                    "no default branch found ({}); name the base with --base",
                    DEFAULT_BASES.join(", ")
                ))
            })?,
    };
    // The checkout's own configuration: `[review]` paths, instructions, the image.
    let settings = image::checkout_config(repo.root()).apply(&options.config);
    let id = format!("review-{}", &head.to_string()[..12]);
    let scratch = tempfile::Builder::new()
        .prefix("pitcrew-review-")
        .tempdir()
        .map_err(|source| WorkspaceError::Io {
            context: "a scratch directory for the review".to_owned(),
            source,
        })?;
    let copy = repo.detached_copy(head, &scratch.path().join("checkout"))?;
    let prepared = reviewer::prepare(&copy, base, head, &base_name, None, &settings.review, false)?;
    let root = copy.root().to_owned();
    drop(copy);

    let run_dir = repo.git_dir().join("pitcrew").join("reviews").join(&id);
    let mut session = AgentSession::start(AgentRun {
        config: &options.config,
        settings: &settings,
        prompts: &options.prompts,
        model: options.model,
        sandbox_id: id,
        root: root.clone(),
        run_dir,
        network_step: None,
        index: CodeIndex::for_checkout(&options.config, repo.git_dir()),
        cancel: options.cancel.clone(),
    })
    .await?;
    let context = format!(
        "A local run of `pitcrew review` on the branch at {} (commit `{}`), against `{base_name}`. The developer \
         reads the findings in their terminal before pushing.",
        repo.root().display(),
        &head.to_string()[..7],
    );
    let request = Request {
        prompts: &options.prompts,
        request: "Review this change.",
        context: &context,
        extra_instructions: settings.review.instructions.as_deref(),
        open: &[],
        to_recheck: &[],
    };
    let budget = Budget {
        max_steps: settings.max_steps,
        max_cost_usd: settings.max_cost_usd,
        max_wall_time: settings.max_wall_time,
    };
    let cancel = options.cancel.clone();
    let cancelled = move || cancel.is_cancelled();
    let reviewed = reviewer::review(&mut session, &prepared, &request, budget, options.events, &cancelled).await;
    let _ = session.stop().await;
    let reviewed = reviewed?;

    let fingerprinted = reviewer::fingerprints(&root, head, &reviewed.findings);
    let positions = DiffPositions::from_unified(&prepared.diff);
    let planned = plan(&fingerprinted, &positions, &[], usize::MAX);
    let findings = planned
        .findings
        .into_iter()
        .map(|p| LocalFinding {
            on_diff: p.placement == Placement::Inline,
            path: p.finding.path,
            line: p.finding.line,
            end_line: p.finding.end_line,
            severity: p.finding.severity,
            category: p.finding.category,
            verified: p.finding.verified,
            body: p.finding.body,
            suggestion: p.finding.suggestion,
        })
        .collect();
    let (mut usage, mut cost, mut steps, mut duration) = (Usage::default(), Some(0.0), 0, 0);
    for outcome in &reviewed.outcomes {
        usage.input_tokens += outcome.usage.usage.input_tokens;
        usage.output_tokens += outcome.usage.usage.output_tokens;
        usage.cache_read_tokens += outcome.usage.usage.cache_read_tokens;
        usage.cache_write_tokens += outcome.usage.usage.cache_write_tokens;
        cost = match (cost, outcome.usage.cost_usd) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        steps += outcome.steps;
        duration += outcome.duration_ms;
    }
    Ok(LocalReview {
        head: head.to_string(),
        base: base_name,
        merge_base: prepared.merge_base.to_string(),
        findings,
        summary: reviewed.summary.clone(),
        coverage: crate::report::review::coverage_line(&reviewed.coverage),
        files_reviewed: reviewed.coverage.reviewed.len(),
        files_changed: reviewed.coverage.total_files,
        status: reviewed.stopped.as_ref().map_or("finished", |stop| stop.label()),
        usage,
        cost_usd: cost,
        steps,
        duration_ms: duration,
    })
}

/// The review for a terminal: one `path:line: severity: text` line per finding (continuation lines
/// indented, the suggestion after it), then the summary and the coverage line.
pub fn render_text(review: &LocalReview) -> String {
    let mut out = String::new();
    for f in &review.findings {
        let place = match f.end_line {
            Some(end) if end != f.line => format!("{}:{}-{end}", f.path, f.line),
            _ => format!("{}:{}", f.path, f.line),
        };
        let mut label = format!("{} ({})", f.severity.as_str(), f.category.as_str());
        if f.severity == Severity::Blocking && !f.verified {
            label.push_str(" [unverified]");
        }
        let mut lines = f.body.trim().lines();
        out.push_str(&format!("{place}: {label}: {}\n", lines.next().unwrap_or_default()));
        for line in lines {
            out.push_str(&format!("    {line}\n"));
        }
        if let Some(suggestion) = &f.suggestion {
            out.push_str("    suggested:\n");
            for line in suggestion.lines() {
                out.push_str(&format!("    | {line}\n"));
            }
        }
    }
    if review.findings.is_empty() {
        out.push_str("No findings.\n");
    }
    out.push('\n');
    if !review.summary.trim().is_empty() {
        out.push_str(review.summary.trim());
        out.push_str("\n\n");
    }
    out.push_str(&review.coverage);
    out.push('\n');
    if review.status != "finished" {
        out.push_str(&format!(
            "The review stopped early ({}): the files named above as not reviewed were not read.\n",
            review.status
        ));
    }
    out
}
