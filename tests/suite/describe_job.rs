//! `@agent describe` and `[review] describe` end to end through `pitcrew serve` with the real job
//! handler: the fake GitHub (every request checked against GitHub's REST description), the real git
//! server, the scripted model and the Docker sandbox with the busybox test image. The tests hold the
//! pull request's description to the byte: the author's text as it was, pitcrew's section between
//! its markers.

use pitcrew::jobs::JobState;
use pitcrew::report::describe::{END, START};
use pitcrew_tests::fake_github::{FakeGithub, Issue, Permission, Repo};
use pitcrew_tests::git_server::GitServer;
use pitcrew_tests::scenario::{PullEvent, pull_request_payload};
use pitcrew_tests::scripted_model::{Reply, Script, ScriptedModel, Turn};
use serde_json::json;

use super::harness::{Bot, LIVE};

const REPO: &str = "acme/calc";
const PR: u64 = 7;

/// The author's description: CRLF line endings (GitHub's editor sends them), a mention, trailing
/// blanks, and an end marker quoted in a code block, which must not be taken for pitcrew's.
const AUTHOR_TEXT: &str = "Makes `add` default its arguments to 0.\r\n\r\nThe marker pitcrew writes \
                           ends like this:\r\n\r\n```md\r\n<!-- /pitcrew:describe -->\r\n```\r\n\r\nThanks, \
                           @alice!  ";

const FIRST: &str = "### Summary\n\nMakes `add` default missing arguments to 0.\n\n### Changes\n\n**calc**\n\n\
                     - `add` defaults both arguments (`calc.sh`).\n\n### Risks\n\nA caller that forgets an \
                     argument gets a number instead of an error.\n\n### How to test\n\nSource `calc.sh` and run \
                     `add 1`: it prints 1.";

const SECOND: &str = "### Summary\n\nMakes `add` default missing arguments to 0, as the author explains \
                      above.\n\n### Changes\n\n**calc**\n\n- `add` (`calc.sh`).\n\n### Risks\n\nNone found.\n\n\
                      ### How to test\n\n`add 1` prints 1.";

fn base_calc() -> &'static str {
    "#!/bin/sh\nadd() {\n    echo $(($1 + $2))\n}\n"
}

fn head_calc() -> &'static str {
    "#!/bin/sh\nadd() {\n    echo $((${1:-0} + ${2:-0}))\n}\n"
}

struct World {
    bot: Bot,
    head_sha: String,
}

impl World {
    /// The repository with `repo_config` as its `.github/pitcrew.toml`, and pull request #7 by bob
    /// with [`AUTHOR_TEXT`] as its description.
    async fn start(image: &str, script: Script, repo_config: &str) -> World {
        let github = FakeGithub::start();
        let git_server = GitServer::start_with(github.token_check());
        git_server
            .create_repo(REPO, &[("calc.sh", base_calc()), (".github/pitcrew.toml", repo_config)])
            .unwrap();
        let head_sha = git_server
            .create_pull_head(REPO, PR, "main", &[("calc.sh", head_calc())], "calc: defaults")
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
            Issue::pull_request(PR, "calc: defaults", ("calc-defaults", &head_sha), ("main", &base_sha))
                .user("bob")
                .body(AUTHOR_TEXT),
        );
        github.set_permission(REPO, "alice", Permission::Write);
        let model = ScriptedModel::start(script);
        let bot = Bot::start(github, git_server, model, |overrides| overrides.docker(image)).await;
        World { bot, head_sha }
    }

    /// The pull request's description as the fake GitHub holds it (looked at: its update is seen).
    fn body(&self) -> String {
        self.bot
            .github
            .state(|s| s.issue_seen(REPO, PR).and_then(|issue| issue.body.clone()))
            .unwrap_or_default()
    }

    /// What pitcrew writes under the model's text.
    fn footer(&self) -> String {
        format!(
            "<sub>Written by pitcrew for `{}` · `@agent describe` writes it again</sub>",
            &self.head_sha[..7]
        )
    }

    /// The marked section holding `text`, as pitcrew writes it.
    fn section(&self, text: &str) -> String {
        format!("{START}\n{text}\n\n{}\n{END}", self.footer())
    }

    /// The text of the first user message of the model's `n`th request (0-based).
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

    /// GitHub's `pull_request` delivery of `action` for the pull request at its head.
    async fn pull_event(&self, delivery: &str, action: &str, draft: bool) {
        let event = PullEvent {
            action,
            number: PR,
            head_sha: &self.head_sha,
            head_ref: "calc-defaults",
            base_ref: "main",
            author: "bob",
            sender: "bob",
            draft,
            labels: &[],
            before: None,
        };
        let payload = pull_request_payload(
            REPO,
            &self.bot.git.url(REPO),
            &event,
            Some(self.bot.github.installation_id()),
        );
        self.bot.deliver("pull_request", delivery, &payload).await;
    }
}

#[test]
fn describe_writes_its_section_after_the_authors_text_and_a_second_run_replaces_only_the_section() {
    let Some(image) = pitcrew_tests::docker::test_image() else {
        return;
    };
    super::harness::run_test(|| async move {
        let script = Script::new()
            .turn(
                Reply::text("Reading the change.")
                    .tool_call("read_file", json!({"path": "calc.sh"}))
                    .usage(900, 30),
            )
            .turn(Reply::text(FIRST).usage(1_200, 200))
            .turn(Reply::text(SECOND).usage(1_300, 150));
        let mut world = World::start(image, script, "[agent]\ntest_command = \"true\"\n").await;

        let asked = world
            .bot
            .comment((REPO, PR), "describe-1", ("alice", "COLLABORATOR"), "@agent describe")
            .await;
        // The job read the pull request before it posted its progress comment; it reads it again
        // only once the agent is done, after the sandbox started and the model answered twice. The
        // author edits the description in between: that edit must survive.
        world
            .bot
            .wait_for("the describe job's progress comment", |s| {
                s.comments_on(REPO, PR).iter().any(|c| c.body.contains(LIVE))
            })
            .await;
        let edited = format!("{AUTHOR_TEXT}\r\nEdited while pitcrew worked.");
        world
            .bot
            .github
            .update_issue(REPO, PR, |issue| issue.body = Some(edited.clone()));
        let job = world.bot.job_end().await;
        assert_eq!(job.state, JobState::Succeeded, "{job:?}");

        // The author's text byte for byte (CRLF, trailing blanks and the quoted marker included),
        // one blank line, and the section with the model's words and the footer.
        let body = world.body();
        assert_eq!(body, format!("{edited}\n\n{}", world.section(FIRST)));

        // The model saw the diff from the merge base and the author's text, and was asked for the
        // four parts.
        let prompt = world.prompt(0);
        assert!(
            prompt.starts_with("# Request\n\nWrite pitcrew's section of this pull request's description.\n"),
            "{prompt}"
        );
        assert!(prompt.contains("+    echo $((${1:-0} + ${2:-0}))"), "{prompt}");
        assert!(prompt.contains("> Makes `add` default its arguments to 0."), "{prompt}");
        for part in ["### Summary", "### Changes", "### Risks", "### How to test"] {
            assert!(prompt.contains(part), "{prompt}");
        }

        // Reported like `explain`: the final progress comment points at the description, and the
        // check run on the head says the same.
        let comments = world.bot.bot_comments_on(REPO, PR);
        assert_eq!(comments.len(), 1, "{comments:#?}");
        let report = &comments[0];
        assert!(
            report.contains("**pitcrew · describe** requested by @alice"),
            "{report}"
        );
        assert!(report.contains("**✅ [Description updated]("), "{report}");
        assert!(report.contains("/pull/7)**"), "{report}");
        assert!(!report.contains("### Summary"), "the section is not repeated: {report}");
        let runs = world.bot.github.check_runs();
        assert_eq!(runs.len(), 1, "{runs:#?}");
        assert_eq!(runs[0].head_sha, world.head_sha);
        assert_eq!(runs[0].conclusion.as_deref(), Some("success"));
        assert_eq!(runs[0].output["title"].as_str(), Some("Description updated"));
        assert!(world.bot.github.reviews().is_empty());
        assert_eq!(world.bot.reactions_on_comment(asked), ["eyes"]);

        // The author adds a line after the section; a second run replaces the section alone, and
        // the model is shown the author's text without pitcrew's earlier section.
        let with_after = format!("{body}\r\nP.S. Reviewed by Carol.\r\n");
        world
            .bot
            .github
            .update_issue(REPO, PR, |issue| issue.body = Some(with_after.clone()));
        let again = world
            .bot
            .comment((REPO, PR), "describe-2", ("alice", "COLLABORATOR"), "@agent describe")
            .await;
        let job = world.bot.job_end().await;
        assert_eq!(job.state, JobState::Succeeded, "{job:?}");
        assert_eq!(
            world.body(),
            format!("{edited}\n\n{}\r\nP.S. Reviewed by Carol.\r\n", world.section(SECOND))
        );
        let prompt = world.prompt(2);
        assert!(prompt.contains("> P.S. Reviewed by Carol."), "{prompt}");
        assert!(!prompt.contains(START), "{prompt}");
        assert!(!prompt.contains("Written by pitcrew"), "{prompt}");
        assert!(
            !prompt.contains("Makes `add` default missing arguments to 0.\n"),
            "{prompt}"
        );
        assert_eq!(world.bot.bot_comments_on(REPO, PR).len(), 2);
        assert_eq!(world.bot.github.check_runs().len(), 2);
        assert_eq!(world.bot.reactions_on_comment(again), ["eyes"]);

        // Each job read the pull request again just before it wrote the description.
        let updates = world.bot.github.requests_to("pulls/update");
        assert_eq!(updates.len(), 2, "{updates:#?}");
        let gets = world.bot.github.requests_to("pulls/get");
        let mut since = 0;
        for update in &updates {
            assert_eq!(update.status, 200);
            assert_eq!(
                update.body.as_object().map(|o| o.len()),
                Some(1),
                "only the body changes"
            );
            let reads = gets
                .iter()
                .filter(|g| (since..update.sequence).contains(&g.sequence))
                .count();
            assert_eq!(reads, 2, "one read as the job starts, one before it writes: {gets:#?}");
            since = update.sequence;
        }
        assert!(world.bot.git.pushes().is_empty());
        world.bot.model.assert_script_consumed();
        world.bot.github.assert_no_violations();
        world.bot
    });
}

#[test]
fn an_opened_pull_request_is_described_with_no_comment_or_check_run_and_a_failure_says_nothing() {
    let Some(image) = pitcrew_tests::docker::test_image() else {
        return;
    };
    super::harness::run_test(|| async move {
        // The first run's model refuses the key; the second one answers.
        let script = Script::new()
            .turn(Turn::unauthorized())
            .turn(Reply::text(FIRST).usage(1_000, 200));
        let config = "[agent]\ntest_command = \"true\"\n\n[review]\ndescribe = true\n";
        let mut world = World::start(image, script, config).await;
        // A draft: described all the same (automatic reviews are off here anyway).
        world.bot.github.update_issue(REPO, PR, |issue| {
            if let Some(pull) = issue.pull.as_mut() {
                pull.draft = true;
            }
        });

        world.pull_event("opened-1", "opened", true).await;
        let job = world.bot.job_end().await;
        assert_eq!(job.kind, "describe");
        assert_eq!(job.state, JobState::Failed, "{job:?}");
        assert_eq!(world.body(), AUTHOR_TEXT);

        world.pull_event("opened-2", "opened", true).await;
        let job = world.bot.job_end().await;
        assert_eq!(job.state, JobState::Succeeded, "{job:?}");
        assert_eq!(job.result.as_ref().unwrap()["headline"], "Description updated");
        assert_eq!(world.body(), format!("{AUTHOR_TEXT}\n\n{}", world.section(FIRST)));
        assert!(
            world
                .prompt(1)
                .contains("Nobody asked: the repository's settings start this job when a pull request changes, and this one was opened."),
            "{}",
            world.prompt(1)
        );

        // Nobody asked: nothing on the conversation, no check run, no reaction, no review.
        assert!(world.bot.github.comments_on(REPO, PR).is_empty());
        assert!(world.bot.github.check_runs().is_empty());
        assert!(world.bot.github.reviews().is_empty());
        assert_eq!(world.bot.github.requests_to("pulls/update").len(), 1);
        world.bot.model.assert_script_consumed();
        world.bot.github.assert_no_violations();
        world.bot
    });
}
