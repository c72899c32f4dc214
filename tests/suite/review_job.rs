//! `@agent review` and `@agent explain` end to end through `pitcrew serve` with the real job
//! handlers: a signed comment delivery, the fake GitHub (validated against GitHub's REST
//! description), the real git server, the scripted model and the Docker sandbox with the busybox
//! test image. Both jobs are read-only: the tests check that nothing reaches the repository.

use std::path::Path;
use std::process::Command;

use pitcrew::jobs::JobState;
use pitcrew_tests::fake_github::{CheckRun, FakeGithub, Issue, Permission, Repo};
use pitcrew_tests::git_server::GitServer;
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
        let github = FakeGithub::start();
        let git_server = GitServer::start_with(github.token_check());
        git_server
            .create_repo(
                REPO,
                &[
                    ("calc.sh", &base_calc()),
                    ("README.md", "calc\n"),
                    (".github/pitcrew.toml", REPO_CONFIG),
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
                        "body": "Defaulting a missing argument to 0 hides the caller's mistake.",
                        "suggestion": "    echo $(($1 + $2))"
                    }),
                )
                .tool_call(
                    "review_comment",
                    json!({
                        "path": "calc.sh",
                        "line": 21,
                        "body": "Dividing by zero in `rem` aborts the shell; it predates this change but deserves a guard."
                    }),
                )
                .tool_call(
                    "review_comment",
                    json!({
                        "path": "calc.sh",
                        "line": 41,
                        "body": "The mask keeps only the low byte, so `shr 4096 2` prints 0."
                    }),
                )
                .tool_call(
                    "review_comment",
                    json!({"path": "lib/missing.sh", "line": 3, "body": "Not a file of this repository."}),
                )
                .usage(1_400, 120),
        )
        .turn(Reply::text("Two problems in the changed functions, and one older one nearby.").usage(1_600, 30))
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

        // One review, on the head commit, as a comment.
        let reviews = world.bot.github.reviews();
        assert_eq!(reviews.len(), 1, "{reviews:#?}");
        let review = &reviews[0];
        assert_eq!(review.state, "COMMENTED");
        assert_eq!(review.request["event"], "COMMENT");
        assert_eq!(review.commit_id, world.head_sha);
        assert_eq!(review.user, world.bot.github.bot_login());
        // Its inline comments: exactly the two findings on lines the diff shows, in the model's order.
        let comments: Vec<(String, Option<u64>, Option<String>, String)> = world.bot.github.state(|state| {
            review
                .comment_ids
                .iter()
                .map(|id| {
                    let c = &state.review_comments[id];
                    (c.path.clone(), c.line, c.side.clone(), c.body.clone())
                })
                .collect()
        });
        assert_eq!(comments.len(), 2, "{comments:#?}");
        assert_eq!(
            comments[0],
            (
                "calc.sh".to_owned(),
                Some(5),
                Some("RIGHT".to_owned()),
                "Defaulting a missing argument to 0 hides the caller's mistake.\n\n```suggestion\n    echo $(($1 + \
             $2))\n```"
                    .to_owned()
            )
        );
        assert_eq!(
            comments[1],
            (
                "calc.sh".to_owned(),
                Some(41),
                Some("RIGHT".to_owned()),
                "The mask keeps only the low byte, so `shr 4096 2` prints 0.".to_owned()
            )
        );
        // The finding on an unchanged line is in the body, with the summary.
        assert!(
            review.body.starts_with(
                "<!-- pitcrew:job=1 -->\n\nTwo problems in the changed functions, and one older one nearby."
            ),
            "{}",
            review.body
        );
        assert!(
            review.body.contains(
                "**Outside the diff (1)**: these are on lines this pull request does not change, so they cannot be \
             inline comments.\n\n- `calc.sh:21` — Dividing by zero in `rem` aborts the shell; it predates this \
             change but deserves a guard."
            ),
            "{}",
            review.body
        );
        assert!(!review.body.contains("missing.sh"), "{}", review.body);

        // The finding on a path that does not exist was refused, and the model was told why.
        let told = world.bot.model.requests().iter().any(|r| {
            r.raw_body
                .contains("`lib/missing.sh` does not exist in the pull request's code")
        });
        assert!(told, "the model never heard that lib/missing.sh does not exist");

        // The model saw the pull request's own diff (from the merge base), and only read-only tools.
        let prompt = world.first_prompt();
        assert!(prompt.contains("+    echo $((${1:-0} + ${2:-0}))"), "{prompt}");
        assert!(prompt.contains("+    echo $((($1 >> $2) & 255))"), "{prompt}");
        assert!(!prompt.contains("NOTES.md"), "{prompt}");
        let tools = world.tools_offered();
        assert!(tools.contains(&"review_comment".to_owned()), "{tools:?}");
        for writer in ["edit_file", "write_file", "bash"] {
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
                ("calc.sh".to_owned(), 5),
                ("calc.sh".to_owned(), 21),
                ("calc.sh".to_owned(), 41)
            ]
        );

        // One progress comment, final, linking to the review.
        let bot_comments = world.bot_comments();
        assert_eq!(bot_comments.len(), 1, "{bot_comments:#?}");
        let review_url = format!("#pullrequestreview-{})", review.id);
        assert!(
            bot_comments[0].contains("✅ [Review posted with 2 inline comments](")
                && bot_comments[0].contains(&review_url),
            "{}",
            bot_comments[0]
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
