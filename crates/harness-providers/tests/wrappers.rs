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
    Block, CompletionResponse, Error, Llm, LlmEvent, Message, ModelInfo, ProviderError, Supports,
    Thinking, ToolCall,
};
use harness_providers::{Fallback, LlmExt as _};
use serde_json::json;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

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
    let model = Arc::new(
        failing(provider_error)
            .with_fallback(ScriptedModel::new([CompletionResponse::text("second")])),
    );
    let events: Vec<LlmEvent> = model
        .stream(Request::new(&[]))
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
        fn stream(
            self: Arc<Self>,
            _: harness_core::Request<'_>,
        ) -> harness_core::BoxStream<'static, harness_core::Result<LlmEvent>> {
            Box::pin(futures_util::stream::iter(vec![
                Ok(LlmEvent::TextDelta("half".into())),
                Err(provider_error()),
            ]))
        }
    }
    let backup = Arc::new(ScriptedModel::new([CompletionResponse::text("never")]));
    let model = Arc::new(HalfThenFail.with_fallback(Arc::clone(&backup)));
    let items: Vec<_> = model.stream(Request::new(&[])).collect().await;
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
    let cache = Arc::new(inner.cached().with_capacity(NonZeroUsize::new(2).unwrap()));
    assert_eq!(cache.capacity().get(), 2);
    let a = [Message::user("a")];
    let b = [Message::user("b")];
    let c = [Message::user("c")];
    cache.generate(Request::new(&a)).await.unwrap();
    let hit = cache.generate(Request::new(&a)).await.unwrap();
    assert_eq!(hit.content(), "a");
    assert_eq!((cache.hits(), cache.misses()), (1, 1));
    // Streamed hits replay block by block, then Completed.
    let events: Vec<LlmEvent> = Arc::clone(&cache)
        .stream(Request::new(&a))
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
    let model = Arc::new(scripted.retrying(1).with_backoff(Duration::ZERO));
    let events: Vec<LlmEvent> = model
        .stream(Request::new(&[]))
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
    let underneath = x.info();
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
    // Each wrapper tells what the model underneath is.
    assert_eq!(model.info(), underneath);
    assert_eq!(model.info().name(), "test:scripted");
}

/// A streaming model whose events the test produces one at a time, through a channel; its
/// `generate` only counts its calls. What it is, `info()` tells.
struct Live {
    events: std::sync::Mutex<Option<UnboundedReceiver<harness_core::Result<LlmEvent>>>>,
    generated: Arc<AtomicUsize>,
    info: ModelInfo,
}

/// The producing side of a [`Live`] model: its events, and how often it was asked to
/// `generate`.
struct Producer {
    events: UnboundedSender<harness_core::Result<LlmEvent>>,
    generated: Arc<AtomicUsize>,
}

fn live(info: ModelInfo) -> (Producer, Live) {
    let (events, receiver) = tokio::sync::mpsc::unbounded_channel();
    let generated = Arc::new(AtomicUsize::new(0));
    let model = Live {
        events: std::sync::Mutex::new(Some(receiver)),
        generated: Arc::clone(&generated),
        info,
    };
    (Producer { events, generated }, model)
}

#[async_trait::async_trait]
impl Llm for Live {
    async fn generate(&self, _: Request<'_>) -> harness_core::Result<CompletionResponse> {
        self.generated.fetch_add(1, Ordering::SeqCst);
        Ok(CompletionResponse::text("from generate"))
    }

    fn stream(
        self: Arc<Self>,
        _: Request<'_>,
    ) -> harness_core::BoxStream<'static, harness_core::Result<LlmEvent>> {
        let receiver = self.events.lock().unwrap().take().expect("streamed once");
        Box::pin(futures_util::stream::unfold(
            receiver,
            |mut receiver| async move { receiver.recv().await.map(|event| (event, receiver)) },
        ))
    }

    fn info(&self) -> ModelInfo {
        self.info.clone()
    }
}

fn live_info() -> ModelInfo {
    ModelInfo::new("live", "streamer")
        .with_context_window(32_000)
        .with_supports(
            Supports::new()
                .with_tools(true)
                .with_images(true)
                .with_structured_output(true)
                .with_reasoning(true),
        )
}

/// Reads `wrapped`'s stream while the model underneath produces its events: nothing comes out
/// before the model produced it, each delta comes out before the next is produced, the turn
/// is the model's own (not a replay of `generate`), and the stream ends when the model's
/// does. The stream outlives the request it was made from.
async fn forwards_a_live_stream<W: Llm>(name: &str, wrapped: &Arc<W>, producer: Producer) {
    let mut stream = {
        let messages = vec![Message::user("go")];
        Arc::clone(wrapped).stream(Request::new(&messages))
    };
    let wait = Duration::from_secs(5);
    let quiet = Duration::from_millis(50);
    for piece in ["one ", "two"] {
        assert!(
            tokio::time::timeout(quiet, stream.next()).await.is_err(),
            "{name}: an event came out before the model produced it"
        );
        producer
            .events
            .send(Ok(LlmEvent::TextDelta(piece.into())))
            .unwrap();
        let event = tokio::time::timeout(wait, stream.next())
            .await
            .unwrap_or_else(|_| panic!("{name}: the delta {piece:?} did not come out"));
        assert_eq!(
            event.unwrap().unwrap(),
            LlmEvent::TextDelta(piece.into()),
            "{name}"
        );
    }
    let turn = CompletionResponse::text("one two");
    producer
        .events
        .send(Ok(LlmEvent::Completed(Box::new(turn.clone()))))
        .unwrap();
    let event = tokio::time::timeout(wait, stream.next()).await.unwrap();
    assert_eq!(
        event.unwrap().unwrap(),
        LlmEvent::Completed(Box::new(turn)),
        "{name}"
    );
    drop(producer.events);
    let end = tokio::time::timeout(wait, stream.next()).await.unwrap();
    assert!(end.is_none(), "{name}: an item after Completed: {end:?}");
    assert_eq!(
        producer.generated.load(Ordering::SeqCst),
        0,
        "{name}: the stream was replayed from generate"
    );
}

#[tokio::test]
async fn each_wrapper_forwards_the_models_live_stream_and_its_info() {
    // Caching: a miss is the model's own stream, and its turn is kept.
    let (producer, model) = live(live_info());
    let generated = Arc::clone(&producer.generated);
    let cached = Arc::new(model.cached());
    assert_eq!(cached.info(), live_info());
    forwards_a_live_stream("caching", &cached, producer).await;
    let messages = [Message::user("go")];
    let kept = cached.generate(Request::new(&messages)).await.unwrap();
    assert_eq!(kept.content(), "one two", "the streamed turn was kept");
    assert_eq!((cached.hits(), cached.misses()), (1, 1));
    assert_eq!(generated.load(Ordering::SeqCst), 0);
    assert_eq!(cached.inner().info(), live_info());

    // RateLimited: the slot is taken, then the model's stream flows as it is produced.
    let (producer, model) = live(live_info());
    let limited = Arc::new(model.rate_limited(Duration::from_millis(10)));
    assert_eq!(limited.info(), live_info());
    forwards_a_live_stream("rate_limited", &limited, producer).await;

    // Retrying: a turn with text is not asked again; its deltas pass as they come.
    let (producer, model) = live(live_info());
    let retrying = Arc::new(model.retrying(2).with_backoff(Duration::ZERO));
    assert_eq!(retrying.info(), live_info());
    forwards_a_live_stream("retrying", &retrying, producer).await;

    // Fallback: the first model's stream, live; the next is never asked. Its info is the
    // first model's, claiming only what every model of the chain supports.
    let (producer, model) = live(live_info());
    let backup = Arc::new(ScriptedModel::new([CompletionResponse::text("never")]));
    let fallback = Arc::new(model.with_fallback(Arc::clone(&backup)));
    let info = fallback.info();
    assert_eq!(info.name(), "live:streamer");
    assert_eq!(info.context_window, Some(32_000));
    assert_eq!(info.supports, Supports::new().with_tools(true));
    assert_eq!(fallback.inner().info(), live_info());
    forwards_a_live_stream("fallback", &fallback, producer).await;
    assert_eq!(backup.requests().len(), 0);
    // Two models that support the same: the first's info, whole.
    let (_, first) = live(live_info());
    let (_, second) = live(ModelInfo::new("other", "m").with_supports(live_info().supports));
    assert_eq!(first.with_fallback(second).info(), live_info());
}
