//! `Retrying`: asks again when a turn comes back empty.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use harness_core::{
    BoxStream, CompletionResponse, Llm, LlmEvent, ModelInfo, OwnedRequest, Request, Result,
    TokenCount,
};

/// Re-asks when a turn has no text and no tool calls, up to `retries` times, waiting
/// `backoff · k` before the k-th retry. Transport failures are the HTTP client's business;
/// this is for models that sometimes answer nothing. A stream is retried only while it has
/// handed out nothing. Build it with [`LlmExt::retrying`](crate::LlmExt::retrying).
pub struct Retrying<M> {
    inner: Arc<M>,
    attempts: u32,
    backoff: Duration,
}

fn is_empty(response: &CompletionResponse) -> bool {
    response.content().trim().is_empty() && response.tool_calls().is_empty()
}

impl<M: Llm> Retrying<M> {
    /// Up to `retries` more calls after an empty turn (0: none), the first half a second
    /// after it.
    pub fn new(inner: M, retries: u32) -> Self {
        Self {
            inner: Arc::new(inner),
            attempts: retries.saturating_add(1),
            backoff: Duration::from_millis(500),
        }
    }

    /// Sets the wait before the first retry; the k-th waits k times this.
    #[must_use]
    pub fn with_backoff(mut self, backoff: Duration) -> Self {
        self.backoff = backoff;
        self
    }

    /// How many times an empty turn is asked again.
    pub fn retries(&self) -> u32 {
        self.attempts - 1
    }

    /// The wait before the first retry.
    pub fn backoff(&self) -> Duration {
        self.backoff
    }

    /// The model underneath.
    pub fn inner(&self) -> &M {
        &self.inner
    }

    async fn pause(&self, retry: u32) {
        if !self.backoff.is_zero() {
            tokio::time::sleep(self.backoff.saturating_mul(retry)).await;
        }
    }
}

#[async_trait::async_trait]
impl<M: Llm> Llm for Retrying<M> {
    async fn generate(&self, request: Request<'_>) -> Result<CompletionResponse> {
        let mut response = self.inner.generate(request).await?;
        let mut calls = 1;
        while is_empty(&response) && calls < self.attempts {
            self.pause(calls).await;
            response = self.inner.generate(request).await?;
            calls += 1;
        }
        Ok(response)
    }

    /// The request is kept (copied) so an empty turn can be asked again.
    fn stream(self: Arc<Self>, request: Request<'_>) -> BoxStream<'static, Result<LlmEvent>> {
        struct State<M> {
            this: Arc<Retrying<M>>,
            request: OwnedRequest,
            calls: u32,
            emitted: bool,
            current: Option<BoxStream<'static, Result<LlmEvent>>>,
        }
        let start = State {
            this: self,
            request: OwnedRequest::from(request),
            calls: 0,
            emitted: false,
            current: None,
        };
        Box::pin(futures_util::stream::unfold(
            start,
            |mut state| async move {
                loop {
                    let stream = match &mut state.current {
                        Some(stream) => stream,
                        None => {
                            if state.calls > 0 {
                                state.this.pause(state.calls).await;
                            }
                            state.calls += 1;
                            let asked =
                                Arc::clone(&state.this.inner).stream(state.request.as_request());
                            state.current.insert(asked)
                        }
                    };
                    match stream.next().await {
                        Some(Ok(LlmEvent::Completed(response)))
                            if !state.emitted
                                && is_empty(&response)
                                && state.calls < state.this.attempts =>
                        {
                            state.current = None;
                        }
                        Some(Ok(LlmEvent::Completed(response))) => {
                            state.current = Some(Box::pin(futures_util::stream::empty()));
                            return Some((Ok(LlmEvent::Completed(response)), state));
                        }
                        Some(item) => {
                            state.emitted = true;
                            return Some((item, state));
                        }
                        None => return None,
                    }
                }
            },
        ))
    }

    /// The model underneath's.
    fn info(&self) -> ModelInfo {
        self.inner.info()
    }

    /// The model underneath's count.
    async fn count_tokens(&self, request: Request<'_>) -> Result<TokenCount> {
        self.inner.count_tokens(request).await
    }
}
