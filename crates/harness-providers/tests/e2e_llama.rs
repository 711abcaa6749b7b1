//! The `LlamaCpp` provider against a real llama.cpp `llama-server` (SmolLM2-135M), started by
//! `cargo xtask e2e-llama`, which sets `DEEPHARNESS_E2E_LLAMA_URL`. They are `#[ignore]`d, so
//! `cargo test` does not run them; run with `--ignored` and no server, they fail.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use futures_util::StreamExt as _;
use harness_core::Request;
use harness_core::{Agent, FinishReason, Llm, LlmEvent, Message};
use harness_providers::{LlamaCpp, OpenAi, RetryPolicy};

fn server() -> OpenAi {
    let url = std::env::var("DEEPHARNESS_E2E_LLAMA_URL")
        .expect("DEEPHARNESS_E2E_LLAMA_URL: run these tests with `cargo xtask e2e-llama`");
    // The client's own retries, quicker than the default: llama-server sometimes closes a
    // kept-alive connection just as the client reuses it after a stream, which is what the
    // transport retry is for.
    let retry = RetryPolicy {
        attempts: 3,
        base_delay: std::time::Duration::from_millis(100),
        ..RetryPolicy::default()
    };
    LlamaCpp::builder("smollm2")
        .base_url(url)
        .retry(retry)
        .build()
        .unwrap()
}

fn prompt() -> Vec<Message> {
    vec![
        Message::system("You are a concise assistant."),
        Message::user("Name the capital of Norway in one word."),
    ]
}

#[tokio::test]
#[ignore = "needs a real llama.cpp server: run by `cargo xtask e2e-llama`"]
async fn a_non_streamed_answer_with_usage_and_a_length_finish() {
    let model = server();
    let response = model.generate(Request::new(&prompt())).await.unwrap();
    assert!(!response.content().is_empty());
    let usage = response.usage().expect("llama-server reports usage");
    assert!(usage.prompt_tokens > 0 && usage.completion_tokens > 0);
    assert_eq!(
        usage.total_tokens,
        usage.prompt_tokens + usage.completion_tokens
    );
    // The server caps generation at 16 tokens (-n 16); a long answer is cut there.
    let story = [Message::user(
        "Write a long story about the sea, in many paragraphs.",
    )];
    let long = model.generate(Request::new(&story)).await.unwrap();
    assert_eq!(long.finish_reason(), FinishReason::Length);
    assert_eq!(long.usage().map(|u| u.completion_tokens), Some(16));
}

#[tokio::test]
#[ignore = "needs a real llama.cpp server: run by `cargo xtask e2e-llama`"]
async fn a_streamed_answer_matches_its_deltas_and_the_second_identical_prompt_is_cached() {
    let model = Arc::new(server());
    let first: Vec<LlmEvent> = Arc::clone(&model)
        .stream(Request::new(&prompt()))
        .map(|e| e.unwrap())
        .collect()
        .await;
    let second: Vec<LlmEvent> = model
        .stream(Request::new(&prompt()))
        .map(|e| e.unwrap())
        .collect()
        .await;
    for events in [&first, &second] {
        let Some(LlmEvent::Completed(response)) = events.last() else {
            panic!("{events:?}")
        };
        let text: String = events
            .iter()
            .filter_map(|e| match e {
                LlmEvent::TextDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, response.content());
        assert!(!text.is_empty());
    }
    let Some(LlmEvent::Completed(response)) = second.last() else {
        panic!()
    };
    let usage = response.usage().expect("usage in the last chunk");
    assert!(
        usage.cached_tokens > 0,
        "the repeated prompt is served from the cache: {usage:?}"
    );
    assert!(usage.cached_tokens <= usage.prompt_tokens);
}

#[tokio::test]
#[ignore = "needs a real llama.cpp server: run by `cargo xtask e2e-llama`"]
async fn a_prompt_over_the_context_is_a_typed_400() {
    let model = server();
    let huge = "lorem ipsum dolor sit amet ".repeat(400);
    let err = model
        .generate(Request::new(&[Message::user(huge)]))
        .await
        .unwrap_err();
    let Some(provider) = err.provider() else {
        panic!("{err:?}")
    };
    assert_eq!(provider.status(), Some(400));
    assert_eq!(provider.error_type(), Some("exceed_context_size_error"));
    assert!(provider.body().unwrap_or_default().contains("n_ctx"));
}

#[tokio::test]
#[ignore = "needs a real llama.cpp server: run by `cargo xtask e2e-llama`"]
async fn an_agent_runs_end_to_end() {
    let model = server();
    let agent = Agent::builder(model)
        .system("You are a concise assistant.")
        .build()
        .unwrap();
    let state = agent.run("Say hello.").await.unwrap();
    assert!(matches!(
        state.stop_reason,
        harness_core::StopReason::Answer | harness_core::StopReason::Truncated
    ));
    assert!(!state.output_text().is_empty());
    assert!(state.usage.total_tokens > 0);
    let events: Vec<_> = agent.stream("Say goodbye.").collect().await;
    assert!(matches!(
        events.last(),
        Some(Ok(harness_core::AgentEvent::Finished(_)))
    ));
}
