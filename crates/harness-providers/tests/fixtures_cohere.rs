//! Cohere: the recorded v2 chat traffic of tests/fixtures/cohere served from loopback, and
//! what the provider makes of every field; and our requests for the recorded conversations.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::Arc;

use futures_util::StreamExt as _;
use harness_core::{
    Agent, AgentEvent, Block, Content, FinishReason, Image, Llm, LlmEvent, Message, ModelSettings,
    OutputSchema, ProviderErrorKind, ReasoningLevel, Request, Role, StopReason, Thinking,
    TokenUsage, ToolCall, ToolChoice, ToolSpec,
};
use harness_providers::Cohere;
use serde_json::{Value, json};
use support::{Reply, Server, collect_events, completed, deltas, fixture, fixture_json};

const DIR: &str = "cohere";

fn path(name: &str) -> String {
    format!("{DIR}/{name}")
}

async fn cohere(reply: Reply) -> (Cohere, Server) {
    let server = Server::always(reply).await;
    let model = Cohere::builder("command-a-03-2025")
        .api_key("co-key")
        .base_url(format!("{}/v2", server.url))
        .build()
        .unwrap();
    (model, server)
}

async fn generate(name: &str) -> (harness_core::CompletionResponse, Server) {
    let (model, server) = cohere(Reply::json(200, fixture(&path(name)))).await;
    let response = model
        .generate(Request::new(&[Message::user("?")]))
        .await
        .unwrap();
    (response, server)
}

async fn stream(name: &str) -> (Vec<LlmEvent>, Server) {
    let (model, server) = cohere(Reply::sse(fixture(&path(name)))).await;
    let events = collect_events(&model, &[Message::user("?")], &[]).await;
    (events, server)
}

/// The pieces of a recorded stream under `delta.message` at `pointer` (`/content/text`,
/// `/content/thinking`, `/tool_plan`, `/tool_calls/function/arguments`), joined.
fn streamed(name: &str, pointer: &str) -> String {
    let body = String::from_utf8(fixture(&path(name))).unwrap();
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .filter_map(|event| {
            event
                .pointer(&format!("/delta/message{pointer}"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect()
}

fn thinking(text: impl Into<String>) -> Block {
    Thinking::new(text).from_provider("cohere").into()
}

// Whole answers --------------------------------------------------------------------------------

#[tokio::test]
async fn a_whole_answer_gives_its_text_usage_and_id_and_is_asked_for_as_cohere_wants() {
    let (response, server) = generate("chat_nonstream_text_cached_tokens.json").await;
    assert_eq!(response.content(), "Hello.");
    assert_eq!(response.blocks(), &[Block::text("Hello.")]);
    assert!(response.tool_calls().is_empty());
    assert_eq!(response.finish_reason(), FinishReason::Stop);
    // `tokens`, not `billed_units` (8 and 2): what the model read and wrote.
    assert_eq!(
        response.usage(),
        Some(&TokenUsage::new(503, 4, 507).with_cached(480))
    );
    assert_eq!(response.id(), Some("01d49ea6-f298-4536-98b9-ed8c4cb6b92e"));
    let request = &server.requests()[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.target, "/v2/chat");
    assert_eq!(request.header("authorization"), Some("Bearer co-key"));
    assert_eq!(
        request.json(),
        json!({"model": "command-a-03-2025", "stream": false,
            "messages": [{"role": "user", "content": "?"}]})
    );
}

#[tokio::test]
async fn a_whole_answer_with_thinking_and_a_tool_call() {
    let name = "chat_nonstream_thinking_then_tool_call.json";
    let recorded = fixture_json(&path(name));
    let (response, _) = generate(name).await;
    let reasoning = recorded["message"]["content"][0]["thinking"]
        .as_str()
        .unwrap();
    assert!(reasoning.starts_with("Okay, the user is asking for the weather"));
    assert_eq!(response.blocks(), &[thinking(reasoning)]);
    assert_eq!(response.thinking(), reasoning);
    assert_eq!(response.content(), "");
    assert_eq!(
        response.tool_calls(),
        &[
            ToolCall::new("get_the_weather", json!({"location": "Osaka"}))
                .with_id("get_the_weather_r8d0r2e0kw9s")
        ]
    );
    assert_eq!(response.finish_reason(), FinishReason::Stop);
    assert_eq!(
        response.usage(),
        Some(&TokenUsage::new(1494, 330, 1824).with_cached(1008))
    );
}

#[tokio::test]
async fn a_whole_answer_with_a_tool_plan_gives_the_plan_as_its_text() {
    let (response, _) = generate("chat_nonstream_tool_plan_then_tool_call.json").await;
    assert_eq!(
        response.content(),
        "I will first search for Barack Obama's age. Then, I will use Python to find the square root of his age."
    );
    assert_eq!(
        response.tool_calls(),
        &[
            ToolCall::new("web_search", json!({"query": "Barack Obama's age"}))
                .with_id("web_search_eyqpk2grf0f7")
        ]
    );
    assert_eq!(response.usage(), Some(&TokenUsage::new(1611, 66, 1677)));
}

#[tokio::test]
async fn whole_answers_after_tool_results_keep_their_text_and_leave_the_citations() {
    let (response, _) = generate("chat_nonstream_text_citations_after_two_tool_rounds.json").await;
    assert_eq!(
        response.content(),
        "Barack Obama is 60 years old. The square root of his age is 7.75."
    );
    assert_eq!(response.finish_reason(), FinishReason::Stop);
    assert_eq!(
        response.usage(),
        Some(&TokenUsage::new(1890, 44, 1934).with_cached(0))
    );

    let (response, _) = generate("chat_nonstream_text_citation_after_tool_result.json").await;
    assert_eq!(response.content(), "363.89");
    assert_eq!(response.usage(), Some(&TokenUsage::new(1591, 18, 1609)));
}

#[tokio::test]
async fn a_structured_answer_is_its_json_text_with_thinking_apart() {
    let (response, _) = generate("chat_nonstream_json_schema.json").await;
    assert_eq!(response.content(), "{\n    \"is_fruit\": true\n}");
    let parsed: Value = serde_json::from_str(response.content()).unwrap();
    assert_eq!(parsed, json!({"is_fruit": true}));

    let name = "chat_nonstream_thinking_then_json_schema.json";
    let recorded = fixture_json(&path(name));
    let (response, _) = generate(name).await;
    assert_eq!(
        response.blocks(),
        &[
            thinking(
                recorded["message"]["content"][0]["thinking"]
                    .as_str()
                    .unwrap()
            ),
            Block::text("{\"is_fruit\": true}"),
        ]
    );
    assert_eq!(response.content(), "{\"is_fruit\": true}");
    assert_eq!(response.usage(), Some(&TokenUsage::new(1402, 322, 1724)));
}

#[tokio::test]
async fn a_stop_sequence_is_a_finished_answer() {
    let (response, _) = generate("chat_nonstream_stop_sequence.json").await;
    assert_eq!(response.content(), "Canada");
    assert_eq!(response.finish_reason(), FinishReason::Stop);
}

// Streams --------------------------------------------------------------------------------------

#[tokio::test]
async fn a_stream_gives_its_text_as_it_comes_then_the_whole_turn() {
    let (events, _) = stream("chat_stream_text_cached_tokens.sse").await;
    assert_eq!(
        &events[..2],
        &[
            LlmEvent::TextDelta("Hello".into()),
            LlmEvent::TextDelta(".".into())
        ]
    );
    let response = completed(&events);
    assert_eq!(response.content(), "Hello.");
    assert_eq!(response.id(), Some("b08d4bdf-ef36-4b99-8a3b-92a15a0c07be"));
    assert_eq!(response.finish_reason(), FinishReason::Stop);
    assert_eq!(
        response.usage(),
        Some(&TokenUsage::new(503, 4, 507).with_cached(480))
    );
}

#[tokio::test]
async fn a_streamed_reasoning_turn_gives_thinking_then_text() {
    let name = "chat_stream_thinking_then_text.sse";
    let (events, _) = stream(name).await;
    let (reasoning, text) = (
        streamed(name, "/content/thinking"),
        streamed(name, "/content/text"),
    );
    assert!(reasoning.len() > 200 && !text.is_empty());
    assert!(matches!(events[0], LlmEvent::ThinkingDelta(_)));
    assert_eq!(deltas(&events, true), reasoning);
    assert_eq!(deltas(&events, false), text);
    let response = completed(&events);
    assert_eq!(
        response.blocks(),
        &[thinking(reasoning.clone()), Block::text(text.clone())]
    );
    assert_eq!(response.thinking(), reasoning);
    assert_eq!(
        response.usage(),
        Some(&TokenUsage::new(1394, 90, 1484).with_cached(1344))
    );
}

#[tokio::test]
async fn a_streamed_tool_call_is_joined_from_its_fragments() {
    let name = "chat_stream_thinking_then_tool_call.sse";
    let (events, _) = stream(name).await;
    let response = completed(&events);
    assert_eq!(
        response.blocks(),
        &[thinking(streamed(name, "/content/thinking"))]
    );
    assert_eq!(
        response.tool_calls(),
        &[ToolCall::new("square_root", json!({"number": 132_413.0}))
            .with_id("square_root_dem3a62ahjjz")]
    );
    assert_eq!(response.finish_reason(), FinishReason::Stop);
    assert_eq!(response.usage(), Some(&TokenUsage::new(1521, 40, 1561)));

    for name in [
        "chat_stream_tool_plan_then_tool_call.sse",
        "chat_stream_tool_plan_then_tool_call_fragments.sse",
    ] {
        let (events, _) = stream(name).await;
        let plan = streamed(name, "/tool_plan");
        assert!(plan.starts_with("I will use "), "{name}: {plan}");
        // The plan is the turn's text, handed out as it comes.
        assert_eq!(deltas(&events, false), plan, "{name}");
        let response = completed(&events);
        assert_eq!(response.content(), plan, "{name}");
        assert_eq!(response.tool_calls().len(), 1, "{name}");
        let arguments = streamed(name, "/tool_calls/function/arguments");
        assert_eq!(
            response.tool_calls()[0].arguments_value(),
            serde_json::from_str::<Value>(&arguments).unwrap(),
            "{name}"
        );
    }
    let (events, _) = stream("chat_stream_tool_plan_then_tool_call_fragments.sse").await;
    assert_eq!(
        completed(&events).tool_calls(),
        &[ToolCall::new("Person", json!({"name": "Erick", "age": 27}))
            .with_id("Person_2fnrphbsnr66")]
    );
}

#[tokio::test]
async fn a_stream_with_citations_keeps_its_text() {
    let name = "chat_stream_text_citation_after_tool_result.sse";
    let (events, _) = stream(name).await;
    assert_eq!(deltas(&events, false), "363.89");
    let response = completed(&events);
    assert_eq!(response.blocks(), &[Block::text("363.89")]);
    assert_eq!(response.usage(), Some(&TokenUsage::new(1601, 18, 1619)));
}

#[tokio::test]
async fn a_streamed_structured_answer_and_one_cut_at_the_output_limit() {
    let name = "chat_stream_json_schema.sse";
    let (events, _) = stream(name).await;
    let response = completed(&events);
    assert_eq!(response.content(), streamed(name, "/content/text"));
    let parsed: Value = serde_json::from_str(response.content()).unwrap();
    assert_eq!(parsed, json!({"is_fruit": true}));

    let name = "chat_stream_max_tokens.sse";
    let (events, _) = stream(name).await;
    let response = completed(&events);
    assert_eq!(response.finish_reason(), FinishReason::Length);
    assert_eq!(response.content(), streamed(name, "/content/text"));
    assert_eq!(response.usage(), Some(&TokenUsage::new(504, 16, 520)));
}

// Errors ---------------------------------------------------------------------------------------

#[tokio::test]
async fn a_tool_call_cohere_refuses_in_a_stream_ends_the_turn_as_malformed() {
    let name = "chat_stream_error_invalid_tool_generation.sse";
    let (events, _) = stream(name).await;
    let plan = streamed(name, "/tool_plan");
    assert_eq!(deltas(&events, false), plan);
    let response = completed(&events);
    assert_eq!(response.finish_reason(), FinishReason::MalformedToolCall);
    assert_eq!(
        response.finish_message(),
        Some(
            "your request resulted in an invalid tool generation. Try updating the messages or tool definitions"
        )
    );
    assert!(response.tool_calls().is_empty());
    assert_eq!(response.content(), plan);
    assert_eq!(response.usage(), None, "the error's usage is empty");
}

#[tokio::test]
async fn an_error_ending_a_stream_is_the_vendors_error_after_the_deltas() {
    let name = "chat_stream_error_no_valid_response.response.txt";
    let (model, _) = cohere(Reply::sse(fixture(&path(name)))).await;
    let messages = [Message::user("?")];
    let items: Vec<_> = Arc::new(model)
        .stream(Request::new(&messages))
        .collect()
        .await;
    assert_eq!(
        items[0].as_ref().unwrap(),
        &LlmEvent::ThinkingDelta("Okay".into())
    );
    let err = items.last().unwrap().as_ref().unwrap_err();
    let provider = err.provider().unwrap();
    assert_eq!(provider.provider(), "cohere");
    assert_eq!(provider.kind(), ProviderErrorKind::Vendor);
    assert_eq!(
        provider.message(),
        "No valid response generated. Try updating messages"
    );
    assert!(
        provider
            .body()
            .unwrap()
            .contains("\"finish_reason\":\"ERROR\"")
    );
}

#[tokio::test]
async fn http_errors_keep_cohere_s_status_and_words() {
    for (name, status, message) in [
        (
            "chat_404_model_not_found.response.txt",
            404,
            "model 'bad model' not found, make sure the correct model ID was used and that you have access to the model.",
        ),
        (
            "chat_401_invalid_api_token.response.txt",
            401,
            "invalid api token",
        ),
        (
            "chat_422_no_valid_response.response.txt",
            422,
            "No valid response generated. Try updating messages",
        ),
    ] {
        for streamed in [false, true] {
            let (model, server) = cohere(Reply::json(status, fixture(&path(name)))).await;
            let messages = [Message::user("?")];
            let err = if streamed {
                let items: Vec<_> = Arc::new(model)
                    .stream(Request::new(&messages))
                    .collect()
                    .await;
                assert_eq!(items.len(), 1, "{name}");
                items.into_iter().next().unwrap().unwrap_err()
            } else {
                model.generate(Request::new(&messages)).await.unwrap_err()
            };
            let provider = err.provider().unwrap();
            assert_eq!(provider.provider(), "cohere", "{name}");
            assert_eq!(provider.status(), Some(status), "{name}");
            assert_eq!(provider.message(), message, "{name}");
            assert_eq!(
                provider.body(),
                Some(std::str::from_utf8(&fixture(&path(name))).unwrap()),
                "{name}"
            );
            assert_eq!(server.requests().len(), 1, "{name}: a 4xx is not retried");
        }
    }
}

#[tokio::test]
async fn an_http_refusal_of_the_models_tool_call_is_a_malformed_call_turn() {
    // Hand-made: the body Cohere documents for this refusal (`error_type` and `message`).
    let body = r#"{"error_type":"INVALID_TOOL_GENERATION","message":"your request resulted in an invalid tool generation. Try updating the messages or tool definitions"}"#;
    for streamed in [false, true] {
        let (model, _) = cohere(Reply::json(422, body)).await;
        let messages = [Message::user("?")];
        let response = if streamed {
            let events = collect_events(&model, &messages, &[]).await;
            completed(&events).clone()
        } else {
            model.generate(Request::new(&messages)).await.unwrap()
        };
        assert_eq!(response.finish_reason(), FinishReason::MalformedToolCall);
        assert!(
            response
                .finish_message()
                .unwrap()
                .starts_with("your request resulted in an invalid tool generation")
        );
    }
}

// Requests -------------------------------------------------------------------------------------

/// The transcript of the recorded two-tool-round conversation, as the agent keeps it.
fn two_tool_rounds() -> Vec<Message> {
    let call = |id: &str, name: &str, args: Value| ToolCall::new(name, args).with_id(id);
    let result = |id: &str, name: &str, text: &str| {
        let mut message = Message::new(Role::Tool, text);
        message.tool_call_id = Some(id.to_owned());
        message.name = Some(name.to_owned());
        message
    };
    let turn = |plan: &str, calls: Vec<ToolCall>| {
        let mut message = Message::assistant(plan);
        message.tool_calls = calls;
        message
    };
    vec![
        Message::system("You are a helpful assistant. Respond only in English."),
        Message::user(
            "Find Barack Obama's age and use python tool to find the square root of his age",
        ),
        turn(
            "I will first search for Barack Obama's age. Then, I will use Python to find the square root of his age.",
            vec![call(
                "web_search_eyqpk2grf0f7",
                "web_search",
                json!({"query": "Barack Obama's age"}),
            )],
        ),
        result(
            "web_search_eyqpk2grf0f7",
            "web_search",
            r#"{"output":"60"}"#,
        ),
        turn(
            "I have found that Barack Obama is 60 years old. I will now use Python to find the square root of 60.",
            vec![call(
                "python_interpeter_temp_1xkvt035n7dj",
                "python_interpeter_temp",
                json!({"code": "import math\n\nage = 60\nsqrt_age = math.sqrt(age)\n\nprint(f\"Square root of {age}: {sqrt_age}\")"}),
            )],
        ),
        result(
            "python_interpeter_temp_1xkvt035n7dj",
            "python_interpeter_temp",
            r#"{"output":"7.75"}"#,
        ),
    ]
}

/// A request's messages with each call's arguments read from their JSON text (spacing aside)
/// and each tool result's content put as `content` says.
fn normal(messages: &Value, content: impl Fn(&Value) -> Value) -> Vec<Value> {
    messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let mut m = m.clone();
            if let Some(Value::Array(calls)) = m.get_mut("tool_calls") {
                for call in calls {
                    let args = call["function"]["arguments"].as_str().unwrap().to_owned();
                    call["function"]["arguments"] = serde_json::from_str(&args).unwrap();
                }
            }
            if m["role"] == "tool" {
                m["content"] = content(&m["content"]);
            }
            m
        })
        .collect()
}

#[tokio::test]
async fn the_request_for_a_transcript_with_two_tool_rounds_is_the_recorded_one() {
    let name = "chat_nonstream_text_citations_after_two_tool_rounds";
    let recorded = fixture_json(&path(&format!("{name}.request.json")));
    let tools: Vec<Arc<ToolSpec>> = recorded["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let f = &t["function"];
            Arc::new(ToolSpec::new(
                f["name"].as_str().unwrap(),
                f["description"].as_str().unwrap(),
                f["parameters"].clone(),
            ))
        })
        .collect();
    let (model, server) = cohere(Reply::json(200, fixture(&path(&format!("{name}.json"))))).await;
    let transcript = two_tool_rounds();
    let response = model
        .generate(Request::new(&transcript).with_tools(&tools))
        .await
        .unwrap();
    assert_eq!(
        response.content(),
        "Barack Obama is 60 years old. The square root of his age is 7.75."
    );
    let sent = server.requests()[0].json();
    // The recording sent each result as a document; its text is the same JSON.
    let as_text = |content: &Value| {
        let data = &content[0]["document"]["data"];
        if data.is_null() {
            content.clone()
        } else {
            Value::from(data.to_string())
        }
    };
    assert_eq!(
        normal(&sent["messages"], as_text),
        normal(&recorded["messages"], as_text)
    );
    assert_eq!(sent["tools"], recorded["tools"]);
    assert_eq!(sent["model"], recorded["model"]);
    assert_eq!(sent["stream"], recorded["stream"]);
    assert_eq!(
        sent.as_object().unwrap().len(),
        recorded.as_object().unwrap().len()
    );
    // Each result goes as text, paired with its call by id.
    assert_eq!(
        sent["messages"][3],
        json!({"role": "tool", "tool_call_id": "web_search_eyqpk2grf0f7",
            "content": "{\"output\":\"60\"}"})
    );
}

#[tokio::test]
async fn an_image_is_sent_as_an_image_url_part() {
    let name = "chat_nonstream_image_base64";
    let recorded = fixture_json(&path(&format!("{name}.request.json")));
    let (_, server) = cohere(Reply::json(200, fixture(&path(&format!("{name}.json"))))).await;
    let model = Cohere::builder("command-a-vision-07-2025")
        .api_key("k")
        .base_url(format!("{}/v2", server.url))
        .build()
        .unwrap();
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
    let messages = [Message::user(Content::from_blocks([
        Block::text("Describe this image"),
        Image::from_base64(png, "image/png").into(),
    ]))];
    let response = model.generate(Request::new(&messages)).await.unwrap();
    assert!(
        response
            .content()
            .starts_with("The image you've provided is a solid red square.")
    );
    let mut expected = recorded.clone();
    // The recording asked for detail; we send the image as it is.
    expected["messages"][0]["content"][1]["image_url"]
        .as_object_mut()
        .unwrap()
        .remove("detail");
    assert_eq!(server.requests()[0].json(), expected);
    assert!(model.info().supports.images);
}

#[test]
fn settings_go_in_cohere_s_fields() {
    let model = Cohere::builder("command-a-reasoning-08-2025")
        .api_key("k")
        .settings(
            ModelSettings::new()
                .with_temperature(0.3)
                .with_top_p(0.9)
                .with_max_tokens(500)
                .with_stop(["END"])
                .with_reasoning(ReasoningLevel::Medium)
                .with_extra("seed", json!(7)),
        )
        .build()
        .unwrap();
    let messages = [Message::user("hi")];
    let body = model.request_body(&Request::new(&messages), true);
    assert_eq!(
        body,
        json!({"model": "command-a-reasoning-08-2025",
            "messages": [{"role": "user", "content": "hi"}],
            "thinking": {"type": "enabled", "token_budget": 4096},
            "max_tokens": 500, "stop_sequences": ["END"], "temperature": 0.3, "p": 0.9,
            "stream": true, "seed": 7})
    );
}

#[test]
fn tool_choice_and_structured_output_go_as_cohere_takes_them() {
    let model = Cohere::builder("command-a-03-2025")
        .api_key("k")
        .build()
        .unwrap();
    let tools = [
        Arc::new(ToolSpec::new("a", "A.", json!({"type": "object"}))),
        Arc::new(ToolSpec::new("b", "B.", Value::Null)),
    ];
    let messages = [Message::user("hi")];
    let body = |choice: Option<ToolChoice>| {
        let mut settings = ModelSettings::new();
        if let Some(choice) = choice {
            settings = settings.with_tool_choice(choice);
        }
        model.request_body(
            &Request::new(&messages)
                .with_tools(&tools)
                .with_settings(&settings),
            false,
        )
    };
    let auto = body(None);
    assert_eq!(auto.get("tool_choice"), None);
    assert_eq!(
        auto["tools"],
        json!([
            {"type": "function", "function": {"name": "a", "description": "A.",
                "parameters": {"type": "object"}}},
            {"type": "function", "function": {"name": "b", "description": "B.",
                "parameters": {"type": "object", "properties": {}}}},
        ])
    );
    assert_eq!(body(Some(ToolChoice::Auto)).get("tool_choice"), None);
    assert_eq!(body(Some(ToolChoice::Required))["tool_choice"], "REQUIRED");
    assert_eq!(body(Some(ToolChoice::None))["tool_choice"], "NONE");
    // Cohere cannot name a tool: that tool is offered alone, a call required.
    let one = body(Some(ToolChoice::Tool("b".into())));
    assert_eq!(one["tool_choice"], "REQUIRED");
    assert_eq!(one["tools"].as_array().unwrap().len(), 1);
    assert_eq!(one["tools"][0]["function"]["name"], "b");

    let schema = json!({"type": "object", "properties": {"is_fruit": {"type": "boolean"}},
        "required": ["is_fruit"], "additionalProperties": false});
    let output = OutputSchema::new("fruit", schema.clone());
    let body = model.request_body(&Request::new(&messages).with_output(&output), false);
    assert_eq!(
        body["response_format"],
        json!({"type": "json_object", "json_schema": schema})
    );
    assert!(model.info().supports.structured_output);
}

#[test]
fn an_assistant_turn_goes_back_with_its_thinking_plan_and_calls() {
    let model = Cohere::builder("command-a-reasoning-08-2025")
        .api_key("k")
        .build()
        .unwrap();
    let mut with_calls = Message::assistant(Content::from_blocks([
        thinking("I should look it up."),
        // Another vendor's signed reasoning stays with that vendor.
        Thinking::signed("theirs", "sig")
            .from_provider("anthropic")
            .into(),
        Block::text("I will look it up."),
    ]));
    with_calls.tool_calls = vec![ToolCall::new("find", json!({"q": "x"})).with_id("find_1")];
    let mut result = Message::new(Role::Tool, "found");
    result.tool_call_id = Some("find_1".into());
    let messages = [
        Message::user("look"),
        with_calls,
        result,
        Message::assistant(Content::from_blocks([
            thinking("Done."),
            Block::text("It is x."),
        ])),
        // An empty answer kept in the transcript is left out.
        Message::assistant(""),
        Message::user("thanks"),
    ];
    let body = model.request_body(&Request::new(&messages), false);
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": "look"},
            {"role": "assistant", "tool_plan": "I will look it up.",
                "content": [{"type": "thinking", "thinking": "I should look it up."}],
                "tool_calls": [{"id": "find_1", "type": "function",
                    "function": {"name": "find", "arguments": "{\"q\":\"x\"}"}}]},
            {"role": "tool", "tool_call_id": "find_1", "content": "found"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "Done."},
                {"type": "text", "text": "It is x."}]},
            {"role": "user", "content": "thanks"},
        ])
    );
}

#[test]
fn the_model_table_knows_cohere_s_context_windows() {
    let info = |name: &str| Cohere::builder(name).api_key("k").build().unwrap().info();
    assert_eq!(info("command-a-03-2025").name(), "cohere:command-a-03-2025");
    assert_eq!(info("command-a-03-2025").context_window, Some(256_000));
    assert!(!info("command-a-03-2025").supports.reasoning);
    assert!(info("command-a-reasoning-08-2025").supports.reasoning);
    assert_eq!(
        info("command-a-vision-07-2025").context_window,
        Some(128_000)
    );
    assert_eq!(info("command-r7b-12-2024").context_window, Some(128_000));
    assert_eq!(info("command-r-plus-08-2024").context_window, Some(128_000));
    assert!(!info("command-r7b-12-2024").supports.images);
    assert!(info("command-r7b-12-2024").supports.tools);
}

// Through an agent -----------------------------------------------------------------------------

mod math {
    /// The square root of a number.
    ///
    /// * `number` - The number.
    #[harness_core::tool]
    pub(crate) fn square_root(number: f64) -> String {
        format!("{:.2}", number.sqrt())
    }
}
use math::SquareRoot;

#[tokio::test]
async fn an_agent_runs_the_recorded_tool_round_and_sends_it_back() {
    let server = Server::start(|n, _| {
        Reply::sse(fixture(&path(if n == 0 {
            "chat_stream_thinking_then_tool_call.sse"
        } else {
            "chat_stream_text_citation_after_tool_result.sse"
        })))
    })
    .await;
    let model = Cohere::builder("command-a-reasoning-08-2025")
        .api_key("k")
        .base_url(&server.url)
        .build()
        .unwrap();
    let agent = Agent::builder(model).tool(SquareRoot).build().unwrap();
    let mut events = agent.stream(
        "Use the square_root tool to calculate the square root of 132413 and reply with only the result. Do not give an explanation.",
    );
    let mut state = None;
    while let Some(event) = events.next().await {
        if let AgentEvent::Finished(finished) = event.unwrap() {
            state = Some(finished);
        }
    }
    let state = state.unwrap();
    assert_eq!(state.stop_reason, StopReason::Answer);
    assert_eq!(state.output_text(), "363.89");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let second = requests[1].json();
    let recorded = fixture_json(&path(
        "chat_stream_text_citation_after_tool_result.request.json",
    ));
    // The call goes back under its id, its result paired with it, as recorded.
    let call = &second["messages"][1]["tool_calls"][0];
    assert_eq!(call, &{
        let mut call = recorded["messages"][1]["tool_calls"][0].clone();
        call["function"]["arguments"] = json!("{\"number\":132413.0}");
        call
    });
    assert_eq!(second["messages"][2]["role"], "tool");
    assert_eq!(
        second["messages"][2]["tool_call_id"],
        recorded["messages"][2]["tool_call_id"]
    );
    assert_eq!(second["messages"][2]["content"], "363.89");
    // The reasoning goes back with its turn.
    let reasoning = streamed(
        "chat_stream_thinking_then_tool_call.sse",
        "/content/thinking",
    );
    assert_eq!(
        second["messages"][1]["content"],
        json!([{"type": "thinking", "thinking": reasoning}])
    );
    assert_eq!(second["stream"], true);
}
