//! The agent loop when the model misbehaves or the provider fails: arguments the model never
//! sent are never run, and a run that fails loses nothing and resumes without re-running a
//! tool.

#![allow(missing_docs, clippy::unwrap_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::StreamExt as _;
use harness_core::agent::{Agent, AgentEvent, AgentState, StopReason};
use harness_core::testing::{FunctionModel, ScriptedModel};
use harness_core::{CompletionResponse, FinishReason, ProviderError, Role, ToolCall, tool};
use serde_json::json;

static RUNS: AtomicUsize = AtomicUsize::new(0);

/// Counts its runs (the tests that use it check the count before and after).
#[tool]
fn tally(note: String) -> String {
    RUNS.fetch_add(1, Ordering::SeqCst);
    format!("noted {note}")
}

/// Writes a note.
#[tool]
fn write_note(text: String) -> String {
    format!("wrote {text}")
}

fn tool_results(state: &AgentState) -> Vec<String> {
    state
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.text().to_string())
        .collect()
}

/// Runs one turn of `call` (then an answer) and returns the final state.
async fn run_with_call(call: ToolCall, finish: FinishReason) -> AgentState {
    let model = ScriptedModel::new([
        CompletionResponse::from_tool_calls(vec![call]).with_finish_reason(finish),
        CompletionResponse::text("done"),
    ]);
    let agent = Agent::builder(model).tool(WriteNote).build().unwrap();
    agent.run("go").await.unwrap()
}

#[tokio::test]
async fn arguments_that_are_not_json_are_not_run_and_the_model_is_told_why() {
    let call = ToolCall::parse("write_note", r#"{"text": "hi" oops}"#).with_id("c1");
    let state = run_with_call(call, FinishReason::Stop).await;
    let results = tool_results(&state);
    assert_eq!(results.len(), 1);
    assert!(
        results[0].starts_with(
            "Error: the arguments for 'write_note' are not one JSON object (not valid JSON: "
        ),
        "{}",
        results[0]
    );
    // What the model sent is quoted: vendors are sent `{}` for the call.
    assert!(
        results[0].contains("You sent:\n{\"text\": \"hi\" oops}\n"),
        "{}",
        results[0]
    );
    // The parser's own words (serde_json says where it stopped).
    assert!(results[0].contains("line 1 column"), "{}", results[0]);
    assert!(results[0].ends_with("send the arguments again as a JSON object."));
    // The transcript keeps what the model sent, verbatim.
    let request = state
        .messages
        .iter()
        .find(|m| !m.tool_calls.is_empty())
        .unwrap();
    assert_eq!(
        request.tool_calls[0].raw_arguments.as_deref(),
        Some(r#"{"text": "hi" oops}"#)
    );
    assert!(request.tool_calls[0].arguments.is_empty());
    assert_eq!(state.stop_reason, StopReason::Answer);
    // And it survives a round trip through JSON.
    let back = AgentState::from_json(&state.to_json()).unwrap();
    assert_eq!(back, state);
}

#[tokio::test]
async fn arguments_that_are_json_but_not_an_object_are_not_run() {
    for (sent, kind) in [
        ("[1, 2]", "an array"),
        ("\"hi\"", "a string"),
        ("7", "a number"),
    ] {
        let call = ToolCall::parse("write_note", sent).with_id("c1");
        let state = run_with_call(call, FinishReason::Stop).await;
        let results = tool_results(&state);
        assert_eq!(
            results,
            [format!(
                "Error: the arguments for 'write_note' are not one JSON object (a JSON object \
                 was expected, got {kind}). You sent:\n{sent}\nThe call was not run; send the \
                 arguments again as a JSON object."
            )]
        );
    }
}

#[tokio::test]
async fn a_call_cut_off_at_the_output_limit_is_not_run() {
    RUNS.store(0, Ordering::SeqCst);
    let whole = ToolCall::parse("tally", r#"{"note": "a"}"#).with_id("c1");
    let cut = ToolCall::parse("tally", r#"{"note": "the rest of the"#).with_id("c2");
    let model = ScriptedModel::new([
        CompletionResponse::from_tool_calls(vec![whole, cut])
            .with_finish_reason(FinishReason::Length),
        CompletionResponse::text("done"),
    ]);
    let agent = Agent::builder(model).tool(Tally).build().unwrap();
    let state = agent.run("go").await.unwrap();
    let results = tool_results(&state);
    // The complete call ran; the cut one did not, and says why.
    assert_eq!(results[0], "noted a");
    assert!(
        results[1].starts_with(
            "Error: the reply reached the output token limit in the middle of this call to \
             'tally', so its arguments are cut off (not valid JSON: EOF while parsing"
        ),
        "{}",
        results[1]
    );
    assert_eq!(RUNS.load(Ordering::SeqCst), 1);
}

#[cfg(feature = "output")]
#[tokio::test]
async fn a_final_answer_with_unreadable_arguments_is_refused_and_asked_again() {
    #[derive(Debug, serde::Deserialize, schemars::JsonSchema, PartialEq)]
    struct Verdict {
        ok: bool,
    }
    let model = ScriptedModel::new([
        CompletionResponse::from_tool_calls(vec![
            ToolCall::parse("final_answer", r#"{"ok": tr"#).with_id("f1"),
        ]),
        CompletionResponse::from_tool_calls(vec![
            ToolCall::new("final_answer", json!({"ok": true})).with_id("f2"),
        ]),
    ]);
    let agent = Agent::builder(model).output::<Verdict>().build().unwrap();
    let state = agent.run("judge").await.unwrap();
    assert_eq!(state.output_as::<Verdict>().unwrap(), Verdict { ok: true });
    let results = tool_results(&state);
    assert!(
        results[0].starts_with("Error: the arguments are not one JSON object (not valid JSON"),
        "{}",
        results[0]
    );
}

/// The provider fails (after its retries) on the second model call, after a tool ran once.
/// The error carries the run so far; running that state again finishes the run, and the
/// tool is not run a second time.
#[tokio::test]
async fn a_failed_run_carries_its_state_and_resumes_without_rerunning_a_tool() {
    let tool_runs = Arc::new(AtomicUsize::new(0));
    let model_calls = Arc::new(AtomicUsize::new(0));
    let calls = Arc::clone(&model_calls);
    let model = FunctionModel::fallible(move |request| {
        let messages = request.messages;
        match calls.fetch_add(1, Ordering::SeqCst) {
            0 => Ok(CompletionResponse::from_tool_calls(vec![
                ToolCall::new("count", json!({})).with_id("c1"),
            ])),
            1 => Err(ProviderError::new("openai", "server overloaded")
                .with_status(503)
                .into()),
            _ => {
                // On resume the model sees the tool's result from before the failure.
                assert!(messages.iter().any(|m| m.text() == "counted 1"));
                Ok(CompletionResponse::text("done"))
            }
        }
    });
    let runs = Arc::clone(&tool_runs);
    let counter = harness_core::Toolbox::builder()
        .tool(CountTool(runs, no_parameters("count", "Count.")))
        .build()
        .unwrap();
    let agent = Agent::builder(model).toolbox(counter).build().unwrap();

    let err = agent.run("count once").await.unwrap_err();
    assert!(err.is_provider(), "{err}");
    assert_eq!(err.provider().and_then(ProviderError::status), Some(503));
    assert_eq!(err.state().stop_reason, StopReason::Unfinished);
    assert_eq!(
        err.to_string(),
        "openai request failed with HTTP 503: server overloaded"
    );
    let state = err.into_state();
    assert_eq!(state.stop_reason, StopReason::Unfinished);
    assert_eq!(tool_results(&state), ["counted 1"]);

    let state = agent.run(state).await.unwrap();
    assert_eq!(state.stop_reason, StopReason::Answer);
    assert_eq!(state.output, "done");
    assert_eq!(tool_runs.load(Ordering::SeqCst), 1, "the tool ran again");
    assert_eq!(model_calls.load(Ordering::SeqCst), 3);
    // Every message is kept: user, request, result, answer (no system prompt set).
    assert_eq!(state.messages.len(), 4);
}

/// The same failure through `stream`: the last item is the error, carrying the state.
#[tokio::test]
async fn a_failed_stream_ends_with_the_error_and_its_state() {
    let model = FunctionModel::fallible(|request| {
        let messages = request.messages;
        if messages.iter().any(|m| m.role == Role::Tool) {
            Err(ProviderError::new("anthropic", "overloaded").into())
        } else {
            Ok(CompletionResponse::from_tool_calls(vec![
                ToolCall::new("write_note", json!({"text": "x"})).with_id("c1"),
            ]))
        }
    });
    let agent = Agent::builder(model).tool(WriteNote).build().unwrap();
    let events: Vec<_> = agent.stream("go").collect().await;
    let last = events.last().unwrap();
    let Err(err) = last else {
        panic!("expected the error last");
    };
    assert!(err.is_provider());
    assert_eq!(tool_results(err.state()), ["wrote x"]);
    assert!(
        events[..events.len() - 1]
            .iter()
            .all(|e| matches!(e, Ok(e) if !matches!(e, AgentEvent::Finished(_))))
    );
}

/// Counts its calls in a shared counter.
struct CountTool(Arc<AtomicUsize>, Arc<harness_core::ToolSpec>);

/// The spec of a tool that takes no arguments.
fn no_parameters(name: &str, description: &str) -> Arc<harness_core::ToolSpec> {
    Arc::new(harness_core::ToolSpec::new(
        name,
        description,
        json!({"type": "object", "properties": {}}),
    ))
}

#[harness_core::async_trait]
impl harness_core::Tool for CountTool {
    fn spec(&self) -> &Arc<harness_core::ToolSpec> {
        &self.1
    }

    async fn call(
        &self,
        _arguments: serde_json::Value,
        _ctx: harness_core::Ctx,
    ) -> Result<harness_core::Content, harness_core::ToolError> {
        let n = self.0.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(format!("counted {n}").into())
    }
}

/// A tool whose result holds an image beside its text.
struct Screenshot(Arc<harness_core::ToolSpec>);

impl Screenshot {
    fn new() -> Self {
        Self(no_parameters("screenshot", "Take a screenshot."))
    }
}

#[harness_core::async_trait]
impl harness_core::Tool for Screenshot {
    fn spec(&self) -> &Arc<harness_core::ToolSpec> {
        &self.0
    }

    async fn call(
        &self,
        _arguments: serde_json::Value,
        _ctx: harness_core::Ctx,
    ) -> Result<harness_core::Content, harness_core::ToolError> {
        Ok(harness_core::Content::Blocks(vec![
            harness_core::Block::text("a screenshot"),
            harness_core::Image::from_base64("aGk=", "image/png").into(),
        ]))
    }
}

/// Images a tool returns reach the model: the tool message keeps them beside the text
/// (what each provider then sends its own way), while events and middleware see the text.
#[tokio::test]
async fn a_tools_image_is_kept_in_its_result_for_the_model() {
    let model = ScriptedModel::new([
        CompletionResponse::from_tool_calls(vec![
            ToolCall::new("screenshot", json!({})).with_id("s1"),
        ]),
        CompletionResponse::text("I see it"),
    ]);
    let agent = Agent::builder(model)
        .tool(Screenshot::new())
        .build()
        .unwrap();
    let events: Vec<AgentEvent> = agent.stream("look").map(|e| e.unwrap()).collect().await;
    let finished = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolFinished { result, .. } => Some(result.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(finished, "a screenshot");
    let Some(AgentEvent::Finished(state)) = events.last() else {
        panic!("no Finished");
    };
    let result = state
        .messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    let blocks = result.content.blocks();
    assert_eq!(blocks.len(), 2);
    assert_eq!(blocks[0], harness_core::Block::text("a screenshot"));
    assert!(
        matches!(&blocks[1], harness_core::Block::Image(image) if image.data() == Some("aGk="))
    );
    // The toolbox's call gives the whole content; its text is the text alone.
    let toolbox = harness_core::Toolbox::builder()
        .tool(Screenshot::new())
        .build()
        .unwrap();
    let content = toolbox
        .call("screenshot", json!({}), harness_core::CallOptions::new())
        .await
        .unwrap();
    assert_eq!(content.text(), "a screenshot");
    assert_eq!(content.blocks(), blocks);
}

#[tokio::test]
async fn long_broken_arguments_are_quoted_back_cut_short() {
    let sent = format!("{{\"text\": \"{}", "é".repeat(2_000));
    let state = run_with_call(
        ToolCall::parse("write_note", &sent).with_id("c1"),
        FinishReason::Stop,
    )
    .await;
    let results = tool_results(&state);
    let quoted: String = sent.chars().take(500).collect();
    assert!(
        results[0].contains(&format!("You sent:\n{quoted}...\nThe call was not run")),
        "{}",
        results[0]
    );
    // The transcript keeps all of it.
    let call = &state.messages[1].tool_calls[0];
    assert_eq!(call.raw_arguments.as_deref(), Some(sent.as_str()));
}
