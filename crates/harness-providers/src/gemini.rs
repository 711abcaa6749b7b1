//! Google's Gemini API: `generateContent` and `streamGenerateContent` (SSE).

use harness_core::{
    Block, BoxStream, CompletionResponse, Content, Error, FinishReason, ImageSource, Llm, LlmEvent,
    Message, ModelInfo, ModelSettings, OutputSchema, Prices, Request, Result, Role, Supports,
    Thinking, TokenCount, TokenUsage, ToolCall, ToolChoice, ToolSpec,
};
use serde::ser::{SerializeMap as _, SerializeSeq as _};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::sync::Arc;

use crate::connection::{Connection, connection_setters};
use crate::rest::json::{self, Vendor};
use crate::rest::{self, Accumulator, HttpClient, SseEvent};
use crate::wire::{ContentText, Count, Few, Settings, SystemText, Text, call_from_value, present};

const NAME: &str = "Gemini";
/// Who answers, as errors say it.
const VENDOR: Vendor<'static> = Vendor::new(ID, NAME);
/// The provider id errors and telemetry report.
const ID: &str = "gemini";

/// A Gemini model.
///
/// System messages travel as `systemInstruction`; all tools in one `functionDeclarations`
/// entry, each with its full JSON Schema (`parameters_json_schema`); a function call's
/// `thoughtSignature` is kept as a signed, empty [`Thinking`] block of its turn and replayed
/// on the turn's first call, as Gemini requires. Images and documents go inline; an image
/// given by URL is refused, since Gemini cannot fetch it. A
/// [`PromptCache`](harness_core::PromptCache) with a `cached_content` name in the settings
/// reads that cache (`cachedContent`). [`count_tokens`](Llm::count_tokens) asks
/// `:countTokens`.
///
/// ```no_run
/// use harness_providers::Gemini;
///
/// let model = Gemini::new("gemini-2.5-flash")?;
/// # Ok::<(), harness_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Gemini {
    client: Arc<HttpClient>,
    model: String,
    defaults: ModelSettings,
    /// Who answers: Google's Gemini API, or a cloud serving Gemini (Vertex AI).
    vendor: Vendor<'static>,
    /// `/models/{model}:generateContent`, and its streaming twin, made once.
    generate_path: String,
    stream_path: String,
    /// `{model}:countTokens`, beside them.
    count_path: String,
    /// The builder's `prices`, over the table's.
    prices: Option<Prices>,
}

/// Builds a [`Gemini`] model.
#[derive(Debug, Clone)]
#[must_use = "call build() to get the model"]
pub struct GeminiBuilder {
    model: String,
    connection: Connection,
    defaults: ModelSettings,
}

impl Gemini {
    /// `model`, with the key from `GEMINI_API_KEY` (or `GOOGLE_API_KEY`).
    ///
    /// # Errors
    /// As [`GeminiBuilder::build`].
    pub fn new(model: impl Into<String>) -> Result<Self> {
        Self::builder(model).build()
    }

    /// A builder for `model`.
    pub fn builder(model: impl Into<String>) -> GeminiBuilder {
        GeminiBuilder {
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

    /// The request body this model would send, as JSON, without sending it: `contents` and
    /// only what is set. Gemini has no switch for parallel tool calls; `parallel_tool_calls`
    /// is not sent. (What is sent is written straight from the request, without this value
    /// in between.)
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error for an image given only by
    /// URL.
    pub fn request_body(&self, request: &Request<'_>) -> Result<Value> {
        let body = self.body(request)?;
        // Serialising these types cannot fail: every map key is a string.
        Ok(serde_json::to_value(rest::with_extra(&body, &body.extra)).unwrap_or_default())
    }

    /// The request body, borrowed from the request; an image Gemini cannot take, and a hosted
    /// tool, are refused here, before anything is written.
    fn body<'a>(&'a self, request: &Request<'a>) -> Result<Body<'a>> {
        check_media(request.messages)?;
        crate::wire::refuse_hosted(NAME, request.settings, &self.defaults)?;
        let settings = Settings::merge(request.settings, &self.defaults);
        let tools = !request.tools.is_empty();
        let config = GenerationConfig::new(&settings, request.output);
        Ok(Body {
            contents: Contents(request.messages),
            system_instruction: SystemText::of(request.messages).map(|text| Instruction {
                parts: [TextPart { text }],
            }),
            tools: tools.then_some([Declarations {
                function_declarations: Functions(request.tools),
            }]),
            tool_config: settings
                .tool_choice
                .filter(|_| tools)
                .map(|choice| ToolConfig {
                    function_calling_config: CallingConfig::from(choice),
                }),
            generation_config: (!config.is_empty()).then_some(config),
            cached_content: settings
                .prompt_cache
                .and_then(|cache| cache.cached_content.as_deref()),
            extra: settings.extra,
        })
    }
}

impl GeminiBuilder {
    connection_setters!();

    /// Default settings for every request, under the agent's and the run's (temperature,
    /// output limit, a thinking budget from `with_reasoning`, ...).
    pub fn settings(mut self, settings: ModelSettings) -> Self {
        self.defaults = settings;
        self
    }

    /// The model.
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error for `max_concurrency` 0 or
    /// a key that is not a valid header.
    pub fn build(self) -> Result<Gemini> {
        let mut config =
            self.connection
                .config(ID, "https://generativelanguage.googleapis.com/v1beta", None);
        if let Some(key) = self.connection.key(&["GEMINI_API_KEY", "GOOGLE_API_KEY"]) {
            config.headers.push(("x-goog-api-key".into(), key));
        }
        Ok(Gemini::served(
            Arc::new(HttpClient::new(config)?),
            VENDOR,
            self.model,
            self.defaults,
            "/models",
        )
        .priced(self.connection.prices))
    }
}

impl Gemini {
    /// A Gemini model a cloud serves through `client` (the client's base URL, headers and
    /// authentication are the cloud's): its methods are posted to `{models}/{model}:...`, and
    /// `vendor` is who errors and telemetry name.
    pub(crate) fn served(
        client: Arc<HttpClient>,
        vendor: Vendor<'static>,
        model: String,
        defaults: ModelSettings,
        models: &str,
    ) -> Self {
        Self {
            client,
            generate_path: format!("{models}/{model}:generateContent"),
            count_path: format!("{models}/{model}:countTokens"),
            stream_path: format!("{models}/{model}:streamGenerateContent?alt=sse"),
            model,
            defaults,
            vendor,
            prices: None,
        }
    }

    /// The same model with the builder's `prices`, over the table's.
    fn priced(mut self, prices: Option<Prices>) -> Self {
        self.prices = prices;
        self
    }
}

#[async_trait::async_trait]
impl Llm for Gemini {
    async fn generate(&self, request: Request<'_>) -> Result<CompletionResponse> {
        let body = self.body(&request)?;
        let answer = self
            .client
            .post(&self.generate_path, &rest::with_extra(&body, &body.extra))
            .await?;
        ContentAccumulator::new(self.vendor).answer(&self.generate_path, &answer)
    }

    fn stream(self: Arc<Self>, request: Request<'_>) -> BoxStream<'static, Result<LlmEvent>> {
        let body = match self.body(&request) {
            Ok(body) => body,
            Err(e) => return Box::pin(futures_util::stream::once(async { Err(e) })),
        };
        rest::stream(
            Arc::clone(&self.client),
            &self.stream_path,
            &rest::with_extra(&body, &body.extra),
            ContentAccumulator::new(self.vendor),
        )
    }

    /// Gemini counts: `POST /models/{model}:countTokens` with the request as it would be
    /// sent, under `generateContentRequest`. A cloud serving Gemini (Vertex AI) is asked at
    /// its own `:countTokens` with the contents, system instruction and tools, the fields
    /// its counting request takes.
    async fn count_tokens(&self, request: Request<'_>) -> Result<TokenCount> {
        let body = self.body(&request)?;
        let answer = if self.vendor.id == ID {
            let model = format!("models/{}", self.model);
            let count = CountBody {
                generate_content_request: CountRequest {
                    model: &model,
                    body: &body,
                },
            };
            self.client.post(&self.count_path, &count).await?
        } else {
            let count = CloudCountBody {
                contents: &body.contents,
                system_instruction: body.system_instruction.as_ref(),
                tools: body.tools.as_ref(),
            };
            self.client.post(&self.count_path, &count).await?
        };
        read_count(self.vendor, &self.count_path, &answer)
    }

    /// Gemini holds an answer to a JSON Schema (`responseJsonSchema`).
    fn info(&self) -> ModelInfo {
        let supports = Supports::new()
            .with_tools(true)
            .with_images(true)
            .with_structured_output(true);
        // The price table knows Gemini models under `gemini`, whichever cloud serves them.
        let info = crate::models::info("gemini", &self.model, supports);
        let mut info = crate::models::priced(info, self.prices);
        self.vendor.id.clone_into(&mut info.provider);
        info
    }
}

// The request ---------------------------------------------------------------------------------

/// A `generateContent` request, borrowed from the [`Request`]: keys in this order, the unset
/// ones left out.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Body<'a> {
    /// Vendor fields merged in last as the body is sent ([`rest::with_extra`]).
    #[serde(skip)]
    extra: Cow<'a, Map<String, Value>>,
    contents: Contents<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system_instruction: Option<Instruction<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<[Declarations<'a>; 1]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_config: Option<ToolConfig<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    generation_config: Option<GenerationConfig<'a>>,
    /// The explicit cache the request reads, by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    cached_content: Option<&'a str>,
}

/// A `countTokens` request: the whole `generateContent` request (system instruction, tools
/// and cache included, which plain `contents` would leave out) under
/// `generateContentRequest`, with the model it is for.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CountBody<'b, 'a> {
    generate_content_request: CountRequest<'b, 'a>,
}

#[derive(Serialize)]
struct CountRequest<'b, 'a> {
    model: &'b str,
    #[serde(flatten)]
    body: &'b Body<'a>,
}

/// A cloud's `countTokens` request (Vertex AI's): the prompt's parts at the top level.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CloudCountBody<'b, 'a> {
    contents: &'b Contents<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system_instruction: Option<&'b Instruction<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'b [Declarations<'a>; 1]>,
}

/// The answer to a `countTokens` request: `{"totalTokens": N, ...}`.
fn read_count(vendor: Vendor<'_>, path: &str, body: &[u8]) -> Result<TokenCount> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct CountIn {
        #[serde(default, deserialize_with = "present")]
        total_tokens: Option<Count>,
        #[serde(default)]
        error: Option<Value>,
    }
    let count: CountIn = json::answer(vendor, path, body)?;
    if let Some(error) = count.error.as_ref().filter(|e| !e.is_null()) {
        return Err(json::vendor_error(
            vendor,
            error,
            &String::from_utf8_lossy(body),
        ));
    }
    let tokens = json::required(vendor, count.total_tokens, "totalTokens", body)?;
    Ok(TokenCount::counted(tokens.0))
}

#[derive(Serialize)]
struct Instruction<'a> {
    parts: [TextPart<'a>; 1],
}

#[derive(Serialize)]
struct TextPart<'a> {
    text: SystemText<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Declarations<'a> {
    function_declarations: Functions<'a>,
}

/// Each tool with its full JSON Schema.
struct Functions<'a>(&'a [Arc<ToolSpec>]);

impl Serialize for Functions<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Function<'a> {
            name: &'a str,
            description: &'a str,
            parameters_json_schema: &'a Value,
        }
        serializer.collect_seq(self.0.iter().map(|t| Function {
            name: &t.name,
            description: &t.description,
            parameters_json_schema: &t.parameters,
        }))
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolConfig<'a> {
    function_calling_config: CallingConfig<'a>,
}

/// `functionCallingConfig` for a tool choice: AUTO, NONE, ANY, or ANY limited to one tool.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CallingConfig<'a> {
    mode: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    allowed_function_names: Option<[&'a str; 1]>,
}

impl<'a> From<&'a ToolChoice> for CallingConfig<'a> {
    fn from(choice: &'a ToolChoice) -> Self {
        let (mode, only) = match choice {
            ToolChoice::None => ("NONE", None),
            ToolChoice::Required => ("ANY", None),
            ToolChoice::Tool(name) => ("ANY", Some([name.as_str()])),
            _ => ("AUTO", None),
        };
        Self {
            mode,
            allowed_function_names: only,
        }
    }
}

/// `generationConfig` for the settings and the output schema: only what is set.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GenerationConfig<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop_sequences: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_config: Option<ThinkingConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_mime_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_json_schema: Option<&'a Value>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ThinkingConfig {
    thinking_budget: u32,
}

impl<'a> GenerationConfig<'a> {
    fn new(settings: &Settings<'a>, output: Option<&'a OutputSchema>) -> Self {
        Self {
            temperature: settings.temperature,
            top_p: settings.top_p,
            max_output_tokens: settings.max_tokens,
            stop_sequences: settings.stop,
            thinking_config: settings.reasoning.map(|level| ThinkingConfig {
                thinking_budget: level.budget_tokens(),
            }),
            response_mime_type: output.map(|_| "application/json"),
            response_json_schema: output.map(|o| &o.schema),
        }
    }

    fn is_empty(&self) -> bool {
        self.temperature.is_none()
            && self.top_p.is_none()
            && self.max_output_tokens.is_none()
            && self.stop_sequences.is_empty()
            && self.thinking_config.is_none()
            && self.response_json_schema.is_none()
    }
}

/// Refuses an image Gemini cannot take: one given only by URL.
fn check_media(messages: &[Message]) -> Result<()> {
    let url = messages
        .iter()
        .filter(|m| m.role != Role::System)
        .filter_map(|m| match &m.content {
            Content::Blocks(blocks) => Some(blocks),
            Content::Text(_) => None,
        })
        .flatten()
        .find_map(|block| match block {
            Block::Image(image) => match image.source() {
                ImageSource::Url(_) => Some(image),
                ImageSource::Data { .. } => None,
            },
            _ => None,
        });
    match url {
        None => Ok(()),
        Some(image) => Err(Error::configuration(format!(
            "Gemini needs inline image data, not a URL ({}); load the image with \
             Image::from_path or Image::from_bytes",
            image.data_url()
        ))),
    }
}

/// The transcript as `contents`: system messages left out (they are the instruction), a
/// run of tool results one user turn of function responses, a turn with nothing to send
/// (an empty answer kept in the transcript) left out, since Gemini refuses empty `parts`.
struct Contents<'a>(&'a [Message]);

impl Serialize for Contents<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        // The first tool result of the run of results not yet written.
        let mut open: Option<usize> = None;
        for (i, message) in self.0.iter().enumerate() {
            match message.role {
                Role::System => {}
                Role::Tool => {
                    open.get_or_insert(i);
                }
                Role::Assistant | Role::User => {
                    if let Some(from) = open.take() {
                        seq.serialize_element(&Responses(&self.0[from..i]))?;
                    }
                    if message.tool_calls.is_empty() && parts(&message.content).next().is_none() {
                        continue;
                    }
                    seq.serialize_element(&Turn(message))?;
                }
            }
        }
        if let Some(from) = open {
            seq.serialize_element(&Responses(&self.0[from..]))?;
        }
        seq.end()
    }
}

/// One user or model turn; a model turn's calls after its content, its thought signature
/// (the first of the turn) on the first call, else on the first part.
struct Turn<'a>(&'a Message);

impl Serialize for Turn<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        struct Parts<'a>(&'a Message);
        impl Serialize for Parts<'_> {
            fn serialize<S: Serializer>(
                &self,
                serializer: S,
            ) -> std::result::Result<S::Ok, S::Error> {
                let message = self.0;
                let mut signature = match message.role {
                    Role::Assistant => signature_of(&message.content),
                    _ => None,
                };
                let calls = &message.tool_calls;
                let mut seq = serializer.serialize_seq(None)?;
                for (i, part) in parts(&message.content).enumerate() {
                    let signed = if i == 0 && calls.is_empty() {
                        signature.take()
                    } else {
                        None
                    };
                    seq.serialize_element(&Signed(part, signed))?;
                }
                for call in calls {
                    let part = Part::Call {
                        name: &call.name,
                        args: &call.arguments,
                        id: call.id.as_deref(),
                    };
                    seq.serialize_element(&Signed(part, signature.take()))?;
                }
                seq.end()
            }
        }
        let role = match self.0.role {
            Role::Assistant => "model",
            _ => "user",
        };
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("role", role)?;
        map.serialize_entry("parts", &Parts(self.0))?;
        map.end()
    }
}

/// A run of tool results: each a `functionResponse`, the images and documents it returned
/// as inline parts beside it.
struct Responses<'a>(&'a [Message]);

impl Serialize for Responses<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        struct Parts<'a>(&'a [Message]);
        impl Serialize for Parts<'_> {
            fn serialize<S: Serializer>(
                &self,
                serializer: S,
            ) -> std::result::Result<S::Ok, S::Error> {
                let mut seq = serializer.serialize_seq(None)?;
                for message in self.0.iter().filter(|m| m.role == Role::Tool) {
                    let response = Part::Response {
                        name: message.name.as_deref().unwrap_or(""),
                        result: ContentText(&message.content),
                        id: message.tool_call_id.as_deref(),
                    };
                    seq.serialize_element(&Signed(response, None))?;
                    if let Content::Blocks(_) = &message.content {
                        for media in parts(&message.content).filter(|p| !matches!(p, Part::Text(_)))
                        {
                            seq.serialize_element(&Signed(media, None))?;
                        }
                    }
                }
                seq.end()
            }
        }
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("role", "user")?;
        map.serialize_entry("parts", &Parts(self.0))?;
        map.end()
    }
}

/// The [`Thinking::provider`] of reasoning read from, and sent back to, Gemini.
const THINKING_FORMAT: &str = "gemini";

/// The first thought signature of a turn, kept as a signed thinking block.
fn signature_of(content: &Content) -> Option<&str> {
    match content {
        Content::Text(_) => None,
        Content::Blocks(blocks) => blocks.iter().find_map(|b| match b {
            // Another vendor's signature would be refused.
            Block::Thinking(
                thinking @ Thinking {
                    signature: Some(s), ..
                },
            ) if thinking.is_for(THINKING_FORMAT) => Some(s.as_str()),
            _ => None,
        }),
    }
}

/// The parts of content: non-empty text, and images and documents inline (an image by URL
/// was refused before; thinking and hosted calls are not sent).
fn parts(content: &Content) -> impl Iterator<Item = Part<'_>> {
    let (text, blocks) = match content {
        Content::Text(text) => (Some(text.as_str()).filter(|t| !t.is_empty()), &[][..]),
        Content::Blocks(blocks) => (None, &blocks[..]),
    };
    text.map(Part::Text)
        .into_iter()
        .chain(blocks.iter().filter_map(|block| match block {
            Block::Text(t) if !t.text.is_empty() => Some(Part::Text(&t.text)),
            Block::Image(image) => match image.source() {
                ImageSource::Data { data, media_type } => Some(Part::Inline { media_type, data }),
                ImageSource::Url(_) => None,
            },
            Block::Document(doc) => Some(Part::Inline {
                media_type: &doc.media_type,
                data: &doc.data,
            }),
            Block::Text(_) | Block::Thinking(_) | Block::HostedCall(_) => None,
        }))
}

/// One part of a turn.
enum Part<'a> {
    Text(&'a str),
    Inline {
        media_type: &'a str,
        data: &'a str,
    },
    Call {
        name: &'a str,
        args: &'a Map<String, Value>,
        id: Option<&'a str>,
    },
    Response {
        name: &'a str,
        result: ContentText<'a>,
        id: Option<&'a str>,
    },
}

/// A part, with the turn's thought signature when it carries it.
struct Signed<'a>(Part<'a>, Option<&'a str>);

impl Serialize for Signed<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct InlineData<'a> {
            mime_type: &'a str,
            data: &'a str,
        }
        #[derive(Serialize)]
        struct FunctionCall<'a> {
            name: &'a str,
            args: &'a Map<String, Value>,
            #[serde(skip_serializing_if = "Option::is_none")]
            id: Option<&'a str>,
        }
        #[derive(Serialize)]
        struct FunctionResponse<'a> {
            name: &'a str,
            response: Result<'a>,
            #[serde(skip_serializing_if = "Option::is_none")]
            id: Option<&'a str>,
        }
        #[derive(Serialize)]
        struct Result<'a> {
            result: &'a ContentText<'a>,
        }
        let mut map = serializer.serialize_map(None)?;
        match &self.0 {
            Part::Text(text) => map.serialize_entry("text", text)?,
            Part::Inline { media_type, data } => map.serialize_entry(
                "inline_data",
                &InlineData {
                    mime_type: media_type,
                    data,
                },
            )?,
            Part::Call { name, args, id } => map.serialize_entry(
                "functionCall",
                &FunctionCall {
                    name,
                    args,
                    id: *id,
                },
            )?,
            Part::Response { name, result, id } => map.serialize_entry(
                "functionResponse",
                &FunctionResponse {
                    name,
                    response: Result { result },
                    id: *id,
                },
            )?,
        }
        if let Some(signature) = self.1 {
            map.serialize_entry("thoughtSignature", signature)?;
        }
        map.end()
    }
}

// The answer ----------------------------------------------------------------------------------

fn finish_reason(value: &str) -> FinishReason {
    match value {
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY" => {
            FinishReason::Filtered
        }
        // The vendor dropped a call it could not read, or one of a tool not offered.
        "MALFORMED_FUNCTION_CALL" | "UNEXPECTED_TOOL_CALL" => FinishReason::MalformedToolCall,
        _ => FinishReason::Other,
    }
}

/// A `generateContent` answer, or one chunk of its stream (each chunk is an answer of its
/// own).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Chunk<'a> {
    #[serde(borrow, default)]
    candidates: Option<Few<Candidate<'a>>>,
    #[serde(default)]
    usage_metadata: Option<UsageIn>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(borrow, default)]
    prompt_feedback: Option<Feedback<'a>>,
    #[serde(borrow, default)]
    response_id: Text<'a>,
    #[serde(borrow, default)]
    model_version: Text<'a>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Feedback<'a> {
    #[serde(borrow, default)]
    block_reason: Text<'a>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate<'a> {
    #[serde(borrow, default)]
    content: Option<ContentIn<'a>>,
    #[serde(borrow, default)]
    finish_reason: Text<'a>,
    /// Why it stopped, in words; sent with an unusual finish (for a malformed call, often
    /// the call's own text).
    #[serde(borrow, default)]
    finish_message: Text<'a>,
}

#[derive(Deserialize)]
struct ContentIn<'a> {
    #[serde(borrow, default)]
    parts: Few<PartIn<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PartIn<'a> {
    #[serde(borrow, default)]
    text: Text<'a>,
    #[serde(default)]
    thought: Option<bool>,
    #[serde(borrow, default)]
    thought_signature: Text<'a>,
    #[serde(borrow, default)]
    function_call: Option<CallIn<'a>>,
}

#[derive(Deserialize)]
struct CallIn<'a> {
    #[serde(borrow, default)]
    name: Text<'a>,
    #[serde(default)]
    args: Option<Value>,
    #[serde(borrow, default)]
    id: Text<'a>,
}

/// `usageMetadata`; a count present as `null` is 0. Counts saturate, never overflow.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(clippy::struct_field_names)] // the vendor's names
struct UsageIn {
    #[serde(default, deserialize_with = "present")]
    prompt_token_count: Option<Count>,
    #[serde(default, deserialize_with = "present")]
    candidates_token_count: Option<Count>,
    #[serde(default, deserialize_with = "present")]
    thoughts_token_count: Option<Count>,
    #[serde(default, deserialize_with = "present")]
    total_token_count: Option<Count>,
    #[serde(default, deserialize_with = "present")]
    cached_content_token_count: Option<Count>,
    /// What a built-in tool (code execution, search) read: input, billed as prompt tokens.
    #[serde(default, deserialize_with = "present")]
    tool_use_prompt_token_count: Option<Count>,
}

impl UsageIn {
    /// The usage, or `None` when the object said nothing.
    fn usage(&self) -> Option<TokenUsage> {
        let counts = [
            self.prompt_token_count,
            self.candidates_token_count,
            self.thoughts_token_count,
            self.total_token_count,
            self.cached_content_token_count,
            self.tool_use_prompt_token_count,
        ];
        if counts.iter().all(Option::is_none) {
            return None;
        }
        let read = |count: Option<Count>| count.map_or(0, |c| c.0);
        // `totalTokenCount` counts a built-in tool's input beside the prompt's.
        let prompt =
            read(self.prompt_token_count).saturating_add(read(self.tool_use_prompt_token_count));
        let completion =
            read(self.candidates_token_count).saturating_add(read(self.thoughts_token_count));
        let total = self
            .total_token_count
            .map_or_else(|| prompt.saturating_add(completion), |t| t.0);
        Some(
            TokenUsage::new(prompt, completion, total)
                .with_cached(read(self.cached_content_token_count))
                .with_reasoning(read(self.thoughts_token_count)),
        )
    }
}

/// Reads Gemini: each stream chunk is an answer of its own, so text is handed out as it
/// comes, calls are collected whole, and the latest usage and finish reason win (a chunk
/// without candidates, usage only, is fine); a non-streamed answer is one chunk.
pub(crate) struct ContentAccumulator<'v> {
    vendor: Vendor<'v>,
    id: Option<String>,
    model: Option<String>,
    signature: Option<String>,
    thinking: String,
    text: String,
    calls: Vec<ToolCall>,
    usage: Option<TokenUsage>,
    finish: Option<FinishReason>,
    finish_message: Option<String>,
}

impl<'v> ContentAccumulator<'v> {
    /// Who is answering, for errors.
    fn vendor(&self) -> Vendor<'v> {
        self.vendor
    }

    pub(crate) fn new(vendor: Vendor<'v>) -> Self {
        Self {
            vendor,
            id: None,
            model: None,
            signature: None,
            thinking: String::new(),
            text: String::new(),
            calls: Vec::new(),
            usage: None,
            finish: None,
            finish_message: None,
        }
    }

    /// Reads a non-streamed answer (the body of `path`).
    pub(crate) fn answer(mut self, path: &str, body: &[u8]) -> Result<CompletionResponse> {
        let vendor = self.vendor();
        let chunk: Chunk<'_> = json::answer(vendor, path, body)?;
        if let Some(error) = chunk.error.as_ref().filter(|e| !e.is_null()) {
            return Err(json::vendor_error(
                vendor,
                error,
                &String::from_utf8_lossy(body),
            ));
        }
        if chunk.prompt_feedback.is_none() {
            json::required(vendor, chunk.candidates.as_ref(), "candidates", body)?;
        }
        self.take(chunk, None);
        // A missing finish reason is not a finished answer.
        self.finish.get_or_insert(FinishReason::Other);
        self.finish()
    }

    /// Takes one chunk; `emit` is `None` for a non-streamed answer.
    fn take(&mut self, chunk: Chunk<'_>, mut emit: Option<&mut dyn FnMut(LlmEvent)>) {
        crate::wire::keep_first(&mut self.id, chunk.response_id.as_ref());
        crate::wire::keep_first(&mut self.model, chunk.model_version.as_ref());
        if let Some(usage) = chunk.usage_metadata.as_ref().and_then(UsageIn::usage) {
            self.usage = Some(usage);
        }
        // A prompt that was blocked has no candidates at all.
        if chunk
            .prompt_feedback
            .as_ref()
            .is_some_and(|f| f.block_reason.is_some())
        {
            self.finish = Some(FinishReason::Filtered);
        }
        let Some(candidate) = chunk.candidates.as_ref().and_then(Few::first) else {
            return;
        };
        if let Some(reason) = &candidate.finish_reason {
            self.finish = Some(finish_reason(reason));
        }
        crate::wire::keep_first(&mut self.finish_message, candidate.finish_message.as_ref());
        let parts = candidate.content.iter().flat_map(|c| c.parts.iter());
        for part in parts {
            if let (Some(signature), None) = (&part.thought_signature, &self.signature) {
                self.signature = Some(signature.to_string());
            }
            if let Some(text) = part.text.as_ref().filter(|t| !t.is_empty()) {
                let thought = part.thought == Some(true);
                if thought {
                    self.thinking.push_str(text);
                } else {
                    self.text.push_str(text);
                }
                if let Some(emit) = emit.as_mut() {
                    emit(if thought {
                        LlmEvent::ThinkingDelta(text.to_string())
                    } else {
                        LlmEvent::TextDelta(text.to_string())
                    });
                }
            }
            if let Some(call) = &part.function_call {
                let tool_call =
                    call_from_value(call.name.as_deref().unwrap_or_default(), call.args.clone());
                self.calls.push(match &call.id {
                    Some(id) => tool_call.with_id(id.to_string()),
                    None => tool_call,
                });
            }
        }
    }
}

impl Accumulator for ContentAccumulator<'_> {
    fn feed(&mut self, event: SseEvent<'_>, emit: &mut dyn FnMut(LlmEvent)) -> Result<()> {
        let chunk: Chunk<'_> = serde_json::from_str(event.data)
            .map_err(|e| json::unreadable(self.vendor(), &e, event.data))?;
        if let Some(error) = chunk.error.as_ref().filter(|e| !e.is_null()) {
            return Err(json::vendor_error(self.vendor(), error, event.data));
        }
        self.take(chunk, Some(emit));
        Ok(())
    }

    fn finish(&mut self) -> Result<CompletionResponse> {
        if self.finish.is_none() {
            return Err(json::incomplete(
                self.vendor(),
                "a candidate's finishReason",
            ));
        }
        let mut blocks: Vec<Block> = Vec::new();
        if let Some(signature) = self.signature.take() {
            blocks.push(
                Thinking::signed("", signature)
                    .from_provider(THINKING_FORMAT)
                    .into(),
            );
        }
        if !self.thinking.is_empty() {
            let thinking = Thinking::new(std::mem::take(&mut self.thinking));
            blocks.push(thinking.from_provider(THINKING_FORMAT).into());
        }
        if !self.text.is_empty() {
            blocks.push(Block::text(std::mem::take(&mut self.text)));
        }
        let mut response = CompletionResponse::from_blocks(blocks)
            .with_tool_calls(std::mem::take(&mut self.calls))
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
}
