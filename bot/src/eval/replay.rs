//! Record and replay of model exchanges for `pitcrew eval`: a [`Recorder`] wraps the real model
//! and appends every answered request to the case run's recording; a [`Replayer`] answers from a
//! recording with no model at all, and a request the recording does not hold is refused with the
//! first part that differs from the request recorded at that place — a prompt-drift detector.
//!
//! Requests are keyed by a SHA-256 of their normalised JSON: the working copy's and the run
//! directory's paths become `<root>` and `<run>` (they differ from run to run), and in tool
//! results every run of digits becomes `0` (test runners print their timings). Everything else —
//! the system prompt, the tools' descriptions and schemas, the task, the model's own turns —
//! must match byte for byte.
//!
//! What the tools printed is the environment's, not the agent's: another version of a test runner
//! words its output differently. A request that matches the recording except in the contents of
//! its tool results is still answered, and the difference kept as a note ([`Replayer::notes`]);
//! the check, run for real, still decides the case. A difference anywhere else is drift.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::llm::{EventStream, LlmError, Model, Request, Response, StreamEvent};

/// One answered request, a line of a recording.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Exchange {
    key: String,
    /// The normalised request, for the drift report.
    request: Value,
    response: Response,
}

/// What differs from run to run and is not the agent's doing.
#[derive(Debug, Clone, Default)]
pub struct Normalizer {
    /// `(text, placeholder)`, the longest text first.
    replacements: Vec<(String, &'static str)>,
}

impl Normalizer {
    /// Replaces `root` (the working copy as commands see it, and as the host sees it) and
    /// `run_dir` in every text.
    pub fn new(roots: &[&str], run_dir: &Path) -> Self {
        let mut replacements: Vec<(String, &'static str)> = roots
            .iter()
            .filter(|r| r.len() > 1)
            .map(|r| (r.trim_end_matches('/').to_owned(), "<root>"))
            .collect();
        replacements.push((run_dir.display().to_string(), "<run>"));
        replacements.sort_by_key(|(text, _)| std::cmp::Reverse(text.len()));
        replacements.dedup_by(|a, b| a.0 == b.0);
        Normalizer { replacements }
    }

    fn text(&self, text: &str, mask_digits: bool) -> String {
        let mut text = text.to_owned();
        for (from, to) in &self.replacements {
            if !from.is_empty() && text.contains(from.as_str()) {
                text = text.replace(from.as_str(), to);
            }
        }
        if mask_digits {
            let mut masked = String::with_capacity(text.len());
            let mut in_number = false;
            for c in text.chars() {
                if c.is_ascii_digit() {
                    if !in_number {
                        masked.push('0');
                    }
                    in_number = true;
                } else {
                    masked.push(c);
                    in_number = false;
                }
            }
            text = masked;
        }
        text
    }

    /// The request as it is keyed and compared.
    fn request(&self, request: &Request) -> Value {
        let mut value = serde_json::to_value(request).unwrap_or(Value::Null);
        self.walk(&mut value, false);
        value
    }

    fn walk(&self, value: &mut Value, in_tool_result: bool) {
        match value {
            Value::String(text) => *text = self.text(text, in_tool_result),
            Value::Array(items) => items.iter_mut().for_each(|item| self.walk(item, in_tool_result)),
            Value::Object(map) => {
                let tool_result = in_tool_result || map.get("role").and_then(Value::as_str) == Some("tool");
                for (key, item) in map.iter_mut() {
                    // Call ids are the provider's; the content is what the tool said.
                    self.walk(item, tool_result && key == "content");
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

/// The request without what its tools printed: the key of a loose match.
fn without_tool_output(normalized: &Value) -> Value {
    let mut value = normalized.clone();
    if let Some(messages) = value.get_mut("messages").and_then(Value::as_array_mut) {
        for message in messages {
            if message.get("role").and_then(Value::as_str) == Some("tool")
                && let Some(content) = message.get_mut("content")
            {
                *content = Value::Null;
            }
        }
    }
    value
}

fn key(normalized: &Value) -> String {
    let text = serde_json::to_string(normalized).unwrap_or_default();
    hex::encode(ring::digest::digest(&ring::digest::SHA256, text.as_bytes()))
}

/// Wraps a model and records what it answers.
pub struct Recorder {
    inner: Arc<dyn Model>,
    normalizer: Normalizer,
    file: Arc<Mutex<File>>,
    path: PathBuf,
}

impl Recorder {
    /// Records into `path` (created or truncated; its directory is created).
    pub fn create(inner: Arc<dyn Model>, normalizer: Normalizer, path: &Path) -> std::io::Result<Self> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = File::create(path)?;
        Ok(Recorder {
            inner,
            normalizer,
            file: Arc::new(Mutex::new(file)),
            path: path.to_owned(),
        })
    }
}

impl Model for Recorder {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn stream(&self, request: Request, cancel: CancellationToken) -> EventStream {
        let normalized = self.normalizer.request(&request);
        let key = key(&normalized);
        let file = self.file.clone();
        let path = self.path.clone();
        let mut normalized = Some(normalized);
        Box::pin(self.inner.stream(request, cancel).map(move |event| {
            if let Ok(StreamEvent::Completed(response)) = &event
                && let Some(request) = normalized.take()
            {
                let line = serde_json::to_string(&Exchange {
                    key: key.clone(),
                    request,
                    response: response.clone(),
                })
                .unwrap_or_default();
                let mut file = file.lock().unwrap_or_else(PoisonError::into_inner);
                if let Err(error) = writeln!(file, "{line}").and_then(|()| file.flush()) {
                    tracing::warn!(path = %path.display(), %error, "recording a model exchange failed");
                }
            }
            event
        }))
    }
}

/// Answers from a recording.
pub struct Replayer {
    name: String,
    normalizer: Normalizer,
    exchanges: Vec<Exchange>,
    by_key: HashMap<String, usize>,
    /// By the key of the request without its tool output.
    by_loose_key: HashMap<String, usize>,
    calls: AtomicUsize,
    drift: Mutex<Option<String>>,
    notes: Mutex<Vec<String>>,
}

/// Why a recording could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    #[error("no recording at {}: {source}", path.display())]
    Missing { path: PathBuf, source: std::io::Error },
    #[error("{}:{line}: not a recorded exchange: {source}", path.display())]
    Corrupt {
        path: PathBuf,
        line: usize,
        source: serde_json::Error,
    },
}

impl Replayer {
    /// Reads the recording at `path`; `name` is the model's name (its prices).
    pub fn load(path: &Path, name: &str, normalizer: Normalizer) -> Result<Self, RecordingError> {
        let file = File::open(path).map_err(|source| RecordingError::Missing {
            path: path.to_owned(),
            source,
        })?;
        let mut exchanges = Vec::new();
        for (n, line) in BufReader::new(file).lines().enumerate() {
            let line = line.map_err(|source| RecordingError::Missing {
                path: path.to_owned(),
                source,
            })?;
            if line.trim().is_empty() {
                continue;
            }
            let exchange: Exchange = serde_json::from_str(&line).map_err(|source| RecordingError::Corrupt {
                path: path.to_owned(),
                line: n + 1,
                source,
            })?;
            exchanges.push(exchange);
        }
        let (mut by_key, mut by_loose_key) = (HashMap::new(), HashMap::new());
        for (i, exchange) in exchanges.iter().enumerate() {
            by_key.entry(exchange.key.clone()).or_insert(i);
            by_loose_key
                .entry(key(&without_tool_output(&exchange.request)))
                .or_insert(i);
        }
        Ok(Replayer {
            name: name.to_owned(),
            normalizer,
            exchanges,
            by_key,
            by_loose_key,
            calls: AtomicUsize::new(0),
            drift: Mutex::new(None),
            notes: Mutex::new(Vec::new()),
        })
    }

    /// The first request the recording could not answer, and where it differed.
    pub fn drift(&self) -> Option<String> {
        self.drift.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Requests answered although their tool output differed from the recording's, and where.
    pub fn notes(&self) -> Vec<String> {
        self.notes.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn answer(&self, request: &Request) -> Result<Response, LlmError> {
        let call = self.calls.fetch_add(1, Ordering::Relaxed);
        let normalized = self.normalizer.request(request);
        if let Some(&i) = self.by_key.get(&key(&normalized)) {
            return Ok(self.exchanges[i].response.clone());
        }
        if let Some(&i) = self.by_loose_key.get(&key(&without_tool_output(&normalized))) {
            let recorded = &self.exchanges[i];
            let difference = first_difference(&recorded.request, &normalized, "request")
                .unwrap_or_else(|| "no difference shown".to_owned());
            self.notes.lock().unwrap_or_else(PoisonError::into_inner).push(format!(
                "request {}: tool output differs from the recording: {difference}",
                call + 1
            ));
            return Ok(recorded.response.clone());
        }
        let message = match self.exchanges.get(call).or(self.exchanges.last()) {
            None => "the recording is empty".to_owned(),
            Some(recorded) => {
                let place = if call < self.exchanges.len() {
                    format!("request {} of {}", call + 1, self.exchanges.len())
                } else {
                    format!(
                        "request {} came after the recording's {} (compared with the last)",
                        call + 1,
                        self.exchanges.len()
                    )
                };
                match first_difference(&recorded.request, &normalized, "request") {
                    Some(difference) => format!("{place}: {difference}"),
                    None => format!("{place} differs only in its key"),
                }
            }
        };
        let mut drift = self.drift.lock().unwrap_or_else(PoisonError::into_inner);
        drift.get_or_insert_with(|| message.clone());
        Err(LlmError::NotRecorded { message })
    }
}

impl Model for Replayer {
    fn name(&self) -> &str {
        &self.name
    }

    fn stream(&self, request: Request, _cancel: CancellationToken) -> EventStream {
        let event = self.answer(&request).map(StreamEvent::Completed);
        Box::pin(futures_util::stream::once(async move { event }))
    }
}

/// Where `now` first differs from `recorded`: its JSON path and both sides around the place.
fn first_difference(recorded: &Value, now: &Value, path: &str) -> Option<String> {
    match (recorded, now) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| match (a.get(k), b.get(k)) {
                (Some(x), Some(y)) => first_difference(x, y, &format!("{path}.{k}")),
                (Some(_), None) => Some(format!("{path}.{k} was recorded and is gone")),
                (None, Some(_)) => Some(format!("{path}.{k} is new")),
                (None, None) => None,
            })
        }
        (Value::Array(a), Value::Array(b)) => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (x, y))| first_difference(x, y, &format!("{path}[{i}]")))
            .or_else(|| (a.len() != b.len()).then(|| format!("{path} had {} items and has {} now", a.len(), b.len()))),
        (Value::String(a), Value::String(b)) if a != b => {
            let at = a
                .char_indices()
                .zip(b.chars())
                .find(|((_, x), y)| x != y)
                .map_or(a.len().min(b.len()), |((i, _), _)| i);
            let at = floor_char(a, at.min(b.len())).min(floor_char(b, at.min(b.len())));
            let from = floor_char(a, at.saturating_sub(40));
            let around = |s: &str| {
                let from = floor_char(s, from);
                let to = floor_char(s, (at + 60).min(s.len()));
                s[from..to].to_owned()
            };
            Some(format!(
                "{path} differs at byte {at}: recorded {:?}, now {:?}",
                around(a),
                around(b)
            ))
        }
        (a, b) if a != b => Some(format!("{path}: recorded {a}, now {b}")),
        _ => None,
    }
}

fn floor_char(s: &str, mut at: usize) -> usize {
    at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::llm::{AssistantPart, Message, StopReason, ToolSpec, Usage};

    struct Echo;

    impl Model for Echo {
        fn name(&self) -> &str {
            "echo"
        }

        fn stream(&self, request: Request, _: CancellationToken) -> EventStream {
            let text = format!("{} messages", request.messages.len());
            let response = Response {
                id: None,
                model: None,
                parts: vec![AssistantPart::Text { text }],
                stop_reason: StopReason::EndTurn,
                usage: Usage {
                    input_tokens: 10,
                    output_tokens: 2,
                    ..Usage::default()
                },
            };
            Box::pin(futures_util::stream::once(async move {
                Ok(StreamEvent::Completed(response))
            }))
        }
    }

    fn request(root: &str, tool_output: &str, system: &str) -> Request {
        Request {
            system: format!("{system} Work in {root}."),
            messages: vec![
                Message::user("fix it"),
                Message::tool_result(
                    "call_1",
                    format!("{root}/src/a.py: 3 passed in 0.{tool_output}s"),
                    false,
                ),
            ],
            tools: vec![ToolSpec {
                name: "grep".into(),
                description: "search".into(),
                parameters: serde_json::json!({"type": "object"}),
            }],
            max_output_tokens: None,
            temperature: None,
        }
    }

    #[tokio::test]
    async fn a_recording_answers_the_same_requests_in_another_place_and_refuses_a_changed_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec/case.0.jsonl");
        let recorder = Recorder::create(
            Arc::new(Echo),
            Normalizer::new(&["/tmp/first-copy"], Path::new("/out/runs/a")),
            &path,
        )
        .unwrap();
        let recorded = recorder
            .complete(
                request("/tmp/first-copy", "03", "You are careful."),
                CancellationToken::new(),
            )
            .await
            .unwrap();

        // Another working copy, another timing: the same request.
        let replayer = Replayer::load(
            &path,
            "gpt-4o",
            Normalizer::new(&["/tmp/second-copy"], Path::new("/out/runs/b")),
        )
        .unwrap();
        let again = replayer
            .complete(
                request("/tmp/second-copy", "71", "You are careful."),
                CancellationToken::new(),
            )
            .await
            .unwrap();
        assert_eq!(again, recorded);
        assert_eq!(replayer.name(), "gpt-4o");
        assert_eq!(replayer.drift(), None);

        // A changed system prompt is refused, and the report says where.
        let err = replayer
            .complete(
                request("/tmp/second-copy", "71", "You are bold."),
                CancellationToken::new(),
            )
            .await
            .unwrap_err();
        let expected = "request 2 came after the recording's 1 (compared with the last): request.system differs \
                        at byte 8: recorded \"You are careful. Work in <root>.\", now \"You are bold. Work \
                        in <root>.\"";
        assert_eq!(
            err,
            LlmError::NotRecorded {
                message: expected.to_owned()
            }
        );
        assert!(!err.is_retryable());
        assert_eq!(replayer.drift().as_deref(), Some(expected));
    }

    #[tokio::test]
    async fn tool_output_that_differs_is_answered_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("case.0.jsonl");
        let normalizer = Normalizer::new(&["/w"], Path::new("/run"));
        let recorder = Recorder::create(Arc::new(Echo), normalizer.clone(), &path).unwrap();
        let recorded = recorder
            .complete(request("/w", "1", "S."), CancellationToken::new())
            .await
            .unwrap();
        let replayer = Replayer::load(&path, "gpt-4o", normalizer).unwrap();
        let mut changed = request("/w", "1", "S.");
        changed.messages[1] = Message::tool_result("call_1", "========= 3 passed =========", false);
        let again = replayer.complete(changed, CancellationToken::new()).await.unwrap();
        assert_eq!(again, recorded);
        assert_eq!(replayer.drift(), None);
        assert_eq!(
            replayer.notes(),
            [
                "request 1: tool output differs from the recording: request.messages[1].content differs at byte 0: \
              recorded \"<root>/src/a.py: 0 passed in 0.0s\", now \"========= 0 passed =========\""
            ]
        );
    }

    #[test]
    fn a_recording_that_is_not_one_is_refused_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("case.0.jsonl");
        std::fs::write(&path, "\n{\"key\": \"k\"}\n").unwrap();
        let err = Replayer::load(&path, "m", Normalizer::default())
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.starts_with(&format!("{}:2: not a recorded exchange: ", path.display())),
            "{err}"
        );
        let missing = Replayer::load(&dir.path().join("none.jsonl"), "m", Normalizer::default())
            .err()
            .unwrap()
            .to_string();
        assert!(missing.starts_with("no recording at "), "{missing}");
    }

    #[test]
    fn differences_name_their_place() {
        let a = serde_json::json!({"messages": [{"role": "user", "text": "a"}], "tools": [1, 2]});
        let b = serde_json::json!({"messages": [{"role": "user", "text": "a"}], "tools": [1, 2, 3]});
        assert_eq!(
            first_difference(&a, &b, "request").unwrap(),
            "request.tools had 2 items and has 3 now"
        );
        let c = serde_json::json!({"messages": [{"role": "user", "text": "é b"}]});
        let d = serde_json::json!({"messages": [{"role": "user", "text": "é c"}]});
        assert_eq!(
            first_difference(&c, &d, "request").unwrap(),
            "request.messages[0].text differs at byte 3: recorded \"é b\", now \"é c\""
        );
    }
}
