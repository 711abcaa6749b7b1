//! The executor on every rule of spec §2.2-§2.3 (with its off-by-one and value-equality
//! quirks fixed), and agents as nodes.

#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::panic,
    clippy::needless_pass_by_value
)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use harness_core::{Error, ErrorKind};
use harness_graph::GraphEvent::{NodeFinished, NodeStarted, WaveStarted};
use harness_graph::{Graph, GraphInput, GraphState, GraphStopReason, GraphUpdate, Place};

#[derive(Debug, Clone, Default, PartialEq, GraphState)]
struct Report {
    sales: Option<u32>,
    churn: Option<u32>,
    summary: String,
    #[reducer(concat)]
    log: Vec<String>,
    #[reducer(merge_maps)]
    tags: BTreeMap<String, String>,
}

#[tokio::test]
async fn two_slow_branches_run_concurrently_and_join() {
    let mut g = Graph::<Report>::new();
    g.add_async("fetch_sales", Place::START, |mut s: Report| async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        s.sales = Some(120);
        s.log.push("sales".into());
        Ok::<_, Error>(s)
    })
    .unwrap();
    g.add("fetch_churn", Place::START, |mut s: Report| {
        std::thread::sleep(Duration::from_millis(300));
        s.churn = Some(7);
        s.log.push("churn".into());
        s
    })
    .unwrap();
    g.add("summarize", Place::END, |mut s: Report| {
        s.summary = format!(
            "{} sales, {} churned",
            s.sales.unwrap_or(0),
            s.churn.unwrap_or(0)
        );
        s
    })
    .unwrap();
    g.connect("fetch_sales", "summarize");
    g.connect("fetch_churn", "summarize");
    let graph = g.build().unwrap();
    let started = Instant::now();
    let input = Report::default();
    let out = graph.run(input.clone()).await.unwrap();
    let took = started.elapsed();
    assert_eq!(out.stop_reason, GraphStopReason::Done);
    let out = out.state;
    assert!(
        took < Duration::from_millis(550),
        "the branches ran one after the other: {took:?}"
    );
    assert_eq!(out.summary, "120 sales, 7 churned");
    assert_eq!(
        out.log,
        ["sales", "churn"],
        "concat keeps both branches' additions, in ready order"
    );
    assert_eq!(input, Report::default(), "the caller's state is untouched");
    assert!(
        graph
            .diagram()
            .starts_with("╭═════════════╮   ╭═════════════╮")
    );
}

#[tokio::test]
async fn several_writers_without_a_reducer_is_an_error_naming_the_field_but_equal_writes_agree() {
    let mut g = Graph::<Report>::new();
    g.add("a", Place::START, |mut s: Report| {
        s.summary = "a".into();
        s.tags.insert("a".into(), "1".into());
        s
    })
    .unwrap();
    g.add("b", Place::START, |mut s: Report| {
        s.summary = "b".into();
        s.tags.insert("b".into(), "2".into());
        s
    })
    .unwrap();
    let err = g
        .build()
        .unwrap()
        .run(GraphInput::new(Report::default()).with_max_steps(5))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Graph);
    assert_eq!(
        err.to_string(),
        "2 concurrent branches wrote 'summary' and it declares no reducer; add #[reducer(...)] to the field or give each branch its own field"
    );

    let mut g = Graph::<Report>::new();
    for name in ["a", "b"] {
        g.add(name, Place::START, |mut s: Report| {
            s.summary = "same".into();
            s.tags.insert(format!("k{}", s.log.len()), "v".into());
            s
        })
        .unwrap();
    }
    let out = g
        .build()
        .unwrap()
        .run(GraphInput::new(Report::default()).with_max_steps(5))
        .await
        .unwrap()
        .state;
    assert_eq!(out.summary, "same");

    // A reducer sees every writer, equal or not: both branches' identical appends are kept.
    let mut g = Graph::<Report>::new();
    for name in ["a", "b"] {
        g.add(name, Place::START, |mut s: Report| {
            s.log.push("done".into());
            s
        })
        .unwrap();
    }
    let out = g
        .build()
        .unwrap()
        .run(Report::default())
        .await
        .unwrap()
        .state;
    assert_eq!(out.log, ["done", "done"]);
}

#[tokio::test]
async fn a_failing_node_is_an_execution_error_naming_it() {
    let mut g = Graph::<Report>::new();
    g.add_async("flaky", Place::START, |_s: Report| async move {
        Err::<Report, _>(std::io::Error::other("disk on fire"))
    })
    .unwrap();
    // A sibling that never finishes: the failure must end the wave without awaiting it.
    g.add_async("forever", Place::START, |s: Report| async move {
        std::future::pending::<()>().await;
        Ok::<_, Error>(s)
    })
    .unwrap();
    let graph = g.build().unwrap();
    let run = graph.run(GraphInput::new(Report::default()).with_max_steps(5));
    let err = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the failure ends the run; the pending sibling is dropped, not awaited")
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Graph);
    assert_eq!(err.to_string(), "Node 'flaky' failed: disk on fire");
    let source = err
        .downcast_ref::<std::io::Error>()
        .expect("the node's own error is the source");
    assert_eq!(source.to_string(), "disk on fire");
}

#[derive(Debug, Clone, Default, PartialEq, GraphState)]
struct Counter {
    round: u32,
    #[reducer(concat)]
    seen: Vec<String>,
}

#[tokio::test]
async fn a_loop_reruns_its_body_and_a_skipped_conditional_node_is_reconsidered() {
    let mut g = Graph::<Counter>::new();
    g.add("tick", Place::START, |mut s: Counter| {
        s.round += 1;
        s.seen.push(format!("tick{}", s.round));
        s
    })
    .unwrap();
    g.add("odd_only", Place::MIDDLE, |mut s: Counter| {
        s.seen.push(format!("odd{}", s.round));
        s
    })
    .unwrap();
    g.add("after", Place::END, |mut s: Counter| {
        s.seen.push(format!("after{}", s.round));
        s
    })
    .unwrap();
    g.connect("tick", "odd_only")
        .when("is_odd", |s: &Counter| s.round % 2 == 1);
    g.connect("tick", "after");
    g.connect("after", "tick")
        .loop_back()
        .when("more", |s: &Counter| s.round < 3);
    let graph = g.build().unwrap();
    let out = graph.run(Counter::default()).await.unwrap();
    assert_eq!(out.stop_reason, GraphStopReason::Done);
    let out = out.state;
    assert_eq!(
        out.seen,
        [
            "tick1", "odd1", "after1", "tick2", "after2", "tick3", "odd3", "after3"
        ],
        "odd_only runs on rounds 1 and 3 only; the join `after` goes on when it is skipped"
    );
    assert!(graph.diagram().contains("↺ after → tick when more"));
}

#[tokio::test]
async fn n_waves_fit_in_max_steps_n_and_one_less_reports_the_state_reached() {
    let chain = || {
        let mut g = Graph::<Counter>::new();
        for (i, name) in ["one", "two", "three"].into_iter().enumerate() {
            let place = if i == 0 { Place::START } else { Place::MIDDLE };
            g.add(name, place, |mut s: Counter| {
                s.round += 1;
                s
            })
            .unwrap();
        }
        g.connect("one", "two");
        g.connect("two", "three");
        g.build().unwrap()
    };
    let out = chain()
        .run(GraphInput::new(Counter::default()).with_max_steps(3))
        .await
        .unwrap();
    assert_eq!(out.stop_reason, GraphStopReason::Done);
    assert_eq!(out.state.round, 3);
    // One wave short: the run stops at the limit, Ok, with the state it reached.
    let out = chain()
        .run(GraphInput::new(Counter::default()).with_max_steps(2))
        .await
        .unwrap();
    assert_eq!(out.stop_reason, GraphStopReason::StepLimit);
    assert_eq!(out.state.round, 2);
}

#[tokio::test]
async fn an_unconditional_self_loop_runs_until_the_step_limit() {
    let mut g = Graph::<Counter>::new();
    let step = g
        .add_async("step", Place::START, |mut s: Counter| async move {
            s.round += 1;
            Ok::<_, Error>(s)
        })
        .unwrap();
    g.connect(step, step).loop_back();
    let graph = g.build().unwrap();
    assert!(
        graph.diagram().contains("↺ step → step"),
        "{}",
        graph.diagram()
    );
    let out = graph
        .run(GraphInput::new(Counter::default()).with_max_steps(5))
        .await
        .unwrap();
    assert_eq!(out.stop_reason, GraphStopReason::StepLimit);
    assert_eq!(out.state.round, 5);
}

#[tokio::test]
async fn build_refuses_an_undeclared_cycle() {
    let mut g = Graph::<Counter>::new();
    g.add("a", Place::START, |s| s).unwrap();
    g.add("b", Place::MIDDLE, |s| s).unwrap();
    g.connect("a", "b");
    g.connect("b", "a");
    let err = g.build().err().unwrap();
    assert_eq!(err.kind(), ErrorKind::Configuration);
    assert!(
        err.to_string().starts_with("Graph contains a cycle"),
        "{err}"
    );
}

#[derive(Debug, Clone, Default, PartialEq, GraphState)]
struct Research {
    #[reducer(merge_maps)]
    answers: BTreeMap<String, String>,
}

#[tokio::test]
async fn agents_as_nodes_run_in_parallel_branches() {
    use harness_core::agent::Agent;
    use harness_core::testing::TestModel;
    fn agent_node(
        topic: &'static str,
    ) -> impl Fn(
        Research,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Research, harness_core::Error>> + Send>,
    > + Send
    + Sync {
        move |mut s: Research| {
            Box::pin(async move {
                let agent =
                    Agent::builder(TestModel::new().with_text(format!("all about {topic}")))
                        .build()?;
                let state = agent.run(format!("Tell me about {topic}")).await?;
                s.answers
                    .insert(topic.to_owned(), state.output_text().to_owned());
                Ok(s)
            })
        }
    }
    let mut g = Graph::<Research>::new();
    g.add_async("rust", Place::START, agent_node("rust"))
        .unwrap();
    g.add_async("tokio", Place::START, agent_node("tokio"))
        .unwrap();
    let out = g
        .build()
        .unwrap()
        .run(Research::default())
        .await
        .unwrap()
        .state;
    assert_eq!(
        out.answers.get("rust").map(String::as_str),
        Some("all about rust")
    );
    assert_eq!(
        out.answers.get("tokio").map(String::as_str),
        Some("all about tokio")
    );
}

#[test]
fn the_built_in_reducers() {
    use harness_graph::reducers::{concat, merge_maps};
    let base = vec![1, 2];
    assert_eq!(
        concat(&base, vec![vec![1, 2, 3], vec![1, 2, 4], vec![9]]),
        [1, 2, 3, 4, 9]
    );
    let mut a = BTreeMap::new();
    a.insert("k", 1);
    let mut b = BTreeMap::new();
    b.insert("k", 2);
    b.insert("j", 3);
    let merged = merge_maps(&BTreeMap::new(), vec![a, b]);
    assert_eq!(merged.get("k"), Some(&2));
    assert_eq!(merged.len(), 2);
}

#[tokio::test]
async fn handles_connect_and_progress_is_reported() {
    let mut g = Graph::<Counter>::new();
    let first = g
        .add("first", Place::START, |mut s: Counter| {
            s.round += 1;
            s
        })
        .unwrap();
    let second = g
        .try_add("second", Place::END, |mut s: Counter| {
            s.round += 1;
            Ok::<_, std::io::Error>(s)
        })
        .unwrap();
    g.connect(first, second);
    let graph = g.build().unwrap();
    let mut seen = Vec::new();
    let mut finished = None;
    let mut updates = std::pin::pin!(graph.stream(Counter::default()));
    while let Some(update) = futures_util::StreamExt::next(&mut updates).await {
        match update.unwrap() {
            GraphUpdate::Progress(event) => seen.push(event),
            GraphUpdate::Finished(out) => finished = Some(out),
        }
    }
    let out = finished.expect("the stream ends with the run's output");
    assert_eq!(out.stop_reason, GraphStopReason::Done);
    assert_eq!(out.state.round, 2);
    assert_eq!(
        seen,
        vec![
            WaveStarted {
                wave: 1,
                nodes: vec!["first".into()]
            },
            NodeStarted {
                node: "first".into()
            },
            NodeFinished {
                node: "first".into(),
                failed: false
            },
            WaveStarted {
                wave: 2,
                nodes: vec!["second".into()]
            },
            NodeStarted {
                node: "second".into()
            },
            NodeFinished {
                node: "second".into(),
                failed: false
            },
        ]
    );
}

#[tokio::test]
async fn the_run_as_a_stream_ends_with_the_final_state() {
    use futures_util::StreamExt as _;
    let mut g = Graph::<Counter>::new();
    g.add("only", Place::START, |mut s: Counter| {
        s.round = 7;
        s
    })
    .unwrap();
    let graph = g.build().unwrap();
    let updates: Vec<_> = graph
        .stream(Counter::default())
        .map(Result::unwrap)
        .collect()
        .await;
    assert_eq!(updates.len(), 4);
    assert_eq!(
        updates[0],
        GraphUpdate::Progress(WaveStarted {
            wave: 1,
            nodes: vec!["only".into()]
        })
    );
    assert!(matches!(
        updates.last(),
        Some(GraphUpdate::Finished(out))
            if out.state.round == 7 && out.stop_reason == GraphStopReason::Done
    ));
}

#[tokio::test]
async fn an_unnamed_condition_gates_its_edge_and_is_drawn_as_conditional() {
    let mut g = Graph::<Counter>::new();
    let a = g
        .add("a", Place::START, |mut s: Counter| {
            s.round = 2;
            s
        })
        .unwrap();
    let b = g
        .add("b", Place::END, |mut s: Counter| {
            s.seen.push("b".into());
            s
        })
        .unwrap();
    g.connect(a, b).when("", |s: &Counter| s.round > 5);
    let graph = g.build().unwrap();
    assert!(graph.diagram().ends_with("  ▽ conditional edge"));
    let out = graph.run(Counter::default()).await.unwrap().state;
    assert!(
        out.seen.is_empty(),
        "the edge was not taken, so b was skipped"
    );
}

#[tokio::test]
async fn an_edge_naming_an_unknown_node_is_reported_by_build() {
    let mut g = Graph::<Counter>::new();
    g.add("a", Place::START, |s| s).unwrap();
    g.connect("a", "nowhere").when("never", |_: &Counter| false);
    g.connect("elsewhere", "a").loop_back();
    let err = g.build().err().unwrap();
    assert_eq!(err.kind(), ErrorKind::Configuration);
    assert_eq!(
        err.to_string(),
        "Unknown node: nowhere; registered nodes: a",
        "the first bad edge is the one reported"
    );
}
