//! Seeded property tests of what harness-core reads from outside: a saved `AgentState`
//! (mutated JSON), a model's tool arguments (random JSON through a `#[tool]`), and
//! permission patterns (random patterns and texts).
//!
//! `DEEPHARNESS_FUZZ_CASES` sets the cases per target (2,000 by default; `cargo xtask fuzz`
//! runs 100,000), `DEEPHARNESS_FUZZ_SEED` the base seed. A failing case names its own seed:
//! `DEEPHARNESS_FUZZ_SEED=<seed> DEEPHARNESS_FUZZ_CASES=1` replays it. The test profile keeps
//! overflow checks on, so an overflow is a failure too.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::panic::{AssertUnwindSafe, catch_unwind};

use harness_core::agent::{AgentState, PendingHumanInput, Rule, StopReason};
use harness_core::{
    Block, CallOptions, Image, Message, Thinking, TokenUsage, ToolCall, ToolErrorKind, Toolbox,
    tool,
};
use serde_json::{Map, Value, json};

/// Runs `case` for every seeded case of `target`, naming the seed of the one that fails.
fn cases(target: &str, mut case: impl FnMut(&mut fastrand::Rng)) {
    let count: u64 = std::env::var("DEEPHARNESS_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000);
    let base: u64 = std::env::var("DEEPHARNESS_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_2026);
    for n in 0..count {
        let seed = base.wrapping_add(n);
        let mut rng = fastrand::Rng::with_seed(seed);
        assert!(
            catch_unwind(AssertUnwindSafe(|| case(&mut rng))).is_ok(),
            "{target}: case {n} failed; replay it with DEEPHARNESS_FUZZ_SEED={seed} \
             DEEPHARNESS_FUZZ_CASES=1"
        );
    }
    println!(
        "{target}: {count} cases passed (seeds {base}..{})",
        base.wrapping_add(count)
    );
}

/// Random JSON, `depth` levels deep at most, with the awkward values a vendor or a file can
/// hold: huge and negative numbers, floats, empty and non-ASCII strings.
fn random_json(rng: &mut fastrand::Rng, depth: u32) -> Value {
    match rng.u8(0..if depth == 0 { 6 } else { 8 }) {
        0 => Value::Null,
        1 => Value::Bool(rng.bool()),
        2 => json!(rng.i64(..)),
        3 => json!([u64::MAX, 0, 1, 7, 1 << 53][rng.usize(..5)]),
        4 => json!(rng.f64() * 1e6 - 5e5),
        5 => Value::String(
            ["", "a", "x y", "é✓", "\u{0}", "[", "{\"a\":1}", "12"][rng.usize(..8)].to_owned(),
        ),
        6 => Value::Array(
            (0..rng.usize(..4))
                .map(|_| random_json(rng, depth - 1))
                .collect(),
        ),
        _ => Value::Object(
            (0..rng.usize(..4))
                .map(|i| (format!("k{i}"), random_json(rng, depth - 1)))
                .collect(),
        ),
    }
}

/// Changes one random place of `value`: replaces it with random JSON, removes an object
/// key, or empties a container.
fn mutate(rng: &mut fastrand::Rng, value: &mut Value) {
    let children = match value {
        Value::Object(map) => map.len(),
        Value::Array(items) => items.len(),
        _ => 0,
    };
    if children == 0 || rng.u8(..4) == 0 {
        *value = match rng.u8(..3) {
            0 => random_json(rng, 2),
            1 => Value::Null,
            _ => json!([]),
        };
        return;
    }
    let at = rng.usize(..children);
    match value {
        Value::Object(map) => {
            if rng.u8(..5) == 0 {
                let key = map.keys().nth(at).cloned().unwrap();
                map.remove(&key);
            } else if let Some(child) = map.values_mut().nth(at) {
                mutate(rng, child);
            }
        }
        Value::Array(items) => mutate(rng, &mut items[at]),
        _ => {}
    }
}

/// A state with every kind of field set: blocks, tool calls (one with raw arguments),
/// results, usage, a paused call.
fn full_state() -> AgentState {
    let mut state = AgentState::from(vec![
        Message::system("Be brief."),
        Message::user(vec![
            Block::text("look"),
            Image::from_base64("aGk=", "image/png").into(),
        ]),
        Message::assistant(vec![
            Block::from(Thinking::signed("hm", "sig")),
            Block::text("calling"),
        ])
        .with_tool_calls(vec![
            ToolCall::new("add", json!({"a": 1, "b": 2})).with_id("c1"),
            ToolCall::parse("add", "{\"a\": 1,").with_id("c2"),
        ]),
        Message::tool("3", "add").with_call_id("c1"),
    ]);
    state.usage = TokenUsage::new(10, 5, 15).with_cached(2);
    state.stop_reason = StopReason::Paused;
    state.paused = vec![PendingHumanInput {
        call_id: Some("c3".into()),
        name: "wire".into(),
        question: "Run wire?".into(),
        arguments: Some(Map::from_iter([("amount".to_owned(), json!(5))])),
        approved: None,
    }];
    state
}

#[test]
fn a_saved_state_mutated_anywhere_loads_or_fails_with_a_typed_error() {
    let original = full_state().to_value();
    assert_eq!(
        AgentState::from_value(original.clone()).unwrap(),
        full_state()
    );
    cases("AgentState::from_json", |rng| {
        let mut value = original.clone();
        for _ in 0..rng.usize(1..4) {
            mutate(rng, &mut value);
        }
        let mut text = value.to_string();
        if rng.u8(..4) == 0 {
            // Cut the text anywhere (on a character boundary).
            let cut = rng.usize(..=text.len());
            let cut = (0..=cut).rev().find(|&i| text.is_char_boundary(i)).unwrap();
            text.truncate(cut);
        }
        match AgentState::from_json(&text) {
            // What loads saves and loads again to the same state.
            Ok(state) => assert_eq!(AgentState::from_json(&state.to_json()).unwrap(), state),
            Err(e) => assert!(e.is_configuration(), "{e}"),
        }
    });
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Point {
    x: i32,
    y: i32,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Unit {
    Metric,
    Imperial,
}

/// Takes one of every kind of parameter.
#[tool]
fn every_kind(
    count: u8,
    name: String,
    ratio: Option<f64>,
    tags: Vec<String>,
    at: Point,
    unit: Unit,
    #[default(3)] retries: u32,
) -> String {
    format!(
        "{count}|{name}|{ratio:?}|{}|{},{}|{unit:?}|{retries}",
        tags.join("+"),
        at.x,
        at.y
    )
}

#[test]
fn random_tool_arguments_are_read_or_refused_never_a_panic() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let toolbox = Toolbox::builder().tool(EveryKind).build().unwrap();
    cases("#[tool] arguments", |rng| {
        let valid = rng.bool();
        let mut arguments = json!({
            "count": rng.u8(..),
            "name": "n",
            "tags": ["a", "b"],
            "at": {"x": rng.i32(..), "y": -1},
            "unit": if rng.bool() { "metric" } else { "imperial" },
        });
        if rng.bool() {
            arguments["ratio"] = json!(0.5);
        }
        if !valid {
            for _ in 0..rng.usize(1..3) {
                mutate(rng, &mut arguments);
            }
        }
        let result =
            runtime.block_on(toolbox.call("every_kind", arguments.clone(), CallOptions::new()));
        match result {
            Ok(content) => {
                let text = content.text();
                assert_eq!(text.split('|').count(), 7, "{text}");
            }
            // A bad argument is named; a panic inside the parser would be Failed.
            Err(err) if err.kind() == ToolErrorKind::InvalidArguments => {
                assert_eq!(err.tool(), Some("every_kind"));
                assert!(!err.message().is_empty());
                assert!(!valid, "valid arguments refused: {arguments} -> {err}");
            }
            Err(other) => panic!("{arguments} -> {other:?}"),
        }
    });
}

#[test]
fn random_patterns_never_panic_and_double_stars_are_single_stars() {
    const ALPHABET: &[char] = &[
        'a', 'b', 'z', '-', '!', '^', ']', '[', '*', '?', '\\', '/', 'é',
    ];
    cases("permission patterns", |rng| {
        let pattern: String = (0..rng.usize(..10))
            .map(|_| ALPHABET[rng.usize(..ALPHABET.len())])
            .collect();
        let text: String = (0..rng.usize(..10))
            .map(|_| ALPHABET[rng.usize(..ALPHABET.len())])
            .collect();
        let rule = Rule::new(&pattern);
        let matched = rule.matches(&text, &Map::new());
        let _ = rule.problems();
        // `**` is two stars, which is one star.
        let doubled = pattern.replace('*', "**");
        assert_eq!(Rule::new(&doubled).matches(&text, &Map::new()), matched);
        // A pattern with no special character matches exactly itself.
        if !pattern.contains(['*', '?', '[']) {
            assert_eq!(matched, pattern == text);
        }
    });
}
