//! Anthropic's Messages API.

use harness_core::{
    Block, BoxStream, CacheTtl, CompletionResponse, Content, Error, FinishReason, Image,
    ImageSource, Llm, LlmEvent, Message, ModelInfo, ModelSettings, Prices, Request, Result, Role,
    Supports, Thinking, TokenCount, TokenUsage, ToolChoice, ToolSpec, content::merge_blocks,
};
use serde::ser::{SerializeMap as _, SerializeSeq as _};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::sync::Arc;

use crate::connection::{Connection, connection_setters};
use crate::rest::json::{self, Vendor};
use crate::rest::{self, Accumulator, HttpClient, SseEvent};
use crate::wire::{BlockCalls, Count, Parameters, Settings, Str, SystemText, Text, present};

const VERSION: &str = "2023-06-01";
const PATH: &str = "/messages";
/// Where a request's tokens are counted.
const COUNT_PATH: &str = "/messages/count_tokens";
const NAME: &str = "Anthropic";
/// Who answers, as errors say it.
const VENDOR: Vendor<'static> = Vendor::new(ID, NAME);
/// The provider id errors and telemetry report.
const ID: &str = "anthropic";

/// A Claude model behind Anthropic's Messages API.
///
/// Thinking comes back as [`Thinking`] blocks with their signature, and is replayed with its
/// turn (Anthropic requires it after a tool call); unsigned thinking is not sent.
/// A [`PromptCache`](harness_core::PromptCache) with `breakpoints` in the settings puts cache
/// breakpoints on the system prompt, the last tool and the last message, so that each turn
/// of an agent reads what the turn before wrote (its `ttl`, when set, goes with each).
/// Anthropic requires an output limit: 4096 tokens unless the settings say otherwise, raised
/// to fit a thinking budget. A structured output goes through the `final_answer` tool.
/// [`count_tokens`](Llm::count_tokens) asks `/v1/messages/count_tokens`.
///
/// ```no_run
/// use harness_providers::Anthropic;
/// use harness_core::{ModelSettings, PromptCache, ReasoningLevel};
///
/// let model = Anthropic::builder("claude-sonnet-4-20250514")
///     .settings(
///         ModelSettings::new()
///             .with_reasoning(ReasoningLevel::Low)
///             .with_prompt_cache(PromptCache::breakpoints()),
///     )
///     .build()?;
/// # Ok::<(), harness_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Anthropic {
    client: Arc<HttpClient>,
    model: String,
    defaults: ModelSettings,
    /// The builder's `prices`, over the table's.
    prices: Option<Prices>,
    /// Who answers and where: Anthropic's own API, or a cloud serving Claude.
    route: Route,
}

/// Where a Messages request goes and how it names its model and version.
#[derive(Debug, Clone)]
struct Route {
    vendor: Vendor<'static>,
    /// The path of a whole answer, and of a stream.
    generate_path: String,
    stream_path: String,
    /// `anthropic_version` in the body, in place of `model` (the model is in the path), as
    /// a cloud's endpoint takes it; `None` for Anthropic's own API (the version a header).
    body_version: Option<&'static str>,
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

    /// The request body this model would send, as JSON, without sending it: `model` (on a
    /// cloud, `anthropic_version` instead), `max_tokens`, `messages` and only what is set. (What is sent is written straight from
    /// the request, without this value in between.)
    pub fn request_body(&self, request: &Request<'_>, stream: bool) -> Value {
        let body = self.body(request, stream);
        // Serialising these types cannot fail: every map key is a string.
        serde_json::to_value(rest::with_extra(&body, &body.extra)).unwrap_or_default()
    }

    /// The request body, borrowed from the request.
    fn body<'a>(&'a self, request: &Request<'a>, stream: bool) -> Body<'a> {
        let settings = Settings::merge(request.settings, &self.defaults);
        let mut max_tokens = settings.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
        let thinking = settings.reasoning.map(|level| {
            let budget = level.budget_tokens();
            max_tokens = max_tokens.max(budget + 1024);
            ThinkingWire {
                kind: "enabled",
                budget_tokens: budget,
            }
        });
        let tools = !request.tools.is_empty();
        let cache = settings
            .prompt_cache
            .filter(|cache| cache.breakpoints)
            .map(|cache| CacheControl {
                kind: "ephemeral",
                ttl: cache.ttl.map(CacheTtl::as_str),
            });
        let version = self.route.body_version;
        Body {
            model: version.is_none().then_some(self.model.as_str()),
            anthropic_version: version,
            max_tokens,
            temperature: settings.temperature,
            top_p: settings.top_p,
            stop_sequences: settings.stop,
            messages: Messages {
                messages: crate::wire::with_call_ids(request.messages),
                cache,
            },
            system: SystemText::of(request.messages).map(|text| System { text, cache }),
            tools: tools.then_some(Tools {
                specs: request.tools,
                cache,
            }),
            tool_choice: tool_choice(&settings).filter(|_| tools),
            thinking,
            stream: stream.then_some(true),
            extra: settings.extra,
        }
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
            ID,
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
            client: Arc::new(HttpClient::new(config)?),
            model: self.model,
            defaults: self.defaults,
            prices: self.connection.prices,
            route: Route {
                vendor: VENDOR,
                generate_path: PATH.to_owned(),
                stream_path: PATH.to_owned(),
                body_version: None,
            },
        })
    }
}

impl Anthropic {
    /// A Claude model a cloud serves through `client` (the client's base URL, headers and
    /// authentication are the cloud's): a whole answer posted to `generate_path`, a stream
    /// to `stream_path`, the body naming `version` as `anthropic_version` instead of the
    /// model; `vendor` is who errors and telemetry name.
    pub(crate) fn served(
        client: Arc<HttpClient>,
        vendor: Vendor<'static>,
        model: String,
        (generate_path, stream_path): (String, String),
        version: &'static str,
    ) -> Self {
        Self {
            client,
            model,
            defaults: ModelSettings::default(),
            prices: None,
            route: Route {
                vendor,
                generate_path,
                stream_path,
                body_version: Some(version),
            },
        }
    }
}

#[async_trait::async_trait]
impl Llm for Anthropic {
    async fn generate(&self, request: Request<'_>) -> Result<CompletionResponse> {
        crate::wire::refuse_hosted(NAME, request.settings, &self.defaults)?;
        let body = self.body(&request, false);
        let path = &self.route.generate_path;
        let answer = self
            .client
            .post(path, &rest::with_extra(&body, &body.extra))
            .await?;
        MessagesAccumulator::new(self.route.vendor).answer(path, &answer)
    }

    fn stream(self: Arc<Self>, request: Request<'_>) -> BoxStream<'static, Result<LlmEvent>> {
        if let Err(e) = crate::wire::refuse_hosted(NAME, request.settings, &self.defaults) {
            return crate::wire::failed_stream(e);
        }
        let body = self.body(&request, true);
        rest::stream(
            Arc::clone(&self.client),
            &self.route.stream_path,
            &rest::with_extra(&body, &body.extra),
            MessagesAccumulator::new(self.route.vendor),
        )
    }

    /// Anthropic counts: `POST /v1/messages/count_tokens` with the request's model,
    /// messages, system prompt, tools, tool choice and thinking, exactly as they would be
    /// sent.
    /// A cloud serving Claude is not asked: its counting endpoint is its own; the count is
    /// then [`TokenCount::estimate`].
    async fn count_tokens(&self, request: Request<'_>) -> Result<TokenCount> {
        if self.route.body_version.is_some() {
            return Ok(TokenCount::estimate(&request));
        }
        let body = self.body(&request, false);
        let answer = self.client.post(COUNT_PATH, &CountBody::of(&body)).await?;
        read_count(&answer)
    }

    fn info(&self) -> ModelInfo {
        let supports = Supports::new().with_tools(true).with_images(true);
        // The price table knows Claude models under `anthropic`, whichever cloud serves them.
        let info = crate::models::info("anthropic", &self.model, supports);
        let mut info = crate::models::priced(info, self.prices);
        self.route.vendor.id.clone_into(&mut info.provider);
        info
    }
}

// The request ---------------------------------------------------------------------------------

/// A Messages request, borrowed from the [`Request`]: keys in this order, the unset ones
/// left out.
#[derive(Serialize)]
struct Body<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    anthropic_version: Option<&'static str>,
    /// Vendor fields merged in last as the body is sent ([`rest::with_extra`]).
    #[serde(skip)]
    extra: Cow<'a, Map<String, Value>>,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop_sequences: &'a [String],
    messages: Messages<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<System<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Tools<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<ChoiceWire<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<ThinkingWire>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<bool>,
}

/// A `count_tokens` request: the parts of a Messages request that are the prompt, borrowed
/// from it (the output limit, sampling and vendor fields are not taken there).
#[derive(Serialize)]
struct CountBody<'b, 'a> {
    /// Always set: a cloud serving Claude (no model in the body) is not asked to count.
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
    messages: &'b Messages<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<&'b System<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'b Tools<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'b ChoiceWire<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<&'b ThinkingWire>,
}

impl<'b, 'a> CountBody<'b, 'a> {
    fn of(body: &'b Body<'a>) -> Self {
        Self {
            model: body.model,
            messages: &body.messages,
            system: body.system.as_ref(),
            tools: body.tools.as_ref(),
            tool_choice: body.tool_choice.as_ref(),
            thinking: body.thinking.as_ref(),
        }
    }
}

/// The answer to a `count_tokens` request: `{"input_tokens": N}`.
fn read_count(body: &[u8]) -> Result<TokenCount> {
    #[derive(Deserialize)]
    struct CountIn {
        #[serde(default, deserialize_with = "present")]
        input_tokens: Option<Count>,
        #[serde(default)]
        error: Option<Value>,
    }
    let count: CountIn = json::answer(VENDOR, COUNT_PATH, body)?;
    if let Some(error) = count.error.as_ref().filter(|e| !e.is_null()) {
        return Err(json::vendor_error(
            VENDOR,
            error,
            &String::from_utf8_lossy(body),
        ));
    }
    let tokens = json::required(VENDOR, count.input_tokens, "input_tokens", body)?;
    Ok(TokenCount::counted(tokens.0))
}

#[derive(Serialize)]
struct ThinkingWire {
    #[serde(rename = "type")]
    kind: &'static str,
    budget_tokens: u32,
}

/// `{"type": "ephemeral"}`, with a `ttl` when one is set: a cache breakpoint.
#[derive(Serialize, Clone, Copy)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ttl: Option<&'static str>,
}

/// The system prompt: a string, or one text block with a cache breakpoint.
struct System<'a> {
    text: SystemText<'a>,
    cache: Option<CacheControl>,
}

impl Serialize for System<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Cached<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            text: &'a SystemText<'a>,
            cache_control: CacheControl,
        }
        match self.cache {
            Some(cache_control) => [Cached {
                kind: "text",
                text: &self.text,
                cache_control,
            }]
            .serialize(serializer),
            None => self.text.serialize(serializer),
        }
    }
}

/// The tools, each `{name, description, input_schema}`; with caching, a breakpoint on the
/// last.
struct Tools<'a> {
    specs: &'a [Arc<ToolSpec>],
    cache: Option<CacheControl>,
}

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Tool<'a> {
            name: &'a str,
            description: &'a str,
            input_schema: Parameters<'a>,
            #[serde(skip_serializing_if = "Option::is_none")]
            cache_control: Option<CacheControl>,
        }
        let last = self.specs.len().saturating_sub(1);
        serializer.collect_seq(self.specs.iter().enumerate().map(|(i, tool)| Tool {
            name: &tool.name,
            description: &tool.description,
            input_schema: Parameters::of(&tool.parameters),
            cache_control: self.cache.filter(|_| i == last),
        }))
    }
}

/// `tool_choice`: Anthropic's `any` is "required"; one turn, one call is
/// `disable_parallel_tool_use`.
#[derive(Serialize)]
struct ChoiceWire<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    disable_parallel_tool_use: Option<bool>,
}

/// `tool_choice` for the settings, when they say anything.
fn tool_choice<'a>(settings: &Settings<'a>) -> Option<ChoiceWire<'a>> {
    let one_call = settings.parallel_tool_calls == Some(false);
    let (kind, name) = match settings.tool_choice {
        None if !one_call => return None,
        Some(ToolChoice::None) => {
            return Some(ChoiceWire {
                kind: "none",
                name: None,
                disable_parallel_tool_use: None,
            });
        }
        Some(ToolChoice::Required) => ("any", None),
        Some(ToolChoice::Tool(name)) => ("tool", Some(name.as_str())),
        // Auto, and a choice added later that Anthropic cannot say.
        None | Some(_) => ("auto", None),
    };
    Some(ChoiceWire {
        kind,
        name,
        disable_parallel_tool_use: one_call.then_some(true),
    })
}

/// The messages in Messages API form: system messages left out (they are the system
/// prompt), consecutive tool results in one user message, a message with nothing to send
/// (an empty answer kept in the transcript) left out, since Anthropic refuses empty content.
///
/// Every call and result carries an id here ([`crate::wire::with_call_ids`]). With a cache
/// breakpoint, the last block of the last message written carries it.
struct Messages<'a> {
    messages: Cow<'a, [Message]>,
    cache: Option<CacheControl>,
}

/// Whether a message other than a tool result is left out (it has nothing to send).
fn unsent(message: &Message) -> bool {
    message.tool_calls.is_empty() && blocks(&message.content).next().is_none()
}

impl Messages<'_> {
    /// The index of the last message written: a turn, or the last result of the run of tool
    /// results written last.
    fn last_written(&self) -> Option<usize> {
        self.messages
            .iter()
            .enumerate()
            .rev()
            .filter(|(_, m)| m.role != Role::System)
            .find(|(_, m)| m.role == Role::Tool || !unsent(m))
            .map(|(i, _)| i)
    }
}

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let messages = &self.messages;
        let mark = self
            .cache
            .and_then(|cache| Some((self.last_written()?, cache)));
        // The breakpoint, for the message at `i` (or the run of results ending before `i`).
        let mark_at = |range: std::ops::Range<usize>| {
            mark.filter(|(at, _)| range.contains(at)).map(|(_, c)| c)
        };
        let mut seq = serializer.serialize_seq(None)?;
        // The first tool result of the run of results not yet written.
        let mut open: Option<usize> = None;
        for (i, message) in messages.iter().enumerate() {
            match message.role {
                Role::System => {}
                Role::Tool => {
                    open.get_or_insert(i);
                }
                _ => {
                    if let Some(from) = open.take() {
                        let cache = mark_at(from..i);
                        seq.serialize_element(&ToolResults(&messages[from..i], cache))?;
                    }
                    if unsent(message) {
                        continue;
                    }
                    seq.serialize_element(&Turn(message, mark_at(i..i + 1)))?;
                }
            }
        }
        if let Some(from) = open {
            let cache = mark_at(from..messages.len());
            seq.serialize_element(&ToolResults(&messages[from..], cache))?;
        }
        seq.end()
    }
}

/// A run of tool results, as one user message; with a breakpoint, on its last result.
struct ToolResults<'a>(&'a [Message], Option<CacheControl>);

impl Serialize for ToolResults<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Result<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            tool_use_id: &'a str,
            // Text alone as a string; with images or documents, as content blocks.
            content: ContentWire<'a>,
            #[serde(skip_serializing_if = "Option::is_none")]
            cache_control: Option<CacheControl>,
        }
        struct Results<'a>(&'a [Message], Option<CacheControl>);
        impl Serialize for Results<'_> {
            fn serialize<S: Serializer>(
                &self,
                serializer: S,
            ) -> std::result::Result<S::Ok, S::Error> {
                let last = self.0.iter().rposition(|m| m.role == Role::Tool);
                let results = self
                    .0
                    .iter()
                    .enumerate()
                    .filter(|(_, m)| m.role == Role::Tool);
                serializer.collect_seq(results.map(|(i, m)| Result {
                    kind: "tool_result",
                    tool_use_id: m.tool_call_id.as_deref().unwrap_or(""),
                    content: ContentWire(&m.content, None),
                    cache_control: self.1.filter(|_| Some(i) == last),
                }))
            }
        }
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("role", "user")?;
        map.serialize_entry("content", &Results(self.0, self.1))?;
        map.end()
    }
}

/// A user or assistant message; an assistant's tool calls as `tool_use` blocks after its
/// content. With a breakpoint, its last block carries it.
struct Turn<'a>(&'a Message, Option<CacheControl>);

impl Serialize for Turn<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        struct WithCalls<'a>(&'a Message, Option<CacheControl>);
        impl Serialize for WithCalls<'_> {
            fn serialize<S: Serializer>(
                &self,
                serializer: S,
            ) -> std::result::Result<S::Ok, S::Error> {
                let mut seq = serializer.serialize_seq(None)?;
                for block in blocks(&self.0.content) {
                    seq.serialize_element(&block)?;
                }
                let last = self.0.tool_calls.len().saturating_sub(1);
                for (i, call) in self.0.tool_calls.iter().enumerate() {
                    let block = BlockWire::ToolUse {
                        id: call.id.as_deref().unwrap_or(""),
                        name: &call.name,
                        input: &call.arguments,
                    };
                    seq.serialize_element(&Marked(block, self.1.filter(|_| i == last)))?;
                }
                seq.end()
            }
        }
        let message = self.0;
        let mut map = serializer.serialize_map(Some(2))?;
        if message.role == Role::Assistant && !message.tool_calls.is_empty() {
            map.serialize_entry("role", "assistant")?;
            map.serialize_entry("content", &WithCalls(message, self.1))?;
        } else {
            map.serialize_entry("role", message.role.as_str())?;
            map.serialize_entry("content", &ContentWire(&message.content, self.1))?;
        }
        map.end()
    }
}

/// Content: a string when it is plain text, else its blocks; with a breakpoint, always
/// blocks, the last carrying it (reasoning cannot carry one: then no block does).
struct ContentWire<'a>(&'a Content, Option<CacheControl>);

impl Serialize for ContentWire<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        match (self.0, self.1) {
            (Content::Text(text), None) => serializer.serialize_str(text),
            (content, None) => serializer.collect_seq(blocks(content)),
            (content, Some(cache)) => {
                let mut seq = serializer.serialize_seq(None)?;
                let mut blocks = blocks(content).peekable();
                while let Some(block) = blocks.next() {
                    let last = blocks.peek().is_none();
                    let cacheable = !matches!(
                        block,
                        BlockWire::Thinking { .. } | BlockWire::RedactedThinking { .. }
                    );
                    let cache = Some(cache).filter(|_| last && cacheable);
                    seq.serialize_element(&Marked(block, cache))?;
                }
                seq.end()
            }
        }
    }
}

/// A block, with a cache breakpoint when it has one.
struct Marked<'a>(BlockWire<'a>, Option<CacheControl>);

impl Serialize for Marked<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct WithCache<'b, 'a> {
            #[serde(flatten)]
            block: &'b BlockWire<'a>,
            cache_control: CacheControl,
        }
        match self.1 {
            None => self.0.serialize(serializer),
            Some(cache_control) => WithCache {
                block: &self.0,
                cache_control,
            }
            .serialize(serializer),
        }
    }
}

/// The blocks Anthropic is sent for content: empty text and unsigned thinking left out.
fn blocks(content: &Content) -> impl Iterator<Item = BlockWire<'_>> {
    let (text, blocks) = match content {
        Content::Text(text) => (Some(text.as_str()).filter(|t| !t.is_empty()), &[][..]),
        Content::Blocks(blocks) => (None, &blocks[..]),
    };
    let text = text.map(|text| BlockWire::Text { text });
    text.into_iter().chain(blocks.iter().filter_map(|block| {
        Some(match block {
            Block::Text(t) if t.text.is_empty() => return None,
            Block::Text(t) => BlockWire::Text { text: &t.text },
            // Another vendor's signature or data would be refused: its reasoning stays out.
            Block::Thinking(thinking) if !thinking.is_for(THINKING_FORMAT) => return None,
            Block::Thinking(Thinking {
                redacted: Some(data),
                ..
            }) => BlockWire::RedactedThinking { data },
            Block::Thinking(Thinking {
                text,
                signature: Some(signature),
                ..
            }) => BlockWire::Thinking {
                thinking: text,
                signature,
            },
            // Unsigned thinking, and another vendor's hosted calls: Anthropic has no place for
            // them.
            Block::Thinking(_) | Block::HostedCall(_) => return None,
            Block::Image(image) => BlockWire::Image {
                source: image_source(image),
            },
            Block::Document(doc) => BlockWire::Document {
                source: Source::Base64 {
                    media_type: &doc.media_type,
                    data: &doc.data,
                },
            },
        })
    }))
}

fn image_source(image: &Image) -> Source<'_> {
    match image.source() {
        ImageSource::Url(url) => Source::Url { url },
        ImageSource::Data { data, media_type } => Source::Base64 { media_type, data },
    }
}

/// The [`Thinking::provider`] of reasoning read from, and sent back to, the Messages API.
const THINKING_FORMAT: &str = "anthropic";

/// One content block as sent.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockWire<'a> {
    Text {
        text: &'a str,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    /// Reasoning Anthropic encrypted, sent back as it came.
    RedactedThinking {
        data: &'a str,
    },
    Image {
        source: Source<'a>,
    },
    Document {
        source: Source<'a>,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: &'a Map<String, Value>,
    },
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Source<'a> {
    Url { url: &'a str },
    Base64 { media_type: &'a str, data: &'a str },
}

// The answer ----------------------------------------------------------------------------------

fn stop_reason(value: &str) -> FinishReason {
    match value {
        "end_turn" | "stop_sequence" | "tool_use" => FinishReason::Stop,
        // Cut at the output limit, or at the context window's end.
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "refusal" => FinishReason::Filtered,
        _ => FinishReason::Other,
    }
}

/// One stream event: `message_start`, `content_block_start`, `content_block_delta`,
/// `message_delta`, `message_stop`, `error` (and `ping`, and whatever comes later).
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(borrow, rename = "type")]
    kind: Str<'a>,
    #[serde(default)]
    index: Option<usize>,
    #[serde(borrow, default)]
    content_block: Option<BlockIn<'a>>,
    #[serde(borrow, default)]
    delta: Option<DeltaIn<'a>>,
    #[serde(borrow, default)]
    message: Option<MessageIn<'a>>,
    #[serde(default)]
    usage: Option<UsageIn>,
    #[serde(default)]
    error: Option<Value>,
}

/// A message: a non-streamed answer whole, or the start of a stream (no content yet).
#[derive(Deserialize)]
struct MessageIn<'a> {
    #[serde(borrow, default)]
    id: Text<'a>,
    #[serde(borrow, default)]
    model: Text<'a>,
    #[serde(borrow, default)]
    content: Option<Vec<BlockIn<'a>>>,
    #[serde(borrow, default)]
    stop_reason: Text<'a>,
    #[serde(default)]
    usage: Option<UsageIn>,
    /// An answer that is the vendor's error: `{"type": "error", "error": {...}}`.
    #[serde(default)]
    error: Option<Value>,
}

/// A content block: whole in an answer; as a stream's `content_block_start`, its text
/// (empty) and a tool_use's input (`{}`) to come as deltas.
#[derive(Deserialize)]
struct BlockIn<'a> {
    #[serde(borrow, rename = "type", default)]
    kind: Text<'a>,
    #[serde(borrow, default)]
    id: Text<'a>,
    #[serde(borrow, default)]
    name: Text<'a>,
    #[serde(default)]
    input: Option<Value>,
    #[serde(borrow, default)]
    text: Text<'a>,
    #[serde(borrow, default)]
    thinking: Text<'a>,
    #[serde(borrow, default)]
    signature: Text<'a>,
    /// A `redacted_thinking` block's encrypted reasoning.
    #[serde(borrow, default)]
    data: Text<'a>,
}

#[derive(Deserialize)]
struct DeltaIn<'a> {
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

/// Anthropic's counts; a key present (even as `null`, which counts 0) replaces the count so
/// far, an absent one keeps it. Counts saturate, never overflow.
#[derive(Deserialize, Default, Clone, Copy)]
#[allow(clippy::struct_field_names)] // the vendor's names
struct UsageIn {
    #[serde(default, deserialize_with = "present")]
    input_tokens: Option<Count>,
    #[serde(default, deserialize_with = "present")]
    output_tokens: Option<Count>,
    #[serde(default, deserialize_with = "present")]
    cache_read_input_tokens: Option<Count>,
    #[serde(default, deserialize_with = "present")]
    cache_creation_input_tokens: Option<Count>,
    /// Newer models say how much of the output was thinking.
    #[serde(default)]
    output_tokens_details: Option<OutputDetails>,
}

/// `usage.output_tokens_details`.
#[derive(Deserialize, Clone, Copy)]
struct OutputDetails {
    #[serde(default, deserialize_with = "present")]
    thinking_tokens: Option<Count>,
}

impl UsageIn {
    fn merge(&mut self, newer: &UsageIn) {
        self.input_tokens = newer.input_tokens.or(self.input_tokens);
        self.output_tokens = newer.output_tokens.or(self.output_tokens);
        self.cache_read_input_tokens = newer
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
        self.cache_creation_input_tokens = newer
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
        self.output_tokens_details = newer.output_tokens_details.or(self.output_tokens_details);
    }

    fn seen(&self) -> bool {
        self.input_tokens.is_some()
            || self.output_tokens.is_some()
            || self.cache_read_input_tokens.is_some()
            || self.cache_creation_input_tokens.is_some()
    }

    /// Anthropic's `input_tokens` leaves out what was read from or written to the cache;
    /// the prompt count here puts them back, so cached tokens stay inside it as everywhere
    /// else.
    fn usage(&self) -> TokenUsage {
        let read = |count: Option<Count>| count.map_or(0, |c| c.0);
        let (cached, written) = (
            read(self.cache_read_input_tokens),
            read(self.cache_creation_input_tokens),
        );
        let prompt = read(self.input_tokens)
            .saturating_add(cached)
            .saturating_add(written);
        let completion = read(self.output_tokens);
        let thinking = self.output_tokens_details.and_then(|d| d.thinking_tokens);
        TokenUsage::new(prompt, completion, prompt.saturating_add(completion))
            .with_cached(cached)
            .with_cache_write(written)
            .with_reasoning(read(thinking))
    }
}

enum Slot {
    Content {
        thinking: bool,
        text: String,
        signature: Option<String>,
    },
    /// A `redacted_thinking` block: its data, whole at its start.
    Redacted(String),
    Tool {
        id: String,
        name: String,
        arguments: String,
        /// The input the block came with: a non-streamed answer's, or a stream's when it
        /// was not empty (a proxy may send it whole there).
        whole: Option<Value>,
    },
}

/// Reads Messages: a stream's events (content slots by index, a block started again at a
/// taken index another block, never merged into or replacing the first; usage merged from
/// `message_start` and `message_delta`; whole once `message_stop` has come), and a
/// non-streamed answer as the events it would have been: its start, each block started
/// whole, its stop reason, its stop.
pub(crate) struct MessagesAccumulator<'v> {
    vendor: Vendor<'v>,
    id: Option<String>,
    model: Option<String>,
    slots: Vec<(usize, Slot)>,
    usage: UsageIn,
    finish: Option<FinishReason>,
    stopped: bool,
}

impl<'v> MessagesAccumulator<'v> {
    /// Who is answering, for errors.
    fn vendor(&self) -> Vendor<'v> {
        self.vendor
    }

    pub(crate) fn new(vendor: Vendor<'v>) -> Self {
        Self {
            vendor,
            id: None,
            model: None,
            slots: Vec::new(),
            usage: UsageIn::default(),
            finish: None,
            stopped: false,
        }
    }

    /// Reads a non-streamed answer (the body of `path`).
    pub(crate) fn answer(mut self, path: &str, body: &[u8]) -> Result<CompletionResponse> {
        let vendor = self.vendor();
        let message: MessageIn<'_> = json::answer(vendor, path, body)?;
        if let Some(error) = message.error.as_ref().filter(|e| !e.is_null()) {
            return Err(json::vendor_error(
                vendor,
                error,
                &String::from_utf8_lossy(body),
            ));
        }
        let content = json::required(vendor, message.content.as_ref(), "content", body)?;
        for block in content {
            json::required(vendor, block.kind.as_ref(), "type", body)?;
        }
        let MessageIn {
            id,
            model,
            content,
            stop_reason: stop,
            usage,
            ..
        } = message;
        self.start(id.as_deref(), model.as_deref(), usage.as_ref());
        for (index, block) in content.into_iter().flatten().enumerate() {
            self.block_start(index, block, None);
        }
        // A missing stop reason is not a finished answer.
        self.finish = Some(stop.as_deref().map_or(FinishReason::Other, stop_reason));
        self.stopped = true;
        self.finish()
    }

    /// `message_start`: the message's id, model and first usage.
    fn start(&mut self, id: Option<&str>, model: Option<&str>, usage: Option<&UsageIn>) {
        if let Some(id) = id.filter(|_| self.id.is_none()) {
            self.id = Some(id.to_owned());
        }
        if let Some(model) = model.filter(|_| self.model.is_none()) {
            self.model = Some(model.to_owned());
        }
        if let Some(usage) = usage {
            self.usage.merge(usage);
        }
    }

    /// `content_block_start`, or a whole block of an answer (`emit` `None`).
    fn block_start(
        &mut self,
        index: usize,
        block: BlockIn<'_>,
        mut emit: Option<&mut dyn FnMut(LlmEvent)>,
    ) {
        let whole = emit.is_none();
        let slot = match block.kind.as_deref() {
            Some("tool_use") => Slot::Tool {
                id: block.id.map(|s| s.0.into_owned()).unwrap_or_default(),
                name: block.name.map(|s| s.0.into_owned()).unwrap_or_default(),
                arguments: String::new(),
                // An answer's input is the input, absent or not an object included (such a
                // call is not run); a stream's `{}` is a placeholder for the deltas.
                whole: if whole {
                    Some(block.input.unwrap_or(Value::Null))
                } else {
                    block
                        .input
                        .filter(|input| !input.as_object().is_some_and(Map::is_empty))
                },
            },
            Some(kind @ ("text" | "thinking")) => {
                let thinking = kind == "thinking";
                let text = if thinking { block.thinking } else { block.text };
                let text = text.map(|t| t.0.into_owned()).unwrap_or_default();
                if let Some(emit) = emit.as_mut().filter(|_| !text.is_empty()) {
                    emit(if thinking {
                        LlmEvent::ThinkingDelta(text.clone())
                    } else {
                        LlmEvent::TextDelta(text.clone())
                    });
                }
                Slot::Content {
                    thinking,
                    text,
                    signature: block
                        .signature
                        .filter(|s| thinking && !s.is_empty())
                        .map(|s| s.0.into_owned()),
                }
            }
            // Kept to be sent back: Anthropic refuses a tool turn's replay without it.
            Some("redacted_thinking") => match block.data {
                Some(data) => Slot::Redacted(data.0.into_owned()),
                None => return,
            },
            _ => return, // server-side tool blocks are the vendor's business
        };
        self.slots.push((index, slot));
    }

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

    fn on_delta(&mut self, index: usize, delta: DeltaIn<'_>, emit: &mut dyn FnMut(LlmEvent)) {
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

impl Accumulator for MessagesAccumulator<'_> {
    fn feed(&mut self, event: SseEvent<'_>, emit: &mut dyn FnMut(LlmEvent)) -> Result<()> {
        let data = event.data;
        let event: Event<'_> =
            serde_json::from_str(data).map_err(|e| json::unreadable(self.vendor(), &e, data))?;
        let index = event.index.unwrap_or(0);
        match &*event.kind {
            "content_block_start" => {
                if let Some(block) = event.content_block {
                    self.block_start(index, block, Some(emit));
                }
            }
            "content_block_delta" => {
                if let Some(delta) = event.delta {
                    self.on_delta(index, delta, emit);
                }
            }
            "message_start" => {
                if let Some(message) = &event.message {
                    self.start(
                        message.id.as_deref(),
                        message.model.as_deref(),
                        message.usage.as_ref(),
                    );
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
                return Err(json::vendor_error(self.vendor(), &error, data));
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<CompletionResponse> {
        if !self.stopped {
            return Err(json::incomplete(self.vendor(), "message_stop"));
        }
        let mut slots = std::mem::take(&mut self.slots);
        slots.sort_by_key(|(i, _)| *i);
        let mut blocks = Vec::new();
        let mut calls = BlockCalls::new(self.finish);
        for (_, slot) in slots {
            match slot {
                // Signed reasoning is kept even without text: the signature is what counts.
                Slot::Content {
                    thinking,
                    text,
                    signature,
                } if text.is_empty() && !(thinking && signature.is_some()) => {}
                Slot::Content {
                    thinking: false,
                    text,
                    ..
                } => blocks.push(Block::text(text)),
                Slot::Content {
                    thinking: true,
                    text,
                    signature,
                } => blocks.push(Block::from(
                    match signature {
                        Some(signature) => Thinking::signed(text, signature),
                        None => Thinking::new(text),
                    }
                    .from_provider(THINKING_FORMAT),
                )),
                Slot::Redacted(data) => blocks.push(Block::from(
                    Thinking::redacted(data).from_provider(THINKING_FORMAT),
                )),
                Slot::Tool { name, .. } if name.is_empty() => {}
                Slot::Tool {
                    id,
                    name,
                    arguments,
                    whole,
                } => calls.push(id, &name, &arguments, whole),
            }
        }
        let calls = calls.into_calls();
        let mut response = CompletionResponse::from_blocks(merge_blocks(blocks))
            .with_tool_calls(calls)
            .with_finish_reason(self.finish.unwrap_or(FinishReason::Stop));
        if self.usage.seen() {
            response = response.with_usage(self.usage.usage());
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
