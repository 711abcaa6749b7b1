//! Streaming a run: the loop reports events into a channel, and the stream polls the loop
//! and the channel together, so events arrive as they happen with no task spawned.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_core::Stream;
use futures_util::StreamExt as _;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use super::{AgentEvent, AgentInner, RunInput, ToolMode};
use crate::error::Result;
use crate::llm::BoxStream;

/// Where the loop reports events: nowhere for `run`, a channel for the streams.
pub(crate) struct Events<'a> {
    sink: Option<&'a UnboundedSender<Result<AgentEvent>>>,
}

impl<'a> Events<'a> {
    pub(crate) fn none() -> Self {
        Self { sink: None }
    }

    fn to(sink: &'a UnboundedSender<Result<AgentEvent>>) -> Self {
        Self { sink: Some(sink) }
    }

    /// True when someone is watching: the model is then streamed too.
    pub(crate) fn is_streaming(&self) -> bool {
        self.sink.is_some()
    }

    /// Reports an event, built only when someone is watching.
    pub(crate) fn emit(&self, event: impl FnOnce() -> AgentEvent) {
        if let Some(sink) = self.sink {
            // A receiver that went away stopped listening; the run itself goes on.
            let _ = sink.send(Ok(event()));
        }
    }

    /// Lets the watcher take the events sent so far before the run goes on, so a tool's
    /// `ToolStarted` is seen before the tool (or a terminal prompt asking to approve it)
    /// runs. Costs nothing when no one watches.
    pub(crate) async fn deliver(&self) {
        if self.sink.is_some() {
            tokio::task::yield_now().await;
        }
    }
}

/// The events of one run, ending in `Finished` or an error.
pub(crate) fn events(
    agent: Arc<AgentInner>,
    input: RunInput,
    mode: ToolMode,
) -> BoxStream<'static, Result<AgentEvent>> {
    let (sender, receiver) = unbounded_channel();
    let run = async move {
        let outcome = agent.drive(input, mode, &Events::to(&sender)).await;
        let last = outcome.map(|state| AgentEvent::Finished(Box::new(state)));
        let _ = sender.send(last);
    };
    Box::pin(EventStream {
        run: Some(Box::pin(run)),
        receiver,
    })
}

/// The text deltas of an event stream.
pub(crate) fn text(
    events: BoxStream<'static, Result<AgentEvent>>,
) -> BoxStream<'static, Result<String>> {
    Box::pin(events.filter_map(|event| async move {
        match event {
            Ok(AgentEvent::TextDelta(text)) => Some(Ok(text)),
            Ok(_) => None,
            Err(e) => Some(Err(e)),
        }
    }))
}

struct EventStream {
    run: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    receiver: UnboundedReceiver<Result<AgentEvent>>,
}

impl Stream for EventStream {
    type Item = Result<AgentEvent>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if let Poll::Ready(Some(event)) = this.receiver.poll_recv(cx) {
            return Poll::Ready(Some(event));
        }
        if let Some(run) = &mut this.run
            && run.as_mut().poll(cx).is_ready()
        {
            // The run's sender is dropped with it, so the channel ends after its last event.
            this.run = None;
        }
        match this.receiver.poll_recv(cx) {
            Poll::Ready(event) => Poll::Ready(event),
            Poll::Pending if this.run.is_none() => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// A run's stream as an iterator for synchronous code: each `next()` drives the run on a
/// runtime of its own to its next item. Returned by
/// [`Agent::stream_events_blocking`](super::Agent::stream_events_blocking) and
/// [`Agent::stream_blocking`](super::Agent::stream_blocking).
pub struct BlockingIter<T> {
    runtime: tokio::runtime::Runtime,
    stream: BoxStream<'static, T>,
}

impl<T> BlockingIter<T> {
    pub(crate) fn new(runtime: tokio::runtime::Runtime, stream: BoxStream<'static, T>) -> Self {
        Self { runtime, stream }
    }
}

impl<T> Iterator for BlockingIter<T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        self.runtime.block_on(self.stream.next())
    }
}
