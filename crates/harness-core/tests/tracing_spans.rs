//! A run is traced with OpenTelemetry GenAI names: one span for the run, one per model call
//! with its usage, one per tool call.

#![allow(missing_docs, clippy::unwrap_used)]

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use harness_core::agent::Agent;
use harness_core::testing::ScriptedModel;
use harness_core::{CompletionResponse, TokenUsage, ToolCall, tool};
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

#[test]
fn spans_use_the_genai_names() {
    let capture = std::sync::Arc::new(Capture::default());
    let agent = Agent::builder(ScriptedModel::new([
        CompletionResponse::from_tool_calls(vec![
            ToolCall::new("add", json!({"a": 1, "b": 2})).with_id("1"),
        ])
        .with_usage(TokenUsage::new(12, 3, 15)),
        CompletionResponse::text("3"),
    ]))
    .name("calculator")
    .tool(Add)
    .build()
    .unwrap();
    tracing::subscriber::with_default(capture.clone(), || agent.run_blocking("1 + 2?").unwrap());
    let spans = capture.spans.lock().unwrap().clone();
    let field = |span: &Span, name: &str| {
        span.1
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let names: Vec<&str> = spans.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["invoke_agent", "chat", "execute_tool", "chat"]);
    assert_eq!(
        field(&spans[0], "gen_ai.operation.name").as_deref(),
        Some("invoke_agent")
    );
    assert_eq!(
        field(&spans[0], "gen_ai.agent.name").as_deref(),
        Some("calculator")
    );
    assert_eq!(
        field(&spans[1], "gen_ai.request.model").as_deref(),
        Some("scripted")
    );
    assert_eq!(
        field(&spans[1], "gen_ai.usage.input_tokens").as_deref(),
        Some("12")
    );
    assert_eq!(
        field(&spans[1], "gen_ai.usage.output_tokens").as_deref(),
        Some("3")
    );
    assert_eq!(field(&spans[2], "gen_ai.tool.name").as_deref(), Some("add"));
}
