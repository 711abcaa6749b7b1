//! Cohere's Chat API, version 2 (`POST /v2/chat`).

use harness_core::{
    Block, BoxStream, CompletionResponse, Content, Error, FinishReason, Llm, LlmEvent, Message,
    ModelInfo, ModelSettings, Request, Result, Role, Supports, Thinking, TokenUsage, ToolChoice,
    ToolSpec, content::merge_blocks,
};
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap as _, SerializeSeq as _};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::connection::{Connection, connection_setters};
use crate::rest::json::{self, Vendor};
use crate::rest::{self, Accumulator, HttpClient, SseEvent};
use crate::wire::{
    ContentText, Count, DataUrl, JsonText, Parameters, Settings, Str, Text, call_from_text,
    call_from_value, present,
};

const PATH: &str = "/chat";
/// Who answers, as errors say it.
const VENDOR: Vendor<'static> = Vendor::new(ID, "Cohere");
/// The provider id errors and telemetry report.
const ID: &str = "cohere";
/// The [`Thinking::provider`] of reasoning read from, and sent back to, Cohere.
const THINKING_FORMAT: &str = "cohere";
/// The error type of an answer Cohere refused because the model's tool call came out wrong.
const INVALID_TOOL_GENERATION: &str = "INVALID_TOOL_GENERATION";

/// A Command model behind Cohere's Chat API (v2).
///
/// The model's `tool_plan` (what it says it will do before calling tools) is the turn's text,
/// and goes back as the plan of the turn that made the calls. A reasoning model's `thinking`
/// blocks come back as [`Thinking`] blocks and are sent back with their turn;
/// `with_reasoning` asks for thinking with the level's token budget. A structured output
/// goes in `response_format` (`json_object` with the schema). Cohere's `tool_choice` cannot
/// name a tool: asking for one tool offers that tool alone, with tool use required. Images
/// go to the models that read them (`command-a-vision`); documents are not sent (the chat
/// API takes no files). Citations are not kept.
///
/// ```no_run
/// use harness_providers::Cohere;
/// use harness_core::{ModelSettings, ReasoningLevel};
///
/// let model = Cohere::builder("command-a-reasoning-08-2025")
///     .settings(ModelSettings::new().with_reasoning(ReasoningLevel::Low))
///     .build()?;
/// # Ok::<(), harness_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Cohere {
    client: Arc<HttpClient>,
    model: String,
    defaults: ModelSettings,
}

/// Builds a [`Cohere`] model.
#[derive(Debug, Clone)]
#[must_use = "call build() to get the model"]
pub struct CohereBuilder {
    model: String,
    connection: Connection,
    defaults: ModelSettings,
}

impl Cohere {
    /// `model`, with the key from `CO_API_KEY` (the variable Cohere's SDKs read) or
    /// `COHERE_API_KEY`, and the base URL from `COHERE_BASE_URL` when set.
    ///
    /// # Errors
    /// As [`CohereBuilder::build`].
    pub fn new(model: impl Into<String>) -> Result<Self> {
        Self::builder(model).build()
    }

    /// A builder for `model`.
    pub fn builder(model: impl Into<String>) -> CohereBuilder {
        CohereBuilder {
            model: model.into(),
            connection: Connection::default(),
            defaults: ModelSettings::default(),
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

    /// The request body this model would send, as JSON, without sending it: `model`,
    /// `messages`, `stream` and only what is set. (What is sent is written straight from the
    /// request, without this value in between.)
    pub fn request_body(&self, request: &Request<'_>, stream: bool) -> Value {
        let body = self.body(request, stream);
        // Serialising these types cannot fail: every map key is a string.
        serde_json::to_value(rest::with_extra(&body, &body.extra)).unwrap_or_default()
    }

    /// The request body, borrowed from the request.
    fn body<'a>(&'a self, request: &Request<'a>, stream: bool) -> Body<'a> {
        let settings = Settings::merge(request.settings, &self.defaults);
        let offered = !request.tools.is_empty();
        let (tool_choice, only) = match settings.tool_choice.filter(|_| offered) {
            Some(ToolChoice::Required) => (Some("REQUIRED"), None),
            Some(ToolChoice::None) => (Some("NONE"), None),
            // Cohere cannot name the tool: it is offered alone, and a call required.
            Some(ToolChoice::Tool(name)) => (Some("REQUIRED"), Some(name.as_str())),
            // Auto is Cohere's default, and a choice added later it cannot say.
            _ => (None, None),
        };
        Body {
            model: &self.model,
            extra: settings.extra,
            messages: Messages(crate::wire::with_call_ids(request.messages)),
            tools: offered.then_some(Tools {
                specs: request.tools,
                only,
            }),
            tool_choice,
            response_format: request.output.map(|output| ResponseFormat {
                kind: "json_object",
                json_schema: &output.schema,
            }),
            thinking: settings.reasoning.map(|level| ThinkingWire {
                kind: "enabled",
                token_budget: level.budget_tokens(),
            }),
            max_tokens: settings.max_tokens,
            stop_sequences: settings.stop,
            temperature: settings.temperature,
            p: settings.top_p,
            stream,
        }
    }
}

impl CohereBuilder {
    connection_setters!();

    /// Default settings for every request, under the agent's and the run's: the output
    /// limit, temperature, `top_p` (Cohere's `p`), stop sequences, reasoning
    /// (`with_reasoning`: thinking with the level's token budget), ...
    pub fn settings(mut self, settings: ModelSettings) -> Self {
        self.defaults = settings;
        self
    }

    /// The model.
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error for `max_concurrency`
    /// 0 or a key that is not a valid header.
    pub fn build(self) -> Result<Cohere> {
        let mut config =
            self.connection
                .config(ID, "https://api.cohere.com/v2", Some("COHERE_BASE_URL"));
        if let Some(key) = self.connection.key(&["CO_API_KEY", "COHERE_API_KEY"]) {
            config
                .headers
                .push(("authorization".into(), format!("Bearer {key}")));
        }
        Ok(Cohere {
            client: Arc::new(HttpClient::new(config)?),
            model: self.model,
            defaults: self.defaults,
        })
    }
}

#[async_trait::async_trait]
impl Llm for Cohere {
    async fn generate(&self, request: Request<'_>) -> Result<CompletionResponse> {
        let body = self.body(&request, false);
        match self
            .client
            .post(PATH, &rest::with_extra(&body, &body.extra))
            .await
        {
            Ok(answer) => ChatAccumulator::new(VENDOR).answer(&answer),
            Err(error) => refused_call(error),
        }
    }

    fn stream(self: Arc<Self>, request: Request<'_>) -> BoxStream<'static, Result<LlmEvent>> {
        let body = self.body(&request, true);
        rest::stream(
            Arc::clone(&self.client),
            PATH,
            &rest::with_extra(&body, &body.extra),
            ChatAccumulator::new(VENDOR),
        )
    }

    fn info(&self) -> ModelInfo {
        let supports = Supports::new()
            .with_tools(true)
            .with_images(self.model.contains("vision"))
            .with_structured_output(true);
        crate::models::info(ID, &self.model, supports)
    }
}

// The request ---------------------------------------------------------------------------------

/// A v2 chat request, borrowed from the [`Request`]: the unset fields left out.
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
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<ThinkingWire>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop_sequences: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    p: Option<f64>,
    stream: bool,
}

/// `{"type": "json_object", "json_schema": {...}}`.
#[derive(Serialize)]
struct ResponseFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    json_schema: &'a Value,
}

/// `{"type": "enabled", "token_budget": n}`.
#[derive(Serialize)]
struct ThinkingWire {
    #[serde(rename = "type")]
    kind: &'static str,
    token_budget: u32,
}

/// The tools, each `{"type": "function", "function": {name, description, parameters}}`;
/// with `only`, that tool alone when it is among them.
struct Tools<'a> {
    specs: &'a [Arc<ToolSpec>],
    only: Option<&'a str>,
}

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Function<'a> {
            name: &'a str,
            description: &'a str,
            parameters: Parameters<'a>,
        }
        #[derive(Serialize)]
        struct Tool<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            function: Function<'a>,
        }
        let only = self
            .only
            .filter(|name| self.specs.iter().any(|tool| tool.name == *name));
        let specs = self
            .specs
            .iter()
            .filter(|tool| only.is_none_or(|name| tool.name == name));
        serializer.collect_seq(specs.map(|tool| Tool {
            kind: "function",
            function: Function {
                name: &tool.name,
                description: &tool.description,
                parameters: Parameters::of(&tool.parameters),
            },
        }))
    }
}

/// The messages in v2 chat form, each role its own shape, in the transcript's order (system
/// messages included where they stand). An assistant message with nothing to send (an empty
/// answer kept in the transcript) is left out: Cohere refuses one.
///
/// Every call and result carries an id here ([`crate::wire::with_call_ids`]).
struct Messages<'a>(Cow<'a, [Message]>);

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        for message in self.0.iter() {
            if message.role == Role::Assistant
                && message.tool_calls.is_empty()
                && ContentText(&message.content).is_empty()
                && thinking(&message.content).next().is_none()
            {
                continue;
            }
            seq.serialize_element(&MessageWire(message))?;
        }
        seq.end()
    }
}

/// One message: `{"role", "content"}`; an assistant's calls as `tool_calls`, its text then
/// as `tool_plan`; a tool result with its `tool_call_id`.
struct MessageWire<'a>(&'a Message);

impl Serialize for MessageWire<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let message = self.0;
        let text = ContentText(&message.content);
        let mut map = serializer.serialize_map(None)?;
        match message.role {
            Role::User => {
                map.serialize_entry("role", "user")?;
                map.serialize_entry("content", &UserContent(&message.content))?;
            }
            Role::Assistant if !message.tool_calls.is_empty() => {
                map.serialize_entry("role", "assistant")?;
                if !text.is_empty() {
                    map.serialize_entry("tool_plan", &text)?;
                }
                if thinking(&message.content).next().is_some() {
                    map.serialize_entry("content", &AssistantContent(&message.content, false))?;
                }
                map.serialize_entry("tool_calls", &Calls(&message.tool_calls))?;
            }
            Role::Assistant => {
                map.serialize_entry("role", "assistant")?;
                if thinking(&message.content).next().is_some() {
                    map.serialize_entry("content", &AssistantContent(&message.content, true))?;
                } else {
                    map.serialize_entry("content", &text)?;
                }
            }
            Role::Tool => {
                map.serialize_entry("role", "tool")?;
                map.serialize_entry(
                    "tool_call_id",
                    message.tool_call_id.as_deref().unwrap_or(""),
                )?;
                // Cohere's tool results are text (or documents): images are not sent.
                map.serialize_entry("content", &text)?;
            }
            Role::System => {
                map.serialize_entry("role", "system")?;
                map.serialize_entry("content", &text)?;
            }
        }
        map.end()
    }
}

/// The reasoning of a message that goes back to Cohere: Cohere's own (or unattributed),
/// not redacted, not empty.
fn thinking(content: &Content) -> impl Iterator<Item = &str> {
    let blocks = match content {
        Content::Blocks(blocks) => &blocks[..],
        Content::Text(_) => &[][..],
    };
    blocks.iter().filter_map(|block| match block {
        Block::Thinking(thinking)
            if thinking.is_for(THINKING_FORMAT)
                && thinking.redacted.is_none()
                && !thinking.text.is_empty() =>
        {
            Some(thinking.text.as_str())
        }
        _ => None,
    })
}

/// An assistant's content as blocks: its thinking, then (`text`) its text.
struct AssistantContent<'a>(&'a Content, bool);

impl Serialize for AssistantContent<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        for text in thinking(self.0) {
            seq.serialize_element(&Part::Thinking { thinking: text })?;
        }
        let text = ContentText(self.0);
        if self.1 && !text.is_empty() {
            seq.serialize_element(&PartText { kind: "text", text })?;
        }
        seq.end()
    }
}

/// A user's content: a string when it has no image, else text and image parts in order.
struct UserContent<'a>(&'a Content);

impl Serialize for UserContent<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let blocks = match self.0 {
            Content::Blocks(blocks) if blocks.iter().any(|b| matches!(b, Block::Image(_))) => {
                blocks
            }
            content => return ContentText(content).serialize(serializer),
        };
        serializer.collect_seq(blocks.iter().filter_map(|block| match block {
            Block::Text(t) if !t.text.is_empty() => Some(Part::Text { text: &t.text }),
            Block::Image(image) => Some(Part::ImageUrl {
                image_url: ImageUrl {
                    url: DataUrl(image.source()),
                },
            }),
            // Reasoning is the model's; a document has no place in Cohere's chat.
            _ => None,
        }))
    }
}

/// A content part as sent.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: &'a str },
    Thinking { thinking: &'a str },
    ImageUrl { image_url: ImageUrl<'a> },
}

/// A text part whose text is written from the content as it is.
#[derive(Serialize)]
struct PartText<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: ContentText<'a>,
}

#[derive(Serialize)]
struct ImageUrl<'a> {
    url: DataUrl<'a>,
}

/// An assistant's calls, each `{id, type: "function", function: {name, arguments}}`, the
/// arguments as JSON text (a call whose arguments were not an object goes back as `{}`).
struct Calls<'a>(&'a [harness_core::ToolCall]);

impl Serialize for Calls<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Function<'a> {
            name: &'a str,
            arguments: JsonText<'a, Map<String, Value>>,
        }
        #[derive(Serialize)]
        struct Call<'a> {
            id: &'a str,
            #[serde(rename = "type")]
            kind: &'static str,
            function: Function<'a>,
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

fn finish_reason(value: &str) -> FinishReason {
    match value {
        "COMPLETE" | "STOP_SEQUENCE" | "TOOL_CALL" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        // TIMEOUT, and whatever comes later.
        _ => FinishReason::Other,
    }
}

/// A non-streamed answer: `{id, message, finish_reason, usage}`; or, with `error_type` or
/// `error` (or `finish_reason` `ERROR`), the vendor's error.
#[derive(Deserialize)]
struct AnswerIn<'a> {
    #[serde(borrow, default)]
    id: Text<'a>,
    #[serde(borrow, default)]
    message: Option<MessageIn<'a>>,
    #[serde(borrow, default)]
    finish_reason: Text<'a>,
    #[serde(default)]
    usage: Object<UsageIn>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(borrow, default)]
    error_type: Text<'a>,
}

/// An answer's `message`: the turn, or the words of an error object.
enum MessageIn<'a> {
    Turn(TurnIn<'a>),
    Words(Str<'a>),
}

impl<'de: 'a, 'a> Deserialize<'de> for MessageIn<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        struct MessageVisitor;

        impl<'de> Visitor<'de> for MessageVisitor {
            type Value = MessageIn<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a message object or an error's text")
            }

            fn visit_map<M: MapAccess<'de>>(
                self,
                map: M,
            ) -> std::result::Result<Self::Value, M::Error> {
                TurnIn::deserialize(de::value::MapAccessDeserializer::new(map)).map(MessageIn::Turn)
            }

            fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Self::Value, E> {
                Ok(MessageIn::Words(Str(Cow::Borrowed(v))))
            }

            fn visit_str<E>(self, v: &str) -> std::result::Result<Self::Value, E> {
                Ok(MessageIn::Words(Str(Cow::Owned(v.to_owned()))))
            }
        }

        deserializer.deserialize_any(MessageVisitor)
    }
}

/// The answer's `message`.
#[derive(Deserialize)]
struct TurnIn<'a> {
    #[serde(borrow, default)]
    content: Option<Vec<ContentIn<'a>>>,
    #[serde(borrow, default)]
    tool_plan: Text<'a>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<CallIn<'a>>>,
}

/// A content block: whole in an answer; a stream's `content-start` (its text empty) and
/// `content-delta` (its text or thinking, no type).
#[derive(Deserialize)]
struct ContentIn<'a> {
    #[serde(borrow, rename = "type", default)]
    kind: Text<'a>,
    #[serde(borrow, default)]
    text: Text<'a>,
    #[serde(borrow, default)]
    thinking: Text<'a>,
}

/// A tool call: whole in an answer; a stream's `tool-call-start` (id, name, the arguments
/// begun) and `tool-call-delta` (more arguments).
#[derive(Deserialize)]
struct CallIn<'a> {
    #[serde(borrow, default)]
    id: Text<'a>,
    #[serde(borrow, default)]
    function: Option<FunctionIn<'a>>,
}

#[derive(Deserialize)]
struct FunctionIn<'a> {
    #[serde(borrow, default)]
    name: Text<'a>,
    #[serde(borrow, default)]
    arguments: Option<ArgumentsIn<'a>>,
}

/// Arguments as Cohere sends them, JSON text; or a value, as a proxy might.
#[derive(Deserialize)]
#[serde(untagged)]
enum ArgumentsIn<'a> {
    Text(#[serde(borrow)] Str<'a>),
    Value(Value),
}

/// One stream event: `message-start`, `content-start`, `content-delta`, `content-end`,
/// `tool-plan-delta`, `tool-call-start`, `tool-call-delta`, `tool-call-end`,
/// `citation-start`, `citation-end`, `message-end` (and whatever comes later).
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(borrow, rename = "type", default)]
    kind: Text<'a>,
    #[serde(borrow, default)]
    id: Text<'a>,
    #[serde(default)]
    index: Option<usize>,
    #[serde(borrow, default)]
    delta: Option<DeltaIn<'a>>,
    /// A bare error in the stream: `{"message": "...", "error_type": "..."}`.
    #[serde(default)]
    message: Option<Value>,
    #[serde(borrow, default)]
    error_type: Text<'a>,
}

#[derive(Deserialize)]
struct DeltaIn<'a> {
    #[serde(borrow, default)]
    message: Option<DeltaMessage<'a>>,
    #[serde(borrow, default)]
    finish_reason: Text<'a>,
    #[serde(default)]
    usage: Object<UsageIn>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(borrow, default)]
    error_type: Text<'a>,
}

/// What a delta carries: one content block or one call (a list of them, empty, at
/// `message-start`), or a piece of the plan.
#[derive(Deserialize)]
struct DeltaMessage<'a> {
    #[serde(borrow, default)]
    content: Object<ContentIn<'a>>,
    #[serde(borrow, default)]
    tool_plan: Text<'a>,
    #[serde(borrow, default)]
    tool_calls: Object<CallIn<'a>>,
}

/// A field read when it is a JSON object and left aside when it is anything else: the same
/// key holds an object in one event and a list in another, and a usage figure that is not
/// an object must not cost the answer it came with.
struct Object<T>(Option<T>);

impl<T> Default for Object<T> {
    fn default() -> Self {
        Self(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        struct ObjectVisitor<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
            type Value = Object<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }

            fn visit_map<M: MapAccess<'de>>(
                self,
                map: M,
            ) -> std::result::Result<Object<T>, M::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(|t| Object(Some(t)))
            }

            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Object<T>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Object(None))
            }

            fn visit_bool<E>(self, _: bool) -> std::result::Result<Object<T>, E> {
                Ok(Object(None))
            }

            fn visit_i64<E>(self, _: i64) -> std::result::Result<Object<T>, E> {
                Ok(Object(None))
            }

            fn visit_u64<E>(self, _: u64) -> std::result::Result<Object<T>, E> {
                Ok(Object(None))
            }

            fn visit_f64<E>(self, _: f64) -> std::result::Result<Object<T>, E> {
                Ok(Object(None))
            }

            fn visit_str<E>(self, _: &str) -> std::result::Result<Object<T>, E> {
                Ok(Object(None))
            }

            fn visit_unit<E>(self) -> std::result::Result<Object<T>, E> {
                Ok(Object(None))
            }

            fn visit_none<E>(self) -> std::result::Result<Object<T>, E> {
                Ok(Object(None))
            }

            fn visit_some<D: Deserializer<'de>>(
                self,
                d: D,
            ) -> std::result::Result<Object<T>, D::Error> {
                d.deserialize_any(self)
            }
        }

        deserializer.deserialize_any(ObjectVisitor(PhantomData))
    }
}

/// `usage`: `tokens` (what the model read and wrote, Cohere's prompt template included),
/// `billed_units` (what is charged, without the template) and `cached_tokens`. A count
/// present (even as `null`, which counts 0) is taken; counts saturate, never overflow.
#[derive(Deserialize, Default)]
struct UsageIn {
    #[serde(default)]
    tokens: Object<Counts>,
    #[serde(default)]
    billed_units: Object<Counts>,
    #[serde(default, deserialize_with = "present")]
    cached_tokens: Option<Count>,
}

#[derive(Deserialize, Default, Clone, Copy)]
#[allow(clippy::struct_field_names)] // the vendor's names
struct Counts {
    #[serde(default, deserialize_with = "present")]
    input_tokens: Option<Count>,
    #[serde(default, deserialize_with = "present")]
    output_tokens: Option<Count>,
}

impl UsageIn {
    /// The usage, when the answer reported any.
    ///
    /// The counts are `tokens`, what the model read and wrote: they are what fills the
    /// context window and what a token budget limits (Cohere's prompt template for tools is
    /// many hundred tokens the model reads each turn). `billed_units` stands in for a count
    /// `tokens` lacks. `cached_tokens` is the part of the prompt read from Cohere's cache.
    fn usage(&self) -> Option<TokenUsage> {
        let (tokens, billed) = (self.tokens.0, self.billed_units.0);
        let count = |pick: fn(&Counts) -> Option<Count>| {
            tokens
                .as_ref()
                .and_then(pick)
                .or_else(|| billed.as_ref().and_then(pick))
        };
        let prompt = count(|c| c.input_tokens);
        let completion = count(|c| c.output_tokens);
        if prompt.is_none() && completion.is_none() && self.cached_tokens.is_none() {
            return None;
        }
        let (prompt, completion) = (prompt.map_or(0, |c| c.0), completion.map_or(0, |c| c.0));
        Some(
            TokenUsage::new(prompt, completion, prompt.saturating_add(completion))
                .with_cached(self.cached_tokens.map_or(0, |c| c.0)),
        )
    }
}

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
fn refused_call(error: Error) -> Result<CompletionResponse> {
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
