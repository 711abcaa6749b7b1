//! `ResponsesAccumulator`: one Responses turn assembled from its stream events, or read from
//! a whole answer as the items it holds.

use harness_core::{
    Block, CompletionResponse, Error, FinishReason, HostedCall, LlmEvent, ProviderErrorKind,
    Result, Thinking, TokenUsage, content::merge_blocks,
};
use serde_json::Value;

use super::FORMAT;
use super::events::UsageIn;
use super::events::{EventIn, ItemIn, ResponseIn, TerminalIn};
use crate::rest::json::{self, Vendor};
use crate::rest::{Accumulator, SseEvent};
use crate::wire::{Str, call_from_text, keep_first};

/// What an output item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Message,
    FunctionCall,
    Reasoning,
    /// A hosted tool's call, or any item this library does not read otherwise.
    Hosted,
}

impl Kind {
    fn of(kind: Option<&str>) -> Self {
        match kind {
            Some("message") | None => Self::Message,
            Some("function_call") => Self::FunctionCall,
            Some("reasoning") => Self::Reasoning,
            Some(_) => Self::Hosted,
        }
    }
}

/// One output item being assembled, at its place in the response's `output`.
struct Slot {
    index: usize,
    kind: Kind,
    id: String,
    call_id: String,
    name: String,
    /// A message's text, a call's arguments, a reasoning item's summary.
    text: String,
    /// The summary part the last reasoning delta belonged to.
    part: Option<usize>,
    encrypted: Option<String>,
    /// A message's citations.
    citations: Vec<Value>,
    hosted: Option<Box<HostedCall>>,
    /// Whether the whole item has been read (not only its deltas).
    whole: bool,
}

impl Slot {
    fn new(index: usize, kind: Kind) -> Self {
        Self {
            index,
            kind,
            id: String::new(),
            call_id: String::new(),
            name: String::new(),
            text: String::new(),
            part: None,
            encrypted: None,
            citations: Vec::new(),
            hosted: None,
            whole: false,
        }
    }
}

/// Reads the Responses API: a stream's events (text, reasoning summaries and call arguments
/// appended by output index as they arrive; each item taken whole at
/// `response.output_item.done`; the status and usage from `response.completed` or
/// `response.incomplete`, without which the turn is not whole), and a non-streamed answer as
/// its items taken whole, then its status and usage.
pub(crate) struct ResponsesAccumulator<'v> {
    vendor: Vendor<'v>,
    id: Option<String>,
    model: Option<String>,
    slots: Vec<Slot>,
    usage: Option<TokenUsage>,
    finish: Option<FinishReason>,
    /// Whether the turn's terminal event (or a whole answer) has been read.
    ended: bool,
}

impl<'v> ResponsesAccumulator<'v> {
    pub(crate) fn new(vendor: Vendor<'v>) -> Self {
        Self {
            vendor,
            id: None,
            model: None,
            slots: Vec::new(),
            usage: None,
            finish: None,
            ended: false,
        }
    }

    /// Reads a non-streamed answer (`path` names the endpoint in errors).
    pub(crate) fn answer(mut self, path: &str, body: &[u8]) -> Result<CompletionResponse> {
        let vendor = self.vendor;
        let response: ResponseIn<'_> = json::answer(vendor, path, body)?;
        if let Some(error) = response.error.as_ref().filter(|e| !e.is_null()) {
            return Err(failure(vendor, error, &String::from_utf8_lossy(body)));
        }
        if response.status.as_deref() == Some("failed") {
            return Err(failure(
                vendor,
                &Value::Null,
                &String::from_utf8_lossy(body),
            ));
        }
        let output = json::required(vendor, response.output.as_ref(), "output", body)?;
        // A hosted call is kept as sent: its items are read again as JSON values.
        let raw = if output
            .iter()
            .any(|i| Kind::of(i.kind.as_deref()) == Kind::Hosted)
        {
            serde_json::from_slice::<Value>(body)
                .ok()
                .and_then(|mut v| v.get_mut("output").map(Value::take))
        } else {
            None
        };
        for (index, item) in output.iter().enumerate() {
            let raw = raw.as_ref().and_then(|r| r.get(index)).cloned();
            self.take_item(index, item, raw, None);
        }
        self.end(
            response.id.as_ref(),
            response.model.as_ref(),
            response.status.as_deref(),
            reason(response.incomplete_details.as_ref()),
            response.blocked,
            response.usage.as_ref(),
        );
        // An answer without a status says nothing of how it ended.
        if response.status.is_none() {
            self.finish = Some(FinishReason::Other);
        }
        self.finish()
    }

    /// The slot of output item `index`, made when it is new.
    fn slot(&mut self, index: usize, kind: Kind) -> &mut Slot {
        let at = match self.slots.iter().rposition(|s| s.index == index) {
            Some(at) => at,
            None => {
                self.slots.reserve_exact(1);
                self.slots.push(Slot::new(index, kind));
                self.slots.len() - 1
            }
        };
        &mut self.slots[at]
    }

    /// Where a delta goes: its `output_index`, else the item its `item_id` names, else the
    /// first item.
    fn place(&self, event: &EventIn<'_>) -> usize {
        event.output_index.unwrap_or_else(|| {
            let named = event
                .item_id
                .as_deref()
                .and_then(|id| self.slots.iter().find(|s| s.id == id));
            named.map_or(0, |s| s.index)
        })
    }

    /// `response.output_item.added`: the item's identity, before its deltas.
    fn item_added(&mut self, index: usize, item: &ItemIn<'_>) {
        let kind = Kind::of(item.kind.as_deref());
        let slot = self.slot(index, kind);
        slot.kind = kind;
        for (field, value) in [
            (&mut slot.id, &item.id),
            (&mut slot.call_id, &item.call_id),
            (&mut slot.name, &item.name),
        ] {
            if let Some(value) = value.as_deref().filter(|v| !v.is_empty()) {
                value.clone_into(field);
            }
        }
        if let Some(encrypted) = item.encrypted_content.as_deref() {
            slot.encrypted = Some(encrypted.to_owned());
        }
    }

    /// A whole item: `response.output_item.done`, or an answer's (`emit` `None`). `raw` is
    /// its JSON value, for a hosted call.
    fn take_item(
        &mut self,
        index: usize,
        item: &ItemIn<'_>,
        raw: Option<Value>,
        emit: Option<&mut dyn FnMut(LlmEvent)>,
    ) {
        self.item_added(index, item);
        let slot = self.slot(index, Kind::of(item.kind.as_deref()));
        slot.whole = true;
        let mut whole = String::new();
        match slot.kind {
            Kind::Message => {
                slot.citations.clear();
                for part in &item.content.0 {
                    if let Some(text) = part.text.as_deref().or(part.refusal.as_deref()) {
                        whole.push_str(text);
                    }
                    if let Some(annotations) = &part.annotations {
                        slot.citations.extend(annotations.iter().cloned());
                    }
                }
            }
            Kind::FunctionCall => {
                whole.push_str(item.arguments.as_deref().unwrap_or_default());
            }
            Kind::Reasoning => {
                // The summary the model shows; a model that shows its reasoning itself
                // (`reasoning_text` content) gives that instead.
                let parts = if item.summary.0.is_empty() {
                    &item.content.0
                } else {
                    &item.summary.0
                };
                for (i, text) in parts.iter().filter_map(|p| p.text.as_deref()).enumerate() {
                    if i > 0 {
                        whole.push_str("\n\n");
                    }
                    whole.push_str(text);
                }
            }
            Kind::Hosted => {}
        }
        // The whole item's text is the text; an item without any (a server that sends it
        // empty) does not undo the deltas read before it.
        if !whole.is_empty() {
            slot.text = whole;
        }
        match slot.kind {
            Kind::Message | Kind::FunctionCall | Kind::Reasoning => {}
            Kind::Hosted => {
                let call = hosted_call(
                    item.kind.as_deref().unwrap_or("hosted_call"),
                    &slot.id,
                    raw.unwrap_or(Value::Null),
                );
                if let Some(emit) = emit {
                    emit(LlmEvent::HostedCall(Box::new(call.clone())));
                }
                slot.hosted = Some(Box::new(call));
            }
        }
    }

    /// A terminal response (`response.completed`, `response.incomplete`, or an answer): its
    /// id, model, status, why it is incomplete, and usage.
    fn end(
        &mut self,
        id: Option<&Str<'_>>,
        model: Option<&Str<'_>>,
        status: Option<&str>,
        reason: Option<&str>,
        blocked: bool,
        usage: Option<&UsageIn>,
    ) {
        keep_first(&mut self.id, id);
        keep_first(&mut self.model, model);
        if let Some(usage) = usage {
            self.usage = Some(usage.usage());
        }
        self.finish = Some(match status {
            Some("completed") => FinishReason::Stop,
            Some("incomplete") => match reason {
                Some("max_output_tokens") => FinishReason::Length,
                Some("content_filter") => FinishReason::Filtered,
                _ => FinishReason::Other,
            },
            _ => FinishReason::Other,
        });
        // Azure says what its content filters blocked apart from the status.
        if blocked {
            self.finish = Some(FinishReason::Filtered);
        }
        self.ended = true;
    }

    /// A delta of text, reasoning or call arguments.
    fn delta(&mut self, event: &EventIn<'_>, kind: Kind, emit: &mut dyn FnMut(LlmEvent)) {
        let Some(delta) = event.delta.as_deref().filter(|d| !d.is_empty()) else {
            return;
        };
        let index = self.place(event);
        let slot = self.slot(index, kind);
        if slot.whole {
            return;
        }
        match kind {
            Kind::Message => {
                slot.text.push_str(delta);
                emit(LlmEvent::TextDelta(delta.to_owned()));
            }
            Kind::Reasoning => {
                // Summary parts are joined with a blank line, as a whole item's are.
                let part = event.summary_index;
                let new_part = part.is_some() && slot.part.is_some_and(|p| Some(p) != part);
                if part.is_some() {
                    slot.part = part;
                }
                let piece = if new_part && !slot.text.is_empty() {
                    format!("\n\n{delta}")
                } else {
                    delta.to_owned()
                };
                slot.text.push_str(&piece);
                emit(LlmEvent::ThinkingDelta(piece));
            }
            Kind::FunctionCall | Kind::Hosted => slot.text.push_str(delta),
        }
    }

    /// The items a terminal response holds that the stream did not give whole (a server
    /// that sends no `response.output_item.done`), read from the event's JSON.
    #[cold]
    #[inline(never)]
    fn fill_from(&mut self, response: &ResponseIn<'_>, data: &str, emit: &mut dyn FnMut(LlmEvent)) {
        let Some(output) = &response.output else {
            return;
        };
        let missing = |s: &Self, index: usize| !s.slots.iter().any(|s| s.index == index && s.whole);
        if !(0..output.len()).any(|i| missing(self, i)) {
            return;
        }
        let raw = serde_json::from_str::<Value>(data)
            .ok()
            .and_then(|mut v| v.pointer_mut("/response/output").map(Value::take));
        for (index, item) in output.iter().enumerate() {
            // A slot that only got deltas keeps them when the item is empty.
            if missing(self, index) {
                let raw = raw.as_ref().and_then(|r| r.get(index)).cloned();
                self.take_item(index, item, raw, Some(emit));
            }
        }
    }
}

impl ResponsesAccumulator<'_> {
    /// A terminal event whose items the stream already gave whole.
    fn terminal(&mut self, data: &str) -> Result<()> {
        let terminal: TerminalIn<'_> =
            serde_json::from_str(data).map_err(|e| json::unreadable(self.vendor, &e, data))?;
        match terminal.response {
            Some(head) => self.end(
                head.id.as_ref(),
                head.model.as_ref(),
                head.status.as_deref(),
                reason(head.incomplete_details.as_ref()),
                head.blocked,
                head.usage.as_ref(),
            ),
            None => {
                self.ended = true;
                self.finish = Some(FinishReason::Other);
            }
        }
        Ok(())
    }

    /// The error a `response.failed` event (its response's `error`) or an `error` event (its
    /// fields at the top level, or in an `error` object) reports.
    #[cold]
    #[inline(never)]
    fn failed(&self, event: &EventIn<'_>, data: &str) -> Error {
        if let Some(response) = &event.response {
            return failure(
                self.vendor,
                response.error.as_ref().unwrap_or(&Value::Null),
                data,
            );
        }
        let error = match (
            &event.error,
            event.code.as_deref(),
            event.message.as_deref(),
        ) {
            (Some(error), _, _) if !error.is_null() => error.clone(),
            (_, code, message) => serde_json::json!({"code": code, "message": message}),
        };
        failure(self.vendor, &error, data)
    }
}

/// The events read; any other the service names by its `event:` line is skipped unread (a
/// stream without event names is read event by event).
const READ: [&str; 11] = [
    "response.output_text.delta",
    "response.refusal.delta",
    "response.reasoning_summary_text.delta",
    "response.reasoning_text.delta",
    "response.function_call_arguments.delta",
    "response.output_item.added",
    "response.output_item.done",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "error",
];

fn reason<'a>(details: Option<&'a super::events::IncompleteIn<'_>>) -> Option<&'a str> {
    details.and_then(|d| d.reason.as_deref())
}

impl Accumulator for ResponsesAccumulator<'_> {
    // One match over the API's events, each arm short: split, it would read worse.
    #[allow(clippy::too_many_lines)]
    fn feed(&mut self, event: SseEvent<'_>, emit: &mut dyn FnMut(LlmEvent)) -> Result<()> {
        let data = event.data;
        let named = event.event != "message";
        if named && !READ.contains(&event.event) {
            return Ok(());
        }
        // Every item given whole: the terminal event is read for its status and usage alone.
        if named
            && matches!(event.event, "response.completed" | "response.incomplete")
            && !self.slots.is_empty()
            && self.slots.iter().all(|s| s.whole)
        {
            return self.terminal(data);
        }
        let event: EventIn<'_> =
            serde_json::from_str(data).map_err(|e| json::unreadable(self.vendor, &e, data))?;
        let Some(kind) = event.kind.as_deref() else {
            return Ok(());
        };
        match kind {
            "response.output_text.delta" | "response.refusal.delta" => {
                self.delta(&event, Kind::Message, emit);
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                self.delta(&event, Kind::Reasoning, emit);
            }
            "response.function_call_arguments.delta" => {
                self.delta(&event, Kind::FunctionCall, emit);
            }
            "response.output_item.added" => {
                if let Some(item) = &event.item {
                    let index = self.place(&event);
                    self.item_added(index, item);
                }
            }
            "response.output_item.done" => {
                if let Some(item) = &event.item {
                    let index = self.place(&event);
                    let raw = (Kind::of(item.kind.as_deref()) == Kind::Hosted)
                        .then(|| {
                            serde_json::from_str::<Value>(data)
                                .ok()
                                .and_then(|mut v| v.get_mut("item").map(Value::take))
                        })
                        .flatten();
                    self.take_item(index, item, raw, Some(emit));
                }
            }
            "response.created" | "response.in_progress" => {
                if let Some(response) = &event.response {
                    keep_first(&mut self.id, response.id.as_ref());
                    keep_first(&mut self.model, response.model.as_ref());
                }
            }
            "response.completed" | "response.incomplete" => {
                if let Some(response) = &event.response {
                    self.fill_from(response, data, emit);
                    self.end(
                        response.id.as_ref(),
                        response.model.as_ref(),
                        response.status.as_deref(),
                        reason(response.incomplete_details.as_ref()),
                        response.blocked,
                        response.usage.as_ref(),
                    );
                } else {
                    self.ended = true;
                    self.finish = Some(FinishReason::Other);
                }
            }
            "response.failed" | "error" => return Err(self.failed(&event, data)),
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<CompletionResponse> {
        if !self.ended {
            return Err(json::incomplete(
                self.vendor,
                "response.completed or response.incomplete",
            ));
        }
        let finish = self.finish.unwrap_or(FinishReason::Other);
        let mut slots = std::mem::take(&mut self.slots);
        slots.sort_by_key(|s| s.index);
        let mut blocks: Vec<Block> = Vec::new();
        let mut calls = Vec::new();
        // Citations of text no hosted call came before: the next call's.
        let mut pending: Vec<Value> = Vec::new();
        for slot in slots {
            match slot.kind {
                Kind::Message => {
                    if !slot.citations.is_empty() {
                        let last = blocks.iter_mut().rev().find_map(|b| match b {
                            Block::HostedCall(call) => Some(call),
                            _ => None,
                        });
                        match last {
                            Some(call) => call.citations.extend(slot.citations),
                            None => pending.extend(slot.citations),
                        }
                    }
                    if !slot.text.is_empty() {
                        blocks.push(Block::text(slot.text));
                    }
                }
                Kind::Reasoning => {
                    if slot.id.is_empty() && slot.text.is_empty() && slot.encrypted.is_none() {
                        continue;
                    }
                    let mut thinking = match slot.encrypted {
                        Some(data) => {
                            let mut t = Thinking::redacted(data);
                            t.text = slot.text;
                            t
                        }
                        None => Thinking::new(slot.text),
                    }
                    .from_provider(FORMAT);
                    if !slot.id.is_empty() {
                        thinking = thinking.with_id(slot.id);
                    }
                    blocks.push(thinking.into());
                }
                Kind::FunctionCall => {
                    if slot.name.is_empty() && slot.call_id.is_empty() && slot.text.is_empty() {
                        continue;
                    }
                    let call = call_from_text(&slot.name, &slot.text, Some(finish));
                    let id = if slot.call_id.is_empty() {
                        slot.id
                    } else {
                        slot.call_id
                    };
                    calls.push(if id.is_empty() {
                        call
                    } else {
                        call.with_id(id)
                    });
                }
                Kind::Hosted => {
                    let mut call = slot.hosted.unwrap_or_else(|| {
                        // Deltas only, never the whole item: what is known of it.
                        Box::new(hosted_call("hosted_call", &slot.id, Value::Null))
                    });
                    call.citations.append(&mut pending);
                    blocks.push(Block::HostedCall(call));
                }
            }
        }
        let mut response = CompletionResponse::from_blocks(merge_blocks(blocks))
            .with_tool_calls(calls)
            .with_finish_reason(finish);
        if let Some(usage) = self.usage {
            response = response.with_usage(usage);
        }
        if let Some(id) = self.id.take() {
            response = response.with_id(id);
        }
        if let Some(model) = self.model.take() {
            response = response.with_model(model);
        }
        Ok(response)
    }
}

/// A hosted call of `kind` read from its item as the vendor sent it.
fn hosted_call(kind: &str, id: &str, raw: Value) -> HostedCall {
    let text = |key: &str| raw.get(key).and_then(Value::as_str).map(str::to_owned);
    let list = |key: &str| match raw.get(key) {
        Some(Value::Array(items)) => items.clone(),
        _ => Vec::new(),
    };
    let id = text("id").unwrap_or_else(|| id.to_owned());
    let mut call = HostedCall::new(kind, id).from_provider(FORMAT);
    call.status = text("status");
    match kind {
        "web_search_call" => {
            let action = raw.get("action");
            call.query = action
                .and_then(|a| a.get("query"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            if let Some(Value::Array(sources)) = action.and_then(|a| a.get("sources")) {
                call.results.clone_from(sources);
            }
        }
        "file_search_call" => {
            let queries: Vec<&str> = raw
                .get("queries")
                .and_then(Value::as_array)
                .map(|q| q.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            call.query = (!queries.is_empty()).then(|| queries.join("\n"));
            call.results = list("results");
        }
        "code_interpreter_call" => {
            call.code = text("code");
            call.results = list("outputs");
            let logs: Vec<&str> = call
                .results
                .iter()
                .filter(|o| o.get("type").and_then(Value::as_str) == Some("logs"))
                .filter_map(|o| o.get("logs").and_then(Value::as_str))
                .collect();
            call.output = (!logs.is_empty()).then(|| logs.concat());
        }
        "mcp_call" | "mcp_approval_request" => {
            call.server = text("server_label");
            call.tool = text("name");
            call.arguments = text("arguments");
            call.output = text("output");
        }
        "mcp_list_tools" => {
            call.server = text("server_label");
            call.results = list("tools");
        }
        _ => {}
    }
    call.error = match raw.get("error") {
        None | Some(Value::Null) => None,
        Some(Value::String(message)) => Some(message.clone()),
        Some(other) => Some(
            other
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| other.to_string(), str::to_owned),
        ),
    };
    call.with_raw(raw)
}

/// The vendor's own error (a failed response's `error`, an `error` event, a 200 body's
/// `error` object), as a [`Vendor`](ProviderErrorKind::Vendor) error keeping its code (else
/// its type) and message; `data` is the body or event it came in.
pub(crate) fn failure(vendor: Vendor<'_>, error: &Value, data: &str) -> Error {
    let text = |key: &str| {
        error.get(key).and_then(|v| match v {
            Value::String(s) if !s.is_empty() => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
    };
    let (code, message) = match error {
        Value::String(message) => (None, Some(message.clone())),
        _ => (text("code").or_else(|| text("type")), text("message")),
    };
    let message = message.unwrap_or_else(|| format!("the {vendor} response failed"));
    let mut failure = vendor
        .error(ProviderErrorKind::Vendor, message)
        .with_body(data);
    if let Some(code) = code {
        failure = failure.with_error_type(code);
    }
    failure.into()
}
