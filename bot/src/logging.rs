//! Logging setup: one `tracing` subscriber writing to stderr, filtered by `RUST_LOG` (default `info`),
//! as human-readable lines or as JSON for servers and log collectors.

use tracing_subscriber::EnvFilter;

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
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        // The Actions runner uploads this log to GitHub: it passes the secret filter.
        .with_writer(|| crate::redact::Redacting(std::io::stderr()));
    let installed = match format {
        LogFormat::Pretty => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init(),
        LogFormat::Json => builder.json().with_ansi(false).try_init(),
    }
    .is_ok();
    if installed && let Some((value, error)) = bad_filter {
        tracing::warn!(rust_log = %value, %error, "ignoring invalid RUST_LOG; logging at info");
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
}
