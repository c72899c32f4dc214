//! What a pull request review posts. [`plan`] sorts the agent's findings — repeats of findings
//! already on the pull request dropped, the rest ordered by severity, inline on commentable lines
//! up to `[review] max_comments` (a multi-line comment only when all its lines are in one hunk),
//! the others listed in the summary. [`inline_comment`] writes one inline comment (severity,
//! category, whether it was verified, a `suggestion` block for a local fix, and its hidden
//! fingerprint). [`summary_section`] writes a review's part of the pull request's one summary
//! comment — what the pull request does, the findings table, the coverage line, the earlier
//! findings now addressed — and [`summary_comment`] puts it on top of the earlier reviews, which
//! are collapsed, with the state the next review reads.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;

use crate::agent::context::cut;
use crate::github::{ReviewCommentDraft, Side};
use crate::review::coverage::{Counted, Coverage, Skip};
use crate::review::fingerprint::{Fingerprint, Posted, is_repeat};
use crate::review::state::{ReviewState, SUMMARY_MARKER};
use crate::review::{Category, Severity};
use crate::tools::ReviewFinding;
use crate::workspace::diff::DiffPositions;

use super::markdown::{self, BODY_LIMIT, Doc};
use super::short_sha;

/// A finding listed in the summary is cut to this many bytes.
const MAX_LISTED: usize = 600;
/// Rows of the findings table; the rest are counted.
const MAX_TABLE_ROWS: usize = 50;
/// Earlier reviews kept (collapsed) under the newest.
const MAX_EARLIER: usize = 5;
/// Paths named in the coverage line; the rest are counted.
const MAX_SKIPPED_NAMED: usize = 12;

const EARLIER_MARKER: &str = "<!-- pitcrew:review-earlier -->";

/// Where a finding goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Placement {
    /// An inline comment on the diff.
    Inline,
    /// Listed in the summary: its lines are not all on the diff.
    OutsideDiff,
    /// Listed in the summary: `[review] max_comments` were inline already.
    OverLimit,
}

/// A finding to post, with its fingerprint and place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    pub finding: ReviewFinding,
    pub fingerprint: Fingerprint,
    pub placement: Placement,
}

/// What [`plan`] made of the findings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// In the order they are shown: blocking first, then suggestions, then nits, each in the order
    /// the agent gave them.
    pub findings: Vec<Planned>,
    /// Findings left out because the pull request already has them.
    pub repeats: usize,
}

impl Plan {
    pub fn inline(&self) -> impl Iterator<Item = &Planned> {
        self.findings.iter().filter(|p| p.placement == Placement::Inline)
    }

    /// Blocking findings the agent confirmed: what requests changes.
    pub fn verified_blocking(&self) -> usize {
        self.findings
            .iter()
            .filter(|p| p.finding.severity == Severity::Blocking && p.finding.verified)
            .count()
    }
}

/// Sorts `findings` (each with its fingerprint, same order) into what to post: identical findings
/// once, repeats of `posted` (and of each other) dropped, by severity, inline where every line is
/// commentable up to `max_inline`, the rest for the summary.
pub fn plan(
    findings: &[(ReviewFinding, Fingerprint)],
    positions: &DiffPositions,
    posted: &[Posted],
    max_inline: usize,
) -> Plan {
    let mut out = Plan::default();
    let mut seen = HashSet::new();
    let mut kept: Vec<Posted> = posted.to_vec();
    let mut unique: Vec<(ReviewFinding, Fingerprint)> = Vec::new();
    for (finding, fingerprint) in findings {
        if !seen.insert(fingerprint.clone()) {
            continue;
        }
        if is_repeat(fingerprint, &finding.path, &finding.body, &kept) {
            out.repeats += 1;
            continue;
        }
        kept.push(Posted {
            fingerprint: fingerprint.clone(),
            path: Some(finding.path.clone()),
            words: crate::review::fingerprint::words(&finding.body),
        });
        unique.push((finding.clone(), fingerprint.clone()));
    }
    // Stable: the agent's order within a severity.
    unique.sort_by_key(|(f, _)| f.severity);
    let mut inline = 0;
    for (finding, fingerprint) in unique {
        let (start, end) = finding.range();
        let commentable = start >= 1 && (start..=end).all(|line| positions.is_commentable(&finding.path, line));
        let placement = if !commentable {
            Placement::OutsideDiff
        } else if inline < max_inline {
            inline += 1;
            Placement::Inline
        } else {
            Placement::OverLimit
        };
        out.findings.push(Planned {
            finding,
            fingerprint,
            placement,
        });
    }
    out
}

/// The words and mark of a severity.
fn badge(severity: Severity) -> &'static str {
    match severity {
        Severity::Blocking => "🔴 blocking",
        Severity::Suggestion => "🟡 suggestion",
        Severity::Nit => "⚪ nit",
    }
}

/// `🔴 blocking · bug · unverified`.
fn label(finding: &ReviewFinding) -> String {
    let mut text = format!("{} · {}", badge(finding.severity), finding.category.as_str());
    if finding.severity == Severity::Blocking && !finding.verified {
        text.push_str(" · unverified");
    }
    text
}

/// One inline comment: its label, the finding, a suggestion block, and the hidden fingerprint.
pub fn inline_comment(planned: &Planned) -> ReviewCommentDraft {
    let finding = &planned.finding;
    let (start, end) = finding.range();
    let mut doc = Doc::new();
    doc.fixed(format!("**{}**", label(finding)));
    doc.cuttable(markdown::prose(finding.body.trim()));
    if let Some(suggestion) = &finding.suggestion {
        doc.replaceable(
            markdown::fenced("suggestion", suggestion),
            "_(The suggested change is too long to show.)_",
        );
    }
    doc.fixed(planned.fingerprint.marker());
    let multi = start < end;
    ReviewCommentDraft {
        path: finding.path.clone(),
        line: u64::from(end),
        side: Side::Right,
        start_line: multi.then_some(u64::from(start)),
        start_side: multi.then_some(Side::Right),
        body: doc.render(BODY_LIMIT),
    }
}

/// The body of the review that carries the inline comments: what it holds, and where the summary is.
pub fn review_body(job_id: &str, head: &str, plan: &Plan, summary_url: Option<&str>, requesting: bool) -> String {
    let inline = plan.inline().count();
    let mut text = format!(
        "{}\n\n{} new {} on `{}`",
        markdown::marker(job_id),
        inline,
        if inline == 1 { "finding" } else { "findings" },
        short_sha(head)
    );
    if requesting {
        let blocking = plan.verified_blocking();
        text.push_str(&format!(
            "; requesting changes for {blocking} verified blocking {}",
            if blocking == 1 { "finding" } else { "findings" }
        ));
    }
    match summary_url {
        Some(url) => text.push_str(&format!(". The [review summary]({url}) has the rest.")),
        None => text.push_str(". The review summary comment has the rest."),
    }
    text
}

/// What an incremental review covers, for its heading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Covered {
    Whole,
    /// What changed since this commit (`rebased`: after a force-push).
    Since {
        commit: String,
        rebased: bool,
    },
}

/// An earlier finding rechecked on the new code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rechecked {
    pub path: String,
    pub line: Option<u64>,
    /// The finding's first line.
    pub title: String,
    pub addressed: bool,
    pub note: String,
}

/// One review's part of the summary comment.
pub struct SummaryInput<'a> {
    pub head: &'a str,
    pub covered: &'a Covered,
    /// The agent's final words: what the pull request does, then its verdict.
    pub summary: &'a str,
    pub plan: &'a Plan,
    pub coverage: &'a Coverage,
    pub rechecked: &'a [Rechecked],
    /// `https://github.com/o/r/blob/<head>` for links to findings.
    pub blob_url: Option<&'a str>,
    /// Job, cost and time, one line.
    pub footer: &'a str,
}

/// The newest review's section of the summary comment.
pub fn summary_section(input: &SummaryInput<'_>) -> String {
    let mut doc = Doc::new();
    let heading = match input.covered {
        Covered::Whole => format!("### pitcrew review of `{}`", short_sha(input.head)),
        Covered::Since { commit, rebased } => format!(
            "### pitcrew review of `{}`: what changed since `{}`{}",
            short_sha(input.head),
            short_sha(commit),
            if *rebased { " (after a force-push)" } else { "" }
        ),
    };
    doc.fixed(heading);
    let summary = input.summary.trim();
    if !summary.is_empty() {
        doc.cuttable(markdown::prose(&cut_markdown_words(summary, 3_000)));
    }
    let findings = &input.plan.findings;
    if findings.is_empty() {
        doc.fixed(if input.plan.repeats > 0 {
            "No new findings.".to_owned()
        } else {
            "I found nothing to comment on.".to_owned()
        });
    } else {
        doc.cuttable(table(findings, input.blob_url));
        let listed: Vec<&Planned> = findings.iter().filter(|p| p.placement != Placement::Inline).collect();
        if !listed.is_empty() {
            doc.cuttable(format!(
                "**Not inline ({})** — on lines this pull request does not change, or past `[review] max_comments`:\n\n{}",
                listed.len(),
                list(&listed)
            ));
        }
    }
    if !input.rechecked.is_empty() {
        doc.cuttable(rechecked(input.rechecked, input.head));
    }
    doc.fixed(coverage_line(input.coverage));
    let mut footer = input.footer.trim().to_owned();
    if input.plan.repeats > 0 {
        let repeats = input.plan.repeats;
        footer = format!(
            "{repeats} {} already on this pull request left out · {footer}",
            if repeats == 1 { "finding" } else { "findings" }
        );
    }
    if !footer.is_empty() {
        doc.fixed(format!("<sub>{footer}</sub>"));
    }
    doc.render(BODY_LIMIT / 2)
}

/// The summary comment: `current` on top, `earlier` reviews (newest first) collapsed below, and the
/// state for the next review.
pub fn summary_comment(current: &str, earlier: &[String], state: Option<&ReviewState>) -> String {
    let mut out = format!("{SUMMARY_MARKER}\n{}\n", current.trim_end());
    let kept: Vec<&String> = earlier.iter().take(MAX_EARLIER).collect();
    let state_line = state.map(ReviewState::to_marker).unwrap_or_default();
    let mut room = BODY_LIMIT.saturating_sub(out.len() + state_line.len() + EARLIER_MARKER.len() + 64);
    if !kept.is_empty() {
        out.push('\n');
        out.push_str(EARLIER_MARKER);
        out.push('\n');
        for section in kept {
            let block = format!(
                "<details><summary>{}</summary>\n\n{}\n\n</details>\n",
                markdown::inline(&section_title(section)),
                section.trim()
            );
            if block.len() > room {
                break;
            }
            room -= block.len();
            out.push_str(&block);
        }
    }
    out.push_str(&state_line);
    out
}

/// The sections of an existing summary comment: the newest (if any) and the earlier ones, newest
/// first, each without its collapsing.
pub fn sections(body: &str) -> (Option<String>, Vec<String>) {
    let body = crate::review::state::without_state(body);
    let Some(rest) = body.strip_prefix(SUMMARY_MARKER) else {
        return (None, Vec::new());
    };
    let (current, earlier) = match rest.split_once(EARLIER_MARKER) {
        Some((current, earlier)) => (current, earlier),
        None => (rest, ""),
    };
    let mut old = Vec::new();
    for block in earlier.split("</details>\n") {
        let Some(start) = block.find("<details><summary>") else {
            continue;
        };
        let block = &block[start..];
        if let Some(end) = block.find("</summary>") {
            old.push(block[end + "</summary>".len()..].trim().to_owned());
        }
    }
    let current = current.trim();
    ((!current.is_empty()).then(|| current.to_owned()), old)
}

/// "Earlier review of `abc1234`" from a section's heading.
fn section_title(section: &str) -> String {
    let heading = section
        .lines()
        .next()
        .unwrap_or_default()
        .trim_start_matches('#')
        .trim();
    match heading.strip_prefix("pitcrew review of ") {
        Some(rest) => format!("Earlier review of {rest}"),
        None => "Earlier review".to_owned(),
    }
}

/// Cuts prose at a word boundary near `max` bytes.
fn cut_markdown_words(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let cut_at = cut(text, max);
    let end = cut_at.rfind(char::is_whitespace).unwrap_or(cut_at.len());
    format!("{} …", &text[..end])
}

fn table(findings: &[Planned], blob_url: Option<&str>) -> String {
    let mut rows = vec![
        "| | Severity | Category | Where | Finding |".to_owned(),
        "|---|---|---|---|---|".to_owned(),
    ];
    for (n, planned) in findings.iter().take(MAX_TABLE_ROWS).enumerate() {
        let f = &planned.finding;
        let place = place(f);
        let where_ = match blob_url {
            Some(url) => {
                let (start, end) = f.range();
                let anchor = if start == end {
                    format!("L{start}")
                } else {
                    format!("L{start}-L{end}")
                };
                format!(
                    "[{}]({url}/{}#{anchor})",
                    markdown::code_cell(&place),
                    encode_path(&f.path)
                )
            }
            None => markdown::code_cell(&place),
        };
        let mut severity = badge(f.severity).to_owned();
        if f.severity == Severity::Blocking && !f.verified {
            severity.push_str(" (unverified)");
        }
        let first = f.body.trim().lines().next().unwrap_or_default();
        let mut text = markdown::cell(cut(first, 200));
        if first.len() > 200 || f.body.trim().lines().count() > 1 {
            text.push_str(" …");
        }
        if planned.placement != Placement::Inline {
            text.push_str(" _(below)_");
        }
        rows.push(format!(
            "| {} | {severity} | {} | {where_} | {text} |",
            n + 1,
            category_words(f.category)
        ));
    }
    let more = findings.len().saturating_sub(MAX_TABLE_ROWS);
    if more > 0 {
        rows.push(format!("\n_{more} more not shown in the table._"));
    }
    rows.join("\n")
}

fn category_words(category: Category) -> &'static str {
    category.as_str()
}

/// A path for a URL: each segment percent-encoded where it must be.
fn encode_path(path: &str) -> String {
    path.split('/')
        .map(|segment| {
            segment
                .bytes()
                .map(|b| match b {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
                    _ => format!("%{b:02X}"),
                })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// `path:12` or `path:12-14`.
fn place(finding: &ReviewFinding) -> String {
    match finding.range() {
        (start, end) if start == end => format!("{}:{start}", finding.path),
        (start, end) => format!("{}:{start}-{end}", finding.path),
    }
}

/// Findings as a list: label, place, text, and a suggested change as a plain code block (it cannot
/// be applied from a comment).
fn list(findings: &[&Planned]) -> String {
    findings
        .iter()
        .map(|planned| {
            let f = &planned.finding;
            let text = markdown::inline(cut(f.body.trim(), MAX_LISTED));
            let ellipsis = if f.body.trim().len() > MAX_LISTED { " …" } else { "" };
            let mut item = format!("- {} {} — {text}{ellipsis}", markdown::code_span(&place(f)), label(f));
            if let Some(suggestion) = &f.suggestion {
                let block = markdown::fenced("", suggestion);
                item.push_str("\n\n  Suggested:\n\n");
                item.push_str(
                    &block
                        .lines()
                        .map(|line| {
                            if line.is_empty() {
                                String::new()
                            } else {
                                format!("  {line}")
                            }
                        })
                        .collect::<Vec<_>>()
                        .join("\n"),
                );
            }
            item
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn rechecked(items: &[Rechecked], head: &str) -> String {
    let (addressed, open): (Vec<&Rechecked>, Vec<&Rechecked>) = items.iter().partition(|r| r.addressed);
    let line = |r: &Rechecked| {
        let place = match r.line {
            Some(line) => format!("{}:{line}", r.path),
            None => r.path.clone(),
        };
        let note = if r.note.trim().is_empty() {
            String::new()
        } else {
            format!(" ({})", markdown::inline(cut(r.note.trim(), 300)))
        };
        format!(
            "- {} {}{note}",
            markdown::code_span(&place),
            markdown::inline(cut(&r.title, 200))
        )
    };
    let mut parts = Vec::new();
    if !addressed.is_empty() {
        parts.push(format!(
            "**Addressed in `{}`** ({}; their threads are resolved):\n\n{}",
            short_sha(head),
            addressed.len(),
            addressed.iter().map(|r| line(r)).collect::<Vec<_>>().join("\n")
        ));
    }
    if !open.is_empty() {
        parts.push(format!(
            "**Still open** ({}):\n\n{}",
            open.len(),
            open.iter().map(|r| line(r)).collect::<Vec<_>>().join("\n")
        ));
    }
    parts.join("\n\n")
}

/// "Reviewed 38 of 40 changed files (1,240 of 1,300 lines); skipped: `vendor/…` (ignored by config,
/// 12 files), `schema.json` (generated)." Every file left out is named (or counted past a dozen).
pub fn coverage_line(coverage: &Coverage) -> String {
    let files = |n: usize| if n == 1 { "file" } else { "files" };
    let lines = |n: u32| if n == 1 { "line" } else { "lines" };
    let reviewed = coverage.reviewed.len();
    let reviewed_lines = coverage.reviewed_lines();
    let mut text = match &coverage.since {
        None => format!(
            "Reviewed {reviewed} of {} changed {} ({} of {} {})",
            coverage.total_files,
            files(coverage.total_files),
            markdown::thousands(u64::from(reviewed_lines)),
            markdown::thousands(u64::from(coverage.total_lines)),
            lines(coverage.total_lines)
        ),
        Some(since) => format!(
            "Reviewed what changed since `{}`: {reviewed} {} ({} {}) of the pull request's {} changed {} ({} {})",
            short_sha(since),
            files(reviewed),
            markdown::thousands(u64::from(reviewed_lines)),
            lines(reviewed_lines),
            coverage.total_files,
            files(coverage.total_files),
            markdown::thousands(u64::from(coverage.total_lines)),
            lines(coverage.total_lines)
        ),
    };
    let mut left_out: Vec<(Vec<&Counted>, String)> = Vec::new();
    let mut by_reason: BTreeMap<Skip, Vec<&Counted>> = BTreeMap::new();
    for (file, why) in &coverage.skipped {
        by_reason.entry(*why).or_default().push(file);
    }
    for (why, files) in by_reason {
        left_out.push((files, why.words().to_owned()));
    }
    if !coverage.unfinished.is_empty() {
        left_out.push((
            coverage.unfinished.iter().collect(),
            "not reviewed: the review's budget ran out".to_owned(),
        ));
    }
    if !left_out.is_empty() {
        let mut named = Vec::new();
        let mut count = 0;
        let mut hidden = 0;
        for (files, why) in &left_out {
            for (shown, n) in grouped(files) {
                if count < MAX_SKIPPED_NAMED {
                    let what = if n > 1 {
                        format!("{why}, {n} files")
                    } else {
                        why.clone()
                    };
                    named.push(format!("{} ({what})", markdown::code_span(&shown)));
                    count += 1;
                } else {
                    hidden += n;
                }
            }
        }
        text.push_str("; skipped: ");
        text.push_str(&named.join(", "));
        if hidden > 0 {
            text.push_str(&format!(" and {hidden} more {}", files(hidden)));
        }
    }
    text.push('.');
    text
}

/// Paths grouped by their first directory when three or more share it (`vendor/…`).
fn grouped(files: &[&Counted]) -> Vec<(String, usize)> {
    let mut by_dir: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for file in files {
        let dir = file.path.split_once('/').map_or("", |(dir, _)| dir);
        by_dir.entry(dir).or_default().push(&file.path);
    }
    let mut out = Vec::new();
    for (dir, paths) in by_dir {
        if !dir.is_empty() && paths.len() >= 3 {
            out.push((format!("{dir}/…"), paths.len()));
        } else {
            out.extend(paths.into_iter().map(|p| (p.to_owned(), 1)));
        }
    }
    out
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use std::path::Path;
    use std::process::Command;

    use super::*;
    use crate::workspace::LocalRepo;
    use crate::workspace::diff::unified_diff;

    fn git(dir: &Path, args: &[&str]) -> String {
        let output = Command::new("git")
            .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(output.status.success(), "git {args:?}");
        String::from_utf8(output.stdout).unwrap()
    }

    /// A real diff with two hunks in `f.txt`: new lines 1-5 and 14-20.
    fn two_hunks() -> DiffPositions {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q", "-b", "main"]);
        let old: Vec<String> = (1..=20).map(|n| format!("line {n}")).collect();
        std::fs::write(root.join("f.txt"), old.join("\n") + "\n").unwrap();
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "one"]);
        let from = git(root, &["rev-parse", "HEAD"]);
        let mut new = old;
        new[1] = "line 2 changed".to_owned();
        new.insert(16, "inserted".to_owned());
        std::fs::write(root.join("f.txt"), new.join("\n") + "\n").unwrap();
        git(root, &["commit", "-q", "-am", "two"]);
        let to = git(root, &["rev-parse", "HEAD"]);
        let repo = LocalRepo::open(root).unwrap();
        let oid = |s: &str| git2::Oid::from_str(s.trim()).unwrap();
        let text = unified_diff(&repo, oid(&from), Some(oid(&to))).unwrap();
        assert_eq!(text.matches("\n@@ ").count(), 2, "{text}");
        DiffPositions::from_unified(&text)
    }

    fn finding(line: u32, end_line: Option<u32>, body: &str, severity: Severity) -> (ReviewFinding, Fingerprint) {
        let finding = ReviewFinding {
            path: "f.txt".into(),
            line,
            end_line,
            body: body.into(),
            suggestion: None,
            severity,
            category: Category::Bug,
            verified: severity == Severity::Blocking,
        };
        let fingerprint = Fingerprint::of("f.txt", &format!("line {line}"), body);
        (finding, fingerprint)
    }

    #[test]
    fn findings_are_ordered_by_severity_placed_and_repeats_dropped() {
        let positions = two_hunks();
        let mut suggestion = finding(2, None, "Say what changed.", Severity::Suggestion);
        suggestion.0.suggestion = Some("line 2, changed".into());
        let findings = vec![
            finding(3, Some(5), "These lines repeat themselves.", Severity::Nit),
            suggestion.clone(),
            // Starts in the first hunk and ends in the second: not one hunk.
            finding(4, Some(15), "Spans both hunks.", Severity::Suggestion),
            finding(17, None, "Divides by zero when empty.", Severity::Blocking),
            finding(
                10,
                None,
                "Not part of this change | but @someone should look.",
                Severity::Suggestion,
            ),
            // The same again, and one already on the pull request.
            suggestion,
            finding(18, None, "Already said before.", Severity::Suggestion),
        ];
        let posted = [Posted {
            fingerprint: findings[6].1.clone(),
            path: Some("f.txt".into()),
            words: crate::review::fingerprint::words("Already said before."),
        }];
        let plan = plan(&findings, &positions, &posted, 2);
        let shown: Vec<(u32, Severity, Placement)> = plan
            .findings
            .iter()
            .map(|p| (p.finding.line, p.finding.severity, p.placement))
            .collect();
        assert_eq!(
            shown,
            [
                (17, Severity::Blocking, Placement::Inline),
                (2, Severity::Suggestion, Placement::Inline),
                (4, Severity::Suggestion, Placement::OutsideDiff),
                (10, Severity::Suggestion, Placement::OutsideDiff),
                (3, Severity::Nit, Placement::OverLimit),
            ]
        );
        assert_eq!(
            plan.repeats, 1,
            "the identical finding is not a repeat of something posted"
        );
        assert_eq!(plan.verified_blocking(), 1);
        let comment = inline_comment(&plan.findings[1]);
        assert_eq!(
            comment.body,
            format!(
                "**🟡 suggestion · bug**\n\nSay what changed.\n\n```suggestion\nline 2, changed\n```\n\n{}",
                plan.findings[1].fingerprint.marker()
            )
        );
        assert_eq!((comment.line, comment.start_line), (2, None));
        let multi = inline_comment(&Planned {
            placement: Placement::Inline,
            ..plan.findings[4].clone()
        });
        assert_eq!((multi.start_line, multi.line), (Some(3), 5));
        assert_eq!(
            serde_json::to_value(&multi).unwrap()["start_side"],
            serde_json::json!("RIGHT")
        );
    }

    fn counted(path: &str, lines: u32) -> Counted {
        Counted {
            path: path.into(),
            lines,
        }
    }

    #[test]
    fn the_coverage_line_names_what_was_left_out() {
        let mut coverage = Coverage {
            reviewed: (0..38).map(|n| counted(&format!("src/f{n}.rs"), 30)).collect(),
            skipped: vec![(counted("schema.json", 20), Skip::Generated)],
            total_files: 40,
            total_lines: 1_300,
            since: None,
            unfinished: Vec::new(),
        };
        for n in 0..3 {
            coverage.skipped.push((
                counted(&format!("vendor/lib{n}/x.go"), 20),
                Skip::Config("ignored by config"),
            ));
        }
        coverage.total_files = 42;
        insta::assert_snapshot!(coverage_line(&coverage), @"Reviewed 38 of 42 changed files (1,140 of 1,300 lines); skipped: `vendor/…` (ignored by config, 3 files), `schema.json` (generated).");
        coverage.since = Some("9f8e7d6c5b4a39281706f5e4d3c2b1a098765432".into());
        coverage.reviewed.truncate(2);
        coverage.skipped.clear();
        coverage.unfinished = vec![counted("big/one.rs", 4_000)];
        insta::assert_snapshot!(coverage_line(&coverage), @"Reviewed what changed since `9f8e7d6`: 2 files (60 lines) of the pull request's 42 changed files (1,300 lines); skipped: `big/one.rs` (not reviewed: the review's budget ran out).");
    }

    #[test]
    fn the_summary_comment_keeps_earlier_reviews_collapsed_and_the_state_last() {
        let positions = two_hunks();
        let findings = vec![
            finding(17, None, "Divides by zero when `items` is empty.", Severity::Blocking),
            finding(10, None, "Not changed here, <!-- but --> still wrong.", Severity::Nit),
        ];
        let plan = plan(&findings, &positions, &[], 10);
        let coverage = Coverage {
            reviewed: vec![counted("f.txt", 3)],
            total_files: 1,
            total_lines: 3,
            ..Coverage::default()
        };
        let head = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678";
        let section = summary_section(&SummaryInput {
            head,
            covered: &Covered::Whole,
            summary: "Adds an average to the report.\nOne real bug.",
            plan: &plan,
            coverage: &coverage,
            rechecked: &[Rechecked {
                path: "f.txt".into(),
                line: Some(2),
                title: "Say what changed.".into(),
                addressed: true,
                note: "renamed".into(),
            }],
            blob_url: Some("https://github.com/o/r/blob/a1b2c3d"),
            footer: "job 7 · $0.0123 · 42s",
        });
        insta::assert_snapshot!(section, @r"
        ### pitcrew review of `a1b2c3d`

        Adds an average to the report.
        One real bug.

        | | Severity | Category | Where | Finding |
        |---|---|---|---|---|
        | 1 | 🔴 blocking | bug | [`f.txt:17`](https://github.com/o/r/blob/a1b2c3d/f.txt#L17) | Divides by zero when `items` is empty. |
        | 2 | ⚪ nit | bug | [`f.txt:10`](https://github.com/o/r/blob/a1b2c3d/f.txt#L10) | Not changed here, &lt;!-- but --&gt; still wrong. _(below)_ |

        **Not inline (1)** — on lines this pull request does not change, or past `[review] max_comments`:

        - `f.txt:10` ⚪ nit · bug — Not changed here, &lt;!-- but --&gt; still wrong.

        **Addressed in `a1b2c3d`** (1; their threads are resolved):

        - `f.txt:2` Say what changed. (renamed)

        Reviewed 1 of 1 changed file (3 of 3 lines).

        <sub>job 7 · $0.0123 · 42s</sub>
        ");
        let state = ReviewState {
            head: head.into(),
            merge_base: "b".repeat(40),
            fingerprints: vec![],
        };
        let first = summary_comment(&section, &[], Some(&state));
        assert!(first.starts_with(SUMMARY_MARKER));
        assert_eq!(ReviewState::read(&first), Some(state.clone()));
        let (current, earlier) = sections(&first);
        assert_eq!(current.as_deref(), Some(section.trim()));
        assert!(earlier.is_empty());
        // The next review goes on top; the first is collapsed under it.
        let second = summary_comment(
            "### pitcrew review of `ffffff0`\n\nNew.",
            std::slice::from_ref(&section),
            Some(&state),
        );
        assert!(
            second.contains("<details><summary>Earlier review of `a1b2c3d`</summary>"),
            "{second}"
        );
        let (current, earlier) = sections(&second);
        assert_eq!(current.as_deref(), Some("### pitcrew review of `ffffff0`\n\nNew."));
        assert_eq!(earlier, [section.trim().to_owned()]);
        assert!(second.trim_end().ends_with(" -->") && ReviewState::read(&second).is_some());
        // Only the last few are kept.
        let many: Vec<String> = (0..9)
            .map(|n| format!("### pitcrew review of `{n:07}`\n\nOld."))
            .collect();
        let (_, kept) = sections(&summary_comment("### new", &many, None));
        assert_eq!(kept.len(), MAX_EARLIER);
    }
}
