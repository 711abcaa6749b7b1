//! What a tool call and a schema list cost: `cargo bench -p deepharness-core`.
//!
//! Figures are recorded in docs/performance.md.

#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::unused_async,
    clippy::needless_pass_by_value
)]

use std::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use harness_core::{CallOptions, ParametersBuilder, Tool, Toolbox, tool};
use serde_json::json;

/// Add two integers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Add two integers, asynchronously.
#[tool]
async fn add_async(a: i64, b: i64) -> i64 {
    a + b
}

macro_rules! ten_tools {
    ($($name:ident => $ty:ident),*) => {$(
        /// A tool with a few typed parameters.
        ///
        /// * `query` - What to look for.
        /// * `limit` - At most this many.
        #[tool]
        fn $name(query: String, limit: Option<u32>, #[default(true)] exact: bool, tags: Vec<String>) -> String {
            format!("{query} {limit:?} {exact} {}", tags.len())
        }
    )*
        fn all_ten() -> Toolbox {
            Toolbox::builder()$(.tool($ty))*.build().expect("distinct names")
        }
    };
}

ten_tools!(t0 => T0, t1 => T1, t2 => T2, t3 => T3, t4 => T4, t5 => T5, t6 => T6, t7 => T7, t8 => T8, t9 => T9);

fn calls(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("a runtime");
    let tools = Toolbox::builder()
        .tool(Add)
        .tool(AddAsync)
        .build()
        .expect("tools");
    let arguments = json!({"a": 2, "b": 3});

    // Timed inside the runtime, as the agent loop calls tools: entering the runtime from the
    // benchmark thread is not part of a call's cost.
    for (label, name) in [
        ("Toolbox::call, trivial sync tool (blocking pool)", "add"),
        ("Toolbox::call, trivial async tool", "add_async"),
    ] {
        c.bench_function(label, |b| {
            b.iter_custom(|iterations| {
                runtime.block_on(async {
                    let started = Instant::now();
                    for _ in 0..iterations {
                        black_box(
                            tools
                                .call(black_box(name), arguments.clone(), CallOptions::new())
                                .await
                                .unwrap(),
                        );
                    }
                    started.elapsed()
                })
            });
        });
    }
}

fn schemas(c: &mut Criterion) {
    let tools = all_ten();
    c.bench_function("ToolSpec::to_schema for 10 tools (the list rebuilt)", |b| {
        b.iter(|| {
            black_box(
                tools
                    .specs()
                    .iter()
                    .map(|spec| spec.to_schema())
                    .collect::<Vec<_>>(),
            )
        });
    });
    c.bench_function("Toolbox::specs, 10 tools (borrowed)", |b| {
        b.iter(|| black_box(tools.specs()).len());
    });
    c.bench_function("Tool::spec, cached after first use", |b| {
        b.iter(|| black_box(T0.spec()).name.len());
    });
    c.bench_function(
        "ParametersBuilder, one 4-parameter schema from scratch",
        |b| {
            b.iter(|| {
                let mut params = ParametersBuilder::new();
                params
                    .param::<String>("query", Some("What to look for."), true)
                    .param::<u32>("limit", Some("At most this many."), false)
                    .param_with_default::<bool>("exact", None, &true)
                    .param::<Vec<String>>("tags", None, true);
                black_box(params.build())
            });
        },
    );
}

criterion_group!(benches, calls, schemas);
criterion_main!(benches);
