//! Mirrors and per-job copies against a real git smart-HTTP server: creation, incremental fetches,
//! pull-request heads, a wrong token, concurrency, and the token never landing on disk.

use std::path::Path;
use std::process::Command;

use pitcrew::workspace::WorkspaceError;
use pitcrew::workspace::mirror::{MirrorCache, RemoteRepo, Target};
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
