//! Tracing spans named as the OpenTelemetry GenAI semantic conventions name them, so a
//! `tracing-opentelemetry` layer exports them as GenAI spans: `invoke_agent {agent}`,
//! `chat {model}` and `execute_tool {tool}`, with their `gen_ai.*` attributes.
//!
//! A `tracing` span's name is fixed at compile time; `otel.name` carries the OpenTelemetry
//! span name, `otel.kind` its kind and `otel.status_code` an error, as tracing-opentelemetry
//! reads them. Attributes known only later (the response, usage, an error) are declared
//! empty and recorded when known.

use tracing::Span;
use tracing::field::Empty;

use crate::error::{Error, ErrorKind, ToolError};
use crate::llm::ModelInfo;
use crate::request::ModelSettings;
use crate::response::CompletionResponse;

/// `gen_ai.provider.name` for a provider id of this library: the conventions' well-known
/// value where there is one, the id itself otherwise.
pub(crate) fn provider_name(id: &str) -> &str {
    match id {
        "gemini" | "google" => "gcp.gemini",
        // One service, two of its APIs.
        "openai-responses" => "openai",
        // Azure OpenAI, through either API.
        "azure" | "azure-responses" => "azure.ai.openai",
        "vertex" => "gcp.vertex_ai",
        "bedrock" => "aws.bedrock",
        "mistral" => "mistral_ai",
        "xai" => "x_ai",
        // The conventions' name is this library's id.
        "cohere" => "cohere",
        other => other,
    }
}

/// The names a model's spans carry, worked out once per agent.
#[derive(Debug, Clone)]
pub(crate) struct ModelNames {
    /// `gen_ai.provider.name`.
    pub(crate) provider: String,
    /// `gen_ai.request.model`.
    pub(crate) model: String,
    /// `chat {model}`.
    chat: String,
}

impl ModelNames {
    pub(crate) fn of(model: &ModelInfo) -> Self {
        Self {
            provider: provider_name(&model.provider).to_owned(),
            chat: format!("chat {}", model.model),
            model: model.model.clone(),
        }
    }
}

/// The span of one agent run.
pub(crate) fn agent_span(agent: &str, names: &ModelNames) -> Span {
    tracing::info_span!(
        "invoke_agent",
        "otel.name" = %format_args!("invoke_agent {agent}"),
        "otel.kind" = "internal",
        "otel.status_code" = Empty,
        "gen_ai.operation.name" = "invoke_agent",
        "gen_ai.agent.name" = %agent,
        "gen_ai.provider.name" = %names.provider,
        "gen_ai.request.model" = %names.model,
        "error.type" = Empty,
    )
}

/// The span of one model call, with the settings it was asked with.
pub(crate) fn chat_span(names: &ModelNames, settings: &ModelSettings) -> Span {
    let span = tracing::info_span!(
        "chat",
        "otel.name" = %names.chat,
        "otel.kind" = "client",
        "otel.status_code" = Empty,
        "gen_ai.operation.name" = "chat",
        "gen_ai.provider.name" = %names.provider,
        "gen_ai.request.model" = %names.model,
        "gen_ai.request.temperature" = Empty,
        "gen_ai.request.max_tokens" = Empty,
        "gen_ai.request.top_p" = Empty,
        "gen_ai.response.id" = Empty,
        "gen_ai.response.model" = Empty,
        "gen_ai.response.finish_reasons" = Empty,
        "gen_ai.usage.input_tokens" = Empty,
        "gen_ai.usage.output_tokens" = Empty,
        "gen_ai.usage.cache_read.input_tokens" = Empty,
        "gen_ai.usage.cache_creation.input_tokens" = Empty,
        "gen_ai.usage.reasoning.output_tokens" = Empty,
        "error.type" = Empty,
    );
    if let Some(temperature) = settings.temperature {
        span.record("gen_ai.request.temperature", temperature);
    }
    if let Some(max_tokens) = settings.max_tokens {
        span.record("gen_ai.request.max_tokens", i64::from(max_tokens));
    }
    if let Some(top_p) = settings.top_p {
        span.record("gen_ai.request.top_p", top_p);
    }
    span
}

/// What the model answered: its id and model when the vendor said, why it stopped, usage.
pub(crate) fn record_response(span: &Span, response: &CompletionResponse) {
    if span.is_disabled() {
        return;
    }
    if let Some(id) = response.id() {
        span.record("gen_ai.response.id", id);
    }
    if let Some(model) = response.model() {
        span.record("gen_ai.response.model", model);
    }
    // The conventions type this as a string array, which a tracing field cannot be: it is
    // recorded as the array's JSON.
    span.record(
        "gen_ai.response.finish_reasons",
        format_args!("[\"{}\"]", response.finish_reason().as_str()),
    );
    if let Some(usage) = response.usage() {
        span.record("gen_ai.usage.input_tokens", as_int(usage.prompt_tokens));
        span.record(
            "gen_ai.usage.output_tokens",
            as_int(usage.completion_tokens),
        );
        // The parts inside those counts, only when the vendor reported them.
        let parts = [
            ("gen_ai.usage.cache_read.input_tokens", usage.cached_tokens),
            (
                "gen_ai.usage.cache_creation.input_tokens",
                usage.cache_write_tokens,
            ),
            (
                "gen_ai.usage.reasoning.output_tokens",
                usage.reasoning_tokens,
            ),
        ];
        for (name, count) in parts {
            if count > 0 {
                span.record(name, as_int(count));
            }
        }
    }
}

/// A count as OpenTelemetry's integer type (tracing-opentelemetry records a `u64` as text).
fn as_int(count: u64) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

/// An error that ended the span's operation: `error.type` is the HTTP status a provider
/// answered, else the kind of failure.
pub(crate) fn record_error(span: &Span, error: &Error) {
    let kind = match (error.status(), error.provider()) {
        (Some(status), _) => status.to_string(),
        (None, Some(provider)) => provider.kind().as_str().to_owned(),
        (None, None) if error.kind() == ErrorKind::Provider => "provider".to_owned(),
        (None, None) => error.kind().as_str().to_owned(),
    };
    span.record("error.type", kind.as_str());
    span.record("otel.status_code", "error");
}

/// The span of one tool call.
pub(crate) fn tool_span(name: &str, call_id: Option<&str>) -> Span {
    let span = tracing::info_span!(
        "execute_tool",
        "otel.name" = %format_args!("execute_tool {name}"),
        "otel.kind" = "internal",
        "otel.status_code" = Empty,
        "gen_ai.operation.name" = "execute_tool",
        "gen_ai.tool.name" = %name,
        "gen_ai.tool.type" = "function",
        "gen_ai.tool.call.id" = Empty,
        "error.type" = Empty,
    );
    if let Some(id) = call_id {
        span.record("gen_ai.tool.call.id", id);
    }
    span
}

/// A tool call that did not produce a result.
pub(crate) fn record_tool_error(span: &Span, error: &ToolError) {
    span.record("error.type", error.kind().as_str());
    span.record("otel.status_code", "error");
}

#[cfg(test)]
mod provider_name_tests {
    #[test]
    fn the_clouds_are_named_as_the_conventions_name_them() {
        assert_eq!(super::provider_name("vertex"), "gcp.vertex_ai");
        assert_eq!(super::provider_name("bedrock"), "aws.bedrock");
        assert_eq!(super::provider_name("openai-responses"), "openai");
        assert_eq!(super::provider_name("azure"), "azure.ai.openai");
        assert_eq!(super::provider_name("azure-responses"), "azure.ai.openai");
        assert_eq!(super::provider_name("gemini"), "gcp.gemini");
        assert_eq!(super::provider_name("groq"), "groq");
    }
}
