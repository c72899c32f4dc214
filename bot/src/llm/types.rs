//! The provider-neutral conversation: messages, tool calls and results, tool specs, requests and responses.
//!
//! Both wire protocols (OpenAI Chat Completions and Anthropic Messages) are translated to and from these
//! types in their own modules; nothing above `llm/` ever sees a provider's JSON.

use serde::{Deserialize, Serialize};

use super::usage::Usage;

/// One message of a conversation. The system prompt is not a message: it lives on [`Request`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Text from the user (the task, a nudge from the harness, appended run state).
    User { text: String },
    /// What the model produced: text, reasoning and tool calls, in the order the model produced them.
    Assistant { parts: Vec<AssistantPart> },
    /// The result of one tool call, answering [`ToolCall::id`].
    Tool(ToolResult),
}

impl Message {
    pub fn user(text: impl Into<String>) -> Self {
        Message::User { text: text.into() }
    }

    pub fn tool_result(call_id: impl Into<String>, content: impl Into<String>, is_error: bool) -> Self {
        Message::Tool(ToolResult {
            call_id: call_id.into(),
            content: content.into(),
            is_error,
        })
    }
}

/// A piece of an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AssistantPart {
    Text {
        text: String,
    },
    /// Reasoning the provider exposed. Anthropic thinking blocks carry a `signature` that must be sent
    /// back verbatim with the rest of the turn; OpenAI-compatible servers' `reasoning_content` has none
    /// and is never sent back.
    Thinking {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Anthropic's encrypted thinking: opaque, returned as is.
    RedactedThinking {
        data: String,
    },
    ToolCall(ToolCall),
}

/// A tool call as the model emitted it.
///
/// `arguments` is the raw text the model produced. It is usually a JSON object, but a model can emit
/// anything (a truncated stream, a small local model's garbage), so it is kept as text and parsed by
/// the caller, which turns a parse failure into an error result for the model rather than a crash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// Why a tool call's arguments are not a JSON object; the message is for the model.
#[derive(Debug, thiserror::Error)]
pub enum ArgumentsError {
    #[error("the arguments of `{tool}` must be a JSON object, got {kind}")]
    NotAnObject { tool: String, kind: &'static str },
    #[error("the arguments of `{tool}` are not valid JSON ({source}); they were: {preview}")]
    InvalidJson {
        tool: String,
        #[source]
        source: serde_json::Error,
        /// The start of the text.
        preview: String,
    },
}

impl ToolCall {
    /// The arguments as a JSON object, or an error saying precisely why they are not one.
    pub fn parse_arguments(&self) -> Result<serde_json::Map<String, serde_json::Value>, ArgumentsError> {
        let text = self.arguments.trim();
        // Several servers send an empty string for a call without arguments.
        if text.is_empty() {
            return Ok(serde_json::Map::new());
        }
        match serde_json::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::Object(map)) => Ok(map),
            Ok(other) => Err(ArgumentsError::NotAnObject {
                tool: self.name.clone(),
                kind: json_kind(&other),
            }),
            Err(source) => Err(ArgumentsError::InvalidJson {
                tool: self.name.clone(),
                source,
                preview: preview(text, 200),
            }),
        }
    }
}

fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

fn preview(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}… ({} bytes in all)", &text[..cut], text.len()),
        None => text.to_owned(),
    }
}

/// The outcome of a tool call, fed back to the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    pub call_id: String,
    pub content: String,
    pub is_error: bool,
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// One call to a model.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Request {
    pub system: String,
    pub messages: Vec<Message>,
    /// Serialized sorted by name whatever the order here, so the prompt prefix stays byte-stable.
    pub tools: Vec<ToolSpec>,
    /// Overrides the configured maximum for this call.
    pub max_output_tokens: Option<u32>,
    pub temperature: Option<f32>,
}

/// Why the model stopped producing output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It finished its turn.
    EndTurn,
    /// It wants its tool calls run.
    ToolUse,
    /// It hit the output token limit; the last part may be cut (a tool call's arguments included).
    MaxTokens,
    /// A stop sequence matched.
    StopSequence,
    /// The provider filtered or refused the output.
    Refusal,
    /// Anything else a server reported, kept verbatim.
    Other(String),
}

/// A complete assistant turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub id: Option<String>,
    pub model: Option<String>,
    pub parts: Vec<AssistantPart>,
    pub stop_reason: StopReason,
    pub usage: Usage,
}

impl Response {
    /// The assistant message to append to the conversation.
    pub fn message(&self) -> Message {
        Message::Assistant {
            parts: self.parts.clone(),
        }
    }

    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|part| match part {
                AssistantPart::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.parts.iter().filter_map(|part| match part {
            AssistantPart::ToolCall(call) => Some(call),
            _ => None,
        })
    }
}

/// What a streaming call yields, in order. The last event of a successful stream is `Completed`.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    TextDelta(String),
    ThinkingDelta(String),
    /// A tool call began; its arguments follow as `ToolCallDelta`s with the same `index`.
    ToolCallStarted {
        index: usize,
        id: String,
        name: String,
    },
    ToolCallDelta {
        index: usize,
        fragment: String,
    },
    /// The provider is retrying after a retryable failure; `attempt` starts at 1.
    Retrying {
        attempt: u32,
        delay: std::time::Duration,
        reason: String,
    },
    Completed(Response),
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn call(arguments: &str) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: "grep".into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn arguments_parse_or_say_why_not() {
        assert_eq!(call(r#"{"a":1}"#).parse_arguments().unwrap()["a"], 1);
        assert!(call("  ").parse_arguments().unwrap().is_empty());
        let err = call(r#"{"pattern": "fo"#).parse_arguments().unwrap_err().to_string();
        assert!(
            err.starts_with("the arguments of `grep` are not valid JSON (EOF"),
            "{err}"
        );
        assert!(err.ends_with(r#"they were: {"pattern": "fo"#), "{err}");
        assert_eq!(
            call("[1]").parse_arguments().unwrap_err().to_string(),
            "the arguments of `grep` must be a JSON object, got an array"
        );
    }

    #[test]
    fn long_bad_arguments_are_previewed() {
        let long = format!("{{\"x\": \"{}", "é".repeat(500));
        let err = call(&long).parse_arguments().unwrap_err().to_string();
        assert!(err.contains(&format!("({} bytes in all)", long.len())), "{err}");
    }
}
