//! The OpenAI Responses API: the model and its builder (`model.rs`), the request
//! (`request.rs`), the wire types of its answer and events (`events.rs`) and the turn
//! assembled from them (`accumulator.rs`).

mod accumulator;
mod events;
mod model;
mod request;

#[cfg(feature = "replay")]
pub(crate) use accumulator::ResponsesAccumulator;
pub use model::{OpenAiResponses, OpenAiResponsesBuilder};

/// The [`provider`](harness_core::Thinking::provider) of reasoning and hosted calls read from,
/// and sent back to, the Responses API.
pub(crate) const FORMAT: &str = "openai-responses";
