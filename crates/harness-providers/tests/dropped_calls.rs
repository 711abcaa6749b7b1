//! A tool call the vendor dropped: Gemini answers `MALFORMED_FUNCTION_CALL` (arguments its
//! decoder could not read) or `UNEXPECTED_TOOL_CALL` with no call, sometimes with the text
//! that came before the broken call and a `finishMessage`. The shapes are those of public
//! reports of real answers (an empty `content` object, or none; the usage without
//! candidate tokens). The reader marks the turn [`FinishReason::MalformedToolCall`] and keeps
//! the vendor's words; the agent does not take the leftover text as its answer but tells the
//! model and asks again, within the run's step budget. Groq refuses such a call with a 400
//! of code `tool_use_failed`, llama.cpp and Ollama with a 500 (after the client's retries),
//! each also as an error event of a stream: the same turn.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::Arc;

use futures_util::StreamExt as _;
use harness_core::{Agent, Budget, FinishReason, Role, StopReason};
use harness_core::{Llm as _, Request};
use harness_providers::replay::{Format, decode_answer, decode_stream};
use harness_providers::rest::RetryPolicy;
use harness_providers::{Gemini, Groq, LlamaCpp, Ollama, OpenAi};
use serde_json::{Value, json};
use support::{Reply, Server};

/// Get the weather in a city.
///
/// * `city` - The city.
#[harness_core::tool]
fn get_weather(city: String) -> String {
    format!("Sunny in {city}.")
}

const BROKEN: &str = "Malformed function call: print(default_api.get_weather(city=Paris))";

fn malformed(with_text: bool) -> Value {
    let content = if with_text {
        json!({"role": "model", "parts": [{"text": "Let me look that up."}]})
    } else {
        json!({})
    };
    json!({
        "candidates": [{"content": content, "finishReason": "MALFORMED_FUNCTION_CALL",
                        "finishMessage": BROKEN, "index": 0}],
        "usageMetadata": {"promptTokenCount": 33, "totalTokenCount": 33},
        "modelVersion": "gemini-2.0-flash"
    })
}

fn call() -> Value {
    json!({
        "candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}
        ]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 40, "candidatesTokenCount": 5, "totalTokenCount": 45}
    })
}

fn answer() -> Value {
    json!({
        "candidates": [{"content": {"role": "model", "parts": [{"text": "Sunny in Paris."}]},
                        "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 50, "candidatesTokenCount": 4, "totalTokenCount": 54}
    })
}

fn sse(chunks: &[Value]) -> Vec<u8> {
    let mut body = Vec::new();
    for chunk in chunks {
        body.extend_from_slice(b"data: ");
        body.extend_from_slice(chunk.to_string().as_bytes());
        body.extend_from_slice(b"\r\n\r\n");
    }
    body
}

#[test]
fn a_dropped_call_is_marked_and_keeps_the_vendors_words() {
    for with_text in [false, true] {
        let response = decode_answer(Format::Gemini, &malformed(with_text)).unwrap();
        assert_eq!(response.finish_reason(), FinishReason::MalformedToolCall);
        assert_eq!(response.finish_message(), Some(BROKEN));
        assert!(response.tool_calls().is_empty());
        let text = if with_text {
            "Let me look that up."
        } else {
            ""
        };
        assert_eq!(response.content(), text);
        assert_eq!(response.usage().unwrap().total_tokens, 33);
    }
    // No content at all, and a tool that was not offered.
    let unexpected = json!({"candidates": [{"finishReason": "UNEXPECTED_TOOL_CALL"}]});
    let response = decode_answer(Format::Gemini, &unexpected).unwrap();
    assert_eq!(response.finish_reason(), FinishReason::MalformedToolCall);
    assert_eq!(response.finish_message(), None);
    assert_eq!(
        FinishReason::MalformedToolCall.as_str(),
        "malformed_tool_call"
    );
    assert_eq!(
        serde_json::to_value(FinishReason::MalformedToolCall).unwrap(),
        json!("malformed_tool_call")
    );

    // Streamed: the text first, then the finish with its message in a chunk of its own.
    let body = sse(&[
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Let me "}]}}]}),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "look."}]}}]}),
        json!({"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL", "finishMessage": BROKEN}],
               "usageMetadata": {"promptTokenCount": 33, "totalTokenCount": 33}}),
    ]);
    let response = decode_stream(Format::Gemini, &body, 5, |_| {}).unwrap();
    assert_eq!(response.finish_reason(), FinishReason::MalformedToolCall);
    assert_eq!(response.finish_message(), Some(BROKEN));
    assert_eq!(response.content(), "Let me look.");
}

fn model(url: &str) -> Gemini {
    Gemini::builder("gemini-2.0-flash")
        .api_key("k")
        .base_url(url)
        .build()
        .unwrap()
}

/// The three turns a vendor answers in order: a dropped call, the call again, the answer.
fn three_turns(streamed: bool) -> impl Fn(usize, &support::Request) -> Reply {
    move |i, _| {
        let turn = match i {
            0 => malformed(true),
            1 => call(),
            _ => answer(),
        };
        if streamed {
            Reply::sse(sse(&[turn]))
        } else {
            Reply::json(200, turn.to_string())
        }
    }
}

#[tokio::test]
async fn the_agent_tells_the_model_and_asks_again() {
    for streamed in [false, true] {
        let server = Server::start(three_turns(streamed)).await;
        let agent = Agent::builder(model(&server.url))
            .tool(GetWeather)
            .build()
            .unwrap();
        let state = if streamed {
            let mut events = agent.stream("Weather in Paris?");
            let mut last = None;
            while let Some(event) = futures_util::StreamExt::next(&mut events).await {
                last = Some(event.unwrap());
            }
            match last {
                Some(harness_core::AgentEvent::Finished(state)) => *state,
                other => panic!("the run did not finish: {other:?}"),
            }
        } else {
            agent.run("Weather in Paris?").await.unwrap()
        };
        assert_eq!(
            state.stop_reason,
            StopReason::Answer,
            "streamed: {streamed}"
        );
        assert_eq!(state.output_text(), "Sunny in Paris.");
        // Every turn is kept: the leftover text, the notice, the call, its result, the answer.
        let roles: Vec<Role> = state.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::User,
                Role::Assistant,
                Role::User,
                Role::Assistant,
                Role::Tool,
                Role::Assistant
            ]
        );
        assert_eq!(state.messages[1].content.text(), "Let me look that up.");
        let notice = state.messages[2].content.text();
        assert!(notice.contains("could not be read"), "{notice}");
        assert!(notice.contains(BROKEN), "the vendor's words: {notice}");
        // The dropped turn was paid for: its tokens are counted.
        assert_eq!(state.usage.total_tokens, 33 + 45 + 54);

        // The second request carries the leftover text as the model's turn and the notice as
        // the user's, so the model sees what happened.
        let requests = server.requests();
        assert_eq!(requests.len(), 3);
        let contents = requests[1].json()["contents"].clone();
        assert_eq!(contents.as_array().unwrap().len(), 3, "{contents}");
        assert_eq!(contents[1]["role"], "model");
        assert_eq!(contents[1]["parts"][0]["text"], "Let me look that up.");
        assert_eq!(contents[2]["role"], "user");
        assert!(
            contents[2]["parts"][0]["text"]
                .as_str()
                .unwrap()
                .contains(BROKEN)
        );
    }
}

#[tokio::test]
async fn a_model_that_keeps_breaking_its_calls_ends_at_the_step_budget() {
    let server = Server::always(Reply::json(200, malformed(false).to_string())).await;
    let agent = Agent::builder(model(&server.url))
        .tool(GetWeather)
        .budget(Budget::new().with_steps(3))
        .build()
        .unwrap();
    let state = agent.run("Weather in Paris?").await.unwrap();
    assert_eq!(state.stop_reason, StopReason::StepBudget);
    assert_eq!(server.requests().len(), 3);
    // Nothing was run, and an empty model turn is never sent back (Gemini refuses empty
    // parts): each request holds the prompt and the notices so far.
    let last = server.requests()[2].json();
    let contents = last["contents"].as_array().unwrap().clone();
    assert_eq!(contents.len(), 3, "{contents:?}");
    assert!(contents.iter().all(|c| c["role"] == "user"));
    assert!(state.messages.iter().all(|m| m.role != Role::Tool));
}

/// Groq's refusal, as its SDK documents the body.
fn groq_refusal(generation: &str) -> Value {
    json!({"error": {
        "message": "Tool call validation failed: parameters for tool get_weather did not match schema: errors: [missing properties: 'city']",
        "type": "invalid_request_error",
        "code": "tool_use_failed",
        "failed_generation": generation
    }})
}

fn groq(url: &str) -> OpenAi {
    Groq::builder("openai/gpt-oss-20b")
        .api_key("k")
        .base_url(url)
        .build()
        .unwrap()
}

#[tokio::test]
async fn groqs_refused_call_is_a_turn_not_a_failure() {
    let generation = r#"{"name": "get_weather", "arguments": {"town": "Paris"}}"#;
    let server = Server::always(Reply::json(400, groq_refusal(generation).to_string())).await;
    let response = groq(&server.url).generate(Request::new(&[])).await.unwrap();
    assert_eq!(response.finish_reason(), FinishReason::MalformedToolCall);
    assert!(response.tool_calls().is_empty(), "nothing refused is run");
    let said = response.finish_message().unwrap();
    assert!(said.starts_with("Tool call validation failed"), "{said}");
    assert!(
        said.ends_with(&format!("What the model wrote: {generation}")),
        "{said}"
    );
    assert_eq!(server.requests().len(), 1, "a refusal is not retried");

    // A body longer than the error keeps: the message is still the vendor's.
    let long = "x".repeat(5000);
    let server = Server::always(Reply::json(400, groq_refusal(&long).to_string())).await;
    let response = groq(&server.url).generate(Request::new(&[])).await.unwrap();
    assert_eq!(response.finish_reason(), FinishReason::MalformedToolCall);
    assert!(
        response
            .finish_message()
            .unwrap()
            .starts_with("Tool call validation failed")
    );

    // A streamed request refused before its body starts: the same turn, as the only event,
    // the stream polled while the request it was made from is gone.
    let server = Server::always(Reply::json(400, groq_refusal(generation).to_string())).await;
    let model = Arc::new(groq(&server.url));
    let stream = {
        let messages = vec![harness_core::Message::user("Weather in Paris?")];
        Arc::clone(&model).stream(Request::new(&messages))
    };
    let events: Vec<_> = stream.collect().await;
    let [Ok(harness_core::LlmEvent::Completed(turn))] = &events[..] else {
        panic!("{events:?}");
    };
    assert_eq!(turn.finish_reason(), FinishReason::MalformedToolCall);
    assert!(turn.tool_calls().is_empty());
    assert!(
        turn.finish_message()
            .unwrap()
            .ends_with(&format!("What the model wrote: {generation}"))
    );

    // Any other 400 stays the error it is, streamed or not.
    let other = json!({"error": {"message": "bad model", "type": "invalid_request_error",
                                 "code": "model_not_found"}});
    let server = Server::always(Reply::json(400, other.to_string())).await;
    let error = groq(&server.url)
        .generate(Request::new(&[]))
        .await
        .unwrap_err();
    assert_eq!(error.status(), Some(400));
    let model = Arc::new(groq(&server.url));
    let events: Vec<_> = model.stream(Request::new(&[])).collect().await;
    let [Err(error)] = &events[..] else {
        panic!("{events:?}");
    };
    assert_eq!(error.status(), Some(400));

    // Streamed: text, then the refusal as an error event; the text is kept.
    let body = "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Checking.\"}}]}\n\n"
        .to_owned()
        + &format!("data: {}\n\n", groq_refusal(""));
    let (events, response) = {
        let mut events = Vec::new();
        let response =
            decode_stream(Format::OpenAi, body.as_bytes(), 3, |e| events.push(e)).unwrap();
        (events, response)
    };
    assert_eq!(
        events,
        [harness_core::LlmEvent::TextDelta("Checking.".into())]
    );
    assert_eq!(response.finish_reason(), FinishReason::MalformedToolCall);
    assert_eq!(response.content(), "Checking.");
    assert!(
        response
            .finish_message()
            .unwrap()
            .starts_with("Tool call validation failed")
    );
    // Another error event is still an error.
    let other = format!(
        "data: {}\n\n",
        json!({"error": {"message": "overloaded", "code": "503"}})
    );
    assert!(decode_stream(Format::OpenAi, other.as_bytes(), 3, |_| {}).is_err());
}

#[tokio::test]
async fn an_agent_on_groq_gets_its_refused_call_again() {
    let server = Server::start(|i, _| match i {
        0 => Reply::json(
            400,
            groq_refusal(r#"{"name": "get_weather", "arguments": {}}"#).to_string(),
        ),
        1 => Reply::json(
            200,
            json!({"id": "c2", "choices": [{"index": 0, "message": {"role": "assistant",
            "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function":
            {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
            "finish_reason": "tool_calls"}]})
            .to_string(),
        ),
        _ => Reply::json(
            200,
            json!({"id": "c3", "choices": [{"index": 0, "message": {"role": "assistant",
            "content": "Sunny in Paris."}, "finish_reason": "stop"}]})
            .to_string(),
        ),
    })
    .await;
    let agent = Agent::builder(groq(&server.url))
        .tool(GetWeather)
        .build()
        .unwrap();
    let state = agent.run("Weather in Paris?").await.unwrap();
    assert_eq!(state.stop_reason, StopReason::Answer);
    assert_eq!(state.output_text(), "Sunny in Paris.");
    let notice = state.messages[2].content.text();
    assert!(notice.contains("missing properties: 'city'"), "{notice}");
    // The second request tells the model; the empty turn goes as an empty assistant text.
    let second = server.requests()[1].json();
    let messages = second["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user");
    assert!(
        last["content"]
            .as_str()
            .unwrap()
            .contains("missing properties")
    );
    assert_eq!(
        state
            .messages
            .iter()
            .filter(|m| m.role == Role::Tool)
            .count(),
        1
    );
}

/// llama.cpp's 500 when its model's call is not JSON (as its server sends it).
const LLAMA_CPP_REFUSAL: &str = r#"{"error":{"code":500,"message":"Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] parse error at line 1, column 17: syntax error while parsing value - invalid string: missing closing quote; last read: '\"Paris'","type":"server_error"}}"#;

/// Ollama's, as its native API sends it and as its OpenAI-compatible one wraps it.
const OLLAMA_REFUSALS: [&str; 2] = [
    r#"{"error":"error parsing tool call: raw='{\"city\":\"Paris}', err=unexpected end of JSON input"}"#,
    r#"{"error":{"message":"error parsing tool call: raw='{\"city\":\"Paris}', err=unexpected end of JSON input","type":"api_error","param":null,"code":null}}"#,
];

/// Two attempts, the second right after the first.
fn quick_retry() -> RetryPolicy {
    RetryPolicy {
        attempts: 2,
        base_delay: std::time::Duration::from_millis(1),
        max_delay: std::time::Duration::from_millis(1),
    }
}

#[tokio::test]
async fn local_servers_refusing_their_models_call_give_the_same_turn_after_retrying() {
    let cases = [
        (
            "llama.cpp",
            LLAMA_CPP_REFUSAL,
            "Failed to parse tool call arguments as JSON",
        ),
        ("ollama", OLLAMA_REFUSALS[0], "error parsing tool call"),
        ("ollama /v1", OLLAMA_REFUSALS[1], "error parsing tool call"),
    ];
    for (server_name, body, said) in cases {
        let server = Server::always(Reply::json(500, body)).await;
        let model = Arc::new(if server_name == "llama.cpp" {
            LlamaCpp::builder("m")
                .base_url(&server.url)
                .retry(quick_retry())
                .build()
                .unwrap()
        } else {
            Ollama::builder("m")
                .base_url(&server.url)
                .retry(quick_retry())
                .build()
                .unwrap()
        });
        let response = model.generate(Request::new(&[])).await.unwrap();
        assert_eq!(
            response.finish_reason(),
            FinishReason::MalformedToolCall,
            "{server_name}"
        );
        assert!(response.tool_calls().is_empty());
        assert!(
            response.finish_message().unwrap().starts_with(said),
            "{server_name}: {:?}",
            response.finish_message()
        );
        // A 500 is retried first, as any: a new sample may come out whole.
        assert_eq!(server.requests().len(), 2, "{server_name}");
        // A streamed request answered so, before any event: the same turn.
        let events: Vec<_> = Arc::clone(&model).stream(Request::new(&[])).collect().await;
        let [Ok(harness_core::LlmEvent::Completed(turn))] = &events[..] else {
            panic!("{server_name}: {events:?}");
        };
        assert_eq!(turn.finish_reason(), FinishReason::MalformedToolCall);
        assert!(turn.finish_message().unwrap().starts_with(said));
        assert_eq!(server.requests().len(), 4, "{server_name}");
    }

    // Any other 500 stays the error it is.
    let server = Server::always(Reply::json(
        500,
        r#"{"error":{"code":500,"message":"out of memory","type":"server_error"}}"#,
    ))
    .await;
    let error = LlamaCpp::builder("m")
        .base_url(&server.url)
        .retry(RetryPolicy::none())
        .build()
        .unwrap()
        .generate(Request::new(&[]))
        .await
        .unwrap_err();
    assert_eq!(error.status(), Some(500));

    // Streamed, llama.cpp sends the refusal as an error event.
    let body = format!("data: {LLAMA_CPP_REFUSAL}\n\n");
    let response = decode_stream(Format::OpenAi, body.as_bytes(), 4, |_| {}).unwrap();
    assert_eq!(response.finish_reason(), FinishReason::MalformedToolCall);
}
