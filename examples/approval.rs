//! Human approval across processes: the first invocation runs until a gated tool pauses the
//! run and saves the session to a file; the second loads it, asks you (or takes `--yes`),
//! and resumes with the approved call running.
//!
//! ```text
//! cargo run --example approval -- start session.json
//! cargo run --example approval -- resume session.json --yes
//! ```

use std::io::{BufRead, Write};

use deepharness::AgentState;
use deepharness::prelude::*;

/// Send money to a payee.
///
/// # Arguments
/// * `amount_usd` - How much, in whole dollars.
/// * `to` - Who gets it.
#[tool(requires_approval)]
fn wire_transfer(amount_usd: u64, to: String) -> String {
    format!("sent ${amount_usd} to {to}")
}

async fn agent() -> Result<Agent, Error> {
    Agent::builder(model_from_env_or_test().await?.model)
        .name("payments")
        .system("You pay invoices with the wire_transfer tool.")
        .tool(WireTransfer)
        .build()
}

fn usage() -> Error {
    Error::configuration(
        "usage: approval start <session.json> | approval resume <session.json> [--yes]",
    )
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (command, path) = match args.as_slice() {
        [command, path, ..] => (command.as_str(), path.as_str()),
        _ => return Err(usage()),
    };
    let io_error = |e: std::io::Error| Error::io(path, e);
    match command {
        "start" => {
            let state = agent().await?.run("Pay the Acme invoice.").await?;
            if state.stop_reason != deepharness::agent::StopReason::Paused {
                println!("finished without pausing: {}", state.output_text());
                return Ok(());
            }
            for pending in &state.paused {
                println!("paused: {}", pending.question);
            }
            std::fs::write(path, state.to_json()).map_err(io_error)?;
            println!("session saved to {path}");
        }
        "resume" => {
            let text = std::fs::read_to_string(path).map_err(io_error)?;
            let state = AgentState::from_json(&text)?;
            let approved = args.iter().any(|a| a == "--yes") || ask(&state);
            let state = if approved {
                state.approve(None)?
            } else {
                state.reject(None)?
            };
            let state = agent().await?.run(state).await?;
            for message in state.messages.iter().filter(|m| m.tool_call_id.is_some()) {
                println!("tool result: {}", message.text());
            }
            println!("answer: {}", state.output_text());
        }
        _ => return Err(usage()),
    }
    Ok(())
}

/// Asks on the terminal whether to approve every paused call.
fn ask(state: &AgentState) -> bool {
    for pending in &state.paused {
        println!("{}", pending.question);
    }
    print!("approve? [y/N] ");
    std::io::stdout().flush().ok();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).ok();
    matches!(line.trim(), "y" | "Y" | "yes")
}
