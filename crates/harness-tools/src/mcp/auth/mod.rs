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

mod flow;
mod oauth_http;
mod redirect;
mod store;
mod transport;

#[allow(clippy::wildcard_imports)]
use flow::*;
#[allow(clippy::wildcard_imports)]
use oauth_http::*;
pub use redirect::*;
pub use store::*;
pub(crate) use transport::*;

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
/// # async fn demo() -> harness_core::Result<()> {
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
