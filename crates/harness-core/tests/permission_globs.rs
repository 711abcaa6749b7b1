//! The permission matcher against Python's own `fnmatch.fnmatchcase`: every row of
//! `data/fnmatch_table.jsonl` (written by `data/fnmatch_table.py` from CPython: hand-picked
//! edge cases and thousands of random patterns over the characters that matter), through
//! the public `Rule`, as a tool pattern and as an argument pattern. And a rule that cannot
//! mean what it says stops the agent from being built.

#![allow(missing_docs, clippy::unwrap_used, clippy::panic)]

use harness_core::agent::{Agent, Permissions, Rule};
use harness_core::testing::TestModel;
use harness_core::tool;
use serde_json::{Map, Value, json};

const TABLE: &str = include_str!("data/fnmatch_table.jsonl");

#[test]
fn every_row_of_the_fnmatch_table_matches_as_python_does() {
    let mut rows = 0;
    let mut wrong = Vec::new();
    for line in TABLE.lines() {
        let (pattern, text, expected): (String, String, bool) = serde_json::from_str(line).unwrap();
        rows += 1;
        let as_tool = Rule::new(&pattern).matches(&text, &Map::new());
        let mut arguments = Map::new();
        arguments.insert("command".into(), Value::String(text.clone()));
        let as_argument = Rule::new("run_command")
            .arg("command", &pattern)
            .matches("run_command", &arguments);
        if as_tool != expected || as_argument != expected {
            wrong.push(format!("{pattern:?} ~ {text:?}: fnmatch says {expected}"));
        }
    }
    assert!(rows > 10_000, "the table has {rows} rows");
    assert!(
        wrong.is_empty(),
        "{} rows differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// Run a command.
#[tool]
fn run_command(command: String) -> String {
    command
}

#[test]
fn an_agent_with_a_rule_that_cannot_mean_what_it_says_is_not_built() {
    let policy = Permissions::new().deny(Rule::new("run_command").arg("command", "*rm -rf [/"));
    let err = Agent::builder(TestModel::new())
        .tool(RunCommand)
        .permissions(policy)
        .build()
        .unwrap_err();
    assert!(err.is_configuration());
    assert!(
        err.to_string().starts_with(
            "permission rules that cannot mean what they say: deny rule Rule { tool: \
             \"run_command\", arguments: [(\"command\", \"*rm -rf [/\")] }: argument `command` \
             pattern `*rm -rf [/`: the `[` at character 9 opens a class that never closes"
        ),
        "{err}"
    );
    // Written soundly, the same rule builds and denies.
    let policy = Permissions::new().deny(Rule::new("run_command").arg("command", "*rm -rf**"));
    let agent = Agent::builder(TestModel::new())
        .tool(RunCommand)
        .permissions(policy)
        .build()
        .unwrap();
    let arguments = json!({"command": "rm -rf /tmp/x"});
    assert_eq!(
        agent
            .permissions()
            .unwrap()
            .decide("run_command", arguments.as_object().unwrap()),
        Some(harness_core::agent::Decision::Deny)
    );
}
