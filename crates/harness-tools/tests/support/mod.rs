//! What the MCP suites share: a tool call whose text is the answer, a call the server marks
//! failed (`isError`) failing the test.

use harness_core::{CallOptions, Error};
use harness_tools::mcp::McpServer;
use serde_json::Value;

/// The text of a call to `name`, as `options` say; a call the server marks failed
/// (`isError`) fails the test.
pub(crate) async fn call_with(
    server: &McpServer,
    name: &str,
    arguments: Value,
    options: CallOptions,
) -> Result<String, Error> {
    let result = server.call(name, arguments, options).await?;
    assert!(!result.is_error, "{name} failed: {}", result.text());
    Ok(result.text())
}

/// [`call_with`] within the server's own timeout.
pub(crate) async fn call(
    server: &McpServer,
    name: &str,
    arguments: Value,
) -> Result<String, Error> {
    call_with(server, name, arguments, CallOptions::new()).await
}
