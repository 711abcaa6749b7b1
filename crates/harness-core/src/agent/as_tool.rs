//! An agent as a tool of another agent.

use serde_json::{Value, json};

use super::{Agent, RunInput};
use crate::error::ToolError;
use crate::tool::{Ctx, Tool, ToolSpec};

/// A sub-agent behind the [`Tool`] trait; see [`Agent::as_tool`] and [`Agent::as_named_tool`].
///
/// The model sends one `input` string; the sub-agent runs on it with the caller's
/// dependencies (so a delegated run keeps the same scope), and its answer is the call's
/// result: its text, or its structured output as JSON. A sub-agent that ends without an
/// answer (its step budget spent, a pause) is a failed call that says why.
#[derive(Clone)]
pub struct AgentTool {
    agent: Agent,
    spec: ToolSpec,
}

impl AgentTool {
    pub(crate) fn new(agent: Agent, name: String, description: String) -> Self {
        let parameters = json!({
            "type": "object",
            "properties": {
                "input": {"type": "string", "description": "What to ask the agent, in full."}
            },
            "required": ["input"],
        });
        Self {
            agent,
            spec: ToolSpec::new(name, description, parameters),
        }
    }

    /// The agent behind the tool.
    pub fn agent(&self) -> &Agent {
        &self.agent
    }
}

#[async_trait::async_trait]
impl Tool for AgentTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, arguments: Value, ctx: Ctx) -> Result<String, ToolError> {
        let Some(prompt) = arguments.get("input").and_then(Value::as_str) else {
            return Err(ToolError::invalid_arguments(
                "missing field `input` (a string)",
            ));
        };
        let input = RunInput::from(prompt).with_raw_deps(ctx.raw_deps());
        let state = self.agent.run(input).await.map_err(|error| {
            ToolError::failed(format!("the {} agent failed: {error}", self.agent.name()))
                .with_source(error)
        })?;
        if !state.answered() {
            let reason = state.stop_reason.as_str();
            return Err(ToolError::failed(format!(
                "the {} agent stopped without an answer ({reason})",
                self.agent.name()
            )));
        }
        Ok(match state.output {
            Value::String(text) => text,
            other => other.to_string(),
        })
    }
}
