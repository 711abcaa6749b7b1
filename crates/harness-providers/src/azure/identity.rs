//! Microsoft Entra ID tokens from Microsoft's identity crate (`azure_identity`), as a
//! [`TokenSource`]: the credential the environment configures, or one you build, each
//! caching its token and refreshing it before it expires as the crate does. The crate's HTTP
//! requests (to Entra ID, to a managed identity's endpoint) go through this crate's own
//! reqwest client, so no second HTTP stack is compiled.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use azure_core::credentials::{Secret, TokenCredential};
use azure_core::http::headers::{HeaderName, HeaderValue, Headers};
use azure_core::http::{AsyncRawResponse, Body, ClientOptions, Request, StatusCode, Transport};
use azure_identity::{
    AzureCliCredential, AzureDeveloperCliCredential, ClientAssertionCredentialOptions,
    ClientSecretCredential, ClientSecretCredentialOptions, DeveloperToolsCredential,
    ManagedIdentityCredential, ManagedIdentityCredentialOptions, UserAssignedId,
    WorkloadIdentityCredential, WorkloadIdentityCredentialOptions,
};
use futures_util::StreamExt as _;
use harness_core::{Error, ProviderError, ProviderErrorKind, Result};

use crate::rest::TokenSource;

/// The scope Azure OpenAI's tokens are for.
const COGNITIVE_SERVICES: &str = "https://cognitiveservices.azure.com/.default";

/// The provider id a failed token request's error carries.
const PROVIDER: &str = "azure";

/// The variable that names the credential to use (`dev`, `prod`, or a credential's name), as
/// the Azure SDKs of other languages read it.
const CHOICE_VAR: &str = "AZURE_TOKEN_CREDENTIALS";

/// The most a token endpoint's answer may hold.
const MAX_BODY: usize = 1 << 20;

/// Microsoft Entra ID bearer tokens from Microsoft's identity crate, `azure_identity`, for
/// [`AzureOpenAiBuilder::token_source`](crate::AzureOpenAiBuilder::token_source) (feature
/// `azure-identity`). The credential caches its token and refreshes it before it expires;
/// every request asks it again, so a retry never sends an expired token.
///
/// [`from_env`](Self::from_env) takes the credential the environment configures (what the
/// Azure SDKs' default credential chain finds, decided once, without probing):
///
/// 1. `AZURE_TOKEN_CREDENTIALS`, when set, names the credential: `dev` (the Azure CLI, then
///    the Azure Developer CLI), `prod` (the first of the three below that is configured,
///    else the managed identity), or one of `EnvironmentCredential`,
///    `WorkloadIdentityCredential`, `ManagedIdentityCredential`, `AzureCliCredential`,
///    `AzureDeveloperCliCredential`;
/// 2. else a service principal's secret: `AZURE_TENANT_ID`, `AZURE_CLIENT_ID`,
///    `AZURE_CLIENT_SECRET`;
/// 3. else workload identity (Kubernetes): `AZURE_FEDERATED_TOKEN_FILE` with
///    `AZURE_TENANT_ID` and `AZURE_CLIENT_ID`;
/// 4. else a managed identity whose host says so (`IDENTITY_ENDPOINT`, as App Service,
///    Functions and Container Apps set it; `MSI_ENDPOINT`), user-assigned when
///    `AZURE_CLIENT_ID` is set;
/// 5. else the developer tools: the Azure CLI (`az login`), then the Azure Developer CLI.
///
/// A virtual machine's managed identity (IMDS) has no variable that announces it: set
/// `AZURE_TOKEN_CREDENTIALS=ManagedIdentityCredential` (or `prod`) there.
///
/// ```no_run
/// use harness_providers::{AzureOpenAi, EntraId};
///
/// let azure = AzureOpenAi::builder()
///     .endpoint("https://my-resource.openai.azure.com")
///     .token_source(EntraId::from_env()?)
///     .build()?;
/// # Ok::<(), harness_core::Error>(())
/// ```
///
/// Any other credential of the crate goes through [`new`](Self::new); build it with
/// [`client_options`](Self::client_options), so its requests use this crate's HTTP client.
#[derive(Clone)]
pub struct EntraId {
    credential: Arc<dyn TokenCredential>,
    scope: String,
    /// Which credential, for debug output.
    kind: &'static str,
}

impl fmt::Debug for EntraId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EntraId")
            .field("credential", &self.kind)
            .field("scope", &self.scope)
            .finish()
    }
}

impl EntraId {
    /// Tokens from `credential`, any of `azure_identity`'s (or a `TokenCredential` of your
    /// own), for Azure OpenAI's scope.
    pub fn new(credential: Arc<dyn TokenCredential>) -> Self {
        Self {
            credential,
            scope: COGNITIVE_SERVICES.to_owned(),
            kind: "TokenCredential",
        }
    }

    /// Tokens from the credential the environment configures (see the type's documentation).
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error for an
    /// `AZURE_TOKEN_CREDENTIALS` this does not know, or a credential whose settings are
    /// missing or malformed (the crate's words kept).
    pub fn from_env() -> Result<Self> {
        let given = env(CHOICE_VAR);
        let choice = given.as_deref().map(str::to_ascii_lowercase);
        let (kind, credential) = match choice.as_deref() {
            None => Self::configured().unwrap_or_else(developer_tools),
            Some("dev") => developer_tools(),
            Some("prod") => Self::configured().unwrap_or_else(managed_identity),
            Some("environmentcredential") => client_secret(),
            Some("workloadidentitycredential") => workload_identity(),
            Some("managedidentitycredential") => managed_identity(),
            Some("azureclicredential") => (
                "AzureCliCredential",
                AzureCliCredential::new(None).map(|c| c as Arc<dyn TokenCredential>),
            ),
            Some("azuredeveloperclicredential") => (
                "AzureDeveloperCliCredential",
                AzureDeveloperCliCredential::new(None).map(|c| c as Arc<dyn TokenCredential>),
            ),
            Some(_) => {
                let other = given.unwrap_or_default();
                return Err(Error::configuration(format!(
                    "{CHOICE_VAR}={other:?} names no credential this library knows; use dev, \
                     prod, EnvironmentCredential, WorkloadIdentityCredential, \
                     ManagedIdentityCredential, AzureCliCredential or \
                     AzureDeveloperCliCredential"
                )));
            }
        };
        let credential = credential.map_err(|e| {
            Error::configuration(format!(
                "cannot set up the {kind} for Microsoft Entra ID: {}",
                chain(&e)
            ))
        })?;
        Ok(Self {
            credential,
            scope: COGNITIVE_SERVICES.to_owned(),
            kind,
        })
    }

    /// The first of a service principal's secret, workload identity and a managed identity
    /// that the environment configures.
    fn configured() -> Option<(&'static str, azure_core::Result<Arc<dyn TokenCredential>>)> {
        let secret = ["AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET"];
        if secret.iter().all(|var| env(var).is_some()) {
            return Some(client_secret());
        }
        if env("AZURE_FEDERATED_TOKEN_FILE").is_some() {
            return Some(workload_identity());
        }
        if env("IDENTITY_ENDPOINT").is_some() || env("MSI_ENDPOINT").is_some() {
            return Some(managed_identity());
        }
        None
    }

    /// Tokens for `scope` instead of Azure OpenAI's
    /// (`https://cognitiveservices.azure.com/.default`).
    #[must_use]
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = scope.into();
        self
    }

    /// Client options whose transport is this crate's HTTP client: give them to a credential
    /// you build for [`new`](Self::new), so that its requests need no HTTP stack of the
    /// identity crate's own.
    pub fn client_options() -> ClientOptions {
        ClientOptions {
            transport: Some(Transport::new(Arc::new(Http::new()))),
            ..ClientOptions::default()
        }
    }
}

#[async_trait::async_trait]
impl TokenSource for EntraId {
    async fn token(&self) -> Result<String> {
        let scopes = [self.scope.as_str()];
        match self.credential.get_token(&scopes, None).await {
            Ok(token) => Ok(token.token.secret().to_owned()),
            Err(e) => Err(failure(self.kind, &e)),
        }
    }
}

/// A variable's value, unless unset or blank.
fn env(var: &str) -> Option<String> {
    std::env::var(var)
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

type Made = (&'static str, azure_core::Result<Arc<dyn TokenCredential>>);

fn developer_tools() -> Made {
    (
        "DeveloperToolsCredential",
        DeveloperToolsCredential::new(None).map(|c| c as Arc<dyn TokenCredential>),
    )
}

fn managed_identity() -> Made {
    let options = ManagedIdentityCredentialOptions {
        user_assigned_id: env("AZURE_CLIENT_ID").map(UserAssignedId::ClientId),
        client_options: EntraId::client_options(),
    };
    (
        "ManagedIdentityCredential",
        ManagedIdentityCredential::new(Some(options)).map(|c| c as Arc<dyn TokenCredential>),
    )
}

fn workload_identity() -> Made {
    let options = WorkloadIdentityCredentialOptions {
        credential_options: ClientAssertionCredentialOptions {
            client_options: EntraId::client_options(),
        },
        ..WorkloadIdentityCredentialOptions::default()
    };
    (
        "WorkloadIdentityCredential",
        WorkloadIdentityCredential::new(Some(options)).map(|c| c as Arc<dyn TokenCredential>),
    )
}

fn client_secret() -> Made {
    let kind = "ClientSecretCredential";
    let (Some(tenant), Some(client), Some(secret)) = (
        env("AZURE_TENANT_ID"),
        env("AZURE_CLIENT_ID"),
        env("AZURE_CLIENT_SECRET"),
    ) else {
        let missing = azure_core::Error::with_message(
            azure_core::error::ErrorKind::Credential,
            "a service principal needs AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET",
        );
        return (kind, Err(missing));
    };
    let options = ClientSecretCredentialOptions {
        client_options: EntraId::client_options(),
    };
    let made = ClientSecretCredential::new(&tenant, client, Secret::new(secret), Some(options));
    (kind, made.map(|c| c as Arc<dyn TokenCredential>))
}

/// A failed token request as this library's error: a [`Provider`](harness_core::ErrorKind::Provider)
/// error when a token endpoint answered with a failure or could not be reached, a
/// [`Configuration`](harness_core::ErrorKind::Configuration) error otherwise (no credential
/// configured, a developer tool not installed or not signed in).
fn failure(kind: &str, error: &azure_core::Error) -> Error {
    let message = format!(
        "{kind} could not get a Microsoft Entra ID token: {}",
        chain(error)
    );
    let mut status = None;
    let mut unreachable = false;
    let mut at: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = at {
        if let Some(azure) = current.downcast_ref::<azure_core::Error>() {
            match azure.kind() {
                azure_core::error::ErrorKind::HttpResponse { status: s, .. } => {
                    status = Some(u16::from(*s));
                }
                azure_core::error::ErrorKind::Connection => unreachable = true,
                _ => {}
            }
        }
        at = current.source();
    }
    match (status, unreachable) {
        (Some(status), _) => ProviderError::new(PROVIDER, message)
            .with_status(status)
            .into(),
        (None, true) => ProviderError::new(PROVIDER, message)
            .with_kind(ProviderErrorKind::Connect)
            .into(),
        (None, false) => Error::configuration(message),
    }
}

/// An error and its causes, joined with `: `, each said once.
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = vec![error.to_string()];
    let mut at = error.source();
    while let Some(cause) = at {
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        at = cause.source();
    }
    parts.join(": ")
}

/// The identity crate's transport: this crate's reqwest client (its TLS, no redirects), an
/// answer read whole up to [`MAX_BODY`].
#[derive(Debug)]
struct Http(Option<reqwest::Client>);

impl Http {
    fn new() -> Self {
        let client = crate::rest::client_builder().ok().and_then(|builder| {
            builder
                .connect_timeout(Duration::from_secs(10))
                .timeout(Duration::from_secs(60))
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .ok()
        });
        Self(client)
    }
}

#[async_trait::async_trait]
impl azure_core::http::HttpClient for Http {
    async fn execute_request(&self, request: &Request) -> azure_core::Result<AsyncRawResponse> {
        use azure_core::error::ErrorKind;
        let Some(client) = &self.0 else {
            return Err(azure_core::Error::with_message(
                ErrorKind::Other,
                "the HTTP client for Microsoft Entra ID could not be built (TLS setup)",
            ));
        };
        let method = reqwest::Method::from_bytes(request.method().as_ref().as_bytes())
            .map_err(|e| azure_core::Error::with_error(ErrorKind::Other, e, "bad method"))?;
        let mut sent = client.request(method, request.url().as_str());
        for (name, value) in request.headers().iter() {
            sent = sent.header(name.as_str(), value.as_str());
        }
        sent = match request.body() {
            Body::Bytes(bytes) => sent.body(bytes.to_vec()),
            // Token requests are small forms; nothing here streams a body.
            Body::SeekableStream(_) => {
                return Err(azure_core::Error::with_message(
                    ErrorKind::Other,
                    "a streamed request body is not supported here",
                ));
            }
        };
        let response = sent.send().await.map_err(|e| {
            let kind = if e.is_connect() {
                ErrorKind::Connection
            } else {
                ErrorKind::Io
            };
            azure_core::Error::with_error(kind, e, "the token request failed")
        })?;
        let status = StatusCode::from(response.status().as_u16());
        let headers: HashMap<HeaderName, HeaderValue> = response
            .headers()
            .iter()
            .filter_map(|(name, value)| {
                let value = value.to_str().ok()?;
                Some((
                    HeaderName::from(name.as_str().to_owned()),
                    HeaderValue::from(value.to_owned()),
                ))
            })
            .collect();
        let mut body = Vec::new();
        let mut stream = response.bytes_stream();
        while let Some(piece) = stream.next().await {
            let piece = piece.map_err(|e| {
                azure_core::Error::with_error(ErrorKind::Io, e, "the token answer broke off")
            })?;
            if body.len() + piece.len() > MAX_BODY {
                return Err(azure_core::Error::with_message(
                    ErrorKind::Io,
                    format!("the token answer is larger than {MAX_BODY} bytes"),
                ));
            }
            body.extend_from_slice(&piece);
        }
        Ok(AsyncRawResponse::from_bytes(
            status,
            Headers::from(headers),
            body,
        ))
    }
}
