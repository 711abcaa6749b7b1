//! `Executor::run` with `GraphInput::with_journal`: every node goes through the journal, one at a time in ready
//! order, so a journal that hands back recorded results resumes a crashed graph in the wave
//! it was in without running a finished node again.

#![allow(missing_docs, clippy::unwrap_used, clippy::panic)]

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use harness_core::ErrorKind;
use harness_graph::{
    Graph, GraphInput, GraphState, GraphStopReason, NodeError, NodeFuture, NodeJournal, Place,
};

#[derive(Debug, Clone, Default, PartialEq, GraphState)]
struct Flow {
    #[reducer(concat)]
    visited: Vec<String>,
}

/// Replays `recorded` (wave, node, state) in order, then runs and records; fails the node
/// at position `crash_at`.
struct Recording {
    recorded: Mutex<Vec<(usize, String, Flow)>>,
    position: AtomicUsize,
    crash_at: Option<usize>,
}

#[harness_core::async_trait]
impl NodeJournal<Flow> for Recording {
    async fn node(
        &self,
        wave: usize,
        node: &str,
        run: NodeFuture<Flow>,
    ) -> Result<Flow, NodeError> {
        let at = self.position.fetch_add(1, Ordering::SeqCst);
        let recorded = self.recorded.lock().unwrap().get(at).cloned();
        if let Some((w, n, state)) = recorded {
            assert_eq!(
                (w, n.as_str()),
                (wave, node),
                "a replay takes the same steps"
            );
            return Ok(state);
        }
        if self.crash_at == Some(at) {
            return Err("the worker died".into());
        }
        let state = run.await?;
        self.recorded
            .lock()
            .unwrap()
            .push((wave, node.to_owned(), state.clone()));
        Ok(state)
    }
}

static RAN: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn graph() -> harness_graph::Executor<Flow> {
    let mut g = Graph::<Flow>::new();
    for (name, place) in [("a", Place::START), ("b", Place::START), ("c", Place::END)] {
        g.add_async(name, place, move |mut s: Flow| async move {
            RAN.lock().unwrap().push(name.to_owned());
            s.visited.push(name.to_owned());
            Ok::<_, harness_core::Error>(s)
        })
        .unwrap();
    }
    g.connect("a", "c");
    g.connect("b", "c");
    g.build().unwrap()
}

#[tokio::test]
async fn a_replayed_graph_resumes_in_its_wave_and_runs_no_finished_node_again() {
    let graph = graph();
    // The first attempt dies on `b`, in wave 1, after `a` finished.
    let first = Recording {
        recorded: Mutex::new(Vec::new()),
        position: AtomicUsize::new(0),
        crash_at: Some(1),
    };
    let error = graph
        .run(GraphInput::new(Flow::default()).with_journal(&first))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Graph);
    assert!(
        error
            .to_string()
            .contains("Node 'b' failed: the worker died"),
        "{error}"
    );
    assert_eq!(*RAN.lock().unwrap(), ["a"]);

    let retry = Recording {
        recorded: first.recorded,
        position: AtomicUsize::new(0),
        crash_at: None,
    };
    let out = graph
        .run(GraphInput::new(Flow::default()).with_journal(&retry))
        .await
        .unwrap();
    assert_eq!(out.stop_reason, GraphStopReason::Done);
    assert_eq!(
        out.state.visited,
        ["a", "b", "c"],
        "wave 1 merged in ready order, then c"
    );
    assert_eq!(*RAN.lock().unwrap(), ["a", "b", "c"], "a did not run again");
    let steps: Vec<(usize, String)> = retry
        .recorded
        .lock()
        .unwrap()
        .iter()
        .map(|(w, n, _)| (*w, n.clone()))
        .collect();
    assert_eq!(steps, [(1, "a".into()), (1, "b".into()), (2, "c".into())]);
}
