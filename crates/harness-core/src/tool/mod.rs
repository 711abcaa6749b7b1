//! Tools: the `Tool` trait, its `ToolSpec`, the run context `Ctx` and the `Toolbox`.
//!
//! Most tools are plain functions under [`#[tool]`](macro@crate::tool), which writes the
//! [`Tool`] implementation; implement the trait by hand for a tool whose schema is only known
//! at run time (an MCP server's, say).

mod ctx;
mod human;
mod schema;
mod toolbox;

use std::any::Any;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub(crate) use ctx::Deps;
pub use ctx::{Ctx, LogLevel, ToolUpdate};
pub use human::{ElicitationMode, ElicitationRequest, ElicitationResponse, Human};
pub use schema::ParametersBuilder;
pub(crate) use schema::object_schema_for;
pub(crate) use toolbox::Gate;
pub use toolbox::{Toolbox, ToolboxBuilder};
pub(crate) use toolbox::{check_tool_timeout, panicked, set_tool_timeout};

use crate::error::ToolError;
use crate::message::Content;

/// What a model is told about a tool, plus whether a human must approve each call.
///
/// `parameters` is a JSON Schema object. [`ToolSpec::to_schema`] gives the neutral
/// `{"name", "description", "parameters"}` form providers translate into their own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolSpec {
    /// The name the model calls the tool by.
    pub name: String,
    /// What the tool does, as the model reads it.
    pub description: String,
    /// The JSON Schema of the arguments: an object schema.
    pub parameters: Value,
    /// Whether each call waits for a human's approval (or the toolbox's approve callback).
    #[serde(default)]
    pub requires_approval: bool,
    /// How long one call may run before it is stopped and the model reads
    /// [`ToolError::timed_out`] as its result; `None` leaves it to the toolbox's
    /// [`tool_timeout`](ToolboxBuilder::tool_timeout), if any. Approval is not timed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<std::time::Duration>,
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
    pub fn with_requires_approval(mut self, requires_approval: bool) -> Self {
        self.requires_approval = requires_approval;
        self
    }

    /// Stops each call still running after `timeout` (its future is dropped, so what it
    /// owns is released, a child process killed); the model reads [`ToolError::timed_out`]
    /// as the call's result and the run goes on. This tool's own limit, over the toolbox's
    /// [`tool_timeout`](ToolboxBuilder::tool_timeout). A zero timeout is refused when the
    /// tool is added (at `build()`).
    #[must_use]
    pub fn with_timeout(mut self, timeout: std::time::Duration) -> Self {
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

/// Something a model can call.
///
/// `#[tool]` implements this for you; implement it by hand when the schema is only known at
/// run time. Calls may run concurrently, so a tool is `Send + Sync`; a tool that blocks should
/// do its work on [`tokio::task::spawn_blocking`] (the macro does that for a plain `fn`).
///
/// ```
/// use harness_core::{async_trait, Ctx, Tool, ToolError, ToolSpec};
/// use serde_json::{json, Value};
///
/// struct Echo(ToolSpec);
///
/// #[async_trait]
/// impl Tool for Echo {
///     fn spec(&self) -> &ToolSpec {
///         &self.0
///     }
///     async fn call(&self, arguments: Value, _ctx: Ctx) -> Result<String, ToolError> {
///         Ok(arguments["text"].as_str().unwrap_or_default().to_owned())
///     }
/// }
///
/// let echo = Echo(ToolSpec::new(
///     "echo",
///     "Repeat the text.",
///     json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
/// ));
/// assert_eq!(echo.spec().name, "echo");
/// ```
#[async_trait::async_trait]
pub trait Tool: Any + Send + Sync {
    /// The tool's name, description, parameter schema and gate. Built once, not per call.
    fn spec(&self) -> &ToolSpec;

    /// Runs the tool with the model's `arguments` (a JSON object) and the run's `ctx`.
    ///
    /// The `Ok` text is what the model reads. An `Err` reaches the model as the call's
    /// result too ([`ToolError::model_text`]), except a question
    /// ([`ToolError::needs_human`]), which pauses the run.
    async fn call(&self, arguments: Value, ctx: Ctx) -> Result<String, ToolError>;

    /// Runs the tool for a model that can read more than text: what it returns may hold
    /// images or documents beside the text (an MCP server's screenshot, say). The agent
    /// loop calls this one; the default is [`call`](Tool::call)'s text.
    ///
    /// Implement it when a tool produces media; keep [`call`](Tool::call) returning the
    /// text part, for callers that read text only.
    async fn call_content(&self, arguments: Value, ctx: Ctx) -> Result<Content, ToolError> {
        self.call(arguments, ctx).await.map(Content::Text)
    }
}

/// What takes a tool ([`AgentBuilder::tool`](crate::AgentBuilder::tool),
/// [`ToolboxBuilder::tool`]) takes: a tool by value (a `#[tool]` struct, your own [`Tool`]),
/// or one already shared as an `Arc<dyn Tool>` (what `file_tools` and `McpServer::tools`
/// return), which is kept as it is rather than wrapped again.
pub trait IntoTool {
    /// The tool, shared.
    fn into_tool(self) -> Arc<dyn Tool>;
}

impl<T: Tool> IntoTool for T {
    fn into_tool(self) -> Arc<dyn Tool> {
        Arc::new(self)
    }
}

impl IntoTool for Arc<dyn Tool> {
    fn into_tool(self) -> Arc<dyn Tool> {
        self
    }
}

/// Whether two tools are the same tool: the same type with the same spec.
pub(crate) fn same_tool(a: &dyn Tool, b: &dyn Tool) -> bool {
    let (a_any, b_any): (&dyn Any, &dyn Any) = (a, b);
    a_any.type_id() == b_any.type_id() && a.spec() == b.spec()
}
