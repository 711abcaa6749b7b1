//! Tool calls as every vendor reads them, and the ids a vendor that pairs calls with
//! their results by id needs.

use std::borrow::Cow;

use harness_core::{FinishReason, Message, Role, ToolCall};
use serde_json::{Map, Value};

/// A tool call whose arguments arrived as JSON text (OpenAI's string, or a stream's
/// fragments joined). Every vendor reads arguments by one rule, here and in
/// [`call_from_value`]: empty, whitespace-only or `null` means no arguments (`{}`), which a
/// tool without required parameters accepts; one JSON object is the arguments; anything else
/// is kept in `raw_arguments` and never run. A turn cut at the output limit marks a call with
/// no arguments yet as cut off, so it is not run on arguments the model never sent.
pub(crate) fn call_from_text(name: &str, text: &str, finish: Option<FinishReason>) -> ToolCall {
    // JSON's whitespace is ASCII.
    let trimmed = text.trim_ascii();
    if trimmed.is_empty() && finish == Some(FinishReason::Length) {
        let mut call = ToolCall::new(name, Value::Object(Map::new()));
        call.raw_arguments = Some(String::new());
        return call;
    }
    if trimmed.is_empty() || trimmed == "null" {
        return ToolCall::new(name, Value::Object(Map::new()));
    }
    ToolCall::parse(name, text)
}

/// A tool call whose arguments arrived as a JSON value (`None` when absent): Anthropic's
/// `input`, Gemini's `args`, the object some OpenAI-compatible servers send in place of text.
/// Absent or `null` is no arguments; a string is read as JSON text, by [`call_from_text`]'s
/// rule; an object is the arguments; anything else is kept as sent, never run.
pub(crate) fn call_from_value(name: &str, value: Option<Value>) -> ToolCall {
    match value {
        None | Some(Value::Null) => ToolCall::new(name, Value::Object(Map::new())),
        Some(Value::String(text)) => call_from_text(name, &text, None),
        Some(other) => ToolCall::new(name, other),
    }
}

/// The tool calls of a turn read block by block (Anthropic's `tool_use`, Bedrock's
/// `toolUse`), each block's input streamed as deltas or given whole with the block.
pub(crate) struct BlockCalls {
    calls: Vec<ToolCall>,
    finish: Option<FinishReason>,
    /// Whether the last call's input came whole with its block (not as deltas).
    last_whole: bool,
}

impl BlockCalls {
    /// No calls yet, for a turn that ended for `finish`.
    pub(crate) fn new(finish: Option<FinishReason>) -> Self {
        Self {
            calls: Vec::new(),
            finish,
            last_whole: false,
        }
    }

    /// A block's call: input streamed as deltas (`arguments`) wins; else what the block came
    /// with (`whole`). An empty id is no id.
    pub(crate) fn push(&mut self, id: String, name: &str, arguments: &str, whole: Option<Value>) {
        let streamed = !arguments.trim().is_empty();
        self.last_whole = whole.is_some() && !streamed;
        let call = match whole {
            Some(input) if !streamed => call_from_value(name, Some(input)),
            _ => call_from_text(name, arguments, self.finish),
        };
        self.calls.push(if id.is_empty() {
            call
        } else {
            call.with_id(id)
        });
    }

    /// The calls. A turn cut at its output limit may have cut the last call's input, when it
    /// came whole: that call is kept but never run.
    pub(crate) fn into_calls(mut self) -> Vec<ToolCall> {
        if self.finish == Some(FinishReason::Length)
            && self.last_whole
            && let Some(last) = self.calls.last_mut()
        {
            last.raw_arguments = Some(last.arguments_text());
            last.arguments = Map::new();
        }
        self.calls
    }
}

/// The transcript with an id on every tool call and every tool result, for a vendor that
/// pairs them by id (OpenAI's and Anthropic's formats refuse an empty one). Gemini's models
/// may give none: a call without one gets `call_{turn}_{k}` (its message's index and its
/// place in the turn, the same on every request, so a prompt cache still matches), and a
/// result without one the id of the call it answers, the k-th result after the turn
/// answering its k-th call, as the loop records them. Borrowed as it is when nothing is
/// missing, the usual case.
pub(crate) fn with_call_ids(messages: &[Message]) -> Cow<'_, [Message]> {
    let complete = messages.iter().all(|m| {
        m.tool_calls.iter().all(|c| c.id.is_some())
            && (m.role != Role::Tool || m.tool_call_id.is_some())
    });
    if complete {
        return Cow::Borrowed(messages);
    }
    let mut messages = messages.to_vec();
    // The index of the last turn that asked for calls, and how many results followed it.
    let mut turn: Option<(usize, usize)> = None;
    for i in 0..messages.len() {
        if !messages[i].tool_calls.is_empty() {
            for (k, call) in messages[i].tool_calls.iter_mut().enumerate() {
                call.id.get_or_insert_with(|| format!("call_{i}_{k}"));
            }
            turn = Some((i, 0));
        } else if messages[i].role == Role::Tool
            && let Some((at, answered)) = turn.as_mut()
        {
            let call = messages[*at].tool_calls.get(*answered);
            let id = call.and_then(|c| c.id.clone());
            *answered += 1;
            if messages[i].tool_call_id.is_none() {
                messages[i].tool_call_id = id;
            }
        }
    }
    Cow::Owned(messages)
}
