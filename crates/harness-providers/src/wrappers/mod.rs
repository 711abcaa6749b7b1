//! Wrappers around a model, each itself an [`Llm`], so they compose. [`LlmExt`] builds them
//! on any model: `openai.with_fallback(claude).rate_limited(interval).cached()`; each
//! wrapper's `inner()` reaches the model underneath.

use std::time::Duration;

use harness_core::Llm;

mod caching;
mod fallback;
mod rate_limited;
mod retrying;

pub use caching::Caching;
pub use fallback::Fallback;
pub use rate_limited::RateLimited;
pub use retrying::Retrying;

/// The wrappers as combinators on any model, keeping each wrapper's type (so its settings
/// and counters stay reachable).
///
/// ```
/// use std::time::Duration;
/// use harness_core::testing::TestModel;
/// use harness_providers::LlmExt as _;
///
/// let model = TestModel::new()
///     .with_fallback(TestModel::new().with_text("backup"))
///     .retrying(1)
///     .rate_limited(Duration::from_millis(500))
///     .cached();
/// assert_eq!(model.hits(), 0);
/// assert_eq!(model.inner().interval(), Duration::from_millis(500));
/// ```
pub trait LlmExt: Llm + Sized + 'static {
    /// Tries `fallback` when this model fails with a provider error; see [`Fallback`].
    fn with_fallback(self, fallback: impl Llm + 'static) -> Fallback {
        Fallback::new(self, fallback)
    }

    /// Remembers answers by the exact request, 256 at most; see [`Caching`].
    fn cached(self) -> Caching<Self> {
        Caching::new(self)
    }

    /// At most one call every `interval` on average; see [`RateLimited`].
    fn rate_limited(self, interval: Duration) -> RateLimited<Self> {
        RateLimited::new(self, interval)
    }

    /// Asks again, up to `retries` times, when a turn comes back empty; see [`Retrying`].
    fn retrying(self, retries: u32) -> Retrying<Self> {
        Retrying::new(self, retries)
    }
}

impl<M: Llm + 'static> LlmExt for M {}
