//! Typed entries of a job's history: the [`Record`] contract every writer's enum follows, and
//! [`Lifecycle`], the entries the store itself writes.
//!
//! The store keeps an entry as two columns, its `kind` and its `data` (JSON). A record type is a
//! serde enum tagged by kind with its fields as data (`#[serde(tag = "kind", content = "data")]`), so
//! the variant names are the stored kinds and the fields the stored data, with no second table of
//! names to keep in step. The handlers' records live with the handlers; a history holds both
//! writers' entries, so reading one writer's records skips the other's.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::store::{DeliveryId, JobEvent, JobState};

/// An enum of history entries, serialised `#[serde(tag = "kind", content = "data")]`.
pub trait Record: Serialize + DeserializeOwned {
    /// The entry's `kind` and `data` columns.
    fn to_row(&self) -> Result<(String, Value), serde_json::Error> {
        let Row { kind, data } = serde_json::from_value(serde_json::to_value(self)?)?;
        Ok((kind, data))
    }

    /// The entry the columns hold; an error when `kind` is none of this type's, or `data` is not the
    /// shape its variant reads.
    fn from_row(kind: &str, data: &Value) -> Result<Self, serde_json::Error> {
        let mut row = serde_json::Map::new();
        row.insert("kind".to_owned(), Value::String(kind.to_owned()));
        row.insert("data".to_owned(), data.clone());
        Self::deserialize(Value::Object(row))
    }
}

/// A record as its two columns.
#[derive(Deserialize)]
struct Row {
    kind: String,
    /// A unit variant has none; the store keeps `null`.
    #[serde(default)]
    data: Value,
}

impl JobEvent {
    /// This entry as one of `R`'s records; `None` when it is another writer's (or a shape `R` does
    /// not read).
    pub fn record<R: Record>(&self) -> Option<R> {
        R::from_row(&self.kind, &self.data).ok()
    }
}

/// What the store records of a job's life. The shapes are the ones every pitcrew has written, so
/// a history from before an upgrade reads the same.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "data", rename_all = "snake_case")]
pub enum Lifecycle {
    /// Created (by a delivery, a schedule, or another job).
    Queued {
        /// The job's kind (`fix`, `review`…).
        kind: String,
        key: String,
        delivery: Option<DeliveryId>,
    },
    /// An attempt started on `worker`.
    Claimed { worker: String, attempt: u32 },
    /// A stop was asked while the job ran; the words are the job's error if it ends cancelled.
    CancelRequested { reason: String },
    /// Back in the queue after a graceful stop, the attempt not counted.
    Requeued { worker: String, attempt: u32 },
    /// The attempt's lease ran out (its worker crashed or hung), as recovery found it.
    Interrupted { worker: Option<String>, attempt: u32 },
    /// The job's final state. A queued job cancelled before it ran has no attempt.
    Finished {
        state: JobState,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attempt: Option<u32>,
        error: Option<String>,
    },
}

impl Record for Lifecycle {}
