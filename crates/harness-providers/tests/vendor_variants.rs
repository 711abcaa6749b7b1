//! What other servers of a vendor's format send that the recordings do not: content as a
//! list of parts (Mistral's reasoning models), OpenAI's refusals, tool calls sent whole
//! without ids, a tool_use whose input comes whole at its start, a JSON error answering a
//! stream request. Each must be read, not dropped, and never turned into invented arguments.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use harness_core::Request;

use harness_core::{Block, LlmEvent, Message, ProviderErrorKind, Thinking};
use harness_providers::{OpenAi, StreamFormat, decode_stream};
use serde_json::json;
use support::{Reply, Server};

fn decode(format: StreamFormat, body: &str) -> (Vec<LlmEvent>, harness_core::CompletionResponse) {
    let mut events = Vec::new();
    let response = decode_stream(format, body.as_bytes(), 7, |e| events.push(e)).unwrap();
    (events, response)
}

#[test]
fn content_as_a_list_of_parts_is_read_into_text_and_thinking() {
    let answer = json!({"choices": [{"message": {"role": "assistant", "content": [
        {"type": "thinking", "thinking": [{"type": "text", "text": "Two plus two."}]},
        {"type": "text", "text": "It is 4."}
    ]}, "finish_reason": "stop"}]});
    let response = harness_providers::parse::openai(&answer).unwrap();
    assert_eq!(
        response.blocks(),
        [
            Block::from(Thinking::new("Two plus two.")),
            Block::text("It is 4.")
        ]
    );
    // The same streamed.
    let body = "data: {\"choices\":[{\"delta\":{\"content\":[{\"type\":\"thinking\",\"thinking\":[{\"type\":\"text\",\"text\":\"Two plus two.\"}]}]}}]}\n\n\
                data: {\"choices\":[{\"delta\":{\"content\":[{\"type\":\"text\",\"text\":\"It is 4.\"}]}}]}\n\n\
                data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let (events, response) = decode(StreamFormat::OpenAi, body);
    assert_eq!(response.content(), "It is 4.");
    assert_eq!(
        events,
        [
            LlmEvent::ThinkingDelta("Two plus two.".into()),
            LlmEvent::TextDelta("It is 4.".into())
        ]
    );
}

#[test]
fn a_refusal_is_the_text_not_an_empty_answer() {
    let answer = json!({"choices": [{"message": {"role": "assistant", "content": null,
        "refusal": "I can't help with that."}, "finish_reason": "stop"}]});
    let response = harness_providers::parse::openai(&answer).unwrap();
    assert_eq!(response.content(), "I can't help with that.");
    let body = "data: {\"choices\":[{\"delta\":{\"refusal\":\"I can't \"}}]}\n\n\
                data: {\"choices\":[{\"delta\":{\"refusal\":\"help.\"}}]}\n\n\
                data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let (_, response) = decode(StreamFormat::OpenAi, body);
    assert_eq!(response.content(), "I can't help.");
}

#[test]
fn calls_sent_whole_without_ids_or_indices_are_each_their_own_call() {
    let body = "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"name\":\"a\",\"arguments\":\"{\\\"x\\\": 1}\"}}]}}]}\n\n\
                data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"name\":\"b\",\"arguments\":\"{\\\"y\\\": 2}\"}}]}}]}\n\n\
                data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n";
    let (_, response) = decode(StreamFormat::OpenAi, body);
    let calls = response.tool_calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].name.as_str(), &calls[0].arguments["x"]),
        ("a", &json!(1))
    );
    assert_eq!(
        (calls[1].name.as_str(), &calls[1].arguments["y"]),
        ("b", &json!(2))
    );
    // A server that repeats the name in every fragment of one call still sends one call.
    let body = "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"name\":\"a\",\"arguments\":\"{\\\"x\\\"\"}}]}}]}\n\n\
                data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"name\":\"a\",\"arguments\":\": 1}\"}}]}}]}\n\n\
                data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n";
    let (_, response) = decode(StreamFormat::OpenAi, body);
    let calls = response.tool_calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].arguments["x"], 1);
}

#[test]
fn a_tool_use_whose_input_comes_whole_at_its_start_keeps_it() {
    let body = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5}}}\n\n\
                event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"get_weather\",\"input\":{\"city\":\"Oslo\"}}}\n\n\
                event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
                event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":9}}\n\n\
                event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    let (_, response) = decode(StreamFormat::Anthropic, body);
    let call = &response.tool_calls()[0];
    assert_eq!(call.id.as_deref(), Some("t1"));
    assert_eq!(call.arguments["city"], "Oslo");
    assert!(call.raw_arguments.is_none());
}

#[tokio::test]
async fn a_json_error_answering_a_stream_request_is_the_vendors_error() {
    let server = Server::always(Reply::json(
        200,
        r#"{"error": {"message": "model is loading", "type": "unavailable_error"}}"#,
    ))
    .await;
    let model = OpenAi::builder("m")
        .api_key("k")
        .base_url(&server.url)
        .build()
        .unwrap();
    let events = collect_events_or_error(&model).await;
    let err = events.unwrap_err();
    let provider = err.provider().unwrap();
    assert_eq!(provider.kind(), ProviderErrorKind::Vendor);
    assert_eq!(provider.message(), "model is loading");
    assert_eq!(provider.error_type(), Some("unavailable_error"));
}

async fn collect_events_or_error(model: &OpenAi) -> Result<Vec<LlmEvent>, harness_core::Error> {
    use futures_util::StreamExt as _;
    use harness_core::Llm as _;
    let messages = [Message::user("hi")];
    let mut stream = model.stream_events(Request::new(&messages));
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event?);
    }
    Ok(events)
}
