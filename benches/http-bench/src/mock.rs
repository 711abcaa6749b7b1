//! The loopback OpenAI-compatible mock: `POST /v1/chat/completions` over HTTP/1.1 with
//! keep-alive, in a process of its own so that its CPU is never counted against a client.
//!
//! A request with no tool message in it (no `"tool_call_id"`) is the first step of a run and
//! gets a `get_weather` call for Paris; one with a tool message gets the text answer. Each
//! comes non-streamed (`Content-Length`) or, when the body says `"stream": true`, as the SSE
//! chunks OpenAI sends (chunked transfer encoding, one HTTP chunk per event, `finish_reason`,
//! a usage chunk with `choices: []`, then `data: [DONE]`). The four responses are built once
//! at start, headers included, and each is sent with one write.
//!
//! `POST /v1/responses` answers the same run in the OpenAI Responses API's format: a
//! `function_call` item first, the answer's `message` item once the request carries a
//! `function_call_output`; streamed as the API streams (`response.created`, the item's
//! `added`, its deltas and `done` events, `response.completed` with the whole response,
//! each event named by an `event:` line).
//!
//! `GET /stats` answers `{"requests": n, "max_in_flight": m}`: how many completions were
//! served and the most held at once (with `--delay-ms`, how many runs really overlapped).

use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use memchr::memmem;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpSocket, TcpStream};

use crate::{ANSWER, CALL_ID};

const COMPLETION_ID: &str = "chatcmpl-Dx0XpqH8w09uBXwq1zFGYdETjtnEl";
const CREATED: u64 = 1_782_955_817;
const SERVED_MODEL: &str = "gpt-4o-mini-2024-07-18";
const FINGERPRINT: &str = "fp_d0469e1700";
/// The tool call's arguments, in the fragments a stream sends them in.
const ARGUMENT_FRAGMENTS: [&str; 5] = ["{\"", "city", "\":\"", "Paris", "\"}"];
/// The answer, in the pieces a stream sends it in (they join to [`ANSWER`]).
const ANSWER_PIECES: [&str; 17] = [
    "It", " is", " sunny", " in", " Paris", ",", " 22", " °C", ",", " with", " a", " light",
    " breeze", " from", " the", " west", ".",
];

/// The complete HTTP responses: Chat Completions', then the Responses API's.
struct Replies {
    json_tool: Vec<u8>,
    json_answer: Vec<u8>,
    sse_tool: Vec<u8>,
    sse_answer: Vec<u8>,
    responses: responses::Replies,
}

#[derive(Default)]
struct Stats {
    requests: AtomicUsize,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

/// Serves until its standard input closes, printing its base URL (`http://127.0.0.1:PORT`)
/// as the first line of its standard output. Each reply waits `delay` first.
pub(crate) fn serve(delay: Duration) -> Result<(), String> {
    crate::raise_fd_limit();
    debug_assert_eq!(ANSWER_PIECES.concat(), ANSWER);
    let replies = Arc::new(replies());
    let stats = Arc::new(Stats::default());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the mock's runtime: {e}"))?;
    runtime.block_on(async move {
        let socket = TcpSocket::new_v4().map_err(|e| format!("no socket: {e}"))?;
        socket
            .set_reuseaddr(true)
            .map_err(|e| format!("SO_REUSEADDR: {e}"))?;
        socket
            .bind(([127, 0, 0, 1], 0).into())
            .map_err(|e| format!("cannot bind 127.0.0.1: {e}"))?;
        // The kernel caps the backlog at net.core.somaxconn; a burst beyond it is retried.
        let listener = socket
            .listen(65_535)
            .map_err(|e| format!("cannot listen: {e}"))?;
        let address = listener
            .local_addr()
            .map_err(|e| format!("no local address: {e}"))?;
        {
            let mut out = std::io::stdout().lock();
            writeln!(out, "http://{address}")
                .and_then(|()| out.flush())
                .map_err(|e| format!("cannot print the address: {e}"))?;
        }
        // The parent holds our standard input: its end (or the parent's) ends the mock.
        std::thread::spawn(|| {
            let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
            std::process::exit(0);
        });
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    tokio::spawn(connection(stream, replies.clone(), stats.clone(), delay));
                }
                // Out of descriptors for a moment, say: take a breath and go on.
                Err(_) => tokio::time::sleep(Duration::from_millis(1)).await,
            }
        }
    })
}

/// Answers the requests of one keep-alive connection, in order, until the client closes it.
async fn connection(
    mut stream: TcpStream,
    replies: Arc<Replies>,
    stats: Arc<Stats>,
    delay: Duration,
) {
    let _ = stream.set_nodelay(true);
    let mut buffer: Vec<u8> = Vec::with_capacity(16 << 10);
    loop {
        let head_end = loop {
            if let Some(i) = memmem::find(&buffer, b"\r\n\r\n") {
                break i + 4;
            }
            match stream.read_buf(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        };
        let length = content_length(&buffer[..head_end]);
        while buffer.len() < head_end + length {
            match stream.read_buf(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
        let stats_reply;
        let reply: &[u8] = if buffer.starts_with(b"GET /stats") {
            let body = json!({
                "requests": stats.requests.load(Ordering::Relaxed),
                "max_in_flight": stats.max_in_flight.load(Ordering::Relaxed),
            })
            .to_string();
            stats_reply = response("application/json", body.as_bytes());
            &stats_reply
        } else {
            let body = &buffer[head_end..head_end + length];
            if buffer.starts_with(b"POST /v1/responses") {
                let answer = memmem::find(body, b"\"function_call_output\"").is_some();
                replies.responses.get(streamed(body), answer)
            } else {
                let answer = memmem::find(body, b"\"tool_call_id\"").is_some();
                match (streamed(body), answer) {
                    (false, false) => &replies.json_tool,
                    (false, true) => &replies.json_answer,
                    (true, false) => &replies.sse_tool,
                    (true, true) => &replies.sse_answer,
                }
            }
        };
        stats.requests.fetch_add(1, Ordering::Relaxed);
        let now = stats.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        stats.max_in_flight.fetch_max(now, Ordering::Relaxed);
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let written = stream.write_all(reply).await;
        stats.in_flight.fetch_sub(1, Ordering::Relaxed);
        if written.is_err() {
            return;
        }
        buffer.drain(..head_end + length);
    }
}

/// The `Content-Length` of a request head (0 without one).
fn content_length(head: &[u8]) -> usize {
    head.split(|&b| b == b'\n')
        .find_map(|line| {
            let (name, value) = line.split_at(line.iter().position(|&b| b == b':')?);
            name.eq_ignore_ascii_case(b"content-length")
                .then(|| std::str::from_utf8(&value[1..]).ok()?.trim().parse().ok())
                .flatten()
        })
        .unwrap_or(0)
}

/// Whether a request body asks for a stream: `"stream"`, a colon and `true`, with any
/// spacing (Python's `json.dumps` puts a space after the colon).
fn streamed(body: &[u8]) -> bool {
    memmem::find(body, b"\"stream\"").is_some_and(|at| {
        let rest = &body[at + 8..];
        let rest = rest.trim_ascii_start();
        rest.strip_prefix(b":")
            .is_some_and(|rest| rest.trim_ascii_start().starts_with(b"true"))
    })
}

fn response(content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// An SSE response as OpenAI sends one: chunked, one HTTP chunk per event.
fn sse_response(events: &[Value]) -> Vec<u8> {
    let mut out = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n\
        transfer-encoding: chunked\r\ncache-control: no-cache\r\n\r\n"
        .to_vec();
    let mut chunk = |data: &str| {
        let event = format!("data: {data}\n\n");
        out.extend_from_slice(format!("{:x}\r\n", event.len()).as_bytes());
        out.extend_from_slice(event.as_bytes());
        out.extend_from_slice(b"\r\n");
    };
    for event in events {
        chunk(&event.to_string());
    }
    chunk("[DONE]");
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

fn usage(prompt: u64, completion: u64) -> Value {
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0
        }
    })
}

fn completion(message: &Value, finish: &str, usage: Value) -> Vec<u8> {
    let body = json!({
        "id": COMPLETION_ID,
        "object": "chat.completion",
        "created": CREATED,
        "model": SERVED_MODEL,
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": finish
        }],
        "usage": usage,
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT
    });
    response("application/json", body.to_string().as_bytes())
}

/// One `chat.completion.chunk` with its delta and finish reason, as OpenAI sends it.
fn chunk(delta: &Value, finish: Option<&str>) -> Value {
    json!({
        "id": COMPLETION_ID,
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": SERVED_MODEL,
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT,
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        "usage": null,
        "obfuscation": "qfQVOwfh62"
    })
}

fn usage_chunk(prompt: u64, completion: u64) -> Value {
    json!({
        "id": COMPLETION_ID,
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": SERVED_MODEL,
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT,
        "choices": [],
        "usage": usage(prompt, completion),
        "obfuscation": "UqdZk1"
    })
}

fn replies() -> Replies {
    let arguments = ARGUMENT_FRAGMENTS.concat();
    let json_tool = completion(
        &json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [{
                "id": CALL_ID,
                "type": "function",
                "function": {"name": "get_weather", "arguments": arguments}
            }],
            "refusal": null,
            "annotations": []
        }),
        "tool_calls",
        usage(52, 15),
    );
    let json_answer = completion(
        &json!({"role": "assistant", "content": ANSWER, "refusal": null, "annotations": []}),
        "stop",
        usage(84, 17),
    );
    let mut tool_events = vec![chunk(
        &json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [{
                "index": 0,
                "id": CALL_ID,
                "type": "function",
                "function": {"name": "get_weather", "arguments": ""}
            }],
            "refusal": null
        }),
        None,
    )];
    for fragment in ARGUMENT_FRAGMENTS {
        tool_events.push(chunk(
            &json!({"tool_calls": [{"index": 0, "function": {"arguments": fragment}}]}),
            None,
        ));
    }
    tool_events.push(chunk(&json!({}), Some("tool_calls")));
    tool_events.push(usage_chunk(52, 15));
    let mut answer_events = vec![chunk(
        &json!({"role": "assistant", "content": "", "refusal": null}),
        None,
    )];
    for piece in ANSWER_PIECES {
        answer_events.push(chunk(&json!({"content": piece}), None));
    }
    answer_events.push(chunk(&json!({}), Some("stop")));
    answer_events.push(usage_chunk(84, 17));
    Replies {
        json_tool,
        json_answer,
        sse_tool: sse_response(&tool_events),
        sse_answer: sse_response(&answer_events),
        responses: responses::replies(),
    }
}

/// The same run in the Responses API's format, shaped as the API answers (the response
/// echoing the request's settings and tools on each of its lifecycle events).
mod responses {
    use serde_json::{Value, json};

    use super::{ANSWER_PIECES, ARGUMENT_FRAGMENTS, response};
    use crate::{ANSWER, CALL_ID};

    const RESPONSE_ID: &str = "resp_0e5d4a1c9f1b2c3d0068fabd81970881a0a1195f2cab45bd04";
    const SERVED_MODEL: &str = "gpt-4o-mini-2024-07-18";
    const CALL_ITEM: &str = "fc_0e5d4a1c9f1b2c3d0068fabd88db5c81a08e56f163bbc6088b";
    const MESSAGE_ITEM: &str = "msg_0e5d4a1c9f1b2c3d0068fabd97008081a0ad1b2362bcb153c9";

    pub(super) struct Replies {
        json_tool: Vec<u8>,
        json_answer: Vec<u8>,
        sse_tool: Vec<u8>,
        sse_answer: Vec<u8>,
    }

    impl Replies {
        pub(super) fn get(&self, streamed: bool, answer: bool) -> &[u8] {
            match (streamed, answer) {
                (false, false) => &self.json_tool,
                (false, true) => &self.json_answer,
                (true, false) => &self.sse_tool,
                (true, true) => &self.sse_answer,
            }
        }
    }

    /// A response object: `output` so far, `status`, and usage once completed.
    fn response_object(status: &str, output: &[Value], usage: Option<(u64, u64)>) -> Value {
        json!({
            "id": RESPONSE_ID,
            "object": "response",
            "created_at": 1_782_955_817,
            "status": status,
            "background": false,
            "error": null,
            "incomplete_details": null,
            "instructions": null,
            "max_output_tokens": null,
            "max_tool_calls": null,
            "model": SERVED_MODEL,
            "output": output,
            "parallel_tool_calls": true,
            "previous_response_id": null,
            "prompt_cache_key": null,
            "reasoning": {"effort": null, "summary": null},
            "safety_identifier": null,
            "service_tier": "default",
            "store": false,
            "temperature": 1.0,
            "text": {"format": {"type": "text"}, "verbosity": "medium"},
            "tool_choice": "auto",
            "tools": [{"type": "function", "name": "get_weather",
                "description": "Get the current weather in a city.",
                "parameters": crate::tool_schemas()[0]["function"]["parameters"],
                "strict": false}],
            "top_logprobs": 0,
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": usage.map(|(input, output)| json!({
                "input_tokens": input,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": output,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": input + output
            })),
            "user": null,
            "metadata": {}
        })
    }

    fn call_item(arguments: &str, status: &str) -> Value {
        json!({"id": CALL_ITEM, "type": "function_call", "status": status,
            "arguments": arguments, "call_id": CALL_ID, "name": "get_weather"})
    }

    fn message_item(text: Option<&str>, status: &str) -> Value {
        let content = match text {
            Some(text) => json!([{"type": "output_text", "annotations": [], "logprobs": [],
                "text": text}]),
            None => json!([]),
        };
        json!({"id": MESSAGE_ITEM, "type": "message", "status": status,
            "content": content, "role": "assistant"})
    }

    /// An SSE response as the API sends one: chunked, one HTTP chunk per event, each event
    /// named by its type; no `[DONE]`.
    fn sse(events: &[Value]) -> Vec<u8> {
        let mut out = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n\
            transfer-encoding: chunked\r\ncache-control: no-cache\r\n\r\n"
            .to_vec();
        for (n, event) in events.iter().enumerate() {
            let mut event = event.clone();
            event["sequence_number"] = json!(n);
            let kind = event["type"].as_str().unwrap_or_default().to_owned();
            let event = format!("event: {kind}\ndata: {event}\n\n");
            out.extend_from_slice(format!("{:x}\r\n", event.len()).as_bytes());
            out.extend_from_slice(event.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0\r\n\r\n");
        out
    }

    fn lifecycle(kind: &str, response: Value) -> Value {
        json!({"type": kind, "response": response})
    }

    pub(super) fn replies() -> Replies {
        let arguments = ARGUMENT_FRAGMENTS.concat();
        let call = call_item(&arguments, "completed");
        let message = message_item(Some(ANSWER), "completed");
        let json_tool = response(
            "application/json",
            response_object("completed", std::slice::from_ref(&call), Some((52, 15)))
                .to_string()
                .as_bytes(),
        );
        let json_answer = response(
            "application/json",
            response_object("completed", std::slice::from_ref(&message), Some((84, 17)))
                .to_string()
                .as_bytes(),
        );

        let mut tool = vec![
            lifecycle(
                "response.created",
                response_object("in_progress", &[], None),
            ),
            lifecycle(
                "response.in_progress",
                response_object("in_progress", &[], None),
            ),
            json!({"type": "response.output_item.added", "output_index": 0,
                "item": call_item("", "in_progress")}),
        ];
        for fragment in ARGUMENT_FRAGMENTS {
            tool.push(json!({"type": "response.function_call_arguments.delta",
                "item_id": CALL_ITEM, "output_index": 0, "delta": fragment,
                "obfuscation": "qfQVOwfh62"}));
        }
        tool.extend([
            json!({"type": "response.function_call_arguments.done", "item_id": CALL_ITEM,
                "output_index": 0, "arguments": arguments}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": call}),
            lifecycle(
                "response.completed",
                response_object("completed", std::slice::from_ref(&call), Some((52, 15))),
            ),
        ]);

        let part = |text: &str| {
            json!({"type": "output_text", "annotations": [], "logprobs": [],
            "text": text})
        };
        let mut answer = vec![
            lifecycle(
                "response.created",
                response_object("in_progress", &[], None),
            ),
            lifecycle(
                "response.in_progress",
                response_object("in_progress", &[], None),
            ),
            json!({"type": "response.output_item.added", "output_index": 0,
                "item": message_item(None, "in_progress")}),
            json!({"type": "response.content_part.added", "item_id": MESSAGE_ITEM,
                "output_index": 0, "content_index": 0, "part": part("")}),
        ];
        for piece in ANSWER_PIECES {
            answer.push(
                json!({"type": "response.output_text.delta", "item_id": MESSAGE_ITEM,
                "output_index": 0, "content_index": 0, "delta": piece, "logprobs": [],
                "obfuscation": "qfQVOwfh62"}),
            );
        }
        answer.extend([
            json!({"type": "response.output_text.done", "item_id": MESSAGE_ITEM,
                "output_index": 0, "content_index": 0, "text": ANSWER, "logprobs": []}),
            json!({"type": "response.content_part.done", "item_id": MESSAGE_ITEM,
                "output_index": 0, "content_index": 0, "part": part(ANSWER)}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": message}),
            lifecycle(
                "response.completed",
                response_object("completed", std::slice::from_ref(&message), Some((84, 17))),
            ),
        ]);
        Replies {
            json_tool,
            json_answer,
            sse_tool: sse(&tool),
            sse_answer: sse(&answer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_stream_flag_with_any_spacing() {
        assert!(streamed(br#"{"stream":true,"stream_options":{}}"#));
        assert!(streamed(br#"{"stream": true}"#));
        assert!(!streamed(br#"{"stream_options": {"include_usage": true}}"#));
        assert!(!streamed(br#"{"stream": false}"#));
        assert!(!streamed(br#"{"model": "m"}"#));
    }

    #[test]
    fn reads_the_content_length() {
        assert_eq!(
            content_length(b"POST / HTTP/1.1\r\nContent-Length: 42\r\n\r\n"),
            42
        );
        assert_eq!(content_length(b"GET / HTTP/1.1\r\n\r\n"), 0);
    }
}
