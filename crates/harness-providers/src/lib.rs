//! Model providers for [deepharness](https://docs.rs/deepharness), each behind
//! harness-core's [`Llm`](harness_core::Llm) trait.
//!
//! - [`OpenAi`]: the Chat Completions API, and through it the gateways [`Groq`],
//!   [`Together`], [`DeepSeek`], [`Mistral`], [`Xai`], [`OpenRouter`], [`Fireworks`],
//!   [`Cerebras`] and the local servers [`Ollama`], [`Vllm`], [`LmStudio`], [`LlamaCpp`].
//! - [`Anthropic`]: the Messages API, thinking and its signature, prompt caching.
//! - [`Gemini`]: `generateContent` and its SSE stream, thought signatures.
//! - [`HttpClient`]: the retrying client they share (also used by web search).
//! - [`SseDecoder`]: server-sent events to the WHATWG rules.
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
mod env;
mod gemini;
mod http;
mod openai;
mod rest;
mod sse;
mod tls;
mod wire;
mod wrappers;

pub use anthropic::{Anthropic, AnthropicBuilder};
pub use env::{ModelChoice, model_from_env, model_from_env_or_test, model_from_spec};
pub use gemini::{Gemini, GeminiBuilder};
pub use http::{HttpClient, HttpConfig, RetryPolicy};
pub use openai::{
    Cerebras, DeepSeek, Fireworks, Groq, LlamaCpp, LmStudio, Mistral, Ollama, OpenAi,
    OpenAiBuilder, OpenRouter, Together, Vllm, Xai,
};
pub use rest::{StreamFormat, decode_stream};
pub use sse::{SseDecoder, SseEvent};
pub use tls::client_builder;
pub use wrappers::{Caching, Fallback, LlmExt, RateLimited, Retrying};

/// Reading each vendor's non-streamed answer, public for tests and for tools that replay
/// recorded traffic.
pub mod parse {
    pub use crate::anthropic::parse_response as anthropic;
    pub use crate::gemini::parse_response as gemini;
    pub use crate::openai::parse_response as openai;
}
