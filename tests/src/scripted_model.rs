//! A fake LLM server speaking OpenAI Chat Completions and Anthropic Messages over real HTTP,
//! answering each request with the next turn of a script and recording every request.
//!
//! The server runs on its own thread with its own tokio runtime, bound to `127.0.0.1:0`, so it
//! serves tests on paused time (`#[tokio::test(start_paused = true)]`) and sync code alike.
//! Dropping the [`ScriptedModel`] stops it.
//!
//! | route | protocol |
//! |---|---|
//! | `POST /v1/chat/completions`, `POST /chat/completions` | OpenAI Chat Completions |
//! | `POST /v1/messages` | Anthropic Messages |
//!
//! A request with `"stream": true` gets an SSE stream (OpenAI adds the final usage chunk only when
//! `stream_options.include_usage` is true); otherwise one JSON object. Ids (`chatcmpl-…`, `call_…`,
//! `msg_01…`, `toolu_01…`) are generated, deterministically per server; `model` is echoed from the
//! request. Every response carries a request id (`x-request-id` for OpenAI, `request-id` for
//! Anthropic).
//!
//! Each request to a model route consumes one turn, except a request whose body is not JSON: it
//! gets a 400 in the provider's error shape. Once the script is used up, requests get a 500 whose
//! message starts with `scripted model: script exhausted`. Other paths get a plain-text 404.
//! Every request, answered or not, is recorded ([`ScriptedModel::requests`]).
//!
//! # Building a script
//!
//! ```
//! use pitcrew_tests::scripted_model::{Reply, Script, ScriptedModel, Turn};
//! use serde_json::json;
//!
//! let model = ScriptedModel::start(
//!     Script::new()
//!         .turn(Turn::rate_limited_retry_after(2))
//!         .turn(
//!             Reply::text("Let me look.")
//!                 .tool_call("grep", json!({"pattern": "foo"}))
//!                 .tool_call_raw("read_file", "{not json")
//!                 .usage(1200, 40)
//!                 .cache(1000, 0),
//!         )
//!         .turn(Reply::text("done").usage(1300, 5)),
//! );
//! // Point a client at model.openai_base_url() or model.anthropic_base_url() …
//! assert_eq!(model.remaining_turns(), 3);
//! ```
//!
//! # JSON form
//!
//! [`Script::from_json`] reads the same script from JSON (unknown fields are errors). A turn is an
//! object with one key naming its kind; every field with a default may be left out.
//!
//! ```
//! # use pitcrew_tests::scripted_model::Script;
//! let script = Script::from_json(r#"{
//!   "turns": [
//!     {"reply": {
//!       "content": [
//!         {"thinking": {"text": "The user wants foo.", "signature": "EqQBCkYIARgC"}},
//!         {"text": "Let me look."},
//!         {"tool_call": {"name": "grep", "arguments": {"pattern": "foo"}}},
//!         {"tool_call_raw": {"name": "read_file", "arguments": "{not json", "id": "call_1"}}
//!       ],
//!       "usage": {"input": 1200, "output": 40, "cache_read": 1000, "cache_write": 0},
//!       "stop": "tool_use",
//!       "chunk_delay_ms": 5
//!     }},
//!     {"rate_limited": {"retry_after_secs": 2, "retry_after_ms": 1500}},
//!     {"overloaded": {}},
//!     {"server_error": {"status": 502, "message": "Bad gateway"}},
//!     {"context_length_exceeded": {"max_tokens": 200000, "prompt_tokens": 210000}},
//!     {"unauthorized": {}},
//!     {"insufficient_quota": {}},
//!     {"cut_stream": {"after_events": 3, "reply": {"content": [{"text": "partial"}]}, "abort": false}},
//!     {"stream_error": {"after_events": 2, "reply": {"content": [{"text": "doomed"}]}}},
//!     {"raw": {"status": 502, "headers": [["content-type", "text/html"]], "body": "<html>Bad gateway</html>"}},
//!     {"reply": {"content": [{"text": "done"}], "stop": "max_tokens"}}
//!   ]
//! }"#)?;
//! assert_eq!(script.len(), 11);
//! # Ok::<(), serde_json::Error>(())
//! ```
//!
//! Field defaults: `content` `[]`, `usage` all zero, `stop` derived (`tool_use`/`tool_calls` when
//! the reply calls a tool, else `end_turn`/`stop`), `chunk_delay_ms` 0, `arguments` of a
//! `tool_call` `{}`, `id` generated, `server_error.status` 500, `context_length_exceeded` 200 000 /
//! 210 000, `abort` false, `headers` `[]`, `body` `""`.

mod anthropic;
mod openai;
mod script;
mod wire;

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode};
use axum::response::Response;
use serde_json::Value;

pub use self::script::{Block, Reply, Script, Turn, Usage};
use self::wire::{Ending, Ids};
use crate::server_thread::ServerThread;

/// Largest request body read; model requests with long conversations are big.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// A running scripted model server. Dropping it shuts the server down.
#[derive(Debug)]
pub struct ScriptedModel {
    server: ServerThread,
    shared: Arc<Shared>,
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    /// The path, without the query string.
    pub path: String,
    pub query: Option<String>,
    /// Header names are lowercase, in the order received; values are decoded lossily.
    pub headers: Vec<(String, String)>,
    /// The body as JSON; `Value::Null` when it is not JSON.
    pub body: Value,
    /// The body as text (lossy UTF-8).
    pub raw_body: String,
    pub received_at: Instant,
    /// Index of the script turn this request consumed; `None` when it consumed none (invalid
    /// JSON, unknown path, script exhausted).
    pub turn: Option<usize>,
}

impl RecordedRequest {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether the body asked for a streamed answer.
    pub fn is_stream(&self) -> bool {
        self.body["stream"] == Value::Bool(true)
    }
}

impl ScriptedModel {
    /// Starts a server playing `script`.
    ///
    /// # Panics
    /// When no socket or runtime can be had (see [`ScriptedModel::try_start`]).
    pub fn start(script: Script) -> Self {
        match Self::try_start(script) {
            Ok(model) => model,
            Err(error) => panic!("scripted model: could not start: {error}"),
        }
    }

    /// Starts a server playing `script`, reporting failure to bind or spawn.
    pub fn try_start(script: Script) -> io::Result<Self> {
        Self::serve(script, Vec::new(), Vec::new())
    }

    /// Starts a server holding one script per conversation: a request is answered from the first
    /// route whose key occurs in the request's first user message (the task), so conversations
    /// that run at once each get their own turns. A request no route claims is answered from
    /// `script`.
    ///
    /// # Panics
    /// When no socket or runtime can be had.
    pub fn start_routed(script: Script, routes: Vec<(String, Script)>) -> Self {
        match Self::serve(script, routes, Vec::new()) {
            Ok(model) => model,
            Err(error) => panic!("scripted model: could not start: {error}"),
        }
    }

    /// Starts a server that answers each conversation by where it stands: a request whose first
    /// user message holds a route's key gets that route's turn at the conversation's depth (the
    /// number of answers it already holds), and no turn is used up. A conversation started again
    /// (a job retried after its worker died) is answered the same way again; a request past its
    /// route's turns, or claimed by none, is an exhausted script.
    ///
    /// # Panics
    /// When no socket or runtime can be had.
    pub fn start_replayed(routes: Vec<(String, Script)>) -> Self {
        let replayed = routes.into_iter().map(|(key, script)| (key, script.turns)).collect();
        match Self::serve(Script::new(), Vec::new(), replayed) {
            Ok(model) => model,
            Err(error) => panic!("scripted model: could not start: {error}"),
        }
    }

    fn serve(script: Script, routes: Vec<(String, Script)>, replayed: Vec<(String, Vec<Turn>)>) -> io::Result<Self> {
        let shared = Arc::new(Shared {
            state: Mutex::new(Playback {
                turns: script.turns.into(),
                next_turn: 0,
                requests: Vec::new(),
                routes: routes
                    .into_iter()
                    .map(|(key, script)| (key, script.turns.into()))
                    .collect(),
                replayed,
            }),
            ids: Ids::default(),
        });
        let app = Router::new().fallback(handle).with_state(Arc::clone(&shared));
        let server = ServerThread::start("scripted-model", app, 0)?;
        Ok(Self { server, shared })
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.server.addr())
    }

    /// `http://127.0.0.1:PORT/v1`: what OpenAI clients take as their base URL.
    pub fn openai_base_url(&self) -> String {
        format!("{}/v1", self.base_url())
    }

    /// `http://127.0.0.1:PORT`: what Anthropic clients take as their base URL.
    pub fn anthropic_base_url(&self) -> String {
        self.base_url()
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// Appends a turn to the script, even while requests are being served.
    pub fn push(&self, turn: impl Into<Turn>) {
        self.shared.lock().turns.push_back(turn.into());
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// The most recent request, if any.
    pub fn last_request(&self) -> Option<RecordedRequest> {
        self.shared.lock().requests.last().cloned()
    }

    /// How many turns are still to be played.
    pub fn remaining_turns(&self) -> usize {
        let state = self.shared.lock();
        state.turns.len() + state.routes.iter().map(|(_, turns)| turns.len()).sum::<usize>()
    }

    /// Fails the test when turns are left, listing them.
    ///
    /// # Panics
    /// When the script has not been played to the end.
    pub fn assert_script_consumed(&self) {
        let state = self.shared.lock();
        for (key, turns) in &state.routes {
            if !turns.is_empty() {
                panic!(
                    "scripted model: {} turn(s) of the route {key:?} left unplayed:\n{turns:#?}",
                    turns.len()
                );
            }
        }
        if !state.turns.is_empty() {
            panic!(
                "scripted model: {} turn(s) left unplayed after {} request(s) ({} turn(s) played):\n{:#?}",
                state.turns.len(),
                state.requests.len(),
                state.next_turn,
                state.turns
            );
        }
    }
}

#[derive(Debug)]
struct Shared {
    state: Mutex<Playback>,
    ids: Ids,
}

#[derive(Debug)]
struct Playback {
    turns: VecDeque<Turn>,
    /// Index of the next turn in the script as first given (pushed turns continue it).
    next_turn: usize,
    requests: Vec<RecordedRequest>,
    /// `(key, turns)` of [`ScriptedModel::start_routed`].
    routes: Vec<(String, VecDeque<Turn>)>,
    /// `(key, turns)` of [`ScriptedModel::start_replayed`]: never used up.
    replayed: Vec<(String, Vec<Turn>)>,
}

/// How many answers of the model a request's conversation already holds (either protocol).
fn depth(request: &Value) -> usize {
    request["messages"].as_array().map_or(0, |messages| {
        messages.iter().filter(|m| m["role"] == "assistant").count()
    })
}

/// The text of a request's first user message, as JSON (either protocol).
fn first_user_message(request: &Value) -> String {
    request["messages"]
        .as_array()
        .and_then(|messages| messages.iter().find(|m| m["role"] == "user"))
        .map(Value::to_string)
        .unwrap_or_default()
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Playback> {
        // A test that panicked while holding the lock leaves consistent data behind.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Which protocol a route speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Provider {
    OpenAi,
    Anthropic,
}

/// What one exchange's answer needs to know about its request.
struct Exchange<'a> {
    ids: &'a Ids,
    model: String,
    created: u64,
    request_id: String,
    include_usage: bool,
}

impl<'a> Exchange<'a> {
    fn new(provider: Provider, ids: &'a Ids, request: &Value) -> Self {
        Exchange {
            ids,
            model: request["model"].as_str().unwrap_or(provider.default_model()).to_owned(),
            created: wire::unix_now(),
            request_id: provider.request_id(ids),
            include_usage: request["stream_options"]["include_usage"] == Value::Bool(true),
        }
    }
}

/// An error answer, worded by each provider in its own way.
enum Fault<'a> {
    RateLimited {
        retry_after_secs: Option<u64>,
    },
    Overloaded,
    Status {
        status: StatusCode,
        message: Option<&'a str>,
    },
    ContextLength {
        max: u64,
        prompt: u64,
    },
    Unauthorized,
    InsufficientQuota,
    InvalidJson,
    Exhausted {
        message: &'a str,
    },
}

impl Provider {
    fn for_route(method: &Method, path: &str) -> Option<Self> {
        if method != Method::POST {
            return None;
        }
        match path.trim_end_matches('/') {
            "/v1/chat/completions" | "/chat/completions" => Some(Provider::OpenAi),
            "/v1/messages" => Some(Provider::Anthropic),
            _ => None,
        }
    }

    fn default_model(self) -> &'static str {
        match self {
            Provider::OpenAi => "gpt-4o-2024-08-06",
            Provider::Anthropic => "claude-sonnet-4-5-20250929",
        }
    }

    fn request_id(self, ids: &Ids) -> String {
        match self {
            Provider::OpenAi => ids.hex("req_", 32),
            Provider::Anthropic => ids.base62("req_011C", 20),
        }
    }

    fn request_id_header(self) -> &'static str {
        match self {
            Provider::OpenAi => "x-request-id",
            Provider::Anthropic => "request-id",
        }
    }

    fn body(self, reply: &Reply, exchange: &Exchange<'_>) -> Value {
        match self {
            Provider::OpenAi => openai::completion(reply, exchange),
            Provider::Anthropic => anthropic::message(reply, exchange),
        }
    }

    /// The stream's frames; the last one is the terminal event.
    fn frames(self, reply: &Reply, exchange: &Exchange<'_>) -> Vec<String> {
        match self {
            Provider::OpenAi => openai::chunks(reply, exchange),
            Provider::Anthropic => anthropic::events(reply, exchange),
        }
    }

    fn stream_error_frame(self) -> String {
        match self {
            Provider::OpenAi => openai::stream_error_frame(),
            Provider::Anthropic => anthropic::stream_error_frame(),
        }
    }

    /// The HTTP error matching the in-stream error, for non-streaming requests.
    fn stream_error_fault(self) -> Fault<'static> {
        match self {
            Provider::OpenAi => Fault::Status {
                status: StatusCode::INTERNAL_SERVER_ERROR,
                message: None,
            },
            Provider::Anthropic => Fault::Overloaded,
        }
    }

    fn error(self, fault: &Fault<'_>, exchange: &Exchange<'_>) -> Response {
        let (status, body) = match self {
            Provider::OpenAi => openai::error(fault, exchange),
            Provider::Anthropic => anthropic::error(fault, exchange),
        };
        let mut headers = vec![(self.request_id_header(), exchange.request_id.clone())];
        // Anthropic tells its SDKs which errors are worth retrying; a used-up script is not.
        if self == Provider::Anthropic && (status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()) {
            let retry = !matches!(fault, Fault::Exhausted { .. });
            headers.push(("x-should-retry", retry.to_string()));
        }
        wire::json(status, &body, &headers)
    }
}

/// The one handler: records the request, takes the next turn, answers it.
async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let received_at = Instant::now();
    let (parts, body) = request.into_parts();
    // A body that cannot be read (client gone, too large) is recorded as empty.
    let bytes = to_bytes(body, MAX_BODY).await.unwrap_or_default();
    let parsed = serde_json::from_slice::<Value>(&bytes).ok();
    let provider = Provider::for_route(&parts.method, parts.uri.path());

    let recorded = RecordedRequest {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().map(str::to_owned),
        headers: parts
            .headers
            .iter()
            .map(|(name, value)| {
                let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                (name.as_str().to_owned(), value)
            })
            .collect(),
        body: parsed.clone().unwrap_or(Value::Null),
        raw_body: String::from_utf8_lossy(&bytes).into_owned(),
        received_at,
        turn: None,
    };
    let summary = format!("{} {}", recorded.method, recorded.path);

    let Some(provider) = provider else {
        shared.lock().requests.push(recorded);
        return wire::response(
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            Body::from(format!("scripted model: no route for {summary}")),
            &[],
        );
    };

    let (turn, request_number, turns_played) = {
        let mut state = shared.lock();
        let mut recorded = recorded;
        // A body that is not JSON is no model request: it leaves the script alone.
        let turn = match &parsed {
            Some(body) => {
                let first = first_user_message(body);
                let holds = |key: &String| {
                    let escaped = Value::String(key.clone()).to_string();
                    first.contains(escaped.trim_matches('"'))
                };
                let replayed = state.replayed.iter().find(|(key, _)| holds(key));
                if let Some((_, turns)) = replayed {
                    turns.get(depth(body)).cloned()
                } else {
                    let route = state.routes.iter_mut().find(|(key, _)| holds(key));
                    match route {
                        Some((_, turns)) => turns.pop_front(),
                        None => state.turns.pop_front(),
                    }
                }
            }
            None => None,
        };
        if turn.is_some() {
            recorded.turn = Some(state.next_turn);
            state.next_turn += 1;
        }
        state.requests.push(recorded);
        (turn, state.requests.len(), state.next_turn)
    };

    let Some(request_body) = parsed else {
        let exchange = Exchange::new(provider, &shared.ids, &Value::Null);
        return provider.error(&Fault::InvalidJson, &exchange);
    };
    let exchange = Exchange::new(provider, &shared.ids, &request_body);
    let Some(turn) = turn else {
        let message = format!(
            "scripted model: script exhausted: request #{request_number} ({summary}) came after all \
             {turns_played} scripted turn(s) were played"
        );
        return provider.error(&Fault::Exhausted { message: &message }, &exchange);
    };
    let stream = request_body["stream"] == Value::Bool(true);
    answer(provider, turn, &exchange, stream)
}

/// The response a turn makes for a request of `provider`.
fn answer(provider: Provider, turn: Turn, exchange: &Exchange<'_>, stream: bool) -> Response {
    let id_header = [(provider.request_id_header(), exchange.request_id.clone())];
    match turn {
        Turn::Reply(reply) => {
            let delay = Duration::from_millis(reply.chunk_delay_ms);
            if stream {
                let frames = provider.frames(&reply, exchange);
                wire::sse(frames, delay, Ending::Clean, &id_header)
            } else {
                wire::json(StatusCode::OK, &provider.body(&reply, exchange), &id_header)
            }
        }
        Turn::CutStream {
            after_events,
            reply,
            abort,
        } => {
            let ending = if abort { Ending::Abort } else { Ending::Clean };
            if stream {
                let frames = wire::cut(provider.frames(&reply, exchange), after_events);
                let delay = Duration::from_millis(reply.chunk_delay_ms);
                wire::sse(frames, delay, ending, &id_header)
            } else {
                wire::truncated_json(&provider.body(&reply, exchange), ending, &id_header)
            }
        }
        Turn::StreamError { after_events, reply } => {
            if stream {
                let mut frames = wire::cut(provider.frames(&reply, exchange), after_events);
                frames.push(provider.stream_error_frame());
                let delay = Duration::from_millis(reply.chunk_delay_ms);
                wire::sse(frames, delay, Ending::Clean, &id_header)
            } else {
                provider.error(&provider.stream_error_fault(), exchange)
            }
        }
        Turn::RateLimited {
            retry_after_secs,
            retry_after_ms,
        } => {
            let mut response = provider.error(&Fault::RateLimited { retry_after_secs }, exchange);
            let headers = response.headers_mut();
            if let Some(secs) = retry_after_secs {
                headers.insert("retry-after", HeaderValue::from(secs));
            }
            if let Some(ms) = retry_after_ms {
                headers.insert("retry-after-ms", HeaderValue::from(ms));
            }
            response
        }
        Turn::Overloaded { retry_after_secs } => {
            let mut response = provider.error(&Fault::Overloaded, exchange);
            if let Some(secs) = retry_after_secs {
                response.headers_mut().insert("retry-after", HeaderValue::from(secs));
            }
            response
        }
        Turn::ServerError { status, message } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let fault = Fault::Status {
                status,
                message: message.as_deref(),
            };
            provider.error(&fault, exchange)
        }
        Turn::ContextLengthExceeded {
            max_tokens,
            prompt_tokens,
        } => provider.error(
            &Fault::ContextLength {
                max: max_tokens,
                prompt: prompt_tokens,
            },
            exchange,
        ),
        Turn::Unauthorized {} => provider.error(&Fault::Unauthorized, exchange),
        Turn::InsufficientQuota {} => provider.error(&Fault::InsufficientQuota, exchange),
        Turn::Raw { status, headers, body } => raw(status, &headers, body, &id_header),
    }
}

/// A [`Turn::Raw`] response: status, headers and body as scripted.
fn raw(status: u16, headers: &[(String, String)], body: String, id_header: &[(&'static str, String)]) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let map = response.headers_mut();
    let extra = id_header.iter().map(|(n, v)| ((*n).to_owned(), v.clone()));
    for (name, value) in headers.iter().cloned().chain(extra) {
        if let (Ok(name), Ok(value)) = (
            HeaderName::try_from(name.to_ascii_lowercase()),
            HeaderValue::try_from(value),
        ) {
            map.append(name, value);
        }
    }
    response
}
