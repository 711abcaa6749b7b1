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

/// Text borrowed from the chunk when it has no escapes, owned when it does.
pub(crate) type Text<'a> = Option<Cow<'a, str>>;

/// Appends a borrowed piece, allocating only when the target must grow.
pub(crate) fn push(target: &mut String, piece: Option<&Cow<'_, str>>) -> bool {
    match piece {
        Some(text) if !text.is_empty() => {
            target.push_str(text);
            true
        }
        _ => false,
    }
}
