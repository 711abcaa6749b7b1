//! Durable runs against a real Restate server (`@restatedev/restate-server` from npm,
//! installed into `target/peers/restate` when absent), with workers started as separate
//! processes and killed with SIGKILL, and a loopback model that counts its requests.
//!
//! Run by `cargo xtask e2e-durable` (`--ignored`); a server that cannot be installed or
//! started fails the suite.

#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation
)]

use std::net::TcpListener as StdListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use harness_core::{Agent, AgentEvent, ToolError, tool};
use harness_durable::{DurableAgent, DurableGraph, register, serve};
use harness_graph::{Graph, GraphState, Place};
use harness_providers::OpenAi;
use harness_tools::mcp::McpServer;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

// ---------------------------------------------------------------------------------------
// The worker: this test binary run again with DURABLE_WORKER set
// ---------------------------------------------------------------------------------------

/// Append a line to the run's log file.
#[tool]
fn append_line(line: String) -> Result<String, ToolError> {
    use std::io::Write as _;
    // Outside a worker (the benchmark's in-process runs) there is no log to write.
    let Ok(path) = std::env::var("DURABLE_LOG") else {
        return Ok(format!("appended {line}"));
    };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| ToolError::failed(e.to_string()))?;
    writeln!(file, "{line}").map_err(|e| ToolError::failed(e.to_string()))?;
    Ok(format!("appended {line}"))
}

/// Ask which account to bill.
#[tool]
fn pick_account() -> Result<String, ToolError> {
    Err(ToolError::needs_human("Which account?"))
}

/// Send money to a payee.
#[tool(requires_approval)]
fn wire(amount_usd: u64) -> String {
    format!("sent ${amount_usd}")
}

/// The graph's state: the nodes that ran, in merge order.
#[derive(Debug, Clone, Default, PartialEq, GraphState, Serialize, Deserialize)]
struct Flow {
    #[reducer(concat)]
    visited: Vec<String>,
}

/// Appends `line` to the worker's log file.
fn log_line(line: &str) {
    use std::io::Write as _;
    let path = std::env::var("DURABLE_LOG").unwrap();
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    writeln!(file, "{line}").unwrap();
}

/// `a` and `b` in the first wave, `c` after both; `b` waits while `<log>.hold` exists.
fn flow_graph() -> harness_graph::Executor<Flow> {
    let mut g = Graph::<Flow>::new();
    for (name, place) in [("a", Place::START), ("b", Place::START), ("c", Place::END)] {
        g.add_async(name, place, move |mut s: Flow| async move {
            log_line(name);
            let hold = format!("{}.hold", std::env::var("DURABLE_LOG").unwrap());
            while name == "b" && Path::new(&hold).exists() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            s.visited.push(name.to_owned());
            Ok::<_, harness_core::Error>(s)
        })
        .unwrap();
    }
    // A plain edge: the `Edge` returned is only for `.when`/`.loop_back`.
    g.connect("a", "c");
    g.connect("b", "c");
    g.build().unwrap()
}

#[test]
#[ignore = "the worker process of the Restate suite, started by the tests"]
fn durable_worker() {
    let Ok(service) = std::env::var("DURABLE_WORKER") else {
        return;
    };
    let model_url = std::env::var("DURABLE_MODEL").unwrap();
    let port: u16 = std::env::var("DURABLE_PORT").unwrap().parse().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async move {
        let model = OpenAi::builder("mock")
            .api_key("test")
            .base_url(model_url)
            .build()
            .unwrap();
        let mut builder = Agent::builder(model)
            .tool(AppendLine)
            .tool(Wire)
            .tool(PickAccount);
        // server-everything over stdio, its elicitations routed to the run.
        if let Ok(script) = std::env::var("DURABLE_MCP") {
            let server = McpServer::stdio(["node".to_owned(), script])
                .unwrap()
                .with_requires_approval(false)
                .with_run_elicitation();
            let tools = server.tools().await.unwrap();
            builder = builder.tools(
                tools
                    .into_iter()
                    .filter(|t| t.spec().name == "trigger-elicitation-request"),
            );
        }
        let agent = builder.build().unwrap();
        // Every event the run reports, a line each, beside the tool's log.
        let events = format!("{}.events", std::env::var("DURABLE_LOG").unwrap());
        let definition = DurableAgent::new(service.clone(), agent)
            .unwrap()
            .with_inactivity_timeout(Duration::from_secs(2))
            .with_events(move |session, event| {
                use std::io::Write as _;
                let line = match event {
                    AgentEvent::StepStarted { step } => format!("{session} step {step}"),
                    AgentEvent::ToolStarted { name, .. } => format!("{session} started {name}"),
                    AgentEvent::ToolFinished { name, .. } => format!("{session} finished {name}"),
                    AgentEvent::TextDelta(text) => format!("{session} text {text}"),
                    other => format!("{session} {other:?}"),
                };
                let mut file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&events)
                    .unwrap();
                writeln!(file, "{line}").unwrap();
            })
            .definition();
        let graph = DurableGraph::new(format!("{service}Graph"), flow_graph())
            .unwrap()
            .definition();
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap();
        eprintln!("worker listening on {port}");
        serve(listener, [definition, graph]).await;
    });
    std::process::exit(0);
}

// ---------------------------------------------------------------------------------------
// The Restate server
// ---------------------------------------------------------------------------------------

struct Server {
    ingress: String,
    admin: String,
    _process: KillOnDrop,
}

struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn target() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target")
}

/// The restate-server binary, installed from npm into `target/peers/restate` when absent
/// (`cargo xtask e2e-durable` installs the same version first, retrying a failed download).
fn restate_server_binary() -> PathBuf {
    let dir = target().join("peers/restate");
    let find = || {
        std::fs::read_dir(dir.join("node_modules/@restatedev"))
            .ok()?
            .filter_map(Result::ok)
            .map(|entry| entry.path().join("bin/restate-server"))
            .find(|path| path.exists())
    };
    if let Some(binary) = find() {
        return binary;
    }
    std::fs::create_dir_all(&dir).unwrap();
    let status = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--prefix"])
        .arg(&dir)
        .arg("@restatedev/restate-server@1.7")
        .env("SCARF_ANALYTICS", "false")
        .status()
        .expect("npm, to install @restatedev/restate-server");
    assert!(
        status.success(),
        "npm install @restatedev/restate-server failed (npm's reason is above); \
         `cargo xtask e2e-durable` installs it with retries first"
    );
    find().expect("the restate-server binary after npm install")
}

fn free_port() -> u16 {
    StdListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let binary = restate_server_binary();
        let (ingress, admin, node) = (free_port(), free_port(), free_port());
        // Earlier runs' data (about 220 MB each) goes; this run's stays for a post-mortem.
        for entry in std::fs::read_dir(target().join("tmp")).into_iter().flatten().flatten() {
            if entry.file_name().to_string_lossy().starts_with("restate-") {
                let _ = std::fs::remove_dir_all(entry.path());
                let _ = std::fs::remove_file(entry.path());
            }
        }
        let data = target().join(format!("tmp/restate-{}", std::process::id()));
        std::fs::create_dir_all(&data).unwrap();
        let log = std::fs::File::create(data.with_extension("log")).unwrap();
        // A static is never dropped: a watcher stops the server within a second of this
        // test process ending, so no server outlives the suite.
        let watched = "\"$@\" & server=$!; while kill -0 \"$WATCH\" 2>/dev/null; do sleep 1; done; kill -9 $server";
        let child = Command::new("sh")
            .args(["-c", watched, "sh"])
            .arg(binary)
            .env("WATCH", std::process::id().to_string())
            .env(
                "RESTATE_INGRESS__BIND_ADDRESS",
                format!("127.0.0.1:{ingress}"),
            )
            .env("RESTATE_ADMIN__BIND_ADDRESS", format!("127.0.0.1:{admin}"))
            .env("RESTATE_BIND_ADDRESS", format!("127.0.0.1:{node}"))
            .env(
                "RESTATE_ADVERTISED_ADDRESS",
                format!("http://127.0.0.1:{node}/"),
            )
            .env("RESTATE_DISABLE_TELEMETRY", "true")
            .env("RESTATE_ADMIN__DISABLE_WEB_UI", "true")
            .args([
                "--node-name",
                "deepharness",
                "--no-logo",
                "--listen-mode",
                "tcp",
            ])
            .args([
                "--default-num-partitions",
                "2",
                "--log-disable-ansi-codes",
                "true",
            ])
            .arg("--base-dir")
            .arg(&data)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("restate-server starts");
        let server = Server {
            ingress: format!("http://127.0.0.1:{ingress}"),
            admin: format!("http://127.0.0.1:{admin}"),
            _process: KillOnDrop(child),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        let ready =
            |url: String| std::net::TcpStream::connect(url.trim_start_matches("http://")).is_ok();
        while !(ready(server.admin.clone()) && ready(server.ingress.clone())) {
            assert!(
                Instant::now() < deadline,
                "restate-server did not start within 60 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        // The listeners are up a moment before the node accepts work.
        std::thread::sleep(Duration::from_secs(1));
        server
    })
}

// ---------------------------------------------------------------------------------------
// Workers
// ---------------------------------------------------------------------------------------

struct Worker {
    child: Child,
}

impl Worker {
    /// Starts a worker process serving `service` on `port`, and registers it.
    async fn start(service: &str, port: u16, model: &str, log: &Path) -> Self {
        Self::start_with(service, port, model, log, &[]).await
    }

    /// As [`Worker::start`], with more environment for the worker.
    async fn start_with(
        service: &str,
        port: u16,
        model: &str,
        log: &Path,
        env: &[(&str, String)],
    ) -> Self {
        let child = Command::new(std::env::current_exe().unwrap())
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .args([
                "durable_worker",
                "--exact",
                "--ignored",
                "--nocapture",
                "-q",
            ])
            .env("DURABLE_WORKER", service)
            .env("DURABLE_PORT", port.to_string())
            .env("DURABLE_MODEL", model)
            .env("DURABLE_LOG", log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "the worker did not listen");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let url = format!("http://127.0.0.1:{port}");
        register(&server().admin, &url).await.unwrap();
        Self { child }
    }

    fn kill(mut self) {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).unwrap()),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------------------
// The loopback model: OpenAI chat completions, scripted per test
// ---------------------------------------------------------------------------------------

type Script = dyn Fn(&Value) -> Reply + Send + Sync;

/// What the model does with one request.
enum Reply {
    Text(String),
    Call(&'static str, Value, &'static str),
    /// Never answers (the connection stays open).
    Hang,
    /// Fails with this status (and `Retry-After: 0`, so the client retries at once).
    Status(u16),
}

struct Model {
    url: String,
    requests: Arc<Mutex<Vec<Value>>>,
}

impl Model {
    async fn start(
        delay: Duration,
        script: impl Fn(&Value) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (seen, script): (_, Arc<Script>) = (Arc::clone(&requests), Arc::new(script));
        tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let (seen, script) = (Arc::clone(&seen), Arc::clone(&script));
                tokio::spawn(async move {
                    let Some(body) = read_request(&mut socket).await else {
                        return;
                    };
                    seen.lock().unwrap().push(body.clone());
                    tokio::time::sleep(delay).await;
                    let reply = match script(&body) {
                        Reply::Hang => {
                            tokio::time::sleep(Duration::from_secs(3600)).await;
                            return;
                        }
                        Reply::Status(code) => {
                            let body = r#"{"error": {"message": "scripted failure", "type": "server_error"}}"#;
                            let head = format!(
                                "HTTP/1.1 {code} Scripted\r\ncontent-type: application/json\r\nretry-after: 0\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                                body.len()
                            );
                            let _ = socket.write_all(head.as_bytes()).await;
                            let _ = socket.write_all(body.as_bytes()).await;
                            return;
                        }
                        Reply::Text(text) => {
                            completion(json!({"role": "assistant", "content": text}), "stop")
                        }
                        Reply::Call(name, arguments, id) => completion(
                            json!({"role": "assistant", "content": null, "tool_calls": [{
                                "id": id, "type": "function",
                                "function": {"name": name, "arguments": arguments.to_string()}}]}),
                            "tool_calls",
                        ),
                    };
                    // A streamed request (a worker watching its events streams the model)
                    // gets the answer as OpenAI's SSE chunks.
                    let (kind, reply) = if body["stream"] == json!(true) {
                        ("text/event-stream", sse(&reply))
                    } else {
                        ("application/json", reply.to_string())
                    };
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        reply.len()
                    );
                    let _ = socket.write_all(head.as_bytes()).await;
                    let _ = socket.write_all(reply.as_bytes()).await;
                });
            }
        });
        Self { url, requests }
    }

    fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }
}

/// `completion` as OpenAI streams it: the text a word at a time (or the tool call whole),
/// the finish reason, the usage, `[DONE]`.
fn sse(completion: &Value) -> String {
    let choice = &completion["choices"][0];
    let message = &choice["message"];
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0,
               "model": "mock",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut chunks = Vec::new();
    if let Some(text) = message["content"].as_str() {
        for piece in text.split_inclusive(' ') {
            chunks.push(chunk(
                json!({"role": "assistant", "content": piece}),
                Value::Null,
            ));
        }
    }
    if let Some(calls) = message["tool_calls"].as_array() {
        let calls: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut c = c.clone();
                c["index"] = json!(i);
                c
            })
            .collect();
        chunks.push(chunk(
            json!({"role": "assistant", "tool_calls": calls}),
            Value::Null,
        ));
    }
    chunks.push(chunk(json!({}), choice["finish_reason"].clone()));
    chunks.push(
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0,
                       "model": "mock", "choices": [], "usage": completion["usage"]}),
    );
    let mut body = String::new();
    for chunk in &chunks {
        body.push_str("data: ");
        body.push_str(&chunk.to_string());
        body.push_str("\n\n");
    }
    body.push_str("data: [DONE]\n\n");
    body
}

fn completion(message: Value, finish_reason: &str) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "mock",
           "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
           "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
}

async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<Value> {
    let mut buffer = Vec::new();
    let mut chunk = [0_u8; 8192];
    loop {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
        let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&buffer[..end]).to_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        if buffer.len() >= end + 4 + length {
            return serde_json::from_slice(&buffer[end + 4..end + 4 + length]).ok();
        }
    }
}

/// A model that asks to wire `amount` (call `id`), then reports the tool's result.
async fn paying_model(amount: u64, id: &'static str) -> Model {
    Model::start(Duration::ZERO, move |body| {
        if last(body)["role"] == "tool" {
            Reply::Text(format!(
                "result: {}",
                last(body)["content"].as_str().unwrap_or("")
            ))
        } else {
            Reply::Call("wire", json!({"amount_usd": amount}), id)
        }
    })
    .await
}

/// The last message of a chat request.
fn last(body: &Value) -> &Value {
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .unwrap_or(&Value::Null)
}

// ---------------------------------------------------------------------------------------
// Ingress
// ---------------------------------------------------------------------------------------

fn client() -> reqwest::Client {
    harness_providers::rest::client_builder()
        .unwrap()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

async fn post(path: &str, body: Value, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut request = client().post(format!("{}/{path}", server().ingress));
    // A handler that takes nothing is called with no body.
    if !body.is_null() {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// Starts `run` on `session` without waiting; its invocation id.
async fn send_run(service: &str, session: &str, message: &str, key: &str) -> String {
    let (status, answer) = post(
        &format!("restate/send/{service}/{session}/run"),
        json!({"message": message}),
        &[("idempotency-key", key)],
    )
    .await;
    assert!(status == 202 || status == 200, "{status} {answer}");
    answer["invocationId"].as_str().unwrap().to_owned()
}

async fn attach(invocation: &str) -> (u16, Value) {
    let response = client()
        .get(format!(
            "{}/restate/invocation/{invocation}/attach",
            server().ingress
        ))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// The calls the run on `service`/`session` waits on, once there are any.
async fn wait_pending(service: &str, session: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let pending = post(
            &format!("restate/call/{service}/{session}/pending"),
            Value::Null,
            &[],
        )
        .await
        .1;
        if pending.as_array().is_some_and(|p| !p.is_empty()) {
            return pending;
        }
        assert!(Instant::now() < deadline, "the run never paused");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// An invocation's status as the admin API's SQL reports it (`running`, `suspended`, ..).
async fn invocation_status(invocation: &str) -> String {
    let response = client()
        .post(format!("{}/query", server().admin))
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(json!({"query": format!("select status from sys_invocation where id = '{invocation}'")}).to_string())
        .send()
        .await
        .unwrap();
    let answer: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap_or_default();
    answer["rows"][0]["status"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn wait_for(what: &str, within: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn log_file(name: &str) -> PathBuf {
    let path = target().join(format!("tmp/durable-{name}-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(format!("{}.events", path.display()));
    path
}

// ---------------------------------------------------------------------------------------
// The suite
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs restate-server; run by cargo xtask e2e-durable"]
async fn a_worker_killed_mid_run_resumes_on_another_and_nothing_runs_twice() {
    let hang = Arc::new(AtomicBool::new(true));
    let blocking = Arc::clone(&hang);
    let model = Model::start(Duration::ZERO, move |body| {
        if last(body)["role"] == "tool" {
            if blocking.load(Ordering::SeqCst) {
                Reply::Hang
            } else {
                Reply::Text(format!(
                    "done: {}",
                    last(body)["content"].as_str().unwrap_or("")
                ))
            }
        } else {
            Reply::Call("append_line", json!({"line": "hello"}), "c1")
        }
    })
    .await;
    let log = log_file("crash");
    let port = free_port();
    let worker = Worker::start("Crash", port, &model.url, &log).await;
    let invocation = send_run("Crash", "s1", "write hello", "crash-1").await;
    // The second model call is in flight: the tool has run, its result is journaled.
    wait_for("the second model call", Duration::from_secs(30), || {
        model.requests().len() >= 2
    })
    .await;
    worker.kill();
    hang.store(false, Ordering::SeqCst);
    let _worker = Worker::start("Crash", port, &model.url, &log).await;
    let (status, reply) = attach(&invocation).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["output"], json!("done: appended hello"), "{reply}");
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "hello\n",
        "the tool ran once"
    );
    let requests = model.requests();
    let first_calls = requests
        .iter()
        .filter(|b| last(b)["role"] == "user")
        .count();
    assert_eq!(
        first_calls, 1,
        "the first model call was made once: {requests:#?}"
    );
    assert_eq!(requests.len(), 3, "only the call in flight was made again");
    // Events come from the steps that ran, never from a replay: the tool's once, the
    // second model call's twice (it was in flight when the worker died).
    let events = std::fs::read_to_string(format!("{}.events", log.display())).unwrap();
    let (texts, others): (Vec<&str>, Vec<&str>) =
        events.lines().partition(|l| l.starts_with("s1 text "));
    assert_eq!(
        others,
        [
            "s1 step 1",
            "s1 started append_line",
            "s1 finished append_line",
            "s1 step 2",
            "s1 step 2"
        ],
        "{events}"
    );
    // The answer's text as it streamed, a word at a time.
    let streamed: Vec<&str> = texts.iter().map(|l| &l["s1 text ".len()..]).collect();
    assert_eq!(streamed, ["done: ", "appended ", "hello"], "{events}");
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs restate-server; run by cargo xtask e2e-durable"]
async fn a_failure_past_the_clients_retries_is_retried_as_a_step_and_a_refusal_ends_the_run() {
    // Six 503s: the HTTP client's four attempts fail, the step fails, Restate runs it again,
    // and its third request gets through. A 401 is not retried: the run ends.
    let seen = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&seen);
    let model = Model::start(Duration::ZERO, move |body| {
        let n = count.fetch_add(1, Ordering::SeqCst);
        if last(body)["content"] == "refused" {
            Reply::Status(401)
        } else if n < 6 {
            Reply::Status(503)
        } else {
            Reply::Text("through".into())
        }
    })
    .await;
    let log = log_file("retry");
    let _worker = Worker::start("Retry", free_port(), &model.url, &log).await;
    let invocation = send_run("Retry", "s", "go", "retry-1").await;
    let (status, reply) = attach(&invocation).await;
    assert_eq!(
        (status, &reply["output"]),
        (200, &json!("through")),
        "{reply}"
    );
    assert_eq!(
        seen.load(Ordering::SeqCst),
        7,
        "four attempts, then three in the retried step"
    );

    let invocation = send_run("Retry", "t", "refused", "retry-2").await;
    let (status, reply) = attach(&invocation).await;
    assert_eq!(status, 500, "{reply}");
    assert!(reply.to_string().contains("401"), "{reply}");
    assert_eq!(seen.load(Ordering::SeqCst), 8, "a refusal is asked once");
    // The session keeps the run so far: the user's message is in its transcript.
    let (_, state) = post("restate/call/Retry/t/state", Value::Null, &[]).await;
    assert_eq!(state["messages"][0]["content"], json!("refused"), "{state}");
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs restate-server; run by cargo xtask e2e-durable"]
async fn an_approval_suspends_the_run_and_resumes_it_on_a_new_worker() {
    let model = paying_model(5, "w1").await;
    let log = log_file("approve");
    let port = free_port();
    let worker = Worker::start("Approve", port, &model.url, &log).await;
    for (session, approved, expected) in [
        ("yes", true, "result: sent $5"),
        ("no", false, "result: Denied by the user."),
    ] {
        let invocation = send_run("Approve", session, "pay", &format!("approve-{session}")).await;
        // The run waits on a human: `pending` lists the gated call with its arguments.
        let pending = wait_pending("Approve", session).await;
        assert_eq!(pending[0]["call_id"], json!("w1"), "{pending}");
        assert_eq!(
            pending[0]["arguments"],
            json!({"amount_usd": 5}),
            "{pending}"
        );
        if approved {
            // Past the inactivity timeout the run is suspended; the approval wakes it.
            tokio::time::sleep(Duration::from_secs(3)).await;
        }
        let (status, settled) = post(
            &format!("restate/call/Approve/{session}/approve"),
            json!({"call_id": "w1", "approved": approved}),
            &[],
        )
        .await;
        assert_eq!((status, &settled), (200, &json!(1)));
        let (status, reply) = attach(&invocation).await;
        assert_eq!(status, 200, "{reply}");
        assert_eq!(reply["output"], json!(expected), "{reply}");
        assert_eq!(reply["stop_reason"], json!("answer"), "{reply}");
    }
    // An approval for a call no run waits on is refused, naming what waits.
    let (status, refused) = post(
        "restate/call/Approve/yes/approve",
        json!({"call_id": "zzz", "approved": true}),
        &[],
    )
    .await;
    assert_eq!(status, 404, "{refused}");
    assert!(refused.to_string().contains("no call zzz"), "{refused}");
    drop(worker);
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs restate-server; run by cargo xtask e2e-durable"]
async fn a_tools_question_waits_for_its_answer_which_becomes_the_calls_result() {
    let model = Model::start(Duration::ZERO, |body| {
        if last(body)["role"] == "tool" {
            Reply::Text(format!(
                "billing {}",
                last(body)["content"].as_str().unwrap_or("")
            ))
        } else {
            Reply::Call("pick_account", json!({}), "q1")
        }
    })
    .await;
    let log = log_file("question");
    let _worker = Worker::start("Question", free_port(), &model.url, &log).await;
    let invocation = send_run("Question", "s", "bill it", "question-1").await;
    let pending = wait_pending("Question", "s").await;
    assert_eq!(pending[0]["question"], json!("Which account?"), "{pending}");
    assert_eq!(
        pending[0]["arguments"],
        Value::Null,
        "a question, not an approval"
    );
    // An approval is not an answer: refused, the run still waits.
    let (status, _) = post(
        "restate/call/Question/s/approve",
        json!({"call_id": "q1", "approved": true}),
        &[],
    )
    .await;
    assert_eq!(status, 404);
    let (status, settled) = post(
        "restate/call/Question/s/answer",
        json!({"call_id": "q1", "answer": "ops-7"}),
        &[],
    )
    .await;
    assert_eq!((status, &settled), (200, &json!(1)));
    let (status, reply) = attach(&invocation).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["output"], json!("billing ops-7"), "{reply}");
}

/// server-everything's entry script, installed from npm into `target/peers/mcp` (where the
/// MCP suites of harness-tools install it) when absent.
fn server_everything() -> String {
    let dir = target().join("peers/mcp");
    let script = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if !script.exists() {
        std::fs::create_dir_all(&dir).unwrap();
        let status = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&dir)
            .args([
                "@modelcontextprotocol/server-filesystem",
                "@modelcontextprotocol/server-everything",
            ])
            .status()
            .expect("npm, to install the MCP servers");
        assert!(
            status.success(),
            "npm install of server-everything failed (npm's reason is above); \
             `cargo xtask e2e-durable` installs it with retries first"
        );
    }
    script.to_string_lossy().into_owned()
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs restate-server; run by cargo xtask e2e-durable"]
async fn an_mcp_elicitation_waits_durably_and_the_call_runs_again_with_the_answer() {
    let model = Model::start(Duration::ZERO, |body| {
        if last(body)["role"] == "tool" {
            Reply::Text(format!(
                "got: {}",
                last(body)["content"].as_str().unwrap_or("")
            ))
        } else {
            Reply::Call("trigger-elicitation-request", json!({}), "e1")
        }
    })
    .await;
    let log = log_file("elicit");
    let port = free_port();
    let env = [("DURABLE_MCP", server_everything())];
    let worker = Worker::start_with("Elicit", port, &model.url, &log, &env).await;
    let invocation = send_run("Elicit", "s", "sign me up", "elicit-1").await;
    // The server's form, asked during the call, waits for a person.
    let pending = wait_pending("Elicit", "s").await;
    let asked = &pending[0]["asked"];
    assert_eq!(
        asked["message"],
        json!("Please provide inputs for the following fields:"),
        "{pending}"
    );
    assert!(
        asked["schema"]["properties"]["name"].is_object(),
        "{pending}"
    );
    // Days later, on another worker.
    worker.kill();
    let _worker = Worker::start_with("Elicit", port, &model.url, &log, &env).await;
    let (status, settled) = post(
        "restate/call/Elicit/s/answer",
        json!({"call_id": "e1", "fields": {"name": "Ada Lovelace", "check": true}}),
        &[],
    )
    .await;
    assert_eq!((status, &settled), (200, &json!(1)));
    let (status, reply) = attach(&invocation).await;
    assert_eq!(status, 200, "{reply}");
    let output = reply["output"].as_str().unwrap_or_default();
    // The call ran again and the server got the answer, the form's defaults filled in.
    assert!(output.contains("- Name: Ada Lovelace"), "{output}");
    assert!(output.contains("- Favorite Integer: 42"), "{output}");
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs restate-server; run by cargo xtask e2e-durable"]
async fn a_paused_run_survives_its_worker_and_an_approval_resumes_it_elsewhere() {
    let model = paying_model(7, "w7").await;
    let log = log_file("survive");
    let port = free_port();
    let worker = Worker::start("Survive", port, &model.url, &log).await;
    let invocation = send_run("Survive", "s", "pay", "survive-1").await;
    wait_pending("Survive", "s").await;
    // Past the worker's inactivity timeout (2 s) Restate suspends the run: no worker holds it.
    let deadline = Instant::now() + Duration::from_secs(30);
    while invocation_status(&invocation).await != "suspended" {
        assert!(
            Instant::now() < deadline,
            "the waiting run was never suspended"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    worker.kill();
    let _worker = Worker::start("Survive", port, &model.url, &log).await;
    let (status, _) = post(
        "restate/call/Survive/s/approve",
        json!({"call_id": "w7", "approved": true}),
        &[],
    )
    .await;
    assert_eq!(status, 200);
    let (status, reply) = attach(&invocation).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["output"], json!("result: sent $7"), "{reply}");
    assert_eq!(
        model.requests().len(),
        2,
        "the first model call was not made again"
    );
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs restate-server; run by cargo xtask e2e-durable"]
async fn calls_on_one_session_run_in_order_and_sessions_run_in_parallel() {
    let model = Model::start(Duration::from_millis(500), move |body| {
        Reply::Text(format!(
            "echo: {}",
            last(body)["content"].as_str().unwrap_or("")
        ))
    })
    .await;
    let log = log_file("sessions");
    let _worker = Worker::start("Sessions", free_port(), &model.url, &log).await;

    // Two calls on one session at once: one after the other, both in the transcript.
    let first = send_run("Sessions", "one", "first", "one-1").await;
    let second = send_run("Sessions", "one", "second", "one-2").await;
    assert_eq!(attach(&first).await.1["output"], json!("echo: first"));
    let (_, reply) = attach(&second).await;
    assert_eq!(reply["output"], json!("echo: second"));
    assert_eq!(reply["messages"], json!(4));
    let (_, state) = post("restate/call/Sessions/one/state", Value::Null, &[]).await;
    let texts: Vec<&str> = state["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(texts, ["first", "echo: first", "second", "echo: second"]);

    // A hundred sessions at once: each model call takes 500 ms; one after the other would
    // take 50 s.
    let started = Instant::now();
    let mut invocations = Vec::new();
    for i in 0..100 {
        invocations.push(
            send_run(
                "Sessions",
                &format!("s{i}"),
                &format!("hi {i}"),
                &format!("par-{i}"),
            )
            .await,
        );
    }
    for (i, invocation) in invocations.iter().enumerate() {
        let (status, reply) = attach(invocation).await;
        assert_eq!(
            (status, &reply["output"]),
            (200, &json!(format!("echo: hi {i}")))
        );
    }
    let took = started.elapsed();
    assert!(took < Duration::from_secs(25), "100 sessions took {took:?}");
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs restate-server; run by cargo xtask e2e-durable"]
async fn a_graph_killed_mid_wave_resumes_without_running_finished_nodes_again() {
    let model = Model::start(Duration::ZERO, |_| Reply::Text("unused".into())).await;
    let log = log_file("graph");
    let hold = PathBuf::from(format!("{}.hold", log.display()));
    std::fs::write(&hold, "").unwrap();
    let port = free_port();
    let worker = Worker::start("Graphs", port, &model.url, &log).await;
    let (status, answer) = post(
        "restate/send/GraphsGraph/run",
        json!({"visited": []}),
        &[("idempotency-key", "graph-1")],
    )
    .await;
    assert_eq!(status, 202, "{answer}");
    let invocation = answer["invocationId"].as_str().unwrap().to_owned();
    // `a` finished and was journaled; `b`, in the same wave, is in flight.
    let read = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_for("node b to start", Duration::from_secs(30), || {
        read().contains("b\n")
    })
    .await;
    worker.kill();
    std::fs::remove_file(&hold).unwrap();
    let _worker = Worker::start("Graphs", port, &model.url, &log).await;
    let (status, state) = attach(&invocation).await;
    assert_eq!(status, 200, "{state}");
    assert_eq!(state, json!({"visited": ["a", "b", "c"]}));
    // `a` ran once; `b` twice (it was in flight when the worker died); `c` once.
    assert_eq!(read(), "a\nb\nb\nc\n");
}

// ---------------------------------------------------------------------------------------
// The benchmark (cargo xtask bench durable): skipped unless DURABLE_BENCH is set
// ---------------------------------------------------------------------------------------

/// A model answering after `delay`: to "hi", "hello"; else a call of `append_line`, then
/// the tool's result as text.
async fn slow_model(delay: Duration) -> Model {
    Model::start(delay, |body| {
        if last(body)["content"] == "hi" {
            Reply::Text("hello".into())
        } else if last(body)["role"] == "tool" {
            Reply::Text(format!(
                "done: {}",
                last(body)["content"].as_str().unwrap_or("")
            ))
        } else {
            Reply::Call("append_line", json!({"line": "x"}), "b1")
        }
    })
    .await
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// A line of /proc/<pid>/status, in kB.
fn status_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "the durable benchmark; run by cargo xtask bench durable"]
async fn benchmark() {
    if std::env::var("DURABLE_BENCH").is_err() {
        return;
    }
    let env = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (runs, concurrent) = (
        env("DURABLE_BENCH_RUNS", 20),
        env("DURABLE_BENCH_CONCURRENT", 1000),
    );
    let delay = Duration::from_millis(env("DURABLE_BENCH_DELAY_MS", 100) as u64);
    let model = slow_model(delay).await;
    let log = log_file("bench");

    // The same runs in process, without Restate: one step ("hi": the model answers), and
    // three (model, tool, model).
    let agent = Agent::builder(
        OpenAi::builder("mock")
            .api_key("test")
            .base_url(model.url.clone())
            .build()
            .unwrap(),
    )
    .tool(AppendLine)
    .build()
    .unwrap();
    let mut plain = (Vec::new(), Vec::new());
    for _ in 0..runs {
        for (message, samples, expected) in [
            ("hi", &mut plain.0, "hello"),
            ("go", &mut plain.1, "done: appended x"),
        ] {
            let started = Instant::now();
            let state = agent.run(message).await.unwrap();
            samples.push(started.elapsed());
            assert_eq!(state.output_text(), expected);
        }
    }

    let worker = Worker::start("Bench", free_port(), &model.url, &log).await;
    let mut durable = (Vec::new(), Vec::new());
    for i in 0..runs {
        for (message, samples, expected) in [
            ("hi", &mut durable.0, "hello"),
            ("go", &mut durable.1, "done: appended x"),
        ] {
            let started = Instant::now();
            let (status, reply) = post(
                &format!("restate/call/Bench/seq-{message}-{i}/run"),
                json!({"message": message}),
                &[],
            )
            .await;
            samples.push(started.elapsed());
            assert_eq!((status, &reply["output"]), (200, &json!(expected)));
        }
    }

    let (completed, took) = concurrent_runs(concurrent).await;
    let pid = worker.child.id();
    let (peak, rss) = (status_kb(pid, "VmHWM:"), status_kb(pid, "VmRSS:"));

    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (plain1, plain3) = (median(plain.0), median(plain.1));
    let (durable1, durable3) = (median(durable.0), median(durable.1));
    // Three steps cost two more than one: what two steps add, halved, is one step's cost;
    // the rest of the one-step run's extra is the invocation's own (ingress, start, end).
    let step = (ms(durable3) - ms(plain3) - (ms(durable1) - ms(plain1))) / 2.0;
    let invocation = ms(durable1) - ms(plain1) - step;
    println!(
        "\n| measure (model answers after {} ms) | value |\n| --- | --- |",
        delay.as_millis()
    );
    println!(
        "| two-step run (model, tool, model) in process, median of {runs} | {:.1} ms |",
        ms(plain3)
    );
    println!(
        "| the same run durable, called over the ingress, median of {runs} | {:.1} ms |",
        ms(durable3)
    );
    println!("| ratio | {:.3}x |", ms(durable3) / ms(plain3));
    println!(
        "| one-step run in process / durable | {:.1} ms / {:.1} ms |",
        ms(plain1),
        ms(durable1)
    );
    println!("| journal cost per step (a model or tool call) | {step:.1} ms |");
    println!("| the invocation's own cost (ingress, start, state, end) | {invocation:.1} ms |");
    println!(
        "| {concurrent} concurrent durable two-step runs, one node, one worker | {completed} completed in {:.1} s, {:.0} runs/s |",
        took.as_secs_f64(),
        completed as f64 / took.as_secs_f64()
    );
    println!(
        "| worker memory after them | {:.1} MB peak RSS, {:.1} MB now |",
        peak as f64 / 1024.0,
        rss as f64 / 1024.0
    );
    assert_eq!(completed, concurrent, "every concurrent run completed");
}

/// Starts `n` durable two-step runs at once, each on its own session, and waits for all:
/// how many answered as expected, and how long it took.
async fn concurrent_runs(n: usize) -> (usize, Duration) {
    use futures_util::StreamExt as _;
    let started = Instant::now();
    let sends =
        futures_util::stream::iter(0..n)
            .map(|i| async move {
                send_run("Bench", &format!("c{i}"), "go", &format!("bench-{i}")).await
            })
            .buffer_unordered(100)
            .collect::<Vec<String>>()
            .await;
    let answers = futures_util::stream::iter(sends)
        .map(|invocation| async move { attach(&invocation).await })
        .buffer_unordered(200)
        .collect::<Vec<(u16, Value)>>()
        .await;
    let took = started.elapsed();
    let completed = answers
        .iter()
        .filter(|(status, reply)| *status == 200 && reply["output"] == json!("done: appended x"))
        .count();
    (completed, took)
}
