//! An agent as a tool of another agent.

use std::sync::Arc;

use serde_json::{Value, json};

use super::handle::Agent;
use super::input::RunInput;
use crate::error::ToolError;
use crate::message::Content;
use crate::tool::{Ctx, Tool, ToolSpec};

impl Agent {
    /// This agent as a tool another agent can call: the model sends one `input` string, the
    /// agent runs on it with the caller's dependencies, and its answer is the result.
    ///
    /// The tool is named after the agent ([`AgentBuilder::name`](crate::AgentBuilder::name))
    /// and described by its system prompt, or `Delegate a task to the '<name>' agent.`
    /// without one; [`AgentTool::with_name`] and [`AgentTool::with_description`] choose
    /// others.
    pub fn as_tool(&self) -> AgentTool {
        let name = self.name().to_owned();
        let description = self.system().map_or_else(
            || format!("Delegate a task to the '{name}' agent."),
            str::to_owned,
        );
        AgentTool::new(self.clone(), name, description)
    }
}

/// A sub-agent behind the [`Tool`] trait; see [`Agent::as_tool`].
///
/// The model sends one `input` string; the sub-agent runs on it with the caller's
/// dependencies (so a delegated run keeps the same scope), and its answer is the call's
/// result: its text, or its structured output as JSON. A sub-agent that ends without an
/// answer (its step budget spent, a pause) is a failed call that says why.
#[derive(Clone)]
pub struct AgentTool {
    agent: Agent,
    spec: Arc<ToolSpec>,
}

impl AgentTool {
    fn new(agent: Agent, name: String, description: String) -> Self {
        let parameters = json!({
            "type": "object",
            "properties": {
                "input": {"type": "string", "description": "What to ask the agent, in full."}
            },
            "required": ["input"],
        });
        Self {
            agent,
            spec: Arc::new(ToolSpec::new(name, description, parameters)),
        }
    }

    /// The tool under another name.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.spec).name = name.into();
        self
    }

    /// The tool with another description: what the calling model reads to decide when to
    /// delegate.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.spec).description = description.into();
        self
    }

    /// The agent behind the tool.
    pub fn agent(&self) -> &Agent {
        &self.agent
    }
}

#[async_trait::async_trait]
impl Tool for AgentTool {
    fn spec(&self) -> &Arc<ToolSpec> {
        &self.spec
    }

    async fn call(&self, arguments: Value, ctx: Ctx) -> Result<Content, ToolError> {
        let Some(prompt) = arguments.get("input").and_then(Value::as_str) else {
            return Err(ToolError::invalid_arguments(
                "missing field `input` (a string)",
            ));
        };
        let input = RunInput::from(prompt).with_raw_deps(ctx.raw_deps());
        let state = self.agent.run(input).await.map_err(|failed| {
            let (error, _) = failed.into_parts();
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
            Value::String(text) => text.into(),
            other => other.to_string().into(),
        })
    }
}
