//! `Events`: where a run reports what it does (nowhere for `run`, a channel for `stream`),
//! and the journal its steps go through, for a journaled run.

use std::sync::Arc;

use super::events::{AgentEvent, Item};
use super::handoff::Handoff;
use super::journal::Journal;
use crate::channel::Emitter;
use crate::message::ToolCall;
use crate::tool::{Ctx, ToolUpdate, UpdateSink};

/// Where the loop reports, and what its steps go through.
pub(crate) struct Events<'a> {
    sink: Option<&'a Emitter<Item>>,
    journal: Option<&'a dyn Journal>,
    /// Where a model stream goes, for the watcher to read itself.
    handoff: Option<&'a Handoff>,
    /// The run's tools' updates, as events: one sink per run, shared by every call's `Ctx`.
    updates: Option<Arc<dyn UpdateSink>>,
}

impl<'a> Events<'a> {
    /// No events; every step through `journal`, when there is one.
    pub(crate) fn unwatched(journal: Option<&'a dyn Journal>) -> Self {
        Self {
            sink: None,
            journal,
            handoff: None,
            updates: None,
        }
    }

    /// Events to `sink`; model streams handed over through `handoff`, unless a journal
    /// runs the model calls (then the loop reads the stream inside each step).
    pub(crate) fn watched(
        sink: &'a Emitter<Item>,
        handoff: &'a Handoff,
        journal: Option<&'a dyn Journal>,
    ) -> Self {
        Self {
            sink: Some(sink),
            journal,
            handoff: journal.is_none().then_some(handoff),
            updates: Some(Arc::new(RunUpdates(sink.clone()))),
        }
    }

    /// The journal steps go through, for a journaled run.
    pub(crate) fn journal(&self) -> Option<&'a dyn Journal> {
        self.journal
    }

    /// Where a watched run leaves a model stream for the watcher to read.
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

    /// `ctx` for one tool call: when someone watches, the tool's [`ToolUpdate`]s reach them
    /// as [`AgentEvent::ToolUpdate`], tagged with the call; in a journaled run, with the
    /// journal's human, if it has one.
    pub(crate) fn tool_ctx(&self, ctx: &Ctx, call: &ToolCall) -> Ctx {
        let mut ctx = ctx.clone();
        if let Some(human) = self.journal.and_then(Journal::human) {
            ctx = ctx.with_human_arc(human);
        }
        match &self.updates {
            Some(updates) => ctx
                .with_call(&call.name, call.id.as_deref())
                .with_update_sink(Arc::clone(updates)),
            None => ctx,
        }
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

/// A watched run's tools' updates, as events.
struct RunUpdates(Emitter<Item>);

impl UpdateSink for RunUpdates {
    fn update(&self, tool: &str, call_id: Option<&str>, update: ToolUpdate) {
        self.0.emit(Ok(AgentEvent::ToolUpdate {
            name: tool.to_owned(),
            call_id: call_id.map(str::to_owned),
            update,
        }));
    }
}
