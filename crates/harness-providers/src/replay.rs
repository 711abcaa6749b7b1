//! Recorded vendor traffic read through the providers' own parsers, offline: a streamed body
//! from a log or a test fixture, chunked however you like, or a whole JSON answer, read
//! exactly as the provider reads a live one (the same checks, the same errors). For testing
//! against recordings of your own. Feature `replay`.
//!
//! ```
//! use harness_providers::replay::{Format, decode_answer, decode_stream};
//! use serde_json::json;
//!
//! let answer = json!({"choices": [{"message": {"role": "assistant", "content": "hi"},
//!     "finish_reason": "stop"}]});
//! assert_eq!(decode_answer(Format::OpenAi, &answer)?.content(), "hi");
//!
//! let body = b"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n\
//!     data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
//! let mut deltas = Vec::new();
//! let turn = decode_stream(Format::OpenAi, body, 7, |event| deltas.push(event))?;
//! assert_eq!(turn.content(), "hi");
//! # Ok::<(), harness_core::Error>(())
//! ```

use harness_core::{CompletionResponse, LlmEvent, Result};
use serde_json::Value;

use crate::rest::{self, Vendor};

/// A vendor's wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// OpenAI Chat Completions (and every compatible gateway and local server).
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
    /// Gemini `generateContent`, and `streamGenerateContent?alt=sse` for a stream.
    Gemini,
    /// Cohere's v2 chat.
    Cohere,
    /// The OpenAI Responses API.
    OpenAiResponses,
    /// AWS Bedrock Converse, and ConverseStream's binary event stream
    /// (`application/vnd.amazon.eventstream`) for a stream. Feature `bedrock`.
    #[cfg(feature = "bedrock")]
    Bedrock,
}

const OPENAI: Vendor<'static> = Vendor::new("openai", "OpenAI");
const ANTHROPIC: Vendor<'static> = Vendor::new("anthropic", "Anthropic");
const GEMINI: Vendor<'static> = Vendor::new("gemini", "Gemini");
const COHERE: Vendor<'static> = Vendor::new("cohere", "Cohere");
const RESPONSES: Vendor<'static> = Vendor::new("openai-responses", "OpenAI");

/// Reads a whole recorded stream body (server-sent events; AWS's event stream for
/// `Format::Bedrock`) the way the vendor's provider reads a live one, in
/// `chunk`-byte pieces, handing each delta to `emit`; returns the assembled turn.
///
/// # Errors
/// As [`rest::decode`]: what the provider reports for the same bytes from a server.
pub fn decode_stream(
    format: Format,
    body: &[u8],
    chunk: usize,
    emit: impl FnMut(LlmEvent),
) -> Result<CompletionResponse> {
    match format {
        Format::OpenAi => rest::decode(
            crate::openai::ChatAccumulator::new(OPENAI),
            body,
            chunk,
            emit,
        ),
        Format::Anthropic => rest::decode(
            crate::anthropic::MessagesAccumulator::new(ANTHROPIC),
            body,
            chunk,
            emit,
        ),
        Format::Gemini => rest::decode(
            crate::gemini::ContentAccumulator::new(GEMINI),
            body,
            chunk,
            emit,
        ),
        Format::Cohere => rest::decode(
            crate::cohere::ChatAccumulator::new(COHERE),
            body,
            chunk,
            emit,
        ),
        Format::OpenAiResponses => rest::decode(
            crate::responses::ResponsesAccumulator::new(RESPONSES),
            body,
            chunk,
            emit,
        ),
        #[cfg(feature = "bedrock")]
        Format::Bedrock => rest::stream::decode_framed(
            crate::bedrock::ConverseAccumulator::new(crate::bedrock::VENDOR),
            crate::bedrock::EventStream::new(),
            body,
            chunk,
            emit,
        ),
    }
}

/// Reads a non-streamed answer, as the vendor's provider reads one.
///
/// # Errors
/// A provider error naming what a required part of the answer lacks, or the vendor's own
/// error when the answer is one.
pub fn decode_answer(format: Format, answer: &Value) -> Result<CompletionResponse> {
    // Serialising a `Value` cannot fail: its keys are strings.
    let bytes = serde_json::to_vec(answer).unwrap_or_default();
    match format {
        Format::OpenAi => crate::openai::ChatAccumulator::new(OPENAI).answer(&bytes),
        Format::Anthropic => {
            crate::anthropic::MessagesAccumulator::new(ANTHROPIC).answer("/messages", &bytes)
        }
        Format::Gemini => crate::gemini::ContentAccumulator::new(GEMINI)
            .answer("/models/recorded:generateContent", &bytes),
        Format::Cohere => crate::cohere::ChatAccumulator::new(COHERE).answer(&bytes),
        Format::OpenAiResponses => {
            crate::responses::ResponsesAccumulator::new(RESPONSES).answer("/responses", &bytes)
        }
        #[cfg(feature = "bedrock")]
        Format::Bedrock => crate::bedrock::ConverseAccumulator::new(crate::bedrock::VENDOR)
            .answer("/model/recorded/converse", &bytes),
    }
}
