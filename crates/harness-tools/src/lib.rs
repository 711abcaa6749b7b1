//! Tools for [deepharness](https://docs.rs/deepharness) agents.
//!
//! - [`Workspace`]: the one directory a tool may touch, symlink-aware and race-safe.
//! - [`file_tools`]: `read_file`, `list_files`, `search_files`, `write_file`, `edit_file`.
//! - [`shell_tool`]: `run_command`, gated by default; not a sandbox.
//! - [`ToolName`]: the built-in names, for permission rules.
//! - [`mcp`] (feature `mcp`): a Model Context Protocol client, `McpServer::stdio` /
//!   `McpServer::http` (feature `mcp-http`), its tools as ordinary tools; OAuth 2.1 for HTTP
//!   servers with `McpServer::with_oauth` (feature `mcp-auth`, off by default).
//! - [`TavilySearch`] (feature `search`): web search as a tool.
//!
//! Every failure is a [`harness_core::Error`] (a path outside the workspace is of kind
//! [`Workspace`](harness_core::ErrorKind::Workspace), an MCP server's failure of kind
//! [`Mcp`](harness_core::ErrorKind::Mcp) with its [`McpError`](mcp::McpError) as the
//! source); inside a tool call, the [`ToolError`](harness_core::ToolError) the model reads.
//!
//! ```no_run
//! use harness_core::agent::{Agent, Permissions, Rule};
//! use harness_tools::{FileToolsConfig, ShellConfig, ToolName, Workspace, file_tools, shell_tool};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let workspace = Workspace::new(".")?;
//! let permissions = Permissions::new()
//!     .allow(ToolName::ReadFile)
//!     .allow(Rule::new(ToolName::RunCommand).arg("command", "git log*"))
//!     .ask(ToolName::WriteFile)
//!     .deny(Rule::new(ToolName::RunCommand).arg("command", "*rm -rf*"));
//! let agent = Agent::builder(harness_core::testing::TestModel::new())
//!     .toolbox(harness_core::Toolbox::builder()
//!         .tools(file_tools(&workspace, FileToolsConfig::default()))
//!         .tool(shell_tool(&workspace, ShellConfig::default()))
//!         .build()?)
//!     .permissions(permissions)
//!     .build()?;
//! # Ok(()) }
//! ```
#![cfg_attr(not(doctest), doc = include_str!("../GUIDE-tools.md"))]
#![cfg_attr(not(doctest), doc = include_str!("../GUIDE-coding-agent.md"))]

mod error;
mod files;
#[cfg(feature = "mcp")]
pub mod mcp;
mod names;
#[cfg(feature = "search")]
mod search;
mod shell;
mod workspace;

pub use files::{FileToolsConfig, file_tools};
pub use names::ToolName;
#[cfg(feature = "search")]
pub use search::{
    SearchDepth, SearchResult, SearchTool, TavilySearch, TavilySearchBuilder, format_results,
};
pub use shell::{ShellConfig, shell_tool};
pub use workspace::Workspace;
