//! Tools: the `Tool` trait, its `ToolSpec`, the run context `Ctx`, `CallOptions` and the
//! `Toolbox`.
//!
//! Most tools are plain functions under [`#[tool]`](macro@crate::tool), which writes the
//! [`Tool`] implementation; implement the trait by hand for a tool whose schema is only known
//! at run time (an MCP server's, say).

mod call;
mod ctx;
mod human;
mod schema;
mod spec;
mod toolbox;

pub(crate) use call::Gate;
pub use call::{CallOptions, IntoTool, Tool};
pub use ctx::{Ctx, LogLevel, ToolUpdate};
pub(crate) use ctx::{Deps, UpdateSink};
pub use human::{
    ApproveFn, ElicitationMode, ElicitationRequest, ElicitationResponse, Human, approve_fn,
};
pub use schema::ParametersBuilder;
#[cfg(feature = "output")]
pub(crate) use schema::object_schema_for;
pub use spec::ToolSpec;
pub(crate) use toolbox::panicked;
pub use toolbox::{Toolbox, ToolboxBuilder};
