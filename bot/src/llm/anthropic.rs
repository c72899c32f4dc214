//! The Anthropic Messages protocol (`POST {base_url}/v1/messages`): request building with prompt-cache
//! breakpoints, the streaming event protocol, and complete responses.
//!
//! Cache breakpoints sit on the stable prefix (the last tool and the system prompt) and on the newest
//! message, so each call reads what the previous call wrote. Thinking blocks are kept intact with their
//! signatures: the API requires them back, unchanged, while a tool-use turn is in progress.

use std::collections::BTreeMap;

use reqwest::header::{HeaderMap, HeaderValue};
use secrecy::ExposeSecret;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::error::{self, LlmError, ProviderError};
use super::http::{self, Http};
use super::openai::{endpoint, replay};
use super::retry::{Attempt, EventSink, drive};
use super::types::{AssistantPart, Message, Request, Response, StopReason, StreamEvent, ToolCall};
use super::usage::Usage;
use super::{EventStream, Model, ModelSettings};

/// The API version this module speaks.
pub const API_VERSION: &str = "2023-06-01";

#[derive(Debug, Clone)]
pub struct AnthropicClient {
    settings: std::sync::Arc<ModelSettings>,
    http: Http,
    url: url::Url,
}

impl AnthropicClient {
    pub fn new(settings: ModelSettings) -> Result<Self, LlmError> {
        let url = endpoint(&settings.base_url, "v1/messages")?;
        Ok(AnthropicClient {
            http: Http::new(settings.http.clone())?,
            settings: std::sync::Arc::new(settings),
            url,
        })
    }

    /// The JSON body of `request`.
    pub fn request_body(&self, request: &Request) -> Value {
        let cache = || json!({"type": "ephemeral"});
        let mut body = serde_json::Map::new();
        body.insert("model".into(), json!(self.settings.model));
        body.insert(
            "max_tokens".into(),
            json!(request.max_output_tokens.unwrap_or(self.settings.max_output_tokens)),
        );
        if !request.system.is_empty() {
            body.insert(
                "system".into(),
                json!([{"type": "text", "text": request.system, "cache_control": cache()}]),
            );
        }
        let mut messages = messages(request);
        // The newest message's last cacheable block: the next call finds everything before it cached.
        let newest = messages
            .last_mut()
            .and_then(|m| m.get_mut("content"))
            .and_then(Value::as_array_mut);
        if let Some(block) = newest.and_then(|blocks| {
            blocks.iter_mut().rev().find(|b| {
                !matches!(
                    b.get("type").and_then(Value::as_str),
                    Some("thinking" | "redacted_thinking")
                )
            })
        }) {
            block["cache_control"] = cache();
        }
        body.insert("messages".into(), Value::Array(messages));
        if !request.tools.is_empty() {
            let mut tools: Vec<_> = request.tools.iter().collect();
            tools.sort_by(|a, b| a.name.cmp(&b.name));
            let count = tools.len();
            let tools = tools
                .into_iter()
                .enumerate()
                .map(|(i, tool)| {
                    let mut spec = json!({
                        "name": tool.name, "description": tool.description, "input_schema": tool.parameters,
                    });
                    if i + 1 == count {
                        spec["cache_control"] = cache();
                    }
                    spec
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(temperature) = request.temperature {
            body.insert("temperature".into(), json!(temperature));
        }
        body.insert("stream".into(), json!(self.settings.stream));
        Value::Object(body)
    }

    fn headers(&self) -> Result<HeaderMap, LlmError> {
        let mut headers = HeaderMap::new();
        headers.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        if let Some(key) = &self.settings.api_key {
            let mut value = HeaderValue::from_str(key.expose_secret()).map_err(|_| LlmError::Auth {
                status: 0,
                message: "the API key contains characters that cannot be sent in an HTTP header".into(),
            })?;
            value.set_sensitive(true);
            headers.insert("x-api-key", value);
        }
        Ok(headers)
    }
}

/// The conversation as Anthropic messages: user turns and tool results merge into one user message
/// (tool results first, as the API requires), assistant parts become content blocks.
fn messages(request: &Request) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(request.messages.len());
    let mut user_blocks: Vec<Value> = Vec::new();
    let mut user_texts: Vec<Value> = Vec::new();
    let flush = |out: &mut Vec<Value>, results: &mut Vec<Value>, texts: &mut Vec<Value>| {
        if results.is_empty() && texts.is_empty() {
            return;
        }
        let mut content = std::mem::take(results);
        content.append(texts);
        out.push(json!({"role": "user", "content": content}));
    };
    for message in &request.messages {
        match message {
            Message::User { text } => user_texts.push(json!({"type": "text", "text": non_empty(text)})),
            Message::Tool(result) => {
                let mut block = json!({
                    "type": "tool_result", "tool_use_id": result.call_id, "content": non_empty(&result.content),
                });
                if result.is_error {
                    block["is_error"] = json!(true);
                }
                user_blocks.push(block);
            }
            Message::Assistant { parts } => {
                flush(&mut out, &mut user_blocks, &mut user_texts);
                let mut content: Vec<Value> = parts.iter().filter_map(assistant_block).collect();
                if content.is_empty() {
                    content.push(json!({"type": "text", "text": "(no output)"}));
                }
                out.push(json!({"role": "assistant", "content": content}));
            }
        }
    }
    flush(&mut out, &mut user_blocks, &mut user_texts);
    out
}

fn assistant_block(part: &AssistantPart) -> Option<Value> {
    match part {
        // The API rejects empty text blocks.
        AssistantPart::Text { text } if text.is_empty() => None,
        AssistantPart::Text { text } => Some(json!({"type": "text", "text": text})),
        AssistantPart::Thinking {
            text,
            signature: Some(signature),
        } => Some(json!({"type": "thinking", "thinking": text, "signature": signature})),
        // Reasoning from another provider has no signature and cannot be sent here.
        AssistantPart::Thinking { signature: None, .. } => None,
        AssistantPart::RedactedThinking { data } => Some(json!({"type": "redacted_thinking", "data": data})),
        AssistantPart::ToolCall(call) => {
            // The API wants an object. Arguments that were not one were answered with an error result;
            // the call itself is replayed with no arguments.
            let input = match serde_json::from_str::<Value>(&call.arguments) {
                Ok(Value::Object(map)) => Value::Object(map),
                _ => json!({}),
            };
            Some(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}))
        }
    }
}

/// The API rejects empty text in user content and tool results.
fn non_empty(text: &str) -> &str {
    if text.is_empty() { "(empty)" } else { text }
}

impl Attempt for (AnthropicClient, Value) {
    async fn attempt(&self, sink: &EventSink) -> Result<Response, LlmError> {
        let (client, body) = self;
        let response = client.http.post_json(&client.url, client.headers()?, body).await?;
        if !http::is_event_stream(&response) {
            let text = client.http.body_text(response).await?;
            let response = parse_response(&text)?;
            replay(&response, sink).await?;
            return Ok(response);
        }
        let mut events = client.http.events(response);
        let mut assembler = StreamAssembler::default();
        while let Some(event) = events.next().await? {
            for out in assembler.event(&event.data)? {
                sink.send(out).await?;
            }
            if assembler.stopped {
                break;
            }
        }
        assembler.finish()
    }
}

impl Model for AnthropicClient {
    fn name(&self) -> &str {
        &self.settings.model
    }

    fn stream(&self, request: Request, cancel: CancellationToken) -> EventStream {
        let body = self.request_body(&request);
        drive((self.clone(), body), self.settings.retry.clone(), cancel)
    }
}

/// A content block being assembled.
#[derive(Debug)]
enum Block {
    Text(String),
    Thinking {
        text: String,
        signature: String,
    },
    RedactedThinking(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
        initial: Value,
    },
    /// A block pitcrew does not use (server tools and their results): read past, not kept.
    Other,
}

/// Builds a response from the streaming events.
#[derive(Debug, Default)]
pub struct StreamAssembler {
    id: Option<String>,
    model: Option<String>,
    blocks: BTreeMap<usize, Block>,
    stop_reason: Option<String>,
    usage: Usage,
    started: bool,
    stopped: bool,
}

impl StreamAssembler {
    /// Takes one event's `data:` payload (its `type` field names the event); returns the deltas.
    pub fn event(&mut self, data: &str) -> Result<Vec<StreamEvent>, LlmError> {
        let event: Value = serde_json::from_str(data).map_err(|err| {
            LlmError::protocol(format!(
                "a stream event is not JSON ({err}): {}",
                error::shorten(data, 200)
            ))
        })?;
        let mut out = Vec::new();
        let index = || event.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
        match event.get("type").and_then(Value::as_str).unwrap_or("") {
            "message_start" => {
                self.started = true;
                let message = event.get("message").unwrap_or(&Value::Null);
                self.id = str_field(message, "id");
                self.model = str_field(message, "model");
                if let Some(usage) = message.get("usage") {
                    update_usage(&mut self.usage, usage);
                }
            }
            "content_block_start" => {
                let block = event.get("content_block").unwrap_or(&Value::Null);
                let index = index();
                let block = match block.get("type").and_then(Value::as_str).unwrap_or("") {
                    "text" => {
                        let text = str_field(block, "text").unwrap_or_default();
                        if !text.is_empty() {
                            out.push(StreamEvent::TextDelta(text.clone()));
                        }
                        Block::Text(text)
                    }
                    "thinking" => Block::Thinking {
                        text: str_field(block, "thinking").unwrap_or_default(),
                        signature: str_field(block, "signature").unwrap_or_default(),
                    },
                    "redacted_thinking" => Block::RedactedThinking(str_field(block, "data").unwrap_or_default()),
                    "tool_use" => {
                        let id = str_field(block, "id").unwrap_or_default();
                        let name = str_field(block, "name").unwrap_or_default();
                        out.push(StreamEvent::ToolCallStarted {
                            index,
                            id: id.clone(),
                            name: name.clone(),
                        });
                        Block::ToolUse {
                            id,
                            name,
                            json: String::new(),
                            initial: block.get("input").cloned().unwrap_or(Value::Null),
                        }
                    }
                    _ => Block::Other,
                };
                self.blocks.insert(index, block);
            }
            "content_block_delta" => {
                let index = index();
                let delta = event.get("delta").unwrap_or(&Value::Null);
                let kind = delta.get("type").and_then(Value::as_str).unwrap_or("");
                let Some(block) = self.blocks.get_mut(&index) else {
                    return Err(LlmError::protocol(format!(
                        "a delta for content block {index}, which never started"
                    )));
                };
                match (block, kind) {
                    (Block::Text(text), "text_delta") => {
                        let piece = str_field(delta, "text").unwrap_or_default();
                        text.push_str(&piece);
                        out.push(StreamEvent::TextDelta(piece));
                    }
                    (Block::Thinking { text, .. }, "thinking_delta") => {
                        let piece = str_field(delta, "thinking").unwrap_or_default();
                        text.push_str(&piece);
                        out.push(StreamEvent::ThinkingDelta(piece));
                    }
                    (Block::Thinking { signature, .. }, "signature_delta") => {
                        signature.push_str(&str_field(delta, "signature").unwrap_or_default());
                    }
                    (Block::ToolUse { json, .. }, "input_json_delta") => {
                        let piece = str_field(delta, "partial_json").unwrap_or_default();
                        json.push_str(&piece);
                        if !piece.is_empty() {
                            out.push(StreamEvent::ToolCallDelta { index, fragment: piece });
                        }
                    }
                    // Citations, server tools' input, and delta kinds newer than this code.
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_owned());
                }
                if let Some(usage) = event.get("usage") {
                    update_usage(&mut self.usage, usage);
                }
            }
            "message_stop" => self.stopped = true,
            "error" => {
                let error = ProviderError::parse(data);
                let status = match error.kind.as_deref() {
                    Some("overloaded_error") => 529,
                    Some("rate_limit_error") => 429,
                    Some("invalid_request_error") => 400,
                    _ => 500,
                };
                return Err(error::from_status(status, None, error));
            }
            // `ping`, `content_block_stop` and event types newer than this code.
            _ => {}
        }
        Ok(out)
    }

    pub fn finish(self) -> Result<Response, LlmError> {
        if !self.stopped {
            return Err(LlmError::Transport {
                message: if self.started {
                    "the response stream ended before message_stop".into()
                } else {
                    "the response stream ended before message_start".into()
                },
            });
        }
        let parts = self.blocks.into_values().filter_map(Block::into_part).collect();
        Ok(Response {
            id: self.id,
            model: self.model,
            parts,
            stop_reason: stop_reason(self.stop_reason.as_deref()),
            usage: self.usage,
        })
    }
}

impl Block {
    fn into_part(self) -> Option<AssistantPart> {
        match self {
            Block::Text(text) if text.is_empty() => None,
            Block::Text(text) => Some(AssistantPart::Text { text }),
            Block::Thinking { text, signature } => Some(AssistantPart::Thinking {
                text,
                signature: Some(signature),
            }),
            Block::RedactedThinking(data) => Some(AssistantPart::RedactedThinking { data }),
            Block::ToolUse {
                id,
                name,
                json,
                initial,
            } => {
                // No deltas: the input came whole in the start event (`{}` for a call without arguments).
                let arguments = if json.is_empty() {
                    match initial {
                        Value::Null => String::new(),
                        other => other.to_string(),
                    }
                } else {
                    json
                };
                Some(AssistantPart::ToolCall(ToolCall { id, name, arguments }))
            }
            Block::Other => None,
        }
    }
}

/// Parses a non-streamed `message`.
pub fn parse_response(body: &str) -> Result<Response, LlmError> {
    let value: Value = serde_json::from_str(body).map_err(|err| {
        LlmError::protocol(format!(
            "the response is not JSON ({err}): {}",
            error::shorten(body, 200)
        ))
    })?;
    if value.get("type").and_then(Value::as_str) == Some("error") {
        return Err(error::from_status(500, None, ProviderError::parse(body)));
    }
    let content = value
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| LlmError::protocol("the response has no content array"))?;
    let mut parts = Vec::new();
    for block in content {
        let part = match block.get("type").and_then(Value::as_str).unwrap_or("") {
            "text" => Block::Text(str_field(block, "text").unwrap_or_default()),
            "thinking" => Block::Thinking {
                text: str_field(block, "thinking").unwrap_or_default(),
                signature: str_field(block, "signature").unwrap_or_default(),
            },
            "redacted_thinking" => Block::RedactedThinking(str_field(block, "data").unwrap_or_default()),
            "tool_use" => Block::ToolUse {
                id: str_field(block, "id").unwrap_or_default(),
                name: str_field(block, "name").unwrap_or_default(),
                json: String::new(),
                initial: block.get("input").cloned().unwrap_or(Value::Null),
            },
            _ => Block::Other,
        };
        parts.extend(part.into_part());
    }
    let mut usage = Usage::default();
    if let Some(value) = value.get("usage") {
        update_usage(&mut usage, value);
    }
    Ok(Response {
        id: str_field(&value, "id"),
        model: str_field(&value, "model"),
        parts,
        stop_reason: stop_reason(value.get("stop_reason").and_then(Value::as_str)),
        usage,
    })
}

/// Usage figures are cumulative: a later event's figure replaces an earlier one; absent ones stay.
fn update_usage(usage: &mut Usage, value: &Value) {
    let set = |field: &mut u64, name: &str| {
        if let Some(n) = value.get(name).and_then(Value::as_u64) {
            *field = n;
        }
    };
    set(&mut usage.input_tokens, "input_tokens");
    set(&mut usage.output_tokens, "output_tokens");
    set(&mut usage.cache_read_tokens, "cache_read_input_tokens");
    set(&mut usage.cache_write_tokens, "cache_creation_input_tokens");
}

fn stop_reason(reason: Option<&str>) -> StopReason {
    match reason {
        Some("end_turn") | None => StopReason::EndTurn,
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") | Some("model_context_window_exceeded") => StopReason::MaxTokens,
        Some("stop_sequence") => StopReason::StopSequence,
        Some("refusal") => StopReason::Refusal,
        Some(other) => StopReason::Other(other.to_owned()),
    }
}

fn str_field(value: &Value, name: &str) -> Option<String> {
    value.get(name).and_then(Value::as_str).map(str::to_owned)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::llm::sse::SseDecoder;
    use crate::llm::{HttpOptions, Provider, RetryPolicy, ToolSpec};

    fn fixture_dir(dir: &str) -> std::path::PathBuf {
        crate::llm::fixture_path(&format!("llm/anthropic/{dir}"))
    }

    fn fixture(path: &str) -> String {
        crate::llm::fixture(&format!("llm/anthropic/{path}"))
    }

    fn assemble_sse(sse: &str) -> (Vec<StreamEvent>, Result<Response, LlmError>) {
        let mut decoder = SseDecoder::new();
        let mut payloads = Vec::new();
        for chunk in sse.as_bytes().chunks(61) {
            payloads.extend(decoder.feed(chunk).unwrap().into_iter().map(|e| e.data));
        }
        payloads.extend(decoder.finish().unwrap().map(|e| e.data));
        assemble(payloads)
    }

    fn assemble(payloads: impl IntoIterator<Item = String>) -> (Vec<StreamEvent>, Result<Response, LlmError>) {
        let mut assembler = StreamAssembler::default();
        let mut events = Vec::new();
        for data in payloads {
            match assembler.event(&data) {
                Ok(out) => events.extend(out),
                Err(err) => return (events, Err(err)),
            }
        }
        (events, assembler.finish())
    }

    #[test]
    fn recorded_stream_with_text_then_a_truncated_tool_call() {
        let (events, response) = assemble_sse(&fixture(
            "messages-stream/sdk-python.streaming-fixture.incomplete_partial_json_response.sse",
        ));
        let response = response.unwrap();
        assert_eq!(response.stop_reason, StopReason::MaxTokens);
        assert_eq!(
            response.text(),
            "I'll create a comprehensive tax guide for someone with multiple W2s and save it in a file called taxes.txt. Let me do that for you now."
        );
        let call = response.tool_calls().next().unwrap();
        assert_eq!(call.id, "toolu_01EKqbqmZrGRXy18eN7m9kvY");
        assert_eq!(call.name, "make_file");
        assert!(
            call.arguments
                .starts_with("{\"filename\": \"taxes.txt\", \"lines_of_text\": [")
        );
        assert!(call.arguments.ends_with("\n\"Filing taxes"));
        // The arguments were cut by max_tokens: delivered as they came, for the agent to answer.
        assert!(call.parse_arguments().is_err());
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 450,
                output_tokens: 124,
                ..Usage::default()
            }
        );
        assert!(matches!(
            events.last(),
            Some(StreamEvent::ToolCallDelta { index: 1, .. })
        ));
    }

    #[test]
    fn recorded_tool_use_stream() {
        let (_, response) = assemble_sse(&fixture(
            "messages-stream/sdk-python.streaming-fixture.tool_use_response.sse",
        ));
        let response = response.unwrap();
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        let call = response.tool_calls().next().unwrap();
        assert!(call.parse_arguments().is_ok(), "{}", call.arguments);
    }

    #[test]
    fn recorded_stream_with_server_tools_and_cache_figures() {
        let payloads =
            fixture("messages-stream/vercel-ai.anthropic-code-execution-20260120-prompt-cache.1.chunks.jsonl");
        let (_, response) = assemble(payloads.lines().filter(|l| !l.trim().is_empty()).map(str::to_owned));
        let response = response.unwrap();
        // Server tool blocks are read past: only text remains, with the server's cache figures.
        assert!(
            response.parts.iter().all(|p| matches!(p, AssistantPart::Text { .. })),
            "{:?}",
            response.parts
        );
        assert!(!response.text().is_empty());
        assert!(
            response.usage.cache_read_tokens + response.usage.cache_write_tokens > 0,
            "{:?}",
            response.usage
        );
    }

    #[test]
    fn every_recorded_stream_assembles() {
        let dir = fixture_dir("messages-stream");
        let mut count = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let (_, response) = if path.extension().is_some_and(|e| e == "sse") {
                assemble_sse(&text)
            } else {
                assemble(text.lines().filter(|l| !l.trim().is_empty()).map(str::to_owned))
            };
            let response = response.unwrap_or_else(|err| panic!("{}: {err}", path.display()));
            assert!(response.usage.output_tokens > 0, "{}", path.display());
            count += 1;
        }
        assert!(count >= 8);
    }

    #[test]
    fn recorded_complete_messages() {
        let dir = fixture_dir("messages");
        let mut tool_calls = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let response = parse_response(&std::fs::read_to_string(&path).unwrap())
                .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
            assert!(
                response.id.as_deref().is_some_and(|id| id.starts_with("msg_")),
                "{}",
                path.display()
            );
            if response.stop_reason == StopReason::ToolUse {
                assert!(response.tool_calls().all(|c| c.parse_arguments().is_ok()));
                tool_calls += response.tool_calls().count();
            }
        }
        assert!(tool_calls > 0);
    }

    #[test]
    fn thinking_blocks_keep_their_signature_and_go_back_unchanged() {
        let events = [
            r#"{"type":"message_start","message":{"id":"msg_1","model":"claude-sonnet-4-5","usage":{"input_tokens":10,"cache_read_input_tokens":900,"cache_creation_input_tokens":50,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me "}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"look."}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"opaque"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"list_dir","input":{}}}"#,
            r#"{"type":"content_block_stop","index":2}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":30}}"#,
            r#"{"type":"message_stop"}"#,
        ];
        let (deltas, response) = assemble(events.iter().map(|e| (*e).to_owned()));
        let response = response.unwrap();
        assert_eq!(
            response.parts,
            vec![
                AssistantPart::Thinking {
                    text: "Let me look.".into(),
                    signature: Some("EqQBCgIYAhIM".into())
                },
                AssistantPart::RedactedThinking { data: "opaque".into() },
                AssistantPart::ToolCall(ToolCall {
                    id: "toolu_1".into(),
                    name: "list_dir".into(),
                    arguments: "{}".into()
                }),
            ]
        );
        assert_eq!(deltas[0], StreamEvent::ThinkingDelta("Let me ".into()));
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 10,
                output_tokens: 30,
                cache_read_tokens: 900,
                cache_write_tokens: 50,
                reasoning_tokens: 0
            }
        );
        let request = Request {
            messages: vec![
                Message::user("go"),
                response.message(),
                Message::tool_result("toolu_1", "a.rs\nb.rs", false),
            ],
            ..Request::default()
        };
        let body = client().request_body(&request);
        assert_eq!(
            body["messages"][1]["content"],
            json!([
                {"type": "thinking", "thinking": "Let me look.", "signature": "EqQBCgIYAhIM"},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "tool_use", "id": "toolu_1", "name": "list_dir", "input": {}},
            ])
        );
    }

    #[test]
    fn errors_inside_the_stream_are_typed_and_a_cut_stream_is_an_error() {
        let mut assembler = StreamAssembler::default();
        assembler
            .event(r#"{"type":"message_start","message":{"id":"m","usage":{"input_tokens":1}}}"#)
            .unwrap();
        let err = assembler
            .event(r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#)
            .unwrap_err();
        assert_eq!(
            err,
            LlmError::Overloaded {
                retry_after: None,
                message: "Overloaded".into()
            }
        );
        let (_, cut) = assemble([r#"{"type":"message_start","message":{"id":"m"}}"#.to_owned()]);
        assert!(matches!(cut, Err(LlmError::Transport { message }) if message.contains("before message_stop")));
        let (_, stray) = assemble([
            r#"{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}"#.to_owned(),
        ]);
        assert!(matches!(stray, Err(LlmError::Protocol { .. })));
    }

    fn client() -> AnthropicClient {
        AnthropicClient::new(ModelSettings {
            provider: Provider::Anthropic,
            model: "claude-sonnet-4-5".into(),
            base_url: "http://127.0.0.1:1".parse().unwrap(),
            api_key: None,
            max_output_tokens: 2048,
            stream: true,
            http: HttpOptions::default(),
            retry: RetryPolicy::default(),
        })
        .unwrap()
    }

    #[test]
    fn the_request_has_cache_breakpoints_and_sorted_tools() {
        let tool = |name: &str| ToolSpec {
            name: name.into(),
            description: "d".into(),
            parameters: json!({"type": "object"}),
        };
        let request = Request {
            system: "You are pitcrew.".into(),
            messages: vec![
                Message::user("fix the test"),
                Message::Assistant {
                    parts: vec![
                        AssistantPart::Text {
                            text: "Looking.".into(),
                        },
                        AssistantPart::ToolCall(ToolCall {
                            id: "toolu_a".into(),
                            name: "grep".into(),
                            arguments: "{\"pattern\": ".into(),
                        }),
                    ],
                },
                Message::tool_result("toolu_a", "the arguments of `grep` are not valid JSON", true),
                Message::user("Plan: 1 of 3 done."),
            ],
            tools: vec![tool("read_file"), tool("bash")],
            max_output_tokens: None,
            temperature: None,
        };
        insta::assert_json_snapshot!(client().request_body(&request), @r#"
        {
          "max_tokens": 2048,
          "messages": [
            {
              "content": [
                {
                  "text": "fix the test",
                  "type": "text"
                }
              ],
              "role": "user"
            },
            {
              "content": [
                {
                  "text": "Looking.",
                  "type": "text"
                },
                {
                  "id": "toolu_a",
                  "input": {},
                  "name": "grep",
                  "type": "tool_use"
                }
              ],
              "role": "assistant"
            },
            {
              "content": [
                {
                  "content": "the arguments of `grep` are not valid JSON",
                  "is_error": true,
                  "tool_use_id": "toolu_a",
                  "type": "tool_result"
                },
                {
                  "cache_control": {
                    "type": "ephemeral"
                  },
                  "text": "Plan: 1 of 3 done.",
                  "type": "text"
                }
              ],
              "role": "user"
            }
          ],
          "model": "claude-sonnet-4-5",
          "stream": true,
          "system": [
            {
              "cache_control": {
                "type": "ephemeral"
              },
              "text": "You are pitcrew.",
              "type": "text"
            }
          ],
          "tools": [
            {
              "description": "d",
              "input_schema": {
                "type": "object"
              },
              "name": "bash"
            },
            {
              "cache_control": {
                "type": "ephemeral"
              },
              "description": "d",
              "input_schema": {
                "type": "object"
              },
              "name": "read_file"
            }
          ]
        }
        "#);
    }

    #[test]
    fn recorded_requests_conversations_round_trip() {
        // The SDK's recorded second request: user text, assistant tool_use, user tool_result. The same
        // conversation built from our types must serialise to the same messages (bar cache_control).
        let recording: Value = serde_json::from_str(&fixture(
            "recordings/tools.test_runners.TestSyncRunTools.555fb399-a54c-455b-9ac5-2c9673f18e12.json",
        ))
        .unwrap();
        let sent = &recording[1]["request"]["body"];
        let call = &sent["messages"][1]["content"][0];
        let result = &sent["messages"][2]["content"][0];
        let request = Request {
            messages: vec![
                Message::user(sent["messages"][0]["content"].as_str().unwrap()),
                Message::Assistant {
                    parts: vec![AssistantPart::ToolCall(ToolCall {
                        id: call["id"].as_str().unwrap().into(),
                        name: call["name"].as_str().unwrap().into(),
                        arguments: call["input"].to_string(),
                    })],
                },
                Message::tool_result(
                    result["tool_use_id"].as_str().unwrap(),
                    result["content"].as_str().unwrap(),
                    false,
                ),
            ],
            ..Request::default()
        };
        let mut ours = client().request_body(&request)["messages"].clone();
        ours[2]["content"][0].as_object_mut().unwrap().remove("cache_control");
        assert_eq!(ours[0]["content"][0]["text"], sent["messages"][0]["content"]);
        assert_eq!(ours[1]["content"][0]["input"], call["input"]);
        assert_eq!(ours[1]["content"][0]["id"], call["id"]);
        assert_eq!(ours[2], sent["messages"][2]);
    }
}
