//! Choosing a model from the environment, so a first program runs anywhere.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use harness_core::testing::TestModel;
use harness_core::{Error, Llm, Result};

use crate::openai::{OpenAiBuilder, Service, env_nonempty};
use crate::{
    Anthropic, Cerebras, DeepSeek, Fireworks, Gemini, Groq, LlamaCpp, LmStudio, Mistral, Ollama,
    OpenAi, OpenRouter, Together, Vllm, Xai,
};

/// The model [`model_from_env`] chose, and why.
#[derive(Clone)]
pub struct ModelChoice {
    /// The model.
    pub model: Arc<dyn Llm>,
    /// Why it was chosen, in a sentence fit to show the user.
    pub reason: String,
}

impl std::fmt::Debug for ModelChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelChoice")
            .field("model", &self.model.name())
            .field("reason", &self.reason)
            .finish()
    }
}

/// The model's name and the reason, as a program shows its choice: `test (no provider...)`.
impl std::fmt::Display for ModelChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.model.name(), self.reason)
    }
}

/// Providers with a key in the environment, in the order they are preferred, with the model
/// used when only the key is given.
const KEYED: &[(&str, &str, &str)] = &[
    ("OPENAI_API_KEY", "openai", "gpt-4o-mini"),
    ("ANTHROPIC_API_KEY", "anthropic", "claude-3-5-haiku-latest"),
    ("GEMINI_API_KEY", "gemini", "gemini-2.5-flash"),
    ("GOOGLE_API_KEY", "gemini", "gemini-2.5-flash"),
    ("GROQ_API_KEY", "groq", "llama-3.3-70b-versatile"),
    ("MISTRAL_API_KEY", "mistral", "mistral-small-latest"),
    ("DEEPSEEK_API_KEY", "deepseek", "deepseek-chat"),
    ("OPENROUTER_API_KEY", "openrouter", "openai/gpt-4o-mini"),
    (
        "TOGETHER_API_KEY",
        "together",
        "meta-llama/Llama-3.3-70B-Instruct-Turbo",
    ),
    (
        "FIREWORKS_API_KEY",
        "fireworks",
        "accounts/fireworks/models/llama-v3p3-70b-instruct",
    ),
    ("CEREBRAS_API_KEY", "cerebras", "llama-3.3-70b"),
    ("XAI_API_KEY", "xai", "grok-3-mini"),
];

/// Local servers probed on loopback, in order.
const LOCAL: &[(Service, u16)] = &[
    (Ollama::SERVICE, 11434),
    (LlamaCpp::SERVICE, 8080),
    (LmStudio::SERVICE, 1234),
    (Vllm::SERVICE, 8000),
];

/// Builds a model from a `provider:model` string: `openai:gpt-4o-mini`,
/// `anthropic:claude-3-5-haiku-latest`, `gemini:gemini-2.5-flash`, `groq:...`, `together:...`,
/// `deepseek:...`, `mistral:...`, `xai:...`, `openrouter:...`, `fireworks:...`,
/// `cerebras:...`, `ollama:...`, `vllm:...`, `lmstudio:...`, `llamacpp:...`, or `test`.
///
/// # Errors
/// A [`Configuration`](harness_core::ErrorKind::Configuration) error for an unknown provider or a
/// string without a model.
pub fn model_from_spec(spec: &str) -> Result<Arc<dyn Llm>> {
    if spec.trim() == "test" {
        return Ok(Arc::new(TestModel::new()));
    }
    let Some((provider, model)) = spec.split_once(':').filter(|(_, m)| !m.trim().is_empty()) else {
        return Err(Error::configuration(format!(
            "model '{spec}' is not of the form provider:model, e.g. openai:gpt-4o-mini"
        )));
    };
    let model = model.trim();
    let compatible =
        |builder: OpenAiBuilder| -> Result<Arc<dyn Llm>> { Ok(Arc::new(builder.build()?)) };
    match provider.trim() {
        "openai" => compatible(OpenAi::builder(model)),
        "anthropic" => Ok(Arc::new(Anthropic::new(model)?)),
        "gemini" | "google" => Ok(Arc::new(Gemini::new(model)?)),
        "groq" => compatible(Groq::builder(model)),
        "together" => compatible(Together::builder(model)),
        "deepseek" => compatible(DeepSeek::builder(model)),
        "mistral" => compatible(Mistral::builder(model)),
        "xai" => compatible(Xai::builder(model)),
        "openrouter" => compatible(OpenRouter::builder(model)),
        "fireworks" => compatible(Fireworks::builder(model)),
        "cerebras" => compatible(Cerebras::builder(model)),
        "ollama" => compatible(Ollama::builder(model)),
        "vllm" => compatible(Vllm::builder(model)),
        "lmstudio" => compatible(LmStudio::builder(model)),
        "llamacpp" => compatible(LlamaCpp::builder(model)),
        other => Err(Error::configuration(format!(
            "unknown provider '{other}' in '{spec}'; use one of openai, anthropic, gemini, groq, \
             together, deepseek, mistral, xai, openrouter, fireworks, cerebras, ollama, vllm, \
             lmstudio, llamacpp, or test"
        ))),
    }
}

/// The model a program should use when it names none:
///
/// 1. `DEEPHARNESS_MODEL`, a `provider:model` string (see [`model_from_spec`]);
/// 2. else the first provider whose API key is set (OpenAI, Anthropic, Gemini, then the
///    gateways), with a small default model;
/// 3. else a local server that answers on loopback (Ollama, llama.cpp, LM Studio, vLLM),
///    with the first model it lists;
/// 4. else the offline [`TestModel`], and the reason says so.
///
/// # Errors
/// A [`Configuration`](harness_core::ErrorKind::Configuration) error when `DEEPHARNESS_MODEL` is
/// set but not usable.
pub fn model_from_env() -> Result<ModelChoice> {
    if let Some(spec) = env_nonempty("DEEPHARNESS_MODEL") {
        return Ok(ModelChoice {
            model: model_from_spec(&spec)?,
            reason: format!("DEEPHARNESS_MODEL is {spec}"),
        });
    }
    for (var, provider, model) in KEYED {
        if env_nonempty(var).is_some() {
            return Ok(ModelChoice {
                model: model_from_spec(&format!("{provider}:{model}"))?,
                reason: format!(
                    "{var} is set; using {provider}:{model} (set DEEPHARNESS_MODEL to choose)"
                ),
            });
        }
    }
    for (service, port) in LOCAL {
        if let Some(model) = probe_local(*port) {
            let built = OpenAiBuilder::for_service(*service, model.clone()).build()?;
            return Ok(ModelChoice {
                model: Arc::new(built),
                reason: format!(
                    "a {} server answers on 127.0.0.1:{port}; using {model}",
                    service.id
                ),
            });
        }
    }
    Ok(ModelChoice {
        model: Arc::new(TestModel::new()),
        reason: "no provider is configured (no DEEPHARNESS_MODEL, no API key, no local server); \
                 using the offline TestModel"
            .to_owned(),
    })
}

/// Asks a loopback OpenAI-compatible server for its models; the first one's id, or
/// `default` when it answers without a list.
fn probe_local(port: u16) -> Option<String> {
    let address = SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_millis(150)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_millis(800)))
        .ok()?;
    stream
        .set_write_timeout(Some(Duration::from_millis(300)))
        .ok()?;
    let request = format!(
        "GET /v1/models HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nAccept: application/json\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).ok()?;
    let mut answer = Vec::new();
    stream.take(1 << 20).read_to_end(&mut answer).ok()?;
    let answer = String::from_utf8_lossy(&answer);
    let (head, body) = answer.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1);
    if !head.starts_with("HTTP/1.") || status != Some("200") {
        return None;
    }
    let listed = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            v.get("data")?
                .as_array()?
                .first()?
                .get("id")?
                .as_str()
                .map(str::to_owned)
        });
    Some(listed.unwrap_or_else(|| "default".to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_choice_shows_as_its_model_and_reason() {
        let choice = ModelChoice {
            model: Arc::new(harness_core::testing::TestModel::new()),
            reason: "nothing configured".to_owned(),
        };
        assert_eq!(choice.to_string(), "test (nothing configured)");
    }

    #[test]
    fn specs_name_a_provider_and_a_model() {
        assert_eq!(
            model_from_spec("test").map(|m| m.name()).ok().as_deref(),
            Some("test")
        );
        let model = model_from_spec("groq:llama-3.3-70b-versatile").map(|m| m.name());
        assert_eq!(model.ok().as_deref(), Some("groq:llama-3.3-70b-versatile"));
        let model = model_from_spec("llamacpp:smollm2").map(|m| m.name());
        assert_eq!(model.ok().as_deref(), Some("llamacpp:smollm2"));
        let err = model_from_spec("gpt-4o")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("is not of the form provider:model"), "{err}");
        let err = model_from_spec("nope:x")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.starts_with("unknown provider 'nope'"), "{err}");
    }

    #[test]
    fn a_local_server_is_found_by_its_model_list() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        let port = listener.local_addr().expect("an address").port();
        let server = std::thread::spawn(move || {
            if let Ok((mut socket, _)) = listener.accept() {
                let mut request = [0_u8; 1024];
                let _ = std::io::Read::read(&mut socket, &mut request);
                let body = r#"{"object":"list","data":[{"id":"smollm2","object":"model"}]}"#;
                let _ = write!(
                    socket,
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        assert_eq!(probe_local(port).as_deref(), Some("smollm2"));
        server.join().ok();
        // Nothing listens there any more.
        assert_eq!(probe_local(port), None);
    }
}
