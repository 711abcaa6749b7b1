//! AWS Bedrock through the Converse and ConverseStream APIs (feature `bedrock`): one wire
//! format for the models Bedrock hosts (Anthropic's Claude, Amazon Nova, Meta's Llama,
//! Mistral, DeepSeek, OpenAI's open-weight models, ...).
//!
//! - `model`: [`Bedrock`] and its builder: region, endpoint, credentials or API key.
//! - `request`: the Converse body, written straight from the request.
//! - `accumulator`: one parser for a Converse answer and ConverseStream's events.
//! - `eventstream`: AWS's binary event-stream framing, cut into events for the stream driver.
//! - `signing`, `credentials`: SigV4 by AWS's signer, credentials by AWS's standard chain.

mod accumulator;
mod credentials;
mod eventstream;
mod model;
mod request;
mod signing;

pub use model::{Bedrock, BedrockBuilder, Guardrail, GuardrailTrace};

pub(crate) use accumulator::ConverseAccumulator;
pub(crate) use eventstream::EventStream;

/// The provider id errors and telemetry report.
pub(crate) const ID: &str = "bedrock";
/// Who answers, as errors say it.
pub(crate) const VENDOR: crate::rest::Vendor<'static> = crate::rest::Vendor::new(ID, "Bedrock");
/// The [`Thinking::provider`](harness_core::Thinking::provider) of reasoning read from, and
/// sent back to, Converse.
const THINKING_FORMAT: &str = "bedrock";
