//! A pull request review from the agent's findings: inline comments only on lines the diff shows
//! (a multi-line comment only when all its lines are in one hunk), GitHub `suggestion` blocks for
//! local changes, and a summary body that lists — rather than silently drops — the findings that
//! cannot be inline comments.

use std::collections::HashSet;

use serde::Serialize;

use crate::agent::context::cut;
use crate::github::{ReviewCommentDraft, Side};
use crate::tools::ReviewFinding;
use crate::workspace::diff::DiffPositions;

use super::markdown::{self, BODY_LIMIT, Doc};

/// Inline comments per review: past this a review stops being read.
pub const MAX_INLINE_COMMENTS: usize = 30;
/// A finding listed in the review body is cut to this many bytes.
const MAX_LISTED: usize = 600;

/// A review ready to post (as a `COMMENT` review). Its comments are always on the new version
/// (`Side::Right`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReviewDraft {
    pub body: String,
    pub comments: Vec<ReviewCommentDraft>,
}

/// The review for `findings` on the diff `diff`, with `summary` (the model's overall verdict) on top.
///
/// A finding becomes an inline comment when every line of its range is commentable. Two hunks are
/// always separated by at least one line the diff does not show (else they would be one hunk), so
/// a range whose lines are all commentable lies within one hunk, as GitHub requires.
pub fn draft(job_id: &str, summary: &str, findings: &[ReviewFinding], diff: &DiffPositions) -> ReviewDraft {
    let mut seen = HashSet::new();
    let unique: Vec<&ReviewFinding> = findings
        .iter()
        .filter(|f| {
            let (start, end) = f.range();
            seen.insert((
                f.path.trim().to_owned(),
                start,
                end,
                f.body.trim().to_owned(),
                f.suggestion.clone(),
            ))
        })
        .collect();
    let (inline, outside): (Vec<&ReviewFinding>, Vec<&ReviewFinding>) = unique.into_iter().partition(|f| {
        let (start, end) = f.range();
        start >= 1 && (start..=end).all(|line| diff.is_commentable(&f.path, line))
    });
    let overflow = inline.len().saturating_sub(MAX_INLINE_COMMENTS);
    let comments: Vec<ReviewCommentDraft> = inline.iter().take(MAX_INLINE_COMMENTS).map(|f| comment(f)).collect();

    let mut doc = Doc::new();
    doc.fixed(markdown::marker(job_id));
    let summary = summary.trim();
    if !summary.is_empty() {
        doc.cuttable(markdown::prose(summary));
    } else if findings.is_empty() {
        doc.fixed("I found nothing to comment on.");
    }
    if !outside.is_empty() {
        doc.cuttable(format!(
            "**Outside the diff ({})**: these are on lines this pull request does not change, so they cannot be \
             inline comments.\n\n{}",
            outside.len(),
            list(&outside)
        ));
    }
    if overflow > 0 {
        doc.cuttable(format!(
            "**{overflow} more {}** on changed lines, left out of the inline comments to keep this review readable \
             (the first {MAX_INLINE_COMMENTS} are inline):\n\n{}",
            if overflow == 1 { "finding" } else { "findings" },
            list(&inline[MAX_INLINE_COMMENTS..])
        ));
    }
    ReviewDraft {
        body: doc.render(BODY_LIMIT),
        comments,
    }
}

fn comment(finding: &ReviewFinding) -> ReviewCommentDraft {
    let (start, end) = finding.range();
    let mut doc = Doc::new();
    doc.cuttable(markdown::prose(finding.body.trim()));
    if let Some(suggestion) = &finding.suggestion {
        doc.replaceable(
            markdown::fenced("suggestion", suggestion),
            "_(The suggested change is too long to show.)_",
        );
    }
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

/// `path:12` or `path:12-14`.
fn place(finding: &ReviewFinding) -> String {
    match finding.range() {
        (start, end) if start == end => format!("{}:{start}", finding.path),
        (start, end) => format!("{}:{start}-{end}", finding.path),
    }
}

/// Findings as a list: `path:line` — text, with a suggested change as a plain code block (it
/// cannot be applied from the review body).
fn list(findings: &[&ReviewFinding]) -> String {
    findings
        .iter()
        .map(|f| {
            let text = markdown::inline(cut(f.body.trim(), MAX_LISTED));
            let ellipsis = if f.body.trim().len() > MAX_LISTED { " …" } else { "" };
            let mut item = format!("- {} — {text}{ellipsis}", markdown::code_span(&place(f)));
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

    fn finding(line: u32, end_line: Option<u32>, body: &str, suggestion: Option<&str>) -> ReviewFinding {
        ReviewFinding {
            path: "f.txt".into(),
            line,
            end_line,
            body: body.into(),
            suggestion: suggestion.map(str::to_owned),
        }
    }

    fn show(draft: &ReviewDraft) -> String {
        let comments: Vec<String> = draft
            .comments
            .iter()
            .map(|c| {
                let range = match c.start_line {
                    Some(start) => format!("{start}-{}", c.line),
                    None => c.line.to_string(),
                };
                format!("## {}:{range}\n{}", c.path, c.body)
            })
            .collect();
        format!("{}\n\n# comments\n{}", draft.body, comments.join("\n"))
    }

    #[test]
    fn only_lines_in_the_diff_become_inline_comments() {
        let positions = two_hunks();
        let findings = [
            finding(2, None, "Say what changed.", Some("line 2, changed")),
            finding(3, Some(5), "These three lines repeat themselves.", None),
            // Starts in the first hunk and ends in the second: not one hunk.
            finding(4, Some(15), "Spans both hunks.", None),
            finding(
                10,
                None,
                "Not part of this change | but worth a look @someone.",
                Some("line 10 fixed"),
            ),
            finding(17, None, "Use a code block:", Some("```\ninserted\n```")),
            // The same finding again.
            finding(2, None, "Say what changed.", Some("line 2, changed")),
            // Reversed range, normalised.
            finding(16, Some(14), "Reversed range.", None),
            ReviewFinding {
                path: "other.txt".into(),
                ..finding(1, None, "Another file.", None)
            },
        ];
        let draft = draft(
            "42",
            "Two small things, and one outside the diff.",
            &findings,
            &positions,
        );
        insta::assert_snapshot!(show(&draft).replace('\u{200b}', "<ZWSP>"), @r"
        <!-- pitcrew:job=42 -->

        Two small things, and one outside the diff.

        **Outside the diff (3)**: these are on lines this pull request does not change, so they cannot be inline comments.

        - `f.txt:4-15` — Spans both hunks.
        - `f.txt:10` — Not part of this change | but worth a look @<ZWSP>someone.

          Suggested:

          ```
          line 10 fixed
          ```
        - `other.txt:1` — Another file.

        # comments
        ## f.txt:2
        Say what changed.

        ```suggestion
        line 2, changed
        ```
        ## f.txt:3-5
        These three lines repeat themselves.
        ## f.txt:17
        Use a code block:

        ````suggestion
        ```
        inserted
        ```
        ````
        ## f.txt:14-16
        Reversed range.
        ");
        // The JSON GitHub gets: a multi-line comment carries both sides, a single-line one neither start.
        let json = serde_json::to_value(&draft.comments).unwrap();
        assert_eq!(
            json[1],
            serde_json::json!({"path": "f.txt", "line": 5, "side": "RIGHT", "start_line": 3, "start_side": "RIGHT",
                "body": "These three lines repeat themselves."})
        );
        assert!(json[0].get("start_line").is_none());
        // Every inline comment is on commentable lines.
        for c in &draft.comments {
            for line in c.start_line.unwrap_or(c.line)..=c.line {
                assert!(positions.is_commentable(&c.path, u32::try_from(line).unwrap()));
            }
        }
    }

    #[test]
    fn inline_comments_are_capped_and_the_rest_listed() {
        let positions = two_hunks();
        // 12 commentable lines (1-5 and 14-20), three findings each = 36 findings.
        let findings: Vec<ReviewFinding> = [1, 2, 3, 4, 5, 14, 15, 16, 17, 18, 19, 20]
            .into_iter()
            .flat_map(|line| (1..=3).map(move |n| finding(line, None, &format!("finding {n}"), None)))
            .collect();
        let draft = draft("42", "", &findings, &positions);
        assert_eq!(draft.comments.len(), MAX_INLINE_COMMENTS);
        assert!(
            draft
                .body
                .contains("**6 more findings** on changed lines, left out of the inline comments"),
            "{}",
            draft.body
        );
        assert_eq!(draft.body.matches("\n- `f.txt:").count(), 6);
        assert!(draft.body.ends_with("- `f.txt:20` — finding 3"));
    }

    #[test]
    fn an_empty_review_says_so() {
        let draft = draft("42", "", &[], &DiffPositions::default());
        assert_eq!(draft.body, "<!-- pitcrew:job=42 -->\n\nI found nothing to comment on.");
        assert!(draft.comments.is_empty());
    }
}
