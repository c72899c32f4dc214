//! The scripted model server at the wire level: script parsing, both protocols' streams and
//! bodies, faults, recording, exhaustion, cut streams and shutdown, seen by a plain HTTP client.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use pitcrew_tests::scripted_model::{Reply, Script, ScriptedModel, Turn};
use serde_json::{Value, json};

/// One SSE frame: its `event:` name, if any, and its `data:` text.
#[derive(Debug)]
struct Frame {
    event: Option<String>,
    data: String,
}

impl Frame {
    fn json(&self) -> Result<Value> {
        serde_json::from_str(&self.data).with_context(|| format!("frame data is not JSON: {}", self.data))
    }
}

fn parse_frames(body: &str) -> Vec<Frame> {
    body.split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let mut frame = Frame {
                event: None,
                data: String::new(),
            };
            for line in block.lines() {
                if let Some(event) = line.strip_prefix("event: ") {
                    frame.event = Some(event.to_owned());
                } else if let Some(data) = line.strip_prefix("data: ") {
                    frame.data.push_str(data);
                }
            }
            frame
        })
        .collect()
}

async fn post(url: String, body: &Value) -> Result<reqwest::Response> {
    post_raw(url, body.to_string()).await
}

async fn post_raw(url: String, body: String) -> Result<reqwest::Response> {
    let response = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("x-api-key", "sk-test")
        .body(body)
        .send()
        .await?;
    Ok(response)
}

async fn json_body(response: reqwest::Response) -> Result<Value> {
    let text = response.text().await?;
    serde_json::from_str(&text).with_context(|| format!("body is not JSON: {text}"))
}

fn header(response: &reqwest::Response, name: &str) -> Option<String> {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

fn openai_request(stream: bool, include_usage: bool) -> Value {
    let mut body = json!({
        "model": "gpt-4.1-mini",
        "messages": [{"role": "user", "content": "find foo"}],
        "stream": stream,
    });
    if include_usage {
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

fn anthropic_request(stream: bool) -> Value {
    json!({
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": "find foo"}],
        "stream": stream,
    })
}

fn tool_reply() -> Reply {
    Reply::text("I will search the code now.")
        .tool_call("grep", json!({"pattern": "foo", "path": "src"}))
        .tool_call_raw("read_file", "{not json")
        .usage(1200, 40)
        .cache(1000, 200)
}

#[test]
fn script_json_matches_the_builder() -> Result<()> {
    let parsed = Script::from_json(
        r#"{"turns": [
            {"reply": {
                "content": [
                    {"thinking": {"text": "hmm", "signature": "sig"}},
                    {"text": "Looking."},
                    {"tool_call": {"name": "grep", "arguments": {"pattern": "foo"}}},
                    {"tool_call_raw": {"name": "grep", "arguments": "{not json"}}
                ],
                "usage": {"input": 100, "output": 20, "cache_read": 80, "cache_write": 5},
                "stop": "max_tokens",
                "chunk_delay_ms": 15
            }},
            {"rate_limited": {"retry_after_secs": 2}},
            {"rate_limited": {}},
            {"overloaded": {}},
            {"server_error": {"status": 502}},
            {"context_length_exceeded": {}},
            {"unauthorized": {}},
            {"insufficient_quota": {}},
            {"cut_stream": {"after_events": 3, "reply": {"content": [{"text": "part"}]}}},
            {"cut_stream": {"after_events": 3, "reply": {}, "abort": true}},
            {"stream_error": {"after_events": 2, "reply": {"content": [{"text": "x"}]}}},
            {"raw": {"status": 502, "body": "<html>"}},
            {"reply": {"content": [{"text": "done"}]}}
        ]}"#,
    )?;
    let built = Script::new()
        .turn(
            Reply::new()
                .thinking("hmm", "sig")
                .then_text("Looking.")
                .tool_call("grep", json!({"pattern": "foo"}))
                .tool_call_raw("grep", "{not json")
                .usage(100, 20)
                .cache(80, 5)
                .stop("max_tokens")
                .chunk_delay(Duration::from_millis(15)),
        )
        .turn(Turn::rate_limited_retry_after(2))
        .turn(Turn::rate_limited())
        .turn(Turn::overloaded())
        .turn(Turn::server_error(502))
        .turn(Turn::context_length_exceeded())
        .turn(Turn::unauthorized())
        .turn(Turn::insufficient_quota())
        .turn(Turn::cut_stream(3, Reply::text("part")))
        .turn(Turn::abort_stream(3, Reply::new()))
        .turn(Turn::stream_error(2, Reply::text("x")))
        .turn(Turn::raw(502, "<html>"))
        .turn(Reply::text("done"));
    assert_eq!(parsed, built);
    assert_eq!(Script::from_json(&built.to_json())?, built);
    Ok(())
}

#[test]
fn script_json_rejects_unknown_fields_and_kinds() {
    let cases = [
        (r#"{"turns": [], "extra": 1}"#, "extra"),
        (r#"{"turns": [{"reply": {"txt": "x"}}]}"#, "txt"),
        (r#"{"turns": [{"reply": {"usage": {"inputs": 1}}}]}"#, "inputs"),
        (r#"{"turns": [{"rate_limited": {"retry_after": 2}}]}"#, "retry_after"),
        (
            r#"{"turns": [{"reply": {"content": [{"tool_call": {"name": "x", "args": {}}}]}}]}"#,
            "args",
        ),
        (r#"{"turns": [{"explode": {}}]}"#, "explode"),
        (r#"{"turns": [{"reply": {"content": [{"image": "x"}]}}]}"#, "image"),
    ];
    for (json, field) in cases {
        match Script::from_json(json) {
            Ok(script) => panic!("{json} was accepted as {script:?}"),
            Err(error) => assert!(error.to_string().contains(field), "{json}: {error}"),
        }
    }
}

#[tokio::test]
async fn openai_stream_reassembles_text_and_tool_calls() -> Result<()> {
    let model = ScriptedModel::start(Script::new().turn(tool_reply()).turn(tool_reply()));
    let url = format!("{}/chat/completions", model.openai_base_url());

    let response = post(url.clone(), &openai_request(true, true)).await?;
    assert_eq!(response.status(), 200);
    let content_type = header(&response, "content-type").unwrap_or_default();
    assert!(content_type.starts_with("text/event-stream"), "{content_type}");
    assert!(header(&response, "x-request-id").is_some_and(|id| id.starts_with("req_")));
    let body = response.text().await?;
    let frames = parse_frames(&body);
    assert_eq!(frames.last().map(|f| f.data.as_str()), Some("[DONE]"));
    let chunks = frames[..frames.len() - 1]
        .iter()
        .map(Frame::json)
        .collect::<Result<Vec<_>>>()?;

    for chunk in &chunks {
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert_eq!(chunk["model"], "gpt-4.1-mini");
        assert_eq!(chunk["id"], chunks[0]["id"]);
    }
    assert!(chunks[0]["id"].as_str().is_some_and(|id| id.starts_with("chatcmpl-")));
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");

    let deltas: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c["choices"].get(0))
        .map(|choice| &choice["delta"])
        .collect();
    let text_pieces: Vec<&str> = deltas.iter().filter_map(|d| d["content"].as_str()).collect();
    assert!(text_pieces.len() > 3, "text comes in several deltas: {text_pieces:?}");
    assert_eq!(text_pieces.concat(), "I will search the code now.");

    // Reassemble tool calls the way a client must: by index.
    let mut calls: Vec<(String, String, String, usize)> = Vec::new();
    for fragment in deltas.iter().filter_map(|d| d["tool_calls"].as_array()).flatten() {
        let index = fragment["index"].as_u64().context("index")? as usize;
        if let Some(id) = fragment["id"].as_str() {
            assert_eq!(index, calls.len());
            assert_eq!(fragment["type"], "function");
            assert_eq!(fragment["function"]["arguments"], "");
            let name = fragment["function"]["name"].as_str().context("name")?;
            calls.push((id.to_owned(), name.to_owned(), String::new(), 0));
        } else {
            let call = calls.get_mut(index).context("fragment before its call")?;
            call.2
                .push_str(fragment["function"]["arguments"].as_str().context("arguments")?);
            call.3 += 1;
        }
    }
    assert_eq!(calls.len(), 2);
    assert!(calls.iter().all(|c| c.0.starts_with("call_")));
    assert_eq!(calls[0].1, "grep");
    let arguments: Value = serde_json::from_str(&calls[0].2)?;
    assert_eq!(arguments, json!({"pattern": "foo", "path": "src"}));
    assert!(calls[0].3 > 1, "arguments come in several fragments");
    assert_eq!((calls[1].1.as_str(), calls[1].2.as_str()), ("read_file", "{not json"));

    let finish = &chunks[chunks.len() - 2];
    assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(finish["choices"][0]["delta"], json!({}));
    let usage_chunk = &chunks[chunks.len() - 1];
    assert_eq!(usage_chunk["choices"], json!([]));
    assert_eq!(usage_chunk["usage"]["prompt_tokens"], 1200);
    assert_eq!(usage_chunk["usage"]["completion_tokens"], 40);
    assert_eq!(usage_chunk["usage"]["total_tokens"], 1240);
    assert_eq!(usage_chunk["usage"]["prompt_tokens_details"]["cached_tokens"], 1000);

    // Without stream_options.include_usage there is no usage chunk at all.
    let body = post(url, &openai_request(true, false)).await?.text().await?;
    let frames = parse_frames(&body);
    assert!(!body.contains("\"usage\""), "{body}");
    assert_eq!(frames.last().map(|f| f.data.as_str()), Some("[DONE]"));
    let finish = frames[frames.len() - 2].json()?;
    assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
    model.assert_script_consumed();
    Ok(())
}

#[tokio::test]
async fn openai_completion_without_stream_and_without_v1() -> Result<()> {
    let model = ScriptedModel::start(
        Script::new()
            .turn(tool_reply().stop("length"))
            .turn(Reply::text("done").usage(10, 2)),
    );

    // A base URL without /v1.
    let url = format!("{}/chat/completions", model.base_url());
    let body = json_body(post(url.clone(), &openai_request(false, false)).await?).await?;
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], "gpt-4.1-mini");
    let choice = &body["choices"][0];
    assert_eq!(choice["finish_reason"], "length");
    assert_eq!(choice["message"]["content"], "I will search the code now.");
    let calls = choice["message"]["tool_calls"].as_array().context("tool_calls")?;
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["type"], "function");
    assert_eq!(calls[0]["function"]["name"], "grep");
    let arguments: Value = serde_json::from_str(calls[0]["function"]["arguments"].as_str().context("arguments")?)?;
    assert_eq!(arguments, json!({"pattern": "foo", "path": "src"}));
    assert_eq!(calls[1]["function"]["arguments"], "{not json");
    assert_eq!(body["usage"]["prompt_tokens_details"]["cached_tokens"], 1000);

    let body = json_body(post(url, &openai_request(false, false)).await?).await?;
    assert_eq!(body["choices"][0]["message"]["content"], "done");
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
    assert!(body["choices"][0]["message"].get("tool_calls").is_none());
    assert_eq!(body["usage"]["total_tokens"], 12);
    Ok(())
}

#[tokio::test]
async fn anthropic_stream_events_come_in_protocol_order() -> Result<()> {
    let reply = Reply::new()
        .thinking("The user wants foo found.", "EqQBCkYIARgC")
        .then_text("Searching.")
        .tool_call("grep", json!({"pattern": "foo"}))
        .usage(656, 74)
        .cache(6289, 3337);
    let model = ScriptedModel::start(Script::new().turn(reply));
    let url = format!("{}/v1/messages", model.anthropic_base_url());
    let response = post(url, &anthropic_request(true)).await?;
    assert_eq!(response.status(), 200);
    assert!(header(&response, "request-id").is_some_and(|id| id.starts_with("req_011C")));
    let frames = parse_frames(&response.text().await?);

    // Every frame's event name is its data's type.
    let mut events = Vec::new();
    for frame in &frames {
        let data = frame.json()?;
        assert_eq!(Some(data["type"].as_str().unwrap_or_default()), frame.event.as_deref());
        let delta_type = data["delta"]["type"].as_str();
        let block_type = data["content_block"]["type"].as_str();
        let name = match (frame.event.as_deref(), delta_type, block_type) {
            (Some("content_block_delta"), Some(delta), _) => delta.to_owned(),
            (Some("content_block_start"), _, Some(block)) => format!("start {block}"),
            (Some(event), _, _) => event.to_owned(),
            (None, _, _) => anyhow::bail!("frame without event: {frame:?}"),
        };
        // Collapse runs of deltas.
        if events.last() != Some(&name) {
            events.push(name);
        }
    }
    assert_eq!(
        events,
        [
            "message_start",
            "start thinking",
            "ping",
            "thinking_delta",
            "signature_delta",
            "content_block_stop",
            "start text",
            "text_delta",
            "content_block_stop",
            "start tool_use",
            "input_json_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );

    let data: Vec<Value> = frames.iter().map(Frame::json).collect::<Result<_>>()?;
    let start = &data[0]["message"];
    assert!(start["id"].as_str().is_some_and(|id| id.starts_with("msg_01")));
    assert_eq!(start["model"], "claude-sonnet-4-5");
    assert_eq!(start["usage"]["input_tokens"], 656);
    assert_eq!(start["usage"]["cache_read_input_tokens"], 6289);
    assert_eq!(start["usage"]["cache_creation_input_tokens"], 3337);
    assert_eq!(start["usage"]["output_tokens"], 1);

    let collect = |index: u64, field: &str| -> String {
        data.iter()
            .filter(|d| d["type"] == "content_block_delta" && d["index"] == index)
            .filter_map(|d| d["delta"][field].as_str())
            .collect()
    };
    assert_eq!(collect(0, "thinking"), "The user wants foo found.");
    assert_eq!(collect(0, "signature"), "EqQBCkYIARgC");
    assert_eq!(collect(1, "text"), "Searching.");
    let input: Value = serde_json::from_str(&collect(2, "partial_json"))?;
    assert_eq!(input, json!({"pattern": "foo"}));
    let tool_start = data
        .iter()
        .find(|d| d["content_block"]["type"] == "tool_use")
        .context("tool_use start")?;
    assert_eq!(tool_start["content_block"]["input"], json!({}));
    assert_eq!(tool_start["content_block"]["name"], "grep");
    assert!(
        tool_start["content_block"]["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("toolu_01"))
    );

    let message_delta = &data[data.len() - 2];
    assert_eq!(message_delta["delta"]["stop_reason"], "tool_use");
    assert_eq!(message_delta["usage"]["output_tokens"], 74);
    Ok(())
}

#[tokio::test]
async fn anthropic_message_without_stream() -> Result<()> {
    let model = ScriptedModel::start(Script::new().turn(tool_reply().stop("length")));
    let url = format!("{}/v1/messages", model.anthropic_base_url());
    let body = json_body(post(url, &anthropic_request(false)).await?).await?;
    assert_eq!(body["type"], "message");
    assert_eq!(body["role"], "assistant");
    assert_eq!(body["stop_reason"], "max_tokens");
    let content = body["content"].as_array().context("content")?;
    assert_eq!(
        content[0],
        json!({"type": "text", "text": "I will search the code now."})
    );
    assert_eq!(content[1]["type"], "tool_use");
    assert_eq!(content[1]["input"], json!({"pattern": "foo", "path": "src"}));
    // Text that is not JSON can only travel as a string.
    assert_eq!(content[2]["input"], "{not json");
    assert_eq!(body["usage"]["input_tokens"], 1200);
    assert_eq!(body["usage"]["output_tokens"], 40);
    assert_eq!(body["usage"]["cache_read_input_tokens"], 1000);
    assert_eq!(body["usage"]["cache_creation_input_tokens"], 200);
    Ok(())
}

/// The keys of a JSON object, sorted.
fn keys(value: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = value
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    keys.sort_unstable();
    keys
}

#[tokio::test]
async fn openai_faults_have_the_live_status_headers_and_bodies() -> Result<()> {
    let model = ScriptedModel::start(
        Script::new()
            .turn(Turn::RateLimited {
                retry_after_secs: Some(2),
                retry_after_ms: Some(1500),
            })
            .turn(Turn::overloaded())
            .turn(Turn::context_length_exceeded())
            .turn(Turn::unauthorized())
            .turn(Turn::server_error(502))
            .turn(Turn::insufficient_quota()),
    );
    let url = format!("{}/chat/completions", model.openai_base_url());
    let mut answers = Vec::new();
    for _ in 0..6 {
        let response = post(url.clone(), &openai_request(true, true)).await?;
        let status = response.status().as_u16();
        let retry = (header(&response, "retry-after"), header(&response, "retry-after-ms"));
        assert!(header(&response, "x-request-id").is_some());
        let body = json_body(response).await?;
        assert_eq!(keys(&body), ["error"]);
        assert_eq!(keys(&body["error"]), ["code", "message", "param", "type"]);
        answers.push((status, retry, body["error"].clone()));
    }
    assert_eq!(answers[0].0, 429);
    assert_eq!(answers[0].1, (Some("2".to_owned()), Some("1500".to_owned())));
    assert_eq!(answers[0].2["code"], "rate_limit_exceeded");
    assert_eq!(answers[1].0, 503);
    assert_eq!(answers[1].2["type"], "server_error");
    assert_eq!(answers[2].0, 400);
    assert_eq!(answers[2].2["code"], "context_length_exceeded");
    assert_eq!(answers[2].2["param"], "messages");
    let message = answers[2].2["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(
            "This model's maximum context length is 200000 tokens. However, your messages resulted in 210000 tokens."
        ),
        "{message}"
    );
    assert_eq!(answers[3].0, 401);
    assert_eq!(answers[3].2["code"], "invalid_api_key");
    assert_eq!(answers[4].0, 502);
    assert_eq!(answers[4].2["type"], "server_error");
    assert_eq!(answers[5].0, 429);
    assert_eq!(answers[5].2["code"], "insufficient_quota");
    Ok(())
}

#[tokio::test]
async fn anthropic_faults_have_the_live_status_headers_and_bodies() -> Result<()> {
    let model = ScriptedModel::start(
        Script::new()
            .turn(Turn::rate_limited_retry_after(7))
            .turn(Turn::overloaded())
            .turn(Turn::context_length_exceeded())
            .turn(Turn::unauthorized())
            .turn(Turn::server_error(500)),
    );
    let url = format!("{}/v1/messages", model.anthropic_base_url());
    let mut answers = Vec::new();
    for _ in 0..5 {
        let response = post(url.clone(), &anthropic_request(true)).await?;
        let status = response.status().as_u16();
        let retry_after = header(&response, "retry-after");
        let should_retry = header(&response, "x-should-retry");
        let request_id = header(&response, "request-id").context("request-id")?;
        let body = json_body(response).await?;
        assert_eq!(keys(&body), ["error", "request_id", "type"]);
        assert_eq!(body["type"], "error");
        assert_eq!(body["request_id"], request_id.as_str());
        assert_eq!(keys(&body["error"]), ["message", "type"]);
        answers.push((status, retry_after, should_retry, body["error"].clone()));
    }
    assert_eq!(answers[0].0, 429);
    assert_eq!(answers[0].1.as_deref(), Some("7"));
    assert_eq!(answers[0].2.as_deref(), Some("true"));
    assert_eq!(answers[0].3["type"], "rate_limit_error");
    assert_eq!(answers[1].0, 529);
    assert_eq!(
        answers[1].3,
        json!({"type": "overloaded_error", "message": "Overloaded"})
    );
    assert_eq!(answers[2].0, 400);
    assert_eq!(
        answers[2].3,
        json!({"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"})
    );
    assert_eq!(answers[2].2, None);
    assert_eq!(answers[3].0, 401);
    assert_eq!(answers[3].3["type"], "authentication_error");
    assert_eq!(answers[4].0, 500);
    assert_eq!(answers[4].3["type"], "api_error");
    Ok(())
}

#[tokio::test]
async fn raw_turn_is_sent_as_scripted() -> Result<()> {
    let model = ScriptedModel::start(Script::new().turn(Turn::Raw {
        status: 502,
        headers: vec![("Content-Type".to_owned(), "text/html".to_owned())],
        body: "<html>Bad gateway</html>".to_owned(),
    }));
    let response = post(format!("{}/v1/messages", model.base_url()), &anthropic_request(false)).await?;
    assert_eq!(response.status(), 502);
    assert_eq!(header(&response, "content-type").as_deref(), Some("text/html"));
    assert_eq!(response.text().await?, "<html>Bad gateway</html>");
    Ok(())
}

#[tokio::test]
async fn an_exhausted_script_answers_500_and_still_records() -> Result<()> {
    let model = ScriptedModel::start(Script::new().turn(Reply::text("only")));
    let url = format!("{}/chat/completions", model.openai_base_url());
    assert_eq!(post(url.clone(), &openai_request(false, false)).await?.status(), 200);
    let response = post(url, &openai_request(false, false)).await?;
    assert_eq!(response.status(), 500);
    let body = json_body(response).await?;
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("scripted model: script exhausted"), "{message}");

    let response = post(format!("{}/v1/messages", model.base_url()), &anthropic_request(true)).await?;
    assert_eq!(response.status(), 500);
    assert_eq!(header(&response, "x-should-retry").as_deref(), Some("false"));
    let body = json_body(response).await?;
    assert_eq!(body["error"]["type"], "api_error");

    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        requests.iter().map(|r| r.turn).collect::<Vec<_>>(),
        [Some(0), None, None]
    );
    model.assert_script_consumed();
    Ok(())
}

#[tokio::test]
async fn requests_are_recorded_and_bad_json_consumes_no_turn() -> Result<()> {
    let model = ScriptedModel::start(Script::new().turn(Reply::text("a")).turn(Reply::text("b")));
    let before = Instant::now();
    let body = anthropic_request(false);
    let response = reqwest::Client::new()
        .post(format!("{}/v1/messages?beta=true", model.base_url()))
        .header("content-type", "application/json")
        .header("Anthropic-Version", "2023-06-01")
        .body(body.to_string())
        .send()
        .await?;
    assert_eq!(response.status(), 200);

    let response = post_raw(format!("{}/v1/messages", model.base_url()), "{oops".to_owned()).await?;
    assert_eq!(response.status(), 400);
    let error = json_body(response).await?;
    assert_eq!(error["type"], "error");
    assert_eq!(error["error"]["type"], "invalid_request_error");
    assert_eq!(model.remaining_turns(), 1);

    let response = post_raw(format!("{}/chat/completions", model.base_url()), "not json".to_owned()).await?;
    assert_eq!(response.status(), 400);
    assert_eq!(json_body(response).await?["error"]["type"], "invalid_request_error");

    let response = post(format!("{}/v1/embeddings", model.base_url()), &json!({})).await?;
    assert_eq!(response.status(), 404);
    assert!(response.text().await?.contains("no route for POST /v1/embeddings"));

    assert_eq!(model.remaining_turns(), 1);
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    let first = &requests[0];
    assert_eq!(first.method, "POST");
    assert_eq!(first.path, "/v1/messages");
    assert_eq!(first.query.as_deref(), Some("beta=true"));
    assert_eq!(first.header("anthropic-version"), Some("2023-06-01"));
    assert!(first.headers.iter().any(|(name, _)| name == "anthropic-version"));
    assert_eq!(first.body, body);
    assert_eq!(first.raw_body, body.to_string());
    assert!(!first.is_stream());
    assert_eq!(first.turn, Some(0));
    assert!(first.received_at >= before);
    assert!(requests.windows(2).all(|w| w[0].received_at <= w[1].received_at));

    assert_eq!(requests[1].body, Value::Null);
    assert_eq!(requests[1].raw_body, "{oops");
    assert_eq!(requests[1].turn, None);
    assert_eq!(requests[3].path, "/v1/embeddings");
    assert_eq!(model.last_request().map(|r| r.path), Some("/v1/embeddings".to_owned()));
    Ok(())
}

#[tokio::test]
async fn pushed_turns_are_played_after_the_script() -> Result<()> {
    let model = ScriptedModel::start(Script::new());
    model.push(Reply::text("pushed"));
    assert_eq!(model.remaining_turns(), 1);
    let url = format!("{}/v1/messages", model.base_url());
    let body = json_body(post(url, &anthropic_request(false)).await?).await?;
    assert_eq!(body["content"][0]["text"], "pushed");
    model.assert_script_consumed();
    Ok(())
}

#[test]
#[should_panic(expected = "scripted model: 2 turn(s) left unplayed")]
fn assert_script_consumed_lists_what_is_left() {
    let model = ScriptedModel::start(Script::new().turn(Reply::text("left")).turn(Turn::overloaded()));
    model.assert_script_consumed();
}

#[tokio::test]
async fn cut_streams_end_without_their_terminal_event() -> Result<()> {
    let model = ScriptedModel::start(
        Script::new()
            .turn(Turn::cut_stream(3, tool_reply()))
            .turn(Turn::cut_stream(4, tool_reply()))
            .turn(Turn::cut_stream(1000, Reply::text("hi"))),
    );
    let openai = format!("{}/chat/completions", model.openai_base_url());
    let anthropic = format!("{}/v1/messages", model.base_url());

    let body = post(openai, &openai_request(true, true)).await?.text().await?;
    let frames = parse_frames(&body);
    assert_eq!(frames.len(), 3);
    assert!(!body.contains("[DONE]"));

    let body = post(anthropic.clone(), &anthropic_request(true)).await?.text().await?;
    let events: Vec<_> = parse_frames(&body).into_iter().filter_map(|f| f.event).collect();
    assert_eq!(
        events,
        ["message_start", "content_block_start", "ping", "content_block_delta"]
    );

    // However late the cut, the terminal event is never sent.
    let body = post(anthropic, &anthropic_request(true)).await?.text().await?;
    let events: Vec<_> = parse_frames(&body).into_iter().filter_map(|f| f.event).collect();
    assert_eq!(events.last().map(String::as_str), Some("message_delta"));
    Ok(())
}

#[tokio::test]
async fn aborted_streams_fail_the_read_after_the_scripted_events() -> Result<()> {
    let model = ScriptedModel::start(
        Script::new()
            .turn(Turn::abort_stream(2, tool_reply()))
            .turn(Turn::abort_stream(2, tool_reply())),
    );
    let mut response = post(
        format!("{}/chat/completions", model.base_url()),
        &openai_request(true, false),
    )
    .await?;
    let mut received = String::new();
    let failure = loop {
        match response.chunk().await {
            Ok(Some(chunk)) => received.push_str(&String::from_utf8_lossy(&chunk)),
            Ok(None) => anyhow::bail!("the body ended cleanly: {received}"),
            Err(error) => break error,
        }
    };
    // reqwest reports the missing end of the chunked body as a decode or body error.
    assert!(failure.is_decode() || failure.is_body(), "{failure:?}");
    assert_eq!(parse_frames(&received).len(), 2);

    // Non-streaming: half a JSON body, then the connection drops.
    let response = post(
        format!("{}/chat/completions", model.base_url()),
        &openai_request(false, false),
    )
    .await?;
    assert_eq!(response.status(), 200);
    assert!(response.text().await.is_err());
    Ok(())
}

#[tokio::test]
async fn stream_errors_follow_the_scripted_events() -> Result<()> {
    let model = ScriptedModel::start(
        Script::new()
            .turn(Turn::stream_error(2, Reply::text("doomed answer")))
            .turn(Turn::stream_error(2, Reply::text("doomed answer")))
            .turn(Turn::stream_error(2, Reply::text("doomed answer"))),
    );
    let anthropic = format!("{}/v1/messages", model.base_url());
    let body = post(anthropic.clone(), &anthropic_request(true)).await?.text().await?;
    let frames_seen = parse_frames(&body);
    let events: Vec<_> = frames_seen.iter().filter_map(|f| f.event.as_deref()).collect();
    assert_eq!(events, ["message_start", "content_block_start", "error"]);
    assert_eq!(
        frames_seen[2].json()?,
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    );

    let body = post(
        format!("{}/chat/completions", model.base_url()),
        &openai_request(true, true),
    )
    .await?
    .text()
    .await?;
    let frames_seen = parse_frames(&body);
    assert_eq!(frames_seen.len(), 3);
    let error = frames_seen[2].json()?;
    assert_eq!(error["error"]["type"], "server_error");
    assert!(!body.contains("[DONE]"));

    // A request that did not ask for a stream gets the same error as an HTTP status.
    let response = post(anthropic, &anthropic_request(false)).await?;
    assert_eq!(response.status(), 529);
    Ok(())
}

#[tokio::test]
async fn chunk_delay_paces_the_stream() -> Result<()> {
    let delay = Duration::from_millis(10);
    let model = ScriptedModel::start(Script::new().turn(Reply::text("a b c").chunk_delay(delay)));
    let started = Instant::now();
    let body = post(format!("{}/v1/messages", model.base_url()), &anthropic_request(true))
        .await?
        .text()
        .await?;
    let frames = parse_frames(&body).len();
    ensure!(frames == 9, "unexpected frames: {body}");
    let elapsed = started.elapsed();
    assert!(elapsed >= delay * 8, "{elapsed:?}");
    Ok(())
}

#[tokio::test]
async fn dropping_the_server_does_not_wait_for_a_stalled_stream() -> Result<()> {
    let model =
        ScriptedModel::start(Script::new().turn(Reply::text("slow answer").chunk_delay(Duration::from_secs(60))));
    let mut response = post(format!("{}/v1/messages", model.base_url()), &anthropic_request(true)).await?;
    assert!(response.chunk().await?.is_some());
    let started = Instant::now();
    drop(model);
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    // The stream is gone with the server.
    let rest = async {
        while response.chunk().await?.is_some() {}
        Ok::<_, reqwest::Error>(())
    };
    assert!(rest.await.is_err());
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn serves_tests_on_paused_time() -> Result<()> {
    let model = ScriptedModel::start(Script::new().turn(Reply::text("done").chunk_delay(Duration::from_millis(5))));
    let body = post(
        format!("{}/chat/completions", model.openai_base_url()),
        &openai_request(true, false),
    )
    .await?
    .text()
    .await?;
    assert!(body.ends_with("data: [DONE]\n\n"), "{body}");
    model.assert_script_consumed();
    Ok(())
}

/// A blocking HTTP/1.1 exchange over a bare socket: what the wire really carries.
fn raw_http(model: &ScriptedModel, body: &Value) -> Result<String> {
    let mut socket = std::net::TcpStream::connect(model.addr())?;
    socket.set_read_timeout(Some(Duration::from_secs(10)))?;
    let body = body.to_string();
    write!(
        socket,
        "POST /v1/messages HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        model.addr(),
        body.len()
    )?;
    let mut received = Vec::new();
    // An aborted connection may end with a reset rather than EOF; what arrived is what counts.
    let _ = socket.read_to_end(&mut received);
    Ok(String::from_utf8_lossy(&received).into_owned())
}

#[test]
fn sync_callers_see_a_clean_chunked_end_only_on_complete_streams() -> Result<()> {
    let model = ScriptedModel::start(
        Script::new()
            .turn(Reply::text("whole"))
            .turn(Turn::cut_stream(2, Reply::text("cut")))
            .turn(Turn::abort_stream(2, Reply::text("aborted"))),
    );
    let complete = raw_http(&model, &anthropic_request(true))?;
    assert!(complete.starts_with("HTTP/1.1 200 OK\r\n"), "{complete}");
    assert!(complete.contains("transfer-encoding: chunked\r\n"), "{complete}");
    assert!(complete.contains("event: message_stop"));
    assert!(complete.ends_with("0\r\n\r\n"));

    let cut = raw_http(&model, &anthropic_request(true))?;
    assert!(!cut.contains("message_stop"));
    assert!(cut.ends_with("0\r\n\r\n"), "{cut}");

    let aborted = raw_http(&model, &anthropic_request(true))?;
    assert!(aborted.contains("event: content_block_start"), "{aborted}");
    assert!(!aborted.ends_with("0\r\n\r\n"), "{aborted}");
    Ok(())
}
