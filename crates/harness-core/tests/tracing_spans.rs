//! A run is traced with OpenTelemetry GenAI names: one span for the run, one per model call
//! with its usage, one per tool call.

#![allow(missing_docs, clippy::unwrap_used)]

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use harness_core::agent::Agent;
use harness_core::testing::ScriptedModel;
use harness_core::{
    CompletionResponse, FinishReason, Llm, ModelInfo, ModelSettings, ProviderError, Request,
    RunError, TokenUsage, ToolCall, async_trait, tool,
};
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// A span's name and the fields recorded on it.
type Span = (String, Vec<(String, String)>);

#[derive(Default)]
struct Capture {
    next: AtomicU64,
    spans: Mutex<Vec<Span>>,
}

struct Fields<'a>(&'a mut Vec<(String, String)>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name().to_owned(), value.to_owned()));
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut fields = Vec::new();
        span.record(&mut Fields(&mut fields));
        let mut spans = self.spans.lock().unwrap();
        spans.push((span.metadata().name().to_owned(), fields));
        self.next.fetch_add(1, Ordering::SeqCst);
        Id::from_u64(spans.len() as u64)
    }
    fn record(&self, span: &Id, values: &Record<'_>) {
        let mut spans = self.spans.lock().unwrap();
        let index = usize::try_from(span.into_u64()).unwrap() - 1;
        values.record(&mut Fields(&mut spans[index].1));
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// Add two integers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Always fails.
#[tool]
fn flaky() -> Result<String, String> {
    Err("the service is down".to_owned())
}

/// A scripted model under a vendor's name, as a provider names itself: provider, model.
struct Named(&'static str, &'static str, ScriptedModel);

#[async_trait]
impl Llm for Named {
    async fn generate(&self, request: Request<'_>) -> harness_core::Result<CompletionResponse> {
        self.2.generate(request).await
    }
    fn info(&self) -> ModelInfo {
        ModelInfo::new(self.0, self.1)
    }
}

fn run_traced(agent: &Agent) -> (Vec<Span>, Result<harness_core::AgentState, RunError>) {
    let capture = std::sync::Arc::new(Capture::default());
    let result =
        tracing::subscriber::with_default(capture.clone(), || agent.run_blocking("1 + 2?"));
    let spans = capture.spans.lock().unwrap().clone();
    (spans, result)
}

fn field(span: &Span, name: &str) -> Option<String> {
    span.1
        .iter()
        .rev()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
}

#[test]
fn spans_follow_the_genai_conventions() {
    let model = Named(
        "gemini",
        "gemini-2.5-flash",
        ScriptedModel::new([
            CompletionResponse::from_tool_calls(vec![
                ToolCall::new("add", json!({"a": 1, "b": 2})).with_id("call-1"),
            ])
            .with_usage(TokenUsage::new(12, 3, 15).with_cached(7).with_reasoning(2))
            .with_id("resp-1")
            .with_model("gemini-2.5-flash-001"),
            CompletionResponse::text("3")
                .with_finish_reason(FinishReason::Length)
                .with_usage(TokenUsage::new(20, 1, 21).with_cache_write(16)),
        ]),
    );
    let agent = Agent::builder(model)
        .name("calculator")
        .settings(
            ModelSettings::new()
                .with_temperature(0.2)
                .with_max_tokens(300),
        )
        .tool(Add)
        .build()
        .unwrap();
    let (spans, result) = run_traced(&agent);
    result.unwrap();
    let names: Vec<&str> = spans.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["invoke_agent", "chat", "execute_tool", "chat"]);
    let [agent_span, chat, tool, last_chat] = &spans[..] else {
        panic!("{spans:?}")
    };

    for (key, value) in [
        ("otel.name", "invoke_agent calculator"),
        ("otel.kind", "internal"),
        ("gen_ai.operation.name", "invoke_agent"),
        ("gen_ai.agent.name", "calculator"),
        ("gen_ai.provider.name", "gcp.gemini"),
        ("gen_ai.request.model", "gemini-2.5-flash"),
    ] {
        assert_eq!(field(agent_span, key).as_deref(), Some(value), "{key}");
    }
    for (key, value) in [
        ("otel.name", "chat gemini-2.5-flash"),
        ("otel.kind", "client"),
        ("gen_ai.operation.name", "chat"),
        ("gen_ai.provider.name", "gcp.gemini"),
        ("gen_ai.request.model", "gemini-2.5-flash"),
        ("gen_ai.request.temperature", "0.2"),
        ("gen_ai.request.max_tokens", "300"),
        ("gen_ai.response.id", "resp-1"),
        ("gen_ai.response.model", "gemini-2.5-flash-001"),
        ("gen_ai.response.finish_reasons", r#"["stop"]"#),
        ("gen_ai.usage.input_tokens", "12"),
        ("gen_ai.usage.output_tokens", "3"),
        ("gen_ai.usage.cache_read.input_tokens", "7"),
        ("gen_ai.usage.reasoning.output_tokens", "2"),
    ] {
        assert_eq!(field(chat, key).as_deref(), Some(value), "{key}");
    }
    // A part the vendor did not report is not recorded as 0.
    assert_eq!(
        field(chat, "gen_ai.usage.cache_creation.input_tokens"),
        None
    );
    assert_eq!(
        field(last_chat, "gen_ai.usage.cache_creation.input_tokens").as_deref(),
        Some("16")
    );
    assert_eq!(
        field(last_chat, "gen_ai.usage.cache_read.input_tokens"),
        None
    );
    assert_eq!(
        field(last_chat, "gen_ai.usage.reasoning.output_tokens"),
        None
    );
    assert_eq!(field(chat, "error.type"), None);
    assert_eq!(field(chat, "otel.status_code"), None);
    assert_eq!(
        field(last_chat, "gen_ai.response.finish_reasons").as_deref(),
        Some(r#"["length"]"#)
    );
    assert_eq!(
        field(last_chat, "gen_ai.response.id"),
        None,
        "no id was sent"
    );
    for (key, value) in [
        ("otel.name", "execute_tool add"),
        ("gen_ai.operation.name", "execute_tool"),
        ("gen_ai.tool.name", "add"),
        ("gen_ai.tool.type", "function"),
        ("gen_ai.tool.call.id", "call-1"),
    ] {
        assert_eq!(field(tool, key).as_deref(), Some(value), "{key}");
    }
    assert_eq!(field(tool, "error.type"), None);
}

#[test]
fn failures_are_recorded_on_their_spans() {
    let model = Named(
        "openai",
        "gpt-4o-mini",
        ScriptedModel::new([CompletionResponse::from_tool_calls(vec![
            ToolCall::new("flaky", json!({})).with_id("c"),
        ])])
        .then_fail(
            ProviderError::new("openai", "slow down")
                .with_status(429)
                .into(),
        ),
    );
    let agent = Agent::builder(model).tool(Flaky).build().unwrap();
    let (spans, result) = run_traced(&agent);
    assert_eq!(result.unwrap_err().status(), Some(429));
    let names: Vec<&str> = spans.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["invoke_agent", "chat", "execute_tool", "chat"]);
    assert_eq!(
        field(&spans[0], "gen_ai.provider.name").as_deref(),
        Some("openai")
    );
    assert_eq!(
        field(&spans[1], "otel.name").as_deref(),
        Some("chat gpt-4o-mini")
    );
    // The tool's failure went back to the model; its span says it failed.
    assert_eq!(field(&spans[2], "error.type").as_deref(), Some("failed"));
    assert_eq!(
        field(&spans[2], "otel.status_code").as_deref(),
        Some("error")
    );
    // The provider's 429 ended the call and the run.
    for span in [&spans[3], &spans[0]] {
        assert_eq!(field(span, "error.type").as_deref(), Some("429"));
        assert_eq!(field(span, "otel.status_code").as_deref(), Some("error"));
    }
}

#[test]
fn the_responses_api_is_named_as_its_service() {
    let model = Named(
        "openai-responses",
        "gpt-5",
        ScriptedModel::new([CompletionResponse::text("hi")]),
    );
    let agent = Agent::builder(model).build().unwrap();
    let (spans, result) = run_traced(&agent);
    result.unwrap();
    assert_eq!(spans.len(), 2, "{spans:?}");
    for span in &spans {
        assert_eq!(
            field(span, "gen_ai.provider.name").as_deref(),
            Some("openai")
        );
    }
}
