//! The Anthropic Messages wire format: `message` objects, `event:`/`data:` streams from
//! `message_start` to `message_stop`, and `{"type":"error",…}` bodies, shaped like the live API's
//! recordings in `fixtures/llm/anthropic/`.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::script::{Block, Reply, Stop};
use super::wire::{argument_pieces, text_pieces};
use super::{Exchange, Fault};

fn stop_reason(reply: &Reply) -> &str {
    match reply.stop_reason() {
        Stop::EndTurn => "end_turn",
        Stop::ToolUse => "tool_use",
        Stop::MaxTokens => "max_tokens",
        Stop::Other(other) => other,
    }
}

/// The full usage object of `message` and `message_start` (with `output_tokens` given).
fn usage(reply: &Reply, output_tokens: u64) -> Value {
    let u = reply.usage;
    json!({
        "input_tokens": u.input,
        "cache_creation_input_tokens": u.cache_write,
        "cache_read_input_tokens": u.cache_read,
        "cache_creation": {"ephemeral_5m_input_tokens": u.cache_write, "ephemeral_1h_input_tokens": 0},
        "output_tokens": output_tokens,
        "service_tier": "standard",
    })
}

/// A tool call's id, from the script or generated.
fn tool_id(id: Option<&String>, exchange: &Exchange<'_>) -> String {
    id.cloned().unwrap_or_else(|| exchange.ids.base62("toolu_01", 22))
}

/// The `input` of a non-streamed `tool_use` block: the arguments, or the raw text as a JSON
/// string when it is not JSON (a `message` cannot carry anything else).
fn tool_input(block: &Block) -> Value {
    match block {
        Block::ToolCall { arguments, .. } => arguments.clone(),
        Block::ToolCallRaw { arguments, .. } => {
            serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.clone()))
        }
        Block::Thinking { .. } | Block::Text(_) => Value::Null,
    }
}

/// The non-streaming `message` object.
pub(super) fn message(reply: &Reply, exchange: &Exchange<'_>) -> Value {
    let content: Vec<Value> = reply
        .content
        .iter()
        .map(|block| match block {
            Block::Thinking { text, signature } => {
                json!({"type": "thinking", "thinking": text, "signature": signature})
            }
            Block::Text(text) => json!({"type": "text", "text": text}),
            Block::ToolCall { name, id, .. } | Block::ToolCallRaw { name, id, .. } => json!({
                "type": "tool_use",
                "id": tool_id(id.as_ref(), exchange),
                "name": name,
                "input": tool_input(block),
            }),
        })
        .collect();
    json!({
        "model": exchange.model,
        "id": exchange.ids.base62("msg_01", 22),
        "type": "message",
        "role": "assistant",
        "content": content,
        "stop_reason": stop_reason(reply),
        "stop_sequence": null,
        "usage": usage(reply, reply.usage.output),
    })
}

fn frame(event: &str, data: &Value) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

/// The SSE frames of a streamed message; the last one is always `message_stop`.
pub(super) fn events(reply: &Reply, exchange: &Exchange<'_>) -> Vec<String> {
    let ping = || frame("ping", &json!({"type": "ping"}));
    let mut frames = vec![frame(
        "message_start",
        &json!({
            "type": "message_start",
            "message": {
                "model": exchange.model,
                "id": exchange.ids.base62("msg_01", 22),
                "type": "message",
                "role": "assistant",
                "content": [],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": usage(reply, 1),
            },
        }),
    )];
    if reply.content.is_empty() {
        frames.push(ping());
    }
    for (index, block) in reply.content.iter().enumerate() {
        let start = |content_block: Value| {
            frame(
                "content_block_start",
                &json!({"type": "content_block_start", "index": index, "content_block": content_block}),
            )
        };
        let delta = |delta: Value| {
            frame(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": delta}),
            )
        };
        match block {
            Block::Thinking { text, signature } => {
                frames.push(start(json!({"type": "thinking", "thinking": "", "signature": ""})));
                push_ping_after_first_start(&mut frames, index, ping());
                for piece in text_pieces(text) {
                    frames.push(delta(json!({"type": "thinking_delta", "thinking": piece})));
                }
                frames.push(delta(json!({"type": "signature_delta", "signature": signature})));
            }
            Block::Text(text) => {
                frames.push(start(json!({"type": "text", "text": ""})));
                push_ping_after_first_start(&mut frames, index, ping());
                for piece in text_pieces(text) {
                    frames.push(delta(json!({"type": "text_delta", "text": piece})));
                }
            }
            Block::ToolCall { name, id, .. } | Block::ToolCallRaw { name, id, .. } => {
                frames.push(start(json!({
                    "type": "tool_use",
                    "id": tool_id(id.as_ref(), exchange),
                    "name": name,
                    "input": {},
                })));
                push_ping_after_first_start(&mut frames, index, ping());
                // The live API opens every tool input with an empty fragment.
                frames.push(delta(json!({"type": "input_json_delta", "partial_json": ""})));
                let arguments = block.arguments_text().unwrap_or_default();
                for piece in argument_pieces(&arguments) {
                    frames.push(delta(json!({"type": "input_json_delta", "partial_json": piece})));
                }
            }
        }
        frames.push(frame(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
    }
    let u = reply.usage;
    frames.push(frame(
        "message_delta",
        &json!({
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason(reply), "stop_sequence": null},
            "usage": {
                "input_tokens": u.input,
                "cache_creation_input_tokens": u.cache_write,
                "cache_read_input_tokens": u.cache_read,
                "output_tokens": u.output,
            },
        }),
    ));
    frames.push(frame("message_stop", &json!({"type": "message_stop"})));
    frames
}

/// The live API sends its `ping` right after the first `content_block_start`.
fn push_ping_after_first_start(frames: &mut Vec<String>, index: usize, ping: String) {
    if index == 0 {
        frames.push(ping);
    }
}

/// The error sent inside a stream by [`Turn::StreamError`](super::Turn::StreamError).
pub(super) fn stream_error_frame() -> String {
    frame(
        "error",
        &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    )
}

fn error_body(kind: &str, message: &str, exchange: &Exchange<'_>) -> Value {
    json!({
        "type": "error",
        "error": {"type": kind, "message": message},
        "request_id": exchange.request_id,
    })
}

/// Status and body of an error, as the live API words them.
pub(super) fn error(fault: &Fault<'_>, exchange: &Exchange<'_>) -> (StatusCode, Value) {
    let (status, kind, message) = match fault {
        Fault::RateLimited { .. } => (
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_error",
            format!(
                "This request would exceed your organization's rate limit of 30,000 input tokens \
                 per minute (org: 5576611f-0000-4000-8000-5c41f7ed0de1, model: {}). For details, \
                 refer to: https://docs.claude.com/en/api/rate-limits. You can see the response \
                 headers for current usage. Please reduce the prompt length or the maximum tokens \
                 requested, or try again later. You may also contact sales at \
                 https://www.anthropic.com/contact-sales to discuss your options for a rate limit \
                 increase.",
                exchange.model
            ),
        ),
        Fault::Overloaded => overloaded(),
        Fault::Status { status, message } => {
            let (kind, default_message) = match status.as_u16() {
                401 => ("authentication_error", "invalid x-api-key"),
                402 => (
                    "billing_error",
                    "Your credit balance is too low to access the Anthropic API.",
                ),
                403 => (
                    "permission_error",
                    "Your API key does not have permission to use the specified resource.",
                ),
                404 => ("not_found_error", "Not found"),
                413 => (
                    "request_too_large",
                    "Request exceeds the maximum allowed number of bytes.",
                ),
                429 => (
                    "rate_limit_error",
                    "Number of request tokens has exceeded your per-minute rate limit",
                ),
                529 => ("overloaded_error", "Overloaded"),
                400..=499 => ("invalid_request_error", "Invalid request"),
                _ => ("api_error", "Internal server error"),
            };
            (*status, kind, message.unwrap_or(default_message).to_owned())
        }
        Fault::ContextLength { max, prompt } => (
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            format!("prompt is too long: {prompt} tokens > {max} maximum"),
        ),
        Fault::Unauthorized => (
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "invalid x-api-key".to_owned(),
        ),
        Fault::InsufficientQuota => (
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "Your credit balance is too low to access the Anthropic API. Please go to Plans & \
             Billing to upgrade or purchase credits."
                .to_owned(),
        ),
        Fault::InvalidJson => (
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "There was an issue with the formatting or content of your request: the body is not \
             valid JSON."
                .to_owned(),
        ),
        Fault::Exhausted { message } => (StatusCode::INTERNAL_SERVER_ERROR, "api_error", (*message).to_owned()),
    };
    (status, error_body(kind, &message, exchange))
}

fn overloaded() -> (StatusCode, &'static str, String) {
    let status = StatusCode::from_u16(529).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    (status, "overloaded_error", "Overloaded".to_owned())
}
