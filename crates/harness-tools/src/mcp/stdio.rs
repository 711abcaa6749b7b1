//! The stdio transport: a subprocess speaking newline-delimited JSON-RPC.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::Mutex;

use super::protocol::{self, Incoming};
use super::{McpError, Transport};

struct Process {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

/// A local MCP server run as a subprocess, started on first use. Messages are compact JSON,
/// one a line; the server's own requests (`ping`, `roots/list`) are answered as they come,
/// and its notifications skipped, while reading up to the reply. The child is killed and
/// reaped on [`close`](Transport::close) and when the transport is dropped.
pub struct StdioTransport {
    command: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    roots: Arc<RwLock<Vec<PathBuf>>>,
    process: Mutex<Option<Process>>,
    next_id: AtomicU64,
}

impl std::fmt::Debug for StdioTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioTransport")
            .field("command", &self.command)
            .finish_non_exhaustive()
    }
}

impl StdioTransport {
    /// A transport that runs `command` (program and arguments).
    ///
    /// # Errors
    /// [`McpError`] for an empty command.
    pub fn new(command: Vec<OsString>) -> Result<Self, McpError> {
        if command.is_empty() {
            return Err(McpError::new("an MCP stdio server needs a command to run"));
        }
        Ok(Self {
            command,
            env: Vec::new(),
            roots: Arc::default(),
            process: Mutex::new(None),
            next_id: AtomicU64::new(1),
        })
    }

    /// Adds an environment variable for the server.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    pub(crate) fn roots_handle(&self) -> Arc<RwLock<Vec<PathBuf>>> {
        Arc::clone(&self.roots)
    }

    fn start(&self) -> Result<Process, McpError> {
        let mut command = tokio::process::Command::new(&self.command[0]);
        command
            .args(&self.command[1..])
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|e| {
            McpError::new(format!(
                "cannot start MCP server {}: {e}",
                self.command[0].to_string_lossy()
            ))
        })?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| McpError::new("the MCP server has no stdin"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| McpError::new("the MCP server has no stdout"))?;
        Ok(Process {
            child,
            stdin,
            stdout: BufReader::new(stdout),
        })
    }

    async fn write(process: &mut Process, message: &Value) -> Result<(), McpError> {
        let mut line = message.to_string();
        line.push('\n');
        process
            .stdin
            .write_all(line.as_bytes())
            .await
            .map_err(|e| McpError::new(format!("cannot write to the MCP server: {e}")))?;
        process
            .stdin
            .flush()
            .await
            .map_err(|e| McpError::new(format!("cannot write to the MCP server: {e}")))
    }
}

#[async_trait::async_trait]
impl Transport for StdioTransport {
    async fn request(&self, method: &str, params: Value) -> Result<Value, McpError> {
        let mut guard = self.process.lock().await;
        if guard.is_none() {
            *guard = Some(self.start()?);
        }
        let process = guard
            .as_mut()
            .ok_or_else(|| McpError::new("the MCP server is not running"))?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        Self::write(process, &protocol::request(id, method, &params)).await?;
        let mut line = String::new();
        loop {
            line.clear();
            let read = process.stdout.read_line(&mut line).await.map_err(|e| {
                McpError::new(format!(
                    "cannot read from the MCP server during {method}: {e}"
                ))
            })?;
            if read == 0 {
                return Err(McpError::new(format!(
                    "MCP server closed the connection during {method}"
                )));
            }
            let Ok(message) = serde_json::from_str::<Value>(line.trim()) else {
                continue; // not JSON: a server's stray log line
            };
            match protocol::classify(&message, method) {
                Incoming::Response { id: got, outcome } if got == id => return outcome,
                Incoming::Request {
                    id: request_id,
                    method: asked,
                } => {
                    let roots = self.roots.read().map(|r| r.clone()).unwrap_or_default();
                    Self::write(process, &protocol::answer(&request_id, &asked, &roots)).await?;
                }
                _ => {}
            }
        }
    }

    async fn notify(&self, method: &str, params: Value) -> Result<(), McpError> {
        let mut guard = self.process.lock().await;
        if guard.is_none() {
            *guard = Some(self.start()?);
        }
        let process = guard
            .as_mut()
            .ok_or_else(|| McpError::new("the MCP server is not running"))?;
        Self::write(process, &protocol::notification(method, &params)).await
    }

    async fn close(&self) -> Result<(), McpError> {
        let Some(mut process) = self.process.lock().await.take() else {
            return Ok(());
        };
        drop(process.stdin);
        if tokio::time::timeout(Duration::from_secs(2), process.child.wait())
            .await
            .is_err()
        {
            let _ = process.child.kill().await;
        }
        Ok(())
    }
}
