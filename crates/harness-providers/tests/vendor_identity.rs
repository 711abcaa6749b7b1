//! A gateway's or a local server's failure names that service, not OpenAI whose wire format
//! it speaks: the error carries the configured provider id (`groq`, `llamacpp`) and its
//! message says the service's name (Groq, llama.cpp), for each class of failure: an HTTP
//! status, a body that cannot be read, a stream cut before its end.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::Arc;

use futures_util::StreamExt as _;
use harness_core::{Error, Llm, LlmEvent, Message, ProviderErrorKind, Request};
use harness_providers::{Groq, LlamaCpp, OpenAi, OpenAiBuilder, RetryPolicy};
use support::{Reply, Server, fixture};

/// The services checked: a gateway and a local server, with their id and name.
const SERVICES: [(&str, &str); 2] = [("groq", "Groq"), ("llamacpp", "llama.cpp")];

fn model(id: &str, url: &str) -> OpenAi {
    let builder: OpenAiBuilder = match id {
        "groq" => Groq::builder("m"),
        _ => LlamaCpp::builder("m"),
    };
    builder
        .api_key("k")
        .base_url(url)
        .retry(RetryPolicy::none())
        .build()
        .unwrap()
}

async fn generate_error(id: &str, reply: Reply) -> Error {
    let server = Server::always(reply).await;
    model(id, &server.url)
        .generate(Request::new(&[Message::user("hi")]))
        .await
        .unwrap_err()
}

async fn stream_error(id: &str, reply: Reply) -> Error {
    let server = Server::always(reply).await;
    let model = Arc::new(model(id, &server.url));
    let messages = [Message::user("hi")];
    let mut events = model.stream(Request::new(&messages));
    while let Some(event) = events.next().await {
        match event {
            Ok(LlmEvent::Completed(response)) => panic!("{id}: an answer: {response:?}"),
            Ok(_) => {}
            Err(e) => return e,
        }
    }
    panic!("{id}: the stream ended without an error")
}

/// The error is the service's: its id as the provider, its id in what the error displays,
/// and, when `named`, its name in the message (never OpenAI's).
fn is_the_services(err: &Error, id: &str, name: &str, kind: ProviderErrorKind, named: bool) {
    let provider = err.provider().unwrap_or_else(|| panic!("{err:?}"));
    assert_eq!(provider.provider(), id, "{err}");
    assert_eq!(provider.kind(), kind, "{err}");
    let shown = err.to_string();
    assert!(
        shown.starts_with(&format!("{id} request failed")),
        "{shown}"
    );
    assert!(
        !shown.contains("OpenAI") && !shown.contains("openai"),
        "{shown}"
    );
    if named {
        assert!(provider.message().contains(name), "{shown}");
    }
}

#[tokio::test]
async fn an_http_status_names_the_service() {
    for (id, name) in SERVICES {
        let err = generate_error(
            id,
            Reply::json(
                400,
                r#"{"error": {"type": "invalid_request_error", "message": "bad"}}"#,
            ),
        )
        .await;
        is_the_services(&err, id, name, ProviderErrorKind::Status, false);
        assert_eq!(
            err.to_string(),
            format!("{id} request failed with HTTP 400 (invalid_request_error): bad")
        );
        let err = stream_error(id, Reply::json(404, "no such model")).await;
        is_the_services(&err, id, name, ProviderErrorKind::Status, false);
    }
}

#[tokio::test]
async fn a_body_that_cannot_be_read_names_the_service() {
    for (id, name) in SERVICES {
        // Not JSON at all.
        let err = generate_error(id, Reply::json(200, "<html>oops</html>")).await;
        is_the_services(&err, id, name, ProviderErrorKind::Malformed, true);
        assert!(
            err.to_string().contains(&format!(
                "the {name} response to /chat/completions is not JSON"
            )),
            "{err}"
        );
        // JSON, but not an answer.
        let err = generate_error(id, Reply::json(200, r#"{"choices": []}"#)).await;
        is_the_services(&err, id, name, ProviderErrorKind::Malformed, true);
        assert!(
            err.to_string()
                .contains(&format!("{name} response has no choices")),
            "{err}"
        );
        let err = generate_error(id, Reply::json(200, r#"{"choices": "all"}"#)).await;
        is_the_services(&err, id, name, ProviderErrorKind::Malformed, true);
        // A stream event that does not read.
        let err = stream_error(id, Reply::sse("data: {\"choices\": 7}\n\n")).await;
        is_the_services(&err, id, name, ProviderErrorKind::Malformed, true);
        assert!(
            err.to_string()
                .contains(&format!("unreadable {name} stream event")),
            "{err}"
        );
        // The service's own error inside a 200, and inside a stream.
        let error = r#"{"error": {"message": "model is loading", "type": "unavailable"}}"#;
        let err = generate_error(id, Reply::json(200, error)).await;
        is_the_services(&err, id, name, ProviderErrorKind::Vendor, false);
        let err = stream_error(id, Reply::sse(format!("data: {error}\n\n"))).await;
        is_the_services(&err, id, name, ProviderErrorKind::Vendor, false);
    }
}

#[tokio::test]
async fn a_cut_stream_names_the_service() {
    let body = fixture("llamacpp/chat_stream_text_include_usage.sse");
    // Everything before the chunk with the finish reason: whole events, no end mark.
    let text = String::from_utf8(body).unwrap();
    let cut = &text[..text.find("\"finish_reason\":\"length\"").unwrap()];
    let cut = &cut[..cut.rfind("\n\n").unwrap() + 2];
    for (id, name) in SERVICES {
        let err = stream_error(id, Reply::sse(cut)).await;
        is_the_services(&err, id, name, ProviderErrorKind::Incomplete, true);
        assert!(
            err.to_string()
                .contains(&format!("the {name} stream ended before a finish_reason")),
            "{err}"
        );
        // Cut inside an event, the connection closed cleanly.
        let err = stream_error(id, Reply::sse(&text[..cut.len() + 40])).await;
        is_the_services(&err, id, name, ProviderErrorKind::Incomplete, true);
        // Cut by the transport.
        let err = stream_error(id, Reply::sse(cut).cut_short()).await;
        is_the_services(&err, id, name, ProviderErrorKind::Transport, false);
    }
}
