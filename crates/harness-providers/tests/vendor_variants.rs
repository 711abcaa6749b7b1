//! What other servers of a vendor's format send that the recordings do not: content as a
//! list of parts (Mistral's reasoning models), OpenAI's refusals, tool calls sent whole
//! without ids, a tool_use whose input comes whole at its start, Anthropic's redacted
//! thinking, a JSON error answering a stream request. Each must be read, not dropped, and
//! never turned into invented arguments.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use harness_core::Request;

use harness_core::{Block, LlmEvent, Message, ProviderErrorKind, Thinking};
use harness_providers::replay::{Format, decode_answer, decode_stream};
use harness_providers::{Anthropic, OpenAi};
use serde_json::json;
use support::{Reply, Server};

fn decode(format: Format, body: &str) -> (Vec<LlmEvent>, harness_core::CompletionResponse) {
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
    let response = decode_answer(Format::OpenAi, &answer).unwrap();
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
    let (events, response) = decode(Format::OpenAi, body);
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
    let response = decode_answer(Format::OpenAi, &answer).unwrap();
    assert_eq!(response.content(), "I can't help with that.");
    let body = "data: {\"choices\":[{\"delta\":{\"refusal\":\"I can't \"}}]}\n\n\
                data: {\"choices\":[{\"delta\":{\"refusal\":\"help.\"}}]}\n\n\
                data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let (_, response) = decode(Format::OpenAi, body);
    assert_eq!(response.content(), "I can't help.");
}

#[test]
fn calls_sent_whole_without_ids_or_indices_are_each_their_own_call() {
    let body = "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"name\":\"a\",\"arguments\":\"{\\\"x\\\": 1}\"}}]}}]}\n\n\
                data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"name\":\"b\",\"arguments\":\"{\\\"y\\\": 2}\"}}]}}]}\n\n\
                data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n";
    let (_, response) = decode(Format::OpenAi, body);
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
    let (_, response) = decode(Format::OpenAi, body);
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
    let (_, response) = decode(Format::Anthropic, body);
    let call = &response.tool_calls()[0];
    assert_eq!(call.id.as_deref(), Some("t1"));
    assert_eq!(call.arguments["city"], "Oslo");
    assert!(call.raw_arguments.is_none());
}

/// Azure OpenAI's stream (the shape of its content-filtering documentation): a first chunk
/// of prompt filter results with no choices and an empty id and model, filter results on
/// every choice, and OpenAI's `obfuscation` padding. The id and model are the real ones.
#[test]
fn an_azure_stream_takes_its_id_and_model_from_the_chunks_that_have_them() {
    let body = "data: {\"choices\":[],\"created\":0,\"id\":\"\",\"model\":\"\",\"object\":\"\",\"prompt_filter_results\":[{\"prompt_index\":0,\"content_filter_results\":{\"hate\":{\"filtered\":false,\"severity\":\"safe\"}}}]}\n\n\
                data: {\"choices\":[{\"content_filter_results\":{},\"delta\":{\"content\":\"\",\"role\":\"assistant\",\"refusal\":null},\"finish_reason\":null,\"index\":0,\"logprobs\":null}],\"created\":1,\"id\":\"chatcmpl-1\",\"model\":\"gpt-4o-2024-08-06\",\"object\":\"chat.completion.chunk\",\"system_fingerprint\":\"fp\",\"obfuscation\":\"xyz\"}\n\n\
                data: {\"choices\":[{\"content_filter_results\":{\"hate\":{\"filtered\":false,\"severity\":\"safe\"}},\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null,\"index\":0,\"logprobs\":null}],\"created\":1,\"id\":\"chatcmpl-1\",\"model\":\"gpt-4o-2024-08-06\",\"object\":\"chat.completion.chunk\",\"obfuscation\":\"q\"}\n\n\
                data: {\"choices\":[{\"content_filter_results\":{},\"delta\":{},\"finish_reason\":\"stop\",\"index\":0,\"logprobs\":null}],\"created\":1,\"id\":\"chatcmpl-1\",\"model\":\"gpt-4o-2024-08-06\",\"object\":\"chat.completion.chunk\"}\n\n\
                data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1,\"total_tokens\":6,\"prompt_tokens_details\":{\"cached_tokens\":2}},\"id\":\"chatcmpl-1\",\"model\":\"gpt-4o-2024-08-06\"}\n\n\
                data: [DONE]\n\n";
    let (events, response) = decode(Format::OpenAi, body);
    assert_eq!(events, [LlmEvent::TextDelta("Hi".into())]);
    assert_eq!(response.content(), "Hi");
    assert_eq!(response.id(), Some("chatcmpl-1"));
    assert_eq!(response.model(), Some("gpt-4o-2024-08-06"));
    assert_eq!(response.finish_reason(), harness_core::FinishReason::Stop);
    let usage = response.usage().unwrap();
    assert_eq!(
        (
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.total_tokens,
            usage.cached_tokens
        ),
        (5, 1, 6, 2)
    );
    // An answer that says its id is empty has none.
    let answer = json!({"id": "", "model": "", "choices": [{"message": {"content": "Hi"}, "finish_reason": "stop"}]});
    let response = decode_answer(Format::OpenAi, &answer).unwrap();
    assert_eq!((response.id(), response.model()), (None, None));
}

/// Groq puts a stream's usage in its own `x_groq` object on the last chunk (with timings
/// beside the counts): read when the chunk has no `usage` of its own, never over it.
#[test]
fn groq_usage_in_x_groq_is_read_when_the_chunk_has_none_of_its_own() {
    let usage_of = |last_chunk: &str| {
        let body = format!(
            "data: {{\"id\":\"chatcmpl-g\",\"model\":\"llama-3.3-70b-versatile\",\"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":\"Hi\"}},\"finish_reason\":null}}],\"x_groq\":{{\"id\":\"req_01\"}}}}\n\n\
             data: {last_chunk}\n\ndata: [DONE]\n\n"
        );
        let (_, response) = decode(Format::OpenAi, &body);
        assert_eq!(response.content(), "Hi");
        let usage = response.usage().copied().unwrap();
        (
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.total_tokens,
        )
    };
    let groq = r#""x_groq":{"id":"req_01","usage":{"queue_time":0.02,"prompt_tokens":12,"prompt_time":0.001,"completion_tokens":3,"completion_time":0.01,"total_tokens":15,"total_time":0.011}}"#;
    let choices = r#""choices":[{"index":0,"delta":{},"finish_reason":"stop"}]"#;
    assert_eq!(usage_of(&format!("{{{choices},{groq}}}")), (12, 3, 15));
    assert_eq!(
        usage_of(&format!("{{{choices},\"usage\":null,{groq}}}")),
        (12, 3, 15)
    );
    assert_eq!(
        usage_of(&format!("{{{choices},{groq},\"usage\":null}}")),
        (12, 3, 15)
    );
    let own = r#""usage":{"prompt_tokens":20,"completion_tokens":4,"total_tokens":24}"#;
    assert_eq!(
        usage_of(&format!("{{{choices},{own},{groq}}}")),
        (20, 4, 24)
    );
    assert_eq!(
        usage_of(&format!("{{{choices},{groq},{own}}}")),
        (20, 4, 24)
    );
}

/// Anthropic's `redacted_thinking` (the shape its extended-thinking documentation gives; no
/// recording here has one): kept as a redacted [`Thinking`] in its place among the turn's
/// blocks, answer or stream, and sent back unmodified when the turn is replayed, since
/// Anthropic refuses a tool turn's replay that leaves its reasoning out.
#[test]
fn anthropic_redacted_thinking_is_kept_and_sent_back_as_it_came() {
    let data = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP";
    let answer = json!({
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-3-7-sonnet",
        "content": [
            {"type": "thinking", "thinking": "Weather first.", "signature": "sig-1"},
            {"type": "redacted_thinking", "data": data},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 20}
    });
    let expected = [
        Block::from(Thinking::signed("Weather first.", "sig-1").from_provider("anthropic")),
        Block::from(Thinking::redacted(data).from_provider("anthropic")),
    ];
    let response = decode_answer(Format::Anthropic, &answer).unwrap();
    assert_eq!(response.blocks(), expected);
    assert_eq!(response.thinking(), "Weather first.");
    // Each names the vendor it came from, which equality leaves aside.
    for block in response.blocks() {
        let Block::Thinking(thinking) = block else {
            panic!("{block:?}")
        };
        assert_eq!(thinking.provider.as_deref(), Some("anthropic"));
    }
    assert_eq!(response.tool_calls()[0].arguments["city"], "Oslo");

    // The same streamed: the redacted block comes whole at its start, with no deltas.
    let body = format!(
        "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"id\":\"msg_01\",\"usage\":{{\"input_tokens\":10}}}}}}\n\n\
         event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}}}\n\n\
         event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"thinking_delta\",\"thinking\":\"Weather first.\"}}}}\n\n\
         event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"signature_delta\",\"signature\":\"sig-1\"}}}}\n\n\
         event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":0}}\n\n\
         event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":1,\"content_block\":{{\"type\":\"redacted_thinking\",\"data\":\"{data}\"}}}}\n\n\
         event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":1}}\n\n\
         event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":2,\"content_block\":{{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"get_weather\",\"input\":{{}}}}}}\n\n\
         event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":2,\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":\"{{\\\"city\\\":\\\"Oslo\\\"}}\"}}}}\n\n\
         event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":2}}\n\n\
         event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"tool_use\"}},\"usage\":{{\"output_tokens\":20}}}}\n\n\
         event: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"
    );
    let (events, streamed) = decode(Format::Anthropic, &body);
    assert_eq!(streamed.blocks(), expected);
    assert_eq!(streamed.tool_calls(), response.tool_calls());
    assert_eq!(events, [LlmEvent::ThinkingDelta("Weather first.".into())]);

    // Replayed: both reasoning blocks, in order, before the call; the data byte for byte.
    let model = Anthropic::builder("claude-3-7-sonnet")
        .api_key("k")
        .build()
        .unwrap();
    let turn = Message::assistant(harness_core::Content::from_blocks(expected.clone()))
        .with_tool_calls(response.tool_calls().to_vec());
    let result = Message::tool("Sunny", "get_weather").with_call_id("toolu_1");
    let messages = [Message::user("Weather in Oslo?"), turn, result];
    let body = model.request_body(&Request::new(&messages), false);
    assert_eq!(
        body["messages"][1]["content"],
        json!([
            {"type": "thinking", "thinking": "Weather first.", "signature": "sig-1"},
            {"type": "redacted_thinking", "data": data},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}
        ])
    );
}

/// A signed thinking block whose text is not shown still carries the signature Anthropic
/// needs back: it is kept; an unsigned empty one is nothing and is dropped.
#[test]
fn anthropic_signed_thinking_without_text_is_kept() {
    let answer = json!({
        "content": [
            {"type": "thinking", "thinking": "", "signature": "sig-2"},
            {"type": "thinking", "thinking": ""},
            {"type": "text", "text": "Done."}
        ],
        "stop_reason": "end_turn"
    });
    let response = decode_answer(Format::Anthropic, &answer).unwrap();
    assert_eq!(
        response.blocks(),
        [
            Block::from(Thinking::signed("", "sig-2").from_provider("anthropic")),
            Block::text("Done.")
        ]
    );
}

/// Every stop reason Anthropic documents, as the finish reason the loop acts on.
#[test]
fn anthropic_stop_reasons_map_to_finish_reasons() {
    use harness_core::FinishReason;
    for (stop, finish) in [
        ("end_turn", FinishReason::Stop),
        ("stop_sequence", FinishReason::Stop),
        ("tool_use", FinishReason::Stop),
        ("max_tokens", FinishReason::Length),
        ("model_context_window_exceeded", FinishReason::Length),
        ("refusal", FinishReason::Filtered),
        ("pause_turn", FinishReason::Other),
    ] {
        let answer = json!({"content": [{"type": "text", "text": "x"}], "stop_reason": stop});
        let response = decode_answer(Format::Anthropic, &answer).unwrap();
        assert_eq!(response.finish_reason(), finish, "{stop}");
    }
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
    let mut stream = std::sync::Arc::new(model.clone()).stream(Request::new(&messages));
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event?);
    }
    Ok(events)
}

#[test]
fn reasoning_tokens_are_read_from_completion_tokens_details() {
    use harness_core::TokenUsage;
    // A reasoning model's answer (OpenAI's o-series and gpt-5, DeepSeek's reasoner): the
    // reasoning is a part of the completion count, reported in its details.
    let answer = json!({
        "id": "chatcmpl-r", "object": "chat.completion", "model": "o4-mini",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "42"}}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 150, "total_tokens": 170,
                  "prompt_tokens_details": {"cached_tokens": 8, "audio_tokens": 0},
                  "completion_tokens_details": {"reasoning_tokens": 128, "audio_tokens": 0,
                      "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}
    });
    let response = decode_answer(Format::OpenAi, &answer).unwrap();
    let expected = TokenUsage::new(20, 150, 170)
        .with_cached(8)
        .with_reasoning(128);
    assert_eq!(response.usage(), Some(&expected));

    // Streamed, in the usage chunk; details given as null, or only the reasoning's, read too.
    let stream = r#"data: {"id":"r","model":"o4-mini","choices":[{"index":0,"delta":{"content":"42"},"finish_reason":"stop"}]}

data: {"id":"r","model":"o4-mini","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":150,"total_tokens":170,"prompt_tokens_details":null,"completion_tokens_details":{"reasoning_tokens":128}}}

data: [DONE]

"#;
    let (_, response) = decode(Format::OpenAi, stream);
    let expected = TokenUsage::new(20, 150, 170).with_reasoning(128);
    assert_eq!(response.usage(), Some(&expected));

    // Details alone still say something; a null count is 0.
    let answer = json!({
        "id": "c", "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"content": "x"}}],
        "usage": {"completion_tokens_details": {"reasoning_tokens": null}}
    });
    let response = decode_answer(Format::OpenAi, &answer).unwrap();
    assert_eq!(response.usage(), Some(&TokenUsage::new(0, 0, 0)));
}

#[test]
fn deepseek_cache_hits_are_the_cached_prompt_tokens() {
    use harness_core::TokenUsage;
    // DeepSeek names its cache hits `prompt_cache_hit_tokens`, not OpenAI's details.
    let answer = json!({
        "id": "d", "object": "chat.completion", "model": "deepseek-chat",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "ok"}}],
        "usage": {"prompt_tokens": 1200, "completion_tokens": 10, "total_tokens": 1210,
                  "prompt_cache_hit_tokens": 1024, "prompt_cache_miss_tokens": 176}
    });
    let response = decode_answer(Format::OpenAi, &answer).unwrap();
    assert_eq!(
        response.usage(),
        Some(&TokenUsage::new(1200, 10, 1210).with_cached(1024))
    );
    // Where a server sends both, OpenAI's own field is the one read.
    let answer = json!({
        "id": "d", "model": "deepseek-chat",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"content": "ok"}}],
        "usage": {"prompt_tokens": 1200, "completion_tokens": 10, "total_tokens": 1210,
                  "prompt_tokens_details": {"cached_tokens": 1000},
                  "prompt_cache_hit_tokens": 1024}
    });
    let response = decode_answer(Format::OpenAi, &answer).unwrap();
    assert_eq!(
        response.usage(),
        Some(&TokenUsage::new(1200, 10, 1210).with_cached(1000))
    );
}

#[test]
fn openrouter_cache_writes_are_the_prompt_tokens_written_to_the_cache() {
    use harness_core::TokenUsage;
    // OpenRouter reports what a prompt put into the vendor's cache beside what it read.
    let answer = json!({
        "id": "gen-1", "object": "chat.completion", "model": "anthropic/claude-sonnet-4",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "ok"}}],
        "usage": {"prompt_tokens": 2100, "completion_tokens": 4, "total_tokens": 2104,
                  "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 2048,
                                            "audio_tokens": 0},
                  "cost": 0.0081}
    });
    let response = decode_answer(Format::OpenAi, &answer).unwrap();
    assert_eq!(
        response.usage(),
        Some(&TokenUsage::new(2100, 4, 2104).with_cache_write(2048))
    );

    // Streamed, in the last chunk, with a later read from the cache.
    let stream = r#"data: {"id":"gen-2","model":"m","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}

data: {"id":"gen-2","model":"m","choices":[],"usage":{"prompt_tokens":2100,"completion_tokens":4,"total_tokens":2104,"prompt_tokens_details":{"cached_tokens":2048,"cache_write_tokens":null}}}

data: [DONE]

"#;
    let (_, response) = decode(Format::OpenAi, stream);
    assert_eq!(
        response.usage(),
        Some(&TokenUsage::new(2100, 4, 2104).with_cached(2048))
    );
}

#[test]
fn gemini_tool_use_prompt_tokens_are_prompt_tokens() {
    use harness_core::TokenUsage;
    // A built-in tool's input (code execution here) is counted apart from the prompt but
    // inside the total: prompt and completion must still add up to it.
    let answer = json!({
        "candidates": [{"content": {"role": "model", "parts": [
            {"executableCode": {"language": "PYTHON", "code": "print(2 + 2)"}},
            {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "4\n"}},
            {"text": "It is 4."}
        ]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 15, "candidatesTokenCount": 40,
                          "toolUsePromptTokenCount": 429, "thoughtsTokenCount": 378,
                          "totalTokenCount": 862},
        "modelVersion": "gemini-2.5-flash", "responseId": "r-1"
    });
    let response = decode_answer(Format::Gemini, &answer).unwrap();
    assert_eq!(response.content(), "It is 4.");
    let usage = response.usage().unwrap();
    assert_eq!(
        usage,
        &TokenUsage::new(444, 418, 862).with_reasoning(378),
        "{usage:?}"
    );
    assert_eq!(
        usage.prompt_tokens + usage.completion_tokens,
        usage.total_tokens
    );
}

/// A stream as OpenRouter sends a Claude model's reasoning: the plain `reasoning` and the
/// same text again in `reasoning_details`, the signature in a detail of its own at the end,
/// `[]` details on the other chunks and its keep-alive comments between.
const OPENROUTER_SIGNED_STREAM: &str = r#": OPENROUTER PROCESSING

data: {"id":"gen-7","model":"anthropic/claude-sonnet-4","choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning":null,"reasoning_details":[]},"finish_reason":null}]}

data: {"id":"gen-7","model":"anthropic/claude-sonnet-4","choices":[{"index":0,"delta":{"content":"","reasoning":"Add the","reasoning_details":[{"type":"reasoning.text","text":"Add the","format":"anthropic-claude-v1","index":0}]},"finish_reason":null}]}

: OPENROUTER PROCESSING

data: {"id":"gen-7","model":"anthropic/claude-sonnet-4","choices":[{"index":0,"delta":{"content":"","reasoning":" two numbers.","reasoning_details":[{"type":"reasoning.text","text":" two numbers.","format":"anthropic-claude-v1","index":0}]},"finish_reason":null}]}

data: {"id":"gen-7","model":"anthropic/claude-sonnet-4","choices":[{"index":0,"delta":{"content":"","reasoning":null,"reasoning_details":[{"type":"reasoning.text","signature":"c2lnLTc=","format":"anthropic-claude-v1","index":0}]},"finish_reason":null}]}

data: {"id":"gen-7","model":"anthropic/claude-sonnet-4","choices":[{"index":0,"delta":{"content":"It is 5.","reasoning":null,"reasoning_details":[]},"finish_reason":"stop"}]}

data: {"id":"gen-7","model":"anthropic/claude-sonnet-4","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":9,"total_tokens":21}}

data: [DONE]

"#;

#[tokio::test]
async fn openrouter_reasoning_keeps_its_signature_once_and_marked_as_openrouters() {
    let server = Server::always(Reply::sse(OPENROUTER_SIGNED_STREAM)).await;
    let model = harness_providers::OpenRouter::builder("anthropic/claude-sonnet-4")
        .api_key("k")
        .base_url(&server.url)
        .build()
        .unwrap();
    let events = support::collect_events(&model, &[Message::user("2 + 3?")], &[]).await;
    let thinking: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            LlmEvent::ThinkingDelta(delta) => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    // The details' copy of the text is not read twice.
    assert_eq!(thinking, ["Add the", " two numbers."]);
    let turn = support::completed(&events);
    assert_eq!(turn.content(), "It is 5.");
    assert_eq!(
        turn.blocks(),
        [
            Block::from(Thinking::signed("Add the two numbers.", "c2lnLTc=")),
            Block::text("It is 5."),
        ]
    );
    let Block::Thinking(signed) = &turn.blocks()[0] else {
        panic!("{:?}", turn.blocks())
    };
    // Valid only where it came from: Anthropic's own API is not sent OpenRouter's signature.
    assert_eq!(signed.provider.as_deref(), Some("openrouter"));
    let anthropic = Anthropic::builder("claude-sonnet-4")
        .api_key("k")
        .build()
        .unwrap();
    let messages = [
        Message::user("2 + 3?"),
        Message::assistant(harness_core::Content::from_blocks(turn.blocks().to_vec())),
        Message::user("And 3 + 4?"),
    ];
    let body = anthropic.request_body(&Request::new(&messages), false);
    assert_eq!(
        body["messages"][1]["content"],
        json!([{"type": "text", "text": "It is 5."}]),
        "{body}"
    );
}

#[test]
fn reasoning_details_alone_give_the_text_and_the_encrypted_reasoning() {
    // A server that sends only the details: their text (or summary) is the reasoning, and
    // each encrypted detail is a redacted block after it. A plain stream's reasoning stays
    // unsigned and unmarked.
    let answer = json!({
        "id": "gen-8", "model": "openai/o4-mini",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": "Paris.",
            "reasoning_details": [
                {"type": "reasoning.summary", "summary": "Recall the capital.", "index": 0},
                {"type": "reasoning.encrypted", "data": "ZW5jLTE=", "index": 1},
                {"type": "reasoning.encrypted", "data": "", "index": 2}
            ]
        }}]
    });
    let response = decode_answer(Format::OpenAi, &answer).unwrap();
    assert_eq!(
        response.blocks(),
        [
            Block::from(Thinking::new("Recall the capital.")),
            Block::from(Thinking::redacted("ZW5jLTE=")),
            Block::text("Paris."),
        ]
    );
    for block in &response.blocks()[..2] {
        let Block::Thinking(thinking) = block else {
            panic!("{block:?}")
        };
        assert_eq!(thinking.provider.as_deref(), Some("openai"));
    }

    // Details that are `null` or `[]` change nothing; a key given twice is refused.
    let (_, plain) = decode(
        Format::OpenAi,
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\"r\",\"reasoning_details\":null}}]}\n\n\
         data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\",\"reasoning_details\":[]},\"finish_reason\":\"stop\"}]}\n\n\
         data: [DONE]\n\n",
    );
    assert_eq!(
        plain.blocks(),
        [Block::from(Thinking::new("r")), Block::text("ok")]
    );
    let Block::Thinking(unmarked) = &plain.blocks()[0] else {
        panic!("{:?}", plain.blocks())
    };
    assert_eq!(unmarked.provider, None);
    let err = decode_stream(
        Format::OpenAi,
        b"data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_details\":[],\"reasoning_details\":[]}}]}\n\ndata: [DONE]\n\n",
        7,
        |_| {},
    )
    .unwrap_err();
    assert!(err.to_string().contains("reasoning_details"), "{err}");
}

#[test]
fn anthropic_thinking_tokens_are_the_reasoning_tokens() {
    use harness_core::TokenUsage;
    // Newer Claude models say how much of the output was thinking.
    let answer = json!({
        "id": "msg_9", "type": "message", "role": "assistant", "model": "claude-x",
        "content": [{"type": "thinking", "thinking": "Small.", "signature": "s"},
                    {"type": "text", "text": "4"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "cache_read_input_tokens": 90, "output_tokens": 30,
                  "output_tokens_details": {"thinking_tokens": 26}}
    });
    let response = decode_answer(Format::Anthropic, &answer).unwrap();
    let expected = TokenUsage::new(100, 30, 130)
        .with_cached(90)
        .with_reasoning(26);
    assert_eq!(response.usage(), Some(&expected));

    // Streamed: `message_start` has none, the final `message_delta` brings them; a later
    // usage without details keeps the count.
    let body = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_9\",\"usage\":{\"input_tokens\":10,\"cache_read_input_tokens\":90,\"output_tokens\":1}}}\n\n\
         event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
         event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"4\"}}\n\n\
         event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
         event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":30,\"output_tokens_details\":{\"thinking_tokens\":26}}}\n\n\
         event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{},\"usage\":{\"output_tokens\":30}}\n\n\
         event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    let (_, streamed) = decode(Format::Anthropic, body);
    assert_eq!(streamed.usage(), Some(&expected));
}
