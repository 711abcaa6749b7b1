//! The executor's own cost per node, with trivial nodes:
//! `cargo bench -p deepharness-graph --bench graph`, or `cargo xtask bench graph` to also run the
//! same two graphs on the Python original and print the ratio. Figures in
//! docs/performance.md.
//!
//! - fan-out/fan-in: `start` -> 1000 parallel nodes -> `join`, one run = 1002 node runs in
//!   three waves, every parallel node appending to a `concat` field;
//! - loop: one node with a loop edge back to itself, taken until its counter reaches 10,000,
//!   one run = 10,000 node runs in 10,000 waves.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use harness_graph::{Executor, Graph, GraphInput, GraphState, GraphStopReason, Place};

/// Parallel nodes in the fan-out/fan-in graph.
const WIDTH: usize = 1000;
/// Iterations of the loop graph.
const ITERATIONS: u64 = 10_000;

#[derive(Debug, Clone, Default, GraphState)]
struct FanState {
    #[reducer(concat)]
    hits: Vec<u32>,
    joined: usize,
}

#[derive(Debug, Clone, Default, GraphState)]
struct LoopState {
    count: u64,
}

fn fan_out_fan_in() -> Executor<FanState> {
    let mut g = Graph::<FanState>::new();
    let start = g
        .add_async("start", Place::START, |s| async move {
            Ok::<_, harness_core::Error>(s)
        })
        .unwrap();
    let join = g
        .add_async("join", Place::END, |mut s: FanState| async move {
            s.joined = s.hits.len();
            Ok::<_, harness_core::Error>(s)
        })
        .unwrap();
    for i in 0..WIDTH {
        let hit = u32::try_from(i).unwrap();
        let node = g
            .add_async(
                &format!("branch_{i}"),
                Place::MIDDLE,
                move |mut s: FanState| async move {
                    s.hits.push(hit);
                    Ok::<_, harness_core::Error>(s)
                },
            )
            .unwrap();
        g.connect(start, node);
        g.connect(node, join);
    }
    g.build().unwrap()
}

fn counting_loop() -> Executor<LoopState> {
    let mut g = Graph::<LoopState>::new();
    let step = g
        .add_async(
            "step",
            Place {
                start: true,
                end: true,
            },
            |mut s: LoopState| async move {
                s.count += 1;
                Ok::<_, harness_core::Error>(s)
            },
        )
        .unwrap();
    g.connect(step, step)
        .loop_back()
        .when("below_limit", |s: &LoopState| s.count < ITERATIONS);
    g.build().unwrap()
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("a runtime");
    let fan = fan_out_fan_in();
    let checked = runtime.block_on(fan.run(FanState::default())).unwrap();
    assert_eq!(checked.stop_reason, GraphStopReason::Done);
    assert_eq!(checked.state.joined, WIDTH);
    let mut group = c.benchmark_group("graph");
    group.sample_size(20);
    group.bench_function("fan_out_fan_in_1000", |b| {
        b.iter_custom(|iterations| {
            runtime.block_on(async {
                let started = Instant::now();
                for _ in 0..iterations {
                    black_box(fan.run(FanState::default()).await.unwrap());
                }
                started.elapsed()
            })
        });
    });
    let looping = counting_loop();
    let steps = usize::try_from(ITERATIONS).unwrap();
    let checked = runtime
        .block_on(looping.run(GraphInput::new(LoopState::default()).with_max_steps(steps)))
        .unwrap();
    assert_eq!(checked.stop_reason, GraphStopReason::Done);
    assert_eq!(checked.state.count, ITERATIONS);
    group.bench_function("loop_10000", |b| {
        b.iter_custom(|iterations| {
            runtime.block_on(async {
                let started = Instant::now();
                for _ in 0..iterations {
                    black_box(
                        looping
                            .run(GraphInput::new(LoopState::default()).with_max_steps(steps))
                            .await
                            .unwrap(),
                    );
                }
                started.elapsed()
            })
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
