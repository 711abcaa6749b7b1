//! A vendor of your own, written with the REST kit (`harness_providers::rest`).
//!
//! "Quill" is a made-up completion service with a wire format of its own:
//!
//! - `POST /v1/generate` with `{"model", "turns": [{"speaker", "text"}], "max_tokens",
//!   "temperature", "stream"}`;
//! - streamed, it answers with server-sent events: `event: token` carrying `{"text"}` for
//!   each piece, then one `event: end` carrying `{"id", "reason", "tokens_in", "tokens_out"}`
//!   (its end mark), or `event: error` carrying `{"message"}`;
//! - not streamed, it answers one JSON object with the `end` event's fields and the whole
//!   `text`.
//!
//! The vendor is the three pieces the kit asks for: a request body borrowed from the
//! [`Request`], an [`Accumulator`] that reads both kinds of answer through one wire type, and
//! the [`Llm`] implementation tying them to an [`HttpClient`], which brings the retries,
//! timeouts, size caps and typed errors. `main` runs it against a Quill served on loopback,
//! so the example needs no network and no key:
//!
//! ```text
//! cargo run -p deepharness-providers --example custom_vendor
//! ```

use std::sync::Arc;

use futures_util::StreamExt as _;
use harness_core::{
    Agent, BoxStream, CompletionResponse, FinishReason, Llm, LlmEvent, ModelInfo, Request, Result,
    Role, TokenUsage, async_trait,
};
use harness_providers::rest::{self, Accumulator, HttpClient, HttpConfig, SseEvent, Vendor, json};
use serde::{Deserialize, Serialize};

const PATH: &str = "/v1/generate";
/// Errors say "Quill", and carry the provider id `quill`.
const QUILL: Vendor<'static> = Vendor::new("quill", "Quill");

/// A Quill model.
pub struct Quill {
    client: Arc<HttpClient>,
    model: String,
}

impl Quill {
    /// The model `model` of the Quill service at `base_url`, authenticated with `api_key`.
    ///
    /// # Errors
    /// A configuration error when the key is not a valid header value.
    pub fn new(base_url: &str, api_key: &str, model: &str) -> Result<Self> {
        let mut config = HttpConfig::new(QUILL.id, base_url);
        config
            .headers
            .push(("authorization".into(), format!("Bearer {api_key}")));
        Ok(Self {
            client: Arc::new(HttpClient::new(config)?),
            model: model.to_owned(),
        })
    }

    fn body<'a>(&'a self, request: &Request<'a>, stream: bool) -> Body<'a> {
        Body {
            model: &self.model,
            turns: request.messages.iter().map(Turn::from).collect(),
            max_tokens: request.settings.max_tokens,
            temperature: request.settings.temperature,
            stream,
        }
    }
}

#[async_trait]
impl Llm for Quill {
    async fn generate(&self, request: Request<'_>) -> Result<CompletionResponse> {
        let body = self.body(&request, false);
        // The request's vendor fields (`ModelSettings::extra`) are merged into the body last.
        let sent = rest::with_extra(&body, &request.settings.extra);
        let answer = self.client.post(PATH, &sent).await?;
        // The same wire type and accumulator as a stream: one parser for both answers.
        let piece: Piece<'_> = json::answer(QUILL, PATH, &answer)?;
        let mut accumulator = QuillAccumulator::default();
        accumulator.take(piece, &mut |_| {})?;
        accumulator.finish()
    }

    // The stream owns its client (the body is serialised here), so it outlives the request
    // and can be handed on: an agent's watcher reads it directly, with nothing passed
    // through the run for each event.
    fn stream(self: Arc<Self>, request: Request<'_>) -> BoxStream<'static, Result<LlmEvent>> {
        let body = self.body(&request, true);
        let sent = rest::with_extra(&body, &request.settings.extra);
        rest::stream(
            Arc::clone(&self.client),
            PATH,
            &sent,
            QuillAccumulator::default(),
        )
    }

    fn info(&self) -> ModelInfo {
        ModelInfo::new(QUILL.id, &self.model)
    }
}

// The request: borrowed from the transcript, serialised once by the client. ------------------

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    turns: Vec<Turn<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    stream: bool,
}

#[derive(Serialize)]
struct Turn<'a> {
    speaker: &'static str,
    text: std::borrow::Cow<'a, str>,
}

impl<'a> From<&'a harness_core::Message> for Turn<'a> {
    fn from(message: &'a harness_core::Message) -> Self {
        let speaker = match message.role {
            Role::System => "narrator",
            Role::Assistant => "quill",
            // Quill has no tools; a tool result reads as what the user reports.
            Role::User | Role::Tool => "user",
        };
        Self {
            speaker,
            text: message.text(),
        }
    }
}

// The answer: one wire type for a stream event and a whole answer. ---------------------------

#[derive(Deserialize)]
struct Piece<'a> {
    #[serde(borrow, default)]
    text: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    id: Option<String>,
    /// Only on the last piece: why the answer stopped.
    #[serde(default)]
    reason: Option<&'a str>,
    #[serde(default)]
    tokens_in: u64,
    #[serde(default)]
    tokens_out: u64,
    /// Only on an error.
    #[serde(default)]
    message: Option<String>,
}

#[derive(Default)]
struct QuillAccumulator {
    text: String,
    id: Option<String>,
    finish: Option<FinishReason>,
    usage: TokenUsage,
}

impl QuillAccumulator {
    fn take(&mut self, piece: Piece<'_>, emit: &mut dyn FnMut(LlmEvent)) -> Result<()> {
        if let Some(message) = piece.message {
            return Err(QUILL
                .error(harness_core::ProviderErrorKind::Vendor, message)
                .into());
        }
        if let Some(text) = piece.text.filter(|t| !t.is_empty()) {
            self.text.push_str(&text);
            emit(LlmEvent::TextDelta(text.into_owned()));
        }
        if let Some(reason) = piece.reason {
            self.finish = Some(match reason {
                "stop" => FinishReason::Stop,
                "length" => FinishReason::Length,
                _ => FinishReason::Other,
            });
            self.id = piece.id;
            let total = piece.tokens_in.saturating_add(piece.tokens_out);
            self.usage = TokenUsage::new(piece.tokens_in, piece.tokens_out, total);
        }
        Ok(())
    }
}

impl Accumulator for QuillAccumulator {
    fn feed(&mut self, event: SseEvent<'_>, emit: &mut dyn FnMut(LlmEvent)) -> Result<()> {
        let piece: Piece<'_> = serde_json::from_str(event.data)
            .map_err(|e| json::unreadable(QUILL, &e, event.data))?;
        match event.event {
            "token" | "end" | "error" => self.take(piece, emit),
            // Events a later Quill may add are skipped, not failures.
            _ => Ok(()),
        }
    }

    fn finish(&mut self) -> Result<CompletionResponse> {
        // A stream without its `end` event was cut: an error, not a short answer.
        let Some(finish) = self.finish else {
            return Err(json::incomplete(QUILL, "its 'end' event"));
        };
        let mut response = CompletionResponse::text(std::mem::take(&mut self.text))
            .with_finish_reason(finish)
            .with_usage(self.usage);
        if let Some(id) = self.id.take() {
            response = response.with_id(id);
        }
        Ok(response)
    }
}

// A Quill on loopback, so the example runs anywhere. ------------------------------------------

mod server {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// Serves Quill on a loopback port: `stream` is the event stream sent to a streamed
    /// request, `whole` the JSON sent otherwise. Returns the base URL and a receiver of each
    /// request body.
    pub(super) async fn serve(
        stream: &'static str,
        whole: &'static str,
    ) -> std::io::Result<(String, tokio::sync::mpsc::UnboundedReceiver<String>)> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let (bodies, received) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let bodies = bodies.clone();
                tokio::spawn(async move {
                    let Some(body) = read_request(&mut socket).await else {
                        return;
                    };
                    let streamed = body.contains("\"stream\":true");
                    let _ = bodies.send(body);
                    let (kind, answer) = if streamed {
                        ("text/event-stream", stream)
                    } else {
                        ("application/json", whole)
                    };
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {}\r\n\
                         connection: close\r\n\r\n",
                        answer.len()
                    );
                    let _ = socket.write_all(head.as_bytes()).await;
                    let _ = socket.write_all(answer.as_bytes()).await;
                });
            }
        });
        Ok((url, received))
    }

    /// The body of one HTTP/1.1 request with a `content-length`.
    async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<String> {
        let mut buffer = Vec::new();
        let mut chunk = [0_u8; 4096];
        loop {
            let read = socket.read(&mut chunk).await.ok()?;
            if read == 0 {
                return None;
            }
            buffer.extend_from_slice(&chunk[..read]);
            let text = String::from_utf8_lossy(&buffer);
            let Some(end) = text.find("\r\n\r\n") else {
                continue;
            };
            let length = text[..end]
                .lines()
                .filter_map(|line| line.split_once(':'))
                .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
                .and_then(|(_, value)| value.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if buffer.len() >= end + 4 + length {
                return Some(String::from_utf8_lossy(&buffer[end + 4..end + 4 + length]).into());
            }
        }
    }
}

const STREAM: &str = "event: token\ndata: {\"text\":\"Ink \"}\n\n\
                      event: token\ndata: {\"text\":\"and \"}\n\n\
                      event: token\ndata: {\"text\":\"paper.\"}\n\n\
                      event: end\ndata: {\"id\":\"q-7\",\"reason\":\"stop\",\"tokens_in\":9,\"tokens_out\":3}\n\n";
const WHOLE: &str =
    r#"{"id":"q-8","text":"Ink and paper.","reason":"stop","tokens_in":9,"tokens_out":3}"#;

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let (url, _bodies) = server::serve(STREAM, WHOLE).await?;
    let quill = Arc::new(Quill::new(&url, "not-a-real-key", "quill-1")?);

    // Streamed, through the trait: the deltas as they come, then the whole turn.
    let messages = [harness_core::Message::user("What does a writer need?")];
    let mut events = Arc::clone(&quill).stream(Request::new(&messages));
    while let Some(event) = events.next().await {
        match event? {
            LlmEvent::TextDelta(piece) => println!("delta: {piece:?}"),
            LlmEvent::Completed(turn) => println!(
                "completed: {:?} (id {:?}, {:?})",
                turn.content(),
                turn.id(),
                turn.finish_reason()
            ),
            // Thinking, and what a later version adds.
            _ => {}
        }
    }

    // The same model drives an agent like any built-in provider.
    let agent = Agent::builder(quill).build()?;
    let state = agent.run("What does a writer need?").await?;
    println!("agent: {}", state.output_text());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness_core::{Message, ModelSettings, ProviderErrorKind};

    #[tokio::test]
    async fn a_stream_hands_out_each_token_then_the_whole_turn() {
        let (url, mut bodies) = server::serve(STREAM, WHOLE).await.unwrap();
        let quill = Arc::new(Quill::new(&url, "k", "quill-1").unwrap());
        let messages = [Message::system("Be brief."), Message::user("hi")];
        let settings = ModelSettings::new().with_max_tokens(20);
        let request = Request::new(&messages).with_settings(&settings);
        let events: Vec<_> = quill.stream(request).collect().await;
        let mut deltas = Vec::new();
        let mut completed = None;
        for event in events {
            match event.unwrap() {
                LlmEvent::TextDelta(piece) => deltas.push(piece),
                LlmEvent::Completed(turn) => completed = Some(turn),
                other => panic!("Quill sends text and the turn only, not {other:?}"),
            }
        }
        assert_eq!(deltas, ["Ink ", "and ", "paper."]);
        let turn = completed.unwrap();
        assert_eq!(turn.content(), "Ink and paper.");
        assert_eq!(turn.id(), Some("q-7"));
        assert_eq!(turn.finish_reason(), FinishReason::Stop);
        assert_eq!(turn.usage(), Some(&TokenUsage::new(9, 3, 12)));
        assert_eq!(
            bodies.recv().await.unwrap(),
            r#"{"model":"quill-1","turns":[{"speaker":"narrator","text":"Be brief."},{"speaker":"user","text":"hi"}],"max_tokens":20,"stream":true}"#
        );
    }

    #[tokio::test]
    async fn a_whole_answer_reads_through_the_same_parser() {
        let (url, mut bodies) = server::serve(STREAM, WHOLE).await.unwrap();
        let quill = Quill::new(&url, "k", "quill-1").unwrap();
        let messages = [Message::user("hi")];
        let turn = quill.generate(Request::new(&messages)).await.unwrap();
        assert_eq!(turn.content(), "Ink and paper.");
        assert_eq!(turn.id(), Some("q-8"));
        assert_eq!(turn.usage(), Some(&TokenUsage::new(9, 3, 12)));
        assert!(bodies.recv().await.unwrap().ends_with(r#""stream":false}"#));
    }

    #[tokio::test]
    async fn a_stream_cut_before_its_end_event_is_an_error_naming_quill() {
        let cut = "event: token\ndata: {\"text\":\"Ink \"}\n\n";
        let (url, _) = server::serve(cut, WHOLE).await.unwrap();
        let quill = Arc::new(Quill::new(&url, "k", "quill-1").unwrap());
        let messages = [Message::user("hi")];
        let events: Vec<_> = quill.stream(Request::new(&messages)).collect().await;
        // The delta already seen stays delivered; the stream then ends in a typed error.
        assert!(matches!(&events[0], Ok(LlmEvent::TextDelta(t)) if t == "Ink "));
        let err = events.last().unwrap().as_ref().unwrap_err();
        let provider = err.provider().unwrap();
        assert_eq!(provider.kind(), ProviderErrorKind::Incomplete);
        assert_eq!(provider.provider(), "quill");
        assert!(
            err.to_string()
                .contains("Quill stream ended before its 'end' event")
        );
    }

    #[tokio::test]
    async fn an_error_event_and_bad_json_are_typed_errors() {
        let failing = "event: error\ndata: {\"message\":\"the quill broke\"}\n\n";
        let (url, _) = server::serve(failing, "not json").await.unwrap();
        let quill = Arc::new(Quill::new(&url, "k", "quill-1").unwrap());
        let messages = [Message::user("hi")];
        let events: Vec<_> = Arc::clone(&quill)
            .stream(Request::new(&messages))
            .collect()
            .await;
        let err = events.last().unwrap().as_ref().unwrap_err();
        assert_eq!(err.provider().unwrap().kind(), ProviderErrorKind::Vendor);
        assert!(err.to_string().contains("the quill broke"), "{err}");

        let err = quill.generate(Request::new(&messages)).await.unwrap_err();
        assert_eq!(err.provider().unwrap().kind(), ProviderErrorKind::Malformed);
        assert!(err.to_string().contains("Quill"), "{err}");
    }

    #[tokio::test]
    async fn an_agent_runs_on_the_custom_vendor() {
        let (url, _) = server::serve(STREAM, WHOLE).await.unwrap();
        let quill = Quill::new(&url, "k", "quill-1").unwrap();
        let agent = Agent::builder(quill).build().unwrap();
        let state = agent.run("hi").await.unwrap();
        assert_eq!(state.output_text(), "Ink and paper.");
        assert_eq!(state.usage.total_tokens, 12);
    }

    #[tokio::test]
    async fn the_model_tells_what_it_is_and_sends_the_vendor_fields_last() {
        let (url, mut bodies) = server::serve(STREAM, WHOLE).await.unwrap();
        let quill = Arc::new(Quill::new(&url, "k", "quill-1").unwrap());
        assert_eq!(quill.info().name(), "quill:quill-1");
        let messages = [Message::user("hi")];
        let settings = ModelSettings::new()
            .with_temperature(0.5)
            .with_extra("temperature", serde_json::json!(0.1))
            .with_extra("seed", serde_json::json!(7));
        let request = Request::new(&messages).with_settings(&settings);
        quill.generate(request).await.unwrap();
        assert_eq!(
            bodies.recv().await.unwrap(),
            r#"{"model":"quill-1","turns":[{"speaker":"user","text":"hi"}],"temperature":0.1,"stream":false,"seed":7}"#
        );
        let _: Vec<_> = Arc::clone(&quill).stream(request).collect().await;
        assert_eq!(
            bodies.recv().await.unwrap(),
            r#"{"model":"quill-1","turns":[{"speaker":"user","text":"hi"}],"temperature":0.1,"stream":true,"seed":7}"#
        );
    }
}
