//! Google Vertex AI: recorded Vertex traffic (tests/fixtures/vertex) served from loopback on
//! Vertex's own paths, read field by field through the Gemini and Anthropic models a `Vertex`
//! connection hands out; the requests each kind sends (path, credentials, body); the
//! connection's settings and their errors.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use harness_core::{
    Block, ErrorKind, FinishReason, Llm, LlmEvent, Message, ModelSettings, Request, Thinking,
    TokenUsage, ToolCall, ToolSpec,
};
use harness_providers::rest::TokenSource;
use harness_providers::{RetryPolicy, Vertex, VertexBuilder};
use serde_json::{Value, json};
use support::{Reply, Server, collect_events, completed, deltas, fixture, fixture_json};

/// Tokens `ya29.token-0`, `ya29.token-1`, ...: one per attempt.
#[derive(Debug, Default)]
struct Tokens(AtomicUsize);

#[harness_core::async_trait]
impl TokenSource for Tokens {
    async fn token(&self) -> harness_core::Result<String> {
        Ok(format!(
            "ya29.token-{}",
            self.0.fetch_add(1, Ordering::SeqCst)
        ))
    }
}

/// A connection to `server` at `location`, project `my-project`, tokens from [`Tokens`].
fn connection(server: &Server, location: &str) -> VertexBuilder {
    Vertex::builder()
        .project("my-project")
        .location(location)
        .token_source(Tokens::default())
        .base_url(format!("{}/v1", server.url))
}

/// The path of `model` of `publisher` in `my-project` at `location`, calling `method`.
fn path(location: &str, publisher: &str, model: &str, method: &str) -> String {
    format!(
        "/v1/projects/my-project/locations/{location}/publishers/{publisher}/models/{model}:{method}"
    )
}

fn tools_of(declarations: &Value) -> Vec<Arc<ToolSpec>> {
    declarations
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            Arc::new(ToolSpec::new(
                d["name"].as_str().unwrap(),
                d["description"].as_str().unwrap(),
                d["parametersJsonSchema"].clone(),
            ))
        })
        .collect()
}

// Gemini on Vertex ---------------------------------------------------------------------------

#[tokio::test]
async fn gemini_whole_answer_on_the_global_endpoint() {
    let recorded = fixture_json("vertex/gemini_generate_content.request.json");
    let server = Server::always(Reply::json(
        200,
        fixture("vertex/gemini_generate_content.json"),
    ))
    .await;
    let vertex = connection(&server, "global").build().unwrap();
    assert_eq!(
        (vertex.project(), vertex.location()),
        (Some("my-project"), "global")
    );
    let model = vertex.gemini("gemini-2.0-flash").unwrap();
    let system = recorded["systemInstruction"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    let question = recorded["contents"][0]["parts"][0]["text"]
        .as_str()
        .unwrap();
    let response = model
        .generate(Request::new(&[
            Message::system(system),
            Message::user(question),
        ]))
        .await
        .unwrap();

    assert_eq!(response.content(), "The capital of France is Paris.\n");
    assert!(response.tool_calls().is_empty());
    assert_eq!(response.finish_reason(), FinishReason::Stop);
    assert_eq!(response.usage(), Some(&TokenUsage::new(13, 8, 21)));
    assert_eq!(response.id(), Some("1VpeaKq4CfH_2PgPh_z--AY"));
    assert_eq!(response.model(), Some("gemini-2.0-flash"));

    let request = &server.requests()[0];
    assert_eq!(
        request.target,
        path("global", "google", "gemini-2.0-flash", "generateContent")
    );
    assert_eq!(request.header("authorization"), Some("Bearer ya29.token-0"));
    assert_eq!(request.header("x-goog-api-key"), None);
    let body = request.json();
    assert_eq!(body["contents"], recorded["contents"]);
    assert_eq!(
        body["systemInstruction"]["parts"],
        recorded["systemInstruction"]["parts"]
    );
    assert_eq!(body.get("model"), None);

    let info = model.info();
    assert_eq!(info.provider, "vertex");
    assert_eq!(info.name(), "vertex:gemini-2.0-flash");
    assert_eq!(info.context_window, Some(1_048_576));
    assert!(info.supports.tools && info.supports.structured_output);
}

#[tokio::test]
async fn gemini_function_call_with_its_thought_signature() {
    let recorded = fixture_json("vertex/gemini_generate_content_function_call.request.json");
    let answer = fixture_json("vertex/gemini_generate_content_function_call.json");
    let server = Server::always(Reply::json(200, answer.to_string())).await;
    let model = connection(&server, "global")
        .build()
        .unwrap()
        .gemini("gemini-3-flash-preview")
        .unwrap();
    let tools = tools_of(&recorded["tools"][0]["functionDeclarations"]);
    let question = recorded["contents"][0]["parts"][0]["text"]
        .as_str()
        .unwrap();
    let response = model
        .generate(Request::new(&[Message::user(question)]).with_tools(&tools))
        .await
        .unwrap();

    let part = &answer["candidates"][0]["content"]["parts"][0];
    assert_eq!(
        response.tool_calls(),
        &[ToolCall::new("get_images", json!({}))]
    );
    assert_eq!(
        response.blocks(),
        &[Block::from(
            Thinking::signed("", part["thoughtSignature"].as_str().unwrap())
                .from_provider("gemini")
        )]
    );
    assert_eq!(response.finish_reason(), FinishReason::Stop);
    assert_eq!(
        response.usage(),
        Some(&TokenUsage::new(26, 75, 101).with_reasoning(68))
    );
    assert_eq!(response.id(), Some("B--TadamF5uQjNsP4e6G8AI"));

    // The request: the recorded question, the tool with its full JSON Schema.
    let body = server.requests()[0].json();
    assert_eq!(body["contents"], recorded["contents"]);
    let declared = &body["tools"][0]["functionDeclarations"][0];
    let recorded = &recorded["tools"][0]["functionDeclarations"][0];
    assert_eq!(declared["name"], recorded["name"]);
    assert_eq!(
        declared["parameters_json_schema"],
        recorded["parametersJsonSchema"]
    );
}

#[tokio::test]
async fn gemini_answer_after_a_function_response_replays_the_signature() {
    let recorded =
        fixture_json("vertex/gemini_generate_content_text_after_function_response.request.json");
    let answer = fixture_json("vertex/gemini_generate_content_text_after_function_response.json");
    let server = Server::always(Reply::json(200, answer.to_string())).await;
    let model = connection(&server, "global")
        .build()
        .unwrap()
        .gemini("gemini-2.5-flash")
        .unwrap();
    let contents = &recorded["contents"];
    let call = &contents[1]["parts"][0];
    let conversation = [
        Message::user(contents[0]["parts"][0]["text"].as_str().unwrap()),
        Message::assistant(vec![Block::from(
            Thinking::signed("", call["thoughtSignature"].as_str().unwrap())
                .from_provider("gemini"),
        )])
        .with_tool_calls(vec![ToolCall::new("get_answer", json!({}))]),
        Message::tool("42", "get_answer"),
        Message::user(contents[3]["parts"][0]["text"].as_str().unwrap()),
    ];
    let tools = tools_of(&recorded["tools"][0]["functionDeclarations"]);
    let response = model
        .generate(Request::new(&conversation).with_tools(&tools))
        .await
        .unwrap();

    let part = &answer["candidates"][0]["content"]["parts"][0];
    assert_eq!(response.content(), part["text"].as_str().unwrap());
    assert_eq!(
        response.blocks()[0],
        Block::from(
            Thinking::signed("", part["thoughtSignature"].as_str().unwrap())
                .from_provider("gemini")
        )
    );
    assert_eq!(
        response.usage(),
        Some(&TokenUsage::new(19, 181, 200).with_reasoning(121))
    );
    assert_eq!(response.finish_reason(), FinishReason::Stop);
    assert_eq!(response.model(), Some("gemini-2.5-flash"));

    // The turns as recorded: the call with its signature, the result's turn, the follow-up.
    let body = server.requests()[0].json();
    assert_eq!(body["contents"][0], contents[0]);
    assert_eq!(body["contents"][1], contents[1]);
    let result = &body["contents"][2];
    assert_eq!(result["role"], "user");
    assert_eq!(
        result["parts"][0]["functionResponse"]["name"],
        contents[2]["parts"][0]["functionResponse"]["name"]
    );
    assert_eq!(
        result["parts"][0]["functionResponse"]["response"],
        json!({"result": "42"})
    );
    assert_eq!(body["contents"][3], contents[3]);
}

#[tokio::test]
async fn gemini_error_keeps_vertex_status_and_message_unretried() {
    let server = Server::always(Reply::json(
        400,
        fixture("vertex/gemini_generate_content_400_invalid_argument.response.txt"),
    ))
    .await;
    let model = connection(&server, "global")
        .build()
        .unwrap()
        .gemini("gemini-3-flash-preview")
        .unwrap();
    for streamed in [false, true] {
        let messages = [Message::user("?")];
        let err = if streamed {
            use futures_util::StreamExt as _;
            let mut events = Arc::new(model.clone()).stream(Request::new(&messages));
            events.next().await.unwrap().unwrap_err()
        } else {
            model.generate(Request::new(&messages)).await.unwrap_err()
        };
        let provider = err.provider().unwrap();
        assert_eq!(provider.provider(), "vertex");
        assert_eq!(provider.status(), Some(400));
        assert_eq!(provider.error_type(), Some("INVALID_ARGUMENT"));
        assert!(
            provider
                .message()
                .starts_with("Cannot fetch content from the provided URL."),
            "{provider}"
        );
        assert!(provider.body().unwrap().contains("URL_ROBOTED"));
    }
    assert_eq!(server.requests().len(), 2, "a 400 is not retried");
}

#[tokio::test]
async fn gemini_stream_of_grounded_text_on_a_regional_endpoint() {
    let file = "vertex/gemini_stream_grounded_text.sse";
    let server = Server::always(Reply::sse(fixture(file))).await;
    let model = connection(&server, "us-central1")
        .build()
        .unwrap()
        .gemini("gemini-2.5-flash")
        .unwrap();
    let events = collect_events(&model, &[Message::user("?")], &[]).await;
    let response = completed(&events);

    // Every text part of every recorded event, in order.
    let body = String::from_utf8(fixture(file)).unwrap();
    let recorded: Vec<Value> = body
        .split("\r\n\r\n")
        .filter_map(|event| event.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect();
    assert_eq!(recorded.len(), 6);
    let text: String = recorded
        .iter()
        .map(|e| {
            e["candidates"][0]["content"]["parts"][0]["text"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert!(text.starts_with("Pydantic AI's documentation can be found"));
    assert_eq!(deltas(&events, false), text);
    let pieces = events
        .iter()
        .filter(|e| matches!(e, LlmEvent::TextDelta(_)))
        .count();
    assert_eq!(pieces, 6, "one delta per event");
    assert_eq!(response.content(), text);
    assert_eq!(response.finish_reason(), FinishReason::Stop);
    assert_eq!(
        response.usage(),
        Some(&TokenUsage::new(16, 226, 242).with_reasoning(63))
    );
    assert_eq!(response.id(), Some("DbiGas7qM5Ws7PkPg_a3-Qw"));
    assert_eq!(response.model(), Some("gemini-2.5-flash"));

    let request = &server.requests()[0];
    assert_eq!(
        request.target,
        path(
            "us-central1",
            "google",
            "gemini-2.5-flash",
            "streamGenerateContent?alt=sse"
        )
    );
    assert_eq!(request.header("authorization"), Some("Bearer ya29.token-0"));
}

#[tokio::test]
async fn gemini_stream_of_one_event_with_a_thought_signature() {
    let file = "vertex/gemini_stream_text_thought_signature.sse";
    let recorded = fixture_json("vertex/gemini_stream_text_thought_signature.request.json");
    let server = Server::always(Reply::sse(fixture(file))).await;
    let model = connection(&server, "global")
        .build()
        .unwrap()
        .gemini("gemini-3-flash-preview")
        .unwrap();
    let question = recorded["contents"][0]["parts"][0]["text"]
        .as_str()
        .unwrap();
    let events = collect_events(&model, &[Message::user(question)], &[]).await;
    let response = completed(&events);
    let body = String::from_utf8(fixture(file)).unwrap();
    let event: Value = serde_json::from_str(
        body.trim_end()
            .strip_prefix("data: ")
            .expect("one data event"),
    )
    .unwrap();
    let part = &event["candidates"][0]["content"]["parts"][0];
    assert_eq!(deltas(&events, false), "OK");
    assert_eq!(
        response.blocks(),
        &[
            Thinking::signed("", part["thoughtSignature"].as_str().unwrap())
                .from_provider("gemini")
                .into(),
            Block::text("OK"),
        ]
    );
    assert_eq!(
        response.usage(),
        Some(&TokenUsage::new(5, 101, 106).with_reasoning(100))
    );
    assert_eq!(response.finish_reason(), FinishReason::Stop);
    assert_eq!(
        server.requests()[0].json()["contents"],
        recorded["contents"]
    );
}

// Claude on Vertex ---------------------------------------------------------------------------

#[tokio::test]
async fn claude_whole_answer_through_raw_predict() {
    let recorded = fixture_json("vertex/anthropic_raw_predict_max_tokens.request.json");
    let answer = fixture_json("vertex/anthropic_raw_predict_max_tokens.json");
    let server = Server::always(Reply::json(
        200,
        fixture("vertex/anthropic_raw_predict_max_tokens.json"),
    ))
    .await;
    let model = connection(&server, "us-east5")
        .build()
        .unwrap()
        .anthropic("claude-3-sonnet@20240229")
        .unwrap();
    let settings = ModelSettings::new().with_max_tokens(100);
    let question = recorded["messages"][0]["content"].as_str().unwrap();
    let response = model
        .generate(Request::new(&[Message::user(question)]).with_settings(&settings))
        .await
        .unwrap();

    assert_eq!(
        response.content(),
        answer["content"][0]["text"].as_str().unwrap()
    );
    assert!(response.content().ends_with("granulated sugar\n- 2"));
    assert_eq!(response.finish_reason(), FinishReason::Length);
    assert_eq!(response.usage(), Some(&TokenUsage::new(15, 100, 115)));
    assert_eq!(response.id(), Some("msg_0153aSPECsnuvUAVx3DMWnHA"));
    assert_eq!(response.model(), Some("claude-3-sonnet-20240229"));

    let request = &server.requests()[0];
    assert_eq!(
        request.target,
        path(
            "us-east5",
            "anthropic",
            "claude-3-sonnet@20240229",
            "rawPredict"
        )
    );
    assert_eq!(request.header("authorization"), Some("Bearer ya29.token-0"));
    assert_eq!(request.header("anthropic-version"), None);
    assert_eq!(request.header("x-api-key"), None);
    // The recorded body: the version in it, no model; a whole answer sends no `stream`.
    let mut expected = recorded.clone();
    expected.as_object_mut().unwrap().remove("stream");
    assert_eq!(request.json(), expected);

    let info = model.info();
    assert_eq!(info.name(), "vertex:claude-3-sonnet@20240229");
    assert_eq!(info.context_window, Some(200_000));
}

#[tokio::test]
async fn claude_stream_through_stream_raw_predict_with_padded_events() {
    let file = "vertex/anthropic_stream_raw_predict_max_tokens.sse";
    let recorded = fixture_json("vertex/anthropic_stream_raw_predict_max_tokens.request.json");
    let server = Server::always(Reply::sse(fixture(file))).await;
    let model = connection(&server, "us-east5")
        .build()
        .unwrap()
        .anthropic("claude-3-sonnet@20240229")
        .unwrap();
    let settings = ModelSettings::new().with_max_tokens(100);
    let question = recorded["messages"][0]["content"].as_str().unwrap();
    let events: Vec<LlmEvent> = {
        use futures_util::StreamExt as _;
        Arc::new(model.clone())
            .stream(Request::new(&[Message::user(question)]).with_settings(&settings))
            .map(Result::unwrap)
            .collect()
            .await
    };
    let response = completed(&events);

    // Vertex pads its events' JSON with spaces; every text delta of the recording, joined.
    let body = String::from_utf8(fixture(file)).unwrap();
    assert!(body.contains("\"text\":\" is\"}}\n") && body.contains("}           }\n"));
    let text: String = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|data| serde_json::from_str::<Value>(data).unwrap())
        .filter(|e| e["delta"]["type"] == "text_delta")
        .map(|e| e["delta"]["text"].as_str().unwrap().to_owned())
        .collect();
    assert!(text.starts_with("Here is a classic recipe for"));
    assert_eq!(deltas(&events, false), text);
    assert_eq!(response.content(), text);
    assert_eq!(response.finish_reason(), FinishReason::Length);
    assert_eq!(response.usage(), Some(&TokenUsage::new(15, 100, 115)));
    assert_eq!(response.id(), Some("msg_01BAYDzHALPYQoV74iHB2gFj"));

    let request = &server.requests()[0];
    assert_eq!(
        request.target,
        path(
            "us-east5",
            "anthropic",
            "claude-3-sonnet@20240229",
            "streamRawPredict"
        )
    );
    assert_eq!(request.json(), recorded);
}

#[tokio::test]
async fn claude_tool_use_turn() {
    let answer = fixture_json("vertex/anthropic_raw_predict_tool_use.json");
    let server = Server::always(Reply::json(200, answer.to_string())).await;
    let model = connection(&server, "us-east5")
        .build()
        .unwrap()
        .anthropic("claude-3-5-sonnet-v2@20241022")
        .unwrap();
    let tool = Arc::new(ToolSpec::new(
        "get_wildlife_region",
        "Look up the region where an animal can be found",
        json!({"type": "object", "properties": {
            "animal": {"type": "string", "description": "species of animal"}}}),
    ));
    let response = model
        .generate(
            Request::new(&[Message::user("What is the region where this animal lives?")])
                .with_tools(std::slice::from_ref(&tool)),
        )
        .await
        .unwrap();
    assert_eq!(
        response.content(),
        "This appears to be a Golden-cheeked Warbler (Setophaga chrysoparia), a rare \
         songbird. Let me look up its region for you."
    );
    assert_eq!(
        response.tool_calls(),
        &[ToolCall::new(
            "get_wildlife_region",
            json!({"animal": "Golden-cheeked Warbler"})
        )
        .with_id("toolu_vrtx_01AoZske3Zi12oYewSYnng2z")]
    );
    assert_eq!(response.finish_reason(), FinishReason::Stop);
    assert_eq!(response.usage(), Some(&TokenUsage::new(1963, 99, 2062)));
    assert_eq!(response.id(), Some("msg_vrtx_015F4GZi1En2FBwsTdrtrc12"));

    let body = server.requests()[0].json();
    assert_eq!(body["anthropic_version"], "vertex-2023-10-16");
    assert_eq!(body.get("model"), None);
    assert_eq!(body["tools"][0]["name"], "get_wildlife_region");
    assert_eq!(body["tools"][0]["input_schema"], tool.parameters);
}

// The connection -------------------------------------------------------------------------------

#[tokio::test]
async fn one_connection_serves_both_kinds_and_asks_for_a_token_on_every_attempt() {
    let server = Server::start(|n, request| {
        if n == 0 {
            return Reply::json(503, r#"{"error": {"code": 503, "status": "UNAVAILABLE"}}"#);
        }
        if request.target.ends_with(":rawPredict") {
            Reply::json(200, fixture("vertex/anthropic_raw_predict_max_tokens.json"))
        } else {
            Reply::json(200, fixture("vertex/gemini_generate_content.json"))
        }
    })
    .await;
    let vertex = connection(&server, "europe-west4")
        .max_concurrency(1)
        .retry(RetryPolicy {
            base_delay: std::time::Duration::from_millis(1),
            ..RetryPolicy::default()
        })
        .build()
        .unwrap();
    let gemini = vertex.gemini("gemini-2.0-flash").unwrap();
    let claude = vertex.anthropic("claude-3-sonnet@20240229").unwrap();
    let messages = [Message::user("?")];
    gemini.generate(Request::new(&messages)).await.unwrap();
    claude.generate(Request::new(&messages)).await.unwrap();

    let requests = server.requests();
    let seen: Vec<(&str, Option<&str>)> = requests
        .iter()
        .map(|r| (r.target.as_str(), r.header("authorization")))
        .collect();
    let gemini_path = path(
        "europe-west4",
        "google",
        "gemini-2.0-flash",
        "generateContent",
    );
    let claude_path = path(
        "europe-west4",
        "anthropic",
        "claude-3-sonnet@20240229",
        "rawPredict",
    );
    assert_eq!(
        seen,
        [
            (gemini_path.as_str(), Some("Bearer ya29.token-0")),
            (gemini_path.as_str(), Some("Bearer ya29.token-1")),
            (claude_path.as_str(), Some("Bearer ya29.token-2")),
        ]
    );
    // The models share the connection's client (and so its concurrency cap).
    assert_eq!(gemini.client().config().max_concurrency, Some(1));
    assert!(std::ptr::eq(
        gemini.client().config(),
        claude.client().config()
    ));
}

#[tokio::test]
async fn an_api_key_without_a_project_is_express_mode() {
    let server = Server::always(Reply::json(
        200,
        fixture("vertex/gemini_generate_content.json"),
    ))
    .await;
    let vertex = Vertex::builder()
        .api_key("AQ.express")
        .base_url(format!("{}/v1", server.url))
        .build()
        .unwrap();
    assert_eq!((vertex.project(), vertex.location()), (None, "global"));
    let model = vertex.gemini("gemini-2.5-flash").unwrap();
    model
        .generate(Request::new(&[Message::user("?")]))
        .await
        .unwrap();
    let request = &server.requests()[0];
    assert_eq!(
        request.target,
        "/v1/publishers/google/models/gemini-2.5-flash:generateContent"
    );
    assert_eq!(request.header("x-goog-api-key"), Some("AQ.express"));
    assert_eq!(request.header("authorization"), None);

    let err = vertex.anthropic("claude-sonnet-4@20250514").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Configuration);
    assert!(err.to_string().contains("express mode"), "{err}");

    // With a project, the key goes to the project's paths.
    let vertex = Vertex::builder()
        .api_key("AQ.bound")
        .project("my-project")
        .location("us-east5")
        .base_url(format!("{}/v1", server.url))
        .build()
        .unwrap();
    vertex
        .anthropic("claude-sonnet-4@20250514")
        .unwrap()
        .generate(Request::new(&[Message::user("?")]))
        .await
        .ok();
    let request = &server.requests()[1];
    assert_eq!(
        request.target,
        path(
            "us-east5",
            "anthropic",
            "claude-sonnet-4@20250514",
            "rawPredict"
        )
    );
    assert_eq!(request.header("x-goog-api-key"), Some("AQ.bound"));
}

#[test]
fn settings_that_cannot_work_are_configuration_errors() {
    let base = || Vertex::builder().project("my-project").location("us-east5");
    let err = base()
        .api_key("k")
        .token_source(Tokens::default())
        .build()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Configuration);
    assert!(err.to_string().contains("not both"), "{err}");

    for location in ["us-east5.evil.example", "us east", "", "x/y"] {
        let err = Vertex::builder()
            .project("p")
            .location(location)
            .api_key("k")
            .build()
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Configuration, "{location:?}");
        assert!(err.to_string().contains("GOOGLE_CLOUD_LOCATION"), "{err}");
    }
    let err = Vertex::builder()
        .project("p/../q")
        .location("global")
        .api_key("k")
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("GOOGLE_CLOUD_PROJECT"), "{err}");

    let vertex = base().api_key("k").build().unwrap();
    for model in [
        "",
        "publishers/google/models/x",
        "gemini 2.5",
        "m:rawPredict",
    ] {
        let err = vertex.gemini(model).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Configuration, "{model:?}");
        let err = vertex.anthropic(model).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Configuration, "{model:?}");
    }
    let err = base().api_key("k").max_concurrency(0).build().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Configuration);
}

#[test]
fn each_location_reaches_its_own_host() {
    for (location, base) in [
        ("global", "https://aiplatform.googleapis.com/v1"),
        ("us", "https://aiplatform.us.rep.googleapis.com/v1"),
        ("eu", "https://aiplatform.eu.rep.googleapis.com/v1"),
        (
            "us-central1",
            "https://us-central1-aiplatform.googleapis.com/v1",
        ),
    ] {
        let vertex = Vertex::builder()
            .project("my-project")
            .location(location)
            .api_key("k")
            .build()
            .unwrap();
        assert_eq!(vertex.client().config().base_url, base);
        assert_eq!(vertex.client().config().provider, "vertex");
    }
}

#[cfg(not(feature = "vertex"))]
#[test]
fn without_the_feature_credentials_must_be_given() {
    let err = Vertex::builder()
        .project("my-project")
        .location("global")
        .build()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Configuration);
    let text = err.to_string();
    for needed in [
        "token_source",
        "feature `vertex`",
        "GOOGLE_APPLICATION_CREDENTIALS",
    ] {
        assert!(text.contains(needed), "{text}");
    }
}

// Application Default Credentials -------------------------------------------------------------

/// Google's credentials are found through the environment, which a test may not change in its
/// own process: each test here runs again in a child process of this binary, with an
/// environment of its own (cleared, then only what the test gives), against a loopback token
/// endpoint.
#[cfg(feature = "vertex")]
mod adc {
    use super::*;
    use std::ffi::OsString;
    use std::path::PathBuf;

    /// The variable that tells a test it runs as the child, and which case it is.
    const CHILD: &str = "DEEPHARNESS_VERTEX_ADC_CHILD";

    /// Runs `test` (its path in this binary) in a child process with only `env`.
    fn in_child(test: &str, env: &[(&str, OsString)]) {
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args([test, "--exact", "--nocapture", "--test-threads=1"])
            .env_clear()
            .env(CHILD, "1")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stdout}\n{stderr}");
        assert!(
            stdout.contains("1 passed"),
            "the child ran nothing: {stdout}"
        );
    }

    /// A directory of its own for one test's files.
    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("deepharness-vertex-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    }

    async fn ask(model: &impl Llm) {
        model
            .generate(Request::new(&[Message::user("?")]))
            .await
            .unwrap();
    }

    /// The errors before the credentials file exists, then tokens from its endpoint,
    /// refreshed.
    async fn tokens_from_the_file(
        file: &std::path::Path,
    ) -> (Server, Server, harness_providers::Gemini) {
        // No project anywhere: the error names what was read.
        let err = Vertex::new().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Configuration);
        let text = err.to_string();
        assert!(
            text.contains("GOOGLE_CLOUD_PROJECT") && text.contains("project_id"),
            "{text}"
        );
        // The variable names a file that is not there.
        let err = Vertex::builder().project("my-project").build().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Configuration);
        assert!(
            err.to_string().contains("GOOGLE_APPLICATION_CREDENTIALS"),
            "{err}"
        );

        // A user's credentials, as gcloud writes them, refreshed at a loopback endpoint.
        let token_server = Server::start(|n, _| {
            Reply::json(
                200,
                json!({"access_token": format!("adc-token-{n}"), "expires_in": 241,
                    "token_type": "Bearer"})
                .to_string(),
            )
        })
        .await;
        let credentials = json!({
            "type": "authorized_user",
            "client_id": "client.apps.googleusercontent.com",
            "client_secret": "client-secret",
            "refresh_token": "refresh-token",
            "quota_project_id": "billing-project",
            "token_uri": format!("{}/token", token_server.url),
        });
        std::fs::write(file, credentials.to_string()).unwrap();

        let vertex_server = Server::always(Reply::json(
            200,
            fixture("vertex/gemini_generate_content.json"),
        ))
        .await;
        let vertex = Vertex::builder()
            .project("my-project")
            .base_url(format!("{}/v1", vertex_server.url))
            .build()
            .unwrap();
        assert_eq!(
            vertex.location(),
            "global",
            "GOOGLE_CLOUD_LOCATION is unset"
        );
        let model = vertex.gemini("gemini-2.0-flash").unwrap();
        ask(&model).await;
        let request = &vertex_server.requests()[0];
        assert_eq!(
            request.target,
            path("global", "google", "gemini-2.0-flash", "generateContent")
        );
        assert_eq!(request.header("authorization"), Some("Bearer adc-token-0"));
        assert_eq!(
            request.header("x-goog-user-project"),
            Some("billing-project")
        );
        let refresh = &token_server.requests()[0];
        assert_eq!(
            (refresh.method.as_str(), refresh.target.as_str()),
            ("POST", "/token")
        );
        let form = refresh.json();
        assert_eq!(form["grant_type"], "refresh_token");
        assert_eq!(form["refresh_token"], "refresh-token");
        assert_eq!(form["client_id"], "client.apps.googleusercontent.com");

        // 241 s to live: refreshed in the background a second later (four minutes before
        // it expires), and the next request carries the new token.
        tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
        ask(&model).await;
        let second = vertex_server.requests()[1]
            .header("authorization")
            .unwrap()
            .to_owned();
        assert_ne!(second, "Bearer adc-token-0");
        let issued = token_server.requests().len();
        assert!(issued >= 2, "{issued}");
        assert!(
            (1..issued).any(|n| second == format!("Bearer adc-token-{n}")),
            "{second}"
        );
        (token_server, vertex_server, model)
    }

    /// A service account's file names its project, which is then the default.
    fn projects_from_a_service_account_file(file: &std::path::Path) {
        std::fs::write(
            file,
            json!({"type": "service_account", "project_id": "sa-project",
                "client_email": "sa@sa-project.iam.gserviceaccount.com",
                "private_key": "unused here", "token_uri": "http://127.0.0.1:9/token"})
            .to_string(),
        )
        .unwrap();
        let vertex = Vertex::new().unwrap();
        assert_eq!(vertex.project(), Some("sa-project"));
        let spec = harness_providers::model_from_spec("vertex:gemini-2.5-flash").unwrap();
        assert_eq!(spec.info().name(), "vertex:gemini-2.5-flash");
        assert!(spec.info().supports.structured_output);
        let spec = harness_providers::model_from_spec("vertex:claude-sonnet-4@20250514").unwrap();
        assert_eq!(spec.info().name(), "vertex:claude-sonnet-4@20250514");
        assert!(
            !spec.info().supports.structured_output,
            "Claude's is Anthropic's"
        );
    }

    #[test]
    fn a_credentials_file_gives_tokens_from_its_token_uri_refreshed_before_they_expire() {
        if std::env::var_os(CHILD).is_none() {
            let dir = scratch("adc-file");
            let file = dir.join("application_default_credentials.json");
            in_child(
                "adc::a_credentials_file_gives_tokens_from_its_token_uri_refreshed_before_they_expire",
                &[("GOOGLE_APPLICATION_CREDENTIALS", file.into_os_string())],
            );
            std::fs::remove_dir_all(dir).ok();
            return;
        }
        let file = PathBuf::from(std::env::var_os("GOOGLE_APPLICATION_CREDENTIALS").unwrap());
        let runtime = runtime();
        let (token_server, vertex_server, model) = runtime.block_on(tokens_from_the_file(&file));

        // Used from another runtime, the credentials are that runtime's own: a token is fetched
        // for it, and a request never waits on a refresh task of another runtime.
        let before = token_server.requests().len();
        let other = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        std::thread::scope(|scope| {
            scope.spawn(|| other.block_on(ask(&model))).join().unwrap();
        });
        let last = vertex_server.requests().last().unwrap().clone();
        let token = last.header("authorization").unwrap();
        assert!(
            token_server.requests().len() > before,
            "no token fetched for the new runtime"
        );
        assert!(token.starts_with("Bearer adc-token-"), "{token}");

        projects_from_a_service_account_file(&file);
        drop(runtime);
    }

    #[test]
    fn the_environment_names_project_location_and_the_model_of_model_from_env() {
        if std::env::var_os(CHILD).is_none() {
            in_child(
                "adc::the_environment_names_project_location_and_the_model_of_model_from_env",
                &[
                    ("GOOGLE_CLOUD_PROJECT", "env-project".into()),
                    ("GOOGLE_CLOUD_LOCATION", "europe-west4".into()),
                ],
            );
            return;
        }
        let vertex = Vertex::new().unwrap();
        assert_eq!(
            (vertex.project(), vertex.location()),
            (Some("env-project"), "europe-west4")
        );
        assert_eq!(
            vertex.client().config().base_url,
            "https://europe-west4-aiplatform.googleapis.com/v1"
        );
        let choice = runtime()
            .block_on(harness_providers::model_from_env())
            .unwrap();
        assert_eq!(choice.model.info().name(), "vertex:gemini-2.5-flash");
        assert!(
            choice.reason.contains("GOOGLE_CLOUD_PROJECT"),
            "{}",
            choice.reason
        );
    }

    #[test]
    fn no_credentials_anywhere_is_a_configuration_error_naming_what_was_read() {
        if std::env::var_os(CHILD).is_none() {
            let dir = scratch("adc-none");
            // A metadata server that is not there: a port nothing listens on.
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            in_child(
                "adc::no_credentials_anywhere_is_a_configuration_error_naming_what_was_read",
                &[
                    ("HOME", dir.clone().into_os_string()),
                    ("GCE_METADATA_HOST", format!("127.0.0.1:{port}").into()),
                ],
            );
            std::fs::remove_dir_all(dir).ok();
            return;
        }
        runtime().block_on(async {
            let server = Server::always(Reply::json(200, "{}")).await;
            let model = Vertex::builder()
                .project("my-project")
                .base_url(format!("{}/v1", server.url))
                .build()
                .unwrap()
                .gemini("gemini-2.5-flash")
                .unwrap();
            let started = std::time::Instant::now();
            let err = model
                .generate(Request::new(&[Message::user("?")]))
                .await
                .unwrap_err();
            assert!(started.elapsed() < std::time::Duration::from_secs(20));
            assert_eq!(err.kind(), ErrorKind::Configuration, "{err}");
            let text = err.to_string();
            for named in [
                "no Google Cloud credentials",
                "GOOGLE_APPLICATION_CREDENTIALS",
                "application_default_credentials.json",
                "gcloud auth application-default login",
                "token_source",
            ] {
                assert!(text.contains(named), "{named}: {text}");
            }
            assert!(
                server.requests().is_empty(),
                "nothing is sent without a token"
            );
        });
    }
}

// Vertex's countTokens: the bodies follow Vertex AI's API reference (`CountTokensRequest`,
// `CountTokensResponse`); no public recording of the call was found.
#[tokio::test]
async fn gemini_counts_at_vertex_count_tokens_with_the_prompt_parts() {
    let server = Server::always(Reply::json(
        200,
        br#"{"totalTokens": 31, "totalBillableCharacters": 96}"#.to_vec(),
    ))
    .await;
    let model = connection(&server, "us-central1")
        .build()
        .unwrap()
        .gemini("gemini-2.5-flash")
        .unwrap();
    let messages = [Message::system("Be brief."), Message::user("hello world")];
    let count = model.count_tokens(Request::new(&messages)).await.unwrap();
    assert_eq!((count.tokens, count.exact), (31, true));
    let request = &server.requests()[0];
    assert_eq!(
        request.target,
        path("us-central1", "google", "gemini-2.5-flash", "countTokens")
    );
    assert_eq!(
        request.json(),
        json!({
            "contents": [{"role": "user", "parts": [{"text": "hello world"}]}],
            "systemInstruction": {"parts": [{"text": "Be brief."}]},
        })
    );
    assert!(
        request
            .header("authorization")
            .unwrap()
            .starts_with("Bearer ya29.")
    );

    // An answer without the count is an error naming Vertex and the field.
    let server = Server::always(Reply::json(200, b"{}".to_vec())).await;
    let model = connection(&server, "global")
        .build()
        .unwrap()
        .gemini("gemini-2.5-flash")
        .unwrap();
    let err = model
        .count_tokens(Request::new(&messages))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Provider, "{err}");
    assert!(err.to_string().contains("totalTokens"), "{err}");
}
