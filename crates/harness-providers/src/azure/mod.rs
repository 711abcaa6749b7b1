//! Azure OpenAI: a connection to one Azure OpenAI (or Foundry) resource that hands out
//! models of the two wire formats it serves, Chat Completions ([`OpenAi`]) and the Responses
//! API ([`OpenAiResponses`]), reached at Azure's URLs with Azure's authentication. The
//! models are the same types as OpenAI's own, built through their crate-private
//! constructors, so every answer is read by the same parser.

use std::fmt;

use harness_core::{Error, Result};

use crate::connection::{Connection, connection_setters};
use crate::openai::env_nonempty;
use crate::rest::json::Vendor;
use crate::rest::{BearerToken, HttpConfig, TokenSource};
use crate::{OpenAi, OpenAiBuilder, OpenAiResponses, OpenAiResponsesBuilder};

#[cfg(feature = "azure-identity")]
mod identity;
#[cfg(feature = "azure-identity")]
pub use identity::EntraId;

/// The provider id of the Chat Completions models, as errors, [`Llm::info`] and spec
/// strings (`azure:<deployment>`) name it.
///
/// [`Llm::info`]: harness_core::Llm::info
pub(crate) const CHAT_ID: &str = "azure";
/// The provider id of the Responses models (`azure-responses:<deployment>`).
pub(crate) const RESPONSES_ID: &str = "azure-responses";
/// The service's name, as messages say it.
const NAME: &str = "Azure OpenAI";

/// The variable the endpoint is read from.
pub(crate) const ENDPOINT_VAR: &str = "AZURE_OPENAI_ENDPOINT";
/// The variable the API key is read from.
pub(crate) const KEY_VAR: &str = "AZURE_OPENAI_API_KEY";
/// The variable the API version is read from (the one the OpenAI SDKs read for Azure).
pub(crate) const VERSION_VAR: &str = "OPENAI_API_VERSION";

/// The variable naming the deployment [`model_from_env`](crate::model_from_env) uses.
const DEPLOYMENT_VAR: &str = "AZURE_OPENAI_DEPLOYMENT";
/// The deployment [`model_from_env`](crate::model_from_env) uses when none is named.
const DEFAULT_DEPLOYMENT: &str = "gpt-4o-mini";

/// The deployment [`model_from_env`](crate::model_from_env) should use when the environment
/// configures Azure OpenAI: the endpoint, and a key (or, with `azure-identity`, Entra ID).
pub(crate) fn configured_deployment() -> Option<String> {
    env_nonempty(ENDPOINT_VAR)?;
    if !cfg!(feature = "azure-identity") {
        env_nonempty(KEY_VAR)?;
    }
    Some(env_nonempty(DEPLOYMENT_VAR).unwrap_or_else(|| DEFAULT_DEPLOYMENT.to_owned()))
}

/// The API version meaning the v1 API, the default.
const V1: &str = "v1";

/// A connection to an Azure OpenAI resource, handing out models of the wire formats it
/// serves: [`chat`](Self::chat) gives an [`OpenAi`] (Chat Completions),
/// [`responses`](Self::responses) an [`OpenAiResponses`] (the Responses API). Each is the
/// same provider as OpenAI's own, reached at the resource's URLs; its errors, `info()` and
/// traces name the service `azure` (Chat Completions) or `azure-responses` (`gen_ai.provider.name`
/// `azure.ai.openai` for both).
///
/// - **Endpoint**: the resource's, `https://<resource>.openai.azure.com` (a Foundry
///   resource's `https://<resource>.services.ai.azure.com` or an API Management gateway's
///   URL alike); a v1 base URL ending in `/openai/v1` is read as its resource's endpoint.
///   From [`AzureOpenAiBuilder::endpoint`], else `AZURE_OPENAI_ENDPOINT`.
/// - **API version** ([`AzureOpenAiBuilder::api_version`], else `OPENAI_API_VERSION`, else
///   `v1`): `v1` is the v1 API, `{endpoint}/openai/v1/chat/completions` and
///   `{endpoint}/openai/v1/responses` with no version sent; `preview` (or `latest`) the v1 API
///   with `?api-version=preview`; a dated version (`2024-10-21`, `2025-04-01-preview`) the
///   dated API: `{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=...`
///   and `{endpoint}/openai/responses?api-version=...` (which needs `2025-03-01-preview` or
///   later).
/// - **Authentication**: an API key (`api-key` header; [`AzureOpenAiBuilder::api_key`], else
///   `AZURE_OPENAI_API_KEY`) or a Microsoft Entra ID bearer token (`Authorization: Bearer`)
///   from a [`TokenSource`] you give ([`AzureOpenAiBuilder::token_source`]) for the scope
///   `https://cognitiveservices.azure.com/.default`. With the feature `azure-identity` and
///   no key, tokens come from Microsoft's identity crate through `EntraId`, which picks the
///   standard credential the environment configures.
/// - **Models**: what a request names is the *deployment*, the name you gave a model when
///   you deployed it; it goes in the body's `model` (and, on the dated API, the URL).
///   `info()` looks the deployment's name up in the table of known models, so a deployment
///   named after its model (`gpt-4o-mini`) reports its context window.
///
/// Azure's content filters are read as what they are: an answer whose
/// `content_filter_results` (or the request's `prompt_filter_results`) say `filtered`, or
/// that ends with `finish_reason: "content_filter"`, finishes with
/// [`FinishReason::Filtered`](harness_core::FinishReason::Filtered); a prompt the filter
/// refused is a `400` [`Provider`](harness_core::ErrorKind::Provider) error whose
/// [`error_type`](harness_core::ProviderError::error_type) is `content_filter` and whose
/// body keeps the filter's verdict (`innererror`). A `429`'s `retry-after-ms` (or
/// `Retry-After`) is waited before the retry.
///
/// ```no_run
/// use harness_providers::AzureOpenAi;
///
/// let azure = AzureOpenAi::builder()
///     .endpoint("https://my-resource.openai.azure.com")
///     .api_key("...")
///     .build()?;
/// let chat = azure.chat("gpt-4o-mini")?;
/// let responses = azure.responses("my-gpt-5-deployment")?;
/// # Ok::<(), harness_core::Error>(())
/// ```
#[derive(Clone)]
pub struct AzureOpenAi {
    /// The resource's endpoint, without a trailing slash.
    endpoint: String,
    api: Api,
    /// The base configuration every model gets: the endpoint, the authentication, the limits.
    config: HttpConfig,
}

/// Which of Azure's APIs the paths are those of.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Api {
    /// The v1 API, with the `api-version` query when one is given (`preview`).
    V1(Option<String>),
    /// The dated API of this version.
    Dated(String),
}

impl fmt::Debug for AzureOpenAi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The configuration holds the key: left out.
        f.debug_struct("AzureOpenAi")
            .field("endpoint", &self.endpoint)
            .field("api", &self.api)
            .finish_non_exhaustive()
    }
}

/// Builds an [`AzureOpenAi`].
#[derive(Debug, Clone)]
#[must_use = "call build() to get the connection"]
pub struct AzureOpenAiBuilder {
    endpoint: Option<String>,
    api_version: Option<String>,
    tokens: Option<BearerToken>,
    connection: Connection,
}

impl AzureOpenAi {
    /// The resource `AZURE_OPENAI_ENDPOINT` names, with the API version from
    /// `OPENAI_API_VERSION` (else `v1`) and the key from `AZURE_OPENAI_API_KEY` (else, with the
    /// feature `azure-identity`, Entra ID tokens from the environment's credential).
    ///
    /// # Errors
    /// As [`AzureOpenAiBuilder::build`].
    pub fn new() -> Result<Self> {
        Self::builder().build()
    }

    /// A builder.
    pub fn builder() -> AzureOpenAiBuilder {
        AzureOpenAiBuilder {
            endpoint: None,
            api_version: None,
            tokens: None,
            connection: Connection::default(),
        }
    }

    /// The resource's endpoint (`https://<resource>.openai.azure.com`).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The API version: `v1`, `preview`, or a dated one.
    pub fn api_version(&self) -> &str {
        match &self.api {
            Api::V1(None) => V1,
            Api::V1(Some(version)) | Api::Dated(version) => version,
        }
    }

    /// A Chat Completions model: a deployment's name, or an [`OpenAiBuilder`] whose model is
    /// the deployment and whose settings (default settings, structured output, stream usage)
    /// the model keeps; its connection settings are not used, the connection's are.
    ///
    /// ```no_run
    /// use harness_core::ModelSettings;
    /// use harness_providers::{AzureOpenAi, OpenAi};
    ///
    /// let azure = AzureOpenAi::new()?;
    /// let plain = azure.chat("gpt-4o-mini")?;
    /// let tuned = azure.chat(
    ///     OpenAi::builder("gpt-4o-mini").settings(ModelSettings::new().with_temperature(0.2)),
    /// )?;
    /// # Ok::<(), harness_core::Error>(())
    /// ```
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error for a blank
    /// deployment name.
    pub fn chat(&self, model: impl Into<OpenAiBuilder>) -> Result<OpenAi> {
        let builder = model.into();
        let path = self.path(Wire::Chat, builder.model_name())?;
        builder.build_with(self.config_for(CHAT_ID), path, Vendor::new(CHAT_ID, NAME))
    }

    /// A Responses API model: a deployment's name, or an [`OpenAiResponsesBuilder`] whose
    /// model is the deployment and whose settings (default settings, `store`, structured
    /// output) the model keeps; its connection settings are not used, the connection's are.
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error for a blank
    /// deployment name.
    pub fn responses(&self, model: impl Into<OpenAiResponsesBuilder>) -> Result<OpenAiResponses> {
        let builder = model.into();
        let path = self.path(Wire::Responses, builder.model_name())?;
        builder.build_with(
            self.config_for(RESPONSES_ID),
            path,
            Vendor::new(RESPONSES_ID, NAME),
        )
    }

    /// The base configuration under the provider id `id`.
    fn config_for(&self, id: &str) -> HttpConfig {
        let mut config = self.config.clone();
        id.clone_into(&mut config.provider);
        config
    }

    /// Where a request of `wire` to `deployment` goes, under the endpoint.
    fn path(&self, wire: Wire, deployment: &str) -> Result<String> {
        if deployment.trim().is_empty() {
            return Err(Error::configuration(
                "an Azure OpenAI model needs its deployment's name, got an empty one",
            ));
        }
        let segments: &[&str] = match (&self.api, wire) {
            (Api::V1(_), Wire::Chat) => &["openai", "v1", "chat", "completions"],
            (Api::V1(_), Wire::Responses) => &["openai", "v1", "responses"],
            (Api::Dated(_), Wire::Chat) => {
                &["openai", "deployments", deployment, "chat", "completions"]
            }
            (Api::Dated(_), Wire::Responses) => &["openai", "responses"],
        };
        let version = match &self.api {
            Api::V1(version) => version.as_deref(),
            Api::Dated(version) => Some(version.as_str()),
        };
        Ok(path_and_query(segments, version))
    }
}

/// The wire format a model speaks.
#[derive(Debug, Clone, Copy)]
enum Wire {
    Chat,
    Responses,
}

/// `/seg/ments?api-version=...`, each segment and the version percent-encoded.
fn path_and_query(segments: &[&str], version: Option<&str>) -> String {
    // A URL under a placeholder host does the encoding: a deployment's name may hold any
    // character, and must stay one path segment.
    let Ok(mut url) = reqwest::Url::parse("http://azure.invalid/") else {
        return String::new();
    };
    if let Ok(mut path) = url.path_segments_mut() {
        path.clear().extend(segments);
    }
    if let Some(version) = version {
        url.query_pairs_mut().append_pair("api-version", version);
    }
    match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    }
}

impl AzureOpenAiBuilder {
    /// The resource's endpoint, `https://<resource>.openai.azure.com` (or a Foundry
    /// resource's, or a gateway's); a v1 base URL (`.../openai/v1`) is read as its endpoint.
    /// Without one, `AZURE_OPENAI_ENDPOINT` is read.
    pub fn endpoint(mut self, endpoint: impl Into<String>) -> Self {
        self.endpoint = Some(endpoint.into());
        self
    }

    /// The API version: `v1` (the default: the v1 API, no version sent), `preview` (the v1
    /// API's preview features), or a dated version such as `2024-10-21` or
    /// `2025-04-01-preview` (the dated API, deployments in the URL). Without one,
    /// `OPENAI_API_VERSION` is read.
    pub fn api_version(mut self, version: impl Into<String>) -> Self {
        self.api_version = Some(version.into());
        self
    }

    /// The resource's API key, sent as the `api-key` header. Without one (and without a
    /// [`token_source`](Self::token_source)), `AZURE_OPENAI_API_KEY` is read.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.connection.api_key = Some(key.into());
        self
    }

    /// Microsoft Entra ID tokens for the scope `https://cognitiveservices.azure.com/.default`,
    /// sent as `Authorization: Bearer <token>` and asked for on every attempt (the source
    /// caches and refreshes them). Given, no key is read or sent.
    ///
    /// ```no_run
    /// use harness_providers::AzureOpenAi;
    /// use harness_providers::rest::TokenSource;
    ///
    /// #[derive(Debug)]
    /// struct MyTokens;
    ///
    /// #[async_trait::async_trait]
    /// impl TokenSource for MyTokens {
    ///     async fn token(&self) -> harness_core::Result<String> {
    ///         // Ask your identity library for a token of scope
    ///         // https://cognitiveservices.azure.com/.default.
    ///         Ok("eyJ0eXAi...".to_owned())
    ///     }
    /// }
    ///
    /// let azure = AzureOpenAi::builder()
    ///     .endpoint("https://my-resource.openai.azure.com")
    ///     .token_source(MyTokens)
    ///     .build()?;
    /// # Ok::<(), harness_core::Error>(())
    /// ```
    pub fn token_source(mut self, source: impl TokenSource + 'static) -> Self {
        self.tokens = Some(BearerToken::new(source));
        self
    }

    connection_setters!(limits);

    /// The connection.
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error for no endpoint, an
    /// endpoint that is not an http(s) URL, both a key and a token source given, neither a
    /// key nor a token source (without the feature `azure-identity`), a key that is not a
    /// valid header, or `max_concurrency` 0; with `azure-identity` and no key, what
    /// `EntraId::from_env` reports.
    pub fn build(self) -> Result<AzureOpenAi> {
        let given = self.endpoint.clone().filter(|e| !e.trim().is_empty());
        let Some(endpoint) = given.or_else(|| env_nonempty(ENDPOINT_VAR)) else {
            return Err(Error::configuration(format!(
                "no Azure OpenAI endpoint: set {ENDPOINT_VAR} (https://<resource>.openai.azure.com) \
                 or call AzureOpenAiBuilder::endpoint"
            )));
        };
        let endpoint = normalize(&endpoint)?;
        let version = self
            .api_version
            .clone()
            .filter(|v| !v.trim().is_empty())
            .or_else(|| env_nonempty(VERSION_VAR))
            .map(|v| v.trim().to_owned());
        let api = match version.as_deref() {
            None | Some(V1) => Api::V1(None),
            Some(preview @ ("preview" | "latest")) => Api::V1(Some(preview.to_owned())),
            Some(dated) => Api::Dated(dated.to_owned()),
        };
        let mut config = self.connection.config(CHAT_ID, &endpoint, None);
        match (self.tokens, self.connection.api_key.as_deref()) {
            (Some(_), Some(_)) => {
                return Err(Error::configuration(
                    "give Azure OpenAI either an API key or a token source, not both",
                ));
            }
            (Some(tokens), None) => config.auth = Some(std::sync::Arc::new(tokens)),
            (None, _) => match self.connection.key(&[KEY_VAR]) {
                Some(key) => config.headers.push(("api-key".into(), key)),
                None => config.auth = Some(std::sync::Arc::new(default_tokens()?)),
            },
        }
        // Checked now, so that a bad key or limit fails here rather than at the first model.
        check(&config)?;
        Ok(AzureOpenAi {
            endpoint,
            api,
            config,
        })
    }
}

/// What [`HttpClient::new`](crate::rest::HttpClient::new) would refuse in `config`, found
/// without building a client: the connection hands each model a client of its own.
fn check(config: &HttpConfig) -> Result<()> {
    if config.max_concurrency == Some(0) {
        return Err(Error::configuration(
            "max_concurrency must be at least 1 when set, got 0",
        ));
    }
    for (name, value) in &config.headers {
        if reqwest::header::HeaderValue::from_str(value).is_err() {
            return Err(Error::configuration(format!(
                "invalid value for header {name}; check the API key for stray characters"
            )));
        }
    }
    Ok(())
}

/// Tokens from the environment's credential (feature `azure-identity`).
#[cfg(feature = "azure-identity")]
fn default_tokens() -> Result<BearerToken> {
    Ok(BearerToken::new(EntraId::from_env()?))
}

/// Without the feature `azure-identity` there is no credential to fall back to.
#[cfg(not(feature = "azure-identity"))]
fn default_tokens() -> Result<BearerToken> {
    Err(Error::configuration(format!(
        "no Azure OpenAI credentials: set {KEY_VAR}, call AzureOpenAiBuilder::api_key, or give \
         Microsoft Entra ID tokens with AzureOpenAiBuilder::token_source (the feature \
         azure-identity adds EntraId, the standard credentials)"
    )))
}

/// The resource's endpoint from what was given: trimmed, without a trailing slash, and
/// without the `/openai/v1` (or `/openai`) of a base URL.
fn normalize(given: &str) -> Result<String> {
    let mut endpoint = given.trim().trim_end_matches('/');
    for suffix in ["/openai/v1", "/openai"] {
        if let Some(stripped) = endpoint.strip_suffix(suffix) {
            endpoint = stripped;
            break;
        }
    }
    match reqwest::Url::parse(endpoint) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => {
            Ok(endpoint.to_owned())
        }
        _ => Err(Error::configuration(format!(
            "the Azure OpenAI endpoint {given:?} is not an http(s) URL; give the resource's, \
             like https://my-resource.openai.azure.com"
        ))),
    }
}

impl From<&str> for OpenAiBuilder {
    /// [`OpenAi::builder`] of `model`.
    fn from(model: &str) -> Self {
        OpenAi::builder(model)
    }
}

impl From<String> for OpenAiBuilder {
    /// [`OpenAi::builder`] of `model`.
    fn from(model: String) -> Self {
        OpenAi::builder(model)
    }
}

impl From<&str> for OpenAiResponsesBuilder {
    /// [`OpenAiResponses::builder`] of `model`.
    fn from(model: &str) -> Self {
        OpenAiResponses::builder(model)
    }
}

impl From<String> for OpenAiResponsesBuilder {
    /// [`OpenAiResponses::builder`] of `model`.
    fn from(model: String) -> Self {
        OpenAiResponses::builder(model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn azure(version: &str) -> AzureOpenAi {
        AzureOpenAi::builder()
            .endpoint("https://res.openai.azure.com/")
            .api_key("k")
            .api_version(version)
            .build()
            .unwrap()
    }

    #[test]
    fn each_api_version_gives_its_paths() {
        let v1 = azure("v1");
        assert_eq!(
            v1.path(Wire::Chat, "dep").unwrap(),
            "/openai/v1/chat/completions"
        );
        assert_eq!(
            v1.path(Wire::Responses, "dep").unwrap(),
            "/openai/v1/responses"
        );
        let preview = azure("preview");
        assert_eq!(
            preview.path(Wire::Responses, "dep").unwrap(),
            "/openai/v1/responses?api-version=preview"
        );
        let dated = azure("2024-10-21");
        assert_eq!(
            dated.path(Wire::Chat, "gpt-4o-mini").unwrap(),
            "/openai/deployments/gpt-4o-mini/chat/completions?api-version=2024-10-21"
        );
        assert_eq!(
            dated.path(Wire::Responses, "gpt-4o-mini").unwrap(),
            "/openai/responses?api-version=2024-10-21"
        );
        // A name that is not a plain segment stays one segment.
        assert_eq!(
            dated.path(Wire::Chat, "a/b c?").unwrap(),
            "/openai/deployments/a%2Fb%20c%3F/chat/completions?api-version=2024-10-21"
        );
        assert!(dated.path(Wire::Chat, " ").is_err());
        assert_eq!(dated.api_version(), "2024-10-21");
        assert_eq!(v1.api_version(), "v1");
    }

    #[test]
    fn endpoints_are_read_from_each_form_given() {
        for given in [
            "https://res.openai.azure.com",
            "https://res.openai.azure.com/",
            " https://res.openai.azure.com/openai/v1/ ",
            "https://res.openai.azure.com/openai",
        ] {
            assert_eq!(
                normalize(given).unwrap(),
                "https://res.openai.azure.com",
                "{given}"
            );
        }
        assert_eq!(
            normalize("https://gw.azure-api.net/team-a").unwrap(),
            "https://gw.azure-api.net/team-a"
        );
        for bad in ["res.openai.azure.com", "ftp://x", "https://"] {
            let err = normalize(bad).unwrap_err().to_string();
            assert!(err.contains("not an http(s) URL"), "{bad}: {err}");
        }
    }

    #[test]
    fn a_key_and_a_token_source_together_are_refused() {
        let err = AzureOpenAi::builder()
            .endpoint("https://res.openai.azure.com")
            .api_key("k")
            .token_source(NoTokens)
            .build()
            .unwrap_err();
        assert!(err.to_string().contains("not both"), "{err}");
    }

    #[derive(Debug)]
    struct NoTokens;

    #[async_trait::async_trait]
    impl TokenSource for NoTokens {
        async fn token(&self) -> Result<String> {
            Err(Error::configuration("none"))
        }
    }
}
