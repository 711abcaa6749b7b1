//! Running a worker: serving agents over HTTP/2 for Restate, and registering it.

use std::future::Future;
use std::time::Duration;

use harness_core::{Error, Result};
use hyper::server::conn::http2;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::graceful::GracefulShutdown;
use restate_sdk::endpoint::Endpoint;
use restate_sdk::hyper::HyperEndpoint;
use restate_sdk::service::ServiceDefinition;
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// Serves `services` (each [`DurableAgent::definition`](crate::DurableAgent::definition), or
/// any Restate service) on `listener` until the process gets Ctrl-C: a worker. Restate
/// speaks HTTP/2 without TLS (h2c) to it.
pub async fn serve(listener: TcpListener, services: impl IntoIterator<Item = ServiceDefinition>) {
    serve_until(listener, services, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await;
}

/// As [`serve`], stopping when `shutdown` completes: no new connections, and up to ten
/// seconds for the open ones to finish.
pub async fn serve_until(
    listener: TcpListener,
    services: impl IntoIterator<Item = ServiceDefinition>,
    shutdown: impl Future,
) {
    let endpoint = HyperEndpoint::new(endpoint(services));
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, remote)) = accepted else { continue };
                // Each journal entry is a small frame the worker waits on an answer to:
                // sent at once, not held for the peer's delayed ACK.
                let _ = stream.set_nodelay(true);
                let connection = http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), endpoint.clone());
                let connection = graceful.watch(connection);
                tokio::spawn(async move {
                    if let Err(error) = connection.await {
                        tracing::debug!(%remote, %error, "a Restate connection ended with an error");
                    }
                });
            }
            () = async { (&mut shutdown).await; } => break,
        }
    }
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(Duration::from_secs(10)) => {
            tracing::warn!("connections still open 10 s after shutdown; leaving them");
        }
    }
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
    let client = harness_providers::rest::client_builder()?
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
