//! Tavily against a loopback server: the request, the parsing, a 401, the text.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use harness_core::{Ctx, Tool};
use harness_tools::{SearchDepth, SearchResult, TavilySearch, format_results};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Answers every request with `status` and `body`, recording the request head and body.
async fn server(status: u16, body: &'static str) -> (String, Arc<Mutex<Vec<(String, Value)>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
    let log = Arc::clone(&seen);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut data = Vec::new();
            let mut buf = [0_u8; 4096];
            loop {
                let n = socket.read(&mut buf).await.unwrap_or(0);
                if n == 0 {
                    break;
                }
                data.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&data).to_string();
                if let Some((head, rest)) = text.split_once("\r\n\r\n") {
                    let length: usize = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    if rest.len() >= length {
                        log.lock().unwrap().push((
                            head.to_owned(),
                            serde_json::from_str(rest).unwrap_or(Value::Null),
                        ));
                        break;
                    }
                }
            }
            let reply = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(reply.as_bytes()).await;
        }
    });
    (url, seen)
}

const RESULTS: &str = r#"{"query": "q", "results": [
    {"title": "Rust", "url": "https://rust-lang.org", "content": "A language.", "score": 0.9},
    {"title": "Crates", "url": "https://crates.io", "content": "Packages."},
    "not an object"
]}"#;

#[tokio::test]
async fn the_request_the_results_and_the_text() {
    let (url, seen) = server(200, RESULTS).await;
    let search = TavilySearch::builder()
        .api_key("tvly-key")
        .base_url(&url)
        .max_results(3)
        .depth(SearchDepth::Advanced)
        .build()
        .unwrap();
    let results = search.search("rust crates").await.unwrap();
    assert_eq!(
        results,
        vec![
            SearchResult {
                title: "Rust".into(),
                url: "https://rust-lang.org".into(),
                content: "A language.".into(),
                score: Some(0.9)
            },
            SearchResult {
                title: "Crates".into(),
                url: "https://crates.io".into(),
                content: "Packages.".into(),
                score: None
            },
        ]
    );
    let (head, body) = seen.lock().unwrap()[0].clone();
    assert!(head.starts_with("POST /search HTTP/1.1"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("authorization: bearer tvly-key"),
        "{head}"
    );
    assert_eq!(
        body,
        json!({"query": "rust crates", "max_results": 3, "search_depth": "advanced"})
    );

    let tool = search.as_tool();
    assert_eq!(
        tool.spec().parameters,
        json!({"type": "object", "properties": {"query": {"type": "string", "description": "What to search the web for."}}, "required": ["query"]})
    );
    assert!(!tool.spec().requires_approval);
    let text = tool
        .call(json!({"query": "rust"}), Ctx::new())
        .await
        .unwrap();
    assert_eq!(
        text.text(),
        "Rust\nhttps://rust-lang.org\nA language.\n\nCrates\nhttps://crates.io\nPackages."
    );
    assert_eq!(
        format_results(&[], "nothing"),
        "No results for \"nothing\"."
    );
}

#[tokio::test]
async fn a_401_is_a_provider_error() {
    let (url, seen) = server(
        401,
        r#"{"detail": {"error": "Unauthorized: missing or invalid API key."}}"#,
    )
    .await;
    let search = TavilySearch::builder()
        .api_key("bad")
        .base_url(&url)
        .build()
        .unwrap();
    let err = search.search("x").await.unwrap_err();
    let Some(provider) = err.provider() else {
        panic!("{err:?}")
    };
    assert_eq!(provider.status(), Some(401));
    assert!(provider.body().unwrap().contains("invalid API key"));
    assert_eq!(seen.lock().unwrap().len(), 1, "a 401 is not retried");
}

#[test]
fn settings_are_checked() {
    let err = TavilySearch::builder()
        .api_key("k")
        .max_results(0)
        .build()
        .unwrap_err();
    assert_eq!(err.to_string(), "max_results must be at least 1, got 0");
    let err = TavilySearch::builder().api_key("  ").build().unwrap_err();
    assert!(
        err.to_string().starts_with("TavilySearch needs an API key"),
        "{err}"
    );
}
