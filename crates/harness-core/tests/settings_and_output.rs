//! Model settings through the agent (the run's over the agent's, setting by setting), and a
//! structured output asked of a model that takes the schema natively: the schema goes in
//! the request, no `final_answer` tool is offered, the JSON answer is checked and read, and
//! an answer that does not fit is sent back with its problems.

#![allow(missing_docs, clippy::unwrap_used, clippy::panic)]

use harness_core::agent::{Agent, RunInput};
use harness_core::testing::ScriptedModel;
use harness_core::{CompletionResponse, ModelSettings, ToolChoice};
#[cfg(feature = "output")]
use harness_core::{
    FinishReason, ModelInfo, Role, Supports, agent::StopReason, testing::FunctionModel, tool,
};

#[cfg(feature = "output")]
#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct Forecast {
    city: String,
    celsius: i32,
}

/// Look up the weather.
#[cfg(feature = "output")]
#[tool]
fn weather(city: String) -> String {
    format!("22 in {city}")
}

#[tokio::test]
async fn the_runs_settings_sit_over_the_agents_one_by_one() {
    let model = std::sync::Arc::new(ScriptedModel::new([
        CompletionResponse::text("a"),
        CompletionResponse::text("b"),
    ]));
    let agent = Agent::builder(model.clone())
        .settings(
            ModelSettings::new()
                .with_temperature(0.7)
                .with_max_tokens(300),
        )
        .build()
        .unwrap();
    agent.run("plain").await.unwrap();
    let input = RunInput::from("narrow").with_settings(
        ModelSettings::new()
            .with_temperature(0.0)
            .with_tool_choice(ToolChoice::None),
    );
    agent.run(input).await.unwrap();
    let records = model.records();
    assert_eq!(records[0].settings.temperature, Some(0.7));
    assert_eq!(records[0].settings.max_tokens, Some(300));
    assert_eq!(records[1].settings.temperature, Some(0.0));
    assert_eq!(records[1].settings.max_tokens, Some(300));
    assert_eq!(records[1].settings.tool_choice, Some(ToolChoice::None));
    assert!(records.iter().all(|r| r.output.is_none()));
}

#[cfg(feature = "output")]
#[tokio::test]
async fn a_native_model_gets_the_schema_and_answers_in_json() {
    let model = FunctionModel::new(|request| {
        // The schema is in the request, and no final_answer tool is offered.
        let output = request.output.expect("the schema goes with the request");
        assert_eq!(output.name, "Forecast");
        assert!(request.tools.iter().all(|t| t.name != "final_answer"));
        if request.messages.iter().any(|m| m.role == Role::Tool) {
            CompletionResponse::text(r#"{"city": "Oslo", "celsius": 22}"#)
        } else {
            CompletionResponse::from_tool_calls(vec![
                harness_core::ToolCall::new("weather", serde_json::json!({"city": "Oslo"}))
                    .with_id("w1"),
            ])
        }
    })
    .with_structured_output(true);
    let agent = Agent::builder(model)
        .tool(Weather)
        .output::<Forecast>()
        .build()
        .unwrap();
    let state = agent.run("Weather in Oslo?").await.unwrap();
    assert_eq!(state.stop_reason, StopReason::Answer);
    assert_eq!(
        state.output_as::<Forecast>().unwrap(),
        Forecast {
            city: "Oslo".into(),
            celsius: 22
        }
    );
    // No final_answer call anywhere.
    assert!(
        state
            .messages
            .iter()
            .flat_map(|m| &m.tool_calls)
            .all(|c| c.name != "final_answer")
    );
}

#[cfg(feature = "output")]
#[tokio::test]
async fn a_native_answer_that_does_not_fit_is_sent_back_with_its_problems() {
    let model = std::sync::Arc::new(ScriptedModel::new([
        CompletionResponse::text("It is warm in Oslo."),
        CompletionResponse::text(r#"{"city": "Oslo", "celsius": "warm"}"#),
        CompletionResponse::text("```json\n{\"city\": \"Oslo\", \"celsius\": 22}\n```"),
    ]));
    let native: std::sync::Arc<dyn harness_core::Llm> = std::sync::Arc::new(Native(model.clone()));
    let agent = Agent::builder(native).output::<Forecast>().build().unwrap();
    let state = agent.run("Weather?").await.unwrap();
    assert_eq!(state.output_as::<Forecast>().unwrap().celsius, 22);
    let asks: Vec<String> = state
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .skip(1)
        .map(|m| m.text().to_string())
        .collect();
    assert_eq!(asks.len(), 2);
    assert!(
        asks[0].starts_with(
            "Your answer does not fit the schema. Answer again, with JSON only. Problems:"
        ),
        "{}",
        asks[0]
    );
    assert!(asks[0].contains("the answer is not JSON"), "{}", asks[0]);
    assert!(asks[1].contains("celsius"), "{}", asks[1]);
    assert!(model.records().iter().all(|r| r.output.is_some()));
}

#[cfg(feature = "output")]
#[tokio::test]
async fn a_native_answer_cut_at_the_output_limit_is_truncated_not_parsed() {
    let model = ScriptedModel::new([
        CompletionResponse::text(r#"{"city": "Os"#).with_finish_reason(FinishReason::Length)
    ]);
    let agent = Agent::builder(Native(std::sync::Arc::new(model)))
        .output::<Forecast>()
        .build()
        .unwrap();
    let state = agent.run("Weather?").await.unwrap();
    assert_eq!(state.stop_reason, StopReason::Truncated);
    assert_eq!(state.output_text(), r#"{"city": "Os"#);
}

/// A scripted model that says it takes output schemas natively.
#[cfg(feature = "output")]
struct Native(std::sync::Arc<ScriptedModel>);

#[cfg(feature = "output")]
#[harness_core::async_trait]
impl harness_core::Llm for Native {
    async fn generate(
        &self,
        request: harness_core::Request<'_>,
    ) -> harness_core::Result<CompletionResponse> {
        self.0.generate(request).await
    }

    fn info(&self) -> ModelInfo {
        ModelInfo::new("test", "native").with_supports(
            Supports::new()
                .with_tools(true)
                .with_structured_output(true),
        )
    }
}
