//! The webhook edge: from a request's headers and raw body to an authenticated `Delivery`, checked in
//! the order that keeps unauthenticated work cheap — size, signature, headers, then JSON. The route
//! streams the body through [`signature::Verifier`] and then calls [`parse_verified`];
//! [`parse_delivery`] is the same for a body already in hand.

use axum::http::{HeaderMap, StatusCode};
use bytes::Bytes;
use secrecy::SecretString;
use serde_json::Value;

use super::signature::{self, SIGNATURE_HEADER, SignatureError};
use crate::triggers::read_payload;

/// GitHub caps payloads at 25 MB; anything bigger is not from GitHub.
pub const DEFAULT_MAX_BODY: usize = 25 * 1024 * 1024;

pub const EVENT_HEADER: &str = "x-github-event";
pub const DELIVERY_HEADER: &str = "x-github-delivery";

/// A signed, well-formed delivery. The body is kept raw: it is what gets persisted, and the domain
/// event is parsed from it later (`triggers::Event::from_json`).
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    /// `X-GitHub-Delivery`: a GUID, the same on redeliveries.
    pub id: String,
    /// `X-GitHub-Event`, e.g. `issue_comment`.
    pub event: String,
    /// The payload's `action`, when it has one.
    pub action: Option<String>,
    /// The payload's `installation.id` (GitHub App deliveries).
    pub installation_id: Option<u64>,
    /// The payload's `repository.full_name` (`owner/name`), when it is about one: for logs.
    pub repository: Option<String>,
    pub body: Bytes,
    /// The body as JSON, read once: the dispatcher's event is made from it.
    pub payload: Value,
}

impl Delivery {
    /// `event.action`, or just `event` for actionless events (`ping`, `push`): for logs and metrics.
    pub fn kind(&self) -> String {
        match &self.action {
            Some(action) => format!("{}.{action}", self.event),
            None => self.event.clone(),
        }
    }
}

/// Why a request was refused. `status()` and `public_message()` are what the route answers; the
/// message never holds the secret, and for a bad signature nothing of the payload either.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    #[error("payload of {size} bytes is over the {limit}-byte limit")]
    TooLarge { size: u64, limit: usize },
    #[error(transparent)]
    Signature(#[from] SignatureError),
    #[error("missing or non-ASCII {header} header")]
    MissingHeader { header: &'static str },
    #[error("malformed JSON at line {line}, column {column}: {message}")]
    MalformedJson {
        line: usize,
        column: usize,
        message: String,
    },
}

impl Rejection {
    pub fn status(&self) -> StatusCode {
        match self {
            Rejection::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Rejection::Signature(_) => StatusCode::UNAUTHORIZED,
            Rejection::MissingHeader { .. } | Rejection::MalformedJson { .. } => StatusCode::BAD_REQUEST,
        }
    }

    /// A short text for the response body (it shows in GitHub's "Recent deliveries" page).
    pub fn public_message(&self) -> String {
        self.to_string()
    }
}

/// The declared `Content-Length`, when present and numeric: the route can refuse an oversized request
/// with this before reading its body at all.
pub fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(axum::http::header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Checks a request against the size limit using only its headers.
pub fn check_declared_size(headers: &HeaderMap, max_body: usize) -> Result<(), Rejection> {
    match content_length(headers) {
        Some(size) if size > max_body as u64 => Err(Rejection::TooLarge { size, limit: max_body }),
        _ => Ok(()),
    }
}

/// Authenticates and parses one webhook request whose body is already in hand.
pub fn parse_delivery(
    headers: &HeaderMap,
    body: Bytes,
    secret: &SecretString,
    max_body: usize,
) -> Result<Delivery, Rejection> {
    // Size first: a 26 MiB body must not cost an HMAC over 26 MiB.
    check_declared_size(headers, max_body)?;
    if body.len() > max_body {
        return Err(Rejection::TooLarge {
            size: body.len() as u64,
            limit: max_body,
        });
    }
    signature::verify(secret, &body, header(headers, SIGNATURE_HEADER))?;
    parse_verified(headers, body)
}

/// The signature header of a request, for [`signature::Verifier::new`].
pub fn signature_header(headers: &HeaderMap) -> Option<&str> {
    header(headers, SIGNATURE_HEADER)
}

/// Parses a request whose body's signature was verified: the event and delivery headers, then the
/// payload, read as the dispatcher will read it ([`read_payload`]), so that what it could not read is
/// refused here with a 400 that shows on GitHub's delivery page instead of being stored and dropped.
pub fn parse_verified(headers: &HeaderMap, body: Bytes) -> Result<Delivery, Rejection> {
    let event = header(headers, EVENT_HEADER)
        .filter(|v| !v.is_empty())
        .ok_or(Rejection::MissingHeader {
            header: "X-GitHub-Event",
        })?
        .to_owned();
    let id = header(headers, DELIVERY_HEADER)
        .filter(|v| !v.is_empty())
        .ok_or(Rejection::MissingHeader {
            header: "X-GitHub-Delivery",
        })?
        .to_owned();
    expect_object(&body)?;
    let payload = read_payload(&body).map_err(|err| Rejection::MalformedJson {
        line: err.line(),
        column: err.column(),
        message: json_problem(&err),
    })?;
    Ok(Delivery {
        id,
        event,
        action: payload.get("action").and_then(Value::as_str).map(str::to_owned),
        installation_id: payload
            .get("installation")
            .and_then(|i| i.get("id"))
            .and_then(Value::as_u64),
        repository: payload
            .get("repository")
            .and_then(|r| r.get("full_name"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        body,
        payload,
    })
}

/// Every webhook payload is an object; the first token is checked here, where its position is known.
fn expect_object(body: &[u8]) -> Result<(), Rejection> {
    let Some(at) = body.iter().position(|b| !b.is_ascii_whitespace()) else {
        // Empty: serde reports "EOF while parsing a value" with its position.
        return Ok(());
    };
    if body[at] == b'{' {
        return Ok(());
    }
    let before = &body[..at];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let column = at - before.iter().rposition(|&b| b == b'\n').map_or(0, |nl| nl + 1) + 1;
    Err(Rejection::MalformedJson {
        line,
        column,
        message: "expected a JSON object".to_owned(),
    })
}

/// serde's message without its trailing " at line L column C" (the rejection says that itself).
fn json_problem(err: &serde_json::Error) -> String {
    let text = err.to_string();
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    match text.strip_suffix(&suffix) {
        Some(problem) => problem.to_owned(),
        None => text,
    }
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    const SECRET: &str = "It's a Secret to Everybody";

    fn secret() -> SecretString {
        SecretString::from(SECRET)
    }

    fn headers(event: Option<&str>, delivery: Option<&str>, signature: Option<&str>) -> HeaderMap {
        let mut map = HeaderMap::new();
        let mut put = |name: &'static str, value: Option<&str>| {
            if let Some(value) = value {
                map.insert(name, HeaderValue::from_str(value).unwrap());
            }
        };
        put("x-github-event", event);
        put("x-github-delivery", delivery);
        put("x-hub-signature-256", signature);
        map
    }

    fn signed(event: &str, body: &[u8]) -> HeaderMap {
        headers(
            Some(event),
            Some("72d3162e-cc78-11e3-81ab-4c9367dc0958"),
            Some(&signature::sign(&secret(), body)),
        )
    }

    fn fixture(relative: &str) -> Vec<u8> {
        std::fs::read(crate::llm::fixture_path(relative)).unwrap()
    }

    #[test]
    fn a_correctly_signed_delivery_is_accepted_with_its_envelope() {
        let body = fixture("webhooks/issue_comment/created.with-installation.payload.json");
        let delivery = parse_delivery(
            &signed("issue_comment", &body),
            Bytes::from(body.clone()),
            &secret(),
            DEFAULT_MAX_BODY,
        )
        .unwrap();
        assert_eq!(delivery.id, "72d3162e-cc78-11e3-81ab-4c9367dc0958");
        assert_eq!(delivery.event, "issue_comment");
        assert_eq!(delivery.action.as_deref(), Some("created"));
        assert_eq!(delivery.installation_id, Some(1));
        assert_eq!(delivery.repository.as_deref(), Some("Codertocat/Hello-World"));
        assert_eq!(delivery.kind(), "issue_comment.created");
        assert_eq!(delivery.body, body);
    }

    #[test]
    fn ping_has_no_action() {
        let body = fixture("webhooks/ping/payload.json");
        let delivery = parse_delivery(&signed("ping", &body), Bytes::from(body), &secret(), DEFAULT_MAX_BODY).unwrap();
        assert_eq!(delivery.action, None);
        assert_eq!(delivery.kind(), "ping");
    }

    #[test]
    fn tampered_body_is_401() {
        let body = fixture("webhooks/issue_comment/created.payload.json");
        let headers = signed("issue_comment", &body);
        let mut tampered = body;
        let at = tampered.iter().position(|&b| b == b'!').unwrap();
        tampered[at] = b'?';
        let err = parse_delivery(&headers, Bytes::from(tampered), &secret(), DEFAULT_MAX_BODY).unwrap_err();
        assert_eq!(err, Rejection::Signature(SignatureError::Mismatch));
        assert_eq!(err.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(err.public_message(), "signature does not match the payload");
    }

    #[test]
    fn missing_signature_is_401() {
        let body = b"{}".to_vec();
        let err = parse_delivery(
            &headers(Some("ping"), Some("d1"), None),
            Bytes::from(body),
            &secret(),
            DEFAULT_MAX_BODY,
        )
        .unwrap_err();
        assert_eq!(err, Rejection::Signature(SignatureError::Missing));
        assert_eq!(err.status(), StatusCode::UNAUTHORIZED);
    }

    #[test]
    fn a_26_mib_body_is_413_before_the_signature_is_looked_at() {
        let body = vec![b' '; 26 * 1024 * 1024];
        // A malformed signature header: had the HMAC step run first, this would be a 401.
        let err = parse_delivery(
            &headers(Some("push"), Some("d1"), Some("not a signature")),
            Bytes::from(body),
            &secret(),
            DEFAULT_MAX_BODY,
        )
        .unwrap_err();
        assert_eq!(
            err,
            Rejection::TooLarge {
                size: 26 * 1024 * 1024,
                limit: DEFAULT_MAX_BODY
            }
        );
        assert_eq!(err.status(), StatusCode::PAYLOAD_TOO_LARGE);
    }

    #[test]
    fn a_declared_oversized_length_is_413_from_headers_alone() {
        let mut map = headers(Some("push"), Some("d1"), None);
        map.insert("content-length", HeaderValue::from_static("27262976"));
        assert_eq!(check_declared_size(&map, DEFAULT_MAX_BODY).unwrap_err().status(), 413);
        let err = parse_delivery(&map, Bytes::from_static(b"{}"), &secret(), DEFAULT_MAX_BODY).unwrap_err();
        assert_eq!(err.status(), StatusCode::PAYLOAD_TOO_LARGE);
        map.insert("content-length", HeaderValue::from_static("2"));
        assert_eq!(check_declared_size(&map, DEFAULT_MAX_BODY), Ok(()));
    }

    #[test]
    fn the_limit_is_a_parameter() {
        let body = b"{\"zen\":\"x\"}".to_vec();
        let err = parse_delivery(&signed("ping", &body), Bytes::from(body.clone()), &secret(), 4).unwrap_err();
        assert_eq!(err.public_message(), "payload of 11 bytes is over the 4-byte limit");
        assert!(parse_delivery(&signed("ping", &body), Bytes::from(body), &secret(), 11).is_ok());
    }

    #[test]
    fn bad_json_is_400_with_line_and_column() {
        let body = b"{\n  \"action\": \"created\",\n  \"comment\": {\"id\": 1,}\n}".to_vec();
        let err = parse_delivery(
            &signed("issue_comment", &body),
            Bytes::from(body),
            &secret(),
            DEFAULT_MAX_BODY,
        )
        .unwrap_err();
        assert_eq!(err.status(), StatusCode::BAD_REQUEST);
        insta::assert_snapshot!(err.public_message(), @"malformed JSON at line 3, column 23: trailing comma");
    }

    #[test]
    fn a_json_array_is_400() {
        let body = b"\n  [1, 2]".to_vec();
        let err = parse_delivery(&signed("push", &body), Bytes::from(body), &secret(), DEFAULT_MAX_BODY).unwrap_err();
        assert_eq!(err.status(), StatusCode::BAD_REQUEST);
        assert_eq!(
            err.public_message(),
            "malformed JSON at line 2, column 3: expected a JSON object"
        );
        for body in [&b""[..], b"   ", b"\"x\"", b"null"] {
            let err = parse_delivery(
                &signed("push", body),
                Bytes::copy_from_slice(body),
                &secret(),
                DEFAULT_MAX_BODY,
            )
            .unwrap_err();
            assert_eq!(err.status(), StatusCode::BAD_REQUEST, "{body:?}");
        }
    }

    #[test]
    fn events_parse_from_a_verified_delivery() {
        use crate::triggers::{Event, JobKind, TriggerConfig, decide};

        // The real PR comment delivery (triagebot's recording) saying `@agent triage`.
        let recorded: Value = serde_json::from_slice(&fixture(
            "webhooks/issue_comment/rust-lang-triagebot/07-webhook-issue111_comment_created.json",
        ))
        .unwrap();
        let mut payload = recorded["payload"].clone();
        payload["comment"]["body"] = Value::from("@agent triage");
        let body = serde_json::to_vec(&payload).unwrap();
        let headers = headers(
            Some("issue_comment"),
            Some("abc"),
            Some(&signature::sign(&secret(), &body)),
        );
        let delivery = parse_delivery(&headers, body.into(), &secret(), DEFAULT_MAX_BODY).unwrap();
        let event = Event::from_json(&delivery.event, &delivery.body).unwrap();
        let decision = decide(&event, &TriggerConfig::new("@agent", "pitcrew[bot]")).with_delivery(&delivery.id);
        let jobs = decision.jobs();
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].kind, JobKind::Triage);
        assert_eq!(jobs[0].delivery_id.as_deref(), Some("abc"));
    }

    /// Payloads the dispatcher's parser cannot read were answered 202, stored and dropped later.
    #[test]
    fn json_the_dispatcher_cannot_read_is_400_at_the_edge() {
        let deep = format!("{{\"a\": {}{}}}", "[".repeat(100_000), "]".repeat(100_000));
        let huge = "{\"action\": \"created\", \"n\": 1e999999}".to_owned();
        for (body, problem) in [(deep, "recursion limit exceeded"), (huge, "number out of range")] {
            let body = body.into_bytes();
            let err = parse_delivery(
                &signed("issue_comment", &body),
                Bytes::from(body.clone()),
                &secret(),
                DEFAULT_MAX_BODY,
            )
            .unwrap_err();
            assert_eq!(err.status(), StatusCode::BAD_REQUEST);
            assert!(err.public_message().contains(problem), "{}", err.public_message());
            assert!(crate::triggers::Event::from_json("issue_comment", &body).is_err());
        }
    }

    #[test]
    fn missing_event_or_delivery_header_is_400() {
        let body = b"{}".to_vec();
        let sig = signature::sign(&secret(), &body);
        let err = parse_delivery(
            &headers(None, Some("d1"), Some(&sig)),
            Bytes::from(body.clone()),
            &secret(),
            DEFAULT_MAX_BODY,
        )
        .unwrap_err();
        assert_eq!(err.status(), StatusCode::BAD_REQUEST);
        assert_eq!(err.public_message(), "missing or non-ASCII X-GitHub-Event header");
        let err = parse_delivery(
            &headers(Some("ping"), None, Some(&sig)),
            Bytes::from(body),
            &secret(),
            DEFAULT_MAX_BODY,
        )
        .unwrap_err();
        assert_eq!(
            err,
            Rejection::MissingHeader {
                header: "X-GitHub-Delivery"
            }
        );
    }

    /// The function behind a real axum route on 127.0.0.1, fed by a real HTTP client: header names
    /// arrive in whatever case the client sends, and an oversized upload is refused from its
    /// `Content-Length`.
    #[tokio::test]
    async fn behind_a_real_http_route() {
        use axum::extract::DefaultBodyLimit;
        use axum::routing::post;

        let app = axum::Router::new()
            .route(
                "/webhook",
                post(|headers: HeaderMap, body: Bytes| async move {
                    match parse_delivery(&headers, body, &secret(), DEFAULT_MAX_BODY) {
                        Ok(delivery) => (StatusCode::ACCEPTED, delivery.kind()),
                        Err(rejection) => (rejection.status(), rejection.public_message()),
                    }
                }),
            )
            // axum's own 2 MB default would answer first; the limit under test is ours.
            .layer(DefaultBodyLimit::disable());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/webhook", listener.local_addr().unwrap());
        let server = tokio::spawn(async move { axum::serve(listener, app).await });
        let client = reqwest::Client::new();
        let send = |body: Vec<u8>, signature: Option<String>| {
            let mut request = client
                .post(&url)
                .header("X-GitHub-Event", "issue_comment")
                .header("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
                .body(body);
            if let Some(signature) = signature {
                request = request.header("X-Hub-Signature-256", signature);
            }
            async move {
                let response = request.send().await.unwrap();
                (response.status().as_u16(), response.text().await.unwrap())
            }
        };

        let body = fixture("webhooks/issue_comment/created.payload.json");
        let good = signature::sign(&secret(), &body);
        assert_eq!(
            send(body.clone(), Some(good.clone())).await,
            (202, "issue_comment.created".to_owned())
        );
        let mut tampered = body.clone();
        tampered.push(b' ');
        assert_eq!(
            send(tampered, Some(good)).await,
            (401, "signature does not match the payload".to_owned())
        );
        assert_eq!(
            send(body, None).await,
            (401, "missing X-Hub-Signature-256 header".to_owned())
        );
        let (status, message) = send(vec![b' '; 26 * 1024 * 1024], None).await;
        assert_eq!(status, 413, "{message}");
        server.abort();
    }

    #[test]
    fn signature_is_checked_before_headers_and_json() {
        // Unsigned garbage without headers: the answer is 401, not 400, so nothing about the parser is
        // revealed to someone without the secret.
        let err = parse_delivery(
            &HeaderMap::new(),
            Bytes::from_static(b"not json"),
            &secret(),
            DEFAULT_MAX_BODY,
        )
        .unwrap_err();
        assert_eq!(err.status(), StatusCode::UNAUTHORIZED);
    }
}
