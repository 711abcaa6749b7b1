//! Anthropic and Gemini: the recorded traffic of tests/fixtures served from loopback, and
//! what the providers make of every field; and our requests for the recorded conversations.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::Arc;

use harness_core::{ModelSettings, PromptCache, Request};

use harness_core::{
    Block, FinishReason, Llm, LlmEvent, Message, ReasoningLevel, Thinking, TokenUsage, ToolCall,
    ToolSpec,
};
use harness_providers::{Anthropic, Gemini};
use serde_json::{Value, json};
use support::{Reply, Server, collect_events, completed, deltas, fixture, fixture_json};

fn text_of(path: &str, key: &str) -> String {
    // The whole text of the recorded answer, to compare with what was assembled.
    let body = String::from_utf8(fixture(path)).unwrap();
    let mut out = String::new();
    for line in body.lines().filter_map(|l| l.strip_prefix("data:")) {
        let Ok(v) = serde_json::from_str::<Value>(line.trim()) else {
            continue;
        };
        if let Some(t) = v["delta"][key].as_str() {
            out.push_str(t);
        }
    }
    out
}

// Anthropic --------------------------------------------------------------------------------

async fn anthropic(reply: Reply) -> (Anthropic, Server) {
    let server = Server::always(reply).await;
    let model = Anthropic::builder("claude-sonnet-4-0")
        .api_key("sk-ant")
        .base_url(format!("{}/v1", server.url))
        .build()
        .unwrap();
    (model, server)
}

#[tokio::test]
async fn anthropic_nonstream_thinking_with_signature_then_tool_use() {
    let path = "anthropic/messages_nonstream_thinking_then_tool_use.json";
    let recorded = fixture_json(path);
    let (model, server) = anthropic(Reply::json(200, fixture(path))).await;
    let response = model
        .generate(Request::new(&[Message::user("?")]))
        .await
        .unwrap();
    let signature = recorded["content"][0]["signature"].as_str().unwrap();
    let thinking = recorded["content"][0]["thinking"].as_str().unwrap();
    assert_eq!(
        response.blocks(),
        &[
            Thinking::signed(thinking, signature)
                .from_provider("anthropic")
                .into(),
            Block::text(
                "I'll help you find the largest city in your country. First, let me determine which country you're from."
            ),
        ]
    );
    assert_eq!(response.thinking(), thinking);
    assert_eq!(
        response.tool_calls(),
        &[ToolCall::new("get_user_country", json!({})).with_id("toolu_01YGzqpRE16Vricda3Aqcejo")]
    );
    assert_eq!(response.finish_reason(), FinishReason::Stop);
    assert_eq!(response.usage(), Some(&TokenUsage::new(398, 155, 553)));
    let request = &server.requests()[0];
    assert_eq!(request.target, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some("sk-ant"));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
}

#[tokio::test]
async fn anthropic_nonstream_final_text() {
    let path = "anthropic/messages_nonstream_final_text.json";
    let (model, _) = anthropic(Reply::json(200, fixture(path))).await;
    let response = model
        .generate(Request::new(&[Message::user("?")]))
        .await
        .unwrap();
    assert_eq!(
        response.content(),
        fixture_json(path)["content"][0]["text"].as_str().unwrap()
    );
    assert!(response.tool_calls().is_empty());
    assert_eq!(response.usage(), Some(&TokenUsage::new(566, 126, 692)));
    assert_eq!(response.finish_reason(), FinishReason::Stop);
}

#[tokio::test]
async fn anthropic_stream_thinking_then_signature_then_text() {
    let path = "anthropic/messages_stream_thinking_signature_delta.sse";
    let (model, _) = anthropic(Reply::sse(fixture(path))).await;
    let events = collect_events(&model, &[Message::user("?")], &[]).await;
    let response = completed(&events);
    let thinking = text_of(path, "thinking");
    let signature = text_of(path, "signature");
    assert!(!signature.is_empty());
    assert_eq!(deltas(&events, true), thinking);
    assert_eq!(deltas(&events, false), text_of(path, "text"));
    assert_eq!(
        response.blocks(),
        &[
            Thinking::signed(thinking.clone(), signature)
                .from_provider("anthropic")
                .into(),
            Block::text(text_of(path, "text"))
        ]
    );
    // Reasoning arrives before the answer.
    assert!(matches!(events[0], LlmEvent::ThinkingDelta(_)));
    assert_eq!(response.usage(), Some(&TokenUsage::new(43, 282, 325)));
    assert_eq!(response.finish_reason(), FinishReason::Stop);
}

#[tokio::test]
async fn anthropic_stream_skips_server_tool_blocks_and_joins_input_json_fragments() {
    let path = "anthropic/messages_stream_server_tool_search_then_tool_use_input_json_delta.sse";
    let (model, _) = anthropic(Reply::sse(fixture(path))).await;
    let events = collect_events(&model, &[Message::user("?")], &[]).await;
    let response = completed(&events);
    assert_eq!(
        response.tool_calls(),
        &[ToolCall::new(
            "get_exchange_rate",
            json!({"from_currency": "USD", "to_currency": "EUR"})
        )
        .with_id("toolu_01EFn5wTNBYA8Reni8rbmnHT")]
    );
    assert_eq!(
        response.content(),
        "Let me search for a tool that can provide current exchange rate information.I found the right tool! Let me fetch the current USD to EUR exchange rate for you."
    );
    assert_eq!(deltas(&events, false), response.content());
    assert_eq!(response.usage(), Some(&TokenUsage::new(1591, 175, 1766)));
}

#[tokio::test]
async fn anthropic_stream_final_text_after_tool_result() {
    let path = "anthropic/messages_stream_final_text_after_tool_result.sse";
    let (model, _) = anthropic(Reply::sse(fixture(path))).await;
    let events = collect_events(&model, &[Message::user("?")], &[]).await;
    let response = completed(&events);
    assert_eq!(response.content(), text_of(path, "text"));
    assert!(
        response
            .content()
            .starts_with("The current exchange rate is **1 USD = 0.92 EUR**.")
    );
    assert_eq!(response.usage(), Some(&TokenUsage::new(1007, 59, 1066)));
    assert_eq!(response.finish_reason(), FinishReason::Stop);
}

/// Anthropic messages compared on what is ours to set: a plain-string content equals one
/// text block; `is_error` and `cache_control` are pydantic-ai's; a tool result's text
/// blocks equal their joined string.
fn anthropic_messages(messages: &Value) -> Vec<Value> {
    messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let content = match &m["content"] {
                Value::String(s) => json!([{"type": "text", "text": s}]),
                other => other.clone(),
            };
            let blocks: Vec<Value> = content
                .as_array()
                .unwrap()
                .iter()
                .map(|b| {
                    let mut b = b.as_object().unwrap().clone();
                    b.remove("is_error");
                    b.remove("cache_control");
                    if let Some(Value::Array(parts)) = b.get("content").cloned() {
                        let text: String =
                            parts.iter().filter_map(|p| p["text"].as_str()).collect();
                        b.insert("content".into(), Value::from(text));
                    }
                    Value::Object(b)
                })
                .collect();
            json!({"role": m["role"], "content": blocks})
        })
        .collect()
}

#[test]
fn anthropic_requests_replay_signed_thinking_and_match_the_recording() {
    let recorded = fixture_json("anthropic/messages_nonstream_final_text.request.json");
    let body = &recorded["body"];
    let assistant = &body["messages"][1]["content"];
    let conversation = vec![
        Message::user("What is the largest city in the user country?"),
        Message::assistant(vec![
            Thinking::signed(
                assistant[0]["thinking"].as_str().unwrap(),
                assistant[0]["signature"].as_str().unwrap(),
            )
            .into(),
            Block::text(assistant[1]["text"].as_str().unwrap()),
            // Unsigned thinking is never sent.
            Thinking::new("scratch").into(),
        ])
        .with_tool_calls(vec![
            ToolCall::new("get_user_country", json!({})).with_id("toolu_01YGzqpRE16Vricda3Aqcejo"),
        ]),
        Message::tool("Mexico", "get_user_country").with_call_id("toolu_01YGzqpRE16Vricda3Aqcejo"),
    ];
    let tools: Vec<Arc<ToolSpec>> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            Arc::new(ToolSpec::new(
                t["name"].as_str().unwrap(),
                t["description"].as_str().unwrap_or(""),
                t["input_schema"].clone(),
            ))
        })
        .collect();
    let model = Anthropic::builder("claude-sonnet-4-0")
        .api_key("k")
        .build()
        .unwrap();
    let ours = model.request_body(&Request::new(&conversation).with_tools(&tools), false);
    assert_eq!(
        anthropic_messages(&ours["messages"]),
        anthropic_messages(&body["messages"])
    );
    assert_eq!(ours["model"], body["model"]);
    assert_eq!(ours["max_tokens"], body["max_tokens"]);
    for (mine, theirs) in ours["tools"]
        .as_array()
        .unwrap()
        .iter()
        .zip(body["tools"].as_array().unwrap())
    {
        assert_eq!(mine["name"], theirs["name"]);
        assert_eq!(mine["input_schema"], theirs["input_schema"]);
    }
    assert_eq!(ours.get("stream"), None);

    // The thinking request: a low reasoning effort is the recorded 1024-token budget.
    let recorded = fixture_json("anthropic/messages_stream_thinking_signature_delta.request.json");
    let body = &recorded["body"];
    let model = Anthropic::builder("claude-sonnet-4-0")
        .api_key("k")
        .settings(ModelSettings::new().with_reasoning(ReasoningLevel::Low))
        .build()
        .unwrap();
    let prompt = body["messages"][0]["content"][0]["text"].as_str().unwrap();
    let ours = model.request_body(&Request::new(&[Message::user(prompt)]), true);
    assert_eq!(ours["thinking"], body["thinking"]);
    assert_eq!(ours["max_tokens"], body["max_tokens"]);
    assert_eq!(ours["stream"], json!(true));
    assert_eq!(
        anthropic_messages(&ours["messages"]),
        anthropic_messages(&body["messages"])
    );
}

#[test]
fn anthropic_merges_consecutive_tool_results_and_marks_cache_breakpoints() {
    let model = Anthropic::builder("m")
        .api_key("k")
        .settings(ModelSettings::new().with_prompt_cache(PromptCache::breakpoints()))
        .build()
        .unwrap();
    let conversation = vec![
        Message::system("Be brief."),
        Message::user("go"),
        Message::assistant("").with_tool_calls(vec![
            ToolCall::new("a", json!({})).with_id("1"),
            ToolCall::new("b", json!({})).with_id("2"),
        ]),
        Message::tool("ra", "a").with_call_id("1"),
        Message::tool("rb", "b").with_call_id("2"),
    ];
    let tools = [
        Arc::new(ToolSpec::new("a", "A.", json!({"type": "object"}))),
        Arc::new(ToolSpec::new("b", "B.", json!({"type": "object"}))),
    ];
    let body = model.request_body(&Request::new(&conversation).with_tools(&tools), false);
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(
        body["tools"][1]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert_eq!(body["tools"][0].get("cache_control"), None);
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(
        messages.len(),
        3,
        "user, assistant, one user message with both results"
    );
    assert_eq!(messages[2]["content"].as_array().unwrap().len(), 2);
    // The last message written, the run of results, carries the third breakpoint.
    assert_eq!(
        messages[2]["content"][1]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert_eq!(messages[2]["content"][0].get("cache_control"), None);
    assert_eq!(
        messages[1]["content"].as_array().unwrap().len(),
        2,
        "an empty text adds no block"
    );
}

// Gemini -----------------------------------------------------------------------------------

async fn gemini(reply: Reply) -> (Gemini, Server) {
    let server = Server::always(reply).await;
    let model = Gemini::builder("gemini-2.5-flash")
        .api_key("g-key")
        .base_url(server.url.clone())
        .build()
        .unwrap();
    (model, server)
}

#[tokio::test]
async fn gemini_function_call_with_thought_signature() {
    let path = "gemini/generate_content_function_call_thought_signature.json";
    let recorded = fixture_json(path);
    let (model, server) = gemini(Reply::json(200, fixture(path))).await;
    let response = model
        .generate(Request::new(&[Message::user("?")]))
        .await
        .unwrap();
    let part = &recorded["candidates"][0]["content"]["parts"][0];
    assert_eq!(
        response.tool_calls(),
        &[ToolCall::new(
            "record",
            part["functionCall"]["args"].clone()
        )]
    );
    assert_eq!(
        response.blocks(),
        &[
            Thinking::signed("", part["thoughtSignature"].as_str().unwrap())
                .from_provider("gemini")
                .into()
        ]
    );
    // It names the vendor it came from, which equality leaves aside.
    let Some(Block::Thinking(thinking)) = response.blocks().first() else {
        panic!("{:?}", response.blocks())
    };
    assert_eq!(thinking.provider.as_deref(), Some("gemini"));
    assert_eq!(response.content(), "");
    assert_eq!(
        response.usage(),
        Some(&TokenUsage::new(776, 59 + 184, 1019).with_reasoning(184))
    );
    assert_eq!(response.finish_reason(), FinishReason::Stop);
    let request = &server.requests()[0];
    assert_eq!(request.target, "/models/gemini-2.5-flash:generateContent");
    assert_eq!(request.header("x-goog-api-key"), Some("g-key"));
}

#[tokio::test]
async fn gemini_cached_content_token_counts() {
    for (path, text, usage) in [
        (
            "gemini/generate_content_cached_content.json",
            "Paris.",
            TokenUsage::new(3520, 44, 3564)
                .with_cached(3512)
                .with_reasoning(42),
        ),
        (
            "gemini/generate_content_text_after_function_response_cachedContentTokenCount.json",
            "",
            TokenUsage::new(859, 28, 887).with_cached(594),
        ),
    ] {
        let (model, _) = gemini(Reply::json(200, fixture(path))).await;
        let response = model
            .generate(Request::new(&[Message::user("?")]))
            .await
            .unwrap();
        assert_eq!(response.usage(), Some(&usage), "{path}");
        if text.is_empty() {
            assert!(
                response
                    .content()
                    .starts_with("I have recorded a tree with root \"root\""),
                "{path}"
            );
        } else {
            assert_eq!(response.content(), text);
        }
        assert!(response.tool_calls().is_empty());
    }
}

#[tokio::test]
async fn gemini_function_call_with_extra_fields() {
    let path = "gemini/generate_content_function_call_avglogprobs.json";
    let (model, _) = gemini(Reply::json(200, fixture(path))).await;
    let response = model
        .generate(Request::new(&[Message::user("?")]))
        .await
        .unwrap();
    assert_eq!(
        response.tool_calls(),
        &[ToolCall::new("get_capital", json!({"country": "France"}))]
    );
    assert_eq!(response.usage(), Some(&TokenUsage::new(23, 5, 28)));
}

async fn gemini_stream(path: &str) -> (Vec<LlmEvent>, Server) {
    let (model, server) = gemini(Reply::sse(fixture(path))).await;
    let events = collect_events(&model, &[Message::user("?")], &[]).await;
    (events, server)
}

#[tokio::test]
async fn gemini_streams() {
    let (events, server) = gemini_stream("gemini/stream_function_call_thought_signature.sse").await;
    let response = completed(&events);
    assert_eq!(
        response.tool_calls(),
        &[ToolCall::new("get_country", json!({}))]
    );
    assert!(
        matches!(&response.blocks()[0], Block::Thinking(t) if t.signature.as_deref().is_some_and(|s| s.starts_with("EpwICpkIAXLI")))
    );
    assert_eq!(
        response.usage(),
        Some(&TokenUsage::new(29, 10 + 202, 241).with_reasoning(202))
    );
    let request = &server.requests()[0];
    assert_eq!(
        request.target,
        "/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );

    let (events, _) = gemini_stream("gemini/stream_text_after_function_response.sse").await;
    let response = completed(&events);
    assert_eq!(response.content(), "The capital of Mexico is Mexico City.");
    assert_eq!(deltas(&events, false), response.content());
    assert_eq!(response.usage(), Some(&TokenUsage::new(257, 8, 265)));

    let (events, _) = gemini_stream("gemini/stream_text_final.sse").await;
    let response = completed(&events);
    assert_eq!(response.content(), "The temperature in Paris is 30°C.\n");
    assert_eq!(response.usage(), Some(&TokenUsage::new(79, 12, 91)));
    assert_eq!(response.finish_reason(), FinishReason::Stop);
}

#[tokio::test]
async fn gemini_a_usage_only_chunk_is_not_an_error() {
    let body = "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Hi\"}], \"role\": \"model\"}, \"finishReason\": \"STOP\"}]}\r\n\r\ndata: {\"usageMetadata\": {\"promptTokenCount\": 3, \"candidatesTokenCount\": 1, \"totalTokenCount\": 4}}\r\n\r\n";
    let (model, _) = gemini(Reply::sse(body)).await;
    let events = collect_events(&model, &[Message::user("?")], &[]).await;
    let response = completed(&events);
    assert_eq!(response.content(), "Hi");
    assert_eq!(response.usage(), Some(&TokenUsage::new(3, 1, 4)));
}

#[test]
fn gemini_requests_replay_the_thought_signature_and_match_the_recording() {
    let recorded = fixture_json(
        "gemini/generate_content_text_after_function_response_cachedContentTokenCount.request.json",
    );
    let body = &recorded["body"];
    let call_part = &body["contents"][1]["parts"][0];
    let signature = call_part["thoughtSignature"].as_str().unwrap();
    let id = call_part["functionCall"]["id"].as_str().unwrap();
    let conversation = vec![
        Message::system("Be brief."),
        Message::user(body["contents"][0]["parts"][0]["text"].as_str().unwrap()),
        Message::assistant(vec![Block::from(Thinking::signed("", signature))]).with_tool_calls(
            vec![ToolCall::new("record", call_part["functionCall"]["args"].clone()).with_id(id)],
        ),
        Message::tool("Recorded tree \"root\" with 2 children.", "record").with_call_id(id),
    ];
    let declaration = &body["tools"][0]["functionDeclarations"][0];
    let tools = [Arc::new(ToolSpec::new(
        "record",
        declaration["description"].as_str().unwrap(),
        declaration["parameters_json_schema"].clone(),
    ))];
    let model = Gemini::builder("gemini-2.5-flash")
        .api_key("k")
        .build()
        .unwrap();
    let ours = model
        .request_body(&Request::new(&conversation).with_tools(&tools))
        .unwrap();
    assert_eq!(
        ours["systemInstruction"],
        json!({"parts": [{"text": "Be brief."}]})
    );
    assert_eq!(ours["contents"][0], body["contents"][0]);
    assert_eq!(
        ours["contents"][1], body["contents"][1],
        "the call and its signature, replayed"
    );
    // The function response: the same name and id; the result under our own key.
    let theirs = &body["contents"][2]["parts"][0]["functionResponse"];
    let mine = &ours["contents"][2]["parts"][0]["functionResponse"];
    assert_eq!(
        (&mine["name"], &mine["id"]),
        (&theirs["name"], &theirs["id"])
    );
    assert_eq!(
        mine["response"],
        json!({"result": "Recorded tree \"root\" with 2 children."})
    );
    assert_eq!(ours["contents"][2]["role"], json!("user"));
    assert_eq!(
        ours["tools"],
        json!([{"functionDeclarations": [{
            "name": "record", "description": declaration["description"], "parameters_json_schema": declaration["parameters_json_schema"]
        }]}])
    );
}

#[test]
fn gemini_refuses_an_image_url_and_sends_inline_data() {
    let model = Gemini::builder("g").api_key("k").build().unwrap();
    let url = Message::user(vec![
        Block::text("see"),
        harness_core::Image::from_url("https://x/y.png").into(),
    ]);
    let err = model.request_body(&Request::new(&[url])).unwrap_err();
    assert!(err.to_string().contains("inline image data"), "{err}");
    let inline = Message::user(vec![
        Block::text("see"),
        harness_core::Image::from_base64("aGk=", "image/png").into(),
    ]);
    let body = model.request_body(&Request::new(&[inline])).unwrap();
    assert_eq!(
        body["contents"][0]["parts"][1],
        json!({"inline_data": {"mime_type": "image/png", "data": "aGk="}})
    );
}
