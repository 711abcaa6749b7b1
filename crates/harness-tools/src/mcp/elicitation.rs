//! Elicitation: a server asking the user for input in the middle of a request. The
//! application answers through an [`Elicitor`]; with none, every request is declined.

use std::future::Future;

use harness_core::async_trait;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::{Map, Value};

/// A server's request for input from the user.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ElicitationRequest {
    /// The server asking, as errors and logs name it.
    pub server: String,
    /// What the server says it needs, to show the user.
    pub message: String,
    /// How the user answers: a form, or a page to visit.
    pub mode: ElicitationMode,
}

/// How a user answers an [`ElicitationRequest`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ElicitationMode {
    /// Fill in a form: an object schema of flat, primitive-typed properties (strings,
    /// numbers, booleans, enums), each perhaps with a `default`.
    Form {
        /// The requested schema, as the server sent it.
        schema: Value,
    },
    /// Visit a page (a sign-in, a payment) whose result the server learns by itself; the
    /// answer carries no content.
    Url {
        /// The page to open.
        url: String,
        /// The server's id for this elicitation (empty when the server sent none).
        id: String,
    },
}

/// What the user did with an [`ElicitationRequest`].
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitationResponse {
    /// The user answered: the form's fields (a field left out takes the schema's default,
    /// if it has one), or nothing for a URL.
    Accept(Map<String, Value>),
    /// The user said no; the server's operation goes on without the input.
    Decline,
    /// The user dismissed the request; the server's operation is cancelled.
    Cancel,
}

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
    ElicitationRequest {
        server: server.to_owned(),
        message,
        mode,
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
            ElicitationMode::Url { .. } => ElicitResult::new(ElicitationAction::Accept),
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
}
