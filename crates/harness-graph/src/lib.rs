//! Graphs for [deepharness](https://docs.rs/deepharness): fixed-shape workflows of named
//! nodes and edges.
//!
//! A [`Graph`] is built from named nodes (each a function of a typed state) and edges
//! ([`Graph::connect`], then `.when(..)` for a condition, `.loop_back()` for a declared loop
//! back-edge); `build()` checks its shape and gives an [`Executor`], which runs a state
//! through it in concurrent waves ([`Executor::run`], [`Executor::stream`]) and draws it as
//! text with [`Executor::diagram`]. Every failure is a [`harness_core::Error`].
#![cfg_attr(not(doctest), doc = include_str!("../GUIDE-graphs.md"))]

// Lets `#[derive(GraphState)]` name `::harness_graph` inside this crate's own tests.
extern crate self as harness_graph;

mod diagram;
mod error;
mod graph;
pub mod reducers;
mod topology;

pub use error::NodeError;
pub use graph::{
    DEFAULT_MAX_STEPS, Edge, Executor, Graph, GraphEvent, GraphInput, GraphOutput, GraphState,
    GraphStopReason, GraphUpdate, NodeFuture, NodeId, NodeJournal, NodeRef, Place,
};

#[doc(hidden)]
pub mod __private {
    //! What `#[derive(GraphState)]` expands to. Not a public API: names here may change in
    //! any release.
    pub use crate::error::concurrent_update;
    pub use harness_core::Error;
}
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
