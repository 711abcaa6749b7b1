//! A user's [`Transport`] (request, notify, close) as an rmcp transport, so it gets the same
//! timeouts, cancellation and handshake as the built-in ones.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::RoleClient;
use rmcp::model::{
    ClientJsonRpcMessage, ErrorCode, ErrorData, JsonRpcMessage, RequestId, ServerJsonRpcMessage,
};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::{McpError, McpErrorKind, Transport};

/// Where an [`McpError`] of the user's transport rides inside a JSON-RPC error, so its kind
/// survives the trip through rmcp.
const CARRIER: &str = "deepharness_transport_error";

/// The kind an adapter error carries, if `error` is one.
pub(crate) fn carried_kind(error: &ErrorData) -> Option<McpErrorKind> {
    let kind = error.data.as_ref()?.get(CARRIER)?.as_str()?;
    Some(McpErrorKind::from_name(kind))
}

type InFlight = Arc<Mutex<HashMap<RequestId, AbortHandle>>>;

/// Each request runs as its own task, so requests overlap; its answer comes back through
/// `receive`. A `notifications/cancelled` aborts the request it names.
pub(crate) struct Adapter {
    inner: Arc<dyn Transport>,
    replies_tx: mpsc::UnboundedSender<ServerJsonRpcMessage>,
    replies_rx: mpsc::UnboundedReceiver<ServerJsonRpcMessage>,
    in_flight: InFlight,
}

impl Adapter {
    pub(crate) fn new(inner: Arc<dyn Transport>) -> Self {
        let (replies_tx, replies_rx) = mpsc::unbounded_channel();
        Self {
            inner,
            replies_tx,
            replies_rx,
            in_flight: InFlight::default(),
        }
    }

    fn start_request(&self, id: RequestId, method: String, params: Value) {
        let inner = Arc::clone(&self.inner);
        let replies = self.replies_tx.clone();
        let in_flight = Arc::clone(&self.in_flight);
        // Held while spawning, so the task cannot remove its entry before it is inserted.
        let mut map = self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let task_id = id.clone();
        let task = tokio::spawn(async move {
            let reply = match inner.request(&method, params).await {
                Ok(result) => answer(&task_id, result),
                Err(error) => refusal(&task_id, &error),
            };
            let _ = replies.send(reply);
            in_flight
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&task_id);
        });
        map.insert(id, task.abort_handle());
    }

    fn cancel(&self, params: &Value) {
        let Some(id) = params
            .get("requestId")
            .and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok())
        else {
            return;
        };
        if let Some(task) = self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id)
        {
            task.abort();
        }
    }
}

fn answer(id: &RequestId, result: Value) -> ServerJsonRpcMessage {
    let message = json!({"jsonrpc": "2.0", "id": id, "result": result});
    serde_json::from_value(message).unwrap_or_else(|e| {
        refusal(
            id,
            &McpError::protocol(format!(
                "the MCP transport returned a result that is not a JSON-RPC result: {e}"
            )),
        )
    })
}

/// An error answer to request `id` that carries `error`'s kind and message through rmcp.
pub(crate) fn refusal(id: &RequestId, error: &McpError) -> ServerJsonRpcMessage {
    ServerJsonRpcMessage::error(
        ErrorData {
            code: ErrorCode::INTERNAL_ERROR,
            message: error.message().to_owned().into(),
            data: Some(json!({CARRIER: error.kind().as_str()})),
        },
        Some(id.clone()),
    )
}

/// A message's method and params, read off its JSON form.
fn method_and_params(message: &ClientJsonRpcMessage) -> (String, Value) {
    let value = serde_json::to_value(message).unwrap_or(Value::Null);
    let method = value
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let params = value.get("params").cloned().unwrap_or_else(|| json!({}));
    (method, params)
}

impl rmcp::transport::Transport<RoleClient> for Adapter {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let notify = match &item {
            JsonRpcMessage::Request(request) => {
                let (method, params) = method_and_params(&item);
                self.start_request(request.id.clone(), method, params);
                None
            }
            JsonRpcMessage::Notification(_) => {
                let (method, params) = method_and_params(&item);
                if method == "notifications/cancelled" {
                    self.cancel(&params);
                }
                Some((Arc::clone(&self.inner), method, params))
            }
            // Answers to server requests: a request/response transport never carries any.
            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => None,
        };
        async move {
            if let Some((inner, method, params)) = notify {
                inner
                    .notify(&method, params)
                    .await
                    .map_err(std::io::Error::other)?;
            }
            Ok(())
        }
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        self.replies_rx.recv().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // The user's own close() is called by McpServer::close, which reports its error.
        for (_, task) in self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
        {
            task.abort();
        }
        Ok(())
    }
}
