//! The errors harness-graph makes: [`harness_core::Error`]s of kind
//! [`Graph`](harness_core::ErrorKind::Graph) (a node failed, branches conflicted) or
//! [`Configuration`](harness_core::ErrorKind::Configuration) (a graph built wrong).

use harness_core::{Error, ErrorKind};

/// The source error of a failing node: whatever it returned, boxed.
pub type NodeError = Box<dyn std::error::Error + Send + Sync>;

/// Node `node` failed with `source`, kept as the error's source.
pub(crate) fn node_failed(node: &str, source: NodeError) -> Error {
    Error::new(ErrorKind::Graph, format!("Node '{node}' failed: {source}")).with_source(source)
}

/// Several concurrent branches of one wave wrote different values to `field`, which declares
/// no reducer.
pub fn concurrent_update(field: &str, writers: usize) -> Error {
    Error::new(
        ErrorKind::Graph,
        format!(
            "{writers} concurrent branches wrote '{field}' and it declares no reducer; add \
             #[reducer(...)] to the field or give each branch its own field"
        ),
    )
}
