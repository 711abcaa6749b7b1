//! What the common models charge: the built-in price table [`ModelInfo::prices`] is filled
//! from (through `models::info`).
//!
//! The figures are the vendors' published list prices in US dollars per million tokens, as
//! they stood in December 2025, for the standard tier and the shortest context tier (Gemini
//! 2.5 Pro and Claude's long-context rates above 200,000 prompt tokens, batch and priority
//! tiers, Gemini's cache storage per hour and audio or image tokens are not in it). Prices
//! change: a provider builder's `prices(...)` setting replaces a model's entry, and gives one
//! to a model the table does not know.
//!
//! Each entry is a vendor's provider id and a model-name prefix. A model's entry is the
//! longest prefix its name (the part after its last `/`, in lower case) starts with, where
//! the prefix ends at the name's end or before a `-`, `:` or `@`: `gpt-4o` prices
//! `gpt-4o-2024-08-06` but `gpt-4o-mini` has its own entry, and `gpt-5` does not price
//! `gpt-5.2`, which the table does not know. A model the table does not know has no prices.
//!
//! [`ModelInfo::prices`]: harness_core::ModelInfo::prices

use harness_core::Prices;

/// One row: what a model family costs at one vendor, in dollars per million tokens.
struct Entry {
    provider: &'static str,
    prefix: &'static str,
    input: f64,
    cache_read: f64,
    cache_write: f64,
    output: f64,
}

/// A vendor whose cache writes cost the input price (OpenAI, Google, the gateways): input,
/// cached input, output.
const fn plain(
    provider: &'static str,
    prefix: &'static str,
    input: f64,
    cache_read: f64,
    output: f64,
) -> Entry {
    Entry {
        provider,
        prefix,
        input,
        cache_read,
        cache_write: input,
        output,
    }
}

/// An Anthropic model: input, cache reads, five-minute cache writes, output.
const fn claude(prefix: &'static str, input: f64, read: f64, write: f64, output: f64) -> Entry {
    Entry {
        provider: "anthropic",
        prefix,
        input,
        cache_read: read,
        cache_write: write,
        output,
    }
}

/// The table, taken from the vendors' pricing pages in December 2025.
#[rustfmt::skip]
const TABLE: &[Entry] = &[
    // OpenAI: input, cached input, output.
    plain("openai", "gpt-5", 1.25, 0.125, 10.0),
    plain("openai", "gpt-5.1", 1.25, 0.125, 10.0),
    plain("openai", "gpt-5-mini", 0.25, 0.025, 2.0),
    plain("openai", "gpt-5-nano", 0.05, 0.005, 0.40),
    plain("openai", "gpt-5-pro", 15.0, 15.0, 120.0),
    plain("openai", "gpt-4.1", 2.0, 0.50, 8.0),
    plain("openai", "gpt-4.1-mini", 0.40, 0.10, 1.60),
    plain("openai", "gpt-4.1-nano", 0.10, 0.025, 0.40),
    plain("openai", "gpt-4o", 2.50, 1.25, 10.0),
    plain("openai", "gpt-4o-2024-05-13", 5.0, 5.0, 15.0),
    plain("openai", "gpt-4o-mini", 0.15, 0.075, 0.60),
    plain("openai", "o1", 15.0, 7.50, 60.0),
    plain("openai", "o1-mini", 1.10, 0.55, 4.40),
    plain("openai", "o1-pro", 150.0, 150.0, 600.0),
    plain("openai", "o3", 2.0, 0.50, 8.0),
    plain("openai", "o3-mini", 1.10, 0.55, 4.40),
    plain("openai", "o3-pro", 20.0, 20.0, 80.0),
    plain("openai", "o4-mini", 1.10, 0.275, 4.40),
    plain("openai", "gpt-4-turbo", 10.0, 10.0, 30.0),
    plain("openai", "gpt-4", 30.0, 30.0, 60.0),
    plain("openai", "gpt-4-32k", 60.0, 60.0, 120.0),
    plain("openai", "gpt-3.5-turbo", 0.50, 0.50, 1.50),
    // Anthropic: input, cache reads, five-minute cache writes, output.
    claude("claude-opus-4-5", 5.0, 0.50, 6.25, 25.0),
    claude("claude-opus-4-1", 15.0, 1.50, 18.75, 75.0),
    claude("claude-opus-4-0", 15.0, 1.50, 18.75, 75.0),
    claude("claude-opus-4-20250514", 15.0, 1.50, 18.75, 75.0),
    claude("claude-sonnet-4-5", 3.0, 0.30, 3.75, 15.0),
    claude("claude-sonnet-4-0", 3.0, 0.30, 3.75, 15.0),
    claude("claude-sonnet-4-20250514", 3.0, 0.30, 3.75, 15.0),
    claude("claude-haiku-4-5", 1.0, 0.10, 1.25, 5.0),
    claude("claude-3-7-sonnet", 3.0, 0.30, 3.75, 15.0),
    claude("claude-3-5-sonnet", 3.0, 0.30, 3.75, 15.0),
    claude("claude-3-5-haiku", 0.80, 0.08, 1.0, 4.0),
    claude("claude-3-opus", 15.0, 1.50, 18.75, 75.0),
    claude("claude-3-haiku", 0.25, 0.03, 0.30, 1.25),
    // Google Gemini API (prompts up to 200,000 tokens): input, cached input, output.
    plain("gemini", "gemini-3-pro", 2.0, 0.20, 12.0),
    plain("gemini", "gemini-2.5-pro", 1.25, 0.125, 10.0),
    plain("gemini", "gemini-2.5-flash", 0.30, 0.03, 2.50),
    plain("gemini", "gemini-2.5-flash-lite", 0.10, 0.01, 0.40),
    plain("gemini", "gemini-2.0-flash", 0.10, 0.025, 0.40),
    plain("gemini", "gemini-2.0-flash-lite", 0.075, 0.075, 0.30),
    // The gateways, each its own price for the models it serves.
    plain("groq", "llama-3.3-70b-versatile", 0.59, 0.59, 0.79),
    plain("groq", "llama-3.1-8b-instant", 0.05, 0.05, 0.08),
    plain("together", "llama-3.3-70b-instruct-turbo", 0.88, 0.88, 0.88),
    plain("fireworks", "llama-v3p3-70b-instruct", 0.90, 0.90, 0.90),
    plain("cerebras", "llama-3.3-70b", 0.85, 0.85, 1.20),
    plain("cerebras", "llama3.1-8b", 0.10, 0.10, 0.10),
    plain("deepseek", "deepseek-chat", 0.28, 0.028, 0.42),
    plain("deepseek", "deepseek-reasoner", 0.28, 0.028, 0.42),
    plain("mistral", "mistral-small", 0.10, 0.10, 0.30),
    plain("mistral", "mistral-medium", 0.40, 0.40, 2.0),
    plain("mistral", "mistral-large-2411", 2.0, 2.0, 6.0),
    plain("mistral", "codestral", 0.30, 0.30, 0.90),
    plain("xai", "grok-3", 3.0, 0.75, 15.0),
    plain("xai", "grok-3-fast", 5.0, 1.25, 25.0),
    plain("xai", "grok-3-mini", 0.30, 0.075, 0.50),
    plain("xai", "grok-3-mini-fast", 0.60, 0.15, 4.0),
    plain("xai", "grok-4-0709", 3.0, 0.75, 15.0),
];

/// What `model` costs at `provider` (a provider id: `openai`, `anthropic`, `gemini`, `groq`,
/// ...), from the table; `None` for a model it does not know.
pub(crate) fn lookup(provider: &str, model: &str) -> Option<Prices> {
    let bare = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    TABLE
        .iter()
        .filter(|e| e.provider == provider && matches(&bare, e.prefix))
        .max_by_key(|e| e.prefix.len())
        .map(|e| {
            Prices::per_million(e.input, e.output)
                .with_cache_read(e.cache_read)
                .with_cache_write(e.cache_write)
        })
}

/// Whether `name` is `prefix`, or `prefix` followed by a `-`, `:` or `@` and more.
fn matches(name: &str, prefix: &str) -> bool {
    name.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['-', ':', '@']))
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness_core::Usd;

    fn price(provider: &str, model: &str) -> Option<(f64, f64, f64, f64)> {
        lookup(provider, model).map(|p| {
            (
                p.input.dollars(),
                p.cache_read.dollars(),
                p.cache_write.dollars(),
                p.output.dollars(),
            )
        })
    }

    #[test]
    fn the_longest_prefix_ending_at_a_boundary_wins() {
        assert_eq!(price("openai", "gpt-4o"), Some((2.5, 1.25, 2.5, 10.0)));
        assert_eq!(
            price("openai", "gpt-4o-2024-08-06"),
            Some((2.5, 1.25, 2.5, 10.0))
        );
        assert_eq!(
            price("openai", "gpt-4o-2024-05-13"),
            Some((5.0, 5.0, 5.0, 15.0))
        );
        assert_eq!(
            price("openai", "gpt-4o-mini"),
            Some((0.15, 0.075, 0.15, 0.6))
        );
        assert_eq!(
            price("openai", "gpt-4o-mini-2024-07-18"),
            price("openai", "gpt-4o-mini")
        );
        assert_eq!(
            price("openai", "gpt-4-0613"),
            Some((30.0, 30.0, 30.0, 60.0))
        );
        assert_eq!(
            price("openai", "gpt-4-turbo-2024-04-09").map(|p| p.0),
            Some(10.0)
        );
        // `gpt-5` is not `gpt-5.2`, nor `o1` `o10`: unknown models have no price.
        assert_eq!(price("openai", "gpt-5.2"), None);
        assert_eq!(price("openai", "o10"), None);
        assert_eq!(
            price("openai", "gpt-5.1-2025-11-13").map(|p| p.3),
            Some(10.0)
        );
        assert_eq!(
            price("anthropic", "claude-sonnet-4-5-20250929"),
            Some((3.0, 0.3, 3.75, 15.0))
        );
        assert_eq!(
            price("anthropic", "claude-opus-4-5").map(|p| p.0),
            Some(5.0)
        );
        assert_eq!(
            price("anthropic", "claude-opus-4-1-20250805").map(|p| p.0),
            Some(15.0)
        );
        assert_eq!(
            price("anthropic", "claude-3-5-haiku-latest").map(|p| p.3),
            Some(4.0)
        );
        assert_eq!(price("anthropic", "claude-opus-4-6"), None);
        assert_eq!(
            price("gemini", "models/gemini-2.5-flash"),
            Some((0.3, 0.03, 0.3, 2.5))
        );
        assert_eq!(
            price("gemini", "gemini-2.5-flash-lite").map(|p| p.0),
            Some(0.1)
        );
        assert_eq!(
            price("gemini", "gemini-3-pro-preview").map(|p| p.3),
            Some(12.0)
        );
        // A gateway's path and capitals are read past; the provider picks the row.
        assert_eq!(
            price("together", "meta-llama/Llama-3.3-70B-Instruct-Turbo"),
            Some((0.88, 0.88, 0.88, 0.88))
        );
        assert_eq!(
            price(
                "fireworks",
                "accounts/fireworks/models/llama-v3p3-70b-instruct"
            )
            .map(|p| p.3),
            Some(0.9)
        );
        assert_eq!(
            price("groq", "llama-3.3-70b-versatile").map(|p| p.3),
            Some(0.79)
        );
        assert_eq!(price("together", "gpt-4o"), None);
        assert_eq!(price("openrouter", "openai/gpt-4o-mini"), None);
        assert_eq!(price("ollama", "llama3.3:70b"), None);
    }

    #[test]
    fn every_row_is_one_of_a_kind_and_cache_reads_cost_no_more_than_input() {
        for (i, e) in TABLE.iter().enumerate() {
            assert!(
                TABLE[i + 1..]
                    .iter()
                    .all(|o| (o.provider, o.prefix) != (e.provider, e.prefix)),
                "{} {} twice",
                e.provider,
                e.prefix
            );
            assert_eq!(e.prefix, e.prefix.to_ascii_lowercase(), "{}", e.prefix);
            assert!(
                e.cache_read <= e.input && e.input > 0.0 && e.output > 0.0,
                "{}",
                e.prefix
            );
            if e.provider == "anthropic" {
                // Anthropic's multipliers, reads a tenth and 5-minute writes 1.25x, as
                // published (Claude 3 Haiku's rounded to the cent: $0.03 and $0.30).
                assert!((e.cache_read - e.input * 0.1).abs() < 0.02, "{}", e.prefix);
                assert!(
                    (e.cache_write - e.input * 1.25).abs() < 0.02,
                    "{}",
                    e.prefix
                );
            } else {
                assert_eq!(e.cache_write.to_bits(), e.input.to_bits(), "{}", e.prefix);
            }
            // Every price is a whole number of micro-dollars a million: costs stay exact.
            for usd in [e.input, e.cache_read, e.cache_write, e.output] {
                assert_eq!(
                    Usd::from_dollars(usd).picodollars() % 1_000_000,
                    0,
                    "{}",
                    e.prefix
                );
            }
        }
    }
}
