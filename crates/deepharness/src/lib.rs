//! # deepharness
//!
//! Build LLM agents in Rust. An agent is a think/act loop: ask a model, run the tools it asks
//! for, repeat until it answers. deepharness gives you the pieces of that loop as small
//! crates, and this facade re-exports the names a first program needs.
//!
//! | crate | what it holds | feature |
//! | --- | --- | --- |
//! | [`harness_core`] | the agent loop, messages, content blocks, [`Llm`], [`Tool`](agent::Tool), [`Toolbox`], [`Ctx`], [`tool`](macro@tool), test models | always |
//! | `harness-macros` | the `#[tool]` attribute | `macros` (default) |
//! | [`harness_tools`] | the confined [`Workspace`](tools::Workspace), file and shell tools, `ToolName`, the MCP client, Tavily search | `tools` (default) |
//! | [`harness_tools`] | `McpToolServer`: a toolbox served over MCP (stdio, streamable HTTP) | `mcp-server` |
//! | [`harness_providers`] | 15 providers, the retrying HTTP client, `Fallback` / `Caching` / `RateLimited` / `Retrying`, [`model_from_env`] | `providers` (default) |
//! | [`harness_graph`] | [`Graph`], [`Executor`], `#[derive(GraphState)]`, reducers, `diagram()` | `graph` (default) |
//! | [`harness_prebuilt`] | [`DeepResearch`](prebuilt::DeepResearch), its result and typed events | `prebuilt` (default) |
//!
//! Each crate sits behind a feature of its own, so a program can compile only what it uses.
//!
//! ```
//! use deepharness::{tool, Toolbox};
//! use serde_json::json;
//!
//! /// Add two integers.
//! #[tool]
//! fn add(a: i64, b: i64) -> i64 {
//!     a + b
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), deepharness::Error> {
//! let tools = Toolbox::builder().tool(Add).build()?;
//! assert_eq!(tools.call("add", json!({"a": 2, "b": 3})).await?, "5");
//! # Ok(())
//! # }
//! ```
//!
//! The root holds the Python original's root names (the agent, its state, budget, messages,
//! toolbox, `Ctx`, `#[tool]`, the agent's events, `Graph`, `Executor`, the one [`Error`] and
//! the fifteen providers) and three more a first program needs: [`Llm`],
//! [`model_from_env`] and [`model_from_env_or_test`]. Names beyond the root come from the
//! layer that owns them, so an import path says which part of the library a name belongs
//! to: the loop's own types from [`agent`], content blocks and the wrappers from
//! [`providers`], every error type from [`errors`]. `use deepharness::prelude::*` brings in
//! the five names of a first program. The [`guide`] explains each part with examples.
//!
//! # Conventions
//!
//! - A type named `*Builder` takes plain-named setters and checks them in `build()`; every
//!   other type's chained setters are named `with_*`, and its getters carry the plain name
//!   (`Budget::with_steps(5)` and `budget.steps()`).
//! - A setting that could be invalid is either typed so it cannot be (`NonZeroU32`, a
//!   `Duration`) or checked when the thing is built, never in a fallible setter.
//! - One way in: a tool (a value or an `Arc<dyn Tool>`) goes through `.tool(..)`, many
//!   through `.tools(..)`, a whole toolbox through `.toolbox(..)`.
//!
//! # Coming from the Python original
//!
//! | Python | Rust |
//! | --- | --- |
//! | `DeepHarnessError` and its subclasses | [`Error`], one opaque type with a [`kind`](Error::kind) and `is_*` predicates, the error underneath kept as its source; [`errors::ToolError`] for what a tool returns |
//! | `Finished`, `TextDelta`, `StepStarted`, ... at the root | variants of [`AgentEvent`] |
//! | `agent.arun(...)` / `agent.run(...)` | `agent.run(...).await` / `agent.run_blocking(...)` |
//! | `Agent(model, tools=..., ...)` | `Agent::builder(model).tool(..).build()?` |
//! | `agent.as_tool(name=None, description=None)` | [`Agent::as_tool`] / [`Agent::as_named_tool`] |
//! | `@tool` | `#[tool]` on a `fn` or `async fn`, which defines a unit struct named in `CamelCase` |
//! | `Fallback(a, b)`, `Caching(m)`, `RateLimited(m, rps=2)`, `Retrying(m)` | `a.with_fallback(b)`, `m.cached()`, `m.rate_limited(Duration::from_millis(500))`, `m.retrying(1)` (`providers::LlmExt`) |
//! | `graph.merge_dicts` | `graph::merge_maps` |
//! | `NodeSpec` | `graph::NodeId`, the handle `Graph::add` returns |
//! | `MCPServer`, `MCPError` | `tools::McpServer`, `errors::McpError` |
//! | `Wrapping` (base of the wrappers) | none needed: a wrapper is a type holding a model and implementing [`Llm`]; each built-in wrapper has `inner()` |
//!
//! # Old names and their new homes
//!
//! The API took its 0.1 shape before the first release. What an earlier checkout of this
//! repository called by another name, or exported elsewhere:
//!
//! | before | now |
//! | --- | --- |
//! | `deepharness::{CompletionResponse, TokenUsage}` | [`providers::CompletionResponse`], [`providers::TokenUsage`] |
//! | `deepharness::Tool` | [`agent::Tool`] |
//! | `deepharness::GraphState` | `graph::GraphState` |
//! | `deepharness::{ModelChoice, model_from_spec}` | `providers::ModelChoice`, `providers::model_from_spec` |
//! | `prelude::{AgentState, Budget, Ctx, Llm, Message, Toolbox, Tool, ToolSpec, CompletionResponse, TokenUsage, ModelChoice}` | the root, [`agent`] and [`providers`]; the prelude is `Agent`, `AgentEvent`, `Error`, `tool`, `model_from_env_or_test` |
//! | `model_from_env()`, falling back to the test model | `model_from_env().await`, an error listing what it looked for when nothing is configured; `model_from_env_or_test().await` for the fallback |
//! | `Agent::builder().model(m)`, `.shared_model(arc)` | `Agent::builder(m)` (an `Arc<dyn Llm>` is a model too); there is no model-less agent |
//! | `AgentBuilder::shared_tool(arc)`, `ToolboxBuilder::shared(arc)` | `.tool(arc)` ([`agent::IntoTool`]) |
//! | `Toolbox::register`, `register_shared` | [`Toolbox::builder`], or [`Toolbox::into_builder`] to add to one |
//! | `Toolbox::with_approver`, `with_async_approver` | [`agent::ToolboxBuilder::approve`], [`approve_async`](agent::ToolboxBuilder::approve_async) |
//! | `Toolbox::call_with`, `call_content_with`, `Gate` | internal to the agent loop; [`Toolbox::call`] outside a run |
//! | `Message::human`, `Message::ai` | [`Message::user`], [`Message::assistant`] |
//! | `agent::Hooks`, `agent::NoMiddleware` | [`agent::Middleware`] |
//! | `ContextPolicy::max_tokens(n)`, `tool_result_chars(..)`, `keep_last(n)`, `pruner(p)` | `with_max_tokens(n)`, `with_tool_result_chars(..)`, `with_keep_last(n)`, `with_pruner(p)` |
//! | `ContextPolicy::max_tokens_limit()`, `tool_result_limit()`, `keep_last_count()` | `max_tokens()`, `tool_result_chars()`, `keep_last()` |
//! | `agent.as_tool(name, description)` | [`Agent::as_named_tool`]; [`Agent::as_tool`] takes the defaults |
//! | `agent::{DENIED_BY_POLICY, DENIED_BY_USER, NOT_RUN_*, REFUSED_BY_MIDDLEWARE, FINAL_ANSWER_ACCEPTED, ASK_FOR_FINAL_ANSWER, ANSWER_DOES_NOT_FIT}`, `agent::truncate` | internal; the texts are in the agents guide |
//! | `graph::{Topology, Condition}`, `Executor::topology()` | internal; `Executor::diagram()` draws the shape |
//! | `Fallback::new(a, vec![b])?`, `.on(f)` | `a.with_fallback(b)`, `.with_condition(f)` |
//! | `Caching::new(m).maxsize(n)?.ttl(d)?` | `m.cached().with_capacity(n).with_ttl(d)` |
//! | `RateLimited::new(m, rps)?.burst(n)?` | `m.rate_limited(interval).with_burst(n)` |
//! | `Retrying::new(m).attempts(n)?.backoff(d)` | `m.retrying(n - 1).with_backoff(d)` |
//! | `Llm::generate(messages, tools)`; the providers' `temperature(..)`, `reasoning_effort(..)`, `max_tokens(..)` | `Llm::generate(request)` ([`providers::Request`]); [`providers::ModelSettings`] on the provider, the agent or the run |
//! | `errors::{CoreError, ToolsError}` and the facade's wrapper enum | one [`Error`]; `errors::ToolsError` is reached with [`Error::downcast_ref`] |
//! | `Error::Provider(p)`, `Error::RunFailed(..)`, `Error::TokenBudgetExceeded` | [`Error::provider`], [`Error::state`], `StopReason::TokenBudget` (the run ends `Ok`) |
//! | `Error::human_input(q)`, `err.tool_result_text()`, `is_tool_not_found`, `is_tool_denied`, `is_human_input_required` | [`errors::ToolError::needs_human`], [`model_text`](errors::ToolError::model_text), `is_not_found`, `is_denied`, `is_needs_human` |

// Lets `#[tool]` name `::deepharness` inside this crate's own doctests.
extern crate self as deepharness;

pub mod guide;

pub use harness_core::{Agent, AgentEvent, AgentState, Budget, Ctx, Error, Llm, Message, Toolbox};

#[cfg(feature = "macros")]
pub use harness_core::tool;
#[cfg(feature = "graph")]
pub use harness_graph::{Executor, Graph};
#[cfg(feature = "providers")]
pub use harness_providers::{
    Anthropic, Cerebras, DeepSeek, Fireworks, Gemini, Groq, LlamaCpp, LmStudio, Mistral, Ollama,
    OpenAi, OpenRouter, Together, Vllm, Xai, model_from_env, model_from_env_or_test,
};

/// The loop's own types: the builder, run input, the context policy, events, stop reasons,
/// paused calls, middleware, tools and their specs.
pub mod agent {
    pub use harness_core::agent::{
        Agent, AgentBuilder, AgentEvent, AgentState, AgentTool, BlockingIter, Budget,
        ContextPolicy, FINAL_TOOL, Middleware, PendingHumanInput, Prune, RunInput, StopReason,
        estimate_tokens,
    };
    pub use harness_core::{
        Ctx, IntoTool, LogLevel, ParametersBuilder, Tool, ToolSpec, ToolUpdate, Toolbox,
        ToolboxBuilder,
    };
}

/// Graphs: typed state run through named nodes in concurrent waves, loops, reducers,
/// `diagram()`.
#[cfg(feature = "graph")]
pub mod graph {
    // What `#[derive(GraphState)]` names in the code it generates; users name it from
    // `errors`.
    #[doc(hidden)]
    pub use harness_graph::GraphError;
    pub use harness_graph::reducers::{self, concat, merge_maps};
    pub use harness_graph::{
        DEFAULT_MAX_STEPS, Executor, Graph, GraphEvent, GraphState, GraphUpdate, NodeId, NodeRef,
        Place,
    };
}

/// Prebuilt workflows: [`DeepResearch`](prebuilt::DeepResearch) plans a question, researches
/// each part with its own agent and writes one report. Not re-exported at the root: its
/// `ResearchFinished` event is named apart from the agent's `Finished` on purpose.
#[cfg(feature = "prebuilt")]
pub mod prebuilt {
    pub use harness_prebuilt::{
        DeepResearch, DeepResearchBuilder, Finding, PLANNER_SYSTEM, RESEARCHER_SYSTEM,
        ResearchEvent, ResearchResult, SYNTHESIZER_SYSTEM,
    };
}

/// Durable runs on Restate: an agent served as a virtual object per session, every model
/// and tool call a journaled step, approvals as awakeables (feature `durable`).
#[cfg(feature = "durable")]
pub mod durable {
    pub use harness_durable::*;
}

/// Tools and the per-call policy over them: the [`Human`](tools::Human) a call can turn to,
/// the confined workspace, the file and shell tools, `ToolName` for rules, MCP servers'
/// tools, web search.
pub mod tools {
    pub use harness_core::agent::{Decision, Permissions, Rule};
    pub use harness_core::{ElicitationMode, ElicitationRequest, ElicitationResponse, Human};
    #[cfg(feature = "mcp-server")]
    pub use harness_tools::mcp::McpToolServer;
    #[cfg(feature = "tools")]
    pub use harness_tools::mcp::{McpServer, McpTool, Transport};
    #[cfg(feature = "tools")]
    pub use harness_tools::{
        FileToolsConfig, ShellConfig, ToolName, Workspace, file_tools, mcp, shell_tool,
    };
    #[cfg(all(feature = "tools", feature = "providers"))]
    pub use harness_tools::{
        SearchDepth, SearchResult, SearchTool, TavilySearch, TavilySearchBuilder, format_results,
    };
}

/// The model interface and its wire types: [`Llm`], requests and settings, responses, usage,
/// content blocks; with the `providers` feature, the wrappers and their `LlmExt`
/// combinators, choosing a model from the environment, and the kit for a REST vendor of your
/// own.
pub mod providers {
    /// The attribute for implementing [`Llm`] (and `Tool`, `Transport`) yourself: their
    /// methods are `async fn` in object-safe traits.
    pub use harness_core::async_trait;
    pub use harness_core::content::{media_type_for, merge_blocks, parse_blocks, text_of};
    pub use harness_core::{
        Block, BoxStream, CompletionResponse, Content, Document, FinishReason, Image, ImageSource,
        Llm, LlmEvent, ModelSettings, OutputSchema, ReasoningLevel, Request, Role, Text, Thinking,
        TokenUsage, ToolCall, ToolChoice, ToolSpec, replay,
    };
    #[cfg(feature = "providers")]
    pub use harness_providers::{
        AnthropicBuilder, Caching, Fallback, GeminiBuilder, HttpClient, HttpConfig, OpenAiBuilder,
        RateLimited, RetryPolicy, Retrying, SseDecoder, SseEvent, rest,
    };
    #[cfg(feature = "providers")]
    pub use harness_providers::{LlmExt, ModelChoice, model_from_spec};
}

/// Deterministic offline models for testing agents: [`TestModel`](testing::TestModel),
/// [`FunctionModel`](testing::FunctionModel), [`ScriptedModel`](testing::ScriptedModel).
pub mod testing {
    pub use harness_core::testing::{FunctionModel, RequestRecord, ScriptedModel, TestModel};
}

/// Every error type. Only [`Error`] is re-exported at the root: every crate's failures
/// convert into it, its [`ErrorKind`](errors::ErrorKind) says which family, and the types
/// here are what [`Error::downcast_ref`] (or [`Error::provider`], [`Error::tool`]) reach.
pub mod errors {
    pub use harness_core::{
        Error, ErrorKind, PROVIDER_BODY_EXCERPT_CHARS, ProviderError, ProviderErrorKind, Result,
        ToolError, ToolErrorKind,
    };
    #[cfg(feature = "graph")]
    pub use harness_graph::GraphError;
    #[cfg(feature = "tools")]
    pub use harness_tools::Error as ToolsError;
    #[cfg(feature = "tools")]
    pub use harness_tools::mcp::{McpError, McpErrorKind};
}

/// The five names a first program needs, in one import: `use deepharness::prelude::*;`.
///
/// ```
/// use deepharness::prelude::*;
///
/// /// Look up the current weather for a city.
/// #[tool]
/// fn get_weather(city: String) -> String {
///     format!("It is 22°C and sunny in {city}.")
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Error> {
/// # // SAFETY: a doctest runs in a process of its own, where nothing else reads the
/// # // environment at the same time.
/// # unsafe { std::env::set_var("DEEPHARNESS_MODEL", "test") };
/// let choice = model_from_env_or_test().await?;
/// let agent = Agent::builder(choice.model).tool(GetWeather).build()?;
/// let state = agent.run("What is the weather in Oslo?").await?;
/// assert!(state.output_text().contains("22°C"));
/// # Ok(())
/// # }
/// ```
pub mod prelude {
    #[cfg(feature = "providers")]
    pub use crate::model_from_env_or_test;
    #[cfg(feature = "macros")]
    pub use harness_core::tool;
    pub use harness_core::{Agent, AgentEvent, Error};
}

#[doc(hidden)]
pub use harness_core::__private;

/// The README's code, compiled and run as doctests so it cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
