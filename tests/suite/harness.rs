//! The suite's one way to run `pitcrew serve` end to end, in the manner of bors's `run_test`:
//! [`run_test`] runs a test on a runtime of its own under a hard time limit, and then
//! [`Bot::finish`] fails it when anything is left over — a job or delivery still in progress, a
//! panic in the bot (which the worker pool or the router would otherwise turn into a failed job or a
//! 500), a comment, review, check run, reaction or pull request the fake GitHub was sent and no
//! lookup returned, a push the git server took that the test never looked at, a request that broke
//! GitHub's REST description. Waits are on events — the fakes' changes, the pool's job ends, the
//! dispatcher's settled deliveries — never on sleeps, and [`Bot::job_end`] is how a test reads a
//! job's final state: after the job has ended.

use std::future::Future;
use std::sync::{Arc, Mutex, Once, PoisonError};
use std::time::Duration;

use pitcrew::jobs::{EndOutcome, Job, JobEnd, JobFilter, JobId, JobState, JobStore};
use pitcrew::server::RunningServer;
use pitcrew_tests::fake_github::{CheckRun, FakeGithub, GithubState};
use pitcrew_tests::git_server::GitServer;
use pitcrew_tests::scenario::{Comment, comment_payload};
use pitcrew_tests::scripted_model::ScriptedModel;
use pitcrew_tests::server_config::ServerOverrides;
use serde_json::Value;
use tempfile::TempDir;
use tokio::sync::{broadcast, watch};

/// How long a whole test may take, set-up and [`Bot::finish`] included.
pub(crate) const LIMIT: Duration = Duration::from_secs(300);

/// What the bot's live progress comment says until its job ends.
pub(crate) const LIVE: &str = "this comment updates as I go";

/// The webhook secret of every server the harness starts.
pub(crate) const SECRET: &str = "the suite's webhook secret";

/// Where a running test's bot registers its store, for the report when the limit is hit.
#[derive(Default)]
struct Run {
    store: Mutex<Option<Arc<dyn JobStore>>>,
}

tokio::task_local! {
    static RUN: Arc<Run>;
}

/// Panics seen on the threads of [`run_test`]'s runtimes: (thread name, what it said).
static PANICS: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

/// The prefix of the worker threads of the runtime of test number N: `pitcrew-test-N-`.
fn thread_prefix(run: u64) -> String {
    format!("pitcrew-test-{run}-")
}

/// Records every panic on a harness thread (then prints it as before). The job pool and the router
/// catch the bot's panics; this is how the test still hears of them.
fn record_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if let Some(name) = std::thread::current().name()
                && name.starts_with("pitcrew-test-")
            {
                PANICS
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push((name.to_owned(), info.to_string()));
            }
            previous(info);
        }));
    });
}

/// Runs `test` — which starts a [`Bot`], drives it and hands it back — on a multi-threaded
/// runtime of its own, within [`LIMIT`]; then [`Bot::finish`]. Fails on a panic anywhere in the
/// bot, on the limit (listing the jobs then in the store), and on leftovers.
pub(crate) fn run_test<F, Fut>(test: F)
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Bot>,
{
    run_test_within(LIMIT, test);
}

/// [`run_test`] with another limit than [`LIMIT`].
pub(crate) fn run_test_within<F, Fut>(limit: Duration, test: F)
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Bot>,
{
    static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    record_panics();
    let number = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let prefix = thread_prefix(number);
    let names = prefix.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .thread_name_fn(move || {
            static THREADS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            format!("{names}{}", THREADS.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
        })
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("the test's runtime: {e}"));
    let run = Arc::new(Run::default());
    let body = RUN.scope(Arc::clone(&run), async move {
        let bot = test().await;
        bot.finish().await;
    });
    let finished = runtime.block_on(async { tokio::time::timeout(limit, body).await.is_ok() });
    if !finished {
        let store = run.store.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let jobs = store.map(|store| runtime.block_on(async move { store.jobs(&JobFilter::default()).await }));
        panic!(
            "the test did not finish within {:.1} s; the jobs then: {jobs:#?}",
            limit.as_secs_f64()
        );
    }
    drop(runtime);
    let panics: Vec<String> = PANICS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .filter(|(thread, _)| thread.starts_with(&prefix))
        .map(|(thread, message)| format!("{thread}: {message}"))
        .collect();
    assert!(panics.is_empty(), "the bot panicked:\n{}", panics.join("\n"));
}

/// `pitcrew serve` with the real job handlers against the fakes, and what the test asks of it.
pub(crate) struct Bot {
    pub(crate) github: FakeGithub,
    pub(crate) git: GitServer,
    pub(crate) model: ScriptedModel,
    /// The server's `data_dir`.
    pub(crate) data: TempDir,
    server: RunningServer,
    /// Job ends, from the server's start: [`Bot::job_end`] takes them in order.
    ends: broadcast::Receiver<JobEnd>,
    /// What the server was started with, for [`Bot::restart`].
    overrides: ServerOverrides,
}

impl Bot {
    /// Starts the server against `github` and `git` with the scripted `model`, configured by the
    /// suite's overrides and then `configure`'s.
    pub(crate) async fn start(
        github: FakeGithub,
        git: GitServer,
        model: ScriptedModel,
        configure: impl FnOnce(ServerOverrides) -> ServerOverrides,
    ) -> Bot {
        let data = TempDir::new().unwrap();
        let overrides = configure(ServerOverrides::new(&github, SECRET, data.path()).model(&model));
        let server = super::serving::serve(&overrides).await;
        // Outside `run_test` (no scope) there is no report to make.
        let _ = RUN.try_with(|run| {
            *run.store.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(server.store()));
        });
        let ends = server.pool().subscribe();
        Bot {
            github,
            git,
            model,
            data,
            server,
            ends,
            overrides,
        }
    }

    /// Stops the server as SIGTERM does (running jobs get `grace`, then are requeued) and starts
    /// it again on the same data directory, on a new port; returns the stop's report.
    pub(crate) async fn restart(self, grace: Duration) -> (Bot, pitcrew::jobs::ShutdownReport) {
        let Bot {
            github,
            git,
            model,
            data,
            server,
            overrides,
            ..
        } = self;
        let report = server.shutdown(grace).await;
        let server = super::serving::serve(&overrides).await;
        let _ = RUN.try_with(|run| {
            *run.store.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(server.store()));
        });
        let ends = server.pool().subscribe();
        let bot = Bot {
            github,
            git,
            model,
            data,
            server,
            ends,
            overrides,
        };
        (bot, report)
    }

    pub(crate) fn server(&self) -> &RunningServer {
        &self.server
    }

    pub(crate) fn store(&self) -> &Arc<dyn JobStore> {
        self.server.store()
    }

    /// Posts `payload` as the signed delivery `delivery` of `event`; it must be accepted (202).
    pub(crate) async fn deliver(&self, event: &str, delivery: &str, payload: &Value) {
        let body = serde_json::to_vec(payload).unwrap();
        let (status, text) = super::webhook::post(&self.server.url(), SECRET, event, delivery, body, None).await;
        assert_eq!(status, 202, "{event} {delivery}: {text}");
    }

    /// `login` (`association` of the repository) comments `body` on issue or pull request `number`
    /// of `repo`; the signed delivery (the real recording, pointed at the repository) is posted.
    /// Returns the comment's id.
    pub(crate) async fn comment(
        &self,
        (repo, number): (&str, u64),
        delivery: &str,
        (login, association): (&str, &str),
        body: &str,
    ) -> u64 {
        let id = self.github.add_issue_comment(repo, number, login, body);
        let comment = Comment {
            id,
            login,
            user_id: 4242,
            association,
            body,
        };
        let payload = comment_payload(
            repo,
            &self.git.url(repo),
            number,
            &comment,
            Some(self.github.installation_id()),
        );
        self.deliver("issue_comment", delivery, &payload).await;
        id
    }

    /// Waits for the next job to end (finished: not requeued, not lost); returns it as the store
    /// has it then. Config checks, which every pull request event starts before its other jobs,
    /// are passed over: [`Bot::config_check_end`] waits for those.
    pub(crate) async fn job_end(&mut self) -> Job {
        loop {
            let job = self.any_job_end().await;
            if job.kind != "config" {
                return job;
            }
        }
    }

    /// Waits for the next config check to end, passing over other jobs' ends.
    pub(crate) async fn config_check_end(&mut self) -> Job {
        loop {
            let job = self.any_job_end().await;
            if job.kind == "config" {
                return job;
            }
        }
    }

    async fn any_job_end(&mut self) -> Job {
        let end = self.ends.recv().await.expect("the pool stopped reporting job ends");
        assert!(matches!(end.outcome, EndOutcome::Finished(_)), "{end:?}");
        self.store().job(end.job).await.unwrap().unwrap()
    }

    /// Waits until every stored delivery has been dealt with and no job is queued or running.
    pub(crate) async fn settled(&self) {
        // Subscribed before looking, so an end or a delivery settled after the look wakes us.
        let mut ends = self.server.pool().subscribe();
        let mut deliveries: watch::Receiver<u64> = self.server.deliveries_settled();
        loop {
            deliveries.borrow_and_update();
            if self.in_progress().await.is_empty() {
                return;
            }
            tokio::select! {
                changed = deliveries.changed() => changed.expect("the dispatcher stopped"),
                ended = ends.recv() => {
                    if let Err(broadcast::error::RecvError::Closed) = ended {
                        panic!("the pool stopped reporting job ends");
                    }
                }
            }
        }
    }

    /// What is not done yet: deliveries not dealt with, jobs queued or running.
    async fn in_progress(&self) -> Vec<String> {
        let store = self.store();
        let mut left: Vec<String> = store
            .unprocessed_deliveries(64)
            .await
            .unwrap()
            .iter()
            .map(|d| format!("delivery {} ({})", d.id, d.event))
            .collect();
        for state in [JobState::Queued, JobState::Running] {
            let filter = JobFilter {
                state: Some(state),
                ..JobFilter::default()
            };
            for job in store.jobs(&filter).await.unwrap() {
                left.push(format!("job {} ({} on {}, {:?})", job.id, job.kind, job.key, job.state));
            }
        }
        left
    }

    /// Waits until `predicate` holds for the fake GitHub's state (re-checked on every change);
    /// fails naming `what` when the test's limit is near.
    pub(crate) async fn wait_for(&self, what: &str, predicate: impl FnMut(&GithubState) -> bool) {
        assert!(self.github.wait_until(LIMIT, predicate).await, "never happened: {what}");
    }

    /// Waits until a job on `number` of `repo` has reported its end on GitHub — the `pitcrew` check
    /// run completed, its progress comment edited from the live text to its final one — and
    /// returns that check run, the only one there.
    pub(crate) async fn reported_end(&self, repo: &str, number: u64) -> CheckRun {
        let bot = self.github.bot_login();
        self.wait_for(
            "the job's end on GitHub (check run completed, progress comment final)",
            |state| {
                let completed = state
                    .check_runs_named(repo, "pitcrew")
                    .iter()
                    .any(|run| run.status == "completed");
                let final_comment = state.comments_on(repo, number).iter().any(|c| {
                    c.user == bot && c.edits.first().is_some_and(|first| first.contains(LIVE)) && !c.body.contains(LIVE)
                });
                completed && final_comment
            },
        )
        .await;
        let runs = self.github.check_runs();
        assert_eq!(runs.len(), 1, "{runs:#?}");
        runs.into_iter().find(|run| run.name == "pitcrew").unwrap()
    }

    /// The bodies of the bot's comments on `number` of `repo`, oldest first.
    pub(crate) fn bot_comments_on(&self, repo: &str, number: u64) -> Vec<String> {
        let bot = self.github.bot_login();
        self.github
            .comments_on(repo, number)
            .into_iter()
            .filter(|c| c.user == bot)
            .map(|c| c.body)
            .collect()
    }

    /// The reactions on issue comment `id` (their content, `eyes`, `+1`…), oldest first.
    pub(crate) fn reactions_on_comment(&self, id: u64) -> Vec<String> {
        self.github.state(|s| {
            s.reactions_on_issue_comment(id)
                .iter()
                .map(|r| r.content.clone())
                .collect()
        })
    }

    /// The names of the sandbox containers left of `job`: the server names them after its
    /// instance (`data_dir/instance`) and the job.
    pub(crate) fn containers_of(&self, job: JobId) -> String {
        let instance = std::fs::read_to_string(self.data.path().join("instance")).unwrap();
        let containers = pitcrew_tests::docker::containers_of(&format!("{}-{job}", instance.trim())).unwrap();
        containers.trim().to_owned()
    }

    /// The end of every test: nothing in progress, the server stopped, nothing written that the
    /// test did not look at, no request that broke GitHub's description.
    pub(crate) async fn finish(self) {
        let left = self.in_progress().await;
        assert!(
            left.is_empty(),
            "the test ended with work in progress (wait with `settled` or `job_end` before reading what it did): \
             {left:#?}"
        );
        let report = self.server.shutdown(Duration::from_secs(10)).await;
        assert!(
            report.requeued.is_empty() && report.abandoned.is_empty(),
            "jobs were still running at the shutdown: {report:?}"
        );
        let outputs = self.github.unseen_outputs();
        let pushes = self.git.unseen_pushes();
        assert!(
            outputs.is_empty() && pushes.is_empty(),
            "the bot wrote what the test never looked at:\n  GitHub: {outputs:#?}\n  git: {pushes:#?}"
        );
        self.github.assert_no_violations();
    }
}

/// The harness itself: each way a test can leave something behind fails it.
mod checks {
    use std::time::Duration;

    use pitcrew_tests::fake_github::{FakeGithub, Issue, Permission, Repo};
    use pitcrew_tests::git_server::GitServer;
    use pitcrew_tests::scripted_model::{Script, ScriptedModel};

    use super::{Bot, run_test, run_test_within};

    const REPO: &str = "acme/calc";

    /// A server for `acme/calc`, where `alice` may write and issue #3 is open.
    async fn bot() -> Bot {
        let github = FakeGithub::start();
        let git = GitServer::start_with(github.token_check());
        git.create_repo(REPO, &[("README.md", "calc\n")]).unwrap();
        github.add_repo(
            Repo::new(REPO)
                .default_branch("main")
                .clone_url(&git.url(REPO))
                .git_dir(git.repo_path(REPO)),
        );
        github.set_permission(REPO, "alice", Permission::Write);
        github.add_issue(REPO, Issue::new(3, "calc is wrong"));
        Bot::start(github, git, ScriptedModel::start(Script::new()), |overrides| overrides).await
    }

    /// `@agent stop` with nothing to stop: the dispatcher answers it at once, with a comment and
    /// a reaction; returns the question's id.
    async fn ask_to_stop(bot: &Bot) -> u64 {
        let id = bot
            .comment((REPO, 3), "stop-1", ("alice", "COLLABORATOR"), "@agent stop")
            .await;
        bot.settled().await;
        id
    }

    #[test]
    fn a_test_that_looked_at_every_output_passes() {
        run_test(|| async {
            let bot = bot().await;
            let asked = ask_to_stop(&bot).await;
            assert_eq!(
                bot.bot_comments_on(REPO, 3),
                [pitcrew::report::replies::NOTHING_TO_STOP]
            );
            assert_eq!(bot.reactions_on_comment(asked), ["eyes"]);
            bot
        });
    }

    #[test]
    #[should_panic(expected = "the bot wrote what the test never looked at")]
    fn an_output_the_test_never_looked_at_fails_it() {
        run_test(|| async {
            let bot = bot().await;
            let asked = ask_to_stop(&bot).await;
            // The reaction is looked at, the reply is not.
            assert_eq!(bot.reactions_on_comment(asked), ["eyes"]);
            bot
        });
    }

    #[test]
    #[should_panic(expected = "the bot panicked")]
    fn a_panic_on_the_bots_threads_fails_the_test() {
        run_test(|| async {
            let bot = bot().await;
            // What the pool does with a handler's panic: catch it in the task.
            let caught = tokio::spawn(async { panic!("a handler's bug") }).await;
            assert!(caught.is_err_and(|e| e.is_panic()));
            bot
        });
    }

    #[test]
    #[should_panic(expected = "the test ended with work in progress")]
    fn a_delivery_not_dealt_with_at_the_end_fails_the_test() {
        run_test(|| async {
            let bot = bot().await;
            // The permission check fails for now: the delivery waits for its retry.
            bot.github
                .fail_next_server_error("*", "/repos/acme/calc/collaborators", 1_000, 500);
            bot.comment((REPO, 3), "stop-1", ("alice", "COLLABORATOR"), "@agent stop")
                .await;
            bot
        });
    }

    #[test]
    #[should_panic(expected = "the test did not finish within 0.5 s")]
    fn a_test_past_its_limit_fails() {
        run_test_within(Duration::from_millis(500), || async {
            let bot = bot().await;
            std::future::pending::<()>().await;
            bot
        });
    }
}
