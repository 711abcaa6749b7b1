//! Questions asked during a durable tool call (a tool's `ctx.ask`, an MCP server's
//! elicitation): the call cannot stay open for days, so the question is recorded, the call
//! ends (the asker is told `cancel`), the run suspends until a person answers, and the call
//! runs again with the answer on hand.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use harness_core::{ElicitationMode, ElicitationRequest, ElicitationResponse, Human, async_trait};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A question as the journal and `pending` keep it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    /// Who asks: the tool, or the MCP server.
    pub source: String,
    /// What is needed.
    pub message: String,
    /// The form's JSON schema, for a form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// The page to visit, for a URL question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl Question {
    fn of(request: &ElicitationRequest) -> Self {
        let (schema, url) = match &request.mode {
            ElicitationMode::Form { schema } => (Some(schema.clone()), None),
            ElicitationMode::Url { url, .. } => (None, Some(url.clone())),
            _ => (None, None),
        };
        Self {
            source: request.source.clone(),
            message: request.message.clone(),
            schema,
            url,
        }
    }
}

/// What one run knows of its calls' questions: the answers given so far (by call id, in
/// the order the call asks), the call running now, and the question a running call asked
/// that has no answer yet.
#[derive(Default)]
pub(crate) struct Ledger {
    answers: Mutex<HashMap<String, Vec<Map<String, Value>>>>,
    running: Mutex<Option<Running>>,
    /// The calls that ended on a question no answer covered, by call id (live or replayed).
    asked: Mutex<HashMap<String, Question>>,
}

struct Running {
    call_id: String,
    /// How many of the call's answers this attempt has used.
    used: usize,
    /// The first question the answers did not cover.
    unanswered: Option<Question>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Ledger {
    /// A ledger holding the answers the session has given so far.
    pub(crate) fn new(answers: HashMap<String, Vec<Map<String, Value>>>) -> Arc<Self> {
        Arc::new(Self {
            answers: Mutex::new(answers),
            running: Mutex::new(None),
            asked: Mutex::new(HashMap::new()),
        })
    }

    /// Notes that call `call_id` ended on `question` (so the run that pauses on it knows
    /// the pause is for an answer the call must run again with).
    pub(crate) fn asked(&self, call_id: &str, question: Question) {
        lock(&self.asked).insert(call_id.to_owned(), question);
    }

    /// The question call `call_id` ended on, if it did.
    pub(crate) fn question(&self, call_id: &str) -> Option<Question> {
        lock(&self.asked).get(call_id).cloned()
    }

    /// The call `call_id` starts: its questions are answered from what it was given.
    pub(crate) fn start(&self, call_id: &str) {
        *lock(&self.running) = Some(Running {
            call_id: call_id.to_owned(),
            used: 0,
            unanswered: None,
        });
    }

    /// The call is over: the question it could not have answered, if any.
    pub(crate) fn finish(&self) -> Option<Question> {
        lock(&self.running).take().and_then(|r| r.unanswered)
    }

    /// Records `fields` as the next answer of `call_id`; every answer so far, to keep.
    pub(crate) fn answer(
        &self,
        call_id: &str,
        fields: Map<String, Value>,
    ) -> HashMap<String, Vec<Map<String, Value>>> {
        let mut answers = lock(&self.answers);
        answers.entry(call_id.to_owned()).or_default().push(fields);
        answers.clone()
    }
}

/// The run's [`Human`] in a durable run: answers a call's questions from the ledger, and
/// records the first it cannot answer (telling the asker `cancel`), for the run to suspend
/// on. Approvals never reach it (a durable run pauses on them instead): it refuses them.
pub(crate) struct LedgerHuman(pub(crate) Arc<Ledger>);

#[async_trait]
impl Human for LedgerHuman {
    async fn approve(&self, _name: &str, _arguments: &Value) -> bool {
        false
    }

    async fn ask(&self, question: ElicitationRequest) -> ElicitationResponse {
        let mut running = lock(&self.0.running);
        let Some(running) = running.as_mut() else {
            return ElicitationResponse::Cancel;
        };
        let answer = lock(&self.0.answers)
            .get(&running.call_id)
            .and_then(|answers| answers.get(running.used))
            .cloned();
        match answer {
            Some(fields) => {
                running.used += 1;
                ElicitationResponse::Accept(fields)
            }
            None => {
                running
                    .unanswered
                    .get_or_insert_with(|| Question::of(&question));
                ElicitationResponse::Cancel
            }
        }
    }
}
