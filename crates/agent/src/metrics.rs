//! Per-session numbers: where the time went, what was called, what failed, what it cost.

use std::collections::BTreeMap;
use std::time::Duration;

use agentls_model::{ErrorClass, ModelProfile, Usage};
use serde::Serialize;

/// Totals of one session (over all its runs).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Metrics {
    /// Wall time inside `run`.
    pub wall_ms: f64,
    /// Time spent waiting for the model (first byte to last event).
    pub model_ms: f64,
    /// Time spent inside tool calls (a parallel batch counts once, as its slowest).
    pub tool_ms: f64,
    /// Model calls.
    pub steps: u32,
    /// Tool calls by tool name.
    pub calls_by_tool: BTreeMap<String, u32>,
    /// Failed tool calls by error class.
    pub errors_by_class: BTreeMap<String, u32>,
    /// Commands that ran and failed (non-zero exit or a signal: a failing build or test
    /// run). Not tool errors: the tool worked.
    pub failed_commands: u32,
    /// Steps in which a call failed: a tool error other than the user's refusal, or a
    /// failed command.
    pub failed_steps: u32,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Prompt tokens read from the provider's cache.
    pub cached_input_tokens: u64,
    /// Prompt tokens written to the cache.
    pub cache_write_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Cost in US dollars, when the profile knows prices.
    pub cost_usd: Option<f64>,
    /// Times the transcript was compacted.
    pub compactions: u32,
    /// What the user (or the run's approval policy) refused, in order, as asked
    /// ("run `sh deploy.sh`").
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<String>,
}

impl Metrics {
    /// Everything that was neither model nor tools: the harness's own cost.
    pub fn harness_ms(&self) -> f64 {
        (self.wall_ms - self.model_ms - self.tool_ms).max(0.0)
    }

    /// Fraction of prompt tokens served from cache (0 when nothing was sent).
    pub fn cache_hit_rate(&self) -> f64 {
        if self.input_tokens == 0 {
            0.0
        } else {
            self.cached_input_tokens as f64 / self.input_tokens as f64
        }
    }

    /// Total tokens, in and out.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    pub(crate) fn add_usage(&mut self, usage: &Usage, profile: &ModelProfile) {
        self.input_tokens += usage.input;
        self.cached_input_tokens += usage.cached_input;
        self.cache_write_tokens += usage.cache_write;
        self.output_tokens += usage.output;
        if let Some(cost) = profile.cost(usage) {
            *self.cost_usd.get_or_insert(0.0) += cost;
        }
    }

    pub(crate) fn add_call(&mut self, tool: &str, error: Option<ErrorClass>) {
        *self.calls_by_tool.entry(tool.to_owned()).or_default() += 1;
        if let Some(class) = error {
            *self
                .errors_by_class
                .entry(class_name(class).to_owned())
                .or_default() += 1;
        }
    }

    /// One paragraph for people: the final summary of a headless run.
    pub fn render(&self) -> String {
        let calls: Vec<String> = self
            .calls_by_tool
            .iter()
            .map(|(k, v)| format!("{k}×{v}"))
            .collect();
        let errors: Vec<String> = self
            .errors_by_class
            .iter()
            .map(|(k, v)| format!("{k}×{v}"))
            .collect();
        let cost = self
            .cost_usd
            .map_or_else(|| "unknown".to_owned(), |c| format!("${c:.4}"));
        let refused = if self.refused.is_empty() {
            String::new()
        } else {
            format!("\nrefused (not approved): {}", self.refused.join(", "))
        };
        format!(
            "steps {} ({} failed) · wall {:.0} ms (model {:.0}, tools {:.0}, harness {:.1}) · tokens in {} (cached {}, hit rate {:.0}%) out {} · cost {} · calls [{}] · errors [{}] · failed commands {}{}",
            self.steps,
            self.failed_steps,
            self.wall_ms,
            self.model_ms,
            self.tool_ms,
            self.harness_ms(),
            self.input_tokens,
            self.cached_input_tokens,
            self.cache_hit_rate() * 100.0,
            self.output_tokens,
            cost,
            calls.join(", "),
            errors.join(", "),
            self.failed_commands,
            refused,
        )
    }
}

/// The taxonomy's name for a class, as used in metrics, events and trajectories.
pub fn class_name(class: ErrorClass) -> &'static str {
    match class {
        ErrorClass::InvalidArguments => "InvalidArguments",
        ErrorClass::UnexpectedEnvironment => "UnexpectedEnvironment",
        ErrorClass::ProviderError => "ProviderError",
        ErrorClass::UserAborted => "UserAborted",
        ErrorClass::Timeout => "Timeout",
        ErrorClass::Unknown => "Unknown",
    }
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harness_time_is_what_model_and_tools_did_not_take() {
        let m = Metrics {
            wall_ms: 100.0,
            model_ms: 60.0,
            tool_ms: 30.0,
            ..Metrics::default()
        };
        assert!((m.harness_ms() - 10.0).abs() < 1e-9);
    }

    #[test]
    fn cache_hit_rate_is_cached_over_input() {
        let mut m = Metrics::default();
        assert_eq!(m.cache_hit_rate(), 0.0);
        m.add_usage(
            &Usage {
                input: 1000,
                cached_input: 750,
                cache_write: 0,
                output: 5,
            },
            &ModelProfile::default(),
        );
        assert!((m.cache_hit_rate() - 0.75).abs() < 1e-9);
        m.add_call("grep", None);
        m.add_call("grep", Some(ErrorClass::Timeout));
        assert_eq!(m.calls_by_tool["grep"], 2);
        assert_eq!(m.errors_by_class["Timeout"], 1);
    }
}
