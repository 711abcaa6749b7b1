//! OpenAI Chat Completions, and every gateway and local server that speaks it: the model
//! and its builder (`model.rs`), the request (`request.rs`), the turn assembled from the
//! answer (`accumulator.rs`) and the tuned reading of each chunk (`chunk.rs`).

mod accumulator;
mod chunk;
mod model;
mod request;

#[cfg(feature = "replay")]
pub(crate) use accumulator::ChatAccumulator;
pub(crate) use model::env_nonempty;
pub use model::{OpenAi, OpenAiBuilder};
