//! JSON-RPC framing and the client's side of the MCP handshake, shared by the transports.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::McpError;

/// The protocol version asked for.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// Versions accepted in the server's answer.
pub const SUPPORTED_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];

/// A request of ours.
pub(crate) fn request(id: u64, method: &str, params: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A notification of ours.
pub(crate) fn notification(method: &str, params: &Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

/// What one message from the server is.
pub(crate) enum Incoming {
    /// The answer to our request `id`.
    Response {
        id: u64,
        outcome: Result<Value, McpError>,
    },
    /// A request of the server's, to be answered.
    Request { id: Value, method: String },
    /// A notification, or anything else.
    Other,
}

pub(crate) fn classify(message: &Value, method: &str) -> Incoming {
    let id = message.get("id");
    if let Some(server_method) = message.get("method").and_then(Value::as_str) {
        return match id {
            Some(id) if !id.is_null() => Incoming::Request {
                id: id.clone(),
                method: server_method.to_owned(),
            },
            _ => Incoming::Other,
        };
    }
    let Some(id) = id.and_then(Value::as_u64) else {
        return Incoming::Other;
    };
    let outcome = if let Some(error) = message.get("error") {
        Err(McpError::new(format!(
            "MCP server refused {method}: {} (code {})",
            error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("no message"),
            error
                .get("code")
                .map_or_else(|| "?".to_owned(), Value::to_string)
        )))
    } else {
        match message.get("result") {
            Some(result) if result.is_object() => Ok(result.clone()),
            _ => Err(McpError::new(format!(
                "MCP server returned no result for {method}"
            ))),
        }
    };
    Incoming::Response { id, outcome }
}

/// The client's answer to a server request: `ping` and `roots/list` are served; anything
/// else is refused with -32601 (method not found).
pub(crate) fn answer(id: &Value, method: &str, roots: &[PathBuf]) -> Value {
    match method {
        "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
        "roots/list" => {
            let roots: Vec<Value> = roots
                .iter()
                .map(|root| {
                    json!({
                        "uri": format!("file://{}", root.display()),
                        "name": root.file_name().map_or_else(|| root.display().to_string(), |n| n.to_string_lossy().into_owned()),
                    })
                })
                .collect();
            json!({"jsonrpc": "2.0", "id": id, "result": {"roots": roots}})
        }
        other => json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": -32601, "message": format!("method not found: {other}")},
        }),
    }
}
