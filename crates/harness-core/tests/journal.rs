//! `Agent::run` with a journal (`RunInput::with_journal`): every step goes through the
//! journal, in an order that is the same on a replay, so a journal that hands back recorded
//! results resumes a crashed run without running a finished step again.

#![allow(missing_docs, clippy::unwrap_used, clippy::panic)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use harness_core::agent::{Agent, Journal, RunInput, Step, StopReason};
use harness_core::testing::ScriptedModel;
use harness_core::{
    CompletionResponse, Content, Error, Result, ToolCall, ToolError, async_trait, tool,
};
use serde_json::{Value, json};

static APPENDED: AtomicUsize = AtomicUsize::new(0);

/// Append a line to the log.
#[tool]
fn append(line: String) -> String {
    APPENDED.fetch_add(1, Ordering::SeqCst);
    format!("appended {line}")
}

/// A recorded step: a model answer, or a tool's result (or error text).
#[derive(Debug, Clone, PartialEq)]
enum Entry {
    Model(CompletionResponse),
    Tool(String, std::result::Result<String, String>),
}

/// Replays `recorded` in order, then runs and records new steps; fails ("crashes") on the
/// step numbered `crash_at`, if set.
struct Recording {
    recorded: Mutex<Vec<Entry>>,
    replayed: AtomicUsize,
    position: AtomicUsize,
    crash_at: Option<usize>,
}

impl Recording {
    fn new(recorded: Vec<Entry>, crash_at: Option<usize>) -> Self {
        Self {
            recorded: Mutex::new(recorded),
            replayed: AtomicUsize::new(0),
            position: AtomicUsize::new(0),
            crash_at,
        }
    }

    /// The recorded entry at the next position, if any; panics when the run asks for a
    /// different kind of step than was recorded there (a nondeterministic replay).
    fn next(&self) -> (usize, Option<Entry>) {
        let at = self.position.fetch_add(1, Ordering::SeqCst);
        (at, self.recorded.lock().unwrap().get(at).cloned())
    }
}

#[async_trait]
impl Journal for Recording {
    async fn model_call(
        &self,
        _turn: usize,
        step: Step<'_, Result<CompletionResponse>>,
    ) -> Result<CompletionResponse> {
        let (at, recorded) = self.next();
        if let Some(entry) = recorded {
            self.replayed.fetch_add(1, Ordering::SeqCst);
            let Entry::Model(response) = entry else {
                panic!("step {at} was a tool call, now a model call")
            };
            return Ok(response);
        }
        if self.crash_at == Some(at) {
            return Err(Error::configuration("the worker died"));
        }
        let response = step.await?;
        self.recorded
            .lock()
            .unwrap()
            .push(Entry::Model(response.clone()));
        Ok(response)
    }

    async fn tool_call(
        &self,
        call: &ToolCall,
        step: Step<'_, std::result::Result<Content, ToolError>>,
    ) -> std::result::Result<Content, ToolError> {
        let (at, recorded) = self.next();
        if let Some(entry) = recorded {
            self.replayed.fetch_add(1, Ordering::SeqCst);
            let Entry::Tool(name, result) = entry else {
                panic!("step {at} was a model call, now a tool call")
            };
            assert_eq!(name, call.name);
            return result.map(Content::from).map_err(ToolError::failed);
        }
        let result = step.await;
        // The journal gets the whole call, its arguments too, after the tool has run.
        let line = call.arguments.get("line").and_then(|l| l.as_str());
        assert_eq!(
            line.map(|l| format!("appended {l}")),
            result.as_ref().ok().map(|c| c.text().into_owned())
        );
        let entry = result
            .as_ref()
            .map(|c| c.text().into_owned())
            .map_err(|e| e.message().to_owned());
        self.recorded
            .lock()
            .unwrap()
            .push(Entry::Tool(call.name.clone(), entry));
        result
    }
}

fn script() -> Vec<CompletionResponse> {
    vec![
        CompletionResponse::from_tool_calls(vec![
            ToolCall::new("append", json!({"line": "a"})).with_id("c1"),
            ToolCall::new("append", json!({"line": "b"})).with_id("c2"),
        ]),
        CompletionResponse::text("both appended"),
    ]
}

#[tokio::test]
async fn a_replayed_run_resumes_at_the_step_in_flight_and_runs_nothing_twice() {
    // The first attempt dies on its second model call (step 3: model, tool, tool, model).
    let model = Arc::new(ScriptedModel::new(script()));
    let agent = Agent::builder(model.clone()).tool(Append).build().unwrap();
    let first = Recording::new(Vec::new(), Some(3));
    let error = agent
        .run(RunInput::from("append a and b").with_journal(&first))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("the worker died"), "{error}");
    assert_eq!(APPENDED.load(Ordering::SeqCst), 2);
    assert_eq!(model.requests().len(), 1);
    let recorded = first.recorded.into_inner().unwrap();
    assert_eq!(recorded.len(), 3);
    assert_eq!(
        recorded[1],
        Entry::Tool("append".into(), Ok("appended a".into()))
    );

    // The retry (another process, say) replays the three steps and runs only the last.
    let model = Arc::new(ScriptedModel::new(script()[1..].to_vec()));
    let agent = Agent::builder(model.clone()).tool(Append).build().unwrap();
    let retry = Recording::new(recorded, None);
    let state = agent
        .run(RunInput::from("append a and b").with_journal(&retry))
        .await
        .unwrap();
    assert_eq!(state.stop_reason, StopReason::Answer);
    assert_eq!(state.output_text(), "both appended");
    assert_eq!(retry.replayed.load(Ordering::SeqCst), 3);
    assert_eq!(APPENDED.load(Ordering::SeqCst), 2, "no tool ran twice");
    assert_eq!(
        model.requests().len(),
        1,
        "only the call in flight was made again"
    );
    // The transcript is whole: the tool results in call order, from the journal.
    let texts: Vec<Value> = state.messages.iter().map(|m| json!(m.text())).collect();
    assert_eq!(
        texts,
        vec![
            json!("append a and b"),
            json!(""),
            json!("appended a"),
            json!("appended b"),
            json!("both appended")
        ]
    );
}
