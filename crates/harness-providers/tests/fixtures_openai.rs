//! OpenAI Chat Completions and llama.cpp: the recorded traffic of tests/fixtures served
//! from loopback, and what the provider makes of every field.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::Arc;

use harness_core::Request;

use harness_core::{
    CompletionResponse, FinishReason, Llm, LlmEvent, Message, TokenUsage, ToolCall, ToolSpec,
};
use harness_providers::{LlamaCpp, OpenAi, RetryPolicy};
use serde_json::{Value, json};
use support::{
    Reply, Server, collect_events, completed, deltas, fixture, fixture_json, openai_messages_normal,
};

async fn generate(
    path: &str,
    messages: &[Message],
    tools: &[Arc<ToolSpec>],
) -> (CompletionResponse, Server) {
    let server = Server::always(Reply::json(200, fixture(path))).await;
    let model = OpenAi::builder("gpt-4o-mini")
        .api_key("sk-test")
        .base_url(format!("{}/v1", server.url))
        .build()
        .unwrap();
    (
        model
            .generate(Request::new(messages).with_tools(tools))
            .await
            .unwrap(),
        server,
    )
}

async fn stream(
    path: &str,
    messages: &[Message],
    tools: &[Arc<ToolSpec>],
) -> (Vec<LlmEvent>, Server) {
    let server = Server::always(Reply::sse(fixture(path))).await;
    let model = OpenAi::builder("gpt-4o-mini")
        .api_key("sk-test")
        .base_url(format!("{}/v1", server.url))
        .build()
        .unwrap();
    let events = collect_events(&model, messages, tools).await;
    (events, server)
}

fn get_capital() -> Arc<ToolSpec> {
    Arc::new(ToolSpec::new(
        "get_capital",
        "Get the capital of a country.",
        json!({
            "additionalProperties": false,
            "properties": {"country": {"description": "The country name.", "type": "string"}},
            "required": ["country"],
            "type": "object"
        }),
    ))
}

#[tokio::test]
async fn nonstream_tool_call() {
    let (response, server) = generate(
        "openai/chat_nonstream_tool_call.json",
        &[Message::user("?")],
        &[],
    )
    .await;
    assert_eq!(
        response.tool_calls(),
        &[ToolCall::new("get_capital", json!({"country": "England"}))
            .with_id("call_SkEQ3ZGSJC8m6AvaIGNuuKdm")]
    );
    assert_eq!(response.content(), "");
    assert_eq!(response.thinking(), "");
    assert_eq!(response.finish_reason(), FinishReason::Stop);
    assert_eq!(
        response.usage(),
        Some(&TokenUsage::new(104, 16, 120).with_cached(0))
    );
    let request = &server.requests()[0];
    assert_eq!(
        (request.method.as_str(), request.target.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(request.header("content-type"), Some("application/json"));
}

#[tokio::test]
async fn nonstream_final_text() {
    let (response, _) = generate("openai/chat_nonstream_final_text.json", &[], &[]).await;
    assert_eq!(response.content(), "The capital of England is London.");
    assert!(response.tool_calls().is_empty());
    assert_eq!(response.finish_reason(), FinishReason::Stop);
    assert_eq!(response.usage(), Some(&TokenUsage::new(129, 9, 138)));
}

#[tokio::test]
async fn nonstream_parallel_tool_calls() {
    let (response, _) = generate("openai/chat_nonstream_parallel_tool_calls.json", &[], &[]).await;
    assert_eq!(
        response.tool_calls(),
        &[
            ToolCall::new(
                "GetWeatherArgs",
                json!({"city": "Edinburgh", "country": "GB", "units": "c"})
            )
            .with_id("call_fdNz3vOBKYgOIpMdWotB9MjY"),
            ToolCall::new(
                "get_stock_price",
                json!({"ticker": "AAPL", "exchange": "NASDAQ"})
            )
            .with_id("call_h1DWI1POMJLb0KwIyQHWXD4p"),
        ]
    );
    assert_eq!(response.usage(), Some(&TokenUsage::new(149, 60, 209)));
}

#[tokio::test]
async fn nonstream_strict_tool_call() {
    let (response, _) = generate("openai/chat_nonstream_strict_tool_call.json", &[], &[]).await;
    assert_eq!(
        response.tool_calls(),
        &[ToolCall::new(
            "get_weather",
            json!({"city": "San Francisco", "state": "CA"})
        )
        .with_id("call_CUdUoJpsWWVdxXntucvnol1M")]
    );
    assert_eq!(response.usage(), Some(&TokenUsage::new(48, 19, 67)));
    assert_eq!(response.finish_reason(), FinishReason::Stop);
}

#[tokio::test]
async fn stream_tool_call_with_usage_in_a_choiceless_chunk() {
    let (events, _) = stream("openai/chat_stream_tool_call_include_usage.sse", &[], &[]).await;
    assert_eq!(
        events.len(),
        1,
        "a tool-call turn streams as just Completed: {events:?}"
    );
    let response = completed(&events);
    assert_eq!(
        response.tool_calls(),
        &[ToolCall::new("get_capital", json!({"country": "UK"}))
            .with_id("call_ZR5UUuTt3pf61kjwAJIYdVMj")]
    );
    assert_eq!(response.usage(), Some(&TokenUsage::new(53, 15, 68)));
    assert_eq!(response.finish_reason(), FinishReason::Stop);
}

#[tokio::test]
async fn stream_single_tool_call_split_over_many_chunks() {
    let (events, _) = stream("openai/chat_stream_single_tool_call_usage.sse", &[], &[]).await;
    let response = completed(&events);
    assert_eq!(
        response.tool_calls(),
        &[ToolCall::new(
            "GetWeatherArgs",
            json!({"city": "Edinburgh", "country": "UK", "units": "c"})
        )
        .with_id("call_c91SqDXlYFuETYv8mUHzz6pp")]
    );
    assert_eq!(response.usage(), Some(&TokenUsage::new(76, 24, 100)));
}

#[tokio::test]
async fn stream_text_after_tool_result() {
    let (events, _) = stream(
        "openai/chat_stream_text_after_tool_result_include_usage.sse",
        &[],
        &[],
    )
    .await;
    let response = completed(&events);
    assert_eq!(deltas(&events, false), "The capital of the UK is London.");
    assert_eq!(response.content(), "The capital of the UK is London.");
    assert!(events.len() > 3, "text arrives in several deltas");
    assert_eq!(response.usage(), Some(&TokenUsage::new(78, 9, 87)));
    assert_eq!(response.finish_reason(), FinishReason::Stop);
}

/// The conversation of the recorded requests, in neutral form.
fn capital_conversation() -> Vec<Message> {
    vec![
        Message::user("What is the capital of France?"),
        Message::assistant("").with_tool_calls(vec![
            ToolCall::new("get_capital", json!({"country": "France"}))
                .with_id("pyd_ai_504f8147f83f44f3a5f14d87bfd01bda"),
        ]),
        Message::tool("Paris", "get_capital")
            .with_call_id("pyd_ai_504f8147f83f44f3a5f14d87bfd01bda"),
        Message::assistant("The capital of France is Paris.\n"),
        Message::user("What is the capital of England?"),
    ]
}

/// Compares our request with the recorded one on what is ours to set: the messages (a
/// recorded message without `content` matches ours with `content: null`; tool-call
/// arguments compare as JSON), the tools, and the keys we send.
fn assert_same_shape(ours: &Value, recorded: &Value) {
    assert_eq!(
        openai_messages_normal(&ours["messages"]),
        openai_messages_normal(&recorded["messages"])
    );
    // `strict` is the caller's choice in pydantic-ai, not a field of ours.
    let without_strict = |tools: Option<&Value>| {
        tools.cloned().map(|mut t| {
            for tool in t.as_array_mut().unwrap() {
                tool["function"].as_object_mut().unwrap().remove("strict");
            }
            t
        })
    };
    assert_eq!(
        without_strict(ours.get("tools")),
        without_strict(recorded.get("tools"))
    );
    for key in ["model", "stream", "stream_options"] {
        if let Some(value) = ours.get(key) {
            assert_eq!(Some(value), recorded.get(key), "{key}");
        }
    }
}

/// The recorded request's tools as specs.
fn tools_of(recorded: &Value) -> Vec<Arc<ToolSpec>> {
    recorded["body"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let f = &t["function"];
            Arc::new(ToolSpec::new(
                f["name"].as_str().unwrap(),
                f["description"].as_str().unwrap_or(""),
                f["parameters"].clone(),
            ))
        })
        .collect()
}

#[test]
fn requests_have_the_recorded_shape() {
    let model = OpenAi::builder("gpt-4o-mini").api_key("k").build().unwrap();
    let recorded = fixture_json("openai/chat_nonstream_tool_call.request.json");
    let ours = model.request_body(
        &Request::new(&capital_conversation()).with_tools(&[get_capital()]),
        false,
    );
    assert_same_shape(&ours, &recorded["body"]);
    assert_eq!(
        ours.get("stream"),
        None,
        "a non-streamed request omits stream"
    );

    let recorded = fixture_json("openai/chat_stream_tool_call_include_usage.request.json");
    let messages: Vec<Message> = recorded["body"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| Message::user(m["content"].as_str().unwrap()))
        .collect();
    let ours = model.request_body(
        &Request::new(&messages).with_tools(&tools_of(&recorded)),
        true,
    );
    assert_same_shape(&ours, &recorded["body"]);
    assert_eq!(ours["stream_options"], json!({"include_usage": true}));

    let recorded =
        fixture_json("openai/chat_stream_text_after_tool_result_include_usage.request.json");
    let body = &recorded["body"];
    let call = &body["messages"][1]["tool_calls"][0];
    let messages = vec![
        Message::user(body["messages"][0]["content"].as_str().unwrap()),
        Message::assistant("").with_tool_calls(vec![
            ToolCall::new(
                "get_capital",
                serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap(),
            )
            .with_id(call["id"].as_str().unwrap()),
        ]),
        Message::tool(
            body["messages"][2]["content"].as_str().unwrap(),
            "get_capital",
        )
        .with_call_id(body["messages"][2]["tool_call_id"].as_str().unwrap()),
    ];
    assert_same_shape(
        &model.request_body(
            &Request::new(&messages).with_tools(&tools_of(&recorded)),
            true,
        ),
        body,
    );

    // Minimal body: exactly model and messages.
    assert_eq!(
        model.request_body(&Request::new(&[Message::user("hi")]), false),
        json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]})
    );
}

// llama.cpp ------------------------------------------------------------------------------------

async fn llama(reply: Reply) -> (harness_providers::OpenAi, Server) {
    let server = Server::always(reply).await;
    let model = LlamaCpp::builder("smollm2")
        .base_url(format!("{}/v1", server.url))
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    (model, server)
}

#[tokio::test]
async fn llamacpp_nonstream_length_finish_cached_tokens_and_extra_fields() {
    let (model, server) = llama(Reply::json(
        200,
        fixture("llamacpp/chat_nonstream_text.json"),
    ))
    .await;
    let response = model
        .generate(Request::new(&[Message::user("Tell me about Norway.")]))
        .await
        .unwrap();
    assert_eq!(
        response.content(),
        "Norway is a country with a rich history and culture, and the capital of"
    );
    assert_eq!(response.finish_reason(), FinishReason::Length);
    assert_eq!(
        response.usage(),
        Some(&TokenUsage::new(29, 16, 45).with_cached(0))
    );
    // No key: no Authorization header at all.
    assert_eq!(server.requests()[0].header("authorization"), None);
    let recorded = fixture_json("llamacpp/chat_nonstream_text.request.json");
    let text = |i: usize| {
        recorded["messages"][i]["content"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let conversation = [Message::system(text(0)), Message::user(text(1))];
    let ours = model.request_body(&Request::new(&conversation), false);
    assert_eq!(ours["messages"], recorded["messages"]);
    assert_eq!(ours["model"], recorded["model"]);
}

#[tokio::test]
async fn llamacpp_stream_role_only_chunk_finish_chunk_and_usage_with_cached_tokens() {
    let (model, _) = llama(Reply::sse(fixture(
        "llamacpp/chat_stream_text_include_usage.sse",
    )))
    .await;
    let events = collect_events(&model, &[Message::user("x")], &[]).await;
    let response = completed(&events);
    assert_eq!(deltas(&events, false), response.content());
    assert_eq!(
        response.content(),
        "Norway is a country with a rich history and culture, and the capital of"
    );
    assert_eq!(response.finish_reason(), FinishReason::Length);
    assert_eq!(
        response.usage(),
        Some(&TokenUsage::new(29, 16, 45).with_cached(28))
    );
}

#[tokio::test]
async fn llamacpp_context_overflow_keeps_the_typed_body() {
    let raw = String::from_utf8(fixture("llamacpp/chat_context_overflow.response.txt")).unwrap();
    // The recording is the body on its first line, then the status.
    let body = raw.lines().next().unwrap().to_owned();
    assert!(raw.contains("HTTP 400"));
    let (model, server) = llama(Reply::json(400, body.clone())).await;
    let err = model
        .generate(Request::new(&[Message::user("x")]))
        .await
        .unwrap_err();
    let Some(provider) = err.provider() else {
        panic!("{err:?}")
    };
    assert_eq!(provider.status(), Some(400));
    assert_eq!(provider.error_type(), Some("exceed_context_size_error"));
    assert!(provider.body().unwrap().contains("n_ctx"), "{provider:?}");
    assert_eq!(server.requests().len(), 1, "a 400 is not retried");
}

// An agent end to end over the recorded exchange --------------------------------------------

mod capital {
    /// Get the capital of a country.
    ///
    /// * `country` - The country name.
    #[harness_core::tool]
    pub(crate) fn get_capital(country: String) -> String {
        if country == "England" {
            "London".into()
        } else {
            "Paris".into()
        }
    }
}
use capital::GetCapital;

#[tokio::test]
async fn an_agent_runs_the_recorded_exchange_through_the_provider() {
    let server = Server::start(|n, _| {
        let path = if n == 0 {
            "openai/chat_nonstream_tool_call.json"
        } else {
            "openai/chat_nonstream_final_text.json"
        };
        Reply::json(200, fixture(path))
    })
    .await;
    let model = OpenAi::builder("gpt-4o-mini")
        .api_key("k")
        .base_url(&server.url)
        .build()
        .unwrap();
    let agent = harness_core::Agent::builder(model)
        .tool(GetCapital)
        .build()
        .unwrap();
    let state = agent.run("What is the capital of England?").await.unwrap();
    assert_eq!(state.output_text(), "The capital of England is London.");
    assert_eq!(state.usage, TokenUsage::new(104 + 129, 16 + 9, 120 + 138));
    // The second request carried the call and its result in the Chat Completions form.
    let second = server.requests()[1].json();
    assert_eq!(
        second["messages"][1]["tool_calls"][0]["id"],
        json!("call_SkEQ3ZGSJC8m6AvaIGNuuKdm")
    );
    assert_eq!(
        second["messages"][1]["tool_calls"][0]["function"]["arguments"],
        json!(r#"{"country":"England"}"#)
    );
    assert_eq!(
        second["messages"][2],
        json!({"role": "tool", "tool_call_id": "call_SkEQ3ZGSJC8m6AvaIGNuuKdm", "content": "London"})
    );
    assert_eq!(second["tools"][0]["function"]["name"], json!("get_capital"));
}
