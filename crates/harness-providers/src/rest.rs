//! The request sequence the vendors share: POST a JSON body, read a JSON answer or an SSE
//! stream, and turn the stream into `LlmEvent`s through the vendor's accumulator.

use std::collections::VecDeque;

use bytes::Bytes;
use futures_util::StreamExt as _;
use harness_core::{BoxStream, CompletionResponse, Error, LlmEvent, ProviderError, Result};
use serde_json::Value;

use crate::http::{HttpClient, Streaming};
use crate::sse::SseDecoder;

/// Reads a vendor's stream, one event's data at a time, into deltas and a final response.
pub(crate) trait Accumulator: Send {
    /// Takes one event's data, handing out the deltas it carried.
    fn feed(&mut self, data: &str, emit: &mut dyn FnMut(LlmEvent)) -> Result<()>;

    /// The whole turn, once the stream has ended.
    fn finish(&mut self) -> Result<CompletionResponse>;
}

/// What a streaming request is: where, what, and how its answer is read.
pub(crate) struct StreamRequest<A> {
    pub(crate) path: String,
    pub(crate) body: Value,
    pub(crate) accumulator: A,
}

enum State<'a, A> {
    Start(&'a HttpClient, StreamRequest<A>),
    Reading(Box<Reading<'a, A>>),
    Done,
}

struct Reading<'a, A> {
    client: &'a HttpClient,
    path: String,
    body: futures_util::stream::BoxStream<'static, reqwest::Result<Bytes>>,
    // Holds the concurrency slot until the body has been read.
    _streaming_permit: Option<tokio::sync::OwnedSemaphorePermit>,
    decoder: SseDecoder,
    accumulator: A,
    queue: VecDeque<Result<LlmEvent>>,
    ended: bool,
}

impl<A: Accumulator> Reading<'_, A> {
    fn take_events(&mut self, chunk: Option<&[u8]>) {
        let (accumulator, queue) = (&mut self.accumulator, &mut self.queue);
        let mut read = |event: crate::sse::SseEvent<'_>| {
            let data = event.data.trim();
            if data.is_empty() || data == "[DONE]" || queue.back().is_some_and(Result::is_err) {
                return;
            }
            let mut emit = |delta: LlmEvent| queue.push_back(Ok(delta));
            if let Err(e) = accumulator.feed(data, &mut emit) {
                queue.push_back(Err(e));
            }
        };
        match chunk {
            Some(bytes) => self.decoder.feed(bytes, &mut read),
            None => self.decoder.finish(&mut read),
        }
    }
}

/// Streams one request: retries until the body starts, then hands out deltas as they arrive
/// and the assembled turn last. A transport failure mid-body ends the stream with an error;
/// the deltas already handed out stay handed out.
pub(crate) fn stream<'a, A: Accumulator + 'a>(
    client: &'a HttpClient,
    request: StreamRequest<A>,
) -> BoxStream<'a, Result<LlmEvent>> {
    Box::pin(futures_util::stream::unfold(
        State::Start(client, request),
        |state| async move {
            let mut reading = match state {
                State::Done => return None,
                State::Reading(reading) => reading,
                State::Start(client, request) => {
                    match client.post_stream(&request.path, &request.body).await {
                        Ok(Streaming { response, permit }) => Box::new(Reading {
                            client,
                            path: request.path,
                            body: response.bytes_stream().boxed(),
                            _streaming_permit: permit,
                            decoder: SseDecoder::new(),
                            accumulator: request.accumulator,
                            queue: VecDeque::new(),
                            ended: false,
                        }),
                        Err(e) => return Some((Err(e), State::Done)),
                    }
                }
            };
            loop {
                if let Some(item) = reading.queue.pop_front() {
                    let next = if item.is_err() {
                        State::Done
                    } else {
                        State::Reading(reading)
                    };
                    return Some((item, next));
                }
                if reading.ended {
                    let last = reading.accumulator.finish().map(LlmEvent::Completed);
                    return Some((last, State::Done));
                }
                match reading.body.next().await {
                    Some(Ok(bytes)) => reading.take_events(Some(&bytes)),
                    Some(Err(e)) => {
                        let url = reading.client.url(&reading.path);
                        let error = ProviderError::new(
                            &reading.client.config().provider,
                            format!("the stream from {url} broke off: {e}"),
                        );
                        return Some((Err(Error::from(error)), State::Done));
                    }
                    None => {
                        reading.take_events(None);
                        reading.ended = true;
                    }
                }
            }
        },
    ))
}

/// A required key of a vendor's answer, or an error that names it.
pub(crate) fn required<'v>(vendor: &str, value: &'v Value, key: &str) -> Result<&'v Value> {
    value.get(key).ok_or_else(|| {
        Error::from(ProviderError::new(
            vendor.to_ascii_lowercase(),
            format!("{vendor} response is missing '{key}': {}", clip(value)),
        ))
    })
}

/// An answer as JSON text cut to 200 characters (never inside a character), for messages.
pub(crate) fn clip(value: &Value) -> String {
    let body = value.to_string();
    if body.chars().count() > 200 {
        body.chars().take(200).collect::<String>() + "..."
    } else {
        body
    }
}

/// Tool-call arguments from the text a vendor sent: empty or unparseable text gives none.
pub(crate) fn lenient_arguments(text: &str) -> Value {
    match serde_json::from_str::<Value>(text.trim()) {
        Ok(value @ Value::Object(_)) => value,
        _ => Value::Object(serde_json::Map::new()),
    }
}

/// The stream formats of the vendors, for [`decode_stream`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamFormat {
    /// OpenAI Chat Completions (and every compatible gateway and local server).
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
    /// Gemini `streamGenerateContent?alt=sse`.
    Gemini,
}

/// Reads a whole recorded SSE body the way the provider reads a live one, in `chunk`-byte
/// pieces, handing each delta to `emit`; returns the assembled turn. For tests and tools
/// that replay recorded traffic without a server.
///
/// # Errors
/// [`Error::Provider`] for a chunk the vendor's format does not allow.
pub fn decode_stream(
    format: StreamFormat,
    body: &[u8],
    chunk: usize,
    mut emit: impl FnMut(LlmEvent),
) -> Result<CompletionResponse> {
    match format {
        StreamFormat::OpenAi => decode_with(
            crate::openai::ChatAccumulator::default(),
            body,
            chunk,
            &mut emit,
        ),
        StreamFormat::Anthropic => decode_with(
            crate::anthropic::MessagesAccumulator::default(),
            body,
            chunk,
            &mut emit,
        ),
        StreamFormat::Gemini => decode_with(
            crate::gemini::ContentAccumulator::default(),
            body,
            chunk,
            &mut emit,
        ),
    }
}

fn decode_with<A: Accumulator>(
    mut accumulator: A,
    body: &[u8],
    chunk: usize,
    emit: &mut dyn FnMut(LlmEvent),
) -> Result<CompletionResponse> {
    let mut decoder = SseDecoder::new();
    let mut failure = None;
    let mut read = |event: crate::sse::SseEvent<'_>| {
        let data = event.data.trim();
        if failure.is_some() || data.is_empty() || data == "[DONE]" {
            return;
        }
        if let Err(e) = accumulator.feed(data, emit) {
            failure = Some(e);
        }
    };
    for piece in body.chunks(chunk.max(1)) {
        decoder.feed(piece, &mut read);
    }
    decoder.finish(&mut read);
    match failure {
        Some(e) => Err(e),
        None => accumulator.finish(),
    }
}
