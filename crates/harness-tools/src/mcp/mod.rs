//! A Model Context Protocol client: a server's tools as ordinary tools.

mod http;
mod protocol;
mod stdio;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use harness_core::{Ctx, Tool, ToolSpec};
use serde_json::{Value, json};
use tokio::sync::OnceCell;

pub use http::HttpTransport;
pub use protocol::{PROTOCOL_VERSION, SUPPORTED_VERSIONS};
pub use stdio::StdioTransport;

/// An MCP failure: of the transport, of the protocol, or a tool call the server reported as
/// failed. Inside an agent run it reaches the model as the call's result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct McpError {
    message: String,
}

impl McpError {
    /// An error saying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// What went wrong.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// How messages reach an MCP server: the seam for a transport this crate does not have
/// (the deprecated HTTP+SSE one, say). Three methods, as in the original.
#[async_trait::async_trait]
pub trait Transport: Send + Sync {
    /// Sends request `method` and returns its `result` object.
    async fn request(&self, method: &str, params: Value) -> Result<Value, McpError>;
    /// Sends notification `method`.
    async fn notify(&self, method: &str, params: Value) -> Result<(), McpError>;
    /// Ends the connection; calling it twice is fine.
    async fn close(&self) -> Result<(), McpError>;
}

/// One tool as the server lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// The tool's name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its JSON Schema, as the server published it.
    pub input_schema: Value,
    /// Whether the server marked it read-only (`annotations.readOnlyHint`).
    pub read_only: bool,
}

/// An MCP server's tools, ready for an agent. Cloning is cheap and the clones share the
/// connection.
///
/// The handshake happens on first use, so [`connect`](McpServer::connect) is optional. Each
/// tool keeps the server's own schema. A tool the server did not mark read-only is gated
/// (`requires_approval`), since it is code in another process this side cannot inspect;
/// widen that with permission rules, or turn it off with
/// [`requires_approval(false)`](McpServer::requires_approval). A failed call (`isError`, or a
/// JSON-RPC error) reaches the model as that call's result.
///
/// ```no_run
/// use harness_tools::mcp::McpServer;
///
/// # async fn demo() -> Result<(), harness_tools::mcp::McpError> {
/// let mcp = McpServer::stdio(["npx", "-y", "@modelcontextprotocol/server-filesystem", "."])?;
/// let tools = mcp.tools().await?;
/// // Agent::builder().tools(tools) ...
/// mcp.close().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpServer {
    // Shared, so the tools handed out and every clone use one connection and one handshake.
    transport: Arc<dyn Transport>,
    roots: Option<Arc<RwLock<Vec<PathBuf>>>>,
    requires_approval: bool,
    initialized: Arc<OnceCell<Value>>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("requires_approval", &self.requires_approval)
            .field("connected", &self.initialized.initialized())
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// A server reached through `transport`.
    pub fn new(transport: impl Transport + 'static) -> Self {
        Self {
            transport: Arc::new(transport),
            roots: None,
            requires_approval: true,
            initialized: Arc::new(OnceCell::new()),
        }
    }

    /// A local server run as a subprocess (program and arguments), started on first use.
    ///
    /// # Errors
    /// [`McpError`] for an empty command.
    pub fn stdio<I, S>(command: I) -> Result<Self, McpError>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        let transport = StdioTransport::new(command.into_iter().map(Into::into).collect())?;
        let roots = transport.roots_handle();
        let mut server = Self::new(transport);
        server.roots = Some(roots);
        Ok(server)
    }

    /// A remote server over streamable HTTP, with extra headers (authentication, say).
    ///
    /// # Errors
    /// [`McpError`] for a header that is not valid HTTP.
    pub fn http(url: impl Into<String>, headers: &[(String, String)]) -> Result<Self, McpError> {
        Ok(Self::new(HttpTransport::new(url, headers)?))
    }

    /// Whether tools the server did not mark read-only are gated (default `true`).
    pub fn requires_approval(mut self, on: bool) -> Self {
        self.requires_approval = on;
        self
    }

    /// Offers the server these directories as roots (stdio servers; the server may ask for
    /// them with `roots/list`).
    pub fn with_roots(self, roots: Vec<PathBuf>) -> Self {
        if let Some(handle) = &self.roots
            && let Ok(mut current) = handle.write()
        {
            *current = roots;
        }
        self
    }

    /// The handshake: `initialize`, then `notifications/initialized`. Runs once; later calls
    /// return at once.
    ///
    /// # Errors
    /// [`McpError`] when the server refuses or answers a protocol version this client does
    /// not speak.
    pub async fn connect(&self) -> Result<(), McpError> {
        self.initialized
            .get_or_try_init(|| async {
                let declares_roots = self
                    .roots
                    .as_ref()
                    .is_some_and(|r| r.read().is_ok_and(|r| !r.is_empty()));
                let capabilities = if declares_roots {
                    json!({"roots": {"listChanged": false}})
                } else {
                    json!({})
                };
                let params = json!({
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": capabilities,
                    "clientInfo": {"name": "deepharness", "version": env!("CARGO_PKG_VERSION")},
                });
                let result = self.transport.request("initialize", params).await?;
                let version = result
                    .get("protocolVersion")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if !SUPPORTED_VERSIONS.contains(&version) {
                    return Err(McpError::new(format!(
                        "MCP server speaks protocol version {version:?}; this client speaks {}",
                        SUPPORTED_VERSIONS.join(", ")
                    )));
                }
                self.transport
                    .notify("notifications/initialized", json!({}))
                    .await?;
                Ok(result)
            })
            .await
            .map(drop)
    }

    /// What the server said about itself in the handshake (`serverInfo`, capabilities, ...).
    pub fn server_info(&self) -> Option<&Value> {
        self.initialized.get()
    }

    /// The server's tools as data, every page of `tools/list`.
    ///
    /// # Errors
    /// [`McpError`] from the handshake or the listing.
    pub async fn list_tools(&self) -> Result<Vec<McpTool>, McpError> {
        self.connect().await?;
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let params = match &cursor {
                Some(cursor) => json!({"cursor": cursor}),
                None => json!({}),
            };
            let page = self.transport.request("tools/list", params).await?;
            for tool in page
                .get("tools")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let text = |key: &str| {
                    tool.get(key)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                tools.push(McpTool {
                    name: text("name"),
                    description: text("description"),
                    input_schema: tool
                        .get("inputSchema")
                        .filter(|s| s.is_object())
                        .cloned()
                        .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
                    read_only: tool
                        .get("annotations")
                        .and_then(|a| a.get("readOnlyHint"))
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                });
            }
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) if !next.is_empty() && cursor.as_deref() != Some(next) => {
                    cursor = Some(next.to_owned());
                }
                _ => break,
            }
        }
        Ok(tools)
    }

    /// The server's tools, ready for an agent.
    ///
    /// # Errors
    /// As [`McpServer::list_tools`].
    pub async fn tools(&self) -> Result<Vec<Arc<dyn Tool>>, McpError> {
        let listed = self.list_tools().await?;
        Ok(listed
            .into_iter()
            .map(|tool| {
                let gated = self.requires_approval && !tool.read_only;
                let spec = ToolSpec::new(tool.name, tool.description, tool.input_schema)
                    .with_requires_approval(gated);
                Arc::new(RemoteTool {
                    server: self.clone(),
                    spec,
                }) as Arc<dyn Tool>
            })
            .collect())
    }

    /// Calls tool `name` with `arguments`; the text of its text content, joined by lines.
    ///
    /// # Errors
    /// [`McpError`] when the server reports the call failed (`isError`), refuses it, or the
    /// transport fails.
    pub async fn call(&self, name: &str, arguments: Value) -> Result<String, McpError> {
        self.connect().await?;
        let arguments = if arguments.is_null() {
            json!({})
        } else {
            arguments
        };
        let result = self
            .transport
            .request("tools/call", json!({"name": name, "arguments": arguments}))
            .await?;
        let text: Vec<&str> = result
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|item| item.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|item| item.get("text").and_then(Value::as_str))
            .collect();
        let text = text.join("\n");
        if result.get("isError").and_then(Value::as_bool) == Some(true) {
            let detail = if text.is_empty() {
                "no detail given"
            } else {
                text.as_str()
            };
            return Err(McpError::new(format!("{name} failed: {detail}")));
        }
        Ok(if text.is_empty() {
            "(no output)".to_owned()
        } else {
            text
        })
    }

    /// Closes the transport (a stdio server is stopped). Calling it twice is fine.
    ///
    /// # Errors
    /// [`McpError`] from the transport.
    pub async fn close(&self) -> Result<(), McpError> {
        self.transport.close().await
    }
}

/// One of an MCP server's tools behind the [`Tool`] trait.
struct RemoteTool {
    server: McpServer,
    spec: ToolSpec,
}

#[async_trait::async_trait]
impl Tool for RemoteTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, arguments: Value, _ctx: Ctx) -> harness_core::Result<String> {
        self.server
            .call(&self.spec.name, arguments)
            .await
            .map_err(|e| harness_core::Error::tool_failed(&self.spec.name, e.to_string()))
    }
}
