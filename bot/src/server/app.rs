//! `pitcrew serve` start-up and shutdown: the data directory (locked, so one server owns it), the
//! job store and its crash recovery, orphaned sandbox containers, the worker pool, the dispatcher
//! and the HTTP server; and on SIGTERM or SIGINT, the orderly stop (no new webhooks, running jobs
//! finish within the grace period, the rest go back to the queue).

use std::fs::{File, OpenOptions};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use nix::fcntl::{Flock, FlockArg};
use secrecy::{ExposeSecret, SecretString};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::routes::{ServerState, router};
use super::serve::{ConnectionLimits, connection_limit};
use crate::config::{AppKey, Config, SandboxBackend, StoreConfig};
use crate::github::{AppAuth, AppCredentials, AppKeyError, ClientOptions, GithubAccess, GithubError};
use crate::instance::InstanceError;
use crate::intake::{DispatchSettings, Dispatcher, Scheduler};
use crate::jobs::{
    JobHandler, JobStore, PgStore, PoolConfig, Pruned, Retention, ShutdownReport, SqliteStore, StoreError, WorkerPool,
    now_ms,
};
use crate::metrics::Metrics;
use crate::triggers::TriggerConfig;
use crate::workspace::mirror::MirrorCache;
use crate::workspace::pool::WorkspacePool;

/// The lock file in the data directory: held (`flock`, exclusive) for the server's lifetime.
pub const LOCK_FILE: &str = "serve.lock";

/// What `pitcrew serve` is started with.
pub struct ServerOptions {
    pub config: Config,
    /// Runs each job (the handlers module makes the real one; tests pass their own).
    pub handler: JobHandler,
    /// An already bound listener (tests bind port 0); default: bind `[server] listen`.
    pub listener: Option<std::net::TcpListener>,
    /// The GitHub App; default: from `[github] api_url`, `app_id` and `private_key_path`.
    pub github: Option<GithubAccess>,
    /// The counters; pass the ones the handler records jobs into. Default: new ones.
    pub metrics: Option<Arc<Metrics>>,
    /// The working copies (and their mirrors) the server's housekeeping evicts when idle; the job
    /// store's retention runs either way.
    pub copies: Option<WorkspacePool>,
    /// This data directory's [`instance_id`](crate::instance::instance_id) when the caller has read it already (the handlers
    /// name their sandboxes with it). Default: read here.
    pub instance: Option<String>,
}

impl std::fmt::Debug for ServerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerOptions")
            .field("config", &self.config)
            .field("listener", &self.listener)
            .field("github", &self.github)
            .finish_non_exhaustive()
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(
        "`[github] webhook_secret` is not set: `pitcrew serve` verifies every delivery with it (set it to the \
         secret in the GitHub App's webhook settings)"
    )]
    MissingWebhookSecret,
    #[error(
        "the GitHub App is not configured: `pitcrew serve` needs `[github] app_id` and its private key, \
         `private_key_path` or `private_key` (from the App's settings page; or APP_ID and PRIVATE_KEY)"
    )]
    MissingApp,
    #[error(transparent)]
    AppKey(#[from] AppKeyError),
    #[error("setting up the GitHub client: {0}")]
    Github(#[from] GithubError),
    #[error("the data directory {}: {source}", path.display())]
    DataDir { path: PathBuf, source: std::io::Error },
    #[error("the data directory {} is in use by another `pitcrew serve`; stop it or give this one another `[server] data_dir`", path.display())]
    DataDirInUse { path: PathBuf },
    #[error(transparent)]
    Instance(#[from] InstanceError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot listen on {addr}: {source}")]
    Listen { addr: String, source: std::io::Error },
    #[error("cannot watch for SIGTERM and SIGINT: {0}")]
    Signals(std::io::Error),
}

/// Starts `pitcrew serve`.
#[derive(Debug)]
pub struct Server;

/// SIGTERM and SIGINT, caught from the moment they are installed: install them before starting the
/// server, so that a signal during start-up stops it gracefully instead of killing it.
#[derive(Debug)]
pub struct StopSignals {
    term: tokio::signal::unix::Signal,
    interrupt: tokio::signal::unix::Signal,
}

impl StopSignals {
    pub fn install() -> Result<StopSignals, ServeError> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(StopSignals {
            term: signal(SignalKind::terminate()).map_err(ServeError::Signals)?,
            interrupt: signal(SignalKind::interrupt()).map_err(ServeError::Signals)?,
        })
    }
}

/// How long stopping waits for the store to release this server's claims on deliveries.
const STORE_CALL_WAIT: Duration = Duration::from_secs(5);

/// A started server. Dropping it without [`RunningServer::shutdown`] is like a crash: the HTTP
/// server and the dispatcher stop at once and no job is written back (recovery deals with them at
/// the next start).
pub struct RunningServer {
    addr: SocketAddr,
    metrics: Arc<Metrics>,
    store: Arc<dyn JobStore>,
    pool: Option<Arc<WorkerPool>>,
    dispatcher: Option<Dispatcher>,
    scheduler: Option<Scheduler>,
    http: Option<JoinHandle<std::io::Result<()>>>,
    housekeeping: Option<JoinHandle<()>>,
    stop_http: CancellationToken,
    grace: Duration,
    _lock: Flock<File>,
}

impl std::fmt::Debug for RunningServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningServer")
            .field("addr", &self.addr)
            .field("grace", &self.grace)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Opens the store in `[server] data_dir`, recovers interrupted jobs, reaps orphaned sandbox
    /// containers, and starts the worker pool, the dispatcher and the HTTP server.
    pub async fn start(options: ServerOptions) -> Result<RunningServer, ServeError> {
        let ServerOptions {
            config,
            handler,
            listener,
            github,
            metrics,
            copies,
            instance,
        } = options;
        let secret = config
            .github
            .webhook_secret
            .clone()
            .filter(|secret| !secret.expose_secret().is_empty())
            .ok_or(ServeError::MissingWebhookSecret)?;
        let github = match github {
            Some(github) => github,
            None => GithubAccess::App(app_auth(&config)?),
        };
        // Every client of the App shares one connection pool and one set of statistics; any
        // installation's client reaches them.
        let github_stats = github.stats();
        let metrics = metrics.unwrap_or_default();

        let data_dir = config.server.data_dir.clone();
        let sqlite = matches!(config.server.store, StoreConfig::Sqlite);
        let (lock, sqlite) = tokio::task::spawn_blocking(move || open_data_dir(data_dir, sqlite))
            .await
            .map_err(|error| ServeError::Store(StoreError::Task(error.to_string())))??;
        let store: Arc<dyn JobStore> = match (&config.server.store, sqlite) {
            (StoreConfig::Postgres { url }, _) => Arc::new(PgStore::connect(url.expose_secret()).await?),
            (StoreConfig::Sqlite, Some(store)) => Arc::new(store),
            // `open_data_dir` opens it whenever the store is SQLite.
            (StoreConfig::Sqlite, None) => {
                return Err(ServeError::Store(StoreError::Task(
                    "internal error: the SQLite store was not opened".into(),
                )));
            }
        };

        // With SQLite, the data directory's lock proves that no other process runs jobs from this
        // store: every job still marked running was interrupted, whatever its lease says. Replicas
        // sharing PostgreSQL run each other's jobs: only expired leases are taken back.
        let recovery = if store.shared() {
            store.recover(now_ms()).await?
        } else {
            store.recover_all(now_ms()).await?
        };
        if !recovery.is_empty() {
            tracing::warn!(requeued = ?recovery.requeued, failed = ?recovery.failed,
                cancelled = ?recovery.cancelled, "recovered jobs interrupted by a crash");
        }
        let instance = match instance {
            Some(instance) => instance,
            None => crate::instance::instance_id(&config.server.data_dir)?,
        };
        if config.sandbox.backend == SandboxBackend::Docker {
            reap_orphaned_containers(&instance, config.sandbox.docker_host.as_deref()).await;
        }
        if !nix::unistd::geteuid().is_root() {
            // Only root can hand a working copy to the sandbox's own user (see `sandbox::owner`).
            tracing::warn!(
                uid = nix::unistd::geteuid().as_raw(),
                backend = config.sandbox.backend.as_str(),
                "pitcrew is not running as root, so the commands of its jobs run as its own user; \
                 run it as root (the image does) to have them run as the unprivileged sandbox user"
            );
        }

        let listener = match listener {
            Some(listener) => listener,
            None => std::net::TcpListener::bind(config.server.listen).map_err(|source| ServeError::Listen {
                addr: config.server.listen.to_string(),
                source,
            })?,
        };
        let listen_error = |source| ServeError::Listen {
            addr: listener_name(&listener),
            source,
        };
        listener.set_nonblocking(true).map_err(listen_error)?;
        let addr = listener.local_addr().map_err(listen_error)?;
        let listener = tokio::net::TcpListener::from_std(listener).map_err(|source| ServeError::Listen {
            addr: addr.to_string(),
            source,
        })?;

        let pool = Arc::new(WorkerPool::start(
            Arc::clone(&store),
            handler,
            PoolConfig {
                concurrency: usize::try_from(config.server.concurrency).unwrap_or(1),
                lease: config.server.lease_ttl,
                // Several renewals within a lease: one late heartbeat never loses it.
                heartbeat: config.server.lease_ttl / 6,
                poll_interval: PoolConfig::default().poll_interval.min(config.server.lease_ttl / 2),
                ..PoolConfig::default()
            },
        ));
        // Repositories' chore schedules, read with the App (a single token has no installations).
        let scheduler = match (&github, config.chores.schedules) {
            (GithubAccess::App(app), true) => Some(Scheduler::start(
                Arc::clone(app),
                Arc::clone(&store),
                Arc::clone(&pool),
                config.server.job_attempts,
            )),
            _ => None,
        };
        let mut triggers = TriggerConfig::new(config.agent.trigger.clone(), config.github.bot_name.clone());
        triggers.review.auto = config.review.auto;
        let mut dispatch_settings = DispatchSettings::new(triggers, config.server.job_attempts);
        // A replica that stops renewing its claims is dead as one that stops heartbeating; its
        // claims run out without a signal, so the others look at least as often.
        dispatch_settings.claim = config.server.lease_ttl;
        dispatch_settings.poll_interval = dispatch_settings.poll_interval.min(config.server.lease_ttl);
        let dispatcher = Dispatcher::start(Arc::clone(&store), Arc::clone(&pool), github, dispatch_settings);
        let state = Arc::new(ServerState {
            store: Arc::clone(&store),
            secret: SecretString::from(secret.expose_secret().to_owned()),
            max_body: usize::try_from(config.server.max_body_bytes).unwrap_or(usize::MAX),
            unverified: Arc::new(tokio::sync::Semaphore::new(
                usize::try_from(config.server.unverified_bytes)
                    .unwrap_or(usize::MAX)
                    .min(tokio::sync::Semaphore::MAX_PERMITS),
            )),
            body_timeout: config.server.body_timeout,
            metrics: Arc::clone(&metrics),
            inbox: dispatcher.inbox(),
            github_stats: Some(github_stats),
            webhook_path: config.server.webhook_path.clone(),
            bot_login: config.github.bot_name.clone(),
            started: std::time::Instant::now(),
        });
        let limits = ConnectionLimits {
            header_timeout: config.server.header_timeout,
            idle_timeout: config.server.idle_timeout,
            max_connections: connection_limit(config.server.max_connections),
        };
        let stop_http = CancellationToken::new();
        let http = tokio::spawn(super::serve::serve(listener, router(state), limits, stop_http.clone()));
        let housekeeping = tokio::spawn(housekeeping(config.clone(), copies, Arc::clone(&store)));
        tracing::info!(%addr, concurrency = config.server.concurrency, max_connections = limits.max_connections,
            data_dir = %config.server.data_dir.display(), store = config.server.store.kind(),
            worker = pool.worker_name(), "pitcrew serve is listening");
        Ok(RunningServer {
            addr,
            metrics,
            store,
            pool: Some(pool),
            dispatcher: Some(dispatcher),
            scheduler,
            http: Some(http),
            housekeeping: Some(housekeeping),
            stop_http,
            grace: config.server.shutdown_grace,
            _lock: lock,
        })
    }
}

/// The GitHub App from `[github] api_url`, `app_id` and its private key (a file, or inline).
pub fn app_auth(config: &Config) -> Result<Arc<AppAuth>, ServeError> {
    let app = config.github.app.as_ref().ok_or(ServeError::MissingApp)?;
    let credentials = match &app.key {
        AppKey::File(path) => AppCredentials::load(app.app_id, path)?,
        AppKey::Pem { pem, .. } => AppCredentials::from_pem(app.app_id, pem.expose_secret().as_bytes())?,
    };
    Ok(Arc::new(AppAuth::new(
        &config.github.api_url,
        credentials,
        ClientOptions::default(),
    )?))
}

fn listener_name(listener: &std::net::TcpListener) -> String {
    listener
        .local_addr()
        .map_or_else(|_| "the given listener".to_owned(), |addr| addr.to_string())
}

/// Locks the data directory and, when the store is SQLite, opens it there. Blocking.
fn open_data_dir(data_dir: PathBuf, sqlite: bool) -> Result<(Flock<File>, Option<SqliteStore>), ServeError> {
    std::fs::create_dir_all(&data_dir).map_err(|source| ServeError::DataDir {
        path: data_dir.clone(),
        source,
    })?;
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(data_dir.join(LOCK_FILE))
        .map_err(|source| ServeError::DataDir {
            path: data_dir.clone(),
            source,
        })?;
    // Two servers on one directory would each reap the other's containers and answer every
    // delivery twice; the second is refused instead. The lock goes with the process, crash or not.
    let lock = Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|(_, errno)| {
        if errno == nix::errno::Errno::EWOULDBLOCK {
            ServeError::DataDirInUse { path: data_dir.clone() }
        } else {
            ServeError::DataDir {
                path: data_dir.clone(),
                source: std::io::Error::from(errno),
            }
        }
    })?;
    // The store keeps itself readable by pitcrew's user alone (`SqliteStore::open_file`).
    let store = sqlite.then(|| SqliteStore::open(&data_dir)).transpose()?;
    Ok((lock, store))
}

/// Removes the sandbox containers a crashed server of this data directory left behind. It holds
/// the directory and runs nothing yet, so every container of its instance is an orphan.
async fn reap_orphaned_containers(instance: &str, host: Option<&str>) {
    match crate::sandbox::docker::DockerSandbox::connect_configured(host).await {
        Ok(docker) => match docker.reap_prefix(&format!("{instance}-")).await {
            Ok(0) => tracing::debug!("no orphaned sandbox containers"),
            Ok(removed) => tracing::warn!(removed, "removed sandbox containers left by a crash"),
            Err(error) => tracing::error!(error = %error, "could not remove orphaned sandbox containers"),
        },
        Err(error) => tracing::info!(error = %error, "the Docker engine is not reachable; no containers to reap"),
    }
}

impl RunningServer {
    /// Where the server listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    pub fn store(&self) -> &Arc<dyn JobStore> {
        &self.store
    }

    /// Changes each time the dispatcher is done with a delivery (see [`Dispatcher::settled`]): with
    /// the pool's job ends, what tells a waiter that the store may have settled.
    ///
    /// # Panics
    /// Never: the dispatcher is only taken by `shutdown`, which consumes the server.
    #[expect(
        clippy::expect_used,
        reason = "the dispatcher is present until shutdown consumes self"
    )]
    pub fn deliveries_settled(&self) -> tokio::sync::watch::Receiver<u64> {
        self.dispatcher
            .as_ref()
            .expect("the dispatcher lives until shutdown")
            .settled()
    }

    /// The worker pool (to follow job ends with `subscribe`, or see what runs).
    ///
    /// # Panics
    /// Never: the pool is only taken by `shutdown`, which consumes the server.
    #[expect(clippy::expect_used, reason = "the pool is present until shutdown consumes self")]
    pub fn pool(&self) -> &WorkerPool {
        self.pool.as_deref().expect("the pool lives until shutdown")
    }

    /// The orderly stop: stops accepting webhooks (the listener closes), stops the dispatcher, lets
    /// running jobs finish within `grace`, and requeues the rest. Requests in progress get the same
    /// grace, side by side with the jobs; a connection still open after it (a client sending slowly)
    /// is dropped: a delivery it was sending was never acknowledged, so GitHub still has it.
    pub async fn shutdown(mut self, grace: Duration) -> ShutdownReport {
        let worker = self.pool.as_ref().map(|pool| pool.worker_name().to_owned());
        self.stop_http.cancel();
        if let Some(housekeeping) = self.housekeeping.take() {
            housekeeping.abort();
        }
        let http = self.http.take();
        let drain_http = async move {
            let Some(mut http) = http else {
                return;
            };
            match tokio::time::timeout(grace, &mut http).await {
                Ok(Ok(Ok(()))) => {}
                Ok(Ok(Err(error))) => tracing::error!(error = %error, "the HTTP server failed"),
                Ok(Err(error)) => tracing::error!(error = %error, "the HTTP server task failed"),
                Err(_) => {
                    tracing::warn!(
                        grace_secs = grace.as_secs_f64(),
                        "requests still open after the grace period; closing their connections"
                    );
                    http.abort();
                    let _ = http.await;
                }
            }
        };
        let scheduler = self.scheduler.take();
        let dispatcher = self.dispatcher.take();
        let pool = self.pool.take();
        let stop_work = async move {
            if let Some(scheduler) = scheduler {
                scheduler.stop().await;
            }
            if let Some(dispatcher) = dispatcher {
                dispatcher.stop().await;
            }
            let pool = pool?;
            // The dispatcher held the only other reference, and it has ended.
            Some(match Arc::try_unwrap(pool) {
                Ok(pool) => pool.shutdown(grace).await,
                Err(pool) => {
                    tracing::error!(
                        "the worker pool is still shared; stopping claims without waiting for running jobs"
                    );
                    pool.stop_claiming();
                    ShutdownReport::default()
                }
            })
        };
        let ((), report) = tokio::join!(drain_http, stop_work);
        if let Some(worker) = worker {
            // Received and not handled (the dispatcher stopped first, or was full): the other
            // replicas need not wait for these claims to run out.
            match tokio::time::timeout(STORE_CALL_WAIT, self.store.release_deliveries(&worker)).await {
                Ok(Ok(0)) => {}
                Ok(Ok(released)) => {
                    tracing::info!(
                        released,
                        "deliveries received and not handled are left to the other replicas"
                    );
                }
                Ok(Err(error)) => tracing::warn!(error = %error, "could not release the deliveries' claims"),
                Err(_) => tracing::warn!("the store did not answer; the deliveries' claims will run out instead"),
            }
        }
        let Some(report) = report else {
            return ShutdownReport::default();
        };
        tracing::info!(finished = ?report.finished, requeued = ?report.requeued,
            abandoned = ?report.abandoned, "pitcrew serve stopped");
        report
    }

    /// Serves until SIGTERM or SIGINT, then [`RunningServer::shutdown`] with `[server] shutdown_grace`.
    /// A signal that arrived before this call but after [`StopSignals::install`] counts.
    pub async fn run_until(mut self, signals: StopSignals) -> Result<ShutdownReport, ServeError> {
        let StopSignals {
            mut term,
            mut interrupt,
        } = signals;
        let http_ended = async {
            match self.http.as_mut() {
                Some(http) => {
                    let ended = http.await;
                    tracing::error!(result = ?ended.map(|r| r.map_err(|e| e.to_string())), "the HTTP server stopped on its own");
                }
                None => std::future::pending().await,
            }
        };
        let (signal, http_done) = tokio::select! {
            _ = term.recv() => ("SIGTERM", false),
            _ = interrupt.recv() => ("SIGINT", false),
            () = http_ended => ("the HTTP server's end", true),
        };
        if http_done {
            self.http = None;
        }
        let grace = self.grace;
        tracing::info!(
            signal,
            grace_secs = grace.as_secs_f64(),
            "stopping: no new webhooks; running jobs may finish within the grace period"
        );
        Ok(self.shutdown(grace).await)
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        if let Some(http) = self.http.take() {
            http.abort();
        }
        if let Some(housekeeping) = self.housekeeping.take() {
            housekeeping.abort();
        }
        // Dropping the dispatcher aborts it. Claims stop now rather than when the dispatcher task,
        // which shares the pool, is finally torn down.
        self.dispatcher.take();
        if let Some(pool) = self.pool.take() {
            pool.stop_claiming();
        }
    }
}

/// Prunes the job store at start, then every ten minutes, and evicts idle working copies and
/// unused mirrors as often, until the server stops.
async fn housekeeping(config: Config, copies: Option<WorkspacePool>, store: Arc<dyn JobStore>) {
    let mirrors = MirrorCache::new(&config.server.data_dir);
    let retention = Retention {
        rows: config.server.retain,
        payloads: config.server.retain_payloads,
    };
    let mut tick = tokio::time::interval(Duration::from_secs(600));
    loop {
        tick.tick().await;
        match store.prune(retention, now_ms()).await {
            Ok(pruned) if pruned != Pruned::default() => {
                tracing::info!(
                    jobs = pruned.jobs,
                    deliveries = pruned.deliveries,
                    payloads = pruned.payloads,
                    pages_freed = pruned.pages_freed,
                    "pruned the job store"
                );
            }
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "pruning the job store failed"),
        }
        let Some(pool) = &copies else { continue };
        let evicted = pool.evict();
        match pool.evict_mirrors(&mirrors, config.server.mirror_max_idle).await {
            Ok(eviction) if evicted > 0 || !eviction.mirrors.is_empty() => {
                tracing::info!(copies = evicted, mirrors = ?eviction.mirrors, "evicted unused working copies and mirrors");
            }
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "mirror eviction failed"),
        }
    }
}
