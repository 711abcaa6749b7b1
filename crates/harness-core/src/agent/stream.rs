//! Streaming a run: the loop reports events through an [`Emitter`], and the stream polls the
//! loop and the channel together (see [`crate::channel`]), so events arrive as they happen
//! with no task spawned.

use std::sync::Arc;

use futures_util::StreamExt as _;

use super::handoff::{Handoff, WatchedRun};
use super::{AgentEvent, AgentInner, Journal, RunInput, ToolMode};
use crate::channel::{Emitter, channel_stream};
use crate::error::Result;
use crate::llm::BoxStream;
use crate::message::ToolCall;
use crate::tool::Ctx;

/// Where the loop reports events (nowhere for `run`, a channel for the streams), and the
/// journal its steps go through, for a journaled run.
pub(crate) struct Events<'a> {
    sink: Option<&'a Emitter<Result<AgentEvent>>>,
    journal: Option<&'a dyn Journal>,
    /// Where a model stream that needs no borrow goes, for the watcher to read itself.
    handoff: Option<&'a Handoff>,
}

impl<'a> Events<'a> {
    pub(crate) fn none() -> Self {
        Self {
            sink: None,
            journal: None,
            handoff: None,
        }
    }

    fn to(sink: &'a Emitter<Result<AgentEvent>>, handoff: &'a Handoff) -> Self {
        Self {
            sink: Some(sink),
            journal: None,
            handoff: Some(handoff),
        }
    }

    /// No events; every step through `journal`.
    pub(crate) fn journaled(journal: &'a dyn Journal) -> Self {
        Self {
            sink: None,
            journal: Some(journal),
            handoff: None,
        }
    }

    /// The journal steps go through, for a journaled run.
    pub(crate) fn journal(&self) -> Option<&'a dyn Journal> {
        self.journal
    }

    /// Where a watched run leaves a model stream for the watcher to read, when it has one.
    pub(crate) fn handoff(&self) -> Option<&'a Handoff> {
        self.handoff
    }

    /// True when someone is watching: the model is then streamed too.
    pub(crate) fn is_streaming(&self) -> bool {
        self.sink.is_some()
    }

    /// Reports an event, built only when someone is watching.
    pub(crate) fn emit(&self, event: impl FnOnce() -> AgentEvent) {
        if let Some(sink) = self.sink {
            sink.emit(Ok(event()));
        }
    }

    /// `ctx` for one tool call: when someone watches, the tool's [`ToolUpdate`](crate::ToolUpdate)s reach them
    /// as [`AgentEvent::ToolUpdate`], tagged with the call; in a journaled run, with the
    /// journal's human, if it has one.
    pub(crate) fn tool_ctx(&self, ctx: &Ctx, call: &ToolCall) -> Ctx {
        if let Some(human) = self.journal.and_then(Journal::human) {
            return ctx.clone().with_shared_human(human);
        }
        let Some(sink) = self.sink else {
            return ctx.clone();
        };
        ctx.clone()
            .with_call(&call.name, call.id.as_deref())
            .with_run_updates(sink.clone())
    }

    /// Lets the watcher take the events sent so far before the run goes on, so a tool's
    /// `ToolStarted` is seen before the tool (or a terminal prompt asking to approve it)
    /// runs. Costs nothing when no one watches.
    pub(crate) async fn deliver(&self) {
        if let Some(sink) = self.sink {
            sink.deliver().await;
        }
    }
}

/// The events of one run, ending in `Finished` or an error.
pub(crate) fn events(
    agent: Arc<AgentInner>,
    input: RunInput,
    mode: ToolMode,
) -> BoxStream<'static, Result<AgentEvent>> {
    let input = Box::new(input);
    let handoff = Handoff::default();
    let handed = handoff.clone();
    let run = channel_stream(|sink| async move {
        let outcome = agent.drive(input, mode, &Events::to(&sink, &handed)).await;
        sink.emit(outcome.map(|state| AgentEvent::Finished(Box::new(state))));
    });
    Box::pin(WatchedRun::new(run, handoff))
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
