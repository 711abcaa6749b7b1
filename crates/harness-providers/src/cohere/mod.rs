//! Cohere's Chat API, version 2 (`POST /v2/chat`): the model (here), its request
//! (`request.rs`), the wire types of its answers (`chunk.rs`) and the reader of both
//! (`accumulator.rs`).

use harness_core::{
    BoxStream, CompletionResponse, Llm, LlmEvent, ModelInfo, ModelSettings, Prices, Request,
    Result, Supports, ToolChoice,
};
use serde_json::Value;
use std::sync::Arc;

use crate::connection::{Connection, connection_setters};
use crate::rest::json::Vendor;
use crate::rest::{self, HttpClient};
use crate::wire::Settings;

mod accumulator;
mod chunk;
mod request;

pub(crate) use accumulator::ChatAccumulator;
use accumulator::refused_call;
use request::{Body, Messages, ResponseFormat, ThinkingWire, Tools};

const PATH: &str = "/chat";
/// Who answers, as errors say it.
const VENDOR: Vendor<'static> = Vendor::new(ID, NAME);
/// The service's name, as errors say it.
const NAME: &str = "Cohere";
/// The provider id errors and telemetry report.
const ID: &str = "cohere";
/// The [`Thinking::provider`](harness_core::Thinking::provider) of reasoning read from, and sent back to, Cohere.
const THINKING_FORMAT: &str = "cohere";
/// The error type of an answer Cohere refused because the model's tool call came out wrong.
const INVALID_TOOL_GENERATION: &str = "INVALID_TOOL_GENERATION";

/// A Command model behind Cohere's Chat API (v2).
///
/// The model's `tool_plan` (what it says it will do before calling tools) is the turn's text,
/// and goes back as the plan of the turn that made the calls. A reasoning model's `thinking`
/// blocks come back as [`Thinking`](harness_core::Thinking) blocks and are sent back with
/// their turn; `with_reasoning` asks for thinking with the level's token budget. A structured
/// output goes in `response_format` (`json_object` with the schema). Cohere's `tool_choice`
/// cannot name a tool: asking for one tool offers that tool alone, with tool use required.
/// Images go to the models that read them (`command-a-vision`); documents are not sent (the
/// chat API takes no files). Citations are not kept.
///
/// The usage counts `usage.tokens` (what the model read, Cohere's prompt template included),
/// not the smaller `billed_units` Cohere charges; so the price table has no Cohere row, and a
/// cost or a money budget needs the builder's `prices`, knowing it prices the larger count.
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
    /// The builder's `prices`: the table has no Cohere row (see [`Cohere`]'s usage note).
    prices: Option<Prices>,
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
            prices: self.connection.prices,
        })
    }
}

#[async_trait::async_trait]
impl Llm for Cohere {
    async fn generate(&self, request: Request<'_>) -> Result<CompletionResponse> {
        crate::wire::refuse_hosted(NAME, request.settings, &self.defaults)?;
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
        if let Err(e) = crate::wire::refuse_hosted(NAME, request.settings, &self.defaults) {
            return crate::wire::failed_stream(e);
        }
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
        crate::models::priced(crate::models::info(ID, &self.model, supports), self.prices)
    }
}
