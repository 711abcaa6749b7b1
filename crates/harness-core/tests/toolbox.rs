//! `Toolbox`: registration, lookup, schemas in order, the approval gate.

#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::panic,
    clippy::needless_pass_by_value
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use harness_core::{Ctx, Tool, ToolError, ToolSpec, Toolbox, async_trait, tool};
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
struct Dynamic(ToolSpec);

#[async_trait]
impl Tool for Dynamic {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn call(&self, arguments: Value, _ctx: Ctx) -> Result<String, ToolError> {
        Ok(arguments.to_string())
    }
}

fn dynamic(name: &str) -> Dynamic {
    Dynamic(ToolSpec::new(
        name,
        "Echo the arguments.",
        json!({"type": "object", "properties": {}}),
    ))
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
    let other = Dynamic(ToolSpec::new(
        "echo",
        "Something else.",
        json!({"type": "object"}),
    ));
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
        .approve(|_, _| false)
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
    let err = tools.call("nope", json!({})).await.unwrap_err();
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
        tools.schemas().to_vec(),
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
        .call("wire_transfer", json!({"amount_usd": 5, "to": "acme"}))
        .await
        .unwrap();
    assert_eq!(out, "sent $5 to acme");
}

#[tokio::test]
async fn a_sync_approver_rules_on_gated_calls_only() {
    let asked = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&asked);
    let tools = Toolbox::builder()
        .tool(WireTransfer)
        .tool(GetWeather)
        .approve(move |name, arguments| {
            seen.fetch_add(1, Ordering::SeqCst);
            name == "wire_transfer" && arguments["amount_usd"].as_u64().unwrap_or(u64::MAX) <= 1_000
        })
        .build()
        .unwrap();
    assert!(tools.can_ask());

    let ok = tools
        .call("wire_transfer", json!({"amount_usd": 500, "to": "a"}))
        .await
        .unwrap();
    assert_eq!(ok, "sent $500 to a");

    let err = tools
        .call("wire_transfer", json!({"amount_usd": 50_000, "to": "b"}))
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
        .call("get_weather", json!({"city": "Oslo"}))
        .await
        .unwrap();
    assert_eq!(asked.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn an_async_approver_is_awaited() {
    let tools = Toolbox::builder()
        .tool(WireTransfer)
        .approve_async(|name, _arguments| async move {
            tokio::task::yield_now().await;
            name != "wire_transfer"
        })
        .build()
        .unwrap();
    let err = tools
        .call("wire_transfer", json!({"amount_usd": 1, "to": "x"}))
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
