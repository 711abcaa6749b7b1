//! The error type of harness-tools.

use std::path::PathBuf;

/// Everything that can go wrong in harness-tools.
///
/// Raised inside a tool call, it reaches the model as that call's result (its message is the
/// text the model reads), so the model can correct itself.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A path lands outside the workspace root: through `..`, an absolute path elsewhere, or
    /// a symlink pointing out. Raised before any read or write happens.
    #[error("path {path:?} is outside the workspace root {}", .root.display())]
    OutsideWorkspace {
        /// The path as it was given.
        path: String,
        /// The workspace root.
        root: PathBuf,
    },

    /// Something was set up the wrong way: the message says what and how to fix it.
    #[error("{0}")]
    Configuration(String),

    /// A file operation failed (not found, a symlink loop, permissions).
    #[error("{path}: {source}")]
    Io {
        /// The path as the model sees it.
        path: String,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },

    /// A tool refused what it was asked, saying why (an ambiguous edit, say).
    #[error("{0}")]
    Refused(String),
}

impl Error {
    /// True for [`Error::OutsideWorkspace`].
    pub fn is_outside_workspace(&self) -> bool {
        matches!(self, Self::OutsideWorkspace { .. })
    }
}

/// Outside a tool call: kind [`Configuration`](harness_core::ErrorKind::Configuration) for a
/// setup mistake, [`Workspace`](harness_core::ErrorKind::Workspace) for the rest; the source
/// is this error, reached with [`harness_core::Error::downcast_ref`].
impl From<Error> for harness_core::Error {
    fn from(error: Error) -> Self {
        let kind = match error {
            Error::Configuration(_) => harness_core::ErrorKind::Configuration,
            _ => harness_core::ErrorKind::Workspace,
        };
        Self::from_source(kind, error)
    }
}

/// Inside a tool call: a failure the model reads; arguments that do not fit for
/// [`Error::Configuration`] (a tool's own setup mistakes surface when it is built, so one at
/// call time comes from the arguments).
impl From<Error> for harness_core::ToolError {
    fn from(error: Error) -> Self {
        let message = error.to_string();
        match error {
            Error::Configuration(_) => Self::invalid_arguments(message),
            _ => Self::failed(message),
        }
        .with_source(error)
    }
}

/// A shorthand for `Result<T, harness_tools::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;
