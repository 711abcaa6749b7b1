//! `RunStream`: a run as a stream of its events. The loop reports through an
//! [`Emitter`](crate::channel::Emitter), and the stream polls the loop and the channel
//! together (see [`crate::channel`]), so events arrive as they happen with no task spawned.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use futures_core::Stream;
use futures_util::StreamExt as _;

use super::events::AgentEvent;
use super::events::Item;
use super::handoff::{Handoff, WatchedRun};
use super::inner::{AgentInner, ToolMode};
use super::input::RunInput;
use super::report::Events;
use super::run_error::RunError;
use crate::channel::channel_stream;
use crate::error::{Error, Result};
use crate::llm::BoxStream;

/// A run as it happens: what [`Agent::stream`](crate::Agent::stream) returns.
///
/// A stream of `Result<T, RunError>`: the [`AgentEvent`]s of the run, ending in
/// [`AgentEvent::Finished`] with its state, or in the [`RunError`] that ended it.
/// [`text`](RunStream::text) keeps the model's answer text alone;
/// [`blocking`](RunStream::blocking) iterates it from synchronous code. Dropping it cancels
/// the run.
///
/// ```
/// use futures_util::StreamExt as _;
/// use harness_core::testing::TestModel;
/// use harness_core::{Agent, AgentEvent};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let agent = Agent::builder(TestModel::new().with_text("Hello there")).build()?;
/// let mut events = agent.stream("hi");
/// let mut text = String::new();
/// while let Some(event) = events.next().await {
///     match event? {
///         AgentEvent::TextDelta(piece) => text.push_str(&piece),
///         AgentEvent::Finished(state) => assert!(state.answered()),
///         _ => {}
///     }
/// }
/// assert_eq!(text, "Hello there");
///
/// let words: Vec<String> = agent.stream("hi").text().map(|t| t.unwrap()).collect().await;
/// assert_eq!(words.concat(), "Hello there");
/// # Ok::<(), harness_core::Error>(())
/// # }).unwrap();
/// ```
#[must_use = "a stream does nothing unless polled"]
pub struct RunStream<'a, T = AgentEvent> {
    inner: BoxStream<'a, Result<T, RunError>>,
    /// Set before the run starts to run its tools one at a time ([`RunStream::blocking`]).
    one_at_a_time: Arc<AtomicBool>,
}

impl<'a> RunStream<'a> {
    pub(crate) fn new(inner: BoxStream<'a, Item>, one_at_a_time: Arc<AtomicBool>) -> Self {
        Self {
            inner,
            one_at_a_time,
        }
    }

    /// The model's answer text as it arrives; tools still run, and every turn is streamed,
    /// so a turn of tool calls simply yields no text. The run's state is not reported: use
    /// the events (its [`AgentEvent::Finished`]) when it is wanted.
    pub fn text(self) -> RunStream<'a, String> {
        RunStream {
            one_at_a_time: self.one_at_a_time,
            inner: Box::pin(self.inner.filter_map(|event| async move {
                match event {
                    Ok(AgentEvent::TextDelta(text)) => Some(Ok(text)),
                    Ok(_) => None,
                    Err(e) => Some(Err(e)),
                }
            })),
        }
    }
}

impl<'a, T: 'a> RunStream<'a, T> {
    /// The stream as an iterator for synchronous code: each `next()` drives the run on a
    /// runtime of its own to its next item. As in [`Agent::run_blocking`](crate::Agent::run_blocking),
    /// the tools of a turn run one at a time, so each tool's `ToolStarted` and `ToolFinished`
    /// surround its own call (called before the first item is taken).
    ///
    /// # Errors
    /// A [`Configuration`](crate::ErrorKind::Configuration) error when called inside an
    /// async runtime, where blocking would stall it (poll the stream there).
    pub fn blocking(self) -> Result<BlockingIter<'a, T>> {
        self.one_at_a_time.store(true, Ordering::Relaxed);
        Ok(BlockingIter {
            runtime: blocking_runtime()?,
            stream: self.inner,
        })
    }
}

impl<T> Stream for RunStream<'_, T> {
    type Item = Result<T, RunError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.poll_next_unpin(cx)
    }
}

impl<T> std::fmt::Debug for RunStream<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RunStream")
    }
}

/// The events of one run, ending in `Finished` or an error. Its tools run one at a time
/// when `one_at_a_time` is set by the time the stream is first polled (or the mode says so).
pub(crate) fn events(
    agent: Arc<AgentInner>,
    input: RunInput<'_>,
    mode: ToolMode,
    one_at_a_time: Arc<AtomicBool>,
) -> BoxStream<'_, Item> {
    let input = Box::new(input);
    let handoff = Handoff::default();
    let handed = handoff.clone();
    let run = channel_stream(|sink| async move {
        let mode = if one_at_a_time.load(Ordering::Relaxed) {
            ToolMode::Sequential
        } else {
            mode
        };
        let journal = input.journal;
        let events = Events::watched(&sink, &handed, journal);
        let outcome = agent.drive(input, mode, &events).await;
        sink.emit(outcome.map(|state| AgentEvent::Finished(Box::new(state))));
    });
    Box::pin(WatchedRun::new(run, handoff))
}

/// A run's stream as an iterator for synchronous code; see [`RunStream::blocking`].
pub struct BlockingIter<'a, T> {
    runtime: tokio::runtime::Runtime,
    stream: BoxStream<'a, Result<T, RunError>>,
}

impl<T> Iterator for BlockingIter<'_, T> {
    type Item = Result<T, RunError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.runtime.block_on(self.stream.next())
    }
}

impl<T> std::fmt::Debug for BlockingIter<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BlockingIter")
    }
}

/// A runtime for a blocking call, refused inside a runtime (where blocking would stall it).
pub(crate) fn blocking_runtime() -> Result<tokio::runtime::Runtime> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(Error::configuration(
            "a blocking form was called inside an async runtime, where it would stall it; use \
             the async form there (agent.run(input).await, or poll agent.stream(input))",
        ));
    }
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::configuration(format!("cannot start a runtime for the run: {e}")))
}
