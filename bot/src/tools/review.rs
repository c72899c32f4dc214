//! `review_comment`: how a reviewing agent records a finding ([`ReviewFinding`]) — a place in the
//! new version of a file, what is wrong there, how much it matters (severity, category), whether
//! the agent confirmed it and, when the fix is local, the replacement lines — for the job to post
//! as a pull request review once the agent is done (`report::review` drafts it). `recheck_finding`
//! answers whether an earlier finding on code that changed still applies ([`Recheck`]).

use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::files::blocking;
use super::{BoxFuture, Tool, ToolContext, ToolError, parse_args};
use crate::review::{Category, Severity};
use crate::workspace::diff::DiffPositions;
use crate::workspace::is_git_dir;

/// Findings one review takes; past this the model is told to finish (a review of a hundred
/// comments is not read, and a looping model must not grow the list without end).
pub const MAX_FINDINGS: usize = 100;

/// Something the agent found, on line `line` (to `end_line`) of the new version of `path`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ReviewFinding {
    pub path: String,
    pub line: u32,
    #[serde(default)]
    pub end_line: Option<u32>,
    /// Markdown.
    pub body: String,
    /// The replacement for the lines `line..=end_line`, verbatim (no fence).
    #[serde(default)]
    pub suggestion: Option<String>,
    #[serde(default)]
    pub severity: Severity,
    #[serde(default)]
    pub category: Category,
    /// The agent confirmed it (read the callers, ran the test, tried the input).
    #[serde(default)]
    pub verified: bool,
}

impl ReviewFinding {
    /// The first and last line, in order.
    pub fn range(&self) -> (u32, u32) {
        let end = self.end_line.unwrap_or(self.line);
        (self.line.min(end), self.line.max(end))
    }
}

/// `review_comment`: records one finding in the list it was made with. Each job makes its own.
pub struct ReviewComment {
    findings: Arc<Mutex<Vec<ReviewFinding>>>,
    /// The diff under review, so the model hears at once which findings cannot be inline comments.
    diff: Option<DiffPositions>,
}

impl ReviewComment {
    /// A tool that appends to `findings`.
    pub fn new(findings: Arc<Mutex<Vec<ReviewFinding>>>) -> Self {
        ReviewComment { findings, diff: None }
    }

    /// Tells the model, for each finding, whether it lands on lines the diff shows.
    pub fn with_diff(mut self, diff: DiffPositions) -> Self {
        self.diff = Some(diff);
        self
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    // Signed, so that `0` and `-3` get a message about line numbers rather than serde's about types.
    line: i64,
    end_line: Option<i64>,
    body: String,
    suggestion: Option<String>,
    severity: Option<String>,
    category: Option<String>,
    verified: Option<bool>,
}

impl Tool for ReviewComment {
    fn name(&self) -> &'static str {
        "review_comment"
    }

    fn description(&self) -> &'static str {
        "Record one review finding: a concrete problem at a place in the pull request's new code. `path` is the \
         file relative to the repository root, `line` the line number in the file as it is now (read_file's \
         numbers), `end_line` the last line when the finding covers several. `body` says what is wrong and why \
         it matters (markdown). `suggestion` is optional: the exact text that should replace lines \
         line..=end_line, without a code fence, with the original indentation; give it only when the fix is a \
         local replacement of those lines. `severity`: `blocking` (a bug, a security hole, a broken contract: the \
         pull request should not merge as it is), `suggestion` (worth changing) or `nit` (polish). `category`: bug, \
         security, performance, tests, maintainability or style. `verified`: true only when you confirmed the \
         problem (read the callers, ran a test, tried the input); a blocking finding you could not confirm is \
         shown as unverified. Findings on lines the diff shows become inline comments; others are listed in the \
         review's summary. Call once per finding, most important first; the review is posted when you finish."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file, relative to the repository root."},
                "line": {"type": "integer", "minimum": 1, "description": "First line of the finding (1-based, in the file as it is now)."},
                "end_line": {"type": "integer", "minimum": 1, "description": "Last line, when the finding covers several; at least `line`."},
                "body": {"type": "string", "description": "What is wrong and why it matters (markdown)."},
                "suggestion": {"type": "string", "description": "The replacement for lines line..=end_line, verbatim, no fence. Only for a local fix."},
                "severity": {"type": "string", "enum": ["blocking", "suggestion", "nit"], "description": "How much it matters."},
                "category": {"type": "string", "enum": ["bug", "security", "performance", "tests", "maintainability", "style"], "description": "What it is about."},
                "verified": {"type": "boolean", "description": "True only when you confirmed the problem (read the callers, ran a test, tried the input)."}
            },
            "required": ["path", "line", "body", "severity", "category"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        // It writes nothing to the workspace, but the findings keep the order the model gave them
        // (most important first), which concurrent calls would shuffle.
        false
    }

    fn call<'a>(&'a self, ctx: &'a ToolContext, args: Map<String, Value>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let args: Args = parse_args(self.name(), args)?;
            let (line, end_line) = lines(args.line, args.end_line)?;
            if args.body.trim().is_empty() {
                return Err(ToolError::respond(
                    "the body is empty: say what is wrong at this place and why it matters",
                ));
            }
            // Liberal in what it takes: a missing severity or category gets the default, a word of
            // another case is read, an unknown one is refused with the choices.
            let severity = match args.severity.as_deref() {
                None => Severity::default(),
                Some(word) => Severity::parse(word).ok_or_else(|| {
                    ToolError::respond(format!("`severity` is {word:?}; use `blocking`, `suggestion` or `nit`"))
                })?,
            };
            let category = match args.category.as_deref() {
                None => Category::default(),
                Some(word) => Category::parse(word).ok_or_else(|| {
                    ToolError::respond(format!(
                        "`category` is {word:?}; use bug, security, performance, tests, maintainability or style"
                    ))
                })?,
            };
            let path = existing_file(ctx, &args.path, end_line.unwrap_or(line)).await?;
            let finding = ReviewFinding {
                path,
                line,
                end_line,
                body: args.body,
                suggestion: args.suggestion,
                severity,
                category,
                verified: args.verified.unwrap_or(false),
            };
            let place = match finding.end_line {
                Some(end) => format!("{}:{line}-{end}", finding.path),
                None => format!("{}:{line}", finding.path),
            };
            let inline = self.diff.as_ref().map(|diff| {
                let (start, end) = finding.range();
                (start..=end).all(|n| diff.is_commentable(&finding.path, n))
            });
            let with_suggestion = finding.suggestion.is_some();
            let count = {
                let mut findings = self.findings.lock().unwrap_or_else(PoisonError::into_inner);
                if findings.len() >= MAX_FINDINGS {
                    return Err(ToolError::respond(format!(
                        "you have recorded {MAX_FINDINGS} findings, the most one review takes; finish with your \
                         summary now"
                    )));
                }
                findings.push(finding);
                findings.len()
            };
            let mut answer = format!(
                "Recorded finding {count} at `{place}`{}.",
                if with_suggestion {
                    " with a suggested change"
                } else {
                    ""
                }
            );
            if severity == Severity::Blocking && !args.verified.unwrap_or(false) {
                answer.push_str(
                    " It is blocking but not verified: confirm it (read the callers, run a test) and record it again \
                     with `verified: true`, or it is posted as unverified.",
                );
            }
            match inline {
                Some(true) => answer.push_str(" It will be an inline comment on the diff."),
                Some(false) => answer.push_str(
                    " These lines are not all in the diff, so it will be listed in the review's summary instead of \
                     an inline comment.",
                ),
                None => {}
            }
            Ok(answer)
        })
    }
}

/// The agent's answer about an earlier finding on code the new commits changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recheck {
    /// The number the prompt gave the finding.
    pub id: u32,
    /// The finding still holds on the new code.
    pub still_applies: bool,
    /// What the agent saw, in a sentence.
    pub note: String,
}

/// `recheck_finding`: records whether an earlier finding still applies. Offered only when the
/// prompt lists earlier findings to recheck (numbered from 1).
pub struct RecheckFinding {
    count: u32,
    answers: Arc<Mutex<Vec<Recheck>>>,
}

impl RecheckFinding {
    /// A tool for findings `1..=count`, whose answers go to `answers` (a later answer about the same
    /// finding replaces the earlier one).
    pub fn new(count: u32, answers: Arc<Mutex<Vec<Recheck>>>) -> Self {
        RecheckFinding { count, answers }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecheckArgs {
    id: i64,
    status: String,
    note: Option<String>,
}

impl Tool for RecheckFinding {
    fn name(&self) -> &'static str {
        "recheck_finding"
    }

    fn description(&self) -> &'static str {
        "Say whether an earlier review finding (listed under \"Earlier findings to recheck\", by number) still \
         applies to the code as it is now. `status`: `addressed` when the new code fixed it or made it moot, \
         `still_applies` when the problem is still there. `note`: one sentence on what you saw. Read the code \
         before answering; answer each listed finding once."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "integer", "minimum": 1, "description": "The finding's number in the list."},
                "status": {"type": "string", "enum": ["addressed", "still_applies"]},
                "note": {"type": "string", "description": "One sentence on what you saw."}
            },
            "required": ["id", "status"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, _ctx: &'a ToolContext, args: Map<String, Value>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let args: RecheckArgs = parse_args(self.name(), args)?;
            let id = u32::try_from(args.id)
                .ok()
                .filter(|id| (1..=self.count).contains(id))
                .ok_or_else(|| {
                    ToolError::respond(format!(
                        "there is no earlier finding {}: the list has findings 1 to {}",
                        args.id, self.count
                    ))
                })?;
            let still_applies = match args.status.trim().to_ascii_lowercase().as_str() {
                "addressed" => false,
                "still_applies" | "still applies" => true,
                other => {
                    return Err(ToolError::respond(format!(
                        "`status` is {other:?}; use `addressed` or `still_applies`"
                    )));
                }
            };
            let note = args.note.unwrap_or_default().trim().to_owned();
            let mut answers = self.answers.lock().unwrap_or_else(PoisonError::into_inner);
            answers.retain(|a| a.id != id);
            answers.push(Recheck {
                id,
                still_applies,
                note,
            });
            Ok(format!(
                "Finding {id}: {}.",
                if still_applies {
                    "still applies; its thread stays open"
                } else {
                    "addressed; its thread will be resolved"
                }
            ))
        })
    }
}

/// The first line and the last (when it differs), checked: 1-based, in order, and within `u32`.
fn lines(line: i64, end_line: Option<i64>) -> Result<(u32, Option<u32>), ToolError> {
    let number = |n: i64, name: &str| {
        u32::try_from(n)
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| ToolError::respond(format!("`{name}` is {n}: lines are numbered from 1")))
    };
    let line = number(line, "line")?;
    let end_line = end_line.map(|end| number(end, "end_line")).transpose()?;
    match end_line {
        Some(end) if end < line => Err(ToolError::respond(format!(
            "`end_line` ({end}) is before `line` ({line}); give the first line as `line` and the last as `end_line`"
        ))),
        Some(end) if end == line => Ok((line, None)),
        other => Ok((line, other)),
    }
}

/// The path of a file of the repository as reviews name it (relative to the root), checked to
/// exist and to have at least `last_line` lines.
async fn existing_file(ctx: &ToolContext, given: &str, last_line: u32) -> Result<String, ToolError> {
    let resolved = ctx.workspace.resolve_read(given)?;
    let root = ctx.workspace.root().to_owned();
    let shown = ctx.workspace.display(&resolved);
    let given = given.to_owned();
    let workspace = ctx.workspace.clone();
    blocking(move || {
        // The run directory is readable too, but a saved tool output is no file of the pull request.
        let relative = resolved
            .strip_prefix(&root)
            .map_err(|_| ToolError::respond(format!("`{given}` is not a file of the repository")))?;
        if relative.as_os_str().is_empty() || relative.components().any(|c| is_git_dir(c.as_os_str())) {
            return Err(ToolError::respond(format!("`{given}` is not a file of the repository")));
        }
        let meta = match workspace.metadata(&resolved) {
            Ok(meta) => meta,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(ToolError::respond(format!(
                    "`{given}` does not exist in the pull request's code, so nothing can be said about it; name \
                     a file that exists, relative to the repository root (list_dir and glob show them)"
                )));
            }
            Err(error) => return Err(ToolError::respond(format!("`{given}`: {error}"))),
        };
        if meta.is_dir() {
            return Err(ToolError::respond(format!(
                "`{shown}` is a directory; a finding is on lines of a file"
            )));
        }
        let mut bytes = Vec::new();
        workspace
            .open(&resolved)
            .and_then(|mut file| std::io::Read::read_to_end(&mut file, &mut bytes))
            .map_err(|e| ToolError::respond(format!("`{shown}`: {e}")))?;
        let count = line_count(&bytes);
        if u64::from(last_line) > count {
            return Err(ToolError::respond(format!(
                "`{shown}` has {count} line{}; line {last_line} is past its end",
                if count == 1 { "" } else { "s" }
            )));
        }
        Ok(shown)
    })
    .await
}

/// Lines as editors number them: a last line without a newline still counts.
fn line_count(bytes: &[u8]) -> u64 {
    let newlines = bytes.iter().filter(|b| **b == b'\n').count() as u64;
    if bytes.last().is_some_and(|b| *b != b'\n') {
        newlines + 1
    } else {
        newlines
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::tools::test_support::{call, message, workspace_with};

    const CALC: &str = "add() {\n    echo $(($1 - $2))\n}\n";

    fn tool() -> (ReviewComment, Arc<Mutex<Vec<ReviewFinding>>>) {
        let findings = Arc::new(Mutex::new(Vec::new()));
        (ReviewComment::new(findings.clone()), findings)
    }

    #[tokio::test]
    async fn a_finding_is_recorded_with_its_path_relative_to_the_root() {
        let (_dir, ctx) = workspace_with(&[("src/calc.sh", CALC)]);
        let (tool, findings) = tool();
        let answer = call(
            &tool,
            &ctx,
            json!({"path": "./src/calc.sh", "line": 2, "body": "Subtracts.", "suggestion": "    echo $(($1 + $2))"}),
        )
        .await
        .unwrap();
        assert_eq!(answer, "Recorded finding 1 at `src/calc.sh:2` with a suggested change.");
        let absolute = ctx.workspace.root().join("src/calc.sh").display().to_string();
        let answer = call(
            &tool,
            &ctx,
            json!({"path": absolute, "line": 1, "end_line": 3, "body": "Undocumented.", "severity": "Nit", "category": "maintainability"}),
        )
        .await
        .unwrap();
        assert_eq!(answer, "Recorded finding 2 at `src/calc.sh:1-3`.");
        // An end_line equal to line is a one-line finding.
        call(
            &tool,
            &ctx,
            json!({"path": "src/calc.sh", "line": 3, "end_line": 3, "body": "Brace.", "severity": "blocking", "verified": true}),
        )
        .await
        .unwrap();
        let findings = findings.lock().unwrap().clone();
        assert_eq!(
            findings,
            vec![
                ReviewFinding {
                    path: "src/calc.sh".into(),
                    line: 2,
                    end_line: None,
                    body: "Subtracts.".into(),
                    suggestion: Some("    echo $(($1 + $2))".into()),
                    severity: Severity::Suggestion,
                    category: Category::Bug,
                    verified: false,
                },
                ReviewFinding {
                    path: "src/calc.sh".into(),
                    line: 1,
                    end_line: Some(3),
                    body: "Undocumented.".into(),
                    suggestion: None,
                    severity: Severity::Nit,
                    category: Category::Maintainability,
                    verified: false,
                },
                ReviewFinding {
                    path: "src/calc.sh".into(),
                    line: 3,
                    end_line: None,
                    body: "Brace.".into(),
                    suggestion: None,
                    severity: Severity::Blocking,
                    category: Category::Bug,
                    verified: true,
                },
            ]
        );
    }

    #[tokio::test]
    async fn bad_findings_are_refused_with_a_message_for_the_model() {
        let (_dir, ctx) = workspace_with(&[("calc.sh", CALC), ("docs/a.md", "a\n")]);
        let (tool, findings) = tool();
        let refused = |args: Value| {
            let tool = &tool;
            let ctx = &ctx;
            async move { message(call(tool, ctx, args).await) }
        };
        assert_eq!(
            refused(json!({"path": "missing.sh", "line": 1, "body": "x"})).await,
            "`missing.sh` does not exist in the pull request's code, so nothing can be said about it; name a file \
             that exists, relative to the repository root (list_dir and glob show them)"
        );
        assert_eq!(
            refused(json!({"path": "../calc.sh", "line": 1, "body": "x"})).await,
            "`../calc.sh` is outside the workspace"
        );
        assert_eq!(
            refused(json!({"path": "docs", "line": 1, "body": "x"})).await,
            "`docs` is a directory; a finding is on lines of a file"
        );
        assert_eq!(
            refused(json!({"path": ".git/config", "line": 1, "body": "x"})).await,
            "`.git/config` is not a file of the repository"
        );
        assert_eq!(
            refused(json!({"path": "calc.sh", "line": 0, "body": "x"})).await,
            "`line` is 0: lines are numbered from 1"
        );
        assert_eq!(
            refused(json!({"path": "calc.sh", "line": 2, "end_line": -1, "body": "x"})).await,
            "`end_line` is -1: lines are numbered from 1"
        );
        assert_eq!(
            refused(json!({"path": "calc.sh", "line": 3, "end_line": 2, "body": "x"})).await,
            "`end_line` (2) is before `line` (3); give the first line as `line` and the last as `end_line`"
        );
        assert_eq!(
            refused(json!({"path": "calc.sh", "line": 2, "end_line": 4, "body": "x"})).await,
            "`calc.sh` has 3 lines; line 4 is past its end"
        );
        assert_eq!(
            refused(json!({"path": "calc.sh", "line": 1, "body": "  \n"})).await,
            "the body is empty: say what is wrong at this place and why it matters"
        );
        assert_eq!(
            refused(json!({"path": "calc.sh", "line": 1, "body": "x", "severity": "high"})).await,
            "`severity` is \"high\"; use `blocking`, `suggestion` or `nit`"
        );
        assert_eq!(
            refused(json!({"path": "calc.sh", "line": 1, "body": "x", "category": "typo"})).await,
            "`category` is \"typo\"; use bug, security, performance, tests, maintainability or style"
        );
        assert!(
            refused(json!({"path": "calc.sh", "line": 1, "body": "x", "priority": "high"}))
                .await
                .starts_with("invalid arguments for `review_comment`: unknown field `priority`")
        );
        assert!(findings.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn the_model_hears_whether_a_finding_is_on_the_diff() {
        let (_dir, ctx) = workspace_with(&[("calc.sh", CALC)]);
        let diff = DiffPositions::from_unified(
            "diff --git a/calc.sh b/calc.sh\n--- a/calc.sh\n+++ b/calc.sh\n@@ -2 +2 @@\n-    echo $(($1 + $2))\n+    echo $(($1 - $2))\n",
        );
        let findings = Arc::new(Mutex::new(Vec::new()));
        let tool = ReviewComment::new(findings.clone()).with_diff(diff);
        let on_diff = call(&tool, &ctx, json!({"path": "calc.sh", "line": 2, "body": "x"}))
            .await
            .unwrap();
        assert!(
            on_diff.ends_with("It will be an inline comment on the diff."),
            "{on_diff}"
        );
        let off_diff = call(
            &tool,
            &ctx,
            json!({"path": "calc.sh", "line": 1, "end_line": 2, "body": "y"}),
        )
        .await
        .unwrap();
        assert!(
            off_diff.ends_with("so it will be listed in the review's summary instead of an inline comment."),
            "{off_diff}"
        );
        assert_eq!(findings.lock().unwrap().len(), 2);
    }

    #[tokio::test]
    async fn findings_are_capped() {
        let (_dir, ctx) = workspace_with(&[("calc.sh", CALC)]);
        let (tool, findings) = tool();
        for n in 0..MAX_FINDINGS {
            call(
                &tool,
                &ctx,
                json!({"path": "calc.sh", "line": 1, "body": format!("finding {n}")}),
            )
            .await
            .unwrap();
        }
        let refused = message(call(&tool, &ctx, json!({"path": "calc.sh", "line": 1, "body": "one more"})).await);
        assert!(refused.starts_with("you have recorded 100 findings"), "{refused}");
        assert_eq!(findings.lock().unwrap().len(), MAX_FINDINGS);
    }

    #[test]
    fn lines_are_counted_like_an_editor_does() {
        assert_eq!(line_count(b""), 0);
        assert_eq!(line_count(b"a"), 1);
        assert_eq!(line_count(b"a\n"), 1);
        assert_eq!(line_count(b"a\nb"), 2);
    }

    #[tokio::test]
    async fn earlier_findings_are_rechecked_by_number() {
        let (_dir, ctx) = workspace_with(&[("calc.sh", CALC)]);
        let answers = Arc::new(Mutex::new(Vec::new()));
        let tool = RecheckFinding::new(2, answers.clone());
        let said = call(
            &tool,
            &ctx,
            json!({"id": 2, "status": "still_applies", "note": "unchanged"}),
        )
        .await
        .unwrap();
        assert_eq!(said, "Finding 2: still applies; its thread stays open.");
        call(
            &tool,
            &ctx,
            json!({"id": 2, "status": "addressed", "note": "now checked"}),
        )
        .await
        .unwrap();
        assert_eq!(
            message(call(&tool, &ctx, json!({"id": 3, "status": "addressed"})).await),
            "there is no earlier finding 3: the list has findings 1 to 2"
        );
        assert_eq!(
            message(call(&tool, &ctx, json!({"id": 1, "status": "fixed"})).await),
            "`status` is \"fixed\"; use `addressed` or `still_applies`"
        );
        assert_eq!(
            *answers.lock().unwrap(),
            [Recheck {
                id: 2,
                still_applies: false,
                note: "now checked".into()
            }]
        );
    }
}
