//! The OpenAI and Anthropic clients against the scripted model server over real HTTP: what they send,
//! what they assemble, and how they survive every fault the server can script.

use std::time::Duration;

use futures_util::StreamExt;
use pitcrew::llm::{
    self, AssistantPart, HttpOptions, LlmError, Message, Model, ModelSettings, PriceTable, Provider, Request,
    RetryPolicy, StopReason, StreamEvent, ToolSpec, UsageTotals,
};
use pitcrew_tests::scripted_model::{Reply, Script, ScriptedModel, Turn};
use secrecy::SecretString;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const PROVIDERS: [Provider; 2] = [Provider::OpenAi, Provider::Anthropic];

fn settings(provider: Provider, server: &ScriptedModel) -> ModelSettings {
    let (model, base_url) = match provider {
        Provider::OpenAi => ("gpt-4o", server.openai_base_url()),
        Provider::Anthropic => ("claude-sonnet-4-5", server.anthropic_base_url()),
    };
    ModelSettings {
        provider,
        model: model.into(),
        base_url: base_url.parse().unwrap(),
        api_key: Some(SecretString::from("sk-test-secret")),
        max_output_tokens: 4096,
        stream: true,
        http: HttpOptions::default(),
        retry: RetryPolicy {
            base_delay: Duration::from_millis(1),
            max_backoff: Duration::from_millis(5),
            ..RetryPolicy::default()
        },
    }
}

fn client(provider: Provider, server: &ScriptedModel) -> std::sync::Arc<dyn Model> {
    llm::connect(settings(provider, server)).unwrap()
}

fn tool(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("The {name} tool."),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }
}

fn request() -> Request {
    Request {
        system: "You are pitcrew.".into(),
        messages: vec![Message::user("Fix the failing test.")],
        tools: vec![tool("read_file"), tool("bash"), tool("grep")],
        ..Request::default()
    }
}

async fn complete(model: &dyn Model) -> Result<llm::Response, LlmError> {
    model.complete(request(), CancellationToken::new()).await
}

/// Every event of one streamed call.
async fn events(model: &dyn Model, cancel: CancellationToken) -> Vec<Result<StreamEvent, LlmError>> {
    model.stream(request(), cancel).collect().await
}

#[tokio::test]
async fn a_turn_with_text_and_tool_calls_is_assembled_from_both_protocols_streamed_or_not() {
    for provider in PROVIDERS {
        for stream in [true, false] {
            let server = ScriptedModel::start(
                Script::new().turn(
                    Reply::text("Let me look at the test.")
                        .tool_call("grep", json!({"pattern": "fn test_", "path": "src"}))
                        .tool_call("read_file", json!({"path": "src/lib.rs"}))
                        .usage(1200, 40)
                        .cache(1000, 0),
                ),
            );
            let model = llm::connect(ModelSettings {
                stream,
                ..settings(provider, &server)
            })
            .unwrap();
            let response = complete(model.as_ref()).await.unwrap();
            let context = format!("{provider} stream={stream}");
            assert_eq!(response.text(), "Let me look at the test.", "{context}");
            let calls: Vec<_> = response
                .tool_calls()
                .map(|c| (c.name.clone(), c.parse_arguments().unwrap()))
                .collect();
            assert_eq!(calls.len(), 2, "{context}");
            assert_eq!(calls[0].0, "grep");
            assert_eq!(calls[0].1["pattern"], "fn test_");
            assert_eq!(calls[1].1["path"], "src/lib.rs");
            assert!(response.tool_calls().all(|c| !c.id.is_empty()), "{context}");
            assert_eq!(response.stop_reason, StopReason::ToolUse, "{context}");
            // Normalised usage: the 1000 cached tokens are not counted again as plain input.
            assert_eq!(response.usage.cache_read_tokens, 1000, "{context}");
            assert_eq!(response.usage.output_tokens, 40, "{context}");
            assert_eq!(
                response.usage.total_input_tokens(),
                1200 + if provider == Provider::Anthropic { 1000 } else { 0 },
                "{context}"
            );
            let sent = server.requests();
            assert_eq!(sent.len(), 1);
            assert_eq!(sent[0].body["stream"], json!(stream), "{context}");
            server.assert_script_consumed();
        }
    }
}

#[tokio::test]
async fn streamed_deltas_add_up_to_the_completed_turn() {
    for provider in PROVIDERS {
        let server = ScriptedModel::start(
            Script::new().turn(
                Reply::new()
                    .thinking("The test asserts 3 but gets 2.", "sig-abc")
                    .then_text("Found it: an off-by-one in add().")
                    .tool_call(
                        "edit_file",
                        json!({"path": "src/lib.rs", "old_string": "a + b - 1", "new_string": "a + b"}),
                    )
                    .usage(300, 60),
            ),
        );
        let model = client(provider, &server);
        let events: Vec<_> = events(model.as_ref(), CancellationToken::new())
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        let Some(StreamEvent::Completed(response)) = events.last() else {
            panic!("{provider}: the stream did not end with Completed: {events:?}");
        };
        let text: String = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::TextDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, response.text());
        assert!(
            events.iter().filter(|e| matches!(e, StreamEvent::TextDelta(_))).count() > 1,
            "{provider}: text came in one piece"
        );
        let arguments: String = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCallDelta { fragment, .. } => Some(fragment.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(arguments, response.tool_calls().next().unwrap().arguments);
        let thinking = response.parts.iter().find_map(|p| match p {
            AssistantPart::Thinking { text, signature } => Some((text.as_str(), signature.as_deref())),
            _ => None,
        });
        match provider {
            // Chat Completions has no thinking blocks.
            Provider::OpenAi => assert_eq!(thinking, None),
            Provider::Anthropic => assert_eq!(thinking, Some(("The test asserts 3 but gets 2.", Some("sig-abc")))),
        }
    }
}

#[tokio::test]
async fn what_the_clients_send() {
    let server = ScriptedModel::start(Script::new().turn(Reply::text("ok")).turn(Reply::text("ok")));
    complete(client(Provider::OpenAi, &server).as_ref()).await.unwrap();
    complete(client(Provider::Anthropic, &server).as_ref()).await.unwrap();
    let sent = server.requests();

    let openai = &sent[0];
    assert_eq!(openai.path, "/v1/chat/completions");
    assert_eq!(openai.header("authorization"), Some("Bearer sk-test-secret"));
    assert_eq!(openai.header("content-type"), Some("application/json"));
    assert_eq!(openai.body["stream_options"], json!({"include_usage": true}));
    let names: Vec<_> = openai.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["bash", "grep", "read_file"]);
    assert_eq!(
        openai.body["messages"][0],
        json!({"role": "system", "content": "You are pitcrew."})
    );

    let anthropic = &sent[1];
    assert_eq!(anthropic.path, "/v1/messages");
    assert_eq!(anthropic.header("x-api-key"), Some("sk-test-secret"));
    assert_eq!(anthropic.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(anthropic.header("authorization"), None);
    let tools = anthropic.body["tools"].as_array().unwrap();
    let names: Vec<_> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["bash", "grep", "read_file"]);
    // Cache breakpoints: the last tool, the system prompt, the newest message; nowhere else.
    let ephemeral = json!({"type": "ephemeral"});
    assert_eq!(tools[2]["cache_control"], ephemeral);
    assert!(tools[..2].iter().all(|t| t.get("cache_control").is_none()));
    assert_eq!(anthropic.body["system"][0]["cache_control"], ephemeral);
    assert_eq!(anthropic.body["messages"][0]["content"][0]["cache_control"], ephemeral);
    assert_eq!(anthropic.raw_body.matches("cache_control").count(), 3);
}

#[tokio::test]
async fn the_prompt_prefix_is_byte_stable_across_calls() {
    // Two calls of a growing conversation: the second request's body must begin with the same tools
    // and system bytes, whatever order the tools were given in.
    let server = ScriptedModel::start(Script::new().turn(Reply::text("a")).turn(Reply::text("b")));
    let model = client(Provider::Anthropic, &server);
    let mut first = request();
    model.complete(first.clone(), CancellationToken::new()).await.unwrap();
    first.tools.reverse();
    first.messages.push(Message::Assistant {
        parts: vec![AssistantPart::Text { text: "a".into() }],
    });
    first.messages.push(Message::user("go on"));
    model.complete(first, CancellationToken::new()).await.unwrap();
    let sent = server.requests();
    assert_eq!(sent[0].body["tools"], sent[1].body["tools"]);
    assert_eq!(sent[0].body["system"], sent[1].body["system"]);
    // The older message lost its breakpoint to the newest, and is otherwise unchanged.
    let mut older = sent[0].body["messages"][0].clone();
    older["content"][0].as_object_mut().unwrap().remove("cache_control");
    assert_eq!(sent[1].body["messages"][0], older);
}

#[tokio::test]
async fn transient_faults_are_retried_until_the_call_succeeds() {
    for provider in PROVIDERS {
        let server = ScriptedModel::start(
            Script::new()
                .turn(Turn::rate_limited())
                .turn(Turn::overloaded())
                .turn(Turn::server_error(500))
                .turn(Turn::cut_stream(3, Reply::text("partial answer that never ends")))
                .turn(Turn::stream_error(2, Reply::text("doomed")))
                .turn(Reply::text("recovered").usage(10, 2)),
        );
        let model = llm::connect(ModelSettings {
            retry: RetryPolicy {
                max_retries: 5,
                ..settings(provider, &server).retry
            },
            ..settings(provider, &server)
        })
        .unwrap();
        let events: Vec<_> = events(model.as_ref(), CancellationToken::new()).await;
        let retries: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                Ok(StreamEvent::Retrying { attempt, reason, .. }) => Some((*attempt, reason.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(
            retries.iter().map(|r| r.0).collect::<Vec<_>>(),
            [1, 2, 3, 4, 5],
            "{provider}: {retries:?}"
        );
        assert!(retries[0].1.starts_with("rate limited"), "{provider}: {}", retries[0].1);
        assert!(retries[1].1.contains("overloaded"), "{provider}: {}", retries[1].1);
        assert!(retries[3].1.contains("ended before"), "{provider}: {}", retries[3].1);
        match events.last() {
            Some(Ok(StreamEvent::Completed(response))) => assert_eq!(response.text(), "recovered"),
            other => panic!("{provider}: {other:?}"),
        }
        assert_eq!(server.requests().len(), 6);
        // Every attempt sent the same bytes.
        let bodies: Vec<_> = server.requests().into_iter().map(|r| r.raw_body).collect();
        assert!(bodies.windows(2).all(|w| w[0] == w[1]), "{provider}");
    }
}

#[tokio::test]
async fn final_errors_are_typed_and_not_retried() {
    for provider in PROVIDERS {
        let server = ScriptedModel::start(
            Script::new()
                .turn(Turn::context_length_exceeded())
                .turn(Turn::unauthorized())
                .turn(Turn::insufficient_quota())
                .turn(Turn::server_error(400)),
        );
        let model = client(provider, &server);
        let err = complete(model.as_ref()).await.unwrap_err();
        assert!(
            matches!(&err, LlmError::ContextWindowExceeded { message } if message.contains("210")),
            "{provider}: {err:?}"
        );
        let err = complete(model.as_ref()).await.unwrap_err();
        assert!(matches!(err, LlmError::Auth { status: 401, .. }), "{provider}: {err:?}");
        // The key never appears in an error, even when the server echoes what it got.
        assert!(!err.to_string().contains("sk-test-secret"));
        let err = complete(model.as_ref()).await.unwrap_err();
        assert!(matches!(err, LlmError::QuotaExhausted { .. }), "{provider}: {err:?}");
        let err = complete(model.as_ref()).await.unwrap_err();
        assert!(
            matches!(err, LlmError::BadRequest { status: 400, .. }),
            "{provider}: {err:?}"
        );
        assert_eq!(server.requests().len(), 4, "{provider}: a final error was retried");
    }
}

#[tokio::test]
async fn retries_give_up_after_the_bound() {
    for provider in PROVIDERS {
        let server = ScriptedModel::start(
            Script::new()
                .turn(Turn::overloaded())
                .turn(Turn::overloaded())
                .turn(Turn::overloaded())
                .turn(Reply::text("too late")),
        );
        let model = llm::connect(ModelSettings {
            retry: RetryPolicy {
                max_retries: 2,
                ..settings(provider, &server).retry
            },
            ..settings(provider, &server)
        })
        .unwrap();
        let err = complete(model.as_ref()).await.unwrap_err();
        assert!(matches!(err, LlmError::Overloaded { .. }), "{provider}: {err:?}");
        assert_eq!(server.requests().len(), 3, "{provider}");
        assert_eq!(server.remaining_turns(), 1);
    }
}

#[tokio::test(start_paused = true)]
async fn retry_timing_honours_retry_after_and_backs_off_exponentially() {
    for provider in PROVIDERS {
        let server = ScriptedModel::start(
            Script::new()
                .turn(Turn::rate_limited_retry_after(30))
                .turn(Turn::rate_limited_retry_after_ms(1500))
                .turn(Turn::overloaded())
                .turn(Turn::overloaded())
                .turn(Turn::overloaded())
                .turn(Reply::text("finally")),
        );
        let model = llm::connect(ModelSettings {
            // Timers would fire at once on paused time while the client waits on the socket.
            http: HttpOptions {
                request_timeout: None,
                idle_timeout: None,
                connect_timeout: None,
            },
            retry: RetryPolicy {
                max_retries: 5,
                base_delay: Duration::from_secs(1),
                max_backoff: Duration::from_secs(32),
                max_retry_after: Duration::from_secs(60),
            },
            ..settings(provider, &server)
        })
        .unwrap();
        let started = tokio::time::Instant::now();
        let events: Vec<_> = events(model.as_ref(), CancellationToken::new()).await;
        let elapsed = started.elapsed();
        let delays: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                Ok(StreamEvent::Retrying { delay, .. }) => Some(*delay),
                _ => None,
            })
            .collect();
        assert_eq!(delays.len(), 5, "{provider}: {events:?}");
        assert_eq!(delays[0], Duration::from_secs(30));
        assert_eq!(delays[1], Duration::from_millis(1500));
        // Backoff ceilings for retries 3, 4, 5: 4 s, 8 s, 16 s, with full jitter below them.
        for (delay, ceiling) in delays[2..].iter().zip([4, 8, 16]) {
            assert!(
                *delay <= Duration::from_secs(ceiling),
                "{provider}: {delay:?} > {ceiling}s"
            );
        }
        let total: Duration = delays.iter().sum();
        // The virtual clock moved by exactly the waits: nothing else slept.
        assert!(
            elapsed >= total && elapsed < total + Duration::from_millis(100),
            "{provider}: {elapsed:?} vs {total:?}"
        );
        assert!(matches!(events.last(), Some(Ok(StreamEvent::Completed(_)))));
    }
}

#[tokio::test]
async fn a_retry_after_longer_than_the_limit_returns_the_error_at_once() {
    let server = ScriptedModel::start(
        Script::new()
            .turn(Turn::rate_limited_retry_after(3600))
            .turn(Reply::text("x")),
    );
    let model = client(Provider::OpenAi, &server);
    let err = complete(model.as_ref()).await.unwrap_err();
    assert_eq!(err.retry_after(), Some(Duration::from_secs(3600)));
    assert!(err.to_string().contains("retry after 3600.0s"), "{err}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn cancellation_stops_a_call_mid_stream() {
    for provider in PROVIDERS {
        let words: Vec<String> = (0..200).map(|i| format!("word{i} ")).collect();
        let server = ScriptedModel::start(
            Script::new().turn(Reply::text(words.concat()).chunk_delay(Duration::from_millis(20))),
        );
        let model = client(provider, &server);
        let cancel = CancellationToken::new();
        let mut stream = model.stream(request(), cancel.clone());
        let mut seen = Vec::new();
        while let Some(event) = stream.next().await {
            if matches!(event, Ok(StreamEvent::TextDelta(_))) && seen.is_empty() {
                cancel.cancel();
            }
            seen.push(event);
        }
        assert!(
            matches!(seen.last(), Some(Err(LlmError::Cancelled))),
            "{provider}: {:?}",
            seen.last()
        );
        assert!(!seen.iter().any(|e| matches!(e, Ok(StreamEvent::Completed(_)))));
        // Far fewer deltas than the 200 words: the stream stopped when asked.
        assert!(seen.len() < 50, "{provider}: {} events after cancelling", seen.len());
    }
}

#[tokio::test]
async fn cancelling_during_a_retry_wait_ends_the_call() {
    let server = ScriptedModel::start(
        Script::new()
            .turn(Turn::rate_limited_retry_after(50))
            .turn(Reply::text("x")),
    );
    let model = client(Provider::Anthropic, &server);
    let cancel = CancellationToken::new();
    let mut stream = model.stream(request(), cancel.clone());
    let first = stream.next().await;
    assert!(matches!(first, Some(Ok(StreamEvent::Retrying { .. }))), "{first:?}");
    cancel.cancel();
    assert!(matches!(stream.next().await, Some(Err(LlmError::Cancelled))));
    assert!(stream.next().await.is_none());
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn invalid_tool_call_json_is_delivered_not_fatal() {
    for provider in PROVIDERS {
        let server = ScriptedModel::start(
            Script::new().turn(Reply::new().tool_call_raw("edit_file", r#"{"path": "src/lib.rs", "old_string": "#)),
        );
        let response = complete(client(provider, &server).as_ref()).await.unwrap();
        let call = response.tool_calls().next().unwrap();
        assert_eq!(call.name, "edit_file");
        assert_eq!(call.arguments, r#"{"path": "src/lib.rs", "old_string": "#, "{provider}");
        let err = call.parse_arguments().unwrap_err().to_string();
        assert!(err.contains("not valid JSON"), "{err}");
    }
}

#[tokio::test]
async fn a_silent_stream_times_out_and_is_retried() {
    let server = ScriptedModel::start(
        Script::new()
            .turn(Reply::text("slow slow slow").chunk_delay(Duration::from_millis(800)))
            .turn(Reply::text("fast")),
    );
    let model = llm::connect(ModelSettings {
        http: HttpOptions {
            idle_timeout: Some(Duration::from_millis(200)),
            ..HttpOptions::default()
        },
        ..settings(Provider::OpenAi, &server)
    })
    .unwrap();
    let events: Vec<_> = events(model.as_ref(), CancellationToken::new()).await;
    let reason = events.iter().find_map(|e| match e {
        Ok(StreamEvent::Retrying { reason, .. }) => Some(reason.clone()),
        _ => None,
    });
    assert!(
        reason.as_deref().is_some_and(|r| r.contains("silent for 0.2s")),
        "{reason:?}"
    );
    assert!(matches!(events.last(), Some(Ok(StreamEvent::Completed(r))) if r.text() == "fast"));
}

#[tokio::test]
async fn usage_and_cost_add_up_over_calls() {
    let server = ScriptedModel::start(
        Script::new()
            .turn(Reply::text("a").usage(1_000_000, 100_000).cache(0, 400_000))
            .turn(Reply::text("b").usage(200_000, 10_000).cache(2_000_000, 0)),
    );
    let model = client(Provider::Anthropic, &server);
    let prices = PriceTable::default();
    let mut totals = UsageTotals::new();
    for _ in 0..2 {
        let response = complete(model.as_ref()).await.unwrap();
        let price = prices.lookup(response.model.as_deref().unwrap_or(model.name()));
        totals.record(&response.usage, price);
    }
    assert_eq!(totals.calls, 2);
    assert_eq!(totals.usage.input_tokens, 1_200_000);
    assert_eq!(totals.usage.cache_read_tokens, 2_000_000);
    assert_eq!(totals.usage.cache_write_tokens, 400_000);
    // Sonnet: 1.2M×3 + 110k×15 + 2M×0.30 + 400k×3.75 per million = 3.60 + 1.65 + 0.60 + 1.50.
    let cost = totals.cost_usd.unwrap();
    assert!((cost - 7.35).abs() < 1e-9, "{cost}");
}
