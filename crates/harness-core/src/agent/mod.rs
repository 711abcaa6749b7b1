//! The agent loop: ask a model, run the tools it asks for, repeat until it answers.
//!
//! [`Agent`] is built with [`Agent::builder`] and run with [`Agent::run`] (async),
//! [`Agent::run_blocking`] (sync callers), [`Agent::stream`] (text as it arrives) or
//! [`Agent::stream_events`] (typed progress, ending in [`AgentEvent::Finished`]). Around the
//! loop: [`Budget`], [`ContextPolicy`], structured output, human approval
//! ([`AgentState::approve`]), [`Permissions`], [`Middleware`], and sub-agents as tools.

mod as_tool;
mod budget;
mod context;
mod events;
mod fnmatch;
mod handoff;
mod journal;
mod middleware;
mod output;
mod permissions;
mod run;
mod state;
mod stream;

use std::any::Any;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

pub use as_tool::AgentTool;
pub use budget::Budget;
pub use context::{ContextPolicy, Prune, estimate_tokens};
pub use events::AgentEvent;
pub use journal::{Journal, Step};
pub use middleware::Middleware;
pub use output::FINAL_TOOL;
pub use permissions::{Decision, Permissions, Rule};
pub use state::{AgentState, PendingHumanInput, StopReason};
pub use stream::BlockingIter;

use crate::error::{Error, Result};
use crate::llm::{BoxStream, Llm};
use crate::message::Message;
use crate::request::ModelSettings;
use crate::response::TokenUsage;
use crate::tool::{Deps, IntoTool, Tool, ToolSpec, Toolbox};
use output::OutputType;

/// The transcript text for a call a permission rule denied.
pub(crate) const DENIED_BY_POLICY: &str = "Denied by policy: this call is not permitted.";
/// The transcript text for calls left unrun because their turn paused on another call.
pub(crate) const NOT_RUN_PAUSED: &str = "Not run: the turn stopped for approval of another call.";
/// The transcript text for a call a human rejected.
pub(crate) const DENIED_BY_USER: &str = "Denied by the user.";
/// The transcript text for a call the middleware refused.
pub(crate) const REFUSED_BY_MIDDLEWARE: &str =
    "Refused before running: the agent's middleware declined this call.";
/// The transcript text for calls a budget stopped before they ran.
pub(crate) const NOT_RUN_BUDGET: &str = "Not run: the run's budget is spent.";
/// The transcript text for calls made in the same turn as `final_answer`.
pub(crate) const NOT_RUN_FINAL: &str = "Not run: final_answer ended the turn.";
/// The transcript text that answers an accepted `final_answer` call, so the transcript stays
/// valid if the conversation goes on.
pub(crate) const FINAL_ANSWER_ACCEPTED: &str = "Final answer accepted.";

/// What a run starts from: a prompt, messages, or a state to resume; and the run's
/// dependencies, which tools reach through [`Ctx::deps`](crate::Ctx::deps).
///
/// ```
/// use harness_core::agent::RunInput;
///
/// struct Deps { tenant: &'static str }
/// let input = RunInput::from("What plan is Acme on?").with_deps(Deps { tenant: "acme" });
/// ```
#[derive(Clone, Default)]
pub struct RunInput {
    state: AgentState,
    deps: Option<Deps>,
    settings: ModelSettings,
}

impl RunInput {
    /// Model settings for this run alone, over the agent's (which are over the provider's):
    /// the narrower wins, setting by setting.
    pub fn with_settings(mut self, settings: ModelSettings) -> Self {
        self.settings = settings;
        self
    }

    /// The run's dependencies: they belong to the run, not the agent, so one agent serves
    /// many requests, each with its own.
    pub fn with_deps<D: Any + Send + Sync>(self, deps: D) -> Self {
        self.with_shared_deps(Arc::new(deps))
    }

    /// Dependencies that are already shared.
    pub fn with_shared_deps<D: Any + Send + Sync>(mut self, deps: Arc<D>) -> Self {
        self.deps = Some(deps);
        self
    }

    pub(crate) fn with_raw_deps(mut self, deps: Option<Deps>) -> Self {
        self.deps = deps;
        self
    }
}

impl fmt::Debug for RunInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunInput")
            .field("state", &self.state)
            .field("has_deps", &self.deps.is_some())
            .field("settings", &self.settings)
            .finish()
    }
}

impl From<&str> for RunInput {
    fn from(prompt: &str) -> Self {
        AgentState::from_prompt(prompt).into()
    }
}

impl From<String> for RunInput {
    fn from(prompt: String) -> Self {
        AgentState::from_prompt(prompt).into()
    }
}

impl From<Message> for RunInput {
    fn from(message: Message) -> Self {
        AgentState::from(vec![message]).into()
    }
}

impl From<Vec<Message>> for RunInput {
    fn from(messages: Vec<Message>) -> Self {
        AgentState::from(messages).into()
    }
}

impl From<AgentState> for RunInput {
    fn from(state: AgentState) -> Self {
        Self {
            state,
            deps: None,
            settings: ModelSettings::default(),
        }
    }
}

/// A think/act loop against a model.
///
/// Built once, run many times: each run gets its own state and dependencies. Cloning an
/// agent is cheap and the clones share everything, [`Agent::total_usage`] included.
///
/// ```
/// use harness_core::agent::Agent;
/// use harness_core::testing::TestModel;
/// use harness_core::tool;
///
/// /// Look up the current weather for a city.
/// #[tool]
/// fn get_weather(city: String) -> String {
///     format!("It is 22°C and sunny in {city}.")
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let agent = Agent::builder(TestModel::new())
///     .system("You are a concise assistant.")
///     .tool(GetWeather)
///     .build()?;
/// let state = agent.run("Weather in Oslo?").await?;
/// assert!(state.answered());
/// assert_eq!(state.output_text(), r#"{"get_weather":"It is 22°C and sunny in a."}"#);
/// # Ok::<(), harness_core::Error>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct Agent {
    inner: Arc<AgentInner>,
}

pub(crate) struct AgentInner {
    model: Arc<dyn Llm>,
    model_name: String,
    model_names: crate::telemetry::ModelNames,
    tools: Toolbox,
    /// The toolbox's specs plus `final_answer` when an output type is set and the model
    /// takes no schema natively: what every model call offers, built once.
    specs: Vec<ToolSpec>,
    /// The agent's model settings, under each run's.
    settings: ModelSettings,
    /// An output type whose schema goes to the model in the request (a model with
    /// `native_output`) rather than as the `final_answer` tool.
    native_output: bool,
    system: Option<String>,
    name: String,
    budget: Budget,
    context: ContextPolicy,
    permissions: Option<Permissions>,
    middleware: Option<Arc<dyn Middleware>>,
    output: Option<OutputType>,
    total_usage: Mutex<TokenUsage>,
}

/// How a round of tool calls runs: concurrently on the async paths, one at a time on the
/// blocking ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolMode {
    Concurrent,
    Sequential,
}

impl Agent {
    /// A builder for an agent on `model` (any [`Llm`], or an `Arc<dyn Llm>` already
    /// shared): add tools and the rest, then `build()`.
    pub fn builder(model: impl Llm + 'static) -> AgentBuilder {
        AgentBuilder::new(Arc::new(model))
    }

    /// Runs the loop to its end.
    ///
    /// Tool calls of one turn run concurrently (sync tools on the blocking pool) and their
    /// results are recorded in call order. A tool's failure goes back to the model as that
    /// call's result and the run goes on.
    ///
    /// A budget's limit ends the run as `Ok`, with its stop reason.
    ///
    /// # Errors
    /// A [`Configuration`](crate::ErrorKind::Configuration) error for a paused state resumed
    /// undecided or tool calls with no tools registered, and the model's own errors; an error
    /// after the run began carries the run so far ([`Error::state`](crate::Error::state)).
    pub async fn run(&self, input: impl Into<RunInput>) -> Result<AgentState> {
        self.inner
            .drive(
                Box::new(input.into()),
                ToolMode::Concurrent,
                &stream::Events::none(),
            )
            .await
    }

    /// Runs the loop to its end with every model call and tool call going through
    /// `journal`, which may record each result and hand it back on a replay instead of
    /// running the step again: how a durable engine (`harness-durable`, on Restate) runs an
    /// agent so a crashed run resumes where it was.
    ///
    /// The tool calls of a turn run one at a time, in the model's order, so the steps reach
    /// the journal in the same order on every replay. Nothing is streamed.
    ///
    /// # Errors
    /// As [`Agent::run`], and whatever error the journal returns for a step.
    pub async fn run_journaled(
        &self,
        input: impl Into<RunInput>,
        journal: &dyn Journal,
    ) -> Result<AgentState> {
        self.inner
            .drive(
                Box::new(input.into()),
                ToolMode::Sequential,
                &stream::Events::journaled(journal),
            )
            .await
    }

    /// Runs the loop from synchronous code, to its end. Tools run one at a time; async tools
    /// work too.
    ///
    /// # Errors
    /// As [`Agent::run`], and a [`Configuration`](crate::ErrorKind::Configuration) error when
    /// called inside an async runtime (use `run(..).await` there).
    pub fn run_blocking(&self, input: impl Into<RunInput>) -> Result<AgentState> {
        let runtime = blocking_runtime()?;
        runtime.block_on(self.inner.drive(
            Box::new(input.into()),
            ToolMode::Sequential,
            &stream::Events::none(),
        ))
    }

    /// Runs the loop, yielding its progress: [`AgentEvent::StepStarted`], the model's text
    /// and reasoning as they arrive, [`AgentEvent::ToolStarted`] and
    /// [`AgentEvent::ToolFinished`], then [`AgentEvent::Finished`] last. An error ends the
    /// stream as its last item.
    pub fn stream_events(
        &self,
        input: impl Into<RunInput>,
    ) -> BoxStream<'static, Result<AgentEvent>> {
        stream::events(Arc::clone(&self.inner), input.into(), ToolMode::Concurrent)
    }

    /// Runs the loop, yielding the model's text as it arrives; tools still run. Every turn is
    /// streamed, so a tool turn simply yields no text.
    pub fn stream(&self, input: impl Into<RunInput>) -> BoxStream<'static, Result<String>> {
        stream::text(self.stream_events(input))
    }

    /// [`Agent::stream_events`] for synchronous code: an iterator. Tools run one at a time,
    /// so each tool's pair of events surrounds its own call.
    ///
    /// # Errors
    /// A [`Configuration`](crate::ErrorKind::Configuration) error when called inside an async
    /// runtime.
    pub fn stream_events_blocking(
        &self,
        input: impl Into<RunInput>,
    ) -> Result<BlockingIter<Result<AgentEvent>>> {
        let runtime = blocking_runtime()?;
        let events = stream::events(Arc::clone(&self.inner), input.into(), ToolMode::Sequential);
        Ok(BlockingIter::new(runtime, events))
    }

    /// [`Agent::stream`] for synchronous code: an iterator over the text.
    ///
    /// # Errors
    /// A [`Configuration`](crate::ErrorKind::Configuration) error when called inside an async
    /// runtime.
    pub fn stream_blocking(
        &self,
        input: impl Into<RunInput>,
    ) -> Result<BlockingIter<Result<String>>> {
        let runtime = blocking_runtime()?;
        let events = stream::events(Arc::clone(&self.inner), input.into(), ToolMode::Sequential);
        Ok(BlockingIter::new(runtime, stream::text(events)))
    }

    /// This agent as a tool another agent can call: the model sends one `input` string, the
    /// agent runs on it with the caller's dependencies, and its answer is the result.
    ///
    /// The tool is named after the agent ([`AgentBuilder::name`]) and described by its
    /// system prompt, or `Delegate a task to the '<name>' agent.` without one;
    /// [`Agent::as_named_tool`] chooses both.
    pub fn as_tool(&self) -> AgentTool {
        let name = self.inner.name.clone();
        let description = self
            .inner
            .system
            .clone()
            .unwrap_or_else(|| format!("Delegate a task to the '{name}' agent."));
        AgentTool::new(self.clone(), name, description)
    }

    /// [`Agent::as_tool`] under another name and description.
    pub fn as_named_tool(
        &self,
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> AgentTool {
        AgentTool::new(self.clone(), name.into(), description.into())
    }

    /// Token usage of every model call this agent (and its clones) has made, over all its
    /// runs: the lifetime figure, which no budget limits ([`Budget`] limits each run; a
    /// run's own usage is its state's `usage`). [`Agent::reset_usage`] starts it again.
    pub fn total_usage(&self) -> TokenUsage {
        self.inner.total_usage()
    }

    /// Sets [`Agent::total_usage`] back to zero.
    pub fn reset_usage(&self) {
        *self
            .inner
            .total_usage
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = TokenUsage::default();
    }

    /// The agent's name, used in errors and traces.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The run limits.
    pub fn budget(&self) -> Budget {
        self.inner.budget
    }

    /// What a run sends its model.
    pub fn context(&self) -> &ContextPolicy {
        &self.inner.context
    }

    /// The per-call policy, if one was given.
    pub fn permissions(&self) -> Option<&Permissions> {
        self.inner.permissions.as_ref()
    }

    /// The tools.
    pub fn tools(&self) -> &Toolbox {
        &self.inner.tools
    }

    /// The system prompt, if one was given.
    pub fn system(&self) -> Option<&str> {
        self.inner.system.as_deref()
    }

    /// What every model call is offered: the tools' specs, plus `final_answer` when an
    /// output type is set.
    pub fn offered_tools(&self) -> &[ToolSpec] {
        &self.inner.specs
    }
}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("name", &self.inner.name)
            .field("model", &self.inner.model_name)
            .field("tools", &self.inner.tools)
            .field("budget", &self.inner.budget)
            .finish_non_exhaustive()
    }
}

impl AgentInner {
    fn total_usage(&self) -> TokenUsage {
        *self
            .total_usage
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

fn blocking_runtime() -> Result<tokio::runtime::Runtime> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(Error::configuration(
            "a blocking agent method was called inside an async runtime, where it would stall \
             it; use the async form there (agent.run(input).await or agent.stream_events(input))",
        ));
    }
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::configuration(format!("cannot start a runtime for the run: {e}")))
}

/// Builds an [`Agent`]; see [`Agent::builder`].
#[must_use = "call build() to get the agent"]
pub struct AgentBuilder {
    model: Arc<dyn Llm>,
    tools: Toolbox,
    extra_tools: Vec<Arc<dyn Tool>>,
    system: Option<String>,
    name: String,
    budget: Budget,
    context: ContextPolicy,
    permissions: Option<Permissions>,
    middleware: Option<Arc<dyn Middleware>>,
    output: Option<Result<OutputType>>,
    settings: ModelSettings,
    tool_timeout: Option<Duration>,
}

impl AgentBuilder {
    fn new(model: Arc<dyn Llm>) -> Self {
        Self {
            model,
            tools: Toolbox::new(),
            extra_tools: Vec::new(),
            system: None,
            name: "agent".to_owned(),
            budget: Budget::default(),
            context: ContextPolicy::default(),
            permissions: None,
            middleware: None,
            output: None,
            settings: ModelSettings::default(),
            tool_timeout: None,
        }
    }
}

impl AgentBuilder {
    /// Adds a tool: a value (a `#[tool]` struct, your own [`Tool`]) or an `Arc<dyn Tool>`.
    pub fn tool(mut self, tool: impl IntoTool) -> Self {
        self.extra_tools.push(tool.into_tool());
        self
    }

    /// Adds every tool of `tools`: what `file_tools`, `McpServer::tools` and similar
    /// factories return.
    pub fn tools<T: IntoTool>(mut self, tools: impl IntoIterator<Item = T>) -> Self {
        self.extra_tools
            .extend(tools.into_iter().map(IntoTool::into_tool));
        self
    }

    /// Uses `toolbox` (its approval callback included); tools added with
    /// [`AgentBuilder::tool`] join it.
    pub fn toolbox(mut self, toolbox: Toolbox) -> Self {
        self.tools = toolbox;
        self
    }

    /// Stops any tool call still running after `timeout`, for the tools without a timeout of
    /// their own ([`ToolSpec::with_timeout`](crate::tool::ToolSpec::with_timeout),
    /// `#[tool(timeout_secs = ...)]`): the call's future is dropped and the model reads
    /// [`ToolError::timed_out`](crate::ToolError::timed_out) as its result, so the run goes
    /// on. Over the toolbox's own [`tool_timeout`](crate::tool::ToolboxBuilder::tool_timeout).
    /// No limit by default; zero is refused at `build()`. Needs Tokio's timer (as
    /// `#[tokio::main]` gives).
    pub fn tool_timeout(mut self, timeout: Duration) -> Self {
        self.tool_timeout = Some(timeout);
        self
    }

    /// The system prompt, inserted at the start of a transcript that has none.
    pub fn system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// The agent's name (default `agent`), used in errors and traces.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The run limits (default: 10 steps, no token cap).
    pub fn budget(mut self, budget: Budget) -> Self {
        self.budget = budget;
        self
    }

    /// Model settings for every run (temperature, output length, tool choice, ...), over the
    /// provider's defaults and under each run's own
    /// ([`RunInput::with_settings`]).
    pub fn settings(mut self, settings: ModelSettings) -> Self {
        self.settings = settings;
        self
    }

    /// What a run sends its model (default: tool results cut at 8000 characters).
    pub fn context(mut self, context: ContextPolicy) -> Self {
        self.context = context;
        self
    }

    /// A per-call policy over the tools.
    pub fn permissions(mut self, permissions: Permissions) -> Self {
        self.permissions = Some(permissions);
        self
    }

    /// Hooks around model calls, tool calls and steps.
    pub fn middleware(mut self, middleware: impl Middleware + 'static) -> Self {
        self.middleware = Some(Arc::new(middleware));
        self
    }

    /// Asks for a structured answer of type `T` instead of prose: the model is offered a
    /// `final_answer` tool whose parameters are `T`'s schema, and
    /// [`AgentState::output_as`] reads the answer back.
    pub fn output<T: JsonSchema + DeserializeOwned + 'static>(mut self) -> Self {
        self.output = Some(OutputType::of::<T>());
        self
    }

    /// The agent.
    ///
    /// # Errors
    /// A [`Configuration`](crate::ErrorKind::Configuration) error for a non-positive budget or
    /// context limit, a tool name collision, a tool timeout of zero, a tool named `final_answer`
    /// beside an output type, an output type that is not a struct, or a deny/ask rule naming a
    /// tool the agent does not have.
    pub fn build(self) -> Result<Agent> {
        self.budget.validate()?;
        self.context.validate()?;
        let mut tools = self.tools;
        for tool in self.extra_tools {
            tools.register(tool)?;
        }
        if let Some(timeout) = self.tool_timeout {
            crate::tool::check_tool_timeout(Some(timeout))?;
            crate::tool::set_tool_timeout(&mut tools, timeout);
        }
        let output = self.output.transpose()?;
        let mut specs = tools.specs().to_vec();
        let native_output = output.is_some() && Llm::native_output(&*self.model);
        if let Some(output) = &output {
            if tools.contains(FINAL_TOOL) {
                return Err(Error::configuration(format!(
                    "a tool named '{FINAL_TOOL}' is registered, but that name carries the \
                     structured answer when an output type is set; rename the tool"
                )));
            }
            if !native_output {
                specs.push(output.spec.clone());
            }
        }
        if let Some(permissions) = &self.permissions {
            permissions.check()?;
            if !tools.is_empty() {
                permissions.check_against(&tools.names().collect::<Vec<_>>())?;
            }
        }
        let model_name = self.model.name();
        let model_names = crate::telemetry::ModelNames::of(&*self.model);
        Ok(Agent {
            inner: Arc::new(AgentInner {
                model: self.model,
                model_name,
                model_names,
                tools,
                specs,
                settings: self.settings,
                native_output,
                system: self.system,
                name: self.name,
                budget: self.budget,
                context: self.context,
                permissions: self.permissions,
                middleware: self.middleware,
                output,
                total_usage: Mutex::new(TokenUsage::default()),
            }),
        })
    }
}
