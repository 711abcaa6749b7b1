//! Starting or reaching a server, the handshake, and stopping it: rmcp does the protocol,
//! this module the process group, the timeouts around the handshake, and the shutdown.

#[cfg(feature = "mcp-http")]
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
#[cfg(feature = "mcp-http")]
use reqwest::header::{HeaderName, HeaderValue};
#[allow(deprecated)] // roots are deprecated for the 2026 protocol; servers of 2025 use them
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestMethod, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, ErrorData, FormElicitationCapability, Implementation, ListRootsResult,
    ProtocolVersion, Root, RootsCapabilities, SamplingCapability, UrlElicitationCapability,
};
#[allow(deprecated)] // logging is deprecated for the 2026 protocol; servers of 2025 use it
use rmcp::model::{
    LoggingMessageNotificationParam, ProgressNotificationParam, ResourceUpdatedNotificationParam,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::transport::async_rw::AsyncRwTransport;
#[cfg(feature = "mcp-http")]
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransport, StreamableHttpClientTransportConfig,
};
use rmcp::{ClientHandler, Peer, RoleClient};
use serde_json::Value;

use super::adapter::Adapter;
use super::elicitation::{self, Asked, Elicitor, WaitingRuns};
use super::lines::{Lines, MAX_LINE};
use super::notifications::{self, McpNotification, Notify};
use super::progress::{ProgressRoutes, RouteProgress};
use super::sampling::Sampling;
use super::strays::SkipStrays;
use super::{McpError, SUPPORTED_VERSIONS, Transport};
use harness_core::{ElicitationRequest, ElicitationResponse, Human};

/// How long `close` waits for a server to exit on its own (stdin closed, HTTP session
/// deleted) before its process group is killed.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// How a server is reached.
pub(crate) enum Connector {
    Stdio(Vec<OsString>),
    #[cfg(feature = "mcp-http")]
    Http {
        url: String,
        headers: HashMap<HeaderName, HeaderValue>,
    },
    Custom(Arc<dyn Transport>),
}

/// What this client offers a server, set on the `McpServer` before first use: the roots it
/// may read, the model that serves its sampling requests, who answers its elicitations.
#[derive(Default)]
pub(crate) struct Offers {
    pub(crate) roots: RwLock<Vec<PathBuf>>,
    pub(crate) elicitor: RwLock<Option<Arc<dyn Elicitor>>>,
    /// Whether elicitations go to the human of a run waiting on the server first.
    pub(crate) run_elicitation: AtomicBool,
    /// The humans of the runs whose calls wait on the server.
    pub(crate) waiting: Arc<WaitingRuns>,
    pub(crate) sampling: RwLock<Option<Sampling>>,
    pub(crate) notify: RwLock<Option<Arc<Notify>>>,
    /// The tool calls in flight whose progress goes to a run.
    pub(crate) progress: Arc<ProgressRoutes>,
    /// How an HTTP server is authorized (OAuth), when it is.
    #[cfg(feature = "mcp-auth")]
    pub(crate) oauth: RwLock<Option<super::auth::OAuth>>,
}

impl Offers {
    /// Hands `notification` to the application's callback, if there is one.
    fn notify(&self, server: &str, notification: impl FnOnce() -> McpNotification) {
        let notify = self.notify.read().ok().and_then(|n| n.clone());
        match notify {
            Some(notify) => notify(server, notification()),
            None => tracing::trace!(server, "MCP notification dropped: no handler"),
        }
    }
}

/// The client's side of server requests: `ping` (rmcp's default answer), `roots/list`,
/// `sampling/createMessage` and `elicitation/create`. Anything else is refused with -32601 by
/// rmcp's defaults.
pub(crate) struct Handler {
    offers: Arc<Offers>,
    label: String,
    config: ClientConfig,
}

impl Handler {
    pub(crate) fn new(offers: Arc<Offers>, label: &str) -> Self {
        let mut capabilities = ClientCapabilities::default();
        if offers.roots.read().is_ok_and(|r| !r.is_empty()) {
            capabilities.roots = Some(RootsCapabilities::default());
        }
        if offers.sampling.read().is_ok_and(|s| s.is_some()) {
            capabilities.sampling = Some(SamplingCapability::default());
        }
        if offers.run_elicitation.load(Ordering::Relaxed)
            || offers.elicitor.read().is_ok_and(|e| e.is_some())
        {
            capabilities.elicitation = Some(
                ElicitationCapability::new()
                    .with_form(FormElicitationCapability::new())
                    .with_url(UrlElicitationCapability::new()),
            );
        }
        let config = ClientConfig::new(
            capabilities,
            Implementation::new("deepharness", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25);
        Self {
            offers,
            label: label.to_owned(),
            config,
        }
    }
}

#[allow(deprecated)] // roots are deprecated for the 2026 protocol; servers of 2025 use them
impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        self.config.clone()
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let roots = self
            .offers
            .roots
            .read()
            .map(|roots| roots.clone())
            .unwrap_or_default();
        Ok(ListRootsResult::new(
            roots
                .iter()
                .map(|root| {
                    let name = root.file_name().map_or_else(
                        || root.display().to_string(),
                        |n| n.to_string_lossy().into_owned(),
                    );
                    Root::new(file_uri(root)).with_name(name)
                })
                .collect(),
        ))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.offers
            .notify(&self.label, || McpNotification::Progress {
                token: serde_json::to_value(&params.progress_token).unwrap_or(Value::Null),
                progress: params.progress,
                total: params.total,
                message: params.message,
            });
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.offers.notify(&self.label, || McpNotification::Log {
            level: notifications::level_name(params.level),
            logger: params.logger,
            data: params.data,
        });
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.offers
            .notify(&self.label, || McpNotification::ResourceUpdated {
                uri: params.uri,
            });
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.offers
            .notify(&self.label, || McpNotification::ResourceListChanged);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.offers
            .notify(&self.label, || McpNotification::ToolListChanged);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.offers
            .notify(&self.label, || McpNotification::PromptListChanged);
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let sampling = self.offers.sampling.read().ok().and_then(|s| s.clone());
        match sampling {
            // On a task of its own, so a model or an approval callback that panics is an
            // error answer, not a request that never ends.
            Some(sampling) => {
                let label = self.label.clone();
                tokio::spawn(async move { sampling.serve(&label, &params).await })
                    .await
                    .unwrap_or_else(|_| {
                        Err(ErrorData::internal_error(
                            "the client's sampling handler failed",
                            None,
                        ))
                    })
            }
            None => Err(ErrorData::method_not_found::<CreateMessageRequestMethod>()),
        }
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let run = if self.offers.run_elicitation.load(Ordering::Relaxed) {
            match self.offers.waiting.asked() {
                Asked::Run(human) => Some(human),
                Asked::Nobody => None,
                Asked::Ambiguous => {
                    tracing::warn!(
                        server = %self.label,
                        "an MCP elicitation arrived while calls of runs with different humans \
                         wait on the server; it goes to the server's elicitor, if any"
                    );
                    None
                }
            }
        } else {
            None
        };
        let asker = match run {
            Some(human) => Asker::Run(human),
            None => match self.offers.elicitor.read().ok().and_then(|e| e.clone()) {
                Some(elicitor) => Asker::Elicitor(elicitor),
                // No one to ask: the server goes on without the input.
                None => return Ok(ElicitResult::new(ElicitationAction::Decline)),
            },
        };
        let request = elicitation::request(&self.label, params);
        let mode = request.mode.clone();
        // On a task of its own, so an elicitor that panics costs the server an answer of
        // `cancel`, not a request that never ends.
        let response = tokio::spawn(async move { asker.ask(request).await })
            .await
            .unwrap_or_else(|_| {
                tracing::warn!(server = %self.label, "the MCP elicitor panicked; answering cancel");
                ElicitationResponse::Cancel
            });
        Ok(elicitation::result(&mode, response))
    }
}

/// Who answers an elicitation: a run's human or the server's elicitor.
enum Asker {
    Run(Arc<dyn Human>),
    Elicitor(Arc<dyn Elicitor>),
}

impl Asker {
    async fn ask(self, request: ElicitationRequest) -> ElicitationResponse {
        match self {
            Self::Run(human) => human.ask(request).await,
            Self::Elicitor(elicitor) => elicitor.elicit(request).await,
        }
    }
}

/// `file://` and the path, with the bytes a URI path may not hold percent-encoded.
fn file_uri(path: &std::path::Path) -> String {
    use std::fmt::Write as _;
    use std::os::unix::ffi::OsStrExt as _;
    let mut uri = String::from("file://");
    for &byte in path.as_os_str().as_bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~!$&'()*+,;=:@".contains(&byte) {
            uri.push(char::from(byte));
        } else {
            let _ = write!(uri, "%{byte:02X}");
        }
    }
    uri
}

/// A stdio server's process group: killed (SIGKILL, the whole group) when dropped, so a
/// server's own children go too. Dropping needs no runtime.
struct ProcessGroup {
    child: tokio::process::Child,
    pgid: Option<Pid>,
}

impl ProcessGroup {
    fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            // ESRCH (the group is already gone) is fine.
            let _ = killpg(pgid, Signal::SIGKILL);
        }
        let _ = self.child.start_kill();
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A live connection: rmcp's running client and, for stdio, the server's process group.
pub(crate) struct Connection {
    pub(crate) peer: Peer<RoleClient>,
    pub(crate) info: Value,
    running: tokio::sync::Mutex<Option<RunningService<RoleClient, Handler>>>,
    process: Mutex<Option<ProcessGroup>>,
    custom: Option<Arc<dyn Transport>>,
}

impl Connection {
    /// Starts or reaches the server and shakes hands, all within `timeout`.
    pub(crate) async fn open(
        connector: &Connector,
        env: &[(OsString, OsString)],
        offers: Arc<Offers>,
        label: &str,
        timeout: Duration,
    ) -> Result<Self, McpError> {
        #[cfg(feature = "mcp-auth")]
        let oauth = offers.oauth.read().ok().and_then(|o| o.clone());
        let handler = Handler::new(offers, label);
        let (running, process, custom) = match connector {
            Connector::Stdio(command) => {
                let (group, transport) = spawn(command, env, label)?;
                // On a timeout or error `group` is dropped here, which kills the server.
                let running = handshake(handler, transport, label, timeout).await?;
                (running, Some(group), None)
            }
            #[cfg(feature = "mcp-http")]
            Connector::Http { url, headers } => {
                let client = harness_providers::rest::client_builder()
                    .map_err(|e| McpError::transport(e.to_string()))?
                    .connect_timeout(Duration::from_secs(10))
                    .build()
                    .map_err(|e| {
                        McpError::transport(format!("cannot build the HTTP client: {e}"))
                    })?;
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(headers.clone());
                #[cfg(feature = "mcp-auth")]
                if let Some(oauth) = oauth {
                    let transport = StreamableHttpClientTransport::with_client(
                        oauth.client(client, url),
                        config,
                    );
                    let running = handshake(handler, transport, label, timeout).await?;
                    (running, None, None)
                } else {
                    let transport = StreamableHttpClientTransport::with_client(client, config);
                    (
                        handshake(handler, transport, label, timeout).await?,
                        None,
                        None,
                    )
                }
                #[cfg(not(feature = "mcp-auth"))]
                {
                    let transport = StreamableHttpClientTransport::with_client(client, config);
                    (
                        handshake(handler, transport, label, timeout).await?,
                        None,
                        None,
                    )
                }
            }
            Connector::Custom(inner) => {
                let transport = Adapter::new(Arc::clone(inner));
                let running = handshake(handler, transport, label, timeout).await?;
                (running, None, Some(Arc::clone(inner)))
            }
        };
        let peer = running.peer().clone();
        let info = peer.peer_info();
        let connection = Self {
            peer,
            info: info
                .as_deref()
                .and_then(|info| serde_json::to_value(info).ok())
                .unwrap_or(Value::Null),
            running: tokio::sync::Mutex::new(Some(running)),
            process: Mutex::new(process),
            custom,
        };
        let version = info
            .as_deref()
            .map(|info| info.protocol_version.to_string())
            .unwrap_or_default();
        if !SUPPORTED_VERSIONS.contains(&version.as_str()) {
            connection.close().await?;
            return Err(McpError::protocol(format!(
                "MCP server `{label}` speaks protocol version {version:?}; this client speaks {}",
                SUPPORTED_VERSIONS.join(", ")
            )));
        }
        Ok(connection)
    }

    /// Ends the connection: the client stops, stdin is closed (or the HTTP session
    /// deleted), the server gets [`CLOSE_GRACE`] to exit, then its process group is killed.
    /// A custom transport's own `close` is called last and its error returned.
    pub(crate) async fn close(&self) -> Result<(), McpError> {
        let deadline = tokio::time::Instant::now() + CLOSE_GRACE;
        let running = self.running.lock().await.take();
        if let Some(mut running) = running {
            let _ = running.close_with_timeout(CLOSE_GRACE).await;
        }
        let group = self
            .process
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(mut group) = group {
            let _ = tokio::time::timeout_at(deadline, group.child.wait()).await;
            group.kill();
            // Reaped here rather than left to the runtime, so close leaves no zombie.
            let _ = tokio::time::timeout(Duration::from_secs(1), group.child.wait()).await;
        }
        match &self.custom {
            Some(inner) => inner.close().await,
            None => Ok(()),
        }
    }
}

/// A stdio server's stdout and stdin as an rmcp transport.
type StdioTransport =
    AsyncRwTransport<RoleClient, Lines<tokio::process::ChildStdout>, tokio::process::ChildStdin>;

/// Starts the server in a process group of its own, its stdout and stdin the transport and
/// its stderr this process's (inherited: a full pipe can never block it).
fn spawn(
    command: &[OsString],
    env: &[(OsString, OsString)],
    label: &str,
) -> Result<(ProcessGroup, StdioTransport), McpError> {
    let Some((program, args)) = command.split_first() else {
        return Err(McpError::new(
            "an MCP stdio server needs a command to run; pass the program and its arguments",
        ));
    };
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| {
            McpError::transport(format!(
                "cannot start MCP server `{label}`: {e}; check that {} is installed and on PATH",
                program.to_string_lossy()
            ))
        })?;
    let pgid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw);
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let group = ProcessGroup { child, pgid };
    match (stdout, stdin) {
        (Some(stdout), Some(stdin)) => Ok((
            group,
            AsyncRwTransport::new_client(Lines::new(stdout, label), stdin)
                .with_max_line_length(MAX_LINE),
        )),
        _ => Err(McpError::transport(format!(
            "MCP server `{label}` started without its stdin and stdout pipes"
        ))),
    }
}

/// rmcp's `initialize` / `notifications/initialized`, bounded by `timeout`.
async fn handshake<T>(
    handler: Handler,
    transport: T,
    label: &str,
    timeout: Duration,
) -> Result<RunningService<RoleClient, Handler>, McpError>
where
    T: rmcp::transport::Transport<RoleClient> + 'static,
{
    // Progress routes see only the replies that answer a request of this client.
    let transport = RouteProgress::new(
        SkipStrays::new(transport),
        Arc::clone(&handler.offers.progress),
    );
    match tokio::time::timeout(timeout, rmcp::serve_client(handler, transport)).await {
        Err(_) => Err(McpError::timeout(label, "initialize", timeout)),
        Ok(Err(e)) => Err(McpError::from_initialize(e, label)),
        Ok(Ok(running)) => Ok(running),
    }
}
