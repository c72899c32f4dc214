//! `@agent fix` end to end through `pitcrew serve` with the real job handlers: a signed comment
//! delivery (the real triagebot recording, pointed at a local repository), the fake GitHub for
//! every API call (validated against GitHub's REST description), installation tokens that the
//! real git server (`git http-backend`) accepts, the scripted model, and the Docker sandbox with
//! the busybox test image. The repository's test suite is a shell script that prints libtest's
//! format, run in the container before and after the agent.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use pitcrew::jobs::{Job, JobFilter, JobId, JobState};
use pitcrew_tests::docker_proxy::DockerProxy;
use pitcrew_tests::fake_github::openapi::fixtures_root;
use pitcrew_tests::fake_github::{FakeGithub, Issue};
use pitcrew_tests::git_server::GitServer;
use pitcrew_tests::scenario::{CALC, REPO_CONFIG, calc_pull_request_with_files, calc_repo};
use pitcrew_tests::scripted_model::{Reply, Script, ScriptedModel, Turn};
use serde_json::{Value, json};
use tempfile::TempDir;

use super::harness::{Bot, LIVE};

const REPO: &str = "acme/calc";
const PR: u64 = 7;
/// The pull request's head in the fork scenario.
const FORK: &str = "bob/calc";

fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git").args(args).current_dir(dir).output().unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

fn plan(statuses: [&str; 2]) -> Value {
    json!({"steps": [
        {"id": "1", "title": "Fix add", "status": statuses[0]},
        {"id": "2", "title": "Run the tests", "status": statuses[1]},
    ]})
}

fn fixing_script() -> Script {
    Script::new()
        .turn(
            Reply::text("Reading the code under test.")
                .tool_call("update_plan", plan(["in_progress", "pending"]))
                .tool_call("read_file", json!({"path": "calc.sh"}))
                .usage(1_000, 50),
        )
        .turn(
            Reply::new()
                .tool_call(
                    "edit_file",
                    json!({"path": "calc.sh", "old_string": "$(($1 - $2))", "new_string": "$(($1 + $2))"}),
                )
                .tool_call("update_plan", plan(["done", "in_progress"]))
                .usage(1_200, 40),
        )
        .turn(
            Reply::new()
                .tool_call("run_tests", json!({}))
                // A build artefact the bot must not commit: over the 1 MiB limit for new files.
                .tool_call("bash", json!({"command": "head -c 2000000 /dev/zero > dump.bin"}))
                .usage(1_400, 20),
        )
        .turn(
            Reply::new()
                .tool_call("update_plan", plan(["done", "done"]))
                .usage(1_500, 20),
        )
        .turn(Reply::text("`add` subtracted its arguments; it adds them now and both tests pass.").usage(1_600, 30))
}

/// What differs between scenarios: the repository's configuration file, its other files, where
/// the pull request's head lives and who picks the sandbox image.
struct Options {
    repo_config: String,
    /// Files on the default branch (and so in the pull request) besides the project's.
    files: Vec<(&'static str, String)>,
    /// The head is in the fork [`FORK`], which does not allow maintainer edits.
    fork: bool,
    /// The operator names the test's image (`[sandbox] image`); else the repository's choice (or
    /// the default) holds.
    operator_image: bool,
    /// The Docker engine's address (`[sandbox] docker_host`); default: the tests' engine.
    docker_host: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            repo_config: REPO_CONFIG.to_owned(),
            files: Vec::new(),
            fork: false,
            operator_image: true,
            docker_host: None,
        }
    }
}

struct World {
    bot: Bot,
    base_sha: String,
    head_sha: String,
}

impl World {
    async fn start(image: &str, script: Script) -> World {
        World::start_with(image, script, Options::default()).await
    }

    async fn start_with(image: &str, script: Script, options: Options) -> World {
        let github = FakeGithub::start();
        let git_server = GitServer::start_with(github.token_check());
        let (base_sha, head_sha) = if options.fork {
            let base_sha = calc_repo(&git_server, &github, REPO, &options.repo_config).unwrap();
            let base = git_server.repo_path(REPO);
            let fork = git_server.repo_path(FORK);
            git(&base, &["clone", "-q", "--bare", ".", fork.to_str().unwrap()]);
            let head_sha = git_server
                .commit(FORK, "docs", &[("README.md", "calc: shell arithmetic\n")], "docs")
                .unwrap();
            // What GitHub does for every pull request: the head, mirrored into the base repository.
            git(
                &fork,
                &[
                    "push",
                    "-q",
                    base.to_str().unwrap(),
                    &format!("refs/heads/docs:refs/pull/{PR}/head"),
                ],
            );
            let pull = Issue::pull_request(PR, "Document calc", ("docs", &head_sha), ("main", &base_sha))
                .user("bob")
                .from_fork(FORK, &git_server.url(FORK))
                .maintainer_can_modify(false);
            github.add_issue(REPO, pull);
            (base_sha, head_sha)
        } else {
            let files: Vec<(&str, &str)> = options
                .files
                .iter()
                .map(|(path, text)| (*path, text.as_str()))
                .collect();
            let pull =
                calc_pull_request_with_files(&git_server, &github, REPO, PR, &options.repo_config, &files).unwrap();
            (pull.base_sha, pull.head_sha)
        };

        let model = ScriptedModel::start(script);
        let bot = Bot::start(github, git_server, model, |overrides| {
            let overrides = if options.operator_image {
                overrides.docker(image)
            } else {
                overrides.docker_in_the_repositorys_image()
            };
            match &options.docker_host {
                Some(host) => overrides.set("sandbox.docker_host", host.as_str()),
                None => overrides,
            }
        })
        .await;
        World {
            bot,
            base_sha,
            head_sha,
        }
    }

    /// `login` comments `body` on the pull request; the signed delivery is posted to the server.
    async fn comment(&self, delivery: &str, login: &str, body: &str) -> u64 {
        self.bot
            .comment((REPO, PR), delivery, (login, "COLLABORATOR"), body)
            .await
    }

    /// `login` assigns issue `number` to the bot (GitHub's recorded `issues.assigned` payload).
    async fn assign_to_bot(&self, delivery: &str, login: &str, number: u64, title: &str, body: &str) {
        let path = fixtures_root().join("webhooks/issues/assigned.with-installation.payload.json");
        let mut payload: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        self.point_at_repo(&mut payload);
        payload["issue"]["number"] = json!(number);
        payload["issue"]["title"] = json!(title);
        payload["issue"]["body"] = json!(body);
        payload["assignee"]["login"] = json!(self.bot.github.bot_login());
        payload["sender"]["login"] = json!(login);
        payload["sender"]["id"] = json!(4242);
        self.deliver("issues", delivery, &payload).await;
    }

    fn point_at_repo(&self, payload: &mut Value) {
        payload["repository"]["full_name"] = json!(REPO);
        payload["repository"]["name"] = json!("calc");
        payload["repository"]["owner"]["login"] = json!("acme");
        payload["repository"]["clone_url"] = json!(self.bot.git.url(REPO));
        payload["repository"]["default_branch"] = json!("main");
        payload["installation"] = json!({ "id": self.bot.github.installation_id() });
    }

    async fn deliver(&self, event: &str, delivery: &str, payload: &Value) {
        self.bot.deliver(event, delivery, payload).await;
    }

    /// Waits for the next job to end; returns it as the store has it.
    async fn job_end(&mut self) -> Job {
        self.bot.job_end().await
    }

    /// Waits until the job has reported its end (check run completed, progress comment final);
    /// returns the check run.
    async fn finished(&self, number: u64) -> pitcrew_tests::fake_github::CheckRun {
        self.bot.reported_end(REPO, number).await
    }

    fn containers_of(&self, job: JobId) -> String {
        self.bot.containers_of(job)
    }

    fn bot_comments(&self) -> Vec<String> {
        self.bot_comments_on(PR)
    }

    fn bot_comments_on(&self, number: u64) -> Vec<String> {
        self.bot.bot_comments_on(REPO, number)
    }

    /// The bot acknowledged comment `id` with 👀, and with nothing else.
    fn assert_eyes(&self, id: u64) {
        assert_eq!(
            self.bot.reactions_on_comment(id),
            ["eyes"],
            "the reactions on comment {id}"
        );
    }

    /// The bot acknowledged issue `number` itself with 👀, and with nothing else.
    fn assert_eyes_on_issue(&self, number: u64) {
        let reactions: Vec<String> = self.bot.github.state(|s| {
            s.reactions_on_issue(REPO, number)
                .iter()
                .map(|r| r.content.clone())
                .collect()
        });
        assert_eq!(reactions, ["eyes"], "the reactions on #{number}");
    }

    /// The bot's progress comment on `number` (the one it edits as it goes).
    fn progress_comment(&self, number: u64) -> String {
        let bot = self.bot.github.bot_login();
        self.bot
            .github
            .comments_on(REPO, number)
            .into_iter()
            .find(|c| c.user == bot && c.edits.first().is_some_and(|first| first.contains(LIVE)))
            .map(|c| c.body)
            .unwrap_or_else(|| panic!("no progress comment: {:#?}", self.bot_comments_on(number)))
    }
}

fn summary_of(run: &pitcrew_tests::fake_github::CheckRun) -> String {
    run.output["summary"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn a_fix_comment_on_a_pull_request_ends_in_a_tested_commit_on_its_branch() {
    let Some(image) = pitcrew_tests::docker::test_image() else {
        return;
    };
    super::harness::run_test(|| async move {
        let mut world = World::start(image, fixing_script()).await;
        let asked = world
            .comment("delivery-fix-1", "alice", "@agent fix the failing add test")
            .await;

        let run = world.finished(PR).await;
        assert_eq!(run.head_sha, world.head_sha);
        assert_eq!(run.status_history().first().map(String::as_str), Some("in_progress"));
        assert_eq!(run.status_history().last().map(String::as_str), Some("completed"));
        assert_eq!(run.conclusion.as_deref(), Some("success"), "{run:#?}");
        let summary = run.output["summary"].as_str().unwrap_or_default().to_owned();
        // The test delta, measured in the container before and after the agent.
        assert!(summary.contains("| Before | 1 | 1 | 0 |"), "{summary}");
        assert!(summary.contains("| After | 2 | 0 | 0 |"), "{summary}");
        assert!(summary.contains("**Fixed (1):** `adds_two_numbers`"), "{summary}");

        // The eyes reaction, then one progress comment edited in place to the result.
        let bot = world.bot.github.bot_login();
        world.assert_eyes(asked);
        let comments = world.bot_comments();
        assert_eq!(comments.len(), 1, "{comments:#?}");
        assert!(comments[0].contains("Pushed"), "{}", comments[0]);
        assert!(
            comments[0].contains("New files larger than 1MiB were left out of the commit: `dump.bin`"),
            "{}",
            comments[0]
        );

        // The commit on the pull request's branch: the fix, by the bot, with the requester as co-author.
        let pushed = world.bot.git.rev_parse(REPO, "refs/heads/docs").unwrap();
        assert_ne!(pushed, world.head_sha);
        let bare = world.bot.git.repo_path(REPO);
        assert_eq!(git(&bare, &["rev-parse", &format!("{pushed}^")]), world.head_sha);
        assert_eq!(
            git(&bare, &["show", &format!("{pushed}:calc.sh")]),
            CALC.replace(" - ", " + ").trim()
        );
        assert_eq!(
            git(&bare, &["log", "-1", "--format=%an <%ae>", &pushed]),
            format!("{bot} <{bot}@users.noreply.github.com>")
        );
        let message = git(&bare, &["log", "-1", "--format=%B", &pushed]);
        assert!(message.starts_with("pitcrew: fix the failing add test"), "{message}");
        assert!(
            message.contains("Co-authored-by: alice <4242+alice@users.noreply.github.com>"),
            "{message}"
        );
        assert_eq!(
            git(&bare, &["diff", "--name-only", &world.head_sha, &pushed]),
            "calc.sh"
        );
        assert_ne!(world.base_sha, pushed);

        // The job ended succeeded in the store (read once it has ended: its report goes out first),
        // and the model was used as scripted.
        let job = world.job_end().await;
        assert_eq!(job.state, JobState::Succeeded, "{:?}", job.error);
        let jobs = world.bot.server().store().jobs(&JobFilter::default()).await.unwrap();
        assert_eq!(jobs.len(), 1);
        world.bot.model.assert_script_consumed();
        // The job's agent had the code index's tools.
        let offered: Vec<String> = world.bot.model.requests()[0].body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
            .collect();
        for tool in ["find_symbol", "find_references", "outline"] {
            assert!(offered.iter().any(|t| t == tool), "{tool} not in {offered:?}");
        }
        world.bot.github.assert_no_violations();
        world.bot
    });
}

/// The security issue's crash: a job pushed its fix and its process died before it reported; the
/// retry started again from the pull request's head as GitHub still had it. Before, it rebased onto
/// its own pushed commit and pushed a second, empty one. Here the first attempt's push is on the
/// branch already (the same fix, with the job's `Pitcrew-Job` trailer) while the pull request still
/// names the old head.
#[test]
fn a_job_retried_after_its_push_finds_its_own_commit_and_pushes_nothing_new() {
    let Some(image) = pitcrew_tests::docker::test_image() else {
        return;
    };
    super::harness::run_test(|| async move {
        let mut world = World::start(image, fixing_script()).await;
        let instance = std::fs::read_to_string(world.bot.data.path().join("instance")).unwrap();
        // A fresh store numbers its first job 1 (checked below).
        let job_marker = format!("{}-1", instance.trim());
        let fixed = CALC.replace("$(($1 - $2))", "$(($1 + $2))");
        let earlier = world
            .bot
            .git
            .commit(
                REPO,
                "docs",
                &[("calc.sh", &fixed)],
                &format!("pitcrew: fix the failing add test\n\nPitcrew-Job: {job_marker}"),
            )
            .unwrap();

        let asked = world
            .comment("delivery-retry-1", "alice", "@agent fix the failing add test")
            .await;
        let job = world.job_end().await;
        assert_eq!(job.id.to_string(), "1");
        let run = world.finished(PR).await;

        // The branch is where the first attempt left it: no new commit, empty or not.
        assert_eq!(world.bot.git.rev_parse(REPO, "refs/heads/docs").unwrap(), earlier);
        assert_eq!(run.conclusion.as_deref(), Some("success"), "{run:#?}");
        let comment = world.progress_comment(PR);
        assert!(comment.contains("Pushed"), "{comment}");
        assert!(
            comment.contains(&format!(
                "An earlier attempt of this job already pushed {earlier} to `docs` before it was interrupted"
            )),
            "{comment}"
        );
        assert_eq!(job.state, JobState::Succeeded, "{job:?}");
        world.bot.model.assert_script_consumed();
        world.assert_eyes(asked);
        world.bot
    });
}

/// The security issue's nested repository in a job: the agent's command makes a directory with its
/// own `.git` (a test fixture). Before, the commit failed with `invalid path 'fixture/'` and the job
/// ended as an internal error with no usage, pushing nothing. Now the fix is pushed without it, the
/// report says so, and the tokens are counted.
#[test]
fn a_nested_repository_made_by_the_agent_is_left_out_and_the_fix_is_pushed() {
    let Some(image) = pitcrew_tests::docker::test_image() else {
        return;
    };
    super::harness::run_test(|| async move {
        let script = Script::new()
        .turn(Reply::new().tool_call("read_file", json!({"path": "calc.sh"})).usage(1_000, 50))
        .turn(
            Reply::new()
                .tool_call(
                    "edit_file",
                    json!({"path": "calc.sh", "old_string": "$(($1 - $2))", "new_string": "$(($1 + $2))"}),
                )
                // The test image has no git: the layout `git init` makes, by hand.
                .tool_call(
                    "bash",
                    json!({"command": "mkdir -p fixture/.git/objects fixture/.git/refs/heads && echo 'ref: refs/heads/main' > fixture/.git/HEAD && echo data > fixture/data.txt"}),
                )
                .usage(1_200, 40),
        )
        .turn(Reply::text("`add` adds now.").usage(1_300, 30));
        let mut world = World::start(image, script).await;
        let asked = world
            .comment("delivery-nested-1", "alice", "@agent fix the failing add test")
            .await;
        let job = world.job_end().await;
        let run = world.finished(PR).await;

        assert_eq!(run.conclusion.as_deref(), Some("success"), "{run:#?}");
        let pushed = world.bot.git.rev_parse(REPO, "refs/heads/docs").unwrap();
        assert_ne!(pushed, world.head_sha);
        let bare = world.bot.git.repo_path(REPO);
        assert_eq!(
            git(&bare, &["diff", "--name-only", &world.head_sha, &pushed]),
            "calc.sh"
        );
        let comment = world.progress_comment(PR);
        assert!(
            comment
                .contains("git repositories of their own were left out of the commit, as git leaves them: `fixture/`"),
            "{comment}"
        );
        // What the agent spent is reported, and the changed files are what was committed.
        let summary = summary_of(&run);
        assert!(summary.contains("3,500 tokens in · 120 out"), "{summary}");
        assert!(
            summary.contains("| `calc.sh` | 1 | 1 |") && !summary.contains("fixture"),
            "{summary}"
        );
        assert_eq!(job.state, JobState::Succeeded, "{job:?}");
        world.bot.model.assert_script_consumed();
        world.assert_eyes(asked);
        world.bot
    });
}

/// Turns that "fix" `adds_two_numbers` by breaking `adds_zero`, and say so.
fn regressing_script() -> Script {
    Script::new()
        .turn(
            Reply::new()
                .tool_call("read_file", json!({"path": "calc.sh"}))
                .usage(1_000, 50),
        )
        .turn(
            Reply::new()
                .tool_call(
                    "edit_file",
                    json!({"path": "calc.sh", "old_string": "$(($1 - $2))", "new_string": "5"}),
                )
                .usage(1_200, 40),
        )
        .turn(
            Reply::text("`add` returns 5 now. Left to do: `adds_zero` fails, `add` must really add.").usage(1_300, 30),
        )
}

#[test]
fn a_change_that_breaks_a_passing_test_is_kept_on_a_partial_branch_and_not_pushed() {
    let Some(image) = pitcrew_tests::docker::test_image() else {
        return;
    };
    super::harness::run_test(|| async move {
        let mut world = World::start(image, regressing_script()).await;
        let asked = world
            .comment("delivery-regress-1", "alice", "@agent fix the failing add test")
            .await;
        let job = world.job_end().await;
        let run = world.finished(PR).await;

        // Nothing reached the pull request's branch.
        assert_eq!(
            world.bot.git.rev_parse(REPO, "refs/heads/docs").as_deref(),
            Some(world.head_sha.as_str())
        );
        // The work is on the partial branch, on top of the head the job started from.
        let partial = format!("pitcrew/partial-{}", job.id);
        let saved = world
            .bot
            .git
            .rev_parse(REPO, &format!("refs/heads/{partial}"))
            .unwrap_or_else(|| panic!("no {partial} in the repository"));
        let bare = world.bot.git.repo_path(REPO);
        assert_eq!(git(&bare, &["rev-parse", &format!("{saved}^")]), world.head_sha);
        assert_eq!(
            git(&bare, &["show", &format!("{saved}:calc.sh")]),
            "add() {\n    echo 5\n}"
        );

        assert_eq!(run.conclusion.as_deref(), Some("failure"), "{run:#?}");
        let summary = summary_of(&run);
        assert!(summary.contains("| Before | 1 | 1 | 0 |"), "{summary}");
        assert!(summary.contains("| After | 1 | 1 | 0 |"), "{summary}");
        assert!(summary.contains("**Newly failing (1):** `adds_zero`"), "{summary}");
        assert!(summary.contains("**Fixed (1):** `adds_two_numbers`"), "{summary}");

        let comment = world.progress_comment(PR);
        assert!(comment.contains("Not pushed"), "{comment}");
        assert!(comment.contains(&partial), "{comment}");
        // The model's own account of what is left.
        assert!(comment.contains("`add` must really add"), "{comment}");

        assert_eq!(job.state, JobState::Failed, "{job:?}");
        world.bot.model.assert_script_consumed();
        world.assert_eyes(asked);
        world.bot
    });
}

#[test]
fn a_fork_without_maintainer_edits_gets_a_patch_that_applies() {
    let Some(image) = pitcrew_tests::docker::test_image() else {
        return;
    };
    super::harness::run_test(|| async move {
        let options = Options {
            fork: true,
            ..Options::default()
        };
        let mut world = World::start_with(image, fixing_script(), options).await;
        let asked = world
            .comment("delivery-fork-1", "alice", "@agent fix the failing add test")
            .await;
        let job = world.job_end().await;
        let run = world.finished(PR).await;

        // The fork's branch is untouched: the bot may not push there.
        assert_eq!(
            world.bot.git.rev_parse(FORK, "refs/heads/docs").as_deref(),
            Some(world.head_sha.as_str())
        );
        assert_eq!(run.conclusion.as_deref(), Some("action_required"), "{run:#?}");
        assert_eq!(job.state, JobState::Succeeded, "{job:?}");

        // The patch in the comment applies to the fork's head and makes the fix.
        let comment = world.progress_comment(PR);
        let patch = fenced_block(&comment, "diff").unwrap_or_else(|| panic!("no patch in {comment}"));
        let checkout = TempDir::new().unwrap();
        let work = checkout.path().join("calc");
        git(
            checkout.path(),
            &[
                "clone",
                "-q",
                world.bot.git.repo_path(FORK).to_str().unwrap(),
                work.to_str().unwrap(),
            ],
        );
        git(&work, &["checkout", "-q", "docs"]);
        std::fs::write(work.join("pitcrew.patch"), format!("{patch}\n")).unwrap();
        git(&work, &["apply", "--check", "pitcrew.patch"]);
        git(&work, &["apply", "pitcrew.patch"]);
        std::fs::remove_file(work.join("pitcrew.patch")).unwrap();
        assert_eq!(
            std::fs::read_to_string(work.join("calc.sh")).unwrap(),
            CALC.replace(" - ", " + ")
        );
        assert_eq!(git(&work, &["status", "--porcelain"]), "M calc.sh");
        // What the fix made is kept on a side branch of the base repository, as unfinished work is.
        let pushes = world.bot.git.pushes();
        let pushed: Vec<(&str, &str)> = pushes
            .iter()
            .flat_map(|push| push.updates.iter().map(|u| (push.repo.as_str(), u.name.as_str())))
            .collect();
        assert_eq!(pushed, [(REPO, "refs/heads/pitcrew/partial-1")], "{pushes:#?}");
        assert_eq!(
            world.bot.git.show(REPO, "pitcrew/partial-1", "calc.sh").as_deref(),
            Some(CALC.replace(" - ", " + ").as_str())
        );
        world.bot.model.assert_script_consumed();
        world.assert_eyes(asked);
        world.bot
    });
}

/// The body of the first ```` ```lang ```` block of `text` (longer fences too).
fn fenced_block(text: &str, lang: &str) -> Option<String> {
    let mut lines = text.lines();
    let fence = loop {
        let line = lines.next()?;
        let trimmed = line.trim_start();
        let ticks = trimmed.chars().take_while(|c| *c == '`').count();
        if ticks >= 3 && trimmed[ticks..].trim() == lang {
            break "`".repeat(ticks);
        }
    };
    let body: Vec<&str> = lines.take_while(|line| line.trim() != fence).collect();
    Some(body.join("\n"))
}

#[test]
fn an_issue_assigned_to_the_bot_ends_in_a_branch_and_a_pull_request_that_closes_it() {
    let Some(image) = pitcrew_tests::docker::test_image() else {
        return;
    };
    super::harness::run_test(|| async move {
        const ISSUE: u64 = 8;
        let mut world = World::start(image, fixing_script()).await;
        world.bot.github.add_issue(
            REPO,
            Issue::new(ISSUE, "add subtracts")
                .body("`add 2 3` prints -1.")
                .user("carol"),
        );
        world
            .assign_to_bot(
                "delivery-assign-1",
                "alice",
                ISSUE,
                "add subtracts",
                "`add 2 3` prints -1.",
            )
            .await;
        let job = world.job_end().await;
        let run = world.finished(ISSUE).await;
        assert_eq!(job.state, JobState::Succeeded, "{job:?}");
        assert_eq!(run.conclusion.as_deref(), Some("success"), "{run:#?}");
        assert_eq!(run.head_sha, world.base_sha);

        // The branch, off the default branch, holding the fix.
        let branch = format!("pitcrew/issue-{ISSUE}-add-subtracts");
        let pushed = world
            .bot
            .git
            .rev_parse(REPO, &format!("refs/heads/{branch}"))
            .unwrap_or_else(|| panic!("no {branch}"));
        let bare = world.bot.git.repo_path(REPO);
        assert_eq!(git(&bare, &["rev-parse", &format!("{pushed}^")]), world.base_sha);
        assert_eq!(
            git(&bare, &["show", &format!("{pushed}:calc.sh")]),
            CALC.replace(" - ", " + ").trim()
        );
        assert_eq!(
            world.bot.git.rev_parse(REPO, "refs/heads/main").as_deref(),
            Some(world.base_sha.as_str())
        );

        // The pull request, opened through the API, closes the issue.
        let created = world.bot.github.requests_to("pulls/create");
        assert_eq!(created.len(), 1, "{created:#?}");
        let request = &created[0].body;
        assert_eq!(request["head"], json!(branch));
        assert_eq!(request["base"], json!("main"));
        let body = request["body"].as_str().unwrap_or_default();
        assert!(body.contains(&format!("Closes #{ISSUE}")), "{body}");
        let number = created[0].response["number"].as_u64().unwrap();
        let comment = world.progress_comment(ISSUE);
        assert!(comment.contains(&format!("#{number}")), "{comment}");
        world.assert_eyes_on_issue(ISSUE);
        world.bot.model.assert_script_consumed();
        world.bot
    });
}

#[test]
fn an_issue_labelled_with_the_repositorys_trigger_label_ends_in_a_pull_request() {
    let Some(image) = pitcrew_tests::docker::test_image() else {
        return;
    };
    super::harness::run_test(|| async move {
        const ISSUE: u64 = 9;
        let options = Options {
            repo_config: format!("{REPO_CONFIG}\n[triggers]\nlabel = \"pitcrew\"\n"),
            ..Options::default()
        };
        let mut world = World::start_with(image, fixing_script(), options).await;
        world.bot.github.add_issue(
            REPO,
            Issue::new(ISSUE, "add is wrong").body("It subtracts.").user("carol"),
        );
        // The real `issues.labeled` example, pointed at the repository; a label that is not the trigger
        // first, then the trigger label.
        let path = fixtures_root().join("webhooks/issues/labeled.payload.json");
        let mut payload: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        world.point_at_repo(&mut payload);
        payload["issue"]["number"] = json!(ISSUE);
        payload["issue"]["title"] = json!("add is wrong");
        payload["issue"]["body"] = json!("It subtracts.");
        payload["sender"]["login"] = json!("alice");
        payload["installation"] = json!({ "id": world.bot.github.installation_id() });
        payload["label"]["name"] = json!("bug");
        world.deliver("issues", "delivery-label-bug", &payload).await;
        payload["label"]["name"] = json!("pitcrew");
        world.deliver("issues", "delivery-label-pitcrew", &payload).await;

        let job = world.job_end().await;
        assert_eq!(job.state, JobState::Succeeded, "{job:?}");
        assert_eq!(
            job.delivery.as_ref().map(|d| d.0.as_str()),
            Some("delivery-label-pitcrew")
        );
        let branch = format!("pitcrew/issue-{ISSUE}-add-is-wrong");
        assert!(
            world.bot.git.rev_parse(REPO, &format!("refs/heads/{branch}")).is_some(),
            "no {branch}"
        );
        let created = world.bot.github.requests_to("pulls/create");
        assert_eq!(created.len(), 1, "{created:#?}");
        let body = created[0].body["body"].as_str().unwrap_or_default();
        assert!(body.contains(&format!("Closes #{ISSUE}")), "{body}");
        let number = created[0].response["number"].as_u64().unwrap();
        let run = world.finished(ISSUE).await;
        assert_eq!(run.conclusion.as_deref(), Some("success"), "{run:#?}");
        let comment = world.progress_comment(ISSUE);
        assert!(
            comment.contains(&format!("Opened pull request [#{number}]")),
            "{comment}"
        );
        world.assert_eyes_on_issue(ISSUE);
        let jobs = world.bot.server().store().jobs(&JobFilter::default()).await.unwrap();
        assert_eq!(jobs.len(), 1, "only the trigger label asked for a job");
        world.bot
    });
}

#[test]
fn an_invalid_repository_configuration_is_reported_and_nothing_runs() {
    let Some(image) = pitcrew_tests::docker::test_image() else {
        return;
    };
    super::harness::run_test(|| async move {
        let options = Options {
            repo_config: "[agent]\ntest_command = \"sh run-tests.sh\"\nmax_stpes = 3\n".to_owned(),
            ..Options::default()
        };
        let mut world = World::start_with(image, Script::new(), options).await;
        let asked = world
            .comment("delivery-config-1", "alice", "@agent fix the failing add test")
            .await;
        let job = world.job_end().await;

        assert_eq!(job.state, JobState::Failed, "{job:?}");
        let error = job.error.unwrap_or_default();
        assert!(
            error.contains(".github/pitcrew.toml") && error.contains("invalid"),
            "{error}"
        );
        let comments = world.bot_comments();
        assert_eq!(comments.len(), 1, "{comments:#?}");
        let comment = &comments[0];
        assert!(comment.contains(".github/pitcrew.toml"), "{comment}");
        assert!(comment.contains("line 3") || comment.contains(":3"), "{comment}");
        assert!(comment.contains("max_stpes"), "{comment}");
        assert!(
            world.bot.github.check_runs().is_empty(),
            "{:#?}",
            world.bot.github.check_runs()
        );
        assert!(world.bot.model.requests().is_empty(), "the model was asked");
        assert!(world.bot.git.requests().is_empty(), "the repository was fetched");
        world.assert_eyes(asked);
        world.bot
    });
}

#[test]
fn stop_while_the_agent_works_cancels_the_job_and_removes_its_container() {
    let Some(image) = pitcrew_tests::docker::test_image() else {
        return;
    };
    super::harness::run_test(|| async move {
        let script = Script::new()
            .turn(
                Reply::new()
                    .tool_call("update_plan", plan(["in_progress", "pending"]))
                    .usage(1_000, 50),
            )
            // A model slower than the harness waits for anything: a stop that waited for it
            // would never see the job end.
            .turn(
                Reply::text("Still thinking about it, word by word, slowly.")
                    .usage(1_100, 20)
                    .chunk_delay(Duration::from_secs(3_600)),
            );
        let mut world = World::start(image, script).await;
        let asked = world
            .comment("delivery-stop-1", "alice", "@agent fix the failing add test")
            .await;
        // The agent runs once its plan shows in the progress comment.
        let bot = world.bot.github.bot_login();
        let planned = world
            .bot
            .github
            .wait_until(super::harness::LIMIT, |state| {
                state
                    .comments_on(REPO, PR)
                    .iter()
                    .any(|c| c.user == bot && c.body.contains(LIVE) && c.body.contains("Fix add"))
            })
            .await;
        assert!(planned, "the plan never showed: {:#?}", world.bot_comments());
        let stop = world.comment("delivery-stop-2", "alice", "@agent stop").await;
        let job = tokio::time::timeout(super::harness::LIMIT, world.job_end())
            .await
            .expect("the job never ended: the stop waited for the model");
        let run = world.finished(PR).await;

        assert_eq!(job.state, JobState::Cancelled, "{job:?}");
        assert_eq!(run.conclusion.as_deref(), Some("cancelled"), "{run:#?}");
        let comment = world.progress_comment(PR);
        assert!(comment.contains("Stopped, as @alice asked."), "{comment}");
        assert_eq!(
            world.bot.git.rev_parse(REPO, "refs/heads/docs").as_deref(),
            Some(world.head_sha.as_str())
        );
        let containers = world.containers_of(job.id);
        assert!(containers.is_empty(), "containers left: {containers}");
        world.assert_eyes(asked);
        world.assert_eyes(stop);
        world.bot
    });
}

/// The job with a model that answers `turn` to its first request: it must fail visibly, in words
/// that name the provider's problem (`expected`), with nothing pushed.
async fn model_failure(image: &str, turn: Turn, expected: &str) -> Bot {
    let mut world = World::start(image, Script::new().turn(turn)).await;
    let asked = world
        .comment("delivery-model-1", "alice", "@agent fix the failing add test")
        .await;
    let job = world.job_end().await;
    let run = world.finished(PR).await;

    assert_eq!(job.state, JobState::Failed, "{job:?}");
    assert_eq!(run.conclusion.as_deref(), Some("failure"), "{run:#?}");
    let comment = world.progress_comment(PR);
    assert!(
        comment.contains("Failed: the model provider returned an error"),
        "{comment}"
    );
    assert!(comment.contains(expected), "{comment}");
    assert!(summary_of(&run).contains(expected), "{run:#?}");
    assert_eq!(
        world.bot.git.rev_parse(REPO, "refs/heads/docs").as_deref(),
        Some(world.head_sha.as_str())
    );
    assert_eq!(world.bot_comments().len(), 1, "{:#?}", world.bot_comments());
    world.bot.model.assert_script_consumed();
    world.assert_eyes(asked);
    world.bot
}

#[test]
fn a_model_provider_that_refuses_the_key_is_reported_in_plain_words() {
    let Some(image) = pitcrew_tests::docker::test_image() else {
        return;
    };
    super::harness::run_test(|| model_failure(image, Turn::unauthorized(), "rejected the credentials (401)"));
}

#[test]
fn a_model_provider_failing_beyond_its_retries_is_reported_in_plain_words() {
    let Some(image) = pitcrew_tests::docker::test_image() else {
        return;
    };
    // `model.max_retries=0`: the first server error is already one too many.
    super::harness::run_test(|| model_failure(image, Turn::server_error(500), "(500)"));
}

#[test]
fn a_sandbox_that_cannot_start_is_reported_on_the_check_run_and_the_comment() {
    let Some(image) = pitcrew_tests::docker::test_image() else {
        return;
    };
    super::harness::run_test(|| async move {
        let options = Options {
            repo_config: format!("{REPO_CONFIG}[sandbox]\nsetup = \"echo no toolchain here >&2; exit 3\"\n"),
            ..Options::default()
        };
        let mut world = World::start_with(image, Script::new(), options).await;
        let asked = world
            .comment("delivery-sandbox-1", "alice", "@agent fix the failing add test")
            .await;
        let job = world.job_end().await;
        let run = world.finished(PR).await;

        assert_eq!(job.state, JobState::Failed, "{job:?}");
        assert_eq!(run.conclusion.as_deref(), Some("failure"), "{run:#?}");
        let summary = summary_of(&run);
        assert!(summary.contains("setup script failed"), "{summary}");
        // One comment, the progress comment, now saying what failed.
        let comments = world.bot_comments();
        assert_eq!(comments.len(), 1, "{comments:#?}");
        assert!(comments[0].contains("setup script failed"), "{}", comments[0]);
        assert!(comments[0].contains("no toolchain here"), "{}", comments[0]);
        assert!(world.bot.model.requests().is_empty(), "the model was asked");
        let containers = world.containers_of(job.id);
        assert!(containers.is_empty(), "containers left: {containers}");
        world.assert_eyes(asked);
        world.bot
    });
}

/// Regression test for the dev-container image the documentation promises: the server's (and the
/// Action's) jobs ran in the operator's default image even when the repository's
/// `.devcontainer/devcontainer.json` named one. With no image set by the operator and none in
/// `.github/pitcrew.toml`, the job's commands run in the dev container's image.
#[test]
fn without_an_image_from_the_operator_or_the_repository_the_job_runs_in_the_dev_containers() {
    let Some(image) = pitcrew_tests::docker::dev_container_image() else {
        return;
    };
    super::harness::run_test(|| async move {
        use pitcrew_tests::docker::{DEV_CONTAINER_MARKER, DEV_CONTAINER_MARKER_TEXT};
        let options = Options {
            files: vec![(
                ".devcontainer/devcontainer.json",
                format!("{{\n  // the project's development image\n  \"image\": \"{image}\",\n}}\n"),
            )],
            operator_image: false,
            ..Options::default()
        };
        let script = Script::new()
            .turn(Reply::new().tool_call("bash", json!({ "command": format!("cat {DEV_CONTAINER_MARKER}") })))
            .turn(Reply::text("Looked at the image."));
        let mut world = World::start_with(image, script, options).await;
        let asked = world
            .comment("delivery-dev-container-1", "alice", "@agent fix the failing add test")
            .await;
        let job = world.job_end().await;
        world.finished(PR).await;

        world.bot.model.assert_script_consumed();
        let requests = world.bot.model.requests();
        let bash = requests[1].body["messages"].as_array().unwrap().last().unwrap()["content"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(bash.contains(DEV_CONTAINER_MARKER_TEXT), "{job:?}\n{bash}");
        let containers = world.containers_of(job.id);
        assert!(containers.is_empty(), "containers left: {containers}");
        world.assert_eyes(asked);
        world.bot
    });
}

/// The security issue's last guard: a container the engine could not remove may still hold a
/// process that changes the working tree while git reads it, so the job commits and pushes nothing
/// and says why. The engine here is the real one behind a proxy that refuses every removal.
#[test]
fn a_sandbox_the_engine_cannot_remove_gets_nothing_committed_and_the_report_says_why() {
    let Some(image) = pitcrew_tests::docker::test_image() else {
        return;
    };
    super::harness::run_test(|| async move {
        let proxy = DockerProxy::refusing_removal().unwrap();
        let options = Options {
            docker_host: Some(proxy.host()),
            ..Options::default()
        };
        let mut world = World::start_with(image, fixing_script(), options).await;
        let asked = world
            .comment("delivery-unremovable", "alice", "@agent fix the failing add test")
            .await;

        let job = world.job_end().await;
        let leftover = world.containers_of(job.id);
        // The engine itself removes what its proxy would not.
        for name in leftover.lines().filter(|n| !n.is_empty()) {
            let _ = Command::new("docker").args(["rm", "-f", name]).output();
        }
        assert!(proxy.refused() >= 1, "the job never tried to remove its container");
        assert!(
            !leftover.is_empty(),
            "the container should have outlived its refused removal"
        );
        assert_eq!(job.state, JobState::Failed, "{:?}", job.error);

        let run = world.finished(PR).await;
        assert_eq!(run.conclusion.as_deref(), Some("failure"), "{run:#?}");
        let summary = run.output["summary"].as_str().unwrap_or_default().to_owned();
        assert!(summary.contains("the sandbox could not be stopped"), "{summary}");
        assert!(summary.contains("nothing was committed"), "{summary}");
        let comments = world.bot_comments();
        assert_eq!(comments.len(), 1, "{comments:#?}");
        assert!(comments[0].contains("nothing was committed"), "{}", comments[0]);

        // Nothing was pushed: the branch is where the pull request left it.
        assert_eq!(
            world.bot.git.rev_parse(REPO, "refs/heads/docs").unwrap(),
            world.head_sha
        );
        world.bot.model.assert_script_consumed();
        world.bot.github.assert_no_violations();
        world.assert_eyes(asked);
        world.bot
    });
}
