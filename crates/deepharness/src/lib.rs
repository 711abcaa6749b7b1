//! # deepharness
//!
//! Build LLM agents in Rust. An agent is a think/act loop: ask a model, run the tools it asks
//! for, repeat until it answers. deepharness gives you the pieces of that loop as small
//! crates, and this facade re-exports the names a first program needs.
//!
//! | crate | what it holds | feature |
//! | --- | --- | --- |
//! | [`harness_core`] | the agent loop, messages, content blocks, [`Llm`], [`Tool`], [`Toolbox`], [`Ctx`], [`tool`](macro@tool), test models | always |
//! | `harness-macros` | the `#[tool]` attribute | `macros` (default) |
//! | [`harness_tools`] | the confined [`Workspace`](tools::Workspace), file and shell tools, `ToolName`, Tavily search | `tools` (default) |
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
//! Names beyond the root come from the layer that owns them, so an import path says which
//! part of the library a name belongs to: content blocks from [`providers`], the loop's own
//! types from [`agent`], every error kind from [`errors`]. `use deepharness::prelude::*`
//! brings in what a first program uses. The [`guide`] explains each part with examples.
//!
//! Coming from the Python original, the names that changed shape:
//!
//! | Python | Rust |
//! | --- | --- |
//! | `DeepHarnessError` and its subclasses | [`Error`], one opaque type with a [`kind`](Error::kind) and `is_*` predicates, the error underneath kept as its source; [`errors::ToolError`] for what a tool returns |
//! | `Finished`, `TextDelta`, `StepStarted`, ... at the root | variants of [`AgentEvent`] |
//! | `agent.arun(...)` / `agent.run(...)` | `agent.run(...).await` / `agent.run_blocking(...)` |
//! | `Agent(model, tools=..., ...)` | `Agent::builder().model(..).tool(..).build()?` |
//! | `@tool` | `#[tool]` on a `fn` or `async fn`, which defines a unit struct named in `CamelCase` |
//! | `graph.merge_dicts` | [`graph::merge_maps`] |
//! | `NodeSpec` | [`graph::NodeId`], the handle `Graph::add` returns |
//! | `MCPServer`, `MCPError` | [`tools::McpServer`], [`errors::McpError`] |
//! | `Wrapping` (base of the wrappers) | none needed: a wrapper is a type holding an `Arc<dyn Llm>` and implementing [`Llm`]; each built-in wrapper has `inner()` |

// Lets `#[tool]` name `::deepharness` inside this crate's own doctests.
extern crate self as deepharness;

pub mod guide;

pub use harness_core::{
    Agent, AgentEvent, AgentState, Budget, CompletionResponse, Ctx, Error, Llm, Message,
    TokenUsage, Tool, Toolbox,
};

#[cfg(feature = "macros")]
pub use harness_core::tool;
#[cfg(feature = "graph")]
pub use harness_graph::{Executor, Graph, GraphState};
#[cfg(feature = "providers")]
pub use harness_providers::{
    Anthropic, Cerebras, DeepSeek, Fireworks, Gemini, Groq, LlamaCpp, LmStudio, Mistral,
    ModelChoice, Ollama, OpenAi, OpenRouter, Together, Vllm, Xai, model_from_env, model_from_spec,
};

/// The loop's own types: the context policy, events, stop reasons, paused calls, tool
/// specs, middleware, the toolbox's approval gate.
pub mod agent {
    pub use harness_core::agent::{
        ANSWER_DOES_NOT_FIT, ASK_FOR_FINAL_ANSWER, Agent, AgentBuilder, AgentEvent, AgentState,
        AgentTool, BlockingIter, Budget, ContextPolicy, DENIED_BY_POLICY, DENIED_BY_USER,
        FINAL_ANSWER_ACCEPTED, FINAL_TOOL, Hooks, Middleware, NOT_RUN_BUDGET, NOT_RUN_FINAL,
        NOT_RUN_PAUSED, NoMiddleware, PendingHumanInput, Prune, REFUSED_BY_MIDDLEWARE, RunInput,
        StopReason, estimate_tokens, truncate,
    };
    pub use harness_core::{Ctx, Gate, ParametersBuilder, Tool, ToolSpec, Toolbox, ToolboxBuilder};
}

/// Graphs: typed state run through named nodes in concurrent waves, loops, reducers,
/// `diagram()`.
#[cfg(feature = "graph")]
pub mod graph {
    pub use harness_graph::reducers::{self, concat, merge_maps};
    pub use harness_graph::{
        Condition, DEFAULT_MAX_STEPS, Executor, Graph, GraphError, GraphEvent, GraphState,
        GraphUpdate, NodeId, NodeRef, Place, Topology,
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

/// Tools and the per-call policy over them: the confined workspace, the file and shell tools,
/// `ToolName` for rules, MCP servers' tools, web search.
pub mod tools {
    pub use harness_core::agent::{Decision, Permissions, Rule};
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

/// The model interface and its wire types: [`Llm`], responses, usage, content blocks; with
/// the `providers` feature, the wrappers, the HTTP client and the stream decoders too.
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

/// The names a first program needs, in one import: `use deepharness::prelude::*;`.
pub mod prelude {
    pub use crate::Error;
    #[cfg(feature = "providers")]
    pub use crate::{ModelChoice, model_from_env};
    #[cfg(feature = "macros")]
    pub use harness_core::tool;
    pub use harness_core::{
        Agent, AgentEvent, AgentState, Budget, CompletionResponse, Ctx, Llm, Message, TokenUsage,
        Tool, ToolSpec, Toolbox,
    };
}

#[doc(hidden)]
pub use harness_core::__private;

/// The README's code, compiled and run as doctests so it cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
