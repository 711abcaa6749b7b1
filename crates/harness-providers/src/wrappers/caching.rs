//! `Caching`: an in-process LRU of answers.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use harness_core::{
    BoxStream, CompletionResponse, Llm, LlmEvent, ModelInfo, Request, Result, TokenCount, replay,
};
use serde_json::Value;

struct Entry {
    response: CompletionResponse,
    stored: Instant,
    used: u64,
}

#[derive(Default)]
struct Store {
    entries: HashMap<String, Entry>,
    clock: u64,
}

/// Remembers answers by the exact request (messages, tools, settings, output schema), least
/// recently used out first, optionally for at most a time to live. Build it with
/// [`LlmExt::cached`](crate::LlmExt::cached).
///
/// Only sound in front of a deterministic setup; there is no single-flight, so concurrent
/// identical calls all miss. A streamed hit is replayed block by block, then `Completed`.
pub struct Caching<M> {
    inner: Arc<M>,
    capacity: NonZeroUsize,
    ttl: Option<Duration>,
    store: Mutex<Store>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl<M: Llm> Caching<M> {
    /// A cache of up to 256 answers with no expiry.
    pub fn new(inner: M) -> Self {
        Self {
            inner: Arc::new(inner),
            capacity: NonZeroUsize::new(256).unwrap_or(NonZeroUsize::MIN),
            ttl: None,
            store: Mutex::new(Store::default()),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// Sets how many answers are kept (default 256).
    #[must_use]
    pub fn with_capacity(mut self, capacity: NonZeroUsize) -> Self {
        self.capacity = capacity;
        self
    }

    /// Forgets answers older than `ttl` (a zero `ttl` serves nothing from the cache).
    #[must_use]
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// How many answers are kept.
    pub fn capacity(&self) -> NonZeroUsize {
        self.capacity
    }

    /// How long an answer is served, when limited.
    pub fn ttl(&self) -> Option<Duration> {
        self.ttl
    }

    /// The model underneath.
    pub fn inner(&self) -> &M {
        &self.inner
    }

    /// How many calls were answered from the cache.
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// How many calls went to the model.
    pub fn misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }

    /// Forgets every answer.
    pub fn clear(&self) {
        self.lock().entries.clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lookup(&self, key: &str) -> Option<CompletionResponse> {
        let mut store = self.lock();
        store.clock += 1;
        let clock = store.clock;
        let expired = match store.entries.get(key) {
            None => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                return None;
            }
            Some(entry) => self.ttl.is_some_and(|ttl| entry.stored.elapsed() >= ttl),
        };
        if expired {
            store.entries.remove(key);
            self.misses.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let entry = store.entries.get_mut(key)?;
        entry.used = clock;
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(entry.response.clone())
    }

    fn remember(&self, key: String, response: &CompletionResponse) {
        let mut store = self.lock();
        store.clock += 1;
        let used = store.clock;
        store.entries.insert(
            key,
            Entry {
                response: response.clone(),
                stored: Instant::now(),
                used,
            },
        );
        while store.entries.len() > self.capacity.get() {
            let oldest = store
                .entries
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(key) => store.entries.remove(&key),
                None => break,
            };
        }
    }
}

/// The request as canonical JSON (keys sorted), so equal requests share one key; the
/// settings and the output schema are part of it.
fn cache_key(request: &Request<'_>) -> String {
    fn sorted(value: Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<(String, Value)> = map.into_iter().collect();
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
            }
            Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
            other => other,
        }
    }
    let asked = serde_json::json!([request.messages, request.tools]);
    format!(
        "{}{:?}{:?}",
        sorted(asked),
        request.settings,
        request.output
    )
}

#[async_trait::async_trait]
impl<M: Llm> Llm for Caching<M> {
    async fn generate(&self, request: Request<'_>) -> Result<CompletionResponse> {
        let key = cache_key(&request);
        if let Some(hit) = self.lookup(&key) {
            return Ok(hit);
        }
        let response = self.inner.generate(request).await?;
        self.remember(key, &response);
        Ok(response)
    }

    fn stream(self: Arc<Self>, request: Request<'_>) -> BoxStream<'static, Result<LlmEvent>> {
        let key = cache_key(&request);
        if let Some(hit) = self.lookup(&key) {
            return Box::pin(futures_util::stream::iter(replay(Ok(hit))));
        }
        let answer = Arc::clone(&self.inner).stream(request);
        Box::pin(answer.map(move |event| {
            if let Ok(LlmEvent::Completed(response)) = &event {
                self.remember(key.clone(), response);
            }
            event
        }))
    }

    /// The model underneath's.
    fn info(&self) -> ModelInfo {
        self.inner.info()
    }

    /// The model underneath's count (counts are not cached).
    async fn count_tokens(&self, request: Request<'_>) -> Result<TokenCount> {
        self.inner.count_tokens(request).await
    }
}
