//! What the library knows of common models: their context windows, which of them reason,
//! and (from `prices.rs`) what they cost. A model not in the tables is reported with no
//! context window, no reasoning claimed and no prices (`ModelInfo` says what is known,
//! nothing more).

use harness_core::{ModelInfo, Prices, Supports};

/// A family of models, matched by the start of the model's name.
struct Known {
    prefix: &'static str,
    context_window: u64,
    reasoning: bool,
}

const fn known(prefix: &'static str, context_window: u64, reasoning: bool) -> Known {
    Known {
        prefix,
        context_window,
        reasoning,
    }
}

/// The vendors' published figures; the longest matching prefix wins, so `gpt-4o-mini` is
/// not read as `gpt-4`.
const KNOWN: &[Known] = &[
    // OpenAI
    known("gpt-3.5-turbo", 16_385, false),
    known("gpt-4", 8_192, false),
    known("gpt-4-turbo", 128_000, false),
    known("gpt-4o", 128_000, false),
    known("gpt-4.1", 1_047_576, false),
    known("gpt-5", 400_000, true),
    known("o1", 200_000, true),
    known("o1-mini", 128_000, true),
    known("o3", 200_000, true),
    known("o4-mini", 200_000, true),
    // Anthropic
    known("claude-3", 200_000, false),
    known("claude-3-7-sonnet", 200_000, true),
    known("claude-sonnet-4", 200_000, true),
    known("claude-opus-4", 200_000, true),
    known("claude-haiku-4", 200_000, true),
    // Google
    known("gemini-1.5-flash", 1_048_576, false),
    known("gemini-1.5-pro", 2_097_152, false),
    known("gemini-2.0-flash", 1_048_576, false),
    known("gemini-2.5", 1_048_576, true),
    // Cohere
    known("command-r", 128_000, false),
    known("command-a", 256_000, false),
    known("command-a-reasoning", 256_000, true),
    known("command-a-vision", 128_000, false),
    known("command-a-translate", 8_000, false),
    // Others served through OpenAI-compatible gateways
    known("llama-3.1", 131_072, false),
    known("llama-3.3", 131_072, false),
    known("deepseek-chat", 128_000, false),
    known("deepseek-reasoner", 128_000, true),
    known("grok-3", 131_072, false),
    known("grok-4", 256_000, true),
    known("mistral-large", 131_072, false),
];

/// `model` served by `provider`, with what its wire format `supports`, its context window
/// and reasoning from the table when the model is known, and its prices from the price
/// table ([`crate::prices`]) when they are known there.
pub(crate) fn info(provider: &str, model: &str, supports: Supports) -> ModelInfo {
    // A gateway's name for a model often carries its maker (`meta-llama/llama-3.3-70b`,
    // `models/gemini-2.5-pro`): the part after the last `/` is the model.
    let bare = model.rsplit('/').next().unwrap_or(model);
    let found = KNOWN
        .iter()
        .filter(|k| bare.starts_with(k.prefix))
        .max_by_key(|k| k.prefix.len());
    let info = ModelInfo::new(provider, model);
    let info = match crate::prices::lookup(provider, model) {
        Some(prices) => info.with_prices(prices),
        None => info,
    };
    match found {
        Some(known) => info
            .with_context_window(known.context_window)
            .with_supports(supports.with_reasoning(known.reasoning)),
        None => info.with_supports(supports),
    }
}

/// `info` with the prices a provider builder's `prices(...)` setting gave, when it gave
/// some: they replace the table's.
pub(crate) fn priced(info: ModelInfo, prices: Option<Prices>) -> ModelInfo {
    match prices {
        Some(prices) => info.with_prices(prices),
        None => info,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_prefix_wins_and_a_gateways_path_is_read_past() {
        let tools = Supports::new().with_tools(true);
        let mini = info("openai", "gpt-4o-mini", tools);
        assert_eq!(mini.context_window, Some(128_000));
        assert_eq!(info("openai", "gpt-4", tools).context_window, Some(8_192));
        let routed = info("openrouter", "meta-llama/llama-3.3-70b-instruct", tools);
        assert_eq!(routed.context_window, Some(131_072));
        assert!(info("openai", "o3-mini", tools).supports.reasoning);
        let unknown = info("ollama", "my-finetune", tools);
        assert_eq!(unknown.context_window, None);
        assert_eq!(unknown.supports, tools);
        assert_eq!(unknown.name(), "ollama:my-finetune");
        assert_eq!(unknown.prices, None);
        let priced = info("openai", "gpt-4o-mini", tools);
        assert_eq!(
            priced.prices,
            crate::prices::lookup("openai", "gpt-4o-mini")
        );
        assert!(priced.prices.is_some());
        let own = Prices::per_million(1.0, 2.0);
        assert_eq!(super::priced(priced, Some(own)).prices, Some(own));
    }
}
