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
//! `examples/custom_vendor.rs` in this crate is a whole vendor written with the kit.
//!
//! [`Request`]: harness_core::Request
//! [`CompletionResponse`]: harness_core::CompletionResponse

mod extra;
mod http;
pub mod json;
mod sse;
mod stream;
mod tls;

pub use extra::{WithExtra, with_extra};
pub use http::{HttpClient, HttpConfig, RetryPolicy};
pub use json::Vendor;
pub use sse::{SseDecoder, SseEvent};
pub use stream::{Accumulator, decode, stream};
pub use tls::client_builder;
