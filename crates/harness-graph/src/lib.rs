//! Graphs for [deepharness](https://docs.rs/deepharness): fixed-shape workflows of named
//! nodes and edges.
//!
//! A [`Graph`] is built from named nodes (each a function of a typed state) and edges
//! (plain, conditional, or a declared loop back-edge); `build()` checks its shape and gives an
//! [`Executor`], which runs a state through it in concurrent waves and draws it as text with
//! [`Executor::diagram`].
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
    DEFAULT_MAX_STEPS, Executor, Graph, GraphEvent, GraphState, GraphUpdate, NodeFuture, NodeId,
    NodeJournal, NodeRef, Place,
};
pub use harness_macros::GraphState;
use topology::Topology;

#[cfg(test)]
mod tests;

impl Topology {
    /// The graph drawn as text: layers top to bottom by wave, `═` for start and end nodes,
    /// `▽` for a conditional edge (`▼` otherwise), loop edges routed up the right margin,
    /// or listed as not drawn when no margin is clear. Returns the text rather than printing
    /// it; an empty graph is `""`.
    pub(crate) fn diagram(&self) -> String {
        diagram::draw(self)
    }
}
