//! Model providers: one provider-neutral conversation and `Model` trait, two real wire protocols
//! (OpenAI Chat Completions, which every OpenAI-compatible server speaks, and Anthropic Messages),
//! shared retries, timeouts, cancellation, usage and cost.

pub mod anthropic;
pub mod error;
mod http;
pub mod openai;
pub mod retry;
pub mod sse;
pub mod types;
pub mod usage;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::{Stream, StreamExt};
use secrecy::SecretString;
use tokio_util::sync::CancellationToken;

pub use error::LlmError;
pub use http::HttpOptions;
pub use retry::RetryPolicy;
pub use types::{AssistantPart, Message, Request, Response, StopReason, StreamEvent, ToolCall, ToolResult, ToolSpec};
pub use usage::{Price, PriceTable, Usage, UsageTotals};

/// The events of one call; the last item is `Completed` or an error.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, LlmError>> + Send>>;

/// A model behind some provider's API.
pub trait Model: Send + Sync {
    /// The model name sent to the provider (and used to look up prices).
    fn name(&self) -> &str;

    /// Calls the model, streaming what it produces. Retries happen inside the stream (announced by
    /// `StreamEvent::Retrying`); cancelling the token, or dropping the stream, stops the call.
    fn stream(&self, request: Request, cancel: CancellationToken) -> EventStream;

    /// Calls the model and returns the whole turn.
    fn complete(
        &self,
        request: Request,
        cancel: CancellationToken,
    ) -> Pin<Box<dyn Future<Output = Result<Response, LlmError>> + Send + '_>> {
        let mut events = self.stream(request, cancel);
        Box::pin(async move {
            while let Some(event) = events.next().await {
                if let StreamEvent::Completed(response) = event? {
                    return Ok(response);
                }
            }
            Err(LlmError::protocol("the call ended without a response"))
        })
    }
}

/// Which wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// OpenAI Chat Completions, and every server compatible with it (vLLM, Ollama, llama.cpp, LiteLLM, OpenRouter).
    #[serde(rename = "openai")]
    OpenAi,
    Anthropic,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
        }
    }
}

impl std::fmt::Display for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything needed to talk to one model.
#[derive(Clone)]
pub struct ModelSettings {
    pub provider: Provider,
    pub model: String,
    /// For OpenAI, the URL that `/chat/completions` is appended to (usually ending in `/v1`); for
    /// Anthropic, the URL that `/v1/messages` is appended to.
    pub base_url: url::Url,
    pub api_key: Option<SecretString>,
    pub max_output_tokens: u32,
    /// Stream responses (the default). Off, each call waits for the whole response: a fallback for
    /// servers whose streaming of tool calls is broken.
    pub stream: bool,
    pub http: HttpOptions,
    pub retry: RetryPolicy,
}

impl std::fmt::Debug for ModelSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelSettings")
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("base_url", &self.base_url.as_str())
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("max_output_tokens", &self.max_output_tokens)
            .field("stream", &self.stream)
            .field("http", &self.http)
            .field("retry", &self.retry)
            .finish()
    }
}

/// Builds the client for `settings`.
pub fn connect(settings: ModelSettings) -> Result<Arc<dyn Model>, LlmError> {
    Ok(match settings.provider {
        Provider::OpenAi => Arc::new(openai::OpenAiClient::new(settings)?),
        Provider::Anthropic => Arc::new(anthropic::AnthropicClient::new(settings)?),
    })
}

/// The shared reference data (`../shared/fixtures` beside the repository, or `$PITCREW_FIXTURES`).
#[cfg(test)]
pub(crate) fn fixture_path(relative: &str) -> std::path::PathBuf {
    let root = std::env::var_os("PITCREW_FIXTURES")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures"));
    root.join(relative)
}

/// A fixture's text; panics with the path when it is missing (tests only).
#[cfg(test)]
pub(crate) fn fixture(relative: &str) -> String {
    let path = fixture_path(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}
