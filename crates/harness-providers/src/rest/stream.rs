//! The stream driver: POST a body, then read the answer's events into [`LlmEvent`]s through
//! the vendor's [`Accumulator`]. Events are cut from the body by a [`Framing`]: server-sent
//! events ([`SseDecoder`]) for most vendors, AWS's binary event stream for Bedrock.
//!
//! A stream is an answer only when it is whole: the reader ends it with a typed
//! [`ProviderError`] when the body breaks off, goes silent past the idle timeout, runs past
//! the total timeout, is not an event stream at all, or (the accumulator's check) ends
//! before the vendor's end mark. Deltas handed out before such a failure stay handed out.
//!
//! Tuned code: the stream is a hand-written state machine ([`Streamed`], [`Reader`]) rather
//! than an `unfold` over an async step, so each item is one poll with no future built and
//! dropped per item; it keeps one timer for the wait for the headers, the idle checks and
//! the total deadline, so no clock is read per chunk and no second timer makes tokio unpark
//! its driver per request. Measured with `cargo xtask bench http` (docs/performance.md):
//! about 3 µs less CPU per two-step streamed run, with the bare-HTTP floor's system calls and
//! no more. Change it with that benchmark at hand.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt as _;
use harness_core::{
    BoxStream, CompletionResponse, Error, LlmEvent, ProviderError, ProviderErrorKind, Result,
};
use reqwest::header::HeaderValue;
use serde::Serialize;
use serde_json::Value;
use tokio::time::{Instant, Sleep};

use super::http::{HttpClient, Streaming, error_chain};
use super::json::{self, Vendor};
use super::sse::{SseDecoder, SseEvent};

/// What a vendor implements to read its answer: one stream event at a time, handing out
/// text and thinking as they arrive, then the whole turn.
///
/// The [`stream`] driver decodes the body's server-sent events and calls
/// [`feed`](Accumulator::feed) with each one that has data (a `data: [DONE]` line calls
/// [`done`](Accumulator::done) instead); when the body ends, [`finish`](Accumulator::finish)
/// assembles the [`CompletionResponse`]. Text and thinking go to `emit` as
/// [`LlmEvent::TextDelta`] and [`LlmEvent::ThinkingDelta`]; the driver adds
/// [`LlmEvent::Completed`] itself.
///
/// A vendor keeps one parser: its non-streamed answer is read into the same wire types and
/// driven through the same accumulator (as one event, or as the events it would have been),
/// so the two paths cannot drift apart.
///
/// Errors say which vendor failed and what to do: [`json`] has the helpers
/// ([`json::unreadable`] for an event that does not read, [`json::vendor_error`] for an
/// error the vendor sent, [`json::incomplete`] for a stream without its end mark).
pub trait Accumulator: Send {
    /// Takes one event (its data trimmed), handing the deltas it carried to `emit`.
    ///
    /// # Errors
    /// A [`ProviderError`] for an event that cannot be read or that reports the vendor's
    /// error; it ends the stream, the deltas handed out so far staying handed out.
    fn feed(&mut self, event: SseEvent<'_>, emit: &mut dyn FnMut(LlmEvent)) -> Result<()>;

    /// The stream sent `data: [DONE]` (OpenAI's last line). Nothing by default.
    fn done(&mut self) {}

    /// The whole turn, once the body has ended.
    ///
    /// # Errors
    /// An [`Incomplete`](ProviderErrorKind::Incomplete) error ([`json::incomplete`]) when
    /// the stream ended before the vendor's end mark: a cut stream is not a short answer.
    fn finish(&mut self) -> Result<CompletionResponse>;

    /// The request failed before its body started, after the client's retries. A vendor
    /// that refuses the model's own malformed tool call with an HTTP error (Groq's
    /// `tool_use_failed`) returns here the turn that error stands for, as its non-streamed
    /// reader does. By default the error ends the stream.
    ///
    /// # Errors
    /// `error` itself when it is not such a refusal.
    fn refused(&mut self, error: Error) -> Result<CompletionResponse> {
        Err(error)
    }
}

/// How a streamed body is cut into events: server-sent events, or another framing (AWS's
/// binary event stream). Each event reaches the vendor's accumulator as an [`SseEvent`]: its
/// type and its data.
pub(crate) trait Framing: Send {
    /// The content type a body of this framing is labelled with (for a recorded body).
    const CONTENT_TYPE: &'static str;

    /// Reads a chunk of the body, handing every event it completes, or the error that makes
    /// the rest unreadable, to `on_event`.
    fn feed(&mut self, chunk: &[u8], on_event: &mut impl FnMut(Framed<'_>));

    /// The body ended: anything still held is handed on, or reported as cut.
    fn finish(&mut self, on_event: &mut impl FnMut(Framed<'_>));

    /// How many bytes the framing holds (or, having read an event's declared length, must
    /// hold) for an event not yet complete; the reader caps it.
    fn buffered(&self) -> usize;
}

/// What a [`Framing`] hands on: an event, or the error that ends the stream.
pub(crate) type Framed<'e> = std::result::Result<SseEvent<'e>, FrameError>;

/// Why a framing cannot go on.
#[derive(Debug)]
// Used by the Bedrock provider (feature `bedrock`).
#[cfg_attr(not(feature = "bedrock"), allow(dead_code))]
pub(crate) enum FrameError {
    /// Bytes that are not a frame (a checksum that does not match, lengths that do not add
    /// up): what is wrong.
    Corrupt(String),
    /// The body ended with this many bytes of a frame not yet complete.
    Cut(usize),
    /// The service's own error, sent in the stream.
    Exception {
        /// Its type, such as `throttlingException`.
        error_type: String,
        /// Its message, when it gave one.
        message: Option<String>,
        /// The frame's payload, to quote.
        body: String,
    },
}

impl Framing for SseDecoder {
    const CONTENT_TYPE: &'static str = "text/event-stream";

    #[inline]
    fn feed(&mut self, chunk: &[u8], on_event: &mut impl FnMut(Framed<'_>)) {
        SseDecoder::feed(self, chunk, |event| on_event(Ok(event)));
    }

    #[inline]
    fn finish(&mut self, on_event: &mut impl FnMut(Framed<'_>)) {
        SseDecoder::finish(self, |event| on_event(Ok(event)));
    }

    #[inline]
    fn buffered(&self) -> usize {
        SseDecoder::buffered(self)
    }
}

/// A response body as a stream of chunks.
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

/// How many idle checks a stream makes per idle timeout: a silence is noticed within
/// `1 / IDLE_CHECKS` of the timeout after it ran out.
const IDLE_CHECKS: u32 = 4;

/// A waker's identity: its data and its vtable, as `Waker::will_wake` compares them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct WakerId(usize, usize);

impl WakerId {
    fn of(waker: &std::task::Waker) -> Self {
        Self(
            waker.data().addr(),
            std::ptr::from_ref(waker.vtable()).addr(),
        )
    }
}

/// When the next idle check is due: a check period after `now`, and no later than the idle
/// timeout after `quiet_since`; `None` without an idle timeout.
fn next_check(limits: &Limits, quiet_since: Instant, now: Instant) -> Option<Instant> {
    let idle = limits.idle?;
    let period = (idle / IDLE_CHECKS).max(Duration::from_millis(1));
    earliest(now.checked_add(period), quiet_since.checked_add(idle))
}

/// The earlier of two optional instants.
fn earliest(one: Option<Instant>, other: Option<Instant>) -> Option<Instant> {
    match (one, other) {
        (Some(one), Some(other)) => Some(one.min(other)),
        (one, other) => one.or(other),
    }
}

/// POSTs `body` (serialised once, the same bytes on every retry) to `path` and streams the
/// answer through `accumulator`: its deltas as they arrive, then [`LlmEvent::Completed`]
/// with the whole turn, or the error that ended the stream. The stream owns what it reads
/// with (the client through its `Arc`, the body already serialised), so it lives as long as
/// it is read, as [`Llm::stream`](harness_core::Llm::stream) returns it.
///
/// Retries happen until the body starts; after that a failure ends the stream (deltas
/// already handed out cannot be taken back). The client's
/// [`idle_timeout`](super::HttpConfig::idle_timeout) bounds the wait for the headers and
/// every silence in the body, its [`stream_timeout`](super::HttpConfig::stream_timeout) the
/// whole stream, and its [`max_response_bytes`](super::HttpConfig::max_response_bytes) one
/// event.
pub fn stream<A, B>(
    client: Arc<HttpClient>,
    path: &str,
    body: &B,
    accumulator: A,
) -> BoxStream<'static, Result<LlmEvent>>
where
    A: Accumulator + 'static,
    B: Serialize + ?Sized,
{
    start(client, path, body, accumulator, SseDecoder::new())
}

/// [`stream`] with the body's events cut by `framing` rather than read as server-sent events.
// Used by the Bedrock provider (feature `bedrock`).
#[cfg_attr(not(feature = "bedrock"), allow(dead_code))]
pub(crate) fn stream_framed<A, B, F>(
    client: Arc<HttpClient>,
    path: &str,
    body: &B,
    accumulator: A,
    framing: F,
) -> BoxStream<'static, Result<LlmEvent>>
where
    A: Accumulator + 'static,
    B: Serialize + ?Sized,
    F: Framing + 'static,
{
    start(client, path, body, accumulator, framing)
}

fn start<'a, A, B, F>(
    client: Arc<HttpClient>,
    path: &str,
    body: &B,
    accumulator: A,
    framing: F,
) -> BoxStream<'a, Result<LlmEvent>>
where
    A: Accumulator + 'a,
    B: Serialize + ?Sized,
    F: Framing + 'a,
{
    let payload = match client.payload(path, body) {
        Ok(payload) => payload,
        Err(e) => return Box::pin(futures_util::stream::once(std::future::ready(Err(e)))),
    };
    let path = path.to_owned();
    // The request's future is boxed so that it is freed once the body starts: inline, it
    // would size the stream for its whole life.
    let sender = client.clone();
    let request: Request<'a> = Box::pin(async move { sender.post_stream(&path, payload).await });
    Box::pin(Streamed {
        phase: Phase::Start {
            client,
            request,
            accumulator,
            framing,
        },
    })
}

/// Whose stream a reader reads, for its errors: a client's provider (the client is kept, not
/// its name copied), or a fixed name for a recorded body.
enum Source<'a> {
    Client(Arc<HttpClient>),
    Named(&'a str),
}

impl Source<'_> {
    fn provider(&self) -> &str {
        match self {
            Self::Client(client) => &client.config().provider,
            Self::Named(name) => name,
        }
    }
}

/// The request that starts a stream, until its body starts.
type Request<'a> = Pin<Box<dyn Future<Output = Result<Streaming>> + Send + 'a>>;

/// The stream [`stream`] returns: the request, then its body read item by item. A
/// hand-written stream rather than an `unfold` over an async step: each item is one poll of
/// the reader, with no future built, moved and dropped per item.
struct Streamed<'a, A, F> {
    phase: Phase<'a, A, F>,
}

enum Phase<'a, A, F> {
    Start {
        client: Arc<HttpClient>,
        request: Request<'a>,
        accumulator: A,
        framing: F,
    },
    // Boxed: while thousands of streams wait for their answers to start, each holds only
    // what the wait needs, not the reader's buffers and state.
    Reading(Box<Reader<'a, A, F>>),
    Done,
}

// Nothing is pinned in place: the request is pinned in its own box, the reader's body and
// timer in theirs, and the accumulator is only ever used through `&mut`.
impl<A, F> Unpin for Streamed<'_, A, F> {}

impl<'a, A: Accumulator + 'a, F: Framing + 'a> futures_util::Stream for Streamed<'a, A, F> {
    type Item = Result<LlmEvent>;

    fn poll_next(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<Option<Result<LlmEvent>>> {
        let this = self.get_mut();
        if let Phase::Start { request, .. } = &mut this.phase {
            let started = std::task::ready!(request.as_mut().poll(cx));
            let Phase::Start {
                client,
                mut accumulator,
                framing,
                ..
            } = std::mem::replace(&mut this.phase, Phase::Done)
            else {
                return Poll::Ready(None);
            };
            match started {
                Ok(streaming) => {
                    let reader = open(&client, streaming, accumulator, framing);
                    this.phase = Phase::Reading(Box::new(reader));
                }
                Err(e) => {
                    let turn = accumulator.refused(e);
                    return Poll::Ready(Some(turn.map(|t| LlmEvent::Completed(Box::new(t)))));
                }
            }
        }
        match &mut this.phase {
            Phase::Reading(reader) => reader.poll_next(cx),
            _ => Poll::Ready(None),
        }
    }
}

/// Reads a whole recorded SSE body the way [`stream`] reads a live one, in `chunk`-byte
/// pieces, handing each delta to `emit`; returns the assembled turn. For testing an
/// accumulator against recorded traffic without a server (no runtime needed).
///
/// # Errors
/// As a live stream: a [`Provider`](harness_core::ErrorKind::Provider) error for a body the
/// accumulator cannot read, one that is not an event stream, or one that ends before the
/// vendor's end mark. Its provider id is `recorded`.
pub fn decode<A: Accumulator>(
    accumulator: A,
    body: &[u8],
    chunk: usize,
    emit: impl FnMut(LlmEvent),
) -> Result<CompletionResponse> {
    decode_framed(accumulator, SseDecoder::new(), body, chunk, emit)
}

/// [`decode`] with the body's events cut by `framing`.
// Used by the Bedrock provider (feature `bedrock`).
#[cfg_attr(not(feature = "bedrock"), allow(dead_code))]
pub(crate) fn decode_framed<A: Accumulator, F: Framing>(
    accumulator: A,
    framing: F,
    body: &[u8],
    chunk: usize,
    mut emit: impl FnMut(LlmEvent),
) -> Result<CompletionResponse> {
    let chunks: Vec<reqwest::Result<Bytes>> = body
        .chunks(chunk.max(1))
        .map(|piece| Ok(Bytes::copy_from_slice(piece)))
        .collect();
    let mut reader = Reader::new(
        Source::Named("recorded"),
        Incoming::events(
            "the recorded body",
            F::CONTENT_TYPE,
            futures_util::stream::iter(chunks).boxed(),
        ),
        accumulator,
        framing,
        Limits {
            idle: None,
            total: None,
            max_event_bytes: usize::MAX,
        },
    );
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    loop {
        let Poll::Ready(item) = reader.poll_next(&mut cx) else {
            // An in-memory body without timers never waits; reaching here is a bug, not a
            // body's fault.
            return Err(
                ProviderError::new("recorded", "the recorded body did not decode at once").into(),
            );
        };
        match item {
            Some(Ok(LlmEvent::Completed(response))) => return Ok(*response),
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

fn open<'a, A: Accumulator + 'a, F: Framing + 'a>(
    client: &Arc<HttpClient>,
    Streaming {
        response,
        permit,
        url,
        timer,
    }: Streaming,
    accumulator: A,
    framing: F,
) -> Reader<'a, A, F> {
    let config = client.config();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .cloned();
    let body: Body<'a> = response.bytes_stream().boxed();
    let incoming = Incoming {
        url,
        content_type,
        body,
        permit,
        timer: Some(timer),
    };
    Reader::new(
        Source::Client(client.clone()),
        incoming,
        accumulator,
        framing,
        Limits {
            idle: Some(config.idle_timeout),
            total: config.stream_timeout,
            max_event_bytes: config.max_response_bytes,
        },
    )
}

/// Reads one streamed body into events: the framing, the vendor's accumulator, and the
/// checks that make a broken stream an error rather than a short answer.
pub(crate) struct Reader<'a, A, F = SseDecoder> {
    /// Whose stream it is, for errors.
    source: Source<'a>,
    url: String,
    content_type: Option<HeaderValue>,
    body: Body<'a>,
    decoder: F,
    accumulator: A,
    queue: VecDeque<Result<LlmEvent>>,
    limits: Limits,
    /// When the total timeout runs out.
    deadline: Option<Instant>,
    /// One timer for the stream's whole life, firing at each idle check (every
    /// [`IDLE_CHECKS`]th of the idle timeout) or at the total deadline, whichever is first.
    /// A chunk only sets [`read_since_check`](Self::read_since_check), so no clock is read
    /// per chunk.
    timer: Option<Pin<Box<Sleep>>>,
    /// The waker the timer was last polled with, while it has not fired since.
    timer_waker: Option<WakerId>,
    /// Whether a chunk came since the last idle check.
    read_since_check: bool,
    /// The first idle check with no chunk since the one before: the stream has been silent
    /// at least since then.
    quiet_since: Instant,
    /// The first bytes of a body in which no event was found yet, to quote when it turns
    /// out not to be an event stream.
    head: Vec<u8>,
    events: usize,
    ended: bool,
    // Holds the concurrency slot until the body has been read.
    _streaming_permit: Option<tokio::sync::OwnedSemaphorePermit>,
}

/// A body to read, and what came with it.
struct Incoming<'a> {
    /// Where it was sent, for messages.
    url: String,
    content_type: Option<HeaderValue>,
    body: Body<'a>,
    /// The concurrency slot the request holds until its body has been read.
    permit: Option<tokio::sync::OwnedSemaphorePermit>,
    /// The timer that bounded the wait for the headers, to go on as the first idle check.
    timer: Option<Pin<Box<Sleep>>>,
}

impl<'a> Incoming<'a> {
    /// An event stream from no request: a recorded body, a test's.
    fn events(url: &str, content_type: &'static str, body: Body<'a>) -> Self {
        Self {
            url: url.to_owned(),
            content_type: Some(HeaderValue::from_static(content_type)),
            body,
            permit: None,
            timer: None,
        }
    }
}

impl<'a, A: Accumulator, F: Framing> Reader<'a, A, F> {
    fn new(
        source: Source<'a>,
        incoming: Incoming<'a>,
        accumulator: A,
        decoder: F,
        limits: Limits,
    ) -> Self {
        let Incoming {
            url,
            content_type,
            body,
            permit,
            timer,
        } = incoming;
        let now = Instant::now();
        let deadline = limits.total.and_then(|total| now.checked_add(total));
        let first = earliest(limits.idle.and_then(|idle| now.checked_add(idle)), deadline);
        // The first check comes at most a whole idle timeout in, not a check period: the
        // headers' timer, due an idle timeout after the request was sent, goes on as that
        // check, so it is neither registered again nor replaced by one due sooner (for a
        // timer due sooner than every timer it last parked with, tokio unparks its driver,
        // a syscall). Checks then come every period, so a silence still fails within a
        // period after the timeout.
        let timer = match (timer, first) {
            (Some(mut timer), Some(first)) => {
                if timer.deadline() > first {
                    timer.as_mut().reset(first);
                }
                Some(timer)
            }
            (None, Some(first)) => Some(Box::pin(tokio::time::sleep_until(first))),
            (_, None) => None,
        };
        Self {
            source,
            url,
            content_type,
            body,
            decoder,
            accumulator,
            queue: VecDeque::new(),
            limits,
            deadline,
            timer,
            timer_waker: None,
            read_since_check: false,
            quiet_since: now,
            head: Vec::new(),
            events: 0,
            ended: false,
            _streaming_permit: permit,
        }
    }

    fn failure(&self, kind: ProviderErrorKind, message: String) -> Error {
        ProviderError::new(self.source.provider(), message)
            .with_kind(kind)
            .into()
    }

    /// The next item: a delta, the assembled turn (last), or the error that ends the stream.
    #[cfg(test)]
    pub(crate) async fn next(&mut self) -> Option<Result<LlmEvent>> {
        std::future::poll_fn(|cx| self.poll_next(cx)).await
    }

    /// Polls for the next item: a delta, the assembled turn (last), or the error that ends
    /// the stream.
    pub(crate) fn poll_next(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<Option<Result<LlmEvent>>> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                if item.is_err() {
                    self.queue.clear();
                    self.ended = true;
                }
                return Poll::Ready(Some(item));
            }
            if self.ended {
                return Poll::Ready(None);
            }
            match std::task::ready!(self.poll_chunk(cx)) {
                Ok(Some(bytes)) => {
                    self.take_events(Some(&bytes));
                    if self.events == 0 && self.head.len() < HEAD_BYTES {
                        let take = (HEAD_BYTES - self.head.len()).min(bytes.len());
                        self.head.extend_from_slice(&bytes[..take]);
                    }
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
                    if open_event && self.events > 0 && self.queue.len() > queued {
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
    ///
    /// The idle timeout is checked, not timed per chunk: a silence is noticed at the first
    /// check at least the idle timeout after the first check that found no chunk since
    /// the one before, so a stream silent for the idle timeout fails within a quarter of
    /// it more, and never sooner.
    fn poll_chunk(&mut self, cx: &mut std::task::Context<'_>) -> Poll<Result<Option<Bytes>>> {
        loop {
            if let Poll::Ready(read) = self.body.poll_next_unpin(cx) {
                self.read_since_check = true;
                return Poll::Ready(self.settle(read));
            }
            let Some(timer) = self.timer.as_mut() else {
                return Poll::Pending;
            };
            // A timer polled with this very waker that has not fired holds the waker already:
            // polling it again for every chunk would only swap in another clone of it (tokio's
            // `block_on` waker never compares equal to its own clone).
            let waker = WakerId::of(cx.waker());
            if self.timer_waker == Some(waker) && !timer.is_elapsed() {
                return Poll::Pending;
            }
            if timer.as_mut().poll(cx).is_pending() {
                self.timer_waker = Some(waker);
                return Poll::Pending;
            }
            self.timer_waker = None;
            let now = Instant::now();
            if self.deadline.is_some_and(|deadline| deadline <= now) {
                return Poll::Ready(Err(self.timeout(true)));
            }
            if std::mem::take(&mut self.read_since_check) {
                self.quiet_since = now;
            } else if self
                .limits
                .idle
                .is_some_and(|idle| now.saturating_duration_since(self.quiet_since) >= idle)
            {
                return Poll::Ready(Err(self.timeout(false)));
            }
            let next = earliest(
                next_check(&self.limits, self.quiet_since, now),
                self.deadline,
            );
            match (next, self.timer.as_mut()) {
                (Some(at), Some(timer)) => timer.as_mut().reset(at),
                _ => self.timer = None,
            }
        }
    }

    /// A read's outcome as a chunk, the end, or the transport error that ends the stream.
    fn settle(&self, read: Option<reqwest::Result<Bytes>>) -> Result<Option<Bytes>> {
        match read {
            Some(Ok(bytes)) => Ok(Some(bytes)),
            None => Ok(None),
            Some(Err(e)) => Err(ProviderError::new(
                self.source.provider(),
                format!(
                    "the stream from {} broke off: {}",
                    self.url,
                    error_chain(&e)
                ),
            )
            .with_kind(ProviderErrorKind::Transport)
            .with_source(e)
            .into()),
        }
    }

    /// The error of a stream that ran out of time: its total timeout (`total`), or its idle
    /// one.
    fn timeout(&self, total: bool) -> Error {
        let message = if total {
            format!(
                "the stream from {} was still going after its total timeout of {} s; raise \
                 it with stream_timeout(..) or turn it off with None",
                self.url,
                self.limits.total.unwrap_or_default().as_secs_f64()
            )
        } else {
            format!(
                "the stream from {} sent nothing for {} s (its idle timeout); raise it with \
                 idle_timeout(..) if the model pauses longer",
                self.url,
                self.limits.idle.unwrap_or_default().as_secs_f64()
            )
        };
        self.failure(ProviderErrorKind::Timeout, message)
    }

    fn take_events(&mut self, chunk: Option<&[u8]>) {
        let (accumulator, queue, events) =
            (&mut self.accumulator, &mut self.queue, &mut self.events);
        let mut broken: Option<FrameError> = None;
        let mut read = |event: Framed<'_>| {
            // An error already ends the stream.
            if broken.is_some() || queue.back().is_some_and(Result::is_err) {
                return;
            }
            let event = match event {
                Ok(event) => event,
                Err(error) => {
                    broken = Some(error);
                    return;
                }
            };
            // JSON's whitespace is ASCII; `trim()`'s Unicode tables are a function of their
            // own, fetched again for every event (docs/performance.md).
            let data = event.data.trim_ascii();
            // A priming event (empty data) says nothing.
            if data.is_empty() {
                return;
            }
            *events += 1;
            if data == "[DONE]" {
                accumulator.done();
                return;
            }
            let mut emit = |delta: LlmEvent| queue.push_back(Ok(delta));
            if let Err(e) = accumulator.feed(SseEvent { data, ..event }, &mut emit) {
                queue.push_back(Err(e));
            }
        };
        match chunk {
            Some(bytes) => self.decoder.feed(bytes, &mut read),
            None => self.decoder.finish(&mut read),
        }
        if let Some(error) = broken {
            if let Some(bytes) = chunk.filter(|_| self.events == 0) {
                // Quoted by the error: the body is not an event stream.
                let take = HEAD_BYTES.saturating_sub(self.head.len()).min(bytes.len());
                self.head.extend_from_slice(&bytes[..take]);
            }
            let error = self.frame_failure(error);
            self.queue.push_back(Err(error));
        }
    }

    /// A framing's error as the stream's.
    fn frame_failure(&self, error: FrameError) -> Error {
        match error {
            FrameError::Corrupt(what) if self.events == 0 => self.no_events(Some(&what)),
            FrameError::Cut(held) if self.events == 0 => {
                let error = self.no_events(None);
                // Bytes that may be a frame's start, cut short: incomplete, as a first SSE
                // event cut in its middle is; the vendor's JSON error stays what it is.
                if error
                    .provider()
                    .is_some_and(|p| p.kind() == ProviderErrorKind::Malformed)
                {
                    return self.failure(
                        ProviderErrorKind::Incomplete,
                        format!(
                            "the stream from {} ended in the middle of its first event ({held} \
                             bytes of a frame): the answer is incomplete (a dropped connection \
                             or a proxy that cut the body)",
                            self.url
                        ),
                    );
                }
                error
            }
            FrameError::Corrupt(what) => self.failure(
                ProviderErrorKind::Malformed,
                format!("the stream from {} sent a corrupt frame: {what}", self.url),
            ),
            FrameError::Cut(held) => self.failure(
                ProviderErrorKind::Incomplete,
                format!(
                    "the stream from {} ended in the middle of an event ({held} bytes of a \
                     frame): the answer is incomplete (a dropped connection or a proxy that \
                     cut the body)",
                    self.url
                ),
            ),
            FrameError::Exception {
                error_type,
                message,
                body,
            } => {
                let message = message
                    .unwrap_or_else(|| format!("the stream from {} sent {error_type}", self.url));
                ProviderError::new(self.source.provider(), message)
                    .with_kind(ProviderErrorKind::Vendor)
                    .with_error_type(error_type)
                    .with_body(&body)
                    .into()
            }
        }
    }

    /// The body ended: an event stream gives the accumulator's turn (or its complaint that
    /// the end mark never came); anything else is an error quoting what arrived.
    fn conclude(&mut self) -> Result<LlmEvent> {
        if self.events > 0 {
            return self
                .accumulator
                .finish()
                .map(|turn| LlmEvent::Completed(Box::new(turn)));
        }
        Err(self.no_events(None))
    }

    /// The error of a body in which no event was found: empty, the vendor's JSON error
    /// object, or not an event stream at all (`why`, when the framing said).
    fn no_events(&self, why: Option<&str>) -> Error {
        if self.head.is_empty() {
            return self.failure(
                ProviderErrorKind::Incomplete,
                format!("the stream from {} ended before its first event", self.url),
            );
        }
        // A gateway that answers a stream request with its JSON error object, status 200.
        if let Ok(value) = serde_json::from_slice::<Value>(&self.head)
            && let Some(error) = value.get("error").filter(|e| !e.is_null())
        {
            return json::vendor_error(
                Vendor::new(self.source.provider(), self.source.provider()),
                error,
                &String::from_utf8_lossy(&self.head),
            );
        }
        let excerpt = String::from_utf8_lossy(&self.head).into_owned();
        let content_type = self
            .content_type
            .as_ref()
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty())
            .unwrap_or("none");
        let why = why.map(|why| format!(" ({why})")).unwrap_or_default();
        let error = ProviderError::new(
            self.source.provider(),
            format!(
                "the response from {} is not an event stream (Content-Type: {content_type}){why}; \
                 it begins: {}",
                self.url,
                excerpt.chars().take(120).collect::<String>()
            ),
        )
        .with_kind(ProviderErrorKind::Malformed)
        .with_body(&excerpt);
        error.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness_core::FinishReason;

    /// Finishes at `data: end`, or complains it never came; every other event is text.
    #[derive(Default)]
    struct Plain {
        text: String,
        ended: bool,
    }

    impl Accumulator for Plain {
        fn feed(&mut self, event: SseEvent<'_>, emit: &mut dyn FnMut(LlmEvent)) -> Result<()> {
            if event.data == "end" {
                self.ended = true;
            } else {
                self.text.push_str(event.data);
                emit(LlmEvent::TextDelta(event.data.to_owned()));
            }
            Ok(())
        }

        fn finish(&mut self) -> Result<CompletionResponse> {
            if !self.ended {
                return Err(json::incomplete(Vendor::new("plain", "Plain"), "end"));
            }
            Ok(CompletionResponse::text(std::mem::take(&mut self.text))
                .with_finish_reason(FinishReason::Stop))
        }
    }

    fn limits(idle: u64, total: Option<u64>) -> Limits {
        Limits {
            idle: Some(Duration::from_secs(idle)),
            total: total.map(Duration::from_secs),
            max_event_bytes: 1 << 20,
        }
    }

    /// A stream that sends a delta every `every` seconds of (simulated) time for
    /// `for_secs`, then its end.
    fn slow_body(every: u64, for_secs: u64) -> Body<'static> {
        let ticks = for_secs / every;
        futures_util::stream::unfold(0, move |tick| async move {
            if tick > ticks {
                return None;
            }
            tokio::time::sleep(Duration::from_secs(every)).await;
            let data = if tick == ticks {
                "data: end\n\n"
            } else {
                "data: x\n\n"
            };
            Some((Ok(Bytes::from(data)), tick + 1))
        })
        .boxed()
    }

    async fn drain(mut reader: Reader<'_, Plain>) -> (usize, Result<LlmEvent>) {
        let mut deltas = 0;
        loop {
            match reader.next().await {
                Some(Ok(LlmEvent::TextDelta(_))) => deltas += 1,
                Some(last) => return (deltas, last),
                None => panic!("the stream ended without a last item"),
            }
        }
    }

    fn reader(body: Body<'static>, limits: Limits) -> Reader<'static, Plain> {
        Reader::new(
            Source::Named("plain"),
            Incoming::events("http://test/chat", "text/event-stream", body),
            Plain::default(),
            SseDecoder::new(),
            limits,
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
    async fn a_silence_after_deltas_is_timed_from_the_last_chunk() {
        // An event every 100 s up to 400 s keeps a 120 s idle timeout from firing; then the
        // silence fails it, 120 s after the last chunk and within a check period (30 s)
        // more.
        let body = slow_body(100, 300).chain(slow_body(200, 600)).boxed();
        let started = Instant::now();
        let (deltas, last) = drain(reader(body, limits(120, None))).await;
        assert!(last.unwrap_err().is_timeout());
        assert_eq!(deltas, 3);
        let elapsed = started.elapsed();
        assert!(
            elapsed >= Duration::from_secs(520) && elapsed <= Duration::from_secs(550),
            "{elapsed:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn silences_just_under_the_idle_timeout_never_fail_the_stream() {
        // A chunk every 119 s against a 120 s idle timeout, the checks every 30 s falling
        // anywhere between them: 50 deltas, then the end, and no timeout.
        let (deltas, last) = drain(reader(slow_body(119, 119 * 50), limits(120, None))).await;
        assert_eq!(deltas, 50);
        assert!(matches!(last, Ok(LlmEvent::Completed(_))), "{last:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_that_never_starts_fails_at_the_idle_timeout_exactly() {
        let started = Instant::now();
        let (deltas, last) = drain(reader(slow_body(1000, 1000), limits(120, None))).await;
        assert_eq!(deltas, 0);
        assert!(last.unwrap_err().is_timeout());
        assert_eq!(started.elapsed(), Duration::from_secs(120));
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

    /// A reader given the headers' timer, made `waited` seconds before the body started
    /// (the wait for the headers), as a live stream's is.
    async fn reader_after_headers(
        body: Body<'static>,
        limits: Limits,
        waited: u64,
    ) -> Reader<'static, Plain> {
        let idle = limits.idle.unwrap_or(Duration::MAX);
        let timer = Box::pin(tokio::time::sleep(idle));
        tokio::time::sleep(Duration::from_secs(waited)).await;
        let incoming = Incoming {
            timer: Some(timer),
            ..Incoming::events("http://test/chat", "text/event-stream", body)
        };
        Reader::new(
            Source::Named("plain"),
            incoming,
            Plain::default(),
            SseDecoder::new(),
            limits,
        )
    }

    #[tokio::test(start_paused = true)]
    async fn the_headers_timer_goes_on_as_the_first_idle_check() {
        // Headers after 100 s of a 120 s idle timeout, a delta 10 s into the body, then
        // silence. The first check comes when the headers' timer is due, 20 s into the body,
        // and sees the delta; the silence counts from there and fails the stream 120 s later,
        // at 140 s (a first check of its own, at 120 s, would have made it 240 s).
        let delta = futures_util::stream::once(async {
            tokio::time::sleep(Duration::from_secs(10)).await;
            Ok(Bytes::from("data: x\n\n"))
        });
        let body = delta.chain(slow_body(1000, 1000)).boxed();
        let reader = reader_after_headers(body, limits(120, None), 100).await;
        let started = Instant::now();
        let (deltas, last) = drain(reader).await;
        assert_eq!(deltas, 1);
        assert!(last.unwrap_err().is_timeout());
        assert_eq!(started.elapsed(), Duration::from_secs(140));
    }

    /// Counts the wakes of the task it stands for.
    struct Wakes(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for Wakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    impl Wakes {
        fn count(&self) -> usize {
            self.0.load(std::sync::atomic::Ordering::SeqCst)
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_timer_wakes_the_waker_the_stream_was_last_polled_with() {
        // Polled twice by one task (the timer is polled once), then by another: the
        // silence's timeout wakes the other, and the stream then fails with it.
        let mut reader = reader(futures_util::stream::pending().boxed(), limits(120, None));
        let first = Arc::new(Wakes(std::sync::atomic::AtomicUsize::new(0)));
        let second = Arc::new(Wakes(std::sync::atomic::AtomicUsize::new(0)));
        let (waker_a, waker_b) = (
            std::task::Waker::from(Arc::clone(&first)),
            std::task::Waker::from(Arc::clone(&second)),
        );
        let mut cx_a = std::task::Context::from_waker(&waker_a);
        let mut cx_b = std::task::Context::from_waker(&waker_b);
        assert!(reader.poll_next(&mut cx_a).is_pending());
        assert!(reader.poll_next(&mut cx_a).is_pending());
        assert!(reader.poll_next(&mut cx_b).is_pending());
        tokio::time::sleep(Duration::from_secs(121)).await;
        assert_eq!((first.count(), second.count()), (0, 1));
        match reader.poll_next(&mut cx_b) {
            Poll::Ready(Some(Err(err))) => assert!(err.is_timeout(), "{err}"),
            other => panic!("expected the idle timeout, got {other:?}"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_total_timeout_sooner_than_the_headers_timer_is_kept() {
        // A delta every 3 s against a 10 s total timeout, the headers' timer due at 120 s:
        // the timer is moved to the total deadline, which ends the stream at 10 s.
        let reader = reader_after_headers(slow_body(3, 100_000), limits(120, Some(10)), 0).await;
        let started = Instant::now();
        let (deltas, last) = drain(reader).await;
        let err = last.unwrap_err();
        assert!(err.to_string().contains("total timeout of 10 s"), "{err}");
        assert_eq!(started.elapsed(), Duration::from_secs(10));
        assert_eq!(deltas, 3);
    }

    #[test]
    fn decode_reads_a_recorded_body_and_requires_the_end_mark() {
        let mut deltas = Vec::new();
        let whole = decode(
            Plain::default(),
            b"data: a\n\ndata: b\n\ndata: end\n\n",
            3,
            |e| {
                deltas.push(e);
            },
        )
        .unwrap();
        assert_eq!(whole.content(), "ab");
        assert_eq!(deltas.len(), 2);
        let err = decode(Plain::default(), b"data: a\n\n", 3, |_| {}).unwrap_err();
        assert_eq!(
            err.provider().map(ProviderError::kind),
            Some(ProviderErrorKind::Incomplete)
        );
    }
}
