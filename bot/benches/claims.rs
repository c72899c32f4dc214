//! Claim latency and dispatch throughput with 1,000 queued jobs, on the job stores themselves
//! (`JobStore::enqueue`, `claim`, `finish`): PostgreSQL (a throwaway server on this machine with its
//! production durability, `fsync` and `synchronous_commit` on) and SQLite (`synchronous = FULL`) for
//! comparison, each in a fresh database per run.
//!
//! The queue: 1,000 jobs over 556 keys (pull requests) in 20 repositories, most keys with one job
//! and some with two, three or five (a review and a fix, a repeated command), in a shuffled arrival
//! order, each with a ~600-byte request. Measured:
//!
//! - *claim latency*: one claimer takes the oldest claimable job 500 times (after 20 not counted),
//!   each claim timed, then (untimed) finishes it and enqueues a new job on the same key, so the
//!   queue stays 1,000 deep;
//! - the same *after 10,000 finished jobs*, run through the store first (a busy month of history,
//!   which `[server] retain` keeps), older than every queued job;
//! - *an empty claim*: 1,000 jobs queued behind 10 running keys (100 each), so a claim looks at
//!   every queued job and finds none (what every idle worker asks whenever it is woken);
//! - *throughput*: N claimers (1, 4, 16) spread over S store instances (1 or 3 `PgStore`s, as
//!   replicas would have; SQLite is one process's, so 1) claim and finish until all 1,000 jobs are
//!   done. A claimer that finds nothing claimable waits, as the worker pool does, for the store's
//!   "jobs" signal (every finish sends one) or 20 ms. Jobs/s = 1,000 / the time from the first claim
//!   to the last finish. The bench fails unless every job succeeded once and each key's jobs ran in
//!   arrival order.
//!
//! Every figure is the median of `CLAIMS_RUNS` runs (3 by default), each in a fresh database
//! (PostgreSQL's analysed once the jobs are in, as autovacuum would have done).
//!
//! Run: `cargo bench -p pitcrew --bench claims` (figures go in BENCHMARKS.md).

#![allow(
    clippy::print_stderr,
    clippy::print_stdout,
    reason = "a benchmark reports on the terminal"
)]

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use pitcrew::jobs::{Finish, JobId, JobState, JobStore, NewJob, PgStore, Signal, SqliteStore, now_ms};
use pitcrew_tests::postgres::{Postgres, USER};
use serde_json::json;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The queue's depth.
const JOBS: usize = 1000;
/// How many jobs each key gets, in turn (18 per 10 keys: 1,000 jobs over 556 keys).
const PER_KEY: [usize; 10] = [1, 1, 2, 1, 3, 1, 1, 2, 1, 5];
const REPOS: usize = 20;
const LEASE: Duration = Duration::from_secs(60);
/// Finished jobs ahead of the queue in the second latency measurement.
const HISTORY: usize = 10_000;
/// Claims timed for the latency, after the warm-up ones.
const LATENCY_SAMPLES: usize = 500;
const WARMUP_CLAIMS: usize = 20;
/// Empty claims timed.
const EMPTY_SAMPLES: usize = 200;
/// Claimers, and store instances they are spread over (PostgreSQL only: SQLite is one process's).
const CLAIMERS: [usize; 3] = [1, 4, 16];
const PG_INSTANCES: [usize; 2] = [1, 3];
/// How long a claimer that found nothing waits for a "jobs" signal before it asks again.
const IDLE_WAIT: Duration = Duration::from_millis(20);

/// The stores under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "SQLite",
            Backend::Postgres => "PostgreSQL",
        }
    }
}

/// Makes fresh databases: a new SQLite file in its own directory, or a new database on the one
/// PostgreSQL server.
struct Databases {
    postgres: Postgres,
    made: usize,
    /// The SQLite directories, kept until the end (the stores may still hold their files).
    dirs: Vec<tempfile::TempDir>,
}

/// One fresh database and the store handles on it.
struct Fresh {
    stores: Vec<Arc<dyn JobStore>>,
    /// PostgreSQL's, for [`Fresh::analyze`].
    url: Option<String>,
}

impl Fresh {
    /// Gathers the planner's statistics on the jobs just enqueued, as autovacuum does within a
    /// minute of them (`autovacuum_naptime`) on a real database. Without them a fresh table's
    /// claim checks a job's older siblings by reading every queued job.
    async fn analyze(&self) -> Result<(), Error> {
        let Some(url) = &self.url else {
            return Ok(());
        };
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
        let connection = tokio::spawn(connection);
        client.batch_execute("ANALYZE jobs").await?;
        drop(client);
        connection.await??;
        Ok(())
    }
}

impl Databases {
    /// `instances` handles on one fresh database (every PostgreSQL handle with its own connection
    /// pool and listener, as a replica's).
    async fn fresh(&mut self, backend: Backend, instances: usize) -> Result<Fresh, Error> {
        self.made += 1;
        match backend {
            Backend::Sqlite => {
                // On the build disk, as a data directory would be: every commit is an fsync.
                let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
                let store: Arc<dyn JobStore> = Arc::new(SqliteStore::open(dir.path())?);
                self.dirs.push(dir);
                Ok(Fresh {
                    stores: vec![store],
                    url: None,
                })
            }
            Backend::Postgres => {
                let name = format!("claims_{}", self.made);
                self.postgres.psql(&format!("CREATE DATABASE {name}"))?;
                let url = format!("postgres://{USER}@127.0.0.1:{}/{name}", self.postgres.port());
                let mut stores: Vec<Arc<dyn JobStore>> = Vec::with_capacity(instances);
                for _ in 0..instances {
                    stores.push(Arc::new(PgStore::connect(&url).await?));
                }
                Ok(Fresh { stores, url: Some(url) })
            }
        }
    }
}

/// A small deterministic generator (xorshift64*), for the arrival order.
struct Shuffle(u64);

impl Shuffle {
    fn next(&mut self, bound: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % bound as u64) as usize
    }
}

fn key_of(k: usize) -> (String, String) {
    let repo = format!("org{}/service-{}", k % REPOS, k % 7);
    let key = format!("{repo}#{}", 1000 + k);
    (repo, key)
}

fn job(repo: &str, key: &str, n: usize) -> NewJob {
    let kind = ["review", "fix", "explain", "triage"][n % 4];
    NewJob {
        kind: kind.to_owned(),
        repo: repo.to_owned(),
        key: key.to_owned(),
        // About the size of a command's request: who asked, where, and the comment's text.
        request: json!({
            "kind": kind,
            "repo": repo,
            "number": key.rsplit('#').next(),
            "requester": {"login": "alice", "id": 4242, "association": "COLLABORATOR"},
            "comment": {
                "id": 2_000_000_000_u64 + n as u64,
                "body": format!("@agent {kind} please: the parser drops the last token of a quoted string \
                                 when the line ends in a comment, see the failing case in tests/quote.rs; \
                                 keep the public API as it is ({n})"),
                "html_url": format!("https://github.com/{repo}/pull/{}#issuecomment-{n}", 1000 + n),
            },
            "head": {"ref": "fix-parser", "sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e"},
            "base": {"ref": "main", "sha": "e7fdf7640066d71ad16a86fbcbb9c6a10a18af4f"},
        }),
        delivery: None,
        max_attempts: NewJob::DEFAULT_MAX_ATTEMPTS,
    }
}

/// The 1,000 jobs' keys in arrival order: every key's jobs, shuffled together.
fn arrivals() -> Vec<usize> {
    let mut keys = Vec::with_capacity(JOBS);
    let mut k = 0;
    while keys.len() < JOBS {
        for _ in 0..PER_KEY[k % PER_KEY.len()].min(JOBS - keys.len()) {
            keys.push(k);
        }
        k += 1;
    }
    let mut shuffle = Shuffle(0x9E37_79B9_7F4A_7C15);
    for i in (1..keys.len()).rev() {
        let j = shuffle.next(i + 1);
        keys.swap(i, j);
    }
    keys
}

async fn enqueue_all(store: &Arc<dyn JobStore>, keys: &[usize]) -> Result<HashMap<JobId, usize>, Error> {
    let mut of = HashMap::with_capacity(keys.len());
    for (n, k) in keys.iter().enumerate() {
        let (repo, key) = key_of(*k);
        let id = store.enqueue(job(&repo, &key, n), now_ms()).await?;
        of.insert(id, *k);
    }
    Ok(of)
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    // Nearest rank: the smallest sample at or above fraction `p` of them.
    let rank = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// p50, p99 and max of `samples`, in ms.
fn summary(mut samples: Vec<Duration>) -> [f64; 3] {
    samples.sort();
    [
        ms(percentile(&samples, 0.50)),
        ms(percentile(&samples, 0.99)),
        ms(samples[samples.len() - 1]),
    ]
}

/// Runs `HISTORY` jobs of their own keys through the store (enqueued, claimed, finished), eight at
/// a time: the finished jobs a store keeps (`[server] retain`, 30 days by default), older than
/// anything queued.
async fn history(store: &Arc<dyn JobStore>) -> Result<(), Error> {
    const AT_ONCE: usize = 8;
    let mut tasks = tokio::task::JoinSet::new();
    for t in 0..AT_ONCE {
        let store = Arc::clone(store);
        tasks.spawn(async move {
            for n in (t..HISTORY).step_by(AT_ONCE) {
                let repo = format!("org{}/service-{}", n % REPOS, n % 7);
                let key = format!("{repo}#h{n}");
                store.enqueue(job(&repo, &key, n), now_ms()).await?;
            }
            Ok::<_, Error>(())
        });
    }
    while let Some(joined) = tasks.join_next().await {
        joined??;
    }
    for t in 0..AT_ONCE {
        let store = Arc::clone(store);
        tasks.spawn(async move {
            // Every key has one job: nothing claimable means nothing queued.
            while let Some(claim) = store.claim(&format!("bench-history-{t}"), LEASE, now_ms()).await? {
                store
                    .finish(&claim.lease, Finish::Succeeded(json!({})), now_ms())
                    .await?;
            }
            Ok::<_, Error>(())
        });
    }
    while let Some(joined) = tasks.join_next().await {
        joined??;
    }
    Ok(())
}

/// Claim latency with the queue 1,000 deep, after `HISTORY` finished jobs when `with_history`;
/// also the finish's.
async fn latency(
    databases: &mut Databases,
    backend: Backend,
    with_history: bool,
) -> Result<([f64; 3], [f64; 3]), Error> {
    let fresh = databases.fresh(backend, 1).await?;
    let store = Arc::clone(&fresh.stores[0]);
    if with_history {
        history(&store).await?;
    }
    let keys = arrivals();
    enqueue_all(&store, &keys).await?;
    fresh.analyze().await?;
    let (mut claims, mut finishes) = (Vec::new(), Vec::new());
    for n in 0..WARMUP_CLAIMS + LATENCY_SAMPLES {
        let started = Instant::now();
        let claim = store
            .claim("bench-latency", LEASE, now_ms())
            .await?
            .ok_or("nothing to claim with 1,000 queued")?;
        let claimed = started.elapsed();
        let started = Instant::now();
        store
            .finish(&claim.lease, Finish::Succeeded(json!({})), now_ms())
            .await?;
        let finished = started.elapsed();
        // A new request on the same pull request: the queue stays 1,000 deep.
        store
            .enqueue(job(&claim.job.repo, &claim.job.key, JOBS + n), now_ms())
            .await?;
        if n >= WARMUP_CLAIMS {
            claims.push(claimed);
            finishes.push(finished);
        }
    }
    let queued = store.count_by_state().await?[&JobState::Queued];
    if queued != JOBS as u64 {
        return Err(format!("{queued} jobs queued after the latency run, not {JOBS}").into());
    }
    Ok((summary(claims), summary(finishes)))
}

/// A claim that finds nothing: 1,000 queued jobs of 10 keys, each key with a running job.
async fn empty_claim(databases: &mut Databases, backend: Backend) -> Result<[f64; 3], Error> {
    let fresh = databases.fresh(backend, 1).await?;
    let store = Arc::clone(&fresh.stores[0]);
    for n in 0..JOBS + 10 {
        let (repo, key) = key_of(n % 10);
        store.enqueue(job(&repo, &key, n), now_ms()).await?;
    }
    fresh.analyze().await?;
    for _ in 0..10 {
        store
            .claim("bench-holder", LEASE, now_ms())
            .await?
            .ok_or("the first job of a key was not claimable")?;
    }
    let mut samples = Vec::with_capacity(EMPTY_SAMPLES);
    for _ in 0..WARMUP_CLAIMS + EMPTY_SAMPLES {
        let started = Instant::now();
        if store.claim("bench-empty", LEASE, now_ms()).await?.is_some() {
            return Err("a job was claimed while its key had a running one".into());
        }
        samples.push(started.elapsed());
    }
    Ok(summary(samples.split_off(WARMUP_CLAIMS)))
}

/// What one throughput run measured.
struct Throughput {
    jobs_per_second: f64,
    /// The claims that got a job: p50, p99, max in ms.
    claim: [f64; 3],
    /// Claims that found nothing claimable (all remaining jobs behind running keys, or taken).
    empty: usize,
}

/// `claimers` claimers over `instances` store handles, until all 1,000 jobs are finished.
async fn throughput(
    databases: &mut Databases,
    backend: Backend,
    instances: usize,
    claimers: usize,
) -> Result<Throughput, Error> {
    let fresh = databases.fresh(backend, instances).await?;
    let stores = &fresh.stores;
    let keys = arrivals();
    let key_of_job = Arc::new(enqueue_all(&stores[0], &keys).await?);
    fresh.analyze().await?;
    let done = Arc::new(AtomicUsize::new(0));
    let empty = Arc::new(AtomicUsize::new(0));
    // Each key's jobs in the order they were claimed (each one is recorded before it is finished,
    // so before the key's next one can be claimed).
    let order: Arc<Mutex<HashMap<usize, Vec<JobId>>>> = Arc::new(Mutex::new(HashMap::new()));
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..claimers {
        let store = Arc::clone(&stores[c % instances]);
        let (done, empty, order, key_of_job) = (
            Arc::clone(&done),
            Arc::clone(&empty),
            Arc::clone(&order),
            Arc::clone(&key_of_job),
        );
        let worker = format!("bench-{}-{c}", c % instances);
        tasks.spawn(async move {
            let mut signals = store.signals();
            let mut latencies = Vec::new();
            while done.load(Ordering::SeqCst) < JOBS {
                let asked = Instant::now();
                match store.claim(&worker, LEASE, now_ms()).await? {
                    Some(claim) => {
                        latencies.push(asked.elapsed());
                        let key = *key_of_job.get(&claim.job.id).ok_or("a job the bench did not enqueue")?;
                        order
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .entry(key)
                            .or_default()
                            .push(claim.job.id);
                        store
                            .finish(&claim.lease, Finish::Succeeded(json!({})), now_ms())
                            .await?;
                        done.fetch_add(1, Ordering::SeqCst);
                    }
                    None => {
                        empty.fetch_add(1, Ordering::Relaxed);
                        // As the pool does: wait for a finish anywhere (its signal), or a while.
                        let woken = async {
                            loop {
                                match signals.recv().await {
                                    Ok(Signal::Jobs | Signal::Resync)
                                    | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => return,
                                    Ok(_) => {}
                                    Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                                        std::future::pending::<()>().await;
                                    }
                                }
                            }
                        };
                        let _ = tokio::time::timeout(IDLE_WAIT, woken).await;
                    }
                }
            }
            Ok::<_, Error>(latencies)
        });
    }
    let mut latencies = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        latencies.extend(joined??);
    }
    let elapsed = started.elapsed();

    let counts = stores[0].count_by_state().await?;
    if counts[&JobState::Succeeded] != JOBS as u64 || latencies.len() != JOBS {
        return Err(format!(
            "{} claims and states {counts:?}, not {JOBS} succeeded once each",
            latencies.len()
        )
        .into());
    }
    let order = order.lock().unwrap_or_else(PoisonError::into_inner);
    let mut seen = HashSet::new();
    for ids in order.values() {
        if ids.windows(2).any(|pair| pair[0] >= pair[1]) {
            return Err(format!("a key's jobs ran out of arrival order: {ids:?}").into());
        }
        seen.extend(ids.iter().copied());
    }
    if seen.len() != JOBS {
        return Err(format!("{} distinct jobs claimed, not {JOBS}", seen.len()).into());
    }
    Ok(Throughput {
        jobs_per_second: JOBS as f64 / elapsed.as_secs_f64(),
        claim: summary(latencies),
        empty: empty.load(Ordering::Relaxed),
    })
}

fn runs() -> Result<usize, Error> {
    match std::env::var("CLAIMS_RUNS") {
        Ok(text) => text
            .parse()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| format!("CLAIMS_RUNS={text:?}: expected a positive number").into()),
        Err(_) => Ok(3),
    }
}

/// The element-wise median of `runs` figures.
fn median_of(runs: &[[f64; 3]]) -> [f64; 3] {
    let mut out = [0.0; 3];
    for (i, slot) in out.iter_mut().enumerate() {
        let mut column: Vec<f64> = runs.iter().map(|run| run[i]).collect();
        *slot = median(&mut column);
    }
    out
}

fn fmt3(figures: [f64; 3]) -> String {
    format!("{:.2} / {:.2} / {:.2}", figures[0], figures[1], figures[2])
}

fn main() -> Result<(), Error> {
    let runs = runs()?;
    // The store's work runs here; two workers, as `pitcrew serve` has on this 2-core machine.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let postgres = Postgres::start_durable().ok_or("this bench needs PostgreSQL (apt-get install postgresql-15)")?;
    let mut databases = Databases {
        postgres,
        made: 0,
        dirs: Vec::new(),
    };
    println!(
        "claims: {JOBS} jobs queued over {} keys; {runs} runs per figure (median); durable PostgreSQL on 127.0.0.1:{}, \
         SQLite synchronous=FULL; ms as p50 / p99 / max",
        arrivals().into_iter().collect::<HashSet<_>>().len(),
        databases.postgres.port()
    );
    runtime.block_on(async {
        for backend in [Backend::Postgres, Backend::Sqlite] {
            let (mut claims, mut finishes, mut empties) = (Vec::new(), Vec::new(), Vec::new());
            let (mut late_claims, mut late_finishes) = (Vec::new(), Vec::new());
            for _ in 0..runs {
                let (claim, finish) = latency(&mut databases, backend, false).await?;
                eprintln!(
                    "  {} claim {} ms, finish {} ms",
                    backend.name(),
                    fmt3(claim),
                    fmt3(finish)
                );
                claims.push(claim);
                finishes.push(finish);
                let (claim, finish) = latency(&mut databases, backend, true).await?;
                eprintln!(
                    "  {} after {HISTORY} finished: claim {} ms, finish {} ms",
                    backend.name(),
                    fmt3(claim),
                    fmt3(finish)
                );
                late_claims.push(claim);
                late_finishes.push(finish);
                let empty = empty_claim(&mut databases, backend).await?;
                eprintln!("  {} empty claim {} ms", backend.name(), fmt3(empty));
                empties.push(empty);
            }
            println!(
                "{:<10} one claimer, 1,000 queued: claim {} ms; finish {} ms",
                backend.name(),
                fmt3(median_of(&claims)),
                fmt3(median_of(&finishes)),
            );
            println!(
                "{:<10} one claimer, 1,000 queued after {HISTORY} finished: claim {} ms; finish {} ms",
                backend.name(),
                fmt3(median_of(&late_claims)),
                fmt3(median_of(&late_finishes)),
            );
            println!(
                "{:<10} a claim finding nothing among 1,000 queued: {} ms",
                backend.name(),
                fmt3(median_of(&empties)),
            );
        }
        for backend in [Backend::Postgres, Backend::Sqlite] {
            let instance_counts: &[usize] = match backend {
                Backend::Postgres => &PG_INSTANCES,
                Backend::Sqlite => &[1],
            };
            for &instances in instance_counts {
                for claimers in CLAIMERS {
                    let mut rates = Vec::new();
                    let mut claims = Vec::new();
                    let mut empties = Vec::new();
                    for _ in 0..runs {
                        let run = throughput(&mut databases, backend, instances, claimers).await?;
                        eprintln!(
                            "  {} x{instances} {claimers:>2} claimers: {:.0} jobs/s, claim {} ms, {} empty claims",
                            backend.name(),
                            run.jobs_per_second,
                            fmt3(run.claim),
                            run.empty
                        );
                        rates.push(run.jobs_per_second);
                        claims.push(run.claim);
                        empties.push(run.empty as f64);
                    }
                    println!(
                        "{:<10} {instances} instance{} {claimers:>2} claimer{}: {:>6.0} jobs/s claimed and finished; \
                         claim {} ms; {:.0} empty claims",
                        backend.name(),
                        if instances == 1 { " " } else { "s" },
                        if claimers == 1 { " " } else { "s" },
                        median(&mut rates),
                        fmt3(median_of(&claims)),
                        median(&mut empties),
                    );
                }
            }
        }
        Ok::<_, Error>(())
    })?;
    Ok(())
}
