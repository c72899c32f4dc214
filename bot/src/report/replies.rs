//! Short replies and messages in plain words: refusals, help, queueing, stops and failures (what
//! failed and what to try), the patch for fork pull requests, the partial branch, an invalid
//! repository configuration, and the body of the pull request an issue job opens.

use crate::agent::Budget;
use crate::agent::context::cut;
use crate::config::command::CommandKind;
use crate::workspace::diff::FileStat;

use super::markdown::{self, BODY_LIMIT, Doc};
use super::{BranchRef, StopCause, TestDelta};

/// Patches larger than this are not put in a comment: past a few thousand lines nobody reviews
/// them there, and the comment must leave room for the rest of the report.
pub const PATCH_LIMIT: usize = 40_000;

/// The reply to someone without write access who asked for work.
pub fn not_permitted(login: &str) -> String {
    format!(
        "@{}, only people with write access to this repository can ask me to work here.",
        super::login_text(login)
    )
}

/// One command of the help text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandHelp {
    pub kind: CommandKind,
    /// What may follow the command word, e.g. `[instructions]`; empty for nothing.
    pub args: &'static str,
    pub what: &'static str,
}

/// The comment commands `help` lists, in its order (`chore` is not among them).
pub const COMMANDS: &[CommandHelp] = &[
    CommandHelp {
        kind: CommandKind::Fix,
        args: "[instructions]",
        what: "make a change on this pull request and push it (plain text after the mention means `fix` too)",
    },
    CommandHelp {
        kind: CommandKind::Review,
        args: "",
        what: "review this pull request with inline comments and suggestions",
    },
    CommandHelp {
        kind: CommandKind::Explain,
        args: "[question]",
        what: "answer a question about this code or change, without changing anything",
    },
    CommandHelp {
        kind: CommandKind::Describe,
        args: "[focus]",
        what: "write or update pitcrew's section of this pull request's description (the author's text stays as it is)",
    },
    CommandHelp {
        kind: CommandKind::Triage,
        args: "",
        what: "find out why CI failed and say what to do about it",
    },
    CommandHelp {
        kind: CommandKind::Stop,
        args: "",
        what: "stop the job running on this pull request",
    },
    CommandHelp {
        kind: CommandKind::Help,
        args: "",
        what: "show this list",
    },
];

/// The list of commands with the configured trigger word, one line each.
pub fn help(trigger: &str, commands: &[CommandHelp]) -> String {
    let mut out = String::from("Here is what I can do. Mention me in a comment followed by a command:\n\n");
    for command in commands {
        let usage = match command.args {
            "" => format!("{trigger} {}", command.kind.name()),
            args => format!("{trigger} {} {args}", command.kind.name()),
        };
        out.push_str(&format!("- {} — {}\n", markdown::code_span(&usage), command.what));
    }
    out.push_str("\nOnly people with write access to this repository can ask me to work.");
    out
}

/// The reply when another job is already running (or waiting) on the same pull request.
pub fn queued(trigger: &str, ahead: usize) -> String {
    let ahead = match ahead {
        0 | 1 => "another job is already running on this pull request".to_owned(),
        n => format!("{n} jobs are ahead of this one on this pull request"),
    };
    format!(
        "Queued: {ahead}, and this one starts when it is done. {} stops the running job.",
        markdown::code_span(&format!("{trigger} stop"))
    )
}

/// A job stopped with `stop` (by `by`), or by a shutdown.
pub fn stopped(by: Option<&str>, saved: Option<&BranchRef>) -> String {
    let who = stopped_by(by);
    match saved {
        Some(branch) => format!("{who} The work so far is on {}.", branch_link(branch)),
        None => format!("{who} Nothing was changed."),
    }
}

/// The answer to `@agent stop` when nothing runs or waits on the pull request.
pub const NOTHING_TO_STOP: &str = "There is no job running or waiting here, so there is nothing to stop.";

/// "Stopped, as @bob asked." or, without a person, the shutdown.
pub fn stopped_by(by: Option<&str>) -> String {
    match by {
        Some(login) => format!("Stopped, as @{} asked.", super::login_text(login)),
        None => "Stopped: pitcrew was shutting down.".to_owned(),
    }
}

/// The words for a budget that ran out, after "Stopped: ".
pub fn budget_words(budget: Budget) -> &'static str {
    match budget {
        Budget::Steps => "the step budget ran out",
        Budget::Cost => "the cost budget ran out",
        Budget::WallTime => "the time limit was reached",
        Budget::Context => "the conversation outgrew the model's context window",
    }
}

/// What failed and what to try, in plain words; `tests` gives the newly failing tests of a
/// regression.
pub fn failure(cause: &StopCause, trigger: &str, tests: Option<&TestDelta>) -> String {
    // The trigger is validated configuration (`@` and a name), shown only inside code spans.
    let trigger = trigger.replace('`', "");
    match cause {
        StopCause::Budget(budget) => {
            let (what, setting) = match budget {
                Budget::Steps => ("I used all the steps I am allowed for one job", "`[agent] max_steps`"),
                Budget::Cost => ("I reached the cost limit for one job", "`[agent] max_cost_usd`"),
                Budget::WallTime => ("I reached the time limit for one job", "`[agent] max_wall_time`"),
                Budget::Context => (
                    "The work no longer fitted in the model's context window",
                    "`[model] context_window` (only if the model really has more)",
                ),
            };
            format!(
                "{what} before finishing. To try again: ask for a smaller, more specific change \
                 (`{trigger} fix …`), or ask the people who run pitcrew to raise {setting}."
            )
        }
        StopCause::Stuck { tool } => format!(
            "I kept repeating the same {} call without making progress, so I stopped. To try again, \
             tell me more precisely what to change or where to look (`{trigger} fix …`).",
            markdown::code_span(tool)
        ),
        StopCause::Cancelled { by } => stopped(by.as_deref(), None),
        StopCause::Superseded { head } => format!(
            "New commits came while I was reviewing; I stopped and review the newest ({}) instead.",
            markdown::code_span(super::short_sha(head))
        ),
        StopCause::TestsRegressed => {
            let mut out = String::from("My change made tests fail that passed before, so I did not push it.");
            if let Some(delta) = tests
                && !delta.newly_failing.is_empty()
            {
                let names: Vec<String> = delta
                    .newly_failing
                    .iter()
                    .take(10)
                    .map(|n| markdown::code_span(n))
                    .collect();
                let more = delta.newly_failing.len().saturating_sub(10);
                let more = if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                };
                out.push_str(&format!(" Newly failing: {}{more}.", names.join(", ")));
            }
            out.push_str(&format!(
                " To try again, say what the change must keep working (`{trigger} fix …`), or take over from the \
                 partial branch."
            ));
            out
        }
        StopCause::PushConflict { files } => {
            let names: Vec<String> = files.iter().take(20).map(|f| markdown::code_span(f)).collect();
            let more = files.len().saturating_sub(20);
            let more = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            format!(
                "New commits arrived on this branch while I worked, and my change conflicts with them in {}{more}. \
                 Nothing was pushed. Ask me again (`{trigger} fix …`) to start from the new commits.",
                if names.is_empty() {
                    "some files".to_owned()
                } else {
                    names.join(", ")
                }
            )
        }
        // The client's error texts say which kind of failure it was; those that retrying cannot fix
        // get advice for the people who run pitcrew instead of "try again".
        StopCause::ModelProvider { message } if is_lasting_provider_error(message) => format!(
            "The model provider refused the request: {}. Asking again will not help: the people who run \
             pitcrew must check the API key, the account's quota and the model name.",
            markdown::code_span(cut(message.trim(), 300))
        ),
        StopCause::ModelProvider { message } => format!(
            "The model provider returned an error: {}. This is usually temporary (a rate limit or an outage): \
             try again in a few minutes. If it keeps happening, the people who run pitcrew should check the model \
             name, the API key and the provider's status.",
            markdown::code_span(cut(message.trim(), 300))
        ),
        StopCause::Sandbox { message } => format!(
            "The sandbox where I run commands failed: {}. Check that the image in `[sandbox] image` (in \
             `.github/pitcrew.toml`) exists and has the project's toolchain, and that `[sandbox] setup` succeeds; \
             then try again.",
            markdown::code_span(cut(message.trim(), 300))
        ),
        StopCause::Commit { message } => format!(
            "Committing the change failed: {}. Nothing was pushed. If a path in the message is something the \
             change should not add, ask again without it.",
            markdown::code_span(cut(message.trim(), 300))
        ),
        StopCause::Internal { reference } => format!(
            "Something went wrong on my side (reference {}); nothing in this repository caused it. Try again; if it \
             happens again, give the reference to the people who run pitcrew.",
            markdown::code_span(reference)
        ),
    }
}

/// The change as a patch, for a pull request from a fork that does not allow edits by maintainers;
/// `branch` holds the same change when there is one. Too big a patch is replaced by instructions.
/// Credentials, quota and a bad request (an unknown model) do not pass with time.
fn is_lasting_provider_error(message: &str) -> bool {
    ["rejected the credentials", "out of quota", "rejected the request"]
        .iter()
        .any(|kind| message.contains(kind))
}

pub fn patch(diff: &str, branch: Option<&BranchRef>, trigger: &str) -> String {
    if diff.len() > PATCH_LIMIT {
        return patch_too_big(diff.len(), branch, trigger);
    }
    let mut out = format!(
        "{PATCH_INTRO} Here is the change as a patch. Save it as `pitcrew.patch` at the root of your checkout of \
         this branch, then run `git apply pitcrew.patch` (or `git apply --3way pitcrew.patch` if the branch has \
         moved), review, commit and push.\n\n<details><summary>pitcrew.patch</summary>\n\n{}\n\n</details>",
        markdown::fenced("diff", diff)
    );
    if let Some(branch) = branch {
        out.push_str(&format!("\n\n{}", fetch_branch(branch)));
    }
    out.push_str(&format!("\n\n{}", allow_edits(trigger)));
    out
}

/// [`patch`] for a patch of `bytes` bytes that is not shown.
pub fn patch_too_big(bytes: usize, branch: Option<&BranchRef>, trigger: &str) -> String {
    let mut out = format!(
        "{PATCH_INTRO} The patch is too big to show here ({} KB).",
        bytes.div_ceil(1024)
    );
    match branch {
        Some(branch) => out.push_str(&format!(" {}", fetch_branch(branch))),
        None => out.push_str(" Run pitcrew locally (`pitcrew run`) to make the change in your own checkout."),
    }
    out.push_str(&format!("\n\n{}", allow_edits(trigger)));
    out
}

const PATCH_INTRO: &str =
    "I cannot push to this pull request: it comes from a fork that does not allow edits by maintainers.";

fn fetch_branch(branch: &BranchRef) -> String {
    format!(
        "The change is also on {}; to take it into your branch:\n\n{}",
        branch_link(branch),
        markdown::fenced("sh", &format!("git pull {} {}", branch.clone_url, branch.name))
    )
}

fn allow_edits(trigger: &str) -> String {
    format!(
        "Or tick **Allow edits by maintainers** on this pull request and ask me again ({}): then I push the \
         change myself.",
        markdown::code_span(&format!("{trigger} fix …"))
    )
}

/// The side branch holding unfinished work, with the model's own account of what is left.
pub fn partial_branch(branch: &BranchRef, account: &str) -> String {
    let mut out = format!(
        "The work so far is on {}, so nothing is lost: `git fetch {} {}` to look at it.",
        branch_link(branch),
        branch.clone_url,
        branch.name
    );
    let account = account.trim();
    if !account.is_empty() {
        out.push_str("\n\nWhat is left, in the agent's own words:\n\n");
        out.push_str(&markdown::quote(&markdown::prose(account)));
    }
    out
}

/// One problem in a repository's configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    /// 1-based; `None` for a problem with the file as a whole.
    pub line: Option<u32>,
    pub message: String,
}

/// The comment for an invalid `.github/pitcrew.toml`: the file, each problem with its line (linked
/// when `file_url`, the file's page on GitHub, is known), and that nothing ran.
pub fn invalid_config(path: &str, file_url: Option<&str>, problems: &[ConfigProblem]) -> String {
    let file = match file_url {
        Some(url) => format!("[{}]({url})", markdown::code_span(path)),
        None => markdown::code_span(path),
    };
    let mut out =
        format!("I could not read this repository's configuration, {file}, so I did not start. Please fix:\n\n");
    for problem in problems {
        let place = match (problem.line, file_url) {
            (Some(line), Some(url)) => format!("[line {line}]({url}#L{line}): "),
            (Some(line), None) => format!("line {line}: "),
            (None, _) => String::new(),
        };
        out.push_str(&format!("- {place}{}\n", markdown::inline(&problem.message)));
    }
    out.push_str("\nThen ask me again.");
    let mut doc = Doc::new();
    doc.cuttable(out);
    doc.render(BODY_LIMIT)
}

/// The body of the pull request an issue job opens.
pub fn issue_pr_body(job_id: &str, issue: u64, summary: &str, files: &[FileStat], tests: Option<&TestDelta>) -> String {
    let mut doc = Doc::new();
    doc.fixed(format!("{}\nCloses #{issue}", markdown::marker(job_id)));
    let summary = summary.trim();
    if !summary.is_empty() {
        doc.cuttable(markdown::prose(summary));
    }
    if !files.is_empty() {
        doc.cuttable(format!("**Changed files**\n\n{}", super::files_table(files, 100)));
    }
    if let Some(tests) = tests {
        doc.cuttable(format!("**Tests**\n\n{}", tests.render()));
    }
    doc.fixed("_Opened by pitcrew. Review it like any other pull request before merging._");
    doc.render(BODY_LIMIT)
}

fn branch_link(branch: &BranchRef) -> String {
    format!("[{}]({})", markdown::code_span(&branch.name), branch.url)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::report::fixtures;

    #[test]
    fn refusal_help_and_queue() {
        insta::assert_snapshot!(not_permitted("mallory"), @"@mallory, only people with write access to this repository can ask me to work here.");
        insta::assert_snapshot!(help("@agent", COMMANDS), @r"
        Here is what I can do. Mention me in a comment followed by a command:

        - `@agent fix [instructions]` — make a change on this pull request and push it (plain text after the mention means `fix` too)
        - `@agent review` — review this pull request with inline comments and suggestions
        - `@agent explain [question]` — answer a question about this code or change, without changing anything
        - `@agent describe [focus]` — write or update pitcrew's section of this pull request's description (the author's text stays as it is)
        - `@agent triage` — find out why CI failed and say what to do about it
        - `@agent stop` — stop the job running on this pull request
        - `@agent help` — show this list

        Only people with write access to this repository can ask me to work.
        ");
        insta::assert_snapshot!(queued("@bot", 1), @"Queued: another job is already running on this pull request, and this one starts when it is done. `@bot stop` stops the running job.");
        assert!(queued("@bot", 3).starts_with("Queued: 3 jobs are ahead of this one"));
        insta::assert_snapshot!(stopped(Some("alice"), Some(&fixtures::branch())), @"Stopped, as @alice asked. The work so far is on [`pitcrew/partial-42`](https://github.com/o/r/tree/pitcrew/partial-42).");
        assert_eq!(crate::report::partial_branch_name("42"), "pitcrew/partial-42");
        insta::assert_snapshot!(stopped(None, None), @"Stopped: pitcrew was shutting down. Nothing was changed.");
    }

    #[test]
    fn failures_in_plain_words() {
        let all = [
            StopCause::Budget(Budget::Cost),
            StopCause::Budget(Budget::Context),
            StopCause::Stuck { tool: "bash".into() },
            StopCause::PushConflict {
                files: vec!["src/a.rs".into(), "src/b.rs".into()],
            },
            StopCause::ModelProvider {
                message: "429 Too Many Requests: rate limit reached".into(),
            },
            StopCause::Sandbox {
                message: "image `python:9` not found".into(),
            },
            StopCause::Internal {
                reference: "job-42-7f3a".into(),
            },
        ];
        let text = all
            .iter()
            .map(|cause| failure(cause, "@agent", None))
            .collect::<Vec<_>>()
            .join("\n\n");
        insta::assert_snapshot!(text, @r"
        I reached the cost limit for one job before finishing. To try again: ask for a smaller, more specific change (`@agent fix …`), or ask the people who run pitcrew to raise `[agent] max_cost_usd`.

        The work no longer fitted in the model's context window before finishing. To try again: ask for a smaller, more specific change (`@agent fix …`), or ask the people who run pitcrew to raise `[model] context_window` (only if the model really has more).

        I kept repeating the same `bash` call without making progress, so I stopped. To try again, tell me more precisely what to change or where to look (`@agent fix …`).

        New commits arrived on this branch while I worked, and my change conflicts with them in `src/a.rs`, `src/b.rs`. Nothing was pushed. Ask me again (`@agent fix …`) to start from the new commits.

        The model provider returned an error: `429 Too Many Requests: rate limit reached`. This is usually temporary (a rate limit or an outage): try again in a few minutes. If it keeps happening, the people who run pitcrew should check the model name, the API key and the provider's status.

        The sandbox where I run commands failed: ``image `python:9` not found``. Check that the image in `[sandbox] image` (in `.github/pitcrew.toml`) exists and has the project's toolchain, and that `[sandbox] setup` succeeds; then try again.

        Something went wrong on my side (reference `job-42-7f3a`); nothing in this repository caused it. Try again; if it happens again, give the reference to the people who run pitcrew.
        ");
        let regression = failure(&StopCause::TestsRegressed, "@agent", Some(&fixtures::regressed_tests()));
        insta::assert_snapshot!(regression, @"My change made tests fail that passed before, so I did not push it. Newly failing: `parser::tests::empty`. To try again, say what the change must keep working (`@agent fix …`), or take over from the partial branch.");
    }

    #[test]
    fn patches_for_forks() {
        let diff = "diff --git a/x.md b/x.md\n--- a/x.md\n+++ b/x.md\n@@ -1 +1 @@\n-```old\n+```new\n";
        insta::assert_snapshot!(patch(diff, None, "@agent"), @r"
        I cannot push to this pull request: it comes from a fork that does not allow edits by maintainers. Here is the change as a patch. Save it as `pitcrew.patch` at the root of your checkout of this branch, then run `git apply pitcrew.patch` (or `git apply --3way pitcrew.patch` if the branch has moved), review, commit and push.

        <details><summary>pitcrew.patch</summary>

        ````diff
        diff --git a/x.md b/x.md
        --- a/x.md
        +++ b/x.md
        @@ -1 +1 @@
        -```old
        +```new
        ````

        </details>

        Or tick **Allow edits by maintainers** on this pull request and ask me again (`@agent fix …`): then I push the change myself.
        ");
        // The patch inside is byte for byte the diff, so `git apply` gets what was made.
        let text = patch(diff, None, "@agent");
        let inner = text.split_once("````diff\n").unwrap().1.split_once("\n````").unwrap().0;
        assert_eq!(format!("{inner}\n"), diff);

        let big = format!("+{}\n", "x".repeat(PATCH_LIMIT));
        insta::assert_snapshot!(patch(&big, Some(&fixtures::branch()), "@agent"), @r"
        I cannot push to this pull request: it comes from a fork that does not allow edits by maintainers. The patch is too big to show here (40 KB). The change is also on [`pitcrew/partial-42`](https://github.com/o/r/tree/pitcrew/partial-42); to take it into your branch:

        ```sh
        git pull https://github.com/o/r.git pitcrew/partial-42
        ```

        Or tick **Allow edits by maintainers** on this pull request and ask me again (`@agent fix …`): then I push the change myself.
        ");
        assert!(patch(&big, None, "@agent").contains("Run pitcrew locally"));
    }

    #[test]
    fn partial_branch_quotes_the_account() {
        let text = partial_branch(
            &fixtures::branch(),
            "Left: the `--strict` flag.\n\nAsk @maintainer about <!-- this -->.",
        );
        // The zero-width space that breaks the mention, made visible.
        insta::assert_snapshot!(text.replace('\u{200b}', "<ZWSP>"), @r"
        The work so far is on [`pitcrew/partial-42`](https://github.com/o/r/tree/pitcrew/partial-42), so nothing is lost: `git fetch https://github.com/o/r.git pitcrew/partial-42` to look at it.

        What is left, in the agent's own words:

        > Left: the `--strict` flag.
        >
        > Ask @<ZWSP>maintainer about &lt;!-- this --&gt;.
        ");
    }

    #[test]
    fn invalid_config_names_file_line_and_problem() {
        let problems = [
            ConfigProblem {
                line: Some(3),
                message: "unknown setting `sandbox.imag`; did you mean `sandbox.image`?".into(),
            },
            ConfigProblem {
                line: None,
                message: "the file is not valid UTF-8".into(),
            },
        ];
        insta::assert_snapshot!(invalid_config(".github/pitcrew.toml", Some("https://github.com/o/r/blob/abc/.github/pitcrew.toml"), &problems), @r"
        I could not read this repository's configuration, [`.github/pitcrew.toml`](https://github.com/o/r/blob/abc/.github/pitcrew.toml), so I did not start. Please fix:

        - [line 3](https://github.com/o/r/blob/abc/.github/pitcrew.toml#L3): unknown setting `sandbox.imag`; did you mean `sandbox.image`?
        - the file is not valid UTF-8

        Then ask me again.
        ");
    }

    #[test]
    fn issue_pull_request_body() {
        let body = issue_pr_body(
            "42",
            7,
            "Accept empty input in the parser.",
            &fixtures::files(),
            Some(&fixtures::fixed_tests()),
        );
        insta::assert_snapshot!(body, @r"
        <!-- pitcrew:job=42 -->
        Closes #7

        Accept empty input in the parser.

        **Changed files**

        | File | + | − |
        |---|---:|---:|
        | `src/parser.rs` | 12 | 3 |
        | `tests/empty.rs` (added) | 20 | 0 |

        **Tests**

        | Tests | Passed | Failed | Skipped |
        |---|---:|---:|---:|
        | Before | 41 | 1 | 0 |
        | After | 43 | 0 | 0 |

        - **Fixed (1):** `parser::tests::empty`

        _Opened by pitcrew. Review it like any other pull request before merging._
        ");
    }

    #[test]
    fn provider_errors_that_time_does_not_fix_are_not_called_temporary() {
        let refused = failure(
            &StopCause::ModelProvider {
                message: "the model provider rejected the credentials (401): invalid x-api-key".into(),
            },
            "@agent",
            None,
        );
        assert!(refused.contains("Asking again will not help"), "{refused}");
        assert!(!refused.contains("usually temporary"), "{refused}");
        let limited = failure(
            &StopCause::ModelProvider {
                message: "rate limited by the model provider: slow down".into(),
            },
            "@agent",
            None,
        );
        assert!(limited.contains("usually temporary"), "{limited}");
    }
}
