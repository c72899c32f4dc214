//! The dispatcher's loop: turns stored deliveries into work, so that nothing the webhook route
//! accepted is lost. Woken by the route, on a slow interval and once at start-up (for what a crash
//! left), it lists the unprocessed deliveries it may handle, oldest first (not those another live
//! process holds; without their payloads: the route hands over what it parsed, `inbox.rs`, and a
//! payload is read back from the store only for a delivery another process received) and handles
//! several at once — but one at a time per pull request or issue, in the order received, so `@agent
//! stop` never overtakes the request it stops — and never the same delivery twice at once. Replicas
//! sharing a store hold a claim on a delivery while they handle it: the receiver's from the moment
//! it is stored, anyone's through `JobStore::claim_delivery` once that claim ran out; one replica
//! handles it, and one key's deliveries still go in order; a replica that died leaves its
//! deliveries to the others once its claims run out. The store's signals wake it when another
//! replica stores a delivery nobody holds or handled one a younger delivery waits behind. What
//! handling one delivery means is `act.rs`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::broadcast::error::RecvError;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument as _, Span};

use super::act::{Ctx, Retry, handle};
use super::inbox::{Inbox, Parsed};
use crate::backoff::{self, Jitter};
use crate::github::GithubAccess;
use crate::jobs::{DeliveryClaim, DeliveryId, JobStore, Signal, WorkerPool, now_ms};
use crate::triggers::TriggerConfig;

/// How the dispatcher works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DispatchSettings {
    /// The mention and the bot's login (`[agent] trigger`, `[github] bot_name`).
    pub triggers: TriggerConfig,
    /// `max_attempts` of every job created (`[server] job_attempts`).
    pub job_attempts: u32,
    /// How often stored deliveries are looked at without a wake-up.
    pub poll_interval: Duration,
    /// Deliveries handled at once.
    pub concurrency: usize,
    /// Unprocessed deliveries read per pass.
    pub batch: u32,
    /// How long a claim on a delivery keeps other replicas off it; renewed every third of it while
    /// the delivery is in hand, and taken again before each retry.
    pub claim: Duration,
    /// Tries of a delivery that keeps failing transiently before it is dropped (logged as an error).
    pub max_tries: u32,
    /// The first retry delay; each next one doubles, up to `max_backoff`.
    pub base_backoff: Duration,
    pub max_backoff: Duration,
}

impl DispatchSettings {
    pub fn new(triggers: TriggerConfig, job_attempts: u32) -> Self {
        DispatchSettings {
            triggers,
            job_attempts,
            poll_interval: Duration::from_secs(30),
            concurrency: 8,
            // Enough to keep every slot busy and to see past a blocked pull request's backlog,
            // without reading megabytes of payloads on every pass.
            batch: 64,
            claim: Duration::from_secs(60),
            // With the doubling below capped at five minutes: about half an hour of trying.
            max_tries: 10,
            base_backoff: Duration::from_secs(2),
            max_backoff: Duration::from_secs(300),
        }
    }

    fn backoff(&self, tries: u32) -> Duration {
        // Half fixed, half jitter: deliveries that failed together do not retry in lockstep.
        backoff::delay(self.base_backoff, self.max_backoff, tries, Jitter::Half)
    }
}

/// Parses of pending deliveries kept beyond those the last scan listed (a backlog deeper than a
/// batch), at most.
const MAX_PARSED: usize = 8192;

/// The running dispatcher task.
#[derive(Debug)]
pub struct Dispatcher {
    inbox: Arc<Inbox>,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
    /// Wakes the loop on the store's signals.
    follower: JoinHandle<()>,
    dropped: Arc<std::sync::atomic::AtomicU64>,
    settled: watch::Receiver<u64>,
}

impl Dispatcher {
    /// Starts the task; its first pass runs at once, for deliveries a previous process left.
    pub fn start(
        store: Arc<dyn JobStore>,
        pool: Arc<WorkerPool>,
        github: GithubAccess,
        settings: DispatchSettings,
    ) -> Dispatcher {
        let inbox = Arc::new(Inbox::new(pool.worker_name(), settings.claim));
        let stop = CancellationToken::new();
        let dropped = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (settled_tx, settled) = watch::channel(0);
        let follower = tokio::spawn(follow_signals(store.signals(), Arc::clone(&inbox)));
        let ctx = Arc::new(Ctx {
            store,
            pool,
            github,
            settings,
            repo_configs: Mutex::new(HashMap::new()),
            dropped: Arc::clone(&dropped),
        });
        let task = tokio::spawn(run(ctx, Arc::clone(&inbox), stop.clone(), settled_tx));
        Dispatcher {
            inbox,
            stop,
            task: Some(task),
            follower,
            dropped,
            settled,
        }
    }

    /// How many times handling a delivery ended (handled, given up on, or set to be retried),
    /// changing after each: what waits for the stored deliveries to be dealt with follows it
    /// rather than polling the store.
    pub fn settled(&self) -> watch::Receiver<u64> {
        self.settled.clone()
    }

    /// How many deliveries were given up on: after their retries, or at once when GitHub refused for
    /// good (each logged).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// What the webhook route reads deliveries with and hands them over to.
    pub fn inbox(&self) -> Arc<Inbox> {
        Arc::clone(&self.inbox)
    }

    pub fn wake(&self) {
        self.inbox.wake();
    }

    /// Stops taking deliveries, waits up to [`Dispatcher::STOP_WAIT`] for those being handled, and
    /// abandons the rest (still unprocessed in the store: the next start handles them).
    pub async fn stop(mut self) {
        self.stop.cancel();
        self.follower.abort();
        if let Some(mut task) = self.task.take() {
            // The task bounds its own drain; this is the backstop should it hang anyway.
            if tokio::time::timeout(Self::STOP_WAIT * 2, &mut task).await.is_err() {
                task.abort();
                let _ = task.await;
            }
        }
    }

    /// How long stopping waits for deliveries being handled.
    pub const STOP_WAIT: Duration = Duration::from_secs(10);
}

impl Drop for Dispatcher {
    fn drop(&mut self) {
        self.stop.cancel();
        self.follower.abort();
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Wakes the loop when any replica stored a delivery nobody holds or handled one (a younger delivery
/// of its key may go now), or when signals may have been missed.
async fn follow_signals(mut signals: tokio::sync::broadcast::Receiver<Signal>, inbox: Arc<Inbox>) {
    loop {
        match signals.recv().await {
            Ok(Signal::Deliveries | Signal::Resync) | Err(RecvError::Lagged(_)) => inbox.wake(),
            Ok(_) => {}
            Err(RecvError::Closed) => return,
        }
    }
}

struct Backoff {
    tries: u32,
    next: Instant,
}

struct Loop {
    ctx: Arc<Ctx>,
    inbox: Arc<Inbox>,
    tasks: JoinSet<Result<(), Retry>>,
    /// Task → (delivery, serialisation key, the delivery's span, which its end is logged in too).
    running: HashMap<tokio::task::Id, (DeliveryId, String, Span)>,
    busy_keys: HashSet<String>,
    backoff: HashMap<DeliveryId, Backoff>,
    /// Each pending delivery, parsed once (by the route that received it, or from the store): under
    /// a backlog every scan sees the same deliveries again, and reading and parsing their payloads
    /// again took the time the webhook route needs. The handling (and its retries) uses the same
    /// parse.
    parsed: HashMap<DeliveryId, Parsed>,
    /// Counts each end of handling a delivery ([`Dispatcher::settled`]).
    settled: watch::Sender<u64>,
}

async fn run(ctx: Arc<Ctx>, inbox: Arc<Inbox>, stop: CancellationToken, settled: watch::Sender<u64>) {
    let poll = ctx.settings.poll_interval;
    let mut state = Loop {
        ctx,
        inbox: Arc::clone(&inbox),
        tasks: JoinSet::new(),
        running: HashMap::new(),
        busy_keys: HashSet::new(),
        backoff: HashMap::new(),
        parsed: HashMap::new(),
        settled,
    };
    let mut scan = true;
    // Claims on the deliveries in hand are renewed well before they run out: another replica takes
    // a delivery over only when this one stopped renewing (it died).
    let period = (state.ctx.settings.claim / 3).max(Duration::from_millis(10));
    let mut renew = tokio::time::interval_at(Instant::now() + period, period);
    renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // A timer of its own, not a sleep made again on each turn: the renewals' turns must not keep
    // postponing the look at the store (a dead replica's claims run out without a signal).
    let mut look = tokio::time::interval_at(Instant::now() + poll, poll);
    look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        if scan && !stop.is_cancelled() {
            state.scan().await;
        }
        // Only future retries: one due now is in hand or waits behind its key, and both end in a
        // task ending, which scans again.
        let now = Instant::now();
        let next_retry = state.backoff.values().map(|b| b.next).filter(|at| *at > now).min();
        scan = tokio::select! {
            biased;
            () = stop.cancelled() => break,
            Some(joined) = state.tasks.join_next_with_id() => {
                state.ended(joined).await;
                // Every other delivery that ended meanwhile too: one scan for all of them, since
                // under a backlog the scans, not the handling, would bound the rate.
                while let Some(joined) = state.tasks.try_join_next_with_id() {
                    state.ended(joined).await;
                }
                true
            }
            () = inbox.woken() => true,
            _ = renew.tick() => {
                state.renew_claims().await;
                false
            }
            _ = look.tick() => true,
            () = sleep_until(next_retry) => true,
        };
    }
    // Let the deliveries in hand finish (their GitHub calls are bounded by the client's timeouts),
    // but not forever: an abandoned one stays unprocessed and is handled after the restart.
    let drain = async {
        while let Some(joined) = state.tasks.join_next_with_id().await {
            state.ended(joined).await;
        }
    };
    if tokio::time::timeout(Dispatcher::STOP_WAIT, drain).await.is_err() {
        tracing::warn!(
            deliveries = state.tasks.len(),
            "stopping with deliveries still being handled; they will be handled after the restart"
        );
        state.tasks.abort_all();
        while state.tasks.join_next().await.is_some() {}
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

impl Loop {
    /// Starts handling every unprocessed delivery that is not in hand, not held by another
    /// process, not waiting for a retry, and not behind an older one on the same pull request.
    async fn scan(&mut self) {
        let slots = self.ctx.settings.concurrency.max(1);
        // Nothing could start: reading the backlog again would only cost the route time.
        if self.tasks.len() >= slots {
            return;
        }
        let batch = self.ctx.settings.batch;
        let (now, at) = (Instant::now(), now_ms());
        let ctx = Arc::clone(&self.ctx);
        let worker = ctx.pool.worker_name();
        let pending = match self.ctx.store.available_deliveries(worker, at, batch).await {
            Ok(pending) => pending,
            Err(error) => {
                tracing::error!(error = %error, "could not read the stored deliveries");
                return;
            }
        };
        self.parsed.extend(self.inbox.take());
        let in_hand: HashSet<DeliveryId> = self.running.values().map(|(id, _, _)| id.clone()).collect();
        // Keys an older delivery holds, in hand or waiting for its retry: younger ones wait behind
        // it. (Those another process holds are not listed: they are `behind`.)
        let mut blocked = self.busy_keys.clone();
        // Deliveries handled meanwhile (by this process or another), or taken over by another
        // process, are no longer listed: forget their parse. A full batch may leave younger ones
        // unlisted: those are kept, up to a bound.
        let listed: HashSet<&DeliveryId> = pending.iter().map(|delivery| &delivery.id).collect();
        if pending.len() < usize::try_from(batch).unwrap_or(usize::MAX) || self.parsed.len() > MAX_PARSED {
            self.parsed
                .retain(|id, _| listed.contains(id) || in_hand.contains(id) || self.backoff.contains_key(id));
        }
        let claim_ms = i64::try_from(self.ctx.settings.claim.as_millis()).unwrap_or(i64::MAX);
        for delivery in &pending {
            if self.tasks.len() >= slots {
                break;
            }
            if in_hand.contains(&delivery.id) {
                continue;
            }
            // The key it was stored with (claimed) saves reading the payload of a delivery that
            // cannot start yet.
            let key = match &delivery.claim {
                Some(claim) => claim.key.clone(),
                None => match self.parse(&delivery.id).await {
                    Some(parsed) => parsed.key,
                    None => continue,
                },
            };
            if delivery.behind || blocked.contains(&key) {
                continue;
            }
            if self.backoff.get(&delivery.id).is_some_and(|b| b.next > now) {
                blocked.insert(key);
                continue;
            }
            blocked.insert(key.clone());
            // Held here already, with time to spare (the claim the route stored it with, or one
            // renewed), and no older delivery of its key held elsewhere (`behind`) nor here.
            let ours = delivery
                .claim
                .as_ref()
                .is_some_and(|claim| claim.worker == worker && claim.until - at > claim_ms / 2);
            if !ours {
                let claim = DeliveryClaim {
                    key: key.clone(),
                    worker: worker.to_owned(),
                    lease_for: self.ctx.settings.claim,
                };
                match self.ctx.store.claim_delivery(&delivery.id, &claim, at).await {
                    Ok(true) => {}
                    Ok(false) => {
                        // Another process handles it (or an older delivery of its key): its
                        // retries are that process's.
                        self.backoff.remove(&delivery.id);
                        continue;
                    }
                    Err(error) => {
                        tracing::error!(delivery = %delivery.id, error = %error, "could not claim a stored delivery");
                        continue;
                    }
                }
            }
            let Some(parsed) = self.parse(&delivery.id).await else {
                continue;
            };
            self.busy_keys.insert(key.clone());
            let id = delivery.id.clone();
            let span = parsed.span(&id, &delivery.event);
            let handle = self
                .tasks
                .spawn(handle(Arc::clone(&self.ctx), id.clone(), Arc::clone(&parsed.event)).instrument(span.clone()));
            self.running.insert(handle.id(), (id, key, span));
        }
    }

    /// The delivery's parse: the route's, an earlier scan's, or read back from the store now (a
    /// delivery another process received, or one stored before a restart).
    async fn parse(&mut self, id: &DeliveryId) -> Option<Parsed> {
        if let Some(parsed) = self.parsed.get(id) {
            return Some(parsed.clone());
        }
        match self.ctx.store.delivery(id).await {
            Ok(Some(delivery)) => {
                let parsed = Parsed::stored(&delivery);
                self.parsed.insert(id.clone(), parsed.clone());
                Some(parsed)
            }
            // Pruned between the listing and now: it was processed meanwhile.
            Ok(None) => None,
            Err(error) => {
                tracing::error!(delivery = %id, error = %error, "could not read a stored delivery");
                None
            }
        }
    }

    /// Takes the deliveries in hand again for another claim period.
    async fn renew_claims(&self) {
        let worker = self.ctx.pool.worker_name();
        for (id, key, span) in self.running.values() {
            let claim = DeliveryClaim {
                key: key.clone(),
                worker: worker.to_owned(),
                lease_for: self.ctx.settings.claim,
            };
            match self.ctx.store.claim_delivery(id, &claim, now_ms()).await {
                Ok(true) => {}
                // Processed meanwhile (its task is about to end), or taken over by another replica
                // after this one was too slow: handling it twice creates nothing twice.
                Ok(false) => span.in_scope(|| tracing::debug!("the delivery's claim was not renewed")),
                Err(error) => span.in_scope(|| tracing::warn!(error = %error, "could not renew a delivery's claim")),
            }
        }
    }

    async fn ended(&mut self, joined: Result<(tokio::task::Id, Result<(), Retry>), tokio::task::JoinError>) {
        let (task, result) = match joined {
            Ok((task, result)) => (task, result),
            Err(error) => {
                let retry = if error.is_panic() {
                    Retry("handling it panicked".to_owned())
                } else {
                    Retry("handling it was aborted".to_owned())
                };
                (error.id(), Err(retry))
            }
        };
        let Some((id, key, span)) = self.running.remove(&task) else {
            return;
        };
        self.busy_keys.remove(&key);
        self.settle(id, result).instrument(span).await;
        self.settled.send_modify(|count| *count += 1);
    }

    /// Forgets a delivery handled to its end, or schedules its retry (gives up after the last).
    async fn settle(&mut self, id: DeliveryId, result: Result<(), Retry>) {
        match result {
            Ok(()) => {
                self.backoff.remove(&id);
                self.parsed.remove(&id);
            }
            Err(Retry(reason)) => {
                let tries = self.backoff.get(&id).map_or(0, |b| b.tries) + 1;
                if tries >= self.ctx.settings.max_tries {
                    tracing::error!(
                        tries,
                        reason,
                        "giving up on a delivery that kept failing; it is dropped (redeliver it from the App's settings)"
                    );
                    self.backoff.remove(&id);
                    self.parsed.remove(&id);
                    self.ctx.dropped.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if let Err(error) = self.ctx.store.process_delivery(&id, Vec::new(), now_ms()).await {
                        tracing::error!(error = %error, "could not mark the delivery dropped");
                    }
                    return;
                }
                let delay = self.ctx.settings.backoff(tries);
                tracing::warn!(
                    tries,
                    reason,
                    retry_in_ms = delay.as_millis() as u64,
                    "could not handle the delivery; trying again later"
                );
                self.backoff.insert(
                    id,
                    Backoff {
                        tries,
                        next: Instant::now() + delay,
                    },
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap_with_jitter() {
        let settings = DispatchSettings::new(TriggerConfig::new("@agent", "pitcrew[bot]"), 3);
        for (tries, ceiling) in [(1, 2), (2, 4), (3, 8), (9, 300), (30, 300)] {
            let delay = settings.backoff(tries);
            let ceiling = Duration::from_secs(ceiling);
            assert!(delay >= ceiling / 2 && delay <= ceiling, "{tries}: {delay:?}");
        }
    }
}
