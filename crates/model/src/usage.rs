//! Token accounting and cost.

use serde::{Deserialize, Serialize};

/// Tokens of one call. `input` counts every prompt token, cached or not;
/// `cached_input` is the part read from the provider's prompt cache; `cache_write` the
/// part written to it (Anthropic bills it apart).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// All prompt tokens.
    pub input: u64,
    /// Prompt tokens served from cache.
    pub cached_input: u64,
    /// Prompt tokens written to cache.
    pub cache_write: u64,
    /// Generated tokens.
    pub output: u64,
}

impl Usage {
    /// Adds another call's counts (for session totals).
    pub fn add(&mut self, other: &Usage) {
        self.input += other.input;
        self.cached_input += other.cached_input;
        self.cache_write += other.cache_write;
        self.output += other.output;
    }

    /// Cost in US dollars under `price`.
    pub fn cost(&self, price: &Price) -> f64 {
        let cached = self.cached_input.min(self.input);
        let written = self.cache_write.min(self.input - cached);
        let fresh = self.input - cached - written;
        let per = |tokens: u64, usd_per_mtok: f64| tokens as f64 * usd_per_mtok / 1_000_000.0;
        per(fresh, price.input)
            + per(cached, price.cached_input.unwrap_or(price.input))
            + per(written, price.cache_write.unwrap_or(price.input))
            + per(self.output, price.output)
    }
}

/// Prices in US dollars per million tokens.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Uncached input.
    pub input: f64,
    /// Input read from cache; `input` when unknown.
    #[serde(default)]
    pub cached_input: Option<f64>,
    /// Input written to cache; `input` when unknown.
    #[serde(default)]
    pub cache_write: Option<f64>,
    /// Output.
    pub output: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_splits_cached_written_and_fresh_input() {
        let price = Price {
            input: 3.0,
            cached_input: Some(0.3),
            cache_write: Some(3.75),
            output: 15.0,
        };
        let usage = Usage {
            input: 1_000_000,
            cached_input: 500_000,
            cache_write: 100_000,
            output: 10_000,
        };
        let expected = 0.4 * 3.0 + 0.5 * 0.3 + 0.1 * 3.75 + 0.01 * 15.0;
        assert!((usage.cost(&price) - expected).abs() < 1e-9);
    }

    #[test]
    fn cost_without_cache_prices_falls_back_to_input_price() {
        let price = Price {
            input: 2.0,
            cached_input: None,
            cache_write: None,
            output: 8.0,
        };
        let usage = Usage {
            input: 2_000_000,
            cached_input: 1_000_000,
            cache_write: 0,
            output: 0,
        };
        assert!((usage.cost(&price) - 4.0).abs() < 1e-9);
    }

    #[test]
    fn add_sums_every_field() {
        let mut total = Usage {
            input: 1,
            cached_input: 2,
            cache_write: 3,
            output: 4,
        };
        total.add(&Usage {
            input: 10,
            cached_input: 20,
            cache_write: 30,
            output: 40,
        });
        assert_eq!(
            total,
            Usage {
                input: 11,
                cached_input: 22,
                cache_write: 33,
                output: 44
            }
        );
    }
}
