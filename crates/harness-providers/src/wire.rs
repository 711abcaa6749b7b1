//! Small pieces of the wire formats the vendors share, read and written.

use std::borrow::Cow;
use std::fmt;

use harness_core::{
    Block, Content, Document, FinishReason, ImageSource, Message, ModelSettings, ReasoningLevel,
    Role, ToolCall, ToolChoice,
};
use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// A tool call whose arguments arrived as JSON text (OpenAI's string, or a stream's
/// fragments joined). Every vendor reads arguments by one rule, here and in
/// [`call_from_value`]: empty, whitespace-only or `null` means no arguments (`{}`), which a
/// tool without required parameters accepts; one JSON object is the arguments; anything else
/// is kept in `raw_arguments` and never run. A turn cut at the output limit marks a call with
/// no arguments yet as cut off, so it is not run on arguments the model never sent.
pub(crate) fn call_from_text(name: &str, text: &str, finish: Option<FinishReason>) -> ToolCall {
    // JSON's whitespace is ASCII.
    let trimmed = text.trim_ascii();
    if trimmed.is_empty() && finish == Some(FinishReason::Length) {
        let mut call = ToolCall::new(name, Value::Object(Map::new()));
        call.raw_arguments = Some(String::new());
        return call;
    }
    if trimmed.is_empty() || trimmed == "null" {
        return ToolCall::new(name, Value::Object(Map::new()));
    }
    ToolCall::parse(name, text)
}

/// A tool call whose arguments arrived as a JSON value (`None` when absent): Anthropic's
/// `input`, Gemini's `args`, the object some OpenAI-compatible servers send in place of text.
/// Absent or `null` is no arguments; a string is read as JSON text, by [`call_from_text`]'s
/// rule; an object is the arguments; anything else is kept as sent, never run.
pub(crate) fn call_from_value(name: &str, value: Option<Value>) -> ToolCall {
    match value {
        None | Some(Value::Null) => ToolCall::new(name, Value::Object(Map::new())),
        Some(Value::String(text)) => call_from_text(name, &text, None),
        Some(other) => ToolCall::new(name, other),
    }
}

/// A JSON list read without a heap allocation for the common case of one element: stream
/// chunks nearly always carry exactly one choice, one part, one tool-call fragment.
#[derive(Debug)]
pub(crate) struct Few<T> {
    first: Option<T>,
    rest: Vec<T>,
}

impl<T> Default for Few<T> {
    fn default() -> Self {
        Self {
            first: None,
            rest: Vec::new(),
        }
    }
}

impl<T> Few<T> {
    pub(crate) fn first(&self) -> Option<&T> {
        self.first.as_ref()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.first.iter().chain(self.rest.iter())
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Few<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut few = Few::default();
        FewInto(&mut few).deserialize(deserializer)?;
        Ok(few)
    }
}

/// Reads a list (or `null`, as no elements) into the empty [`Few`] given, and says whether
/// it was a list. In place: a `Few` holds its first element inline, and returned by value
/// it would be copied at each of serde's layers, for every chunk of a stream.
pub(crate) struct FewInto<'f, T>(pub(crate) &'f mut Few<T>);

impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for FewInto<'_, T> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for FewInto<'_, T> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list or null")
    }

    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_none<E>(self) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_seq(self)
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<bool, S::Error> {
        let few = self.0;
        few.first = seq.next_element()?;
        if few.first.is_some() {
            while let Some(next) = seq.next_element()? {
                few.rest.push(next);
            }
        }
        Ok(true)
    }
}

/// A string borrowed from the chunk when it has no escapes, owned when it does.
///
/// serde borrows a `Cow<str>` field only when the field is that type itself; inside an
/// `Option` it would always allocate. This newtype borrows wherever it stands.
#[derive(Debug)]
pub(crate) struct Str<'a>(pub(crate) Cow<'a, str>);

impl std::ops::Deref for Str<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StrVisitor;

        impl<'de> Visitor<'de> for StrVisitor {
            type Value = Str<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Borrowed(v)))
            }

            fn visit_str<E>(self, v: &str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }

            fn visit_string<E>(self, v: String) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }

        deserializer.deserialize_str(StrVisitor)
    }
}

/// An optional string field of a chunk.
pub(crate) type Text<'a> = Option<Str<'a>>;

/// The transcript with an id on every tool call and every tool result, for a vendor that
/// pairs them by id (OpenAI's and Anthropic's formats refuse an empty one). Gemini's models
/// may give none: a call without one gets `call_{turn}_{k}` (its message's index and its
/// place in the turn, the same on every request, so a prompt cache still matches), and a
/// result without one the id of the call it answers, the k-th result after the turn
/// answering its k-th call, as the loop records them. Borrowed as it is when nothing is
/// missing, the usual case.
pub(crate) fn with_call_ids(messages: &[Message]) -> Cow<'_, [Message]> {
    let complete = messages.iter().all(|m| {
        m.tool_calls.iter().all(|c| c.id.is_some())
            && (m.role != Role::Tool || m.tool_call_id.is_some())
    });
    if complete {
        return Cow::Borrowed(messages);
    }
    let mut messages = messages.to_vec();
    // The index of the last turn that asked for calls, and how many results followed it.
    let mut turn: Option<(usize, usize)> = None;
    for i in 0..messages.len() {
        if !messages[i].tool_calls.is_empty() {
            for (k, call) in messages[i].tool_calls.iter_mut().enumerate() {
                call.id.get_or_insert_with(|| format!("call_{i}_{k}"));
            }
            turn = Some((i, 0));
        } else if messages[i].role == Role::Tool
            && let Some((at, answered)) = turn.as_mut()
        {
            let call = messages[*at].tool_calls.get(*answered);
            let id = call.and_then(|c| c.id.clone());
            *answered += 1;
            if messages[i].tool_call_id.is_none() {
                messages[i].tool_call_id = id;
            }
        }
    }
    Cow::Owned(messages)
}

/// Keeps the first value a stream reports (a response's id or model, sent on every chunk),
/// copying it once. An empty one says nothing: Azure's first chunk, its prompt filter
/// results, has `"id": ""` and `"model": ""`, and the real ones come after.
pub(crate) fn keep_first(slot: &mut Option<String>, seen: Option<&Str<'_>>) {
    if let (None, Some(value)) = (&*slot, seen.filter(|value| !value.is_empty())) {
        *slot = Some(value.to_string());
    }
}

/// Appends a piece, allocating only when the target must grow.
pub(crate) fn push(target: &mut String, piece: Option<&Str<'_>>) -> bool {
    match piece {
        Some(text) if !text.is_empty() => {
            target.push_str(text);
            true
        }
        _ => false,
    }
}

/// A token count as a vendor sends it, read without ever failing or overflowing: any JSON
/// number (a huge one saturates at `u64::MAX`, a negative one is 0), or 0 for anything else.
/// A vendor's odd usage figure must not cost the answer it came with.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Count(pub(crate) u64);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct CountVisitor;

        impl<'de> Visitor<'de> for CountVisitor {
            type Value = Count;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a token count")
            }

            fn visit_u64<E>(self, v: u64) -> Result<Count, E> {
                Ok(Count(v))
            }

            // Negative counts are none.
            fn visit_i64<E>(self, v: i64) -> Result<Count, E> {
                Ok(Count(u64::try_from(v).unwrap_or(0)))
            }

            // Floats (and integers past u64, which serde_json reads as floats) saturate, as
            // a float-to-int cast does.
            fn visit_f64<E>(self, v: f64) -> Result<Count, E> {
                Ok(Count(if v.is_finite() && v > 0.0 {
                    saturating_u64(v)
                } else {
                    0
                }))
            }

            // Anything else counts 0, read whole so that the rest of the object reads on.
            fn visit_bool<E>(self, _: bool) -> Result<Count, E> {
                Ok(Count(0))
            }

            fn visit_str<E>(self, _: &str) -> Result<Count, E> {
                Ok(Count(0))
            }

            fn visit_unit<E>(self) -> Result<Count, E> {
                Ok(Count(0))
            }

            fn visit_none<E>(self) -> Result<Count, E> {
                Ok(Count(0))
            }

            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Count, D::Error> {
                Count::deserialize(d)
            }

            fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Count, S::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Count(0))
            }

            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut map: M,
            ) -> Result<Count, M::Error> {
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Count(0))
            }
        }

        // Read straight from the number, not through a `serde_json::Value`: a usage object
        // holds half a dozen counts, read on every answer.
        deserializer.deserialize_any(CountVisitor)
    }
}

#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // saturating by definition
fn saturating_u64(f: f64) -> u64 {
    f as u64
}

/// A count field that is `Some` whenever the key is present, even as `null` (which counts
/// 0): `#[serde(default, deserialize_with = "present")]`. A plain `Option<Count>` would read
/// `null` as absent.
pub(crate) fn present<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Count>, D::Error> {
    Count::deserialize(deserializer).map(Some)
}

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
    /// The vendor fields of both, the narrow side's winning per key.
    pub(crate) extra: Cow<'a, Map<String, Value>>,
}

impl<'a> Settings<'a> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_saturate_and_never_fail() {
        #[derive(Deserialize)]
        struct Usage {
            a: Count,
            b: Count,
            c: Count,
        }
        let count = |text: &str| serde_json::from_str::<Count>(text).unwrap().0;
        assert_eq!(count("7"), 7);
        assert_eq!(count(&u64::MAX.to_string()), u64::MAX);
        assert_eq!(count("-3"), 0);
        assert_eq!(count("-1"), 0);
        assert_eq!(count("1e30"), u64::MAX);
        assert_eq!(count("-1e30"), 0);
        assert_eq!(count("2.5"), 2);
        assert_eq!(count(r#""12""#), 0);
        assert_eq!(count("null"), 0);
        assert_eq!(count("true"), 0);
        assert_eq!(count("184467440737095516160"), u64::MAX);
        // Whatever a count is instead of a number is read whole; the object reads on.
        let usage: Usage =
            serde_json::from_str(r#"{"a": {"x": [1, {"y": 2}]}, "b": [3, [4]], "c": 5}"#).unwrap();
        assert_eq!((usage.a.0, usage.b.0, usage.c.0), (0, 0, 5));
    }
}

/// A message's `content` as Chat Completions servers send it: a string (borrowed from the
/// chunk when it can be), or a list of parts (Mistral's reasoning models send
/// `[{"type": "thinking", "thinking": [..]}, {"type": "text", "text": ".."}]`), read into
/// its text and its thinking.
#[derive(Debug, Default)]
pub(crate) struct TextOrParts<'a> {
    /// The text.
    pub(crate) text: Option<Str<'a>>,
    /// The thinking, when parts carried some.
    pub(crate) thinking: Option<String>,
}

impl TextOrParts<'_> {
    /// Reads the parts of a `content` list.
    pub(crate) fn from_parts(parts: &[serde_json::Value]) -> Self {
        let (mut text, mut thinking) = (String::new(), String::new());
        for part in parts {
            match part.get("type").and_then(serde_json::Value::as_str) {
                Some("text") => text.push_str(
                    part.get("text")
                        .and_then(serde_json::Value::as_str)
                        .unwrap_or(""),
                ),
                Some("thinking") => match part.get("thinking") {
                    Some(serde_json::Value::String(s)) => thinking.push_str(s),
                    Some(serde_json::Value::Array(items)) => {
                        if let Some(text) = Self::from_parts(items).text {
                            thinking.push_str(&text);
                        }
                    }
                    _ => {}
                },
                _ => {}
            }
        }
        Self {
            text: (!text.is_empty()).then_some(Str(Cow::Owned(text))),
            thinking: (!thinking.is_empty()).then_some(thinking),
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for TextOrParts<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct PartsVisitor;

        impl<'de> Visitor<'de> for PartsVisitor {
            type Value = TextOrParts<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string, a list of content parts, or null")
            }

            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(TextOrParts {
                    text: Some(Str(Cow::Borrowed(v))),
                    thinking: None,
                })
            }

            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(TextOrParts {
                    text: Some(Str(Cow::Owned(v.to_owned()))),
                    thinking: None,
                })
            }

            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(TextOrParts {
                    text: Some(Str(Cow::Owned(v))),
                    thinking: None,
                })
            }

            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(TextOrParts::default())
            }

            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(TextOrParts::default())
            }

            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_any(self)
            }

            fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Self::Value, S::Error> {
                let mut parts = Vec::new();
                while let Some(part) = seq.next_element::<serde_json::Value>()? {
                    parts.push(part);
                }
                Ok(TextOrParts::from_parts(&parts))
            }
        }

        deserializer.deserialize_any(PartsVisitor)
    }
}
