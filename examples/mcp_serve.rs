//! A toolbox served as an MCP server, so any MCP client (Claude Desktop, an IDE, another
//! agent) can call its tools.
//!
//! ```text
//! cargo run --example mcp_serve                      # over stdio, for a client that starts it
//! cargo run --example mcp_serve -- http 127.0.0.1:8000   # over streamable HTTP at /mcp
//! ```
//!
//! An agent is served the same way: put it in the toolbox with `agent.as_tool()`.

use deepharness::agent::LogLevel;
use deepharness::tools::McpToolServer;
use deepharness::{Ctx, Toolbox, tool};

/// Add two integers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Count the words of a text, reporting progress as it goes.
#[tool]
async fn count_words(ctx: Ctx, text: String) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    let mut words = 0;
    for (done, line) in lines.iter().enumerate() {
        words += line.split_whitespace().count();
        #[allow(clippy::cast_precision_loss)] // a line count, far below 2^52
        ctx.progress((done + 1) as f64, Some(lines.len() as f64), None);
    }
    ctx.log(LogLevel::Info, format!("counted {words} words"));
    words
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let toolbox = Toolbox::builder().tool(Add).tool(CountWords).build()?;
    let server = McpToolServer::new(toolbox)
        .with_name("deepharness-example")
        .with_instructions("Arithmetic and word counts.");
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("http") => {
            let address = args.get(1).map_or("127.0.0.1:8000", String::as_str);
            let listener = tokio::net::TcpListener::bind(address).await?;
            // The log goes to stderr: stdout is the protocol's in stdio mode, kept clean here too.
            eprintln!("serving MCP at http://{}/mcp", listener.local_addr()?);
            server.serve_http(listener, &[]).await?;
        }
        _ => {
            eprintln!(
                "serving MCP over stdio (a client starts this program and talks on its stdin)"
            );
            server.serve_stdio().await?;
        }
    }
    Ok(())
}
