//! `Graph` and `Executor`: typed state run through the topology in concurrent waves.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures_core::Stream;
use futures_util::StreamExt as _;
use futures_util::future::try_join_all;

use harness_core::{Error, Result};

use crate::error::{NodeError, node_failed};
use crate::topology::{Condition, Topology};

/// A graph's state: a struct whose concurrent writes are merged field by field. Derive it
/// with `#[derive(GraphState)]`.
pub trait GraphState: Clone + Send + Sync + 'static {
    /// Merges the branches' results of one wave into the snapshot they all started from.
    ///
    /// # Errors
    /// A [`Graph`](harness_core::ErrorKind::Graph) error for a field several branches changed
    /// differently and that declares no reducer.
    fn merge(snapshot: &Self, branches: &[Self]) -> Result<Self>;
}

/// The wave limit of a run that sets none ([`GraphInput::with_max_steps`]).
pub const DEFAULT_MAX_STEPS: usize = 50;

/// A node's run, not started yet, as a [`NodeJournal`] gets it.
pub type NodeFuture<S> = Pin<Box<dyn Future<Output = Result<S, NodeError>> + Send>>;

/// Runs a graph's nodes: every node of a run given one ([`GraphInput::with_journal`]) goes
/// through it.
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

/// What a graph run reports as it goes, in [`Executor::stream`].
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
    /// The run is over: its state and why it stopped. Always last.
    Finished(GraphOutput<S>),
}

/// What a graph run starts from, and its options: the state (a state converts into one),
/// the wave limit, the [`NodeJournal`] its nodes go through.
///
/// ```
/// use harness_graph::{GraphInput, GraphState};
///
/// #[derive(Clone, Default, PartialEq, GraphState)]
/// struct Count { n: u32 }
///
/// let input = GraphInput::new(Count::default()).with_max_steps(10);
/// assert_eq!(input.max_steps(), 10);
/// ```
pub struct GraphInput<'a, S> {
    state: S,
    max_steps: usize,
    journal: Option<&'a dyn NodeJournal<S>>,
}

impl<'a, S> GraphInput<'a, S> {
    /// A run from `state`, at most [`DEFAULT_MAX_STEPS`] waves.
    pub fn new(state: S) -> Self {
        Self {
            state,
            max_steps: DEFAULT_MAX_STEPS,
            journal: None,
        }
    }

    /// At most `max_steps` waves: a graph that needs N waves finishes with `max_steps = N`;
    /// one still going at the limit stops with [`GraphStopReason::StepLimit`].
    #[must_use]
    pub fn with_max_steps(mut self, max_steps: usize) -> Self {
        self.max_steps = max_steps;
        self
    }

    /// Runs every node through `journal`, which may record each node's result and hand it
    /// back on a replay instead of running the node again: how a durable engine
    /// (`deepharness-durable`, on Restate) runs a graph so a crashed run resumes in the wave
    /// it was in. The nodes of a wave then run one at a time, in ready order, so the journal
    /// sees the same steps in the same order on every replay.
    #[must_use]
    pub fn with_journal(mut self, journal: &'a dyn NodeJournal<S>) -> Self {
        self.journal = Some(journal);
        self
    }

    /// The wave limit.
    pub fn max_steps(&self) -> usize {
        self.max_steps
    }
}

impl<S> From<S> for GraphInput<'_, S> {
    fn from(state: S) -> Self {
        Self::new(state)
    }
}

/// How a graph run ended: its state and why it stopped.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct GraphOutput<S> {
    /// The state after the last wave.
    pub state: S,
    /// Why the run stopped.
    pub stop_reason: GraphStopReason,
}

/// Why a graph run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GraphStopReason {
    /// No node was left to run.
    Done,
    /// The wave limit was reached with nodes still to run; the state is where the run got
    /// to. Raise the limit ([`GraphInput::with_max_steps`]) or check the loops' conditions.
    StepLimit,
}

/// Builds a graph over state `S`: nodes, then edges, then [`Graph::build`].
pub struct Graph<S: GraphState> {
    topology: Topology,
    nodes: Vec<NodeFn<S>>,
    conditions: Vec<Option<Predicate<S>>>,
    /// The first edge that named an unknown node, reported by `build`.
    error: Option<Error>,
}

impl<S: GraphState> Default for Graph<S> {
    fn default() -> Self {
        Self {
            topology: Topology::new(),
            nodes: Vec::new(),
            conditions: Vec::new(),
            error: None,
        }
    }
}

/// An edge being built by [`Graph::connect`]: unconditional and forward until told
/// otherwise.
pub struct Edge<'g, S: GraphState> {
    graph: &'g mut Graph<S>,
    /// The edge's place, `None` when `connect` named an unknown node.
    at: Option<usize>,
}

impl<S: GraphState> Edge<'_, S> {
    /// Takes the edge only when `when` holds on the merged state after the wave. `name` is
    /// kept in the graph's shape: the diagram draws a forward conditional edge with `▽` and a
    /// loop's note prints the name; an empty name leaves the condition unnamed.
    pub fn when(self, name: &str, when: impl Fn(&S) -> bool + Send + Sync + 'static) -> Self {
        if let Some(at) = self.at {
            let condition = if name.is_empty() {
                Condition::Anonymous
            } else {
                Condition::Named(name.to_owned())
            };
            if let Some(edge) = self.graph.topology.edge_mut(at) {
                edge.condition = Some(condition);
            }
            self.graph.conditions[at] = Some(Arc::new(when));
        }
        self
    }

    /// Makes the edge a declared loop (a back-edge): taken after its source runs, it
    /// re-runs its target and everything downstream of it. Without [`when`](Edge::when) it
    /// is taken every time, and only the wave limit or the nodes stop the graph.
    pub fn loop_back(self) -> Self {
        if let Some(edge) = self.at.and_then(|at| self.graph.topology.edge_mut(at)) {
            edge.is_loop = true;
        }
        self
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
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error for a name already
    /// taken.
    pub fn add(
        &mut self,
        name: &str,
        place: Place,
        node: impl Fn(S) -> S + Send + Sync + 'static,
    ) -> Result<NodeId> {
        self.try_add(name, place, move |state| Ok::<S, NodeError>(node(state)))
    }

    /// Adds a plain `fn` node that may fail; it runs on tokio's blocking pool.
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error for a name already
    /// taken.
    pub fn try_add<E: Into<NodeError>>(
        &mut self,
        name: &str,
        place: Place,
        node: impl Fn(S) -> Result<S, E> + Send + Sync + 'static,
    ) -> Result<NodeId> {
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
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error for a name already
    /// taken.
    pub fn add_async<F, Fut, E>(&mut self, name: &str, place: Place, node: F) -> Result<NodeId>
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

    /// An edge from `source` to `target` (each a [`NodeId`] or a name): unconditional until
    /// the returned [`Edge`] says otherwise (`.when(..)`, `.loop_back()`). A node that does
    /// not exist is reported by [`build`](Graph::build).
    ///
    /// ```
    /// use harness_graph::{Graph, GraphState, Place};
    ///
    /// #[derive(Clone, Default, PartialEq, GraphState)]
    /// struct Draft { text: String, rounds: u32, approved: bool }
    ///
    /// let mut graph = Graph::<Draft>::new();
    /// let write = graph.add("write", Place::START, |mut d: Draft| { d.rounds += 1; d })?;
    /// let review = graph.add("review", Place::MIDDLE, |mut d: Draft| { d.approved = d.rounds > 1; d })?;
    /// let publish = graph.add("publish", Place::END, |d: Draft| d)?;
    /// graph.connect(write, review);
    /// graph.connect(review, publish).when("approved", |d: &Draft| d.approved);
    /// graph.connect(review, write).loop_back().when("needs work", |d: &Draft| !d.approved);
    /// let executor = graph.build()?;
    /// # Ok::<(), harness_core::Error>(())
    /// ```
    pub fn connect<'a>(
        &mut self,
        source: impl Into<NodeRef<'a>>,
        target: impl Into<NodeRef<'a>>,
    ) -> Edge<'_, S> {
        let connected = self
            .name_of(source.into())
            .and_then(|source| Ok((source, self.name_of(target.into())?)))
            .and_then(|(source, target)| self.topology.connect(&source, &target, None, false));
        let at = match connected {
            Ok(()) => {
                self.conditions.push(None);
                Some(self.topology.edges().len() - 1)
            }
            Err(error) => {
                self.error.get_or_insert(error);
                None
            }
        };
        Edge { graph: self, at }
    }

    fn name_of(&self, node: NodeRef<'_>) -> Result<String> {
        match node {
            NodeRef::Name(name) => self.topology.position(name).map(|_| name.to_owned()),
            NodeRef::Id(NodeId(at)) => self
                .topology
                .nodes()
                .get(at)
                .map(|n| n.name.clone())
                .ok_or_else(|| Error::configuration("a NodeId from another graph")),
        }
    }

    /// Checks the graph and hands back its executor.
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error: an edge naming an
    /// unknown node (the first met), no start node, an unreachable node, a cycle whose
    /// back-edge is not declared as a loop.
    pub fn build(self) -> Result<Executor<S>> {
        if let Some(error) = self.error {
            return Err(error);
        }
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

    /// Runs from the input's state, wave by wave, at most its `max_steps` waves (50 unless
    /// set). Each wave's ready nodes run concurrently, each on its own copy of the wave's
    /// snapshot (one at a time, in ready order, under a journal); their results merge field
    /// by field in ready order; conditions see the merged state. The run ends `Ok` when no
    /// node is left to run, or at the wave limit ([`GraphStopReason::StepLimit`], with the
    /// state it reached). The caller's state is never mutated.
    ///
    /// # Errors
    /// A [`Graph`](harness_core::ErrorKind::Graph) error naming a failing node (its own error
    /// the source) or a field several branches wrote differently without a reducer.
    pub async fn run<'a>(&self, input: impl Into<GraphInput<'a, S>>) -> Result<GraphOutput<S>> {
        self.drive(input.into(), None).await
    }

    /// Runs as [`run`](Executor::run) does, as a stream: [`GraphUpdate::Progress`] events
    /// as the run goes, then [`GraphUpdate::Finished`] with its output, or an error as the
    /// last item. The run happens as the stream is polled; dropping it cancels the run.
    pub fn stream<'a>(
        &'a self,
        input: impl Into<GraphInput<'a, S>>,
    ) -> impl Stream<Item = Result<GraphUpdate<S>>> + Send + 'a {
        let input = input.into();
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
        let run = async move {
            let send = |event: GraphEvent| {
                let _ = sender.send(Ok(GraphUpdate::Progress(event)));
            };
            let outcome = self.drive(input, Some(&send)).await;
            let _ = sender.send(outcome.map(GraphUpdate::Finished));
        };
        // The run as a stream of nothing, polled beside the events it sends: the stream ends
        // once the run has finished (dropping the sender) and its last event is out.
        let driver = futures_util::stream::once(run).filter_map(|()| std::future::ready(None));
        let events = futures_util::stream::poll_fn(move |cx| receiver.poll_recv(cx));
        futures_util::stream::select(driver, events)
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
        input: GraphInput<'_, S>,
        // None when nobody watches: the events (and their name copies) are not built.
        watcher: Option<&(dyn Fn(GraphEvent) + Send + Sync)>,
    ) -> Result<GraphOutput<S>> {
        let GraphInput {
            state,
            max_steps,
            journal,
        } = input;
        let nodes = self.topology.nodes();
        let count = nodes.len();
        let mut state = state;
        let mut finished = vec![false; count];
        let mut ready: Vec<usize> = (0..count).filter(|&n| nodes[n].start).collect();
        for wave in 1..=max_steps {
            if ready.is_empty() {
                return Ok(GraphOutput {
                    state,
                    stop_reason: GraphStopReason::Done,
                });
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
                    result.map_err(|source| node_failed(name, source))
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
        let stop_reason = if ready.is_empty() {
            GraphStopReason::Done
        } else {
            GraphStopReason::StepLimit
        };
        Ok(GraphOutput { state, stop_reason })
    }
}
