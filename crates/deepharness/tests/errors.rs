//! Every crate's failure reaches `deepharness::Error` through `?`, keeps its family as an
//! `ErrorKind`, and keeps the error underneath for `downcast_ref`.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use deepharness::errors::{ErrorKind, McpError, McpErrorKind, ProviderError, RunError, ToolError};
use deepharness::graph::{Graph, GraphInput, GraphState, GraphStopReason, Place};
use deepharness::testing::ScriptedModel;
use deepharness::tools::{McpServer, Workspace};
use deepharness::{Agent, AgentState, Error};

fn escape(workspace: &Workspace) -> Result<(), Error> {
    workspace.resolve("../../etc/passwd")?;
    Ok(())
}

#[test]
fn a_workspace_refusal_is_a_workspace_error() {
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
    assert!(err.to_string().contains("../../etc/passwd"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_workspace_that_is_not_a_directory_is_a_configuration_error() {
    let err = Workspace::new("/definitely/not/here/at/all").unwrap_err();
    assert!(err.is_configuration(), "{err:?}");
    assert_eq!(err.kind(), ErrorKind::Configuration);
    assert!(
        err.to_string().contains("/definitely/not/here/at/all"),
        "{err}"
    );
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
    assert_eq!(refused.kind(), ErrorKind::Mcp);
    assert!(!refused.is_timeout());
    assert!(
        refused
            .downcast_ref::<McpError>()
            .is_some_and(McpError::is_refused)
    );
    // A server set up wrong is a configuration error, not an MCP one.
    let setup = McpServer::stdio(Vec::<String>::new()).unwrap_err();
    assert!(setup.is_configuration(), "{setup:?}");
    assert!(setup.downcast_ref::<McpError>().is_none());
}

#[derive(Debug, Clone, Default, PartialEq, GraphState)]
struct Count {
    n: u32,
}

/// A node's own failure.
#[derive(Debug)]
struct Overflow(u32);

impl std::fmt::Display for Overflow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} is too many", self.0)
    }
}

impl std::error::Error for Overflow {}

#[tokio::test]
async fn graph_errors_keep_their_family_and_a_step_limit_keeps_the_state() {
    // Built wrong: an edge to a node that does not exist, reported by build().
    let mut wrong = Graph::<Count>::new();
    let start = wrong.add("start", Place::START, |c: Count| c).unwrap();
    wrong.connect(start, "nowhere");
    let built_wrong = wrong.build().err().unwrap();
    assert!(built_wrong.is_configuration(), "{built_wrong:?}");

    // Out of waves: not an error, the state it reached and why it stopped.
    let mut looping = Graph::<Count>::new();
    let tick = looping
        .add("tick", Place::START, |mut c: Count| {
            c.n += 1;
            c
        })
        .unwrap();
    looping.connect(tick, tick).loop_back();
    let executor = looping.build().unwrap();
    let output = executor
        .run(GraphInput::new(Count { n: 38 }).with_max_steps(3))
        .await
        .unwrap();
    assert_eq!(output.stop_reason, GraphStopReason::StepLimit);
    assert_eq!(output.state, Count { n: 41 });

    // A node's failure is a graph error, the node's own error its source.
    let mut failing = Graph::<Count>::new();
    failing
        .try_add("count", Place::START, |c: Count| {
            if c.n > 40 { Err(Overflow(c.n)) } else { Ok(c) }
        })
        .unwrap();
    let executor = failing.build().unwrap();
    let err = executor.run(Count { n: 41 }).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Graph);
    assert!(err.to_string().contains("count"), "{err}");
    assert_eq!(err.downcast_ref::<Overflow>().map(|o| o.0), Some(41));
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

fn failed_run(agent: &Agent) -> Result<AgentState, Error> {
    // `?` keeps the error and drops the state beside it.
    Ok(agent.run_blocking("hi")?)
}

#[test]
fn a_failed_run_keeps_its_state_beside_the_error_and_converts_with_question_mark() {
    let overloaded = || Error::from(ProviderError::new("openai", "overloaded"));
    let model = ScriptedModel::new([])
        .then_fail(overloaded())
        .then_fail(overloaded());
    let agent = Agent::builder(model).build().unwrap();
    let failed: RunError = agent.run_blocking("hi").unwrap_err();
    assert!(failed.is_provider());
    assert_eq!(failed.kind(), ErrorKind::Provider);
    assert_eq!(failed.state().messages.len(), 1);
    let (error, state) = failed.into_parts();
    assert_eq!(error.provider().unwrap().provider(), "openai");
    assert_eq!(state.messages[0].text(), "hi");

    let err = failed_run(&agent).unwrap_err();
    assert!(err.is_provider(), "{err:?}");
}
