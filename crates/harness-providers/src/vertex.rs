//! Google Vertex AI: Gemini and Anthropic's Claude models in a Google Cloud project, reached
//! with Google Cloud credentials.

use std::sync::Arc;

use harness_core::{Error, ModelSettings, Result};

use crate::connection::{Connection, connection_setters};
use crate::openai::env_nonempty;
use crate::rest::json::Vendor;
use crate::rest::{BearerToken, HttpClient, TokenSource};
use crate::{Anthropic, Gemini};

/// The provider id errors and telemetry report, and that `vertex:...` model specs name.
const ID: &str = "vertex";
/// Who answers, as errors say it.
const VENDOR: Vendor<'static> = Vendor::new(ID, "Vertex AI");
/// The variables read for what the builder was not given, as Google's own SDKs read them.
const PROJECT_VAR: &str = "GOOGLE_CLOUD_PROJECT";
const LOCATION_VAR: &str = "GOOGLE_CLOUD_LOCATION";
const CREDENTIALS_VAR: &str = "GOOGLE_APPLICATION_CREDENTIALS";
/// The location used when none is given or set: the global endpoint, as Google's SDKs do.
const GLOBAL: &str = "global";
/// The `anthropic_version` Claude on Vertex AI takes in the body.
const ANTHROPIC_VERSION: &str = "vertex-2023-10-16";

/// A connection to Google Vertex AI: one project and location, its credentials and HTTP
/// settings, handing out models of the wire formats Vertex serves, each the provider type of
/// that format.
///
/// - [`gemini`](Self::gemini): a [`Gemini`] model (`generateContent`, its SSE stream).
/// - [`anthropic`](Self::anthropic): an [`Anthropic`] model, Claude through Vertex's
///   `rawPredict` and `streamRawPredict` (the Messages API, the model in the URL and
///   `anthropic_version: "vertex-2023-10-16"` in the body).
///
/// The models share the connection's HTTP client: its connections, its concurrency cap and
/// its credentials, whose token is refreshed before it expires. They report `vertex` as
/// their provider (`vertex:gemini-2.5-flash`), `gcp.vertex_ai` in the OpenTelemetry spans.
///
/// The project is the one given, else `GOOGLE_CLOUD_PROJECT`, else (with Application Default
/// Credentials) the `project_id` of the service-account file `GOOGLE_APPLICATION_CREDENTIALS`
/// names. The location is the one given, else `GOOGLE_CLOUD_LOCATION`, else `global`: the
/// global endpoint `aiplatform.googleapis.com`; `us` and `eu` are the multi-region endpoints
/// `aiplatform.{us,eu}.rep.googleapis.com`; any other location its regional endpoint
/// `{location}-aiplatform.googleapis.com`.
///
/// Credentials, the first that applies: a [`token_source`](VertexBuilder::token_source), an
/// [`api_key`](VertexBuilder::api_key) (Vertex AI express mode), else Google's Application
/// Default Credentials (crate feature `vertex`): the file `GOOGLE_APPLICATION_CREDENTIALS`
/// names, gcloud's `application-default login`, the metadata server on Google Cloud.
///
/// ```no_run
/// use harness_providers::Vertex;
///
/// let vertex = Vertex::builder().project("my-project").location("us-east5").build()?;
/// let gemini = vertex.gemini("gemini-2.5-flash")?;
/// let claude = vertex.anthropic("claude-sonnet-4@20250514")?;
/// # Ok::<(), harness_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Vertex {
    client: Arc<HttpClient>,
    project: Option<String>,
    location: String,
}

/// Builds a [`Vertex`] connection.
#[derive(Debug, Clone)]
#[must_use = "call build() to get the connection"]
pub struct VertexBuilder {
    connection: Connection,
    project: Option<String>,
    location: Option<String>,
    token: Option<BearerToken>,
}

impl Vertex {
    /// The connection the environment describes: project, location and credentials as
    /// [`Vertex`] says.
    ///
    /// # Errors
    /// As [`VertexBuilder::build`].
    pub fn new() -> Result<Self> {
        Self::builder().build()
    }

    /// A builder.
    pub fn builder() -> VertexBuilder {
        VertexBuilder {
            connection: Connection::default(),
            project: None,
            location: None,
            token: None,
        }
    }

    /// The Google Cloud project, `None` in express mode (an API key without a project).
    pub fn project(&self) -> Option<&str> {
        self.project.as_deref()
    }

    /// The location: `global`, a multi-region (`us`, `eu`) or a region (`us-central1`).
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The HTTP client the models share, with its configuration (base URL, timeouts,
    /// retries, concurrency).
    pub fn client(&self) -> &HttpClient {
        &self.client
    }

    /// Google's Gemini `model` (`gemini-2.5-flash`, `gemini-2.5-pro`), with default
    /// settings (an agent's and a run's settings apply over them).
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error for a model name that
    /// cannot go in a URL path (empty, or with `/`, `:`, `?`, `#` or spaces).
    pub fn gemini(&self, model: impl Into<String>) -> Result<Gemini> {
        let model = model_name(model.into())?;
        Ok(Gemini::served(
            Arc::clone(&self.client),
            VENDOR,
            model,
            ModelSettings::default(),
            &self.models("google"),
        ))
    }

    /// Anthropic's Claude `model` as Vertex names it (`claude-sonnet-4@20250514`,
    /// `claude-3-5-haiku@20241022`), with default settings. Claude needs a project: it is not
    /// served in express mode.
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error for a model name that
    /// cannot go in a URL path, or a connection in express mode.
    pub fn anthropic(&self, model: impl Into<String>) -> Result<Anthropic> {
        let model = model_name(model.into())?;
        if self.project.is_none() {
            return Err(Error::configuration(format!(
                "Claude on Vertex AI needs a project, and this connection has none (an API key \
                 without a project is express mode, which serves Gemini only); give \
                 VertexBuilder::project or set {PROJECT_VAR}"
            )));
        }
        let models = self.models("anthropic");
        let paths = (
            format!("{models}/{model}:rawPredict"),
            format!("{models}/{model}:streamRawPredict"),
        );
        Ok(Anthropic::served(
            Arc::clone(&self.client),
            VENDOR,
            model,
            paths,
            ANTHROPIC_VERSION,
        ))
    }

    /// Where `publisher`'s models are, relative to the base URL.
    fn models(&self, publisher: &str) -> String {
        match &self.project {
            Some(project) => format!(
                "/projects/{project}/locations/{}/publishers/{publisher}/models",
                self.location
            ),
            None => format!("/publishers/{publisher}/models"),
        }
    }
}

impl VertexBuilder {
    connection_setters!(
        @key "An API key: Vertex AI express mode, sent as `x-goog-api-key`. Without a \
              project, requests go to the global endpoint's `publishers/google/models` (Gemini \
              only), and `GOOGLE_CLOUD_PROJECT` and `GOOGLE_CLOUD_LOCATION` are not read; with \
              one, to the project's. No variable is read for the key: without one the \
              credentials are a token source or Application Default Credentials."
    );

    /// The Google Cloud project (its id, such as `my-project`); without one,
    /// `GOOGLE_CLOUD_PROJECT` is read, then the `project_id` of a service-account file named
    /// by `GOOGLE_APPLICATION_CREDENTIALS`.
    pub fn project(mut self, project: impl Into<String>) -> Self {
        self.project = Some(project.into());
        self
    }

    /// The location: `global` (the default), `us` or `eu` (multi-region), or a region such
    /// as `us-central1` or `europe-west4`; without one, `GOOGLE_CLOUD_LOCATION` is read.
    /// Models are served in some locations only (Claude in a few regions and `global`).
    pub fn location(mut self, location: impl Into<String>) -> Self {
        self.location = Some(location.into());
        self
    }

    /// Bearer tokens from `source` (an identity library's credential, a workload's token
    /// file), asked on every attempt, in place of Application Default Credentials: the
    /// source caches its token and refreshes it.
    pub fn token_source(mut self, source: impl TokenSource + 'static) -> Self {
        self.token = Some(BearerToken::new(source));
        self
    }

    /// The connection.
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error when no project is
    /// given or found (the message names what was read), for a project or location that is
    /// not an id (letters, digits and `-`), for both an API key and a token source,
    /// without credentials (no token source and no API key, and the crate's `vertex` feature,
    /// which brings Application Default Credentials, off), when
    /// `GOOGLE_APPLICATION_CREDENTIALS` names a file that does not exist, for
    /// `max_concurrency` 0, or a base URL that is not an http(s) URL.
    pub fn build(self) -> Result<Vertex> {
        let key = self
            .connection
            .api_key
            .clone()
            .filter(|k| !k.trim().is_empty());
        if key.is_some() && self.token.is_some() {
            return Err(Error::configuration(
                "Vertex AI takes an API key or a token source, not both",
            ));
        }
        // An API key without a project is express mode: the environment's project and
        // location are not the key's (as Google's SDKs decide).
        let express = key.is_some() && self.project.is_none();
        let location = match self.location {
            Some(location) => location,
            None if express => GLOBAL.to_owned(),
            None => env_nonempty(LOCATION_VAR).unwrap_or_else(|| GLOBAL.to_owned()),
        };
        check_id("location", &location, LOCATION_VAR)?;
        let project = match self.project {
            Some(project) => Some(project),
            None if express => None,
            None => Some(find_project(key.is_none() && self.token.is_none())?),
        };
        if let Some(project) = &project {
            check_id("project", project, PROJECT_VAR)?;
        }
        let mut config = self.connection.config(ID, &base_url(&location), None);
        match (key, self.token) {
            (Some(key), _) => config.headers.push(("x-goog-api-key".into(), key)),
            (None, Some(token)) => config.auth = Some(Arc::new(token)),
            (None, None) => config.auth = Some(default_credentials()?),
        }
        Ok(Vertex {
            client: Arc::new(HttpClient::new(config)?),
            project,
            location,
        })
    }
}

/// `https://{host}/v1` for a location.
fn base_url(location: &str) -> String {
    match location {
        GLOBAL => "https://aiplatform.googleapis.com/v1".to_owned(),
        "us" | "eu" => format!("https://aiplatform.{location}.rep.googleapis.com/v1"),
        region => format!("https://{region}-aiplatform.googleapis.com/v1"),
    }
}

/// A project or location that can go in a host name and a path: letters, digits and `-`
/// (a project also `.` and `:`, as a domain-scoped `example.com:my-project`).
fn check_id(what: &str, value: &str, var: &str) -> Result<()> {
    let project = what == "project";
    let fits = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || (project && matches!(c, '.' | ':')));
    if fits {
        return Ok(());
    }
    Err(Error::configuration(format!(
        "the Vertex AI {what} {value:?} (given, or from {var}) is not an id of letters, digits \
         and '-', such as {}",
        if project {
            "my-project"
        } else {
            "us-central1 or global"
        }
    )))
}

/// A model name that can go in a URL path.
fn model_name(model: String) -> Result<String> {
    let bad = model.is_empty()
        || model
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, '/' | ':' | '?' | '#' | '%'));
    if bad {
        return Err(Error::configuration(format!(
            "{model:?} is not a Vertex AI model name: give the bare name, such as \
             gemini-2.5-flash or claude-sonnet-4@20250514"
        )));
    }
    Ok(model)
}

/// The project from the environment; `adc`: Application Default Credentials are the
/// credentials, so their service-account file may name it.
fn find_project(adc: bool) -> Result<String> {
    if let Some(project) = env_nonempty(PROJECT_VAR) {
        return Ok(project);
    }
    let from_file = if adc && cfg!(feature = "vertex") {
        credentials_file_project()
    } else {
        None
    };
    from_file.ok_or_else(|| {
        let file = if adc && cfg!(feature = "vertex") {
            format!(", and the credentials file {CREDENTIALS_VAR} names (if any) has no project_id")
        } else {
            String::new()
        };
        Error::configuration(format!(
            "Vertex AI needs a Google Cloud project: none was given to VertexBuilder::project, \
             {PROJECT_VAR} is not set{file}. Give VertexBuilder::project or set {PROJECT_VAR}"
        ))
    })
}

/// The `project_id` of the credentials file `GOOGLE_APPLICATION_CREDENTIALS` names (a
/// service account's has one), as Google's SDKs find the project.
fn credentials_file_project() -> Option<String> {
    let path = std::env::var_os(CREDENTIALS_VAR)?;
    let text = std::fs::read(path).ok()?;
    let file: serde_json::Value = serde_json::from_slice(&text).ok()?;
    let project = file.get("project_id")?.as_str()?.trim();
    (!project.is_empty()).then(|| project.to_owned())
}

/// Application Default Credentials, or the error that says how to give credentials.
#[cfg(feature = "vertex")]
fn default_credentials() -> Result<Arc<dyn crate::rest::Authenticate>> {
    Ok(Arc::new(adc::Adc::new()?))
}

#[cfg(not(feature = "vertex"))]
fn default_credentials() -> Result<Arc<dyn crate::rest::Authenticate>> {
    Err(Error::configuration(
        "Vertex AI needs credentials: give VertexBuilder::token_source (or an API key for \
         express mode), or enable the deepharness-providers feature `vertex` (the facade's \
         `vertex`) for Google's Application Default Credentials \
         (GOOGLE_APPLICATION_CREDENTIALS, gcloud auth application-default login, the metadata \
         server)",
    ))
}

#[cfg(feature = "vertex")]
mod adc {
    //! Application Default Credentials through Google's `google-cloud-auth`.

    use std::sync::{Mutex, PoisonError};

    use google_cloud_auth::credentials::{Builder, CacheableResource, Credentials};
    use harness_core::{Error, ProviderError, Result};

    use super::{CREDENTIALS_VAR, ID};
    use crate::rest::{Authenticate, Outgoing};

    /// The credentials Google's SDKs find, built on first use.
    ///
    /// google-cloud-auth refreshes a token in a task of the runtime the credentials were
    /// built in, and waits on that task for a token: built again for each runtime they are
    /// used in, they never wait on a runtime that has ended.
    #[derive(Debug)]
    pub(super) struct Adc {
        built: Mutex<Option<(tokio::runtime::Id, Credentials)>>,
        /// Whether no credentials file was found, so the metadata server is the last resort:
        /// its failure means there are no credentials at all.
        metadata_only: bool,
    }

    impl Adc {
        pub(super) fn new() -> Result<Self> {
            let metadata_only = match std::env::var_os(CREDENTIALS_VAR) {
                Some(path) if !std::path::Path::new(&path).exists() => {
                    return Err(Error::configuration(format!(
                        "{CREDENTIALS_VAR} names {}, which does not exist; point it at a \
                         credentials file (a service-account key, or what gcloud auth \
                         application-default login writes) or unset it",
                        std::path::Path::new(&path).display()
                    )));
                }
                Some(_) => false,
                None => !well_known_file().is_some_and(|file| file.exists()),
            };
            Ok(Self {
                built: Mutex::new(None),
                metadata_only,
            })
        }

        /// The credentials for the current runtime.
        fn credentials(&self) -> Result<Credentials> {
            let runtime = tokio::runtime::Handle::try_current()
                .map_err(|e| Error::configuration(format!("Vertex AI credentials: {e}")))?
                .id();
            let mut built = self.built.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some((id, credentials)) = built.as_ref()
                && *id == runtime
            {
                return Ok(credentials.clone());
            }
            // Without its default features google-cloud-auth's HTTP client uses the
            // process's rustls provider; ring is the one this crate builds with. One already
            // installed is kept.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let credentials = Builder::default().build().map_err(|e| {
                Error::configuration(format!(
                    "Google Application Default Credentials cannot be loaded: {e}"
                ))
                .with_source(e)
            })?;
            *built = Some((runtime, credentials.clone()));
            Ok(credentials)
        }
    }

    #[async_trait::async_trait]
    impl Authenticate for Adc {
        async fn authenticate(&self, _request: &Outgoing<'_>) -> Result<Vec<(String, String)>> {
            let credentials = self.credentials()?;
            match credentials.headers(http::Extensions::new()).await {
                Ok(CacheableResource::New { data, .. }) => Ok(data
                    .iter()
                    .filter_map(|(name, value)| {
                        Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
                    })
                    .collect()),
                // Only asked for with the tag of a previous answer, which is never given.
                Ok(CacheableResource::NotModified) => Ok(Vec::new()),
                Err(e) if self.metadata_only => Err(Error::configuration(format!(
                    "no Google Cloud credentials: {CREDENTIALS_VAR} is not set, {} does not \
                     exist, and the metadata server (on Google Cloud) gave no token ({e}). Run \
                     `gcloud auth application-default login`, set {CREDENTIALS_VAR} to a \
                     credentials file, or give VertexBuilder::token_source",
                    well_known_file().map_or_else(
                        || "gcloud's application_default_credentials.json".to_owned(),
                        |file| file.display().to_string()
                    )
                ))
                .with_source(e)),
                Err(e) => Err(ProviderError::new(
                    ID,
                    format!("Google credentials gave no token for Vertex AI: {e}"),
                )
                .with_source(e)
                .into()),
            }
        }
    }

    /// Where `gcloud auth application-default login` writes its credentials.
    fn well_known_file() -> Option<std::path::PathBuf> {
        let (var, under) = if cfg!(windows) {
            ("APPDATA", "gcloud/application_default_credentials.json")
        } else {
            (
                "HOME",
                ".config/gcloud/application_default_credentials.json",
            )
        };
        std::env::var_os(var).map(|root| std::path::PathBuf::from(root).join(under))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_location_has_its_host() {
        assert_eq!(base_url("global"), "https://aiplatform.googleapis.com/v1");
        assert_eq!(
            base_url("us"),
            "https://aiplatform.us.rep.googleapis.com/v1"
        );
        assert_eq!(
            base_url("europe-west4"),
            "https://europe-west4-aiplatform.googleapis.com/v1"
        );
    }

    #[test]
    fn names_that_would_bend_a_url_are_refused() {
        assert!(model_name("claude-sonnet-4@20250514".into()).is_ok());
        for bad in [
            "",
            "google/gemini-2.5-pro",
            "a b",
            "m:x",
            "m?alt=sse",
            "m#x",
        ] {
            assert!(model_name(bad.into()).is_err(), "{bad:?}");
        }
        assert!(check_id("location", "us-central1", LOCATION_VAR).is_ok());
        assert!(check_id("project", "example.com:my-project", PROJECT_VAR).is_ok());
        let err = check_id("location", "evil.com/x", LOCATION_VAR).unwrap_err();
        assert!(err.to_string().contains("GOOGLE_CLOUD_LOCATION"), "{err}");
    }
}
