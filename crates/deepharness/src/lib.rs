//! # deepharness
//!
//! Build LLM agents in Rust. An agent is a think/act loop: ask a model, run the tools it asks
//! for, repeat until it answers. deepharness gives you the pieces of that loop as small
//! crates, and this facade re-exports the names a first program needs.
//!
//! | crate | what it holds | feature |
//! | --- | --- | --- |
//! | [`harness_core`] | messages, content blocks, [`Llm`], [`Tool`], [`Toolbox`], [`Ctx`], [`tool`](macro@tool) | always |
//! | `harness-macros` | the `#[tool]` attribute | `macros` (default) |
//!
//! The provider, tool, graph and research crates join the facade as they are built, each
//! behind a feature of its own, so a program compiles only what it uses.
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
//! types from [`agent`], every error kind from [`errors`].

// Lets `#[tool]` name `::deepharness` inside this crate's own doctests.
extern crate self as deepharness;

mod error;

pub use error::Error;
pub use harness_core::{Ctx, Message, Tool, Toolbox};

#[cfg(feature = "macros")]
pub use harness_core::tool;

/// The loop's own types: tool specs, the toolbox's approval gate, the run context.
pub mod agent {
    pub use harness_core::{Ctx, Gate, ParametersBuilder, Tool, ToolSpec, Toolbox, ToolboxBuilder};
}

/// The model interface and its wire types: [`Llm`], responses, usage,
/// content blocks.
pub mod providers {
    pub use harness_core::content::{media_type_for, merge_blocks, parse_blocks, text_of};
    pub use harness_core::{
        Block, BoxStream, CompletionResponse, Content, Document, FinishReason, Image, ImageSource,
        Llm, LlmEvent, ReasoningLevel, Role, Text, Thinking, TokenUsage, ToolCall, replay,
    };
}

/// Every error type. Only [`Error`] is re-exported at the root.
pub mod errors {
    pub use crate::error::Error;
    pub use harness_core::Error as CoreError;
    pub use harness_core::{PROVIDER_BODY_EXCERPT_CHARS, ProviderError};
}

pub use harness_core::{CompletionResponse, Llm, TokenUsage};

/// The names a first program needs, in one import: `use deepharness::prelude::*;`.
pub mod prelude {
    pub use crate::Error;
    #[cfg(feature = "macros")]
    pub use harness_core::tool;
    pub use harness_core::{
        CompletionResponse, Ctx, Llm, Message, TokenUsage, Tool, ToolSpec, Toolbox,
    };
}

#[doc(hidden)]
pub use harness_core::__private;

/// The README's code, compiled and run as doctests so it cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
