//! Streams deliver every item: a model that streams 10,000 deltas in one burst (no await
//! between them) reaches the watcher whole, through `stream` and `stream(..).text()`, on the
//! current-thread and the multi-thread runtime. Before the fix the streams ended silently
//! after tokio's cooperative budget of 128 items.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use futures_util::StreamExt as _;
use harness_core::agent::{Agent, AgentEvent, StopReason};
use std::sync::Arc;

use harness_core::{BoxStream, CompletionResponse, Llm, LlmEvent, Result, async_trait};

const DELTAS: usize = 10_000;

/// Streams `DELTAS` one-character deltas, all ready at once, then the turn.
struct Burst;

#[async_trait]
impl Llm for Burst {
    async fn generate(&self, _: harness_core::Request<'_>) -> Result<CompletionResponse> {
        Ok(CompletionResponse::text("x".repeat(DELTAS)))
    }

    fn stream(
        self: Arc<Self>,
        _: harness_core::Request<'_>,
    ) -> BoxStream<'static, Result<LlmEvent>> {
        let deltas = (0..DELTAS).map(|_| Ok(LlmEvent::TextDelta("x".to_owned())));
        let last = Ok(LlmEvent::Completed(Box::new(CompletionResponse::text(
            "x".repeat(DELTAS),
        ))));
        Box::pin(futures_util::stream::iter(
            deltas.chain(std::iter::once(last)),
        ))
    }
}

fn runtimes() -> [tokio::runtime::Runtime; 2] {
    [
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap(),
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap(),
    ]
}

#[test]
fn stream_delivers_every_delta_then_finished() {
    for runtime in runtimes() {
        let agent = Agent::builder(Burst).build().unwrap();
        let events: Vec<AgentEvent> = runtime.block_on(async {
            agent
                .stream("go")
                .map(|event| event.unwrap())
                .collect()
                .await
        });
        let deltas = events
            .iter()
            .filter(|e| matches!(e, AgentEvent::TextDelta(_)))
            .count();
        assert_eq!(deltas, DELTAS);
        let Some(AgentEvent::Finished(state)) = events.last() else {
            panic!("the stream must end with Finished, got {:?}", events.last());
        };
        assert_eq!(state.stop_reason, StopReason::Answer);
        assert_eq!(state.output, "x".repeat(DELTAS));
    }
}

#[test]
fn the_text_stream_yields_the_whole_answer() {
    for runtime in runtimes() {
        let agent = Agent::builder(Burst).build().unwrap();
        let text: String = runtime.block_on(async {
            agent
                .stream("go")
                .text()
                .map(|piece| piece.unwrap())
                .collect()
                .await
        });
        assert_eq!(text.len(), DELTAS);
    }
}

#[test]
fn the_blocking_stream_yields_the_whole_answer() {
    let agent = Agent::builder(Burst).build().unwrap();
    let text: String = agent
        .stream("go")
        .text()
        .blocking()
        .unwrap()
        .map(|piece| piece.unwrap())
        .collect();
    assert_eq!(text.len(), DELTAS);
}
