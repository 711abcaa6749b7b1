//! The errors harness-tools makes: [`harness_core::Error`]s of kind
//! [`Workspace`](harness_core::ErrorKind::Workspace) (a path outside the root),
//! [`Io`](harness_core::ErrorKind::Io) and
//! [`Configuration`](harness_core::ErrorKind::Configuration); inside a tool call, the
//! [`ToolError`](harness_core::ToolError) the model reads.

use std::io;
use std::path::Path;

use harness_core::{Error, ErrorKind};

/// A path that lands outside the workspace root.
pub(crate) fn outside(path: &str, root: &Path) -> Error {
    Error::new(
        ErrorKind::Workspace,
        format!(
            "path {path:?} is outside the workspace root {}",
            root.display()
        ),
    )
}

/// A file operation on `path` (as the model gave it) that failed.
pub(crate) fn io(path: &str, source: io::Error) -> Error {
    Error::new(ErrorKind::Io, format!("{path}: {source}")).with_source(source)
}
