//! Authentication worked out per attempt: what request signing (AWS SigV4) and bearer
//! tokens that expire (Microsoft Entra ID, Google Application Default Credentials) need, where
//! a fixed header ([`HttpConfig::headers`](super::HttpConfig::headers)) is not enough.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use harness_core::Result;

/// A request about to be sent, as an [`Authenticate`] hook sees it: its method, its absolute
/// URL, the headers it carries (`content-type` and [`HttpConfig::headers`](super::HttpConfig::headers);
/// names as configured) and the exact bytes of its body.
#[derive(Debug, Clone, Copy)]
pub struct Outgoing<'a> {
    method: &'a str,
    url: &'a str,
    headers: &'a [(String, String)],
    body: &'a [u8],
}

impl<'a> Outgoing<'a> {
    /// A request to show a hook: for testing a hook of your own.
    pub fn new(
        method: &'a str,
        url: &'a str,
        headers: &'a [(String, String)],
        body: &'a [u8],
    ) -> Self {
        Self {
            method,
            url,
            headers,
            body,
        }
    }

    /// The HTTP method (`POST`).
    pub fn method(&self) -> &'a str {
        self.method
    }

    /// The absolute URL, as sent (percent-encoding included).
    pub fn url(&self) -> &'a str {
        self.url
    }

    /// The headers the request carries before the hook's are added.
    pub fn headers(&self) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        self.headers.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The body, byte for byte as sent.
    pub fn body(&self) -> &'a [u8] {
        self.body
    }
}

/// A hook that adds headers to every attempt of a request, retries included: set it as
/// [`HttpConfig::auth`](super::HttpConfig::auth).
///
/// It runs once per attempt, right before the attempt is sent, so a signature (which
/// carries a timestamp) is made afresh for a retry and a token that expired meanwhile is
/// refreshed. The headers it returns are added to the request's (a name it returns replaces
/// the same name in [`HttpConfig::headers`](super::HttpConfig::headers)); `authorization`
/// and names with `key` or `token` in them are kept out of debug output.
///
/// An error ends the request at once, unretried: a
/// [`Configuration`](harness_core::ErrorKind::Configuration) error when credentials are
/// missing (say which variables, files or profiles were looked at), a
/// [`Provider`](harness_core::ErrorKind::Provider) error when a token endpoint failed. A
/// source that talks to a token endpoint retries on its own terms.
///
/// For the common case, a bearer token from a source that refreshes it, see [`BearerToken`].
#[async_trait::async_trait]
pub trait Authenticate: Send + Sync + fmt::Debug {
    /// The headers to add to `request`.
    ///
    /// # Errors
    /// As the trait says: missing credentials, a failed token endpoint.
    async fn authenticate(&self, request: &Outgoing<'_>) -> Result<Vec<(String, String)>>;
}

/// Where bearer tokens come from: an identity library's credential, a token file, a local
/// token endpoint. Asked on every attempt; it caches its token and refreshes it before it
/// expires as it sees fit (the identity crates' credentials do).
#[async_trait::async_trait]
pub trait TokenSource: Send + Sync + fmt::Debug {
    /// A token valid now, without the `Bearer ` prefix.
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error for missing
    /// credentials, a [`Provider`](harness_core::ErrorKind::Provider) error for a token
    /// endpoint that failed.
    async fn token(&self) -> Result<String>;
}

/// `Authorization: Bearer <token>` on every attempt, the token from a [`TokenSource`] or a
/// function.
///
/// ```
/// use harness_providers::rest::{BearerToken, HttpConfig};
///
/// let mut config = HttpConfig::new("my-cloud", "https://llm.example.com/v1");
/// config.auth = Some(std::sync::Arc::new(BearerToken::from_fn(|| async {
///     // Ask your identity library here; it caches and refreshes the token.
///     Ok("token-valid-now".to_owned())
/// })));
/// ```
#[derive(Clone)]
pub struct BearerToken {
    source: Arc<dyn TokenSource>,
}

impl BearerToken {
    /// Tokens from `source`.
    pub fn new(source: impl TokenSource + 'static) -> Self {
        Self {
            source: Arc::new(source),
        }
    }

    /// Tokens from an async function, called on every attempt.
    pub fn from_fn<F, Fut>(token: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String>> + Send + 'static,
    {
        Self::new(FnSource(token))
    }
}

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BearerToken")
            .field("source", &self.source)
            .finish()
    }
}

#[async_trait::async_trait]
impl Authenticate for BearerToken {
    async fn authenticate(&self, _request: &Outgoing<'_>) -> Result<Vec<(String, String)>> {
        let token = self.source.token().await?;
        Ok(vec![(
            "authorization".to_owned(),
            format!("Bearer {token}"),
        )])
    }
}

/// A function as a [`TokenSource`].
struct FnSource<F>(F);

impl<F> fmt::Debug for FnSource<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FnSource(..)")
    }
}

#[async_trait::async_trait]
impl<F, Fut> TokenSource for FnSource<F>
where
    F: Fn() -> Fut + Send + Sync,
    Fut: Future<Output = Result<String>> + Send + 'static,
{
    async fn token(&self) -> Result<String> {
        (self.0)().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_bearer_token_is_asked_for_on_every_call() {
        let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = Arc::clone(&calls);
        let bearer = BearerToken::from_fn(move || {
            let n = counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async move { Ok(format!("t{n}")) }
        });
        let request = Outgoing::new("POST", "https://example.test/x", &[], b"{}");
        for expected in ["Bearer t0", "Bearer t1"] {
            let headers = bearer.authenticate(&request).await.unwrap();
            assert_eq!(headers, [("authorization".to_owned(), expected.to_owned())]);
        }
        assert!(format!("{bearer:?}").contains("FnSource"));
    }
}
