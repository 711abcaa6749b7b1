//! `RateLimited`: a token bucket in front of a model.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use harness_core::{BoxStream, CompletionResponse, Error, Llm, LlmEvent, Request, Result};

struct Bucket {
    tokens: f64,
    refreshed: Instant,
}

/// At most `rps` calls a second on average, `burst` at once.
///
/// Each caller reserves its slot under a lock and then waits its own turn, so the limit
/// holds across tasks and threads sharing one instance. A stream reserves once, at its
/// start.
pub struct RateLimited<M> {
    inner: M,
    rps: f64,
    burst: f64,
    bucket: Mutex<Bucket>,
}

impl<M: Llm> RateLimited<M> {
    /// At most `rps` calls a second, with a burst of `max(1, rps)`.
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error for `rps` that is not
    /// positive.
    pub fn new(inner: M, rps: f64) -> Result<Self> {
        if !(rps.is_finite() && rps > 0.0) {
            return Err(Error::configuration(format!(
                "RateLimited.rps must be positive, got {rps}"
            )));
        }
        let burst = rps.floor().max(1.0);
        Ok(Self {
            inner,
            rps,
            burst,
            bucket: Mutex::new(Bucket {
                tokens: burst,
                refreshed: Instant::now(),
            }),
        })
    }

    /// Sets the burst: how many calls may go at once after a pause (at least 1).
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error for 0.
    pub fn burst(mut self, burst: u32) -> Result<Self> {
        if burst == 0 {
            return Err(Error::configuration(
                "RateLimited.burst must be at least 1 when set, got 0",
            ));
        }
        self.burst = f64::from(burst);
        let bucket = self
            .bucket
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        bucket.tokens = self.burst;
        Ok(self)
    }

    /// The model underneath.
    pub fn inner(&self) -> &M {
        &self.inner
    }

    /// Takes a slot; returns how long to wait before using it.
    fn reserve(&self) -> Duration {
        let mut bucket = self.bucket.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        let elapsed = now.duration_since(bucket.refreshed).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * self.rps).min(self.burst);
        bucket.refreshed = now;
        let wait = if bucket.tokens >= 1.0 {
            0.0
        } else {
            (1.0 - bucket.tokens) / self.rps
        };
        // May go negative: later callers queue behind this one.
        bucket.tokens -= 1.0;
        Duration::try_from_secs_f64(wait).unwrap_or(Duration::MAX)
    }
}

#[async_trait::async_trait]
impl<M: Llm> Llm for RateLimited<M> {
    async fn generate(&self, request: Request<'_>) -> Result<CompletionResponse> {
        tokio::time::sleep(self.reserve()).await;
        self.inner.generate(request).await
    }

    fn stream_events<'a>(&'a self, request: Request<'a>) -> BoxStream<'a, Result<LlmEvent>> {
        Box::pin(
            futures_util::stream::once(async move { tokio::time::sleep(self.reserve()).await })
                .flat_map(move |()| self.inner.stream_events(request)),
        )
    }

    fn native_output(&self) -> bool {
        self.inner.native_output()
    }

    fn name(&self) -> String {
        format!("rate_limited({})", self.inner.name())
    }
}
