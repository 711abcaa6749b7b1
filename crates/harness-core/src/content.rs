//! Content blocks: what a message's content may hold besides plain text.
//!
//! A message's content is either a plain string or a list of [`Block`]s. Providers render
//! blocks into their own wire shape; the neutral JSON form here is what a transcript is
//! saved as (spec §3.7).

use std::path::Path;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::hosted::HostedCall;

/// One piece of a message's content.
///
/// Serialises as `{"type": "text", "text": ...}`, `{"type": "image", ...}`,
/// `{"type": "document", ...}`, `{"type": "thinking", ...}` or `{"type": "hosted_call", ...}`;
/// optional keys appear only when set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Block {
    /// Plain text.
    Text(Text),
    /// An image, inline or by URL.
    Image(Image),
    /// A document such as a PDF, inline.
    Document(Document),
    /// The model's reasoning, kept apart from its answer.
    Thinking(Thinking),
    /// A call of a tool the vendor ran itself ([`HostedTool`](crate::hosted::HostedTool)), with
    /// its result.
    #[serde(rename = "hosted_call")]
    HostedCall(Box<HostedCall>),
}

impl Block {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(Text::new(text))
    }

    /// The block's text when it is a [`Block::Text`].
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

impl From<Text> for Block {
    fn from(value: Text) -> Self {
        Self::Text(value)
    }
}

impl From<Image> for Block {
    fn from(value: Image) -> Self {
        Self::Image(value)
    }
}

impl From<Document> for Block {
    fn from(value: Document) -> Self {
        Self::Document(value)
    }
}

impl From<Thinking> for Block {
    fn from(value: Thinking) -> Self {
        Self::Thinking(value)
    }
}

impl From<HostedCall> for Block {
    fn from(value: HostedCall) -> Self {
        Self::HostedCall(Box::new(value))
    }
}

/// Plain text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Text {
    /// The text.
    pub text: String,
}

impl Text {
    /// A text block holding `text`.
    pub fn new(text: impl Into<String>) -> Self {
        Self { text: text.into() }
    }
}

/// The model's reasoning.
///
/// `signature` is Anthropic's attestation of the reasoning; it is replayed unmodified with
/// the turn, because Anthropic requires it back after a tool call. Unsigned thinking is left
/// out of what is sent to Anthropic.
///
/// Reasoning the vendor's safety systems encrypted (Anthropic's `redacted_thinking`) has no
/// text: it holds the vendor's opaque `redacted` data, which is replayed unmodified the same
/// way. Built with [`Thinking::new`], [`Thinking::signed`] or [`Thinking::redacted`]; more
/// fields may come, so it is not built field by field.
///
/// A signature or redacted data means something only to the vendor that made it: `provider`
/// names it (`"anthropic"`, `"gemini"`), and a request to another vendor leaves them out, so
/// a transcript can move between vendors (a fallback model, a resumed run). Reasoning with
/// no `provider` is sent wherever it fits. `provider` says where the reasoning came from, not
/// what it is: two reasonings with the same text, signature and redacted data are equal.
///
/// `id` is the vendor's own handle for the reasoning, where it has one: the OpenAI Responses
/// API's reasoning item id (`rs_...`), sent back with the item. There the summary the model
/// shows is the `text`, and the full reasoning, which the service encrypts for a request it
/// does not store, is `redacted`. Like `provider`, `id` says where the reasoning came from and
/// is left out of equality.
#[derive(Debug, Clone, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Thinking {
    /// The reasoning text (empty when the reasoning is redacted).
    pub text: String,
    /// The vendor's signature over it, when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// The vendor's encrypted form of reasoning it did not show, when it redacted it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted: Option<String>,
    /// The wire format of the vendor whose model reasoned (`"anthropic"`, `"gemini"`), when
    /// a provider read it from an answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The vendor's id for the reasoning (an OpenAI Responses reasoning item's `rs_...`), when
    /// it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

impl PartialEq for Thinking {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
            && self.signature == other.signature
            && self.redacted == other.redacted
    }
}

impl Thinking {
    /// Unsigned reasoning.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            signature: None,
            redacted: None,
            provider: None,
            id: None,
        }
    }

    /// Reasoning with the vendor's signature.
    pub fn signed(text: impl Into<String>, signature: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            signature: Some(signature.into()),
            redacted: None,
            provider: None,
            id: None,
        }
    }

    /// Reasoning the vendor redacted: no text, only its opaque `data`, sent back as it came.
    pub fn redacted(data: impl Into<String>) -> Self {
        Self {
            text: String::new(),
            signature: None,
            redacted: Some(data.into()),
            provider: None,
            id: None,
        }
    }

    /// The same reasoning, marked as made by `provider`'s models.
    #[must_use]
    pub fn from_provider(mut self, provider: impl Into<String>) -> Self {
        self.provider = Some(provider.into());
        self
    }

    /// The same reasoning, with the vendor's id for it.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// True when `provider` may be sent this reasoning's signature or redacted data: it
    /// made them, or no one is named.
    pub fn is_for(&self, provider: &str) -> bool {
        self.provider.as_deref().is_none_or(|p| p == provider)
    }
}

/// Where an [`Image`]'s bytes come from: exactly one of inline data or a URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageSource {
    /// Base64-encoded bytes and their media type.
    Data {
        /// The bytes, base64-encoded.
        data: String,
        /// The media type, such as `image/png`.
        media_type: String,
    },
    /// A URL the vendor fetches itself. Gemini cannot send these.
    Url(String),
}

/// An image, inline or by URL.
///
/// The data-xor-url rule of the original is a type here: an `Image` holds an
/// [`ImageSource`], which is one or the other. Reading one from JSON that has both or neither
/// is an error.
///
/// ```
/// use harness_core::Image;
///
/// let by_url = Image::from_url("https://example.com/cat.png");
/// assert_eq!(by_url.data_url(), "https://example.com/cat.png");
///
/// let inline = Image::from_base64("aGk=", "image/png");
/// assert_eq!(inline.data_url(), "data:image/png;base64,aGk=");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "ImageWire", into = "ImageWire")]
pub struct Image {
    source: ImageSource,
}

impl Image {
    /// An image the vendor fetches from `url`.
    pub fn from_url(url: impl Into<String>) -> Self {
        Self {
            source: ImageSource::Url(url.into()),
        }
    }

    /// An inline image from base64 `data` of the given media type.
    pub fn from_base64(data: impl Into<String>, media_type: impl Into<String>) -> Self {
        Self {
            source: ImageSource::Data {
                data: data.into(),
                media_type: media_type.into(),
            },
        }
    }

    /// An inline image from raw bytes of the given media type.
    pub fn from_bytes(bytes: &[u8], media_type: impl Into<String>) -> Self {
        Self::from_base64(encode(bytes), media_type)
    }

    /// Reads and encodes a local file, inferring the media type from its suffix (png, jpg,
    /// jpeg, gif, webp, pdf).
    ///
    /// # Errors
    /// A [`Configuration`](crate::ErrorKind::Configuration) error for an unknown suffix, an
    /// [`ErrorKind::Io`](crate::ErrorKind::Io) error when the file cannot be read.
    pub fn from_path(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let media_type = media_type_for(path)?;
        Ok(Self::from_base64(read_base64(path)?, media_type))
    }

    /// Where the image's bytes come from.
    pub fn source(&self) -> &ImageSource {
        &self.source
    }

    /// The base64 data, for an inline image.
    pub fn data(&self) -> Option<&str> {
        match &self.source {
            ImageSource::Data { data, .. } => Some(data),
            ImageSource::Url(_) => None,
        }
    }

    /// The URL, for an image given by URL.
    pub fn url(&self) -> Option<&str> {
        match &self.source {
            ImageSource::Url(url) => Some(url),
            ImageSource::Data { .. } => None,
        }
    }

    /// The media type, for an inline image.
    pub fn media_type(&self) -> Option<&str> {
        match &self.source {
            ImageSource::Data { media_type, .. } => Some(media_type),
            ImageSource::Url(_) => None,
        }
    }

    /// `data:{media_type};base64,{data}` for an inline image; the URL itself otherwise.
    pub fn data_url(&self) -> String {
        match &self.source {
            ImageSource::Data { data, media_type } => data_url(media_type, data),
            ImageSource::Url(url) => url.clone(),
        }
    }
}

/// The neutral JSON shape of an image, checked on the way in.
#[derive(Serialize, Deserialize)]
struct ImageWire {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    media_type: Option<String>,
}

impl TryFrom<ImageWire> for Image {
    type Error = String;

    fn try_from(wire: ImageWire) -> Result<Self, String> {
        match (wire.data, wire.url) {
            (Some(data), None) => Ok(Self::from_base64(
                data,
                wire.media_type.unwrap_or_else(|| "image/png".to_owned()),
            )),
            (None, Some(url)) => Ok(Self::from_url(url)),
            _ => Err("Image needs either data (base64) or url, not both or neither".to_owned()),
        }
    }
}

impl From<Image> for ImageWire {
    fn from(image: Image) -> Self {
        match image.source {
            ImageSource::Data { data, media_type } => Self {
                url: None,
                data: Some(data),
                media_type: Some(media_type),
            },
            ImageSource::Url(url) => Self {
                url: Some(url),
                data: None,
                media_type: None,
            },
        }
    }
}

/// A document (a PDF, usually), sent inline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Document {
    /// The bytes, base64-encoded.
    pub data: String,
    /// The media type; `application/pdf` unless said otherwise.
    #[serde(default = "default_document_media_type")]
    pub media_type: String,
    /// The file name, when known; some vendors show it to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

fn default_document_media_type() -> String {
    "application/pdf".to_owned()
}

impl Document {
    /// A PDF from base64 `data`.
    pub fn pdf(data: impl Into<String>) -> Self {
        Self {
            data: data.into(),
            media_type: default_document_media_type(),
            name: None,
        }
    }

    /// Sets the file name.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Reads and encodes a local file, inferring the media type from its suffix and taking
    /// its file name as the document's name.
    ///
    /// # Errors
    /// A [`Configuration`](crate::ErrorKind::Configuration) error for an unknown suffix, an
    /// [`ErrorKind::Io`](crate::ErrorKind::Io) error when the file cannot be read.
    pub fn from_path(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let media_type = media_type_for(path)?;
        Ok(Self {
            data: read_base64(path)?,
            media_type: media_type.to_owned(),
            name: path.file_name().map(|n| n.to_string_lossy().into_owned()),
        })
    }

    /// `data:{media_type};base64,{data}`.
    pub fn data_url(&self) -> String {
        data_url(&self.media_type, &self.data)
    }
}

/// The media type a file's suffix stands for, compared without regard to case.
///
/// # Errors
/// A [`Configuration`](crate::ErrorKind::Configuration) error naming the file when the suffix is
/// not one of png, jpg, jpeg, gif, webp or pdf.
pub fn media_type_for(path: &Path) -> Result<&'static str> {
    let suffix = path
        .extension()
        .map(|s| s.to_string_lossy().to_ascii_lowercase());
    match suffix.as_deref() {
        Some("png") => Ok("image/png"),
        Some("jpg" | "jpeg") => Ok("image/jpeg"),
        Some("gif") => Ok("image/gif"),
        Some("webp") => Ok("image/webp"),
        Some("pdf") => Ok("application/pdf"),
        _ => Err(Error::configuration(format!(
            "cannot infer a media type for {}; build the block from bytes with an explicit media \
             type instead (Image::from_bytes or Document {{ media_type, .. }})",
            path.file_name().map_or_else(
                || path.display().to_string(),
                |n| n.to_string_lossy().into_owned()
            )
        ))),
    }
}

fn encode(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn read_base64(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|source| Error::io(path, source))?;
    Ok(encode(&bytes))
}

fn data_url(media_type: &str, data: &str) -> String {
    format!("data:{media_type};base64,{data}")
}

/// Reads content blocks from neutral JSON, as a saved transcript holds them.
///
/// `null` and `""` give no blocks; a string gives one text block; one block object gives
/// that block; a list gives its blocks, each a string or a block object.
///
/// # Errors
/// A [`Configuration`](crate::ErrorKind::Configuration) error for an unknown `type`, or a block
/// whose fields do not fit.
pub fn parse_blocks(content: &Value) -> Result<Vec<Block>> {
    match content {
        Value::Null => Ok(Vec::new()),
        Value::String(s) if s.is_empty() => Ok(Vec::new()),
        Value::String(s) => Ok(vec![Block::text(s.clone())]),
        Value::Object(_) => Ok(vec![parse_block(content)?]),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => Ok(Block::text(s.clone())),
                other => parse_block(other),
            })
            .collect(),
        other => Err(Error::configuration(format!(
            "message content must be a string or a list of blocks, got {other}"
        ))),
    }
}

fn parse_block(value: &Value) -> Result<Block> {
    let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
    if !matches!(
        kind,
        "text" | "image" | "document" | "thinking" | "hosted_call"
    ) {
        return Err(Error::configuration(format!(
            "unknown content block type: '{kind}'; expected text, image, document, thinking or \
             hosted_call"
        )));
    }
    Block::deserialize(value)
        .map_err(|e| Error::configuration(format!("invalid {kind} block: {e}")))
}

/// Joins runs of adjacent text blocks, and of adjacent thinking blocks with equal signatures,
/// provider and id, into one block each.
pub fn merge_blocks(blocks: impl IntoIterator<Item = Block>) -> Vec<Block> {
    let mut merged: Vec<Block> = Vec::new();
    for block in blocks {
        match (merged.last_mut(), block) {
            (Some(Block::Text(last)), Block::Text(next)) => last.text.push_str(&next.text),
            // Redacted reasoning is opaque: each block stays whole and apart.
            (Some(Block::Thinking(last)), Block::Thinking(next))
                if last.signature == next.signature
                    && last.provider == next.provider
                    && last.id == next.id
                    && last.redacted.is_none()
                    && next.redacted.is_none() =>
            {
                last.text.push_str(&next.text);
            }
            (_, block) => merged.push(block),
        }
    }
    merged
}

/// The concatenated text of the text blocks, leaving out thinking and media.
pub fn text_of(blocks: &[Block]) -> String {
    blocks.iter().filter_map(Block::as_text).collect()
}

/// The concatenated text of the thinking blocks.
pub fn thinking_of(blocks: &[Block]) -> String {
    blocks
        .iter()
        .filter_map(|b| match b {
            Block::Thinking(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blocks_serialise_to_the_neutral_shape_with_optional_keys_only_when_set() {
        let blocks = vec![
            Block::text("hi"),
            Image::from_url("https://x/y.png").into(),
            Image::from_base64("aGk=", "image/gif").into(),
            Document::pdf("JVBE").into(),
            Document::pdf("JVBE").with_name("a.pdf").into(),
            Thinking::new("hmm").into(),
            Thinking::signed("hmm", "sig").into(),
        ];
        assert_eq!(
            serde_json::to_value(&blocks).ok(),
            Some(json!([
                {"type": "text", "text": "hi"},
                {"type": "image", "url": "https://x/y.png"},
                {"type": "image", "data": "aGk=", "media_type": "image/gif"},
                {"type": "document", "data": "JVBE", "media_type": "application/pdf"},
                {"type": "document", "data": "JVBE", "media_type": "application/pdf", "name": "a.pdf"},
                {"type": "thinking", "text": "hmm"},
                {"type": "thinking", "text": "hmm", "signature": "sig"},
            ]))
        );
    }

    #[test]
    fn an_image_with_both_or_neither_source_is_refused() {
        for bad in [
            json!({"type": "image", "data": "aGk=", "url": "https://x"}),
            json!({"type": "image"}),
        ] {
            let err = parse_blocks(&bad).err().map(|e| e.to_string());
            assert_eq!(
                err.as_deref(),
                Some(
                    "invalid image block: Image needs either data (base64) or url, not both or neither"
                )
            );
        }
    }

    #[test]
    fn parse_follows_the_spec_rules() {
        assert_eq!(parse_blocks(&Value::Null).ok(), Some(vec![]));
        assert_eq!(parse_blocks(&json!("")).ok(), Some(vec![]));
        assert_eq!(parse_blocks(&json!("a")).ok(), Some(vec![Block::text("a")]));
        assert_eq!(
            parse_blocks(&json!({"type": "text", "text": "a"})).ok(),
            Some(vec![Block::text("a")])
        );
        assert_eq!(
            parse_blocks(&json!(["a", {"type": "thinking", "text": "t"}])).ok(),
            Some(vec![Block::text("a"), Thinking::new("t").into()])
        );
        let err = parse_blocks(&json!([{"type": "video"}])).err();
        assert_eq!(
            err.map(|e| e.to_string()).as_deref(),
            Some(
                "unknown content block type: 'video'; expected text, image, document, thinking \
                 or hosted_call"
            )
        );
    }

    #[test]
    fn merge_joins_adjacent_text_and_equally_signed_thinking() {
        let merged = merge_blocks(vec![
            Block::text("a"),
            Block::text("b"),
            Thinking::signed("x", "s").into(),
            Thinking::signed("y", "s").into(),
            Thinking::signed("z", "t").into(),
            Block::text("c"),
        ]);
        assert_eq!(
            merged,
            vec![
                Block::text("ab"),
                Thinking::signed("xy", "s").into(),
                Thinking::signed("z", "t").into(),
                Block::text("c"),
            ]
        );
        assert_eq!(text_of(&merged), "abc");
        assert_eq!(thinking_of(&merged), "xyz");
    }

    #[test]
    fn redacted_thinking_is_never_merged_and_round_trips_its_data() {
        let merged = merge_blocks(vec![
            Thinking::new("x").into(),
            Thinking::redacted("AAA").into(),
            Thinking::redacted("BBB").into(),
            Thinking::new("y").into(),
        ]);
        assert_eq!(
            merged,
            vec![
                Thinking::new("x").into(),
                Thinking::redacted("AAA").into(),
                Thinking::redacted("BBB").into(),
                Thinking::new("y").into(),
            ]
        );
        assert_eq!(thinking_of(&merged), "xy");
        // Where it came from is not what it is.
        let made = Thinking::signed("x", "s").from_provider("anthropic");
        assert_eq!(made, Thinking::signed("x", "s"));
        assert_ne!(made, Thinking::signed("x", "t").from_provider("anthropic"));
        assert_ne!(Thinking::redacted("AAA"), Thinking::redacted("BBB"));
        let block = Block::from(Thinking::redacted("AAA"));
        let json = serde_json::to_value(&block).unwrap_or_default();
        assert_eq!(
            json,
            serde_json::json!({"type": "thinking", "text": "", "redacted": "AAA"})
        );
        let back: Block = serde_json::from_value(json).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, block);
    }

    #[test]
    fn reasoning_ids_round_trip_keep_items_apart_and_stay_out_of_equality() {
        let first = Thinking::new("a")
            .from_provider("openai-responses")
            .with_id("rs_1");
        let second = Thinking::new("b")
            .from_provider("openai-responses")
            .with_id("rs_2");
        let merged = merge_blocks(vec![first.clone().into(), second.clone().into()]);
        assert_eq!(merged.len(), 2, "two reasoning items stay two blocks");
        assert_eq!(first, Thinking::new("a"));
        let json = serde_json::to_value(Block::from(first.clone())).unwrap_or_default();
        assert_eq!(
            json,
            json!({"type": "thinking", "text": "a", "provider": "openai-responses", "id": "rs_1"})
        );
        let back = parse_blocks(&json).unwrap_or_default();
        assert!(matches!(&back[..], [Block::Thinking(t)] if t.id.as_deref() == Some("rs_1")));
    }

    #[test]
    fn hosted_calls_serialise_as_hosted_call_blocks() {
        let call = HostedCall::new("web_search_call", "ws_1");
        let json = serde_json::to_value(Block::from(call.clone())).unwrap_or_default();
        assert_eq!(
            json,
            json!({"type": "hosted_call", "id": "ws_1", "kind": "web_search_call", "raw": null})
        );
        assert_eq!(parse_blocks(&json).ok(), Some(vec![Block::from(call)]));
        assert_eq!(text_of(&parse_blocks(&json).unwrap_or_default()), "");
    }

    #[test]
    fn media_types_come_from_the_suffix_case_insensitively() {
        for (name, expected) in [
            ("a.png", "image/png"),
            ("a.JPG", "image/jpeg"),
            ("a.jpeg", "image/jpeg"),
            ("a.gif", "image/gif"),
            ("a.webp", "image/webp"),
            ("a.Pdf", "application/pdf"),
        ] {
            assert_eq!(media_type_for(Path::new(name)).ok(), Some(expected));
        }
        let err = media_type_for(Path::new("dir/notes.txt")).err();
        assert!(
            err.map(|e| e.to_string())
                .is_some_and(|m| m.starts_with("cannot infer a media type for notes.txt;"))
        );
    }

    #[test]
    fn from_path_encodes_the_file_and_names_the_document() {
        let dir = std::env::temp_dir().join(format!("harness-core-content-{}", std::process::id()));
        std::fs::create_dir_all(&dir).ok();
        let png = dir.join("dot.PNG");
        let pdf = dir.join("report.pdf");
        std::fs::write(&png, b"hi").ok();
        std::fs::write(&pdf, b"%PDF").ok();

        let image = Image::from_path(&png).ok();
        assert_eq!(
            image.as_ref().map(Image::data_url).as_deref(),
            Some("data:image/png;base64,aGk=")
        );
        let doc = Document::from_path(&pdf).ok();
        assert_eq!(
            doc.as_ref().and_then(|d| d.name.as_deref()),
            Some("report.pdf")
        );
        assert_eq!(doc.map(|d| d.data).as_deref(), Some("JVBERg=="));

        let missing = Image::from_path(dir.join("missing.png")).err();
        assert!(missing.is_some_and(|e| e.kind() == crate::ErrorKind::Io));
        std::fs::remove_dir_all(&dir).ok();
    }
}
