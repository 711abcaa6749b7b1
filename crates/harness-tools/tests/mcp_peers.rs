//! The MCP client against real servers from npm: server-filesystem and
//! server-everything over stdio, server-everything over streamable HTTP on 127.0.0.1. The
//! servers are installed into `target/peers/mcp` when absent.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use support::{call, call_with};

use harness_core::agent::Agent;
use harness_core::testing::FunctionModel;
use harness_core::testing::TestModel;
use harness_core::{CallOptions, Ctx, ErrorKind, Toolbox};
use harness_core::{CompletionResponse, Request};
use harness_tools::mcp::{
    ElicitationMode, ElicitationRequest, ElicitationResponse, McpContent, McpError,
    McpNotification, McpServer, Sampling, SamplingRequest,
};
use serde_json::json;

fn peers() -> &'static Path {
    static INSTALLED: OnceLock<PathBuf> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/peers/mcp");
        let marker = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
        if !marker.exists() {
            std::fs::create_dir_all(&dir).unwrap();
            let status = Command::new("npm")
                .args(["install", "--prefix"])
                .arg(&dir)
                .args(["@modelcontextprotocol/server-filesystem", "@modelcontextprotocol/server-everything"])
                .status()
                .expect("npm, to install the MCP servers");
            assert!(
                status.success(),
                "npm install of the MCP servers failed (npm's reason is above); \
                 `cargo xtask e2e` installs them with retries first"
            );
        }
        // Pins every listen() to loopback: server-everything listens on all interfaces.
        std::fs::write(
            dir.join("loopback.cjs"),
            "const net = require('net');\nconst listen = net.Server.prototype.listen;\n\
             net.Server.prototype.listen = function (...args) {\n\
               if (typeof args[0] === 'number' && typeof args[1] !== 'string') args.splice(1, 0, '127.0.0.1');\n\
               if (typeof args[0] === 'object' && args[0] && !args[0].host) args[0].host = '127.0.0.1';\n\
               return listen.apply(this, args);\n};\n",
        )
        .unwrap();
        std::fs::canonicalize(dir).unwrap()
    })
}

fn script(package: &str) -> String {
    peers()
        .join(format!(
            "node_modules/@modelcontextprotocol/{package}/dist/index.js"
        ))
        .to_string_lossy()
        .into_owned()
}

fn sandbox(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("harness-mcp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("hello.txt"), "hello from the sandbox").unwrap();
    std::fs::canonicalize(dir).unwrap()
}

/// server-filesystem over stdio, confined to `dir`.
fn filesystem_server(dir: &Path) -> McpServer {
    McpServer::stdio([
        "node".to_owned(),
        script("server-filesystem"),
        dir.to_string_lossy().into_owned(),
    ])
    .unwrap()
}

#[tokio::test]
#[ignore = "needs a real MCP peer from npm or PyPI: run by `cargo xtask e2e`"]
async fn server_filesystem_over_stdio() {
    let dir = sandbox("fs");
    let server = Arc::new(filesystem_server(&dir).with_roots(vec![dir.clone()]));
    server.connect().await.unwrap();
    server.connect().await.unwrap(); // idempotent
    let info = server.server_info().unwrap();
    assert!(
        ["2025-11-25", "2025-06-18", "2025-03-26"]
            .contains(&info["protocolVersion"].as_str().unwrap())
    );

    let listed = server.list_tools().await.unwrap();
    let read = listed
        .iter()
        .find(|t| t.name == "read_text_file")
        .expect("read_text_file");
    assert!(read.read_only);
    assert_eq!(read.input_schema["type"], json!("object"));
    let write = listed
        .iter()
        .find(|t| t.name == "write_file")
        .expect("write_file");
    assert!(!write.read_only);

    let path = dir.join("hello.txt").to_string_lossy().into_owned();
    let text = call(&server, "read_text_file", json!({"path": path}))
        .await
        .unwrap();
    assert_eq!(text, "hello from the sandbox");

    // Outside its sandbox: an error *result*, marked failed.
    let failed = server
        .call(
            "read_text_file",
            json!({"path": "/etc/hostname"}),
            CallOptions::new(),
        )
        .await
        .unwrap();
    assert!(failed.is_error, "{failed:?}");
    // An unknown tool: a result marked failed, or a request the server refuses.
    match server
        .call("no_such_tool", json!({}), CallOptions::new())
        .await
    {
        Ok(result) => assert!(result.is_error, "{result:?}"),
        Err(err) => {
            assert_eq!(err.kind(), ErrorKind::Mcp, "{err:?}");
            assert!(
                err.downcast_ref::<McpError>().unwrap().is_refused(),
                "{err:?}"
            );
            assert!(err.to_string().contains("refused"), "{err}");
        }
    }

    // The tools, gated unless read-only.
    let tools = server.tools().await.unwrap();
    let gate = |name: &str| {
        tools
            .iter()
            .find(|t| t.spec().name == name)
            .unwrap()
            .spec()
            .requires_approval
    };
    assert!(!gate("read_text_file"));
    assert!(gate("write_file"));

    // The roots request: the server asked for our roots and took them as its allowed dirs.
    let allowed = call(&server, "list_allowed_directories", json!({}))
        .await
        .unwrap();
    assert!(allowed.contains(dir.to_str().unwrap()), "{allowed}");

    server.close().await.unwrap();
    server.close().await.unwrap();
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
#[ignore = "needs a real MCP peer from npm or PyPI: run by `cargo xtask e2e`"]
async fn an_agent_on_test_model_uses_server_filesystem_tools() {
    let dir = sandbox("agent");
    let server = Arc::new(filesystem_server(&dir).with_requires_approval(false));
    let tools = server.tools().await.unwrap();
    let names: Vec<String> = tools.iter().map(|t| t.spec().name.clone()).collect();
    let toolbox = Toolbox::builder().tools(tools).build().unwrap();
    let agent = Agent::builder(
        TestModel::new().with_only_tools(["list_allowed_directories", "list_directory"]),
    )
    .toolbox(toolbox)
    .build()
    .unwrap();
    let state = agent.run("What is in the sandbox?").await.unwrap();
    assert!(state.answered(), "{state:?}");
    let output = state.output_text();
    assert!(output.contains("list_allowed_directories"), "{output}");
    assert!(output.contains(dir.to_str().unwrap()), "{output}");
    assert!(names.len() >= 10, "{names:?}");
    server.close().await.unwrap();
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
#[ignore = "needs a real MCP peer from npm or PyPI: run by `cargo xtask e2e`"]
async fn server_everything_over_stdio_with_its_notifications() {
    let progress = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&progress);
    let server = McpServer::stdio([
        "node".to_owned(),
        script("server-everything"),
        "stdio".to_owned(),
    ])
    .unwrap()
    .with_notifications(move |_server: &str, notification: McpNotification| {
        if let McpNotification::Progress {
            progress, total, ..
        } = notification
        {
            seen.lock().unwrap().push((progress, total));
        }
    });
    let listed = server.list_tools().await.unwrap();
    assert!(listed.iter().any(|t| t.name == "echo"), "{listed:?}");
    let text = call(&server, "echo", json!({"message": "hi there"}))
        .await
        .unwrap();
    assert!(text.contains("hi there"), "{text}");
    // A long call sends progress and log notifications on the way; they are skipped.
    if listed
        .iter()
        .any(|t| t.name == "trigger-long-running-operation")
    {
        let text = call(
            &server,
            "trigger-long-running-operation",
            json!({"duration": 1, "steps": 3}),
        )
        .await
        .unwrap();
        assert!(!text.is_empty());
        // Its progress reached the callback, step by step.
        let progress = progress.lock().unwrap().clone();
        assert!(progress.len() >= 2, "{progress:?}");
        assert!(
            progress.iter().all(|(_, total)| *total == Some(3.0)),
            "{progress:?}"
        );
    }
    server.close().await.unwrap();
}

#[tokio::test]
#[ignore = "needs a real MCP peer from npm or PyPI: run by `cargo xtask e2e`"]
async fn server_everything_elicits_through_the_elicitor_with_defaults_applied() {
    let command = || {
        [
            "node".to_owned(),
            script("server-everything"),
            "stdio".to_owned(),
        ]
    };
    // Without an elicitor the capability is not declared, and the server offers no such tool.
    let plain = McpServer::stdio(command()).unwrap();
    let listed = plain.list_tools().await.unwrap();
    assert!(
        !listed
            .iter()
            .any(|t| t.name == "trigger-elicitation-request")
    );
    plain.close().await.unwrap();

    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&asked);
    let server = McpServer::stdio(command())
        .unwrap()
        .with_requires_approval(false)
        .with_elicitation(move |request: ElicitationRequest| {
            seen.lock().unwrap().push(request.clone());
            async move {
                let mut answer = serde_json::Map::new();
                answer.insert("name".into(), json!("Ada Lovelace"));
                answer.insert("check".into(), json!(true));
                ElicitationResponse::Accept(answer)
            }
        });
    let text = call(&server, "trigger-elicitation-request", json!({}))
        .await
        .unwrap();
    assert!(text.contains("- Name: Ada Lovelace"), "{text}");
    assert!(text.contains("- Agreed to terms: true"), "{text}");
    // Left out by the user, filled in from the schema's defaults.
    assert!(text.contains("- Favorite Integer: 42"), "{text}");
    assert!(text.contains("- Favorite Number: 3.14"), "{text}");
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(
        asked[0].message,
        "Please provide inputs for the following fields:"
    );
    let ElicitationMode::Form { schema } = &asked[0].mode else {
        panic!("a form was asked for: {:?}", asked[0].mode);
    };
    assert_eq!(
        schema["properties"]["firstLine"]["default"],
        "It was a dark and stormy night."
    );
    server.close().await.unwrap();
}

#[tokio::test]
#[ignore = "needs a real MCP peer from npm or PyPI: run by `cargo xtask e2e`"]
async fn server_everything_samples_through_the_clients_model() {
    let model = FunctionModel::new(|request: &Request<'_>| {
        assert_eq!(request.messages[0].text(), "You are a helpful test server.");
        assert_eq!(request.settings.max_tokens, Some(64));
        let prompt = request.messages[1].text().into_owned();
        CompletionResponse::text(format!("echo: {prompt}")).with_model("local-echo")
    });
    let server =
        McpServer::stdio([
            "node".to_owned(),
            script("server-everything"),
            "stdio".to_owned(),
        ])
        .unwrap()
        .with_requires_approval(false)
        .with_sampling(Sampling::new(model).with_approval(|r: &SamplingRequest| {
            r.server.contains("index.js") && r.max_tokens <= 64
        }));
    let text = call(
        &server,
        "trigger-sampling-request",
        json!({"prompt": "2+2?", "maxTokens": 64}),
    )
    .await
    .unwrap();
    assert!(
        text.contains("echo: Resource trigger-sampling-request context: 2+2?"),
        "{text}"
    );
    assert!(text.contains("\"model\": \"local-echo\""), "{text}");
    assert!(text.contains("\"stopReason\": \"endTurn\""), "{text}");
    // Over the approval's limit: the server's call fails with the client's refusal.
    let refused = server
        .call(
            "trigger-sampling-request",
            json!({"prompt": "long", "maxTokens": 500}),
            CallOptions::new(),
        )
        .await;
    let refused = format!("{refused:?}");
    assert!(refused.contains("rejected"), "{refused}");
    server.close().await.unwrap();
}

#[tokio::test]
#[ignore = "needs a real MCP peer from npm or PyPI: run by `cargo xtask e2e`"]
async fn server_everything_resources_and_prompts() {
    let server = McpServer::stdio([
        "node".to_owned(),
        script("server-everything"),
        "stdio".to_owned(),
    ])
    .unwrap();
    let resources = server.list_resources().await.unwrap();
    let document = resources
        .iter()
        .find(|r| r.uri.starts_with("demo://resource/static/document/"))
        .unwrap_or_else(|| panic!("no static document in {resources:?}"));
    let contents = server.read_resource(&document.uri).await.unwrap();
    let McpContent::Resource { uri, text, .. } = &contents[0] else {
        panic!("not a resource: {contents:?}");
    };
    assert_eq!(uri, &document.uri);
    assert!(
        text.as_deref().is_some_and(|t| !t.is_empty()),
        "{contents:?}"
    );
    let templates = server.list_resource_templates().await.unwrap();
    let text_template = templates
        .iter()
        .find(|t| t.uri_template.contains("/dynamic/text/"))
        .unwrap_or_else(|| panic!("no text template in {templates:?}"));
    let made = text_template.uri_template.replace("{resourceId}", "7");
    let contents = server.read_resource(&made).await.unwrap();
    assert!(
        matches!(&contents[0], McpContent::Resource { text: Some(_), .. }),
        "{contents:?}"
    );
    server.subscribe(&document.uri).await.unwrap();
    server.unsubscribe(&document.uri).await.unwrap();

    let prompts = server.list_prompts().await.unwrap();
    let args = prompts
        .iter()
        .find(|p| p.name == "args-prompt")
        .unwrap_or_else(|| panic!("no args-prompt in {prompts:?}"));
    let city = args.arguments.iter().find(|a| a.name == "city").unwrap();
    assert!(city.required);
    let filled = server
        .get_prompt("args-prompt", &[("city", "Paris"), ("state", "IDF")])
        .await
        .unwrap();
    assert_eq!(filled.messages[0].role, "user");
    assert_eq!(
        filled.messages[0].content,
        McpContent::Text("What's weather in Paris, IDF?".into())
    );
    server.close().await.unwrap();
}

#[tokio::test]
#[ignore = "needs a real MCP peer from npm or PyPI: run by `cargo xtask e2e`"]
async fn server_everything_non_text_results_and_timeouts() {
    let server = McpServer::stdio([
        "node".to_owned(),
        script("server-everything"),
        "stdio".to_owned(),
    ])
    .unwrap();
    // An image between two texts: named with its type and size, not dropped.
    let text = call(&server, "get-tiny-image", json!({})).await.unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines[1].starts_with("[image image/png, ") && lines[1].ends_with(" bytes]"),
        "{text}"
    );
    assert!(lines[2].contains("MCP logo"), "{text}");
    let result = server
        .call("get-tiny-image", json!({}), CallOptions::new())
        .await
        .unwrap();
    assert!(!result.is_error);
    assert_eq!(result.images().len(), 1);
    assert_eq!(result.images()[0].media_type(), Some("image/png"));
    // Embedded resources, text and binary.
    let text = call(
        &server,
        "get-resource-reference",
        json!({"resourceType": "Text", "resourceId": 1}),
    )
    .await
    .unwrap();
    assert!(text.contains("\n[resource "), "{text}");
    let text = call(
        &server,
        "get-resource-reference",
        json!({"resourceType": "Blob", "resourceId": 2}),
    )
    .await
    .unwrap();
    assert!(text.contains(" bytes]"), "{text}");
    // Structured content the text already carries is not repeated.
    let text = call(
        &server,
        "get-structured-content",
        json!({"location": "Chicago"}),
    )
    .await
    .unwrap();
    assert_eq!(text.matches("temperature").count(), 1, "{text}");
    // A call longer than its timeout is cut off, typed, and the server stays usable.
    let err = call_with(
        &server,
        "trigger-long-running-operation",
        json!({"duration": 5, "steps": 5}),
        CallOptions::new().with_timeout(Duration::from_millis(500)),
    )
    .await
    .unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    assert!(
        err.downcast_ref::<McpError>().unwrap().is_timeout(),
        "{err:?}"
    );
    let text = call(&server, "echo", json!({"message": "still here"}))
        .await
        .unwrap();
    assert!(text.contains("still here"), "{text}");
    server.close().await.unwrap();
}

struct Node(std::process::Child);

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
#[ignore = "needs a real MCP peer from npm or PyPI: run by `cargo xtask e2e`"]
async fn server_everything_over_streamable_http() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _node = Node(
        Command::new("node")
            .arg("-r")
            .arg(peers().join("loopback.cjs"))
            .arg(script("server-everything"))
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let url = format!("http://127.0.0.1:{port}/mcp");
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let server = Arc::new(McpServer::http(&url, &[("x-test".to_owned(), "1".to_owned())]).unwrap());
    let listed = server.list_tools().await.unwrap();
    assert!(listed.iter().any(|t| t.name == "echo"));
    let text = call(&server, "echo", json!({"message": "over http"}))
        .await
        .unwrap();
    assert!(text.contains("over http"), "{text}");
    let tools = server.tools().await.unwrap();
    let echo = tools.iter().find(|t| t.spec().name == "echo").unwrap();
    let text = echo
        .call(json!({"message": "as a tool"}), Ctx::new())
        .await
        .unwrap();
    assert!(text.text().contains("as a tool"));
    server.close().await.unwrap();
}
