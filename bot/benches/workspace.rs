//! Workspace preparation for a large repository served over smart HTTP by the tests' git server
//! (Debian's `git http-backend`): 50,000 files, 300 commits, and pull request heads a few files
//! apart. Three ways to get a job's working copy at a pull request's head, 5 rounds each (median):
//!
//! - `fresh clone`: a new data directory, so a network clone into a new mirror, then a checkout;
//! - `fresh copy`: the mirror exists (an incremental fetch), a new copy is checked out from it;
//! - `warm lease`: the mirror exists (an incremental fetch), and the pool hands back an idle copy
//!   moved to the new head (`warm lease, no fetch` skips the fetch: the job's commit is known to be
//!   in the mirror already). `release` (cleaning a copy after a job) is off the job's path.
//!
//! Run: `cargo bench -p pitcrew --bench workspace` (figures go in BENCHMARKS.md).

#![allow(
    clippy::print_stderr,
    clippy::print_stdout,
    reason = "a benchmark reports on the terminal"
)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pitcrew::workspace::mirror::{MirrorCache, RemoteRepo, Target};
use pitcrew::workspace::pool::{PoolLimits, WorkspacePool};
use pitcrew_tests::git_server::GitServer;
use secrecy::SecretString;
use url::Url;

const TOKEN: &str = "ghs_benchToken";
const REPO: &str = "bench/big";
const FILES: usize = 50_000;
const HISTORY: usize = 300;
const PULLS: u64 = 6;
const ROUNDS: usize = 5;

type Error = Box<dyn std::error::Error>;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// Writes the repository with `git fast-import`: one commit of every file, then `HISTORY` commits
/// of three edits each on `main`, then `PULLS` pull request heads of five edits each.
fn build_repository(bare: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(bare)?;
    let status = Command::new("git")
        .args(["init", "-q", "--bare", "-b", "main"])
        .current_dir(bare)
        .status()?;
    if !status.success() {
        return Err("git init failed".into());
    }
    let mut child = Command::new("git")
        .args(["fast-import", "--quiet"])
        .current_dir(bare)
        .stdin(Stdio::piped())
        .spawn()?;
    let mut stream = std::io::BufWriter::new(child.stdin.take().ok_or("no stdin")?);
    let path = |i: usize| format!("src/m{:03}/f{:03}.txt", i / 100, i % 100);
    let mut when = 1_700_000_000_u64;
    let mut mark = 0_u64;
    let mut commit = |stream: &mut dyn Write, reference: &str, parent: Option<&str>, message: &str| {
        when += 60;
        mark += 1;
        write!(
            stream,
            "commit {reference}\nmark :{mark}\ncommitter Bench <bench@example.invalid> {when} +0000\ndata {}\n{message}\n",
            message.len()
        )?;
        if let Some(parent) = parent {
            writeln!(stream, "from {parent}")?;
        }
        Ok::<(), std::io::Error>(())
    };
    commit(&mut stream, "refs/heads/main", None, "all files")?;
    for i in 0..FILES {
        let content = format!("file {i}\nline two of file {i}\n");
        write!(
            stream,
            "M 100644 inline {}\ndata {}\n{content}\n",
            path(i),
            content.len()
        )?;
    }
    for n in 0..HISTORY {
        commit(&mut stream, "refs/heads/main", None, &format!("change {n}"))?;
        for k in 0..3 {
            let i = (n * 7919 + k * 104_729) % FILES;
            let content = format!("file {i}\nchanged by commit {n}\n");
            write!(
                stream,
                "M 100644 inline {}\ndata {}\n{content}\n",
                path(i),
                content.len()
            )?;
        }
    }
    // Marks count commits: the last one on main is the first commit plus the history.
    let main_tip = format!(":{}", 1 + HISTORY);
    for pr in 1..=PULLS {
        commit(
            &mut stream,
            &format!("refs/pull/{pr}/head"),
            Some(&main_tip),
            &format!("pull request {pr}"),
        )?;
        for k in 0..5 {
            let i = (pr as usize * 31 + k * 9973) % FILES;
            let content = format!("file {i}\nchanged by pull request {pr}\n");
            write!(
                stream,
                "M 100644 inline {}\ndata {}\n{content}\n",
                path(i),
                content.len()
            )?;
        }
    }
    drop(stream);
    if !child.wait()?.success() {
        return Err("git fast-import failed".into());
    }
    // Served packed, as a real forge would.
    let status = Command::new("git")
        .args(["repack", "-adq"])
        .current_dir(bare)
        .status()?;
    if !status.success() {
        return Err("git repack failed".into());
    }
    Ok(())
}

fn main() -> Result<(), Error> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(bench())
}

async fn bench() -> Result<(), Error> {
    let server = GitServer::try_start(TOKEN)?;
    let started = Instant::now();
    build_repository(&server.repo_path(REPO))?;
    eprintln!(
        "repository: {FILES} files, {} commits, built in {:.1} s",
        1 + HISTORY + PULLS as usize,
        started.elapsed().as_secs_f64()
    );
    let remote = RemoteRepo {
        url: Url::parse(&server.url(REPO))?,
        full_name: REPO.to_owned(),
    };
    let token = SecretString::from(TOKEN);
    let pull_refs: Vec<String> = (1..=PULLS).map(|n| format!("refs/pull/{n}/head")).collect();
    let refs: Vec<&str> = pull_refs.iter().map(String::as_str).collect();
    // On the same disk as a server's data directory would be (not a tmpfs).
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;

    let mut fresh_clone = Vec::new();
    for round in 0..ROUNDS {
        let data = scratch.path().join(format!("cold-{round}"));
        let t = Instant::now();
        let mirror = MirrorCache::new(&data).prepare(&remote, &token, &refs).await?;
        mirror.checkout(&data.join("job"), Target::PullHead(1)).await?;
        fresh_clone.push(t.elapsed());
        std::fs::remove_dir_all(&data)?;
    }

    let data = scratch.path().join("warm");
    let cache = MirrorCache::new(&data);
    let mirror = cache.prepare(&remote, &token, &refs).await?;
    let mut fresh_copy = Vec::new();
    for round in 0..ROUNDS {
        let job = data.join(format!("job-{round}"));
        let t = Instant::now();
        let mirror = cache.prepare(&remote, &token, &refs).await?;
        mirror
            .checkout(&job, Target::PullHead(1 + round as u64 % PULLS))
            .await?;
        fresh_copy.push(t.elapsed());
        std::fs::remove_dir_all(&job)?;
    }

    let pool = WorkspacePool::new(&data, PoolLimits::default())?;
    pool.lease(&mirror, Target::PullHead(1)).await?.release().await;
    let (mut warm, mut warm_no_fetch, mut release) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..ROUNDS * 2 {
        let target = Target::PullHead(2 + round as u64 % (PULLS - 1));
        let t = Instant::now();
        let lease = if round % 2 == 0 {
            let mirror = cache.prepare(&remote, &token, &refs).await?;
            let lease = pool.lease(&mirror, target).await?;
            warm.push(t.elapsed());
            lease
        } else {
            let lease = pool.lease(&mirror, target).await?;
            warm_no_fetch.push(t.elapsed());
            lease
        };
        if !lease.was_warm() {
            return Err("the pool did not hand back a warm copy".into());
        }
        // What a job leaves behind: an edit and some build output.
        std::fs::write(lease.path().join("src/m000/f000.txt"), "edited\n")?;
        std::fs::create_dir_all(lease.path().join("target"))?;
        std::fs::write(lease.path().join("target/out.o"), "object\n")?;
        let t = Instant::now();
        lease.release().await;
        release.push(t.elapsed());
    }

    let fresh_clone = median(fresh_clone);
    let fresh_copy = median(fresh_copy);
    let warm = median(warm);
    println!("workspace preparation, {FILES} files, median of {ROUNDS}:");
    println!("  fresh clone (network clone + checkout)  {:>8.1} ms", ms(fresh_clone));
    println!("  fresh copy from the mirror (+ fetch)    {:>8.1} ms", ms(fresh_copy));
    println!("  warm lease (+ fetch)                    {:>8.1} ms", ms(warm));
    println!(
        "  warm lease, commit already mirrored     {:>8.1} ms",
        ms(median(warm_no_fetch))
    );
    println!(
        "  release (clean, off the job's path)     {:>8.1} ms",
        ms(median(release))
    );
    println!(
        "  warm lease (+ fetch) vs fresh clone:    {:.1}x faster",
        fresh_clone.as_secs_f64() / warm.as_secs_f64()
    );
    Ok(())
}
