//! The streamable HTTP transport (MCP 2025-03-26 and later).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use futures_util::StreamExt as _;
use harness_providers::SseDecoder;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use super::protocol::{self, Incoming};
use super::{McpError, Transport};

const SESSION: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
/// How many times a dropped reply stream is resumed before giving up.
const RESUMES: usize = 5;

/// A remote MCP server over streamable HTTP: every message is a POST; the reply is JSON or
/// an SSE stream (priming events with empty data skipped); the `Mcp-Session-Id` a server
/// issues is carried on every later request; a reply stream that drops before the answer is
/// resumed with GET and `Last-Event-ID`; the session is ended with DELETE on close.
pub struct HttpTransport {
    url: String,
    client: reqwest::Client,
    headers: HeaderMap,
    session: Mutex<Option<String>>,
    version: Mutex<Option<String>>,
    next_id: AtomicU64,
}

impl std::fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTransport")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// One read of a reply stream: the answer, or where to resume.
enum Read {
    Answer(Result<Value, McpError>),
    Dropped {
        last_id: Option<String>,
        retry: Option<u64>,
    },
}

impl HttpTransport {
    /// A transport to `url` with extra `headers` (authentication, say).
    ///
    /// # Errors
    /// [`McpError`] for a header that is not valid HTTP.
    pub fn new(url: impl Into<String>, headers: &[(String, String)]) -> Result<Self, McpError> {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| McpError::new(format!("invalid header name {name:?}: {e}")))?;
            let value = HeaderValue::from_str(value)
                .map_err(|e| McpError::new(format!("invalid value for header {name}: {e}")))?;
            map.insert(name, value);
        }
        let client = harness_providers::client_builder()
            .map_err(|e| McpError::new(e.to_string()))?
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| McpError::new(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self {
            url: url.into(),
            client,
            headers: map,
            session: Mutex::new(None),
            version: Mutex::new(None),
            next_id: AtomicU64::new(1),
        })
    }

    /// The session id the server issued, if any.
    pub fn session_id(&self) -> Option<String> {
        self.session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn decorate(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let mut request = request.headers(self.headers.clone());
        if let Some(session) = self.session_id() {
            request = request.header(SESSION, session);
        }
        if let Some(version) = self
            .version
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
        {
            request = request.header(VERSION_HEADER, version);
        }
        request
    }

    async fn post(&self, message: &Value, method: &str) -> Result<reqwest::Response, McpError> {
        let response = self
            .decorate(self.client.post(&self.url))
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream")
            .body(message.to_string())
            .send()
            .await
            .map_err(|e| McpError::new(format!("MCP request to {} failed: {e}", self.url)))?;
        if let Some(session) = response
            .headers()
            .get(SESSION)
            .and_then(|v| v.to_str().ok())
        {
            *self.session.lock().unwrap_or_else(PoisonError::into_inner) = Some(session.to_owned());
        }
        if response.status().as_u16() >= 400 {
            return Err(McpError::new(format!(
                "MCP server answered {} for {method}",
                response.status().as_u16()
            )));
        }
        Ok(response)
    }

    /// Reads a reply stream up to our answer, serving the server's requests on the way.
    async fn read_stream(&self, response: reqwest::Response, id: u64, method: &str) -> Read {
        let mut decoder = SseDecoder::new();
        let mut body = response.bytes_stream();
        let mut messages: Vec<Value> = Vec::new();
        loop {
            let chunk = body.next().await;
            let ended = !matches!(chunk, Some(Ok(_)));
            let mut take = |event: harness_providers::SseEvent<'_>| {
                if let Ok(message) = serde_json::from_str::<Value>(event.data) {
                    messages.push(message);
                }
            };
            match &chunk {
                Some(Ok(bytes)) => decoder.feed(bytes, &mut take),
                _ => decoder.finish(&mut take),
            }
            for message in messages.drain(..) {
                match protocol::classify(&message, method) {
                    Incoming::Response { id: got, outcome } if got == id => {
                        return Read::Answer(outcome);
                    }
                    Incoming::Request {
                        id: request_id,
                        method: asked,
                    } => {
                        let answer = protocol::answer(&request_id, &asked, &[]);
                        let _ = self.post(&answer, &asked).await;
                    }
                    _ => {}
                }
            }
            if ended {
                return Read::Dropped {
                    last_id: decoder.last_event_id().map(str::to_owned),
                    retry: decoder.retry(),
                };
            }
        }
    }

    /// After the handshake, every request names the agreed protocol version in a header.
    fn remember_version(
        &self,
        method: &str,
        outcome: Result<Value, McpError>,
    ) -> Result<Value, McpError> {
        if method == "initialize"
            && let Ok(result) = &outcome
            && let Some(version) = result.get("protocolVersion").and_then(Value::as_str)
        {
            *self.version.lock().unwrap_or_else(PoisonError::into_inner) = Some(version.to_owned());
        }
        outcome
    }

    async fn resume(&self, last_id: &str) -> Result<reqwest::Response, McpError> {
        let response = self
            .decorate(self.client.get(&self.url))
            .header(ACCEPT, "text/event-stream")
            .header("last-event-id", last_id)
            .send()
            .await
            .map_err(|e| McpError::new(format!("MCP request to {} failed: {e}", self.url)))?;
        if response.status().as_u16() >= 400 {
            return Err(McpError::new(format!(
                "MCP server answered {} when resuming a stream",
                response.status().as_u16()
            )));
        }
        Ok(response)
    }
}

fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/event-stream"))
}

#[async_trait::async_trait]
impl Transport for HttpTransport {
    async fn request(&self, method: &str, params: Value) -> Result<Value, McpError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let response = self
            .post(&protocol::request(id, method, &params), method)
            .await?;
        if !is_event_stream(&response) {
            let body = response
                .bytes()
                .await
                .map_err(|e| McpError::new(format!("MCP request to {} failed: {e}", self.url)))?;
            let message: Value = serde_json::from_slice(&body).map_err(|e| {
                McpError::new(format!(
                    "MCP server sent a body that is not JSON for {method}: {e}"
                ))
            })?;
            return match protocol::classify(&message, method) {
                Incoming::Response { outcome, .. } => self.remember_version(method, outcome),
                _ => Err(McpError::new(format!(
                    "MCP server sent no result for {method}"
                ))),
            };
        }
        let mut read = self.read_stream(response, id, method).await;
        for _ in 0..RESUMES {
            match read {
                Read::Answer(outcome) => return self.remember_version(method, outcome),
                Read::Dropped {
                    last_id: Some(last_id),
                    retry,
                } => {
                    tokio::time::sleep(Duration::from_millis(retry.unwrap_or(0).min(5_000))).await;
                    let response = self.resume(&last_id).await?;
                    read = self.read_stream(response, id, method).await;
                }
                Read::Dropped { last_id: None, .. } => break,
            }
        }
        match read {
            Read::Answer(outcome) => outcome,
            Read::Dropped { .. } => Err(McpError::new(format!(
                "MCP server sent no result for {method}"
            ))),
        }
    }

    async fn notify(&self, method: &str, params: Value) -> Result<(), McpError> {
        self.post(&protocol::notification(method, &params), method)
            .await
            .map(drop)
    }

    async fn close(&self) -> Result<(), McpError> {
        if self.session_id().is_some() {
            let _ = self.decorate(self.client.delete(&self.url)).send().await;
        }
        Ok(())
    }
}
