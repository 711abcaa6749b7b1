//! `RateLimited`: a token bucket in front of a model.

use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use harness_core::{
    BoxStream, CompletionResponse, Llm, LlmEvent, ModelInfo, Request, Result, TokenCount,
};

struct Bucket {
    tokens: f64,
    refreshed: Instant,
}

/// At most one call every `interval` on average, `burst` at once (a token bucket).
///
/// Each caller reserves its slot under a lock and then waits its own turn, so the limit
/// holds across tasks and threads sharing one instance. A stream reserves once, at its
/// start. Build it with [`LlmExt::rate_limited`](crate::LlmExt::rate_limited).
pub struct RateLimited<M> {
    inner: Arc<M>,
    interval: Duration,
    burst: NonZeroU32,
    bucket: Mutex<Bucket>,
}

impl<M: Llm> RateLimited<M> {
    /// At most one call every `interval` (`Duration::from_millis(500)` is two a second; a
    /// zero interval does not limit), as many at once as the rate allows in a second
    /// (see [`RateLimited::with_burst`]).
    pub fn new(inner: M, interval: Duration) -> Self {
        let burst = default_burst(interval);
        Self {
            inner: Arc::new(inner),
            interval,
            burst,
            bucket: Mutex::new(Bucket {
                tokens: f64::from(burst.get()),
                refreshed: Instant::now(),
            }),
        }
    }

    /// Sets how many calls may go at once after a pause (default: the calls per second,
    /// rounded down, at least 1; `Duration::from_millis(200)`, five a second, lets five go).
    #[must_use]
    pub fn with_burst(mut self, burst: NonZeroU32) -> Self {
        self.burst = burst;
        let bucket = self
            .bucket
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        bucket.tokens = f64::from(burst.get());
        self
    }

    /// The average time between calls.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// How many calls may go at once.
    pub fn burst(&self) -> NonZeroU32 {
        self.burst
    }

    /// The model underneath.
    pub fn inner(&self) -> &M {
        &self.inner
    }

    /// Takes a slot; returns how long to wait before using it.
    fn reserve(&self) -> Duration {
        if self.interval.is_zero() {
            return Duration::ZERO;
        }
        let interval = self.interval.as_secs_f64();
        let mut bucket = self.bucket.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        let elapsed = now.duration_since(bucket.refreshed).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed / interval).min(f64::from(self.burst.get()));
        bucket.refreshed = now;
        let wait = if bucket.tokens >= 1.0 {
            0.0
        } else {
            (1.0 - bucket.tokens) * interval
        };
        // May go negative: later callers queue behind this one.
        bucket.tokens -= 1.0;
        Duration::try_from_secs_f64(wait).unwrap_or(Duration::MAX)
    }
}

/// `max(1, floor(calls per second))`, counted in whole nanoseconds so the floor is exact (a
/// float division can land just under a whole rate).
fn default_burst(interval: Duration) -> NonZeroU32 {
    let per_second = match interval.as_nanos() {
        0 => u128::MAX,
        nanos => Duration::from_secs(1).as_nanos() / nanos,
    };
    let per_second = u32::try_from(per_second).unwrap_or(u32::MAX);
    NonZeroU32::new(per_second).unwrap_or(NonZeroU32::MIN)
}

#[async_trait::async_trait]
impl<M: Llm> Llm for RateLimited<M> {
    async fn generate(&self, request: Request<'_>) -> Result<CompletionResponse> {
        tokio::time::sleep(self.reserve()).await;
        self.inner.generate(request).await
    }

    /// The slot is reserved now; the model's stream (which sends nothing until it is polled)
    /// is read once the slot comes.
    fn stream(self: Arc<Self>, request: Request<'_>) -> BoxStream<'static, Result<LlmEvent>> {
        let wait = self.reserve();
        let answer = Arc::clone(&self.inner).stream(request);
        Box::pin(
            futures_util::stream::once(async move {
                tokio::time::sleep(wait).await;
                answer
            })
            .flatten(),
        )
    }

    /// The model underneath's.
    fn info(&self) -> ModelInfo {
        self.inner.info()
    }

    /// The model underneath's count, not held to the interval: counting is not a model call, and vendors limit their counting endpoints apart.
    async fn count_tokens(&self, request: Request<'_>) -> Result<TokenCount> {
        self.inner.count_tokens(request).await
    }
}
