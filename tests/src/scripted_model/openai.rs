//! The OpenAI Chat Completions wire format: `chat.completion` objects, `chat.completion.chunk`
//! streams ending in `data: [DONE]`, and `{"error":{…}}` bodies, shaped like the live API's
//! recordings in `fixtures/llm/openai/`.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::script::{Block, Reply, Stop};
use super::wire::{argument_pieces, text_pieces};
use super::{Exchange, Fault};

const SYSTEM_FINGERPRINT: &str = "fp_5050236cbd";

fn finish_reason(reply: &Reply) -> &str {
    match reply.stop_reason() {
        Stop::EndTurn => "stop",
        Stop::ToolUse => "tool_calls",
        Stop::MaxTokens => "length",
        Stop::Other(other) => other,
    }
}

fn usage(reply: &Reply) -> Value {
    let u = reply.usage;
    json!({
        "prompt_tokens": u.input,
        "completion_tokens": u.output,
        "total_tokens": u.input + u.output,
        "prompt_tokens_details": {"cached_tokens": u.cache_read, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    })
}

/// The text of all text blocks, in order.
fn joined_text(reply: &Reply) -> String {
    reply
        .content
        .iter()
        .filter_map(|block| match block {
            Block::Text(text) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// `(id, name, argument text)` of every tool call, in order.
fn tool_calls(reply: &Reply, exchange: &Exchange<'_>) -> Vec<(String, String, String)> {
    reply
        .content
        .iter()
        .filter_map(|block| match block {
            Block::ToolCall { name, id, .. } | Block::ToolCallRaw { name, id, .. } => {
                let id = id.clone().unwrap_or_else(|| exchange.ids.base62("call_", 24));
                Some((id, name.clone(), block.arguments_text().unwrap_or_default()))
            }
            Block::Thinking { .. } | Block::Text(_) => None,
        })
        .collect()
}

/// The non-streaming `chat.completion` object.
pub(super) fn completion(reply: &Reply, exchange: &Exchange<'_>) -> Value {
    let text = joined_text(reply);
    let mut message = json!({
        "role": "assistant",
        "content": if text.is_empty() { Value::Null } else { Value::String(text) },
        "refusal": null,
    });
    let calls = tool_calls(reply, exchange);
    if !calls.is_empty() {
        message["tool_calls"] = calls
            .into_iter()
            .map(|(id, name, arguments)| {
                json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
            })
            .collect();
    }
    json!({
        "id": exchange.ids.base62("chatcmpl-", 29),
        "object": "chat.completion",
        "created": exchange.created,
        "model": exchange.model,
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": finish_reason(reply),
        }],
        "usage": usage(reply),
        "system_fingerprint": SYSTEM_FINGERPRINT,
    })
}

/// The SSE frames of a streamed completion; the last one is always `data: [DONE]`.
pub(super) fn chunks(reply: &Reply, exchange: &Exchange<'_>) -> Vec<String> {
    let id = exchange.ids.base62("chatcmpl-", 29);
    let chunk = |delta: Value, finish_reason: Value| {
        let chunk = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": exchange.created,
            "model": exchange.model,
            "system_fingerprint": SYSTEM_FINGERPRINT,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
        });
        frame(&chunk)
    };

    let text = joined_text(reply);
    // The live API opens with `content: ""` for text answers and `content: null` for tool calls.
    let opening_content = if text.is_empty() {
        Value::Null
    } else {
        Value::String(String::new())
    };
    let mut frames = vec![chunk(
        json!({"role": "assistant", "content": opening_content, "refusal": null}),
        Value::Null,
    )];
    for piece in text_pieces(&text) {
        frames.push(chunk(json!({"content": piece}), Value::Null));
    }
    for (index, (id, name, arguments)) in tool_calls(reply, exchange).into_iter().enumerate() {
        frames.push(chunk(
            json!({"tool_calls": [{
                "index": index,
                "id": id,
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }]}),
            Value::Null,
        ));
        for piece in argument_pieces(&arguments) {
            frames.push(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                Value::Null,
            ));
        }
    }
    frames.push(chunk(json!({}), json!(finish_reason(reply))));
    if exchange.include_usage {
        let usage_chunk = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": exchange.created,
            "model": exchange.model,
            "system_fingerprint": SYSTEM_FINGERPRINT,
            "choices": [],
            "usage": usage(reply),
        });
        frames.push(frame(&usage_chunk));
    }
    frames.push("data: [DONE]\n\n".to_owned());
    frames
}

fn frame(data: &Value) -> String {
    format!("data: {data}\n\n")
}

/// The error sent inside a stream by [`Turn::StreamError`](super::Turn::StreamError).
pub(super) fn stream_error_frame() -> String {
    frame(&error_body(
        "The server had an error while processing your request. Sorry about that!",
        "server_error",
        Value::Null,
        Value::Null,
    ))
}

fn error_body(message: &str, kind: &str, param: Value, code: Value) -> Value {
    json!({"error": {"message": message, "type": kind, "param": param, "code": code}})
}

/// Status and body of an error, as the live API words them.
pub(super) fn error(fault: &Fault<'_>, exchange: &Exchange<'_>) -> (StatusCode, Value) {
    match fault {
        Fault::RateLimited { retry_after_secs } => {
            let wait = retry_after_secs.map_or_else(|| "1s".to_owned(), |s| format!("{s}s"));
            let message = format!(
                "Rate limit reached for {} in organization org-scriptedmodel on tokens per min \
                 (TPM): Limit 30000, Used 29512, Requested 1204. Please try again in {wait}. \
                 Visit https://platform.openai.com/account/rate-limits to learn more.",
                exchange.model
            );
            (
                StatusCode::TOO_MANY_REQUESTS,
                error_body(&message, "tokens", Value::Null, json!("rate_limit_exceeded")),
            )
        }
        Fault::Overloaded => (
            StatusCode::SERVICE_UNAVAILABLE,
            error_body(
                "The server is overloaded or not ready yet.",
                "server_error",
                Value::Null,
                Value::Null,
            ),
        ),
        Fault::Status { status, message } => {
            let (kind, default_message) = match status.as_u16() {
                401 => ("invalid_request_error", "Unauthorized."),
                403 => ("invalid_request_error", "You are not allowed to make this request."),
                404 => (
                    "invalid_request_error",
                    "The model does not exist or you do not have access to it.",
                ),
                429 => ("requests", "Rate limit reached for requests."),
                400..=499 => ("invalid_request_error", "Invalid request."),
                _ => (
                    "server_error",
                    "The server had an error while processing your request. Sorry about that!",
                ),
            };
            let message = message.unwrap_or(default_message);
            (*status, error_body(message, kind, Value::Null, Value::Null))
        }
        Fault::ContextLength { max, prompt } => {
            let message = format!(
                "This model's maximum context length is {max} tokens. However, your messages \
                 resulted in {prompt} tokens. Please reduce the length of the messages."
            );
            (
                StatusCode::BAD_REQUEST,
                error_body(
                    &message,
                    "invalid_request_error",
                    json!("messages"),
                    json!("context_length_exceeded"),
                ),
            )
        }
        Fault::Unauthorized => (
            StatusCode::UNAUTHORIZED,
            error_body(
                "Incorrect API key provided: sk-scrip********************cted. You can find your \
                 API key at https://platform.openai.com/account/api-keys.",
                "invalid_request_error",
                Value::Null,
                json!("invalid_api_key"),
            ),
        ),
        Fault::InsufficientQuota => (
            StatusCode::TOO_MANY_REQUESTS,
            error_body(
                "You exceeded your current quota, please check your plan and billing details. \
                 For more information on this error, read the docs: \
                 https://platform.openai.com/docs/guides/error-codes/api-errors.",
                "insufficient_quota",
                Value::Null,
                json!("insufficient_quota"),
            ),
        ),
        Fault::InvalidJson => (
            StatusCode::BAD_REQUEST,
            error_body(
                "We could not parse the JSON body of your request. (HINT: This likely means \
                 you aren't using your HTTP library correctly. The OpenAI API expects a JSON \
                 payload, but what was sent was not valid JSON. If you have trouble figuring out \
                 how to fix this, please contact us through our help center at help.openai.com.)",
                "invalid_request_error",
                Value::Null,
                Value::Null,
            ),
        ),
        Fault::Exhausted { message } => (
            StatusCode::INTERNAL_SERVER_ERROR,
            error_body(message, "server_error", Value::Null, Value::Null),
        ),
    }
}
