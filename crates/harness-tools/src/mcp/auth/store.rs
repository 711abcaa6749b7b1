//! Token stores: where tokens are kept between runs.

#[allow(clippy::wildcard_imports)]
use super::*;

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
pub(super) struct StoreAdapter(pub(super) Arc<dyn TokenStore>);

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
