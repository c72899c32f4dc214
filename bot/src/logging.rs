//! Logging setup: one `tracing` subscriber writing to stderr, filtered by `RUST_LOG` (default `info`),
//! as human-readable lines or as JSON for servers and log collectors; and the span a webhook
//! delivery's work is logged in (a job's is the worker pool's), so that its id is on every line.

use tracing::Span;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::util::SubscriberInitExt as _;

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines, coloured when stderr is a terminal.
    #[default]
    Pretty,
    /// One JSON object per line.
    Json,
}

/// Installs the global subscriber. Safe to call more than once: later calls change nothing, so
/// tests and embedders may call it freely.
pub fn init(format: LogFormat) {
    // A malformed RUST_LOG should not stop the bot; it is reported once logging works.
    let (filter, bad_filter) = match EnvFilter::try_from_default_env() {
        Ok(filter) => (filter, None),
        Err(e) => (
            EnvFilter::new("info"),
            std::env::var("RUST_LOG").ok().filter(|v| !v.is_empty()).map(|v| (v, e)),
        ),
    };
    // The Actions runner uploads this log to GitHub: it passes the secret filter.
    let writer = || crate::redact::Redacting(std::io::stderr());
    let installed = match format {
        LogFormat::Pretty => tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(writer)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init()
            .is_ok(),
        LogFormat::Json => json_subscriber(filter, writer).try_init().is_ok(),
    };
    if installed && let Some((value, error)) = bad_filter {
        tracing::warn!(rust_log = %value, %error, "ignoring invalid RUST_LOG; logging at info");
    }
}

/// The JSON subscriber: one object per line, with the fields of the span it was logged in (`span`)
/// and of every span around that one (`spans`, outermost first), so that a line logged deep in a
/// job still carries the job's id, and one logged in a delivery's work the delivery's.
fn json_subscriber<W>(filter: EnvFilter, writer: W) -> impl tracing::Subscriber + Send + Sync + 'static
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .json()
        .with_current_span(true)
        .with_span_list(true)
        .with_ansi(false)
        .finish()
}

/// The span of one webhook delivery's work: its storing by the route and its handling by the
/// dispatcher. Its `repo` (`owner/name`) is known once the payload is read: [`record_repo`].
pub fn delivery_span(id: &str, event: &str) -> Span {
    // At the error level, so that it is on whatever the filter: a span says what a line is about,
    // not how much it matters, and a warning logged under `RUST_LOG=warn` still names its delivery.
    tracing::error_span!("delivery", delivery = %id, event = %event, repo = tracing::field::Empty)
}

/// Records the repository a delivery's span is about.
pub fn record_repo(span: &Span, repo: &str) {
    span.record("repo", repo);
}

/// Capturing what the JSON subscriber writes, for tests that look at the lines a piece of work logs.
#[cfg(test)]
pub(crate) mod capture {
    use std::sync::{Arc, Mutex, PoisonError};

    use serde_json::Value;
    use tracing_subscriber::EnvFilter;
    use tracing_subscriber::fmt::MakeWriter;

    /// The lines written so far, shared with the subscriber.
    #[derive(Clone, Default)]
    pub(crate) struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Captured {
        /// Every line written so far, parsed.
        ///
        /// # Panics
        /// On a line that is not JSON: the subscriber writes nothing else.
        #[expect(clippy::expect_used, reason = "test helper")]
        pub(crate) fn lines(&self) -> Vec<Value> {
            let bytes = self.0.lock().unwrap_or_else(PoisonError::into_inner).clone();
            String::from_utf8_lossy(&bytes)
                .lines()
                .map(|line| serde_json::from_str(line).expect("a JSON log line"))
                .collect()
        }

        /// The lines whose message is `message`.
        pub(crate) fn with_message(&self, message: &str) -> Vec<Value> {
            self.lines()
                .into_iter()
                .filter(|line| line["fields"]["message"] == message)
                .collect()
        }

        /// Everything written so far, as text.
        pub(crate) fn text(&self) -> String {
            String::from_utf8_lossy(&self.0.lock().unwrap_or_else(PoisonError::into_inner)).into_owned()
        }
    }

    pub(crate) struct Writer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Writer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'w> MakeWriter<'w> for Captured {
        type Writer = Writer;

        fn make_writer(&'w self) -> Writer {
            Writer(Arc::clone(&self.0))
        }
    }

    /// Makes the JSON subscriber, at `debug` and writing into the returned buffer, this thread's
    /// default until the guard is dropped. Work on other threads is not captured: use a
    /// current-thread runtime.
    pub(crate) fn json() -> (Captured, tracing::subscriber::DefaultGuard) {
        let captured = Captured::default();
        let subscriber = super::json_subscriber(EnvFilter::new("debug"), captured.clone());
        (captured, tracing::subscriber::set_default(subscriber))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_twice_does_not_panic() {
        init(LogFormat::Json);
        init(LogFormat::Pretty);
        tracing::info!("still logging");
    }

    #[test]
    fn a_line_in_a_delivery_span_carries_the_delivery_and_its_repository() {
        let (captured, _guard) = capture::json();
        let span = delivery_span("d-1", "issue_comment");
        span.in_scope(|| tracing::info!("before the payload was read"));
        record_repo(&span, "octo/hello");
        span.in_scope(|| tracing::warn!(answer = 42, "after"));

        let before = &captured.with_message("before the payload was read")[0];
        assert_eq!(
            before["span"],
            serde_json::json!({ "name": "delivery", "delivery": "d-1", "event": "issue_comment" })
        );
        let after = &captured.with_message("after")[0];
        assert_eq!(
            after["span"],
            serde_json::json!({ "name": "delivery", "delivery": "d-1", "event": "issue_comment", "repo": "octo/hello" })
        );
        assert_eq!(after["spans"], serde_json::json!([after["span"]]));
        assert_eq!(after["fields"]["answer"], 42);
        assert_eq!(after["level"], "WARN");
    }
}
