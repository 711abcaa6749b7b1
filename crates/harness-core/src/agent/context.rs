//! `ContextPolicy`: what a long run sends its model.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::message::{Content, Message, Role};

/// A way to choose what of the transcript is sent: implement it (or pass a closure) to
/// prune differently. The loop asks for a view and does not care how it was chosen; the
/// stored transcript is never touched.
pub trait Prune: Send + Sync {
    /// The messages to send for this transcript.
    fn prune<'a>(&self, messages: &'a [Message], policy: &ContextPolicy) -> Cow<'a, [Message]>;
}

impl<F> Prune for F
where
    F: Fn(&[Message]) -> Vec<Message> + Send + Sync,
{
    fn prune<'a>(&self, messages: &'a [Message], _policy: &ContextPolicy) -> Cow<'a, [Message]> {
        Cow::Owned(self(messages))
    }
}

/// What a run's transcript may cost, bounded from both ends.
///
/// - `tool_result_chars` (default 8000) cuts each tool result as it is recorded, eliding the
///   middle and saying how much went missing: one oversized result is the usual way a long
///   run dies, since it is re-sent with every turn after it.
/// - `max_tokens` (off by default) bounds what is *sent*: the oldest turns are dropped, with
///   a note in their place, while [`AgentState::messages`](super::AgentState) keeps every
///   message. Pruning never drops the leading system prompt, never orphans a tool result from
///   the turn that requested it, and always keeps the last `keep_last` messages (default 4),
///   so a transcript whose tail alone is over the bound is sent over it.
///
/// The token figure is [`estimate_tokens`], about four characters a token: a soft bound that
/// keeps a run away from a hard provider error, not a bill.
///
/// ```
/// use harness_core::agent::ContextPolicy;
///
/// let policy = ContextPolicy::new()
///     .with_max_tokens(100_000)
///     .with_tool_result_chars(Some(8_000));
/// assert_eq!(policy.max_tokens(), Some(100_000));
/// ```
#[derive(Clone)]
pub struct ContextPolicy {
    max_tokens: Option<usize>,
    tool_result_chars: Option<usize>,
    keep_last: usize,
    pruner: Option<Arc<dyn Prune>>,
}

impl Default for ContextPolicy {
    fn default() -> Self {
        Self {
            max_tokens: None,
            tool_result_chars: Some(8000),
            keep_last: 4,
            pruner: None,
        }
    }
}

impl fmt::Debug for ContextPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContextPolicy")
            .field("max_tokens", &self.max_tokens)
            .field("tool_result_chars", &self.tool_result_chars)
            .field("keep_last", &self.keep_last)
            .field("custom_pruner", &self.pruner.is_some())
            .finish()
    }
}

impl ContextPolicy {
    /// No token bound, tool results cut at 8000 characters, the last 4 messages kept.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bounds what is sent to about `max_tokens` (at least 1, checked when the agent is
    /// built).
    pub fn with_max_tokens(mut self, max_tokens: usize) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Cuts each tool result to `chars` characters (at least 1, checked when the agent is
    /// built), or not at all with `None`.
    pub fn with_tool_result_chars(mut self, chars: Option<usize>) -> Self {
        self.tool_result_chars = chars;
        self
    }

    /// Always keeps the last `keep_last` messages (at least 1, checked when the agent is
    /// built).
    pub fn with_keep_last(mut self, keep_last: usize) -> Self {
        self.keep_last = keep_last;
        self
    }

    /// Replaces the pruning with your own.
    pub fn with_pruner(mut self, pruner: impl Prune + 'static) -> Self {
        self.pruner = Some(Arc::new(pruner));
        self
    }

    /// The token bound, if any.
    pub fn max_tokens(&self) -> Option<usize> {
        self.max_tokens
    }

    /// The tool result cap, if any.
    pub fn tool_result_chars(&self) -> Option<usize> {
        self.tool_result_chars
    }

    /// How many trailing messages are always kept.
    pub fn keep_last(&self) -> usize {
        self.keep_last
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.max_tokens == Some(0) {
            return Err(Error::configuration(
                "ContextPolicy.max_tokens must be at least 1 when set, got 0",
            ));
        }
        if self.tool_result_chars == Some(0) {
            return Err(Error::configuration(
                "ContextPolicy.tool_result_chars must be at least 1 when set, got 0",
            ));
        }
        if self.keep_last == 0 {
            return Err(Error::configuration(
                "ContextPolicy.keep_last must be at least 1, got 0",
            ));
        }
        Ok(())
    }

    /// Cuts a tool result to the policy's limit.
    pub fn truncate_tool_result(&self, text: String) -> String {
        truncate(text, self.tool_result_chars)
    }

    /// The transcript as it should be sent: the custom pruner's choice when one is set, else
    /// the same slice when it fits, else the oldest turns replaced by a note.
    pub fn prune<'a>(&self, messages: &'a [Message]) -> Cow<'a, [Message]> {
        if let Some(pruner) = &self.pruner {
            return pruner.prune(messages, self);
        }
        self.default_prune(messages)
    }

    /// The built-in pruning, for a custom [`Prune`] that wants to fall back on it.
    pub fn default_prune<'a>(&self, messages: &'a [Message]) -> Cow<'a, [Message]> {
        let Some(max) = self.max_tokens else {
            return Cow::Borrowed(messages);
        };
        if estimate_tokens(messages) <= max {
            return Cow::Borrowed(messages);
        }
        let head_len = messages
            .iter()
            .take_while(|m| m.role == Role::System)
            .count();
        let (head, body) = messages.split_at(head_len);
        let mut last_built = None;
        // Cut points: not the first body message, not inside the kept tail, never a tool
        // result (which would orphan it from the call that asked for it).
        let last_cut = body.len().saturating_sub(self.keep_last);
        for cut in 1..=last_cut {
            if body[cut].role == Role::Tool {
                continue;
            }
            let mut view = Vec::with_capacity(head.len() + 1 + body.len() - cut);
            view.extend_from_slice(head);
            view.push(Message::user(format!(
                "[{cut} earlier messages elided to fit the context budget.]"
            )));
            view.extend_from_slice(&body[cut..]);
            if estimate_tokens(&view) <= max {
                return Cow::Owned(view);
            }
            last_built = Some(view);
        }
        last_built.map_or(Cow::Borrowed(messages), Cow::Owned)
    }
}

/// Cuts `text` to about `limit` characters by eliding the middle: the head keeps two thirds,
/// the tail the rest, and a marker says how many characters went missing (so the result is a
/// little longer than `limit`). Counts characters, not bytes.
pub(crate) fn truncate(text: String, limit: Option<usize>) -> String {
    let Some(limit) = limit else { return text };
    // No more characters than bytes: most results fit without being counted.
    if text.len() <= limit {
        return text;
    }
    let len = text.chars().count();
    if len <= limit {
        return text;
    }
    let head = limit * 2 / 3;
    let tail = limit - head;
    let elided = len - head - tail;
    let head_end = text.char_indices().nth(head).map_or(text.len(), |(i, _)| i);
    let tail_start = text
        .char_indices()
        .nth(len - tail)
        .map_or(text.len(), |(i, _)| i);
    format!(
        "{}\n... [{elided} characters elided] ...\n{}",
        &text[..head_end],
        &text[tail_start..]
    )
}

/// The approximate token cost of a transcript, at about four characters a token: the
/// characters of each message's content (its JSON form for blocks) and of each tool call's
/// name and arguments. A heuristic, not a tokenizer.
pub fn estimate_tokens(messages: &[Message]) -> usize {
    let chars: usize = messages
        .iter()
        .map(|m| {
            let content = match &m.content {
                Content::Text(s) => s.chars().count(),
                Content::Blocks(blocks) => {
                    serde_json::to_string(blocks).map_or(0, |s| s.chars().count())
                }
            };
            let calls: usize = m
                .tool_calls
                .iter()
                .map(|c| {
                    c.name.chars().count()
                        + serde_json::to_string(&c.arguments).map_or(0, |s| s.chars().count())
                })
                .sum();
            content + calls
        })
        .sum();
    chars / 4
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(n: usize) -> String {
        "x".repeat(n)
    }

    #[test]
    fn truncate_elides_the_middle_in_characters() {
        let s: String = "é".repeat(10);
        let cut = truncate(s, Some(6));
        assert_eq!(cut, "éééé\n... [4 characters elided] ...\néé");
        assert_eq!(truncate(text(10), None), text(10));
        // At the limit, or more bytes than the limit but not more characters: kept whole.
        assert_eq!(truncate(text(6), Some(6)), text(6));
        assert_eq!(truncate("é".repeat(6), Some(6)), "é".repeat(6));
        assert!(truncate(text(7), Some(6)).contains("[1 characters elided]"));
    }

    #[test]
    fn validation_names_the_field() {
        assert!(ContextPolicy::new().validate().is_ok());
        for (policy, message) in [
            (
                ContextPolicy::new().with_max_tokens(0),
                "ContextPolicy.max_tokens must be at least 1 when set, got 0",
            ),
            (
                ContextPolicy::new().with_tool_result_chars(Some(0)),
                "ContextPolicy.tool_result_chars must be at least 1 when set, got 0",
            ),
            (
                ContextPolicy::new().with_keep_last(0),
                "ContextPolicy.keep_last must be at least 1, got 0",
            ),
        ] {
            assert_eq!(policy.validate().unwrap_err().to_string(), message);
        }
    }

    #[test]
    fn estimate_counts_content_and_tool_calls() {
        let messages = vec![
            Message::user(text(40)),
            Message::assistant("").with_tool_calls(vec![crate::ToolCall::new(
                "abcd",
                serde_json::json!({"k": 1}),
            )]),
        ];
        // 40 + 4 + len('{"k":1}') = 51 -> 12
        assert_eq!(estimate_tokens(&messages), 12);
    }

    #[test]
    fn fitting_transcripts_are_returned_as_the_same_slice() {
        let messages = vec![Message::user("hi")];
        let policy = ContextPolicy::new().with_max_tokens(100);
        assert!(matches!(policy.prune(&messages), Cow::Borrowed(_)));
        assert!(matches!(
            ContextPolicy::new().prune(&messages),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn pruning_keeps_the_system_prompt_and_tail_and_never_orphans_a_tool_result() {
        let messages = vec![
            Message::system("sys"),
            Message::user(text(400)),
            Message::assistant("").with_tool_calls(vec![
                crate::ToolCall::new("t", serde_json::json!({})).with_id("1"),
            ]),
            Message::tool(text(400), "t").with_call_id("1"),
            Message::assistant(text(40)),
            Message::user(text(8)),
            Message::assistant(text(8)),
            Message::user(text(8)),
            Message::assistant(text(8)),
        ];
        let policy = ContextPolicy::new().with_max_tokens(50).with_keep_last(4);
        let view = policy.prune(&messages);
        // Cut 1 (at the assistant request) is too big; cut 2 is a tool result, skipped;
        // cut 3 fits.
        assert_eq!(view[0], Message::system("sys"));
        assert_eq!(
            view[1],
            Message::user("[3 earlier messages elided to fit the context budget.]")
        );
        assert_eq!(&view[2..], &messages[4..]);
    }

    #[test]
    fn a_tail_over_the_bound_is_sent_over_it() {
        let messages = vec![
            Message::user(text(400)),
            Message::assistant(text(400)),
            Message::user(text(400)),
        ];
        let policy = ContextPolicy::new().with_max_tokens(10).with_keep_last(2);
        let view = policy.prune(&messages);
        assert_eq!(view.len(), 3);
        assert_eq!(
            view[0].text(),
            "[1 earlier messages elided to fit the context budget.]"
        );
        let policy = ContextPolicy::new().with_max_tokens(10).with_keep_last(4);
        assert_eq!(policy.prune(&messages).as_ref(), messages.as_slice());
    }

    #[test]
    fn a_closure_can_prune_instead() {
        let policy = ContextPolicy::new().with_pruner(|m: &[Message]| m[m.len() - 1..].to_vec());
        let messages = vec![Message::user("a"), Message::user("b")];
        assert_eq!(policy.prune(&messages).as_ref(), &[Message::user("b")]);
    }
}
