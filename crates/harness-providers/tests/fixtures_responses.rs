//! Recorded OpenAI Responses API traffic (tests/fixtures/openai-responses, provenance in the
//! fixtures README) served from a loopback server to `OpenAiResponses`, whole and streamed:
//! what the provider makes of each answer, field by field, and what it writes for the turns
//! that follow.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::Arc;

use futures_util::StreamExt as _;
use harness_core::agent::{Agent, AgentEvent};
use harness_core::hosted::{
    CodeInterpreter, FileSearch, McpApproval, RemoteMcp, SearchContextSize, UserLocation, WebSearch,
};
use harness_core::{
    Block, CompletionResponse, Content, ErrorKind, FinishReason, HostedCall, HostedTool, Llm,
    LlmEvent, Message, ModelSettings, OutputSchema, ProviderErrorKind, ReasoningLevel, Request,
    Thinking, ToolSpec,
};
use harness_providers::{Anthropic, Gemini, OpenAi, OpenAiResponses, OpenAiResponsesBuilder};
use serde_json::{Value, json};
use support::{Reply, Server, completed, deltas, fixture, fixture_json, turn, usage_figures};

const DIR: &str = "openai-responses";

fn path(name: &str) -> String {
    format!("{DIR}/{name}")
}

fn builder(url: &str) -> OpenAiResponsesBuilder {
    OpenAiResponses::builder("gpt-5").api_key("k").base_url(url)
}

fn model(url: &str) -> OpenAiResponses {
    builder(url).build().unwrap()
}

/// A server answering every request with the recorded whole answer `name`.
async fn answering(name: &str) -> Server {
    Server::always(Reply::json(200, fixture(&path(name)))).await
}

/// A server answering every request with the recorded stream `name`.
async fn streaming(name: &str) -> Server {
    Server::always(Reply::sse(fixture(&path(name)))).await
}

async fn stream_events(model: &OpenAiResponses, messages: &[Message]) -> Vec<LlmEvent> {
    Arc::new(model.clone())
        .stream(Request::new(messages))
        .map(|e| e.unwrap())
        .collect()
        .await
}

fn thinking(response: &CompletionResponse) -> Vec<&Thinking> {
    response
        .blocks()
        .iter()
        .filter_map(|b| match b {
            Block::Thinking(t) => Some(t),
            _ => None,
        })
        .collect()
}

fn hosted(response: &CompletionResponse) -> Vec<&HostedCall> {
    response
        .blocks()
        .iter()
        .filter_map(|b| match b {
            Block::HostedCall(c) => Some(&**c),
            _ => None,
        })
        .collect()
}

/// The recorded request's field `key`.
fn recorded(name: &str, key: &str) -> Value {
    fixture_json(&path(&format!("{name}.request.json")))[key].clone()
}

#[tokio::test]
async fn a_whole_text_answer_and_the_request_that_asked_for_it() {
    let server = answering("nonstream_text.json").await;
    let messages = [Message::user("What is the capital of France?")];
    let response = model(&server.url)
        .generate(Request::new(&messages))
        .await
        .unwrap();
    assert_eq!(response.content(), "The capital of France is Paris.");
    assert_eq!(
        response.id(),
        Some("resp_68c2e8c147ac819491bcd667055eadbc02e845978fbbb592")
    );
    assert_eq!(response.model(), Some("gpt-4o-2024-08-06"));
    assert_eq!(usage_figures(&response), (14, 8, 22, 0, 0));
    assert_eq!(response.finish_reason(), FinishReason::Stop);
    assert!(response.tool_calls().is_empty());

    let request = &server.requests()[0];
    assert_eq!(request.target, "/responses");
    assert_eq!(request.header("authorization"), Some("Bearer k"));
    let body = request.json();
    assert_eq!(body["input"], recorded("nonstream_text", "input"));
    // Not stored unless asked, and the reasoning asked for encrypted so it can go back.
    assert_eq!(body["store"], json!(false));
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(body["model"], "gpt-5");
    for absent in [
        "stream",
        "tools",
        "tool_choice",
        "reasoning",
        "text",
        "instructions",
    ] {
        assert!(body.get(absent).is_none(), "{absent}: {body}");
    }
}

#[tokio::test]
async fn a_whole_function_call_then_the_answer_after_its_output() {
    let server = Server::start(|n, _| {
        let name = if n == 0 {
            "nonstream_function_call.json"
        } else {
            "nonstream_text_after_function_call_output.json"
        };
        Reply::json(200, fixture(&path(name)))
    })
    .await;
    let model = model(&server.url);
    let tool = Arc::new(ToolSpec::new(
        "get_capital",
        "",
        json!({"type": "object", "properties": {"country": {"type": "string"}},
            "required": ["country"], "additionalProperties": false}),
    ));
    let tools = [tool];
    let mut messages = vec![Message::user("What is the capital of PotatoLand?")];
    let first = model
        .generate(Request::new(&messages).with_tools(&tools))
        .await
        .unwrap();
    let call = &first.tool_calls()[0];
    assert_eq!(call.id.as_deref(), Some("call_YfwRsW8sUxDKipwyhWTzOXCA"));
    assert_eq!(
        (call.name.as_str(), call.arguments_value()),
        ("get_capital", json!({"country": "PotatoLand"}))
    );
    assert_eq!(first.content(), "");
    assert_eq!(usage_figures(&first), (40, 18, 58, 0, 0));

    messages.push(turn(&first));
    messages.push(
        Message::tool("Potato City", "get_capital").with_call_id("call_YfwRsW8sUxDKipwyhWTzOXCA"),
    );
    let second = model
        .generate(Request::new(&messages).with_tools(&tools))
        .await
        .unwrap();
    assert_eq!(
        second.content(),
        "The capital of PotatoLand is Potato City."
    );

    let requests = server.requests();
    let first_body = requests[0].json();
    // The tool as the recording sent it: strict, its schema being strict mode's.
    let tool_sent = &first_body["tools"][0];
    let tool_recorded = &recorded("nonstream_function_call", "tools")[0];
    for key in ["type", "name", "parameters", "strict"] {
        assert_eq!(tool_sent[key], tool_recorded[key], "{key}");
    }
    let input = requests[1].json()["input"].clone();
    let expected = recorded("nonstream_text_after_function_call_output", "input");
    assert_eq!(input[0], expected[0]);
    for key in ["type", "call_id", "name", "arguments"] {
        assert_eq!(input[1][key], expected[1][key], "{key}");
    }
    assert_eq!(input[2], expected[2]);
}

#[tokio::test]
async fn a_streamed_function_call_then_the_streamed_answer_after_its_output() {
    let server = Server::start(|n, _| {
        let name = if n == 0 {
            "stream_function_call.sse"
        } else {
            "stream_text_after_function_call_output.sse"
        };
        Reply::sse(fixture(&path(name)))
    })
    .await;
    let model = model(&server.url);
    let mut messages = vec![Message::user("What is the capital of France?")];
    let events = stream_events(&model, &messages).await;
    assert_eq!(deltas(&events, false), "");
    let first = completed(&events).clone();
    let call = &first.tool_calls()[0];
    assert_eq!(call.id.as_deref(), Some("call_kL0PCQV7M2WMoVX8V8OtYSAL"));
    assert_eq!(call.arguments_value(), json!({"country": "France"}));
    assert_eq!(usage_figures(&first), (255, 16, 271, 0, 0));
    assert_eq!(
        first.id(),
        Some("resp_67e554a155508191900ee113293c4c830794405d35281ae2")
    );

    // The recording's client paired the result by the item id; so does this transcript.
    let recorded_id = "fc_67e554a1de488191af0831d35cbe082e0794405d35281ae2";
    let mut answer = turn(&first);
    answer.tool_calls[0].id = Some(recorded_id.to_owned());
    messages.push(answer);
    messages.push(Message::tool("Paris", "get_capital").with_call_id(recorded_id));
    let events = stream_events(&model, &messages).await;
    assert_eq!(deltas(&events, false), "The capital of France is Paris.");
    let second = completed(&events);
    assert_eq!(second.content(), "The capital of France is Paris.");
    assert_eq!(usage_figures(second), (278, 9, 287, 0, 0));
    assert_eq!(second.finish_reason(), FinishReason::Stop);

    let body = server.requests()[1].json();
    assert_eq!(body["stream"], json!(true));
    assert_eq!(
        body["input"],
        recorded("stream_text_after_function_call_output", "input")
    );
}

#[tokio::test]
async fn reasoning_comes_back_with_its_id_and_encrypted_content_and_goes_back_whole() {
    let server = Server::start(|n, _| {
        let name = if n == 0 {
            "nonstream_reasoning_encrypted_function_call.json"
        } else {
            "nonstream_text_after_reasoning_round.json"
        };
        Reply::json(200, fixture(&path(name)))
    })
    .await;
    let settings = ModelSettings::new().with_reasoning(ReasoningLevel::Low);
    let model = builder(&server.url).settings(settings).build().unwrap();
    let answer = fixture_json(&path("nonstream_reasoning_encrypted_function_call.json"));
    let item = &answer["output"][0];
    let mut messages = vec![
        Message::system("You are a helpful assistant that uses planning."),
        Message::user("Compose a 12-line poem."),
    ];
    let first = model.generate(Request::new(&messages)).await.unwrap();
    let reasoning = thinking(&first);
    assert_eq!(reasoning.len(), 1);
    let summary: Vec<&str> = item["summary"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    assert_eq!(reasoning[0].text, summary.join("\n\n"));
    assert_eq!(reasoning[0].id.as_deref(), item["id"].as_str());
    assert_eq!(
        reasoning[0].redacted.as_deref(),
        item["encrypted_content"].as_str()
    );
    assert_eq!(reasoning[0].provider.as_deref(), Some("openai-responses"));
    assert_eq!(first.thinking(), summary.join("\n\n"));
    let call = &first.tool_calls()[0];
    assert_eq!(call.id.as_deref(), Some("call_gL7JE6GDeGGsFubqO2XGytyO"));
    assert_eq!(call.name, "update_plan");
    assert!(
        call.arguments["plan"]
            .as_str()
            .unwrap()
            .starts_with("Plan:")
    );
    assert_eq!(usage_figures(&first), (124, 1926, 2050, 0, 1792));

    messages.push(turn(&first));
    messages.push(
        Message::tool("plan updated", "update_plan").with_call_id("call_gL7JE6GDeGGsFubqO2XGytyO"),
    );
    let second = model.generate(Request::new(&messages)).await.unwrap();
    assert!(second.content().starts_with("Softly old fountains"));
    assert_eq!(usage_figures(&second), (2087, 124, 2211, 2048, 0));

    let body = server.requests()[1].json();
    assert_eq!(
        body["instructions"],
        "You are a helpful assistant that uses planning."
    );
    assert_eq!(
        body["reasoning"],
        json!({"effort": "low", "summary": "auto"})
    );
    assert_eq!(body["store"], json!(false));
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    let input = body["input"].as_array().unwrap();
    let kinds: Vec<&str> = input
        .iter()
        .map(|i| i.get("type").and_then(Value::as_str).unwrap_or("message"))
        .collect();
    assert_eq!(
        kinds,
        [
            "message",
            "reasoning",
            "function_call",
            "function_call_output"
        ]
    );
    // The reasoning item as the recording's client sent it back: id and encrypted content.
    let sent_back = &recorded("nonstream_text_after_reasoning_round", "input")[1];
    assert_eq!(input[1]["id"], sent_back["id"]);
    assert_eq!(
        input[1]["encrypted_content"],
        sent_back["encrypted_content"]
    );
    assert_eq!(
        input[1]["summary"],
        json!([{"type": "summary_text", "text": summary.join("\n\n")}])
    );
    assert_eq!(input[2]["call_id"], "call_gL7JE6GDeGGsFubqO2XGytyO");
    assert!(input[2].get("id").is_none(), "paired by call_id alone");
    assert_eq!(input[3]["output"], "plan updated");
}

#[tokio::test]
async fn stored_reasoning_and_hosted_calls_go_back_by_reference_and_as_sent() {
    let server = answering("nonstream_reasoning_encrypted_function_call.json").await;
    let model = builder(&server.url).store(true).build().unwrap();
    let mut messages = vec![Message::user("Compose a poem.")];
    let first = model.generate(Request::new(&messages)).await.unwrap();
    let search = answering("nonstream_web_search_url_citation.json").await;
    let searched = builder(&search.url)
        .store(true)
        .build()
        .unwrap()
        .generate(Request::new(&messages))
        .await
        .unwrap();
    messages.push(turn(&first));
    messages.push(Message::tool("ok", "update_plan").with_call_id("call_gL7JE6GDeGGsFubqO2XGytyO"));
    messages.push(turn(&searched));
    messages.push(Message::user("And then?"));
    let body = model.request_body(&Request::new(&messages), false);
    assert_eq!(body["store"], json!(true));
    assert!(body.get("include").is_none(), "{body}");
    let input = body["input"].as_array().unwrap();
    let answer = fixture_json(&path("nonstream_reasoning_encrypted_function_call.json"));
    assert_eq!(
        input[1],
        json!({"type": "item_reference", "id": answer["output"][0]["id"]})
    );
    let searched_answer = fixture_json(&path("nonstream_web_search_url_citation.json"));
    let web_search = input
        .iter()
        .find(|i| i["type"] == "web_search_call")
        .unwrap();
    assert_eq!(*web_search, searched_answer["output"][0]);

    // Not stored, a hosted call cannot be matched by the service: it stays out.
    let unstored = builder(&search.url).build().unwrap();
    let body = unstored.request_body(&Request::new(&messages), false);
    let input = body["input"].as_array().unwrap();
    assert!(!input.iter().any(|i| i["type"] == "web_search_call"));
    assert!(!input.iter().any(|i| i["type"] == "item_reference"));
}

#[tokio::test]
async fn streamed_reasoning_summaries_arrive_as_deltas_and_end_in_the_whole_item() {
    let server = streaming("stream_reasoning_summary_encrypted_function_call.sse").await;
    let events = stream_events(&model(&server.url), &[Message::user("12 plus 7")]).await;
    let response = completed(&events);
    let reasoning = thinking(response);
    assert_eq!(reasoning.len(), 1);
    assert_eq!(deltas(&events, true), reasoning[0].text);
    assert!(
        reasoning[0]
            .text
            .starts_with("**Calculating step-by-step using calculator**\n\n")
    );
    assert_eq!(
        reasoning[0].id.as_deref(),
        Some("rs_01830d662ab3856501693c321405c88190be3ab04d5782d5f9")
    );
    // The encrypted content of the finished item, not the one it was added with.
    let body = String::from_utf8(fixture(&path(
        "stream_reasoning_summary_encrypted_function_call.sse",
    )))
    .unwrap();
    let done = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str::<Value>(d).unwrap())
        .find(|e| e["type"] == "response.output_item.done" && e["item"]["type"] == "reasoning")
        .unwrap();
    assert_eq!(
        reasoning[0].redacted.as_deref(),
        done["item"]["encrypted_content"].as_str()
    );
    let call = &response.tool_calls()[0];
    assert_eq!(call.id.as_deref(), Some("call_AB6AaRZ1FYZB2RwS6A5vbdqn"));
    assert_eq!(
        call.arguments_value(),
        json!({"a": 12, "b": 7, "op": "add"})
    );
    assert_eq!(response.finish_reason(), FinishReason::Stop);

    let server = streaming("stream_reasoning_encrypted_function_call.sse").await;
    let events = stream_events(&model(&server.url), &[Message::user("x")]).await;
    let response = completed(&events);
    let reasoning = thinking(response);
    assert_eq!(
        reasoning[0].id.as_deref(),
        Some("rs_0050471a34b36ae60068c97bac4dcc819595fd0f80d6b3c405")
    );
    assert!(reasoning[0].redacted.is_some() && reasoning[0].text.is_empty());
    assert_eq!(
        response.tool_calls()[0].arguments_value(),
        json!({"result": 6666})
    );
}

#[tokio::test]
async fn structured_output_goes_as_text_format_json_schema() {
    let server = answering("nonstream_json_schema_after_function_call_output.json").await;
    let recorded_format = recorded("nonstream_json_schema_after_function_call_output", "text");
    let schema = OutputSchema::new("CityLocation", recorded_format["format"]["schema"].clone());
    let model = model(&server.url);
    assert!(model.info().supports.structured_output);
    let messages = [Message::user("Where does the user live?")];
    let response = model
        .generate(Request::new(&messages).with_output(&schema))
        .await
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(response.content()).unwrap(),
        json!({"city": "Mexico City", "country": "Mexico"})
    );
    assert_eq!(usage_figures(&response), (89, 16, 105, 0, 0));
    assert_eq!(server.requests()[0].json()["text"], recorded_format);

    let off = builder(&server.url)
        .structured_output(false)
        .build()
        .unwrap();
    assert!(!off.info().supports.structured_output);
    let body = off.request_body(&Request::new(&messages).with_output(&schema), false);
    assert!(body.get("text").is_none());
}

#[tokio::test]
async fn errors_name_the_vendor_code_and_message() {
    // An HTTP 400, as recorded.
    let server = Server::always(Reply::json(
        400,
        fixture(&path("errors/http_400_invalid_temperature.json")),
    ))
    .await;
    let err = model(&server.url)
        .generate(Request::new(&[Message::user("hi")]))
        .await
        .unwrap_err();
    let provider = err.provider().unwrap();
    assert_eq!(provider.provider(), "openai-responses");
    assert_eq!(provider.status(), Some(400));
    assert!(
        provider.message().contains("Invalid 'temperature'"),
        "{provider}"
    );

    // An answer that is the service's error.
    let server = answering("errors/answer_error_insufficient_quota.json").await;
    let err = model(&server.url)
        .generate(Request::new(&[Message::user("hi")]))
        .await
        .unwrap_err();
    let provider = err.provider().unwrap();
    assert_eq!(provider.kind(), ProviderErrorKind::Vendor);
    assert_eq!(provider.error_type(), Some("insufficient_quota"));
    assert!(
        provider
            .message()
            .starts_with("You exceeded your current quota")
    );

    // A stream's `error` event, before its `response.failed`.
    let server = streaming("errors/stream_error_then_failed_insufficient_quota.sse").await;
    let mut stream = Arc::new(model(&server.url)).stream(Request::new(&[Message::user("hi")]));
    let mut last = None;
    while let Some(item) = stream.next().await {
        last = Some(item);
    }
    let err = last.unwrap().unwrap_err();
    let provider = err.provider().unwrap();
    assert_eq!(provider.kind(), ProviderErrorKind::Vendor);
    assert_eq!(provider.error_type(), Some("insufficient_quota"));
    assert!(
        provider
            .message()
            .starts_with("You exceeded your current quota")
    );
}

#[tokio::test]
async fn a_streamed_web_search_reaches_the_events_and_the_transcript() {
    let server = streaming("stream_web_search_call.sse").await;
    let events = stream_events(&model(&server.url), &[Message::user("search")]).await;
    let response = completed(&events);
    let calls = hosted(response);
    assert_eq!(calls.len(), 1);
    let call = calls[0];
    assert_eq!(call.kind, "web_search_call");
    assert_eq!(
        call.id,
        "ws_00a60507bf41223d0068c9d30021d081a0962d80d50c12e317"
    );
    assert_eq!(call.status.as_deref(), Some("completed"));
    assert_eq!(call.provider.as_deref(), Some("openai-responses"));
    assert_eq!(call.raw["type"], "web_search_call");
    assert!(call.query.as_deref().is_some_and(|q| !q.is_empty()));
    assert!(!call.results.is_empty(), "the sources asked for");
    let emitted: Vec<&HostedCall> = events
        .iter()
        .filter_map(|e| match e {
            LlmEvent::HostedCall(c) => Some(&**c),
            _ => None,
        })
        .collect();
    assert_eq!(emitted, [call]);
    assert_eq!(deltas(&events, false), response.content());
    assert!(!response.content().is_empty());
    let u = response.usage().unwrap();
    assert!(u.cached_tokens > 0 && u.reasoning_tokens > 0, "{u:?}");
}

#[tokio::test]
async fn citations_mcp_code_and_file_search_are_read_as_what_they_are() {
    let server = answering("nonstream_web_search_url_citation.json").await;
    let response = model(&server.url)
        .generate(Request::new(&[Message::user("x")]))
        .await
        .unwrap();
    let call = hosted(&response)[0];
    assert_eq!(call.query.as_deref(), Some("tallest mountain in Alberta"));
    assert_eq!(call.citations.len(), 1);
    assert_eq!(call.citations[0]["type"], "url_citation");
    assert_eq!(
        call.citations[0]["url"],
        "https://www.britannica.com/place/Mount-Columbia?utm_source=openai"
    );
    assert_eq!(
        (
            call.citations[0]["start_index"].as_u64(),
            call.citations[0]["end_index"].as_u64()
        ),
        (Some(126), Some(211))
    );

    let server = answering("nonstream_mcp_call.json").await;
    let response = model(&server.url)
        .generate(Request::new(&[Message::user("x")]))
        .await
        .unwrap();
    let calls = hosted(&response);
    let kinds: Vec<&str> = calls.iter().map(|c| c.kind.as_str()).collect();
    assert_eq!(kinds, ["mcp_list_tools", "mcp_call"]);
    assert_eq!(calls[0].server.as_deref(), Some("deepwiki"));
    assert_eq!(calls[0].results[0]["name"], "ask_question");
    assert_eq!(calls[1].server.as_deref(), Some("deepwiki"));
    assert_eq!(calls[1].tool.as_deref(), Some("ask_question"));
    let arguments: Value = serde_json::from_str(calls[1].arguments.as_deref().unwrap()).unwrap();
    assert_eq!(arguments["repoName"], "pydantic/pydantic-ai");
    assert!(
        calls[1]
            .output
            .as_deref()
            .unwrap()
            .starts_with("Pydantic AI is a Python agent framework")
    );
    assert_eq!(calls[1].error, None);
    // Two reasoning items with no summary, each its own block with its own id.
    let reasoning = thinking(&response);
    assert_eq!(reasoning.len(), 2);
    assert_ne!(reasoning[0].id, reasoning[1].id);
    assert!(
        response
            .content()
            .starts_with("Pydantic AI is a Python agent framework")
    );
    assert_eq!(usage_figures(&response), (1207, 535, 1742, 0, 320));

    let server = answering("nonstream_code_interpreter_call.json").await;
    let response = model(&server.url)
        .generate(Request::new(&[Message::user("x")]))
        .await
        .unwrap();
    let call = hosted(&response)[0];
    assert_eq!(call.kind, "code_interpreter_call");
    assert_eq!(
        call.code.as_deref(),
        Some("# compute the value\n65465 - 6544 * 65464 - 6 + 1.02255\n")
    );
    assert_eq!(call.output.as_deref(), Some("-428330955.97745"));
    assert_eq!(
        call.results,
        [json!({"logs": "-428330955.97745", "type": "logs"})]
    );
    assert_eq!(usage_figures(&response), (1493, 125, 1618, 1280, 64));

    let server = answering("nonstream_file_search_call.json").await;
    let response = model(&server.url)
        .generate(Request::new(&[Message::user("x")]))
        .await
        .unwrap();
    let call = hosted(&response)[0];
    assert_eq!(call.kind, "file_search_call");
    assert_eq!(
        call.query.as_deref(),
        Some("What is the capital of France?")
    );
    assert_eq!(call.results[0]["file_id"], "file-2b6dRdmXnzSrqiEbhVJZRU");
    assert_eq!(call.citations[0]["type"], "file_citation");
    assert_eq!(response.content(), "The capital of France is Paris.");
}

#[tokio::test]
async fn hosted_tools_go_as_the_recordings_sent_them() {
    let messages = [Message::user("x")];
    let server = Server::always(Reply::json(200, b"{}".to_vec())).await;
    let sent = |settings: ModelSettings| {
        builder(&server.url)
            .settings(settings)
            .build()
            .unwrap()
            .request_body(&Request::new(&messages), false)
    };
    let mcp = RemoteMcp::new("deepwiki", "https://mcp.deepwiki.com/mcp")
        .with_description("DeepWiki MCP server")
        .with_allowed_tools(["ask_question"])
        .with_require_approval(McpApproval::Never)
        .with_header("custom-header-key", "custom-header-value");
    let body = sent(ModelSettings::new().with_hosted_tool(mcp));
    assert_eq!(body["tools"], recorded("nonstream_mcp_call", "tools"));
    assert_eq!(body["tool_choice"], Value::Null);

    let search = WebSearch::new().with_context_size(SearchContextSize::Medium);
    let body = sent(ModelSettings::new().with_hosted_tool(search));
    assert_eq!(body["tools"], recorded("stream_web_search_call", "tools"));
    assert_eq!(
        body["include"],
        recorded("stream_web_search_call", "include")
    );

    let body = sent(ModelSettings::new().with_hosted_tool(CodeInterpreter::new()));
    assert_eq!(
        body["tools"],
        recorded("nonstream_code_interpreter_call", "tools")
    );
    assert_eq!(
        body["include"],
        recorded("nonstream_code_interpreter_call", "include")
    );

    let files = FileSearch::new(["vs_6939ad669c648191821c3a46f90cf33d"]);
    let body = sent(ModelSettings::new().with_hosted_tool(files));
    assert_eq!(
        body["tools"],
        recorded("nonstream_file_search_call", "tools")
    );

    // The options the recordings do not show, as the API documents them.
    let search = WebSearch::new()
        .with_user_location(UserLocation::new().with_country("GB").with_city("London"))
        .with_allowed_domains(["example.com"]);
    let body = sent(
        ModelSettings::new()
            .with_hosted_tool(search)
            .with_hosted_tool(CodeInterpreter::in_container("cntr_1"))
            .with_hosted_tool(FileSearch::new(["vs_1"]).with_max_results(3))
            .with_hosted_tool(HostedTool::custom(
                "image_generation",
                json!({"type": "ignored", "quality": "low"}),
            )),
    );
    assert_eq!(
        body["tools"],
        json!([
            {"type": "web_search", "user_location": {"type": "approximate", "country": "GB",
                "city": "London"}, "filters": {"allowed_domains": ["example.com"]}},
            {"type": "code_interpreter", "container": "cntr_1"},
            {"type": "file_search", "vector_store_ids": ["vs_1"], "max_num_results": 3},
            {"type": "image_generation", "quality": "low"},
        ])
    );
}

#[tokio::test]
async fn every_other_provider_refuses_a_hosted_tool_without_sending() {
    let server = Server::always(Reply::json(200, b"{}".to_vec())).await;
    let settings = ModelSettings::new().with_hosted_tool(WebSearch::new());
    let models: Vec<(&str, Arc<dyn Llm>)> = vec![
        (
            "OpenAI",
            Arc::new(
                OpenAi::builder("m")
                    .api_key("k")
                    .base_url(&server.url)
                    .build()
                    .unwrap(),
            ),
        ),
        (
            "Groq",
            Arc::new(
                harness_providers::Groq::builder("m")
                    .api_key("k")
                    .base_url(&server.url)
                    .build()
                    .unwrap(),
            ),
        ),
        (
            "Anthropic",
            Arc::new(
                Anthropic::builder("m")
                    .api_key("k")
                    .base_url(&server.url)
                    .build()
                    .unwrap(),
            ),
        ),
        (
            "Gemini",
            Arc::new(
                Gemini::builder("m")
                    .api_key("k")
                    .base_url(&server.url)
                    .build()
                    .unwrap(),
            ),
        ),
        (
            "Cohere",
            Arc::new(
                harness_providers::Cohere::builder("m")
                    .api_key("k")
                    .base_url(&server.url)
                    .build()
                    .unwrap(),
            ),
        ),
    ];
    let messages = [Message::user("x")];
    for (name, model) in models {
        let request = Request::new(&messages).with_settings(&settings);
        let err = model.generate(request).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Configuration, "{name}: {err}");
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("{name} cannot offer the hosted tool 'web_search'")),
            "{text}"
        );
        let mut stream = Arc::clone(&model).stream(request);
        let first = stream.next().await.unwrap().unwrap_err();
        assert_eq!(first.to_string(), text);
        assert!(stream.next().await.is_none());
    }
    // Set as the provider's defaults, the same.
    let model = Anthropic::builder("m")
        .api_key("k")
        .base_url(&server.url)
        .settings(settings)
        .build()
        .unwrap();
    let err = model.generate(Request::new(&messages)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Configuration);
    assert!(server.requests().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn an_agent_reports_hosted_calls_as_events_and_keeps_them_in_the_transcript() {
    let server = streaming("stream_web_search_call.sse").await;
    let model = builder(&server.url)
        .settings(ModelSettings::new().with_hosted_tool(WebSearch::new()))
        .build()
        .unwrap();
    let agent = Agent::builder(model).build().unwrap();
    let mut events = agent.stream("What happened today?");
    let (mut hosted_events, mut state) = (Vec::new(), None);
    while let Some(event) = events.next().await {
        match event.unwrap() {
            AgentEvent::HostedCall(call) => hosted_events.push(*call),
            AgentEvent::Finished(s) => state = Some(s),
            _ => {}
        }
    }
    let state = state.unwrap();
    assert_eq!(hosted_events.len(), 1);
    assert_eq!(hosted_events[0].kind, "web_search_call");
    let turn = state.messages.last().unwrap();
    let kept: Vec<&HostedCall> = match &turn.content {
        Content::Blocks(blocks) => blocks
            .iter()
            .filter_map(|b| match b {
                Block::HostedCall(c) => Some(&**c),
                _ => None,
            })
            .collect(),
        Content::Text(_) => Vec::new(),
    };
    assert_eq!(kept, [&hosted_events[0]]);
    // The saved transcript keeps it, and reads back the same.
    let saved = serde_json::to_value(turn).unwrap();
    let back: Message = serde_json::from_value(saved).unwrap();
    assert_eq!(&back, turn);
    assert_eq!(
        server.requests()[0].json()["tools"],
        json!([{"type": "web_search"}])
    );
}

#[tokio::test]
async fn foreign_reasoning_and_calls_stay_out_and_settings_go_as_the_api_names_them() {
    let messages = [
        Message::system("Be brief."),
        Message::user("hi"),
        Message::assistant(Content::from_blocks(vec![
            Thinking::signed("mine", "sig")
                .from_provider("anthropic")
                .into(),
            Block::text("Hello"),
        ])),
        Message::system("Later note."),
        Message::user("again"),
    ];
    let settings = ModelSettings::new()
        .with_temperature(0.2)
        .with_top_p(0.9)
        .with_max_tokens(300)
        .with_stop(["END"])
        .with_parallel_tool_calls(false)
        .with_tool_choice(harness_core::ToolChoice::Tool("f".into()));
    let tools = [Arc::new(ToolSpec::new(
        "f",
        "does f",
        json!({"type": "object", "properties": {"a": {"type": "string"}}}),
    ))];
    let server = Server::always(Reply::json(200, b"{}".to_vec())).await;
    let body = model(&server.url).request_body(
        &Request::new(&messages)
            .with_settings(&settings)
            .with_tools(&tools),
        true,
    );
    assert_eq!(
        body,
        json!({
            "model": "gpt-5",
            "instructions": "Be brief.",
            "input": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "Hello"},
                {"role": "system", "content": "Later note."},
                {"role": "user", "content": "again"},
            ],
            "tools": [{"type": "function", "name": "f", "description": "does f",
                "parameters": {"type": "object", "properties": {"a": {"type": "string"}}},
                "strict": false}],
            "tool_choice": {"type": "function", "name": "f"},
            "parallel_tool_calls": false,
            "temperature": 0.2,
            "top_p": 0.9,
            "max_output_tokens": 300,
            "store": false,
            "include": ["reasoning.encrypted_content"],
            "stream": true,
        })
    );
}

#[tokio::test]
async fn encrypted_reasoning_is_asked_of_reasoning_models_only() {
    let server = Server::always(Reply::json(200, b"{}".to_vec())).await;
    let messages = [Message::user("hi")];
    let include = |name: &str, settings: ModelSettings| {
        OpenAiResponses::builder(name)
            .api_key("k")
            .base_url(&server.url)
            .settings(settings)
            .build()
            .unwrap()
            .request_body(&Request::new(&messages), false)
            .get("include")
            .cloned()
    };
    let encrypted = Some(json!(["reasoning.encrypted_content"]));
    assert_eq!(include("o4-mini", ModelSettings::new()), encrypted);
    // A model that does not reason refuses the request for encrypted reasoning.
    assert_eq!(include("gpt-4o", ModelSettings::new()), None);
    let asked = ModelSettings::new().with_reasoning(ReasoningLevel::High);
    assert_eq!(include("my-reasoner", asked), encrypted);
    let stored = OpenAiResponses::builder("o4-mini")
        .api_key("k")
        .base_url(&server.url)
        .store(true)
        .build()
        .unwrap();
    assert_eq!(
        stored
            .request_body(&Request::new(&messages), false)
            .get("include"),
        None
    );
}

#[tokio::test]
async fn prompt_cache_key_and_retention_prices_and_counting_come_from_the_cost_settings() {
    use harness_core::{CacheRetention, Prices, PromptCache};
    let server = Server::always(Reply::json(200, b"{}".to_vec())).await;
    let messages = [Message::user("hi")];
    let settings = ModelSettings::new().with_prompt_cache(
        PromptCache::new()
            .with_key("tenant-7")
            .with_retention(CacheRetention::Extended),
    );
    let body =
        model(&server.url).request_body(&Request::new(&messages).with_settings(&settings), false);
    assert_eq!(body["prompt_cache_key"], json!("tenant-7"));
    assert_eq!(body["prompt_cache_retention"], json!("24h"));
    let plain = model(&server.url).request_body(&Request::new(&messages), false);
    assert!(
        plain.get("prompt_cache_key").is_none() && plain.get("prompt_cache_retention").is_none()
    );

    // The table knows OpenAI's models whichever API serves them; the builder's prices win.
    let info = model(&server.url).info();
    assert_eq!(info.provider, "openai-responses");
    assert!(info.prices.is_some(), "gpt-5 is in the price table");
    let mine = Prices::per_million(1.0, 2.0);
    let priced = builder(&server.url).prices(mine).build().unwrap().info();
    assert_eq!(priced.prices, Some(mine));

    let question = [Message::user("What is the weather in Paris this morning?")];
    let count = model(&server.url)
        .count_tokens(Request::new(&question))
        .await
        .unwrap();
    assert!(count.tokens >= 8, "{count:?}");
    assert!(server.requests().is_empty(), "counting sends nothing");
}
