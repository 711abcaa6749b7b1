//! OAuth 2.1 for MCP servers over streamable HTTP (feature `mcp-auth`).
//!
//! [`OAuth`] says how this client authorizes itself with a server's authorization server;
//! [`McpServer::with_oauth`](super::McpServer::with_oauth) puts it on an HTTP server. The
//! flow is reactive, as the MCP authorization spec describes: requests go out with the token
//! held (none at first); a `401` starts discovery from the server's `WWW-Authenticate`
//! challenge, then registration and authorization, and the request is sent again with the
//! new token; a `401` to a token held is first answered with a refresh; a `403`
//! `insufficient_scope` asks for the wider scopes it names (a step-up), at most
//! [`OAuth::with_max_step_ups`] times for one request.
//!
//! The protocol pieces are the official SDK's (`rmcp`'s `auth` feature): protected-resource
//! metadata (RFC 9728, from the challenge's `resource_metadata`, then the path-suffixed and
//! root well-known URLs), authorization-server metadata (RFC 8414 and OpenID Connect
//! discovery, path-suffixed and path-prefixed), the 2025-03-26 fallbacks (metadata at the
//! server's root, then `/authorize`, `/token` and `/register` there), PKCE (S256), the
//! `resource` parameter (RFC 8707), dynamic client registration (RFC 7591), client ID
//! metadata documents, scope selection (the challenge's `scope`, else the resource's
//! `scopes_supported`, else none; `offline_access` added when the authorization server
//! lists it) and token refresh. This module adds the redirect handlers, the token store
//! seam, the step-up limit, the HTTP client (this crate's rustls client) and the errors.
//!
//! Tokens never appear in logs or errors: the errors here name the step that failed and
//! what to do, and [`StoredTokens`] does not print its content.

use std::future::Future;
use std::sync::{Arc, Mutex as StdMutex, PoisonError};
use std::time::Duration;

use reqwest::header::HeaderName;
use reqwest::header::HeaderValue;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::{
    AuthError, AuthorizationCallback, AuthorizationManager, AuthorizationMetadata,
    AuthorizationRequest, AuthorizationSession, ClientCredentialsConfig, CredentialStore,
    OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture, OAuthHttpRedirectPolicy,
    OAuthHttpRequest, ScopeUpgradeConfig, StoredCredentials, WWWAuthenticateParams,
};
use rmcp::transport::common::client_side_sse::BoxedSseResponse;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::{McpError, McpErrorKind};

/// The most bytes read of an OAuth HTTP answer (metadata, registration, tokens).
const MAX_OAUTH_BODY: usize = 1024 * 1024;

/// How long one OAuth HTTP request (discovery, registration, token) may take.
const OAUTH_HTTP_TIMEOUT: Duration = Duration::from_secs(30);

/// How long the loopback listener waits for the browser to come back, by default.
const DEFAULT_LOOPBACK_WAIT: Duration = Duration::from_secs(300);

/// Step-ups (403 `insufficient_scope`, then a new authorization for wider scopes) allowed for
/// one request, by default.
pub const DEFAULT_MAX_STEP_UPS: u32 = 2;

// ---------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------

/// How this client identifies itself to the authorization server.
#[derive(Clone)]
enum Client {
    /// Dynamic client registration (RFC 7591) under this name, unless a client ID metadata
    /// document URL is set and the server supports those.
    Dynamic { metadata_url: Option<String> },
    /// A client registered beforehand.
    Registered {
        client_id: String,
        client_secret: Option<String>,
    },
}

/// Which grant gets the tokens.
#[derive(Clone)]
enum Grant {
    /// The authorization-code flow with PKCE, through a [`RedirectHandler`].
    AuthorizationCode,
    /// Client credentials with a secret (no user involved).
    ClientSecret {
        client_id: String,
        client_secret: String,
    },
    /// Enterprise-managed authorization (SEP-990): the enterprise IdP's ID token exchanged
    /// for an ID-JAG, redeemed at the resource's authorization server.
    Enterprise {
        idp: EnterpriseIdp,
        client_id: String,
        client_secret: String,
    },
    /// Client credentials with a signed JWT (`private_key_jwt`, RFC 7523).
    #[cfg(feature = "mcp-auth-jwt")]
    PrivateKeyJwt {
        client_id: String,
        key_pem: Vec<u8>,
        algorithm: JwtAlgorithm,
    },
}

/// The enterprise identity provider of enterprise-managed authorization (SEP-990, "cross-app
/// access"): the user's ID token from it is exchanged there (RFC 8693) for an identity
/// assertion grant (ID-JAG), which the resource's authorization server redeems for an
/// access token (RFC 7523 JWT bearer grant). No browser is involved.
#[derive(Clone)]
pub struct EnterpriseIdp {
    issuer: String,
    token_endpoint: String,
    client_id: String,
    client_secret: Option<String>,
    id_token: String,
}

impl std::fmt::Debug for EnterpriseIdp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnterpriseIdp")
            .field("issuer", &self.issuer)
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

impl EnterpriseIdp {
    /// The IdP by its issuer and token endpoint (from its approved metadata), this client's
    /// ID there, and the user's ID token it issued to this client.
    pub fn new(
        issuer: impl Into<String>,
        token_endpoint: impl Into<String>,
        client_id: impl Into<String>,
        id_token: impl Into<String>,
    ) -> Self {
        Self {
            issuer: issuer.into(),
            token_endpoint: token_endpoint.into(),
            client_id: client_id.into(),
            client_secret: None,
            id_token: id_token.into(),
        }
    }

    /// The client's secret at the IdP (`client_secret_basic`); without it the client is
    /// public there.
    pub fn with_client_secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(secret.into());
        self
    }
}

/// How the client authenticates itself at the token endpoint. By default it follows the
/// authorization server's `token_endpoint_auth_methods_supported`: `client_secret_basic`
/// when offered (or nothing is said), else `client_secret_post`; `none` for a client without
/// a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenEndpointAuth {
    /// The client ID and secret in an HTTP Basic `Authorization` header.
    ClientSecretBasic,
    /// The client ID and secret in the form body.
    ClientSecretPost,
    /// No client authentication (a public client): only `client_id` in the body, even when
    /// a secret is known.
    None,
}

/// The signing algorithm of a `private_key_jwt` client assertion. Feature `mcp-auth-jwt`.
#[cfg(feature = "mcp-auth-jwt")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum JwtAlgorithm {
    /// RSA PKCS#1 v1.5 with SHA-256.
    Rs256,
    /// RSA PKCS#1 v1.5 with SHA-384.
    Rs384,
    /// RSA PKCS#1 v1.5 with SHA-512.
    Rs512,
    /// ECDSA on P-256 with SHA-256.
    Es256,
    /// ECDSA on P-384 with SHA-384.
    Es384,
}

#[cfg(feature = "mcp-auth-jwt")]
impl JwtAlgorithm {
    fn to_rmcp(self) -> rmcp::transport::auth::JwtSigningAlgorithm {
        use rmcp::transport::auth::JwtSigningAlgorithm as J;
        match self {
            Self::Rs256 => J::RS256,
            Self::Rs384 => J::RS384,
            Self::Rs512 => J::RS512,
            Self::Es256 => J::ES256,
            Self::Es384 => J::ES384,
        }
    }

    /// The algorithm named as in JOSE (`"ES256"`, `"RS256"`, ...), case-insensitively.
    pub fn from_name(name: &str) -> Option<Self> {
        match name.to_ascii_uppercase().as_str() {
            "RS256" => Some(Self::Rs256),
            "RS384" => Some(Self::Rs384),
            "RS512" => Some(Self::Rs512),
            "ES256" => Some(Self::Es256),
            "ES384" => Some(Self::Es384),
            _ => None,
        }
    }
}

/// How an MCP client authorizes itself with OAuth 2.1: who it is (a client registered
/// dynamically, one registered beforehand, or a client ID metadata document), which grant
/// gets its tokens (the authorization-code flow through a [`RedirectHandler`], or client
/// credentials), the scopes, the step-up limit and where tokens are kept.
///
/// Cloning is cheap and the clones share their tokens; give each server its own `OAuth`.
///
/// ```no_run
/// use harness_tools::mcp::{McpServer, auth::{OAuth, Redirect}};
///
/// # async fn demo() -> Result<(), harness_tools::mcp::McpError> {
/// // A user signs in in a browser; the tokens come back to a listener on 127.0.0.1.
/// let mcp = McpServer::http("https://mcp.example.com/mcp", &[])?
///     .with_oauth(OAuth::new().with_redirect(Redirect::loopback()));
/// let tools = mcp.tools().await?;
///
/// // A service with credentials of its own, no user involved.
/// let service = McpServer::http("https://mcp.example.com/mcp", &[])?
///     .with_oauth(OAuth::client_credentials("my-service", "its-secret"));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct OAuth {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    grant: Grant,
    client_name: String,
    scopes: Vec<String>,
    token_endpoint_auth: Option<TokenEndpointAuth>,
    max_step_ups: u32,
    redirect: Arc<dyn RedirectHandler>,
    store: Arc<dyn TokenStore>,
    /// The authorization reached so far, shared by every connection made with this `OAuth`.
    session: tokio::sync::Mutex<Option<AuthorizationManager>>,
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let grant = match &self.inner.grant {
            Grant::AuthorizationCode => "authorization_code",
            Grant::ClientSecret { .. } => "client_credentials (secret)",
            Grant::Enterprise { .. } => "enterprise-managed (ID-JAG)",
            #[cfg(feature = "mcp-auth-jwt")]
            Grant::PrivateKeyJwt { .. } => "client_credentials (private_key_jwt)",
        };
        let client = match &self.inner.client {
            Client::Dynamic { metadata_url: None } => "dynamic registration".to_owned(),
            Client::Dynamic {
                metadata_url: Some(url),
            } => format!("client ID metadata document {url}"),
            Client::Registered { client_id, .. } => format!("registered client {client_id}"),
        };
        f.debug_struct("OAuth")
            .field("grant", &grant)
            .field("client", &client)
            .field("scopes", &self.inner.scopes)
            .field("max_step_ups", &self.inner.max_step_ups)
            .finish_non_exhaustive()
    }
}

impl Default for OAuth {
    fn default() -> Self {
        Self::new()
    }
}

impl OAuth {
    fn with_grant(grant: Grant, client: Client) -> Self {
        Self {
            inner: Arc::new(Inner {
                client,
                grant,
                client_name: "deepharness".to_owned(),
                scopes: Vec::new(),
                token_endpoint_auth: None,
                max_step_ups: DEFAULT_MAX_STEP_UPS,
                redirect: Arc::new(Redirect::loopback()),
                store: Arc::new(InMemoryTokenStore::default()),
                session: tokio::sync::Mutex::new(None),
            }),
        }
    }

    /// The authorization-code flow with PKCE: the client registers itself dynamically
    /// (as `deepharness`, see [`with_client_name`](Self::with_client_name)), the user signs
    /// in through a [`Redirect::loopback`] listener, tokens are kept in memory.
    pub fn new() -> Self {
        Self::with_grant(
            Grant::AuthorizationCode,
            Client::Dynamic { metadata_url: None },
        )
    }

    /// The client credentials grant with a client secret (SEP-1046): no user and no
    /// redirect; the secret goes to the token endpoint as `client_secret_basic` when that is
    /// all the server offers, else `client_secret_post`.
    pub fn client_credentials(
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        let (client_id, client_secret) = (client_id.into(), client_secret.into());
        Self::with_grant(
            Grant::ClientSecret {
                client_id: client_id.clone(),
                client_secret: client_secret.clone(),
            },
            Client::Registered {
                client_id,
                client_secret: Some(client_secret),
            },
        )
    }

    /// Enterprise-managed authorization (SEP-990): the user's ID token from `idp` is
    /// exchanged for an identity assertion grant, which the MCP server's authorization
    /// server (found by discovery) redeems for an access token; this client is registered
    /// there as `client_id` with `client_secret` (`client_secret_basic`, or
    /// `client_secret_post` when that is all it offers). When the ID token runs out, make
    /// a new `OAuth` with a fresh one.
    pub fn enterprise(
        idp: EnterpriseIdp,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        let (client_id, client_secret) = (client_id.into(), client_secret.into());
        Self::with_grant(
            Grant::Enterprise {
                idp,
                client_id: client_id.clone(),
                client_secret: client_secret.clone(),
            },
            Client::Registered {
                client_id,
                client_secret: Some(client_secret),
            },
        )
    }

    /// The client credentials grant authenticated with a JWT signed by the client's private
    /// key (`private_key_jwt`, RFC 7523; SEP-1046). `private_key_pem` is the PEM of a PKCS#8
    /// private key. Feature `mcp-auth-jwt`.
    #[cfg(feature = "mcp-auth-jwt")]
    pub fn client_credentials_jwt(
        client_id: impl Into<String>,
        private_key_pem: impl Into<Vec<u8>>,
        algorithm: JwtAlgorithm,
    ) -> Self {
        let client_id = client_id.into();
        Self::with_grant(
            Grant::PrivateKeyJwt {
                client_id: client_id.clone(),
                key_pem: private_key_pem.into(),
                algorithm,
            },
            Client::Registered {
                client_id,
                client_secret: None,
            },
        )
    }

    fn edit(self, change: impl FnOnce(&mut Inner)) -> Self {
        let mut inner = Arc::try_unwrap(self.inner).unwrap_or_else(|shared| Inner {
            client: shared.client.clone(),
            grant: shared.grant.clone(),
            client_name: shared.client_name.clone(),
            scopes: shared.scopes.clone(),
            token_endpoint_auth: shared.token_endpoint_auth,
            max_step_ups: shared.max_step_ups,
            redirect: Arc::clone(&shared.redirect),
            store: Arc::clone(&shared.store),
            session: tokio::sync::Mutex::new(None),
        });
        change(&mut inner);
        Self {
            inner: Arc::new(inner),
        }
    }

    /// Uses a client registered with the authorization server beforehand instead of
    /// registering one: its ID (for the authorization-code flow).
    pub fn with_client_id(self, client_id: impl Into<String>) -> Self {
        let client_id = client_id.into();
        self.edit(|inner| {
            let secret = match &inner.client {
                Client::Registered { client_secret, .. } => client_secret.clone(),
                Client::Dynamic { .. } => None,
            };
            inner.client = Client::Registered {
                client_id,
                client_secret: secret,
            };
        })
    }

    /// The secret of the client set with [`with_client_id`](Self::with_client_id) (a
    /// confidential client). Without a client ID it is ignored.
    pub fn with_client_secret(self, client_secret: impl Into<String>) -> Self {
        let client_secret = client_secret.into();
        self.edit(|inner| {
            if let Client::Registered {
                client_secret: secret,
                ..
            } = &mut inner.client
            {
                *secret = Some(client_secret);
            }
        })
    }

    /// Identifies the client by the HTTPS URL of its client ID metadata document (SEP-991)
    /// when the authorization server says it supports those
    /// (`client_id_metadata_document_supported`); otherwise the client registers itself
    /// dynamically. A client ID set with [`with_client_id`](Self::with_client_id) comes
    /// first.
    pub fn with_client_metadata_url(self, url: impl Into<String>) -> Self {
        let url = url.into();
        self.edit(|inner| {
            if let Client::Dynamic { metadata_url } = &mut inner.client {
                *metadata_url = Some(url);
            }
        })
    }

    /// The name the client registers under (dynamic registration); default `deepharness`.
    pub fn with_client_name(self, name: impl Into<String>) -> Self {
        let name = name.into();
        self.edit(|inner| inner.client_name = name)
    }

    /// The scopes to ask for, instead of the spec's selection (the challenge's `scope`,
    /// else the resource's `scopes_supported`, else none).
    pub fn with_scopes<I, S>(self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let scopes = scopes.into_iter().map(Into::into).collect();
        self.edit(|inner| inner.scopes = scopes)
    }

    /// How the client authenticates at the token endpoint, instead of following the
    /// authorization server's metadata.
    pub fn with_token_endpoint_auth(self, method: TokenEndpointAuth) -> Self {
        self.edit(|inner| inner.token_endpoint_auth = Some(method))
    }

    /// How many step-ups (a `403 insufficient_scope`, then a new authorization for the wider
    /// scopes it names) one request may go through before it fails (default
    /// [`DEFAULT_MAX_STEP_UPS`], 2); 0 turns step-up off.
    pub fn with_max_step_ups(self, max: u32) -> Self {
        self.edit(|inner| inner.max_step_ups = max)
    }

    /// Who takes the user to the authorization URL and brings back the code (default
    /// [`Redirect::loopback`]).
    pub fn with_redirect(self, handler: impl RedirectHandler + 'static) -> Self {
        let handler: Arc<dyn RedirectHandler> = Arc::new(handler);
        self.edit(|inner| inner.redirect = handler)
    }

    /// Where tokens (and the client registration they belong to) are kept (default
    /// [`InMemoryTokenStore`]). A store that keeps them across runs saves the user signing
    /// in again: they are refreshed when they run out.
    pub fn with_token_store(self, store: impl TokenStore + 'static) -> Self {
        let store: Arc<dyn TokenStore> = Arc::new(store);
        self.edit(|inner| inner.store = store)
    }
}

// ---------------------------------------------------------------------------------------
// Redirect handlers
// ---------------------------------------------------------------------------------------

/// What the authorization server sent back to the redirect URI: the code, the `state` it
/// was given, and its `iss` (RFC 9207) when it sends one. Its `Debug` leaves the code out.
#[derive(Clone, PartialEq, Eq)]
pub struct OAuthCallback {
    /// The authorization code.
    pub code: String,
    /// The `state` parameter, which must match the one in the authorization URL.
    pub state: String,
    /// The authorization server's issuer (`iss`), when it sent one.
    pub issuer: Option<String>,
}

impl std::fmt::Debug for OAuthCallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthCallback")
            .field("code", &"<redacted>")
            .field("state", &self.state)
            .field("issuer", &self.issuer)
            .finish()
    }
}

impl OAuthCallback {
    /// Reads `code`, `state` and `iss` from the URL the authorization server redirected to.
    ///
    /// # Errors
    /// [`McpError`] of kind [`McpErrorKind::Authorization`] when the URL is not one, carries
    /// the server's `error` (the user declined, say), or lacks the code or the state.
    pub fn from_redirect_url(url: &str) -> Result<Self, McpError> {
        let parsed = reqwest::Url::parse(url).map_err(|e| {
            authorization(format!(
                "the authorization server redirected to something that is not a URL ({e})"
            ))
        })?;
        let value = |name: &str| {
            parsed
                .query_pairs()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.into_owned())
        };
        if let Some(error) = value("error") {
            let detail = value("error_description")
                .map(|d| format!(": {d}"))
                .unwrap_or_default();
            return Err(authorization(format!(
                "the authorization server refused the authorization ({error}{detail}); sign in \
                 again and allow the access asked for"
            )));
        }
        let callback = AuthorizationCallback::from_redirect_url(url).map_err(|_| {
            authorization(
                "the authorization server's redirect carries no code or no state; check the \
                 redirect URI registered for this client",
            )
        })?;
        Ok(Self {
            code: callback.code,
            state: callback.csrf_token,
            issuer: callback.issuer,
        })
    }
}

/// Takes the user to the authorization URL and brings back what the authorization server
/// sent to the redirect URI. [`Redirect`] has the ones this crate provides; implement it for
/// an application's own (a desktop app's custom URL scheme, a web app's callback route).
#[async_trait::async_trait]
pub trait RedirectHandler: Send + Sync {
    /// The redirect URI, registered with the client and sent in every authorization
    /// request; asked for before the first authorization, and the same every time.
    async fn redirect_uri(&self) -> Result<String, McpError>;

    /// Takes the user to `authorization_url` and returns the code and state the
    /// authorization server sent to the redirect URI.
    async fn authorize(&self, authorization_url: &str) -> Result<OAuthCallback, McpError>;
}

/// The redirect handlers this crate provides.
#[derive(Debug, Clone, Copy)]
pub struct Redirect;

impl Redirect {
    /// A listener on `127.0.0.1` (a random port unless [`LoopbackRedirect::with_port`]),
    /// redirect URI `http://127.0.0.1:PORT/callback`: prints "open this URL" with the
    /// authorization URL on stderr (or hands it to [`LoopbackRedirect::on_url`]) and waits
    /// for the browser to come back, five minutes at most. What a command-line program or a
    /// desktop app wants (RFC 8252).
    pub fn loopback() -> LoopbackRedirect {
        LoopbackRedirect {
            port: 0,
            wait: DEFAULT_LOOPBACK_WAIT,
            on_url: Arc::new(|url: &str| {
                eprintln!("Open this URL in a browser to authorize the MCP client:\n\n  {url}\n");
            }),
            listener: tokio::sync::Mutex::new(None),
        }
    }

    /// For tests and automation only: follows the authorization URL with one HTTP GET
    /// (redirects not followed) and reads the code and state from the `Location` it answers
    /// with. That works with an authorization server that redirects back at once, without a
    /// user (the MCP conformance suite's, a test's fake); a real one shows a login page
    /// instead and this fails. The redirect URI is `http://127.0.0.1/callback`, which nothing
    /// needs to serve.
    pub fn follow_headless() -> HeadlessRedirect {
        HeadlessRedirect {
            redirect_uri: "http://127.0.0.1/callback".to_owned(),
        }
    }

    /// An application's own way: `redirect_uri` is what the application serves, and
    /// `authorize` gets the authorization URL and returns the URL the browser was sent back
    /// to (read it with [`OAuthCallback::from_redirect_url`]), or the code and state.
    ///
    /// ```
    /// use harness_tools::mcp::auth::{OAuthCallback, Redirect};
    ///
    /// let redirect = Redirect::callback("myapp://oauth/callback", |url: String| async move {
    ///     // open `url` in the system browser, wait for myapp://oauth/callback?code=..
    ///     # let came_back = format!("myapp://oauth/callback?code=c&state=s{}", &url[..0]);
    ///     OAuthCallback::from_redirect_url(&came_back)
    /// });
    /// ```
    pub fn callback<F, Fut>(redirect_uri: impl Into<String>, authorize: F) -> CallbackRedirect<F>
    where
        F: Fn(String) -> Fut + Send + Sync,
        Fut: Future<Output = Result<OAuthCallback, McpError>> + Send,
    {
        CallbackRedirect {
            redirect_uri: redirect_uri.into(),
            authorize,
        }
    }
}

/// [`Redirect::loopback`]: a listener on `127.0.0.1` the browser comes back to.
pub struct LoopbackRedirect {
    port: u16,
    wait: Duration,
    on_url: Arc<dyn Fn(&str) + Send + Sync>,
    listener: tokio::sync::Mutex<Option<(tokio::net::TcpListener, u16)>>,
}

impl std::fmt::Debug for LoopbackRedirect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopbackRedirect")
            .field("port", &self.port)
            .field("wait", &self.wait)
            .finish_non_exhaustive()
    }
}

impl LoopbackRedirect {
    /// Listens on this port instead of a random one (for a client registered with a fixed
    /// redirect URI).
    pub fn with_port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// How long to wait for the browser to come back (default five minutes). The
    /// server's timeout ([`McpServer::with_timeout`](super::McpServer::with_timeout)) also
    /// bounds a sign-in during a request: raise it for interactive use.
    pub fn with_wait(mut self, wait: Duration) -> Self {
        self.wait = wait;
        self
    }

    /// What to do with the authorization URL, instead of printing it on stderr: open a
    /// browser, show it in a UI.
    pub fn on_url(mut self, show: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.on_url = Arc::new(show);
        self
    }

    async fn port(&self) -> Result<u16, McpError> {
        let mut listener = self.listener.lock().await;
        if let Some((_, port)) = &*listener {
            return Ok(*port);
        }
        let bound = tokio::net::TcpListener::bind(("127.0.0.1", self.port))
            .await
            .map_err(|e| {
                authorization(format!(
                    "cannot listen on 127.0.0.1:{} for the OAuth redirect: {e}",
                    self.port
                ))
            })?;
        let port = bound
            .local_addr()
            .map_err(|e| authorization(format!("cannot read the listener's port: {e}")))?
            .port();
        *listener = Some((bound, port));
        Ok(port)
    }
}

#[async_trait::async_trait]
impl RedirectHandler for LoopbackRedirect {
    async fn redirect_uri(&self) -> Result<String, McpError> {
        Ok(format!("http://127.0.0.1:{}/callback", self.port().await?))
    }

    async fn authorize(&self, authorization_url: &str) -> Result<OAuthCallback, McpError> {
        let port = self.port().await?;
        (self.on_url)(authorization_url);
        let listener = self.listener.lock().await;
        let Some((listener, _)) = &*listener else {
            return Err(authorization("the OAuth redirect listener is gone"));
        };
        let wait = async {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    continue;
                };
                let Some(target) = read_request_target(&mut stream).await else {
                    continue;
                };
                if !target.starts_with("/callback") {
                    let _ = stream
                        .write_all(
                            b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                        )
                        .await;
                    continue;
                }
                let result =
                    OAuthCallback::from_redirect_url(&format!("http://127.0.0.1:{port}{target}"));
                let page: &[u8] = if result.is_ok() {
                    b"Signed in. You can close this tab and return to the application."
                } else {
                    b"The sign-in did not complete. You can close this tab; the application says why."
                };
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    page.len()
                );
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.write_all(page).await;
                let _ = stream.shutdown().await;
                return result;
            }
        };
        tokio::time::timeout(self.wait, wait).await.map_err(|_| {
            authorization(format!(
                "nobody came back to the OAuth redirect on 127.0.0.1:{port} within {:?}; open \
                 the authorization URL and sign in, or allow longer with \
                 LoopbackRedirect::with_wait",
                self.wait
            ))
        })?
    }
}

/// The request target (`/callback?code=..`) of an HTTP request's first line, read within
/// five seconds and 16 KiB.
async fn read_request_target(stream: &mut tokio::net::TcpStream) -> Option<String> {
    let mut buffer = Vec::new();
    let read = async {
        let mut chunk = [0_u8; 2048];
        while !buffer.windows(2).any(|w| w == b"\r\n") && buffer.len() < 16 * 1024 {
            let n = stream.read(&mut chunk).await.ok()?;
            if n == 0 {
                break;
            }
            buffer.extend_from_slice(chunk.get(..n)?);
        }
        Some(())
    };
    tokio::time::timeout(Duration::from_secs(5), read)
        .await
        .ok()??;
    let text = String::from_utf8_lossy(&buffer);
    let line = text.lines().next()?;
    let mut parts = line.split_whitespace();
    (parts.next()? == "GET").then_some(())?;
    parts.next().map(str::to_owned)
}

/// [`Redirect::follow_headless`]: one GET of the authorization URL, the code read from the
/// redirect it answers with. For tests and automation.
#[derive(Debug, Clone)]
pub struct HeadlessRedirect {
    redirect_uri: String,
}

impl HeadlessRedirect {
    /// A redirect URI other than `http://127.0.0.1/callback` (one the client was registered
    /// with).
    pub fn with_redirect_uri(mut self, uri: impl Into<String>) -> Self {
        self.redirect_uri = uri.into();
        self
    }
}

#[async_trait::async_trait]
impl RedirectHandler for HeadlessRedirect {
    async fn redirect_uri(&self) -> Result<String, McpError> {
        Ok(self.redirect_uri.clone())
    }

    async fn authorize(&self, authorization_url: &str) -> Result<OAuthCallback, McpError> {
        let client = harness_providers::client_builder()
            .map_err(|e| McpError::configuration(e.to_string()))?
            .redirect(reqwest::redirect::Policy::none())
            .timeout(OAUTH_HTTP_TIMEOUT)
            .build()
            .map_err(|e| McpError::configuration(format!("cannot build the HTTP client: {e}")))?;
        let response = client.get(authorization_url).send().await.map_err(|e| {
            authorization(format!(
                "cannot reach the authorization endpoint: {}",
                e.without_url()
            ))
        })?;
        let status = response.status();
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let Some(location) = location.filter(|_| status.is_redirection()) else {
            return Err(authorization(format!(
                "the authorization endpoint answered HTTP {status} without redirecting back; \
                 Redirect::follow_headless only works with a server that redirects at once \
                 (a test server); use Redirect::loopback for a real sign-in"
            )));
        };
        let location = reqwest::Url::parse(authorization_url)
            .and_then(|base| base.join(&location))
            .map(String::from)
            .unwrap_or(location);
        OAuthCallback::from_redirect_url(&location)
    }
}

/// [`Redirect::callback`]: an application's own redirect handling.
pub struct CallbackRedirect<F> {
    redirect_uri: String,
    authorize: F,
}

impl<F> std::fmt::Debug for CallbackRedirect<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallbackRedirect")
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl<F, Fut> RedirectHandler for CallbackRedirect<F>
where
    F: Fn(String) -> Fut + Send + Sync,
    Fut: Future<Output = Result<OAuthCallback, McpError>> + Send,
{
    async fn redirect_uri(&self) -> Result<String, McpError> {
        Ok(self.redirect_uri.clone())
    }

    async fn authorize(&self, authorization_url: &str) -> Result<OAuthCallback, McpError> {
        (self.authorize)(authorization_url.to_owned()).await
    }
}

// ---------------------------------------------------------------------------------------
// Token stores
// ---------------------------------------------------------------------------------------

/// What a [`TokenStore`] keeps: the client ID, the tokens, the scopes granted and the
/// issuer, as JSON. Its `Debug` does not show them.
#[derive(Clone, PartialEq, Eq)]
pub struct StoredTokens {
    json: String,
}

impl std::fmt::Debug for StoredTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoredTokens(<redacted>)")
    }
}

impl StoredTokens {
    /// Tokens read back from where a store keeps them ([`as_json`](Self::as_json)'s text).
    pub fn from_json(json: impl Into<String>) -> Self {
        Self { json: json.into() }
    }

    /// The JSON to keep: secret, so store it as a password is stored.
    pub fn as_json(&self) -> &str {
        &self.json
    }
}

/// Where an [`OAuth`]'s tokens are kept. [`InMemoryTokenStore`] is the default; implement
/// this for a file, a keychain or a database so users need not sign in on every run.
///
/// ```
/// use std::path::PathBuf;
/// use harness_tools::mcp::{McpError, auth::{StoredTokens, TokenStore}};
///
/// /// Tokens in a file only this user may read.
/// struct FileTokenStore(PathBuf);
///
/// #[async_trait::async_trait]
/// impl TokenStore for FileTokenStore {
///     async fn load(&self) -> Result<Option<StoredTokens>, McpError> {
///         match std::fs::read_to_string(&self.0) {
///             Ok(json) => Ok(Some(StoredTokens::from_json(json))),
///             Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
///             Err(e) => Err(McpError::new(format!("cannot read {}: {e}", self.0.display()))),
///         }
///     }
///     async fn save(&self, tokens: StoredTokens) -> Result<(), McpError> {
///         use std::os::unix::fs::OpenOptionsExt as _;
///         use std::io::Write as _;
///         let mut file = std::fs::OpenOptions::new()
///             .write(true).create(true).truncate(true).mode(0o600)
///             .open(&self.0)
///             .map_err(|e| McpError::new(format!("cannot write {}: {e}", self.0.display())))?;
///         file.write_all(tokens.as_json().as_bytes())
///             .map_err(|e| McpError::new(format!("cannot write {}: {e}", self.0.display())))
///     }
///     async fn clear(&self) -> Result<(), McpError> {
///         let _ = std::fs::remove_file(&self.0);
///         Ok(())
///     }
/// }
/// ```
#[async_trait::async_trait]
pub trait TokenStore: Send + Sync {
    /// The tokens kept, if any.
    async fn load(&self) -> Result<Option<StoredTokens>, McpError>;
    /// Keeps `tokens`, replacing any kept before.
    async fn save(&self, tokens: StoredTokens) -> Result<(), McpError>;
    /// Forgets the tokens.
    async fn clear(&self) -> Result<(), McpError>;
}

/// Tokens in memory, for as long as the [`OAuth`] lives: the default [`TokenStore`].
#[derive(Debug, Default)]
pub struct InMemoryTokenStore {
    tokens: StdMutex<Option<StoredTokens>>,
}

#[async_trait::async_trait]
impl TokenStore for InMemoryTokenStore {
    async fn load(&self) -> Result<Option<StoredTokens>, McpError> {
        Ok(self
            .tokens
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone())
    }

    async fn save(&self, tokens: StoredTokens) -> Result<(), McpError> {
        *self.tokens.lock().unwrap_or_else(PoisonError::into_inner) = Some(tokens);
        Ok(())
    }

    async fn clear(&self) -> Result<(), McpError> {
        *self.tokens.lock().unwrap_or_else(PoisonError::into_inner) = None;
        Ok(())
    }
}

/// A [`TokenStore`] as rmcp's credential store.
struct StoreAdapter(Arc<dyn TokenStore>);

#[async_trait::async_trait]
impl CredentialStore for StoreAdapter {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let Some(tokens) = self
            .0
            .load()
            .await
            .map_err(|e| AuthError::CredentialStoreError(e.message().to_owned()))?
        else {
            return Ok(None);
        };
        // Unreadable stored tokens are as good as none: the user signs in again.
        Ok(serde_json::from_str(tokens.as_json()).ok())
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let json = serde_json::to_string(&credentials).map_err(|_| {
            AuthError::CredentialStoreError("cannot write the tokens as JSON".to_owned())
        })?;
        self.0
            .save(StoredTokens::from_json(json))
            .await
            .map_err(|e| AuthError::CredentialStoreError(e.message().to_owned()))
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.0
            .clear()
            .await
            .map_err(|e| AuthError::CredentialStoreError(e.message().to_owned()))
    }
}

// ---------------------------------------------------------------------------------------
// HTTP for the OAuth requests: this crate's rustls client
// ---------------------------------------------------------------------------------------

/// Discovery, registration and token requests over this crate's reqwest client: one
/// client that follows redirects (discovery) and one that does not (token requests).
struct OAuthHttp {
    follow: reqwest::Client,
    stop: reqwest::Client,
}

impl OAuthHttp {
    fn new() -> Result<Self, McpError> {
        let build = |policy: reqwest::redirect::Policy| {
            harness_providers::client_builder()
                .map_err(|e| McpError::configuration(e.to_string()))?
                .redirect(policy)
                .connect_timeout(Duration::from_secs(10))
                .timeout(OAUTH_HTTP_TIMEOUT)
                .build()
                .map_err(|e| McpError::configuration(format!("cannot build the HTTP client: {e}")))
        };
        Ok(Self {
            follow: build(reqwest::redirect::Policy::limited(5))?,
            stop: build(reqwest::redirect::Policy::none())?,
        })
    }
}

impl OAuthHttpClient for OAuthHttp {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(async move {
            let client = match request.redirect_policy {
                OAuthHttpRedirectPolicy::Stop => &self.stop,
                _ => &self.follow,
            };
            let request = reqwest::Request::try_from(request.request)
                .map_err(|e| Box::new(e.without_url()) as OAuthHttpClientError)?;
            let mut response = client
                .execute(request)
                .await
                .map_err(|e| Box::new(e.without_url()) as OAuthHttpClientError)?;
            let mut builder = http::Response::builder()
                .status(response.status())
                .version(response.version());
            if let Some(headers) = builder.headers_mut() {
                headers.extend(
                    response
                        .headers()
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone())),
                );
            }
            let mut body = Vec::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| Box::new(e.without_url()) as OAuthHttpClientError)?
            {
                if body.len() + chunk.len() > MAX_OAUTH_BODY {
                    return Err(
                        format!("the OAuth answer is longer than {MAX_OAUTH_BODY} bytes").into(),
                    );
                }
                body.extend_from_slice(&chunk);
            }
            builder
                .body(body)
                .map_err(|e| Box::new(e) as OAuthHttpClientError)
        })
    }
}

// ---------------------------------------------------------------------------------------
// The authorization itself
// ---------------------------------------------------------------------------------------

/// An [`McpError`] of kind [`McpErrorKind::Authorization`].
fn authorization(message: impl Into<String>) -> McpError {
    McpError::with_kind(McpErrorKind::Authorization, message)
}

/// An OAuth failure as the transport reports it (rmcp's `AuthError`, found again by
/// [`McpError`]'s conversions), saying which step failed and what to do.
fn failed(step: &str, error: &AuthError) -> AuthError {
    let hint = match error {
        AuthError::RegistrationFailed(_) => {
            "; the server may not allow dynamic registration: register a client and pass it \
             with OAuth::with_client_id"
        }
        AuthError::PkceUnsupported => "; the authorization server does not offer PKCE (S256)",
        AuthError::ProtectedResourceMetadataInvalid { .. } => {
            "; the server's protected-resource metadata does not name this server, so its \
             authorization server is not trusted for it"
        }
        AuthError::TokenExchangeFailed(_) | AuthError::ClientCredentialsError(_) => {
            "; check the client ID and secret (or key) and the token endpoint authentication"
        }
        _ => "",
    };
    AuthError::AuthorizationFailed(format!("{step}: {error}{hint}"))
}

fn failed_with(step: &str, error: &McpError) -> AuthError {
    AuthError::AuthorizationFailed(format!("{step}: {}", error.message()))
}

/// The client credentials exchange.
#[cfg(not(feature = "mcp-auth-jwt"))]
async fn exchange(
    manager: AuthorizationManager,
    config: ClientCredentialsConfig,
) -> Result<AuthorizationManager, AuthError> {
    manager.exchange_client_credentials(&config).await?;
    Ok(manager)
}

/// The client credentials exchange, on a blocking thread of the runtime: with rmcp's
/// `auth-client-credentials-jwt`, its future holds a form serializer that is not `Send`
/// across an await, and the transport's futures must be `Send`.
#[cfg(feature = "mcp-auth-jwt")]
async fn exchange(
    manager: AuthorizationManager,
    config: ClientCredentialsConfig,
) -> Result<AuthorizationManager, AuthError> {
    let runtime = tokio::runtime::Handle::current();
    let (manager, result) = tokio::task::spawn_blocking(move || {
        runtime.block_on(async move {
            let result = manager.exchange_client_credentials(&config).await;
            (manager, result)
        })
    })
    .await
    .map_err(|e| AuthError::InternalError(format!("the token request stopped: {e}")))?;
    result.map(|_| manager)
}

/// The 2025-03-26 discovery, kept for servers of that version whose metadata's `issuer` is
/// not the URL it was fetched under: the authorization-server metadata at the root of the MCP
/// server's own origin, used only when its issuer and its endpoints are on that origin too.
///
/// rmcp refuses such metadata (RFC 8414 §3.3 wants the issuer to be the URL the metadata was
/// fetched under, against mix-ups between authorization servers). Metadata served by the MCP
/// server itself, naming only that server's own origin, cannot send the client to another
/// authorization server, so the 2025-03-26 rule (metadata at the root, the MCP server as its
/// own authorization server) is followed there.
async fn legacy_root_metadata(url: &str) -> Option<AuthorizationMetadata> {
    let server = reqwest::Url::parse(url).ok()?;
    let origin = server.origin();
    let well_known = server
        .join("/.well-known/oauth-authorization-server")
        .ok()?;
    let http = OAuthHttp::new().ok()?;
    let response = http.stop.get(well_known).send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let body = response.bytes().await.ok()?;
    if body.len() > MAX_OAUTH_BODY {
        return None;
    }
    let metadata: AuthorizationMetadata = serde_json::from_slice(&body).ok()?;
    let same_origin = |value: &str| reqwest::Url::parse(value).is_ok_and(|u| u.origin() == origin);
    let issuer_ok = metadata.issuer.as_deref().is_none_or(same_origin);
    (issuer_ok
        && same_origin(&metadata.authorization_endpoint)
        && same_origin(&metadata.token_endpoint)
        && metadata
            .registration_endpoint
            .as_deref()
            .is_none_or(same_origin))
    .then_some(metadata)
}

impl OAuth {
    /// A fresh manager for `url` with this configuration's store and limits.
    async fn manager(&self, url: &str) -> Result<AuthorizationManager, AuthError> {
        let http = OAuthHttp::new().map_err(|e| failed_with("setting up OAuth", &e))?;
        let mut manager = AuthorizationManager::new_with_oauth_http_client(url, Arc::new(http))
            .await
            .map_err(|e| failed("setting up OAuth", &e))?;
        manager.set_credential_store(StoreAdapter(Arc::clone(&self.inner.store)));
        let mut upgrades = ScopeUpgradeConfig::default();
        upgrades.max_upgrade_attempts = u32::MAX;
        manager.set_scope_upgrade_config(upgrades);
        Ok(manager)
    }

    /// Discovery from `challenge`, then the grant: a new authorization (tokens stored
    /// before are used first when they still work or refresh). Returns the access token.
    async fn authorize(
        &self,
        url: &str,
        challenge: Option<&str>,
        session: &mut Option<AuthorizationManager>,
        stored_first: bool,
    ) -> Result<String, AuthError> {
        let mut manager = self.manager(url).await?;
        let step = "discovering the authorization server";
        let mut metadata = match manager.resolve_metadata_from_challenge(challenge).await {
            Ok(resolution) => resolution.metadata,
            Err(e @ AuthError::AuthorizationServerMismatch { .. }) => legacy_root_metadata(url)
                .await
                .ok_or_else(|| failed(step, &e))?,
            Err(e) => return Err(failed(step, &e)),
        };
        if let Some(method) = self.inner.token_endpoint_auth {
            let name = match method {
                TokenEndpointAuth::ClientSecretBasic => "client_secret_basic",
                TokenEndpointAuth::ClientSecretPost => "client_secret_post",
                TokenEndpointAuth::None => "none",
            };
            metadata.additional_fields.insert(
                "token_endpoint_auth_methods_supported".to_owned(),
                serde_json::json!([name]),
            );
        }
        let discovered = metadata.clone();
        manager.set_metadata(metadata);
        match &self.inner.grant {
            Grant::ClientSecret {
                client_id,
                client_secret,
            } => {
                let config = ClientCredentialsConfig::ClientSecret {
                    client_id: client_id.clone(),
                    client_secret: client_secret.clone(),
                    scopes: self.inner.scopes.clone(),
                    resource: Some(url.to_owned()),
                };
                self.exchange_client_credentials(manager, &config, session)
                    .await
            }
            #[cfg(feature = "mcp-auth-jwt")]
            Grant::PrivateKeyJwt {
                client_id,
                key_pem,
                algorithm,
            } => {
                let config = ClientCredentialsConfig::PrivateKeyJwt {
                    client_id: client_id.clone(),
                    signing_key: key_pem.clone(),
                    signing_algorithm: algorithm.to_rmcp(),
                    token_endpoint_audience: None,
                    scopes: self.inner.scopes.clone(),
                    resource: Some(url.to_owned()),
                };
                self.exchange_client_credentials(manager, &config, session)
                    .await
            }
            Grant::Enterprise {
                idp,
                client_id,
                client_secret,
            } => {
                self.enterprise_exchange(
                    manager,
                    &discovered,
                    url,
                    idp,
                    (client_id, client_secret),
                    session,
                )
                .await
            }
            Grant::AuthorizationCode => {
                if stored_first
                    && manager.initialize_from_store().await.unwrap_or(false)
                    && let Ok(token) = manager.get_access_token().await
                {
                    *session = Some(manager);
                    return Ok(token);
                }
                self.authorization_code(manager, session).await
            }
        }
    }

    async fn exchange_client_credentials(
        &self,
        manager: AuthorizationManager,
        config: &ClientCredentialsConfig,
        session: &mut Option<AuthorizationManager>,
    ) -> Result<String, AuthError> {
        let step = "the client credentials grant";
        let mut manager = manager;
        manager
            .validate_client_credentials_metadata(config)
            .map_err(|e| failed(step, &e))?;
        manager
            .configure_client_credentials(config)
            .map_err(|e| failed(step, &e))?;
        let manager = exchange(manager, config.clone())
            .await
            .map_err(|e| failed(step, &e))?;
        let token = manager
            .get_access_token()
            .await
            .map_err(|e| failed(step, &e))?;
        *session = Some(manager);
        Ok(token)
    }

    /// SEP-990: ID token → ID-JAG at the IdP → access token at the resource's
    /// authorization server; the token kept in the store like any other.
    async fn enterprise_exchange(
        &self,
        manager: AuthorizationManager,
        metadata: &AuthorizationMetadata,
        url: &str,
        idp: &EnterpriseIdp,
        (client_id, client_secret): (&str, &str),
        session: &mut Option<AuthorizationManager>,
    ) -> Result<String, AuthError> {
        use rmcp::transport::auth::enterprise::{
            EmaAuthorizationServer, EmaClientAuthentication, EmaExchangeRequest,
        };
        let step = "the enterprise-managed token exchange";
        let (issuer, token_endpoint, post_only) = {
            let methods = metadata
                .additional_fields
                .get("token_endpoint_auth_methods_supported")
                .and_then(serde_json::Value::as_array)
                .map(|m| {
                    m.iter()
                        .filter_map(serde_json::Value::as_str)
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
            let post_only = methods.contains(&"client_secret_post")
                && !methods.contains(&"client_secret_basic");
            let issuer = metadata.issuer.clone().ok_or_else(|| {
                AuthError::AuthorizationFailed(format!(
                    "{step}: the authorization server's metadata has no issuer, which the \
                     identity assertion must name"
                ))
            })?;
            (issuer, metadata.token_endpoint.clone(), post_only)
        };
        let secret = oauth2::ClientSecret::new(client_secret.to_owned());
        let resource_as = EmaAuthorizationServer::new(issuer, token_endpoint, client_id)
            .with_client_authentication(if post_only {
                EmaClientAuthentication::ClientSecretPost(secret)
            } else {
                EmaClientAuthentication::ClientSecretBasic(secret)
            });
        let mut idp_server =
            EmaAuthorizationServer::new(&idp.issuer, &idp.token_endpoint, &idp.client_id);
        if let Some(secret) = &idp.client_secret {
            idp_server =
                idp_server.with_client_authentication(EmaClientAuthentication::ClientSecretBasic(
                    oauth2::ClientSecret::new(secret.clone()),
                ));
        }
        let http = OAuthHttp::new().map_err(|e| failed_with(step, &e))?;
        let granted =
            EmaExchangeRequest::new_with_id_token(idp_server, resource_as, url, &idp.id_token)
                .with_scopes(self.inner.scopes.clone())
                .exchange(&http, &http)
                .await
                .map_err(|e| AuthError::AuthorizationFailed(format!("{step}: {e}")))?;
        let mut response = rmcp::transport::auth::OAuthTokenResponse::new(
            granted.access_token.clone(),
            oauth2::basic::BasicTokenType::Bearer,
            rmcp::transport::auth::VendorExtraTokenFields::default(),
        );
        response.set_expires_in(granted.expires_in.as_ref());
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .ok();
        let credentials = StoredCredentials::new(
            client_id.to_owned(),
            Some(response),
            granted.scopes.iter().cloned().collect(),
            now,
        );
        StoreAdapter(Arc::clone(&self.inner.store))
            .save(credentials)
            .await
            .map_err(|e| failed(step, &e))?;
        *session = Some(manager);
        Ok(granted.access_token.secret().clone())
    }

    async fn authorization_code(
        &self,
        manager: AuthorizationManager,
        session: &mut Option<AuthorizationManager>,
    ) -> Result<String, AuthError> {
        let redirect_uri = self
            .inner
            .redirect
            .redirect_uri()
            .await
            .map_err(|e| failed_with("preparing the redirect", &e))?;
        let mut request =
            AuthorizationRequest::new(redirect_uri).with_client_name(&self.inner.client_name);
        request = if self.inner.scopes.is_empty() {
            request.with_initial_scope_selection()
        } else {
            request.with_scopes(self.inner.scopes.clone())
        };
        match &self.inner.client {
            Client::Registered {
                client_id,
                client_secret,
            } => {
                request = request.with_preregistered_client(client_id);
                if let Some(secret) = client_secret
                    && self.inner.token_endpoint_auth != Some(TokenEndpointAuth::None)
                {
                    request = request.with_client_secret(secret);
                }
            }
            Client::Dynamic {
                metadata_url: Some(url),
            } => request = request.with_client_metadata_url(url),
            Client::Dynamic { metadata_url: None } => {}
        }
        let started = AuthorizationSession::new(manager, request)
            .await
            .map_err(|(_, e)| failed("registering the client", &e))?;
        let callback = self
            .inner
            .redirect
            .authorize(started.get_authorization_url())
            .await
            .map_err(|e| failed_with("the authorization", &e))?;
        started
            .handle_callback_with_issuer(
                &callback.code,
                &callback.state,
                callback.issuer.as_deref(),
            )
            .await
            .map_err(|e| failed("exchanging the authorization code", &e))?;
        let manager = started.auth_manager;
        let token = manager
            .get_access_token()
            .await
            .map_err(|e| failed("exchanging the authorization code", &e))?;
        *session = Some(manager);
        Ok(token)
    }

    /// The token to send now: none before the first authorization.
    async fn current_token(&self) -> Result<Option<String>, AuthError> {
        let session = self.inner.session.lock().await;
        let Some(manager) = &*session else {
            return Ok(None);
        };
        match manager.get_access_token().await {
            Ok(token) => Ok(Some(token)),
            // None held, or a refresh that failed: the server's 401 starts a new
            // authorization.
            Err(_) => Ok(None),
        }
    }

    /// After a 401: a token another request got meanwhile, else a refresh, else a new
    /// authorization.
    async fn unauthorized(
        &self,
        url: &str,
        challenge: &str,
        sent: Option<&str>,
    ) -> Result<String, AuthError> {
        let mut session = self.inner.session.lock().await;
        if let Some(manager) = &*session {
            if let Ok(token) = manager.get_access_token().await
                && Some(token.as_str()) != sent
            {
                return Ok(token);
            }
            if sent.is_some()
                && manager.refresh_token().await.is_ok()
                && let Ok(token) = manager.get_access_token().await
                && Some(token.as_str()) != sent
            {
                return Ok(token);
            }
            if matches!(self.inner.grant, Grant::AuthorizationCode) {
                let _ = self.inner.store.clear().await;
            }
        }
        let stored_first = session.is_none();
        self.authorize(url, Some(challenge), &mut session, stored_first)
            .await
    }

    /// After a 403 `insufficient_scope`: a new authorization for the scopes held plus the
    /// ones the challenge names.
    async fn step_up(&self, url: &str, challenge: &str) -> Result<String, AuthError> {
        let mut session = self.inner.session.lock().await;
        let base = reqwest::Url::parse(url).map_err(AuthError::from)?;
        let required = WWWAuthenticateParams::parse(challenge, &base).scope;
        let Some(manager) = session.as_ref() else {
            return self
                .authorize(url, Some(challenge), &mut session, false)
                .await;
        };
        let Some(required) = required.filter(|s| !s.trim().is_empty()) else {
            return Err(AuthError::AuthorizationFailed(
                "the server refused the token as of insufficient scope (HTTP 403) without \
                 saying which scope it needs"
                    .to_owned(),
            ));
        };
        match &self.inner.grant {
            Grant::AuthorizationCode => {
                manager.reset_scope_upgrade_attempts().await;
                let authorization_url = manager
                    .request_scope_upgrade(&required)
                    .await
                    .map_err(|e| failed("asking for wider scopes", &e))?;
                let callback = self
                    .inner
                    .redirect
                    .authorize(&authorization_url)
                    .await
                    .map_err(|e| failed_with("the authorization for wider scopes", &e))?;
                manager
                    .exchange_code_for_token_with_issuer(
                        &callback.code,
                        &callback.state,
                        callback.issuer.as_deref(),
                    )
                    .await
                    .map_err(|e| failed("exchanging the authorization code", &e))?;
                manager
                    .get_access_token()
                    .await
                    .map_err(|e| failed("exchanging the authorization code", &e))
            }
            _ => {
                // Client credentials: ask again, with the scopes named.
                let mut scopes = manager.get_current_scopes().await;
                scopes.extend(required.split_whitespace().map(str::to_owned));
                let widened = self.clone().with_scopes(scopes);
                widened
                    .authorize(url, Some(challenge), &mut session, false)
                    .await
            }
        }
    }

    /// This configuration around `client`, for the streamable HTTP transport of `url`.
    pub(crate) fn client(&self, client: reqwest::Client, url: &str) -> AuthorizedClient {
        AuthorizedClient {
            inner: client,
            oauth: self.clone(),
            url: url.into(),
        }
    }
}

// ---------------------------------------------------------------------------------------
// The transport's HTTP client, with tokens
// ---------------------------------------------------------------------------------------

type HttpResult<T> = Result<T, StreamableHttpError<reqwest::Error>>;

/// The streamable HTTP transport's client with OAuth: each request carries the token held,
/// and a 401 or a 403 `insufficient_scope` is answered by authorizing and sending it again.
#[derive(Clone)]
pub(crate) struct AuthorizedClient {
    inner: reqwest::Client,
    oauth: OAuth,
    url: Arc<str>,
}

impl AuthorizedClient {
    async fn with_token<T, F, Fut>(&self, call: F) -> HttpResult<T>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = HttpResult<T>>,
    {
        let mut token = self.oauth.current_token().await?;
        // Two rounds after a 401: the first may use stored tokens or a refresh, the second
        // (those refused too) signs in afresh.
        let mut rounds = 0;
        let mut step_ups = 0;
        loop {
            match call(token.clone()).await {
                Err(StreamableHttpError::AuthRequired(challenge)) => {
                    if rounds >= 2 {
                        return Err(AuthError::AuthorizationFailed(
                            "the server refused the token it was just given (HTTP 401); its \
                             authorization server and resource may not match"
                                .to_owned(),
                        )
                        .into());
                    }
                    rounds += 1;
                    let fresh = self
                        .oauth
                        .unauthorized(
                            &self.url,
                            &challenge.www_authenticate_header,
                            token.as_deref(),
                        )
                        .await?;
                    token = Some(fresh);
                }
                Err(StreamableHttpError::InsufficientScope(challenge)) => {
                    let max = self.oauth.inner.max_step_ups;
                    if step_ups >= max {
                        return Err(AuthError::AuthorizationFailed(format!(
                            "the server still refuses the token as of insufficient scope (HTTP \
                             403, needs {:?}) after {max} step-up(s); the account may not be \
                             allowed that scope (OAuth::with_max_step_ups sets the limit)",
                            challenge
                                .required_scope
                                .as_deref()
                                .unwrap_or("a wider scope")
                        ))
                        .into());
                    }
                    step_ups += 1;
                    let fresh = self
                        .oauth
                        .step_up(&self.url, &challenge.www_authenticate_header)
                        .await?;
                    token = Some(fresh);
                }
                other => return other,
            }
        }
    }
}

impl StreamableHttpClient for AuthorizedClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: std::collections::HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<StreamableHttpPostResponse> {
        self.with_token(|token| {
            self.inner.post_message(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: std::collections::HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> HttpResult<StreamableHttpPostResponse> {
        self.with_token(|token| {
            self.inner.post_message_with_max_sse_event_size(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: std::collections::HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> HttpResult<StreamableHttpPostResponse> {
        self.with_token(|token| {
            self.inner.post_message_with_response_limits(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                limits,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: std::collections::HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<()> {
        // Closing needs no new sign-in: the token held, or none.
        let token = self.oauth.current_token().await.ok().flatten();
        self.inner
            .delete_session(uri, session_id, token, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: std::collections::HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<BoxedSseResponse> {
        self.with_token(|token| {
            self.inner.get_stream(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: std::collections::HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> HttpResult<BoxedSseResponse> {
        self.with_token(|token| {
            self.inner.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callbacks_are_read_and_refusals_say_so() {
        let callback =
            OAuthCallback::from_redirect_url("http://127.0.0.1:9/callback?code=abc&state=xyz")
                .expect("a callback");
        assert_eq!(callback.code, "abc");
        assert_eq!(callback.state, "xyz");
        assert!(!format!("{callback:?}").contains("abc"));
        let refused = OAuthCallback::from_redirect_url(
            "http://127.0.0.1:9/callback?error=access_denied&state=xyz",
        )
        .expect_err("a refusal");
        assert!(refused.is_authorization());
        assert!(refused.message().contains("access_denied"));
        assert!(
            OAuthCallback::from_redirect_url("http://127.0.0.1:9/callback?state=xyz")
                .is_err_and(|e| e.is_authorization())
        );
    }

    #[test]
    fn stored_tokens_do_not_print() {
        let tokens = StoredTokens::from_json(r#"{"access_token":"secret-token"}"#);
        assert!(!format!("{tokens:?}").contains("secret-token"));
    }
}
