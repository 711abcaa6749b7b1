//! The HTTP client every provider (and web search) shares: retries with `Retry-After`,
//! backoff with jitter, timeouts, and a concurrency cap held across retries and for a
//! stream's whole body.

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt as _;
use harness_core::{Error, ProviderError, ProviderErrorKind, Result};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use reqwest::{Response, StatusCode};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

use super::auth::{Authenticate, Outgoing};
use super::json::{self, Vendor};

/// How failed requests are retried.
///
/// Statuses 429, 500, 502, 503, 504 and 529 (Anthropic's "overloaded") and transport errors
/// are retried, four attempts in all by default. Before each retry the client waits what the server's `Retry-After` says
/// (seconds or an HTTP date; Azure OpenAI's `retry-after-ms` first), capped at `max_delay`; without one, `base_delay · 2^attempt`
/// (1, 2, 4 s by default) with up to 25 % jitter, so a fleet of clients does not retry in
/// lockstep. A stream is retried only until its body starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (at least 1).
    pub attempts: u32,
    /// The first backoff delay; doubled on each retry.
    pub base_delay: Duration,
    /// The longest wait before a retry, `Retry-After` included.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 4,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// No retries: one attempt.
    pub fn none() -> Self {
        Self {
            attempts: 1,
            ..Self::default()
        }
    }

    fn backoff(&self, attempt: u32) -> Duration {
        let exp = self
            .base_delay
            .saturating_mul(2_u32.saturating_pow(attempt))
            .min(self.max_delay);
        // Up to 25 % jitter, downwards, so the cap still holds.
        exp.mul_f64(1.0 - fastrand::f64() * 0.25)
    }
}

/// How a client is built: where it talks to, with which headers, how patiently.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// The provider's short id, named in errors (`openai`, `anthropic`, ...).
    pub provider: String,
    /// The base URL requests are relative to, without a trailing slash.
    pub base_url: String,
    /// Headers sent with every request (authentication, versions).
    pub headers: Vec<(String, String)>,
    /// Headers worked out for each attempt, retries included: a request signature, a
    /// bearer token that expires (see [`Authenticate`]). `None` (the default): the fixed
    /// [`headers`](Self::headers) alone.
    pub auth: Option<Arc<dyn Authenticate>>,
    /// The time a connection may take to open (default 10 s).
    pub connect_timeout: Duration,
    /// The time a whole non-streamed request may take, its answer read (default 600 s).
    pub timeout: Duration,
    /// A stream fails when no byte arrives for this long, and so does waiting for a
    /// stream's headers (default 120 s). A stream that keeps sending is never cut by it.
    /// A silence in the body is noticed by checks four times per timeout, so it fails
    /// within a quarter of the timeout after it ran out, never before.
    pub idle_timeout: Duration,
    /// The time a whole stream may take, when set (default one hour); `None` lets a stream
    /// that keeps sending run for ever.
    pub stream_timeout: Option<Duration>,
    /// The most a response may hold: a non-streamed body, or one event of a stream
    /// (default 64 MiB). Larger ones fail rather than exhaust memory.
    pub max_response_bytes: usize,
    /// At most this many requests in flight at once; `None` for no cap.
    pub max_concurrency: Option<usize>,
    /// How failures are retried.
    pub retry: RetryPolicy,
}

impl HttpConfig {
    /// A configuration for `provider` at `base_url`, with the default timeouts and retries.
    pub fn new(provider: impl Into<String>, base_url: impl Into<String>) -> Self {
        Self {
            provider: provider.into(),
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            headers: Vec::new(),
            auth: None,
            connect_timeout: Duration::from_secs(10),
            timeout: Duration::from_secs(600),
            idle_timeout: Duration::from_secs(120),
            stream_timeout: Some(Duration::from_secs(3600)),
            max_response_bytes: 64 << 20,
            max_concurrency: None,
            retry: RetryPolicy::default(),
        }
    }
}

/// A retrying JSON-over-HTTP client for one base URL.
///
/// A failure that survives the retries is a [`Provider`](harness_core::ErrorKind::Provider) error
/// keeping the HTTP status, the vendor's error type and message, and an excerpt of the body.
#[derive(Debug, Clone)]
pub struct HttpClient {
    client: reqwest::Client,
    config: Arc<HttpConfig>,
    semaphore: Option<Arc<Semaphore>>,
    /// The capacity the last request body needed, shared by clones.
    body_hint: Arc<AtomicUsize>,
    /// The URLs requests went to, parsed once, shared by clones.
    endpoints: Arc<Endpoints>,
    /// The headers an [`Authenticate`] hook is shown: the content type and the configured
    /// ones, gathered once (empty without a hook).
    shown_headers: Arc<[(String, String)]>,
}

/// The parsed URL of each path a client posts to. Parsing a URL (its host through IDNA
/// included) took more instructions than serialising the request body, and a client talks to
/// one or two paths for its whole life.
#[derive(Debug, Default)]
struct Endpoints(RwLock<Vec<(Box<str>, reqwest::Url)>>);

impl Endpoints {
    /// More paths than a vendor uses; past it a path is parsed per request, as reqwest would.
    const MAX: usize = 8;

    /// `url` (the absolute form of `path`) parsed, from the cache or parsed now; `None` when
    /// it does not parse, for reqwest to report as it does any bad URL.
    fn get(&self, path: &str, url: &str) -> Option<reqwest::Url> {
        let held = self.0.read().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, parsed)) = held.iter().find(|(p, _)| **p == *path) {
            return Some(parsed.clone());
        }
        drop(held);
        let parsed = reqwest::Url::parse(url).ok()?;
        let mut held = self.0.write().unwrap_or_else(PoisonError::into_inner);
        if held.len() < Self::MAX && !held.iter().any(|(p, _)| **p == *path) {
            held.push((path.into(), parsed.clone()));
        }
        Some(parsed)
    }
}

/// A streamed response whose body has started, with the concurrency slot it holds until the
/// body is read to its end.
pub(crate) struct Streaming {
    pub(crate) response: Response,
    pub(crate) permit: Option<OwnedSemaphorePermit>,
    /// Where it was sent, for the reader's messages (formatted once, for the request).
    pub(crate) url: String,
    /// The timer that bounded the wait for the headers, due an idle timeout after the
    /// request was sent: the reader goes on with it as its first idle check, so a stream
    /// registers one timer, not two.
    pub(crate) timer: Pin<Box<Sleep>>,
}

impl HttpClient {
    /// Builds a client.
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error for `max_concurrency` 0,
    /// `retry.attempts` 0, a base URL that is not an absolute http(s) URL, a header that is
    /// not valid in HTTP, or a TLS setup failure.
    pub fn new(config: HttpConfig) -> Result<Self> {
        if config.max_concurrency == Some(0) {
            return Err(Error::configuration(
                "max_concurrency must be at least 1 when set, got 0",
            ));
        }
        if config.retry.attempts == 0 {
            return Err(Error::configuration(
                "RetryPolicy.attempts must be at least 1, got 0",
            ));
        }
        match reqwest::Url::parse(&config.base_url) {
            Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => {}
            Ok(_) => {
                return Err(Error::configuration(format!(
                    "the base URL {:?} of {} is not an http(s) URL with a host; give one like \
                     https://api.example.com/v1",
                    config.base_url, config.provider
                )));
            }
            Err(e) => {
                return Err(Error::configuration(format!(
                    "the base URL {:?} of {} does not parse ({e}); give an absolute URL like \
                     https://api.example.com/v1",
                    config.base_url, config.provider
                )));
            }
        }
        let mut headers = HeaderMap::new();
        for (name, value) in &config.headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| Error::configuration(format!("invalid header name {name:?}: {e}")))?;
            let mut value = HeaderValue::from_str(value).map_err(|e| {
                Error::configuration(format!(
                    "invalid value for header {name}: {e}; check the API key for stray \
                     characters"
                ))
            })?;
            value.set_sensitive(sensitive(&name));
            headers.insert(name, value);
        }
        // No client-wide timeout: it would cut long streams. A plain request gets
        // `config.timeout` of its own; a stream is bounded by its idle and total timeouts.
        let client = super::tls::client_builder()?
            .default_headers(headers)
            .connect_timeout(config.connect_timeout)
            .build()
            .map_err(|e| Error::configuration(format!("cannot build the HTTP client: {e}")))?;
        let semaphore = config.max_concurrency.map(|n| Arc::new(Semaphore::new(n)));
        let shown_headers = match config.auth {
            Some(_) => std::iter::once(("content-type".to_owned(), JSON.to_owned()))
                .chain(config.headers.iter().cloned())
                .collect(),
            None => Arc::default(),
        };
        Ok(Self {
            client,
            config: Arc::new(config),
            semaphore,
            body_hint: Arc::new(AtomicUsize::new(1024)),
            endpoints: Arc::default(),
            shown_headers,
        })
    }

    /// The configuration the client was built with.
    pub fn config(&self) -> &HttpConfig {
        &self.config
    }

    /// The absolute URL of `path`.
    pub fn url(&self, path: &str) -> String {
        [self.config.base_url.as_str(), path].concat()
    }

    /// POSTs `body` as JSON to `path` and returns the answer's body, retrying as the policy
    /// says: what a vendor reads with its own wire types ([`json::answer`]).
    /// The body is serialised once; every retry sends the same bytes.
    ///
    /// # Errors
    /// A [`Provider`](harness_core::ErrorKind::Provider) error for a failure that survived the
    /// retries, a non-retryable status, or an answer larger than
    /// [`HttpConfig::max_response_bytes`].
    pub async fn post<B: Serialize + ?Sized>(&self, path: &str, body: &B) -> Result<Bytes> {
        let payload = self.payload(path, body)?;
        let _permit = self.acquire().await?;
        let url = self.url(path);
        let response = self
            .send_with_retries(path, &url, payload, &mut Mode::Json)
            .await?;
        self.read_capped(path, response, self.config.max_response_bytes)
            .await
    }

    /// POSTs `body` as JSON to `path` and reads the JSON answer as a [`Value`]: for a service
    /// whose answer is read by hand (web search). A vendor's parser reads [`post`](Self::post)'s
    /// bytes into its own types instead.
    ///
    /// # Errors
    /// As [`post`](Self::post); also a body that is not JSON, and a 200 carrying an
    /// `{"error": ...}` object (gateways and local servers send one), as a
    /// [`Vendor`](ProviderErrorKind::Vendor) error.
    pub async fn post_json<B: Serialize + ?Sized>(&self, path: &str, body: &B) -> Result<Value> {
        let bytes = self.post(path, body).await?;
        let provider = &self.config.provider;
        let vendor = Vendor::new(provider, provider);
        let value: Value = json::answer(vendor, path, &bytes)?;
        if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
            return Err(json::vendor_error(
                vendor,
                error,
                &String::from_utf8_lossy(&bytes),
            ));
        }
        Ok(value)
    }

    /// A request body as the bytes every attempt sends.
    pub(crate) fn payload<B: Serialize + ?Sized>(&self, path: &str, body: &B) -> Result<Bytes> {
        let mut bytes = Vec::with_capacity(self.body_hint.load(Ordering::Relaxed));
        serde_json::to_writer(&mut bytes, body).map_err(|e| {
            Error::configuration(format!("cannot serialise the request to {path}: {e}"))
        })?;
        // The next body of this client is likely about as large (a transcript grows by a
        // turn): start there rather than grow from nothing. A power of two is what growing
        // would have reached anyway, so no memory is added.
        self.body_hint
            .store(bytes.len().next_power_of_two(), Ordering::Relaxed);
        Ok(Bytes::from(bytes))
    }

    /// Reads a body, failing once it holds more than `cap` bytes. A body that came in one
    /// piece is handed on as it came, without a copy.
    async fn read_capped(&self, path: &str, response: Response, cap: usize) -> Result<Bytes> {
        let too_large = |bytes: &[u8]| {
            Error::from(
                ProviderError::new(
                    &self.config.provider,
                    format!(
                        "the response to {path} is larger than {cap} bytes; raise \
                         HttpConfig::max_response_bytes if that is expected"
                    ),
                )
                .with_kind(ProviderErrorKind::Malformed)
                .with_body(&String::from_utf8_lossy(bytes)),
            )
        };
        let mut body = response.bytes_stream();
        let mut first: Option<Bytes> = None;
        let mut joined: Vec<u8> = Vec::new();
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| self.transport_error(path, e))?;
            let held = first.as_ref().map_or(joined.len(), Bytes::len);
            if held + chunk.len() > cap {
                let bytes = first.as_deref().unwrap_or(&joined);
                return Err(too_large(bytes));
            }
            match first.take() {
                None if joined.is_empty() => first = Some(chunk),
                None => joined.extend_from_slice(&chunk),
                Some(earlier) => {
                    joined.reserve(earlier.len() + chunk.len());
                    joined.extend_from_slice(&earlier);
                    joined.extend_from_slice(&chunk);
                }
            }
        }
        Ok(first.unwrap_or_else(|| Bytes::from(joined)))
    }

    /// POSTs `payload` and returns the response once its status is a success, for the caller
    /// to read as a stream. Retries happen only here, before the body starts.
    pub(crate) async fn post_stream(&self, path: &str, payload: Bytes) -> Result<Streaming> {
        let permit = self.acquire().await?;
        let url = self.url(path);
        let mut timer = Box::pin(tokio::time::sleep(self.config.idle_timeout));
        let response = self
            .send_with_retries(path, &url, payload, &mut Mode::Stream(&mut timer))
            .await?;
        Ok(Streaming {
            response,
            permit,
            url,
            timer,
        })
    }

    async fn acquire(&self) -> Result<Option<OwnedSemaphorePermit>> {
        match &self.semaphore {
            None => Ok(None),
            Some(semaphore) => Arc::clone(semaphore)
                .acquire_owned()
                .await
                .map(Some)
                .map_err(|_| Error::configuration("the HTTP client's concurrency cap was closed")),
        }
    }

    async fn send_with_retries(
        &self,
        path: &str,
        url: &str,
        payload: Bytes,
        mode: &mut Mode<'_>,
    ) -> Result<Response> {
        let attempts = self.config.retry.attempts;
        let endpoint = self.endpoints.get(path, url);
        let mut attempt = 0;
        loop {
            let last = attempt + 1 >= attempts;
            let request = match &endpoint {
                Some(parsed) => self.client.post(parsed.clone()),
                None => self.client.post(url),
            };
            let mut request = request
                .header(reqwest::header::CONTENT_TYPE, JSON)
                .body(payload.clone());
            if let Some(auth) = &self.config.auth {
                // Boxed, as the waits below: the hook's future must not size every request's.
                request = Box::pin(self.authenticate(&**auth, url, &payload, request)).await?;
            }
            let sent = match mode {
                Mode::Json => Sent::Answer(request.timeout(self.config.timeout).send().await),
                // A stream's headers must come within the idle timeout, however slowly a
                // server trickles them.
                Mode::Stream(timer) => {
                    if attempt > 0 {
                        timer.as_mut().reset(after(self.config.idle_timeout));
                    }
                    let mut send = std::pin::pin!(request.send());
                    std::future::poll_fn(|cx| match send.as_mut().poll(cx) {
                        Poll::Ready(answer) => Poll::Ready(Sent::Answer(answer)),
                        Poll::Pending => timer.as_mut().poll(cx).map(|()| Sent::NoHeaders),
                    })
                    .await
                }
            };
            let sent = match sent {
                Sent::Answer(answer) => answer,
                Sent::NoHeaders if !last => {
                    let backoff = self.config.retry.backoff(attempt);
                    Box::pin(self.wait_before_retry(path, attempt, backoff)).await;
                    attempt += 1;
                    continue;
                }
                Sent::NoHeaders => {
                    return Err(ProviderError::new(
                        &self.config.provider,
                        format!(
                            "{url} sent no answer within {} s (the idle timeout); raise it \
                             with idle_timeout(..) if the server is that slow to start",
                            self.config.idle_timeout.as_secs_f64()
                        ),
                    )
                    .with_kind(ProviderErrorKind::Timeout)
                    .into());
                }
            };
            let delay = match sent {
                Ok(response) if response.status().is_success() => return Ok(response),
                Ok(response) if !last && retryable(response.status()) => retry_after(&response)
                    .map_or_else(
                        || self.config.retry.backoff(attempt),
                        |d| d.min(self.config.retry.max_delay),
                    ),
                // Boxed, as the wait below: inline, the rare paths' futures would size the
                // request's future, held by every request in flight.
                Ok(response) => return Err(Box::pin(self.status_error(path, response)).await),
                Err(e) if !last && is_transient(&e) => self.config.retry.backoff(attempt),
                Err(e) => return Err(self.transport_error(path, e)),
            };
            Box::pin(self.wait_before_retry(path, attempt, delay)).await;
            attempt += 1;
        }
    }

    /// `request` with the headers `auth` gives this attempt.
    async fn authenticate(
        &self,
        auth: &dyn Authenticate,
        url: &str,
        payload: &[u8],
        mut request: reqwest::RequestBuilder,
    ) -> Result<reqwest::RequestBuilder> {
        let outgoing = Outgoing::new("POST", url, &self.shown_headers, payload);
        for (name, value) in auth.authenticate(&outgoing).await? {
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|e| {
                Error::configuration(format!(
                    "the authentication of {} gave an invalid header name {name:?}: {e}",
                    self.config.provider
                ))
            })?;
            let mut value = HeaderValue::from_str(&value).map_err(|e| {
                Error::configuration(format!(
                    "the authentication of {} gave an invalid value for header {name}: {e}",
                    self.config.provider
                ))
            })?;
            value.set_sensitive(sensitive(&name));
            // Replaces a configured header of that name rather than sending both.
            request = request.header(name, value);
        }
        Ok(request)
    }

    async fn wait_before_retry(&self, path: &str, attempt: u32, delay: Duration) {
        tracing::debug!(
            provider = %self.config.provider,
            path,
            attempt = attempt + 1,
            delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            "retrying"
        );
        tokio::time::sleep(delay).await;
    }

    /// A failed status as a provider error keeping the vendor's own words.
    async fn status_error(&self, path: &str, response: Response) -> Error {
        let status = response.status();
        // Kept for the caller's own retry: a 429 or 503 on the last attempt still says when.
        let wait = retry_after(&response);
        let response_error_type = response
            .headers()
            .get("x-amzn-errortype")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        // Enough to find the vendor's message; a huge error page is not read whole.
        let text = match self.read_capped(path, response, 64 << 10).await {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) => e
                .provider()
                .and_then(ProviderError::body)
                .unwrap_or_default()
                .to_owned(),
        };
        let (error_type, message) = vendor_error(&text);
        // AWS's JSON services name the error in a header: `ThrottlingException:http://...`.
        let error_type = error_type.or_else(|| {
            let header = response_error_type.as_deref()?;
            Some(header.split(':').next().unwrap_or(header).to_owned())
        });
        let message = message.unwrap_or_else(|| {
            format!(
                "{path} answered {} {}",
                status.as_u16(),
                status.canonical_reason().unwrap_or("")
            )
        });
        let mut error = ProviderError::new(&self.config.provider, message)
            .with_status(status.as_u16())
            .with_body(&text);
        if let Some(kind) = error_type {
            error = error.with_error_type(kind);
        }
        if let Some(wait) = wait {
            error = error.with_retry_after(wait);
        }
        error.into()
    }

    /// A request that got no answer, the transport's error kept as the source.
    pub(crate) fn transport_error(&self, path: &str, error: reqwest::Error) -> Error {
        let (what, kind) = if error.is_timeout() {
            ("timed out", ProviderErrorKind::Timeout)
        } else if error.is_connect() {
            ("could not connect", ProviderErrorKind::Connect)
        } else {
            ("failed", ProviderErrorKind::Transport)
        };
        ProviderError::new(
            &self.config.provider,
            format!(
                "request to {} {what}: {}",
                self.url(path),
                error_chain(&error)
            ),
        )
        .with_kind(kind)
        .with_source(error)
        .into()
    }
}

/// How a request's answer is read, which decides how long it may take.
#[derive(Debug)]
enum Mode<'t> {
    /// Read whole, within `HttpConfig::timeout`.
    Json,
    /// Streamed: each attempt's headers within the idle timeout, timed by the timer given
    /// (reset for a retry); the body bounded by the stream reader.
    Stream(&'t mut Pin<Box<Sleep>>),
}

/// The instant `duration` from now; for a duration too long to add, one thirty years away,
/// as tokio's own `sleep` does.
fn after(duration: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(duration)
        .unwrap_or_else(|| now + Duration::from_secs(30 * 365 * 86_400))
}

/// What one attempt to send gave.
enum Sent {
    Answer(reqwest::Result<Response>),
    /// A stream's headers did not come within the idle timeout.
    NoHeaders,
}

/// An error and its causes, joined with `: ` (reqwest's own message hides the cause).
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut detail = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        detail.push_str(": ");
        detail.push_str(&cause.to_string());
        source = cause.source();
    }
    detail
}

/// The content type of every request body.
const JSON: &str = "application/json";

/// Whether a header holds a secret, kept out of debug output.
fn sensitive(name: &HeaderName) -> bool {
    let name = name.as_str();
    name == "authorization" || name.contains("key") || name.contains("token")
}

fn retryable(status: StatusCode) -> bool {
    // 529 is Anthropic's "overloaded", its most common passing failure.
    matches!(status.as_u16(), 429 | 500 | 502 | 503 | 504 | 529)
}

fn is_transient(error: &reqwest::Error) -> bool {
    error.is_connect() || error.is_timeout() || error.is_request()
}

/// `retry-after-ms` (Azure OpenAI's, in milliseconds), else `Retry-After` as seconds
/// (fractions allowed) or an HTTP date.
fn retry_after(response: &Response) -> Option<Duration> {
    let millis = response
        .headers()
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms >= 0.0);
    if let Some(ms) = millis {
        // An absurd value must not overflow a Duration; the cap applies after.
        return Some(Duration::try_from_secs_f64(ms / 1000.0).unwrap_or(Duration::MAX));
    }
    let value = response.headers().get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        // An absurd value (1e30) must not overflow a Duration; the cap applies after.
        return Duration::try_from_secs_f64(seconds)
            .ok()
            .or((seconds.is_finite() && seconds > 0.0).then_some(Duration::MAX));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// The vendor's error type and message, from the bodies OpenAI, Anthropic, Gemini and
/// llama.cpp send: `{"error": {"type"|"status"|"code", "message"}}`.
fn vendor_error(body: &str) -> (Option<String>, Option<String>) {
    let Ok(mut value) = serde_json::from_str::<Value>(body) else {
        return (None, None);
    };
    // Gemini's streaming endpoint wraps its error in a list.
    if let Value::Array(items) = &mut value
        && items.len() == 1
    {
        value = items.swap_remove(0);
    }
    json::error_fields(value.get("error").unwrap_or(&value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_downward_jitter_and_a_cap() {
        let policy = RetryPolicy::default();
        for attempt in 0..3 {
            let delay = policy.backoff(attempt).as_secs_f64();
            let full = f64::from(1_u32 << attempt);
            assert!(delay <= full && delay >= full * 0.75, "{attempt}: {delay}");
        }
        assert!(policy.backoff(10) <= Duration::from_secs(30));
    }

    #[test]
    fn vendor_errors_are_read_from_each_shape() {
        let (kind, message) =
            vendor_error(r#"{"error": {"type": "rate_limit_error", "message": "slow down"}}"#);
        assert_eq!(
            (kind.as_deref(), message.as_deref()),
            (Some("rate_limit_error"), Some("slow down"))
        );
        let (kind, _) = vendor_error(
            r#"{"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": "m"}}"#,
        );
        assert_eq!(kind.as_deref(), Some("INVALID_ARGUMENT"));
        let (kind, message) = vendor_error(
            r#"[{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "quota"}}]"#,
        );
        assert_eq!(
            (kind.as_deref(), message.as_deref()),
            (Some("RESOURCE_EXHAUSTED"), Some("quota"))
        );
        let (kind, message) = vendor_error(r#"{"error": "model 'x' not found"}"#);
        assert_eq!(
            (kind, message.as_deref()),
            (None, Some("model 'x' not found"))
        );
        assert_eq!(vendor_error("<html>"), (None, None));
    }

    #[test]
    fn each_path_is_parsed_once_and_kept_apart_from_the_others() {
        let endpoints = Endpoints::default();
        let a = endpoints.get("/a", "http://example.test/v1/a").unwrap();
        let b = endpoints
            .get("/b?alt=sse", "http://example.test/v1/b?alt=sse")
            .unwrap();
        assert_eq!(a.as_str(), "http://example.test/v1/a");
        assert_eq!(b.as_str(), "http://example.test/v1/b?alt=sse");
        // Cached: the second lookup answers from the path, whatever URL it is given.
        let again = endpoints.get("/a", "ignored once cached").unwrap();
        assert_eq!(again, a);
        assert_eq!(endpoints.0.read().unwrap().len(), 2);
        // A URL that does not parse is left to reqwest, which reports it, and is not kept.
        assert!(endpoints.get("/c", "not a url/c").is_none());
        assert_eq!(endpoints.0.read().unwrap().len(), 2);
        // Past the cap a path is still parsed, just not kept.
        for i in 0..Endpoints::MAX * 2 {
            let path = format!("/p{i}");
            let url = endpoints
                .get(&path, &format!("http://example.test{path}"))
                .unwrap();
            assert_eq!(url.path(), path);
        }
        assert_eq!(endpoints.0.read().unwrap().len(), Endpoints::MAX);
    }

    #[test]
    fn configuration_is_checked() {
        let mut config = HttpConfig::new("x", "http://127.0.0.1:1/");
        assert_eq!(config.base_url, "http://127.0.0.1:1");
        config.max_concurrency = Some(0);
        let err = HttpClient::new(config).unwrap_err();
        assert_eq!(
            err.to_string(),
            "max_concurrency must be at least 1 when set, got 0"
        );
    }
}
