//! `Budget`: the limits of one run.

use crate::error::{Error, Result};
use crate::response::TokenUsage;

/// What one run may spend: each call of `run` (or a stream) counts from zero, so an agent
/// that serves many requests never fails request N+1 because of requests 1..N.
///
/// Every limit ends the run as `Ok` with its [`StopReason`](super::StopReason), the state whole and the work
/// kept, not as an error: `steps` caps model calls ([`StopReason::StepBudget`](super::StopReason::StepBudget)); the token
/// limits cap what the run's model calls used, checked right after each response, before any
/// tool of that turn runs ([`StopReason::TokenBudget`](super::StopReason::TokenBudget)); `tool_calls` caps the tool calls a
/// run makes, checked before a round runs ([`StopReason::ToolCallBudget`](super::StopReason::ToolCallBudget)). A round or a turn
/// the budget stops is recorded with each call answered "not run", so the transcript stays
/// one a vendor accepts. Limits are checked when the agent is built (each at least 1).
///
/// The agent's lifetime usage stays readable through
/// [`Agent::total_usage`](super::Agent::total_usage); it is never a cap.
///
/// ```
/// use harness_core::agent::Budget;
///
/// let budget = Budget::new().with_steps(3).with_total_tokens(50_000).with_tool_calls(20);
/// assert_eq!((budget.steps(), budget.total_tokens(), budget.tool_calls()), (3, Some(50_000), Some(20)));
/// assert_eq!(Budget::default().steps(), 10);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    steps: usize,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    total_tokens: Option<u64>,
    tool_calls: Option<usize>,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            steps: 10,
            input_tokens: None,
            output_tokens: None,
            total_tokens: None,
            tool_calls: None,
        }
    }
}

impl Budget {
    /// Ten steps, no other limit.
    pub fn new() -> Self {
        Self::default()
    }

    /// At most this many model calls (think/act turns) per run; `with_steps(1)` makes an
    /// agent single-shot.
    pub fn with_steps(mut self, steps: usize) -> Self {
        self.steps = steps;
        self
    }

    /// At most this many input (prompt) tokens over the run's model calls.
    pub fn with_input_tokens(mut self, tokens: u64) -> Self {
        self.input_tokens = Some(tokens);
        self
    }

    /// At most this many output (completion) tokens over the run's model calls.
    pub fn with_output_tokens(mut self, tokens: u64) -> Self {
        self.output_tokens = Some(tokens);
        self
    }

    /// At most this many tokens in all over the run's model calls.
    pub fn with_total_tokens(mut self, tokens: u64) -> Self {
        self.total_tokens = Some(tokens);
        self
    }

    /// At most this many tool calls per run.
    pub fn with_tool_calls(mut self, calls: usize) -> Self {
        self.tool_calls = Some(calls);
        self
    }

    /// The step limit.
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// The input-token limit, if any.
    pub fn input_tokens(&self) -> Option<u64> {
        self.input_tokens
    }

    /// The output-token limit, if any.
    pub fn output_tokens(&self) -> Option<u64> {
        self.output_tokens
    }

    /// The total-token limit, if any.
    pub fn total_tokens(&self) -> Option<u64> {
        self.total_tokens
    }

    /// The tool-call limit, if any.
    pub fn tool_calls(&self) -> Option<usize> {
        self.tool_calls
    }

    /// Which token limit `usage` (a run's so far) has crossed, in words, if any.
    pub(crate) fn tokens_crossed(&self, usage: &TokenUsage) -> Option<String> {
        let over = |limit: Option<u64>, used: u64, what: &str| {
            limit
                .filter(|&limit| used > limit)
                .map(|limit| format!("{used} {what} tokens, over the limit of {limit}"))
        };
        over(self.input_tokens, usage.prompt_tokens, "input")
            .or_else(|| over(self.output_tokens, usage.completion_tokens, "output"))
            .or_else(|| over(self.total_tokens, usage.total_tokens, "total"))
    }

    /// Whether a round of `more` calls, after `made` already, stays within the tool-call
    /// limit.
    pub(crate) fn allows_tool_calls(&self, made: usize, more: usize) -> bool {
        self.tool_calls
            .is_none_or(|limit| made.saturating_add(more) <= limit)
    }

    pub(crate) fn validate(&self) -> Result<()> {
        let zero = |what: &str| {
            Err(Error::configuration(format!(
                "Budget's {what} limit must be at least 1 when set, got 0"
            )))
        };
        // Steps are always set, so their message has no "when set".
        if self.steps == 0 {
            return Err(Error::configuration(
                "Budget's steps must be at least 1, got 0",
            ));
        }
        for (limit, what) in [
            (self.input_tokens, "input_tokens"),
            (self.output_tokens, "output_tokens"),
            (self.total_tokens, "total_tokens"),
        ] {
            if limit == Some(0) {
                return zero(what);
            }
        }
        if self.tool_calls == Some(0) {
            return zero("tool_calls");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_limits_are_configuration_errors() {
        assert!(Budget::new().validate().is_ok());
        let err = Budget::new().with_steps(0).validate().unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::Configuration);
        assert!(
            err.to_string().contains("steps must be at least 1"),
            "{err}"
        );
        let err = Budget::new().with_total_tokens(0).validate().unwrap_err();
        assert!(err.to_string().starts_with("Budget's total_tokens limit"));
        let err = Budget::new().with_tool_calls(0).validate().unwrap_err();
        assert!(err.to_string().starts_with("Budget's tool_calls limit"));
    }

    #[test]
    fn the_first_crossed_token_limit_is_named() {
        let budget = Budget::new().with_input_tokens(10).with_total_tokens(12);
        assert_eq!(budget.tokens_crossed(&TokenUsage::new(10, 2, 12)), None);
        assert_eq!(
            budget
                .tokens_crossed(&TokenUsage::new(11, 0, 11))
                .as_deref(),
            Some("11 input tokens, over the limit of 10")
        );
        assert_eq!(
            budget.tokens_crossed(&TokenUsage::new(5, 8, 13)).as_deref(),
            Some("13 total tokens, over the limit of 12")
        );
        assert!(Budget::new().with_tool_calls(3).allows_tool_calls(1, 2));
        assert!(!Budget::new().with_tool_calls(3).allows_tool_calls(2, 2));
    }
}
