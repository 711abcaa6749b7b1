//! The connection settings every provider builder shares, and the setters that take them.

use std::time::Duration;

use harness_core::Prices;

use crate::rest::{HttpConfig, RetryPolicy};

/// The connection settings every provider builder shares, set through the methods
/// [`connection_setters!`] writes.
#[derive(Debug, Clone, Default)]
pub(crate) struct Connection {
    pub(crate) api_key: Option<String>,
    pub(crate) base_url: Option<String>,
    pub(crate) max_concurrency: Option<usize>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) connect_timeout: Option<Duration>,
    pub(crate) idle_timeout: Option<Duration>,
    #[allow(clippy::option_option)] // not set (the default stands), or set, perhaps to none
    pub(crate) stream_timeout: Option<Option<Duration>>,
    pub(crate) max_response_bytes: Option<usize>,
    pub(crate) retry: RetryPolicy,
    /// The prices the builder was given, over the price table's.
    pub(crate) prices: Option<Prices>,
}

impl Connection {
    /// The key given to the builder, else the first of `vars` that is set and not blank.
    pub(crate) fn key(&self, vars: &[&str]) -> Option<String> {
        self.api_key
            .clone()
            .or_else(|| {
                vars.iter()
                    .find_map(|var| std::env::var(var).ok().filter(|v| !v.trim().is_empty()))
            })
            .filter(|k| !k.is_empty())
    }

    /// The HTTP configuration: the base URL given, else `base_var` when set, else
    /// `default_base`; the limits as set.
    pub(crate) fn config(
        &self,
        provider: &str,
        default_base: &str,
        base_var: Option<&str>,
    ) -> HttpConfig {
        let base = self
            .base_url
            .clone()
            .or_else(|| {
                base_var.and_then(|var| std::env::var(var).ok().filter(|v| !v.trim().is_empty()))
            })
            .unwrap_or_else(|| default_base.to_owned());
        let mut config = HttpConfig::new(provider, base);
        config.max_concurrency = self.max_concurrency;
        config.retry = self.retry;
        if let Some(t) = self.timeout {
            config.timeout = t;
        }
        if let Some(t) = self.connect_timeout {
            config.connect_timeout = t;
        }
        if let Some(t) = self.idle_timeout {
            config.idle_timeout = t;
        }
        if let Some(t) = self.stream_timeout {
            config.stream_timeout = t;
        }
        if let Some(bytes) = self.max_response_bytes {
            config.max_response_bytes = bytes;
        }
        config
    }
}

/// The connection setters of a provider builder with a `connection: Connection` field: all
/// of them, or (`limits`) all but the key and the base URL, for a builder that takes those
/// in its own terms.
macro_rules! connection_setters {
    () => {
        $crate::connection::connection_setters!(
            @key "The API key; without one, the provider's environment variable is read, and \
                  with neither no authentication header is sent."
        );
    };
    // A provider whose key means something else says so in its own words.
    (@key $key_doc:literal) => {
        #[doc = $key_doc]
        pub fn api_key(mut self, key: impl Into<String>) -> Self {
            self.connection.api_key = Some(key.into());
            self
        }

        /// Another base URL (a proxy, a gateway, a loopback test server).
        pub fn base_url(mut self, url: impl Into<String>) -> Self {
            self.connection.base_url = Some(url.into());
            self
        }

        $crate::connection::connection_setters!(limits);
    };
    (limits) => {
        /// At most this many requests in flight, held across retries and for a stream's
        /// whole body.
        pub fn max_concurrency(mut self, n: usize) -> Self {
            self.connection.max_concurrency = Some(n);
            self
        }

        /// The timeout of a whole non-streamed request, its answer read (default 600 s).
        /// Streams are bounded by [`idle_timeout`](Self::idle_timeout) and
        /// [`stream_timeout`](Self::stream_timeout) instead.
        pub fn timeout(mut self, timeout: std::time::Duration) -> Self {
            self.connection.timeout = Some(timeout);
            self
        }

        /// How long a stream may stay silent (no byte at all), and how long its headers may
        /// take (default 120 s). A stream that keeps sending is never cut by it; a silent
        /// one fails within a quarter of the timeout after it ran out.
        pub fn idle_timeout(mut self, timeout: std::time::Duration) -> Self {
            self.connection.idle_timeout = Some(timeout);
            self
        }

        /// How long a whole stream may take (default one hour); `None` for no limit.
        pub fn stream_timeout(mut self, timeout: Option<std::time::Duration>) -> Self {
            self.connection.stream_timeout = Some(timeout);
            self
        }

        /// The most a response may hold: a non-streamed body, or one event of a stream
        /// (default 64 MiB). A larger one fails as
        /// [`ProviderErrorKind::Malformed`](harness_core::ProviderErrorKind::Malformed)
        /// instead of exhausting memory.
        pub fn max_response_bytes(mut self, bytes: usize) -> Self {
            self.connection.max_response_bytes = Some(bytes);
            self
        }

        /// The connect timeout (default 10 s).
        pub fn connect_timeout(mut self, timeout: std::time::Duration) -> Self {
            self.connection.connect_timeout = Some(timeout);
            self
        }

        /// How failures are retried (default: four attempts, `Retry-After` honoured).
        pub fn retry(mut self, retry: $crate::rest::RetryPolicy) -> Self {
            self.connection.retry = retry;
            self
        }

        /// What the model charges, replacing the built-in price table's entry for it (or
        /// giving it one): what the model's [`info`](harness_core::Llm::info) reports as its
        /// [`prices`](harness_core::ModelInfo::prices), what a run's cost is reckoned with
        /// and what a money budget needs.
        pub fn prices(mut self, prices: harness_core::Prices) -> Self {
            self.connection.prices = Some(prices);
            self
        }
    };
}
pub(crate) use connection_setters;
