//! Every OpenAI-compatible service the library knows, one row each: where it lives, its key,
//! how it takes the output limit, whether it holds answers to a JSON Schema, the model
//! [`model_from_env`](crate::model_from_env) uses when only its key is set, and for a local
//! server the loopback port `model_from_env` asks. A new gateway is a new row (and, for a
//! named type such as [`Groq`](crate::Groq), a line in `presets.rs`).

/// Where an OpenAI-compatible service lives, how it is reached, and what it accepts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Service {
    /// The id errors, telemetry and `provider:model` strings use.
    pub(crate) id: &'static str,
    /// The service's name, as messages say it.
    pub(crate) name: &'static str,
    pub(crate) base_url: &'static str,
    /// The variable its key is read from.
    pub(crate) key_var: Option<&'static str>,
    /// The variable that moves its base URL.
    pub(crate) base_url_var: Option<&'static str>,
    /// The field the output limit goes in.
    pub(crate) token_limit: TokenLimit,
    /// Whether it holds answers to a JSON Schema (`response_format` `json_schema`).
    pub(crate) structured_output: bool,
    /// The model used when only the key is set.
    pub(crate) default_model: Option<&'static str>,
    /// For a local server, the port it listens on by default.
    pub(crate) local_port: Option<u16>,
}

/// The field a service reads the output limit from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenLimit {
    /// `max_tokens`, the field most services read.
    MaxTokens,
    /// `max_completion_tokens`, OpenAI's (which refuses `max_tokens` for reasoning models).
    MaxCompletionTokens,
}

use TokenLimit::{MaxCompletionTokens, MaxTokens};

/// A hosted service: reached with a key, a model chosen when only the key is set.
const fn hosted(
    id: &'static str,
    name: &'static str,
    base_url: &'static str,
    key_var: &'static str,
    structured_output: bool,
    default_model: &'static str,
) -> Service {
    Service {
        id,
        name,
        base_url,
        key_var: Some(key_var),
        base_url_var: None,
        token_limit: MaxTokens,
        structured_output,
        default_model: Some(default_model),
        local_port: None,
    }
}

/// A server on this machine: no key, asked on its port at `base_url`.
const fn local(id: &'static str, name: &'static str, base_url: &'static str, port: u16) -> Service {
    Service {
        id,
        name,
        base_url,
        key_var: None,
        base_url_var: None,
        token_limit: MaxTokens,
        structured_output: true,
        default_model: None,
        local_port: Some(port),
    }
}

/// The services, in the order `model_from_env` prefers them (OpenAI first; Anthropic's and
/// Gemini's keys, which are not of this format, come right after it). Structured output is
/// off where it depends on the model served (Groq, DeepSeek, OpenRouter).
#[rustfmt::skip]
pub(crate) const SERVICES: &[Service] = &[
    Service {
        id: "openai",
        name: "OpenAI",
        base_url: "https://api.openai.com/v1",
        key_var: Some("OPENAI_API_KEY"),
        base_url_var: Some("OPENAI_BASE_URL"),
        token_limit: MaxCompletionTokens,
        structured_output: true,
        default_model: Some("gpt-4o-mini"),
        local_port: None,
    },
    hosted("groq", "Groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY", false, "llama-3.3-70b-versatile"),
    hosted("mistral", "Mistral", "https://api.mistral.ai/v1", "MISTRAL_API_KEY", true, "mistral-small-latest"),
    hosted("deepseek", "DeepSeek", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY", false, "deepseek-chat"),
    hosted("openrouter", "OpenRouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", false, "openai/gpt-4o-mini"),
    hosted("together", "Together AI", "https://api.together.xyz/v1", "TOGETHER_API_KEY", true, "meta-llama/Llama-3.3-70B-Instruct-Turbo"),
    hosted("fireworks", "Fireworks AI", "https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY", true, "accounts/fireworks/models/llama-v3p3-70b-instruct"),
    hosted("cerebras", "Cerebras", "https://api.cerebras.ai/v1", "CEREBRAS_API_KEY", true, "llama-3.3-70b"),
    hosted("xai", "xAI", "https://api.x.ai/v1", "XAI_API_KEY", true, "grok-3-mini"),
    local("ollama", "Ollama", "http://localhost:11434/v1", 11434),
    local("llamacpp", "llama.cpp", "http://localhost:8080/v1", 8080),
    local("lmstudio", "LM Studio", "http://localhost:1234/v1", 1234),
    local("vllm", "vLLM", "http://localhost:8000/v1", 8000),
];

/// The service with id `id`.
pub(crate) fn service(id: &str) -> Option<&'static Service> {
    SERVICES.iter().find(|service| service.id == id)
}

/// The service with id `id`, which this crate names itself (a preset's): a missing row is a
/// bug caught by the table's test, and reads as OpenAI's rather than panicking.
pub(crate) fn known(id: &str) -> Service {
    service(id).copied().unwrap_or(SERVICES[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_every_local_server_has_its_port_in_its_url() {
        for (i, service) in SERVICES.iter().enumerate() {
            assert!(
                SERVICES[i + 1..].iter().all(|other| other.id != service.id),
                "{} twice",
                service.id
            );
            if let Some(port) = service.local_port {
                assert!(
                    service.base_url.contains(&format!(":{port}/")),
                    "{}",
                    service.id
                );
                assert!(service.key_var.is_none() && service.default_model.is_none());
            } else {
                assert!(service.key_var.is_some() && service.default_model.is_some());
            }
        }
        assert_eq!(known("groq").name, "Groq");
    }
}
