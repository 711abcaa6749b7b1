//! The MCP client under the official conformance suite (`cargo xtask conformance`): the
//! runner starts a test server and runs this program with the server's URL as its last
//! argument and the scenario's name in `MCP_CONFORMANCE_SCENARIO`.

use std::time::Duration;

use deepharness::tools::mcp::{
    ElicitationMode, ElicitationRequest, ElicitationResponse, McpError, McpServer,
};
use serde_json::json;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), McpError> {
    let url = std::env::args()
        .next_back()
        .ok_or_else(|| McpError::new("usage: mcp_conformance_client <server url>"))?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    // Under the runner's own 30 s limit, so a stuck exchange fails here with a message
    // that says which request it was.
    let server = McpServer::http(url, &[])?
        .with_timeout(Duration::from_secs(20))
        // A user who accepts every form as offered: the client fills in its defaults.
        .with_elicitation(|request: ElicitationRequest| async move {
            match request.mode {
                ElicitationMode::Form { .. } => ElicitationResponse::Accept(serde_json::Map::new()),
                _ => ElicitationResponse::Decline,
            }
        });
    server.connect().await?;
    match scenario.as_str() {
        "tools_call" => {
            let text = server.call("add_numbers", json!({"a": 2, "b": 3})).await?;
            println!("{text}");
        }
        "sse-retry" | "elicitation-sep1034-client-defaults" => {
            // sse-retry: its tool's reply stream is dropped after a priming event; the answer
            // comes on the GET the client reconnects with. The elicitation scenario's tool
            // asks for a form and checks the defaults came back.
            for tool in server.list_tools().await? {
                let text = server.call(&tool.name, json!({})).await?;
                println!("{}: {text}", tool.name);
            }
        }
        _ => {
            let tools = server.list_tools().await?;
            println!("{} tools", tools.len());
        }
    }
    server.close().await
}
