//! Model providers for [deepharness](https://docs.rs/deepharness), each behind
//! harness-core's [`Llm`](harness_core::Llm) trait.
//!
//! - [`OpenAi`]: the Chat Completions API, and through it the gateways [`Groq`],
//!   [`Together`], [`DeepSeek`], [`Mistral`], [`Xai`], [`OpenRouter`], [`Fireworks`],
//!   [`Cerebras`] and the local servers [`Ollama`], [`Vllm`], [`LmStudio`], [`LlamaCpp`].
//! - [`OpenAiResponses`]: OpenAI's Responses API: reasoning carried across turns, hosted
//!   tools (web search, file search, code interpreter, remote MCP).
//! - [`Anthropic`]: the Messages API, thinking and its signature, prompt caching.
//! - [`Gemini`]: `generateContent` and its SSE stream, thought signatures.
//! - [`AzureOpenAi`]: an Azure OpenAI resource, handing out [`OpenAi`] (Chat Completions)
//!   and [`OpenAiResponses`] models at its URLs, with an API key or Microsoft Entra ID tokens
//!   (`EntraId`, feature `azure-identity`).
//! - [`Cohere`]: the v2 Chat API, tool plans, thinking.
//! - [`Vertex`]: Google Vertex AI, a connection handing out [`Gemini`] and [`Anthropic`]
//!   models of a Google Cloud project, with Application Default Credentials (feature
//!   `vertex`), a token source or an API key.
//! - `Bedrock` (feature `bedrock`): AWS Bedrock's Converse API and its binary event stream,
//!   SigV4 with AWS's credential chain or a Bedrock API key.
//! - [`rest`]: the kit they are built from, for a REST vendor of your own: the retrying
//!   [`HttpClient`] (also used by web search), the [`SseDecoder`] (server-sent events to the
//!   WHATWG rules), the [`Accumulator`](rest::Accumulator) a vendor implements to read its
//!   answer, the stream driver, and the error helpers.
//! - Wrappers, each itself an `Llm`: [`Fallback`], [`Caching`], [`RateLimited`],
//!   [`Retrying`].
//! - [`model_from_env`]: the model a program should use when it names none;
//!   [`model_from_env_or_test`] falls back to the offline test model.
//!
//! Every failure is a [`harness_core::Error`]: a [`Provider`](harness_core::ErrorKind::Provider)
//! error for what the vendor or the network did (status, vendor error type and message, a body
//! excerpt), a [`Configuration`](harness_core::ErrorKind::Configuration) error for a bad setting.
#![cfg_attr(not(doctest), doc = include_str!("../GUIDE-providers.md"))]

mod anthropic;
mod azure;
#[cfg(feature = "bedrock")]
mod bedrock;
mod cohere;
mod connection;
mod env;
mod gemini;
mod models;
mod openai;
mod presets;
mod prices;
mod responses;
pub mod rest;
mod services;
mod tokenizer;
mod vertex;
mod wire;
mod wrappers;

pub use anthropic::{Anthropic, AnthropicBuilder};
/// AWS's credential types, for [`BedrockBuilder::credentials`] (static keys,
/// `Credentials::new`, or a provider of your own), at the version this crate uses.
#[cfg(feature = "bedrock")]
pub use aws_credential_types;
#[cfg(feature = "azure-identity")]
pub use azure::EntraId;
pub use azure::{AzureOpenAi, AzureOpenAiBuilder};
#[cfg(feature = "bedrock")]
pub use bedrock::{Bedrock, BedrockBuilder, Guardrail, GuardrailTrace};
pub use cohere::{Cohere, CohereBuilder};
pub use env::{ModelChoice, model_from_env, model_from_env_or_test, model_from_spec};
pub use gemini::{Gemini, GeminiBuilder};
pub use openai::{OpenAi, OpenAiBuilder};
pub use presets::{
    Cerebras, DeepSeek, Fireworks, Groq, LlamaCpp, LmStudio, Mistral, Ollama, OpenRouter, Together,
    Vllm, Xai,
};
pub use responses::{OpenAiResponses, OpenAiResponsesBuilder};
pub use rest::{HttpClient, HttpConfig, RetryPolicy, SseDecoder, SseEvent};
pub use vertex::{Vertex, VertexBuilder};
pub use wrappers::{Caching, Fallback, LlmExt, RateLimited, Retrying};

#[cfg(feature = "replay")]
pub mod replay;
