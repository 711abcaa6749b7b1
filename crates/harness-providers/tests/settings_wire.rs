//! Every model setting and the output schema, on each vendor's wire as its documentation
//! names them: OpenAI Chat Completions (and the compatible services), Anthropic Messages,
//! Gemini `generateContent`. A setting left unset is not sent; the provider's defaults sit
//! under the request's.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use harness_core::Llm as _;
use harness_core::{
    Message, ModelSettings, OutputSchema, ReasoningLevel, Request, ToolChoice, ToolSpec,
};
use harness_providers::{Anthropic, DeepSeek, Gemini, Groq, Ollama, OpenAi};
use serde_json::{Value, json};

fn hi() -> Vec<Message> {
    vec![Message::user("hi")]
}

fn tools() -> Vec<ToolSpec> {
    vec![ToolSpec::new(
        "get_weather",
        "Weather.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    )]
}

fn every_setting() -> ModelSettings {
    ModelSettings::new()
        .with_temperature(0.3)
        .with_max_tokens(500)
        .with_top_p(0.9)
        .with_stop(["END", "STOP"])
        .with_tool_choice(ToolChoice::Required)
        .with_parallel_tool_calls(false)
        .with_reasoning(ReasoningLevel::Medium)
}

fn answer_schema(strict: bool) -> OutputSchema {
    let mut schema = json!({"type": "object", "properties": {"city": {"type": "string"}},
        "required": ["city"]});
    if strict {
        schema["additionalProperties"] = Value::Bool(false);
    }
    OutputSchema::new("Answer", schema)
}

#[test]
fn openai_sends_each_setting_by_its_chat_completions_name() {
    let model = OpenAi::builder("gpt-4o").api_key("k").build().unwrap();
    let (messages, tools, settings) = (hi(), tools(), every_setting());
    let body = model.request_body(
        &Request::new(&messages)
            .with_tools(&tools)
            .with_settings(&settings),
        false,
    );
    assert_eq!(body["temperature"], 0.3);
    assert_eq!(body["max_completion_tokens"], 500);
    assert_eq!(body.get("max_tokens"), None);
    assert_eq!(body["top_p"], 0.9);
    assert_eq!(body["stop"], json!(["END", "STOP"]));
    assert_eq!(body["tool_choice"], "required");
    assert_eq!(body["parallel_tool_calls"], false);
    assert_eq!(body["reasoning_effort"], "medium");
    // Each tool choice.
    for (choice, wire) in [
        (ToolChoice::Auto, json!("auto")),
        (ToolChoice::None, json!("none")),
        (
            ToolChoice::Tool("get_weather".into()),
            json!({"type": "function", "function": {"name": "get_weather"}}),
        ),
    ] {
        let settings = ModelSettings::new().with_tool_choice(choice);
        let body = model.request_body(
            &Request::new(&messages)
                .with_tools(&tools)
                .with_settings(&settings),
            false,
        );
        assert_eq!(body["tool_choice"], wire);
    }
    // Without tools, no tool_choice and no parallel_tool_calls: OpenAI refuses them.
    let body = model.request_body(
        &Request::new(&messages).with_settings(&every_setting()),
        false,
    );
    assert_eq!(body.get("tool_choice"), None);
    assert_eq!(body.get("parallel_tool_calls"), None);
    // Nothing set, nothing sent.
    let body = model.request_body(&Request::new(&messages), true);
    let keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["model", "messages", "stream", "stream_options"]);
}

#[test]
fn compatible_services_read_the_output_limit_as_max_tokens() {
    let model = Ollama::builder("llama3.2").build().unwrap();
    let settings = ModelSettings::new().with_max_tokens(64);
    let body = model.request_body(&Request::new(&hi()).with_settings(&settings), false);
    assert_eq!(body["max_tokens"], 64);
    assert_eq!(body.get("max_completion_tokens"), None);
}

#[test]
fn provider_defaults_sit_under_the_requests_settings() {
    let model = OpenAi::builder("gpt-4o")
        .api_key("k")
        .settings(ModelSettings::new().with_temperature(1.0).with_top_p(0.5))
        .build()
        .unwrap();
    let settings = ModelSettings::new().with_temperature(0.0);
    let body = model.request_body(&Request::new(&hi()).with_settings(&settings), false);
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(body["top_p"], 0.5);
}

#[test]
fn openai_asks_for_a_schema_natively_strict_when_the_schema_allows() {
    let model = OpenAi::builder("gpt-4o").api_key("k").build().unwrap();
    let messages = hi();
    for strict in [true, false] {
        let schema = answer_schema(strict);
        let body = model.request_body(&Request::new(&messages).with_output(&schema), false);
        assert_eq!(
            body["response_format"],
            json!({"type": "json_schema", "json_schema": {
                "name": "Answer", "schema": schema.schema, "strict": strict,
            }})
        );
    }
    assert!(model.native_output());
    // Services where it depends on the model do not claim it, unless told.
    assert!(
        !Groq::builder("m")
            .api_key("k")
            .build()
            .unwrap()
            .native_output()
    );
    assert!(
        !DeepSeek::builder("m")
            .api_key("k")
            .build()
            .unwrap()
            .native_output()
    );
    let told = Groq::builder("m")
        .api_key("k")
        .native_output(true)
        .build()
        .unwrap();
    assert!(told.native_output());
    // A model that does not take schemas is not sent one.
    let schema = answer_schema(true);
    let groq = Groq::builder("m").api_key("k").build().unwrap();
    let body = groq.request_body(&Request::new(&messages).with_output(&schema), false);
    assert_eq!(body.get("response_format"), None);
}

#[test]
fn anthropic_sends_each_setting_by_its_messages_name() {
    let model = Anthropic::builder("claude").api_key("k").build().unwrap();
    let (messages, tools) = (hi(), tools());
    let settings = every_setting().with_reasoning(ReasoningLevel::Low);
    let body = model.request_body(
        &Request::new(&messages)
            .with_tools(&tools)
            .with_settings(&settings),
        false,
    );
    assert_eq!(body["temperature"], 0.3);
    assert_eq!(body["top_p"], 0.9);
    assert_eq!(body["stop_sequences"], json!(["END", "STOP"]));
    // 500 asked, raised to fit the 1024-token thinking budget and an answer.
    assert_eq!(body["max_tokens"], 2048);
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 1024})
    );
    assert_eq!(
        body["tool_choice"],
        json!({"type": "any", "disable_parallel_tool_use": true})
    );
    for (choice, wire) in [
        (ToolChoice::Auto, json!({"type": "auto"})),
        (ToolChoice::None, json!({"type": "none"})),
        (
            ToolChoice::Tool("get_weather".into()),
            json!({"type": "tool", "name": "get_weather"}),
        ),
    ] {
        let settings = ModelSettings::new().with_tool_choice(choice);
        let body = model.request_body(
            &Request::new(&messages)
                .with_tools(&tools)
                .with_settings(&settings),
            false,
        );
        assert_eq!(body["tool_choice"], wire);
    }
    // Parallel calls off alone: auto, one call a turn.
    let settings = ModelSettings::new().with_parallel_tool_calls(false);
    let body = model.request_body(
        &Request::new(&messages)
            .with_tools(&tools)
            .with_settings(&settings),
        false,
    );
    assert_eq!(
        body["tool_choice"],
        json!({"type": "auto", "disable_parallel_tool_use": true})
    );
    // Nothing set: the required max_tokens (4096) and nothing else.
    let body = model.request_body(&Request::new(&messages), false);
    let keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["model", "max_tokens", "messages"]);
    assert_eq!(body["max_tokens"], 4096);
    // Anthropic takes no schema natively: the agent uses final_answer.
    assert!(!model.native_output());
}

#[test]
fn gemini_sends_generation_config_tool_config_and_the_schema() {
    let model = Gemini::builder("gemini-2.5-flash")
        .api_key("k")
        .build()
        .unwrap();
    let (messages, tools, settings) = (hi(), tools(), every_setting());
    let schema = answer_schema(false);
    let body = model
        .request_body(
            &Request::new(&messages)
                .with_tools(&tools)
                .with_settings(&settings)
                .with_output(&schema),
        )
        .unwrap();
    assert_eq!(
        body["generationConfig"],
        json!({
            "temperature": 0.3,
            "topP": 0.9,
            "maxOutputTokens": 500,
            "stopSequences": ["END", "STOP"],
            "thinkingConfig": {"thinkingBudget": 4096},
            "responseMimeType": "application/json",
            "responseJsonSchema": schema.schema,
        })
    );
    assert_eq!(
        body["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY"}})
    );
    for (choice, wire) in [
        (ToolChoice::Auto, json!({"mode": "AUTO"})),
        (ToolChoice::None, json!({"mode": "NONE"})),
        (
            ToolChoice::Tool("get_weather".into()),
            json!({"mode": "ANY", "allowedFunctionNames": ["get_weather"]}),
        ),
    ] {
        let settings = ModelSettings::new().with_tool_choice(choice);
        let body = model
            .request_body(
                &Request::new(&messages)
                    .with_tools(&tools)
                    .with_settings(&settings),
            )
            .unwrap();
        assert_eq!(body["toolConfig"]["functionCallingConfig"], wire);
    }
    // Nothing set: no generationConfig, no toolConfig.
    let body = model.request_body(&Request::new(&messages)).unwrap();
    assert_eq!(body.get("generationConfig"), None);
    assert_eq!(body.get("toolConfig"), None);
    assert!(model.native_output());
}
