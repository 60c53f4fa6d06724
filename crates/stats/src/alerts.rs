//! Anomalies: a tool whose failure rate under a model has left its baseline. The
//! recent window's failures are tested against the rate before it with a one-sided
//! exact binomial test: an alert when P(X >= failures | calls, baseline rate) < 0.01
//! and at least three calls failed (a single bad run is not a trend).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::RunRecord;

/// The significance level of an alert.
pub const ALPHA: f64 = 0.01;
/// Fewer recent failures than this never alert.
pub const MIN_FAILURES: u64 = 3;
/// The baseline: this many days before the window.
pub const BASELINE_DAYS: i64 = 30;
/// A day in milliseconds; the window is the last day unless asked otherwise.
pub const DAY_MS: i64 = 86_400_000;

/// One tool under one model whose failures rose.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Alert {
    /// The model.
    pub model: String,
    /// The tool.
    pub tool: String,
    /// Recent calls and failures.
    pub calls: u64,
    /// Recent failures.
    pub failures: u64,
    /// The rate before the window (smoothed: (failures + 1) / (calls + 2)).
    pub baseline_rate: f64,
    /// The chance of this many failures at the baseline rate.
    pub p: f64,
}

impl Alert {
    /// One line for people: `tool \`t\` under model \`m\`: 4 of 5 calls failed (baseline
    /// 3.2%, p = 1.2e-4)`.
    pub fn describe(&self) -> String {
        format!(
            "tool `{}` under model `{}`: {} of {} calls failed (baseline {:.1}%, p = {:.1e})",
            self.tool,
            self.model,
            self.failures,
            self.calls,
            self.baseline_rate * 100.0,
            self.p
        )
    }
}

/// `P(X >= k)` for `X ~ Binomial(n, p)`, summed in log space.
pub fn binomial_upper_tail(k: u64, n: u64, p: f64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if k > n || p <= 0.0 {
        // More successes than trials, or none possible.
        return 0.0;
    }
    if p >= 1.0 {
        return 1.0;
    }
    let (lp, lq) = (p.ln(), (1.0 - p).ln());
    // ln C(n, i), built up from ln C(n, 0) = 0.
    let mut ln_choose = 0.0_f64;
    let mut tail = 0.0_f64;
    for i in 0..=n {
        if i > 0 {
            ln_choose += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        if i >= k {
            tail += (ln_choose + i as f64 * lp + (n - i) as f64 * lq).exp();
        }
    }
    tail.min(1.0)
}

/// Calls and failures per (model, tool).
fn counts(runs: &[&RunRecord]) -> BTreeMap<(String, String), (u64, u64)> {
    let mut out: BTreeMap<(String, String), (u64, u64)> = BTreeMap::new();
    for r in runs {
        for (tool, calls) in &r.calls {
            let c = out.entry((r.model.clone(), tool.clone())).or_default();
            c.0 += u64::from(*calls);
            c.1 += u64::from(r.tool_errors.get(tool).copied().unwrap_or(0));
        }
    }
    out
}

/// The alerts of the runs since `window_start_ms` against the runs before it.
pub fn alerts(runs: &[RunRecord], window_start_ms: i64) -> Vec<Alert> {
    let (recent, before): (Vec<&RunRecord>, Vec<&RunRecord>) = runs
        .iter()
        .partition(|r| r.started_at_ms >= window_start_ms);
    let baseline = counts(&before);
    let mut out = Vec::new();
    for ((model, tool), (calls, failures)) in counts(&recent) {
        if failures < MIN_FAILURES {
            continue;
        }
        let (n0, e0) = baseline
            .get(&(model.clone(), tool.clone()))
            .copied()
            .unwrap_or((0, 0));
        let baseline_rate = (e0 as f64 + 1.0) / (n0 as f64 + 2.0);
        let p = binomial_upper_tail(failures, calls, baseline_rate);
        if p < ALPHA {
            out.push(Alert {
                model,
                tool,
                calls,
                failures,
                baseline_rate,
                p,
            });
        }
    }
    out
}

impl crate::StatsDb {
    /// The alerts of the window starting at `window_start_ms` against the
    /// [`BASELINE_DAYS`] before it, for `model` when given.
    pub fn alerts(
        &mut self,
        window_start_ms: i64,
        model: Option<&str>,
    ) -> Result<Vec<Alert>, crate::StatsError> {
        let history = self.runs(Some(window_start_ms - BASELINE_DAYS * DAY_MS), model)?;
        Ok(alerts(&history, window_start_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_upper_tail_matches_known_values() {
        // 10 fair coins, at least 8 heads: 56 / 1024.
        assert!((binomial_upper_tail(8, 10, 0.5) - 0.054_687_5).abs() < 1e-9);
        assert_eq!(binomial_upper_tail(0, 10, 0.3), 1.0);
        assert_eq!(binomial_upper_tail(11, 10, 0.3), 0.0);
        assert!((binomial_upper_tail(10, 10, 0.5) - 1.0 / 1024.0).abs() < 1e-12);
    }

    fn run(model: &str, at: i64, tool: &str, calls: u32, errors: u32) -> RunRecord {
        RunRecord {
            model: model.into(),
            started_at_ms: at,
            calls: [(tool.to_owned(), calls)].into(),
            tool_errors: [(tool.to_owned(), errors)].into(),
            ..RunRecord::default()
        }
    }

    #[test]
    fn a_rate_that_leaves_its_baseline_alerts_and_noise_does_not() {
        // Baseline: str_replace fails 5% of the time over 400 calls.
        let mut runs: Vec<RunRecord> = (0..40)
            .map(|i| run("m", i, "str_replace", 10, u32::from(i % 2 == 0)))
            .collect();
        // Recent: 12 of 40 fail.
        runs.extend((0..4).map(|i| run("m", 100 + i, "str_replace", 10, 3)));
        let a = alerts(&runs, 100);
        assert_eq!(a.len(), 1, "{a:?}");
        assert_eq!((a[0].calls, a[0].failures), (40, 12));
        assert!(a[0].p < 1e-4, "{}", a[0].p);
        // Recent at the baseline's own rate: 2 of 40 (and too few to count anyway),
        // or 4 of 80: no alert.
        let mut calm: Vec<RunRecord> = runs[..40].to_vec();
        calm.extend((0..8).map(|i| run("m", 100 + i, "str_replace", 10, u32::from(i % 2 == 0))));
        assert!(alerts(&calm, 100).is_empty());
        // Another model's failures are judged against its own baseline (none: 1/2).
        let other = vec![run("x", 100, "grep", 10, 3)];
        assert!(
            alerts(&other, 100).is_empty(),
            "3 of 10 at a 50% prior is no news"
        );
    }

    #[test]
    fn the_database_judges_the_window_against_the_days_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = crate::StatsDb::open(&dir.path().join("s.sqlite3")).unwrap();
        let now = 100 * DAY_MS;
        // A quiet month of str_replace (1 failure in 200), then a bad hour: 6 of 10.
        for d in 1..=20 {
            db.record(&run(
                "m",
                now - d * DAY_MS,
                "str_replace",
                10,
                u32::from(d == 3),
            ))
            .unwrap();
        }
        // Older than the baseline: a storm that must not count.
        db.record(&run("m", now - 40 * DAY_MS, "str_replace", 100, 100))
            .unwrap();
        db.record(&run("m", now - 1000, "str_replace", 10, 6))
            .unwrap();
        let a = db.alerts(now - DAY_MS / 2, Some("m")).unwrap();
        assert_eq!(a.len(), 1, "{a:?}");
        assert_eq!((a[0].calls, a[0].failures), (10, 6));
        assert!((a[0].baseline_rate - 2.0 / 202.0).abs() < 1e-12);
        assert!(
            a[0].describe().starts_with(
                "tool `str_replace` under model `m`: 6 of 10 calls failed (baseline 1.0%, p = "
            ),
            "{}",
            a[0].describe()
        );
        assert!(
            db.alerts(now - DAY_MS / 2, Some("other"))
                .unwrap()
                .is_empty()
        );
    }
}
