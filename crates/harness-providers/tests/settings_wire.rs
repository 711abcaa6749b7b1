//! Every model setting and the output schema, on each vendor's wire as its documentation
//! names them: OpenAI Chat Completions (and the compatible services), Anthropic Messages,
//! Gemini `generateContent`. A setting left unset is not sent; the provider's defaults sit
//! under the request's. The vendor fields a setting carries (`ModelSettings::extra`) are
//! merged into the body last, as a JSON merge patch, whole and streamed.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::Arc;

use futures_util::StreamExt as _;
use harness_core::{
    Llm, LlmEvent, Message, ModelSettings, OutputSchema, ReasoningLevel, Request, ToolChoice,
    ToolSpec,
};
use harness_providers::{Anthropic, DeepSeek, Gemini, Groq, Ollama, OpenAi, RetryPolicy};
use serde_json::{Value, json};
use support::{Reply, Server};

fn hi() -> Vec<Message> {
    vec![Message::user("hi")]
}

fn tools() -> Vec<Arc<ToolSpec>> {
    vec![Arc::new(ToolSpec::new(
        "get_weather",
        "Weather.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    ))]
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
    assert!(model.info().supports.structured_output);
    // Services where it depends on the model do not claim it, unless told.
    assert!(
        !Groq::builder("m")
            .api_key("k")
            .build()
            .unwrap()
            .info()
            .supports
            .structured_output
    );
    assert!(
        !DeepSeek::builder("m")
            .api_key("k")
            .build()
            .unwrap()
            .info()
            .supports
            .structured_output
    );
    let told = Groq::builder("m")
        .api_key("k")
        .structured_output(true)
        .build()
        .unwrap();
    assert!(told.info().supports.structured_output);
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
    assert!(!model.info().supports.structured_output);
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
    assert!(model.info().supports.structured_output);
}

// Vendor fields (`ModelSettings::extra`) ------------------------------------------------------

/// A loopback server answering each vendor's request with a one-word text turn, whole or
/// streamed as the request asks.
async fn answering_server() -> Server {
    Server::start(|_, request| {
        let gemini = request.target.contains("models/");
        let streamed = if gemini {
            request.target.contains("streamGenerateContent")
        } else {
            request.json()["stream"] == json!(true)
        };
        let anthropic = request.target.ends_with("/messages");
        match (gemini, anthropic, streamed) {
            (true, _, false) => Reply::json(200, GEMINI_ANSWER),
            (true, _, true) => Reply::sse(format!("data: {GEMINI_ANSWER}\r\n\r\n")),
            (false, true, false) => Reply::json(200, ANTHROPIC_ANSWER),
            (false, true, true) => Reply::sse(ANTHROPIC_STREAM),
            (false, false, false) => Reply::json(200, OPENAI_ANSWER),
            (false, false, true) => Reply::sse(OPENAI_STREAM),
        }
    })
    .await
}

const OPENAI_ANSWER: &str = r#"{"id": "c1", "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}"#;
const OPENAI_STREAM: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\n\
    data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
const ANTHROPIC_ANSWER: &str = r#"{"id": "msg_1", "type": "message", "role": "assistant", "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}}"#;
const ANTHROPIC_STREAM: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n\
    event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
    event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n\
    event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
    event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n\
    event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
const GEMINI_ANSWER: &str = r#"{"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP", "index": 0}]}"#;

/// The body `model` sent for `request`, whole or streamed, as the server saw it; the call
/// must have succeeded with the server's answer.
async fn sent_body<M: Llm>(
    model: &Arc<M>,
    server: &Server,
    request: Request<'_>,
    stream: bool,
) -> Value {
    let before = server.requests().len();
    let answer = if stream {
        let events: Vec<LlmEvent> = Arc::clone(model)
            .stream(request)
            .map(Result::unwrap)
            .collect()
            .await;
        assert_eq!(events[0], LlmEvent::TextDelta("ok".into()), "{events:?}");
        match events.last() {
            Some(LlmEvent::Completed(response)) => response.content().to_owned(),
            other => panic!("the stream did not end in Completed: {other:?}"),
        }
    } else {
        model.generate(request).await.unwrap().content().to_owned()
    };
    assert_eq!(answer, "ok");
    let requests = server.requests();
    assert_eq!(requests.len(), before + 1);
    requests[before].json()
}

/// The provider's vendor fields under the request's: both kept, the request's winning.
fn provider_extra() -> ModelSettings {
    ModelSettings::new()
        .with_extra("service_tier", json!("auto"))
        .with_extra("user", json!("u1"))
}

#[tokio::test]
async fn openai_merges_the_vendor_fields_last_whole_and_streamed() {
    let server = answering_server().await;
    let model = Arc::new(
        OpenAi::builder("gpt-4o")
            .api_key("k")
            .base_url(&server.url)
            .retry(RetryPolicy::none())
            .settings(provider_extra())
            .build()
            .unwrap(),
    );
    let messages = hi();
    let settings = ModelSettings::new()
        .with_temperature(0.3)
        .with_top_p(0.9)
        .with_max_tokens(500)
        // A field the library does not type.
        .with_extra("seed", json!(7))
        // A typed field replaced: the patch goes last.
        .with_extra("temperature", json!(0.9))
        // A typed field removed.
        .with_extra("top_p", Value::Null)
        // Over the provider's.
        .with_extra("service_tier", json!("flex"))
        // An object merges key by key into the one the library built.
        .with_extra("stream_options", json!({"continuous_usage_stats": true}));
    let request = Request::new(&messages).with_settings(&settings);
    for stream in [false, true] {
        let body = sent_body(&model, &server, request, stream).await;
        assert_eq!(
            body,
            model.request_body(&request, stream),
            "stream: {stream}"
        );
        assert_eq!(body["model"], "gpt-4o");
        assert_eq!(body["messages"], json!([{"role": "user", "content": "hi"}]));
        assert_eq!(body["max_completion_tokens"], 500);
        assert_eq!(body["seed"], 7);
        assert_eq!(body["temperature"], 0.9);
        assert_eq!(body.get("top_p"), None, "a null removes the key");
        assert_eq!(body["service_tier"], "flex");
        assert_eq!(body["user"], "u1");
        if stream {
            assert_eq!(body["stream"], true);
            assert_eq!(
                body["stream_options"],
                json!({"include_usage": true, "continuous_usage_stats": true})
            );
        } else {
            assert_eq!(body.get("stream"), None);
            assert_eq!(
                body["stream_options"],
                json!({"continuous_usage_stats": true})
            );
        }
    }
    // No vendor field: nothing added.
    let plain = ModelSettings::new().with_temperature(0.3);
    let model = Arc::new(
        OpenAi::builder("gpt-4o")
            .api_key("k")
            .base_url(&server.url)
            .build()
            .unwrap(),
    );
    let body = sent_body(
        &model,
        &server,
        Request::new(&messages).with_settings(&plain),
        false,
    )
    .await;
    let keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["model", "messages", "temperature"]);
}

#[tokio::test]
async fn anthropic_merges_the_vendor_fields_last_whole_and_streamed() {
    let server = answering_server().await;
    let model = Arc::new(
        Anthropic::builder("claude")
            .api_key("k")
            .base_url(&server.url)
            .retry(RetryPolicy::none())
            .settings(provider_extra())
            .build()
            .unwrap(),
    );
    let messages = hi();
    let settings = ModelSettings::new()
        .with_temperature(0.3)
        .with_max_tokens(500)
        .with_reasoning(ReasoningLevel::Low)
        .with_extra("top_k", json!(5))
        .with_extra("max_tokens", json!(4000))
        .with_extra("temperature", Value::Null)
        .with_extra("service_tier", json!("standard_only"))
        .with_extra("thinking", json!({"budget_tokens": 2048}))
        .with_extra("metadata", json!({"user_id": "u2"}));
    let request = Request::new(&messages).with_settings(&settings);
    for stream in [false, true] {
        let body = sent_body(&model, &server, request, stream).await;
        assert_eq!(
            body,
            model.request_body(&request, stream),
            "stream: {stream}"
        );
        assert_eq!(body["model"], "claude");
        assert_eq!(body["top_k"], 5);
        // The library raised 500 to 2048 for the thinking budget; the patch has the last word.
        assert_eq!(body["max_tokens"], 4000);
        assert_eq!(body.get("temperature"), None, "a null removes the key");
        assert_eq!(body["service_tier"], "standard_only");
        assert_eq!(body["user"], "u1");
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 2048})
        );
        assert_eq!(body["metadata"], json!({"user_id": "u2"}));
        assert_eq!(
            body.get("stream"),
            stream.then_some(&json!(true)),
            "stream: {stream}"
        );
    }
}

#[tokio::test]
async fn gemini_merges_the_vendor_fields_last_whole_and_streamed() {
    let server = answering_server().await;
    let model = Arc::new(
        Gemini::builder("gemini-2.5-flash")
            .api_key("k")
            .base_url(&server.url)
            .retry(RetryPolicy::none())
            .settings(provider_extra())
            .build()
            .unwrap(),
    );
    let messages = hi();
    let safety = json!([{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}]);
    let settings = ModelSettings::new()
        .with_temperature(0.3)
        .with_top_p(0.9)
        .with_max_tokens(500)
        .with_extra(
            "generationConfig",
            json!({"seed": 7, "temperature": null, "maxOutputTokens": 64}),
        )
        .with_extra("safetySettings", safety.clone())
        .with_extra("service_tier", json!("flex"));
    let request = Request::new(&messages).with_settings(&settings);
    let mut bodies = Vec::new();
    for stream in [false, true] {
        let body = sent_body(&model, &server, request, stream).await;
        assert_eq!(
            body,
            model.request_body(&request).unwrap(),
            "stream: {stream}"
        );
        assert_eq!(
            body["contents"],
            json!([{"role": "user", "parts": [{"text": "hi"}]}])
        );
        assert_eq!(
            body["generationConfig"],
            json!({"topP": 0.9, "maxOutputTokens": 64, "seed": 7})
        );
        assert_eq!(body["safetySettings"], safety);
        assert_eq!(body["service_tier"], "flex");
        assert_eq!(body["user"], "u1");
        bodies.push(body);
    }
    assert_eq!(bodies[0], bodies[1], "the same body, whole or streamed");
    let targets: Vec<String> = server.requests().into_iter().map(|r| r.target).collect();
    assert!(targets[0].contains(":generateContent"), "{targets:?}");
    assert!(targets[1].contains(":streamGenerateContent"), "{targets:?}");
}
