//! Anthropic's Messages API.

use std::borrow::Cow;

use harness_core::{
    Block, BoxStream, CompletionResponse, Content, Error, FinishReason, Llm, LlmEvent, Message,
    ModelSettings, Request, Result, Role, Thinking, TokenUsage, ToolCall, ToolChoice, ToolSpec,
    content::merge_blocks,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::http::{Connection, HttpClient, connection_setters};
use crate::openai::call_from_text;
use crate::rest::{self, Accumulator, StreamRequest, required};
use crate::wire::{Text, count};

const VERSION: &str = "2023-06-01";

/// A Claude model behind Anthropic's Messages API.
///
/// Thinking comes back as [`Thinking`] blocks with their signature, and is replayed with its
/// turn (Anthropic requires it after a tool call); unsigned thinking is not sent.
/// `cache_prompt` puts cache breakpoints on the system prompt and the last tool, the part of
/// an agent's request that repeats every turn. Anthropic requires an output limit: 4096
/// tokens unless the settings say otherwise, raised to fit a thinking budget. A structured
/// output goes through the `final_answer` tool.
///
/// ```no_run
/// use harness_providers::Anthropic;
/// use harness_core::{ModelSettings, ReasoningLevel};
///
/// let model = Anthropic::builder("claude-sonnet-4-20250514")
///     .settings(ModelSettings::new().with_reasoning(ReasoningLevel::Low))
///     .cache_prompt(true)
///     .build()?;
/// # Ok::<(), harness_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Anthropic {
    client: HttpClient,
    model: String,
    defaults: ModelSettings,
    cache_prompt: bool,
}

/// The output limit Anthropic requires when the settings name none.
const DEFAULT_MAX_TOKENS: u32 = 4096;

/// Builds an [`Anthropic`] model.
#[derive(Debug, Clone)]
#[must_use = "call build() to get the model"]
pub struct AnthropicBuilder {
    model: String,
    connection: Connection,
    defaults: ModelSettings,
    cache_prompt: bool,
}

impl Anthropic {
    /// `model`, with the key from `ANTHROPIC_API_KEY` and the base URL from
    /// `ANTHROPIC_BASE_URL` when set.
    ///
    /// # Errors
    /// As [`AnthropicBuilder::build`].
    pub fn new(model: impl Into<String>) -> Result<Self> {
        Self::builder(model).build()
    }

    /// A builder for `model`.
    pub fn builder(model: impl Into<String>) -> AnthropicBuilder {
        AnthropicBuilder {
            model: model.into(),
            connection: Connection::default(),
            defaults: ModelSettings::default(),
            cache_prompt: false,
        }
    }

    /// The model's name as the service knows it.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The HTTP client, with its configuration (base URL, timeouts, retries, concurrency).
    pub fn client(&self) -> &HttpClient {
        &self.client
    }

    /// The default settings, under each request's.
    pub fn settings(&self) -> &ModelSettings {
        &self.defaults
    }

    /// The request body: `model`, `max_tokens`, `messages` and only what is set.
    pub fn request_body(&self, request: &Request<'_>, stream: bool) -> Value {
        let settings = request.settings.over(&self.defaults);
        let tools = request.tools;
        let mut body = Map::new();
        body.insert("model".into(), Value::from(self.model.as_str()));
        let mut max_tokens = settings.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
        let mut thinking = None;
        if let Some(level) = settings.reasoning {
            let budget = level.budget_tokens();
            max_tokens = max_tokens.max(budget + 1024);
            thinking = Some(json!({"type": "enabled", "budget_tokens": budget}));
        }
        body.insert("max_tokens".into(), Value::from(max_tokens));
        if let Some(t) = settings.temperature {
            body.insert("temperature".into(), Value::from(t));
        }
        if let Some(p) = settings.top_p {
            body.insert("top_p".into(), Value::from(p));
        }
        if !settings.stop.is_empty() {
            body.insert("stop_sequences".into(), Value::from(settings.stop.clone()));
        }
        let (system, wire_messages) = messages_to_wire(request.messages);
        body.insert("messages".into(), Value::Array(wire_messages));
        if let Some(system) = system {
            let system = if self.cache_prompt {
                json!([{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}])
            } else {
                Value::from(system)
            };
            body.insert("system".into(), system);
        }
        if !tools.is_empty() {
            let mut wire_tools: Vec<Value> = tools.iter().map(tool_to_wire).collect();
            if self.cache_prompt
                && let Some(Value::Object(last)) = wire_tools.last_mut()
            {
                last.insert("cache_control".into(), json!({"type": "ephemeral"}));
            }
            body.insert("tools".into(), Value::Array(wire_tools));
            if let Some(choice) = tool_choice(&settings) {
                body.insert("tool_choice".into(), choice);
            }
        }
        if let Some(thinking) = thinking {
            body.insert("thinking".into(), thinking);
        }
        if stream {
            body.insert("stream".into(), Value::Bool(true));
        }
        Value::Object(body)
    }
}

impl AnthropicBuilder {
    connection_setters!();

    /// Default settings for every request, under the agent's and the run's: the output
    /// limit (Anthropic requires one: 4096 when unset), temperature, extended thinking
    /// (`with_reasoning`, its level's token budget), ...
    pub fn settings(mut self, settings: ModelSettings) -> Self {
        self.defaults = settings;
        self
    }

    /// Cache breakpoints on the system prompt and the last tool.
    pub fn cache_prompt(mut self, on: bool) -> Self {
        self.cache_prompt = on;
        self
    }

    /// The model.
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error for a `max_tokens` setting
    /// of 0, `max_concurrency` 0 or a key that is not a valid header.
    pub fn build(self) -> Result<Anthropic> {
        if self.defaults.max_tokens == Some(0) {
            return Err(Error::configuration(
                "Anthropic max_tokens must be at least 1, got 0",
            ));
        }
        let mut config = self.connection.config(
            "anthropic",
            "https://api.anthropic.com/v1",
            Some("ANTHROPIC_BASE_URL"),
        );
        if let Some(key) = self.connection.key(&["ANTHROPIC_API_KEY"]) {
            config.headers.push(("x-api-key".into(), key));
        }
        config
            .headers
            .push(("anthropic-version".into(), VERSION.into()));
        Ok(Anthropic {
            client: HttpClient::new(config)?,
            model: self.model,
            defaults: self.defaults,
            cache_prompt: self.cache_prompt,
        })
    }
}

#[async_trait::async_trait]
impl Llm for Anthropic {
    async fn generate(&self, request: Request<'_>) -> Result<CompletionResponse> {
        let body = self.request_body(&request, false);
        let answer = self.client.post_json("/messages", &body).await?;
        parse_response(&answer)
    }

    fn stream_events<'a>(&'a self, request: Request<'a>) -> BoxStream<'a, Result<LlmEvent>> {
        rest::stream(
            &self.client,
            StreamRequest {
                path: "/messages".into(),
                body: self.request_body(&request, true),
                accumulator: MessagesAccumulator::default(),
            },
        )
    }

    fn name(&self) -> String {
        format!("anthropic:{}", self.model)
    }
}

/// `tool_choice` for the settings, when they say anything: Anthropic's `any` is "required";
/// one turn, one call is `disable_parallel_tool_use`.
fn tool_choice(settings: &ModelSettings) -> Option<Value> {
    let mut choice = match &settings.tool_choice {
        None if settings.parallel_tool_calls != Some(false) => return None,
        Some(ToolChoice::None) => return Some(json!({"type": "none"})),
        Some(ToolChoice::Required) => json!({"type": "any"}),
        Some(ToolChoice::Tool(name)) => json!({"type": "tool", "name": name}),
        // Auto, and a choice added later that Anthropic cannot say.
        None | Some(_) => json!({"type": "auto"}),
    };
    if settings.parallel_tool_calls == Some(false) {
        choice["disable_parallel_tool_use"] = Value::Bool(true);
    }
    Some(choice)
}

fn tool_to_wire(tool: &ToolSpec) -> Value {
    let schema = if tool.parameters.is_object() {
        tool.parameters.clone()
    } else {
        json!({"type": "object", "properties": {}})
    };
    json!({"name": tool.name, "description": tool.description, "input_schema": schema})
}

/// The system prompt (every system message's text, joined) and the messages in Messages API
/// form; consecutive tool results travel in one user message.
fn messages_to_wire(messages: &[Message]) -> (Option<String>, Vec<Value>) {
    let mut system: Vec<String> = Vec::new();
    let mut wire: Vec<Value> = Vec::new();
    let mut open_results: Option<Vec<Value>> = None;
    let flush = |wire: &mut Vec<Value>, open: &mut Option<Vec<Value>>| {
        if let Some(results) = open.take() {
            wire.push(json!({"role": "user", "content": results}));
        }
    };
    for message in messages {
        match message.role {
            Role::System => system.push(message.content.text().into_owned()),
            Role::Tool => open_results.get_or_insert_with(Vec::new).push(json!({
                "type": "tool_result",
                "tool_use_id": message.tool_call_id.as_deref().unwrap_or(""),
                // Text alone as a string; with images or documents, as content blocks.
                "content": content_to_wire(&message.content),
            })),
            Role::Assistant if !message.tool_calls.is_empty() => {
                flush(&mut wire, &mut open_results);
                let mut content = blocks_to_wire(&message.content);
                content.extend(message.tool_calls.iter().map(|call| {
                    json!({
                        "type": "tool_use",
                        "id": call.id.as_deref().unwrap_or(""),
                        "name": call.name,
                        "input": Value::Object(call.arguments.clone()),
                    })
                }));
                wire.push(json!({"role": "assistant", "content": content}));
            }
            role => {
                flush(&mut wire, &mut open_results);
                wire.push(
                    json!({"role": role.as_str(), "content": content_to_wire(&message.content)}),
                );
            }
        }
    }
    flush(&mut wire, &mut open_results);
    let system = (!system.is_empty()).then(|| system.join("\n"));
    (system, wire)
}

fn content_to_wire(content: &Content) -> Value {
    match content {
        Content::Text(text) => Value::from(text.as_str()),
        Content::Blocks(_) => Value::Array(blocks_to_wire(content)),
    }
}

fn blocks_to_wire(content: &Content) -> Vec<Value> {
    content
        .blocks()
        .iter()
        .filter_map(|block| match block {
            Block::Text(t) if t.text.is_empty() => None,
            Block::Text(t) => Some(json!({"type": "text", "text": t.text})),
            Block::Thinking(Thinking {
                text,
                signature: Some(signature),
            }) => Some(json!({"type": "thinking", "thinking": text, "signature": signature})),
            Block::Thinking(_) => None,
            Block::Image(image) => Some(match image.url() {
                Some(url) => json!({"type": "image", "source": {"type": "url", "url": url}}),
                None => json!({"type": "image", "source": {
                    "type": "base64",
                    "media_type": image.media_type().unwrap_or("image/png"),
                    "data": image.data().unwrap_or_default(),
                }}),
            }),
            Block::Document(doc) => Some(json!({"type": "document", "source": {
                "type": "base64", "media_type": doc.media_type, "data": doc.data,
            }})),
        })
        .collect()
}

fn stop_reason(value: &str) -> FinishReason {
    match value {
        "end_turn" | "stop_sequence" | "tool_use" => FinishReason::Stop,
        "max_tokens" => FinishReason::Length,
        "refusal" => FinishReason::Filtered,
        _ => FinishReason::Other,
    }
}

/// Anthropic's counts, merged key by key: a key present replaces, an absent one keeps.
#[derive(Default, Clone, Copy)]
struct UsageParts {
    input: Option<u64>,
    output: Option<u64>,
    cache_read: Option<u64>,
    cache_write: Option<u64>,
}

impl UsageParts {
    fn merge(&mut self, usage: &Value) {
        // A key present (even null) replaces; counts saturate, never overflow.
        let at = |key: &str| usage.get(key).map(count);
        self.input = at("input_tokens").or(self.input);
        self.output = at("output_tokens").or(self.output);
        self.cache_read = at("cache_read_input_tokens").or(self.cache_read);
        self.cache_write = at("cache_creation_input_tokens").or(self.cache_write);
    }

    fn seen(&self) -> bool {
        self.input.is_some() || self.output.is_some()
    }

    /// Anthropic's `input_tokens` leaves out what was read from or written to the cache;
    /// the prompt count here puts them back, so cached tokens stay inside it as everywhere
    /// else.
    fn usage(&self) -> TokenUsage {
        let (read, write) = (self.cache_read.unwrap_or(0), self.cache_write.unwrap_or(0));
        let prompt = self
            .input
            .unwrap_or(0)
            .saturating_add(read)
            .saturating_add(write);
        let completion = self.output.unwrap_or(0);
        TokenUsage::new(prompt, completion, prompt.saturating_add(completion))
            .with_cached(read)
            .with_cache_write(write)
    }
}

/// Reads a non-streamed Messages answer.
///
/// # Errors
/// A [`Provider`](harness_core::ErrorKind::Provider) error naming what a required part of the
/// answer lacks.
pub fn parse_response(answer: &Value) -> Result<CompletionResponse> {
    let content = required("Anthropic", answer, "content")?;
    let mut blocks = Vec::new();
    let mut calls = Vec::new();
    for block in content.as_array().into_iter().flatten() {
        let kind = required("Anthropic", block, "type")?
            .as_str()
            .unwrap_or_default();
        let text = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default();
        match kind {
            "text" if !text("text").is_empty() => blocks.push(Block::text(text("text"))),
            "thinking" if !text("thinking").is_empty() => {
                let thinking = match block.get("signature").and_then(Value::as_str) {
                    Some(signature) => Thinking::signed(text("thinking"), signature),
                    None => Thinking::new(text("thinking")),
                };
                blocks.push(thinking.into());
            }
            "tool_use" if !text("name").is_empty() => {
                // An input that is not an object is kept as sent; such a call is not run.
                let input = block.get("input").cloned().unwrap_or(Value::Null);
                let mut call = ToolCall::new(text("name"), input);
                if !text("id").is_empty() {
                    call = call.with_id(text("id"));
                }
                calls.push(call);
            }
            _ => {}
        }
    }
    // A missing stop reason is not a finished answer.
    let finish = answer
        .get("stop_reason")
        .and_then(Value::as_str)
        .map_or(FinishReason::Other, stop_reason);
    if finish == FinishReason::Length
        && let Some(last) = calls.pop()
    {
        // Anthropic: a tool_use cut by max_tokens may hold incomplete input.
        let mut cut = ToolCall::new(last.name.clone(), Value::Null);
        cut.raw_arguments = Some(last.arguments_text());
        cut.id = last.id;
        calls.push(cut);
    }
    let mut response = CompletionResponse::from_blocks(blocks)
        .with_tool_calls(calls)
        .with_finish_reason(finish);
    if let Some(usage) = answer
        .get("usage")
        .filter(|u| u.as_object().is_some_and(|m| !m.is_empty()))
    {
        let mut parts = UsageParts::default();
        parts.merge(usage);
        response = response.with_usage(parts.usage());
    }
    Ok(response)
}

// Streaming ----------------------------------------------------------------------------------

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(borrow, rename = "type")]
    kind: Cow<'a, str>,
    #[serde(default)]
    index: Option<usize>,
    #[serde(borrow, default)]
    content_block: Option<BlockStart<'a>>,
    #[serde(borrow, default)]
    delta: Option<DeltaBody<'a>>,
    #[serde(default)]
    message: Option<MessageStart>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct BlockStart<'a> {
    #[serde(borrow, rename = "type")]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    id: Text<'a>,
    #[serde(borrow, default)]
    name: Text<'a>,
    /// A tool_use's input as the block starts: `{}` from Anthropic, which then streams the
    /// input; a proxy may send it whole here instead.
    #[serde(default)]
    input: Option<Value>,
}

#[derive(Deserialize)]
struct DeltaBody<'a> {
    #[serde(borrow, rename = "type", default)]
    kind: Text<'a>,
    #[serde(borrow, default)]
    text: Text<'a>,
    #[serde(borrow, default)]
    thinking: Text<'a>,
    #[serde(borrow, default)]
    signature: Text<'a>,
    #[serde(borrow, default)]
    partial_json: Text<'a>,
    #[serde(borrow, default)]
    stop_reason: Text<'a>,
}

#[derive(Deserialize)]
struct MessageStart {
    #[serde(default)]
    usage: Option<Value>,
}

enum Slot {
    Content {
        thinking: bool,
        text: String,
        signature: Option<String>,
    },
    Tool {
        id: String,
        name: String,
        arguments: String,
        /// The input the block started with, when it was not empty.
        started_with: Option<Value>,
    },
}

/// Assembles a Messages stream: content slots by index (a block started again at a taken
/// index is another block, never merged into or replacing the first), usage merged from
/// `message_start` and `message_delta`. The turn is whole once `message_stop` has come.
#[derive(Default)]
pub(crate) struct MessagesAccumulator {
    slots: Vec<(usize, Slot)>,
    usage: UsageParts,
    finish: Option<FinishReason>,
    stopped: bool,
}

impl MessagesAccumulator {
    fn slot(&mut self, index: usize, thinking: bool) -> &mut Slot {
        let at = match self.slots.iter().rposition(|(i, _)| *i == index) {
            Some(at) => at,
            None => {
                let slot = Slot::Content {
                    thinking,
                    text: String::new(),
                    signature: None,
                };
                self.slots.push((index, slot));
                self.slots.len() - 1
            }
        };
        &mut self.slots[at].1
    }
}

impl MessagesAccumulator {
    fn on_delta(&mut self, index: usize, delta: DeltaBody<'_>, emit: &mut dyn FnMut(LlmEvent)) {
        match delta.kind.as_deref() {
            Some("text_delta") => {
                if let Some(text) = delta.text.filter(|t| !t.is_empty()) {
                    if let Slot::Content { text: acc, .. } = self.slot(index, false) {
                        acc.push_str(&text);
                    }
                    emit(LlmEvent::TextDelta(text.0.into_owned()));
                }
            }
            Some("thinking_delta") => {
                if let Some(text) = delta.thinking.filter(|t| !t.is_empty()) {
                    if let Slot::Content { text: acc, .. } = self.slot(index, true) {
                        acc.push_str(&text);
                    }
                    emit(LlmEvent::ThinkingDelta(text.0.into_owned()));
                }
            }
            Some("signature_delta") => {
                if let (Some(piece), Slot::Content { signature, .. }) =
                    (delta.signature, self.slot(index, true))
                {
                    signature.get_or_insert_with(String::new).push_str(&piece);
                }
            }
            Some("input_json_delta") => {
                let tool = self.slots.iter_mut().rev().find(|(i, _)| *i == index);
                if let (Some(piece), Some((_, Slot::Tool { arguments, .. }))) =
                    (delta.partial_json, tool)
                {
                    arguments.push_str(&piece);
                }
            }
            _ => {}
        }
    }
}

impl Accumulator for MessagesAccumulator {
    fn feed(&mut self, data: &str, emit: &mut dyn FnMut(LlmEvent)) -> Result<()> {
        let event: Event<'_> =
            serde_json::from_str(data).map_err(|e| rest::unreadable("Anthropic", &e, data))?;
        let index = event.index.unwrap_or(0);
        match event.kind.as_ref() {
            "content_block_start" => {
                let Some(block) = event.content_block else {
                    return Ok(());
                };
                let slot = match block.kind.as_ref() {
                    "tool_use" => Slot::Tool {
                        id: block.id.map(|s| s.0.into_owned()).unwrap_or_default(),
                        name: block.name.map(|s| s.0.into_owned()).unwrap_or_default(),
                        arguments: String::new(),
                        started_with: block
                            .input
                            .filter(|input| !input.as_object().is_some_and(Map::is_empty)),
                    },
                    "text" => Slot::Content {
                        thinking: false,
                        text: String::new(),
                        signature: None,
                    },
                    "thinking" => Slot::Content {
                        thinking: true,
                        text: String::new(),
                        signature: None,
                    },
                    _ => return Ok(()), // server-side tool blocks are the vendor's business
                };
                self.slots.push((index, slot));
            }
            "content_block_delta" => {
                if let Some(delta) = event.delta {
                    self.on_delta(index, delta, emit);
                }
            }
            "message_start" => {
                if let Some(usage) = event.message.and_then(|m| m.usage) {
                    self.usage.merge(&usage);
                }
            }
            "message_delta" => {
                if let Some(usage) = &event.usage {
                    self.usage.merge(usage);
                }
                if let Some(reason) = event.delta.and_then(|d| d.stop_reason) {
                    self.finish = Some(stop_reason(&reason));
                }
            }
            "message_stop" => self.stopped = true,
            "error" => {
                let error = event.error.unwrap_or(Value::Null);
                return Err(rest::vendor_error("Anthropic", &error, data));
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<CompletionResponse> {
        if !self.stopped {
            return Err(rest::incomplete("Anthropic", "message_stop"));
        }
        let mut slots = std::mem::take(&mut self.slots);
        slots.sort_by_key(|(i, _)| *i);
        let mut blocks = Vec::new();
        let mut calls = Vec::new();
        for (_, slot) in slots {
            match slot {
                Slot::Content { text, .. } if text.is_empty() => {}
                Slot::Content {
                    thinking: false,
                    text,
                    ..
                } => blocks.push(Block::text(text)),
                Slot::Content {
                    thinking: true,
                    text,
                    signature,
                } => blocks.push(Block::from(Thinking { text, signature })),
                Slot::Tool { name, .. } if name.is_empty() => {}
                Slot::Tool {
                    id,
                    name,
                    arguments,
                    started_with,
                } => {
                    // Input streamed as deltas wins; else what the block started with.
                    let call = match started_with {
                        Some(input) if arguments.trim().is_empty() => ToolCall::new(&name, input),
                        _ => call_from_text(&name, &arguments, self.finish),
                    };
                    calls.push(if id.is_empty() {
                        call
                    } else {
                        call.with_id(id)
                    });
                }
            }
        }
        let mut response = CompletionResponse::from_blocks(merge_blocks(blocks))
            .with_tool_calls(calls)
            .with_finish_reason(self.finish.unwrap_or(FinishReason::Stop));
        if self.usage.seen() {
            response = response.with_usage(self.usage.usage());
        }
        Ok(response)
    }
}
