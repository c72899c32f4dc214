//! `@agent review` and `@agent explain` end to end through `pitcrew serve` with the real job
//! handlers: a signed comment delivery, the fake GitHub (validated against GitHub's REST
//! description), the real git server, the scripted model and the Docker sandbox with the busybox
//! test image. Both jobs are read-only: the tests check that nothing reaches the repository.

use std::path::Path;
use std::process::Command;

use pitcrew::jobs::{JobFilter, JobState};
use pitcrew_tests::fake_github::{CheckRun, FakeGithub, Issue, Permission, Repo};
use pitcrew_tests::git_server::GitServer;
use pitcrew_tests::scenario::{PullEvent, pull_request_payload};
use pitcrew_tests::scripted_model::{Reply, Script, ScriptedModel};
use serde_json::json;

use super::harness::Bot;

const REPO: &str = "acme/calc";
const PR: u64 = 7;
const REPO_CONFIG: &str = "[agent]\ntest_command = \"true\"\n";

/// Ten shell functions of four lines each after a three-line header: function `i` (0-based) opens
/// on line `4 + 4 * i` and its body is on the line after.
const OPS: [(&str, &str); 10] = [
    ("add", "+"),
    ("sub", "-"),
    ("mul", "*"),
    ("div", "/"),
    ("rem", "%"),
    ("band", "&"),
    ("bor", "|"),
    ("bxor", "^"),
    ("shl", "<<"),
    ("shr", ">>"),
];

fn calc(body: impl Fn(&str, &str) -> String) -> String {
    let mut text = String::from("#!/bin/sh\n# calc: shell arithmetic, sourced by the tests.\n\n");
    for (name, op) in OPS {
        text.push_str(&format!("{name}() {{\n    {}\n}}\n\n", body(name, op)));
    }
    text
}

fn base_calc() -> String {
    calc(|_, op| format!("echo $(($1 {op} $2))"))
}

/// The pull request's version: two hunks, `add` (line 5) and `shr` (line 41).
fn head_calc() -> String {
    calc(|name, op| match name {
        "add" => "echo $((${1:-0} + ${2:-0}))".to_owned(),
        "shr" => "echo $((($1 >> $2) & 255))".to_owned(),
        _ => format!("echo $(($1 {op} $2))"),
    })
}

fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git").args(args).current_dir(dir).output().unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

struct World {
    bot: Bot,
    head_sha: String,
    /// Every ref of the served repository when the job was asked for.
    refs_before: String,
}

impl World {
    async fn start(image: &str, script: Script) -> World {
        World::start_with(image, script, REPO_CONFIG).await
    }

    /// The repository with `repo_config` as its `.github/pitcrew.toml`.
    async fn start_with(image: &str, script: Script, repo_config: &str) -> World {
        let github = FakeGithub::start();
        let git_server = GitServer::start_with(github.token_check());
        git_server
            .create_repo(
                REPO,
                &[
                    ("calc.sh", &base_calc()),
                    ("README.md", "calc\n"),
                    (".github/pitcrew.toml", repo_config),
                ],
            )
            .unwrap();
        let head_sha = git_server
            .create_pull_head(
                REPO,
                PR,
                "main",
                &[("calc.sh", &head_calc())],
                "calc: defaults and a mask",
            )
            .unwrap();
        let bare = git_server.repo_path(REPO);
        git(&bare, &["update-ref", "refs/heads/calc-defaults", &head_sha]);
        // The base branch moves on after the pull request forked: the review's diff must not show
        // this commit (GitHub's diff runs from the merge base).
        let base_sha = git_server
            .commit(REPO, "main", &[("NOTES.md", "Unrelated notes on main.\n")], "notes")
            .unwrap();
        github.add_repo(
            Repo::new(REPO)
                .default_branch("main")
                .clone_url(&git_server.url(REPO))
                .git_dir(git_server.repo_path(REPO)),
        );
        github.add_issue(
            REPO,
            Issue::pull_request(
                PR,
                "calc: defaults and a mask",
                ("calc-defaults", &head_sha),
                ("main", &base_sha),
            )
            .user("bob"),
        );
        github.set_permission(REPO, "alice", Permission::Write);

        let model = ScriptedModel::start(script);
        let bot = Bot::start(github, git_server, model, |overrides| overrides.docker(image)).await;
        let refs_before = git(&bare, &["for-each-ref"]);
        World {
            bot,
            head_sha,
            refs_before,
        }
    }

    /// `login` comments `body` on the pull request; the signed delivery is posted to the server.
    /// Returns the comment's id.
    async fn comment(&self, delivery: &str, login: &str, body: &str) -> u64 {
        self.bot
            .comment((REPO, PR), delivery, (login, "COLLABORATOR"), body)
            .await
    }

    /// Waits until the job has reported its end (check run completed, progress comment final);
    /// returns the check run.
    async fn finished(&self) -> CheckRun {
        self.bot.reported_end(REPO, PR).await
    }

    fn bot_comments(&self) -> Vec<String> {
        self.bot.bot_comments_on(REPO, PR)
    }

    /// The text of the first user message the model was sent: the rendered job template.
    fn first_prompt(&self) -> String {
        let requests = self.bot.model.requests();
        let first = requests.first().expect("the model was never asked");
        first.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_owned()
    }

    /// The tools offered to the model in its first request, by name.
    fn tools_offered(&self) -> Vec<String> {
        let requests = self.bot.model.requests();
        requests[0].body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
            .collect()
    }

    /// Nothing was pushed: every ref is where it was, and no branch was added.
    fn assert_nothing_pushed(&self) {
        let bare = self.bot.git.repo_path(REPO);
        assert_eq!(git(&bare, &["for-each-ref"]), self.refs_before);
        assert_eq!(
            self.bot.git.rev_parse(REPO, "refs/heads/calc-defaults").as_deref(),
            Some(self.head_sha.as_str())
        );
        let pushes = self.bot.git.pushes();
        assert!(pushes.is_empty(), "{pushes:#?}");
    }

    /// Waits for the job to end in the store (just after its last report on GitHub).
    async fn assert_job_succeeded(&mut self) {
        let job = self.bot.job_end().await;
        assert_eq!(job.state, JobState::Succeeded, "{job:?}");
    }
}

fn reviewing_script() -> Script {
    Script::new()
        .turn(
            Reply::text("Reading the changed file.")
                .tool_call("read_file", json!({"path": "calc.sh"}))
                .usage(1_000, 40),
        )
        .turn(
            Reply::new()
                .tool_call(
                    "review_comment",
                    json!({
                        "path": "calc.sh",
                        "line": 5,
                        "severity": "suggestion",
                        "category": "maintainability",
                        "body": "Defaulting a missing argument to 0 hides the caller's mistake.",
                        "suggestion": "    echo $(($1 + $2))"
                    }),
                )
                .tool_call(
                    "review_comment",
                    json!({
                        "path": "calc.sh",
                        "line": 21,
                        "severity": "suggestion",
                        "category": "bug",
                        "body": "Dividing by zero in `rem` aborts the shell; it predates this change but deserves a guard."
                    }),
                )
                .tool_call(
                    "review_comment",
                    json!({
                        "path": "calc.sh",
                        "line": 41,
                        "severity": "blocking",
                        "category": "bug",
                        "verified": true,
                        "body": "The mask keeps only the low byte, so `shr 4096 2` prints 0."
                    }),
                )
                .tool_call(
                    "review_comment",
                    json!({"path": "lib/missing.sh", "line": 3, "severity": "nit", "category": "style", "body": "Not a file of this repository."}),
                )
                .usage(1_400, 120),
        )
        .turn(
            Reply::text(
                "Makes `add` default missing arguments to 0 and masks `shr` to one byte.\nOne real bug in the mask; \
                 the default is debatable.",
            )
            .usage(1_600, 30),
        )
}

/// The bot's inline comments of `review`: (path, line, side, body).
fn inline_comments(
    world: &World,
    review: &pitcrew_tests::fake_github::Review,
) -> Vec<(String, Option<u64>, Option<String>, String)> {
    world.bot.github.state(|state| {
        review
            .comment_ids
            .iter()
            .map(|id| {
                let c = &state.review_comments[id];
                (c.path.clone(), c.line, c.side.clone(), c.body.clone())
            })
            .collect()
    })
}

/// The hidden fingerprint line at the end of an inline comment.
fn without_marker(body: &str) -> &str {
    body.rsplit_once("\n\n<!-- pitcrew:finding ")
        .map_or(body, |(text, _)| text)
}

#[test]
fn a_review_comments_inline_only_on_the_diff_and_pushes_nothing() {
    let Some(image) = pitcrew_tests::docker::test_image() else {
        return;
    };
    super::harness::run_test(|| async move {
        let mut world = World::start(image, reviewing_script()).await;
        let asked = world.comment("delivery-review-1", "alice", "@agent review").await;
        let run = world.finished().await;

        // One review, on the head commit, as a comment, with the new findings inline, blocking first.
        let reviews = world.bot.github.reviews();
        assert_eq!(reviews.len(), 1, "{reviews:#?}");
        let review = &reviews[0];
        assert_eq!(review.state, "COMMENTED");
        assert_eq!(review.request["event"], "COMMENT");
        assert_eq!(review.commit_id, world.head_sha);
        assert_eq!(review.user, world.bot.github.bot_login());
        let comments = inline_comments(&world, review);
        assert_eq!(comments.len(), 2, "{comments:#?}");
        assert_eq!(
            (comments[0].0.as_str(), comments[0].1, comments[0].2.as_deref()),
            ("calc.sh", Some(41), Some("RIGHT"))
        );
        assert_eq!(
            without_marker(&comments[0].3),
            "**🔴 blocking · bug**\n\nThe mask keeps only the low byte, so `shr 4096 2` prints 0."
        );
        assert_eq!((comments[1].0.as_str(), comments[1].1), ("calc.sh", Some(5)));
        assert_eq!(
            without_marker(&comments[1].3),
            "**🟡 suggestion · maintainability**\n\nDefaulting a missing argument to 0 hides the caller's mistake.\n\n\
             ```suggestion\n    echo $(($1 + $2))\n```"
        );
        assert!(comments.iter().all(|c| c.3.contains("<!-- pitcrew:finding ")));

        // The summary comment: what the pull request does, the findings, the coverage, the state.
        let bot_comments = world.bot_comments();
        assert_eq!(bot_comments.len(), 1, "{bot_comments:#?}");
        let summary = &bot_comments[0];
        let short = &world.head_sha[..7];
        assert!(summary.starts_with("<!-- pitcrew:review-summary -->\n"), "{summary}");
        assert!(
            summary.contains(&format!("### pitcrew review of `{short}`")),
            "{summary}"
        );
        assert!(
            summary.contains("Makes `add` default missing arguments to 0 and masks `shr` to one byte."),
            "{summary}"
        );
        assert!(summary.contains("| 1 | 🔴 blocking | bug |"), "{summary}");
        assert!(
            summary.contains(
                "- `calc.sh:21` 🟡 suggestion · bug — Dividing by zero in `rem` aborts the shell; it predates this \
                 change but deserves a guard."
            ),
            "{summary}"
        );
        assert!(
            summary.contains("Reviewed 1 of 1 changed file (4 of 4 lines)."),
            "{summary}"
        );
        assert!(summary.contains(&format!("<!-- pitcrew:review-state {{\"head\":\"{}\"", world.head_sha)));
        assert!(!summary.contains("missing.sh"), "{summary}");
        // The review's own body points at the summary.
        assert!(
            review.body.starts_with(&format!(
                "<!-- pitcrew:job=1 -->\n\n2 new findings on `{short}`. The [review summary]("
            )),
            "{}",
            review.body
        );

        // The finding on a path that does not exist was refused, and the model was told why.
        let told = world.bot.model.requests().iter().any(|r| {
            r.raw_body
                .contains("`lib/missing.sh` does not exist in the pull request's code")
        });
        assert!(told, "the model never heard that lib/missing.sh does not exist");

        // The model saw the pull request's own diff (from the merge base), every changed file, and
        // tools to read and to confirm (tests, commands) — none that edits.
        let prompt = world.first_prompt();
        assert!(prompt.contains("+    echo $((${1:-0} + ${2:-0}))"), "{prompt}");
        assert!(prompt.contains("+    echo $((($1 >> $2) & 255))"), "{prompt}");
        assert!(prompt.contains("- `calc.sh` +2 -2 ← in this review"), "{prompt}");
        assert!(
            prompt.contains("# What this review covers\n\nThe whole pull request."),
            "{prompt}"
        );
        assert!(!prompt.contains("NOTES.md"), "{prompt}");
        let tools = world.tools_offered();
        for tool in ["review_comment", "run_tests", "bash", "read_file"] {
            assert!(tools.contains(&tool.to_owned()), "{tools:?}");
        }
        for writer in ["edit_file", "write_file", "recheck_finding"] {
            assert!(!tools.contains(&writer.to_owned()), "{tools:?}");
        }

        // The check run: completed on the head, every finding an annotation.
        assert_eq!(run.head_sha, world.head_sha);
        assert_eq!(run.status_history().last().map(String::as_str), Some("completed"));
        assert_eq!(run.conclusion.as_deref(), Some("success"), "{run:#?}");
        assert_eq!(
            run.output["title"].as_str(),
            Some("Review posted with 2 inline comments")
        );
        let annotated: Vec<(String, u64)> = run
            .annotations
            .iter()
            .map(|a| {
                (
                    a["path"].as_str().unwrap().to_owned(),
                    a["start_line"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            annotated,
            [
                ("calc.sh".to_owned(), 41),
                ("calc.sh".to_owned(), 5),
                ("calc.sh".to_owned(), 21)
            ]
        );

        world.assert_nothing_pushed();
        world.assert_job_succeeded().await;
        assert_eq!(world.bot.reactions_on_comment(asked), ["eyes"]);
        world.bot.model.assert_script_consumed();
        world.bot.github.assert_no_violations();
        world.bot
    });
}

const ANSWER: &str = "`add` is a shell function so that `run-tests.sh` can source `calc.sh` and call it like a \
                      command: its result is what it prints (`calc.sh:4-6`).";

#[test]
fn explain_answers_in_the_progress_comment_and_changes_nothing() {
    let Some(image) = pitcrew_tests::docker::test_image() else {
        return;
    };
    super::harness::run_test(|| async move {
        let script = Script::new()
            .turn(
                Reply::text("Looking at calc.sh.")
                    .tool_call("read_file", json!({"path": "calc.sh", "limit": 10}))
                    .usage(900, 30),
            )
            .turn(Reply::text(ANSWER).usage(1_100, 60));
        let mut world = World::start(image, script).await;
        let question = world
            .comment(
                "delivery-explain-1",
                "alice",
                "@agent explain why is add a shell function",
            )
            .await;
        let run = world.finished().await;

        // The answer is the final progress comment, under the question.
        let bot_comments = world.bot_comments();
        assert_eq!(bot_comments.len(), 1, "{bot_comments:#?}");
        let answer = &bot_comments[0];
        assert!(
            answer.contains("**pitcrew · explain** requested by @alice\n> why is add a shell function"),
            "{answer}"
        );
        assert!(answer.contains("**✅ Answered**"), "{answer}");
        assert!(answer.contains(ANSWER), "{answer}");

        // The question and the pull request reached the model; only read-only tools were offered.
        let prompt = world.first_prompt();
        assert!(
            prompt.starts_with("# Question\n\nwhy is add a shell function\n"),
            "{prompt}"
        );
        assert!(prompt.contains("GitHub pull request #7 in acme/calc"), "{prompt}");
        assert!(prompt.contains("+    echo $((${1:-0} + ${2:-0}))"), "{prompt}");
        let tools = world.tools_offered();
        assert!(tools.contains(&"read_file".to_owned()), "{tools:?}");
        for writer in ["edit_file", "write_file", "bash", "review_comment"] {
            assert!(!tools.contains(&writer.to_owned()), "{tools:?}");
        }

        assert_eq!(run.head_sha, world.head_sha);
        assert_eq!(run.conclusion.as_deref(), Some("success"), "{run:#?}");
        assert_eq!(run.output["title"].as_str(), Some("Answered"));
        assert!(world.bot.github.reviews().is_empty());
        world.assert_nothing_pushed();
        world.assert_job_succeeded().await;
        assert_eq!(world.bot.reactions_on_comment(question), ["eyes"]);
        world.bot.model.assert_script_consumed();
        world.bot.github.assert_no_violations();
        world.bot
    });
}

const AUTO_CONFIG: &str = "[agent]\ntest_command = \"true\"\n\n[review]\nauto = true\n";

impl World {
    /// GitHub's `pull_request` delivery of `action` for the pull request at its current head.
    async fn pull_event(&self, delivery: &str, action: &str, draft: bool, before: Option<&str>) {
        let head = self.current_head();
        let event = PullEvent {
            action,
            number: PR,
            head_sha: &head,
            head_ref: "calc-defaults",
            base_ref: "main",
            author: "bob",
            sender: "bob",
            draft,
            labels: &[],
            before,
        };
        let payload = pull_request_payload(
            REPO,
            &self.bot.git.url(REPO),
            &event,
            Some(self.bot.github.installation_id()),
        );
        self.bot.deliver("pull_request", delivery, &payload).await;
    }

    fn current_head(&self) -> String {
        self.bot
            .github
            .state(|s| s.issues[&(REPO.to_owned(), PR)].pull.as_ref().unwrap().head.sha.clone())
    }

    /// Moves the pull request's branch (and GitHub's idea of its head) to `sha`.
    fn move_head(&self, sha: &str, base: Option<&str>) {
        let bare = self.bot.git.repo_path(REPO);
        git(&bare, &["update-ref", "refs/heads/calc-defaults", sha]);
        git(&bare, &["update-ref", &format!("refs/pull/{PR}/head"), sha]);
        self.bot.github.update_issue(REPO, PR, |issue| {
            let pull = issue.pull.as_mut().unwrap();
            sha.clone_into(&mut pull.head.sha);
            if let Some(base) = base {
                base.clone_into(&mut pull.base.sha);
            }
        });
    }

    /// A commit of `files` on the pull request's branch; returns it.
    fn push(&self, files: &[(&str, &str)], message: &str) -> String {
        let sha = self.bot.git.commit(REPO, "calc-defaults", files, message).unwrap();
        self.move_head(&sha, None);
        sha
    }

    /// A force-push of the pull request's commits, rebased unchanged onto `main` after `main` got a
    /// new commit; returns the new head.
    fn force_push_rebased(&self) -> String {
        let main = self
            .bot
            .git
            .commit(REPO, "main", &[("CHANGES.md", "Main moved again.\n")], "changes")
            .unwrap();
        let bare = self.bot.git.repo_path(REPO);
        let work = tempfile::tempdir().unwrap();
        let work_dir = work.path();
        let id = ["-c", "user.name=bob", "-c", "user.email=bob@example.com"];
        git(work_dir, &["clone", "-q", bare.to_str().unwrap(), "."]);
        git(work_dir, &["checkout", "-q", "calc-defaults"]);
        let mut rebase = id.to_vec();
        rebase.extend(["rebase", "-q", "origin/main"]);
        git(work_dir, &rebase);
        let head = git(work_dir, &["rev-parse", "HEAD"]);
        git(
            work_dir,
            &["push", "-q", "-f", "origin", "HEAD:refs/heads/calc-defaults"],
        );
        self.move_head(&head, Some(&main));
        head
    }

    /// The user message of the model's `n`th request (0-based).
    fn prompt(&self, n: usize) -> String {
        let requests = self.bot.model.requests();
        requests[n].body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_owned()
    }

    fn tools_of(&self, n: usize) -> Vec<String> {
        let requests = self.bot.model.requests();
        requests[n].body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
            .collect()
    }

    /// The pull request's one summary comment.
    fn summary(&self) -> String {
        let comments = self.bot_comments();
        assert_eq!(comments.len(), 1, "{comments:#?}");
        comments[0].clone()
    }
}

/// The code after the author's fix of `add` and a change to `sub` (lines 5 and 9).
fn fixed_calc() -> String {
    calc(|name, op| match name {
        "sub" => "echo $(($1 - $2 - 0))".to_owned(),
        "shr" => "echo $((($1 >> $2) & 255))".to_owned(),
        _ => format!("echo $(($1 {op} $2))"),
    })
}

fn incremental_script() -> Script {
    Script::new()
        // The first review, as the pull request is marked ready.
        .turn(
            Reply::new()
                .tool_call(
                    "review_comment",
                    json!({"path": "calc.sh", "line": 5, "severity": "suggestion", "category": "maintainability",
                        "body": "Defaulting a missing argument to 0 hides the caller's mistake."}),
                )
                .tool_call(
                    "review_comment",
                    json!({"path": "calc.sh", "line": 41, "severity": "blocking", "category": "bug", "verified": true,
                        "body": "The mask keeps only the low byte, so `shr 4096 2` prints 0."}),
                ),
        )
        .turn(Reply::text("Defaults for `add`, a mask for `shr`.\nOne bug."))
        // The review of the new commit: the old finding on `add` is rechecked, `sub` gets a nit, and
        // the mask is found again (a repeat, not posted twice).
        .turn(
            Reply::new()
                .tool_call(
                    "recheck_finding",
                    json!({"id": 1, "status": "addressed", "note": "add no longer defaults"}),
                )
                .tool_call(
                    "review_comment",
                    json!({"path": "calc.sh", "line": 9, "severity": "nit", "category": "style",
                        "body": "`- 0` does nothing; drop it."}),
                )
                .tool_call(
                    "review_comment",
                    json!({"path": "calc.sh", "line": 41, "severity": "blocking", "category": "bug", "verified": true,
                        "body": "The mask keeps only the low byte, so `shr 4096 2` prints 0."}),
                ),
        )
        .turn(Reply::text(
            "Drops the default of `add`; touches `sub`.\nThe mask is still wrong.",
        ))
}

#[test]
fn pull_requests_are_reviewed_when_ready_then_only_what_changed_and_a_rebase_is_not_reviewed_again() {
    let Some(image) = pitcrew_tests::docker::test_image() else {
        return;
    };
    super::harness::run_test(|| async move {
        let mut world = World::start_with(image, incremental_script(), AUTO_CONFIG).await;
        let first_head = world.head_sha.clone();

        // Opened as a draft: no review yet; only the config check, which finds the file unchanged
        // and says nothing.
        world.pull_event("pr-opened", "opened", true, None).await;
        let check = world.bot.config_check_end().await;
        assert_eq!(check.result, Some(json!({"config": "unchanged"})));
        world.bot.settled().await;
        let kinds: Vec<String> = world
            .bot
            .store()
            .jobs(&JobFilter::default())
            .await
            .unwrap()
            .into_iter()
            .map(|job| job.kind)
            .collect();
        assert_eq!(kinds, ["config"]);

        // Ready for review: the whole pull request is reviewed.
        world.pull_event("pr-ready", "ready_for_review", false, None).await;
        let job = world.bot.job_end().await;
        assert_eq!(job.state, JobState::Succeeded, "{job:?}");
        let reviews = world.bot.github.reviews();
        assert_eq!(reviews.len(), 1, "{reviews:#?}");
        let first = inline_comments(&world, &reviews[0]);
        assert_eq!(
            first.iter().map(|c| c.1).collect::<Vec<_>>(),
            [Some(41), Some(5)],
            "{first:#?}"
        );
        let summary = world.summary();
        assert!(
            summary.contains("**pitcrew · review**")
                || summary.contains(&format!("### pitcrew review of `{}`", &first_head[..7])),
            "{summary}"
        );
        assert!(world.prompt(0).contains("The whole pull request."));
        assert!(world.prompt(0).contains("None: this is the first review"));

        // The author fixes `add` and touches `sub`: only that is reviewed.
        let second_head = world.push(&[("calc.sh", &fixed_calc())], "calc: no default for add");
        world
            .pull_event("pr-sync-1", "synchronize", false, Some(&first_head))
            .await;
        let job = world.bot.job_end().await;
        assert_eq!(job.state, JobState::Succeeded, "{job:?}");
        let prompt = world.prompt(2);
        assert!(
            prompt.contains(&format!(
                "Only what changed since the last review (commit `{}`)",
                &first_head[..7]
            )),
            "{prompt}"
        );
        assert!(
            prompt.contains("Already raised on this pull request (do not raise them again):"),
            "{prompt}"
        );
        assert!(
            prompt.contains("1. `calc.sh:5` — Defaulting a missing argument to 0 hides the caller's mistake."),
            "{prompt}"
        );
        assert!(world.tools_of(2).contains(&"recheck_finding".to_owned()));
        // One new review, with the nit alone: the mask's finding is not posted again.
        let reviews = world.bot.github.reviews();
        assert_eq!(reviews.len(), 2, "{reviews:#?}");
        let second = inline_comments(&world, &reviews[1]);
        assert_eq!(second.len(), 1, "{second:#?}");
        assert_eq!(
            without_marker(&second[0].3),
            "**⚪ nit · style**\n\n`- 0` does nothing; drop it."
        );
        assert_eq!(second[0].1, Some(9));
        // The addressed finding's thread is answered.
        let root = world.bot.github.state(|s| {
            s.review_comments
                .values()
                .find(|c| c.line == Some(5) && c.in_reply_to.is_none())
                .map(|c| c.id)
                .unwrap()
        });
        let replies: Vec<String> = world.bot.github.state(|s| {
            s.review_comments_on(REPO, PR)
                .into_iter()
                .filter(|c| c.in_reply_to == Some(root))
                .map(|c| c.body.clone())
                .collect()
        });
        assert_eq!(
            replies,
            [format!("Addressed in {}: add no longer defaults", &second_head[..7])]
        );
        // …and its thread resolved, through GraphQL (checked against GitHub's schema); the mask's
        // stays open.
        let threads: Vec<(u64, bool)> = world
            .bot
            .github
            .review_threads(REPO, PR)
            .into_iter()
            .map(|t| (t.root_comment, t.is_resolved()))
            .collect();
        assert_eq!(threads.len(), 3, "{threads:?}");
        assert!(threads.contains(&(root, true)), "{threads:?}");
        assert_eq!(threads.iter().filter(|(_, resolved)| *resolved).count(), 1);
        // The summary: the new review on top, the first collapsed under it, the new head recorded.
        let summary = world.summary();
        let (top, earlier) = summary.split_once("<!-- pitcrew:review-earlier -->").unwrap();
        assert!(
            top.contains(&format!(
                "### pitcrew review of `{}`: what changed since `{}`",
                &second_head[..7],
                &first_head[..7]
            )),
            "{summary}"
        );
        assert!(
            top.contains(&format!("**Addressed in `{}`**", &second_head[..7])),
            "{top}"
        );
        assert!(top.contains("1 finding already on this pull request left out"), "{top}");
        assert!(
            top.contains(&format!("Reviewed what changed since `{}`: 1 file", &first_head[..7])),
            "{top}"
        );
        assert!(
            earlier.contains(&format!(
                "<details><summary>Earlier review of `{}`</summary>",
                &first_head[..7]
            )),
            "{earlier}"
        );
        assert!(summary.contains(&format!("\"head\":\"{second_head}\"")), "{summary}");

        // A force-push that only rebases onto the moved base: nothing new, nothing posted, no model.
        let requests = world.bot.model.requests().len();
        let rebased = world.force_push_rebased();
        assert_ne!(rebased, second_head);
        world
            .pull_event("pr-sync-2", "synchronize", false, Some(&second_head))
            .await;
        let job = world.bot.job_end().await;
        assert_eq!(job.state, JobState::Succeeded, "{job:?}");
        assert_eq!(
            job.result.as_ref().unwrap()["headline"],
            "the push only rebased changes that were reviewed already"
        );
        assert_eq!(world.bot.model.requests().len(), requests);
        assert_eq!(world.bot.github.reviews().len(), 2);
        let summary = world.summary();
        assert!(summary.contains(&format!("\"head\":\"{rebased}\"")), "{summary}");
        // A check run for each review, on the commit it reviewed; none for the rebase.
        let runs: Vec<(String, Option<String>)> = world
            .bot
            .github
            .check_runs()
            .into_iter()
            .map(|run| (run.head_sha, run.conclusion))
            .collect();
        assert_eq!(
            runs,
            [
                (first_head.clone(), Some("success".to_owned())),
                (second_head.clone(), Some("success".to_owned()))
            ]
        );
        world.bot.model.assert_script_consumed();
        world.bot.github.assert_no_violations();
        world.bot
    });
}

/// `calc.sh` with `shr` as on the base again (the mask dropped).
fn unmasked_calc() -> String {
    calc(|name, op| match name {
        "add" => "echo $((${1:-0} + ${2:-0}))".to_owned(),
        _ => format!("echo $(($1 {op} $2))"),
    })
}

#[test]
fn request_changes_on_a_verified_blocking_finding_and_a_clean_review_dismisses_it() {
    let Some(image) = pitcrew_tests::docker::test_image() else {
        return;
    };
    super::harness::run_test(|| async move {
        let script = Script::new()
            .turn(Reply::new().tool_call(
                "review_comment",
                json!({"path": "calc.sh", "line": 41, "severity": "blocking", "category": "bug", "verified": true,
                    "body": "The mask keeps only the low byte, so `shr 4096 2` prints 0."}),
            ))
            .turn(Reply::text("Masks `shr`.\nThe mask is a bug."))
            .turn(Reply::new().tool_call("recheck_finding", json!({"id": 1, "status": "addressed"})))
            .turn(Reply::text("Drops the mask.\nNothing left to change."));
        // A mistake elsewhere in the file does not stop automatic reviews, and is not repeated on
        // the pull request at every push (it is logged; a command would answer with it).
        let config = format!("{AUTO_CONFIG}event = \"request_changes\"\ncolour = \"blue\"\n");
        let mut world = World::start_with(image, script, &config).await;
        let first_head = world.head_sha.clone();
        world.pull_event("pr-opened", "opened", false, None).await;
        assert_eq!(world.bot.job_end().await.state, JobState::Succeeded);
        let reviews = world.bot.github.reviews();
        assert_eq!(reviews.len(), 1, "{reviews:#?}");
        assert_eq!(
            (reviews[0].state.as_str(), &reviews[0].request["event"]),
            ("CHANGES_REQUESTED", &json!("REQUEST_CHANGES"))
        );
        assert!(
            reviews[0]
                .body
                .contains("; requesting changes for 1 verified blocking finding."),
            "{}",
            reviews[0].body
        );

        // The author drops the mask; the finding is rechecked, addressed, and the request dismissed.
        let second_head = world.push(&[("calc.sh", &unmasked_calc())], "calc: no mask");
        world
            .pull_event("pr-sync", "synchronize", false, Some(&first_head))
            .await;
        assert_eq!(world.bot.job_end().await.state, JobState::Succeeded);
        let reviews = world.bot.github.reviews();
        assert_eq!(reviews.len(), 1, "no new review: nothing new to say inline");
        assert_eq!(reviews[0].state, "DISMISSED");
        assert_eq!(
            reviews[0].dismissal.as_deref(),
            Some(format!("The review of {} found no blocking problem left.", &second_head[..7]).as_str())
        );
        let summary = world.summary();
        assert!(summary.contains("I found nothing to comment on."), "{summary}");
        assert!(
            summary.contains(&format!("**Addressed in `{}`**", &second_head[..7])),
            "{summary}"
        );
        let replies: Vec<String> = world.bot.github.state(|s| {
            s.review_comments_on(REPO, PR)
                .into_iter()
                .filter(|c| c.in_reply_to.is_some())
                .map(|c| c.body.clone())
                .collect()
        });
        assert_eq!(replies, [format!("Addressed in {}", &second_head[..7])]);
        let threads = world.bot.github.review_threads(REPO, PR);
        assert!(threads.len() == 1 && threads[0].is_resolved(), "{threads:?}");
        assert_eq!(world.bot.github.check_runs().len(), 2);
        world.bot.model.assert_script_consumed();
        world.bot.github.assert_no_violations();
        world.bot
    });
}

#[test]
fn a_large_pull_request_is_reviewed_in_chunks_and_the_coverage_line_names_what_was_left_out() {
    let Some(image) = pitcrew_tests::docker::test_image() else {
        return;
    };
    super::harness::run_test(|| async move {
        // 300 source files in three directories, three vendored files the repository ignores, and
        // a generated schema.
        let mut files: Vec<(String, String)> = Vec::new();
        for dir in ["api", "core", "web"] {
            for n in 0..100 {
                let body: String = (0..8).map(|l| format!("value_{n}_{l} = {l}\n")).collect();
                files.push((format!("{dir}/module_{n:03}.py"), body));
            }
        }
        for n in 0..3 {
            files.push((format!("vendor/lib{n}/x.go"), "package x\n".to_owned()));
        }
        files.push((
            "schema.json".to_owned(),
            "{\"//\": \"@generated by tools/schema.py, do not edit\", \"version\": 2}\n".to_owned(),
        ));
        let refs: Vec<(&str, &str)> = files.iter().map(|(p, t)| (p.as_str(), t.as_str())).collect();
        let config = "[agent]\ntest_command = \"true\"\n\n[review]\nignore_paths = [\"vendor/\"]\n";

        let github = FakeGithub::start();
        let git_server = GitServer::start_with(github.token_check());
        git_server
            .create_repo(REPO, &[("README.md", "big\n"), (".github/pitcrew.toml", config)])
            .unwrap();
        let head_sha = git_server
            .create_pull_head(REPO, PR, "main", &refs, "a big change")
            .unwrap();
        let base_sha = git_server.rev_parse(REPO, "refs/heads/main").unwrap();
        github.add_repo(
            Repo::new(REPO)
                .default_branch("main")
                .clone_url(&git_server.url(REPO))
                .git_dir(git_server.repo_path(REPO)),
        );
        github.add_issue(
            REPO,
            Issue::pull_request(PR, "A big change", ("big", &head_sha), ("main", &base_sha)).user("bob"),
        );
        github.set_permission(REPO, "alice", Permission::Write);
        // As many parts as pitcrew makes of the reviewable files, each answered with a verdict.
        let diff = git(&git_server.repo_path(REPO), &["diff", &base_sha, &head_sha]);
        let all = pitcrew::review::diff::split(&format!("{diff}\n"));
        let reviewable: Vec<&pitcrew::review::diff::FileDiff> = all
            .iter()
            .filter(|f| !f.path.starts_with("vendor/") && f.path != "schema.json")
            .collect();
        assert_eq!(reviewable.len(), 300);
        let parts = pitcrew::review::chunks::chunk(&reviewable).len();
        assert!(parts >= 8, "{parts}");
        let mut script = Script::new();
        for n in 1..=parts {
            script = script.turn(Reply::text(format!(
                "Part {n}: plain data modules.\nNothing to change."
            )));
        }
        let model = ScriptedModel::start(script);
        let bot = Bot::start(github, git_server, model, |overrides| overrides.docker(image)).await;
        let mut world = World {
            bot,
            head_sha: head_sha.clone(),
            refs_before: String::new(),
        };
        let asked = world.comment("review-big", "alice", "@agent review").await;
        assert_eq!(world.bot.job_end().await.state, JobState::Succeeded);
        assert_eq!(world.bot.reactions_on_comment(asked), ["eyes"]);

        // Every reviewable file was in exactly one part, and every part knew every changed file.
        let requests = world.bot.model.requests();
        assert_eq!(requests.len(), parts);
        let mut seen = std::collections::BTreeMap::<String, usize>::new();
        for n in 0..parts {
            let prompt = world.prompt(n);
            assert!(
                prompt.contains(&format!("this is part {} of {parts}", n + 1)),
                "{prompt}"
            );
            assert!(
                prompt.contains("- `vendor/lib0/x.go` +1 -0 (left out: ignored by config)"),
                "{prompt}"
            );
            assert!(
                prompt.contains("- `schema.json` +1 -0 (left out: generated)"),
                "{prompt}"
            );
            for line in prompt.lines().filter(|l| l.ends_with("← in this review")) {
                let path = line.split('`').nth(1).unwrap().to_owned();
                *seen.entry(path).or_default() += 1;
            }
        }
        assert_eq!(seen.len(), 300);
        assert!(seen.values().all(|n| *n == 1), "{seen:?}");

        let summary = world.summary();
        assert!(
            summary.contains(
                "Reviewed 300 of 304 changed files (2,400 of 2,404 lines); skipped: `vendor/…` (ignored by config, \
                 3 files), `schema.json` (generated)."
            ),
            "{summary}"
        );
        assert!(
            summary.contains("**Part 1 (40 files, from `api`):** Part 1: plain data modules."),
            "{summary}"
        );
        assert!(summary.contains("I found nothing to comment on."), "{summary}");
        assert!(
            world.bot.github.reviews().is_empty(),
            "nothing to say inline: no review"
        );
        let runs = world.bot.github.check_runs();
        assert_eq!(runs.len(), 1);
        world.bot.model.assert_script_consumed();
        world.bot.github.assert_no_violations();
        world.bot
    });
}

#[test]
fn a_newer_push_supersedes_the_running_review_and_the_newest_head_is_reviewed() {
    use std::time::Duration;
    let Some(image) = pitcrew_tests::docker::test_image() else {
        return;
    };
    super::harness::run_test(|| async move {
        let script = Script::new()
            .turn(Reply::new().tool_call("read_file", json!({"path": "calc.sh"})))
            // Slower than anything the test waits for: only the newer push ends this review.
            .turn(Reply::text("Still reading, slowly.").chunk_delay(Duration::from_secs(3_600)))
            .turn(Reply::new().tool_call(
                "review_comment",
                json!({"path": "calc.sh", "line": 9, "severity": "nit", "category": "style",
                    "body": "`- 0` does nothing; drop it."}),
            ))
            .turn(Reply::text("Drops the default of `add`; touches `sub`.\nOne nit."));
        let mut world = World::start_with(image, script, AUTO_CONFIG).await;
        let first_head = world.head_sha.clone();
        world.pull_event("pr-opened", "opened", false, None).await;
        // The review runs once its summary comment shows the agent reading.
        let bot = world.bot.github.bot_login();
        world
            .bot
            .wait_for("the first review reading, in its summary comment", |state| {
                state.comments_on(REPO, PR).iter().any(|c| {
                    c.user == bot && c.body.contains(super::harness::LIVE) && c.body.contains("Now: reading the code")
                })
            })
            .await;

        let second_head = world.push(&[("calc.sh", &fixed_calc())], "calc: no default for add");
        world
            .pull_event("pr-sync", "synchronize", false, Some(&first_head))
            .await;
        let first = tokio::time::timeout(super::harness::LIMIT, world.bot.job_end())
            .await
            .expect("the superseded review never ended: the stop waited for the model");
        assert_eq!(first.state, JobState::Cancelled, "{first:?}");
        assert_eq!(
            first.error.as_deref(),
            Some(format!("superseded by a newer push ({})", &second_head[..7]).as_str())
        );
        let second = world.bot.job_end().await;
        assert_eq!(second.state, JobState::Succeeded, "{second:?}");

        // The first head's check run says why it stopped; the newest head got the review.
        let runs = world.bot.github.check_runs();
        assert_eq!(runs.len(), 2, "{runs:#?}");
        assert_eq!(runs[0].head_sha, first_head);
        assert_eq!(runs[0].conclusion.as_deref(), Some("cancelled"));
        assert_eq!(
            runs[0].output["title"].as_str(),
            Some(format!("Superseded by a newer push ({})", &second_head[..7]).as_str())
        );
        assert_eq!(
            (runs[1].head_sha.as_str(), runs[1].conclusion.as_deref()),
            (second_head.as_str(), Some("success"))
        );
        let reviews = world.bot.github.reviews();
        assert_eq!(reviews.len(), 1, "{reviews:#?}");
        assert_eq!(reviews[0].commit_id, second_head);
        let summary = world.summary();
        assert!(
            summary.contains(&format!("### pitcrew review of `{}`\n", &second_head[..7])),
            "{summary}"
        );
        assert!(
            !summary.contains("<details>"),
            "the superseded review left no section: {summary}"
        );
        world.bot.model.assert_script_consumed();
        world.bot.github.assert_no_violations();
        world.bot
    });
}
