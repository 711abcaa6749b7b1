//! Deep research: plan a question into sub-questions, research each with its own agent (with
//! web search when `TAVILY_API_KEY` is set), and stream one report, showing progress as typed
//! events.
//!
//! ```text
//! cargo run --example research -- "Which Rust async runtimes are maintained today?"
//! ```
//!
//! With no key set it runs on the offline `TestModel` (the report is then canned text);
//! `deepharness::model_from_env_or_test` picks a real provider when one is configured.

use std::io::Write as _;

use deepharness::prebuilt::{DeepResearch, ResearchEvent};
use deepharness::prelude::*;
use deepharness::tools::TavilySearch;
use futures_util::StreamExt as _;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let query = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "Which Rust async runtimes are maintained today?".to_owned());
    let choice = model_from_env_or_test().await?;
    println!("model: {choice}");

    let mut research = DeepResearch::builder(choice.model).max_sub_questions(3);
    if std::env::var_os("TAVILY_API_KEY").is_some() {
        research = research.tool(TavilySearch::new()?.as_tool());
        println!("researchers search the web with Tavily");
    }
    let research = research.build()?;

    let mut events = research.stream(query);
    while let Some(event) = events.next().await {
        match event? {
            ResearchEvent::Planning { query } => println!("planning: {query}"),
            ResearchEvent::Planned { sub_questions } => {
                for (i, q) in sub_questions.iter().enumerate() {
                    println!("  {}. {q}", i + 1);
                }
            }
            ResearchEvent::Researching { count } => println!("researching {count} sub-questions"),
            ResearchEvent::Researched { index, question } => {
                println!("  done: {}. {question}", index + 1);
            }
            ResearchEvent::Synthesizing { findings } => {
                println!("writing the report from {findings} findings:\n");
            }
            ResearchEvent::TextDelta(text) => {
                print!("{text}");
                let _ = std::io::stdout().flush();
            }
            ResearchEvent::ResearchFinished(result) => {
                println!("\n\nusage over every agent: {:?}", result.usage);
            }
            // Events a later version adds.
            _ => {}
        }
    }
    Ok(())
}
