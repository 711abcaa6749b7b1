//! Bedrock's credentials from the environment, as a user sets them: AWS's standard chain
//! reading the environment variables and the shared config and credentials files (in a
//! temporary directory), a Bedrock API key from `AWS_BEARER_TOKEN_BEDROCK`, and the error
//! that names every place looked at when there is nothing. Requests go to a loopback server.
//!
//! One test, in a process of its own: it sets the process's environment, which nothing else
//! reads meanwhile (a single-threaded runtime, no other test in this binary).

#![cfg(feature = "bedrock")]
#![allow(
    missing_docs,
    unsafe_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

mod support;

use harness_core::{ErrorKind, Llm, Message, Request};
use harness_providers::Bedrock;
use support::{Reply, Server, fixture};

const MODEL: &str = "us.amazon.nova-micro-v1:0";

/// Every variable the chain reads, cleared.
const VARIABLES: &[&str] = &[
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
    // What model_from_env prefers to Bedrock.
    "DEEPHARNESS_MODEL",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GROQ_API_KEY",
    "MISTRAL_API_KEY",
    "DEEPSEEK_API_KEY",
    "OPENROUTER_API_KEY",
    "TOGETHER_API_KEY",
    "FIREWORKS_API_KEY",
    "CEREBRAS_API_KEY",
    "XAI_API_KEY",
];

fn set(name: &str, value: &str) {
    // SAFETY: this binary's only test runs on one thread; nothing reads the environment
    // while it is changed.
    unsafe { std::env::set_var(name, value) };
}

fn clear(home: &std::path::Path) {
    for name in VARIABLES {
        // SAFETY: as in `set`.
        unsafe { std::env::remove_var(name) };
    }
    // No files of the machine's user, and never the instance metadata service (no network
    // but loopback).
    set("HOME", &home.display().to_string());
    set("AWS_EC2_METADATA_DISABLED", "true");
}

/// The `Authorization` a request of `model` carried.
async fn authorization(model: &Bedrock, server: &Server) -> (String, Option<String>) {
    model
        .generate(Request::new(&[Message::user("hi")]))
        .await
        .unwrap();
    let request = server.requests().pop().unwrap();
    (
        request.header("authorization").unwrap().to_owned(),
        request.header("x-amz-security-token").map(str::to_owned),
    )
}

/// A profile whose credentials come from a program (`credential_process`): the program's
/// JSON, as the AWS CLI and SDKs read it.
async fn credential_process_profile(
    home: &std::path::Path,
    config: &std::path::Path,
    server: &Server,
) {
    let process = home.join("credentials-process.sh");
    std::fs::write(
        &process,
        concat!(
            "#!/bin/sh\n",
            r#"echo '{"Version": 1, "AccessKeyId": "AKIDFROMPROCESS", "#,
            r#""SecretAccessKey": "process-secret", "SessionToken": "process-session"}'"#,
            "\n",
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &process,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    std::fs::write(
        config,
        format!(
            "[profile dev]\nregion = ap-south-1\n\n[profile tool]\ncredential_process = {}\n",
            process.display()
        ),
    )
    .unwrap();
    let tool = Bedrock::builder(MODEL)
        .base_url(&server.url)
        .profile("tool")
        .build()
        .unwrap();
    let (auth, token) = authorization(&tool, server).await;
    assert!(auth.contains("Credential=AKIDFROMPROCESS/"), "{auth}");
    assert_eq!(token.as_deref(), Some("process-session"));
}

#[test]
fn credentials_come_from_the_environment_the_profile_files_or_an_api_key() {
    let home = std::env::temp_dir().join(format!("bedrock-credentials-{}", std::process::id()));
    std::fs::create_dir_all(home.join(".aws")).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let server =
            Server::always(Reply::json(200, fixture("bedrock/converse_nova_text.json"))).await;
        let model = || Bedrock::builder(MODEL).base_url(&server.url).build();

        // Environment variables, the region from AWS_REGION.
        clear(&home);
        set("AWS_ACCESS_KEY_ID", "AKIDFROMENV");
        set("AWS_SECRET_ACCESS_KEY", "env-secret");
        set("AWS_SESSION_TOKEN", "env-session");
        set("AWS_REGION", "eu-west-1");
        let (auth, token) = authorization(&model().unwrap(), &server).await;
        assert!(
            auth.contains("Credential=AKIDFROMENV/") && auth.contains("/eu-west-1/bedrock/"),
            "{auth}"
        );
        assert_eq!(token.as_deref(), Some("env-session"));

        // A profile of the shared files, named by AWS_PROFILE; the region from
        // AWS_DEFAULT_REGION.
        clear(&home);
        let config = home.join("config");
        let credentials = home.join("credentials");
        std::fs::write(&config, "[profile dev]\nregion = ap-south-1\n").unwrap();
        std::fs::write(
            &credentials,
            "[dev]\naws_access_key_id = AKIDDEVPROFILE\naws_secret_access_key = dev-secret\n\n\
             [other]\naws_access_key_id = AKIDOTHERPROFILE\naws_secret_access_key = other\n",
        )
        .unwrap();
        set("AWS_CONFIG_FILE", &config.display().to_string());
        set(
            "AWS_SHARED_CREDENTIALS_FILE",
            &credentials.display().to_string(),
        );
        set("AWS_PROFILE", "dev");
        set("AWS_DEFAULT_REGION", "us-west-2");
        let (auth, token) = authorization(&model().unwrap(), &server).await;
        assert!(
            auth.contains("Credential=AKIDDEVPROFILE/") && auth.contains("/us-west-2/bedrock/"),
            "{auth}"
        );
        assert_eq!(token, None);
        // The builder's profile wins over AWS_PROFILE.
        let other = Bedrock::builder(MODEL)
            .base_url(&server.url)
            .profile("other")
            .build()
            .unwrap();
        let (auth, _) = authorization(&other, &server).await;
        assert!(auth.contains("Credential=AKIDOTHERPROFILE/"), "{auth}");

        credential_process_profile(&home, &config, &server).await;

        // A Bedrock API key wins over the chain.
        set("AWS_BEARER_TOKEN_BEDROCK", "ABSKbedrock-api-key");
        let (auth, _) = authorization(&model().unwrap(), &server).await;
        assert_eq!(auth, "Bearer ABSKbedrock-api-key");

        // A spec and the environment choose Bedrock too: a region and credentials are set.
        let spec = harness_providers::model_from_spec(
            "bedrock:us.anthropic.claude-sonnet-4-20250514-v1:0",
        )
        .unwrap();
        assert_eq!(
            spec.info().name(),
            "bedrock:us.anthropic.claude-sonnet-4-20250514-v1:0"
        );
        let choice = harness_providers::model_from_env().await.unwrap();
        assert_eq!(choice.model.info().name(), "bedrock:amazon.nova-micro-v1:0");
        assert!(
            choice.reason.contains("AWS_DEFAULT_REGION"),
            "{}",
            choice.reason
        );

        // Nothing at all: the first request says where it looked.
        clear(&home);
        set("AWS_REGION", "us-east-1");
        let requests = server.requests().len();
        let err = model()
            .unwrap()
            .generate(Request::new(&[Message::user("hi")]))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Configuration, "{err}");
        let message = err.to_string();
        for place in [
            "AWS_ACCESS_KEY_ID",
            "AWS_CONFIG_FILE",
            "AWS_WEB_IDENTITY_TOKEN_FILE",
            "instance metadata",
            "AWS_BEARER_TOKEN_BEDROCK",
        ] {
            assert!(message.contains(place), "{place}: {message}");
        }
        assert_eq!(server.requests().len(), requests, "nothing was sent");

        // No region: the builder says so.
        clear(&home);
        let err = Bedrock::builder(MODEL).build().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Configuration);
        assert!(err.to_string().contains("AWS_REGION"), "{err}");
    });
    std::fs::remove_dir_all(&home).ok();
}
