//! Reading Converse: ConverseStream's events, and a Converse answer as the events it would
//! have been, through one parser.

use harness_core::content::merge_blocks;
use harness_core::{
    Block, CompletionResponse, FinishReason, LlmEvent, Result, Thinking, TokenUsage,
};
use serde::Deserialize;
use serde_json::Value;

use super::THINKING_FORMAT;
use crate::rest::json::{self, Vendor};
use crate::rest::{Accumulator, SseEvent};
use crate::wire::{BlockCalls, Count, Text, present};

/// Why the model stopped, as a [`FinishReason`].
fn stop_reason(value: &str) -> FinishReason {
    match value {
        "end_turn" | "tool_use" | "stop_sequence" => FinishReason::Stop,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "guardrail_intervened" | "content_filtered" => FinishReason::Filtered,
        "malformed_tool_use" => FinishReason::MalformedToolCall,
        _ => FinishReason::Other,
    }
}

// The wire ------------------------------------------------------------------------------------

/// A Converse answer: `{"output": {"message": ...}, "stopReason", "usage"}`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnswerIn<'a> {
    #[serde(borrow, default)]
    output: Option<OutputIn<'a>>,
    #[serde(borrow, default)]
    stop_reason: Text<'a>,
    #[serde(default)]
    usage: Option<UsageIn>,
    /// An error object in a 200 body (a gateway's).
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct OutputIn<'a> {
    #[serde(borrow, default)]
    message: Option<MessageIn<'a>>,
}

#[derive(Deserialize)]
struct MessageIn<'a> {
    #[serde(borrow, default)]
    content: Option<Vec<BlockIn<'a>>>,
}

/// A whole content block of an answer.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockIn<'a> {
    #[serde(borrow, default)]
    text: Text<'a>,
    #[serde(borrow, default)]
    tool_use: Option<ToolUseIn<'a>>,
    #[serde(borrow, default)]
    reasoning_content: Option<ReasoningIn<'a>>,
}

/// `toolUse`: whole in an answer; at a stream's `contentBlockStart`, without its input.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolUseIn<'a> {
    #[serde(borrow, default)]
    tool_use_id: Text<'a>,
    #[serde(borrow, default)]
    name: Text<'a>,
    /// `server_tool_use` for a tool Bedrock runs itself (Nova's code interpreter).
    #[serde(borrow, default, rename = "type")]
    kind: Text<'a>,
    #[serde(default)]
    input: Option<Value>,
}

/// `reasoningContent`: whole in an answer (`reasoningText` or `redactedContent`), or a
/// stream's delta (`text`, `signature` or `redactedContent`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReasoningIn<'a> {
    #[serde(borrow, default)]
    reasoning_text: Option<ReasoningTextIn<'a>>,
    #[serde(borrow, default)]
    text: Text<'a>,
    #[serde(borrow, default)]
    signature: Text<'a>,
    #[serde(borrow, default)]
    redacted_content: Text<'a>,
}

#[derive(Deserialize)]
struct ReasoningTextIn<'a> {
    #[serde(borrow, default)]
    text: Text<'a>,
    #[serde(borrow, default)]
    signature: Text<'a>,
}

/// One ConverseStream event's payload; which fields it has depends on the event.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EventIn<'a> {
    #[serde(default)]
    content_block_index: Option<usize>,
    #[serde(borrow, default)]
    start: Option<StartIn<'a>>,
    #[serde(borrow, default)]
    delta: Option<DeltaIn<'a>>,
    #[serde(borrow, default)]
    stop_reason: Text<'a>,
    #[serde(default)]
    usage: Option<UsageIn>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StartIn<'a> {
    #[serde(borrow, default)]
    tool_use: Option<ToolUseIn<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeltaIn<'a> {
    #[serde(borrow, default)]
    text: Text<'a>,
    #[serde(borrow, default)]
    tool_use: Option<ToolInputIn<'a>>,
    #[serde(borrow, default)]
    reasoning_content: Option<ReasoningIn<'a>>,
}

#[derive(Deserialize)]
struct ToolInputIn<'a> {
    #[serde(borrow, default)]
    input: Text<'a>,
}

/// Converse's counts. `inputTokens` leaves out what was read from or written to the cache
/// (as Anthropic's does); the prompt count puts them back, so cached tokens stay inside it as
/// everywhere else. Counts saturate, never fail.
#[derive(Deserialize, Default, Clone, Copy)]
#[serde(rename_all = "camelCase")]
#[allow(clippy::struct_field_names)] // the vendor's names
struct UsageIn {
    #[serde(default, deserialize_with = "present")]
    input_tokens: Option<Count>,
    #[serde(default, deserialize_with = "present")]
    output_tokens: Option<Count>,
    #[serde(default, deserialize_with = "present")]
    cache_read_input_tokens: Option<Count>,
    #[serde(default, deserialize_with = "present")]
    cache_write_input_tokens: Option<Count>,
}

impl UsageIn {
    fn usage(&self) -> TokenUsage {
        let read = |count: Option<Count>| count.map_or(0, |c| c.0);
        let (cached, written) = (
            read(self.cache_read_input_tokens),
            read(self.cache_write_input_tokens),
        );
        let prompt = read(self.input_tokens)
            .saturating_add(cached)
            .saturating_add(written);
        let completion = read(self.output_tokens);
        TokenUsage::new(prompt, completion, prompt.saturating_add(completion))
            .with_cached(cached)
            .with_cache_write(written)
    }
}

// The accumulator ------------------------------------------------------------------------------

enum Slot {
    Text(String),
    Reasoning {
        text: String,
        signature: Option<String>,
        /// Reasoning the model redacted: its encrypted form, as sent.
        redacted: Option<String>,
    },
    Tool {
        id: String,
        name: String,
        /// The input as streamed JSON text.
        arguments: String,
        /// The input an answer came with whole.
        whole: Option<Value>,
    },
    /// A block read but not kept: a tool Bedrock runs itself, and its result.
    Skipped,
}

/// Reads Converse: a stream's events (content blocks by `contentBlockIndex`; whole once
/// `messageStop` and the `metadata` with the usage have come), and a non-streamed answer as
/// the events it would have been.
pub(crate) struct ConverseAccumulator<'v> {
    vendor: Vendor<'v>,
    model: Option<String>,
    slots: Vec<(usize, Slot)>,
    usage: Option<UsageIn>,
    finish: Option<FinishReason>,
    stopped: bool,
    metadata: bool,
}

impl<'v> ConverseAccumulator<'v> {
    pub(crate) fn new(vendor: Vendor<'v>) -> Self {
        Self {
            vendor,
            model: None,
            slots: Vec::new(),
            usage: None,
            finish: None,
            stopped: false,
            metadata: false,
        }
    }

    /// Names the model the turn came from (Converse's answer does not).
    pub(crate) fn with_model(mut self, model: &str) -> Self {
        self.model = Some(model.to_owned());
        self
    }

    /// Reads a non-streamed answer (`path` names the request in errors).
    pub(crate) fn answer(mut self, path: &str, body: &[u8]) -> Result<CompletionResponse> {
        let vendor = self.vendor;
        let answer: AnswerIn<'_> = json::answer(vendor, path, body)?;
        if let Some(error) = answer.error.as_ref().filter(|e| !e.is_null()) {
            return Err(json::vendor_error(
                vendor,
                error,
                &String::from_utf8_lossy(body),
            ));
        }
        let output = json::required(vendor, answer.output, "output", body)?;
        let message = json::required(vendor, output.message, "output.message", body)?;
        let content = json::required(vendor, message.content, "output.message.content", body)?;
        for (index, block) in content.into_iter().enumerate() {
            self.whole_block(index, block);
        }
        // A missing stop reason is not a finished answer.
        self.finish = Some(
            answer
                .stop_reason
                .as_deref()
                .map_or(FinishReason::Other, stop_reason),
        );
        self.usage = answer.usage;
        self.stopped = true;
        self.metadata = true;
        self.finish()
    }

    /// A whole block of an answer.
    fn whole_block(&mut self, index: usize, block: BlockIn<'_>) {
        let slot = if let Some(text) = block.text {
            Slot::Text(text.0.into_owned())
        } else if let Some(tool) = block.tool_use {
            tool_slot(tool, true)
        } else if let Some(reasoning) = block.reasoning_content {
            let (text, signature) = match reasoning.reasoning_text {
                Some(r) => (r.text, r.signature),
                None => (None, None),
            };
            Slot::Reasoning {
                text: text.map(|t| t.0.into_owned()).unwrap_or_default(),
                signature: owned(signature),
                redacted: owned(reasoning.redacted_content),
            }
        } else {
            // Citations, a server tool's result, and blocks added later.
            Slot::Skipped
        };
        self.slots.push((index, slot));
    }

    /// The slot of block `index`, made as `fresh` says when the stream did not start it.
    fn slot(&mut self, index: usize, fresh: impl FnOnce() -> Slot) -> &mut Slot {
        let at = match self.slots.iter().rposition(|(i, _)| *i == index) {
            Some(at) => at,
            None => {
                self.slots.push((index, fresh()));
                self.slots.len() - 1
            }
        };
        &mut self.slots[at].1
    }

    fn on_delta(&mut self, index: usize, delta: DeltaIn<'_>, emit: &mut dyn FnMut(LlmEvent)) {
        if let Some(text) = delta.text.filter(|t| !t.is_empty()) {
            if let Slot::Text(acc) = self.slot(index, || Slot::Text(String::new())) {
                acc.push_str(&text);
            }
            emit(LlmEvent::TextDelta(text.0.into_owned()));
        }
        if let Some(input) = delta.tool_use.and_then(|t| t.input) {
            // Input for a block that never started is for no known tool: dropped.
            if let Some((_, Slot::Tool { arguments, .. })) =
                self.slots.iter_mut().rev().find(|(i, _)| *i == index)
            {
                arguments.push_str(&input);
            }
        }
        if let Some(reasoning) = delta.reasoning_content {
            let fresh = || Slot::Reasoning {
                text: String::new(),
                signature: None,
                redacted: None,
            };
            let piece = reasoning.text.filter(|t| !t.is_empty());
            if let Slot::Reasoning {
                text,
                signature,
                redacted,
            } = self.slot(index, fresh)
            {
                if let Some(piece) = &piece {
                    text.push_str(piece);
                }
                if let Some(more) = reasoning.signature {
                    signature.get_or_insert_with(String::new).push_str(&more);
                }
                if let Some(more) = reasoning.redacted_content {
                    redacted.get_or_insert_with(String::new).push_str(&more);
                }
            }
            if let Some(piece) = piece {
                emit(LlmEvent::ThinkingDelta(piece.0.into_owned()));
            }
        }
    }
}

fn owned(text: Text<'_>) -> Option<String> {
    text.filter(|t| !t.is_empty()).map(|t| t.0.into_owned())
}

/// A tool block's slot: a call of the model's, or a tool Bedrock runs itself (skipped).
fn tool_slot(tool: ToolUseIn<'_>, whole: bool) -> Slot {
    if tool.kind.as_deref() == Some("server_tool_use") {
        return Slot::Skipped;
    }
    Slot::Tool {
        id: tool
            .tool_use_id
            .map(|s| s.0.into_owned())
            .unwrap_or_default(),
        name: tool.name.map(|s| s.0.into_owned()).unwrap_or_default(),
        arguments: String::new(),
        // An answer's input is the input, absent or not an object included (such a call is
        // not run); a stream's comes as deltas.
        whole: if whole {
            Some(tool.input.unwrap_or(Value::Null))
        } else {
            tool.input
        },
    }
}

impl Accumulator for ConverseAccumulator<'_> {
    fn feed(&mut self, event: SseEvent<'_>, emit: &mut dyn FnMut(LlmEvent)) -> Result<()> {
        let data = event.data;
        let payload: EventIn<'_> =
            serde_json::from_str(data).map_err(|e| json::unreadable(self.vendor, &e, data))?;
        let index = payload.content_block_index.unwrap_or(0);
        match event.event {
            "contentBlockStart" => {
                if let Some(tool) = payload.start.and_then(|s| s.tool_use) {
                    self.slots.push((index, tool_slot(tool, false)));
                }
            }
            "contentBlockDelta" => {
                if let Some(delta) = payload.delta {
                    self.on_delta(index, delta, emit);
                }
            }
            "messageStop" => {
                self.finish = Some(
                    payload
                        .stop_reason
                        .as_deref()
                        .map_or(FinishReason::Other, stop_reason),
                );
                self.stopped = true;
            }
            "metadata" => {
                self.usage = payload.usage.or(self.usage);
                self.metadata = true;
            }
            // messageStart, contentBlockStop, and events added later.
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<CompletionResponse> {
        if !self.stopped {
            return Err(json::incomplete(self.vendor, "messageStop"));
        }
        if !self.metadata {
            return Err(json::incomplete(self.vendor, "its metadata (the usage)"));
        }
        let mut slots = std::mem::take(&mut self.slots);
        slots.sort_by_key(|(i, _)| *i);
        let mut blocks = Vec::new();
        let mut calls = BlockCalls::new(self.finish);
        for (_, slot) in slots {
            match slot {
                Slot::Text(text) if text.is_empty() => {}
                Slot::Text(text) => blocks.push(Block::text(text)),
                Slot::Reasoning {
                    redacted: Some(data),
                    ..
                } => blocks.push(Block::from(
                    Thinking::redacted(data).from_provider(THINKING_FORMAT),
                )),
                Slot::Reasoning {
                    text, signature, ..
                } if text.is_empty() && signature.is_none() => {}
                Slot::Reasoning {
                    text, signature, ..
                } => blocks.push(Block::from(
                    match signature {
                        Some(signature) => Thinking::signed(text, signature),
                        None => Thinking::new(text),
                    }
                    .from_provider(THINKING_FORMAT),
                )),
                Slot::Tool { name, .. } if name.is_empty() => {}
                Slot::Tool {
                    id,
                    name,
                    arguments,
                    whole,
                } => calls.push(id, &name, &arguments, whole),
                Slot::Skipped => {}
            }
        }
        let calls = calls.into_calls();
        let mut response = CompletionResponse::from_blocks(merge_blocks(blocks))
            .with_tool_calls(calls)
            .with_finish_reason(self.finish.unwrap_or(FinishReason::Stop));
        if let Some(usage) = self.usage {
            response = response.with_usage(usage.usage());
        }
        if let Some(model) = self.model.take() {
            response = response.with_model(model);
        }
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stop_reason_converse_names_is_mapped() {
        for (reason, finish) in [
            ("end_turn", FinishReason::Stop),
            ("tool_use", FinishReason::Stop),
            ("stop_sequence", FinishReason::Stop),
            ("max_tokens", FinishReason::Length),
            ("model_context_window_exceeded", FinishReason::Length),
            ("guardrail_intervened", FinishReason::Filtered),
            ("content_filtered", FinishReason::Filtered),
            ("malformed_tool_use", FinishReason::MalformedToolCall),
            ("something_new", FinishReason::Other),
        ] {
            assert_eq!(stop_reason(reason), finish, "{reason}");
        }
    }

    #[test]
    fn a_stream_needs_its_stop_and_its_metadata() {
        let mut accumulator = ConverseAccumulator::new(super::super::VENDOR);
        let mut emit = |_: LlmEvent| {};
        let event = |event: &'static str, data: &'static str| SseEvent {
            event,
            data,
            id: None,
        };
        accumulator
            .feed(
                event("messageStop", r#"{"stopReason":"guardrail_intervened"}"#),
                &mut emit,
            )
            .unwrap();
        let err = accumulator.finish().unwrap_err();
        assert!(err.to_string().contains("metadata"), "{err}");
        accumulator
            .feed(
                event("metadata", r#"{"usage":{"inputTokens":3}}"#),
                &mut emit,
            )
            .unwrap();
        let turn = accumulator.finish().unwrap();
        assert_eq!(turn.finish_reason(), FinishReason::Filtered);
        assert_eq!(turn.usage(), Some(&TokenUsage::new(3, 0, 3)));
    }
}
