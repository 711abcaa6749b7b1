//! The bytes each vendor sends, pinned: a conversation with every kind of content (system
//! messages, text, images, a document, signed and unsigned thinking, tool calls with object
//! and broken arguments, tool results with media) and every setting, sent to loopback. The
//! expected bodies were recorded from the provider as it was before requests were written
//! from borrowed structs (when each was built as a `serde_json::Value`), so they hold the
//! key order and escaping byte for byte; `request_body` must show the same JSON. One change
//! since: the call `h` has no id, and OpenAI and Anthropic are now sent `call_3_2` for it and
//! its result (they refuse an empty id) where the recording had `""`.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::Arc;

use futures_util::StreamExt as _;
use harness_core::{
    Block, Content, Document, Image, Llm, Message, ModelSettings, OutputSchema, PromptCache,
    ReasoningLevel, Request, Thinking, ToolCall, ToolChoice, ToolSpec,
};
use harness_providers::{Anthropic, Gemini, OpenAi, RetryPolicy};
use serde_json::json;
use support::{Reply, Server};

fn conversation(with_url: bool) -> Vec<Message> {
    let mut blocks = vec![
        Block::text("Look at \"this\"\n."),
        Image::from_base64("aGk=", "image/png").into(),
        Document::pdf("JVBE").with_name("r.pdf").into(),
        Thinking::new("hidden").into(),
    ];
    if with_url {
        blocks.push(Image::from_url("https://x/cat.png").into());
    }
    let mut broken = ToolCall::new("g", json!({}));
    broken.raw_arguments = Some("{not json".into());
    vec![
        Message::system("Be brief."),
        Message::user("first é ✓"),
        Message::user(Content::Blocks(blocks)),
        Message::assistant(vec![
            Thinking::signed("plan", "sig==").into(),
            Block::text("calling"),
            Thinking::new("unsigned").into(),
        ])
        .with_tool_calls(vec![
            ToolCall::new("f", json!({"a": 1, "b": [1, 2], "c": {"d": "e\""}})).with_id("c1"),
            broken.with_id("c2"),
            ToolCall::new("h", json!({})),
        ]),
        Message::tool(
            Content::Blocks(vec![
                Block::text("shot"),
                Image::from_base64("aGk=", "image/gif").into(),
            ]),
            "f",
        )
        .with_call_id("c1"),
        Message::system("Second system."),
        Message::tool("no", "g").with_call_id("c2"),
        Message::tool("ok", "h"),
        Message::assistant("plain answer"),
        Message::user(Content::Blocks(vec![Block::text("a"), Block::text("b")])),
        Message::user("last"),
    ]
}

fn tools() -> Vec<Arc<ToolSpec>> {
    vec![
        Arc::new(ToolSpec::new(
            "f",
            "F does \"f\".",
            json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}),
        )),
        Arc::new(ToolSpec::new("g", "", json!(null))),
    ]
}

fn settings() -> ModelSettings {
    ModelSettings::new()
        .with_temperature(0.3)
        .with_top_p(0.9)
        .with_max_tokens(123)
        .with_stop(["x", "y"])
        .with_tool_choice(ToolChoice::Tool("f".into()))
        .with_parallel_tool_calls(false)
        .with_reasoning(ReasoningLevel::Medium)
}

fn schema() -> OutputSchema {
    OutputSchema::new(
        "answer",
        json!({"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"],
            "additionalProperties": false}),
    )
}

/// The body `model` sends for `request`, streamed or not, as the server saw it.
async fn sent<M: Llm + Clone>(
    model: &M,
    server: &Server,
    request: Request<'_>,
    stream: bool,
) -> String {
    let before = server.requests().len();
    if stream {
        let _ = Arc::new(model.clone())
            .stream(request)
            .collect::<Vec<_>>()
            .await;
    } else {
        let _ = model.generate(request).await;
    }
    let requests = server.requests();
    assert_eq!(requests.len(), before + 1);
    String::from_utf8(requests[before].body.clone()).unwrap()
}

const OPENAI_STREAMED: &str = r#"{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"first é ✓"},{"role":"user","content":[{"type":"text","text":"Look at \"this\"\n."},{"type":"image_url","image_url":{"url":"data:image/png;base64,aGk="}},{"type":"file","file":{"filename":"r.pdf","file_data":"data:application/pdf;base64,JVBE"}},{"type":"image_url","image_url":{"url":"https://x/cat.png"}}]},{"role":"assistant","content":"calling","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1,\"b\":[1,2],\"c\":{\"d\":\"e\\\"\"}}"}},{"id":"c2","type":"function","function":{"name":"g","arguments":"{}"}},{"id":"call_3_2","type":"function","function":{"name":"h","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"shot"},{"role":"user","content":[{"type":"text","text":"The result of f includes:"},{"type":"image_url","image_url":{"url":"data:image/gif;base64,aGk="}}]},{"role":"system","content":"Second system."},{"role":"tool","tool_call_id":"c2","content":"no"},{"role":"tool","tool_call_id":"call_3_2","content":"ok"},{"role":"assistant","content":"plain answer"},{"role":"user","content":"ab"},{"role":"user","content":"last"}],"tools":[{"type":"function","function":{"name":"f","description":"F does \"f\".","parameters":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}}},{"type":"function","function":{"name":"g","description":"","parameters":{"type":"object","properties":{}}}}],"tool_choice":{"type":"function","function":{"name":"f"}},"parallel_tool_calls":false,"temperature":0.3,"top_p":0.9,"max_completion_tokens":123,"stop":["x","y"],"reasoning_effort":"medium","response_format":{"type":"json_schema","json_schema":{"name":"answer","schema":{"type":"object","properties":{"x":{"type":"string"}},"required":["x"],"additionalProperties":false},"strict":true}},"stream":true,"stream_options":{"include_usage":true}}"#;

const ANTHROPIC_CACHED: &str = r#"{"model":"m","max_tokens":5120,"temperature":0.3,"top_p":0.9,"stop_sequences":["x","y"],"messages":[{"role":"user","content":"first é ✓"},{"role":"user","content":[{"type":"text","text":"Look at \"this\"\n."},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"aGk="}},{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBE"}},{"type":"image","source":{"type":"url","url":"https://x/cat.png"}}]},{"role":"assistant","content":[{"type":"thinking","thinking":"plan","signature":"sig=="},{"type":"text","text":"calling"},{"type":"tool_use","id":"c1","name":"f","input":{"a":1,"b":[1,2],"c":{"d":"e\""}}},{"type":"tool_use","id":"c2","name":"g","input":{}},{"type":"tool_use","id":"call_3_2","name":"h","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":[{"type":"text","text":"shot"},{"type":"image","source":{"type":"base64","media_type":"image/gif","data":"aGk="}}]},{"type":"tool_result","tool_use_id":"c2","content":"no"},{"type":"tool_result","tool_use_id":"call_3_2","content":"ok"}]},{"role":"assistant","content":"plain answer"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},{"role":"user","content":[{"type":"text","text":"last","cache_control":{"type":"ephemeral"}}]}],"system":[{"type":"text","text":"Be brief.\nSecond system.","cache_control":{"type":"ephemeral"}}],"tools":[{"name":"f","description":"F does \"f\".","input_schema":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}},{"name":"g","description":"","input_schema":{"type":"object","properties":{}},"cache_control":{"type":"ephemeral"}}],"tool_choice":{"type":"tool","name":"f","disable_parallel_tool_use":true},"thinking":{"type":"enabled","budget_tokens":4096}}"#;

const GEMINI: &str = r#"{"contents":[{"role":"user","parts":[{"text":"first é ✓"}]},{"role":"user","parts":[{"text":"Look at \"this\"\n."},{"inline_data":{"mime_type":"image/png","data":"aGk="}},{"inline_data":{"mime_type":"application/pdf","data":"JVBE"}}]},{"role":"model","parts":[{"text":"calling"},{"functionCall":{"name":"f","args":{"a":1,"b":[1,2],"c":{"d":"e\""}},"id":"c1"},"thoughtSignature":"sig=="},{"functionCall":{"name":"g","args":{},"id":"c2"}},{"functionCall":{"name":"h","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"result":"shot"},"id":"c1"}},{"inline_data":{"mime_type":"image/gif","data":"aGk="}},{"functionResponse":{"name":"g","response":{"result":"no"},"id":"c2"}},{"functionResponse":{"name":"h","response":{"result":"ok"}}}]},{"role":"model","parts":[{"text":"plain answer"}]},{"role":"user","parts":[{"text":"a"},{"text":"b"}]},{"role":"user","parts":[{"text":"last"}]}],"systemInstruction":{"parts":[{"text":"Be brief.\nSecond system."}]},"tools":[{"functionDeclarations":[{"name":"f","description":"F does \"f\".","parameters_json_schema":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}},{"name":"g","description":"","parameters_json_schema":null}]}],"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["f"]}},"generationConfig":{"temperature":0.3,"topP":0.9,"maxOutputTokens":123,"stopSequences":["x","y"],"thinkingConfig":{"thinkingBudget":4096},"responseMimeType":"application/json","responseJsonSchema":{"type":"object","properties":{"x":{"type":"string"}},"required":["x"],"additionalProperties":false}}}"#;

#[tokio::test]
async fn each_vendor_sends_the_recorded_bytes() {
    let server = Server::always(Reply::json(500, "{}")).await;
    let (messages, tools, settings, schema) = (conversation(true), tools(), settings(), schema());
    let request = Request::new(&messages)
        .with_tools(&tools)
        .with_settings(&settings)
        .with_output(&schema);

    let openai = OpenAi::builder("m")
        .api_key("k")
        .base_url(&server.url)
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let body = sent(&openai, &server, request, true).await;
    assert_eq!(body, OPENAI_STREAMED);
    assert_eq!(body, openai.request_body(&request, true).to_string());

    let anthropic = Anthropic::builder("m")
        .api_key("k")
        .base_url(&server.url)
        .retry(RetryPolicy::none())
        .settings(ModelSettings::new().with_prompt_cache(PromptCache::breakpoints()))
        .build()
        .unwrap();
    let body = sent(&anthropic, &server, request, false).await;
    assert_eq!(body, ANTHROPIC_CACHED);
    assert_eq!(body, anthropic.request_body(&request, false).to_string());

    let messages = conversation(false);
    let request = Request::new(&messages)
        .with_tools(&tools)
        .with_settings(&settings)
        .with_output(&schema);
    let gemini = Gemini::builder("m")
        .api_key("k")
        .base_url(&server.url)
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let body = sent(&gemini, &server, request, true).await;
    assert_eq!(body, GEMINI);
    assert_eq!(body, gemini.request_body(&request).unwrap().to_string());
}
