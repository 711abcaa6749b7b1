//! A watched run's model streams, read by the watcher's own poll.
//!
//! A watched run's events go through [`channel_stream`](crate::channel::channel_stream): the
//! watcher polls the run, the run polls the model's stream and sends each delta back through
//! the channel. Measured against bare reqwest, that hand-over per event was most of what the
//! agent added to a streamed run (docs/performance.md). So, the model's stream owning what
//! it reads ([`Llm::stream`](crate::Llm::stream) is `'static`), the loop hands the stream
//! over and waits for the turn; [`WatchedRun`] reads the stream itself, each delta straight
//! to the watcher, and gives the turn back to the loop.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use futures_core::Stream;
use futures_util::StreamExt as _;

use super::events::AgentEvent;
use super::events::Item as RunItem;
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
    /// With its turn (boxed as the stream gave it: the slot lives as long as the run), or
    /// the error that ended it.
    Turn(Result<Box<CompletionResponse>>),
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
            Back::Turn(turn) => Poll::Ready(Some(turn.map(|turn| *turn))),
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
    run: ChannelStream<RunItem, F>,
    handoff: Handoff,
    reading: Option<HandedOver>,
}

impl<F> WatchedRun<F> {
    pub(crate) fn new(run: ChannelStream<RunItem, F>, handoff: Handoff) -> Self {
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
    type Item = RunItem;

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
                    Some(Ok(LlmEvent::HostedCall(call))) => {
                        return Poll::Ready(Some(Ok(AgentEvent::HostedCall(call))));
                    }
                    Some(Ok(LlmEvent::Completed(turn))) => Back::Turn(Ok(turn)),
                    Some(Err(error)) => Back::Turn(Err(error)),
                    None => Back::Nothing,
                };
                // The loop waits for it, and is polled just below.
                this.reading = None;
                this.handoff.give_back(back);
            }
            // What the run sent comes first (its step's start before the deltas). A stream
            // it handed over meanwhile is read at once: the run waits for its turn, and
            // polling it would only say so.
            if let Some(item) = this.run.take_sent() {
                return Poll::Ready(Some(item));
            }
            if let Some(handed) = this.handoff.take() {
                // Thousands of runs may wait on their models at once: each holds no buffer.
                this.run.release();
                this.reading = Some(handed);
                continue;
            }
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::channel::channel_stream;

    #[test]
    fn a_run_that_handed_its_stream_over_is_polled_only_for_its_turn() {
        // The run sends its step's start and hands a stream over in one poll; the watcher
        // hands out the start, reads the stream, and polls the run once more, to give it
        // its turn (which it reports as its text). Two polls of the run in all.
        let handoff = Handoff::default();
        let handed = handoff.clone();
        let polls = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&polls);
        let run = channel_stream(|sink| {
            let mut run = Box::pin(async move {
                sink.emit(Ok(AgentEvent::StepStarted { step: 1 }));
                let deltas: Vec<Result<LlmEvent>> = vec![
                    Ok(LlmEvent::TextDelta("a".to_owned())),
                    Ok(LlmEvent::Completed(Box::new(CompletionResponse::text("a")))),
                ];
                let stream = Box::pin(futures_util::stream::iter(deltas));
                let turn = handed.hand_over(stream, tracing::Span::none()).await;
                let text = turn.and_then(Result::ok).map(|t| t.content().to_owned());
                sink.emit(Ok(AgentEvent::TextDelta(format!("turn {text:?}"))));
            });
            std::future::poll_fn(move |cx| {
                counted.fetch_add(1, Ordering::SeqCst);
                run.as_mut().poll(cx)
            })
        });
        let mut watched = WatchedRun::new(run, handoff);
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut seen = Vec::new();
        loop {
            match Pin::new(&mut watched).poll_next(&mut cx) {
                Poll::Ready(Some(event)) => seen.push(format!("{:?}", event.unwrap())),
                Poll::Ready(None) => break,
                Poll::Pending => panic!("the watched run waited after {seen:?}"),
            }
        }
        assert_eq!(
            seen,
            [
                "StepStarted { step: 1 }",
                "TextDelta(\"a\")",
                "TextDelta(\"turn Some(\\\"a\\\")\")",
            ]
        );
        assert_eq!(polls.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_run_waiting_on_the_stream_it_handed_over_holds_no_event_buffer() {
        let handoff = Handoff::default();
        let handed = handoff.clone();
        let run = channel_stream(|sink| async move {
            sink.emit(Ok(AgentEvent::StepStarted { step: 1 }));
            let silent = Box::pin(futures_util::stream::pending());
            let _ = handed.hand_over(silent, tracing::Span::none()).await;
        });
        let mut watched = WatchedRun::new(run, handoff);
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let first = Pin::new(&mut watched).poll_next(&mut cx);
        assert!(matches!(
            first,
            Poll::Ready(Some(Ok(AgentEvent::StepStarted { step: 1 })))
        ));
        assert!(Pin::new(&mut watched).poll_next(&mut cx).is_pending());
        assert!(watched.reading.is_some());
        assert_eq!(watched.run.capacity(), 0);
    }
}
