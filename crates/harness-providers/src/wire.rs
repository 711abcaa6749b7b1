//! Small pieces of wire decoding the vendors share.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{Deserializer, SeqAccess, Visitor};

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
        struct FewVisitor<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for FewVisitor<T> {
            type Value = Few<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list or null")
            }

            fn visit_unit<E>(self) -> Result<Few<T>, E> {
                Ok(Few::default())
            }

            fn visit_none<E>(self) -> Result<Few<T>, E> {
                Ok(Few::default())
            }

            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Few<T>, D::Error> {
                d.deserialize_seq(self)
            }

            fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Few<T>, S::Error> {
                let mut few = Few::default();
                if let Some(first) = seq.next_element()? {
                    few.first = Some(first);
                    while let Some(next) = seq.next_element()? {
                        few.rest.push(next);
                    }
                }
                Ok(few)
            }
        }

        deserializer.deserialize_option(FewVisitor(PhantomData))
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
        let value = serde_json::Value::deserialize(deserializer)?;
        Ok(Self(count(&value)))
    }
}

/// A token count from a JSON value, as [`Count`] reads it.
pub(crate) fn count(value: &serde_json::Value) -> u64 {
    match value {
        serde_json::Value::Number(n) => n.as_u64().unwrap_or_else(|| {
            // Negative integers are none; floats (and integers past u64, which serde_json
            // reads as floats) saturate, as a float-to-int cast does.
            n.as_f64()
                .filter(|f| f.is_finite() && *f > 0.0)
                .map_or(0, saturating_u64)
        }),
        _ => 0,
    }
}

#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // saturating by definition
fn saturating_u64(f: f64) -> u64 {
    f as u64
}

/// A count under `key` of a JSON object, 0 when absent or unreadable.
pub(crate) fn count_at(object: &serde_json::Value, key: &str) -> u64 {
    object.get(key).map_or(0, count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_saturate_and_never_fail() {
        assert_eq!(count(&json!(7)), 7);
        assert_eq!(count(&json!(u64::MAX)), u64::MAX);
        assert_eq!(count(&json!(-3)), 0);
        assert_eq!(count(&json!(1e30)), u64::MAX);
        assert_eq!(count(&json!(2.5)), 2);
        assert_eq!(count(&json!("12")), 0);
        assert_eq!(count(&json!(null)), 0);
        let big: serde_json::Value = serde_json::from_str("184467440737095516160").unwrap();
        assert_eq!(count(&big), u64::MAX);
        let wire: Count = serde_json::from_str("-1").unwrap();
        assert_eq!(wire, Count(0));
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
