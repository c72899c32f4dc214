//! Errors of a model call, typed so that the agent can act on them (wait, compact, give up).

use std::time::Duration;

/// Why a model call failed. Every message is safe to show a user: it never holds a key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// The key is missing, wrong or lacks permission (401/403).
    #[error("the model provider rejected the credentials ({status}): {message}")]
    Auth { status: u16, message: String },
    /// Too many requests (429). `retry_after` is what the server asked for, when it said.
    #[error("rate limited by the model provider{}: {message}", retry_hint(*retry_after))]
    RateLimited {
        retry_after: Option<Duration>,
        message: String,
    },
    /// The account has no credit left; waiting does not help.
    #[error("the model provider account is out of quota: {message}")]
    QuotaExhausted { message: String },
    /// The provider is overloaded (Anthropic 529 `overloaded_error`, 503).
    #[error("the model provider is overloaded{}: {message}", retry_hint(*retry_after))]
    Overloaded {
        retry_after: Option<Duration>,
        message: String,
    },
    /// The prompt does not fit the model's context window.
    #[error("the prompt is longer than the model's context window: {message}")]
    ContextWindowExceeded { message: String },
    /// The provider refused the request as malformed; its own message says why.
    #[error("the model provider rejected the request ({status}): {message}")]
    BadRequest { status: u16, message: String },
    /// The provider failed (5xx other than overload).
    #[error("the model provider failed ({status}): {message}")]
    Server { status: u16, message: String },
    /// The connection failed, timed out or was cut.
    #[error("could not reach the model provider: {message}")]
    Transport { message: String },
    /// The provider's TLS certificate was refused: trying again will not change it.
    #[error("could not reach the model provider: {message} ({hint})", hint = crate::net::CERTIFICATE_HINT)]
    Certificate { message: String },
    /// The provider answered something that is not its protocol (malformed SSE or JSON, a stream
    /// that ended without its terminal event).
    #[error("the model provider answered something unexpected: {message}")]
    Protocol { message: String },
    /// The call was cancelled by the caller.
    #[error("the model call was cancelled")]
    Cancelled,
    /// A recorded run (`pitcrew eval --replay`) holds no answer to this request: the prompt, the
    /// tools or the context changed since it was recorded. The message says where.
    #[error("the recording has no answer to this request: {message}")]
    NotRecorded { message: String },
}

fn retry_hint(retry_after: Option<Duration>) -> String {
    match retry_after {
        Some(delay) => format!(" (retry after {:.1}s)", delay.as_secs_f64()),
        None => String::new(),
    }
}

impl LlmError {
    /// Whether trying the same request again may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::RateLimited { .. }
            | LlmError::Overloaded { .. }
            | LlmError::Server { .. }
            | LlmError::Transport { .. } => true,
            LlmError::Auth { .. }
            | LlmError::QuotaExhausted { .. }
            | LlmError::ContextWindowExceeded { .. }
            | LlmError::BadRequest { .. }
            | LlmError::Certificate { .. }
            | LlmError::Protocol { .. }
            | LlmError::NotRecorded { .. }
            | LlmError::Cancelled => false,
        }
    }

    /// The delay the server asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::RateLimited { retry_after, .. } | LlmError::Overloaded { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    pub(crate) fn transport(err: &reqwest::Error) -> Self {
        let message = crate::net::describe(err);
        if crate::net::refused_certificate(&message) {
            return LlmError::Certificate { message };
        }
        LlmError::Transport { message }
    }

    pub fn protocol(message: impl Into<String>) -> Self {
        LlmError::Protocol {
            message: message.into(),
        }
    }
}

/// Maps an HTTP error status and body to an error. `classify` reads the provider's error JSON
/// (kind, message) for the cases that the status alone does not settle.
pub(crate) fn from_status(status: u16, retry_after: Option<Duration>, error: ProviderError) -> LlmError {
    let ProviderError { kind, message } = error;
    let kind = kind.as_deref().unwrap_or("");
    if is_context_overflow(kind, &message) {
        return LlmError::ContextWindowExceeded { message };
    }
    // Anthropic reports an empty balance as a plain invalid request.
    if kind == "insufficient_quota" || message.contains("credit balance is too low") {
        return LlmError::QuotaExhausted { message };
    }
    match (status, kind) {
        (_, "overloaded_error") | (529, _) => LlmError::Overloaded { retry_after, message },
        (_, "rate_limit_error" | "rate_limit_exceeded") | (429, _) => LlmError::RateLimited { retry_after, message },
        (401 | 403, _) | (_, "authentication_error" | "permission_error" | "invalid_api_key") => {
            LlmError::Auth { status, message }
        }
        (503, _) => LlmError::Overloaded { retry_after, message },
        (408 | 409, _) => LlmError::Transport {
            message: format!("{status}: {message}"),
        },
        (500..=599, _) | (_, "api_error" | "server_error") => LlmError::Server { status, message },
        _ => LlmError::BadRequest { status, message },
    }
}

/// Context overflow is reported as a plain 400 by every provider; only the code or the text tells.
fn is_context_overflow(kind: &str, message: &str) -> bool {
    if kind == "context_length_exceeded" {
        return true;
    }
    let lower = message.to_ascii_lowercase();
    [
        "prompt is too long",         // Anthropic
        "maximum context length",     // OpenAI, vLLM
        "context length exceeded",    // LiteLLM
        "context_length_exceeded",    // proxies that flatten the code into the text
        "exceeds the context window", // llama.cpp server
        "exceed_context_size",        // llama.cpp server's error type
        "input is too long",          // several proxies
        "too many tokens in the prompt",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

/// The parts of a provider's error body that matter: its kind/code and its message.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ProviderError {
    pub kind: Option<String>,
    pub message: String,
}

impl ProviderError {
    /// Reads `{"error": {"type"|"code", "message"}}` (OpenAI, Anthropic and most compatible servers),
    /// `{"error": "text"}` (Ollama, some proxies) or `{"message": ...}`; anything else becomes the
    /// body's text, shortened.
    pub fn parse(body: &str) -> ProviderError {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(body) else {
            return ProviderError {
                kind: None,
                message: shorten(body.trim(), 500),
            };
        };
        let error = value.get("error").unwrap_or(&value);
        let message = match error {
            serde_json::Value::String(text) => text.clone(),
            other => other
                .get("message")
                .and_then(|m| m.as_str())
                .map(str::to_owned)
                .unwrap_or_else(|| shorten(body.trim(), 500)),
        };
        // OpenAI puts the specific reason in `code` and a broad class in `type`; Anthropic only has `type`.
        let field = |name: &str| error.get(name).and_then(|v| v.as_str()).map(str::to_owned);
        let kind = field("code").or_else(|| field("type"));
        ProviderError { kind, message }
    }
}

pub(crate) fn shorten(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(path: &str) -> String {
        crate::llm::fixture(&format!("llm/{path}"))
    }

    fn classify(status: u16, path: &str) -> LlmError {
        from_status(status, None, ProviderError::parse(&fixture(path)))
    }

    #[test]
    fn real_openai_error_bodies_are_classified() {
        for name in [
            "issue-text.400.context_length_exceeded.chathub-126.json",
            "issue-text.400.context_length_exceeded.chatpdf-6.json",
        ] {
            let err = classify(400, &format!("openai/errors/{name}"));
            assert!(
                matches!(&err, LlmError::ContextWindowExceeded { message } if message.starts_with("This model's maximum context length is 4097 tokens")),
                "{err:?}"
            );
        }
        let err = classify(
            429,
            "openai/errors/issue-text.429.rate_limit_exceeded.tpm.gpt-newspaper-10.json",
        );
        assert!(
            matches!(&err, LlmError::RateLimited { message, .. } if message.contains("Please try again in 26.604s"))
        );
        assert!(err.is_retryable());
        let err = classify(
            429,
            "openai/errors/vercel-ai.responses.openai-error.1.insufficient_quota.json",
        );
        assert!(matches!(err, LlmError::QuotaExhausted { .. }), "{err:?}");
        assert!(!err.is_retryable());
        let err = classify(
            400,
            "openai/errors/vercel-ai.chat.reasoning-model-legacy-parameter-error.400.json",
        );
        assert_eq!(
            err,
            LlmError::BadRequest {
                status: 400,
                message: "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.".into()
            }
        );
    }

    #[test]
    fn real_anthropic_error_bodies_are_classified() {
        let err = classify(
            529,
            "anthropic/errors/issue-text.529.overloaded_error.claude-code-35792.json",
        );
        assert_eq!(
            err,
            LlmError::Overloaded {
                retry_after: None,
                message: "Overloaded".into()
            }
        );
        let err = classify(
            429,
            "anthropic/errors/sdk-python-recording.429.rate_limit_error._parse.test_messages.TestAsyncStream.a8b7dbb8-2321-4624-abdb-7ba2136b5c38.0.json",
        );
        assert!(
            matches!(&err, LlmError::RateLimited { message, .. } if message.starts_with("This request would exceed your organization's rate limit"))
        );
        let err = classify(
            400,
            "anthropic/errors/sdk-python-recording.400.invalid_request_error.tools.test_runners.TestSyncRunTools.f59a9391-643b-422c-96dc-1f28bc7ea4d7.1.json",
        );
        assert!(matches!(err, LlmError::BadRequest { status: 400, .. }), "{err:?}");
    }

    #[test]
    fn context_overflow_is_recognised_from_the_text_alone() {
        let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        assert!(matches!(
            from_status(400, None, ProviderError::parse(body)),
            LlmError::ContextWindowExceeded { .. }
        ));
        // Ollama-style flat error, and a body that is not JSON at all.
        assert_eq!(
            ProviderError::parse(r#"{"error":"model 'x' not found"}"#).message,
            "model 'x' not found"
        );
        let err = from_status(502, None, ProviderError::parse("<html>Bad Gateway</html>"));
        assert_eq!(
            err,
            LlmError::Server {
                status: 502,
                message: "<html>Bad Gateway</html>".into()
            }
        );
    }
}
