//! `ChatAccumulator`: one Chat Completions turn assembled from its chunks (or read whole),
//! and the refusals a compatible server sends for a call it could not parse.

use harness_core::{
    Block, CompletionResponse, Error, FinishReason, LlmEvent, Result, Thinking, TokenUsage,
};
use serde_json::Value;

use super::chunk::{Arguments, CallWire, Chunk, DetailWire, UsageWire};
use crate::rest::json::{self, Vendor};
use crate::rest::{Accumulator, SseEvent};
use crate::wire::{Few, Text, call_from_text, call_from_value, push};

/// Where a Chat Completions request goes, under the service's base URL.
pub(super) const PATH: &str = "/chat/completions";

fn finish_reason(value: &str) -> FinishReason {
    match value {
        "stop" | "tool_calls" | "function_call" => FinishReason::Stop,
        "length" => FinishReason::Length,
        "content_filter" => FinishReason::Filtered,
        _ => FinishReason::Other,
    }
}

#[derive(Default)]
struct CallSlot {
    index: usize,
    id: String,
    name: String,
    arguments: String,
    /// Arguments sent as a JSON value rather than text.
    value: Option<Value>,
}

impl CallSlot {
    /// Whether the arguments so far are one whole JSON value.
    fn is_whole(&self) -> bool {
        self.value.is_some()
            || serde_json::from_str::<serde::de::IgnoredAny>(&self.arguments).is_ok()
    }
}

/// Reads Chat Completions: a stream's chunks (text and reasoning appended, tool-call
/// fragments joined by index in order of first appearance, a new id at a taken index
/// starting another call, usage from the final `choices: []` chunk; whole once a
/// `finish_reason` or `data: [DONE]` has come), and a non-streamed answer as one chunk.
pub(crate) struct ChatAccumulator<'v> {
    vendor: Vendor<'v>,
    id: Option<String>,
    model: Option<String>,
    text: String,
    thinking: String,
    /// What OpenRouter's `reasoning_details` carry beside the text, when they do.
    sealed: Option<Box<Sealed>>,
    calls: Vec<CallSlot>,
    usage: Option<TokenUsage>,
    finish: Option<FinishReason>,
    /// The vendor's words on a call it refused (see [`refused_call`]).
    finish_message: Option<String>,
    /// Azure's content filter blocked part of the prompt or the answer.
    filtered: bool,
    done: bool,
}

/// The signature over a turn's reasoning and the reasoning the vendor encrypted, as
/// OpenRouter's `reasoning_details` give them.
#[derive(Default)]
struct Sealed {
    signature: Option<String>,
    encrypted: Vec<String>,
}

impl<'v> ChatAccumulator<'v> {
    /// Who is answering, for errors.
    fn vendor(&self) -> Vendor<'v> {
        self.vendor
    }

    pub(crate) fn new(vendor: Vendor<'v>) -> Self {
        Self {
            vendor,
            id: None,
            model: None,
            text: String::new(),
            thinking: String::new(),
            sealed: None,
            calls: Vec::new(),
            usage: None,
            finish: None,
            finish_message: None,
            filtered: false,
            done: false,
        }
    }

    /// Reads a non-streamed answer: its `message` is the `delta` of one chunk.
    pub(crate) fn answer(mut self, body: &[u8]) -> Result<CompletionResponse> {
        let vendor = self.vendor();
        let chunk: Chunk<'_> = json::answer(vendor, PATH, body)?;
        if let Some(error) = chunk.error.as_ref().filter(|e| !e.is_null()) {
            return Err(json::vendor_error(
                vendor,
                error,
                &String::from_utf8_lossy(body),
            ));
        }
        let choices = json::required(vendor, chunk.choices.as_ref(), "choices", body)?;
        let Some(choice) = choices.first() else {
            return Err(json::malformed(vendor, "has no choices", body));
        };
        let message = json::required(vendor, choice.delta.as_ref(), "message", body)?;
        for call in &message.tool_calls {
            json::required(vendor, call.id.as_ref(), "id", body)?;
            let function = json::required(vendor, call.function.as_ref(), "function", body)?;
            json::required(vendor, function.name.as_ref(), "name", body)?;
        }
        self.take(&chunk, None);
        // A missing finish reason is not a finished answer.
        self.done = true;
        self.finish()
    }

    /// The reasoning with what only OpenRouter's details carried, marked as read from this
    /// service: a signature or encrypted reasoning is valid only where it came from.
    #[cold]
    #[inline(never)]
    fn push_sealed(&mut self, sealed: Sealed, blocks: &mut Vec<Block>) {
        let text = std::mem::take(&mut self.thinking);
        let thinking = match sealed.signature {
            Some(signature) => Some(Thinking::signed(text, signature)),
            None => (!text.is_empty()).then(|| Thinking::new(text)),
        };
        let encrypted = sealed.encrypted.into_iter().map(Thinking::redacted);
        for thinking in thinking.into_iter().chain(encrypted) {
            blocks.push(thinking.from_provider(self.vendor.id).into());
        }
    }

    /// Takes OpenRouter's reasoning details: the signature and the encrypted reasoning, and
    /// the text when `text_too` (the delta had no plain reasoning).
    #[cold]
    #[inline(never)]
    fn take_details(
        &mut self,
        details: &[DetailWire<'_>],
        text_too: bool,
        emit: &mut Option<&mut dyn FnMut(LlmEvent)>,
    ) {
        let given = |field: &Text<'_>| {
            field
                .as_deref()
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        for detail in details {
            if detail.kind.as_deref() == Some("reasoning.encrypted") {
                if let Some(data) = given(&detail.data) {
                    let sealed = self.sealed.get_or_insert_with(Box::default);
                    sealed.encrypted.push(data);
                }
                continue;
            }
            if let Some(signature) = given(&detail.signature) {
                self.sealed.get_or_insert_with(Box::default).signature = Some(signature);
            }
            let text = given(&detail.text).or_else(|| given(&detail.summary));
            if let Some(text) = text.filter(|_| text_too) {
                self.thinking.push_str(&text);
                if let Some(emit) = emit.as_mut() {
                    emit(LlmEvent::ThinkingDelta(text));
                }
            }
        }
    }

    /// Takes one chunk; `emit` is `None` for a non-streamed answer, whose calls are whole
    /// (each its own).
    fn take(&mut self, chunk: &Chunk<'_>, mut emit: Option<&mut dyn FnMut(LlmEvent)>) {
        crate::wire::keep_first(&mut self.id, chunk.id.as_ref());
        crate::wire::keep_first(&mut self.model, chunk.model.as_ref());
        if let Some(usage) = chunk.usage.as_deref().and_then(UsageWire::usage) {
            self.usage = Some(usage);
        }
        self.filtered |= chunk.filtered;
        let Some(choice) = chunk.choices.as_ref().and_then(Few::first) else {
            return;
        };
        self.filtered |= choice.filtered.0;
        if let Some(reason) = &choice.finish_reason {
            self.finish = Some(finish_reason(reason));
        }
        let Some(delta) = &choice.delta else {
            return;
        };
        let whole = emit.is_none();
        for fragment in &delta.tool_calls {
            self.take_call(fragment, whole);
        }
        if let Some(reasoning) = delta.reasoning() {
            self.thinking.push_str(reasoning);
            if let Some(emit) = emit.as_mut() {
                emit(LlmEvent::ThinkingDelta(reasoning.to_string()));
            }
        }
        if let Some(extra) = delta.extra.as_deref()
            && !extra.reasoning_details.is_empty()
        {
            // The details repeat the plain reasoning's text: theirs only when it is absent.
            let text_too = delta.reasoning().is_none();
            self.take_details(&extra.reasoning_details, text_too, &mut emit);
        }
        if let Some(thinking) = delta.content.thinking.as_deref().filter(|t| !t.is_empty()) {
            self.thinking.push_str(thinking);
            if let Some(emit) = emit.as_mut() {
                emit(LlmEvent::ThinkingDelta(thinking.to_owned()));
            }
        }
        for piece in [delta.content.text.as_ref(), delta.refusal()] {
            if let Some(text) = piece.filter(|_| push(&mut self.text, piece))
                && let Some(emit) = emit.as_mut()
            {
                emit(LlmEvent::TextDelta(text.to_string()));
            }
        }
    }

    fn take_call(&mut self, fragment: &CallWire<'_>, whole: bool) {
        let index = fragment.index.unwrap_or(0);
        let id = fragment.id.as_deref().filter(|id| !id.is_empty());
        let function = fragment.function.as_ref();
        let name = function
            .and_then(|f| f.name.as_deref())
            .filter(|n| !n.is_empty());
        // The latest call at this index, unless this fragment starts another call: a
        // different id, or (servers that send no ids) a name after the named call's
        // arguments are already whole. An answer's calls are each whole and their own.
        let at = self
            .calls
            .iter()
            .rposition(|c| c.index == index)
            .filter(|&at| {
                let slot = &self.calls[at];
                !whole
                    && match id {
                        Some(id) => slot.id.is_empty() || slot.id == id,
                        None => name.is_none() || slot.name.is_empty() || !slot.is_whole(),
                    }
            });
        let at = at.unwrap_or_else(|| {
            // Most turns ask for one call: room for one, not the four a first push reserves.
            self.calls.reserve_exact(1);
            self.calls.push(CallSlot {
                index,
                ..CallSlot::default()
            });
            self.calls.len() - 1
        });
        let slot = &mut self.calls[at];
        if let Some(id) = id {
            id.clone_into(&mut slot.id);
        }
        if let Some(name) = name {
            name.clone_into(&mut slot.name);
        }
        match function.and_then(|f| f.arguments.as_ref()) {
            Some(Arguments::Text(text)) => slot.arguments.push_str(text),
            Some(Arguments::Value(value)) => slot.value = Some(Value::clone(value)),
            None => {}
        }
    }
}

impl Accumulator for ChatAccumulator<'_> {
    fn feed(&mut self, event: SseEvent<'_>, emit: &mut dyn FnMut(LlmEvent)) -> Result<()> {
        let ids = self.id.is_none() || self.model.is_none();
        let mut chunk = Chunk::default();
        chunk
            .fill(event.data, ids)
            .map_err(|e| json::unreadable(self.vendor(), &e, event.data))?;
        if let Some(error) = chunk.error.as_ref().filter(|e| !e.is_null()) {
            // A call the vendor refused ends the turn; any other error ends the stream.
            if let Some(message) = refused_call_message(error) {
                self.finish = Some(FinishReason::MalformedToolCall);
                self.finish_message = Some(message);
                return Ok(());
            }
            return Err(json::vendor_error(self.vendor(), error, event.data));
        }
        self.take(&chunk, Some(emit));
        Ok(())
    }

    fn done(&mut self) {
        self.done = true;
    }

    fn finish(&mut self) -> Result<CompletionResponse> {
        if self.finish.is_none() && !self.done {
            return Err(json::incomplete(
                self.vendor(),
                "a finish_reason or data: [DONE]",
            ));
        }
        // A filter that blocked part of the prompt or answer says so even when the turn
        // ended otherwise (Azure's asynchronous filter reports after the finish reason).
        if self.filtered {
            self.finish = Some(FinishReason::Filtered);
        }
        let mut blocks = Vec::new();
        match self.sealed.take() {
            None if self.thinking.is_empty() => {}
            None => blocks.push(Thinking::new(std::mem::take(&mut self.thinking)).into()),
            Some(sealed) => self.push_sealed(*sealed, &mut blocks),
        }
        if !self.text.is_empty() {
            blocks.push(Block::text(std::mem::take(&mut self.text)));
        }
        let finish = self.finish;
        let calls = std::mem::take(&mut self.calls)
            .into_iter()
            // A slot that got nothing at all is noise; one with an id or arguments but no
            // name is kept, and fails as an unknown tool rather than vanishing.
            .filter(|slot| {
                !(slot.name.is_empty()
                    && slot.id.is_empty()
                    && slot.arguments.is_empty()
                    && slot.value.is_none())
            })
            .map(|slot| {
                // Some servers send the object itself; anything else is kept as sent.
                let call = match slot.value {
                    Some(value) if slot.arguments.trim().is_empty() => {
                        call_from_value(&slot.name, Some(value))
                    }
                    _ => call_from_text(&slot.name, &slot.arguments, finish),
                };
                if slot.id.is_empty() {
                    call
                } else {
                    call.with_id(slot.id)
                }
            })
            .collect();
        // `[DONE]` (or an answer) without a finish reason: the server ended the turn without
        // saying why.
        let mut response = CompletionResponse::from_blocks(blocks)
            .with_tool_calls(calls)
            .with_finish_reason(self.finish.unwrap_or(FinishReason::Other));
        if let Some(usage) = self.usage {
            response = response.with_usage(usage);
        }
        if let Some(id) = self.id.take() {
            response = response.with_id(id);
        }
        if let Some(model) = self.model.take() {
            response = response.with_model(model);
        }
        if let Some(message) = self.finish_message.take() {
            response = response.with_finish_message(message);
        }
        Ok(response)
    }

    fn refused(&mut self, error: Error) -> Result<CompletionResponse> {
        refused_call(error)
    }
}

/// A server that could not use the tool call its model wrote says so with an error, not an
/// answer: Groq (and a gateway relaying it) with a 400 of code `tool_use_failed` when the
/// call does not fit the tool's schema (`failed_generation` holds what the model wrote);
/// llama.cpp ("Failed to parse tool call arguments as JSON") and Ollama ("error parsing tool
/// call") with a 500 when its arguments are not JSON, often cut at the output limit; each
/// also as an error event of a stream. That is the model's malformed call, not a failed
/// request (a 500 is first retried as any 500 is, since a new sample may come out whole): a
/// turn ending in [`FinishReason::MalformedToolCall`], the server's words kept, so the agent
/// tells the model and asks again. Nothing of the refused call is run. Every other error
/// stays the error it was. A streamed request refused before its body starts gives the same
/// turn ([`Accumulator::refused`]).
#[cold]
#[inline(never)]
pub(super) fn refused_call(error: Error) -> Result<CompletionResponse> {
    let refused = error
        .provider()
        .filter(|p| matches!(p.status(), Some(400 | 500)))
        .and_then(|p| {
            let body = p.body()?;
            match serde_json::from_str::<Value>(body) {
                Ok(value) => refused_call_message(value.get("error").unwrap_or(&value)),
                // The body's excerpt was cut: the message the error already read will do.
                Err(_) => (body.contains("tool_use_failed")
                    || UNPARSED_CALL.iter().any(|start| body.contains(start)))
                .then(|| p.message().to_owned()),
            }
        });
    match refused {
        Some(message) => Ok(CompletionResponse::default()
            .with_finish_reason(FinishReason::MalformedToolCall)
            .with_finish_message(message)),
        None => Err(error),
    }
}

/// How llama.cpp and Ollama begin the message of an error refusing their model's tool call.
const UNPARSED_CALL: [&str; 2] = [
    "Failed to parse tool call arguments as JSON",
    "error parsing tool call",
];

/// The server's words for an error object (or text) that refuses the model's tool call (see
/// [`refused_call`]): its message, then the model's own text (its first 2,000 characters)
/// when the server gave it apart.
#[cold]
#[inline(never)]
fn refused_call_message(error: &Value) -> Option<String> {
    let text = |key: &str| error.get(key).and_then(Value::as_str).unwrap_or_default();
    let message = error.as_str().unwrap_or_else(|| text("message")).trim();
    let refused = text("code") == "tool_use_failed"
        || UNPARSED_CALL.iter().any(|start| message.starts_with(start));
    if !refused {
        return None;
    }
    let mut message = message.to_owned();
    let generation = text("failed_generation").trim();
    if !generation.is_empty() {
        let cut: String = generation.chars().take(2000).collect();
        let more = if cut.len() < generation.len() {
            "..."
        } else {
            ""
        };
        for piece in [" What the model wrote: ", cut.as_str(), more] {
            message.push_str(piece);
        }
    }
    Some(message)
}
