//! Google's Gemini API: `generateContent` and `streamGenerateContent` (SSE).

use harness_core::{
    Block, BoxStream, CompletionResponse, Content, Error, FinishReason, Llm, LlmEvent, Message,
    ModelSettings, OutputSchema, Request, Result, Role, Thinking, TokenUsage, ToolCall, ToolChoice,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::http::{Connection, HttpClient, connection_setters};
use crate::rest::{self, Accumulator, StreamRequest, required};
use crate::wire::{Count, Few, Text, count, count_at};

/// A Gemini model.
///
/// System messages travel as `systemInstruction`; all tools in one `functionDeclarations`
/// entry, each with its full JSON Schema (`parameters_json_schema`); a function call's
/// `thoughtSignature` is kept as a signed, empty [`Thinking`] block of its turn and replayed
/// on the turn's first call, as Gemini requires. Images and documents go inline; an image
/// given by URL is refused, since Gemini cannot fetch it.
///
/// ```no_run
/// use harness_providers::Gemini;
///
/// let model = Gemini::new("gemini-2.5-flash")?;
/// # Ok::<(), harness_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Gemini {
    client: HttpClient,
    model: String,
    defaults: ModelSettings,
}

/// Builds a [`Gemini`] model.
#[derive(Debug, Clone)]
#[must_use = "call build() to get the model"]
pub struct GeminiBuilder {
    model: String,
    connection: Connection,
    defaults: ModelSettings,
}

impl Gemini {
    /// `model`, with the key from `GEMINI_API_KEY` (or `GOOGLE_API_KEY`).
    ///
    /// # Errors
    /// As [`GeminiBuilder::build`].
    pub fn new(model: impl Into<String>) -> Result<Self> {
        Self::builder(model).build()
    }

    /// A builder for `model`.
    pub fn builder(model: impl Into<String>) -> GeminiBuilder {
        GeminiBuilder {
            model: model.into(),
            connection: Connection::default(),
            defaults: ModelSettings::default(),
        }
    }

    /// The model's name as the service knows it.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The HTTP client, with its configuration (base URL, timeouts, retries, concurrency).
    pub fn client(&self) -> &HttpClient {
        &self.client
    }

    /// The default settings, under each request's.
    pub fn settings(&self) -> &ModelSettings {
        &self.defaults
    }

    /// The request body: `contents` and only what is set. Gemini has no switch for parallel
    /// tool calls; `parallel_tool_calls` is not sent.
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error for an image given only by
    /// URL.
    pub fn request_body(&self, request: &Request<'_>) -> Result<Value> {
        let settings = request.settings.over(&self.defaults);
        let tools = request.tools;
        let mut body = Map::new();
        let (system, contents) = messages_to_wire(request.messages)?;
        body.insert("contents".into(), Value::Array(contents));
        if let Some(system) = system {
            body.insert(
                "systemInstruction".into(),
                json!({"parts": [{"text": system}]}),
            );
        }
        if !tools.is_empty() {
            let declarations: Vec<Value> = tools
                .iter()
                .map(|t| {
                    json!({
                        "name": t.name,
                        "description": t.description,
                        "parameters_json_schema": t.parameters,
                    })
                })
                .collect();
            body.insert(
                "tools".into(),
                json!([{"functionDeclarations": declarations}]),
            );
            if let Some(config) = function_calling(settings.tool_choice.as_ref()) {
                body.insert(
                    "toolConfig".into(),
                    json!({"functionCallingConfig": config}),
                );
            }
        }
        let config = generation_config(&settings, request.output);
        if !config.is_empty() {
            body.insert("generationConfig".into(), Value::Object(config));
        }
        Ok(Value::Object(body))
    }
}

impl GeminiBuilder {
    connection_setters!();

    /// Default settings for every request, under the agent's and the run's (temperature,
    /// output limit, a thinking budget from `with_reasoning`, ...).
    pub fn settings(mut self, settings: ModelSettings) -> Self {
        self.defaults = settings;
        self
    }

    /// The model.
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error for `max_concurrency` 0 or
    /// a key that is not a valid header.
    pub fn build(self) -> Result<Gemini> {
        let mut config = self.connection.config(
            "gemini",
            "https://generativelanguage.googleapis.com/v1beta",
            None,
        );
        if let Some(key) = self.connection.key(&["GEMINI_API_KEY", "GOOGLE_API_KEY"]) {
            config.headers.push(("x-goog-api-key".into(), key));
        }
        Ok(Gemini {
            client: HttpClient::new(config)?,
            model: self.model,
            defaults: self.defaults,
        })
    }
}

#[async_trait::async_trait]
impl Llm for Gemini {
    async fn generate(&self, request: Request<'_>) -> Result<CompletionResponse> {
        let body = self.request_body(&request)?;
        let path = format!("/models/{}:generateContent", self.model);
        let answer = self.client.post_json(&path, &body).await?;
        parse_response(&answer)
    }

    fn stream_events<'a>(&'a self, request: Request<'a>) -> BoxStream<'a, Result<LlmEvent>> {
        let body = match self.request_body(&request) {
            Ok(body) => body,
            Err(e) => return Box::pin(futures_util::stream::once(async { Err(e) })),
        };
        rest::stream(
            &self.client,
            StreamRequest {
                path: format!("/models/{}:streamGenerateContent?alt=sse", self.model),
                body,
                accumulator: ContentAccumulator::default(),
            },
        )
    }

    fn name(&self) -> String {
        format!("gemini:{}", self.model)
    }

    /// Gemini holds an answer to a JSON Schema (`responseJsonSchema`).
    fn native_output(&self) -> bool {
        true
    }
}

/// `generationConfig` for the settings and the output schema: only what is set.
fn generation_config(
    settings: &ModelSettings,
    output: Option<&OutputSchema>,
) -> Map<String, Value> {
    let mut config = Map::new();
    if let Some(t) = settings.temperature {
        config.insert("temperature".into(), Value::from(t));
    }
    if let Some(p) = settings.top_p {
        config.insert("topP".into(), Value::from(p));
    }
    if let Some(n) = settings.max_tokens {
        config.insert("maxOutputTokens".into(), Value::from(n));
    }
    if !settings.stop.is_empty() {
        config.insert("stopSequences".into(), Value::from(settings.stop.clone()));
    }
    if let Some(level) = settings.reasoning {
        config.insert(
            "thinkingConfig".into(),
            json!({"thinkingBudget": level.budget_tokens()}),
        );
    }
    if let Some(output) = output {
        config.insert("responseMimeType".into(), Value::from("application/json"));
        config.insert("responseJsonSchema".into(), output.schema.clone());
    }
    config
}

/// `functionCallingConfig` for a tool choice: AUTO, NONE, ANY, or ANY limited to one tool.
fn function_calling(choice: Option<&ToolChoice>) -> Option<Value> {
    Some(match choice? {
        ToolChoice::None => json!({"mode": "NONE"}),
        ToolChoice::Required => json!({"mode": "ANY"}),
        ToolChoice::Tool(name) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
        _ => json!({"mode": "AUTO"}),
    })
}

fn messages_to_wire(messages: &[Message]) -> Result<(Option<String>, Vec<Value>)> {
    let mut system: Vec<String> = Vec::new();
    let mut contents: Vec<Value> = Vec::new();
    let mut responses: Option<Vec<Value>> = None;
    let flush = |contents: &mut Vec<Value>, open: &mut Option<Vec<Value>>| {
        if let Some(parts) = open.take() {
            contents.push(json!({"role": "user", "parts": parts}));
        }
    };
    for message in messages {
        match message.role {
            Role::System => system.push(message.content.text().into_owned()),
            Role::Tool => {
                let mut response = json!({
                    "name": message.name.as_deref().unwrap_or(""),
                    "response": {"result": message.content.text()},
                });
                if let Some(id) = &message.tool_call_id {
                    response["id"] = Value::from(id.as_str());
                }
                let parts = responses.get_or_insert_with(Vec::new);
                parts.push(json!({"functionResponse": response}));
                // Images and documents the tool returned travel as inline parts beside it.
                if let Content::Blocks(blocks) = &message.content {
                    let media = blocks.iter().filter(|b| !matches!(b, Block::Text(_)));
                    parts.extend(parts_of(&Content::Blocks(media.cloned().collect()))?);
                }
            }
            Role::Assistant => {
                flush(&mut contents, &mut responses);
                let mut signature = signature_of(&message.content);
                let mut parts = parts_of(&message.content)?;
                for call in &message.tool_calls {
                    let mut function_call =
                        json!({"name": call.name, "args": Value::Object(call.arguments.clone())});
                    if let Some(id) = &call.id {
                        function_call["id"] = Value::from(id.as_str());
                    }
                    let mut part = json!({"functionCall": function_call});
                    if let Some(sig) = signature.take() {
                        part["thoughtSignature"] = Value::from(sig);
                    }
                    parts.push(part);
                }
                if let (Some(sig), Some(Value::Object(first))) = (signature, parts.first_mut()) {
                    first.insert("thoughtSignature".into(), Value::from(sig));
                }
                contents.push(json!({"role": "model", "parts": parts}));
            }
            Role::User => {
                flush(&mut contents, &mut responses);
                contents.push(json!({"role": "user", "parts": parts_of(&message.content)?}));
            }
        }
    }
    flush(&mut contents, &mut responses);
    Ok(((!system.is_empty()).then(|| system.join("\n")), contents))
}

/// The first thought signature of a turn, kept as a signed thinking block.
fn signature_of(content: &Content) -> Option<String> {
    content.blocks().iter().find_map(|b| match b {
        Block::Thinking(Thinking {
            signature: Some(s), ..
        }) => Some(s.clone()),
        _ => None,
    })
}

fn parts_of(content: &Content) -> Result<Vec<Value>> {
    let mut parts = Vec::new();
    for block in content.blocks().iter() {
        match block {
            Block::Text(t) if !t.text.is_empty() => parts.push(json!({"text": t.text})),
            Block::Image(image) => match (image.data(), image.media_type()) {
                (Some(data), Some(media_type)) => {
                    parts.push(json!({"inline_data": {"mime_type": media_type, "data": data}}));
                }
                _ => {
                    return Err(Error::configuration(format!(
                        "Gemini needs inline image data, not a URL ({}); load the image with \
                         Image::from_path or Image::from_bytes",
                        image.data_url()
                    )));
                }
            },
            Block::Document(doc) => {
                parts.push(json!({"inline_data": {"mime_type": doc.media_type, "data": doc.data}}));
            }
            Block::Text(_) | Block::Thinking(_) => {}
        }
    }
    Ok(parts)
}

fn finish_reason(value: &str) -> FinishReason {
    match value {
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY" => {
            FinishReason::Filtered
        }
        _ => FinishReason::Other,
    }
}

/// Usage from `usageMetadata`; counts saturate, never overflow.
fn usage_from(metadata: Option<&Value>) -> Option<TokenUsage> {
    let usage = metadata.filter(|m| m.as_object().is_some_and(|m| !m.is_empty()))?;
    let prompt = count_at(usage, "promptTokenCount");
    let completion = count_at(usage, "candidatesTokenCount")
        .saturating_add(count_at(usage, "thoughtsTokenCount"));
    let total = usage
        .get("totalTokenCount")
        .map_or_else(|| prompt.saturating_add(completion), count);
    Some(
        TokenUsage::new(prompt, completion, total)
            .with_cached(count_at(usage, "cachedContentTokenCount")),
    )
}

/// The finish reason of an answer whose prompt was blocked (no candidates at all).
fn blocked(answer_feedback: Option<&Value>) -> Option<FinishReason> {
    answer_feedback?
        .get("blockReason")
        .and_then(Value::as_str)
        .map(|_| FinishReason::Filtered)
}

/// One answer (or one streamed chunk, which is a whole answer of its own) in parts.
struct Parts {
    blocks: Vec<Block>,
    calls: Vec<ToolCall>,
    finish: Option<FinishReason>,
    usage: Option<TokenUsage>,
}

fn read_parts(answer: &Value) -> Parts {
    let candidate = answer
        .get("candidates")
        .and_then(Value::as_array)
        .and_then(|c| c.first());
    let mut blocks = Vec::new();
    let mut calls = Vec::new();
    let parts = candidate
        .and_then(|c| c.get("content"))
        .and_then(|c| c.get("parts"))
        .and_then(Value::as_array);
    for part in parts.into_iter().flatten() {
        if let Some(signature) = part.get("thoughtSignature").and_then(Value::as_str) {
            blocks.push(Thinking::signed("", signature).into());
        }
        let thought = part.get("thought").and_then(Value::as_bool) == Some(true);
        if let Some(text) = part
            .get("text")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            blocks.push(if thought {
                Thinking::new(text).into()
            } else {
                Block::text(text)
            });
        }
        if let Some(call) = part.get("functionCall") {
            let name = call.get("name").and_then(Value::as_str).unwrap_or_default();
            // No args is none; args that are not an object are kept as sent, not run.
            let args = call.get("args").cloned().unwrap_or(Value::Null);
            let mut tool_call = ToolCall::new(name, args);
            if let Some(id) = call.get("id").and_then(Value::as_str) {
                tool_call = tool_call.with_id(id);
            }
            calls.push(tool_call);
        }
    }
    Parts {
        blocks,
        calls,
        finish: candidate
            .and_then(|c| c.get("finishReason"))
            .and_then(Value::as_str)
            .map(finish_reason)
            .or_else(|| blocked(answer.get("promptFeedback"))),
        usage: usage_from(answer.get("usageMetadata")),
    }
}

/// Reads a non-streamed `generateContent` answer.
///
/// # Errors
/// A [`Provider`](harness_core::ErrorKind::Provider) error when the answer has no `candidates` key.
pub fn parse_response(answer: &Value) -> Result<CompletionResponse> {
    if answer.get("promptFeedback").is_none() {
        required("Gemini", answer, "candidates")?;
    }
    let parts = read_parts(answer);
    // A missing finish reason is not a finished answer.
    let mut response = CompletionResponse::from_blocks(parts.blocks)
        .with_tool_calls(parts.calls)
        .with_finish_reason(parts.finish.unwrap_or(FinishReason::Other));
    if let Some(usage) = parts.usage {
        response = response.with_usage(usage);
    }
    Ok(response)
}

#[derive(Deserialize)]
struct StreamChunk<'a> {
    #[serde(borrow, default)]
    candidates: Few<StreamCandidate<'a>>,
    #[serde(rename = "usageMetadata", default)]
    usage: Option<UsageWire>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(rename = "promptFeedback", default)]
    prompt_feedback: Option<Value>,
}

#[derive(Deserialize)]
struct StreamCandidate<'a> {
    #[serde(borrow, default)]
    content: Option<StreamContent<'a>>,
    #[serde(rename = "finishReason", borrow, default)]
    finish: Text<'a>,
}

#[derive(Deserialize)]
struct StreamContent<'a> {
    #[serde(borrow, default)]
    parts: Few<StreamPart<'a>>,
}

#[derive(Deserialize)]
struct StreamPart<'a> {
    #[serde(borrow, default)]
    text: Text<'a>,
    #[serde(default)]
    thought: Option<bool>,
    #[serde(rename = "thoughtSignature", borrow, default)]
    signature: Text<'a>,
    #[serde(rename = "functionCall", default)]
    function_call: Option<FunctionCallWire>,
}

#[derive(Deserialize)]
struct FunctionCallWire {
    #[serde(default)]
    name: String,
    #[serde(default)]
    args: Option<Value>,
    #[serde(default)]
    id: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(clippy::struct_field_names)] // the vendor's names
struct UsageWire {
    #[serde(default)]
    prompt_token_count: Count,
    #[serde(default)]
    candidates_token_count: Count,
    #[serde(default)]
    thoughts_token_count: Count,
    #[serde(default)]
    total_token_count: Option<Count>,
    #[serde(default)]
    cached_content_token_count: Count,
}

impl UsageWire {
    fn usage(&self) -> TokenUsage {
        let prompt = self.prompt_token_count.0;
        let completion = self
            .candidates_token_count
            .0
            .saturating_add(self.thoughts_token_count.0);
        let total = self
            .total_token_count
            .map_or_else(|| prompt.saturating_add(completion), |t| t.0);
        TokenUsage::new(prompt, completion, total).with_cached(self.cached_content_token_count.0)
    }
}

/// Assembles a Gemini stream: each chunk is an answer of its own, so text is handed out as
/// it comes, calls are collected whole, and the latest usage and finish reason win. A chunk
/// without candidates (usage only) is fine.
#[derive(Default)]
pub(crate) struct ContentAccumulator {
    signature: Option<String>,
    thinking: String,
    text: String,
    calls: Vec<ToolCall>,
    usage: Option<TokenUsage>,
    finish: Option<FinishReason>,
}

impl Accumulator for ContentAccumulator {
    fn feed(&mut self, data: &str, emit: &mut dyn FnMut(LlmEvent)) -> Result<()> {
        let chunk: StreamChunk<'_> =
            serde_json::from_str(data).map_err(|e| rest::unreadable("Gemini", &e, data))?;
        if let Some(error) = chunk.error.as_ref().filter(|e| !e.is_null()) {
            return Err(rest::vendor_error("Gemini", error, data));
        }
        if let Some(usage) = &chunk.usage {
            self.usage = Some(usage.usage());
        }
        if let Some(reason) = blocked(chunk.prompt_feedback.as_ref()) {
            self.finish = Some(reason);
        }
        let Some(candidate) = chunk.candidates.first() else {
            return Ok(());
        };
        if let Some(reason) = &candidate.finish {
            self.finish = Some(finish_reason(reason));
        }
        let parts = candidate.content.iter().flat_map(|c| c.parts.iter());
        for part in parts {
            if let (Some(signature), None) = (&part.signature, &self.signature) {
                self.signature = Some(signature.to_string());
            }
            if let Some(text) = part.text.as_ref().filter(|t| !t.is_empty()) {
                if part.thought == Some(true) {
                    self.thinking.push_str(text);
                    emit(LlmEvent::ThinkingDelta(text.to_string()));
                } else {
                    self.text.push_str(text);
                    emit(LlmEvent::TextDelta(text.to_string()));
                }
            }
            if let Some(call) = &part.function_call {
                let args = call.args.clone().unwrap_or(Value::Null);
                let tool_call = ToolCall::new(call.name.clone(), args);
                self.calls.push(match &call.id {
                    Some(id) => tool_call.with_id(id.clone()),
                    None => tool_call,
                });
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<CompletionResponse> {
        if self.finish.is_none() {
            return Err(rest::incomplete("Gemini", "a candidate's finishReason"));
        }
        let mut blocks: Vec<Block> = Vec::new();
        if let Some(signature) = self.signature.take() {
            blocks.push(Thinking::signed("", signature).into());
        }
        if !self.thinking.is_empty() {
            blocks.push(Thinking::new(std::mem::take(&mut self.thinking)).into());
        }
        if !self.text.is_empty() {
            blocks.push(Block::text(std::mem::take(&mut self.text)));
        }
        let mut response = CompletionResponse::from_blocks(blocks)
            .with_tool_calls(std::mem::take(&mut self.calls))
            .with_finish_reason(self.finish.unwrap_or(FinishReason::Other));
        if let Some(usage) = self.usage {
            response = response.with_usage(usage);
        }
        Ok(response)
    }
}
