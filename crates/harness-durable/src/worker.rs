//! Running a worker: serving agents over HTTP/2 for Restate, and registering it.

use std::future::Future;
use std::time::Duration;

use harness_core::{Error, Result};
use restate_sdk::endpoint::Endpoint;
use restate_sdk::http_server::HttpServer;
use restate_sdk::service::ServiceDefinition;
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// Serves `services` (each [`DurableAgent::definition`](crate::DurableAgent::definition), or
/// any Restate service) on `listener` until the process gets Ctrl-C: a worker. Restate
/// speaks HTTP/2 without TLS (h2c) to it.
pub async fn serve(listener: TcpListener, services: impl IntoIterator<Item = ServiceDefinition>) {
    HttpServer::new(endpoint(services)).serve(listener).await;
}

/// As [`serve`], stopping when `shutdown` completes.
pub async fn serve_until(
    listener: TcpListener,
    services: impl IntoIterator<Item = ServiceDefinition>,
    shutdown: impl Future,
) {
    HttpServer::new(endpoint(services))
        .serve_with_cancel(listener, shutdown)
        .await;
}

fn endpoint(services: impl IntoIterator<Item = ServiceDefinition>) -> Endpoint {
    services
        .into_iter()
        .fold(Endpoint::builder(), restate_sdk::endpoint::Builder::bind)
        .build()
}

/// Registers the worker at `worker_url` (as the Restate server reaches it, e.g.
/// `http://127.0.0.1:9080`) with the Restate server whose admin API is at `admin_url` (e.g.
/// `http://127.0.0.1:9070`); the deployment's id.
///
/// Registration is forced: a worker restarted at the same address with changed code is
/// discovered again (without `force`, Restate keeps the old description and says nothing).
///
/// # Errors
/// A configuration error saying what the server answered, or that it could not be reached.
pub async fn register(admin_url: &str, worker_url: &str) -> Result<String> {
    let client = harness_providers::client_builder()?
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| Error::configuration(format!("cannot build the HTTP client: {e}")))?;
    let url = format!("{}/deployments", admin_url.trim_end_matches('/'));
    let body = json!({"uri": worker_url, "force": true}).to_string();
    let response = client
        .post(&url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .map_err(|e| {
            Error::configuration(format!(
                "cannot reach the Restate admin API at {url}: {e}; is restate-server running?"
            ))
        })?;
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    if !status.is_success() {
        return Err(Error::configuration(format!(
            "Restate refused to register {worker_url} ({status}): {text}"
        )));
    }
    let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    Ok(answer["id"].as_str().unwrap_or_default().to_owned())
}
