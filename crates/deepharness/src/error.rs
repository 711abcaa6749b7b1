//! `deepharness::Error`: every crate's error, in one type.

/// Any error deepharness raises.
///
/// Each crate of the workspace has its own error enum; this one wraps them all, so `?` works
/// across crates. The `is_*` predicates look through the wrapping.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An error of harness-core: configuration, tools, providers.
    #[error(transparent)]
    Core(#[from] harness_core::Error),

    /// An error of harness-tools: the workspace, the file and shell tools.
    #[cfg(feature = "tools")]
    #[error(transparent)]
    Tools(#[from] harness_tools::Error),

    /// An MCP server's failure: starting or reaching it, the protocol, or a call it reported
    /// as failed (inside an agent run that last one reaches the model instead).
    #[cfg(feature = "tools")]
    #[error(transparent)]
    Mcp(#[from] harness_tools::mcp::McpError),

    /// An error of harness-graph: building or running a graph.
    #[cfg(feature = "graph")]
    #[error(transparent)]
    Graph(#[from] harness_graph::GraphError),
}

impl Error {
    /// The harness-core error inside, if that is what this is.
    pub fn as_core(&self) -> Option<&harness_core::Error> {
        match self {
            Self::Core(e) => Some(e),
            #[cfg(feature = "tools")]
            Self::Tools(_) | Self::Mcp(_) => None,
            #[cfg(feature = "graph")]
            Self::Graph(_) => None,
        }
    }

    /// True for a path that lands outside a tool's workspace.
    pub fn is_outside_workspace(&self) -> bool {
        match self {
            #[cfg(feature = "tools")]
            Self::Tools(e) => e.is_outside_workspace(),
            _ => false,
        }
    }

    /// True for a configuration error: something built or used the wrong way.
    pub fn is_configuration(&self) -> bool {
        self.as_core()
            .is_some_and(harness_core::Error::is_configuration)
    }

    /// True for an unknown tool name.
    pub fn is_tool_not_found(&self) -> bool {
        self.as_core()
            .is_some_and(harness_core::Error::is_tool_not_found)
    }

    /// True for a call the approval callback refused.
    pub fn is_tool_denied(&self) -> bool {
        self.as_core()
            .is_some_and(harness_core::Error::is_tool_denied)
    }

    /// True for a model provider's failure.
    pub fn is_provider(&self) -> bool {
        self.as_core().is_some_and(harness_core::Error::is_provider)
    }

    /// True for a tool asking a human a question outside an agent run.
    pub fn is_human_input_required(&self) -> bool {
        self.as_core()
            .is_some_and(harness_core::Error::is_human_input_required)
    }

    /// The run so far, for an error that ended a run after it began (`RunFailed`), so
    /// nothing of the transcript is lost: run it again to continue.
    pub fn state(&self) -> Option<&harness_core::AgentState> {
        self.as_core().and_then(harness_core::Error::state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_errors_convert_and_keep_their_kind() {
        let err: Error = harness_core::Error::configuration("bad").into();
        assert!(err.is_configuration());
        assert!(!err.is_provider());
        assert_eq!(err.to_string(), "bad");
    }

    #[cfg(feature = "tools")]
    #[test]
    fn mcp_errors_convert_with_their_message() {
        let err: Error = harness_tools::mcp::McpError::new("server exited").into();
        assert!(matches!(err, Error::Mcp(_)));
        assert_eq!(err.to_string(), "server exited");
        assert!(!err.is_configuration());
    }
}
