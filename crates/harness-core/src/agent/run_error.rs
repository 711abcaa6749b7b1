//! `RunError`: a failed run's error, with the run so far beside it.

use std::fmt;
use std::ops::Deref;

use super::state::AgentState;
use crate::error::Error;

/// Why a run failed, and the run so far: what [`Agent::run`](crate::Agent::run) and
/// [`Agent::stream`](crate::Agent::stream) give back when a run ends in an error rather than
/// a stop reason.
///
/// It dereferences to the [`Error`] (`err.is_provider()`, `err.status()`), converts into it
/// with `?`, and keeps the state beside it: every message up to the failure and its usage
/// (stop reason [`Unfinished`](crate::StopReason::Unfinished)), or the state as it was given
/// for a run that could not start (a pause not ruled on keeps its pending calls). Running
/// that state again continues the run; a tool whose result is already in the transcript
/// does not run again.
///
/// ```
/// use harness_core::testing::ScriptedModel;
/// use harness_core::{Agent, Error, ProviderError};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let model = ScriptedModel::new([]).then_fail(ProviderError::new("openai", "overloaded").into());
/// let agent = Agent::builder(model).build()?;
/// let failed = agent.run("hi").await.unwrap_err();
/// assert!(failed.is_provider());
/// assert_eq!(failed.state().messages.len(), 1); // the prompt, kept
/// let (error, state) = failed.into_parts();
/// assert_eq!(error.to_string(), "openai request failed: overloaded");
/// assert_eq!(state.messages[0].text(), "hi");
/// # Ok::<(), Error>(())
/// # }).unwrap();
/// ```
pub struct RunError {
    error: Error,
    state: Box<AgentState>,
}

impl RunError {
    /// `error`, which ended a run at `state`.
    pub fn new(error: Error, state: AgentState) -> Self {
        Self {
            error,
            state: Box::new(state),
        }
    }

    /// The error.
    pub fn error(&self) -> &Error {
        &self.error
    }

    /// The run so far.
    pub fn state(&self) -> &AgentState {
        &self.state
    }

    /// The run so far, owned.
    pub fn into_state(self) -> AgentState {
        *self.state
    }

    /// The error and the run so far.
    pub fn into_parts(self) -> (Error, AgentState) {
        (self.error, *self.state)
    }
}

impl Deref for RunError {
    type Target = Error;

    fn deref(&self) -> &Error {
        &self.error
    }
}

impl fmt::Debug for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunError")
            .field("error", &self.error)
            .field("messages", &self.state.messages.len())
            .finish_non_exhaustive()
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

/// The error's own source: a `RunError` displays as its error, so it does not repeat it.
impl std::error::Error for RunError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

impl From<RunError> for Error {
    fn from(failed: RunError) -> Self {
        failed.error
    }
}
