//! `Toolbox`: registration, lookup, schemas in order, the approval gate.

#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::panic,
    clippy::needless_pass_by_value
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use harness_core::{
    CallOptions, Content, Ctx, ElicitationRequest, ElicitationResponse, Human, Tool, ToolError,
    ToolSpec, Toolbox, approve_fn, async_trait, tool,
};
use serde_json::{Value, json};

/// Look up the current weather for a city.
#[tool]
fn get_weather(city: String) -> String {
    format!("It is 22°C and sunny in {city}.")
}

/// Send money.
#[tool(requires_approval)]
fn wire_transfer(amount_usd: u64, to: String) -> String {
    format!("sent ${amount_usd} to {to}")
}

mod elsewhere {
    /// A different tool that happens to share the name.
    #[harness_core::tool]
    pub(crate) fn get_weather(city: String) -> String {
        format!("rain in {city}")
    }
}

/// A tool built by hand, as an MCP client builds its tools.
struct Dynamic(Arc<ToolSpec>);

#[async_trait]
impl Tool for Dynamic {
    fn spec(&self) -> &Arc<ToolSpec> {
        &self.0
    }
    async fn call(&self, arguments: Value, _ctx: Ctx) -> Result<Content, ToolError> {
        Ok(arguments.to_string().into())
    }
}

fn dynamic(name: &str) -> Dynamic {
    Dynamic(Arc::new(ToolSpec::new(
        name,
        "Echo the arguments.",
        json!({"type": "object", "properties": {}}),
    )))
}

#[test]
fn registering_the_same_tool_twice_is_fine() {
    let shared: Arc<dyn Tool> = Arc::new(dynamic("echo"));
    let tools = Toolbox::builder()
        .tool(GetWeather)
        .tool(GetWeather)
        .tool(dynamic("echo"))
        .tool(dynamic("echo"))
        .tool(Arc::clone(&shared))
        .build()
        .unwrap();
    assert_eq!(tools.names().collect::<Vec<_>>(), ["get_weather", "echo"]);
    assert_eq!(tools.len(), 2);
}

#[test]
fn a_different_tool_under_a_taken_name_says_how_to_rename() {
    let err = Toolbox::builder()
        .tool(GetWeather)
        .tool(elsewhere::GetWeather)
        .build()
        .unwrap_err();
    assert!(err.is_configuration());
    assert_eq!(
        err.to_string(),
        "a different tool named 'get_weather' is already registered; rename one with \
         #[tool(name = \"...\")]"
    );
    // Same type, different spec: also a different tool.
    let other = Dynamic(Arc::new(ToolSpec::new(
        "echo",
        "Something else.",
        json!({"type": "object"}),
    )));
    let err = Toolbox::builder()
        .tool(dynamic("echo"))
        .tool(other)
        .build()
        .unwrap_err();
    assert!(err.is_configuration());
}

#[test]
fn a_toolbox_grows_through_its_builder_keeping_its_approver() {
    let tools = Toolbox::builder()
        .tool(GetWeather)
        .human(approve_fn(|_, _| false))
        .build()
        .unwrap()
        .into_builder()
        .tool(dynamic("echo"))
        .build()
        .unwrap();
    assert_eq!(tools.names().collect::<Vec<_>>(), ["get_weather", "echo"]);
    assert!(tools.can_ask());
    let err = Toolbox::builder()
        .tool(GetWeather)
        .build()
        .unwrap()
        .into_builder()
        .tool(elsewhere::GetWeather)
        .build()
        .unwrap_err();
    assert!(err.is_configuration());
}

#[tokio::test]
async fn an_unknown_name_is_a_typed_not_found_error() {
    let tools = Toolbox::builder()
        .tool(GetWeather)
        .tool(WireTransfer)
        .build()
        .unwrap();
    let err = tools.get("get_wether").unwrap_err();
    assert!(err.is_not_found() && err.tool() == Some("get_wether"));
    assert_eq!(
        err.to_string(),
        "Unknown tool: get_wether. Registered tools: get_weather, wire_transfer."
    );
    let err = tools
        .call("nope", json!({}), CallOptions::new())
        .await
        .unwrap_err();
    assert!(err.is_not_found());
    assert_eq!(
        Toolbox::new().get("x").unwrap_err().to_string(),
        "Unknown tool: x. No tools are registered."
    );
}

#[test]
fn schemas_come_in_registration_order_ready_for_a_provider() {
    let tools = Toolbox::builder()
        .tool(WireTransfer)
        .tool(GetWeather)
        .tool(Arc::new(dynamic("echo")) as Arc<dyn Tool>)
        .build()
        .unwrap();
    assert_eq!(
        tools
            .specs()
            .iter()
            .map(|spec| spec.to_schema())
            .collect::<Vec<_>>(),
        vec![
            json!({
                "name": "wire_transfer",
                "description": "Send money.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "amount_usd": {"type": "integer", "minimum": 0},
                        "to": {"type": "string"}
                    },
                    "required": ["amount_usd", "to"]
                }
            }),
            json!({
                "name": "get_weather",
                "description": "Look up the current weather for a city.",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"]
                }
            }),
            json!({
                "name": "echo",
                "description": "Echo the arguments.",
                "parameters": {"type": "object", "properties": {}}
            }),
        ]
    );
    assert_eq!(tools.specs().len(), 3);
    assert!(tools.get("wire_transfer").unwrap().requires_approval);
    assert!(tools.contains("echo") && !tools.contains("Echo"));
}

#[tokio::test]
async fn without_an_approver_nothing_is_gated_at_the_toolbox() {
    let tools = Toolbox::builder().tool(WireTransfer).build().unwrap();
    assert!(!tools.can_ask());
    let out = tools
        .call(
            "wire_transfer",
            json!({"amount_usd": 5, "to": "acme"}),
            CallOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(out.text(), "sent $5 to acme");
}

#[tokio::test]
async fn a_sync_approver_rules_on_gated_calls_only() {
    let asked = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&asked);
    let tools = Toolbox::builder()
        .tool(WireTransfer)
        .tool(GetWeather)
        .human(approve_fn(move |name, arguments| {
            seen.fetch_add(1, Ordering::SeqCst);
            name == "wire_transfer" && arguments["amount_usd"].as_u64().unwrap_or(u64::MAX) <= 1_000
        }))
        .build()
        .unwrap();
    assert!(tools.can_ask());

    let ok = tools
        .call(
            "wire_transfer",
            json!({"amount_usd": 500, "to": "a"}),
            CallOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(ok.text(), "sent $500 to a");

    let err = tools
        .call(
            "wire_transfer",
            json!({"amount_usd": 50_000, "to": "b"}),
            CallOptions::new(),
        )
        .await
        .unwrap_err();
    assert!(err.is_denied());
    assert_eq!(err.to_string(), "call to 'wire_transfer' was not approved");
    assert_eq!(err.tool(), Some("wire_transfer"));
    assert_eq!(
        err.arguments(),
        Some(&json!({"amount_usd": 50_000, "to": "b"}))
    );

    // Not gated: the approver is not consulted.
    tools
        .call("get_weather", json!({"city": "Oslo"}), CallOptions::new())
        .await
        .unwrap();
    assert_eq!(asked.load(Ordering::SeqCst), 2);
}

/// An approver that awaits before it rules, as one asking over a network would.
struct AsyncApprover;

#[async_trait]
impl Human for AsyncApprover {
    async fn approve(&self, name: &str, _arguments: &Value) -> bool {
        tokio::task::yield_now().await;
        name != "wire_transfer"
    }
}

#[tokio::test]
async fn an_async_approver_is_awaited() {
    let tools = Toolbox::builder()
        .tool(WireTransfer)
        .human(AsyncApprover)
        .build()
        .unwrap();
    let err = tools
        .call(
            "wire_transfer",
            json!({"amount_usd": 1, "to": "x"}),
            CallOptions::new(),
        )
        .await
        .unwrap_err();
    assert!(err.is_denied());
}

#[test]
fn a_toolbox_is_cheap_to_clone_and_debug_prints_its_names() {
    let tools = Toolbox::builder().tool(GetWeather).build().unwrap();
    let copy = tools.clone();
    assert!(Arc::ptr_eq(
        tools.tool("get_weather").unwrap(),
        copy.tool("get_weather").unwrap()
    ));
    assert_eq!(
        format!("{copy:?}"),
        r#"Toolbox { tools: ["get_weather"], can_ask: false }"#
    );
}

/// A person at a keyboard, scripted: refuses wires, answers forms with an account, and
/// remembers what it was asked.
#[derive(Default)]
struct Operator {
    asked: std::sync::Mutex<Vec<ElicitationRequest>>,
}

#[async_trait]
impl Human for Operator {
    async fn approve(&self, name: &str, _arguments: &Value) -> bool {
        name != "wire_transfer"
    }
    async fn ask(&self, question: ElicitationRequest) -> ElicitationResponse {
        self.asked.lock().unwrap().push(question);
        let mut fields = serde_json::Map::new();
        fields.insert("account".into(), json!("ops"));
        ElicitationResponse::Accept(fields)
    }
}

/// Bill the account a human names; says which call it was.
#[tool]
async fn bill(ctx: &Ctx) -> Result<String, ToolError> {
    let form = json!({"type": "object", "properties": {"account": {"type": "string"}}});
    let answer = ctx
        .ask(ElicitationRequest::form(
            ctx.tool_name(),
            "Which account?",
            form,
        ))
        .await?;
    let call = ctx.call_id().unwrap_or("-");
    Ok(match answer {
        ElicitationResponse::Accept(fields) => format!("{call}: billed {}", fields["account"]),
        other => format!("{call}: not billed ({other:?})"),
    })
}

/// A human who approves everything and answers no question (`ask`'s default declines).
struct Declines;

#[async_trait]
impl Human for Declines {
    async fn approve(&self, _: &str, _: &Value) -> bool {
        true
    }
}

#[tokio::test]
async fn a_human_rules_on_gated_calls_and_answers_the_questions_tools_ask() {
    let operator = Arc::new(Operator::default());
    let tools = Toolbox::builder()
        .tool(Bill)
        .tool(WireTransfer)
        .human(Arc::clone(&operator))
        .build()
        .unwrap();
    assert!(tools.can_ask());
    assert_eq!(
        tools
            .call("bill", json!({}), CallOptions::new())
            .await
            .unwrap()
            .text(),
        r#"-: billed "ops""#
    );
    let asked = operator.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].source, "bill");
    assert_eq!(asked[0].message, "Which account?");
    let refused = tools
        .call(
            "wire_transfer",
            json!({"amount_usd": 1, "to": "x"}),
            CallOptions::new(),
        )
        .await
        .unwrap_err();
    assert!(refused.is_denied(), "{refused}");
    // A context that brings its own human keeps it: the narrower wins.
    let own = Ctx::new().with_human(Declines);
    assert_eq!(
        tools
            .call("bill", json!({}), CallOptions::new().with_ctx(own))
            .await
            .unwrap()
            .text(),
        "-: not billed (Decline)"
    );
}

#[tokio::test]
async fn with_no_human_a_question_pauses_the_run_and_the_call_id_reaches_the_tool() {
    use harness_core::agent::{Agent, StopReason};
    use harness_core::testing::ScriptedModel;
    use harness_core::{CompletionResponse, Message, ToolCall};

    let model = ScriptedModel::new([
        CompletionResponse::from_tool_calls(vec![ToolCall::new("bill", json!({})).with_id("c-9")]),
        CompletionResponse::text("paused, then answered"),
    ]);
    let agent = Agent::builder(model).tool(Bill).build().unwrap();
    let state = agent.run("bill it").await.unwrap();
    assert_eq!(state.stop_reason, StopReason::Paused);
    assert_eq!(state.paused[0].question, "Which account?");
    assert_eq!(state.paused[0].call_id.as_deref(), Some("c-9"));
    assert!(!state.paused[0].needs_approval());
    // The answer comes later, as the call's result.
    let mut state = state;
    state
        .messages
        .push(Message::tool("ops", "bill").with_call_id("c-9"));
    let state = agent.run(state).await.unwrap();
    assert_eq!(state.output_text(), "paused, then answered");

    // The same agent with a human on its toolbox asks during the call.
    let operator = Arc::new(Operator::default());
    let model = ScriptedModel::new([
        CompletionResponse::from_tool_calls(vec![ToolCall::new("bill", json!({})).with_id("c-10")]),
        CompletionResponse::text("billed"),
    ]);
    let tools = Toolbox::builder()
        .tool(Bill)
        .human(Arc::clone(&operator))
        .build()
        .unwrap();
    let agent = Agent::builder(model).toolbox(tools).build().unwrap();
    let state = agent.run("bill it").await.unwrap();
    assert_eq!(state.stop_reason, StopReason::Answer);
    let result = state
        .messages
        .iter()
        .find(|m| m.role == harness_core::Role::Tool)
        .unwrap();
    assert_eq!(result.text(), r#"c-10: billed "ops""#);
    assert_eq!(operator.asked.lock().unwrap().len(), 1);
}
