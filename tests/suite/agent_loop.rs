//! The agent loop against the scripted model server over HTTP, with real tools in a real (local)
//! sandbox: budgets, the grace call, the repetition guard, errors as data, concurrency, output
//! budgets, compaction and its circuit breaker, cancellation and prefix stability.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pitcrew::agent::events::{AgentEvent, NoteKind, Recorder};
use pitcrew::agent::{Agent, AgentConfig, Budget, Meter, Outcome, StopReason, Task};
use pitcrew::llm::{self, HttpOptions, Model, ModelSettings, PriceTable, Provider, RetryPolicy};
use pitcrew::sandbox::local::{LocalOptions, LocalSession};
use pitcrew::tools::{self, BoxFuture, Plan, Registry, Tool, ToolContext, ToolError, Workspace};
use pitcrew_tests::repo::TestRepo;
use pitcrew_tests::scripted_model::{Reply, Script, ScriptedModel, Turn};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

pub(crate) fn model(server: &ScriptedModel, provider: Provider) -> Arc<dyn Model> {
    let (name, base_url) = match provider {
        Provider::OpenAi => ("gpt-4o", server.openai_base_url()),
        Provider::Anthropic => ("claude-sonnet-4-5", server.anthropic_base_url()),
    };
    llm::connect(ModelSettings {
        provider,
        model: name.into(),
        base_url: base_url.parse().unwrap(),
        api_key: None,
        max_output_tokens: 4096,
        stream: true,
        http: HttpOptions::default(),
        retry: RetryPolicy {
            base_delay: Duration::from_millis(1),
            max_backoff: Duration::from_millis(5),
            ..RetryPolicy::default()
        },
    })
    .unwrap()
}

/// A job's tool context on `repo`, with a local sandbox and a run directory beside the checkout.
pub(crate) struct Job {
    pub ctx: ToolContext,
    pub run_dir: tempfile::TempDir,
}

pub(crate) fn job(repo: &TestRepo) -> Job {
    let run_dir = tempfile::tempdir().unwrap();
    let session = LocalSession::start(repo.path(), LocalOptions::default()).unwrap();
    let workspace = Workspace::new(repo.path())
        .unwrap()
        .with_read_root(run_dir.path())
        .unwrap();
    let ctx = ToolContext {
        workspace,
        sandbox: Arc::new(session),
        run_dir: run_dir.path().to_owned(),
        test_command: None,
        plan: Mutex::new(Plan::default()),
        reads: Default::default(),
        tests: Mutex::new(None),
        test_output: Mutex::new(None),
        cancel: CancellationToken::new(),
        index: None,
    };
    Job { ctx, run_dir }
}

pub(crate) fn agent(model: Arc<dyn Model>, tools: Registry, config: AgentConfig) -> (Agent, Arc<Recorder>) {
    let recorder = Arc::new(Recorder::default());
    let agent = Agent {
        model,
        tools,
        system: "You are pitcrew, a coding agent.".into(),
        config,
        events: recorder.clone(),
        meter: Meter::new(PriceTable::default()),
    };
    (agent, recorder)
}

fn all_tools() -> Registry {
    let mut registry = Registry::new();
    for tool in tools::all_tools() {
        registry.add(tool);
    }
    registry
}

fn repo() -> TestRepo {
    TestRepo::new(&[
        ("README.md", "# demo\n"),
        ("src/lib.rs", "pub fn add(a: i32, b: i32) -> i32 {\n    a + b - 1\n}\n"),
        ("notes.txt", "alpha\nbeta\n"),
    ])
    .unwrap()
}

async fn run(agent: &Agent, ctx: &ToolContext, prompt: &str) -> Outcome {
    agent
        .run(
            ctx,
            Task {
                prompt: prompt.into(),
                requires_change: true,
            },
            &CancellationToken::new(),
        )
        .await
}

/// The tool results the model received in request `index`, as (call id, content, is_error).
fn tool_results(server: &ScriptedModel, index: usize) -> Vec<(String, String)> {
    let request = &server.requests()[index];
    request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn last_user_text(server: &ScriptedModel, index: usize) -> String {
    let request = &server.requests()[index];
    let messages = request.body["messages"].as_array().unwrap();
    messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .unwrap()
}

#[tokio::test]
async fn errors_are_data_and_the_run_goes_on() {
    let repo = repo();
    std::os::unix::fs::symlink("/etc/passwd", repo.file("passwd")).unwrap();
    let server = ScriptedModel::start(
        Script::new()
            .turn(
                Reply::new()
                    .tool_call("no_such_tool", json!({}))
                    .tool_call_raw("read_file", "{\"path\": \"src/lib.rs\"")
                    .tool_call("read_file", json!({"path": "../../etc/passwd"}))
                    .tool_call("read_file", json!({"path": "passwd"}))
                    .tool_call("read_file", json!({"pth": "src/lib.rs"}))
                    .tool_call(
                        "edit_file",
                        json!({"path": "notes.txt", "old_string": "alpha", "new_string": "gamma"}),
                    ),
            )
            .turn(Reply::text("Done looking.")),
    );
    let job = job(&repo);
    let (agent, events) = agent(model(&server, Provider::OpenAi), all_tools(), AgentConfig::default());
    let outcome = run(&agent, &job.ctx, "look around").await;
    assert_eq!(outcome.stop, StopReason::Finished);
    assert_eq!(outcome.summary, "Done looking.");
    let results = tool_results(&server, 1);
    assert_eq!(results.len(), 6);
    let contents: Vec<&str> = results.iter().map(|(_, c)| c.as_str()).collect();
    assert!(
        contents[0].starts_with("Error: there is no tool named `no_such_tool`; the tools are: bash, edit_file"),
        "{}",
        contents[0]
    );
    assert!(contents[1].contains("are not valid JSON"), "{}", contents[1]);
    assert!(contents[2].contains("outside the workspace"), "{}", contents[2]);
    assert!(
        contents[3].contains("/etc/passwd") && contents[3].contains("outside the workspace"),
        "{}",
        contents[3]
    );
    assert!(!contents[3].contains("root:"), "the symlink was followed");
    assert!(contents[4].contains("unknown field `pth`"), "{}", contents[4]);
    assert!(
        contents[5].starts_with("Error: "),
        "edit before read must be refused: {}",
        contents[5]
    );
    assert_eq!(repo.read("notes.txt").unwrap(), "alpha\nbeta\n");
    let finished: Vec<bool> = events
        .events()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolFinished { is_error, .. } => Some(*is_error),
            _ => None,
        })
        .collect();
    assert_eq!(finished, [true; 6]);
}

/// A read-only tool that waits until `parties` calls are inside it at once: run one after another,
/// the calls would wait forever (the test's timeout catches that), so finishing proves concurrency.
struct Rendezvous(Arc<tokio::sync::Barrier>);

impl Tool for Rendezvous {
    fn name(&self) -> &'static str {
        "rendezvous"
    }
    fn description(&self) -> &'static str {
        "test tool"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"n": {"type": "integer"}}})
    }
    fn read_only(&self) -> bool {
        true
    }
    fn call<'a>(&'a self, _: &'a ToolContext, args: Map<String, Value>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            self.0.wait().await;
            Ok(format!("met {}", args["n"]))
        })
    }
}

/// A mutating tool that records the order of its calls and checks none overlaps another.
struct Journal {
    log: Arc<Mutex<Vec<String>>>,
    busy: Arc<std::sync::atomic::AtomicBool>,
}

impl Tool for Journal {
    fn name(&self) -> &'static str {
        "journal"
    }
    fn description(&self) -> &'static str {
        "test tool"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"entry": {"type": "string"}}})
    }
    fn read_only(&self) -> bool {
        false
    }
    fn call<'a>(&'a self, _: &'a ToolContext, args: Map<String, Value>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            assert!(
                !self.busy.swap(true, std::sync::atomic::Ordering::SeqCst),
                "two mutating calls overlapped"
            );
            // Give way: calls run side by side would start the next one here, and see `busy`.
            for _ in 0..8 {
                tokio::task::yield_now().await;
            }
            let entry = args["entry"].as_str().unwrap_or_default().to_owned();
            self.log.lock().unwrap().push(entry.clone());
            self.busy.store(false, std::sync::atomic::Ordering::SeqCst);
            Ok(entry)
        })
    }
}

#[tokio::test]
async fn read_only_calls_run_together_and_mutating_calls_in_order() {
    let repo = repo();
    let log = Arc::new(Mutex::new(Vec::new()));
    let tools = Registry::new()
        .with(Rendezvous(Arc::new(tokio::sync::Barrier::new(5))))
        .with(Journal {
            log: log.clone(),
            busy: Arc::new(std::sync::atomic::AtomicBool::new(false)),
        });
    let mut reply = Reply::new();
    for n in 0..5 {
        reply = reply.tool_call("rendezvous", json!({"n": n}));
    }
    for entry in ["first", "second", "third"] {
        reply = reply.tool_call("journal", json!({"entry": entry}));
    }
    let server = ScriptedModel::start(Script::new().turn(reply).turn(Reply::text("ok")));
    let job = job(&repo);
    let (agent, _) = agent(model(&server, Provider::Anthropic), tools, AgentConfig::default());
    let outcome = tokio::time::timeout(Duration::from_secs(20), run(&agent, &job.ctx, "go"))
        .await
        .expect("the five read-only calls never met: they did not run concurrently");
    assert_eq!(outcome.stop, StopReason::Finished);
    assert_eq!(*log.lock().unwrap(), ["first", "second", "third"]);
    // Results go back in the model's order.
    let request = &server.requests()[1];
    let results: Vec<&str> = request.body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| block["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        results,
        ["met 0", "met 1", "met 2", "met 3", "met 4", "first", "second", "third"]
    );
}

#[tokio::test]
async fn the_step_budget_ends_with_a_grace_call_whose_summary_is_the_result() {
    let repo = repo();
    let server = ScriptedModel::start(
        Script::new()
            .turn(Reply::new().tool_call("list_dir", json!({})))
            .turn(Reply::new().tool_call("read_file", json!({"path": "notes.txt"})))
            .turn(Reply::text(
                "I listed the tree and read notes.txt; the fix itself is still to do.",
            )),
    );
    let job = job(&repo);
    let config = AgentConfig {
        max_steps: 2,
        ..AgentConfig::default()
    };
    let (agent, events) = agent(model(&server, Provider::OpenAi), all_tools(), config);
    let outcome = run(&agent, &job.ctx, "fix it").await;
    assert_eq!(outcome.stop, StopReason::BudgetExhausted { budget: Budget::Steps });
    assert_eq!(
        outcome.summary,
        "I listed the tree and read notes.txt; the fix itself is still to do."
    );
    assert!(last_user_text(&server, 2).contains("Do not call any more tools"));
    assert!(events.events().iter().any(|e| matches!(
        e,
        AgentEvent::Note {
            kind: NoteKind::Grace,
            ..
        }
    )));
    server.assert_script_consumed();
}

#[tokio::test]
async fn the_same_call_three_times_earns_a_warning_and_a_fourth_stops_the_run() {
    let repo = repo();
    let same = || Reply::new().tool_call("grep", json!({"pattern": "alpha", "path": "."}));
    let server = ScriptedModel::start(Script::new().turn(same()).turn(same()).turn(same()).turn(same()));
    let job = job(&repo);
    let (agent, _) = agent(model(&server, Provider::OpenAi), all_tools(), AgentConfig::default());
    let outcome = run(&agent, &job.ctx, "find alpha").await;
    assert_eq!(outcome.stop, StopReason::Stuck { tool: "grep".into() });
    assert!(last_user_text(&server, 3).contains("with the same arguments 3 times in a row"));
    assert_eq!(server.requests().len(), 4);
}

/// The calls the loop started, as the events report them.
fn started(events: &Recorder) -> Vec<String> {
    events
        .events()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolStarted { tool, .. } => Some(tool.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn identical_calls_in_one_turn_run_once_and_the_run_goes_on() {
    // Regression: four identical calls in one turn used to end the run as stuck before any ran.
    for copies in [4, 50] {
        for provider in [Provider::OpenAi, Provider::Anthropic] {
            let repo = repo();
            let mut reply = Reply::new();
            for _ in 0..copies {
                reply = reply.tool_call("bash", json!({"command": "echo hi"}));
            }
            let server = ScriptedModel::start(Script::new().turn(reply).turn(Reply::text("It printed hi.")));
            let job = job(&repo);
            let (agent, events) = agent(model(&server, provider), all_tools(), AgentConfig::default());
            let outcome = run(&agent, &job.ctx, "say hi").await;
            assert_eq!(outcome.stop, StopReason::Finished, "{copies} {provider}: {outcome:?}");
            assert_eq!(outcome.summary, "It printed hi.");
            assert_eq!(outcome.tool_calls, 1, "{copies} {provider}");
            assert_eq!(started(&events), ["bash"], "{copies} {provider}");
            // Every call id got the one result, so the conversation stays valid for the provider.
            let messages = server.requests()[1].body["messages"].as_array().unwrap().clone();
            let results: Vec<(String, String)> = match provider {
                Provider::OpenAi => messages
                    .iter()
                    .filter(|m| m["role"] == "tool")
                    .map(|m| {
                        (
                            m["tool_call_id"].as_str().unwrap().to_owned(),
                            m["content"].as_str().unwrap().to_owned(),
                        )
                    })
                    .collect(),
                Provider::Anthropic => messages.last().unwrap()["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|b| {
                        (
                            b["tool_use_id"].as_str().unwrap().to_owned(),
                            b["content"].as_str().unwrap().to_owned(),
                        )
                    })
                    .collect(),
            };
            assert_eq!(results.len(), copies, "{provider}");
            let mut ids: Vec<&str> = results.iter().map(|(id, _)| id.as_str()).collect();
            ids.sort_unstable();
            ids.dedup();
            assert_eq!(ids.len(), copies, "{provider}: each call keeps its own id");
            assert!(
                results
                    .iter()
                    .all(|(_, content)| content == &results[0].1 && content.contains("hi"))
            );
            assert!(!events.events().iter().any(|e| matches!(
                e,
                AgentEvent::Note {
                    kind: NoteKind::Repetition,
                    ..
                }
            )));
            server.assert_script_consumed();
        }
    }
}

#[tokio::test]
async fn a_turn_of_identical_calls_repeated_across_turns_is_warned_then_stopped() {
    let repo = repo();
    let fan_out = || {
        (0..4).fold(Reply::new(), |reply, _| {
            reply.tool_call("grep", json!({"pattern": "alpha", "path": "."}))
        })
    };
    let server = ScriptedModel::start(
        Script::new()
            .turn(fan_out())
            .turn(fan_out())
            .turn(fan_out())
            .turn(fan_out()),
    );
    let job = job(&repo);
    let (agent, events) = agent(model(&server, Provider::OpenAi), all_tools(), AgentConfig::default());
    let outcome = run(&agent, &job.ctx, "find alpha").await;
    assert_eq!(outcome.stop, StopReason::Stuck { tool: "grep".into() });
    // Three turns ran (once each) and the third earned the warning; the fourth ran nothing.
    assert_eq!(started(&events), ["grep", "grep", "grep"]);
    assert!(!last_user_text(&server, 2).contains("with the same arguments"));
    assert!(last_user_text(&server, 3).contains("called `grep` with the same arguments 3 times in a row"));
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn an_answer_without_looking_gets_one_nudge() {
    let repo = repo();
    let server = ScriptedModel::start(
        Script::new()
            .turn(Reply::text("Just change add()."))
            .turn(Reply::new().tool_call("read_file", json!({"path": "src/lib.rs"})))
            .turn(Reply::text("It subtracts one; that is the bug.")),
    );
    let job = job(&repo);
    let (agent, _) = agent(model(&server, Provider::OpenAi), all_tools(), AgentConfig::default());
    let outcome = run(&agent, &job.ctx, "fix add").await;
    assert_eq!(outcome.stop, StopReason::Finished);
    assert_eq!(outcome.summary, "It subtracts one; that is the bug.");
    assert!(last_user_text(&server, 1).contains("You answered without looking at the repository"));
}

#[tokio::test]
async fn large_outputs_are_saved_and_previewed() {
    let repo = repo();
    let server = ScriptedModel::start(
        Script::new()
            .turn(Reply::new().tool_call("bash", json!({"command": "seq 1 20000"})))
            .turn(Reply::text("ok")),
    );
    let job = job(&repo);
    let (agent, events) = agent(model(&server, Provider::OpenAi), all_tools(), AgentConfig::default());
    assert_eq!(run(&agent, &job.ctx, "count").await.stop, StopReason::Finished);
    let (_, content) = &tool_results(&server, 1)[0];
    assert!(content.len() < 4_000, "{} characters reached the model", content.len());
    assert!(content.contains("was too large for the context"), "{content}");
    let persisted = events
        .events()
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolFinished { persisted_to, .. } => persisted_to.clone(),
            _ => None,
        })
        .unwrap();
    assert!(persisted.starts_with(&job.run_dir.path().display().to_string()));
    let saved = std::fs::read_to_string(&persisted).unwrap();
    assert!(saved.contains("\n19999\n") && content.contains(&persisted));
}

#[tokio::test]
async fn compaction_replaces_older_turns_with_a_summary_and_the_run_goes_on() {
    let repo = repo();
    let read = |path: &str| Reply::new().tool_call("read_file", json!({"path": path}));
    let server = ScriptedModel::start(
        Script::new()
            .turn(read("README.md").usage(1_000, 10))
            .turn(read("notes.txt").usage(2_000, 10))
            // The provider reports 35,000 tokens: past 85% of the 40,000-token window.
            .turn(read("src/lib.rs").usage(35_000, 10))
            .turn(Reply::text("## Goal\nFix add().\n## Done so far\nRead three files.").usage(36_000, 50))
            .turn(Reply::text("add() subtracts one.").usage(9_000, 10)),
    );
    let job = job(&repo);
    let config = AgentConfig {
        context_window: 40_000,
        keep_recent_turns: 1,
        ..AgentConfig::default()
    };
    let (agent, events) = agent(model(&server, Provider::OpenAi), all_tools(), config);
    let outcome = run(&agent, &job.ctx, "explain add").await;
    assert_eq!(outcome.stop, StopReason::Finished, "{outcome:?}");
    assert_eq!(outcome.summary, "add() subtracts one.");
    let events = events.events();
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, AgentEvent::Compacted { .. }))
            .count(),
        1
    );
    assert!(!events.iter().any(|e| matches!(e, AgentEvent::CompactionFailed { .. })));
    let requests = server.requests();
    // The summary request shares the conversation's prefix and asks for a summary.
    assert!(last_user_text(&server, 3).contains("Write a summary"));
    // After it: the task, the summary, then the last turn verbatim.
    let messages = requests[4].body["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "user", "assistant", "tool"]);
    assert!(messages[2]["content"].as_str().unwrap().contains("## Goal\nFix add()."));
    assert!(
        messages[3]["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap()
            .contains("src/lib.rs")
    );
}

#[tokio::test]
async fn three_failed_compactions_stop_the_run() {
    let repo = repo();
    // Every turn reports a nearly full window. Compaction fails three ways: nothing old enough to
    // summarise yet, an error from the model, an empty summary.
    let read = |path: &str| {
        Reply::new()
            .tool_call("read_file", json!({"path": path}))
            .usage(39_000, 10)
    };
    let server = ScriptedModel::start(
        Script::new()
            .turn(read("README.md"))
            .turn(read("notes.txt"))
            .turn(Turn::server_error(400))
            .turn(read("src/lib.rs"))
            .turn(Reply::text("   ")),
    );
    let job = job(&repo);
    let config = AgentConfig {
        context_window: 40_000,
        keep_recent_turns: 1,
        ..AgentConfig::default()
    };
    let (agent, events) = agent(model(&server, Provider::OpenAi), all_tools(), config);
    let outcome = run(&agent, &job.ctx, "explain").await;
    assert_eq!(
        outcome.stop,
        StopReason::BudgetExhausted {
            budget: Budget::Context
        }
    );
    let failures = events
        .events()
        .iter()
        .filter(|e| matches!(e, AgentEvent::CompactionFailed { .. }))
        .count();
    assert_eq!(failures, 3);
    server.assert_script_consumed();
}

#[tokio::test]
async fn a_context_overflow_is_compacted_and_retried_once() {
    let repo = repo();
    let read = |path: &str| Reply::new().tool_call("read_file", json!({"path": path}));
    let server = ScriptedModel::start(
        Script::new()
            .turn(read("README.md"))
            .turn(read("notes.txt"))
            .turn(Turn::context_length_exceeded())
            .turn(Reply::text("## Goal\nRead files."))
            .turn(Reply::text("Finished after compaction.")),
    );
    let job = job(&repo);
    let config = AgentConfig {
        keep_recent_turns: 1,
        ..AgentConfig::default()
    };
    let (agent, events) = agent(model(&server, Provider::Anthropic), all_tools(), config);
    let outcome = run(&agent, &job.ctx, "read").await;
    assert_eq!(outcome.stop, StopReason::Finished, "{outcome:?}");
    assert_eq!(outcome.summary, "Finished after compaction.");
    assert!(
        events
            .events()
            .iter()
            .any(|e| matches!(e, AgentEvent::Compacted { .. }))
    );
    server.assert_script_consumed();
}

#[tokio::test]
async fn cancelling_stops_a_running_command() {
    let repo = repo();
    let server = ScriptedModel::start(
        Script::new()
            .turn(Reply::new().tool_call("bash", json!({"command": "sleep 30", "timeout": 60})))
            .turn(Reply::text("never")),
    );
    let job = job(&repo);
    let (agent, _) = agent(model(&server, Provider::OpenAi), all_tools(), AgentConfig::default());
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let outcome = tokio::time::timeout(
        Duration::from_secs(10),
        agent.run(
            &job.ctx,
            Task {
                prompt: "wait".into(),
                requires_change: false,
            },
            &cancel,
        ),
    )
    .await
    .expect("cancelling did not stop the command");
    assert_eq!(outcome.stop, StopReason::Cancelled);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn requests_extend_each_other_exactly_over_a_long_run() {
    // 30 steps of read-only calls: each request's messages must begin with the previous request's
    // messages, byte for byte (Anthropic's moving cache breakpoint aside), so the prompt cache hits.
    let repo = repo();
    let calls = [
        ("grep", json!({"pattern": "a"})),
        ("glob", json!({"pattern": "**/*.rs"})),
        ("read_file", json!({"path": "notes.txt"})),
        ("list_dir", json!({"path": "src"})),
    ];
    for provider in [Provider::OpenAi, Provider::Anthropic] {
        let mut script = Script::new();
        for step in 0..30 {
            // The tools rotate, so no call repeats the one before it and the repetition guard stays quiet.
            let (name, args) = &calls[step % calls.len()];
            script = script.turn(
                Reply::text(format!("step {step}"))
                    .tool_call(*name, args.clone())
                    .usage(1_000 + step as u64 * 100, 20),
            );
        }
        let server = ScriptedModel::start(script.turn(Reply::text("done")));
        let job = job(&repo);
        let config = AgentConfig {
            max_steps: 40,
            ..AgentConfig::default()
        };
        let (agent, _) = agent(model(&server, provider), all_tools(), config);
        let outcome = run(&agent, &job.ctx, "survey").await;
        assert_eq!(outcome.stop, StopReason::Finished, "{provider}: {outcome:?}");
        let requests = server.requests();
        assert_eq!(requests.len(), 31);
        let strip = |body: &Value| {
            let mut body = body.clone();
            strip_cache_control(&mut body);
            body
        };
        for pair in requests.windows(2) {
            let (before, after) = (strip(&pair[0].body), strip(&pair[1].body));
            assert_eq!(before["system"], after["system"], "{provider}");
            assert_eq!(before["tools"], after["tools"], "{provider}");
            let (before, after) = (
                before["messages"].as_array().unwrap(),
                after["messages"].as_array().unwrap(),
            );
            assert!(after.len() > before.len());
            assert_eq!(
                &after[..before.len()],
                &before[..],
                "{provider}: a request rewrote an earlier message"
            );
        }
    }
}

fn strip_cache_control(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("cache_control");
            map.values_mut().for_each(strip_cache_control);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_cache_control),
        _ => {}
    }
}

#[tokio::test]
async fn a_sub_agent_researches_with_read_only_tools_and_only_its_report_comes_back() {
    let repo = repo();
    let server = ScriptedModel::start(
        Script::new()
            // The parent hands a question to a sub-agent…
            .turn(Reply::new().tool_call(
                "task",
                json!({"description": "find add", "prompt": "Where is `add` defined, and what does it return?"}),
            ))
            // …which searches, reads and reports (these two turns are the sub-agent's)…
            .turn(
                Reply::new()
                    .tool_call("grep", json!({"pattern": "fn add"}))
                    .usage(500, 10),
            )
            .turn(Reply::text("`add` is in src/lib.rs:1 and returns `a + b - 1`.").usage(600, 20))
            // …and the parent finishes with the report in its context.
            .turn(Reply::text("The bug is the `- 1` in src/lib.rs.")),
    );
    let job = job(&repo);
    let model = model(&server, Provider::OpenAi);
    let config = AgentConfig::default();
    let meter = Meter::new(PriceTable::default());
    let registry = pitcrew::session::registry(model.clone(), &config, meter.clone(), false);
    let (mut agent, _) = agent(model, registry, config);
    agent.meter = meter;
    let outcome = run(&agent, &job.ctx, "find the bug").await;
    assert_eq!(outcome.stop, StopReason::Finished, "{outcome:?}");
    let requests = server.requests();
    // The sub-agent saw none of the parent's conversation and only read-only tools.
    let sub_messages = requests[1].body["messages"].as_array().unwrap();
    assert_eq!(
        sub_messages[1]["content"],
        "Where is `add` defined, and what does it return?"
    );
    let sub_tools: Vec<&str> = requests[1].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(sub_tools, ["glob", "grep", "list_dir", "read_file"]);
    // Only the report entered the parent's context.
    let (_, report) = &tool_results(&server, 3)[0];
    assert_eq!(report, "`add` is in src/lib.rs:1 and returns `a + b - 1`.");
    assert_eq!(
        requests[3].body["messages"].as_array().unwrap().len(),
        4,
        "system, task, call, result: nothing else"
    );
    // The sub-agent's tokens count toward the run.
    assert_eq!(outcome.usage.usage.input_tokens, 1_100);
}

#[tokio::test]
async fn cost_and_wall_time_budgets_end_with_the_grace_call() {
    let repo = repo();
    // Each call costs $2.50 + $10 per million in/out tokens: 100k input tokens is $0.25.
    let server = ScriptedModel::start(
        Script::new()
            .turn(Reply::new().tool_call("list_dir", json!({})).usage(100_000, 10))
            .turn(Reply::text("Listed the tree; nothing else done.")),
    );
    let job = job(&repo);
    let config = AgentConfig {
        max_cost_usd: Some(0.10),
        ..AgentConfig::default()
    };
    let (spender, _) = agent(model(&server, Provider::OpenAi), all_tools(), config);
    let outcome = run(&spender, &job.ctx, "fix").await;
    assert_eq!(outcome.stop, StopReason::BudgetExhausted { budget: Budget::Cost });
    assert_eq!(outcome.summary, "Listed the tree; nothing else done.");
    assert!(outcome.usage.cost_usd.unwrap() > 0.10);

    let server = ScriptedModel::start(Script::new().turn(Reply::text("I ran out of time before starting.")));
    let config = AgentConfig {
        max_wall_time: Some(Duration::ZERO),
        ..AgentConfig::default()
    };
    let (late, _) = agent(model(&server, Provider::OpenAi), all_tools(), config);
    let outcome = run(&late, &job.ctx, "fix").await;
    assert_eq!(
        outcome.stop,
        StopReason::BudgetExhausted {
            budget: Budget::WallTime
        }
    );
    assert_eq!(outcome.summary, "I ran out of time before starting.");
    assert_eq!(outcome.steps, 0);
}

/// A local session that records, in order, when the loop freezes it and when it runs a command.
struct Recording {
    inner: LocalSession,
    log: Arc<Mutex<Vec<&'static str>>>,
}

impl pitcrew::sandbox::Session for Recording {
    fn workspace(&self) -> &std::path::Path {
        self.inner.workspace()
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn exec<'a>(
        &'a self,
        request: pitcrew::sandbox::ExecRequest,
    ) -> BoxFuture<'a, Result<pitcrew::sandbox::ExecOutput, pitcrew::sandbox::SandboxError>> {
        self.log.lock().unwrap().push("exec");
        self.inner.exec(request)
    }

    fn stop<'a>(&'a self) -> BoxFuture<'a, Result<(), pitcrew::sandbox::SandboxError>> {
        self.inner.stop()
    }

    fn quiesce<'a>(&'a self) -> BoxFuture<'a, Result<(), pitcrew::sandbox::SandboxError>> {
        self.log.lock().unwrap().push("quiesce");
        Box::pin(async { Ok(()) })
    }
}

/// The security issue's race: the host's file tools never work on the checkout while the sandbox
/// may run. Every call of a tool that is not a command is preceded by a freeze of the sandbox;
/// commands are not.
#[tokio::test]
async fn the_sandbox_is_quiesced_before_every_file_tool_and_not_before_commands() {
    let repo = repo();
    let server = ScriptedModel::start(
        Script::new()
            .turn(
                Reply::new()
                    .tool_call("read_file", json!({"path": "notes.txt"}))
                    .tool_call("bash", json!({"command": "echo one"})),
            )
            .turn(Reply::new().tool_call("bash", json!({"command": "echo two"})))
            .turn(Reply::new().tool_call("glob", json!({"pattern": "*.txt"})))
            .turn(Reply::text("Done.")),
    );
    let mut job = job(&repo);
    let log = Arc::new(Mutex::new(Vec::new()));
    job.ctx.sandbox = Arc::new(Recording {
        inner: LocalSession::start(repo.path(), LocalOptions::default()).unwrap(),
        log: Arc::clone(&log),
    });
    let (agent, _events) = agent(model(&server, Provider::OpenAi), all_tools(), AgentConfig::default());
    let outcome = run(&agent, &job.ctx, "look around").await;
    assert_eq!(outcome.stop, StopReason::Finished, "{outcome:?}");
    assert_eq!(*log.lock().unwrap(), ["quiesce", "exec", "exec", "quiesce"]);
}
