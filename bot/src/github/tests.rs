//! Tests of the GitHub client against a small hand-routed HTTP server on 127.0.0.1: App JWTs and the
//! token cache, retries on rate limits and server errors, error mapping, URL joining, redirects and
//! the token, the typed calls' requests (GitHub Actions' paged lists and log downloads included);
//! plus GitHub's own example responses parsed into our response structs.
//!
//! Every request body the fake receives is checked against GitHub's OpenAPI description by the test
//! suite's validator ([`Spec`]); a strict fake ([`Fake::start_strict`]) checks every request's path
//! and query too, but for its storage paths (`/storage/…`, signed URLs GitHub redirects to). A test
//! whose client sent an undocumented request fails when its fake is dropped.

#![expect(clippy::unwrap_used, reason = "tests")]

use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use pitcrew_tests::fake_github::Spec;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};
use url::Url;

use super::app::AccessTokenResponse;
use super::types::{ContentEntry, PermissionResponse};
use super::*;

// ---------------------------------------------------------------------------------------------
// The fake server

/// One request the fake received.
#[derive(Debug, Clone)]
struct Recorded {
    method: String,
    path: String,
    query: Option<String>,
    headers: HeaderMap,
    body: Value,
}

impl Recorded {
    fn route(&self) -> String {
        format!("{} {}", self.method, self.path)
    }

    fn bearer(&self) -> Option<&str> {
        self.headers
            .get("authorization")?
            .to_str()
            .ok()?
            .strip_prefix("Bearer ")
    }
}

/// A response the fake sends.
struct Canned {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
}

impl Canned {
    fn json(status: u16, body: Value) -> Self {
        Canned {
            status,
            headers: Vec::new(),
            body: body.to_string().into_bytes(),
        }
    }

    /// A plain-text body (what log storage answers).
    fn text(status: u16, body: impl Into<Vec<u8>>) -> Self {
        Canned {
            status,
            headers: vec![("content-type", "text/plain".to_owned())],
            body: body.into(),
        }
    }

    /// A redirect to `location`, with no body.
    fn redirect(status: u16, location: &str) -> Self {
        Canned {
            status,
            headers: vec![("location", location.to_owned())],
            body: Vec::new(),
        }
    }

    fn header(mut self, name: &'static str, value: impl ToString) -> Self {
        self.headers.push((name, value.to_string()));
        self
    }
}

/// Answers each request from the history so far (the current request last).
type Responder = Arc<dyn Fn(&[Recorded]) -> Canned + Send + Sync>;

/// Where a fake plays GitHub's storage: signed URLs, not the API.
const STORAGE_PREFIX: &str = "/storage/";

#[derive(Clone)]
struct FakeState {
    requests: Arc<Mutex<Vec<Recorded>>>,
    /// What GitHub would have refused in the requests received, one line per request.
    violations: Arc<Mutex<Vec<String>>>,
    /// Whether every API request is checked (path and query), not only those with a body.
    strict: bool,
    responder: Responder,
}

struct Fake {
    url: Url,
    requests: Arc<Mutex<Vec<Recorded>>>,
    violations: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.task.abort();
        // A second panic while unwinding would abort the test binary and hide the first failure.
        if !std::thread::panicking() {
            let violations = self.violations.lock().unwrap();
            assert!(
                violations.is_empty(),
                "GitHub would refuse these requests: {violations:#?}"
            );
        }
    }
}

impl Fake {
    async fn start(responder: impl Fn(&[Recorded]) -> Canned + Send + Sync + 'static) -> Fake {
        Fake::serve(responder, false).await
    }

    /// A fake that checks every request but those to [`STORAGE_PREFIX`] against the description.
    async fn start_strict(responder: impl Fn(&[Recorded]) -> Canned + Send + Sync + 'static) -> Fake {
        Fake::serve(responder, true).await
    }

    async fn serve(responder: impl Fn(&[Recorded]) -> Canned + Send + Sync + 'static, strict: bool) -> Fake {
        let state = FakeState {
            requests: Arc::default(),
            violations: Arc::default(),
            strict,
            responder: Arc::new(responder),
        };
        let requests = Arc::clone(&state.requests);
        let violations = Arc::clone(&state.violations);
        let app = axum::Router::new().fallback(handle).with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = Url::parse(&format!("http://{}", listener.local_addr().unwrap())).unwrap();
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Fake {
            url,
            requests,
            violations,
            task,
        }
    }

    fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    fn routes(&self) -> Vec<String> {
        self.requests().iter().map(Recorded::route).collect()
    }
}

async fn handle(State(state): State<FakeState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20).await.unwrap();
    let checked = !bytes.is_empty() || (state.strict && !parts.uri.path().starts_with(STORAGE_PREFIX));
    if checked && let Some(violation) = undocumented(parts.method.as_str(), &parts.uri, &bytes) {
        state.violations.lock().unwrap().push(violation);
    }
    let recorded = Recorded {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().map(str::to_owned),
        headers: parts.headers,
        body: if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap()
        },
    };
    let canned = {
        let mut requests = state.requests.lock().unwrap();
        requests.push(recorded);
        (state.responder)(&requests)
    };
    let mut response = Response::builder().status(StatusCode::from_u16(canned.status).unwrap());
    if !canned.headers.iter().any(|(name, _)| *name == "content-type") {
        response = response.header("content-type", "application/json; charset=utf-8");
    }
    for (name, value) in canned.headers {
        response = response.header(name, value);
    }
    response.body(Body::from(canned.body)).unwrap()
}

/// What is wrong with a request by GitHub's OpenAPI description (the subset, else the full one):
/// an operation it does not document, path, query or body values its schemas refuse, or an
/// undocumented field. A GraphQL request (`…/graphql`) is checked against GitHub's GraphQL schema
/// instead.
fn undocumented(method: &str, uri: &axum::http::Uri, body: &[u8]) -> Option<String> {
    let summary = format!("{method} {uri}");
    if uri.path().ends_with("/graphql") {
        let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        return match pitcrew_tests::fake_github::graphql::check_request(&body) {
            Ok(_) if method == "POST" => None,
            Ok(_) => Some(format!("{summary}: GraphQL takes POST only")),
            Err(errors) => Some(format!(
                "{summary}: {}",
                pitcrew_tests::fake_github::graphql::messages(&errors)
            )),
        };
    }
    let (spec, operation) = match Spec::route_github(method, uri.path()) {
        Ok(routed) => routed,
        Err(error) => return Some(format!("{summary}: {error}")),
    };
    let query: Vec<(String, String)> = url::form_urlencoded::parse(uri.query().unwrap_or_default().as_bytes())
        .into_owned()
        .collect();
    // Closed objects: a field GitHub does not document would be silently ignored, so it is a bug.
    let body = (!body.is_empty()).then_some(body);
    let errors = spec.validate_request_closed(&operation, &query, body);
    (!errors.is_empty()).then(|| {
        let listed: Vec<String> = errors.iter().map(ToString::to_string).collect();
        format!("{summary} ({}): {}", operation.operation_id, listed.join("; "))
    })
}

// ---------------------------------------------------------------------------------------------
// Test clocks, sleepers, keys, fixtures

#[derive(Debug)]
struct ManualClock(Mutex<SystemTime>);

impl ManualClock {
    /// Now, in whole seconds (JWTs carry whole seconds).
    fn new() -> Arc<Self> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
        Arc::new(ManualClock(Mutex::new(UNIX_EPOCH + Duration::from_secs(now))))
    }

    fn advance(&self, by: Duration) {
        *self.0.lock().unwrap() += by;
    }

    fn epoch_seconds(&self) -> u64 {
        self.now().duration_since(UNIX_EPOCH).unwrap().as_secs()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        *self.0.lock().unwrap()
    }
}

/// Records the waits asked for and returns at once.
#[derive(Debug, Default)]
struct RecordingSleeper(Mutex<Vec<Duration>>);

impl RecordingSleeper {
    fn waits(&self) -> Vec<Duration> {
        self.0.lock().unwrap().clone()
    }
}

impl Sleeper for RecordingSleeper {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        self.0.lock().unwrap().push(duration);
        Box::pin(std::future::ready(()))
    }
}

struct Kit {
    clock: Arc<ManualClock>,
    sleeper: Arc<RecordingSleeper>,
    options: ClientOptions,
}

fn kit() -> Kit {
    let clock = ManualClock::new();
    let sleeper = Arc::new(RecordingSleeper::default());
    let options = ClientOptions {
        clock: clock.clone(),
        sleeper: sleeper.clone(),
        ..ClientOptions::default()
    };
    Kit {
        clock,
        sleeper,
        options,
    }
}

const APP_ID: u64 = 4242;
const TOKEN: &str = "ghp_DistinctiveTestToken_9f8e7d6c5b4a";

fn key_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(name)
}

fn credentials() -> AppCredentials {
    AppCredentials::load(APP_ID, &key_path("github-app-test-key.pem")).unwrap()
}

/// Checks `jwt` with ring's RSA verification against the test App's public key (not with the code
/// that signed it): header `{"alg": "RS256", "typ": "JWT"}`, the signature, and exactly GitHub's
/// three claims.
fn verify_jwt(jwt: &str) -> AppClaimsSeen {
    let public =
        pitcrew_tests::jwt::rsa_public_key(&std::fs::read(key_path("github-app-test-key.pub.pem")).unwrap()).unwrap();
    let verified = pitcrew_tests::jwt::verify_rs256(jwt, &public).unwrap();
    assert_eq!(verified.header, json!({"alg": "RS256", "typ": "JWT"}));
    let claims = verified.claims.as_object().unwrap();
    let mut names: Vec<&str> = claims.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, ["exp", "iat", "iss"]);
    AppClaimsSeen(serde_json::from_value(verified.claims).unwrap())
}

struct AppClaimsSeen(app::AppClaims);

fn fixture(relative: &str) -> Value {
    serde_json::from_str(&crate::llm::fixture(&format!("github-api-responses/{relative}"))).unwrap()
}

fn repo() -> RepoName {
    "octo-org/widgets".parse().unwrap()
}

fn token_client(fake: &Fake, options: ClientOptions) -> GithubClient {
    GithubClient::new(&fake.url, Auth::Token(SecretString::from(TOKEN)), options).unwrap()
}

fn repo_json() -> Value {
    json!({
        "full_name": "octo-org/widgets",
        "default_branch": "main",
        "private": true,
        "clone_url": "https://github.com/octo-org/widgets.git",
        "html_url": "https://github.com/octo-org/widgets",
    })
}

/// The fake's token endpoint: `ghs_1`, `ghs_2`, … each valid for an hour from `clock`.
fn token_response(clock: &ManualClock, history: &[Recorded]) -> Canned {
    let issued = history.iter().filter(|r| r.path.ends_with("/access_tokens")).count();
    let expires = time::format_rfc3339(clock.now() + Duration::from_secs(3600));
    Canned::json(201, json!({"token": format!("ghs_{issued}"), "expires_at": expires}))
}

// ---------------------------------------------------------------------------------------------
// App authentication

#[test]
fn the_app_jwt_has_githubs_claims_and_a_valid_rs256_signature() {
    let credentials = credentials();
    let now = SystemTime::now();
    let jwt = credentials.jwt(now).unwrap();
    let AppClaimsSeen(claims) = verify_jwt(jwt.expose_secret());
    let now = now.duration_since(UNIX_EPOCH).unwrap().as_secs();
    assert_eq!(claims.iat, now - 60);
    assert_eq!(claims.exp, now + 540);
    assert!(
        claims.exp - now <= 600,
        "GitHub refuses an exp more than ten minutes ahead"
    );
    assert_eq!(claims.iss, APP_ID.to_string());
    assert!(!format!("{credentials:?}").contains("MII"), "{credentials:?}");
}

#[test]
fn a_pkcs8_key_signs_the_same_jwt() {
    // The PKCS#1 test key in a PKCS#8 PrivateKeyInfo, as `openssl pkcs8 -topk8` would write it.
    let pem = std::fs::read(key_path("github-app-test-key.pem")).unwrap();
    let pkcs8 = pitcrew_tests::jwt::pkcs1_to_pkcs8(&pem).unwrap();
    assert!(pkcs8.starts_with("-----BEGIN PRIVATE KEY-----\n"));

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.pem");
    std::fs::write(&path, pkcs8).unwrap();
    let from_pkcs8 = AppCredentials::load(APP_ID, &path).unwrap();
    let now = SystemTime::now();
    let jwt = from_pkcs8.jwt(now).unwrap();
    assert_eq!(verify_jwt(jwt.expose_secret()).0.iss, APP_ID.to_string());
    // PKCS#1 v1.5 signatures are deterministic: one key, one token, whatever its PEM form.
    assert_eq!(jwt.expose_secret(), credentials().jwt(now).unwrap().expose_secret());
}

#[test]
fn unusable_keys_are_reported_without_their_content() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.pem");
    let error = AppCredentials::load(APP_ID, &missing).unwrap_err();
    assert!(matches!(error, AppKeyError::Read { .. }));
    assert!(error.to_string().contains("missing.pem"), "{error}");

    let secretish = "c2VjcmV0LWtleS1tYXRlcmlhbC10aGF0LW11c3Qtbm90LWxlYWs=";
    for (name, text) in [
        (
            "public.pem",
            std::fs::read_to_string(key_path("github-app-test-key.pub.pem")).unwrap(),
        ),
        (
            "garbage.pem",
            format!("-----BEGIN RSA PRIVATE KEY-----\n{secretish}\n-----END RSA PRIVATE KEY-----\n"),
        ),
        (
            "not-base64.pem",
            format!("-----BEGIN PRIVATE KEY-----\n{secretish}!!\n-----END PRIVATE KEY-----\n"),
        ),
        ("plain.txt", secretish.to_owned()),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, &text).unwrap();
        let error = AppCredentials::load(APP_ID, &path).unwrap_err();
        let shown = format!("{error} {error:?}");
        assert!(matches!(error, AppKeyError::Invalid { .. }), "{name}: {shown}");
        assert!(shown.contains(name), "{shown}");
        assert!(!shown.contains(&secretish[..20]), "{shown}");
        assert!(!shown.contains("MIIB"), "{shown}");
    }
}

#[tokio::test]
async fn installation_tokens_are_cached_until_five_minutes_before_expiry() {
    let kit = kit();
    let clock = kit.clock.clone();
    let fake = Fake::start(move |history| token_response(&clock, history)).await;
    let app = AppAuth::new(&fake.url, credentials(), kit.options.clone()).unwrap();
    let installation = InstallationId(77);

    let first = app.installation_token(installation).await.unwrap();
    let second = app.installation_token(installation).await.unwrap();
    assert_eq!(first.expose_secret(), "ghs_1");
    assert_eq!(second.expose_secret(), "ghs_1");
    assert_eq!(fake.routes(), ["POST /app/installations/77/access_tokens"]);
    let request = &fake.requests()[0];
    let AppClaimsSeen(claims) = verify_jwt(request.bearer().unwrap());
    assert_eq!(claims.iat, kit.clock.epoch_seconds() - 60);
    assert_eq!(request.headers["accept"], "application/vnd.github+json");
    assert_eq!(request.headers["x-github-api-version"], "2022-11-28");
    assert_eq!(
        request.headers["user-agent"],
        concat!("pitcrew/", env!("CARGO_PKG_VERSION"))
    );

    // Five minutes and one second left: still good.
    kit.clock.advance(Duration::from_secs(55 * 60 - 1));
    assert_eq!(
        app.installation_token(installation).await.unwrap().expose_secret(),
        "ghs_1"
    );
    assert_eq!(fake.requests().len(), 1);
    // Within five minutes of expiry: refreshed.
    kit.clock.advance(Duration::from_secs(2));
    assert_eq!(
        app.installation_token(installation).await.unwrap().expose_secret(),
        "ghs_2"
    );
    assert_eq!(fake.requests().len(), 2);

    // Another installation has its own token.
    assert_eq!(
        app.installation_token(InstallationId(78))
            .await
            .unwrap()
            .expose_secret(),
        "ghs_3"
    );
    assert_eq!(fake.routes()[2], "POST /app/installations/78/access_tokens");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_callers_share_one_token_request() {
    let kit = kit();
    let clock = kit.clock.clone();
    let fake = Fake::start(move |history| token_response(&clock, history)).await;
    let app = Arc::new(AppAuth::new(&fake.url, credentials(), kit.options.clone()).unwrap());
    let callers: Vec<_> = (0..8)
        .map(|_| {
            let app = Arc::clone(&app);
            tokio::spawn(async move { app.installation_token(InstallationId(5)).await.unwrap() })
        })
        .collect();
    for caller in callers {
        assert_eq!(caller.await.unwrap().expose_secret(), "ghs_1");
    }
    assert_eq!(fake.routes(), ["POST /app/installations/5/access_tokens"]);
}

/// `/metrics` reads an App's statistics before any delivery names an installation, and they count
/// the App's own requests and those of every installation's client.
#[tokio::test]
async fn an_apps_call_statistics_count_the_app_and_every_installation() {
    let kit = kit();
    let clock = kit.clock.clone();
    let fake = Fake::start(move |history| {
        if history.last().unwrap().path.ends_with("/access_tokens") {
            return token_response(&clock, history);
        }
        Canned::json(200, repo_json())
    })
    .await;
    let app = Arc::new(AppAuth::new(&fake.url, credentials(), kit.options.clone()).unwrap());
    let access = GithubAccess::App(Arc::clone(&app));
    let stats = access.stats();
    assert_eq!(stats.snapshot(), ApiStatsSnapshot::default());
    for installation in [InstallationId(7), InstallationId(9)] {
        let client = access.client(Some(installation)).unwrap();
        client.get_repo(&repo()).await.unwrap();
    }
    assert!(
        access.client(None).is_none(),
        "an App cannot act without an installation"
    );
    let counted = stats.snapshot();
    assert_eq!(counted.calls_total, 4, "two token requests and two repository reads");
    assert_eq!(counted.calls_by_class, [0, 4, 0, 0, 0]);
    assert_eq!(app.stats().snapshot(), counted);
}

#[tokio::test]
async fn a_rejected_installation_token_is_replaced_and_the_request_retried_once() {
    let kit = kit();
    let clock = kit.clock.clone();
    let fake = Fake::start(move |history| {
        let request = history.last().unwrap();
        if request.path.ends_with("/access_tokens") {
            return token_response(&clock, history);
        }
        match request.bearer() {
            Some("ghs_2") => Canned::json(200, repo_json()),
            _ => Canned::json(401, json!({"message": "Bad credentials"})),
        }
    })
    .await;
    let app = Arc::new(AppAuth::new(&fake.url, credentials(), kit.options.clone()).unwrap());
    let client = GithubClient::for_installation(&app, InstallationId(9));
    let repository = client.get_repo(&repo()).await.unwrap();
    assert_eq!(repository.default_branch, "main");
    assert_eq!(
        fake.routes(),
        [
            "POST /app/installations/9/access_tokens",
            "GET /repos/octo-org/widgets",
            "POST /app/installations/9/access_tokens",
            "GET /repos/octo-org/widgets",
        ]
    );
    // The fresh token is the cached one now.
    assert_eq!(client.token().await.unwrap().expose_secret(), "ghs_2");
}

#[tokio::test]
async fn a_token_rejected_twice_is_an_error_after_one_retry() {
    let kit = kit();
    let clock = kit.clock.clone();
    let fake = Fake::start(move |history| {
        if history.last().unwrap().path.ends_with("/access_tokens") {
            return token_response(&clock, history);
        }
        Canned::json(401, json!({"message": "Bad credentials"}))
    })
    .await;
    let app = Arc::new(AppAuth::new(&fake.url, credentials(), kit.options.clone()).unwrap());
    let error = GithubClient::for_installation(&app, InstallationId(9))
        .get_repo(&repo())
        .await
        .unwrap_err();
    assert!(matches!(error, GithubError::Unauthorized { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "GET /repos/octo-org/widgets: GitHub rejected the credentials (401)"
    );
    assert_eq!(fake.requests().len(), 4);
}

#[tokio::test]
async fn the_installation_of_a_repository_is_asked_with_the_jwt() {
    let fake = Fake::start(|_| Canned::json(200, fixture("openapi-examples/installation.json"))).await;
    let app = AppAuth::new(&fake.url, credentials(), kit().options).unwrap();
    let installation = app.installation_for_repo(&repo()).await.unwrap();
    assert_eq!(installation.id, InstallationId(1));
    assert_eq!(installation.account.unwrap().login.as_deref(), Some("github"));
    let request = &fake.requests()[0];
    assert_eq!(request.route(), "GET /repos/octo-org/widgets/installation");
    verify_jwt(request.bearer().unwrap());
}

// ---------------------------------------------------------------------------------------------
// Retries and errors

#[tokio::test]
async fn a_secondary_rate_limit_waits_retry_after_then_succeeds() {
    let kit = kit();
    let fake = Fake::start(|history| match history.len() {
        1 => Canned::json(
            403,
            json!({"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}),
        )
        .header("retry-after", 1),
        _ => Canned::json(200, repo_json()),
    })
    .await;
    let client = token_client(&fake, kit.options.clone());
    assert_eq!(client.get_repo(&repo()).await.unwrap().full_name, "octo-org/widgets");
    assert_eq!(kit.sleeper.waits(), [Duration::from_secs(1)]);
    assert_eq!(fake.requests().len(), 2);
}

#[tokio::test]
async fn a_secondary_rate_limit_without_retry_after_waits_a_minute() {
    let kit = kit();
    let fake = Fake::start(|history| match history.len() {
        1 => Canned::json(403, json!({"message": "You have exceeded a secondary rate limit."})),
        _ => Canned::json(200, repo_json()),
    })
    .await;
    token_client(&fake, kit.options.clone())
        .get_repo(&repo())
        .await
        .unwrap();
    assert_eq!(kit.sleeper.waits(), [Duration::from_secs(60)]);
}

#[tokio::test]
async fn a_primary_rate_limit_far_from_its_reset_fails_at_once() {
    let kit = kit();
    let reset = kit.clock.epoch_seconds() + 3600;
    let fake = Fake::start(move |_| {
        Canned::json(
            403,
            json!({"message": "API rate limit exceeded for installation ID 1."}),
        )
        .header("x-ratelimit-remaining", 0)
        .header("x-ratelimit-limit", 5000)
        .header("x-ratelimit-reset", reset)
    })
    .await;
    let client = token_client(&fake, kit.options.clone());
    let error = client.get_repo(&repo()).await.unwrap_err();
    let GithubError::RateLimited { reset_at, .. } = &error else {
        panic!("{error:?}");
    };
    let reset_at = reset_at.unwrap().duration_since(UNIX_EPOCH).unwrap().as_secs();
    assert!((reset..=reset + 1).contains(&reset_at), "{reset_at} vs {reset}");
    assert!(
        error
            .to_string()
            .starts_with("GET /repos/octo-org/widgets: rate limited by GitHub until ")
    );
    assert!(kit.sleeper.waits().is_empty());
    assert_eq!(fake.requests().len(), 1);
    let stats = client.stats().snapshot();
    assert_eq!(stats.rate_limit_remaining, Some(0));
    assert_eq!(stats.rate_limit_limit, Some(5000));
    assert_eq!(stats.rate_limit_reset, Some(reset));
    assert_eq!(stats.calls_by_class, [0, 0, 0, 1, 0]);
}

#[tokio::test]
async fn a_primary_rate_limit_close_to_its_reset_is_waited_out() {
    let kit = kit();
    let reset = kit.clock.epoch_seconds() + 10;
    let fake = Fake::start(move |history| match history.len() {
        1 => Canned::json(429, json!({"message": "API rate limit exceeded"}))
            .header("x-ratelimit-remaining", 0)
            .header("x-ratelimit-reset", reset),
        _ => Canned::json(200, repo_json()).header("x-ratelimit-remaining", 4999),
    })
    .await;
    let client = token_client(&fake, kit.options.clone());
    client.get_repo(&repo()).await.unwrap();
    assert_eq!(kit.sleeper.waits(), [Duration::from_secs(11)]);
    assert_eq!(client.stats().snapshot().rate_limit_remaining, Some(4999));
}

#[tokio::test]
async fn server_errors_are_retried_with_growing_jittered_backoff() {
    let kit = kit();
    let fake = Fake::start(|history| match history.len() {
        1 | 2 => Canned::json(502, json!({"message": "Server Error"})),
        _ => Canned::json(200, repo_json()),
    })
    .await;
    let client = token_client(&fake, kit.options.clone());
    client.get_repo(&repo()).await.unwrap();
    let waits = kit.sleeper.waits();
    assert_eq!(waits.len(), 2);
    assert!(
        waits[0] <= Duration::from_secs(1) && waits[1] <= Duration::from_secs(2),
        "{waits:?}"
    );
    let stats = client.stats().snapshot();
    assert_eq!(stats.calls_total, 3);
    assert_eq!(stats.calls_by_class, [0, 1, 0, 0, 2]);
}

#[tokio::test]
async fn server_errors_end_after_the_last_attempt() {
    let kit = kit();
    let fake = Fake::start(|_| Canned::json(503, json!({"message": "Unavailable"}))).await;
    let error = token_client(&fake, kit.options.clone())
        .get_repo(&repo())
        .await
        .unwrap_err();
    assert!(matches!(error, GithubError::Server { status: 503, .. }), "{error:?}");
    assert_eq!(fake.requests().len(), 4);
    assert_eq!(kit.sleeper.waits().len(), 3);
}

#[tokio::test]
async fn a_422_is_a_validation_error_with_githubs_errors() {
    let fake = Fake::start(|_| {
        Canned::json(
            422,
            json!({
                "message": "Validation Failed",
                "errors": [
                    {"resource": "PullRequest", "code": "custom", "message": "A pull request already exists for octo-org:fix."},
                    {"resource": "PullRequest", "field": "base", "code": "invalid"},
                    "plain text error"
                ],
                "documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request"
            }),
        )
    })
    .await;
    let pull = NewPull {
        title: "Fix".into(),
        body: "Fixes it".into(),
        head: "fix".into(),
        base: "main".into(),
        draft: false,
    };
    let error = token_client(&fake, kit().options)
        .create_pull(&repo(), &pull)
        .await
        .unwrap_err();
    let GithubError::Validation { message, errors, .. } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(message, "Validation Failed");
    assert_eq!(errors.len(), 3);
    assert_eq!(errors[1].field.as_deref(), Some("base"));
    assert_eq!(errors[2].message.as_deref(), Some("plain text error"));
    assert_eq!(
        error.to_string(),
        "POST /repos/octo-org/widgets/pulls: GitHub refused the request (422): Validation Failed \
         (PullRequest: A pull request already exists for octo-org:fix.; PullRequest.base: invalid; plain text error)"
    );
    assert_eq!(
        fake.requests()[0].body,
        json!({"title": "Fix", "body": "Fixes it", "head": "fix", "base": "main", "draft": false})
    );
}

/// The secret filter sits where request bodies are serialised: a pull request's title and body
/// (like every write) reach GitHub with the token shapes and held secrets replaced.
#[tokio::test]
async fn secrets_are_withheld_from_request_bodies() {
    let fake = Fake::start(|_| Canned::json(422, json!({"message": "Validation Failed", "errors": []}))).await;
    crate::redact::register(&SecretString::from("the-held-secret-of-the-client-test"));
    let pull = NewPull {
        title: "Fix ghs_16C7e42F292c6912E7710c838347Ae178B4a".into(),
        body: "Key: the-held-secret-of-the-client-test".into(),
        head: "fix".into(),
        base: "main".into(),
        draft: false,
    };
    let _ = token_client(&fake, kit().options).create_pull(&repo(), &pull).await;
    assert_eq!(
        fake.requests()[0].body,
        json!({
            "title": "Fix [redacted]",
            "body": format!("Key: [redacted]{}", crate::redact::WITHHELD_NOTE),
            "head": "fix",
            "base": "main",
            "draft": false,
        })
    );
}

#[tokio::test]
async fn errors_never_show_the_token() {
    let fake = Fake::start(|history| {
        let request = history.last().unwrap();
        match request.path.rsplit('/').next().unwrap() {
            "unauthorized" => Canned::json(401, json!({"message": "Bad credentials"})),
            "forbidden" => Canned::json(403, json!({"message": "Resource not accessible by integration"})),
            "invalid" => Canned::json(422, json!({"message": "Validation Failed", "errors": []})),
            "broken" => Canned::json(500, json!({"message": "oops"})),
            "garbled" => Canned::json(200, json!(["not", "a", "repo"])),
            _ => Canned::json(404, json!({"message": "Not Found"})),
        }
    })
    .await;
    let options = ClientOptions {
        retry: RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        },
        ..kit().options
    };
    let client = token_client(&fake, options.clone());
    let mut errors = Vec::new();
    for name in ["unauthorized", "forbidden", "invalid", "broken", "garbled", "missing"] {
        let repo = RepoName::new("octo-org", name).unwrap();
        errors.push(client.get_repo(&repo).await.unwrap_err());
    }
    // A server that is not there.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        Url::parse(&format!("http://{}", listener.local_addr().unwrap())).unwrap()
    };
    let unreachable = GithubClient::new(&closed, Auth::Token(SecretString::from(TOKEN)), options).unwrap();
    errors.push(unreachable.get_repo(&repo()).await.unwrap_err());

    assert!(matches!(errors[0], GithubError::Unauthorized { .. }));
    assert!(matches!(errors[1], GithubError::Forbidden { .. }));
    assert!(matches!(errors[2], GithubError::Validation { .. }));
    assert!(matches!(errors[3], GithubError::Server { status: 500, .. }));
    assert!(matches!(errors[4], GithubError::Decode { .. }));
    assert!(errors[5].is_not_found());
    assert!(matches!(errors[6], GithubError::Transport { .. }), "{:?}", errors[6]);
    for error in &errors {
        let shown = format!("{error} | {error:?}");
        assert!(!shown.contains(TOKEN) && !shown.contains("Distinctive"), "{shown}");
        assert!(shown.contains("GET /repos/octo-org/"), "{shown}");
    }
    assert!(!format!("{client:?} {unreachable:?}").contains("Distinctive"));
    // It was sent, though: in the header only.
    let request = &fake.requests()[0];
    assert_eq!(request.bearer(), Some(TOKEN));
    assert!(!request.path.contains("Distinctive") && request.query.is_none());
}

// ---------------------------------------------------------------------------------------------
// URLs and typed calls

#[tokio::test]
async fn a_github_enterprise_base_path_is_kept() {
    let fake = Fake::start(|_| Canned::json(200, repo_json())).await;
    for base in ["api/v3", "api/v3/"] {
        let url = fake.url.join(base).unwrap();
        let client = GithubClient::new(&url, Auth::Token(SecretString::from(TOKEN)), kit().options).unwrap();
        client.get_repo(&repo()).await.unwrap();
    }
    assert_eq!(
        fake.routes(),
        [
            "GET /api/v3/repos/octo-org/widgets",
            "GET /api/v3/repos/octo-org/widgets"
        ]
    );
}

#[tokio::test]
async fn a_path_with_an_empty_or_dot_segment_is_never_sent() {
    let fake = Fake::start(|_| Canned::json(200, json!([]))).await;
    let client = token_client(&fake, kit().options);
    for sha in ["", ".", ".."] {
        let error = client.pulls_for_commit(&repo(), sha).await.unwrap_err();
        assert!(
            matches!(&error, GithubError::InvalidInput { message, .. } if message.contains("empty, `.` or `..` segment")),
            "{sha:?}: {error:?}"
        );
    }
    assert_eq!(
        client.pulls_for_commit(&repo(), "").await.unwrap_err().to_string(),
        "GET /repos/octo-org/widgets/commits//pulls: the path has an empty, `.` or `..` segment"
    );
    assert!(fake.requests().is_empty());
}

#[tokio::test]
async fn get_file_decodes_base64_and_maps_what_is_not_a_file() {
    let text = "[sandbox]\nimage = \"python:3.12\"\n# ünïcödé\n".repeat(5);
    let encoded = STANDARD.encode(text.as_bytes());
    let wrapped: String = encoded
        .as_bytes()
        .chunks(60)
        .map(|line| format!("{}\n", std::str::from_utf8(line).unwrap()))
        .collect();
    let size = text.len();
    let fake = Fake::start(move |history| {
        let request = history.last().unwrap();
        match request.path.as_str() {
            "/repos/octo-org/widgets/contents/.github/pitcrew.toml" => Canned::json(
                200,
                json!({"type": "file", "encoding": "base64", "size": size, "name": "pitcrew.toml",
                       "path": ".github/pitcrew.toml", "content": wrapped}),
            ),
            "/repos/octo-org/widgets/contents/src" => Canned::json(200, json!([{"type": "file", "name": "a.rs"}])),
            "/repos/octo-org/widgets/contents/big.bin" => Canned::json(
                200,
                json!({"type": "file", "encoding": "none", "size": 5_000_000, "content": ""}),
            ),
            _ => Canned::json(404, json!({"message": "Not Found"})),
        }
    })
    .await;
    let client = token_client(&fake, kit().options);
    let file = client
        .get_file(&repo(), ".github/pitcrew.toml", "feature/x")
        .await
        .unwrap();
    assert_eq!(file.as_deref(), Some(text.as_str()));
    assert_eq!(fake.requests()[0].query.as_deref(), Some("ref=feature%2Fx"));

    assert_eq!(client.get_file(&repo(), "no such file", "main").await.unwrap(), None);
    assert_eq!(
        fake.requests()[1].path,
        "/repos/octo-org/widgets/contents/no%20such%20file"
    );
    let directory = client.get_file(&repo(), "src", "main").await.unwrap_err();
    assert!(
        matches!(directory, GithubError::NotAFile { ref kind, .. } if kind == "directory"),
        "{directory:?}"
    );
    let big = client.get_file(&repo(), "big.bin", "main").await.unwrap_err();
    assert!(
        matches!(big, GithubError::FileTooLarge { size: 5_000_000, .. }),
        "{big:?}"
    );
    let escape = client.get_file(&repo(), "../etc/passwd", "main").await.unwrap_err();
    assert!(matches!(escape, GithubError::InvalidInput { .. }), "{escape:?}");
    assert_eq!(fake.requests().len(), 4);
}

fn annotation(i: u64) -> Annotation {
    Annotation {
        path: format!("src/file{i}.rs"),
        start_line: i + 1,
        end_line: i + 1,
        start_column: None,
        end_column: None,
        annotation_level: AnnotationLevel::Warning,
        message: format!("problem {i}"),
        title: None,
        raw_details: None,
    }
}

fn check_run_json(id: u64) -> Value {
    json!({"id": id, "name": "pitcrew", "head_sha": "ecdd80bb57125d7ba9641ffaa4d7d2c19d3f3091",
           "status": "completed", "conclusion": "failure", "html_url": "https://github.com/o/r/runs/4"})
}

#[tokio::test]
async fn annotations_are_sent_fifty_per_request() {
    let fake = Fake::start(|_| Canned::json(200, check_run_json(4))).await;
    let client = token_client(&fake, kit().options);
    let completed = UNIX_EPOCH + Duration::from_secs(1_468_275_250);
    let update = CheckRunUpdate {
        status: Some(CheckStatus::Completed),
        conclusion: Some(CheckConclusion::Failure),
        completed_at: Some(completed),
        details_url: None,
        output: Some(CheckRunOutput {
            title: "3 tests failed".into(),
            summary: "Summary".into(),
            text: None,
            annotations: (0..120).map(annotation).collect(),
        }),
    };
    let run = client.update_check_run(&repo(), CheckRunId(4), &update).await.unwrap();
    assert_eq!(run.id, CheckRunId(4));
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert_eq!(request.route(), "PATCH /repos/octo-org/widgets/check-runs/4");
        assert_eq!(request.body["output"]["title"], "3 tests failed");
        assert_eq!(request.body["output"]["summary"], "Summary");
    }
    let counts: Vec<usize> = requests
        .iter()
        .map(|r| r.body["output"]["annotations"].as_array().unwrap().len())
        .collect();
    assert_eq!(counts, [50, 50, 20]);
    assert_eq!(requests[0].body["conclusion"], "failure");
    assert_eq!(requests[0].body["status"], "completed");
    assert_eq!(requests[0].body["completed_at"], "2016-07-11T22:14:10Z");
    assert_eq!(
        requests[0].body["output"]["annotations"][0],
        json!({"path": "src/file0.rs", "start_line": 1, "end_line": 1, "annotation_level": "warning", "message": "problem 0"})
    );
    assert_eq!(requests[2].body["output"]["annotations"][19]["path"], "src/file119.rs");
    for follow_up in &requests[1..] {
        let keys: Vec<&String> = follow_up.body.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["output"]);
    }
}

#[tokio::test]
async fn a_new_check_run_sends_documented_fields_and_batches_annotations() {
    let fake = Fake::start(|history| {
        let status = if history.len() == 1 { 201 } else { 200 };
        Canned::json(status, check_run_json(11))
    })
    .await;
    let client = token_client(&fake, kit().options);
    let run = NewCheckRun {
        name: "pitcrew".into(),
        head_sha: CommitSha("ecdd80bb57125d7ba9641ffaa4d7d2c19d3f3091".into()),
        status: CheckStatus::InProgress,
        started_at: Some(UNIX_EPOCH + Duration::from_secs(1_468_275_250)),
        conclusion: None,
        completed_at: None,
        details_url: Some("https://pitcrew.example/jobs/1".into()),
        external_id: Some("job-1".into()),
        output: Some(CheckRunOutput {
            title: "Working".into(),
            summary: "Started".into(),
            text: Some("details".into()),
            annotations: (0..51).map(annotation).collect(),
        }),
    };
    client.create_check_run(&repo(), &run).await.unwrap();
    let requests = fake.requests();
    assert_eq!(
        requests.iter().map(Recorded::route).collect::<Vec<_>>(),
        [
            "POST /repos/octo-org/widgets/check-runs",
            "PATCH /repos/octo-org/widgets/check-runs/11"
        ]
    );
    let mut first = requests[0].body.clone();
    assert_eq!(first["output"]["annotations"].as_array().unwrap().len(), 50);
    first["output"]["annotations"] = json!("…");
    assert_eq!(
        first,
        json!({
            "name": "pitcrew",
            "head_sha": "ecdd80bb57125d7ba9641ffaa4d7d2c19d3f3091",
            "status": "in_progress",
            "started_at": "2016-07-11T22:14:10Z",
            "details_url": "https://pitcrew.example/jobs/1",
            "external_id": "job-1",
            "output": {"title": "Working", "summary": "Started", "text": "details", "annotations": "…"}
        })
    );
    assert_eq!(requests[1].body["output"]["annotations"].as_array().unwrap().len(), 1);
    assert_eq!(requests[1].body["output"]["text"], "details");
}

#[tokio::test]
async fn comments_reactions_reviews_and_permissions_send_documented_bodies() {
    let fake = Fake::start(|history| {
        let request = history.last().unwrap();
        let path = request.path.as_str();
        if path.ends_with("/reactions") {
            return Canned::json(201, fixture("openapi-examples/reaction.json"));
        }
        if path.ends_with("/replies") {
            return Canned::json(201, fixture("openapi-examples/pull-request-review-comment.json"));
        }
        if path.ends_with("/reviews") {
            return Canned::json(200, fixture("openapi-examples/pull-request-review.json"));
        }
        if path.ends_with("/permission") {
            let body = match path.split('/').nth(5).unwrap() {
                "maintainer" => json!({"permission": "write", "role_name": "maintain", "user": null}),
                "custom" => json!({"permission": "write", "role_name": "release-manager", "user": null}),
                "reader" => json!({"permission": "read", "role_name": "read", "user": null}),
                _ => return Canned::json(404, json!({"message": "Not Found"})),
            };
            return Canned::json(200, body);
        }
        let status = if request.method == "POST" { 201 } else { 200 };
        Canned::json(status, fixture("openapi-examples/issue-comment.json"))
    })
    .await;
    let client = token_client(&fake, kit().options);
    let repo = repo();
    let comment = client
        .create_issue_comment(&repo, IssueNumber(7), "On it")
        .await
        .unwrap();
    assert_eq!(comment.id, CommentId(1));
    client.update_issue_comment(&repo, CommentId(1), "Done").await.unwrap();
    client
        .reply_to_review_comment(&repo, IssueNumber(7), CommentId(55), "Fixed")
        .await
        .unwrap();
    client
        .add_issue_comment_reaction(&repo, CommentId(1), Reaction::Eyes)
        .await
        .unwrap();
    client
        .add_review_comment_reaction(&repo, CommentId(55), Reaction::ThumbsUp)
        .await
        .unwrap();
    client
        .add_issue_reaction(&repo, IssueNumber(7), Reaction::Rocket)
        .await
        .unwrap();
    let review = NewReview {
        commit_id: Some(CommitSha("ecdd80bb57125d7ba9641ffaa4d7d2c19d3f3091".into())),
        body: "Two notes".into(),
        event: ReviewEvent::RequestChanges,
        comments: vec![
            ReviewCommentDraft {
                path: "src/lib.rs".into(),
                line: 12,
                side: Side::Right,
                start_line: None,
                start_side: None,
                body: "off by one".into(),
            },
            ReviewCommentDraft {
                path: "src/main.rs".into(),
                line: 30,
                side: Side::Right,
                start_line: Some(26),
                start_side: Some(Side::Right),
                body: "simplify".into(),
            },
        ],
    };
    assert_eq!(
        client
            .create_review(&repo, IssueNumber(7), &review)
            .await
            .unwrap()
            .state,
        "CHANGES_REQUESTED"
    );
    let permissions = [
        client
            .collaborator_permission(&repo, &Login::parse("maintainer").unwrap())
            .await
            .unwrap(),
        client
            .collaborator_permission(&repo, &Login::parse("custom").unwrap())
            .await
            .unwrap(),
        client
            .collaborator_permission(&repo, &Login::parse("reader").unwrap())
            .await
            .unwrap(),
        client
            .collaborator_permission(&repo, &Login::parse("stranger").unwrap())
            .await
            .unwrap(),
    ];
    assert_eq!(
        permissions,
        [
            Permission::Maintain,
            Permission::Write,
            Permission::Read,
            Permission::None
        ]
    );
    assert_eq!(permissions.map(Permission::may_write), [true, true, false, false]);

    let seen: Vec<(String, Value)> = fake.requests().into_iter().map(|r| (r.route(), r.body)).collect();
    let expected = [
        (
            "POST /repos/octo-org/widgets/issues/7/comments",
            json!({"body": "On it"}),
        ),
        (
            "PATCH /repos/octo-org/widgets/issues/comments/1",
            json!({"body": "Done"}),
        ),
        (
            "POST /repos/octo-org/widgets/pulls/7/comments/55/replies",
            json!({"body": "Fixed"}),
        ),
        (
            "POST /repos/octo-org/widgets/issues/comments/1/reactions",
            json!({"content": "eyes"}),
        ),
        (
            "POST /repos/octo-org/widgets/pulls/comments/55/reactions",
            json!({"content": "+1"}),
        ),
        (
            "POST /repos/octo-org/widgets/issues/7/reactions",
            json!({"content": "rocket"}),
        ),
        (
            "POST /repos/octo-org/widgets/pulls/7/reviews",
            json!({
                "commit_id": "ecdd80bb57125d7ba9641ffaa4d7d2c19d3f3091",
                "body": "Two notes",
                "event": "REQUEST_CHANGES",
                "comments": [
                    {"path": "src/lib.rs", "line": 12, "side": "RIGHT", "body": "off by one"},
                    {"path": "src/main.rs", "line": 30, "side": "RIGHT", "start_line": 26, "start_side": "RIGHT", "body": "simplify"}
                ]
            }),
        ),
        (
            "GET /repos/octo-org/widgets/collaborators/maintainer/permission",
            Value::Null,
        ),
        (
            "GET /repos/octo-org/widgets/collaborators/custom/permission",
            Value::Null,
        ),
        (
            "GET /repos/octo-org/widgets/collaborators/reader/permission",
            Value::Null,
        ),
        (
            "GET /repos/octo-org/widgets/collaborators/stranger/permission",
            Value::Null,
        ),
    ];
    let expected: Vec<(String, Value)> = expected.into_iter().map(|(r, b)| (r.to_owned(), b)).collect();
    assert_eq!(seen, expected);
}

#[tokio::test]
async fn pull_files_are_read_page_by_page() {
    let fake = Fake::start(|history| {
        let request = history.last().unwrap();
        let count = if request.query.as_deref() == Some("per_page=100&page=1") {
            100
        } else {
            3
        };
        let files: Vec<Value> = (0..count)
            .map(|i| json!({"filename": format!("f{i}"), "status": "modified", "additions": 1, "deletions": 0}))
            .collect();
        Canned::json(200, Value::Array(files))
    })
    .await;
    let files = token_client(&fake, kit().options)
        .list_pull_files(&repo(), IssueNumber(3))
        .await
        .unwrap();
    assert_eq!(files.items.len(), 103);
    assert!(!files.truncated);
    let queries: Vec<Option<String>> = fake.requests().into_iter().map(|r| r.query).collect();
    assert_eq!(
        queries,
        [
            Some("per_page=100&page=1".to_owned()),
            Some("per_page=100&page=2".to_owned())
        ]
    );
}

/// `count` files of a pull request, served `per_page` at a time with GitHub's `Link` header; the
/// next link of page `evil_page` (if any) points at `evil` instead.
fn linked_files(count: usize, evil: Option<(usize, String)>) -> impl Fn(&[Recorded]) -> Canned + Send + Sync {
    move |history| {
        let request = history.last().unwrap();
        let query: Vec<(String, String)> =
            url::form_urlencoded::parse(request.query.as_deref().unwrap_or("").as_bytes())
                .into_owned()
                .collect();
        let get = |name: &str| {
            query
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.parse::<usize>().unwrap())
        };
        let per_page = get("per_page").unwrap_or(30);
        let page = get("page").unwrap_or(1);
        let files: Vec<Value> = ((page - 1) * per_page..(page * per_page).min(count))
            .map(|i| json!({"filename": format!("f{i}"), "status": "modified", "additions": 1, "deletions": 0}))
            .collect();
        let last = count.div_ceil(per_page);
        let link = |n: usize| format!("</repos/octo-org/widgets/pulls/3/files?per_page={per_page}&page={n}>");
        let mut canned = Canned::json(200, Value::Array(files));
        if page < last {
            let next = match &evil {
                Some((at, url)) if *at == page => format!("<{url}>"),
                _ => link(page + 1),
            };
            canned = canned.header("link", format!("{next}; rel=\"next\", {}; rel=\"last\"", link(last)));
        }
        canned
    }
}

#[tokio::test]
async fn pull_files_follow_the_link_header_to_the_end() {
    // Regression: paged lists stopped at ten pages of a hundred.
    let fake = Fake::start_strict(linked_files(1_001, None)).await;
    let files = token_client(&fake, kit().options)
        .list_pull_files(&repo(), IssueNumber(3))
        .await
        .unwrap();
    assert_eq!(files.items.len(), 1_001);
    assert_eq!(files.items[1_000].filename, "f1000");
    assert!(!files.truncated);
    let requests = fake.requests();
    assert_eq!(requests.len(), 11);
    assert_eq!(requests[10].query.as_deref(), Some("per_page=100&page=11"));
    assert!(requests.iter().all(|r| r.bearer() == Some(TOKEN)));
}

#[tokio::test]
async fn pull_files_stop_at_githubs_limit_and_say_so() {
    let fake = Fake::start_strict(linked_files(3_500, None)).await;
    let files = token_client(&fake, kit().options)
        .list_pull_files(&repo(), IssueNumber(3))
        .await
        .unwrap();
    assert_eq!(files.items.len(), 3_000);
    assert!(files.truncated);
    assert_eq!(fake.requests().len(), 30);
}

#[tokio::test]
async fn a_link_header_pointing_off_the_api_is_refused() {
    let other = Fake::start(|_| Canned::json(200, json!([]))).await;
    let elsewhere = other
        .url
        .join("repos/octo-org/widgets/pulls/3/files?page=3")
        .unwrap()
        .to_string();
    let fake = Fake::start_strict(linked_files(1_001, Some((2, elsewhere.clone())))).await;
    let error = token_client(&fake, kit().options)
        .list_pull_files(&repo(), IssueNumber(3))
        .await
        .unwrap_err();
    let port = other.url.port().unwrap();
    assert_eq!(
        error.to_string(),
        format!(
            "GET /repos/octo-org/widgets/pulls/3/files: unexpected response: the `Link` header sends the next page to \
             http://127.0.0.1:{port}, not to the API at http://127.0.0.1:{}; not followed",
            fake.url.port().unwrap()
        )
    );
    assert_eq!(fake.requests().len(), 2);
    assert!(other.requests().is_empty(), "the token went to another host");
}

// ---------------------------------------------------------------------------------------------
// Check runs of a commit, GitHub Actions, pull requests of a commit

/// GitHub's example `name` from the full description's `components/examples`.
fn description_example(name: &str) -> Value {
    Spec::github_full()
        .unwrap()
        .root()
        .pointer(&format!("/components/examples/{name}/value"))
        .unwrap_or_else(|| panic!("no example {name}"))
        .clone()
}

/// The `Host` the request was sent to, for redirects to the same host.
fn host(request: &Recorded) -> String {
    request.headers["host"].to_str().unwrap().to_owned()
}

#[tokio::test]
async fn check_runs_of_a_ref_are_read_page_by_page_with_the_filter() {
    let fake = Fake::start_strict(|history| {
        let request = history.last().unwrap();
        let count = if request.query.as_deref().unwrap().ends_with("&page=1") {
            100
        } else {
            2
        };
        let template = fixture("octocrab/commit_check_runs.json")["check_runs"][0].clone();
        let runs: Vec<Value> = (0..count)
            .map(|i| {
                let mut run = template.clone();
                run["id"] = json!(1000 + i);
                run
            })
            .collect();
        Canned::json(200, json!({"total_count": 102, "check_runs": runs}))
    })
    .await;
    const JOB_URL: &str =
        "https://github.com/iamjpotts/demo_docker_registry_auto_gen_tls/actions/runs/6028130407/job/16354767716";
    let client = token_client(&fake, kit().options);
    let runs = client
        .list_check_runs_for_ref(&repo(), "feature/x", Some("Cargo test"), RunFilter::All)
        .await
        .unwrap();
    assert_eq!(runs.len(), 102);
    assert_eq!(runs[101].id, 1001);
    assert_eq!(
        runs[0],
        CheckRunSummary {
            id: 1000,
            name: "Cargo test on nix (ubuntu-20.04, stable)".into(),
            head_sha: "c3b93769f009d1738363041806908cb3739c88d9".into(),
            status: "completed".into(),
            conclusion: Some("success".into()),
            html_url: Some(JOB_URL.into()),
            details_url: Some(JOB_URL.into()),
            app: Some(AppSummary {
                id: 15368,
                slug: Some("github-actions".into())
            }),
            output: CheckOutputSummary::default(),
            check_suite_id: Some(15_656_410_021),
        }
    );
    let requests = fake.requests();
    let seen: Vec<(String, Option<String>)> = requests.iter().map(|r| (r.route(), r.query.clone())).collect();
    let route = "GET /repos/octo-org/widgets/commits/feature%2Fx/check-runs".to_owned();
    assert_eq!(
        seen,
        [
            (
                route.clone(),
                Some("check_name=Cargo+test&filter=all&per_page=100&page=1".to_owned())
            ),
            (
                route,
                Some("check_name=Cargo+test&filter=all&per_page=100&page=2".to_owned())
            ),
        ]
    );
    assert_eq!(requests[0].bearer(), Some(TOKEN));
}

#[tokio::test]
async fn workflow_runs_jobs_reruns_and_commit_pulls_send_documented_requests() {
    let fake = Fake::start_strict(|history| {
        let request = history.last().unwrap();
        match request.path.as_str() {
            "/repos/octo-org/widgets/actions/runs" => Canned::json(200, description_example("workflow-run-paginated")),
            "/repos/octo-org/widgets/actions/runs/29679449/jobs" => {
                Canned::json(200, description_example("job-paginated"))
            }
            // A run with more jobs than pitcrew reads.
            "/repos/octo-org/widgets/actions/runs/99/jobs" => {
                let job = description_example("job");
                Canned::json(200, json!({"total_count": 5000, "jobs": vec![job; 100]}))
            }
            "/repos/octo-org/widgets/actions/jobs/399444496/rerun" => Canned::json(201, json!({})),
            "/repos/octo-org/widgets/commits/6dcb09b5b57875f334f61aebed695e2e4193db5e/pulls" => {
                let pull = fixture("openapi-examples/pull-request-simple-items.json")[0].clone();
                let mut pulls = Vec::new();
                for (number, state, base) in [(1, "closed", "main"), (2, "open", "release"), (3, "closed", "main")] {
                    let mut pull = pull.clone();
                    pull["number"] = json!(number);
                    pull["state"] = json!(state);
                    pull["base"]["ref"] = json!(base);
                    pulls.push(pull);
                }
                Canned::json(200, Value::Array(pulls))
            }
            _ => Canned::json(404, json!({"message": "Not Found"})),
        }
    })
    .await;
    let client = token_client(&fake, kit().options);
    let repo = repo();

    let runs = client
        .list_workflow_runs_for_sha(&repo, "acb5820ced9479c074f688cc328bf03f341a511d")
        .await
        .unwrap();
    assert_eq!(
        runs,
        [WorkflowRunSummary {
            id: 30_433_642,
            name: Some("Build".into()),
            head_sha: "acb5820ced9479c074f688cc328bf03f341a511d".into(),
            head_branch: Some("master".into()),
            status: Some("queued".into()),
            conclusion: None,
            run_attempt: Some(1),
            html_url: Some("https://github.com/octo-org/octo-repo/actions/runs/30433642".into()),
            event: Some("push".into()),
            pull_requests: Vec::new(),
        }]
    );

    let jobs = client
        .list_jobs_for_run(&repo, 29_679_449, RunFilter::Latest)
        .await
        .unwrap();
    assert_eq!(jobs.len(), 1);
    let job = &jobs[0];
    assert_eq!((job.id, job.run_id, job.run_attempt), (399_444_496, 29_679_449, None));
    assert_eq!((job.name.as_str(), job.status.as_str()), ("build", "completed"));
    assert_eq!(job.conclusion.as_deref(), Some("success"));
    assert_eq!(job.head_sha, "f83a356604ae3c5d03e1b46ef4d1ca77d64a90b0");
    assert_eq!(job.steps.len(), 10);
    assert_eq!(
        job.steps[9],
        ActionsStep {
            name: "Complete job".into(),
            number: 17,
            status: "completed".into(),
            conclusion: Some("success".into()),
        }
    );
    // Ten pages at most, then what was read is returned.
    let many = client.list_jobs_for_run(&repo, 99, RunFilter::All).await.unwrap();
    assert_eq!(many.len(), 1000);

    client.rerun_job(&repo, 399_444_496).await.unwrap();
    let pulls = client
        .pulls_for_commit(&repo, "6dcb09b5b57875f334f61aebed695e2e4193db5e")
        .await
        .unwrap();
    let head = "6dcb09b5b57875f334f61aebed695e2e4193db5e".to_owned();
    assert_eq!(
        pulls,
        [
            CommitPull {
                number: 2,
                open: true,
                head_sha: head.clone(),
                base_ref: "release".into()
            },
            CommitPull {
                number: 1,
                open: false,
                head_sha: head.clone(),
                base_ref: "main".into()
            },
            CommitPull {
                number: 3,
                open: false,
                head_sha: head,
                base_ref: "main".into()
            },
        ]
    );

    let requests = fake.requests();
    let seen: Vec<String> = requests
        .iter()
        .map(|r| format!("{}?{}", r.route(), r.query.as_deref().unwrap_or("")))
        .collect();
    let mut expected = vec![
        "GET /repos/octo-org/widgets/actions/runs?head_sha=acb5820ced9479c074f688cc328bf03f341a511d&per_page=100&page=1"
            .to_owned(),
        "GET /repos/octo-org/widgets/actions/runs/29679449/jobs?filter=latest&per_page=100&page=1".to_owned(),
    ];
    expected.extend(
        (1..=10).map(|page| {
            format!("GET /repos/octo-org/widgets/actions/runs/99/jobs?filter=all&per_page=100&page={page}")
        }),
    );
    expected.push("POST /repos/octo-org/widgets/actions/jobs/399444496/rerun?".to_owned());
    expected.push(
        "GET /repos/octo-org/widgets/commits/6dcb09b5b57875f334f61aebed695e2e4193db5e/pulls?per_page=100&page=1"
            .to_owned(),
    );
    assert_eq!(seen, expected);
    let rerun = &requests[requests.len() - 2];
    assert_eq!(rerun.body, Value::Null, "a re-run sends no body");
}

#[tokio::test]
async fn a_job_log_is_fetched_from_the_redirect_without_the_token() {
    // Storage on another host (another port of 127.0.0.1 is another origin to reqwest).
    let storage = Fake::start(|_| Canned::text(200, "from elsewhere\n")).await;
    let elsewhere = storage.url.join("storage/logs/2?sig=cross").unwrap().to_string();
    let fake = Fake::start_strict(move |history| {
        let request = history.last().unwrap();
        match request.path.as_str() {
            "/repos/octo-org/widgets/actions/jobs/1/logs" => {
                Canned::redirect(302, &format!("http://{}/storage/logs/1?sig=same%2Bhost", host(request)))
            }
            "/repos/octo-org/widgets/actions/jobs/2/logs" => Canned::redirect(302, &elsewhere),
            "/repos/octo-org/widgets/actions/jobs/3/logs" => Canned::redirect(302, "/storage/logs/3?sig=relative"),
            path if path.starts_with(STORAGE_PREFIX) => Canned::text(200, "line 1\nline 2\n"),
            _ => Canned::json(404, json!({"message": "Not Found"})),
        }
    })
    .await;
    let client = token_client(&fake, kit().options);

    let log = client.download_job_log(&repo(), 1, 1 << 20).await.unwrap();
    assert_eq!(
        log,
        JobLogText {
            text: "line 1\nline 2\n".into(),
            truncated: false,
            total_bytes: 14
        }
    );
    let requests = fake.requests();
    assert_eq!(requests[0].route(), "GET /repos/octo-org/widgets/actions/jobs/1/logs");
    assert_eq!(requests[0].bearer(), Some(TOKEN));
    assert_eq!(requests[1].route(), "GET /storage/logs/1");
    assert_eq!(requests[1].query.as_deref(), Some("sig=same%2Bhost"));
    assert!(
        !requests[1].headers.contains_key("authorization"),
        "the token went to the signed URL: {:?}",
        requests[1].headers
    );

    let log = client.download_job_log(&repo(), 2, 1 << 20).await.unwrap();
    assert_eq!(log.text, "from elsewhere\n");
    let away = storage.requests();
    assert_eq!(away.len(), 1);
    assert_eq!(away[0].route(), "GET /storage/logs/2");
    assert!(!away[0].headers.contains_key("authorization"));

    let log = client.download_job_log(&repo(), 3, 1 << 20).await.unwrap();
    assert_eq!(log.text, "line 1\nline 2\n");
    let requests = fake.requests();
    let last = requests.last().unwrap();
    assert_eq!(last.route(), "GET /storage/logs/3");
    assert!(!last.headers.contains_key("authorization"));
}

/// What the client does with redirects it follows (a renamed or transferred repository): reqwest
/// keeps the token on the same host and port and drops it elsewhere. That is why a log download
/// does not follow its redirect: the signed URL may be on the API's own host.
#[tokio::test]
async fn followed_redirects_keep_the_token_on_the_same_host_only() {
    let elsewhere = Fake::start(|_| Canned::json(200, repo_json())).await;
    let moved = elsewhere.url.join("repos/octo-org/moved").unwrap().to_string();
    let fake = Fake::start(move |history| {
        let request = history.last().unwrap();
        match request.path.as_str() {
            "/repos/octo-org/renamed" => {
                Canned::redirect(301, &format!("http://{}/repos/octo-org/widgets", host(request)))
            }
            "/repos/octo-org/transferred" => Canned::redirect(301, &moved),
            _ => Canned::json(200, repo_json()),
        }
    })
    .await;
    let client = token_client(&fake, kit().options);
    client
        .get_repo(&RepoName::new("octo-org", "renamed").unwrap())
        .await
        .unwrap();
    client
        .get_repo(&RepoName::new("octo-org", "transferred").unwrap())
        .await
        .unwrap();
    let requests = fake.requests();
    assert_eq!(
        fake.routes(),
        [
            "GET /repos/octo-org/renamed",
            "GET /repos/octo-org/widgets",
            "GET /repos/octo-org/transferred"
        ]
    );
    assert_eq!(requests[1].bearer(), Some(TOKEN));
    let away = elsewhere.requests();
    assert_eq!(away[0].route(), "GET /repos/octo-org/moved");
    assert_eq!(away[0].bearer(), None);
}

#[tokio::test]
async fn a_long_log_keeps_its_tail_from_a_line_start() {
    let log: String = (0..20_000)
        .map(|i| format!("2024-05-01T12:00:00.0000000Z step output line {i:05}\n"))
        .collect();
    let served = log.clone();
    let fake = Fake::start_strict(move |history| {
        let request = history.last().unwrap();
        if request.path.starts_with(STORAGE_PREFIX) {
            Canned::text(200, served.clone())
        } else {
            Canned::redirect(302, &format!("http://{}/storage/logs/5?sig=x", host(request)))
        }
    })
    .await;
    let got = token_client(&fake, kit().options)
        .download_job_log(&repo(), 5, 1000)
        .await
        .unwrap();
    // The whole lines at the end that fit in 1000 bytes.
    let mut expected = String::new();
    for line in log.split_inclusive('\n').rev() {
        if expected.len() + line.len() > 1000 {
            break;
        }
        expected.insert_str(0, line);
    }
    assert!(expected.ends_with("line 19999\n") && expected.len() > 900, "{expected}");
    assert_eq!(got.text, expected);
    assert!(got.truncated);
    assert_eq!(got.total_bytes, log.len() as u64);
}

#[test]
fn log_tails_cut_at_line_starts_and_character_boundaries() {
    let tail = |chunks: &[&[u8]], max: usize| {
        let mut tail = api::LogTail::new(max);
        for chunk in chunks {
            tail.push(chunk);
        }
        tail.finish()
    };
    let text = |log: &JobLogText| (log.text.clone(), log.truncated, log.total_bytes);
    // Fits: kept whole.
    assert_eq!(text(&tail(&[b"ab\n", b"cd\n"], 6)), ("ab\ncd\n".into(), false, 6));
    // The cut falls right after a newline: nothing more is dropped.
    assert_eq!(text(&tail(&[b"ab\ncd\n"], 3)), ("cd\n".into(), true, 6));
    // The cut falls inside a line: the rest of that line goes too.
    assert_eq!(text(&tail(&[b"ab\ncd\nef"], 4)), ("ef".into(), true, 8));
    // One line longer than the limit: its end, from a character boundary ("é" is two bytes).
    assert_eq!(text(&tail(&["xxxxéé".as_bytes()], 3)), ("é".into(), true, 8));
    assert_eq!(text(&tail(&[b"abc\n"], 0)), (String::new(), true, 4));
    assert_eq!(text(&tail(&[], 10)), (String::new(), false, 0));
    // Byte by byte through the compaction threshold gives what one chunk gives.
    let log: Vec<u8> = (0..10_000).flat_map(|i| format!("line {i}\n").into_bytes()).collect();
    let bytes: Vec<&[u8]> = log.chunks(1).collect();
    assert_eq!(tail(&bytes, 100), tail(&[&log], 100));
    // Ten lines of ten bytes: the last hundred bytes start at a line.
    let last_ten: String = (9990..10_000).map(|i| format!("line {i}\n")).collect();
    assert_eq!(tail(&[&log], 100).text, last_ten);
    assert_eq!(tail(&[&log], 99).text, last_ten["line 9990\n".len()..]);
}

#[tokio::test]
async fn expired_or_missing_logs_are_distinct_errors() {
    let fake = Fake::start_strict(|history| {
        let request = history.last().unwrap();
        match request.path.as_str() {
            "/repos/octo-org/widgets/actions/jobs/7/logs" => Canned::json(
                410,
                json!({"message": "Gone", "documentation_url": "https://docs.github.com/rest/actions/workflow-jobs#download-job-logs-for-a-workflow-run", "status": "410"}),
            ),
            "/repos/octo-org/widgets/actions/jobs/8/logs" => {
                Canned::redirect(302, &format!("http://{}/storage/logs/8?sig=late", host(request)))
            }
            path if path.starts_with(STORAGE_PREFIX) => Canned::text(403, "AuthenticationFailed"),
            _ => Canned::json(404, json!({"message": "Not Found"})),
        }
    })
    .await;
    let client = token_client(&fake, kit().options);
    let expired = client.download_job_log(&repo(), 7, 100).await.unwrap_err();
    assert!(
        matches!(expired, GithubError::Status { status: 410, .. }),
        "{expired:?}"
    );
    assert_eq!(
        expired.to_string(),
        "GET /repos/octo-org/widgets/actions/jobs/7/logs: unexpected status 410: Gone"
    );
    let missing = client.download_job_log(&repo(), 9, 100).await.unwrap_err();
    assert!(missing.is_not_found(), "{missing:?}");
    // A signed URL the storage refuses: named without the URL (its query is a credential).
    let refused = client.download_job_log(&repo(), 8, 100).await.unwrap_err();
    assert!(
        matches!(refused, GithubError::Status { status: 403, .. }),
        "{refused:?}"
    );
    let shown = refused.to_string();
    assert_eq!(
        shown,
        "GET /repos/octo-org/widgets/actions/jobs/8/logs (the signed log URL it redirected to): unexpected status \
         403: Forbidden"
    );
}

// ---------------------------------------------------------------------------------------------
// GitHub's real response shapes

#[test]
fn githubs_example_responses_parse() {
    let parse = |relative: &str| fixture(relative);
    let examples = "openapi-examples";

    let token: AccessTokenResponse =
        serde_json::from_value(parse(&format!("{examples}/installation-token.json"))).unwrap();
    assert_eq!(token.token, "ghs_16C7e42F292c6912E7710c838347Ae178B4a");
    assert_eq!(
        time::parse_rfc3339(&token.expires_at),
        Some(UNIX_EPOCH + Duration::from_secs(1_468_275_250))
    );

    let run: CheckRun = serde_json::from_value(parse(&format!("{examples}/check-run.json"))).unwrap();
    assert_eq!(run.id, CheckRunId(4));
    assert_eq!(run.head_sha.as_str(), "ce587453ced02b1526dfb4cb910479d431683101");
    for name in [
        "check-run-example-of-completed-conclusion.json",
        "check-run-example-of-in-progress-conclusion.json",
    ] {
        let _: CheckRun = serde_json::from_value(parse(&format!("{examples}/{name}"))).unwrap();
    }
    let runs = parse("octocrab/commit_check_runs.json")["check_runs"].clone();
    let runs: Vec<CheckRun> = serde_json::from_value(runs).unwrap();
    assert!(!runs.is_empty());

    let pull: PullRequest = serde_json::from_value(parse(&format!("{examples}/pull-request.json"))).unwrap();
    assert_eq!(pull.number, IssueNumber(1347));
    assert_eq!(pull.head.branch, "new-topic");
    assert_eq!(pull.base.repo.as_ref().unwrap().full_name, "octocat/Hello-World");
    assert_eq!(pull.user.login, "octocat");
    assert!(pull.maintainer_can_modify);
    let recorded = parse("rust-lang-triagebot/diff/01-GET-repos_ehuss_triagebot-test_pulls_115.json");
    let pull: PullRequest = serde_json::from_value(recorded["response_body"].clone()).unwrap();
    assert_eq!(pull.number, IssueNumber(115));
    let mut deleted_fork = parse(&format!("{examples}/pull-request.json"));
    deleted_fork["head"]["repo"] = Value::Null;
    deleted_fork["body"] = Value::Null;
    let pull: PullRequest = serde_json::from_value(deleted_fork).unwrap();
    assert!(pull.head.repo.is_none() && pull.is_cross_repository() && pull.body.is_empty());

    let issue: Issue = serde_json::from_value(parse(&format!("{examples}/issue.json"))).unwrap();
    assert_eq!(issue.number, IssueNumber(1347));
    let comment: IssueComment = serde_json::from_value(parse(&format!("{examples}/issue-comment.json"))).unwrap();
    assert_eq!(comment.body, "Me too");
    let posted = parse("rust-lang-triagebot/post_comment/02-POST-repos_ehuss_triagebot-test_issues_115_comments.json");
    let _: IssueComment = serde_json::from_value(posted["response_body"].clone()).unwrap();

    let repository: Repository =
        serde_json::from_value(parse(&format!("{examples}/full-repository-default-response.json"))).unwrap();
    assert_eq!(repository.full_name, "octocat/Hello-World");
    assert_eq!(repository.default_branch, "master");

    let reply: ReviewComment =
        serde_json::from_value(parse(&format!("{examples}/pull-request-review-comment.json"))).unwrap();
    assert_eq!(reply.path, "file1.txt");
    let _: ReviewComment = serde_json::from_value(parse("octocrab/pull_request_review_comment.json")).unwrap();
    let review: Review = serde_json::from_value(parse(&format!("{examples}/pull-request-review.json"))).unwrap();
    assert_eq!(review.id, 80);
    let _: Review = serde_json::from_value(parse("octocrab/get_pull_request_review.json")).unwrap();

    let permission: PermissionResponse = serde_json::from_value(parse(&format!(
        "{examples}/repository-collaborator-permission-response-if-user-has-admin-permissions.json"
    )))
    .unwrap();
    assert_eq!(permission.permission, "admin");

    let files: Vec<PullFile> = serde_json::from_value(parse(&format!("{examples}/diff-entry-items.json"))).unwrap();
    assert_eq!(files[0].filename, "file1.txt");
    let recorded = parse("rust-lang-triagebot/files/02-GET-repos_ehuss_triagebot-test_pulls_115_files.json");
    let files: Vec<PullFile> = serde_json::from_value(recorded["response_body"].clone()).unwrap();
    assert!(!files.is_empty());

    let created = parse("rust-lang-triagebot/new_pr/01-POST-repos_ehuss_rust_pulls.json");
    let created: CreatedPull = serde_json::from_value(created["response_body"].clone()).unwrap();
    assert!(created.html_url.contains("/pull/"));

    let installation: Installation = serde_json::from_value(parse(&format!("{examples}/installation.json"))).unwrap();
    assert_eq!(installation.id, InstallationId(1));

    let file: ContentEntry = serde_json::from_value(parse(&format!(
        "{examples}/content-file-response-if-content-is-a-file.json"
    )))
    .unwrap();
    assert_eq!((file.kind.as_str(), file.size), ("file", 5362));
    for kind in ["symlink", "submodule"] {
        let entry: ContentEntry = serde_json::from_value(parse(&format!(
            "{examples}/content-file-response-if-content-is-a-{kind}.json"
        )))
        .unwrap();
        let error = api::decode_file(entry, "x").unwrap_err();
        assert!(
            matches!(error, GithubError::NotAFile { kind: ref k, .. } if k == kind),
            "{error:?}"
        );
    }
}

#[test]
fn githubs_check_run_workflow_run_and_job_examples_parse() {
    let page = fixture("openapi-examples/check-run-paginated.json");
    let runs: Vec<CheckRunSummary> = serde_json::from_value(page["check_runs"].clone()).unwrap();
    assert_eq!(
        runs,
        [CheckRunSummary {
            id: 4,
            name: "mighty_readme".into(),
            head_sha: "ce587453ced02b1526dfb4cb910479d431683101".into(),
            status: "completed".into(),
            conclusion: Some("neutral".into()),
            html_url: Some("https://github.com/github/hello-world/runs/4".into()),
            details_url: Some("https://example.com".into()),
            app: Some(AppSummary {
                id: 1,
                slug: Some("octoapp".into())
            }),
            output: CheckOutputSummary {
                title: Some("Mighty Readme report".into()),
                summary: Some("There are 0 failures, 2 warnings, and 1 notice.".into()),
                text: Some(
                    "You may have some misspelled words on lines 2 and 4. You also may want to add a section in your \
                     README about how to install your app."
                        .into()
                ),
            },
            check_suite_id: Some(5),
        }]
    );
    // A deleted app and a missing suite are `null`.
    let mut orphan = page["check_runs"][0].clone();
    orphan["app"] = Value::Null;
    orphan["check_suite"] = Value::Null;
    orphan["output"] = Value::Null;
    let orphan: CheckRunSummary = serde_json::from_value(orphan).unwrap();
    assert_eq!((orphan.app, orphan.check_suite_id), (None, None));
    assert_eq!(orphan.output, CheckOutputSummary::default());

    // A webhook's `workflow_run` is the API's object: this one ran for pull request 2.
    let delivery: Value = serde_json::from_str(&crate::llm::fixture(
        "webhooks/workflow_run/completed.with-pull-requests.payload.json",
    ))
    .unwrap();
    let run: WorkflowRunSummary = serde_json::from_value(delivery["workflow_run"].clone()).unwrap();
    assert_eq!(run.id, 289_782_451);
    assert_eq!(run.pull_requests, [2]);
    assert_eq!(run.run_attempt, Some(1));
    let mut unlisted = delivery["workflow_run"].clone();
    unlisted["pull_requests"] = Value::Null;
    let unlisted: WorkflowRunSummary = serde_json::from_value(unlisted).unwrap();
    assert!(unlisted.pull_requests.is_empty());

    let job: ActionsJob = serde_json::from_value(description_example("job")).unwrap();
    assert_eq!(
        job.html_url.as_deref(),
        Some("https://github.com/octo-org/octo-repo/runs/29679449/jobs/399444496")
    );
    assert_eq!(job.steps[0].name, "Set up job");
    let mut stepless = description_example("job");
    stepless.as_object_mut().unwrap().remove("steps");
    let stepless: ActionsJob = serde_json::from_value(stepless).unwrap();
    assert!(stepless.steps.is_empty());
}

#[test]
fn repository_names_parse_strictly() {
    let name: RepoName = "rust-lang/rust.vim".parse().unwrap();
    assert_eq!((name.owner(), name.name()), ("rust-lang", "rust.vim"));
    assert_eq!(name.to_string(), "rust-lang/rust.vim");
    assert_eq!(serde_json::to_value(&name).unwrap(), json!("rust-lang/rust.vim"));
    assert_eq!(
        serde_json::from_value::<RepoName>(json!("a/b")).unwrap(),
        RepoName::new("a", "b").unwrap()
    );
    for bad in ["", "rust", "a/b/c", "/b", "a/", "a/..", "a b/c", "a/c?x", "a/%2e"] {
        let error = bad.parse::<RepoName>().unwrap_err();
        assert!(error.to_string().contains("expected `owner/name`"), "{error}");
    }
    assert!(serde_json::from_value::<RepoName>(json!("nope")).is_err());
    assert_eq!(serde_json::to_value(IssueNumber(7)).unwrap(), json!(7));
}

#[test]
fn wrapped_base64_decodes_as_coreutils_wrote_it() {
    // `printf foobar | base64` and its prefixes: RFC 4648's test vectors.
    for (plain, encoded) in [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ] {
        assert_eq!(encoding::decode_wrapped_base64(encoded).unwrap(), plain.as_bytes());
    }
    // Every byte survives GitHub's 60-column lines and PEM's 64-column CRLF ones.
    let all: Vec<u8> = (0..=255).collect();
    let encoded = STANDARD.encode(&all);
    for (width, newline) in [(60, "\n"), (64, "\r\n")] {
        let wrapped: String = encoded
            .as_bytes()
            .chunks(width)
            .map(|line| format!("{}{newline}", std::str::from_utf8(line).unwrap()))
            .collect();
        assert_eq!(encoding::decode_wrapped_base64(&wrapped).unwrap(), all);
    }
}

#[test]
fn malformed_base64_is_refused_without_quoting_it() {
    let error = encoding::decode_wrapped_base64("Zm9v\nZm9v!").unwrap_err();
    assert_eq!(error, "invalid base64 character at offset 8 (whitespace not counted)");
    let error = encoding::decode_wrapped_base64("Zm9vZ").unwrap_err();
    assert_eq!(error, "base64 text ends in the middle of a group");
    let error = encoding::decode_wrapped_base64("Zm9").unwrap_err();
    assert_eq!(error, "base64 padding missing or in the wrong place");
    for bad in ["Zg==Zm9v", "Z===", "Zg=v", "Zh=="] {
        let error = encoding::decode_wrapped_base64(bad).unwrap_err();
        assert!(!error.contains(bad), "{bad}: {error}");
    }
}

// ---------------------------------------------------------------------------------------------
// GraphQL

/// A page of review threads as GitHub answers `ReviewThreads`.
fn threads_page(ids: &[&str], next: Option<&str>) -> Value {
    let nodes: Vec<Value> = ids
        .iter()
        .map(|id| {
            json!({"id": id, "isResolved": false, "isOutdated": false, "path": "src/lib.rs", "line": 3,
                   "originalLine": 3, "startLine": null, "comments": {"totalCount": 0, "nodes": []}})
        })
        .collect();
    json!({"data": {"repository": {"pullRequest": {"reviewThreads": {
        "pageInfo": {"hasNextPage": next.is_some(), "endCursor": next},
        "nodes": nodes,
    }}}}})
}

#[tokio::test]
async fn graphql_goes_to_graphql_beside_a_github_enterprise_rest_base() {
    let fake = Fake::start(|_| Canned::json(200, threads_page(&[], None))).await;
    for base in ["", "api/v3", "api/v3/"] {
        let url = fake.url.join(base).unwrap();
        let client = GithubClient::new(&url, Auth::Token(SecretString::from(TOKEN)), kit().options).unwrap();
        assert_eq!(client.review_threads(&repo(), IssueNumber(7)).await.unwrap(), []);
    }
    assert_eq!(
        fake.routes(),
        ["POST /graphql", "POST /api/graphql", "POST /api/graphql"]
    );
    let request = &fake.requests()[0];
    assert_eq!(request.bearer(), Some(TOKEN));
    assert_eq!(request.body["operationName"], "ReviewThreads");
    assert_eq!(
        request.body["variables"],
        json!({"owner": "octo-org", "name": "widgets", "number": 7, "after": null})
    );
}

#[tokio::test]
async fn review_threads_are_read_page_after_page_by_their_end_cursor() {
    let fake = Fake::start(|history| {
        let after = &history.last().unwrap().body["variables"]["after"];
        match after.as_str() {
            None => Canned::json(200, threads_page(&["PRRT_a", "PRRT_b"], Some("Y3Vyc29yOjI="))),
            Some("Y3Vyc29yOjI=") => Canned::json(200, threads_page(&["PRRT_c"], None)),
            Some(other) => panic!("unexpected cursor {other}"),
        }
    })
    .await;
    let client = token_client(&fake, kit().options);
    let threads = client.review_threads(&repo(), IssueNumber(7)).await.unwrap();
    let ids: Vec<&str> = threads.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["PRRT_a", "PRRT_b", "PRRT_c"]);
    assert_eq!(fake.requests().len(), 2);
}

#[tokio::test]
async fn graphql_errors_are_errors_that_name_the_operation_and_never_the_token() {
    let fake = Fake::start(|_| {
        Canned::json(
            200,
            json!({"data": {"resolveReviewThread": null}, "errors": [{"type": "NOT_FOUND",
                "path": ["resolveReviewThread"], "message": "Could not resolve to a node with the global id of 'PRRT_x'"}]}),
        )
    })
    .await;
    let client = token_client(&fake, kit().options);
    let error = client.resolve_review_thread("PRRT_x").await.unwrap_err();
    assert!(error.is_not_found(), "{error:?}");
    let text = error.to_string();
    assert_eq!(
        text,
        "POST /graphql (ResolveReviewThread): GitHub's GraphQL API answered with errors: Could not resolve to a node \
         with the global id of 'PRRT_x' (NOT_FOUND)"
    );
    assert!(!text.contains(TOKEN) && !format!("{error:?}").contains(TOKEN));
    let body = &fake.requests()[0].body;
    assert_eq!(body["operationName"], "ResolveReviewThread");
    assert_eq!(body["variables"], json!({"threadId": "PRRT_x"}));
}

/// A server that reads each request and hangs up without answering; counts the connections.
async fn hang_up_server() -> (Url, Arc<Mutex<usize>>) {
    use tokio::io::AsyncReadExt as _;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = Url::parse(&format!("http://{}", listener.local_addr().unwrap())).unwrap();
    let connections = Arc::new(Mutex::new(0));
    let counted = Arc::clone(&connections);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            *counted.lock().unwrap() += 1;
            let mut buffer = [0_u8; 16 * 1024];
            // The request's head and body arrive before the client waits for an answer.
            let _ = socket.read(&mut buffer).await;
            drop(socket);
        }
    });
    (url, connections)
}

#[tokio::test]
async fn a_graphql_query_is_sent_again_after_a_lost_answer_but_a_mutation_is_not() {
    let kit = kit();
    let (url, connections) = hang_up_server().await;
    let client = GithubClient::new(&url, Auth::Token(SecretString::from(TOKEN)), kit.options.clone()).unwrap();
    let error = client.review_threads(&repo(), IssueNumber(7)).await.unwrap_err();
    assert!(matches!(error, GithubError::Transport { .. }), "{error:?}");
    assert_eq!(*connections.lock().unwrap(), 4);
    *connections.lock().unwrap() = 0;
    let error = client.resolve_review_thread("PRRT_x").await.unwrap_err();
    assert!(matches!(error, GithubError::Transport { .. }), "{error:?}");
    assert_eq!(*connections.lock().unwrap(), 1);
}
