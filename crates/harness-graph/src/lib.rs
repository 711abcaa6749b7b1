//! Graphs for [deepharness](https://docs.rs/deepharness): fixed-shape workflows of named
//! nodes and edges.
//!
//! This crate holds the graph's shape, [`Topology`]: nodes in registration order, edges in
//! `connect` order (conditional or not, forward or a declared loop back-edge), the checks
//! `build()` makes, and [`Topology::diagram`], which draws the graph as text. The executor
//! that runs a typed state through it in concurrent waves is built on this shape.
//!
//! ```
//! use harness_graph::Topology;
//!
//! let mut graph = Topology::new();
//! graph.add("fetch_sales", true, false)?;
//! graph.add("fetch_churn", true, false)?;
//! graph.add("summarize", false, true)?;
//! graph.connect("fetch_sales", "summarize", None, false)?;
//! graph.connect("fetch_churn", "summarize", None, false)?;
//! graph.validate()?;
//! assert_eq!(graph.diagram().lines().next(), Some("╭═════════════╮   ╭═════════════╮"));
//! # Ok::<(), harness_graph::GraphError>(())
//! ```
#![cfg_attr(not(doctest), doc = include_str!("../GUIDE-graphs.md"))]

// Lets `#[derive(GraphState)]` name `::harness_graph` inside this crate's own tests.
extern crate self as harness_graph;

mod diagram;
mod error;
mod graph;
pub mod reducers;
mod topology;

pub use error::{GraphError, NodeError};
pub use graph::{
    DEFAULT_MAX_STEPS, Executor, Graph, GraphEvent, GraphState, GraphUpdate, NodeId, NodeRef, Place,
};
pub use harness_macros::GraphState;
pub use topology::{Condition, EdgeInfo, LoopInfo, NodeInfo, Topology};

impl Topology {
    /// The graph drawn as text: layers top to bottom by wave, `═` for start and end nodes,
    /// `▽` for a conditional edge (`▼` otherwise), loop edges routed up the right margin,
    /// or listed as not drawn when no margin is clear. Returns the text rather than printing
    /// it; an empty graph is `""`.
    pub fn diagram(&self) -> String {
        diagram::draw(self)
    }
}
