//! Mirrors, per-job copies and pushes with a lease against a real git smart-HTTP server: creation,
//! incremental fetches, pull-request heads, a wrong token, concurrency, a branch that moved under the
//! job (rebased cleanly, or a conflict that pushes nothing), and the token never landing on disk.

use std::path::Path;
use std::process::Command;

use pitcrew::workspace::WorkspaceError;
use pitcrew::workspace::deliver::{Delivery, PullHead, deliver_to_pull_request, issue_branch, push_bot_branch};
use pitcrew::workspace::mirror::{MirrorCache, RemoteRepo, Target};
use pitcrew::workspace::push::{Oid, PushOutcome, push_with_lease};
use pitcrew::workspace::{JOB_TRAILER, LocalRepo};
use pitcrew_tests::git_server::GitServer;
use secrecy::SecretString;
use url::Url;

const TOKEN: &str = "ghs_pitcrewTestToken0123456789";
const REPO: &str = "acme/widgets";

fn remote(server: &GitServer) -> RemoteRepo {
    RemoteRepo {
        url: Url::parse(&server.url(REPO)).unwrap(),
        full_name: REPO.to_owned(),
    }
}

fn token() -> SecretString {
    SecretString::from(TOKEN)
}

fn git_out(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git").args(args).current_dir(dir).output().unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// Installs a pre-receive hook in `full_name` on the server that declines every update (the server
/// answers `ng <ref> …`); returns its path.
fn refuse_pushes(server: &GitServer, full_name: &str) -> std::path::PathBuf {
    let hook = server.repo_path(full_name).join("hooks/pre-receive");
    std::fs::write(&hook, "#!/bin/sh\nexit 1\n").unwrap();
    let mut permissions = std::fs::metadata(&hook).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&hook, permissions).unwrap();
    hook
}

/// Every file under `dir` whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(path) = stack.pop() {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path).unwrap() {
                stack.push(entry.unwrap().path());
            }
        } else if meta.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            if bytes.windows(needle.len()).any(|w| w == needle) {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mirror_fetches_incrementally_and_job_copies_check_out_offline_without_the_token() {
    let server = GitServer::start(TOKEN);
    let first = server.create_repo(REPO, &[("README.md", "widgets\n")]).unwrap();
    let pr = server
        .create_pull_head(REPO, 7, "main", &[("fix.txt", "fixed\n")], "fix the widget")
        .unwrap();
    let data = tempfile::tempdir().unwrap();
    let cache = MirrorCache::new(data.path());

    let mirror = cache
        .prepare(&remote(&server), &token(), &["refs/pull/7/head"])
        .await
        .unwrap();
    assert_eq!(server.fetch_count(REPO), 1);
    assert_eq!(mirror.path(), data.path().join("mirrors/acme/widgets.git"));
    assert_eq!(git_out(mirror.path(), &["rev-parse", "refs/heads/main"]), first);
    assert_eq!(git_out(mirror.path(), &["rev-parse", "refs/pull/7/head"]), pr);

    // A new commit upstream: the second prepare fetches it, over the network once more.
    let second = server
        .commit(REPO, "main", &[("README.md", "widgets v2\n")], "v2")
        .unwrap();
    let mirror = cache
        .prepare(&remote(&server), &token(), &["refs/pull/7/head"])
        .await
        .unwrap();
    assert_eq!(server.fetch_count(REPO), 2);
    assert_eq!(git_out(mirror.path(), &["rev-parse", "refs/heads/main"]), second);

    // A job copy of the pull request's head, made without the network.
    let requests_before = server.requests().len();
    let jobs = tempfile::tempdir().unwrap();
    let job = jobs.path().join("job-1");
    let copy = mirror.checkout(&job, Target::PullHead(7)).await.unwrap();
    assert_eq!(
        server.requests().len(),
        requests_before,
        "checkout must not touch the network"
    );
    assert_eq!(copy.head().unwrap().to_string(), pr);
    assert_eq!(std::fs::read_to_string(job.join("fix.txt")).unwrap(), "fixed\n");
    assert_eq!(git_out(&job, &["remote", "get-url", "origin"]), server.url(REPO));
    assert_eq!(git_out(&job, &["rev-parse", "origin/main"]), second);
    copy.ensure_clean().unwrap();
    // The same job directory again is refused rather than mixed.
    let reused = mirror.checkout(&job, Target::PullHead(7)).await.err().unwrap();
    assert!(matches!(reused, WorkspaceError::Io { .. }), "{reused}");

    // A branch checkout is on a local branch tracking origin.
    let branch_job = jobs.path().join("job-2");
    let copy = mirror
        .checkout(&branch_job, Target::Branch("main".to_owned()))
        .await
        .unwrap();
    assert_eq!(copy.current_branch().as_deref(), Some("main"));
    assert_eq!(copy.head().unwrap().to_string(), second);
    assert_eq!(
        std::fs::read_to_string(branch_job.join("README.md")).unwrap(),
        "widgets v2\n"
    );

    // A commit checkout is detached at it; an unknown target is a clear error.
    let commit_job = jobs.path().join("job-3");
    let copy = mirror
        .checkout(&commit_job, Target::Commit(first.clone()))
        .await
        .unwrap();
    assert_eq!(copy.head().unwrap().to_string(), first);
    assert_eq!(copy.current_branch(), None);
    let missing = mirror
        .checkout(&jobs.path().join("job-4"), Target::PullHead(99))
        .await
        .err()
        .unwrap();
    assert!(matches!(missing, WorkspaceError::TargetNotFound { .. }), "{missing}");

    // A wrong token: a clear error naming the repository, not the token.
    let wrong = SecretString::from("ghs_wrongWrongWrong");
    let error = cache.prepare(&remote(&server), &wrong, &[]).await.err().unwrap();
    assert!(
        matches!(&error, WorkspaceError::Auth { repo } if repo == REPO),
        "{error:?}"
    );
    let text = format!("{error} {error:?}");
    assert!(text.contains(REPO), "{text}");
    assert!(!text.contains("ghs_"), "{text}");
    // libgit2 gave up after one rejected attempt instead of asking forever.
    let rejected = server
        .requests()
        .iter()
        .filter(|r| r.has_authorization && !r.authorized)
        .count();
    assert!((1..=2).contains(&rejected), "{rejected} rejected requests");

    // The token is nowhere on disk, and never travelled in a URL.
    assert_eq!(files_containing(data.path(), TOKEN.as_bytes()), Vec::<String>::new());
    assert_eq!(files_containing(jobs.path(), TOKEN.as_bytes()), Vec::<String>::new());
    assert!(
        server
            .requests()
            .iter()
            .all(|r| !r.path.contains(TOKEN) && !r.query.as_deref().unwrap_or("").contains(TOKEN))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_jobs_share_one_mirror() {
    let server = GitServer::start(TOKEN);
    server.create_repo(REPO, &[("README.md", "widgets\n")]).unwrap();
    let pr3 = server
        .create_pull_head(REPO, 3, "main", &[("three.txt", "3\n")], "three")
        .unwrap();
    let pr4 = server
        .create_pull_head(REPO, 4, "main", &[("four.txt", "4\n")], "four")
        .unwrap();
    let data = tempfile::tempdir().unwrap();
    let jobs = tempfile::tempdir().unwrap();
    let cache = MirrorCache::new(data.path());

    let mut tasks = Vec::new();
    for (n, sha) in [(3_u64, pr3), (4, pr4)] {
        let cache = cache.clone();
        let remote = remote(&server);
        let job = jobs.path().join(format!("job-{n}"));
        tasks.push(tokio::spawn(async move {
            let reference = format!("refs/pull/{n}/head");
            let mirror = cache.prepare(&remote, &token(), &[reference.as_str()]).await.unwrap();
            let copy = mirror.checkout(&job, Target::PullHead(n)).await.unwrap();
            assert_eq!(copy.head().unwrap().to_string(), sha);
            assert_eq!(std::fs::read_to_string(job.join("README.md")).unwrap(), "widgets\n");
            let own = if n == 3 { "three.txt" } else { "four.txt" };
            assert!(job.join(own).exists(), "{own} missing in job {n}");
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(server.fetch_count(REPO), 2);
    let mirror = data.path().join("mirrors/acme/widgets.git");
    git_out(&mirror, &["fsck", "--no-progress"]);
}

/// A PR branch `fix` on the server and a job copy of it; returns the copy and the commit it started at.
async fn pr_branch_job(server: &GitServer, data: &Path, job: &Path) -> (LocalRepo, Oid) {
    server
        .create_repo(REPO, &[("a.txt", "one\ntwo\nthree\n"), ("b.txt", "bee\n")])
        .unwrap();
    server
        .commit(REPO, "fix", &[("fix.txt", "start\n")], "start the fix")
        .unwrap();
    let mirror = MirrorCache::new(data)
        .prepare(&remote(server), &token(), &[])
        .await
        .unwrap();
    let copy = mirror.checkout(job, Target::Branch("fix".to_owned())).await.unwrap();
    let start = copy.head().unwrap();
    (copy, start)
}

/// The bot's change: line two of `a.txt`, committed in the job copy.
fn bot_commit(copy: &LocalRepo) -> Oid {
    std::fs::write(copy.root().join("a.txt"), "one\nTWO (bot)\nthree\n").unwrap();
    let commit = copy
        .commit_all("pitcrew: shout two", 1_000_000, &[], None)
        .unwrap()
        .commit
        .unwrap();
    Oid::from_str(&commit).unwrap()
}

fn push(copy: &LocalRepo, server: &GitServer, token: &SecretString, start: Oid) -> Result<PushOutcome, WorkspaceError> {
    // The push blocks on the network; the git server runs on its own thread.
    tokio::task::block_in_place(|| push_with_lease(copy, &remote(server), token, "fix", start))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_with_lease_moves_the_pr_branch_to_the_bots_commit() {
    let server = GitServer::start(TOKEN);
    let data = tempfile::tempdir().unwrap();
    let jobs = tempfile::tempdir().unwrap();
    let job = jobs.path().join("job");
    let (copy, start) = pr_branch_job(&server, data.path(), &job).await;
    assert_eq!(
        push(&copy, &server, &token(), start).unwrap(),
        PushOutcome::NothingToPush
    );

    let commit = bot_commit(&copy);
    let outcome = push(&copy, &server, &token(), start).unwrap();
    assert_eq!(outcome, PushOutcome::Pushed { commit, rebased: false });
    assert_eq!(server.rev_parse(REPO, "refs/heads/fix").unwrap(), commit.to_string());
    // Pushed again from where it now is: nothing left to push.
    assert_eq!(
        push(&copy, &server, &token(), commit).unwrap(),
        PushOutcome::NothingToPush
    );

    // The token is nowhere in the job copy, and the copy's config names no remote but origin.
    assert_eq!(files_containing(&job, TOKEN.as_bytes()), Vec::<String>::new());
    assert_eq!(files_containing(data.path(), TOKEN.as_bytes()), Vec::<String>::new());
    assert_eq!(git_out(&job, &["remote"]), "origin");
    copy.ensure_clean().unwrap();
}

/// The bot's change of [`bot_commit`] as job `job` commits it: with its `Pitcrew-Job` trailer.
fn job_commit(copy: &LocalRepo, job: &str) -> Oid {
    std::fs::write(copy.root().join("a.txt"), "one\nTWO (bot)\nthree\n").unwrap();
    let commit = copy
        .commit_all("pitcrew: shout two", 1_000_000, &[(JOB_TRAILER, job)], None)
        .unwrap()
        .commit
        .unwrap();
    Oid::from_str(&commit).unwrap()
}

/// The security issue's crash: a job pushed, died before reporting, and its retry began again from
/// the pull request's head as GitHub still had it. The retry's commit replays onto its own earlier
/// one to the same tree; before, that empty commit was pushed on top.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_job_finds_its_own_earlier_push_and_pushes_nothing() {
    let server = GitServer::start(TOKEN);
    let data = tempfile::tempdir().unwrap();
    let jobs = tempfile::tempdir().unwrap();
    let (first, start) = pr_branch_job(&server, data.path(), &jobs.path().join("attempt-1")).await;
    let earlier = job_commit(&first, "0a1b2c3d-7");
    assert_eq!(
        push(&first, &server, &token(), start).unwrap(),
        PushOutcome::Pushed {
            commit: earlier,
            rebased: false
        }
    );

    // The retry: a fresh copy at the stale head, the same work, the same job.
    let mirror = MirrorCache::new(data.path())
        .prepare(&remote(&server), &token(), &[])
        .await
        .unwrap();
    let retry = mirror
        .checkout(&jobs.path().join("attempt-2"), Target::Commit(start.to_string()))
        .await
        .unwrap();
    assert_eq!(retry.head().unwrap(), start);
    job_commit(&retry, "0a1b2c3d-7");
    assert_eq!(
        push(&retry, &server, &token(), start).unwrap(),
        PushOutcome::AlreadyPushed { commit: earlier }
    );
    assert_eq!(server.rev_parse(REPO, "refs/heads/fix").unwrap(), earlier.to_string());
    assert_eq!(
        git_out(
            &server.repo_path(REPO),
            &["rev-list", "--count", &format!("{start}..fix")]
        ),
        "1"
    );
}

/// The branch moved to a commit with exactly the job's change, by someone else (or by a job
/// without the trailer): the replay changes nothing, and nothing is pushed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_onto_the_same_tree_pushes_no_empty_commit() {
    let server = GitServer::start(TOKEN);
    let data = tempfile::tempdir().unwrap();
    let jobs = tempfile::tempdir().unwrap();
    let (copy, start) = pr_branch_job(&server, data.path(), &jobs.path().join("job")).await;
    let theirs = server
        .commit(
            REPO,
            "fix",
            &[("a.txt", "one\nTWO (bot)\nthree\n")],
            "the same fix, by hand",
        )
        .unwrap();
    job_commit(&copy, "0a1b2c3d-8");
    assert_eq!(
        push(&copy, &server, &token(), start).unwrap(),
        PushOutcome::AlreadyApplied {
            remote_tip: Oid::from_str(&theirs).unwrap()
        }
    );
    assert_eq!(server.rev_parse(REPO, "refs/heads/fix").unwrap(), theirs);
}

/// RUSTSEC-2026-0183: before git2 0.21, listing a remote that advertises no refs handed a null
/// pointer to `slice::from_raw_parts` (undefined behaviour; a debug build aborts on it). Both
/// pushes list the remote first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushing_to_an_empty_repository_that_advertises_no_refs_is_an_answer_not_a_crash() {
    let server = GitServer::start(TOKEN);
    let data = tempfile::tempdir().unwrap();
    let jobs = tempfile::tempdir().unwrap();
    let job = jobs.path().join("job");
    let (copy, start) = pr_branch_job(&server, data.path(), &job).await;
    bot_commit(&copy);
    let empty = "acme/empty";
    server.create_empty_repo(empty).unwrap();
    let empty_remote = RemoteRepo {
        url: Url::parse(&server.url(empty)).unwrap(),
        full_name: empty.to_owned(),
    };

    // The lease finds no branch to move: a plain error that names it.
    let error =
        tokio::task::block_in_place(|| push_with_lease(&copy, &empty_remote, &token(), "fix", start)).unwrap_err();
    assert!(
        matches!(&error, WorkspaceError::TargetNotFound { repo, target } if repo == empty && target == "branch fix"),
        "{error:?}"
    );
    assert_eq!(server.rev_parse(empty, "refs/heads/fix"), None);

    // A bot branch is created there: it did not exist before.
    let existed = tokio::task::block_in_place(|| push_bot_branch(&copy, &empty_remote, &token(), "pitcrew/partial-1"));
    assert!(!existed.unwrap());
    assert_eq!(
        server.rev_parse(empty, "refs/heads/pitcrew/partial-1").unwrap(),
        copy.head().unwrap().to_string()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_with_lease_rebases_once_onto_a_concurrent_change_in_another_file() {
    let server = GitServer::start(TOKEN);
    let data = tempfile::tempdir().unwrap();
    let jobs = tempfile::tempdir().unwrap();
    let job = jobs.path().join("job");
    let (copy, start) = pr_branch_job(&server, data.path(), &job).await;
    let bot = bot_commit(&copy);
    let theirs = server
        .commit(REPO, "fix", &[("b.txt", "bee, edited by a human\n")], "human edit")
        .unwrap();

    let outcome = push(&copy, &server, &token(), start).unwrap();
    let PushOutcome::Pushed { commit, rebased: true } = outcome else {
        panic!("{outcome:?}");
    };
    assert_ne!(commit, bot);
    let server_repo = server.repo_path(REPO);
    assert_eq!(server.rev_parse(REPO, "refs/heads/fix").unwrap(), commit.to_string());
    // The bot's commit sits on top of theirs, and both changes are there.
    assert_eq!(git_out(&server_repo, &["rev-parse", "fix^"]), theirs);
    assert_eq!(
        git_out(&server_repo, &["log", "-1", "--format=%s", "fix"]),
        "pitcrew: shout two"
    );
    assert_eq!(git_out(&server_repo, &["show", "fix:b.txt"]), "bee, edited by a human");
    assert_eq!(git_out(&server_repo, &["show", "fix:a.txt"]), "one\nTWO (bot)\nthree");
    // The job copy follows the pushed commit.
    assert_eq!(copy.head().unwrap(), commit);
    assert_eq!(copy.current_branch().as_deref(), Some("fix"));
    assert_eq!(
        std::fs::read_to_string(job.join("b.txt")).unwrap(),
        "bee, edited by a human\n"
    );
    copy.ensure_clean().unwrap();
    assert_eq!(files_containing(&job, TOKEN.as_bytes()), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_with_lease_reports_a_conflicting_concurrent_change_and_pushes_nothing() {
    let server = GitServer::start(TOKEN);
    let data = tempfile::tempdir().unwrap();
    let jobs = tempfile::tempdir().unwrap();
    let job = jobs.path().join("job");
    let (copy, start) = pr_branch_job(&server, data.path(), &job).await;
    let bot = bot_commit(&copy);
    let theirs = server
        .commit(REPO, "fix", &[("a.txt", "one\ntwo (human)\nthree\n")], "human edit")
        .unwrap();

    let outcome = push(&copy, &server, &token(), start).unwrap();
    assert_eq!(
        outcome,
        PushOutcome::Conflict {
            files: vec!["a.txt".to_owned()],
            remote_tip: Oid::from_str(&theirs).unwrap(),
        }
    );
    assert_eq!(server.rev_parse(REPO, "refs/heads/fix").unwrap(), theirs);
    // The job copy is as it was: the bot's commit, a clean tree.
    assert_eq!(copy.head().unwrap(), bot);
    assert_eq!(
        std::fs::read_to_string(job.join("a.txt")).unwrap(),
        "one\nTWO (bot)\nthree\n"
    );
    copy.ensure_clean().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_with_lease_with_a_wrong_token_is_an_auth_error() {
    let server = GitServer::start(TOKEN);
    let data = tempfile::tempdir().unwrap();
    let jobs = tempfile::tempdir().unwrap();
    let job = jobs.path().join("job");
    let (copy, start) = pr_branch_job(&server, data.path(), &job).await;
    bot_commit(&copy);

    let wrong = SecretString::from("ghs_wrongWrongWrong");
    let error = push(&copy, &server, &wrong, start).unwrap_err();
    assert!(
        matches!(&error, WorkspaceError::Auth { repo } if repo == REPO),
        "{error:?}"
    );
    let text = format!("{error} {error:?}");
    assert!(!text.contains("ghs_"), "{text}");
    assert_eq!(server.rev_parse(REPO, "refs/heads/fix").unwrap(), start.to_string());
    assert_eq!(files_containing(&job, b"ghs_wrong"), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_with_lease_turns_a_refused_ref_into_an_error() {
    let server = GitServer::start(TOKEN);
    let data = tempfile::tempdir().unwrap();
    let jobs = tempfile::tempdir().unwrap();
    let job = jobs.path().join("job");
    let (copy, start) = pr_branch_job(&server, data.path(), &job).await;
    bot_commit(&copy);
    // A server-side hook declines every update: the server answers `ng refs/heads/fix …`.
    refuse_pushes(&server, REPO);

    let error = push(&copy, &server, &token(), start).unwrap_err();
    assert!(
        matches!(&error, WorkspaceError::PushRejected { repo, reason } if repo == REPO && reason.contains("refs/heads/fix")),
        "{error:?}"
    );
    assert_eq!(server.rev_parse(REPO, "refs/heads/fix").unwrap(), start.to_string());
}

const FORK: &str = "alice/widgets";

/// Pull request 9 from the fork `alice/widgets` (branch `patch-1`) against `acme/widgets`, and a
/// job copy of its head holding the bot's commit; returns the copy and the head it started at.
async fn fork_pull_job(server: &GitServer, data: &Path, job: &Path) -> (LocalRepo, Oid) {
    server
        .create_repo(REPO, &[("a.txt", "one\ntwo\nthree\n"), ("b.txt", "bee\n")])
        .unwrap();
    let base = server.repo_path(REPO);
    let fork = server.repo_path(FORK);
    git_out(&base, &["clone", "-q", "--bare", ".", fork.to_str().unwrap()]);
    let head = server
        .commit(FORK, "patch-1", &[("c.txt", "from alice\n")], "alice's change")
        .unwrap();
    // What the forge does for every pull request: the head, mirrored into the base repository.
    git_out(
        &fork,
        &[
            "push",
            "-q",
            base.to_str().unwrap(),
            "refs/heads/patch-1:refs/pull/9/head",
        ],
    );
    let mirror = MirrorCache::new(data)
        .prepare(&remote(server), &token(), &["refs/pull/9/head"])
        .await
        .unwrap();
    let copy = mirror.checkout(job, Target::PullHead(9)).await.unwrap();
    assert_eq!(copy.head().unwrap().to_string(), head);
    bot_commit(&copy);
    (copy, Oid::from_str(&head).unwrap())
}

fn fork_head(server: &GitServer, maintainer_can_modify: bool) -> PullHead {
    PullHead {
        base_repo: REPO.to_owned(),
        head_repo: Some(RemoteRepo {
            url: Url::parse(&server.url(FORK)).unwrap(),
            full_name: FORK.to_owned(),
        }),
        head_ref: "patch-1".to_owned(),
        maintainer_can_modify,
    }
}

fn deliver(copy: &LocalRepo, pull: &PullHead, start: Oid) -> Delivery {
    tokio::task::block_in_place(|| deliver_to_pull_request(copy, pull, &token(), start)).unwrap()
}

/// Applies `patch` with `git am` on the fork's `patch-1` and returns the resulting tree.
fn apply_patch(server: &GitServer, patch: &str) -> String {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    git_out(
        dir,
        &[
            "clone",
            "-q",
            "--branch",
            "patch-1",
            server.repo_path(FORK).to_str().unwrap(),
            ".",
        ],
    );
    let patch_file = dir.join("../bot.patch");
    std::fs::write(&patch_file, patch).unwrap();
    git_out(
        dir,
        &[
            "-c",
            "user.name=Alice",
            "-c",
            "user.email=alice@example.invalid",
            "am",
            "-q",
            patch_file.to_str().unwrap(),
        ],
    );
    git_out(dir, &["rev-parse", "HEAD^{tree}"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_without_maintainer_edits_gets_a_patch_that_git_am_applies() {
    let server = GitServer::start(TOKEN);
    let data = tempfile::tempdir().unwrap();
    let jobs = tempfile::tempdir().unwrap();
    let (copy, start) = fork_pull_job(&server, data.path(), &jobs.path().join("job")).await;

    let Delivery::Patch { patch, reason } = deliver(&copy, &fork_head(&server, false), start) else {
        panic!("expected a patch");
    };
    assert!(reason.contains("does not allow edits from maintainers"), "{reason}");
    assert!(
        patch.starts_with("From ") && patch.contains("Subject: [PATCH] pitcrew: shout two"),
        "{patch}"
    );
    assert_eq!(
        server.rev_parse(FORK, "refs/heads/patch-1").unwrap(),
        start.to_string(),
        "nothing pushed"
    );
    let bot_tree = git_out(copy.root(), &["rev-parse", "HEAD^{tree}"]);
    assert_eq!(apply_patch(&server, &patch), bot_tree);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_with_maintainer_edits_is_pushed_to_and_a_refusal_falls_back_to_the_patch() {
    let server = GitServer::start(TOKEN);
    let data = tempfile::tempdir().unwrap();
    let jobs = tempfile::tempdir().unwrap();
    let (copy, start) = fork_pull_job(&server, data.path(), &jobs.path().join("job")).await;
    let pushed = copy.head().unwrap();

    // The fork refuses (the installation's token cannot write there): a patch, with the reason.
    let hook = refuse_pushes(&server, FORK);
    let Delivery::Patch { reason, .. } = deliver(&copy, &fork_head(&server, true), start) else {
        panic!("expected a patch");
    };
    assert_eq!(reason, "the fork alice/widgets refused pitcrew's push");
    assert_eq!(server.rev_parse(FORK, "refs/heads/patch-1").unwrap(), start.to_string());

    std::fs::remove_file(&hook).unwrap();
    assert_eq!(
        deliver(&copy, &fork_head(&server, true), start),
        Delivery::Pushed {
            commit: pushed,
            rebased: false,
            to_fork: true
        }
    );
    assert_eq!(
        server.rev_parse(FORK, "refs/heads/patch-1").unwrap(),
        pushed.to_string()
    );
    assert_eq!(
        server.rev_parse(REPO, "refs/heads/patch-1"),
        None,
        "the base repository is untouched"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_same_repository_pull_request_is_pushed_and_a_deleted_fork_gets_a_patch() {
    let server = GitServer::start(TOKEN);
    let data = tempfile::tempdir().unwrap();
    let jobs = tempfile::tempdir().unwrap();
    let (copy, start) = pr_branch_job(&server, data.path(), &jobs.path().join("job")).await;
    let same = PullHead {
        base_repo: REPO.to_owned(),
        head_repo: Some(remote(&server)),
        head_ref: "fix".to_owned(),
        maintainer_can_modify: false,
    };
    assert_eq!(deliver(&copy, &same, start), Delivery::NothingToPush);
    let commit = bot_commit(&copy);

    let deleted = PullHead {
        head_repo: None,
        ..same.clone()
    };
    assert!(matches!(deliver(&copy, &deleted, start), Delivery::Patch { reason, .. } if reason.contains("deleted")));

    assert_eq!(
        deliver(&copy, &same, start),
        Delivery::Pushed {
            commit,
            rebased: false,
            to_fork: false
        }
    );
    assert_eq!(server.rev_parse(REPO, "refs/heads/fix").unwrap(), commit.to_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issue_branch_is_created_then_replaced_by_a_rerun() {
    let server = GitServer::start(TOKEN);
    let data = tempfile::tempdir().unwrap();
    let jobs = tempfile::tempdir().unwrap();
    let main = server.create_repo(REPO, &[("a.txt", "one\ntwo\nthree\n")]).unwrap();
    let mirror = MirrorCache::new(data.path())
        .prepare(&remote(&server), &token(), &[])
        .await
        .unwrap();
    let branch = issue_branch(12, "Two is too quiet");
    assert_eq!(branch, "pitcrew/issue-12-two-is-too-quiet");

    let mut pushed = Vec::new();
    for run in 0..2 {
        let job = jobs.path().join(format!("run-{run}"));
        let copy = mirror.checkout(&job, Target::Branch("main".to_owned())).await.unwrap();
        copy.create_branch(&branch).unwrap();
        std::fs::write(job.join("run.txt"), format!("run {run}\n")).unwrap();
        let commit = bot_commit(&copy);
        let replaced =
            tokio::task::block_in_place(|| push_bot_branch(&copy, &remote(&server), &token(), &branch)).unwrap();
        assert_eq!(replaced, run == 1);
        assert_eq!(
            server.rev_parse(REPO, &format!("refs/heads/{branch}")).unwrap(),
            commit.to_string()
        );
        pushed.push(commit);
    }
    assert_ne!(pushed[0], pushed[1], "the rerun's commit replaced the first");

    let copy = LocalRepo::open(&jobs.path().join("run-1")).unwrap();
    let error = tokio::task::block_in_place(|| push_bot_branch(&copy, &remote(&server), &token(), "main")).unwrap_err();
    assert!(matches!(error, WorkspaceError::InvalidRef { .. }), "{error:?}");
    assert_eq!(
        server.rev_parse(REPO, "refs/heads/main").unwrap(),
        main,
        "only pitcrew/ branches are forced"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rerun_with_nothing_new_pushes_no_commit_of_the_same_tree() {
    let server = GitServer::start(TOKEN);
    let data = tempfile::tempdir().unwrap();
    let jobs = tempfile::tempdir().unwrap();
    server.create_repo(REPO, &[("a.txt", "one\n")]).unwrap();
    let branch = "pitcrew/deps-cargo";
    let mut commits = Vec::new();
    for run in 0..3 {
        // Each run fetches afresh, as every job does, and makes its commit on the default branch.
        let mirror = MirrorCache::new(data.path())
            .prepare(&remote(&server), &token(), &[])
            .await
            .unwrap();
        let job = jobs.path().join(format!("run-{run}"));
        let copy = mirror.checkout(&job, Target::Branch("main".to_owned())).await.unwrap();
        copy.create_branch(branch).unwrap();
        // The same change in runs 0 and 1, another in run 2 (beside bot_commit's own edit).
        let content = if run == 2 { "lock v2\n" } else { "lock v1\n" };
        std::fs::write(job.join("b.lock"), content).unwrap();
        commits.push(bot_commit(&copy));
        let existed =
            tokio::task::block_in_place(|| push_bot_branch(&copy, &remote(&server), &token(), branch)).unwrap();
        assert_eq!(existed, run > 0);
    }
    let updates: Vec<String> = server
        .pushes()
        .iter()
        .flat_map(|push| push.updates.iter().map(|u| u.new.clone()))
        .collect();
    // Run 0's and run 2's: run 1 had the same tree as run 0.
    assert_eq!(updates, [commits[0].to_string(), commits[2].to_string()]);
    assert_eq!(
        server.rev_parse(REPO, &format!("refs/heads/{branch}")).unwrap(),
        commits[2].to_string()
    );
}
