//! The wrappers: each an `Llm`, composable, behaving as spec §5 says.

#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::items_after_statements
)]

use harness_core::Request;
use std::num::{NonZeroU32, NonZeroUsize};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use harness_core::testing::{FunctionModel, ScriptedModel};
use harness_core::{
    Block, CompletionResponse, Error, Llm, LlmEvent, Message, ProviderError, Thinking, ToolCall,
};
use harness_providers::{Fallback, LlmExt as _};
use serde_json::json;

fn failing(error: fn() -> Error) -> FunctionModel {
    FunctionModel::fallible(move |_| Err(error()))
}

fn provider_error() -> Error {
    ProviderError::new("x", "down").with_status(503).into()
}

#[tokio::test]
async fn fallback_moves_on_for_provider_errors_only() {
    let model =
        failing(provider_error).with_fallback(ScriptedModel::new([CompletionResponse::text("b")]));
    assert_eq!(
        model.generate(Request::new(&[])).await.unwrap().content(),
        "b"
    );

    let model = failing(|| Error::configuration("my bug"))
        .with_fallback(ScriptedModel::new([CompletionResponse::text("b")]));
    let err = model.generate(Request::new(&[])).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "my bug",
        "a bug of yours is not a flaky vendor"
    );

    // A chain extends rather than nests.
    let model = failing(provider_error)
        .with_fallback(failing(provider_error))
        .with_fallback(failing(provider_error));
    assert_eq!(model.models().len(), 3);
    let err = model.generate(Request::new(&[])).await.unwrap_err();
    assert!(err.is_provider());
    assert!(
        err.to_string()
            .contains("all 3 providers failed; last error: x request failed with HTTP 503"),
        "{err}"
    );

    // A condition of your own: here, configuration errors fall through too.
    let model = Fallback::new(
        failing(|| Error::configuration("my bug")),
        ScriptedModel::new([CompletionResponse::text("b")]),
    )
    .with_condition(Error::is_configuration);
    assert_eq!(
        model.generate(Request::new(&[])).await.unwrap().content(),
        "b"
    );
}

#[tokio::test]
async fn fallback_streams_fall_through_only_before_the_first_event() {
    let model = failing(provider_error)
        .with_fallback(ScriptedModel::new([CompletionResponse::text("second")]));
    let events: Vec<LlmEvent> = model
        .stream_events(Request::new(&[]))
        .map(|e| e.unwrap())
        .collect()
        .await;
    assert_eq!(events[0], LlmEvent::TextDelta("second".into()));

    /// Hands out a delta, then fails.
    struct HalfThenFail;
    #[async_trait::async_trait]
    impl Llm for HalfThenFail {
        async fn generate(
            &self,
            _: harness_core::Request<'_>,
        ) -> harness_core::Result<CompletionResponse> {
            Err(provider_error())
        }
        fn stream_events<'a>(
            &'a self,
            _: harness_core::Request<'a>,
        ) -> harness_core::BoxStream<'a, harness_core::Result<LlmEvent>> {
            Box::pin(futures_util::stream::iter(vec![
                Ok(LlmEvent::TextDelta("half".into())),
                Err(provider_error()),
            ]))
        }
    }
    let backup = Arc::new(ScriptedModel::new([CompletionResponse::text("never")]));
    let model = HalfThenFail.with_fallback(Arc::clone(&backup));
    let items: Vec<_> = model.stream_events(Request::new(&[])).collect().await;
    assert_eq!(items.len(), 2);
    assert!(items[1].as_ref().unwrap_err().is_provider());
    assert_eq!(
        backup.requests().len(),
        0,
        "no model is called after an event went out"
    );
}

#[tokio::test]
async fn caching_hits_misses_copies_ttl_and_lru() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let inner = FunctionModel::new(move |request| {
        let messages = request.messages;
        counter.fetch_add(1, Ordering::SeqCst);
        CompletionResponse::from_blocks(vec![
            Thinking::new("t").into(),
            Block::text(messages[0].text()),
        ])
        .with_tool_calls(vec![ToolCall::new("f", json!({})).with_id("1")])
    });
    let cache = inner.cached().with_capacity(NonZeroUsize::new(2).unwrap());
    assert_eq!(cache.capacity().get(), 2);
    let a = [Message::user("a")];
    let b = [Message::user("b")];
    let c = [Message::user("c")];
    cache.generate(Request::new(&a)).await.unwrap();
    let hit = cache.generate(Request::new(&a)).await.unwrap();
    assert_eq!(hit.content(), "a");
    assert_eq!((cache.hits(), cache.misses()), (1, 1));
    // Streamed hits replay block by block, then Completed.
    let events: Vec<LlmEvent> = cache
        .stream_events(Request::new(&a))
        .map(|e| e.unwrap())
        .collect()
        .await;
    assert_eq!(
        events[..2],
        [
            LlmEvent::ThinkingDelta("t".into()),
            LlmEvent::TextDelta("a".into())
        ]
    );
    assert!(matches!(&events[2], LlmEvent::Completed(r) if **r == hit));
    // LRU: a is most recent; adding b and c evicts b... then a stays.
    cache.generate(Request::new(&b)).await.unwrap();
    cache.generate(Request::new(&a)).await.unwrap();
    cache.generate(Request::new(&c)).await.unwrap();
    let before = calls.load(Ordering::SeqCst);
    cache.generate(Request::new(&a)).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), before, "a was kept");
    cache.generate(Request::new(&b)).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), before + 1, "b was evicted");
    cache.clear();
    cache.generate(Request::new(&a)).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), before + 2);

    let short = ScriptedModel::new(vec![CompletionResponse::text("x"); 2])
        .cached()
        .with_ttl(Duration::from_millis(20));
    short.generate(Request::new(&a)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(40)).await;
    short.generate(Request::new(&a)).await.unwrap();
    assert_eq!(
        (short.hits(), short.misses()),
        (0, 2),
        "an expired entry is a miss"
    );

    // A zero time to live serves nothing from the cache.
    let none = ScriptedModel::new(vec![CompletionResponse::text("x"); 2])
        .cached()
        .with_ttl(Duration::ZERO);
    none.generate(Request::new(&a)).await.unwrap();
    none.generate(Request::new(&a)).await.unwrap();
    assert_eq!((none.hits(), none.misses()), (0, 2));
}

#[tokio::test]
async fn rate_limited_spaces_calls_and_is_shared() {
    let model = Arc::new(
        ScriptedModel::new(vec![CompletionResponse::text("x"); 3])
            .rate_limited(Duration::from_millis(50))
            .with_burst(NonZeroU32::MIN),
    );
    assert_eq!(model.burst().get(), 1);
    let started = Instant::now();
    let calls = (0..3).map(|_| {
        let model = Arc::clone(&model);
        tokio::spawn(async move { model.generate(Request::new(&[])).await.unwrap() })
    });
    for call in calls {
        call.await.unwrap();
    }
    assert!(
        started.elapsed() >= Duration::from_millis(90),
        "{:?}",
        started.elapsed()
    );

    // A burst lets that many go at once; a zero interval does not limit.
    let burst = ScriptedModel::new(vec![CompletionResponse::text("x"); 3])
        .rate_limited(Duration::from_secs(3600))
        .with_burst(NonZeroU32::new(3).unwrap());
    let unlimited =
        ScriptedModel::new(vec![CompletionResponse::text("x"); 3]).rate_limited(Duration::ZERO);
    let started = Instant::now();
    for _ in 0..3 {
        burst.generate(Request::new(&[])).await.unwrap();
        unlimited.generate(Request::new(&[])).await.unwrap();
    }
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
}

/// The default burst is the calls a second, rounded down, at least 1: at five a second, five
/// calls go at once and the sixth waits its turn. The clock is tokio's, paused: the waits are
/// exact, not the machine's.
#[tokio::test(start_paused = true)]
async fn rate_limited_lets_a_seconds_calls_go_at_once_by_default() {
    let model = ScriptedModel::new(vec![CompletionResponse::text("x"); 6])
        .rate_limited(Duration::from_millis(200));
    assert_eq!(model.burst().get(), 5);
    let started = tokio::time::Instant::now();
    let five = (0..5).map(|_| model.generate(Request::new(&[])));
    for answer in futures_util::future::join_all(five).await {
        answer.unwrap();
    }
    assert_eq!(
        started.elapsed(),
        Duration::ZERO,
        "one of the first five waited"
    );
    model.generate(Request::new(&[])).await.unwrap();
    // About one interval; the bucket's own clock is the real one, so a little less.
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(50) && waited <= Duration::from_secs(1),
        "{waited:?}"
    );

    let burst = |interval| {
        ScriptedModel::new(Vec::<CompletionResponse>::new())
            .rate_limited(interval)
            .burst()
            .get()
    };
    assert_eq!(burst(Duration::from_millis(300)), 3);
    assert_eq!(burst(Duration::from_millis(100)), 10);
    assert_eq!(burst(Duration::from_secs(1)), 1);
    assert_eq!(burst(Duration::from_secs(5)), 1);
}

#[tokio::test]
async fn retrying_re_asks_empty_turns_in_both_paths() {
    let scripted = ScriptedModel::new([
        CompletionResponse::text("  "),
        CompletionResponse::text("there"),
    ]);
    let model = scripted.retrying(1).with_backoff(Duration::ZERO);
    assert_eq!(
        model.generate(Request::new(&[])).await.unwrap().content(),
        "there"
    );

    let scripted = ScriptedModel::new([
        CompletionResponse::text(""),
        CompletionResponse::text("streamed"),
    ]);
    let model = scripted.retrying(1).with_backoff(Duration::ZERO);
    let events: Vec<LlmEvent> = model
        .stream_events(Request::new(&[]))
        .map(|e| e.unwrap())
        .collect()
        .await;
    assert_eq!(events[0], LlmEvent::TextDelta("streamed".into()));
    assert_eq!(events.len(), 2);

    let scripted = ScriptedModel::new([CompletionResponse::text(""), CompletionResponse::text("")]);
    let model = scripted.retrying(1).with_backoff(Duration::ZERO);
    assert_eq!(model.retries(), 1);
    assert_eq!(
        model.generate(Request::new(&[])).await.unwrap().content(),
        "",
        "the last answer, even empty"
    );
    assert_eq!(model.inner().remaining(), 0);

    // No retries: one call, whatever it brings.
    let scripted =
        ScriptedModel::new([CompletionResponse::text(""), CompletionResponse::text("x")]);
    let model = scripted.retrying(0);
    assert_eq!(
        model.generate(Request::new(&[])).await.unwrap().content(),
        ""
    );
    assert_eq!(model.inner().remaining(), 1);
}

#[tokio::test]
async fn wrappers_compose_and_inner_reaches_down() {
    let x = ScriptedModel::new([CompletionResponse::text("deep")]);
    let model = x
        .retrying(1)
        .with_backoff(Duration::ZERO)
        .rate_limited(Duration::from_millis(20))
        .cached();
    assert_eq!(
        model.generate(Request::new(&[])).await.unwrap().content(),
        "deep"
    );
    assert_eq!(
        model.generate(Request::new(&[])).await.unwrap().content(),
        "deep"
    );
    assert_eq!(model.inner().inner().inner().remaining(), 0);
    assert_eq!(model.name(), "caching(rate_limited(retrying(scripted)))");
}
