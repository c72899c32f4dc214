//! The PostgreSQL job store, for replicas sharing one database: a versioned schema migrated at start-up
//! under an advisory lock, every [`JobStore`] method as one transaction (or one statement) on a
//! pooled connection, its statements prepared once per connection, claims with `FOR UPDATE SKIP
//! LOCKED` (and a unique index that keeps one running job per key whatever races), signals between
//! replicas with `LISTEN/NOTIFY` (sent inside the transaction that causes them, so a listener never
//! hears of what did not commit) and leaderships as session advisory locks on connections of their
//! own.
//!
//! The database URL is a secret (it may hold a password): no message, log line or `Debug` shows it;
//! the store names its database by host, port and name only.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::str::FromStr as _;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use deadpool_postgres::GenericClient;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use futures_util::StreamExt as _;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::broadcast;
use tokio_postgres::config::SslMode;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{AsyncMessage, Client, Connection, NoTls, Row};
use tokio_util::sync::CancellationToken;

use super::record::{Lifecycle, Record as _};
use super::sqlite::{SIGNAL_BUFFER, released};
use super::store::{
    Available, Cancellation, Claim, Delivery, DeliveryClaim, DeliveryId, Dispatch, Finish, Fired, Heartbeat, HeldClaim,
    Job, JobEvent, JobFilter, JobId, JobState, JobStore, Leadership, Lease, NewJob, Pending, Pruned, Recorded,
    Recovery, Release, Retention, Signal, StopRequest, StoreError, StoreFuture, age_cutoff, interrupted_error,
    lease_end, stop_columns, stop_request,
};

/// The channel every replica listens on.
const CHANNEL: &str = "pitcrew";

/// Connections per replica: the webhook route, the dispatcher, the pool's claims and heartbeats and
/// the handlers' records share them; each holds one for a transaction of milliseconds.
const POOL_SIZE: usize = 16;

/// How long a call waits for a pooled connection, or for a new one, before failing.
const WAIT: Duration = Duration::from_secs(10);

/// How often a leader checks that its lock's connection is alive.
const LEADER_CHECK: Duration = Duration::from_secs(2);

/// Rows deleted (or payloads emptied) per transaction while pruning.
const PRUNE_BATCH: i64 = 500;

/// The advisory lock the migrations run under (`pitcrew` and a 1, as one 64-bit number).
const MIGRATION_LOCK: i64 = 0x7069_7463_7265_7701;

/// The schema, one migration per version; `pitcrew_schema.version` is the number applied. Never edit
/// a migration that has shipped: append a new one. (SQLite's history is its own: this schema starts
/// where SQLite's stands at its version 5.)
const MIGRATIONS: &[&str] = &[
    // 1: deliveries (with their claims), jobs, job events, schedules.
    "CREATE TABLE deliveries (
        seq           BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
        id            TEXT PRIMARY KEY,
        event         TEXT NOT NULL,
        received_at   BIGINT NOT NULL,
        payload       BYTEA NOT NULL,
        processed_at  BIGINT,
        claim_key     TEXT,
        claimed_by    TEXT,
        claimed_until BIGINT
    );
    CREATE INDEX deliveries_unprocessed ON deliveries (seq) WHERE processed_at IS NULL;
    CREATE INDEX deliveries_processed ON deliveries (processed_at);
    CREATE INDEX deliveries_claim_key ON deliveries (claim_key) WHERE processed_at IS NULL;

    CREATE TABLE jobs (
        id               BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        kind             TEXT NOT NULL,
        repo             TEXT NOT NULL,
        key              TEXT NOT NULL,
        request          TEXT NOT NULL,
        delivery_id      TEXT REFERENCES deliveries (id),
        state            TEXT NOT NULL
                         CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
        attempts         INTEGER NOT NULL DEFAULT 0,
        max_attempts     INTEGER NOT NULL CHECK (max_attempts >= 1),
        created_at       BIGINT NOT NULL,
        started_at       BIGINT,
        finished_at      BIGINT,
        lease_owner      TEXT,
        lease_expires_at BIGINT,
        cancel_reason    TEXT,
        cancel_by        TEXT,
        result           TEXT,
        error            TEXT
    );
    CREATE INDEX jobs_state ON jobs (state, id);
    CREATE INDEX jobs_key ON jobs (key, state, id);
    CREATE INDEX jobs_repo ON jobs (repo);
    CREATE INDEX jobs_lease ON jobs (lease_expires_at) WHERE state = 'running';
    CREATE INDEX jobs_finished ON jobs (finished_at) WHERE finished_at IS NOT NULL;
    CREATE INDEX jobs_delivery ON jobs (delivery_id) WHERE delivery_id IS NOT NULL;
    -- Whatever two replicas' claims race on, a key never has two running jobs.
    CREATE UNIQUE INDEX jobs_one_running_per_key ON jobs (key) WHERE state = 'running';

    CREATE TABLE job_events (
        job_id BIGINT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
        seq    BIGINT NOT NULL,
        at     BIGINT NOT NULL,
        kind   TEXT NOT NULL,
        data   TEXT NOT NULL,
        PRIMARY KEY (job_id, seq)
    );

    CREATE TABLE schedules (
        name    TEXT PRIMARY KEY,
        last_at BIGINT NOT NULL
    );",
];

/// The schema version this build writes.
pub const PG_SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

const JOB_COLUMNS: &str = "id, kind, repo, key, request, delivery_id, state, attempts, max_attempts, created_at, \
     started_at, finished_at, lease_owner, lease_expires_at, cancel_by, result, error";

const DELIVERY_COLUMNS: &str = "id, event, received_at, payload, processed_at";

/// The PostgreSQL [`JobStore`]. Cheap to clone; clones share the pool and the listener.
#[derive(Clone)]
pub struct PgStore {
    inner: Arc<Inner>,
}

struct Inner {
    /// `host:port/name`, what messages call the database (never the URL: it may hold a password).
    label: PathBuf,
    config: tokio_postgres::Config,
    tls: Tls,
    pool: Pool,
    signals: broadcast::Sender<Signal>,
    /// Stops the listener when the last clone goes.
    listening: CancellationToken,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.listening.cancel();
    }
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").field("database", &self.inner.label).finish()
    }
}

/// A failure inside a store call, before it is given the database's label.
enum Fail {
    Sql(tokio_postgres::Error),
    Pool(deadpool_postgres::PoolError),
    Store(StoreError),
    Json(serde_json::Error),
}

impl From<tokio_postgres::Error> for Fail {
    fn from(error: tokio_postgres::Error) -> Self {
        Fail::Sql(error)
    }
}

impl From<deadpool_postgres::PoolError> for Fail {
    fn from(error: deadpool_postgres::PoolError) -> Self {
        Fail::Pool(error)
    }
}

impl From<StoreError> for Fail {
    fn from(error: StoreError) -> Self {
        Fail::Store(error)
    }
}

impl From<serde_json::Error> for Fail {
    fn from(error: serde_json::Error) -> Self {
        Fail::Json(error)
    }
}

/// A database URL that could not be read; says where, never what it holds.
#[derive(Debug, thiserror::Error)]
#[error("the database URL is not a PostgreSQL connection string (postgres://user:password@host:port/name)")]
struct BadUrl;

/// The database's name in messages: `postgres://host:port/name`.
fn label_of(config: &tokio_postgres::Config) -> PathBuf {
    let host = config
        .get_hosts()
        .first()
        .map(|host| match host {
            tokio_postgres::config::Host::Tcp(name) => name.clone(),
            tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .unwrap_or_else(|| "localhost".to_owned());
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let name = config.get_dbname().or(config.get_user()).unwrap_or("postgres");
    PathBuf::from(format!("postgres://{host}:{port}/{name}"))
}

impl PgStore {
    /// Connects to the database at `url`, brings its schema up to date (under an advisory lock, so
    /// replicas starting together migrate once) and starts listening for the other replicas'
    /// signals.
    pub async fn connect(url: &str) -> Result<PgStore, StoreError> {
        let bad_url = || StoreError::Open {
            path: PathBuf::from("the configured PostgreSQL database"),
            source: Box::new(BadUrl),
        };
        let (url, root_cert) = take_root_cert(url).ok_or_else(bad_url)?;
        let mut config = tokio_postgres::Config::from_str(&url).map_err(|_| bad_url())?;
        let label = label_of(&config);
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(WAIT);
        }
        // A replica whose database went away (a cut network) learns it from the kernel within a
        // minute rather than hours.
        config.keepalives(true).keepalives_idle(Duration::from_secs(30));
        if config.get_application_name().is_none() {
            config.application_name("pitcrew");
        }
        let open_error = |source: Box<dyn std::error::Error + Send + Sync>| StoreError::Open {
            path: label.clone(),
            source,
        };
        let tls = Tls::for_mode(config.get_ssl_mode(), root_cert.as_deref()).map_err(open_error)?;
        let manager = tls.manager(config.clone());
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(WAIT))
            .create_timeout(Some(WAIT))
            .recycle_timeout(Some(WAIT))
            .build()
            .map_err(|error| open_error(Box::new(error)))?;
        let store = PgStore {
            inner: Arc::new(Inner {
                label: label.clone(),
                config,
                tls,
                pool,
                signals: broadcast::channel(SIGNAL_BUFFER).0,
                listening: CancellationToken::new(),
            }),
        };
        store.migrate().await?;
        let (ready_tx, ready) = tokio::sync::oneshot::channel();
        tokio::spawn(listen(
            store.inner.config.clone(),
            store.inner.tls.clone(),
            store.inner.label.clone(),
            store.inner.signals.clone(),
            store.inner.listening.clone(),
            ready_tx,
        ));
        // Listening before the store is handed out: no signal of its own first writes is missed.
        match tokio::time::timeout(WAIT, ready).await {
            Ok(Ok(Ok(()))) => Ok(store),
            Ok(Ok(Err(error))) => Err(open_error(Box::new(error))),
            Ok(Err(_)) | Err(_) => Err(open_error(Box::new(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "could not listen for the other replicas' signals",
            )))),
        }
    }

    async fn migrate(&self) -> Result<(), StoreError> {
        let label = self.inner.label.clone();
        let open_error = |error: Fail| match error {
            Fail::Store(error) => error,
            Fail::Sql(error) => StoreError::Open {
                path: label.clone(),
                source: Box::new(error),
            },
            Fail::Pool(error) => StoreError::Open {
                path: label.clone(),
                source: Box::new(error),
            },
            Fail::Json(error) => StoreError::Encode(error),
        };
        let result: Result<(), Fail> = async {
            let mut client = self.inner.pool.get().await?;
            let tx = client.transaction().await?;
            // Held to the end of the transaction: a second replica waits here, then finds the
            // schema up to date.
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
                .await?;
            tx.batch_execute("CREATE TABLE IF NOT EXISTS pitcrew_schema (version BIGINT NOT NULL)")
                .await?;
            let found: Option<i64> = tx
                .query_opt("SELECT version FROM pitcrew_schema", &[])
                .await?
                .map(|row| row.get(0));
            let found = match found {
                Some(found) => found,
                None => {
                    tx.execute("INSERT INTO pitcrew_schema (version) VALUES (0)", &[])
                        .await?;
                    0
                }
            };
            if found > PG_SCHEMA_VERSION {
                return Err(Fail::Store(StoreError::NewerSchema {
                    path: label.clone(),
                    found,
                    supported: PG_SCHEMA_VERSION,
                }));
            }
            for (index, migration) in MIGRATIONS.iter().enumerate().skip(usize::try_from(found).unwrap_or(0)) {
                tx.batch_execute(migration).await?;
                let version = i64::try_from(index + 1).unwrap_or(i64::MAX);
                tx.execute("UPDATE pitcrew_schema SET version = $1", &[&version])
                    .await?;
                tracing::info!(database = %label.display(), version, "migrated the job database");
            }
            tx.commit().await?;
            Ok(())
        }
        .await;
        result.map_err(open_error)
    }

    /// Runs `work` with a pooled connection, in a transaction when `transaction` says so, and maps
    /// its failure to the store's error.
    fn run<T, F>(&self, work: F) -> StoreFuture<T>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut deadpool_postgres::Client) -> futures_util::future::BoxFuture<'c, Result<T, Fail>>
            + Send
            + 'static,
    {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move {
            let outcome = async {
                let mut client = inner.pool.get().await?;
                work(&mut client).await
            }
            .await;
            outcome.map_err(|fail| database_error(&inner.label, fail))
        })
    }

    /// Cancels the queued jobs of `key` (of `kind` only, when given) and asks its running one to stop.
    fn cancel_of_kind(
        &self,
        key: &str,
        kind: Option<&str>,
        request: &StopRequest,
        now: i64,
    ) -> StoreFuture<Cancellation> {
        let (key, kind, request) = (key.to_owned(), kind.map(str::to_owned), request.clone());
        self.run(move |client| {
            Box::pin(async move {
                let (reason, by) = stop_columns(&request);
                let tx = client.transaction().await?;
                let mut cancellation = Cancellation::default();
                let targets = tx
                    .query(
                        &tx.prepare_cached(
                            "SELECT id, state, cancel_by FROM jobs
                         WHERE key = $1 AND state IN ('queued', 'running') AND ($2::TEXT IS NULL OR kind = $2)
                         ORDER BY id FOR UPDATE",
                        )
                        .await?,
                        &[&key, &kind],
                    )
                    .await?;
                for row in targets {
                    let id = JobId(row.get(0));
                    let state: String = row.get(1);
                    let asked: Option<String> = row.get(2);
                    if state == JobState::Queued.as_str() {
                        tx.execute(
                            &tx.prepare_cached(
                                "UPDATE jobs SET state = 'cancelled', finished_at = $2, error = $3 WHERE id = $1",
                            )
                            .await?,
                            &[&id.0, &now, &reason],
                        )
                        .await?;
                        let finished = Lifecycle::Finished {
                            state: JobState::Cancelled,
                            attempt: None,
                            error: Some(reason.clone()),
                        };
                        insert_record(&tx, id, &finished, now).await?;
                        cancellation.cancelled.push(id);
                    } else {
                        // A second stop keeps the first request: that is what the worker may
                        // already act on.
                        if asked.is_none() {
                            tx.execute(
                                &tx.prepare_cached("UPDATE jobs SET cancel_reason = $2, cancel_by = $3 WHERE id = $1")
                                    .await?,
                                &[&id.0, &reason, &by],
                            )
                            .await?;
                            let asked = Lifecycle::CancelRequested { reason: reason.clone() };
                            insert_record(&tx, id, &asked, now).await?;
                        }
                        notify(&tx, &Signal::Stop(id)).await?;
                        cancellation.stopping.push(id);
                    }
                }
                tx.commit().await?;
                Ok(cancellation)
            })
        })
    }

    /// Running jobs whose lease ends before `cutoff`: requeued, failed or cancelled (see
    /// [`JobStore::recover`]); `now` stamps what is written.
    fn recover_leases_before(&self, cutoff: i64, now: i64) -> StoreFuture<Recovery> {
        self.run(move |client| {
            Box::pin(async move {
                let tx = client.transaction().await?;
                // FOR UPDATE: a replica recovering at the same moment waits, then finds these rows
                // no longer running (READ COMMITTED looks again at a row it waited for).
                let expired = tx
                    .query(
                        &tx.prepare_cached(&format!(
                            "SELECT {JOB_COLUMNS} FROM jobs
                             WHERE state = 'running' AND lease_expires_at <= $1 ORDER BY id FOR UPDATE"
                        ))
                        .await?,
                        &[&cutoff],
                    )
                    .await?;
                if cutoff == i64::MAX {
                    // No worker of this store is alive: the deliveries it held are anyone's now.
                    tx.execute(
                        &tx.prepare_cached(
                            "UPDATE deliveries SET claimed_by = NULL, claimed_until = NULL
                         WHERE processed_at IS NULL AND claimed_by IS NOT NULL",
                        )
                        .await?,
                        &[],
                    )
                    .await?;
                }
                let mut recovery = Recovery::default();
                for row in expired {
                    let job = job_from_row(&row)?;
                    let interrupted = Lifecycle::Interrupted {
                        worker: job.lease_owner.clone(),
                        attempt: job.attempts,
                    };
                    insert_record(&tx, job.id, &interrupted, now).await?;
                    let (state, error) = if let Some(request) = &job.cancel_requested {
                        recovery.cancelled.push(job.id);
                        (JobState::Cancelled, Some(request.to_string()))
                    } else if job.attempts < job.max_attempts {
                        recovery.requeued.push(job.id);
                        (JobState::Queued, None)
                    } else {
                        recovery.failed.push(job.id);
                        (JobState::Failed, Some(interrupted_error(job.attempts)))
                    };
                    let finished_at = state.is_final().then_some(now);
                    tx.execute(
                        &tx.prepare_cached(
                            "UPDATE jobs SET state = $2, finished_at = $3, error = $4, lease_owner = NULL,
                                lease_expires_at = NULL
                         WHERE id = $1",
                        )
                        .await?,
                        &[&job.id.0, &state.as_str(), &finished_at, &error],
                    )
                    .await?;
                    if state.is_final() {
                        let finished = Lifecycle::Finished {
                            state,
                            attempt: Some(job.attempts),
                            error,
                        };
                        insert_record(&tx, job.id, &finished, now).await?;
                    }
                }
                if !recovery.requeued.is_empty() {
                    notify(&tx, &Signal::Jobs).await?;
                }
                tx.commit().await?;
                Ok(recovery)
            })
        })
    }

    /// Runs a pruning `statement` (cutoff `$1`, batch size `$2`) until a batch changes fewer rows
    /// than a full batch.
    async fn prune_all(&self, statement: &'static str, cutoff: i64) -> Result<u64, StoreError> {
        let mut total = 0;
        loop {
            let changed = self
                .run(move |client| {
                    Box::pin(async move {
                        Ok(client
                            .execute(&client.prepare_cached(statement).await?, &[&cutoff, &PRUNE_BATCH])
                            .await?)
                    })
                })
                .await?;
            total += changed;
            if changed < PRUNE_BATCH.unsigned_abs() {
                return Ok(total);
            }
        }
    }
}

fn database_error(label: &std::path::Path, fail: Fail) -> StoreError {
    match fail {
        Fail::Sql(error) => StoreError::Database {
            path: label.to_path_buf(),
            source: Box::new(error),
        },
        Fail::Pool(error) => StoreError::Database {
            path: label.to_path_buf(),
            source: Box::new(error),
        },
        Fail::Store(error) => error,
        Fail::Json(error) => StoreError::Database {
            path: label.to_path_buf(),
            source: Box::new(error),
        },
    }
}

/// Sends `signal` to every replica when the transaction commits (`pg_notify` is transactional).
async fn notify(client: &impl GenericClient, signal: &Signal) -> Result<(), tokio_postgres::Error> {
    client
        .execute(
            &client.prepare_cached("SELECT pg_notify($1, $2)").await?,
            &[&CHANNEL, &signal.encode()],
        )
        .await
        .map(drop)
}

/// How a listening session ended.
enum Ended {
    /// The first connection failed: `connect` was told, and the listener gives up.
    GaveUp,
    Closed,
    Failed(tokio_postgres::Error),
}

/// Listens for the replicas' signals until `stop` fires: a connection of its own, made again after
/// a failure (with a [`Signal::Resync`], since signals may have been missed meanwhile). `ready`
/// hears whether the first connection listens.
async fn listen(
    config: tokio_postgres::Config,
    tls: Tls,
    label: PathBuf,
    signals: broadcast::Sender<Signal>,
    stop: CancellationToken,
    ready: tokio::sync::oneshot::Sender<Result<(), tokio_postgres::Error>>,
) {
    let mut failures = 0u32;
    let mut ready = Some(ready);
    loop {
        let first = ready.take();
        let (config, signals, tls) = (&config, &signals, &tls);
        let session = async move {
            let setup = async {
                let Dedicated {
                    client,
                    messages,
                    driver,
                } = tls.dedicated(config).await?;
                client.batch_execute(&format!("LISTEN {CHANNEL}")).await?;
                Ok::<_, tokio_postgres::Error>((client, driver, messages))
            };
            let (_client, _driver, mut messages) = match setup.await {
                Ok(session) => session,
                Err(error) => {
                    return match first {
                        Some(first) => {
                            let _ = first.send(Err(error));
                            Ended::GaveUp
                        }
                        None => Ended::Failed(error),
                    };
                }
            };
            if let Some(first) = first {
                let _ = first.send(Ok(()));
            }
            // Connected (again): what happened while nobody listened is unknown.
            let _ = signals.send(Signal::Resync);
            loop {
                match messages.recv().await {
                    Some(Ok(payload)) => {
                        let _ = signals.send(Signal::decode(&payload));
                    }
                    Some(Err(error)) => return Ended::Failed(error),
                    None => return Ended::Closed,
                }
            }
        };
        tokio::select! {
            () = stop.cancelled() => return,
            ended = session => {
                failures += 1;
                match ended {
                    Ended::GaveUp => return,
                    Ended::Closed => tracing::warn!(database = %label.display(),
                        "the signal listener's connection closed; reconnecting"),
                    Ended::Failed(error) => tracing::warn!(database = %label.display(), error = %error,
                        "the signal listener's connection failed; reconnecting"),
                }
            }
        }
        let delay = crate::backoff::delay(
            Duration::from_millis(100),
            Duration::from_secs(5),
            failures.min(10),
            crate::backoff::Jitter::Half,
        );
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(delay) => {}
        }
    }
}

/// How the store's connections are made: plain, or with TLS whose server certificate is verified
/// (`sslmode=require` in the URL) against the system's roots, `SSL_CERT_FILE`, and `sslrootcert`
/// when the URL names one. Without `require` no TLS is attempted (`prefer` would meet servers whose
/// certificate nothing here can verify, such as Debian's self-signed default, and fail where a
/// plain connection works).
#[derive(Clone)]
enum Tls {
    Off,
    Verified(super::pg_tls::MakeRustls),
}

/// A connection of its own (not pooled), driven by a task of its own; its notifications come on
/// `messages`.
struct Dedicated {
    client: Client,
    messages: tokio::sync::mpsc::UnboundedReceiver<Result<String, tokio_postgres::Error>>,
    driver: AbortOnDrop,
}

impl Tls {
    fn for_mode(
        mode: SslMode,
        root_cert: Option<&std::path::Path>,
    ) -> Result<Tls, Box<dyn std::error::Error + Send + Sync>> {
        if mode != SslMode::Require {
            return Ok(Tls::Off);
        }
        let mut roots = rustls::RootCertStore::empty();
        // Unreadable entries of the system's store are skipped, as every rustls client does.
        for cert in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(cert);
        }
        if let Some(path) = root_cert {
            let pem = std::fs::read(path).map_err(|error| format!("sslrootcert {}: {error}", path.display()))?;
            let mut added = 0;
            for cert in rustls::pki_types::pem::PemObject::pem_slice_iter(&pem) {
                let cert: rustls::pki_types::CertificateDer<'static> =
                    cert.map_err(|error| format!("sslrootcert {}: {error}", path.display()))?;
                roots
                    .add(cert)
                    .map_err(|error| format!("sslrootcert {}: {error}", path.display()))?;
                added += 1;
            }
            if added == 0 {
                return Err(format!("sslrootcert {}: no certificate in it", path.display()).into());
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Tls::Verified(super::pg_tls::MakeRustls::new(config)))
    }

    fn manager(&self, config: tokio_postgres::Config) -> Manager {
        let recycling = || ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        match self {
            Tls::Off => Manager::from_config(config, NoTls, recycling()),
            Tls::Verified(tls) => Manager::from_config(config, tls.clone(), recycling()),
        }
    }

    async fn dedicated(&self, config: &tokio_postgres::Config) -> Result<Dedicated, tokio_postgres::Error> {
        Ok(match self {
            Tls::Off => {
                let (client, connection) = config.connect(NoTls).await?;
                drive(client, connection)
            }
            Tls::Verified(tls) => {
                let (client, connection) = config.connect(tls.clone()).await?;
                drive(client, connection)
            }
        })
    }
}

/// Spawns the task that drives `connection` and forwards its notifications.
fn drive<S, T>(client: Client, mut connection: Connection<S, T>) -> Dedicated
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (messages_tx, messages) = tokio::sync::mpsc::unbounded_channel();
    // The connection runs by being polled; its messages (the notifications) come with it.
    let driver = tokio::spawn(async move {
        let mut stream = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = stream.next().await {
            match message {
                Ok(AsyncMessage::Notification(notification)) => {
                    // Nobody listening (a leadership's connection) is fine.
                    let _ = messages_tx.send(Ok(notification.payload().to_owned()));
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::debug!(error = %error, "a dedicated database connection ended");
                    let _ = messages_tx.send(Err(error));
                    return;
                }
            }
        }
    });
    Dedicated {
        client,
        messages,
        driver: AbortOnDrop(driver),
    }
}

/// `url` without its `sslrootcert` parameter (which the client library does not know), and that
/// parameter's path; `None` when `url` cannot be read.
fn take_root_cert(url: &str) -> Option<(String, Option<PathBuf>)> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let mut parsed = url::Url::parse(url).ok()?;
        let mut root = None;
        let kept: Vec<(String, String)> = parsed
            .query_pairs()
            .filter_map(|(key, value)| {
                if key == "sslrootcert" {
                    root = Some(PathBuf::from(value.as_ref()));
                    None
                } else {
                    Some((key.into_owned(), value.into_owned()))
                }
            })
            .collect();
        if root.is_some() {
            if kept.is_empty() {
                parsed.set_query(None);
            } else {
                parsed.query_pairs_mut().clear().extend_pairs(kept);
            }
        }
        return Some((parsed.to_string(), root));
    }
    // The key=value form: a plain `sslrootcert=path` (no quotes, no spaces in the path); anything
    // else is left as written.
    if !url.split_whitespace().any(|part| part.starts_with("sslrootcert=")) {
        return Some((url.to_owned(), None));
    }
    let mut root = None;
    let kept: Vec<&str> = url
        .split_whitespace()
        .filter(|part| match part.strip_prefix("sslrootcert=") {
            Some(path) => {
                root = Some(PathBuf::from(path));
                false
            }
            None => true,
        })
        .collect();
    Some((kept.join(" "), root))
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn json(text: &str) -> Result<Value, Fail> {
    Ok(serde_json::from_str(text)?)
}

fn attempts_of(value: i32) -> u32 {
    u32::try_from(value).unwrap_or(0)
}

fn job_from_row(row: &Row) -> Result<Job, Fail> {
    let state: String = row.get(6);
    let request: String = row.get(4);
    let result: Option<String> = row.get(15);
    Ok(Job {
        id: JobId(row.get(0)),
        kind: row.get(1),
        repo: row.get(2),
        key: row.get(3),
        request: json(&request)?,
        delivery: row.get::<_, Option<String>>(5).map(DeliveryId),
        state: JobState::parse(&state)
            .ok_or_else(|| Fail::Json(serde::de::Error::custom(format_args!("unknown job state {state:?}"))))?,
        attempts: attempts_of(row.get(7)),
        max_attempts: attempts_of(row.get(8)),
        created_at: row.get(9),
        started_at: row.get(10),
        finished_at: row.get(11),
        lease_owner: row.get(12),
        lease_expires_at: row.get(13),
        cancel_requested: stop_request(row.get(14)),
        result: result.as_deref().map(json).transpose()?,
        error: row.get(16),
    })
}

fn delivery_from_row(row: &Row) -> Delivery {
    Delivery {
        id: DeliveryId(row.get(0)),
        event: row.get(1),
        received_at: row.get(2),
        payload: row.get(3),
        processed_at: row.get(4),
    }
}

async fn load_job(client: &impl GenericClient, id: JobId) -> Result<Option<Job>, Fail> {
    client
        .query_opt(
            &client
                .prepare_cached(&format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = $1"))
                .await?,
            &[&id.0],
        )
        .await?
        .map(|row| job_from_row(&row))
        .transpose()
}

async fn insert_job(
    client: &impl GenericClient,
    job: &NewJob,
    delivery: Option<&DeliveryId>,
    now: i64,
) -> Result<JobId, Fail> {
    let delivery = job.delivery.as_ref().or(delivery);
    let max_attempts = i32::try_from(job.max_attempts.max(1)).unwrap_or(i32::MAX);
    let row = client
        .query_one(
            &client
                .prepare_cached(
                    "INSERT INTO jobs (kind, repo, key, request, delivery_id, state, max_attempts, created_at)
             VALUES ($1, $2, $3, $4, $5, 'queued', $6, $7) RETURNING id",
                )
                .await?,
            &[
                &job.kind,
                &job.repo,
                &job.key,
                &job.request.to_string(),
                &delivery.map(|d| d.0.as_str()),
                &max_attempts,
                &now,
            ],
        )
        .await?;
    let id = JobId(row.get(0));
    let queued = Lifecycle::Queued {
        kind: job.kind.clone(),
        key: job.key.clone(),
        delivery: delivery.cloned(),
    };
    insert_record(client, id, &queued, now).await?;
    Ok(id)
}

async fn insert_record(client: &impl GenericClient, id: JobId, record: &Lifecycle, now: i64) -> Result<u64, Fail> {
    let (kind, data) = record.to_row()?;
    insert_event(client, id, &kind, &data, now).await
}

/// Appends an event; the caller holds the job's row lock (it updated the row, or inserted it, or
/// locked it), so two appends to one job never compute the same `seq`.
async fn insert_event(client: &impl GenericClient, id: JobId, kind: &str, data: &Value, now: i64) -> Result<u64, Fail> {
    let row = client
        .query_one(
            &client
                .prepare_cached(
                    "INSERT INTO job_events (job_id, seq, at, kind, data)
             VALUES ($1, COALESCE((SELECT MAX(seq) FROM job_events WHERE job_id = $1), 0) + 1, $2, $3, $4)
             RETURNING seq",
                )
                .await?,
            &[&id.0, &now, &kind, &data.to_string()],
        )
        .await?;
    Ok(u64::try_from(row.get::<_, i64>(0)).unwrap_or(0))
}

fn count(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

impl JobStore for PgStore {
    fn record_delivery(
        &self,
        id: &DeliveryId,
        event: &str,
        payload: Bytes,
        claim: Option<DeliveryClaim>,
        now: i64,
    ) -> StoreFuture<Recorded> {
        let (id, event) = (id.clone(), event.to_owned());
        self.run(move |client| {
            Box::pin(async move {
                const INSERT: &str =
                    "INSERT INTO deliveries (id, event, received_at, payload, claim_key, claimed_by, claimed_until)
                     VALUES ($1, $2, $3, $4, $5, $6, $7)
                     ON CONFLICT (id) DO NOTHING";
                let inserted = match claim {
                    // Its receiver handles it: one statement, no transaction, nobody to signal.
                    Some(claim) => {
                        let until = lease_end(now, claim.lease_for);
                        let params: [&(dyn ToSql + Sync); 7] =
                            [&id.0, &event, &now, &&payload[..], &claim.key, &claim.worker, &until];
                        client.execute(&client.prepare_cached(INSERT).await?, &params).await?
                    }
                    None => {
                        let tx = client.transaction().await?;
                        let none: Option<String> = None;
                        let until: Option<i64> = None;
                        let params: [&(dyn ToSql + Sync); 7] =
                            [&id.0, &event, &now, &&payload[..], &none, &none, &until];
                        let inserted = tx.execute(&tx.prepare_cached(INSERT).await?, &params).await?;
                        if inserted == 1 {
                            notify(&tx, &Signal::Deliveries).await?;
                        }
                        tx.commit().await?;
                        inserted
                    }
                };
                Ok(if inserted == 1 {
                    Recorded::New
                } else {
                    Recorded::Duplicate
                })
            })
        })
    }

    fn delivery(&self, id: &DeliveryId) -> StoreFuture<Option<Delivery>> {
        let id = id.clone();
        self.run(move |client| {
            Box::pin(async move {
                Ok(client
                    .query_opt(
                        &client
                            .prepare_cached(&format!("SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE id = $1"))
                            .await?,
                        &[&id.0],
                    )
                    .await?
                    .map(|row| delivery_from_row(&row)))
            })
        })
    }

    fn unprocessed_deliveries(&self, limit: u32) -> StoreFuture<Vec<Pending>> {
        self.run(move |client| {
            Box::pin(async move {
                let statement = client
                    .prepare_cached(
                        "SELECT id, event, claim_key, claimed_by, claimed_until FROM deliveries
                         WHERE processed_at IS NULL ORDER BY seq LIMIT $1",
                    )
                    .await?;
                let rows = client.query(&statement, &[&i64::from(limit)]).await?;
                Ok(rows
                    .iter()
                    .map(|row| Pending {
                        id: DeliveryId(row.get(0)),
                        event: row.get(1),
                        claim: HeldClaim::from_columns(row.get(2), row.get(3), row.get(4)),
                    })
                    .collect())
            })
        })
    }

    fn available_deliveries(&self, worker: &str, now: i64, limit: u32) -> StoreFuture<Vec<Available>> {
        let worker = worker.to_owned();
        self.run(move |client| {
            Box::pin(async move {
                let statement = client
                    .prepare_cached(
                        "SELECT d.id, d.event, d.claim_key, d.claimed_by, d.claimed_until,
                                EXISTS (SELECT 1 FROM deliveries AS o
                                        WHERE o.claim_key = d.claim_key AND o.processed_at IS NULL AND o.seq < d.seq
                                          AND o.claimed_by <> $1 AND o.claimed_until > $2)
                         FROM deliveries AS d
                         WHERE d.processed_at IS NULL
                           AND (d.claimed_by IS NULL OR d.claimed_by = $1 OR d.claimed_until <= $2)
                         ORDER BY d.seq LIMIT $3",
                    )
                    .await?;
                let rows = client.query(&statement, &[&worker, &now, &i64::from(limit)]).await?;
                Ok(rows
                    .iter()
                    .map(|row| Available {
                        id: DeliveryId(row.get(0)),
                        event: row.get(1),
                        claim: HeldClaim::from_columns(row.get(2), row.get(3), row.get(4)),
                        behind: row.get(5),
                    })
                    .collect())
            })
        })
    }

    fn claim_delivery(&self, id: &DeliveryId, claim: &DeliveryClaim, now: i64) -> StoreFuture<bool> {
        let id = id.clone();
        let DeliveryClaim { key, worker, lease_for } = claim.clone();
        self.run(move |client| {
            Box::pin(async move {
                let tx = client.transaction().await?;
                // Claims of one key take turns: the check of older deliveries below sees every
                // claim committed before.
                tx.execute(
                    &tx.prepare_cached("SELECT pg_advisory_xact_lock(hashtextextended('pitcrew-delivery:' || $1, 0))").await?,
                    &[&key],
                )
                .await?;
                let found = tx
                    .query_opt(
                        &tx.prepare_cached("SELECT seq, processed_at, claimed_by, claimed_until FROM deliveries WHERE id = $1 FOR UPDATE").await?,
                        &[&id.0],
                    )
                    .await?;
                let Some(row) = found else {
                    return Err(StoreError::UnknownDelivery(id).into());
                };
                let seq: i64 = row.get(0);
                let processed: Option<i64> = row.get(1);
                let by: Option<String> = row.get(2);
                let until: Option<i64> = row.get(3);
                let held_elsewhere = by.is_some_and(|by| by != worker) && until.is_some_and(|until| until > now);
                if processed.is_some() || held_elsewhere {
                    return Ok(false);
                }
                let older_held = tx
                    .query_opt(
                        &tx.prepare_cached("SELECT 1 FROM deliveries
                         WHERE claim_key = $1 AND processed_at IS NULL AND seq < $2
                           AND claimed_by <> $3 AND claimed_until > $4
                         LIMIT 1").await?,
                        &[&key, &seq, &worker, &now],
                    )
                    .await?;
                if older_held.is_some() {
                    return Ok(false);
                }
                tx.execute(
                    &tx.prepare_cached("UPDATE deliveries SET claim_key = $2, claimed_by = $3, claimed_until = $4 WHERE id = $1").await?,
                    &[&id.0, &key, &worker, &lease_end(now, lease_for)],
                )
                .await?;
                tx.commit().await?;
                Ok(true)
            })
        })
    }

    fn release_deliveries(&self, worker: &str) -> StoreFuture<u64> {
        let worker = worker.to_owned();
        self.run(move |client| {
            Box::pin(async move {
                let tx = client.transaction().await?;
                let released = tx
                    .execute(
                        "UPDATE deliveries SET claimed_by = NULL, claimed_until = NULL
                         WHERE claimed_by = $1 AND processed_at IS NULL",
                        &[&worker],
                    )
                    .await?;
                if released > 0 {
                    notify(&tx, &Signal::Deliveries).await?;
                }
                tx.commit().await?;
                Ok(released)
            })
        })
    }

    fn process_delivery(&self, id: &DeliveryId, jobs: Vec<NewJob>, now: i64) -> StoreFuture<Dispatch> {
        let id = id.clone();
        self.run(move |client| {
            Box::pin(async move {
                let tx = client.transaction().await?;
                let found = tx
                    .query_opt(
                        &tx.prepare_cached("SELECT processed_at, claim_key FROM deliveries WHERE id = $1 FOR UPDATE").await?,
                        &[&id.0],
                    )
                    .await?;
                let Some(row) = found else {
                    return Err(StoreError::UnknownDelivery(id).into());
                };
                if row.get::<_, Option<i64>>(0).is_some() {
                    return Ok(Dispatch::AlreadyProcessed);
                }
                let key: Option<String> = row.get(1);
                let mut ids = Vec::with_capacity(jobs.len());
                for job in &jobs {
                    ids.push(insert_job(&tx, job, Some(&id), now).await?);
                }
                tx.execute(&tx.prepare_cached("UPDATE deliveries SET processed_at = $2 WHERE id = $1").await?, &[&id.0, &now])
                    .await?;
                if !ids.is_empty() {
                    notify(&tx, &Signal::Jobs).await?;
                }
                // The dispatchers holding younger deliveries of the same key may go on (none waits
                // when there is none: then the other replicas need not look).
                let waiting = match &key {
                    Some(key) => tx
                        .query_opt(
                            &tx.prepare_cached("SELECT 1 FROM deliveries WHERE claim_key = $1 AND processed_at IS NULL AND id <> $2 LIMIT 1").await?,
                            &[key, &id.0],
                        )
                        .await?
                        .is_some(),
                    None => true,
                };
                if waiting {
                    notify(&tx, &Signal::Deliveries).await?;
                }
                tx.commit().await?;
                Ok(Dispatch::Created(ids))
            })
        })
    }

    fn count_deliveries(&self) -> StoreFuture<u64> {
        self.run(|client| {
            Box::pin(async move {
                let row = client
                    .query_one(&client.prepare_cached("SELECT COUNT(*) FROM deliveries").await?, &[])
                    .await?;
                Ok(count(row.get(0)))
            })
        })
    }

    fn enqueue(&self, job: NewJob, now: i64) -> StoreFuture<JobId> {
        self.run(move |client| {
            Box::pin(async move {
                let tx = client.transaction().await?;
                let id = insert_job(&tx, &job, None, now).await?;
                notify(&tx, &Signal::Jobs).await?;
                tx.commit().await?;
                Ok(id)
            })
        })
    }

    fn claim(&self, worker: &str, lease_for: Duration, now: i64) -> StoreFuture<Option<Claim>> {
        let worker = worker.to_owned();
        self.run(move |client| {
            Box::pin(async move {
                // Two replicas may pick jobs of one key at once (neither sees the other's claim
                // yet): the unique index refuses the second, which looks again.
                for _ in 0..5 {
                    let tx = client.transaction().await?;
                    // The oldest queued job of its key, whose key has no running job; a row another
                    // replica is taking is skipped, not waited for.
                    let picked = tx
                        .query_opt(
                            &tx.prepare_cached(
                                "SELECT id FROM jobs AS j
                             WHERE j.state = 'queued'
                               AND NOT EXISTS (SELECT 1 FROM jobs AS r WHERE r.key = j.key AND r.state = 'running')
                               AND NOT EXISTS (SELECT 1 FROM jobs AS o
                                               WHERE o.key = j.key AND o.state = 'queued' AND o.id < j.id)
                             ORDER BY j.id LIMIT 1
                             FOR UPDATE SKIP LOCKED",
                            )
                            .await?,
                            &[],
                        )
                        .await?;
                    let Some(id) = picked.map(|row| JobId(row.get(0))) else {
                        return Ok(None);
                    };
                    let updated = tx
                        .execute(
                            &tx.prepare_cached(
                                "UPDATE jobs SET state = 'running', attempts = attempts + 1, started_at = $2,
                                    finished_at = NULL, lease_owner = $3, lease_expires_at = $4
                             WHERE id = $1 AND state = 'queued'",
                            )
                            .await?,
                            &[&id.0, &now, &worker, &lease_end(now, lease_for)],
                        )
                        .await;
                    match updated {
                        Ok(_) => {}
                        Err(error) if error.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                            tx.rollback().await?;
                            continue;
                        }
                        Err(error) => return Err(error.into()),
                    }
                    let job = load_job(&tx, id).await?.ok_or(StoreError::UnknownJob(id))?;
                    let claimed = Lifecycle::Claimed {
                        worker: worker.clone(),
                        attempt: job.attempts,
                    };
                    insert_record(&tx, id, &claimed, now).await?;
                    tx.commit().await?;
                    let lease = Lease {
                        job: id,
                        worker,
                        attempt: job.attempts,
                    };
                    return Ok(Some(Claim { job, lease }));
                }
                Ok(None)
            })
        })
    }

    fn heartbeat(&self, lease: &Lease, lease_for: Duration, now: i64) -> StoreFuture<Heartbeat> {
        let lease = lease.clone();
        self.run(move |client| {
            Box::pin(async move {
                let attempt = i32::try_from(lease.attempt).unwrap_or(i32::MAX);
                let row = client
                    .query_opt(
                        &client
                            .prepare_cached(
                                "UPDATE jobs SET lease_expires_at = $4
                         WHERE id = $1 AND state = 'running' AND lease_owner = $2 AND attempts = $3
                         RETURNING cancel_by",
                            )
                            .await?,
                        &[&lease.job.0, &lease.worker, &attempt, &lease_end(now, lease_for)],
                    )
                    .await?;
                Ok(match row.map(|row| stop_request(row.get(0))) {
                    None => Heartbeat::LeaseLost,
                    Some(None) => Heartbeat::Ok,
                    Some(Some(request)) => Heartbeat::CancelRequested(request),
                })
            })
        })
    }

    fn finish(&self, lease: &Lease, outcome: Finish, now: i64) -> StoreFuture<Release> {
        let lease = lease.clone();
        self.run(move |client| {
            Box::pin(async move {
                let tx = client.transaction().await?;
                let state = outcome.state();
                let (result, error) = match &outcome {
                    Finish::Succeeded(value) => (Some(value.to_string()), None),
                    Finish::Failed(reason) | Finish::Cancelled(reason) => (None, Some(reason.clone())),
                };
                let attempt = i32::try_from(lease.attempt).unwrap_or(i32::MAX);
                let changed = tx
                    .execute(
                        &tx.prepare_cached(
                            "UPDATE jobs SET state = $4, finished_at = $5, result = $6, error = $7,
                                lease_owner = NULL, lease_expires_at = NULL
                         WHERE id = $1 AND state = 'running' AND lease_owner = $2 AND attempts = $3",
                        )
                        .await?,
                        &[
                            &lease.job.0,
                            &lease.worker,
                            &attempt,
                            &state.as_str(),
                            &now,
                            &result,
                            &error,
                        ],
                    )
                    .await?;
                if changed == 0 {
                    return Ok(Release::LeaseLost);
                }
                let finished = Lifecycle::Finished {
                    state,
                    attempt: Some(lease.attempt),
                    error,
                };
                insert_record(&tx, lease.job, &finished, now).await?;
                for signal in released(&Release::Done) {
                    notify(&tx, &signal).await?;
                }
                tx.commit().await?;
                Ok(Release::Done)
            })
        })
    }

    fn requeue(&self, lease: &Lease, now: i64) -> StoreFuture<Release> {
        let lease = lease.clone();
        self.run(move |client| {
            Box::pin(async move {
                let tx = client.transaction().await?;
                let attempt = i32::try_from(lease.attempt).unwrap_or(i32::MAX);
                let row = tx
                    .query_opt(
                        &tx.prepare_cached(
                            "SELECT cancel_by FROM jobs
                         WHERE id = $1 AND state = 'running' AND lease_owner = $2 AND attempts = $3
                         FOR UPDATE",
                        )
                        .await?,
                        &[&lease.job.0, &lease.worker, &attempt],
                    )
                    .await?;
                let release = match row.map(|row| stop_request(row.get(0))) {
                    None => return Ok(Release::LeaseLost),
                    Some(Some(request)) => {
                        let reason = request.to_string();
                        tx.execute(
                            &tx.prepare_cached(
                                "UPDATE jobs SET state = 'cancelled', finished_at = $2, error = $3,
                                    lease_owner = NULL, lease_expires_at = NULL
                             WHERE id = $1",
                            )
                            .await?,
                            &[&lease.job.0, &now, &reason],
                        )
                        .await?;
                        let finished = Lifecycle::Finished {
                            state: JobState::Cancelled,
                            attempt: Some(lease.attempt),
                            error: Some(reason),
                        };
                        insert_record(&tx, lease.job, &finished, now).await?;
                        Release::Cancelled
                    }
                    Some(None) => {
                        tx.execute(
                            &tx.prepare_cached(
                                "UPDATE jobs SET state = 'queued', attempts = attempts - 1, started_at = NULL,
                                    lease_owner = NULL, lease_expires_at = NULL
                             WHERE id = $1",
                            )
                            .await?,
                            &[&lease.job.0],
                        )
                        .await?;
                        let requeued = Lifecycle::Requeued {
                            worker: lease.worker.clone(),
                            attempt: lease.attempt,
                        };
                        insert_record(&tx, lease.job, &requeued, now).await?;
                        Release::Done
                    }
                };
                for signal in released(&release) {
                    notify(&tx, &signal).await?;
                }
                tx.commit().await?;
                Ok(release)
            })
        })
    }

    fn cancel(&self, key: &str, request: &StopRequest, now: i64) -> StoreFuture<Cancellation> {
        self.cancel_of_kind(key, None, request, now)
    }

    fn supersede(&self, key: &str, kind: &str, request: &StopRequest, now: i64) -> StoreFuture<Cancellation> {
        self.cancel_of_kind(key, Some(kind), request, now)
    }

    fn recover(&self, now: i64) -> StoreFuture<Recovery> {
        self.recover_leases_before(now, now)
    }

    fn recover_all(&self, now: i64) -> StoreFuture<Recovery> {
        self.recover_leases_before(i64::MAX, now)
    }

    fn append_event(&self, id: JobId, kind: &str, data: Value, now: i64) -> StoreFuture<u64> {
        let kind = kind.to_owned();
        self.run(move |client| {
            Box::pin(async move {
                let tx = client.transaction().await?;
                // The job's row lock orders this append with the store's own (see `insert_event`).
                let exists = tx
                    .query_opt(
                        &tx.prepare_cached("SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE").await?,
                        &[&id.0],
                    )
                    .await?;
                if exists.is_none() {
                    return Err(StoreError::UnknownJob(id).into());
                }
                let seq = insert_event(&tx, id, &kind, &data, now).await?;
                tx.commit().await?;
                Ok(seq)
            })
        })
    }

    fn events(&self, id: JobId) -> StoreFuture<Vec<JobEvent>> {
        self.run(move |client| {
            Box::pin(async move {
                let rows = client
                    .query(
                        &client
                            .prepare_cached("SELECT seq, at, kind, data FROM job_events WHERE job_id = $1 ORDER BY seq")
                            .await?,
                        &[&id.0],
                    )
                    .await?;
                rows.iter()
                    .map(|row| {
                        let data: String = row.get(3);
                        Ok(JobEvent {
                            job_id: id,
                            seq: count(row.get(0)),
                            at: row.get(1),
                            kind: row.get(2),
                            data: json(&data)?,
                        })
                    })
                    .collect()
            })
        })
    }

    fn job(&self, id: JobId) -> StoreFuture<Option<Job>> {
        self.run(move |client| Box::pin(async move { load_job(&*client, id).await }))
    }

    fn jobs(&self, filter: &JobFilter) -> StoreFuture<Vec<Job>> {
        let filter = filter.clone();
        self.run(move |client| {
            Box::pin(async move {
                let rows = client
                    .query(
                        &format!(
                            "SELECT {JOB_COLUMNS} FROM jobs
                             WHERE ($1::TEXT IS NULL OR state = $1) AND ($2::TEXT IS NULL OR key = $2)
                               AND ($3::TEXT IS NULL OR repo = $3)
                             ORDER BY id DESC LIMIT $4"
                        ),
                        &[
                            &filter.state.map(JobState::as_str),
                            &filter.key,
                            &filter.repo,
                            &i64::from(filter.limit),
                        ],
                    )
                    .await?;
                rows.iter().map(job_from_row).collect()
            })
        })
    }

    fn schedule_mark(&self, name: &str) -> StoreFuture<Option<i64>> {
        let name = name.to_owned();
        self.run(move |client| {
            Box::pin(async move {
                Ok(client
                    .query_opt(
                        &client
                            .prepare_cached("SELECT last_at FROM schedules WHERE name = $1")
                            .await?,
                        &[&name],
                    )
                    .await?
                    .map(|row| row.get(0)))
            })
        })
    }

    fn fire_schedule(&self, name: &str, last: Option<i64>, at: i64, job: Option<NewJob>) -> StoreFuture<Fired> {
        let name = name.to_owned();
        self.run(move |client| {
            Box::pin(async move {
                let tx = client.transaction().await?;
                let moved = match last {
                    None => {
                        tx.execute(
                            &tx.prepare_cached(
                                "INSERT INTO schedules (name, last_at) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
                            )
                            .await?,
                            &[&name, &at],
                        )
                        .await?
                    }
                    Some(last) => {
                        tx.execute(
                            &tx.prepare_cached("UPDATE schedules SET last_at = $2 WHERE name = $1 AND last_at = $3")
                                .await?,
                            &[&name, &at, &last],
                        )
                        .await?
                    }
                };
                if moved == 0 {
                    return Ok(Fired::Raced);
                }
                let id = match &job {
                    Some(job) => Some(insert_job(&tx, job, None, at).await?),
                    None => None,
                };
                if id.is_some() {
                    notify(&tx, &Signal::Jobs).await?;
                }
                tx.commit().await?;
                Ok(Fired::Done(id))
            })
        })
    }

    fn count_by_state(&self) -> StoreFuture<BTreeMap<JobState, u64>> {
        self.run(|client| {
            Box::pin(async move {
                let mut counts: BTreeMap<JobState, u64> = JobState::ALL.into_iter().map(|state| (state, 0)).collect();
                for row in client
                    .query(
                        &client
                            .prepare_cached("SELECT state, COUNT(*) FROM jobs GROUP BY state")
                            .await?,
                        &[],
                    )
                    .await?
                {
                    let state: String = row.get(0);
                    if let Some(state) = JobState::parse(&state) {
                        counts.insert(state, count(row.get(1)));
                    }
                }
                Ok(counts)
            })
        })
    }

    fn prune(&self, retention: Retention, now: i64) -> StoreFuture<Pruned> {
        let store = self.clone();
        Box::pin(async move {
            let payloads = store
                .prune_all(
                    "UPDATE deliveries SET payload = ''::BYTEA WHERE id IN (
                         SELECT d.id FROM deliveries AS d
                         WHERE d.processed_at < $1 AND length(d.payload) > 0
                           AND NOT EXISTS (SELECT 1 FROM jobs AS j
                                           WHERE j.delivery_id = d.id AND j.state IN ('queued', 'running'))
                         LIMIT $2)",
                    age_cutoff(now, retention.payloads),
                )
                .await?;
            let rows = age_cutoff(now, retention.rows);
            // Events go with their job (ON DELETE CASCADE).
            let jobs = store
                .prune_all(
                    "DELETE FROM jobs WHERE id IN (
                         SELECT id FROM jobs
                         WHERE finished_at < $1 AND state IN ('succeeded', 'failed', 'cancelled')
                         LIMIT $2)",
                    rows,
                )
                .await?;
            let deliveries = store
                .prune_all(
                    "DELETE FROM deliveries WHERE id IN (
                         SELECT d.id FROM deliveries AS d
                         WHERE d.processed_at < $1
                           AND NOT EXISTS (SELECT 1 FROM jobs AS j WHERE j.delivery_id = d.id)
                         LIMIT $2)",
                    rows,
                )
                .await?;
            // PostgreSQL's autovacuum gives the space back to the tables; no file shrinks here.
            Ok(Pruned {
                jobs,
                deliveries,
                payloads,
                pages_freed: 0,
            })
        })
    }

    fn signals(&self) -> broadcast::Receiver<Signal> {
        self.inner.signals.subscribe()
    }

    fn publish(&self, signal: Signal) -> StoreFuture<()> {
        self.run(move |client| Box::pin(async move { Ok(notify(&*client, &signal).await?) }))
    }

    fn lead(&self, role: &str) -> StoreFuture<Option<Leadership>> {
        let inner = Arc::clone(&self.inner);
        let role = format!("pitcrew-leader:{role}");
        Box::pin(async move {
            let failed = |error: tokio_postgres::Error| database_error(&inner.label, Fail::Sql(error));
            // A connection of its own: the lock is the session's, and goes when the connection does
            // (a replica killed or cut off loses it; another takes over).
            let Dedicated {
                client,
                driver: connection,
                ..
            } = inner.tls.dedicated(&inner.config).await.map_err(failed)?;
            let row = client
                .query_one("SELECT pg_try_advisory_lock(hashtextextended($1, 0))", &[&role])
                .await
                .map_err(failed)?;
            if !row.get::<_, bool>(0) {
                return Ok(None);
            }
            let lost = CancellationToken::new();
            let watching = lost.clone();
            let holder = tokio::spawn(async move {
                let _connection = connection;
                loop {
                    tokio::time::sleep(LEADER_CHECK).await;
                    let alive = tokio::time::timeout(LEADER_CHECK * 2, client.simple_query("SELECT 1")).await;
                    if !matches!(alive, Ok(Ok(_))) {
                        tracing::warn!(role, "lost the connection that held a leadership");
                        watching.cancel();
                        return;
                    }
                }
            });
            Ok(Some(Leadership::held(lost, holder)))
        })
    }

    fn shared(&self) -> bool {
        true
    }
}
