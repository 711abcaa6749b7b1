//! Model providers for [deepharness](https://docs.rs/deepharness), each behind
//! harness-core's [`Llm`](harness_core::Llm) trait.
//!
//! - [`OpenAi`]: the Chat Completions API, and through it the gateways [`Groq`],
//!   [`Together`], [`DeepSeek`], [`Mistral`], [`Xai`], [`OpenRouter`], [`Fireworks`],
//!   [`Cerebras`] and the local servers [`Ollama`], [`Vllm`], [`LmStudio`], [`LlamaCpp`].
//! - [`Anthropic`]: the Messages API, thinking and its signature, prompt caching.
//! - [`Gemini`]: `generateContent` and its SSE stream, thought signatures.
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
mod connection;
mod env;
mod gemini;
mod openai;
pub mod rest;
mod tls;
mod wire;
mod wrappers;

pub use anthropic::{Anthropic, AnthropicBuilder};
pub use env::{ModelChoice, model_from_env, model_from_env_or_test, model_from_spec};
pub use gemini::{Gemini, GeminiBuilder};
pub use openai::{
    Cerebras, DeepSeek, Fireworks, Groq, LlamaCpp, LmStudio, Mistral, Ollama, OpenAi,
    OpenAiBuilder, OpenRouter, Together, Vllm, Xai,
};
pub use rest::{HttpClient, HttpConfig, RetryPolicy, SseDecoder, SseEvent};
pub use tls::client_builder;
pub use wrappers::{Caching, Fallback, LlmExt, RateLimited, Retrying};

// Each vendor's own reader, driven over recorded bytes: public only for this crate's tests,
// benchmarks and property suites, which replay the recorded traffic of `tests/fixtures`
// (100,000 mutated cases per target under `cargo xtask fuzz`, too many to serve from a
// loopback server). Not part of the API: a vendor of your own is read with `rest::decode`.
#[doc(hidden)]
pub use replay::{StreamFormat, decode_stream};

#[doc(hidden)]
pub mod parse {
    //! Each vendor's non-streamed answer read from JSON, for this crate's tests (see
    //! `decode_stream`).
    pub use crate::replay::{anthropic, gemini, openai};
}

mod replay {
    use harness_core::{CompletionResponse, LlmEvent, Result};
    use serde_json::Value;

    use crate::rest::{self, Vendor};

    /// The stream formats of the vendors, for [`decode_stream`].
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum StreamFormat {
        /// OpenAI Chat Completions (and every compatible gateway and local server).
        OpenAi,
        /// Anthropic Messages.
        Anthropic,
        /// Gemini `streamGenerateContent?alt=sse`.
        Gemini,
    }

    const OPENAI: Vendor<'static> = Vendor::new("openai", "OpenAI");
    const ANTHROPIC: Vendor<'static> = Vendor::new("anthropic", "Anthropic");
    const GEMINI: Vendor<'static> = Vendor::new("gemini", "Gemini");

    /// Reads a whole recorded SSE body the way the vendor's provider reads a live one, in
    /// `chunk`-byte pieces, handing each delta to `emit`; returns the assembled turn.
    ///
    /// # Errors
    /// As [`rest::decode`].
    pub fn decode_stream(
        format: StreamFormat,
        body: &[u8],
        chunk: usize,
        emit: impl FnMut(LlmEvent),
    ) -> Result<CompletionResponse> {
        match format {
            StreamFormat::OpenAi => rest::decode(
                crate::openai::ChatAccumulator::new(OPENAI),
                body,
                chunk,
                emit,
            ),
            StreamFormat::Anthropic => rest::decode(
                crate::anthropic::MessagesAccumulator::new(ANTHROPIC),
                body,
                chunk,
                emit,
            ),
            StreamFormat::Gemini => rest::decode(
                crate::gemini::ContentAccumulator::new(GEMINI),
                body,
                chunk,
                emit,
            ),
        }
    }

    /// The bytes of a JSON answer, as a server would send them.
    fn bytes(answer: &Value) -> Vec<u8> {
        // Serialising a `Value` cannot fail: its keys are strings.
        serde_json::to_vec(answer).unwrap_or_default()
    }

    /// Reads a non-streamed Chat Completions answer.
    ///
    /// # Errors
    /// A provider error naming what a required part of the answer lacks.
    pub fn openai(answer: &Value) -> Result<CompletionResponse> {
        crate::openai::ChatAccumulator::new(OPENAI).answer(&bytes(answer))
    }

    /// Reads a non-streamed Messages answer.
    ///
    /// # Errors
    /// A provider error naming what a required part of the answer lacks.
    pub fn anthropic(answer: &Value) -> Result<CompletionResponse> {
        crate::anthropic::MessagesAccumulator::new(ANTHROPIC).answer(&bytes(answer))
    }

    /// Reads a non-streamed `generateContent` answer.
    ///
    /// # Errors
    /// A provider error naming what a required part of the answer lacks.
    pub fn gemini(answer: &Value) -> Result<CompletionResponse> {
        crate::gemini::ContentAccumulator::new(GEMINI)
            .answer("/models/recorded:generateContent", &bytes(answer))
    }
}
