//! Bedrock: the recorded Converse and ConverseStream traffic of tests/fixtures/bedrock served
//! from loopback, what the provider makes of every field, our requests for the recorded
//! conversations, and how requests are signed.

#![cfg(feature = "bedrock")]
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::Arc;

use aws_credential_types::Credentials;
use futures_util::StreamExt as _;
use harness_core::{
    Block, CompletionResponse, Document, FinishReason, Image, Llm, LlmEvent, Message,
    ModelSettings, PromptCache, ProviderErrorKind, ReasoningLevel, Request, Thinking, TokenUsage,
    ToolCall, ToolChoice, ToolSpec,
};
use harness_providers::replay::{Format, decode_answer, decode_stream};
use harness_providers::{Bedrock, BedrockBuilder, Guardrail, GuardrailTrace, RetryPolicy};
use serde_json::{Value, json};
use support::{Reply, Server, collect_events, completed, deltas, fixture, fixture_json, turn};

const NOVA: &str = "us.amazon.nova-micro-v1:0";
const CLAUDE: &str = "us.anthropic.claude-3-7-sonnet-20250219-v1:0";

fn eventstream(body: Vec<u8>) -> Reply {
    Reply {
        headers: vec![(
            "content-type".into(),
            "application/vnd.amazon.eventstream".into(),
        )],
        chunk: Some(97),
        ..Reply::json(200, body)
    }
}

fn builder(model: &str, server: &Server) -> BedrockBuilder {
    Bedrock::builder(model)
        .region("us-east-1")
        .base_url(&server.url)
        .credentials(Credentials::new(
            "AKIDTEST",
            "secret-key",
            None,
            None,
            "test",
        ))
        .retry(RetryPolicy::none())
}

async fn served(model: &str, reply: Reply) -> (Bedrock, Server) {
    let server = Server::always(reply).await;
    (builder(model, &server).build().unwrap(), server)
}

/// A recorded whole answer, served and read.
async fn answer_of(path: &str, model: &str) -> (CompletionResponse, Server) {
    let (model, server) = served(model, Reply::json(200, fixture(path))).await;
    let response = model
        .generate(Request::new(&[Message::user("?")]))
        .await
        .unwrap();
    (response, server)
}

/// A recorded stream, served and read; it also decodes the same in pieces of every size.
async fn stream_of(path: &str, model: &str) -> (Vec<LlmEvent>, Server) {
    let body = fixture(path);
    let (model, server) = served(model, eventstream(body.clone())).await;
    let events = collect_events(&model, &[Message::user("?")], &[]).await;
    let whole = decode_stream(Format::Bedrock, &body, body.len(), |_| {}).unwrap();
    assert_eq!(completed(&events).blocks(), whole.blocks());
    for chunk in [1, 2, 5, 12, 13, 64, 333] {
        let mut pieces = Vec::new();
        let turn = decode_stream(Format::Bedrock, &body, chunk, |e| pieces.push(e)).unwrap();
        assert_eq!(turn.blocks(), whole.blocks(), "chunks of {chunk}");
        assert_eq!(turn.tool_calls(), whole.tool_calls(), "chunks of {chunk}");
        assert_eq!(pieces.len() + 1, events.len(), "chunks of {chunk}");
    }
    (events, server)
}

fn usage(prompt: u64, completion: u64) -> TokenUsage {
    TokenUsage::new(prompt, completion, prompt + completion)
}

// Whole answers --------------------------------------------------------------------------------

#[tokio::test]
async fn a_text_answer_and_the_request_that_asked_for_it() {
    let path = "bedrock/converse_nova_text.json";
    let (response, server) = answer_of(path, NOVA).await;
    assert_eq!(
        response.content(),
        fixture_json(path)["output"]["message"]["content"][0]["text"]
            .as_str()
            .unwrap()
    );
    assert_eq!(response.finish_reason(), FinishReason::Stop);
    assert_eq!(response.usage(), Some(&usage(7, 30)));
    assert_eq!(response.model(), Some(NOVA));
    let request = &server.requests()[0];
    assert_eq!(request.method, "POST");
    assert_eq!(
        request.target,
        "/model/us.amazon.nova-micro-v1%3A0/converse"
    );
    assert_eq!(request.header("content-type"), Some("application/json"));
}

#[tokio::test]
async fn max_tokens_is_length_and_sent_in_the_inference_config() {
    let path = "bedrock/converse_nova_max_tokens.json";
    let (response, _) = answer_of(path, NOVA).await;
    assert_eq!(response.content(), "The capital of France is");
    assert_eq!(response.finish_reason(), FinishReason::Length);
    assert_eq!(response.usage(), Some(&usage(13, 5)));

    let recorded = fixture_json("bedrock/converse_nova_max_tokens.request.json");
    let model = Bedrock::builder(NOVA)
        .region("us-east-1")
        .api_key("k")
        .settings(ModelSettings::new().with_max_tokens(5))
        .build()
        .unwrap();
    let messages = [
        Message::system("You are a helpful chatbot."),
        Message::user("What is the capital of France?"),
    ];
    assert_eq!(
        model.request_body(&Request::new(&messages)),
        normal(&recorded["body"])
    );
}

#[tokio::test]
async fn a_guardrail_is_sent_and_its_trace_does_not_disturb_the_answer() {
    let path = "bedrock/converse_nova_guardrail_trace.json";
    let (response, _) = answer_of(path, NOVA).await;
    assert!(
        response
            .content()
            .starts_with("The capital of France is Paris.")
    );
    assert_eq!(response.finish_reason(), FinishReason::Stop);

    let recorded = fixture_json("bedrock/converse_nova_guardrail_trace.request.json");
    let model = Bedrock::builder(NOVA)
        .region("us-east-1")
        .api_key("k")
        .guardrail(Guardrail::new("xbgw7g293v7o", "DRAFT").with_trace(GuardrailTrace::Enabled))
        .build()
        .unwrap();
    let messages = [
        Message::system("You are a helpful chatbot."),
        Message::user("What is the capital of France?"),
    ];
    assert_eq!(
        model.request_body(&Request::new(&messages)),
        normal(&recorded["body"])
    );
}

/// The recorded request as we write it: Converse's empty `system` and `inferenceConfig`
/// are left out, and a tool result's `status` (which we do not know) too.
fn normal(recorded: &Value) -> Value {
    let mut body = recorded.clone();
    let fields = body.as_object_mut().unwrap();
    if fields["system"] == json!([]) {
        fields.remove("system");
    }
    if fields["inferenceConfig"] == json!({}) {
        fields.remove("inferenceConfig");
    }
    for message in body["messages"].as_array_mut().unwrap() {
        for block in message["content"].as_array_mut().unwrap() {
            if let Some(result) = block.get_mut("toolResult") {
                result.as_object_mut().unwrap().remove("status");
            }
        }
    }
    body
}

#[tokio::test]
async fn a_tool_round_with_signed_reasoning_is_replayed_as_recorded() {
    let path = "bedrock/converse_claude_thinking_tool_use.json";
    let (response, _) = answer_of(path, CLAUDE).await;
    let recorded = fixture_json(path);
    let content = &recorded["output"]["message"]["content"];
    let reasoning = &content[0]["reasoningContent"]["reasoningText"];
    assert_eq!(
        response.blocks(),
        &[
            Thinking::signed(
                reasoning["text"].as_str().unwrap(),
                reasoning["signature"].as_str().unwrap()
            )
            .from_provider("bedrock")
            .into(),
            Block::text("I'll need to check what country you're from to answer that question."),
        ]
    );
    assert_eq!(
        response.tool_calls(),
        &[ToolCall::new("get_user_country", json!({})).with_id("tooluse_W9DaUFg4Tj2cRPpndqxWSg")]
    );
    assert_eq!(response.finish_reason(), FinishReason::Stop);
    assert_eq!(response.usage(), Some(&usage(397, 130)));

    // The next request, written from our transcript, is the one recorded: the reasoning
    // with its signature first, the text, the call; the result as the user's toolResult.
    let second = fixture_json("bedrock/converse_claude_after_tool_result.request.json");
    let thinking = json!({"thinking": {"type": "enabled", "budget_tokens": 1024}});
    let model = Bedrock::builder(CLAUDE)
        .region("us-east-1")
        .api_key("k")
        .settings(ModelSettings::new().with_extra("additionalModelRequestFields", thinking))
        .build()
        .unwrap();
    let tools = [Arc::new(ToolSpec::new(
        "get_user_country",
        "",
        json!({"additionalProperties": false, "properties": {}, "type": "object"}),
    ))];
    let messages = [
        Message::user("What is the largest city in the user country?"),
        turn(&response),
        Message::tool("Mexico", "get_user_country").with_call_id("tooluse_W9DaUFg4Tj2cRPpndqxWSg"),
    ];
    assert_eq!(
        model.request_body(&Request::new(&messages).with_tools(&tools)),
        normal(&second["body"])
    );

    let (last, _) = answer_of("bedrock/converse_claude_after_tool_result.json", CLAUDE).await;
    assert!(
        last.content()
            .starts_with("Based on your location in Mexico")
    );
    assert_eq!(last.usage(), Some(&usage(539, 106)));
}

#[tokio::test]
async fn redacted_reasoning_is_kept_and_sent_back_as_it_came() {
    let path = "bedrock/converse_claude_redacted_thinking.json";
    let (response, _) = answer_of(path, CLAUDE).await;
    let recorded = fixture_json(path);
    let data = recorded["output"]["message"]["content"][0]["reasoningContent"]["redactedContent"]
        .as_str()
        .unwrap();
    assert_eq!(
        response.blocks()[0],
        Thinking::redacted(data).from_provider("bedrock").into()
    );
    assert!(response.content().starts_with("I notice you've sent"));

    let second = fixture_json("bedrock/converse_claude_redacted_thinking_replayed.request.json");
    let thinking = json!({"thinking": {"type": "enabled", "budget_tokens": 1024}});
    let model = Bedrock::builder(CLAUDE)
        .region("us-east-1")
        .api_key("k")
        .settings(ModelSettings::new().with_extra("additionalModelRequestFields", thinking))
        .build()
        .unwrap();
    let question = second["body"]["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap();
    let messages = [
        Message::user(question),
        turn(&response),
        Message::user("What was that?"),
    ];
    assert_eq!(
        model.request_body(&Request::new(&messages)),
        normal(&second["body"])
    );
}

#[tokio::test]
async fn reasoning_of_another_vendor_and_unsigned_reasoning_are_not_sent() {
    let model = Bedrock::builder(CLAUDE)
        .region("us-east-1")
        .api_key("k")
        .build()
        .unwrap();
    let messages = [
        Message::user("q"),
        Message::assistant(vec![
            Thinking::signed("theirs", "sig")
                .from_provider("anthropic")
                .into(),
            Thinking::new("unsigned").into(),
            Block::text("a"),
        ]),
        Message::user("again"),
    ];
    let body = model.request_body(&Request::new(&messages));
    assert_eq!(body["messages"][1]["content"], json!([{"text": "a"}]));
}

#[tokio::test]
async fn cache_reads_and_writes_are_counted_in_the_prompt() {
    let (write, _) = answer_of("bedrock/converse_claude_cache_write.json", CLAUDE).await;
    assert_eq!(
        write.usage(),
        Some(&TokenUsage::new(1324, 5, 1329).with_cache_write(1322))
    );
    let (read, _) = answer_of("bedrock/converse_claude_cache_read.json", CLAUDE).await;
    assert_eq!(
        read.usage(),
        Some(&TokenUsage::new(1324, 5, 1329).with_cached(1322))
    );
}

#[tokio::test]
async fn cache_points_follow_the_system_prompt_and_the_tools() {
    let model = Bedrock::builder(CLAUDE)
        .region("us-east-1")
        .api_key("k")
        .settings(ModelSettings::new().with_prompt_cache(PromptCache::breakpoints()))
        .build()
        .unwrap();
    let tools = [Arc::new(ToolSpec::new(
        "lookup",
        "Look it up.",
        json!({"type": "object", "properties": {}}),
    ))];
    let messages = [Message::system("Be brief."), Message::user("hi")];
    let body = model.request_body(&Request::new(&messages).with_tools(&tools));
    assert_eq!(
        body["system"],
        json!([{"text": "Be brief."}, {"cachePoint": {"type": "default"}}])
    );
    assert_eq!(
        body["toolConfig"],
        json!({"tools": [
            {"toolSpec": {"name": "lookup", "description": "Look it up.",
                "inputSchema": {"json": {"type": "object", "properties": {}}}}},
            {"cachePoint": {"type": "default"}},
        ]})
    );
}

#[tokio::test]
async fn documents_are_sent_with_names_bedrock_accepts() {
    let recorded = fixture_json("bedrock/converse_claude_documents.request.json");
    let messages_in = recorded["body"]["messages"].as_array().unwrap();
    let data = |i: usize| {
        messages_in[i]["content"][1]["document"]["source"]["bytes"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let model = Bedrock::builder(CLAUDE)
        .region("us-east-1")
        .api_key("k")
        .build()
        .unwrap();
    let messages = [
        Message::user(vec![
            Block::text("Here is a PDF document: "),
            Document::pdf(data(0)).into(),
        ]),
        Message::assistant("foo bar"),
        Message::user(vec![
            Block::text("Here is another PDF document: "),
            Document::pdf(data(2)).into(),
        ]),
        Message::assistant("foo bar 2"),
        Message::user("What is in the documents?"),
    ];
    assert_eq!(
        model.request_body(&Request::new(&messages)),
        normal(&recorded["body"])
    );
    let (response, _) = answer_of("bedrock/converse_claude_documents.json", CLAUDE).await;
    assert!(response.content().contains("Dummy PDF file"));
}

#[tokio::test]
async fn images_go_as_bytes_or_s3_and_a_web_url_is_refused_before_sending() {
    let server = Server::always(Reply::json(200, fixture("bedrock/converse_nova_text.json"))).await;
    let model = builder(NOVA, &server).build().unwrap();
    let messages = [Message::user(vec![
        Block::text("What is it?"),
        Image::from_base64("aGk=", "image/png").into(),
        Image::from_url("s3://bucket/cat.jpeg").into(),
    ])];
    let body = model.request_body(&Request::new(&messages));
    assert_eq!(
        body["messages"][0]["content"],
        json!([
            {"text": "What is it?"},
            {"image": {"format": "png", "source": {"bytes": "aGk="}}},
            {"image": {"format": "jpeg", "source": {"s3Location": {"uri": "s3://bucket/cat.jpeg"}}}},
        ])
    );
    let web = [Message::user(vec![
        Image::from_url("https://x.test/a.png").into(),
    ])];
    let err = model.generate(Request::new(&web)).await.unwrap_err();
    assert_eq!(err.kind(), harness_core::ErrorKind::Configuration);
    assert!(
        err.to_string().contains("does not fetch images by URL"),
        "{err}"
    );
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn tool_choice_settings_and_results_in_one_user_turn() {
    let model = Bedrock::builder(NOVA)
        .region("us-east-1")
        .api_key("k")
        .build()
        .unwrap();
    let tools = [Arc::new(ToolSpec::new(
        "note",
        "Write a note.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}}),
    ))];
    let choice = |choice: ToolChoice, messages: &[Message]| {
        let settings = ModelSettings::new()
            .with_tool_choice(choice)
            .with_temperature(0.2)
            .with_top_p(0.9)
            .with_stop(["END"]);
        let body = model.request_body(
            &Request::new(messages)
                .with_tools(&tools)
                .with_settings(&settings),
        );
        assert_eq!(
            body["inferenceConfig"],
            json!({"temperature": 0.2, "topP": 0.9, "stopSequences": ["END"]})
        );
        body
    };
    let first = [Message::user("hi")];
    assert_eq!(
        choice(ToolChoice::Required, &first)["toolConfig"]["toolChoice"],
        json!({"any": {}})
    );
    assert_eq!(
        choice(ToolChoice::Tool("note".into()), &first)["toolConfig"]["toolChoice"],
        json!({"tool": {"name": "note"}})
    );
    assert_eq!(
        choice(ToolChoice::Auto, &first)["toolConfig"]["toolChoice"],
        json!({"auto": {}})
    );
    // Converse cannot forbid calls: no tools are offered, unless the transcript holds some.
    assert!(choice(ToolChoice::None, &first).get("toolConfig").is_none());
    let calls = vec![
        ToolCall::new("note", json!({"text": "a"})).with_id("t1"),
        ToolCall::new("note", json!({"text": "b"})).with_id("t2"),
    ];
    let round = [
        Message::user("hi"),
        Message::assistant("").with_tool_calls(calls),
        Message::tool("noted a", "note").with_call_id("t1"),
        Message::tool("", "note").with_call_id("t2"),
        Message::user("and now?"),
    ];
    let body = choice(ToolChoice::None, &round);
    assert!(body["toolConfig"].get("toolChoice").is_none());
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"text": "hi"}]},
            {"role": "assistant", "content": [
                {"toolUse": {"toolUseId": "t1", "name": "note", "input": {"text": "a"}}},
                {"toolUse": {"toolUseId": "t2", "name": "note", "input": {"text": "b"}}},
            ]},
            {"role": "user", "content": [
                {"toolResult": {"toolUseId": "t1", "content": [{"text": "noted a"}]}},
                {"toolResult": {"toolUseId": "t2", "content": [{"text": "(no output)"}]}},
                {"text": "and now?"},
            ]},
        ])
    );
}

#[tokio::test]
async fn claude_reasoning_levels_become_extended_thinking() {
    let model = Bedrock::builder(CLAUDE)
        .region("us-east-1")
        .api_key("k")
        .settings(ModelSettings::new().with_reasoning(ReasoningLevel::Medium))
        .build()
        .unwrap();
    let messages = [Message::user("hi")];
    let extra = ModelSettings::new().with_extra(
        "additionalModelRequestFields",
        json!({"anthropic_beta": ["interleaved-thinking-2025-05-14"]}),
    );
    let body = model.request_body(&Request::new(&messages).with_settings(&extra));
    assert_eq!(body["inferenceConfig"], json!({"maxTokens": 5120}));
    // The user's own fields merge into the provider's.
    assert_eq!(
        body["additionalModelRequestFields"],
        json!({"thinking": {"type": "enabled", "budget_tokens": 4096},
            "anthropic_beta": ["interleaved-thinking-2025-05-14"]})
    );
    // Not Claude: nothing is guessed.
    let nova = Bedrock::builder(NOVA)
        .region("us-east-1")
        .api_key("k")
        .settings(ModelSettings::new().with_reasoning(ReasoningLevel::Medium))
        .build()
        .unwrap();
    let body = nova.request_body(&Request::new(&messages));
    assert!(body.get("additionalModelRequestFields").is_none());
}

// Streams --------------------------------------------------------------------------------------

#[tokio::test]
async fn a_streamed_text_answer() {
    let (events, server) = stream_of("bedrock/converse_stream_nova_text.eventstream", NOVA).await;
    let response = completed(&events);
    assert!(
        response
            .content()
            .starts_with("The capital of France is Paris.")
    );
    assert!(response.content().ends_with("\"The City of Love.\""));
    assert_eq!(deltas(&events, false), response.content());
    assert_eq!(response.usage(), Some(&usage(13, 82)));
    assert_eq!(response.finish_reason(), FinishReason::Stop);
    assert_eq!(
        server.requests()[0].target,
        "/model/us.amazon.nova-micro-v1%3A0/converse-stream"
    );
}

#[tokio::test]
async fn a_streamed_tool_round_and_the_request_after_it() {
    let (events, _) = stream_of("bedrock/converse_stream_nova_tool_use.eventstream", NOVA).await;
    let response = completed(&events);
    assert!(
        response
            .content()
            .starts_with("<thinking> To find the temperature")
    );
    assert_eq!(
        response.tool_calls(),
        &[ToolCall::new("get_temperature", json!({"city": "Paris"}))
            .with_id("tooluse_lAG_zP8QRHmSYOwZzzaCqA")]
    );
    assert_eq!(response.usage(), Some(&usage(471, 91)));

    let recorded = fixture_json("bedrock/converse_stream_nova_after_tool_result.request.json");
    let model = Bedrock::builder(NOVA)
        .region("us-east-1")
        .api_key("k")
        .settings(ModelSettings::new().with_top_p(0.5))
        .build()
        .unwrap();
    let tools: Vec<Arc<ToolSpec>> = recorded["body"]["toolConfig"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let spec = &t["toolSpec"];
            Arc::new(ToolSpec::new(
                spec["name"].as_str().unwrap(),
                spec["description"].as_str().unwrap(),
                spec["inputSchema"]["json"].clone(),
            ))
        })
        .collect();
    let messages = [
        Message::system("You are a helpful chatbot."),
        Message::user("What is the temperature of the capital of France?"),
        turn(response),
        Message::tool("30\u{b0}C", "get_temperature")
            .with_call_id("tooluse_lAG_zP8QRHmSYOwZzzaCqA"),
    ];
    assert_eq!(
        model.request_body(&Request::new(&messages).with_tools(&tools)),
        normal(&recorded["body"])
    );
    let (events, _) = stream_of(
        "bedrock/converse_stream_nova_after_tool_result.eventstream",
        NOVA,
    )
    .await;
    assert_eq!(
        completed(&events).content(),
        "The current temperature in Paris, the capital of France, is 30\u{b0}C."
    );
}

#[tokio::test]
async fn streamed_reasoning_with_its_signature_comes_before_the_text() {
    let (events, _) = stream_of(
        "bedrock/converse_stream_claude_thinking_signature.eventstream",
        CLAUDE,
    )
    .await;
    let response = completed(&events);
    assert!(matches!(events[0], LlmEvent::ThinkingDelta(_)));
    let thinking = deltas(&events, true);
    assert!(thinking.starts_with("The user has greeted me"));
    let Block::Thinking(block) = &response.blocks()[0] else {
        panic!("{:?}", response.blocks());
    };
    assert_eq!(block.text, thinking);
    let signature = block.signature.as_deref().unwrap();
    assert!(signature.starts_with("Eu0CCkgIBxABGAIqQJDc") && signature.ends_with("471iEYAQ=="));
    assert_eq!(block.provider.as_deref(), Some("bedrock"));
    assert_eq!(
        response.content(),
        "Hello! It's nice to meet you. How can I help you today?"
    );
    assert_eq!(response.usage(), Some(&usage(36, 73)));
}

#[tokio::test]
async fn streamed_redacted_reasoning_is_kept_block_by_block() {
    let (events, _) = stream_of(
        "bedrock/converse_stream_claude_redacted_thinking.eventstream",
        CLAUDE,
    )
    .await;
    let response = completed(&events);
    let redacted: Vec<usize> = response
        .blocks()
        .iter()
        .filter_map(|b| match b {
            Block::Thinking(t) => t.redacted.as_ref().map(String::len),
            _ => None,
        })
        .collect();
    assert_eq!(redacted, [1080, 752]);
    assert!(deltas(&events, true).is_empty());
    assert!(response.content().starts_with("I notice you've sent"));
    assert_eq!(response.usage(), Some(&usage(92, 253)));
}

#[tokio::test]
async fn unsigned_reasoning_and_an_empty_text_delta() {
    let (events, _) = stream_of(
        "bedrock/converse_stream_gpt_oss_reasoning.eventstream",
        "openai.gpt-oss-120b-1:0",
    )
    .await;
    let response = completed(&events);
    assert_eq!(
        response.blocks(),
        &[
            Thinking::new(
                "The user just says \"Hi\". We need to respond appropriately, friendly \
                 greeting. No special instructions. Should be short."
            )
            .into(),
            Block::text("Hello! How can I help you today?"),
        ]
    );
    assert_eq!(response.usage(), Some(&usage(70, 43)));
}

#[tokio::test]
async fn a_tool_bedrock_runs_itself_is_not_a_call_of_ours() {
    let (events, _) = stream_of("bedrock/converse_stream_nova_server_tool.eventstream", NOVA).await;
    let response = completed(&events);
    assert_eq!(
        response.tool_calls(),
        &[
            ToolCall::new("final_result", json!({"result": 7_006_652.0}))
                .with_id("tooluse_ptgCcZ0uQu-UUMz0abqoWw")
        ]
    );
    assert_eq!(response.usage(), Some(&usage(1002, 59)));
}

#[tokio::test]
async fn a_stream_equals_its_answer_read_whole() {
    // The recorded stream's turn and the same turn as a Converse answer read the same.
    let body = fixture("bedrock/converse_stream_nova_tool_use.eventstream");
    let streamed = decode_stream(Format::Bedrock, &body, 64, |_| {}).unwrap();
    let answer = json!({
        "output": {"message": {"role": "assistant", "content": [
            {"text": streamed.content()},
            {"toolUse": {"toolUseId": "tooluse_lAG_zP8QRHmSYOwZzzaCqA", "name": "get_temperature",
                "input": {"city": "Paris"}}},
        ]}},
        "stopReason": "tool_use",
        "usage": {"inputTokens": 471, "outputTokens": 91, "totalTokens": 562},
    });
    let whole = decode_answer(Format::Bedrock, &answer).unwrap();
    assert_eq!(whole.blocks(), streamed.blocks());
    assert_eq!(whole.tool_calls(), streamed.tool_calls());
    assert_eq!(whole.usage(), streamed.usage());
    assert_eq!(whole.finish_reason(), streamed.finish_reason());
}

// Errors ---------------------------------------------------------------------------------------

#[tokio::test]
async fn a_recorded_invalid_model_error_keeps_status_type_and_message() {
    for (path, stream) in [
        ("bedrock/errors/converse_invalid_model.json", false),
        ("bedrock/errors/converse_stream_invalid_model.json", true),
    ] {
        let reply = Reply::json(400, fixture(path)).header(
            "x-amzn-errortype",
            "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/",
        );
        let (model, _) = served("us.does-not-exist-model-v1:0", reply).await;
        let messages = [Message::user("hello")];
        let err = if stream {
            let mut events = Arc::new(model).stream(Request::new(&messages));
            events.next().await.unwrap().unwrap_err()
        } else {
            model.generate(Request::new(&messages)).await.unwrap_err()
        };
        let provider = err.provider().unwrap();
        assert_eq!(provider.provider(), "bedrock");
        assert_eq!(provider.status(), Some(400));
        assert_eq!(provider.kind(), ProviderErrorKind::Status);
        assert_eq!(
            provider.message(),
            "The provided model identifier is invalid."
        );
        assert_eq!(provider.error_type(), Some("ValidationException"));
    }
}

#[tokio::test]
async fn a_recorded_throttling_error_is_retried_then_reported() {
    let server = Server::always(
        Reply::json(429, fixture("bedrock/errors/converse_throttling.json"))
            .header("retry-after", "0"),
    )
    .await;
    let model = builder(NOVA, &server)
        .retry(RetryPolicy {
            attempts: 2,
            base_delay: std::time::Duration::from_millis(1),
            max_delay: std::time::Duration::from_millis(5),
        })
        .build()
        .unwrap();
    let err = model
        .generate(Request::new(&[Message::user("hello")]))
        .await
        .unwrap_err();
    let provider = err.provider().unwrap();
    assert_eq!(provider.status(), Some(429));
    assert_eq!(provider.error_type(), Some("ThrottlingException"));
    assert_eq!(provider.message(), "Rate exceeded");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    // Each attempt signed afresh.
    assert!(requests.iter().all(|r| r.header("authorization").is_some()));
}

// Authentication -------------------------------------------------------------------------------

fn hex64(text: &str) -> bool {
    text.len() == 64
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[tokio::test]
async fn a_request_is_signed_with_sigv4_for_the_region_and_its_body() {
    let (model, server) = served(
        CLAUDE,
        Reply::json(200, fixture("bedrock/converse_nova_text.json")),
    )
    .await;
    model
        .generate(Request::new(&[Message::user("hi")]))
        .await
        .unwrap();
    let request = &server.requests()[0];
    let date = request.header("x-amz-date").unwrap();
    assert_eq!(date.len(), 16, "{date}");
    assert!(date.ends_with('Z') && date.as_bytes()[8] == b'T', "{date}");
    let now = httpdate::fmt_http_date(std::time::SystemTime::now());
    let authorization = request.header("authorization").unwrap();
    let prefix = format!(
        "AWS4-HMAC-SHA256 Credential=AKIDTEST/{}/us-east-1/bedrock/aws4_request, \
         SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date, Signature=",
        &date[..8]
    );
    assert!(
        authorization.starts_with(&prefix),
        "{authorization} ({now})"
    );
    assert!(hex64(&authorization[prefix.len()..]), "{authorization}");
    let sha = request.header("x-amz-content-sha256").unwrap();
    assert!(hex64(sha), "{sha}");
    // The body's hash: the signature covers the exact bytes sent.
    assert_ne!(
        sha,
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    assert!(request.header("x-amz-security-token").is_none());
}

#[tokio::test]
async fn a_bedrock_api_key_is_a_bearer_token_instead_of_a_signature() {
    let server = Server::always(Reply::json(200, fixture("bedrock/converse_nova_text.json"))).await;
    let model = Bedrock::builder(NOVA)
        .region("eu-west-3")
        .api_key("ABSKQmVkcm9ja0FQSUtleS1leGFtcGxl")
        .base_url(&server.url)
        .build()
        .unwrap();
    model
        .generate(Request::new(&[Message::user("hi")]))
        .await
        .unwrap();
    let request = &server.requests()[0];
    assert_eq!(
        request.header("authorization"),
        Some("Bearer ABSKQmVkcm9ja0FQSUtleS1leGFtcGxl")
    );
    assert!(request.header("x-amz-date").is_none());
}

#[test]
fn the_default_endpoint_is_the_regions_and_a_region_is_required() {
    let model = Bedrock::builder(NOVA)
        .region("ap-northeast-1")
        .api_key("k")
        .build()
        .unwrap();
    assert_eq!(
        model.client().config().base_url,
        "https://bedrock-runtime.ap-northeast-1.amazonaws.com"
    );
    assert_eq!(model.info().name(), format!("bedrock:{NOVA}"));
    let err = Bedrock::builder(NOVA)
        .region("us-east-1/../x")
        .api_key("k")
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("is not an AWS region"), "{err}");
    let claude = Bedrock::builder(CLAUDE)
        .region("us-east-1")
        .api_key("k")
        .build()
        .unwrap();
    let info = claude.info();
    assert_eq!(info.context_window, Some(200_000));
    assert!(info.supports.reasoning && info.supports.tools);
}

// Faults of the event stream ----------------------------------------------------------------

/// The recorded streams of tests/fixtures/bedrock.
fn recorded_streams() -> Vec<(String, Vec<u8>)> {
    let mut all: Vec<(String, Vec<u8>)> =
        std::fs::read_dir(support::fixtures_dir().join("bedrock"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "eventstream"))
            .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
            .collect();
    all.sort();
    assert_eq!(all.len(), 7);
    all
}

#[test]
fn every_recorded_stream_cut_at_every_byte_is_incomplete_never_an_answer() {
    for (name, body) in recorded_streams() {
        let whole = decode_stream(Format::Bedrock, &body, 97, |_| {}).unwrap();
        for cut in 0..body.len() {
            let mut text = String::new();
            let err = decode_stream(Format::Bedrock, &body[..cut], 97, |e| {
                if let LlmEvent::TextDelta(t) = e {
                    text.push_str(&t);
                }
            })
            .unwrap_err();
            let provider = err.provider().unwrap();
            assert_eq!(
                provider.kind(),
                ProviderErrorKind::Incomplete,
                "{name} cut at {cut}: {err}"
            );
            assert!(whole.content().starts_with(&text), "{name} cut at {cut}");
        }
    }
}

/// The frames of an event stream: (event type, payload).
fn frames_of(body: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut rest = bytes::Bytes::copy_from_slice(body);
    while !rest.is_empty() {
        let message = aws_smithy_eventstream::frame::read_message_from(&mut rest).unwrap();
        let kind = message
            .headers()
            .iter()
            .find(|h| h.name().as_str() == ":event-type")
            .map(|h| h.value().as_string().unwrap().as_str().to_owned())
            .unwrap();
        out.push((kind, message.payload().to_vec()));
    }
    out
}

fn reframed(frames: &[(String, Vec<u8>)]) -> Vec<u8> {
    frames
        .iter()
        .flat_map(|(kind, payload)| {
            support::eventstream_frame(
                &[
                    (":event-type", kind),
                    (":content-type", "application/json"),
                    (":message-type", "event"),
                ],
                payload,
            )
        })
        .collect()
}

#[test]
fn huge_and_negative_counts_keep_the_answer_and_saturate() {
    for (name, body) in recorded_streams() {
        let whole = decode_stream(Format::Bedrock, &body, body.len(), |_| {}).unwrap();
        let mut frames = frames_of(&body);
        assert_eq!(
            reframed(&frames),
            body,
            "{name}: AWS's encoder writes the same bytes"
        );
        let metadata = frames.iter_mut().find(|(k, _)| k == "metadata").unwrap();
        metadata.1 = br#"{"usage":{"inputTokens":-5,"outputTokens":1e30,"cacheReadInputTokens":18446744073709551616,"cacheWriteInputTokens":"12","totalTokens":-1}}"#.to_vec();
        let odd = decode_stream(Format::Bedrock, &reframed(&frames), 33, |_| {}).unwrap();
        assert_eq!(odd.blocks(), whole.blocks(), "{name}");
        assert_eq!(odd.tool_calls(), whole.tool_calls(), "{name}");
        let usage = odd.usage().unwrap();
        assert_eq!(
            (
                usage.prompt_tokens,
                usage.completion_tokens,
                usage.total_tokens
            ),
            (u64::MAX, u64::MAX, u64::MAX),
            "{name}"
        );
        assert_eq!(
            (usage.cached_tokens, usage.cache_write_tokens),
            (u64::MAX, 0)
        );
    }
    let answer = json!({"output": {"message": {"role": "assistant", "content": [{"text": "x"}]}},
        "stopReason": "end_turn", "usage": {"inputTokens": -3, "outputTokens": 2.5}});
    let usage = *decode_answer(Format::Bedrock, &answer)
        .unwrap()
        .usage()
        .unwrap();
    assert_eq!(usage, TokenUsage::new(0, 2, 2));
}

async fn streamed(model: &Bedrock) -> (String, Result<CompletionResponse, harness_core::Error>) {
    let mut events = Arc::new(model.clone()).stream(Request::new(&[Message::user("hi")]));
    let mut text = String::new();
    while let Some(event) = events.next().await {
        match event {
            Ok(LlmEvent::TextDelta(t)) => text.push_str(&t),
            Ok(LlmEvent::Completed(turn)) => return (text, Ok(*turn)),
            Ok(_) => {}
            Err(e) => return (text, Err(e)),
        }
    }
    panic!("the stream ended with neither a turn nor an error");
}

#[tokio::test]
async fn exception_frames_are_the_services_errors_after_the_deltas() {
    let body = fixture("bedrock/converse_stream_nova_text.eventstream");
    let frames = frames_of(&body);
    for (kind, message) in [
        (
            "throttlingException",
            "Too many tokens, please wait before trying again.",
        ),
        (
            "validationException",
            "The model returned an invalid response.",
        ),
        ("modelStreamErrorException", "Model stream error"),
        ("internalServerException", "Internal failure"),
        ("serviceUnavailableException", "The service is unavailable."),
    ] {
        // Three events, then the exception (a hand-made frame: recordings of one are not
        // public).
        let exception = support::eventstream_frame(
            &[
                (":exception-type", kind),
                (":content-type", "application/json"),
                (":message-type", "exception"),
            ],
            json!({"message": message}).to_string().as_bytes(),
        );
        let sent = [reframed(&frames[..3]), exception].concat();
        let (model, _) = served(NOVA, eventstream(sent)).await;
        let (text, end) = streamed(&model).await;
        let err = end.unwrap_err();
        let provider = err.provider().unwrap();
        assert_eq!(provider.kind(), ProviderErrorKind::Vendor, "{kind}");
        assert_eq!(provider.error_type(), Some(kind));
        assert_eq!(provider.message(), message);
        assert_eq!(provider.provider(), "bedrock");
        assert_eq!(text, "The capital of France is Paris.");
    }
}

#[tokio::test]
async fn a_corrupt_frame_mid_stream_is_malformed_after_the_deltas() {
    let body = fixture("bedrock/converse_stream_nova_text.eventstream");
    let frames = frames_of(&body);
    let head = reframed(&frames[..3]);
    for (at, what) in [
        (20, "a header byte"),
        (0, "the length"),
        (10, "the prelude checksum"),
    ] {
        let mut bad = reframed(&frames[3..4]);
        let offset = if at == 20 { bad.len() - 10 } else { at };
        bad[offset] ^= 0x20;
        let sent = [head.clone(), bad, reframed(&frames[4..])].concat();
        let (model, _) = served(NOVA, eventstream(sent)).await;
        let (text, end) = streamed(&model).await;
        let err = end.unwrap_err();
        let provider = err.provider().unwrap();
        assert_eq!(
            provider.kind(),
            ProviderErrorKind::Malformed,
            "{what}: {err}"
        );
        assert!(
            provider.message().contains("corrupt frame"),
            "{what}: {err}"
        );
        assert_eq!(text, "The capital of France is Paris.", "{what}");
    }
}

#[tokio::test]
async fn a_stream_cut_over_the_wire_at_every_frame_is_incomplete() {
    let body = fixture("bedrock/converse_stream_nova_tool_use.eventstream");
    let frames = frames_of(&body);
    for end in 0..frames.len() {
        let (model, _) = served(NOVA, eventstream(reframed(&frames[..end]))).await;
        let (_, outcome) = streamed(&model).await;
        let err = outcome.unwrap_err();
        assert_eq!(
            err.provider().unwrap().kind(),
            ProviderErrorKind::Incomplete,
            "{end} frames: {err}"
        );
    }
}

// CountTokens: the bodies follow AWS's API reference (no public recording of the operation
// was found); the path, the signed request and the reading are what is checked.
#[tokio::test]
async fn count_tokens_asks_count_tokens_with_the_prompt_and_adds_an_estimate_for_tools() {
    let (model, server) =
        served(CLAUDE, Reply::json(200, br#"{"inputTokens": 42}"#.to_vec())).await;
    let messages = [Message::system("Be brief."), Message::user("hi")];
    let count = model.count_tokens(Request::new(&messages)).await.unwrap();
    assert_eq!((count.tokens, count.exact), (42, true));
    let request = &server.requests()[0];
    assert_eq!(
        request.target,
        "/model/us.anthropic.claude-3-7-sonnet-20250219-v1%3A0/count-tokens"
    );
    assert_eq!(
        request.json(),
        json!({"input": {"converse": {
            "messages": [{"role": "user", "content": [{"text": "hi"}]}],
            "system": [{"text": "Be brief."}],
        }}})
    );
    assert!(
        request
            .header("authorization")
            .unwrap()
            .starts_with("AWS4-HMAC-SHA256 ")
    );

    // Tools are not counted by the operation: estimated and added, the count an estimate.
    let tools = [Arc::new(ToolSpec::new(
        "lookup",
        "Look a word up in the dictionary.",
        json!({"type": "object", "properties": {"word": {"type": "string"}}}),
    ))];
    let with_tools = model
        .count_tokens(Request::new(&messages).with_tools(&tools))
        .await
        .unwrap();
    assert!(
        !with_tools.exact && with_tools.tokens > 42,
        "{with_tools:?}"
    );

    // An answer without the count, or an error, is a typed error.
    let (model, _server) = served(CLAUDE, Reply::json(200, b"{}".to_vec())).await;
    let err = model
        .count_tokens(Request::new(&messages))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), harness_core::ErrorKind::Provider, "{err}");
    assert!(err.to_string().contains("inputTokens"), "{err}");
    let (model, _server) = served(
        CLAUDE,
        Reply::json(
            400,
            br#"{"message": "The provided model doesn't support counting tokens."}"#.to_vec(),
        ),
    )
    .await;
    let err = model
        .count_tokens(Request::new(&messages))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), harness_core::ErrorKind::Provider, "{err}");
}
