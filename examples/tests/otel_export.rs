//! The agent's spans through `tracing-opentelemetry`, as the telemetry example exports them:
//! OpenTelemetry span names, kinds, typed `gen_ai.*` attributes and error status.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use deepharness::errors::{ProviderError, RunError};
use deepharness::prelude::*;
use deepharness::providers::{CompletionResponse, TokenUsage};
use deepharness::testing::ScriptedModel;
use opentelemetry::trace::{SpanKind, Status, TracerProvider as _};
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt as _;

/// Keeps every exported span.
#[derive(Debug, Clone, Default)]
struct Collect(Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for Collect {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0.lock().unwrap().extend(batch);
        Ok(())
    }
}

/// Look up the current weather for a city.
#[tool]
fn get_weather(city: String) -> String {
    format!("It is 22°C and sunny in {city}.")
}

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv: &&KeyValue| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

fn exported(agent: &Agent) -> (Vec<SpanData>, Result<deepharness::AgentState, RunError>) {
    let collect = Collect::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(collect.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
    let result = tracing::subscriber::with_default(subscriber, || {
        agent.run_blocking("What is the weather in Oslo?")
    });
    provider.shutdown().unwrap();
    let spans = collect.0.lock().unwrap().clone();
    (spans, result)
}

#[test]
fn a_run_exports_genai_spans() {
    let model = ScriptedModel::new([
        CompletionResponse::from_tool_calls(vec![
            deepharness::providers::ToolCall::new("get_weather", json!({"city": "Oslo"}))
                .with_id("call-7"),
        ])
        .with_usage(TokenUsage::new(40, 9, 49))
        .with_id("resp-1"),
        CompletionResponse::text("Sunny, 22°C."),
    ]);
    let agent = Agent::builder(model)
        .name("weather")
        .tool(GetWeather)
        .build()
        .unwrap();
    let (spans, result) = exported(&agent);
    assert_eq!(result.unwrap().output_text(), "Sunny, 22°C.");
    // Exported as each ends: the model call, the tool, the second call, then the run.
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "chat scripted",
            "execute_tool get_weather",
            "chat scripted",
            "invoke_agent weather"
        ]
    );
    let run = &spans[3];
    assert_eq!(run.span_kind, SpanKind::Internal);
    for child in &spans[..3] {
        assert_eq!(child.parent_span_id, run.span_context.span_id());
    }
    let chat = &spans[0];
    assert_eq!(chat.span_kind, SpanKind::Client);
    assert_eq!(
        attribute(chat, "gen_ai.operation.name"),
        Some(&Value::from("chat"))
    );
    assert_eq!(
        attribute(chat, "gen_ai.usage.input_tokens"),
        Some(&Value::I64(40))
    );
    assert_eq!(
        attribute(chat, "gen_ai.usage.output_tokens"),
        Some(&Value::I64(9))
    );
    assert_eq!(
        attribute(chat, "gen_ai.response.id"),
        Some(&Value::from("resp-1"))
    );
    assert_eq!(chat.status, Status::Unset);
    let tool = &spans[1];
    assert_eq!(
        attribute(tool, "gen_ai.tool.call.id"),
        Some(&Value::from("call-7"))
    );
    assert_eq!(
        attribute(tool, "gen_ai.tool.name"),
        Some(&Value::from("get_weather"))
    );
}

#[test]
fn a_provider_failure_is_an_error_status() {
    let model = ScriptedModel::new([]).then_fail(
        ProviderError::new("openai", "overloaded")
            .with_status(503)
            .into(),
    );
    let agent = Agent::builder(model).name("weather").build().unwrap();
    let (spans, result) = exported(&agent);
    assert_eq!(result.unwrap_err().status(), Some(503));
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_ref()).collect();
    assert_eq!(names, ["chat scripted", "invoke_agent weather"]);
    for span in &spans {
        assert!(matches!(span.status, Status::Error { .. }), "{span:?}");
        assert_eq!(attribute(span, "error.type"), Some(&Value::from("503")));
    }
}
