//! `AgentBuilder`: an agent's settings, checked once at `build()`.

use std::sync::{Arc, Mutex};

#[cfg(feature = "output")]
use schemars::JsonSchema;
#[cfg(feature = "output")]
use serde::de::DeserializeOwned;

use super::budget::Budget;
use super::context::ContextPolicy;
use super::handle::Agent;
use super::inner::AgentInner;
use super::middleware::Middleware;
#[cfg(feature = "output")]
use super::output::{FINAL_TOOL, OutputType};
use super::permissions::Permissions;
#[cfg(feature = "output")]
use crate::error::Error;
use crate::error::Result;
use crate::llm::Llm;
use crate::request::ModelSettings;
use crate::response::TokenUsage;
use crate::telemetry::ModelNames;
use crate::tool::{IntoTool, Tool, Toolbox};

impl Agent {
    /// A builder for an agent on `model` (any [`Llm`], or an `Arc<dyn Llm>` already
    /// shared): add tools and the rest, then `build()`.
    pub fn builder(model: impl Llm) -> AgentBuilder {
        AgentBuilder::new(Arc::new(model))
    }
}

/// Builds an [`Agent`]; see [`Agent::builder`]. One method per setting; everything is
/// checked at [`build`](AgentBuilder::build).
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
    #[cfg(feature = "output")]
    output: Option<Result<OutputType>>,
    settings: ModelSettings,
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
            #[cfg(feature = "output")]
            output: None,
            settings: ModelSettings::default(),
        }
    }

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

    /// Uses `toolbox`, with its [`Human`](crate::Human) and its
    /// [`tool_timeout`](crate::ToolboxBuilder::tool_timeout); tools added with
    /// [`AgentBuilder::tool`] join it.
    pub fn toolbox(mut self, toolbox: Toolbox) -> Self {
        self.tools = toolbox;
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

    /// Model settings for every run (temperature, output length, tool choice, vendor
    /// fields...), over the provider's defaults and under each run's own
    /// ([`RunInput::with_settings`](crate::RunInput::with_settings)).
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

    /// Asks for a structured answer of type `T` instead of prose: a model with native
    /// structured output ([`Supports::structured_output`](crate::Supports)) is sent `T`'s
    /// schema; any other is offered a `final_answer` tool whose parameters are that schema.
    /// Every answer is checked against the schema (every bad field at once goes back to the
    /// model) and then read as a `T`; [`AgentState::output_as`](crate::AgentState::output_as)
    /// reads it back. Feature `output` (on by default).
    #[cfg(feature = "output")]
    pub fn output<T: JsonSchema + DeserializeOwned + 'static>(mut self) -> Self {
        self.output = Some(OutputType::of::<T>());
        self
    }

    /// The agent.
    ///
    /// # Errors
    /// A [`Configuration`](crate::ErrorKind::Configuration) error for a non-positive budget or
    /// context limit, a tool name collision, a tool named `final_answer` beside an output
    /// type, an output type that is not a struct, or a deny/ask rule naming a tool the agent
    /// does not have.
    pub fn build(self) -> Result<Agent> {
        self.budget.validate()?;
        self.context.validate()?;
        let tools = if self.extra_tools.is_empty() {
            self.tools
        } else {
            self.tools.into_builder().tools(self.extra_tools).build()?
        };
        let info = self.model.info();
        let specs = tools.specs().to_vec();
        #[cfg(feature = "output")]
        let output = self.output.transpose()?;
        #[cfg(feature = "output")]
        let native_output = output.is_some() && info.supports.structured_output;
        #[cfg(feature = "output")]
        let specs = match &output {
            Some(_) if tools.contains(FINAL_TOOL) => {
                return Err(Error::configuration(format!(
                    "a tool named '{FINAL_TOOL}' is registered, but that name carries the \
                     structured answer when an output type is set; rename the tool"
                )));
            }
            Some(output) if !native_output => {
                let mut specs = specs;
                specs.push(Arc::clone(&output.spec));
                specs
            }
            _ => specs,
        };
        if let Some(permissions) = &self.permissions {
            permissions.check()?;
            if !tools.is_empty() {
                permissions.check_against(&tools.names().collect::<Vec<_>>())?;
            }
        }
        let model_names = ModelNames::of(&info);
        Ok(Agent {
            inner: Arc::new(AgentInner {
                model: self.model,
                model_name: info.name(),
                prices: info.prices,
                model_names,
                tools,
                specs,
                settings: self.settings,
                #[cfg(feature = "output")]
                native_output,
                system: self.system,
                name: self.name,
                budget: self.budget,
                context: self.context,
                permissions: self.permissions,
                middleware: self.middleware,
                #[cfg(feature = "output")]
                output,
                total_usage: Mutex::new(TokenUsage::default()),
            }),
        })
    }
}
