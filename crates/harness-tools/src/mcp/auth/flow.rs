//! The authorization itself: discovery, registration, the grants, refresh and step-up.

#[allow(clippy::wildcard_imports)]
use super::*;

/// An [`McpError`] of kind [`McpErrorKind::Authorization`].
pub(super) fn authorization(message: impl Into<String>) -> McpError {
    McpError::with_kind(McpErrorKind::Authorization, message)
}

/// An OAuth failure as the transport reports it (rmcp's `AuthError`, found again by
/// [`McpError`]'s conversions), saying which step failed and what to do.
pub(super) fn failed(step: &str, error: &AuthError) -> AuthError {
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

pub(super) fn failed_with(step: &str, error: &McpError) -> AuthError {
    AuthError::AuthorizationFailed(format!("{step}: {}", error.message()))
}

/// The client credentials exchange.
#[cfg(not(feature = "mcp-auth-jwt"))]
pub(super) async fn exchange(
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
pub(super) async fn exchange(
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
pub(super) async fn legacy_root_metadata(url: &str) -> Option<AuthorizationMetadata> {
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
    pub(super) async fn manager(&self, url: &str) -> Result<AuthorizationManager, AuthError> {
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
    pub(super) async fn authorize(
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

    pub(super) async fn exchange_client_credentials(
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
    pub(super) async fn enterprise_exchange(
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

    pub(super) async fn authorization_code(
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
    pub(super) async fn current_token(&self) -> Result<Option<String>, AuthError> {
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
    pub(super) async fn unauthorized(
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
    pub(super) async fn step_up(&self, url: &str, challenge: &str) -> Result<String, AuthError> {
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
