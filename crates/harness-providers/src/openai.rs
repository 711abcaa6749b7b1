//! OpenAI Chat Completions, and every gateway and local server that speaks it.

use harness_core::{
    Block, BoxStream, CompletionResponse, Content, Error, FinishReason, Llm, LlmEvent, Message,
    ModelInfo, ModelSettings, OutputSchema, Request, Result, Role, Supports, Thinking, TokenUsage,
    ToolCall, ToolChoice, ToolSpec,
};
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::ser::{SerializeMap as _, SerializeSeq as _};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::sync::Arc;

use crate::connection::{Connection, connection_setters};
use crate::services::{self, Service, TokenLimit};
use crate::rest::json::{self, Vendor};
use crate::rest::{self, Accumulator, HttpClient, SseEvent};
use crate::wire::{
    ContentText, Count, DataUrl, DocumentUrl, Few, FewInto, JsonText, Parameters, Settings, Str,
    Text, TextOrParts, call_from_text, call_from_value, present, push,
};

const PATH: &str = "/chat/completions";

/// A model behind the OpenAI Chat Completions API: OpenAI itself, the gateways that share
/// its format (Groq, Together, DeepSeek, Mistral, xAI, OpenRouter, Fireworks, Cerebras) and
/// the local servers (Ollama, vLLM, LM Studio, llama.cpp).
///
/// Settings go on the wire as the service takes them: `temperature`, `top_p`, `stop`,
/// `tool_choice` and `parallel_tool_calls` (with tools only), `reasoning_effort`, and the
/// output limit as `max_completion_tokens` (OpenAI) or `max_tokens` (the others). With an
/// output schema a service that supports it gets `response_format` `json_schema` (strict when
/// the schema allows); see [`OpenAiBuilder::native_output`]. A failure names the service it
/// came from: a Groq model's errors carry the provider id `groq` and say Groq.
///
/// Reasoning (`reasoning_content`, `reasoning`, or content parts of type `thinking`) comes
/// back as [`Thinking`]. OpenRouter's `reasoning_details` add what plain text cannot carry,
/// the signature and any encrypted reasoning, kept on blocks whose
/// [`provider`](Thinking::provider) is the service's id, so that no other vendor is sent
/// them. A Chat Completions request has no place for reasoning: it is not sent back.
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
    client: Arc<HttpClient>,
    model: String,
    /// The service's id, as errors report it (the client's provider).
    id: &'static str,
    /// The service's name, for messages.
    name: &'static str,
    defaults: ModelSettings,
    stream_usage: bool,
    native_output: bool,
    /// Whether the output limit goes as `max_completion_tokens` (OpenAI) or `max_tokens`.
    max_completion_tokens: bool,
}

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
        OpenAiBuilder::for_service(services::known("openai"), model.into())
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

    /// The request body this model would send, as JSON, without sending it: exactly
    /// `{"model", "messages"}` plus only the options that are set. (What is sent is written
    /// straight from the request, without this value in between.)
    pub fn request_body(&self, request: &Request<'_>, stream: bool) -> Value {
        let body = self.body(request, stream);
        // Serialising these types cannot fail: every map key is a string.
        serde_json::to_value(rest::with_extra(&body, &body.extra)).unwrap_or_default()
    }

    /// Who is answering, for errors.
    fn vendor(&self) -> Vendor<'static> {
        Vendor::new(self.id, self.name)
    }

    /// The request body, borrowed from the request.
    fn body<'a>(&'a self, request: &Request<'a>, stream: bool) -> Body<'a> {
        let settings = Settings::merge(request.settings, &self.defaults);
        let tools = !request.tools.is_empty();
        let max_tokens = settings.max_tokens;
        Body {
            model: &self.model,
            extra: settings.extra,
            messages: Messages(crate::wire::with_call_ids(request.messages)),
            tools: tools.then_some(Tools(request.tools)),
            tool_choice: settings.tool_choice.filter(|_| tools).map(ChoiceWire::from),
            parallel_tool_calls: settings.parallel_tool_calls.filter(|_| tools),
            temperature: settings.temperature,
            top_p: settings.top_p,
            max_completion_tokens: max_tokens.filter(|_| self.max_completion_tokens),
            max_tokens: max_tokens.filter(|_| !self.max_completion_tokens),
            stop: settings.stop,
            reasoning_effort: settings.reasoning.map(harness_core::ReasoningLevel::as_str),
            response_format: request
                .output
                .filter(|_| self.native_output)
                .map(ResponseFormat::new),
            stream: stream.then_some(true),
            stream_options: (stream && self.stream_usage).then_some(StreamOptions {
                include_usage: true,
            }),
        }
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
    /// `final_answer` tool ([`Supports::structured_output`](harness_core::Supports)). Each
    /// preset says what its service does (on for OpenAI, Together, Mistral, xAI, Fireworks,
    /// Cerebras and the four local servers; off for Groq, DeepSeek and OpenRouter, where it
    /// depends on the model); set it for a model that differs.
    pub fn structured_output(mut self, on: bool) -> Self {
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
            client: Arc::new(HttpClient::new(config)?),
            model: self.model,
            id: self.service.id,
            name: self.service.name,
            defaults: self.defaults,
            stream_usage: self.stream_usage,
            native_output: self.native_output.unwrap_or(self.service.structured_output),
            max_completion_tokens: self.service.token_limit == TokenLimit::MaxCompletionTokens,
        })
    }
}

pub(crate) fn env_nonempty(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.trim().is_empty())
}

#[async_trait::async_trait]
impl Llm for OpenAi {
    async fn generate(&self, request: Request<'_>) -> Result<CompletionResponse> {
        let body = self.body(&request, false);
        let answer = match self.client.post(PATH, &rest::with_extra(&body, &body.extra)).await {
            Ok(answer) => answer,
            Err(error) => return refused_call(error),
        };
        ChatAccumulator::new(self.vendor()).answer(&answer)
    }

    fn stream(self: Arc<Self>, request: Request<'_>) -> BoxStream<'static, Result<LlmEvent>> {
        let body = self.body(&request, true);
        rest::stream(
            Arc::clone(&self.client),
            PATH,
            &rest::with_extra(&body, &body.extra),
            ChatAccumulator::new(self.vendor()),
        )
    }

    fn info(&self) -> ModelInfo {
        let supports = Supports::new()
            .with_tools(true)
            .with_images(true)
            .with_structured_output(self.native_output);
        crate::models::info(&self.client.config().provider, &self.model, supports)
    }
}

// The request ---------------------------------------------------------------------------------

/// A Chat Completions request, borrowed from the [`Request`]: keys in this order, the unset
/// ones left out.
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    /// Vendor fields merged in last as the body is sent ([`rest::with_extra`]).
    #[serde(skip)]
    extra: Cow<'a, Map<String, Value>>,
    messages: Messages<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Tools<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<ChoiceWire<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// `response_format` `json_schema`.
#[derive(Serialize)]
struct ResponseFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    json_schema: SchemaWire<'a>,
}

#[derive(Serialize)]
struct SchemaWire<'a> {
    name: &'a str,
    schema: &'a Value,
    strict: bool,
}

impl<'a> ResponseFormat<'a> {
    fn new(output: &'a OutputSchema) -> Self {
        Self {
            kind: "json_schema",
            json_schema: SchemaWire {
                name: &output.name,
                schema: &output.schema,
                strict: output.strict,
            },
        }
    }
}

/// `tool_choice` as Chat Completions takes it.
#[derive(Serialize)]
#[serde(untagged)]
enum ChoiceWire<'a> {
    Mode(&'static str),
    Tool {
        #[serde(rename = "type")]
        kind: &'static str,
        function: Named<'a>,
    },
}

#[derive(Serialize)]
struct Named<'a> {
    name: &'a str,
}

impl<'a> From<&'a ToolChoice> for ChoiceWire<'a> {
    fn from(choice: &'a ToolChoice) -> Self {
        match choice {
            ToolChoice::None => Self::Mode("none"),
            ToolChoice::Required => Self::Mode("required"),
            ToolChoice::Tool(name) => Self::Tool {
                kind: "function",
                function: Named { name },
            },
            _ => Self::Mode("auto"),
        }
    }
}

/// The tools, each `{"type": "function", "function": {name, description, parameters}}`.
struct Tools<'a>(&'a [Arc<ToolSpec>]);

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Tool<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            function: Function<'a>,
        }
        #[derive(Serialize)]
        struct Function<'a> {
            name: &'a str,
            description: &'a str,
            parameters: Parameters<'a>,
        }
        serializer.collect_seq(self.0.iter().map(|tool| Tool {
            kind: "function",
            function: Function {
                name: &tool.name,
                description: &tool.description,
                parameters: Parameters::of(&tool.parameters),
            },
        }))
    }
}

/// The transcript in Chat Completions form. A tool message carries text only there, so the
/// images and documents of a run of tool results follow it in one user message, after the
/// last result (a message between the results would break the tool-call pairing).
///
/// Every call and result carries an id here ([`crate::wire::with_call_ids`]).
struct Messages<'a>(Cow<'a, [Message]>);

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        // The first tool result with media of the run of results being written.
        let mut media_from: Option<usize> = None;
        for (i, message) in self.0.iter().enumerate() {
            if message.role != Role::Tool
                && let Some(from) = media_from.take()
            {
                seq.serialize_element(&ToolMedia(&self.0[from..i]))?;
            }
            if message.role == Role::Tool && media_from.is_none() && has_media(&message.content) {
                media_from = Some(i);
            }
            seq.serialize_element(&MessageWire(message))?;
        }
        if let Some(from) = media_from {
            seq.serialize_element(&ToolMedia(&self.0[from..]))?;
        }
        seq.end()
    }
}

/// Whether content holds more than text and thinking: then it is sent as parts.
fn has_media(content: &Content) -> bool {
    match content {
        Content::Text(_) => false,
        Content::Blocks(blocks) => blocks
            .iter()
            .any(|b| !matches!(b, Block::Text(_) | Block::Thinking(_))),
    }
}

/// The user message that carries the images and documents of a run of tool results.
struct ToolMedia<'a>(&'a [Message]);

impl Serialize for ToolMedia<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        struct Parts<'a>(&'a [Message]);
        impl Serialize for Parts<'_> {
            fn serialize<S: Serializer>(
                &self,
                serializer: S,
            ) -> std::result::Result<S::Ok, S::Error> {
                let mut seq = serializer.serialize_seq(None)?;
                for message in self.0.iter().filter(|m| m.role == Role::Tool) {
                    let Content::Blocks(blocks) = &message.content else {
                        continue;
                    };
                    if !has_media(&message.content) {
                        continue;
                    }
                    let name = message.name.as_deref().unwrap_or("a tool");
                    seq.serialize_element(&TextPart(&format_args!(
                        "The result of {name} includes:"
                    )))?;
                    for block in blocks {
                        if !matches!(block, Block::Text(_))
                            && let Some(part) = Part::of(block)
                        {
                            seq.serialize_element(&part)?;
                        }
                    }
                }
                seq.end()
            }
        }
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("role", "user")?;
        map.serialize_entry("content", &Parts(self.0))?;
        map.end()
    }
}

/// `{"type": "text", "text": ...}` from anything that displays.
struct TextPart<'a, T: std::fmt::Display + ?Sized>(&'a T);

impl<T: std::fmt::Display + ?Sized> Serialize for TextPart<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        struct Collected<'a, T: ?Sized>(&'a T);
        impl<T: std::fmt::Display + ?Sized> Serialize for Collected<'_, T> {
            fn serialize<S: Serializer>(
                &self,
                serializer: S,
            ) -> std::result::Result<S::Ok, S::Error> {
                serializer.collect_str(self.0)
            }
        }
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("type", "text")?;
        map.serialize_entry("text", &Collected(self.0))?;
        map.end()
    }
}

/// One content part: text, an image (as a URL or a `data:` URL) or a document (as a file).
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: Url<'a> },
    File { file: File<'a> },
}

#[derive(Serialize)]
struct Url<'a> {
    url: DataUrl<'a>,
}

#[derive(Serialize)]
struct File<'a> {
    filename: &'a str,
    file_data: DocumentUrl<'a>,
}

impl<'a> Part<'a> {
    /// The part for a block; thinking is not sent.
    fn of(block: &'a Block) -> Option<Self> {
        match block {
            Block::Text(t) => Some(Self::Text { text: &t.text }),
            Block::Image(image) => Some(Self::ImageUrl {
                image_url: Url {
                    url: DataUrl(image.source()),
                },
            }),
            Block::Document(doc) => Some(Self::File {
                file: File {
                    filename: doc.name.as_deref().unwrap_or("document"),
                    file_data: DocumentUrl(doc),
                },
            }),
            Block::Thinking(_) => None,
        }
    }
}

/// A message's content: its text as a string when it is only text (and thinking), else
/// its parts.
struct ContentWire<'a>(&'a Content);

impl Serialize for ContentWire<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        match self.0 {
            Content::Blocks(blocks) if has_media(self.0) => {
                serializer.collect_seq(blocks.iter().filter_map(Part::of))
            }
            content => ContentText(content).serialize(serializer),
        }
    }
}

/// One transcript message in Chat Completions form.
struct MessageWire<'a>(&'a Message);

impl Serialize for MessageWire<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let message = self.0;
        match message.role {
            Role::Assistant if !message.tool_calls.is_empty() => {
                let text = ContentText(&message.content);
                let mut map = serializer.serialize_map(Some(3))?;
                map.serialize_entry("role", "assistant")?;
                map.serialize_entry("content", &(!text.is_empty()).then_some(text))?;
                map.serialize_entry("tool_calls", &Calls(&message.tool_calls))?;
                map.end()
            }
            Role::Tool => {
                let mut map = serializer.serialize_map(Some(3))?;
                map.serialize_entry("role", "tool")?;
                map.serialize_entry(
                    "tool_call_id",
                    message.tool_call_id.as_deref().unwrap_or(""),
                )?;
                map.serialize_entry("content", &ContentText(&message.content))?;
                map.end()
            }
            role => {
                let mut map = serializer.serialize_map(None)?;
                map.serialize_entry("role", role.as_str())?;
                map.serialize_entry("content", &ContentWire(&message.content))?;
                if let Some(name) = &message.name {
                    map.serialize_entry("name", name)?;
                }
                map.end()
            }
        }
    }
}

/// An assistant turn's calls, each with its arguments as JSON text of an object. A call whose
/// arguments were not one ([`ToolCall::raw_arguments`]; never run) is sent with `{}`, as
/// Anthropic and Gemini need it: vLLM and SGLang parse every call of the history and refuse
/// the whole request (a 500, every turn after) when one is not JSON. The model reads what it
/// wrote in that call's result.
struct Calls<'a>(&'a [ToolCall]);

impl Serialize for Calls<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Call<'a> {
            id: &'a str,
            #[serde(rename = "type")]
            kind: &'static str,
            function: Function<'a>,
        }
        #[derive(Serialize)]
        struct Function<'a> {
            name: &'a str,
            arguments: JsonText<'a, Map<String, Value>>,
        }
        serializer.collect_seq(self.0.iter().map(|call| Call {
            id: call.id.as_deref().unwrap_or(""),
            kind: "function",
            function: Function {
                name: &call.name,
                arguments: JsonText(&call.arguments),
            },
        }))
    }
}

// The answer ----------------------------------------------------------------------------------

/// A Chat Completions answer or stream chunk: a non-streamed answer is one chunk whose
/// choice carries a `message` where a chunk's carries a `delta`.
///
/// Read by hand ([`ChunkSeed`]), as [`Delta`] is, so that what nearly every chunk carries
/// is read on a short path and the rest (usage, an error) out of line: measured over three
/// code layouts, a streamed run costs 0.5 µs less than with serde's derived readers
/// (docs/performance.md).
#[derive(Default)]
struct Chunk<'a> {
    id: Text<'a>,
    model: Text<'a>,
    choices: Option<Few<Choice<'a>>>,
    // Boxed, as `error` is: both are rare, and inline they would double the chunk's size.
    usage: Option<Box<UsageWire>>,
    /// llama.cpp and gateways report a failure as `{"error": ...}`, in a 200 body or
    /// mid-stream.
    error: Option<Box<Value>>,
}

impl<'a> Chunk<'a> {
    /// Reads one stream event's chunk into this (empty) one; `ids` says whether its `id` and
    /// `model` are still wanted (a stream repeats both on every chunk, and the accumulator
    /// keeps the first).
    fn fill(&mut self, data: &'a str, ids: bool) -> serde_json::Result<()> {
        let mut reader = serde_json::Deserializer::from_str(data);
        DeserializeSeed::deserialize(ChunkSeed { ids, chunk: self }, &mut reader)?;
        reader.end()
    }

    #[cfg(test)]
    fn read(data: &'a str, ids: bool) -> serde_json::Result<Self> {
        let mut chunk = Chunk::default();
        chunk.fill(data, ids)?;
        Ok(chunk)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Chunk<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        let mut chunk = Chunk::default();
        let seed = ChunkSeed {
            ids: true,
            chunk: &mut chunk,
        };
        DeserializeSeed::deserialize(seed, deserializer)?;
        Ok(chunk)
    }
}

/// A chunk's keys: the ones read, and the rest.
#[derive(Clone, Copy, Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum ChunkKey {
    Id,
    Model,
    Choices,
    Usage,
    Error,
    /// Groq's own object, whose `usage` a stream's last chunk carries.
    #[serde(rename = "x_groq")]
    XGroq,
    #[serde(other)]
    Other,
}

/// Reads a [`Chunk`] into the one given, its `id` and `model` only when `ids` (skipped
/// otherwise, as unknown keys are). A key given twice is an error, as in serde's derived
/// readers. Filled in place: a chunk is some 200 bytes, and returned by value it would be
/// copied at each of serde's layers, for every event of a stream.
struct ChunkSeed<'c, 'de> {
    ids: bool,
    chunk: &'c mut Chunk<'de>,
}

impl<'de> DeserializeSeed<'de> for ChunkSeed<'_, 'de> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> std::result::Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ChunkSeed<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a chat completion (a JSON object)")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> std::result::Result<(), M::Error> {
        let chunk = self.chunk;
        let mut seen = Seen::default();
        while let Some(key) = map.next_key()? {
            match key {
                ChunkKey::Choices => {
                    seen.once(ChunkKey::Choices as u8, "choices")?;
                    // `null` is no list, as a missing key is.
                    let choices = chunk.choices.insert(Few::default());
                    if !map.next_value_seed(FewInto(choices))? {
                        chunk.choices = None;
                    }
                }
                ChunkKey::Id if self.ids => {
                    seen.once(ChunkKey::Id as u8, "id")?;
                    chunk.id = map.next_value()?;
                }
                ChunkKey::Model if self.ids => {
                    seen.once(ChunkKey::Model as u8, "model")?;
                    chunk.model = map.next_value()?;
                }
                ChunkKey::Usage => {
                    seen.once(ChunkKey::Usage as u8, "usage")?;
                    // `null` says nothing; it does not undo Groq's figures read before it.
                    if let Some(usage) = rare(&mut map)? {
                        chunk.usage = Some(usage);
                    }
                }
                ChunkKey::XGroq => {
                    seen.once(ChunkKey::XGroq as u8, "x_groq")?;
                    // The chunk's own `usage`, where there is one, is the figure.
                    let groq: Option<Box<GroqExtra>> = rare(&mut map)?;
                    if let Some(usage) = groq.and_then(|g| g.usage) {
                        chunk.usage.get_or_insert(usage);
                    }
                }
                ChunkKey::Error => {
                    seen.once(ChunkKey::Error as u8, "error")?;
                    chunk.error = rare(&mut map)?;
                }
                ChunkKey::Id | ChunkKey::Model | ChunkKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// A value few chunks carry, read out of line (boxed; `null` is none).
#[cold]
#[inline(never)]
fn rare<'de, M: MapAccess<'de>, T: Deserialize<'de>>(
    map: &mut M,
) -> std::result::Result<Option<Box<T>>, M::Error> {
    map.next_value()
}

/// The keys of one object read so far, a bit each (the key's place in its enum): a key
/// given twice is an error, as serde's derived readers make it.
#[derive(Default)]
struct Seen(u8);

impl Seen {
    fn once<E: serde::de::Error>(
        &mut self,
        place: u8,
        key: &'static str,
    ) -> std::result::Result<(), E> {
        let bit = 1 << place;
        if self.0 & bit != 0 {
            return Err(E::duplicate_field(key));
        }
        self.0 |= bit;
        Ok(())
    }
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow, default, alias = "message")]
    delta: Option<Delta<'a>>,
    #[serde(borrow, default)]
    finish_reason: Text<'a>,
}

/// A choice's `delta` (or an answer's `message`).
#[derive(Default)]
struct Delta<'a> {
    content: TextOrParts<'a>,
    // A `Vec`, empty without allocating when absent: a text chunk then stays small, and
    // the chunk is moved whole through serde's layers for every event.
    tool_calls: Vec<CallWire<'a>>,
    /// What few deltas carry, boxed: the delta is moved through serde's layers for every
    /// event, so its size is paid on every chunk.
    extra: Option<Box<DeltaExtra<'a>>>,
}

/// A delta's rare fields.
#[derive(Default)]
struct DeltaExtra<'a> {
    /// OpenAI's refusal (structured outputs): what the model said instead of an answer.
    refusal: Text<'a>,
    reasoning_content: Text<'a>,
    reasoning: Text<'a>,
    /// OpenRouter's structured reasoning: the same text as `reasoning`, with what the plain
    /// text cannot carry (a signature, reasoning the vendor encrypted).
    reasoning_details: Vec<DetailWire<'a>>,
}

/// One of OpenRouter's `reasoning_details`: `reasoning.text` (text, signature),
/// `reasoning.summary` (summary) or `reasoning.encrypted` (data).
#[derive(Deserialize)]
struct DetailWire<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Text<'a>,
    #[serde(borrow, default)]
    text: Text<'a>,
    #[serde(borrow, default)]
    summary: Text<'a>,
    #[serde(borrow, default)]
    signature: Text<'a>,
    #[serde(borrow, default)]
    data: Text<'a>,
}

impl<'a> Delta<'a> {
    fn refusal(&self) -> Option<&Str<'a>> {
        self.extra.as_ref().and_then(|extra| extra.refusal.as_ref())
    }

    /// The reasoning, under either name (the first that says something).
    fn reasoning(&self) -> Option<&Str<'a>> {
        let extra = self.extra.as_ref()?;
        [&extra.reasoning_content, &extra.reasoning]
            .into_iter()
            .find_map(|r| r.as_ref().filter(|r| !r.is_empty()))
    }
}

/// A delta's keys: the ones read, and the rest.
#[derive(Clone, Copy, Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum DeltaKey {
    Content,
    ToolCalls,
    Refusal,
    ReasoningContent,
    Reasoning,
    ReasoningDetails,
    #[serde(other)]
    Other,
}

impl<'de: 'a, 'a> Deserialize<'de> for Delta<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        struct DeltaVisitor;

        impl<'de> Visitor<'de> for DeltaVisitor {
            type Value = Delta<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a delta or message (a JSON object)")
            }

            fn visit_map<M: MapAccess<'de>>(
                self,
                mut map: M,
            ) -> std::result::Result<Delta<'de>, M::Error> {
                let mut delta = Delta::default();
                let mut seen = Seen::default();
                while let Some(key) = map.next_key()? {
                    match key {
                        DeltaKey::Content => {
                            seen.once(DeltaKey::Content as u8, "content")?;
                            delta.content = map.next_value()?;
                        }
                        DeltaKey::ToolCalls => {
                            seen.once(DeltaKey::ToolCalls as u8, "tool_calls")?;
                            delta.tool_calls =
                                map.next_value::<Option<Vec<_>>>()?.unwrap_or_default();
                        }
                        DeltaKey::Refusal
                        | DeltaKey::ReasoningContent
                        | DeltaKey::Reasoning
                        | DeltaKey::ReasoningDetails => {
                            read_extra(&mut map, key, &mut seen, &mut delta.extra)?;
                        }
                        DeltaKey::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(delta)
            }
        }

        deserializer.deserialize_map(DeltaVisitor)
    }
}

/// Reads one of a delta's rare fields, out of line.
#[cold]
#[inline(never)]
fn read_extra<'de, M: MapAccess<'de>>(
    map: &mut M,
    key: DeltaKey,
    seen: &mut Seen,
    extra: &mut Option<Box<DeltaExtra<'de>>>,
) -> std::result::Result<(), M::Error> {
    let name = match key {
        DeltaKey::Refusal => "refusal",
        DeltaKey::ReasoningContent => "reasoning_content",
        DeltaKey::ReasoningDetails => "reasoning_details",
        _ => "reasoning",
    };
    seen.once(key as u8, name)?;
    if let DeltaKey::ReasoningDetails = key {
        // OpenRouter sends `[]` on most chunks: a box only for details.
        let details = map
            .next_value::<Option<Vec<DetailWire<'de>>>>()?
            .unwrap_or_default();
        if !details.is_empty() {
            extra.get_or_insert_with(Box::default).reasoning_details = details;
        }
        return Ok(());
    }
    // OpenAI sends `"refusal": null` in every stream's first delta: a box only for a value.
    let Some(value) = map.next_value::<Text<'de>>()? else {
        return Ok(());
    };
    let extra = extra.get_or_insert_with(Box::default);
    let slot = match key {
        DeltaKey::Refusal => &mut extra.refusal,
        DeltaKey::ReasoningContent => &mut extra.reasoning_content,
        _ => &mut extra.reasoning,
    };
    *slot = Some(value);
    Ok(())
}

#[derive(Deserialize)]
struct CallWire<'a> {
    #[serde(default)]
    index: Option<usize>,
    #[serde(borrow, default)]
    id: Text<'a>,
    #[serde(borrow, default)]
    function: Option<FunctionWire<'a>>,
}

#[derive(Deserialize)]
struct FunctionWire<'a> {
    #[serde(borrow, default)]
    name: Text<'a>,
    #[serde(borrow, default)]
    arguments: Option<Arguments<'a>>,
}

/// A call's arguments: JSON text, as the API sends them (a fragment of it, streamed), or
/// the object itself, as some servers send it.
enum Arguments<'a> {
    Text(Str<'a>),
    Value(Box<Value>),
}

impl<'de: 'a, 'a> Deserialize<'de> for Arguments<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Arguments<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("arguments as JSON text or a JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Self::Value, E> {
                Ok(Arguments::Text(Str(std::borrow::Cow::Borrowed(v))))
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<Self::Value, E> {
                Ok(Arguments::Text(Str(std::borrow::Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E>(self, v: String) -> std::result::Result<Self::Value, E> {
                Ok(Arguments::Text(Str(std::borrow::Cow::Owned(v))))
            }
            fn visit_bool<E>(self, v: bool) -> std::result::Result<Self::Value, E> {
                Ok(Arguments::Value(Box::new(Value::Bool(v))))
            }
            fn visit_i64<E>(self, v: i64) -> std::result::Result<Self::Value, E> {
                Ok(Arguments::Value(Box::new(Value::from(v))))
            }
            fn visit_u64<E>(self, v: u64) -> std::result::Result<Self::Value, E> {
                Ok(Arguments::Value(Box::new(Value::from(v))))
            }
            fn visit_f64<E>(self, v: f64) -> std::result::Result<Self::Value, E> {
                Ok(Arguments::Value(Box::new(Value::from(v))))
            }
            fn visit_unit<E>(self) -> std::result::Result<Self::Value, E> {
                Ok(Arguments::Value(Box::new(Value::Null)))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> std::result::Result<Self::Value, A::Error> {
                Value::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
                    .map(|value| Arguments::Value(Box::new(value)))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<Self::Value, A::Error> {
                Value::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(|value| Arguments::Value(Box::new(value)))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// Usage from a Chat Completions `usage` object; a count present as `null` is 0. Counts
/// saturate: no vendor figure can overflow.
#[derive(Deserialize)]
struct UsageWire {
    #[serde(default, deserialize_with = "present")]
    prompt_tokens: Option<Count>,
    #[serde(default, deserialize_with = "present")]
    completion_tokens: Option<Count>,
    #[serde(default, deserialize_with = "present")]
    total_tokens: Option<Count>,
    #[serde(default)]
    prompt_tokens_details: Option<Details>,
    #[serde(default)]
    completion_tokens_details: Option<Details>,
    /// DeepSeek's name for the cached prompt tokens.
    #[serde(default, deserialize_with = "present")]
    prompt_cache_hit_tokens: Option<Count>,
}

/// Groq's `x_groq`: its request id, and the usage at a stream's end (a stream that was not
/// asked for a usage chunk, or a server that sends none).
#[derive(Deserialize)]
struct GroqExtra {
    #[serde(default)]
    usage: Option<Box<UsageWire>>,
}

/// `prompt_tokens_details` (its `cached_tokens`, and OpenRouter's `cache_write_tokens`) or
/// `completion_tokens_details` (its `reasoning_tokens`); a count present as `null` is 0.
#[derive(Deserialize)]
#[allow(clippy::struct_field_names)] // the vendor's names
struct Details {
    #[serde(default, deserialize_with = "present")]
    cached_tokens: Option<Count>,
    #[serde(default, deserialize_with = "present")]
    cache_write_tokens: Option<Count>,
    #[serde(default, deserialize_with = "present")]
    reasoning_tokens: Option<Count>,
}

impl UsageWire {
    /// The usage, or `None` when the object said nothing.
    fn usage(&self) -> Option<TokenUsage> {
        if self.prompt_tokens.is_none()
            && self.completion_tokens.is_none()
            && self.total_tokens.is_none()
            && self.prompt_tokens_details.is_none()
            && self.completion_tokens_details.is_none()
            && self.prompt_cache_hit_tokens.is_none()
        {
            return None;
        }
        let read = |count: Option<Count>| count.map_or(0, |c| c.0);
        let (prompt, completion) = (read(self.prompt_tokens), read(self.completion_tokens));
        let total = self
            .total_tokens
            .map_or_else(|| prompt.saturating_add(completion), |t| t.0);
        let cached = self
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens)
            .or(self.prompt_cache_hit_tokens);
        let written = self
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cache_write_tokens);
        let reasoning = self
            .completion_tokens_details
            .as_ref()
            .and_then(|d| d.reasoning_tokens);
        Some(
            TokenUsage::new(prompt, completion, total)
                .with_cached(read(cached))
                .with_cache_write(read(written))
                .with_reasoning(read(reasoning)),
        )
    }
}

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
        let Some(choice) = chunk.choices.as_ref().and_then(Few::first) else {
            return;
        };
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
fn refused_call(error: Error) -> Result<CompletionResponse> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_is_read_whole_and_its_ids_only_while_wanted() {
        let data = r#"{"id":"c1","object":"chat.completion.chunk","model":"m1",
            "choices":[{"index":0,"delta":{"role":"assistant","content":"Hi",
            "refusal":"no","reasoning_content":"","reasoning":"think",
            "tool_calls":[{"index":0,"id":"call","function":{"name":"f","arguments":"{}"}}]},
            "finish_reason":"stop"},{"index":1,"delta":{"content":"other"}}],
            "usage":{"prompt_tokens":3,"completion_tokens":2},"error":null}"#;
        let chunk = Chunk::read(data, true).unwrap();
        assert_eq!(chunk.id.as_deref(), Some("c1"));
        assert_eq!(chunk.model.as_deref(), Some("m1"));
        assert_eq!(
            chunk
                .usage
                .as_deref()
                .and_then(UsageWire::usage)
                .map(|u| u.total_tokens),
            Some(5)
        );
        assert!(chunk.error.is_none());
        let choices = chunk.choices.as_ref().unwrap();
        assert_eq!(choices.iter().count(), 2);
        let choice = choices.first().unwrap();
        assert_eq!(choice.finish_reason.as_deref(), Some("stop"));
        let delta = choice.delta.as_ref().unwrap();
        assert_eq!(delta.content.text.as_deref(), Some("Hi"));
        assert_eq!(delta.refusal().map(|r| &**r), Some("no"));
        // An empty `reasoning_content` says nothing: the other name's reasoning is taken.
        assert_eq!(delta.reasoning().map(|r| &**r), Some("think"));
        assert_eq!(delta.tool_calls.len(), 1);
        assert_eq!(delta.tool_calls[0].id.as_deref(), Some("call"));
        // Once the stream's id and model are known, a chunk's are skipped, the rest read.
        let chunk = Chunk::read(data, false).unwrap();
        assert!(chunk.id.is_none() && chunk.model.is_none());
        assert!(chunk.usage.is_some() && chunk.choices.is_some());
    }

    #[test]
    fn chunk_readers_read_null_as_absent_and_reject_what_is_not_a_chunk() {
        let chunk =
            Chunk::read(r#"{"choices":[{"delta":{"content":null,"tool_calls":null,"refusal":null}}],"usage":null}"#, true)
                .unwrap();
        let delta = chunk
            .choices
            .as_ref()
            .and_then(Few::first)
            .and_then(|c| c.delta.as_ref())
            .unwrap();
        assert!(delta.content.text.is_none() && delta.tool_calls.is_empty());
        assert!(delta.refusal().is_none() && delta.reasoning().is_none());
        assert!(delta.extra.is_none(), "a null rare field allocates nothing");
        assert!(chunk.usage.is_none());
        // `choices` as null is no list, as a missing key is; an empty list is a list.
        assert!(
            Chunk::read(r#"{"choices":null}"#, true)
                .unwrap()
                .choices
                .is_none()
        );
        assert!(Chunk::read("{}", true).unwrap().choices.is_none());
        let empty = Chunk::read(r#"{"choices":[]}"#, true).unwrap().choices;
        assert!(empty.is_some_and(|choices| choices.first().is_none()));
        let message =
            Chunk::read(r#"{"choices":[{"message":{"content":"whole"}}]}"#, true).unwrap();
        let choice = message.choices.as_ref().and_then(Few::first).unwrap();
        assert_eq!(
            choice.delta.as_ref().unwrap().content.text.as_deref(),
            Some("whole")
        );
        for (bad, says) in [
            (
                r#"{"choices":[],"choices":[]}"#,
                "duplicate field `choices`",
            ),
            (r#"{"id":"a","id":"b"}"#, "duplicate field `id`"),
            (
                r#"{"choices":[{"delta":{"content":"a","content":"b"}}]}"#,
                "duplicate field `content`",
            ),
            (
                r#"{"choices":[{"delta":{"refusal":"a","refusal":"b"}}]}"#,
                "duplicate field `refusal`",
            ),
            (r#"["not", "a", "chunk"]"#, "invalid type"),
            (r#"{"choices":[{"delta":["x"]}]}"#, "invalid type"),
            (
                r#"{"choices":[{"delta":{"content":"a"}}]} trailing"#,
                "trailing characters",
            ),
            (r#"{"choices":[{"delta":{"content":"a"#, "EOF"),
        ] {
            let err = Chunk::read(bad, true)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }
}
