//! `Toolbox`: the registry an agent calls tools through, and the approval gate.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt as _;
use serde_json::Value;
use tracing::Instrument as _;

use super::human::{Approver, Human};
use super::{Ctx, IntoTool, Tool, ToolSpec, same_tool};
use crate::error::{Error, Result, ToolError};
use crate::message::Content;
use crate::telemetry;

/// Whether a call goes through the toolbox's approval callback: how the agent loop hands a
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

/// Up to this many tools, a name is looked up by comparing it with each.
const SCANNED: usize = 8;

/// The tools an agent may call, by name, in registration order.
///
/// Registering the same tool twice is fine; a *different* tool under a taken name is an
/// error, since the model could only ever reach one of them. Cloning a toolbox is cheap: the
/// tools are shared.
///
/// ```
/// use harness_core::{tool, Toolbox};
/// use serde_json::json;
///
/// /// Add two integers.
/// #[tool]
/// fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let tools = Toolbox::builder().tool(Add).build()?;
/// assert_eq!(tools.call("add", json!({"a": 2, "b": 3})).await?, "5");
/// assert!(tools.call("sub", json!({})).await.unwrap_err().is_not_found());
/// # Ok::<(), harness_core::Error>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Default)]
pub struct Toolbox {
    tools: Vec<Arc<dyn Tool>>,
    specs: Vec<ToolSpec>,
    // The neutral JSON of each spec, built once at registration: `schemas()` is then free.
    schemas: Vec<Value>,
    index: HashMap<String, usize>,
    human: Option<Arc<dyn Human>>,
    /// How long a call of a tool without its own timeout may run.
    timeout: Option<Duration>,
}

impl Toolbox {
    /// An empty toolbox.
    pub fn new() -> Self {
        Self::default()
    }

    /// A builder that collects tools and reports a name collision once, at `build()`.
    pub fn builder() -> ToolboxBuilder {
        ToolboxBuilder::default()
    }

    /// A builder holding this toolbox's tools and approval callback, to add more.
    pub fn into_builder(self) -> ToolboxBuilder {
        ToolboxBuilder {
            toolbox: self,
            error: None,
        }
    }

    /// Registers a tool under its spec's name; the same tool twice is one. (The builders
    /// are the public way in, so a collision is reported once, at `build()`.)
    pub(crate) fn register(&mut self, tool: Arc<dyn Tool>) -> Result<&mut Self> {
        let name = tool.spec().name.clone();
        if tool.spec().timeout == Some(Duration::ZERO) {
            return Err(Error::configuration(format!(
                "tool '{name}' has a timeout of zero, which would stop every call before it \
                 starts; give it a positive timeout, or none"
            )));
        }
        if let Some(&at) = self.index.get(&name) {
            if same_tool(self.tools[at].as_ref(), tool.as_ref()) {
                return Ok(self);
            }
            return Err(Error::configuration(format!(
                "a different tool named '{name}' is already registered; rename one with \
                 #[tool(name = \"...\")]"
            )));
        }
        self.index.insert(name, self.tools.len());
        self.specs.push(tool.spec().clone());
        self.schemas.push(tool.spec().to_schema());
        self.tools.push(tool);
        Ok(self)
    }

    /// True when a [`Human`] (or an approval callback) is set: gated calls are ruled on
    /// during the call instead of pausing a run.
    pub fn can_ask(&self) -> bool {
        self.human.is_some()
    }

    /// How long a call of a tool without a timeout of its own may run
    /// ([`ToolboxBuilder::tool_timeout`]).
    pub fn tool_timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// The [`Human`] gated calls and questions go to, if one is set.
    pub fn human(&self) -> Option<&Arc<dyn Human>> {
        self.human.as_ref()
    }

    /// The spec of the tool registered as `name`.
    ///
    /// # Errors
    /// [`ToolError::not_found`], listing the registered names.
    pub fn get(&self, name: &str) -> Result<&ToolSpec, ToolError> {
        self.position(name).map(|at| &self.specs[at])
    }

    /// The tool registered as `name`, if any.
    pub fn tool(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.find(name).map(|at| &self.tools[at])
    }

    /// True when a tool is registered as `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.find(name).is_some()
    }

    /// The registered names, in registration order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.specs.iter().map(|s| s.name.as_str())
    }

    /// The registered tools, in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.tools.iter()
    }

    /// How many tools are registered.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// True when no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Every tool's spec, in registration order: what an [`Llm`](crate::Llm) is handed.
    pub fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    /// Every tool's neutral `{"name", "description", "parameters"}` schema, in registration
    /// order. Built once, when each tool is registered.
    pub fn schemas(&self) -> &[Value] {
        &self.schemas
    }

    /// Calls tool `name` with `arguments` outside any run: an empty [`Ctx`], and the gate as
    /// the tool declares it.
    ///
    /// # Errors
    /// A [`ToolError`]: the tool is not registered, the call was refused, the arguments do
    /// not fit, or the tool's own failure or question.
    pub async fn call(&self, name: &str, arguments: Value) -> Result<String, ToolError> {
        self.call_with(name, arguments, &Ctx::new(), Gate::Declared)
            .await
    }

    /// As [`Toolbox::call`], with `ctx` (its dependencies) handed to the tool, as a run
    /// hands its own: for testing a tool that reads its deps.
    ///
    /// # Errors
    /// As [`Toolbox::call`].
    pub async fn call_with_ctx(
        &self,
        name: &str,
        arguments: Value,
        ctx: &Ctx,
    ) -> Result<String, ToolError> {
        self.call_with(name, arguments, ctx, Gate::Declared).await
    }

    /// As [`Toolbox::call_with_ctx`], keeping everything the tool returned: its images and
    /// documents beside the text (what a toolbox served over MCP hands back).
    ///
    /// # Errors
    /// As [`Toolbox::call`].
    pub async fn call_content_with_ctx(
        &self,
        name: &str,
        arguments: Value,
        ctx: &Ctx,
    ) -> Result<Content, ToolError> {
        self.call_content_with(name, None, arguments, ctx, Gate::Declared)
            .await
    }

    /// Calls tool `name` with `arguments`, the run's `ctx`, and the given `gate`; the text of
    /// what it returns.
    ///
    /// A gated call is put to the approval callback first, when there is one. A tool that
    /// panics is reported as a failed call instead of taking the caller down.
    ///
    /// # Errors
    /// As [`Toolbox::call`].
    pub(crate) async fn call_with(
        &self,
        name: &str,
        arguments: Value,
        ctx: &Ctx,
        gate: Gate,
    ) -> Result<String, ToolError> {
        self.call_content_with(name, None, arguments, ctx, gate)
            .await
            .map(|content| content.text().into_owned())
    }

    /// As [`Toolbox::call_with`], keeping the images and documents the tool returned beside
    /// its text ([`Tool::call_content`]): what the agent loop records, with the model's id
    /// for the call when it gave one. The whole call, gate included, is one `execute_tool`
    /// span.
    ///
    /// # Errors
    /// As [`Toolbox::call`].
    pub(crate) async fn call_content_with(
        &self,
        name: &str,
        call_id: Option<&str>,
        arguments: Value,
        ctx: &Ctx,
        gate: Gate,
    ) -> Result<Content, ToolError> {
        let span = telemetry::tool_span(name, call_id);
        let result = self
            .gate_and_run(name, call_id, arguments, ctx, gate)
            .instrument(span.clone())
            .await;
        if let Err(error) = &result {
            telemetry::record_tool_error(&span, error);
        }
        result
    }

    async fn gate_and_run(
        &self,
        name: &str,
        call_id: Option<&str>,
        arguments: Value,
        ctx: &Ctx,
        gate: Gate,
    ) -> Result<Content, ToolError> {
        let at = self.position(name)?;
        let (tool, spec) = (&self.tools[at], &self.specs[at]);
        let gated = match gate {
            Gate::Declared => spec.requires_approval,
            Gate::Ask => true,
            Gate::Open => false,
        };
        if let (true, Some(human)) = (gated, &self.human)
            && !human.approve(name, &arguments).await
        {
            return Err(ToolError::denied(name, arguments));
        }
        let mut ctx = ctx.clone().with_call(name, call_id);
        if let Some(human) = &self.human
            && !ctx.has_human()
        {
            ctx = ctx.with_shared_human(Arc::clone(human));
        }
        let call = AssertUnwindSafe(tool.call_content(arguments, ctx)).catch_unwind();
        let finished = match spec.timeout.or(self.timeout) {
            None => call.await,
            // Boxed as `dyn`: only a timed call pays for the timer, in its future and in code.
            Some(limit) => match timed(call, limit).await {
                Ok(finished) => finished,
                Err(_) => return Err(ToolError::timed_out(name, limit)),
            },
        };
        finished
            .unwrap_or_else(|panic| Err(panicked(name, panic.as_ref())))
            .map_err(|error| error.for_tool(name))
    }

    /// Where the tool named `name` is. A few names are compared in turn, which is quicker
    /// than hashing the name and touches less code; a large toolbox uses its index.
    fn find(&self, name: &str) -> Option<usize> {
        if self.specs.len() <= SCANNED {
            self.specs.iter().position(|spec| spec.name == name)
        } else {
            self.index.get(name).copied()
        }
    }

    fn position(&self, name: &str) -> Result<usize, ToolError> {
        self.find(name).ok_or_else(|| {
            let available: Vec<&str> = self.names().collect();
            ToolError::not_found(name, &available)
        })
    }
}

/// `call`, stopped at `limit`.
fn timed<'a, T: 'a>(
    call: impl Future<Output = T> + Send + 'a,
    limit: Duration,
) -> Pin<Box<dyn Future<Output = std::result::Result<T, tokio::time::error::Elapsed>> + Send + 'a>>
{
    Box::pin(tokio::time::timeout(limit, call))
}

/// A default tool timeout of zero would stop every call before it starts.
pub(crate) fn check_tool_timeout(timeout: Option<Duration>) -> Result<()> {
    if timeout == Some(Duration::ZERO) {
        return Err(Error::configuration(
            "the tool timeout is zero, which would stop every call before it starts; give a \
             positive timeout, or none",
        ));
    }
    Ok(())
}

/// Sets the default tool timeout (an agent's [`tool_timeout`](crate::AgentBuilder::tool_timeout)).
pub(crate) fn set_tool_timeout(toolbox: &mut Toolbox, timeout: Duration) {
    toolbox.timeout = Some(timeout);
}

/// A tool that panicked, as an error the model can read.
pub(crate) fn panicked(tool: &str, payload: &(dyn std::any::Any + Send)) -> ToolError {
    let detail = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_owned());
    ToolError::failed(format!("the tool panicked: {detail}")).for_tool(tool)
}

impl fmt::Debug for Toolbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Toolbox")
            .field("tools", &self.names().collect::<Vec<_>>())
            .field("can_ask", &self.can_ask())
            .finish()
    }
}

/// Collects tools for a [`Toolbox`]; see [`Toolbox::builder`].
#[derive(Default)]
#[must_use = "call build() to get the toolbox"]
pub struct ToolboxBuilder {
    toolbox: Toolbox,
    error: Option<Error>,
}

impl ToolboxBuilder {
    /// Adds a tool: a value or an `Arc<dyn Tool>`.
    pub fn tool(mut self, tool: impl IntoTool) -> Self {
        if self.error.is_none()
            && let Err(e) = self.toolbox.register(tool.into_tool())
        {
            self.error = Some(e);
        }
        self
    }

    /// Adds every tool of `tools`.
    pub fn tools<T: IntoTool>(self, tools: impl IntoIterator<Item = T>) -> Self {
        tools.into_iter().fold(self, Self::tool)
    }

    /// Sets the [`Human`] the toolbox turns to during a call: each gated call is put to
    /// [`Human::approve`] before it runs (`false` refuses it with [`ToolError::denied`]),
    /// and each tool's [`Ctx::ask`] (an MCP server's elicitation included) reaches
    /// [`Human::ask`].
    ///
    /// Without one nothing is gated at the toolbox level; an agent pauses the run on a
    /// gated call instead, for a human to rule on later.
    pub fn human(mut self, human: impl Human + 'static) -> Self {
        self.toolbox.human = Some(Arc::new(human));
        self
    }

    /// As [`ToolboxBuilder::human`], with a human that is already shared (the same one as
    /// another toolbox's, an MCP server's elicitor).
    pub fn shared_human(mut self, human: Arc<dyn Human>) -> Self {
        self.toolbox.human = Some(human);
        self
    }

    /// Sets a human that only approves, from a callback taking each gated call's name and
    /// arguments: `true` runs it, `false` refuses it ([`ToolError::denied`]). Questions are
    /// declined.
    pub fn approve(self, approve: impl Fn(&str, &Value) -> bool + Send + Sync + 'static) -> Self {
        self.human(Approver::sync(approve))
    }

    /// As [`ToolboxBuilder::approve`], with an async callback (one that asks a person over
    /// a network, say).
    pub fn approve_async<F, Fut>(self, approve: F) -> Self
    where
        F: Fn(String, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + Send + 'static,
    {
        self.human(Approver::from_async(approve))
    }

    /// Stops any call still running after `timeout`, for the tools without a timeout of
    /// their own ([`ToolSpec::with_timeout`]): its future is dropped and the model reads
    /// [`ToolError::timed_out`] as the call's result, so one tool that hangs (a server that
    /// never answers, a loop) cannot hang the run. Approval is not timed. No limit by
    /// default; a zero timeout is refused at `build()`. The timer is Tokio's: a timed call
    /// needs a runtime with its time driver (`#[tokio::main]` and `Runtime::new` have it).
    pub fn tool_timeout(mut self, timeout: Duration) -> Self {
        self.toolbox.timeout = Some(timeout);
        self
    }

    /// The toolbox.
    ///
    /// # Errors
    /// The first name collision met while adding tools, or a tool timeout of zero.
    pub fn build(self) -> Result<Toolbox> {
        match self.error {
            Some(e) => Err(e),
            None => {
                check_tool_timeout(self.toolbox.timeout)?;
                Ok(self.toolbox)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{Gate, Toolbox};
    use crate::error::ToolError;
    use crate::tool::{Ctx, Tool, ToolSpec};

    /// Echoes its arguments, or the tenant in its deps.
    struct Echo(ToolSpec);

    impl Echo {
        fn new(name: &str, gated: bool) -> Self {
            let mut spec = ToolSpec::new(name, "Echo.", json!({"type": "object"}));
            spec.requires_approval = gated;
            Self(spec)
        }
    }

    #[async_trait::async_trait]
    impl Tool for Echo {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }
        async fn call(&self, arguments: Value, ctx: Ctx) -> Result<String, ToolError> {
            Ok(ctx
                .deps::<String>()
                .cloned()
                .unwrap_or_else(|| arguments.to_string()))
        }
    }

    fn block_on<F: std::future::Future>(future: F) -> F::Output {
        futures_util::FutureExt::now_or_never(future).unwrap_or_else(|| panic!("not ready"))
    }

    #[test]
    fn a_policys_ask_gates_an_ungated_tool_and_its_allow_is_not_asked_again() {
        let tools = Toolbox::builder()
            .tool(Echo::new("free", false))
            .tool(Echo::new("gated", true))
            .approve(|_, _| false)
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let ctx = Ctx::new();
        let asked = block_on(tools.call_with("free", json!({}), &ctx, Gate::Ask));
        assert!(asked.is_err_and(|e| e.is_denied()));
        let declared = block_on(tools.call_with("gated", json!({}), &ctx, Gate::Declared));
        assert!(declared.is_err_and(|e| e.is_denied()));
        let open = block_on(tools.call_with("gated", json!({"a": 1}), &ctx, Gate::Open));
        assert_eq!(open.ok().as_deref(), Some(r#"{"a":1}"#));
    }

    #[test]
    fn the_runs_ctx_reaches_the_tool() {
        let tools = Toolbox::builder()
            .tool(Echo::new("tenant", false))
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let ctx = Ctx::new().with_deps("acme".to_owned());
        let text = block_on(tools.call_with_ctx("tenant", json!({}), &ctx));
        assert_eq!(text.ok().as_deref(), Some("acme"));
        let text = block_on(tools.call("tenant", json!({})));
        assert_eq!(text.ok().as_deref(), Some("{}"));
    }

    /// Small toolboxes are scanned, large ones use the index: every size finds each tool
    /// under its own name, and no other.
    #[test]
    fn each_tool_is_found_under_its_name_in_small_and_large_toolboxes() {
        for size in [1, super::SCANNED, super::SCANNED + 1, 3 * super::SCANNED] {
            let names: Vec<String> = (0..size).map(|i| format!("tool_{i}")).collect();
            let mut builder = Toolbox::builder();
            for (i, name) in names.iter().enumerate() {
                builder = builder.tool(Echo::new(name, i % 2 == 1));
            }
            let tools = builder.build().unwrap_or_else(|e| panic!("{e}"));
            for (i, name) in names.iter().enumerate() {
                let spec = tools.get(name).unwrap_or_else(|e| panic!("{size}: {e}"));
                assert_eq!((&spec.name, spec.requires_approval), (name, i % 2 == 1));
                assert!(tools.contains(name));
                let tool = tools.tool(name).map(|t| t.spec().name.clone());
                assert_eq!(tool.as_deref(), Some(name.as_str()));
                let text = block_on(tools.call_content_with(
                    name,
                    None,
                    json!({"i": i}),
                    &Ctx::new(),
                    Gate::Open,
                ));
                let text = text.map(|c| c.text().into_owned()).ok();
                assert_eq!(text, Some(format!("{{\"i\":{i}}}")));
            }
            assert!(!tools.contains("tool_"));
            assert!(tools.get("tool").is_err_and(|e| e.is_not_found()));
        }
    }
}
