//! A run paused on an approval, saved as JSON, loaded in a fresh process and resumed there
//! with the approved call running.
//!
//! The second process is this test binary again, started on the ignored test
//! `resume_in_child_process` with the saved file's path in an environment variable.

#![allow(missing_docs, clippy::unwrap_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Command;

use harness_core::agent::{Agent, AgentState, StopReason};
use harness_core::testing::ScriptedModel;
use harness_core::{CompletionResponse, ToolCall, tool};
use serde_json::json;

const SESSION_VAR: &str = "HARNESS_CORE_TEST_SESSION";

/// Send money.
#[tool(requires_approval)]
fn wire_transfer(amount_usd: u64, to: String) -> String {
    format!("sent ${amount_usd} to {to}")
}

fn agent(script: Vec<CompletionResponse>) -> Agent {
    Agent::builder(ScriptedModel::new(script))
        .name("payer")
        .tool(WireTransfer)
        .build()
        .unwrap()
}

#[test]
fn a_paused_run_resumes_in_a_fresh_process() {
    let dir = std::env::temp_dir().join(format!("harness-core-session-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let session = dir.join("session.json");

    // First process: run until the gated call pauses, and save the whole state.
    let first = agent(vec![CompletionResponse::from_tool_calls(vec![
        ToolCall::new("wire_transfer", json!({"amount_usd": 50_000, "to": "acme"})).with_id("w1"),
    ])]);
    let paused = first.run_blocking("Pay the Acme invoice").unwrap();
    assert_eq!(paused.stop_reason, StopReason::Paused);
    std::fs::write(&session, paused.to_json()).unwrap();

    // Second process: load, approve, resume.
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "resume_in_child_process",
            "--exact",
            "--include-ignored",
            "--nocapture",
        ])
        .env(SESSION_VAR, &session)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "child failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );

    let resumed =
        AgentState::from_json(&std::fs::read_to_string(session.with_extension("out")).unwrap())
            .unwrap();
    assert!(resumed.answered());
    assert_eq!(resumed.output_text(), "Paid.");
    let result = resumed
        .messages
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("w1"))
        .unwrap();
    assert_eq!(result.text(), "sent $50000 to acme");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
#[ignore = "the second process of a_paused_run_resumes_in_a_fresh_process, which starts it"]
fn resume_in_child_process() {
    let session = PathBuf::from(std::env::var(SESSION_VAR).expect("started by the parent test"));
    let saved = AgentState::from_json(&std::fs::read_to_string(&session).unwrap()).unwrap();
    let second = agent(vec![CompletionResponse::text("Paid.")]);
    let resumed = second.run_blocking(saved.approve(None).unwrap()).unwrap();
    std::fs::write(session.with_extension("out"), resumed.to_json()).unwrap();
}
