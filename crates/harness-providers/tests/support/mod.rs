//! A loopback HTTP/1.1 server for provider tests: it records every request and answers
//! each with what the test's handler says, optionally slowly or cut short.

#![allow(
    dead_code,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
}

/// What the server answers.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Wait this long before answering.
    pub delay: Duration,
    /// Declare a longer body than is sent, then close: a stream cut mid-body.
    pub cut: bool,
    /// Send the body in pieces of this many bytes, flushing each.
    pub chunk: Option<usize>,
}

impl Reply {
    pub fn json(status: u16, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.into(),
            delay: Duration::ZERO,
            cut: false,
            chunk: None,
        }
    }

    pub fn sse(body: impl Into<Vec<u8>>) -> Self {
        Self {
            headers: vec![("content-type".into(), "text/event-stream".into())],
            chunk: Some(97),
            ..Self::json(200, body)
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn delayed(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    pub fn cut_short(mut self) -> Self {
        self.cut = true;
        self
    }
}

pub struct Server {
    pub url: String,
    requests: Arc<Mutex<Vec<Request>>>,
    in_flight: Arc<AtomicUsize>,
    max_in_flight: Arc<AtomicUsize>,
}

impl Server {
    /// Starts a server whose handler answers the n-th request (0-based) with a reply.
    pub async fn start(handler: impl Fn(usize, &Request) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests: Arc<Mutex<Vec<Request>>> = Arc::default();
        let in_flight = Arc::new(AtomicUsize::new(0));
        let max_in_flight = Arc::new(AtomicUsize::new(0));
        let handler = Arc::new(handler);
        let (log, now, max) = (requests.clone(), in_flight.clone(), max_in_flight.clone());
        tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let (handler, log, now, max) =
                    (handler.clone(), log.clone(), now.clone(), max.clone());
                tokio::spawn(async move {
                    let Some(request) = read_request(&mut socket).await else {
                        return;
                    };
                    let index = {
                        let mut log = log.lock().unwrap();
                        log.push(request.clone());
                        log.len() - 1
                    };
                    let current = now.fetch_add(1, Ordering::SeqCst) + 1;
                    max.fetch_max(current, Ordering::SeqCst);
                    let reply = handler(index, &request);
                    tokio::time::sleep(reply.delay).await;
                    write_reply(&mut socket, &reply).await;
                    now.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        Self {
            url,
            requests,
            in_flight,
            max_in_flight,
        }
    }

    /// A server that answers every request with the same reply.
    pub async fn always(reply: Reply) -> Self {
        Self::start(move |_, _| reply.clone()).await
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight.load(Ordering::SeqCst)
    }
}

/// Reads one HTTP/1.1 request: its head and a `content-length` body.
pub async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<Request> {
    let mut buffer = Vec::new();
    let mut chunk = [0_u8; 8192];
    let head_end = loop {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split_whitespace();
    let (method, target) = (first.next()?.to_owned(), first.next()?.to_owned());
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Request {
        method,
        target,
        headers,
        body,
    })
}

async fn write_reply(socket: &mut tokio::net::TcpStream, reply: &Reply) {
    let declared = if reply.cut {
        reply.body.len() + 1000
    } else {
        reply.body.len()
    };
    let mut head = format!(
        "HTTP/1.1 {} X\r\ncontent-length: {declared}\r\nconnection: close\r\n",
        reply.status
    );
    for (k, v) in &reply.headers {
        use std::fmt::Write as _;
        let _ = write!(head, "{k}: {v}\r\n");
    }
    head.push_str("\r\n");
    if socket.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    let size = reply.chunk.unwrap_or(reply.body.len().max(1));
    for piece in reply.body.chunks(size) {
        if socket.write_all(piece).await.is_err() {
            return;
        }
        let _ = socket.flush().await;
    }
    let _ = socket.shutdown().await;
}

/// A file of the recorded traffic in `tests/fixtures`.
pub fn fixture(path: &str) -> Vec<u8> {
    let full = fixtures_dir().join(path);
    std::fs::read(&full).unwrap_or_else(|e| panic!("cannot read {}: {e}", full.display()))
}

pub fn fixture_json(path: &str) -> serde_json::Value {
    serde_json::from_slice(&fixture(path)).unwrap()
}

pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Every event of a model's stream for `messages` and `tools`; any error fails the test.
pub async fn collect_events<M: harness_core::Llm + Clone>(
    model: &M,
    messages: &[harness_core::Message],
    tools: &[Arc<harness_core::ToolSpec>],
) -> Vec<harness_core::LlmEvent> {
    use futures_util::StreamExt as _;
    Arc::new(model.clone())
        .stream(harness_core::Request::new(messages).with_tools(tools))
        .map(|e| e.unwrap())
        .collect()
        .await
}

/// The assistant message a turn leaves in the transcript, as the agent keeps it.
pub fn turn(response: &harness_core::CompletionResponse) -> harness_core::Message {
    harness_core::Message::assistant(harness_core::Content::from_blocks(
        response.blocks().to_vec(),
    ))
    .with_tool_calls(response.tool_calls().to_vec())
}

/// A response's usage as `(prompt, completion, total, cached, reasoning)`.
pub fn usage_figures(response: &harness_core::CompletionResponse) -> (u64, u64, u64, u64, u64) {
    let u = response.usage().unwrap();
    (
        u.prompt_tokens,
        u.completion_tokens,
        u.total_tokens,
        u.cached_tokens,
        u.reasoning_tokens,
    )
}

/// The response a stream ended with.
pub fn completed(events: &[harness_core::LlmEvent]) -> &harness_core::CompletionResponse {
    match events.last() {
        Some(harness_core::LlmEvent::Completed(response)) => response,
        other => panic!("the stream did not end in Completed: {other:?}"),
    }
}

/// The text deltas of a stream (`thinking`: its reasoning deltas instead), joined.
pub fn deltas(events: &[harness_core::LlmEvent], thinking: bool) -> String {
    use harness_core::LlmEvent;
    events
        .iter()
        .filter_map(|e| match (e, thinking) {
            (LlmEvent::TextDelta(t), false) | (LlmEvent::ThinkingDelta(t), true) => {
                Some(t.as_str())
            }
            _ => None,
        })
        .collect()
}

/// Chat Completions messages in a form to compare: null fields dropped, tool-call arguments
/// parsed from their JSON string (a recorded message without `content` then matches ours with
/// `content: null`, and argument spacing does not matter).
pub fn openai_messages_normal(messages: &serde_json::Value) -> Vec<serde_json::Value> {
    use serde_json::Value;
    messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let mut m = m.as_object().unwrap().clone();
            m.retain(|_, v| !v.is_null());
            if let Some(Value::Array(calls)) = m.get_mut("tool_calls") {
                for call in calls {
                    let args = call["function"]["arguments"].as_str().unwrap().to_owned();
                    call["function"]["arguments"] = serde_json::from_str(&args).unwrap();
                }
            }
            Value::Object(m)
        })
        .collect()
}

/// The vendor formats, for a test run through each; Gemini and Claude on Vertex AI and
/// Azure OpenAI's Chat Completions and Responses, those formats on a cloud's paths; and
/// Bedrock's Converse, its stream AWS's binary event stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vendor {
    OpenAi,
    Anthropic,
    Gemini,
    Cohere,
    /// The OpenAI Responses API.
    Responses,
    VertexGemini,
    VertexAnthropic,
    /// AWS Bedrock's Converse and ConverseStream (the `bedrock` feature, which the crate's
    /// tests always have).
    Bedrock,
    /// Azure OpenAI's Chat Completions (OpenAI's format at Azure's URLs).
    Azure,
    /// Azure OpenAI's Responses API.
    AzureResponses,
}

impl Vendor {
    /// The vendor's provider against a server at `url`, with a key.
    pub fn model(self, url: &str) -> Arc<dyn harness_core::Llm> {
        match self {
            Self::OpenAi => Arc::new(
                harness_providers::OpenAi::builder("m")
                    .api_key("k")
                    .base_url(url)
                    .build()
                    .unwrap(),
            ),
            Self::Anthropic => Arc::new(
                harness_providers::Anthropic::builder("m")
                    .api_key("k")
                    .base_url(url)
                    .build()
                    .unwrap(),
            ),
            Self::Gemini => Arc::new(
                harness_providers::Gemini::builder("m")
                    .api_key("k")
                    .base_url(url)
                    .build()
                    .unwrap(),
            ),
            Self::Cohere => Arc::new(
                harness_providers::Cohere::builder("m")
                    .api_key("k")
                    .base_url(url)
                    .build()
                    .unwrap(),
            ),
            Self::Responses => Arc::new(
                harness_providers::OpenAiResponses::builder("m")
                    .api_key("k")
                    .base_url(url)
                    .build()
                    .unwrap(),
            ),
            Self::VertexGemini => Arc::new(vertex(url).gemini("m").unwrap()),
            Self::VertexAnthropic => Arc::new(vertex(url).anthropic("m").unwrap()),
            // A Bedrock API key: no signing, no credentials looked up.
            Self::Bedrock => Arc::new(
                harness_providers::Bedrock::builder("m")
                    .region("us-east-1")
                    .api_key("k")
                    .base_url(url)
                    .build()
                    .unwrap(),
            ),
            Self::Azure => Arc::new(azure(url).chat("m").unwrap()),
            Self::AzureResponses => Arc::new(azure(url).responses("m").unwrap()),
        }
    }

    /// The direct vendor whose wire format this one speaks (a cloud's models speak their
    /// vendor's).
    pub fn wire(self) -> Self {
        match self {
            Self::VertexGemini => Self::Gemini,
            Self::VertexAnthropic => Self::Anthropic,
            Self::Azure => Self::OpenAi,
            Self::AzureResponses => Self::Responses,
            direct => direct,
        }
    }
}

/// An Azure OpenAI connection with `url` as the resource's endpoint, with a key.
pub fn azure(url: &str) -> harness_providers::AzureOpenAi {
    harness_providers::AzureOpenAi::builder()
        .endpoint(url)
        .api_key("k")
        .build()
        .unwrap()
}

/// A Vertex AI connection to a server at `url`, with a project, a location and a key.
pub fn vertex(url: &str) -> harness_providers::Vertex {
    harness_providers::Vertex::builder()
        .project("p")
        .location("us-east5")
        .api_key("k")
        .base_url(url)
        .build()
        .unwrap()
}

/// One frame of AWS's event stream (Bedrock's ConverseStream) with string headers, written by
/// AWS's own encoder.
pub fn eventstream_frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
    let mut message = Message::new(bytes::Bytes::copy_from_slice(payload));
    for (name, value) in headers {
        message = message.add_header(Header::new(
            (*name).to_owned(),
            HeaderValue::String((*value).to_owned().into()),
        ));
    }
    let mut out = Vec::new();
    aws_smithy_eventstream::frame::write_message_to(&message, &mut out).unwrap();
    out
}

/// The CRC32 an event-stream frame's prelude and message carry.
pub fn crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}
