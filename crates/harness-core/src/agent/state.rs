//! `AgentState`: what a run consumed and produced, whole enough to resume in another process.

use std::fmt;

use serde::de::Deserializer;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::cost::Cost;
use crate::error::{Error, ErrorKind, Result};
use crate::message::Message;
use crate::response::TokenUsage;

/// Why a run ended, or that it has not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StopReason {
    /// The run has not ended: a state that has not run yet, or the state an error carries
    /// ([`RunError::state`](crate::RunError::state)). Running it continues.
    #[default]
    Unfinished,
    /// The model answered: the only reason [`AgentState::answered`] is true for.
    Answer,
    /// The step budget ran out; the output is empty.
    StepBudget,
    /// A token limit of the budget was crossed; the output is the text of the response
    /// that crossed it, whose tool calls were not run.
    TokenBudget,
    /// The money limit of the budget was crossed; the output is the text of the response
    /// that crossed it, whose tool calls were not run.
    CostBudget,
    /// The tool-call limit of the budget would have been passed; the round was not run.
    ToolCallBudget,
    /// A call waits for a human: see [`AgentState::paused`].
    Paused,
    /// The model stopped for another reason than finishing (its output limit, a filter).
    Truncated,
    /// Middleware's `after_step` ended the run.
    Stopped,
}

impl StopReason {
    /// The wire name: `unfinished`, `answer`, `step_budget`, `token_budget`, `cost_budget`,
    /// `tool_call_budget`, `paused`, `truncated` or `stopped`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unfinished => "unfinished",
            Self::Answer => "answer",
            Self::StepBudget => "step_budget",
            Self::TokenBudget => "token_budget",
            Self::CostBudget => "cost_budget",
            Self::ToolCallBudget => "tool_call_budget",
            Self::Paused => "paused",
            Self::Truncated => "truncated",
            Self::Stopped => "stopped",
        }
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One call waiting on a human.
///
/// An *approval* (the tool is gated) has not run yet and carries the arguments it will run with;
/// rule on it with [`AgentState::approve`] or [`AgentState::reject`]. A *question* (the tool
/// returned [`ToolError::needs_human`](crate::ToolError::needs_human)) has no arguments: append the
/// human's answer as a tool message for its `call_id` and run the state again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingHumanInput {
    /// The model's id for the call.
    #[serde(default)]
    pub call_id: Option<String>,
    /// The tool's name.
    pub name: String,
    /// What the human is asked.
    pub question: String,
    /// The arguments the call will run with, for an approval.
    #[serde(default)]
    pub arguments: Option<Map<String, Value>>,
    /// The ruling: `None` until decided.
    #[serde(default)]
    pub approved: Option<bool>,
}

impl PendingHumanInput {
    /// True for an approval (the call has not run); false for a question.
    pub fn needs_approval(&self) -> bool {
        self.arguments.is_some()
    }
}

/// What a run consumed and produced.
///
/// Serialises whole (transcript, output as plain data, usage and cost, stop reason, paused
/// calls with their rulings), so a run paused on a human can be stored anywhere and resumed in another
/// process:
///
/// ```
/// use harness_core::agent::AgentState;
/// use harness_core::Message;
///
/// let state = AgentState::from(vec![Message::user("hi")]);
/// let json = state.to_json();
/// assert_eq!(AgentState::from_json(&json)?, state);
///
/// let err = AgentState::from_json(r#"{"messages": [], "plan": []}"#).unwrap_err();
/// assert!(err.to_string().starts_with("unknown state keys: plan."));
/// # Ok::<(), harness_core::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AgentState {
    /// The transcript, every message of it, even when the context policy sent the model less.
    pub messages: Vec<Message>,
    /// The answer: a JSON string for text, the structured value when an output type is set,
    /// `null` before any answer.
    pub output: Value,
    /// Token usage of the run that made this state: its model calls, added to the usage of
    /// the state it resumed (the agent's lifetime figure is
    /// [`Agent::total_usage`](crate::agent::Agent::total_usage)).
    pub usage: TokenUsage,
    /// What the usage cost: each model call's usage priced with the model's
    /// [`ModelInfo::prices`](crate::ModelInfo::prices), added to the cost of the state it
    /// resumed. Zero while the model has no prices. Left out of the JSON when zero.
    #[serde(skip_serializing_if = "Cost::is_zero")]
    pub cost: Cost,
    /// Why the run ended ([`StopReason::Unfinished`] for a state that has not run, or that
    /// an error interrupted).
    pub stop_reason: StopReason,
    /// The calls waiting on a human, in call order.
    pub paused: Vec<PendingHumanInput>,
}

const STATE_KEYS: [&str; 6] = [
    "messages",
    "output",
    "usage",
    "cost",
    "stop_reason",
    "paused",
];

/// The serialised fields, read after the keys have been checked.
#[derive(Deserialize)]
struct StateFields {
    #[serde(default)]
    messages: Vec<Message>,
    #[serde(default)]
    output: Value,
    #[serde(default)]
    usage: TokenUsage,
    #[serde(default)]
    cost: Cost,
    /// `null`, as older states wrote an unfinished run, reads as `Unfinished`.
    #[serde(default, deserialize_with = "stop_reason_or_null")]
    stop_reason: StopReason,
    #[serde(default)]
    paused: Vec<PendingHumanInput>,
}

fn stop_reason_or_null<'de, D: Deserializer<'de>>(deserializer: D) -> Result<StopReason, D::Error> {
    Ok(Option::<StopReason>::deserialize(deserializer)?.unwrap_or_default())
}

impl<'de> Deserialize<'de> for AgentState {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(deserializer)?;
        Self::from_map(map).map_err(serde::de::Error::custom)
    }
}

impl AgentState {
    /// An empty state.
    pub fn new() -> Self {
        Self::default()
    }

    /// A state holding one user message.
    pub fn from_prompt(prompt: impl Into<String>) -> Self {
        Self::from(vec![Message::user(prompt.into())])
    }

    /// True only when the run ended with an answer: check this before trusting `output`.
    pub fn answered(&self) -> bool {
        self.stop_reason == StopReason::Answer
    }

    /// The output's text: the answer for a text agent, `""` otherwise.
    pub fn output_text(&self) -> &str {
        self.output.as_str().unwrap_or("")
    }

    /// The output read as a `T`: the typed result of a structured-output agent.
    ///
    /// # Errors
    /// An [`ErrorKind::Output`] error when the run did not end with an answer (saying why it
    /// stopped and what to do), or when the output does not fit `T`.
    pub fn output_as<T: serde::de::DeserializeOwned>(&self) -> Result<T> {
        if !self.answered() {
            let why = match self.stop_reason {
                StopReason::Unfinished => {
                    "the run has not finished (it has not run yet, or an error ended it: run \
                     the state again to continue)"
                }
                StopReason::StepBudget => {
                    "the step budget ran out first; raise Budget::with_steps, or read \
                     state.messages to see what the model did instead"
                }
                StopReason::Paused => {
                    "a call waits for a human; rule on state.paused with approve() or reject() \
                     and run the state again"
                }
                StopReason::TokenBudget => {
                    "a token limit of the budget was crossed; raise it, or run the state again \
                     to continue"
                }
                StopReason::CostBudget => {
                    "the money limit of the budget was crossed; raise it, or run the state \
                     again to continue"
                }
                StopReason::ToolCallBudget => {
                    "the tool-call limit of the budget was reached; raise it, or run the state \
                     again to continue"
                }
                StopReason::Truncated => {
                    "the model's output was cut off; output_text() has the partial text"
                }
                StopReason::Stopped => "middleware stopped the run",
                StopReason::Answer => "",
            };
            return Err(Error::new(
                ErrorKind::Output,
                format!(
                    "there is no answer to read as {}: {why}",
                    std::any::type_name::<T>()
                ),
            ));
        }
        T::deserialize(&self.output).map_err(|e| {
            Error::new(
                ErrorKind::Output,
                format!(
                    "the output does not fit {}: {e}",
                    std::any::type_name::<T>()
                ),
            )
        })
    }

    /// Approves every call waiting for approval (`call_id` `None`) or the one with that id;
    /// returns the state, so a resume reads `agent.run(state.approve(None)?)`.
    ///
    /// # Errors
    /// A [`Configuration`](crate::ErrorKind::Configuration) error when nothing matches.
    pub fn approve(self, call_id: Option<&str>) -> Result<Self> {
        self.rule(call_id, true)
    }

    /// Rejects every call waiting for approval (or the one with `call_id`): on resume the
    /// model is told `Denied by the user.` as that call's result.
    ///
    /// # Errors
    /// A [`Configuration`](crate::ErrorKind::Configuration) error when nothing matches.
    pub fn reject(self, call_id: Option<&str>) -> Result<Self> {
        self.rule(call_id, false)
    }

    fn rule(mut self, call_id: Option<&str>, approved: bool) -> Result<Self> {
        let mut matched = false;
        for pending in &mut self.paused {
            if call_id.is_none_or(|id| pending.call_id.as_deref() == Some(id)) {
                pending.approved = Some(approved);
                matched = true;
            }
        }
        if matched {
            Ok(self)
        } else {
            Err(Error::configuration(match call_id {
                Some(id) => format!("no paused call to resolve with call_id '{id}'"),
                None => "no paused call to resolve".to_owned(),
            }))
        }
    }

    /// The state as JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The state as a JSON value.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Reads a state from JSON text.
    ///
    /// # Errors
    /// A [`Configuration`](crate::ErrorKind::Configuration) error naming an unknown key or what
    /// does not fit.
    pub fn from_json(text: &str) -> Result<Self> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| Error::configuration(format!("agent state is not valid JSON: {e}")))?;
        Self::from_value(value)
    }

    /// Reads a state from a JSON value: an object of the six fields (missing ones take
    /// their defaults).
    ///
    /// # Errors
    /// A [`Configuration`](crate::ErrorKind::Configuration) error naming an unknown key or what
    /// does not fit.
    pub fn from_value(value: Value) -> Result<Self> {
        match value {
            Value::Object(map) => Self::from_map(map),
            other => Err(Error::configuration(format!(
                "cannot build agent state from {}; pass a prompt, a list of messages, or an \
                 AgentState",
                json_type_name(&other)
            ))),
        }
    }

    fn from_map(map: Map<String, Value>) -> Result<Self> {
        let mut unknown: Vec<&str> = map
            .keys()
            .map(String::as_str)
            .filter(|k| !STATE_KEYS.contains(k))
            .collect();
        if !unknown.is_empty() {
            unknown.sort_unstable();
            return Err(Error::configuration(format!(
                "unknown state keys: {}. An agent owns its own state - keep a graph's fields on \
                 the graph's state",
                unknown.join(", ")
            )));
        }
        let fields: StateFields = serde_json::from_value(Value::Object(map))
            .map_err(|e| Error::configuration(format!("invalid agent state: {e}")))?;
        Ok(Self {
            messages: fields.messages,
            output: fields.output,
            usage: fields.usage,
            cost: fields.cost,
            stop_reason: fields.stop_reason,
            paused: fields.paused,
        })
    }
}

fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// A state that starts from one user prompt.
impl From<&str> for AgentState {
    fn from(prompt: &str) -> Self {
        Self::from_prompt(prompt)
    }
}

/// A state that starts from one user prompt.
impl From<String> for AgentState {
    fn from(prompt: String) -> Self {
        Self::from_prompt(prompt)
    }
}

impl From<Vec<Message>> for AgentState {
    fn from(messages: Vec<Message>) -> Self {
        Self {
            messages,
            ..Self::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn paused() -> AgentState {
        let mut args = Map::new();
        args.insert("amount_usd".into(), json!(50_000));
        AgentState {
            messages: vec![Message::user("pay")],
            output: json!(""),
            usage: TokenUsage::new(1, 2, 3),
            cost: Cost::default(),
            stop_reason: StopReason::Paused,
            paused: vec![
                PendingHumanInput {
                    call_id: Some("a".into()),
                    name: "wire".into(),
                    question: "Run wire?".into(),
                    arguments: Some(args.clone()),
                    approved: None,
                },
                PendingHumanInput {
                    call_id: Some("b".into()),
                    name: "wire".into(),
                    question: "Run wire?".into(),
                    arguments: Some(args),
                    approved: None,
                },
            ],
        }
    }

    #[test]
    fn serialises_every_field_and_round_trips() {
        let state = paused().approve(Some("b")).unwrap();
        let value = state.to_value();
        assert_eq!(
            value,
            json!({
                "messages": [{"role": "user", "content": "pay"}],
                "output": "",
                "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3,
                          "cached_tokens": 0, "cache_write_tokens": 0, "reasoning_tokens": 0},
                "stop_reason": "paused",
                "paused": [
                    {"call_id": "a", "name": "wire", "question": "Run wire?",
                     "arguments": {"amount_usd": 50000}, "approved": null},
                    {"call_id": "b", "name": "wire", "question": "Run wire?",
                     "arguments": {"amount_usd": 50000}, "approved": true}
                ]
            })
        );
        assert_eq!(AgentState::from_value(value).unwrap(), state);
    }

    #[test]
    fn a_cost_is_saved_when_there_is_one_and_read_back_exactly() {
        let prices = crate::Prices::per_million(3.0, 15.0).with_cache_read(0.3);
        let mut state = paused();
        state.cost = state.usage.with_cached(1).cost(&prices);
        let value = state.to_value();
        assert_eq!(
            value["cost"],
            json!({"input": "0.00", "cache_read": "0.0000003", "cache_write": "0.00",
                   "output": "0.00003", "total": "0.0000303"})
        );
        assert_eq!(AgentState::from_value(value).unwrap(), state);
    }

    #[test]
    fn approve_and_reject_match_all_or_one_and_say_when_nothing_matches() {
        let all = paused().reject(None).unwrap();
        assert!(all.paused.iter().all(|p| p.approved == Some(false)));
        let err = paused().approve(Some("zzz")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "no paused call to resolve with call_id 'zzz'"
        );
        let err = AgentState::new().approve(None).unwrap_err();
        assert_eq!(err.to_string(), "no paused call to resolve");
    }

    #[test]
    fn unknown_keys_are_named_sorted_and_missing_ones_default() {
        let err =
            AgentState::from_value(json!({"zeta": 1, "alpha": 2, "messages": []})).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown state keys: alpha, zeta. An agent owns its own state - keep a graph's \
             fields on the graph's state"
        );
        let state = AgentState::from_value(json!({"messages": [{"role": "user", "content": "x"}]}))
            .unwrap();
        assert_eq!(state.usage, TokenUsage::default());
        assert_eq!(state.stop_reason, StopReason::Unfinished);
        let err = AgentState::from_value(json!(3)).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("cannot build agent state from a number")
        );
    }

    #[test]
    fn typed_output_and_answered() {
        #[derive(Deserialize, Debug, PartialEq)]
        struct Weather {
            celsius: i64,
        }
        let state = AgentState {
            output: json!({"celsius": 22}),
            stop_reason: StopReason::Answer,
            ..AgentState::default()
        };
        assert!(state.answered());
        assert_eq!(
            state.output_as::<Weather>().unwrap(),
            Weather { celsius: 22 }
        );
        assert!(state.output_as::<String>().is_err());
        assert_eq!(state.output_text(), "");
    }
}
