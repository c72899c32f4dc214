//! Retries: which failures are worth another attempt, how long to wait (exponential backoff with full
//! jitter, or exactly what the server asked for), and the driver that runs a provider's attempts and
//! turns them into one event stream.

use std::future::Future;
use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::EventStream;
use super::error::LlmError;
use super::types::{Response, StreamEvent};
use crate::backoff::{self, Jitter};

#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt; 0 disables retrying.
    pub max_retries: u32,
    /// The backoff ceiling of the first retry; it doubles with each retry.
    pub base_delay: Duration,
    /// No computed backoff is longer than this.
    pub max_backoff: Duration,
    /// The longest `retry-after` the client will wait for; a server asking for more gets its error
    /// returned at once, so the caller can decide (a job may rather fail than sit for ten minutes).
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 4,
            base_delay: Duration::from_secs(1),
            max_backoff: Duration::from_secs(32),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// How long to wait before retry number `retry` (1-based) after `error`, or `None` to give up.
    pub fn delay(&self, retry: u32, error: &LlmError) -> Option<Duration> {
        if retry > self.max_retries || !error.is_retryable() {
            return None;
        }
        if let Some(asked) = error.retry_after() {
            return (asked <= self.max_retry_after).then_some(asked);
        }
        // Full jitter: spreads the retries of many clients hit by the same overload instead of
        // synchronising them.
        Some(backoff::delay(self.base_delay, self.max_backoff, retry, Jitter::Full))
    }
}

/// The delay a response asks for: `retry-after-ms` (OpenAI and Anthropic send it), else `retry-after`
/// in seconds or as an HTTP date. Nonsense values are ignored rather than trusted.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return positive_seconds(ms / 1000.0);
    }
    let value = header("retry-after")?;
    if let Ok(seconds) = value.parse::<f64>() {
        return positive_seconds(seconds);
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(SystemTime::now()).unwrap_or(Duration::ZERO))
}

fn positive_seconds(seconds: f64) -> Option<Duration> {
    (0.0..1e9).contains(&seconds).then(|| Duration::from_secs_f64(seconds))
}

/// Where an attempt sends its deltas. A closed receiver means nobody listens any more: the attempt
/// stops as if cancelled.
#[derive(Debug, Clone)]
pub struct EventSink {
    tx: mpsc::Sender<Result<StreamEvent, LlmError>>,
}

impl EventSink {
    pub async fn send(&self, event: StreamEvent) -> Result<(), LlmError> {
        self.tx.send(Ok(event)).await.map_err(|_| LlmError::Cancelled)
    }
}

/// One attempt at a call: send the request, forward deltas to the sink, return the whole response.
pub trait Attempt: Send + Sync + 'static {
    fn attempt<'a>(&'a self, sink: &'a EventSink) -> impl Future<Output = Result<Response, LlmError>> + Send + 'a;
}

/// Runs attempts until one succeeds, the error is final, retries are spent or the call is cancelled.
///
/// A failure mid-stream is retried too, announced by a `Retrying` event: consumers drop the partial
/// turn they were showing. The stream ends with `Completed` or one error.
pub fn drive(attempt: impl Attempt, policy: RetryPolicy, cancel: CancellationToken) -> EventStream {
    let (tx, rx) = mpsc::channel(64);
    let sink = EventSink { tx };
    // What it logs is the caller's (a job's): in the caller's span, which a task does not inherit.
    tokio::spawn(Instrument::in_current_span(async move {
        let outcome = tokio::select! {
            biased;
            () = cancel.cancelled() => Err(LlmError::Cancelled),
            outcome = attempts(&attempt, &policy, &sink) => outcome,
        };
        let last = outcome.map(StreamEvent::Completed);
        // The receiver may be gone already; nobody is left to tell.
        let _ = sink.tx.send(last).await;
    }));
    Box::pin(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    }))
}

async fn attempts(attempt: &impl Attempt, policy: &RetryPolicy, sink: &EventSink) -> Result<Response, LlmError> {
    let mut retry = 0;
    loop {
        let error = match attempt.attempt(sink).await {
            Ok(response) => return Ok(response),
            Err(error) => error,
        };
        retry += 1;
        let Some(delay) = policy.delay(retry, &error) else {
            if retry > 1 && error.is_retryable() {
                tracing::warn!(attempts = retry, %error, "model call failed; giving up");
            }
            return Err(error);
        };
        tracing::info!(retry, delay_ms = delay.as_millis() as u64, %error, "model call failed; retrying");
        sink.send(StreamEvent::Retrying {
            attempt: retry,
            delay,
            reason: error.to_string(),
        })
        .await?;
        tokio::time::sleep(delay).await;
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn overloaded(retry_after: Option<Duration>) -> LlmError {
        LlmError::Overloaded {
            retry_after,
            message: "Overloaded".into(),
        }
    }

    #[test]
    fn backoff_grows_with_full_jitter_under_a_ceiling() {
        let policy = RetryPolicy {
            max_retries: 10,
            ..RetryPolicy::default()
        };
        for retry in 1..=10 {
            let ceiling = Duration::from_secs(1 << (retry - 1)).min(Duration::from_secs(32));
            let delays: Vec<_> = (0..200)
                .map(|_| policy.delay(retry, &overloaded(None)).unwrap())
                .collect();
            assert!(delays.iter().all(|d| *d <= ceiling), "retry {retry}");
            // Jittered: not all the same, and spread over the range.
            assert!(delays.iter().any(|d| *d < ceiling / 4) && delays.iter().any(|d| *d > ceiling / 2));
        }
    }

    #[test]
    fn retries_are_bounded_and_final_errors_are_not_retried() {
        let policy = RetryPolicy::default();
        assert!(policy.delay(4, &overloaded(None)).is_some());
        assert_eq!(policy.delay(5, &overloaded(None)), None);
        let bad = LlmError::BadRequest {
            status: 400,
            message: "no".into(),
        };
        assert_eq!(policy.delay(1, &bad), None);
        assert_eq!(policy.delay(1, &LlmError::Cancelled), None);
    }

    #[test]
    fn the_servers_delay_is_honoured_up_to_a_limit() {
        let policy = RetryPolicy::default();
        let asked = Duration::from_millis(2500);
        assert_eq!(policy.delay(1, &overloaded(Some(asked))), Some(asked));
        assert_eq!(policy.delay(1, &overloaded(Some(Duration::from_secs(61)))), None);
    }

    #[test]
    fn retry_after_headers_are_read() {
        let headers = |pairs: &[(&'static str, &str)]| {
            let mut map = HeaderMap::new();
            for (name, value) in pairs {
                map.insert(*name, HeaderValue::from_str(value).unwrap());
            }
            map
        };
        assert_eq!(
            retry_after(&headers(&[("retry-after", "7")])),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "7"), ("retry-after-ms", "1500")])),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "0.25")])),
            Some(Duration::from_millis(250))
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "-3")])), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")])), None);
        let in_a_minute = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(60));
        let parsed = retry_after(&headers(&[("retry-after", &in_a_minute)])).unwrap();
        assert!(
            parsed > Duration::from_secs(55) && parsed <= Duration::from_secs(60),
            "{parsed:?}"
        );
        let past = httpdate::fmt_http_date(SystemTime::now() - Duration::from_secs(60));
        assert_eq!(retry_after(&headers(&[("retry-after", &past)])), Some(Duration::ZERO));
    }
}
