//! The script a [`ScriptedModel`](super::ScriptedModel) plays: turns, replies, faults, and their
//! builders and JSON form.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The ordered turns of a conversation; each model request consumes the next one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The turns, first to last.
    #[serde(default)]
    pub turns: Vec<Turn>,
}

impl Script {
    /// An empty script: every request is answered with the "script exhausted" error.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a turn (a [`Reply`] or a fault built with the [`Turn`] constructors).
    #[must_use]
    pub fn turn(mut self, turn: impl Into<Turn>) -> Self {
        self.turns.push(turn.into());
        self
    }

    /// Parses the JSON form described in the [module documentation](super).
    pub fn from_json(json: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(json)
    }

    /// The JSON form of this script (the inverse of [`Script::from_json`]).
    pub fn to_json(&self) -> String {
        // Every field is a plain string, number or JSON value: serialising cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// How many turns the script holds.
    pub fn len(&self) -> usize {
        self.turns.len()
    }

    /// Whether the script holds no turn.
    pub fn is_empty(&self) -> bool {
        self.turns.is_empty()
    }
}

impl<T: Into<Turn>> FromIterator<T> for Script {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        Self {
            turns: iter.into_iter().map(Into::into).collect(),
        }
    }
}

/// One answer of the model: a reply, or a fault the client must cope with.
///
/// Fault bodies take the exact shape of the provider the request went to (OpenAI
/// `{"error":{"message","type","param","code"}}`, Anthropic
/// `{"type":"error","error":{"type","message"},"request_id"}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Turn {
    /// A successful answer, streamed when the request asked for `"stream": true`.
    Reply(Reply),
    /// 429. OpenAI `rate_limit_exceeded`, Anthropic `rate_limit_error` (+ `x-should-retry: true`).
    RateLimited {
        /// Sent as the `retry-after` header (whole seconds) when set.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after_secs: Option<u64>,
        /// Sent as the `retry-after-ms` header when set.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after_ms: Option<u64>,
    },
    /// Anthropic: 529 `overloaded_error` "Overloaded". OpenAI: 503 `server_error`.
    Overloaded {
        /// Sent as the `retry-after` header (whole seconds) when set.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after_secs: Option<u64>,
    },
    /// Any status (500 by default) with the provider's error body for that status.
    ServerError {
        #[serde(default = "default_server_error_status")]
        status: u16,
        /// The error message; the provider's usual text for the status when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// 400: OpenAI `context_length_exceeded` ("This model's maximum context length is N tokens.
    /// However, your messages resulted in M tokens. …"), Anthropic `invalid_request_error`
    /// ("prompt is too long: M tokens > N maximum").
    ContextLengthExceeded {
        /// N, the model's window.
        #[serde(default = "default_context_window")]
        max_tokens: u64,
        /// M, what the request would have needed.
        #[serde(default = "default_prompt_tokens")]
        prompt_tokens: u64,
    },
    /// 401: OpenAI `invalid_api_key`, Anthropic `authentication_error`.
    Unauthorized {},
    /// The account is out of credit: OpenAI 429 `insufficient_quota`, Anthropic 400
    /// `invalid_request_error` "Your credit balance is too low …".
    InsufficientQuota {},
    /// Streams the reply's events but ends the response after `after_events` of them, never
    /// sending the terminal event (`data: [DONE]` / `message_stop`). A non-streaming request gets
    /// the first half of the JSON body instead.
    CutStream {
        after_events: usize,
        reply: Reply,
        /// `false`: the HTTP body ends cleanly (the client sees EOF without the terminal event).
        /// `true`: the connection is aborted mid-body (the client sees a transport error).
        #[serde(default)]
        abort: bool,
    },
    /// Streams `after_events` of the reply's events, then an in-stream error (Anthropic
    /// `event: error` `overloaded_error`, OpenAI `data: {"error":{…}}`) and ends the body.
    /// A non-streaming request gets the same error as an HTTP error (529 / 500).
    StreamError { after_events: usize, reply: Reply },
    /// Anything else, byte for byte: e.g. a proxy's HTML 502 page.
    Raw {
        status: u16,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        headers: Vec<(String, String)>,
        #[serde(default)]
        body: String,
    },
}

fn default_server_error_status() -> u16 {
    500
}

fn default_context_window() -> u64 {
    200_000
}

fn default_prompt_tokens() -> u64 {
    210_000
}

impl Turn {
    /// 429 without any retry hint.
    pub fn rate_limited() -> Self {
        Turn::RateLimited {
            retry_after_secs: None,
            retry_after_ms: None,
        }
    }

    /// 429 with `retry-after: <secs>`.
    pub fn rate_limited_retry_after(secs: u64) -> Self {
        Turn::RateLimited {
            retry_after_secs: Some(secs),
            retry_after_ms: None,
        }
    }

    /// 429 with `retry-after-ms: <ms>` (and no `retry-after`).
    pub fn rate_limited_retry_after_ms(ms: u64) -> Self {
        Turn::RateLimited {
            retry_after_secs: None,
            retry_after_ms: Some(ms),
        }
    }

    /// Anthropic 529 / OpenAI 503, without a retry hint.
    pub fn overloaded() -> Self {
        Turn::Overloaded { retry_after_secs: None }
    }

    /// `status` with the provider's error body and usual message for it.
    pub fn server_error(status: u16) -> Self {
        Turn::ServerError { status, message: None }
    }

    /// 400 context-length error: a 200 000 token window, a 210 000 token prompt.
    pub fn context_length_exceeded() -> Self {
        Turn::ContextLengthExceeded {
            max_tokens: default_context_window(),
            prompt_tokens: default_prompt_tokens(),
        }
    }

    /// 401 with the provider's bad-key error.
    pub fn unauthorized() -> Self {
        Turn::Unauthorized {}
    }

    /// The provider's out-of-credit error.
    pub fn insufficient_quota() -> Self {
        Turn::InsufficientQuota {}
    }

    /// The reply's stream, ended cleanly after `after_events` events, without its terminal event.
    pub fn cut_stream(after_events: usize, reply: Reply) -> Self {
        Turn::CutStream {
            after_events,
            reply,
            abort: false,
        }
    }

    /// The reply's stream, with the connection aborted after `after_events` events.
    pub fn abort_stream(after_events: usize, reply: Reply) -> Self {
        Turn::CutStream {
            after_events,
            reply,
            abort: true,
        }
    }

    /// The reply's stream, with an in-stream error event after `after_events` events.
    pub fn stream_error(after_events: usize, reply: Reply) -> Self {
        Turn::StreamError { after_events, reply }
    }

    /// A response sent as is.
    pub fn raw(status: u16, body: impl Into<String>) -> Self {
        Turn::Raw {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }
}

impl From<Reply> for Turn {
    fn from(reply: Reply) -> Self {
        Turn::Reply(reply)
    }
}

/// A successful model answer: content blocks in order, usage, stop reason, pacing.
///
/// OpenAI Chat Completions has no thinking blocks: they are left out of OpenAI answers, text
/// blocks are joined into `content`, and tool calls follow in order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    #[serde(default)]
    pub content: Vec<Block>,
    #[serde(default)]
    pub usage: Usage,
    /// The stop reason; by default `tool_use`/`tool_calls` when the reply calls a tool, else
    /// `end_turn`/`stop`. Either provider's spelling is accepted and mapped to the other's
    /// (`max_tokens` ⇄ `length`, `end_turn` ⇄ `stop`, `tool_use` ⇄ `tool_calls`); anything else
    /// is sent unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<String>,
    /// Pause between streamed events, in milliseconds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub chunk_delay_ms: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Reply {
    /// A reply with no content yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A reply holding one text block: the usual final answer.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new().then_text(text)
    }

    /// Appends a text block.
    #[must_use]
    pub fn then_text(self, text: impl Into<String>) -> Self {
        self.block(Block::Text(text.into()))
    }

    /// Appends a thinking block (Anthropic only) with its signature.
    #[must_use]
    pub fn thinking(self, text: impl Into<String>, signature: impl Into<String>) -> Self {
        self.block(Block::Thinking {
            text: text.into(),
            signature: signature.into(),
        })
    }

    /// Appends a tool call whose arguments are `arguments` serialised as JSON.
    #[must_use]
    pub fn tool_call(self, name: impl Into<String>, arguments: Value) -> Self {
        self.block(Block::ToolCall {
            name: name.into(),
            arguments,
            id: None,
        })
    }

    /// Appends a tool call whose argument text is sent verbatim, e.g. invalid JSON.
    #[must_use]
    pub fn tool_call_raw(self, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        self.block(Block::ToolCallRaw {
            name: name.into(),
            arguments: arguments.into(),
            id: None,
        })
    }

    /// Appends any block.
    #[must_use]
    pub fn block(mut self, block: Block) -> Self {
        self.content.push(block);
        self
    }

    /// Input (prompt) and output (completion) token counts.
    #[must_use]
    pub fn usage(mut self, input: u64, output: u64) -> Self {
        self.usage.input = input;
        self.usage.output = output;
        self
    }

    /// Cache-read and cache-write token counts.
    #[must_use]
    pub fn cache(mut self, read: u64, write: u64) -> Self {
        self.usage.cache_read = read;
        self.usage.cache_write = write;
        self
    }

    /// Overrides the stop reason, e.g. `"max_tokens"`.
    #[must_use]
    pub fn stop(mut self, reason: impl Into<String>) -> Self {
        self.stop = Some(reason.into());
        self
    }

    /// Pauses `delay` between streamed events (millisecond precision).
    #[must_use]
    pub fn chunk_delay(mut self, delay: Duration) -> Self {
        self.chunk_delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        self
    }

    /// Whether the reply calls at least one tool.
    pub fn has_tool_calls(&self) -> bool {
        self.content
            .iter()
            .any(|block| matches!(block, Block::ToolCall { .. } | Block::ToolCallRaw { .. }))
    }
}

/// One content block of a [`Reply`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Block {
    /// Extended thinking (Anthropic `thinking` block with its `signature`).
    Thinking { text: String, signature: String },
    /// Visible text.
    Text(String),
    /// A tool call with JSON arguments.
    ToolCall {
        name: String,
        #[serde(default = "empty_object")]
        arguments: Value,
        /// The call id; generated (`call_…` / `toolu_…`) when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
    },
    /// A tool call whose argument text is sent verbatim (it need not be JSON). A non-streaming
    /// Anthropic answer can only carry an object: text that is not JSON goes as a JSON string.
    ToolCallRaw {
        name: String,
        arguments: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
    },
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

impl Block {
    /// The argument text of a tool call as it goes on the wire.
    pub(super) fn arguments_text(&self) -> Option<String> {
        match self {
            Block::ToolCall { arguments, .. } => Some(arguments.to_string()),
            Block::ToolCallRaw { arguments, .. } => Some(arguments.clone()),
            Block::Thinking { .. } | Block::Text(_) => None,
        }
    }
}

/// Token figures of a reply, sent as they are: OpenAI `prompt_tokens` = `input`,
/// `completion_tokens` = `output`, `prompt_tokens_details.cached_tokens` = `cache_read`;
/// Anthropic `input_tokens` = `input`, `output_tokens` = `output`, `cache_read_input_tokens` =
/// `cache_read`, `cache_creation_input_tokens` = `cache_write`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    #[serde(default)]
    pub input: u64,
    #[serde(default)]
    pub output: u64,
    #[serde(default)]
    pub cache_read: u64,
    #[serde(default)]
    pub cache_write: u64,
}

/// The stop reason in the provider-neutral spelling used for mapping.
pub(super) enum Stop<'a> {
    EndTurn,
    ToolUse,
    MaxTokens,
    Other(&'a str),
}

impl Reply {
    pub(super) fn stop_reason(&self) -> Stop<'_> {
        match self.stop.as_deref() {
            None if self.has_tool_calls() => Stop::ToolUse,
            None | Some("end_turn" | "stop") => Stop::EndTurn,
            Some("tool_use" | "tool_calls") => Stop::ToolUse,
            Some("max_tokens" | "length") => Stop::MaxTokens,
            Some(other) => Stop::Other(other),
        }
    }
}
