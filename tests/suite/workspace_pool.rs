//! The warm pool of working copies against a real git server: a released copy is cleaned and
//! reused at another commit with nothing of the last job left (changes, untracked and ignored
//! files, branches, config, hooks); the per-repository limit; a dropped lease deletes its copy;
//! eviction of idle copies and of mirrors (never one a lease holds); adoption after a restart.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use pitcrew::workspace::mirror::{Mirror, MirrorCache, RemoteRepo, Target};
use pitcrew::workspace::pool::{PoolLimits, WorkspacePool};
use pitcrew_tests::git_server::GitServer;
use secrecy::SecretString;
use url::Url;

const TOKEN: &str = "ghs_poolTestToken0123456789";
const REPO: &str = "acme/pool";

fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git").args(args).current_dir(dir).output().unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

async fn mirror(server: &GitServer, data: &Path, refs: &[&str]) -> Mirror {
    let remote = RemoteRepo {
        url: Url::parse(&server.url(REPO)).unwrap(),
        full_name: REPO.to_owned(),
    };
    MirrorCache::new(data)
        .prepare(&remote, &SecretString::from(TOKEN), refs)
        .await
        .unwrap()
}

fn limits(per_repo: usize) -> PoolLimits {
    PoolLimits {
        per_repo,
        max_idle: Duration::from_secs(3600),
    }
}

/// A repository with a `.gitignore`d `target/`, a `main` branch and pull request 5 that changes,
/// adds and deletes files.
fn server_with_pull() -> (GitServer, String) {
    let server = GitServer::start(TOKEN);
    server
        .create_repo(
            REPO,
            &[
                ("README.md", "pool\n"),
                (".gitignore", "target/\n"),
                ("src/lib.rs", "pub fn one() -> u32 { 1 }\n"),
                ("src/old.rs", "// removed by the PR\n"),
            ],
        )
        .unwrap();
    server
        .commit(REPO, "feature", &[("src/lib.rs", "pub fn one() -> u32 { 2 }\n")], "two")
        .unwrap();
    let head = server
        .create_pull_head(REPO, 5, "main", &[("src/new.rs", "// added by the PR\n")], "new file")
        .unwrap();
    (server, head)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_released_copy_is_reused_at_another_commit_with_nothing_of_the_last_job_left() {
    let (server, pr_head) = server_with_pull();
    let data = tempfile::tempdir().unwrap();
    let mirror = mirror(&server, data.path(), &["refs/pull/5/head"]).await;
    let pool = WorkspacePool::new(data.path(), limits(2)).unwrap();

    let lease = pool.lease(&mirror, Target::Branch("feature".to_owned())).await.unwrap();
    assert!(!lease.was_warm());
    let dir = lease.path().to_owned();
    assert_eq!(
        std::fs::read_to_string(dir.join("src/lib.rs")).unwrap(),
        "pub fn one() -> u32 { 2 }\n"
    );
    // Everything a job could leave behind.
    std::fs::write(dir.join("README.md"), "changed by the job\n").unwrap();
    std::fs::write(dir.join("untracked.txt"), "junk\n").unwrap();
    std::fs::create_dir_all(dir.join("target/debug")).unwrap();
    std::fs::write(dir.join("target/debug/poison"), "build output of another PR\n").unwrap();
    std::fs::remove_file(dir.join("src/old.rs")).unwrap();
    git(&dir, &["branch", "leftover"]);
    git(&dir, &["config", "core.hooksPath", "/tmp/evil"]);
    std::fs::create_dir_all(dir.join(".git/hooks")).unwrap();
    std::fs::write(dir.join(".git/hooks/post-checkout"), "#!/bin/sh\necho pwned\n").unwrap();
    lease.release().await;
    assert_eq!(pool.idle(REPO), 1);
    assert_eq!(
        git(&dir, &["status", "--porcelain", "--ignored"]),
        "",
        "released copies are clean"
    );

    let lease = pool.lease(&mirror, Target::PullHead(5)).await.unwrap();
    assert!(lease.was_warm());
    assert_eq!(lease.path(), dir, "the same directory came back");
    assert_eq!(lease.repo().head().unwrap().to_string(), pr_head);
    assert_eq!(git(&dir, &["status", "--porcelain", "--ignored"]), "");
    assert_eq!(std::fs::read_to_string(dir.join("README.md")).unwrap(), "pool\n");
    assert!(dir.join("src/new.rs").exists() && dir.join("src/old.rs").exists());
    assert!(!dir.join("target").exists() && !dir.join("untracked.txt").exists());
    let branches = git(&dir, &["branch", "--list"]);
    assert!(
        branches.starts_with("* (HEAD detached") && branches.lines().count() == 1,
        "no branch is left from the last job: {branches}"
    );
    assert!(!dir.join(".git/hooks").exists());
    let config = std::fs::read_to_string(dir.join(".git/config")).unwrap();
    assert!(
        !config.contains("hooksPath") && !config.contains("leftover"),
        "{config}"
    );
    assert_eq!(git(&dir, &["remote", "get-url", "origin"]), server.url(REPO));
    // The remote branches are the server's, as a fresh clone would have them.
    assert_eq!(
        git(&dir, &["for-each-ref", "--format=%(refname)", "refs/remotes/origin"]),
        "refs/remotes/origin/feature\nrefs/remotes/origin/main"
    );
    // The copy is a working repository: git agrees the tree is the PR head's.
    assert_eq!(git(&dir, &["diff", "--stat", &pr_head]), "");
    git(&dir, &["fsck", "--no-progress"]);

    // Back to a branch: a local branch tracking origin, as for a fresh copy.
    lease.release().await;
    let lease = pool.lease(&mirror, Target::Branch("main".to_owned())).await.unwrap();
    assert!(lease.was_warm());
    assert_eq!(git(&dir, &["rev-parse", "--abbrev-ref", "HEAD"]), "main");
    assert_eq!(
        git(&dir, &["rev-parse", "--abbrev-ref", "main@{upstream}"]),
        "origin/main"
    );
    assert!(!dir.join("src/new.rs").exists());
    assert_eq!(git(&dir, &["status", "--porcelain", "--ignored"]), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pool_keeps_at_most_its_limit_and_a_dropped_lease_deletes_its_copy() {
    let (server, _) = server_with_pull();
    let data = tempfile::tempdir().unwrap();
    let mirror = mirror(&server, data.path(), &[]).await;
    let pool = WorkspacePool::new(data.path(), limits(2)).unwrap();

    let mut leases = Vec::new();
    for _ in 0..3 {
        leases.push(pool.lease(&mirror, Target::Branch("main".to_owned())).await.unwrap());
    }
    let paths: Vec<_> = leases.iter().map(|l| l.path().to_owned()).collect();
    assert_eq!(
        paths.iter().collect::<std::collections::HashSet<_>>().len(),
        3,
        "concurrent jobs get their own copy"
    );
    for lease in leases {
        lease.release().await;
    }
    assert_eq!(pool.idle(REPO), 2);
    assert_eq!(paths.iter().filter(|p| p.exists()).count(), 2);

    let lease = pool.lease(&mirror, Target::Branch("main".to_owned())).await.unwrap();
    let path = lease.path().to_owned();
    drop(lease);
    assert!(!path.exists(), "an unreleased copy may hold anything: it is deleted");
    assert_eq!(pool.idle(REPO), 1);

    // An unknown target leaves the idle copy in the pool.
    let error = pool.lease(&mirror, Target::PullHead(99)).await.err().unwrap();
    assert!(error.to_string().contains("pull request #99"), "{error}");
    assert_eq!(pool.idle(REPO), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_of_size_zero_keeps_nothing() {
    let (server, _) = server_with_pull();
    let data = tempfile::tempdir().unwrap();
    let mirror = mirror(&server, data.path(), &[]).await;
    let pool = WorkspacePool::new(data.path(), limits(0)).unwrap();
    let lease = pool.lease(&mirror, Target::Branch("main".to_owned())).await.unwrap();
    let path = lease.path().to_owned();
    lease.release().await;
    assert!(!path.exists());
    assert_eq!(pool.idle(REPO), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eviction_removes_idle_copies_and_unused_mirrors_but_never_one_in_use() {
    let (server, _) = server_with_pull();
    let data = tempfile::tempdir().unwrap();
    let cache = MirrorCache::new(data.path());
    let mirror = mirror(&server, data.path(), &[]).await;
    let pool = WorkspacePool::new(
        data.path(),
        PoolLimits {
            per_repo: 2,
            max_idle: Duration::ZERO,
        },
    )
    .unwrap();

    let busy = pool.lease(&mirror, Target::Branch("main".to_owned())).await.unwrap();
    let idle = pool.lease(&mirror, Target::Branch("main".to_owned())).await.unwrap();
    let idle_path = idle.path().to_owned();
    idle.release().await;

    // A mirror with a copy in use stays, whatever its age.
    let eviction = pool.evict_mirrors(&cache, Duration::ZERO).await.unwrap();
    assert!(eviction.mirrors.is_empty());
    assert!(mirror.path().exists());

    // Idle copies past their age go.
    assert_eq!(pool.evict(), 1);
    assert!(!idle_path.exists());

    // Another process holding a lease (its shared lock on the mirror) also keeps it.
    busy.release().await;
    // `--no-fork`: the one process that holds the lock is the one killed below.
    let mut other = Command::new("flock")
        .args(["--shared", "--no-fork"])
        .arg(data.path().join("mirrors/acme/pool.git.users"))
        .args(["sh", "-c", "echo locked; exec sleep 60"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(other.stdout.take().unwrap()), &mut line).unwrap();
    assert_eq!(line, "locked\n");
    assert!(
        pool.evict_mirrors(&cache, Duration::ZERO)
            .await
            .unwrap()
            .mirrors
            .is_empty()
    );
    other.kill().unwrap();
    other.wait().unwrap();

    // A recently fetched mirror stays under a generous age.
    assert!(
        pool.evict_mirrors(&cache, Duration::from_secs(3600))
            .await
            .unwrap()
            .mirrors
            .is_empty()
    );

    let eviction = pool.evict_mirrors(&cache, Duration::ZERO).await.unwrap();
    assert_eq!(eviction.mirrors, vec![REPO.to_owned()]);
    assert_eq!(eviction.copies, 1);
    assert!(!mirror.path().exists());
    assert_eq!(pool.idle(REPO), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_left_by_an_earlier_process_are_adopted_and_reset() {
    let (server, _) = server_with_pull();
    let data = tempfile::tempdir().unwrap();
    let mirror = mirror(&server, data.path(), &[]).await;
    let path = {
        let pool = WorkspacePool::new(data.path(), limits(2)).unwrap();
        let lease = pool.lease(&mirror, Target::Branch("feature".to_owned())).await.unwrap();
        let path = lease.path().to_owned();
        std::fs::write(path.join("README.md"), "mid-job edit\n").unwrap();
        // The process dies: the lease is never released nor dropped.
        std::mem::forget(lease);
        path
    };
    let pool = WorkspacePool::new(data.path(), limits(2)).unwrap();
    assert_eq!(pool.idle(REPO), 1);
    let lease = pool.lease(&mirror, Target::Branch("main".to_owned())).await.unwrap();
    assert!(lease.was_warm());
    assert_eq!(lease.path(), path);
    assert_eq!(std::fs::read_to_string(path.join("README.md")).unwrap(), "pool\n");
    assert_eq!(git(&path, &["status", "--porcelain", "--ignored"]), "");

    // A new copy never takes an adopted copy's directory.
    let second = pool.lease(&mirror, Target::Branch("main".to_owned())).await.unwrap();
    assert_ne!(second.path(), path);
}
