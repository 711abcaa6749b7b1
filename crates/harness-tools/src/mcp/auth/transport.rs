//! The transport's HTTP client, with tokens: each request carries the token held, a 401 or a 403 `insufficient_scope` is answered and the request sent again.

#[allow(clippy::wildcard_imports)]
use super::*;

pub(super) type HttpResult<T> = Result<T, StreamableHttpError<reqwest::Error>>;

/// The streamable HTTP transport's client with OAuth: each request carries the token held,
/// and a 401 or a 403 `insufficient_scope` is answered by authorizing and sending it again.
#[derive(Clone)]
pub(crate) struct AuthorizedClient {
    pub(super) inner: reqwest::Client,
    pub(super) oauth: OAuth,
    pub(super) url: Arc<str>,
}

impl AuthorizedClient {
    pub(super) async fn with_token<T, F, Fut>(&self, call: F) -> HttpResult<T>
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

// Every `post_message*` variant is forwarded: the trait's defaults fall back to the next
// simpler variant and drop its limits, while the inner reqwest client honours them (the
// bound on one SSE event and on a response).
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
