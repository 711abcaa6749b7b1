//! The graph's stream delivers every item: a wave of 5,000 nodes reports 10,001 progress
//! events at once, and every one arrives before `Finished`, on the current-thread and the
//! multi-thread runtime. Before the fix the stream ended silently after tokio's cooperative
//! budget of 128 items.

#![allow(missing_docs, clippy::unwrap_used, clippy::panic)]

use futures_util::StreamExt as _;
use harness_graph::{Graph, GraphEvent, GraphState, GraphStopReason, GraphUpdate, Place};

#[derive(Debug, Clone, Default, PartialEq, GraphState)]
struct Tally {
    #[reducer(concat)]
    seen: Vec<u32>,
}

const NODES: u32 = 5_000;

#[test]
fn a_wave_of_five_thousand_nodes_streams_every_event() {
    let mut g = Graph::<Tally>::new();
    for n in 0..NODES {
        g.add_async(
            &format!("n{n}"),
            Place::START,
            move |mut s: Tally| async move {
                s.seen.push(n);
                Ok::<_, harness_core::Error>(s)
            },
        )
        .unwrap();
    }
    let graph = g.build().unwrap();
    for runtime in [
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap(),
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap(),
    ] {
        let updates: Vec<GraphUpdate<Tally>> = runtime.block_on(async {
            graph
                .stream(Tally::default())
                .map(|u| u.unwrap())
                .collect()
                .await
        });
        let progress = updates
            .iter()
            .filter(|u| matches!(u, GraphUpdate::Progress(_)))
            .count();
        // One WaveStarted, then a NodeStarted and a NodeFinished per node.
        assert_eq!(progress, 1 + 2 * NODES as usize);
        let finished = updates
            .iter()
            .filter(|u| {
                matches!(
                    u,
                    GraphUpdate::Progress(GraphEvent::NodeFinished { failed: false, .. })
                )
            })
            .count();
        assert_eq!(finished, NODES as usize);
        let Some(GraphUpdate::Finished(out)) = updates.last() else {
            panic!("the stream must end with Finished");
        };
        assert_eq!(out.stop_reason, GraphStopReason::Done);
        assert_eq!(out.state.seen.len(), NODES as usize);
    }
}
