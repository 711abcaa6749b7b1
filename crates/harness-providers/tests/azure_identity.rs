//! Microsoft Entra ID tokens from Microsoft's identity crate (feature `azure-identity`),
//! against a token endpoint on loopback: the managed identity App Service, Functions and
//! Container Apps give a program, which the crate reaches at `IDENTITY_ENDPOINT` with the
//! `IDENTITY_HEADER` secret. Each test runs its Azure side in a child process whose
//! environment holds exactly the variables under test, as a deployed program's would.
//!
//! `cargo test -p deepharness-providers --features azure-identity --test azure_identity`

#![cfg(feature = "azure-identity")]
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::{SystemTime, UNIX_EPOCH};

use harness_core::{ErrorKind, Llm, Message, Request};
use harness_providers::rest::TokenSource;
use harness_providers::{AzureOpenAi, EntraId};
use support::{Reply, Server, fixture};

/// Runs `test` again in a child process with `vars` (and `PATH`) as its whole environment;
/// the child's assertions decide. `true` in the child.
fn in_child(test: &str, vars: &[(&str, String)]) -> bool {
    if std::env::var_os("AZURE_IDENTITY_CHILD").is_some() {
        return true;
    }
    let mut child = std::process::Command::new(std::env::current_exe().unwrap());
    child
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env_clear()
        .env("AZURE_IDENTITY_CHILD", "1");
    if let Some(path) = std::env::var_os("PATH") {
        child.env("PATH", path);
    }
    for (name, value) in vars {
        child.env(name, value);
    }
    let output = child.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "{test} failed in its child:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    false
}

/// A managed identity's token endpoint: the n-th token is `mi-token-{n}`, valid for
/// `lifetime` seconds.
async fn token_endpoint(lifetime: u64) -> Server {
    Server::start(move |n, _| {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
        let body = format!(
            r#"{{"access_token":"mi-token-{n}","expires_on":"{}","resource":"https://cognitiveservices.azure.com","token_type":"Bearer"}}"#,
            now + lifetime
        );
        Reply::json(200, body)
    })
    .await
}

/// An Azure OpenAI resource answering every request with a recorded answer.
async fn resource() -> Server {
    Server::always(Reply::json(
        200,
        fixture("azure/chat/deployment_nonstream_text.json"),
    ))
    .await
}

fn identity_env(tokens: &Server, resource: &Server) -> Vec<(&'static str, String)> {
    vec![
        ("IDENTITY_ENDPOINT", format!("{}/msi/token", tokens.url)),
        ("IDENTITY_HEADER", "identity-secret".to_owned()),
        ("AZURE_OPENAI_ENDPOINT", resource.url.clone()),
        ("OPENAI_API_VERSION", "2024-10-21".to_owned()),
    ]
}

/// Two requests of a model whose connection the environment alone configures (no key).
async fn two_requests() {
    let model = AzureOpenAi::new().unwrap().chat("gpt-4o-mini").unwrap();
    for _ in 0..2 {
        let answer = model
            .generate(Request::new(&[Message::user("What is 4200 + 42?")]))
            .await
            .unwrap();
        assert_eq!(answer.content(), "4200 + 42 equals 4242.");
    }
}

#[test]
fn a_managed_identity_token_is_asked_for_once_for_the_right_scope_and_sent() {
    const TEST: &str = "a_managed_identity_token_is_asked_for_once_for_the_right_scope_and_sent";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    if std::env::var_os("AZURE_IDENTITY_CHILD").is_some() {
        runtime.block_on(two_requests());
        return;
    }
    let (tokens, resource) =
        runtime.block_on(async { (token_endpoint(3600).await, resource().await) });
    in_child(TEST, &identity_env(&tokens, &resource));

    // The crate asked once (the token is cached), for Azure OpenAI's resource, with the
    // secret its host gave it.
    let asked = tokens.requests();
    assert_eq!(asked.len(), 1, "{asked:?}");
    let ask = &asked[0];
    assert_eq!(ask.method, "GET");
    let (path, query) = ask.target.split_once('?').unwrap();
    assert_eq!(path, "/msi/token");
    let pairs: Vec<&str> = query.split('&').collect();
    assert!(pairs.contains(&"api-version=2019-08-01"), "{query}");
    assert!(
        pairs.contains(&"resource=https%3A%2F%2Fcognitiveservices.azure.com"),
        "{query}"
    );
    assert_eq!(ask.header("x-identity-header"), Some("identity-secret"));
    assert_eq!(ask.header("metadata"), Some("true"));

    // Both requests carried the token it got, and no key.
    let sent = resource.requests();
    assert_eq!(sent.len(), 2);
    for request in &sent {
        assert_eq!(request.header("authorization"), Some("Bearer mi-token-0"));
        assert_eq!(request.header("api-key"), None);
        assert_eq!(
            request.target,
            "/openai/deployments/gpt-4o-mini/chat/completions?api-version=2024-10-21"
        );
    }
}

#[test]
fn a_token_about_to_expire_is_refreshed_before_the_next_request() {
    const TEST: &str = "a_token_about_to_expire_is_refreshed_before_the_next_request";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    if std::env::var_os("AZURE_IDENTITY_CHILD").is_some() {
        runtime.block_on(two_requests());
        return;
    }
    // Two minutes left: inside the five the crate keeps in hand, so every request asks anew.
    let (tokens, resource) =
        runtime.block_on(async { (token_endpoint(120).await, resource().await) });
    in_child(TEST, &identity_env(&tokens, &resource));
    assert_eq!(tokens.requests().len(), 2);
    let sent: Vec<_> = resource
        .requests()
        .iter()
        .map(|r| r.header("authorization").map(str::to_owned))
        .collect();
    assert_eq!(
        sent,
        [
            Some("Bearer mi-token-0".to_owned()),
            Some("Bearer mi-token-1".to_owned())
        ]
    );
}

#[test]
fn a_token_endpoint_that_refuses_fails_the_request_typed_before_it_is_sent() {
    const TEST: &str = "a_token_endpoint_that_refuses_fails_the_request_typed_before_it_is_sent";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    if std::env::var_os("AZURE_IDENTITY_CHILD").is_some() {
        runtime.block_on(async {
            let source = EntraId::from_env().unwrap();
            assert!(format!("{source:?}").contains("ManagedIdentityCredential"));
            let model = AzureOpenAi::builder()
                .token_source(source)
                .build()
                .unwrap()
                .chat("gpt-4o-mini")
                .unwrap();
            let err = model
                .generate(Request::new(&[Message::user("hi")]))
                .await
                .unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Provider, "{err}");
            let provider = err.provider().unwrap();
            assert_eq!(provider.status(), Some(400), "{provider}");
            assert!(
                provider.message().contains("ManagedIdentityCredential"),
                "{provider}"
            );
        });
        return;
    }
    let (tokens, resource) = runtime.block_on(async {
        let tokens = Server::always(Reply::json(
            400,
            r#"{"error":"invalid_request","error_description":"Identity not found"}"#,
        ))
        .await;
        (tokens, resource().await)
    });
    in_child(TEST, &identity_env(&tokens, &resource));
    assert!(!tokens.requests().is_empty());
    assert!(
        resource.requests().is_empty(),
        "nothing goes out without a token"
    );
}

#[test]
fn the_environment_chooses_the_credential() {
    const TEST: &str = "the_environment_chooses_the_credential";
    let cases: [(&[(&str, &str)], &str); 5] = [
        (&[], "DeveloperToolsCredential"),
        (
            &[("AZURE_TOKEN_CREDENTIALS", "dev")],
            "DeveloperToolsCredential",
        ),
        (
            &[
                ("IDENTITY_ENDPOINT", "http://127.0.0.1:9/t"),
                ("IDENTITY_HEADER", "s"),
            ],
            "ManagedIdentityCredential",
        ),
        (
            &[
                ("AZURE_TENANT_ID", "tenant"),
                ("AZURE_CLIENT_ID", "client"),
                ("AZURE_CLIENT_SECRET", "secret"),
                ("IDENTITY_ENDPOINT", "http://127.0.0.1:9/t"),
            ],
            "ClientSecretCredential",
        ),
        (
            &[("AZURE_TOKEN_CREDENTIALS", "AzureCliCredential")],
            "AzureCliCredential",
        ),
    ];
    if std::env::var_os("AZURE_IDENTITY_CHILD").is_some() {
        let expected = std::env::var("EXPECTED").unwrap();
        let source = EntraId::from_env().unwrap();
        let debug = format!("{source:?}");
        assert!(debug.contains(&format!("\"{expected}\"")), "{debug}");
        assert!(debug.contains("https://cognitiveservices.azure.com/.default"));
        return;
    }
    for (vars, expected) in cases {
        let mut env: Vec<(&str, String)> =
            vars.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
        env.push(("EXPECTED", expected.to_owned()));
        in_child(TEST, &env);
    }
}

#[test]
fn an_unknown_credential_name_is_a_configuration_error() {
    const TEST: &str = "an_unknown_credential_name_is_a_configuration_error";
    if !in_child(TEST, &[("AZURE_TOKEN_CREDENTIALS", "Kerberos".to_owned())]) {
        return;
    }
    let err = EntraId::from_env().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Configuration);
    assert!(err.to_string().contains("AZURE_TOKEN_CREDENTIALS"), "{err}");
    // The connection reports it when it falls back to the environment's credential.
    let err = AzureOpenAi::builder()
        .endpoint("https://res.openai.azure.com")
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("Kerberos"), "{err}");
}

#[tokio::test]
async fn a_credential_of_your_own_goes_through_new_with_a_scope() {
    #[derive(Debug)]
    struct Fixed;

    #[async_trait::async_trait]
    impl azure_core::credentials::TokenCredential for Fixed {
        async fn get_token(
            &self,
            scopes: &[&str],
            _: Option<azure_core::credentials::TokenRequestOptions<'_>>,
        ) -> azure_core::Result<azure_core::credentials::AccessToken> {
            Ok(azure_core::credentials::AccessToken::new(
                format!("for {}", scopes.join(" ")),
                azure_core::time::OffsetDateTime::now_utc() + azure_core::time::Duration::hours(1),
            ))
        }
    }

    let source = EntraId::new(std::sync::Arc::new(Fixed));
    assert_eq!(
        source.token().await.unwrap(),
        "for https://cognitiveservices.azure.com/.default"
    );
    let source = source.scope("api://my-gateway/.default");
    assert_eq!(
        source.token().await.unwrap(),
        "for api://my-gateway/.default"
    );
}
