//! The MCP client against the official Python SDK's servers (`pip install mcp`, installed
//! into `target/peers/mcp-py` when absent): streamable HTTP in JSON mode and in SSE mode, and
//! a low-level server that pages `tools/list`.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use harness_core::{CallOptions, ErrorKind};
use harness_tools::mcp::{McpError, McpServer};
use serde_json::{Value, json};

fn python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/peers/mcp-py");
        let python = venv.join("bin/python");
        let ready = Command::new(&python)
            .args(["-c", "import mcp.server.mcpserver, mcp.server.lowlevel"])
            .status()
            .is_ok_and(|s| s.success());
        if !ready {
            let status = Command::new("python3")
                .arg("-m")
                .arg("venv")
                .arg(&venv)
                .status()
                .expect("python3");
            assert!(status.success(), "python3 -m venv failed");
            let status = Command::new(venv.join("bin/pip"))
                .args(["install", "--quiet", "mcp"])
                .status()
                .expect("pip");
            assert!(status.success(), "pip install mcp failed");
        }
        python
    })
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/python")
        .join(name)
}

/// Calls `name` and returns the text of a call that succeeded.
async fn call_text(mcp: &McpServer, name: &str, arguments: Value) -> String {
    let result = mcp.call(name, arguments, CallOptions::new()).await.unwrap();
    assert!(!result.is_error, "{name} failed: {}", result.text());
    result.text()
}

struct Process(std::process::Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn http_server(mode: &str) -> (Process, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(python())
        .arg(script("http_server.py"))
        .args([mode, &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    for _ in 0..150 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (Process(child), format!("http://127.0.0.1:{port}/mcp"))
}

async fn add_over_http(mode: &str) {
    let (_server, url) = http_server(mode).await;
    let mcp = McpServer::http(&url, &[]).unwrap();
    let tools = mcp.list_tools().await.unwrap();
    let add = tools
        .iter()
        .find(|t| t.name == "add")
        .expect("the add tool");
    assert_eq!(add.description, "Add two integers.");
    assert_eq!(add.input_schema["required"], json!(["a", "b"]));
    assert_eq!(call_text(&mcp, "add", json!({"a": 2, "b": 40})).await, "42");
    // Wrong arguments: a call the server marks failed, or a request it refuses.
    match mcp
        .call("add", json!({"a": "two"}), CallOptions::new())
        .await
    {
        Ok(result) => assert!(result.is_error, "{result:?}"),
        Err(err) => {
            assert_eq!(err.kind(), ErrorKind::Mcp, "{err:?}");
            let mcp_error = err.downcast_ref::<McpError>().unwrap();
            assert!(mcp_error.is_refused(), "{err}");
            assert!(mcp_error.message().contains("refused"), "{err}");
        }
    }
    mcp.close().await.unwrap();
}

#[tokio::test]
#[ignore = "needs a real MCP peer from npm or PyPI: run by `cargo xtask e2e`"]
async fn python_sdk_server_in_json_mode() {
    add_over_http("json").await;
}

#[tokio::test]
#[ignore = "needs a real MCP peer from npm or PyPI: run by `cargo xtask e2e`"]
async fn python_sdk_server_in_sse_mode() {
    add_over_http("sse").await;
}

#[tokio::test]
#[ignore = "needs a real MCP peer from npm or PyPI: run by `cargo xtask e2e`"]
async fn a_paged_tools_list_is_followed_to_its_last_page() {
    let python = python().to_string_lossy().into_owned();
    let mcp =
        McpServer::stdio([python, script("paged.py").to_string_lossy().into_owned()]).unwrap();
    let names: Vec<String> = mcp
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["tool_0", "tool_1", "tool_2", "tool_3", "tool_4"]);
    assert_eq!(call_text(&mcp, "tool_3", json!({})).await, "called tool_3");
    mcp.close().await.unwrap();
}

#[tokio::test]
#[ignore = "needs a real MCP peer from npm or PyPI: run by `cargo xtask e2e`"]
async fn server_requests_are_answered_ping_served_and_the_unknown_refused() {
    let mcp = McpServer::stdio([
        "python3".to_owned(),
        script("server_requests.py").to_string_lossy().into_owned(),
    ])
    .unwrap();
    let tools = mcp.list_tools().await.unwrap();
    let answers: serde_json::Value = serde_json::from_str(&tools[0].description).unwrap();
    assert_eq!(
        answers["0"],
        json!({"jsonrpc": "2.0", "id": 0, "result": {}})
    );
    assert_eq!(answers["s1"]["error"]["code"], json!(-32601));
    assert_eq!(answers["s1"]["id"], json!("s1"));
    // A JSON-RPC error to a call is an McpError saying so.
    let err = mcp
        .call("answers", json!({}), CallOptions::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Mcp, "{err:?}");
    assert!(
        err.downcast_ref::<McpError>().unwrap().is_refused(),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "MCP server refused tools/call: no such luck (code -32000)"
    );
    mcp.close().await.unwrap();
}
