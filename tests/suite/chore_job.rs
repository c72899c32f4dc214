//! The dependency chore end to end through `pitcrew serve`: `@agent chore deps` on a repository
//! whose crate depends on two crates of a real local Cargo registry (real `cargo` refreshes the
//! lockfile and runs the tests), the fake GitHub for the pull requests, the real git server for
//! the pushes, and the scripted model. One major update breaks the tests and the agent reverts it;
//! the majors' pull request holds only its own lockfile rows and merges with the compatible one in
//! either order; a second run updates the open pull request in place and closes the one it no
//! longer needs. A crate the workspace excludes is not edited, and what the tests leave behind is
//! not committed. An npm project gets its `package-lock.json` refreshed inside its ranges by real
//! npm against a local npm registry. Tests that fail are compared with a run on the untouched base:
//! a failure that was there before the update is no reason to run the agent, and the agent hears
//! only what the update broke; a compile error is said as one. Python releases are held back for
//! the project's Python, a uv.lock is refreshed with its manifest, and the pull requests get their
//! labels, assignees and reviewers, no more open than allowed. `[[chores.deps.rules]]` put a
//! group's updates in a pull request of their own and ignore packages, and a release younger than
//! `min_release_age` waits while the newest old enough is proposed. `@agent ignore` on a chore
//! pull request is recorded on the dependency dashboard issue (only by someone who may trigger the
//! bot) and the next run leaves the package; `@agent rebase` makes a pull request again on the
//! moved default branch; `[chores.deps] dashboard` keeps that issue current, and a ticked box (read
//! at the next run, or its edit's webhook) opens a waiting pull request. A rule group with a
//! schedule of its own gets its pull request when that schedule fires (the scheduler queues the
//! chores against the bot's store), and the repository's schedule leaves it alone.

use std::process::Command;

use pitcrew::jobs::{JobFilter, JobState};
use pitcrew_tests::cargo_registry::CargoRegistry;
use pitcrew_tests::chore_fixture::{LIB, MANIFEST, calcutil, cargo_config, fmtutil, locked, lockfile};
use pitcrew_tests::fake_github::{FakeGithub, Issue, Permission, Repo};
use pitcrew_tests::git_server::GitServer;
use pitcrew_tests::package_registry::PackageRegistry;
use pitcrew_tests::scenario::{IssueEdit, issue_edited_payload};
use pitcrew_tests::scripted_model::{Reply, Script, ScriptedModel};
use serde_json::json;
use tempfile::TempDir;

use super::harness::Bot;

const REPO: &str = "acme/tally";
const ISSUE: u64 = 3;

fn script() -> Script {
    Script::new()
        .turn(Reply::text("The build fails on calcutil 2.").tool_call("read_file", json!({"path": "Cargo.toml"})))
        .turn(Reply::new().tool_call(
            "edit_file",
            json!({"path": "Cargo.toml", "old_string": "calcutil = \"2.0\"", "new_string": "calcutil = \"1.0\""}),
        ))
        .turn(Reply::text(
            "calcutil 2.0 renamed `add` to `sum` and its release notes give no migration path for the overflow \
             behaviour we rely on: reverted calcutil, kept fmtutil 0.4.",
        ))
}

/// `pitcrew serve` against the fake GitHub with the scripted model and `key` = `value` set (the
/// registry under test).
async fn serve(github: FakeGithub, git: GitServer, model: ScriptedModel, key: &str, value: String) -> Bot {
    Bot::start(github, git, model, |overrides| overrides.set(key, value)).await
}

/// The fake GitHub and the git server with `files` on `main` of the repository, its tracking issue
/// for the chore, and `alice` as its admin.
fn tracked_repo(files: &[(&str, &str)]) -> (FakeGithub, GitServer) {
    let github = FakeGithub::start();
    let git = GitServer::start_with(github.token_check());
    git.create_repo(REPO, files).unwrap();
    github.add_repo(
        Repo::new(REPO)
            .default_branch("main")
            .clone_url(&git.url(REPO))
            .git_dir(git.repo_path(REPO)),
    );
    github.add_issue(REPO, Issue::new(ISSUE, "Keep dependencies current"));
    github.set_permission(REPO, "alice", Permission::Admin);
    (github, git)
}

/// The repository with `files` served by the bot, whose PyPI is `registry` (and the scripted
/// model with nothing to say: these chores need no agent).
async fn python_world(registry: &PackageRegistry, files: &[(&str, &str)]) -> World {
    let (github, git) = tracked_repo(files);
    let model = ScriptedModel::start(Script::new());
    World {
        bot: serve(github, git, model, "chores.pypi", registry.pypi_url()).await,
        registry: None,
    }
}

struct World {
    bot: Bot,
    registry: Option<CargoRegistry>,
}

impl World {
    /// Alice asks for the chore on the tracking issue; returns her comment's id.
    async fn ask(&self, delivery: &str) -> u64 {
        self.bot
            .comment((REPO, ISSUE), delivery, ("alice", "OWNER"), "@agent chore deps")
            .await
    }

    /// Waits for every job to end; the last one must have succeeded.
    async fn settled(&self) -> JobState {
        self.bot.settled().await;
        let jobs = self.bot.store().jobs(&JobFilter::default()).await.unwrap();
        let last = jobs.first().expect("no job was made");
        assert_eq!(last.state, JobState::Succeeded, "{last:#?}");
        last.state
    }

    /// The text of `path` on `branch` of the repository.
    fn branch_file(&self, branch: &str, path: &str) -> String {
        self.bot
            .git
            .show(REPO, &format!("refs/heads/{branch}"), path)
            .unwrap_or_else(|| panic!("no {path} on {branch}"))
    }

    fn pull_requests(&self) -> Vec<Issue> {
        self.bot.github.pull_requests(REPO)
    }

    fn bot_comments(&self) -> Vec<String> {
        self.bot.bot_comments_on(REPO, ISSUE)
    }
}

#[test]
fn updates_come_as_tested_pull_requests_a_breaking_one_is_reverted_and_later_runs_update_them() {
    super::harness::run_test(|| async move {
        let registry = CargoRegistry::start();
        registry
            .publish("calcutil", "1.0.0", &calcutil("1.0.0", "add"), &[])
            .unwrap();
        // fmtutil depends on bitutil, which only a whole-lockfile refresh moves.
        let bits = "pub const BITS: u32 = 32;\n";
        registry.publish("bitutil", "1.0.0", bits, &[]).unwrap();
        let bitutil = [("bitutil", "^1.0")];
        registry
            .publish("fmtutil", "0.3.1", &fmtutil("0.3.1"), &bitutil)
            .unwrap();
        let lock = lockfile(&registry);
        assert_eq!(locked(&lock, "calcutil"), ["1.0.0"]);
        // Newer versions: two inside the ranges, two majors, one of which renames `add`.
        registry
            .publish("calcutil", "1.1.0", &calcutil("1.1.0", "add"), &[])
            .unwrap();
        registry
            .publish("calcutil", "2.0.0", &calcutil("2.0.0", "sum"), &[])
            .unwrap();
        registry.publish("bitutil", "1.0.1", bits, &[]).unwrap();
        registry
            .publish("fmtutil", "0.4.0", &fmtutil("0.4.0"), &bitutil)
            .unwrap();

        let repo_config = "[agent]\ntest_command = \"cargo test\"\n\n[chores.deps]\nmajor = true\n";
        let (github, git) = tracked_repo(&[
            ("Cargo.toml", MANIFEST),
            ("Cargo.lock", &lock),
            ("src/lib.rs", LIB),
            (".cargo/config.toml", &cargo_config(&registry)),
            (".github/pitcrew.toml", repo_config),
        ]);
        let model = ScriptedModel::start(script());
        let index = registry.index_url();
        let world = World {
            bot: serve(github, git, model, "chores.cargo_index", index).await,
            registry: Some(registry),
        };

        let chore_1 = world.ask("chore-1").await;
        world.settled().await;
        world.bot.github.assert_no_violations();

        // Two pull requests: the lockfile refresh inside the ranges, and the majors.
        let pulls = world.pull_requests();
        assert_eq!(pulls.len(), 2, "{pulls:#?}");
        let by_branch = |branch: &str| {
            pulls
                .iter()
                .find(|p| p.pull.as_ref().unwrap().head.ref_name == branch)
                .unwrap_or_else(|| panic!("no pull request from {branch}: {pulls:#?}"))
                .clone()
        };
        let compatible = by_branch("pitcrew/deps-cargo");
        assert_eq!(compatible.title, "chore(deps): update cargo dependencies");
        let table = |pull: &Issue| -> Vec<String> {
            pull.body
                .as_deref()
                .unwrap_or_default()
                .lines()
                .filter(|line| line.starts_with("| `"))
                .map(str::to_owned)
                .collect()
        };
        assert_eq!(
            table(&compatible),
            [
                "| `bitutil` | `1.0.0` → `1.0.1` | lockfile | lockfile | — |",
                "| `calcutil` | `1.0.0` → `1.1.0` | lockfile | lockfile | — |",
            ]
        );
        assert!(
            compatible
                .body
                .as_deref()
                .unwrap_or_default()
                .contains("**Tests:** pass on the updated dependencies."),
            "{:?}",
            compatible.body
        );
        assert_eq!(compatible.pull.as_ref().unwrap().base.ref_name, "main");
        let lock = world.branch_file("pitcrew/deps-cargo", "Cargo.lock");
        assert_eq!(locked(&lock, "calcutil"), ["1.1.0"]);
        assert_eq!(world.branch_file("pitcrew/deps-cargo", "Cargo.toml"), MANIFEST);

        // The majors broke the build; the agent reverted calcutil and kept fmtutil.
        let major = by_branch("pitcrew/deps-cargo-major");
        assert_eq!(major.title, "chore(deps): major cargo updates", "{:?}", major.body);
        assert!(
            major
                .body
                .as_deref()
                .unwrap_or_default()
                .contains("| `fmtutil` | `0.3.1` → `0.4.0` | **major** |"),
            "{:?}",
            major.body
        );
        assert!(
            major
                .body
                .as_deref()
                .unwrap_or_default()
                .contains("Reverted because they could not be made to work: `calcutil`."),
            "{:?}",
            major.body
        );
        assert!(
            major
                .body
                .as_deref()
                .unwrap_or_default()
                .contains("pass after pitcrew adapted the code"),
            "{:?}",
            major.body
        );
        assert!(
            major
                .body
                .as_deref()
                .unwrap_or_default()
                .contains("renamed `add` to `sum`"),
            "{:?}",
            major.body
        );
        let manifest = world.branch_file("pitcrew/deps-cargo-major", "Cargo.toml");
        assert!(manifest.contains("calcutil = \"1.0\"\nfmtutil = \"0.4\""), "{manifest}");
        let lock = world.branch_file("pitcrew/deps-cargo-major", "Cargo.lock");
        assert_eq!(locked(&lock, "fmtutil"), ["0.4.0"]);
        assert_eq!(locked(&lock, "bitutil"), ["1.0.0"]);
        // One lockfile story: the majors' refresh moved only what its edits needed (fmtutil; bitutil
        // stays), not the compatible pull request's refresh. The agent's revert of calcutil let cargo lock it
        // anew inside its range, which the table says, as the compatible pull request's same
        // change; the two merge in either order.
        assert_eq!(
            table(&major),
            [
                "| `fmtutil` | `0.3.1` → `0.4.0` | **major** | `Cargo.toml` `dependencies` | — |",
                "| `calcutil` | `1.0.0` → `1.1.0` | lockfile | lockfile | — |",
            ]
        );
        for (ours, theirs) in [
            ("pitcrew/deps-cargo", "pitcrew/deps-cargo-major"),
            ("pitcrew/deps-cargo-major", "pitcrew/deps-cargo"),
        ] {
            if let Err(conflicts) = world.bot.git.merge_tree(REPO, ours, theirs) {
                panic!("{theirs} does not merge into {ours}:\n{conflicts}");
            }
        }
        // The agent was told what changed and what failed.
        let prompt = world.bot.model.requests()[0].body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_owned();
        assert!(
            prompt.contains("cargo calcutil: 1.0.0 -> 2.0.0 (major, in Cargo.toml"),
            "{prompt}"
        );
        assert!(prompt.contains("The project's tests fail after the update"), "{prompt}");
        world.bot.model.assert_script_consumed();
        let answer = world.bot_comments().pop().unwrap();
        assert!(
            answer.contains("(opened)") && answer.contains(&format!("#{}", compatible.number)),
            "{answer}"
        );

        // A week later: a newer calcutil 1.x, and the repository no longer wants majors. The open pull
        // request is updated in place and the majors' one is closed.
        world
            .registry
            .as_ref()
            .unwrap()
            .publish("calcutil", "1.2.0", &calcutil("1.2.0", "add"), &[])
            .unwrap();
        world.bot.github.add_file(
            REPO,
            "main",
            ".github/pitcrew.toml",
            "[agent]\ntest_command = \"cargo test\"\n\n[chores.deps]\nmajor = false\n",
        );
        let chore_2 = world.ask("chore-2").await;
        world.settled().await;
        world.bot.github.assert_no_violations();
        let after = world.pull_requests();
        assert_eq!(after.len(), 2, "no new pull request: {after:#?}");
        let updated = after.iter().find(|p| p.number == compatible.number).unwrap();
        assert_eq!(updated.title, "chore(deps): update cargo dependencies");
        assert_eq!(
            table(updated),
            [
                "| `bitutil` | `1.0.0` → `1.0.1` | lockfile | lockfile | — |",
                "| `calcutil` | `1.0.0` → `1.2.0` | lockfile | lockfile | — |",
            ]
        );
        assert_eq!(updated.state, "open");
        assert_eq!(
            locked(&world.branch_file("pitcrew/deps-cargo", "Cargo.lock"), "calcutil"),
            ["1.2.0"]
        );
        let closed = after.iter().find(|p| p.number == major.number).unwrap();
        assert_eq!(closed.state, "closed");
        let answer = world.bot_comments().pop().unwrap();
        assert!(answer.contains("(updated)"), "{answer}");
        let closing = world.bot.bot_comments_on(REPO, major.number);
        assert_eq!(closing.len(), 1, "{closing:#?}");
        assert!(
            closing[0].starts_with("Closing: a newer dependency run found nothing left"),
            "{closing:#?}"
        );
        for ask in [chore_1, chore_2] {
            assert_eq!(world.bot.reactions_on_comment(ask), ["eyes"]);
        }
        world.bot
    });
}

#[test]
fn an_npm_lockfile_is_refreshed_inside_its_ranges_by_real_npm() {
    if Command::new("npm").arg("--version").output().is_err() {
        println!("SKIPPED: this test needs npm");
        return;
    }
    super::harness::run_test(|| async move {
        let registry = PackageRegistry::start();
        registry.npm_publish("left-pad", "1.1.0", &[]).unwrap();
        let package_json = "{\n  \"name\": \"app\",\n  \"version\": \"1.0.0\",\n  \"dependencies\": {\n    \"left-pad\": \"^1.1.0\"\n  }\n}\n";
        let project = TempDir::new().unwrap();
        std::fs::write(project.path().join("package.json"), package_json).unwrap();
        let npm_home = TempDir::new().unwrap();
        let lock = Command::new("npm")
            .args([
                "install",
                "--package-lock-only",
                "--ignore-scripts",
                "--no-audit",
                "--no-fund",
                "--registry",
            ])
            .arg(registry.npm_url())
            .current_dir(project.path())
            .env("npm_config_cache", npm_home.path().join("cache"))
            .env("npm_config_userconfig", npm_home.path().join("npmrc"))
            .output()
            .unwrap();
        assert!(lock.status.success(), "{}", String::from_utf8_lossy(&lock.stderr));
        let package_lock = std::fs::read_to_string(project.path().join("package-lock.json")).unwrap();
        // Newer: one inside `^1.1.0`, one major (not wanted by default).
        registry.npm_publish("left-pad", "1.2.0", &[]).unwrap();
        registry.npm_publish("left-pad", "2.0.0", &[]).unwrap();

        let (github, git) = tracked_repo(&[
            ("package.json", package_json),
            ("package-lock.json", &package_lock),
            (".github/pitcrew.toml", "[agent]\ntest_command = \"true\"\n"),
        ]);
        let model = ScriptedModel::start(Script::new());
        let world = World {
            bot: serve(github, git, model, "chores.npm_registry", registry.npm_url()).await,
            registry: None,
        };
        let npm_1 = world.ask("npm-1").await;
        world.settled().await;
        world.bot.github.assert_no_violations();

        let pulls = world.pull_requests();
        assert_eq!(pulls.len(), 1, "{pulls:#?}");
        assert_eq!(pulls[0].title, "chore(deps): update left-pad to 1.2.0");
        assert_eq!(pulls[0].pull.as_ref().unwrap().head.ref_name, "pitcrew/deps-npm");
        let body = pulls[0].body.clone().unwrap_or_default();
        assert!(
            body.contains("| `left-pad` | `1.1.0` → `1.2.0` | lockfile | lockfile |"),
            "{body}"
        );
        let lock: serde_json::Value =
            serde_json::from_str(&world.branch_file("pitcrew/deps-npm", "package-lock.json")).unwrap();
        assert_eq!(lock["packages"]["node_modules/left-pad"]["version"], "1.2.0");
        assert_eq!(world.branch_file("pitcrew/deps-npm", "package.json"), package_json);
        assert!(world.bot.model.requests().is_empty());

        // Someone closes it without merging: the same updates are not proposed again…
        let number = pulls[0].number;
        world
            .bot
            .github
            .update_issue(REPO, number, |i| "closed".clone_into(&mut i.state));
        let branch_before = world.bot.git.rev_parse(REPO, "refs/heads/pitcrew/deps-npm");
        let npm_2 = world.ask("npm-2").await;
        world.settled().await;
        assert_eq!(
            world.pull_requests().len(),
            1,
            "no new pull request for the same updates"
        );
        assert_eq!(
            world.bot.git.rev_parse(REPO, "refs/heads/pitcrew/deps-npm"),
            branch_before,
            "and nothing pushed"
        );
        let answer = world.bot_comments().pop().unwrap();
        assert!(answer.contains("was closed without merging"), "{answer}");
        // …until a newer version changes them.
        registry.npm_publish("left-pad", "1.3.0", &[]).unwrap();
        let npm_3 = world.ask("npm-3").await;
        world.settled().await;
        let pulls = world.pull_requests();
        assert_eq!(pulls.len(), 2, "{pulls:#?}");
        assert!(
            pulls
                .iter()
                .any(|p| p.title == "chore(deps): update left-pad to 1.3.0" && p.state == "open")
        );
        let lock: serde_json::Value =
            serde_json::from_str(&world.branch_file("pitcrew/deps-npm", "package-lock.json")).unwrap();
        assert_eq!(lock["packages"]["node_modules/left-pad"]["version"], "1.3.0");
        let answer = world.bot_comments().pop().unwrap();
        assert!(answer.contains("update left-pad to 1.3.0 (opened)"), "{answer}");
        for ask in [npm_1, npm_2, npm_3] {
            assert_eq!(world.bot.reactions_on_comment(ask), ["eyes"]);
        }
        world.bot.github.assert_no_violations();
        world.bot
    });
}

#[test]
fn lookups_that_fail_are_said_in_the_pull_request_and_never_end_in_a_plain_success() {
    super::harness::run_test(|| async move {
        let registry = PackageRegistry::start();
        for version in ["2.30.0", "2.31.0"] {
            registry.pypi_release("requests", version, false).unwrap();
        }
        // `ghost-package` is in no registry: its lookup fails (as every lookup does behind a
        // proxy whose certificate is not trusted).
        let world = python_world(
            &registry,
            &[
                ("requirements.txt", "requests==2.30.0\nghost-package==1.0\n"),
                (
                    ".github/pitcrew.toml",
                    "[agent]\ntest_command = \"true\"\n\n[chores.deps]\nupdate_pinned = true\n",
                ),
            ],
        )
        .await;

        // One update goes out, and says what it could not check; the run is neutral.
        let first = world.ask("lookups-1").await;
        world.bot.settled().await;
        let jobs = world.bot.store().jobs(&JobFilter::default()).await.unwrap();
        assert_eq!(jobs[0].state, JobState::Succeeded, "{:#?}", jobs[0]);
        let result = jobs[0].result.clone().unwrap_or_default();
        assert_eq!(result["conclusion"], "neutral", "{result:#}");
        assert_eq!(
            result["headline"], "1 dependency pull request; 1 lookup(s) failed",
            "{result:#}"
        );
        let pulls = world.pull_requests();
        assert_eq!(pulls.len(), 1, "{pulls:#?}");
        assert_eq!(pulls[0].title, "chore(deps): update requests to 2.31.0");
        let body = pulls[0].body.clone().unwrap_or_default();
        assert!(
            body.contains(
                "**Not checked:** 1 dependency could not be looked up, so this pull request may be missing their updates:"
            ) && body.contains("`ghost-package`"),
            "{body}"
        );
        assert_eq!(
            world.branch_file("pitcrew/deps-python", "requirements.txt"),
            "requests==2.31.0\nghost-package==1.0\n"
        );
        let answer = world.bot_comments().pop().unwrap();
        assert!(answer.contains("`ghost-package`"), "{answer}");

        // Only the failing lookup left: nothing can be proposed, and the job fails saying why.
        world
            .bot
            .git
            .commit(
                REPO,
                "main",
                &[("requirements.txt", "ghost-package==1.0\n")],
                "drop requests",
            )
            .unwrap();
        let second = world.ask("lookups-2").await;
        world.bot.settled().await;
        let jobs = world.bot.store().jobs(&JobFilter::default()).await.unwrap();
        assert_eq!(jobs[0].state, JobState::Failed, "{:#?}", jobs[0]);
        assert!(
            jobs[0].error.as_deref().unwrap_or_default().contains("`ghost-package`"),
            "{:#?}",
            jobs[0]
        );
        let answer = world.bot_comments().pop().unwrap();
        assert!(answer.contains("`ghost-package`"), "{answer}");
        // Its pull request stays: the updates in it are still wanted.
        assert_eq!(world.pull_requests()[0].state, "open");
        for ask in [first, second] {
            assert_eq!(world.bot.reactions_on_comment(ask), ["eyes"]);
        }
        world.bot
    });
}

#[test]
fn an_excluded_crate_is_left_alone_and_only_the_chore_s_files_are_committed() {
    super::harness::run_test(|| async move {
        let registry = CargoRegistry::start();
        registry
            .publish("calcutil", "1.0.0", &calcutil("1.0.0", "add"), &[])
            .unwrap();
        registry.publish("fmtutil", "0.3.1", &fmtutil("0.3.1"), &[]).unwrap();
        let lock = lockfile(&registry);
        registry
            .publish("calcutil", "1.1.0", &calcutil("1.1.0", "add"), &[])
            .unwrap();
        // The workspace excludes its fuzzing crate, which has no lockfile and no test of the
        // workspace builds it; a compatible update outside its `~1.0` is there for it.
        let manifest = format!("{MANIFEST}exclude = [\"fuzz\"]\n");
        let fuzz = "[package]\nname = \"tally-fuzz\"\nversion = \"0.0.0\"\npublish = false\n\n\
                    [dependencies]\ncalcutil = \"~1.0\"\n";
        // The tests leave what a Python test run leaves (no .gitignore says otherwise): byte-code,
        // pytest's cache, a virtual environment.
        let test_command = "cargo test && mkdir -p tests/__pycache__ .pytest_cache/v venv \
                            && echo x > tests/__pycache__/test_tally.cpython-312.pyc \
                            && echo '{}' > .pytest_cache/v/lastfailed \
                            && echo 'home = /usr' > venv/pyvenv.cfg && echo x > venv/site.py";
        let (github, git) = tracked_repo(&[
            ("Cargo.toml", &manifest),
            ("Cargo.lock", &lock),
            ("src/lib.rs", LIB),
            ("fuzz/Cargo.toml", fuzz),
            (".cargo/config.toml", &cargo_config(&registry)),
            (
                ".github/pitcrew.toml",
                &format!("[agent]\ntest_command = {test_command:?}\n"),
            ),
        ]);
        let model = ScriptedModel::start(Script::new());
        let index = registry.index_url();
        let world = World {
            bot: serve(github, git, model, "chores.cargo_index", index).await,
            registry: Some(registry),
        };
        let ask = world.ask("excluded-1").await;
        world.settled().await;
        world.bot.github.assert_no_violations();

        let pulls = world.pull_requests();
        assert_eq!(pulls.len(), 1, "{pulls:#?}");
        let body = pulls[0].body.clone().unwrap_or_default();
        assert!(
            body.contains("| `calcutil` | `1.0.0` → `1.1.0` | lockfile | lockfile | — |"),
            "{body}"
        );
        assert!(
            body.contains(
                "**Not updated:**\n\n- fuzz/Cargo.toml — outside the workspace (the root Cargo.toml excludes it: \
                 Cargo.lock does not lock it and the workspace's tests do not build it): `calcutil` 1.1.0"
            ),
            "{body}"
        );
        let branch = "pitcrew/deps-cargo";
        assert_eq!(world.branch_file(branch, "fuzz/Cargo.toml"), fuzz);
        assert_eq!(locked(&world.branch_file(branch, "Cargo.lock"), "calcutil"), ["1.1.0"]);
        for leftover in [
            "tests/__pycache__/test_tally.cpython-312.pyc",
            ".pytest_cache/v/lastfailed",
            "venv/pyvenv.cfg",
            "venv/site.py",
        ] {
            assert_eq!(
                world.bot.git.show(REPO, &format!("refs/heads/{branch}"), leftover),
                None,
                "{leftover} was committed"
            );
        }
        // The test command ran to its end, so its leavings were there to commit.
        assert!(body.contains("**Tests:** pass on the updated dependencies."), "{body}");
        assert!(world.bot.model.requests().is_empty());
        let answer = world.bot_comments().pop().unwrap();
        assert!(answer.contains("update calcutil to 1.1.0 (opened)"), "{answer}");
        assert_eq!(world.bot.reactions_on_comment(ask), ["eyes"]);
        world.bot
    });
}

#[test]
fn python_releases_that_do_not_install_on_the_projects_python_are_held_back_and_each_marker_line_is_its_own() {
    super::harness::run_test(|| async move {
        let registry = PackageRegistry::start();
        for (name, version, python) in [
            ("pytest", "8.2.0", ">=3.8"),
            ("pytest", "8.3.5", ">=3.8"),
            ("pytest", "8.4.2", ">=3.9"),
            ("numpy", "1.24.4", ">=3.8"),
            ("numpy", "1.25.0", ">=3.9"),
            ("numpy", "1.26.4", ">=3.9"),
        ] {
            registry.pypi_release_requiring(name, version, python).unwrap();
        }
        let world = python_world(
            &registry,
            &[
                (
                    "pyproject.toml",
                    "[project]\nname = \"app\"\nrequires-python = \">=3.8\"\n",
                ),
                (
                    "requirements.txt",
                    "pytest==8.2.0\nnumpy==1.24.4; python_version<\"3.9\"\nnumpy==1.25.0; python_version>=\"3.9\"\n",
                ),
                (
                    ".github/pitcrew.toml",
                    "[agent]\ntest_command = \"true\"\n\n[chores.deps]\nupdate_pinned = true\n",
                ),
            ],
        )
        .await;
        let ask = world.ask("python-floor").await;
        world.bot.settled().await;
        let jobs = world.bot.store().jobs(&JobFilter::default()).await.unwrap();
        assert_eq!(jobs[0].state, JobState::Succeeded, "{:#?}", jobs[0]);
        let pulls = world.pull_requests();
        assert_eq!(pulls.len(), 1, "{pulls:#?}");
        // pytest 8.4.2 needs Python 3.9: 8.3.5 is proposed. The 3.8 line of numpy has nothing
        // newer that installs on 3.8; the 3.9 line moves on its own.
        assert_eq!(
            world.branch_file("pitcrew/deps-python", "requirements.txt"),
            "pytest==8.3.5\nnumpy==1.24.4; python_version<\"3.9\"\nnumpy==1.26.4; python_version>=\"3.9\"\n"
        );
        let body = pulls[0].body.clone().unwrap_or_default();
        assert!(
            body.contains("**Held back** for the declared Python (raise it to take them):"),
            "{body}"
        );
        assert!(
            body.contains(
                "- `pytest` `8.4.2` needs Python `>=3.9`; the requirement is for Python `>=3.8 (requires-python)` \
                 (`8.3.5` is proposed instead)"
            ),
            "{body}"
        );
        assert!(
            body.contains(
                "- `numpy` `1.26.4` needs Python `>=3.9`; the requirement is for Python `>=3.8 (requires-python), \
                 under python_version<\"3.9\"`\n"
            ),
            "{body}"
        );
        assert!(!body.contains("8.4.2 |"), "{body}");
        assert_eq!(pulls[0].title, "chore(deps): update python dependencies");
        let answer = world.bot_comments().pop().unwrap();
        assert!(answer.contains("update python dependencies (opened)"), "{answer}");
        assert_eq!(world.bot.reactions_on_comment(ask), ["eyes"]);
        world.bot
    });
}

/// `uv.lock` of a project with `pyproject`, made by the host's uv against `registry`.
fn uv_lock(registry: &PackageRegistry, pyproject: &str) -> String {
    let dir = TempDir::new().unwrap();
    std::fs::write(dir.path().join("pyproject.toml"), pyproject).unwrap();
    let output = Command::new("uv")
        .args(["lock", "--no-cache"])
        .env("UV_DEFAULT_INDEX", format!("{}simple", registry.pypi_url()))
        .current_dir(dir.path())
        .output()
        .expect("the chore tests need uv (python3 -m pip install uv)");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    std::fs::read_to_string(dir.path().join("uv.lock")).unwrap()
}

#[test]
fn a_uv_lock_is_refreshed_with_its_manifest_and_one_that_cannot_be_leaves_the_manifest_alone() {
    super::harness::run_test(|| async move {
        let registry = PackageRegistry::start();
        registry.pypi_release_requiring("tinydep", "1.0.0", ">=3.8").unwrap();
        registry.pypi_release("otherdep", "1.0.0", false).unwrap();
        let pyproject = "[project]\nname = \"app\"\nversion = \"0.1.0\"\nrequires-python = \">=3.8\"\ndependencies = [\"tinydep==1.0.0\"]\n";
        let lock = uv_lock(&registry, pyproject);
        assert!(lock.contains("name = \"tinydep\"\nversion = \"1.0.0\""), "{lock}");
        registry.pypi_release_requiring("tinydep", "1.1.0", ">=3.8").unwrap();
        let world = python_world(
            &registry,
            &[
                ("pyproject.toml", pyproject),
                ("uv.lock", &lock),
                ("requirements.txt", "otherdep==1.0.0\n"),
                (
                    ".github/pitcrew.toml",
                    "[agent]\ntest_command = \"true\"\n\n[chores.deps]\nupdate_pinned = true\n",
                ),
            ],
        )
        .await;

        // uv brings its lockfile in line with the edited manifest.
        let first = world.ask("uv-1").await;
        world.settled().await;
        let pulls = world.pull_requests();
        assert_eq!(pulls.len(), 1, "{pulls:#?}");
        assert_eq!(pulls[0].title, "chore(deps): update tinydep to 1.1.0");
        assert!(
            world
                .branch_file("pitcrew/deps-python", "pyproject.toml")
                .contains("\"tinydep==1.1.0\"")
        );
        let refreshed = world.branch_file("pitcrew/deps-python", "uv.lock");
        assert!(
            refreshed.contains("name = \"tinydep\"\nversion = \"1.1.0\""),
            "{refreshed}"
        );
        assert!(!refreshed.contains("1.0.0.tar.gz"), "{refreshed}");
        let body = pulls[0].body.clone().unwrap_or_default();
        assert!(!body.contains("Not updated"), "{body}");
        let answer = world.bot_comments().pop().unwrap();
        assert!(answer.contains("update tinydep to 1.1.0 (opened)"), "{answer}");

        // A release uv cannot lock (it needs a Python no one has; the project's floor is gone, so
        // pitcrew proposes it): the manifest stays as it was, with its lock, and the pull request
        // says why; the other update still goes out.
        world
            .bot
            .git
            .commit(
                REPO,
                "main",
                &[(
                    "pyproject.toml",
                    "[project]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\"tinydep==1.0.0\"]\n",
                )],
                "no floor",
            )
            .unwrap();
        registry.pypi_release_requiring("tinydep", "1.2.0", ">=3.99").unwrap();
        registry.pypi_release("otherdep", "1.1.0", false).unwrap();
        let second = world.ask("uv-2").await;
        world.settled().await;
        let pulls = world.pull_requests();
        assert_eq!(pulls.len(), 1, "{pulls:#?}");
        assert_eq!(
            pulls[0].title, "chore(deps): update otherdep to 1.1.0",
            "{:?}",
            pulls[0].body
        );
        assert_eq!(
            world.branch_file("pitcrew/deps-python", "requirements.txt"),
            "otherdep==1.1.0\n"
        );
        assert!(
            world
                .branch_file("pitcrew/deps-python", "pyproject.toml")
                .contains("\"tinydep==1.0.0\"")
        );
        assert_eq!(world.branch_file("pitcrew/deps-python", "uv.lock"), lock);
        let body = pulls[0].body.clone().unwrap_or_default();
        assert!(
            body.contains(
                "**Not updated:**\n\n- pyproject.toml: not updated (tinydep 1.2.0), because uv.lock could not be \
                 refreshed:"
            ),
            "{body}"
        );
        let answer = world.bot_comments().pop().unwrap();
        assert!(answer.contains("update otherdep to 1.1.0"), "{answer}");
        for ask in [first, second] {
            assert_eq!(world.bot.reactions_on_comment(ask), ["eyes"]);
        }
        world.bot
    });
}

#[test]
fn chore_pull_requests_get_their_labels_assignees_and_reviewers_and_no_more_open_than_allowed() {
    super::harness::run_test(|| async move {
        let registry = PackageRegistry::start();
        for version in ["1.0.0", "1.1.0", "2.0.0"] {
            registry.pypi_release("tinydep", version, false).unwrap();
        }
        let world = python_world(
            &registry,
            &[
                ("requirements.txt", "tinydep==1.0.0\n"),
                (
                    ".github/pitcrew.toml",
                    "[agent]\ntest_command = \"true\"\n\n[chores.deps]\nupdate_pinned = true\nmajor = true\n\
                 labels = [\"dependencies\", \"python\"]\nreviewers = [\"carol\", \"acme/platform\"]\n\
                 assignees = [\"bob\"]\nmax_open_prs = 1\n",
                ),
            ],
        )
        .await;

        // The compatible update opens; the major waits for the one open pull request.
        let first = world.ask("limits-1").await;
        world.settled().await;
        let pulls = world.pull_requests();
        assert_eq!(pulls.len(), 1, "{pulls:#?}");
        let pull = &pulls[0];
        assert_eq!(pull.title, "chore(deps): update tinydep to 1.1.0");
        assert_eq!(pull.labels, ["dependencies", "python"]);
        assert_eq!(pull.assignees, ["bob"]);
        let asked = pull.pull.as_ref().unwrap();
        assert_eq!(
            (asked.requested_reviewers.as_slice(), asked.requested_teams.as_slice()),
            (["carol".to_owned()].as_slice(), ["platform".to_owned()].as_slice())
        );
        let answer = world.bot_comments().pop().unwrap();
        assert!(answer.contains("update tinydep to 1.1.0 (opened)"), "{answer}");
        assert!(
            answer.contains(
                "Waiting: `pitcrew/deps-python-major` — 1 chore pull request may be open at once (`max_open_prs`); a \
                 later run opens it once one is merged or closed."
            ),
            "{answer}"
        );
        assert_eq!(
            world.branch_file("pitcrew/deps-python", "requirements.txt"),
            "tinydep==1.1.0\n"
        );
        assert!(
            world
                .bot
                .git
                .show(REPO, "refs/heads/pitcrew/deps-python-major", "requirements.txt")
                .is_none()
        );

        // Once it is closed, the major's turn comes.
        let number = pull.number;
        world
            .bot
            .github
            .update_issue(REPO, number, |issue| issue.state = "closed".to_owned());
        let second = world.ask("limits-2").await;
        world.settled().await;
        let pulls = world.pull_requests();
        let major = pulls
            .iter()
            .find(|p| p.state == "open")
            .unwrap_or_else(|| panic!("{pulls:#?}"));
        assert_eq!(major.title, "chore(deps): update tinydep to 2.0.0 (major)");
        assert_eq!(major.labels, ["dependencies", "python"]);
        assert_eq!(
            world.branch_file("pitcrew/deps-python-major", "requirements.txt"),
            "tinydep==2.0.0\n"
        );
        let answer = world.bot_comments().pop().unwrap();
        assert!(answer.contains("update tinydep to 2.0.0 (major) (opened)"), "{answer}");
        assert!(!answer.contains("Waiting"), "{answer}");
        for ask in [first, second] {
            assert_eq!(world.bot.reactions_on_comment(ask), ["eyes"]);
        }
        world.bot
    });
}

/// `LIB` with `extra` tests in its test module.
fn lib_with_tests(extra: &str) -> String {
    LIB.replacen("mod tests {\n", &format!("mod tests {{\n{extra}"), 1)
}

/// A test that failed long before any update.
const ALREADY_BROKEN: &str = "    #[test]\n    fn already_broken() {\n        assert_eq!(super::total(1, 1), \"3\", \"never right\");\n    }\n\n";
/// A test that holds only while calcutil 1.0.0 is locked.
const KNOWS_ITS_CALCUTIL: &str =
    "    #[test]\n    fn knows_its_calcutil() {\n        assert_eq!(calcutil::VERSION, \"1.0.0\");\n    }\n\n";

/// The `tally` crate with `lib` as its code, locked to calcutil 1.0.0 and fmtutil 0.3.1, then
/// `newer` calcutil releases (version, name of its adding function) published; the repository
/// wants majors when `major`. The bot serves with the scripted model of `script`.
async fn tally(lib: &str, newer: &[(&str, &str)], major: bool, script: Script) -> World {
    let registry = CargoRegistry::start();
    registry
        .publish("calcutil", "1.0.0", &calcutil("1.0.0", "add"), &[])
        .unwrap();
    registry.publish("fmtutil", "0.3.1", &fmtutil("0.3.1"), &[]).unwrap();
    let lock = lockfile(&registry);
    for (version, function) in newer {
        registry
            .publish("calcutil", version, &calcutil(version, function), &[])
            .unwrap();
    }
    let repo_config = format!("[agent]\ntest_command = \"cargo test\"\n\n[chores.deps]\nmajor = {major}\n");
    let (github, git) = tracked_repo(&[
        ("Cargo.toml", MANIFEST),
        ("Cargo.lock", &lock),
        ("src/lib.rs", lib),
        (".cargo/config.toml", &cargo_config(&registry)),
        (".github/pitcrew.toml", &repo_config),
    ]);
    let index = registry.index_url();
    World {
        bot: serve(github, git, ScriptedModel::start(script), "chores.cargo_index", index).await,
        registry: Some(registry),
    }
}

impl World {
    /// The chore answered `ask`: seen, and one pull request opened.
    fn answered(&self, ask: u64) {
        assert_eq!(self.bot.reactions_on_comment(ask), ["eyes"]);
        let answer = self.bot_comments().pop().unwrap();
        assert!(answer.contains("(opened)"), "{answer}");
    }

    /// The body of the one open pull request from `branch`.
    fn body_from(&self, branch: &str) -> String {
        let pulls = self.pull_requests();
        let pull = pulls
            .iter()
            .find(|p| p.pull.as_ref().is_some_and(|p| p.head.ref_name == branch))
            .unwrap_or_else(|| panic!("no pull request from {branch}: {pulls:#?}"));
        pull.body.clone().unwrap_or_default()
    }

    /// The first user message the model was sent.
    fn first_prompt(&self) -> String {
        let requests = self.bot.model.requests();
        let first = requests.first().expect("the model got no request");
        first.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_owned()
    }
}

#[test]
fn a_test_that_failed_before_the_update_is_no_reason_to_run_the_agent() {
    super::harness::run_test(|| async move {
        let world = tally(
            &lib_with_tests(ALREADY_BROKEN),
            &[("1.1.0", "add")],
            false,
            Script::new(),
        )
        .await;
        let ask = world.ask("baseline-1").await;
        world.settled().await;
        world.answered(ask);
        world.bot.github.assert_no_violations();

        // The update broke nothing: no agent, and the pull request tells the failure apart.
        assert!(world.bot.model.requests().is_empty(), "the agent was run");
        let body = world.body_from("pitcrew/deps-cargo");
        assert!(
            body.contains("| `calcutil` | `1.0.0` → `1.1.0` | lockfile | lockfile |"),
            "{body}"
        );
        assert!(
            body.contains("**Tests:** the update breaks nothing: what fails failed before it too (below)."),
            "{body}"
        );
        assert!(
            body.contains("**Failing before the update too (1):** `tests::already_broken`"),
            "{body}"
        );
        assert!(!body.contains("Broken by the update"), "{body}");
        assert_eq!(
            locked(&world.branch_file("pitcrew/deps-cargo", "Cargo.lock"), "calcutil"),
            ["1.1.0"]
        );
        world.bot
    });
}

#[test]
fn the_agent_is_told_only_what_the_update_broke() {
    super::harness::run_test(|| async move {
        let lib = lib_with_tests(&format!("{ALREADY_BROKEN}{KNOWS_ITS_CALCUTIL}"));
        let script = Script::new().turn(Reply::text(
            "`knows_its_calcutil` pins calcutil's version string on purpose; I left it for a person to decide.",
        ));
        let world = tally(&lib, &[("1.1.0", "add")], false, script).await;
        let ask = world.ask("baseline-2").await;
        world.settled().await;
        world.answered(ask);
        world.bot.github.assert_no_violations();
        world.bot.model.assert_script_consumed();

        let prompt = world.first_prompt();
        assert!(
            prompt.contains("1 test fails that did not fail before the update:\n\n- tests::knows_its_calcutil"),
            "{prompt}"
        );
        assert!(!prompt.contains("already_broken"), "{prompt}");
        assert!(
            prompt.contains("1 other failure failed before the update too"),
            "{prompt}"
        );

        let body = world.body_from("pitcrew/deps-cargo");
        assert!(
            body.contains(
                "**Tests:** still fail after the update: 1 test fails that did not fail before (1 passed, 2 failed). Review \
                 before merging."
            ),
            "{body}"
        );
        assert!(
            body.contains("**Broken by the update (1):** `tests::knows_its_calcutil`"),
            "{body}"
        );
        assert!(
            body.contains("**Failing before the update too (1):** `tests::already_broken`"),
            "{body}"
        );
        // The agent left the update in.
        assert_eq!(
            locked(&world.branch_file("pitcrew/deps-cargo", "Cargo.lock"), "calcutil"),
            ["1.1.0"]
        );
        world.bot
    });
}

#[test]
fn a_compile_error_after_the_update_is_reported_as_one() {
    super::harness::run_test(|| async move {
        let script = Script::new().turn(Reply::text(
            "calcutil 2.0 renamed `add` to `sum`; not adapted, so that a person reads the release notes first.",
        ));
        let world = tally(&lib_with_tests(ALREADY_BROKEN), &[("2.0.0", "sum")], true, script).await;
        let ask = world.ask("baseline-3").await;
        world.settled().await;
        world.answered(ask);
        world.bot.github.assert_no_violations();
        world.bot.model.assert_script_consumed();

        let prompt = world.first_prompt();
        assert!(
            prompt.contains(
                "The project no longer builds: 1 compile error.\n\n- error[E0425]: cannot find function `add`"
            ),
            "{prompt}"
        );
        assert!(!prompt.contains("already_broken"), "{prompt}");

        let body = world.body_from("pitcrew/deps-cargo-major");
        assert!(
            body.contains(
                "**Tests:** still fail after the update: the project does not build (1 compile error). Review before \
                 merging."
            ),
            "{body}"
        );
        assert!(body.contains("**Compile errors:**\n\n- `src/lib.rs:2`: "), "{body}");
        assert!(!body.contains("0 passed"), "{body}");
        let manifest = world.branch_file("pitcrew/deps-cargo-major", "Cargo.toml");
        assert!(manifest.contains("calcutil = \"2.0\""), "{manifest}");
        world.bot
    });
}

/// The repository of `tinydep` and `otherdep`, both pinned at 1.0.0 with 1.1.0 out (and 2.0.0 of
/// tinydep), and `extra` in its `[chores.deps]`; the bot serves against the package registry.
async fn two_pins(extra: &str) -> (World, PackageRegistry) {
    let registry = PackageRegistry::start();
    for version in ["1.0.0", "1.1.0", "2.0.0"] {
        registry.pypi_release("tinydep", version, false).unwrap();
    }
    for version in ["1.0.0", "1.1.0"] {
        registry.pypi_release("otherdep", version, false).unwrap();
    }
    let config = format!("[agent]\ntest_command = \"true\"\n\n[chores.deps]\nupdate_pinned = true\n{extra}");
    let world = python_world(
        &registry,
        &[
            ("requirements.txt", "tinydep==1.0.0\notherdep==1.0.0\n"),
            (".github/pitcrew.toml", &config),
        ],
    )
    .await;
    (world, registry)
}

impl World {
    /// `login` (with `association`) comments `body` on `number`; returns the comment's id once
    /// every job it started has ended.
    async fn command(&self, number: u64, delivery: &str, who: (&str, &str), body: &str) -> u64 {
        let id = self.bot.comment((REPO, number), delivery, who, body).await;
        self.bot.settled().await;
        id
    }

    /// The bot's open issues that are not pull requests (marked seen).
    fn bot_issues(&self) -> Vec<Issue> {
        let bot = self.bot.github.bot_login();
        let numbers: Vec<u64> = self.bot.github.state(|s| {
            s.issues
                .iter()
                .filter(|((repo, _), issue)| repo == REPO && issue.pull.is_none() && issue.user == bot)
                .map(|((_, number), _)| *number)
                .collect()
        });
        numbers
            .into_iter()
            .filter_map(|n| self.bot.github.state(|s| s.issue_seen(REPO, n).cloned()))
            .collect()
    }

    /// The one dependency dashboard's body.
    fn dashboard(&self) -> (u64, String) {
        let issues = self.bot_issues();
        assert_eq!(issues.len(), 1, "{issues:#?}");
        assert_eq!(issues[0].title, "Dependency dashboard");
        (issues[0].number, issues[0].body.clone().unwrap_or_default())
    }

    /// The open pull request from `branch`.
    fn open_from(&self, branch: &str) -> Issue {
        let pulls = self.pull_requests();
        pulls
            .iter()
            .find(|p| p.state == "open" && p.pull.as_ref().is_some_and(|p| p.head.ref_name == branch))
            .unwrap_or_else(|| panic!("no open pull request from {branch}: {pulls:#?}"))
            .clone()
    }
}

#[test]
fn ignore_on_a_chore_pull_request_is_recorded_on_the_dashboard_and_the_next_run_leaves_the_package() {
    super::harness::run_test(|| async move {
        let (world, _registry) = two_pins("").await;
        world.bot.github.set_permission(REPO, "mallory", Permission::Read);
        let first = world.ask("ignore-1").await;
        world.settled().await;
        let pull = world.open_from("pitcrew/deps-python");
        assert_eq!(
            world.branch_file("pitcrew/deps-python", "requirements.txt"),
            "tinydep==1.1.0\notherdep==1.1.0\n"
        );

        // Someone who may not trigger the bot (GitHub says: read access) cannot make it ignore
        // anything.
        world
            .command(
                pull.number,
                "ignore-2",
                ("mallory", "CONTRIBUTOR"),
                "@agent ignore tinydep",
            )
            .await;
        let refusal = world.bot.bot_comments_on(REPO, pull.number).pop().unwrap();
        assert!(refusal.contains("only people with write access"), "{refusal}");
        assert!(world.bot_issues().is_empty());

        // Words that name no package of this pull request record nothing.
        let words = world
            .command(pull.number, "ignore-2b", ("alice", "OWNER"), "@agent ignore this")
            .await;
        let answer = world.bot.bot_comments_on(REPO, pull.number).pop().unwrap();
        assert!(
            answer.contains(
                "`this` is not a package this pull request updates (`tinydep`, `otherdep`), so nothing was ignored."
            ),
            "{answer}"
        );
        assert!(world.bot_issues().is_empty());

        // Alice can: the dashboard issue records it.
        let ignore = world
            .command(pull.number, "ignore-3", ("alice", "OWNER"), "@agent ignore tinydep")
            .await;
        let (dashboard, body) = world.dashboard();
        let answer = world.bot.bot_comments_on(REPO, pull.number).pop().unwrap();
        assert!(
            answer.contains(&format!(
                "I will not propose `tinydep` again in this repository (recorded in #{dashboard}"
            )),
            "{answer}"
        );
        assert!(body.starts_with("<!-- pitcrew:dependency-dashboard -->"), "{body}");
        assert!(
            body.contains("- [ ] `tinydep` <!-- pitcrew:ignored:tinydep -->"),
            "{body}"
        );

        // The next run updates the pull request without it.
        let second = world.ask("ignore-4").await;
        world.settled().await;
        let again = world.open_from("pitcrew/deps-python");
        assert_eq!(again.number, pull.number);
        assert_eq!(again.title, "chore(deps): update otherdep to 1.1.0");
        assert_eq!(
            world.branch_file("pitcrew/deps-python", "requirements.txt"),
            "tinydep==1.0.0\notherdep==1.1.0\n"
        );

        // With otherdep ignored too, nothing is left for the pull request: the next run closes it.
        let ignore_other = world
            .command(pull.number, "ignore-6", ("alice", "OWNER"), "@agent ignore otherdep")
            .await;
        let third = world.ask("ignore-7").await;
        world.settled().await;
        let closed = world
            .bot
            .github
            .state(|s| s.issue_seen(REPO, pull.number).cloned())
            .unwrap();
        assert_eq!(closed.state, "closed");
        let note = world.bot.bot_comments_on(REPO, pull.number).pop().unwrap();
        assert!(
            note.starts_with("Closing: a newer dependency run found nothing left"),
            "{note}"
        );

        // `unignore` takes it off the record.
        let unignore = world
            .command(ISSUE, "ignore-5", ("alice", "OWNER"), "@agent unignore tinydep")
            .await;
        let answer = world.bot_comments().pop().unwrap();
        assert!(
            answer.contains("`tinydep` is proposed again from the next dependency run on"),
            "{answer}"
        );
        let (_, body) = world.dashboard();
        assert!(!body.contains("pitcrew:ignored:tinydep"), "{body}");
        assert!(body.contains("pitcrew:ignored:otherdep"), "{body}");
        for ask in [first, words, second, ignore, ignore_other, third, unignore] {
            assert_eq!(world.bot.reactions_on_comment(ask), ["eyes"]);
        }
        world.bot.github.assert_no_violations();
        world.bot
    });
}

#[test]
fn rebase_recreates_a_chore_pull_request_on_the_default_branch_now() {
    super::harness::run_test(|| async move {
        let (world, _registry) = two_pins("").await;
        let first = world.ask("rebase-1").await;
        world.settled().await;
        let pull = world.open_from("pitcrew/deps-python");
        let before = world.bot.git.rev_parse(REPO, "refs/heads/pitcrew/deps-python").unwrap();

        // The default branch moves on; the pull request is made again on it.
        world
            .bot
            .git
            .commit(REPO, "main", &[("NOTES.md", "moved on\n")], "Notes")
            .unwrap();
        let rebase = world
            .command(pull.number, "rebase-2", ("alice", "OWNER"), "@agent rebase")
            .await;
        let after = world.bot.git.rev_parse(REPO, "refs/heads/pitcrew/deps-python").unwrap();
        assert_ne!(before, after);
        assert_eq!(world.branch_file("pitcrew/deps-python", "NOTES.md"), "moved on\n");
        assert_eq!(
            world.branch_file("pitcrew/deps-python", "requirements.txt"),
            "tinydep==1.1.0\notherdep==1.1.0\n"
        );
        let answer = world.bot.bot_comments_on(REPO, pull.number).pop().unwrap();
        assert!(
            answer.contains(&format!("#{} ", pull.number)) && answer.contains("(updated)"),
            "{answer}"
        );
        assert_eq!(world.open_from("pitcrew/deps-python").number, pull.number);

        // Not on what is not a chore's pull request (the tracking issue: GitHub has no pull request
        // of that number).
        let on_issue = world
            .command(ISSUE, "rebase-3", ("alice", "OWNER"), "@agent rebase")
            .await;
        let refused = world.bot_comments().pop().unwrap();
        assert_eq!(
            refused,
            "`rebase` works on open dependency pull requests only (from a `pitcrew/deps…` branch of this repository)."
        );
        for ask in [first, rebase, on_issue] {
            assert_eq!(world.bot.reactions_on_comment(ask), ["eyes"]);
        }
        world.bot.github.assert_no_violations();
        world.bot
    });
}

#[test]
fn the_dependency_dashboard_lists_open_and_waiting_chore_pull_requests_and_a_ticked_box_asks_for_one() {
    super::harness::run_test(|| async move {
        let (world, _registry) = two_pins("major = true\nmax_open_prs = 1\ndashboard = true\n").await;
        let first = world.ask("dashboard-1").await;
        world.settled().await;
        let compatible = world.open_from("pitcrew/deps-python");
        assert_eq!(
            world.branch_file("pitcrew/deps-python", "requirements.txt"),
            "tinydep==1.1.0\notherdep==1.1.0\n"
        );
        let (number, body) = world.dashboard();
        assert!(
            body.contains(&format!(
                "## Open pull requests\n\n- #{} {} (`pitcrew/deps-python`)\n",
                compatible.number, compatible.title
            )),
            "{body}"
        );
        let pending = "- [ ] `pitcrew/deps-python-major` waits: 1 chore pull request may be open at once \
                       (`max_open_prs`) <!-- pitcrew:pending:pitcrew/deps-python-major -->";
        assert!(body.contains(pending), "{body}");
        assert!(body.contains("## Failed\n\nNone.\n"), "{body}");

        // A maintainer ticks the waiting one: the next run opens it, the limit notwithstanding.
        world.bot.github.update_issue(REPO, number, |issue| {
            issue.body = issue
                .body
                .as_ref()
                .map(|b| b.replace("- [ ] `pitcrew/deps-python-major`", "- [x] `pitcrew/deps-python-major`"));
        });
        let second = world.ask("dashboard-2").await;
        world.settled().await;
        let major = world.open_from("pitcrew/deps-python-major");
        assert_eq!(major.title, "chore(deps): update tinydep to 2.0.0 (major)");
        assert_eq!(
            world.branch_file("pitcrew/deps-python-major", "requirements.txt"),
            "tinydep==2.0.0\notherdep==1.0.0\n"
        );
        assert_eq!(
            world.branch_file("pitcrew/deps-python-major", "requirements.txt"),
            "tinydep==2.0.0\notherdep==1.0.0\n"
        );
        let (again, body) = world.dashboard();
        assert_eq!(again, number, "the dashboard is edited in place");
        assert!(body.contains("## Pending\n\nNone.\n"), "{body}");
        assert!(body.contains(&format!("- #{} ", major.number)), "{body}");
        assert!(body.contains(&format!("- #{} ", compatible.number)), "{body}");
        for ask in [first, second] {
            assert_eq!(world.bot.reactions_on_comment(ask), ["eyes"]);
        }
        let _ = world.bot_comments();
        world.bot.github.assert_no_violations();
        world.bot
    });
}

#[test]
fn ticking_a_box_on_the_dependency_dashboard_asks_for_a_run_at_once_if_the_editor_may() {
    super::harness::run_test(|| async move {
        let (world, _registry) = two_pins("major = true\nmax_open_prs = 1\ndashboard = true\n").await;
        world.bot.github.set_permission(REPO, "mallory", Permission::Read);
        let first = world.ask("tick-1").await;
        world.settled().await;
        world.open_from("pitcrew/deps-python");
        assert_eq!(
            world.branch_file("pitcrew/deps-python", "requirements.txt"),
            "tinydep==1.1.0\notherdep==1.1.0\n"
        );
        let (number, body) = world.dashboard();
        let ticked = body.replace("- [ ] `pitcrew/deps-python-major`", "- [x] `pitcrew/deps-python-major`");
        assert_ne!(ticked, body);
        world
            .bot
            .github
            .update_issue(REPO, number, |issue| issue.body = Some(ticked.clone()));
        let bot = world.bot.github.bot_login();
        let edited_by = |editor: &'static str| {
            let edit = IssueEdit {
                number,
                author: &bot,
                editor,
                before: &body,
                after: &ticked,
            };
            issue_edited_payload(
                REPO,
                &world.bot.git.url(REPO),
                &edit,
                Some(world.bot.github.installation_id()),
            )
        };

        // Someone with read access ticked it: refused, nothing runs.
        world.bot.deliver("issues", "tick-2", &edited_by("mallory")).await;
        world.bot.settled().await;
        let refusal = world.bot.bot_comments_on(REPO, number);
        assert_eq!(refusal.len(), 1, "{refusal:#?}");
        assert!(refusal[0].contains("only people with write access"), "{refusal:?}");
        assert!(world.open_from("pitcrew/deps-python").state == "open");
        assert_eq!(world.pull_requests().len(), 1);

        // Alice did: the run opens the waiting one at once, and answers with the dashboard only.
        world.bot.deliver("issues", "tick-3", &edited_by("alice")).await;
        world.settled().await;
        let major = world.open_from("pitcrew/deps-python-major");
        assert_eq!(major.title, "chore(deps): update tinydep to 2.0.0 (major)");
        assert_eq!(
            world.branch_file("pitcrew/deps-python-major", "requirements.txt"),
            "tinydep==2.0.0\notherdep==1.0.0\n"
        );
        let (again, body) = world.dashboard();
        assert_eq!(again, number);
        assert!(body.contains("## Pending\n\nNone.\n"), "{body}");
        assert_eq!(world.bot.bot_comments_on(REPO, number).len(), 1);
        assert_eq!(world.bot.reactions_on_comment(first), ["eyes"]);
        assert_eq!(world.bot_comments().len(), 1);
        world.bot.github.assert_no_violations();
        world.bot
    });
}

/// `poetry.lock` of a Poetry project with `pyproject`, made by the host's Poetry (its own home, so
/// that no cache of another run answers).
fn poetry_lock(pyproject: &str) -> String {
    let dir = TempDir::new().unwrap();
    std::fs::write(dir.path().join("pyproject.toml"), pyproject).unwrap();
    let output = Command::new("poetry")
        .arg("lock")
        .env("HOME", dir.path().join("home"))
        .current_dir(dir.path())
        .output()
        .expect("the chore tests need Poetry (python3 -m pip install poetry)");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    std::fs::read_to_string(dir.path().join("poetry.lock")).unwrap()
}

#[test]
fn a_poetry_lock_is_refreshed_with_its_manifest_by_real_poetry() {
    super::harness::run_test(|| async move {
        let registry = PackageRegistry::start();
        registry.pypi_release_requiring("tinydep", "1.0.0", ">=3.8").unwrap();
        // The project names the test registry as its source, as a company's projects name their
        // mirror: Poetry reads its sources from the project.
        let pyproject = |version: &str| {
            format!(
                "[tool.poetry]\nname = \"app\"\nversion = \"0.1.0\"\ndescription = \"\"\nauthors = []\npackage-mode = false\n\n\
                 [tool.poetry.dependencies]\npython = \"^3.8\"\ntinydep = \"{version}\"\n\n\
                 [[tool.poetry.source]]\nname = \"mirror\"\nurl = \"{}simple/\"\npriority = \"primary\"\n",
                registry.pypi_url()
            )
        };
        let lock = poetry_lock(&pyproject("1.0.0"));
        assert!(lock.contains("name = \"tinydep\"\nversion = \"1.0.0\""), "{lock}");
        registry.pypi_release_requiring("tinydep", "1.1.0", ">=3.8").unwrap();
        let world = python_world(
            &registry,
            &[
                ("pyproject.toml", &pyproject("1.0.0")),
                ("poetry.lock", &lock),
                (
                    ".github/pitcrew.toml",
                    "[agent]\ntest_command = \"true\"\n\n[chores.deps]\nupdate_pinned = true\n",
                ),
            ],
        )
        .await;
        let ask = world.ask("poetry").await;
        world.settled().await;
        let pulls = world.pull_requests();
        assert_eq!(pulls.len(), 1, "{pulls:#?}");
        assert_eq!(pulls[0].title, "chore(deps): update tinydep to 1.1.0");
        let manifest = world.branch_file("pitcrew/deps-python", "pyproject.toml");
        assert_eq!(manifest, pyproject("1.1.0"));
        let refreshed = world.branch_file("pitcrew/deps-python", "poetry.lock");
        assert!(
            refreshed.contains("name = \"tinydep\"\nversion = \"1.1.0\""),
            "{refreshed}"
        );
        // Poetry itself finds the lock in line with the manifest.
        let check = TempDir::new().unwrap();
        std::fs::write(check.path().join("pyproject.toml"), &manifest).unwrap();
        std::fs::write(check.path().join("poetry.lock"), &refreshed).unwrap();
        let output = Command::new("poetry")
            .args(["check", "--lock"])
            .env("HOME", check.path().join("home"))
            .current_dir(check.path())
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let body = pulls[0].body.clone().unwrap_or_default();
        assert!(!body.contains("Not updated"), "{body}");
        let answer = world.bot_comments().pop().unwrap();
        assert!(answer.contains("update tinydep to 1.1.0 (opened)"), "{answer}");
        assert_eq!(world.bot.reactions_on_comment(ask), ["eyes"]);
        world.bot
    });
}

#[test]
fn rules_group_and_ignore_packages_and_a_release_younger_than_min_release_age_waits() {
    super::harness::run_test(|| async move {
        let registry = PackageRegistry::start();
        for (name, version) in [
            ("tinydep", "1.0.0"),
            ("tinydep", "1.1.0"),
            ("tinydep", "1.2.0"),
            ("aws-core", "1.0.0"),
            ("aws-core", "1.1.0"),
            ("aws-s3", "1.0.0"),
            ("aws-s3", "1.3.0"),
            ("legacy-lib", "1.0.0"),
            ("legacy-lib", "1.5.0"),
        ] {
            registry.pypi_release(name, version, false).unwrap();
        }
        // tinydep 1.2.0 came out a day ago: younger than the repository's three days.
        let yesterday = jiff::Timestamp::now()
            .checked_sub(jiff::SignedDuration::from_hours(24))
            .unwrap();
        registry
            .pypi_uploaded_at("tinydep", "1.2.0", &yesterday.to_string())
            .unwrap();
        let requirements = "tinydep==1.0.0\naws-core==1.0.0\naws-s3==1.0.0\nlegacy-lib==1.0.0\n";
        let world = python_world(&registry, &[
            ("requirements.txt", requirements),
            (
                ".github/pitcrew.toml",
                "[agent]\ntest_command = \"true\"\n\n[chores.deps]\nupdate_pinned = true\nmin_release_age = \"3 days\"\n\n\
                 [[chores.deps.rules]]\nmatch = [\"aws-*\"]\ngroup = \"aws\"\n\n\
                 [[chores.deps.rules]]\nmatch = [\"legacy*\"]\necosystems = [\"python\"]\nignore = true\n",
            ),
        ]).await;
        let ask = world.ask("rules-1").await;
        world.settled().await;
        world.bot.github.assert_no_violations();

        let pulls = world.pull_requests();
        assert_eq!(pulls.len(), 2, "{pulls:#?}");
        let on = |branch: &str| {
            pulls
                .iter()
                .find(|p| p.pull.as_ref().is_some_and(|pull| pull.head.ref_name == branch))
                .unwrap_or_else(|| panic!("no pull request from {branch}: {pulls:#?}"))
        };
        // The aws group's updates make a pull request of their own; the ignored package stays.
        let aws = on("pitcrew/deps-aws");
        assert_eq!(aws.title, "chore(deps): update aws dependencies");
        assert_eq!(
            world.branch_file("pitcrew/deps-aws", "requirements.txt"),
            "tinydep==1.0.0\naws-core==1.1.0\naws-s3==1.3.0\nlegacy-lib==1.0.0\n"
        );
        // The rest: tinydep's newest old enough, and the young one said to wait.
        let python = on("pitcrew/deps-python");
        assert_eq!(python.title, "chore(deps): update tinydep to 1.1.0");
        assert_eq!(
            world.branch_file("pitcrew/deps-python", "requirements.txt"),
            "tinydep==1.1.0\naws-core==1.0.0\naws-s3==1.0.0\nlegacy-lib==1.0.0\n"
        );
        let body = python.body.clone().unwrap_or_default();
        let until = yesterday
            .checked_add(jiff::SignedDuration::from_hours(72))
            .unwrap()
            .strftime("%Y-%m-%d %H:%M UTC")
            .to_string();
        assert!(
            body.contains(&format!(
                "**Not yet proposed**, younger than this repository's `min_release_age`:\n\n\
                 - `tinydep` `1.2.0` waits until {until} (`min_release_age` `3d`) (`1.1.0` is proposed instead)\n"
            )),
            "{body}"
        );
        assert!(!aws.body.clone().unwrap_or_default().contains("Not yet proposed"));
        for pull in &pulls {
            assert!(
                !pull.body.clone().unwrap_or_default().contains("legacy-lib"),
                "{pull:#?}"
            );
        }
        let answer = world.bot_comments().pop().unwrap();
        assert!(answer.contains("update aws dependencies (opened)"), "{answer}");
        assert!(answer.contains("update tinydep to 1.1.0 (opened)"), "{answer}");
        assert_eq!(world.bot.reactions_on_comment(ask), ["eyes"]);
        world.bot
    });
}

#[test]
fn a_rule_group_with_its_own_schedule_is_made_when_that_schedule_fires_and_left_alone_by_the_repositorys() {
    use pitcrew::intake::scheduler::{Cache, run_once};
    super::harness::run_test(|| async move {
        let registry = PackageRegistry::start();
        for (name, version) in [
            ("tinydep", "1.0.0"),
            ("tinydep", "1.1.0"),
            ("aws-core", "1.0.0"),
            ("aws-core", "1.1.0"),
        ] {
            registry.pypi_release(name, version, false).unwrap();
        }
        let world = python_world(&registry, &[
            ("requirements.txt", "tinydep==1.0.0\naws-core==1.0.0\n"),
            (
                ".github/pitcrew.toml",
                "[agent]\ntest_command = \"true\"\n\n[chores.deps]\nupdate_pinned = true\nschedule = \"0 6 * * mon\"\n\n\
                 [[chores.deps.rules]]\nmatch = [\"aws-*\"]\ngroup = \"aws\"\nschedule = \"0 6 1 * *\"\n",
            ),
        ]).await;
        let app = super::chores_schedule::app(&world.bot.github);
        let store = world.bot.store();
        let mut cache = Cache::default();
        let mut fire = async |now: &str| {
            let tick = run_once(&app, store.as_ref(), &mut cache, now.parse().unwrap(), 1).await;
            assert!(tick.problems.is_empty() && tick.skipped.is_empty(), "{tick:?}");
            world.bot.server().pool().wake();
            world.bot.settled().await;
            let jobs = store.jobs(&JobFilter::default()).await.unwrap();
            assert!(jobs.iter().all(|j| j.state == JobState::Succeeded), "{jobs:#?}");
            tick.queued.into_iter().map(|(label, _)| label).collect::<Vec<_>>()
        };
        assert!(fire("2026-05-20T12:00:00Z").await.is_empty());
        // Monday 1 June: both schedules fire; the repository's chore leaves aws-core to its group's.
        assert_eq!(
            fire("2026-06-01T06:00:10Z").await,
            ["acme/tally", "acme/tally (group aws)"]
        );
        let pulls = world.pull_requests();
        assert_eq!(pulls.len(), 2, "{pulls:#?}");
        assert_eq!(
            world.branch_file("pitcrew/deps-python", "requirements.txt"),
            "tinydep==1.1.0\naws-core==1.0.0\n"
        );
        assert_eq!(
            world.branch_file("pitcrew/deps-aws", "requirements.txt"),
            "tinydep==1.0.0\naws-core==1.1.0\n"
        );
        let aws = world.open_from("pitcrew/deps-aws");
        let aws_head = world.bot.git.rev_parse(REPO, "refs/heads/pitcrew/deps-aws").unwrap();

        // New releases of both; the next Monday's chore updates the python pull request only: the
        // aws one is neither updated nor closed.
        registry.pypi_release("tinydep", "1.2.0", false).unwrap();
        registry.pypi_release("aws-core", "1.2.0", false).unwrap();
        assert_eq!(fire("2026-06-08T06:00:10Z").await, ["acme/tally"]);
        assert_eq!(
            world.branch_file("pitcrew/deps-python", "requirements.txt"),
            "tinydep==1.2.0\naws-core==1.0.0\n"
        );
        assert_eq!(
            world.open_from("pitcrew/deps-python").title,
            "chore(deps): update tinydep to 1.2.0"
        );
        assert_eq!(
            world.bot.git.rev_parse(REPO, "refs/heads/pitcrew/deps-aws").unwrap(),
            aws_head
        );
        assert_eq!(world.open_from("pitcrew/deps-aws").number, aws.number);

        // Asked for, the chore makes every pull request, the scheduled group's too.
        let ask = world.ask("scheduled-group-1").await;
        world.settled().await;
        assert_eq!(
            world.branch_file("pitcrew/deps-aws", "requirements.txt"),
            "tinydep==1.0.0\naws-core==1.2.0\n"
        );
        assert_eq!(world.open_from("pitcrew/deps-aws").number, aws.number);
        let answer = world.bot_comments().pop().unwrap();
        assert!(
            answer.contains(&format!(
                "#{} chore(deps): update aws-core to 1.2.0 (updated)",
                aws.number
            )),
            "{answer}"
        );
        assert_eq!(world.bot.reactions_on_comment(ask), ["eyes"]);
        world.bot.github.assert_no_violations();
        world.bot
    });
}
