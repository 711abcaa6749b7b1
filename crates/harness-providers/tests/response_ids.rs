//! The vendor's response id and the model that answered, read from every recorded answer
//! and stream of tests/fixtures served from loopback: OpenAI's (and llama.cpp's) `id` and
//! `model`, Anthropic's message `id` and `model`, Gemini's `responseId` and `modelVersion`
//! (Claude's and Gemini's on Vertex AI alike), the Responses API's (Azure OpenAI's Chat
//! Completions and Responses as OpenAI's); Cohere's id without a model; Bedrock's Converse,
//! which names neither, the model asked for.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
use support::Vendor;

use harness_core::{CompletionResponse, Llm, Message, Request};
use serde_json::Value;
use support::{Reply, Server, collect_events, completed, fixture, fixture_json, fixtures_dir};

impl Vendor {
    /// The vendor of a recording (`dir/file`, or a directory); Vertex's files start with their
    /// format, Azure's are in a directory of theirs (`azure/chat/...`, `azure/responses/...`).
    fn of(path: &str) -> Self {
        match path.split_once('/').unwrap_or((path, "")) {
            ("anthropic", _) => Self::Anthropic,
            ("gemini", _) => Self::Gemini,
            ("cohere", _) => Self::Cohere,
            ("openai-responses", _) => Self::Responses,
            ("bedrock", _) => Self::Bedrock,
            ("vertex", file) if file.starts_with("anthropic_") => Self::VertexAnthropic,
            ("vertex", _) => Self::VertexGemini,
            ("azure", rest) if rest.starts_with("chat/") => Self::Azure,
            ("azure", _) => Self::AzureResponses,
            _ => Self::OpenAi,
        }
    }

    /// The id and model an answer (or one stream event) names, under the vendor's keys.
    fn ids(self, value: &Value) -> (Option<String>, Option<String>) {
        // Azure's first chunk names an empty id and model: no id, no model.
        let text = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
        match self {
            Self::Anthropic | Self::VertexAnthropic if value["type"] == "message_start" => (
                text(&value["message"]["id"]),
                text(&value["message"]["model"]),
            ),
            // A stream's lifecycle events carry the response.
            Self::Responses | Self::AzureResponses if value.get("response").is_some() => (
                text(&value["response"]["id"]),
                text(&value["response"]["model"]),
            ),
            Self::OpenAi
            | Self::Azure
            | Self::Anthropic
            | Self::VertexAnthropic
            | Self::Responses
            | Self::AzureResponses => (text(&value["id"]), text(&value["model"])),
            Self::Gemini | Self::VertexGemini => {
                (text(&value["responseId"]), text(&value["modelVersion"]))
            }
            // Cohere names no model in its answers.
            Self::Cohere => (text(&value["id"]), None),
            // Converse names neither.
            Self::Bedrock => (None, None),
        }
    }
}

/// The recorded files of `dir` ending in `suffix` (requests left out).
fn recorded(dir: &str, suffix: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures_dir().join(dir))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(suffix) && !n.ends_with(".request.json"))
        .map(|n| format!("{dir}/{n}"))
        .collect();
    names.sort();
    names
}

fn check(path: &str, response: &CompletionResponse, expected: &(Option<String>, Option<String>)) {
    assert!(expected.1.is_some(), "{path}: the recording names no model");
    assert_eq!(response.id(), expected.0.as_deref(), "{path}: id");
    assert_eq!(response.model(), expected.1.as_deref(), "{path}: model");
}

#[tokio::test]
async fn every_recorded_answer_gives_its_id_and_model() {
    let mut checked = 0;
    for dir in [
        "openai",
        "llamacpp",
        "anthropic",
        "gemini",
        "openai-responses",
        "vertex",
        "azure/chat",
        "azure/responses",
    ] {
        for path in recorded(dir, ".json") {
            let vendor = Vendor::of(&path);
            let server = Server::always(Reply::json(200, fixture(&path))).await;
            let model = vendor.model(&server.url);
            let response = model
                .generate(Request::new(&[Message::user("?")]))
                .await
                .unwrap();
            check(&path, &response, &vendor.ids(&fixture_json(&path)));
            checked += 1;
        }
    }
    // openai 4, llamacpp 1, anthropic 2, gemini 4, openai-responses 11, vertex 5; Azure's
    // chat 4 and responses 5.
    assert_eq!(checked, 36);
}

#[tokio::test]
async fn every_recorded_stream_gives_its_id_and_model() {
    let mut checked = 0;
    for dir in [
        "openai",
        "llamacpp",
        "anthropic",
        "gemini",
        "openai-responses",
        "vertex",
        "azure/chat",
        "azure/responses",
    ] {
        for path in recorded(dir, ".sse") {
            let vendor = Vendor::of(&path);
            // The ids of the first event that names a model.
            let body = String::from_utf8(fixture(&path)).unwrap();
            let expected = body
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
                .map(|event| vendor.ids(&event))
                .find(|(_, model)| model.is_some())
                .unwrap();
            let server = Server::always(Reply::sse(fixture(&path))).await;
            let model = vendor.model(&server.url);
            let events = collect_events(&model, &[Message::user("?")], &[]).await;
            check(&path, completed(&events), &expected);
            checked += 1;
        }
    }
    // openai 3, llamacpp 1, anthropic 3, gemini 3, openai-responses 6, vertex 3; Azure's
    // chat 3 and responses 4.
    assert_eq!(checked, 26);
}

#[tokio::test]
async fn the_ids_are_the_recorded_ones() {
    // Spelled out once, so the test above cannot pass by reading nothing on both sides.
    let path = "openai/chat_nonstream_tool_call.json";
    let server = Server::always(Reply::json(200, fixture(path))).await;
    let response = Vendor::OpenAi
        .model(&server.url)
        .generate(Request::new(&[Message::user("?")]))
        .await
        .unwrap();
    assert_eq!(
        response.id(),
        Some("chatcmpl-BEhL3fZWgTz2Z57jXexYbQPsOBUm3")
    );
    assert_eq!(response.model(), Some("gpt-4o-mini-2024-07-18"));

    let path = "anthropic/messages_stream_thinking_signature_delta.sse";
    let server = Server::always(Reply::sse(fixture(path))).await;
    let model = Vendor::Anthropic.model(&server.url);
    let events = collect_events(&model, &[Message::user("?")], &[]).await;
    let response = completed(&events);
    assert_eq!(response.id(), Some("msg_01ALwQ87pTS7hH1PjSdC9wJD"));
    assert_eq!(response.model(), Some("claude-sonnet-4-20250514"));

    let path = "gemini/stream_text_final.sse";
    let server = Server::always(Reply::sse(fixture(path))).await;
    let model = Vendor::Gemini.model(&server.url);
    let events = collect_events(&model, &[Message::user("?")], &[]).await;
    let response = completed(&events);
    assert_eq!(response.id(), Some("11peaI_ZJLq3nvgP0vasuQk"));
    assert_eq!(response.model(), Some("gemini-2.0-flash"));

    // A recording without a response id gives none, and still its model.
    let path = "gemini/generate_content_function_call_avglogprobs.json";
    let server = Server::always(Reply::json(200, fixture(path))).await;
    let response = Vendor::Gemini
        .model(&server.url)
        .generate(Request::new(&[Message::user("?")]))
        .await
        .unwrap();
    assert_eq!(response.id(), None);
    assert_eq!(response.model(), Some("gemini-2.0-flash-exp"));
}

#[tokio::test]
async fn every_recorded_cohere_answer_and_stream_gives_its_id_and_no_model() {
    // Cohere's answers carry an id (a stream's in `message-start`) and name no model.
    let vendor = Vendor::Cohere;
    let mut checked = 0;
    for path in recorded("cohere", ".json") {
        let server = Server::always(Reply::json(200, fixture(&path))).await;
        let response = vendor
            .model(&server.url)
            .generate(Request::new(&[Message::user("?")]))
            .await
            .unwrap();
        let expected = vendor.ids(&fixture_json(&path));
        assert!(expected.0.is_some(), "{path}: the recording has no id");
        assert_eq!(response.id(), expected.0.as_deref(), "{path}: id");
        assert_eq!(response.model(), None, "{path}: model");
        checked += 1;
    }
    for path in recorded("cohere", ".sse") {
        let body = String::from_utf8(fixture(&path)).unwrap();
        let expected = body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .find_map(|event| vendor.ids(&event).0)
            .unwrap();
        let server = Server::always(Reply::sse(fixture(&path))).await;
        let model = vendor.model(&server.url);
        let events = collect_events(&model, &[Message::user("?")], &[]).await;
        let response = completed(&events);
        assert_eq!(response.id(), Some(expected.as_str()), "{path}: id");
        assert_eq!(response.model(), None, "{path}: model");
        checked += 1;
    }
    assert_eq!(checked, 18);
}

#[tokio::test]
async fn every_recorded_bedrock_answer_and_stream_gives_no_id_and_the_model_asked_for() {
    // Converse's answers and ConverseStream's events carry no response id and name no
    // model: the turn names the model it was asked of (`m` here), and no id.
    let vendor = Vendor::of("bedrock");
    let mut checked = 0;
    for path in recorded("bedrock", ".json") {
        let server = Server::always(Reply::json(200, fixture(&path))).await;
        let response = vendor
            .model(&server.url)
            .generate(Request::new(&[Message::user("?")]))
            .await
            .unwrap();
        assert_eq!(response.id(), None, "{path}: id");
        assert_eq!(response.model(), Some("m"), "{path}: model");
        checked += 1;
    }
    for path in recorded("bedrock", ".eventstream") {
        let reply = Reply {
            headers: vec![(
                "content-type".into(),
                "application/vnd.amazon.eventstream".into(),
            )],
            ..Reply::sse(fixture(&path))
        };
        let server = Server::always(reply).await;
        let model = vendor.model(&server.url);
        let events = collect_events(&model, &[Message::user("?")], &[]).await;
        let response = completed(&events);
        assert_eq!(response.id(), None, "{path}: id");
        assert_eq!(response.model(), Some("m"), "{path}: model");
        checked += 1;
    }
    assert_eq!(checked, 17);
}
