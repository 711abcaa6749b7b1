//! Counting a request's tokens for OpenAI's models, which have no counting endpoint on Chat
//! Completions: with OpenAI's published tokenizers (the `tokenizer` feature, through
//! `tiktoken-rs`), else the core estimate ([`TokenCount::estimate`]).
//!
//! With the tokenizer, a model it knows (`gpt-5`, `gpt-4.1`, `gpt-4o`, `o1`/`o3`/`o4`: the
//! `o200k_base` encoding; `gpt-4`, `gpt-3.5-turbo`: `cl100k_base`; `gpt-oss`:
//! `o200k_harmony`) is counted the way OpenAI's cookbook counts a chat: three tokens framing
//! each message, its role and text encoded, a name's tokens and one more, each tool call's
//! name and arguments and one more, and three priming the reply. That count is exact for a
//! request of text messages alone. Tools, an output schema, images and documents are
//! formatted by OpenAI in ways it does not publish: their JSON is encoded (images and
//! documents estimated at four characters a token) and the count is marked inexact. A
//! model the tokenizer does not know is estimated.

use harness_core::{Request, TokenCount};

/// `request`'s tokens for `model` (its name after any gateway's `maker/`).
pub(crate) fn count(model: &str, request: &Request<'_>) -> TokenCount {
    #[cfg(feature = "tokenizer")]
    if let Some(count) = by_tokenizer(model, request) {
        return count;
    }
    let _ = model;
    TokenCount::estimate(request)
}

#[cfg(feature = "tokenizer")]
fn by_tokenizer(model: &str, request: &Request<'_>) -> Option<TokenCount> {
    use harness_core::{Block, Content, Role};
    use tiktoken_rs::tokenizer::{Tokenizer, get_tokenizer};

    let bare = model.rsplit('/').next().unwrap_or(model);
    let tokenizer = get_tokenizer(bare)?;
    // The cookbook's framing of a function definition, by encoding: tokens opening each
    // function, opening its properties, each property, an enum, each enum value, and
    // closing the tools.
    let framing = match tokenizer {
        Tokenizer::O200kBase | Tokenizer::O200kHarmony => ToolFraming::O200K,
        Tokenizer::Cl100kBase => ToolFraming::CL100K,
        _ => return None, // a completions-era encoding: not a chat model
    };
    let bpe = tiktoken_rs::bpe_for_tokenizer(tokenizer).ok()?;
    let tokens = |text: &str| bpe.encode_ordinary(text).len() as u64;
    let mut total: u64 = 3; // every reply is primed with <|start|>assistant<|message|>
    // Exact for what the cookbook checked against the API: messages of text, names.
    let mut exact = request.output.is_none();
    for message in request.messages {
        total += 3; // <|start|>{role}<|message|>{content}<|end|>
        let calls = !message.tool_calls.is_empty();
        if message.role == Role::Tool || calls {
            exact = false; // call ids and call framing: not published
        }
        let role = match message.role {
            Role::Tool => "tool",
            role => role.as_str(),
        };
        total += tokens(role);
        let media = match &message.content {
            Content::Text(_) => 0,
            Content::Blocks(blocks) => blocks
                .iter()
                .filter(|b| !matches!(b, Block::Text(_) | Block::Thinking(_)))
                .map(|b| serde_json::to_string(b).map_or(0, |s| s.len() / 4) as u64)
                .sum(),
        };
        if media > 0 {
            exact = false; // images and documents are priced by OpenAI's own rules
        }
        total += tokens(&message.text()) + media;
        // Chat Completions sends a name with a system, user or plain assistant message.
        if let Some(name) = message
            .name
            .as_ref()
            .filter(|_| message.role != Role::Tool && !calls)
        {
            total += tokens(name) + 1;
        }
        for call in &message.tool_calls {
            let arguments = serde_json::to_string(&call.arguments).unwrap_or_default();
            total += tokens(&call.name) + tokens(&arguments) + 1;
        }
    }
    if !request.tools.is_empty() {
        exact = false;
        total += framing.count(request.tools, &tokens);
    }
    if let Some(output) = request.output {
        total += tokens(&serde_json::to_string(&output.schema).unwrap_or_default());
    }
    Some(if exact {
        TokenCount::counted(total)
    } else {
        TokenCount::estimated(total)
    })
}

/// How OpenAI frames function definitions in the prompt, as its cookbook measured it
/// ("How to count tokens with tiktoken", section 7, checked there against the API).
#[cfg(feature = "tokenizer")]
struct ToolFraming {
    function: i64,
    properties: i64,
    property: i64,
    enumeration: i64,
    enum_value: i64,
    end: i64,
}

#[cfg(feature = "tokenizer")]
impl ToolFraming {
    const O200K: Self = Self {
        function: 7,
        properties: 3,
        property: 3,
        enumeration: -3,
        enum_value: 3,
        end: 12,
    };
    const CL100K: Self = Self {
        function: 10,
        ..Self::O200K
    };

    /// The tokens of `tools`' definitions: each `name:description` (a final full stop
    /// dropped), each property's `name:type:description` and enum values, and the framing.
    fn count(
        &self,
        tools: &[std::sync::Arc<harness_core::ToolSpec>],
        tokens: &dyn Fn(&str) -> u64,
    ) -> u64 {
        use serde_json::Value;
        let text = |value: Option<&Value>| match value {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        let mut total = self.end;
        for tool in tools {
            let description = tool
                .description
                .strip_suffix('.')
                .unwrap_or(&tool.description);
            total += self.function + to_i64(tokens(&format!("{}:{description}", tool.name)));
            let properties = tool.parameters.get("properties").and_then(Value::as_object);
            let Some(properties) = properties.filter(|p| !p.is_empty()) else {
                continue;
            };
            total += self.properties;
            for (name, property) in properties {
                total += self.property;
                if let Some(values) = property.get("enum").and_then(Value::as_array) {
                    total += self.enumeration;
                    for value in values {
                        total += self.enum_value + to_i64(tokens(&text(Some(value))));
                    }
                }
                let kind = text(property.get("type"));
                let description = text(property.get("description"));
                let description = description.strip_suffix('.').unwrap_or(&description);
                total += to_i64(tokens(&format!("{name}:{kind}:{description}")));
            }
        }
        u64::try_from(total).unwrap_or(0)
    }
}

#[cfg(feature = "tokenizer")]
fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness_core::Message;
    #[cfg(feature = "tokenizer")]
    use harness_core::ToolSpec;
    #[cfg(feature = "tokenizer")]
    use serde_json::json;
    #[cfg(feature = "tokenizer")]
    use std::sync::Arc;

    #[test]
    fn a_model_the_tokenizer_does_not_know_is_estimated() {
        let messages = [Message::user("x".repeat(40))];
        let count = count("llama-3.3-70b-versatile", &Request::new(&messages));
        assert_eq!(count, TokenCount::estimated(10));
    }

    /// The cookbook's example chat ("How to count tokens with tiktoken", section 6): the
    /// OpenAI API counted its prompt at 124 tokens for gpt-4o and gpt-4o-mini, 129 for gpt-4
    /// and gpt-3.5-turbo.
    #[cfg(feature = "tokenizer")]
    #[test]
    fn the_tokenizer_counts_a_chat_as_the_openai_api_did() {
        let named = |text: &str, name: &str| {
            let mut message = Message::system(text);
            message.name = Some(name.to_owned());
            message
        };
        let messages = [
            Message::system(
                "You are a helpful, pattern-following assistant that translates corporate \
                 jargon into plain English.",
            ),
            named(
                "New synergies will help drive top-line growth.",
                "example_user",
            ),
            named(
                "Things working well together will increase revenue.",
                "example_assistant",
            ),
            named(
                "Let's circle back when we have more bandwidth to touch base on opportunities \
                 for increased leverage.",
                "example_user",
            ),
            named(
                "Let's talk later when we're less busy about how to do better.",
                "example_assistant",
            ),
            Message::user(
                "This late pivot means we don't have time to boil the ocean for the client \
                 deliverable.",
            ),
        ];
        let request = Request::new(&messages);
        for (model, tokens) in [
            ("gpt-4o-2024-08-06", 124),
            ("gpt-4o-mini", 124),
            ("openai/gpt-4o", 124),
            ("gpt-4-0613", 129),
            ("gpt-3.5-turbo", 129),
        ] {
            assert_eq!(
                count(model, &request),
                TokenCount::counted(tokens),
                "{model}"
            );
        }
    }

    /// The cookbook's tools example (section 7): 101 tokens for gpt-4o, 105 for gpt-4, as
    /// the API counted them; a count with tools is still marked an estimate.
    #[cfg(feature = "tokenizer")]
    #[test]
    fn tools_are_framed_as_the_cookbook_measured() {
        let messages = [
            Message::system(
                "You are a helpful assistant that can answer to questions about the weather.",
            ),
            Message::user("What's the weather like in San Francisco?"),
        ];
        let tools = [Arc::new(ToolSpec::new(
            "get_current_weather",
            "Get the current weather in a given location",
            json!({
                "type": "object",
                "properties": {
                    "location": {"type": "string",
                                 "description": "The city and state, e.g. San Francisco, CA"},
                    "unit": {"type": "string", "description": "The unit of temperature to return",
                             "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["location"],
            }),
        ))];
        let request = Request::new(&messages).with_tools(&tools);
        assert_eq!(count("gpt-4o", &request), TokenCount::estimated(101));
        assert_eq!(count("gpt-4", &request), TokenCount::estimated(105));
    }
}
