//! The clients measured: deepharness through `Agent::run` and `Agent::stream`, and
//! the floor, bare reqwest sending the same two requests non-streamed and streamed; and, to
//! tell the agent's share of a gap from the provider's, the provider alone.

use std::borrow::Cow;
use std::sync::Arc;

use futures_util::StreamExt as _;
use harness_core::{
    Agent, AgentEvent, CompletionResponse, Llm as _, LlmEvent, Message, Request, Tool as _,
    ToolSpec,
};
use harness_providers::{OpenAi, OpenAiResponses};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::{ANSWER, MODEL, PROMPT};

/// Get the current weather in a city.
#[harness_core::tool]
async fn get_weather(city: String) -> String {
    weather(&city)
}

/// The tool's spec, as the provider turns it into the request's `tools`.
#[cfg(test)]
pub(crate) fn tool_spec() -> Arc<ToolSpec> {
    Arc::clone(GetWeather.spec())
}

/// What the tool answers; the floor calls it directly.
fn weather(city: &str) -> String {
    format!("Sunny, 22 °C in {city}.")
}

/// Which client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Case {
    /// deepharness, `agent.run(prompt).await` (the model is not streamed).
    Run,
    /// deepharness, `agent.stream(prompt)`, every event consumed (the model streamed).
    Stream,
    /// bare reqwest, the two requests non-streamed.
    FloorJson,
    /// bare reqwest, the two requests streamed, each SSE body read to its end.
    FloorSse,
    /// The `OpenAi` provider alone, its `Llm::generate` called for the two requests with the
    /// tool run by hand: where a gap between `run` and its floor lies (not in the default set).
    ModelJson,
    /// The provider alone, `Llm::stream` read to its turn for the two requests (not in
    /// the default set).
    ModelSse,
    /// `Run` with an `OpenAiResponses` model: the same run in the Responses API's format.
    ResponsesRun,
    /// `Stream` with an `OpenAiResponses` model.
    ResponsesStream,
}

impl Case {
    /// Every case, in the order `--case all` takes them: each floor, then the provider alone,
    /// then the agent.
    pub(crate) const ALL: [Self; 8] = [
        Self::FloorJson,
        Self::ModelJson,
        Self::Run,
        Self::ResponsesRun,
        Self::FloorSse,
        Self::ModelSse,
        Self::Stream,
        Self::ResponsesStream,
    ];

    pub(crate) fn parse(name: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|case| case.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|case| case.name()).collect();
                format!(
                    "unknown case `{name}`: {} (or, for cpu, all)",
                    names.join(", ")
                )
            })
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Run => "run",
            Self::Stream => "stream",
            Self::FloorJson => "floor_json",
            Self::FloorSse => "floor_sse",
            Self::ModelJson => "model_json",
            Self::ModelSse => "model_sse",
            Self::ResponsesRun => "responses_run",
            Self::ResponsesStream => "responses_stream",
        }
    }
}

/// One client, built once and shared by every run (cloning it shares its connection pool).
#[derive(Clone)]
pub(crate) enum Client {
    Agent(Agent, Case),
    Floor(Floor, Case),
    Model(Arc<OpenAi>, Arc<[Arc<ToolSpec>]>, Case),
}

impl Client {
    pub(crate) fn new(case: Case, base_url: &str) -> Result<Self, String> {
        Ok(match case {
            Case::Run | Case::Stream => {
                let agent = Agent::builder(model(base_url)?)
                    .tool(GetWeather)
                    .build()
                    .map_err(|e| format!("cannot build the agent: {e}"))?;
                Self::Agent(agent, case)
            }
            Case::ResponsesRun | Case::ResponsesStream => {
                let model = OpenAiResponses::builder(MODEL)
                    .api_key("sk-bench")
                    .base_url(format!("{base_url}/v1"))
                    .build()
                    .map_err(|e| format!("cannot build the model: {e}"))?;
                let agent = Agent::builder(model)
                    .tool(GetWeather)
                    .build()
                    .map_err(|e| format!("cannot build the agent: {e}"))?;
                Self::Agent(agent, case)
            }
            Case::FloorJson | Case::FloorSse => Self::Floor(Floor::new(base_url)?, case),
            Case::ModelJson | Case::ModelSse => {
                let specs: Arc<[Arc<ToolSpec>]> = Arc::from([Arc::clone(GetWeather.spec())]);
                Self::Model(Arc::new(model(base_url)?), specs, case)
            }
        })
    }

    /// One two-step run, checked: the tool was called and the answer is the mock's.
    pub(crate) async fn run_once(&self) -> Result<(), String> {
        let answer = match self {
            Self::Agent(agent, Case::Run | Case::ResponsesRun) => {
                let state = agent.run(PROMPT).await.map_err(|e| e.to_string())?;
                state.output_text().to_owned()
            }
            Self::Agent(agent, _) => stream(agent).await?,
            Self::Floor(floor, Case::FloorJson) => floor.json().await?,
            Self::Floor(floor, _) => floor.sse().await?,
            Self::Model(model, specs, case) => {
                model_run(model, specs, *case == Case::ModelSse).await?
            }
        };
        if answer == ANSWER {
            Ok(())
        } else {
            Err(format!("unexpected answer: {answer:?}"))
        }
    }
}

/// A streamed run, every event taken: the text deltas joined, checked against the final state.
async fn stream(agent: &Agent) -> Result<String, String> {
    let mut events = agent.stream(PROMPT);
    let (mut text, mut tools, mut output) = (String::new(), 0, None);
    while let Some(event) = events.next().await {
        match event.map_err(|e| e.to_string())? {
            AgentEvent::TextDelta(delta) => text.push_str(&delta),
            AgentEvent::ToolFinished { failed: false, .. } => tools += 1,
            AgentEvent::Finished(state) => output = Some(state.output_text().to_owned()),
            _ => {}
        }
    }
    match output {
        Some(output) if output == text && tools == 1 => Ok(text),
        _ => Err(format!(
            "the stream ended badly: {tools} tool call(s), text {text:?}, output {output:?}"
        )),
    }
}

/// The floor: one reqwest client (same TLS setup and default headers as the provider's, over
/// plain HTTP here), the request bodies serialised from borrowed structs, the answers read
/// into structs with just the fields a client needs.
#[derive(Clone)]
pub(crate) struct Floor {
    http: reqwest::Client,
    url: Arc<str>,
    tools: Arc<Value>,
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: &'a [Value],
    tools: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Deserialize)]
struct Completion<'a> {
    #[serde(borrow)]
    choices: Vec<Choice<'a>>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow)]
    message: Reply<'a>,
}

#[derive(Deserialize)]
struct Reply<'a> {
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
    #[serde(default)]
    tool_calls: Vec<Call>,
}

#[derive(Deserialize)]
struct Call {
    id: String,
    function: Function,
}

#[derive(Deserialize)]
struct Function {
    name: String,
    arguments: String,
}

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow)]
    choices: Vec<ChunkChoice<'a>>,
}

#[derive(Deserialize)]
struct ChunkChoice<'a> {
    #[serde(borrow)]
    delta: Delta<'a>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tool_calls: Vec<CallDelta<'a>>,
}

#[derive(Deserialize)]
struct CallDelta<'a> {
    #[serde(default)]
    id: Option<String>,
    #[serde(borrow, default)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(default)]
    name: Option<String>,
    #[serde(borrow, default)]
    arguments: Option<Cow<'a, str>>,
}

/// What the first step asked for.
#[derive(Default)]
struct ToolRequest {
    id: String,
    name: String,
    arguments: String,
}

impl Floor {
    fn new(base_url: &str) -> Result<Self, String> {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            reqwest::header::AUTHORIZATION,
            reqwest::header::HeaderValue::from_static("Bearer sk-bench"),
        );
        let http = harness_providers::rest::client_builder()
            .map_err(|e| e.to_string())?
            .default_headers(headers)
            .build()
            .map_err(|e| format!("cannot build the reqwest client: {e}"))?;
        Ok(Self {
            http,
            url: format!("{base_url}/v1/chat/completions").into(),
            tools: Arc::new(crate::tool_schemas()),
        })
    }

    /// The tool's answer to the model's call, and the second request's messages.
    fn second_messages(call: &ToolRequest) -> Result<Vec<Value>, String> {
        if call.name != "get_weather" {
            return Err(format!("the model called {:?}", call.name));
        }
        let arguments: serde_json::Map<String, Value> = serde_json::from_str(&call.arguments)
            .map_err(|e| format!("bad tool arguments: {e}"))?;
        let city = arguments
            .get("city")
            .and_then(Value::as_str)
            .ok_or("no city in the tool arguments")?;
        Ok(vec![
            json!({"role": "user", "content": PROMPT}),
            json!({
                "role": "assistant",
                "content": null,
                "tool_calls": [{
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments}
                }]
            }),
            json!({"role": "tool", "tool_call_id": call.id, "content": weather(city)}),
        ])
    }

    async fn post(&self, messages: &[Value], stream: bool) -> Result<reqwest::Response, String> {
        let body = serde_json::to_vec(&Body {
            model: MODEL,
            messages,
            tools: &self.tools,
            stream: stream.then_some(true),
            stream_options: stream.then_some(StreamOptions {
                include_usage: true,
            }),
        })
        .map_err(|e| e.to_string())?;
        let response = self
            .http
            .post(&*self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if response.status().is_success() {
            Ok(response)
        } else {
            Err(format!("the mock answered {}", response.status()))
        }
    }

    /// Both steps, non-streamed.
    async fn json(&self) -> Result<String, String> {
        let first = vec![json!({"role": "user", "content": PROMPT})];
        let bytes = self.post(&first, false).await?.bytes().await;
        let bytes = bytes.map_err(|e| e.to_string())?;
        let completion: Completion<'_> =
            serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
        let call = completion
            .choices
            .into_iter()
            .next()
            .and_then(|c| c.message.tool_calls.into_iter().next())
            .ok_or("no tool call")?;
        let call = ToolRequest {
            id: call.id,
            name: call.function.name,
            arguments: call.function.arguments,
        };
        let second = Self::second_messages(&call)?;
        let bytes = self.post(&second, false).await?.bytes().await;
        let bytes = bytes.map_err(|e| e.to_string())?;
        let completion: Completion<'_> =
            serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
        completion
            .choices
            .into_iter()
            .next()
            .and_then(|c| c.message.content)
            .map(Cow::into_owned)
            .ok_or_else(|| "no answer".to_owned())
    }

    /// Both steps, streamed: each body read as it comes, line by line, every `data:` event
    /// parsed and folded into the tool call or the text.
    async fn sse(&self) -> Result<String, String> {
        let first = vec![json!({"role": "user", "content": PROMPT})];
        let mut call = ToolRequest::default();
        let mut text = String::new();
        read_sse(self.post(&first, true).await?, &mut call, &mut text).await?;
        let second = Self::second_messages(&call)?;
        let mut unused = ToolRequest::default();
        text.clear();
        read_sse(self.post(&second, true).await?, &mut unused, &mut text).await?;
        Ok(text)
    }
}

async fn read_sse(
    mut response: reqwest::Response,
    call: &mut ToolRequest,
    text: &mut String,
) -> Result<(), String> {
    let mut pending: Vec<u8> = Vec::new();
    let mut done = false;
    while let Some(bytes) = response.chunk().await.map_err(|e| e.to_string())? {
        pending.extend_from_slice(&bytes);
        let mut start = 0;
        while let Some(end) = memchr::memchr(b'\n', &pending[start..]) {
            let line = &pending[start..start + end];
            start += end + 1;
            let Some(data) = line.strip_prefix(b"data:") else {
                continue;
            };
            let data = data.trim_ascii();
            if data == b"[DONE]" {
                done = true;
                continue;
            }
            let chunk: Chunk<'_> = serde_json::from_slice(data).map_err(|e| e.to_string())?;
            for choice in chunk.choices {
                if let Some(content) = choice.delta.content {
                    text.push_str(&content);
                }
                for fragment in choice.delta.tool_calls {
                    if let Some(id) = fragment.id {
                        call.id = id;
                    }
                    if let Some(function) = fragment.function {
                        if let Some(name) = function.name {
                            call.name = name;
                        }
                        if let Some(arguments) = function.arguments {
                            call.arguments.push_str(&arguments);
                        }
                    }
                }
            }
        }
        pending.drain(..start);
    }
    if done {
        Ok(())
    } else {
        Err("the stream ended without [DONE]".to_owned())
    }
}

/// The `OpenAi` model every deepharness client uses, pointed at the mock.
fn model(base_url: &str) -> Result<OpenAi, String> {
    OpenAi::builder(MODEL)
        .api_key("sk-bench")
        .base_url(format!("{base_url}/v1"))
        .build()
        .map_err(|e| format!("cannot build the model: {e}"))
}

/// The provider alone: the two requests through `Llm`, the tool's answer computed as the
/// floor computes it.
async fn model_run(
    model: &Arc<OpenAi>,
    specs: &[Arc<ToolSpec>],
    stream: bool,
) -> Result<String, String> {
    let mut messages = vec![Message::user(PROMPT)];
    let first = model_call(model, &messages, specs, stream).await?;
    let call = first.tool_calls().first().ok_or("no tool call")?;
    let city = call
        .arguments
        .get("city")
        .and_then(Value::as_str)
        .ok_or("no city in the tool arguments")?;
    let answer = Message::tool(weather(city), call.name.as_str())
        .with_call_id(call.id.clone().unwrap_or_default());
    messages.push(Message::assistant("").with_tool_calls(vec![call.clone()]));
    messages.push(answer);
    let second = model_call(model, &messages, specs, stream).await?;
    Ok(second.content().to_owned())
}

/// One model call, streamed (every event taken) or not.
async fn model_call(
    model: &Arc<OpenAi>,
    messages: &[Message],
    specs: &[Arc<ToolSpec>],
    stream: bool,
) -> Result<CompletionResponse, String> {
    let request = Request::new(messages).with_tools(specs);
    if !stream {
        return model.generate(request).await.map_err(|e| e.to_string());
    }
    let mut events = Arc::clone(model).stream(request);
    let mut text = String::new();
    while let Some(event) = events.next().await {
        match event.map_err(|e| e.to_string())? {
            LlmEvent::TextDelta(delta) => text.push_str(&delta),
            LlmEvent::Completed(turn) if turn.content() == text => return Ok(*turn),
            LlmEvent::Completed(_) => return Err("the deltas are not the turn's text".into()),
            _ => {}
        }
    }
    Err("the stream ended without a turn".into())
}
