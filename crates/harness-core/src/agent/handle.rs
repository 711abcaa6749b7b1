//! `Agent`: the handle a program runs, cheap to clone.

use std::fmt;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, PoisonError};

use super::budget::Budget;
use super::context::ContextPolicy;
use super::inner::{AgentInner, ToolMode};
use super::input::RunInput;
use super::permissions::Permissions;
use super::report::Events;
use super::run_error::RunError;
use super::state::AgentState;
use super::stream::{RunStream, blocking_runtime, events};
use crate::response::TokenUsage;
use crate::tool::{ToolSpec, Toolbox};

/// A think/act loop against a model.
///
/// Built once with [`Agent::builder`], run many times: each run gets its own state and
/// options ([`RunInput`]). Two ways to run: [`Agent::run`] to the end, or [`Agent::stream`]
/// for its progress as it goes; [`Agent::run_blocking`] is `run` for synchronous code.
/// Cloning an agent is cheap and the clones share everything, [`Agent::total_usage`]
/// included.
///
// The example names `#[tool]`, of the `macros` feature.
#[cfg_attr(feature = "macros", doc = " ```")]
#[cfg_attr(not(feature = "macros"), doc = " ```ignore")]
/// use harness_core::agent::Agent;
/// use harness_core::testing::TestModel;
/// use harness_core::tool;
///
/// /// Look up the current weather for a city.
/// #[tool]
/// fn get_weather(city: String) -> String {
///     format!("It is 22°C and sunny in {city}.")
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let agent = Agent::builder(TestModel::new())
///     .system("You are a concise assistant.")
///     .tool(GetWeather)
///     .build()?;
/// let state = agent.run("Weather in Oslo?").await?;
/// assert!(state.answered());
/// assert_eq!(state.output_text(), r#"{"get_weather":"It is 22°C and sunny in a."}"#);
/// # Ok::<(), harness_core::Error>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct Agent {
    pub(crate) inner: Arc<AgentInner>,
}

impl Agent {
    /// Runs the loop to its end.
    ///
    /// Tool calls of one turn run concurrently (sync tools on the blocking pool; one at a
    /// time under a [journal](RunInput::with_journal)) and their results are recorded in
    /// call order. A tool's failure goes back to the model as that call's result and the run
    /// goes on. A budget's limit ends the run as `Ok`, with its stop reason.
    ///
    /// # Errors
    /// A [`RunError`] with the run so far beside the error: a
    /// [`Configuration`](crate::ErrorKind::Configuration) error for a paused state resumed
    /// undecided or tool calls with no tools registered, the model's own errors (after its
    /// provider's retries), and a journal's.
    pub async fn run<'a>(&self, input: impl Into<RunInput<'a>>) -> Result<AgentState, RunError> {
        let input = input.into();
        let mode = tool_mode(&input);
        let events = Events::unwatched(input.journal);
        self.inner.drive(Box::new(input), mode, &events).await
    }

    /// Runs the loop, yielding its progress: [`AgentEvent::StepStarted`], the model's text
    /// and reasoning as they arrive, [`AgentEvent::ToolStarted`],
    /// [`AgentEvent::ToolUpdate`] and [`AgentEvent::ToolFinished`], then
    /// [`AgentEvent::Finished`] with the state, last. A run that fails ends the stream with
    /// its [`RunError`] instead. [`RunStream::text`] keeps the text alone.
    ///
    /// The run happens as the stream is polled, in the task that polls it; dropping the
    /// stream cancels it. Without a journal the stream is `'static`.
    ///
    /// [`AgentEvent::StepStarted`]: crate::AgentEvent::StepStarted
    /// [`AgentEvent::ToolStarted`]: crate::AgentEvent::ToolStarted
    /// [`AgentEvent::ToolUpdate`]: crate::AgentEvent::ToolUpdate
    /// [`AgentEvent::ToolFinished`]: crate::AgentEvent::ToolFinished
    /// [`AgentEvent::Finished`]: crate::AgentEvent::Finished
    pub fn stream<'a>(&self, input: impl Into<RunInput<'a>>) -> RunStream<'a> {
        let input = input.into();
        let mode = tool_mode(&input);
        let one_at_a_time = Arc::new(AtomicBool::new(false));
        let events = events(
            Arc::clone(&self.inner),
            input,
            mode,
            Arc::clone(&one_at_a_time),
        );
        RunStream::new(events, one_at_a_time)
    }

    /// [`Agent::run`] for synchronous code: runs the loop to its end on a runtime of its
    /// own. Tools run one at a time; async tools work too. (For the progress from
    /// synchronous code, [`RunStream::blocking`] iterates a stream.)
    ///
    /// # Errors
    /// As [`Agent::run`], and a [`Configuration`](crate::ErrorKind::Configuration) error when
    /// called inside an async runtime (use `run(..).await` there).
    pub fn run_blocking<'a>(&self, input: impl Into<RunInput<'a>>) -> Result<AgentState, RunError> {
        let input = input.into();
        let runtime = match blocking_runtime() {
            Ok(runtime) => runtime,
            Err(error) => return Err(RunError::new(error, input.state)),
        };
        let events = Events::unwatched(input.journal);
        runtime.block_on(
            self.inner
                .drive(Box::new(input), ToolMode::Sequential, &events),
        )
    }

    /// Token usage of every model call this agent (and its clones) has made, over all its
    /// runs: the lifetime figure, which no budget limits ([`Budget`] limits each run; a
    /// run's own usage is its state's `usage`). [`Agent::reset_usage`] starts it again.
    pub fn total_usage(&self) -> TokenUsage {
        self.inner.total_usage()
    }

    /// Sets [`Agent::total_usage`] back to zero.
    pub fn reset_usage(&self) {
        *self
            .inner
            .total_usage
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = TokenUsage::default();
    }

    /// The agent's name, used in errors and traces.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The run limits.
    pub fn budget(&self) -> Budget {
        self.inner.budget
    }

    /// What a run sends its model.
    pub fn context(&self) -> &ContextPolicy {
        &self.inner.context
    }

    /// The per-call policy, if one was given.
    pub fn permissions(&self) -> Option<&Permissions> {
        self.inner.permissions.as_ref()
    }

    /// The tools.
    pub fn tools(&self) -> &Toolbox {
        &self.inner.tools
    }

    /// The system prompt, if one was given.
    pub fn system(&self) -> Option<&str> {
        self.inner.system.as_deref()
    }

    /// What every model call is offered: the tools' specs, plus `final_answer` when an
    /// output type is set and the model takes no schema natively.
    pub fn offered_tools(&self) -> &[Arc<ToolSpec>] {
        &self.inner.specs
    }
}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("name", &self.inner.name)
            .field("model", &self.inner.model_name)
            .field("tools", &self.inner.tools)
            .field("budget", &self.inner.budget)
            .finish_non_exhaustive()
    }
}

/// A journaled run's tool calls run one at a time, so they reach the journal in the same
/// order on a replay.
fn tool_mode(input: &RunInput<'_>) -> ToolMode {
    if input.journal.is_some() {
        ToolMode::Sequential
    } else {
        ToolMode::Concurrent
    }
}
