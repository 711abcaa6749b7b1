//! Writing a request: the settings a request is sent with, and the pieces written
//! straight into a body without a string in between.

use std::borrow::Cow;
use std::fmt;

use harness_core::{
    Block, Content, Document, HostedTool, ImageSource, Message, ModelSettings, PromptCache,
    ReasoningLevel, Role, ToolChoice,
};
use serde_json::{Map, Value};

/// The settings a request is sent with: the request's own over the provider's defaults,
/// setting by setting (as [`ModelSettings::over`] merges them), borrowed from both rather
/// than copied each turn.
#[derive(Debug, Clone)]
pub(crate) struct Settings<'a> {
    pub(crate) temperature: Option<f64>,
    pub(crate) max_tokens: Option<u32>,
    pub(crate) top_p: Option<f64>,
    pub(crate) stop: &'a [String],
    pub(crate) tool_choice: Option<&'a ToolChoice>,
    pub(crate) parallel_tool_calls: Option<bool>,
    pub(crate) reasoning: Option<ReasoningLevel>,
    /// How the request uses the vendor's prompt cache: the narrow side's whole, else the
    /// broad side's.
    pub(crate) prompt_cache: Option<&'a PromptCache>,
    /// Tools the vendor runs itself; only the Responses API sends them.
    pub(crate) hosted_tools: &'a [HostedTool],
    /// The vendor fields of both, the narrow side's winning per key.
    pub(crate) extra: Cow<'a, Map<String, Value>>,
}

impl<'a> Settings<'a> {
    /// OpenAI's prompt-cache fields, `prompt_cache_key` and `prompt_cache_retention`, from
    /// the settings' [`PromptCache`].
    pub(crate) fn openai_cache(&self) -> (Option<&'a str>, Option<&'static str>) {
        let cache = self.prompt_cache;
        (
            cache.and_then(|cache| cache.key.as_deref()),
            cache
                .and_then(|cache| cache.retention)
                .map(harness_core::CacheRetention::as_str),
        )
    }

    pub(crate) fn merge(narrow: &'a ModelSettings, broad: &'a ModelSettings) -> Self {
        Self {
            temperature: narrow.temperature.or(broad.temperature),
            max_tokens: narrow.max_tokens.or(broad.max_tokens),
            top_p: narrow.top_p.or(broad.top_p),
            stop: if narrow.stop.is_empty() {
                &broad.stop
            } else {
                &narrow.stop
            },
            tool_choice: narrow.tool_choice.as_ref().or(broad.tool_choice.as_ref()),
            parallel_tool_calls: narrow.parallel_tool_calls.or(broad.parallel_tool_calls),
            reasoning: narrow.reasoning.or(broad.reasoning),
            prompt_cache: narrow.prompt_cache.as_ref().or(broad.prompt_cache.as_ref()),
            hosted_tools: if narrow.hosted_tools.is_empty() {
                &broad.hosted_tools
            } else {
                &narrow.hosted_tools
            },
            extra: if broad.extra.is_empty() {
                Cow::Borrowed(&narrow.extra)
            } else if narrow.extra.is_empty() {
                Cow::Borrowed(&broad.extra)
            } else {
                let mut extra = broad.extra.clone();
                extra.extend(narrow.extra.iter().map(|(k, v)| (k.clone(), v.clone())));
                Cow::Owned(extra)
            },
        }
    }
}

/// A string of JSON text holding `value` serialised: what OpenAI's tool-call `arguments`
/// are. Written straight into the body, escaped as it goes, without a string in between.
pub(crate) struct JsonText<'a, T: ?Sized>(pub(crate) &'a T);

impl<T: serde::Serialize + ?Sized> serde::Serialize for JsonText<'_, T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<T: serde::Serialize + ?Sized> fmt::Display for JsonText<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Adapter<'a, 'b>(&'a mut fmt::Formatter<'b>);
        impl std::io::Write for Adapter<'_, '_> {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                // serde_json writes whole UTF-8 sequences; anything else is a bug upstream.
                let text = std::str::from_utf8(bytes).map_err(std::io::Error::other)?;
                self.0.write_str(text).map_err(std::io::Error::other)?;
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        serde_json::to_writer(Adapter(f), self.0).map_err(|_| fmt::Error)
    }
}

/// A message's text as one JSON string, written from the content as it is (the text blocks
/// of a block list joined) without a string in between.
pub(crate) struct ContentText<'a>(pub(crate) &'a Content);

impl ContentText<'_> {
    /// Whether the text is empty.
    pub(crate) fn is_empty(&self) -> bool {
        match self.0 {
            Content::Text(text) => text.is_empty(),
            Content::Blocks(blocks) => blocks.iter().filter_map(Block::as_text).all(str::is_empty),
        }
    }
}

impl serde::Serialize for ContentText<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Content::Text(text) => serializer.serialize_str(text),
            Content::Blocks(blocks) => serializer.collect_str(&Joined {
                pieces: blocks.iter().filter_map(Block::as_text),
                separator: "",
            }),
        }
    }
}

/// The system prompt: the text of every system message of a transcript, joined with
/// newlines, written straight into the body as one JSON string.
pub(crate) struct SystemText<'a>(pub(crate) &'a [Message]);

impl<'a> SystemText<'a> {
    /// The system prompt, when the transcript has a system message.
    pub(crate) fn of(messages: &'a [Message]) -> Option<Self> {
        messages
            .iter()
            .any(|m| m.role == Role::System)
            .then_some(Self(messages))
    }
}

impl fmt::Display for SystemText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let system = self.0.iter().filter(|m| m.role == Role::System);
        for (i, message) in system.enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            match &message.content {
                Content::Text(text) => f.write_str(text)?,
                Content::Blocks(blocks) => {
                    for text in blocks.iter().filter_map(Block::as_text) {
                        f.write_str(text)?;
                    }
                }
            }
        }
        Ok(())
    }
}

impl serde::Serialize for SystemText<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// An image as a URL, its data as a `data:` URL written straight into the body (an image's
/// base64 is not copied into a string of its own each turn).
pub(crate) struct DataUrl<'a>(pub(crate) &'a ImageSource);

impl serde::Serialize for DataUrl<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            ImageSource::Url(url) => serializer.serialize_str(url),
            ImageSource::Data { data, media_type } => {
                serializer.collect_str(&format_args!("data:{media_type};base64,{data}"))
            }
        }
    }
}

/// A document as a `data:` URL, written straight into the body.
pub(crate) struct DocumentUrl<'a>(pub(crate) &'a Document);

impl serde::Serialize for DocumentUrl<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Document {
            data, media_type, ..
        } = self.0;
        serializer.collect_str(&format_args!("data:{media_type};base64,{data}"))
    }
}

/// `{}`.
pub(crate) struct EmptyObject;

impl serde::Serialize for EmptyObject {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        serializer.serialize_map(Some(0))?.end()
    }
}

/// A tool's parameter schema as sent: its own when it is an object schema, else
/// `{"type": "object", "properties": {}}`.
pub(crate) enum Parameters<'a> {
    Schema(&'a serde_json::Value),
    Empty,
}

impl<'a> Parameters<'a> {
    pub(crate) fn of(schema: &'a serde_json::Value) -> Self {
        if schema.is_object() {
            Self::Schema(schema)
        } else {
            Self::Empty
        }
    }
}

impl serde::Serialize for Parameters<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        match self {
            Self::Schema(schema) => schema.serialize(serializer),
            Self::Empty => {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("type", "object")?;
                map.serialize_entry("properties", &EmptyObject)?;
                map.end()
            }
        }
    }
}

/// Text written straight into the body as one JSON string: the pieces joined with
/// `separator`, without a string in between (a system prompt made of several messages).
pub(crate) struct Joined<'a, I> {
    pub(crate) pieces: I,
    pub(crate) separator: &'a str,
}

impl<'a, I> serde::Serialize for Joined<'a, I>
where
    I: Iterator<Item = &'a str> + Clone,
{
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'a, I> fmt::Display for Joined<'a, I>
where
    I: Iterator<Item = &'a str> + Clone,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, piece) in self.pieces.clone().enumerate() {
            if i > 0 {
                f.write_str(self.separator)?;
            }
            f.write_str(piece)?;
        }
        Ok(())
    }
}

/// Refuses a request that carries hosted tools ([`ModelSettings::hosted_tools`], the
/// request's or the provider's defaults) for a vendor (`name`) that cannot offer them: a
/// request that silently ran without the tool its caller asked for would be a wrong answer,
/// not a degraded one.
pub(crate) fn refuse_hosted(
    name: &str,
    request: &ModelSettings,
    defaults: &ModelSettings,
) -> harness_core::Result<()> {
    let hosted = if request.hosted_tools.is_empty() {
        &defaults.hosted_tools
    } else {
        &request.hosted_tools
    };
    match hosted.first() {
        None => Ok(()),
        Some(tool) => Err(harness_core::Error::configuration(format!(
            "{name} cannot offer the hosted tool '{}': hosted tools run on the vendor's side, \
             and only the OpenAI Responses API (OpenAiResponses) offers them; remove it from \
             the settings or use that provider",
            tool.kind()
        ))),
    }
}

/// The error a stream that cannot start is: one item.
pub(crate) fn failed_stream(
    error: harness_core::Error,
) -> harness_core::BoxStream<'static, harness_core::Result<harness_core::LlmEvent>> {
    Box::pin(futures_util::stream::once(std::future::ready(Err(error))))
}

/// Whether every object of `schema` lists all its properties as required and allows no
/// others: what OpenAI's strict mode accepts, so a tool may be sent `strict: true`.
pub(crate) fn strict_schema(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Object(properties)) = map.get("properties") {
                let required = map.get("required").and_then(Value::as_array);
                let listed = |key: &String| {
                    required.is_some_and(|r| r.iter().any(|v| v.as_str() == Some(key)))
                };
                if !properties.keys().all(listed)
                    || map.get("additionalProperties") != Some(&Value::Bool(false))
                {
                    return false;
                }
            }
            map.values().all(strict_schema)
        }
        Value::Array(items) => items.iter().all(strict_schema),
        _ => true,
    }
}
