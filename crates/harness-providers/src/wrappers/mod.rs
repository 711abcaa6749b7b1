//! Wrappers around a model, each itself an [`Llm`](harness_core::Llm), so they compose:
//! `Caching::new(RateLimited::new(Fallback::new(a, vec![b])?, 2.0)?)`. `inner()` reaches the
//! model underneath.

mod caching;
mod fallback;
mod rate_limited;
mod retrying;

pub use caching::Caching;
pub use fallback::Fallback;
pub use rate_limited::RateLimited;
pub use retrying::Retrying;
