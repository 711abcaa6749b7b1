//! An agent's run exported as OpenTelemetry GenAI spans, printed to stdout: one
//! `invoke_agent weather` span, a `chat {model}` span per model call (provider, model,
//! settings, response id, finish reasons, usage) and an `execute_tool get_weather` span per
//! tool call (its call id), errors recorded on the span they ended.
//!
//! ```text
//! cargo run -p deepharness-examples --example telemetry
//! ```
//!
//! deepharness emits `tracing` spans; `tracing-opentelemetry` turns them into OpenTelemetry
//! spans, and any OpenTelemetry exporter (OTLP to a collector, say) takes the place of the
//! stdout one here. With no key set it runs on the offline `TestModel`;
//! `model_from_env_or_test` picks a real provider when one is configured.

use deepharness::prelude::*;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::layer::SubscriberExt as _;

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
    // Spans are written as each one ends; a batch exporter suits a real collector better.
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(opentelemetry_stdout::SpanExporter::default())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("deepharness-example")));
    let _guard = tracing::subscriber::set_default(subscriber);

    let choice = model_from_env_or_test().await?;
    println!("model: {choice}");
    let agent = Agent::builder(choice.model)
        .name("weather")
        .tool(GetWeather)
        .build()?;
    let state = agent.run("What is the weather in Oslo?").await?;
    println!("answer: {}", state.output_text());

    provider
        .shutdown()
        .map_err(|e| Error::configuration(format!("the span exporter did not shut down: {e}")))
}
