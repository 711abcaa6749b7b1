//! Recorded Azure OpenAI traffic (tests/fixtures/azure, provenance in the fixtures README)
//! served from loopback at Azure's URL paths, to the models an `AzureOpenAi` connection
//! hands out: Chat Completions and the Responses API, on the v1 API and the dated one, whole
//! and streamed. Each test checks what the provider makes of the answer field by field, and
//! what it sent: the path and `api-version`, the `api-key` or bearer token, the body.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use harness_core::{
    Block, CompletionResponse, ErrorKind, FinishReason, Llm, Message, ProviderErrorKind, Request,
    ToolSpec,
};
use harness_providers::rest::TokenSource;
use harness_providers::{AzureOpenAi, AzureOpenAiBuilder, OpenAiResponses, RetryPolicy};
use serde_json::{Value, json};
use support::{
    Reply, Server, collect_events, completed, deltas, fixture, fixture_json,
    openai_messages_normal, turn, usage_figures,
};

fn path(name: &str) -> String {
    format!("azure/{name}")
}

/// A connection to the loopback server as the resource's endpoint, with a key.
fn azure(url: &str) -> AzureOpenAiBuilder {
    AzureOpenAi::builder().endpoint(url).api_key("azure-key")
}

fn recorded(name: &str) -> Value {
    fixture_json(&path(&format!("{name}.request.json")))
}

/// The tool of the recorded tool rounds, as the recordings declared it.
fn secret_tool() -> Arc<ToolSpec> {
    let recorded = &recorded("chat/v1_nonstream_parallel_tool_calls")["tools"][0]["function"];
    Arc::new(ToolSpec::new(
        "secret_retrieval_tool",
        "A tool that requires a password to retrieve a secret.",
        recorded["parameters"].clone(),
    ))
}

fn calls(response: &CompletionResponse) -> Vec<(String, String, Value)> {
    response
        .tool_calls()
        .iter()
        .map(|c| {
            (
                c.id.clone().unwrap_or_default(),
                c.name.clone(),
                c.arguments_value(),
            )
        })
        .collect()
}

/// The messages of the recorded tool rounds: the system prompt and the user's question.
fn secret_question() -> Vec<Message> {
    vec![
        Message::system("Use parallel tool calling."),
        Message::user(
            "Please retrieve the secrets associated with each of these passwords: mellon,radiance",
        ),
    ]
}

/// The tool results the recordings sent back, paired with `ids`.
fn secret_results(ids: [&str; 2]) -> [Message; 2] {
    [
        Message::tool("Welcome to Moria!", "secret_retrieval_tool").with_call_id(ids[0]),
        Message::tool("Life before Death", "secret_retrieval_tool").with_call_id(ids[1]),
    ]
}

// Chat Completions ---------------------------------------------------------------------------

#[tokio::test]
async fn v1_chat_a_parallel_tool_round_whole() {
    let server = Server::start(|n, _| {
        let name = if n == 0 {
            "chat/v1_nonstream_parallel_tool_calls.json"
        } else {
            "chat/v1_nonstream_text_after_tool_results.json"
        };
        Reply::json(200, fixture(&path(name)))
    })
    .await;
    let model = azure(&server.url)
        .build()
        .unwrap()
        .chat("gpt-5-mini")
        .unwrap();
    let tools = [secret_tool()];
    let mut messages = secret_question();
    let first = model
        .generate(Request::new(&messages).with_tools(&tools))
        .await
        .unwrap();
    assert_eq!(
        calls(&first),
        [
            (
                "call_vpSSPEEM9TiGC3F7EiDfOx1M".into(),
                "secret_retrieval_tool".into(),
                json!({"password": "mellon"})
            ),
            (
                "call_GlCQnHtwYlfZagZa164UXtJl".into(),
                "secret_retrieval_tool".into(),
                json!({"password": "radiance"})
            ),
        ]
    );
    assert_eq!(first.content(), "");
    assert_eq!(first.finish_reason(), FinishReason::Stop);
    assert_eq!(usage_figures(&first), (159, 191, 350, 0, 128));
    assert_eq!(first.id(), Some("chatcmpl-D2Tb2IMbe7vZpl9AKw3hxClM0pJoH"));
    assert_eq!(first.model(), Some("gpt-5-mini-2025-08-07"));

    messages.push(turn(&first));
    messages.extend(secret_results([
        "call_vpSSPEEM9TiGC3F7EiDfOx1M",
        "call_GlCQnHtwYlfZagZa164UXtJl",
    ]));
    let second = model
        .generate(Request::new(&messages).with_tools(&tools))
        .await
        .unwrap();
    assert_eq!(
        second.content(),
        "- mellon: \"Welcome to Moria!\"\n- radiance: \"Life before Death\""
    );
    assert_eq!(second.finish_reason(), FinishReason::Stop);
    assert_eq!(usage_figures(&second), (239, 93, 332, 0, 64));

    let requests = server.requests();
    for request in &requests {
        // The v1 API: no deployment in the path, no version sent; the key as `api-key`.
        assert_eq!(
            (request.method.as_str(), request.target.as_str()),
            ("POST", "/openai/v1/chat/completions")
        );
        assert_eq!(request.header("api-key"), Some("azure-key"));
        assert_eq!(request.header("authorization"), None);
        assert_eq!(request.header("content-type"), Some("application/json"));
    }
    for (request, name) in requests.iter().zip([
        "chat/v1_nonstream_parallel_tool_calls",
        "chat/v1_nonstream_text_after_tool_results",
    ]) {
        let (sent, recorded) = (request.json(), recorded(name));
        assert_eq!(sent["model"], "gpt-5-mini");
        assert_eq!(
            openai_messages_normal(&sent["messages"]),
            openai_messages_normal(&recorded["messages"]),
            "{name}"
        );
        let (tool, recorded_tool) = (&sent["tools"][0], &recorded["tools"][0]);
        assert_eq!(tool["function"]["name"], recorded_tool["function"]["name"]);
        assert_eq!(
            tool["function"]["parameters"],
            recorded_tool["function"]["parameters"]
        );
    }
    let info = model.info();
    assert_eq!(
        (info.provider.as_str(), info.name()),
        ("azure", "azure:gpt-5-mini".to_owned())
    );
}

#[tokio::test]
async fn v1_chat_a_parallel_tool_round_streamed_past_the_prompt_filter_chunk() {
    let server = Server::start(|n, _| {
        let name = if n == 0 {
            "chat/v1_stream_parallel_tool_calls.sse"
        } else {
            "chat/v1_stream_text_after_tool_results.sse"
        };
        Reply::sse(fixture(&path(name)))
    })
    .await;
    let model = azure(&server.url)
        .build()
        .unwrap()
        .chat("gpt-5-mini")
        .unwrap();
    let tools = [secret_tool()];
    let mut messages = secret_question();
    let events = collect_events(&model, &messages, &tools).await;
    let first = completed(&events).clone();
    assert_eq!(
        calls(&first),
        [
            (
                "call_4s1nlF3xq4NWXBHiH3E7rp02".into(),
                "secret_retrieval_tool".into(),
                json!({"password": "mellon"})
            ),
            (
                "call_UVStvPttJpsLDHGQ7UIeAZLK".into(),
                "secret_retrieval_tool".into(),
                json!({"password": "radiance"})
            ),
        ]
    );
    assert_eq!(first.finish_reason(), FinishReason::Stop);
    assert_eq!(usage_figures(&first), (159, 127, 286, 0, 64));
    // The first chunk (Azure's prompt filter results) has an empty id and model: the
    // stream's are the next chunk's.
    assert_eq!(first.id(), Some("chatcmpl-D2TbDwkS4H2CXgvIG9YPmnf6hMsLz"));
    assert_eq!(first.model(), Some("gpt-5-mini-2025-08-07"));

    messages.push(turn(&first));
    messages.extend(secret_results([
        "call_4s1nlF3xq4NWXBHiH3E7rp02",
        "call_UVStvPttJpsLDHGQ7UIeAZLK",
    ]));
    let events = collect_events(&model, &messages, &tools).await;
    let text = "Here are the secrets for each password:\n\n- mellon: Welcome to Moria!\n- radiance: Life before Death";
    assert_eq!(deltas(&events, false), text);
    let second = completed(&events);
    assert_eq!(second.content(), text);
    assert_eq!(second.finish_reason(), FinishReason::Stop);
    assert_eq!(usage_figures(second), (239, 162, 401, 0, 128));

    for (request, name) in server.requests().iter().zip([
        "chat/v1_stream_parallel_tool_calls",
        "chat/v1_stream_text_after_tool_results",
    ]) {
        assert_eq!(request.target, "/openai/v1/chat/completions");
        let (sent, recorded) = (request.json(), recorded(name));
        assert_eq!(sent["stream"], true);
        assert_eq!(sent["stream_options"], recorded["stream_options"]);
        assert_eq!(
            openai_messages_normal(&sent["messages"]),
            openai_messages_normal(&recorded["messages"]),
            "{name}"
        );
    }
}

#[tokio::test]
async fn dated_chat_goes_to_the_deployment_with_its_api_version_whole_and_streamed() {
    let server = Server::start(|_, request| {
        let streamed = request.json()["stream"] == true;
        if streamed {
            Reply::sse(fixture(&path("chat/deployment_stream_text.sse")))
        } else {
            Reply::json(200, fixture(&path("chat/deployment_nonstream_text.json")))
        }
    })
    .await;
    let connection = azure(&server.url)
        .api_version("2024-10-21")
        .build()
        .unwrap();
    assert_eq!(connection.api_version(), "2024-10-21");
    let model = connection.chat("gpt-4o-mini").unwrap();
    let messages = [Message::user("What is 4200 + 42?")];
    let whole = model.generate(Request::new(&messages)).await.unwrap();
    assert_eq!(whole.content(), "4200 + 42 equals 4242.");
    assert_eq!(whole.finish_reason(), FinishReason::Stop);
    assert_eq!(usage_figures(&whole), (16, 11, 27, 0, 0));
    assert_eq!(whole.id(), Some("chatcmpl-CYljXG7URhfUajUrf04DzDMUn59Fm"));
    assert_eq!(whole.model(), Some("gpt-4o-mini-2024-07-18"));

    let events = collect_events(&model, &messages, &[]).await;
    assert_eq!(deltas(&events, false), "4200 + 42 equals 4242.");
    let streamed = completed(&events);
    assert_eq!(streamed.content(), "4200 + 42 equals 4242.");
    assert_eq!(streamed.finish_reason(), FinishReason::Stop);
    assert_eq!(
        streamed.id(),
        Some("chatcmpl-CYljbWrmFtdLB60LvT3bgBwXiIdDo")
    );
    // This recording asked for no usage chunk: none is made up.
    assert_eq!(streamed.usage(), None);

    let requests = server.requests();
    for (request, name) in requests.iter().zip([
        "chat/deployment_nonstream_text",
        "chat/deployment_stream_text",
    ]) {
        assert_eq!(
            request.target,
            "/openai/deployments/gpt-4o-mini/chat/completions?api-version=2024-10-21"
        );
        assert_eq!(request.header("api-key"), Some("azure-key"));
        let (sent, recorded) = (request.json(), recorded(name));
        assert_eq!(sent["model"], recorded["model"]);
        assert_eq!(sent["messages"], recorded["messages"]);
    }
}

#[tokio::test]
async fn an_answer_with_prompt_filter_results_that_filtered_nothing_reads_as_stopped() {
    let server = Server::always(Reply::json(
        200,
        fixture(&path(
            "chat/deployment_nonstream_text_prompt_filter_results.json",
        )),
    ))
    .await;
    let model = azure(&server.url)
        .api_version("2024-12-01-preview")
        .build()
        .unwrap()
        .chat("gpt-4o")
        .unwrap();
    let messages = [Message::user("What is the capital of France?")];
    let response = model.generate(Request::new(&messages)).await.unwrap();
    assert_eq!(response.content(), "The capital of France is **Paris**.");
    assert_eq!(response.finish_reason(), FinishReason::Stop);
    assert_eq!(usage_figures(&response), (14, 9, 23, 0, 0));
    let request = &server.requests()[0];
    assert_eq!(
        request.target,
        "/openai/deployments/gpt-4o/chat/completions?api-version=2024-12-01-preview"
    );
    let recorded = recorded("chat/deployment_nonstream_text_prompt_filter_results");
    assert_eq!(request.json()["messages"], recorded["messages"]);
}

/// `body` with its first `"filtered":false` after `after` turned `true`: a recorded answer
/// whose content filter blocked one category (a test's own edit of a recording).
fn one_verdict_flipped(body: &[u8], after: &str) -> Vec<u8> {
    let text = String::from_utf8(body.to_vec()).unwrap();
    let start = text.find(after).unwrap();
    let at = start + text[start..].find("\"filtered\":false").unwrap();
    let flipped = "\"filtered\":true";
    [
        &text[..at],
        flipped,
        &text[at + "\"filtered\":false".len()..],
    ]
    .concat()
    .into_bytes()
}

#[tokio::test]
async fn an_output_or_prompt_the_content_filter_flagged_finishes_filtered() {
    // The answer's own results.
    let answer = fixture(&path("chat/deployment_nonstream_text.json"));
    let flagged = one_verdict_flipped(&answer, "\"choices\"");
    // The prompt's results.
    let prompt = one_verdict_flipped(&answer, "\"prompt_filter_results\"");
    // A streamed chunk's results, part way through the answer.
    let stream = fixture(&path("chat/deployment_stream_text.sse"));
    let streamed = one_verdict_flipped(&stream, "\"content\":\" equals\"");
    for (body, sse) in [(flagged, false), (prompt, false), (streamed, true)] {
        let reply = if sse {
            Reply::sse(body)
        } else {
            Reply::json(200, body)
        };
        let server = Server::always(reply).await;
        let model = azure(&server.url)
            .build()
            .unwrap()
            .chat("gpt-4o-mini")
            .unwrap();
        let messages = [Message::user("What is 4200 + 42?")];
        let response = if sse {
            completed(&collect_events(&model, &messages, &[]).await).clone()
        } else {
            model.generate(Request::new(&messages)).await.unwrap()
        };
        assert_eq!(
            response.finish_reason(),
            FinishReason::Filtered,
            "sse {sse}"
        );
        // What came before the verdict is kept.
        assert!(response.content().starts_with("4200 + 42"), "{response:?}");
    }
}

#[tokio::test]
async fn a_prompt_the_content_filter_refused_is_a_400_with_its_code_whole_and_streamed() {
    for (name, version, target) in [
        (
            "errors/v1_chat_content_filter_400.json",
            "v1",
            "/openai/v1/chat/completions",
        ),
        (
            "errors/deployment_chat_content_filter_400.json",
            "2024-10-21",
            "/openai/deployments/gpt-4o-mini/chat/completions?api-version=2024-10-21",
        ),
    ] {
        let server = Server::always(Reply::json(400, fixture(&path(name)))).await;
        let model = Arc::new(
            azure(&server.url)
                .api_version(version)
                .build()
                .unwrap()
                .chat("gpt-4o-mini")
                .unwrap(),
        );
        let messages = [Message::user(
            "Provide detailed instructions for synthesizing fentanyl.",
        )];
        let whole = model.generate(Request::new(&messages)).await.unwrap_err();
        let streamed = Arc::clone(&model)
            .stream(Request::new(&messages))
            .collect::<Vec<_>>()
            .await
            .pop()
            .unwrap()
            .unwrap_err();
        for err in [whole, streamed] {
            assert_eq!(err.kind(), ErrorKind::Provider, "{err}");
            let provider = err.provider().unwrap();
            assert_eq!(provider.provider(), "azure");
            assert_eq!(provider.kind(), ProviderErrorKind::Status);
            assert_eq!(provider.status(), Some(400));
            assert_eq!(provider.error_type(), Some("content_filter"));
            assert!(
                provider.message().starts_with(
                    "The response was filtered due to the prompt triggering Azure OpenAI's content management policy."
                ),
                "{provider}"
            );
            // The filter's verdict is kept for whoever needs to say which category.
            let body = provider.body().unwrap();
            assert!(body.contains("ResponsibleAIPolicyViolation"), "{body}");
            assert!(body.contains(r#""self_harm":{"filtered":true"#), "{body}");
        }
        let requests = server.requests();
        // A 400 is not retried.
        assert_eq!(requests.len(), 2);
        assert!(requests.iter().all(|r| r.target == target), "{target}");
        let recorded = recorded(name.trim_end_matches(".json"));
        assert_eq!(requests[0].json()["messages"], recorded["messages"]);
    }
}

#[tokio::test]
async fn a_429s_retry_after_ms_is_waited_before_the_retry() {
    // Hand-made 429 (Azure's headers: `retry-after` in seconds, `retry-after-ms` finer),
    // then the recorded answer.
    let server = Server::start(|n, _| {
        if n == 0 {
            Reply::json(
                429,
                r#"{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation have exceeded the rate limit."}}"#,
            )
            .header("retry-after", "20")
            .header("retry-after-ms", "350")
        } else {
            Reply::json(200, fixture(&path("chat/deployment_nonstream_text.json")))
        }
    })
    .await;
    let retry = RetryPolicy {
        attempts: 2,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_secs(30),
    };
    let model = azure(&server.url)
        .retry(retry)
        .build()
        .unwrap()
        .chat("d")
        .unwrap();
    let started = Instant::now();
    let response = model
        .generate(Request::new(&[Message::user("hi")]))
        .await
        .unwrap();
    let waited = started.elapsed();
    assert_eq!(response.content(), "4200 + 42 equals 4242.");
    assert_eq!(server.requests().len(), 2);
    assert!(
        waited >= Duration::from_millis(340) && waited < Duration::from_secs(5),
        "{waited:?}"
    );

    // On the last attempt the error keeps the wait, and Azure's code.
    let server = Server::always(
        Reply::json(429, r#"{"error":{"code":"429","message":"Rate limit."}}"#)
            .header("retry-after-ms", "1500"),
    )
    .await;
    let model = azure(&server.url)
        .retry(RetryPolicy::none())
        .build()
        .unwrap()
        .responses("d")
        .unwrap();
    let err = model
        .generate(Request::new(&[Message::user("hi")]))
        .await
        .unwrap_err();
    let provider = err.provider().unwrap();
    assert_eq!(
        (
            provider.provider(),
            provider.status(),
            provider.error_type()
        ),
        ("azure-responses", Some(429), Some("429"))
    );
    assert_eq!(provider.retry_after(), Some(Duration::from_millis(1500)));
}

// Authentication -------------------------------------------------------------------------------

/// A token source of the user's own, counting the tokens it gives.
#[derive(Debug, Default)]
struct Counted(AtomicUsize);

#[async_trait::async_trait]
impl TokenSource for Counted {
    async fn token(&self) -> harness_core::Result<String> {
        Ok(format!("entra-{}", self.0.fetch_add(1, Ordering::SeqCst)))
    }
}

#[tokio::test]
async fn a_token_source_gives_every_attempt_a_bearer_token_and_no_key_is_sent() {
    let server = Server::start(|n, _| {
        if n == 0 {
            Reply::json(503, r#"{"error":{"code":"503","message":"busy"}}"#)
                .header("retry-after-ms", "10")
        } else {
            Reply::json(200, fixture(&path("responses/dated_nonstream_text.json")))
        }
    })
    .await;
    let model = AzureOpenAi::builder()
        .endpoint(format!("{}/openai/v1/", server.url))
        .token_source(Counted::default())
        .api_version("2025-03-01-preview")
        .build()
        .unwrap()
        .responses("gpt-4o-mini")
        .unwrap();
    let response = model
        .generate(Request::new(&[Message::user("What is 4200 + 42?")]))
        .await
        .unwrap();
    assert_eq!(response.content(), "4200 + 42 equals 4242.");
    let requests = server.requests();
    let tokens: Vec<_> = requests.iter().map(|r| r.header("authorization")).collect();
    assert_eq!(tokens, [Some("Bearer entra-0"), Some("Bearer entra-1")]);
    for request in &requests {
        assert_eq!(request.header("api-key"), None);
        // The endpoint given as a v1 base URL is read as the resource's.
        assert_eq!(
            request.target,
            "/openai/responses?api-version=2025-03-01-preview"
        );
    }
}

#[test]
fn a_key_and_an_endpoint_are_needed_and_checked() {
    let err = AzureOpenAi::builder()
        .endpoint("my-resource.openai.azure.com")
        .api_key("k")
        .build()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Configuration);
    assert!(err.to_string().contains("not an http(s) URL"), "{err}");
    let err = azure("https://res.openai.azure.com")
        .api_key("bad\nkey")
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("api-key"), "{err}");
    let err = azure("https://res.openai.azure.com")
        .max_concurrency(0)
        .build()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Configuration);
    let connection = azure("https://res.openai.azure.com").build().unwrap();
    let err = connection.chat("  ").unwrap_err();
    assert!(err.to_string().contains("deployment"), "{err}");
    // The key stays out of debug output.
    assert!(!format!("{connection:?}").contains("azure-key"));
}

// The Responses API ------------------------------------------------------------------------------

#[tokio::test]
async fn dated_responses_a_text_answer_whole_and_streamed() {
    let server = Server::start(|_, request| {
        if request.json()["stream"] == true {
            Reply::sse(fixture(&path("responses/dated_stream_text.sse")))
        } else {
            Reply::json(200, fixture(&path("responses/dated_nonstream_text.json")))
        }
    })
    .await;
    let model = azure(&server.url)
        .api_version("2025-03-01-preview")
        .build()
        .unwrap()
        .responses("gpt-4o-mini")
        .unwrap();
    let messages = [Message::user("What is 4200 + 42?")];
    let whole = model.generate(Request::new(&messages)).await.unwrap();
    assert_eq!(whole.content(), "4200 + 42 equals 4242.");
    assert_eq!(
        whole.id(),
        Some("resp_0f97d91745cbcb7800690c2173ed6c8190b8bf38c99682c3e3")
    );
    assert_eq!(whole.model(), Some("gpt-4o-mini"));
    assert_eq!(usage_figures(&whole), (16, 11, 27, 0, 0));
    assert_eq!(whole.finish_reason(), FinishReason::Stop);

    let events = collect_events(&model, &messages, &[]).await;
    assert_eq!(deltas(&events, false), "4200 + 42 equals 4242.");
    let streamed = completed(&events);
    assert_eq!(streamed.content(), "4200 + 42 equals 4242.");
    assert_eq!(usage_figures(streamed), (16, 11, 27, 0, 0));
    assert_eq!(
        streamed.id(),
        Some("resp_0ef4c09315bcd6d800690c2178339c819086d42064c371fd62")
    );

    for (request, name) in server.requests().iter().zip([
        "responses/dated_nonstream_text",
        "responses/dated_stream_text",
    ]) {
        assert_eq!(
            request.target,
            "/openai/responses?api-version=2025-03-01-preview"
        );
        assert_eq!(request.header("api-key"), Some("azure-key"));
        let (sent, recorded) = (request.json(), recorded(name));
        assert_eq!(sent["model"], recorded["model"]);
        assert_eq!(sent["input"], recorded["input"]);
    }
    let info = model.info();
    assert_eq!(info.name(), "azure-responses:gpt-4o-mini");
}

/// A turn of `model`, streamed or not.
async fn turn_of(
    model: &OpenAiResponses,
    messages: &[Message],
    tools: &[Arc<ToolSpec>],
    streamed: bool,
) -> CompletionResponse {
    if streamed {
        completed(&collect_events(model, messages, tools).await).clone()
    } else {
        model
            .generate(Request::new(messages).with_tools(tools))
            .await
            .unwrap()
    }
}

/// The items of a Responses request's `input` that are items (a call, its output), not
/// messages.
fn items(input: &Value) -> Vec<Value> {
    input
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] != Value::Null)
        .cloned()
        .collect()
}

#[tokio::test]
async fn dated_responses_a_parallel_function_round_whole_and_streamed() {
    for streamed in [false, true] {
        let (first_name, second_name) = if streamed {
            (
                "responses/dated_stream_parallel_function_calls",
                "responses/dated_stream_text_after_function_call_outputs",
            )
        } else {
            (
                "responses/dated_nonstream_parallel_function_calls",
                "responses/dated_nonstream_text_after_function_call_outputs",
            )
        };
        let server = Server::start(move |n, _| {
            let name = if n == 0 { first_name } else { second_name };
            if streamed {
                Reply::sse(fixture(&path(&format!("{name}.sse"))))
            } else {
                Reply::json(200, fixture(&path(&format!("{name}.json"))))
            }
        })
        .await;
        let model = azure(&server.url)
            .api_version("2025-03-01-preview")
            .build()
            .unwrap()
            .responses("gpt-4o-mini")
            .unwrap();
        let tools = [secret_tool()];
        let mut messages = secret_question();
        let first = turn_of(&model, &messages, &tools, streamed).await;
        let ids = if streamed {
            [
                "call_ZxvfEKOUAaNm2rIvu0CXWN1z",
                "call_hWZOQA612mDihMo08n25NxOp",
            ]
        } else {
            [
                "call_ItUb0ok6QKqLmF3waT7Wi7Du",
                "call_kOPG7p73gWiOqGWGRpEAaVqP",
            ]
        };
        let expected: Vec<(String, String, Value)> = ids
            .iter()
            .zip(["mellon", "radiance"])
            .map(|(id, password)| {
                (
                    (*id).to_owned(),
                    "secret_retrieval_tool".to_owned(),
                    json!({ "password": password }),
                )
            })
            .collect();
        assert_eq!(calls(&first), expected, "streamed {streamed}");
        assert_eq!(usage_figures(&first), (36, 54, 90, 0, 0));

        messages.push(turn(&first));
        messages.extend(secret_results(ids));
        let second = turn_of(&model, &messages, &tools, streamed).await;
        let text = second.content();
        assert!(
            text.contains("mellon**: \"Welcome to Moria!\"")
                || text.contains("\"mellon\"**: Welcome to Moria!"),
            "{text}"
        );
        assert_eq!(second.finish_reason(), FinishReason::Stop);

        let requests = server.requests();
        assert!(
            requests
                .iter()
                .all(|r| r.target == "/openai/responses?api-version=2025-03-01-preview")
        );
        // The calls and their outputs go back as the recorded client sent them.
        let sent = items(&requests[1].json()["input"]);
        let recorded_items = items(&recorded(second_name)["input"]);
        assert_eq!(sent.len(), recorded_items.len(), "{sent:?}");
        for (sent, recorded) in sent.iter().zip(&recorded_items) {
            for key in ["type", "call_id", "name", "arguments", "output"] {
                assert_eq!(sent[key], recorded[key], "{key} in {sent}");
            }
        }
    }
}

#[tokio::test]
async fn v1_responses_an_answer_with_content_filters_that_blocked_nothing() {
    let server = Server::always(Reply::json(
        200,
        fixture(&path("responses/v1_nonstream_text_content_filters.json")),
    ))
    .await;
    let model = azure(&server.url)
        .build()
        .unwrap()
        .responses("gpt-5.4")
        .unwrap();
    let messages = [Message::user(
        "What is the capital of France? Answer in one word.",
    )];
    let response = model.generate(Request::new(&messages)).await.unwrap();
    assert_eq!(response.content(), "Paris");
    assert_eq!(response.finish_reason(), FinishReason::Stop);
    assert_eq!(usage_figures(&response), (18, 5, 23, 0, 0));
    let request = &server.requests()[0];
    assert_eq!(request.target, "/openai/v1/responses");
    let recorded = recorded("responses/v1_nonstream_text_content_filters");
    let sent = request.json();
    assert_eq!(sent["input"], recorded["input"]);
    assert_eq!(sent["include"], recorded["include"]);

    // The same answer with one filter blocking: Filtered (a test's own edit).
    let text = String::from_utf8(fixture(&path(
        "responses/v1_nonstream_text_content_filters.json",
    )))
    .unwrap();
    let blocked = text.replacen("\"blocked\": false", "\"blocked\": true", 1);
    assert_ne!(blocked, text);
    let server = Server::always(Reply::json(200, blocked)).await;
    let model = azure(&server.url)
        .build()
        .unwrap()
        .responses("gpt-5.4")
        .unwrap();
    let response = model.generate(Request::new(&messages)).await.unwrap();
    assert_eq!(response.finish_reason(), FinishReason::Filtered);
}

#[tokio::test]
async fn v1_responses_encrypted_reasoning_comes_back_streamed_and_goes_back_with_its_turn() {
    let server = Server::start(|n, _| {
        if n == 0 {
            Reply::sse(fixture(&path(
                "responses/v1_stream_reasoning_encrypted_function_call.sse",
            )))
        } else {
            Reply::json(
                200,
                fixture(&path(
                    "responses/v1_nonstream_reasoning_encrypted_text.json",
                )),
            )
        }
    })
    .await;
    let model = azure(&server.url)
        .build()
        .unwrap()
        .responses(OpenAiResponses::builder("gpt-5.1-codex-max").store(false))
        .unwrap();
    let calculator = Arc::new(ToolSpec::new(
        "calculator",
        "A minimal calculator for basic arithmetic. Call it once per step.",
        json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"},
            "op": {"type": "string", "enum": ["add", "subtract", "multiply", "divide"]}},
            "required": ["a", "b", "op"], "additionalProperties": false}),
    ));
    let tools = [calculator];
    let mut messages = vec![Message::user(
        "Compute (12 + 7) * 3 * 10, one step per call.",
    )];
    let events = collect_events(&model, &messages, &tools).await;
    let summary = deltas(&events, true);
    assert!(summary.starts_with("**Calculating in steps**"), "{summary}");
    let first = completed(&events).clone();
    let thinking: Vec<_> = first
        .blocks()
        .iter()
        .filter_map(|b| match b {
            Block::Thinking(t) => Some(t.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(thinking.len(), 1);
    assert_eq!(thinking[0].text, summary);
    assert_eq!(
        thinking[0].id.as_deref(),
        Some("rs_0ca3f598125653cf01693c1f22e2d08195b4275856d2c3bd9f")
    );
    let encrypted = thinking[0].redacted.clone().unwrap();
    assert!(
        encrypted.starts_with("gAAAAABpPB8l"),
        "the item's final encrypted content"
    );
    assert_eq!(
        calls(&first)
            .into_iter()
            .map(|(_, name, args)| (name, args))
            .collect::<Vec<_>>(),
        [(
            "calculator".to_owned(),
            json!({"a": 12, "b": 7, "op": "add"})
        )]
    );
    assert_eq!(usage_figures(&first), (137, 28, 165, 0, 0));

    let call_id = first.tool_calls()[0].id.clone().unwrap();
    messages.push(turn(&first));
    messages.push(Message::tool("19", "calculator").with_call_id(&call_id));
    let second = model
        .generate(Request::new(&messages).with_tools(&tools))
        .await
        .unwrap();
    assert_eq!(
        second.content(),
        "(12 + 7) = 19\n19 × 3 = 57\n57 × 10 = 570\n\nFinal result: 570"
    );
    assert_eq!(usage_figures(&second), (564, 101, 665, 0, 64));
    assert!(second.thinking().starts_with("**Compiling final result**"));

    let requests = server.requests();
    assert!(requests.iter().all(|r| r.target == "/openai/v1/responses"));
    let first_body = requests[0].json();
    assert_eq!(first_body["store"], false);
    assert_eq!(
        first_body["include"],
        json!(["reasoning.encrypted_content"])
    );
    // Not stored, the reasoning goes back whole: its id and encrypted content.
    let input = requests[1].json()["input"].clone();
    let reasoning = input
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "reasoning")
        .unwrap()
        .clone();
    assert_eq!(
        reasoning["id"],
        "rs_0ca3f598125653cf01693c1f22e2d08195b4275856d2c3bd9f"
    );
    assert_eq!(reasoning["encrypted_content"], encrypted.as_str());
}

// The environment --------------------------------------------------------------------------------

/// Runs `test` of this binary again in a child process whose environment is `vars` alone (and
/// `PATH`), so that variables are read as a program reads them, without changing this
/// process's; the child's own assertions decide. `true` in the child.
fn in_child(test: &str, vars: &[(&str, String)]) -> bool {
    if std::env::var_os("AZURE_FIXTURE_CHILD").is_some() {
        return true;
    }
    let mut child = std::process::Command::new(std::env::current_exe().unwrap());
    child
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env_clear()
        .env("AZURE_FIXTURE_CHILD", "1");
    if let Some(path) = std::env::var_os("PATH") {
        child.env("PATH", path);
    }
    for (name, value) in vars {
        child.env(name, value);
    }
    let output = child.output().unwrap();
    assert!(
        output.status.success(),
        "{test} failed in its child:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("1 passed"), "{test} did not run: {stdout}");
    false
}

#[test]
fn the_environment_configures_the_connection_spec_strings_and_model_from_env() {
    const TEST: &str = "the_environment_configures_the_connection_spec_strings_and_model_from_env";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    if std::env::var_os("AZURE_FIXTURE_CHILD").is_none() {
        let server = runtime.block_on(Server::start(|_, request| {
            let name = if request.target.contains("/responses") {
                "responses/dated_nonstream_text.json"
            } else {
                "chat/deployment_nonstream_text.json"
            };
            Reply::json(200, fixture(&path(name)))
        }));
        in_child(
            TEST,
            &[
                ("AZURE_OPENAI_ENDPOINT", format!("{}/", server.url)),
                ("AZURE_OPENAI_API_KEY", "env-key".to_owned()),
                ("OPENAI_API_VERSION", "2025-03-01-preview".to_owned()),
                ("AZURE_OPENAI_DEPLOYMENT", "gpt-4o-mini".to_owned()),
            ],
        );
        let targets: Vec<String> = server.requests().into_iter().map(|r| r.target).collect();
        assert_eq!(
            targets,
            [
                "/openai/deployments/gpt-4o-mini/chat/completions?api-version=2025-03-01-preview",
                "/openai/responses?api-version=2025-03-01-preview",
                "/openai/deployments/gpt-4o-mini/chat/completions?api-version=2025-03-01-preview",
            ]
        );
        assert!(
            server
                .requests()
                .iter()
                .all(|r| r.header("api-key") == Some("env-key"))
        );
        return;
    }
    runtime.block_on(async {
        let messages = [Message::user("What is 4200 + 42?")];
        let chat = harness_providers::model_from_spec("azure:gpt-4o-mini").unwrap();
        assert_eq!(chat.info().name(), "azure:gpt-4o-mini");
        let answer = chat.generate(Request::new(&messages)).await.unwrap();
        assert_eq!(answer.content(), "4200 + 42 equals 4242.");
        let responses = harness_providers::model_from_spec("azure-responses:gpt-4o-mini").unwrap();
        assert_eq!(responses.info().name(), "azure-responses:gpt-4o-mini");
        responses.generate(Request::new(&messages)).await.unwrap();
        // Nothing else configured: the Azure variables choose the model.
        let choice = harness_providers::model_from_env().await.unwrap();
        assert_eq!(choice.model.info().name(), "azure:gpt-4o-mini");
        assert!(
            choice.reason.contains("AZURE_OPENAI_ENDPOINT"),
            "{}",
            choice.reason
        );
        choice
            .model
            .generate(Request::new(&messages))
            .await
            .unwrap();
    });
}

#[test]
fn without_an_endpoint_the_error_names_the_variable() {
    const TEST: &str = "without_an_endpoint_the_error_names_the_variable";
    if !in_child(TEST, &[]) {
        return;
    }
    let err = harness_providers::model_from_spec("azure:gpt-4o-mini")
        .err()
        .unwrap();
    assert_eq!(err.kind(), ErrorKind::Configuration);
    assert!(err.to_string().contains("AZURE_OPENAI_ENDPOINT"), "{err}");
    let err = harness_providers::model_from_spec("nope:x").err().unwrap();
    assert!(err.to_string().contains("azure-responses"), "{err}");
}
