//! The `Tool` trait, and `CallOptions`: what a call is run with.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::ctx::Ctx;
use super::spec::ToolSpec;
use crate::error::ToolError;
use crate::message::Content;

/// Something a model can call.
///
/// `#[tool]` implements this for you; implement it by hand when the schema is only known at
/// run time. Calls may run concurrently, so a tool is `Send + Sync`; a tool that blocks should
/// do its work on [`tokio::task::spawn_blocking`] (the macro does that for a plain `fn`).
///
/// ```
/// use std::sync::Arc;
/// use harness_core::{async_trait, Content, Ctx, Tool, ToolError, ToolSpec};
/// use serde_json::{json, Value};
///
/// struct Echo(Arc<ToolSpec>);
///
/// #[async_trait]
/// impl Tool for Echo {
///     fn spec(&self) -> &Arc<ToolSpec> {
///         &self.0
///     }
///     async fn call(&self, arguments: Value, _ctx: Ctx) -> Result<Content, ToolError> {
///         Ok(arguments["text"].as_str().unwrap_or_default().into())
///     }
/// }
///
/// let echo = Echo(Arc::new(ToolSpec::new(
///     "echo",
///     "Repeat the text.",
///     json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
/// )));
/// assert_eq!(echo.spec().name, "echo");
/// ```
#[async_trait::async_trait]
pub trait Tool: Any + Send + Sync {
    /// The tool's name, description, parameter schema, gate and timeout. Built once, not per
    /// call, and shared: toolboxes, agents and requests hold this one copy.
    fn spec(&self) -> &Arc<ToolSpec>;

    /// Runs the tool with the model's `arguments` (a JSON object) and the run's `ctx`.
    ///
    /// The `Ok` content is what the model reads: text (a `String` converts), or text with
    /// images or documents beside it for a model that reads them (an MCP server's
    /// screenshot). An `Err` reaches the model as the call's result too
    /// ([`ToolError::model_text`]), except a question ([`ToolError::needs_human`]), which
    /// pauses the run.
    async fn call(&self, arguments: Value, ctx: Ctx) -> Result<Content, ToolError>;
}

/// What takes a tool ([`AgentBuilder::tool`](crate::AgentBuilder::tool),
/// [`ToolboxBuilder::tool`](crate::ToolboxBuilder::tool)) takes: a tool by value (a
/// `#[tool]` struct, your own [`Tool`]), or one already shared as an `Arc<dyn Tool>` (what
/// `file_tools` and `McpServer::tools` return), which is kept as it is rather than wrapped
/// again.
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
    a_any.type_id() == b_any.type_id() && (Arc::ptr_eq(a.spec(), b.spec()) || a.spec() == b.spec())
}

/// Whether a call goes through the toolbox's human for approval: how the agent loop hands a
/// permission policy's ruling to the toolbox.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Gate {
    /// As the tool declares: gated when its spec says `requires_approval`.
    #[default]
    Declared,
    /// Gated whatever the tool declares (a permission policy said "ask").
    Ask,
    /// Not gated (a permission policy already allowed this call; it is not asked twice).
    Open,
}

/// How one call is run: the context handed to the tool, a time limit, the model's id for
/// the call. What [`Toolbox::call`](crate::Toolbox::call) and an MCP server's `call` take;
/// the default is an empty [`Ctx`], the callee's own time limit, no id.
///
/// ```
/// use std::time::Duration;
/// use harness_core::{CallOptions, Ctx};
///
/// let options = CallOptions::new()
///     .with_ctx(Ctx::new().with_deps("acme".to_owned()))
///     .with_timeout(Duration::from_secs(5))
///     .with_call_id("call_1");
/// assert_eq!(options.timeout(), Some(Duration::from_secs(5)));
/// assert_eq!(options.ctx().deps::<String>().map(String::as_str), Some("acme"));
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    ctx: Ctx,
    timeout: Option<Duration>,
    call_id: Option<String>,
    gate: Gate,
}

impl CallOptions {
    /// An empty context, the callee's own time limit, no call id.
    pub fn new() -> Self {
        Self::default()
    }

    /// Hands `ctx` to the tool (its dependencies, its human, where its updates go), as a run
    /// hands its own.
    #[must_use]
    pub fn with_ctx(mut self, ctx: Ctx) -> Self {
        self.ctx = ctx;
        self
    }

    /// Stops the call still running after `timeout`, in place of any limit the tool, its
    /// toolbox or the MCP server sets (this call's own setting wins). A zero timeout stops
    /// the call before it starts.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The model's id for the call: recorded on its span, and what the tool reads through
    /// [`Ctx::call_id`] (stable across a resumed run, so an idempotency key can come from it).
    #[must_use]
    pub fn with_call_id(mut self, id: impl Into<String>) -> Self {
        self.call_id = Some(id.into());
        self
    }

    /// The context handed to the tool.
    pub fn ctx(&self) -> &Ctx {
        &self.ctx
    }

    /// The time limit set for this call, if any.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// The model's id for the call, if given.
    pub fn call_id(&self) -> Option<&str> {
        self.call_id.as_deref()
    }

    /// Whether the toolbox asks its human before running the call.
    pub(crate) fn with_gate(mut self, gate: Gate) -> Self {
        self.gate = gate;
        self
    }

    pub(crate) fn gate(&self) -> Gate {
        self.gate
    }

    /// The context and the call's id, taken apart.
    pub(crate) fn into_parts(self) -> (Ctx, Option<String>) {
        (self.ctx, self.call_id)
    }
}
