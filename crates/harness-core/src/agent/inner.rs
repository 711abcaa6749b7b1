//! `AgentInner`: what an agent is made of, shared by its clones and its runs.

use std::sync::{Arc, Mutex, PoisonError};

use super::budget::Budget;
use super::context::ContextPolicy;
use super::middleware::Middleware;
#[cfg(feature = "output")]
use super::output::OutputType;
use super::permissions::Permissions;
use crate::cost::Prices;
use crate::llm::Llm;
use crate::request::ModelSettings;
use crate::response::TokenUsage;
use crate::telemetry::ModelNames;
use crate::tool::{ToolSpec, Toolbox};

/// An agent's parts, as `build()` settled them.
pub(crate) struct AgentInner {
    pub(crate) model: Arc<dyn Llm>,
    /// `provider:model`, for errors.
    pub(crate) model_name: String,
    /// What the model charges, as its info said when the agent was built: what runs are
    /// priced with.
    pub(crate) prices: Option<Prices>,
    pub(crate) model_names: ModelNames,
    pub(crate) tools: Toolbox,
    /// The toolbox's specs plus `final_answer` when an output type is set and the model
    /// takes no schema natively: what every model call offers, built once.
    pub(crate) specs: Vec<Arc<ToolSpec>>,
    /// The agent's model settings, under each run's.
    pub(crate) settings: ModelSettings,
    /// An output type whose schema goes to the model in the request (a model with native
    /// structured output) rather than as the `final_answer` tool.
    #[cfg(feature = "output")]
    pub(crate) native_output: bool,
    pub(crate) system: Option<String>,
    pub(crate) name: String,
    pub(crate) budget: Budget,
    pub(crate) context: ContextPolicy,
    pub(crate) permissions: Option<Permissions>,
    pub(crate) middleware: Option<Arc<dyn Middleware>>,
    #[cfg(feature = "output")]
    pub(crate) output: Option<OutputType>,
    pub(crate) total_usage: Mutex<TokenUsage>,
}

impl AgentInner {
    pub(crate) fn total_usage(&self) -> TokenUsage {
        *self
            .total_usage
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// How a round of tool calls runs: concurrently, or one at a time (a journaled run, whose
/// steps must reach the journal in the same order on a replay, and the blocking path).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolMode {
    Concurrent,
    Sequential,
}
