//! The HTTP routes: `POST /webhook` (or `[server] webhook_path`: size limit, signature, parse,
//! persist, answer — all the work happens later, in the dispatcher), `GET /` (the status page),
//! `GET /healthz` and `GET /metrics`.
//!
//! A webhook body is read before anyone knows who sent it, so its reading is bounded three ways: its
//! size (`max_body`), its time (`body_timeout`), and the bytes all unverified bodies may hold at once
//! (`unverified`, a semaphore of bytes): past that the route answers 503 rather than buffer more. The
//! HMAC is computed as the bytes arrive, so a verified body is never read twice.
//!
//! Every route runs in a span naming the request's method and path (not its headers: the signature
//! is one), a verified delivery's answer in the delivery's span, and a handler's panic answers 500.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use futures_util::StreamExt;
use secrecy::SecretString;
use serde_json::{Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::TraceLayer;
use tracing::Instrument as _;

use super::signature::Verifier;
use super::status::{Status, app_slug};
use super::webhook::{Delivery, Rejection, check_declared_size, content_length, parse_verified, signature_header};
use crate::github::ApiStats;
use crate::intake::Inbox;
use crate::jobs::{DeliveryId, JobStore, Recorded, now_ms};
use crate::logging;
use crate::metrics::{self, DeliveryOutcome, Metrics, UNVERIFIED_EVENT};
use crate::triggers::HANDLED_EVENTS;

/// How long `/healthz` and `/metrics` wait for the store before answering without it: a probe
/// must answer, and a store that takes this long is not healthy.
const STORE_PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// What the routes share.
pub struct ServerState {
    pub store: Arc<dyn JobStore>,
    pub secret: SecretString,
    /// The largest body accepted, in bytes.
    pub max_body: usize,
    /// The bytes that bodies not yet verified may hold in memory at once, all requests together.
    pub unverified: Arc<Semaphore>,
    /// How long a webhook body may take to arrive, from the end of its headers.
    pub body_timeout: Duration,
    pub metrics: Arc<Metrics>,
    /// Where a delivery is read into its event and handed to the dispatcher once stored.
    pub inbox: Arc<Inbox>,
    /// The GitHub App's API statistics, for `/metrics`.
    pub github_stats: Option<Arc<ApiStats>>,
    /// Where GitHub delivers (`[server] webhook_path`).
    pub webhook_path: String,
    /// The App's bot account (`[github] bot_name`), for the status page.
    pub bot_login: String,
    /// When the server started, for the status page's uptime.
    pub started: std::time::Instant,
}

impl std::fmt::Debug for ServerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerState")
            .field("max_body", &self.max_body)
            .field("unverified_available", &self.unverified.available_permits())
            .field("body_timeout", &self.body_timeout)
            .field("secret", &"<redacted>")
            .finish_non_exhaustive()
    }
}

/// The server's routes.
pub fn router(state: Arc<ServerState>) -> Router {
    let webhook_path = state.webhook_path.clone();
    let routes = Router::new()
        .route("/", get(status))
        .route(
            &webhook_path,
            // Our limit is `max_body`, enforced while reading; axum's 2 MB default would refuse real
            // deliveries (GitHub sends up to 25 MB).
            post(webhook).layer(DefaultBodyLimit::disable()),
        )
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .with_state(state);
    edge(routes)
}

/// What every route runs under: a span per request with its method and path — never its headers
/// (the webhook's signature is one) nor its body — and a panic in a handler answered 500 (and logged)
/// instead of dropping the connection.
fn edge(routes: Router) -> Router {
    // The trace layer goes outside: its span holds the panic's line, and it sees the 500.
    routes
        .layer(CatchPanicLayer::custom(panicked))
        .layer(
            TraceLayer::new_for_http().make_span_with(|request: &axum::http::Request<Body>| {
                // At the error level, like the delivery's and the job's spans: on whatever the filter.
                tracing::error_span!("request", method = %request.method(), path = %request.uri().path())
            }),
        )
}

/// The answer to a request whose handler panicked.
fn panicked(payload: Box<dyn std::any::Any + Send>) -> Response {
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("no message");
    tracing::error!(panic = message, "the route panicked; answered 500");
    json_response(
        StatusCode::INTERNAL_SERVER_ERROR,
        json!({ "error": "internal error; the server's log says more" }),
    )
}

fn json_response(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

fn refuse(state: &ServerState, rejection: &Rejection) -> Response {
    let outcome = match rejection {
        Rejection::TooLarge { .. } => DeliveryOutcome::TooLarge,
        Rejection::Signature(_) => DeliveryOutcome::Unauthorized,
        Rejection::MissingHeader { .. } | Rejection::MalformedJson { .. } => DeliveryOutcome::BadRequest,
    };
    state.metrics.record_delivery(UNVERIFIED_EVENT, outcome);
    tracing::warn!(reason = %rejection, status = rejection.status().as_u16(), "webhook refused");
    let mut response = json_response(rejection.status(), json!({ "error": rejection.public_message() }));
    // These may come before the body was read (a declared size over the limit, no signature): the
    // connection is closed after them rather than hyper reading a body nobody wants.
    if matches!(rejection, Rejection::TooLarge { .. } | Rejection::Signature(_)) {
        response
            .headers_mut()
            .insert(header::CONNECTION, header::HeaderValue::from_static("close"));
    }
    response
}

/// A refusal sent before the body was read to its end: the connection is closed after it, or hyper
/// would read (and discard) the rest of a body nobody wants.
fn refuse_unread(state: &ServerState, outcome: DeliveryOutcome, status: StatusCode, message: &str) -> Response {
    state.metrics.record_delivery(UNVERIFIED_EVENT, outcome);
    tracing::warn!(reason = message, status = status.as_u16(), "webhook refused");
    let mut response = json_response(status, json!({ "error": message }));
    response
        .headers_mut()
        .insert(header::CONNECTION, header::HeaderValue::from_static("close"));
    response
}

/// A body read to its end, with its HMAC fed along the way.
struct ReadBody {
    body: Bytes,
    verifier: Verifier,
    /// The share of the unverified-bytes budget the body holds; released when dropped.
    held: Option<OwnedSemaphorePermit>,
}

enum ReadError {
    TooLarge {
        at_least: u64,
    },
    /// The unverified-bytes budget is spent: other requests hold it.
    Busy,
    /// The client went away or sent a broken body.
    Aborted,
}

/// Reads at most `max` bytes into one buffer, feeding `verifier`, and holding from `budget` as many
/// bytes as the buffer has room for (its capacity, not its length: that is the memory it takes).
/// The buffer grows to the declared length at once when that fits, else by doubling.
async fn read_verified(
    body: Body,
    max: usize,
    declared: Option<u64>,
    budget: &Arc<Semaphore>,
    mut verifier: Verifier,
) -> Result<ReadBody, ReadError> {
    let mut stream = body.into_data_stream();
    let mut buffer: Vec<u8> = Vec::new();
    let mut held: Option<OwnedSemaphorePermit> = None;
    let exact = declared.and_then(|n| usize::try_from(n).ok()).filter(|n| *n <= max);
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|_| ReadError::Aborted)?;
        let needed = buffer.len() + chunk.len();
        if needed > max {
            return Err(ReadError::TooLarge {
                at_least: needed as u64,
            });
        }
        if needed > buffer.capacity() {
            let target = match exact {
                Some(exact) if exact >= needed => exact,
                _ => needed.max(buffer.capacity().saturating_mul(2)).min(max),
            };
            let more = target - held.as_ref().map_or(0, OwnedSemaphorePermit::num_permits);
            let more = u32::try_from(more).map_err(|_| ReadError::Busy)?;
            let permit = Arc::clone(budget)
                .try_acquire_many_owned(more)
                .map_err(|_| ReadError::Busy)?;
            match held.as_mut() {
                Some(held) => held.merge(permit),
                None => held = Some(permit),
            }
            buffer.reserve_exact(target - buffer.len());
        }
        verifier.update(&chunk);
        buffer.extend_from_slice(&chunk);
    }
    Ok(ReadBody {
        body: Bytes::from(buffer),
        verifier,
        held,
    })
}

async fn webhook(State(state): State<Arc<ServerState>>, headers: HeaderMap, body: Body) -> Response {
    // Refused from the headers alone, before a byte of the body is read.
    if let Err(rejection) = check_declared_size(&headers, state.max_body) {
        return refuse(&state, &rejection);
    }
    let verifier = match Verifier::new(&state.secret, signature_header(&headers)) {
        Ok(verifier) => verifier,
        Err(error) => return refuse(&state, &Rejection::Signature(error)),
    };
    let read = read_verified(
        body,
        state.max_body,
        content_length(&headers),
        &state.unverified,
        verifier,
    );
    let read = match tokio::time::timeout(state.body_timeout, read).await {
        Ok(Ok(read)) => read,
        Ok(Err(ReadError::TooLarge { at_least })) => {
            let rejection = Rejection::TooLarge {
                size: at_least,
                limit: state.max_body,
            };
            return refuse(&state, &rejection);
        }
        Ok(Err(ReadError::Busy)) => {
            return refuse_unread(
                &state,
                DeliveryOutcome::Busy,
                StatusCode::SERVICE_UNAVAILABLE,
                "too many deliveries are being received at once; try again later",
            );
        }
        Ok(Err(ReadError::Aborted)) => {
            state
                .metrics
                .record_delivery(UNVERIFIED_EVENT, DeliveryOutcome::BadRequest);
            return json_response(
                StatusCode::BAD_REQUEST,
                json!({ "error": "the request body could not be read" }),
            );
        }
        Err(_) => {
            return refuse_unread(
                &state,
                DeliveryOutcome::TimedOut,
                StatusCode::REQUEST_TIMEOUT,
                "the request body did not arrive in time",
            );
        }
    };
    let ReadBody { body, verifier, held } = read;
    if let Err(error) = verifier.finish() {
        return refuse(&state, &Rejection::Signature(error));
    }
    let delivery = match parse_verified(&headers, body) {
        Ok(delivery) => delivery,
        Err(rejection) => return refuse(&state, &rejection),
    };
    // Verified: what it holds is GitHub's, and no longer counts against strangers.
    drop(held);
    let span = logging::delivery_span(&delivery.id, &delivery.event);
    if let Some(repo) = &delivery.repository {
        logging::record_repo(&span, repo);
    }
    accept(&state, delivery).instrument(span).await
}

/// Answers a verified delivery: stored for the dispatcher, or answered and dropped.
async fn accept(state: &ServerState, delivery: Delivery) -> Response {
    if delivery.event == "ping" {
        state.metrics.record_delivery("ping", DeliveryOutcome::Ping);
        let zen = serde_json::from_slice::<Value>(&delivery.body)
            .ok()
            .and_then(|payload| payload.get("zen").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_default();
        tracing::info!("ping");
        return json_response(StatusCode::OK, json!({ "ok": true, "zen": zen }));
    }
    if !HANDLED_EVENTS.contains(&delivery.event.as_str()) {
        state.metrics.record_delivery(&delivery.event, DeliveryOutcome::Ignored);
        tracing::debug!(action = delivery.action.as_deref(), "event ignored");
        return json_response(StatusCode::ACCEPTED, json!({ "ignored": delivery.event }));
    }
    let id = DeliveryId(delivery.id.clone());
    // Read here, where the payload is at hand: stored with this process's claim, the delivery is
    // this process's to handle, and the dispatcher gets the parse instead of reading it back.
    let received = state.inbox.read(&id, &delivery.event, &delivery.payload);
    let claim = state.inbox.claim(&received);
    match state
        .store
        .record_delivery(&id, &delivery.event, delivery.body, Some(claim), now_ms())
        .await
    {
        Ok(Recorded::New) => {
            state
                .metrics
                .record_delivery(&delivery.event, DeliveryOutcome::Accepted);
            tracing::info!(action = delivery.action.as_deref(), "delivery stored");
            state.inbox.stored(id.clone(), received);
            json_response(StatusCode::ACCEPTED, json!({ "accepted": id.0 }))
        }
        Ok(Recorded::Duplicate) => {
            state
                .metrics
                .record_delivery(&delivery.event, DeliveryOutcome::Duplicate);
            tracing::info!(
                action = delivery.action.as_deref(),
                "redelivery of a stored delivery; not run again"
            );
            json_response(StatusCode::OK, json!({ "duplicate": true }))
        }
        Err(error) => {
            state
                .metrics
                .record_delivery(&delivery.event, DeliveryOutcome::StoreFailed);
            tracing::error!(action = delivery.action.as_deref(), error = %error,
                "could not store the delivery; it is lost unless redelivered from the App's settings");
            json_response(
                StatusCode::SERVICE_UNAVAILABLE,
                json!({ "error": "the delivery could not be stored; redeliver it later" }),
            )
        }
    }
}

async fn healthz(State(state): State<Arc<ServerState>>) -> Response {
    match tokio::time::timeout(STORE_PROBE_TIMEOUT, state.store.count_deliveries()).await {
        Ok(Ok(_)) => (StatusCode::OK, "ok").into_response(),
        Ok(Err(error)) => {
            tracing::error!(error = %error, "health check: the job store failed");
            (StatusCode::SERVICE_UNAVAILABLE, "the job store is not answering").into_response()
        }
        Err(_) => {
            tracing::error!("health check: the job store did not answer in time");
            (StatusCode::SERVICE_UNAVAILABLE, "the job store is not answering").into_response()
        }
    }
}

/// The status page (`status.rs`): anyone may read it, so it shows nothing private.
async fn status(State(state): State<Arc<ServerState>>) -> Response {
    let jobs = job_counts(&state, "status page").await;
    let page = Status {
        app: app_slug(&state.bot_login).to_owned(),
        uptime: state.started.elapsed(),
        jobs,
        webhook_path: state.webhook_path.clone(),
    };
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page.html()).into_response()
}

/// Jobs by state, for `what`; `None` (logged) when the store failed or did not answer in time.
async fn job_counts(state: &ServerState, what: &str) -> Option<std::collections::BTreeMap<crate::jobs::JobState, u64>> {
    match tokio::time::timeout(STORE_PROBE_TIMEOUT, state.store.count_by_state()).await {
        Ok(Ok(counts)) => Some(counts),
        Ok(Err(error)) => {
            tracing::warn!(error = %error, "{what}: could not count jobs");
            None
        }
        Err(_) => {
            tracing::warn!("{what}: the job store did not answer in time");
            None
        }
    }
}

async fn metrics(State(state): State<Arc<ServerState>>) -> Response {
    let jobs = job_counts(&state, "metrics").await;
    let github = state.github_stats.as_ref().map(|stats| stats.snapshot());
    let text = state.metrics.render(jobs.as_ref(), github.as_ref());
    ([(header::CONTENT_TYPE, metrics::CONTENT_TYPE)], text).into_response()
}

#[cfg(test)]
mod tests {
    #![expect(clippy::unwrap_used, reason = "a failing test should panic")]

    use axum::http::Request;

    use super::*;
    use crate::jobs::SqliteStore;
    use crate::logging::capture;
    use crate::server::signature::{self, SIGNATURE_HEADER};
    use crate::server::webhook::{DELIVERY_HEADER, EVENT_HEADER};

    async fn call(router: &mut Router, request: Request<Body>) -> (StatusCode, Value) {
        let response = tower_service::Service::call(router, request).await.unwrap();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), 64 * 1024).await.unwrap();
        (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
    }

    async fn blows_up() -> &'static str {
        panic!("the handler blew up")
    }

    #[tokio::test]
    async fn a_panicking_route_answers_500_and_the_router_goes_on() {
        let (logs, _guard) = capture::json();
        let mut router = edge(
            Router::new()
                .route("/boom", get(blows_up))
                .route("/fine", get(|| async { axum::Json(json!({ "fine": true })) })),
        );

        let boom = Request::get("/boom?token=abc").body(Body::empty()).unwrap();
        assert_eq!(
            call(&mut router, boom).await,
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                json!({ "error": "internal error; the server's log says more" })
            )
        );
        let panicked = &logs.with_message("the route panicked; answered 500")[0];
        assert_eq!(panicked["fields"]["panic"], "the handler blew up");
        assert_eq!(panicked["level"], "ERROR");
        // The path without its query: what a client puts there is not for the log.
        assert_eq!(
            panicked["span"],
            json!({ "name": "request", "method": "GET", "path": "/boom" })
        );

        let fine = Request::get("/fine").body(Body::empty()).unwrap();
        assert_eq!(call(&mut router, fine).await, (StatusCode::OK, json!({ "fine": true })));
    }

    #[tokio::test]
    async fn a_delivery_is_logged_in_its_span_and_no_header_is_logged() {
        let (logs, _guard) = capture::json();
        let dir = tempfile::tempdir().unwrap();
        let secret = SecretString::from("It's a Secret to Everybody");
        let store = Arc::new(SqliteStore::open(dir.path()).unwrap());
        let state = Arc::new(ServerState {
            store: Arc::clone(&store) as Arc<dyn JobStore>,
            secret: secret.clone(),
            max_body: super::super::webhook::DEFAULT_MAX_BODY,
            unverified: Arc::new(Semaphore::new(1 << 20)),
            body_timeout: Duration::from_secs(30),
            metrics: Arc::new(Metrics::new()),
            inbox: Arc::new(Inbox::new("replica-a", Duration::from_secs(60))),
            github_stats: None,
            webhook_path: "/webhook".to_owned(),
            bot_login: "pitcrew[bot]".to_owned(),
            started: std::time::Instant::now(),
        });
        let mut router = router(state);
        let body = std::fs::read(crate::llm::fixture_path(
            "webhooks/issue_comment/created.with-installation.payload.json",
        ))
        .unwrap();
        let signature = signature::sign(&secret, &body);
        let request = Request::post("/webhook")
            .header(EVENT_HEADER, "issue_comment")
            .header(DELIVERY_HEADER, "d-1234")
            .header(SIGNATURE_HEADER, &signature)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body))
            .unwrap();

        assert_eq!(
            call(&mut router, request).await,
            (StatusCode::ACCEPTED, json!({ "accepted": "d-1234" }))
        );
        let stored = &logs.with_message("delivery stored")[0];
        assert_eq!(
            stored["span"],
            json!({ "name": "delivery", "delivery": "d-1234", "event": "issue_comment", "repo": "Codertocat/Hello-World" })
        );
        assert_eq!(
            stored["spans"],
            json!([{ "name": "request", "method": "POST", "path": "/webhook" }, stored["span"]])
        );
        assert_eq!(stored["fields"]["action"], "created");
        // Stored claimed by the process that received it, under its pull request's key.
        let pending = store.unprocessed_deliveries(10).await.unwrap();
        let claim = pending[0].claim.as_ref().unwrap();
        assert_eq!(
            (claim.worker.as_str(), claim.key.as_str()),
            ("replica-a", "Codertocat/Hello-World#1")
        );
        // Every line at debug, the trace layer's included: not a header among them.
        let text = logs.text();
        assert!(!text.is_empty());
        for secretish in [signature.as_str(), SIGNATURE_HEADER, "application/json"] {
            assert!(
                !text.to_lowercase().contains(&secretish.to_lowercase()),
                "{secretish} logged: {text}"
            );
        }
    }
}
