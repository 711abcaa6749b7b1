//! The agent loop: ask a model, run the tools it asks for, repeat until it answers.
//!
//! [`Agent`] is built with [`Agent::builder`] and run two ways: [`Agent::run`] to its end,
//! or [`Agent::stream`] for its progress ([`AgentEvent`]s, ending in
//! [`AgentEvent::Finished`]); [`Agent::run_blocking`] is `run` for synchronous code. Each
//! run's options ([`RunInput`]) go with its input: dependencies, model settings, a
//! [`Journal`]. A run that fails gives its state back beside the error ([`RunError`]).
//! Around the loop: [`Budget`], [`ContextPolicy`], structured output, human approval
//! ([`AgentState::approve`]), [`Permissions`], [`Middleware`], and sub-agents as tools.

mod as_tool;
mod budget;
mod builder;
mod context;
mod events;
mod fnmatch;
mod handle;
mod handoff;
mod inner;
mod input;
mod journal;
mod middleware;
mod output;
mod permissions;
mod report;
mod run;
mod run_error;
mod state;
mod stream;

pub use as_tool::AgentTool;
pub use budget::Budget;
pub use builder::AgentBuilder;
pub use context::{ContextPolicy, Prune, estimate_tokens};
pub use events::AgentEvent;
pub use handle::Agent;
pub use input::RunInput;
pub use journal::{Journal, Step};
pub use middleware::Middleware;
pub use output::FINAL_TOOL;
pub use permissions::{Decision, Permissions, Rule};
pub use run_error::RunError;
pub use state::{AgentState, PendingHumanInput, StopReason};
pub use stream::{BlockingIter, RunStream};
