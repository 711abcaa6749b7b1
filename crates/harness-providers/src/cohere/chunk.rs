//! The wire types of a v2 chat answer and of its stream's events, read without a copy where
//! they can be.

use harness_core::{FinishReason, TokenUsage};
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use crate::wire::{Count, Str, Text, present};

pub(super) fn finish_reason(value: &str) -> FinishReason {
    match value {
        "COMPLETE" | "STOP_SEQUENCE" | "TOOL_CALL" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        // TIMEOUT, and whatever comes later.
        _ => FinishReason::Other,
    }
}

/// A non-streamed answer: `{id, message, finish_reason, usage}`; or, with `error_type` or
/// `error` (or `finish_reason` `ERROR`), the vendor's error.
#[derive(Deserialize)]
pub(super) struct AnswerIn<'a> {
    #[serde(borrow, default)]
    pub(super) id: Text<'a>,
    #[serde(borrow, default)]
    pub(super) message: Option<MessageIn<'a>>,
    #[serde(borrow, default)]
    pub(super) finish_reason: Text<'a>,
    #[serde(default)]
    pub(super) usage: Object<UsageIn>,
    #[serde(default)]
    pub(super) error: Option<Value>,
    #[serde(borrow, default)]
    pub(super) error_type: Text<'a>,
}

/// An answer's `message`: the turn, or the words of an error object.
pub(super) enum MessageIn<'a> {
    Turn(TurnIn<'a>),
    Words(Str<'a>),
}

impl<'de: 'a, 'a> Deserialize<'de> for MessageIn<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        struct MessageVisitor;

        impl<'de> Visitor<'de> for MessageVisitor {
            type Value = MessageIn<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a message object or an error's text")
            }

            fn visit_map<M: MapAccess<'de>>(
                self,
                map: M,
            ) -> std::result::Result<Self::Value, M::Error> {
                TurnIn::deserialize(de::value::MapAccessDeserializer::new(map)).map(MessageIn::Turn)
            }

            fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Self::Value, E> {
                Ok(MessageIn::Words(Str(Cow::Borrowed(v))))
            }

            fn visit_str<E>(self, v: &str) -> std::result::Result<Self::Value, E> {
                Ok(MessageIn::Words(Str(Cow::Owned(v.to_owned()))))
            }
        }

        deserializer.deserialize_any(MessageVisitor)
    }
}

/// The answer's `message`.
#[derive(Deserialize)]
pub(super) struct TurnIn<'a> {
    #[serde(borrow, default)]
    pub(super) content: Option<Vec<ContentIn<'a>>>,
    #[serde(borrow, default)]
    pub(super) tool_plan: Text<'a>,
    #[serde(borrow, default)]
    pub(super) tool_calls: Option<Vec<CallIn<'a>>>,
}

/// A content block: whole in an answer; a stream's `content-start` (its text empty) and
/// `content-delta` (its text or thinking, no type).
#[derive(Deserialize)]
pub(super) struct ContentIn<'a> {
    #[serde(borrow, rename = "type", default)]
    pub(super) kind: Text<'a>,
    #[serde(borrow, default)]
    pub(super) text: Text<'a>,
    #[serde(borrow, default)]
    pub(super) thinking: Text<'a>,
}

/// A tool call: whole in an answer; a stream's `tool-call-start` (id, name, the arguments
/// begun) and `tool-call-delta` (more arguments).
#[derive(Deserialize)]
pub(super) struct CallIn<'a> {
    #[serde(borrow, default)]
    pub(super) id: Text<'a>,
    #[serde(borrow, default)]
    pub(super) function: Option<FunctionIn<'a>>,
}

#[derive(Deserialize)]
pub(super) struct FunctionIn<'a> {
    #[serde(borrow, default)]
    pub(super) name: Text<'a>,
    #[serde(borrow, default)]
    pub(super) arguments: Option<ArgumentsIn<'a>>,
}

/// Arguments as Cohere sends them, JSON text; or a value, as a proxy might.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum ArgumentsIn<'a> {
    Text(#[serde(borrow)] Str<'a>),
    Value(Value),
}

/// One stream event: `message-start`, `content-start`, `content-delta`, `content-end`,
/// `tool-plan-delta`, `tool-call-start`, `tool-call-delta`, `tool-call-end`,
/// `citation-start`, `citation-end`, `message-end` (and whatever comes later).
#[derive(Deserialize)]
pub(super) struct Event<'a> {
    #[serde(borrow, rename = "type", default)]
    pub(super) kind: Text<'a>,
    #[serde(borrow, default)]
    pub(super) id: Text<'a>,
    #[serde(default)]
    pub(super) index: Option<usize>,
    #[serde(borrow, default)]
    pub(super) delta: Option<DeltaIn<'a>>,
    /// A bare error in the stream: `{"message": "...", "error_type": "..."}`.
    #[serde(default)]
    pub(super) message: Option<Value>,
    #[serde(borrow, default)]
    pub(super) error_type: Text<'a>,
}

#[derive(Deserialize)]
pub(super) struct DeltaIn<'a> {
    #[serde(borrow, default)]
    pub(super) message: Option<DeltaMessage<'a>>,
    #[serde(borrow, default)]
    pub(super) finish_reason: Text<'a>,
    #[serde(default)]
    pub(super) usage: Object<UsageIn>,
    #[serde(default)]
    pub(super) error: Option<Value>,
    #[serde(borrow, default)]
    pub(super) error_type: Text<'a>,
}

/// What a delta carries: one content block or one call (a list of them, empty, at
/// `message-start`), or a piece of the plan.
#[derive(Deserialize)]
pub(super) struct DeltaMessage<'a> {
    #[serde(borrow, default)]
    pub(super) content: Object<ContentIn<'a>>,
    #[serde(borrow, default)]
    pub(super) tool_plan: Text<'a>,
    #[serde(borrow, default)]
    pub(super) tool_calls: Object<CallIn<'a>>,
}

/// A field read when it is a JSON object and left aside when it is anything else: the same
/// key holds an object in one event and a list in another, and a usage figure that is not
/// an object must not cost the answer it came with.
pub(super) struct Object<T>(pub(super) Option<T>);

impl<T> Default for Object<T> {
    fn default() -> Self {
        Self(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        struct ObjectVisitor<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
            type Value = Object<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }

            fn visit_map<M: MapAccess<'de>>(
                self,
                map: M,
            ) -> std::result::Result<Object<T>, M::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(|t| Object(Some(t)))
            }

            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Object<T>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Object(None))
            }

            fn visit_bool<E>(self, _: bool) -> std::result::Result<Object<T>, E> {
                Ok(Object(None))
            }

            fn visit_i64<E>(self, _: i64) -> std::result::Result<Object<T>, E> {
                Ok(Object(None))
            }

            fn visit_u64<E>(self, _: u64) -> std::result::Result<Object<T>, E> {
                Ok(Object(None))
            }

            fn visit_f64<E>(self, _: f64) -> std::result::Result<Object<T>, E> {
                Ok(Object(None))
            }

            fn visit_str<E>(self, _: &str) -> std::result::Result<Object<T>, E> {
                Ok(Object(None))
            }

            fn visit_unit<E>(self) -> std::result::Result<Object<T>, E> {
                Ok(Object(None))
            }

            fn visit_none<E>(self) -> std::result::Result<Object<T>, E> {
                Ok(Object(None))
            }

            fn visit_some<D: Deserializer<'de>>(
                self,
                d: D,
            ) -> std::result::Result<Object<T>, D::Error> {
                d.deserialize_any(self)
            }
        }

        deserializer.deserialize_any(ObjectVisitor(PhantomData))
    }
}

/// `usage`: `tokens` (what the model read and wrote, Cohere's prompt template included),
/// `billed_units` (what is charged, without the template) and `cached_tokens`. A count
/// present (even as `null`, which counts 0) is taken; counts saturate, never overflow.
#[derive(Deserialize, Default)]
pub(super) struct UsageIn {
    #[serde(default)]
    pub(super) tokens: Object<Counts>,
    #[serde(default)]
    pub(super) billed_units: Object<Counts>,
    #[serde(default, deserialize_with = "present")]
    pub(super) cached_tokens: Option<Count>,
}

#[derive(Deserialize, Default, Clone, Copy)]
#[allow(clippy::struct_field_names)] // the vendor's names
pub(super) struct Counts {
    #[serde(default, deserialize_with = "present")]
    pub(super) input_tokens: Option<Count>,
    #[serde(default, deserialize_with = "present")]
    pub(super) output_tokens: Option<Count>,
}

impl UsageIn {
    /// The usage, when the answer reported any.
    ///
    /// The counts are `tokens`, what the model read and wrote: they are what fills the
    /// context window and what a token budget limits (Cohere's prompt template for tools is
    /// many hundred tokens the model reads each turn). `billed_units` stands in for a count
    /// `tokens` lacks. `cached_tokens` is the part of the prompt read from Cohere's cache.
    pub(super) fn usage(&self) -> Option<TokenUsage> {
        let (tokens, billed) = (self.tokens.0, self.billed_units.0);
        let count = |pick: fn(&Counts) -> Option<Count>| {
            tokens
                .as_ref()
                .and_then(pick)
                .or_else(|| billed.as_ref().and_then(pick))
        };
        let prompt = count(|c| c.input_tokens);
        let completion = count(|c| c.output_tokens);
        if prompt.is_none() && completion.is_none() && self.cached_tokens.is_none() {
            return None;
        }
        let (prompt, completion) = (prompt.map_or(0, |c| c.0), completion.map_or(0, |c| c.0));
        Some(
            TokenUsage::new(prompt, completion, prompt.saturating_add(completion))
                .with_cached(self.cached_tokens.map_or(0, |c| c.0)),
        )
    }
}
