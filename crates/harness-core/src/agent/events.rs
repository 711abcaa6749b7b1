//! `AgentEvent`: what a streamed run reports, in order.

use serde_json::{Map, Value};

use super::run_error::RunError;
use super::state::AgentState;

/// One thing a run did, as [`Agent::stream`](crate::Agent::stream) reports it.
///
/// Order: for each model call `StepStarted`, then the model's `TextDelta`/`ThinkingDelta` as
/// they arrive, and a `HostedCall` for each call of a hosted tool as it completes; for a round of tool calls, every `ToolStarted` in call order and then every
/// `ToolFinished` in call order (a journaled run runs its tools one at a time, so there each
/// pair surrounds its own call); `Finished` once, last. Denied, refused, unrun and
/// question-raising calls report no events.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AgentEvent {
    /// A model call is about to be made; `step` is 1-based and at most the step budget.
    StepStarted {
        /// Which step.
        step: usize,
    },
    /// A piece of the model's answer.
    TextDelta(String),
    /// A piece of the model's reasoning, kept apart from the answer.
    ThinkingDelta(String),
    /// The vendor ran one of its hosted tools ([`HostedTool`](crate::HostedTool)) for the
    /// model: the call and its result, as the turn's
    /// [`Block::HostedCall`](crate::Block::HostedCall) will hold them.
    HostedCall(Box<crate::HostedCall>),
    /// A tool is about to run with the arguments the model sent.
    ToolStarted {
        /// The tool's name.
        name: String,
        /// The model's arguments.
        arguments: Map<String, Value>,
        /// The model's id for the call.
        call_id: Option<String>,
    },
    /// A tool returned or failed. `result` is exactly what the model will read (after the
    /// middleware and the context policy's truncation).
    ToolFinished {
        /// The tool's name.
        name: String,
        /// The text the model reads.
        result: String,
        /// True when the call failed (the text is then the error).
        failed: bool,
        /// The model's id for the call.
        call_id: Option<String>,
    },
    /// A running tool reported progress or a log message ([`Ctx::progress`],
    /// [`Ctx::log`]), between its `ToolStarted` and its `ToolFinished`.
    ///
    /// [`Ctx::progress`]: crate::Ctx::progress
    /// [`Ctx::log`]: crate::Ctx::log
    ToolUpdate {
        /// The tool's name.
        name: String,
        /// The model's id for the call.
        call_id: Option<String>,
        /// What it reported.
        update: crate::tool::ToolUpdate,
    },
    /// The run is over; the state is its result.
    Finished(Box<AgentState>),
}

/// What a watched run's stream carries: its events, or the error that ended it.
pub(crate) type Item = Result<AgentEvent, RunError>;
