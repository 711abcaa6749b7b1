//! Building a tool's parameter schema from Rust types.
//!
//! Each parameter's type supplies its own schema through `schemars::JsonSchema`; this module
//! puts them into one object schema and tidies what schemars writes for Rust's benefit but a
//! model has no use for.

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, SchemaGenerator};
use serde::Serialize;
use serde_json::{Map, Value};

/// Builds the object schema of a tool's parameters, one parameter at a time.
///
/// `#[tool]` writes the calls for you; use it directly when implementing
/// [`Tool`](crate::Tool) by hand.
///
/// ```
/// use harness_core::ParametersBuilder;
/// use serde_json::json;
///
/// let mut params = ParametersBuilder::new();
/// params.param::<String>("city", Some("The city to look up."), true);
/// params.param_with_default::<u32>("days", None, &3);
/// assert_eq!(params.build(), json!({
///     "type": "object",
///     "properties": {
///         "city": {"type": "string", "description": "The city to look up."},
///         "days": {"type": "integer", "minimum": 0, "default": 3}
///     },
///     "required": ["city"]
/// }));
/// ```
pub struct ParametersBuilder {
    generator: SchemaGenerator,
    properties: Map<String, Value>,
    required: Vec<String>,
}

impl Default for ParametersBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl ParametersBuilder {
    /// An empty object schema.
    pub fn new() -> Self {
        Self {
            generator: Self::settings().into_generator(),
            properties: Map::new(),
            required: Vec::new(),
        }
    }

    /// Inline every named type: several vendors (Gemini among them) do not follow `$ref`.
    /// Only a recursive type still needs `$defs`.
    fn settings() -> SchemaSettings {
        SchemaSettings::draft2020_12().with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
    }

    /// Adds parameter `name` of type `T`. A `required` one must be sent by the model.
    /// For an optional parameter pass the inner type, not `Option<T>`: the schema keeps `T`'s
    /// type and the parameter is simply not required.
    pub fn param<T: JsonSchema + ?Sized>(
        &mut self,
        name: &str,
        description: Option<&str>,
        required: bool,
    ) -> &mut Self {
        let schema = self.schema_of::<T>(description);
        self.properties.insert(name.to_owned(), schema);
        if required {
            self.required.push(name.to_owned());
        }
        self
    }

    /// Adds an optional parameter whose value, when the model leaves it out, is `default`.
    /// The default appears in the schema so the model knows it.
    pub fn param_with_default<T: JsonSchema + Serialize>(
        &mut self,
        name: &str,
        description: Option<&str>,
        default: &T,
    ) -> &mut Self {
        let mut schema = self.schema_of::<T>(description);
        if let (Value::Object(map), Ok(default)) = (&mut schema, serde_json::to_value(default)) {
            map.insert("default".to_owned(), default);
        }
        self.properties.insert(name.to_owned(), schema);
        self
    }

    /// The finished object schema.
    pub fn build(mut self) -> Value {
        let mut root = Map::new();
        root.insert("type".to_owned(), Value::from("object"));
        root.insert("properties".to_owned(), Value::Object(self.properties));
        if !self.required.is_empty() {
            root.insert("required".to_owned(), Value::from(self.required));
        }
        let definitions = self.generator.take_definitions(true);
        if !definitions.is_empty() {
            let mut defs = Value::Object(definitions);
            tidy(&mut defs);
            root.insert("$defs".to_owned(), defs);
        }
        Value::Object(root)
    }

    fn schema_of<T: JsonSchema + ?Sized>(&mut self, description: Option<&str>) -> Value {
        let mut schema = self.generator.subschema_for::<T>().to_value();
        tidy(&mut schema);
        if let Some(description) = description
            && let Value::Object(map) = &mut schema
        {
            map.insert("description".to_owned(), Value::from(description));
        }
        schema
    }
}

/// The schema of `T` as a root object schema, tidied like a parameter's: what a structured
/// output type offers the model as `final_answer`'s parameters.
#[cfg(feature = "output")]
pub(crate) fn object_schema_for<T: JsonSchema>() -> Value {
    let mut generator = ParametersBuilder::settings().into_generator();
    let mut schema = generator.root_schema_for::<T>().to_value();
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
        map.remove("title");
    }
    tidy(&mut schema);
    schema
}

/// Numeric `format`s schemars adds (`int32`, `uint64`, `double`, ...) mean nothing to a model
/// and some vendors reject formats they do not know.
const RUST_NUMBER_FORMATS: &[&str] = &[
    "int", "int8", "int16", "int32", "int64", "int128", "uint", "uint8", "uint16", "uint32",
    "uint64", "uint128", "float", "double",
];

/// Rewrites a schema for a model: boolean schemas become objects (`true` is `{}`, which
/// every vendor accepts), Rust-only number formats go. Walks only the keywords that hold
/// subschemas, so data (`default`, `enum`) and property names are left alone.
fn tidy(schema: &mut Value) {
    match schema {
        Value::Bool(true) => *schema = Value::Object(Map::new()),
        Value::Bool(false) => {
            let mut not = Map::new();
            not.insert("not".to_owned(), Value::Object(Map::new()));
            *schema = Value::Object(not);
        }
        Value::Object(map) => {
            if map
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| RUST_NUMBER_FORMATS.contains(&f))
            {
                map.remove("format");
            }
            for (key, value) in map.iter_mut() {
                match key.as_str() {
                    "properties" | "patternProperties" | "$defs" | "definitions" => {
                        if let Value::Object(named) = value {
                            named.values_mut().for_each(tidy);
                        }
                    }
                    "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                        if let Value::Array(list) = value {
                            list.iter_mut().for_each(tidy);
                        }
                    }
                    "items"
                    | "additionalProperties"
                    | "not"
                    | "contains"
                    | "if"
                    | "then"
                    | "else"
                    | "propertyNames"
                    | "unevaluatedProperties" => tidy(value),
                    _ => {}
                }
            }
        }
        _ => {}
    }
}
