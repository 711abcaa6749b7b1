//! `Graph` and `Executor`: typed state run through the topology in concurrent waves.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures_core::Stream;
use futures_util::future::try_join_all;

use harness_core::channel::channel_stream;

use crate::error::{GraphError, NodeError};
use crate::topology::{Condition, Topology};

/// A graph's state: a struct whose concurrent writes are merged field by field. Derive it
/// with `#[derive(GraphState)]`.
pub trait GraphState: Clone + Send + Sync + 'static {
    /// Merges the branches' results of one wave into the snapshot they all started from.
    ///
    /// # Errors
    /// [`GraphError::ConcurrentUpdate`] for a field several branches changed differently
    /// and that declares no reducer.
    fn merge(snapshot: &Self, branches: &[Self]) -> Result<Self, GraphError>;
}

/// The wave limit of [`Executor::run`].
pub const DEFAULT_MAX_STEPS: usize = 50;

/// A node's run, not started yet, as a [`NodeJournal`] gets it.
pub type NodeFuture<S> = Pin<Box<dyn Future<Output = Result<S, NodeError>> + Send>>;

/// Runs a graph's nodes: every node of [`Executor::run_journaled`] goes through it.
///
/// An implementation records each node's result (the state the node returned) and, when the
/// run is replayed after a crash, returns the recorded one instead of running the node
/// again. `harness-durable` implements it on Restate.
#[harness_core::async_trait]
pub trait NodeJournal<S>: Send + Sync {
    /// Runs (or replays) node `node` of wave `wave` (1 for the first).
    async fn node(&self, wave: usize, node: &str, run: NodeFuture<S>) -> Result<S, NodeError>;
}
type NodeFn<S> = Arc<dyn Fn(S) -> NodeFuture<S> + Send + Sync>;
type Predicate<S> = Arc<dyn Fn(&S) -> bool + Send + Sync>;

/// Where a node stands: whether it starts or ends the graph.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Place {
    /// Runs in the first wave.
    pub start: bool,
    /// Ends the graph (drawn with a double rule; execution does not consult it).
    pub end: bool,
}

impl Place {
    /// A start node.
    pub const START: Self = Self {
        start: true,
        end: false,
    };
    /// An end node.
    pub const END: Self = Self {
        start: false,
        end: true,
    };
    /// Neither.
    pub const MIDDLE: Self = Self {
        start: false,
        end: false,
    };
}

/// A node handle returned by [`Graph::add`]: connecting by handle makes a typo a compile
/// error; names work too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NodeId(usize);

/// A node named for [`Graph::connect`]: a [`NodeId`] or a name.
#[derive(Debug, Clone, Copy)]
pub enum NodeRef<'a> {
    /// By handle.
    Id(NodeId),
    /// By name.
    Name(&'a str),
}

impl From<NodeId> for NodeRef<'_> {
    fn from(id: NodeId) -> Self {
        Self::Id(id)
    }
}

impl<'a> From<&'a str> for NodeRef<'a> {
    fn from(name: &'a str) -> Self {
        Self::Name(name)
    }
}

/// What a graph run reports as it goes, from [`Executor::run_events`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GraphEvent {
    /// A wave starts with these nodes (1-based wave number).
    WaveStarted {
        /// Which wave.
        wave: usize,
        /// The nodes it runs, in ready order.
        nodes: Vec<String>,
    },
    /// A node started.
    NodeStarted {
        /// The node's name.
        node: String,
    },
    /// A node finished (`failed` when it raised).
    NodeFinished {
        /// The node's name.
        node: String,
        /// Whether it failed.
        failed: bool,
    },
}

/// An item of [`Executor::stream`].
#[derive(Debug, Clone, PartialEq)]
pub enum GraphUpdate<S> {
    /// Something happened.
    Progress(GraphEvent),
    /// The run is over; the final state. Always last.
    Finished(S),
}

/// Builds a graph over state `S`: nodes, then edges, then [`Graph::build`].
pub struct Graph<S: GraphState> {
    topology: Topology,
    nodes: Vec<NodeFn<S>>,
    conditions: Vec<Option<Predicate<S>>>,
}

impl<S: GraphState> Default for Graph<S> {
    fn default() -> Self {
        Self {
            topology: Topology::new(),
            nodes: Vec::new(),
            conditions: Vec::new(),
        }
    }
}

impl<S: GraphState> Graph<S> {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a plain `fn` node; it runs on tokio's blocking pool so it never stalls the others
    /// of its wave.
    ///
    /// # Errors
    /// [`GraphError::Configuration`] for a name already taken.
    pub fn add(
        &mut self,
        name: &str,
        place: Place,
        node: impl Fn(S) -> S + Send + Sync + 'static,
    ) -> Result<NodeId, GraphError> {
        self.try_add(name, place, move |state| Ok::<S, NodeError>(node(state)))
    }

    /// Adds a plain `fn` node that may fail; it runs on tokio's blocking pool.
    ///
    /// # Errors
    /// [`GraphError::Configuration`] for a name already taken.
    pub fn try_add<E: Into<NodeError>>(
        &mut self,
        name: &str,
        place: Place,
        node: impl Fn(S) -> Result<S, E> + Send + Sync + 'static,
    ) -> Result<NodeId, GraphError> {
        let node = Arc::new(node);
        self.add_async(name, place, move |state| {
            let node = Arc::clone(&node);
            async move {
                match tokio::task::spawn_blocking(move || node(state).map_err(Into::into)).await {
                    Ok(result) => result,
                    Err(e) => Err(Box::new(e) as NodeError),
                }
            }
        })
    }

    /// Adds an async node that may fail.
    ///
    /// # Errors
    /// [`GraphError::Configuration`] for a name already taken.
    pub fn add_async<F, Fut, E>(
        &mut self,
        name: &str,
        place: Place,
        node: F,
    ) -> Result<NodeId, GraphError>
    where
        F: Fn(S) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<S, E>> + Send + 'static,
        E: Into<NodeError>,
    {
        let at = self.topology.add(name, place.start, place.end)?;
        self.nodes.push(Arc::new(move |state| {
            let run = node(state);
            Box::pin(async move { run.await.map_err(Into::into) })
        }));
        Ok(NodeId(at))
    }

    /// An unconditional edge.
    ///
    /// # Errors
    /// [`GraphError::Configuration`] naming an unknown node.
    pub fn connect<'a>(
        &mut self,
        source: impl Into<NodeRef<'a>>,
        target: impl Into<NodeRef<'a>>,
    ) -> Result<&mut Self, GraphError> {
        self.edge(source, target, None, false)
    }

    /// An edge taken when `when` holds on the merged state after the wave. `name` is kept in
    /// the graph's shape; the diagram draws a forward conditional edge with `▽` and a legend
    /// (only a loop edge's note prints the name, as the original's diagram does).
    ///
    /// # Errors
    /// [`GraphError::Configuration`] naming an unknown node.
    pub fn connect_when<'a>(
        &mut self,
        source: impl Into<NodeRef<'a>>,
        target: impl Into<NodeRef<'a>>,
        name: &str,
        when: impl Fn(&S) -> bool + Send + Sync + 'static,
    ) -> Result<&mut Self, GraphError> {
        self.edge(source, target, Some(named(name, when)), false)
    }

    /// An edge taken when an unnamed predicate holds (the diagram marks it conditional
    /// without a name; prefer [`Graph::connect_when`] for a readable picture).
    ///
    /// # Errors
    /// [`GraphError::Configuration`] naming an unknown node.
    pub fn connect_if<'a>(
        &mut self,
        source: impl Into<NodeRef<'a>>,
        target: impl Into<NodeRef<'a>>,
        when: impl Fn(&S) -> bool + Send + Sync + 'static,
    ) -> Result<&mut Self, GraphError> {
        self.edge(
            source,
            target,
            Some((Condition::Anonymous, Arc::new(when))),
            false,
        )
    }

    /// A back-edge taken every time `source` runs: it re-runs `target` and everything
    /// downstream of it. Only a graph whose nodes stop it some other way (or the step limit)
    /// ends; most loops want [`Graph::connect_loop_when`].
    ///
    /// # Errors
    /// [`GraphError::Configuration`] naming an unknown node.
    pub fn connect_loop<'a>(
        &mut self,
        source: impl Into<NodeRef<'a>>,
        target: impl Into<NodeRef<'a>>,
    ) -> Result<&mut Self, GraphError> {
        self.edge(source, target, None, true)
    }

    /// A back-edge taken while `when` (a named predicate: the diagram prints the name) holds
    /// on the merged state after `source` runs: it re-runs `target` and everything downstream
    /// of it.
    ///
    /// # Errors
    /// [`GraphError::Configuration`] naming an unknown node.
    pub fn connect_loop_when<'a>(
        &mut self,
        source: impl Into<NodeRef<'a>>,
        target: impl Into<NodeRef<'a>>,
        name: &str,
        when: impl Fn(&S) -> bool + Send + Sync + 'static,
    ) -> Result<&mut Self, GraphError> {
        self.edge(source, target, Some(named(name, when)), true)
    }

    fn edge<'a>(
        &mut self,
        source: impl Into<NodeRef<'a>>,
        target: impl Into<NodeRef<'a>>,
        condition: Option<(Condition, Predicate<S>)>,
        is_loop: bool,
    ) -> Result<&mut Self, GraphError> {
        let (label, predicate) = match condition {
            Some((label, predicate)) => (Some(label), Some(predicate)),
            None => (None, None),
        };
        let source = self.name_of(source.into())?;
        let target = self.name_of(target.into())?;
        self.topology.connect(&source, &target, label, is_loop)?;
        self.conditions.push(predicate);
        Ok(self)
    }

    fn name_of(&self, node: NodeRef<'_>) -> Result<String, GraphError> {
        match node {
            NodeRef::Name(name) => Ok(name.to_owned()),
            NodeRef::Id(NodeId(at)) => self
                .topology
                .nodes()
                .get(at)
                .map(|n| n.name.clone())
                .ok_or_else(|| GraphError::Configuration("a NodeId from another graph".to_owned())),
        }
    }

    /// Checks the graph and hands back its executor.
    ///
    /// # Errors
    /// [`GraphError::Configuration`]: no start node, an unreachable node, a cycle whose
    /// back-edge is not declared as a loop.
    pub fn build(self) -> Result<Executor<S>, GraphError> {
        self.topology.validate()?;
        let predicate = |at: usize| self.conditions.get(at).cloned().flatten();
        let edges = self.topology.edges();
        let mut predecessors = vec![Vec::new(); self.topology.nodes().len()];
        for at in self.topology.edges_by_source(false) {
            predecessors[edges[at].target].push((edges[at].source, predicate(at)));
        }
        let loops = self
            .topology
            .edges_by_source(true)
            .into_iter()
            .zip(self.topology.loops())
            .map(|(at, info)| LoopEdge {
                source: info.source,
                target: info.target,
                predicate: predicate(at),
                body: info.body,
            })
            .collect();
        Ok(Executor {
            predecessors,
            loops,
            topology: self.topology,
            nodes: self.nodes,
        })
    }
}

/// A predicate with the name the diagram prints for it.
fn named<S>(
    name: &str,
    when: impl Fn(&S) -> bool + Send + Sync + 'static,
) -> (Condition, Predicate<S>) {
    (Condition::Named(name.to_owned()), Arc::new(when))
}

/// Runs a built graph. Cloning the state in, it never mutates the caller's.
pub struct Executor<S: GraphState> {
    topology: Topology,
    nodes: Vec<NodeFn<S>>,
    /// Each node's forward predecessors with their edges' predicates, in the order the
    /// original walks them; worked out once here so a run does no graph searches.
    predecessors: Vec<Vec<(usize, Option<Predicate<S>>)>>,
    /// The loop edges in the original's order, each with its predicate and body.
    loops: Vec<LoopEdge<S>>,
}

/// A loop edge ready to run: taking it re-opens `body` and schedules `target`.
struct LoopEdge<S> {
    source: usize,
    target: usize,
    predicate: Option<Predicate<S>>,
    body: Vec<usize>,
}

impl<S: GraphState> Executor<S> {
    /// The graph drawn as text.
    pub fn diagram(&self) -> String {
        self.topology.diagram()
    }

    /// Runs from `state`, at most 50 waves.
    ///
    /// # Errors
    /// As [`Executor::run_with_steps`].
    pub async fn run(&self, state: S) -> Result<S, GraphError> {
        self.drive(state, DEFAULT_MAX_STEPS, None, None).await
    }

    /// Runs from `S::default()`, at most 50 waves.
    ///
    /// # Errors
    /// As [`Executor::run_with_steps`].
    pub async fn run_default(&self) -> Result<S, GraphError>
    where
        S: Default,
    {
        self.run(S::default()).await
    }

    /// Runs from `state`, wave by wave, at most `max_steps` waves: a graph that needs N
    /// waves finishes with `max_steps = N`. Each wave's ready nodes run concurrently, each on
    /// its own copy of the wave's snapshot; their results merge field by field in ready
    /// order; conditions see the merged state.
    ///
    /// # Errors
    /// [`GraphError::Execution`] naming a failing node, [`GraphError::ConcurrentUpdate`],
    /// [`GraphError::StepLimitExceeded`] carrying the state reached.
    pub async fn run_with_steps(&self, state: S, max_steps: usize) -> Result<S, GraphError> {
        self.drive(state, max_steps, None, None).await
    }

    /// Runs from `state`, at most `max_steps` waves, with every node's run going through
    /// `journal`, which may record each node's result and hand it back on a replay instead
    /// of running the node again: how a durable engine (`harness-durable`, on Restate) runs
    /// a graph so a crashed run resumes in the wave it was in. The nodes of a wave run one
    /// at a time, in ready order, so the journal sees the same steps in the same order on
    /// every replay.
    ///
    /// # Errors
    /// As [`Executor::run_with_steps`]; a node whose journal step fails fails the run.
    pub async fn run_journaled(
        &self,
        state: S,
        max_steps: usize,
        journal: &dyn NodeJournal<S>,
    ) -> Result<S, GraphError> {
        self.drive(state, max_steps, None, Some(journal)).await
    }

    /// Runs from `state` (at most 50 waves) reporting progress as it goes; the run's result
    /// comes back with the events, when the run is over.
    pub async fn run_events(
        &self,
        state: S,
        watch: impl FnMut(GraphEvent) + Send,
    ) -> Result<S, GraphError> {
        // The executor reports from its own task (nodes never call it), so the lock is
        // never contended; it only turns the caller's `FnMut` into the `Fn` the run takes.
        let watch = std::sync::Mutex::new(watch);
        let send = |event: GraphEvent| {
            if let Ok(mut watch) = watch.lock() {
                watch(event);
            }
        };
        self.drive(state, DEFAULT_MAX_STEPS, Some(&send), None)
            .await
    }

    /// Runs from `state` (at most 50 waves) as a stream: [`GraphUpdate::Progress`] events
    /// as the run goes, then [`GraphUpdate::Finished`] with the final state, or an error as
    /// the last item.
    pub fn stream(
        &self,
        state: S,
    ) -> impl Stream<Item = Result<GraphUpdate<S>, GraphError>> + Send + '_ {
        channel_stream(move |sink| async move {
            let send = |event: GraphEvent| sink.emit(Ok(GraphUpdate::Progress(event)));
            let outcome = self
                .drive(state, DEFAULT_MAX_STEPS, Some(&send), None)
                .await;
            sink.emit(outcome.map(GraphUpdate::Finished));
        })
    }

    /// Loop edges whose source ran this wave and whose condition holds re-open their body;
    /// returns their heads, in loop order.
    fn reenter(&self, ran: &[usize], state: &S, finished: &mut [bool]) -> Vec<usize> {
        let mut reentered = Vec::new();
        for lp in &self.loops {
            if !ran.contains(&lp.source) {
                continue;
            }
            if lp.predicate.as_ref().is_none_or(|p| p(state)) {
                for &b in &lp.body {
                    finished[b] = false;
                }
                if !reentered.contains(&lp.target) {
                    reentered.push(lp.target);
                }
            }
        }
        reentered
    }

    /// The next wave: nodes whose forward predecessors are all finished and one of whose
    /// edges is taken; a node none of whose edges is taken is skipped (marked finished), which
    /// lets joins downstream go on.
    fn next_wave(&self, state: &S, finished: &mut [bool]) -> Vec<usize> {
        let mut next = Vec::new();
        for (n, predecessors) in self.predecessors.iter().enumerate() {
            if finished[n] || predecessors.is_empty() {
                continue;
            }
            if predecessors.iter().any(|(p, _)| !finished[*p]) {
                continue;
            }
            let taken = predecessors
                .iter()
                .any(|(_, predicate)| predicate.as_ref().is_none_or(|p| p(state)));
            if taken {
                next.push(n);
            } else {
                finished[n] = true;
            }
        }
        next
    }

    async fn drive(
        &self,
        state: S,
        max_steps: usize,
        // None when nobody watches: the events (and their name copies) are not built.
        watcher: Option<&(dyn Fn(GraphEvent) + Send + Sync)>,
        journal: Option<&dyn NodeJournal<S>>,
    ) -> Result<S, GraphError> {
        let nodes = self.topology.nodes();
        let count = nodes.len();
        let mut state = state;
        let mut finished = vec![false; count];
        let mut ready: Vec<usize> = (0..count).filter(|&n| nodes[n].start).collect();
        for wave in 1..=max_steps {
            if ready.is_empty() {
                return Ok(state);
            }
            if let Some(watch) = watcher {
                watch(GraphEvent::WaveStarted {
                    wave,
                    nodes: ready.iter().map(|&n| nodes[n].name.clone()).collect(),
                });
            }
            let snapshot = state.clone();
            let runs = ready.iter().map(|&n| {
                let name = &nodes[n].name;
                if let Some(watch) = watcher {
                    watch(GraphEvent::NodeStarted { node: name.clone() });
                }
                let span = tracing::info_span!("graph_node", "graph.node.name" = %name, "graph.wave" = wave);
                let run: NodeFuture<S> = Box::pin(tracing::Instrument::instrument(
                    (self.nodes[n])(snapshot.clone()),
                    span,
                ));
                async move {
                    let result = match journal {
                        Some(journal) => journal.node(wave, name, run).await,
                        None => run.await,
                    };
                    if let Some(watch) = watcher {
                        watch(GraphEvent::NodeFinished {
                            node: name.clone(),
                            failed: result.is_err(),
                        });
                    }
                    result.map_err(|source| GraphError::Execution {
                        node: name.clone(),
                        source,
                    })
                }
            });
            let branches = if journal.is_some() {
                // One at a time, in ready order: the journal sees the same steps in the same
                // order on a replay.
                let mut branches = Vec::with_capacity(ready.len());
                for run in runs {
                    branches.push(run.await?);
                }
                branches
            } else {
                // The first failure ends the wave: its siblings are dropped, not awaited.
                try_join_all(runs).await?
            };
            state = S::merge(&snapshot, &branches)?;
            for &n in &ready {
                finished[n] = true;
            }
            let reentered = self.reenter(&ready, &state, &mut finished);
            let mut next = self.next_wave(&state, &mut finished);
            for target in reentered {
                if !next.contains(&target) {
                    next.push(target);
                }
            }
            ready = next;
        }
        if ready.is_empty() {
            Ok(state)
        } else {
            Err(GraphError::StepLimitExceeded {
                limit: max_steps,
                state: Box::new(state),
            })
        }
    }
}
