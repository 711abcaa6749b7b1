//! OpenAI Chat Completions, and every gateway and local server that speaks it.

use harness_core::{
    Block, BoxStream, CompletionResponse, Content, FinishReason, Llm, LlmEvent, Message,
    ModelSettings, ProviderError, ProviderErrorKind, Request, Result, Role, Thinking, TokenUsage,
    ToolCall, ToolChoice, ToolSpec,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::http::{Connection, HttpClient, connection_setters};
use crate::rest::{self, Accumulator, StreamRequest, clip, required};
use crate::wire::{Few, Str, Text, TextOrParts, count, count_at, push};

/// A model behind the OpenAI Chat Completions API: OpenAI itself, the gateways that share
/// its format (Groq, Together, DeepSeek, Mistral, xAI, OpenRouter, Fireworks, Cerebras) and
/// the local servers (Ollama, vLLM, LM Studio, llama.cpp).
///
/// Settings go on the wire as the service takes them: `temperature`, `top_p`, `stop`,
/// `tool_choice` and `parallel_tool_calls` (with tools only), `reasoning_effort`, and the
/// output limit as `max_completion_tokens` (OpenAI) or `max_tokens` (the others). With an
/// output schema a service that supports it gets `response_format` `json_schema` (strict when
/// the schema allows); see [`OpenAiBuilder::native_output`].
///
/// ```no_run
/// use harness_core::ModelSettings;
/// use harness_providers::OpenAi;
///
/// let model = OpenAi::builder("gpt-4o-mini")
///     .settings(ModelSettings::new().with_temperature(0.2))
///     .build()?;
/// # Ok::<(), harness_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct OpenAi {
    client: HttpClient,
    model: String,
    defaults: ModelSettings,
    stream_usage: bool,
    native_output: bool,
    max_tokens_key: &'static str,
}

/// Where an OpenAI-compatible service lives, how it is reached, and what it accepts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Service {
    pub(crate) id: &'static str,
    pub(crate) base_url: &'static str,
    pub(crate) key_var: Option<&'static str>,
    pub(crate) base_url_var: Option<&'static str>,
    /// Whether it holds answers to a JSON Schema (`response_format` `json_schema`).
    pub(crate) native_output: bool,
    /// The name it reads the output limit under.
    pub(crate) max_tokens_key: &'static str,
}

pub(crate) const OPENAI: Service = Service {
    id: "openai",
    base_url: "https://api.openai.com/v1",
    key_var: Some("OPENAI_API_KEY"),
    base_url_var: Some("OPENAI_BASE_URL"),
    native_output: true,
    max_tokens_key: "max_completion_tokens",
};

/// Builds an [`OpenAi`] (or a gateway's or local server's model).
#[derive(Debug, Clone)]
#[must_use = "call build() to get the model"]
pub struct OpenAiBuilder {
    service: Service,
    model: String,
    connection: Connection,
    defaults: ModelSettings,
    stream_usage: bool,
    native_output: Option<bool>,
}

impl OpenAi {
    /// OpenAI's `model`, with the key from `OPENAI_API_KEY` and the base URL from
    /// `OPENAI_BASE_URL` when set.
    ///
    /// # Errors
    /// As [`OpenAiBuilder::build`].
    pub fn new(model: impl Into<String>) -> Result<Self> {
        Self::builder(model).build()
    }

    /// A builder for OpenAI's `model`.
    pub fn builder(model: impl Into<String>) -> OpenAiBuilder {
        OpenAiBuilder::for_service(OPENAI, model.into())
    }

    /// The model's name as the service knows it.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The HTTP client, with its configuration.
    pub fn client(&self) -> &HttpClient {
        &self.client
    }

    /// The default settings, under each request's.
    pub fn settings(&self) -> &ModelSettings {
        &self.defaults
    }

    /// The request body: exactly `{"model", "messages"}` plus only the options that are set.
    pub fn request_body(&self, request: &Request<'_>, stream: bool) -> Value {
        let settings = request.settings.over(&self.defaults);
        let tools = request.tools;
        let mut body = Map::new();
        body.insert("model".into(), Value::from(self.model.as_str()));
        body.insert(
            "messages".into(),
            Value::Array(messages_to_wire(request.messages)),
        );
        if !tools.is_empty() {
            body.insert("tools".into(), tools.iter().map(tool_to_wire).collect());
            if let Some(choice) = &settings.tool_choice {
                body.insert("tool_choice".into(), tool_choice(choice));
            }
            if let Some(on) = settings.parallel_tool_calls {
                body.insert("parallel_tool_calls".into(), Value::Bool(on));
            }
        }
        if let Some(t) = settings.temperature {
            body.insert("temperature".into(), Value::from(t));
        }
        if let Some(p) = settings.top_p {
            body.insert("top_p".into(), Value::from(p));
        }
        if let Some(n) = settings.max_tokens {
            body.insert(self.max_tokens_key.into(), Value::from(n));
        }
        if !settings.stop.is_empty() {
            body.insert("stop".into(), Value::from(settings.stop.clone()));
        }
        if let Some(level) = settings.reasoning {
            body.insert("reasoning_effort".into(), Value::from(level.as_str()));
        }
        if let Some(output) = request.output.filter(|_| self.native_output) {
            body.insert(
                "response_format".into(),
                json!({"type": "json_schema", "json_schema": {
                    "name": output.name, "schema": output.schema, "strict": output.strict,
                }}),
            );
        }
        if stream {
            body.insert("stream".into(), Value::Bool(true));
            if self.stream_usage {
                body.insert("stream_options".into(), json!({"include_usage": true}));
            }
        }
        Value::Object(body)
    }
}

impl OpenAiBuilder {
    connection_setters!();

    pub(crate) fn for_service(service: Service, model: String) -> Self {
        Self {
            service,
            model,
            connection: Connection::default(),
            defaults: ModelSettings::default(),
            stream_usage: true,
            native_output: None,
        }
    }

    /// Default settings for every request, under the agent's and the run's (temperature,
    /// output limit, `reasoning_effort` from `with_reasoning`, ...).
    pub fn settings(mut self, settings: ModelSettings) -> Self {
        self.defaults = settings;
        self
    }

    /// Whether the service holds answers to a JSON Schema (`response_format` `json_schema`),
    /// so an agent's structured output is asked for natively instead of through a
    /// `final_answer` tool. Each preset says what its service does (on for OpenAI, Together,
    /// Mistral, xAI, Fireworks, Cerebras and the four local servers; off for Groq, DeepSeek
    /// and OpenRouter, where it depends on the model); set it for a model that differs.
    pub fn native_output(mut self, on: bool) -> Self {
        self.native_output = Some(on);
        self
    }

    /// Whether a stream asks for usage in its last chunk (default true).
    pub fn stream_usage(mut self, on: bool) -> Self {
        self.stream_usage = on;
        self
    }

    /// The model.
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error for `max_concurrency` 0 or
    /// a key that is not a valid header.
    pub fn build(self) -> Result<OpenAi> {
        let mut config = self.connection.config(
            self.service.id,
            self.service.base_url,
            self.service.base_url_var,
        );
        let key_vars: Vec<&str> = self.service.key_var.into_iter().collect();
        if let Some(key) = self.connection.key(&key_vars) {
            config
                .headers
                .push(("authorization".into(), format!("Bearer {key}")));
        }
        Ok(OpenAi {
            client: HttpClient::new(config)?,
            model: self.model,
            defaults: self.defaults,
            stream_usage: self.stream_usage,
            native_output: self.native_output.unwrap_or(self.service.native_output),
            max_tokens_key: self.service.max_tokens_key,
        })
    }
}

pub(crate) fn env_nonempty(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.trim().is_empty())
}

#[async_trait::async_trait]
impl Llm for OpenAi {
    async fn generate(&self, request: Request<'_>) -> Result<CompletionResponse> {
        let body = self.request_body(&request, false);
        let answer = self.client.post_json("/chat/completions", &body).await?;
        parse_response(&answer)
    }

    fn stream_events<'a>(&'a self, request: Request<'a>) -> BoxStream<'a, Result<LlmEvent>> {
        rest::stream(
            &self.client,
            StreamRequest {
                path: "/chat/completions".into(),
                body: self.request_body(&request, true),
                accumulator: ChatAccumulator::default(),
            },
        )
    }

    fn name(&self) -> String {
        format!("{}:{}", self.client.config().provider, self.model)
    }

    fn native_output(&self) -> bool {
        self.native_output
    }
}

/// `tool_choice` as Chat Completions takes it.
fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::None => Value::from("none"),
        ToolChoice::Required => Value::from("required"),
        ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
        _ => Value::from("auto"),
    }
}

fn tool_to_wire(tool: &ToolSpec) -> Value {
    let parameters = if tool.parameters.is_object() {
        tool.parameters.clone()
    } else {
        json!({"type": "object", "properties": {}})
    };
    json!({
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": parameters}
    })
}

/// The transcript in Chat Completions form. A tool message carries text only there, so the
/// images and documents of a run of tool results follow it in one user message, after the
/// last result (a message between the results would break the tool-call pairing).
fn messages_to_wire(messages: &[Message]) -> Vec<Value> {
    let mut wire = Vec::with_capacity(messages.len());
    let mut media: Vec<Value> = Vec::new();
    for message in messages {
        if message.role != Role::Tool && !media.is_empty() {
            wire.push(tool_media_message(std::mem::take(&mut media)));
        }
        if message.role == Role::Tool
            && let Value::Array(parts) = content_to_wire(&message.content)
        {
            let name = message.name.as_deref().unwrap_or("a tool");
            media.push(json!({"type": "text", "text": format!("The result of {name} includes:")}));
            media.extend(parts.into_iter().filter(|p| p["type"] != "text"));
        }
        wire.push(message_to_wire(message));
    }
    if !media.is_empty() {
        wire.push(tool_media_message(media));
    }
    wire
}

fn tool_media_message(parts: Vec<Value>) -> Value {
    json!({"role": "user", "content": parts})
}

/// One transcript message in Chat Completions form.
fn message_to_wire(message: &Message) -> Value {
    match message.role {
        Role::Assistant if !message.tool_calls.is_empty() => {
            let text = message.content.text();
            let calls: Vec<Value> = message
                .tool_calls
                .iter()
                .map(|call| {
                    json!({
                        "id": call.id.as_deref().unwrap_or(""),
                        "type": "function",
                        "function": {
                            "name": call.name,
                            // What the model sent, verbatim when it was not an object.
                            "arguments": call.arguments_text(),
                        },
                    })
                })
                .collect();
            json!({
                "role": "assistant",
                "content": if text.is_empty() { Value::Null } else { Value::from(text.as_ref()) },
                "tool_calls": calls,
            })
        }
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": message.tool_call_id.as_deref().unwrap_or(""),
            "content": message.content.text(),
        }),
        role => {
            let mut wire = Map::new();
            wire.insert("role".into(), Value::from(role.as_str()));
            wire.insert("content".into(), content_to_wire(&message.content));
            if let Some(name) = &message.name {
                wire.insert("name".into(), Value::from(name.as_str()));
            }
            Value::Object(wire)
        }
    }
}

fn content_to_wire(content: &Content) -> Value {
    let blocks = content.blocks();
    if blocks
        .iter()
        .all(|b| matches!(b, Block::Text(_) | Block::Thinking(_)))
    {
        return Value::from(content.text().as_ref());
    }
    Value::Array(
        blocks
            .iter()
            .filter_map(|block| match block {
                Block::Text(t) => Some(json!({"type": "text", "text": t.text})),
                Block::Image(image) => {
                    Some(json!({"type": "image_url", "image_url": {"url": image.data_url()}}))
                }
                Block::Document(doc) => Some(json!({
                    "type": "file",
                    "file": {
                        "filename": doc.name.as_deref().unwrap_or("document"),
                        "file_data": doc.data_url(),
                    },
                })),
                Block::Thinking(_) => None,
            })
            .collect(),
    )
}

fn finish_reason(value: &str) -> FinishReason {
    match value {
        "stop" | "tool_calls" | "function_call" => FinishReason::Stop,
        "length" => FinishReason::Length,
        "content_filter" => FinishReason::Filtered,
        _ => FinishReason::Other,
    }
}

/// Usage from a Chat Completions `usage` object: `None` when absent or empty. Counts
/// saturate: no vendor figure can overflow.
fn usage_from(value: Option<&Value>) -> Option<TokenUsage> {
    let usage = value.filter(|u| u.as_object().is_some_and(|u| !u.is_empty()))?;
    let (prompt, completion) = (
        count_at(usage, "prompt_tokens"),
        count_at(usage, "completion_tokens"),
    );
    let total = usage
        .get("total_tokens")
        .map_or_else(|| prompt.saturating_add(completion), count);
    let cached = usage
        .get("prompt_tokens_details")
        .map_or(0, |d| count_at(d, "cached_tokens"));
    Some(TokenUsage::new(prompt, completion, total).with_cached(cached))
}

/// A call whose arguments arrived as text; a turn cut at the output limit marks a call
/// with no arguments yet as cut off, so it is not run on arguments the model never sent.
pub(crate) fn call_from_text(name: &str, text: &str, finish: Option<FinishReason>) -> ToolCall {
    let mut call = ToolCall::parse(name, text);
    if finish == Some(FinishReason::Length) && text.trim().is_empty() {
        call.raw_arguments = Some(String::new());
    }
    call
}

/// Reads a non-streamed Chat Completions answer.
///
/// # Errors
/// A [`Provider`](harness_core::ErrorKind::Provider) error naming what a required part of the
/// answer lacks.
pub fn parse_response(answer: &Value) -> Result<CompletionResponse> {
    let choices = required("OpenAI", answer, "choices")?;
    let Some(choice) = choices.as_array().and_then(|c| c.first()) else {
        return Err(ProviderError::new(
            "openai",
            format!("OpenAI response has no choices: {}", clip(answer)),
        )
        .with_kind(ProviderErrorKind::Malformed)
        .into());
    };
    let message = required("OpenAI", choice, "message")?;
    // A missing finish reason is not a finished answer.
    let finish = choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .map_or(FinishReason::Other, finish_reason);
    let mut blocks = Vec::new();
    let reasoning = ["reasoning_content", "reasoning"].iter().find_map(|k| {
        message
            .get(*k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    });
    if let Some(reasoning) = reasoning {
        blocks.push(Block::from(Thinking::new(reasoning)));
    }
    let content = match message.get("content") {
        Some(Value::String(text)) => TextOrParts {
            text: Some(Str(std::borrow::Cow::Borrowed(text))),
            thinking: None,
        },
        Some(Value::Array(parts)) => TextOrParts::from_parts(parts),
        _ => TextOrParts::default(),
    };
    if let Some(thinking) = content.thinking.filter(|t| !t.is_empty()) {
        blocks.push(Block::from(Thinking::new(thinking)));
    }
    // The text, or OpenAI's refusal (structured outputs) in its place.
    let refusal = message.get("refusal").and_then(Value::as_str);
    if let Some(text) = content
        .text
        .as_deref()
        .or(refusal)
        .filter(|s| !s.is_empty())
    {
        blocks.push(Block::text(text));
    }
    let mut calls = Vec::new();
    for call in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let id = required("OpenAI", call, "id")?.as_str().unwrap_or_default();
        let function = required("OpenAI", call, "function")?;
        let name = required("OpenAI", function, "name")?
            .as_str()
            .unwrap_or_default();
        let call = match function.get("arguments") {
            Some(Value::String(text)) => call_from_text(name, text, Some(finish)),
            // Some servers send the object itself; anything else is kept as sent.
            Some(other) => ToolCall::new(name, other.clone()),
            None => call_from_text(name, "", Some(finish)),
        };
        calls.push(call.with_id(id));
    }
    let mut response = CompletionResponse::from_blocks(blocks)
        .with_tool_calls(calls)
        .with_finish_reason(finish);
    if let Some(usage) = usage_from(answer.get("usage")) {
        response = response.with_usage(usage);
    }
    Ok(response)
}

// Streaming ----------------------------------------------------------------------------------

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow, default)]
    choices: Few<ChunkChoice<'a>>,
    #[serde(default)]
    usage: Option<Value>,
    /// llama.cpp and gateways report a failure mid-stream as `data: {"error": ...}`.
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct ChunkChoice<'a> {
    #[serde(borrow, default)]
    delta: Option<Delta<'a>>,
    #[serde(borrow, default)]
    finish_reason: Text<'a>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow, default)]
    content: TextOrParts<'a>,
    /// OpenAI's refusal (structured outputs): what the model said instead of an answer.
    #[serde(borrow, default)]
    refusal: Text<'a>,
    #[serde(borrow, default)]
    reasoning_content: Text<'a>,
    #[serde(borrow, default)]
    reasoning: Text<'a>,
    #[serde(borrow, default)]
    tool_calls: Few<ToolCallDelta<'a>>,
}

#[derive(Deserialize)]
struct ToolCallDelta<'a> {
    #[serde(default)]
    index: Option<usize>,
    #[serde(borrow, default)]
    id: Text<'a>,
    #[serde(borrow, default)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(borrow, default)]
    name: Text<'a>,
    #[serde(borrow, default)]
    arguments: Text<'a>,
}

#[derive(Default)]
struct CallSlot {
    index: usize,
    id: String,
    name: String,
    arguments: String,
}

impl CallSlot {
    /// Whether the arguments so far are one whole JSON value.
    fn is_whole(&self) -> bool {
        serde_json::from_str::<serde::de::IgnoredAny>(&self.arguments).is_ok()
    }
}

/// Assembles a Chat Completions stream: text and reasoning appended, tool-call fragments
/// joined by index (in order of first appearance; a new id at a taken index starts another
/// call), usage from the final `choices: []` chunk. The turn is whole once a `finish_reason`
/// or `data: [DONE]` has come.
#[derive(Default)]
pub(crate) struct ChatAccumulator {
    text: String,
    thinking: String,
    calls: Vec<CallSlot>,
    usage: Option<TokenUsage>,
    finish: Option<FinishReason>,
    done: bool,
}

impl Accumulator for ChatAccumulator {
    fn feed(&mut self, data: &str, emit: &mut dyn FnMut(LlmEvent)) -> Result<()> {
        let chunk: Chunk<'_> =
            serde_json::from_str(data).map_err(|e| rest::unreadable("OpenAI", &e, data))?;
        if let Some(error) = chunk.error.as_ref().filter(|e| !e.is_null()) {
            return Err(rest::vendor_error("OpenAI", error, data));
        }
        if let Some(usage) = usage_from(chunk.usage.as_ref()) {
            self.usage = Some(usage);
        }
        let Some(choice) = chunk.choices.first() else {
            return Ok(());
        };
        if let Some(reason) = &choice.finish_reason {
            self.finish = Some(finish_reason(reason));
        }
        let Some(delta) = &choice.delta else {
            return Ok(());
        };
        for fragment in delta.tool_calls.iter() {
            let index = fragment.index.unwrap_or(0);
            let id = fragment.id.as_deref().filter(|id| !id.is_empty());
            let name = fragment
                .function
                .as_ref()
                .and_then(|f| f.name.as_deref())
                .filter(|n| !n.is_empty());
            // The latest call at this index, unless this fragment starts another call: a
            // different id, or (servers that send no ids) a name after the named call's
            // arguments are already whole.
            let at = self
                .calls
                .iter()
                .rposition(|c| c.index == index)
                .filter(|&at| {
                    let slot = &self.calls[at];
                    match id {
                        Some(id) => slot.id.is_empty() || slot.id == id,
                        None => name.is_none() || slot.name.is_empty() || !slot.is_whole(),
                    }
                });
            let at = at.unwrap_or_else(|| {
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
            if let Some(function) = &fragment.function {
                if let Some(name) = function.name.as_ref().filter(|n| !n.is_empty()) {
                    slot.name = name.to_string();
                }
                push(&mut slot.arguments, function.arguments.as_ref());
            }
        }
        let reasoning = delta
            .reasoning_content
            .as_ref()
            .or(delta.reasoning.as_ref());
        if let Some(r) = reasoning.filter(|_| push(&mut self.thinking, reasoning)) {
            emit(LlmEvent::ThinkingDelta(r.to_string()));
        }
        if let Some(thinking) = delta.content.thinking.as_deref().filter(|t| !t.is_empty()) {
            self.thinking.push_str(thinking);
            emit(LlmEvent::ThinkingDelta(thinking.to_owned()));
        }
        for piece in [delta.content.text.as_ref(), delta.refusal.as_ref()] {
            if let Some(t) = piece.filter(|_| push(&mut self.text, piece)) {
                emit(LlmEvent::TextDelta(t.to_string()));
            }
        }
        Ok(())
    }

    fn done(&mut self) {
        self.done = true;
    }

    fn finish(&mut self) -> Result<CompletionResponse> {
        if self.finish.is_none() && !self.done {
            return Err(rest::incomplete(
                "OpenAI",
                "a finish_reason or data: [DONE]",
            ));
        }
        let mut blocks = Vec::new();
        if !self.thinking.is_empty() {
            blocks.push(Thinking::new(std::mem::take(&mut self.thinking)).into());
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
                !(slot.name.is_empty() && slot.id.is_empty() && slot.arguments.is_empty())
            })
            .map(|slot| {
                let call = call_from_text(&slot.name, &slot.arguments, finish);
                if slot.id.is_empty() {
                    call
                } else {
                    call.with_id(slot.id)
                }
            })
            .collect();
        // `[DONE]` without a finish reason: the server ended the turn without saying why.
        let mut response = CompletionResponse::from_blocks(blocks)
            .with_tool_calls(calls)
            .with_finish_reason(self.finish.unwrap_or(FinishReason::Other));
        if let Some(usage) = self.usage {
            response = response.with_usage(usage);
        }
        Ok(response)
    }
}

macro_rules! compatible {
    ($($(#[$doc:meta])* $name:ident => $id:literal, $url:literal, $key:expr, native: $native:literal;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;

        impl $name {
            pub(crate) const SERVICE: Service = Service {
                id: $id,
                base_url: $url,
                key_var: $key,
                base_url_var: None,
                native_output: $native,
                max_tokens_key: "max_tokens",
            };

            /// The model `model` on this service, with its defaults: an [`OpenAi`] pointed at
            /// the service.
            ///
            /// # Errors
            /// As [`OpenAiBuilder::build`].
            #[allow(clippy::new_ret_no_self)] // the service is a preset of `OpenAi`
            pub fn new(model: impl Into<String>) -> Result<OpenAi> {
                Self::builder(model).build()
            }

            /// A builder for `model` on this service.
            pub fn builder(model: impl Into<String>) -> OpenAiBuilder {
                OpenAiBuilder::for_service(Self::SERVICE, model.into())
            }
        }
    )*};
}

compatible! {
    /// Groq's OpenAI-compatible API; key from `GROQ_API_KEY`.
    Groq => "groq", "https://api.groq.com/openai/v1", Some("GROQ_API_KEY"), native: false;
    /// Together AI; key from `TOGETHER_API_KEY`.
    Together => "together", "https://api.together.xyz/v1", Some("TOGETHER_API_KEY"), native: true;
    /// DeepSeek; key from `DEEPSEEK_API_KEY`. Its reasoning arrives as thinking.
    DeepSeek => "deepseek", "https://api.deepseek.com/v1", Some("DEEPSEEK_API_KEY"), native: false;
    /// Mistral; key from `MISTRAL_API_KEY`.
    Mistral => "mistral", "https://api.mistral.ai/v1", Some("MISTRAL_API_KEY"), native: true;
    /// xAI; key from `XAI_API_KEY`.
    Xai => "xai", "https://api.x.ai/v1", Some("XAI_API_KEY"), native: true;
    /// OpenRouter; key from `OPENROUTER_API_KEY`.
    OpenRouter => "openrouter", "https://openrouter.ai/api/v1", Some("OPENROUTER_API_KEY"), native: false;
    /// Fireworks AI; key from `FIREWORKS_API_KEY`.
    Fireworks => "fireworks", "https://api.fireworks.ai/inference/v1", Some("FIREWORKS_API_KEY"), native: true;
    /// Cerebras; key from `CEREBRAS_API_KEY`.
    Cerebras => "cerebras", "https://api.cerebras.ai/v1", Some("CEREBRAS_API_KEY"), native: true;
    /// A local Ollama server at `localhost:11434`; no key.
    Ollama => "ollama", "http://localhost:11434/v1", None, native: true;
    /// A local vLLM server at `localhost:8000`; no key.
    Vllm => "vllm", "http://localhost:8000/v1", None, native: true;
    /// A local LM Studio server at `localhost:1234`; no key.
    LmStudio => "lmstudio", "http://localhost:1234/v1", None, native: true;
    /// A local llama.cpp `llama-server` at `localhost:8080`; no key. Start it with `--jinja`
    /// for tool calls.
    LlamaCpp => "llamacpp", "http://localhost:8080/v1", None, native: true;
}
