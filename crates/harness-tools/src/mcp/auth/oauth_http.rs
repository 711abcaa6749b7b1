//! HTTP for the OAuth requests: this crate's rustls client.

#[allow(clippy::wildcard_imports)]
use super::*;

/// Discovery, registration and token requests over this crate's reqwest client: one
/// client that follows redirects (discovery) and one that does not (token requests).
pub(super) struct OAuthHttp {
    pub(super) follow: reqwest::Client,
    pub(super) stop: reqwest::Client,
}

impl OAuthHttp {
    pub(super) fn new() -> Result<Self, McpError> {
        let build = |policy: reqwest::redirect::Policy| {
            harness_providers::rest::client_builder()
                .map_err(|e| McpError::transport(e.to_string()))?
                .redirect(policy)
                .connect_timeout(Duration::from_secs(10))
                .timeout(OAUTH_HTTP_TIMEOUT)
                .build()
                .map_err(|e| McpError::transport(format!("cannot build the HTTP client: {e}")))
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
