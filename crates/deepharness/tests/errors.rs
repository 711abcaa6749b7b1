//! Every crate's failure reaches `deepharness::Error` through `?`, keeps its family as an
//! `ErrorKind`, and keeps the error underneath for `downcast_ref`.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use deepharness::Error;
use deepharness::errors::{ErrorKind, GraphError, McpError, McpErrorKind, ToolError, ToolsError};
use deepharness::tools::Workspace;

fn escape(workspace: &Workspace) -> Result<(), Error> {
    workspace.resolve("../../etc/passwd")?;
    Ok(())
}

#[test]
fn a_workspace_refusal_is_a_workspace_error_keeping_the_tools_error() {
    let dir = std::env::temp_dir().join(format!("dh-errors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let workspace = Workspace::new(&dir).unwrap();
    let err = escape(&workspace).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Workspace);
    assert!(!err.is_configuration() && !err.is_provider());
    assert!(
        err.to_string().contains("outside the workspace root"),
        "{err}"
    );
    assert!(
        err.downcast_ref::<ToolsError>()
            .unwrap()
            .is_outside_workspace()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_workspace_that_is_not_a_directory_is_a_configuration_error() {
    let err = Error::from(Workspace::new("/definitely/not/here/at/all").unwrap_err());
    assert!(err.is_configuration(), "{err:?}");
    assert!(err.downcast_ref::<ToolsError>().is_some());
}

#[test]
fn an_mcp_timeout_is_an_mcp_error_that_is_a_timeout() {
    let err = Error::from(McpError::with_kind(McpErrorKind::Timeout, "no answer"));
    assert_eq!(err.kind(), ErrorKind::Mcp);
    assert!(err.is_timeout());
    assert_eq!(err.to_string(), "no answer");
    assert_eq!(
        err.downcast_ref::<McpError>().unwrap().kind(),
        McpErrorKind::Timeout
    );
    let refused = Error::from(McpError::with_kind(McpErrorKind::Refused, "no such tool"));
    assert!(!refused.is_timeout());
    let setup = Error::from(McpError::with_kind(
        McpErrorKind::Configuration,
        "empty command",
    ));
    assert!(setup.is_configuration());
}

#[test]
fn graph_errors_keep_their_family_and_their_partial_state() {
    let built_wrong = Error::from(GraphError::Configuration("no entry node".into()));
    assert!(built_wrong.is_configuration());
    let ran_out = Error::from(GraphError::StepLimitExceeded {
        limit: 3,
        state: Box::new(41_u32),
    });
    assert_eq!(ran_out.kind(), ErrorKind::Graph);
    let graph = ran_out.downcast_ref::<GraphError>().unwrap();
    assert_eq!(graph.partial_state::<u32>(), Some(&41));
}

#[test]
fn a_tool_error_outside_a_run_is_a_tool_error_with_its_kind() {
    let err = Error::from(ToolError::needs_human("Proceed?").for_tool("confirm"));
    assert_eq!(err.kind(), ErrorKind::Tool);
    let tool = err.tool().unwrap();
    assert!(tool.is_needs_human());
    assert_eq!(tool.tool(), Some("confirm"));
    assert_eq!(err.to_string(), "Proceed?");
}

#[test]
fn io_errors_name_the_path() {
    let err = Error::io(
        "notes/today.md",
        std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory"),
    );
    assert_eq!(err.kind(), ErrorKind::Io);
    assert_eq!(err.to_string(), "notes/today.md: No such file or directory");
    assert_eq!(
        err.downcast_ref::<std::io::Error>().unwrap().kind(),
        std::io::ErrorKind::NotFound
    );
}
