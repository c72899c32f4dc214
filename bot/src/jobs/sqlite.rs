//! The SQLite job store: one file `<data_dir>/pitcrew.sqlite3` in WAL mode, a versioned schema
//! migrated at open, and every [`JobStore`] method as one transaction on tokio's blocking threads.
//!
//! One writer connection (SQLite allows one writer at a time anyway) and one reader connection, each
//! behind a mutex: with WAL, reads (/metrics, job listings) never wait for a write in progress, and
//! writes are short. `synchronous=FULL` makes a commit durable when it returns, which is what lets the
//! webhook route answer 202 only after the delivery is on disk. Write transactions start with
//! `BEGIN IMMEDIATE`, so the claim's "read the oldest eligible job, then take it" cannot interleave
//! with another claimer, even one in another process on the same file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use rusqlite::types::Type;
use rusqlite::{Connection, OptionalExtension, Row, Transaction, TransactionBehavior, params};
use serde_json::Value;

use super::record::{Lifecycle, Record as _};
use super::store::{
    Available, Cancellation, Claim, Delivery, DeliveryClaim, DeliveryId, Dispatch, Finish, Fired, Heartbeat, HeldClaim,
    Job, JobEvent, JobFilter, JobId, JobState, JobStore, Leadership, Lease, NewJob, Pending, Pruned, Recorded,
    Recovery, Release, Retention, Signal, StopRequest, StoreError, StoreFuture, age_cutoff, interrupted_error,
    lease_end, stop_columns, stop_request,
};

/// The database's file name inside the data directory.
pub const FILE_NAME: &str = "pitcrew.sqlite3";

/// How long a statement waits for another connection's write lock (another process on the same
/// file, or a checkpoint) before failing with "database is locked".
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The schema, one migration per version; `PRAGMA user_version` is the number applied. Never edit a
/// migration that has shipped: append a new one.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: deliveries, jobs, job events.
    "CREATE TABLE deliveries (
        id           TEXT PRIMARY KEY NOT NULL,
        event        TEXT NOT NULL,
        received_at  INTEGER NOT NULL,
        payload      BLOB NOT NULL,
        processed_at INTEGER
    );
    CREATE INDEX deliveries_processed ON deliveries (processed_at);

    -- AUTOINCREMENT: a job id is never reused, even after the newest job is deleted.
    CREATE TABLE jobs (
        id               INTEGER PRIMARY KEY AUTOINCREMENT,
        kind             TEXT NOT NULL,
        repo             TEXT NOT NULL,
        key              TEXT NOT NULL,
        request          TEXT NOT NULL,
        delivery_id      TEXT REFERENCES deliveries (id),
        state            TEXT NOT NULL
                         CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
        attempts         INTEGER NOT NULL DEFAULT 0,
        max_attempts     INTEGER NOT NULL CHECK (max_attempts >= 1),
        created_at       INTEGER NOT NULL,
        started_at       INTEGER,
        finished_at      INTEGER,
        lease_owner      TEXT,
        lease_expires_at INTEGER,
        cancel_reason    TEXT,
        result           TEXT,
        error            TEXT
    );
    CREATE INDEX jobs_state ON jobs (state, id);
    CREATE INDEX jobs_key ON jobs (key, state);
    CREATE INDEX jobs_repo ON jobs (repo);
    CREATE INDEX jobs_lease ON jobs (lease_expires_at) WHERE state = 'running';

    CREATE TABLE job_events (
        job_id INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
        seq    INTEGER NOT NULL,
        at     INTEGER NOT NULL,
        kind   TEXT NOT NULL,
        data   TEXT NOT NULL,
        PRIMARY KEY (job_id, seq)
    ) WITHOUT ROWID;",
    // 2: schedules (chores): when each last fired, or was first seen.
    "CREATE TABLE schedules (
        name    TEXT PRIMARY KEY NOT NULL,
        last_at INTEGER NOT NULL
    ) WITHOUT ROWID;",
    // 3: retention (`prune`): finished jobs by age, a delivery's jobs. The database also moves to
    // incremental vacuum at open (see `use_incremental_vacuum`), which takes a VACUUM and so cannot
    // be part of this transaction.
    "CREATE INDEX jobs_finished ON jobs (finished_at) WHERE finished_at IS NOT NULL;
    CREATE INDEX jobs_delivery ON jobs (delivery_id) WHERE delivery_id IS NOT NULL;",
    // 4: who asked a running job to stop (`cancel_by`, a GitHub login); `cancel_reason` keeps the
    // words. Before, the words were all there was (`stopped by @login`): those rows get the login
    // their words name, read the way the handler read them then.
    "ALTER TABLE jobs ADD COLUMN cancel_by TEXT;
    UPDATE jobs SET cancel_by = CASE
        WHEN substr(trim(cancel_reason), 1, 12) = 'stopped by @' THEN substr(trim(cancel_reason), 13)
        WHEN substr(trim(cancel_reason), 1, 1) = '@' THEN substr(trim(cancel_reason), 2)
        ELSE trim(cancel_reason)
    END
    WHERE cancel_reason IS NOT NULL;",
    // 5: claims of deliveries (`claim_delivery`): who handles one, until when, and its key.
    "ALTER TABLE deliveries ADD COLUMN claim_key TEXT;
    ALTER TABLE deliveries ADD COLUMN claimed_by TEXT;
    ALTER TABLE deliveries ADD COLUMN claimed_until INTEGER;
    CREATE INDEX deliveries_claim_key ON deliveries (claim_key) WHERE processed_at IS NULL;",
];

/// Rows deleted (or payloads emptied) per transaction while pruning: small enough that a delivery
/// arriving meanwhile waits milliseconds for the writer.
const PRUNE_BATCH: u32 = 500;

/// Free pages given back per transaction by the incremental vacuum.
const VACUUM_BATCH: u32 = 2048;

/// Signals kept for a listener that has not read them yet; one further behind gets a resync.
pub(crate) const SIGNAL_BUFFER: usize = 1024;

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

const JOB_COLUMNS: &str = "id, kind, repo, key, request, delivery_id, state, attempts, max_attempts, created_at, \
     started_at, finished_at, lease_owner, lease_expires_at, cancel_by, result, error";

const DELIVERY_COLUMNS: &str = "id, event, received_at, payload, processed_at";

/// The SQLite [`JobStore`]. Cheap to clone; clones share the connections.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    writer: Mutex<Connection>,
    reader: Mutex<Connection>,
    /// One process owns the file: its signals are its own.
    signals: tokio::sync::broadcast::Sender<Signal>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").field("path", &self.inner.path).finish()
    }
}

/// A failure inside a blocking call, before it is given the database's path.
enum Fail {
    Sql(rusqlite::Error),
    Store(StoreError),
}

impl From<rusqlite::Error> for Fail {
    fn from(error: rusqlite::Error) -> Self {
        Fail::Sql(error)
    }
}

impl From<StoreError> for Fail {
    fn from(error: StoreError) -> Self {
        Fail::Store(error)
    }
}

impl SqliteStore {
    /// Cancels the queued jobs of `key` (of `kind` only, when given) and asks its running one to stop.
    fn cancel_of_kind(
        &self,
        key: &str,
        kind: Option<&str>,
        request: &StopRequest,
        now: i64,
    ) -> StoreFuture<Cancellation> {
        let (key, kind, request) = (key.to_owned(), kind.map(str::to_owned), request.clone());
        let work = self.write(move |connection| {
            let (reason, by) = stop_columns(&request);
            let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let mut cancellation = Cancellation::default();
            let targets: Vec<(i64, String, Option<String>)> = tx
                .prepare_cached(
                    "SELECT id, state, cancel_by FROM jobs
                     WHERE key = ?1 AND state IN ('queued', 'running') AND (?2 IS NULL OR kind = ?2) ORDER BY id",
                )?
                .query_map(params![&key, &kind], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?
                .collect::<rusqlite::Result<_>>()?;
            for (id, state, asked) in targets {
                let id = JobId(id);
                if state == JobState::Queued.as_str() {
                    tx.execute(
                        "UPDATE jobs SET state = 'cancelled', finished_at = ?2, error = ?3 WHERE id = ?1",
                        params![id.0, now, reason],
                    )?;
                    let finished = Lifecycle::Finished {
                        state: JobState::Cancelled,
                        attempt: None,
                        error: Some(reason.clone()),
                    };
                    insert_record(&tx, id, &finished, now)?;
                    cancellation.cancelled.push(id);
                } else {
                    // A second stop keeps the first request: that is what the worker may already act on.
                    if asked.is_none() {
                        tx.execute(
                            "UPDATE jobs SET cancel_reason = ?2, cancel_by = ?3 WHERE id = ?1",
                            params![id.0, reason, by],
                        )?;
                        let asked = Lifecycle::CancelRequested { reason: reason.clone() };
                        insert_record(&tx, id, &asked, now)?;
                    }
                    cancellation.stopping.push(id);
                }
            }
            tx.commit()?;
            Ok(cancellation)
        });
        self.signalling(work, |cancellation| {
            cancellation.stopping.iter().map(|id| Signal::Stop(*id)).collect()
        })
    }

    /// Opens (creating it and the directory when missing) `<data_dir>/pitcrew.sqlite3`. Blocking:
    /// call it at startup, or inside `spawn_blocking`.
    pub fn open(data_dir: &Path) -> Result<SqliteStore, StoreError> {
        let path = data_dir.join(FILE_NAME);
        std::fs::create_dir_all(data_dir).map_err(|error| StoreError::Open {
            path: path.clone(),
            source: Box::new(error),
        })?;
        SqliteStore::open_file(&path)
    }

    /// Opens (creating it when missing) the database at `path` and brings its schema up to date.
    pub fn open_file(path: &Path) -> Result<SqliteStore, StoreError> {
        let open_error = |error: rusqlite::Error| StoreError::Open {
            path: path.to_path_buf(),
            source: Box::new(error),
        };
        restrict_to_owner(path).map_err(|error| StoreError::Open {
            path: path.to_path_buf(),
            source: Box::new(error),
        })?;
        let mut writer = Connection::open(path).map_err(open_error)?;
        // A new database starts in incremental-vacuum mode: set before anything (the switch to WAL
        // included) writes the file, it costs nothing; on an existing one it changes nothing.
        writer
            .pragma_update(None, "auto_vacuum", "INCREMENTAL")
            .map_err(open_error)?;
        configure(&writer, path).map_err(open_error)?;
        migrate(&mut writer, path)?;
        use_incremental_vacuum(&writer, path).map_err(open_error)?;
        let reader = Connection::open(path).map_err(open_error)?;
        configure(&reader, path).map_err(open_error)?;
        reader.pragma_update(None, "query_only", true).map_err(open_error)?;
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                writer: Mutex::new(writer),
                reader: Mutex::new(reader),
                signals: tokio::sync::broadcast::channel(SIGNAL_BUFFER).0,
            }),
        })
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// `work`'s future, then the signals its result calls for (sent once it has committed).
    fn signalling<T: Send + 'static>(
        &self,
        work: StoreFuture<T>,
        signals_of: impl FnOnce(&T) -> Vec<Signal> + Send + 'static,
    ) -> StoreFuture<T> {
        let sender = self.inner.signals.clone();
        Box::pin(async move {
            let value = work.await?;
            for signal in signals_of(&value) {
                // Nobody listening is fine.
                let _ = sender.send(signal);
            }
            Ok(value)
        })
    }

    fn write<T, F>(&self, work: F) -> StoreFuture<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, Fail> + Send + 'static,
    {
        self.run(true, work)
    }

    fn read<T, F>(&self, work: F) -> StoreFuture<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, Fail> + Send + 'static,
    {
        self.run(false, work)
    }

    fn run<T, F>(&self, write: bool, work: F) -> StoreFuture<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, Fail> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move {
            let task_inner = Arc::clone(&inner);
            let outcome = tokio::task::spawn_blocking(move || {
                let connection = if write { &task_inner.writer } else { &task_inner.reader };
                // A panic while the lock was held leaves the connection usable: an open transaction
                // rolls back when its guard drops during the unwind.
                let mut connection = connection.lock().unwrap_or_else(PoisonError::into_inner);
                work(&mut connection)
            })
            .await
            .map_err(|error| StoreError::Task(error.to_string()))?;
            outcome.map_err(|fail| match fail {
                Fail::Sql(error) => StoreError::Database {
                    path: inner.path.clone(),
                    source: Box::new(error),
                },
                Fail::Store(error) => error,
            })
        })
    }
}

/// The store holds every delivery's payload: the database is created readable and writable by
/// pitcrew's user alone, before SQLite opens it (SQLite gives its WAL and shared-memory files the
/// database file's mode when it creates them), and an older database and its side files are
/// narrowed to that.
fn restrict_to_owner(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)?;
    for suffix in ["", "-wal", "-shm"] {
        let mut file = path.as_os_str().to_owned();
        file.push(suffix);
        match std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            other => other?,
        }
    }
    Ok(())
}

fn configure(connection: &Connection, path: &Path) -> rusqlite::Result<()> {
    connection.busy_timeout(BUSY_TIMEOUT)?;
    // The first statement that reads the file: a file that is not a database fails here.
    let mode: String = connection.pragma_update_and_check(None, "journal_mode", "wal", |row| row.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        // Some file systems (network mounts) cannot hold WAL's shared memory; SQLite then keeps its
        // rollback journal, slower but just as durable.
        tracing::warn!(path = %path.display(), mode, "the job database could not switch to WAL mode");
    }
    connection.pragma_update(None, "synchronous", "FULL")?;
    connection.pragma_update(None, "foreign_keys", true)?;
    Ok(())
}

fn migrate(connection: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let open_error = |error: rusqlite::Error| StoreError::Open {
        path: path.to_path_buf(),
        source: Box::new(error),
    };
    // IMMEDIATE: two processes starting at once on a new file must not both apply migration 1.
    let tx = connection
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(open_error)?;
    let found: i64 = tx
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(open_error)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            path: path.to_path_buf(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    for (index, migration) in MIGRATIONS.iter().enumerate().skip(usize::try_from(found).unwrap_or(0)) {
        tx.execute_batch(migration).map_err(open_error)?;
        let version = i64::try_from(index + 1).unwrap_or(i64::MAX);
        tx.pragma_update(None, "user_version", version).map_err(open_error)?;
        tracing::info!(path = %path.display(), version, "migrated the job database");
    }
    tx.commit().map_err(open_error)
}

/// SQLite's `auto_vacuum` value for incremental.
const AUTO_VACUUM_INCREMENTAL: i64 = 2;

/// Moves a database made before schema 3 (no auto-vacuum: deleted rows left free pages the file
/// never gave back) to incremental vacuum: the mode of a database with tables changes only with a
/// full VACUUM, done once here. Checked at every open, so a crash between the two is mended.
fn use_incremental_vacuum(connection: &Connection, path: &Path) -> rusqlite::Result<()> {
    let mode: i64 = connection.pragma_query_value(None, "auto_vacuum", |row| row.get(0))?;
    if mode == AUTO_VACUUM_INCREMENTAL {
        return Ok(());
    }
    tracing::info!(path = %path.display(), "moving the job database to incremental vacuum (once; may take a while)");
    connection.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
    connection.execute_batch("VACUUM")
}

fn conversion_error(index: usize, error: impl std::error::Error + Send + Sync + 'static) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(index, Type::Text, Box::new(error))
}

#[derive(Debug, thiserror::Error)]
#[error("unknown job state {0:?}")]
struct BadState(String);

fn json_column(row: &Row<'_>, index: usize) -> rusqlite::Result<Value> {
    let text: String = row.get(index)?;
    serde_json::from_str(&text).map_err(|error| conversion_error(index, error))
}

fn optional_json_column(row: &Row<'_>, index: usize) -> rusqlite::Result<Option<Value>> {
    let text: Option<String> = row.get(index)?;
    text.map(|text| serde_json::from_str(&text).map_err(|error| conversion_error(index, error)))
        .transpose()
}

fn job_from_row(row: &Row<'_>) -> rusqlite::Result<Job> {
    let state: String = row.get(6)?;
    Ok(Job {
        id: JobId(row.get(0)?),
        kind: row.get(1)?,
        repo: row.get(2)?,
        key: row.get(3)?,
        request: json_column(row, 4)?,
        delivery: row.get::<_, Option<String>>(5)?.map(DeliveryId),
        state: JobState::parse(&state).ok_or_else(|| conversion_error(6, BadState(state.clone())))?,
        attempts: row.get(7)?,
        max_attempts: row.get(8)?,
        created_at: row.get(9)?,
        started_at: row.get(10)?,
        finished_at: row.get(11)?,
        lease_owner: row.get(12)?,
        lease_expires_at: row.get(13)?,
        cancel_requested: stop_request(row.get(14)?),
        result: optional_json_column(row, 15)?,
        error: row.get(16)?,
    })
}

fn delivery_from_row(row: &Row<'_>) -> rusqlite::Result<Delivery> {
    Ok(Delivery {
        id: DeliveryId(row.get(0)?),
        event: row.get(1)?,
        received_at: row.get(2)?,
        payload: row.get(3)?,
        processed_at: row.get(4)?,
    })
}

fn load_job(tx: &Connection, id: JobId) -> rusqlite::Result<Option<Job>> {
    tx.query_row(
        &format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?1"),
        [id.0],
        job_from_row,
    )
    .optional()
}

fn insert_job(tx: &Transaction<'_>, job: &NewJob, delivery: Option<&DeliveryId>, now: i64) -> rusqlite::Result<JobId> {
    let delivery = job.delivery.as_ref().or(delivery);
    tx.execute(
        "INSERT INTO jobs (kind, repo, key, request, delivery_id, state, max_attempts, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, 'queued', ?6, ?7)",
        params![
            job.kind,
            job.repo,
            job.key,
            job.request.to_string(),
            delivery.map(|d| d.0.as_str()),
            job.max_attempts.max(1),
            now
        ],
    )?;
    let id = JobId(tx.last_insert_rowid());
    let queued = Lifecycle::Queued {
        kind: job.kind.clone(),
        key: job.key.clone(),
        delivery: delivery.cloned(),
    };
    insert_record(tx, id, &queued, now)?;
    Ok(id)
}

fn insert_record(tx: &Connection, id: JobId, record: &Lifecycle, now: i64) -> rusqlite::Result<u64> {
    let (kind, data) = record
        .to_row()
        .map_err(|error| rusqlite::Error::ToSqlConversionFailure(Box::new(error)))?;
    insert_event(tx, id, &kind, &data, now)
}

fn insert_event(tx: &Connection, id: JobId, kind: &str, data: &Value, now: i64) -> rusqlite::Result<u64> {
    tx.query_row(
        "INSERT INTO job_events (job_id, seq, at, kind, data)
         VALUES (?1, COALESCE((SELECT MAX(seq) FROM job_events WHERE job_id = ?1), 0) + 1, ?2, ?3, ?4)
         RETURNING seq",
        params![id.0, now, kind, data.to_string()],
        |row| row.get(0),
    )
}

impl JobStore for SqliteStore {
    fn record_delivery(
        &self,
        id: &DeliveryId,
        event: &str,
        payload: Bytes,
        claim: Option<DeliveryClaim>,
        now: i64,
    ) -> StoreFuture<Recorded> {
        let (id, event) = (id.clone(), event.to_owned());
        let claimed = claim.is_some();
        let work = self.write(move |connection| {
            let (key, worker, until) = match claim {
                Some(claim) => (
                    Some(claim.key),
                    Some(claim.worker),
                    Some(lease_end(now, claim.lease_for)),
                ),
                None => (None, None, None),
            };
            let inserted = connection
                .prepare_cached(
                    "INSERT INTO deliveries (id, event, received_at, payload, claim_key, claimed_by, claimed_until)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                     ON CONFLICT (id) DO NOTHING",
                )?
                .execute(params![id.0, event, now, &payload[..], key, worker, until])?;
            Ok(if inserted == 1 {
                Recorded::New
            } else {
                Recorded::Duplicate
            })
        });
        self.signalling(work, move |recorded| match recorded {
            Recorded::New if !claimed => vec![Signal::Deliveries],
            Recorded::New | Recorded::Duplicate => Vec::new(),
        })
    }

    fn delivery(&self, id: &DeliveryId) -> StoreFuture<Option<Delivery>> {
        let id = id.clone();
        self.read(move |connection| {
            Ok(connection
                .query_row(
                    &format!("SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE id = ?1"),
                    [&id.0],
                    delivery_from_row,
                )
                .optional()?)
        })
    }

    fn unprocessed_deliveries(&self, limit: u32) -> StoreFuture<Vec<Pending>> {
        self.read(move |connection| {
            let mut statement = connection.prepare_cached(
                "SELECT id, event, claim_key, claimed_by, claimed_until FROM deliveries
                 WHERE processed_at IS NULL ORDER BY rowid LIMIT ?1",
            )?;
            let rows = statement.query_map([limit], |row| {
                let claim = HeldClaim::from_columns(row.get(2)?, row.get(3)?, row.get(4)?);
                Ok(Pending {
                    id: DeliveryId(row.get(0)?),
                    event: row.get(1)?,
                    claim,
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    fn available_deliveries(&self, worker: &str, now: i64, limit: u32) -> StoreFuture<Vec<Available>> {
        let worker = worker.to_owned();
        self.read(move |connection| {
            let mut statement = connection.prepare_cached(
                "SELECT d.id, d.event, d.claim_key, d.claimed_by, d.claimed_until,
                        EXISTS (SELECT 1 FROM deliveries AS o
                                WHERE o.claim_key = d.claim_key AND o.processed_at IS NULL AND o.rowid < d.rowid
                                  AND o.claimed_by <> ?1 AND o.claimed_until > ?2)
                 FROM deliveries AS d
                 WHERE d.processed_at IS NULL
                   AND (d.claimed_by IS NULL OR d.claimed_by = ?1 OR d.claimed_until <= ?2)
                 ORDER BY d.rowid LIMIT ?3",
            )?;
            let rows = statement.query_map(params![worker, now, limit], |row| {
                let claim = HeldClaim::from_columns(row.get(2)?, row.get(3)?, row.get(4)?);
                Ok(Available {
                    id: DeliveryId(row.get(0)?),
                    event: row.get(1)?,
                    claim,
                    behind: row.get(5)?,
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    fn claim_delivery(&self, id: &DeliveryId, claim: &DeliveryClaim, now: i64) -> StoreFuture<bool> {
        let id = id.clone();
        let DeliveryClaim { key, worker, lease_for } = claim.clone();
        self.write(move |connection| {
            let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            /// A delivery's place, whether it was processed, and its claim.
            struct Held {
                rowid: i64,
                processed: Option<i64>,
                by: Option<String>,
                until: Option<i64>,
            }
            let found = tx
                .query_row(
                    "SELECT rowid, processed_at, claimed_by, claimed_until FROM deliveries WHERE id = ?1",
                    [&id.0],
                    |row| {
                        Ok(Held {
                            rowid: row.get(0)?,
                            processed: row.get(1)?,
                            by: row.get(2)?,
                            until: row.get(3)?,
                        })
                    },
                )
                .optional()?;
            let Some(Held {
                rowid,
                processed,
                by,
                until,
            }) = found
            else {
                return Err(StoreError::UnknownDelivery(id).into());
            };
            let held_elsewhere = by.is_some_and(|by| by != worker) && until.is_some_and(|until| until > now);
            if processed.is_some() || held_elsewhere {
                return Ok(false);
            }
            let older_held: Option<i64> = tx
                .query_row(
                    "SELECT 1 FROM deliveries
                     WHERE claim_key = ?1 AND processed_at IS NULL AND rowid < ?2
                       AND claimed_by <> ?3 AND claimed_until > ?4
                     LIMIT 1",
                    params![key, rowid, worker, now],
                    |row| row.get(0),
                )
                .optional()?;
            if older_held.is_some() {
                return Ok(false);
            }
            tx.execute(
                "UPDATE deliveries SET claim_key = ?2, claimed_by = ?3, claimed_until = ?4 WHERE id = ?1",
                params![id.0, key, worker, lease_end(now, lease_for)],
            )?;
            tx.commit()?;
            Ok(true)
        })
    }

    fn release_deliveries(&self, worker: &str) -> StoreFuture<u64> {
        let worker = worker.to_owned();
        let work = self.write(move |connection| {
            let released = connection.execute(
                "UPDATE deliveries SET claimed_by = NULL, claimed_until = NULL
                 WHERE claimed_by = ?1 AND processed_at IS NULL",
                [&worker],
            )?;
            Ok(u64::try_from(released).unwrap_or(u64::MAX))
        });
        self.signalling(work, |released| {
            if *released > 0 {
                vec![Signal::Deliveries]
            } else {
                Vec::new()
            }
        })
    }

    fn process_delivery(&self, id: &DeliveryId, jobs: Vec<NewJob>, now: i64) -> StoreFuture<Dispatch> {
        let id = id.clone();
        let work = self.write(move |connection| {
            let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let processed: Option<Option<i64>> = tx
                .query_row("SELECT processed_at FROM deliveries WHERE id = ?1", [&id.0], |row| {
                    row.get(0)
                })
                .optional()?;
            match processed {
                None => return Err(StoreError::UnknownDelivery(id).into()),
                Some(Some(_)) => return Ok(Dispatch::AlreadyProcessed),
                Some(None) => {}
            }
            let ids = jobs
                .iter()
                .map(|job| insert_job(&tx, job, Some(&id), now))
                .collect::<rusqlite::Result<Vec<_>>>()?;
            tx.execute(
                "UPDATE deliveries SET processed_at = ?2 WHERE id = ?1",
                params![id.0, now],
            )?;
            tx.commit()?;
            Ok(Dispatch::Created(ids))
        });
        self.signalling(work, |dispatch| match dispatch {
            Dispatch::Created(ids) if !ids.is_empty() => vec![Signal::Jobs],
            _ => Vec::new(),
        })
    }

    fn count_deliveries(&self) -> StoreFuture<u64> {
        self.read(|connection| Ok(connection.query_row("SELECT COUNT(*) FROM deliveries", [], |row| row.get(0))?))
    }

    fn enqueue(&self, job: NewJob, now: i64) -> StoreFuture<JobId> {
        let work = self.write(move |connection| {
            let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let id = insert_job(&tx, &job, None, now)?;
            tx.commit()?;
            Ok(id)
        });
        self.signalling(work, |_| vec![Signal::Jobs])
    }

    fn claim(&self, worker: &str, lease_for: Duration, now: i64) -> StoreFuture<Option<Claim>> {
        let worker = worker.to_owned();
        self.write(move |connection| {
            let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            // The oldest queued job of a key is always older than its other queued jobs, so taking
            // the oldest eligible job overall keeps each key's jobs in arrival order.
            let id: Option<i64> = tx
                .query_row(
                    "SELECT id FROM jobs AS j
                     WHERE j.state = 'queued'
                       AND NOT EXISTS (SELECT 1 FROM jobs AS r WHERE r.key = j.key AND r.state = 'running')
                     ORDER BY j.id LIMIT 1",
                    [],
                    |row| row.get(0),
                )
                .optional()?;
            let Some(id) = id.map(JobId) else {
                return Ok(None);
            };
            tx.execute(
                "UPDATE jobs SET state = 'running', attempts = attempts + 1, started_at = ?2, finished_at = NULL,
                        lease_owner = ?3, lease_expires_at = ?4
                 WHERE id = ?1",
                params![id.0, now, worker, lease_end(now, lease_for)],
            )?;
            let job = load_job(&tx, id)?.ok_or(StoreError::UnknownJob(id))?;
            let claimed = Lifecycle::Claimed {
                worker: worker.clone(),
                attempt: job.attempts,
            };
            insert_record(&tx, id, &claimed, now)?;
            tx.commit()?;
            let lease = Lease {
                job: id,
                worker,
                attempt: job.attempts,
            };
            Ok(Some(Claim { job, lease }))
        })
    }

    fn heartbeat(&self, lease: &Lease, lease_for: Duration, now: i64) -> StoreFuture<Heartbeat> {
        let lease = lease.clone();
        self.write(move |connection| {
            let cancel: Option<Option<String>> = connection
                .query_row(
                    "UPDATE jobs SET lease_expires_at = ?4
                     WHERE id = ?1 AND state = 'running' AND lease_owner = ?2 AND attempts = ?3
                     RETURNING cancel_by",
                    params![lease.job.0, lease.worker, lease.attempt, lease_end(now, lease_for)],
                    |row| row.get(0),
                )
                .optional()?;
            Ok(match cancel.map(stop_request) {
                None => Heartbeat::LeaseLost,
                Some(None) => Heartbeat::Ok,
                Some(Some(request)) => Heartbeat::CancelRequested(request),
            })
        })
    }

    fn finish(&self, lease: &Lease, outcome: Finish, now: i64) -> StoreFuture<Release> {
        let lease = lease.clone();
        let work = self.write(move |connection| {
            let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let state = outcome.state();
            let (result, error) = match &outcome {
                Finish::Succeeded(value) => (Some(value.to_string()), None),
                Finish::Failed(reason) | Finish::Cancelled(reason) => (None, Some(reason.as_str())),
            };
            let changed = tx.execute(
                "UPDATE jobs SET state = ?4, finished_at = ?5, result = ?6, error = ?7,
                        lease_owner = NULL, lease_expires_at = NULL
                 WHERE id = ?1 AND state = 'running' AND lease_owner = ?2 AND attempts = ?3",
                params![
                    lease.job.0,
                    lease.worker,
                    lease.attempt,
                    state.as_str(),
                    now,
                    result,
                    error
                ],
            )?;
            if changed == 0 {
                return Ok(Release::LeaseLost);
            }
            let finished = Lifecycle::Finished {
                state,
                attempt: Some(lease.attempt),
                error: error.map(str::to_owned),
            };
            insert_record(&tx, lease.job, &finished, now)?;
            tx.commit()?;
            Ok(Release::Done)
        });
        self.signalling(work, released)
    }

    fn requeue(&self, lease: &Lease, now: i64) -> StoreFuture<Release> {
        let lease = lease.clone();
        let work = self.write(move |connection| {
            let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let cancel: Option<Option<String>> = tx
                .query_row(
                    "SELECT cancel_by FROM jobs
                     WHERE id = ?1 AND state = 'running' AND lease_owner = ?2 AND attempts = ?3",
                    params![lease.job.0, lease.worker, lease.attempt],
                    |row| row.get(0),
                )
                .optional()?;
            match cancel.map(stop_request) {
                None => return Ok(Release::LeaseLost),
                Some(Some(request)) => {
                    let reason = request.to_string();
                    tx.execute(
                        "UPDATE jobs SET state = 'cancelled', finished_at = ?2, error = ?3,
                                lease_owner = NULL, lease_expires_at = NULL
                         WHERE id = ?1",
                        params![lease.job.0, now, reason],
                    )?;
                    let finished = Lifecycle::Finished {
                        state: JobState::Cancelled,
                        attempt: Some(lease.attempt),
                        error: Some(reason),
                    };
                    insert_record(&tx, lease.job, &finished, now)?;
                    tx.commit()?;
                    return Ok(Release::Cancelled);
                }
                Some(None) => {
                    tx.execute(
                        "UPDATE jobs SET state = 'queued', attempts = attempts - 1, started_at = NULL,
                                lease_owner = NULL, lease_expires_at = NULL
                         WHERE id = ?1",
                        [lease.job.0],
                    )?;
                    let requeued = Lifecycle::Requeued {
                        worker: lease.worker.clone(),
                        attempt: lease.attempt,
                    };
                    insert_record(&tx, lease.job, &requeued, now)?;
                }
            }
            tx.commit()?;
            Ok(Release::Done)
        });
        self.signalling(work, released)
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
        self.write(move |connection| {
            let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let exists = tx
                .query_row("SELECT 1 FROM jobs WHERE id = ?1", [id.0], |_| Ok(()))
                .optional()?;
            if exists.is_none() {
                return Err(StoreError::UnknownJob(id).into());
            }
            let seq = insert_event(&tx, id, &kind, &data, now)?;
            tx.commit()?;
            Ok(seq)
        })
    }

    fn events(&self, id: JobId) -> StoreFuture<Vec<JobEvent>> {
        self.read(move |connection| {
            let mut statement = connection
                .prepare_cached("SELECT seq, at, kind, data FROM job_events WHERE job_id = ?1 ORDER BY seq")?;
            let rows = statement.query_map([id.0], |row| {
                Ok(JobEvent {
                    job_id: id,
                    seq: row.get(0)?,
                    at: row.get(1)?,
                    kind: row.get(2)?,
                    data: json_column(row, 3)?,
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    fn job(&self, id: JobId) -> StoreFuture<Option<Job>> {
        self.read(move |connection| Ok(load_job(connection, id)?))
    }

    fn jobs(&self, filter: &JobFilter) -> StoreFuture<Vec<Job>> {
        let filter = filter.clone();
        self.read(move |connection| {
            let mut conditions = Vec::new();
            let mut values: Vec<String> = Vec::new();
            let mut condition = |column: &str, value: String| {
                values.push(value);
                conditions.push(format!("{column} = ?{}", values.len()));
            };
            if let Some(state) = filter.state {
                condition("state", state.as_str().to_owned());
            }
            if let Some(key) = filter.key {
                condition("key", key);
            }
            if let Some(repo) = filter.repo {
                condition("repo", repo);
            }
            let mut sql = format!("SELECT {JOB_COLUMNS} FROM jobs");
            if !conditions.is_empty() {
                sql.push_str(" WHERE ");
                sql.push_str(&conditions.join(" AND "));
            }
            sql.push_str(&format!(" ORDER BY id DESC LIMIT {}", filter.limit));
            let mut statement = connection.prepare(&sql)?;
            let rows = statement.query_map(rusqlite::params_from_iter(values), job_from_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    fn schedule_mark(&self, name: &str) -> StoreFuture<Option<i64>> {
        let name = name.to_owned();
        self.read(move |connection| {
            Ok(connection
                .query_row("SELECT last_at FROM schedules WHERE name = ?1", [&name], |row| {
                    row.get(0)
                })
                .optional()?)
        })
    }

    fn fire_schedule(&self, name: &str, last: Option<i64>, at: i64, job: Option<NewJob>) -> StoreFuture<Fired> {
        let name = name.to_owned();
        let work = self.write(move |connection| {
            let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let moved = match last {
                None => tx.execute(
                    "INSERT INTO schedules (name, last_at) VALUES (?1, ?2) ON CONFLICT (name) DO NOTHING",
                    params![name, at],
                )?,
                Some(last) => tx.execute(
                    "UPDATE schedules SET last_at = ?2 WHERE name = ?1 AND last_at = ?3",
                    params![name, at, last],
                )?,
            };
            if moved == 0 {
                return Ok(Fired::Raced);
            }
            let id = job.map(|job| insert_job(&tx, &job, None, at)).transpose()?;
            tx.commit()?;
            Ok(Fired::Done(id))
        });
        self.signalling(work, |fired| match fired {
            Fired::Done(Some(_)) => vec![Signal::Jobs],
            _ => Vec::new(),
        })
    }

    fn prune(&self, retention: Retention, now: i64) -> StoreFuture<Pruned> {
        let store = self.clone();
        Box::pin(async move {
            let payloads = store
                .prune_all(
                    "UPDATE deliveries SET payload = X'' WHERE rowid IN (
                         SELECT d.rowid FROM deliveries AS d
                         WHERE d.processed_at < ?1 AND length(d.payload) > 0
                           AND NOT EXISTS (SELECT 1 FROM jobs AS j
                                           WHERE j.delivery_id = d.id AND j.state IN ('queued', 'running'))
                         LIMIT ?2)",
                    age_cutoff(now, retention.payloads),
                )
                .await?;
            let rows = age_cutoff(now, retention.rows);
            // Events go with their job (ON DELETE CASCADE).
            let jobs = store
                .prune_all(
                    "DELETE FROM jobs WHERE id IN (
                         SELECT id FROM jobs
                         WHERE finished_at < ?1 AND state IN ('succeeded', 'failed', 'cancelled')
                         LIMIT ?2)",
                    rows,
                )
                .await?;
            let deliveries = store
                .prune_all(
                    "DELETE FROM deliveries WHERE rowid IN (
                         SELECT d.rowid FROM deliveries AS d
                         WHERE d.processed_at < ?1
                           AND NOT EXISTS (SELECT 1 FROM jobs AS j WHERE j.delivery_id = d.id)
                         LIMIT ?2)",
                    rows,
                )
                .await?;
            let pages_freed = store.vacuum().await?;
            Ok(Pruned {
                jobs,
                deliveries,
                payloads,
                pages_freed,
            })
        })
    }

    fn count_by_state(&self) -> StoreFuture<BTreeMap<JobState, u64>> {
        self.read(|connection| {
            let mut counts: BTreeMap<JobState, u64> = JobState::ALL.into_iter().map(|state| (state, 0)).collect();
            let mut statement = connection.prepare_cached("SELECT state, COUNT(*) FROM jobs GROUP BY state")?;
            let rows = statement.query_map([], |row| Ok((row.get::<_, String>(0)?, row.get::<_, u64>(1)?)))?;
            for row in rows {
                let (state, count) = row?;
                let state = JobState::parse(&state).ok_or_else(|| conversion_error(0, BadState(state.clone())))?;
                counts.insert(state, count);
            }
            Ok(counts)
        })
    }

    fn signals(&self) -> tokio::sync::broadcast::Receiver<Signal> {
        self.inner.signals.subscribe()
    }

    fn publish(&self, signal: Signal) -> StoreFuture<()> {
        let _ = self.inner.signals.send(signal);
        Box::pin(async { Ok(()) })
    }

    fn lead(&self, _role: &str) -> StoreFuture<Option<Leadership>> {
        // The server holds the data directory's lock: no other process uses this file.
        Box::pin(async { Ok(Some(Leadership::sole())) })
    }

    fn shared(&self) -> bool {
        false
    }
}

/// What a released job tells the pools: its key may have a next job to run.
pub(crate) fn released(release: &Release) -> Vec<Signal> {
    match release {
        Release::Done | Release::Cancelled => vec![Signal::Jobs],
        Release::LeaseLost => Vec::new(),
    }
}

impl SqliteStore {
    /// One batch of `statement` (taking the cutoff as `?1` and the batch size as `?2`); how many
    /// rows it changed.
    fn prune_batch(&self, statement: &'static str, cutoff: i64) -> StoreFuture<u64> {
        self.write(move |connection| {
            let changed = connection.execute(statement, params![cutoff, PRUNE_BATCH])?;
            Ok(changed as u64)
        })
    }

    /// Runs `statement` in batches until a batch changes fewer than a full batch of rows.
    async fn prune_all(&self, statement: &'static str, cutoff: i64) -> Result<u64, StoreError> {
        let mut total = 0;
        loop {
            let changed = self.prune_batch(statement, cutoff).await?;
            total += changed;
            if changed < u64::from(PRUNE_BATCH) {
                return Ok(total);
            }
        }
    }

    /// Gives free pages back to the file system, a batch per transaction; how many.
    async fn vacuum(&self) -> Result<u64, StoreError> {
        let mut freed = 0;
        loop {
            let step = self
                .write(|connection| {
                    let before: u64 = connection.pragma_query_value(None, "freelist_count", |row| row.get(0))?;
                    if before == 0 {
                        return Ok(0);
                    }
                    connection.execute_batch(&format!("PRAGMA incremental_vacuum({VACUUM_BATCH})"))?;
                    let after: u64 = connection.pragma_query_value(None, "freelist_count", |row| row.get(0))?;
                    Ok(before.saturating_sub(after))
                })
                .await?;
            freed += step;
            if step == 0 {
                return Ok(freed);
            }
        }
    }

    /// Running jobs whose lease ends before `cutoff`: requeued, failed or cancelled (see
    /// [`JobStore::recover`]); `now` stamps what is written.
    fn recover_leases_before(&self, cutoff: i64, now: i64) -> StoreFuture<Recovery> {
        let work = self.write(move |connection| {
            let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let expired: Vec<Job> = tx
                .prepare_cached(&format!(
                    "SELECT {JOB_COLUMNS} FROM jobs
                     WHERE state = 'running' AND lease_expires_at <= ?1 ORDER BY id"
                ))?
                .query_map([cutoff], job_from_row)?
                .collect::<rusqlite::Result<_>>()?;
            if cutoff == i64::MAX {
                // No worker of this store is alive: the deliveries it held are anyone's now.
                tx.execute(
                    "UPDATE deliveries SET claimed_by = NULL, claimed_until = NULL
                     WHERE processed_at IS NULL AND claimed_by IS NOT NULL",
                    [],
                )?;
            }
            let mut recovery = Recovery::default();
            for job in expired {
                let interrupted = Lifecycle::Interrupted {
                    worker: job.lease_owner.clone(),
                    attempt: job.attempts,
                };
                insert_record(&tx, job.id, &interrupted, now)?;
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
                    "UPDATE jobs SET state = ?2, finished_at = ?3, error = ?4, lease_owner = NULL,
                            lease_expires_at = NULL
                     WHERE id = ?1",
                    params![job.id.0, state.as_str(), finished_at, error],
                )?;
                if state.is_final() {
                    let finished = Lifecycle::Finished {
                        state,
                        attempt: Some(job.attempts),
                        error,
                    };
                    insert_record(&tx, job.id, &finished, now)?;
                }
            }
            tx.commit()?;
            Ok(recovery)
        });
        self.signalling(work, |recovery| {
            if recovery.requeued.is_empty() {
                Vec::new()
            } else {
                vec![Signal::Jobs]
            }
        })
    }
}
