//! Choosing a model from the environment, so a first program runs anywhere.

use std::sync::Arc;
use std::time::Duration;

use harness_core::testing::TestModel;
use harness_core::{Error, Llm, Result};

use crate::azure;
use crate::openai::{OpenAiBuilder, env_nonempty};
use crate::services::{SERVICES, Service, service};
use crate::{Anthropic, AzureOpenAi, Cohere, Gemini, OpenAiResponses, Vertex};

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
            .field("model", &self.model.info().name())
            .field("reason", &self.reason)
            .finish()
    }
}

/// The model's name and the reason, as a program shows its choice: `test (no provider...)`.
impl std::fmt::Display for ModelChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.model.info().name(), self.reason)
    }
}

/// The vendors of their own formats, with their keys and the model used when only the key
/// is given: preferred right after OpenAI, before the other services.
const OWN_FORMATS: &[(&str, &str, &str)] = &[
    ("ANTHROPIC_API_KEY", "anthropic", "claude-3-5-haiku-latest"),
    ("GEMINI_API_KEY", "gemini", "gemini-2.5-flash"),
    ("GOOGLE_API_KEY", "gemini", "gemini-2.5-flash"),
    ("CO_API_KEY", "cohere", "command-a-03-2025"),
    ("COHERE_API_KEY", "cohere", "command-a-03-2025"),
];

/// The clouds whose variables select them, after every service with a key: Vertex AI (with
/// Application Default Credentials, feature `vertex`) when a Google Cloud project is set.
#[cfg(feature = "vertex")]
const CLOUDS: &[(&str, &str, &str)] = &[("GOOGLE_CLOUD_PROJECT", "vertex", "gemini-2.5-flash")];
#[cfg(not(feature = "vertex"))]
const CLOUDS: &[(&str, &str, &str)] = &[];

/// Every provider that a key in the environment selects, in the order they are preferred:
/// `(variable, provider, model)`.
fn keyed() -> impl Iterator<Item = (&'static str, &'static str, &'static str)> {
    let hosted = SERVICES
        .iter()
        .filter_map(|service| Some((service.key_var?, service.id, service.default_model?)));
    // OpenAI first, then the vendors of their own formats, then the other services.
    hosted
        .clone()
        .take(1)
        .chain(OWN_FORMATS.iter().copied())
        .chain(hosted.skip(1))
        .chain(CLOUDS.iter().copied())
}

/// The local servers asked on loopback, in table order.
fn local() -> impl Iterator<Item = (&'static Service, u16)> {
    SERVICES
        .iter()
        .filter_map(|service| Some((service, service.local_port?)))
}

/// Builds a model from a `provider:model` string: `openai:gpt-4o-mini`,
/// `openai-responses:gpt-5` (the Responses API), `azure:<deployment>` and
/// `azure-responses:<deployment>` (Azure OpenAI's Chat Completions and Responses API, the
/// resource from `AZURE_OPENAI_ENDPOINT`; see [`AzureOpenAi::new`]),
/// `anthropic:claude-3-5-haiku-latest`, `gemini:gemini-2.5-flash`,
/// `cohere:command-a-03-2025`, `groq:...`, `together:...`,
/// `deepseek:...`, `mistral:...`, `xai:...`, `openrouter:...`, `fireworks:...`,
/// `cerebras:...`, `ollama:...`, `vllm:...`, `lmstudio:...`, `llamacpp:...`, or `test`;
/// `vertex:gemini-2.5-flash` and `vertex:claude-sonnet-4@20250514` on Google Vertex AI
/// ([`Vertex::new`]: the environment's project, location and credentials; a `claude-...`
/// model is Anthropic's, any other Google's);
/// `bedrock:us.anthropic.claude-sonnet-4-20250514-v1:0` (feature `bedrock`; the model id may
/// hold colons).
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
    match provider.trim() {
        "anthropic" => Ok(Arc::new(Anthropic::new(model)?)),
        "gemini" | "google" => Ok(Arc::new(Gemini::new(model)?)),
        "cohere" => Ok(Arc::new(Cohere::new(model)?)),
        "openai-responses" => Ok(Arc::new(OpenAiResponses::new(model)?)),
        azure::CHAT_ID => Ok(Arc::new(AzureOpenAi::new()?.chat(model)?)),
        azure::RESPONSES_ID => Ok(Arc::new(AzureOpenAi::new()?.responses(model)?)),
        "vertex" if model.starts_with("claude") => Ok(Arc::new(Vertex::new()?.anthropic(model)?)),
        "vertex" => Ok(Arc::new(Vertex::new()?.gemini(model)?)),
        #[cfg(feature = "bedrock")]
        "bedrock" => Ok(Arc::new(crate::Bedrock::new(model)?)),
        id => match service(id) {
            Some(service) => Ok(Arc::new(
                OpenAiBuilder::for_service(*service, model.to_owned()).build()?,
            )),
            None => {
                let known: Vec<&str> = [
                    "anthropic",
                    "gemini",
                    "cohere",
                    "openai-responses",
                    "vertex",
                ]
                .into_iter()
                .chain([azure::CHAT_ID, azure::RESPONSES_ID])
                .chain(cfg!(feature = "bedrock").then_some("bedrock"))
                .chain(SERVICES.iter().map(|service| service.id))
                .collect();
                Err(Error::configuration(format!(
                    "unknown provider '{id}' in '{spec}'; use one of {}, or test",
                    known.join(", ")
                )))
            }
        },
    }
}

/// Where [`model_from_env`] looks, in order, for the message when it finds nothing.
fn looked_for() -> String {
    let mut keys: Vec<&str> = keyed().map(|(var, _, _)| var).collect();
    keys.push(azure::ENDPOINT_VAR);
    #[cfg(feature = "bedrock")]
    keys.push("AWS_REGION with AWS credentials or AWS_BEARER_TOKEN_BEDROCK");
    let servers: Vec<String> = local()
        .map(|(service, port)| format!("{} on 127.0.0.1:{port}", service.id))
        .collect();
    format!(
        "DEEPHARNESS_MODEL is not set, none of {} is set, and no local server answered ({})",
        keys.join(", "),
        servers.join(", ")
    )
}

/// The model a program should use when it names none:
///
/// 1. `DEEPHARNESS_MODEL`, a `provider:model` string (see [`model_from_spec`]);
/// 2. else the first provider whose API key is set (OpenAI, Anthropic, Gemini, Cohere, then
///    the gateways), with a small default model; then Azure OpenAI when
///    `AZURE_OPENAI_ENDPOINT` is set with `AZURE_OPENAI_API_KEY` (or, with the feature
///    `azure-identity`, alone): `azure:<deployment>`, the deployment from
///    `AZURE_OPENAI_DEPLOYMENT` (default `gpt-4o-mini`); then, with the `bedrock` feature,
///    Bedrock when a region and AWS credentials are in the environment; then, with the
///    `vertex` feature, Gemini on Vertex AI when `GOOGLE_CLOUD_PROJECT` is set (Application
///    Default Credentials);
/// 3. else a local server that answers on loopback (Ollama, llama.cpp, LM Studio, vLLM, asked
///    at once, each given under a second), with the first model it lists.
///
/// [`model_from_env_or_test`] falls back to the offline [`TestModel`] instead of failing.
///
/// # Errors
/// A [`Configuration`](harness_core::ErrorKind::Configuration) error when `DEEPHARNESS_MODEL` is
/// set but not usable, or when nothing is configured: the message lists every place looked.
pub async fn model_from_env() -> Result<ModelChoice> {
    found_in_env().await?.ok_or_else(|| {
        Error::configuration(format!(
            "no model is configured: {}. Set DEEPHARNESS_MODEL=provider:model (e.g. \
             openai:gpt-4o-mini) or an API key, start a local server, or call \
             model_from_env_or_test() to run on the offline TestModel",
            looked_for()
        ))
    })
}

/// [`model_from_env`], or the offline [`TestModel`] when nothing is configured (the reason
/// says so): what examples and first programs use, so they run anywhere.
///
/// # Errors
/// A [`Configuration`](harness_core::ErrorKind::Configuration) error when `DEEPHARNESS_MODEL` is
/// set but not usable: a mistake is reported, not papered over with the test model.
pub async fn model_from_env_or_test() -> Result<ModelChoice> {
    Ok(found_in_env().await?.unwrap_or_else(|| ModelChoice {
        model: Arc::new(TestModel::new()),
        reason: format!("{}; using the offline TestModel", looked_for()),
    }))
}

/// The configured model, `None` when nothing is configured.
async fn found_in_env() -> Result<Option<ModelChoice>> {
    if let Some(spec) = env_nonempty("DEEPHARNESS_MODEL") {
        return Ok(Some(ModelChoice {
            model: model_from_spec(&spec)?,
            reason: format!("DEEPHARNESS_MODEL is {spec}"),
        }));
    }
    for (var, provider, model) in keyed() {
        if env_nonempty(var).is_some() {
            return Ok(Some(ModelChoice {
                model: model_from_spec(&format!("{provider}:{model}"))?,
                reason: format!(
                    "{var} is set; using {provider}:{model} (set DEEPHARNESS_MODEL to choose)"
                ),
            }));
        }
    }
    if let Some(deployment) = azure::configured_deployment() {
        let spec = format!("{}:{deployment}", azure::CHAT_ID);
        return Ok(Some(ModelChoice {
            model: model_from_spec(&spec)?,
            reason: format!(
                "{} is set; using {spec} (set DEEPHARNESS_MODEL to choose)",
                azure::ENDPOINT_VAR
            ),
        }));
    }
    #[cfg(feature = "bedrock")]
    if let Some(choice) = bedrock_from_env()? {
        return Ok(Some(choice));
    }
    let client = crate::rest::client_builder()?
        .connect_timeout(Duration::from_millis(150))
        .timeout(Duration::from_millis(800))
        .build()
        .map_err(|e| Error::configuration(format!("cannot build the HTTP client: {e}")))?;
    // Every server asked at once: nothing configured costs one timeout, not four.
    let answers =
        futures_util::future::join_all(local().map(|(_, port)| probe_local(&client, port))).await;
    for ((service, port), answer) in local().zip(answers) {
        if let Some(model) = answer {
            let built = OpenAiBuilder::for_service(*service, model.clone()).build()?;
            return Ok(Some(ModelChoice {
                model: Arc::new(built),
                reason: format!(
                    "a {} server answers on 127.0.0.1:{port}; using {model}",
                    service.id
                ),
            }));
        }
    }
    Ok(None)
}

/// Bedrock, when a region and AWS credentials (or a Bedrock API key) are in the environment:
/// the variables alone are looked at, never the instance metadata service.
#[cfg(feature = "bedrock")]
fn bedrock_from_env() -> Result<Option<ModelChoice>> {
    const MODEL: &str = "amazon.nova-micro-v1:0";
    let region = ["AWS_REGION", "AWS_DEFAULT_REGION"]
        .into_iter()
        .find(|var| env_nonempty(var).is_some());
    let credentials = [
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_ACCESS_KEY_ID",
        "AWS_PROFILE",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ]
    .into_iter()
    .find(|var| env_nonempty(var).is_some());
    let (Some(region), Some(credentials)) = (region, credentials) else {
        return Ok(None);
    };
    Ok(Some(ModelChoice {
        model: model_from_spec(&format!("bedrock:{MODEL}"))?,
        reason: format!(
            "{region} and {credentials} are set; using bedrock:{MODEL} (set DEEPHARNESS_MODEL \
             to choose)"
        ),
    }))
}

/// Asks a loopback OpenAI-compatible server for its models; the first one's id, or
/// `default` when it answers without a list.
async fn probe_local(client: &reqwest::Client, port: u16) -> Option<String> {
    let response = client
        .get(format!("http://127.0.0.1:{port}/v1/models"))
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .ok()?;
    if response.status() != reqwest::StatusCode::OK {
        return None;
    }
    // A model list is small; a server that sends megabytes is not one of these.
    let body = response.bytes().await.ok()?;
    let listed = serde_json::from_slice::<serde_json::Value>(&body[..body.len().min(1 << 20)])
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
        assert_eq!(choice.to_string(), "test:test (nothing configured)");
    }

    #[test]
    fn specs_name_a_provider_and_a_model() {
        assert_eq!(
            model_from_spec("test")
                .map(|m| m.info().name())
                .ok()
                .as_deref(),
            Some("test:test")
        );
        let model = model_from_spec("groq:llama-3.3-70b-versatile").map(|m| m.info().name());
        assert_eq!(model.ok().as_deref(), Some("groq:llama-3.3-70b-versatile"));
        let model = model_from_spec("openai-responses:gpt-5").map(|m| m.info().name());
        assert_eq!(model.ok().as_deref(), Some("openai-responses:gpt-5"));
        let model = model_from_spec("llamacpp:smollm2").map(|m| m.info().name());
        assert_eq!(model.ok().as_deref(), Some("llamacpp:smollm2"));
        let cohere = model_from_spec("cohere:command-a-03-2025")
            .expect("a Cohere model")
            .info();
        assert_eq!(cohere.name(), "cohere:command-a-03-2025");
        assert_eq!(cohere.context_window, Some(256_000));
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
    fn nothing_configured_names_every_place_looked() {
        let text = looked_for();
        let keys: Vec<&str> = keyed().map(|(var, _, _)| var).collect();
        assert_eq!(
            &keys[..4],
            [
                "OPENAI_API_KEY",
                "ANTHROPIC_API_KEY",
                "GEMINI_API_KEY",
                "GOOGLE_API_KEY"
            ]
        );
        assert_eq!(keys.len(), 14 + CLOUDS.len());
        assert!(keys.contains(&"CO_API_KEY") && keys.contains(&"COHERE_API_KEY"));
        for var in keys {
            assert!(text.contains(var), "{text}");
        }
        for port in ["11434", "8080", "1234", "8000"] {
            assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
        }
        assert!(text.starts_with("DEEPHARNESS_MODEL is not set"), "{text}");
    }

    #[tokio::test]
    async fn a_local_server_is_found_by_its_model_list() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        let port = listener.local_addr().expect("an address").port();
        let server = std::thread::spawn(move || {
            if let Ok((mut socket, _)) = listener.accept() {
                let mut request = [0_u8; 1024];
                let _ = std::io::Read::read(&mut socket, &mut request);
                let body = r#"{"object":"list","data":[{"id":"smollm2","object":"model"}]}"#;
                let _ = std::io::Write::write_fmt(
                    &mut socket,
                    format_args!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    ),
                );
            }
        });
        let client = crate::rest::client_builder()
            .and_then(|b| b.build().map_err(|e| Error::configuration(e.to_string())))
            .expect("a client");
        assert_eq!(probe_local(&client, port).await.as_deref(), Some("smollm2"));
        server.join().ok();
        // Nothing listens there any more.
        assert_eq!(probe_local(&client, port).await, None);
    }
}
