//! A watched run's model streams, read by the watcher's own poll.
//!
//! A watched run's events go through [`channel_stream`](crate::channel::channel_stream): the
//! watcher polls the run, the run polls the model's stream and sends each delta back through
//! the channel. Measured against bare reqwest, that hand-over per event was most of what the
//! agent added to a streamed run (docs/performance.md). So when the model can stream without
//! borrowing ([`Llm::stream_events_owned`](crate::Llm::stream_events_owned)), the loop hands
//! the stream over and waits for the turn; [`WatchedRun`] reads the stream itself, each
//! delta straight to the watcher, and gives the turn back to the loop.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use futures_core::Stream;
use futures_util::StreamExt as _;
use tokio::sync::oneshot;

use super::AgentEvent;
use crate::channel::ChannelStream;
use crate::error::Result;
use crate::llm::{BoxStream, LlmEvent};
use crate::response::CompletionResponse;

/// A model call's stream, handed by the loop to the watcher's stream.
struct HandedOver {
    stream: BoxStream<'static, Result<LlmEvent>>,
    /// The call's `chat` span, entered while the stream is read, as the loop would have.
    span: tracing::Span,
    /// Where the turn goes back: `None` when the stream ended without one.
    turn: oneshot::Sender<Option<Result<CompletionResponse>>>,
}

/// Where the loop leaves a model stream for the watcher to take.
#[derive(Clone, Default)]
pub(crate) struct Handoff {
    slot: Arc<Mutex<Option<HandedOver>>>,
}

impl Handoff {
    /// Leaves `stream` for the watcher; the returned receiver gets the turn, or `None` when
    /// the stream ended without one. A receiver whose sender is dropped means the watcher
    /// is gone, and the run with it.
    pub(crate) fn hand_over(
        &self,
        stream: BoxStream<'static, Result<LlmEvent>>,
        span: tracing::Span,
    ) -> oneshot::Receiver<Option<Result<CompletionResponse>>> {
        let (turn, answer) = oneshot::channel();
        *self.slot.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(HandedOver { stream, span, turn });
        answer
    }

    fn take(&self) -> Option<HandedOver> {
        self.slot
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

/// The stream of a watched run: the run's own events, and while a model call's stream is
/// handed over, that stream's deltas read here.
pub(crate) struct WatchedRun<F> {
    run: ChannelStream<Result<AgentEvent>, F>,
    handoff: Handoff,
    reading: Option<HandedOver>,
}

impl<F> WatchedRun<F> {
    pub(crate) fn new(run: ChannelStream<Result<AgentEvent>, F>, handoff: Handoff) -> Self {
        Self {
            run,
            handoff,
            reading: None,
        }
    }
}

// The run is pinned in its own box inside the channel stream; the handed stream is boxed.
impl<F> Unpin for WatchedRun<F> {}

impl<F: Future<Output = ()>> Stream for WatchedRun<F> {
    type Item = Result<AgentEvent>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(handed) = &mut this.reading {
                let read = {
                    let _entered = handed.span.enter();
                    handed.stream.poll_next_unpin(cx)
                };
                let turn = match std::task::ready!(read) {
                    Some(Ok(LlmEvent::TextDelta(text))) => {
                        return Poll::Ready(Some(Ok(AgentEvent::TextDelta(text))));
                    }
                    Some(Ok(LlmEvent::ThinkingDelta(text))) => {
                        return Poll::Ready(Some(Ok(AgentEvent::ThinkingDelta(text))));
                    }
                    Some(Ok(LlmEvent::Completed(turn))) => Some(Ok(*turn)),
                    Some(Err(error)) => Some(Err(error)),
                    None => None,
                };
                if let Some(handed) = this.reading.take() {
                    // The loop is waiting for it; if it is gone, so is the run.
                    let _ = handed.turn.send(turn);
                }
            }
            // What the run sent comes first (its step's start before the deltas); a run
            // that is waiting may just have handed a stream over.
            match this.run.poll_next_unpin(cx) {
                Poll::Ready(item) => return Poll::Ready(item),
                Poll::Pending => match this.handoff.take() {
                    Some(handed) => this.reading = Some(handed),
                    None => return Poll::Pending,
                },
            }
        }
    }
}
