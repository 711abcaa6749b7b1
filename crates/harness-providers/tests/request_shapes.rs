//! Every recorded request of tests/fixtures, rebuilt as a neutral conversation and sent
//! through our provider: our request has the recorded shape wherever the keys and values are
//! ours to set. What is not ours is named where it is left out of the comparison (pydantic-ai's
//! `tool_choice`, `is_error`, Anthropic's server-side tool blocks, Gemini's response key).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use harness_core::{ModelSettings, Request};

use std::collections::HashMap;
use std::sync::Arc;

use harness_core::{Block, Message, ReasoningLevel, Thinking, ToolCall, ToolSpec};
use harness_providers::{Anthropic, Gemini, LlamaCpp, OpenAi};
use serde_json::{Value, json};
use support::{fixture_json, openai_messages_normal};

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

// OpenAI-compatible -------------------------------------------------------------------------

fn openai_conversation(body: &Value) -> (Vec<Message>, Vec<Arc<ToolSpec>>) {
    let mut names = HashMap::new();
    let mut messages = Vec::new();
    for m in body["messages"].as_array().unwrap() {
        let message = match m["role"].as_str().unwrap() {
            "system" => Message::system(text(&m["content"])),
            "user" => Message::user(text(&m["content"])),
            "assistant" => {
                let calls: Vec<ToolCall> = m["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| {
                        let id = c["id"].as_str().unwrap().to_owned();
                        let name = c["function"]["name"].as_str().unwrap().to_owned();
                        names.insert(id.clone(), name.clone());
                        let args =
                            serde_json::from_str(c["function"]["arguments"].as_str().unwrap())
                                .unwrap();
                        ToolCall::new(name, args).with_id(id)
                    })
                    .collect();
                Message::assistant(text(&m["content"])).with_tool_calls(calls)
            }
            "tool" => {
                let id = m["tool_call_id"].as_str().unwrap();
                Message::tool(text(&m["content"]), names[id].clone()).with_call_id(id)
            }
            other => panic!("role {other}"),
        };
        messages.push(message);
    }
    let tools = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            let f = &t["function"];
            Arc::new(ToolSpec::new(
                f["name"].as_str().unwrap(),
                f["description"].as_str().unwrap_or(""),
                f["parameters"].clone(),
            ))
        })
        .collect();
    (messages, tools)
}

fn openai_normal(body: &Value) -> Value {
    let messages = openai_messages_normal(&body["messages"]);
    let tools = body.get("tools").map(|tools| {
        let mut tools = tools.clone();
        for t in tools.as_array_mut().unwrap() {
            t["function"].as_object_mut().unwrap().remove("strict"); // the caller's choice
        }
        tools
    });
    json!({"messages": messages, "tools": tools})
}

#[test]
fn openai_and_llamacpp_requests() {
    for (path, stream) in [
        ("openai/chat_nonstream_tool_call.request.json", false),
        (
            "openai/chat_stream_tool_call_include_usage.request.json",
            true,
        ),
        (
            "openai/chat_stream_text_after_tool_result_include_usage.request.json",
            true,
        ),
        ("llamacpp/chat_nonstream_text.request.json", false),
        ("llamacpp/chat_stream_text_include_usage.request.json", true),
    ] {
        let recorded = fixture_json(path);
        let body = recorded.get("body").unwrap_or(&recorded);
        let (messages, tools) = openai_conversation(body);
        let model = if path.starts_with("llamacpp") {
            LlamaCpp::builder(body["model"].as_str().unwrap())
                .build()
                .unwrap()
        } else {
            OpenAi::builder(body["model"].as_str().unwrap())
                .api_key("k")
                .build()
                .unwrap()
        };
        let ours = model.request_body(&Request::new(&messages).with_tools(&tools), stream);
        assert_eq!(openai_normal(&ours), openai_normal(body), "{path}");
        assert_eq!(ours["model"], body["model"], "{path}");
        if stream {
            assert_eq!(ours["stream"], json!(true), "{path}");
            assert_eq!(
                ours["stream_options"],
                json!({"include_usage": true}),
                "{path}"
            );
            if let Some(theirs) = body.get("stream_options") {
                assert_eq!(&ours["stream_options"], theirs, "{path}");
            }
        }
    }
}

// Anthropic ---------------------------------------------------------------------------------

/// Block types that are the vendor's own (server-side tools): not ours to send.
const SERVER_BLOCKS: &[&str] = &["server_tool_use", "tool_search_tool_result"];

fn anthropic_conversation(body: &Value) -> (Vec<Message>, Vec<Arc<ToolSpec>>) {
    let mut names = HashMap::new();
    let mut messages = Vec::new();
    if let Some(system) = body.get("system") {
        messages.push(Message::system(text(system)));
    }
    for m in body["messages"].as_array().unwrap() {
        let blocks: Vec<Value> = match &m["content"] {
            Value::String(s) => vec![json!({"type": "text", "text": s})],
            other => other.as_array().unwrap().clone(),
        };
        if m["role"] == "assistant" {
            let mut content = Vec::new();
            let mut calls = Vec::new();
            for b in &blocks {
                match b["type"].as_str().unwrap() {
                    "text" => content.push(Block::text(b["text"].as_str().unwrap())),
                    "thinking" => content.push(
                        Thinking::signed(
                            b["thinking"].as_str().unwrap(),
                            b["signature"].as_str().unwrap(),
                        )
                        .into(),
                    ),
                    "tool_use" => {
                        let id = b["id"].as_str().unwrap().to_owned();
                        names.insert(id.clone(), b["name"].as_str().unwrap().to_owned());
                        calls.push(
                            ToolCall::new(b["name"].as_str().unwrap(), b["input"].clone())
                                .with_id(id),
                        );
                    }
                    _ => {}
                }
            }
            messages.push(Message::assistant(content).with_tool_calls(calls));
        } else {
            let user_text: String = blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .map(|b| text(&b["text"]))
                .collect();
            if !user_text.is_empty() {
                messages.push(Message::user(user_text));
            }
            for b in blocks.iter().filter(|b| b["type"] == "tool_result") {
                let id = b["tool_use_id"].as_str().unwrap();
                messages
                    .push(Message::tool(text(&b["content"]), names[id].clone()).with_call_id(id));
            }
        }
    }
    let tools = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t.get("input_schema").is_some())
        .map(|t| {
            Arc::new(ToolSpec::new(
                t["name"].as_str().unwrap(),
                t["description"].as_str().unwrap_or(""),
                t["input_schema"].clone(),
            ))
        })
        .collect();
    (messages, tools)
}

fn anthropic_normal(body: &Value) -> Value {
    let messages: Vec<Value> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let content = match &m["content"] {
                Value::String(s) => json!([{"type": "text", "text": s}]),
                other => other.clone(),
            };
            let mut blocks: Vec<Value> = Vec::new();
            for b in content.as_array().unwrap() {
                if SERVER_BLOCKS.contains(&b["type"].as_str().unwrap_or("")) {
                    continue;
                }
                let mut b = b.as_object().unwrap().clone();
                b.remove("is_error");
                b.remove("cache_control");
                if b.get("type") == Some(&json!("tool_result")) {
                    let joined = text(&b["content"]);
                    b.insert("content".into(), Value::from(joined));
                }
                // Text split around a server block is one text to us.
                match (blocks.last_mut(), b.get("type").and_then(Value::as_str)) {
                    (Some(prev), Some("text")) if prev["type"] == "text" => {
                        let joined = format!(
                            "{}{}",
                            prev["text"].as_str().unwrap(),
                            b["text"].as_str().unwrap()
                        );
                        prev["text"] = Value::from(joined);
                    }
                    _ => blocks.push(Value::Object(b)),
                }
            }
            json!({"role": m["role"], "content": blocks})
        })
        .collect();
    let tools: Vec<Value> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t.get("input_schema").is_some())
        .map(|t| json!({"name": t["name"], "description": t.get("description").cloned().unwrap_or(json!("")), "input_schema": t["input_schema"]}))
        .collect();
    json!({"messages": messages, "tools": tools})
}

#[test]
fn anthropic_requests() {
    for path in [
        "anthropic/messages_nonstream_final_text.request.json",
        "anthropic/messages_nonstream_thinking_then_tool_use.request.json",
        "anthropic/messages_stream_final_text_after_tool_result.request.json",
        "anthropic/messages_stream_server_tool_search_then_tool_use_input_json_delta.request.json",
        "anthropic/messages_stream_thinking_signature_delta.request.json",
    ] {
        let recorded = fixture_json(path);
        let body = &recorded["body"];
        let (messages, tools) = anthropic_conversation(body);
        let mut settings = ModelSettings::new()
            .with_max_tokens(u32::try_from(body["max_tokens"].as_u64().unwrap()).unwrap());
        let budget = body["thinking"]["budget_tokens"].as_u64();
        if budget == Some(1024) {
            settings = settings.with_reasoning(ReasoningLevel::Low);
        }
        let model = Anthropic::builder(body["model"].as_str().unwrap())
            .api_key("k")
            .settings(settings)
            .build()
            .unwrap();
        let stream = body["stream"] == json!(true);
        let ours = model.request_body(&Request::new(&messages).with_tools(&tools), stream);
        assert_eq!(anthropic_normal(&ours), anthropic_normal(body), "{path}");
        assert_eq!(ours["model"], body["model"], "{path}");
        assert_eq!(ours["max_tokens"], body["max_tokens"], "{path}");
        assert_eq!(
            ours.get("stream").cloned().unwrap_or(json!(false)),
            body["stream"],
            "{path}"
        );
        if budget == Some(1024) {
            assert_eq!(ours["thinking"], body["thinking"], "{path}");
        }
    }
}

// Gemini ------------------------------------------------------------------------------------

fn gemini_conversation(body: &Value) -> (Vec<Message>, Vec<Arc<ToolSpec>>) {
    let mut messages = Vec::new();
    if let Some(system) = body.get("systemInstruction") {
        messages.push(Message::system(text(&system["parts"])));
    }
    for content in body["contents"].as_array().unwrap() {
        let parts = content["parts"].as_array().unwrap();
        if content["role"] == "model" {
            let mut blocks: Vec<Block> = Vec::new();
            let mut calls = Vec::new();
            for p in parts {
                if let Some(sig) = p["thoughtSignature"].as_str() {
                    blocks.push(Thinking::signed("", sig).into());
                }
                if let Some(t) = p["text"].as_str() {
                    blocks.push(Block::text(t));
                }
                if let Some(call) = p.get("functionCall") {
                    let tool_call =
                        ToolCall::new(call["name"].as_str().unwrap(), call["args"].clone());
                    calls.push(match call["id"].as_str() {
                        Some(id) => tool_call.with_id(id),
                        None => tool_call,
                    });
                }
            }
            messages.push(Message::assistant(blocks).with_tool_calls(calls));
        } else {
            for p in parts {
                if let Some(t) = p["text"].as_str() {
                    messages.push(Message::user(t));
                }
                if let Some(response) = p.get("functionResponse") {
                    let result = response["response"]
                        .as_object()
                        .and_then(|r| r.values().next())
                        .map(text)
                        .unwrap_or_default();
                    let message = Message::tool(result, response["name"].as_str().unwrap());
                    messages.push(match response["id"].as_str() {
                        Some(id) => message.with_call_id(id),
                        None => message,
                    });
                }
            }
        }
    }
    let tools = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| {
            t["functionDeclarations"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|d| {
            let schema = d
                .get("parameters_json_schema")
                .or_else(|| d.get("parameters"))
                .cloned()
                .unwrap_or(json!({}));
            Arc::new(ToolSpec::new(
                d["name"].as_str().unwrap(),
                d["description"].as_str().unwrap_or(""),
                schema,
            ))
        })
        .collect();
    (messages, tools)
}

/// Gemini contents compared on what is ours: a function response's name and id (the key its
/// result sits under is each client's own), every other part as sent. Declarations compare
/// by name, description and schema, whichever schema key the recording used.
fn gemini_normal(body: &Value) -> Value {
    let contents: Vec<Value> = body["contents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let parts: Vec<Value> = c["parts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| match p.get("functionResponse") {
                    Some(r) => json!({"functionResponse": {"name": r["name"], "id": r.get("id")}}),
                    None => p.clone(),
                })
                .collect();
            json!({"role": c["role"], "parts": parts})
        })
        .collect();
    let declarations: Vec<Value> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| {
            t["functionDeclarations"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|d| {
            json!({
                "name": d["name"],
                "description": d.get("description").cloned().unwrap_or(json!("")),
                "schema": d.get("parameters_json_schema").or_else(|| d.get("parameters")),
            })
        })
        .collect();
    json!({"contents": contents, "declarations": declarations, "system": body.get("systemInstruction").map(|s| &s["parts"])})
}

#[test]
fn gemini_requests() {
    for path in [
        "gemini/generate_content_cached_content.request.json",
        "gemini/generate_content_function_call_avglogprobs.request.json",
        "gemini/generate_content_function_call_thought_signature.request.json",
        "gemini/generate_content_text_after_function_response_cachedContentTokenCount.request.json",
        "gemini/stream_function_call_thought_signature.request.json",
        "gemini/stream_text_after_function_response.request.json",
        "gemini/stream_text_final.request.json",
    ] {
        let recorded = fixture_json(path);
        let body = &recorded["body"];
        let (messages, tools) = gemini_conversation(body);
        let model = Gemini::builder("g").api_key("k").build().unwrap();
        let ours = model
            .request_body(&Request::new(&messages).with_tools(&tools))
            .unwrap();
        assert_eq!(gemini_normal(&ours), gemini_normal(body), "{path}");
        // All declarations in one tools entry (the recording may have used several).
        if !tools.is_empty() {
            assert_eq!(ours["tools"].as_array().map(Vec::len), Some(1), "{path}");
        }
    }
}
