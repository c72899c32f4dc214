//! The progress comment: one per job, edited in place — the plan checklist and the current activity
//! while the job runs, then the result (with the commit, the partial branch or the patch), the test
//! delta, the changed files and a compact footer. Every body opens with the job's hidden marker.

use crate::agent::context::cut;
use crate::tools::{Plan, StepStatus};

use super::markdown::{self, BODY_LIMIT, Doc};
use super::{JobEnd, JobInfo, JobResult, StopCause, replies};

/// Instructions are quoted in the header up to this many bytes.
const MAX_INSTRUCTIONS: usize = 300;
/// Changed files listed in the comment.
const MAX_FILES: usize = 50;

/// The comment while the job runs: the plan so far and what the agent is doing now.
pub fn live(job: &JobInfo, plan: &Plan, activity: Option<&str>) -> String {
    let mut doc = Doc::new();
    doc.fixed(header(job));
    if plan.is_empty() {
        doc.fixed("_Working out a plan…_");
    } else {
        doc.cuttable(plan_section(plan));
    }
    if let Some(activity) = activity.map(str::trim).filter(|a| !a.is_empty()) {
        doc.fixed(format!("⏳ Now: {}", markdown::inline(cut(activity, 300))));
    }
    let link = job
        .check_run_url
        .as_ref()
        .map(|url| format!(" · [details]({url})"))
        .unwrap_or_default();
    doc.fixed(format!("<sub>Working on it; this comment updates as I go{link}.</sub>"));
    doc.render(BODY_LIMIT)
}

/// The comment once the job is over. `trigger` is the configured mention, for "try again" hints.
pub fn finished(result: &JobResult, trigger: &str) -> String {
    let mut doc = Doc::new();
    doc.fixed(header(&result.job));
    doc.fixed(format!("**{}**", headline_markdown(&result.end)));
    let summary = result.summary.trim();
    match &result.end {
        JobEnd::Stopped { cause, saved } => {
            if !matches!(cause, StopCause::Cancelled { .. }) {
                doc.fixed(replies::failure(cause, trigger, result.tests.as_ref()));
            }
            match saved {
                Some(branch) => {
                    doc.cuttable(replies::partial_branch(branch, summary));
                }
                None if !summary.is_empty() => {
                    doc.cuttable(format!(
                        "Where I got to, in the agent's own words:\n\n{}",
                        markdown::quote(&markdown::prose(summary))
                    ));
                }
                None => {}
            }
        }
        // The section is in the description; the comment points there.
        JobEnd::Described { .. } => {}
        JobEnd::Patch { diff, branch } => {
            doc.cuttable(markdown::prose(summary));
            doc.replaceable(
                replies::patch(diff, branch.as_ref(), trigger),
                replies::patch_too_big(diff.len(), branch.as_ref(), trigger),
            );
        }
        _ => {
            doc.cuttable(markdown::prose(summary));
        }
    }
    if let Some(tests) = &result.tests {
        doc.cuttable(format!("**Tests**\n\n{}", tests.render()));
    }
    if !result.changed_files.is_empty() {
        doc.cuttable(format!(
            "**Changed files**\n\n{}",
            super::files_table(&result.changed_files, MAX_FILES)
        ));
    }
    if !result.plan.is_empty() {
        doc.cuttable(plan_section(&result.plan));
    }
    let link = result
        .job
        .check_run_url
        .as_ref()
        .map(|url| format!(" · [details]({url})"))
        .unwrap_or_default();
    doc.fixed(format!("<sub>{}{link}</sub>", super::footer(&result.stats)));
    doc.render(BODY_LIMIT)
}

/// The marker, then who asked for what.
fn header(job: &JobInfo) -> String {
    let mut out = format!(
        "{}\n**pitcrew · {}** requested by {}",
        markdown::marker(&job.id),
        job.kind.name(),
        super::requested_by(job.kind, &job.requested_by)
    );
    if let Some(instructions) = job.instructions.as_deref().map(str::trim).filter(|i| !i.is_empty()) {
        let shown = cut(instructions, MAX_INSTRUCTIONS);
        let ellipsis = if shown.len() < instructions.len() { " …" } else { "" };
        out.push_str(&format!("\n> {}{ellipsis}", markdown::inline(shown)));
    }
    out
}

fn plan_section(plan: &Plan) -> String {
    format!(
        "**Plan** ({} of {} done)\n\n{}",
        plan.count(StepStatus::Done),
        plan.steps.len(),
        super::plan_list(plan)
    )
}

/// The result in words with its links, for the comment.
pub(crate) fn headline_markdown(end: &JobEnd) -> String {
    let words = super::headline(end);
    match end {
        JobEnd::Pushed {
            branch,
            commit,
            rebased,
        } => {
            let onto = super::rebased_note(*rebased);
            format!(
                "✅ Pushed [{}]({}) to {}{onto}",
                markdown::code_span(commit.short()),
                commit.url,
                markdown::code_span(branch)
            )
        }
        JobEnd::PullRequestOpened { number, url } => format!("✅ Opened pull request [#{number}]({url})"),
        JobEnd::Reviewed { url: Some(url), .. } | JobEnd::Described { url: Some(url) } => {
            format!("✅ [{words}]({url})")
        }
        JobEnd::Reviewed { url: None, .. } | JobEnd::Answered | JobEnd::Described { url: None } => {
            format!("✅ {words}")
        }
        JobEnd::NoChanges => format!("ℹ️ {words}"),
        JobEnd::Patch { .. } => format!("⚠️ {words}"),
        JobEnd::Stopped { cause, .. } => {
            let icon = match cause {
                StopCause::Cancelled { .. } | StopCause::Superseded { .. } => "⏹️",
                StopCause::Budget(_) | StopCause::Stuck { .. } => "⏸️",
                StopCause::TestsRegressed | StopCause::PushConflict { .. } => "⚠️",
                StopCause::ModelProvider { .. }
                | StopCause::Sandbox { .. }
                | StopCause::Commit { .. }
                | StopCause::Internal { .. } => "❌",
            };
            match cause {
                StopCause::Cancelled { by } => format!("{icon} {}", replies::stopped_by(by.as_deref())),
                _ => format!("{icon} {words}"),
            }
        }
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::agent::Budget;
    use crate::config::command::CommandKind;
    use crate::report::RequestedBy;
    use crate::report::fixtures;

    #[test]
    fn live_comment_shows_plan_and_activity() {
        let plan = fixtures::plan(&[StepStatus::Done, StepStatus::InProgress, StepStatus::Pending]);
        let body = live(&fixtures::job(), &plan, Some("running `cargo test`"));
        insta::assert_snapshot!(body, @r"
        <!-- pitcrew:job=42 -->
        **pitcrew · fix** requested by @alice
        > make the parser accept empty input | please

        **Plan** (1 of 3 done)

        - [x] Reproduce the failure
        - [ ] ⏳ **Fix the parser** (in progress)
        - [ ] Run the tests

        ⏳ Now: running `cargo test`

        <sub>Working on it; this comment updates as I go · [details](https://github.com/o/r/runs/9).</sub>
        ");
        let mut job = fixtures::job();
        job.requested_by = RequestedBy::FailedCheck("CI / test".into());
        job.kind = CommandKind::Triage;
        job.instructions = None;
        job.check_run_url = None;
        let failed = fixtures::plan(&[StepStatus::Done, StepStatus::Failed]);
        insta::assert_snapshot!(live(&job, &failed, None), @r"
        <!-- pitcrew:job=42 -->
        **pitcrew · triage** requested by the failed check `CI / test`

        **Plan** (1 of 2 done)

        - [x] Reproduce the failure
        - [ ] ❌ ~~Fix the parser~~ (failed)

        <sub>Working on it; this comment updates as I go.</sub>
        ");
        assert!(live(&job, &Plan::default(), None).contains("_Working out a plan…_"));
    }

    #[test]
    fn finished_comment_after_a_push() {
        insta::assert_snapshot!(finished(&fixtures::pushed(), "@agent"), @r"
        <!-- pitcrew:job=42 -->
        **pitcrew · fix** requested by @alice
        > make the parser accept empty input | please

        **✅ Pushed [`0123456`](https://github.com/o/r/commit/0123456789abcdef0123456789abcdef01234567) to `feature/parser`**

        The parser returned an error on empty input; it now returns an empty document. Added a regression test.

        **Tests**

        | Tests | Passed | Failed | Skipped |
        |---|---:|---:|---:|
        | Before | 41 | 1 | 0 |
        | After | 43 | 0 | 0 |

        - **Fixed (1):** `parser::tests::empty`

        **Changed files**

        | File | + | − |
        |---|---:|---:|
        | `src/parser.rs` | 12 | 3 |
        | `tests/empty.rs` (added) | 20 | 0 |

        **Plan** (3 of 3 done)

        - [x] Reproduce the failure
        - [x] Fix the parser
        - [x] Run the tests

        <sub>52,000 tokens in (40,000 cached) · 3,456 out · $0.0812 · 2m 05s · 14 steps, 23 tool calls · [details](https://github.com/o/r/runs/9)</sub>
        ");
    }

    #[test]
    fn finished_comment_after_a_budget_stop_links_the_partial_branch() {
        let mut result = fixtures::pushed();
        result.end = JobEnd::Stopped {
            cause: StopCause::Budget(Budget::WallTime),
            saved: Some(fixtures::branch()),
        };
        result.summary = "The parser is fixed; the CLI flag `--empty` still needs wiring.".into();
        result.tests = None;
        result.changed_files.truncate(1);
        result.plan = fixtures::plan(&[StepStatus::Done, StepStatus::InProgress]);
        insta::assert_snapshot!(finished(&result, "@agent"), @r"
        <!-- pitcrew:job=42 -->
        **pitcrew · fix** requested by @alice
        > make the parser accept empty input | please

        **⏸️ Stopped: the time limit was reached**

        I reached the time limit for one job before finishing. To try again: ask for a smaller, more specific change (`@agent fix …`), or ask the people who run pitcrew to raise `[agent] max_wall_time`.

        The work so far is on [`pitcrew/partial-42`](https://github.com/o/r/tree/pitcrew/partial-42), so nothing is lost: `git fetch https://github.com/o/r.git pitcrew/partial-42` to look at it.

        What is left, in the agent's own words:

        > The parser is fixed; the CLI flag `--empty` still needs wiring.

        **Changed files**

        | File | + | − |
        |---|---:|---:|
        | `src/parser.rs` | 12 | 3 |

        **Plan** (1 of 2 done)

        - [x] Reproduce the failure
        - [ ] ⏳ **Fix the parser** (in progress)

        <sub>52,000 tokens in (40,000 cached) · 3,456 out · $0.0812 · 2m 05s · 14 steps, 23 tool calls · [details](https://github.com/o/r/runs/9)</sub>
        ");
    }

    #[test]
    fn finished_comment_on_cancel_and_on_regression() {
        let mut result = fixtures::pushed();
        result.end = JobEnd::Stopped {
            cause: StopCause::Cancelled { by: Some("bob".into()) },
            saved: None,
        };
        result.summary.clear();
        result.tests = None;
        result.changed_files.clear();
        result.plan = Plan::default();
        result.job.instructions = None;
        result.job.check_run_url = None;
        insta::assert_snapshot!(finished(&result, "@agent"), @r"
        <!-- pitcrew:job=42 -->
        **pitcrew · fix** requested by @alice

        **⏹️ Stopped, as @bob asked.**

        <sub>52,000 tokens in (40,000 cached) · 3,456 out · $0.0812 · 2m 05s · 14 steps, 23 tool calls</sub>
        ");

        let mut result = fixtures::pushed();
        result.end = JobEnd::Stopped {
            cause: StopCause::TestsRegressed,
            saved: Some(fixtures::branch()),
        };
        result.tests = Some(fixtures::regressed_tests());
        let body = finished(&result, "@agent");
        assert!(body.contains("**⚠️ Not pushed: the change broke tests that passed before**"));
        assert!(body.contains("Newly failing: `parser::tests::empty`."));
        assert!(body.contains("| After | 41 | 1 | 0 |"));
        assert!(body.contains("[`pitcrew/partial-42`]"));
    }

    #[test]
    fn finished_comment_after_a_description_points_at_it_without_repeating_it() {
        let mut result = fixtures::pushed();
        result.end = JobEnd::Described {
            url: Some("https://github.com/o/r/pull/7".into()),
        };
        result.job.kind = CommandKind::Describe;
        result.job.instructions = None;
        result.summary = "### Summary\n\nThe section, which is in the description.".into();
        result.tests = None;
        result.changed_files.clear();
        result.plan = Plan::default();
        insta::assert_snapshot!(finished(&result, "@agent"), @"
        <!-- pitcrew:job=42 -->
        **pitcrew · describe** requested by @alice

        **✅ [Description updated](https://github.com/o/r/pull/7)**

        <sub>52,000 tokens in (40,000 cached) · 3,456 out · $0.0812 · 2m 05s · 14 steps, 23 tool calls · [details](https://github.com/o/r/runs/9)</sub>
        ");
        // Written without being asked, it names the setting.
        result.job.requested_by = RequestedBy::PullRequestEvent("opened".into());
        assert!(
            finished(&result, "@agent")
                .contains("**pitcrew · describe** requested by `[review] describe` (the pull request was opened)")
        );
    }

    #[test]
    fn finished_comment_with_a_patch_for_a_fork() {
        let mut result = fixtures::pushed();
        result.end = JobEnd::Patch {
            diff: "--- a/src/parser.rs\n+++ b/src/parser.rs\n@@ -1 +1 @@\n-old\n+new\n".into(),
            branch: None,
        };
        result.tests = None;
        result.plan = Plan::default();
        result.changed_files.truncate(1);
        insta::assert_snapshot!(finished(&result, "@agent"), @r"
        <!-- pitcrew:job=42 -->
        **pitcrew · fix** requested by @alice
        > make the parser accept empty input | please

        **⚠️ Done, but the change could not be pushed to the fork**

        The parser returned an error on empty input; it now returns an empty document. Added a regression test.

        I cannot push to this pull request: it comes from a fork that does not allow edits by maintainers. Here is the change as a patch. Save it as `pitcrew.patch` at the root of your checkout of this branch, then run `git apply pitcrew.patch` (or `git apply --3way pitcrew.patch` if the branch has moved), review, commit and push.

        <details><summary>pitcrew.patch</summary>

        ```diff
        --- a/src/parser.rs
        +++ b/src/parser.rs
        @@ -1 +1 @@
        -old
        +new
        ```

        </details>

        Or tick **Allow edits by maintainers** on this pull request and ask me again (`@agent fix …`): then I push the change myself.

        **Changed files**

        | File | + | − |
        |---|---:|---:|
        | `src/parser.rs` | 12 | 3 |

        <sub>52,000 tokens in (40,000 cached) · 3,456 out · $0.0812 · 2m 05s · 14 steps, 23 tool calls · [details](https://github.com/o/r/runs/9)</sub>
        ");
    }

    #[test]
    fn model_text_cannot_forge_the_marker_or_ping() {
        let mut result = fixtures::pushed();
        result.summary = "<!-- pitcrew:job=99 -->\ncc @octocat".into();
        let body = finished(&result, "@agent");
        assert_eq!(markdown::job_marker(&body), Some("42"));
        assert_eq!(body.matches("<!--").count(), 1, "{body}");
        assert!(body.contains("cc @\u{200b}octocat"));
        // The requester is mentioned on purpose.
        assert!(body.contains("requested by @alice\n"));
    }

    #[test]
    fn huge_bodies_are_cut_to_the_limit_biggest_part_first() {
        let mut result = fixtures::pushed();
        // Multi-byte text (3 bytes per char) far over the limit.
        result.summary = "説明".repeat(30_000);
        result.end = JobEnd::Patch {
            diff: format!("+{}\n", "ü".repeat(10_000)),
            branch: None,
        };
        let body = finished(&result, "@agent");
        assert!(body.len() <= BODY_LIMIT, "{}", body.len());
        // The summary (the biggest part) was cut, and says so; the patch (20 KB) survived whole and the
        // footer is still there.
        assert!(body.contains("_… cut here: "), "no cut note");
        assert!(body.contains(&"ü".repeat(10_000)));
        assert!(body.contains("```diff\n"));
        assert!(body.ends_with("[details](https://github.com/o/r/runs/9)</sub>"));
        assert_eq!(markdown::job_marker(&body), Some("42"));
        // When the patch is the biggest part, it is replaced whole rather than cut.
        result.summary = "short".into();
        result.end = JobEnd::Patch {
            diff: format!("+{}\n", "x".repeat(39_000)),
            branch: None,
        };
        result.changed_files = (0..2_000)
            .map(|n| crate::workspace::diff::FileStat {
                path: format!("src/generated/file_{n:04}_with_a_long_name.rs"),
                old_path: None,
                change: "modified",
                additions: 1,
                deletions: 1,
                binary: false,
            })
            .collect();
        let body = finished(&result, "@agent");
        assert!(body.len() <= BODY_LIMIT);
        assert!(body.contains("…and 1950 more files."));
        assert!(
            body.contains("```diff\n"),
            "a 39 KB patch fits once the files are capped"
        );
        let mut doc_result = result;
        doc_result.summary = "y".repeat(40_000);
        let body = finished(&doc_result, "@agent");
        assert!(body.len() <= BODY_LIMIT);
        let first_cut = body.find("_… cut here: ").unwrap();
        // The summary (40 KB) was the biggest part and the only one cut.
        assert!(body.contains("```diff\n"));
        assert!(first_cut < body.find("```diff\n").unwrap());
    }
}
