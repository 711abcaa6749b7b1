//! The error type of harness-graph.

/// Everything that can go wrong in harness-graph.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GraphError {
    /// The graph was built the wrong way: the message names the problem and the fix.
    #[error("{0}")]
    Configuration(String),
}

impl From<GraphError> for harness_core::Error {
    fn from(error: GraphError) -> Self {
        match error {
            GraphError::Configuration(message) => Self::Configuration(message),
        }
    }
}
