//! Serving a [`Toolbox`] as an MCP server, over stdio or streamable HTTP: its tools listed
//! with the schemas their `#[tool]` definitions give, each call run through the toolbox (its
//! gate and approval included), a tool's failure an `isError` result, its progress and log
//! messages the protocol's notifications.

// Logging is deprecated for the 2026 protocol (SEP-2577); clients of 2025-11-25 use it.
#![allow(deprecated)]

use std::sync::{Arc, RwLock};

use harness_core::{
    Block, CallOptions, Content, Ctx, ImageSource, LogLevel, ToolErrorKind, ToolUpdate, Toolbox,
};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    Implementation, ListToolsResult, LoggingLevel, LoggingMessageNotificationParam,
    PaginatedRequestParams, ProgressNotificationParam, ResourceContents, ServerCapabilities,
    ServerInfo, SetLevelRequestParams, Tool as McpToolSpec,
};

use rmcp::service::{RequestContext, RoleServer};
use rmcp::{Peer, ServerHandler};
use serde_json::Value;

use super::McpError;

/// A [`Toolbox`] served over MCP.
///
/// ```no_run
/// use harness_core::{Toolbox, tool};
/// use harness_tools::mcp::McpToolServer;
///
/// /// Add two integers.
/// #[tool]
/// fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let toolbox = Toolbox::builder().tool(Add).build()?;
/// // Until the client closes stdin.
/// McpToolServer::new(toolbox).with_name("calculator").serve_stdio().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpToolServer {
    toolbox: Toolbox,
    name: String,
    version: String,
    instructions: Option<String>,
}

impl std::fmt::Debug for McpToolServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpToolServer")
            .field("name", &self.name)
            .field("tools", &self.toolbox.len())
            .finish_non_exhaustive()
    }
}

impl McpToolServer {
    /// A server for `toolbox`'s tools, named `deepharness` until
    /// [`with_name`](Self::with_name) says otherwise.
    pub fn new(toolbox: Toolbox) -> Self {
        Self {
            toolbox,
            name: "deepharness".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            instructions: None,
        }
    }

    /// The name (and version) the server gives in the handshake.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The version the server gives in the handshake (default: this crate's).
    pub fn with_version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// Instructions for the client's model on using the tools, sent in the handshake.
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Serves one client over this process's stdin and stdout until the client closes
    /// stdin. Nothing else may write to stdout meanwhile.
    ///
    /// # Errors
    /// An [`Mcp`](harness_core::ErrorKind::Mcp) error when the handshake fails, its
    /// [`McpError`] the source.
    pub async fn serve_stdio(self) -> harness_core::Result<()> {
        let (read, write) = rmcp::transport::stdio();
        self.serve_io(read, write).await
    }

    /// Serves one client over a pair of byte streams (a socket, a pipe, an in-memory
    /// duplex for tests) until it hangs up.
    ///
    /// # Errors
    /// An [`Mcp`](harness_core::ErrorKind::Mcp) error when the handshake fails, its
    /// [`McpError`] the source.
    pub async fn serve_io<R, W>(self, read: R, write: W) -> harness_core::Result<()>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let running = rmcp::serve_server(self.handler(), (read, write))
            .await
            .map_err(|e| McpError::protocol(format!("the MCP handshake failed: {e}")))?;
        running
            .waiting()
            .await
            .map_err(|e| McpError::protocol(format!("the MCP server stopped: {e}")))?;
        Ok(())
    }

    /// Serves clients over streamable HTTP on `listener`, at any path, until the returned
    /// future is dropped. Each client gets a session of its own. Only requests whose `Host`
    /// is a loopback name are accepted (a guard against DNS rebinding); a server reached
    /// under another name lists it in `allowed_hosts`. Feature `mcp-server-http`.
    ///
    /// ```no_run
    /// # use harness_core::Toolbox;
    /// # use harness_tools::mcp::McpToolServer;
    /// # async fn demo(toolbox: Toolbox) -> Result<(), Box<dyn std::error::Error>> {
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:8000").await?;
    /// McpToolServer::new(toolbox).serve_http(listener, &[]).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// An [`Mcp`](harness_core::ErrorKind::Mcp) error when the listener fails to accept
    /// connections, its [`McpError`] the source.
    #[cfg(feature = "mcp-server-http")]
    pub async fn serve_http(
        self,
        listener: tokio::net::TcpListener,
        allowed_hosts: &[&str],
    ) -> harness_core::Result<()> {
        use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
        use rmcp::transport::streamable_http_server::{
            StreamableHttpServerConfig, StreamableHttpService,
        };

        let mut config = StreamableHttpServerConfig::default();
        config
            .allowed_hosts
            .extend(allowed_hosts.iter().map(|host| (*host).to_owned()));
        let handler = self.handler();
        let service: StreamableHttpService<ToolboxHandler, LocalSessionManager> =
            StreamableHttpService::new(move || Ok(handler.fresh()), Arc::default(), config);
        loop {
            let (stream, _) = listener
                .accept()
                .await
                .map_err(|e| McpError::protocol(format!("the MCP HTTP listener failed: {e}")))?;
            let service = hyper_util::service::TowerToHyperService::new(service.clone());
            tokio::spawn(async move {
                let io = hyper_util::rt::TokioIo::new(stream);
                if let Err(error) = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await
                {
                    tracing::debug!(%error, "an MCP HTTP connection ended with an error");
                }
            });
        }
    }

    pub(crate) fn handler(&self) -> ToolboxHandler {
        let mut info = ServerInfo::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_logging()
                .build(),
        )
        .with_server_info(Implementation::new(self.name.clone(), self.version.clone()));
        if let Some(instructions) = &self.instructions {
            info = info.with_instructions(instructions.clone());
        }
        let tools = self
            .toolbox
            .specs()
            .iter()
            .map(|spec| listed(spec))
            .collect();
        ToolboxHandler {
            toolbox: self.toolbox.clone(),
            info,
            tools: Arc::new(tools),
            level: Arc::new(RwLock::new(LogLevel::Info)),
        }
    }
}

/// The rmcp handler: one per connection (each HTTP session gets its own log level).
#[derive(Clone)]
pub(crate) struct ToolboxHandler {
    toolbox: Toolbox,
    info: ServerInfo,
    tools: Arc<Vec<McpToolSpec>>,
    /// The least severe log message sent (`logging/setLevel`).
    level: Arc<RwLock<LogLevel>>,
}

impl ToolboxHandler {
    /// The handler for another connection: the same tools, a log level of its own.
    #[cfg(feature = "mcp-server-http")]
    fn fresh(&self) -> Self {
        Self {
            level: Arc::new(RwLock::new(LogLevel::Info)),
            ..self.clone()
        }
    }
}

/// A toolbox tool as MCP lists it.
fn listed(spec: &harness_core::ToolSpec) -> McpToolSpec {
    let schema = match &spec.parameters {
        Value::Object(map) => map.clone(),
        _ => serde_json::Map::from_iter([("type".to_owned(), Value::from("object"))]),
    };
    McpToolSpec::new(
        spec.name.clone(),
        spec.description.clone(),
        Arc::new(schema),
    )
}

impl ServerHandler for ToolboxHandler {
    fn get_info(&self) -> ServerInfo {
        self.info.clone()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items((*self.tools).clone()))
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Ok(mut level) = self.level.write() {
            *level = from_wire(request.level);
        }
        Ok(())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        if !self.toolbox.contains(&name) {
            return Err(ErrorData::invalid_params(
                format!("unknown tool: {name}"),
                None,
            ));
        }
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        // Updates go out in order, before the result: through a channel to one sender.
        let (updates, mut queued) = tokio::sync::mpsc::unbounded_channel::<ToolUpdate>();
        let forward = {
            let (peer, token, level) = (
                context.peer.clone(),
                context.meta.get_progress_token(),
                Arc::clone(&self.level),
            );
            let logger = name.clone();
            tokio::spawn(async move {
                while let Some(update) = queued.recv().await {
                    send_update(&peer, token.as_ref(), &level, &logger, update).await;
                }
            })
        };
        let ctx = Ctx::new().with_updates(move |update| {
            let _ = updates.send(update);
        });
        let result = self
            .toolbox
            .call(&name, arguments, CallOptions::new().with_ctx(ctx))
            .await;
        let _ = forward.await;
        Ok(match result {
            Ok(answer) => CallToolResult::success(blocks(&answer)).into(),
            Err(error) if error.kind() == ToolErrorKind::InvalidArguments => {
                return Err(ErrorData::invalid_params(error.model_text(), None));
            }
            Err(error) => {
                CallToolResult::error(vec![ContentBlock::text(error.model_text())]).into()
            }
        })
    }
}

/// Sends one tool update as the protocol's notification: progress only when the client
/// asked for it (a progress token), a log message only at or above the client's level.
async fn send_update(
    peer: &Peer<RoleServer>,
    token: Option<&rmcp::model::ProgressToken>,
    level: &RwLock<LogLevel>,
    logger: &str,
    update: ToolUpdate,
) {
    match update {
        ToolUpdate::Progress {
            progress,
            total,
            message,
        } => {
            let Some(token) = token else { return };
            let mut params = ProgressNotificationParam::new(token.clone(), progress);
            if let Some(total) = total {
                params = params.with_total(total);
            }
            if let Some(message) = message {
                params = params.with_message(message);
            }
            let _ = peer.notify_progress(params).await;
        }
        ToolUpdate::Log {
            level: wanted,
            message,
        } => {
            let least = level.read().map_or(LogLevel::Info, |l| *l);
            if wanted >= least {
                let params =
                    LoggingMessageNotificationParam::new(to_wire(wanted), Value::from(message))
                        .with_logger(logger);
                let _ = peer.notify_logging_message(params).await;
            }
        }
        _ => {}
    }
}

/// A tool's content as MCP content blocks.
fn blocks(content: &Content) -> Vec<ContentBlock> {
    content
        .blocks()
        .iter()
        .map(|block| match block {
            Block::Image(image) => match image.source() {
                ImageSource::Data { data, media_type } => {
                    ContentBlock::image(data.clone(), media_type.clone())
                }
                ImageSource::Url(url) => ContentBlock::text(format!("[image: {url}]")),
            },
            Block::Document(document) => {
                ContentBlock::resource(ResourceContents::BlobResourceContents {
                    uri: format!(
                        "document:///{}",
                        document.name.as_deref().unwrap_or("document")
                    ),
                    mime_type: Some(document.media_type.clone()),
                    blob: document.data.clone(),
                    meta: None,
                })
            }
            other => {
                ContentBlock::text(harness_core::content::text_of(std::slice::from_ref(other)))
            }
        })
        .collect()
}

fn from_wire(level: LoggingLevel) -> LogLevel {
    match level {
        LoggingLevel::Debug => LogLevel::Debug,
        LoggingLevel::Info => LogLevel::Info,
        LoggingLevel::Notice => LogLevel::Notice,
        LoggingLevel::Warning => LogLevel::Warning,
        LoggingLevel::Error => LogLevel::Error,
        LoggingLevel::Critical => LogLevel::Critical,
        LoggingLevel::Alert => LogLevel::Alert,
        LoggingLevel::Emergency => LogLevel::Emergency,
    }
}

fn to_wire(level: LogLevel) -> LoggingLevel {
    match level {
        LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Notice => LoggingLevel::Notice,
        LogLevel::Warning => LoggingLevel::Warning,
        LogLevel::Error => LoggingLevel::Error,
        LogLevel::Critical => LoggingLevel::Critical,
        LogLevel::Alert => LoggingLevel::Alert,
        _ => LoggingLevel::Emergency,
    }
}
