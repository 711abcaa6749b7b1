//! The OpenAI-compatible services by name (`Groq::new("llama-3.3-70b-versatile")`): each an
//! [`OpenAi`] pointed at its row of the services table (`services.rs`), where everything
//! about it lives.

use harness_core::Result;

use crate::openai::{OpenAi, OpenAiBuilder};
use crate::services;

/// Declares each named service: a unit type whose `new` and `builder` give the [`OpenAi`]
/// of its row.
macro_rules! presets {
    ($($(#[$doc:meta])* $name:ident => $id:literal;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;

        impl $name {
            /// The model `model` on this service, with its defaults: an [`OpenAi`] pointed at
            /// the service.
            ///
            /// # Errors
            /// As [`OpenAiBuilder::build`].
            #[allow(clippy::new_ret_no_self)] // the service is a preset of `OpenAi`
            pub fn new(model: impl Into<String>) -> Result<OpenAi> {
                Self::builder(model).build()
            }

            /// A builder for `model` on this service.
            pub fn builder(model: impl Into<String>) -> OpenAiBuilder {
                OpenAiBuilder::for_service(services::known($id), model.into())
            }
        }
    )*};
}

presets! {
    /// Groq's OpenAI-compatible API; key from `GROQ_API_KEY`.
    Groq => "groq";
    /// Together AI; key from `TOGETHER_API_KEY`.
    Together => "together";
    /// DeepSeek; key from `DEEPSEEK_API_KEY`. Its reasoning arrives as thinking.
    DeepSeek => "deepseek";
    /// Mistral; key from `MISTRAL_API_KEY`.
    Mistral => "mistral";
    /// xAI; key from `XAI_API_KEY`.
    Xai => "xai";
    /// OpenRouter; key from `OPENROUTER_API_KEY`.
    OpenRouter => "openrouter";
    /// Fireworks AI; key from `FIREWORKS_API_KEY`.
    Fireworks => "fireworks";
    /// Cerebras; key from `CEREBRAS_API_KEY`.
    Cerebras => "cerebras";
    /// A local Ollama server at `localhost:11434`; no key.
    Ollama => "ollama";
    /// A local vLLM server at `localhost:8000`; no key.
    Vllm => "vllm";
    /// A local LM Studio server at `localhost:1234`; no key.
    LmStudio => "lmstudio";
    /// A local llama.cpp `llama-server` at `localhost:8080`; no key. Start it with `--jinja`
    /// for tool calls.
    LlamaCpp => "llamacpp";
}
