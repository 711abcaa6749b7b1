//! A model's `'static` stream (`Llm::stream`) is read by the watcher of a run, in the
//! watcher's own poll, not by the run: `generate` of these models fails, so each test shows
//! the stream was the one read. The run still sees every turn (a tool round between two
//! streamed calls), every delta arrives in order (10,000 of them, each after a wait), a
//! stream that ends without its turn or with an error ends the run with an error carrying
//! the run so far, and the blocking iterator reads it too.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::StreamExt as _;
use harness_core::agent::{Agent, AgentEvent, StopReason};
use harness_core::{
    BoxStream, CompletionResponse, Error, Llm, LlmEvent, ProviderError, Request, Result, RunError,
    ToolCall, async_trait,
};
use serde_json::json;

/// How one scripted model call streams.
#[derive(Clone, Copy)]
enum Turn {
    /// A thought, then a call of `add` with 1 and 2.
    CallAdd,
    /// `n` one-character deltas, each after a wait, then the whole text.
    Text(usize),
    /// Two deltas, then nothing: no turn.
    Unfinished,
    /// Two deltas, then the vendor's error.
    Broken,
}

/// Answers call `i` with `turns[i]` through its stream only.
struct Owned {
    turns: Vec<Turn>,
    calls: AtomicUsize,
    /// Whether each event comes after a wait (a yield to the runtime), or at once.
    waits: bool,
}

impl Owned {
    fn new(turns: impl Into<Vec<Turn>>) -> Self {
        Self {
            turns: turns.into(),
            calls: AtomicUsize::new(0),
            waits: true,
        }
    }

    /// Every event ready at once: a stream that never waits.
    fn at_once(turns: impl Into<Vec<Turn>>) -> Self {
        Self {
            waits: false,
            ..Self::new(turns)
        }
    }
}

fn after_a_wait(events: Vec<Result<LlmEvent>>) -> BoxStream<'static, Result<LlmEvent>> {
    Box::pin(futures_util::stream::iter(events).then(|event| async move {
        tokio::task::yield_now().await;
        event
    }))
}

#[async_trait]
impl Llm for Owned {
    async fn generate(&self, _: Request<'_>) -> Result<CompletionResponse> {
        Err(Error::from(ProviderError::new(
            "owned",
            "generate is not used",
        )))
    }

    fn stream(self: Arc<Self>, request: Request<'_>) -> BoxStream<'static, Result<LlmEvent>> {
        assert!(!request.messages.is_empty());
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        let turn = self.turns.get(call).copied().unwrap_or(Turn::Text(1));
        let delta = |text: &str| Ok(LlmEvent::TextDelta(text.to_owned()));
        let completed = |response: CompletionResponse| Ok(LlmEvent::Completed(Box::new(response)));
        let events = match turn {
            Turn::CallAdd => vec![
                Ok(LlmEvent::ThinkingDelta("add them".to_owned())),
                completed(CompletionResponse::default().with_tool_calls(vec![
                    ToolCall::new("add", json!({"a": 1, "b": 2})).with_id("c1"),
                ])),
            ],
            Turn::Text(n) => {
                let mut events: Vec<_> = (0..n).map(|i| delta(&(i % 10).to_string())).collect();
                let text: String = (0..n).map(|i| (i % 10).to_string()).collect();
                events.push(completed(CompletionResponse::text(text)));
                events
            }
            Turn::Unfinished => vec![delta("a"), delta("b")],
            Turn::Broken => vec![
                delta("a"),
                delta("b"),
                Err(Error::from(ProviderError::new(
                    "owned",
                    "the body broke off",
                ))),
            ],
        };
        if self.waits {
            after_a_wait(events)
        } else {
            Box::pin(futures_util::stream::iter(events))
        }
    }
}

/// Adds two numbers.
///
/// * `a` - The first.
/// * `b` - The second.
#[harness_core::tool]
async fn add(a: i64, b: i64) -> i64 {
    a + b
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
fn the_watcher_reads_the_models_stream_and_the_run_gets_each_turn() {
    for runtime in runtimes() {
        let agent = Agent::builder(Owned::new([Turn::CallAdd, Turn::Text(3)]))
            .tool(Add)
            .build()
            .unwrap();
        let events: Vec<AgentEvent> = runtime.block_on(async {
            agent
                .stream("1 + 2?")
                .map(|event| event.unwrap())
                .collect()
                .await
        });
        let kinds: Vec<String> = events
            .iter()
            .map(|event| match event {
                AgentEvent::StepStarted { step } => format!("step {step}"),
                AgentEvent::ThinkingDelta(text) => format!("thinking {text}"),
                AgentEvent::TextDelta(text) => format!("text {text}"),
                AgentEvent::ToolStarted { name, .. } => format!("start {name}"),
                AgentEvent::ToolFinished { name, result, .. } => format!("done {name} {result}"),
                AgentEvent::Finished(state) => format!("finished {}", state.output_text()),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "step 1",
                "thinking add them",
                "start add",
                "done add 3",
                "step 2",
                "text 0",
                "text 1",
                "text 2",
                "finished 012",
            ]
        );
        let Some(AgentEvent::Finished(state)) = events.last() else {
            unreachable!()
        };
        assert_eq!(state.stop_reason, StopReason::Answer);
        assert_eq!(
            state.messages.len(),
            4,
            "user, the call, its result, the answer"
        );
    }
}

#[test]
fn ten_thousand_deltas_each_after_a_wait_arrive_in_order() {
    const N: usize = 10_000;
    for runtime in runtimes() {
        let agent = Agent::builder(Owned::new([Turn::Text(N)])).build().unwrap();
        let text: String = runtime.block_on(async {
            agent
                .stream("go")
                .text()
                .map(|delta| delta.unwrap())
                .collect::<Vec<_>>()
                .await
                .concat()
        });
        let expected: String = (0..N).map(|i| (i % 10).to_string()).collect();
        assert_eq!(text, expected);
    }
}

#[tokio::test]
async fn a_stream_without_its_turn_ends_the_run_with_an_error_and_the_run_so_far() {
    let agent = Agent::builder(Owned::new([Turn::Unfinished]))
        .build()
        .unwrap();
    let events: Vec<Result<AgentEvent, RunError>> = agent.stream("go").collect().await;
    let (last, seen) = events.split_last().unwrap();
    let texts: Vec<&AgentEvent> = seen.iter().map(|e| e.as_ref().unwrap()).collect();
    assert_eq!(texts.len(), 3, "the step and the two deltas: {texts:?}");
    let error = last.as_ref().unwrap_err();
    assert!(
        error.to_string().contains("ended without a completed turn"),
        "{error}"
    );
    assert_eq!(error.state().messages.len(), 1);
}

#[tokio::test]
async fn a_broken_stream_ends_the_run_with_its_error_and_the_run_so_far() {
    let agent = Agent::builder(Owned::new([Turn::CallAdd, Turn::Broken]))
        .tool(Add)
        .build()
        .unwrap();
    let events: Vec<Result<AgentEvent, RunError>> = agent.stream("go").collect().await;
    let (last, seen) = events.split_last().unwrap();
    assert!(matches!(
        seen.last(),
        Some(Ok(AgentEvent::TextDelta(text))) if text == "b"
    ));
    let error = last.as_ref().unwrap_err();
    assert_eq!(error.provider().unwrap().message(), "the body broke off");
    assert_eq!(
        error.state().messages.len(),
        3,
        "user, the call, its result"
    );
}

#[test]
fn the_blocking_iterator_reads_the_models_stream() {
    let agent = Agent::builder(Owned::new([Turn::CallAdd, Turn::Text(5)]))
        .tool(Add)
        .build()
        .unwrap();
    let events: Vec<AgentEvent> = agent
        .stream("go")
        .blocking()
        .unwrap()
        .map(|event| event.unwrap())
        .collect();
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "01234");
    assert!(matches!(events.last(), Some(AgentEvent::Finished(_))));
}

#[tokio::test]
async fn a_run_nobody_watches_does_not_stream() {
    // `run` asks for the whole turn; these models only stream, so it fails as `generate`.
    let agent = Agent::builder(Owned::new([Turn::Text(1)])).build().unwrap();
    let error = agent.run("go").await.unwrap_err();
    assert_eq!(error.provider().unwrap().message(), "generate is not used");
}

/// Counts the wakes of the task it stands for.
struct Wakes(AtomicUsize);

impl std::task::Wake for Wakes {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_watched_run_whose_model_never_waits_is_polled_through_without_a_wake() {
    // Each hand-over happens inside the watcher's own poll: the model's stream going to the
    // watcher and its turn coming back, a tool's start delivered before the tool runs. None
    // of them needs the task woken (or a runtime: there is none here), so a run whose model
    // and tool never wait is one uninterrupted series of ready items.
    let agent = Agent::builder(Owned::at_once([Turn::CallAdd, Turn::Text(3)]))
        .tool(Add)
        .build()
        .unwrap();
    let counter = std::sync::Arc::new(Wakes(AtomicUsize::new(0)));
    let waker = std::task::Waker::from(std::sync::Arc::clone(&counter));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut events = agent.stream("1 + 2?");
    let mut seen = Vec::new();
    loop {
        match events.poll_next_unpin(&mut cx) {
            std::task::Poll::Ready(Some(event)) => seen.push(event.unwrap()),
            std::task::Poll::Ready(None) => break,
            std::task::Poll::Pending => panic!("the run waited after {} events", seen.len()),
        }
    }
    assert_eq!(counter.0.load(Ordering::SeqCst), 0);
    let names: Vec<String> = seen
        .iter()
        .map(|event| match event {
            AgentEvent::StepStarted { step } => format!("step {step}"),
            AgentEvent::ThinkingDelta(text) => format!("thinking {text}"),
            AgentEvent::ToolStarted { name, .. } => format!("start {name}"),
            AgentEvent::ToolFinished { result, .. } => format!("finished {result}"),
            AgentEvent::TextDelta(text) => format!("text {text}"),
            AgentEvent::Finished(state) => format!("done {}", state.output_text()),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        names,
        [
            "step 1",
            "thinking add them",
            "start add",
            "finished 3",
            "step 2",
            "text 0",
            "text 1",
            "text 2",
            "done 012",
        ]
    );
}
