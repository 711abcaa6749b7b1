//! Streaming with typed progress events: one status line that updates in place while the
//! agent thinks and calls tools, then the answer as it arrives.
//!
//! ```text
//! cargo run --example streaming
//! ```
//!
//! Events are values (`AgentEvent::ToolStarted { name, .. }`), not sentences, so the program
//! decides what to show. On a terminal the status line is redrawn in place; piped, each
//! status is its own line. With no key set it runs on the offline `TestModel`.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use deepharness::prelude::*;
use futures_util::StreamExt as _;

/// Look up the current weather for a city.
///
/// # Arguments
/// * `city` - The city's name, in English.
#[tool]
async fn get_weather(city: String) -> String {
    // Slow enough to see the status line while it runs.
    tokio::time::sleep(Duration::from_millis(300)).await;
    format!("It is 22°C and sunny in {city}.")
}

/// Look up the local time in a city.
///
/// # Arguments
/// * `city` - The city's name, in English.
#[tool]
async fn local_time(city: String) -> String {
    tokio::time::sleep(Duration::from_millis(200)).await;
    format!("It is 14:05 in {city}.")
}

/// A one-line status display: redrawn in place on a terminal, one line per update otherwise.
struct Status {
    terminal: bool,
    shown: bool,
}

impl Status {
    fn show(&mut self, text: &str) {
        let mut out = std::io::stdout().lock();
        if self.terminal {
            // Carriage return, then clear to the end of the line.
            let _ = write!(out, "\r\x1b[K{text}");
        } else {
            let _ = writeln!(out, "{text}");
        }
        let _ = out.flush();
        self.shown = true;
    }

    fn clear(&mut self) {
        if self.terminal && self.shown {
            print!("\r\x1b[K");
        }
        self.shown = false;
    }
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let choice = model_from_env_or_test().await?;
    println!("model: {choice}");

    let agent = Agent::builder(choice.model)
        .system("You are a concise travel assistant. Use the tools you are given.")
        .tool(GetWeather)
        .tool(LocalTime)
        .build()?;

    let mut status = Status {
        terminal: std::io::stdout().is_terminal(),
        shown: false,
    };
    let mut running: Vec<String> = Vec::new();
    let mut steps = 0;
    let mut answering = false;
    let mut events = agent.stream("Is it a good time to call a friend in Lisbon?");
    while let Some(event) = events.next().await {
        match event? {
            AgentEvent::StepStarted { step } => {
                steps = step;
                status.show(&format!("[step {step}] thinking…"));
            }
            AgentEvent::ToolStarted { name, .. } => {
                running.push(name);
                status.show(&format!("running {}…", running.join(", ")));
            }
            AgentEvent::ToolFinished { name, failed, .. } => {
                running.retain(|n| *n != name);
                let outcome = if failed { "failed" } else { "done" };
                status.show(&format!("{name} {outcome}"));
            }
            AgentEvent::TextDelta(text) => {
                if !answering {
                    status.clear();
                    print!("answer: ");
                    answering = true;
                }
                print!("{text}");
                let _ = std::io::stdout().flush();
            }
            AgentEvent::Finished(state) => {
                status.clear();
                println!(
                    "\nstopped: {} after {steps} steps; {} tokens in, {} out",
                    state.stop_reason, state.usage.prompt_tokens, state.usage.completion_tokens,
                );
            }
            // Reasoning deltas, and any event a later version adds.
            _ => {}
        }
    }
    Ok(())
}
