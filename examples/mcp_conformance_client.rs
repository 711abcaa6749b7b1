//! The MCP client under the official conformance suite (`cargo xtask conformance`): the
//! runner starts a test server and runs this program with the server's URL as its last
//! argument and the scenario's name in `MCP_CONFORMANCE_SCENARIO`.

use std::time::Duration;

use deepharness::tools::mcp::{McpError, McpServer};
use serde_json::json;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), McpError> {
    let url = std::env::args()
        .next_back()
        .ok_or_else(|| McpError::new("usage: mcp_conformance_client <server url>"))?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    // Under the runner's own 30 s limit, so a stuck exchange fails here with a message
    // that says which request it was.
    let server = McpServer::http(url, &[])?.with_timeout(Duration::from_secs(20));
    server.connect().await?;
    match scenario.as_str() {
        "tools_call" => {
            let text = server.call("add_numbers", json!({"a": 2, "b": 3})).await?;
            println!("{text}");
        }
        "sse-retry" => {
            // Its tool's reply stream is dropped after a priming event; the answer comes on
            // the GET the client reconnects with.
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
