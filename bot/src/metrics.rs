//! The server's counters and their rendering in Prometheus' text exposition format (version 0.0.4):
//! webhook deliveries, jobs by state (read from the store at scrape time), job durations, model
//! tokens and cost, and GitHub API calls with the rate limit left.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::github::ApiStatsSnapshot;
use crate::jobs::JobState;
use crate::llm::Usage;

/// The `Content-Type` of a scrape.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Upper bounds of the job duration histogram, in seconds: agent jobs take from seconds (a refusal
/// found early, an `explain`) to the 30-minute default wall-time budget and beyond.
pub const DURATION_BUCKETS: [f64; 11] = [1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0];

/// What became of a webhook request, as the `outcome` label says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DeliveryOutcome {
    /// Stored; the dispatcher will act on it.
    Accepted,
    /// A redelivery of a stored id.
    Duplicate,
    /// An event pitcrew never acts on.
    Ignored,
    Ping,
    /// Bad or missing signature.
    Unauthorized,
    TooLarge,
    /// Signed, but malformed (headers or JSON).
    BadRequest,
    /// The store could not keep it (503).
    StoreFailed,
    /// Refused unread: the bytes unverified bodies may hold at once were taken (503).
    Busy,
    /// The body did not arrive within `[server] body_timeout` (408).
    TimedOut,
}

impl DeliveryOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryOutcome::Accepted => "accepted",
            DeliveryOutcome::Duplicate => "duplicate",
            DeliveryOutcome::Ignored => "ignored",
            DeliveryOutcome::Ping => "ping",
            DeliveryOutcome::Unauthorized => "unauthorized",
            DeliveryOutcome::TooLarge => "too_large",
            DeliveryOutcome::BadRequest => "bad_request",
            DeliveryOutcome::StoreFailed => "store_failed",
            DeliveryOutcome::Busy => "busy",
            DeliveryOutcome::TimedOut => "timed_out",
        }
    }
}

/// The `event` label of a request whose signature did not check out: its `X-GitHub-Event` header is
/// anybody's to choose, and must not create label values (one time series each) at will.
pub const UNVERIFIED_EVENT: &str = "unverified";

#[derive(Debug, Clone, Default, PartialEq)]
struct Histogram {
    /// Observations at or below each bound of [`DURATION_BUCKETS`] (cumulative when rendered).
    buckets: [u64; DURATION_BUCKETS.len()],
    count: u64,
    sum: f64,
}

impl Histogram {
    fn observe(&mut self, value: f64) {
        if let Some(slot) = DURATION_BUCKETS.iter().position(|bound| value <= *bound) {
            self.buckets[slot] += 1;
        }
        self.count += 1;
        self.sum += value;
    }
}

#[derive(Debug, Default)]
struct Jobs {
    /// (kind, final state) → count.
    finished: BTreeMap<(String, &'static str), u64>,
    durations: BTreeMap<String, Histogram>,
    cost_usd: f64,
}

/// Counters shared by the webhook route, the dispatcher and the job handlers; one per server.
#[derive(Debug, Default)]
pub struct Metrics {
    /// (event, outcome) → count.
    deliveries: Mutex<BTreeMap<(String, DeliveryOutcome), u64>>,
    jobs: Mutex<Jobs>,
    input_tokens: AtomicU64,
    output_tokens: AtomicU64,
    cache_read_tokens: AtomicU64,
    cache_write_tokens: AtomicU64,
    /// Jobs whose cost is unknown (a model without a price): the cost total understates by these.
    unpriced_jobs: AtomicU64,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Metrics {
    pub fn new() -> Self {
        Metrics::default()
    }

    /// Counts one webhook request.
    pub fn record_delivery(&self, event: &str, outcome: DeliveryOutcome) {
        *lock(&self.deliveries).entry((event.to_owned(), outcome)).or_insert(0) += 1;
    }

    /// How many requests of `event` ended in `outcome` so far.
    pub fn deliveries(&self, event: &str, outcome: DeliveryOutcome) -> u64 {
        lock(&self.deliveries)
            .get(&(event.to_owned(), outcome))
            .copied()
            .unwrap_or(0)
    }

    /// Counts a job that ended: its kind (`fix`, `review`…), final state, how long it ran, the
    /// tokens it used and what they cost (`None` when the model has no known price).
    pub fn record_job(&self, kind: &str, state: JobState, duration: Duration, usage: &Usage, cost_usd: Option<f64>) {
        for (counter, tokens) in [
            (&self.input_tokens, usage.input_tokens),
            (&self.output_tokens, usage.output_tokens),
            (&self.cache_read_tokens, usage.cache_read_tokens),
            (&self.cache_write_tokens, usage.cache_write_tokens),
        ] {
            counter.fetch_add(tokens, Ordering::Relaxed);
        }
        let mut jobs = lock(&self.jobs);
        *jobs.finished.entry((kind.to_owned(), state.as_str())).or_insert(0) += 1;
        jobs.durations
            .entry(kind.to_owned())
            .or_default()
            .observe(duration.as_secs_f64());
        match cost_usd {
            // A negative or NaN cost is a bug upstream; a counter must never go down.
            Some(cost) if cost.is_finite() && cost >= 0.0 => jobs.cost_usd += cost,
            Some(_) => {}
            None => {
                self.unpriced_jobs.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The exposition: `jobs_by_state` from the store (`None` when it did not answer, and the gauge is
    /// left out), `github` from the App's shared API statistics.
    pub fn render(&self, jobs_by_state: Option<&BTreeMap<JobState, u64>>, github: Option<&ApiStatsSnapshot>) -> String {
        let mut out = String::new();

        header(
            &mut out,
            "pitcrew_webhook_deliveries_total",
            "counter",
            "Webhook requests received, by event and what became of them.",
        );
        for ((event, outcome), count) in lock(&self.deliveries).iter() {
            sample(
                &mut out,
                "pitcrew_webhook_deliveries_total",
                &[("event", event), ("outcome", outcome.as_str())],
                *count,
            );
        }

        if let Some(states) = jobs_by_state {
            header(&mut out, "pitcrew_jobs", "gauge", "Jobs in the store, by state.");
            for state in JobState::ALL {
                let count = states.get(&state).copied().unwrap_or(0);
                sample(&mut out, "pitcrew_jobs", &[("state", state.as_str())], count);
            }
        }

        let jobs = lock(&self.jobs);
        header(
            &mut out,
            "pitcrew_jobs_finished_total",
            "counter",
            "Jobs that ended in this process, by kind and final state.",
        );
        for ((kind, state), count) in &jobs.finished {
            sample(
                &mut out,
                "pitcrew_jobs_finished_total",
                &[("kind", kind), ("state", state)],
                *count,
            );
        }
        header(
            &mut out,
            "pitcrew_job_duration_seconds",
            "histogram",
            "How long jobs ran, by kind.",
        );
        for (kind, histogram) in &jobs.durations {
            let mut cumulative = 0;
            for (bound, count) in DURATION_BUCKETS.iter().zip(histogram.buckets) {
                cumulative += count;
                sample(
                    &mut out,
                    "pitcrew_job_duration_seconds_bucket",
                    &[("kind", kind), ("le", &float(*bound))],
                    cumulative,
                );
            }
            sample(
                &mut out,
                "pitcrew_job_duration_seconds_bucket",
                &[("kind", kind), ("le", "+Inf")],
                histogram.count,
            );
            sample(
                &mut out,
                "pitcrew_job_duration_seconds_sum",
                &[("kind", kind)],
                float(histogram.sum),
            );
            sample(
                &mut out,
                "pitcrew_job_duration_seconds_count",
                &[("kind", kind)],
                histogram.count,
            );
        }

        header(
            &mut out,
            "pitcrew_model_tokens_total",
            "counter",
            "Model tokens used by finished jobs, by type.",
        );
        for (kind, counter) in [
            ("input", &self.input_tokens),
            ("output", &self.output_tokens),
            ("cache_read", &self.cache_read_tokens),
            ("cache_write", &self.cache_write_tokens),
        ] {
            sample(
                &mut out,
                "pitcrew_model_tokens_total",
                &[("type", kind)],
                counter.load(Ordering::Relaxed),
            );
        }
        header(
            &mut out,
            "pitcrew_model_cost_usd_total",
            "counter",
            "What finished jobs cost in USD, for models with a known price.",
        );
        sample(&mut out, "pitcrew_model_cost_usd_total", &[], float(jobs.cost_usd));
        drop(jobs);
        header(
            &mut out,
            "pitcrew_model_unpriced_jobs_total",
            "counter",
            "Finished jobs whose model has no known price (not in the cost total).",
        );
        sample(
            &mut out,
            "pitcrew_model_unpriced_jobs_total",
            &[],
            self.unpriced_jobs.load(Ordering::Relaxed),
        );

        if let Some(github) = github {
            header(
                &mut out,
                "pitcrew_github_api_calls_total",
                "counter",
                "GitHub API requests, retries included, by response status class.",
            );
            for (index, count) in github.calls_by_class.iter().enumerate() {
                let class = format!("{}xx", index + 1);
                sample(&mut out, "pitcrew_github_api_calls_total", &[("class", &class)], *count);
            }
            sample(
                &mut out,
                "pitcrew_github_api_calls_total",
                &[("class", "transport_error")],
                github.transport_errors,
            );
            if let Some(remaining) = github.rate_limit_remaining {
                header(
                    &mut out,
                    "pitcrew_github_rate_limit_remaining",
                    "gauge",
                    "Requests left in GitHub's rate limit window, as its latest response said.",
                );
                sample(&mut out, "pitcrew_github_rate_limit_remaining", &[], remaining);
            }
        }
        out
    }
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {}", escape_help(help));
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn sample(out: &mut String, name: &str, labels: &[(&str, &str)], value: impl std::fmt::Display) {
    out.push_str(name);
    if !labels.is_empty() {
        out.push('{');
        for (i, (label, text)) in labels.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "{label}=\"{}\"", escape_label(text));
        }
        out.push('}');
    }
    let _ = writeln!(out, " {value}");
}

/// A float as Prometheus reads it (`+Inf`, `-Inf`, `NaN` spelled its way).
fn float(value: f64) -> String {
    if value.is_nan() {
        "NaN".to_owned()
    } else if value.is_infinite() {
        if value > 0.0 { "+Inf" } else { "-Inf" }.to_owned()
    } else {
        format!("{value}")
    }
}

/// Label values escape backslash, double quote and line feed.
fn escape_label(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// HELP text escapes backslash and line feed only.
fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn an_empty_registry_still_names_every_family() {
        let text = Metrics::new().render(None, None);
        insta::assert_snapshot!(text, @r#"
        # HELP pitcrew_webhook_deliveries_total Webhook requests received, by event and what became of them.
        # TYPE pitcrew_webhook_deliveries_total counter
        # HELP pitcrew_jobs_finished_total Jobs that ended in this process, by kind and final state.
        # TYPE pitcrew_jobs_finished_total counter
        # HELP pitcrew_job_duration_seconds How long jobs ran, by kind.
        # TYPE pitcrew_job_duration_seconds histogram
        # HELP pitcrew_model_tokens_total Model tokens used by finished jobs, by type.
        # TYPE pitcrew_model_tokens_total counter
        pitcrew_model_tokens_total{type="input"} 0
        pitcrew_model_tokens_total{type="output"} 0
        pitcrew_model_tokens_total{type="cache_read"} 0
        pitcrew_model_tokens_total{type="cache_write"} 0
        # HELP pitcrew_model_cost_usd_total What finished jobs cost in USD, for models with a known price.
        # TYPE pitcrew_model_cost_usd_total counter
        pitcrew_model_cost_usd_total 0
        # HELP pitcrew_model_unpriced_jobs_total Finished jobs whose model has no known price (not in the cost total).
        # TYPE pitcrew_model_unpriced_jobs_total counter
        pitcrew_model_unpriced_jobs_total 0
        "#);
    }

    #[test]
    fn everything_recorded_is_rendered() {
        let metrics = Metrics::new();
        metrics.record_delivery("issue_comment", DeliveryOutcome::Accepted);
        metrics.record_delivery("issue_comment", DeliveryOutcome::Accepted);
        metrics.record_delivery("issue_comment", DeliveryOutcome::Duplicate);
        metrics.record_delivery(UNVERIFIED_EVENT, DeliveryOutcome::Unauthorized);
        let usage = Usage {
            input_tokens: 1200,
            output_tokens: 300,
            cache_read_tokens: 5000,
            cache_write_tokens: 800,
            reasoning_tokens: 100,
        };
        metrics.record_job(
            "fix",
            JobState::Succeeded,
            Duration::from_millis(42_500),
            &usage,
            Some(0.125),
        );
        metrics.record_job(
            "fix",
            JobState::Failed,
            Duration::from_secs(4000),
            &Usage::default(),
            Some(0.25),
        );
        metrics.record_job("review", JobState::Cancelled, Duration::from_secs(1), &usage, None);
        let states = BTreeMap::from([(JobState::Queued, 2), (JobState::Running, 1)]);
        let github = ApiStatsSnapshot {
            calls_total: 13,
            calls_by_class: [0, 10, 0, 2, 1],
            transport_errors: 1,
            rate_limit_remaining: Some(4987),
            rate_limit_limit: Some(5000),
            rate_limit_reset: Some(1_700_000_000),
        };
        insta::assert_snapshot!(metrics.render(Some(&states), Some(&github)), @r#"
        # HELP pitcrew_webhook_deliveries_total Webhook requests received, by event and what became of them.
        # TYPE pitcrew_webhook_deliveries_total counter
        pitcrew_webhook_deliveries_total{event="issue_comment",outcome="accepted"} 2
        pitcrew_webhook_deliveries_total{event="issue_comment",outcome="duplicate"} 1
        pitcrew_webhook_deliveries_total{event="unverified",outcome="unauthorized"} 1
        # HELP pitcrew_jobs Jobs in the store, by state.
        # TYPE pitcrew_jobs gauge
        pitcrew_jobs{state="queued"} 2
        pitcrew_jobs{state="running"} 1
        pitcrew_jobs{state="succeeded"} 0
        pitcrew_jobs{state="failed"} 0
        pitcrew_jobs{state="cancelled"} 0
        # HELP pitcrew_jobs_finished_total Jobs that ended in this process, by kind and final state.
        # TYPE pitcrew_jobs_finished_total counter
        pitcrew_jobs_finished_total{kind="fix",state="failed"} 1
        pitcrew_jobs_finished_total{kind="fix",state="succeeded"} 1
        pitcrew_jobs_finished_total{kind="review",state="cancelled"} 1
        # HELP pitcrew_job_duration_seconds How long jobs ran, by kind.
        # TYPE pitcrew_job_duration_seconds histogram
        pitcrew_job_duration_seconds_bucket{kind="fix",le="1"} 0
        pitcrew_job_duration_seconds_bucket{kind="fix",le="5"} 0
        pitcrew_job_duration_seconds_bucket{kind="fix",le="15"} 0
        pitcrew_job_duration_seconds_bucket{kind="fix",le="30"} 0
        pitcrew_job_duration_seconds_bucket{kind="fix",le="60"} 1
        pitcrew_job_duration_seconds_bucket{kind="fix",le="120"} 1
        pitcrew_job_duration_seconds_bucket{kind="fix",le="300"} 1
        pitcrew_job_duration_seconds_bucket{kind="fix",le="600"} 1
        pitcrew_job_duration_seconds_bucket{kind="fix",le="1200"} 1
        pitcrew_job_duration_seconds_bucket{kind="fix",le="1800"} 1
        pitcrew_job_duration_seconds_bucket{kind="fix",le="3600"} 1
        pitcrew_job_duration_seconds_bucket{kind="fix",le="+Inf"} 2
        pitcrew_job_duration_seconds_sum{kind="fix"} 4042.5
        pitcrew_job_duration_seconds_count{kind="fix"} 2
        pitcrew_job_duration_seconds_bucket{kind="review",le="1"} 1
        pitcrew_job_duration_seconds_bucket{kind="review",le="5"} 1
        pitcrew_job_duration_seconds_bucket{kind="review",le="15"} 1
        pitcrew_job_duration_seconds_bucket{kind="review",le="30"} 1
        pitcrew_job_duration_seconds_bucket{kind="review",le="60"} 1
        pitcrew_job_duration_seconds_bucket{kind="review",le="120"} 1
        pitcrew_job_duration_seconds_bucket{kind="review",le="300"} 1
        pitcrew_job_duration_seconds_bucket{kind="review",le="600"} 1
        pitcrew_job_duration_seconds_bucket{kind="review",le="1200"} 1
        pitcrew_job_duration_seconds_bucket{kind="review",le="1800"} 1
        pitcrew_job_duration_seconds_bucket{kind="review",le="3600"} 1
        pitcrew_job_duration_seconds_bucket{kind="review",le="+Inf"} 1
        pitcrew_job_duration_seconds_sum{kind="review"} 1
        pitcrew_job_duration_seconds_count{kind="review"} 1
        # HELP pitcrew_model_tokens_total Model tokens used by finished jobs, by type.
        # TYPE pitcrew_model_tokens_total counter
        pitcrew_model_tokens_total{type="input"} 2400
        pitcrew_model_tokens_total{type="output"} 600
        pitcrew_model_tokens_total{type="cache_read"} 10000
        pitcrew_model_tokens_total{type="cache_write"} 1600
        # HELP pitcrew_model_cost_usd_total What finished jobs cost in USD, for models with a known price.
        # TYPE pitcrew_model_cost_usd_total counter
        pitcrew_model_cost_usd_total 0.375
        # HELP pitcrew_model_unpriced_jobs_total Finished jobs whose model has no known price (not in the cost total).
        # TYPE pitcrew_model_unpriced_jobs_total counter
        pitcrew_model_unpriced_jobs_total 1
        # HELP pitcrew_github_api_calls_total GitHub API requests, retries included, by response status class.
        # TYPE pitcrew_github_api_calls_total counter
        pitcrew_github_api_calls_total{class="1xx"} 0
        pitcrew_github_api_calls_total{class="2xx"} 10
        pitcrew_github_api_calls_total{class="3xx"} 0
        pitcrew_github_api_calls_total{class="4xx"} 2
        pitcrew_github_api_calls_total{class="5xx"} 1
        pitcrew_github_api_calls_total{class="transport_error"} 1
        # HELP pitcrew_github_rate_limit_remaining Requests left in GitHub's rate limit window, as its latest response said.
        # TYPE pitcrew_github_rate_limit_remaining gauge
        pitcrew_github_rate_limit_remaining 4987
        "#);
    }

    #[test]
    fn label_values_and_help_are_escaped() {
        let metrics = Metrics::new();
        metrics.record_delivery("we\"ird\\ev\nent", DeliveryOutcome::Ignored);
        let text = metrics.render(None, None);
        let line = text.lines().find(|l| l.contains("outcome=\"ignored\"")).unwrap();
        assert_eq!(
            line,
            r#"pitcrew_webhook_deliveries_total{event="we\"ird\\ev\nent",outcome="ignored"} 1"#
        );
        assert_eq!(escape_help("a\\b\nc"), "a\\\\b\\nc");
        assert_eq!(float(f64::INFINITY), "+Inf");
        assert_eq!(float(f64::NAN), "NaN");
        assert_eq!(float(0.5), "0.5");
    }

    #[test]
    fn a_bad_cost_never_makes_the_counter_go_down() {
        let metrics = Metrics::new();
        metrics.record_job(
            "fix",
            JobState::Succeeded,
            Duration::ZERO,
            &Usage::default(),
            Some(-3.0),
        );
        metrics.record_job(
            "fix",
            JobState::Succeeded,
            Duration::ZERO,
            &Usage::default(),
            Some(f64::NAN),
        );
        assert!(
            metrics
                .render(None, None)
                .contains("\npitcrew_model_cost_usd_total 0\n")
        );
    }
}
