//! What a run costs, counted before it starts and priced after, and a run stopped by its
//! money limit.
//!
//! ```text
//! cargo run --example cost
//! ```
//!
//! It runs offline, on the `TestModel` priced as `gpt-4o-mini` is in the built-in price
//! table (the table is read through an OpenAI model that is built but never called). See the
//! guide's cost chapter.

use deepharness::prelude::*;
use deepharness::providers::{Prices, Request};
use deepharness::{Budget, Llm, Message, OpenAi, testing::TestModel};

/// Search the product documentation.
///
/// # Arguments
/// * `query` - What to look for.
#[tool]
fn search_docs(query: String) -> String {
    format!("3 pages match '{query}': installing, configuring, upgrading.")
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    // What gpt-4o-mini charges, from the table: building the model sends nothing.
    let table = OpenAi::builder("gpt-4o-mini").api_key("unused").build()?;
    let Some(prices) = table.info().prices else {
        return Err(Error::configuration("the price table has no gpt-4o-mini"));
    };
    println!(
        "gpt-4o-mini: {} in, {} cached, {} out, per million tokens",
        prices.input, prices.cache_read, prices.output
    );

    // How big the prompt is before it is sent (the test model estimates it).
    let model = TestModel::new().with_prices(prices);
    let prompt = [Message::user("How do I upgrade?")];
    let count = model.count_tokens(Request::new(&prompt)).await?;
    println!(
        "prompt: {} tokens ({})",
        count.tokens,
        if count.exact { "counted" } else { "estimated" }
    );

    // A run, and what it cost: each model call's usage at the model's prices.
    let agent = Agent::builder(model).tool(SearchDocs).build()?;
    let state = agent.run("How do I upgrade?").await?;
    println!("stop reason: {}", state.stop_reason);
    println!("usage: {} tokens", state.usage.total_tokens);
    println!("cost: {}", state.cost);

    // The same run on a dearer model, held to a tenth of a cent: it stops, Ok, at the
    // limit, with the turn that crossed it kept and its tool call not run.
    let dear = TestModel::new().with_prices(Prices::per_million(30.0, 150.0));
    let agent = Agent::builder(dear)
        .tool(SearchDocs)
        .budget(Budget::new().with_max_cost(0.001))
        .build()?;
    let state = agent.run("How do I upgrade?").await?;
    println!(
        "stopped: {} at {} (limit $0.001)",
        state.stop_reason,
        state.cost.total()
    );
    Ok(())
}
