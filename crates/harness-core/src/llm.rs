//! The `Llm` trait: the one seam between the agent loop and any model.

use std::sync::Arc;

use futures_core::Stream;
use futures_util::{StreamExt, stream};

use crate::content::Block;
use crate::error::Result;
use crate::request::Request;
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
    /// The whole turn, tool calls reassembled however the vendor fragmented them. Always
    /// last. Boxed so that the deltas, which are most of a stream, move as small values.
    Completed(Box<CompletionResponse>),
}

/// A model: anything that turns a [`Request`] (the transcript, the tools, the settings) into
/// a completion.
///
/// [`generate`](Llm::generate) is the one required method. The streaming methods have
/// defaults: a backend that cannot stream still works everywhere, its one result replayed
/// as one delta per block and then [`LlmEvent::Completed`]. The request is one
/// `#[non_exhaustive]` value, so what a request can say grows without breaking an
/// implementor.
///
/// The trait is object-safe, so `Arc<dyn Llm>` is how a model is shared between agents.
///
/// ```
/// use harness_core::{async_trait, CompletionResponse, Llm, Message, Request, Result};
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
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let model: std::sync::Arc<dyn Llm> = std::sync::Arc::new(Counter);
/// let reply = model.generate(Request::new(&[Message::user("four")])).await?;
/// assert_eq!(reply.content(), "4");
/// # Ok::<(), harness_core::Error>(())
/// # }).unwrap();
/// ```
#[async_trait::async_trait]
pub trait Llm: Send + Sync {
    /// Asks the model for one turn.
    async fn generate(&self, request: Request<'_>) -> Result<CompletionResponse>;

    /// Asks for one turn as a stream of events ending in [`LlmEvent::Completed`].
    ///
    /// The default calls [`generate`](Llm::generate) and replays the result: a
    /// [`LlmEvent::ThinkingDelta`] or [`LlmEvent::TextDelta`] per non-empty block, in order,
    /// then `Completed`. A turn of tool calls alone is just `Completed`.
    fn stream_events<'a>(&'a self, request: Request<'a>) -> BoxStream<'a, Result<LlmEvent>> {
        Box::pin(
            stream::once(self.generate(request)).flat_map(|result| stream::iter(replay(result))),
        )
    }

    /// [`stream_events`](Llm::stream_events) as a stream that owns what it reads with (the
    /// request is read when the call is made), so it borrows neither `self` nor the request;
    /// `None`, the default, for a model whose stream borrows them.
    ///
    /// An agent watched through [`Agent::stream_events`](crate::Agent::stream_events) reads
    /// an owned stream itself, the watcher's poll reaching the model's stream with no channel
    /// between them for each event; it reads other models through its loop. The REST
    /// providers return one. The events must be those `stream_events` would yield.
    fn stream_events_owned(
        &self,
        request: Request<'_>,
    ) -> Option<BoxStream<'static, Result<LlmEvent>>> {
        let _ = request;
        None
    }

    /// The answer's text as it arrives; reasoning and the assembled turn are filtered out.
    fn stream<'a>(&'a self, request: Request<'a>) -> BoxStream<'a, Result<String>> {
        Box::pin(self.stream_events(request).filter_map(|event| async move {
            match event {
                Ok(LlmEvent::TextDelta(text)) => Some(Ok(text)),
                Ok(_) => None,
                Err(e) => Some(Err(e)),
            }
        }))
    }

    /// A short name for logs and error messages, such as `openai:gpt-4o-mini`.
    fn name(&self) -> String {
        "llm".to_owned()
    }

    /// Who serves the model (`openai`, `anthropic`, `groq`, ...), for telemetry: by default
    /// what comes before `:` in [`Llm::name`]. A wrapper answers for the model it wraps.
    fn provider_name(&self) -> String {
        let name = self.name();
        name.split_once(':')
            .map_or_else(|| name.clone(), |(provider, _)| provider.to_owned())
    }

    /// The model as the vendor names it (`gpt-4o-mini`), for telemetry: by default what
    /// follows `:` in [`Llm::name`]. A wrapper answers for the model it wraps.
    fn model_id(&self) -> String {
        let name = self.name();
        name.split_once(':')
            .map_or_else(|| name.clone(), |(_, model)| model.to_owned())
    }

    /// Whether the model can be held to a [`Request::output`] schema natively. An agent
    /// with a structured output sends the schema to such a model and reads its answer
    /// directly; to any other it offers a `final_answer` tool instead. Default `false`.
    fn native_output(&self) -> bool {
        false
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
                    _ => None,
                })
                .collect();
            events.push(Ok(LlmEvent::Completed(Box::new(response))));
            events
        }
    }
}

macro_rules! forward_llm {
    ($($ty:ty),*) => {$(
        #[async_trait::async_trait]
        impl<T: Llm + ?Sized> Llm for $ty {
            async fn generate(&self, request: Request<'_>) -> Result<CompletionResponse> {
                (**self).generate(request).await
            }

            fn stream_events<'a>(
                &'a self,
                request: Request<'a>,
            ) -> BoxStream<'a, Result<LlmEvent>> {
                (**self).stream_events(request)
            }

            fn stream_events_owned(
                &self,
                request: Request<'_>,
            ) -> Option<BoxStream<'static, Result<LlmEvent>>> {
                (**self).stream_events_owned(request)
            }

            fn stream<'a>(&'a self, request: Request<'a>) -> BoxStream<'a, Result<String>> {
                (**self).stream(request)
            }

            fn name(&self) -> String {
                (**self).name()
            }

            fn provider_name(&self) -> String {
                (**self).provider_name()
            }

            fn model_id(&self) -> String {
                (**self).model_id()
            }

            fn native_output(&self) -> bool {
                (**self).native_output()
            }
        }
    )*};
}

forward_llm!(Arc<T>, Box<T>, &T);

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
        let events: Vec<LlmEvent> =
            block_on(model.stream_events(Request::new(&[])).try_collect()).unwrap_or_default();
        assert_eq!(
            events,
            vec![
                LlmEvent::ThinkingDelta("plan".into()),
                LlmEvent::TextDelta("Hel".into()),
                LlmEvent::Completed(Box::new(response)),
            ]
        );
        let text: Vec<String> =
            block_on(model.stream(Request::new(&[])).try_collect()).unwrap_or_default();
        assert_eq!(text, vec!["Hel".to_owned()]);
    }

    #[test]
    fn a_tool_call_only_turn_streams_as_just_completed() {
        let response = CompletionResponse::default()
            .with_tool_calls(vec![ToolCall::new("f", json!({})).with_id("1")]);
        let model = Box::new(Fixed(response.clone()));
        let events: Vec<LlmEvent> =
            block_on(model.stream_events(Request::new(&[])).try_collect()).unwrap_or_default();
        assert_eq!(events, vec![LlmEvent::Completed(Box::new(response))]);
    }

    #[test]
    fn a_failure_streams_as_one_error() {
        let events: Vec<Result<LlmEvent>> =
            block_on(Failing.stream_events(Request::new(&[])).collect());
        assert_eq!(events.len(), 1);
        assert!(events[0].as_ref().is_err_and(Error::is_configuration));
        assert_eq!(Failing.name(), "llm");
    }
}
