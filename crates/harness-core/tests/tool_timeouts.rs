//! A tool that never returns cannot hold its run: at its timeout (its own, or its toolbox's
//! default) the call is stopped, its future dropped, and the model reads the timeout as the
//! call's result. Calls that finish in time, and tools with a longer limit of their own, are
//! untouched; a limit of zero is refused when the agent or toolbox is built.

#![allow(missing_docs, clippy::unwrap_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use harness_core::agent::{Agent, StopReason};
use harness_core::testing::ScriptedModel;
use harness_core::{
    CallOptions, CompletionResponse, Content, Ctx, ErrorKind, Role, Tool, ToolCall, ToolError,
    ToolErrorKind, ToolSpec, Toolbox, tool,
};
use serde_json::{Value, json};

/// Set when the stopped call's future is dropped.
static DROPPED: AtomicBool = AtomicBool::new(false);

struct SetOnDrop;

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        DROPPED.store(true, Ordering::SeqCst);
    }
}

/// Ask a server that never answers.
#[tool]
async fn hang(question: String) -> String {
    let _guard = SetOnDrop;
    std::future::pending::<()>().await;
    question
}

/// Quick, with a long limit of its own.
#[tool(timeout_secs = 3600)]
async fn patient(word: String) -> String {
    tokio::time::sleep(Duration::from_millis(200)).await;
    word
}

/// Blocks its thread for a while.
#[tool(timeout_secs = 0.05)]
fn grind(n: u64) -> u64 {
    std::thread::sleep(Duration::from_secs(1));
    n
}

fn turn(calls: &[(&str, Value)]) -> CompletionResponse {
    CompletionResponse::from_tool_calls(
        calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| ToolCall::new(*name, args.clone()).with_id(format!("c{i}")))
            .collect(),
    )
}

fn result_of(messages: &[harness_core::Message], id: &str) -> String {
    let message = messages
        .iter()
        .find(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(id))
        .unwrap();
    message.content.text().into_owned()
}

#[tokio::test]
async fn a_hanging_tool_is_stopped_and_the_model_reads_why() {
    let model = Arc::new(ScriptedModel::new([
        turn(&[
            ("hang", json!({"question": "q"})),
            ("patient", json!({"word": "w"})),
        ]),
        CompletionResponse::text("Done without it."),
    ]));
    let tools = Toolbox::builder()
        .tool(Hang)
        .tool(Patient)
        .tool_timeout(Duration::from_millis(50))
        .build()
        .unwrap();
    let agent = Agent::builder(Arc::clone(&model))
        .toolbox(tools)
        .build()
        .unwrap();
    let state = agent.run("Ask.").await.unwrap();
    assert_eq!(state.stop_reason, StopReason::Answer);
    assert_eq!(state.output_text(), "Done without it.");
    assert_eq!(
        result_of(&state.messages, "c0"),
        "Error: tool 'hang' did not finish within 50ms and was stopped; try it with less work, \
         or another way"
    );
    assert!(
        DROPPED.load(Ordering::SeqCst),
        "the stopped call was dropped"
    );
    // The other call of the turn had its own, longer limit and finished.
    assert_eq!(result_of(&state.messages, "c1"), "w");
    // The model was told in the next request.
    let second = &model.requests()[1];
    let told = second
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("c0"));
    assert!(
        told.unwrap()
            .content
            .text()
            .contains("did not finish within 50ms")
    );
}

#[tokio::test]
async fn a_tools_own_limit_wins_and_a_blocking_tool_is_not_waited_for() {
    let tools = Toolbox::builder()
        .tool(Grind)
        .tool_timeout(Duration::from_secs(3600))
        .build()
        .unwrap();
    let started = std::time::Instant::now();
    let err = tools
        .call("grind", json!({"n": 1}), CallOptions::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::TimedOut);
    assert!(err.is_timed_out());
    assert_eq!(err.tool(), Some("grind"));
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "the thread's sleep was not waited for"
    );
    assert_eq!(Grind.spec().timeout, Some(Duration::from_millis(50)));
    assert_eq!(Patient.spec().timeout, Some(Duration::from_secs(3600)));
    assert_eq!(Hang.spec().timeout, None);
}

#[tokio::test]
async fn calls_that_finish_in_time_are_untouched() {
    let tools = Toolbox::builder()
        .tool(Patient)
        .tool_timeout(Duration::from_millis(10))
        .build()
        .unwrap();
    assert_eq!(tools.tool_timeout(), Some(Duration::from_millis(10)));
    // Patient's own hour wins over the toolbox's 10 ms.
    assert_eq!(
        tools
            .call("patient", json!({"word": "w"}), CallOptions::new())
            .await
            .unwrap()
            .text(),
        "w"
    );
}

/// A tool of one's own with a limit of zero.
struct Never(Arc<ToolSpec>);

#[async_trait::async_trait]
impl Tool for Never {
    fn spec(&self) -> &Arc<ToolSpec> {
        &self.0
    }
    async fn call(&self, _arguments: Value, _ctx: Ctx) -> Result<Content, ToolError> {
        Ok(Content::default())
    }
}

fn never() -> Never {
    Never(Arc::new(
        ToolSpec::new("never", "Never.", json!({"type": "object"})).with_timeout(Duration::ZERO),
    ))
}

#[test]
fn a_zero_limit_is_refused_at_build() {
    let model = || ScriptedModel::new([CompletionResponse::text("x")]);
    // The default limit is the toolbox's (an agent takes it with the toolbox).
    let error = Toolbox::builder()
        .tool(Patient)
        .tool_timeout(Duration::ZERO)
        .build()
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Configuration);
    assert!(
        error.to_string().contains("tool timeout is zero"),
        "{error}"
    );

    let error = Toolbox::builder().tool(never()).build().unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Configuration);
    assert!(
        error
            .to_string()
            .contains("tool 'never' has a timeout of zero"),
        "{error}"
    );

    let error = Agent::builder(model()).tool(never()).build().unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Configuration);
    assert!(
        error
            .to_string()
            .contains("tool 'never' has a timeout of zero"),
        "{error}"
    );
}

#[test]
fn a_timed_out_error_survives_a_journal_round_trip() {
    let error = ToolError::timed_out("hang", Duration::from_millis(1500));
    assert_eq!(
        error.message(),
        "tool 'hang' did not finish within 1.5s and was stopped; try it with less work, or \
         another way"
    );
    let back: ToolError = serde_json::from_value(serde_json::to_value(&error).unwrap()).unwrap();
    assert_eq!(back.kind(), ToolErrorKind::TimedOut);
    assert_eq!(back.model_text(), error.model_text());
    let spec: ToolSpec = serde_json::from_value(json!({
        "name": "t", "description": "d", "parameters": {"type": "object"}
    }))
    .unwrap();
    assert_eq!(spec.timeout, None);
}
