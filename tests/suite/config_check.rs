//! The `pitcrew config` check run through `pitcrew serve`: a pull request that breaks
//! `.github/pitcrew.toml` gets a failing check run annotated at each offending line of the new
//! file, on its head, before it lands; one that fixes it gets a passing one; one that leaves the file
//! alone gets nothing. The fake GitHub (every request checked against GitHub's REST description)
//! lists the pull request's files and serves the file from the real git server's repository.

use pitcrew::jobs::JobState;
use pitcrew_tests::fake_github::{FakeGithub, Issue, Repo};
use pitcrew_tests::git_server::GitServer;
use pitcrew_tests::scenario::{PullEvent, pull_request_payload};
use pitcrew_tests::scripted_model::{Script, ScriptedModel};
use serde_json::json;

use super::harness::{Bot, run_test};

const REPO: &str = "acme/calc";

const GOOD: &str = "[agent]\ntest_command = \"true\"\n";
/// Two mistakes: a boolean written as a string, and a misspelt key.
const BROKEN: &str = "[agent]\ntest_command = \"true\"\n\n[review]\nauto = \"yes\"\n\n[triggers]\nlabl = \"fix-me\"\n";

/// The mistakes mended.
const FIXED: &str = "[agent]\ntest_command = \"true\"\n\n[review]\nauto = true\n";

/// `acme/calc` with [`GOOD`] on main, and pull requests: #1 breaks the file, #2 leaves it alone.
async fn world() -> (Bot, String, String) {
    let github = FakeGithub::start();
    let git = GitServer::start_with(github.token_check());
    git.create_repo(REPO, &[("calc.sh", "echo 1\n"), (".github/pitcrew.toml", GOOD)])
        .unwrap();
    let base = git.rev_parse(REPO, "refs/heads/main").unwrap();
    let breaking = git
        .create_pull_head(
            REPO,
            1,
            "main",
            &[(".github/pitcrew.toml", BROKEN)],
            "config: auto reviews",
        )
        .unwrap();
    let unrelated = git
        .create_pull_head(REPO, 2, "main", &[("calc.sh", "echo 2\n")], "calc: two")
        .unwrap();
    github.add_repo(
        Repo::new(REPO)
            .default_branch("main")
            .clone_url(&git.url(REPO))
            .git_dir(git.repo_path(REPO)),
    );
    github.add_issue(
        REPO,
        Issue::pull_request(1, "config: auto reviews", ("auto-reviews", &breaking), ("main", &base)).user("bob"),
    );
    github.add_issue(
        REPO,
        Issue::pull_request(2, "calc: two", ("two", &unrelated), ("main", &base)).user("bob"),
    );
    let bot = Bot::start(github, git, ScriptedModel::start(Script::new()), |o| o).await;
    (bot, breaking, unrelated)
}

async fn pull_event(bot: &Bot, delivery: &str, number: u64, head_sha: &str, action: &str) {
    let event = PullEvent {
        action,
        number,
        head_sha,
        head_ref: "feature",
        base_ref: "main",
        author: "bob",
        sender: "bob",
        draft: false,
        labels: &[],
        before: None,
    };
    let payload = pull_request_payload(REPO, &bot.git.url(REPO), &event, Some(bot.github.installation_id()));
    bot.deliver("pull_request", delivery, &payload).await;
}

#[test]
fn a_pull_request_that_breaks_the_config_gets_a_failing_check_annotated_at_each_line() {
    run_test(|| async move {
        let (mut bot, breaking, unrelated) = world().await;

        pull_event(&bot, "pr-1-opened", 1, &breaking, "opened").await;
        let job = bot.config_check_end().await;
        assert_eq!(job.state, JobState::Succeeded, "{job:?}");
        assert_eq!(job.result, Some(json!({"config": "invalid", "problems": 2})));
        let runs = bot.github.check_runs();
        assert_eq!(runs.len(), 1, "{runs:#?}");
        let run = &runs[0];
        assert_eq!(run.name, "pitcrew config");
        assert_eq!(run.head_sha, breaking);
        assert_eq!(run.status, "completed");
        assert_eq!(run.conclusion.as_deref(), Some("failure"));
        assert_eq!(run.output["title"], "2 problems in `.github/pitcrew.toml`");
        let at: Vec<(String, u64, String)> = run
            .annotations
            .iter()
            .map(|a| {
                (
                    a["path"].as_str().unwrap().to_owned(),
                    a["start_line"].as_u64().unwrap(),
                    a["annotation_level"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        assert_eq!(
            at,
            [
                (".github/pitcrew.toml".to_owned(), 5, "failure".to_owned()),
                (".github/pitcrew.toml".to_owned(), 8, "failure".to_owned()),
            ]
        );
        assert!(
            run.annotations[1]["message"].as_str().unwrap().contains("labl"),
            "{:?}",
            run.annotations
        );
        // Nothing on the conversation: nobody asked.
        assert!(bot.bot_comments_on(REPO, 1).is_empty());

        // The author fixes the file: the new head passes.
        let fixed = bot
            .git
            .create_pull_head(
                REPO,
                1,
                "main",
                &[(".github/pitcrew.toml", FIXED)],
                "config: auto reviews",
            )
            .unwrap();
        bot.github.update_issue(REPO, 1, |issue| {
            if let Some(pull) = issue.pull.as_mut() {
                pull.head.sha.clone_from(&fixed);
            }
        });
        pull_event(&bot, "pr-1-synchronize", 1, &fixed, "synchronize").await;
        let job = bot.config_check_end().await;
        assert_eq!(job.result, Some(json!({"config": "valid"})));
        let runs = bot.github.check_runs();
        let latest = runs.iter().find(|r| r.head_sha == fixed).unwrap();
        assert_eq!(latest.conclusion.as_deref(), Some("success"));
        assert!(latest.annotations.is_empty());

        // A pull request that leaves the file alone gets no check run.
        pull_event(&bot, "pr-2-opened", 2, &unrelated, "opened").await;
        let job = bot.config_check_end().await;
        assert_eq!(job.result, Some(json!({"config": "unchanged"})));
        bot.settled().await;
        assert_eq!(bot.github.check_runs().len(), 2);
        bot
    });
}
