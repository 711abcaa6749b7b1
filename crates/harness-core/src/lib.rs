//! The vendor-neutral core of [deepharness](https://docs.rs/deepharness): the types every
//! other crate of the workspace shares.
//!
//! - [`Message`], [`Content`] and the content blocks ([`Block`], [`Image`], [`Document`],
//!   [`Thinking`]): a transcript in the neutral `{"role", "content", ...}` form.
//! - [`HostedTool`] and the [`hosted`] module: tools the vendor runs itself (web search, file
//!   search, a code sandbox, remote MCP), and [`HostedCall`], what their calls leave in a turn.
//! - [`CompletionResponse`], [`TokenUsage`], [`ToolCall`], [`FinishReason`],
//!   [`ReasoningLevel`]: what a model hands back.
//! - [`Llm`]: the one trait a model implements (`generate`, `stream`, `info`,
//!   `count_tokens`); [`LlmEvent`] for streaming, [`ModelInfo`] for what a model is, supports
//!   and charges, [`TokenCount`] for a prompt's size before it is sent.
//! - [`Prices`], [`Cost`] and [`Usd`]: what a model charges per million tokens, and what a
//!   [`TokenUsage`] came to, exact to the picodollar.
//! - [`Tool`], [`ToolSpec`], [`Toolbox`], [`CallOptions`], [`Ctx`] and the
//!   [`tool`](macro@tool) attribute macro: plain functions a model can call.
//! - [`Agent`] and the [`agent`] module: the think/act loop, its budgets, context policy,
//!   structured output, approvals, permissions, middleware and sessions.
//! - [`testing`]: deterministic offline models for testing agents.
//! - [`Error`]: the one error type of every crate (a kind, a message, the source kept);
//!   [`ToolError`], what a tool returns and the model reads; [`RunError`], a failed run's
//!   error with its state beside it.
//!
//! harness-core knows no vendor, no file system and no HTTP; providers and tools that talk
//! to the outside world live in their own crates, behind [`Llm`] and [`Tool`].
//!
//! # A tool in four lines
//!
// The example names `#[tool]`, of the `macros` feature.
#![cfg_attr(feature = "macros", doc = " ```")]
#![cfg_attr(not(feature = "macros"), doc = " ```ignore")]
//! use harness_core::{tool, Toolbox};
//! use serde_json::json;
//!
//! /// Look up the current weather for a city.
//! ///
//! /// # Arguments
//! /// * `city` - The city's name, in English.
//! #[tool]
//! fn get_weather(city: String) -> String {
//!     format!("It is 22°C and sunny in {city}.")
//! }
//!
//! // Still a plain function:
//! assert_eq!(get_weather("Oslo".into()), "It is 22°C and sunny in Oslo.");
//!
//! // And a tool, as the unit struct `GetWeather`:
//! let tools = Toolbox::builder().tool(GetWeather).build()?;
//! assert_eq!(tools.specs()[0].parameters, json!({
//!     "type": "object",
//!     "properties": {"city": {"type": "string", "description": "The city's name, in English."}},
//!     "required": ["city"],
//! }));
//! # Ok::<(), harness_core::Error>(())
//! ```
#![cfg_attr(not(doctest), doc = include_str!("../GUIDE-agents.md"))]

// Lets the code `#[tool]` writes name `::harness_core` inside this crate's own tests too.
extern crate self as harness_core;

pub mod agent;
mod channel;
pub mod content;
mod cost;
mod error;
pub mod hosted;
mod llm;
mod message;
mod request;
mod response;
mod telemetry;
pub mod testing;
mod tool;

#[doc(hidden)]
pub mod __private;

pub use agent::{
    Agent, AgentBuilder, AgentEvent, AgentState, Budget, RunError, RunInput, RunStream, StopReason,
};
pub use content::{Block, Document, Image, ImageSource, Text, Thinking};
pub use cost::{Cost, Prices, Usd};
pub use error::{
    Error, ErrorKind, PROVIDER_BODY_EXCERPT_CHARS, ProviderError, ProviderErrorKind, Result,
    ToolError, ToolErrorKind,
};
pub use hosted::{HostedCall, HostedTool};
pub use llm::{BoxStream, Llm, LlmEvent, ModelInfo, Supports, TokenCount, replay};
pub use message::{Content, Message, Role, ToolCall};
pub use request::{
    CacheRetention, CacheTtl, ModelSettings, OutputSchema, OwnedRequest, PromptCache, Request,
    ToolChoice,
};
pub use response::{CompletionResponse, FinishReason, ReasoningLevel, TokenUsage};
pub use tool::{
    ApproveFn, CallOptions, Ctx, ElicitationMode, ElicitationRequest, ElicitationResponse, Human,
    IntoTool, LogLevel, ParametersBuilder, Tool, ToolSpec, ToolUpdate, Toolbox, ToolboxBuilder,
    approve_fn,
};

/// Re-exported so a hand-written [`Llm`] or [`Tool`] needs no extra dependency.
pub use async_trait::async_trait;

#[cfg(feature = "macros")]
pub use harness_macros::tool;
