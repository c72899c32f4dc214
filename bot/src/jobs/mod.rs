//! Durable jobs: the store of deliveries, jobs and job events (SQLite now), and the worker pool.
//!
//! The webhook route calls [`JobStore::record_delivery`] and answers; a dispatcher turns each
//! unprocessed delivery into jobs with [`JobStore::process_delivery`]; the [`WorkerPool`] claims
//! jobs, runs them with a handler under a heartbeated lease, and writes how they ended. After a
//! crash, expired leases are recovered: the job runs again, or fails visibly once out of attempts.

mod pool;
mod record;
mod sqlite;
mod store;
#[cfg(test)]
mod tests;
mod watch;

pub use pool::{
    EndOutcome, JobControl, JobEnd, JobHandler, PoolConfig, ShutdownReport, StopCause, WorkerPool, now_ms,
    record_subject,
};
pub use record::{Lifecycle, Record};
pub use sqlite::{FILE_NAME, SCHEMA_VERSION, SqliteStore};
pub use store::{
    Cancellation, Claim, Delivery, DeliveryId, Dispatch, Finish, Heartbeat, Job, JobEvent, JobFilter, JobId, JobState,
    JobStore, Lease, NewJob, Pruned, Recorded, Recovery, Release, Retention, StopRequest, StoreError, StoreFuture,
};
pub use watch::{CiWatch, Watching};
