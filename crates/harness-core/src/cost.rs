//! Money: [`Usd`], an amount of US dollars; [`Prices`], what a model charges per million
//! tokens; [`Cost`], what a [`TokenUsage`] came to at those prices.
//!
//! Amounts are whole numbers of picodollars (10⁻¹² USD) in a `u64`, not floats: adding up
//! the cost of ten thousand responses (or ten million) gives exactly the sum of their parts,
//! with no rounding drift, and two runs that spent the same compare equal. A price is held
//! the same way, per million tokens, so a price with up to six decimals (every vendor's)
//! times a token count is exact too. The largest amount is about 18.4 million dollars; sums
//! saturate there rather than wrap.

use std::fmt;
use std::ops::{Add, AddAssign};

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::response::TokenUsage;

/// Picodollars in a dollar.
const PER_DOLLAR: u64 = 1_000_000_000_000;
/// Decimal places of a picodollar.
const DECIMALS: usize = 12;

/// An amount of US dollars, exact to the picodollar (10⁻¹² USD): a cost, a price, a budget.
///
/// Displayed with a dollar sign and every significant decimal (at least two), or rounded to
/// a precision when one is given; serialised as the same decimal text without the sign
/// (`"0.0015"`), so a saved amount reads back exactly.
///
/// ```
/// use harness_core::Usd;
///
/// let price = Usd::from_dollars(0.15);
/// assert_eq!(price.to_string(), "$0.15");
/// assert_eq!(Usd::from_dollars(1.0).to_string(), "$1.00");
/// assert_eq!(Usd::from_picodollars(1_500_000).to_string(), "$0.0000015");
/// assert_eq!(format!("{:.4}", Usd::from_dollars(0.123_456)), "$0.1235");
/// // Ten thousand calls at 0.1 of a cent each add up to exactly ten dollars.
/// let sum: Usd = std::iter::repeat(Usd::from_dollars(0.001)).take(10_000).sum();
/// assert_eq!(sum, Usd::from_dollars(10.0));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Usd(u64);

impl Usd {
    /// Nothing.
    pub const ZERO: Usd = Usd(0);

    /// `picodollars` × 10⁻¹² USD.
    pub const fn from_picodollars(picodollars: u64) -> Self {
        Self(picodollars)
    }

    /// The amount in picodollars (10⁻¹² USD).
    pub const fn picodollars(self) -> u64 {
        self.0
    }

    /// `dollars`, rounded to the picodollar. A negative amount or NaN is zero; one past the
    /// largest amount (about 18.4 million dollars) is the largest amount.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )] // a float-to-int cast saturates, and NaN becomes 0: what is documented
    pub fn from_dollars(dollars: f64) -> Self {
        Self((dollars * PER_DOLLAR as f64).round() as u64)
    }

    /// The amount in dollars, as a float (for display or arithmetic of your own; sums are
    /// exact only on `Usd` itself).
    #[allow(clippy::cast_precision_loss)] // a float is asked for
    pub fn dollars(self) -> f64 {
        // Whole dollars and the rest apart, so amounts under 2^53 picodollars stay exact.
        (self.0 / PER_DOLLAR) as f64 + (self.0 % PER_DOLLAR) as f64 / PER_DOLLAR as f64
    }

    /// True for nothing.
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// The cost of `tokens` at this price per million tokens, rounded to the picodollar
    /// (exact for any price of up to six decimals).
    pub(crate) fn per_million(self, tokens: u64) -> Usd {
        let exact = u128::from(self.0) * u128::from(tokens);
        let rounded = (exact + 500_000) / 1_000_000;
        Usd(u64::try_from(rounded).unwrap_or(u64::MAX))
    }

    /// The decimal text, without the sign: every significant decimal (at least two), or
    /// `precision` of them, rounded half up.
    fn decimal(self, precision: Option<usize>) -> String {
        let (mut whole, mut fraction) = (self.0 / PER_DOLLAR, self.0 % PER_DOLLAR);
        let places = match precision {
            Some(places) if places < DECIMALS => {
                let unit = 10u64.pow(u32::try_from(DECIMALS - places).unwrap_or(0));
                fraction = (fraction + unit / 2) / unit;
                if fraction >= 10u64.pow(u32::try_from(places).unwrap_or(0)) {
                    whole = whole.saturating_add(1);
                    fraction = 0;
                }
                places
            }
            _ => DECIMALS,
        };
        if places == 0 {
            return whole.to_string();
        }
        let mut text = format!("{whole}.{fraction:0places$}");
        if precision.is_none() {
            let keep = text
                .trim_end_matches('0')
                .len()
                .max(text.len() - DECIMALS + 2);
            text.truncate(keep);
        }
        text
    }

    /// Reads the decimal text [`Usd::decimal`] writes (more than twelve decimals are
    /// rounded).
    fn parse(text: &str) -> Option<Self> {
        let text = text.trim().trim_start_matches('$');
        let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
        let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if (whole.is_empty() && fraction.is_empty()) || !digits(whole) || !digits(fraction) {
            return None;
        }
        let whole: u64 = if whole.is_empty() {
            0
        } else {
            whole.parse().ok()?
        };
        let mut picodollars = whole.checked_mul(PER_DOLLAR)?;
        for (i, digit) in fraction.bytes().enumerate() {
            let digit = u64::from(digit - b'0');
            if i < DECIMALS {
                let unit = 10u64.pow(u32::try_from(DECIMALS - 1 - i).ok()?);
                picodollars = picodollars.checked_add(digit * unit)?;
            } else {
                if i == DECIMALS && digit >= 5 {
                    picodollars = picodollars.checked_add(1)?;
                }
                break;
            }
        }
        Some(Self(picodollars))
    }
}

impl fmt::Display for Usd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "${}", self.decimal(f.precision()))
    }
}

impl Add for Usd {
    type Output = Usd;

    fn add(self, rhs: Usd) -> Usd {
        Usd(self.0.saturating_add(rhs.0))
    }
}

impl AddAssign for Usd {
    fn add_assign(&mut self, rhs: Usd) {
        *self = *self + rhs;
    }
}

impl std::iter::Sum for Usd {
    fn sum<I: Iterator<Item = Usd>>(iter: I) -> Usd {
        iter.fold(Usd::ZERO, Add::add)
    }
}

impl Serialize for Usd {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.decimal(None))
    }
}

impl<'de> Deserialize<'de> for Usd {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct UsdVisitor;

        impl Visitor<'_> for UsdVisitor {
            type Value = Usd;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an amount of dollars, as decimal text (\"0.0015\") or a number")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Usd, E> {
                Usd::parse(v).ok_or_else(|| E::custom(format!("not an amount of dollars: {v:?}")))
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Usd, E> {
                v.checked_mul(PER_DOLLAR)
                    .map(Usd)
                    .ok_or_else(|| E::custom(format!("{v} dollars is too large an amount")))
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Usd, E> {
                u64::try_from(v)
                    .map_err(|_| E::custom(format!("a negative amount of dollars: {v}")))
                    .and_then(|v| self.visit_u64(v))
            }

            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Usd, E> {
                if v.is_finite() && v >= 0.0 {
                    Ok(Usd::from_dollars(v))
                } else {
                    Err(E::custom(format!("not an amount of dollars: {v}")))
                }
            }
        }

        deserializer.deserialize_any(UsdVisitor)
    }
}

/// What a model charges, in US dollars per million tokens: the prompt's tokens, split by
/// what the vendor's prompt cache did with them, and the answer's.
///
/// A [`TokenUsage`] converts with [`TokenUsage::cost`]. Its `prompt_tokens` already holds
/// the cached and cache-written tokens, so each part is priced once: `cached_tokens` at
/// `cache_read`, `cache_write_tokens` at `cache_write`, the rest of the prompt at `input`.
/// Reasoning tokens are part of `completion_tokens` and priced as output, as every vendor
/// bills them.
///
/// [`ModelInfo::prices`](crate::ModelInfo::prices) carries a model's prices; the providers
/// fill it from a built-in table, and a provider builder's `prices(...)` setting replaces it.
///
/// ```
/// use harness_core::{Prices, TokenUsage, Usd};
///
/// // Claude Sonnet 4: $3 in, $15 out, cache reads at $0.30, 5-minute cache writes at $3.75.
/// let prices = Prices::per_million(3.0, 15.0).with_cache_read(0.30).with_cache_write(3.75);
/// assert_eq!(prices.output, Usd::from_dollars(15.0));
/// let usage = TokenUsage::new(10_000, 1_000, 11_000).with_cached(8_000).with_cache_write(1_000);
/// let cost = usage.cost(&prices);
/// assert_eq!(cost.input, Usd::from_dollars(0.003)); //      1,000 uncached × $3 / 1M
/// assert_eq!(cost.cache_read, Usd::from_dollars(0.0024)); // 8,000 × $0.30 / 1M
/// assert_eq!(cost.cache_write, Usd::from_dollars(0.00375)); // 1,000 × $3.75 / 1M
/// assert_eq!(cost.output, Usd::from_dollars(0.015)); //      1,000 × $15 / 1M
/// assert_eq!(cost.total().to_string(), "$0.02415");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Prices {
    /// Per million prompt tokens that were neither read from nor written to the cache.
    pub input: Usd,
    /// Per million answer tokens, reasoning included.
    pub output: Usd,
    /// Per million prompt tokens read from the vendor's prompt cache.
    pub cache_read: Usd,
    /// Per million prompt tokens written to the vendor's prompt cache (Anthropic's cache
    /// writes; the vendors whose writes cost nothing extra charge the input price).
    pub cache_write: Usd,
}

impl Prices {
    /// `input` and `output` dollars per million tokens; cache reads and writes at the input
    /// price until set. A negative price or NaN counts as 0.
    pub fn per_million(input: f64, output: f64) -> Self {
        let input = Usd::from_dollars(input);
        Self {
            input,
            output: Usd::from_dollars(output),
            cache_read: input,
            cache_write: input,
        }
    }

    /// Sets the price of a million tokens read from the cache.
    #[must_use]
    pub fn with_cache_read(mut self, usd_per_million: f64) -> Self {
        self.cache_read = Usd::from_dollars(usd_per_million);
        self
    }

    /// Sets the price of a million tokens written to the cache.
    #[must_use]
    pub fn with_cache_write(mut self, usd_per_million: f64) -> Self {
        self.cache_write = Usd::from_dollars(usd_per_million);
        self
    }
}

/// The money of a [`TokenUsage`] at some [`Prices`], part by part, in US dollars; the cost
/// of one model call or the sum of many (costs add exactly, see [`Usd`]).
///
/// Serialises as its parts and `total`, each as decimal text; `total` is read back from the
/// parts.
///
/// ```
/// use harness_core::{Cost, Prices, TokenUsage, Usd};
///
/// let prices = Prices::per_million(0.15, 0.60).with_cache_read(0.075);
/// let one = TokenUsage::new(1_000, 100, 1_100).cost(&prices);
/// let run: Cost = std::iter::repeat(one).take(10_000).sum();
/// assert_eq!(run.input, Usd::from_dollars(1.5));
/// assert_eq!(run.total(), Usd::from_dollars(2.1));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize)]
#[non_exhaustive]
pub struct Cost {
    /// The prompt tokens neither read from nor written to the cache.
    #[serde(default)]
    pub input: Usd,
    /// The prompt tokens read from the cache.
    #[serde(default)]
    pub cache_read: Usd,
    /// The prompt tokens written to the cache.
    #[serde(default)]
    pub cache_write: Usd,
    /// The answer's tokens, reasoning included.
    #[serde(default)]
    pub output: Usd,
}

impl Cost {
    /// Nothing spent.
    pub fn new() -> Self {
        Self::default()
    }

    /// The parts added up.
    pub fn total(&self) -> Usd {
        self.input + self.cache_read + self.cache_write + self.output
    }

    /// True when nothing was spent.
    pub fn is_zero(&self) -> bool {
        self.total().is_zero()
    }
}

impl Serialize for Cost {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let mut s = serializer.serialize_struct("Cost", 5)?;
        s.serialize_field("input", &self.input)?;
        s.serialize_field("cache_read", &self.cache_read)?;
        s.serialize_field("cache_write", &self.cache_write)?;
        s.serialize_field("output", &self.output)?;
        s.serialize_field("total", &self.total())?;
        s.end()
    }
}

impl Add for Cost {
    type Output = Cost;

    fn add(mut self, rhs: Cost) -> Cost {
        self += rhs;
        self
    }
}

impl AddAssign for Cost {
    fn add_assign(&mut self, rhs: Cost) {
        self.input += rhs.input;
        self.cache_read += rhs.cache_read;
        self.cache_write += rhs.cache_write;
        self.output += rhs.output;
    }
}

impl std::iter::Sum for Cost {
    fn sum<I: Iterator<Item = Cost>>(iter: I) -> Cost {
        iter.fold(Cost::default(), Add::add)
    }
}

impl fmt::Display for Cost {
    /// `$0.02415 (input $0.003, cache reads $0.0024, cache writes $0.00375, output $0.015)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (input {}, cache reads {}, cache writes {}, output {})",
            self.total(),
            self.input,
            self.cache_read,
            self.cache_write,
            self.output
        )
    }
}

impl TokenUsage {
    /// What this usage costs at `prices`: the prompt tokens neither read from nor written to
    /// the cache at the input price, the cached ones at the cache-read price, the
    /// cache-written ones at the cache-write price (each prompt token priced once), the
    /// answer's tokens (reasoning included) at the output price.
    pub fn cost(&self, prices: &Prices) -> Cost {
        let uncached = self
            .prompt_tokens
            .saturating_sub(self.cached_tokens)
            .saturating_sub(self.cache_write_tokens);
        Cost {
            input: prices.input.per_million(uncached),
            cache_read: prices.cache_read.per_million(self.cached_tokens),
            cache_write: prices.cache_write.per_million(self.cache_write_tokens),
            output: prices.output.per_million(self.completion_tokens),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_prompt_token_is_priced_once_and_reasoning_as_output() {
        let prices = Prices::per_million(2.0, 8.0)
            .with_cache_read(0.5)
            .with_cache_write(2.5);
        // 1,000 prompt tokens: 600 cached, 300 written, 100 plain; 500 out, 400 reasoning.
        let usage = TokenUsage::new(1_000, 500, 1_500)
            .with_cached(600)
            .with_cache_write(300)
            .with_reasoning(400);
        let cost = usage.cost(&prices);
        assert_eq!(cost.input, Usd::from_picodollars(100 * 2_000_000));
        assert_eq!(cost.cache_read, Usd::from_picodollars(600 * 500_000));
        assert_eq!(cost.cache_write, Usd::from_picodollars(300 * 2_500_000));
        assert_eq!(cost.output, Usd::from_picodollars(500 * 8_000_000));
        assert_eq!(cost.total(), Usd::from_dollars(0.00525));
        // Without cache prices set, cached tokens cost what any input token does.
        let flat = usage.cost(&Prices::per_million(2.0, 8.0));
        assert_eq!(
            flat.input + flat.cache_read + flat.cache_write,
            Usd::from_dollars(0.002)
        );
        // Counts a vendor got wrong (more cached than prompt) never underflow.
        let odd = TokenUsage::new(10, 0, 10)
            .with_cached(50)
            .with_cache_write(50);
        assert_eq!(odd.cost(&prices).input, Usd::ZERO);
    }

    #[test]
    fn sums_are_exact_and_saturate() {
        // A price with six decimals, ten thousand times: no drift.
        let prices = Prices::per_million(0.075, 0.3);
        let one = TokenUsage::new(1, 1, 2).cost(&prices);
        assert_eq!(one.total(), Usd::from_picodollars(375_000));
        let total: Cost = std::iter::repeat_n(one, 10_000).sum();
        assert_eq!(total.total(), Usd::from_picodollars(3_750_000_000));
        assert_eq!(total.total().to_string(), "$0.00375");
        let max = Usd::from_picodollars(u64::MAX);
        assert_eq!(max + Usd::from_dollars(1.0), max);
        assert_eq!(Usd::from_dollars(1e30), max);
        assert_eq!(Usd::from_dollars(-1.0), Usd::ZERO);
        assert_eq!(Usd::from_dollars(f64::NAN), Usd::ZERO);
        let huge = TokenUsage::new(u64::MAX, u64::MAX, u64::MAX);
        assert_eq!(huge.cost(&Prices::per_million(75.0, 150.0)).input, max);
    }

    #[test]
    fn amounts_display_and_serialise_as_exact_decimals() {
        assert_eq!(Usd::ZERO.to_string(), "$0.00");
        assert_eq!(Usd::from_dollars(12.5).to_string(), "$12.50");
        assert_eq!(Usd::from_picodollars(1).to_string(), "$0.000000000001");
        assert_eq!(format!("{:.2}", Usd::from_dollars(0.999)), "$1.00");
        assert_eq!(format!("{:.0}", Usd::from_dollars(2.5)), "$3");
        assert_eq!(format!("{:.14}", Usd::from_dollars(0.5)), "$0.500000000000");
        let cost = TokenUsage::new(2_000, 100, 2_100)
            .with_cached(1_000)
            .cost(&Prices::per_million(3.0, 15.0).with_cache_read(0.3));
        let json = serde_json::to_value(cost).unwrap_or_default();
        assert_eq!(
            json,
            serde_json::json!({"input": "0.003", "cache_read": "0.0003",
                "cache_write": "0.00", "output": "0.0015", "total": "0.0048"})
        );
        let back: Cost = serde_json::from_value(json).unwrap_or_default();
        assert_eq!(back, cost);
        for (text, picodollars) in [
            ("\"1.5\"", 1_500_000_000_000u64),
            ("\"$.25\"", 250_000_000_000),
            ("\"0.0000000000015\"", 2),
            ("2", 2_000_000_000_000),
            ("0.5", 500_000_000_000),
        ] {
            let usd: Usd = serde_json::from_str(text).unwrap_or(Usd(u64::MAX));
            assert_eq!(usd.picodollars(), picodollars, "{text}");
        }
        for bad in ["\"\"", "\"1.2.3\"", "\"-1\"", "-1", "\"abc\"", "true"] {
            assert!(serde_json::from_str::<Usd>(bad).is_err(), "{bad}");
        }
        assert!((Usd::from_dollars(1234.5678).dollars() - 1234.5678).abs() < 1e-12);
    }
}
