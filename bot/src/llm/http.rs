//! The HTTP layer both providers share: one POST with timeouts and error mapping, and an event-stream
//! reader with an idle timeout.

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};

use super::error::{self, LlmError, ProviderError};
use super::retry;
use super::sse::{SseDecoder, SseEvent};

/// Timeouts of model calls. `None` disables one (tests on paused time need that).
#[derive(Debug, Clone, PartialEq)]
pub struct HttpOptions {
    /// Until the response headers arrive (and for a non-streamed response, its whole body).
    pub request_timeout: Option<Duration>,
    /// The longest silence between two chunks of a streamed response.
    pub idle_timeout: Option<Duration>,
    pub connect_timeout: Option<Duration>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            request_timeout: Some(Duration::from_secs(600)),
            idle_timeout: Some(Duration::from_secs(120)),
            connect_timeout: Some(Duration::from_secs(30)),
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Http {
    client: reqwest::Client,
    options: HttpOptions,
}

impl Http {
    pub fn new(options: HttpOptions) -> Result<Self, LlmError> {
        let mut builder = reqwest::Client::builder()
            .user_agent(concat!("pitcrew/", env!("CARGO_PKG_VERSION")))
            // The pool's idle reaper is a timer; with none, paused-time tests advance only on our sleeps.
            .pool_idle_timeout(None);
        if let Some(timeout) = options.connect_timeout {
            builder = builder.connect_timeout(timeout);
        }
        let client = builder.build().map_err(|err| LlmError::transport(&err))?;
        Ok(Http { client, options })
    }

    /// POSTs a JSON body; returns the response when its status is a success, the mapped error otherwise.
    pub async fn post_json(
        &self,
        url: &url::Url,
        mut headers: HeaderMap,
        body: &serde_json::Value,
    ) -> Result<reqwest::Response, LlmError> {
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let body =
            serde_json::to_vec(body).map_err(|err| LlmError::protocol(format!("encoding the request: {err}")))?;
        let send = self.client.post(url.clone()).headers(headers).body(body).send();
        let response = self
            .within(self.options.request_timeout, "waiting for the response", send)
            .await?
            .map_err(|err| LlmError::transport(&err))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = retry::retry_after(response.headers());
        let request_id = request_id(response.headers());
        let text = self.body_text(response).await.unwrap_or_default();
        let mut error = ProviderError::parse(&text);
        if let Some(id) = request_id {
            error.message = format!("{} (request id {id})", error.message);
        }
        if error.message.is_empty() {
            error.message = status.canonical_reason().unwrap_or("no message").to_owned();
        }
        Err(error::from_status(status.as_u16(), retry_after, error))
    }

    /// The whole body of a response, under the request timeout.
    pub async fn body_text(&self, response: reqwest::Response) -> Result<String, LlmError> {
        let bytes = self
            .within(self.options.request_timeout, "reading the response", response.bytes())
            .await?
            .map_err(|err| LlmError::transport(&err))?;
        String::from_utf8(bytes.to_vec()).map_err(|_| LlmError::protocol("the response body is not UTF-8"))
    }

    async fn within<T>(
        &self,
        limit: Option<Duration>,
        what: &str,
        future: impl Future<Output = T>,
    ) -> Result<T, LlmError> {
        match limit {
            Some(limit) => tokio::time::timeout(limit, future)
                .await
                .map_err(|_| LlmError::Transport {
                    message: format!("timed out after {}s {what}", limit.as_secs_f64()),
                }),
            None => Ok(future.await),
        }
    }

    pub fn events(&self, response: reqwest::Response) -> SseReader {
        SseReader {
            response,
            decoder: SseDecoder::new(),
            queue: VecDeque::new(),
            ended: false,
            idle_timeout: self.options.idle_timeout,
        }
    }
}

/// Whether the server answered with an event stream (some servers ignore `"stream": true` and send
/// the whole JSON response; the providers accept that too).
pub(crate) fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"))
}

fn request_id(headers: &HeaderMap) -> Option<String> {
    ["request-id", "x-request-id"]
        .iter()
        .find_map(|name| headers.get(*name)?.to_str().ok().map(str::to_owned))
}

/// Reads server-sent events from a response body.
pub(crate) struct SseReader {
    response: reqwest::Response,
    decoder: SseDecoder,
    queue: VecDeque<SseEvent>,
    ended: bool,
    idle_timeout: Option<Duration>,
}

impl SseReader {
    /// The next event, or `None` when the server closed the stream.
    pub async fn next(&mut self) -> Result<Option<SseEvent>, LlmError> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Ok(Some(event));
            }
            if self.ended {
                return Ok(None);
            }
            match self.chunk().await? {
                Some(bytes) => {
                    let events = self
                        .decoder
                        .feed(&bytes)
                        .map_err(|err| LlmError::protocol(err.to_string()))?;
                    self.queue.extend(events);
                }
                None => {
                    self.ended = true;
                    let last = self
                        .decoder
                        .finish()
                        .map_err(|err| LlmError::protocol(err.to_string()))?;
                    self.queue.extend(last);
                }
            }
        }
    }

    async fn chunk(&mut self) -> Result<Option<Bytes>, LlmError> {
        let chunk = self.response.chunk();
        let result = match self.idle_timeout {
            Some(limit) => tokio::time::timeout(limit, chunk)
                .await
                .map_err(|_| LlmError::Transport {
                    message: format!("the stream was silent for {}s", limit.as_secs_f64()),
                })?,
            None => chunk.await,
        };
        result.map_err(|err| LlmError::transport(&err))
    }
}
