//! Vendor fields the library does not type, merged into a request body last
//! ([`ModelSettings::extra`](harness_core::ModelSettings::extra)).

use serde::ser::{Error as _, Serialize, Serializer};
use serde_json::{Map, Value};

/// `body` with `extra` merged in as a JSON merge patch (RFC 7396), as a vendor's request is
/// sent: an object in `extra` merges key by key into the object at the same place in the
/// body, any other value replaces what is there, and `null` removes the key. With no
/// `extra`, the body is written as it is, with nothing in between.
///
/// ```
/// use harness_providers::rest::with_extra;
/// use serde_json::json;
///
/// let body = json!({"model": "m", "generationConfig": {"temperature": 0.2}, "stream": true});
/// let extra = json!({"generationConfig": {"seed": 7}, "stream": null, "service_tier": "flex"});
/// let sent = serde_json::to_value(with_extra(&body, extra.as_object().unwrap())).unwrap();
/// assert_eq!(sent, json!({
///     "model": "m",
///     "generationConfig": {"temperature": 0.2, "seed": 7},
///     "service_tier": "flex",
/// }));
/// ```
pub fn with_extra<'a, B: Serialize + ?Sized>(
    body: &'a B,
    extra: &'a Map<String, Value>,
) -> WithExtra<'a, B> {
    WithExtra { body, extra }
}

/// A request body with vendor fields merged in; see [`with_extra`].
#[derive(Debug)]
pub struct WithExtra<'a, B: ?Sized> {
    body: &'a B,
    extra: &'a Map<String, Value>,
}

impl<B: Serialize + ?Sized> Serialize for WithExtra<'_, B> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.extra.is_empty() {
            return self.body.serialize(serializer);
        }
        let mut merged = serde_json::to_value(self.body).map_err(S::Error::custom)?;
        for (key, value) in self.extra {
            merge_field(&mut merged, key, value);
        }
        merged.serialize(serializer)
    }
}

/// Applies one key of a merge patch to `target`.
fn merge_field(target: &mut Value, key: &str, patch: &Value) {
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(fields) = target else {
        return;
    };
    match patch {
        Value::Null => {
            fields.remove(key);
        }
        Value::Object(inner) => {
            let slot = fields.entry(key.to_owned()).or_insert(Value::Null);
            for (inner_key, inner_value) in inner {
                merge_field(slot, inner_key, inner_value);
            }
        }
        other => {
            fields.insert(key.to_owned(), other.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn merged(body: Value, extra: Value) -> Value {
        let extra = extra.as_object().cloned().unwrap_or_default();
        serde_json::to_value(with_extra(&body, &extra)).unwrap_or_default()
    }

    #[test]
    fn a_patch_merges_objects_replaces_values_and_removes_nulls() {
        // RFC 7396's own example.
        let target = json!({"a": "b", "c": {"d": "e", "f": "g"}});
        let patch = json!({"a": "z", "c": {"f": null}});
        assert_eq!(merged(target, patch), json!({"a": "z", "c": {"d": "e"}}));
        // An object patch over a scalar makes an object; an array is replaced whole.
        assert_eq!(
            merged(
                json!({"a": 1, "b": [1, 2]}),
                json!({"a": {"x": 1}, "b": [3]})
            ),
            json!({"a": {"x": 1}, "b": [3]})
        );
        // A null for a key that is not there changes nothing.
        assert_eq!(merged(json!({"a": 1}), json!({"z": null})), json!({"a": 1}));
    }

    #[test]
    fn no_extra_writes_the_body_as_it_is() {
        let body = json!({"b": 1, "a": 2});
        let text = serde_json::to_string(&with_extra(&body, &Map::new())).unwrap_or_default();
        assert_eq!(text, r#"{"b":1,"a":2}"#);
    }
}
