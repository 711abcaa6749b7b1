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
//! | [`harness_providers`] | 20 providers (the clouds among them: Azure OpenAI, AWS Bedrock, Google Vertex AI), the retrying HTTP client, `Fallback` / `Caching` / `RateLimited` / `Retrying`, [`model_from_env`] | `providers` (default) |
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
//! let sum = tools.call("add", json!({"a": 2, "b": 3}), Default::default()).await?;
//! assert_eq!(sum.text(), "5");
//! # Ok(())
//! # }
//! ```
//!
//! The root holds the Python original's root names (the agent, its state, budget, messages,
//! toolbox, `Ctx`, `#[tool]`, the agent's events, `Graph`, `Executor`, the one [`Error`] and
//! the providers) and three more a first program needs: [`Llm`],
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
//! - One way to do each thing: a variation of an operation is an option in an options
//!   value, not another method. A run's options go in its [`agent::RunInput`] (dependencies,
//!   settings, a journal); a tool call's in [`agent::CallOptions`] (the context, a timeout);
//!   a graph run's in `graph::GraphInput` (the wave limit, a journal); an edge's in the
//!   `graph::Edge` that `Graph::connect` returns (`.when(..)`, `.loop_back()`).
//! - Two ways to run, the same everywhere: `run` to the end, `stream` for progress as it
//!   goes (an agent, a graph, a research workflow); `Agent::run_blocking` for synchronous
//!   code.
//!
//! # Coming from the Python original
//!
//! | Python | Rust |
//! | --- | --- |
//! | `DeepHarnessError` and its subclasses | [`Error`], one opaque type with a [`kind`](Error::kind) and `is_*` predicates, the error underneath kept as its source; [`errors::ToolError`] for what a tool returns; [`errors::RunError`], a failed run's error with its state beside it |
//! | `Finished`, `TextDelta`, `StepStarted`, ... at the root | variants of [`AgentEvent`] |
//! | `agent.arun(...)` / `agent.run(...)` | `agent.run(...).await` / `agent.run_blocking(...)` |
//! | `agent.astream_events(...)` / `agent.astream(...)` | `agent.stream(...)` / `agent.stream(...).text()`; `.blocking()` for the sync forms |
//! | `agent.arun(state, deps=d)` | `agent.run(RunInput::new(state).with_deps(d))` |
//! | `Agent(model, tools=..., ...)` | `Agent::builder(model).tool(..).build()?` |
//! | `agent.as_tool(name=None, description=None)` | [`Agent::as_tool`], then `.with_name(..)` / `.with_description(..)` |
//! | `Toolbox(tools, approve=f)` | `Toolbox::builder().tools(..).human(approve_fn(f))` |
//! | `graph.connect(a, b, condition=c, loop=True)` | `graph.connect(a, b).when("c", c).loop_back()` |
//! | `executor.run(state, max_steps=n)` | `executor.run(GraphInput::new(state).with_max_steps(n))` |
//! | `@tool` | `#[tool]` on a `fn` or `async fn`, which defines a unit struct named in `CamelCase` |
//! | `Fallback(a, b)`, `Caching(m)`, `RateLimited(m, rps=2)`, `Retrying(m)` | `a.with_fallback(b)`, `m.cached()`, `m.rate_limited(Duration::from_millis(500))`, `m.retrying(1)` (`providers::LlmExt`) |
//! | `graph.merge_dicts` | `graph::merge_maps` |
//! | `NodeSpec` | `graph::NodeId`, the handle `Graph::add` returns |
//! | `MCPServer`, `MCPError` | `tools::McpServer`, `errors::McpError` |
//! | `Wrapping` (base of the wrappers) | none needed: a wrapper is a type holding a model and implementing [`Llm`]; each built-in wrapper has `inner()` |

// Lets `#[tool]` name `::deepharness` inside this crate's own doctests.
extern crate self as deepharness;

pub mod guide;

pub use harness_core::{Agent, AgentEvent, AgentState, Budget, Ctx, Error, Llm, Message, Toolbox};

#[cfg(feature = "macros")]
pub use harness_core::tool;
#[cfg(feature = "graph")]
pub use harness_graph::{Executor, Graph};
#[cfg(feature = "bedrock")]
pub use harness_providers::Bedrock;
#[cfg(feature = "providers")]
pub use harness_providers::{
    Anthropic, AzureOpenAi, Cerebras, Cohere, DeepSeek, Fireworks, Gemini, Groq, LlamaCpp,
    LmStudio, Mistral, Ollama, OpenAi, OpenAiResponses, OpenRouter, Together, Vertex, Vllm, Xai,
    model_from_env, model_from_env_or_test,
};

/// The loop's own types: the builder, a run's input and options, its stream, its error, the
/// context policy, events, stop reasons, paused calls, middleware, the journal, tools, their
/// specs and call options.
pub mod agent {
    pub use harness_core::agent::{
        Agent, AgentBuilder, AgentEvent, AgentState, AgentTool, BlockingIter, Budget,
        ContextPolicy, FINAL_TOOL, Journal, Middleware, PendingHumanInput, Prune, RunError,
        RunInput, RunStream, Step, StopReason, estimate_tokens,
    };
    pub use harness_core::{
        CallOptions, Ctx, IntoTool, LogLevel, ParametersBuilder, Tool, ToolSpec, ToolUpdate,
        Toolbox, ToolboxBuilder,
    };
}

/// Graphs: typed state run through named nodes in concurrent waves, loops, reducers,
/// `diagram()`.
#[cfg(feature = "graph")]
pub mod graph {
    // What `#[derive(GraphState)]` names in the code it generates.
    #[doc(hidden)]
    pub use harness_graph::__private;
    pub use harness_graph::reducers::{self, concat, merge_maps};
    pub use harness_graph::{
        DEFAULT_MAX_STEPS, Edge, Executor, Graph, GraphEvent, GraphInput, GraphOutput, GraphState,
        GraphStopReason, GraphUpdate, NodeError, NodeFuture, NodeId, NodeJournal, NodeRef, Place,
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
    pub use harness_core::{
        ApproveFn, ElicitationMode, ElicitationRequest, ElicitationResponse, Human, approve_fn,
    };
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
/// content blocks, prices and costs, prompt caching, token counts; with the `providers` feature, the wrappers and their `LlmExt`
/// combinators, choosing a model from the environment, and the kit for a REST vendor of your
/// own.
pub mod providers {
    /// The attribute for implementing [`Llm`] (and `Tool`, `Transport`) yourself: their
    /// methods are `async fn` in object-safe traits.
    pub use harness_core::async_trait;
    pub use harness_core::content::{media_type_for, merge_blocks, parse_blocks, text_of};
    /// Tools the vendor runs on its own side, and what their calls leave in a turn.
    pub use harness_core::hosted;
    pub use harness_core::{
        Block, BoxStream, CompletionResponse, Content, Document, FinishReason, Image, ImageSource,
        Llm, LlmEvent, ModelInfo, ModelSettings, OutputSchema, OwnedRequest, ReasoningLevel,
        Request, Role, Supports, Text, Thinking, TokenUsage, ToolCall, ToolChoice, ToolSpec,
        replay,
    };
    pub use harness_core::{CacheRetention, CacheTtl, Cost, Prices, PromptCache, TokenCount, Usd};
    pub use harness_core::{HostedCall, HostedTool};
    #[cfg(feature = "azure-identity")]
    pub use harness_providers::EntraId;
    #[cfg(feature = "providers")]
    pub use harness_providers::{
        AnthropicBuilder, AzureOpenAiBuilder, Caching, CohereBuilder, Fallback, GeminiBuilder,
        HttpClient, HttpConfig, OpenAiBuilder, OpenAiResponsesBuilder, RateLimited, RetryPolicy,
        Retrying, SseDecoder, SseEvent, VertexBuilder, rest,
    };
    #[cfg(feature = "bedrock")]
    pub use harness_providers::{BedrockBuilder, Guardrail, GuardrailTrace, aws_credential_types};
    #[cfg(feature = "providers")]
    pub use harness_providers::{LlmExt, ModelChoice, model_from_spec};
}

/// Deterministic offline models for testing agents: [`TestModel`](testing::TestModel),
/// [`FunctionModel`](testing::FunctionModel), [`ScriptedModel`](testing::ScriptedModel).
pub mod testing {
    pub use harness_core::testing::{FunctionModel, RequestRecord, ScriptedModel, TestModel};
}

/// Every error type. Only [`Error`] is re-exported at the root: every crate's failures are
/// one, its [`ErrorKind`](errors::ErrorKind) says which family, and the detail types here
/// are what [`Error::downcast_ref`] (or [`Error::provider`], [`Error::tool`]) reach.
/// [`ToolError`](errors::ToolError) is what a tool returns and the model reads;
/// [`RunError`](errors::RunError) a failed run's error with its state beside it.
pub mod errors {
    pub use harness_core::agent::RunError;
    pub use harness_core::{
        Error, ErrorKind, PROVIDER_BODY_EXCERPT_CHARS, ProviderError, ProviderErrorKind, Result,
        ToolError, ToolErrorKind,
    };
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
