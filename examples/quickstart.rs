//! A weather agent: the model asks for the weather tool, reads its result and answers.
//!
//! ```text
//! cargo run --example quickstart
//! ```
//!
//! With no key set it runs on the offline `TestModel`, which calls every tool once and
//! answers with what they returned; `deepharness::model_from_env_or_test` picks a real provider when
//! one is configured.

use deepharness::prelude::*;

/// Look up the current weather for a city.
///
/// # Arguments
/// * `city` - The city's name, in English.
#[tool]
fn get_weather(city: String) -> String {
    format!("It is 22°C and sunny in {city}.")
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    // DEEPHARNESS_MODEL=provider:model, else the first API key set, else a local server,
    // else the offline TestModel.
    let choice = model_from_env_or_test().await?;
    println!("model: {choice}");

    let agent = Agent::builder(choice.model)
        .system("You are a concise assistant. Use the tools you are given.")
        .tool(GetWeather)
        .build()?;

    let state = agent.run("What is the weather in Oslo?").await?;
    println!("stop reason: {}", state.stop_reason);
    println!("answer: {}", state.output_text());
    println!("usage: {:?}", state.usage);
    Ok(())
}
