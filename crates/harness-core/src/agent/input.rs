//! `RunInput`: what one run starts from, and the options it runs with.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use super::journal::Journal;
use super::state::AgentState;
use crate::message::Message;
use crate::request::ModelSettings;
use crate::tool::Deps;

/// What a run starts from (a prompt, messages, or a state to resume) and the options of that
/// one run: its dependencies, which tools reach through [`Ctx::deps`](crate::Ctx::deps), its
/// model settings, and the [`Journal`] its steps go through. Every per-run option is set
/// here, so [`Agent::run`](crate::Agent::run) and [`Agent::stream`](crate::Agent::stream)
/// stay the only ways to run.
///
/// A prompt, a message, messages or a state convert into one, so `agent.run("Hi")` needs
/// nothing more.
///
/// ```
/// use harness_core::RunInput;
///
/// struct Deps { tenant: &'static str }
/// let input = RunInput::from("What plan is Acme on?").with_deps(Deps { tenant: "acme" });
/// ```
#[derive(Clone, Default)]
pub struct RunInput<'a> {
    pub(crate) state: AgentState,
    pub(crate) deps: Option<Deps>,
    pub(crate) settings: ModelSettings,
    pub(crate) journal: Option<&'a dyn Journal>,
}

impl<'a> RunInput<'a> {
    /// A run from `state`: a prompt, messages, or a state to resume.
    pub fn new(state: impl Into<AgentState>) -> Self {
        Self {
            state: state.into(),
            ..Self::default()
        }
    }

    /// Model settings for this run alone, over the agent's (which are over the provider's):
    /// the narrower wins, setting by setting.
    #[must_use]
    pub fn with_settings(mut self, settings: ModelSettings) -> Self {
        self.settings = settings;
        self
    }

    /// The run's dependencies: they belong to the run, not the agent, so one agent serves
    /// many requests, each with its own. Tools read them with [`Ctx::deps`](crate::Ctx::deps)
    /// (a reference) or [`Ctx::shared_deps`](crate::Ctx::shared_deps) (a shared handle).
    #[must_use]
    pub fn with_deps<D: Any + Send + Sync>(mut self, deps: D) -> Self {
        self.deps = Some(Arc::new(deps));
        self
    }

    /// Runs every model call and tool call through `journal`, which may record each result
    /// and hand it back on a replay instead of running the step again: how a durable engine
    /// (`deepharness-durable`, on Restate) runs an agent so a crashed run resumes where it
    /// was. The tool calls of a turn then run one at a time, in the model's order, so the
    /// steps reach the journal in the same order on every replay.
    #[must_use]
    pub fn with_journal(mut self, journal: &'a dyn Journal) -> Self {
        self.journal = Some(journal);
        self
    }

    /// Passes type-erased dependencies on (a sub-agent inherits its caller's).
    pub(crate) fn with_raw_deps(mut self, deps: Option<Deps>) -> Self {
        self.deps = deps;
        self
    }
}

impl fmt::Debug for RunInput<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunInput")
            .field("state", &self.state)
            .field("has_deps", &self.deps.is_some())
            .field("settings", &self.settings)
            .field("journaled", &self.journal.is_some())
            .finish()
    }
}

impl From<&str> for RunInput<'_> {
    fn from(prompt: &str) -> Self {
        Self::new(AgentState::from_prompt(prompt))
    }
}

impl From<String> for RunInput<'_> {
    fn from(prompt: String) -> Self {
        Self::new(AgentState::from_prompt(prompt))
    }
}

impl From<Message> for RunInput<'_> {
    fn from(message: Message) -> Self {
        Self::new(vec![message])
    }
}

impl From<Vec<Message>> for RunInput<'_> {
    fn from(messages: Vec<Message>) -> Self {
        Self::new(messages)
    }
}

impl From<AgentState> for RunInput<'_> {
    fn from(state: AgentState) -> Self {
        Self::new(state)
    }
}
