//! The HTTP transport to GitHub's REST API: base URL joining (api.github.com or a GitHub Enterprise
//! Server `…/api/v3`, and the GraphQL endpoint beside either), the request headers, retries on rate
//! limits (primary and secondary) and server errors, error mapping and call statistics. It sends
//! with whatever token it is handed: who the token belongs to is `client.rs`'s and `app.rs`'s
//! business.
//!
//! Tokens travel only in the `Authorization` header (marked sensitive); they are never part of a URL,
//! an error or a log line. Where GitHub redirects to a signed URL off its API (job logs), the
//! transport does not follow the redirect with the token: the caller reads the `Location` itself and
//! fetches it with no credentials at all ([`Http::get_unauthenticated`]).

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use reqwest::redirect::Policy;
use reqwest::{Method, StatusCode};
use secrecy::{ExposeSecret, SecretString};
use serde::de::DeserializeOwned;
use url::Url;

use super::error::{ErrorBody, GithubError};
use crate::backoff::{self, Jitter};

/// The REST API version every request pins.
const API_VERSION: &str = "2022-11-28";

/// What the client knows the time to be; tests substitute a clock they move by hand.
pub trait Clock: Send + Sync + fmt::Debug {
    fn now(&self) -> SystemTime;
}

/// The machine's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// How the client waits between attempts; tests substitute one that records the waits and returns.
pub trait Sleeper: Send + Sync + fmt::Debug {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
}

/// Waits on tokio's timer.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioSleeper;

impl Sleeper for TokioSleeper {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(tokio::time::sleep(duration))
    }
}

/// When and how long to retry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included; at least 1.
    pub max_attempts: u32,
    /// The backoff ceiling of the first retry after a server or transport error; it doubles per retry.
    pub base_delay: Duration,
    /// No computed backoff is longer than this.
    pub max_backoff: Duration,
    /// The longest single wait the client accepts, rate limits included; a longer one returns
    /// [`GithubError::RateLimited`] at once, so the caller decides (a job may rather fail than idle
    /// for the rest of the hour).
    pub max_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_secs(1),
            max_backoff: Duration::from_secs(30),
            max_wait: Duration::from_secs(120),
        }
    }
}

impl RetryPolicy {
    /// The jittered backoff before retry number `retry` (1-based).
    fn backoff(&self, retry: u32) -> Duration {
        // Full jitter: many workers hit by the same outage should not come back in lockstep.
        backoff::delay(self.base_delay, self.max_backoff, retry, Jitter::Full)
    }
}

/// Counters of API calls for `/metrics`, shared by every client of one process.
#[derive(Debug)]
pub struct ApiStats {
    calls_total: AtomicU64,
    /// By status class: 1xx … 5xx.
    calls_by_class: [AtomicU64; 5],
    transport_errors: AtomicU64,
    /// -1 until a response carried the header.
    rate_limit_remaining: AtomicI64,
    rate_limit_limit: AtomicI64,
    rate_limit_reset: AtomicI64,
}

impl Default for ApiStats {
    fn default() -> Self {
        ApiStats {
            calls_total: AtomicU64::new(0),
            calls_by_class: Default::default(),
            transport_errors: AtomicU64::new(0),
            rate_limit_remaining: AtomicI64::new(-1),
            rate_limit_limit: AtomicI64::new(-1),
            rate_limit_reset: AtomicI64::new(-1),
        }
    }
}

/// A copy of [`ApiStats`] at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ApiStatsSnapshot {
    /// HTTP requests sent, retries included.
    pub calls_total: u64,
    /// Responses by status class: index 0 is 1xx, 4 is 5xx.
    pub calls_by_class: [u64; 5],
    /// Requests that got no response.
    pub transport_errors: u64,
    /// The last `x-ratelimit-remaining`, `x-ratelimit-limit` and `x-ratelimit-reset` (epoch seconds).
    pub rate_limit_remaining: Option<u64>,
    pub rate_limit_limit: Option<u64>,
    pub rate_limit_reset: Option<u64>,
}

impl ApiStats {
    pub fn snapshot(&self) -> ApiStatsSnapshot {
        let known = |value: &AtomicI64| u64::try_from(value.load(Ordering::Relaxed)).ok();
        ApiStatsSnapshot {
            calls_total: self.calls_total.load(Ordering::Relaxed),
            calls_by_class: std::array::from_fn(|i| self.calls_by_class[i].load(Ordering::Relaxed)),
            transport_errors: self.transport_errors.load(Ordering::Relaxed),
            rate_limit_remaining: known(&self.rate_limit_remaining),
            rate_limit_limit: known(&self.rate_limit_limit),
            rate_limit_reset: known(&self.rate_limit_reset),
        }
    }

    fn record_response(&self, status: StatusCode, headers: &HeaderMap) {
        self.calls_total.fetch_add(1, Ordering::Relaxed);
        let class = usize::from(status.as_u16() / 100).clamp(1, 5) - 1;
        self.calls_by_class[class].fetch_add(1, Ordering::Relaxed);
        for (name, slot) in [
            ("x-ratelimit-remaining", &self.rate_limit_remaining),
            ("x-ratelimit-limit", &self.rate_limit_limit),
            ("x-ratelimit-reset", &self.rate_limit_reset),
        ] {
            if let Some(value) = header_number(headers, name).and_then(|v| i64::try_from(v).ok()) {
                slot.store(value, Ordering::Relaxed);
            }
        }
    }

    fn record_transport_error(&self) {
        self.calls_total.fetch_add(1, Ordering::Relaxed);
        self.transport_errors.fetch_add(1, Ordering::Relaxed);
    }
}

/// Everything about a client but its base URL and credentials.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    pub retry: RetryPolicy,
    /// Until the whole response has arrived.
    pub request_timeout: Duration,
    pub connect_timeout: Duration,
    pub clock: Arc<dyn Clock>,
    pub sleeper: Arc<dyn Sleeper>,
    pub stats: Arc<ApiStats>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            retry: RetryPolicy::default(),
            request_timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(15),
            clock: Arc::new(SystemClock),
            sleeper: Arc::new(TokioSleeper),
            stats: Arc::new(ApiStats::default()),
        }
    }
}

/// One API request: method, path segments below the base URL, query.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    pub method: Method,
    pub segments: Vec<String>,
    /// Names are ours, or copied from a next-page link GitHub sent (`paging`).
    pub query: Vec<(Cow<'static, str>, String)>,
    pub api: Api,
}

/// Which of GitHub's APIs a request goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    /// REST: the segments are below the base URL.
    Rest,
    /// GraphQL's one endpoint ([`Http::graphql_url`]); every operation is a POST. A query only
    /// reads, so it may be sent again like a GET; a mutation may not.
    Graphql { read_only: bool },
}

impl Endpoint {
    pub fn new(method: Method, segments: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Endpoint {
            method,
            segments: segments.into_iter().map(Into::into).collect(),
            query: Vec::new(),
            api: Api::Rest,
        }
    }

    /// `POST /graphql`, for a query (`read_only`) or a mutation.
    pub fn graphql(read_only: bool) -> Self {
        Endpoint {
            api: Api::Graphql { read_only },
            ..Endpoint::new(Method::POST, ["graphql"])
        }
    }

    /// Whether a request that may have reached GitHub can be sent again: anything but a POST, or
    /// a GraphQL query. A second comment or check run is worse than an error.
    fn resendable(&self) -> bool {
        match self.api {
            Api::Rest => self.method != Method::POST,
            Api::Graphql { read_only } => read_only,
        }
    }

    pub fn query(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.query.push((Cow::Borrowed(name), value.into()));
        self
    }
}

/// `POST /repos/o/r/check-runs`: the API path, whatever the base URL's own prefix.
impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} /{}", self.method, self.segments.join("/"))
    }
}

/// A successful response (or, with [`Redirects::Return`], a redirection), read whole.
#[derive(Debug)]
pub(crate) struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: bytes::Bytes,
}

impl Reply {
    pub fn json<T: DeserializeOwned>(&self, endpoint: &Endpoint) -> Result<T, GithubError> {
        serde_json::from_slice(&self.body).map_err(|err| GithubError::Decode {
            what: endpoint.to_string(),
            message: err.to_string(),
        })
    }
}

/// What a request does with a 3xx answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Redirects {
    /// reqwest follows up to five redirects, and drops the `Authorization` header when one leaves
    /// the host (or port): GitHub's answer for a renamed or transferred repository.
    Follow,
    /// The 3xx answer is returned as it is: for a redirect to a signed URL that must not see the
    /// token, even on the same host.
    Return,
}

/// The HTTP machinery shared by a `GithubClient` and an `AppAuth`: one connection pool, one policy.
#[derive(Debug, Clone)]
pub(crate) struct Http {
    client: reqwest::Client,
    /// The same settings, but redirects are answers: [`Redirects::Return`].
    no_redirects: reqwest::Client,
    base: Url,
    pub options: ClientOptions,
}

/// What a failed attempt means for the next one.
enum Verdict {
    Retry(Duration),
    RateLimited(Duration),
    Fail(GithubError),
}

impl Http {
    pub fn new(api_url: &Url, options: ClientOptions) -> Result<Self, GithubError> {
        let build = |redirects: Policy| {
            reqwest::Client::builder()
                .user_agent(concat!("pitcrew/", env!("CARGO_PKG_VERSION")))
                .timeout(options.request_timeout)
                .connect_timeout(options.connect_timeout)
                .redirect(redirects)
                .build()
                .map_err(|err| GithubError::Transport {
                    request: "building the GitHub HTTP client".to_owned(),
                    message: crate::net::describe(&err),
                })
        };
        // GitHub redirects requests for renamed or transferred repositories; reqwest follows and
        // drops the `Authorization` header if a redirect leaves the host or port (not otherwise).
        let client = build(Policy::limited(5))?;
        let no_redirects = build(Policy::none())?;
        if api_url.cannot_be_a_base() || !matches!(api_url.scheme(), "http" | "https") {
            return Err(GithubError::InvalidInput {
                what: "the GitHub API URL".to_owned(),
                message: format!("{api_url} is not an http(s) URL"),
            });
        }
        let mut base = api_url.clone();
        base.set_query(None);
        base.set_fragment(None);
        Ok(Http {
            client,
            no_redirects,
            base,
            options,
        })
    }

    pub fn base(&self) -> &Url {
        &self.base
    }

    /// The endpoint's URL: its segments appended (each percent-encoded) to the base URL's path, so a
    /// GitHub Enterprise Server base such as `https://ghe.example/api/v3` keeps its prefix; a
    /// GraphQL endpoint's is [`Http::graphql_url`].
    pub fn url(&self, endpoint: &Endpoint) -> Url {
        if let Api::Graphql { .. } = endpoint.api {
            return self.graphql_url();
        }
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(&endpoint.segments);
        }
        if !endpoint.query.is_empty() {
            url.query_pairs_mut().extend_pairs(&endpoint.query);
        }
        url
    }

    /// GitHub's GraphQL endpoint: `/graphql` below the REST base URL (`https://api.github.com/graphql`),
    /// but beside a GitHub Enterprise Server's `…/api/v3`: `https://ghe.example/api/graphql`.
    pub fn graphql_url(&self) -> Url {
        let mut segments: Vec<String> = self
            .base
            .path_segments()
            .map(|s| s.filter(|s| !s.is_empty()).map(str::to_owned).collect())
            .unwrap_or_default();
        if segments.ends_with(&["api".to_owned(), "v3".to_owned()]) {
            segments.pop();
        }
        segments.push("graphql".to_owned());
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.clear().extend(&segments);
        }
        url
    }

    /// Sends the request, retrying as the policy allows; returns a successful response or the mapped
    /// error of the last attempt. Redirects are followed.
    pub async fn send(
        &self,
        endpoint: &Endpoint,
        body: Option<&serde_json::Value>,
        token: &SecretString,
    ) -> Result<Reply, GithubError> {
        self.send_with(endpoint, body, token, Redirects::Follow).await
    }

    /// [`Http::send`], with a choice of what a 3xx answer does: with [`Redirects::Return`] it is
    /// returned like a success.
    pub async fn send_with(
        &self,
        endpoint: &Endpoint,
        body: Option<&serde_json::Value>,
        token: &SecretString,
        redirects: Redirects,
    ) -> Result<Reply, GithubError> {
        self.send_as(endpoint, body, Some(token), redirects).await
    }

    /// [`Http::send`] with no `Authorization` header: for the few operations that take none
    /// (`POST /app-manifests/{code}/conversions`, whose code is the credential).
    pub async fn send_anonymous(
        &self,
        endpoint: &Endpoint,
        body: Option<&serde_json::Value>,
    ) -> Result<Reply, GithubError> {
        self.send_as(endpoint, body, None, Redirects::Follow).await
    }

    async fn send_as(
        &self,
        endpoint: &Endpoint,
        body: Option<&serde_json::Value>,
        token: Option<&SecretString>,
        redirects: Redirects,
    ) -> Result<Reply, GithubError> {
        let client = match redirects {
            Redirects::Follow => &self.client,
            Redirects::Return => &self.no_redirects,
        };
        let request = endpoint.to_string();
        // The URL builder drops `.` and `..` segments, and an empty one is a missing id or name:
        // either would send the token to another path than the one asked for.
        if endpoint.segments.iter().any(|s| matches!(s.as_str(), "" | "." | "..")) {
            return Err(GithubError::InvalidInput {
                what: request,
                message: "the path has an empty, `.` or `..` segment".to_owned(),
            });
        }
        let url = self.url(endpoint);
        let authorization = token
            .map(|token| {
                let mut value = HeaderValue::from_str(&format!("Bearer {}", token.expose_secret())).map_err(|_| {
                    GithubError::InvalidInput {
                        what: request.clone(),
                        message: "the token holds characters that cannot be sent in a header".to_owned(),
                    }
                })?;
                value.set_sensitive(true);
                Ok::<_, GithubError>(value)
            })
            .transpose()?;
        // Every write to GitHub passes the secret filter here, where its body is serialised.
        let body = body
            .map(|body| {
                let mut body = body.clone();
                let withheld = crate::redact::redact_json(&mut body);
                if withheld > 0 {
                    tracing::warn!(%endpoint, withheld, "secrets withheld from a GitHub request body");
                }
                serde_json::to_vec(&body)
            })
            .transpose()
            .map_err(|err| GithubError::InvalidInput {
                what: request.clone(),
                message: format!("encoding the request body: {err}"),
            })?;
        let policy = &self.options.retry;
        let mut attempt = 1;
        loop {
            let mut builder = client
                .request(endpoint.method.clone(), url.clone())
                .header(ACCEPT, "application/vnd.github+json")
                .header("x-github-api-version", API_VERSION);
            if let Some(authorization) = &authorization {
                builder = builder.header(AUTHORIZATION, authorization.clone());
            }
            if let Some(body) = &body {
                builder = builder.header(CONTENT_TYPE, "application/json").body(body.clone());
            }
            let verdict = match builder.send().await {
                Err(err) => {
                    self.options.stats.record_transport_error();
                    let message = crate::net::describe_with_hint(&err);
                    // A POST that may have reached GitHub is not resent (a GraphQL query aside): a
                    // second comment or check run is worse than an error. One that never connected
                    // is safe to retry.
                    if (!endpoint.resendable() && !err.is_connect()) || attempt >= policy.max_attempts {
                        Verdict::Fail(GithubError::Transport {
                            request: request.clone(),
                            message,
                        })
                    } else {
                        tracing::info!(%endpoint, attempt, error = %message, "GitHub request failed; retrying");
                        Verdict::Retry(policy.backoff(attempt))
                    }
                }
                Ok(response) => {
                    let status = response.status();
                    let headers = response.headers().clone();
                    self.options.stats.record_response(status, &headers);
                    let bytes = response.bytes().await.map_err(|err| GithubError::Transport {
                        request: request.clone(),
                        message: format!("reading the response: {}", crate::net::describe_with_hint(&err)),
                    })?;
                    if status.is_success() || (redirects == Redirects::Return && status.is_redirection()) {
                        return Ok(Reply {
                            status,
                            headers,
                            body: bytes,
                        });
                    }
                    let text = String::from_utf8_lossy(&bytes);
                    self.judge(&request, status, &headers, &text, attempt)
                }
            };
            let wait = match verdict {
                Verdict::Fail(error) => return Err(error),
                // Backoff is never a reason to give up: it is capped by the longest wait instead.
                Verdict::Retry(wait) => wait.min(policy.max_wait),
                Verdict::RateLimited(wait) => {
                    if wait > policy.max_wait || attempt >= policy.max_attempts {
                        return Err(GithubError::RateLimited {
                            request,
                            reset_at: Some(self.options.clock.now() + wait),
                        });
                    }
                    tracing::warn!(%endpoint, attempt, wait_s = wait.as_secs_f64(), "GitHub rate limit; waiting");
                    wait
                }
            };
            self.options.sleeper.sleep(wait).await;
            attempt += 1;
        }
    }

    /// GETs `url` with no credentials at all (a signed URL GitHub redirected to, on its storage),
    /// handing the body to `sink` chunk by chunk as it arrives. Redirects from there are followed
    /// (there is no token to lose). A failure to connect and a 5xx are retried as the policy
    /// allows; a body cut off halfway is not (`sink` has had part of it). `request` names the
    /// request in errors: the URL never appears, its query is a credential.
    pub async fn get_unauthenticated(
        &self,
        url: &Url,
        request: &str,
        sink: &mut (dyn FnMut(&[u8]) + Send),
    ) -> Result<(), GithubError> {
        let policy = &self.options.retry;
        let mut attempt = 1;
        let mut response = loop {
            let retry = match self.client.get(url.clone()).send().await {
                Err(err) => {
                    let message = crate::net::describe_with_hint(&err);
                    if attempt >= policy.max_attempts {
                        return Err(GithubError::Transport {
                            request: request.to_owned(),
                            message,
                        });
                    }
                    tracing::info!(request, attempt, error = %message, "signed download failed; retrying");
                    policy.backoff(attempt)
                }
                Ok(response) if response.status().is_success() => break response,
                Ok(response) => {
                    let status = response.status();
                    if !status.is_server_error() || attempt >= policy.max_attempts {
                        // The storage's error body is not GitHub's and may quote the URL: only the
                        // status is kept.
                        return Err(match status.as_u16() {
                            404 => GithubError::NotFound {
                                what: request.to_owned(),
                            },
                            code if status.is_server_error() => GithubError::Server {
                                request: request.to_owned(),
                                status: code,
                            },
                            code => GithubError::Status {
                                request: request.to_owned(),
                                status: code,
                                message: status.canonical_reason().unwrap_or("error").to_owned(),
                            },
                        });
                    }
                    tracing::info!(
                        request,
                        attempt,
                        status = status.as_u16(),
                        "signed download failed; retrying"
                    );
                    policy.backoff(attempt)
                }
            };
            self.options.sleeper.sleep(retry.min(policy.max_wait)).await;
            attempt += 1;
        };
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => sink(&chunk),
                Ok(None) => return Ok(()),
                Err(err) => {
                    return Err(GithubError::Transport {
                        request: request.to_owned(),
                        message: format!("reading the response: {}", crate::net::describe_with_hint(&err)),
                    });
                }
            }
        }
    }

    /// Classifies an unsuccessful response (GitHub's "Best practices for using the REST API" and
    /// "Rate limits" pages): a secondary limit says `retry-after` or names itself in the body, a
    /// primary one has `x-ratelimit-remaining: 0`; 5xx are retried with backoff; the rest are final.
    fn judge(&self, request: &str, status: StatusCode, headers: &HeaderMap, text: &str, attempt: u32) -> Verdict {
        let policy = &self.options.retry;
        let body = ErrorBody::parse(text);
        let code = status.as_u16();
        if code == 403 || code == 429 {
            let secondary = body.message.to_ascii_lowercase().contains("secondary rate limit");
            if let Some(wait) = header_number(headers, "retry-after") {
                return Verdict::RateLimited(Duration::from_secs(wait));
            }
            if header_number(headers, "x-ratelimit-remaining") == Some(0) {
                let now = self.options.clock.now().duration_since(UNIX_EPOCH).unwrap_or_default();
                let reset = header_number(headers, "x-ratelimit-reset").map(Duration::from_secs);
                // The reset instant is in whole seconds: one more avoids arriving just before it.
                let wait = reset.map_or(Duration::from_secs(60), |reset| {
                    reset.saturating_sub(now) + Duration::from_secs(1)
                });
                return Verdict::RateLimited(wait);
            }
            if secondary || code == 429 {
                // No hint: the docs say to wait at least a minute.
                return Verdict::RateLimited(Duration::from_secs(60));
            }
        }
        if status.is_server_error() {
            if attempt >= policy.max_attempts {
                return Verdict::Fail(GithubError::Server {
                    request: request.to_owned(),
                    status: code,
                });
            }
            tracing::info!(request, attempt, status = code, "GitHub server error; retrying");
            return Verdict::Retry(policy.backoff(attempt));
        }
        let request = request.to_owned();
        Verdict::Fail(match code {
            401 => GithubError::Unauthorized { request },
            403 => GithubError::Forbidden {
                request,
                message: body.message,
            },
            404 => GithubError::NotFound { what: request },
            422 => GithubError::Validation {
                request,
                message: body.message,
                errors: body.errors,
            },
            _ => GithubError::Status {
                request,
                status: code,
                message: body.message,
            },
        })
    }
}

fn header_number(headers: &HeaderMap, name: &str) -> Option<u64> {
    headers.get(name)?.to_str().ok()?.trim().parse().ok()
}
