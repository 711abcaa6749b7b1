//! `OpenAiResponses` and its builder: the model, and how it is set up.

use harness_core::{
    BoxStream, CompletionResponse, Llm, LlmEvent, ModelInfo, ModelSettings, Prices, Request,
    Result, Supports, TokenCount,
};
use serde_json::Value;
use std::sync::Arc;

use super::accumulator::ResponsesAccumulator;
use crate::connection::{Connection, connection_setters};
use crate::rest::json::Vendor;
use crate::rest::{self, HttpClient, HttpConfig};

/// The provider id errors and [`Llm::info`] report (telemetry names the service `openai`).
const ID: &str = "openai-responses";
/// Where a request goes, under the base URL.
const PATH: &str = "/responses";

/// A model behind OpenAI's Responses API (`POST /responses`), the API OpenAI's reasoning
/// models and hosted tools are built for. [`OpenAi`](crate::OpenAi) speaks Chat Completions.
///
/// - **Requests.** The leading system messages are the `instructions`; the transcript goes as
///   input items (a tool call as a `function_call`, its result as a `function_call_output`).
///   Settings go as `temperature`, `top_p`, `max_output_tokens`, `tool_choice` and
///   `parallel_tool_calls` (with tools only), `reasoning` `{effort, summary: "auto"}` from
///   `with_reasoning`. The API has no stop sequences: `stop` is not sent. A function tool is
///   `strict` when its schema meets strict mode's rules. With an output schema the answer is
///   held to it through `text.format` `json_schema`.
/// - **Reasoning** comes back as [`Thinking`](harness_core::Thinking) blocks: the summary as
///   their text, the reasoning item's id as their [`id`](harness_core::Thinking::id), the
///   encrypted reasoning as their [`redacted`](harness_core::Thinking::redacted) data, and
///   [`provider`](harness_core::Thinking::provider) `openai-responses`. They go back with
///   their turn, so a reasoning model keeps its chain of thought across tool calls: see
///   [`OpenAiResponsesBuilder::store`].
/// - **Hosted tools** ([`ModelSettings::hosted_tools`]) are sent as the API's own tools; each
///   call comes back as a [`Block::HostedCall`](harness_core::Block::HostedCall) (and a
///   stream's [`LlmEvent::HostedCall`]). The answer's citations are kept on the call they
///   point at ([`HostedCall::citations`](harness_core::HostedCall::citations)).
/// - **Usage** counts cached input tokens and reasoning tokens; an answer cut at
///   `max_output_tokens` finishes with [`Length`](harness_core::FinishReason::Length), one a
///   content filter stopped with [`Filtered`](harness_core::FinishReason::Filtered).
/// - **Failures**: a `response.failed` or `error` event, or a failed answer, is a
///   [`Vendor`](harness_core::ProviderErrorKind::Vendor) error keeping the service's code and
///   message; a stream that ends before `response.completed` (or `response.incomplete`) is an
///   [`Incomplete`](harness_core::ProviderErrorKind::Incomplete) error.
///
/// ```no_run
/// use harness_core::hosted::WebSearch;
/// use harness_core::{ModelSettings, ReasoningLevel};
/// use harness_providers::OpenAiResponses;
///
/// let model = OpenAiResponses::builder("gpt-5")
///     .settings(
///         ModelSettings::new()
///             .with_reasoning(ReasoningLevel::Low)
///             .with_hosted_tool(WebSearch::new()),
///     )
///     .build()?;
/// # Ok::<(), harness_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiResponses {
    client: Arc<HttpClient>,
    pub(super) model: String,
    /// Where requests go, under the base URL (with any query the service needs).
    path: String,
    /// Who is answering, for errors.
    vendor: Vendor<'static>,
    pub(super) defaults: ModelSettings,
    pub(super) store: bool,
    pub(super) native_output: bool,
    /// Whether the model is one the library knows to reason.
    pub(super) reasons: bool,
    /// The builder's `prices`, over the table's.
    prices: Option<Prices>,
}

/// Builds an [`OpenAiResponses`].
#[derive(Debug, Clone)]
#[must_use = "call build() to get the model"]
pub struct OpenAiResponsesBuilder {
    model: String,
    connection: Connection,
    defaults: ModelSettings,
    store: bool,
    native_output: bool,
}

impl OpenAiResponses {
    /// OpenAI's `model`, with the key from `OPENAI_API_KEY` and the base URL from
    /// `OPENAI_BASE_URL` when set.
    ///
    /// # Errors
    /// As [`OpenAiResponsesBuilder::build`].
    pub fn new(model: impl Into<String>) -> Result<Self> {
        Self::builder(model).build()
    }

    /// A builder for OpenAI's `model`.
    pub fn builder(model: impl Into<String>) -> OpenAiResponsesBuilder {
        OpenAiResponsesBuilder {
            model: model.into(),
            connection: Connection::default(),
            defaults: ModelSettings::default(),
            store: false,
            native_output: true,
        }
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

    /// The request body this model would send, as JSON, without sending it: `model`,
    /// `input`, `store` and only the options that are set. (What is sent is written straight
    /// from the request, without this value in between.)
    pub fn request_body(&self, request: &Request<'_>, stream: bool) -> Value {
        let body = self.body(request, stream);
        // Serialising these types cannot fail: every map key is a string.
        serde_json::to_value(rest::with_extra(&body, &body.extra)).unwrap_or_default()
    }
}

impl OpenAiResponsesBuilder {
    connection_setters!();

    /// The model's name as given.
    pub(crate) fn model_name(&self) -> &str {
        &self.model
    }

    /// Default settings for every request, under the agent's and the run's (temperature,
    /// output limit, reasoning effort from `with_reasoning`, hosted tools, ...).
    pub fn settings(mut self, settings: ModelSettings) -> Self {
        self.defaults = settings;
        self
    }

    /// Whether the service keeps what it answers (`store`; default false).
    ///
    /// Off, nothing of the conversation is kept on OpenAI's side beyond what its own policies
    /// require: each request is sent `store: false` and, for a reasoning model, asks for the
    /// reasoning encrypted (`include: ["reasoning.encrypted_content"]`), and the encrypted
    /// reasoning goes back with its turn, so the model keeps its chain between tool calls all
    /// the same. A reasoning model is one the library knows to reason (`gpt-5`, `o3`, ...:
    /// [`ModelInfo::supports`]) or one asked for a reasoning level (`with_reasoning`); a model
    /// that does not reason refuses the request for encrypted reasoning.
    /// A hosted tool's call cannot be sent back then (the service kept nothing to match it
    /// to): the model sees the text it wrote from it, not the call.
    ///
    /// On, the service stores each response (as its dashboard and evaluations need), and
    /// reasoning and hosted calls go back by their ids.
    pub fn store(mut self, on: bool) -> Self {
        self.store = on;
        self
    }

    /// Whether answers are held to an output schema natively (`text.format` `json_schema`),
    /// so an agent's structured output is asked for that way instead of through a
    /// `final_answer` tool ([`Supports::structured_output`]); on by default. Off for a model
    /// that cannot.
    pub fn structured_output(mut self, on: bool) -> Self {
        self.native_output = on;
        self
    }

    /// The model.
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error for `max_concurrency` 0,
    /// a base URL that is not an http(s) URL, or a key that is not a valid header.
    pub fn build(self) -> Result<OpenAiResponses> {
        let mut config =
            self.connection
                .config(ID, "https://api.openai.com/v1", Some("OPENAI_BASE_URL"));
        if let Some(key) = self.connection.key(&["OPENAI_API_KEY"]) {
            config
                .headers
                .push(("authorization".into(), format!("Bearer {key}")));
        }
        self.build_with(config, PATH, Vendor::new(ID, "OpenAI"))
    }

    /// The model, reached through `config` (its base URL, its authentication headers, its
    /// limits: this builder's connection settings are not used) at `path` under the base URL
    /// (with any query the service needs, such as Azure's `?api-version=...`), its errors
    /// saying `vendor`: for a service that serves the Responses API elsewhere.
    ///
    /// # Errors
    /// As [`HttpClient::new`].
    pub(crate) fn build_with(
        self,
        config: HttpConfig,
        path: impl Into<String>,
        vendor: Vendor<'static>,
    ) -> Result<OpenAiResponses> {
        let reasons = crate::models::info("", &self.model, Supports::new())
            .supports
            .reasoning;
        Ok(OpenAiResponses {
            client: Arc::new(HttpClient::new(config)?),
            model: self.model,
            path: path.into(),
            vendor,
            defaults: self.defaults,
            store: self.store,
            native_output: self.native_output,
            reasons,
            prices: self.connection.prices,
        })
    }
}

#[async_trait::async_trait]
impl Llm for OpenAiResponses {
    async fn generate(&self, request: Request<'_>) -> Result<CompletionResponse> {
        let body = self.body(&request, false);
        let answer = self
            .client
            .post(&self.path, &rest::with_extra(&body, &body.extra))
            .await?;
        ResponsesAccumulator::new(self.vendor).answer(&self.path, &answer)
    }

    fn stream(self: Arc<Self>, request: Request<'_>) -> BoxStream<'static, Result<LlmEvent>> {
        let body = self.body(&request, true);
        rest::stream(
            Arc::clone(&self.client),
            &self.path,
            &rest::with_extra(&body, &body.extra),
            ResponsesAccumulator::new(self.vendor),
        )
    }

    /// OpenAI's published tokenizer (the `tokenizer` feature) counts a model it knows,
    /// exactly for messages of text; otherwise [`TokenCount::estimate`].
    async fn count_tokens(&self, request: Request<'_>) -> Result<TokenCount> {
        Ok(crate::tokenizer::count(&self.model, &request))
    }

    fn info(&self) -> ModelInfo {
        let supports = Supports::new()
            .with_tools(true)
            .with_images(true)
            .with_structured_output(self.native_output);
        // The price table knows OpenAI's models under `openai`, whichever API serves them.
        let info = crate::models::info("openai", &self.model, supports);
        let mut info = crate::models::priced(info, self.prices);
        info.provider.clone_from(&self.client.config().provider);
        info
    }
}
