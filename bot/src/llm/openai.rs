//! The OpenAI Chat Completions protocol (`POST {base_url}/chat/completions`), spoken by OpenAI and by
//! the OpenAI-compatible servers users run (vLLM, Ollama, llama.cpp server, LiteLLM, OpenRouter).
//!
//! Strict in what it sends (only documented fields, tools sorted by name), liberal in what it accepts:
//! tool-call deltas without an `index`, arguments sent as an object, `reasoning_content`, usage on every
//! chunk, errors inside the stream, a stream that ends without `[DONE]` after its finish reason, and a
//! server that ignores `"stream": true`.

use std::collections::BTreeMap;

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use secrecy::ExposeSecret;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::error::{self, LlmError, ProviderError};
use super::http::{self, Http};
use super::retry::{Attempt, EventSink, drive};
use super::types::{AssistantPart, Message, Request, Response, StopReason, StreamEvent, ToolCall};
use super::usage::Usage;
use super::{EventStream, Model, ModelSettings};

#[derive(Debug, Clone)]
pub struct OpenAiClient {
    settings: std::sync::Arc<ModelSettings>,
    http: Http,
    url: url::Url,
}

impl OpenAiClient {
    pub fn new(settings: ModelSettings) -> Result<Self, LlmError> {
        let url = endpoint(&settings.base_url, "chat/completions")?;
        Ok(OpenAiClient {
            http: Http::new(settings.http.clone())?,
            settings: std::sync::Arc::new(settings),
            url,
        })
    }

    /// The JSON body of `request`.
    pub fn request_body(&self, request: &Request) -> Value {
        let settings = &self.settings;
        let mut body = serde_json::Map::new();
        body.insert("model".into(), json!(settings.model));
        body.insert("messages".into(), Value::Array(messages(request)));
        let max_tokens = request.max_output_tokens.unwrap_or(settings.max_output_tokens);
        // OpenAI's own API rejects `max_tokens` for reasoning models; the compatible servers all know
        // `max_tokens` but not all know its successor.
        let max_field = if is_official(&settings.base_url) {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body.insert(max_field.into(), json!(max_tokens));
        if let Some(temperature) = request.temperature {
            body.insert("temperature".into(), json!(temperature));
        }
        if !request.tools.is_empty() {
            let mut tools: Vec<_> = request.tools.iter().collect();
            tools.sort_by(|a, b| a.name.cmp(&b.name));
            let tools = tools
                .into_iter()
                .map(|tool| {
                    json!({"type": "function", "function": {
                        "name": tool.name, "description": tool.description, "parameters": tool.parameters,
                    }})
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        body.insert("stream".into(), json!(settings.stream));
        if settings.stream {
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        Value::Object(body)
    }

    fn headers(&self) -> Result<HeaderMap, LlmError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.settings.api_key {
            let mut value =
                HeaderValue::from_str(&format!("Bearer {}", key.expose_secret())).map_err(|_| LlmError::Auth {
                    status: 0,
                    message: "the API key contains characters that cannot be sent in an HTTP header".into(),
                })?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        Ok(headers)
    }
}

/// `base` with `path` appended, whether or not `base` ends in a slash.
pub(crate) fn endpoint(base: &url::Url, path: &str) -> Result<url::Url, LlmError> {
    let mut base = base.clone();
    if !base.path().ends_with('/') {
        base.set_path(&format!("{}/", base.path()));
    }
    base.join(path).map_err(|err| LlmError::BadRequest {
        status: 0,
        message: format!("cannot build the endpoint URL from the base URL: {err}"),
    })
}

fn is_official(base_url: &url::Url) -> bool {
    base_url.host_str() == Some("api.openai.com")
}

fn messages(request: &Request) -> Vec<Value> {
    let mut out = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        out.push(json!({"role": "system", "content": request.system}));
    }
    for message in &request.messages {
        match message {
            Message::User { text } => out.push(json!({"role": "user", "content": text})),
            Message::Assistant { parts } => {
                let text: String = parts
                    .iter()
                    .filter_map(|part| match part {
                        AssistantPart::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                let calls: Vec<Value> = parts
                    .iter()
                    .filter_map(|part| match part {
                        AssistantPart::ToolCall(call) => Some(json!({
                            "id": call.id, "type": "function",
                            "function": {"name": call.name, "arguments": call.arguments},
                        })),
                        _ => None,
                    })
                    .collect();
                let mut message = serde_json::Map::new();
                message.insert("role".into(), json!("assistant"));
                // Reasoning is never sent back: reasoning servers reject or ignore it.
                message.insert(
                    "content".into(),
                    if text.is_empty() && !calls.is_empty() {
                        Value::Null
                    } else {
                        json!(text)
                    },
                );
                if !calls.is_empty() {
                    message.insert("tool_calls".into(), Value::Array(calls));
                }
                out.push(Value::Object(message));
            }
            Message::Tool(result) => {
                // The protocol has no error flag; say it in the content, the same way every time.
                let content = if result.is_error {
                    format!("Error: {}", result.content)
                } else {
                    result.content.clone()
                };
                out.push(json!({"role": "tool", "tool_call_id": result.call_id, "content": content}));
            }
        }
    }
    out
}

impl Attempt for (OpenAiClient, Value) {
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
            if event.data.trim() == "[DONE]" {
                return assembler.finish(true);
            }
            for out in assembler.chunk(&event.data)? {
                sink.send(out).await?;
            }
        }
        assembler.finish(false)
    }
}

impl Model for OpenAiClient {
    fn name(&self) -> &str {
        &self.settings.model
    }

    fn stream(&self, request: Request, cancel: CancellationToken) -> EventStream {
        let body = self.request_body(&request);
        drive((self.clone(), body), self.settings.retry.clone(), cancel)
    }
}

/// Sends the deltas of a response that arrived whole, so consumers see one kind of stream.
pub(crate) async fn replay(response: &Response, sink: &EventSink) -> Result<(), LlmError> {
    for (index, part) in response.parts.iter().enumerate() {
        let event = match part {
            AssistantPart::Text { text } => StreamEvent::TextDelta(text.clone()),
            AssistantPart::Thinking { text, .. } => StreamEvent::ThinkingDelta(text.clone()),
            AssistantPart::RedactedThinking { .. } => continue,
            AssistantPart::ToolCall(call) => {
                sink.send(StreamEvent::ToolCallStarted {
                    index,
                    id: call.id.clone(),
                    name: call.name.clone(),
                })
                .await?;
                StreamEvent::ToolCallDelta {
                    index,
                    fragment: call.arguments.clone(),
                }
            }
        };
        sink.send(event).await?;
    }
    Ok(())
}

/// A tool call being assembled from deltas.
#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
    announced: bool,
}

/// Builds a response from `chat.completion.chunk`s.
#[derive(Debug, Default)]
pub struct StreamAssembler {
    id: Option<String>,
    model: Option<String>,
    text: String,
    reasoning: String,
    calls: BTreeMap<usize, PartialCall>,
    finish_reason: Option<String>,
    refused: bool,
    usage: Option<Usage>,
}

impl StreamAssembler {
    /// Takes one `data:` payload; returns the deltas it carried.
    pub fn chunk(&mut self, data: &str) -> Result<Vec<StreamEvent>, LlmError> {
        let chunk: Value = serde_json::from_str(data).map_err(|err| {
            LlmError::protocol(format!(
                "a stream chunk is not JSON ({err}): {}",
                error::shorten(data, 200)
            ))
        })?;
        if let Some(err) = chunk.get("error").filter(|e| !e.is_null()) {
            return Err(stream_error(err));
        }
        let mut out = Vec::new();
        if self.id.is_none() {
            self.id = str_field(&chunk, "id");
        }
        if self.model.is_none() {
            self.model = str_field(&chunk, "model");
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(parse_usage(usage));
        }
        let Some(choice) = first_choice(&chunk) else {
            return Ok(out);
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_owned());
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(out);
        };
        if let Some(text) = reasoning_text(delta).filter(|t| !t.is_empty()) {
            self.reasoning.push_str(text);
            out.push(StreamEvent::ThinkingDelta(text.to_owned()));
        }
        if let Some(text) = content_text(delta.get("content")).filter(|t| !t.is_empty()) {
            self.text.push_str(&text);
            out.push(StreamEvent::TextDelta(text));
        }
        if let Some(text) = delta.get("refusal").and_then(Value::as_str).filter(|t| !t.is_empty()) {
            self.refused = true;
            self.text.push_str(text);
            out.push(StreamEvent::TextDelta(text.to_owned()));
        }
        for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            self.tool_call_delta(call, &mut out);
        }
        Ok(out)
    }

    fn tool_call_delta(&mut self, delta: &Value, out: &mut Vec<StreamEvent>) {
        let id = str_field(delta, "id").filter(|id| !id.is_empty());
        let index = match delta.get("index").and_then(Value::as_u64) {
            Some(index) => index as usize,
            // No index (some servers send each call whole): a new id, or a name when the last call
            // already has one, starts a new call; anything else continues the last call.
            None => match &id {
                Some(id) => self
                    .calls
                    .iter()
                    .find(|(_, call)| &call.id == id)
                    .map(|(index, _)| *index)
                    .unwrap_or(self.calls.len()),
                None => {
                    let names_a_call = delta
                        .pointer("/function/name")
                        .and_then(Value::as_str)
                        .is_some_and(|n| !n.is_empty());
                    match self.calls.values().last() {
                        Some(last) if !names_a_call || last.name.is_empty() => self.calls.len() - 1,
                        _ => self.calls.len(),
                    }
                }
            },
        };
        let call = self.calls.entry(index).or_default();
        if let Some(id) = id.filter(|_| call.id.is_empty()) {
            call.id = id;
        }
        let function = delta.get("function");
        if let Some(name) = function
            .and_then(|f| str_field(f, "name"))
            .filter(|n| !n.is_empty() && call.name.is_empty())
        {
            call.name = name;
        }
        if !call.announced && !call.name.is_empty() {
            call.announced = true;
            if call.id.is_empty() {
                call.id = generated_call_id();
            }
            out.push(StreamEvent::ToolCallStarted {
                index,
                id: call.id.clone(),
                name: call.name.clone(),
            });
        }
        let fragment = match function.and_then(|f| f.get("arguments")) {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Null) | None => String::new(),
            // A whole object instead of a string: it replaces whatever came before.
            Some(other) => {
                call.arguments.clear();
                other.to_string()
            }
        };
        if !fragment.is_empty() {
            call.arguments.push_str(&fragment);
            out.push(StreamEvent::ToolCallDelta { index, fragment });
        }
    }

    /// The stream ended, with (`done`) or without its `[DONE]` line.
    pub fn finish(self, done: bool) -> Result<Response, LlmError> {
        if !done && self.finish_reason.is_none() {
            return Err(LlmError::Transport {
                message: "the response stream ended before the response was complete".into(),
            });
        }
        let mut parts = Vec::new();
        if !self.reasoning.is_empty() {
            parts.push(AssistantPart::Thinking {
                text: self.reasoning,
                signature: None,
            });
        }
        if !self.text.is_empty() {
            parts.push(AssistantPart::Text { text: self.text });
        }
        for (_, call) in self.calls {
            parts.push(AssistantPart::ToolCall(ToolCall {
                id: if call.id.is_empty() {
                    generated_call_id()
                } else {
                    call.id
                },
                name: call.name,
                arguments: call.arguments,
            }));
        }
        let has_calls = parts.iter().any(|p| matches!(p, AssistantPart::ToolCall(_)));
        Ok(Response {
            id: self.id,
            model: self.model,
            stop_reason: if self.refused {
                StopReason::Refusal
            } else {
                stop_reason(self.finish_reason.as_deref(), has_calls)
            },
            parts,
            usage: self.usage.unwrap_or_default(),
        })
    }
}

/// Parses a non-streamed `chat.completion`.
pub fn parse_response(body: &str) -> Result<Response, LlmError> {
    let value: Value = serde_json::from_str(body).map_err(|err| {
        LlmError::protocol(format!(
            "the response is not JSON ({err}): {}",
            error::shorten(body, 200)
        ))
    })?;
    if let Some(err) = value.get("error").filter(|e| !e.is_null()) {
        return Err(stream_error(err));
    }
    let choice = first_choice(&value).ok_or_else(|| LlmError::protocol("the response has no choices"))?;
    let message = choice
        .get("message")
        .ok_or_else(|| LlmError::protocol("the response's choice has no message"))?;
    let mut parts = Vec::new();
    if let Some(text) = reasoning_text(message).filter(|t| !t.is_empty()) {
        parts.push(AssistantPart::Thinking {
            text: text.to_owned(),
            signature: None,
        });
    }
    if let Some(text) = content_text(message.get("content")).filter(|t| !t.is_empty()) {
        parts.push(AssistantPart::Text { text });
    }
    // A refusal (structured outputs) is the model's answer: kept as its text.
    let refusal = message.get("refusal").and_then(Value::as_str).filter(|t| !t.is_empty());
    if let Some(text) = refusal {
        parts.push(AssistantPart::Text { text: text.to_owned() });
    }
    for call in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let function = call.get("function");
        let arguments = match function.and_then(|f| f.get("arguments")) {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        parts.push(AssistantPart::ToolCall(ToolCall {
            id: str_field(call, "id")
                .filter(|id| !id.is_empty())
                .unwrap_or_else(generated_call_id),
            name: function.and_then(|f| str_field(f, "name")).unwrap_or_default(),
            arguments,
        }));
    }
    let has_calls = parts.iter().any(|p| matches!(p, AssistantPart::ToolCall(_)));
    Ok(Response {
        id: str_field(&value, "id"),
        model: str_field(&value, "model"),
        stop_reason: if refusal.is_some() {
            StopReason::Refusal
        } else {
            stop_reason(choice.get("finish_reason").and_then(Value::as_str), has_calls)
        },
        parts,
        usage: value.get("usage").map(parse_usage).unwrap_or_default(),
    })
}

fn first_choice(value: &Value) -> Option<&Value> {
    let choices = value.get("choices")?.as_array()?;
    choices
        .iter()
        .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
        .or_else(|| choices.first())
}

fn str_field(value: &Value, name: &str) -> Option<String> {
    value.get(name).and_then(Value::as_str).map(str::to_owned)
}

/// `reasoning_content` (DeepSeek, vLLM, llama.cpp) or `reasoning` (Ollama, OpenRouter).
fn reasoning_text(value: &Value) -> Option<&str> {
    ["reasoning_content", "reasoning"]
        .iter()
        .find_map(|name| value.get(*name).and_then(Value::as_str))
}

/// Content as a string, or as an array of `{"type": "text", "text": ...}` parts.
fn content_text(content: Option<&Value>) -> Option<String> {
    match content? {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect(),
        ),
        _ => None,
    }
}

fn parse_usage(usage: &Value) -> Usage {
    let number = |value: Option<&Value>| value.and_then(Value::as_u64).unwrap_or(0);
    let prompt = number(usage.get("prompt_tokens"));
    let cached = number(usage.pointer("/prompt_tokens_details/cached_tokens"));
    Usage {
        input_tokens: prompt.saturating_sub(cached),
        output_tokens: number(usage.get("completion_tokens")),
        cache_read_tokens: cached,
        cache_write_tokens: 0,
        reasoning_tokens: number(usage.pointer("/completion_tokens_details/reasoning_tokens")),
    }
}

fn stop_reason(finish_reason: Option<&str>, has_calls: bool) -> StopReason {
    match finish_reason {
        Some("length") => StopReason::MaxTokens,
        Some("content_filter") => StopReason::Refusal,
        // Ollama and others say `stop` even when they called tools: the calls decide.
        _ if has_calls => StopReason::ToolUse,
        Some("stop") | None => StopReason::EndTurn,
        Some("tool_calls" | "function_call") => StopReason::ToolUse,
        Some(other) => StopReason::Other(other.to_owned()),
    }
}

/// An error object inside a stream or a 200 response (OpenRouter, vLLM and LiteLLM send these).
fn stream_error(err: &Value) -> LlmError {
    let provider_error = ProviderError::parse(&json!({"error": err}).to_string());
    // OpenRouter puts the HTTP status it means in a numeric `code`.
    let status = err
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|code| u16::try_from(code).ok())
        .filter(|code| (400..600).contains(code))
        .unwrap_or(500);
    error::from_status(status, None, provider_error)
}

fn generated_call_id() -> String {
    format!("call_{:016x}", fastrand::u64(..))
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::llm::sse::SseDecoder;
    use crate::llm::{HttpOptions, Provider, RetryPolicy, ToolSpec};

    fn fixture(path: &str) -> String {
        crate::llm::fixture(&format!("llm/openai/{path}"))
    }

    /// Runs a recorded SSE body through the decoder and the assembler, in small chunks.
    fn assemble(sse: &str) -> (Vec<StreamEvent>, Result<Response, LlmError>) {
        let mut decoder = SseDecoder::new();
        let mut assembler = StreamAssembler::default();
        let mut events = Vec::new();
        for chunk in sse.as_bytes().chunks(97) {
            for event in decoder.feed(chunk).unwrap() {
                if event.data == "[DONE]" {
                    return (events, assembler.finish(true));
                }
                match assembler.chunk(&event.data) {
                    Ok(out) => events.extend(out),
                    Err(err) => return (events, Err(err)),
                }
            }
        }
        (events, assembler.finish(false))
    }

    #[test]
    fn recorded_stream_with_a_tool_call() {
        let (events, response) = assemble(&fixture(
            "chat-completions-stream/test_parse_strict_tools.a247c49c5fcd.sse",
        ));
        let response = response.unwrap();
        assert_eq!(
            response.parts,
            vec![AssistantPart::ToolCall(ToolCall {
                id: "call_CTf1nWJLqSeRgDqaCG27xZ74".into(),
                name: "get_weather".into(),
                arguments: r#"{"city":"San Francisco","state":"CA"}"#.into(),
            })]
        );
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        assert_eq!(response.model.as_deref(), Some("gpt-4o-2024-08-06"));
        assert_eq!(response.id.as_deref(), Some("chatcmpl-ABfwCgi41eStOcARjZq97ohCEGBPO"));
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 48,
                output_tokens: 19,
                ..Usage::default()
            }
        );
        assert_eq!(
            events[0],
            StreamEvent::ToolCallStarted {
                index: 0,
                id: "call_CTf1nWJLqSeRgDqaCG27xZ74".into(),
                name: "get_weather".into()
            }
        );
        let fragments: String = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCallDelta { fragment, .. } => Some(fragment.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(fragments, r#"{"city":"San Francisco","state":"CA"}"#);
    }

    #[test]
    fn recorded_stream_with_several_tool_calls() {
        let (_, response) = assemble(&fixture(
            "chat-completions-stream/test_parse_multiple_pydantic_tools.f82268f2fefd.sse",
        ));
        let response = response.unwrap();
        let calls: Vec<_> = response
            .tool_calls()
            .map(|c| (c.name.as_str(), c.parse_arguments().unwrap()))
            .collect();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].0, "GetWeatherArgs");
        assert_eq!(calls[0].1["city"], "Edinburgh");
        assert_eq!(calls[1].0, "get_stock_price");
        assert_eq!(calls[1].1["ticker"], "AAPL");
        assert_eq!(response.stop_reason, StopReason::ToolUse);
    }

    #[test]
    fn recorded_text_streams() {
        let (events, response) = assemble(&fixture("chat-completions-stream/test_parse_nothing.e2aad469b71d.sse"));
        let response = response.unwrap();
        let deltas: String = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::TextDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(deltas, response.text());
        assert!(
            response
                .text()
                .starts_with("I'm unable to provide real-time weather updates."),
            "{}",
            response.text()
        );
        assert_eq!(response.stop_reason, StopReason::EndTurn);
        assert_eq!(response.usage.input_tokens, 14);
        assert_eq!(response.usage.output_tokens, 30);

        let (_, response) = assemble(&fixture(
            "chat-completions-stream/test_parse_max_tokens_reached.4cc50a6135d2.sse",
        ));
        assert_eq!(response.unwrap().stop_reason, StopReason::MaxTokens);
    }

    #[test]
    fn every_recorded_stream_assembles() {
        let dir = crate::llm::fixture_path("llm/openai/chat-completions-stream");
        let mut count = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let (_, response) = assemble(&std::fs::read_to_string(&path).unwrap());
            let response = response.unwrap_or_else(|err| panic!("{}: {err}", path.display()));
            assert!(response.usage.output_tokens > 0, "{}", path.display());
            count += 1;
        }
        assert!(count >= 10);
    }

    #[test]
    fn recorded_complete_responses() {
        let response = parse_response(&fixture("chat-completions/test_parse_multiple_pydantic_tools.json")).unwrap();
        let names: Vec<_> = response.tool_calls().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["GetWeatherArgs", "get_stock_price"]);
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        let refusal = parse_response(&fixture("chat-completions/test_parse_pydantic_model_refusal.json")).unwrap();
        assert_eq!(refusal.stop_reason, StopReason::Refusal);
        assert_eq!(refusal.text(), "I'm very sorry, but I can't assist with that.");

        let dir = crate::llm::fixture_path("llm/openai/chat-completions");
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let response = parse_response(&std::fs::read_to_string(&path).unwrap())
                .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
            assert!(response.usage.input_tokens > 0, "{}", path.display());
            assert!(
                !response.parts.is_empty() || response.stop_reason == StopReason::MaxTokens,
                "{}",
                path.display()
            );
        }
    }

    #[test]
    fn compatible_servers_quirks_are_accepted() {
        let mut assembler = StreamAssembler::default();
        // Ollama-style: no index, whole arguments as an object, `stop` with a tool call, no [DONE].
        assembler
            .chunk(r#"{"id":"x","model":"qwen","choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"hmm "}}]}"#)
            .unwrap();
        assembler
            .chunk(r#"{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"grep","arguments":{"pattern":"x"}}}]}}]}"#)
            .unwrap();
        assembler
            .chunk(r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"read_file","arguments":"{\"path\":\"y\"}"}}]}}]}"#)
            .unwrap();
        assembler
            .chunk(r#"{"choices":[{"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":20,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":16}}}"#)
            .unwrap();
        let response = assembler.finish(false).unwrap();
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        let calls: Vec<_> = response.tool_calls().cloned().collect();
        assert_eq!(calls[0].id, "a");
        assert_eq!(calls[0].arguments, r#"{"pattern":"x"}"#);
        // The second call came without index or id: it is a call of its own, with an id made up for it.
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].name, "grep");
        assert_eq!(
            (calls[1].name.as_str(), calls[1].arguments.as_str()),
            ("read_file", r#"{"path":"y"}"#)
        );
        assert!(calls[1].id.starts_with("call_"));
        assert!(matches!(&response.parts[0], AssistantPart::Thinking { text, signature: None } if text == "hmm "));
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 4,
                output_tokens: 5,
                cache_read_tokens: 16,
                ..Usage::default()
            }
        );
    }

    #[test]
    fn a_stream_cut_before_its_finish_is_an_error_and_errors_in_the_stream_are_typed() {
        let mut assembler = StreamAssembler::default();
        assembler
            .chunk(r#"{"choices":[{"index":0,"delta":{"content":"par"}}]}"#)
            .unwrap();
        assert!(matches!(assembler.finish(false), Err(LlmError::Transport { .. })));

        let mut assembler = StreamAssembler::default();
        let err = assembler
            .chunk(r#"{"error":{"message":"Provider returned error","code":429}}"#)
            .unwrap_err();
        assert!(matches!(err, LlmError::RateLimited { .. }), "{err:?}");
        assert!(matches!(assembler.chunk("{not json"), Err(LlmError::Protocol { .. })));
    }

    #[test]
    fn invalid_tool_arguments_are_delivered_as_they_came() {
        let mut assembler = StreamAssembler::default();
        assembler
            .chunk(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"edit_file","arguments":"{\"path\": \"a.rs\", \"old"}}]}}]}"#)
            .unwrap();
        assembler
            .chunk(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#)
            .unwrap();
        let response = assembler.finish(true).unwrap();
        assert_eq!(response.stop_reason, StopReason::MaxTokens);
        let call = response.tool_calls().next().unwrap();
        assert_eq!(call.arguments, r#"{"path": "a.rs", "old"#);
        assert!(call.parse_arguments().is_err());
    }

    fn client(base_url: &str) -> OpenAiClient {
        OpenAiClient::new(ModelSettings {
            provider: Provider::OpenAi,
            model: "gpt-4o".into(),
            base_url: base_url.parse().unwrap(),
            api_key: None,
            max_output_tokens: 1000,
            stream: true,
            http: HttpOptions::default(),
            retry: RetryPolicy::default(),
        })
        .unwrap()
    }

    #[test]
    fn the_request_is_strict_and_stable() {
        let tool = |name: &str| ToolSpec {
            name: name.into(),
            description: format!("{name} things"),
            parameters: json!({"type": "object", "properties": {}}),
        };
        let request = Request {
            system: "be brief".into(),
            messages: vec![
                Message::user("fix it"),
                Message::Assistant {
                    parts: vec![
                        AssistantPart::Thinking {
                            text: "secret plan".into(),
                            signature: None,
                        },
                        AssistantPart::ToolCall(ToolCall {
                            id: "c1".into(),
                            name: "grep".into(),
                            arguments: "{\"pattern\":\"x\"}".into(),
                        }),
                    ],
                },
                Message::tool_result("c1", "no such file", true),
            ],
            tools: vec![tool("read_file"), tool("bash"), tool("grep")],
            max_output_tokens: None,
            temperature: None,
        };
        let body = client("http://127.0.0.1:1/v1").request_body(&request);
        insta::assert_json_snapshot!(body, @r#"
        {
          "max_tokens": 1000,
          "messages": [
            {
              "content": "be brief",
              "role": "system"
            },
            {
              "content": "fix it",
              "role": "user"
            },
            {
              "content": null,
              "role": "assistant",
              "tool_calls": [
                {
                  "function": {
                    "arguments": "{\"pattern\":\"x\"}",
                    "name": "grep"
                  },
                  "id": "c1",
                  "type": "function"
                }
              ]
            },
            {
              "content": "Error: no such file",
              "role": "tool",
              "tool_call_id": "c1"
            }
          ],
          "model": "gpt-4o",
          "stream": true,
          "stream_options": {
            "include_usage": true
          },
          "tools": [
            {
              "function": {
                "description": "bash things",
                "name": "bash",
                "parameters": {
                  "properties": {},
                  "type": "object"
                }
              },
              "type": "function"
            },
            {
              "function": {
                "description": "grep things",
                "name": "grep",
                "parameters": {
                  "properties": {},
                  "type": "object"
                }
              },
              "type": "function"
            },
            {
              "function": {
                "description": "read_file things",
                "name": "read_file",
                "parameters": {
                  "properties": {},
                  "type": "object"
                }
              },
              "type": "function"
            }
          ]
        }
        "#);
        let official = client("https://api.openai.com/v1").request_body(&request);
        assert_eq!(official["max_completion_tokens"], 1000);
        assert!(official.get("max_tokens").is_none());
    }

    #[test]
    fn endpoints_join_with_or_without_a_trailing_slash() {
        for base in ["http://h:1/v1", "http://h:1/v1/"] {
            assert_eq!(
                endpoint(&base.parse().unwrap(), "chat/completions").unwrap().as_str(),
                "http://h:1/v1/chat/completions"
            );
        }
        assert_eq!(
            endpoint(&"http://h:1".parse().unwrap(), "v1/messages")
                .unwrap()
                .as_str(),
            "http://h:1/v1/messages"
        );
    }
}
