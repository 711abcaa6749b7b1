//! A durable agent worker: the agent served on Restate as the virtual object `Assistant`,
//! one object per session, every model call and tool call a journaled step, a gated call
//! waiting (suspended, no worker holding it) until someone approves it.
//!
//! ```text
//! npx @restatedev/restate-server          # in another terminal: ingress :8080, admin :9070
//! cargo run --example durable_worker      # serves on 127.0.0.1:9080 and registers itself
//!
//! curl localhost:8080/Assistant/alice/run -H 'content-type: application/json' \
//!      -d '{"message": "Pay the Acme invoice"}'
//! curl -X POST localhost:8080/Assistant/alice/pending
//! curl localhost:8080/Assistant/alice/approve -H 'content-type: application/json' \
//!      -d '{"call_id": "call_1", "approved": true}'
//! ```
//!
//! `RESTATE_ADMIN_URL` (default `http://127.0.0.1:9070`) and `WORKER_ADDR` (default
//! `127.0.0.1:9080`) move them. With no API key set it runs on the offline `TestModel`.

use deepharness::durable::{DurableAgent, register, serve};
use deepharness::prelude::*;

/// Send money to a payee. Every call waits for a human's approval.
#[tool(requires_approval)]
fn wire_transfer(amount_usd: u64, to: String) -> String {
    format!("sent ${amount_usd} to {to}")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let choice = model_from_env_or_test().await?;
    println!("model: {choice}");
    let agent = Agent::builder(choice.model)
        .system("You pay invoices with the wire_transfer tool.")
        .tool(WireTransfer)
        .build()?;
    let service = DurableAgent::new("Assistant", agent)?
        .with_events(|session, event| println!("[{session}] {event:?}"))
        .definition();

    let addr = std::env::var("WORKER_ADDR").unwrap_or_else(|_| "127.0.0.1:9080".into());
    let admin =
        std::env::var("RESTATE_ADMIN_URL").unwrap_or_else(|_| "http://127.0.0.1:9070".into());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    let worker = tokio::spawn(serve(listener, [service]));
    let deployment = register(&admin, &format!("http://{addr}")).await?;
    println!("worker on {addr}, registered with {admin} as {deployment}; Ctrl-C stops it");
    worker.await?;
    Ok(())
}
