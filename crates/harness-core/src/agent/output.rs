//! Structured output: the synthetic `final_answer` tool and the checks on its arguments.
//! The checks need `jsonschema`, behind the `output` feature; the tool's name and the texts
//! the model reads are always here.

#[cfg(feature = "output")]
pub(crate) use checked::OutputType;

/// The name of the tool a structured answer is given through.
pub const FINAL_TOOL: &str = "final_answer";

/// The text the model reads when it answers in prose although a structured answer was asked
/// for.
#[cfg(feature = "output")]
pub(crate) const ASK_FOR_FINAL_ANSWER: &str = "Answer by calling final_answer.";

/// What the model reads when its answer, asked for in a schema it was sent (a model with
/// native structured output), does not fit it; the problems follow.
#[cfg(feature = "output")]
pub(crate) const ANSWER_DOES_NOT_FIT: &str =
    "Your answer does not fit the schema. Answer again, with JSON only. Problems:";

#[cfg(feature = "output")]
mod checked {
    use std::sync::Arc;

    use jsonschema::error::ValidationErrorKind;
    use schemars::JsonSchema;
    use serde::de::DeserializeOwned;
    use serde_json::Value;

    use super::FINAL_TOOL;
    use crate::error::{Error, Result};
    use crate::request::OutputSchema;
    use crate::tool::{ToolSpec, object_schema_for};

    type Check = dyn Fn(&Value) -> std::result::Result<(), String> + Send + Sync;

    /// An output type: its `final_answer` spec, its schema validator, and a check that the value
    /// deserialises into the Rust type (a schema can be looser than a custom `Deserialize`).
    #[derive(Clone)]
    pub(crate) struct OutputType {
        pub(crate) spec: Arc<ToolSpec>,
        /// The same schema, for a model that takes it natively.
        pub(crate) schema: OutputSchema,
        validator: Arc<jsonschema::Validator>,
        deserializes: Arc<Check>,
    }

    impl OutputType {
        pub(crate) fn of<T: JsonSchema + DeserializeOwned + 'static>() -> Result<Self> {
            let type_name = T::schema_name();
            let parameters = object_schema_for::<T>();
            let is_object = parameters.get("type").and_then(Value::as_str) == Some("object")
                && parameters.get("properties").is_some();
            if !is_object {
                return Err(Error::configuration(format!(
                    "the output type {type_name} must be a struct with named fields (its schema \
                     must be an object); wrap the value in one, e.g. struct Answer {{ value: ... }}"
                )));
            }
            let validator = jsonschema::validator_for(&parameters).map_err(|e| {
                Error::configuration(format!(
                    "the schema of the output type {type_name} is not a valid JSON Schema: {e}"
                ))
            })?;
            let name: String = type_name
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .take(64)
                .collect();
            let schema = OutputSchema::new(name, parameters.clone());
            let spec = ToolSpec::new(
                FINAL_TOOL,
                format!(
                    "Give your final answer as a {type_name}. Call this once, when you have \
                     everything you need; its arguments are the answer."
                ),
                parameters,
            );
            Ok(Self {
                spec: Arc::new(spec),
                schema,
                validator: Arc::new(validator),
                deserializes: Arc::new(|value| {
                    T::deserialize(value).map(drop).map_err(|e| e.to_string())
                }),
            })
        }

        /// Checks a structured answer, reporting every bad field at once, joined with `; `, so
        /// one round trip can fix them all. Nothing is coerced.
        pub(crate) fn check(&self, value: &Value) -> std::result::Result<(), String> {
            let problems: Vec<String> = self
                .validator
                .iter_errors(value)
                .map(|error| {
                    let path = error.instance_path().to_string();
                    let path = path.trim_start_matches('/').replace('/', ".");
                    match error.kind() {
                        ValidationErrorKind::Required { property } => {
                            let name = property
                                .as_str()
                                .map_or_else(|| property.to_string(), str::to_owned);
                            if path.is_empty() {
                                format!("{name}: missing")
                            } else {
                                format!("{path}.{name}: missing")
                            }
                        }
                        _ if path.is_empty() => error.to_string(),
                        _ => format!("{path}: {error}"),
                    }
                })
                .collect();
            if !problems.is_empty() {
                return Err(problems.join("; "));
            }
            (self.deserializes)(value)
        }
    }
}
