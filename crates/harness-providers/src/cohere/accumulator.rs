//! Reading v2 chat: a stream's events and a whole answer, by one accumulator.

use harness_core::{
    Block, CompletionResponse, Error, FinishReason, LlmEvent, Result, Thinking, TokenUsage,
    content::merge_blocks,
};
use serde_json::{Map, Value};
use std::borrow::Cow;

use super::chunk::{AnswerIn, ArgumentsIn, CallIn, ContentIn, Event, MessageIn, finish_reason};
use super::{INVALID_TOOL_GENERATION, PATH, THINKING_FORMAT};
use crate::rest::json::{self, Vendor};
use crate::rest::{Accumulator, SseEvent};
use crate::wire::{call_from_text, call_from_value};

/// A content block of the turn, by its index.
struct ContentSlot {
    index: usize,
    thinking: bool,
    text: String,
}

/// A tool call of the turn, by its index.
struct CallSlot {
    index: usize,
    id: String,
    name: String,
    arguments: String,
    /// Arguments an answer gave as a value rather than text.
    whole: Option<Value>,
}

/// Reads v2 chat: a stream's events (content blocks and calls by index, the plan as text,
/// whole once `message-end` has come), and a non-streamed answer as the events it would
/// have been: each block and call whole, then its end.
pub(crate) struct ChatAccumulator<'v> {
    vendor: Vendor<'v>,
    id: Option<String>,
    contents: Vec<ContentSlot>,
    plan: String,
    calls: Vec<CallSlot>,
    usage: Option<TokenUsage>,
    finish: Option<FinishReason>,
    finish_message: Option<String>,
    ended: bool,
}

impl<'v> ChatAccumulator<'v> {
    pub(crate) fn new(vendor: Vendor<'v>) -> Self {
        Self {
            vendor,
            id: None,
            contents: Vec::new(),
            plan: String::new(),
            calls: Vec::new(),
            usage: None,
            finish: None,
            finish_message: None,
            ended: false,
        }
    }

    /// Reads a non-streamed answer.
    pub(crate) fn answer(mut self, body: &[u8]) -> Result<CompletionResponse> {
        let vendor = self.vendor;
        let answer: AnswerIn<'_> = json::answer(vendor, PATH, body)?;
        let failed = answer.error_type.is_some()
            || answer.error.as_ref().is_some_and(|e| !e.is_null())
            || answer.finish_reason.as_deref() == Some("ERROR");
        if failed {
            // An error object's words are in `message`; an ended turn's in `error`.
            let words = match (&answer.error, &answer.message) {
                (Some(error), _) if !error.is_null() => Some(Cow::Borrowed(error)),
                (_, Some(MessageIn::Words(words))) => Some(Cow::Owned(Value::from(&**words))),
                _ => None,
            };
            let data = String::from_utf8_lossy(body);
            self.ended_in_error(words.as_deref(), answer.error_type.as_deref(), &data)?;
            return self.finish();
        }
        let turn = match json::required(vendor, answer.message, "message", body)? {
            MessageIn::Turn(turn) => turn,
            MessageIn::Words(_) => {
                return Err(json::malformed(
                    vendor,
                    "has a 'message' that is text",
                    body,
                ));
            }
        };
        if let Some(id) = answer.id {
            self.id = Some(id.0.into_owned());
        }
        for (index, block) in turn.content.into_iter().flatten().enumerate() {
            self.content_start(index, &block);
        }
        if let Some(plan) = turn.tool_plan {
            self.plan.push_str(&plan);
        }
        for (index, call) in turn.tool_calls.into_iter().flatten().enumerate() {
            self.call_start(index, call, true);
        }
        self.usage = answer.usage.0.and_then(|usage| usage.usage());
        // A missing finish reason is not a finished answer.
        self.finish = Some(
            answer
                .finish_reason
                .as_deref()
                .map_or(FinishReason::Other, finish_reason),
        );
        self.ended = true;
        self.finish()
    }

    /// A turn Cohere ended with an error: the model's tool call refused (the turn ends in
    /// [`FinishReason::MalformedToolCall`], Cohere's words kept, its calls dropped), or any
    /// other error, as the vendor's error (`data` is the body or event it came in).
    fn ended_in_error(
        &mut self,
        words: Option<&Value>,
        error_type: Option<&str>,
        data: &str,
    ) -> Result<()> {
        let message = match words {
            Some(Value::String(text)) => Some(text.clone()),
            Some(other) => json::error_fields(other).1,
            None => None,
        };
        if let Some(message) = refusal(error_type, message.as_deref()) {
            self.finish = Some(FinishReason::MalformedToolCall);
            self.finish_message = Some(message);
            self.calls.clear();
            self.ended = true;
            return Ok(());
        }
        let message =
            message.unwrap_or_else(|| format!("{} ended the answer with an error", self.vendor));
        let mut error = Map::new();
        error.insert("message".into(), Value::String(message));
        if let Some(kind) = error_type {
            error.insert("type".into(), Value::String(kind.to_owned()));
        }
        Err(json::vendor_error(self.vendor, &Value::Object(error), data))
    }

    /// `content-start`, or a whole block of an answer.
    fn content_start(&mut self, index: usize, block: &ContentIn<'_>) {
        let thinking = block.kind.as_deref() == Some("thinking")
            || (block.kind.is_none() && block.thinking.is_some());
        let text = if thinking {
            &block.thinking
        } else {
            &block.text
        };
        self.contents.push(ContentSlot {
            index,
            thinking,
            text: text.as_deref().unwrap_or_default().to_owned(),
        });
    }

    /// `tool-call-start`, or a whole call of an answer.
    fn call_start(&mut self, index: usize, call: CallIn<'_>, whole: bool) {
        let (name, arguments) = match call.function {
            Some(function) => (function.name, function.arguments),
            None => (None, None),
        };
        let (arguments, value) = match arguments {
            Some(ArgumentsIn::Text(text)) => (text.0.into_owned(), None),
            // An answer's value is its arguments; a stream's continues as text.
            Some(ArgumentsIn::Value(value)) if whole => (String::new(), Some(value)),
            Some(ArgumentsIn::Value(_)) | None => (String::new(), whole.then_some(Value::Null)),
        };
        self.calls.push(CallSlot {
            index,
            id: call.id.map(|s| s.0.into_owned()).unwrap_or_default(),
            name: name.map(|s| s.0.into_owned()).unwrap_or_default(),
            arguments,
            whole: value,
        });
    }
}

/// The words of an error that refuses the model's tool call (Cohere's
/// `INVALID_TOOL_GENERATION`), `None` for any other error.
fn refusal(error_type: Option<&str>, message: Option<&str>) -> Option<String> {
    let message = message.map(str::trim).unwrap_or_default();
    let refused = error_type == Some(INVALID_TOOL_GENERATION)
        || message.starts_with("your request resulted in an invalid tool generation");
    refused.then(|| {
        if message.is_empty() {
            INVALID_TOOL_GENERATION.to_owned()
        } else {
            message.to_owned()
        }
    })
}

/// A request Cohere answered with an HTTP error refusing its model's tool call (a 400 or 422
/// of `INVALID_TOOL_GENERATION`): the model's malformed call, not a failed request, so a turn
/// ending in [`FinishReason::MalformedToolCall`] with Cohere's words, as when the same comes
/// inside a stream. Every other error stays the error it was.
#[cold]
#[inline(never)]
pub(super) fn refused_call(error: Error) -> Result<CompletionResponse> {
    let refused = error
        .provider()
        .filter(|p| matches!(p.status(), Some(400 | 422)))
        .and_then(|p| {
            let body: Value = serde_json::from_str(p.body()?).ok()?;
            let text = |key: &str| body.get(key).and_then(Value::as_str);
            refusal(text("error_type"), text("message"))
        });
    match refused {
        Some(message) => Ok(CompletionResponse::default()
            .with_finish_reason(FinishReason::MalformedToolCall)
            .with_finish_message(message)),
        None => Err(error),
    }
}

impl Accumulator for ChatAccumulator<'_> {
    fn feed(&mut self, event: SseEvent<'_>, emit: &mut dyn FnMut(LlmEvent)) -> Result<()> {
        let data = event.data;
        let event: Event<'_> =
            serde_json::from_str(data).map_err(|e| json::unreadable(self.vendor, &e, data))?;
        let index = event.index.unwrap_or(0);
        let Some(kind) = event.kind.as_deref() else {
            // No type: an error object sent in place of an event, or nothing to read.
            if event.error_type.is_some() || event.message.as_ref().is_some_and(Value::is_string) {
                self.ended_in_error(event.message.as_ref(), event.error_type.as_deref(), data)?;
            }
            return Ok(());
        };
        let delta = event.delta;
        let message = delta.as_ref().and_then(|d| d.message.as_ref());
        match kind {
            "message-start" => {
                if let Some(id) = event.id.filter(|_| self.id.is_none()) {
                    self.id = Some(id.0.into_owned());
                }
            }
            "content-start" => {
                if let Some(block) = message.and_then(|m| m.content.0.as_ref()) {
                    self.content_start(index, block);
                    let slot = self.contents.last().map(|s| (s.thinking, s.text.clone()));
                    if let Some((thinking, text)) = slot.filter(|(_, t)| !t.is_empty()) {
                        emit(if thinking {
                            LlmEvent::ThinkingDelta(text)
                        } else {
                            LlmEvent::TextDelta(text)
                        });
                    }
                }
            }
            "content-delta" => {
                if let Some(block) = message.and_then(|m| m.content.0.as_ref()) {
                    self.content_delta(index, block, emit);
                }
            }
            "tool-plan-delta" => {
                if let Some(piece) = message.and_then(|m| m.tool_plan.as_ref())
                    && !piece.is_empty()
                {
                    self.plan.push_str(piece);
                    emit(LlmEvent::TextDelta(piece.to_string()));
                }
            }
            "tool-call-start" => {
                if let Some(call) = delta.and_then(|d| d.message).and_then(|m| m.tool_calls.0) {
                    self.call_start(index, call, false);
                }
            }
            "tool-call-delta" => {
                let piece = message
                    .and_then(|m| m.tool_calls.0.as_ref())
                    .and_then(|c| c.function.as_ref())
                    .and_then(|f| match &f.arguments {
                        Some(ArgumentsIn::Text(text)) => Some(&**text),
                        _ => None,
                    });
                let call = self.calls.iter_mut().rev().find(|c| c.index == index);
                if let (Some(piece), Some(call)) = (piece, call) {
                    call.arguments.push_str(piece);
                }
            }
            "message-end" => {
                let Some(delta) = delta else {
                    self.finish = Some(FinishReason::Other);
                    self.ended = true;
                    return Ok(());
                };
                if let Some(usage) = delta.usage.0 {
                    self.usage = usage.usage();
                }
                let failed = delta.finish_reason.as_deref() == Some("ERROR")
                    || delta.error_type.is_some()
                    || delta.error.as_ref().is_some_and(|e| !e.is_null());
                if failed {
                    return self.ended_in_error(
                        delta.error.as_ref(),
                        delta.error_type.as_deref(),
                        data,
                    );
                }
                self.finish = Some(
                    delta
                        .finish_reason
                        .as_deref()
                        .map_or(FinishReason::Other, finish_reason),
                );
                self.ended = true;
            }
            // content-end, tool-call-end, citation-start and -end, and what comes later.
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<CompletionResponse> {
        if !self.ended {
            return Err(json::incomplete(self.vendor, "message-end"));
        }
        let mut contents = std::mem::take(&mut self.contents);
        contents.sort_by_key(|slot| slot.index);
        let mut blocks: Vec<Block> = contents
            .into_iter()
            .filter(|slot| !slot.text.is_empty())
            .map(|slot| {
                if slot.thinking {
                    Block::from(Thinking::new(slot.text).from_provider(THINKING_FORMAT))
                } else {
                    Block::text(slot.text)
                }
            })
            .collect();
        if !self.plan.is_empty() {
            blocks.push(Block::text(std::mem::take(&mut self.plan)));
        }
        let mut calls = std::mem::take(&mut self.calls);
        calls.sort_by_key(|slot| slot.index);
        let calls = calls
            .into_iter()
            .filter(|slot| !slot.name.is_empty())
            .map(|slot| {
                let call = match slot.whole {
                    Some(value) if slot.arguments.trim().is_empty() => {
                        call_from_value(&slot.name, Some(value))
                    }
                    _ => call_from_text(&slot.name, &slot.arguments, self.finish),
                };
                if slot.id.is_empty() {
                    call
                } else {
                    call.with_id(slot.id)
                }
            })
            .collect();
        let mut response = CompletionResponse::from_blocks(merge_blocks(blocks))
            .with_tool_calls(calls)
            .with_finish_reason(self.finish.unwrap_or(FinishReason::Other));
        if let Some(message) = self.finish_message.take() {
            response = response.with_finish_message(message);
        }
        if let Some(usage) = self.usage.take() {
            response = response.with_usage(usage);
        }
        if let Some(id) = self.id.take() {
            response = response.with_id(id);
        }
        Ok(response)
    }

    fn refused(&mut self, error: Error) -> Result<CompletionResponse> {
        refused_call(error)
    }
}

impl ChatAccumulator<'_> {
    /// `content-delta`: more text or thinking of the block at `index`.
    fn content_delta(
        &mut self,
        index: usize,
        block: &ContentIn<'_>,
        emit: &mut dyn FnMut(LlmEvent),
    ) {
        let (thinking, piece) = match (&block.thinking, &block.text) {
            (Some(piece), _) => (true, piece),
            (None, Some(piece)) => (false, piece),
            (None, None) => return,
        };
        if piece.is_empty() {
            return;
        }
        let at = match self.contents.iter().rposition(|s| s.index == index) {
            Some(at) => at,
            None => {
                // A delta without its start: a block of its own.
                self.contents.push(ContentSlot {
                    index,
                    thinking,
                    text: String::new(),
                });
                self.contents.len() - 1
            }
        };
        self.contents[at].text.push_str(piece);
        emit(if thinking {
            LlmEvent::ThinkingDelta(piece.to_string())
        } else {
            LlmEvent::TextDelta(piece.to_string())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::VENDOR;
    use super::super::chunk::UsageIn;
    use super::*;

    fn answer(body: &str) -> Result<CompletionResponse> {
        ChatAccumulator::new(VENDOR).answer(body.as_bytes())
    }

    #[test]
    fn usage_counts_tokens_and_falls_back_to_billed_units() {
        let usage = |json: &str| serde_json::from_str::<UsageIn>(json).unwrap().usage();
        let both = r#"{"billed_units": {"input_tokens": 8, "output_tokens": 2},
            "tokens": {"input_tokens": 503, "output_tokens": 4}, "cached_tokens": 480}"#;
        assert_eq!(
            usage(both),
            Some(TokenUsage::new(503, 4, 507).with_cached(480))
        );
        let billed = r#"{"billed_units": {"input_tokens": 8, "output_tokens": 2}}"#;
        assert_eq!(usage(billed), Some(TokenUsage::new(8, 2, 10)));
        assert_eq!(usage("{}"), None);
        let odd = r#"{"tokens": 5, "billed_units": [1], "cached_tokens": "x"}"#;
        assert_eq!(usage(odd), Some(TokenUsage::new(0, 0, 0)));
    }

    #[test]
    fn an_error_answer_is_the_vendors_error_and_a_refused_call_a_turn() {
        let err = answer(r#"{"message": "overloaded", "error_type": "SERVER_ERROR"}"#).unwrap_err();
        let provider = err.provider().unwrap();
        assert_eq!(provider.message(), "overloaded");
        assert_eq!(provider.error_type(), Some("SERVER_ERROR"));
        let turn = answer(
            r#"{"id": "x", "finish_reason": "ERROR", "error": "your request resulted in an invalid tool generation. Try updating the messages or tool definitions"}"#,
        )
        .unwrap();
        assert_eq!(turn.finish_reason(), FinishReason::MalformedToolCall);
        assert!(turn.finish_message().unwrap().starts_with("your request"));
        // A message that is not an object, with no error marker, is not an answer.
        let err =
            answer(r#"{"id": "x", "message": "hi", "finish_reason": "COMPLETE"}"#).unwrap_err();
        assert_eq!(
            err.provider().unwrap().kind(),
            harness_core::ProviderErrorKind::Malformed
        );
    }
}
