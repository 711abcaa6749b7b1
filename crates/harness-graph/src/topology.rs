//! `Topology`: the nodes and edges of a graph, checked the way `build()` checks them.

use std::collections::HashMap;

use harness_core::Error;

/// How an edge is conditioned, as far as its shape is concerned.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Condition {
    /// A condition with a name (a named predicate): a loop edge's diagram note prints it.
    Named(String),
    /// A condition without a name (a closure).
    Anonymous,
}

/// One node: its name and whether it starts or ends the graph (`end` only styles the
/// diagram; execution never consults it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeInfo {
    /// The node's name.
    pub name: String,
    /// Whether the node runs in the first wave.
    pub start: bool,
    /// Whether the node ends the graph (drawn with a double rule).
    pub end: bool,
}

/// One edge, in `connect` order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EdgeInfo {
    /// The source's index in registration order.
    pub source: usize,
    /// The target's index in registration order.
    pub target: usize,
    /// The condition, if any.
    pub condition: Option<Condition>,
    /// Whether this is a declared back-edge.
    pub is_loop: bool,
}

/// A loop edge with its body: the target and everything reachable from it over forward
/// edges, re-run when the edge is taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LoopInfo {
    /// The loop edge's source.
    pub source: usize,
    /// The loop edge's target (the loop head).
    pub target: usize,
    /// The loop edge's condition.
    pub condition: Option<Condition>,
    /// The head and everything downstream of it, in registration order.
    pub body: Vec<usize>,
}

/// The shape of a graph: nodes in registration order and edges in `connect` order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Topology {
    nodes: Vec<NodeInfo>,
    edges: Vec<EdgeInfo>,
    index: HashMap<String, usize>,
}

impl Topology {
    /// An empty graph.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Registers a node.
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error for a name already taken.
    pub(crate) fn add(
        &mut self,
        name: impl Into<String>,
        start: bool,
        end: bool,
    ) -> Result<usize, Error> {
        let name = name.into();
        if self.index.contains_key(&name) {
            return Err(Error::configuration(format!(
                "Node already exists: {name}; give each node its own name"
            )));
        }
        let at = self.nodes.len();
        self.index.insert(name.clone(), at);
        self.nodes.push(NodeInfo { name, start, end });
        Ok(at)
    }

    /// Connects two registered nodes by name.
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error naming an unknown node (the source is checked first).
    pub(crate) fn connect(
        &mut self,
        source: &str,
        target: &str,
        condition: Option<Condition>,
        is_loop: bool,
    ) -> Result<(), Error> {
        let source = self.position(source)?;
        let target = self.position(target)?;
        self.edges.push(EdgeInfo {
            source,
            target,
            condition,
            is_loop,
        });
        Ok(())
    }

    /// The index of the node named `name`.
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error when none is.
    pub(crate) fn position(&self, name: &str) -> Result<usize, Error> {
        self.index.get(name).copied().ok_or_else(|| {
            let known: Vec<&str> = self.nodes.iter().map(|n| n.name.as_str()).collect();
            Error::configuration(format!(
                "Unknown node: {name}; registered nodes: {}",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            ))
        })
    }

    /// The nodes, in registration order.
    pub(crate) fn nodes(&self) -> &[NodeInfo] {
        &self.nodes
    }

    /// The edges, in `connect` order.
    pub(crate) fn edges(&self) -> &[EdgeInfo] {
        &self.edges
    }

    /// The edge at `at`, to set its condition or make it a loop while it is being built.
    pub(crate) fn edge_mut(&mut self, at: usize) -> Option<&mut EdgeInfo> {
        self.edges.get_mut(at)
    }

    /// Checks what `build()` checks, in its order: a start node exists; every node is a
    /// start node or has an incoming edge; the forward (non-loop) edges have no cycle.
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error saying what is wrong
    /// and how to fix it.
    pub(crate) fn validate(&self) -> Result<(), Error> {
        if !self.nodes.iter().any(|n| n.start) {
            return Err(Error::configuration(
                "Graph has no start node; register at least one node with start".to_owned(),
            ));
        }
        for (at, node) in self.nodes.iter().enumerate() {
            if !node.start && !self.edges.iter().any(|e| e.target == at) {
                return Err(Error::configuration(format!(
                    "Node '{}' is unreachable: no start flag and no incoming edges; connect it \
                     or mark it start",
                    node.name
                )));
            }
        }
        // Kahn's algorithm over forward edges.
        let mut incoming = vec![0_usize; self.nodes.len()];
        for edge in self.edges.iter().filter(|e| !e.is_loop) {
            incoming[edge.target] += 1;
        }
        let mut ready: Vec<usize> = (0..self.nodes.len())
            .filter(|&n| incoming[n] == 0)
            .collect();
        let mut seen = 0;
        while let Some(node) = ready.pop() {
            seen += 1;
            for edge in self.edges.iter().filter(|e| !e.is_loop && e.source == node) {
                incoming[edge.target] -= 1;
                if incoming[edge.target] == 0 {
                    ready.push(edge.target);
                }
            }
        }
        if seen < self.nodes.len() {
            return Err(Error::configuration(
                "Graph contains a cycle; declare the back-edge with connect(..).loop_back() if \
                 the iteration is intentional"
                    .to_owned(),
            ));
        }
        Ok(())
    }

    /// Each node's forward predecessors with their conditions: sources walked in
    /// registration order, each source's edges in `connect` order.
    pub(crate) fn predecessors(&self) -> Vec<Vec<(usize, Option<Condition>)>> {
        let mut predecessors = vec![Vec::new(); self.nodes.len()];
        for at in self.edges_by_source(false) {
            let edge = &self.edges[at];
            predecessors[edge.target].push((edge.source, edge.condition.clone()));
        }
        predecessors
    }

    /// Indices into `edges` of the forward (or loop) edges, sources in registration order,
    /// then `connect` order: the order the original walks them in.
    pub(crate) fn edges_by_source(&self, loops: bool) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.edges.len())
            .filter(|&at| self.edges[at].is_loop == loops)
            .collect();
        // Stable: edges of one source keep their `connect` order.
        order.sort_by_key(|&at| self.edges[at].source);
        order
    }

    /// The loop edges (sources in registration order, then `connect` order) with their
    /// bodies.
    pub(crate) fn loops(&self) -> Vec<LoopInfo> {
        self.edges_by_source(true)
            .into_iter()
            .map(|at| {
                let edge = &self.edges[at];
                LoopInfo {
                    source: edge.source,
                    target: edge.target,
                    condition: edge.condition.clone(),
                    body: self.downstream(edge.target),
                }
            })
            .collect()
    }

    /// `start` and everything reachable from it over forward edges, in registration order.
    fn downstream(&self, start: usize) -> Vec<usize> {
        let mut reached = vec![false; self.nodes.len()];
        let mut pending = vec![start];
        while let Some(node) = pending.pop() {
            if std::mem::replace(&mut reached[node], true) {
                continue;
            }
            pending.extend(
                self.edges
                    .iter()
                    .filter(|e| !e.is_loop && e.source == node)
                    .map(|e| e.target),
            );
        }
        (0..self.nodes.len()).filter(|&n| reached[n]).collect()
    }
}
