//! `Budget`: the limits of one run.

use crate::cost::{Cost, Usd};
use crate::error::{Error, Result};
use crate::response::TokenUsage;

/// What one run may spend: each call of `run` (or a stream) counts from zero, so an agent
/// that serves many requests never fails request N+1 because of requests 1..N.
///
/// Every limit ends the run as `Ok` with its [`StopReason`](super::StopReason), the state whole and the work
/// kept, not as an error: `steps` caps model calls ([`StopReason::StepBudget`](super::StopReason::StepBudget)); the token
/// limits cap what the run's model calls used, checked right after each response, before any
/// tool of that turn runs ([`StopReason::TokenBudget`](super::StopReason::TokenBudget)); `max_cost` caps what the run's
/// model calls cost in dollars at the model's [`Prices`](crate::Prices), checked at the
/// same point ([`StopReason::CostBudget`](super::StopReason::CostBudget)); `tool_calls` caps the tool calls a
/// run makes, checked before a round runs ([`StopReason::ToolCallBudget`](super::StopReason::ToolCallBudget)). A round or a turn
/// the budget stops is recorded with each call answered "not run", so the transcript stays
/// one a vendor accepts. Limits are checked when the agent is built (each at least 1, a
/// money limit more than nothing). A money limit on a model whose
/// [`ModelInfo::prices`](crate::ModelInfo::prices) is unknown fails closed: the run does not
/// start, with a [`Configuration`](crate::ErrorKind::Configuration) error naming the model.
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
/// let budget = Budget::new().with_max_cost(0.50); // fifty cents a run
/// assert_eq!(budget.max_cost().map(|usd| usd.to_string()).as_deref(), Some("$0.50"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    steps: usize,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    total_tokens: Option<u64>,
    max_cost: Option<Usd>,
    tool_calls: Option<usize>,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            steps: 10,
            input_tokens: None,
            output_tokens: None,
            total_tokens: None,
            max_cost: None,
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

    /// At most this many dollars over the run's model calls, priced with the model's
    /// [`ModelInfo::prices`](crate::ModelInfo::prices) (cache reads and writes at their own
    /// prices, reasoning as output). Rounded to the picodollar; a run that crosses it stops
    /// with [`StopReason::CostBudget`](super::StopReason::CostBudget).
    pub fn with_max_cost(mut self, usd: f64) -> Self {
        self.max_cost = Some(Usd::from_dollars(usd));
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

    /// The money limit, if any.
    pub fn max_cost(&self) -> Option<Usd> {
        self.max_cost
    }

    /// The tool-call limit, if any.
    pub fn tool_calls(&self) -> Option<usize> {
        self.tool_calls
    }

    /// The money limit's crossing by `cost` (a run's so far), in words, if it is crossed.
    pub(crate) fn cost_crossed(&self, cost: &Cost) -> Option<String> {
        let spent = cost.total();
        self.max_cost
            .filter(|&limit| spent > limit)
            .map(|limit| format!("{spent} spent, over the limit of {limit}"))
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
        if self.max_cost == Some(Usd::ZERO) {
            // A negative amount or NaN reads as zero too.
            return Err(Error::configuration(
                "Budget's max_cost must be more than $0 when set",
            ));
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
        for bad in [0.0, -1.0, f64::NAN] {
            let err = Budget::new().with_max_cost(bad).validate().unwrap_err();
            assert!(
                err.to_string()
                    .starts_with("Budget's max_cost must be more than $0")
            );
        }
        assert!(Budget::new().with_max_cost(0.000_001).validate().is_ok());
    }

    #[test]
    fn the_money_limit_is_crossed_only_past_it() {
        let budget = Budget::new().with_max_cost(0.01);
        let prices = crate::Prices::per_million(10.0, 10.0);
        let at = TokenUsage::new(1_000, 0, 1_000).cost(&prices);
        assert_eq!(budget.cost_crossed(&at), None);
        let past = TokenUsage::new(1_000, 1, 1_001).cost(&prices);
        assert_eq!(
            budget.cost_crossed(&past).as_deref(),
            Some("$0.01001 spent, over the limit of $0.01")
        );
        assert_eq!(Budget::new().cost_crossed(&past), None);
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
