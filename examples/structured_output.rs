//! Structured output: the agent answers with a typed value instead of prose. The model is
//! offered a `final_answer` tool whose schema is the type's; its arguments are checked
//! against the schema (every bad field named back to the model at once) and deserialized.
//!
//! ```text
//! cargo run --example structured_output
//! ```
//!
//! With no key set it runs on the offline `TestModel`, which fills `final_answer` with
//! arguments generated from the schema (valid, but meaningless); `model_from_env` picks a
//! real provider when one is configured.

use deepharness::prelude::*;
use schemars::JsonSchema;
use serde::Deserialize;

/// How urgent a ticket is.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Priority {
    Low,
    Normal,
    Urgent,
}

/// A support ticket, triaged.
#[derive(Debug, Deserialize, JsonSchema)]
struct Triage {
    /// One line saying what the customer needs.
    summary: String,
    /// How soon someone must look at it.
    priority: Priority,
    /// Product areas the ticket touches, such as "billing" or "login".
    areas: Vec<String>,
    /// The order number, when the customer gave one.
    order_id: Option<String>,
}

const TICKET: &str = "Hi, I was charged twice for order 7731 and now I can't log in to see \
                      my invoices. Please fix this today, our payroll run is tomorrow.";

#[tokio::main]
async fn main() -> Result<(), Error> {
    let choice = model_from_env_or_test().await?;
    println!("model: {choice}");

    let agent = Agent::builder(choice.model)
        .system("You triage support tickets.")
        .output::<Triage>()
        .build()?;

    let state = agent
        .run(format!("Triage this ticket:\n\n{TICKET}"))
        .await?;
    // `output` holds the validated JSON; `output_as` turns it into the type, or says why
    // there is none (a model that never calls `final_answer` spends the step budget).
    let triage: Triage = match state.output_as() {
        Ok(triage) => triage,
        Err(error) => {
            println!("no triage: {error}");
            return Ok(());
        }
    };
    println!("summary:  {}", triage.summary);
    println!("priority: {:?}", triage.priority);
    println!("areas:    {}", triage.areas.join(", "));
    println!(
        "order:    {}",
        triage.order_id.as_deref().unwrap_or("(none given)")
    );
    Ok(())
}
