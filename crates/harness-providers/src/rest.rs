//! The request sequence the vendors share: POST a JSON body, read a JSON answer or an SSE
//! stream, and turn the stream into `LlmEvent`s through the vendor's accumulator.
//!
//! A stream is an answer only when it is whole: the reader below ends it with a typed
//! [`ProviderError`] when the body breaks off, goes silent past the idle timeout, runs past
//! the total timeout, is not an event stream at all, or (the accumulator's check) ends
//! before the vendor's end mark. Deltas handed out before such a failure stay handed out.

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt as _;
use harness_core::{
    BoxStream, CompletionResponse, Error, LlmEvent, ProviderError, ProviderErrorKind, Result,
};
use serde_json::Value;
use tokio::time::Instant;

use crate::http::{HttpClient, Streaming};
use crate::sse::SseDecoder;

/// Reads a vendor's stream, one event's data at a time, into deltas and a final response.
pub(crate) trait Accumulator: Send {
    /// Takes one event's data, handing out the deltas it carried.
    fn feed(&mut self, data: &str, emit: &mut dyn FnMut(LlmEvent)) -> Result<()>;

    /// The stream sent `data: [DONE]` (OpenAI's last line).
    fn done(&mut self) {}

    /// The whole turn, once the stream has ended; a [`ProviderErrorKind::Incomplete`]
    /// error when it ended before the vendor's end mark.
    fn finish(&mut self) -> Result<CompletionResponse>;
}

/// What a streaming request is: where, what, and how its answer is read.
pub(crate) struct StreamRequest<A> {
    pub(crate) path: String,
    pub(crate) body: Value,
    pub(crate) accumulator: A,
}

/// A response body as a stream of chunks; a transport failure as its text.
pub(crate) type Body<'a> = BoxStream<'a, reqwest::Result<Bytes>>;

/// How long a stream may stay silent, and run in all.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// No byte for this long fails the stream (`None`: wait as long as it takes).
    pub(crate) idle: Option<Duration>,
    /// The whole body must have arrived within this long, when set.
    pub(crate) total: Option<Duration>,
    /// The most an event (or a stretch of bytes with no event end) may buffer.
    pub(crate) max_event_bytes: usize,
}

/// How much of a body that is not an event stream is kept, to read an error object in it or
/// to quote it.
const HEAD_BYTES: usize = 4096;

enum State<'a, A> {
    Start(&'a HttpClient, StreamRequest<A>),
    Reading(Box<Reader<'a, A>>),
    Done,
}

/// Reads one streamed body into events: the SSE decoder, the vendor's accumulator, and the
/// checks that make a broken stream an error rather than a short answer.
pub(crate) struct Reader<'a, A> {
    provider: String,
    url: String,
    content_type: String,
    body: Body<'a>,
    decoder: SseDecoder,
    accumulator: A,
    queue: VecDeque<Result<LlmEvent>>,
    limits: Limits,
    deadline: Option<Instant>,
    /// The first bytes of the body, to quote when it turns out not to be an event stream.
    head: Vec<u8>,
    events: usize,
    ended: bool,
    // Holds the concurrency slot until the body has been read.
    _streaming_permit: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl<'a, A: Accumulator> Reader<'a, A> {
    pub(crate) fn new(
        provider: &str,
        url: String,
        content_type: String,
        body: Body<'a>,
        accumulator: A,
        limits: Limits,
        permit: Option<tokio::sync::OwnedSemaphorePermit>,
    ) -> Self {
        Self {
            provider: provider.to_owned(),
            url,
            content_type,
            body,
            decoder: SseDecoder::new(),
            accumulator,
            queue: VecDeque::new(),
            limits,
            deadline: limits
                .total
                .and_then(|total| Instant::now().checked_add(total)),
            head: Vec::new(),
            events: 0,
            ended: false,
            _streaming_permit: permit,
        }
    }

    fn failure(&self, kind: ProviderErrorKind, message: String) -> Error {
        ProviderError::new(&self.provider, message)
            .with_kind(kind)
            .into()
    }

    /// The next item: a delta, the assembled turn (last), or the error that ends the stream.
    pub(crate) async fn next(&mut self) -> Option<Result<LlmEvent>> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                if item.is_err() {
                    self.queue.clear();
                    self.ended = true;
                }
                return Some(item);
            }
            if self.ended {
                return None;
            }
            let chunk = self.read_chunk().await;
            match chunk {
                Ok(Some(bytes)) => {
                    if self.head.len() < HEAD_BYTES {
                        let take = (HEAD_BYTES - self.head.len()).min(bytes.len());
                        self.head.extend_from_slice(&bytes[..take]);
                    }
                    self.take_events(Some(&bytes));
                    if self.decoder.buffered() > self.limits.max_event_bytes {
                        let message = format!(
                            "the stream from {} sent more than {} bytes without ending an \
                             event; it is not a stream this client reads",
                            self.url, self.limits.max_event_bytes
                        );
                        self.queue
                            .push_back(Err(self.failure(ProviderErrorKind::Malformed, message)));
                    }
                }
                Ok(None) => {
                    // An event still open at the end, whose data does not read, was cut in
                    // the middle: the stream is incomplete, not malformed.
                    let open_event = self.decoder.buffered() > 0;
                    let queued = self.queue.len();
                    self.take_events(None);
                    if open_event && self.queue.len() > queued {
                        self.mark_cut_mid_event();
                    }
                    if !self.queue.back().is_some_and(Result::is_err) {
                        let last = self.conclude();
                        self.queue.push_back(last);
                    }
                    self.ended = true;
                }
                Err(error) => self.queue.push_back(Err(error)),
            }
        }
    }

    /// Turns an unreadable last event into the error that says the stream was cut inside it.
    fn mark_cut_mid_event(&mut self) {
        let Some(Err(error)) = self.queue.back() else {
            return;
        };
        let Some(provider) = error
            .provider()
            .filter(|p| p.kind() == ProviderErrorKind::Malformed)
        else {
            return;
        };
        let mut cut = ProviderError::new(
            provider.provider(),
            format!(
                "the stream from {} ended in the middle of an event ({}): the answer is \
                 incomplete (a dropped connection or a proxy that cut the body)",
                self.url,
                provider.message()
            ),
        )
        .with_kind(ProviderErrorKind::Incomplete);
        if let Some(body) = provider.body() {
            cut = cut.with_body(body);
        }
        if let Some(last) = self.queue.back_mut() {
            *last = Err(cut.into());
        }
    }

    /// The next chunk of the body within the idle and total timeouts.
    async fn read_chunk(&mut self) -> Result<Option<Bytes>> {
        let idle_end = self
            .limits
            .idle
            .and_then(|idle| Instant::now().checked_add(idle));
        let (until, total) = match (self.deadline, idle_end) {
            (None, None) => {
                let read = self.body.next().await;
                return self.settle(Ok(read));
            }
            (Some(deadline), Some(idle_end)) if idle_end <= deadline => (idle_end, false),
            (Some(deadline), _) => (deadline, true),
            (None, Some(idle_end)) => (idle_end, false),
        };
        let read = tokio::time::timeout_at(until, self.body.next()).await;
        self.settle(read.map_err(|_| total))
    }

    /// A read's outcome as a chunk, the end, or the error that ends the stream (`Err(true)`
    /// when the total timeout ran out, `Err(false)` for the idle one).
    fn settle(
        &self,
        read: std::result::Result<Option<reqwest::Result<Bytes>>, bool>,
    ) -> Result<Option<Bytes>> {
        match read {
            Ok(Some(Ok(bytes))) => Ok(Some(bytes)),
            Ok(None) => Ok(None),
            Ok(Some(Err(e))) => Err(ProviderError::new(
                &self.provider,
                format!(
                    "the stream from {} broke off: {}",
                    self.url,
                    crate::http::error_chain(&e)
                ),
            )
            .with_kind(ProviderErrorKind::Transport)
            .with_source(e)
            .into()),
            Err(true) => Err(self.failure(
                ProviderErrorKind::Timeout,
                format!(
                    "the stream from {} was still going after its total timeout of {} s; \
                     raise it with stream_timeout(..) or turn it off with None",
                    self.url,
                    self.limits.total.unwrap_or_default().as_secs_f64()
                ),
            )),
            Err(false) => Err(self.failure(
                ProviderErrorKind::Timeout,
                format!(
                    "the stream from {} sent nothing for {} s (its idle timeout); raise it \
                     with idle_timeout(..) if the model pauses longer",
                    self.url,
                    self.limits.idle.unwrap_or_default().as_secs_f64()
                ),
            )),
        }
    }

    fn take_events(&mut self, chunk: Option<&[u8]>) {
        let (accumulator, queue, events) =
            (&mut self.accumulator, &mut self.queue, &mut self.events);
        let mut read = |event: crate::sse::SseEvent<'_>| {
            let data = event.data.trim();
            // An error already ends the stream; a priming event (empty data) says nothing.
            if data.is_empty() || queue.back().is_some_and(Result::is_err) {
                return;
            }
            *events += 1;
            if data == "[DONE]" {
                accumulator.done();
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

    /// The body ended: an event stream gives the accumulator's turn (or its complaint that
    /// the end mark never came); anything else is an error quoting what arrived.
    fn conclude(&mut self) -> Result<LlmEvent> {
        if self.events > 0 {
            return self.accumulator.finish().map(LlmEvent::Completed);
        }
        if self.head.is_empty() {
            return Err(self.failure(
                ProviderErrorKind::Incomplete,
                format!("the stream from {} ended before its first event", self.url),
            ));
        }
        // A gateway that answers a stream request with its JSON error object, status 200.
        if let Ok(value) = serde_json::from_slice::<Value>(&self.head)
            && let Some(error) = value.get("error").filter(|e| !e.is_null())
        {
            return Err(vendor_error(
                &self.provider,
                error,
                &String::from_utf8_lossy(&self.head),
            ));
        }
        let excerpt = String::from_utf8_lossy(&self.head).into_owned();
        let error = ProviderError::new(
            &self.provider,
            format!(
                "the response from {} is not an event stream (Content-Type: {}); it begins: {}",
                self.url,
                if self.content_type.is_empty() {
                    "none"
                } else {
                    &self.content_type
                },
                excerpt.chars().take(120).collect::<String>()
            ),
        )
        .with_kind(ProviderErrorKind::Malformed)
        .with_body(&excerpt);
        Err(error.into())
    }
}

/// Streams one request: retries until the body starts, then hands out deltas as they arrive
/// and the assembled turn last, or the error that ended the stream.
pub(crate) fn stream<'a, A: Accumulator + 'a>(
    client: &'a HttpClient,
    request: StreamRequest<A>,
) -> BoxStream<'a, Result<LlmEvent>> {
    Box::pin(futures_util::stream::unfold(
        State::Start(client, request),
        |state| async move {
            let mut reader = match state {
                State::Done => return None,
                State::Reading(reader) => reader,
                State::Start(client, request) => {
                    match client.post_stream(&request.path, &request.body).await {
                        Ok(streaming) => Box::new(open(client, request, streaming)),
                        Err(e) => return Some((Err(e), State::Done)),
                    }
                }
            };
            let item = reader.next().await?;
            Some((item, State::Reading(reader)))
        },
    ))
}

fn open<'a, A: Accumulator + 'a>(
    client: &'a HttpClient,
    request: StreamRequest<A>,
    Streaming { response, permit }: Streaming,
) -> Reader<'a, A> {
    let config = client.config();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body: Body<'a> = response.bytes_stream().boxed();
    Reader::new(
        &config.provider,
        client.url(&request.path),
        content_type,
        body,
        request.accumulator,
        Limits {
            idle: Some(config.idle_timeout),
            total: config.stream_timeout,
            max_event_bytes: config.max_response_bytes,
        },
        permit,
    )
}

/// A required key of a vendor's answer, or an error that names it.
pub(crate) fn required<'v>(vendor: &str, value: &'v Value, key: &str) -> Result<&'v Value> {
    value.get(key).ok_or_else(|| {
        Error::from(
            ProviderError::new(
                vendor.to_ascii_lowercase(),
                format!("{vendor} response is missing '{key}': {}", clip(value)),
            )
            .with_kind(ProviderErrorKind::Malformed),
        )
    })
}

/// A stream that ended before the vendor's end mark, as the error that says so.
pub(crate) fn incomplete(vendor: &str, missing: &str) -> Error {
    ProviderError::new(
        vendor.to_ascii_lowercase(),
        format!(
            "the {vendor} stream ended before {missing}: the answer is incomplete (a dropped \
             connection or a proxy that cut the body)"
        ),
    )
    .with_kind(ProviderErrorKind::Incomplete)
    .into()
}

/// A stream chunk that is not the vendor's JSON, as the error that quotes it.
pub(crate) fn unreadable(vendor: &str, error: &serde_json::Error, data: &str) -> Error {
    ProviderError::new(
        vendor.to_ascii_lowercase(),
        format!("unreadable {vendor} stream event: {error}"),
    )
    .with_kind(ProviderErrorKind::Malformed)
    .with_body(data)
    .into()
}

/// The vendor's own error reported inside an answer (`{"error": {...}}` in a 200 body or a
/// stream event), keeping its type and message.
pub(crate) fn vendor_error(vendor: &str, error: &Value, data: &str) -> Error {
    let (kind, message) = crate::http::error_fields(error);
    let mut failure = ProviderError::new(
        vendor.to_ascii_lowercase(),
        message.unwrap_or_else(|| format!("{vendor} reported an error: {}", clip(error))),
    )
    .with_kind(ProviderErrorKind::Vendor)
    .with_body(data);
    if let Some(kind) = kind {
        failure = failure.with_error_type(kind);
    }
    failure.into()
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
/// A [`Provider`](harness_core::ErrorKind::Provider) error for a body the vendor's format does not
/// allow, one that is not an event stream, or one that ends before the vendor's end mark, as a live
/// stream would.
pub fn decode_stream(
    format: StreamFormat,
    body: &[u8],
    chunk: usize,
    emit: impl FnMut(LlmEvent),
) -> Result<CompletionResponse> {
    match format {
        StreamFormat::OpenAi => {
            decode_with(crate::openai::ChatAccumulator::default(), body, chunk, emit)
        }
        StreamFormat::Anthropic => decode_with(
            crate::anthropic::MessagesAccumulator::default(),
            body,
            chunk,
            emit,
        ),
        StreamFormat::Gemini => decode_with(
            crate::gemini::ContentAccumulator::default(),
            body,
            chunk,
            emit,
        ),
    }
}

/// Drives a [`Reader`] over an in-memory body to its end, with no runtime: every chunk is
/// ready, so each poll completes at once.
fn decode_with<A: Accumulator>(
    accumulator: A,
    body: &[u8],
    chunk: usize,
    mut emit: impl FnMut(LlmEvent),
) -> Result<CompletionResponse> {
    let chunks: Vec<reqwest::Result<Bytes>> = body
        .chunks(chunk.max(1))
        .map(|piece| Ok(Bytes::copy_from_slice(piece)))
        .collect();
    let mut reader = Reader::new(
        "recorded",
        "the recorded body".to_owned(),
        "text/event-stream".to_owned(),
        futures_util::stream::iter(chunks).boxed(),
        accumulator,
        Limits {
            idle: None,
            total: None,
            max_event_bytes: usize::MAX,
        },
        None,
    );
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    loop {
        let next = std::pin::pin!(reader.next());
        let std::task::Poll::Ready(item) = next.poll(&mut cx) else {
            // An in-memory body never waits; reaching here is a bug, not a body's fault.
            return Err(
                ProviderError::new("recorded", "the recorded body did not decode at once").into(),
            );
        };
        match item {
            Some(Ok(LlmEvent::Completed(response))) => return Ok(response),
            Some(Ok(delta)) => emit(delta),
            Some(Err(e)) => return Err(e),
            None => {
                return Err(
                    ProviderError::new("recorded", "the recorded body gave no turn").into(),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openai::ChatAccumulator;

    fn limits(idle: u64, total: Option<u64>) -> Limits {
        Limits {
            idle: Some(Duration::from_secs(idle)),
            total: total.map(Duration::from_secs),
            max_event_bytes: 1 << 20,
        }
    }

    /// An OpenAI stream that sends a delta every `every` seconds of (simulated) time for
    /// `for_secs`, then its end.
    fn slow_body(every: u64, for_secs: u64) -> Body<'static> {
        let ticks = for_secs / every;
        futures_util::stream::unfold(0, move |tick| async move {
            if tick > ticks {
                return None;
            }
            tokio::time::sleep(Duration::from_secs(every)).await;
            let data = if tick == ticks {
                "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
                    .to_owned()
            } else {
                "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n".to_owned()
            };
            Some((Ok(Bytes::from(data)), tick + 1))
        })
        .boxed()
    }

    async fn drain(mut reader: Reader<'_, ChatAccumulator>) -> (usize, Result<LlmEvent>) {
        let mut deltas = 0;
        loop {
            match reader.next().await {
                Some(Ok(LlmEvent::TextDelta(_))) => deltas += 1,
                Some(last) => return (deltas, last),
                None => panic!("the stream ended without a last item"),
            }
        }
    }

    fn reader(body: Body<'static>, limits: Limits) -> Reader<'static, ChatAccumulator> {
        Reader::new(
            "openai",
            "http://test/chat".to_owned(),
            "text/event-stream".to_owned(),
            body,
            ChatAccumulator::default(),
            limits,
            None,
        )
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_that_keeps_sending_for_twenty_minutes_is_not_cut() {
        let (deltas, last) = drain(reader(slow_body(60, 20 * 60), limits(120, None))).await;
        assert_eq!(deltas, 20);
        assert!(matches!(last, Ok(LlmEvent::Completed(_))), "{last:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_that_goes_silent_fails_with_a_timeout_after_its_deltas() {
        let (deltas, last) = drain(reader(slow_body(200, 600), limits(120, None))).await;
        assert_eq!(deltas, 0);
        let err = last.unwrap_err();
        let provider = err.provider().unwrap();
        assert!(provider.is_timeout(), "{err}");
        assert_eq!(
            provider.message(),
            "the stream from http://test/chat sent nothing for 120 s (its idle timeout); \
             raise it with idle_timeout(..) if the model pauses longer"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_total_timeout_ends_a_stream_that_never_stops() {
        // A delta every 10 s, for ever: 60 of them by 605 s, then the total timeout.
        let (deltas, last) = drain(reader(slow_body(10, 100_000), limits(120, Some(605)))).await;
        assert_eq!(deltas, 60);
        let err = last.unwrap_err();
        assert!(err.provider().unwrap().is_timeout());
        assert!(err.to_string().contains("total timeout of 605 s"), "{err}");
    }
}
