//! The error type of harness-graph.

/// The source error of a failing node.
pub type NodeError = Box<dyn std::error::Error + Send + Sync>;

/// Everything that can go wrong in harness-graph.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GraphError {
    /// The graph was built the wrong way: the message names the problem and the fix.
    #[error("{0}")]
    Configuration(String),

    /// Several concurrent branches wrote different values to a field that declares no
    /// reducer.
    #[error(
        "{writers} concurrent branches wrote '{field}' and it declares no reducer; add \
         #[reducer(...)] to the field or give each branch its own field"
    )]
    ConcurrentUpdate {
        /// The field.
        field: String,
        /// How many branches wrote a new value to it.
        writers: usize,
    },

    /// A node failed.
    #[error("Node '{node}' failed: {source}")]
    Execution {
        /// The node's name.
        node: String,
        /// What it raised.
        #[source]
        source: NodeError,
    },

    /// The graph ran its `max_steps` waves without finishing.
    #[error(
        "Graph exceeded its limit of {limit} steps; raise max_steps or check the loop conditions"
    )]
    StepLimitExceeded {
        /// The limit.
        limit: usize,
        /// The state after the last wave; read it with [`GraphError::partial_state`].
        state: Box<dyn std::any::Any + Send + Sync>,
    },
}

impl GraphError {
    /// The state a run had reached, for [`GraphError::StepLimitExceeded`].
    pub fn partial_state<S: 'static>(&self) -> Option<&S> {
        match self {
            Self::StepLimitExceeded { state, .. } => state.downcast_ref::<S>(),
            _ => None,
        }
    }
}

/// Kind [`Graph`](harness_core::ErrorKind::Graph)
/// ([`Configuration`](harness_core::ErrorKind::Configuration) for a graph built wrong); the source
/// is this error, reached with [`harness_core::Error::downcast_ref`].
impl From<GraphError> for harness_core::Error {
    fn from(error: GraphError) -> Self {
        let kind = match error {
            GraphError::Configuration(_) => harness_core::ErrorKind::Configuration,
            _ => harness_core::ErrorKind::Graph,
        };
        Self::from_source(kind, error)
    }
}
