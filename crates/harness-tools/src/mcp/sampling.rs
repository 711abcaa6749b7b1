//! Sampling: a server asking the client's model for a completion (`sampling/createMessage`),
//! served by an [`Llm`] the application chooses, each request gated by its approval.
// Sampling is deprecated for the 2026 protocol (SEP-2577); servers of 2025-11-25 use it.
#![allow(deprecated)]

use std::sync::Arc;

use harness_core::{
    Block, CompletionResponse, Content, FinishReason, Image, Llm, Message, ModelSettings, Request,
};
use rmcp::model::{CreateMessageRequestParams, CreateMessageResult, ErrorCode, ErrorData};
use serde_json::{Value, json};

/// A server's request for a completion, as the approval callback sees it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SamplingRequest {
    /// The server asking, as errors and logs name it.
    pub server: String,
    /// The conversation to complete (user and assistant turns; text and images).
    pub messages: Vec<Message>,
    /// The system prompt the server asks for, if any.
    pub system_prompt: Option<String>,
    /// The most tokens the answer may take.
    pub max_tokens: u32,
    /// The sampling temperature the server asks for, if any.
    pub temperature: Option<f64>,
    /// Where the answer should stop.
    pub stop: Vec<String>,
}

type Approve = dyn Fn(&SamplingRequest) -> bool + Send + Sync;

/// How a server's sampling requests are served: the model that answers them, and the
/// callback that approves each one (for [`McpServer::with_sampling`](super::McpServer::with_sampling)).
///
/// A request the callback refuses is answered with an error (code -1, "the user rejected
/// the sampling request"), as the protocol says; the model is not called.
///
/// ```
/// use harness_core::testing::TestModel;
/// use harness_tools::mcp::{McpServer, Sampling, SamplingRequest};
///
/// # fn demo(server: McpServer) -> McpServer {
/// // Let the server use the model for short requests only.
/// server.with_sampling(
///     Sampling::new(TestModel::new())
///         .with_approval(|request: &SamplingRequest| request.max_tokens <= 1000),
/// )
/// # }
/// ```
#[derive(Clone)]
pub struct Sampling {
    model: Arc<dyn Llm>,
    approve: Arc<Approve>,
}

impl std::fmt::Debug for Sampling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sampling")
            .field("model", &self.model.info().name())
            .finish_non_exhaustive()
    }
}

impl Sampling {
    /// Serves sampling requests with `model`, refusing every one until
    /// [`with_approval`](Self::with_approval) says otherwise: a server spending the
    /// application's tokens is an explicit decision. An `Arc<dyn Llm>` shared with other
    /// code is a model too.
    pub fn new(model: impl Llm) -> Self {
        Self {
            model: Arc::new(model),
            approve: Arc::new(|_: &SamplingRequest| false),
        }
    }

    /// Approves each request for which `approve` returns `true`.
    pub fn with_approval(
        mut self,
        approve: impl Fn(&SamplingRequest) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.approve = Arc::new(approve);
        self
    }

    /// Serves one request: the approval, then the model.
    pub(crate) async fn serve(
        &self,
        server: &str,
        params: &CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        let request = request(server, params)?;
        if !(self.approve)(&request) {
            return Err(ErrorData::new(
                ErrorCode(-1),
                "the user rejected the sampling request",
                None,
            ));
        }
        let mut messages = Vec::with_capacity(request.messages.len() + 1);
        if let Some(system) = &request.system_prompt {
            messages.push(Message::system(system.as_str()));
        }
        messages.extend(request.messages.iter().cloned());
        let mut settings = ModelSettings::new()
            .with_max_tokens(request.max_tokens)
            .with_stop(request.stop.iter().cloned());
        if let Some(temperature) = request.temperature {
            settings = settings.with_temperature(temperature);
        }
        let response = self
            .model
            .generate(Request::new(&messages).with_settings(&settings))
            .await
            .map_err(|e| {
                ErrorData::internal_error(format!("the client's model failed: {e}"), None)
            })?;
        result(&*self.model, &response)
    }
}

/// The request as the approval callback sees it, read through its JSON form: content this
/// client cannot hand a model (audio, tool use) is refused with "invalid params".
pub(crate) fn request(
    server: &str,
    params: &CreateMessageRequestParams,
) -> Result<SamplingRequest, ErrorData> {
    let invalid = |what: String| ErrorData::invalid_params(what, None);
    let mut messages = Vec::with_capacity(params.messages.len());
    for message in &params.messages {
        let wire = serde_json::to_value(message).map_err(|e| invalid(e.to_string()))?;
        let items = match &wire["content"] {
            Value::Array(items) => items.clone(),
            one => vec![one.clone()],
        };
        let mut blocks = Vec::with_capacity(items.len());
        for item in &items {
            match item["type"].as_str() {
                Some("text") => blocks.push(Block::text(item["text"].as_str().unwrap_or(""))),
                Some("image") => blocks.push(Block::Image(Image::from_base64(
                    item["data"].as_str().unwrap_or(""),
                    item["mimeType"].as_str().unwrap_or("image/png"),
                ))),
                other => {
                    return Err(invalid(format!(
                        "sampling content of type {} is not supported by this client",
                        other.unwrap_or("(none)")
                    )));
                }
            }
        }
        let content = Content::from_blocks(blocks);
        messages.push(match wire["role"].as_str() {
            Some("assistant") => Message::assistant(content),
            _ => Message::user(content),
        });
    }
    Ok(SamplingRequest {
        server: server.to_owned(),
        messages,
        system_prompt: params.system_prompt.clone(),
        max_tokens: params.max_tokens,
        temperature: params.temperature.map(f64::from),
        stop: params.stop_sequences.clone().unwrap_or_default(),
    })
}

/// The model's answer as the protocol's result: its text, the model's id, why it stopped.
fn result(
    model: &dyn Llm,
    response: &CompletionResponse,
) -> Result<CreateMessageResult, ErrorData> {
    let stop_reason = if response.finish_reason() == FinishReason::Length {
        "maxTokens"
    } else if response.tool_calls().is_empty() {
        "endTurn"
    } else {
        "toolUse"
    };
    let model_id = response
        .model()
        .map_or_else(|| model.info().model, str::to_owned);
    serde_json::from_value(json!({
        "role": "assistant",
        "content": {"type": "text", "text": response.content()},
        "model": model_id,
        "stopReason": stop_reason,
    }))
    .map_err(|e| ErrorData::internal_error(format!("cannot build the sampling result: {e}"), None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness_core::testing::FunctionModel;

    fn params() -> CreateMessageRequestParams {
        serde_json::from_value(json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "What is 2+2?"}},
                {"role": "assistant", "content": {"type": "text", "text": "Four?"}},
                {"role": "user", "content": [{"type": "text", "text": "Sure?"},
                    {"type": "image", "data": "aGk=", "mimeType": "image/png"}]}
            ],
            "systemPrompt": "Be brief.", "maxTokens": 50, "temperature": 0.5,
            "stopSequences": ["END"]
        }))
        .unwrap()
    }

    #[test]
    fn the_request_reads_as_messages_and_settings() {
        let request = request("srv", &params()).unwrap();
        assert_eq!(request.server, "srv");
        assert_eq!(request.messages.len(), 3);
        assert_eq!(request.messages[1], Message::assistant("Four?"));
        assert_eq!(request.messages[2].content.blocks().len(), 2);
        assert_eq!(request.system_prompt.as_deref(), Some("Be brief."));
        assert_eq!((request.max_tokens, request.temperature), (50, Some(0.5)));
        assert_eq!(request.stop, ["END"]);
    }

    #[tokio::test]
    async fn an_approved_request_is_answered_by_the_model_with_its_settings() {
        let model = FunctionModel::new(|request: &Request<'_>| {
            assert_eq!(request.messages[0], Message::system("Be brief."));
            assert_eq!(request.settings.max_tokens, Some(50));
            assert_eq!(request.settings.stop, ["END"]);
            CompletionResponse::text("4").with_model("m-1")
        });
        let sampling = Sampling::new(model).with_approval(|r: &SamplingRequest| r.max_tokens < 100);
        let answer = sampling.serve("srv", &params()).await.unwrap();
        assert_eq!(
            serde_json::to_value(&answer).unwrap(),
            json!({"role": "assistant", "content": {"type": "text", "text": "4"},
                   "model": "m-1", "stopReason": "endTurn"})
        );
    }

    #[tokio::test]
    async fn a_refused_request_never_reaches_the_model() {
        let model = FunctionModel::new(|_: &Request<'_>| panic!("the model was called"));
        let error = Sampling::new(model)
            .serve("srv", &params())
            .await
            .unwrap_err();
        assert_eq!(error.code, ErrorCode(-1));
        assert!(error.message.contains("rejected"), "{}", error.message);
    }

    #[test]
    fn audio_is_refused_as_invalid_params() {
        let params: CreateMessageRequestParams = serde_json::from_value(json!({
            "messages": [{"role": "user", "content":
                {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"}}],
            "maxTokens": 5
        }))
        .unwrap();
        let error = request("srv", &params).unwrap_err();
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        assert!(error.message.contains("audio"), "{}", error.message);
    }
}
