//! `Fallback`: the next model when one fails.

use std::sync::Arc;

use futures_util::StreamExt as _;
use harness_core::{
    BoxStream, CompletionResponse, Error, Llm, LlmEvent, ModelInfo, OwnedRequest, ProviderError,
    Request, Result, TokenCount,
};

type Predicate = dyn Fn(&Error) -> bool + Send + Sync;

/// Tries each model in order, moving on only for the errors it is told to (provider errors by
/// default, so a bug in your own code is not mistaken for a flaky vendor).
///
/// A stream that fails before its first event falls through to the next model; one that
/// fails after it has handed out text ends with that error, since the text cannot be taken
/// back.
///
/// ```
/// use harness_core::testing::{ScriptedModel, TestModel};
/// use harness_providers::LlmExt as _;
///
/// let model = ScriptedModel::new([])
///     .with_fallback(TestModel::new())
///     .with_fallback(TestModel::new().with_text("last resort"));
/// assert_eq!(model.models().len(), 3);
/// ```
#[derive(Clone)]
pub struct Fallback {
    models: Vec<Arc<dyn Llm>>,
    on: Arc<Predicate>,
}

impl std::fmt::Debug for Fallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self.models.iter().map(|m| m.info().name()).collect();
        f.debug_struct("Fallback")
            .field("models", &names)
            .finish_non_exhaustive()
    }
}

impl Fallback {
    /// `primary`, then `fallback`.
    pub fn new(primary: impl Llm + 'static, fallback: impl Llm + 'static) -> Self {
        Self {
            models: vec![Arc::new(primary), Arc::new(fallback)],
            on: Arc::new(Error::is_provider),
        }
    }

    /// Adds `next` at the end of the chain (on a `Fallback` this extends the chain rather
    /// than nesting it, as [`LlmExt::with_fallback`](crate::LlmExt::with_fallback) would).
    #[must_use]
    pub fn with_fallback(mut self, next: impl Llm + 'static) -> Self {
        self.models.push(Arc::new(next));
        self
    }

    /// Falls back on the errors `on` accepts instead of provider errors alone.
    #[must_use]
    pub fn with_condition(mut self, on: impl Fn(&Error) -> bool + Send + Sync + 'static) -> Self {
        self.on = Arc::new(on);
        self
    }

    /// The models, in the order they are tried.
    pub fn models(&self) -> &[Arc<dyn Llm>] {
        &self.models
    }

    /// The first model.
    pub fn inner(&self) -> &Arc<dyn Llm> {
        &self.models[0]
    }

    fn exhausted(&self, last: &Error) -> Error {
        ProviderError::new(
            "fallback",
            format!(
                "all {} providers failed; last error: {last}",
                self.models.len()
            ),
        )
        .into()
    }
}

#[async_trait::async_trait]
impl Llm for Fallback {
    async fn generate(&self, request: Request<'_>) -> Result<CompletionResponse> {
        let mut last = None;
        for model in &self.models {
            match model.generate(request).await {
                Ok(response) => return Ok(response),
                Err(e) if (self.on)(&e) => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.map_or_else(
            || Error::configuration("Fallback has no models"),
            |e| self.exhausted(&e),
        ))
    }

    /// The request is kept (copied), for the next model when one fails.
    fn stream(self: Arc<Self>, request: Request<'_>) -> BoxStream<'static, Result<LlmEvent>> {
        struct State {
            this: Arc<Fallback>,
            request: OwnedRequest,
            next: usize,
            current: Option<BoxStream<'static, Result<LlmEvent>>>,
            emitted: bool,
            done: bool,
        }
        let start = State {
            this: self,
            request: OwnedRequest::from(request),
            next: 0,
            current: None,
            emitted: false,
            done: false,
        };
        Box::pin(futures_util::stream::unfold(
            start,
            |mut state| async move {
                loop {
                    if state.done {
                        return None;
                    }
                    let stream = match &mut state.current {
                        Some(stream) => stream,
                        None => {
                            let model = Arc::clone(&state.this.models[state.next]);
                            state.next += 1;
                            state
                                .current
                                .insert(model.stream(state.request.as_request()))
                        }
                    };
                    match stream.next().await {
                        Some(Ok(event)) => {
                            state.emitted = true;
                            return Some((Ok(event), state));
                        }
                        Some(Err(e)) if !state.emitted && (state.this.on)(&e) => {
                            if state.next < state.this.models.len() {
                                state.current = None;
                                continue;
                            }
                            state.done = true;
                            let error = state.this.exhausted(&e);
                            return Some((Err(error), state));
                        }
                        Some(Err(e)) => {
                            state.done = true;
                            return Some((Err(e), state));
                        }
                        None => return None,
                    }
                }
            },
        ))
    }

    /// The first model's, holding it to an output schema only when every model of the
    /// chain takes one natively (the request is the same for whichever answers), and
    /// claiming what every model supports. Its prices are each the highest of the chain's,
    /// so a run is never priced under what it may have cost whichever model answered (a
    /// money budget stays a bound); with any model unpriced, none (a money budget then fails
    /// closed: give that model prices).
    fn info(&self) -> ModelInfo {
        let mut info = self.models[0].info();
        for model in &self.models[1..] {
            let other = model.info();
            let supports = &mut info.supports;
            supports.tools &= other.supports.tools;
            supports.images &= other.supports.images;
            supports.structured_output &= other.supports.structured_output;
            supports.reasoning &= other.supports.reasoning;
            info.prices = match (info.prices, other.prices) {
                (Some(mut prices), Some(other)) => {
                    prices.input = prices.input.max(other.input);
                    prices.output = prices.output.max(other.output);
                    prices.cache_read = prices.cache_read.max(other.cache_read);
                    prices.cache_write = prices.cache_write.max(other.cache_write);
                    Some(prices)
                }
                _ => None,
            };
        }
        info
    }

    /// The first model's count: the model that answers unless it fails.
    async fn count_tokens(&self, request: Request<'_>) -> Result<TokenCount> {
        self.models[0].count_tokens(request).await
    }
}
