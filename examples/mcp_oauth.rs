//! An OAuth-protected MCP server over streamable HTTP, signed in to with the loopback
//! redirect flow: the program prints an authorization URL, you open it in a browser and sign
//! in, the browser comes back to a listener on 127.0.0.1, and the server's tools are listed.
//!
//! ```text
//! cargo run -p deepharness-examples --example mcp_oauth -- <server url>
//! ```
//!
//! Servers to try it on:
//!
//! - The Python SDK's auth example, `examples/servers/simple-auth` in its repository (not in
//!   the PyPI package; its README says how to start it: in recent versions an authorization
//!   server with a demo login page and a resource server, `--port=8001 --transport
//!   streamable-http`), then `http://127.0.0.1:8001/mcp` here. Not tried with this example
//!   yet.
//! - Any remote MCP server that asks for OAuth and allows dynamic client registration.
//! - The MCP conformance suite's auth servers (installed by `cargo xtask conformance`): they
//!   redirect back without a login page, so `curl -sL` on the printed URL plays the browser.
//!   Run a scenario with this example as the client through a small wrapper script that
//!   starts it with the URL the suite passes (its last argument) and curls the printed
//!   authorization URL:
//!
//!   ```text
//!   node target/peers/conf/node_modules/@modelcontextprotocol/conformance/dist/index.js \
//!       client --command ./wrapper.sh --scenario auth/metadata-default
//!   ```
//!
//!   Done so with `auth/metadata-default`: it signed in and listed the tools.
//!   (`examples/mcp_conformance_client.rs` signs in to them with `Redirect::follow_headless()`
//!   instead.)
//!
//! Run without a server (nothing listening at the URL, default `http://127.0.0.1:8001/mcp`),
//! it says it cannot reach the server and exits with status 1.

use std::time::Duration;

use deepharness::errors::McpError;
use deepharness::tools::mcp::McpServer;
use deepharness::tools::mcp::auth::{OAuth, Redirect};

#[tokio::main]
async fn main() {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "http://127.0.0.1:8001/mcp".to_owned());
    let oauth = OAuth::new()
        .with_client_name("deepharness mcp_oauth example")
        .with_redirect(Redirect::loopback().on_url(|url| {
            println!("Open this URL in a browser and sign in:\n\n  {url}\n");
            println!("(waiting for the browser to come back to 127.0.0.1...)");
        }));
    // The sign-in happens inside the first request: give it time for a person.
    let server = match McpServer::http(url.as_str(), &[]) {
        Ok(server) => server
            .with_oauth(oauth)
            .with_timeout(Duration::from_secs(300)),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    match server.list_tools().await {
        Ok(tools) => {
            println!("Signed in to {url}; its tools:");
            for tool in tools {
                println!("- {}: {}", tool.name, tool.description);
            }
        }
        // An MCP failure's detail is its source, an `McpError`.
        Err(e)
            if e.downcast_ref::<McpError>()
                .is_some_and(McpError::is_authorization) =>
        {
            eprintln!("Could not sign in: {e}");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!(
                "Cannot use the MCP server at {url}: {e}\n(start an OAuth-protected server \
                 there first; see the comment at the top of examples/mcp_oauth.rs)"
            );
            std::process::exit(1);
        }
    }
    let _ = server.close().await;
}
