//! Fault injection: a scripted loopback server (raw TCP: it sends a head, bytes, trickles,
//! sleeps, closes early, resets, declares more than it sends, or never stops) driven through
//! each vendor's format (OpenAI Chat Completions, also spoken by llama.cpp and the gateways;
//! the OpenAI Responses API; Anthropic Messages; Gemini; Cohere's v2 chat; Gemini and Claude
//! on Vertex AI; Azure OpenAI's Chat Completions and Responses; Bedrock Converse, whose
//! stream is AWS's binary event stream), streamed and not, and through an `Agent`.
//!
//! Every probe is an expected outcome: the typed `ProviderError` kind a fault must end in,
//! the deltas that must still have been delivered, or the answer that must survive it. Each
//! attempt runs under a 20 s bound, so a regression fails instead of hanging. The suite
//! prints a table of probes, attempts and failures (`cargo test --test faults --
//! --nocapture`); `FAULTS_ONLY=<text>` runs the probes whose name contains the text.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use harness_core::Request;

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use harness_core::agent::{Agent, AgentEvent, AgentState, RunError, StopReason};
use harness_core::{
    CompletionResponse, Error, FinishReason, Llm, LlmEvent, Message, ProviderError,
    ProviderErrorKind, Role,
};
use harness_providers::replay::{Format, decode_stream};
use harness_providers::{
    Anthropic, AzureOpenAi, Bedrock, Cohere, Gemini, OpenAi, OpenAiResponses, RetryPolicy, Vertex,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How long one attempt of a probe may take before it counts as hung.
const BOUND: Duration = Duration::from_secs(20);
/// How long the server keeps a connection it holds open or feeds for ever.
const GUARD: Duration = Duration::from_secs(30);
/// The message every vendor error in this suite carries.
const VENDOR_MESSAGE: &str = "The engine is overloaded, try again later";

// The fault server ---------------------------------------------------------------------------

/// One thing the server does on a connection, in order; after the last step it closes the
/// connection cleanly (FIN).
#[derive(Clone, Debug)]
enum Step {
    /// Write these bytes and flush.
    Send(Vec<u8>),
    /// Write these bytes one at a time, waiting this long after each.
    Trickle(Vec<u8>, Duration),
    /// Write `piece` `times` times (a huge body without holding it in memory); stop when the
    /// client has gone.
    Fill(Vec<u8>, usize),
    Sleep(Duration),
    /// Write these bytes every so often until the client goes away (or [`GUARD`] passes).
    Forever(Vec<u8>, Duration),
    /// Say nothing until the client goes away (or [`GUARD`] passes).
    Hang,
    /// Abort the connection: SO_LINGER 0, then drop, so the client gets a reset.
    Reset,
}

/// What a probe's script sees of a request.
#[derive(Clone, Debug)]
struct Seen {
    target: String,
    body: Value,
}

type Script = dyn Fn(usize, &Seen) -> Vec<Step> + Send + Sync;

struct FaultServer {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl FaultServer {
    /// A server answering the n-th request (0-based) with the steps `script` gives.
    async fn start(script: impl Fn(usize, &Seen) -> Vec<Step> + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let script: Arc<Script> = Arc::new(script);
        let log = Arc::clone(&seen);
        tokio::spawn(async move {
            // The runtime of the test ends this loop when the test ends.
            while let Ok((socket, _)) = listener.accept().await {
                let (script, log) = (Arc::clone(&script), Arc::clone(&log));
                tokio::spawn(async move { serve(socket, &*script, &log).await });
            }
        });
        Self { url, seen }
    }

    /// A server answering every request the same way.
    async fn always(steps: Vec<Step>) -> Self {
        Self::start(move |_, _| steps.clone()).await
    }

    fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn hits(&self) -> usize {
        self.seen.lock().unwrap().len()
    }
}

async fn serve(mut socket: TcpStream, script: &Script, log: &Mutex<Vec<Seen>>) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    let steps = {
        let mut log = log.lock().unwrap();
        log.push(request.clone());
        script(log.len() - 1, &request)
    };
    for step in steps {
        let went_on = match step {
            Step::Send(bytes) => write(&mut socket, &bytes).await,
            Step::Trickle(bytes, every) => {
                let mut ok = true;
                for byte in bytes {
                    ok = write(&mut socket, &[byte]).await;
                    if !ok {
                        break;
                    }
                    tokio::time::sleep(every).await;
                }
                ok
            }
            Step::Fill(piece, times) => {
                let mut ok = true;
                for _ in 0..times {
                    ok = write(&mut socket, &piece).await;
                    if !ok {
                        break;
                    }
                }
                ok
            }
            Step::Sleep(pause) => {
                tokio::time::sleep(pause).await;
                true
            }
            Step::Forever(bytes, every) => {
                let end = Instant::now() + GUARD;
                while Instant::now() < end && write(&mut socket, &bytes).await {
                    tokio::time::sleep(every).await;
                }
                return;
            }
            Step::Hang => {
                // Returns once the client closes (a read of 0 bytes or an error).
                let mut sink = [0_u8; 512];
                let _ = tokio::time::timeout(GUARD, async {
                    while matches!(socket.read(&mut sink).await, Ok(n) if n > 0) {}
                })
                .await;
                return;
            }
            Step::Reset => {
                // `set_zero_linger` is newer than the tokio this workspace accepts.
                #[allow(deprecated)]
                let _ = socket.set_linger(Some(Duration::ZERO));
                drop(socket);
                return;
            }
        };
        if !went_on {
            return;
        }
    }
    let _ = socket.shutdown().await;
}

async fn write(socket: &mut TcpStream, bytes: &[u8]) -> bool {
    socket.write_all(bytes).await.is_ok() && socket.flush().await.is_ok()
}

/// A request as the server read it: its target and its body as JSON.
async fn read_request(socket: &mut TcpStream) -> Option<Seen> {
    let request = support::read_request(socket).await?;
    Some(Seen {
        target: request.target,
        body: serde_json::from_slice(&request.body).unwrap_or(Value::Null),
    })
}

/// A response head; `length: None` leaves the body to end with the connection.
fn head(status: u16, content_type: Option<&str>, length: Option<usize>) -> Vec<u8> {
    head_with(status, content_type, length, &[])
}

fn head_with(
    status: u16,
    content_type: Option<&str>,
    length: Option<usize>,
    extra: &[(&str, &str)],
) -> Vec<u8> {
    use std::fmt::Write as _;
    let mut head = format!("HTTP/1.1 {status} Scripted\r\nconnection: close\r\n");
    if let Some(kind) = content_type {
        let _ = write!(head, "content-type: {kind}\r\n");
    }
    if let Some(length) = length {
        let _ = write!(head, "content-length: {length}\r\n");
    }
    for (name, value) in extra {
        let _ = write!(head, "{name}: {value}\r\n");
    }
    head.push_str("\r\n");
    head.into_bytes()
}

/// An event stream, ended by closing the connection.
fn sse(body: Vec<u8>) -> Vec<Step> {
    vec![
        Step::Send(head(200, Some("text/event-stream"), None)),
        Step::Send(body),
    ]
}

/// A whole body with its length.
fn body(status: u16, content_type: Option<&str>, body: Vec<u8>) -> Vec<Step> {
    vec![
        Step::Send(head(status, content_type, Some(body.len()))),
        Step::Send(body),
    ]
}

fn json_body(value: &Value) -> Vec<Step> {
    body(
        200,
        Some("application/json"),
        value.to_string().into_bytes(),
    )
}

// The vendors' formats -------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Vendor {
    OpenAi,
    Anthropic,
    Gemini,
    Cohere,
    Responses,
    /// Gemini and Claude on Google Vertex AI: the formats above, on Vertex's paths.
    VertexGemini,
    VertexAnthropic,
    Bedrock,
    /// Azure OpenAI's Chat Completions: OpenAI's format, Azure's URLs, key and filter chunks.
    Azure,
    /// Azure OpenAI's Responses API.
    AzureResponses,
}

const VENDORS: [Vendor; 10] = [
    Vendor::OpenAi,
    Vendor::Anthropic,
    Vendor::Gemini,
    Vendor::Cohere,
    Vendor::Responses,
    Vendor::VertexGemini,
    Vendor::VertexAnthropic,
    Vendor::Bedrock,
    Vendor::Azure,
    Vendor::AzureResponses,
];

/// One frame of AWS's event stream: a ConverseStream event of type `kind`.
fn frame(kind: &str, payload: &[u8]) -> Vec<u8> {
    support::eventstream_frame(
        &[
            (":event-type", kind),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload,
    )
}

/// The error type of the errors the suite's Cohere sends.
const COHERE_ERROR_TYPE: &str = "SERVICE_UNAVAILABLE";

/// Tool-call arguments as a test sends them: a JSON object, or text that is not one.
#[derive(Clone, Copy, Debug)]
enum Args<'a> {
    Object(&'a Value),
    Broken(&'a str),
}

/// The connection settings of a probe's model.
#[derive(Clone, Copy, Debug)]
struct Knobs {
    idle: Duration,
    total: Option<Duration>,
    timeout: Duration,
    retry: RetryPolicy,
    max_bytes: Option<usize>,
}

impl Default for Knobs {
    fn default() -> Self {
        Self {
            idle: Duration::from_secs(3),
            total: Some(Duration::from_secs(15)),
            timeout: Duration::from_secs(10),
            retry: RetryPolicy::none(),
            max_bytes: None,
        }
    }
}

/// Short timeouts for the probes about timing.
fn quick() -> Knobs {
    Knobs {
        idle: Duration::from_millis(300),
        total: Some(Duration::from_millis(500)),
        timeout: Duration::from_millis(500),
        ..Knobs::default()
    }
}

macro_rules! configure {
    ($builder:expr, $url:expr, $knobs:expr) => {
        Arc::new(configured!($builder, $url, $knobs))
    };
}

/// The connection settings of `knobs` on a provider's (or a cloud's) builder, built.
macro_rules! configured {
    ($builder:expr, $url:expr, $knobs:expr) => {{
        let knobs: Knobs = $knobs;
        let mut builder = $builder
            .api_key("k")
            .base_url($url)
            .idle_timeout(knobs.idle)
            .stream_timeout(knobs.total)
            .timeout(knobs.timeout)
            .retry(knobs.retry);
        if let Some(bytes) = knobs.max_bytes {
            builder = builder.max_response_bytes(bytes);
        }
        builder.build().unwrap()
    }};
}

/// A Vertex AI connection to the fault server: a project and a location, a key (any
/// credentials do; the key needs no token endpoint).
fn vertex(url: &str, knobs: Knobs) -> Vertex {
    configured!(
        Vertex::builder().project("p").location("us-east5"),
        url,
        knobs
    )
}

/// An Azure OpenAI connection to the fault server (its endpoint) with a key and the probe's
/// settings.
fn azure(url: &str, knobs: Knobs) -> AzureOpenAi {
    let mut builder = AzureOpenAi::builder()
        .endpoint(url)
        .api_key("k")
        .idle_timeout(knobs.idle)
        .stream_timeout(knobs.total)
        .timeout(knobs.timeout)
        .retry(knobs.retry);
    if let Some(bytes) = knobs.max_bytes {
        builder = builder.max_response_bytes(bytes);
    }
    builder.build().unwrap()
}

impl Vendor {
    fn id(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
            Self::Gemini => "gemini",
            Self::Cohere => "cohere",
            Self::Responses => "openai-responses",
            Self::VertexGemini | Self::VertexAnthropic => "vertex",
            Self::Bedrock => "bedrock",
            Self::Azure => "azure",
            Self::AzureResponses => "azure-responses",
        }
    }

    /// The name probes and their markers go by: the id, and for a cloud the model kind.
    fn name(self) -> &'static str {
        match self {
            Self::VertexGemini => "vertex-gemini",
            Self::VertexAnthropic => "vertex-anthropic",
            direct => direct.id(),
        }
    }

    /// The direct vendor whose wire format this one speaks.
    fn wire(self) -> Self {
        match self {
            Self::VertexGemini => Self::Gemini,
            Self::VertexAnthropic => Self::Anthropic,
            Self::Azure => Self::OpenAi,
            Self::AzureResponses => Self::Responses,
            direct => direct,
        }
    }

    fn model(self, url: &str, knobs: Knobs) -> Arc<dyn Llm> {
        match self {
            Self::OpenAi => configure!(OpenAi::builder("m"), url, knobs),
            Self::Anthropic => configure!(Anthropic::builder("m"), url, knobs),
            Self::Gemini => configure!(Gemini::builder("m"), url, knobs),
            Self::Cohere => configure!(Cohere::builder("m"), url, knobs),
            Self::Responses => configure!(OpenAiResponses::builder("m"), url, knobs),
            // Served on Vertex's paths: a project and a location, the model in the URL.
            Self::VertexGemini => Arc::new(vertex(url, knobs).gemini("m").unwrap()),
            Self::VertexAnthropic => Arc::new(vertex(url, knobs).anthropic("m").unwrap()),
            // A Bedrock API key: the signing path has its own probes in fixtures_bedrock.
            Self::Bedrock => configure!(Bedrock::builder("m").region("us-east-1"), url, knobs),
            // Served on Azure's v1 paths, the deployment `m`.
            Self::Azure => Arc::new(azure(url, knobs).chat("m").unwrap()),
            Self::AzureResponses => Arc::new(azure(url, knobs).responses("m").unwrap()),
        }
    }

    /// Whether a request asked for a stream.
    fn streams(self, seen: &Seen) -> bool {
        match self {
            Self::Gemini | Self::VertexGemini => seen.target.contains("streamGenerateContent"),
            Self::Bedrock => seen.target.ends_with("/converse-stream"),
            _ => seen.body["stream"] == json!(true),
        }
    }

    /// One event of the vendor's stream (Gemini separates events with CR LF CR LF, as it
    /// does on the wire; Bedrock's is a binary frame, its type from `data["type"]`, which
    /// the payload keeps: Converse reads past a key it does not know).
    fn event(self, data: &Value) -> Vec<u8> {
        self.event_bytes(
            data.to_string().as_bytes(),
            data["type"].as_str().unwrap_or(""),
        )
    }

    /// An event whose data is `json` as given (perhaps not valid UTF-8), of type `kind`.
    fn event_bytes(self, json: &[u8], kind: &str) -> Vec<u8> {
        let json = String::from_utf8_lossy(json);
        match self {
            Self::OpenAi | Self::Azure => format!("data: {json}\n\n").into_bytes(),
            Self::Anthropic
            | Self::VertexAnthropic
            | Self::Cohere
            | Self::Responses
            | Self::AzureResponses => format!("event: {kind}\ndata: {json}\n\n").into_bytes(),
            Self::Gemini | Self::VertexGemini => format!("data: {json}\r\n\r\n").into_bytes(),
            Self::Bedrock => frame(kind, json.as_bytes()),
        }
    }

    /// A text delta whose JSON has `splices` (marker, raw byte) put in: bytes that are not
    /// UTF-8, inside a string or in the JSON itself.
    fn delta_spliced(self, text: &str, splices: &[(&str, u8)], in_json: bool) -> Vec<u8> {
        if self != Self::Bedrock {
            let mut event = self.delta(text);
            for (marker, byte) in splices {
                event = splice(&event, marker, *byte);
            }
            if in_json {
                let last = event.iter().rposition(|&b| b == b'}').unwrap();
                event.insert(last, 0xFF);
            }
            return event;
        }
        let mut payload = bedrock_delta(0, text).to_string().into_bytes();
        for (marker, byte) in splices {
            payload = splice(&payload, marker, *byte);
        }
        if in_json {
            let last = payload.iter().rposition(|&b| b == b'}').unwrap();
            payload.insert(last, 0xFF);
        }
        frame("contentBlockDelta", &payload)
    }

    /// Bytes that keep a stream busy without an event that counts: an SSE comment, or a
    /// Bedrock event of a type Converse does not know.
    fn keepalive(self) -> Vec<u8> {
        match self {
            Self::Bedrock => frame("ping", b"{}"),
            _ => b": ping\n\n".to_vec(),
        }
    }

    /// The start of one event that declares (or, for SSE, runs on to) 50 MiB and more.
    fn huge_event_start(self) -> Vec<u8> {
        match self {
            Self::Bedrock => {
                let mut prelude = Vec::new();
                prelude.extend_from_slice(&(60_u32 << 20).to_be_bytes());
                prelude.extend_from_slice(&0_u32.to_be_bytes());
                let crc = support::crc32(&prelude);
                prelude.extend_from_slice(&crc.to_be_bytes());
                prelude
            }
            _ => b"data: {\"x\": \"".to_vec(),
        }
    }

    /// The events before the first delta.
    fn opening(self) -> Vec<u8> {
        match self {
            // Azure's first chunk: the prompt's filter results, no choices, id and model
            // empty (its shape as the recordings in tests/fixtures/azure show it).
            Self::Azure => [
                self.event(&json!({"choices": [], "created": 0, "id": "", "model": "",
                    "object": "", "prompt_filter_results": [{"prompt_index": 0,
                    "content_filter_results": {"hate": {"filtered": false, "severity": "safe"},
                    "jailbreak": {"filtered": false, "detected": false}}}]})),
                Self::OpenAi.opening(),
            ]
            .concat(),
            Self::OpenAi => self.event(&json!({"choices": [
                {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}
            ]})),
            Self::Anthropic | Self::VertexAnthropic => [
                self.event(&json!({"type": "message_start", "message": {
                    "id": "msg_1", "type": "message", "role": "assistant", "content": [],
                    "model": "m", "stop_reason": null,
                    "usage": {"input_tokens": 12, "output_tokens": 1}}})),
                self.event(&json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "text", "text": ""}})),
            ]
            .concat(),
            Self::Gemini | Self::VertexGemini => Vec::new(),
            Self::Bedrock => frame("messageStart", br#"{"role":"assistant"}"#),
            Self::Cohere => [
                self.event(
                    &json!({"id": "c-1", "type": "message-start", "delta": {"message": {
                    "role": "assistant", "content": [], "tool_plan": "", "tool_calls": [],
                    "citations": []}}}),
                ),
                self.event(&json!({"type": "content-start", "index": 0,
                    "delta": {"message": {"content": {"type": "text", "text": ""}}}})),
            ]
            .concat(),
            Self::Responses | Self::AzureResponses => [
                self.event(&json!({"type": "response.created", "sequence_number": 0,
                    "response": {"id": "resp_1", "object": "response", "status": "in_progress",
                    "model": "m", "output": [], "usage": null}})),
                self.event(
                    &json!({"type": "response.output_item.added", "output_index": 0,
                    "item": {"type": "message", "id": "msg_1", "status": "in_progress",
                    "role": "assistant", "content": []}}),
                ),
            ]
            .concat(),
        }
    }

    /// One text delta.
    fn delta(self, text: &str) -> Vec<u8> {
        if self == Self::Bedrock {
            return frame(
                "contentBlockDelta",
                bedrock_delta(0, text).to_string().as_bytes(),
            );
        }
        self.event(&match self {
            Self::OpenAi | Self::Azure => json!({"choices": [
                {"index": 0, "delta": {"content": text}, "finish_reason": null}
            ]}),
            Self::Anthropic | Self::VertexAnthropic => {
                json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": text}})
            }
            Self::Gemini | Self::VertexGemini | Self::Bedrock => json!({"candidates": [
                {"content": {"role": "model", "parts": [{"text": text}]}, "index": 0}
            ]}),
            Self::Cohere => json!({"type": "content-delta", "index": 0,
                "delta": {"message": {"content": {"text": text}}}}),
            Self::Responses | Self::AzureResponses => {
                json!({"type": "response.output_text.delta", "item_id": "msg_1",
                "output_index": 0, "content_index": 0, "delta": text})
            }
        })
    }

    /// The events that end a text turn, the vendor's end mark among them.
    fn ending(self) -> Vec<u8> {
        match self {
            Self::OpenAi | Self::Azure => [
                self.event(&json!({"choices": [
                    {"index": 0, "delta": {}, "finish_reason": "stop"}
                ]})),
                b"data: [DONE]\n\n".to_vec(),
            ]
            .concat(),
            Self::Anthropic | Self::VertexAnthropic => [
                self.event(&json!({"type": "content_block_stop", "index": 0})),
                self.event(&json!({"type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                    "usage": {"output_tokens": 7}})),
                self.event(&json!({"type": "message_stop"})),
            ]
            .concat(),
            Self::Gemini | Self::VertexGemini => self.event(&json!({"candidates": [
                {"content": {"role": "model", "parts": [{"text": ""}]},
                 "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 7,
                    "totalTokenCount": 19}})),
            Self::Bedrock => [
                frame("contentBlockStop", br#"{"contentBlockIndex":0}"#),
                frame("messageStop", br#"{"stopReason":"end_turn"}"#),
                bedrock_metadata(),
            ]
            .concat(),
            Self::Cohere => [
                self.event(&json!({"type": "content-end", "index": 0})),
                self.cohere_end("COMPLETE"),
            ]
            .concat(),
            // The end mark alone: its `output` left out, the deltas are the text.
            Self::Responses | Self::AzureResponses => {
                self.event(&json!({"type": "response.completed",
                "response": {"id": "resp_1", "object": "response", "status": "completed",
                "model": "m", "usage": {"input_tokens": 12, "output_tokens": 7,
                "total_tokens": 19}}}))
            }
        }
    }

    /// Cohere's `message-end` (the end mark) and the `[DONE]` after it.
    fn cohere_end(self, finish_reason: &str) -> Vec<u8> {
        [
            self.event(
                &json!({"type": "message-end", "delta": {"finish_reason": finish_reason,
                "usage": {"billed_units": {"input_tokens": 3, "output_tokens": 7},
                    "tokens": {"input_tokens": 12, "output_tokens": 7}}}}),
            ),
            b"data: [DONE]\n\n".to_vec(),
        ]
        .concat()
    }

    /// A whole streamed text turn.
    fn text_stream(self, pieces: &[&str]) -> Vec<u8> {
        let mut body = self.opening();
        for piece in pieces {
            body.extend(self.delta(piece));
        }
        body.extend(self.ending());
        body
    }

    /// The vendor's error object (type, message).
    fn error_object(self) -> Value {
        match self {
            Self::OpenAi | Self::Azure => {
                json!({"message": VENDOR_MESSAGE, "type": "server_error"})
            }
            Self::Anthropic | Self::VertexAnthropic => {
                json!({"type": "overloaded_error", "message": VENDOR_MESSAGE})
            }
            Self::Gemini | Self::VertexGemini => {
                json!({"code": 503, "message": VENDOR_MESSAGE, "status": "UNAVAILABLE"})
            }
            Self::Bedrock => {
                json!({"__type": "serviceUnavailableException", "message": VENDOR_MESSAGE})
            }
            Self::Cohere => json!({"message": VENDOR_MESSAGE, "error_type": COHERE_ERROR_TYPE}),
            Self::Responses | Self::AzureResponses => {
                json!({"code": "server_error", "message": VENDOR_MESSAGE})
            }
        }
    }

    /// The error type [`Vendor::error_object`] names.
    fn error_type(self) -> &'static str {
        match self {
            Self::OpenAi | Self::Responses | Self::Azure | Self::AzureResponses => "server_error",
            Self::Anthropic | Self::VertexAnthropic => "overloaded_error",
            Self::Gemini | Self::VertexGemini => "UNAVAILABLE",
            Self::Cohere => COHERE_ERROR_TYPE,
            Self::Bedrock => "serviceUnavailableException",
        }
    }

    /// The error as the vendor reports it mid-stream (Cohere: a `message-end` ending the
    /// turn with an error).
    fn error_event(self) -> Vec<u8> {
        match self {
            // A frame of `:message-type` exception, named by `:exception-type`.
            Self::Bedrock => support::eventstream_frame(
                &[
                    (":exception-type", "serviceUnavailableException"),
                    (":content-type", "application/json"),
                    (":message-type", "exception"),
                ],
                json!({"message": VENDOR_MESSAGE}).to_string().as_bytes(),
            ),
            Self::Anthropic | Self::VertexAnthropic => {
                self.event(&json!({"type": "error", "error": self.error_object()}))
            }
            Self::Cohere => self.event(&json!({"type": "message-end", "delta": {
                "finish_reason": "ERROR", "usage": {}, "error": VENDOR_MESSAGE,
                "error_type": COHERE_ERROR_TYPE}})),
            // The API's `error` event: its code and message at the top level.
            Self::Responses | Self::AzureResponses => self.event(&json!({"type": "error",
                "code": "server_error", "message": VENDOR_MESSAGE, "param": null,
                "sequence_number": 3})),
            _ => self.event(&json!({"error": self.error_object()})),
        }
    }

    /// The error as a 200 body.
    fn error_answer(self) -> Value {
        match self {
            Self::Anthropic | Self::VertexAnthropic => {
                json!({"type": "error", "error": self.error_object()})
            }
            // What Bedrock calls the error, in a gateway's 200 body.
            Self::Bedrock => json!({"error": {"__type": "serviceUnavailableException",
                "message": VENDOR_MESSAGE}}),
            Self::Cohere => self.error_object(),
            // A response that failed.
            Self::Responses | Self::AzureResponses => {
                json!({"id": "resp_1", "object": "response", "status": "failed",
                "error": self.error_object(), "output": []})
            }
            _ => json!({"error": self.error_object()}),
        }
    }

    /// A non-streamed text answer; `finished: false` leaves out the finish reason.
    fn text_answer(self, text: &str, finished: bool) -> Value {
        let mut answer = match self {
            Self::OpenAi | Self::Azure => json!({"id": "chatcmpl-1", "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}}),
            Self::Anthropic | Self::VertexAnthropic => {
                json!({"id": "msg_1", "type": "message", "role": "assistant",
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 12, "output_tokens": 7}})
            }
            Self::Gemini | Self::VertexGemini => {
                json!({"candidates": [{"content": {"role": "model",
                "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}]})
            }
            Self::Bedrock => json!({"output": {"message": {"role": "assistant",
                "content": [{"text": text}]}}, "stopReason": "end_turn",
                "usage": {"inputTokens": 12, "outputTokens": 7, "totalTokens": 19}}),
            Self::Cohere => json!({"id": "c-1", "message": {"role": "assistant",
                "content": [{"type": "text", "text": text}]}, "finish_reason": "COMPLETE",
                "usage": {"tokens": {"input_tokens": 12, "output_tokens": 7}}}),
            Self::Responses | Self::AzureResponses => json!({"id": "resp_1", "object": "response",
                "status": "completed", "model": "m", "error": null, "output": [{"type": "message",
                "id": "msg_1", "status": "completed", "role": "assistant", "content": [
                {"type": "output_text", "text": text, "annotations": []}]}],
                "usage": {"input_tokens": 12, "output_tokens": 7, "total_tokens": 19}}),
        };
        if !finished {
            match self {
                Self::Bedrock => {
                    answer.as_object_mut().unwrap().remove("stopReason");
                }
                Self::OpenAi | Self::Azure => answer["choices"][0]["finish_reason"] = Value::Null,
                Self::Anthropic | Self::VertexAnthropic => answer["stop_reason"] = Value::Null,
                Self::Cohere => {
                    answer.as_object_mut().unwrap().remove("finish_reason");
                }
                Self::Gemini | Self::VertexGemini => {
                    answer["candidates"][0]
                        .as_object_mut()
                        .unwrap()
                        .remove("finishReason");
                }
                Self::Responses | Self::AzureResponses => {
                    answer.as_object_mut().unwrap().remove("status");
                }
            }
        }
        answer
    }

    /// A non-streamed turn with one call of `note` (Gemini gives calls no id).
    fn tool_answer(self, id: &str, args: Args<'_>) -> Value {
        match (self, args) {
            (Self::OpenAi | Self::Azure, _) => {
                let text = match args {
                    Args::Object(value) => value.to_string(),
                    Args::Broken(text) => text.to_owned(),
                };
                json!({"id": "chatcmpl-1", "object": "chat.completion", "choices": [{
                    "index": 0, "finish_reason": "tool_calls", "message": {
                        "role": "assistant", "content": null, "tool_calls": [{"id": id,
                        "type": "function", "function": {"name": "note", "arguments": text}}]}}]})
            }
            (Self::Anthropic | Self::VertexAnthropic, _) => {
                let input = match args {
                    Args::Object(value) => value.clone(),
                    Args::Broken(text) => Value::from(text),
                };
                json!({"id": "msg_1", "type": "message", "role": "assistant",
                    "content": [{"type": "tool_use", "id": id, "name": "note", "input": input}],
                    "stop_reason": "tool_use", "usage": {"input_tokens": 12, "output_tokens": 7}})
            }
            (Self::Gemini | Self::VertexGemini, _) => {
                let args = match args {
                    Args::Object(value) => value.clone(),
                    Args::Broken(text) => Value::from(text),
                };
                json!({"candidates": [{"content": {"role": "model", "parts": [
                    {"functionCall": {"name": "note", "args": args}}]},
                    "finishReason": "STOP", "index": 0}]})
            }
            (Self::Cohere, _) => {
                let text = match args {
                    Args::Object(value) => value.to_string(),
                    Args::Broken(text) => text.to_owned(),
                };
                json!({"id": "c-1", "message": {"role": "assistant",
                    "tool_plan": "I will write a note.", "tool_calls": [{"id": id,
                    "type": "function", "function": {"name": "note", "arguments": text}}]},
                    "finish_reason": "TOOL_CALL",
                    "usage": {"tokens": {"input_tokens": 12, "output_tokens": 7}}})
            }
            (Self::Responses | Self::AzureResponses, _) => {
                let text = match args {
                    Args::Object(value) => value.to_string(),
                    Args::Broken(text) => text.to_owned(),
                };
                json!({"id": "resp_1", "object": "response", "status": "completed",
                    "output": [{"type": "function_call", "id": "fc_1", "call_id": id,
                    "name": "note", "arguments": text, "status": "completed"}],
                    "usage": {"input_tokens": 12, "output_tokens": 7, "total_tokens": 19}})
            }
            (Self::Bedrock, _) => {
                let input = match args {
                    Args::Object(value) => value.clone(),
                    Args::Broken(text) => Value::from(text),
                };
                json!({"output": {"message": {"role": "assistant", "content": [
                    {"toolUse": {"toolUseId": id, "name": "note", "input": input}}]}},
                    "stopReason": "tool_use",
                    "usage": {"inputTokens": 12, "outputTokens": 7, "totalTokens": 19}})
            }
        }
    }

    /// A streamed turn with one call of `note`, its arguments in fragments where the vendor
    /// sends them as text.
    fn tool_stream(self, id: &str, args: Args<'_>) -> Vec<u8> {
        let text = match args {
            Args::Object(value) => value.to_string(),
            Args::Broken(text) => text.to_owned(),
        };
        let (head, tail) = text.split_at(text.len() / 2);
        match self {
            Self::OpenAi | Self::Azure => [
                self.event(
                    &json!({"choices": [{"index": 0, "delta": {"role": "assistant",
                    "content": null, "tool_calls": [{"index": 0, "id": id, "type": "function",
                    "function": {"name": "note", "arguments": ""}}]}, "finish_reason": null}]}),
                ),
                self.event(&json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                    {"index": 0, "function": {"arguments": head}}]}, "finish_reason": null}]})),
                self.event(&json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                    {"index": 0, "function": {"arguments": tail}}]}, "finish_reason": null}]})),
                self.event(&json!({"choices": [
                    {"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})),
                b"data: [DONE]\n\n".to_vec(),
            ]
            .concat(),
            Self::Anthropic | Self::VertexAnthropic => [
                self.event(&json!({"type": "message_start", "message": {"id": "msg_1",
                    "type": "message", "role": "assistant", "content": [], "model": "m",
                    "usage": {"input_tokens": 12, "output_tokens": 1}}})),
                self.event(
                    &json!({"type": "content_block_start", "index": 0, "content_block":
                    {"type": "tool_use", "id": id, "name": "note", "input": {}}}),
                ),
                self.event(&json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": head}})),
                self.event(&json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": tail}})),
                self.event(&json!({"type": "content_block_stop", "index": 0})),
                self.event(
                    &json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                    "usage": {"output_tokens": 9}}),
                ),
                self.event(&json!({"type": "message_stop"})),
            ]
            .concat(),
            Self::Gemini | Self::VertexGemini => {
                let args = match args {
                    Args::Object(value) => value.clone(),
                    Args::Broken(text) => Value::from(text),
                };
                self.event(
                    &json!({"candidates": [{"content": {"role": "model", "parts": [
                    {"functionCall": {"name": "note", "args": args}}]},
                    "finishReason": "STOP", "index": 0}]}),
                )
            }
            Self::Cohere => {
                let piece = |arguments: &str| {
                    self.event(&json!({"type": "tool-call-delta", "index": 0, "delta": {
                        "message": {"tool_calls": {"function": {"arguments": arguments}}}}}))
                };
                [
                    self.event(&json!({"id": "c-1", "type": "message-start", "delta": {
                        "message": {"role": "assistant", "content": [], "tool_plan": "",
                        "tool_calls": [], "citations": []}}})),
                    self.event(&json!({"type": "tool-call-start", "index": 0, "delta": {
                        "message": {"tool_calls": {"id": id, "type": "function",
                        "function": {"name": "note", "arguments": ""}}}}})),
                    piece(head),
                    piece(tail),
                    self.event(&json!({"type": "tool-call-end", "index": 0})),
                    self.cohere_end("TOOL_CALL"),
                ]
                .concat()
            }
            Self::Responses | Self::AzureResponses => {
                let item = |arguments: &str, status: &str| {
                    json!({"type": "function_call", "id": "fc_1", "call_id": id, "name": "note",
                        "arguments": arguments, "status": status})
                };
                let piece = |delta: &str| {
                    self.event(&json!({"type": "response.function_call_arguments.delta",
                        "item_id": "fc_1", "output_index": 0, "delta": delta}))
                };
                [
                    self.event(&json!({"type": "response.created", "response": {
                        "id": "resp_1", "status": "in_progress", "output": []}})),
                    self.event(&json!({"type": "response.output_item.added",
                        "output_index": 0, "item": item("", "in_progress")})),
                    piece(head),
                    piece(tail),
                    self.event(&json!({"type": "response.output_item.done",
                        "output_index": 0, "item": item(&text, "completed")})),
                    self.event(&json!({"type": "response.completed", "response": {
                        "id": "resp_1", "status": "completed", "output": [item(&text, "completed")],
                        "usage": {"input_tokens": 12, "output_tokens": 9, "total_tokens": 21}}})),
                ]
                .concat()
            }
            Self::Bedrock => bedrock_tool_stream(id, head, tail),
        }
    }
}

/// ConverseStream's turn with one call of `note`, its input in two `toolUse` deltas.
fn bedrock_tool_stream(id: &str, head: &str, tail: &str) -> Vec<u8> {
    let start = json!({"contentBlockIndex": 0,
        "start": {"toolUse": {"toolUseId": id, "name": "note"}}});
    let piece =
        |input: &str| json!({"contentBlockIndex": 0, "delta": {"toolUse": {"input": input}}});
    [
        Vendor::Bedrock.opening(),
        frame("contentBlockStart", start.to_string().as_bytes()),
        frame("contentBlockDelta", piece(head).to_string().as_bytes()),
        frame("contentBlockDelta", piece(tail).to_string().as_bytes()),
        frame("contentBlockStop", br#"{"contentBlockIndex":0}"#),
        frame("messageStop", br#"{"stopReason":"tool_use"}"#),
        bedrock_metadata(),
    ]
    .concat()
}

/// A Converse text delta's payload.
fn bedrock_delta(index: usize, text: &str) -> Value {
    json!({"contentBlockIndex": index, "delta": {"text": text}})
}

/// ConverseStream's last event, with the usage.
fn bedrock_metadata() -> Vec<u8> {
    frame(
        "metadata",
        br#"{"usage":{"inputTokens":12,"outputTokens":7,"totalTokens":19},"metrics":{"latencyMs":9}}"#,
    )
}

// Reading what a model gives ------------------------------------------------------------------

/// A stream read to its end.
struct Streamed {
    text: String,
    deltas: usize,
    end: Result<CompletionResponse, Error>,
    elapsed: Duration,
}

async fn stream_of(model: &Arc<dyn Llm>) -> Streamed {
    let started = Instant::now();
    let messages = [Message::user("hi")];
    let mut events = Arc::clone(model).stream(Request::new(&messages));
    let (mut text, mut deltas, mut end) = (String::new(), 0, None);
    while let Some(item) = events.next().await {
        assert!(end.is_none(), "an item after the stream's last: {item:?}");
        match item {
            Ok(LlmEvent::TextDelta(piece)) => {
                text.push_str(&piece);
                deltas += 1;
            }
            Ok(LlmEvent::ThinkingDelta(_)) => deltas += 1,
            Ok(LlmEvent::HostedCall(_)) => {}
            Ok(LlmEvent::Completed(response)) => end = Some(Ok(*response)),
            Ok(other) => panic!("an event this test does not know: {other:?}"),
            Err(e) => end = Some(Err(e)),
        }
    }
    Streamed {
        text,
        deltas,
        end: end.expect("the stream ended with neither a turn nor an error"),
        elapsed: started.elapsed(),
    }
}

async fn generate_of(model: &dyn Llm) -> (Result<CompletionResponse, Error>, Duration) {
    let started = Instant::now();
    let result = model.generate(Request::new(&[Message::user("hi")])).await;
    (result, started.elapsed())
}

/// The provider error `end` must be, of `kind`.
fn failed(
    end: &Result<CompletionResponse, Error>,
    kind: ProviderErrorKind,
    vendor: Vendor,
) -> &ProviderError {
    let err = match end {
        Ok(response) => panic!("expected a {kind:?} error, got an answer: {response:?}"),
        Err(err) => err,
    };
    let provider = err
        .provider()
        .unwrap_or_else(|| panic!("expected a provider error, got {err:?}"));
    assert_eq!(provider.kind(), kind, "{provider}");
    assert_eq!(provider.provider(), vendor.id(), "{provider}");
    provider
}

fn contains(provider: &ProviderError, needle: &str) {
    assert!(
        provider.message().contains(needle),
        "the message does not mention {needle:?}: {provider}"
    );
}

fn within(elapsed: Duration, low: Duration, high: Duration) {
    assert!(
        elapsed >= low && elapsed <= high,
        "took {elapsed:?}, expected {low:?}..{high:?}"
    );
}

// The probes -----------------------------------------------------------------------------------

type Attempt = Pin<Box<dyn Future<Output = ()> + Send>>;

struct Probe {
    name: String,
    attempts: usize,
    run: Arc<dyn Fn(usize) -> Attempt + Send + Sync>,
}

#[derive(Default)]
struct Probes(Vec<Probe>);

impl Probes {
    /// A probe of `attempts` attempts; attempt `n` runs `run(n)`.
    fn add<F, Fut>(&mut self, name: impl Into<String>, attempts: usize, run: F)
    where
        F: Fn(usize) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.0.push(Probe {
            name: name.into(),
            attempts,
            run: Arc::new(move |n| Box::pin(run(n))),
        });
    }
}

fn rng(n: usize) -> fastrand::Rng {
    fastrand::Rng::with_seed(0xFA17 + n as u64)
}

fn garbage(n: usize, len: usize) -> Vec<u8> {
    let mut rng = rng(n);
    std::iter::repeat_with(|| rng.u8(..)).take(len).collect()
}

/// `bytes` with the first `marker` replaced by one raw byte.
fn splice(bytes: &[u8], marker: &str, byte: u8) -> Vec<u8> {
    let at = bytes
        .windows(marker.len())
        .position(|w| w == marker.as_bytes())
        .unwrap();
    [&bytes[..at], &[byte], &bytes[at + marker.len()..]].concat()
}

/// Where each event of `body` ends.
fn boundaries(body: &[u8], separator: &[u8]) -> Vec<usize> {
    body.windows(separator.len())
        .enumerate()
        .filter(|(_, w)| *w == separator)
        .map(|(at, _)| at + separator.len())
        .collect()
}

fn separator(vendor: Vendor) -> &'static [u8] {
    if vendor.wire() == Vendor::Gemini {
        b"\r\n\r\n"
    } else {
        b"\n\n"
    }
}

/// Where each event of a vendor's stream ends: after each separator, or each frame.
fn event_ends(vendor: Vendor, body: &[u8]) -> Vec<usize> {
    if vendor == Vendor::Bedrock {
        return frame_ends(body);
    }
    boundaries(body, separator(vendor))
}

/// Where each frame of an event stream ends, read from the frames' lengths.
fn frame_ends(body: &[u8]) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut at = 0;
    while at + 4 <= body.len() {
        let length = u32::from_be_bytes(body[at..at + 4].try_into().unwrap()) as usize;
        at += length;
        ends.push(at);
    }
    ends
}

/// Every event boundary of a whole text stream before its end mark: after each event up to
/// the last one without which the turn is not whole (OpenAI's finish chunk, Anthropic's
/// `message_stop`, Gemini's finishing chunk, Cohere's `message-end`, the Responses API's
/// `response.completed`, Bedrock's `metadata`).
fn cuts_before_end_mark(vendor: Vendor, whole: &[u8]) -> Vec<usize> {
    let end_mark = match vendor {
        Vendor::OpenAi
        | Vendor::Azure
        | Vendor::Gemini
        | Vendor::VertexGemini
        | Vendor::Responses
        | Vendor::AzureResponses => whole.len() - vendor.ending().len(),
        Vendor::Anthropic | Vendor::VertexAnthropic => {
            whole.len() - vendor.event(&json!({"type": "message_stop"})).len()
        }
        Vendor::Cohere => whole.len() - vendor.cohere_end("COMPLETE").len(),
        // The turn is whole with its metadata, the last event.
        Vendor::Bedrock => whole.len() - bedrock_metadata().len(),
    };
    event_ends(vendor, whole)
        .into_iter()
        .filter(|&at| at <= end_mark)
        .collect()
}

/// Streams broken off.
fn stream_cut_probes(probes: &mut Probes, vendor: Vendor) {
    let v = vendor.name();

    probes.add(
        format!("{v} stream: whole (control)"),
        2,
        move |_| async move {
            let server = FaultServer::always(sse(vendor.text_stream(&["Hel", "lo"]))).await;
            let got = stream_of(&vendor.model(&server.url, Knobs::default())).await;
            let response = got.end.unwrap();
            assert_eq!((got.text.as_str(), response.content()), ("Hello", "Hello"));
            assert_eq!(response.finish_reason(), FinishReason::Stop);
        },
    );

    probes.add(
        format!("{v} stream: reset mid-stream → Transport, deltas kept"),
        3,
        move |n| async move {
            let mut steps =
                sse([vendor.opening(), vendor.delta("Hel"), vendor.delta("lo")].concat());
            steps.push(Step::Sleep(Duration::from_millis(100 + 50 * n as u64)));
            steps.push(Step::Reset);
            let server = FaultServer::always(steps).await;
            let got = stream_of(&vendor.model(&server.url, Knobs::default())).await;
            failed(&got.end, ProviderErrorKind::Transport, vendor);
            assert_eq!(got.text, "Hello");
            assert_eq!(server.hits(), 1, "a stream that started is not retried");
        },
    );

    let whole = vendor.text_stream(&["Hel", "lo", " there"]);
    let cuts = cuts_before_end_mark(vendor, &whole);
    probes.add(
        format!("{v} stream: cut at each event boundary before the end mark → Incomplete"),
        cuts.len(),
        move |n| {
            let (whole, cut) = (whole.clone(), cuts[n]);
            async move {
                let sent = whole[..cut].to_vec();
                let server = FaultServer::always(body(200, Some("text/event-stream"), sent)).await;
                let got = stream_of(&vendor.model(&server.url, Knobs::default())).await;
                let err = failed(&got.end, ProviderErrorKind::Incomplete, vendor);
                contains(err, "ended before");
                // Exactly the deltas sent before the cut.
                let mut at = vendor.opening().len();
                let mut expected = String::new();
                for piece in ["Hel", "lo", " there"] {
                    at += vendor.delta(piece).len();
                    if at <= cut {
                        expected.push_str(piece);
                    }
                }
                assert_eq!(got.text, expected);
            }
        },
    );

    probes.add(
        format!("{v} stream: cut mid-event, clean close → Incomplete"),
        4,
        move |n| async move {
            let sent = [vendor.opening(), vendor.delta("Hel"), vendor.delta("lo")].concat();
            // Inside the JSON of the last delta.
            let start = sent.len() - vendor.delta("lo").len();
            let json_at = start + sent[start..].iter().position(|&b| b == b'{').unwrap();
            let json_len = sent[json_at..].iter().rposition(|&b| b == b'}').unwrap();
            let cut = json_at + 1 + rng(n).usize(..json_len);
            let server =
                FaultServer::always(body(200, Some("text/event-stream"), sent[..cut].to_vec()))
                    .await;
            let got = stream_of(&vendor.model(&server.url, Knobs::default())).await;
            let err = failed(&got.end, ProviderErrorKind::Incomplete, vendor);
            contains(err, "ended in the middle of an event");
            assert_eq!(got.text, "Hel");
        },
    );
}

/// Streams whose body is not what it claims.
fn stream_body_probes(probes: &mut Probes, vendor: Vendor) {
    let v = vendor.name();

    probes.add(
        format!("{v} stream: cut mid-event, content-length longer than sent → Transport"),
        2,
        move |n| async move {
            let sent = [vendor.opening(), vendor.delta("Hel"), vendor.delta("lo")].concat();
            let cut = sent.len() - 5 - n;
            let server = FaultServer::always(vec![
                Step::Send(head(
                    200,
                    Some("text/event-stream"),
                    Some(sent.len() + 1000),
                )),
                Step::Send(sent[..cut].to_vec()),
            ])
            .await;
            let got = stream_of(&vendor.model(&server.url, Knobs::default())).await;
            failed(&got.end, ProviderErrorKind::Transport, vendor);
            assert_eq!(got.text, "Hel");
        },
    );

    for content_type in [Some("text/event-stream"), None] {
        let label = content_type.unwrap_or("no content type");
        probes.add(
            format!("{v} stream: random bytes ({label}) → Malformed"),
            5,
            move |n| async move {
                let server = FaultServer::always(body(200, content_type, garbage(n, 4096))).await;
                let got = stream_of(&vendor.model(&server.url, Knobs::default())).await;
                let err = failed(&got.end, ProviderErrorKind::Malformed, vendor);
                contains(err, "not an event stream");
                assert_eq!(got.deltas, 0);
            },
        );
    }

    probes.add(
        format!("{v} stream: an HTML page (200, text/html) → Malformed"),
        1,
        move |_| async move {
            let page = concat!(
                "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n",
                "<body>nginx</body></html>\n"
            )
            .as_bytes();
            let server = FaultServer::always(body(200, Some("text/html"), page.to_vec())).await;
            let got = stream_of(&vendor.model(&server.url, Knobs::default())).await;
            let err = failed(&got.end, ProviderErrorKind::Malformed, vendor);
            contains(err, "text/html");
            assert!(err.body().unwrap().contains("502 Bad Gateway"), "{err:?}");
        },
    );

    probes.add(
        format!("{v} stream: an empty 200 body → Incomplete"),
        1,
        move |_| async move {
            let server =
                FaultServer::always(body(200, Some("text/event-stream"), Vec::new())).await;
            let got = stream_of(&vendor.model(&server.url, Knobs::default())).await;
            let err = failed(&got.end, ProviderErrorKind::Incomplete, vendor);
            contains(err, "before its first event");
        },
    );
}

/// Invalid UTF-8 in a stream.
fn stream_utf8_probes(probes: &mut Probes, vendor: Vendor) {
    let v = vendor.name();

    probes.add(
        format!("{v} stream: invalid UTF-8 in a string → U+FFFD, answer whole"),
        1,
        move |_| async move {
            // A lone lead byte and a 0xFF become U+FFFD; a valid é and ✓ split across writes
            // survive.
            let event = vendor.delta_spliced(
                "caf\u{e9} @1@ @2@ \u{2713}",
                &[("@1@", 0xC3), ("@2@", 0xFF)],
                false,
            );
            let in_e = event.iter().position(|&b| b == 0xA9).unwrap();
            let in_check = event.iter().position(|&b| b == 0x9C).unwrap();
            let steps = vec![
                Step::Send(head(200, Some("text/event-stream"), None)),
                Step::Send(vendor.opening()),
                Step::Send(event[..in_e].to_vec()),
                Step::Sleep(Duration::from_millis(20)),
                Step::Send(event[in_e..in_check].to_vec()),
                Step::Sleep(Duration::from_millis(20)),
                Step::Send(event[in_check..].to_vec()),
                Step::Send(vendor.ending()),
            ];
            let server = FaultServer::always(steps).await;
            let got = stream_of(&vendor.model(&server.url, Knobs::default())).await;
            let response = got.end.unwrap();
            assert_eq!(got.text, "caf\u{e9} \u{fffd} \u{fffd} \u{2713}");
            assert_eq!(response.content(), got.text);
        },
    );

    probes.add(
        format!("{v} stream: invalid UTF-8 in the JSON itself → Malformed"),
        1,
        move |_| async move {
            let event = vendor.delta_spliced("x", &[], true);
            let body = [vendor.opening(), vendor.delta("ok"), event, vendor.ending()].concat();
            let server = FaultServer::always(sse(body)).await;
            let got = stream_of(&vendor.model(&server.url, Knobs::default())).await;
            let err = failed(&got.end, ProviderErrorKind::Malformed, vendor);
            contains(err, "unreadable");
            assert_eq!(got.text, "ok");
        },
    );
}

/// Huge streams.
fn stream_size_probes(probes: &mut Probes, vendor: Vendor) {
    let v = vendor.name();

    probes.add(
        format!("{v} stream: 50 MiB of deltas → whole answer, right length"),
        1,
        move |_| async move {
            const PIECE: usize = 64 << 10;
            const PIECES: usize = 800; // 50 MiB of text
            let piece = "x".repeat(PIECE);
            let steps = vec![
                Step::Send(head(200, Some("text/event-stream"), None)),
                Step::Send(vendor.opening()),
                Step::Fill(vendor.delta(&piece), PIECES),
                Step::Send(vendor.ending()),
            ];
            let server = FaultServer::always(steps).await;
            let knobs = Knobs {
                total: None,
                ..Knobs::default()
            };
            let model = vendor.model(&server.url, knobs);
            let messages = [Message::user("hi")];
            let mut events = model.stream(Request::new(&messages));
            let (mut length, mut deltas, mut answer) = (0, 0, None);
            while let Some(item) = events.next().await {
                match item.unwrap() {
                    LlmEvent::TextDelta(text) => {
                        length += text.len();
                        deltas += 1;
                    }
                    LlmEvent::Completed(response) => answer = Some(response),
                    other => panic!("only text was sent, not {other:?}"),
                }
            }
            let answer = answer.unwrap();
            assert_eq!((length, deltas), (PIECE * PIECES, PIECES));
            assert_eq!(answer.content().len(), PIECE * PIECES);
            assert_eq!(answer.finish_reason(), FinishReason::Stop);
        },
    );

    probes.add(
        format!("{v} stream: one 50 MiB event without a line end, 1 MiB cap → Malformed"),
        1,
        move |_| async move {
            let server = FaultServer::always(vec![
                Step::Send(head(200, Some("text/event-stream"), None)),
                Step::Send(vendor.opening()),
                Step::Send(vendor.huge_event_start()),
                Step::Fill(vec![b'a'; 64 << 10], 800),
            ])
            .await;
            let knobs = Knobs {
                max_bytes: Some(1 << 20),
                ..Knobs::default()
            };
            let got = stream_of(&vendor.model(&server.url, knobs)).await;
            let err = failed(&got.end, ProviderErrorKind::Malformed, vendor);
            contains(err, "without ending an event");
            assert!(got.elapsed < Duration::from_secs(10), "{:?}", got.elapsed);
        },
    );
}

/// Streams that take too long.
fn stream_time_probes(probes: &mut Probes, vendor: Vendor) {
    let v = vendor.name();

    probes.add(
        format!("{v} stream: endless `: ping` → Timeout (total)"),
        1,
        move |_| async move {
            let server = FaultServer::always(vec![
                Step::Send(head(200, Some("text/event-stream"), None)),
                Step::Forever(vendor.keepalive(), Duration::from_millis(40)),
            ])
            .await;
            let got = stream_of(&vendor.model(&server.url, quick())).await;
            let err = failed(&got.end, ProviderErrorKind::Timeout, vendor);
            contains(err, "total timeout");
            within(
                got.elapsed,
                Duration::from_millis(450),
                Duration::from_secs(4),
            );
        },
    );

    probes.add(
        format!("{v} stream: slow-loris head (a byte per 100 ms) → Timeout (idle)"),
        1,
        move |_| async move {
            let server = FaultServer::always(vec![Step::Trickle(
                head(200, Some("text/event-stream"), None),
                Duration::from_millis(100),
            )])
            .await;
            let got = stream_of(&vendor.model(&server.url, quick())).await;
            let err = failed(&got.end, ProviderErrorKind::Timeout, vendor);
            contains(err, "sent no answer within");
            within(
                got.elapsed,
                Duration::from_millis(280),
                Duration::from_secs(3),
            );
        },
    );

    probes.add(
        format!("{v} stream: accepted, never answered → Timeout (idle)"),
        1,
        move |_| async move {
            let server = FaultServer::always(vec![Step::Hang]).await;
            let got = stream_of(&vendor.model(&server.url, quick())).await;
            let err = failed(&got.end, ProviderErrorKind::Timeout, vendor);
            contains(err, "sent no answer within");
            within(
                got.elapsed,
                Duration::from_millis(280),
                Duration::from_secs(3),
            );
        },
    );

    probes.add(
        format!("{v} stream: headers, a delta, then silence → Timeout (idle)"),
        1,
        move |_| async move {
            let mut steps = sse([vendor.opening(), vendor.delta("Hel")].concat());
            steps.push(Step::Hang);
            let server = FaultServer::always(steps).await;
            let knobs = Knobs {
                total: Some(Duration::from_secs(10)),
                ..quick()
            };
            let got = stream_of(&vendor.model(&server.url, knobs)).await;
            let err = failed(&got.end, ProviderErrorKind::Timeout, vendor);
            contains(err, "sent nothing for");
            assert_eq!(got.text, "Hel");
            within(
                got.elapsed,
                Duration::from_millis(280),
                Duration::from_secs(3),
            );
        },
    );
}

/// Streams whose content says something went wrong.
fn stream_content_probes(probes: &mut Probes, vendor: Vendor) {
    let v = vendor.name();

    probes.add(
        format!("{v} stream: vendor error mid-stream → Vendor, deltas kept"),
        1,
        move |_| async move {
            let body = [
                vendor.opening(),
                vendor.delta("Hel"),
                vendor.delta("lo"),
                vendor.error_event(),
            ]
            .concat();
            let server = FaultServer::always(sse(body)).await;
            let got = stream_of(&vendor.model(&server.url, Knobs::default())).await;
            let err = failed(&got.end, ProviderErrorKind::Vendor, vendor);
            assert_eq!(err.message(), VENDOR_MESSAGE);
            assert_eq!(err.error_type(), Some(vendor.error_type()));
            assert_eq!(got.text, "Hello");
        },
    );

    probes.add(
        format!("{v} stream: broken tool arguments → raw_arguments, no arguments"),
        1,
        move |_| async move {
            let broken = r#"{"text": "a" oops"#;
            let server =
                FaultServer::always(sse(vendor.tool_stream("call_1", Args::Broken(broken)))).await;
            let got = stream_of(&vendor.model(&server.url, Knobs::default())).await;
            let response = got.end.unwrap();
            let call = &response.tool_calls()[0];
            assert_eq!(call.name, "note");
            assert!(call.arguments.is_empty(), "{call:?}");
            assert_eq!(call.raw_arguments.as_deref(), Some(broken));
        },
    );
}

/// Answers broken off.
fn answer_cut_probes(probes: &mut Probes, vendor: Vendor) {
    let v = vendor.name();

    probes.add(
        format!("{v} answer: whole (control)"),
        1,
        move |_| async move {
            let server = FaultServer::always(json_body(&vendor.text_answer("fine", true))).await;
            let (result, _) = generate_of(&*vendor.model(&server.url, Knobs::default())).await;
            let response = result.unwrap();
            assert_eq!(response.content(), "fine");
            assert_eq!(response.finish_reason(), FinishReason::Stop);
        },
    );

    probes.add(
        format!("{v} answer: reset mid-body → Transport"),
        2,
        move |n| async move {
            let answer = vendor.text_answer("fine", true).to_string().into_bytes();
            let server = FaultServer::always(vec![
                Step::Send(head(200, Some("application/json"), Some(answer.len()))),
                Step::Send(answer[..answer.len() / 2 + n].to_vec()),
                Step::Sleep(Duration::from_millis(100)),
                Step::Reset,
            ])
            .await;
            let (result, _) = generate_of(&*vendor.model(&server.url, Knobs::default())).await;
            failed(&result, ProviderErrorKind::Transport, vendor);
        },
    );

    probes.add(
        format!("{v} answer: content-length longer than sent → Transport"),
        1,
        move |_| async move {
            let answer = vendor.text_answer("fine", true).to_string().into_bytes();
            let server = FaultServer::always(vec![
                Step::Send(head(
                    200,
                    Some("application/json"),
                    Some(answer.len() + 100),
                )),
                Step::Send(answer),
            ])
            .await;
            let (result, _) = generate_of(&*vendor.model(&server.url, Knobs::default())).await;
            failed(&result, ProviderErrorKind::Transport, vendor);
        },
    );

    probes.add(
        format!("{v} answer: closed before answering → Transport"),
        1,
        move |_| async move {
            let server = FaultServer::always(Vec::new()).await;
            let (result, _) = generate_of(&*vendor.model(&server.url, Knobs::default())).await;
            failed(&result, ProviderErrorKind::Transport, vendor);
        },
    );

    for content_type in [Some("application/json"), None] {
        let label = content_type.unwrap_or("no content type");
        probes.add(
            format!("{v} answer: random bytes ({label}) → Malformed"),
            3,
            move |n| async move {
                let mut bytes = garbage(n, 2048);
                bytes[0] = b'#'; // never whitespace alone, never JSON
                let server = FaultServer::always(body(200, content_type, bytes)).await;
                let (result, _) = generate_of(&*vendor.model(&server.url, Knobs::default())).await;
                let err = failed(&result, ProviderErrorKind::Malformed, vendor);
                contains(err, "is not JSON");
            },
        );
    }

    probes.add(
        format!("{v} answer: an HTML page (200, text/html) → Malformed"),
        1,
        move |_| async move {
            let page = b"<html><body><h1>Service Unavailable</h1></body></html>".to_vec();
            let server = FaultServer::always(body(200, Some("text/html"), page)).await;
            let (result, _) = generate_of(&*vendor.model(&server.url, Knobs::default())).await;
            let err = failed(&result, ProviderErrorKind::Malformed, vendor);
            assert!(
                err.body().unwrap().contains("Service Unavailable"),
                "{err:?}"
            );
        },
    );

    probes.add(
        format!("{v} answer: an empty 200 body → Incomplete"),
        2,
        move |n| async move {
            let blank = if n == 0 {
                Vec::new()
            } else {
                b" \r\n\t\n".to_vec()
            };
            let server = FaultServer::always(body(200, Some("application/json"), blank)).await;
            let (result, _) = generate_of(&*vendor.model(&server.url, Knobs::default())).await;
            let err = failed(&result, ProviderErrorKind::Incomplete, vendor);
            contains(err, "is empty");
        },
    );
}

/// Answers whose body is not what it claims, or too slow.
fn answer_body_probes(probes: &mut Probes, vendor: Vendor) {
    let v = vendor.name();

    probes.add(
        format!("{v} answer: invalid UTF-8 in a string → Malformed"),
        1,
        move |_| async move {
            let answer = vendor.text_answer("caf@1@", true).to_string().into_bytes();
            let server = FaultServer::always(body(
                200,
                Some("application/json"),
                splice(&answer, "@1@", 0xFF),
            ))
            .await;
            let (result, _) = generate_of(&*vendor.model(&server.url, Knobs::default())).await;
            let err = failed(&result, ProviderErrorKind::Malformed, vendor);
            contains(err, "is not JSON");
        },
    );

    probes.add(
        format!("{v} answer: a 50 MiB body, 1 MiB cap → Malformed, quickly"),
        1,
        move |_| async move {
            let server = FaultServer::always(vec![
                Step::Send(head(
                    200,
                    Some("application/json"),
                    Some(13 + (50 << 20) + 2),
                )),
                Step::Send(b"{\"padding\": \"".to_vec()),
                Step::Fill(vec![b'a'; 64 << 10], 800),
                Step::Send(b"\"}".to_vec()),
            ])
            .await;
            let knobs = Knobs {
                max_bytes: Some(1 << 20),
                ..Knobs::default()
            };
            let (result, elapsed) = generate_of(&*vendor.model(&server.url, knobs)).await;
            let err = failed(&result, ProviderErrorKind::Malformed, vendor);
            contains(err, "larger than 1048576 bytes");
            assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
        },
    );
}

/// Answers that take too long.
fn answer_time_probes(probes: &mut Probes, vendor: Vendor) {
    let v = vendor.name();

    probes.add(
        format!("{v} answer: slow-loris head → Timeout"),
        1,
        move |_| async move {
            let server = FaultServer::always(vec![Step::Trickle(
                head(200, Some("application/json"), Some(2)),
                Duration::from_millis(100),
            )])
            .await;
            let (result, elapsed) = generate_of(&*vendor.model(&server.url, quick())).await;
            failed(&result, ProviderErrorKind::Timeout, vendor);
            within(elapsed, Duration::from_millis(450), Duration::from_secs(3));
        },
    );

    probes.add(
        format!("{v} answer: accepted, never answered → Timeout"),
        1,
        move |_| async move {
            let server = FaultServer::always(vec![Step::Hang]).await;
            let (result, elapsed) = generate_of(&*vendor.model(&server.url, quick())).await;
            failed(&result, ProviderErrorKind::Timeout, vendor);
            within(elapsed, Duration::from_millis(450), Duration::from_secs(3));
        },
    );

    probes.add(
        format!("{v} answer: headers, then silence → Timeout"),
        1,
        move |_| async move {
            let server = FaultServer::always(vec![
                Step::Send(head(200, Some("application/json"), Some(100))),
                Step::Send(b"{\"choices\": ".to_vec()),
                Step::Hang,
            ])
            .await;
            let (result, elapsed) = generate_of(&*vendor.model(&server.url, quick())).await;
            failed(&result, ProviderErrorKind::Timeout, vendor);
            within(elapsed, Duration::from_millis(450), Duration::from_secs(3));
        },
    );
}

/// Answers whose content says something went wrong.
fn answer_content_probes(probes: &mut Probes, vendor: Vendor) {
    let v = vendor.name();

    probes.add(
        format!("{v} answer: 200 with the vendor's error object → Vendor"),
        1,
        move |_| async move {
            let server = FaultServer::always(json_body(&vendor.error_answer())).await;
            let (result, _) = generate_of(&*vendor.model(&server.url, Knobs::default())).await;
            let err = failed(&result, ProviderErrorKind::Vendor, vendor);
            assert_eq!(err.message(), VENDOR_MESSAGE);
            assert_eq!(err.error_type(), Some(vendor.error_type()));
            assert_eq!(err.status(), None);
        },
    );

    probes.add(
        format!("{v} answer: no finish reason → FinishReason::Other"),
        1,
        move |_| async move {
            let server = FaultServer::always(json_body(&vendor.text_answer("half", false))).await;
            let (result, _) = generate_of(&*vendor.model(&server.url, Knobs::default())).await;
            let response = result.unwrap();
            assert_eq!(response.content(), "half");
            assert_eq!(response.finish_reason(), FinishReason::Other);
        },
    );

    probes.add(
        format!("{v} answer: broken tool arguments → raw_arguments, no arguments"),
        1,
        move |_| async move {
            let broken = r#"{"text": "a" oops"#;
            let server = FaultServer::always(json_body(
                &vendor.tool_answer("call_1", Args::Broken(broken)),
            ))
            .await;
            let (result, _) = generate_of(&*vendor.model(&server.url, Knobs::default())).await;
            let response = result.unwrap();
            let call = &response.tool_calls()[0];
            assert!(call.arguments.is_empty(), "{call:?}");
            assert_eq!(call.raw_arguments.as_deref(), Some(broken));
        },
    );
}

/// 429 with a `Retry-After` no one should wait for: the client waits `max_delay` (400 ms)
/// and no more, then the retry succeeds. A small `base_delay` tells the capped header
/// (400 ms) from a header ignored for the backoff (10 ms).
fn retry_probes(probes: &mut Probes, vendor: Vendor) {
    let v = vendor.name();
    for (label, value) in [
        ("1e30", "1e30"),
        ("a date in 9999", "Fri, 31 Dec 9999 23:59:59 GMT"),
    ] {
        for streamed in [false, true] {
            let mode = if streamed { "stream" } else { "answer" };
            probes.add(
                format!("{v} {mode}: 429, Retry-After {label} → waits max_delay, retry succeeds"),
                1,
                move |_| absurd_retry_after(vendor, value, streamed),
            );
        }
    }
    probes.add(
        format!("{v} stream: no headers within the idle timeout, retried → the retry succeeds"),
        1,
        move |_| silent_then_answered(vendor),
    );
    if matches!(vendor, Vendor::Azure | Vendor::AzureResponses) {
        // Azure's 429 says when in milliseconds too; that finer figure wins, capped.
        for (label, ms, low, high) in [
            ("250 (Retry-After 20)", "250", 240, 2000),
            ("1e30", "1e30", 390, 4000),
        ] {
            for streamed in [false, true] {
                let mode = if streamed { "stream" } else { "answer" };
                probes.add(
                    format!(
                        "{v} {mode}: 429, retry-after-ms {label} → waits it, capped; retry succeeds"
                    ),
                    1,
                    move |_| azure_retry_after_ms(vendor, ms, streamed, (low, high)),
                );
            }
        }
    }
}

/// Azure's 429 with `retry-after: 20` and `retry-after-ms: ms`: the client waits the
/// milliseconds (within `max_delay`, 400 ms), not the 20 s, and the retry succeeds; the
/// wait takes `bounds` milliseconds.
async fn azure_retry_after_ms(
    vendor: Vendor,
    ms: &'static str,
    streamed: bool,
    bounds: (u64, u64),
) {
    let server = FaultServer::start(move |n, _| {
        if n > 0 && streamed {
            return sse(vendor.text_stream(&["fi", "ne"]));
        }
        if n > 0 {
            return json_body(&vendor.text_answer("fine", true));
        }
        let error =
            json!({"error": {"code": "429", "message": "Requests have exceeded the rate limit."}});
        let error = error.to_string().into_bytes();
        let extra = [("retry-after", "20"), ("retry-after-ms", ms)];
        vec![
            Step::Send(head_with(
                429,
                Some("application/json"),
                Some(error.len()),
                &extra,
            )),
            Step::Send(error),
        ]
    })
    .await;
    let retry = RetryPolicy {
        attempts: 2,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(400),
    };
    let model = vendor.model(
        &server.url,
        Knobs {
            retry,
            ..Knobs::default()
        },
    );
    let (answer, elapsed) = if streamed {
        let got = stream_of(&model).await;
        (got.end, got.elapsed)
    } else {
        generate_of(&*model).await
    };
    assert_eq!(answer.unwrap().content(), "fine");
    assert_eq!(server.hits(), 2);
    within(
        elapsed,
        Duration::from_millis(bounds.0),
        Duration::from_millis(bounds.1),
    );
}

/// A stream's first attempt gets no headers: it is given up after the idle timeout and
/// retried, and the retry has a whole idle timeout of its own (the timer is reset, not left
/// run out), then reads its body with the same timer as its idle check.
async fn silent_then_answered(vendor: Vendor) {
    let server = FaultServer::start(move |n, _| {
        if n == 0 {
            return vec![Step::Hang];
        }
        let mut steps = vec![Step::Sleep(Duration::from_millis(150))];
        steps.extend(sse(vendor.text_stream(&["fi", "ne"])));
        steps
    })
    .await;
    let retry = RetryPolicy {
        attempts: 2,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(10),
    };
    let model = vendor.model(
        &server.url,
        Knobs {
            idle: Duration::from_millis(300),
            retry,
            ..Knobs::default()
        },
    );
    let got = stream_of(&model).await;
    assert_eq!(got.end.unwrap().content(), "fine");
    assert_eq!(server.hits(), 2);
    // 300 ms given up on, 10 ms of backoff, 150 ms before the retry's answer.
    within(
        got.elapsed,
        Duration::from_millis(450),
        Duration::from_secs(3),
    );
}

async fn absurd_retry_after(vendor: Vendor, retry_after: &'static str, streamed: bool) {
    let server = FaultServer::start(move |n, _| {
        if n > 0 && streamed {
            return sse(vendor.text_stream(&["fi", "ne"]));
        }
        if n > 0 {
            return json_body(&vendor.text_answer("fine", true));
        }
        let error = json!({"error": {"message": "slow down", "type": "rate_limit_error"}});
        let error = error.to_string().into_bytes();
        let extra = [("retry-after", retry_after)];
        vec![
            Step::Send(head_with(
                429,
                Some("application/json"),
                Some(error.len()),
                &extra,
            )),
            Step::Send(error),
        ]
    })
    .await;
    let retry = RetryPolicy {
        attempts: 2,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(400),
    };
    let model = vendor.model(
        &server.url,
        Knobs {
            retry,
            ..Knobs::default()
        },
    );
    let (answer, elapsed) = if streamed {
        let got = stream_of(&model).await;
        (got.end, got.elapsed)
    } else {
        generate_of(&*model).await
    };
    assert_eq!(answer.unwrap().content(), "fine");
    assert_eq!(server.hits(), 2);
    within(elapsed, Duration::from_millis(390), Duration::from_secs(4));
}

fn tool_call_probes(probes: &mut Probes) {
    responses_end_probes(probes);
    probes.add("openai stream: one index, two ids → two calls", 1, |_| {
        openai_shared_index()
    });
    probes.add(
        "anthropic stream: a block restarted at a taken index → two calls",
        1,
        |_| anthropic_restarted_block(),
    );

    probes.add(
        "openai stream: [DONE] without a finish_reason → FinishReason::Other",
        1,
        |_| async {
            let vendor = Vendor::OpenAi;
            let body = [
                vendor.opening(),
                vendor.delta("half"),
                b"data: [DONE]\n\n".to_vec(),
            ]
            .concat();
            let server = FaultServer::always(sse(body)).await;
            let got = stream_of(&vendor.model(&server.url, Knobs::default())).await;
            let response = got.end.unwrap();
            assert_eq!(response.content(), "half");
            assert_eq!(response.finish_reason(), FinishReason::Other);
        },
    );
}

/// How a Responses turn ends (hand-made bodies around the API's terminal events).
fn responses_end_probes(probes: &mut Probes) {
    let vendor = Vendor::Responses;
    let terminal = move |kind: &str, status: &str, reason: Option<&str>| {
        vendor.event(
            &json!({"type": kind, "response": {"id": "resp_1", "status": status,
            "incomplete_details": reason.map(|r| json!({"reason": r})),
            "usage": {"input_tokens": 12, "output_tokens": 7, "total_tokens": 19}}}),
        )
    };
    for (reason, finish) in [
        ("max_output_tokens", FinishReason::Length),
        ("content_filter", FinishReason::Filtered),
    ] {
        probes.add(
            format!(
                "openai-responses stream: response.incomplete ({reason}) → {finish:?}, text kept"
            ),
            1,
            move |_| async move {
                let body = [
                    vendor.opening(),
                    vendor.delta("Hel"),
                    terminal("response.incomplete", "incomplete", Some(reason)),
                ]
                .concat();
                let server = FaultServer::always(sse(body)).await;
                let got = stream_of(&vendor.model(&server.url, Knobs::default())).await;
                let response = got.end.unwrap();
                assert_eq!(response.content(), "Hel");
                assert_eq!(response.finish_reason(), finish);
            },
        );
        probes.add(
            format!("openai-responses answer: status incomplete ({reason}) → {finish:?}"),
            1,
            move |_| async move {
                let mut answer = vendor.text_answer("Hel", true);
                answer["status"] = json!("incomplete");
                answer["incomplete_details"] = json!({"reason": reason});
                let server = FaultServer::always(json_body(&answer)).await;
                let (result, _) = generate_of(&*vendor.model(&server.url, Knobs::default())).await;
                let response = result.unwrap();
                assert_eq!(response.content(), "Hel");
                assert_eq!(response.finish_reason(), finish);
            },
        );
    }

    responses_failure_probes(probes);
}

/// A Responses turn that fails, is cut at the output limit, or gives its items only at the
/// end (hand-made bodies around the API's terminal events).
fn responses_failure_probes(probes: &mut Probes) {
    let vendor = Vendor::Responses;
    probes.add(
        "openai-responses stream: response.failed → Vendor, its code and message",
        1,
        move |_| async move {
            let failure = vendor.event(&json!({"type": "response.failed", "response": {
                "id": "resp_1", "status": "failed", "error": vendor.error_object()}}));
            let body = [vendor.opening(), vendor.delta("Hel"), failure].concat();
            let server = FaultServer::always(sse(body)).await;
            let got = stream_of(&vendor.model(&server.url, Knobs::default())).await;
            let err = failed(&got.end, ProviderErrorKind::Vendor, vendor);
            assert_eq!(err.message(), VENDOR_MESSAGE);
            assert_eq!(err.error_type(), Some("server_error"));
            assert_eq!(got.text, "Hel");
        },
    );

    let terminal = move |kind: &str, status: &str, reason: Option<&str>| {
        vendor.event(
            &json!({"type": kind, "response": {"id": "resp_1", "status": status,
            "incomplete_details": reason.map(|r| json!({"reason": r})),
            "usage": {"input_tokens": 12, "output_tokens": 7, "total_tokens": 19}}}),
        )
    };
    probes.add(
        "openai-responses stream: a call cut at the output limit → raw_arguments, not run",
        1,
        move |_| async move {
            let whole = vendor.tool_stream("call_1", Args::Broken(r#"{"text": "a"#));
            // Up to the call's deltas; then the turn ends at the limit, no item done.
            let at = whole
                .windows(b"response.output_item.done".len())
                .position(|w| w == b"response.output_item.done")
                .unwrap();
            let start = at - "event: ".len();
            let body = [
                whole[..start].to_vec(),
                terminal(
                    "response.incomplete",
                    "incomplete",
                    Some("max_output_tokens"),
                ),
            ]
            .concat();
            let server = FaultServer::always(sse(body)).await;
            let got = stream_of(&vendor.model(&server.url, Knobs::default())).await;
            let response = got.end.unwrap();
            assert_eq!(response.finish_reason(), FinishReason::Length);
            let call = &response.tool_calls()[0];
            assert_eq!(call.id.as_deref(), Some("call_1"));
            assert!(call.arguments.is_empty(), "{call:?}");
            assert_eq!(call.raw_arguments.as_deref(), Some(r#"{"text": "a"#));
        },
    );

    probes.add(
        "openai-responses stream: no output_item.done, the items in response.completed → whole",
        1,
        move |_| async move {
            let item = json!({"type": "message", "id": "msg_1", "role": "assistant",
                "content": [{"type": "output_text", "text": "Hello", "annotations": []}]});
            let completed = vendor.event(&json!({"type": "response.completed", "response": {
                "id": "resp_1", "status": "completed", "output": [item]}}));
            let body = [vendor.opening(), completed].concat();
            let server = FaultServer::always(sse(body)).await;
            let got = stream_of(&vendor.model(&server.url, Knobs::default())).await;
            assert_eq!(got.end.unwrap().content(), "Hello");
        },
    );

    probes.add(
        "openai-responses stream: items sent empty at the end → the deltas are the text",
        1,
        move |_| async move {
            let empty = json!({"type": "message", "id": "msg_1", "role": "assistant",
                "content": []});
            let done = vendor.event(&json!({"type": "response.output_item.done",
                "output_index": 0, "item": empty}));
            let completed = vendor.event(&json!({"type": "response.completed", "response": {
                "id": "resp_1", "status": "completed", "output": [empty]}}));
            let body = [
                vendor.opening(),
                vendor.delta("Hel"),
                vendor.delta("lo"),
                done,
                completed,
            ]
            .concat();
            let server = FaultServer::always(sse(body)).await;
            let got = stream_of(&vendor.model(&server.url, Knobs::default())).await;
            assert_eq!(
                (got.text.as_str(), got.end.unwrap().content()),
                ("Hello", "Hello")
            );
        },
    );
}

async fn openai_shared_index() {
    let vendor = Vendor::OpenAi;
    let fragment = |id: Option<&str>, name: Option<&str>, arguments: &str| {
        let mut call = json!({"index": 0, "function": {"arguments": arguments}});
        if let Some(id) = id {
            call["id"] = json!(id);
            call["type"] = json!("function");
        }
        if let Some(name) = name {
            call["function"]["name"] = json!(name);
        }
        let delta = json!({"tool_calls": [call]});
        vendor.event(&json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]}))
    };
    let finish = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]});
    let body = [
        fragment(Some("call_a"), Some("note"), ""),
        fragment(None, None, "{\"text\":"),
        fragment(None, None, " \"a\"}"),
        fragment(Some("call_b"), Some("note"), ""),
        fragment(None, None, "{\"text\": \"b\"}"),
        vendor.event(&finish),
        b"data: [DONE]\n\n".to_vec(),
    ]
    .concat();
    let server = FaultServer::always(sse(body)).await;
    let got = stream_of(&vendor.model(&server.url, Knobs::default())).await;
    let response = got.end.unwrap();
    let calls: Vec<(Option<&str>, &str, Value)> = response
        .tool_calls()
        .iter()
        .map(|c| (c.id.as_deref(), c.name.as_str(), c.arguments_value()))
        .collect();
    assert_eq!(
        calls,
        [
            (Some("call_a"), "note", json!({"text": "a"})),
            (Some("call_b"), "note", json!({"text": "b"})),
        ]
    );
}

async fn anthropic_restarted_block() {
    let vendor = Vendor::Anthropic;
    let start = |id: &str| {
        let block = json!({"type": "tool_use", "id": id, "name": "note", "input": {}});
        vendor.event(&json!({"type": "content_block_start", "index": 0, "content_block": block}))
    };
    let piece = |json: &str| {
        let delta = json!({"type": "input_json_delta", "partial_json": json});
        vendor.event(&json!({"type": "content_block_delta", "index": 0, "delta": delta}))
    };
    let stop = vendor.event(&json!({"type": "content_block_stop", "index": 0}));
    let usage = json!({"usage": {"input_tokens": 3}});
    let finish = json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
        "usage": {"output_tokens": 5}});
    let body = [
        vendor.event(&json!({"type": "message_start", "message": usage})),
        start("toolu_a"),
        piece("{\"text\": "),
        piece("\"a\"}"),
        stop.clone(),
        start("toolu_b"),
        piece("{\"text\": \"b\"}"),
        stop,
        vendor.event(&finish),
        vendor.event(&json!({"type": "message_stop"})),
    ]
    .concat();
    let server = FaultServer::always(sse(body)).await;
    let got = stream_of(&vendor.model(&server.url, Knobs::default())).await;
    let response = got.end.unwrap();
    let calls: Vec<(Option<&str>, Value)> = response
        .tool_calls()
        .iter()
        .map(|c| (c.id.as_deref(), c.arguments_value()))
        .collect();
    assert_eq!(
        calls,
        [
            (Some("toolu_a"), json!({"text": "a"})),
            (Some("toolu_b"), json!({"text": "b"})),
        ]
    );
}

// Recorded vendor traffic, cut and reset on the wire ------------------------------------------

/// A recorded stream of `tests/fixtures`, with what it decodes to whole.
struct Recording {
    name: String,
    vendor: Vendor,
    body: Vec<u8>,
    text: String,
    calls: Vec<harness_core::ToolCall>,
}

fn recordings() -> Vec<Recording> {
    let mut all = Vec::new();
    // `(directory, the start of the files' names, ...)`: Vertex's recordings are of two formats.
    for (dir, prefix, vendor, format) in [
        ("openai", "", Vendor::OpenAi, Format::OpenAi),
        ("llamacpp", "", Vendor::OpenAi, Format::OpenAi),
        ("anthropic", "", Vendor::Anthropic, Format::Anthropic),
        ("gemini", "", Vendor::Gemini, Format::Gemini),
        ("cohere", "", Vendor::Cohere, Format::Cohere),
        (
            "openai-responses",
            "",
            Vendor::Responses,
            Format::OpenAiResponses,
        ),
        ("vertex", "gemini_", Vendor::VertexGemini, Format::Gemini),
        (
            "vertex",
            "anthropic_",
            Vendor::VertexAnthropic,
            Format::Anthropic,
        ),
        ("bedrock", "", Vendor::Bedrock, Format::Bedrock),
        ("azure/chat", "", Vendor::Azure, Format::OpenAi),
        (
            "azure/responses",
            "",
            Vendor::AzureResponses,
            Format::OpenAiResponses,
        ),
    ] {
        let mut files: Vec<_> = std::fs::read_dir(support::fixtures_dir().join(dir))
            .unwrap()
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| {
                path.extension()
                    .is_some_and(|e| e == "sse" || e == "eventstream")
            })
            .filter(|path| {
                path.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
            })
            .collect();
        files.sort();
        for path in files {
            let body = std::fs::read(&path).unwrap();
            let whole = decode_stream(format, &body, body.len(), |_| {}).unwrap();
            all.push(Recording {
                name: format!("{dir}/{}", path.file_name().unwrap().to_string_lossy()),
                vendor,
                text: whole.content().to_string(),
                calls: whole.tool_calls().to_vec(),
                body,
            });
        }
    }
    all
}

fn recorded_probes(probes: &mut Probes) {
    for recording in recordings() {
        let recording = Arc::new(recording);
        let separator: &[u8] = if recording.body.windows(4).any(|w| w == b"\r\n\r\n") {
            b"\r\n\r\n"
        } else {
            b"\n\n"
        };
        let mut cuts = if recording.vendor == Vendor::Bedrock {
            frame_ends(&recording.body)
        } else {
            boundaries(&recording.body, separator)
        };
        cuts.retain(|&at| at < recording.body.len());
        cuts.insert(0, 0);
        let last_event = *cuts.last().unwrap();
        let name = &recording.name;
        let whole = Arc::clone(&recording);
        probes.add(
            format!("recorded {name}: whole, over the wire"),
            1,
            move |_| recorded_cut(Arc::clone(&whole), whole.body.len()),
        );
        let cut = Arc::clone(&recording);
        probes.add(
            format!("recorded {name}: cut at each event boundary → Incomplete or the whole turn"),
            cuts.len(),
            move |n| recorded_cut(Arc::clone(&cut), cuts[n]),
        );
        let reset = Arc::clone(&recording);
        probes.add(
            format!("recorded {name}: reset at a random byte → Transport, deltas a prefix"),
            3,
            move |n| recorded_reset(Arc::clone(&reset), last_event, n),
        );
    }
}

/// The recording's first `cut` bytes, ended cleanly: an `Incomplete` error, or (a cut past
/// the end mark) the whole turn; the deltas a prefix of the whole text either way.
async fn recorded_cut(recording: Arc<Recording>, cut: usize) {
    let sent = recording.body[..cut].to_vec();
    let server = FaultServer::always(body(200, Some("text/event-stream"), sent)).await;
    let got = stream_of(&recording.vendor.model(&server.url, Knobs::default())).await;
    assert!(recording.text.starts_with(&got.text), "{:?}", got.text);
    match &got.end {
        Ok(response) => {
            assert_eq!(response.content(), recording.text);
            assert_eq!(response.tool_calls(), recording.calls);
        }
        Err(_) => {
            failed(&got.end, ProviderErrorKind::Incomplete, recording.vendor);
        }
    }
    if cut == recording.body.len() {
        assert!(
            got.end.is_ok(),
            "the whole recording must decode: {:?}",
            got.end
        );
    }
}

/// The recording up to a random byte before its last event (which starts at `last_event`),
/// then a reset.
async fn recorded_reset(recording: Arc<Recording>, last_event: usize, n: usize) {
    let body = &recording.body;
    // A recording of one event is reset before any of it.
    let cut = rng(n).usize(..last_event.max(1));
    let mut steps = sse(body[..cut].to_vec());
    steps.extend([Step::Sleep(Duration::from_millis(100)), Step::Reset]);
    let server = FaultServer::always(steps).await;
    let got = stream_of(&recording.vendor.model(&server.url, Knobs::default())).await;
    failed(&got.end, ProviderErrorKind::Transport, recording.vendor);
    assert!(recording.text.starts_with(&got.text), "{:?}", got.text);
}

// Through an agent ---------------------------------------------------------------------------

/// Every note the tool wrote, across the suite (each probe writes its own marker).
static NOTES: Mutex<Vec<String>> = Mutex::new(Vec::new());

mod tools {
    /// Write a note.
    ///
    /// * `text` - What to write.
    #[harness_core::tool]
    pub(crate) fn note(text: String) -> String {
        super::NOTES.lock().unwrap().push(text.clone());
        format!("noted {text}")
    }
}
use tools::Note;

fn notes_written(marker: &str) -> usize {
    NOTES
        .lock()
        .unwrap()
        .iter()
        .filter(|n| n.as_str() == marker)
        .count()
}

/// What the second model request meets.
#[derive(Clone, Copy, Debug)]
enum Fault {
    Reset,
    Cut,
    VendorError,
    Empty,
}

impl Fault {
    fn kind(self, streamed: bool) -> ProviderErrorKind {
        match self {
            // A stream cut cleanly lacks its end mark; an answer cut short of its
            // content-length is a broken transfer.
            Self::Cut if streamed => ProviderErrorKind::Incomplete,
            Self::Reset | Self::Cut => ProviderErrorKind::Transport,
            Self::VendorError => ProviderErrorKind::Vendor,
            Self::Empty => ProviderErrorKind::Incomplete,
        }
    }

    fn steps(self, vendor: Vendor, streamed: bool) -> Vec<Step> {
        let partial = [vendor.opening(), vendor.delta("Let me")].concat();
        match (self, streamed) {
            (Self::Reset, true) => {
                let mut steps = sse(partial);
                steps.extend([Step::Sleep(Duration::from_millis(100)), Step::Reset]);
                steps
            }
            (Self::Reset, false) => {
                let answer = vendor
                    .text_answer("Let me see", true)
                    .to_string()
                    .into_bytes();
                vec![
                    Step::Send(head(200, Some("application/json"), Some(answer.len()))),
                    Step::Send(answer[..answer.len() / 2].to_vec()),
                    Step::Sleep(Duration::from_millis(100)),
                    Step::Reset,
                ]
            }
            (Self::Cut, true) => body(200, Some("text/event-stream"), partial),
            (Self::Cut, false) => {
                let answer = vendor
                    .text_answer("Let me see", true)
                    .to_string()
                    .into_bytes();
                vec![
                    Step::Send(head(200, Some("application/json"), Some(answer.len() + 10))),
                    Step::Send(answer),
                ]
            }
            (Self::VendorError, true) => sse([partial, vendor.error_event()].concat()),
            (Self::VendorError, false) => json_body(&vendor.error_answer()),
            (Self::Empty, true) => body(200, Some("text/event-stream"), Vec::new()),
            (Self::Empty, false) => body(200, Some("application/json"), Vec::new()),
        }
    }
}

/// A server whose first answer calls `note` with `args`, and whose later answers are
/// `then`; each answer streamed when the request asks for a stream.
async fn agent_server(
    vendor: Vendor,
    args: Value,
    then: impl Fn(bool) -> Vec<Step> + Send + Sync + 'static,
) -> FaultServer {
    FaultServer::start(move |n, seen| {
        let streamed = vendor.streams(seen);
        if n > 0 {
            return then(streamed);
        }
        let args = Args::Object(&args);
        if streamed {
            sse(vendor.tool_stream("call_1", args))
        } else {
            json_body(&vendor.tool_answer("call_1", args))
        }
    })
    .await
}

/// The agent's run, through `run` or through `stream` (then also the text deltas it
/// passed on before the end).
async fn agent_outcome(agent: &Agent, streamed: bool) -> (Result<AgentState, RunError>, String) {
    if !streamed {
        return (agent.run("go").await, String::new());
    }
    let mut events = agent.stream("go");
    let (mut text, mut end) = (String::new(), None);
    while let Some(item) = events.next().await {
        assert!(end.is_none(), "an item after the run's last: {item:?}");
        match item {
            Ok(AgentEvent::TextDelta(piece)) => text.push_str(&piece),
            Ok(AgentEvent::Finished(state)) => end = Some(Ok(*state)),
            Ok(_) => {}
            Err(e) => end = Some(Err(e)),
        }
    }
    (
        end.expect("the run ended with neither Finished nor an error"),
        text,
    )
}

fn agent_fault_probe(probes: &mut Probes, vendor: Vendor, streamed: bool, fault: Fault) {
    let mode = if streamed { "stream" } else { "run" };
    let kind = fault.kind(streamed);
    let name = format!(
        "{} agent {mode}: tool turn, then {fault:?} → {kind:?}, transcript kept",
        vendor.name()
    );
    probes.add(name, 1, move |n| async move {
        let marker = format!("{}-{mode}-{fault:?}-{n}", vendor.name());
        let server = agent_server(vendor, json!({"text": marker}), move |streamed| {
            fault.steps(vendor, streamed)
        })
        .await;
        let agent = Agent::builder(vendor.model(&server.url, Knobs::default()))
            .tool(Note)
            .build()
            .unwrap();
        let (outcome, text) = agent_outcome(&agent, streamed).await;
        let err = outcome.expect_err("the run must fail");
        assert!(err.is_provider(), "{err:?}");
        assert_eq!(err.provider().unwrap().kind(), kind, "{err}");
        let state = err.state();
        assert_eq!(state.stop_reason, StopReason::Unfinished);
        let roles: Vec<Role> = state.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool]);
        assert_eq!(state.messages[0].text(), "go");
        let calls = &state.messages[1].tool_calls;
        assert_eq!(calls.len(), 1);
        assert_eq!(
            (calls[0].name.as_str(), calls[0].arguments_value()),
            ("note", json!({"text": marker}))
        );
        assert_eq!(state.messages[2].text(), format!("noted {marker}"));
        if vendor.wire() != Vendor::Gemini {
            assert_eq!(calls[0].id.as_deref(), Some("call_1"));
            assert_eq!(state.messages[2].tool_call_id.as_deref(), Some("call_1"));
        }
        assert_eq!(notes_written(&marker), 1, "the tool ran once");
        assert_eq!(server.hits(), 2);
        if streamed && !matches!(fault, Fault::Empty) {
            assert_eq!(
                text, "Let me",
                "the deltas before the fault reach the caller"
            );
        }
    });
}

fn agent_broken_arguments_probe(probes: &mut Probes, vendor: Vendor, streamed: bool) {
    let mode = if streamed { "stream" } else { "run" };
    let name = format!(
        "{} agent {mode}: broken tool arguments → not run, raw kept, answer",
        vendor.name()
    );
    probes.add(name, 1, move |n| async move {
        let marker = format!("{}-{mode}-broken-{n}", vendor.name());
        let broken = format!(r#"{{"text": "{marker}" oops"#);
        let sent = broken.clone();
        let server = FaultServer::start(move |n, seen| {
            let streamed = vendor.streams(seen);
            match (n, streamed) {
                (0, true) => sse(vendor.tool_stream("call_1", Args::Broken(&sent))),
                (0, false) => json_body(&vendor.tool_answer("call_1", Args::Broken(&sent))),
                (_, true) => sse(vendor.text_stream(&["do", "ne"])),
                (_, false) => json_body(&vendor.text_answer("done", true)),
            }
        })
        .await;
        let agent = Agent::builder(vendor.model(&server.url, Knobs::default()))
            .tool(Note)
            .build()
            .unwrap();
        let (outcome, _) = agent_outcome(&agent, streamed).await;
        let state = outcome.unwrap();
        assert_eq!(state.stop_reason, StopReason::Answer);
        assert_eq!(state.output, "done");
        assert_eq!(notes_written(&marker), 0, "the tool must not run");
        let call = &state.messages[1].tool_calls[0];
        assert!(call.arguments.is_empty(), "{call:?}");
        assert_eq!(call.raw_arguments.as_deref(), Some(broken.as_str()));
        let result = state.messages[2].text();
        assert!(
            result.starts_with("Error: the arguments for 'note' are not one JSON object"),
            "{result}"
        );
        // The model reads what it wrote in the result; the call itself goes back as `{}`,
        // which every vendor accepts (vLLM and SGLang refuse a history that is not JSON).
        assert!(
            result.contains(&format!("You sent:\n{broken}\n")),
            "{result}"
        );
        if vendor.wire() == Vendor::Responses {
            let input = &server.requests()[1].body["input"];
            assert_eq!(input[1]["type"], "function_call");
            assert_eq!(input[1]["arguments"], json!("{}"));
            let told = input[2]["output"].as_str().unwrap();
            assert!(told.contains(&broken), "{told}");
        }
        if vendor.wire() == Vendor::OpenAi {
            let second = &server.requests()[1].body;
            assert_eq!(
                second["messages"][1]["tool_calls"][0]["function"]["arguments"],
                json!("{}")
            );
            let told = second["messages"][2]["content"].as_str().unwrap();
            assert!(told.contains(&broken), "{told}");
        }
    });
}

fn agent_truncated_probe(probes: &mut Probes, vendor: Vendor) {
    probes.add(
        format!(
            "{} agent run: no finish reason → StopReason::Truncated",
            vendor.name()
        ),
        1,
        move |_| async move {
            let server =
                FaultServer::always(json_body(&vendor.text_answer("half an ans", false))).await;
            let agent = Agent::builder(vendor.model(&server.url, Knobs::default()))
                .build()
                .unwrap();
            let state = agent.run("go").await.unwrap();
            assert_eq!(state.stop_reason, StopReason::Truncated);
            assert!(!state.answered());
        },
    );
}

fn all_probes() -> Vec<Probe> {
    let mut probes = Probes::default();
    for vendor in VENDORS {
        stream_cut_probes(&mut probes, vendor);
        stream_body_probes(&mut probes, vendor);
        stream_utf8_probes(&mut probes, vendor);
        stream_size_probes(&mut probes, vendor);
        stream_time_probes(&mut probes, vendor);
        stream_content_probes(&mut probes, vendor);
        answer_cut_probes(&mut probes, vendor);
        answer_body_probes(&mut probes, vendor);
        answer_time_probes(&mut probes, vendor);
        answer_content_probes(&mut probes, vendor);
        retry_probes(&mut probes, vendor);
    }
    tool_call_probes(&mut probes);
    recorded_probes(&mut probes);
    for vendor in VENDORS {
        for fault in [Fault::Reset, Fault::Cut, Fault::VendorError, Fault::Empty] {
            agent_fault_probe(&mut probes, vendor, false, fault);
            agent_fault_probe(&mut probes, vendor, true, fault);
        }
        agent_broken_arguments_probe(&mut probes, vendor, false);
        agent_broken_arguments_probe(&mut probes, vendor, true);
        agent_truncated_probe(&mut probes, vendor);
    }
    probes.0
}

// The suite ------------------------------------------------------------------------------------

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

/// Runs one attempt under [`BOUND`]: `None` when it passed, else what went wrong.
async fn attempt(probe: &Probe, n: usize) -> Option<String> {
    let mut task = tokio::spawn((probe.run)(n));
    match tokio::time::timeout(BOUND, &mut task).await {
        Ok(Ok(())) => None,
        Ok(Err(join)) if join.is_panic() => Some(panic_text(&*join.into_panic())),
        Ok(Err(join)) => Some(format!("the attempt did not finish: {join}")),
        Err(_) => {
            task.abort();
            Some(format!("hung: no outcome within {BOUND:?}"))
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_suite() {
    let only = std::env::var("FAULTS_ONLY").unwrap_or_default();
    let probes: Vec<Probe> = all_probes()
        .into_iter()
        .filter(|p| p.name.contains(&only))
        .collect();
    assert!(!probes.is_empty(), "no probe matches FAULTS_ONLY={only:?}");
    let started = Instant::now();
    let jobs: Vec<(usize, usize)> = probes
        .iter()
        .enumerate()
        .flat_map(|(i, p)| (0..p.attempts).map(move |n| (i, n)))
        .collect();
    let outcomes: Vec<(usize, usize, Option<String>)> = futures_util::stream::iter(jobs)
        .map(|(i, n)| {
            let probe = &probes[i];
            async move { (i, n, attempt(probe, n).await) }
        })
        .buffer_unordered(4)
        .collect()
        .await;

    let mut failures = vec![0_usize; probes.len()];
    let mut reports = Vec::new();
    for (i, n, outcome) in &outcomes {
        if let Some(why) = outcome {
            failures[*i] += 1;
            reports.push(format!("{} (attempt {n}): {why}", probes[*i].name));
        }
    }
    let width = probes
        .iter()
        .map(|p| p.name.chars().count())
        .max()
        .unwrap_or(5);
    println!("\n{:<width$}  attempts  failures", "probe");
    for (probe, failed) in probes.iter().zip(&failures) {
        println!(
            "{:<width$}  {:>8}  {:>8}",
            probe.name, probe.attempts, failed
        );
    }
    println!(
        "{} probes, {} attempts, {} failures, in {:.1} s",
        probes.len(),
        outcomes.len(),
        reports.len(),
        started.elapsed().as_secs_f64()
    );
    reports.sort();
    assert!(reports.is_empty(), "failed probes:\n{}", reports.join("\n"));
}
