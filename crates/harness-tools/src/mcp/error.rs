//! [`McpError`]: a kind to match on and a message that says what went wrong and what to do.

use std::error::Error as StdError;
use std::time::Duration;

use rmcp::ServiceError;
use rmcp::model::ErrorData;
use rmcp::service::ClientInitializeError;

/// What kind of failure an [`McpError`] is. New kinds may be added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum McpErrorKind {
    /// The server did not answer a request within its timeout.
    Timeout,
    /// The server could not be started or reached, or the connection broke.
    Transport,
    /// The server answered a request with a JSON-RPC error.
    Refused,
    /// A tool call the server reported as failed (`isError: true`).
    ToolFailed,
    /// The server answered in a shape this client does not accept: a protocol version it
    /// does not speak, or a result of the wrong type.
    Protocol,
    /// The server was closed with [`McpServer::close`](super::McpServer::close).
    Closed,
    /// The server requires authorization and it could not be had: no OAuth configured for a
    /// server that answered 401, or OAuth failed (discovery, registration, the user's
    /// sign-in, the token exchange, a step-up past its limit). The message says which step
    /// and what to do.
    Authorization,
    /// Anything else, including errors made with [`McpError::new`].
    Other,
}

impl McpErrorKind {
    /// A stable name, carried through the [`Transport`](super::Transport) adapter.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Timeout => "timeout",
            Self::Transport => "transport",
            Self::Refused => "refused",
            Self::ToolFailed => "tool_failed",
            Self::Protocol => "protocol",
            Self::Closed => "closed",
            Self::Authorization => "authorization",
            Self::Other => "other",
        }
    }

    pub(crate) fn from_name(name: &str) -> Self {
        match name {
            "timeout" => Self::Timeout,
            "transport" => Self::Transport,
            "refused" => Self::Refused,
            "tool_failed" => Self::ToolFailed,
            "protocol" => Self::Protocol,
            "closed" => Self::Closed,
            "authorization" => Self::Authorization,
            _ => Self::Other,
        }
    }
}

/// An MCP failure: of the transport, of the protocol, a timeout, or a tool call the server
/// reported as failed. Inside an agent run it reaches the model as the call's result.
///
/// ```
/// use harness_tools::mcp::{McpError, McpErrorKind};
///
/// let err = McpError::with_kind(McpErrorKind::Timeout, "the server did not answer");
/// assert!(err.is_timeout());
/// assert_eq!(err.message(), "the server did not answer");
/// assert_eq!(McpError::new("boom").kind(), McpErrorKind::Other);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct McpError {
    kind: McpErrorKind,
    message: String,
}

impl McpError {
    /// An error saying `message`, of kind [`McpErrorKind::Other`].
    pub fn new(message: impl Into<String>) -> Self {
        Self::with_kind(McpErrorKind::Other, message)
    }

    /// An error of `kind` saying `message`: for a [`Transport`](super::Transport) of your
    /// own that wants its timeouts and broken connections told apart.
    pub fn with_kind(kind: McpErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// What went wrong.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The kind of failure.
    pub fn kind(&self) -> McpErrorKind {
        self.kind
    }

    /// True when the server did not answer in time.
    pub fn is_timeout(&self) -> bool {
        self.kind == McpErrorKind::Timeout
    }

    /// True when the server could not be started or reached, or the connection broke.
    pub fn is_transport(&self) -> bool {
        self.kind == McpErrorKind::Transport
    }

    /// True when the server answered with a JSON-RPC error.
    pub fn is_refused(&self) -> bool {
        self.kind == McpErrorKind::Refused
    }

    /// True for a tool call the server reported as failed (`isError`).
    pub fn is_tool_failed(&self) -> bool {
        self.kind == McpErrorKind::ToolFailed
    }

    /// True when the server's answer broke the protocol.
    pub fn is_protocol(&self) -> bool {
        self.kind == McpErrorKind::Protocol
    }

    /// True when the server was already closed.
    pub fn is_closed(&self) -> bool {
        self.kind == McpErrorKind::Closed
    }

    /// True when the server requires authorization and it could not be had (see
    /// [`McpErrorKind::Authorization`]).
    pub fn is_authorization(&self) -> bool {
        self.kind == McpErrorKind::Authorization
    }

    pub(crate) fn timeout(server: &str, method: &str, timeout: Duration) -> Self {
        Self::with_kind(
            McpErrorKind::Timeout,
            format!(
                "MCP server `{server}` did not answer {method} within {timeout:?}: it may be \
                 stuck, slow or not an MCP server; raise the limit with McpServer::with_timeout (or \
                 CallOptions::with_timeout for one call) if it needs longer"
            ),
        )
    }

    pub(crate) fn transport(message: impl Into<String>) -> Self {
        Self::with_kind(McpErrorKind::Transport, message)
    }

    pub(crate) fn protocol(message: impl Into<String>) -> Self {
        Self::with_kind(McpErrorKind::Protocol, message)
    }

    /// A JSON-RPC error from the server, or an error of a user's transport carried through
    /// the adapter with its kind.
    pub(crate) fn from_error_data(error: &ErrorData, method: &str) -> Self {
        if let Some(kind) = super::adapter::carried_kind(error) {
            return Self::with_kind(kind, error.message.clone());
        }
        Self::with_kind(
            McpErrorKind::Refused,
            format!(
                "MCP server refused {method}: {} (code {})",
                error.message, error.code.0
            ),
        )
    }

    /// A failed request, as rmcp reports it.
    pub(crate) fn from_service(
        error: ServiceError,
        server: &str,
        method: &str,
        timeout: Duration,
    ) -> Self {
        let found = match &error {
            // The transport's error is carried, not a source: looked into on its own.
            ServiceError::TransportSend(inner) => authorization_failure(inner, server),
            other => authorization_failure(other, server),
        };
        if let Some(error) = found {
            return error;
        }
        match error {
            ServiceError::Timeout { .. } => Self::timeout(server, method, timeout),
            ServiceError::McpError(data) => Self::from_error_data(&data, method),
            ServiceError::TransportClosed => Self::transport(format!(
                "MCP server `{server}` closed the connection during {method}: it exited or \
                 dropped the connection (a stdio server's own errors are on this process's \
                 stderr)"
            )),
            ServiceError::TransportSend(e) => Self::transport(format!(
                "cannot send {method} to MCP server `{server}`: {}",
                chain(&e)
            )),
            ServiceError::UnexpectedResponse => Self::protocol(format!(
                "MCP server `{server}` answered {method} with a result of the wrong type"
            )),
            ServiceError::Cancelled { reason } => Self::transport(format!(
                "{method} to MCP server `{server}` was cancelled: {}",
                reason.as_deref().unwrap_or("no reason given")
            )),
            other => Self::new(format!(
                "{method} to MCP server `{server}` failed: {}",
                chain(&other)
            )),
        }
    }

    /// A failed handshake, as rmcp reports it.
    pub(crate) fn from_initialize(error: ClientInitializeError, server: &str) -> Self {
        let found = match &error {
            // The transport's error is carried, not a source: looked into on its own.
            ClientInitializeError::TransportError { error: inner, .. } => {
                authorization_failure(inner, server)
            }
            other => authorization_failure(other, server),
        };
        if let Some(error) = found {
            return error;
        }
        match error {
            ClientInitializeError::ConnectionClosed(_) => Self::transport(format!(
                "MCP server `{server}` closed the connection before answering initialize: it \
                 exited, or is not an MCP server (a stdio server's own errors are on this \
                 process's stderr)"
            )),
            ClientInitializeError::TransportError { error, context } => Self::transport(format!(
                "cannot reach MCP server `{server}` ({context}): {}",
                chain(&error)
            )),
            ClientInitializeError::JsonRpcError(data) => Self::from_error_data(&data, "initialize"),
            ClientInitializeError::Cancelled => Self::transport(format!(
                "the handshake with MCP server `{server}` was cancelled"
            )),
            other => Self::protocol(format!(
                "MCP server `{server}` answered initialize wrongly: {}",
                chain(&other)
            )),
        }
    }
}

/// Kind [`Mcp`](harness_core::ErrorKind::Mcp), timed out when the server did not answer in
/// time; the source is this error, reached with [`harness_core::Error::downcast_ref`].
impl From<McpError> for harness_core::Error {
    fn from(error: McpError) -> Self {
        let timeout = error.is_timeout();
        let converted = Self::from_source(harness_core::ErrorKind::Mcp, error);
        if timeout {
            converted.timed_out()
        } else {
            converted
        }
    }
}

/// Inside a tool call, a failure the model reads, this error kept as its source.
impl From<McpError> for harness_core::ToolError {
    fn from(error: McpError) -> Self {
        Self::failed(error.message.clone()).with_source(error)
    }
}

#[cfg(not(feature = "mcp-http"))]
fn authorization_failure(_error: &(dyn StdError + 'static), _server: &str) -> Option<McpError> {
    None
}

/// An authorization failure somewhere in `error`'s sources: the server's 401 or 403 (no
/// OAuth configured), or OAuth's own failure (feature `mcp-auth`).
#[cfg(feature = "mcp-http")]
fn authorization_failure(error: &(dyn StdError + 'static), server: &str) -> Option<McpError> {
    use rmcp::transport::streamable_http_client::{AuthRequiredError, InsufficientScopeError};
    let mut source = Some(error);
    while let Some(cause) = source {
        #[cfg(feature = "mcp-auth")]
        if let Some(auth) = cause.downcast_ref::<rmcp::transport::auth::AuthError>() {
            return Some(McpError::with_kind(
                McpErrorKind::Authorization,
                format!("cannot authorize with MCP server `{server}`: {auth}"),
            ));
        }
        if cause.downcast_ref::<AuthRequiredError>().is_some() {
            return Some(McpError::with_kind(
                McpErrorKind::Authorization,
                format!(
                    "MCP server `{server}` requires authorization (HTTP 401){AUTHORIZATION_HINT}"
                ),
            ));
        }
        if cause.downcast_ref::<InsufficientScopeError>().is_some() {
            return Some(McpError::with_kind(
                McpErrorKind::Authorization,
                format!(
                    "MCP server `{server}` refused the token as of insufficient scope (HTTP \
                     403){AUTHORIZATION_HINT}"
                ),
            ));
        }
        source = cause.source();
    }
    None
}

#[cfg(feature = "mcp-auth")]
const AUTHORIZATION_HINT: &str = "; sign in with McpServer::with_oauth(OAuth::new()), or pass a token with the right scopes \
     as an Authorization header";
#[cfg(all(feature = "mcp-http", not(feature = "mcp-auth")))]
const AUTHORIZATION_HINT: &str = "; pass a token as an Authorization header, or build with feature mcp-auth and sign in \
     with McpServer::with_oauth";

/// An error and its sources, joined, skipping a source its parent already quotes.
fn chain(error: &(dyn StdError + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let part = cause.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = cause.source();
    }
    text
}
