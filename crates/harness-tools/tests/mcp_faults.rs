//! The MCP client against misbehaving servers, hermetic (no npm, no pip, loopback only).
//!
//! The stdio servers are this test binary itself: the `fake_mcp_server` test acts as an MCP
//! server over stdin/stdout when `FAKE_MCP` is set in its environment (and passes at once
//! otherwise), so each test starts `current_exe() fake_mcp_server --exact ...` with the
//! behaviour it wants. The HTTP servers are written here on a loopback `TcpListener`.
//! libtest's own "running 1 test" line comes first on the fake server's stdout: one more
//! junk line the client must skip.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{call, call_with};

use harness_core::agent::{Agent, AgentEvent};
use harness_core::testing::{FunctionModel, ScriptedModel};
use harness_core::{
    CallOptions, CompletionResponse, Ctx, Error, ErrorKind, Human, Request, Role, ToolCall,
    ToolUpdate, Toolbox,
};
use harness_tools::mcp::{
    ElicitationMode, ElicitationRequest, ElicitationResponse, McpContent, McpError, McpErrorKind,
    McpNotification, McpServer, Sampling, SamplingRequest, Transport,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const SHORT: Duration = Duration::from_millis(300);

// ---------------------------------------------------------------------------------------
// The fake stdio server
// ---------------------------------------------------------------------------------------

/// Not a test: the fake MCP server, when this binary is started with `FAKE_MCP` set.
#[test]
fn fake_mcp_server() {
    if let Ok(mode) = std::env::var("FAKE_MCP") {
        FakeServer::new(mode).run();
    }
}

/// A fake server started by `mode`, with `env` set for it.
fn fake(mode: &str) -> McpServer {
    fake_with(mode, &[])
}

fn fake_with(mode: &str, env: &[(&str, &str)]) -> McpServer {
    let exe = std::env::current_exe().unwrap();
    let mut server = McpServer::stdio([
        exe.into_os_string(),
        "fake_mcp_server".into(),
        "--exact".into(),
        "--nocapture".into(),
        "--test-threads=1".into(),
        "-q".into(),
    ])
    .unwrap()
    .with_env("FAKE_MCP", mode)
    .with_requires_approval(false);
    for (key, value) in env {
        server = server.with_env(key, value);
    }
    server
}

#[derive(Default)]
struct FakeState {
    /// Answers to the server's own requests, by their id, with how many `tools/call`
    /// requests had arrived before each.
    answers: HashMap<String, Value>,
    calls: usize,
    /// Request ids the client cancelled.
    cancelled: Vec<Value>,
    list_requests: usize,
    armed: bool,
    first: Option<Value>,
    /// The client's `initialize` params.
    initialize: Value,
    /// The level the client asked for with `logging/setLevel`.
    log_level: Value,
}

struct FakeServer {
    mode: String,
    out: Arc<Mutex<std::io::Stdout>>,
    state: Arc<Mutex<FakeState>>,
}

impl FakeServer {
    fn new(mode: String) -> Self {
        if let Ok(file) = std::env::var("FAKE_MCP_PIDFILE") {
            std::fs::write(file, std::process::id().to_string()).unwrap();
        }
        Self {
            mode,
            out: Arc::new(Mutex::new(std::io::stdout())),
            state: Arc::default(),
        }
    }

    fn raw(&self, bytes: &[u8]) {
        let mut out = self.out.lock().unwrap();
        out.write_all(bytes).unwrap();
        out.flush().unwrap();
    }

    fn send(&self, message: &Value) {
        self.raw(format!("{message}\n").as_bytes());
    }

    fn reply(&self, id: &Value, result: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    fn text(&self, id: &Value, text: &str) {
        self.reply(id, json!({"content": [{"type": "text", "text": text}]}));
    }

    fn run(self) -> ! {
        let mut stdin = std::io::stdin().lock();
        let mut line = Vec::new();
        loop {
            line.clear();
            if stdin.read_until(b'\n', &mut line).unwrap_or(0) == 0 {
                if std::env::var("FAKE_MCP_STUBBORN").is_ok() {
                    // Ignores the closed stdin: only a kill ends it.
                    loop {
                        std::thread::sleep(Duration::from_secs(1));
                    }
                }
                std::process::exit(0);
            }
            let Ok(message) = serde_json::from_slice::<Value>(&line) else {
                continue;
            };
            self.handle(&message);
        }
    }

    fn handle(&self, message: &Value) {
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let Some(method) = message.get("method").and_then(Value::as_str) else {
            // An answer to one of our requests.
            if let Some(id) = id.as_str() {
                let mut state = self.state.lock().unwrap();
                let calls_before = state.calls;
                state.answers.insert(
                    id.to_owned(),
                    json!({"message": message, "calls_before": calls_before}),
                );
            }
            return;
        };
        match method {
            "initialize" if self.mode == "silent" => {}
            "initialize" if self.mode == "wrong_ids" => {
                // Every answer goes to a request nobody sent.
                let wrong = id.as_i64().unwrap_or(0) + 1000;
                self.reply(
                    &json!(wrong),
                    json!({
                        "protocolVersion": "2025-06-18",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "fake", "version": "1"},
                    }),
                );
                self.reply(&json!("not-yours"), json!({}));
            }
            "initialize" => {
                self.state.lock().unwrap().initialize = message["params"].clone();
                self.reply(
                    &id,
                    json!({
                        "protocolVersion": "2025-06-18",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "fake", "version": "1"},
                    }),
                );
            }
            "notifications/cancelled" => {
                let cancelled = message["params"]["requestId"].clone();
                self.state.lock().unwrap().cancelled.push(cancelled);
            }
            "tools/list" => self.list(&id, &message["params"]),
            "resources/list"
            | "resources/templates/list"
            | "resources/read"
            | "resources/subscribe"
            | "prompts/list"
            | "prompts/get" => {
                self.catalog(&id, method, &message["params"]);
            }
            "tools/call" if message["params"]["name"] == "notify" => {
                self.notify(&id, &message["params"]);
            }
            "logging/setLevel" => {
                self.state.lock().unwrap().log_level = message["params"]["level"].clone();
                self.reply(&id, json!({}));
            }
            "tools/call" => {
                self.state.lock().unwrap().calls += 1;
                self.call(
                    &id,
                    message["params"]["name"].as_str().unwrap_or_default(),
                    &message["params"]["arguments"],
                );
            }
            _ => {}
        }
    }

    /// Sends a notification of each kind, progress on this very call first, then answers
    /// with the log level it was asked for.
    fn notify(&self, id: &Value, params: &Value) {
        let token = params["_meta"]["progressToken"].clone();
        for notification in [
            json!({"method": "notifications/progress", "params":
                {"progressToken": token, "progress": 1, "total": 2, "message": "halfway"}}),
            json!({"method": "notifications/message", "params":
                {"level": "warning", "logger": "fake", "data": "disk almost full"}}),
            json!({"method": "notifications/resources/updated", "params": {"uri": "file:///a.txt"}}),
            json!({"method": "notifications/tools/list_changed"}),
        ] {
            let mut message = notification;
            message["jsonrpc"] = json!("2.0");
            self.send(&message);
        }
        let level = self.state.lock().unwrap().log_level.to_string();
        self.text(id, &level);
    }

    /// Resources (two pages, the second with an entry without a URI) and prompts.
    fn catalog(&self, id: &Value, method: &str, params: &Value) {
        let result = match (method, params["cursor"].as_str()) {
            ("resources/list", None) => json!({"resources": [
                {"uri": "file:///a.txt", "name": "a", "mimeType": "text/plain", "size": 5}],
                "nextCursor": "p2"}),
            ("resources/list", Some(_)) => json!({"resources": [
                {"name": "no uri"}, {"uri": "file:///b.bin", "name": "b", "title": "B"}]}),
            ("resources/templates/list", _) => json!({"resourceTemplates": [
                {"uriTemplate": "file:///{path}", "name": "files", "description": "any file"}]}),
            ("resources/read", _) if params["uri"] == "file:///a.txt" => json!({"contents": [
                {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "hello"}]}),
            ("resources/read", _) => {
                self.send(&json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32002, "message": "Resource not found"}}));
                return;
            }
            ("resources/subscribe", _) => json!({}),
            ("prompts/list", _) => json!({"prompts": [{"name": "greet", "description": "Say hi",
                "arguments": [{"name": "who", "required": true}, {"name": "tone"}]}]}),
            _ => json!({"description": "A greeting", "messages": [
                {"role": "user", "content": {"type": "text",
                    "text": format!("Greet {}", params["arguments"]["who"].as_str().unwrap_or("?"))}},
                {"role": "assistant", "content": {"type": "image", "data": "aGk=",
                    "mimeType": "image/png"}}]}),
        };
        self.reply(id, result);
    }

    fn list(&self, id: &Value, params: &Value) {
        let count = {
            let mut state = self.state.lock().unwrap();
            state.list_requests += 1;
            state.list_requests
        };
        let tool = |name: &str| json!({"name": name, "inputSchema": {"type": "object"}});
        let cursor = params.get("cursor").and_then(Value::as_str);
        let page = match self.mode.as_str() {
            // No cursor → A → B → A again: a loop.
            "paged_loop" => {
                let next = if cursor == Some("A") { "B" } else { "A" };
                json!({"tools": [tool(&format!("t{count}"))], "nextCursor": next})
            }
            "paged_forever" => {
                json!({"tools": [tool(&format!("t{count}"))], "nextCursor": format!("c{count}")})
            }
            "collide" => json!({"tools": [tool("a.b"), tool("c"), tool("a/b")]}),
            _ => json!({"tools": [
                tool("echo"),
                {"name": "files.read", "description": "Reads.", "inputSchema": {"type": "object"},
                 "annotations": {"readOnlyHint": true}},
                tool("get weather"),
                tool(&format!("{}.{}", "x".repeat(70), "one")),
                tool(&format!("{}.{}", "x".repeat(70), "two")),
                tool("never"),
                tool("media"),
                tool("notify"),
                tool("ask"),
                tool("fail"),
            ]}),
        };
        self.reply(id, page);
    }

    fn call(&self, id: &Value, name: &str, arguments: &Value) {
        match name {
            "never" => {}
            "exit" => std::process::exit(3),
            "half" => self.raw(b"{\"jsonrpc\":\"2.0\",\"id\":"),
            "wrong_id" => {
                let wrong = id.as_i64().unwrap_or(0) + 1000;
                self.text(&json!(wrong), "for someone else");
                self.text(&json!("not-yours"), "for someone else");
            }
            "typed_id" => self.typed_id(id, arguments),
            "huge" => self.huge(id, arguments),
            "junk" => {
                self.raw(b"a log line that is not JSON\n");
                self.raw(b"\xff\xfe\xfd not UTF-8 at all\n");
                self.raw(b"\n   \n");
                self.raw(b"{\"jsonrpc\":\"2.0\",\"id\":12345,\"result\":{\"x\":\"\xc3\x28\"}}\n");
                self.raw(b"{\"hello\": \"a JSON object that is not a message\"}\n");
                self.raw(b"[1, 2, 3]\n");
                self.text(id, "survived the junk");
            }
            "sleep" => {
                let ms = arguments["ms"].as_u64().unwrap_or(1000);
                let (out, id) = (Arc::clone(&self.out), id.clone());
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(ms));
                    let reply = json!({"jsonrpc": "2.0", "id": id,
                        "result": {"content": [{"type": "text", "text": "slept"}]}});
                    let mut out = out.lock().unwrap();
                    writeln!(out, "{reply}").unwrap();
                    out.flush().unwrap();
                });
            }
            // `first` is answered only once `second` has arrived: a client that waits for
            // one call before sending the next never gets an answer to either.
            "first" => self.state.lock().unwrap().first = Some(id.clone()),
            "second" => {
                let first = self.state.lock().unwrap().first.take();
                self.text(id, "second");
                match first {
                    Some(first) => self.text(&first, "first"),
                    None => self.text(id, "second came first"),
                }
            }
            "media" => self.media(id),
            "fail" => self.reply(
                id,
                json!({"content": [{"type": "text", "text": "disk full"}], "isError": true}),
            ),
            "spawn" => {
                // Its stdio is not ours: a child that outlives a failing test must not
                // hold the runner's pipes open.
                let child = std::process::Command::new("sleep")
                    .arg("1000")
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .unwrap();
                self.text(id, &format!("{} {}", std::process::id(), child.id()));
                std::mem::forget(child);
            }
            // Between calls (no request of the client's in flight), the server asks the
            // client for a ping and for its roots.
            "arm" => self.arm(id),
            "arm_elicit" => self.arm_elicit(id),
            "arm_sample" => self.arm_sample(id),
            // Asks the client for a form during the call; answers with what came back.
            "ask" => self.ask(id),
            // What the server saw, once any answers it waits for are in.
            "report" => self.report(id),
            other => self.text(id, &format!("called {other} with {arguments}")),
        }
    }

    /// Answers with ids of the wrong type first (`"7"`, `7.0` or `7e0` for request 7, as
    /// `arguments.wrong` lists them), then with the right one.
    fn typed_id(&self, id: &Value, arguments: &Value) {
        let n = id.as_i64().unwrap();
        let text = |id: &str, text: &str| {
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":\
                 [{{\"type\":\"text\",\"text\":\"{text}\"}}]}}}}\n"
            )
        };
        for wrong in arguments["wrong"].as_array().unwrap() {
            let kind = wrong.as_str().unwrap();
            let wrong = match kind {
                "string" => format!("\"{n}\""),
                "float" => format!("{n}.0"),
                "exponent" => format!("{n}e0"),
                other => panic!("no such wrong id: {other}"),
            };
            self.raw(text(&wrong, &format!("taken from the {kind} id")).as_bytes());
        }
        self.raw(text(&n.to_string(), "the right answer").as_bytes());
    }

    /// One line of `arguments.bytes` bytes: an answer to this call with its id first or last,
    /// or (`no_id`) one without an id, then the real answer.
    fn huge(&self, id: &Value, arguments: &Value) {
        let bytes = usize::try_from(arguments["bytes"].as_u64().unwrap()).unwrap();
        let head = match arguments["shape"].as_str().unwrap() {
            "id_first" => format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":\
                 [{{\"type\":\"text\",\"text\":\""
            ),
            "id_last" | "no_id" => "{\"jsonrpc\":\"2.0\",\"result\":{\"content\":\
                 [{\"type\":\"text\",\"text\":\""
                .to_owned(),
            other => panic!("no such shape: {other}"),
        };
        let tail = match arguments["shape"].as_str().unwrap() {
            "id_last" => format!("\"}}]}},\"id\":{id}}}\n"),
            _ => "\"}]}}\n".to_owned(),
        };
        let filler = bytes - head.len() - tail.len();
        let mut line = Vec::with_capacity(bytes);
        line.extend_from_slice(head.as_bytes());
        line.resize(head.len() + filler, b'x');
        line.extend_from_slice(tail.as_bytes());
        self.raw(&line);
        if arguments["shape"] == "no_id" {
            self.text(id, "after the huge line");
        }
    }

    fn media(&self, id: &Value) {
        let content = json!([
            {"type": "text", "text": "a chart"},
            {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
            {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"},
            {"type": "resource", "resource":
                {"uri": "file:///notes.txt", "mimeType": "text/plain", "text": "the notes"}},
            {"type": "resource", "resource":
                {"uri": "file:///data.bin", "mimeType": "application/zip", "blob": "aGVsbG8h"}},
            {"type": "resource_link", "uri": "file:///more.md", "name": "more"},
        ]);
        self.reply(
            id,
            json!({"content": content, "structuredContent": {"total": 3}}),
        );
    }

    fn arm(&self, id: &Value) {
        self.state.lock().unwrap().armed = true;
        self.text(id, "armed");
        let out = Arc::clone(&self.out);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            let mut out = out.lock().unwrap();
            writeln!(
                out,
                "{}",
                json!({"jsonrpc": "2.0", "id": "srv-ping", "method": "ping"})
            )
            .unwrap();
            writeln!(
                out,
                "{}",
                json!({"jsonrpc": "2.0", "id": "srv-roots", "method": "roots/list"})
            )
            .unwrap();
            out.flush().unwrap();
        });
    }

    /// Asks the client for a form (with defaults) and to visit a page.
    fn arm_elicit(&self, id: &Value) {
        self.state.lock().unwrap().armed = true;
        self.text(id, "armed");
        self.send(
            &json!({"jsonrpc": "2.0", "id": "srv-form", "method": "elicitation/create",
            "params": {"mode": "form", "message": "Who are you?", "requestedSchema": {
                "type": "object", "properties": {
                    "name": {"type": "string"},
                    "age": {"type": "integer", "default": 30},
                    "verified": {"type": "boolean", "default": true}},
                "required": ["name"]}}}),
        );
        self.send(
            &json!({"jsonrpc": "2.0", "id": "srv-url", "method": "elicitation/create",
            "params": {"mode": "url", "message": "Sign in", "url": "https://example.com/in",
                       "elicitationId": "e-7"}}),
        );
    }

    /// Asks the client's model for two completions, a short one and a long one.
    fn arm_sample(&self, id: &Value) {
        self.state.lock().unwrap().armed = true;
        self.text(id, "armed");
        for (request, max_tokens) in [("srv-short", 20), ("srv-long", 5000)] {
            self.send(&json!({"jsonrpc": "2.0", "id": request,
                "method": "sampling/createMessage", "params": {
                    "messages": [{"role": "user",
                                  "content": {"type": "text", "text": "Say hi"}}],
                    "systemPrompt": "Be brief.", "maxTokens": max_tokens}}));
        }
    }

    fn ask(&self, id: &Value) {
        self.state.lock().unwrap().answers.remove("srv-ask");
        self.send(
            &json!({"jsonrpc": "2.0", "id": "srv-ask", "method": "elicitation/create",
            "params": {"mode": "form", "message": "Which account?", "requestedSchema": {
                "type": "object", "properties": {
                    "account": {"type": "string"},
                    "region": {"type": "string", "default": "eu"}}}}}),
        );
        let (out, state, id) = (Arc::clone(&self.out), Arc::clone(&self.state), id.clone());
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(5);
            let answer = loop {
                if let Some(answer) = state.lock().unwrap().answers.get("srv-ask") {
                    break answer["message"]["result"].clone();
                }
                if Instant::now() > deadline {
                    break json!("no answer");
                }
                std::thread::sleep(Duration::from_millis(10));
            };
            let reply = json!({"jsonrpc": "2.0", "id": id,
                "result": {"content": [{"type": "text", "text": answer.to_string()}]}});
            let mut out = out.lock().unwrap();
            writeln!(out, "{reply}").unwrap();
            out.flush().unwrap();
        });
    }

    fn report(&self, id: &Value) {
        let (out, state, id) = (Arc::clone(&self.out), Arc::clone(&self.state), id.clone());
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(3);
            loop {
                let done = {
                    let state = state.lock().unwrap();
                    !state.armed || state.answers.len() >= 2
                };
                if done || Instant::now() > deadline {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let report = {
                let state = state.lock().unwrap();
                json!({"answers": state.answers, "cancelled": state.cancelled,
                       "list_requests": state.list_requests,
                       "initialize": state.initialize})
            };
            let reply = json!({"jsonrpc": "2.0", "id": id,
                "result": {"content": [{"type": "text", "text": report.to_string()}]}});
            let mut out = out.lock().unwrap();
            writeln!(out, "{reply}").unwrap();
            out.flush().unwrap();
        });
    }
}

/// The `McpError` an MCP failure carries as its source.
fn mcp(err: &Error) -> &McpError {
    assert_eq!(err.kind(), ErrorKind::Mcp, "{err:?}");
    err.downcast_ref::<McpError>()
        .unwrap_or_else(|| panic!("no McpError under {err:?}"))
}

/// [`call`] with a timeout for this call only.
async fn call_within(
    server: &McpServer,
    name: &str,
    arguments: Value,
    timeout: Duration,
) -> Result<String, Error> {
    call_with(
        server,
        name,
        arguments,
        CallOptions::new().with_timeout(timeout),
    )
    .await
}

async fn report(server: &McpServer) -> Value {
    serde_json::from_str(&call(server, "report", json!({})).await.unwrap()).unwrap()
}

/// True once `pid` is gone or a zombie (dead, waiting for a parent to reap it).
fn dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state follows the command name, which is in parentheses.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

async fn wait_dead(pid: u32, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if dead(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    dead(pid)
}

fn temp_file(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("harness-mcp-{name}-{}", std::process::id()))
}

fn assert_timeout(err: &Error, method: &str, started: Instant, limit: Duration) {
    assert!(err.is_timeout(), "{err:?}");
    let err = mcp(err);
    assert!(err.is_timeout(), "{err:?}");
    assert_eq!(err.kind(), McpErrorKind::Timeout);
    assert!(err.message().contains(method), "{err}");
    assert!(err.message().contains("300ms"), "{err}");
    assert!(err.message().contains("McpServer::with_timeout"), "{err}");
    let elapsed = started.elapsed();
    assert!(elapsed >= SHORT, "gave up early: {elapsed:?}");
    assert!(elapsed < limit, "took {elapsed:?}");
}

// ---------------------------------------------------------------------------------------
// Timeouts over stdio
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn a_silent_server_times_out_in_the_handshake_and_is_killed() {
    let pidfile = temp_file("silent-pid");
    let server =
        fake_with("silent", &[("FAKE_MCP_PIDFILE", pidfile.to_str().unwrap())]).with_timeout(SHORT);
    let started = Instant::now();
    let err = server.connect().await.unwrap_err();
    assert_timeout(&err, "initialize", started, Duration::from_secs(2));
    // A tool call on it fails the same way, and does not hang either.
    let started = Instant::now();
    let err = call(&server, "echo", json!({})).await.unwrap_err();
    assert_timeout(&err, "initialize", started, Duration::from_secs(2));
    let pid: u32 = std::fs::read_to_string(&pidfile).unwrap().parse().unwrap();
    assert!(
        wait_dead(pid, Duration::from_secs(3)).await,
        "the silent server {pid} outlived its failed handshake"
    );
    let _ = std::fs::remove_file(pidfile);
}

#[tokio::test]
async fn a_call_that_is_never_answered_times_out_and_is_cancelled() {
    let server = fake("tools").with_timeout(SHORT);
    server.connect().await.unwrap();
    let started = Instant::now();
    let err = call(&server, "never", json!({})).await.unwrap_err();
    assert_timeout(&err, "tools/call", started, Duration::from_secs(2));
    // The server was told to stop working on it.
    let seen = report(&server).await;
    assert_eq!(seen["cancelled"].as_array().unwrap().len(), 1, "{seen}");
    // A per-call timeout overrides the server's.
    let started = Instant::now();
    let err = call_within(&server, "never", json!({}), Duration::from_millis(150))
        .await
        .unwrap_err();
    assert!(
        err.is_timeout() && mcp(&err).message().contains("150ms"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(1));
    // And a longer one lets a slow call finish.
    let text = call_within(&server, "sleep", json!({"ms": 500}), Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(text, "slept");
    server.close().await.unwrap();
}

#[tokio::test]
async fn a_half_written_line_then_silence_times_out() {
    let server = fake("tools").with_name("half-writer").with_timeout(SHORT);
    server.connect().await.unwrap();
    let started = Instant::now();
    let err = call(&server, "half", json!({})).await.unwrap_err();
    assert_timeout(&err, "tools/call", started, Duration::from_secs(2));
    assert!(
        mcp(&err)
            .message()
            .starts_with("MCP server `half-writer` did not answer"),
        "{err}"
    );
    server.close().await.unwrap();
}

#[tokio::test]
async fn answers_with_the_wrong_ids_time_out() {
    let server = fake("tools").with_timeout(SHORT);
    server.connect().await.unwrap();
    let started = Instant::now();
    let err = call(&server, "wrong_id", json!({})).await.unwrap_err();
    assert_timeout(&err, "tools/call", started, Duration::from_secs(2));
    // The connection still works afterwards.
    assert!(
        call(&server, "echo", json!({}))
            .await
            .unwrap()
            .contains("echo")
    );
    server.close().await.unwrap();
}

/// A server whose every answer, the handshake's included, carries an id nobody sent: the
/// stray answers are skipped and the handshake times out, typed, as any request would.
#[tokio::test]
async fn a_server_that_answers_only_with_wrong_ids_times_out_in_the_handshake() {
    let server = fake("wrong_ids").with_timeout(SHORT);
    let started = Instant::now();
    let err = server.connect().await.unwrap_err();
    assert_timeout(&err, "initialize", started, Duration::from_secs(2));
}

/// JSON-RPC ids match exactly: `"7"`, `7.0` or `7e0` do not answer request 7. Each is
/// skipped, and the call gets the answer with the right id that follows.
#[tokio::test]
async fn answers_with_an_id_of_the_wrong_type_are_skipped() {
    let server = fake("tools");
    for wrong in [
        json!(["string"]),
        json!(["float"]),
        json!(["exponent"]),
        json!(["string", "float"]),
    ] {
        let text = call_within(
            &server,
            "typed_id",
            json!({"wrong": wrong}),
            Duration::from_secs(30),
        )
        .await
        .unwrap();
        assert_eq!(text, "the right answer", "wrong ids {wrong}");
    }
    server.close().await.unwrap();
}

/// One line over the 16 MiB limit answering a call fails that call at once, typed, with an
/// error naming the limit, wherever the line's id is; the connection goes on.
#[tokio::test]
async fn an_answer_over_the_size_limit_fails_its_call_at_once() {
    let server = fake("tools").with_name("big");
    server.connect().await.unwrap();
    for shape in ["id_first", "id_last"] {
        let started = Instant::now();
        let err = call_within(
            &server,
            "huge",
            json!({"bytes": 17 * 1024 * 1024, "shape": shape}),
            Duration::from_secs(30),
        )
        .await
        .unwrap_err();
        let elapsed = started.elapsed();
        assert!(
            elapsed < Duration::from_secs(10),
            "{shape}: took {elapsed:?}"
        );
        let err = mcp(&err);
        assert_eq!(err.kind(), McpErrorKind::Protocol, "{shape}: {err:?}");
        assert!(err.message().contains("16 MiB"), "{shape}: {err}");
        assert!(err.message().contains("16777216 bytes"), "{shape}: {err}");
        assert!(err.message().contains("MCP server `big`"), "{shape}: {err}");
        assert_eq!(
            call(&server, "echo", json!({"after": shape}))
                .await
                .unwrap(),
            format!("called echo with {{\"after\":\"{shape}\"}}")
        );
    }
    // A line of exactly the limit, its newline included, is within it.
    let text = call_within(
        &server,
        "huge",
        json!({"bytes": 16 * 1024 * 1024, "shape": "id_first"}),
        Duration::from_secs(30),
    )
    .await
    .unwrap();
    assert!(text.len() > 16 * 1024 * 1024 - 100, "{}", text.len());
    assert!(text.bytes().all(|b| b == b'x'));
    server.close().await.unwrap();
}

/// A line over the limit that names no request is skipped; the call it came during gets the
/// answer that follows.
#[tokio::test]
async fn a_line_over_the_size_limit_without_an_id_is_skipped() {
    let server = fake("tools");
    let text = call_within(
        &server,
        "huge",
        json!({"bytes": 17 * 1024 * 1024, "shape": "no_id"}),
        Duration::from_secs(30),
    )
    .await
    .unwrap();
    assert_eq!(text, "after the huge line");
    server.close().await.unwrap();
}

#[tokio::test]
async fn junk_on_stdout_is_skipped() {
    let server = fake("tools");
    assert_eq!(
        call(&server, "junk", json!({})).await.unwrap(),
        "survived the junk"
    );
    // The junk left nothing behind: the next call is answered as usual.
    assert_eq!(
        call(&server, "echo", json!({"a": 1})).await.unwrap(),
        "called echo with {\"a\":1}"
    );
    server.close().await.unwrap();
}

#[tokio::test]
async fn a_timeout_inside_an_agent_run_reaches_the_model_as_the_result() {
    let server = fake("tools").with_timeout(SHORT);
    let tools = server.tools().await.unwrap();
    let model = Arc::new(ScriptedModel::new([
        CompletionResponse::from_tool_calls(vec![ToolCall::new("never", json!({})).with_id("1")]),
        CompletionResponse::text("gave up"),
    ]));
    let agent = Agent::builder(model.clone())
        .toolbox(Toolbox::builder().tools(tools).build().unwrap())
        .build()
        .unwrap();
    let state = agent.run("call never").await.unwrap();
    assert_eq!(state.output_text(), "gave up");
    let result = model.requests()[1]
        .iter()
        .find(|m| m.role == Role::Tool)
        .cloned()
        .expect("the tool result went back to the model");
    assert_eq!(result.name.as_deref(), Some("never"));
    let text = result.text();
    assert!(
        text.contains("did not answer tools/call within 300ms"),
        "{text}"
    );
    server.close().await.unwrap();
}

// ---------------------------------------------------------------------------------------
// Concurrency and server requests over stdio
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn two_calls_to_one_server_are_in_flight_at_once() {
    let server = fake("tools").with_timeout(Duration::from_secs(5));
    server.connect().await.unwrap();
    // `first` is answered only after `second` has reached the server.
    let (first, second) = tokio::join!(call(&server, "first", json!({})), async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        call(&server, "second", json!({})).await
    });
    assert_eq!(first.unwrap(), "first");
    assert_eq!(second.unwrap(), "second");

    // Two calls of a second each take about a second together, not two.
    let started = Instant::now();
    let (a, b) = tokio::join!(
        call(&server, "sleep", json!({"ms": 1000})),
        call(&server, "sleep", json!({"ms": 1000}))
    );
    let elapsed = started.elapsed();
    assert_eq!(
        (a.unwrap(), b.unwrap()),
        ("slept".to_owned(), "slept".to_owned())
    );
    assert!(elapsed < Duration::from_millis(1700), "took {elapsed:?}");
    server.close().await.unwrap();
}

#[tokio::test]
async fn server_requests_between_calls_are_answered() {
    let root = std::env::temp_dir().join("harness mcp root");
    let server = fake("tools").with_roots(vec![root.clone()]);
    assert_eq!(call(&server, "arm", json!({})).await.unwrap(), "armed");
    // No call in flight while the server asks.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let seen = report(&server).await;
    let answers = &seen["answers"];
    assert_eq!(
        answers["srv-ping"]["message"]["result"],
        json!({}),
        "{seen}"
    );
    // Answered before the next call reached the server: a client that reads only while
    // it waits for a reply of its own would have answered during `report`.
    assert_eq!(answers["srv-ping"]["calls_before"], json!(1), "{seen}");
    assert_eq!(answers["srv-roots"]["calls_before"], json!(1), "{seen}");
    let roots = &answers["srv-roots"]["message"]["result"]["roots"];
    assert_eq!(
        roots[0]["uri"],
        json!(format!("file://{}", root.display()).replace(' ', "%20")),
        "{seen}"
    );
    assert_eq!(roots[0]["name"], json!("harness mcp root"));
    // The handshake declared the roots, and who is asking.
    let initialize = &seen["initialize"];
    assert!(initialize["capabilities"]["roots"].is_object(), "{seen}");
    assert_eq!(initialize["protocolVersion"], json!("2025-11-25"));
    assert_eq!(initialize["clientInfo"]["name"], json!("deepharness"));
    assert_eq!(
        server.server_info().unwrap()["protocolVersion"],
        json!("2025-06-18")
    );
    server.close().await.unwrap();
}

#[tokio::test]
async fn elicitations_reach_the_elicitor_and_accepted_forms_get_their_defaults() {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&asked);
    let server = fake("tools").with_elicitation(move |request: ElicitationRequest| {
        seen.lock().unwrap().push(request.clone());
        async move {
            match request.mode {
                ElicitationMode::Form { .. } => {
                    let mut fields = serde_json::Map::new();
                    fields.insert("name".into(), json!("Ada"));
                    fields.insert("verified".into(), json!(false));
                    ElicitationResponse::Accept(fields)
                }
                ElicitationMode::Url { .. } => ElicitationResponse::Cancel,
                _ => ElicitationResponse::Decline,
            }
        }
    });
    assert_eq!(
        call(&server, "arm_elicit", json!({})).await.unwrap(),
        "armed"
    );
    let seen = report(&server).await;
    let answers = &seen["answers"];
    // The user's fields kept (`verified` too), the missing `age` from its default.
    assert_eq!(
        answers["srv-form"]["message"]["result"],
        json!({"action": "accept", "content": {"name": "Ada", "age": 30, "verified": false}}),
        "{seen}"
    );
    assert_eq!(
        answers["srv-url"]["message"]["result"],
        json!({"action": "cancel"}),
        "{seen}"
    );
    let capabilities = &seen["initialize"]["capabilities"]["elicitation"];
    assert!(
        capabilities["form"].is_object() && capabilities["url"].is_object(),
        "{seen}"
    );
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2);
    assert_eq!(asked[0].message, "Who are you?");
    assert_eq!(
        asked[1].mode,
        ElicitationMode::Url {
            url: "https://example.com/in".into(),
            id: "e-7".into()
        }
    );
    server.close().await.unwrap();
}

/// The person behind a run: approves what is not `wire`, answers every form with `account`.
struct Operator {
    asked: Mutex<Vec<ElicitationRequest>>,
    account: &'static str,
}

impl Operator {
    fn new(account: &'static str) -> Arc<Self> {
        Arc::new(Self {
            asked: Mutex::new(Vec::new()),
            account,
        })
    }
}

#[harness_core::async_trait]
impl Human for Operator {
    async fn approve(&self, name: &str, _arguments: &Value) -> bool {
        name != "wire"
    }
    async fn ask(&self, question: ElicitationRequest) -> ElicitationResponse {
        self.asked.lock().unwrap().push(question);
        let mut fields = serde_json::Map::new();
        fields.insert("account".into(), json!(self.account));
        ElicitationResponse::Accept(fields)
    }
}

#[tokio::test]
async fn an_elicitation_during_a_run_goes_to_the_runs_human_like_its_approvals() {
    // The server's own elicitor is there too: the run's human, narrower, comes first.
    let server = fake("tools")
        .with_run_elicitation()
        .with_elicitation(|_: ElicitationRequest| async { ElicitationResponse::Decline });
    let operator = Operator::new("ops-7");
    let model = Arc::new(ScriptedModel::new([
        CompletionResponse::from_tool_calls(vec![ToolCall::new("ask", json!({})).with_id("a1")]),
        CompletionResponse::text("done"),
    ]));
    let tools = Toolbox::builder()
        .tools(server.tools().await.unwrap())
        .human(operator.clone())
        .build()
        .unwrap();
    let agent = Agent::builder(model.clone())
        .toolbox(tools)
        .build()
        .unwrap();
    let state = agent.run("bill it").await.unwrap();
    assert_eq!(state.output_text(), "done");
    let asked = operator.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].message, "Which account?");
    assert!(
        asked[0].source.contains("fake_mcp_server"),
        "{}",
        asked[0].source
    );
    // What the server got back (the form's default filled in) is what the model read.
    let result = model.requests()[1]
        .iter()
        .find(|m| m.role == Role::Tool)
        .map(|m| m.text().into_owned())
        .unwrap();
    let result: Value = serde_json::from_str(&result).unwrap();
    assert_eq!(
        result,
        json!({"action": "accept", "content": {"account": "ops-7", "region": "eu"}})
    );
    // Outside a run (no human waiting) the server's elicitor answers.
    let outside: Value =
        serde_json::from_str(&call(&server, "ask", json!({})).await.unwrap()).unwrap();
    assert_eq!(outside, json!({"action": "decline"}));
    assert_eq!(operator.asked.lock().unwrap().len(), 1);
    server.close().await.unwrap();
}

#[tokio::test]
async fn without_run_elicitation_a_runs_human_is_not_asked() {
    let server = fake("tools");
    let operator = Operator::new("ops-7");
    let tools = Toolbox::builder()
        .tools(server.tools().await.unwrap())
        .human(operator.clone())
        .build()
        .unwrap();
    let answer = tools
        .call("ask", json!({}), CallOptions::new())
        .await
        .unwrap();
    let answer: Value = serde_json::from_str(&answer.text()).unwrap();
    assert_eq!(answer, json!({"action": "decline"}));
    assert!(operator.asked.lock().unwrap().is_empty());
    let seen = report(&server).await;
    assert!(
        seen["initialize"]["capabilities"]["elicitation"].is_null(),
        "{seen}"
    );
    server.close().await.unwrap();
}

#[tokio::test]
async fn an_elicitor_that_panics_answers_cancel_and_the_connection_lives_on() {
    let server = fake("tools").with_elicitation(|_: ElicitationRequest| async {
        panic!("the form broke");
        #[allow(unreachable_code)]
        ElicitationResponse::Decline
    });
    assert_eq!(
        call(&server, "arm_elicit", json!({})).await.unwrap(),
        "armed"
    );
    let seen = report(&server).await;
    for id in ["srv-form", "srv-url"] {
        assert_eq!(
            seen["answers"][id]["message"]["result"],
            json!({"action": "cancel"}),
            "{seen}"
        );
    }
    let echoed = call(&server, "echo", json!({"text": "still here"}))
        .await
        .unwrap();
    assert_eq!(echoed, r#"called echo with {"text":"still here"}"#);
    server.close().await.unwrap();
}

#[tokio::test]
async fn without_an_elicitor_nothing_is_declared_and_elicitations_are_declined() {
    let server = fake("tools");
    assert_eq!(
        call(&server, "arm_elicit", json!({})).await.unwrap(),
        "armed"
    );
    let seen = report(&server).await;
    let answers = &seen["answers"];
    for id in ["srv-form", "srv-url"] {
        assert_eq!(
            answers[id]["message"]["result"],
            json!({"action": "decline"}),
            "{seen}"
        );
    }
    assert!(
        seen["initialize"]["capabilities"]
            .get("elicitation")
            .is_none(),
        "{seen}"
    );
    server.close().await.unwrap();
}

#[tokio::test]
async fn sampling_requests_are_served_by_the_model_when_approved() {
    let model = FunctionModel::new(|request: &Request<'_>| {
        let said: Vec<String> = request
            .messages
            .iter()
            .map(|m| m.text().into_owned())
            .collect();
        CompletionResponse::text(format!("hi ({})", said.join(" | "))).with_model("tiny-1")
    });
    let sampling = Sampling::new(model).with_approval(|r: &SamplingRequest| r.max_tokens <= 100);
    let server = fake("tools").with_sampling(sampling);
    assert_eq!(
        call(&server, "arm_sample", json!({})).await.unwrap(),
        "armed"
    );
    let seen = report(&server).await;
    let answers = &seen["answers"];
    // The system prompt goes first, then the server's messages.
    assert_eq!(
        answers["srv-short"]["message"]["result"],
        json!({"role": "assistant", "content": {"type": "text", "text": "hi (Be brief. | Say hi)"},
               "model": "tiny-1", "stopReason": "endTurn"}),
        "{seen}"
    );
    // Refused by the approval: the protocol's "user rejected" error, the model not asked.
    assert_eq!(
        answers["srv-long"]["message"]["error"]["code"],
        json!(-1),
        "{seen}"
    );
    assert!(
        seen["initialize"]["capabilities"]["sampling"].is_object(),
        "{seen}"
    );
    server.close().await.unwrap();
}

#[tokio::test]
async fn without_sampling_the_capability_is_not_declared_and_requests_are_refused() {
    let server = fake("tools");
    assert_eq!(
        call(&server, "arm_sample", json!({})).await.unwrap(),
        "armed"
    );
    let seen = report(&server).await;
    assert_eq!(
        seen["answers"]["srv-short"]["message"]["error"]["code"],
        json!(-32601),
        "{seen}"
    );
    assert!(
        seen["initialize"]["capabilities"].get("sampling").is_none(),
        "{seen}"
    );
    server.close().await.unwrap();
}

#[tokio::test]
async fn resources_and_prompts_are_listed_read_and_filled_in() {
    let server = fake("tools");
    // Both pages; the entry without a URI is skipped, the others kept.
    let resources = server.list_resources().await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["file:///a.txt", "file:///b.bin"]);
    assert_eq!(
        (resources[0].mime_type.as_deref(), resources[0].size),
        (Some("text/plain"), Some(5))
    );
    assert_eq!(resources[1].title.as_deref(), Some("B"));
    let templates = server.list_resource_templates().await.unwrap();
    assert_eq!(templates[0].uri_template, "file:///{path}");
    assert_eq!(templates[0].description.as_deref(), Some("any file"));
    assert_eq!(
        server.read_resource("file:///a.txt").await.unwrap(),
        [McpContent::Resource {
            uri: "file:///a.txt".into(),
            mime_type: Some("text/plain".into()),
            text: Some("hello".into()),
            blob: None,
        }]
    );
    // The server's own error, naming the method.
    let missing = server.read_resource("file:///nope").await.unwrap_err();
    assert!(
        missing.to_string().contains("Resource not found"),
        "{missing}"
    );
    server.subscribe("file:///a.txt").await.unwrap();

    // The same reads as a tool for an agent, failures as the call's result.
    let tool = server.read_resource_tool();
    assert_eq!(tool.spec().name, "read_resource");
    assert!(!tool.spec().requires_approval);
    let read = tool
        .call(json!({"uri": "file:///a.txt"}), Ctx::new())
        .await
        .unwrap();
    let read = read.text();
    assert!(
        read.contains("hello") && read.contains("file:///a.txt"),
        "{read}"
    );
    let no_uri = tool.call(json!({}), Ctx::new()).await.unwrap_err();
    assert!(no_uri.to_string().contains("needs `uri`"), "{no_uri}");
    let unknown = tool
        .call(json!({"uri": "file:///nope"}), Ctx::new())
        .await
        .unwrap_err();
    assert!(
        unknown.to_string().contains("Resource not found"),
        "{unknown}"
    );

    let prompts = server.list_prompts().await.unwrap();
    assert_eq!(prompts[0].name, "greet");
    let required: Vec<(&str, bool)> = prompts[0]
        .arguments
        .iter()
        .map(|a| (a.name.as_str(), a.required))
        .collect();
    assert_eq!(required, [("who", true), ("tone", false)]);
    let filled = server.get_prompt("greet", &[("who", "Ada")]).await.unwrap();
    assert_eq!(filled.description.as_deref(), Some("A greeting"));
    assert_eq!(filled.messages[0].role, "user");
    assert_eq!(
        filled.messages[0].content,
        McpContent::Text("Greet Ada".into())
    );
    assert!(matches!(filled.messages[1].content, McpContent::Image(_)));
    server.close().await.unwrap();
}

#[tokio::test]
async fn notifications_reach_the_callback_with_the_servers_name() {
    let (sender, mut received) = tokio::sync::mpsc::unbounded_channel();
    let server = fake("tools").with_name("fake").with_notifications(
        move |server: &str, notification: McpNotification| {
            let _ = sender.send((server.to_owned(), notification));
        },
    );
    server.set_log_level("warning").await.unwrap();
    let level = call(&server, "notify", json!({})).await.unwrap();
    assert_eq!(level, "\"warning\"");
    let mut seen = Vec::new();
    while seen.len() < 4 {
        let next = tokio::time::timeout(Duration::from_secs(5), received.recv()).await;
        seen.push(next.unwrap().unwrap());
    }
    assert!(seen.iter().all(|(server, _)| server == "fake"));
    let notifications: Vec<McpNotification> = seen.into_iter().map(|(_, n)| n).collect();
    // Progress on the call itself: the token is the one the client put in the request.
    // (Notifications may be handled concurrently, so their order is not asserted.)
    let Some(McpNotification::Progress {
        token,
        progress,
        total,
        message,
    }) = notifications
        .iter()
        .find(|n| matches!(n, McpNotification::Progress { .. }))
    else {
        panic!("no progress in {notifications:?}");
    };
    assert!(!token.is_null());
    assert_eq!(
        (*progress, *total, message.as_deref()),
        (1.0, Some(2.0), Some("halfway"))
    );
    for expected in [
        McpNotification::Log {
            level: "warning".into(),
            logger: Some("fake".into()),
            data: json!("disk almost full"),
        },
        McpNotification::ResourceUpdated {
            uri: "file:///a.txt".into(),
        },
        McpNotification::ToolListChanged,
    ] {
        assert!(
            notifications.contains(&expected),
            "{expected:?} in {notifications:?}"
        );
    }
    let wrong = server.set_log_level("loud").await.unwrap_err();
    assert!(
        wrong.to_string().contains("unknown MCP log level \"loud\""),
        "{wrong}"
    );
    server.close().await.unwrap();
}

#[tokio::test]
async fn a_servers_progress_on_a_call_reaches_the_watched_run() {
    use futures_util::StreamExt as _;
    let server = fake("tools").with_requires_approval(false);
    let model = ScriptedModel::new([
        CompletionResponse::from_tool_calls(vec![ToolCall::new("notify", json!({})).with_id("n1")]),
        CompletionResponse::text("done"),
    ]);
    let agent = Agent::builder(model)
        .tools(server.tools().await.unwrap())
        .build()
        .unwrap();
    let events: Vec<AgentEvent> = agent.stream("go").map(Result::unwrap).collect().await;
    let updates: Vec<&ToolUpdate> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolUpdate {
                name,
                call_id,
                update,
            } => {
                assert_eq!((name.as_str(), call_id.as_deref()), ("notify", Some("n1")));
                Some(update)
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        updates,
        [&ToolUpdate::Progress {
            progress: 1.0,
            total: Some(2.0),
            message: Some("halfway".into())
        }]
    );
    // Read at the transport, in order: before the call's answer, so before its finish.
    let position = |wanted: fn(&AgentEvent) -> bool| events.iter().position(wanted).unwrap();
    let update = position(|e| matches!(e, AgentEvent::ToolUpdate { .. }));
    let finish = position(|e| matches!(e, AgentEvent::ToolFinished { .. }));
    assert!(update < finish, "{events:?}");
    server.close().await.unwrap();
}

// ---------------------------------------------------------------------------------------
// Paging
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn paging_stops_at_a_repeated_cursor() {
    let server = fake("paged_loop");
    let names: Vec<String> = server
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    // Pages: (none) → A → B → A: the third page's cursor was seen before.
    assert_eq!(names, ["t1", "t2", "t3"]);
    assert_eq!(report(&server).await["list_requests"], json!(3));
    server.close().await.unwrap();
}

#[tokio::test]
async fn paging_stops_at_the_page_cap() {
    let server = fake("paged_forever");
    let tools = server.list_tools().await.unwrap();
    assert_eq!(tools.len(), harness_tools::mcp::MAX_LIST_PAGES);
    assert_eq!(tools.last().unwrap().name, "t1000");
    assert_eq!(report(&server).await["list_requests"], json!(1000));
    server.close().await.unwrap();
}

// ---------------------------------------------------------------------------------------
// Stopping: the whole process group dies
// ---------------------------------------------------------------------------------------

async fn spawned_pids(server: &McpServer) -> (u32, u32) {
    let text = call(server, "spawn", json!({})).await.unwrap();
    let (server_pid, child_pid) = text.split_once(' ').unwrap();
    let pids = (server_pid.parse().unwrap(), child_pid.parse().unwrap());
    assert!(!dead(pids.0) && !dead(pids.1));
    pids
}

#[tokio::test]
async fn close_kills_the_whole_process_group() {
    // The server ignores its closed stdin, so only the kill ends it.
    let server = fake_with("tools", &[("FAKE_MCP_STUBBORN", "1")]);
    let (server_pid, child_pid) = spawned_pids(&server).await;
    let started = Instant::now();
    server.close().await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(4));
    assert!(dead(server_pid), "the server {server_pid} survived close");
    assert!(
        wait_dead(child_pid, Duration::from_secs(3)).await,
        "the server's child {child_pid} survived close"
    );
    server.close().await.unwrap(); // twice is fine
    let err = call(&server, "echo", json!({})).await.unwrap_err();
    assert!(mcp(&err).is_closed(), "{err:?}");
}

#[tokio::test]
async fn dropping_the_last_clone_kills_the_whole_process_group() {
    let server = fake("tools");
    let tools = server.tools().await.unwrap();
    let (server_pid, child_pid) = spawned_pids(&server).await;
    let clone = server.clone();
    drop(server);
    drop(clone);
    // The tools hold the server too.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!dead(server_pid), "killed while its tools were alive");
    drop(tools);
    assert!(
        wait_dead(server_pid, Duration::from_secs(3)).await,
        "the server {server_pid} survived the drop"
    );
    assert!(
        wait_dead(child_pid, Duration::from_secs(3)).await,
        "the server's child {child_pid} survived the drop"
    );
}

#[tokio::test]
async fn a_server_that_exits_is_a_transport_error_then_restarted_on_next_use() {
    let server = fake("tools");
    let (first_pid, _) = spawned_pids(&server).await;
    let err = call(&server, "exit", json!({})).await.unwrap_err();
    let err = mcp(&err);
    assert!(err.is_transport(), "{err:?}");
    assert!(
        err.message()
            .contains("closed the connection during tools/call"),
        "{err}"
    );
    let (second_pid, _) = spawned_pids(&server).await;
    assert_ne!(first_pid, second_pid);
    server.close().await.unwrap();
}

// ---------------------------------------------------------------------------------------
// Results and names
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn non_text_results_reach_the_model() {
    let server = fake("tools");
    let text = call(&server, "media", json!({})).await.unwrap();
    assert_eq!(
        text,
        "a chart\n[image image/png, 5 bytes]\n[audio audio/wav, 2 bytes]\n\
         [resource file:///notes.txt text/plain]\nthe notes\n\
         [resource file:///data.bin application/zip, 6 bytes]\n\
         [resource link more file:///more.md]\n{\"total\":3}"
    );
    let result = server
        .call("media", json!({}), CallOptions::new())
        .await
        .unwrap();
    assert!(!result.is_error);
    assert_eq!(result.structured_content, Some(json!({"total": 3})));
    let images = result.images();
    assert_eq!(images.len(), 1);
    assert_eq!(images[0].media_type(), Some("image/png"));
    assert_eq!(images[0].data(), Some("aGVsbG8="));
    assert!(
        matches!(&result.content[3], McpContent::Resource { text: Some(t), .. } if t == "the notes")
    );

    // Through the tool an agent holds, the image itself follows the text, so a model that
    // reads images sees it (the agent loop records these blocks in the tool message).
    let tools = server.tools().await.unwrap();
    let media = tools.iter().find(|t| t.spec().name == "media").unwrap();
    let content = media.call(json!({}), Ctx::new()).await.unwrap();
    let blocks = content.blocks();
    assert_eq!(blocks.len(), 2);
    assert_eq!(blocks[0].as_text(), Some(text.as_str()));
    assert!(
        matches!(&blocks[1], harness_core::Block::Image(image) if image.data() == Some("aGVsbG8="))
    );

    // isError is a result marked failed, with the server's text.
    let failed = server
        .call("fail", json!({}), CallOptions::new())
        .await
        .unwrap();
    assert!(failed.is_error);
    assert_eq!(failed.text(), "disk full");
    // Through the tool an agent holds, it is the call's error, with the server's text.
    let fail = tools.iter().find(|t| t.spec().name == "fail").unwrap();
    let err = fail.call(json!({}), Ctx::new()).await.unwrap_err();
    assert_eq!(err.message(), "fail failed: disk full");
    let source = std::error::Error::source(&err).and_then(|s| s.downcast_ref::<McpError>());
    assert!(source.is_some_and(McpError::is_tool_failed), "{err:?}");
    server.close().await.unwrap();
}

#[tokio::test]
async fn tool_names_a_vendor_would_refuse_are_mapped_and_called_by_their_own_name() {
    let server = fake("tools");
    let listed = server.list_tools().await.unwrap();
    let model_names: Vec<&str> = listed.iter().map(|t| t.model_name.as_str()).collect();
    assert_eq!(&model_names[..3], ["echo", "files_read", "get_weather"]);
    let (long_one, long_two) = (&listed[3], &listed[4]);
    assert_eq!(long_one.model_name.len(), 64);
    assert_ne!(long_one.model_name, long_two.model_name);

    let tools = server.tools().await.unwrap();
    let find = |name: &str| {
        tools
            .iter()
            .find(|t| t.spec().name == name)
            .unwrap()
            .clone()
    };
    let read = find("files_read");
    assert!(!read.spec().requires_approval);
    let text = read.call(json!({"path": "a"}), Ctx::new()).await.unwrap();
    assert_eq!(text.text(), "called files.read with {\"path\":\"a\"}");
    let text = find(&long_two.model_name)
        .call(json!({}), Ctx::new())
        .await
        .unwrap();
    assert_eq!(text.text(), format!("called {} with {{}}", long_two.name));
    // Every name offered is one OpenAI accepts.
    for tool in &tools {
        let name = &tool.spec().name;
        assert!(
            name.len() <= 64
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
            "{name}"
        );
    }
    server.close().await.unwrap();
}

#[tokio::test]
async fn names_that_collide_once_mapped_are_refused() {
    let server = fake("collide");
    let err = server.tools().await.err().unwrap();
    assert!(err.is_configuration(), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains("fake_mcp_server"),
        "names the server: {message}"
    );
    assert!(
        message.contains("\"a.b\"") && message.contains("\"a/b\""),
        "{message}"
    );
    assert!(message.contains("\"a_b\""), "{message}");
    // The listing itself is still there, for calling them by their own names.
    assert_eq!(server.list_tools().await.unwrap().len(), 3);
    server.close().await.unwrap();
}

#[tokio::test]
async fn a_missing_program_is_a_transport_error_that_says_so() {
    let server = McpServer::stdio(["/nonexistent/mcp-server"]).unwrap();
    let err = server.connect().await.unwrap_err();
    assert!(mcp(&err).is_transport(), "{err:?}");
    assert!(err.to_string().contains("cannot start MCP server"), "{err}");
    let err = McpServer::stdio(Vec::<String>::new()).unwrap_err();
    assert!(err.is_configuration());
}

// ---------------------------------------------------------------------------------------
// Streamable HTTP faults, on loopback
// ---------------------------------------------------------------------------------------

/// A bare HTTP/1.1 MCP endpoint: answers the handshake, then misbehaves on `tools/call`
/// as `mode` says. Every response closes its connection.
async fn http_server(mode: &'static str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((socket, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(handle_http(socket, mode));
        }
    });
    url
}

async fn respond(socket: &mut TcpStream, status: &str, body: &Value) {
    let body = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\nmcp-session-id: s1\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let _ = socket.write_all(head.as_bytes()).await;
    let _ = socket.write_all(body.as_bytes()).await;
}

async fn handle_http(mut socket: TcpStream, mode: &'static str) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let verb = head.split(' ').next().unwrap_or_default().to_owned();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0);
    while buf.len() < head_end + length {
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let message: Value = serde_json::from_slice(&buf[head_end..]).unwrap_or(Value::Null);
    let id = message["id"].clone();
    match (verb.as_str(), message["method"].as_str()) {
        ("POST", Some("initialize")) if mode == "silent" => {
            // Holds the connection open and says nothing.
            tokio::time::sleep(Duration::from_secs(30)).await;
        }
        ("POST", Some("initialize")) => {
            let result = json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                                "serverInfo": {"name": "fake-http", "version": "1"}});
            respond(
                &mut socket,
                "200 OK",
                &json!({"jsonrpc": "2.0", "id": id, "result": result}),
            )
            .await;
        }
        ("POST", Some("tools/call")) if mode == "comments" => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                        cache-control: no-cache\r\nconnection: close\r\n\r\n";
            if socket.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            // Only comments, forever: no event ever carries the answer.
            while socket.write_all(b": still thinking\n\n").await.is_ok() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        ("POST", Some("tools/call")) => {
            let wrong = id.as_i64().unwrap_or(0) + 1000;
            let result = json!({"content": [{"type": "text", "text": "for someone else"}]});
            respond(
                &mut socket,
                "200 OK",
                &json!({"jsonrpc": "2.0", "id": wrong, "result": result}),
            )
            .await;
        }
        ("POST", _) if id.is_null() => respond(&mut socket, "202 Accepted", &Value::Null).await,
        ("POST", _) => {
            let error = json!({"code": -32601, "message": "no such method"});
            respond(
                &mut socket,
                "200 OK",
                &json!({"jsonrpc": "2.0", "id": id, "error": error}),
            )
            .await;
        }
        ("DELETE", _) => respond(&mut socket, "200 OK", &Value::Null).await,
        _ => respond(&mut socket, "405 Method Not Allowed", &Value::Null).await,
    }
}

#[tokio::test]
async fn a_reply_stream_of_only_comments_times_out() {
    let url = http_server("comments").await;
    let server = McpServer::http(&url, &[]).unwrap().with_timeout(SHORT);
    server.connect().await.unwrap();
    let started = Instant::now();
    let err = call(&server, "think", json!({})).await.unwrap_err();
    assert_timeout(&err, "tools/call", started, Duration::from_secs(2));
    server.close().await.unwrap();
}

#[tokio::test]
async fn an_http_answer_with_the_wrong_id_times_out() {
    let url = http_server("wrong_id").await;
    let server = McpServer::http(&url, &[("Authorization".to_owned(), "Bearer t".to_owned())])
        .unwrap()
        .with_timeout(SHORT);
    server.connect().await.unwrap();
    let started = Instant::now();
    let err = call(&server, "anything", json!({})).await.unwrap_err();
    assert_timeout(&err, "tools/call", started, Duration::from_secs(2));
    server.close().await.unwrap();
}

#[tokio::test]
async fn a_silent_http_server_times_out_in_the_handshake() {
    let url = http_server("silent").await;
    let server = McpServer::http(&url, &[]).unwrap().with_timeout(SHORT);
    let started = Instant::now();
    let err = server.list_tools().await.unwrap_err();
    assert_timeout(&err, "initialize", started, Duration::from_secs(2));
}

#[test]
fn headers_the_client_sets_itself_are_refused() {
    let err =
        McpServer::http("http://127.0.0.1:1/mcp", &[("Accept".into(), "x".into())]).unwrap_err();
    assert!(err.is_configuration());
    assert!(err.to_string().contains("accept"), "{err}");
    let err = McpServer::http(
        "http://127.0.0.1:1/mcp",
        &[("bad header".into(), "x".into())],
    )
    .unwrap_err();
    assert!(err.is_configuration());
}

// ---------------------------------------------------------------------------------------
// A transport of the user's own, through the adapter
// ---------------------------------------------------------------------------------------

#[derive(Default)]
struct Recorded {
    notified: Vec<(String, Value)>,
    closed: usize,
}

/// An in-memory server behind the three-method seam.
#[derive(Clone, Default)]
struct InMemory(Arc<Mutex<Recorded>>);

#[async_trait::async_trait]
impl Transport for InMemory {
    async fn request(&self, method: &str, params: Value) -> Result<Value, McpError> {
        match method {
            "initialize" => Ok(json!({"protocolVersion": "2025-03-26", "capabilities": {},
                                      "serverInfo": {"name": "in-memory", "version": "1"}})),
            "tools/list" => Ok(
                json!({"tools": [{"name": "hang", "inputSchema": {"type": "object"}},
                                                {"name": "up", "inputSchema": {"type": "object"}}]}),
            ),
            "tools/call" => match params["name"].as_str() {
                Some("hang") => std::future::pending().await,
                Some("down") => Err(McpError::with_kind(McpErrorKind::Transport, "link down")),
                _ => {
                    Ok(json!({"content": [{"type": "text", "text": params["arguments"]["word"]}]}))
                }
            },
            other => Err(McpError::with_kind(
                McpErrorKind::Refused,
                format!("no {other}"),
            )),
        }
    }

    async fn notify(&self, method: &str, params: Value) -> Result<(), McpError> {
        self.0
            .lock()
            .unwrap()
            .notified
            .push((method.to_owned(), params));
        Ok(())
    }

    async fn close(&self) -> Result<(), McpError> {
        self.0.lock().unwrap().closed += 1;
        Ok(())
    }
}

#[tokio::test]
async fn a_transport_of_ones_own_gets_timeouts_and_keeps_its_error_kinds() {
    let transport = InMemory::default();
    let server = McpServer::new(transport.clone()).with_timeout(SHORT);
    let names: Vec<String> = server
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["hang", "up"]);
    assert_eq!(
        server.server_info().unwrap()["serverInfo"]["name"],
        json!("in-memory")
    );
    assert_eq!(
        call(&server, "up", json!({"word": "hi"})).await.unwrap(),
        "hi"
    );

    let started = Instant::now();
    let err = call(&server, "hang", json!({})).await.unwrap_err();
    assert_timeout(&err, "tools/call", started, Duration::from_secs(2));
    let err = call(&server, "down", json!({})).await.unwrap_err();
    assert!(mcp(&err).is_transport(), "{err:?}");
    assert_eq!(mcp(&err).message(), "link down");
    assert_eq!(err.to_string(), "link down");

    server.close().await.unwrap();
    let recorded = transport.0.lock().unwrap();
    let methods: Vec<&str> = recorded.notified.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(
        methods,
        ["notifications/initialized", "notifications/cancelled"]
    );
    assert_eq!(recorded.closed, 1);
}
