//! `ToolSpec`: what a model is told about a tool.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// What a model is told about a tool, plus whether a human must approve each call and how
/// long a call may run.
///
/// `parameters` is a JSON Schema object. [`ToolSpec::to_schema`] gives the neutral
/// `{"name", "description", "parameters"}` form providers translate into their own. A tool
/// hands its spec out as an `Arc` ([`Tool::spec`](crate::Tool::spec)), so a toolbox, an
/// agent and every request share the one copy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolSpec {
    /// The name the model calls the tool by.
    pub name: String,
    /// What the tool does, as the model reads it.
    pub description: String,
    /// The JSON Schema of the arguments: an object schema.
    pub parameters: Value,
    /// Whether each call waits for a human's approval (the toolbox's [`Human`](crate::Human),
    /// or a paused run).
    #[serde(default)]
    pub requires_approval: bool,
    /// How long one call may run before it is stopped and the model reads
    /// [`ToolError::timed_out`](crate::ToolError::timed_out) as its result; `None` leaves it
    /// to the toolbox's [`tool_timeout`](crate::ToolboxBuilder::tool_timeout), if any.
    /// Approval is not timed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
}

impl ToolSpec {
    /// A spec with the given name, description and parameter schema, not gated.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
            requires_approval: false,
            timeout: None,
        }
    }

    /// Sets whether each call waits for approval.
    #[must_use]
    pub fn with_requires_approval(mut self, requires_approval: bool) -> Self {
        self.requires_approval = requires_approval;
        self
    }

    /// Stops each call still running after `timeout` (its future is dropped, so what it
    /// owns is released, a child process killed); the model reads
    /// [`ToolError::timed_out`](crate::ToolError::timed_out) as the call's result and the run
    /// goes on. This tool's own limit, over the toolbox's
    /// [`tool_timeout`](crate::ToolboxBuilder::tool_timeout). A zero timeout is refused when
    /// the tool is added (at `build()`).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The neutral `{"name", "description", "parameters"}` form, ready for a provider.
    pub fn to_schema(&self) -> Value {
        json!({
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
        })
    }
}
