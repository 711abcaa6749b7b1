//! Models for testing agents: deterministic, offline, instant.
//!
//! - [`TestModel`] calls every tool once with arguments generated from its schema, then
//!   answers with a summary of the results (or through `final_answer` when an output type is
//!   set). It needs no setup, so it is the quickest way to exercise an agent end to end.
//! - [`FunctionModel`] lets a closure decide each turn from the transcript and the tools.
//! - [`ScriptedModel`] replays a queue of responses and records every request it got.
#![cfg_attr(not(doctest), doc = include_str!("../GUIDE-testing.md"))]

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value};

use crate::agent::{FINAL_TOOL, estimate_tokens};
use crate::cost::Prices;
use crate::error::{Error, Result};
use crate::llm::{Llm, ModelInfo, Supports};
use crate::message::{Message, Role, ToolCall};
use crate::request::{ModelSettings, OutputSchema, Request};
use crate::response::{CompletionResponse, TokenUsage};
use crate::tool::ToolSpec;

/// Usage a test model reports: the transcript's estimate in, the answer's out.
fn usage_for(messages: &[Message], response: &CompletionResponse) -> TokenUsage {
    let prompt = estimate_tokens(messages) as u64 + 1;
    let arguments: usize = response
        .tool_calls()
        .iter()
        .map(|c| c.name.len() + Value::Object(c.arguments.clone()).to_string().len())
        .sum();
    let completion = ((response.content().chars().count() + arguments) / 4) as u64 + 1;
    TokenUsage::new(prompt, completion, prompt + completion)
}

/// The messages since the last user message: the current exchange.
fn current_exchange(messages: &[Message]) -> &[Message] {
    let start = messages
        .iter()
        .rposition(|m| m.role == Role::User)
        .map_or(0, |i| i + 1);
    &messages[start..]
}

/// A model that exercises every tool, with no network and no script.
///
/// On the first turn of an exchange it calls each offered tool once, with arguments generated
/// from the tool's schema (so they are valid). On the next it answers: through `final_answer`
/// with generated arguments when an output type is set, else with its text, which by default
/// is a JSON object of each tool's result by name (`success (no tool calls)` when there were
/// none). It reports usage estimated from the text, so budgets can be tested too.
///
/// ```
/// use harness_core::agent::Agent;
/// use harness_core::testing::TestModel;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let agent = Agent::builder(TestModel::new().with_text("done")).build()?;
/// assert_eq!(agent.run("hi").await?.output_text(), "done");
/// # Ok::<(), harness_core::Error>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone, Default)]
pub struct TestModel {
    text: Option<String>,
    only: Option<Vec<String>>,
    prices: Option<Prices>,
}

impl TestModel {
    /// Calls every tool, then summarises.
    pub fn new() -> Self {
        Self::default()
    }

    /// Answers with `text` instead of the summary of tool results.
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }

    /// Says the model charges `prices` ([`ModelInfo::prices`]), so that runs on it are
    /// priced and a money budget can be tested offline.
    pub fn with_prices(mut self, prices: Prices) -> Self {
        self.prices = Some(prices);
        self
    }

    /// Calls only the named tools (none, with an empty list).
    pub fn with_only_tools<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.only = Some(names.into_iter().map(Into::into).collect());
        self
    }

    fn respond(&self, messages: &[Message], tools: &[Arc<ToolSpec>]) -> CompletionResponse {
        let exchange = current_exchange(messages);
        let already_called = exchange
            .iter()
            .any(|m| m.role == Role::Assistant && !m.tool_calls.is_empty());
        let turn = messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count()
            + 1;
        let callable: Vec<&ToolSpec> = tools
            .iter()
            .map(|t| &**t)
            .filter(|t| t.name != FINAL_TOOL)
            .filter(|t| self.only.as_ref().is_none_or(|only| only.contains(&t.name)))
            .collect();
        if !already_called && !callable.is_empty() {
            let calls = callable
                .iter()
                .enumerate()
                .map(|(i, t)| call_with_example(t, format!("call_{turn}_{}", i + 1)))
                .collect();
            return CompletionResponse::default().with_tool_calls(calls);
        }
        if let Some(final_tool) = tools.iter().find(|t| t.name == FINAL_TOOL) {
            let call = call_with_example(final_tool, format!("call_{turn}_final"));
            return CompletionResponse::default().with_tool_calls(vec![call]);
        }
        CompletionResponse::text(self.text.clone().unwrap_or_else(|| summarise(exchange)))
    }
}

fn call_with_example(tool: &ToolSpec, id: String) -> ToolCall {
    ToolCall::new(
        tool.name.clone(),
        example_value(&tool.parameters, &tool.parameters, 0),
    )
    .with_id(id)
}

/// The tool results of an exchange, as one JSON object by tool name.
fn summarise(exchange: &[Message]) -> String {
    let results: Map<String, Value> = exchange
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| {
            (
                m.name.clone().unwrap_or_default(),
                Value::from(m.text().into_owned()),
            )
        })
        .collect();
    if results.is_empty() {
        "success (no tool calls)".to_owned()
    } else {
        Value::Object(results).to_string()
    }
}

/// A value that fits `schema`: the first `const`/`default`/`enum` choice, the first branch of
/// a union, the smallest number in range, `"a"`-strings, every property of an object.
/// Recursion through `$ref` stops after a few levels, with empty arrays.
fn example_value(schema: &Value, root: &Value, depth: usize) -> Value {
    const MAX_DEPTH: usize = 4;
    let Some(schema) = schema.as_object() else {
        return Value::Null;
    };
    if let Some(value) = schema.get("const").or_else(|| schema.get("default")) {
        return value.clone();
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    for union in ["anyOf", "oneOf", "allOf"] {
        if let Some(first) = schema
            .get(union)
            .and_then(Value::as_array)
            .and_then(|b| b.first())
        {
            return example_value(first, root, depth + 1);
        }
    }
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let target = reference
            .strip_prefix('#')
            .and_then(|pointer| root.pointer(pointer));
        return match target {
            Some(target) if depth < MAX_DEPTH => example_value(target, root, depth + 1),
            _ => Value::Null,
        };
    }
    let kind = match schema.get("type") {
        Some(Value::String(kind)) => kind.as_str(),
        Some(Value::Array(kinds)) => kinds
            .iter()
            .filter_map(Value::as_str)
            .find(|k| *k != "null")
            .unwrap_or("null"),
        _ => "",
    };
    let number = |key: &str| schema.get(key).and_then(Value::as_f64);
    match kind {
        "string" => {
            let len = schema
                .get("minLength")
                .and_then(Value::as_u64)
                .unwrap_or(1)
                .max(1);
            Value::from("a".repeat(usize::try_from(len).unwrap_or(1)))
        }
        "integer" => {
            let low = number("minimum")
                .or_else(|| number("exclusiveMinimum").map(|m| m.floor() + 1.0))
                .unwrap_or(0.0);
            #[allow(clippy::cast_possible_truncation)]
            Value::from(low.ceil() as i64)
        }
        "number" => Value::from(
            number("minimum")
                .or_else(|| number("exclusiveMinimum").map(|m| m + 1.0))
                .unwrap_or(0.0),
        ),
        "boolean" => Value::Bool(false),
        "array" => {
            let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let count = if depth < MAX_DEPTH { min.max(1) } else { min };
            let count = schema
                .get("maxItems")
                .and_then(Value::as_u64)
                .map_or(count, |max| count.min(max));
            let item = schema
                .get("items")
                .map_or(Value::Null, |items| example_value(items, root, depth + 1));
            // An item that could not be built (recursion cut short) is left out.
            let count = if item.is_null() { min } else { count };
            Value::Array(vec![item; usize::try_from(count).unwrap_or(0)])
        }
        "object" => {
            let properties = schema.get("properties").and_then(Value::as_object);
            Value::Object(
                properties
                    .into_iter()
                    .flatten()
                    .map(|(name, property)| {
                        (name.clone(), example_value(property, root, depth + 1))
                    })
                    .collect(),
            )
        }
        _ => Value::Null,
    }
}

#[async_trait::async_trait]
impl Llm for TestModel {
    async fn generate(&self, request: Request<'_>) -> Result<CompletionResponse> {
        let response = self.respond(request.messages, request.tools);
        let usage = usage_for(request.messages, &response);
        Ok(response.with_usage(usage))
    }

    fn info(&self) -> ModelInfo {
        priced(
            ModelInfo::new("test", "test").with_supports(Supports::new().with_tools(true)),
            self.prices,
        )
    }
}

/// `info`, with `prices` when there are some.
fn priced(info: ModelInfo, prices: Option<Prices>) -> ModelInfo {
    match prices {
        Some(prices) => info.with_prices(prices),
        None => info,
    }
}

/// A request as a test model keeps it: owned, so an async turn or a later assertion can
/// read it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RequestRecord {
    /// The conversation the model was sent.
    pub messages: Vec<Message>,
    /// The tools it was offered.
    pub tools: Vec<Arc<ToolSpec>>,
    /// The settings it was asked with.
    pub settings: ModelSettings,
    /// The output schema it was asked to answer in, if any.
    pub output: Option<OutputSchema>,
}

impl From<&Request<'_>> for RequestRecord {
    fn from(request: &Request<'_>) -> Self {
        Self {
            messages: request.messages.to_vec(),
            tools: request.tools.to_vec(),
            settings: request.settings.clone(),
            output: request.output.cloned(),
        }
    }
}

type SyncTurn = dyn Fn(&Request<'_>) -> Result<CompletionResponse> + Send + Sync;
type AsyncTurn = dyn Fn(RequestRecord) -> Pin<Box<dyn Future<Output = Result<CompletionResponse>> + Send>>
    + Send
    + Sync;

#[derive(Clone)]
enum Turn {
    Sync(Arc<SyncTurn>),
    Async(Arc<AsyncTurn>),
}

/// A model whose every turn a closure decides, from the [`Request`]: the transcript, the
/// tools offered, the settings, the output schema.
///
/// ```
/// use harness_core::testing::FunctionModel;
/// use harness_core::{CompletionResponse, Llm, Message, ToolCall};
/// use serde_json::json;
///
/// // Calls `add` first, then answers with what it returned.
/// let model = FunctionModel::new(|request| match request.messages.last() {
///     Some(last) if last.name.as_deref() == Some("add") => CompletionResponse::text(last.text()),
///     _ => CompletionResponse::from_tool_calls(vec![
///         ToolCall::new("add", json!({"a": 2, "b": 3})).with_id("1"),
///     ]),
/// });
/// ```
#[derive(Clone)]
pub struct FunctionModel {
    turn: Turn,
    structured_output: bool,
    prices: Option<Prices>,
}

impl std::fmt::Debug for FunctionModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FunctionModel").finish_non_exhaustive()
    }
}

impl FunctionModel {
    /// A model answering with what `turn` returns.
    pub fn new(turn: impl Fn(&Request<'_>) -> CompletionResponse + Send + Sync + 'static) -> Self {
        Self::fallible(move |request| Ok(turn(request)))
    }

    /// A model whose turns may fail, to test how an agent meets a model's errors.
    pub fn fallible(
        turn: impl Fn(&Request<'_>) -> Result<CompletionResponse> + Send + Sync + 'static,
    ) -> Self {
        Self {
            turn: Turn::Sync(Arc::new(turn)),
            structured_output: false,
            prices: None,
        }
    }

    /// A model whose turns are async, to simulate latency or await something; it gets the
    /// request as a [`RequestRecord`].
    pub fn from_async<F, Fut>(turn: F) -> Self
    where
        F: Fn(RequestRecord) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CompletionResponse>> + Send + 'static,
    {
        Self {
            turn: Turn::Async(Arc::new(move |request| Box::pin(turn(request)))),
            structured_output: false,
            prices: None,
        }
    }

    /// Says the model can be held to an output schema natively
    /// ([`Supports::structured_output`]), so an agent with a structured output sends the
    /// schema in the request instead of offering `final_answer`.
    pub fn with_structured_output(mut self, on: bool) -> Self {
        self.structured_output = on;
        self
    }

    /// Says the model charges `prices` ([`ModelInfo::prices`]).
    pub fn with_prices(mut self, prices: Prices) -> Self {
        self.prices = Some(prices);
        self
    }
}

#[async_trait::async_trait]
impl Llm for FunctionModel {
    async fn generate(&self, request: Request<'_>) -> Result<CompletionResponse> {
        match &self.turn {
            Turn::Sync(turn) => turn(&request),
            Turn::Async(turn) => turn(RequestRecord::from(&request)).await,
        }
    }

    fn info(&self) -> ModelInfo {
        let supports = Supports::new()
            .with_tools(true)
            .with_structured_output(self.structured_output);
        priced(
            ModelInfo::new("test", "function").with_supports(supports),
            self.prices,
        )
    }
}

/// A model that replays a script of responses, one per call, and records what it was sent.
///
/// Running out of script is an error that says so, so a test that expected fewer turns fails
/// plainly.
///
/// ```
/// use harness_core::testing::ScriptedModel;
/// use harness_core::{CompletionResponse, Llm, Message, Request};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let model = ScriptedModel::new([CompletionResponse::text("hello")]);
/// let hi = [Message::user("hi")];
/// assert_eq!(model.generate(Request::new(&hi)).await?.content(), "hello");
/// assert_eq!(model.requests()[0], vec![Message::user("hi")]);
/// assert!(model.generate(Request::new(&[])).await.is_err());
/// # Ok::<(), harness_core::Error>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Default)]
pub struct ScriptedModel {
    script: Mutex<VecDeque<Result<CompletionResponse>>>,
    records: Mutex<Vec<RequestRecord>>,
    prices: Option<Prices>,
}

impl ScriptedModel {
    /// A model that answers with `responses`, in order.
    pub fn new(responses: impl IntoIterator<Item = CompletionResponse>) -> Self {
        Self {
            script: Mutex::new(responses.into_iter().map(Ok).collect()),
            ..Self::default()
        }
    }

    /// Adds a response to the end of the script.
    pub fn then(self, response: CompletionResponse) -> Self {
        self.lock_script().push_back(Ok(response));
        self
    }

    /// Adds a failure to the end of the script.
    pub fn then_fail(self, error: Error) -> Self {
        self.lock_script().push_back(Err(error));
        self
    }

    /// Says the model charges `prices` ([`ModelInfo::prices`]).
    pub fn with_prices(mut self, prices: Prices) -> Self {
        self.prices = Some(prices);
        self
    }

    /// Every transcript the model was sent, one per call, as the model saw it (after the
    /// middleware and the context policy).
    pub fn requests(&self) -> Vec<Vec<Message>> {
        self.records().into_iter().map(|r| r.messages).collect()
    }

    /// The names of the tools offered on each call.
    pub fn offered_tools(&self) -> Vec<Vec<String>> {
        self.records()
            .into_iter()
            .map(|r| r.tools.into_iter().map(|t| t.name.clone()).collect())
            .collect()
    }

    /// Every request whole, one per call: transcript, tools, settings, output schema.
    pub fn records(&self) -> Vec<RequestRecord> {
        self.records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// How many responses are left.
    pub fn remaining(&self) -> usize {
        self.lock_script().len()
    }

    fn lock_script(&self) -> std::sync::MutexGuard<'_, VecDeque<Result<CompletionResponse>>> {
        self.script.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait::async_trait]
impl Llm for ScriptedModel {
    async fn generate(&self, request: Request<'_>) -> Result<CompletionResponse> {
        let calls = {
            let mut records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
            records.push(RequestRecord::from(&request));
            records.len()
        };
        self.lock_script().pop_front().unwrap_or_else(|| {
            Err(Error::configuration(format!(
                "ScriptedModel ran out of responses at call {calls}; add more to the script"
            )))
        })
    }

    fn info(&self) -> ModelInfo {
        priced(
            ModelInfo::new("test", "scripted").with_supports(Supports::new().with_tools(true)),
            self.prices,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn examples_fit_their_schemas() {
        let schema = json!({
            "type": "object",
            "properties": {
                "s": {"type": "string", "minLength": 3},
                "i": {"type": "integer", "minimum": 5},
                "n": {"type": "number"},
                "b": {"type": "boolean"},
                "e": {"type": "string", "enum": ["c", "f"]},
                "u": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                "o": {"type": ["string", "null"]},
                "d": {"type": "integer", "default": 3},
                "v": {},
                "a": {"type": "array", "items": {"type": "integer"}},
                "t": {"$ref": "#/$defs/Tree"}
            },
            "$defs": {"Tree": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}}}}
        });
        let value = example_value(&schema, &schema, 0);
        assert_eq!(value["s"], json!("aaa"));
        assert_eq!(value["i"], json!(5));
        assert_eq!(value["n"], json!(0.0));
        assert_eq!(value["b"], json!(false));
        assert_eq!(value["e"], json!("c"));
        assert_eq!(value["u"], json!(0));
        assert_eq!(value["o"], json!("a"));
        assert_eq!(value["d"], json!(3));
        assert_eq!(value["v"], Value::Null);
        assert_eq!(value["a"], json!([0]));
        assert!(value["t"]["children"].is_array());
        // The validator is the `output` feature's dependency.
        #[cfg(feature = "output")]
        {
            let validator = jsonschema::validator_for(&schema).unwrap();
            assert!(validator.is_valid(&value), "{value}");
        }
    }
}
