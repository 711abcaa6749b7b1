//! `Graph` and `Executor`: typed state run through the topology in concurrent waves.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::future::join_all;

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

type NodeFuture<S> = Pin<Box<dyn Future<Output = Result<S, NodeError>> + Send>>;
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
    ) -> Result<&mut Self, GraphError> {
        let node = Arc::new(node);
        self.add_async(name, place, move |state| {
            let node = Arc::clone(&node);
            async move {
                tokio::task::spawn_blocking(move || node(state))
                    .await
                    .map_err(|e| Box::new(e) as NodeError)
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
    ) -> Result<&mut Self, GraphError>
    where
        F: Fn(S) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<S, E>> + Send + 'static,
        E: Into<NodeError>,
    {
        self.topology.add(name, place.start, place.end)?;
        self.nodes.push(Arc::new(move |state| {
            let run = node(state);
            Box::pin(async move { run.await.map_err(Into::into) })
        }));
        Ok(self)
    }

    /// An unconditional edge.
    ///
    /// # Errors
    /// [`GraphError::Configuration`] naming an unknown node.
    pub fn connect(&mut self, source: &str, target: &str) -> Result<&mut Self, GraphError> {
        self.edge(source, target, None, false)
    }

    /// An edge taken when `when` (a named predicate: the diagram prints the name) holds on
    /// the merged state after the wave.
    ///
    /// # Errors
    /// [`GraphError::Configuration`] naming an unknown node.
    pub fn connect_when(
        &mut self,
        source: &str,
        target: &str,
        name: &str,
        when: impl Fn(&S) -> bool + Send + Sync + 'static,
    ) -> Result<&mut Self, GraphError> {
        self.edge(
            source,
            target,
            Some((Condition::Named(name.to_owned()), Arc::new(when))),
            false,
        )
    }

    /// A back-edge: taking it re-runs `target` and everything downstream of it; with `when`,
    /// only while it holds.
    ///
    /// # Errors
    /// [`GraphError::Configuration`] naming an unknown node.
    pub fn connect_loop(
        &mut self,
        source: &str,
        target: &str,
        when: Option<(&str, Predicate<S>)>,
    ) -> Result<&mut Self, GraphError> {
        let condition = when.map(|(name, p)| (Condition::Named(name.to_owned()), p));
        self.edge(source, target, condition, true)
    }

    fn edge(
        &mut self,
        source: &str,
        target: &str,
        condition: Option<(Condition, Predicate<S>)>,
        is_loop: bool,
    ) -> Result<&mut Self, GraphError> {
        let (label, predicate) = match condition {
            Some((label, predicate)) => (Some(label), Some(predicate)),
            None => (None, None),
        };
        self.topology.connect(source, target, label, is_loop)?;
        self.conditions.push(predicate);
        Ok(self)
    }

    /// Checks the graph and hands back its executor.
    ///
    /// # Errors
    /// [`GraphError::Configuration`]: no start node, an unreachable node, a cycle whose
    /// back-edge is not declared as a loop.
    pub fn build(self) -> Result<Executor<S>, GraphError> {
        self.topology.validate()?;
        Ok(Executor {
            topology: self.topology,
            nodes: self.nodes,
            conditions: self.conditions,
        })
    }
}

/// Runs a built graph. Cloning the state in, it never mutates the caller's.
pub struct Executor<S: GraphState> {
    topology: Topology,
    nodes: Vec<NodeFn<S>>,
    conditions: Vec<Option<Predicate<S>>>,
}

impl<S: GraphState> Executor<S> {
    /// The graph drawn as text.
    pub fn diagram(&self) -> String {
        self.topology.diagram()
    }

    /// The graph's shape.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// Runs from `state`, wave by wave, at most `max_steps` waves: a graph that needs N
    /// waves finishes with `max_steps = N`.
    ///
    /// # Errors
    /// [`GraphError::Execution`] naming a failing node, [`GraphError::ConcurrentUpdate`],
    /// [`GraphError::StepLimitExceeded`] carrying the state reached.
    pub async fn run(&self, state: S, max_steps: usize) -> Result<S, GraphError> {
        let nodes = self.topology.nodes();
        let count = nodes.len();
        let predecessors = self.topology.predecessors();
        let loops = self.topology.loops();
        // The predicate of each forward edge, aligned with `predecessors`.
        let edge_predicate = |source: usize, target: usize, nth: usize| -> Option<&Predicate<S>> {
            self.topology
                .edges()
                .iter()
                .zip(&self.conditions)
                .filter(|(e, _)| !e.is_loop && e.source == source && e.target == target)
                .nth(nth)
                .and_then(|(_, p)| p.as_ref())
        };
        let mut state = state;
        let mut finished = vec![false; count];
        let mut ready: Vec<usize> = (0..count).filter(|&n| nodes[n].start).collect();
        for _ in 0..max_steps {
            if ready.is_empty() {
                return Ok(state);
            }
            let snapshot = state.clone();
            let runs = ready.iter().map(|&n| (self.nodes[n])(snapshot.clone()));
            let results = join_all(runs).await;
            let mut branches = Vec::with_capacity(results.len());
            for (&n, result) in ready.iter().zip(results) {
                branches.push(result.map_err(|source| GraphError::Execution {
                    node: nodes[n].name.clone(),
                    source,
                })?);
            }
            state = S::merge(&snapshot, &branches)?;
            for &n in &ready {
                finished[n] = true;
            }
            // Loop edges whose source ran this wave and whose condition holds re-open their body.
            let mut reentered = Vec::new();
            for (i, lp) in loops.iter().enumerate() {
                if !ready.contains(&lp.source) {
                    continue;
                }
                let predicate = self
                    .topology
                    .edges()
                    .iter()
                    .zip(&self.conditions)
                    .filter(|(e, _)| e.is_loop)
                    .nth(i)
                    .and_then(|(_, p)| p.as_ref());
                if predicate.is_none_or(|p| p(&state)) {
                    for &b in &lp.body {
                        finished[b] = false;
                    }
                    if !reentered.contains(&lp.target) {
                        reentered.push(lp.target);
                    }
                }
            }
            // The next wave: nodes whose predecessors are all finished; a node none of whose
            // edges is taken is skipped, which lets joins downstream go on.
            let mut next = Vec::new();
            for n in 0..count {
                if finished[n] || predecessors[n].is_empty() {
                    continue;
                }
                if predecessors[n].iter().any(|(p, _)| !finished[*p]) {
                    continue;
                }
                let mut seen: Vec<usize> = Vec::new();
                let taken = predecessors[n].iter().any(|(p, condition)| {
                    let nth = seen.iter().filter(|&&s| s == *p).count();
                    seen.push(*p);
                    condition.is_none()
                        || edge_predicate(*p, n, nth).is_none_or(|pred| pred(&state))
                });
                if taken {
                    next.push(n);
                } else {
                    finished[n] = true;
                }
            }
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
