//! The Responses API's answer and stream events as read: borrowed from the body where they
//! can be, every key this library does not use skipped unread (a response echoes the whole
//! request's configuration on each of its three lifecycle events).

use std::fmt;

use harness_core::TokenUsage;
use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, Visitor};
use serde_json::Value;

use crate::wire::{Count, Str, Text, present};

/// One stream event: `response.created`, `response.output_text.delta`,
/// `response.output_item.done`, `response.completed`, `error`, ... Only the keys some event
/// uses are read.
#[derive(Deserialize)]
pub(super) struct EventIn<'a> {
    #[serde(borrow, rename = "type", default)]
    pub(super) kind: Text<'a>,
    #[serde(default)]
    pub(super) output_index: Option<usize>,
    #[serde(borrow, default)]
    pub(super) item_id: Text<'a>,
    #[serde(default)]
    pub(super) summary_index: Option<usize>,
    /// A delta's text (a non-string delta, of an event this library does not read, is none).
    #[serde(borrow, default)]
    pub(super) delta: Loose<'a>,
    // Boxed: rare beside the deltas, and inline they would make every event large.
    #[serde(borrow, default)]
    pub(super) item: Option<Box<ItemIn<'a>>>,
    #[serde(borrow, default)]
    pub(super) response: Option<Box<ResponseIn<'a>>>,
    /// An `error` event's fields: at the top level as the API documents them, or in an
    /// `error` object as some servers send them.
    #[serde(default)]
    pub(super) error: Option<Value>,
    #[serde(borrow, default)]
    pub(super) code: Loose<'a>,
    #[serde(borrow, default)]
    pub(super) message: Loose<'a>,
}

/// A response: a non-streamed answer whole, or the one a terminal event carries. Its
/// `output` is read only when `items` (the stream did not give every item whole).
#[derive(Deserialize)]
pub(super) struct ResponseIn<'a> {
    #[serde(borrow, default)]
    pub(super) id: Text<'a>,
    #[serde(borrow, default)]
    pub(super) model: Text<'a>,
    #[serde(borrow, default)]
    pub(super) status: Text<'a>,
    #[serde(default)]
    pub(super) error: Option<Value>,
    #[serde(borrow, default)]
    pub(super) incomplete_details: Option<IncompleteIn<'a>>,
    /// Azure's content filters: whether one blocked the prompt or the answer.
    #[serde(default, rename = "content_filters", deserialize_with = "blocked")]
    pub(super) blocked: bool,
    #[serde(default)]
    pub(super) usage: Option<UsageIn>,
    #[serde(borrow, default)]
    pub(super) output: Option<Vec<ItemIn<'a>>>,
}

/// A terminal event (`response.completed`, `response.incomplete`) read without its
/// response's items, which the stream already gave whole: the response echoes the request's
/// whole configuration, and its items a second time.
#[derive(Deserialize)]
pub(super) struct TerminalIn<'a> {
    #[serde(borrow, default)]
    pub(super) response: Option<Box<HeadIn<'a>>>,
}

/// A response's status, ids and usage, its items left unread.
#[derive(Deserialize)]
pub(super) struct HeadIn<'a> {
    #[serde(borrow, default)]
    pub(super) id: Text<'a>,
    #[serde(borrow, default)]
    pub(super) model: Text<'a>,
    #[serde(borrow, default)]
    pub(super) status: Text<'a>,
    #[serde(borrow, default)]
    pub(super) incomplete_details: Option<IncompleteIn<'a>>,
    /// Azure's content filters: whether one blocked the prompt or the answer.
    #[serde(default, rename = "content_filters", deserialize_with = "blocked")]
    pub(super) blocked: bool,
    #[serde(default)]
    pub(super) usage: Option<UsageIn>,
}

/// Whether any of Azure's `content_filters` (a list of verdicts, or null) says `blocked:
/// true`. An annotation of another shape says nothing rather than failing the answer.
fn blocked<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    let filters = Value::deserialize(deserializer)?;
    Ok(filters.as_array().is_some_and(|filters| {
        filters
            .iter()
            .any(|f| f.get("blocked").and_then(Value::as_bool) == Some(true))
    }))
}

/// `incomplete_details`.
#[derive(Deserialize)]
pub(super) struct IncompleteIn<'a> {
    #[serde(borrow, default)]
    pub(super) reason: Text<'a>,
}

/// One output item: a `message`, a `function_call`, a `reasoning` item, or a hosted tool's
/// call (`web_search_call`, `mcp_call`, ...), whose other fields are read from its JSON
/// value instead.
#[derive(Deserialize)]
pub(super) struct ItemIn<'a> {
    #[serde(borrow, rename = "type", default)]
    pub(super) kind: Text<'a>,
    #[serde(borrow, default)]
    pub(super) id: Text<'a>,
    #[serde(borrow, default)]
    pub(super) call_id: Text<'a>,
    #[serde(borrow, default)]
    pub(super) name: Text<'a>,
    #[serde(borrow, default)]
    pub(super) arguments: Loose<'a>,
    #[serde(borrow, default)]
    pub(super) content: Parts<'a>,
    #[serde(borrow, default)]
    pub(super) summary: Parts<'a>,
    #[serde(borrow, default)]
    pub(super) encrypted_content: Text<'a>,
}

/// A message's content parts, or a reasoning item's summary or content.
#[derive(Default)]
pub(super) struct Parts<'a>(pub(super) Vec<PartIn<'a>>);

/// One part: `output_text` (with its annotations), `refusal`, `summary_text`,
/// `reasoning_text`; whichever it is, its text is its `text` (or its `refusal`).
#[derive(Deserialize)]
pub(super) struct PartIn<'a> {
    #[serde(borrow, default)]
    pub(super) text: Loose<'a>,
    #[serde(borrow, default)]
    pub(super) refusal: Loose<'a>,
    #[serde(default)]
    pub(super) annotations: Option<Vec<Value>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Parts<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // A list of parts (an element that is not one skipped); `null` is none.
        let parts = Option::<Vec<PartsElement<'a>>>::deserialize(deserializer)?;
        Ok(Self(
            parts
                .unwrap_or_default()
                .into_iter()
                .filter_map(|p| p.0)
                .collect(),
        ))
    }
}

/// A list element that is a part, or anything else (skipped).
struct PartsElement<'a>(Option<PartIn<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for PartsElement<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ElementVisitor;
        impl<'de> Visitor<'de> for ElementVisitor {
            type Value = PartsElement<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a content part")
            }

            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                map: M,
            ) -> Result<Self::Value, M::Error> {
                let part = PartIn::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(PartsElement(Some(part)))
            }

            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(PartsElement(None))
            }

            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(PartsElement(None))
            }

            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(PartsElement(None))
            }

            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(PartsElement(None))
            }

            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(PartsElement(None))
            }

            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(PartsElement(None))
            }

            fn visit_seq<S: serde::de::SeqAccess<'de>>(
                self,
                mut seq: S,
            ) -> Result<Self::Value, S::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(PartsElement(None))
            }
        }
        deserializer.deserialize_any(ElementVisitor)
    }
}

/// A string where one is expected, or none for anything else (read whole and dropped): the
/// events and items of hosted tools put other values under the same keys.
#[derive(Default)]
pub(super) struct Loose<'a>(pub(super) Option<Str<'a>>);

impl Loose<'_> {
    pub(super) fn as_deref(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Loose<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct LooseVisitor;
        impl<'de> Visitor<'de> for LooseVisitor {
            type Value = Loose<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string, or anything")
            }

            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Loose(Some(Str(std::borrow::Cow::Borrowed(v)))))
            }

            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Loose(Some(Str(std::borrow::Cow::Owned(v.to_owned())))))
            }

            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Loose(Some(Str(std::borrow::Cow::Owned(v)))))
            }

            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Loose(None))
            }

            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Loose(None))
            }

            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Loose(None))
            }

            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Loose(None))
            }

            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Loose(None))
            }

            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(Loose(None))
            }

            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_any(self)
            }

            fn visit_seq<S: serde::de::SeqAccess<'de>>(
                self,
                mut seq: S,
            ) -> Result<Self::Value, S::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Loose(None))
            }

            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut map: M,
            ) -> Result<Self::Value, M::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Loose(None))
            }
        }
        deserializer.deserialize_any(LooseVisitor)
    }
}

/// The Responses API's counts; each read without ever failing ([`Count`]).
#[derive(Deserialize, Default, Clone, Copy)]
#[allow(clippy::struct_field_names)] // the vendor's names
pub(super) struct UsageIn {
    #[serde(default, deserialize_with = "present")]
    input_tokens: Option<Count>,
    #[serde(default, deserialize_with = "present")]
    output_tokens: Option<Count>,
    #[serde(default, deserialize_with = "present")]
    total_tokens: Option<Count>,
    #[serde(default)]
    input_tokens_details: Option<InputDetails>,
    #[serde(default)]
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Deserialize, Default, Clone, Copy)]
struct InputDetails {
    #[serde(default)]
    cached_tokens: Count,
}

#[derive(Deserialize, Default, Clone, Copy)]
struct OutputDetails {
    #[serde(default)]
    reasoning_tokens: Count,
}

impl UsageIn {
    /// The usage: cached tokens inside the input count and reasoning tokens inside the
    /// output count, as the service reports them; the total the service's, or the sum.
    pub(super) fn usage(&self) -> TokenUsage {
        let read = |count: Option<Count>| count.map_or(0, |c| c.0);
        let (input, output) = (read(self.input_tokens), read(self.output_tokens));
        let total = self
            .total_tokens
            .map_or_else(|| input.saturating_add(output), |c| c.0);
        TokenUsage::new(input, output, total)
            .with_cached(
                self.input_tokens_details
                    .unwrap_or_default()
                    .cached_tokens
                    .0,
            )
            .with_reasoning(
                self.output_tokens_details
                    .unwrap_or_default()
                    .reasoning_tokens
                    .0,
            )
    }
}
