//! Tools without a model: turn plain functions into tools, look at the schemas a model would
//! be sent, and call them the way the agent loop does, with JSON arguments.
//!
//! ```text
//! cargo run -p deepharness-examples --example tools
//! ```

use deepharness::agent::{CallOptions, Ctx, Toolbox};
use deepharness::tool;
use deepharness::tools::approve_fn;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Temperature units.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Units {
    Celsius,
    Fahrenheit,
}

/// Look up the current weather for a city.
///
/// # Arguments
/// * `city` - The city's name, in English.
/// * `units` - Which scale to answer in.
#[tool]
fn get_weather(city: &str, #[default(Units::Celsius)] units: Units) -> String {
    match units {
        Units::Celsius => format!("It is 22°C and sunny in {city}."),
        Units::Fahrenheit => format!("It is 72°F and sunny in {city}."),
    }
}

/// Who is asking: read from the run's dependencies.
#[tool]
fn whoami(ctx: &Ctx) -> String {
    ctx.deps::<String>()
        .cloned()
        .unwrap_or_else(|| "nobody in particular".to_owned())
}

/// Send money.
#[tool(requires_approval)]
async fn wire_transfer(amount_usd: u64, to: String) -> Result<String, String> {
    if to.is_empty() {
        return Err("no recipient given".to_owned());
    }
    Ok(format!("sent ${amount_usd} to {to}"))
}

#[tokio::main]
async fn main() -> Result<(), deepharness::Error> {
    let tools = Toolbox::builder()
        .tool(GetWeather)
        .tool(Whoami)
        .tool(WireTransfer)
        // A gated call is put to this callback before it runs.
        .human(approve_fn(|_name, arguments| {
            arguments["amount_usd"].as_u64().is_some_and(|a| a <= 1_000)
        }))
        .build()?;

    println!("What a model is told:");
    for spec in tools.specs() {
        println!("{:#}", spec.to_schema());
    }

    println!("\nWhat the agent loop does with the model's calls:");
    let ctx = Ctx::new().with_deps("ada@example.com".to_owned());
    let calls = [
        ("get_weather", json!({"city": "Oslo"})),
        (
            "get_weather",
            json!({"city": "Austin", "units": "fahrenheit"}),
        ),
        ("get_weather", json!({"units": "kelvin"})),
        ("whoami", json!({})),
        ("wire_transfer", json!({"amount_usd": 250, "to": "Acme"})),
        ("wire_transfer", json!({"amount_usd": 50_000, "to": "Acme"})),
        ("wire_transfer", json!({"amount_usd": 5, "to": ""})),
        ("get_wether", json!({"city": "Oslo"})),
    ];
    for (name, arguments) in calls {
        let shown = format!("{name}({arguments})");
        // A failed call is not the end of a run: its error is what the model reads next.
        let options = CallOptions::new().with_ctx(ctx.clone());
        let result = match tools.call(name, arguments, options).await {
            Ok(content) => content.text().into_owned(),
            Err(error) => error.model_text(),
        };
        println!("{shown}\n  -> {result}");
    }
    Ok(())
}
