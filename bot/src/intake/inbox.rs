//! What the webhook route hands the dispatcher with each delivery it stores: the payload read once
//! into its event and serialisation key, and the claim the delivery is stored with — so the replica
//! that received a delivery handles it without reading it back from the store, and the other
//! replicas leave it alone instead of racing for it (they take it over only once its claim ran out:
//! the receiver died, or is too busy to start it).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Notify;
use tracing::Span;

use crate::jobs::{Delivery, DeliveryClaim, DeliveryId};
use crate::logging;
use crate::triggers::{Event, EventError};

/// Parsed deliveries waiting for the dispatcher, at most: under a backlog deeper than this the
/// dispatcher reads the others' payloads back from the store when their turn comes, so memory stays
/// bounded whatever the rate.
const MAX_WAITING: usize = 4096;

/// The route's side of the dispatcher (see the module's documentation).
#[derive(Debug)]
pub struct Inbox {
    /// The claims' holder: this process's worker name.
    worker: String,
    /// How long the claim a delivery is stored with keeps other replicas off it.
    claim: Duration,
    wake: Notify,
    waiting: Mutex<HashMap<DeliveryId, Parsed>>,
}

/// A delivery read into its event, with the key that serialises it: deliveries about the same pull
/// request or issue are handled one at a time, oldest first.
#[derive(Debug, Clone)]
pub(super) struct Parsed {
    pub(super) key: String,
    pub(super) event: Arc<Result<Event, EventError>>,
}

impl Parsed {
    /// Reads a stored delivery (one the route of another process received, or stored before a
    /// restart).
    pub(super) fn stored(delivery: &Delivery) -> Parsed {
        Parsed::with_key(&delivery.id, Event::from_json(&delivery.event, &delivery.payload))
    }

    fn with_key(id: &DeliveryId, event: Result<Event, EventError>) -> Parsed {
        let key = match &event {
            Ok(event) => serial_key(event).unwrap_or_else(|| id.0.clone()),
            Err(_) => id.0.clone(),
        };
        Parsed {
            key,
            event: Arc::new(event),
        }
    }

    /// The span the delivery's handling runs in, with its repository when the payload named one.
    pub(super) fn span(&self, id: &DeliveryId, event: &str) -> Span {
        let span = logging::delivery_span(&id.0, event);
        if let Ok(event) = self.event.as_ref()
            && let Some(ctx) = event.context()
        {
            logging::record_repo(&span, &ctx.repo.name.to_string());
        }
        span
    }
}

/// A delivery the route read, to be stored with [`Inbox::claim`] and then handed over.
#[derive(Debug)]
pub struct Received {
    parsed: Parsed,
}

impl Received {
    /// The key its handling is serialised by.
    pub fn key(&self) -> &str {
        &self.parsed.key
    }
}

impl Inbox {
    /// An inbox whose deliveries are claimed by `worker` for `claim`.
    pub fn new(worker: &str, claim: Duration) -> Inbox {
        Inbox {
            worker: worker.to_owned(),
            claim,
            wake: Notify::new(),
            waiting: Mutex::new(HashMap::new()),
        }
    }

    /// Reads a verified delivery's payload (as the route parsed it) into its event.
    pub fn read(&self, id: &DeliveryId, event: &str, payload: &Value) -> Received {
        Received {
            parsed: Parsed::with_key(id, Event::parse(event, payload)),
        }
    }

    /// The claim to store `received` with: this process's, for one claim period.
    pub fn claim(&self, received: &Received) -> DeliveryClaim {
        DeliveryClaim {
            key: received.parsed.key.clone(),
            worker: self.worker.clone(),
            lease_for: self.claim,
        }
    }

    /// Hands a delivery the route stored to the dispatcher, and wakes it.
    pub fn stored(&self, id: DeliveryId, received: Received) {
        {
            let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
            if waiting.len() < MAX_WAITING {
                waiting.insert(id, received.parsed);
            }
        }
        self.wake();
    }

    /// Wakes the dispatcher (a delivery stored, or one that may go now).
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    pub(super) async fn woken(&self) {
        self.wake.notified().await;
    }

    /// The deliveries handed over since the last call.
    pub(super) fn take(&self) -> HashMap<DeliveryId, Parsed> {
        std::mem::take(&mut *self.waiting.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Deliveries about the same pull request or issue are handled one at a time, oldest first.
fn serial_key(event: &Event) -> Option<String> {
    let (ctx, number) = match event {
        Event::Comment(comment) => (&comment.ctx, comment.issue.number),
        Event::IssueAssigned { ctx, issue, .. }
        | Event::IssueLabeled { ctx, issue, .. }
        | Event::IssueEdited { ctx, issue, .. } => (ctx, issue.number),
        // The failures of one commit arrive together (a check run per job, a suite, a workflow run):
        // one at a time, so that the first queues the triage and the others find it.
        Event::WorkflowRunCompleted(run) => return Some(format!("{}@{}", run.ctx.repo.name, run.head_sha)),
        Event::CheckRunCompleted(run) => return Some(format!("{}@{}", run.ctx.repo.name, run.head_sha)),
        Event::CheckSuiteCompleted(suite) => {
            return Some(format!("{}@{}", suite.ctx.repo.name, suite.head_sha));
        }
        _ => return None,
    };
    Some(format!("{}#{number}", ctx.repo.name))
}

#[cfg(test)]
mod tests {
    #![expect(clippy::unwrap_used, reason = "a failing test should panic")]

    use super::*;

    #[test]
    fn a_delivery_is_claimed_by_its_pull_request_and_the_dispatcher_gets_its_parse() {
        let inbox = Inbox::new("replica-a", Duration::from_secs(60));
        let id = DeliveryId("d-1".to_owned());
        let path = crate::llm::fixture_path("webhooks/issue_comment/created.with-installation.payload.json");
        let payload: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let received = inbox.read(&id, "issue_comment", &payload);
        let claim = inbox.claim(&received);
        assert_eq!(claim.worker, "replica-a");
        assert_eq!(claim.lease_for, Duration::from_secs(60));
        assert!(
            claim.key.contains('#'),
            "a comment is serialised by its issue: {}",
            claim.key
        );
        assert_eq!(claim.key, received.key());
        inbox.stored(id.clone(), received);
        let taken = inbox.take();
        assert_eq!(taken[&id].key, claim.key);
        assert!(taken[&id].event.is_ok());
        assert!(inbox.take().is_empty(), "taken once");
    }

    #[test]
    fn what_names_no_pull_request_is_serialised_by_its_own_id_and_waiting_deliveries_are_bounded() {
        let inbox = Inbox::new("replica-a", Duration::from_secs(60));
        let received = inbox.read(&DeliveryId("d-odd".to_owned()), "issue_comment", &serde_json::json!({}));
        assert_eq!(received.key(), "d-odd");
        for n in 0..MAX_WAITING + 10 {
            let id = DeliveryId(format!("d-{n}"));
            let received = inbox.read(&id, "issue_comment", &serde_json::json!({}));
            inbox.stored(id, received);
        }
        assert_eq!(inbox.take().len(), MAX_WAITING, "the rest are read back from the store");
    }
}
