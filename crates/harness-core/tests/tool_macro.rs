//! `#[tool]`: the schema of every parameter shape, compared as whole JSON values, and what a
//! call does with the model's arguments.

#![allow(
    missing_docs,
    dead_code,
    clippy::unwrap_used,
    clippy::panic,
    clippy::needless_pass_by_value,
    clippy::unused_async
)]

use std::collections::HashMap;
use std::time::{Duration, Instant};

use harness_core::{
    CallOptions, Content, Ctx, Message, Tool, ToolError, ToolErrorKind, Toolbox, tool,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

fn params<T: Tool>(tool: &T) -> Value {
    tool.spec().parameters.clone()
}

// ---------------------------------------------------------------------------------------
// Schemas, one type shape at a time (seed "Tools": the shapes inside the annotations).

/// Scalars.
#[tool]
fn scalars(count: i64, small: u8, ratio: f64, single: f32, flag: bool, text: String) -> String {
    format!("{count} {small} {ratio} {single} {flag} {text}")
}

#[test]
fn scalars_map_to_json_types() {
    assert_eq!(
        params(&Scalars),
        json!({
            "type": "object",
            "properties": {
                "count": {"type": "integer"},
                "small": {"type": "integer", "minimum": 0, "maximum": 255},
                "ratio": {"type": "number"},
                "single": {"type": "number"},
                "flag": {"type": "boolean"},
                "text": {"type": "string"}
            },
            "required": ["count", "small", "ratio", "single", "flag", "text"]
        })
    );
}

/// Sum some numbers.
#[tool]
fn total(values: Vec<i64>, nested: Vec<Vec<String>>) -> i64 {
    values.iter().sum::<i64>() + i64::try_from(nested.len()).unwrap_or(0)
}

#[test]
fn a_vec_is_an_array_of_its_item_type() {
    assert_eq!(
        params(&Total),
        json!({
            "type": "object",
            "properties": {
                "values": {"type": "array", "items": {"type": "integer"}},
                "nested": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}}
            },
            "required": ["values", "nested"]
        })
    );
}

/// Search.
#[tool]
fn search(query: String, limit: Option<u32>, site: std::option::Option<String>) -> String {
    format!("{query} {limit:?} {site:?}")
}

#[test]
fn an_option_keeps_its_type_and_is_not_required() {
    assert_eq!(
        params(&Search),
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "limit": {"type": "integer", "minimum": 0},
                "site": {"type": "string"}
            },
            "required": ["query"]
        })
    );
}

#[derive(Debug, Clone, Copy, JsonSchema, Deserialize)]
enum Unit {
    #[serde(rename = "c")]
    Celsius,
    #[serde(rename = "f")]
    Fahrenheit,
}

/// Convert a temperature.
#[tool]
fn convert(degrees: f64, to: Unit) -> f64 {
    match to {
        Unit::Celsius => (degrees - 32.0) * 5.0 / 9.0,
        Unit::Fahrenheit => degrees * 9.0 / 5.0 + 32.0,
    }
}

#[test]
fn a_fieldless_enum_is_an_enum_of_its_serde_names() {
    assert_eq!(
        params(&Convert),
        json!({
            "type": "object",
            "properties": {
                "degrees": {"type": "number"},
                "to": {"type": "string", "enum": ["c", "f"]}
            },
            "required": ["degrees", "to"]
        })
    );
}

#[derive(Debug, JsonSchema, Deserialize)]
#[serde(untagged)]
enum IdOrName {
    Id(i64),
    Name(String),
}

/// Find a user.
#[tool]
fn find_user(who: IdOrName) -> String {
    format!("{who:?}")
}

#[test]
fn an_untagged_enum_of_two_types_is_any_of() {
    assert_eq!(
        params(&FindUser),
        json!({
            "type": "object",
            "properties": {
                "who": {"anyOf": [{"type": "integer"}, {"type": "string"}]}
            },
            "required": ["who"]
        })
    );
}

/// A place on a map.
#[derive(Debug, JsonSchema, Deserialize, Serialize)]
struct Point {
    x: f64,
    y: f64,
    label: Option<String>,
}

/// Measure the distance between two points.
#[tool]
fn distance(from: Point, to: &Point) -> f64 {
    ((to.x - from.x).powi(2) + (to.y - from.y).powi(2)).sqrt()
}

#[test]
fn a_nested_struct_is_inlined() {
    let point = json!({
        "type": "object",
        "description": "A place on a map.",
        "properties": {
            "x": {"type": "number"},
            "y": {"type": "number"},
            "label": {"type": ["string", "null"]}
        },
        "required": ["x", "y"]
    });
    assert_eq!(
        params(&Distance),
        json!({
            "type": "object",
            "properties": {"from": point, "to": point},
            "required": ["from", "to"]
        })
    );
}

/// Store anything.
///
/// * `payload` - Whatever should be stored.
#[tool]
fn store(payload: Value, tags: HashMap<String, i32>) -> String {
    format!("{payload} {}", tags.len())
}

#[test]
fn a_json_value_is_unconstrained_never_a_string() {
    assert_eq!(
        params(&Store),
        json!({
            "type": "object",
            "properties": {
                "payload": {"description": "Whatever should be stored."},
                "tags": {"type": "object", "additionalProperties": {"type": "integer"}}
            },
            "required": ["payload", "tags"]
        })
    );
}

/// Forecast the weather.
///
/// Reads the forecast service.
///
/// # Arguments
/// * `city` - The city's name,
///   in English.
/// - `days`: How many days ahead.
/// * `units` - `metric` or `imperial`.
#[tool]
fn forecast(
    city: &str,
    #[default(3)] days: u32,
    #[default("metric")] units: String,
    ctx: Ctx,
) -> String {
    let tenant = ctx.deps::<&str>().copied().unwrap_or("nobody");
    format!("{city} {days} {units} for {tenant}")
}

#[test]
fn descriptions_defaults_and_ctx_shape_the_schema() {
    let spec = Forecast.spec();
    assert_eq!(spec.name, "forecast");
    assert_eq!(
        spec.description,
        "Forecast the weather.\n\nReads the forecast service.\n\n# Arguments\n* `city` - \
         The city's name,\n  in English.\n- `days`: How many days ahead.\n* `units` - \
         `metric` or `imperial`."
    );
    assert!(!spec.requires_approval);
    assert_eq!(
        spec.parameters,
        json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city's name, in English."},
                "days": {"type": "integer", "minimum": 0, "description": "How many days ahead.", "default": 3},
                "units": {"type": "string", "description": "`metric` or `imperial`.", "default": "metric"}
            },
            "required": ["city"]
        })
    );
}

/// Ignored: the override wins.
#[tool(
    name = "remove_rows",
    description = "Delete every row in a table.",
    requires_approval
)]
async fn delete_records(table: String) -> String {
    format!("cleared {table}")
}

/// Nothing to say.
#[tool(requires_approval = false)]
fn no_params() {}

#[test]
fn attribute_options_override_name_description_and_gate() {
    let spec = DeleteRecords.spec();
    assert_eq!(spec.name, "remove_rows");
    assert_eq!(spec.description, "Delete every row in a table.");
    assert!(spec.requires_approval);
    assert_eq!(
        spec.to_schema(),
        json!({
            "name": "remove_rows",
            "description": "Delete every row in a table.",
            "parameters": {
                "type": "object",
                "properties": {"table": {"type": "string"}},
                "required": ["table"]
            }
        })
    );
    assert!(!NoParams.spec().requires_approval);
    assert_eq!(
        params(&NoParams),
        json!({"type": "object", "properties": {}})
    );
}

#[test]
fn the_schema_is_built_once_and_shared() {
    let first: *const _ = Forecast.spec();
    let second: *const _ = Forecast.spec();
    assert!(std::ptr::eq(first, second));
    // And the one `Arc` a toolbox and every request hold.
    assert!(std::sync::Arc::ptr_eq(Forecast.spec(), Forecast.spec()));
    let tools = Toolbox::builder().tool(Forecast).build().unwrap();
    assert!(std::sync::Arc::ptr_eq(&tools.specs()[0], Forecast.spec()));
}

// ---------------------------------------------------------------------------------------
// Calls.

#[test]
fn the_function_stays_plain_rust() {
    assert_eq!(
        forecast("Oslo", 1, "metric".into(), Ctx::new()),
        "Oslo 1 metric for nobody"
    );
    assert!(
        (distance(
            Point {
                x: 0.0,
                y: 0.0,
                label: None
            },
            &Point {
                x: 3.0,
                y: 4.0,
                label: None
            }
        ) - 5.0)
            .abs()
            < 1e-9
    );
}

#[tokio::test]
async fn defaults_fill_in_what_the_model_leaves_out() {
    let out = Forecast
        .call(json!({"city": "Oslo"}), Ctx::new())
        .await
        .unwrap();
    assert_eq!(out.text(), "Oslo 3 metric for nobody");
    let out = Forecast
        .call(
            json!({"city": "Oslo", "days": 5, "units": "imperial"}),
            Ctx::new().with_deps("acme"),
        )
        .await
        .unwrap();
    assert_eq!(out.text(), "Oslo 5 imperial for acme");
}

#[tokio::test]
async fn optional_arguments_accept_absence_and_null() {
    let out = Search
        .call(json!({"query": "q", "limit": null}), Ctx::new())
        .await
        .unwrap();
    assert_eq!(out.text(), "q None None");
    let out = Search
        .call(json!({"query": "q", "site": "a.b"}), Ctx::new())
        .await
        .unwrap();
    assert_eq!(out.text(), "q None Some(\"a.b\")");
}

#[tokio::test]
async fn arguments_that_do_not_fit_name_the_problem() {
    let err = Forecast
        .call(json!({"days": 2}), Ctx::new())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid arguments for tool 'forecast': missing field `city`"
    );
    let err = Convert
        .call(json!({"degrees": 1.0, "to": "kelvin"}), Ctx::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::InvalidArguments);
    assert!(
        err.to_string()
            .contains("unknown variant `kelvin`, expected `c` or `f`"),
        "{err}"
    );
    let err = Scalars
        .call(json!("not an object"), Ctx::new())
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("invalid arguments for tool 'scalars'"),
        "{err}"
    );
}

#[tokio::test]
async fn results_render_display_as_text_and_other_serialize_as_json() {
    assert_eq!(
        Total
            .call(json!({"values": [1, 2], "nested": [[]]}), Ctx::new())
            .await
            .unwrap()
            .text(),
        "4"
    );
    assert_eq!(
        NoParams.call(Value::Null, Ctx::new()).await.unwrap(),
        Content::default()
    );
    assert_eq!(
        FindUser
            .call(json!({"who": 7}), Ctx::new())
            .await
            .unwrap()
            .text(),
        "Id(7)"
    );
    assert_eq!(
        Locate
            .call(json!({"name": "home"}), Ctx::new())
            .await
            .unwrap()
            .text(),
        r#"{"x":1.0,"y":2.0,"label":"home"}"#
    );
}

/// Where a named place is.
#[tool]
fn locate(name: String) -> Point {
    Point {
        x: 1.0,
        y: 2.0,
        label: Some(name),
    }
}

#[derive(Debug)]
struct Timeout;

impl std::fmt::Display for Timeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("airline API timed out")
    }
}

/// Book a flight.
#[tool]
async fn book(flight: String) -> Result<String, Timeout> {
    if flight.is_empty() {
        Ok("booked".into())
    } else {
        Err(Timeout)
    }
}

/// Read a file.
#[tool]
fn read_config(path: String) -> anyhow::Result<String> {
    Err(anyhow::anyhow!("not found").context(format!("reading {path}")))
}

/// Ask the operator something.
#[tool]
fn confirm(question: String) -> Result<String, ToolError> {
    Err(ToolError::needs_human(question))
}

#[tokio::test]
async fn an_err_becomes_the_calls_error_with_its_text() {
    let err = Book
        .call(json!({"flight": "LH1"}), Ctx::new())
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "tool 'book' failed: airline API timed out");
    assert_eq!(err.model_text(), "Error: airline API timed out");
    let err = ReadConfig
        .call(json!({"path": "a.toml"}), Ctx::new())
        .await
        .unwrap_err();
    assert_eq!(err.model_text(), "Error: reading a.toml: not found");
}

#[tokio::test]
async fn a_harness_error_keeps_its_kind() {
    let err = Confirm
        .call(json!({"question": "Proceed?"}), Ctx::new())
        .await
        .unwrap_err();
    assert!(err.is_needs_human());
    assert_eq!(err.to_string(), "Proceed?");
}

/// How many messages the run has so far.
#[tool]
fn transcript_length(ctx: &Ctx) -> usize {
    ctx.messages().len()
}

#[tokio::test]
async fn ctx_carries_the_transcript() {
    let ctx = Ctx::new().with_messages(vec![Message::user("a"), Message::assistant("b")]);
    assert_eq!(
        TranscriptLength.call(json!({}), ctx).await.unwrap().text(),
        "2"
    );
    assert_eq!(
        TranscriptLength
            .call(json!({}), Ctx::new())
            .await
            .unwrap()
            .text(),
        "0"
    );
    assert_eq!(
        params(&TranscriptLength),
        json!({"type": "object", "properties": {}})
    );
}

/// Sleep, blocking the thread.
#[tool]
fn nap(millis: u64) -> String {
    std::thread::sleep(Duration::from_millis(millis));
    "rested".into()
}

#[tokio::test(flavor = "current_thread")]
async fn a_sync_tool_runs_on_the_blocking_pool_and_never_stalls_the_others() {
    // On a single-threaded runtime, two blocking tools and a timer: if the tools blocked the
    // runtime thread the timer would fire only after both, about 600 ms in.
    let started = Instant::now();
    let timer = async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        started.elapsed()
    };
    let (a, b, timer_fired) = tokio::join!(
        Nap.call(json!({"millis": 300}), Ctx::new()),
        Nap.call(json!({"millis": 300}), Ctx::new()),
        timer,
    );
    assert_eq!(
        (a.unwrap(), b.unwrap()),
        (Content::from("rested"), Content::from("rested"))
    );
    assert!(
        timer_fired < Duration::from_millis(250),
        "timer waited {timer_fired:?}"
    );
}

#[test]
fn a_sync_tool_works_outside_a_runtime_too() {
    let out = futures_executor_block_on(Nap.call(json!({"millis": 1}), Ctx::new()));
    assert_eq!(out.unwrap().text(), "rested");
}

/// Polls a future to completion on this thread, with no tokio runtime around it.
fn futures_executor_block_on<F: std::future::Future>(future: F) -> F::Output {
    use std::task::{Context, Poll, Wake, Waker};
    struct Noop;
    impl Wake for Noop {
        fn wake(self: std::sync::Arc<Self>) {}
    }
    let waker = Waker::from(std::sync::Arc::new(Noop));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

/// Panics.
#[tool]
fn explode() -> String {
    panic!("kaboom")
}

/// Panics asynchronously.
#[tool]
async fn explode_async() -> String {
    panic!("async kaboom")
}

#[tokio::test]
async fn a_panicking_tool_is_a_failed_call_not_a_crash() {
    let tools = Toolbox::builder()
        .tool(Explode)
        .tool(ExplodeAsync)
        .build()
        .unwrap();
    let err = tools
        .call("explode", json!({}), CallOptions::new())
        .await
        .unwrap_err();
    assert_eq!(err.model_text(), "Error: the tool panicked: kaboom");
    let err = tools
        .call("explode_async", json!({}), CallOptions::new())
        .await
        .unwrap_err();
    assert_eq!(err.model_text(), "Error: the tool panicked: async kaboom");
}
