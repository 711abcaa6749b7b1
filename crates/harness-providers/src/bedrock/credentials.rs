//! AWS credentials for SigV4: given, or found by AWS's standard chain (`aws-config`):
//! environment variables, the shared config and credentials files (a profile, with its
//! `role_arn`, `credential_process`, an IAM Identity Center (SSO) session, ... as aws-config
//! reads them), web identity (EKS, GitHub
//! Actions), the ECS container endpoint and the EC2 instance role. Kept until five minutes
//! before they expire.
//!
//! aws-config talks to STS and the metadata endpoints through this crate's own HTTP client
//! (reqwest with the kit's TLS), so no second TLS stack is built.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use aws_config::default_provider::credentials::DefaultCredentialsChain;
use aws_config::provider_config::ProviderConfig;
use aws_credential_types::Credentials;
use aws_credential_types::provider::error::CredentialsError;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::body::SdkBody;
use harness_core::{Error, ProviderError, ProviderErrorKind, Result};

use super::ID;

/// How long before they expire credentials are fetched again.
const REFRESH_BEFORE: Duration = Duration::from_secs(300);

/// Where SigV4 credentials come from, with the last ones kept.
pub(crate) struct CredentialSource {
    provider: Provider,
    cached: Mutex<Option<Credentials>>,
    /// Held while credentials are fetched, so that concurrent requests fetch once.
    refreshing: tokio::sync::Mutex<()>,
}

enum Provider {
    /// The user's own provider.
    Given(SharedCredentialsProvider),
    /// AWS's standard chain, built on first use (building it is async).
    Chain {
        region: String,
        profile: Option<String>,
        built: tokio::sync::OnceCell<DefaultCredentialsChain>,
    },
}

impl fmt::Debug for CredentialSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.provider {
            Provider::Given(provider) => f
                .debug_tuple("CredentialSource::Given")
                .field(provider)
                .finish(),
            Provider::Chain { profile, .. } => f
                .debug_struct("CredentialSource::Chain")
                .field("profile", profile)
                .finish_non_exhaustive(),
        }
    }
}

impl CredentialSource {
    /// Credentials from `provider`.
    pub(crate) fn given(provider: SharedCredentialsProvider) -> Self {
        Self::new(Provider::Given(provider))
    }

    /// Credentials from AWS's standard chain, for `region` (where STS is asked) and the
    /// named profile (else `AWS_PROFILE`, else `default`).
    pub(crate) fn chain(region: &str, profile: Option<String>) -> Self {
        Self::new(Provider::Chain {
            region: region.to_owned(),
            profile,
            built: tokio::sync::OnceCell::new(),
        })
    }

    fn new(provider: Provider) -> Self {
        Self {
            provider,
            cached: Mutex::new(None),
            refreshing: tokio::sync::Mutex::new(()),
        }
    }

    /// Credentials valid for a while yet.
    pub(crate) async fn get(&self) -> Result<Credentials> {
        if let Some(fresh) = self.fresh() {
            return Ok(fresh);
        }
        let _refreshing = self.refreshing.lock().await;
        // Another request may have fetched them while this one waited.
        if let Some(fresh) = self.fresh() {
            return Ok(fresh);
        }
        let credentials = match &self.provider {
            Provider::Given(provider) => provider.provide_credentials().await,
            Provider::Chain {
                region,
                profile,
                built,
            } => {
                let chain = built
                    .get_or_init(|| build_chain(region, profile.as_deref()))
                    .await;
                chain.provide_credentials().await
            }
        }
        .map_err(|e| self.failure(&e))?;
        *self.cached.lock().unwrap_or_else(PoisonError::into_inner) = Some(credentials.clone());
        Ok(credentials)
    }

    /// The cached credentials, unless they expire within [`REFRESH_BEFORE`].
    fn fresh(&self) -> Option<Credentials> {
        let cached = self.cached.lock().unwrap_or_else(PoisonError::into_inner);
        let credentials = cached.as_ref()?;
        match credentials.expiry() {
            Some(expiry) if expiry <= SystemTime::now() + REFRESH_BEFORE => None,
            _ => Some(credentials.clone()),
        }
    }

    /// A credentials failure as this library's error: missing or misconfigured credentials
    /// are the user's to fix, a source that failed (STS, the metadata endpoint) the service's.
    fn failure(&self, error: &CredentialsError) -> Error {
        let detail = crate::rest::error_chain(error);
        match error {
            CredentialsError::CredentialsNotLoaded(_) => {
                let looked = match &self.provider {
                    Provider::Given(_) => {
                        "the credentials provider given to the builder".to_owned()
                    }
                    Provider::Chain { profile, .. } => format!(
                        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), \
                         the profile {} in the shared config and credentials files \
                         (AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE, ~/.aws/config, \
                         ~/.aws/credentials), web identity (AWS_WEB_IDENTITY_TOKEN_FILE with \
                         AWS_ROLE_ARN), the ECS container endpoint \
                         (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or _FULL_URI) and the EC2 \
                         instance metadata service",
                        profile.as_deref().map_or_else(
                            || "named by AWS_PROFILE (else `default`)".to_owned(),
                            |p| format!("`{p}`")
                        )
                    ),
                };
                Error::configuration(format!(
                    "no AWS credentials for Bedrock: looked at {looked}. Configure one of them, \
                     or give a Bedrock API key (AWS_BEARER_TOKEN_BEDROCK or api_key(..)). \
                     ({detail})"
                ))
            }
            CredentialsError::InvalidConfiguration(_) => Error::configuration(format!(
                "the AWS credentials for Bedrock are misconfigured: {detail}"
            )),
            CredentialsError::ProviderTimedOut(_) => ProviderError::new(
                ID,
                format!("fetching AWS credentials for Bedrock timed out: {detail}"),
            )
            .with_kind(ProviderErrorKind::Timeout)
            .into(),
            _ => ProviderError::new(
                ID,
                format!("fetching AWS credentials for Bedrock failed: {detail}"),
            )
            .with_kind(ProviderErrorKind::Other)
            .into(),
        }
    }
}

/// AWS's standard chain for `region`, its HTTP requests (STS, SSO, metadata endpoints) sent
/// by this crate's client.
async fn build_chain(region: &str, profile: Option<&str>) -> DefaultCredentialsChain {
    let mut builder = DefaultCredentialsChain::builder()
        .region(aws_config::Region::new(region.to_owned()))
        .configure(ProviderConfig::default().with_http_client(ReqwestHttp::default()));
    if let Some(profile) = profile {
        builder = builder.profile_name(profile);
    }
    builder.build().await
}

// aws-config's HTTP through reqwest ------------------------------------------------------------

/// aws-config's HTTP client: reqwest with the kit's TLS, built once.
#[derive(Debug, Default, Clone)]
struct ReqwestHttp {
    client: Arc<tokio::sync::OnceCell<std::result::Result<reqwest::Client, String>>>,
}

impl HttpClient for ReqwestHttp {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        _components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(Connector {
            http: self.clone(),
            connect_timeout: settings.connect_timeout(),
            read_timeout: settings.read_timeout(),
        })
    }
}

#[derive(Debug)]
struct Connector {
    http: ReqwestHttp,
    connect_timeout: Option<Duration>,
    read_timeout: Option<Duration>,
}

impl HttpConnector for Connector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let http = self.http.clone();
        let (connect, read) = (self.connect_timeout, self.read_timeout);
        HttpConnectorFuture::new(async move {
            let client = http
                .client
                .get_or_init(|| async move {
                    let mut builder = crate::rest::client_builder().map_err(|e| e.to_string())?;
                    if let Some(connect) = connect {
                        builder = builder.connect_timeout(connect);
                    }
                    builder.build().map_err(|e| e.to_string())
                })
                .await
                .as_ref()
                .map_err(|e| ConnectorError::other(e.clone().into(), None))?;
            send(client, request, read).await
        })
    }
}

/// Sends one of aws-config's requests (small, in memory) and reads its answer whole.
async fn send(
    client: &reqwest::Client,
    request: HttpRequest,
    read_timeout: Option<Duration>,
) -> std::result::Result<HttpResponse, ConnectorError> {
    let method = reqwest::Method::from_bytes(request.method().as_bytes())
        .map_err(|e| ConnectorError::user(e.into()))?;
    let mut builder = client.request(method, request.uri());
    for (name, value) in request.headers() {
        builder = builder.header(name, value);
    }
    if let Some(body) = request.body().bytes() {
        builder = builder.body(body.to_vec());
    }
    if let Some(timeout) = read_timeout {
        builder = builder.timeout(timeout);
    }
    let response = builder.send().await.map_err(connector_error)?;
    let status = response.status().as_u16();
    let headers: Vec<(String, String)> = response
        .headers()
        .iter()
        .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect();
    let body = response.bytes().await.map_err(connector_error)?;
    let status = status
        .try_into()
        .map_err(|e| ConnectorError::other(Box::new(e), None))?;
    let mut answer = HttpResponse::new(status, SdkBody::from(body));
    for (name, value) in headers {
        answer.headers_mut().insert(name, value);
    }
    Ok(answer)
}

fn connector_error(error: reqwest::Error) -> ConnectorError {
    if error.is_timeout() {
        ConnectorError::timeout(error.into())
    } else {
        ConnectorError::io(error.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Counting<F>(F);
    impl<F> fmt::Debug for Counting<F> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("Counting")
        }
    }
    impl<F: Fn() -> Credentials + Send + Sync> ProvideCredentials for Counting<F> {
        fn provide_credentials<'a>(
            &'a self,
        ) -> aws_credential_types::provider::future::ProvideCredentials<'a>
        where
            Self: 'a,
        {
            aws_credential_types::provider::future::ProvideCredentials::ready(Ok((self.0)()))
        }
    }

    #[tokio::test]
    async fn given_credentials_are_kept_until_shortly_before_they_expire() {
        let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = Arc::clone(&calls);
        let expiring = move || {
            let n = counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            // The first expires in a minute (inside the margin), the second in an hour.
            let expiry = SystemTime::now()
                + if n == 0 {
                    Duration::from_secs(60)
                } else {
                    Duration::from_secs(3600)
                };
            Credentials::new(format!("AKID{n}"), "secret", None, Some(expiry), "test")
        };
        let source = CredentialSource::given(SharedCredentialsProvider::new(Counting(expiring)));
        assert_eq!(source.get().await.unwrap().access_key_id(), "AKID0");
        // Within five minutes of its expiry: fetched again.
        assert_eq!(source.get().await.unwrap().access_key_id(), "AKID1");
        assert_eq!(source.get().await.unwrap().access_key_id(), "AKID1");
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn missing_credentials_say_where_they_were_looked_for() {
        #[derive(Debug)]
        struct Nothing;
        impl ProvideCredentials for Nothing {
            fn provide_credentials<'a>(
                &'a self,
            ) -> aws_credential_types::provider::future::ProvideCredentials<'a>
            where
                Self: 'a,
            {
                aws_credential_types::provider::future::ProvideCredentials::ready(Err(
                    CredentialsError::not_loaded("none here"),
                ))
            }
        }
        let source = CredentialSource::given(SharedCredentialsProvider::new(Nothing));
        let err = source.get().await.unwrap_err();
        assert_eq!(err.kind(), harness_core::ErrorKind::Configuration);
        assert!(
            err.to_string().contains("AWS_BEARER_TOKEN_BEDROCK"),
            "{err}"
        );
    }
}
