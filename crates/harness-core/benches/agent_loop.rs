//! The agent loop's own overhead, with a zero-latency in-process model:
//! `cargo bench -p deepharness-core --bench agent_loop`. Figures in docs/performance.md.

#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::unused_async
)]

use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use harness_core::agent::Agent;
use harness_core::{CompletionResponse, Llm, Result, TokenUsage, ToolCall, async_trait, tool};
use serde_json::json;

/// Answers at once: a tool call on odd calls when `with_tool` is set, text otherwise.
struct Instant0 {
    with_tool: bool,
    calls: AtomicUsize,
    text: CompletionResponse,
    tool_turn: CompletionResponse,
}

impl Instant0 {
    fn new(with_tool: bool, tool: &str) -> Self {
        Self {
            with_tool,
            calls: AtomicUsize::new(0),
            text: CompletionResponse::text("The answer is 5.")
                .with_usage(TokenUsage::new(20, 5, 25)),
            tool_turn: CompletionResponse::from_tool_calls(vec![
                ToolCall::new(tool, json!({"a": 2, "b": 3})).with_id("call_1"),
            ])
            .with_usage(TokenUsage::new(20, 5, 25)),
        }
    }
}

#[async_trait]
impl Llm for Instant0 {
    async fn generate(&self, _: harness_core::Request<'_>) -> Result<CompletionResponse> {
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        Ok(if self.with_tool && n.is_multiple_of(2) {
            self.tool_turn.clone()
        } else {
            self.text.clone()
        })
    }
}

/// Add two integers.
#[tool]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Add two integers, synchronously (on the blocking pool).
#[tool]
fn add_sync(a: i64, b: i64) -> i64 {
    a + b
}

fn agent(with_tool: bool, tool: &str) -> Agent {
    Agent::builder(Instant0::new(with_tool, tool))
        .system("You are a calculator.")
        .tool(Add)
        .tool(AddSync)
        .build()
        .expect("an agent")
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("a runtime");
    let cases = [
        ("agent run: one text-only turn", agent(false, "add")),
        (
            "agent run: a turn with one async tool call, then a text turn",
            agent(true, "add"),
        ),
        (
            "agent run: a turn with one sync tool call, then a text turn",
            agent(true, "add_sync"),
        ),
    ];
    for (label, agent) in cases {
        c.bench_function(label, |b| {
            b.iter_custom(|iterations| {
                runtime.block_on(async {
                    let started = Instant::now();
                    for _ in 0..iterations {
                        black_box(agent.run(black_box("What is 2 + 3?")).await.unwrap());
                    }
                    started.elapsed()
                })
            });
        });
    }
    let streaming = agent(true, "add");
    c.bench_function("agent stream: tool turn then text turn", |b| {
        b.iter_custom(|iterations| {
            runtime.block_on(async {
                use futures_util::StreamExt as _;
                let started = Instant::now();
                for _ in 0..iterations {
                    let mut events = streaming.stream("What is 2 + 3?");
                    while let Some(event) = events.next().await {
                        black_box(event.unwrap());
                    }
                }
                started.elapsed()
            })
        });
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
