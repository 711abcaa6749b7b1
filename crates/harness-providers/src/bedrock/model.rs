//! The Bedrock model and its builder.

use std::sync::Arc;

use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use harness_core::{
    BoxStream, CompletionResponse, Error, Llm, LlmEvent, ModelInfo, ModelSettings, Prices, Request,
    Result, Role, Supports, TokenCount, ToolChoice,
};
use serde::Serialize;
use serde_json::Value;

use super::credentials::CredentialSource;
use super::request::{
    Additional, Body, Choice, CountBody, InferenceConfig, Messages, System, ThinkingWire,
    ToolConfig, Tools,
};
use super::signing::{Scope, SigV4};
use super::{ConverseAccumulator, EventStream, ID, VENDOR};
use crate::connection::{Connection, connection_setters};
use crate::rest::{self, HttpClient};
use crate::wire::{Settings, SystemText};

/// The output limit sent with extended thinking when the settings name none (Claude on
/// Bedrock wants one above the thinking budget).
const DEFAULT_MAX_TOKENS: u32 = 4096;
/// The service's name, as errors say it.
const NAME: &str = "Bedrock";

/// A model on AWS Bedrock, through the Converse API (ConverseStream for a stream): Claude,
/// Nova, Llama, Mistral and the other models Bedrock hosts, in one wire format.
///
/// Requests are signed with SigV4, the credentials from AWS's standard chain (environment
/// variables, the shared config and credentials files and their profiles, web identity, the
/// ECS container endpoint, the EC2 instance role) or given with
/// [`credentials`](BedrockBuilder::credentials); or they carry a Bedrock API key
/// ([`api_key`](BedrockBuilder::api_key), else `AWS_BEARER_TOKEN_BEDROCK`). The region comes
/// from the builder, else `AWS_REGION`, else `AWS_DEFAULT_REGION`.
///
/// The model is a model id (`anthropic.claude-3-5-haiku-20241022-v1:0`), a cross-region
/// inference profile (`us.anthropic.claude-sonnet-4-20250514-v1:0`) or an ARN (a
/// provisioned model, an application inference profile). Reasoning comes back as
/// [`Thinking`](harness_core::Thinking) blocks with their signature (or redacted) and is sent
/// back with its turn; [`ReasoningLevel`](harness_core::ReasoningLevel) turns on Claude's
/// extended thinking. A [`PromptCache`](harness_core::PromptCache) with breakpoints in the
/// settings puts cache points after the system prompt and the tools;
/// a [`Guardrail`] is applied to the request and the answer. Fields the library does not
/// type (`additionalModelRequestFields`, `performanceConfig`, `requestMetadata`, ...) go in
/// [`ModelSettings::extra`], merged into the body.
///
/// ```no_run
/// use harness_providers::{Bedrock, Guardrail};
///
/// let model = Bedrock::builder("us.anthropic.claude-sonnet-4-20250514-v1:0")
///     .region("us-east-1")
///     .guardrail(Guardrail::new("gr-abc123", "1"))
///     .build()?;
/// # Ok::<(), harness_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Bedrock {
    client: Arc<HttpClient>,
    model: String,
    /// `/model/{id}/converse`, `/model/{id}/converse-stream` and `/model/{id}/count-tokens`,
    /// the id percent-encoded.
    paths: Arc<(String, String, String)>,
    defaults: ModelSettings,
    guardrail: Option<Guardrail>,
    /// The builder's `prices`, over the table's.
    prices: Option<Prices>,
}

/// A guardrail Bedrock applies to the request and to the answer (`guardrailConfig`): its id
/// (or ARN) and version, and whether Bedrock reports what it did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[allow(clippy::struct_field_names)] // the wire's names
pub struct Guardrail {
    guardrail_identifier: String,
    guardrail_version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    trace: Option<GuardrailTrace>,
}

impl Guardrail {
    /// The guardrail `identifier` (its id or ARN) at `version` (a number, or `DRAFT`).
    pub fn new(identifier: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            guardrail_identifier: identifier.into(),
            guardrail_version: version.into(),
            trace: None,
        }
    }

    /// Whether Bedrock traces what the guardrail did.
    #[must_use]
    pub fn with_trace(mut self, trace: GuardrailTrace) -> Self {
        self.trace = Some(trace);
        self
    }
}

/// How much of a guardrail's work Bedrock reports (`trace`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum GuardrailTrace {
    /// The trace of what the guardrail intervened on.
    Enabled,
    /// No trace.
    Disabled,
    /// The whole trace, what passed included.
    EnabledFull,
}

/// Builds a [`Bedrock`] model.
#[derive(Debug, Clone)]
#[must_use = "call build() to get the model"]
pub struct BedrockBuilder {
    model: String,
    connection: Connection,
    defaults: ModelSettings,
    region: Option<String>,
    profile: Option<String>,
    credentials: Option<SharedCredentialsProvider>,
    guardrail: Option<Guardrail>,
}

impl Bedrock {
    /// `model` in the region and with the credentials the environment gives.
    ///
    /// # Errors
    /// As [`BedrockBuilder::build`].
    pub fn new(model: impl Into<String>) -> Result<Self> {
        Self::builder(model).build()
    }

    /// A builder for `model`: a model id, an inference profile id or an ARN.
    pub fn builder(model: impl Into<String>) -> BedrockBuilder {
        BedrockBuilder {
            model: model.into(),
            connection: Connection::default(),
            defaults: ModelSettings::default(),
            region: None,
            profile: None,
            credentials: None,
            guardrail: None,
        }
    }

    /// The model as Bedrock knows it.
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

    /// The request body this model would send, as JSON, without sending it (the same for
    /// Converse and ConverseStream).
    pub fn request_body(&self, request: &Request<'_>) -> Value {
        let body = self.body(request);
        // Serialising these types cannot fail but for an image or document Bedrock cannot
        // take, which sending would report.
        serde_json::to_value(rest::with_extra(&body, &body.extra)).unwrap_or_default()
    }

    /// The request body, borrowed from the request.
    fn body<'a>(&'a self, request: &Request<'a>) -> Body<'a> {
        let settings = Settings::merge(request.settings, &self.defaults);
        // Cache points after the system prompt and the tools, the part of an agent's request
        // that repeats every turn.
        let cache = settings.prompt_cache.is_some_and(|cache| cache.breakpoints);
        let mut max_tokens = settings.max_tokens;
        // Extended thinking is Claude's; other models take theirs through
        // `additionalModelRequestFields` in the settings' extra fields.
        let additional = settings
            .reasoning
            .filter(|_| self.model.contains("anthropic."))
            .map(|level| {
                let budget = level.budget_tokens();
                max_tokens = Some(
                    max_tokens
                        .unwrap_or(DEFAULT_MAX_TOKENS)
                        .max(budget.saturating_add(1024)),
                );
                Additional {
                    thinking: ThinkingWire {
                        kind: "enabled",
                        budget_tokens: budget,
                    },
                }
            });
        let messages = crate::wire::with_call_ids(request.messages);
        let tool_config = Self::tool_config(request, &settings, &messages, cache);
        Body {
            messages: Messages(messages),
            system: SystemText::of(request.messages).map(|text| System { text, cache }),
            inference_config: InferenceConfig {
                max_tokens,
                temperature: settings.temperature,
                top_p: settings.top_p,
                stop_sequences: settings.stop,
            },
            tool_config,
            guardrail_config: self.guardrail.as_ref(),
            additional_model_request_fields: additional,
            extra: settings.extra,
        }
    }

    /// `toolConfig`: the tools and the choice. Converse cannot forbid calls: with
    /// [`ToolChoice::None`] the tools are left out, unless the transcript holds calls or
    /// results (Converse then requires them), where the model is left to choose.
    fn tool_config<'a>(
        request: &Request<'a>,
        settings: &Settings<'a>,
        messages: &[harness_core::Message],
        cache: bool,
    ) -> Option<ToolConfig<'a>> {
        if request.tools.is_empty() {
            return None;
        }
        let choice = match settings.tool_choice {
            None => None,
            Some(ToolChoice::None) => {
                let used = messages
                    .iter()
                    .any(|m| m.role == Role::Tool || !m.tool_calls.is_empty());
                if !used {
                    return None;
                }
                None
            }
            Some(ToolChoice::Required) => Some(Choice::Any),
            Some(ToolChoice::Tool(name)) => Some(Choice::Tool(name)),
            Some(_) => Some(Choice::Auto),
        };
        Some(ToolConfig {
            tools: Tools {
                specs: request.tools,
                cache,
            },
            tool_choice: choice,
        })
    }
}

impl BedrockBuilder {
    connection_setters!();

    /// Default settings for every request, under the agent's and the run's: the output
    /// limit, temperature, stop sequences, extended thinking for Claude (`with_reasoning`,
    /// its level's token budget), and fields the library does not type in `extra`
    /// (`additionalModelRequestFields` for a model's own parameters, `performanceConfig`,
    /// `requestMetadata`, ...).
    pub fn settings(mut self, settings: ModelSettings) -> Self {
        self.defaults = settings;
        self
    }

    /// The AWS region, such as `us-east-1`; without it `AWS_REGION`, else
    /// `AWS_DEFAULT_REGION`. It names the endpoint (`bedrock-runtime.{region}.amazonaws.com`)
    /// and the signature's scope.
    pub fn region(mut self, region: impl Into<String>) -> Self {
        self.region = Some(region.into());
        self
    }

    /// The profile of the shared config and credentials files the standard chain reads;
    /// without it `AWS_PROFILE`, else `default`.
    pub fn profile(mut self, profile: impl Into<String>) -> Self {
        self.profile = Some(profile.into());
        self
    }

    /// Credentials of your own (static keys, `aws_config`'s provider of your choice) instead
    /// of the standard chain. An API key ([`api_key`](Self::api_key)) wins over them.
    pub fn credentials(mut self, provider: impl ProvideCredentials + 'static) -> Self {
        self.credentials = Some(SharedCredentialsProvider::new(provider));
        self
    }

    /// A guardrail applied to every request and answer.
    pub fn guardrail(mut self, guardrail: Guardrail) -> Self {
        self.guardrail = Some(guardrail);
        self
    }

    /// The model.
    ///
    /// Authentication, first found: the [`api_key`](Self::api_key) given (a Bedrock API key,
    /// sent as a bearer token); the [`credentials`](Self::credentials) given (SigV4);
    /// `AWS_BEARER_TOKEN_BEDROCK`; else SigV4 with AWS's standard credential chain, asked
    /// on the first request (missing credentials are reported then, naming every place
    /// looked at). `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` (or [`base_url`](Self::base_url))
    /// moves the endpoint (a VPC endpoint, a proxy).
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error when no region is
    /// set where one is needed (the default endpoint, SigV4), for a region that is not one,
    /// a `max_tokens` setting of 0, `max_concurrency` 0 or a key that is not a valid header.
    pub fn build(self) -> Result<Bedrock> {
        if self.defaults.max_tokens == Some(0) {
            return Err(Error::configuration(
                "Bedrock max_tokens must be at least 1, got 0",
            ));
        }
        let region = self
            .region
            .clone()
            .or_else(|| env("AWS_REGION"))
            .or_else(|| env("AWS_DEFAULT_REGION"));
        if let Some(region) = &region
            && (region.is_empty()
                || !region
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'))
        {
            return Err(Error::configuration(format!(
                "{region:?} is not an AWS region; give one like us-east-1"
            )));
        }
        let needs_region = || {
            Error::configuration(
                "Bedrock needs an AWS region: set it with region(..), AWS_REGION or \
                 AWS_DEFAULT_REGION (such as us-east-1)",
            )
        };
        let default_base = region
            .as_ref()
            .map(|r| format!("https://bedrock-runtime.{r}.amazonaws.com"));
        let moved =
            self.connection.base_url.is_some() || env("AWS_ENDPOINT_URL_BEDROCK_RUNTIME").is_some();
        if default_base.is_none() && !moved {
            return Err(needs_region());
        }
        let mut config = self.connection.config(
            ID,
            default_base.as_deref().unwrap_or(""),
            Some("AWS_ENDPOINT_URL_BEDROCK_RUNTIME"),
        );
        let bearer = |key: String| ("authorization".to_owned(), format!("Bearer {key}"));
        let given_key = self.connection.api_key.clone().filter(|k| !k.is_empty());
        if let Some(key) = given_key {
            config.headers.push(bearer(key));
        } else {
            let source = match (self.credentials, env("AWS_BEARER_TOKEN_BEDROCK")) {
                (Some(provider), _) => Some(CredentialSource::given(provider)),
                (None, Some(key)) => {
                    config.headers.push(bearer(key));
                    None
                }
                (None, None) => region
                    .as_deref()
                    .map(|r| CredentialSource::chain(r, self.profile.clone())),
            };
            if let Some(credentials) = source {
                let region = region.clone().ok_or_else(needs_region)?;
                config.auth = Some(Arc::new(SigV4 {
                    credentials,
                    scope: Scope {
                        region,
                        service: "bedrock",
                        normalize_path: true,
                        content_sha256: true,
                    },
                }));
            } else if config.headers.is_empty() {
                return Err(needs_region());
            }
        }
        let id = percent_encoding::utf8_percent_encode(&self.model, MODEL_ID).to_string();
        let paths = (
            format!("/model/{id}/converse"),
            format!("/model/{id}/converse-stream"),
            format!("/model/{id}/count-tokens"),
        );
        Ok(Bedrock {
            client: Arc::new(HttpClient::new(config)?),
            model: self.model,
            paths: Arc::new(paths),
            defaults: self.defaults,
            guardrail: self.guardrail,
            prices: self.connection.prices,
        })
    }
}

/// What is percent-encoded in a model id in the path: all but the unreserved characters, so
/// `:` (in `...-v1:0`) and `/` (in an ARN) stay inside one path segment.
const MODEL_ID: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// A variable's value, when set and not blank.
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

#[async_trait::async_trait]
impl Llm for Bedrock {
    async fn generate(&self, request: Request<'_>) -> Result<CompletionResponse> {
        crate::wire::refuse_hosted(NAME, request.settings, &self.defaults)?;
        let body = self.body(&request);
        let path = &self.paths.0;
        let answer = self
            .client
            .post(path, &rest::with_extra(&body, &body.extra))
            .await?;
        ConverseAccumulator::new(VENDOR)
            .with_model(&self.model)
            .answer(path, &answer)
    }

    fn stream(self: Arc<Self>, request: Request<'_>) -> BoxStream<'static, Result<LlmEvent>> {
        if let Err(e) = crate::wire::refuse_hosted(NAME, request.settings, &self.defaults) {
            return crate::wire::failed_stream(e);
        }
        let body = self.body(&request);
        rest::stream::stream_framed(
            Arc::clone(&self.client),
            &self.paths.1,
            &rest::with_extra(&body, &body.extra),
            ConverseAccumulator::new(VENDOR).with_model(&self.model),
            EventStream::new(),
        )
    }

    /// Bedrock counts with CountTokens (`POST /model/{id}/count-tokens`) for the models it
    /// counts (Claude among them): the messages and system prompt exactly, the tools (which
    /// the count does not take) estimated and added, the count then an estimate.
    async fn count_tokens(&self, request: Request<'_>) -> Result<TokenCount> {
        let body = self.body(&request);
        let answer = self
            .client
            .post(&self.paths.2, &CountBody::of(&body))
            .await?;
        let counted = read_count(&self.paths.2, &answer)?;
        if request.tools.is_empty() && request.output.is_none() {
            return Ok(TokenCount::counted(counted));
        }
        let prompt = Request::new(&[]).with_tools(request.tools);
        let prompt = match request.output {
            Some(output) => prompt.with_output(output),
            None => prompt,
        };
        let tools = TokenCount::estimate(&prompt).tokens;
        Ok(TokenCount::estimated(counted.saturating_add(tools)))
    }

    fn info(&self) -> ModelInfo {
        let supports = Supports::new().with_tools(true).with_images(true);
        // The table knows models by their own names: `us.anthropic.claude-...-v1:0` is read
        // as `claude-...`.
        let known = crate::models::info(ID, bare_model(&self.model), supports);
        let mut info = ModelInfo::new(ID, &self.model).with_supports(known.supports);
        if let Some(window) = known.context_window {
            info = info.with_context_window(window);
        }
        // Claude costs on Bedrock what it costs at Anthropic; the table prices it so.
        let bare = bare_model(&self.model);
        let table = bare
            .starts_with("claude")
            .then(|| crate::models::info("anthropic", bare, Supports::new()).prices)
            .flatten();
        match self.prices.or(table) {
            Some(prices) => info.with_prices(prices),
            None => info,
        }
    }
}

/// The answer to CountTokens: `{"inputTokens": N}`.
fn read_count(path: &str, body: &[u8]) -> Result<u64> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct CountIn {
        #[serde(default, deserialize_with = "crate::wire::present")]
        input_tokens: Option<crate::wire::Count>,
    }
    let count: CountIn = crate::rest::json::answer(VENDOR, path, body)?;
    let tokens = crate::rest::json::required(VENDOR, count.input_tokens, "inputTokens", body)?;
    Ok(tokens.0)
}

/// A Bedrock model id without its ARN path, region prefix and maker:
/// `arn:...:inference-profile/us.anthropic.claude-3-7-sonnet-20250219-v1:0` is
/// `claude-3-7-sonnet-20250219-v1:0`.
fn bare_model(model: &str) -> &str {
    let id = model.rsplit('/').next().unwrap_or(model);
    // A cross-region profile's prefix (`us.`, `eu.`, `apac.`, `global.`) comes before the
    // maker.
    let regional = matches!(
        id.split('.').next(),
        Some("us" | "eu" | "apac" | "global" | "us-gov" | "jp" | "au" | "ca")
    );
    let mut rest = id;
    for _ in 0..if regional { 2 } else { 1 } {
        match rest.split_once('.') {
            Some((_, after)) if !after.is_empty() => rest = after,
            _ => break,
        }
    }
    rest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_ids_are_read_past_their_prefixes_and_encoded_in_one_segment() {
        assert_eq!(
            bare_model("us.anthropic.claude-3-7-sonnet-20250219-v1:0"),
            "claude-3-7-sonnet-20250219-v1:0"
        );
        assert_eq!(
            bare_model("anthropic.claude-3-5-haiku-20241022-v1:0"),
            "claude-3-5-haiku-20241022-v1:0"
        );
        assert_eq!(bare_model("amazon.nova-micro-v1:0"), "nova-micro-v1:0");
        assert_eq!(
            bare_model("arn:aws:bedrock:us-east-1:1:inference-profile/eu.meta.llama3-2-1b-v1:0"),
            "llama3-2-1b-v1:0"
        );
        assert_eq!(bare_model("plain"), "plain");
        let encoded = |id: &str| percent_encoding::utf8_percent_encode(id, MODEL_ID).to_string();
        assert_eq!(
            encoded("us.anthropic.claude-3-7-sonnet-20250219-v1:0"),
            "us.anthropic.claude-3-7-sonnet-20250219-v1%3A0"
        );
        assert_eq!(
            encoded("arn:aws:bedrock:us-east-1:123:application-inference-profile/a b"),
            "arn%3Aaws%3Abedrock%3Aus-east-1%3A123%3Aapplication-inference-profile%2Fa%20b"
        );
    }

    #[test]
    fn guardrails_are_sent_as_bedrock_names_them() {
        let guardrail = Guardrail::new("gr-1", "DRAFT").with_trace(GuardrailTrace::EnabledFull);
        assert_eq!(
            serde_json::to_value(&guardrail).unwrap(),
            serde_json::json!({"guardrailIdentifier": "gr-1", "guardrailVersion": "DRAFT",
                "trace": "enabled_full"})
        );
    }
}
