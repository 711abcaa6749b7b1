//! [`RestateJournal`]: a run's model and tool calls as Restate `ctx.run` steps.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use harness_core::agent::{Journal, Step};
use harness_core::{
    AgentEvent, CompletionResponse, Content, Error, Result, ToolCall, ToolError, async_trait,
};
use restate_sdk::context::{
    ContextSideEffects as _, ObjectContext, RunFuture as _, RunRetryPolicy,
};
use restate_sdk::errors::{HandlerError, TerminalError};
use restate_sdk::serde::Json;
use serde::{Deserialize, Serialize};

use crate::elicit::{Ledger, LedgerHuman, Question};

/// Where the events of a durable run go: the session's key and the event.
pub type EventSink = dyn Fn(&str, &AgentEvent) + Send + Sync;

/// A model call as the journal keeps it: the answer, or the error that ended the run.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ModelRecord {
    Answer(CompletionResponse),
    Failed { kind: String, message: String },
}

/// A tool call as the journal keeps it: its result, the tool error the model reads, or the
/// question it asked that no answer covered (the run pauses on it; the call runs again once
/// it is answered).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ToolRecord {
    Result(Content),
    Error(ToolError),
    Asked(Question),
}

/// Runs each step of a journaled run
/// ([`RunInput::with_journal`](harness_core::agent::RunInput::with_journal)) as a Restate
/// `ctx.run`: the step's result is journaled; on a retry (the worker died, the
/// deployment moved) a finished step's result is read back from the journal and the step is
/// not run again. Only the step that was in flight runs again.
///
/// A model call that fails in a way the next attempt may not (a timeout, a refused
/// connection, a 429 or 5xx that outlasted the HTTP client's own retries) fails the step,
/// and Restate retries it under the journal's retry policy; any other failure is journaled
/// and ends the run. A tool's error is its result, journaled like any other.
///
/// Events are reported from inside the steps, so only when a step really runs, never on a
/// replay: `StepStarted` and the text as it arrives (`TextDelta`: with events watched the
/// model is streamed inside its step) for a model call, `ToolStarted` and `ToolFinished` for
/// a tool call.
pub struct RestateJournal<'a> {
    ctx: &'a ObjectContext<'a>,
    session: String,
    events: Option<Arc<EventSink>>,
    model_retries: u32,
    ledger: Arc<Ledger>,
}

impl<'a> RestateJournal<'a> {
    /// A journal over `ctx`, for the session (object key) `session`.
    pub fn new(ctx: &'a ObjectContext<'a>, session: impl Into<String>) -> Self {
        Self {
            ctx,
            session: session.into(),
            events: None,
            model_retries: DEFAULT_MODEL_RETRIES,
            ledger: Ledger::new(HashMap::new()),
        }
    }

    /// Answers the calls' questions from `ledger` (what `DurableAgent` keeps per session).
    #[must_use]
    pub(crate) fn with_ledger(mut self, ledger: Arc<Ledger>) -> Self {
        self.ledger = ledger;
        self
    }

    /// Reports the run's events to `events`, from inside the steps that run.
    #[must_use]
    pub fn with_events(mut self, events: Option<Arc<EventSink>>) -> Self {
        self.events = events;
        self
    }

    /// How many times a model call whose failure may pass is tried in all before the run
    /// fails (at least 1).
    #[must_use]
    pub fn with_model_retries(mut self, attempts: u32) -> Self {
        self.model_retries = attempts.max(1);
        self
    }

    fn emit(&self, event: impl FnOnce() -> AgentEvent) {
        if let Some(events) = &self.events {
            events(&self.session, &event());
        }
    }
}

/// Tries of a failing model call before the run fails, by default.
pub(crate) const DEFAULT_MODEL_RETRIES: u32 = 5;

/// How a failing step is retried: after 0.5 s, doubling up to 30 s, `attempts` tries in all.
pub(crate) fn step_retries(attempts: u32) -> RunRetryPolicy {
    RunRetryPolicy::new()
        .initial_delay(Duration::from_millis(500))
        .exponentiation_factor(2.0)
        .max_delay(Duration::from_secs(30))
        .max_attempts(attempts)
}

/// True for a model failure the next attempt may not meet.
fn transient(error: &Error) -> bool {
    error.is_timeout()
        || error.is_connect()
        || error
            .status()
            .is_some_and(|status| status == 429 || status >= 500)
}

#[async_trait]
impl Journal for RestateJournal<'_> {
    async fn model_call(
        &self,
        turn: usize,
        step: Step<'_, Result<CompletionResponse>>,
    ) -> Result<CompletionResponse> {
        let policy = step_retries(self.model_retries);
        let record = self
            .ctx
            .run(|| async {
                self.emit(|| AgentEvent::StepStarted { step: turn });
                match step.await {
                    Ok(response) => Ok(Json(ModelRecord::Answer(response))),
                    Err(error) if transient(&error) => Err(HandlerError::from(error)),
                    Err(error) => Ok(Json(ModelRecord::Failed {
                        kind: error.kind().as_str().to_owned(),
                        message: error.to_string(),
                    })),
                }
            })
            .name(format!("model {turn}"))
            .retry_policy(policy)
            .await;
        match record.map(Json::into_inner) {
            Ok(ModelRecord::Answer(response)) => Ok(response),
            Ok(ModelRecord::Failed { kind, message }) => Err(replayed_error(&kind, message)),
            Err(terminal) => Err(Error::from(harness_core::ProviderError::new(
                "durable",
                format!(
                    "the model call of turn {turn} failed on every attempt: {}",
                    terminal.message()
                ),
            ))),
        }
    }

    async fn tool_call(
        &self,
        call: &ToolCall,
        step: Step<'_, std::result::Result<Content, ToolError>>,
    ) -> std::result::Result<Content, ToolError> {
        let name = match &call.id {
            Some(id) => format!("tool {} {id}", call.name),
            None => format!("tool {}", call.name),
        };
        let call_id = call.id.as_deref().unwrap_or_default();
        let record = self
            .ctx
            .run(|| async {
                self.emit(|| AgentEvent::ToolStarted {
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                    call_id: call.id.clone(),
                });
                self.ledger.start(call_id);
                let result = step.await;
                if let Some(question) = self.ledger.finish() {
                    // The call asked what no answer covers: it ends here, and runs again
                    // once a person has answered.
                    return Ok(Json(ToolRecord::Asked(question)));
                }
                self.emit(|| AgentEvent::ToolFinished {
                    name: call.name.clone(),
                    result: match &result {
                        Ok(content) => content.text().into_owned(),
                        Err(error) => error.model_text(),
                    },
                    failed: result.is_err(),
                    call_id: call.id.clone(),
                });
                Ok(Json(match result {
                    Ok(content) => ToolRecord::Result(content),
                    Err(error) => ToolRecord::Error(error),
                }))
            })
            .name(name)
            .await;
        match record.map(Json::into_inner) {
            Ok(ToolRecord::Result(content)) => Ok(content),
            Ok(ToolRecord::Error(error)) => Err(error),
            Ok(ToolRecord::Asked(question)) => {
                let message = question.message.clone();
                self.ledger.asked(call_id, question);
                Err(ToolError::needs_human(message))
            }
            Err(terminal) => Err(ToolError::failed(format!(
                "the durable step failed: {}",
                terminal.message()
            ))),
        }
    }

    /// With events watched, the model is streamed inside its step, its text reported as
    /// it arrives.
    fn watches_text(&self) -> bool {
        self.events.is_some()
    }

    fn text_delta(&self, text: &str) {
        self.emit(|| AgentEvent::TextDelta(text.to_owned()));
    }

    /// Questions (a tool's `ctx.ask`, an MCP server's elicitation) are answered from the
    /// session's answers, or end the call for the run to wait on a person.
    fn human(&self) -> Option<Arc<dyn harness_core::Human>> {
        Some(Arc::new(LedgerHuman(Arc::clone(&self.ledger))))
    }
}

/// An error read back from the journal, of the kind it was recorded with.
fn replayed_error(kind: &str, message: String) -> Error {
    match kind {
        "provider" => Error::from(harness_core::ProviderError::new("durable", message)),
        _ => Error::new(harness_core::ErrorKind::from_name(kind), message),
    }
}

/// A run's error as the invocation's terminal failure: Restate stops retrying it.
pub(crate) fn terminal(error: &Error) -> TerminalError {
    TerminalError::new(error.to_string())
}
