//! A Model Context Protocol client: a server's tools as ordinary tools.
//!
//! The protocol (JSON-RPC, the handshake, stdio framing, streamable HTTP with its sessions
//! and resumable SSE streams) is the official Rust SDK, [`rmcp`]; this module adds the
//! timeouts, the process-group handling, paging limits, the model-facing tool names and the
//! rendering of results for a model. Nothing here can hang: every request has a timeout
//! ([`DEFAULT_TIMEOUT`] unless set with [`McpServer::with_timeout`] or per call).

mod adapter;
#[cfg(feature = "mcp-auth")]
pub mod auth;
mod catalog;
mod connection;
mod content;
mod elicitation;
mod error;
mod lines;
mod names;
mod notifications;
mod progress;
mod sampling;
#[cfg(feature = "mcp-server")]
mod serve;
mod strays;

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use harness_core::{CallOptions, Content, Ctx, Tool, ToolError, ToolSpec};
#[cfg(feature = "mcp-http")]
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest,
    ListToolsRequest, PaginatedRequestParams, RequestId, ServerResult,
};
use rmcp::service::PeerRequestOptions;
use rmcp::{Peer, RoleClient};
use serde_json::{Value, json};

#[cfg(feature = "mcp-auth")]
pub use auth::{OAuth, OAuthCallback, Redirect, RedirectHandler, StoredTokens, TokenStore};
pub use catalog::{
    McpPrompt, McpPromptArgument, McpPromptMessage, McpPromptResult, McpResource,
    McpResourceTemplate,
};
use connection::{Connection, Connector, Offers};
pub use content::{McpCallResult, McpContent};
pub use elicitation::Elicitor;
pub use error::{McpError, McpErrorKind};
pub use harness_core::{ElicitationMode, ElicitationRequest, ElicitationResponse};
pub use notifications::McpNotification;
pub use sampling::{Sampling, SamplingRequest};
#[cfg(feature = "mcp-server")]
pub use serve::McpToolServer;

/// The protocol version asked for.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// Versions accepted in the server's answer.
pub const SUPPORTED_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];

/// How long a request may take unless [`McpServer::with_timeout`] or a per-call timeout says
/// otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The most `tools/list` pages read; the tools of the pages read are kept.
pub const MAX_LIST_PAGES: usize = 1000;

/// How long after its own timeout a request is given up for certain: rmcp's timeout sends
/// `notifications/cancelled` first, and that send could itself stall on a server that no
/// longer reads.
const BACKSTOP: Duration = Duration::from_secs(1);

/// How messages reach an MCP server: the seam for a transport this crate does not have
/// (the deprecated HTTP+SSE one, say). Three methods, as in the original.
///
/// It is adapted to an rmcp transport, so a server reached this way gets the same
/// handshake, timeouts and cancellation as the built-in ones. Requests may overlap. Server
/// requests (`roots/list`, `ping`) cannot reach the client through it.
#[async_trait::async_trait]
pub trait Transport: Send + Sync {
    /// Sends request `method` and returns its `result` object. Return an [`McpError`] of
    /// kind [`McpErrorKind::Refused`] for a JSON-RPC error, [`McpErrorKind::Transport`]
    /// for a broken connection.
    async fn request(&self, method: &str, params: Value) -> Result<Value, McpError>;
    /// Sends notification `method`.
    async fn notify(&self, method: &str, params: Value) -> Result<(), McpError>;
    /// Ends the connection; calling it twice is fine.
    async fn close(&self) -> Result<(), McpError>;
}

/// One tool as the server lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// The tool's name on the server: what [`McpServer::call`] takes.
    pub name: String,
    /// The name offered to a model: `name` itself when it is `[A-Za-z0-9_-]{1,64}` (what
    /// every vendor accepts), else `name` with other characters made `_` and, when longer
    /// than 64, cut and suffixed with a short hash of the original.
    pub model_name: String,
    /// Its description.
    pub description: String,
    /// Its JSON Schema, as the server published it.
    pub input_schema: Value,
    /// Whether the server marked it read-only (`annotations.readOnlyHint`).
    pub read_only: bool,
}

/// What a connection is doing.
enum State {
    Idle,
    Connected(Arc<Connection>),
    Closed,
}

/// Shared by every clone and every tool handed out: one connection, one handshake.
struct Shared {
    connector: Connector,
    env: RwLock<Vec<(OsString, OsString)>>,
    offers: Arc<Offers>,
    state: tokio::sync::Mutex<State>,
    info: OnceLock<Value>,
}

/// An MCP server's tools, ready for an agent. Cloning is cheap and the clones share the
/// connection.
///
/// The handshake happens on first use, so [`connect`](McpServer::connect) is optional. Each
/// tool keeps the server's own schema. A tool the server did not mark read-only is gated
/// (`requires_approval`), since it is code in another process this side cannot inspect;
/// widen that with permission rules, or turn it off with
/// [`with_requires_approval(false)`](McpServer::with_requires_approval). A failed call (`isError`, a
/// JSON-RPC error, a timeout) reaches the model as that call's result.
///
/// Every request, the handshake included, has a timeout: [`DEFAULT_TIMEOUT`] unless set with
/// [`with_timeout`](McpServer::with_timeout), or per call with the
/// [`CallOptions::with_timeout`] given to [`call`](McpServer::call). A stdio server runs in a
/// process group of its own; [`close`](McpServer::close), and dropping the last clone (tools
/// included), kill that whole group.
///
/// ```no_run
/// use std::time::Duration;
/// use harness_tools::mcp::McpServer;
///
/// # async fn demo() -> harness_core::Result<()> {
/// let mcp = McpServer::stdio(["npx", "-y", "@modelcontextprotocol/server-filesystem", "."])?
///     .with_timeout(Duration::from_secs(30));
/// let tools = mcp.tools().await?;
/// // Agent::builder(model).tools(tools) ...
/// mcp.close().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpServer {
    shared: Arc<Shared>,
    /// How errors and logs name the server.
    label: Arc<str>,
    requires_approval: bool,
    timeout: Duration,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("server", &self.label)
            .field("requires_approval", &self.requires_approval)
            .field("timeout", &self.timeout)
            .field(
                "connected",
                &matches!(
                    self.shared.state.try_lock().as_deref(),
                    Ok(State::Connected(_))
                ),
            )
            .finish_non_exhaustive()
    }
}

impl McpServer {
    fn with_connector(label: String, connector: Connector) -> Self {
        Self {
            label: label.into(),
            shared: Arc::new(Shared {
                connector,
                env: RwLock::default(),
                offers: Arc::default(),
                state: tokio::sync::Mutex::new(State::Idle),
                info: OnceLock::new(),
            }),
            requires_approval: true,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// A server reached through `transport`, your own implementation of the three-method
    /// seam.
    pub fn new(transport: impl Transport + 'static) -> Self {
        Self::with_connector(
            "(custom transport)".to_owned(),
            Connector::Custom(Arc::new(transport)),
        )
    }

    /// A local server run as a subprocess (program and arguments), started on first use in
    /// a process group of its own. Its stderr is this process's.
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error for an empty
    /// command.
    pub fn stdio<I, S>(command: I) -> harness_core::Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        let command: Vec<OsString> = command.into_iter().map(Into::into).collect();
        if command.is_empty() {
            return Err(harness_core::Error::configuration(
                "an MCP stdio server needs a command to run; pass the program and its arguments",
            ));
        }
        let label = stdio_label(&command);
        Ok(Self::with_connector(label, Connector::Stdio(command)))
    }

    /// A remote server over streamable HTTP, with extra headers (authentication, say).
    /// Feature `mcp-http`.
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error for a header that
    /// is not valid HTTP, or one the client sets itself (`Accept`, `Mcp-Session-Id`,
    /// `Last-Event-ID`).
    #[cfg(feature = "mcp-http")]
    pub fn http(
        url: impl Into<String>,
        headers: &[(String, String)],
    ) -> harness_core::Result<Self> {
        let mut map = HashMap::new();
        for (name, value) in headers {
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|e| {
                harness_core::Error::configuration(format!("invalid header name {name:?}: {e}"))
            })?;
            if ["accept", "mcp-session-id", "last-event-id"].contains(&name.as_str()) {
                return Err(harness_core::Error::configuration(format!(
                    "header {name} is set by the MCP client itself; leave it out"
                )));
            }
            let value = HeaderValue::from_str(value).map_err(|e| {
                harness_core::Error::configuration(format!("invalid value for header {name}: {e}"))
            })?;
            map.insert(name, value);
        }
        let url = url.into();
        Ok(Self::with_connector(
            http_label(&url),
            Connector::Http { url, headers: map },
        ))
    }

    /// How error messages and logs name the server, which a model reads in a failed
    /// call's result. The default is the program's file name and its first argument that is
    /// not a flag, by file name (`node index.js`), or the URL without its user, query and
    /// fragment: never the whole command line, whose arguments may hold secrets.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.label = name.into().into();
        self
    }

    /// Whether tools the server did not mark read-only are gated (default `true`).
    pub fn with_requires_approval(mut self, on: bool) -> Self {
        self.requires_approval = on;
        self
    }

    /// How long each request may take, the handshake included (default
    /// [`DEFAULT_TIMEOUT`], 60 s). Tools handed out afterwards keep it. A request that runs
    /// out fails with an error for which [`is_timeout`](harness_core::Error::is_timeout) is
    /// true (and [`McpError::is_timeout`] of its source), and the server is sent
    /// `notifications/cancelled`.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Adds an environment variable for a stdio server (other servers ignore it). Takes
    /// effect when the server is started, on first use.
    pub fn with_env(self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        if let Ok(mut env) = self.shared.env.write() {
            env.push((key.into(), value.into()));
        }
        self
    }

    /// Offers the server these directories as roots: declared in the handshake (so set them
    /// before first use) and served to the server's `roots/list` requests at any time.
    pub fn with_roots(self, roots: Vec<PathBuf>) -> Self {
        if let Ok(mut current) = self.shared.offers.roots.write() {
            *current = roots;
        }
        self
    }

    /// Answers the server's elicitations (its requests for input from the user) with
    /// `elicitor`: declared in the handshake, so set it before first use. Without one, every
    /// elicitation is declined and the server goes on without the input. An accepted form
    /// gets the schema's defaults for the fields left out.
    ///
    /// With [`McpServer::with_run_elicitation`] as well, the human of a run waiting on the
    /// server comes first.
    pub fn with_elicitation(self, elicitor: impl Elicitor + 'static) -> Self {
        if let Ok(mut current) = self.shared.offers.elicitor.write() {
            *current = Some(Arc::new(elicitor));
        }
        self
    }

    /// Sends the server's elicitations to the [`Human`](harness_core::Human) of the run
    /// whose tool call waits on the server: the toolbox's
    /// ([`ToolboxBuilder::human`](harness_core::ToolboxBuilder::human)), the same channel
    /// the run's approvals go through. Declared in the handshake, so set it before first use.
    ///
    /// When no call with a human waits, or calls of runs with *different* humans wait at
    /// once (the protocol does not say which call an elicitation belongs to, so none of
    /// them is guessed at), the elicitation goes to the [`Elicitor`] of
    /// [`McpServer::with_elicitation`], else it is declined. Give each user's runs their
    /// own `McpServer` when their humans differ and their calls overlap.
    pub fn with_run_elicitation(self) -> Self {
        self.shared
            .offers
            .run_elicitation
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self
    }

    /// Serves the server's sampling requests (`sampling/createMessage`: the server asking
    /// for a completion) with `sampling`'s model, each gated by its approval: declared in the
    /// handshake, so set it before first use. Without it, such requests are refused as not
    /// supported.
    pub fn with_sampling(self, sampling: Sampling) -> Self {
        if let Ok(mut current) = self.shared.offers.sampling.write() {
            *current = Some(sampling);
        }
        self
    }

    /// Hands what the server says on its own (progress on a request, log messages, changed
    /// lists and resources) to `notify`, with the server's name. Called on the
    /// connection's task: return quickly, and send the notification on for slow work.
    /// Without it, notifications are read and dropped.
    pub fn with_notifications(
        self,
        notify: impl Fn(&str, McpNotification) + Send + Sync + 'static,
    ) -> Self {
        if let Ok(mut current) = self.shared.offers.notify.write() {
            *current = Some(Arc::new(notify));
        }
        self
    }

    /// Authorizes with OAuth 2.1 (an HTTP server; others ignore it): a 401 from the server
    /// starts discovery, registration and the sign-in `oauth` describes, and each request
    /// then carries the token; see [`auth`]. Takes effect on the next connection, so set it
    /// before first use. A sign-in during a request counts against that request's timeout
    /// ([`with_timeout`](Self::with_timeout)): raise it for interactive sign-in. Feature
    /// `mcp-auth`.
    #[cfg(feature = "mcp-auth")]
    pub fn with_oauth(self, oauth: OAuth) -> Self {
        if let Ok(mut current) = self.shared.offers.oauth.write() {
            *current = Some(oauth);
        }
        self
    }

    /// The live connection, made (started, handshake) within `timeout` when there is none.
    async fn connection(&self, timeout: Duration) -> Result<Arc<Connection>, McpError> {
        let (shared, label) = (&self.shared, &*self.label);
        let connect = async {
            let mut state = shared.state.lock().await;
            match &*state {
                // A server that exited (or an HTTP client that gave up) is started afresh;
                // dropping the old connection kills what is left of its process group.
                State::Connected(connection) if connection.peer.is_transport_closed() => {
                    tracing::warn!(server = %label, "MCP connection lost; reconnecting");
                }
                State::Connected(connection) => return Ok(Arc::clone(connection)),
                State::Closed => {
                    return Err(McpError::with_kind(
                        McpErrorKind::Closed,
                        format!(
                            "MCP server `{label}` was closed; make a new McpServer to reconnect"
                        ),
                    ));
                }
                State::Idle => {}
            }
            let env = shared.env.read().map(|e| e.clone()).unwrap_or_default();
            let connection = Arc::new(
                Connection::open(
                    &shared.connector,
                    &env,
                    Arc::clone(&shared.offers),
                    label,
                    timeout,
                )
                .await?,
            );
            let _ = shared.info.set(connection.info.clone());
            *state = State::Connected(Arc::clone(&connection));
            Ok(connection)
        };
        // Also bounds the wait behind another caller's handshake.
        tokio::time::timeout(timeout, connect)
            .await
            .map_err(|_| McpError::timeout(label, "initialize", timeout))?
    }

    /// The handshake: `initialize`, then `notifications/initialized`, within the server's
    /// timeout. Runs once; later calls return at once.
    ///
    /// # Errors
    /// An [`Mcp`](harness_core::ErrorKind::Mcp) error ([`McpError`] its source) when the server
    /// cannot be started or reached, refuses, does not answer in time, or answers a protocol
    /// version this client does not speak.
    pub async fn connect(&self) -> harness_core::Result<()> {
        Ok(self.connection(self.timeout).await.map(drop)?)
    }

    /// What the server said about itself in the handshake (`protocolVersion`,
    /// `capabilities`, `serverInfo`, `instructions`).
    pub fn server_info(&self) -> Option<&Value> {
        self.shared.info.get()
    }

    /// Sends `request` and waits for its answer, within `timeout`.
    async fn request(
        &self,
        request: ClientRequest,
        method: &str,
        timeout: Duration,
    ) -> Result<ServerResult, McpError> {
        self.request_reporting(request, method, timeout, None).await
    }

    /// [`request`](Self::request), the server's progress on it reported to `ctx` (a tool
    /// call's, so a watched run sees it as [`harness_core::ToolUpdate`]s).
    async fn request_reporting(
        &self,
        request: ClientRequest,
        method: &str,
        timeout: Duration,
        ctx: Option<&Ctx>,
    ) -> Result<ServerResult, McpError> {
        let connection = self.connection(timeout).await?;
        let peer = &connection.peer;
        let offers = &self.shared.offers;
        let exchange = async {
            let mut options = PeerRequestOptions::with_timeout(timeout);
            // Kept until the answer is in (or the wait is dropped).
            let _route = match ctx.filter(|ctx| ctx.has_updates()) {
                Some(ctx) => {
                    let (meta, route) = offers.progress.register(ctx.clone());
                    options.meta = Some(meta);
                    Some(route)
                }
                None => None,
            };
            // The run's human, reachable by the server's elicitations while it waits.
            let _waiting = ctx
                .and_then(Ctx::human)
                .map(|human| offers.waiting.enter(Arc::clone(human)));
            let handle = peer.send_request_with_option(request, options).await?;
            let guard = CancelOnDrop {
                peer: Some(peer.clone()),
                id: handle.id.clone(),
            };
            let answer = handle.await_response().await;
            guard.disarm();
            answer
        };
        match tokio::time::timeout(timeout + BACKSTOP, exchange).await {
            Err(_) => Err(McpError::timeout(&self.label, method, timeout)),
            Ok(Err(e)) => Err(McpError::from_service(e, &self.label, method, timeout)),
            Ok(Ok(result)) => Ok(result),
        }
    }

    /// The server's tools as data, every page of `tools/list`. Paging stops at a cursor seen
    /// before and after [`MAX_LIST_PAGES`] pages, with a warning; the tools read are kept.
    ///
    /// # Errors
    /// An [`Mcp`](harness_core::ErrorKind::Mcp) error ([`McpError`] its source) from the handshake
    /// or the listing.
    pub async fn list_tools(&self) -> harness_core::Result<Vec<McpTool>> {
        let label = &self.label;
        self.list_all(
            "tools/list",
            |params| ClientRequest::ListToolsRequest(ListToolsRequest::with_param(params)),
            |result, tools| match result {
                ServerResult::ListToolsResult(result) => {
                    tools.extend(result.tools.into_iter().map(listed));
                    Ok(result.next_cursor)
                }
                ServerResult::CustomResult(result) => {
                    tools.extend(listed_json(&result.0));
                    Ok(next_cursor(&result.0))
                }
                ServerResult::EmptyResult(_) => Ok(None),
                _ => Err(McpError::protocol(format!(
                    "MCP server `{label}` answered tools/list with a result of the wrong type"
                ))),
            },
        )
        .await
        .map_err(harness_core::Error::from)
    }

    /// Every page of a `*/list` request: `page` takes each answer's items into the list and
    /// returns its `nextCursor`. Paging stops at a cursor seen before and after
    /// [`MAX_LIST_PAGES`] pages, with a warning; the items read are kept.
    async fn list_all<T>(
        &self,
        method: &str,
        request: impl Fn(PaginatedRequestParams) -> ClientRequest,
        mut page: impl FnMut(ServerResult, &mut Vec<T>) -> Result<Option<String>, McpError>,
    ) -> Result<Vec<T>, McpError> {
        let mut items = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        for number in 1..=MAX_LIST_PAGES {
            let params = PaginatedRequestParams::default().with_cursor(cursor.clone());
            let answer = self.request(request(params), method, self.timeout).await?;
            match page(answer, &mut items)? {
                Some(next) if !next.is_empty() => {
                    if !seen.insert(next.clone()) {
                        tracing::warn!(
                            server = %self.label,
                            cursor = %next,
                            "MCP {method} repeated a cursor; keeping the {} items listed so far",
                            items.len()
                        );
                        break;
                    }
                    if number == MAX_LIST_PAGES {
                        tracing::warn!(
                            server = %self.label,
                            "MCP {method} still had pages after {MAX_LIST_PAGES}; keeping the {} items listed so far",
                            items.len()
                        );
                    }
                    cursor = Some(next);
                }
                _ => break,
            }
        }
        Ok(items)
    }

    /// The server's tools, ready for an agent, under their model-facing names
    /// ([`McpTool::model_name`]); each call goes out under the server's own name.
    ///
    /// # Errors
    /// As [`McpServer::list_tools`]; and a configuration error naming the server and both
    /// tools when two names map to the same model-facing name.
    pub async fn tools(&self) -> harness_core::Result<Vec<Arc<dyn Tool>>> {
        let listed = self.list_tools().await?;
        let mut taken: HashMap<&str, &str> = HashMap::new();
        for tool in &listed {
            if let Some(first) = taken.insert(&tool.model_name, &tool.name) {
                return Err(harness_core::Error::configuration(format!(
                    "MCP server `{}` has tools {first:?} and {:?}, which both become {:?} for \
                     the model (names may only use A-Z, a-z, 0-9, _ and -, up to 64 \
                     characters); rename one on the server, or reach them with list_tools() \
                     and call()",
                    self.label, tool.name, tool.model_name
                )));
            }
        }
        Ok(listed
            .into_iter()
            .map(|tool| {
                let gated = self.requires_approval && !tool.read_only;
                let spec = ToolSpec::new(tool.model_name, tool.description, tool.input_schema)
                    .with_requires_approval(gated);
                Arc::new(RemoteTool {
                    server: self.clone(),
                    server_name: tool.name,
                    spec: Arc::new(spec),
                }) as Arc<dyn Tool>
            })
            .collect())
    }

    /// Calls tool `name` (the server's name for it) with `arguments`, as `options` say: the
    /// [`Ctx`] the server's progress and log notifications reach (and whose human answers
    /// its elicitations), and a timeout for this call over the server's own
    /// ([`with_timeout`](Self::with_timeout)). Returns the whole typed result: text, images
    /// (as [`harness_core::Image`]s), audio, resources, `structuredContent`; a call the
    /// server marked failed is an `Ok` result with `is_error` set
    /// ([`McpCallResult::text`] is what a model would read either way).
    ///
    /// # Errors
    /// An [`Mcp`](harness_core::ErrorKind::Mcp) error ([`McpError`] its source) when the
    /// server refuses the call, does not answer in time, or the transport fails.
    pub async fn call(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> harness_core::Result<McpCallResult> {
        let timeout = options.timeout().unwrap_or(self.timeout);
        Ok(self
            .call_reporting(name, arguments, timeout, Some(options.ctx()))
            .await?)
    }

    /// A tool call whose progress reaches `ctx`.
    async fn call_reporting(
        &self,
        name: &str,
        arguments: Value,
        timeout: Duration,
        ctx: Option<&Ctx>,
    ) -> Result<McpCallResult, McpError> {
        let arguments = match arguments {
            Value::Null => serde_json::Map::new(),
            Value::Object(map) => map,
            other => {
                return Err(McpError::new(format!(
                    "the arguments for {name} must be a JSON object, not {other}"
                )));
            }
        };
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        match self
            .request_reporting(request, "tools/call", timeout, ctx)
            .await?
        {
            ServerResult::CallToolResult(result) => Ok(McpCallResult::from_rmcp(result)),
            ServerResult::CustomResult(result) => Ok(McpCallResult::from_json(&result.0)),
            ServerResult::EmptyResult(_) => Ok(McpCallResult::from_json(&json!({}))),
            _ => Err(McpError::protocol(format!(
                "MCP server `{}` answered tools/call for {name} with a result of the wrong type",
                self.label
            ))),
        }
    }

    /// Closes the connection: a stdio server's stdin is closed, it gets two seconds to exit,
    /// then its whole process group is killed; an HTTP session is deleted. Calling it twice
    /// is fine; using the server afterwards is an error (its source's
    /// [`McpError::is_closed`] is true).
    ///
    /// # Errors
    /// An [`Mcp`](harness_core::ErrorKind::Mcp) error ([`McpError`] its source) from a custom
    /// [`Transport`]'s `close`.
    pub async fn close(&self) -> harness_core::Result<()> {
        let previous = std::mem::replace(&mut *self.shared.state.lock().await, State::Closed);
        match previous {
            State::Connected(connection) => Ok(connection.close().await?),
            State::Idle | State::Closed => Ok(()),
        }
    }
}

/// Sends `notifications/cancelled` for a request whose caller stopped waiting (an agent run
/// dropped mid-call, say), so the server can stop working on it.
struct CancelOnDrop {
    peer: Option<Peer<RoleClient>>,
    id: RequestId,
}

impl CancelOnDrop {
    fn disarm(mut self) {
        self.peer = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(peer) = self.peer.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let param = CancelledNotificationParam::new(
                Some(self.id.clone()),
                Some("the caller stopped waiting".to_owned()),
            );
            runtime.spawn(async move {
                let _ = peer.notify_cancelled(param).await;
            });
        }
    }
}

/// A page's `nextCursor`, read from its JSON.
fn next_cursor(page: &Value) -> Option<String> {
    page.get("nextCursor")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

fn listed(tool: rmcp::model::Tool) -> McpTool {
    let name = tool.name.into_owned();
    McpTool {
        model_name: names::model_name(&name),
        name,
        description: tool
            .description
            .map(std::borrow::Cow::into_owned)
            .unwrap_or_default(),
        input_schema: Value::Object((*tool.input_schema).clone()),
        read_only: tool
            .annotations
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false),
    }
}

/// Tools from a listing rmcp could not type (a tool without `inputSchema`, say): each read
/// on its own, leniently; one without a name is skipped.
fn listed_json(page: &Value) -> Vec<McpTool> {
    page.get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|tool| {
            let name = tool.get("name").and_then(Value::as_str)?.to_owned();
            Some(McpTool {
                model_name: names::model_name(&name),
                name,
                description: tool
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
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
            })
        })
        .collect()
}

/// One of an MCP server's tools behind the [`Tool`] trait.
struct RemoteTool {
    server: McpServer,
    /// The server's own name, which the call goes out under.
    server_name: String,
    spec: Arc<ToolSpec>,
}

#[async_trait::async_trait]
impl Tool for RemoteTool {
    fn spec(&self) -> &Arc<ToolSpec> {
        &self.spec
    }

    /// The text (images named in it where they stood) followed by the images themselves,
    /// so a model that reads images sees them.
    async fn call(&self, arguments: Value, ctx: Ctx) -> Result<Content, ToolError> {
        let result = self.reporting(arguments, &ctx).await?;
        let text = succeeded(&self.server_name, &result)?;
        let images = result.images();
        if images.is_empty() {
            return Ok(Content::Text(text));
        }
        let mut blocks = vec![harness_core::Block::text(text)];
        blocks.extend(images.into_iter().cloned().map(harness_core::Block::Image));
        Ok(Content::Blocks(blocks))
    }
}

impl RemoteTool {
    /// The call, the server's progress on it reported to `ctx`.
    async fn reporting(&self, arguments: Value, ctx: &Ctx) -> Result<McpCallResult, McpError> {
        let server = &self.server;
        server
            .call_reporting(&self.server_name, arguments, server.timeout, Some(ctx))
            .await
    }
}

/// The text a model reads of a call's result (`(no output)` for none), or, when the server
/// marked the call failed (`isError`), the error `{name} failed: {text}`.
fn succeeded(name: &str, result: &McpCallResult) -> Result<String, McpError> {
    let text = result.text();
    if result.is_error {
        let detail = if text.is_empty() {
            "no detail given"
        } else {
            text.as_str()
        };
        return Err(McpError::with_kind(
            McpErrorKind::ToolFailed,
            format!("{name} failed: {detail}"),
        ));
    }
    Ok(if text.is_empty() {
        "(no output)".to_owned()
    } else {
        text
    })
}

/// `node index.js` for `node /srv/mcp/index.js --token s3cret`: the program and its first
/// argument that is not a flag, by file name.
fn stdio_label(command: &[OsString]) -> String {
    let file_name = |part: &OsString| {
        let path = std::path::Path::new(part);
        path.file_name()
            .unwrap_or(part.as_os_str())
            .to_string_lossy()
            .into_owned()
    };
    let mut parts: Vec<String> = command.first().map(file_name).into_iter().collect();
    parts.extend(
        command
            .iter()
            .skip(1)
            .find(|arg| !arg.to_string_lossy().starts_with('-'))
            .map(file_name),
    );
    parts.join(" ")
}

/// The URL without its user, password, query and fragment.
#[cfg(feature = "mcp-http")]
fn http_label(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or(url);
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority
                .rsplit_once('@')
                .map_or(authority, |(_, host)| host);
            format!("{scheme}://{host}{path}")
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_leave_out_what_may_be_secret() {
        let command: Vec<OsString> = ["node", "/srv/mcp/index.js", "--token", "s3cret"]
            .map(OsString::from)
            .to_vec();
        assert_eq!(stdio_label(&command), "node index.js");
        let npx: Vec<OsString> = ["/usr/bin/npx", "-y", "@scope/server-fs", "."]
            .map(OsString::from)
            .to_vec();
        assert_eq!(stdio_label(&npx), "npx server-fs");
    }

    #[cfg(feature = "mcp-http")]
    #[test]
    fn http_labels_leave_out_what_may_be_secret() {
        assert_eq!(
            http_label("https://user:pw@example.com:8443/mcp?key=s3cret#x"),
            "https://example.com:8443/mcp"
        );
        assert_eq!(
            http_label("http://127.0.0.1:9/mcp"),
            "http://127.0.0.1:9/mcp"
        );
    }
}
