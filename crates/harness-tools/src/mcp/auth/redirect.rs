//! Redirect handlers: where the browser goes, and how the code comes back.

#[allow(clippy::wildcard_imports)]
use super::*;

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
    /// server's timeout ([`McpServer::with_timeout`](crate::mcp::McpServer::with_timeout)) also
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

    pub(super) async fn port(&self) -> Result<u16, McpError> {
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
pub(super) async fn read_request_target(stream: &mut tokio::net::TcpStream) -> Option<String> {
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
        let client = harness_providers::rest::client_builder()
            .map_err(|e| McpError::transport(e.to_string()))?
            .redirect(reqwest::redirect::Policy::none())
            .timeout(OAUTH_HTTP_TIMEOUT)
            .build()
            .map_err(|e| McpError::transport(format!("cannot build the HTTP client: {e}")))?;
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
