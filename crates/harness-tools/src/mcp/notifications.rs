//! What a server says on its own: progress on a request, log messages, changes to its
//! lists and resources. Handed to the application's callback
//! ([`McpServer::with_notifications`](super::McpServer::with_notifications)); without one
//! they are read and dropped.
// Logging is deprecated for the 2026 protocol (SEP-2577); servers of 2025-11-25 use it.
#![allow(deprecated)]

use rmcp::model::{ClientRequest, LoggingLevel, SetLevelRequest, SetLevelRequestParams};
use serde_json::Value;

use super::McpServer;

/// A notification from a server.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum McpNotification {
    /// Progress on a request of this client's (a long tool call, say).
    Progress {
        /// The request's progress token, as the server echoed it (a string or a number).
        token: Value,
        /// How far along it is; grows with each notification.
        progress: f64,
        /// Where it will end, when the server knows.
        total: Option<f64>,
        /// What it is doing, when the server says.
        message: Option<String>,
    },
    /// A log message.
    Log {
        /// Its severity: `debug`, `info`, `notice`, `warning`, `error`, `critical`,
        /// `alert` or `emergency`.
        level: String,
        /// The logger that wrote it, when the server names one.
        logger: Option<String>,
        /// What it says: any JSON, often a string.
        data: Value,
    },
    /// A resource this client subscribed to changed; read it again to see how.
    ResourceUpdated {
        /// The resource's URI.
        uri: String,
    },
    /// The server's resource list changed.
    ResourceListChanged,
    /// The server's tool list changed: tools handed out before may be stale.
    ToolListChanged,
    /// The server's prompt list changed.
    PromptListChanged,
}

/// Receives a server's notifications: the server's name and what it said. Called on the
/// connection's task, so it should return quickly (send the notification on to a channel
/// for slow work).
pub(crate) type Notify = dyn Fn(&str, McpNotification) + Send + Sync;

impl McpServer {
    /// Asks the server to send log messages of `level` and above (`logging/setLevel`):
    /// `debug`, `info`, `notice`, `warning`, `error`, `critical`, `alert` or `emergency`.
    /// They reach the [`with_notifications`](Self::with_notifications) callback.
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error for a level not in
    /// that list; otherwise an [`Mcp`](harness_core::ErrorKind::Mcp) error from the handshake
    /// or the request.
    pub async fn set_log_level(&self, level: &str) -> harness_core::Result<()> {
        let level: LoggingLevel = serde_json::from_value(Value::from(level)).map_err(|_| {
            harness_core::Error::configuration(format!(
                "unknown MCP log level {level:?}: use debug, info, notice, warning, error, \
                 critical, alert or emergency"
            ))
        })?;
        let request =
            ClientRequest::SetLevelRequest(SetLevelRequest::new(SetLevelRequestParams::new(level)));
        self.request(request, "logging/setLevel", self.timeout)
            .await
            .map(drop)
            .map_err(harness_core::Error::from)
    }
}

/// A log level's wire name.
pub(crate) fn level_name(level: LoggingLevel) -> String {
    serde_json::to_value(level)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "info".to_owned())
}
