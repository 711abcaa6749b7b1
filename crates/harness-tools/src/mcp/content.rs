//! A tool call's result, typed ([`McpCallResult`]), and the text a model reads of it.

use harness_core::{Block, Image, ImageSource};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::Value;

/// One item of a tool call's result.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum McpContent {
    /// Text.
    Text(String),
    /// An inline image (base64 data and its media type).
    Image(Image),
    /// Inline audio.
    Audio {
        /// The bytes, base64-encoded.
        data: String,
        /// Its MIME type, such as `audio/wav`.
        mime_type: String,
    },
    /// A resource embedded in the result: text, or bytes (`blob`, base64).
    Resource {
        /// The resource's URI.
        uri: String,
        /// Its MIME type, when the server gave one.
        mime_type: Option<String>,
        /// Its text, for a text resource.
        text: Option<String>,
        /// Its bytes, base64-encoded, for a binary resource.
        blob: Option<String>,
    },
    /// A link to a resource the server can read (`resource_link`).
    ResourceLink {
        /// The resource's URI.
        uri: String,
        /// Its name.
        name: String,
        /// Its MIME type, when the server gave one.
        mime_type: Option<String>,
    },
    /// An item of a type this client does not know, as the server sent it.
    Other(Value),
}

/// Everything a tool call returned: its content items in order, its `structuredContent`,
/// and whether the server marked it failed (`isError`). From
/// [`McpServer::call`](super::McpServer::call).
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct McpCallResult {
    /// The content items, in the server's order.
    pub content: Vec<McpContent>,
    /// The `structuredContent` object, when the server sent one.
    pub structured_content: Option<Value>,
    /// True when the server reported the call failed (`isError: true`).
    pub is_error: bool,
}

impl McpCallResult {
    /// The text a model reads, one part a line: text items as they are; an image, audio or
    /// binary resource as a line naming its kind, MIME type and size (`[image image/png,
    /// 1234 bytes]`); a text resource under a line with its URI; `structuredContent` as
    /// compact JSON unless a text item already carries the same JSON.
    pub fn text(&self) -> String {
        self.parts().join("\n")
    }

    /// The images, in order: for handing them to a model that reads images.
    pub fn images(&self) -> Vec<&Image> {
        self.content
            .iter()
            .filter_map(|item| match item {
                McpContent::Image(image) => Some(image),
                _ => None,
            })
            .collect()
    }

    /// The result as content blocks, in order: images as image blocks, everything else as
    /// the text [`text`](Self::text) gives for it.
    pub fn blocks(&self) -> Vec<Block> {
        let mut blocks: Vec<Block> = self
            .content
            .iter()
            .map(|item| match item {
                McpContent::Image(image) => Block::Image(image.clone()),
                other => Block::text(render(other)),
            })
            .collect();
        if let Some(json) = self.structured_text() {
            blocks.push(Block::text(json));
        }
        blocks
    }

    fn parts(&self) -> Vec<String> {
        let mut parts: Vec<String> = self.content.iter().map(render).collect();
        parts.extend(self.structured_text());
        parts
    }

    /// The structured content as compact JSON, unless a text item already says it. Servers
    /// usually send both: the text is the same JSON (often pretty-printed), or the text is
    /// the whole result and the structured content wraps it in one field
    /// (`{"result": "42"}` from the Python SDK, `{"content": ...}` from server-filesystem).
    fn structured_text(&self) -> Option<String> {
        let structured = self.structured_content.as_ref()?;
        let in_a_text_item = |value: &Value| {
            self.content.iter().any(|item| match (item, value) {
                (McpContent::Text(text), Value::String(string)) => text == string,
                (McpContent::Text(text), value) => {
                    serde_json::from_str::<Value>(text).is_ok_and(|parsed| &parsed == value)
                }
                _ => false,
            })
        };
        let wrapped = structured
            .as_object()
            .is_some_and(|fields| fields.len() == 1 && fields.values().all(in_a_text_item));
        (!in_a_text_item(structured) && !wrapped).then(|| structured.to_string())
    }

    /// From rmcp's typed result.
    pub(crate) fn from_rmcp(result: CallToolResult) -> Self {
        Self {
            content: result.content.into_iter().map(from_block).collect(),
            structured_content: result.structured_content,
            is_error: result.is_error == Some(true),
        }
    }

    /// From a result rmcp could not type (an item of an unknown kind, say): each item is
    /// read on its own, so one odd item does not lose the others.
    pub(crate) fn from_json(result: &Value) -> Self {
        let content = result
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(content_item)
            .collect();
        Self {
            content,
            structured_content: result.get("structuredContent").cloned(),
            is_error: result.get("isError").and_then(Value::as_bool) == Some(true),
        }
    }
}

/// One content item read from its JSON; one of a kind this client does not know is kept
/// as [`McpContent::Other`].
pub(crate) fn content_item(item: &Value) -> McpContent {
    serde_json::from_value::<ContentBlock>(item.clone())
        .map_or_else(|_| McpContent::Other(item.clone()), from_block)
}

fn from_block(block: ContentBlock) -> McpContent {
    match block {
        ContentBlock::Text(text) => McpContent::Text(text.text),
        ContentBlock::Image(image) => {
            McpContent::Image(Image::from_base64(image.data, image.mime_type))
        }
        ContentBlock::Audio(audio) => McpContent::Audio {
            data: audio.data,
            mime_type: audio.mime_type,
        },
        ContentBlock::Resource(embedded) => match embedded.resource {
            ResourceContents::TextResourceContents {
                uri,
                mime_type,
                text,
                ..
            } => McpContent::Resource {
                uri,
                mime_type,
                text: Some(text),
                blob: None,
            },
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => McpContent::Resource {
                uri,
                mime_type,
                text: None,
                blob: Some(blob),
            },
            other => McpContent::Other(serde_json::to_value(other).unwrap_or(Value::Null)),
        },
        ContentBlock::ResourceLink(link) => McpContent::ResourceLink {
            uri: link.uri,
            name: link.name,
            mime_type: link.mime_type,
        },
        other => McpContent::Other(serde_json::to_value(other).unwrap_or(Value::Null)),
    }
}

/// The line (or lines) a model reads for one item.
fn render(item: &McpContent) -> String {
    match item {
        McpContent::Text(text) => text.clone(),
        McpContent::Image(image) => match image.source() {
            ImageSource::Data { data, media_type } => {
                format!("[image {media_type}, {} bytes]", base64_len(data))
            }
            ImageSource::Url(url) => format!("[image {url}]"),
        },
        McpContent::Audio { data, mime_type } => {
            format!("[audio {mime_type}, {} bytes]", base64_len(data))
        }
        McpContent::Resource {
            uri,
            mime_type,
            text,
            blob,
        } => {
            let mime = mime_type.as_deref();
            match (text, blob) {
                (Some(text), _) => match mime {
                    Some(mime) => format!("[resource {uri} {mime}]\n{text}"),
                    None => format!("[resource {uri}]\n{text}"),
                },
                (None, Some(blob)) => format!(
                    "[resource {uri} {}, {} bytes]",
                    mime.unwrap_or("application/octet-stream"),
                    base64_len(blob)
                ),
                (None, None) => format!("[resource {uri}]"),
            }
        }
        McpContent::ResourceLink {
            uri,
            name,
            mime_type,
        } => match mime_type {
            Some(mime) => format!("[resource link {name} {uri} {mime}]"),
            None => format!("[resource link {name} {uri}]"),
        },
        McpContent::Other(value) => format!(
            "[{} content]",
            value
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("unknown")
        ),
    }
}

/// How many bytes base64 `data` decodes to, without decoding it.
fn base64_len(data: &str) -> usize {
    let digits = data.bytes().filter(|b| !b.is_ascii_whitespace()).count();
    let padding = data
        .trim_end()
        .bytes()
        .rev()
        .take_while(|&b| b == b'=')
        .count();
    (digits * 3 / 4).saturating_sub(padding)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn base64_sizes() {
        assert_eq!(base64_len(""), 0);
        assert_eq!(base64_len("aGk="), 2);
        assert_eq!(base64_len("aGk"), 2);
        assert_eq!(base64_len("aGVsbG8="), 5);
        assert_eq!(base64_len("aGVs\nbG8h"), 6);
    }

    #[test]
    fn every_kind_of_item_reaches_the_text() {
        let result = McpCallResult::from_json(&json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
                {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"},
                {"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "inside"}},
                {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "aGVsbG8h"}},
                {"type": "resource_link", "uri": "file:///c.md", "name": "c"},
                {"type": "hologram", "data": "?"},
            ],
            "structuredContent": {"n": 1},
        }));
        assert_eq!(
            result.text(),
            "hello\n[image image/png, 5 bytes]\n[audio audio/wav, 2 bytes]\n\
             [resource file:///a.txt text/plain]\ninside\n\
             [resource file:///b.bin application/octet-stream, 6 bytes]\n\
             [resource link c file:///c.md]\n[hologram content]\n{\"n\":1}"
        );
        assert_eq!(result.images().len(), 1);
        let blocks = result.blocks();
        assert!(matches!(blocks[1], Block::Image(_)));
        assert_eq!(blocks.len(), 8);
    }

    #[test]
    fn structured_content_already_in_a_text_item_is_not_repeated() {
        let result = McpCallResult::from_json(&json!({
            "content": [{"type": "text", "text": "{\n  \"n\": 1\n}"}],
            "structuredContent": {"n": 1},
        }));
        assert_eq!(result.text(), "{\n  \"n\": 1\n}");
        let only_structured = McpCallResult::from_json(&json!({"structuredContent": {"n": 1}}));
        assert_eq!(only_structured.text(), "{\"n\":1}");
        // One field wrapping the text: the Python SDK's `{"result": ...}`.
        let wrapped = McpCallResult::from_json(&json!({
            "content": [{"type": "text", "text": "42"}],
            "structuredContent": {"result": "42"},
        }));
        assert_eq!(wrapped.text(), "42");
        let wrapped_number = McpCallResult::from_json(&json!({
            "content": [{"type": "text", "text": "42"}],
            "structuredContent": {"result": 42},
        }));
        assert_eq!(wrapped_number.text(), "42");
        // Two fields are more than the text says.
        let more = McpCallResult::from_json(&json!({
            "content": [{"type": "text", "text": "42"}],
            "structuredContent": {"result": 42, "unit": "m"},
        }));
        assert_eq!(more.text(), "42\n{\"result\":42,\"unit\":\"m\"}");
    }
}
