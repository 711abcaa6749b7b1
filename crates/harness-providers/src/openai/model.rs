//! `OpenAi` and its builder: the model, and how it is set up.

use harness_core::{
    BoxStream, CompletionResponse, Llm, LlmEvent, ModelInfo, ModelSettings, Prices, Request,
    Result, Supports, TokenCount,
};
use serde_json::Value;
use std::sync::Arc;

use crate::connection::{Connection, connection_setters};
use crate::rest::json::Vendor;
use crate::rest::{self, HttpClient, HttpConfig};
use crate::services::{self, Service, TokenLimit};

use super::accumulator::{ChatAccumulator, PATH, refused_call};

/// A model behind the OpenAI Chat Completions API: OpenAI itself, the gateways that share
/// its format (Groq, Together, DeepSeek, Mistral, xAI, OpenRouter, Fireworks, Cerebras) and
/// the local servers (Ollama, vLLM, LM Studio, llama.cpp).
///
/// Settings go on the wire as the service takes them: `temperature`, `top_p`, `stop`,
/// `tool_choice` and `parallel_tool_calls` (with tools only), `reasoning_effort`, and the
/// output limit as `max_completion_tokens` (OpenAI) or `max_tokens` (the others). With an
/// output schema a service that supports it gets `response_format` `json_schema` (strict when
/// the schema allows); see [`OpenAiBuilder::structured_output`]. A failure names the service it
/// came from: a Groq model's errors carry the provider id `groq` and say Groq.
///
/// On OpenAI itself, a [`PromptCache`](harness_core::PromptCache) in the settings sends its
/// `key` as `prompt_cache_key` and its `retention` as `prompt_cache_retention` (OpenAI caches
/// long prefixes by itself; the gateways are not sent them).
///
/// Reasoning (`reasoning_content`, `reasoning`, or content parts of type `thinking`) comes
/// back as [`Thinking`](harness_core::Thinking). OpenRouter's `reasoning_details` add what plain text cannot carry,
/// the signature and any encrypted reasoning, kept on blocks whose
/// [`provider`](harness_core::Thinking::provider) is the service's id, so that no other vendor is sent
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
    pub(super) model: String,
    /// Where requests go, under the base URL (with any query the service needs).
    path: String,
    /// The service's id, as errors report it (the client's provider).
    pub(super) id: &'static str,
    /// The service's name, for messages.
    name: &'static str,
    pub(super) defaults: ModelSettings,
    pub(super) stream_usage: bool,
    pub(super) native_output: bool,
    /// Whether the output limit goes as `max_completion_tokens` (OpenAI) or `max_tokens`.
    pub(super) max_completion_tokens: bool,
    /// The builder's `prices`, over the table's.
    prices: Option<Prices>,
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
}

impl OpenAiBuilder {
    connection_setters!();

    /// The model's name as given.
    pub(crate) fn model_name(&self) -> &str {
        &self.model
    }

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
        let vendor = Vendor::new(self.service.id, self.service.name);
        self.build_with(config, PATH, vendor)
    }

    /// The model, reached through `config` (its base URL, its authentication, its limits:
    /// this builder's connection settings are not used) at `path` under the base URL (with
    /// any query the service needs, such as Azure's `?api-version=...`), its errors saying
    /// `vendor`: for a service that serves Chat Completions elsewhere. The builder's own
    /// settings (default settings, structured output, stream usage) are kept.
    ///
    /// # Errors
    /// As [`HttpClient::new`].
    pub(crate) fn build_with(
        self,
        config: HttpConfig,
        path: impl Into<String>,
        vendor: Vendor<'static>,
    ) -> Result<OpenAi> {
        Ok(OpenAi {
            client: Arc::new(HttpClient::new(config)?),
            model: self.model,
            path: path.into(),
            id: vendor.id,
            name: vendor.name,
            defaults: self.defaults,
            stream_usage: self.stream_usage,
            native_output: self.native_output.unwrap_or(self.service.structured_output),
            max_completion_tokens: self.service.token_limit == TokenLimit::MaxCompletionTokens,
            prices: self.connection.prices,
        })
    }
}

pub(crate) fn env_nonempty(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.trim().is_empty())
}

#[async_trait::async_trait]
impl Llm for OpenAi {
    async fn generate(&self, request: Request<'_>) -> Result<CompletionResponse> {
        crate::wire::refuse_hosted(self.name, request.settings, &self.defaults)?;
        let body = self.body(&request, false);
        let answer = match self
            .client
            .post(&self.path, &rest::with_extra(&body, &body.extra))
            .await
        {
            Ok(answer) => answer,
            Err(error) => return refused_call(error),
        };
        ChatAccumulator::new(self.vendor()).answer(&answer)
    }

    fn stream(self: Arc<Self>, request: Request<'_>) -> BoxStream<'static, Result<LlmEvent>> {
        if let Err(e) = crate::wire::refuse_hosted(self.name, request.settings, &self.defaults) {
            return crate::wire::failed_stream(e);
        }
        let body = self.body(&request, true);
        rest::stream(
            Arc::clone(&self.client),
            &self.path,
            &rest::with_extra(&body, &body.extra),
            ChatAccumulator::new(self.vendor()),
        )
    }

    /// Chat Completions has no counting endpoint: with the `tokenizer` feature, OpenAI's
    /// published tokenizer counts a model it knows (exactly for messages of text); otherwise,
    /// and for the gateways' own models, [`TokenCount::estimate`].
    async fn count_tokens(&self, request: Request<'_>) -> Result<TokenCount> {
        Ok(crate::tokenizer::count(&self.model, &request))
    }

    fn info(&self) -> ModelInfo {
        let supports = Supports::new()
            .with_tools(true)
            .with_images(true)
            .with_structured_output(self.native_output);
        crate::models::priced(
            crate::models::info(&self.client.config().provider, &self.model, supports),
            self.prices,
        )
    }
}
