//! Support for the code `#[tool]` writes. Not a public API: names here may change in any
//! release.

use std::cell::Cell;
use std::fmt::Display;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use crate::error::ToolError;
pub use crate::message::Content;
pub use crate::tool::{Ctx, ParametersBuilder, Tool, ToolSpec};

/// What a generated tool's code returns: a result the model reads, or a [`ToolError`].
pub type Result<T> = std::result::Result<T, ToolError>;
pub use async_trait::async_trait;
pub use serde;
pub use serde_json;

/// Reads the model's arguments into the tool's argument struct. A missing object (`null`)
/// counts as no arguments.
pub fn parse_args<T: DeserializeOwned>(tool: &str, arguments: Value) -> Result<T> {
    let arguments = match arguments {
        Value::Null => Value::Object(serde_json::Map::new()),
        other => other,
    };
    serde_json::from_value(arguments)
        .map_err(|e| ToolError::invalid_arguments(e.to_string()).for_tool(tool))
}

/// Runs a sync tool body on tokio's blocking pool, so a blocking tool never stalls the
/// others of its turn. Outside a tokio runtime it runs in place.
pub async fn run_blocking<F>(tool: &str, body: F) -> Result<String>
where
    F: FnOnce() -> Result<String> + Send + 'static,
{
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => match handle.spawn_blocking(body).await {
            Ok(result) => result,
            Err(join) => Err(match join.try_into_panic() {
                Ok(payload) => crate::tool::panicked(tool, payload.as_ref()),
                Err(_) => ToolError::failed("the tool was cancelled").for_tool(tool),
            }),
        },
        Err(_) => body(),
    }
}

/// Wraps a tool's return value so the most fitting rendering is picked at compile time
/// (autoref specialisation): `()` renders as nothing, a `Display` type as its text (so `3`
/// is `"3"` and a `String` is not quoted), any other `Serialize` type as JSON.
pub struct Render<T>(pub T);

/// Rendering of `()`.
pub trait RenderUnit {
    /// The text the model reads.
    fn render(&self) -> Result<String>;
}

impl RenderUnit for &&Render<()> {
    fn render(&self) -> Result<String> {
        Ok(String::new())
    }
}

/// Rendering through `Display`.
pub trait RenderDisplay {
    /// The text the model reads.
    fn render(&self) -> Result<String>;
}

impl<T: Display> RenderDisplay for &Render<T> {
    fn render(&self) -> Result<String> {
        Ok(self.0.to_string())
    }
}

/// Rendering through `Serialize`, as compact JSON.
pub trait RenderSerialize {
    /// The text the model reads.
    fn render(&self) -> Result<String>;
}

impl<T: Serialize> RenderSerialize for Render<T> {
    fn render(&self) -> Result<String> {
        serde_json::to_string(&self.0)
            .map_err(|e| ToolError::failed(format!("cannot render the tool's result: {e}")))
    }
}

/// Wraps a tool's error so a [`ToolError`] keeps its kind (a question must still pause the
/// run) and anything else `Display` becomes a failed call with its text.
pub struct Failure<E>(pub Cell<Option<E>>, pub &'static str);

impl<E> Failure<E> {
    /// Wraps `error` raised by tool `tool`.
    pub fn new(error: E, tool: &'static str) -> Self {
        Self(Cell::new(Some(error)), tool)
    }
}

/// Conversion of a [`ToolError`]: kept as it is.
pub trait FailureCore {
    /// The error as the toolbox reports it.
    fn take_error(&self) -> ToolError;
}

impl FailureCore for &Failure<ToolError> {
    fn take_error(&self) -> ToolError {
        self.0
            .take()
            .unwrap_or_else(|| ToolError::failed("the error was already taken"))
            .for_tool(self.1)
    }
}

/// Conversion of any other error through its `Display` (alternate form, so an
/// `anyhow::Error` keeps its chain of causes).
pub trait FailureDisplay {
    /// The error as the toolbox reports it.
    fn take_error(&self) -> ToolError;
}

impl<E: Display> FailureDisplay for Failure<E> {
    fn take_error(&self) -> ToolError {
        match self.0.take() {
            Some(e) => ToolError::failed(format!("{e:#}")).for_tool(self.1),
            None => ToolError::failed("the error was already taken").for_tool(self.1),
        }
    }
}
