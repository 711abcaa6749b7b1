//! A toolbox served over MCP (`McpToolServer`), reached by this crate's own client: over
//! streamable HTTP on 127.0.0.1, and over an in-memory duplex.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt as _;
use harness_core::agent::{Agent, AgentEvent};
use harness_core::testing::ScriptedModel;
use harness_core::{
    Block, CallOptions, CompletionResponse, Content, Ctx, ErrorKind, Image, LogLevel, Tool,
    ToolCall, ToolError, ToolSpec, ToolUpdate, Toolbox, async_trait, tool,
};
use harness_tools::mcp::{McpContent, McpError, McpNotification, McpServer, McpToolServer};
use serde_json::{Value, json};

/// Add two integers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Always fails.
#[tool]
fn broken() -> Result<String, String> {
    Err("the disk is on fire".to_owned())
}

/// Counts to three, reporting progress and logging.
#[tool]
async fn count(ctx: Ctx) -> String {
    for step in 1..=3_u8 {
        ctx.progress(f64::from(step), Some(3.0), Some("counting"));
    }
    ctx.log(LogLevel::Debug, "too detailed");
    ctx.log(LogLevel::Warning, "counted to three");
    "3".to_owned()
}

/// A tool that answers with text and an image.
struct Picture {
    spec: Arc<ToolSpec>,
}

#[async_trait]
impl Tool for Picture {
    fn spec(&self) -> &Arc<ToolSpec> {
        &self.spec
    }

    async fn call(&self, _arguments: Value, _ctx: Ctx) -> Result<Content, ToolError> {
        Ok(Content::Blocks(vec![
            Block::text("a red dot"),
            Block::Image(Image::from_base64("iVBORw0KGgo=", "image/png")),
        ]))
    }
}

fn toolbox() -> Toolbox {
    let picture = Picture {
        spec: Arc::new(ToolSpec::new(
            "picture",
            "Draws a dot.",
            json!({"type": "object", "properties": {}}),
        )),
    };
    Toolbox::builder()
        .tool(Add)
        .tool(Broken)
        .tool(Count)
        .tool(picture)
        .build()
        .unwrap()
}

/// The text of a call to `name` that succeeded.
async fn call_text(client: &McpServer, name: &str, arguments: Value) -> String {
    let result = client
        .call(name, arguments, CallOptions::new())
        .await
        .unwrap();
    assert!(!result.is_error, "{name} failed: {}", result.text());
    result.text()
}

/// A server on a loopback port, and a client for it.
async fn over_http() -> McpServer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(
        McpToolServer::new(toolbox())
            .with_name("test-tools")
            .serve_http(listener, &[]),
    );
    McpServer::http(url, &[])
        .unwrap()
        .with_timeout(Duration::from_secs(10))
        .with_requires_approval(false)
}

#[tokio::test]
async fn a_served_toolbox_lists_its_tools_with_their_schemas() {
    let client = over_http().await;
    client.connect().await.unwrap();
    assert_eq!(
        client.server_info().unwrap()["serverInfo"]["name"],
        "test-tools"
    );
    let tools = client.list_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["add", "broken", "count", "picture"]);
    let add = &tools[0];
    assert_eq!(add.description, "Add two integers.");
    assert_eq!(add.input_schema, toolbox().specs()[0].parameters);
    client.close().await.unwrap();
}

#[tokio::test]
async fn calls_return_text_images_and_failures_as_results() {
    let client = over_http().await;
    assert_eq!(
        call_text(&client, "add", json!({"a": 2, "b": 3})).await,
        "5"
    );
    // A tool's failure is an `isError` result, its text the error the model would read.
    let failed = client
        .call("broken", json!({}), CallOptions::new())
        .await
        .unwrap();
    assert!(failed.is_error);
    assert!(
        failed.text().contains("the disk is on fire"),
        "{}",
        failed.text()
    );
    // Images survive the trip.
    let picture = client
        .call("picture", json!({}), CallOptions::new())
        .await
        .unwrap();
    assert!(!picture.is_error);
    assert_eq!(picture.content[0], McpContent::Text("a red dot".into()));
    assert!(matches!(&picture.content[1], McpContent::Image(image)
        if image.data() == Some("iVBORw0KGgo=")));
    // Arguments that do not fit, and an unknown tool: protocol errors, named.
    let wrong = client
        .call("add", json!({"a": "two"}), CallOptions::new())
        .await
        .unwrap_err();
    assert_eq!(wrong.kind(), ErrorKind::Mcp, "{wrong:?}");
    assert!(
        wrong.downcast_ref::<McpError>().unwrap().is_refused(),
        "{wrong:?}"
    );
    assert!(wrong.to_string().contains("add"), "{wrong}");
    let unknown = client
        .call("nope", json!({}), CallOptions::new())
        .await
        .unwrap_err();
    assert_eq!(unknown.kind(), ErrorKind::Mcp, "{unknown:?}");
    assert!(
        unknown.to_string().contains("unknown tool: nope"),
        "{unknown}"
    );
    client.close().await.unwrap();
}

#[tokio::test]
async fn progress_and_logs_become_notifications_at_the_clients_level() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let client =
        over_http()
            .await
            .with_notifications(move |_: &str, notification: McpNotification| {
                sink.lock().unwrap().push(notification);
            });
    client.set_log_level("info").await.unwrap();
    assert_eq!(call_text(&client, "count", json!({})).await, "3");
    // Notifications are handled on tasks of their own: give them a moment.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while seen.lock().unwrap().len() < 4 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let seen = seen.lock().unwrap().clone();
    let progress: Vec<f64> = seen
        .iter()
        .filter_map(|n| match n {
            McpNotification::Progress {
                progress, total, ..
            } => {
                assert_eq!(*total, Some(3.0));
                Some(*progress)
            }
            _ => None,
        })
        .collect();
    assert_eq!(progress.len(), 3, "{seen:?}");
    // Below the client's level (debug < info): not sent.
    let logs: Vec<&McpNotification> = seen
        .iter()
        .filter(|n| matches!(n, McpNotification::Log { .. }))
        .collect();
    assert_eq!(
        logs,
        [&McpNotification::Log {
            level: "warning".into(),
            logger: Some("count".into()),
            data: json!("counted to three"),
        }]
    );
    client.close().await.unwrap();
}

#[tokio::test]
async fn an_agent_uses_a_served_toolbox_and_sees_its_progress() {
    let client = over_http().await;
    let model = ScriptedModel::new([
        CompletionResponse::from_tool_calls(vec![ToolCall::new("count", json!({})).with_id("c")]),
        CompletionResponse::text("done"),
    ]);
    let agent = Agent::builder(model)
        .tools(client.tools().await.unwrap())
        .build()
        .unwrap();
    let events: Vec<AgentEvent> = agent.stream("count").map(Result::unwrap).collect().await;
    let updates = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                AgentEvent::ToolUpdate {
                    update: ToolUpdate::Progress { .. },
                    ..
                }
            )
        })
        .count();
    assert_eq!(updates, 3, "{events:?}");
    let Some(AgentEvent::Finished(state)) = events.last() else {
        panic!("{events:?}");
    };
    assert_eq!(state.output_text(), "done");
    client.close().await.unwrap();
}

/// Not a test: the toolbox served over stdio, when this binary is started with
/// `SERVE_STDIO` set (by the test below).
#[test]
fn serve_stdio_when_asked() {
    if std::env::var_os("SERVE_STDIO").is_some() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime
            .block_on(McpToolServer::new(toolbox()).serve_stdio())
            .unwrap();
        std::process::exit(0);
    }
}

#[tokio::test]
async fn a_toolbox_is_served_over_stdio() {
    let me = std::env::current_exe().unwrap();
    let client = McpServer::stdio([
        me.into_os_string(),
        "serve_stdio_when_asked".into(),
        "--exact".into(),
        "--nocapture".into(),
    ])
    .unwrap()
    .with_env("SERVE_STDIO", "1")
    .with_timeout(Duration::from_secs(10));
    let tools = client.list_tools().await.unwrap();
    assert_eq!(tools.len(), 4);
    assert_eq!(
        call_text(&client, "add", json!({"a": 40, "b": 2})).await,
        "42"
    );
    client.close().await.unwrap();
}
