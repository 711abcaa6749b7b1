//! The retrying HTTP client against a loopback server: Retry-After, exhausted retries with
//! the body kept, no retry for a client error, a stream cut mid-body, the concurrency cap; the
//! connection settings on every vendor's builder.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use harness_core::Request;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use harness_core::{ErrorKind, Llm, LlmEvent, Message, ProviderErrorKind};
use harness_providers::{OpenAi, RetryPolicy};
use support::{Reply, Server, fixture};

const OK: &str = r#"{"choices": [{"message": {"content": "fine"}, "finish_reason": "stop"}]}"#;

fn model(server: &Server, retry: RetryPolicy) -> OpenAi {
    OpenAi::builder("m")
        .api_key("k")
        .base_url(&server.url)
        .retry(retry)
        .build()
        .unwrap()
}

fn quick_retries() -> RetryPolicy {
    RetryPolicy {
        attempts: 4,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_secs(30),
    }
}

#[tokio::test]
async fn a_429_with_retry_after_is_retried_once_after_that_long() {
    let server = Server::start(|n, _| {
        if n == 0 {
            Reply::json(
                429,
                r#"{"error": {"type": "rate_limit_error", "message": "slow down"}}"#,
            )
            .header("retry-after", "1")
        } else {
            Reply::json(200, OK)
        }
    })
    .await;
    let started = Instant::now();
    let response = model(&server, RetryPolicy::default())
        .generate(Request::new(&[Message::user("hi")]))
        .await
        .unwrap();
    let waited = started.elapsed();
    assert_eq!(response.content(), "fine");
    assert_eq!(server.requests().len(), 2);
    assert!(
        waited >= Duration::from_millis(950),
        "waited only {waited:?}"
    );
    assert!(waited < Duration::from_secs(5), "waited {waited:?}");
}

#[tokio::test]
async fn a_429_that_outlasts_the_retries_says_how_long_to_wait() {
    let server = Server::always(
        Reply::json(
            429,
            r#"{"error": {"type": "rate_limit_error", "message": "slow down"}}"#,
        )
        .header("retry-after", "0.01"),
    )
    .await;
    let err = model(&server, quick_retries())
        .generate(Request::new(&[Message::user("hi")]))
        .await
        .unwrap_err();
    assert_eq!(server.requests().len(), 4);
    assert_eq!(err.kind(), ErrorKind::Provider);
    assert_eq!(err.status(), Some(429));
    assert_eq!(err.retry_after(), Some(Duration::from_millis(10)));
    assert!(!err.is_timeout() && !err.is_connect());
    assert_eq!(err.provider().unwrap().provider(), "openai");
}

#[tokio::test]
async fn four_500s_end_in_a_provider_error_that_keeps_the_body() {
    let server = Server::always(Reply::json(
        500,
        r#"{"error": {"type": "server_error", "message": "the engine is overloaded"}}"#,
    ))
    .await;
    let err = model(&server, quick_retries())
        .generate(Request::new(&[Message::user("hi")]))
        .await
        .unwrap_err();
    assert_eq!(server.requests().len(), 4);
    let Some(provider) = err.provider() else {
        panic!("{err:?}")
    };
    assert_eq!(provider.status(), Some(500));
    assert_eq!(provider.error_type(), Some("server_error"));
    assert_eq!(provider.message(), "the engine is overloaded");
    assert!(provider.body().unwrap().contains("overloaded"));
    assert_eq!(
        err.to_string(),
        "openai request failed with HTTP 500 (server_error): the engine is overloaded"
    );
}

/// Anthropic answers 529 when it is overloaded, and its own SDKs retry it: so do we.
#[tokio::test]
async fn an_anthropic_529_overloaded_is_retried() {
    let server = Server::start(|n, _| {
        if n == 0 {
            Reply::json(
                529,
                r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#,
            )
        } else {
            Reply::json(
                200,
                r#"{"content": [{"type": "text", "text": "fine"}], "stop_reason": "end_turn"}"#,
            )
        }
    })
    .await;
    let model = harness_providers::Anthropic::builder("m")
        .api_key("k")
        .base_url(&server.url)
        .retry(quick_retries())
        .build()
        .unwrap();
    let response = model
        .generate(Request::new(&[Message::user("hi")]))
        .await
        .unwrap();
    assert_eq!(response.content(), "fine");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_400_is_not_retried() {
    let server = Server::always(Reply::json(400, "not json at all")).await;
    let err = model(&server, quick_retries())
        .generate(Request::new(&[Message::user("hi")]))
        .await
        .unwrap_err();
    assert_eq!(server.requests().len(), 1);
    let Some(provider) = err.provider() else {
        panic!("{err:?}")
    };
    assert_eq!(provider.status(), Some(400));
    assert_eq!(provider.body(), Some("not json at all"));
    assert!(provider.message().contains("400"), "{}", provider.message());
}

#[tokio::test]
async fn a_stream_cut_mid_body_errors_without_a_retry_and_keeps_what_was_delivered() {
    let body = fixture("openai/chat_stream_text_after_tool_result_include_usage.sse");
    let half = body[..body.len() / 2].to_vec();
    let server = Server::always(Reply::sse(half).cut_short()).await;
    let model = Arc::new(model(&server, quick_retries()));
    let items: Vec<_> = model
        .stream(Request::new(&[Message::user("hi")]))
        .collect()
        .await;
    assert_eq!(
        server.requests().len(),
        1,
        "a stream whose body started is not retried"
    );
    let (delivered, failed): (Vec<_>, Vec<_>) = items.into_iter().partition(Result::is_ok);
    assert_eq!(failed.len(), 1);
    assert!(!delivered.is_empty(), "the deltas before the cut are kept");
    assert!(
        delivered
            .iter()
            .all(|e| matches!(e, Ok(LlmEvent::TextDelta(_))))
    );
    let err = failed.into_iter().next().unwrap().unwrap_err();
    assert!(err.to_string().contains("broke off"), "{err}");
}

#[tokio::test]
async fn a_stream_is_retried_before_its_body_starts() {
    let server = Server::start(|n, _| {
        if n == 0 {
            Reply::json(503, "busy")
        } else {
            Reply::sse(fixture(
                "openai/chat_stream_text_after_tool_result_include_usage.sse",
            ))
        }
    })
    .await;
    let model = Arc::new(model(&server, quick_retries()));
    let events: Vec<LlmEvent> = model
        .stream(Request::new(&[Message::user("hi")]))
        .map(|e| e.unwrap())
        .collect()
        .await;
    assert_eq!(server.requests().len(), 2);
    assert!(
        matches!(events.last(), Some(LlmEvent::Completed(r)) if r.content() == "The capital of the UK is London.")
    );
}

#[tokio::test]
async fn max_concurrency_caps_requests_in_flight_across_tasks() {
    let server = Server::always(Reply::json(200, OK).delayed(Duration::from_millis(150))).await;
    let model = OpenAi::builder("m")
        .base_url(&server.url)
        .max_concurrency(2)
        .build()
        .unwrap();
    let messages = [Message::user("hi")];
    let calls = (0..6).map(|_| model.generate(Request::new(&messages)));
    let results = futures_util::future::join_all(calls).await;
    assert!(results.iter().all(Result::is_ok));
    assert_eq!(server.requests().len(), 6);
    assert_eq!(server.max_in_flight(), 2);
}

#[tokio::test]
async fn max_concurrency_holds_for_a_streams_whole_body() {
    let body = fixture("openai/chat_stream_text_after_tool_result_include_usage.sse");
    let server = Server::always(Reply::sse(body).delayed(Duration::from_millis(100))).await;
    let model = Arc::new(
        OpenAi::builder("m")
            .base_url(&server.url)
            .max_concurrency(1)
            .build()
            .unwrap(),
    );
    let messages = [Message::user("hi")];
    let streams = (0..3).map(|_| {
        Arc::clone(&model)
            .stream(Request::new(&messages))
            .collect::<Vec<_>>()
    });
    let results = futures_util::future::join_all(streams).await;
    assert!(
        results
            .iter()
            .all(|events| events.iter().all(Result::is_ok))
    );
    assert_eq!(server.max_in_flight(), 1);
}

#[tokio::test]
async fn a_refused_connection_is_a_connect_error_naming_the_url_and_keeping_reqwests() {
    // Bind and drop a listener: nothing listens on that port now.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let model = OpenAi::builder("m")
        .base_url(format!("http://127.0.0.1:{port}/v1"))
        .retry(RetryPolicy {
            attempts: 2,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(5),
        })
        .build()
        .unwrap();
    let err = model
        .generate(Request::new(&[Message::user("hi")]))
        .await
        .unwrap_err();
    assert!(
        err.is_provider() && err.is_connect() && !err.is_timeout(),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains(&format!("http://127.0.0.1:{port}/v1/chat/completions")),
        "{err}"
    );
    let provider = err.provider().unwrap();
    assert_eq!(provider.kind(), ProviderErrorKind::Connect);
    // The transport's own error is the provider error's source, reachable by downcasting.
    let source = std::error::Error::source(provider).unwrap();
    assert!(
        source
            .downcast_ref::<reqwest::Error>()
            .unwrap()
            .is_connect()
    );
}

#[test]
fn a_base_url_that_is_not_an_http_url_is_refused_at_build_naming_it() {
    for (url, problem) in [
        ("not a url", "does not parse"),
        ("ftp://example.test/v1", "not an http(s) URL"),
        ("localhost:8080/v1", "not an http(s) URL"),
    ] {
        let err = OpenAi::builder("m").base_url(url).build().unwrap_err();
        assert!(err.is_configuration(), "{url}: {err:?}");
        let message = err.to_string();
        assert!(
            message.contains(url) && message.contains(problem) && message.contains("https://"),
            "{message}"
        );
    }
}

#[tokio::test]
async fn an_absurd_retry_after_is_capped_not_a_panic() {
    let server = Server::start(|n, _| {
        if n == 0 {
            Reply::json(503, "busy").header("retry-after", "1e30")
        } else {
            Reply::json(200, OK)
        }
    })
    .await;
    let retry = RetryPolicy {
        attempts: 2,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(20),
    };
    let response = model(&server, retry)
        .generate(Request::new(&[Message::user("hi")]))
        .await
        .unwrap();
    assert_eq!(response.content(), "fine");
}

#[test]
fn every_vendor_builder_takes_the_connection_settings_and_shows_them() {
    use harness_providers::{Anthropic, Gemini, HttpConfig};

    fn check(model: &str, config: &HttpConfig, base_url: &str) {
        assert_eq!(config.base_url, base_url, "{model}");
        assert_eq!(config.timeout, Duration::from_secs(42), "{model}");
        assert_eq!(config.connect_timeout, Duration::from_secs(3), "{model}");
        assert_eq!(config.max_concurrency, Some(2), "{model}");
        assert_eq!(config.retry.attempts, 2, "{model}");
        assert_eq!(config.max_response_bytes, 4096, "{model}");
    }
    // The builders share their connection setters but no trait: one macro sets them all.
    macro_rules! configured {
        ($builder:expr, $url:expr) => {
            $builder
                .api_key("k")
                .base_url($url)
                .timeout(Duration::from_secs(42))
                .connect_timeout(Duration::from_secs(3))
                .max_concurrency(2)
                .max_response_bytes(4096)
                .retry(RetryPolicy {
                    attempts: 2,
                    ..RetryPolicy::default()
                })
                .build()
                .unwrap()
        };
    }
    let openai = configured!(OpenAi::builder("gpt"), "http://127.0.0.1:9/v1");
    assert_eq!(openai.model(), "gpt");
    check("openai", openai.client().config(), "http://127.0.0.1:9/v1");
    let anthropic = configured!(Anthropic::builder("claude"), "http://127.0.0.1:9");
    assert_eq!(anthropic.model(), "claude");
    check(
        "anthropic",
        anthropic.client().config(),
        "http://127.0.0.1:9",
    );
    let gemini = configured!(Gemini::builder("gemini"), "http://127.0.0.1:9");
    assert_eq!(gemini.model(), "gemini");
    check("gemini", gemini.client().config(), "http://127.0.0.1:9");
}

/// An answer whose body stops inside its JSON (a proxy that cut it and closed cleanly) is
/// incomplete, not garbled; a body that is not JSON at all is malformed.
#[tokio::test]
async fn a_body_cut_inside_its_json_is_incomplete_and_garbage_is_malformed() {
    use harness_core::ProviderErrorKind;
    for (body, kind) in [
        (&OK[..OK.len() / 2], ProviderErrorKind::Incomplete),
        ("<html>502</html>", ProviderErrorKind::Malformed),
        ("", ProviderErrorKind::Incomplete),
    ] {
        let server = Server::always(Reply::json(200, body)).await;
        let err = model(&server, RetryPolicy::none())
            .generate(Request::new(&[Message::user("hi")]))
            .await
            .unwrap_err();
        assert_eq!(err.provider().unwrap().kind(), kind, "{body:?}: {err}");
    }
}

/// A request as the hook saw it: method, URL, headers, body.
type Seen = (String, String, Vec<(String, String)>, Vec<u8>);

/// Counts its calls, records what it was shown, and signs each attempt with its number.
#[derive(Debug, Default)]
struct Signer {
    seen: std::sync::Mutex<Vec<Seen>>,
}

#[async_trait::async_trait]
impl harness_providers::rest::Authenticate for Signer {
    async fn authenticate(
        &self,
        request: &harness_providers::rest::Outgoing<'_>,
    ) -> harness_core::Result<Vec<(String, String)>> {
        let mut seen = self.seen.lock().unwrap();
        seen.push((
            request.method().to_owned(),
            request.url().to_owned(),
            request
                .headers()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
            request.body().to_vec(),
        ));
        Ok(vec![
            (
                "authorization".to_owned(),
                format!("Sig attempt={}", seen.len()),
            ),
            ("x-signed-at".to_owned(), seen.len().to_string()),
        ])
    }
}

#[tokio::test]
async fn the_auth_hook_signs_every_attempt_and_sees_the_exact_request() {
    let server = Server::start(|n, _| {
        if n == 0 {
            Reply::json(503, r#"{"error": {"message": "busy"}}"#)
        } else {
            Reply::json(200, r#"{"ok": true}"#)
        }
    })
    .await;
    let signer = Arc::new(Signer::default());
    let mut config = harness_providers::HttpConfig::new("signed", &server.url);
    config.headers.push(("x-static".into(), "s".into()));
    // The hook's Authorization replaces a fixed one rather than being sent beside it.
    config
        .headers
        .push(("authorization".into(), "Bearer fixed".into()));
    config.retry = quick_retries();
    config.auth = Some(signer.clone());
    let client = harness_providers::HttpClient::new(config).unwrap();
    let answer = client
        .post_json("/v1/x", &serde_json::json!({"a": 1}))
        .await
        .unwrap();
    assert_eq!(answer, serde_json::json!({"ok": true}));

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for (n, request) in requests.iter().enumerate() {
        let attempt = (n + 1).to_string();
        assert_eq!(
            request.header("authorization"),
            Some(format!("Sig attempt={attempt}").as_str())
        );
        assert_eq!(request.header("x-signed-at"), Some(attempt.as_str()));
        assert_eq!(request.header("x-static"), Some("s"));
        assert_eq!(
            request
                .headers
                .iter()
                .filter(|(k, _)| k == "authorization")
                .count(),
            1
        );
    }
    let seen = signer.seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "one call per attempt");
    let (method, url, headers, body) = &seen[0];
    assert_eq!(method, "POST");
    assert_eq!(url, &format!("{}/v1/x", server.url));
    assert_eq!(body, &requests[0].body, "the exact bytes sent");
    assert_eq!(body.as_slice(), br#"{"a":1}"#);
    assert_eq!(
        headers[..2],
        [
            ("content-type".to_owned(), "application/json".to_owned()),
            ("x-static".to_owned(), "s".to_owned()),
        ]
    );
}

#[derive(Debug)]
struct NoCredentials;

#[async_trait::async_trait]
impl harness_providers::rest::Authenticate for NoCredentials {
    async fn authenticate(
        &self,
        _: &harness_providers::rest::Outgoing<'_>,
    ) -> harness_core::Result<Vec<(String, String)>> {
        Err(harness_core::Error::configuration(
            "no credentials: looked at MY_TOKEN",
        ))
    }
}

#[tokio::test]
async fn an_auth_hook_error_ends_the_request_unsent() {
    let server = Server::always(Reply::json(200, OK)).await;
    let mut config = harness_providers::HttpConfig::new("signed", &server.url);
    config.retry = quick_retries();
    config.auth = Some(Arc::new(NoCredentials));
    let client = harness_providers::HttpClient::new(config).unwrap();
    let err = client.post("/x", &serde_json::json!({})).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Configuration);
    assert_eq!(err.to_string(), "no credentials: looked at MY_TOKEN");
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn a_bearer_token_source_is_asked_on_each_attempt() {
    let server = Server::start(|n, _| {
        if n == 0 {
            Reply::json(429, r#"{"error": {"message": "slow"}}"#).header("retry-after", "0")
        } else {
            Reply::json(200, r#"{"ok": 1}"#)
        }
    })
    .await;
    let issued = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = issued.clone();
    let mut config = harness_providers::HttpConfig::new("entra", &server.url);
    config.retry = quick_retries();
    config.auth = Some(Arc::new(harness_providers::rest::BearerToken::from_fn(
        move || {
            let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async move { Ok(format!("tok-{n}")) }
        },
    )));
    let client = harness_providers::HttpClient::new(config).unwrap();
    client.post("/x", &serde_json::json!({})).await.unwrap();
    let seen: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.header("authorization").unwrap().to_owned())
        .collect();
    assert_eq!(seen, ["Bearer tok-0", "Bearer tok-1"]);
}
