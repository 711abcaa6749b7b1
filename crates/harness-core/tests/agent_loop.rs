//! The agent loop on every path: running, streaming, the tool round, budgets, the context
//! policy and the transcript strings of spec §6.

#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::panic,
    clippy::needless_pass_by_value
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::StreamExt as _;
use harness_core::agent::{
    Agent, AgentEvent, AgentState, Budget, ContextPolicy, Journal, Permissions, RunInput, Step,
    StopReason,
};
use harness_core::testing::{FunctionModel, ScriptedModel, TestModel};
use harness_core::{
    Block, CompletionResponse, Content, Cost, Ctx, Error, ErrorKind, FinishReason, LogLevel,
    Message, Prices, Role, Thinking, TokenUsage, ToolCall, ToolError, ToolUpdate, Toolbox, Usd,
    approve_fn, tool,
};
use serde_json::json;

/// Add two integers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Fails every time.
#[tool]
fn flaky() -> Result<String, String> {
    Err("airline API timed out".to_owned())
}

fn call(name: &str, args: serde_json::Value, id: &str) -> ToolCall {
    ToolCall::new(name, args).with_id(id)
}

fn calls(list: Vec<ToolCall>) -> CompletionResponse {
    CompletionResponse::from_tool_calls(list)
}

fn add_then_answer() -> ScriptedModel {
    ScriptedModel::new([
        calls(vec![call("add", json!({"a": 2, "b": 3}), "1")]),
        CompletionResponse::text("5"),
    ])
}

async fn collect_events(agent: &Agent, input: impl Into<RunInput<'_>>) -> Vec<AgentEvent> {
    agent.stream(input).map(|e| e.unwrap()).collect().await
}

// 1. Running ----------------------------------------------------------------------------

#[tokio::test]
async fn a_run_calls_the_tool_records_the_transcript_and_answers() {
    let model = Arc::new(add_then_answer());
    let agent = Agent::builder(model.clone())
        .system("Be brief.")
        .tool(Add)
        .build()
        .unwrap();
    let state = agent.run("What is 2 + 3?").await.unwrap();
    assert!(state.answered());
    assert_eq!(state.stop_reason, StopReason::Answer);
    assert_eq!(state.output, json!("5"));
    assert_eq!(
        state.messages,
        vec![
            Message::system("Be brief."),
            Message::user("What is 2 + 3?"),
            Message::assistant("").with_tool_calls(vec![call("add", json!({"a": 2, "b": 3}), "1")]),
            Message::tool("5", "add").with_call_id("1"),
            Message::assistant("5"),
        ]
    );
    // The model saw the tool result on its second call, and was offered the tool both times.
    assert_eq!(model.requests()[1].len(), 4);
    assert_eq!(model.offered_tools(), vec![vec!["add".to_owned()]; 2]);
}

#[tokio::test]
async fn input_may_be_a_prompt_messages_or_a_state() {
    let model = Arc::new(ScriptedModel::new(vec![CompletionResponse::text("ok"); 3]));
    let agent = Agent::builder(model.clone()).build().unwrap();
    agent.run("hi").await.unwrap();
    agent
        .run(vec![
            Message::user("a"),
            Message::assistant("b"),
            Message::user("c"),
        ])
        .await
        .unwrap();
    let previous = AgentState::from(vec![Message::user("again")]);
    agent.run(previous).await.unwrap();
    let requests = model.requests();
    assert_eq!(requests[0], vec![Message::user("hi")]);
    assert_eq!(requests[1].len(), 3);
    assert_eq!(requests[2], vec![Message::user("again")]);
}

#[tokio::test]
async fn the_system_prompt_is_added_only_when_the_transcript_has_none() {
    let model = Arc::new(ScriptedModel::new(vec![CompletionResponse::text("ok"); 2]));
    let agent = Agent::builder(model.clone())
        .system("default")
        .build()
        .unwrap();
    agent.run("x").await.unwrap();
    agent
        .run(vec![Message::user("x"), Message::system("mine")])
        .await
        .unwrap();
    assert_eq!(model.requests()[0][0], Message::system("default"));
    assert_eq!(
        model.requests()[1],
        vec![Message::user("x"), Message::system("mine")]
    );
}

#[tokio::test]
async fn total_usage_accumulates_across_runs_and_a_state_reports_its_own() {
    let usage = TokenUsage::new(10, 5, 15).with_cached(4);
    let model = ScriptedModel::new(vec![CompletionResponse::text("ok").with_usage(usage); 3]);
    let agent = Agent::builder(model).build().unwrap();
    let first = agent.run("a").await.unwrap();
    assert_eq!(first.usage, usage);
    let second = agent.run("b").await.unwrap();
    assert_eq!(second.usage, usage);
    // A state run again goes on counting from its own usage.
    let continued = agent.run(first).await.unwrap();
    assert_eq!(continued.usage, usage + usage);
    assert_eq!(agent.total_usage(), usage + usage + usage);
    agent.reset_usage();
    assert_eq!(agent.total_usage(), TokenUsage::default());
}

#[test]
fn run_blocking_drives_the_loop_from_sync_code_with_async_tools_too() {
    /// Add, asynchronously.
    #[tool]
    async fn add_later(a: i64, b: i64) -> i64 {
        tokio::time::sleep(Duration::from_millis(1)).await;
        a + b
    }
    let model = ScriptedModel::new([
        calls(vec![call("add_later", json!({"a": 1, "b": 1}), "1")]),
        CompletionResponse::text("2"),
    ]);
    let agent = Agent::builder(model).tool(AddLater).build().unwrap();
    let state = agent.run_blocking("1 + 1?").unwrap();
    assert_eq!(
        state.messages[2],
        Message::tool("2", "add_later").with_call_id("1")
    );
    assert_eq!(state.output_text(), "2");
}

#[tokio::test]
async fn blocking_methods_inside_a_runtime_say_what_to_use_instead() {
    let agent = Agent::builder(add_then_answer()).build().unwrap();
    let err = agent.run_blocking("x").unwrap_err();
    assert!(err.is_configuration());
    assert!(
        err.to_string().contains("use the async form there"),
        "{err}"
    );
    let err = agent.stream("x").blocking().unwrap_err();
    assert!(err.is_configuration());
    assert!(
        err.to_string().contains("use the async form there"),
        "{err}"
    );
    assert!(agent.stream("x").text().blocking().is_err());
}

// Events (spec §6.4) ----------------------------------------------------------------------

#[tokio::test]
async fn the_event_order_of_a_tool_then_an_answer() {
    let agent = Agent::builder(add_then_answer()).tool(Add).build().unwrap();
    let events = collect_events(&agent, "2 + 3?").await;
    let state = match events.last() {
        Some(AgentEvent::Finished(state)) => state.clone(),
        other => panic!("last event {other:?}"),
    };
    assert_eq!(
        events,
        vec![
            AgentEvent::StepStarted { step: 1 },
            AgentEvent::ToolStarted {
                name: "add".into(),
                arguments: json!({"a": 2, "b": 3}).as_object().cloned().unwrap(),
                call_id: Some("1".into()),
            },
            AgentEvent::ToolFinished {
                name: "add".into(),
                result: "5".into(),
                failed: false,
                call_id: Some("1".into()),
            },
            AgentEvent::StepStarted { step: 2 },
            AgentEvent::TextDelta("5".into()),
            AgentEvent::Finished(state),
        ]
    );
}

fn two_calls_then_answer() -> ScriptedModel {
    ScriptedModel::new([
        calls(vec![
            call("add", json!({"a": 1, "b": 2}), "a"),
            call("flaky", json!({}), "b"),
        ]),
        CompletionResponse::from_blocks(vec![Thinking::new("hm").into(), Block::text("done")]),
    ])
}

fn kinds(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e {
            AgentEvent::StepStarted { step } => format!("step {step}"),
            AgentEvent::TextDelta(t) => format!("text {t}"),
            AgentEvent::ThinkingDelta(t) => format!("thinking {t}"),
            AgentEvent::ToolStarted { name, .. } => format!("start {name}"),
            AgentEvent::ToolFinished { name, failed, .. } => format!("finish {name} {failed}"),
            AgentEvent::Finished(_) => "finished".to_owned(),
            other => format!("{other:?}"),
        })
        .collect()
}

#[tokio::test]
async fn an_async_round_starts_every_call_then_finishes_every_call() {
    let agent = Agent::builder(two_calls_then_answer())
        .tool(Add)
        .tool(Flaky)
        .build()
        .unwrap();
    let events = collect_events(&agent, "go").await;
    assert_eq!(
        kinds(&events),
        [
            "step 1",
            "start add",
            "start flaky",
            "finish add false",
            "finish flaky true",
            "step 2",
            "thinking hm",
            "text done",
            "finished"
        ]
    );
    let failed = events.iter().find_map(|e| match e {
        AgentEvent::ToolFinished {
            result,
            failed: true,
            ..
        } => Some(result.clone()),
        _ => None,
    });
    assert_eq!(failed.as_deref(), Some("Error: airline API timed out"));
}

/// Runs every step as it comes: a journal that records nothing, for a journaled run's
/// order (its tools one at a time).
struct PassThrough;

#[harness_core::async_trait]
impl Journal for PassThrough {
    async fn model_call(
        &self,
        _turn: usize,
        step: Step<'_, harness_core::Result<CompletionResponse>>,
    ) -> harness_core::Result<CompletionResponse> {
        step.await
    }

    async fn tool_call(
        &self,
        _call: &ToolCall,
        step: Step<'_, Result<Content, ToolError>>,
    ) -> Result<Content, ToolError> {
        step.await
    }
}

#[test]
fn a_blocking_round_surrounds_each_call_with_its_own_pair() {
    // `stream(..).blocking()` runs a turn's tools one at a time, as `run_blocking` and a
    // journaled run do. The scripted model serves one run, so each run has its own agent.
    let journal = PassThrough;
    for input in [
        RunInput::from("go"),
        RunInput::from("go").with_journal(&journal),
    ] {
        let agent = Agent::builder(two_calls_then_answer())
            .tool(Add)
            .tool(Flaky)
            .build()
            .unwrap();
        let events: Vec<AgentEvent> = agent
            .stream(input)
            .blocking()
            .unwrap()
            .map(|e| e.unwrap())
            .collect();
        assert_eq!(
            kinds(&events),
            [
                "step 1",
                "start add",
                "finish add false",
                "start flaky",
                "finish flaky true",
                "step 2",
                "thinking hm",
                "text done",
                "finished"
            ]
        );
    }
    let text: Vec<String> = agent_text_blocking();
    assert_eq!(text, ["done"]);
}

#[test]
fn a_watcher_sees_each_tool_start_before_its_approval_is_asked() {
    // A terminal prompt in the approval callback must come after the watcher has shown
    // which call it is about.
    let log = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let approvals = Arc::clone(&log);
    let tools = Toolbox::builder()
        .tool(Add)
        .tool(Flaky)
        .human(approve_fn(move |name, _| {
            approvals.lock().unwrap().push(format!("approve {name}"));
            true
        }))
        .build()
        .unwrap();
    let agent = || {
        Agent::builder(two_calls_then_answer())
            .toolbox(tools.clone())
            .permissions(Permissions::new().ask("add").ask("flaky"))
            .build()
            .unwrap()
    };
    for event in agent().stream("go").blocking().unwrap() {
        if let AgentEvent::ToolStarted { name, .. } = event.unwrap() {
            log.lock().unwrap().push(format!("start {name}"));
        }
    }
    // A blocking round runs one call at a time: each start right before its own approval.
    assert_eq!(
        std::mem::take(&mut *log.lock().unwrap()),
        ["start add", "approve add", "start flaky", "approve flaky"]
    );
    // A journaled round runs one call at a time: each start right before its own approval.
    let journal = PassThrough;
    for event in agent()
        .stream(RunInput::from("go").with_journal(&journal))
        .blocking()
        .unwrap()
    {
        if let AgentEvent::ToolStarted { name, .. } = event.unwrap() {
            log.lock().unwrap().push(format!("start {name}"));
        }
    }
    assert_eq!(
        *log.lock().unwrap(),
        ["start add", "approve add", "start flaky", "approve flaky"]
    );
}

fn agent_text_blocking() -> Vec<String> {
    let agent = Agent::builder(two_calls_then_answer())
        .tool(Add)
        .tool(Flaky)
        .build()
        .unwrap();
    agent
        .stream("go")
        .text()
        .blocking()
        .unwrap()
        .map(|t| t.unwrap())
        .collect()
}

#[tokio::test]
async fn stream_yields_text_alone_and_tools_still_run() {
    let count = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&count);
    let model = FunctionModel::new(move |request| {
        let messages = request.messages;
        seen.fetch_add(1, Ordering::SeqCst);
        if messages.iter().any(|m| m.role == Role::Tool) {
            CompletionResponse::text("391")
        } else {
            calls(vec![call("add", json!({"a": 17, "b": 374}), "1")])
        }
    });
    let agent = Agent::builder(model).tool(Add).build().unwrap();
    let text: Vec<String> = agent
        .stream("17 + 374?")
        .text()
        .map(|t| t.unwrap())
        .collect()
        .await;
    assert_eq!(text, ["391"]);
    assert_eq!(count.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn an_error_ends_the_stream_as_its_last_item() {
    let model = ScriptedModel::new([]).then_fail(Error::configuration("boom"));
    let agent = Agent::builder(model).build().unwrap();
    let items: Vec<_> = agent.stream("x").collect().await;
    assert_eq!(items.len(), 2);
    assert!(matches!(items[0], Ok(AgentEvent::StepStarted { step: 1 })));
    assert!(matches!(&items[1], Err(e) if e.to_string() == "boom"));
}

// 2. The tool round -------------------------------------------------------------------------

#[tokio::test]
async fn a_turns_calls_run_concurrently_and_are_recorded_in_call_order() {
    // Both calls wait on one barrier: run one at a time, the first would wait forever.
    static BARRIER: std::sync::OnceLock<tokio::sync::Barrier> = std::sync::OnceLock::new();
    /// Wait for the other call, then answer after `millis`.
    #[tool]
    async fn rendezvous(label: String, millis: u64) -> String {
        BARRIER
            .get_or_init(|| tokio::sync::Barrier::new(2))
            .wait()
            .await;
        tokio::time::sleep(Duration::from_millis(millis)).await;
        label
    }
    let model = ScriptedModel::new([
        calls(vec![
            call("rendezvous", json!({"label": "slow", "millis": 30}), "1"),
            call("rendezvous", json!({"label": "fast", "millis": 0}), "2"),
        ]),
        CompletionResponse::text("ok"),
    ]);
    let agent = Agent::builder(model).tool(Rendezvous).build().unwrap();
    let state = tokio::time::timeout(Duration::from_secs(10), agent.run("go"))
        .await
        .expect("the calls ran concurrently")
        .unwrap();
    assert_eq!(
        state.messages[2],
        Message::tool("slow", "rendezvous").with_call_id("1")
    );
    assert_eq!(
        state.messages[3],
        Message::tool("fast", "rendezvous").with_call_id("2")
    );
}

#[tokio::test]
async fn failures_and_unknown_tools_reach_the_model_and_the_run_goes_on() {
    let model = Arc::new(ScriptedModel::new([
        calls(vec![
            call("flaky", json!({}), "1"),
            call("subtract", json!({"a": 1}), "2"),
            call("add", json!({"a": "two"}), "3"),
        ]),
        CompletionResponse::text("sorry"),
    ]));
    let agent = Agent::builder(model.clone())
        .tool(Add)
        .tool(Flaky)
        .build()
        .unwrap();
    let state = agent.run("go").await.unwrap();
    assert!(state.answered());
    let results: Vec<String> = state.messages[2..5]
        .iter()
        .map(|m| m.text().into_owned())
        .collect();
    assert_eq!(results[0], "Error: airline API timed out");
    assert_eq!(
        results[1],
        "Error: Unknown tool: subtract. Registered tools: add, flaky."
    );
    assert!(
        results[2]
            .starts_with("Error: invalid arguments for tool 'add': invalid type: string \"two\""),
        "{}",
        results[2]
    );
}

#[tokio::test]
async fn tool_calls_with_no_tools_registered_is_a_configuration_error() {
    let model = ScriptedModel::new([calls(vec![call("add", json!({}), "1")])]);
    let agent = Agent::builder(model).name("helper").build().unwrap();
    let err = agent.run("x").await.unwrap_err();
    assert!(err.is_configuration());
    assert_eq!(
        err.to_string(),
        "helper received tool calls but has no tools registered"
    );
}

#[tokio::test]
async fn a_tool_sees_the_runs_deps_and_live_transcript() {
    struct Tenant(&'static str);
    /// Report the tenant and how much transcript there is.
    #[tool]
    fn whoami(ctx: Ctx) -> String {
        let tenant = ctx.deps::<Tenant>().map_or("none", |t| t.0);
        format!("{tenant} {}", ctx.messages().len())
    }
    let model = ScriptedModel::new([
        calls(vec![call("whoami", json!({}), "1")]),
        CompletionResponse::text("ok"),
    ]);
    let agent = Agent::builder(model)
        .system("s")
        .tool(Whoami)
        .build()
        .unwrap();
    let input =
        RunInput::from(vec![Message::user("a"), Message::user("b")]).with_deps(Tenant("acme"));
    let state = agent.run(input).await.unwrap();
    // system + two user messages + the assistant's request: the live transcript, not the input.
    assert_eq!(state.messages[4].text(), "acme 4");
}

// 3. Budgets ------------------------------------------------------------------------------

#[tokio::test]
async fn spending_the_steps_stops_with_step_budget_and_empty_output() {
    let model = ScriptedModel::new(vec![
        calls(vec![call("add", json!({"a": 1, "b": 1}), "1")]);
        2
    ]);
    let agent = Agent::builder(model)
        .tool(Add)
        .budget(Budget::new().with_steps(2))
        .build()
        .unwrap();
    let events = collect_events(&agent, "loop").await;
    let steps: Vec<usize> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::StepStarted { step } => Some(*step),
            _ => None,
        })
        .collect();
    assert_eq!(steps, [1, 2]);
    let Some(AgentEvent::Finished(state)) = events.last() else {
        panic!()
    };
    assert_eq!(state.stop_reason, StopReason::StepBudget);
    assert_eq!(state.output, json!(""));
    assert!(!state.answered());
}

#[tokio::test]
async fn crossing_the_token_budget_stops_the_run_before_any_tool_runs() {
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&ran);
    let tools = harness_core::Toolbox::builder()
        .tool(Add)
        .human(approve_fn(move |_, _| {
            counter.fetch_add(1, Ordering::SeqCst);
            true
        }))
        .build()
        .unwrap();
    let model =
        ScriptedModel::new([
            CompletionResponse::from_blocks(vec![Block::text("thinking aloud")])
                .with_tool_calls(vec![call("add", json!({"a": 1, "b": 1}), "1")])
                .with_usage(TokenUsage::new(90, 20, 110)),
        ]);
    let agent = Agent::builder(model)
        .name("counter")
        .toolbox(tools)
        .budget(Budget::new().with_total_tokens(100))
        .build()
        .unwrap();
    let state = agent.run("one").await.unwrap();
    assert_eq!(state.stop_reason, StopReason::TokenBudget);
    assert_eq!(state.output, json!("thinking aloud"));
    assert_eq!(state.usage.total_tokens, 110);
    // The turn that crossed is kept, its call answered "not run"; no tool ran.
    let last_two = &state.messages[state.messages.len() - 2..];
    assert_eq!(last_two[0].tool_calls.len(), 1);
    assert_eq!(last_two[1].text(), "Not run: the run's budget is spent.");
    assert_eq!(ran.load(Ordering::SeqCst), 0);
}

/// $10 a million tokens in and out, cache reads at $1, cache writes at $12.50.
fn ten_dollar_prices() -> Prices {
    Prices::per_million(10.0, 10.0)
        .with_cache_read(1.0)
        .with_cache_write(12.5)
}

#[tokio::test]
async fn crossing_the_money_budget_stops_the_run_before_any_tool_runs() {
    // Each turn: 1,000 prompt tokens (800 of them cached), 100 out: $0.002 + $0.0008 + $0.001.
    let turn = |id: &str| {
        CompletionResponse::from_blocks(vec![Block::text("adding")])
            .with_tool_calls(vec![call("add", json!({"a": 1, "b": 1}), id)])
            .with_usage(TokenUsage::new(1_000, 100, 1_100).with_cached(800))
    };
    let model =
        ScriptedModel::new([turn("1"), turn("2"), turn("3")]).with_prices(ten_dollar_prices());
    let agent = Agent::builder(model)
        .tool(Add)
        .budget(Budget::new().with_max_cost(0.005))
        .build()
        .unwrap();
    let state = agent.run("add").await.unwrap();
    assert_eq!(state.stop_reason, StopReason::CostBudget);
    assert_eq!(state.stop_reason.as_str(), "cost_budget");
    assert_eq!(state.output, json!("adding"));
    // The first turn ($0.0038) ran its tool; the second crossed $0.005 and did not.
    let results: Vec<String> = state
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.text().into_owned())
        .collect();
    assert_eq!(results, ["2", "Not run: the run's budget is spent."]);
    assert_eq!(state.cost.total(), Usd::from_dollars(0.0076));
    assert_eq!(state.cost.input, Usd::from_dollars(0.004));
    assert_eq!(state.cost.cache_read, Usd::from_dollars(0.0016));
    assert_eq!(state.cost.output, Usd::from_dollars(0.002));
    assert_eq!(state.cost, state.usage.cost(&ten_dollar_prices()));
    let last_two = &state.messages[state.messages.len() - 2..];
    assert_eq!(last_two[0].tool_calls.len(), 1);
    assert_eq!(last_two[1].text(), "Not run: the run's budget is spent.");
    assert!(
        state
            .output_as::<String>()
            .unwrap_err()
            .to_string()
            .contains("money limit")
    );
    // Saved and read back with its cost.
    let back = AgentState::from_json(&state.to_json()).unwrap();
    assert_eq!(back.cost, state.cost);
    assert_eq!(back.stop_reason, StopReason::CostBudget);
}

#[tokio::test]
async fn a_money_budget_on_an_unpriced_model_fails_closed_before_any_call() {
    let model = Arc::new(ScriptedModel::new([CompletionResponse::text("never")]));
    let agent = Agent::builder(Arc::clone(&model))
        .name("spender")
        .budget(Budget::new().with_max_cost(1.0))
        .build()
        .unwrap();
    let failed = agent.run("hi").await.unwrap_err();
    assert_eq!(failed.kind(), ErrorKind::Configuration);
    let message = failed.to_string();
    assert!(message.contains("test:scripted has no prices"), "{message}");
    assert!(
        message.contains(".prices(Prices::per_million(input, output))"),
        "{message}"
    );
    assert!(message.contains("spender"), "{message}");
    // The state comes back as given, and the model was never asked.
    assert_eq!(failed.state().messages, vec![Message::user("hi")]);
    assert_eq!(model.remaining(), 1);
    // Without a money limit the same model runs, its cost zero.
    let agent = Agent::builder(FunctionModel::new(|_| {
        CompletionResponse::text("ok").with_usage(TokenUsage::new(10, 1, 11))
    }))
    .build()
    .unwrap();
    let state = agent.run("hi").await.unwrap();
    assert_eq!(state.cost, Cost::default());
    assert!(!state.to_json().contains("\"cost\""));
}

/// A run's cost is the sum of its calls' at the model's prices, cache writes included, and a
/// resumed state goes on counting from the cost it was saved with; the money limit counts
/// each run from zero.
#[tokio::test]
async fn the_cost_sums_over_the_run_and_a_resumed_state_goes_on_counting() {
    let model = FunctionModel::new(|request| {
        if request.messages.iter().any(|m| m.role == Role::Tool) {
            CompletionResponse::text("3")
                .with_usage(TokenUsage::new(2_000, 10, 2_010).with_cached(1_000))
        } else {
            calls(vec![call("add", json!({"a": 1, "b": 2}), "1")])
                .with_usage(TokenUsage::new(1_000, 20, 1_020).with_cache_write(1_000))
        }
    })
    .with_prices(ten_dollar_prices());
    let agent = Agent::builder(model)
        .tool(Add)
        .budget(Budget::new().with_max_cost(0.03))
        .build()
        .unwrap();
    let state = agent.run("1 + 2").await.unwrap();
    assert_eq!(state.stop_reason, StopReason::Answer);
    // $0.0125 written + $0.0002 out; then $0.01 in + $0.001 read + $0.0001 out.
    assert_eq!(state.cost.cache_write, Usd::from_dollars(0.0125));
    assert_eq!(state.cost.total(), Usd::from_dollars(0.0238));
    let mut next = state.clone();
    next.messages.push(Message::user("and again"));
    let resumed = agent.run(next).await.unwrap();
    assert_eq!(resumed.stop_reason, StopReason::Answer);
    // One more call (the transcript already holds the tool's result), added to the saved cost.
    assert_eq!(resumed.cost.total(), Usd::from_dollars(0.0238 + 0.0111));
}

/// The budget limits one run: an agent serving many requests never fails request N+1
/// because of requests 1..N; its lifetime usage stays readable.
#[tokio::test]
async fn the_budget_limits_each_run_not_the_agents_life() {
    let model = FunctionModel::new(|_| {
        CompletionResponse::text("ok").with_usage(TokenUsage::new(30, 10, 40))
    });
    let agent = Agent::builder(model)
        .budget(Budget::new().with_total_tokens(50))
        .build()
        .unwrap();
    for _ in 0..5 {
        let state = agent.run("again").await.unwrap();
        assert_eq!(state.stop_reason, StopReason::Answer);
        // The state reports its own run's usage.
        assert_eq!(state.usage.total_tokens, 40);
    }
    assert_eq!(agent.total_usage().total_tokens, 200);
}

#[tokio::test]
async fn input_output_and_tool_call_limits_each_stop_the_run() {
    let turn = || {
        CompletionResponse::from_tool_calls(vec![
            call("add", json!({"a": 1, "b": 1}), "1"),
            call("add", json!({"a": 2, "b": 2}), "2"),
        ])
        .with_usage(TokenUsage::new(30, 10, 40))
    };
    let run = |budget: Budget| {
        let agent = Agent::builder(FunctionModel::new(move |_| turn()))
            .tool(Add)
            .budget(budget)
            .build()
            .unwrap();
        async move { agent.run("go").await.unwrap() }
    };
    let state = run(Budget::new().with_input_tokens(50)).await;
    assert_eq!(state.stop_reason, StopReason::TokenBudget);
    assert_eq!(state.usage.prompt_tokens, 60); // the second turn crossed
    // Ten turns of 10 output tokens are not over 100: the steps run out first.
    let state = run(Budget::new().with_output_tokens(100)).await;
    assert_eq!(state.stop_reason, StopReason::StepBudget);
    let state = run(Budget::new().with_output_tokens(15)).await;
    assert_eq!(state.stop_reason, StopReason::TokenBudget);
    assert_eq!(state.usage.completion_tokens, 20);
    // Three tool calls allowed: the first round (two) runs, the second would pass the limit.
    let state = run(Budget::new().with_tool_calls(3)).await;
    assert_eq!(state.stop_reason, StopReason::ToolCallBudget);
    let results: Vec<_> = state
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.text().to_string())
        .collect();
    assert_eq!(
        results,
        [
            "2",
            "4",
            "Not run: the run's budget is spent.",
            "Not run: the run's budget is spent."
        ]
    );
}

#[test]
fn non_positive_limits_are_refused_when_the_agent_is_built() {
    let err = Agent::builder(TestModel::new())
        .budget(Budget::new().with_steps(0))
        .build()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Configuration);
    assert!(
        err.to_string().contains("steps must be at least 1"),
        "{err}"
    );
    let err = Agent::builder(TestModel::new())
        .context(ContextPolicy::new().with_keep_last(0))
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "ContextPolicy.keep_last must be at least 1, got 0"
    );
}

#[tokio::test]
async fn a_length_finish_is_truncated_not_answered() {
    let model = ScriptedModel::new([
        CompletionResponse::text("half an ans").with_finish_reason(FinishReason::Length)
    ]);
    let agent = Agent::builder(model).build().unwrap();
    let state = agent.run("x").await.unwrap();
    assert_eq!(state.stop_reason, StopReason::Truncated);
    assert_eq!(state.output_text(), "half an ans");
    assert!(!state.answered());
}

// 4. Context policy -------------------------------------------------------------------------

#[tokio::test]
async fn long_tool_results_are_cut_in_the_middle_in_transcript_and_event_alike() {
    /// Return a long text.
    #[tool]
    fn long() -> String {
        format!("{}{}", "a".repeat(50), "z".repeat(50))
    }
    let model = ScriptedModel::new([
        calls(vec![call("long", json!({}), "1")]),
        CompletionResponse::text("ok"),
    ]);
    let agent = Agent::builder(model)
        .tool(Long)
        .context(ContextPolicy::new().with_tool_result_chars(Some(30)))
        .build()
        .unwrap();
    let events = collect_events(&agent, "x").await;
    let expected = format!(
        "{}\n... [70 characters elided] ...\n{}",
        "a".repeat(20),
        "z".repeat(10)
    );
    let finished = events.iter().find_map(|e| match e {
        AgentEvent::ToolFinished { result, .. } => Some(result.clone()),
        _ => None,
    });
    assert_eq!(finished.as_deref(), Some(expected.as_str()));
    let Some(AgentEvent::Finished(state)) = events.last() else {
        panic!()
    };
    assert_eq!(state.messages[2].text(), expected);
}

#[tokio::test]
async fn max_tokens_prunes_what_is_sent_never_what_is_kept() {
    let model = Arc::new(ScriptedModel::new([CompletionResponse::text("ok")]));
    let agent = Agent::builder(model.clone())
        .system("sys")
        .context(ContextPolicy::new().with_max_tokens(20).with_keep_last(2))
        .build()
        .unwrap();
    let history = vec![
        Message::user("x".repeat(200)),
        Message::assistant("y".repeat(200)),
        Message::user("short"),
        Message::assistant("short"),
        Message::user("now"),
    ];
    let state = agent.run(history.clone()).await.unwrap();
    let sent = &model.requests()[0];
    assert_eq!(sent[0], Message::system("sys"));
    assert_eq!(
        sent[1],
        Message::user("[2 earlier messages elided to fit the context budget.]")
    );
    assert_eq!(&sent[2..], &history[2..]);
    assert_eq!(state.messages.len(), 7, "system + five + the answer");
}

// 8. Middleware -----------------------------------------------------------------------------

struct Recorder {
    seen_failures: Arc<AtomicUsize>,
    stop_after: usize,
}

impl harness_core::agent::Middleware for Recorder {
    fn before_model(&self, messages: &[Message]) -> Option<Vec<Message>> {
        let mut view = messages.to_vec();
        view.push(Message::user("(reminder: be brief)"));
        Some(view)
    }

    fn before_tool(&self, mut call: ToolCall) -> Option<ToolCall> {
        if call.name == "flaky" && call.id.as_deref() == Some("refuse") {
            return None;
        }
        if call.name == "add" {
            call.arguments.insert("b".into(), json!(100));
        }
        Some(call)
    }

    fn after_tool(
        &self,
        call: &ToolCall,
        result: Result<String, harness_core::ToolError>,
    ) -> Result<String, harness_core::ToolError> {
        if call.name == "add" {
            // The whole call, as the tool got it (after before_tool's rewrite).
            assert_eq!(
                serde_json::Value::Object(call.arguments.clone()),
                json!({"a": 1, "b": 100})
            );
        }
        match result {
            Err(e) => {
                self.seen_failures.fetch_add(1, Ordering::SeqCst);
                Ok(format!("recovered from {}: {}", call.name, e.model_text()))
            }
            ok => ok,
        }
    }

    fn after_step(&self, step: usize, state: &AgentState) -> bool {
        assert_eq!(state.stop_reason, StopReason::Unfinished);
        step < self.stop_after
    }
}

#[tokio::test]
async fn middleware_hooks_shape_what_is_sent_run_and_recorded() {
    let failures = Arc::new(AtomicUsize::new(0));
    let model = Arc::new(ScriptedModel::new(vec![
        calls(vec![
            call("add", json!({"a": 1, "b": 2}), "1"),
            call("flaky", json!({}), "2"),
            call("flaky", json!({}), "refuse"),
        ]);
        3
    ]));
    let agent = Agent::builder(model.clone())
        .tool(Add)
        .tool(Flaky)
        .middleware(Recorder {
            seen_failures: Arc::clone(&failures),
            stop_after: 2,
        })
        .build()
        .unwrap();
    let state = agent.run("go").await.unwrap();
    // before_model: what is sent, never recorded.
    assert_eq!(
        model.requests()[0].last(),
        Some(&Message::user("(reminder: be brief)"))
    );
    assert!(
        state
            .messages
            .iter()
            .all(|m| m.text() != "(reminder: be brief)")
    );
    // before_tool rewrote an argument and refused a call; after_tool turned a failure.
    assert_eq!(state.messages[2].text(), "101");
    assert_eq!(
        state.messages[3].text(),
        "recovered from flaky: Error: airline API timed out"
    );
    assert!(
        state.messages[4]
            .text()
            .starts_with("Refused before running")
    );
    assert_eq!(failures.load(Ordering::SeqCst), 2);
    // after_step returned false after step 2.
    assert_eq!(state.stop_reason, StopReason::Stopped);
    assert_eq!(model.requests().len(), 2);
    assert!(!state.answered());
}

// 11. Test models ---------------------------------------------------------------------------

#[tokio::test]
async fn test_model_calls_every_tool_then_summarises() {
    let agent = Agent::builder(harness_core::testing::TestModel::new())
        .tool(Add)
        .tool(Flaky)
        .build()
        .unwrap();
    let state = agent.run("go").await.unwrap();
    assert_eq!(
        state.output_text(),
        r#"{"add":"0","flaky":"Error: airline API timed out"}"#
    );
    assert!(state.usage.total_tokens > 0);
    let only = Agent::builder(harness_core::testing::TestModel::new().with_only_tools(["add"]))
        .tool(Add)
        .tool(Flaky)
        .build()
        .unwrap();
    assert_eq!(
        only.run("go").await.unwrap().output_text(),
        r#"{"add":"0"}"#
    );
}

#[tokio::test]
async fn function_model_can_be_async() {
    let model =
        FunctionModel::from_async(|request: harness_core::testing::RequestRecord| async move {
            tokio::time::sleep(Duration::from_millis(1)).await;
            Ok(CompletionResponse::text(format!(
                "{} messages",
                request.messages.len()
            )))
        });
    let agent = Agent::builder(model).build().unwrap();
    assert_eq!(agent.run("x").await.unwrap().output_text(), "1 messages");
}

#[tokio::test]
async fn a_scripted_model_that_runs_out_says_so() {
    let agent = Agent::builder(ScriptedModel::new([])).build().unwrap();
    let err = agent.run("x").await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "ScriptedModel ran out of responses at call 1; add more to the script"
    );
}

/// Counts to three, reporting each step.
#[tool]
async fn count(ctx: Ctx) -> String {
    for step in 1..=3_u8 {
        ctx.progress(f64::from(step), Some(3.0), Some("counting"));
    }
    ctx.log(LogLevel::Info, "counted");
    format!("counted; someone listening: {}", ctx.has_updates())
}

#[tokio::test]
async fn a_tools_updates_are_events_between_its_start_and_finish() {
    let model = || {
        ScriptedModel::new([
            calls(vec![call("count", json!({}), "c1")]),
            CompletionResponse::text("done"),
        ])
    };
    let agent = Agent::builder(model()).tool(Count).build().unwrap();
    let events = collect_events(&agent, "go").await;
    let kinds = kinds(&events);
    let start = kinds.iter().position(|k| k == "start count").unwrap();
    let finish = kinds
        .iter()
        .position(|k| k == "finish count false")
        .unwrap();
    let updates: Vec<&ToolUpdate> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolUpdate {
                name,
                call_id,
                update,
            } => {
                assert_eq!((name.as_str(), call_id.as_deref()), ("count", Some("c1")));
                Some(update)
            }
            _ => None,
        })
        .collect();
    assert_eq!(updates.len(), 4, "{kinds:?}");
    assert_eq!(
        updates[2],
        &ToolUpdate::Progress {
            progress: 3.0,
            total: Some(3.0),
            message: Some("counting".into())
        }
    );
    assert_eq!(
        updates[3],
        &ToolUpdate::Log {
            level: LogLevel::Info,
            message: "counted".into()
        }
    );
    let positions: Vec<usize> = kinds
        .iter()
        .enumerate()
        .filter(|(_, k)| k.starts_with("ToolUpdate"))
        .map(|(i, _)| i)
        .collect();
    assert!(
        positions.iter().all(|&i| start < i && i < finish),
        "{kinds:?}"
    );
    // A run no one watches gives its tools no one to report to.
    let agent = Agent::builder(model()).tool(Count).build().unwrap();
    let state = agent.run("go").await.unwrap();
    let result = state
        .messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    assert_eq!(result.text(), "counted; someone listening: false");
}
