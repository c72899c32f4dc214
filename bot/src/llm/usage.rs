//! Token usage, the per-model price table and cost accounting.
//!
//! Usage is normalised across providers: `input_tokens` counts only input that was neither read from
//! nor written to the prompt cache. OpenAI reports cached tokens *inside* `prompt_tokens`, Anthropic
//! reports them beside `input_tokens`; both become the same four disjoint figures here, so one price
//! formula serves both.

use std::collections::BTreeMap;
use std::ops::AddAssign;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens billed at the normal rate (not cache reads, not cache writes).
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Input tokens served from the provider's prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache (Anthropic bills these at a premium).
    pub cache_write_tokens: u64,
    /// Output tokens spent on reasoning, when the provider says (already included in `output_tokens`).
    pub reasoning_tokens: u64,
}

impl Usage {
    /// Every input token of the request, cached or not.
    pub fn total_input_tokens(&self) -> u64 {
        self.input_tokens + self.cache_read_tokens + self.cache_write_tokens
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
    }
}

/// Prices in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

impl Price {
    pub fn cost(&self, usage: &Usage) -> f64 {
        let per_token = |tokens: u64, dollars_per_million: f64| tokens as f64 * dollars_per_million / 1e6;
        per_token(usage.input_tokens, self.input)
            + per_token(usage.output_tokens, self.output)
            + per_token(usage.cache_read_tokens, self.cache_read)
            + per_token(usage.cache_write_tokens, self.cache_write)
    }
}

/// Published list prices of common models, matched by the longest prefix of the model name so that
/// dated snapshots (`gpt-4o-2024-08-06`, `claude-sonnet-4-5-20250929`) find their family.
/// (prefix, input, output, cache read, cache write)
const DEFAULT_PRICES: &[(&str, f64, f64, f64, f64)] = &[
    // OpenAI: cached input is billed at the cache-read price, writes cost nothing extra.
    ("gpt-4o", 2.50, 10.00, 1.25, 0.0),
    ("gpt-4o-mini", 0.15, 0.60, 0.075, 0.0),
    ("gpt-4.1", 2.00, 8.00, 0.50, 0.0),
    ("gpt-4.1-mini", 0.40, 1.60, 0.10, 0.0),
    ("gpt-4.1-nano", 0.10, 0.40, 0.025, 0.0),
    ("gpt-5", 1.25, 10.00, 0.125, 0.0),
    ("gpt-5-mini", 0.25, 2.00, 0.025, 0.0),
    ("gpt-5-nano", 0.05, 0.40, 0.005, 0.0),
    ("o3", 2.00, 8.00, 0.50, 0.0),
    ("o3-mini", 1.10, 4.40, 0.55, 0.0),
    ("o4-mini", 1.10, 4.40, 0.275, 0.0),
    // Anthropic: 5-minute cache writes cost 1.25x input, reads 0.1x.
    ("claude-opus-4-5", 5.00, 25.00, 0.50, 6.25),
    ("claude-opus-4", 15.00, 75.00, 1.50, 18.75),
    ("claude-sonnet-4", 3.00, 15.00, 0.30, 3.75),
    ("claude-3-7-sonnet", 3.00, 15.00, 0.30, 3.75),
    ("claude-3-5-sonnet", 3.00, 15.00, 0.30, 3.75),
    ("claude-haiku-4-5", 1.00, 5.00, 0.10, 1.25),
    ("claude-3-5-haiku", 0.80, 4.00, 0.08, 1.00),
    ("claude-3-haiku", 0.25, 1.25, 0.03, 0.30),
];

/// Model-name prefix → price. Built from the defaults, then overridden by configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct PriceTable {
    prices: BTreeMap<String, Price>,
}

impl Default for PriceTable {
    fn default() -> Self {
        let prices = DEFAULT_PRICES
            .iter()
            .map(|&(prefix, input, output, cache_read, cache_write)| {
                (
                    prefix.to_owned(),
                    Price {
                        input,
                        output,
                        cache_read,
                        cache_write,
                    },
                )
            })
            .collect();
        PriceTable { prices }
    }
}

impl PriceTable {
    /// Adds or replaces the price of a model (or of every model whose name starts with `prefix`).
    pub fn set(&mut self, prefix: impl Into<String>, price: Price) {
        self.prices.insert(prefix.into(), price);
    }

    /// The price of `model`: an exact entry, else the longest entry that is a prefix of the name
    /// at a `-` boundary (so `o3` does not price `o3x`, but does price `o3-2025-04-16`).
    /// Names with a vendor path (`openai/gpt-4o` on OpenRouter, LiteLLM) are looked up without it.
    pub fn lookup(&self, model: &str) -> Option<Price> {
        let model = model.rsplit('/').next().unwrap_or(model);
        if let Some(price) = self.prices.get(model) {
            return Some(*price);
        }
        self.prices
            .iter()
            .filter(|(prefix, _)| {
                model
                    .strip_prefix(prefix.as_str())
                    .is_some_and(|rest| rest.starts_with('-') || rest.starts_with('@'))
            })
            .max_by_key(|(prefix, _)| prefix.len())
            .map(|(_, price)| *price)
    }
}

/// Running totals over the calls of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UsageTotals {
    pub calls: u64,
    pub usage: Usage,
    /// `None` as soon as one call was made to a model without a known price: a partial sum would
    /// understate the spend, and budgets must not trust it.
    pub cost_usd: Option<f64>,
}

impl UsageTotals {
    pub fn new() -> Self {
        UsageTotals {
            calls: 0,
            usage: Usage::default(),
            cost_usd: Some(0.0),
        }
    }

    /// Adds one call's usage; returns that call's cost when the price is known.
    pub fn record(&mut self, usage: &Usage, price: Option<Price>) -> Option<f64> {
        self.calls += 1;
        self.usage += *usage;
        let cost = price.map(|price| price.cost(usage));
        self.cost_usd = match (self.cost_usd, cost) {
            (Some(total), Some(cost)) => Some(total + cost),
            _ => None,
        };
        cost
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_at_a_dash_wins() {
        let table = PriceTable::default();
        assert_eq!(table.lookup("gpt-4o-2024-08-06").unwrap().input, 2.50);
        assert_eq!(table.lookup("gpt-4o-mini-2024-07-18").unwrap().input, 0.15);
        assert_eq!(table.lookup("claude-sonnet-4-5-20250929").unwrap().output, 15.0);
        assert_eq!(table.lookup("claude-opus-4-5-20251101").unwrap().input, 5.0);
        assert_eq!(table.lookup("claude-opus-4-1-20250805").unwrap().input, 15.0);
        assert_eq!(table.lookup("openai/gpt-4.1-mini").unwrap().input, 0.40);
        assert_eq!(table.lookup("o3"), table.lookup("o3-2025-04-16"));
        assert_eq!(table.lookup("o3x"), None);
        assert_eq!(table.lookup("llama3.1:8b"), None);
    }

    #[test]
    fn configured_prices_override_defaults() {
        let mut table = PriceTable::default();
        let price = Price {
            input: 0.0,
            output: 0.0,
            cache_read: 0.0,
            cache_write: 0.0,
        };
        table.set("gpt-4o", price);
        table.set("qwen2.5-coder", price);
        assert_eq!(table.lookup("gpt-4o-2024-08-06"), Some(price));
        assert_eq!(table.lookup("qwen2.5-coder"), Some(price));
    }

    #[test]
    fn cost_counts_each_kind_of_token_at_its_price() {
        let price = PriceTable::default().lookup("claude-sonnet-4-5").unwrap();
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cache_read_tokens: 2_000_000,
            cache_write_tokens: 400_000,
            reasoning_tokens: 0,
        };
        // 3.00 + 1.50 + 0.60 + 1.50
        assert!((price.cost(&usage) - 6.60).abs() < 1e-9);
    }

    #[test]
    fn totals_become_unknown_after_an_unpriced_call() {
        let mut totals = UsageTotals::new();
        let usage = Usage {
            input_tokens: 10,
            output_tokens: 5,
            ..Usage::default()
        };
        let price = PriceTable::default().lookup("gpt-4o");
        assert!(totals.record(&usage, price).is_some());
        assert!(totals.cost_usd.unwrap() > 0.0);
        assert_eq!(totals.record(&usage, None), None);
        assert_eq!(totals.cost_usd, None);
        assert_eq!(totals.calls, 2);
        assert_eq!(totals.usage.input_tokens, 20);
    }
}
