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
}

/// What the loop and the watcher's stream pass each other: a stream one way, its turn back.
#[derive(Default)]
struct Slots {
    handed: Option<HandedOver>,
    /// How the stream read ended, once it has.
    back: Back,
}

/// How a handed stream ended, as the watcher gives it back.
#[derive(Default)]
enum Back {
    /// Not yet: the watcher is reading it.
    #[default]
    Reading,
    /// With its turn, or the error that ended it.
    Turn(Result<CompletionResponse>),
    /// Without a turn.
    Nothing,
}

/// Where the loop leaves a model stream for the watcher to take, and the watcher the turn.
///
/// Both sides are polled by one task, the watcher's: the loop runs inside the watcher's
/// [`ChannelStream`], and [`WatchedRun`] polls it right after leaving a turn. So the turn
/// needs no channel and no wake (a oneshot's send would wake the task it runs in, a
/// syscall to unpark a runtime that is not parked).
#[derive(Clone, Default)]
pub(crate) struct Handoff {
    slots: Arc<Mutex<Slots>>,
}

impl Handoff {
    fn lock(&self) -> std::sync::MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Leaves `stream` for the watcher and waits for its turn, `None` when the stream ended
    /// without one. The watcher's stream is the only poller of the loop, and polls it again
    /// as soon as it left the turn; if it is dropped, the loop is dropped with it.
    pub(crate) async fn hand_over(
        &self,
        stream: BoxStream<'static, Result<LlmEvent>>,
        span: tracing::Span,
    ) -> Option<Result<CompletionResponse>> {
        self.lock().handed = Some(HandedOver { stream, span });
        std::future::poll_fn(|_| match std::mem::take(&mut self.lock().back) {
            Back::Reading => Poll::Pending,
            Back::Turn(turn) => Poll::Ready(Some(turn)),
            Back::Nothing => Poll::Ready(None),
        })
        .await
    }

    fn take(&self) -> Option<HandedOver> {
        self.lock().handed.take()
    }

    fn give_back(&self, back: Back) {
        self.lock().back = back;
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
                let back = match std::task::ready!(read) {
                    Some(Ok(LlmEvent::TextDelta(text))) => {
                        return Poll::Ready(Some(Ok(AgentEvent::TextDelta(text))));
                    }
                    Some(Ok(LlmEvent::ThinkingDelta(text))) => {
                        return Poll::Ready(Some(Ok(AgentEvent::ThinkingDelta(text))));
                    }
                    Some(Ok(LlmEvent::Completed(turn))) => Back::Turn(Ok(*turn)),
                    Some(Err(error)) => Back::Turn(Err(error)),
                    None => Back::Nothing,
                };
                // The loop waits for it, and is polled just below.
                this.reading = None;
                this.handoff.give_back(back);
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
