//! `Journal`: where a run's steps go through, so a durable engine can record each one.
//!
//! The loop itself is deterministic given what its steps return: the same model answers and
//! tool results lead to the same next step. An engine that records every model call and
//! every tool call, and hands back the recorded result when a crashed run is replayed, so
//! resumes it exactly where it was, running again only the step that was in flight.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::error::{Result, ToolError};
use crate::message::{Content, ToolCall};
use crate::response::CompletionResponse;
use crate::tool::Human;

/// A step's work, not started yet: the journal runs it, or returns the recorded result
/// instead and drops it unrun.
pub type Step<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Runs a run's steps: every model call and every tool call of a run given it with
/// [`RunInput::with_journal`](super::RunInput::with_journal) goes through it.
///
/// An implementation records each step's result and, when the run is replayed (after a
/// crash, on another machine), returns the recorded result instead of running the step
/// again. Steps arrive in the same order on every replay: the tool calls of a turn run one
/// at a time, in the order the model sent them. `harness-durable` implements it on Restate.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use harness_core::agent::{Agent, Journal, RunInput, Step};
/// use harness_core::testing::TestModel;
/// use harness_core::{CompletionResponse, Content, Result, ToolCall, ToolError};
///
/// /// Counts the steps it runs.
/// #[derive(Default)]
/// struct Counting(AtomicUsize);
///
/// #[harness_core::async_trait]
/// impl Journal for Counting {
///     async fn model_call(&self, _turn: usize, step: Step<'_, Result<CompletionResponse>>)
///         -> Result<CompletionResponse> {
///         self.0.fetch_add(1, Ordering::Relaxed);
///         step.await
///     }
///     async fn tool_call(&self, _call: &ToolCall, step: Step<'_, Result<Content, ToolError>>)
///         -> Result<Content, ToolError> {
///         self.0.fetch_add(1, Ordering::Relaxed);
///         step.await
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let agent = Agent::builder(TestModel::new()).build()?;
/// let journal = Counting::default();
/// agent.run(RunInput::from("hi").with_journal(&journal)).await?;
/// assert_eq!(journal.0.load(Ordering::Relaxed), 1);
/// # Ok::<(), harness_core::Error>(())
/// # }).unwrap();
/// ```
#[async_trait::async_trait]
pub trait Journal: Send + Sync {
    /// Runs (or replays) the model call of turn `turn` (1 for the run's first).
    async fn model_call(
        &self,
        turn: usize,
        step: Step<'_, Result<CompletionResponse>>,
    ) -> Result<CompletionResponse>;

    /// Runs (or replays) `call`: its raw result, before middleware and the context policy.
    async fn tool_call(
        &self,
        call: &ToolCall,
        step: Step<'_, Result<Content, ToolError>>,
    ) -> Result<Content, ToolError>;

    /// The [`Human`] the run's tool calls reach through [`Ctx::ask`](crate::Ctx::ask) (and
    /// an MCP server's elicitation): one that can wait as long as the journal does. `None`
    /// (the default) leaves the toolbox's.
    fn human(&self) -> Option<Arc<dyn Human>> {
        None
    }

    /// Whether the model's text is wanted as it arrives: the model is then streamed inside
    /// its step, and each piece handed to [`Journal::text_delta`]. `false` by default.
    fn watches_text(&self) -> bool {
        false
    }

    /// A piece of the model's text, as it arrives, from inside the step that runs the model
    /// call (never on a replay, where the step does not run).
    fn text_delta(&self, text: &str) {
        let _ = text;
    }
}
