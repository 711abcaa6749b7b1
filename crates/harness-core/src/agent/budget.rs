//! `Budget`: the limits of one run.

use crate::error::{Error, Result};

/// What one run may spend.
///
/// `steps` caps think/act turns (model calls): spending them ends the run with
/// [`StopReason::StepBudget`](super::StopReason::StepBudget) and an empty output rather than an
/// error, since the run is truncated but already paid for. `tokens` caps the agent's
/// cumulative [`TokenUsage::total_tokens`](crate::TokenUsage) and raises
/// [`Error::TokenBudgetExceeded`] the moment it is crossed. `steps(1)` makes an agent
/// single-shot.
///
/// ```
/// use harness_core::agent::Budget;
///
/// let budget = Budget::new().steps(3).tokens(50_000);
/// assert_eq!((budget.max_steps(), budget.max_tokens()), (3, Some(50_000)));
/// assert_eq!(Budget::default().max_steps(), 10);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    steps: usize,
    tokens: Option<u64>,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            steps: 10,
            tokens: None,
        }
    }
}

impl Budget {
    /// Ten steps, no token cap.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the step cap (at least 1; checked when the agent is built).
    pub fn steps(mut self, steps: usize) -> Self {
        self.steps = steps;
        self
    }

    /// Sets the token cap (at least 1; checked when the agent is built).
    pub fn tokens(mut self, tokens: u64) -> Self {
        self.tokens = Some(tokens);
        self
    }

    /// The step cap.
    pub fn max_steps(&self) -> usize {
        self.steps
    }

    /// The token cap, if any.
    pub fn max_tokens(&self) -> Option<u64> {
        self.tokens
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.steps == 0 {
            return Err(Error::configuration(
                "Budget.steps must be at least 1, got 0",
            ));
        }
        if self.tokens == Some(0) {
            return Err(Error::configuration(
                "Budget.tokens must be at least 1 when set, got 0",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_positive_limits_are_configuration_errors() {
        assert!(Budget::new().validate().is_ok());
        let err = Budget::new().steps(0).validate().unwrap_err();
        assert_eq!(err.to_string(), "Budget.steps must be at least 1, got 0");
        let err = Budget::new().tokens(0).validate().unwrap_err();
        assert_eq!(
            err.to_string(),
            "Budget.tokens must be at least 1 when set, got 0"
        );
    }
}
