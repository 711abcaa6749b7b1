//! The `Llm` trait: the one seam between the agent loop and any model.

use std::sync::Arc;

use futures_core::Stream;
use futures_util::{StreamExt, stream};

use crate::agent::estimate_tokens;
use crate::content::Block;
use crate::cost::Prices;
use crate::error::Result;
use crate::hosted::HostedCall;
use crate::request::{OwnedRequest, Request};
use crate::response::CompletionResponse;

/// A boxed, `Send` stream, as the streaming methods return.
pub type BoxStream<'a, T> = std::pin::Pin<Box<dyn Stream<Item = T> + Send + 'a>>;

/// What a streaming model call yields: text and reasoning as they arrive, then the assembled
/// turn.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LlmEvent {
    /// A piece of the answer's text.
    TextDelta(String),
    /// A piece of the model's reasoning.
    ThinkingDelta(String),
    /// A call of a tool the vendor ran itself, with its result, once it is complete; the same
    /// call is also a [`Block::HostedCall`] of the completed turn.
    HostedCall(Box<HostedCall>),
    /// The whole turn, tool calls reassembled however the vendor fragmented them. Always
    /// last. Boxed so that the deltas, which are most of a stream, move as small values.
    Completed(Box<CompletionResponse>),
}

/// What a model is and what it can do, as [`Llm::info`] tells it.
///
/// ```
/// use harness_core::{ModelInfo, Prices, Supports};
///
/// let info = ModelInfo::new("openai", "gpt-4o-mini")
///     .with_context_window(128_000)
///     .with_supports(Supports::new().with_tools(true).with_structured_output(true))
///     .with_prices(Prices::per_million(0.15, 0.60).with_cache_read(0.075));
/// assert_eq!(info.name(), "openai:gpt-4o-mini");
/// assert!(info.supports.structured_output && !info.supports.reasoning);
/// assert!(info.prices.is_some());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModelInfo {
    /// Who serves the model, as this library names the provider: `openai`, `anthropic`,
    /// `groq`, ... (telemetry maps it to the OpenTelemetry GenAI name).
    pub provider: String,
    /// The model as the vendor names it: `gpt-4o-mini`.
    pub model: String,
    /// How many tokens the model reads and writes in one call, prompt and answer together,
    /// when known.
    pub context_window: Option<u64>,
    /// What the model can be asked for.
    pub supports: Supports,
    /// What the model charges, when known: what an agent prices its runs with
    /// ([`AgentState::cost`](crate::AgentState::cost)) and what a money budget
    /// ([`Budget::with_max_cost`](crate::Budget::with_max_cost)) needs.
    pub prices: Option<Prices>,
}

impl ModelInfo {
    /// A model `model` served by `provider`, its context window unknown, claiming no
    /// capability.
    pub fn new(provider: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            provider: provider.into(),
            model: model.into(),
            context_window: None,
            supports: Supports::default(),
            prices: None,
        }
    }

    /// Sets the context window, in tokens.
    #[must_use]
    pub fn with_context_window(mut self, tokens: u64) -> Self {
        self.context_window = Some(tokens);
        self
    }

    /// Sets what the model can be asked for.
    #[must_use]
    pub fn with_supports(mut self, supports: Supports) -> Self {
        self.supports = supports;
        self
    }

    /// Sets what the model charges.
    #[must_use]
    pub fn with_prices(mut self, prices: Prices) -> Self {
        self.prices = Some(prices);
        self
    }

    /// `provider:model`, the short name logs and errors use (and [`model_from_spec`]-style
    /// strings take).
    ///
    /// [`model_from_spec`]: https://docs.rs/deepharness-providers/latest/deepharness_providers/fn.model_from_spec.html
    pub fn name(&self) -> String {
        format!("{}:{}", self.provider, self.model)
    }
}

/// What a model can be asked for: part of its [`ModelInfo`]. What the provider can send
/// for the model; a given model may still refuse (not every model of a vendor sees
/// images).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[allow(clippy::struct_excessive_bools)] // independent capabilities, each a yes or a no
pub struct Supports {
    /// Tool calls.
    pub tools: bool,
    /// Images in the request.
    pub images: bool,
    /// Native structured output: the model can be held to a [`Request::output`] schema. An
    /// agent with a structured output sends the schema to such a model and reads its answer
    /// directly; any other is offered a `final_answer` tool instead.
    pub structured_output: bool,
    /// A reasoning level ([`ModelSettings::reasoning`](crate::ModelSettings::reasoning))
    /// and the model's reasoning in the answer.
    pub reasoning: bool,
}

impl Supports {
    /// Nothing claimed.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets whether tool calls are supported.
    #[must_use]
    pub fn with_tools(mut self, on: bool) -> Self {
        self.tools = on;
        self
    }

    /// Sets whether images are supported.
    #[must_use]
    pub fn with_images(mut self, on: bool) -> Self {
        self.images = on;
        self
    }

    /// Sets whether native structured output is supported.
    #[must_use]
    pub fn with_structured_output(mut self, on: bool) -> Self {
        self.structured_output = on;
        self
    }

    /// Sets whether reasoning is supported.
    #[must_use]
    pub fn with_reasoning(mut self, on: bool) -> Self {
        self.reasoning = on;
        self
    }
}

/// How many tokens a request's prompt holds, as [`Llm::count_tokens`] tells it: counted by
/// the vendor (or its published tokenizer), or estimated.
///
/// ```
/// use harness_core::{Message, Request, TokenCount};
///
/// let messages = [Message::user("What is the capital of France?")]; // 30 characters
/// let count = TokenCount::estimate(&Request::new(&messages));
/// assert_eq!(count, TokenCount::estimated(7));
/// assert!(!count.exact);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct TokenCount {
    /// The prompt's tokens: the messages, the system prompt, the tools and the output
    /// schema, as the model would read them.
    pub tokens: u64,
    /// True when the vendor counted them (its counting endpoint, or its own tokenizer over
    /// exactly what is sent); false for an estimate.
    pub exact: bool,
}

impl TokenCount {
    /// `tokens`, counted exactly.
    pub fn counted(tokens: u64) -> Self {
        Self {
            tokens,
            exact: true,
        }
    }

    /// `tokens`, estimated.
    pub fn estimated(tokens: u64) -> Self {
        Self {
            tokens,
            exact: false,
        }
    }

    /// The estimate for a model that cannot count: about four characters a token. The
    /// messages count as [`estimate_tokens`] has it (each message's text, its blocks as
    /// JSON, each tool call's name and arguments, divided by four, rounded down), and the
    /// tools (each name, description and parameter schema as JSON) and the output schema add
    /// a quarter of their characters, rounded up. Images and documents count as their JSON,
    /// base64 data included, so a request with them is overestimated; a prose prompt in
    /// English is usually within a fifth of a vendor's count.
    pub fn estimate(request: &Request<'_>) -> Self {
        let json_chars = |value: &serde_json::Value| {
            serde_json::to_string(value).map_or(0, |s| s.chars().count())
        };
        let tools: usize = request
            .tools
            .iter()
            .map(|tool| {
                tool.name.chars().count()
                    + tool.description.chars().count()
                    + json_chars(&tool.parameters)
            })
            .sum();
        let schema = request
            .output
            .map_or(0, |output| json_chars(&output.schema));
        let tokens = estimate_tokens(request.messages) + (tools + schema).div_ceil(4);
        Self::estimated(u64::try_from(tokens).unwrap_or(u64::MAX))
    }
}

/// A model: anything that turns a [`Request`] (the transcript, the tools, the settings) into
/// a completion.
///
/// Four methods. [`generate`](Llm::generate) is the one required. [`stream`](Llm::stream)
/// has a default that replays one `generate` result as one delta per block and then
/// [`LlmEvent::Completed`], so a backend that cannot stream still works everywhere.
/// [`info`](Llm::info) says what the model is (`custom:llm` and no capability by default).
/// [`count_tokens`](Llm::count_tokens) says how many tokens a request would be (an estimate
/// by default).
/// The request is one `#[non_exhaustive]` value, so what a request can say grows without
/// breaking an implementor.
///
/// The trait is object-safe, so `Arc<dyn Llm>` is how a model is shared between agents
/// (and `Arc<dyn Llm>` is itself an `Llm`). A wrapper (a fallback, a cache) implements all
/// four methods, each in terms of the model it wraps.
///
/// ```
/// use harness_core::{async_trait, CompletionResponse, Llm, Message, ModelInfo, Request, Result};
///
/// /// Answers every question with the length of the last message.
/// struct Counter;
///
/// #[async_trait]
/// impl Llm for Counter {
///     async fn generate(&self, request: Request<'_>) -> Result<CompletionResponse> {
///         let last = request.messages.last().map(|m| m.text().chars().count()).unwrap_or(0);
///         Ok(CompletionResponse::text(last.to_string()))
///     }
///
///     fn info(&self) -> ModelInfo {
///         ModelInfo::new("local", "counter")
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let model: std::sync::Arc<dyn Llm> = std::sync::Arc::new(Counter);
/// let reply = model.generate(Request::new(&[Message::user("four")])).await?;
/// assert_eq!(reply.content(), "4");
/// assert_eq!(model.info().name(), "local:counter");
/// # Ok::<(), harness_core::Error>(())
/// # }).unwrap();
/// ```
#[async_trait::async_trait]
pub trait Llm: Send + Sync + 'static {
    /// Asks the model for one turn.
    async fn generate(&self, request: Request<'_>) -> Result<CompletionResponse>;

    /// Asks for one turn as a stream of events ending in [`LlmEvent::Completed`]. The
    /// stream owns what it reads with: the request is read when the call is made, and the
    /// model is kept alive by the `Arc`, so the stream can be handed to another task or
    /// polled after the request's buffers are gone.
    ///
    /// The default copies the request and replays one [`generate`](Llm::generate) result:
    /// a [`LlmEvent::ThinkingDelta`] or [`LlmEvent::TextDelta`] per non-empty block and a
    /// [`LlmEvent::HostedCall`] per hosted call, in order, then `Completed` (a turn of tool calls alone is just `Completed`). A model that
    /// can stream implements it.
    fn stream(self: Arc<Self>, request: Request<'_>) -> BoxStream<'static, Result<LlmEvent>> {
        let request = OwnedRequest::from(request);
        Box::pin(
            stream::once(async move { self.generate(request.as_request()).await })
                .flat_map(|result| stream::iter(replay(result))),
        )
    }

    /// What the model is: its provider and name, its context window, what it supports,
    /// what it charges.
    fn info(&self) -> ModelInfo {
        ModelInfo::new("custom", "llm")
    }

    /// How many tokens `request`'s prompt would be, without asking for an answer: exact
    /// where the vendor has a counting endpoint (Anthropic, Gemini) or a published tokenizer
    /// (OpenAI's, with the providers' `tokenizer` feature). The default is
    /// [`TokenCount::estimate`].
    async fn count_tokens(&self, request: Request<'_>) -> Result<TokenCount> {
        Ok(TokenCount::estimate(&request))
    }
}

/// One finished turn as the events a stream of it would have given.
pub fn replay(result: Result<CompletionResponse>) -> Vec<Result<LlmEvent>> {
    match result {
        Err(e) => vec![Err(e)],
        Ok(response) => {
            let mut events: Vec<Result<LlmEvent>> = response
                .blocks()
                .iter()
                .filter_map(|block| match block {
                    Block::Text(t) if !t.text.is_empty() => {
                        Some(Ok(LlmEvent::TextDelta(t.text.clone())))
                    }
                    Block::Thinking(t) if !t.text.is_empty() => {
                        Some(Ok(LlmEvent::ThinkingDelta(t.text.clone())))
                    }
                    Block::HostedCall(call) => Some(Ok(LlmEvent::HostedCall(call.clone()))),
                    _ => None,
                })
                .collect();
            events.push(Ok(LlmEvent::Completed(Box::new(response))));
            events
        }
    }
}

/// A shared model is a model: what `model_from_env` returns can be handed to anything that
/// takes an `impl Llm`.
#[async_trait::async_trait]
impl<T: Llm + ?Sized> Llm for Arc<T> {
    async fn generate(&self, request: Request<'_>) -> Result<CompletionResponse> {
        (**self).generate(request).await
    }

    fn stream(self: Arc<Self>, request: Request<'_>) -> BoxStream<'static, Result<LlmEvent>> {
        Arc::clone(&*self).stream(request)
    }

    fn info(&self) -> ModelInfo {
        (**self).info()
    }

    async fn count_tokens(&self, request: Request<'_>) -> Result<TokenCount> {
        (**self).count_tokens(request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::Thinking;
    use crate::error::Error;
    use crate::message::ToolCall;
    use futures_util::TryStreamExt;
    use serde_json::json;

    struct Fixed(CompletionResponse);

    #[async_trait::async_trait]
    impl Llm for Fixed {
        async fn generate(&self, _: Request<'_>) -> Result<CompletionResponse> {
            Ok(self.0.clone())
        }
    }

    struct Failing;

    #[async_trait::async_trait]
    impl Llm for Failing {
        async fn generate(&self, _: Request<'_>) -> Result<CompletionResponse> {
            Err(Error::configuration("boom"))
        }
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a current-thread runtime")
            .block_on(f)
    }

    #[test]
    fn default_stream_replays_each_non_empty_block_then_completed() {
        let response = CompletionResponse::from_blocks(vec![
            Thinking::new("plan").into(),
            Block::text("Hel"),
            Thinking::new("").into(),
        ]);
        let model: Arc<dyn Llm> = Arc::new(Fixed(response.clone()));
        let messages = [crate::message::Message::user("hi")];
        let stream = Arc::clone(&model).stream(Request::new(&messages));
        // The stream owns its request: the transcript it was made from is gone.
        drop(messages);
        let events: Vec<LlmEvent> = block_on(stream.try_collect()).unwrap_or_default();
        assert_eq!(
            events,
            vec![
                LlmEvent::ThinkingDelta("plan".into()),
                LlmEvent::TextDelta("Hel".into()),
                LlmEvent::Completed(Box::new(response)),
            ]
        );
    }

    #[test]
    fn a_tool_call_only_turn_streams_as_just_completed() {
        let response = CompletionResponse::default()
            .with_tool_calls(vec![ToolCall::new("f", json!({})).with_id("1")]);
        // Through the shared model's own impl, as `model_from_env` hands one out.
        let model: Arc<Arc<dyn Llm>> = Arc::new(Arc::new(Fixed(response.clone())));
        let events: Vec<LlmEvent> =
            block_on(model.stream(Request::new(&[])).try_collect()).unwrap_or_default();
        assert_eq!(events, vec![LlmEvent::Completed(Box::new(response))]);
    }

    struct Counting;

    #[async_trait::async_trait]
    impl Llm for Counting {
        async fn generate(&self, _: Request<'_>) -> Result<CompletionResponse> {
            Ok(CompletionResponse::default())
        }

        async fn count_tokens(&self, request: Request<'_>) -> Result<TokenCount> {
            Ok(TokenCount::counted(request.messages.len() as u64 * 100))
        }
    }

    #[test]
    fn counting_forwards_through_a_shared_model_and_defaults_to_the_estimate() {
        let messages = [crate::message::Message::user("x".repeat(40))];
        let shared: Arc<dyn Llm> = Arc::new(Counting);
        let count = block_on(shared.count_tokens(Request::new(&messages)));
        assert_eq!(count.ok(), Some(TokenCount::counted(100)));
        // The default: 40 characters of message (10), a tool of 4 + 8 + 17 characters (8).
        let tools = [Arc::new(crate::tool::ToolSpec::new(
            "echo",
            "Echo it.",
            json!({"type": "object"}),
        ))];
        let request = Request::new(&messages).with_tools(&tools);
        let estimate = block_on(Fixed(CompletionResponse::default()).count_tokens(request));
        assert_eq!(estimate.ok(), Some(TokenCount::estimated(10 + 8)));
    }

    #[test]
    fn a_failure_streams_as_one_error() {
        let events: Vec<Result<LlmEvent>> =
            block_on(Arc::new(Failing).stream(Request::new(&[])).collect());
        assert_eq!(events.len(), 1);
        assert!(events[0].as_ref().is_err_and(Error::is_configuration));
        assert_eq!(Failing.info().name(), "custom:llm");
    }
}
