//! The v2 chat request, written straight from the [`Request`](harness_core::Request).

use harness_core::{Block, Content, Message, Role, ToolSpec};
use serde::ser::{SerializeMap as _, SerializeSeq as _};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::sync::Arc;

use super::THINKING_FORMAT;
use crate::wire::{ContentText, DataUrl, JsonText, Parameters};

/// A v2 chat request, borrowed from the [`Request`](harness_core::Request): the unset fields
/// left out.
#[derive(Serialize)]
pub(super) struct Body<'a> {
    pub(super) model: &'a str,
    /// Vendor fields merged in last as the body is sent ([`crate::rest::with_extra`]).
    #[serde(skip)]
    pub(super) extra: Cow<'a, Map<String, Value>>,
    pub(super) messages: Messages<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tools: Option<Tools<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) response_format: Option<ResponseFormat<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) thinking: Option<ThinkingWire>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub(super) stop_sequences: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) p: Option<f64>,
    pub(super) stream: bool,
}

/// `{"type": "json_object", "json_schema": {...}}`.
#[derive(Serialize)]
pub(super) struct ResponseFormat<'a> {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) json_schema: &'a Value,
}

/// `{"type": "enabled", "token_budget": n}`.
#[derive(Serialize)]
pub(super) struct ThinkingWire {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) token_budget: u32,
}

/// The tools, each `{"type": "function", "function": {name, description, parameters}}`;
/// with `only`, that tool alone when it is among them.
pub(super) struct Tools<'a> {
    pub(super) specs: &'a [Arc<ToolSpec>],
    pub(super) only: Option<&'a str>,
}

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Function<'a> {
            name: &'a str,
            description: &'a str,
            parameters: Parameters<'a>,
        }
        #[derive(Serialize)]
        struct Tool<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            function: Function<'a>,
        }
        let only = self
            .only
            .filter(|name| self.specs.iter().any(|tool| tool.name == *name));
        let specs = self
            .specs
            .iter()
            .filter(|tool| only.is_none_or(|name| tool.name == name));
        serializer.collect_seq(specs.map(|tool| Tool {
            kind: "function",
            function: Function {
                name: &tool.name,
                description: &tool.description,
                parameters: Parameters::of(&tool.parameters),
            },
        }))
    }
}

/// The messages in v2 chat form, each role its own shape, in the transcript's order (system
/// messages included where they stand). An assistant message with nothing to send (an empty
/// answer kept in the transcript) is left out: Cohere refuses one.
///
/// Every call and result carries an id here ([`crate::wire::with_call_ids`]).
pub(super) struct Messages<'a>(pub(super) Cow<'a, [Message]>);

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        for message in self.0.iter() {
            if message.role == Role::Assistant
                && message.tool_calls.is_empty()
                && ContentText(&message.content).is_empty()
                && thinking(&message.content).next().is_none()
            {
                continue;
            }
            seq.serialize_element(&MessageWire(message))?;
        }
        seq.end()
    }
}

/// One message: `{"role", "content"}`; an assistant's calls as `tool_calls`, its text then
/// as `tool_plan`; a tool result with its `tool_call_id`.
struct MessageWire<'a>(&'a Message);

impl Serialize for MessageWire<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let message = self.0;
        let text = ContentText(&message.content);
        let mut map = serializer.serialize_map(None)?;
        match message.role {
            Role::User => {
                map.serialize_entry("role", "user")?;
                map.serialize_entry("content", &UserContent(&message.content))?;
            }
            Role::Assistant if !message.tool_calls.is_empty() => {
                map.serialize_entry("role", "assistant")?;
                if !text.is_empty() {
                    map.serialize_entry("tool_plan", &text)?;
                }
                if thinking(&message.content).next().is_some() {
                    map.serialize_entry("content", &AssistantContent(&message.content, false))?;
                }
                map.serialize_entry("tool_calls", &Calls(&message.tool_calls))?;
            }
            Role::Assistant => {
                map.serialize_entry("role", "assistant")?;
                if thinking(&message.content).next().is_some() {
                    map.serialize_entry("content", &AssistantContent(&message.content, true))?;
                } else {
                    map.serialize_entry("content", &text)?;
                }
            }
            Role::Tool => {
                map.serialize_entry("role", "tool")?;
                map.serialize_entry(
                    "tool_call_id",
                    message.tool_call_id.as_deref().unwrap_or(""),
                )?;
                // Cohere's tool results are text (or documents): images are not sent.
                map.serialize_entry("content", &text)?;
            }
            Role::System => {
                map.serialize_entry("role", "system")?;
                map.serialize_entry("content", &text)?;
            }
        }
        map.end()
    }
}

/// The reasoning of a message that goes back to Cohere: Cohere's own (or unattributed),
/// not redacted, not empty.
fn thinking(content: &Content) -> impl Iterator<Item = &str> {
    let blocks = match content {
        Content::Blocks(blocks) => &blocks[..],
        Content::Text(_) => &[][..],
    };
    blocks.iter().filter_map(|block| match block {
        Block::Thinking(thinking)
            if thinking.is_for(THINKING_FORMAT)
                && thinking.redacted.is_none()
                && !thinking.text.is_empty() =>
        {
            Some(thinking.text.as_str())
        }
        _ => None,
    })
}

/// An assistant's content as blocks: its thinking, then (`text`) its text.
struct AssistantContent<'a>(&'a Content, bool);

impl Serialize for AssistantContent<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        for text in thinking(self.0) {
            seq.serialize_element(&Part::Thinking { thinking: text })?;
        }
        let text = ContentText(self.0);
        if self.1 && !text.is_empty() {
            seq.serialize_element(&PartText { kind: "text", text })?;
        }
        seq.end()
    }
}

/// A user's content: a string when it has no image, else text and image parts in order.
struct UserContent<'a>(&'a Content);

impl Serialize for UserContent<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let blocks = match self.0 {
            Content::Blocks(blocks) if blocks.iter().any(|b| matches!(b, Block::Image(_))) => {
                blocks
            }
            content => return ContentText(content).serialize(serializer),
        };
        serializer.collect_seq(blocks.iter().filter_map(|block| match block {
            Block::Text(t) if !t.text.is_empty() => Some(Part::Text { text: &t.text }),
            Block::Image(image) => Some(Part::ImageUrl {
                image_url: ImageUrl {
                    url: DataUrl(image.source()),
                },
            }),
            // Reasoning is the model's; a document has no place in Cohere's chat.
            _ => None,
        }))
    }
}

/// A content part as sent.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: &'a str },
    Thinking { thinking: &'a str },
    ImageUrl { image_url: ImageUrl<'a> },
}

/// A text part whose text is written from the content as it is.
#[derive(Serialize)]
struct PartText<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: ContentText<'a>,
}

#[derive(Serialize)]
struct ImageUrl<'a> {
    url: DataUrl<'a>,
}

/// An assistant's calls, each `{id, type: "function", function: {name, arguments}}`, the
/// arguments as JSON text (a call whose arguments were not an object goes back as `{}`).
struct Calls<'a>(&'a [harness_core::ToolCall]);

impl Serialize for Calls<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Function<'a> {
            name: &'a str,
            arguments: JsonText<'a, Map<String, Value>>,
        }
        #[derive(Serialize)]
        struct Call<'a> {
            id: &'a str,
            #[serde(rename = "type")]
            kind: &'static str,
            function: Function<'a>,
        }
        serializer.collect_seq(self.0.iter().map(|call| Call {
            id: call.id.as_deref().unwrap_or(""),
            kind: "function",
            function: Function {
                name: &call.name,
                arguments: JsonText(&call.arguments),
            },
        }))
    }
}
