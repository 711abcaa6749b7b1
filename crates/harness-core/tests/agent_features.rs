//! Structured output, human in the loop, permissions, sessions, sub-agents and tracing.

#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::panic,
    clippy::needless_pass_by_value
)]

use harness_core::agent::{
    Agent, AgentState, PendingHumanInput, Permissions, Rule, RunInput, StopReason,
};
use harness_core::testing::{ScriptedModel, TestModel};
use harness_core::{
    CompletionResponse, Ctx, Message, ToolCall, ToolError, Toolbox, approve_fn, tool,
};
use serde_json::{Value, json};
// What the structured-output tests (the `output` feature) use besides.
#[cfg(feature = "output")]
use {
    harness_core::ErrorKind,
    harness_core::agent::{Budget, FINAL_TOOL},
    harness_core::testing::FunctionModel,
    schemars::JsonSchema,
    serde::Deserialize,
    std::sync::Arc,
};

fn call(name: &str, args: Value, id: &str) -> ToolCall {
    ToolCall::new(name, args).with_id(id)
}

fn calls(list: Vec<ToolCall>) -> CompletionResponse {
    CompletionResponse::from_tool_calls(list)
}

// 5. Structured output (the `output` feature) ---------------------------------------------

/// The weather in a city.
#[cfg(feature = "output")]
#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct Weather {
    city: String,
    celsius: i64,
    wind_kmh: f64,
    sky: Sky,
    note: Option<String>,
}

#[cfg(feature = "output")]
#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "lowercase")]
enum Sky {
    Sunny,
    Cloudy,
}

#[cfg(feature = "output")]
#[tokio::test]
async fn the_final_answer_tool_carries_the_output_types_schema() {
    let agent = Agent::builder(TestModel::new())
        .output::<Weather>()
        .build()
        .unwrap();
    let offered = agent.offered_tools();
    assert_eq!(offered.len(), 1);
    assert_eq!(offered[0].name, FINAL_TOOL);
    assert!(
        offered[0].description.contains("Weather"),
        "{}",
        offered[0].description
    );
    assert_eq!(
        offered[0].parameters,
        json!({
            "type": "object",
            "description": "The weather in a city.",
            "properties": {
                "city": {"type": "string"},
                "celsius": {"type": "integer"},
                "wind_kmh": {"type": "number"},
                "sky": {"type": "string", "enum": ["sunny", "cloudy"]},
                "note": {"type": ["string", "null"]}
            },
            "required": ["city", "celsius", "wind_kmh", "sky"]
        })
    );
    // TestModel answers through final_answer with arguments that fit.
    let state = agent.run("Weather in Oslo?").await.unwrap();
    assert!(state.answered());
    let weather: Weather = state.output_as().unwrap();
    assert_eq!(weather.sky, Sky::Sunny);
}

#[cfg(feature = "output")]
#[tokio::test]
async fn reading_a_structured_output_that_never_came_says_why_the_run_stopped() {
    // A model that only ever talks prose spends the step budget without an answer.
    let model = FunctionModel::new(|_| CompletionResponse::text("It is sunny."));
    let agent = Agent::builder(model)
        .output::<Weather>()
        .budget(Budget::new().with_steps(2))
        .build()
        .unwrap();
    let state = agent.run("Weather in Oslo?").await.unwrap();
    assert_eq!(state.stop_reason, StopReason::StepBudget);
    let error = state.output_as::<Weather>().unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Output);
    let message = error.to_string();
    assert!(
        message.contains("there is no answer to read as")
            && message.contains("the step budget ran out first; raise Budget::with_steps"),
        "{message}"
    );
    assert!(
        AgentState::new()
            .output_as::<Weather>()
            .unwrap_err()
            .to_string()
            .ends_with(
                "the run has not finished (it has not run yet, or an error ended it: run the \
                 state again to continue)"
            )
    );
}

#[cfg(feature = "output")]
#[tokio::test]
async fn prose_is_not_an_answer_and_bad_fields_are_reported_all_at_once() {
    let model = Arc::new(ScriptedModel::new([
        CompletionResponse::text("It is sunny and 22 degrees."),
        calls(vec![call(
            FINAL_TOOL,
            json!({"city": "Oslo", "celsius": true, "sky": "foggy"}),
            "1",
        )]),
        calls(vec![call(
            FINAL_TOOL,
            json!({"city": "Oslo", "celsius": 22, "wind_kmh": 5, "sky": "sunny"}),
            "2",
        )]),
    ]));
    let agent = Agent::builder(model.clone())
        .output::<Weather>()
        .build()
        .unwrap();
    let state = agent.run("Weather in Oslo?").await.unwrap();
    assert_eq!(state.stop_reason, StopReason::Answer);
    // An integer is accepted where a float is declared.
    assert_eq!(
        state.output_as::<Weather>().unwrap(),
        Weather {
            city: "Oslo".into(),
            celsius: 22,
            wind_kmh: 5.0,
            sky: Sky::Sunny,
            note: None
        }
    );
    assert_eq!(state.output["wind_kmh"], json!(5));
    let m = &state.messages;
    assert_eq!(m[1], Message::assistant("It is sunny and 22 degrees."));
    assert_eq!(m[2], Message::user("Answer by calling final_answer."));
    let problems = m[4].text();
    assert_eq!(m[4].name.as_deref(), Some(FINAL_TOOL));
    assert_eq!(m[4].tool_call_id.as_deref(), Some("1"));
    // Every bad field in one message: the bool, the missing field, the enum.
    assert!(problems.starts_with("Error: "), "{problems}");
    assert!(
        problems.contains("celsius: true is not of type \"integer\""),
        "{problems}"
    );
    assert!(problems.contains("wind_kmh: missing"), "{problems}");
    assert!(problems.contains("sky: "), "{problems}");
    assert_eq!(problems.matches("; ").count(), 2, "{problems}");
    // The accepted call is answered too, so the transcript stays valid.
    assert_eq!(m.last().unwrap().text(), "Final answer accepted.");
}

#[cfg(feature = "output")]
#[tokio::test]
async fn a_model_that_never_complies_ends_at_the_step_budget() {
    let model = ScriptedModel::new(vec![CompletionResponse::text("prose"); 3]);
    let agent = Agent::builder(model)
        .output::<Weather>()
        .budget(harness_core::Budget::new().with_steps(3))
        .build()
        .unwrap();
    let state = agent.run("x").await.unwrap();
    assert_eq!(state.stop_reason, StopReason::StepBudget);
}

#[cfg(feature = "output")]
#[test]
fn an_output_type_must_be_a_struct() {
    let err = Agent::builder(TestModel::new())
        .output::<Vec<String>>()
        .build()
        .unwrap_err();
    assert!(err.is_configuration());
    assert!(
        err.to_string()
            .contains("must be a struct with named fields"),
        "{err}"
    );
}

// 6. Human in the loop ----------------------------------------------------------------------

/// Send money.
#[tool(requires_approval)]
fn wire_transfer(amount_usd: u64, to: String) -> String {
    format!("sent ${amount_usd} to {to}")
}

/// Look up an invoice.
#[tool]
fn invoice(customer: String) -> String {
    format!("{customer} owes $50000")
}

fn pay_model() -> ScriptedModel {
    ScriptedModel::new([
        calls(vec![
            call("invoice", json!({"customer": "acme"}), "a"),
            call(
                "wire_transfer",
                json!({"amount_usd": 50_000, "to": "acme"}),
                "b",
            ),
        ]),
        CompletionResponse::text("Paid."),
        CompletionResponse::text("Paid again."),
    ])
}

fn pay_agent(model: ScriptedModel) -> Agent {
    Agent::builder(model)
        .name("payer")
        .tool(Invoice)
        .tool(WireTransfer)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_gated_call_pauses_the_whole_turn_and_records_the_unrun_ones() {
    let agent = pay_agent(pay_model());
    let state = agent.run("Pay the Acme invoice").await.unwrap();
    assert_eq!(state.stop_reason, StopReason::Paused);
    assert_eq!(state.output, json!(""));
    assert_eq!(
        state.paused,
        vec![PendingHumanInput {
            call_id: Some("b".into()),
            name: "wire_transfer".into(),
            question: r#"Run wire_transfer with {"amount_usd":50000,"to":"acme"}?"#.into(),
            arguments: json!({"amount_usd": 50000, "to": "acme"})
                .as_object()
                .cloned(),
            approved: None,
        }]
    );
    assert!(state.paused[0].needs_approval());
    // The ordinary call did not run either; it is recorded as not run.
    assert_eq!(
        state.messages.last(),
        Some(
            &Message::tool(
                "Not run: the turn stopped for approval of another call.",
                "invoice"
            )
            .with_call_id("a")
        )
    );
}

#[tokio::test]
async fn approving_runs_the_call_with_the_models_arguments_in_call_order() {
    let agent = pay_agent(pay_model());
    let paused = agent.run("Pay").await.unwrap();
    let state = agent.run(paused.approve(None).unwrap()).await.unwrap();
    assert!(state.answered());
    assert_eq!(state.output_text(), "Paid.");
    let results: Vec<(&str, String)> = state
        .messages
        .iter()
        .filter(|m| m.tool_call_id.is_some())
        .map(|m| (m.tool_call_id.as_deref().unwrap(), m.text().into_owned()))
        .collect();
    assert_eq!(
        results,
        vec![
            (
                "a",
                "Not run: the turn stopped for approval of another call.".to_owned()
            ),
            ("b", "sent $50000 to acme".to_owned()),
        ]
    );
}

#[tokio::test]
async fn rejecting_tells_the_model_and_undecided_resumes_are_refused() {
    let agent = pay_agent(pay_model());
    let paused = agent.run("Pay").await.unwrap();
    let err = agent.run(paused.clone()).await.unwrap_err();
    assert!(err.is_configuration());
    assert_eq!(
        err.to_string(),
        "payer is paused on wire_transfer; call state.approve() or state.reject() before running it again"
    );
    let state = agent.run(paused.reject(Some("b")).unwrap()).await.unwrap();
    let denied = state
        .messages
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("b"))
        .unwrap();
    assert_eq!(denied.text(), "Denied by the user.");
}

#[tokio::test]
async fn an_approval_callback_decides_during_the_run_instead_of_pausing() {
    let tools = Toolbox::builder()
        .tool(Invoice)
        .tool(WireTransfer)
        .human(approve_fn(|_, args| {
            args["amount_usd"].as_u64().is_some_and(|a| a <= 1_000)
        }))
        .build()
        .unwrap();
    let agent = Agent::builder(pay_model()).toolbox(tools).build().unwrap();
    let state = agent.run("Pay").await.unwrap();
    assert!(state.answered());
    assert_eq!(
        state.messages[3].text(),
        "Error: call to 'wire_transfer' was not approved"
    );
    assert_eq!(state.messages[2].text(), "acme owes $50000");
}

/// Ask the operator something.
#[tool]
fn confirm(question: String) -> Result<String, ToolError> {
    Err(ToolError::needs_human(question))
}

#[tokio::test]
async fn a_question_pauses_and_the_appended_answer_becomes_the_result() {
    let model = ScriptedModel::new([
        calls(vec![
            call("confirm", json!({"question": "Proceed?"}), "q"),
            call("invoice", json!({"customer": "acme"}), "i"),
        ]),
        CompletionResponse::text("Proceeding."),
    ]);
    let agent = Agent::builder(model)
        .tool(Confirm)
        .tool(Invoice)
        .build()
        .unwrap();
    let mut state = agent.run("Do it").await.unwrap();
    assert_eq!(state.stop_reason, StopReason::Paused);
    let pending = state.paused[0].clone();
    assert_eq!(
        (pending.name.as_str(), pending.question.as_str()),
        ("confirm", "Proceed?")
    );
    assert!(!pending.needs_approval());
    // The other call ran; the question has no result until the human answers.
    assert_eq!(state.messages.last().unwrap().text(), "acme owes $50000");
    state
        .messages
        .push(Message::tool("yes, proceed", pending.name).with_call_id("q"));
    let state = agent.run(state).await.unwrap();
    assert!(state.answered());
}

// 9. Sessions -------------------------------------------------------------------------------

#[tokio::test]
async fn a_paused_run_survives_json_and_resumes() {
    let agent = pay_agent(pay_model());
    let paused = agent.run("Pay").await.unwrap();
    let saved = paused.to_json();
    let loaded = AgentState::from_json(&saved).unwrap();
    assert_eq!(loaded, paused);
    let state = agent.run(loaded.approve(None).unwrap()).await.unwrap();
    assert_eq!(state.output_text(), "Paid.");
    let err = AgentState::from_json(r#"{"messages": [], "plan": 1}"#).unwrap_err();
    assert!(
        err.to_string().starts_with("unknown state keys: plan."),
        "{err}"
    );
}

// 7. Permissions ----------------------------------------------------------------------------

/// Run a shell command.
#[tool(requires_approval)]
fn run_command(command: String) -> String {
    format!("ran {command}")
}

fn shell_policy() -> Permissions {
    Permissions::new()
        .allow(Rule::new("run_command").arg("command", "git log*"))
        .ask(&RunCommand)
        .deny(Rule::new("run_command").arg("command", "*rm -rf*"))
}

#[tokio::test]
async fn a_policy_allows_git_log_denies_rm_rf_and_asks_about_the_rest() {
    let model = ScriptedModel::new([
        calls(vec![
            call(
                "run_command",
                json!({"command": "git log --oneline -3"}),
                "1",
            ),
            call("run_command", json!({"command": "cd / && rm -rf tmp"}), "2"),
        ]),
        calls(vec![call(
            "run_command",
            json!({"command": "git push"}),
            "3",
        )]),
    ]);
    let agent = Agent::builder(model)
        .tool(RunCommand)
        .permissions(shell_policy())
        .build()
        .unwrap();
    let state = agent.run("tidy up").await.unwrap();
    let m = &state.messages;
    // Allowed although the tool is gated; denied without pausing; recorded in call order.
    assert_eq!(m[2].text(), "ran git log --oneline -3");
    assert_eq!(m[3].text(), "Denied by policy: this call is not permitted.");
    // The next turn's call matches only the ask rule: it pauses.
    assert_eq!(state.stop_reason, StopReason::Paused);
    assert_eq!(state.paused[0].call_id.as_deref(), Some("3"));
}

#[test]
fn a_gate_naming_an_unregistered_tool_is_refused_at_build() {
    let err = Agent::builder(TestModel::new())
        .tool(RunCommand)
        .permissions(
            Permissions::new()
                .deny("run_comand")
                .allow("not_mine")
                .ask("run_*"),
        )
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "permission rules deny or ask about unregistered tools: run_comand. Registered tools: \
         run_command. A rule that names no tool matches no call, so it would silently allow \
         what it was written to stop"
    );
}

#[tokio::test]
async fn with_no_matching_rule_the_tools_own_gate_stands() {
    let agent = Agent::builder(pay_model())
        .tool(Invoice)
        .tool(WireTransfer)
        .permissions(Permissions::new().allow("run_*"))
        .build()
        .unwrap();
    let state = agent.run("Pay").await.unwrap();
    assert_eq!(state.stop_reason, StopReason::Paused);
}

// 10. Agents as tools -----------------------------------------------------------------------

struct TenantName(&'static str);

/// Which tenant is this?
#[tool]
fn tenant(ctx: Ctx) -> String {
    ctx.deps::<TenantName>().map_or("none", |t| t.0).to_owned()
}

#[test]
fn a_sub_agent_tool_is_named_after_the_agent_and_described_by_its_prompt() {
    let plain = Agent::builder(TestModel::new())
        .name("summariser")
        .build()
        .unwrap()
        .as_tool();
    let spec = harness_core::Tool::spec(&plain);
    assert_eq!(spec.name, "summariser");
    assert_eq!(
        spec.description,
        "Delegate a task to the 'summariser' agent."
    );
    let prompted = Agent::builder(TestModel::new())
        .name("translator")
        .system("Translate the input into French.")
        .build()
        .unwrap()
        .as_tool();
    let spec = harness_core::Tool::spec(&prompted);
    assert_eq!(spec.name, "translator");
    assert_eq!(spec.description, "Translate the input into French.");
}

#[tokio::test]
async fn a_sub_agent_is_a_tool_and_inherits_the_callers_deps() {
    let researcher = Agent::builder(ScriptedModel::new([
        calls(vec![call("tenant", json!({}), "t")]),
        CompletionResponse::text("the tenant is acme"),
    ]))
    .name("researcher")
    .tool(Tenant)
    .build()
    .unwrap();
    let tool = researcher
        .as_tool()
        .with_name("research")
        .with_description("Research a question.");
    assert_eq!(harness_core::Tool::spec(&tool).name, "research");
    assert_eq!(
        harness_core::Tool::spec(&tool).description,
        "Research a question."
    );
    assert_eq!(
        harness_core::Tool::spec(&tool).parameters,
        json!({
            "type": "object",
            "properties": {"input": {"type": "string", "description": "What to ask the agent, in full."}},
            "required": ["input"]
        })
    );
    let lead = Agent::builder(ScriptedModel::new([
        calls(vec![call("research", json!({"input": "who?"}), "r")]),
        CompletionResponse::text("done"),
    ]))
    .tool(tool)
    .build()
    .unwrap();
    let state = lead
        .run(RunInput::from("find out").with_deps(TenantName("acme")))
        .await
        .unwrap();
    assert_eq!(state.messages[2].text(), "the tenant is acme");
    assert_eq!(
        researcher.total_usage(),
        harness_core::TokenUsage::default()
    );
}

#[tokio::test]
async fn a_sub_agent_that_does_not_answer_is_a_failed_call() {
    let quitter = Agent::builder(ScriptedModel::new([calls(vec![call("x", json!({}), "1")])]))
        .name("quitter")
        .tool(Tenant)
        .budget(harness_core::Budget::new().with_steps(1))
        .build()
        .unwrap();
    let err = harness_core::Tool::call(
        &quitter.as_tool().with_name("q").with_description("d"),
        json!({"input": "go"}),
        Ctx::new(),
    )
    .await
    .unwrap_err();
    assert_eq!(
        err.model_text(),
        "Error: the quitter agent stopped without an answer (step_budget)"
    );
}
