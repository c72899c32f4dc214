//! Durable jobs: the store of deliveries, jobs and job events (SQLite for one process, PostgreSQL
//! for replicas sharing one database), and the worker pool.
//!
//! The webhook route calls [`JobStore::record_delivery`] and answers; a dispatcher turns each
//! unprocessed delivery into jobs with [`JobStore::process_delivery`]; the [`WorkerPool`] claims
//! jobs, runs them with a handler under a heartbeated lease, and writes how they ended. After a
//! crash, expired leases are recovered: the job runs again, or fails visibly once out of attempts.

mod pg_tls;
mod pool;
mod postgres;
mod record;
mod sqlite;
mod store;
#[cfg(test)]
mod tests;
mod watch;

pub use pool::{
    EndOutcome, Fenced, JobControl, JobEnd, JobHandler, PoolConfig, ShutdownReport, StopCause, WorkerPool,
    default_worker_name, now_ms, record_subject,
};
pub use postgres::{PG_SCHEMA_VERSION, PgStore};
pub use record::{Lifecycle, Record};
pub use sqlite::{FILE_NAME, SCHEMA_VERSION, SqliteStore};
pub use store::{
    Available, Cancellation, Claim, Delivery, DeliveryClaim, DeliveryId, Dispatch, Finish, Fired, Heartbeat, HeldClaim,
    Job, JobEvent, JobFilter, JobId, JobState, JobStore, Leadership, Lease, NewJob, Pending, Pruned, Recorded,
    Recovery, Release, Retention, Signal, StopRequest, StoreError, StoreFuture,
};
pub use watch::{CiWatch, Watching};
