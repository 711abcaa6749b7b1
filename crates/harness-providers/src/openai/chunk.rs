//! Reading a Chat Completions answer, whole or one stream chunk at a time: tuned code.
//!
//! The chunk and its delta have hand-written deserializers rather than derived ones: the
//! keys every chunk carries are read on a short path, the rare ones (usage, errors,
//! refusals, reasoning) out of line and boxed, the stream's id and model only until known,
//! and a chunk is filled where it stands instead of being returned by value through serde's
//! layers. Measured with `cargo xtask bench http` (docs/performance.md): about 0.5 µs less
//! CPU per streamed two-step run than derived readers, and 7-11 k fewer instructions per run
//! than reading by value. Change it with that benchmark at hand.

use harness_core::TokenUsage;
use serde::Deserialize;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use crate::wire::{Count, Few, FewInto, Str, Text, TextOrParts, present};

/// A Chat Completions answer or stream chunk: a non-streamed answer is one chunk whose
/// choice carries a `message` where a chunk's carries a `delta`.
///
/// Read by hand ([`ChunkSeed`]), as [`Delta`] is, so that what nearly every chunk carries
/// is read on a short path and the rest (usage, an error) out of line: measured over three
/// code layouts, a streamed run costs 0.5 µs less than with serde's derived readers
/// (docs/performance.md).
#[derive(Default)]
pub(super) struct Chunk<'a> {
    pub(super) id: Text<'a>,
    pub(super) model: Text<'a>,
    pub(super) choices: Option<Few<Choice<'a>>>,
    // Boxed, as `error` is: both are rare, and inline they would double the chunk's size.
    pub(super) usage: Option<Box<UsageWire>>,
    /// llama.cpp and gateways report a failure as `{"error": ...}`, in a 200 body or
    /// mid-stream.
    pub(super) error: Option<Box<Value>>,
    /// Whether Azure's filtering of the prompt (`prompt_filter_results`) filtered any of it.
    pub(super) filtered: bool,
}

impl<'a> Chunk<'a> {
    /// Reads one stream event's chunk into this (empty) one; `ids` says whether its `id` and
    /// `model` are still wanted (a stream repeats both on every chunk, and the accumulator
    /// keeps the first).
    pub(super) fn fill(&mut self, data: &'a str, ids: bool) -> serde_json::Result<()> {
        let mut reader = serde_json::Deserializer::from_str(data);
        DeserializeSeed::deserialize(ChunkSeed { ids, chunk: self }, &mut reader)?;
        reader.end()
    }

    #[cfg(test)]
    fn read(data: &'a str, ids: bool) -> serde_json::Result<Self> {
        let mut chunk = Chunk::default();
        chunk.fill(data, ids)?;
        Ok(chunk)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Chunk<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        let mut chunk = Chunk::default();
        let seed = ChunkSeed {
            ids: true,
            chunk: &mut chunk,
        };
        DeserializeSeed::deserialize(seed, deserializer)?;
        Ok(chunk)
    }
}

/// A chunk's keys: the ones read, and the rest.
#[derive(Clone, Copy, Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
pub(super) enum ChunkKey {
    Id,
    Model,
    Choices,
    Usage,
    Error,
    /// Azure's content filtering of the prompt (`prompt_annotations` in older API versions).
    #[serde(alias = "prompt_annotations")]
    PromptFilterResults,
    /// Groq's own object, whose `usage` a stream's last chunk carries.
    #[serde(rename = "x_groq")]
    XGroq,
    #[serde(other)]
    Other,
}

/// Reads a [`Chunk`] into the one given, its `id` and `model` only when `ids` (skipped
/// otherwise, as unknown keys are). A key given twice is an error, as in serde's derived
/// readers. Filled in place: a chunk is some 200 bytes, and returned by value it would be
/// copied at each of serde's layers, for every event of a stream.
pub(super) struct ChunkSeed<'c, 'de> {
    pub(super) ids: bool,
    pub(super) chunk: &'c mut Chunk<'de>,
}

impl<'de> DeserializeSeed<'de> for ChunkSeed<'_, 'de> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> std::result::Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ChunkSeed<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a chat completion (a JSON object)")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> std::result::Result<(), M::Error> {
        let chunk = self.chunk;
        let mut seen = Seen::default();
        while let Some(key) = map.next_key()? {
            match key {
                ChunkKey::Choices => {
                    seen.once(ChunkKey::Choices as u8, "choices")?;
                    // `null` is no list, as a missing key is.
                    let choices = chunk.choices.insert(Few::default());
                    if !map.next_value_seed(FewInto(choices))? {
                        chunk.choices = None;
                    }
                }
                ChunkKey::Id if self.ids => {
                    seen.once(ChunkKey::Id as u8, "id")?;
                    chunk.id = map.next_value()?;
                }
                ChunkKey::Model if self.ids => {
                    seen.once(ChunkKey::Model as u8, "model")?;
                    chunk.model = map.next_value()?;
                }
                ChunkKey::Usage => {
                    seen.once(ChunkKey::Usage as u8, "usage")?;
                    // `null` says nothing; it does not undo Groq's figures read before it.
                    if let Some(usage) = rare(&mut map)? {
                        chunk.usage = Some(usage);
                    }
                }
                ChunkKey::XGroq => {
                    seen.once(ChunkKey::XGroq as u8, "x_groq")?;
                    // The chunk's own `usage`, where there is one, is the figure.
                    let groq: Option<Box<GroqExtra>> = rare(&mut map)?;
                    if let Some(usage) = groq.and_then(|g| g.usage) {
                        chunk.usage.get_or_insert(usage);
                    }
                }
                ChunkKey::Error => {
                    seen.once(ChunkKey::Error as u8, "error")?;
                    chunk.error = rare(&mut map)?;
                }
                ChunkKey::PromptFilterResults => {
                    seen.once(ChunkKey::PromptFilterResults as u8, "prompt_filter_results")?;
                    let filtered: Option<Box<Filtered>> = rare(&mut map)?;
                    chunk.filtered = filtered.is_some_and(|f| f.0);
                }
                ChunkKey::Id | ChunkKey::Model | ChunkKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// A value few chunks carry, read out of line (boxed; `null` is none).
#[cold]
#[inline(never)]
fn rare<'de, M: MapAccess<'de>, T: Deserialize<'de>>(
    map: &mut M,
) -> std::result::Result<Option<Box<T>>, M::Error> {
    map.next_value()
}

/// The keys of one object read so far, a bit each (the key's place in its enum): a key
/// given twice is an error, as serde's derived readers make it.
#[derive(Default)]
pub(super) struct Seen(u8);

impl Seen {
    fn once<E: serde::de::Error>(
        &mut self,
        place: u8,
        key: &'static str,
    ) -> std::result::Result<(), E> {
        let bit = 1 << place;
        if self.0 & bit != 0 {
            return Err(E::duplicate_field(key));
        }
        self.0 |= bit;
        Ok(())
    }
}

#[derive(Deserialize)]
pub(super) struct Choice<'a> {
    #[serde(borrow, default, alias = "message")]
    pub(super) delta: Option<Delta<'a>>,
    #[serde(borrow, default)]
    pub(super) finish_reason: Text<'a>,
    /// Azure's content filtering of this choice's output (`content_filter_results`).
    #[serde(default, rename = "content_filter_results")]
    pub(super) filtered: Filtered,
}

/// Azure's content-filter results (a choice's `content_filter_results`, a request's
/// `prompt_filter_results`), read for one thing: whether any category says `"filtered":
/// true`. The categories (hate, jailbreak, protected material, custom blocklists, ...) and
/// their shapes vary by API version and configuration, so every `filtered` flag at any depth
/// counts, and nothing else is kept: `detected` (an annotation) and `severity` do not block.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Filtered(pub(super) bool);

impl<'de> Deserialize<'de> for Filtered {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        deserializer.deserialize_any(FilteredVisitor { flag: false })
    }
}

/// Looks for a `filtered: true`; `flag` says the value read is a `filtered` key's own.
struct FilteredVisitor {
    flag: bool,
}

/// The keys of a filter result: `filtered`, and every other.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum FilterKey {
    Filtered,
    #[serde(other)]
    Other,
}

/// A value under a filter result's key, read with the visitor that key calls for.
struct FilterSeed {
    flag: bool,
}

impl<'de> DeserializeSeed<'de> for FilterSeed {
    type Value = bool;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> std::result::Result<bool, D::Error> {
        deserializer
            .deserialize_any(FilteredVisitor { flag: self.flag })
            .map(|f| f.0)
    }
}

impl<'de> Visitor<'de> for FilteredVisitor {
    type Value = Filtered;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("content filter results")
    }

    fn visit_bool<E>(self, v: bool) -> std::result::Result<Filtered, E> {
        Ok(Filtered(self.flag && v))
    }

    fn visit_i64<E>(self, _: i64) -> std::result::Result<Filtered, E> {
        Ok(Filtered(false))
    }

    fn visit_u64<E>(self, _: u64) -> std::result::Result<Filtered, E> {
        Ok(Filtered(false))
    }

    fn visit_f64<E>(self, _: f64) -> std::result::Result<Filtered, E> {
        Ok(Filtered(false))
    }

    fn visit_str<E>(self, _: &str) -> std::result::Result<Filtered, E> {
        Ok(Filtered(false))
    }

    fn visit_unit<E>(self) -> std::result::Result<Filtered, E> {
        Ok(Filtered(false))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Filtered, A::Error> {
        let mut any = false;
        while let Some(filtered) = seq.next_element_seed(FilterSeed { flag: false })? {
            any |= filtered;
        }
        Ok(Filtered(any))
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> std::result::Result<Filtered, M::Error> {
        let mut any = false;
        while let Some(key) = map.next_key::<FilterKey>()? {
            let flag = matches!(key, FilterKey::Filtered);
            any |= map.next_value_seed(FilterSeed { flag })?;
        }
        Ok(Filtered(any))
    }
}

/// A choice's `delta` (or an answer's `message`).
#[derive(Default)]
pub(super) struct Delta<'a> {
    pub(super) content: TextOrParts<'a>,
    // A `Vec`, empty without allocating when absent: a text chunk then stays small, and
    // the chunk is moved whole through serde's layers for every event.
    pub(super) tool_calls: Vec<CallWire<'a>>,
    /// What few deltas carry, boxed: the delta is moved through serde's layers for every
    /// event, so its size is paid on every chunk.
    pub(super) extra: Option<Box<DeltaExtra<'a>>>,
}

/// A delta's rare fields.
#[derive(Default)]
pub(super) struct DeltaExtra<'a> {
    /// OpenAI's refusal (structured outputs): what the model said instead of an answer.
    pub(super) refusal: Text<'a>,
    pub(super) reasoning_content: Text<'a>,
    pub(super) reasoning: Text<'a>,
    /// OpenRouter's structured reasoning: the same text as `reasoning`, with what the plain
    /// text cannot carry (a signature, reasoning the vendor encrypted).
    pub(super) reasoning_details: Vec<DetailWire<'a>>,
}

/// One of OpenRouter's `reasoning_details`: `reasoning.text` (text, signature),
/// `reasoning.summary` (summary) or `reasoning.encrypted` (data).
#[derive(Deserialize)]
pub(super) struct DetailWire<'a> {
    #[serde(borrow, default, rename = "type")]
    pub(super) kind: Text<'a>,
    #[serde(borrow, default)]
    pub(super) text: Text<'a>,
    #[serde(borrow, default)]
    pub(super) summary: Text<'a>,
    #[serde(borrow, default)]
    pub(super) signature: Text<'a>,
    #[serde(borrow, default)]
    pub(super) data: Text<'a>,
}

impl<'a> Delta<'a> {
    pub(super) fn refusal(&self) -> Option<&Str<'a>> {
        self.extra.as_ref().and_then(|extra| extra.refusal.as_ref())
    }

    /// The reasoning, under either name (the first that says something).
    pub(super) fn reasoning(&self) -> Option<&Str<'a>> {
        let extra = self.extra.as_ref()?;
        [&extra.reasoning_content, &extra.reasoning]
            .into_iter()
            .find_map(|r| r.as_ref().filter(|r| !r.is_empty()))
    }
}

/// A delta's keys: the ones read, and the rest.
#[derive(Clone, Copy, Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
pub(super) enum DeltaKey {
    Content,
    ToolCalls,
    Refusal,
    ReasoningContent,
    Reasoning,
    ReasoningDetails,
    #[serde(other)]
    Other,
}

impl<'de: 'a, 'a> Deserialize<'de> for Delta<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        struct DeltaVisitor;

        impl<'de> Visitor<'de> for DeltaVisitor {
            type Value = Delta<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a delta or message (a JSON object)")
            }

            fn visit_map<M: MapAccess<'de>>(
                self,
                mut map: M,
            ) -> std::result::Result<Delta<'de>, M::Error> {
                let mut delta = Delta::default();
                let mut seen = Seen::default();
                while let Some(key) = map.next_key()? {
                    match key {
                        DeltaKey::Content => {
                            seen.once(DeltaKey::Content as u8, "content")?;
                            delta.content = map.next_value()?;
                        }
                        DeltaKey::ToolCalls => {
                            seen.once(DeltaKey::ToolCalls as u8, "tool_calls")?;
                            delta.tool_calls =
                                map.next_value::<Option<Vec<_>>>()?.unwrap_or_default();
                        }
                        DeltaKey::Refusal
                        | DeltaKey::ReasoningContent
                        | DeltaKey::Reasoning
                        | DeltaKey::ReasoningDetails => {
                            read_extra(&mut map, key, &mut seen, &mut delta.extra)?;
                        }
                        DeltaKey::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(delta)
            }
        }

        deserializer.deserialize_map(DeltaVisitor)
    }
}

/// Reads one of a delta's rare fields, out of line.
#[cold]
#[inline(never)]
fn read_extra<'de, M: MapAccess<'de>>(
    map: &mut M,
    key: DeltaKey,
    seen: &mut Seen,
    extra: &mut Option<Box<DeltaExtra<'de>>>,
) -> std::result::Result<(), M::Error> {
    let name = match key {
        DeltaKey::Refusal => "refusal",
        DeltaKey::ReasoningContent => "reasoning_content",
        DeltaKey::ReasoningDetails => "reasoning_details",
        _ => "reasoning",
    };
    seen.once(key as u8, name)?;
    if let DeltaKey::ReasoningDetails = key {
        // OpenRouter sends `[]` on most chunks: a box only for details.
        let details = map
            .next_value::<Option<Vec<DetailWire<'de>>>>()?
            .unwrap_or_default();
        if !details.is_empty() {
            extra.get_or_insert_with(Box::default).reasoning_details = details;
        }
        return Ok(());
    }
    // OpenAI sends `"refusal": null` in every stream's first delta: a box only for a value.
    let Some(value) = map.next_value::<Text<'de>>()? else {
        return Ok(());
    };
    let extra = extra.get_or_insert_with(Box::default);
    let slot = match key {
        DeltaKey::Refusal => &mut extra.refusal,
        DeltaKey::ReasoningContent => &mut extra.reasoning_content,
        _ => &mut extra.reasoning,
    };
    *slot = Some(value);
    Ok(())
}

#[derive(Deserialize)]
pub(super) struct CallWire<'a> {
    #[serde(default)]
    pub(super) index: Option<usize>,
    #[serde(borrow, default)]
    pub(super) id: Text<'a>,
    #[serde(borrow, default)]
    pub(super) function: Option<FunctionWire<'a>>,
}

#[derive(Deserialize)]
pub(super) struct FunctionWire<'a> {
    #[serde(borrow, default)]
    pub(super) name: Text<'a>,
    #[serde(borrow, default)]
    pub(super) arguments: Option<Arguments<'a>>,
}

/// A call's arguments: JSON text, as the API sends them (a fragment of it, streamed), or
/// the object itself, as some servers send it.
pub(super) enum Arguments<'a> {
    Text(Str<'a>),
    Value(Box<Value>),
}

impl<'de: 'a, 'a> Deserialize<'de> for Arguments<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Arguments<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("arguments as JSON text or a JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Self::Value, E> {
                Ok(Arguments::Text(Str(std::borrow::Cow::Borrowed(v))))
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<Self::Value, E> {
                Ok(Arguments::Text(Str(std::borrow::Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E>(self, v: String) -> std::result::Result<Self::Value, E> {
                Ok(Arguments::Text(Str(std::borrow::Cow::Owned(v))))
            }
            fn visit_bool<E>(self, v: bool) -> std::result::Result<Self::Value, E> {
                Ok(Arguments::Value(Box::new(Value::Bool(v))))
            }
            fn visit_i64<E>(self, v: i64) -> std::result::Result<Self::Value, E> {
                Ok(Arguments::Value(Box::new(Value::from(v))))
            }
            fn visit_u64<E>(self, v: u64) -> std::result::Result<Self::Value, E> {
                Ok(Arguments::Value(Box::new(Value::from(v))))
            }
            fn visit_f64<E>(self, v: f64) -> std::result::Result<Self::Value, E> {
                Ok(Arguments::Value(Box::new(Value::from(v))))
            }
            fn visit_unit<E>(self) -> std::result::Result<Self::Value, E> {
                Ok(Arguments::Value(Box::new(Value::Null)))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> std::result::Result<Self::Value, A::Error> {
                Value::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
                    .map(|value| Arguments::Value(Box::new(value)))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<Self::Value, A::Error> {
                Value::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(|value| Arguments::Value(Box::new(value)))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// Usage from a Chat Completions `usage` object; a count present as `null` is 0. Counts
/// saturate: no vendor figure can overflow.
#[derive(Deserialize)]
pub(super) struct UsageWire {
    #[serde(default, deserialize_with = "present")]
    pub(super) prompt_tokens: Option<Count>,
    #[serde(default, deserialize_with = "present")]
    pub(super) completion_tokens: Option<Count>,
    #[serde(default, deserialize_with = "present")]
    pub(super) total_tokens: Option<Count>,
    #[serde(default)]
    pub(super) prompt_tokens_details: Option<Details>,
    #[serde(default)]
    pub(super) completion_tokens_details: Option<Details>,
    /// DeepSeek's name for the cached prompt tokens.
    #[serde(default, deserialize_with = "present")]
    pub(super) prompt_cache_hit_tokens: Option<Count>,
}

/// Groq's `x_groq`: its request id, and the usage at a stream's end (a stream that was not
/// asked for a usage chunk, or a server that sends none).
#[derive(Deserialize)]
pub(super) struct GroqExtra {
    #[serde(default)]
    pub(super) usage: Option<Box<UsageWire>>,
}

/// `prompt_tokens_details` (its `cached_tokens`, and OpenRouter's `cache_write_tokens`) or
/// `completion_tokens_details` (its `reasoning_tokens`); a count present as `null` is 0.
#[derive(Deserialize)]
#[allow(clippy::struct_field_names)] // the vendor's names
pub(super) struct Details {
    #[serde(default, deserialize_with = "present")]
    pub(super) cached_tokens: Option<Count>,
    #[serde(default, deserialize_with = "present")]
    pub(super) cache_write_tokens: Option<Count>,
    #[serde(default, deserialize_with = "present")]
    pub(super) reasoning_tokens: Option<Count>,
}

impl UsageWire {
    /// The usage, or `None` when the object said nothing.
    pub(super) fn usage(&self) -> Option<TokenUsage> {
        if self.prompt_tokens.is_none()
            && self.completion_tokens.is_none()
            && self.total_tokens.is_none()
            && self.prompt_tokens_details.is_none()
            && self.completion_tokens_details.is_none()
            && self.prompt_cache_hit_tokens.is_none()
        {
            return None;
        }
        let read = |count: Option<Count>| count.map_or(0, |c| c.0);
        let (prompt, completion) = (read(self.prompt_tokens), read(self.completion_tokens));
        let total = self
            .total_tokens
            .map_or_else(|| prompt.saturating_add(completion), |t| t.0);
        let cached = self
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens)
            .or(self.prompt_cache_hit_tokens);
        let written = self
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cache_write_tokens);
        let reasoning = self
            .completion_tokens_details
            .as_ref()
            .and_then(|d| d.reasoning_tokens);
        Some(
            TokenUsage::new(prompt, completion, total)
                .with_cached(read(cached))
                .with_cache_write(read(written))
                .with_reasoning(read(reasoning)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_is_read_whole_and_its_ids_only_while_wanted() {
        let data = r#"{"id":"c1","object":"chat.completion.chunk","model":"m1",
            "choices":[{"index":0,"delta":{"role":"assistant","content":"Hi",
            "refusal":"no","reasoning_content":"","reasoning":"think",
            "tool_calls":[{"index":0,"id":"call","function":{"name":"f","arguments":"{}"}}]},
            "finish_reason":"stop"},{"index":1,"delta":{"content":"other"}}],
            "usage":{"prompt_tokens":3,"completion_tokens":2},"error":null}"#;
        let chunk = Chunk::read(data, true).unwrap();
        assert_eq!(chunk.id.as_deref(), Some("c1"));
        assert_eq!(chunk.model.as_deref(), Some("m1"));
        assert_eq!(
            chunk
                .usage
                .as_deref()
                .and_then(UsageWire::usage)
                .map(|u| u.total_tokens),
            Some(5)
        );
        assert!(chunk.error.is_none());
        let choices = chunk.choices.as_ref().unwrap();
        assert_eq!(choices.iter().count(), 2);
        let choice = choices.first().unwrap();
        assert_eq!(choice.finish_reason.as_deref(), Some("stop"));
        let delta = choice.delta.as_ref().unwrap();
        assert_eq!(delta.content.text.as_deref(), Some("Hi"));
        assert_eq!(delta.refusal().map(|r| &**r), Some("no"));
        // An empty `reasoning_content` says nothing: the other name's reasoning is taken.
        assert_eq!(delta.reasoning().map(|r| &**r), Some("think"));
        assert_eq!(delta.tool_calls.len(), 1);
        assert_eq!(delta.tool_calls[0].id.as_deref(), Some("call"));
        // Once the stream's id and model are known, a chunk's are skipped, the rest read.
        let chunk = Chunk::read(data, false).unwrap();
        assert!(chunk.id.is_none() && chunk.model.is_none());
        assert!(chunk.usage.is_some() && chunk.choices.is_some());
    }

    #[test]
    fn azure_filter_results_count_only_a_filtered_flag_that_is_true() {
        let filtered = |json: &str| serde_json::from_str::<Filtered>(json).unwrap().0;
        // Annotations (`detected`, `severity`) do not block; a `filtered: true` at any depth
        // does; what is not a filter result says nothing.
        assert!(!filtered(
            r#"{"hate":{"filtered":false,"severity":"safe"},"jailbreak":{"filtered":false,"detected":true}}"#
        ));
        assert!(filtered(
            r#"{"hate":{"filtered":false},"self_harm":{"filtered":true,"severity":"medium"}}"#
        ));
        assert!(filtered(
            r#"[{"prompt_index":0,"content_filter_results":{"violence":{"filtered":true}}}]"#
        ));
        assert!(filtered(
            r#"{"custom_blocklists":{"filtered":false,"details":[{"filtered":true,"id":"b"}]}}"#
        ));
        for nothing in [
            "{}",
            "null",
            "[]",
            r#"{"error":{"code":"Timeout","message":"x"}}"#,
            r#"{"filtered":"yes"}"#,
            "7",
        ] {
            assert!(!filtered(nothing), "{nothing}");
        }
        let chunk = Chunk::read(
            r#"{"choices":[{"content_filter_results":{"sexual":{"filtered":true}},"finish_reason":null,"index":0}],
              "prompt_filter_results":[{"prompt_index":0,"content_filter_results":{}}]}"#,
            true,
        )
        .unwrap();
        assert!(!chunk.filtered);
        let choice = chunk.choices.as_ref().and_then(Few::first).unwrap();
        assert_eq!(choice.filtered, Filtered(true));
        // The older name of the prompt's results.
        let chunk = Chunk::read(
            r#"{"prompt_annotations":[{"content_filter_results":{"hate":{"filtered":true}}}]}"#,
            true,
        )
        .unwrap();
        assert!(chunk.filtered);
    }

    #[test]
    fn chunk_readers_read_null_as_absent_and_reject_what_is_not_a_chunk() {
        let chunk =
            Chunk::read(r#"{"choices":[{"delta":{"content":null,"tool_calls":null,"refusal":null}}],"usage":null}"#, true)
                .unwrap();
        let delta = chunk
            .choices
            .as_ref()
            .and_then(Few::first)
            .and_then(|c| c.delta.as_ref())
            .unwrap();
        assert!(delta.content.text.is_none() && delta.tool_calls.is_empty());
        assert!(delta.refusal().is_none() && delta.reasoning().is_none());
        assert!(delta.extra.is_none(), "a null rare field allocates nothing");
        assert!(chunk.usage.is_none());
        // `choices` as null is no list, as a missing key is; an empty list is a list.
        assert!(
            Chunk::read(r#"{"choices":null}"#, true)
                .unwrap()
                .choices
                .is_none()
        );
        assert!(Chunk::read("{}", true).unwrap().choices.is_none());
        let empty = Chunk::read(r#"{"choices":[]}"#, true).unwrap().choices;
        assert!(empty.is_some_and(|choices| choices.first().is_none()));
        let message =
            Chunk::read(r#"{"choices":[{"message":{"content":"whole"}}]}"#, true).unwrap();
        let choice = message.choices.as_ref().and_then(Few::first).unwrap();
        assert_eq!(
            choice.delta.as_ref().unwrap().content.text.as_deref(),
            Some("whole")
        );
        for (bad, says) in [
            (
                r#"{"choices":[],"choices":[]}"#,
                "duplicate field `choices`",
            ),
            (r#"{"id":"a","id":"b"}"#, "duplicate field `id`"),
            (
                r#"{"choices":[{"delta":{"content":"a","content":"b"}}]}"#,
                "duplicate field `content`",
            ),
            (
                r#"{"choices":[{"delta":{"refusal":"a","refusal":"b"}}]}"#,
                "duplicate field `refusal`",
            ),
            (r#"["not", "a", "chunk"]"#, "invalid type"),
            (r#"{"choices":[{"delta":["x"]}]}"#, "invalid type"),
            (
                r#"{"choices":[{"delta":{"content":"a"}}]} trailing"#,
                "trailing characters",
            ),
            (r#"{"choices":[{"delta":{"content":"a"#, "EOF"),
        ] {
            let err = Chunk::read(bad, true)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }
}
