//! Messages: one entry of a transcript, in the neutral `{"role", "content", ...}` form.
//!
//! The original made `Message` a dict; here it is a record that serialises to exactly that
//! dict (spec §0), so a transcript saved as JSON reads the same in both.

use std::borrow::Cow;
use std::fmt;

use serde::de::Deserializer;
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::content::{Block, merge_blocks, parse_blocks, text_of};

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions for the model.
    System,
    /// The human (or the program speaking for them). Reads `"human"` as well.
    #[serde(alias = "human")]
    User,
    /// The model. Reads `"ai"` as well.
    #[serde(alias = "ai")]
    Assistant,
    /// A tool's result.
    Tool,
}

impl Role {
    /// The role's wire name: `system`, `user`, `assistant` or `tool`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::Tool => "tool",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a message says: plain text, or a list of [`Block`]s.
///
/// Text-only content is sent and saved as a plain string: a list that holds exactly one text
/// block serialises as that block's string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Blocks: text, images, documents, thinking.
    Blocks(Vec<Block>),
}

impl Content {
    /// The concatenated text, leaving out thinking and media.
    pub fn text(&self) -> Cow<'_, str> {
        match self {
            Self::Text(s) => Cow::Borrowed(s),
            Self::Blocks(blocks) => Cow::Owned(text_of(blocks)),
        }
    }

    /// The content as blocks: plain text is one text block (none when empty).
    pub fn blocks(&self) -> Cow<'_, [Block]> {
        match self {
            Self::Text(s) if s.is_empty() => Cow::Owned(Vec::new()),
            Self::Text(s) => Cow::Owned(vec![Block::text(s.clone())]),
            Self::Blocks(blocks) => Cow::Borrowed(blocks),
        }
    }

    /// True when there is no text and no block.
    pub fn is_empty(&self) -> bool {
        match self {
            Self::Text(s) => s.is_empty(),
            Self::Blocks(blocks) => blocks.is_empty(),
        }
    }

    /// Builds content from blocks, merging adjacent text and keeping text-only content as a
    /// plain string.
    pub fn from_blocks(blocks: impl IntoIterator<Item = Block>) -> Self {
        // Most turns hold one text block or none: kept as they are, without a merge.
        let mut blocks = blocks.into_iter();
        let (first, second) = match (blocks.next(), blocks.next()) {
            (None, _) => return Self::Text(String::new()),
            (Some(Block::Text(text)), None) => return Self::Text(text.text),
            (Some(block), None) => return Self::Blocks(vec![block]),
            (Some(first), Some(second)) => (first, second),
        };
        let mut merged = merge_blocks([first, second].into_iter().chain(blocks));
        match merged.as_slice() {
            [] => Self::Text(String::new()),
            [Block::Text(_)] => match merged.pop() {
                Some(Block::Text(t)) => Self::Text(t.text),
                _ => Self::Text(String::new()),
            },
            _ => Self::Blocks(merged),
        }
    }
}

impl Default for Content {
    fn default() -> Self {
        Self::Text(String::new())
    }
}

impl From<String> for Content {
    fn from(value: String) -> Self {
        Self::Text(value)
    }
}

impl From<&str> for Content {
    fn from(value: &str) -> Self {
        Self::Text(value.to_owned())
    }
}

impl From<Vec<Block>> for Content {
    fn from(value: Vec<Block>) -> Self {
        Self::from_blocks(value)
    }
}

impl From<Block> for Content {
    fn from(value: Block) -> Self {
        Self::from_blocks([value])
    }
}

impl Serialize for Content {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text(s) => serializer.serialize_str(s),
            Self::Blocks(blocks) => match blocks.as_slice() {
                [] => serializer.serialize_str(""),
                [Block::Text(t)] => serializer.serialize_str(&t.text),
                _ => blocks.serialize(serializer),
            },
        }
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        if let Value::String(s) = value {
            return Ok(Self::Text(s));
        }
        let blocks = parse_blocks(&value).map_err(serde::de::Error::custom)?;
        Ok(Self::from_blocks(blocks))
    }
}

/// A tool call the model asked for.
///
/// A call whose arguments the model sent as something other than one JSON object (text that
/// is not JSON, an array, a call cut off at the output limit) keeps that text in
/// [`raw_arguments`](ToolCall::raw_arguments) and has no arguments: the agent does not run
/// it, and tells the model why as the call's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The vendor's id for the call, used to pair it with its result. Gemini gives none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The tool's name.
    pub name: String,
    /// The arguments, as the model sent them.
    #[serde(default)]
    pub arguments: Map<String, Value>,
    /// The arguments text exactly as the model sent it, kept only when it was not one JSON
    /// object; such a call is never run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_arguments: Option<String>,
}

impl ToolCall {
    /// A call of `name` with `arguments`. An object is the arguments, and so is a string
    /// holding one (read as [`ToolCall::parse`] reads text); anything else is kept as
    /// [`raw_arguments`](ToolCall::raw_arguments) (its JSON text), so the call is not run.
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        let (arguments, raw_arguments) = match arguments {
            Value::Object(map) => (map, None),
            // A vendor that sends no arguments for a call without parameters.
            Value::Null => (Map::new(), None),
            Value::String(text) => return Self::parse(name, &text),
            other => (Map::new(), Some(other.to_string())),
        };
        Self {
            id: None,
            name: name.into(),
            arguments,
            raw_arguments,
        }
    }

    /// A call of `name` whose arguments arrived as JSON text, as most vendors send them:
    /// one JSON object is the arguments; empty text means none; anything else (not JSON, not
    /// an object) is kept verbatim in [`raw_arguments`](ToolCall::raw_arguments).
    ///
    /// ```
    /// use harness_core::ToolCall;
    ///
    /// assert_eq!(ToolCall::parse("f", r#"{"a": 1}"#).arguments["a"], 1);
    /// assert!(ToolCall::parse("f", "").raw_arguments.is_none());
    /// let cut = ToolCall::parse("f", r#"{"a": "#);
    /// assert!(cut.arguments.is_empty());
    /// assert_eq!(cut.raw_arguments.as_deref(), Some(r#"{"a": "#));
    /// assert!(cut.arguments_error().unwrap().starts_with("not valid JSON"));
    /// ```
    pub fn parse(name: impl Into<String>, text: &str) -> Self {
        let mut call = Self::new(name, Value::Object(Map::new()));
        // JSON's whitespace is ASCII (and `trim()`'s Unicode tables cost a run a function).
        if text.trim_ascii().is_empty() {
            return call;
        }
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => call.arguments = map,
            _ => call.raw_arguments = Some(text.to_owned()),
        }
        call
    }

    /// Sets the call id.
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// What is wrong with the arguments as the model sent them, in words a model can act
    /// on; `None` when they are one JSON object (or absent).
    pub fn arguments_error(&self) -> Option<String> {
        let raw = self.raw_arguments.as_deref()?;
        Some(match serde_json::from_str::<Value>(raw) {
            Err(e) if raw.trim().is_empty() => format!("no arguments were sent ({e})"),
            Err(e) => format!("not valid JSON: {e}"),
            Ok(value) => format!("a JSON object was expected, got {}", json_kind(&value)),
        })
    }

    /// The arguments as one JSON object value.
    pub fn arguments_value(&self) -> Value {
        Value::Object(self.arguments.clone())
    }

    /// The arguments as JSON text: what the model sent when it was not an object, else the
    /// object's text.
    pub fn arguments_text(&self) -> String {
        match &self.raw_arguments {
            Some(raw) => raw.clone(),
            None => Value::Object(self.arguments.clone()).to_string(),
        }
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// One transcript entry.
///
/// Serialises to the neutral form the seed shows, with optional keys only when set:
///
/// ```
/// use harness_core::{Message, ToolCall};
/// use serde_json::json;
///
/// assert_eq!(
///     serde_json::to_value(Message::system("Be brief."))?,
///     json!({"role": "system", "content": "Be brief."})
/// );
/// assert_eq!(
///     serde_json::to_value(Message::tool("22°C", "get_weather").with_call_id("call_1"))?,
///     json!({"role": "tool", "content": "22°C", "name": "get_weather", "tool_call_id": "call_1"})
/// );
/// let request = Message::assistant("")
///     .with_tool_calls(vec![ToolCall::new("add", json!({"a": 2})).with_id("1")]);
/// assert_eq!(
///     serde_json::to_value(request)?,
///     json!({"role": "assistant", "content": "",
///            "tool_calls": [{"id": "1", "name": "add", "arguments": {"a": 2}}]})
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// What was said.
    #[serde(default)]
    pub content: Content,
    /// The tool's name, on a tool result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The id of the call this result answers, on a tool result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The calls the model asked for, on an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
}

impl Message {
    /// A message of `role` saying `content`.
    pub fn new(role: Role, content: impl Into<Content>) -> Self {
        Self {
            role,
            content: content.into(),
            name: None,
            tool_call_id: None,
            tool_calls: Vec::new(),
        }
    }

    /// `{"role": "system", "content": ...}`.
    pub fn system(content: impl Into<Content>) -> Self {
        Self::new(Role::System, content)
    }

    /// `{"role": "user", "content": ...}`.
    pub fn user(content: impl Into<Content>) -> Self {
        Self::new(Role::User, content)
    }

    /// `{"role": "assistant", "content": ...}`.
    pub fn assistant(content: impl Into<Content>) -> Self {
        Self::new(Role::Assistant, content)
    }

    /// `{"role": "tool", "name": ..., "content": ...}`: the result of a call of tool `name`.
    /// Add the call id with [`Message::with_call_id`].
    pub fn tool(content: impl Into<Content>, name: impl Into<String>) -> Self {
        let mut message = Self::new(Role::Tool, content);
        message.name = Some(name.into());
        message
    }

    /// Sets the id of the call a tool result answers.
    pub fn with_call_id(mut self, call_id: impl Into<String>) -> Self {
        self.tool_call_id = Some(call_id.into());
        self
    }

    /// Sets the calls an assistant message asks for.
    pub fn with_tool_calls(mut self, tool_calls: Vec<ToolCall>) -> Self {
        self.tool_calls = tool_calls;
        self
    }

    /// The message's text, leaving out thinking and media.
    pub fn text(&self) -> Cow<'_, str> {
        self.content.text()
    }

    /// The neutral JSON form.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Reads a message from its neutral JSON form.
    ///
    /// # Errors
    /// A [`Configuration`](crate::ErrorKind::Configuration) error naming what does not fit: an
    /// unknown role, an unknown block type, a malformed tool call.
    pub fn from_value(value: Value) -> crate::Result<Self> {
        serde_json::from_value(value)
            .map_err(|e| crate::Error::configuration(format!("invalid message: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::{Image, Thinking};
    use serde_json::json;

    fn value(m: &Message) -> Value {
        m.to_value()
    }

    #[test]
    fn content_from_blocks_keeps_one_text_as_text_and_merges_the_rest() {
        let text = |t: &str| Block::text(t);
        let image = || Block::from(Image::from_url("u"));
        assert_eq!(Content::from_blocks([]), Content::Text(String::new()));
        assert_eq!(
            Content::from_blocks([text("hi")]),
            Content::Text("hi".into())
        );
        assert_eq!(
            Content::from_blocks([image()]),
            Content::Blocks(vec![image()])
        );
        assert_eq!(
            Content::from_blocks([text("a"), text("b"), text("c")]),
            Content::Text("abc".into())
        );
        assert_eq!(
            Content::from_blocks(vec![text("a"), image(), text("b"), text("c")]),
            Content::Blocks(vec![text("a"), image(), text("bc")])
        );
        let thinking = Block::from(Thinking::new("hm"));
        assert_eq!(
            Content::from_blocks([thinking.clone(), text("a"), text("b")]),
            Content::Blocks(vec![thinking, text("ab")])
        );
    }

    #[test]
    fn role_constructors_give_the_seed_dicts() {
        assert_eq!(
            value(&Message::system("s")),
            json!({"role": "system", "content": "s"})
        );
        assert_eq!(
            value(&Message::user("h")),
            json!({"role": "user", "content": "h"})
        );
        assert_eq!(
            value(&Message::assistant("a")),
            json!({"role": "assistant", "content": "a"})
        );
        assert_eq!(
            value(&Message::tool("22°C, sunny", "get_weather")),
            json!({"role": "tool", "content": "22°C, sunny", "name": "get_weather"})
        );
    }

    #[test]
    fn text_only_blocks_stay_a_plain_string() {
        let m = Message::user(vec![Block::text("a"), Block::text("b")]);
        assert_eq!(m.content, Content::Text("ab".into()));
        assert_eq!(value(&m), json!({"role": "user", "content": "ab"}));

        let mixed = Message::user(vec![Block::text("look"), Image::from_url("u").into()]);
        assert_eq!(
            value(&mixed),
            json!({"role": "user", "content": [
                {"type": "text", "text": "look"}, {"type": "image", "url": "u"}
            ]})
        );
        assert_eq!(mixed.text(), "look");
    }

    #[test]
    fn round_trips_through_json() {
        let messages = vec![
            Message::system("s"),
            Message::assistant(vec![Thinking::signed("t", "sig").into(), Block::text("x")])
                .with_tool_calls(vec![ToolCall::new("f", json!({"q": 1})).with_id("c1")]),
            Message::tool("r", "f").with_call_id("c1"),
        ];
        let text = serde_json::to_string(&messages).unwrap_or_default();
        let back: Vec<Message> = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(back, messages);
    }

    #[test]
    fn reading_accepts_aliases_and_refuses_unknown_roles_with_a_message() {
        let m = Message::from_value(json!({"role": "human", "content": null})).ok();
        assert_eq!(m, Some(Message::user("")));
        let err = Message::from_value(json!({"role": "robot", "content": "x"})).err();
        let text = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            text.starts_with("invalid message: unknown variant `robot`"),
            "{text}"
        );
    }
}
