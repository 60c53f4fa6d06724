//! The tables `agentls stats` prints: per model, then per tool within it.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::RunRecord;

/// One model's runs, summed up.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelSummary {
    /// The model.
    pub model: String,
    /// Runs.
    pub runs: usize,
    /// Share of runs that ended done.
    pub done_rate: f64,
    /// Median and 90th percentile wall time.
    pub wall_ms_p50: f64,
    /// 90th percentile wall time.
    pub wall_ms_p90: f64,
    /// Median time to first token, over runs that had one.
    pub first_token_ms_p50: Option<f64>,
    /// Median time to the first landed edit, over runs that had one.
    pub first_edit_ms_p50: Option<f64>,
    /// Mean model calls per run.
    pub steps_mean: f64,
    /// Tokens in, all runs.
    pub input_tokens: u64,
    /// Tokens out, all runs.
    pub output_tokens: u64,
    /// Share of prompt tokens served from cache.
    pub cache_hit_rate: f64,
    /// Cost, over runs where it is known.
    pub cost_usd: Option<f64>,
    /// Mean failed steps per run.
    pub failed_steps_mean: f64,
    /// Edits landed, all runs.
    pub edits_landed: u64,
    /// Per tool.
    pub tools: Vec<ToolSummary>,
    /// Failed calls per error class, most first.
    pub errors: Vec<(String, u64)>,
}

/// One tool's calls under one model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSummary {
    /// The tool.
    pub tool: String,
    /// Calls.
    pub calls: u64,
    /// Share of calls that failed.
    pub error_rate: f64,
}

/// The `q`-quantile (0..=1) of `values` by nearest rank; `None` when empty.
fn quantile(values: &mut [f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
    values.get(rank - 1).copied()
}

/// Per model (by name), the numbers of its runs.
pub fn summarize(runs: &[RunRecord]) -> Vec<ModelSummary> {
    let mut by_model: BTreeMap<&str, Vec<&RunRecord>> = BTreeMap::new();
    for r in runs {
        by_model.entry(r.model.as_str()).or_default().push(r);
    }
    by_model
        .into_iter()
        .map(|(model, rs)| {
            let n = rs.len() as f64;
            let mut wall: Vec<f64> = rs.iter().map(|r| r.wall_ms).collect();
            let mut first: Vec<f64> = rs.iter().filter_map(|r| r.first_token_ms).collect();
            let mut edit: Vec<f64> = rs.iter().filter_map(|r| r.first_edit_ms).collect();
            let input: u64 = rs.iter().map(|r| r.input_tokens).sum();
            let cached: u64 = rs.iter().map(|r| r.cached_input_tokens).sum();
            let costs: Vec<f64> = rs.iter().filter_map(|r| r.cost_usd).collect();
            let mut tools: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
            let mut errors: BTreeMap<&str, u64> = BTreeMap::new();
            for r in &rs {
                for (tool, calls) in &r.calls {
                    let t = tools.entry(tool).or_default();
                    t.0 += u64::from(*calls);
                    t.1 += u64::from(r.tool_errors.get(tool).copied().unwrap_or(0));
                }
                for (class, count) in &r.errors {
                    *errors.entry(class).or_default() += u64::from(*count);
                }
            }
            let mut errors: Vec<(String, u64)> =
                errors.into_iter().map(|(c, n)| (c.to_owned(), n)).collect();
            errors.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            ModelSummary {
                model: model.to_owned(),
                runs: rs.len(),
                done_rate: rs.iter().filter(|r| r.status == "done").count() as f64 / n,
                wall_ms_p50: quantile(&mut wall, 0.5).unwrap_or(0.0),
                wall_ms_p90: quantile(&mut wall, 0.9).unwrap_or(0.0),
                first_token_ms_p50: quantile(&mut first, 0.5),
                first_edit_ms_p50: quantile(&mut edit, 0.5),
                steps_mean: rs.iter().map(|r| f64::from(r.steps)).sum::<f64>() / n,
                input_tokens: input,
                output_tokens: rs.iter().map(|r| r.output_tokens).sum(),
                cache_hit_rate: if input == 0 {
                    0.0
                } else {
                    cached as f64 / input as f64
                },
                cost_usd: (!costs.is_empty()).then(|| costs.iter().sum()),
                failed_steps_mean: rs.iter().map(|r| f64::from(r.failed_steps)).sum::<f64>() / n,
                edits_landed: rs.iter().map(|r| u64::from(r.edits_landed)).sum(),
                tools: tools
                    .into_iter()
                    .map(|(tool, (calls, errs))| ToolSummary {
                        tool: tool.to_owned(),
                        calls,
                        error_rate: if calls == 0 {
                            0.0
                        } else {
                            errs as f64 / calls as f64
                        },
                    })
                    .collect(),
                errors,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_by_nearest_rank() {
        let mut v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(quantile(&mut v, 0.5), Some(5.0));
        assert_eq!(quantile(&mut v, 0.9), Some(9.0));
        assert_eq!(quantile(&mut [7.0], 0.9), Some(7.0));
        assert_eq!(quantile(&mut [], 0.5), None);
    }

    #[test]
    fn runs_sum_up_per_model_and_tool() {
        let run = |model: &str, wall: f64, status: &str, grep: u32, grep_err: u32| RunRecord {
            model: model.into(),
            wall_ms: wall,
            status: status.into(),
            steps: 2,
            input_tokens: 100,
            cached_input_tokens: 50,
            first_token_ms: Some(wall / 10.0),
            calls: [("grep".to_owned(), grep)].into(),
            tool_errors: [("grep".to_owned(), grep_err)].into(),
            errors: [("Timeout".to_owned(), grep_err)].into(),
            ..RunRecord::default()
        };
        let s = summarize(&[
            run("a", 100.0, "done", 2, 0),
            run("a", 300.0, "cancelled", 2, 1),
            run("b", 50.0, "done", 1, 0),
        ]);
        assert_eq!(s.len(), 2);
        let a = &s[0];
        assert_eq!((a.model.as_str(), a.runs, a.done_rate), ("a", 2, 0.5));
        assert_eq!((a.wall_ms_p50, a.wall_ms_p90), (100.0, 300.0));
        assert_eq!(a.first_token_ms_p50, Some(10.0));
        assert_eq!(a.cache_hit_rate, 0.5);
        assert_eq!(a.tools[0].calls, 4);
        assert_eq!(a.tools[0].error_rate, 0.25);
        assert_eq!(a.errors, [("Timeout".to_owned(), 1)]);
        assert_eq!(s[1].cost_usd, None);
    }
}
