//! The MCP client under the official conformance suite (`cargo xtask conformance`): the
//! runner starts a test server and runs this program with the server's URL as its last
//! argument and the scenario's name in `MCP_CONFORMANCE_SCENARIO` (and, for some `auth/*`
//! scenarios, the client's credentials as JSON in `MCP_CONFORMANCE_CONTEXT`).
//!
//! For `auth/*` the server is OAuth-protected: the client signs in with `Redirect::follow_headless()`
//! (the suite's authorization endpoint redirects straight back with a code), or with the
//! client credentials the context gives.

use std::time::Duration;

use deepharness::Error;
use deepharness::agent::CallOptions;
use deepharness::errors::{McpError, McpErrorKind};
#[cfg(feature = "jwt")]
use deepharness::tools::mcp::auth::JwtAlgorithm;
use deepharness::tools::mcp::auth::{EnterpriseIdp, OAuth, Redirect};
use deepharness::tools::mcp::{
    ElicitationMode, ElicitationRequest, ElicitationResponse, McpServer,
};
use serde_json::{Value, json};

/// The client ID metadata document URL the suite's `auth/basic-cimd` expects.
const CIMD_URL: &str = "https://conformance-test.local/client-metadata.json";

/// How the client authorizes in `scenario`, `None` outside `auth/*`.
fn oauth(scenario: &str) -> Result<Option<OAuth>, Error> {
    let Some(name) = scenario.strip_prefix("auth/") else {
        return Ok(None);
    };
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    let field = |key: &str| {
        context
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| Error::configuration(format!("{scenario}: the context has no {key}")))
    };
    let headless = OAuth::new().with_redirect(Redirect::follow_headless());
    Ok(Some(match name {
        "client-credentials-basic" => {
            OAuth::client_credentials(field("client_id")?, field("client_secret")?)
        }
        #[cfg(feature = "jwt")]
        "client-credentials-jwt" => {
            let algorithm = field("signing_algorithm")?;
            let algorithm = JwtAlgorithm::from_name(&algorithm).ok_or_else(|| {
                Error::configuration(format!("unknown JWT algorithm {algorithm}"))
            })?;
            OAuth::client_credentials_jwt(field("client_id")?, field("private_key_pem")?, algorithm)
        }
        "cross-app-access-complete-flow" => OAuth::enterprise(
            EnterpriseIdp::new(
                field("idp_issuer")?,
                field("idp_token_endpoint")?,
                field("idp_client_id")?,
                field("idp_id_token")?,
            ),
            field("client_id")?,
            field("client_secret")?,
        ),
        "pre-registration" => headless
            .with_client_id(field("client_id")?)
            .with_client_secret(field("client_secret")?),
        "basic-cimd" => headless.with_client_metadata_url(CIMD_URL),
        _ => headless,
    }))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let url = std::env::args()
        .next_back()
        .ok_or_else(|| Error::configuration("usage: mcp_conformance_client <server url>"))?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    // Under the runner's own 30 s limit, so a stuck exchange fails here with a message
    // that says which request it was.
    let mut server = McpServer::http(url, &[])?;
    if let Some(oauth) = oauth(&scenario)? {
        server = server.with_oauth(oauth);
    }
    let server = server
        .with_timeout(Duration::from_secs(20))
        // A user who accepts every form as offered: the client fills in its defaults.
        .with_elicitation(|request: ElicitationRequest| async move {
            match request.mode {
                ElicitationMode::Form { .. } => ElicitationResponse::Accept(serde_json::Map::new()),
                _ => ElicitationResponse::Decline,
            }
        });
    server.connect().await?;
    match scenario.as_str() {
        "tools_call" => {
            let text = call(&server, "add_numbers", json!({"a": 2, "b": 3})).await?;
            println!("{text}");
        }
        name if name == "sse-retry"
            || name == "elicitation-sep1034-client-defaults"
            || name.starts_with("auth/") =>
        {
            // sse-retry: its tool's reply stream is dropped after a priming event; the answer
            // comes on the GET the client reconnects with. The elicitation scenario's tool
            // asks for a form and checks the defaults came back. An auth scenario's server
            // asks for authorization on the listing, and for wider scopes on the call
            // (auth/scope-step-up).
            for tool in server.list_tools().await? {
                let text = call(&server, &tool.name, json!({})).await?;
                println!("{}: {text}", tool.name);
            }
        }
        _ => {
            let tools = server.list_tools().await?;
            println!("{} tools", tools.len());
        }
    }
    server.close().await
}

/// Calls `name` and returns the text a model would read; a call the server marked failed
/// (`isError`) is an error, so the scenario fails with the server's text.
async fn call(server: &McpServer, name: &str, arguments: Value) -> Result<String, Error> {
    let result = server.call(name, arguments, CallOptions::new()).await?;
    if result.is_error {
        let message = format!("{name} failed: {}", result.text());
        return Err(McpError::with_kind(McpErrorKind::ToolFailed, message).into());
    }
    Ok(result.text())
}
