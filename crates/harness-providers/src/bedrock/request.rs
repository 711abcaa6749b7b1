//! The Converse request body, written straight from the [`Request`](harness_core::Request)'s
//! messages and tools.

use std::borrow::Cow;
use std::cell::Cell;
use std::sync::Arc;

use harness_core::{
    Block, Content, Document, Image, ImageSource, Message, Role, Thinking, ToolSpec,
};
use serde::ser::{Error as _, SerializeMap as _, SerializeSeq as _};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use super::{Guardrail, THINKING_FORMAT};
use crate::wire::{Parameters, SystemText};

/// A Converse (or ConverseStream: the same body) request, borrowed from the request: keys
/// in this order, the unset ones left out.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Body<'a> {
    /// Vendor fields merged in last as the body is sent ([`crate::rest::with_extra`]):
    /// `additionalModelRequestFields`, `performanceConfig`, `requestMetadata`, ...
    #[serde(skip)]
    pub(super) extra: Cow<'a, Map<String, Value>>,
    pub(super) messages: Messages<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) system: Option<System<'a>>,
    #[serde(skip_serializing_if = "InferenceConfig::is_empty")]
    pub(super) inference_config: InferenceConfig<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tool_config: Option<ToolConfig<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) guardrail_config: Option<&'a Guardrail>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) additional_model_request_fields: Option<Additional>,
}

/// A CountTokens request: `{"input": {"converse": {messages, system}}}`, the prompt of a
/// Converse request borrowed from it (Converse's token count takes no tools).
#[derive(Serialize)]
pub(super) struct CountBody<'b, 'a> {
    input: CountInput<'b, 'a>,
}

#[derive(Serialize)]
struct CountInput<'b, 'a> {
    converse: Converse<'b, 'a>,
}

#[derive(Serialize)]
struct Converse<'b, 'a> {
    messages: &'b Messages<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<&'b System<'a>>,
}

impl<'b, 'a> CountBody<'b, 'a> {
    pub(super) fn of(body: &'b Body<'a>) -> Self {
        Self {
            input: CountInput {
                converse: Converse {
                    messages: &body.messages,
                    system: body.system.as_ref(),
                },
            },
        }
    }
}

/// `inferenceConfig`: only what is set.
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct InferenceConfig<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) top_p: Option<f64>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub(super) stop_sequences: &'a [String],
}

impl InferenceConfig<'_> {
    fn is_empty(&self) -> bool {
        self.max_tokens.is_none()
            && self.temperature.is_none()
            && self.top_p.is_none()
            && self.stop_sequences.is_empty()
    }
}

/// `additionalModelRequestFields` the provider writes itself: Anthropic's extended thinking.
/// Fields of the user's own go in `ModelSettings::extra` under the same key and are merged
/// into these.
#[derive(Serialize)]
pub(super) struct Additional {
    pub(super) thinking: ThinkingWire,
}

#[derive(Serialize)]
pub(super) struct ThinkingWire {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) budget_tokens: u32,
}

/// `{"cachePoint": {"type": "default"}}`: the prompt up to here is cached.
struct CachePoint;

impl Serialize for CachePoint {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Point {
            #[serde(rename = "type")]
            kind: &'static str,
        }
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry("cachePoint", &Point { kind: "default" })?;
        map.end()
    }
}

/// `system`: the system prompt as one text block, a cache point after it when caching.
pub(super) struct System<'a> {
    pub(super) text: SystemText<'a>,
    pub(super) cache: bool,
}

impl Serialize for System<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Text<'a> {
            text: &'a SystemText<'a>,
        }
        let mut seq = serializer.serialize_seq(None)?;
        seq.serialize_element(&Text { text: &self.text })?;
        if self.cache {
            seq.serialize_element(&CachePoint)?;
        }
        seq.end()
    }
}

/// `toolConfig`: the tools (a cache point after them when caching) and the choice.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ToolConfig<'a> {
    pub(super) tools: Tools<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tool_choice: Option<Choice<'a>>,
}

pub(super) struct Tools<'a> {
    pub(super) specs: &'a [Arc<ToolSpec>],
    pub(super) cache: bool,
}

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Spec<'a> {
            name: &'a str,
            // Bedrock refuses an empty description: left out instead.
            #[serde(skip_serializing_if = "str::is_empty")]
            description: &'a str,
            input_schema: Schema<'a>,
        }
        #[derive(Serialize)]
        struct Schema<'a> {
            json: Parameters<'a>,
        }
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Tool<'a> {
            tool_spec: Spec<'a>,
        }
        let mut seq = serializer.serialize_seq(None)?;
        for tool in self.specs {
            seq.serialize_element(&Tool {
                tool_spec: Spec {
                    name: &tool.name,
                    description: &tool.description,
                    input_schema: Schema {
                        json: Parameters::of(&tool.parameters),
                    },
                },
            })?;
        }
        if self.cache {
            seq.serialize_element(&CachePoint)?;
        }
        seq.end()
    }
}

/// `toolChoice`: `{"auto": {}}`, `{"any": {}}` or `{"tool": {"name": ...}}`.
pub(super) enum Choice<'a> {
    Auto,
    Any,
    Tool(&'a str),
}

impl Serialize for Choice<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Named<'a> {
            name: &'a str,
        }
        let mut map = serializer.serialize_map(Some(1))?;
        match self {
            Self::Auto => map.serialize_entry("auto", &crate::wire::EmptyObject)?,
            Self::Any => map.serialize_entry("any", &crate::wire::EmptyObject)?,
            Self::Tool(name) => map.serialize_entry("tool", &Named { name })?,
        }
        map.end()
    }
}

/// The messages in Converse form: system messages left out (they are the system prompt),
/// tool results sent as the user's `toolResult` blocks, and consecutive messages of the same
/// side joined into one (Converse wants the two sides to alternate). A message with nothing
/// to send is left out.
///
/// Every call and result carries an id here ([`crate::wire::with_call_ids`]).
pub(super) struct Messages<'a>(pub(super) Cow<'a, [Message]>);

/// The side a message is sent as.
fn side(role: Role) -> Option<&'static str> {
    match role {
        Role::System => None,
        Role::Assistant => Some("assistant"),
        // A user's message and a tool's result.
        _ => Some("user"),
    }
}

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let documents = Cell::new(0_usize);
        let mut seq = serializer.serialize_seq(None)?;
        let sent: Vec<(&'static str, &Message)> = self
            .0
            .iter()
            .filter_map(|m| Some((side(m.role)?, m)))
            .filter(|(_, m)| has_blocks(m))
            .collect();
        let mut start = 0;
        while start < sent.len() {
            let role = sent[start].0;
            let end = sent[start..]
                .iter()
                .position(|(r, _)| *r != role)
                .map_or(sent.len(), |n| start + n);
            let run: Vec<&Message> = sent[start..end].iter().map(|(_, m)| *m).collect();
            seq.serialize_element(&Turn {
                role,
                messages: &run,
                documents: &documents,
            })?;
            start = end;
        }
        seq.end()
    }
}

/// Whether a message has anything to send.
fn has_blocks(message: &Message) -> bool {
    message.role == Role::Tool
        || !message.tool_calls.is_empty()
        || content_blocks(&message.content).next().is_some()
}

/// One side's turn: the blocks of one or more consecutive messages.
struct Turn<'a> {
    role: &'static str,
    messages: &'a [&'a Message],
    /// Documents named so far in the request, for default names.
    documents: &'a Cell<usize>,
}

impl Serialize for Turn<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Blocks<'a>(&'a Turn<'a>);
        impl Serialize for Blocks<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let documents = self.0.documents;
                let mut seq = serializer.serialize_seq(None)?;
                for message in self.0.messages {
                    if message.role == Role::Tool {
                        seq.serialize_element(&ToolResult { message, documents })?;
                        continue;
                    }
                    for block in content_blocks(&message.content) {
                        seq.serialize_element(&BlockWire { block, documents })?;
                    }
                    for call in &message.tool_calls {
                        seq.serialize_element(&ToolUse(call))?;
                    }
                }
                seq.end()
            }
        }
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("role", self.role)?;
        map.serialize_entry("content", &Blocks(self))?;
        map.end()
    }
}

/// `{"toolUse": {"toolUseId", "name", "input"}}`.
struct ToolUse<'a>(&'a harness_core::ToolCall);

impl Serialize for ToolUse<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        #[allow(clippy::struct_field_names)] // the wire's names
        struct Call<'a> {
            tool_use_id: &'a str,
            name: &'a str,
            input: &'a Map<String, Value>,
        }
        let call = self.0;
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(
            "toolUse",
            &Call {
                tool_use_id: call.id.as_deref().unwrap_or(""),
                name: &call.name,
                input: &call.arguments,
            },
        )?;
        map.end()
    }
}

/// A block of content to send.
enum Piece<'a> {
    Text(&'a str),
    Block(&'a Block),
}

/// The blocks of `content` Bedrock is sent: empty text and reasoning it cannot take left out.
fn content_blocks(content: &Content) -> impl Iterator<Item = Piece<'_>> {
    let (text, blocks) = match content {
        Content::Text(text) => (
            Some(text.as_str()).filter(|t| !t.trim().is_empty()),
            &[][..],
        ),
        Content::Blocks(blocks) => (None, &blocks[..]),
    };
    text.map(Piece::Text)
        .into_iter()
        .chain(blocks.iter().filter_map(|block| match block {
            // Bedrock refuses a blank text block.
            Block::Text(t) if t.text.trim().is_empty() => None,
            // Another vendor's signature or data would be refused; unsigned reasoning is
            // not sent back either (Claude on Bedrock wants it signed).
            Block::Thinking(thinking)
                if !thinking.is_for(THINKING_FORMAT)
                    || (thinking.signature.is_none() && thinking.redacted.is_none()) =>
            {
                None
            }
            // Another vendor's hosted calls: Bedrock has no place for them.
            Block::HostedCall(_) => None,
            block => Some(Piece::Block(block)),
        }))
}

/// One content block as sent.
struct BlockWire<'a> {
    block: Piece<'a>,
    documents: &'a Cell<usize>,
}

impl Serialize for BlockWire<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        match self.block {
            Piece::Text(text) => map.serialize_entry("text", text)?,
            Piece::Block(Block::Text(t)) => map.serialize_entry("text", &t.text)?,
            Piece::Block(Block::Image(image)) => map.serialize_entry("image", &ImageWire(image))?,
            Piece::Block(Block::Document(doc)) => map.serialize_entry(
                "document",
                &DocumentWire {
                    doc,
                    documents: self.documents,
                },
            )?,
            Piece::Block(Block::Thinking(thinking)) => {
                map.serialize_entry("reasoningContent", &Reasoning(thinking))?;
            }
            // Left out by `content_blocks`.
            Piece::Block(Block::HostedCall(_)) => {
                return Err(S::Error::custom("a hosted call cannot be sent to Bedrock"));
            }
        }
        map.end()
    }
}

/// `{"reasoningText": {"text", "signature"}}` or `{"redactedContent": ...}`.
struct Reasoning<'a>(&'a Thinking);

impl Serialize for Reasoning<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Text<'a> {
            text: &'a str,
            signature: &'a str,
        }
        let mut map = serializer.serialize_map(Some(1))?;
        match (&self.0.redacted, &self.0.signature) {
            (Some(data), _) => map.serialize_entry("redactedContent", data)?,
            (None, signature) => map.serialize_entry(
                "reasoningText",
                &Text {
                    text: &self.0.text,
                    signature: signature.as_deref().unwrap_or(""),
                },
            )?,
        }
        map.end()
    }
}

/// `{"format": "png", "source": {"bytes": ...}}`; an `s3://` URL as an S3 location.
struct ImageWire<'a>(&'a Image);

impl Serialize for ImageWire<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        match self.0.source() {
            ImageSource::Data { data, media_type } => {
                let format = image_format(media_type).ok_or_else(|| {
                    S::Error::custom(format!(
                        "Bedrock takes png, jpeg, gif and webp images, not {media_type}"
                    ))
                })?;
                map.serialize_entry("format", format)?;
                map.serialize_entry("source", &Source::Bytes(data))?;
            }
            ImageSource::Url(url) if url.starts_with("s3://") => {
                let format = url
                    .rsplit('.')
                    .next()
                    .and_then(|suffix| image_format(&format!("image/{suffix}")))
                    .ok_or_else(|| {
                        S::Error::custom(format!(
                            "the image {url} has no png, jpeg, gif or webp suffix to name its \
                             format"
                        ))
                    })?;
                map.serialize_entry("format", format)?;
                map.serialize_entry("source", &Source::S3(url))?;
            }
            ImageSource::Url(url) => {
                return Err(S::Error::custom(format!(
                    "Bedrock does not fetch images by URL ({url}): send the image's bytes \
                     (Image::from_bytes) or an s3:// location"
                )));
            }
        }
        map.end()
    }
}

/// An image's format name, from its media type.
fn image_format(media_type: &str) -> Option<&'static str> {
    Some(match media_type.to_ascii_lowercase().as_str() {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpeg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        _ => return None,
    })
}

/// `{"bytes": ...}` (base64, as the JSON protocol carries a blob) or `{"s3Location": {"uri"}}`.
enum Source<'a> {
    Bytes(&'a str),
    S3(&'a str),
}

impl Serialize for Source<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Location<'a> {
            uri: &'a str,
        }
        let mut map = serializer.serialize_map(Some(1))?;
        match self {
            Self::Bytes(data) => map.serialize_entry("bytes", data)?,
            Self::S3(uri) => map.serialize_entry("s3Location", &Location { uri })?,
        }
        map.end()
    }
}

/// `{"format": "pdf", "name": ..., "source": {"bytes": ...}}`.
struct DocumentWire<'a> {
    doc: &'a Document,
    documents: &'a Cell<usize>,
}

impl Serialize for DocumentWire<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let media_type = &self.doc.media_type;
        let format = document_format(media_type).ok_or_else(|| {
            S::Error::custom(format!(
                "Bedrock takes pdf, csv, doc, docx, xls, xlsx, html, txt and md documents, not \
                 {media_type}"
            ))
        })?;
        let n = self.documents.get() + 1;
        self.documents.set(n);
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("format", format)?;
        map.serialize_entry("name", &document_name(self.doc.name.as_deref(), n))?;
        map.serialize_entry("source", &Source::Bytes(&self.doc.data))?;
        map.end()
    }
}

fn document_format(media_type: &str) -> Option<&'static str> {
    let media_type = media_type.to_ascii_lowercase();
    let bare = media_type.split(';').next().unwrap_or("").trim();
    Some(match bare {
        "application/pdf" => "pdf",
        "text/csv" => "csv",
        "application/msword" => "doc",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document" => "docx",
        "application/vnd.ms-excel" => "xls",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" => "xlsx",
        "text/html" => "html",
        "text/plain" => "txt",
        "text/markdown" => "md",
        _ => return None,
    })
}

/// A document's name as Bedrock accepts it (letters, digits, single spaces, hyphens,
/// parentheses and square brackets), the `n`-th document of the request numbered so that two
/// documents never share one.
fn document_name(name: Option<&str>, n: usize) -> String {
    let mut clean = String::new();
    for c in name.unwrap_or("").chars() {
        if c.is_alphanumeric() || matches!(c, '-' | '(' | ')' | '[' | ']') {
            clean.push(c);
        } else if c.is_whitespace() {
            if !clean.ends_with(' ') && !clean.is_empty() {
                clean.push(' ');
            }
        } else {
            clean.push('-');
        }
    }
    let clean = clean.trim();
    if clean.is_empty() {
        format!("Document {n}")
    } else {
        format!("{clean} ({n})")
    }
}

/// A tool's result: `{"toolResult": {"toolUseId", "content": [...]}}`; its text as one text
/// block, its images and documents as theirs.
struct ToolResult<'a> {
    message: &'a Message,
    documents: &'a Cell<usize>,
}

impl Serialize for ToolResult<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Parts<'a>(&'a ToolResult<'a>);
        impl Serialize for Parts<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut seq = serializer.serialize_seq(None)?;
                let mut any = false;
                for block in content_blocks(&self.0.message.content) {
                    // Reasoning has no place in a tool's result.
                    if matches!(block, Piece::Block(Block::Thinking(_))) {
                        continue;
                    }
                    any = true;
                    seq.serialize_element(&BlockWire {
                        block,
                        documents: self.0.documents,
                    })?;
                }
                // Bedrock wants some content: an empty result is said as such.
                if !any {
                    seq.serialize_element(&BlockWire {
                        block: Piece::Text("(no output)"),
                        documents: self.0.documents,
                    })?;
                }
                seq.end()
            }
        }
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Outcome<'a> {
            tool_use_id: &'a str,
            content: Parts<'a>,
        }
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(
            "toolResult",
            &Outcome {
                tool_use_id: self.message.tool_call_id.as_deref().unwrap_or(""),
                content: Parts(self),
            },
        )?;
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_names_are_what_bedrock_accepts_and_never_repeat() {
        assert_eq!(document_name(Some("report.pdf"), 1), "report-pdf (1)");
        assert_eq!(document_name(Some("  a   b\tc "), 2), "a b c (2)");
        assert_eq!(document_name(None, 3), "Document 3");
        assert_eq!(document_name(Some("..."), 4), "--- (4)");
        assert_eq!(document_name(Some("   "), 5), "Document 5");
    }

    #[test]
    fn formats_come_from_media_types() {
        assert_eq!(image_format("image/JPEG"), Some("jpeg"));
        assert_eq!(image_format("image/tiff"), None);
        assert_eq!(document_format("text/plain; charset=utf-8"), Some("txt"));
        assert_eq!(document_format("application/zip"), None);
    }
}
