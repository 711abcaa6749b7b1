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

use super::call::{CallOptions, Gate, IntoTool, Tool, same_tool};
use super::human::Human;
use super::spec::ToolSpec;
use crate::error::{Error, Result, ToolError};
use crate::message::Content;
use crate::telemetry;

/// Up to this many tools, a name is looked up by comparing it with each.
const SCANNED: usize = 8;

/// The tools an agent may call, by name, in registration order, with the [`Human`] gated
/// calls go to and a default time limit per call.
///
/// Registering the same tool twice is fine; a *different* tool under a taken name is an
/// error, since the model could only ever reach one of them. Cloning a toolbox is cheap: it
/// is shared, and each tool's spec is the tool's own.
///
// The example names `#[tool]`, of the `macros` feature.
#[cfg_attr(feature = "macros", doc = " ```")]
#[cfg_attr(not(feature = "macros"), doc = " ```ignore")]
/// use harness_core::{tool, CallOptions, Toolbox};
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
/// let sum = tools.call("add", json!({"a": 2, "b": 3}), CallOptions::new()).await?;
/// assert_eq!(sum.text(), "5");
/// let unknown = tools.call("sub", json!({}), CallOptions::new()).await;
/// assert!(unknown.is_err_and(|e| e.is_not_found()));
/// # Ok::<(), harness_core::Error>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Default)]
pub struct Toolbox(Arc<Registry>);

#[derive(Clone, Default)]
struct Registry {
    tools: Vec<Arc<dyn Tool>>,
    /// Each tool's spec (the tool's own `Arc`), side by side: what a request is handed.
    specs: Vec<Arc<ToolSpec>>,
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

    /// A builder holding this toolbox's tools, human and timeout, to add more.
    pub fn into_builder(self) -> ToolboxBuilder {
        ToolboxBuilder {
            registry: Arc::unwrap_or_clone(self.0),
            error: None,
        }
    }

    /// True when a [`Human`] is set: gated calls are ruled on during the call instead of
    /// pausing a run.
    pub fn can_ask(&self) -> bool {
        self.0.human.is_some()
    }

    /// How long a call of a tool without a timeout of its own may run
    /// ([`ToolboxBuilder::tool_timeout`]).
    pub fn tool_timeout(&self) -> Option<Duration> {
        self.0.timeout
    }

    /// The [`Human`] gated calls and questions go to, if one is set.
    pub fn human(&self) -> Option<&Arc<dyn Human>> {
        self.0.human.as_ref()
    }

    /// The spec of the tool registered as `name`.
    ///
    /// # Errors
    /// [`ToolError::not_found`], listing the registered names.
    pub fn get(&self, name: &str) -> Result<&Arc<ToolSpec>, ToolError> {
        self.position(name).map(|at| &self.0.specs[at])
    }

    /// The tool registered as `name`, if any.
    pub fn tool(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.find(name).map(|at| &self.0.tools[at])
    }

    /// True when a tool is registered as `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.find(name).is_some()
    }

    /// The registered names, in registration order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.specs.iter().map(|s| s.name.as_str())
    }

    /// The registered tools, in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.0.tools.iter()
    }

    /// How many tools are registered.
    pub fn len(&self) -> usize {
        self.0.tools.len()
    }

    /// True when no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.0.tools.is_empty()
    }

    /// Every tool's spec, in registration order: what an [`Llm`](crate::Llm) is handed.
    pub fn specs(&self) -> &[Arc<ToolSpec>] {
        &self.0.specs
    }

    /// Calls tool `name` with `arguments`, as `options` say: the [`Ctx`](crate::Ctx) the
    /// tool gets (empty by default), a time limit over the tool's and the toolbox's own, the
    /// model's id for the call.
    ///
    /// A gated call is put to the toolbox's [`Human`] first, when there is one. A tool that
    /// panics is a failed call instead of taking the caller down; a tool still running at its
    /// limit is stopped (its future dropped) and the call is
    /// [`timed out`](ToolError::timed_out). The call, gate included, is one `execute_tool`
    /// span.
    ///
    /// # Errors
    /// A [`ToolError`]: the tool is not registered, the call was refused, the arguments do
    /// not fit, the call timed out, or the tool's own failure or question.
    pub async fn call(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> Result<Content, ToolError> {
        let span = telemetry::tool_span(name, options.call_id());
        let result = self
            .gate_and_run(name, arguments, options)
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
        arguments: Value,
        options: CallOptions,
    ) -> Result<Content, ToolError> {
        let at = self.position(name)?;
        let (tool, spec) = (&self.0.tools[at], &self.0.specs[at]);
        let gated = match options.gate() {
            Gate::Declared => spec.requires_approval,
            Gate::Ask => true,
            Gate::Open => false,
        };
        if let (true, Some(human)) = (gated, &self.0.human)
            && !human.approve(name, &arguments).await
        {
            return Err(ToolError::denied(name, arguments));
        }
        let limit = options.timeout().or(spec.timeout).or(self.0.timeout);
        let (ctx, call_id) = options.into_parts();
        let mut ctx = ctx.with_call_id(name, call_id);
        if let Some(human) = &self.0.human
            && !ctx.has_human()
        {
            ctx = ctx.with_human_arc(Arc::clone(human));
        }
        let call = AssertUnwindSafe(tool.call(arguments, ctx)).catch_unwind();
        let finished = match limit {
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
        if self.0.specs.len() <= SCANNED {
            self.0.specs.iter().position(|spec| spec.name == name)
        } else {
            self.0.index.get(name).copied()
        }
    }

    fn position(&self, name: &str) -> Result<usize, ToolError> {
        self.find(name).ok_or_else(|| {
            let available: Vec<&str> = self.names().collect();
            ToolError::not_found(name, &available)
        })
    }
}

impl Registry {
    /// Registers a tool under its spec's name; the same tool twice is one.
    fn register(&mut self, tool: Arc<dyn Tool>) -> Result<()> {
        let spec = Arc::clone(tool.spec());
        if spec.timeout == Some(Duration::ZERO) {
            return Err(Error::configuration(format!(
                "tool '{}' has a timeout of zero, which would stop every call before it \
                 starts; give it a positive timeout, or none",
                spec.name
            )));
        }
        if let Some(&at) = self.index.get(&spec.name) {
            if same_tool(self.tools[at].as_ref(), tool.as_ref()) {
                return Ok(());
            }
            return Err(Error::configuration(format!(
                "a different tool named '{}' is already registered; rename one with \
                 #[tool(name = \"...\")]",
                spec.name
            )));
        }
        self.index.insert(spec.name.clone(), self.tools.len());
        self.specs.push(spec);
        self.tools.push(tool);
        Ok(())
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
    registry: Registry,
    error: Option<Error>,
}

impl ToolboxBuilder {
    /// Adds a tool: a value or an `Arc<dyn Tool>`.
    pub fn tool(mut self, tool: impl IntoTool) -> Self {
        if self.error.is_none()
            && let Err(e) = self.registry.register(tool.into_tool())
        {
            self.error = Some(e);
        }
        self
    }

    /// Adds every tool of `tools`: what `file_tools`, `McpServer::tools` and similar
    /// factories return.
    pub fn tools<T: IntoTool>(self, tools: impl IntoIterator<Item = T>) -> Self {
        tools.into_iter().fold(self, Self::tool)
    }

    /// Sets the [`Human`] the toolbox turns to during a call: each gated call is put to
    /// [`Human::approve`] before it runs (`false` refuses it with [`ToolError::denied`]),
    /// and each tool's [`Ctx::ask`](crate::Ctx::ask) (an MCP server's elicitation included)
    /// reaches [`Human::ask`]. A callback `|name, arguments| -> bool` is a human that only
    /// approves; an `Arc` of a human is one too, to share it.
    ///
    /// Without one nothing is gated at the toolbox level; an agent pauses the run on a
    /// gated call instead, for a human to rule on later.
    pub fn human(mut self, human: impl Human + 'static) -> Self {
        self.registry.human = Some(Arc::new(human));
        self
    }

    /// Stops any call still running after `timeout`, for the tools without a timeout of
    /// their own ([`ToolSpec::with_timeout`]): its future is dropped and the model reads
    /// [`ToolError::timed_out`] as the call's result, so one tool that hangs (a server that
    /// never answers, a loop) cannot hang the run. Approval is not timed. No limit by
    /// default; a zero timeout is refused at `build()`. The timer is Tokio's: a timed call
    /// needs a runtime with its time driver (`#[tokio::main]` and `Runtime::new` have it).
    pub fn tool_timeout(mut self, timeout: Duration) -> Self {
        self.registry.timeout = Some(timeout);
        self
    }

    /// The toolbox.
    ///
    /// # Errors
    /// The first name collision met while adding tools, or a tool timeout of zero.
    pub fn build(self) -> Result<Toolbox> {
        if let Some(e) = self.error {
            return Err(e);
        }
        if self.registry.timeout == Some(Duration::ZERO) {
            return Err(Error::configuration(
                "the tool timeout is zero, which would stop every call before it starts; \
                 give a positive timeout, or none",
            ));
        }
        Ok(Toolbox(Arc::new(self.registry)))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::{Value, json};

    use super::Toolbox;
    use crate::error::ToolError;
    use crate::message::Content;
    use crate::tool::{CallOptions, Ctx, Gate, Tool, ToolSpec, approve_fn};

    /// Echoes its arguments, or the tenant in its deps.
    struct Echo(Arc<ToolSpec>);

    impl Echo {
        fn new(name: &str, gated: bool) -> Self {
            let spec = ToolSpec::new(name, "Echo.", json!({"type": "object"}))
                .with_requires_approval(gated);
            Self(Arc::new(spec))
        }
    }

    #[async_trait::async_trait]
    impl Tool for Echo {
        fn spec(&self) -> &Arc<ToolSpec> {
            &self.0
        }
        async fn call(&self, arguments: Value, ctx: Ctx) -> Result<Content, ToolError> {
            Ok(ctx
                .deps::<String>()
                .cloned()
                .unwrap_or_else(|| arguments.to_string())
                .into())
        }
    }

    fn block_on<F: std::future::Future>(future: F) -> F::Output {
        futures_util::FutureExt::now_or_never(future).unwrap_or_else(|| panic!("not ready"))
    }

    fn text(result: Result<Content, ToolError>) -> Option<String> {
        result.ok().map(|c| c.text().into_owned())
    }

    #[test]
    fn a_policys_ask_gates_an_ungated_tool_and_its_allow_is_not_asked_again() {
        let tools = Toolbox::builder()
            .tool(Echo::new("free", false))
            .tool(Echo::new("gated", true))
            .human(approve_fn(|_, _| false))
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let with = |gate| CallOptions::new().with_gate(gate);
        let asked = block_on(tools.call("free", json!({}), with(Gate::Ask)));
        assert!(asked.is_err_and(|e| e.is_denied()));
        let declared = block_on(tools.call("gated", json!({}), with(Gate::Declared)));
        assert!(declared.is_err_and(|e| e.is_denied()));
        let open = block_on(tools.call("gated", json!({"a": 1}), with(Gate::Open)));
        assert_eq!(text(open).as_deref(), Some(r#"{"a":1}"#));
    }

    #[test]
    fn the_callers_ctx_reaches_the_tool() {
        let tools = Toolbox::builder()
            .tool(Echo::new("tenant", false))
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let options = CallOptions::new().with_ctx(Ctx::new().with_deps("acme".to_owned()));
        let called = block_on(tools.call("tenant", json!({}), options));
        assert_eq!(text(called).as_deref(), Some("acme"));
        let called = block_on(tools.call("tenant", json!({}), CallOptions::new()));
        assert_eq!(text(called).as_deref(), Some("{}"));
    }

    #[test]
    fn a_clone_shares_the_toolbox_and_each_spec_is_the_tools_own() {
        let echo: Arc<dyn Tool> = Arc::new(Echo::new("echo", false));
        let tools = Toolbox::builder()
            .tool(Arc::clone(&echo))
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let clone = tools.clone();
        assert!(Arc::ptr_eq(&tools.0, &clone.0));
        assert!(Arc::ptr_eq(&tools.specs()[0], echo.spec()));
        // Growing a shared toolbox copies it; the original is untouched.
        let grown = clone
            .into_builder()
            .tool(Echo::new("more", false))
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((tools.len(), grown.len()), (1, 2));
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
                let options = CallOptions::new().with_gate(Gate::Open);
                let called = block_on(tools.call(name, json!({"i": i}), options));
                assert_eq!(text(called), Some(format!("{{\"i\":{i}}}")));
            }
            assert!(!tools.contains("tool_"));
            assert!(tools.get("tool").is_err_and(|e| e.is_not_found()));
        }
    }
}
