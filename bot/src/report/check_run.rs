//! The `pitcrew` check run: its output while the job runs (the live plan), its output when done (a
//! summary of what changed and why, the tests before → after, tokens, cost and duration; the full
//! plan and details as text; annotations on the lines where the agent found something), and the
//! conclusion a job's result maps to.

use crate::agent::context::cut;
use crate::github::{Annotation, AnnotationLevel, CheckConclusion, CheckRunOutput};
use crate::tools::{Plan, ReviewFinding, StepStatus};

use super::markdown::{self, CHECK_TEXT_LIMIT, Doc};
use super::{JobEnd, JobInfo, JobResult, StopCause, progress, replies};

/// GitHub's limit on a check run's title.
pub const TITLE_LIMIT: usize = 255;
/// Annotations per check run: GitHub takes 50 per request; past a hundred nobody reads them.
pub const MAX_ANNOTATIONS: usize = 100;
/// An annotation's message is shown in a narrow box beside the code.
const MAX_ANNOTATION_MESSAGE: usize = 4_000;

/// The conclusion and why, in a few words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conclusion {
    pub kind: CheckConclusion,
    pub reason: String,
}

/// How a job's result concludes its check run:
/// - `success`: the job delivered (pushed, opened a pull request, reviewed, answered, or found
///   nothing to change) and no test fails after it;
/// - `neutral`: it delivered but tests still fail, or it stopped on a budget or without progress
///   (pitcrew ran out, not the pull request);
/// - `failure`: the change broke tests (not pushed), or the model provider, the sandbox or
///   pitcrew itself failed;
/// - `action_required`: a person must act — apply the patch to the fork, or ask again after a
///   conflicting push (GitHub shows the check's details link for it: point it at the comment);
/// - `cancelled`: stopped on request.
pub fn conclusion(result: &JobResult) -> Conclusion {
    use CheckConclusion::*;
    let still_failing = result.tests.as_ref().and_then(|t| match &t.after {
        super::TestRun::Ran(report) if !report.succeeded() => Some(report.failed.max(1)),
        _ => None,
    });
    let delivered = |what: &str| match still_failing {
        Some(n) => Conclusion {
            kind: Neutral,
            reason: format!(
                "{what}, but {n} {} still failing",
                if n == 1 { "test is" } else { "tests are" }
            ),
        },
        None => Conclusion {
            kind: Success,
            reason: what.to_owned(),
        },
    };
    match &result.end {
        JobEnd::Pushed { commit, .. } => delivered(&format!("pushed {}", commit.short())),
        JobEnd::PullRequestOpened { number, .. } => delivered(&format!("opened pull request #{number}")),
        JobEnd::Reviewed { .. } => Conclusion {
            kind: Success,
            reason: "review posted".to_owned(),
        },
        JobEnd::Answered => Conclusion {
            kind: Success,
            reason: "answered".to_owned(),
        },
        JobEnd::Described { .. } => Conclusion {
            kind: Success,
            reason: "description updated".to_owned(),
        },
        JobEnd::NoChanges => delivered("nothing needed changing"),
        JobEnd::Patch { .. } => Conclusion {
            kind: ActionRequired,
            reason: "the fork does not allow maintainer edits: apply the patch from the comment".to_owned(),
        },
        JobEnd::Stopped { cause, saved } => {
            let saved_note = if saved.is_some() {
                "; the work so far is on a side branch"
            } else {
                ""
            };
            let (kind, reason) = match cause {
                StopCause::Cancelled { by: Some(login) } => {
                    (Cancelled, format!("stopped by @{}", super::login_text(login)))
                }
                StopCause::Cancelled { by: None } => (Cancelled, "stopped by a shutdown".to_owned()),
                StopCause::Superseded { head } => (
                    Cancelled,
                    format!("superseded by a newer push ({}), reviewed next", super::short_sha(head)),
                ),
                StopCause::Budget(budget) => (Neutral, replies::budget_words(*budget).to_owned()),
                StopCause::Stuck { .. } => (Neutral, "stopped without progress".to_owned()),
                StopCause::TestsRegressed => (
                    Failure,
                    "the change broke tests that passed before; not pushed".to_owned(),
                ),
                StopCause::PushConflict { .. } => (
                    ActionRequired,
                    "the branch moved and the change conflicts with it; ask again".to_owned(),
                ),
                StopCause::ModelProvider { .. } => (Failure, "the model provider returned an error".to_owned()),
                StopCause::Sandbox { .. } => (Failure, "the sandbox failed".to_owned()),
                StopCause::Commit { .. } => (Failure, "the change could not be committed; not pushed".to_owned()),
                StopCause::Internal { .. } => (Failure, "internal error".to_owned()),
            };
            Conclusion {
                kind,
                reason: format!("{reason}{saved_note}"),
            }
        }
    }
}

/// The output while the job runs: the title names the step in progress, the summary shows the plan.
pub fn in_progress(job: &JobInfo, plan: &Plan, activity: Option<&str>) -> CheckRunOutput {
    let title = match plan.steps.iter().position(|s| s.status == StepStatus::InProgress) {
        Some(index) => format!(
            "Step {} of {}: {}",
            index + 1,
            plan.steps.len(),
            plan.steps[index].title
        ),
        None if plan.is_empty() => "Working out a plan".to_owned(),
        None => format!("{} of {} steps done", plan.count(StepStatus::Done), plan.steps.len()),
    };
    let mut doc = Doc::new();
    doc.fixed(format!(
        "**{}** requested by {}",
        job.kind.name(),
        super::requested_by(job.kind, &job.requested_by)
    ));
    if !plan.is_empty() {
        doc.cuttable(super::plan_list(plan));
    }
    if let Some(activity) = activity.map(str::trim).filter(|a| !a.is_empty()) {
        doc.fixed(format!("⏳ Now: {}", markdown::inline(cut(activity, 300))));
    }
    CheckRunOutput {
        title: title_text(&title),
        summary: doc.render(CHECK_TEXT_LIMIT),
        text: None,
        annotations: Vec::new(),
    }
}

/// The output when the job is over. `findings` are the agent's file:line findings (a review's, or
/// any the job reported); failing tests with a known place become annotations too.
pub fn completed(result: &JobResult, findings: &[ReviewFinding], trigger: &str) -> CheckRunOutput {
    let mut title = super::headline(&result.end);
    if let Some(tests) = &result.tests {
        title.push_str(&format!(" · tests: {}", tests.one_line()));
    }

    let mut summary = Doc::new();
    summary.fixed(format!("**{}**", progress::headline_markdown(&result.end)));
    if let JobEnd::Stopped { cause, saved } = &result.end {
        if !matches!(cause, StopCause::Cancelled { .. }) {
            summary.fixed(replies::failure(cause, trigger, result.tests.as_ref()));
        }
        if let Some(branch) = saved {
            summary.fixed(format!(
                "The work so far is on [{}]({}).",
                markdown::code_span(&branch.name),
                branch.url
            ));
        }
    }
    let what = result.summary.trim();
    if !what.is_empty() {
        summary.cuttable(markdown::prose(what));
    }
    if let Some(tests) = &result.tests {
        summary.cuttable(format!("### Tests\n\n{}", tests.render()));
    }
    if !result.changed_files.is_empty() {
        summary.cuttable(format!(
            "### Changed files\n\n{}",
            super::files_table(&result.changed_files, 100)
        ));
    }
    summary.fixed(super::footer(&result.stats));

    let annotations = annotations(result, findings);
    let total_annotations = finding_count(result, findings);
    CheckRunOutput {
        title: title_text(&title),
        summary: summary.render(CHECK_TEXT_LIMIT),
        text: Some(details(result, total_annotations, annotations.len())),
        annotations,
    }
}

/// The text: the whole plan, the failing tests with their messages, and the figures.
fn details(result: &JobResult, annotations: usize, shown: usize) -> String {
    let mut doc = Doc::new();
    if !result.plan.is_empty() {
        doc.cuttable(format!(
            "### Plan ({} of {} done)\n\n{}",
            result.plan.count(StepStatus::Done),
            result.plan.steps.len(),
            super::plan_list(&result.plan)
        ));
    }
    if let Some(tests) = &result.tests {
        let failures = tests.failures_after();
        if !failures.is_empty() {
            let mut text = String::from("### Failing tests after the change\n");
            for failure in failures.iter().take(50) {
                let place = match (&failure.file, failure.line) {
                    (Some(file), Some(line)) => format!(" at {}", markdown::code_span(&format!("{file}:{line}"))),
                    (Some(file), None) => format!(" in {}", markdown::code_span(file)),
                    _ => String::new(),
                };
                text.push_str(&format!("\n**{}**{place}\n", markdown::code_span(&failure.name)));
                if !failure.message.trim().is_empty() {
                    text.push_str(&format!("\n{}\n", markdown::fenced("text", failure.message.trim())));
                }
            }
            if failures.len() > 50 {
                text.push_str(&format!("\n…and {} more.\n", failures.len() - 50));
            }
            doc.cuttable(text.trim_end().to_owned());
        }
    }
    let stats = &result.stats;
    let usage = &stats.usage;
    let mut figures = format!(
        "### Figures\n\n| | |\n|---|---:|\n| Input tokens | {} |\n| Cache reads | {} |\n| Cache writes | {} |\n\
         | Output tokens | {} |\n| Reasoning tokens | {} |\n| Cost | {} |\n| Duration | {} |\n| Steps | {} |\n\
         | Tool calls | {} |",
        markdown::thousands(usage.input_tokens),
        markdown::thousands(usage.cache_read_tokens),
        markdown::thousands(usage.cache_write_tokens),
        markdown::thousands(usage.output_tokens),
        markdown::thousands(usage.reasoning_tokens),
        markdown::cost(stats.cost_usd),
        markdown::duration(stats.duration_ms),
        stats.steps,
        stats.tool_calls
    );
    if annotations > shown {
        figures.push_str(&format!(
            "\n\n{shown} of {annotations} findings are shown as annotations."
        ));
    }
    doc.fixed(figures);
    doc.render(CHECK_TEXT_LIMIT)
}

/// Findings and failing tests with a place in the repository, capped at [`MAX_ANNOTATIONS`].
fn annotations(result: &JobResult, findings: &[ReviewFinding]) -> Vec<Annotation> {
    let mut out = Vec::new();
    for finding in findings {
        let Some(path) = repo_path(&finding.path) else {
            continue;
        };
        let (start, end) = finding.range();
        out.push(Annotation {
            path,
            start_line: u64::from(start),
            end_line: u64::from(end),
            start_column: None,
            end_column: None,
            annotation_level: AnnotationLevel::Warning,
            message: message_text(&finding.body),
            title: None,
            raw_details: None,
        });
    }
    if let Some(tests) = &result.tests {
        for failure in tests.failures_after() {
            let (Some(file), Some(line)) = (&failure.file, failure.line) else {
                continue;
            };
            let Some(path) = repo_path(file) else {
                continue;
            };
            let new = tests.is_new_failure(&failure.name);
            let message = if failure.message.trim().is_empty() {
                "failed".to_owned()
            } else {
                message_text(&failure.message)
            };
            out.push(Annotation {
                path,
                start_line: u64::from(line.max(1)),
                end_line: u64::from(line.max(1)),
                start_column: None,
                end_column: None,
                annotation_level: if new {
                    AnnotationLevel::Failure
                } else {
                    AnnotationLevel::Warning
                },
                message,
                title: Some(title_text(&format!(
                    "{} {}",
                    if new { "Newly failing test" } else { "Failing test" },
                    failure.name
                ))),
                raw_details: None,
            });
        }
    }
    out.truncate(MAX_ANNOTATIONS);
    out
}

fn finding_count(result: &JobResult, findings: &[ReviewFinding]) -> usize {
    let tests = result.tests.as_ref().map_or(0, |t| {
        t.failures_after()
            .iter()
            .filter(|f| f.line.is_some() && f.file.as_deref().and_then(repo_path).is_some())
            .count()
    });
    findings.iter().filter(|f| repo_path(&f.path).is_some()).count() + tests
}

/// A path relative to the repository root, as annotations need; absolute paths (a runner's view
/// of its machine) and paths leaving the repository have no place in it.
fn repo_path(path: &str) -> Option<String> {
    let path = path.trim().trim_start_matches("./");
    let valid = !path.is_empty() && !path.starts_with('/') && !path.split('/').any(|part| part == "..");
    valid.then(|| path.to_owned())
}

/// A title: one line, at most [`TITLE_LIMIT`] bytes.
fn title_text(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.len() <= TITLE_LIMIT {
        return line;
    }
    format!("{}…", cut(&line, TITLE_LIMIT - '…'.len_utf8()))
}

fn message_text(text: &str) -> String {
    let text = text.trim();
    if text.len() <= MAX_ANNOTATION_MESSAGE {
        return text.to_owned();
    }
    format!("{}…", cut(text, MAX_ANNOTATION_MESSAGE - '…'.len_utf8()))
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::agent::Budget;
    use crate::report::fixtures;
    use crate::report::{TestDelta, TestRun};

    #[test]
    fn in_progress_shows_the_live_plan() {
        let plan = fixtures::plan(&[StepStatus::Done, StepStatus::InProgress, StepStatus::Pending]);
        let output = in_progress(&fixtures::job(), &plan, Some("editing src/parser.rs"));
        assert_eq!(output.title, "Step 2 of 3: Fix the parser");
        insta::assert_snapshot!(output.summary, @r"
        **fix** requested by @alice

        - [x] Reproduce the failure
        - [ ] ⏳ **Fix the parser** (in progress)
        - [ ] Run the tests

        ⏳ Now: editing src/parser.rs
        ");
        assert_eq!(output.text, None);
        assert_eq!(
            in_progress(&fixtures::job(), &Plan::default(), None).title,
            "Working out a plan"
        );
        let done = fixtures::plan(&[StepStatus::Done, StepStatus::Pending]);
        assert_eq!(in_progress(&fixtures::job(), &done, None).title, "1 of 2 steps done");
        assert!(output.annotations.is_empty());
    }

    #[test]
    fn completed_after_a_push() {
        let output = completed(&fixtures::pushed(), &[], "@agent");
        insta::assert_snapshot!(output.title, @"Pushed 0123456 to feature/parser · tests: 43 passed, 0 failed (before: 41 passed, 1 failed)");
        insta::assert_snapshot!(output.summary, @r"
        **✅ Pushed [`0123456`](https://github.com/o/r/commit/0123456789abcdef0123456789abcdef01234567) to `feature/parser`**

        The parser returned an error on empty input; it now returns an empty document. Added a regression test.

        ### Tests

        | Tests | Passed | Failed | Skipped |
        |---|---:|---:|---:|
        | Before | 41 | 1 | 0 |
        | After | 43 | 0 | 0 |

        - **Fixed (1):** `parser::tests::empty`

        ### Changed files

        | File | + | − |
        |---|---:|---:|
        | `src/parser.rs` | 12 | 3 |
        | `tests/empty.rs` (added) | 20 | 0 |

        52,000 tokens in (40,000 cached) · 3,456 out · $0.0812 · 2m 05s · 14 steps, 23 tool calls
        ");
        insta::assert_snapshot!(output.text.unwrap(), @r"
        ### Plan (3 of 3 done)

        - [x] Reproduce the failure
        - [x] Fix the parser
        - [x] Run the tests

        ### Figures

        | | |
        |---|---:|
        | Input tokens | 12,000 |
        | Cache reads | 40,000 |
        | Cache writes | 0 |
        | Output tokens | 3,456 |
        | Reasoning tokens | 0 |
        | Cost | $0.0812 |
        | Duration | 2m 05s |
        | Steps | 14 |
        | Tool calls | 23 |
        ");
        assert!(output.annotations.is_empty());
        let conclusion = conclusion(&fixtures::pushed());
        assert_eq!(conclusion.kind, CheckConclusion::Success);
        assert_eq!(conclusion.reason, "pushed 0123456");
    }

    #[test]
    fn completed_with_findings_and_failing_tests_annotates() {
        let mut result = fixtures::pushed();
        result.end = JobEnd::Stopped {
            cause: StopCause::TestsRegressed,
            saved: Some(fixtures::branch()),
        };
        result.tests = Some(fixtures::regressed_tests());
        let findings = [
            ReviewFinding {
                path: "src/lib.rs".into(),
                line: 12,
                end_line: Some(14),
                body: "This can panic on empty input.".into(),
                suggestion: None,
                ..ReviewFinding::default()
            },
            ReviewFinding {
                path: "/home/runner/x.rs".into(),
                line: 1,
                end_line: None,
                body: "outside the repository".into(),
                suggestion: None,
                ..ReviewFinding::default()
            },
        ];
        let output = completed(&result, &findings, "@agent");
        assert_eq!(
            output.title,
            "Not pushed: the change broke tests that passed before · tests: 41 passed, 1 failed (before: 42 passed, 0 failed)"
        );
        insta::assert_snapshot!(serde_json::to_string_pretty(&output.annotations).unwrap(), @r#"
        [
          {
            "path": "src/lib.rs",
            "start_line": 12,
            "end_line": 14,
            "annotation_level": "warning",
            "message": "This can panic on empty input."
          },
          {
            "path": "src/parser.rs",
            "start_line": 88,
            "end_line": 88,
            "annotation_level": "failure",
            "message": "assertion failed: parse(\"\").is_ok()",
            "title": "Newly failing test parser::tests::empty"
          }
        ]
        "#);
        assert!(
            output.summary.starts_with(
                "**⚠️ Not pushed: the change broke tests that passed before**\n\nMy change made tests fail"
            )
        );
        assert!(output.summary.contains("The work so far is on [`pitcrew/partial-42`]"));
        let text = output.text.unwrap();
        assert!(text.contains("### Failing tests after the change\n\n**`parser::tests::empty`** at `src/parser.rs:88`\n\n```text\nassertion failed: parse(\"\").is_ok()\n```"), "{text}");
        let conclusion = conclusion(&result);
        assert_eq!(conclusion.kind, CheckConclusion::Failure);
        assert_eq!(
            conclusion.reason,
            "the change broke tests that passed before; not pushed; the work so far is on a side branch"
        );
    }

    #[test]
    fn conclusions_for_every_end() {
        let with = |end: JobEnd, tests: Option<TestDelta>| {
            let mut result = fixtures::pushed();
            result.end = end;
            result.tests = tests;
            let c = conclusion(&result);
            // As GitHub's API spells it.
            let kind = serde_json::to_value(c.kind).unwrap();
            format!("{}: {}", kind.as_str().unwrap(), c.reason)
        };
        let stopped = |cause| JobEnd::Stopped { cause, saved: None };
        let still_failing = TestDelta::compare(
            TestRun::Ran(fixtures::tests(3, &[("a", None)])),
            TestRun::Ran(fixtures::tests(3, &[("a", None)])),
        );
        let lines = [
            with(fixtures::pushed().end, Some(still_failing)),
            with(
                JobEnd::PullRequestOpened {
                    number: 8,
                    url: "u".into(),
                },
                None,
            ),
            with(
                JobEnd::Reviewed {
                    url: None,
                    inline_comments: 3,
                },
                None,
            ),
            with(JobEnd::Answered, None),
            with(JobEnd::Described { url: None }, None),
            with(JobEnd::NoChanges, None),
            with(
                JobEnd::Patch {
                    diff: "d".into(),
                    branch: None,
                },
                None,
            ),
            with(stopped(StopCause::Cancelled { by: Some("bob".into()) }), None),
            with(stopped(StopCause::Cancelled { by: None }), None),
            with(
                JobEnd::Stopped {
                    cause: StopCause::Budget(Budget::Cost),
                    saved: Some(fixtures::branch()),
                },
                None,
            ),
            with(stopped(StopCause::Stuck { tool: "bash".into() }), None),
            with(stopped(StopCause::PushConflict { files: vec![] }), None),
            with(stopped(StopCause::ModelProvider { message: "m".into() }), None),
            with(stopped(StopCause::Sandbox { message: "s".into() }), None),
            with(stopped(StopCause::Internal { reference: "r".into() }), None),
        ];
        insta::assert_snapshot!(lines.join("\n"), @r"
        neutral: pushed 0123456, but 1 test is still failing
        success: opened pull request #8
        success: review posted
        success: answered
        success: description updated
        success: nothing needed changing
        action_required: the fork does not allow maintainer edits: apply the patch from the comment
        cancelled: stopped by @bob
        cancelled: stopped by a shutdown
        neutral: the cost budget ran out; the work so far is on a side branch
        neutral: stopped without progress
        action_required: the branch moved and the change conflicts with it; ask again
        failure: the model provider returned an error
        failure: the sandbox failed
        failure: internal error
        ");
    }

    #[test]
    fn limits_on_title_summary_and_annotations() {
        let mut result = fixtures::pushed();
        result.end = JobEnd::Pushed {
            branch: "é".repeat(300),
            commit: fixtures::commit(),
            rebased: true,
        };
        result.summary = "ß".repeat(70_000);
        let findings: Vec<ReviewFinding> = (1..=150)
            .map(|n| ReviewFinding {
                path: "src/lib.rs".into(),
                line: n,
                end_line: None,
                body: "x".repeat(5_000),
                suggestion: None,
                ..ReviewFinding::default()
            })
            .collect();
        let output = completed(&result, &findings, "@agent");
        assert!(output.title.len() <= TITLE_LIMIT);
        assert!(output.title.ends_with('…'));
        assert!(output.summary.len() <= CHECK_TEXT_LIMIT);
        assert!(output.summary.contains("_… cut here: "));
        assert!(output.summary.ends_with("14 steps, 23 tool calls"));
        assert_eq!(output.annotations.len(), MAX_ANNOTATIONS);
        assert!(output.annotations[0].message.len() <= MAX_ANNOTATION_MESSAGE);
        assert!(
            output
                .text
                .unwrap()
                .ends_with("100 of 150 findings are shown as annotations.")
        );
    }
}
