//! Fix until green, end to end: `pitcrew serve` fixes a pull request, pushes, and the tests' fake
//! CI (`pitcrew_tests::fake_ci`) runs the workflow on the pushed commit the way GitHub Actions
//! would — the repository's real tests plus a lint the sandbox never runs, on a checkout of that
//! exact commit — serves the real output as the job's log, and sends the signed `workflow_run` and
//! `check_suite` deliveries. The loop waits, reads what failed, fixes again, and reports one
//! timeline; people, bounds, lost deliveries and restarts end or resume it as they should.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pitcrew::jobs::{JobFilter, JobState};
use pitcrew_tests::fake_ci::{CiJob, CiRun, FakeCi, Workflow};
use pitcrew_tests::fake_github::{CheckRun, FakeGithub, GithubState};
use pitcrew_tests::git_server::GitServer;
use pitcrew_tests::scenario::{REPO_CONFIG, calc_pull_request_with};
use pitcrew_tests::scripted_model::{Reply, Script, ScriptedModel};
use serde_json::json;
use tempfile::TempDir;

use super::harness::{Bot, LIVE, SECRET};

const REPO: &str = "acme/calc";
const PR: u64 = 7;
/// How long a test waits for one CI run of the fake.
const RUN: Duration = Duration::from_secs(120);

/// The lint CI runs and the sandbox's tests do not: no `TODO` left in the code.
const LINT: &str = "if grep -n TODO calc.sh; then echo 'lint: calc.sh has a TODO left in it'; exit 1; fi";

/// The repository's workflow: its tests, and the lint.
fn workflow() -> Workflow {
    Workflow::new(
        "CI",
        vec![CiJob::new("test", "sh run-tests.sh"), CiJob::new("lint", LINT)],
    )
}

/// A workflow whose `lint` waits for `gate` to exist before it passes: CI that is still running
/// while the test does something to the pull request.
fn gated(gate: &Path) -> Workflow {
    let wait = format!("while [ ! -e '{}' ]; do sleep 0.05; done", gate.display());
    Workflow::new(
        "CI",
        vec![CiJob::new("test", "sh run-tests.sh"), CiJob::new("lint", &wait)],
    )
}

/// Reads `path` (the file tools edit only what the agent has read).
fn read(path: &str) -> Reply {
    Reply::new()
        .tool_call("read_file", json!({"path": path}))
        .usage(500, 10)
}

fn edit(old: &str, new: &str) -> Reply {
    Reply::new().tool_call(
        "edit_file",
        json!({"path": "calc.sh", "old_string": old, "new_string": new}),
    )
}

/// Round 1 fixes `add` but leaves a TODO behind (the tests pass; the lint does not).
fn sloppy_fix() -> Vec<Reply> {
    vec![
        read("calc.sh"),
        edit("$(($1 - $2))", "$(($1 + $2)) # TODO: check for overflow").usage(1_000, 40),
        Reply::text("`add` subtracted; it adds now and the tests pass.").usage(1_100, 20),
    ]
}

/// A fix with nothing for the lint to find.
fn clean_fix() -> Vec<Reply> {
    vec![
        read("calc.sh"),
        edit("$(($1 - $2))", "$(($1 + $2))").usage(1_000, 40),
        Reply::text("`add` subtracted; it adds now.").usage(1_100, 20),
    ]
}

/// Round 2 takes the TODO out.
fn tidy_up() -> Vec<Reply> {
    vec![
        read("calc.sh"),
        edit(" # TODO: check for overflow", "").usage(1_200, 30),
        Reply::text("Removed the TODO the lint complained about.").usage(1_300, 20),
    ]
}

fn script(rounds: &[Vec<Reply>]) -> Script {
    rounds.iter().flatten().cloned().collect()
}

struct World {
    bot: Bot,
    ci: FakeCi,
    head_sha: String,
    /// Where gated CI looks for its gate.
    scratch: TempDir,
    /// The comments that asked the bot something.
    asked: std::sync::Mutex<Vec<u64>>,
}

impl World {
    /// The calc pull request with `repo_config` after the test command, the fake CI attached (one
    /// run of [`workflow`] on `main` already: its CI history, where `test` fails) and running
    /// `ci` from now on, and the bot.
    async fn start(repo_config: &str, ci: Workflow, model: Script, poll: &str) -> World {
        // The bot's log goes to the test's output, which a failing test shows.
        pitcrew::logging::init(pitcrew::logging::LogFormat::Pretty);
        let github = FakeGithub::start();
        let git = GitServer::start_with(github.token_check());
        let config = format!("{REPO_CONFIG}{repo_config}");
        let pull = calc_pull_request_with(&git, &github, REPO, PR, &config).unwrap();
        let workflow_now = ci;
        let ci = FakeCi::attach(&git, &github, REPO, workflow());
        let main = ci.run_branch("main");
        assert_eq!(main.conclusion, "failure", "main's `test` fails: `add` subtracts");
        ci.set_workflow(workflow_now);
        let model = ScriptedModel::start(model);
        let bot = Bot::start(github, git, model, |overrides| {
            overrides.set("ci_loop.poll_interval", poll)
        })
        .await;
        ci.deliver_to(
            &format!("{}/webhook", bot.server().url()),
            SECRET,
            bot.github.installation_id(),
        );
        World {
            bot,
            ci,
            head_sha: pull.head_sha,
            scratch: TempDir::new().unwrap(),
            asked: std::sync::Mutex::new(Vec::new()),
        }
    }

    fn gate(&self) -> PathBuf {
        self.scratch.path().join("gate")
    }

    async fn ask(&self, delivery: &str, body: &str) {
        let id = self
            .bot
            .comment((REPO, PR), delivery, ("alice", "COLLABORATOR"), body)
            .await;
        self.asked.lock().unwrap().push(id);
    }

    /// The bot, once every comment that asked was acknowledged with 👀 and nothing else.
    fn done(self) -> Bot {
        for id in self.asked.lock().unwrap().iter() {
            assert_eq!(self.bot.reactions_on_comment(*id), ["eyes"], "comment {id}");
        }
        self.bot
    }

    /// The branch's head, once it is not `from` any more.
    async fn pushed_after(&self, from: &str) -> String {
        let from = from.to_owned();
        self.bot
            .wait_for("a push to the pull request", |state| {
                pull_head(state, REPO, PR).is_some_and(|head| head != from)
            })
            .await;
        self.bot.git.rev_parse(REPO, "refs/heads/docs").unwrap()
    }

    async fn ci_on(&self, sha: &str) -> CiRun {
        self.ci.wait_for_run(sha, RUN).await
    }

    /// Waits until the job shows it waits for CI on `sha`.
    async fn waiting_on(&self, sha: &str) {
        let title = format!("Waiting for CI on {}", &sha[..7]);
        self.bot
            .wait_for("the check run waiting for CI", |state| {
                state
                    .check_runs_named(REPO, "pitcrew")
                    .iter()
                    .any(|run| run.output["title"].as_str().is_some_and(|t| t.starts_with(&title)))
            })
            .await;
    }

    fn progress_comment(&self) -> String {
        let bot = self.bot.github.bot_login();
        self.bot
            .github
            .comments_on(REPO, PR)
            .into_iter()
            .find(|c| c.user == bot && c.edits.first().is_some_and(|first| first.contains(LIVE)))
            .map(|c| c.body)
            .unwrap_or_else(|| panic!("no progress comment"))
    }

    /// The job's end on GitHub: the check run and its final comment.
    async fn reported(&self) -> (CheckRun, String) {
        let run = self.bot.reported_end(REPO, PR).await;
        (run, self.progress_comment())
    }

    fn pushes_to_docs(&self) -> usize {
        self.bot
            .git
            .pushes()
            .iter()
            .filter(|push| push.repo == REPO && push.updates.iter().any(|u| u.name == "refs/heads/docs"))
            .count()
    }

    /// The first user message of each model conversation (a round's task).
    fn tasks(&self) -> Vec<String> {
        self.bot
            .model
            .requests()
            .iter()
            .filter_map(|request| {
                let messages = request.body["messages"].as_array()?;
                let first = messages.iter().find(|m| m["role"] == "user")?;
                let text = first["content"]
                    .as_str()
                    .map(str::to_owned)
                    .or_else(|| first["content"][0]["text"].as_str().map(str::to_owned))?;
                Some(text)
            })
            .fold(Vec::new(), |mut tasks, task| {
                if tasks.last() != Some(&task) {
                    tasks.push(task);
                }
                tasks
            })
    }
}

/// The pull request's head as the fake GitHub shows it.
fn pull_head(state: &GithubState, repo: &str, number: u64) -> Option<String> {
    state
        .issue(repo, number)
        .and_then(|issue| issue.pull.as_ref())
        .map(|pull| pull.head.sha.clone())
}

fn summary(run: &CheckRun) -> String {
    run.output["summary"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn a_fix_that_passes_the_sandbox_but_fails_ci_is_fixed_in_a_second_round_until_ci_is_green() {
    super::harness::run_test(|| async move {
        // Triage on failure stays on: the loop's own commits must not start one.
        let world = World::start(
            "[triage]\non_failure = true\n",
            workflow(),
            script(&[sloppy_fix(), tidy_up()]),
            "3m",
        )
        .await;
        world.ask("fix-1", "@agent fix add").await;

        let first = world.pushed_after(&world.head_sha).await;
        let run = world.ci_on(&first).await;
        assert_eq!(run.conclusion, "failure");
        assert!(
            run.jobs.iter().any(|j| j.name == "lint" && j.conclusion == "failure"),
            "{run:#?}"
        );
        let second = world.pushed_after(&first).await;
        assert_eq!(
            world.bot.git.show(REPO, "refs/heads/docs", "calc.sh").unwrap(),
            "add() {\n    echo $(($1 + $2))\n}\n"
        );
        assert_eq!(world.ci_on(&second).await.conclusion, "success");

        let (check, comment) = world.reported().await;
        assert_eq!(check.conclusion.as_deref(), Some("success"), "{check:#?}");
        let title = check.output["title"].as_str().unwrap_or_default();
        assert_eq!(title, format!("CI passed on {} after 2 rounds", &second[..7]));
        for text in [summary(&check), comment] {
            assert!(text.contains(&format!("1. Round 1 pushed [{}]", &first[..7])), "{text}");
            assert!(text.contains("❌ CI failed (1 job: `CI / lint`)"), "{text}");
            assert!(
                text.contains(&format!("2. Round 2 pushed [{}]", &second[..7])),
                "{text}"
            );
            assert!(
                text.contains(&format!("**CI passed on {} after 2 rounds.**", &second[..7])),
                "{text}"
            );
        }
        // Round 2's task: the lint's own words from its log, and what round 1 did.
        let tasks = world.tasks();
        assert_eq!(tasks.len(), 2, "{tasks:#?}");
        assert!(
            tasks[1].contains(&format!("CI failed on {}", &first[..7])),
            "{}",
            tasks[1]
        );
        assert!(tasks[1].contains("lint: calc.sh has a TODO left in it"), "{}", tasks[1]);
        assert!(tasks[1].contains("Round 1 pushed"), "{}", tasks[1]);
        assert_eq!(world.pushes_to_docs(), 2);

        let asked = world.asked.lock().unwrap().clone();
        let mut bot = world.bot;
        let job = bot.job_end().await;
        assert_eq!(job.state, JobState::Succeeded, "{:?}", job.error);
        bot.settled().await;
        // Both commits' failed-CI deliveries were dealt with, and no triage came of them: the
        // dispatcher knows the loop's commits (a triage queued before it did steps aside).
        let jobs = bot.store().jobs(&JobFilter::default()).await.unwrap();
        for job in jobs.iter().filter(|job| job.kind != "fix") {
            assert_eq!(
                (job.kind.as_str(), job.state),
                ("triage", JobState::Cancelled),
                "{job:#?}"
            );
            assert!(
                job.error
                    .as_deref()
                    .unwrap_or_default()
                    .contains("Left to the fix loop"),
                "{job:#?}"
            );
        }
        let deliveries = world.ci.deliveries();
        assert_eq!(deliveries.len(), 4, "{deliveries:#?}");
        assert!(
            deliveries.iter().all(|(_, _, status)| *status == 202),
            "{deliveries:#?}"
        );
        for id in asked {
            assert_eq!(bot.reactions_on_comment(id), ["eyes"], "comment {id}");
        }
        bot
    });
}

#[test]
fn ci_that_always_fails_gets_exactly_max_rounds_and_a_report_of_what_still_fails() {
    super::harness::run_test(|| async move {
        let always = Workflow::new(
            "CI",
            vec![CiJob::new(
                "integration",
                "printf 'running 1 test\\ntest integration::saves_a_sum ... FAILED\\n\\ntest result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\\n'; exit 101",
            )],
        );
        let world = World::start(
            "[ci_loop]\nmax_rounds = 2\n",
            always,
            script(&[
                clean_fix(),
                vec![
                    Reply::new()
                        .tool_call(
                            "write_file",
                            json!({"path": "NOTES.md", "content": "integration checked\n"}),
                        )
                        .usage(900, 20),
                    Reply::text("Looked at the integration job.").usage(900, 20),
                ],
            ]),
            "3m",
        )
        .await;
        world.ask("fix-1", "@agent fix add").await;
        let first = world.pushed_after(&world.head_sha).await;
        let second = world.pushed_after(&first).await;
        assert_eq!(world.ci_on(&second).await.conclusion, "failure");

        let (check, comment) = world.reported().await;
        assert_eq!(check.conclusion.as_deref(), Some("failure"), "{check:#?}");
        assert_eq!(
            check.output["title"].as_str().unwrap_or_default(),
            format!("CI still fails on {} after 2 rounds", &second[..7])
        );
        assert!(
            comment.contains("that was the last of 2 rounds (`[ci_loop] max_rounds`)"),
            "{comment}"
        );
        assert!(comment.contains("2. Round 2 pushed"), "{comment}");
        assert!(!comment.contains("3. Round 3"), "{comment}");
        assert_eq!(world.pushes_to_docs(), 2, "nothing pushed after the bound");
        assert_eq!(world.bot.model.remaining_turns(), 0);

        let asked = world.asked.lock().unwrap().clone();
        let mut bot = world.bot;
        let job = bot.job_end().await;
        assert_eq!(job.state, JobState::Failed);
        assert!(
            job.error.as_deref().unwrap_or_default().contains("CI still fails"),
            "{job:?}"
        );
        bot.settled().await;
        for id in asked {
            assert_eq!(bot.reactions_on_comment(id), ["eyes"], "comment {id}");
        }
        bot
    });
}

#[test]
fn a_push_by_someone_else_while_the_job_waits_ends_the_loop_without_a_push() {
    super::harness::run_test(|| async move {
        let mut world = World::start("", workflow(), script(&[sloppy_fix(), tidy_up()]), "1s").await;
        world.ci.set_workflow(gated(&world.gate()));
        world.ask("fix-1", "@agent fix add").await;
        let first = world.pushed_after(&world.head_sha).await;
        world.waiting_on(&first).await;

        let human = world
            .bot
            .git
            .commit(REPO, "docs", &[("README.md", "calc: by hand\n")], "bob's own change")
            .unwrap();
        let (check, comment) = world.reported().await;
        assert_eq!(check.conclusion.as_deref(), Some("neutral"), "{check:#?}");
        assert!(
            comment.contains(&format!("Someone else pushed to the branch ({})", &human[..7])),
            "{comment}"
        );
        std::fs::write(world.gate(), "").unwrap();
        world.ci_on(&first).await;
        world.ci_on(&human).await;
        assert_eq!(world.pushes_to_docs(), 1);
        assert_eq!(world.bot.git.rev_parse(REPO, "refs/heads/docs").unwrap(), human);

        let job = world.bot.job_end().await;
        assert_eq!(job.state, JobState::Succeeded, "{:?}", job.error);
        world.bot.settled().await;
        world.done()
    });
}

#[test]
fn stop_while_the_job_waits_for_ci_cancels_it() {
    super::harness::run_test(|| async move {
        let mut world = World::start("", workflow(), script(&[sloppy_fix(), tidy_up()]), "3m").await;
        world.ci.set_workflow(gated(&world.gate()));
        world.ask("fix-1", "@agent fix add").await;
        let first = world.pushed_after(&world.head_sha).await;
        world.waiting_on(&first).await;

        world.ask("stop-1", "@agent stop").await;
        let job = world.bot.job_end().await;
        assert_eq!(job.state, JobState::Cancelled);
        assert_eq!(job.error.as_deref(), Some("stopped by @alice"));
        let (check, comment) = world.reported().await;
        assert_eq!(check.conclusion.as_deref(), Some("cancelled"), "{check:#?}");
        assert!(comment.contains("stopped waiting: stopped"), "{comment}");
        std::fs::write(world.gate(), "").unwrap();
        world.ci_on(&first).await;
        world.bot.settled().await;
        assert_eq!(world.pushes_to_docs(), 1);
        let replies = world.bot.bot_comments_on(REPO, PR);
        assert_eq!(replies.len(), 2, "{replies:#?}");
        world.done()
    });
}

#[test]
fn a_failure_that_fails_on_the_base_branch_too_is_not_the_commits_and_starts_no_round() {
    super::harness::run_test(|| async move {
        // Only the README changes: `test` fails as it does on `main`.
        let readme = vec![
            read("README.md"),
            Reply::new()
                .tool_call(
                    "write_file",
                    json!({"path": "README.md", "content": "calc: shell arithmetic.\n"}),
                )
                .usage(800, 20),
            Reply::text("Fixed the README's punctuation.").usage(800, 20),
        ];
        let mut world = World::start("", workflow(), script(&[readme]), "3m").await;
        world.ask("fix-1", "@agent fix the README").await;
        let first = world.pushed_after(&world.head_sha).await;
        let run = world.ci_on(&first).await;
        assert!(
            run.jobs.iter().any(|j| j.name == "test" && j.conclusion == "failure"),
            "{run:#?}"
        );

        let (check, comment) = world.reported().await;
        assert_eq!(
            check.output["title"].as_str().unwrap_or_default(),
            format!("CI passed on {} after 1 round", &first[..7])
        );
        assert!(comment.contains("`CI / test` fails on `main` too"), "{comment}");
        assert_eq!(world.pushes_to_docs(), 1);
        assert_eq!(world.tasks().len(), 1);
        let job = world.bot.job_end().await;
        assert_eq!(job.state, JobState::Succeeded, "{:?}", job.error);
        // A triage of the loop's commit queued before the loop said it was its own steps aside.
        world.bot.settled().await;
        world.done()
    });
}

#[test]
fn a_lost_delivery_is_made_up_for_by_the_poll() {
    super::harness::run_test(|| async move {
        let mut world = World::start("", workflow(), script(&[clean_fix()]), "1s").await;
        world.ci.lose_next_deliveries(2);
        world.ask("fix-1", "@agent fix add").await;
        let first = world.pushed_after(&world.head_sha).await;
        assert_eq!(world.ci_on(&first).await.conclusion, "success");

        let (check, _) = world.reported().await;
        assert_eq!(
            check.output["title"].as_str().unwrap_or_default(),
            format!("CI passed on {} after 1 round", &first[..7])
        );
        assert!(world.ci.deliveries().is_empty(), "{:#?}", world.ci.deliveries());
        let job = world.bot.job_end().await;
        assert_eq!(job.state, JobState::Succeeded, "{:?}", job.error);
        world.bot.settled().await;
        world.done()
    });
}

#[test]
fn a_restart_while_the_job_waits_for_ci_resumes_the_wait_and_finishes() {
    super::harness::run_test(|| async move {
        let world = World::start("", workflow(), script(&[clean_fix()]), "3m").await;
        world.ci.set_workflow(gated(&world.gate()));
        world.ask("fix-1", "@agent fix add").await;
        let first = world.pushed_after(&world.head_sha).await;
        world.waiting_on(&first).await;

        let asked = world.asked.lock().unwrap().clone();
        let World { bot, ci, scratch, .. } = world;
        let (mut bot, report) = bot.restart(Duration::from_secs(5)).await;
        assert_eq!(
            report.requeued.len(),
            1,
            "the waiting job is requeued at once: {report:?}"
        );
        ci.deliver_to(
            &format!("{}/webhook", bot.server().url()),
            SECRET,
            bot.github.installation_id(),
        );
        // The job runs again: its progress comment says so, then that it waits for CI again.
        let job_id = report.requeued[0];
        let store = std::sync::Arc::clone(bot.store());
        let login = bot.github.bot_login();
        bot.wait_for("the job waiting again after the restart", |state| {
            state.comments_on(REPO, PR).iter().any(|c| {
                c.user == login
                    && c.edits.iter().any(|e| e.contains("starting again"))
                    && c.body.contains("waiting for CI on")
            })
        })
        .await;
        std::fs::write(scratch.path().join("gate"), "").unwrap();
        assert_eq!(ci.wait_for_run(&first, RUN).await.conclusion, "success");

        let run = bot.reported_end(REPO, PR).await;
        assert_eq!(
            run.output["title"].as_str().unwrap_or_default(),
            format!("CI passed on {} after 1 round", &first[..7])
        );
        let job = bot.job_end().await;
        assert_eq!(job.id, job_id);
        assert_eq!(job.state, JobState::Succeeded, "{:?}", job.error);
        let started = store
            .events(job_id)
            .await
            .unwrap()
            .iter()
            .filter(|event| event.kind == "claimed")
            .count();
        assert_eq!(started, 2, "the job was claimed twice: before and after the restart");
        let pushes = bot.git.pushes().iter().filter(|push| push.repo == REPO).count();
        assert_eq!(pushes, 1, "the resumed job pushed nothing again");
        bot.settled().await;
        let _ = bot.bot_comments_on(REPO, PR);
        for id in asked {
            assert_eq!(bot.reactions_on_comment(id), ["eyes"], "comment {id}");
        }
        bot
    });
}

#[test]
fn a_fix_of_an_issue_waits_for_ci_on_the_pull_request_it_opened_and_fixes_it_until_green() {
    super::harness::run_test(|| async move {
        let world = World::start(
            "[triage]\non_failure = false\n",
            workflow(),
            script(&[sloppy_fix(), tidy_up()]),
            "3m",
        )
        .await;
        world
            .bot
            .github
            .add_issue(REPO, pitcrew_tests::fake_github::Issue::new(3, "add subtracts"));
        // The recorded comment delivery is a pull request's: made an issue's.
        let asked = world.bot.github.add_issue_comment(REPO, 3, "alice", "@agent fix");
        let comment = pitcrew_tests::scenario::Comment {
            id: asked,
            login: "alice",
            user_id: 4242,
            association: "COLLABORATOR",
            body: "@agent fix",
        };
        let mut payload = pitcrew_tests::scenario::comment_payload(
            REPO,
            &world.bot.git.url(REPO),
            3,
            &comment,
            Some(world.bot.github.installation_id()),
        );
        payload["issue"].as_object_mut().unwrap().remove("pull_request");
        world.bot.deliver("issue_comment", "fix-issue-1", &payload).await;

        // Round 1 opens the pull request from its own branch; round 2 pushes to that branch.
        world
            .bot
            .wait_for("the pull request opened", |state| state.pull_requests(REPO).len() == 2)
            .await;
        let opened = world
            .bot
            .github
            .pull_requests(REPO)
            .into_iter()
            .find(|pull| pull.number != PR)
            .unwrap();
        let branch = opened.pull.as_ref().unwrap().head.ref_name.clone();
        let first = opened.pull.as_ref().unwrap().head.sha.clone();
        assert_eq!(world.ci_on(&first).await.conclusion, "failure");
        let number = opened.number;
        world
            .bot
            .wait_for("round 2's push", |state| {
                pull_head(state, REPO, number).is_some_and(|head| head != first)
            })
            .await;
        let second = world.bot.git.rev_parse(REPO, &format!("refs/heads/{branch}")).unwrap();
        assert_eq!(world.ci_on(&second).await.conclusion, "success");

        let run = world.bot.reported_end(REPO, 3).await;
        assert_eq!(
            run.output["title"].as_str().unwrap_or_default(),
            format!("CI passed on {} after 2 rounds", &second[..7])
        );
        let bot = world.bot.github.bot_login();
        let comment = world
            .bot
            .github
            .comments_on(REPO, 3)
            .into_iter()
            .find(|c| c.user == bot)
            .map(|c| c.body)
            .unwrap();
        assert!(
            comment.contains(&format!("Opened pull request [#{number}]")),
            "{comment}"
        );
        assert!(comment.contains("❌ CI failed (1 job: `CI / lint`)"), "{comment}");
        assert!(
            comment.contains(&format!("**CI passed on {} after 2 rounds.**", &second[..7])),
            "{comment}"
        );
        assert_eq!(
            world
                .bot
                .git
                .show(REPO, &format!("refs/heads/{branch}"), "calc.sh")
                .unwrap(),
            "add() {\n    echo $(($1 + $2))\n}\n"
        );

        let mut bot = world.bot;
        let job = bot.job_end().await;
        assert_eq!(job.state, JobState::Succeeded, "{:?}", job.error);
        bot.settled().await;
        assert_eq!(bot.reactions_on_comment(asked), ["eyes"]);
        bot
    });
}

#[test]
fn stop_while_a_later_round_works_cancels_the_job_with_the_timeline_so_far() {
    super::harness::run_test(|| async move {
        let scratch = TempDir::new().unwrap();
        let gate = scratch.path().join("gate");
        let wait = format!("while [ ! -e '{}' ]; do sleep 0.05; done", gate.display());
        // Round 2 runs a command that lasts until the test opens the gate (after the stop).
        let busy = vec![
            Reply::new()
                .tool_call("bash", json!({ "command": wait }))
                .usage(900, 20),
            Reply::text("Still busy.").usage(900, 20),
        ];
        let mut world = World::start("", workflow(), script(&[sloppy_fix(), busy]), "3m").await;
        world.ask("fix-1", "@agent fix add").await;
        let first = world.pushed_after(&world.head_sha).await;
        assert_eq!(world.ci_on(&first).await.conclusion, "failure");
        world
            .bot
            .wait_for("round 2 running its command", |state| {
                state.check_runs_named(REPO, "pitcrew").iter().any(|run| {
                    run.output["summary"]
                        .as_str()
                        .is_some_and(|s| s.contains("running a command"))
                })
            })
            .await;

        world.ask("stop-1", "@agent stop").await;
        let job = world.bot.job_end().await;
        std::fs::write(&gate, "").unwrap();
        assert_eq!(job.state, JobState::Cancelled, "{job:?}");
        assert_eq!(job.error.as_deref(), Some("stopped by @alice"));
        let (check, comment) = world.reported().await;
        assert_eq!(check.conclusion.as_deref(), Some("cancelled"), "{check:#?}");
        assert!(comment.contains("❌ CI failed (1 job: `CI / lint`)"), "{comment}");
        assert!(!comment.contains("2. Round 2"), "{comment}");
        assert_eq!(world.pushes_to_docs(), 1);
        world.bot.settled().await;
        let replies = world.bot.bot_comments_on(REPO, PR);
        assert_eq!(replies.len(), 2, "{replies:#?}");
        world.done()
    });
}
