//! What a model is asked: [`Request`], the conversation, the tools, the [`ModelSettings`] and
//! an optional [`OutputSchema`]; all borrowed, so asking costs no copy of the transcript.
//!
//! Every type here is `#[non_exhaustive]` and built through constructors and `with_*`
//! methods, so a field added later breaks no implementor of [`Llm`](crate::Llm) and no
//! caller.

use std::sync::{Arc, LazyLock};

use serde_json::{Map, Value};

use crate::hosted::HostedTool;
use crate::message::Message;
use crate::response::ReasoningLevel;
use crate::tool::ToolSpec;

/// Which tools the model may, must or must not call.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides (the vendors' default).
    Auto,
    /// No tool call; answer in text.
    None,
    /// At least one tool call, of any tool.
    Required,
    /// A call of this tool.
    Tool(String),
}

/// How a model answers: sampling, length, stop sequences, tool choice, reasoning, the
/// vendor's prompt cache, and any vendor field the library does not type
/// ([`extra`](ModelSettings::extra)).
///
/// Settings can be given on the provider (its defaults), on the agent and per run; the
/// narrower wins, setting by setting ([`ModelSettings::over`]). A setting left `None` (or
/// an empty `stop`, an empty `extra`) is not sent, so the vendor's own default applies.
///
/// ```
/// use harness_core::{ModelSettings, ToolChoice};
///
/// let agent = ModelSettings::new().with_temperature(0.2).with_max_tokens(800);
/// let run = ModelSettings::new().with_temperature(0.0).with_tool_choice(ToolChoice::Required);
/// let effective = run.over(&agent);
/// assert_eq!(effective.temperature, Some(0.0));
/// assert_eq!(effective.max_tokens, Some(800));
/// assert_eq!(effective.tool_choice, Some(ToolChoice::Required));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ModelSettings {
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// The most tokens the answer may have.
    pub max_tokens: Option<u32>,
    /// Nucleus sampling: the probability mass sampled from.
    pub top_p: Option<f64>,
    /// Sequences that end the answer where they appear.
    pub stop: Vec<String>,
    /// Which tools the model may, must or must not call.
    pub tool_choice: Option<ToolChoice>,
    /// Whether the model may call several tools in one turn.
    pub parallel_tool_calls: Option<bool>,
    /// How hard a reasoning model thinks.
    pub reasoning: Option<ReasoningLevel>,
    /// How the request uses the vendor's prompt cache; each provider sends what its vendor
    /// has of it ([`PromptCache`]).
    pub prompt_cache: Option<PromptCache>,
    /// Tools the vendor runs on its own side (a web search, a code sandbox, a remote MCP
    /// server): sent by a provider that can offer them, refused with a
    /// [`Configuration`](crate::ErrorKind::Configuration) error by any other. The narrower
    /// settings' list, when not empty, replaces the broader one's, as `stop` does.
    pub hosted_tools: Vec<HostedTool>,
    /// Fields for the vendor's request body that the library does not type (a seed, a
    /// service tier, a vendor's own switch), merged into the body last as a JSON merge patch
    /// (RFC 7396): an object merges key by key into the object the library built, any other
    /// value replaces what is there, and `null` removes the key. What a vendor refuses, it
    /// refuses with its own error.
    pub extra: Map<String, Value>,
}

/// No setting: what [`Request::new`] starts from.
static NO_SETTINGS: LazyLock<ModelSettings> = LazyLock::new(ModelSettings::default);

impl ModelSettings {
    /// No setting: every vendor default applies.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the sampling temperature.
    pub fn with_temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Sets the most tokens the answer may have.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Sets nucleus sampling's probability mass.
    pub fn with_top_p(mut self, top_p: f64) -> Self {
        self.top_p = Some(top_p);
        self
    }

    /// Sets the stop sequences.
    pub fn with_stop(mut self, stop: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.stop = stop.into_iter().map(Into::into).collect();
        self
    }

    /// Sets which tools the model may, must or must not call.
    pub fn with_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// Allows or forbids several tool calls in one turn.
    pub fn with_parallel_tool_calls(mut self, on: bool) -> Self {
        self.parallel_tool_calls = Some(on);
        self
    }

    /// Sets how hard a reasoning model thinks.
    pub fn with_reasoning(mut self, level: ReasoningLevel) -> Self {
        self.reasoning = Some(level);
        self
    }

    /// Sets how the request uses the vendor's prompt cache.
    ///
    /// ```
    /// use harness_core::{CacheTtl, ModelSettings, PromptCache};
    ///
    /// let settings = ModelSettings::new()
    ///     .with_prompt_cache(PromptCache::breakpoints().with_ttl(CacheTtl::OneHour));
    /// assert!(settings.prompt_cache.is_some_and(|cache| cache.breakpoints));
    /// ```
    pub fn with_prompt_cache(mut self, cache: PromptCache) -> Self {
        self.prompt_cache = Some(cache);
        self
    }

    /// Adds a tool the vendor runs on its own side ([`hosted_tools`](ModelSettings::hosted_tools)).
    ///
    /// ```
    /// use harness_core::ModelSettings;
    /// use harness_core::hosted::WebSearch;
    ///
    /// let settings = ModelSettings::new().with_hosted_tool(WebSearch::new());
    /// assert_eq!(settings.hosted_tools[0].kind(), "web_search");
    /// ```
    pub fn with_hosted_tool(mut self, tool: impl Into<HostedTool>) -> Self {
        self.hosted_tools.push(tool.into());
        self
    }

    /// Adds `value` under `key` to the vendor fields merged into the request body
    /// ([`extra`](ModelSettings::extra)).
    ///
    /// ```
    /// use harness_core::ModelSettings;
    /// use serde_json::json;
    ///
    /// let settings = ModelSettings::new().with_extra("seed", json!(7));
    /// assert_eq!(settings.extra["seed"], 7);
    /// ```
    pub fn with_extra(mut self, key: impl Into<String>, value: Value) -> Self {
        self.extra.insert(key.into(), value);
        self
    }

    /// These settings over `broader` ones: each setting given here wins, the others come
    /// from `broader` (a run's settings over the agent's, the agent's over the provider's);
    /// the vendor fields of both are kept, this side's winning per key.
    #[must_use]
    pub fn over(&self, broader: &ModelSettings) -> ModelSettings {
        let extra = if self.extra.is_empty() {
            broader.extra.clone()
        } else {
            let mut extra = broader.extra.clone();
            extra.extend(self.extra.iter().map(|(k, v)| (k.clone(), v.clone())));
            extra
        };
        ModelSettings {
            temperature: self.temperature.or(broader.temperature),
            max_tokens: self.max_tokens.or(broader.max_tokens),
            top_p: self.top_p.or(broader.top_p),
            stop: if self.stop.is_empty() {
                broader.stop.clone()
            } else {
                self.stop.clone()
            },
            tool_choice: self
                .tool_choice
                .clone()
                .or_else(|| broader.tool_choice.clone()),
            parallel_tool_calls: self.parallel_tool_calls.or(broader.parallel_tool_calls),
            reasoning: self.reasoning.or(broader.reasoning),
            prompt_cache: self
                .prompt_cache
                .clone()
                .or_else(|| broader.prompt_cache.clone()),
            hosted_tools: if self.hosted_tools.is_empty() {
                broader.hosted_tools.clone()
            } else {
                self.hosted_tools.clone()
            },
            extra,
        }
    }

    /// True when nothing is set.
    pub fn is_empty(&self) -> bool {
        self == &*NO_SETTINGS
    }
}

/// How a request uses the vendor's prompt cache: one value for every vendor, each provider
/// sending the parts its vendor has and leaving the others out. Set it with
/// [`ModelSettings::with_prompt_cache`]; the narrower settings' value replaces the broader's
/// whole.
///
/// - **Anthropic** (and Claude on other clouds) caches only where the request marks it:
///   [`breakpoints`](PromptCache::breakpoints) puts a `cache_control` breakpoint on the
///   system prompt, on the last tool and on the last message, as Anthropic recommends for an
///   agent (each turn reads the prefix the turn before wrote); [`ttl`](PromptCache::ttl)
///   keeps the entries five minutes (the default) or an hour. Cache reads and writes come back
///   in [`TokenUsage`](crate::TokenUsage).
/// - **OpenAI** caches long prefixes by itself; [`key`](PromptCache::key) is its
///   `prompt_cache_key` (requests sharing a key are routed to the same cache) and
///   [`retention`](PromptCache::retention) its `prompt_cache_retention`.
/// - **Gemini** reads an explicit cache made beforehand through its `cachedContents` API:
///   [`cached_content`](PromptCache::cached_content) is its name
///   (`cachedContents/...`), sent as `cachedContent`. (Gemini 2.5 also caches implicitly,
///   with nothing to set.)
///
/// ```
/// use harness_core::{CacheRetention, ModelSettings, PromptCache};
///
/// // One value for an agent that may run on any vendor.
/// let cache = PromptCache::breakpoints()
///     .with_key("support-bot")
///     .with_retention(CacheRetention::Extended);
/// let settings = ModelSettings::new().with_prompt_cache(cache);
/// # let _ = settings;
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct PromptCache {
    /// Anthropic: cache breakpoints on the system prompt, the last tool and the last message.
    pub breakpoints: bool,
    /// Anthropic: how long the breakpoints' entries live (five minutes when unset).
    pub ttl: Option<CacheTtl>,
    /// OpenAI: `prompt_cache_key`, what requests that share a prefix have in common.
    pub key: Option<String>,
    /// OpenAI: `prompt_cache_retention`.
    pub retention: Option<CacheRetention>,
    /// Gemini: `cachedContent`, the name of a cache made beforehand (`cachedContents/...`).
    pub cached_content: Option<String>,
}

impl PromptCache {
    /// Nothing set: each vendor's default.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cache breakpoints on the system prompt, the last tool and the last message
    /// (Anthropic).
    pub fn breakpoints() -> Self {
        Self {
            breakpoints: true,
            ..Self::default()
        }
    }

    /// Reads Gemini's cache `name` (`cachedContents/...`).
    pub fn cached_content(name: impl Into<String>) -> Self {
        Self {
            cached_content: Some(name.into()),
            ..Self::default()
        }
    }

    /// Sets how long Anthropic keeps the breakpoints' entries.
    #[must_use]
    pub fn with_ttl(mut self, ttl: CacheTtl) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Sets OpenAI's `prompt_cache_key`.
    #[must_use]
    pub fn with_key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Sets OpenAI's `prompt_cache_retention`.
    #[must_use]
    pub fn with_retention(mut self, retention: CacheRetention) -> Self {
        self.retention = Some(retention);
        self
    }

    /// Sets Gemini's `cachedContent`.
    #[must_use]
    pub fn with_cached_content(mut self, name: impl Into<String>) -> Self {
        self.cached_content = Some(name.into());
        self
    }
}

/// How long Anthropic keeps a cache entry after its last use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CacheTtl {
    /// Five minutes (`5m`): the default; writes cost 1.25 times the input price.
    FiveMinutes,
    /// An hour (`1h`): writes cost twice the input price.
    OneHour,
}

impl CacheTtl {
    /// The wire value: `5m` or `1h`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FiveMinutes => "5m",
            Self::OneHour => "1h",
        }
    }
}

/// How long OpenAI keeps a cached prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CacheRetention {
    /// In memory (`in_memory`): the default, minutes of inactivity, up to an hour.
    InMemory,
    /// Extended (`24h`): up to a day, on the models that offer it.
    Extended,
}

impl CacheRetention {
    /// The wire value: `in_memory` or `24h`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InMemory => "in_memory",
            Self::Extended => "24h",
        }
    }
}

/// The shape an answer must have: a JSON Schema, for vendors that can hold a model to one
/// (OpenAI's `response_format`, Gemini's `responseJsonSchema`, Ollama's and llama.cpp's
/// structured outputs).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct OutputSchema {
    /// A name for the schema (`[A-Za-z0-9_-]`), which some vendors require.
    pub name: String,
    /// The JSON Schema of the answer: an object schema.
    pub schema: Value,
    /// Whether the schema meets OpenAI's strict mode (every object closed, every property
    /// required), so the vendor may enforce it exactly.
    pub strict: bool,
}

impl OutputSchema {
    /// The schema `schema` under `name`; `strict` when the schema meets strict mode's rules.
    pub fn new(name: impl Into<String>, schema: Value) -> Self {
        let strict = is_strict(&schema);
        Self {
            name: name.into(),
            schema,
            strict,
        }
    }
}

/// Whether every object of `schema` lists all its properties as required and allows no
/// others: what OpenAI's strict structured outputs accept.
fn is_strict(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Object(properties)) = map.get("properties") {
                let required: Vec<&str> = map
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if !properties.keys().all(|k| required.contains(&k.as_str()))
                    || map.get("additionalProperties") != Some(&Value::Bool(false))
                {
                    return false;
                }
            }
            map.values().all(is_strict)
        }
        Value::Array(items) => items.iter().all(is_strict),
        _ => true,
    }
}

/// One request to a model: the conversation, the tools it may call, its settings and the
/// shape its answer must have, all borrowed.
///
/// Built with [`Request::new`] and `with_*`; read through the fields. A provider applies
/// its own defaults under [`Request::settings`] (see [`ModelSettings::over`]).
///
/// ```
/// use harness_core::{Message, ModelSettings, Request};
///
/// let messages = [Message::user("hi")];
/// let settings = ModelSettings::new().with_temperature(0.0);
/// let request = Request::new(&messages).with_settings(&settings);
/// assert_eq!(request.messages.len(), 1);
/// assert!(request.tools.is_empty() && request.output.is_none());
/// assert_eq!(request.settings.temperature, Some(0.0));
/// ```
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Request<'a> {
    /// The conversation, oldest first.
    pub messages: &'a [Message],
    /// The tools the model may call; empty when it is offered none. Each spec is shared with
    /// the tool it describes, not copied.
    pub tools: &'a [Arc<ToolSpec>],
    /// How the model should answer.
    pub settings: &'a ModelSettings,
    /// The shape the answer must have, for a vendor that can enforce one
    /// ([`Supports::structured_output`](crate::Supports::structured_output)).
    pub output: Option<&'a OutputSchema>,
}

impl<'a> Request<'a> {
    /// A request for `messages`, with no tools, no settings and no output schema.
    pub fn new(messages: &'a [Message]) -> Self {
        Self {
            messages,
            tools: &[],
            settings: &*NO_SETTINGS,
            output: None,
        }
    }

    /// Offers the model these tools.
    pub fn with_tools(mut self, tools: &'a [Arc<ToolSpec>]) -> Self {
        self.tools = tools;
        self
    }

    /// Asks with these settings.
    pub fn with_settings(mut self, settings: &'a ModelSettings) -> Self {
        self.settings = settings;
        self
    }

    /// Asks for an answer of this shape.
    pub fn with_output(mut self, output: &'a OutputSchema) -> Self {
        self.output = Some(output);
        self
    }
}

/// A [`Request`] that owns its parts: what a stream keeps when it outlives the request it
/// was made from (a wrapper that may ask again, or ask another model, after the caller's
/// buffers are gone). [`as_request`](OwnedRequest::as_request) lends it out again.
///
/// ```
/// use harness_core::{Message, OwnedRequest, Request};
///
/// let owned = {
///     let messages = vec![Message::user("hi")];
///     OwnedRequest::from(Request::new(&messages))
/// };
/// assert_eq!(owned.as_request().messages[0].text(), "hi");
/// ```
#[derive(Debug, Clone, Default)]
pub struct OwnedRequest {
    messages: Vec<Message>,
    tools: Vec<Arc<ToolSpec>>,
    settings: ModelSettings,
    output: Option<OutputSchema>,
}

impl From<Request<'_>> for OwnedRequest {
    fn from(request: Request<'_>) -> Self {
        Self {
            messages: request.messages.to_vec(),
            tools: request.tools.to_vec(),
            settings: request.settings.clone(),
            output: request.output.cloned(),
        }
    }
}

impl OwnedRequest {
    /// The request, borrowed from this one.
    pub fn as_request(&self) -> Request<'_> {
        let request = Request::new(&self.messages)
            .with_tools(&self.tools)
            .with_settings(&self.settings);
        match &self.output {
            Some(output) => request.with_output(output),
            None => request,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_narrower_setting_wins_one_by_one() {
        let provider = ModelSettings::new()
            .with_temperature(1.0)
            .with_stop(["END"])
            .with_reasoning(ReasoningLevel::Low);
        let agent = ModelSettings::new().with_temperature(0.5).with_top_p(0.9);
        let run = ModelSettings::new()
            .with_parallel_tool_calls(false)
            .with_extra("seed", json!(7));
        let provider = provider.with_prompt_cache(PromptCache::breakpoints());
        let agent = agent
            .with_extra("seed", json!(1))
            .with_extra("service_tier", json!("flex"));
        let effective = run.over(&agent.over(&provider));
        assert_eq!(effective.extra["seed"], 7);
        assert_eq!(effective.extra["service_tier"], "flex");
        assert_eq!(effective.temperature, Some(0.5));
        assert_eq!(effective.top_p, Some(0.9));
        assert_eq!(effective.stop, ["END"]);
        assert_eq!(effective.parallel_tool_calls, Some(false));
        assert_eq!(effective.reasoning, Some(ReasoningLevel::Low));
        assert_eq!(effective.prompt_cache, Some(PromptCache::breakpoints()));
        // A narrower cache setting replaces the broader one whole.
        let keyed = ModelSettings::new().with_prompt_cache(PromptCache::new().with_key("k"));
        let cache = keyed.over(&effective).prompt_cache.unwrap_or_default();
        assert!(!cache.breakpoints && cache.key.as_deref() == Some("k"));
        assert!(ModelSettings::new().is_empty());
        assert!(!effective.is_empty());
    }

    #[test]
    fn strict_means_every_object_closed_with_every_property_required() {
        let closed = json!({"type": "object", "properties": {"a": {"type": "string"}},
            "required": ["a"], "additionalProperties": false});
        assert!(OutputSchema::new("x", closed).strict);
        let optional = json!({"type": "object", "properties": {"a": {"type": "string"}},
            "additionalProperties": false});
        assert!(!OutputSchema::new("x", optional).strict);
        let nested_open = json!({"type": "object", "properties": {"a": {"type": "object",
            "properties": {"b": {"type": "integer"}}, "required": ["b"]}}, "required": ["a"],
            "additionalProperties": false});
        assert!(!OutputSchema::new("x", nested_open).strict);
    }
}
