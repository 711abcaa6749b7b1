//! [`DurableAgent`]: an agent as a Restate virtual object, one object per session.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use harness_core::agent::{AgentState, PendingHumanInput, StopReason};
use harness_core::{Agent, AgentEvent, Message, RunInput, TokenUsage};
use restate_sdk::context::{
    ContextAwakeables as _, ContextReadState as _, ContextWriteState as _, ObjectContext,
    SharedObjectContext,
};
use restate_sdk::discovery;
use restate_sdk::endpoint::{self, ContextInternal, ServiceOptions};
use restate_sdk::errors::{HandlerError, HandlerResult, TerminalError};
use restate_sdk::serde::Json;
use restate_sdk::service::macro_support::{ServiceBoxFuture, service_definition};
use restate_sdk::service::{Service, ServiceDefinition};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::elicit::{Ledger, Question};
use crate::journal::{DEFAULT_MODEL_RETRIES, EventSink, RestateJournal, terminal};

/// The object's state key holding the session's [`AgentState`] (its JSON text).
const STATE: &str = "state";
/// The object's state key holding the calls the session's run waits on.
const WAITING: &str = "waiting";
/// The object's state key holding the answers given to questions asked during calls.
const ANSWERS: &str = "answers";

/// What `run` takes: the user's next message.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRequest {
    /// The user's message.
    pub message: String,
}

/// What `run` answers: the run's output, why it stopped, what it used.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunReply {
    /// The answer: text, or the structured output as JSON.
    pub output: Value,
    /// Why the run stopped.
    pub stop_reason: StopReason,
    /// The tokens the session has used so far.
    pub usage: TokenUsage,
    /// How many messages the session's transcript holds.
    pub messages: usize,
}

/// A call the session's run waits on, as `pending` lists it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Waiting {
    /// The model's id for the call: what `approve` and `answer` name.
    pub call_id: Option<String>,
    /// The tool's name.
    pub name: String,
    /// What the human is asked.
    pub question: String,
    /// The arguments the call will run with, for an approval; `None` for a question.
    pub arguments: Option<Map<String, Value>>,
    /// The question the call asked while it ran (a form or a page), when it did: answer it
    /// with `fields`, and the call runs again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked: Option<Question>,
    /// The Restate awakeable the run is suspended on.
    pub awakeable: String,
}

/// What `approve` takes: the call to rule on and the ruling.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Approval {
    /// The call; `None` rules on every approval the run waits on.
    #[serde(default)]
    pub call_id: Option<String>,
    /// Run it (`true`) or tell the model it was not approved (`false`).
    pub approved: bool,
}

/// What `answer` takes: the question's call and the human's answer.
///
/// A tool's plain question (`ToolError::needs_human`) takes `answer`, which becomes the
/// call's result. A question asked *during* the call (`ctx.ask`, an MCP server's
/// elicitation; [`Waiting::asked`] is set) takes `fields`, the form's answer (nothing for a
/// page to visit): the call runs again and gets them when it asks.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Answer {
    /// The call that asked.
    pub call_id: String,
    /// The answer to a plain question.
    #[serde(default)]
    pub answer: Option<String>,
    /// The fields answering a question asked during the call.
    #[serde(default)]
    pub fields: Option<Map<String, Value>>,
}

/// How a waiting call was settled, as its awakeable carries it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Ruling {
    Approved(bool),
    Answered(String),
    Filled(Map<String, Value>),
}

/// An [`Agent`] served as a Restate virtual object: each key is a session, whose
/// [`AgentState`] lives in the object's state.
///
/// Handlers (call them over Restate's ingress, `POST /<name>/<session>/<handler>`):
///
/// - `run` (exclusive: one at a time per session, sessions in parallel) takes
///   `{"message": ".."}`, runs the agent on the session's transcript with every model and
///   tool call a journaled step ([`RestateJournal`]), and answers a
///   [`RunReply`]. A call that needs a human (a gated call, a tool's question) suspends the
///   run on a Restate awakeable: no worker holds it while it waits, and it goes on, on
///   whichever worker Restate picks, once `approve` or `answer` settles it.
/// - `approve` (shared) takes an [`Approval`]; `answer` (shared) takes an [`Answer`].
/// - `pending` (shared) lists the calls the run waits on ([`Waiting`]); `state` (shared)
///   gives the session's whole [`AgentState`] as JSON.
///
/// ```no_run
/// use harness_core::{Agent, testing::TestModel};
/// use harness_durable::{DurableAgent, serve};
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let agent = Agent::builder(TestModel::new()).build()?;
/// let service = DurableAgent::new("Assistant", agent)?.definition();
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:9080").await?;
/// serve(listener, [service]).await;
/// # Ok(()) }
/// ```
pub struct DurableAgent {
    name: discovery::ServiceName,
    agent: Arc<Agent>,
    events: Option<Arc<EventSink>>,
    model_retries: u32,
    inactivity_timeout: Option<Duration>,
    abort_timeout: Duration,
}

impl DurableAgent {
    /// Serves `agent` as the virtual object `name` (a Restate service name: letters, digits,
    /// `_`, `.` and `-`, starting with a letter).
    ///
    /// # Errors
    /// A configuration error naming the problem when `name` is not a valid service name.
    pub fn new(name: impl Into<String>, agent: Agent) -> harness_core::Result<Self> {
        let name = service_name(name.into())?;
        Ok(Self {
            name,
            agent: Arc::new(agent),
            events: None,
            model_retries: DEFAULT_MODEL_RETRIES,
            inactivity_timeout: None,
            abort_timeout: Duration::from_secs(30 * 60),
        })
    }

    /// Reports each run's events with its session's key: `StepStarted`, the model's text as
    /// it arrives (the model is then streamed inside its step), `ToolStarted`,
    /// `ToolFinished`. Reported from inside the steps, so only when a step
    /// really runs (never on a replay); a step retried after a crash reports again.
    #[must_use]
    pub fn with_events(
        mut self,
        events: impl Fn(&str, &AgentEvent) + Send + Sync + 'static,
    ) -> Self {
        self.events = Some(Arc::new(events));
        self
    }

    /// How many times a model call whose failure may pass (timeout, refused connection, 429,
    /// 5xx, after the HTTP client's own retries) is tried before the run fails. Default 5.
    #[must_use]
    pub fn with_model_retries(mut self, attempts: u32) -> Self {
        self.model_retries = attempts.max(1);
        self
    }

    /// How long Restate lets a run sit idle (waiting on a human) before it suspends it and
    /// frees the worker; Restate's default (one minute) when unset.
    #[must_use]
    pub fn with_inactivity_timeout(mut self, timeout: Duration) -> Self {
        self.inactivity_timeout = Some(timeout);
        self
    }

    /// How long a step may still run after the inactivity timeout before Restate aborts the
    /// attempt (and runs the step again): bound it above your slowest model call. Default
    /// 30 minutes.
    #[must_use]
    pub fn with_abort_timeout(mut self, timeout: Duration) -> Self {
        self.abort_timeout = timeout;
        self
    }

    /// The Restate service definition, to `bind` on an endpoint (or hand to [`serve`](crate::serve)).
    #[must_use]
    pub fn definition(self) -> ServiceDefinition {
        let mut options = ServiceOptions::new().abort_timeout(self.abort_timeout);
        if let Some(timeout) = self.inactivity_timeout {
            options = options.inactivity_timeout(timeout);
        }
        let discovery = describe(self.name.clone());
        service_definition(Dispatcher(Arc::new(self)), discovery).options(options)
    }
}

/// The object's handlers: what the manifest says and what `handle` dispatches on.
const HANDLERS: [(&str, bool); 5] = [
    ("run", false),
    ("approve", true),
    ("answer", true),
    ("pending", true),
    ("state", true),
];

/// `name` as a Restate service name, when Restate accepts it.
pub(crate) fn service_name(name: String) -> harness_core::Result<discovery::ServiceName> {
    discovery::ServiceName::try_from(name.clone()).map_err(|_| {
        harness_core::Error::configuration(format!(
            "'{name}' is not a Restate service name: use letters, digits, '_', '.' and '-', \
             starting with a letter (or '_' and a letter or digit)"
        ))
    })
}

/// A handler's entry in the service manifest: JSON in (or nothing) and JSON out.
pub(crate) fn handler(name: &'static str, shared: bool, takes_input: bool) -> discovery::Handler {
    discovery::Handler {
        name: discovery::HandlerName::try_from(name)
            .unwrap_or_else(|_| unreachable!("this crate's handler names are valid")),
        input: Some(if takes_input {
            discovery::InputPayload::from_metadata::<Json<Value>>()
        } else {
            discovery::InputPayload::empty()
        }),
        output: Some(discovery::OutputPayload::from_metadata::<Json<Value>>()),
        ty: shared.then_some(discovery::HandlerType::Shared),
        documentation: None,
        metadata: HashMap::default(),
        abort_timeout: None,
        inactivity_timeout: None,
        journal_retention: None,
        idempotency_retention: None,
        workflow_completion_retention: None,
        enable_lazy_state: None,
        ingress_private: None,
        retry_policy_initial_interval: None,
        retry_policy_max_interval: None,
        retry_policy_max_attempts: None,
        retry_policy_exponentiation_factor: None,
        retry_policy_on_max_attempts: None,
    }
}

fn describe(name: discovery::ServiceName) -> discovery::Service {
    let handlers = HANDLERS
        .iter()
        .map(|&(name, shared)| handler(name, shared, name != "pending" && name != "state"))
        .collect();
    discovery::Service {
        ty: discovery::ServiceType::VirtualObject,
        name,
        handlers,
        documentation: Some("A deepharness agent; each key is a session.".to_owned()),
        metadata: HashMap::default(),
        abort_timeout: None,
        inactivity_timeout: None,
        journal_retention: None,
        idempotency_retention: None,
        enable_lazy_state: None,
        ingress_private: None,
        retry_policy_initial_interval: None,
        retry_policy_max_interval: None,
        retry_policy_max_attempts: None,
        retry_policy_exponentiation_factor: None,
        retry_policy_on_max_attempts: None,
    }
}

struct Dispatcher(Arc<DurableAgent>);

impl Service for Dispatcher {
    type Future = ServiceBoxFuture;

    fn handle(&self, ctx: ContextInternal) -> Self::Future {
        let durable = Arc::clone(&self.0);
        Box::pin(async move {
            match ctx.handler_name() {
                "run" => {
                    let (Json(request), meta) = ctx.input::<Json<RunRequest>>().await;
                    let octx: ObjectContext<'_> = (&ctx, meta).into();
                    let result = durable.run(&octx, request).await.map(Json);
                    ctx.handle_handler_result(result);
                }
                "approve" => {
                    let (Json(approval), meta) = ctx.input::<Json<Approval>>().await;
                    let sctx: SharedObjectContext<'_> = (&ctx, meta).into();
                    let result = settle(&sctx, approval.call_id.as_deref(), |w| {
                        w.arguments
                            .is_some()
                            .then_some(Ruling::Approved(approval.approved))
                    })
                    .await
                    .map(Json);
                    ctx.handle_handler_result(result);
                }
                "answer" => {
                    let (Json(answer), meta) = ctx.input::<Json<Answer>>().await;
                    let sctx: SharedObjectContext<'_> = (&ctx, meta).into();
                    let result = settle(&sctx, Some(&answer.call_id), |w| {
                        // An approval is not answered; a question asked during the call
                        // takes fields, a plain question a text.
                        match (&w.arguments, &w.asked, &answer.answer) {
                            (None, Some(_), _) => {
                                Some(Ruling::Filled(answer.fields.clone().unwrap_or_default()))
                            }
                            (None, None, Some(text)) => Some(Ruling::Answered(text.clone())),
                            _ => None,
                        }
                    })
                    .await
                    .map(Json);
                    ctx.handle_handler_result(result);
                }
                "pending" => {
                    let ((), meta) = ctx.input::<()>().await;
                    let sctx: SharedObjectContext<'_> = (&ctx, meta).into();
                    let result = waiting(&sctx).await.map(Json);
                    ctx.handle_handler_result(result);
                }
                "state" => {
                    let ((), meta) = ctx.input::<()>().await;
                    let sctx: SharedObjectContext<'_> = (&ctx, meta).into();
                    let result = sctx
                        .get::<String>(STATE)
                        .await
                        .map_err(HandlerError::from)
                        .and_then(|saved| match saved {
                            Some(saved) => serde_json::from_str::<Value>(&saved)
                                .map_err(|e| TerminalError::new(e.to_string()).into()),
                            None => Ok(Value::Null),
                        })
                        .map(Json);
                    ctx.handle_handler_result(result);
                }
                _ => {
                    return Err(endpoint::Error::unknown_handler(
                        ctx.service_name(),
                        ctx.handler_name(),
                    ));
                }
            }
            ctx.end();
            Ok(())
        })
    }
}

impl DurableAgent {
    /// The session's next run: its message added to the transcript, the agent run with
    /// every step journaled, suspended on an awakeable for each call that needs a human.
    async fn run(&self, ctx: &ObjectContext<'_>, request: RunRequest) -> HandlerResult<RunReply> {
        let mut state = match ctx.get::<String>(STATE).await? {
            Some(saved) => AgentState::from_json(&saved).map_err(|e| terminal(&e))?,
            None => AgentState::new(),
        };
        state.messages.push(Message::user(request.message));
        let answers = ctx
            .get::<Json<HashMap<String, Vec<Map<String, Value>>>>>(ANSWERS)
            .await?
            .map(Json::into_inner)
            .unwrap_or_default();
        let ledger = Ledger::new(answers);
        loop {
            let journal = RestateJournal::new(ctx, ctx.key())
                .with_events(self.events.clone())
                .with_model_retries(self.model_retries)
                .with_ledger(Arc::clone(&ledger));
            state = match self
                .agent
                .run(RunInput::new(state).with_journal(&journal))
                .await
            {
                Ok(state) => state,
                Err(failed) => {
                    // The run so far is kept, so the session can go on after the error.
                    let (error, so_far) = failed.into_parts();
                    ctx.set(STATE, so_far.to_json());
                    return Err(terminal(&error).into());
                }
            };
            if state.stop_reason != StopReason::Paused {
                break;
            }
            state = self.wait_for_humans(ctx, state, &ledger).await?;
        }
        ctx.set(STATE, state.to_json());
        // Answers serve the calls of this run only: the next run's calls are new.
        ctx.clear(ANSWERS);
        Ok(RunReply {
            output: state.output.clone(),
            stop_reason: state.stop_reason,
            usage: state.usage,
            messages: state.messages.len(),
        })
    }

    /// Suspends on one awakeable per paused call until `approve` or `answer` settles each,
    /// then applies the rulings to `state`.
    async fn wait_for_humans(
        &self,
        ctx: &ObjectContext<'_>,
        mut state: AgentState,
        ledger: &Ledger,
    ) -> HandlerResult<AgentState> {
        let mut awaiting = Vec::new();
        let mut listed = Vec::new();
        for pending in &state.paused {
            let (awakeable, ruling) = ctx.awakeable::<Json<Ruling>>();
            let asked = pending
                .call_id
                .as_deref()
                .and_then(|id| ledger.question(id));
            listed.push(waiting_entry(pending, asked, &awakeable));
            awaiting.push((pending.clone(), ruling));
        }
        // Visible to `pending`, `approve` and `answer` at once, while this run waits.
        ctx.set(WAITING, Json(listed));
        ctx.set(STATE, state.to_json());
        for (pending, ruling) in awaiting {
            let ruling = ruling.await?.into_inner();
            let call_id = pending.call_id.as_deref();
            state = match ruling {
                Ruling::Approved(true) => state.approve(call_id),
                Ruling::Approved(false) => state.reject(call_id),
                Ruling::Answered(answer) => {
                    let mut message = Message::tool(answer, &pending.name);
                    if let Some(id) = call_id {
                        message = message.with_call_id(id);
                    }
                    state.messages.push(message);
                    Ok(state)
                }
                Ruling::Filled(fields) => {
                    let id = call_id.unwrap_or_default();
                    ctx.set(ANSWERS, Json(ledger.answer(id, fields)));
                    run_again(&mut state, &pending);
                    Ok(state)
                }
            }
            .map_err(|e| terminal(&e))?;
        }
        ctx.clear(WAITING);
        Ok(state)
    }
}

fn waiting_entry(pending: &PendingHumanInput, asked: Option<Question>, awakeable: &str) -> Waiting {
    Waiting {
        call_id: pending.call_id.clone(),
        name: pending.name.clone(),
        question: pending.question.clone(),
        arguments: pending.arguments.clone(),
        asked,
        awakeable: awakeable.to_owned(),
    }
}

/// Turns the paused question of `pending` into an approved call, so the run runs it again
/// (with its answer now on hand) before anything else: the call's arguments are read back
/// from the model's turn in the transcript.
fn run_again(state: &mut AgentState, pending: &PendingHumanInput) {
    let arguments = state
        .messages
        .iter()
        .rev()
        .flat_map(|m| m.tool_calls.iter())
        .find(|c| c.id == pending.call_id)
        .map(|c| c.arguments.clone())
        .unwrap_or_default();
    state.paused.retain(|p| p.call_id != pending.call_id);
    state.paused.push(PendingHumanInput {
        call_id: pending.call_id.clone(),
        name: pending.name.clone(),
        question: pending.question.clone(),
        arguments: Some(arguments),
        approved: Some(true),
    });
}

/// The calls the session's run waits on.
async fn waiting(ctx: &SharedObjectContext<'_>) -> HandlerResult<Vec<Waiting>> {
    Ok(ctx
        .get::<Json<Vec<Waiting>>>(WAITING)
        .await?
        .map(Json::into_inner)
        .unwrap_or_default())
}

/// Resolves the awakeable of each waiting call named `call_id` (every one when `None`) that
/// `ruling` accepts; how many were settled.
async fn settle(
    ctx: &SharedObjectContext<'_>,
    call_id: Option<&str>,
    ruling: impl Fn(&Waiting) -> Option<Ruling>,
) -> HandlerResult<usize> {
    let waiting = waiting(ctx).await?;
    let mut settled = 0;
    for entry in &waiting {
        if call_id.is_some_and(|id| entry.call_id.as_deref() != Some(id)) {
            continue;
        }
        if let Some(ruling) = ruling(entry) {
            ctx.resolve_awakeable(&entry.awakeable, Json(ruling));
            settled += 1;
        }
    }
    if settled == 0 {
        let listed: Vec<&str> = waiting
            .iter()
            .filter_map(|w| w.call_id.as_deref())
            .collect();
        return Err(TerminalError::new_with_code(
            404,
            format!(
                "no call {} of that kind waits on session '{}'; waiting: [{}]",
                call_id.unwrap_or("(any)"),
                ctx.key(),
                listed.join(", ")
            ),
        )
        .into());
    }
    Ok(settled)
}

#[cfg(test)]
mod tests {
    use super::service_name;

    #[test]
    fn a_service_name_restate_refuses_is_a_configuration_error_naming_it() {
        assert!(service_name("Assistant".into()).is_ok());
        assert!(service_name("billing.Agent_2".into()).is_ok());
        for bad in ["", "2fast", "has space", "a/b"] {
            let error = service_name(bad.into()).unwrap_err();
            assert!(error.is_configuration(), "{bad}");
            assert!(error.to_string().contains(&format!("'{bad}'")), "{error}");
        }
    }
}
