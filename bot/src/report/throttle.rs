//! Throttling of live updates (the progress comment, the check run's plan): at most one update per
//! interval, the newest state replacing one still waiting, and the final state sent at once.
//!
//! The runner offers every new state; the throttle says whether to send it now or keeps it; the
//! runner waits on [`Throttle::ready`] (or [`Throttle::next_due`]) to send the kept one when the
//! interval has passed, and sends the final state through [`Throttle::finish`].

use std::time::Duration;

use tokio::time::Instant;

/// GitHub's guidance for check runs and comments that change often: no more than one update every
/// few seconds per object.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);

#[derive(Debug)]
pub struct Throttle<T> {
    interval: Duration,
    last_sent: Option<Instant>,
    pending: Option<T>,
}

impl<T> Default for Throttle<T> {
    fn default() -> Self {
        Throttle::new(DEFAULT_INTERVAL)
    }
}

impl<T> Throttle<T> {
    pub fn new(interval: Duration) -> Self {
        Throttle {
            interval,
            last_sent: None,
            pending: None,
        }
    }

    /// A new state. Returned to be sent now when the interval since the last update has passed (or
    /// nothing was sent yet); otherwise kept, replacing any state already waiting, and `None`.
    pub fn offer(&mut self, state: T) -> Option<T> {
        let now = Instant::now();
        if self.last_sent.is_none_or(|last| now >= last + self.interval) {
            self.pending = None;
            self.last_sent = Some(now);
            Some(state)
        } else {
            self.pending = Some(state);
            None
        }
    }

    /// When the waiting state may be sent; `None` when nothing waits.
    pub fn next_due(&self) -> Option<Instant> {
        self.pending.as_ref()?;
        Some(self.last_sent.map_or_else(Instant::now, |last| last + self.interval))
    }

    /// The waiting state, if its time has come.
    pub fn poll(&mut self) -> Option<T> {
        let due = self.next_due()?;
        let now = Instant::now();
        if now < due {
            return None;
        }
        self.last_sent = Some(now);
        self.pending.take()
    }

    /// Waits until the waiting state is due and returns it; never returns while nothing waits.
    /// Cancel-safe: dropping the future loses nothing, so it fits a `tokio::select!` loop that
    /// also receives new states.
    pub async fn ready(&mut self) -> T {
        loop {
            match self.next_due() {
                Some(due) => {
                    tokio::time::sleep_until(due).await;
                    if let Some(state) = self.poll() {
                        return state;
                    }
                }
                None => std::future::pending::<()>().await,
            }
        }
    }

    /// The final state: always to be sent at once. A state still waiting is dropped, as the final
    /// one supersedes it.
    pub fn finish(&mut self, state: T) -> T {
        self.pending = None;
        self.last_sent = Some(Instant::now());
        state
    }

    /// Whether a state waits to be sent.
    pub fn has_pending(&self) -> bool {
        self.pending.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn at_most_one_update_per_interval_and_the_newest_wins() {
        let start = Instant::now();
        let mut throttle = Throttle::new(Duration::from_secs(5));
        assert_eq!(throttle.next_due(), None);
        // The first update goes out at once.
        assert_eq!(throttle.offer("a"), Some("a"));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(throttle.offer("b"), None);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(throttle.offer("c"), None);
        assert_eq!(throttle.next_due(), Some(start + Duration::from_secs(5)));
        assert_eq!(throttle.poll(), None, "not due yet");
        tokio::time::advance(Duration::from_secs(3)).await;
        // `c` replaced `b`.
        assert_eq!(throttle.poll(), Some("c"));
        assert_eq!(throttle.poll(), None);
        assert!(!throttle.has_pending());
        // Sending `c` restarted the interval.
        assert_eq!(throttle.offer("d"), None);
        assert_eq!(throttle.next_due(), Some(start + Duration::from_secs(10)));
        tokio::time::advance(Duration::from_secs(6)).await;
        // Long after the last update, a new state goes out at once and replaces the stale one.
        assert_eq!(throttle.offer("e"), Some("e"));
        assert!(!throttle.has_pending());
    }

    #[tokio::test(start_paused = true)]
    async fn ready_waits_for_the_interval_and_finish_is_immediate() {
        let start = Instant::now();
        let mut throttle = Throttle::new(Duration::from_secs(5));
        assert_eq!(throttle.offer(1), Some(1));
        assert_eq!(throttle.offer(2), None);
        assert_eq!(throttle.offer(3), None);
        // With the clock paused, the sleep inside `ready` completes exactly at the deadline.
        assert_eq!(throttle.ready().await, 3);
        assert_eq!(Instant::now() - start, Duration::from_secs(5));
        // Nothing waits: `ready` never completes.
        let waited = tokio::time::timeout(Duration::from_secs(60), throttle.ready()).await;
        assert!(waited.is_err());
        // The final state goes out at once, and drops the one that waited.
        assert_eq!(throttle.offer(4), Some(4), "the last update was a minute ago");
        assert_eq!(throttle.offer(5), None);
        let finished_at = Instant::now();
        assert_eq!(throttle.finish(6), 6);
        assert_eq!(Instant::now(), finished_at);
        assert!(!throttle.has_pending());
        assert_eq!(throttle.next_due(), None);
    }
}
