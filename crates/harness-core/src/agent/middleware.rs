//! `Middleware`: hooks around the model call, each tool call and each step.

use crate::error::ToolError;
use crate::message::{Message, ToolCall};

use super::state::AgentState;

/// Hooks a run calls at fixed points. Every method has a no-op default, so implement only
/// what you need.
///
/// ```
/// use harness_core::agent::Middleware;
/// use harness_core::ToolCall;
///
/// /// Refuses any call that mentions production.
/// struct NoProd;
///
/// impl Middleware for NoProd {
///     fn before_tool(&self, call: ToolCall) -> Option<ToolCall> {
///         let text = serde_json::to_string(&call.arguments).unwrap_or_default();
///         (!text.contains("prod")).then_some(call)
///     }
/// }
/// ```
pub trait Middleware: Send + Sync {
    /// Called before every model call with the whole transcript (before the context policy
    /// prunes it). Return `Some` to send something else; what it returns is never recorded.
    fn before_model(&self, messages: &[Message]) -> Option<Vec<Message>> {
        let _ = messages;
        None
    }

    /// Called for each requested call *before* permissions rule on it, so a rewritten
    /// argument is what the policy sees and cannot smuggle a call past a deny rule. Return
    /// `None` to refuse the call (the refusal is recorded as its result; the run goes on).
    /// It cannot approve a gated call.
    fn before_tool(&self, call: ToolCall) -> Option<ToolCall> {
        Some(call)
    }

    /// Called with each finished call's result, a failure included as an `Err` value.
    /// What it returns is both what the transcript records and what `ToolFinished` reports.
    /// Not called for a tool that asked a human.
    fn after_tool(
        &self,
        call: &ToolCall,
        result: Result<String, ToolError>,
    ) -> Result<String, ToolError> {
        let _ = call;
        result
    }

    /// Called after each step that ran tools (never after the answering step) with a
    /// snapshot of the run so far. Return `false` to stop with
    /// [`StopReason::Stopped`](super::StopReason::Stopped).
    fn after_step(&self, step: usize, state: &AgentState) -> bool {
        let _ = (step, state);
        true
    }
}
