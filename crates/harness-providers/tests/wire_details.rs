//! Details of the wire formats the recordings do not cover: content blocks per vendor,
//! reasoning deltas, and the SSE decoder over every recorded stream split anywhere.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use harness_core::Request;

use harness_core::{Block, Document, Image, LlmEvent, Message, Thinking};
use harness_providers::replay::{Format, decode_answer, decode_stream};
use harness_providers::{Anthropic, OpenAi, SseDecoder};
use serde_json::{Value, json};

#[test]
fn openai_renders_images_and_documents_as_parts_and_drops_thinking() {
    let model = OpenAi::builder("m").api_key("k").build().unwrap();
    let message = Message::user(vec![
        Block::text("Compare these."),
        Image::from_url("https://x/cat.png").into(),
        Image::from_base64("aGk=", "image/gif").into(),
        Document::pdf("JVBE").with_name("report.pdf").into(),
        Document::pdf("JVBE").into(),
        Thinking::new("hidden").into(),
    ]);
    let body = model.request_body(&Request::new(&[message]), false);
    assert_eq!(
        body["messages"][0]["content"],
        json!([
            {"type": "text", "text": "Compare these."},
            {"type": "image_url", "image_url": {"url": "https://x/cat.png"}},
            {"type": "image_url", "image_url": {"url": "data:image/gif;base64,aGk="}},
            {"type": "file", "file": {"filename": "report.pdf", "file_data": "data:application/pdf;base64,JVBE"}},
            {"type": "file", "file": {"filename": "document", "file_data": "data:application/pdf;base64,JVBE"}}
        ])
    );
    // Text and thinking alone is a plain string of the text.
    let thought = [Message::assistant(vec![
        Thinking::new("t").into(),
        Block::text("a"),
    ])];
    let body = model.request_body(&Request::new(&thought), false);
    assert_eq!(
        body["messages"][0],
        json!({"role": "assistant", "content": "a"})
    );
    // A tool result without an id is sent with an empty one.
    let body = model.request_body(&Request::new(&[Message::tool("r", "f")]), false);
    assert_eq!(
        body["messages"][0],
        json!({"role": "tool", "tool_call_id": "", "content": "r"})
    );
}

#[test]
fn anthropic_renders_images_by_url_or_data_and_documents() {
    let model = Anthropic::builder("m").api_key("k").build().unwrap();
    let message = Message::user(vec![
        Block::text("Look."),
        Image::from_url("https://x/cat.png").into(),
        Image::from_base64("aGk=", "image/png").into(),
        Document::pdf("JVBE").into(),
    ]);
    let body = model.request_body(&Request::new(&[message]), false);
    assert_eq!(
        body["messages"][0]["content"],
        json!([
            {"type": "text", "text": "Look."},
            {"type": "image", "source": {"type": "url", "url": "https://x/cat.png"}},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "aGk="}},
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"}}
        ])
    );
    let body = model.request_body(&Request::new(&[Message::user("hi")]), false);
    assert_eq!(
        body,
        json!({"model": "m", "max_tokens": 4096, "messages": [{"role": "user", "content": "hi"}]})
    );
}

#[test]
fn reasoning_content_and_reasoning_become_thinking() {
    let answer = json!({"choices": [{"message": {"content": "4", "reasoning_content": "2+2"}, "finish_reason": "stop"}]});
    let response = decode_answer(Format::OpenAi, &answer).unwrap();
    assert_eq!(
        response.blocks(),
        &[Thinking::new("2+2").into(), Block::text("4")]
    );

    let body = concat!(
        "data: {\"choices\":[{\"delta\":{\"reasoning\":\"think\"}}]}\n\n",
        "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"ing\",\"content\":\"ok\"}}]}\n\n",
        "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    let mut events = Vec::new();
    let response = decode_stream(Format::OpenAi, body.as_bytes(), 7, |e| events.push(e)).unwrap();
    assert_eq!(
        events,
        vec![
            LlmEvent::ThinkingDelta("think".into()),
            LlmEvent::ThinkingDelta("ing".into()),
            LlmEvent::TextDelta("ok".into()),
        ]
    );
    assert_eq!(response.thinking(), "thinking");
    assert_eq!(response.content(), "ok");
    assert_eq!(response.finish_reason(), harness_core::FinishReason::Length);
    assert_eq!(response.usage(), None, "no usage reported, none invented");
}

#[test]
fn unparseable_tool_arguments_are_kept_as_sent_and_never_invented() {
    let answer = json!({"choices": [{"message": {"tool_calls": [
        {"id": "1", "function": {"name": "f", "arguments": "{not json"}},
        {"id": "2", "function": {"name": "g", "arguments": ""}},
        {"id": "3", "function": {"name": "h", "arguments": "[1]"}}
    ]}, "finish_reason": "tool_calls"}]});
    let response = decode_answer(Format::OpenAi, &answer).unwrap();
    let calls = response.tool_calls();
    assert!(calls.iter().all(|c| c.arguments.is_empty()));
    // Text that is not an object is kept verbatim (the agent will not run the call); no
    // text at all is a call without arguments.
    let raw: Vec<Option<&str>> = calls.iter().map(|c| c.raw_arguments.as_deref()).collect();
    assert_eq!(raw, [Some("{not json"), None, Some("[1]")]);
    // Cut at the output limit, a call with no arguments yet is cut off, not empty.
    let cut = json!({"choices": [{"message": {"tool_calls": [
        {"id": "1", "function": {"name": "g", "arguments": ""}}
    ]}, "finish_reason": "length"}]});
    let response = decode_answer(Format::OpenAi, &cut).unwrap();
    assert_eq!(response.tool_calls()[0].raw_arguments.as_deref(), Some(""));
    let err = decode_answer(Format::OpenAi, &json!({"choices": []})).unwrap_err();
    assert!(
        err.to_string().contains("OpenAI response has no choices"),
        "{err}"
    );
    assert_eq!(
        err.provider().unwrap().kind(),
        harness_core::ProviderErrorKind::Malformed
    );
    // A long answer is clipped in the message without cutting a character in two.
    let long = json!({"choices": [], "note": "é".repeat(300)});
    let err = decode_answer(Format::OpenAi, &long).unwrap_err();
    assert!(err.to_string().ends_with("..."), "{err}");
    let err = decode_answer(Format::OpenAi, &json!({"id": "x"})).unwrap_err();
    assert!(
        err.to_string()
            .contains("OpenAI response is missing 'choices'"),
        "{err}"
    );
}

#[test]
fn every_recorded_stream_decodes_the_same_whatever_the_chunking() {
    let dir = support::fixtures_dir();
    for vendor in ["openai", "anthropic", "gemini", "llamacpp"] {
        for entry in std::fs::read_dir(dir.join(vendor)).unwrap().flatten() {
            let path = entry.path();
            if path.extension().and_then(|e| e.to_str()) != Some("sse") {
                continue;
            }
            let body = std::fs::read(&path).unwrap();
            let whole = events_of(&body, body.len());
            assert!(!whole.is_empty(), "{}", path.display());
            for chunk in [1, 2, 3, 7, 64, 1000] {
                assert_eq!(
                    events_of(&body, chunk),
                    whole,
                    "{} in {chunk}-byte chunks",
                    path.display()
                );
            }
        }
    }
}

fn events_of(body: &[u8], chunk: usize) -> Vec<(String, String)> {
    let mut decoder = SseDecoder::new();
    let mut out = Vec::new();
    for piece in body.chunks(chunk) {
        decoder.feed(piece, |e| out.push((e.event.to_owned(), e.data.to_owned())));
    }
    decoder.finish(|e| out.push((e.event.to_owned(), e.data.to_owned())));
    out
}

/// A turn with two tool results, the first holding an image beside its text.
fn tool_results_with_an_image() -> Vec<Message> {
    let call = |id: &str| harness_core::ToolCall::new("shot", json!({})).with_id(id);
    vec![
        Message::user("Look."),
        Message::assistant("").with_tool_calls(vec![call("c1"), call("c2")]),
        Message::tool(
            harness_core::Content::Blocks(vec![
                Block::text("a screenshot"),
                Image::from_base64("aGk=", "image/png").into(),
            ]),
            "shot",
        )
        .with_call_id("c1"),
        Message::tool("no change", "shot").with_call_id("c2"),
    ]
}

#[test]
fn openai_sends_a_tool_results_images_in_a_user_message_after_the_results() {
    let model = OpenAi::builder("m").api_key("k").build().unwrap();
    let body = model.request_body(&Request::new(&tool_results_with_an_image()), false);
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 5);
    assert_eq!(
        messages[2],
        json!({"role": "tool", "tool_call_id": "c1", "content": "a screenshot"})
    );
    assert_eq!(
        messages[3],
        json!({"role": "tool", "tool_call_id": "c2", "content": "no change"})
    );
    assert_eq!(
        messages[4],
        json!({"role": "user", "content": [
            {"type": "text", "text": "The result of shot includes:"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGk="}}
        ]})
    );
}

#[test]
fn anthropic_sends_a_tool_results_image_as_a_content_block() {
    let model = Anthropic::builder("m").api_key("k").build().unwrap();
    let body = model.request_body(&Request::new(&tool_results_with_an_image()), false);
    assert_eq!(
        body["messages"][2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "c1", "content": [
                {"type": "text", "text": "a screenshot"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "aGk="}}
            ]},
            {"type": "tool_result", "tool_use_id": "c2", "content": "no change"}
        ]})
    );
}

#[test]
fn gemini_sends_a_tool_results_image_as_an_inline_part_beside_its_response() {
    let model = harness_providers::Gemini::builder("m")
        .api_key("k")
        .build()
        .unwrap();
    let body = model
        .request_body(&Request::new(&tool_results_with_an_image()))
        .unwrap();
    assert_eq!(
        body["contents"][2],
        json!({"role": "user", "parts": [
            {"functionResponse": {"name": "shot", "response": {"result": "a screenshot"}, "id": "c1"}},
            {"inline_data": {"mime_type": "image/png", "data": "aGk="}},
            {"functionResponse": {"name": "shot", "response": {"result": "no change"}, "id": "c2"}}
        ]})
    );
}

/// A tool turn as a transcript holds it after `reasoning`, asking for `get_weather`.
fn turn_after(reasoning: Vec<Block>) -> [Message; 3] {
    let call = harness_core::ToolCall::new("get_weather", json!({"city": "Oslo"})).with_id("c1");
    [
        Message::user("Weather in Oslo?"),
        Message::assistant(harness_core::Content::Blocks(reasoning)).with_tool_calls(vec![call]),
        Message::tool("Sunny", "get_weather").with_call_id("c1"),
    ]
}

/// A transcript moves between vendors (a fallback model, a resumed run): each vendor's
/// reasoning signature or redacted data goes back to that vendor only, since another would
/// refuse it; reasoning that names no vendor goes wherever it fits.
#[test]
fn reasoning_signatures_go_back_only_to_the_vendor_that_made_them() {
    let anthropic = Anthropic::builder("m").api_key("k").build().unwrap();
    let gemini = harness_providers::Gemini::builder("m")
        .api_key("k")
        .build()
        .unwrap();
    let claude_made = vec![
        Thinking::signed("Weather first.", "claude-sig")
            .from_provider("anthropic")
            .into(),
        Thinking::redacted("claude-data")
            .from_provider("anthropic")
            .into(),
    ];
    let gemini_made = vec![
        Thinking::signed("", "gemini-sig")
            .from_provider("gemini")
            .into(),
    ];
    let unnamed = vec![Thinking::signed("Weather first.", "sig").into()];
    let tool_use =
        json!({"type": "tool_use", "id": "c1", "name": "get_weather", "input": {"city": "Oslo"}});
    let function_call =
        json!({"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}, "id": "c1"}});

    let to_claude = |reasoning| {
        let messages = turn_after(reasoning);
        anthropic.request_body(&Request::new(&messages), false)["messages"][1]["content"].clone()
    };
    let to_gemini = |reasoning| {
        let messages = turn_after(reasoning);
        gemini.request_body(&Request::new(&messages)).unwrap()["contents"][1]["parts"].clone()
    };

    assert_eq!(
        to_claude(claude_made.clone()),
        json!([
            {"type": "thinking", "thinking": "Weather first.", "signature": "claude-sig"},
            {"type": "redacted_thinking", "data": "claude-data"},
            tool_use
        ])
    );
    assert_eq!(to_claude(gemini_made.clone()), json!([tool_use]));
    assert_eq!(
        to_claude(unnamed.clone()),
        json!([
            {"type": "thinking", "thinking": "Weather first.", "signature": "sig"},
            tool_use
        ])
    );

    let mut signed_call = function_call.clone();
    signed_call["thoughtSignature"] = json!("gemini-sig");
    assert_eq!(to_gemini(gemini_made), json!([signed_call]));
    assert_eq!(to_gemini(claude_made), json!([function_call]));
    signed_call["thoughtSignature"] = json!("sig");
    assert_eq!(to_gemini(unnamed), json!([signed_call]));
}

/// Gemini's models may give their calls no id; OpenAI's and Anthropic's formats pair a call
/// and its result by id and refuse an empty one. A transcript that moves to them gets an id
/// on each call (the same on every request) and each result the id of the call it answers;
/// an id already there is kept.
#[test]
fn calls_without_ids_get_paired_ids_for_vendors_that_need_them() {
    let city = |c: &str| json!({"city": c});
    let messages = [
        Message::user("Weather in Oslo and Rome?"),
        Message::assistant("").with_tool_calls(vec![
            harness_core::ToolCall::new("get_weather", city("Oslo")),
            harness_core::ToolCall::new("get_weather", city("Rome")).with_id("kept"),
        ]),
        Message::tool("Sunny", "get_weather"),
        Message::tool("Rainy", "get_weather"),
        Message::assistant("").with_tool_calls(vec![harness_core::ToolCall::new(
            "get_weather",
            city("Oslo"),
        )]),
        Message::tool("Still sunny", "get_weather"),
    ];
    let openai = OpenAi::builder("m").api_key("k").build().unwrap();
    let body = openai.request_body(&Request::new(&messages), false);
    let sent = &body["messages"];
    let call_ids = |at: usize| -> Vec<Value> {
        sent[at]["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].clone())
            .collect()
    };
    assert_eq!(call_ids(1), [json!("call_1_0"), json!("kept")]);
    assert_eq!(sent[2]["tool_call_id"], "call_1_0");
    assert_eq!(sent[3]["tool_call_id"], "kept");
    assert_eq!(call_ids(4), [json!("call_4_0")]);
    assert_eq!(sent[5]["tool_call_id"], "call_4_0");
    // The same transcript asks the same ids again.
    assert_eq!(openai.request_body(&Request::new(&messages), false), body);

    let anthropic = Anthropic::builder("m").api_key("k").build().unwrap();
    let sent = &anthropic.request_body(&Request::new(&messages), false)["messages"];
    let ids = |at: usize, key: &str| -> Vec<Value> {
        sent[at]["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b[key].clone())
            .collect()
    };
    assert_eq!(ids(1, "id"), [json!("call_1_0"), json!("kept")]);
    assert_eq!(ids(2, "tool_use_id"), [json!("call_1_0"), json!("kept")]);
    assert_eq!(ids(3, "id"), [json!("call_4_0")]);
    assert_eq!(ids(4, "tool_use_id"), [json!("call_4_0")]);

    // A transcript whose calls all have ids is sent as it is.
    let with_ids = [
        Message::user("Weather?"),
        Message::assistant("").with_tool_calls(vec![
            harness_core::ToolCall::new("get_weather", city("Oslo")).with_id("c9"),
        ]),
        Message::tool("Sunny", "get_weather").with_call_id("c9"),
    ];
    let sent = &openai.request_body(&Request::new(&with_ids), false)["messages"];
    assert_eq!(sent[1]["tool_calls"][0]["id"], "c9");
    assert_eq!(sent[2]["tool_call_id"], "c9");
}

/// An empty answer stays in the transcript (the loop keeps every turn), but Anthropic and
/// Gemini refuse a message with no content: it is left out of what they are sent (both take
/// two user turns in a row as one). OpenAI takes an empty assistant message as it is.
#[test]
fn an_empty_answer_is_left_out_for_vendors_that_refuse_empty_messages() {
    let messages = [
        Message::user("Hi"),
        Message::assistant(""),
        Message::user("Again?"),
        Message::assistant(harness_core::Content::Blocks(vec![
            Thinking::new("unsigned").into(),
        ])),
        Message::user("And now?"),
    ];
    let anthropic = Anthropic::builder("m").api_key("k").build().unwrap();
    assert_eq!(
        anthropic.request_body(&Request::new(&messages), false)["messages"],
        json!([
            {"role": "user", "content": "Hi"},
            {"role": "user", "content": "Again?"},
            {"role": "user", "content": "And now?"}
        ])
    );
    let gemini = harness_providers::Gemini::builder("m")
        .api_key("k")
        .build()
        .unwrap();
    assert_eq!(
        gemini.request_body(&Request::new(&messages)).unwrap()["contents"],
        json!([
            {"role": "user", "parts": [{"text": "Hi"}]},
            {"role": "user", "parts": [{"text": "Again?"}]},
            {"role": "user", "parts": [{"text": "And now?"}]}
        ])
    );
    let openai = OpenAi::builder("m").api_key("k").build().unwrap();
    let sent = &openai.request_body(&Request::new(&messages), false)["messages"];
    assert_eq!(sent[1], json!({"role": "assistant", "content": ""}));
    assert_eq!(sent.as_array().map(Vec::len), Some(5));
}
