//! Elicitation: a server asking the user for input in the middle of a request. It goes to
//! the [`Human`] of the run whose call is waiting on the server, when the application
//! routes it there, else to the server's [`Elicitor`]; with neither it is declined.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use harness_core::{ElicitationMode, ElicitationRequest, ElicitationResponse, Human, async_trait};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::{Map, Value};

/// Answers a server's elicitations, for [`McpServer::with_elicitation`](super::McpServer::with_elicitation).
///
/// Any `Fn(ElicitationRequest) -> impl Future<Output = ElicitationResponse>` is one:
///
/// ```
/// use harness_tools::mcp::{ElicitationMode, ElicitationRequest, ElicitationResponse, McpServer};
///
/// # fn demo(server: McpServer) -> McpServer {
/// server.with_elicitation(|request: ElicitationRequest| async move {
///     match request.mode {
///         // Take every default the form offers.
///         ElicitationMode::Form { .. } => ElicitationResponse::Accept(serde_json::Map::new()),
///         _ => ElicitationResponse::Decline,
///     }
/// })
/// # }
/// ```
#[async_trait]
pub trait Elicitor: Send + Sync {
    /// Asks the user, and returns what they did.
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationResponse;
}

#[async_trait]
impl<F, Fut> Elicitor for F
where
    F: Fn(ElicitationRequest) -> Fut + Send + Sync,
    Fut: Future<Output = ElicitationResponse> + Send,
{
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationResponse {
        self(request).await
    }
}

/// The request as the elicitor sees it.
pub(crate) fn request(server: &str, params: ElicitRequestParams) -> ElicitationRequest {
    let (message, mode) = match params {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => (
            message,
            ElicitationMode::Form {
                schema: serde_json::to_value(&requested_schema).unwrap_or_default(),
            },
        ),
        ElicitRequestParams::UrlElicitationParams {
            message,
            url,
            elicitation_id,
            ..
        } => (
            message,
            ElicitationMode::Url {
                url,
                id: elicitation_id,
            },
        ),
        // A mode this client does not know yet reads as a URL-less page: it is declined.
        _ => (
            String::new(),
            ElicitationMode::Url {
                url: String::new(),
                id: String::new(),
            },
        ),
    };
    ElicitationRequest::new(server, message, mode)
}

/// The humans of the runs whose calls wait on one server, each for as long as its call does:
/// where the server's elicitations go when the application routes them to runs.
#[derive(Default)]
pub(crate) struct WaitingRuns {
    next: AtomicU64,
    calls: Mutex<Vec<(u64, Arc<dyn Human>)>>,
}

/// Keeps a call's human reachable until the call is over, answered or not.
pub(crate) struct Waiting {
    runs: Arc<WaitingRuns>,
    id: u64,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        lock(&self.runs.calls).retain(|(id, _)| *id != self.id);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Who a server's elicitation goes to.
pub(crate) enum Asked {
    /// No run with a human waits on the server.
    Nobody,
    /// The one human every waiting call answers to.
    Run(Arc<dyn Human>),
    /// Calls of runs with different humans wait at once. The protocol does not say which
    /// call an elicitation belongs to, so no one of them is asked.
    Ambiguous,
}

impl WaitingRuns {
    /// Files `human` as waiting on the server until the returned guard is dropped.
    pub(crate) fn enter(self: &Arc<Self>, human: Arc<dyn Human>) -> Waiting {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.calls).push((id, human));
        Waiting {
            runs: Arc::clone(self),
            id,
        }
    }

    /// Who to ask now.
    pub(crate) fn asked(&self) -> Asked {
        let calls = lock(&self.calls);
        let Some((_, first)) = calls.first() else {
            return Asked::Nobody;
        };
        // The same human behind every call (one toolbox's, one agent's) is unambiguous.
        if calls
            .iter()
            .all(|(_, human)| std::ptr::addr_eq(Arc::as_ptr(human), Arc::as_ptr(first)))
        {
            Asked::Run(Arc::clone(first))
        } else {
            Asked::Ambiguous
        }
    }
}

/// The answer sent back: an accepted form gets the schema's defaults for the fields the
/// user left out (SEP-1034).
pub(crate) fn result(mode: &ElicitationMode, response: ElicitationResponse) -> ElicitResult {
    match response {
        ElicitationResponse::Accept(mut content) => match mode {
            ElicitationMode::Form { schema } => {
                apply_defaults(schema, &mut content);
                ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
            }
            _ => ElicitResult::new(ElicitationAction::Accept),
        },
        ElicitationResponse::Decline => ElicitResult::new(ElicitationAction::Decline),
        ElicitationResponse::Cancel => ElicitResult::new(ElicitationAction::Cancel),
    }
}

/// Fills each property of `schema` missing from `content` with its `default`.
pub(crate) fn apply_defaults(schema: &Value, content: &mut Map<String, Value>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, property) in properties {
        if let Some(default) = property.get("default")
            && !content.contains_key(name)
        {
            content.insert(name.clone(), default.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form() -> ElicitRequestParams {
        serde_json::from_value(json!({
            "mode": "form",
            "message": "Who are you?",
            "requestedSchema": {"type": "object", "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
                "verified": {"type": "boolean", "default": true},
                "nickname": {"type": "string"}
            }}
        }))
        .unwrap()
    }

    #[test]
    fn an_accepted_form_takes_the_defaults_of_the_fields_left_out() {
        let request = request("srv", form());
        assert_eq!(request.message, "Who are you?");
        let mut given = Map::new();
        given.insert("name".into(), json!("Ada"));
        let answer = result(&request.mode, ElicitationResponse::Accept(given));
        assert_eq!(answer.action, ElicitationAction::Accept);
        assert_eq!(
            answer.content,
            Some(
                json!({"name": "Ada", "age": 30, "score": 95.5, "status": "active",
                        "verified": true})
            )
        );
    }

    #[test]
    fn declined_and_cancelled_carry_no_content() {
        let request = request("srv", form());
        for (response, action) in [
            (ElicitationResponse::Decline, ElicitationAction::Decline),
            (ElicitationResponse::Cancel, ElicitationAction::Cancel),
        ] {
            let answer = result(&request.mode, response);
            assert_eq!(answer.action, action);
            assert!(answer.content.is_none());
        }
    }

    #[test]
    fn a_url_elicitation_is_passed_on_and_accepted_without_content() {
        let params: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "url", "message": "Sign in", "url": "https://example.com/login",
            "elicitationId": "e-1"
        }))
        .unwrap();
        let request = request("srv", params);
        assert_eq!(
            request.mode,
            ElicitationMode::Url {
                url: "https://example.com/login".into(),
                id: "e-1".into()
            }
        );
        let answer = result(&request.mode, ElicitationResponse::Accept(Map::new()));
        assert_eq!(answer.action, ElicitationAction::Accept);
        assert!(answer.content.is_none());
    }

    struct Nobody;

    #[async_trait]
    impl Human for Nobody {
        async fn approve(&self, _: &str, _: &Value) -> bool {
            false
        }
    }

    #[test]
    fn one_human_behind_every_waiting_call_is_asked_two_are_not_guessed_between() {
        let runs = Arc::new(WaitingRuns::default());
        assert!(matches!(runs.asked(), Asked::Nobody));
        let (alice, bob): (Arc<dyn Human>, Arc<dyn Human>) = (Arc::new(Nobody), Arc::new(Nobody));
        let first = runs.enter(Arc::clone(&alice));
        let second = runs.enter(Arc::clone(&alice));
        assert!(matches!(runs.asked(), Asked::Run(h) if Arc::ptr_eq(&h, &alice)));
        let other = runs.enter(Arc::clone(&bob));
        assert!(matches!(runs.asked(), Asked::Ambiguous));
        drop((first, second));
        assert!(matches!(runs.asked(), Asked::Run(h) if Arc::ptr_eq(&h, &bob)));
        drop(other);
        assert!(matches!(runs.asked(), Asked::Nobody));
    }
}
