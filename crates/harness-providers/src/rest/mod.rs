//! The kit for writing your own REST vendor: what [`OpenAi`](crate::OpenAi),
//! [`Anthropic`](crate::Anthropic) and [`Gemini`](crate::Gemini) are built from, for a
//! service they do not cover (the Python original's `RestCompletions`).
//!
//! A vendor is three pieces of its own around this kit:
//!
//! - its request body, a `#[derive(Serialize)]` struct borrowing the [`Request`]'s messages,
//!   tools and settings, handed to [`HttpClient::post`] or [`stream()`] as it is (with the
//!   request's vendor fields merged in by [`with_extra`]): the client serialises it once and
//!   sends the same bytes on every retry;
//! - an [`Accumulator`]: it reads one stream event at a time (its own event format, through
//!   the [`SseDecoder`]), hands out text and thinking as they arrive, and assembles the
//!   [`CompletionResponse`] at the end. The same type reads a non-streamed answer, so each
//!   vendor has one parser;
//! - an [`Llm`](harness_core::Llm) implementation that ties them together.
//!
//! What the kit does for it: retries (429, 5xx and transport errors, `Retry-After`,
//! backoff with jitter), timeouts (connect, total, a stream's idle and total time), size
//! caps, a concurrency cap, the checks that make a broken stream an error rather than a short
//! answer, and [`ProviderError`](harness_core::ProviderError)s that keep the status, the
//! vendor's error type and message and a body excerpt. [`json`] holds the error helpers a
//! vendor's parser needs, each naming the service through a [`Vendor`]; [`client_builder`]
//! is reqwest with the kit's TLS, for what the kit does not send.
//!
//! Authentication: a fixed key goes in [`HttpConfig::headers`]. What must be worked out for
//! each attempt goes in [`HttpConfig::auth`], an [`Authenticate`] hook shown the request about
//! to be sent ([`Outgoing`]: method, URL, headers, the exact body bytes) that returns the
//! headers to add. It runs again for every retry, so a signature over the body and a
//! timestamp (AWS SigV4, as the Bedrock provider signs) is made afresh and a token
//! that expired is refreshed; its errors end the request, typed (a
//! [`Configuration`](harness_core::ErrorKind::Configuration) error for missing credentials,
//! a [`Provider`](harness_core::ErrorKind::Provider) error for a token endpoint that failed).
//! [`BearerToken`] is the hook for a bearer token from a [`TokenSource`] or an async function
//! (an identity library's credential, which caches and refreshes its token):
//!
//! ```
//! use std::sync::Arc;
//! use harness_providers::rest::{BearerToken, HttpClient, HttpConfig};
//!
//! let mut config = HttpConfig::new("my-cloud", "https://llm.example.com/v1");
//! config.auth = Some(Arc::new(BearerToken::from_fn(|| async {
//!     Ok::<_, harness_core::Error>("a-token-valid-now".to_owned())
//! })));
//! let client = HttpClient::new(config)?;
//! # Ok::<(), harness_core::Error>(())
//! ```
//!
//! `examples/custom_vendor.rs` in this crate is a whole vendor written with the kit.
//!
//! [`Request`]: harness_core::Request
//! [`CompletionResponse`]: harness_core::CompletionResponse

mod auth;
mod extra;
mod http;
pub mod json;
mod sse;
pub(crate) mod stream;
mod tls;

pub use auth::{Authenticate, BearerToken, Outgoing, TokenSource};
pub use extra::{WithExtra, with_extra};
#[cfg(feature = "bedrock")]
pub(crate) use http::error_chain;
pub use http::{HttpClient, HttpConfig, RetryPolicy};
pub use json::Vendor;
pub use sse::{SseDecoder, SseEvent};
pub use stream::{Accumulator, decode, stream};
pub use tls::client_builder;
