//! Tool calls with no arguments, in each form a vendor or a compatible server sends them:
//! the arguments absent, `null`, the text `"null"`, `""`, or whitespace. Every vendor, streamed
//! or not, reads each as no arguments (`{}`), which a tool without required parameters
//! accepts; anything else that is not one JSON object is still kept as sent, never run.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
use support::Vendor;

use harness_core::{Agent, CompletionResponse, Role, StopReason};
use harness_providers::replay::{Format, decode_answer, decode_stream};
use serde_json::{Map, Value, json};
use support::{Reply, Server};

const VENDORS: [Vendor; 10] = [
    Vendor::OpenAi,
    Vendor::Anthropic,
    Vendor::Gemini,
    Vendor::Cohere,
    Vendor::Responses,
    Vendor::VertexGemini,
    Vendor::VertexAnthropic,
    Vendor::Bedrock,
    Vendor::Azure,
    Vendor::AzureResponses,
];

/// How a call's arguments are sent.
#[derive(Clone, Copy, Debug)]
enum Args {
    /// No arguments key at all.
    Absent,
    /// The JSON value `null`.
    Null,
    /// This text: a JSON string where the vendor sends a value, the fragments of a stream
    /// where it streams text (split in two, so a reader must join them).
    Text(&'static str),
}

const NO_ARGUMENTS: [Args; 5] = [
    Args::Absent,
    Args::Null,
    Args::Text("null"),
    Args::Text(""),
    Args::Text(" \n\t "),
];

/// Texts that are not one JSON object and are not "no arguments".
const NOT_AN_OBJECT: [&str; 6] = ["nul", "\"null\"", "[]", "5", "{\"a\": ", "null null"];

impl Args {
    /// The arguments as a JSON value, `None` when absent.
    fn value(self) -> Option<Value> {
        match self {
            Self::Absent => None,
            Self::Null => Some(Value::Null),
            Self::Text(text) => Some(Value::from(text)),
        }
    }

    /// The text fragments a stream sends.
    fn pieces(self) -> Vec<&'static str> {
        match self {
            Self::Text(text) => {
                let (head, tail) = text.split_at(text.len() / 2);
                vec![head, tail]
            }
            _ => Vec::new(),
        }
    }
}

/// `object` with `key` set to `value`, or without it.
fn with(mut object: Value, key: &str, value: Option<Value>) -> Value {
    if let Some(value) = value {
        object[key] = value;
    }
    object
}

impl Vendor {
    fn format(self) -> Format {
        match self {
            Self::OpenAi | Self::Azure => Format::OpenAi,
            Self::Anthropic | Self::VertexAnthropic => Format::Anthropic,
            Self::Gemini | Self::VertexGemini => Format::Gemini,
            Self::Cohere => Format::Cohere,
            Self::Responses | Self::AzureResponses => Format::OpenAiResponses,
            Self::Bedrock => Format::Bedrock,
        }
    }

    /// One event of the vendor's stream; Bedrock's a binary frame of the event type `type`
    /// names, its payload the rest.
    fn event(self, data: &Value) -> Vec<u8> {
        let kind = || data["type"].as_str().unwrap();
        match self {
            Self::OpenAi | Self::Azure => format!("data: {data}\n\n").into_bytes(),
            Self::Anthropic
            | Self::VertexAnthropic
            | Self::Cohere
            | Self::Responses
            | Self::AzureResponses => format!("event: {}\ndata: {data}\n\n", kind()).into_bytes(),
            Self::Gemini | Self::VertexGemini => format!("data: {data}\r\n\r\n").into_bytes(),
            Self::Bedrock => {
                let mut payload = data.clone();
                payload.as_object_mut().unwrap().remove("type");
                support::eventstream_frame(
                    &[
                        (":event-type", kind()),
                        (":content-type", "application/json"),
                        (":message-type", "event"),
                    ],
                    payload.to_string().as_bytes(),
                )
            }
        }
    }

    /// A stream of `events`, with the `[DONE]` after them where the vendor sends one.
    fn body(self, events: &[Value], done: bool) -> Vec<u8> {
        let mut body: Vec<u8> = events.iter().flat_map(|event| self.event(event)).collect();
        if done {
            body.extend_from_slice(b"data: [DONE]\n\n");
        }
        body
    }

    /// A non-streamed turn with one call of `now`.
    fn answer(self, args: Args) -> Value {
        match self {
            Self::OpenAi | Self::Azure => {
                let function = with(json!({"name": "now"}), "arguments", args.value());
                json!({"id": "chatcmpl-1", "object": "chat.completion", "choices": [{
                    "index": 0, "finish_reason": "tool_calls", "message": {
                        "role": "assistant", "content": null, "tool_calls": [
                            {"id": "call_1", "type": "function", "function": function}]}}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}})
            }
            Self::Anthropic | Self::VertexAnthropic => {
                let block = with(
                    json!({"type": "tool_use", "id": "toolu_1", "name": "now"}),
                    "input",
                    args.value(),
                );
                json!({"id": "msg_1", "type": "message", "role": "assistant",
                    "content": [block], "stop_reason": "tool_use",
                    "usage": {"input_tokens": 5, "output_tokens": 3}})
            }
            Self::Gemini | Self::VertexGemini => {
                let call = with(json!({"name": "now"}), "args", args.value());
                json!({"candidates": [{"content": {"role": "model", "parts": [
                    {"functionCall": call}]}, "finishReason": "STOP", "index": 0}]})
            }
            Self::Cohere => {
                let function = with(json!({"name": "now"}), "arguments", args.value());
                json!({"id": "c-1", "message": {"role": "assistant", "tool_calls": [
                    {"id": "now_1", "type": "function", "function": function}]},
                    "finish_reason": "TOOL_CALL",
                    "usage": {"tokens": {"input_tokens": 5, "output_tokens": 3}}})
            }
            Self::Responses | Self::AzureResponses => json!({"id": "resp_1", "object": "response",
                "status": "completed", "output": [Self::responses_call(args.value())],
                "usage": {"input_tokens": 5, "output_tokens": 3, "total_tokens": 8}}),
            Self::Bedrock => {
                let tool = with(
                    json!({"toolUseId": "tooluse_1", "name": "now"}),
                    "input",
                    args.value(),
                );
                json!({"output": {"message": {"role": "assistant", "content": [
                    {"toolUse": tool}]}}, "stopReason": "tool_use",
                    "usage": {"inputTokens": 5, "outputTokens": 3, "totalTokens": 8}})
            }
        }
    }

    /// ConverseStream's last events: the stop and the metadata with the usage.
    fn bedrock_end(stop_reason: &str) -> [Value; 2] {
        [
            json!({"type": "messageStop", "stopReason": stop_reason}),
            json!({"type": "metadata",
                "usage": {"inputTokens": 5, "outputTokens": 3, "totalTokens": 8},
                "metrics": {"latencyMs": 9}}),
        ]
    }

    /// A Responses `function_call` item of `now`, its arguments as given.
    fn responses_call(arguments: Option<Value>) -> Value {
        with(
            json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "now",
                "status": "completed"}),
            "arguments",
            arguments,
        )
    }

    /// A streamed turn with one call of `now`, its arguments as the vendor streams them:
    /// OpenAI's and Anthropic's text in fragments (Anthropic's block opening with the `{}`
    /// placeholder it sends), a `null` or no arguments in the call's first event; Gemini's
    /// value whole in one chunk; Bedrock's text in `toolUse` deltas, a `null` or no input in
    /// the block's start.
    fn stream(self, args: Args) -> Vec<u8> {
        let events: Vec<Value> = match self {
            Self::OpenAi | Self::Azure => {
                let mut function = json!({"name": "now"});
                if let Args::Null = args {
                    function["arguments"] = Value::Null;
                }
                let mut events = vec![json!({"choices": [{"index": 0, "delta": {
                    "role": "assistant", "content": null, "tool_calls": [{"index": 0,
                    "id": "call_1", "type": "function", "function": function}]},
                    "finish_reason": null}]})];
                for piece in args.pieces() {
                    events.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                        {"index": 0, "function": {"arguments": piece}}]},
                        "finish_reason": null}]}));
                }
                events.push(json!({"choices": [
                    {"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}));
                events
            }
            Self::Anthropic | Self::VertexAnthropic => {
                let input = match args {
                    Args::Absent => None,
                    Args::Null => Some(Value::Null),
                    Args::Text(_) => Some(json!({})),
                };
                let block = with(
                    json!({"type": "tool_use", "id": "toolu_1", "name": "now"}),
                    "input",
                    input,
                );
                let mut events = vec![
                    json!({"type": "message_start", "message": {"id": "msg_1",
                        "type": "message", "role": "assistant", "content": [], "model": "m",
                        "usage": {"input_tokens": 5, "output_tokens": 1}}}),
                    json!({"type": "content_block_start", "index": 0, "content_block": block}),
                ];
                for piece in args.pieces() {
                    events.push(json!({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "input_json_delta", "partial_json": piece}}));
                }
                events.extend([
                    json!({"type": "content_block_stop", "index": 0}),
                    json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                        "usage": {"output_tokens": 3}}),
                    json!({"type": "message_stop"}),
                ]);
                events
            }
            Self::Gemini | Self::VertexGemini => vec![self.answer(args)],
            Self::Cohere => {
                let mut function = json!({"name": "now"});
                if let Args::Null = args {
                    function["arguments"] = Value::Null;
                } else if let Args::Text(_) = args {
                    function["arguments"] = json!("");
                }
                let mut events = vec![
                    json!({"id": "c-1", "type": "message-start", "delta": {"message": {
                        "role": "assistant", "content": [], "tool_plan": "", "tool_calls": [],
                        "citations": []}}}),
                    json!({"type": "tool-call-start", "index": 0, "delta": {"message": {
                        "tool_calls": {"id": "now_1", "type": "function", "function": function}}}}),
                ];
                for piece in args.pieces() {
                    events.push(json!({"type": "tool-call-delta", "index": 0, "delta": {
                        "message": {"tool_calls": {"function": {"arguments": piece}}}}}));
                }
                events.extend([
                    json!({"type": "tool-call-end", "index": 0}),
                    json!({"type": "message-end", "delta": {"finish_reason": "TOOL_CALL",
                        "usage": {"tokens": {"input_tokens": 5, "output_tokens": 3}}}}),
                ]);
                events
            }
            Self::Responses | Self::AzureResponses => {
                let mut events = vec![
                    json!({"type": "response.created", "response": {"id": "resp_1",
                        "status": "in_progress", "output": []}}),
                    json!({"type": "response.output_item.added", "output_index": 0,
                        "item": Self::responses_call(Some(json!("")))}),
                ];
                for piece in args.pieces() {
                    events.push(json!({"type": "response.function_call_arguments.delta",
                        "output_index": 0, "item_id": "fc_1", "delta": piece}));
                }
                let whole = Self::responses_call(args.value());
                events.extend([
                    json!({"type": "response.output_item.done", "output_index": 0,
                        "item": whole.clone()}),
                    json!({"type": "response.completed", "response": {"id": "resp_1",
                        "status": "completed", "output": [whole]}}),
                ]);
                events
            }
            Self::Bedrock => Self::bedrock_stream(args),
        };
        self.body(&events, matches!(self.wire(), Self::OpenAi | Self::Cohere))
    }

    /// ConverseStream's events for a call of `now`: the input as text in `toolUse` deltas,
    /// a `null` or no input in the block's start.
    fn bedrock_stream(args: Args) -> Vec<Value> {
        let input = match args {
            Args::Null => Some(Value::Null),
            Args::Absent | Args::Text(_) => None,
        };
        let tool = with(
            json!({"toolUseId": "tooluse_1", "name": "now"}),
            "input",
            input,
        );
        let mut events = vec![
            json!({"type": "messageStart", "role": "assistant"}),
            json!({"type": "contentBlockStart", "contentBlockIndex": 0,
                "start": {"toolUse": tool}}),
        ];
        for piece in args.pieces() {
            events.push(json!({"type": "contentBlockDelta", "contentBlockIndex": 0,
                "delta": {"toolUse": {"input": piece}}}));
        }
        events.push(json!({"type": "contentBlockStop", "contentBlockIndex": 0}));
        events.extend(Self::bedrock_end("tool_use"));
        events
    }

    /// The turn read as the vendor's provider reads it.
    fn read(self, args: Args, streamed: bool) -> CompletionResponse {
        if streamed {
            let body = self.stream(args);
            decode_stream(self.format(), &body, 7, |_| {}).unwrap()
        } else {
            decode_answer(self.format(), &self.answer(args)).unwrap()
        }
    }

    fn streams(self, request: &support::Request) -> bool {
        match self {
            Self::Gemini | Self::VertexGemini => request.target.contains("streamGenerateContent"),
            Self::Bedrock => request.target.ends_with("/converse-stream"),
            _ => request.json()["stream"] == json!(true),
        }
    }

    /// A non-streamed text answer.
    fn text_answer(self, text: &str) -> Value {
        match self {
            Self::OpenAi | Self::Azure => json!({"id": "chatcmpl-2", "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop"}]}),
            Self::Anthropic | Self::VertexAnthropic => {
                json!({"id": "msg_2", "type": "message", "role": "assistant",
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 5, "output_tokens": 3}})
            }
            Self::Gemini | Self::VertexGemini => {
                json!({"candidates": [{"content": {"role": "model",
                "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}]})
            }
            Self::Cohere => json!({"id": "c-2", "message": {"role": "assistant",
                "content": [{"type": "text", "text": text}]}, "finish_reason": "COMPLETE"}),
            Self::Responses | Self::AzureResponses => json!({"id": "resp_2", "object": "response",
                "status": "completed", "output": [{"type": "message", "id": "msg_1",
                "role": "assistant", "content": [{"type": "output_text", "text": text}]}]}),
            Self::Bedrock => json!({"output": {"message": {"role": "assistant",
                "content": [{"text": text}]}}, "stopReason": "end_turn",
                "usage": {"inputTokens": 5, "outputTokens": 3, "totalTokens": 8}}),
        }
    }

    /// A streamed text answer.
    fn text_stream(self, text: &str) -> Vec<u8> {
        let events = match self {
            Self::OpenAi | Self::Azure => vec![
                json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": text},
                    "finish_reason": null}]}),
                json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            ],
            Self::Anthropic | Self::VertexAnthropic => vec![
                json!({"type": "message_start", "message": {"id": "msg_2", "type": "message",
                    "role": "assistant", "content": [], "model": "m",
                    "usage": {"input_tokens": 5, "output_tokens": 1}}}),
                json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "text", "text": ""}}),
                json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": text}}),
                json!({"type": "content_block_stop", "index": 0}),
                json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                    "usage": {"output_tokens": 3}}),
                json!({"type": "message_stop"}),
            ],
            Self::Gemini | Self::VertexGemini => vec![self.text_answer(text)],
            Self::Cohere => vec![
                json!({"id": "c-2", "type": "message-start", "delta": {"message": {
                    "role": "assistant", "content": [], "tool_plan": "", "tool_calls": [],
                    "citations": []}}}),
                json!({"type": "content-start", "index": 0, "delta": {"message": {
                    "content": {"type": "text", "text": ""}}}}),
                json!({"type": "content-delta", "index": 0, "delta": {"message": {
                    "content": {"text": text}}}}),
                json!({"type": "content-end", "index": 0}),
                json!({"type": "message-end", "delta": {"finish_reason": "COMPLETE"}}),
            ],
            Self::Responses | Self::AzureResponses => vec![
                json!({"type": "response.output_text.delta", "output_index": 0,
                    "item_id": "msg_1", "delta": text}),
                json!({"type": "response.completed", "response": self.text_answer(text)}),
            ],
            Self::Bedrock => {
                let mut events = vec![
                    json!({"type": "messageStart", "role": "assistant"}),
                    json!({"type": "contentBlockDelta", "contentBlockIndex": 0,
                        "delta": {"text": text}}),
                    json!({"type": "contentBlockStop", "contentBlockIndex": 0}),
                ];
                events.extend(Self::bedrock_end("end_turn"));
                events
            }
        };
        self.body(&events, self.wire() == Self::OpenAi)
    }
}

#[test]
fn every_vendor_reads_absent_null_and_blank_arguments_as_none() {
    for vendor in VENDORS {
        for streamed in [false, true] {
            for args in NO_ARGUMENTS {
                let case = format!("{vendor:?}, streamed: {streamed}, {args:?}");
                let response = vendor.read(args, streamed);
                let calls = response.tool_calls();
                assert_eq!(calls.len(), 1, "{case}: {calls:?}");
                let call = &calls[0];
                assert_eq!(call.name, "now", "{case}");
                assert_eq!(call.arguments, Map::new(), "{case}");
                assert_eq!(call.raw_arguments, None, "{case}: refused");
                assert_eq!(call.arguments_error(), None, "{case}");
                assert_eq!(call.arguments_text(), "{}", "{case}");
            }
        }
    }
}

#[test]
fn arguments_that_are_not_one_object_are_still_kept_as_sent() {
    for vendor in VENDORS {
        for streamed in [false, true] {
            for text in NOT_AN_OBJECT {
                let case = format!("{vendor:?}, streamed: {streamed}, {text:?}");
                let response = vendor.read(Args::Text(text), streamed);
                let call = &response.tool_calls()[0];
                assert_eq!(call.raw_arguments.as_deref(), Some(text), "{case}");
                assert_eq!(call.arguments, Map::new(), "{case}");
                assert!(call.arguments_error().is_some(), "{case}");
            }
        }
    }
}

/// What time it is.
#[harness_core::tool]
fn now() -> String {
    "noon".to_owned()
}

/// Over loopback, through an agent: a call of a tool without parameters whose arguments are
/// the text `null` runs, and the model reads its result.
#[tokio::test]
async fn an_agent_runs_a_call_without_parameters_sent_with_null_arguments() {
    for vendor in VENDORS {
        for streamed in [false, true] {
            let case = format!("{vendor:?}, streamed: {streamed}");
            let server = Server::start(move |i, request| {
                let streams = vendor.streams(request);
                match (i, streams) {
                    (0, true) => Reply::sse(vendor.stream(Args::Text("null"))),
                    (0, false) => Reply::json(200, vendor.answer(Args::Text("null")).to_string()),
                    (_, true) => Reply::sse(vendor.text_stream("It is noon.")),
                    (_, false) => Reply::json(200, vendor.text_answer("It is noon.").to_string()),
                }
            })
            .await;
            let agent = Agent::builder(vendor.model(&server.url))
                .tool(Now)
                .build()
                .unwrap();
            let state = if streamed {
                let mut events = agent.stream("What time is it?");
                let mut last = None;
                while let Some(event) = futures_util::StreamExt::next(&mut events).await {
                    last = Some(event.unwrap());
                }
                match last {
                    Some(harness_core::AgentEvent::Finished(state)) => *state,
                    other => panic!("{case}: the run did not finish: {other:?}"),
                }
            } else {
                agent.run("What time is it?").await.unwrap()
            };
            assert_eq!(state.stop_reason, StopReason::Answer, "{case}");
            assert_eq!(state.output_text(), "It is noon.", "{case}");
            let result = state
                .messages
                .iter()
                .find(|m| m.role == Role::Tool)
                .unwrap_or_else(|| panic!("{case}: no tool result"));
            assert_eq!(result.content.text(), "noon", "{case}");
        }
    }
}
