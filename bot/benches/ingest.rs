//! Webhook ingest under load: an open-loop generator sends signed ~10 KB `issue_comment`
//! deliveries (triagebot's recording, padded in the comment's body, a unique `X-GitHub-Delivery`
//! each) over loopback to `pitcrew serve`'s HTTP server with the real SQLite store (`synchronous =
//! FULL`) in a data directory on disk, at fixed rates for 10 s each: 500/s, 1000/s, then rising
//! until the server no longer keeps up with the target latency.
//!
//! `INGEST_STORE=postgres` stores in PostgreSQL instead (a throwaway server on this machine with
//! its production durability: `fsync` and `synchronous_commit` on), and `INGEST_REPLICAS=3` starts
//! three servers sharing that database, each on its own port and runtime as separate processes
//! would be, the generator spreading the deliveries round-robin over them as a reverse proxy would.
//! When a fixed rate is not sustained, the search for the highest rate goes between the fixed rates
//! instead of above them.
//!
//! Latency is measured from each request's *scheduled* send time to the end of its response, so a
//! server (or a generator) that falls behind shows it as latency instead of silently sending less
//! (no coordinated omission). The generator has its own runtime and pacing thread; the server runs
//! on a 2-worker runtime, as `pitcrew serve` would on this 2-core machine, and logs JSON at `info`
//! (into a sink) so log formatting costs what it costs in production.
//!
//! The comments do not mention the trigger: the dispatcher reads, parses and marks every delivery
//! processed (the common case: most comments are not for the bot) without creating jobs or calling
//! GitHub, so what is measured is ingest, not the fake GitHub. Afterwards the store must hold
//! exactly the deliveries answered 202.
//!
//! Run: `cargo bench -p pitcrew --bench ingest`, or `INGEST_STORE=postgres INGEST_REPLICAS=3 cargo
//! bench -p pitcrew --bench ingest` (figures go in BENCHMARKS.md).

#![allow(
    clippy::print_stderr,
    clippy::print_stdout,
    reason = "a benchmark reports on the terminal"
)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use pitcrew::config::{Config, LoadOptions};
use pitcrew::jobs::{Finish, Job, JobControl, JobHandler, JobStore};
use pitcrew::server::RunningServer;
use pitcrew::server::signature::sign;
use pitcrew::server::{Server, ServerOptions};
use pitcrew_tests::fake_github::{FakeGithub, Issue, Permission, Repo};
use pitcrew_tests::postgres::Postgres;
use pitcrew_tests::scenario::{Comment, comment_payload};
use pitcrew_tests::server_config::ServerOverrides;
use secrecy::SecretString;
use serde_json::{Value, json};

const REPO: &str = "ehuss/triagebot-test";
const PR: u64 = 111;
const SECRET: &str = "the ingest benchmark's webhook secret";
/// The size every delivery is padded to (the comment's body grows until the JSON is this long).
const BODY_BYTES: usize = 10 * 1024;
const PHASE: Duration = Duration::from_secs(10);
const WARMUP_RATE: u32 = 200;
const WARMUP: Duration = Duration::from_secs(2);
/// The fixed rates, then the search for the highest rate that still meets the target: upwards from
/// the last fixed rate when every fixed rate was sustained, else between the highest one sustained
/// and the first one not.
const FIXED_RATES: [u32; 2] = [500, 1000];
const SEARCH_RATES: [u32; 15] = [
    100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1250, 1500, 2000, 3000, 4000,
];
/// The latency target (p99) that the search for the highest sustainable rate holds to.
const TARGET_P99: Duration = Duration::from_millis(20);
/// How many pull requests the comments are spread over.
const SPREAD: u64 = 100;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The store the servers use (`INGEST_STORE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StoreKind {
    /// The default: each server's own data directory.
    Sqlite,
    /// One throwaway PostgreSQL server, durable, shared by every replica.
    Postgres,
}

/// What the environment asks for: the store, and how many servers share it (`INGEST_REPLICAS`).
struct Setup {
    store: StoreKind,
    replicas: usize,
}

impl Setup {
    fn from_env() -> Result<Setup, Error> {
        let store = match std::env::var("INGEST_STORE").as_deref() {
            Err(std::env::VarError::NotPresent) | Ok("" | "sqlite") => StoreKind::Sqlite,
            Ok("postgres") => StoreKind::Postgres,
            Ok(other) => return Err(format!("INGEST_STORE={other:?}: expected sqlite or postgres").into()),
            Err(error) => return Err(format!("INGEST_STORE: {error}").into()),
        };
        let replicas = match std::env::var("INGEST_REPLICAS") {
            Ok(text) => text
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=16).contains(n))
                .ok_or_else(|| format!("INGEST_REPLICAS={text:?}: expected a number from 1 to 16"))?,
            Err(_) => 1,
        };
        if replicas > 1 && store == StoreKind::Sqlite {
            return Err("INGEST_REPLICAS above 1 needs INGEST_STORE=postgres: SQLite is one server's".into());
        }
        Ok(Setup { store, replicas })
    }
}

/// One `pitcrew serve`: its own runtime (two workers, as `pitcrew serve` has on this 2-core
/// machine) and data directory, as a separate process would have.
struct Replica {
    runtime: tokio::runtime::Runtime,
    server: RunningServer,
    data: tempfile::TempDir,
}

/// One request's fate.
struct Sample {
    /// From the scheduled send time to the end of the response.
    latency: Duration,
    /// When the response ended, from the phase's start.
    done_at: Duration,
    /// The HTTP status, or `None` when the request failed (connection error, timeout).
    status: Option<u16>,
}

/// What one phase measured.
struct PhaseResult {
    offered: u32,
    sent: usize,
    accepted: usize,
    errors: usize,
    achieved: f64,
    p50: Duration,
    p90: Duration,
    p99: Duration,
    max: Duration,
}

impl PhaseResult {
    /// Kept up with the offered rate (within 3%), answered everything with 202, and met the
    /// latency target.
    fn sustained(&self) -> bool {
        self.errors == 0 && self.achieved >= f64::from(self.offered) * 0.97 && self.p99 <= TARGET_P99
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    // Nearest rank: the smallest sample at or above fraction `p` of them.
    let rank = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn config(github: &FakeGithub, data_dir: &std::path::Path, database: Option<&Postgres>) -> Result<Config, Error> {
    // No job runs here, so no model is ever called.
    let mut overrides = ServerOverrides::new(github, SECRET, data_dir);
    let mut env = BTreeMap::new();
    if let Some(database) = database {
        overrides = overrides.set("server.store", "postgres");
        env.insert("PITCREW_SERVER_DATABASE_URL".to_owned(), database.url());
    }
    Config::load(LoadOptions {
        config_path: None,
        env: &env,
        overrides: &overrides.build(),
    })
    .map_err(|error| format!("the configuration: {error}").into())
}

/// A job handler that finishes at once (none is expected to run).
fn instant_handler() -> JobHandler {
    Arc::new(|_job: Job, _control: JobControl| Box::pin(async { Finish::Succeeded(json!({})) }))
}

/// The recorded pull request comment delivery, with the comment's body padded so that the JSON is
/// `BODY_BYTES` long. Per delivery only the comment's id changes (a fixed-width number), so every
/// body has the same length.
struct Template {
    payload: Value,
}

impl Template {
    fn load(github: &FakeGithub) -> Result<Template, Error> {
        let comment = Comment {
            id: 0,
            login: "alice",
            user_id: 4242,
            association: "COLLABORATOR",
            body: "",
        };
        let clone_url = format!("https://github.com/{REPO}.git");
        let payload = comment_payload(REPO, &clone_url, PR, &comment, Some(github.installation_id()));
        let mut template = Template { payload };
        // A review comment with no mention of the bot, grown word by word to the size wanted.
        let words = "Thanks, this reads well; one more pass over the error paths would not hurt. ";
        let mut text = String::new();
        let base = template.body(0)?.len();
        while base + text.len() + words.len() <= BODY_BYTES {
            text.push_str(words);
        }
        text.push_str(&"-".repeat(BODY_BYTES - base - text.len()));
        template.payload["comment"]["body"] = json!(text);
        let size = template.body(0)?.len();
        if size != BODY_BYTES {
            return Err(format!("the padded delivery is {size} bytes, not {BODY_BYTES}").into());
        }
        Ok(template)
    }

    fn body(&self, n: u64) -> Result<Vec<u8>, Error> {
        let mut payload = self.payload.clone();
        payload["comment"]["id"] = json!(2_000_000_000_u64 + n);
        // Spread over pull requests, as a busy installation's comments are: the dispatcher handles
        // one delivery at a time per pull request.
        payload["issue"]["number"] = json!(PR + n % SPREAD);
        Ok(serde_json::to_vec(&payload)?)
    }
}

/// A delivery ready to send: its id, body and signature, computed before the clock starts so that
/// the generator spends its time sending.
struct Prepared {
    id: String,
    body: Bytes,
    signature: String,
}

fn prepare(template: &Template, phase: &str, first: u64, count: usize) -> Result<Vec<Prepared>, Error> {
    let secret = SecretString::from(SECRET);
    (0..count as u64)
        .map(|i| {
            let body = template.body(first + i)?;
            Ok(Prepared {
                id: format!("{phase}-{i:07}-6d1c4a10-bench"),
                signature: sign(&secret, &body),
                body: Bytes::from(body),
            })
        })
        .collect()
}

async fn send(client: reqwest::Client, url: Arc<str>, delivery: Prepared, start: Instant, due: Instant) -> Sample {
    let result = client
        .post(&*url)
        .header("X-GitHub-Event", "issue_comment")
        .header("X-GitHub-Delivery", delivery.id)
        .header("X-Hub-Signature-256", delivery.signature)
        .header("content-type", "application/json")
        .body(delivery.body)
        .send()
        .await;
    let status = match result {
        Ok(response) => {
            let status = response.status().as_u16();
            // The response counts once it has been read to the end.
            response.bytes().await.ok().map(|_| status)
        }
        Err(_) => None,
    };
    let now = Instant::now();
    Sample {
        latency: now.saturating_duration_since(due),
        done_at: now.saturating_duration_since(start),
        status,
    }
}

/// Sends `deliveries` at `rate` per second, open loop: request `i` is due at `start + i / rate`
/// whatever happened to the ones before it, and goes to `urls[i % urls.len()]` (round-robin over
/// the replicas). A pacing thread (`thread::sleep` wakes within tens of microseconds; tokio's timer
/// only to the millisecond) hands each request to the generator's runtime when it is due.
fn run_phase(
    generator: &tokio::runtime::Runtime,
    client: &reqwest::Client,
    urls: &[Arc<str>],
    rate: u32,
    deliveries: Vec<Prepared>,
) -> Result<PhaseResult, Error> {
    let sent = deliveries.len();
    let interval = Duration::from_secs(1) / rate;
    let handle = generator.handle().clone();
    let (client, urls) = (client.clone(), urls.to_vec());
    let start = Instant::now();
    let pacer = std::thread::spawn(move || {
        let mut tasks = Vec::with_capacity(deliveries.len());
        for (i, delivery) in deliveries.into_iter().enumerate() {
            let due = start + interval * u32::try_from(i).unwrap_or(u32::MAX);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            let url = Arc::clone(&urls[i % urls.len()]);
            tasks.push(handle.spawn(send(client.clone(), url, delivery, start, due)));
        }
        tasks
    });
    let tasks = pacer.join().map_err(|_| "the pacing thread panicked")?;
    let samples: Vec<Sample> = generator.block_on(async {
        let mut samples = Vec::with_capacity(tasks.len());
        for task in tasks {
            samples.push(task.await?);
        }
        Ok::<_, tokio::task::JoinError>(samples)
    })?;

    let accepted = samples.iter().filter(|s| s.status == Some(202)).count();
    let errors = sent - accepted;
    let last = samples.iter().map(|s| s.done_at).max().unwrap_or_default();
    let mut latencies: Vec<Duration> = samples.iter().map(|s| s.latency).collect();
    latencies.sort();
    let mut statuses: BTreeMap<String, usize> = BTreeMap::new();
    for sample in samples.iter().filter(|s| s.status != Some(202)) {
        let key = sample.status.map_or_else(|| "failed".to_owned(), |s| s.to_string());
        *statuses.entry(key).or_default() += 1;
    }
    if !statuses.is_empty() {
        eprintln!("  {rate}/s: not accepted: {statuses:?}");
    }
    Ok(PhaseResult {
        offered: rate,
        sent,
        accepted,
        errors,
        achieved: accepted as f64 / last.as_secs_f64().max(f64::EPSILON),
        p50: percentile(&latencies, 0.50),
        p90: percentile(&latencies, 0.90),
        p99: percentile(&latencies, 0.99),
        max: latencies[latencies.len() - 1],
    })
}

/// Waits until the dispatcher has processed every stored delivery, so that each phase starts on a
/// quiet server. The store has no notification for this; it is asked every 50 ms.
async fn drained(store: &Arc<dyn JobStore>) -> Result<(), Error> {
    let deadline = Instant::now() + Duration::from_secs(300);
    while !store.unprocessed_deliveries(1).await?.is_empty() {
        if Instant::now() > deadline {
            return Err("the dispatcher did not catch up within 5 minutes".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

fn print(result: &PhaseResult) {
    println!(
        "{:>6}/s  sent {:>6}  accepted {:>6}  errors {:>5}  achieved {:>7.1}/s  p50 {:>7.2} ms  p90 {:>7.2} ms  \
         p99 {:>8.2} ms  max {:>8.2} ms  {}",
        result.offered,
        result.sent,
        result.accepted,
        result.errors,
        result.achieved,
        ms(result.p50),
        ms(result.p90),
        ms(result.p99),
        ms(result.max),
        if result.sustained() { "ok" } else { "NOT SUSTAINED" }
    );
}

/// Starts one server on its own runtime and data directory, with `database` as its store when given.
/// The database's own counters (`pg_stat_database`): time its backends spent executing
/// statements, transactions committed and rolled back. Flushed by each backend within a second of
/// going idle, so they are read once the dispatchers have caught up.
struct DatabaseWork {
    active_ms: f64,
    commits: f64,
    rollbacks: f64,
}

impl DatabaseWork {
    fn read(database: &Postgres) -> Result<DatabaseWork, Error> {
        // Let every backend's pending statistics reach the shared counters first.
        std::thread::sleep(Duration::from_millis(1500));
        let row = database.psql(
            "SELECT active_time, xact_commit, xact_rollback FROM pg_stat_database WHERE datname = current_database()",
        )?;
        let fields: Vec<f64> = row
            .split('|')
            .map(|field| field.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .map_err(|error| format!("pg_stat_database: {row:?}: {error}"))?;
        match fields[..] {
            [active_ms, commits, rollbacks] => Ok(DatabaseWork {
                active_ms,
                commits,
                rollbacks,
            }),
            _ => Err(format!("pg_stat_database: {row:?}").into()),
        }
    }

    fn since(&self, before: &DatabaseWork) -> DatabaseWork {
        DatabaseWork {
            active_ms: self.active_ms - before.active_ms,
            commits: self.commits - before.commits,
            rollbacks: self.rollbacks - before.rollbacks,
        }
    }
}

fn start_replica(n: usize, github: &FakeGithub, database: Option<&Postgres>) -> Result<Replica, Error> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(if n == 0 {
            "server".to_owned()
        } else {
            format!("server-{n}")
        })
        .enable_all()
        .build()?;
    // On the same disk as a server's data directory would be (not a tmpfs): with SQLite, every
    // stored delivery is an fsync.
    let data = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
    let config = config(github, data.path(), database)?;
    let server = runtime.block_on(Server::start(ServerOptions {
        config,
        handler: instant_handler(),
        listener: Some(std::net::TcpListener::bind("127.0.0.1:0")?),
        github: None,
        metrics: None,
        copies: None,
        instance: None,
    }))?;
    Ok(Replica { runtime, server, data })
}

fn main() -> Result<(), Error> {
    let setup = Setup::from_env()?;
    // What `pitcrew serve` logs per delivery, formatted as for a log collector, then discarded.
    tracing_subscriber::fmt()
        .json()
        .with_max_level(tracing::Level::INFO)
        .with_writer(std::io::sink)
        .try_init()
        .map_err(|error| format!("logging: {error}"))?;
    let generator = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("generator")
        .enable_all()
        .build()?;

    let github = FakeGithub::builder()
        .repo(Repo::new(REPO))
        .permission(REPO, "alice", Permission::Write)
        .issue(
            REPO,
            Issue::pull_request(
                PR,
                "Fix the parser",
                ("fix-parser", "6dcb09b5b57875f334f61aebed695e2e4193db5e"),
                ("main", "e7fdf7640066d71ad16a86fbcbb9c6a10a18af4f"),
            ),
        )
        .start();
    // Declared before the replicas, so dropped after them: the servers stop before their database.
    let database = match setup.store {
        StoreKind::Sqlite => None,
        StoreKind::Postgres => {
            Some(Postgres::start_durable().ok_or("INGEST_STORE=postgres, but PostgreSQL is not installed")?)
        }
    };
    let replicas = (0..setup.replicas)
        .map(|n| start_replica(n, &github, database.as_ref()))
        .collect::<Result<Vec<Replica>, Error>>()?;
    let first = &replicas[0];
    let store = Arc::clone(first.server.store());
    let urls: Vec<Arc<str>> = replicas
        .iter()
        .map(|replica| Arc::from(format!("{}/webhook", replica.server.url())))
        .collect();
    let client = reqwest::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        // Under the server's idle timeout (`[server] idle_timeout`, 60 s), as a reverse proxy's
        // upstream keep-alive is: after a long catch-up wait, a connection the server is closing
        // is not reused (that race failed requests that never reached the route).
        .pool_idle_timeout(Duration::from_secs(30))
        .build()?;
    let template = Template::load(&github)?;
    let described = match &database {
        None => format!("SQLite store in {}", first.data.path().display()),
        Some(database) => format!(
            "durable PostgreSQL store on 127.0.0.1:{} shared by {} server{}",
            database.port(),
            replicas.len(),
            if replicas.len() == 1 { "" } else { "s, round-robin" }
        ),
    };
    println!(
        "webhook ingest: signed {BODY_BYTES}-byte issue_comment deliveries, open loop, {} s per rate, {described}",
        PHASE.as_secs(),
    );

    let mut next_comment = 0_u64;
    let mut accepted_total = 0_usize;
    let mut phase = |name: &str, rate: u32, length: Duration| -> Result<PhaseResult, Error> {
        let before = database.as_ref().map(DatabaseWork::read).transpose()?;
        let count = usize::try_from(u64::from(rate) * length.as_secs())?;
        let deliveries = prepare(&template, name, next_comment, count)?;
        next_comment += count as u64;
        let result = run_phase(&generator, &client, &urls, rate, deliveries)?;
        accepted_total += result.accepted;
        let ended = Instant::now();
        first.runtime.block_on(drained(&store))?;
        let behind = ended.elapsed();
        // What the dispatchers handled per second, from the phase's start to their catching up.
        let handled = result.accepted as f64 / (length + behind).as_secs_f64();
        eprintln!(
            "  {rate}/s: the dispatcher caught up {:.1} s after the last response ({handled:.0} deliveries/s handled)",
            behind.as_secs_f64()
        );
        if let (Some(database), Some(before)) = (&database, before) {
            let work = DatabaseWork::read(database)?.since(&before);
            let per = |n: f64| n / result.accepted.max(1) as f64;
            eprintln!(
                "  {rate}/s: the database per delivery: {:.2} ms executing statements, {:.2} commits, {:.2} rollbacks",
                per(work.active_ms),
                per(work.commits),
                per(work.rollbacks)
            );
        }
        Ok(result)
    };

    // Connections opened, the store's pages and the dispatcher warm; not reported.
    phase("warmup", WARMUP_RATE, WARMUP)?;
    let mut fixed = Vec::new();
    for rate in FIXED_RATES {
        let result = phase(&format!("fixed{rate}"), rate, PHASE)?;
        print(&result);
        fixed.push((rate, result.sustained()));
    }
    // Upwards from the fixed rates when all were sustained; else between the highest sustained
    // (every lower one sustained too) and the first that was not.
    let mut highest = fixed.iter().take_while(|(_, ok)| *ok).map(|(rate, _)| *rate).last();
    let ceiling = fixed.iter().find(|(_, ok)| !*ok).map_or(u32::MAX, |(rate, _)| *rate);
    let floor = highest.unwrap_or(0);
    for rate in SEARCH_RATES
        .into_iter()
        .filter(|rate| *rate > floor && *rate < ceiling && !FIXED_RATES.contains(rate))
    {
        let result = phase(&format!("search{rate}"), rate, PHASE)?;
        print(&result);
        if !result.sustained() {
            break;
        }
        highest = Some(rate);
    }
    match highest {
        Some(rate) => println!(
            "highest rate tried that met p99 <= {} ms: {rate}/s",
            TARGET_P99.as_millis()
        ),
        None => println!("no rate tried met p99 <= {} ms", TARGET_P99.as_millis()),
    }

    let stored = first.runtime.block_on(store.count_deliveries())?;
    let jobs = first.runtime.block_on(store.count_by_state())?;
    let github_calls = github.requests().len();
    println!(
        "store: {stored} deliveries for {accepted_total} answered 202; jobs created: {}; GitHub calls: {github_calls}",
        jobs.values().sum::<u64>()
    );
    if stored != accepted_total as u64 {
        return Err(format!("the store holds {stored} deliveries, but {accepted_total} were accepted").into());
    }
    drop(store);
    for replica in replicas {
        let report = replica
            .runtime
            .block_on(replica.server.shutdown(Duration::from_secs(5)));
        drop(report);
    }
    Ok(())
}
