//! What a model hands back: the completion, its token usage, why it stopped.

use std::fmt;
use std::ops::{Add, AddAssign};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::content::{Block, merge_blocks, text_of, thinking_of};
use crate::error::Error;
use crate::message::ToolCall;

/// Token counts of one model call, or a sum of several.
///
/// `cached_tokens` is the part of `prompt_tokens` the vendor served from its prompt cache and
/// `cache_write_tokens` what it charged to put a prefix there. Both are *inside*
/// `prompt_tokens`, reported rather than deducted: a cached token still occupies the context
/// window, so a token budget keeps counting the full figure. Likewise `reasoning_tokens` is
/// the part of `completion_tokens` a reasoning model spent thinking (OpenAI's
/// `completion_tokens_details.reasoning_tokens`, Gemini's `thoughtsTokenCount`, Anthropic's
/// `output_tokens_details.thinking_tokens`; 0 where a model does not report it apart, as
/// older Claude models do not).
///
/// The struct is `#[non_exhaustive]` (a vendor's next figure is a new field): build one with
/// [`new`](TokenUsage::new) and the `with_*` setters.
///
/// ```
/// use harness_core::TokenUsage;
///
/// let a = TokenUsage::new(100, 20, 120).with_cached(80).with_reasoning(12);
/// let b = TokenUsage::new(10, 5, 15).with_cache_write(10);
/// let sum = a + b;
/// assert_eq!((sum.prompt_tokens, sum.completion_tokens, sum.total_tokens), (110, 25, 135));
/// assert_eq!((sum.cached_tokens, sum.cache_write_tokens, sum.reasoning_tokens), (80, 10, 12));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TokenUsage {
    /// Tokens of the request.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Tokens of the answer (reasoning included).
    #[serde(default)]
    pub completion_tokens: u64,
    /// What the vendor counts as the total.
    #[serde(default)]
    pub total_tokens: u64,
    /// Prompt tokens served from the vendor's cache.
    #[serde(default)]
    pub cached_tokens: u64,
    /// Prompt tokens written to the vendor's cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Answer tokens the model spent reasoning.
    #[serde(default)]
    pub reasoning_tokens: u64,
}

impl TokenUsage {
    /// Usage with the three main counts and no cache figures.
    pub fn new(prompt_tokens: u64, completion_tokens: u64, total_tokens: u64) -> Self {
        Self {
            prompt_tokens,
            completion_tokens,
            total_tokens,
            cached_tokens: 0,
            cache_write_tokens: 0,
            reasoning_tokens: 0,
        }
    }

    /// Sets the cached prompt tokens.
    pub fn with_cached(mut self, cached_tokens: u64) -> Self {
        self.cached_tokens = cached_tokens;
        self
    }

    /// Sets the prompt tokens written to the cache.
    pub fn with_cache_write(mut self, cache_write_tokens: u64) -> Self {
        self.cache_write_tokens = cache_write_tokens;
        self
    }

    /// Sets the answer tokens spent reasoning.
    pub fn with_reasoning(mut self, reasoning_tokens: u64) -> Self {
        self.reasoning_tokens = reasoning_tokens;
        self
    }
}

impl Add for TokenUsage {
    type Output = Self;

    fn add(mut self, rhs: Self) -> Self {
        self += rhs;
        self
    }
}

impl AddAssign for TokenUsage {
    fn add_assign(&mut self, rhs: Self) {
        // Saturating: a sum of counts can never meaningfully wrap, and a panic here would
        // end a run over bookkeeping.
        self.prompt_tokens = self.prompt_tokens.saturating_add(rhs.prompt_tokens);
        self.completion_tokens = self.completion_tokens.saturating_add(rhs.completion_tokens);
        self.total_tokens = self.total_tokens.saturating_add(rhs.total_tokens);
        self.cached_tokens = self.cached_tokens.saturating_add(rhs.cached_tokens);
        self.cache_write_tokens = self
            .cache_write_tokens
            .saturating_add(rhs.cache_write_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(rhs.reasoning_tokens);
    }
}

impl std::iter::Sum for TokenUsage {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Self::default(), Add::add)
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum FinishReason {
    /// It finished its turn (an answer or tool calls).
    #[default]
    Stop,
    /// It hit its output limit; the turn is cut short.
    Length,
    /// The vendor's content filter stopped it.
    Filtered,
    /// The model tried to call a tool and the vendor dropped the call, unread: Gemini's
    /// `MALFORMED_FUNCTION_CALL` (arguments its decoder could not read) and
    /// `UNEXPECTED_TOOL_CALL` (a tool the request did not offer), Groq's `tool_use_failed`
    /// (a call that does not fit the tool's schema, refused with a 400), llama.cpp's and
    /// Ollama's 500 for a call whose arguments they could not parse. The turn carries no tool
    /// calls, only whatever text came before the broken one;
    /// [`CompletionResponse::finish_message`] has the vendor's words when it gave any. The
    /// agent tells the model and asks again rather than taking that text as its answer.
    #[serde(rename = "malformed_tool_call")]
    MalformedToolCall,
    /// A reason this library does not map.
    Other,
}

impl FinishReason {
    /// The wire name: `stop`, `length`, `filtered`, `malformed_tool_call` or `other`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stop => "stop",
            Self::Length => "length",
            Self::Filtered => "filtered",
            Self::MalformedToolCall => "malformed_tool_call",
            Self::Other => "other",
        }
    }
}

impl fmt::Display for FinishReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How hard a reasoning model should think.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningLevel {
    /// A 1024-token thinking budget.
    Low,
    /// A 4096-token thinking budget.
    Medium,
    /// A 16000-token thinking budget.
    High,
}

impl ReasoningLevel {
    /// The thinking budget vendors that take a token count are sent.
    pub fn budget_tokens(self) -> u32 {
        match self {
            Self::Low => 1024,
            Self::Medium => 4096,
            Self::High => 16000,
        }
    }

    /// The wire name: `low`, `medium` or `high`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }
}

impl fmt::Display for ReasoningLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ReasoningLevel {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "low" => Ok(Self::Low),
            "medium" => Ok(Self::Medium),
            "high" => Ok(Self::High),
            other => Err(Error::configuration(format!(
                "unknown reasoning level '{other}'; use low, medium or high"
            ))),
        }
    }
}

/// One model turn: its text and blocks, the tools it asked for, its usage and why it stopped.
///
/// Content and blocks are kept consistent: build from text and the blocks are one text block;
/// build from blocks and the content is their text (thinking left out). Two responses are
/// equal when their parts are.
///
/// ```
/// use harness_core::{Block, CompletionResponse, Thinking};
///
/// let r = CompletionResponse::from_blocks(vec![Thinking::new("hm").into(), Block::text("Hi")]);
/// assert_eq!(r.content(), "Hi");
/// assert_eq!(r.thinking(), "hm");
/// assert_eq!(CompletionResponse::text("Hi"), CompletionResponse::from_blocks(vec![Block::text("Hi")]));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompletionResponse {
    content: String,
    blocks: Vec<Block>,
    tool_calls: Vec<ToolCall>,
    usage: Option<TokenUsage>,
    finish_reason: FinishReason,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    finish_message: Option<String>,
}

impl CompletionResponse {
    /// A text answer.
    pub fn text(content: impl Into<String>) -> Self {
        let content = content.into();
        let blocks = if content.is_empty() {
            Vec::new()
        } else {
            vec![Block::text(content.clone())]
        };
        Self {
            content,
            blocks,
            ..Self::default()
        }
    }

    /// A turn made of `blocks` (adjacent text, and equally signed thinking, merged).
    pub fn from_blocks(blocks: Vec<Block>) -> Self {
        let blocks = merge_blocks(blocks);
        Self {
            content: text_of(&blocks),
            blocks,
            ..Self::default()
        }
    }

    /// A turn that only calls tools.
    pub fn from_tool_calls(tool_calls: Vec<ToolCall>) -> Self {
        Self::default().with_tool_calls(tool_calls)
    }

    /// Sets the tool calls.
    pub fn with_tool_calls(mut self, tool_calls: Vec<ToolCall>) -> Self {
        self.tool_calls = tool_calls;
        self
    }

    /// Sets the usage.
    pub fn with_usage(mut self, usage: TokenUsage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Sets the finish reason.
    pub fn with_finish_reason(mut self, finish_reason: FinishReason) -> Self {
        self.finish_reason = finish_reason;
        self
    }

    /// Sets the vendor's id for this response (OpenAI's `id`, Anthropic's message `id`,
    /// Gemini's `responseId`).
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Sets the model that answered, as the vendor named it (often more precise than the
    /// model asked for: a dated snapshot).
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Sets what the vendor said about why the turn ended, beside its finish reason (Gemini's
    /// `finishMessage`).
    pub fn with_finish_message(mut self, message: impl Into<String>) -> Self {
        self.finish_message = Some(message.into());
        self
    }

    /// What the vendor said about why the turn ended, when it said anything: for a
    /// [`FinishReason::MalformedToolCall`], often the broken call itself.
    pub fn finish_message(&self) -> Option<&str> {
        self.finish_message.as_deref()
    }

    /// The vendor's id for this response, when it sent one.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The model that answered, as the vendor named it, when it said.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// The answer's text, thinking left out.
    pub fn content(&self) -> &str {
        &self.content
    }

    /// The turn's blocks in order, thinking included.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// The tools the model asked for, in its order.
    pub fn tool_calls(&self) -> &[ToolCall] {
        &self.tool_calls
    }

    /// The vendor's token counts, when it reported them.
    pub fn usage(&self) -> Option<&TokenUsage> {
        self.usage.as_ref()
    }

    /// Why the model stopped.
    pub fn finish_reason(&self) -> FinishReason {
        self.finish_reason
    }

    /// The concatenated thinking text (empty when there was none).
    pub fn thinking(&self) -> String {
        thinking_of(&self.blocks)
    }

    /// True when the turn has neither text nor tool calls.
    pub fn is_empty(&self) -> bool {
        self.content.is_empty() && self.tool_calls.is_empty()
    }

    /// Takes the parts apart: blocks, tool calls, usage, finish reason.
    pub fn into_parts(self) -> (Vec<Block>, Vec<ToolCall>, Option<TokenUsage>, FinishReason) {
        (self.blocks, self.tool_calls, self.usage, self.finish_reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::Thinking;
    use serde_json::json;

    #[test]
    fn reasoning_levels_have_the_documented_budgets() {
        assert_eq!(
            [
                ReasoningLevel::Low,
                ReasoningLevel::Medium,
                ReasoningLevel::High
            ]
            .map(ReasoningLevel::budget_tokens),
            [1024, 4096, 16000]
        );
        assert_eq!(
            "high".parse::<ReasoningLevel>().ok(),
            Some(ReasoningLevel::High)
        );
        let err = "max".parse::<ReasoningLevel>().err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("unknown reasoning level 'max'; use low, medium or high")
        );
    }

    #[test]
    fn usage_sums_every_field_and_serialises_all_six() {
        let total: TokenUsage = [
            TokenUsage::new(1, 2, 3)
                .with_cached(4)
                .with_cache_write(5)
                .with_reasoning(1),
            TokenUsage::new(10, 20, 30)
                .with_cached(40)
                .with_cache_write(50)
                .with_reasoning(6),
        ]
        .into_iter()
        .sum();
        let value = json!({"prompt_tokens": 11, "completion_tokens": 22, "total_tokens": 33,
                           "cached_tokens": 44, "cache_write_tokens": 55, "reasoning_tokens": 7});
        assert_eq!(serde_json::to_value(total).ok(), Some(value));
        let mut acc = TokenUsage::default();
        acc += TokenUsage::new(u64::MAX, 0, 0).with_reasoning(u64::MAX);
        acc += TokenUsage::new(1, 0, 0).with_reasoning(1);
        assert_eq!(
            (acc.prompt_tokens, acc.reasoning_tokens),
            (u64::MAX, u64::MAX)
        );
    }

    #[test]
    fn usage_written_before_reasoning_was_counted_reads_as_none_spent() {
        // A state saved by an earlier version (a paused run, a durable journal) has no
        // `reasoning_tokens`: it reads as 0, every other count kept.
        let old = json!({"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3,
                         "cached_tokens": 4, "cache_write_tokens": 5});
        let usage: TokenUsage = serde_json::from_value(old).unwrap_or_default();
        let expected = TokenUsage::new(1, 2, 3).with_cached(4).with_cache_write(5);
        assert_eq!(usage, expected);
    }

    #[test]
    fn response_keeps_content_and_blocks_consistent() {
        let r = CompletionResponse::from_blocks(vec![
            Thinking::signed("a", "s").into(),
            Block::text("x"),
            Block::text("y"),
        ])
        .with_tool_calls(vec![ToolCall::new("f", json!({}))])
        .with_finish_reason(FinishReason::Length);
        assert_eq!(r.content(), "xy");
        assert_eq!(r.blocks().len(), 2);
        assert_eq!(r.thinking(), "a");
        assert_eq!(r.finish_reason().to_string(), "length");
        assert!(!r.is_empty());
        assert!(CompletionResponse::text("").is_empty());
        assert_eq!(CompletionResponse::text("").blocks(), &[] as &[Block]);
    }
}
