//! An MCP filesystem agent: the official filesystem server's tools, started over stdio and
//! confined to one directory, used by an agent like any other tools.
//!
//! ```text
//! cargo run --example mcp_filesystem                  # a demo directory in a temp dir
//! cargo run --example mcp_filesystem -- ./notes "Which file mentions the budget?"
//! ```
//!
//! The server is `@modelcontextprotocol/server-filesystem`: the copy the test suite installs
//! into `target/peers/mcp` when present, else `npx -y` fetches it (Node.js needed). Tools the
//! server does not mark read-only are gated; this example refuses them, so the agent can
//! look but not touch. With no key set it runs on the offline `TestModel`, which calls every
//! tool once; `model_from_env_or_test` picks a real provider when one is configured (and says when it falls back). A tool name a
//! vendor would refuse is offered under a safe name; every request has a timeout, and the
//! server's whole process group is stopped on close.

use std::path::{Path, PathBuf};
use std::time::Duration;

use deepharness::agent::{AgentEvent, Toolbox};
use deepharness::prelude::*;
use deepharness::tools::{McpServer, approve_fn};
use futures_util::StreamExt as _;

const DEFAULT_TASK: &str = "What is in this directory? Summarise each file in one line.";

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = match args.first() {
        Some(dir) => std::fs::canonicalize(dir).map_err(|e| config(format!("{dir}: {e}")))?,
        None => demo_directory()?,
    };
    let task = args.get(1).map_or(DEFAULT_TASK, String::as_str);

    let mut command = server_command();
    command.push(dir.to_string_lossy().into_owned());
    println!("server: {}", command.join(" "));
    // `npx -y` may download the server before it can answer: more than the 60 s default.
    let server = McpServer::stdio(command)?
        .with_roots(vec![dir.clone()])
        .with_timeout(Duration::from_secs(120));
    let tools = server.tools().await?;
    println!(
        "tools: {}",
        tools
            .iter()
            .map(|t| t.spec().name.clone())
            .collect::<Vec<_>>()
            .join(", ")
    );

    let toolbox = Toolbox::builder()
        .tools(tools)
        // Gated (not read-only) tools come here; this agent may only look.
        .human(approve_fn(|name, _arguments| {
            println!("  refused {name}: this agent is read-only");
            false
        }))
        .build()?;
    let agent = Agent::builder(model_from_env_or_test().await?.model)
        .system(format!(
            "You answer questions about the files in {}. Use the tools; paths are absolute.",
            dir.display()
        ))
        .toolbox(toolbox)
        .build()?;

    let mut events = agent.stream(task);
    while let Some(event) = events.next().await {
        match event? {
            AgentEvent::ToolStarted { name, .. } => println!("→ {name}"),
            AgentEvent::ToolFinished { result, .. } => {
                println!("← {}", result.lines().next().unwrap_or(""));
            }
            AgentEvent::Finished(state) => println!("\nanswer: {}", state.output_text()),
            _ => {}
        }
    }
    // Ends the server process; dropping the last handle would too.
    server.close().await?;
    Ok(())
}

/// The filesystem server: the test suite's installed copy if there is one, else `npx`.
fn server_command() -> Vec<String> {
    let installed = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../target/peers/mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
    );
    if installed.exists() {
        vec!["node".to_owned(), installed.to_string_lossy().into_owned()]
    } else {
        ["npx", "-y", "@modelcontextprotocol/server-filesystem"]
            .map(str::to_owned)
            .to_vec()
    }
}

fn config(message: String) -> Error {
    Error::configuration(message)
}

/// A few files to look at, in a fresh temporary directory.
fn demo_directory() -> Result<PathBuf, Error> {
    let dir = std::env::temp_dir().join(format!("deepharness-mcp-{}", std::process::id()));
    let files = [
        ("plan.md", "# Q3 plan\n\nShip the importer. Budget: 40k.\n"),
        ("todo.txt", "- review the importer\n- book the offsite\n"),
    ];
    std::fs::create_dir_all(&dir)
        .and_then(|()| {
            files
                .iter()
                .try_for_each(|(name, text)| std::fs::write(dir.join(name), text))
        })
        .and_then(|()| std::fs::canonicalize(&dir))
        .map_err(|e| config(format!("cannot create {}: {e}", dir.display())))
}
