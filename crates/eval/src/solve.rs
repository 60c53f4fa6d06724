//! What `agentls eval` adds for the small-model pipeline (`agentls_agent::solve`):
//! each attempt samples with its own seed (so `--attempts k` is k samples, not one run
//! k times), and beside selection (the chosen change passes the hidden check) it
//! measures coverage (some candidate passes it), per task kind, so that a gap in
//! either shows.

use std::path::Path;
use std::sync::{Arc, Mutex};

use agentls_agent::solve::{SolveConfig, SolveReport};

use crate::results::Attempt;

/// Where a session's pipeline report lands.
pub type Tap = Arc<Mutex<Option<SolveReport>>>;

/// The pipeline's settings for attempt `attempt` (1-based): a seed of its own;
/// `together`: samples decoded in batches where the model can; `task_checks`: checks
/// from the task's values asked for first.
pub fn config(attempt: u32, together: bool, task_checks: bool) -> (SolveConfig, Tap) {
    let tap: Tap = Arc::default();
    let config = SolveConfig {
        seed: u64::from(attempt) * 1_000 + 1,
        report: Some(tap.clone()),
        together,
        task_checks,
        ..SolveConfig::default()
    };
    (config, tap)
}

/// The report the session left, if the pipeline ran.
pub fn taken(tap: &Tap) -> Option<SolveReport> {
    tap.lock().ok()?.take()
}

/// Whether some candidate of `report` passes the hidden check: each distinct
/// candidate text laid over a fresh copy of the task's repository and checked there
/// (`check` runs the task's check on a workspace). `None` when the pipeline did not
/// run; `Some(passed)` when the chosen change already passed.
pub async fn covered<F, Fut>(
    report: Option<&SolveReport>,
    passed: bool,
    repo: &Path,
    copy: impl Fn(&Path, &Path) -> anyhow::Result<()>,
    check: F,
) -> anyhow::Result<Option<bool>>
where
    F: Fn(std::path::PathBuf) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<bool>>,
{
    let Some(report) = report else {
        return Ok(None);
    };
    if passed {
        return Ok(Some(true));
    }
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for (i, c) in report.candidates.iter().enumerate() {
        let Some(text) = c.text.as_deref() else {
            continue;
        };
        // The chosen one was checked already, and only what builds can pass.
        if Some(i) == report.chosen || !c.builds || seen.contains(&(c.path.as_str(), text)) {
            continue;
        }
        seen.push((c.path.as_str(), text));
        let scratch = tempfile::tempdir()?;
        let ws = scratch.path().join("ws");
        copy(repo, &ws)?;
        std::fs::write(ws.join(&c.path), text)?;
        for (path, text) in &c.also {
            std::fs::write(ws.join(path), text)?;
        }
        if check(ws).await? {
            return Ok(Some(true));
        }
    }
    Ok(Some(false))
}

/// A task's kind, from its name (`py-rename-class` → `rename`): what the table groups by.
pub fn kind(task: &str) -> &'static str {
    let rest = task.split_once('-').map_or(task, |(_, r)| r);
    for (prefix, kind) in [
        ("rename", "rename"),
        ("mutant", "mutant"),
        ("cli", "cli-flag"),
        ("error-message", "error-message"),
        ("message", "error-message"),
        ("signature", "signature"),
        ("param", "signature"),
        ("config", "config"),
        ("symptom", "symptom"),
        ("extract", "extract"),
    ] {
        if rest.starts_with(prefix) {
            return kind;
        }
    }
    "function"
}

/// Per task kind: attempts, how many the pipeline took, selection (passed) and
/// coverage (some candidate passed), and the median time of an attempt. One line per
/// kind and a total, as a Markdown table.
pub fn table(done: &[Attempt]) -> String {
    let mut kinds: Vec<&str> = done.iter().map(|a| kind(&a.task)).collect();
    kinds.sort_unstable();
    kinds.dedup();
    let mut out = String::from(
        "| kind | attempts | pipeline | selection (passed) | coverage (a candidate passed) | median s |\n|---|---|---|---|---|---|\n",
    );
    let mut row = |name: &str, mine: Vec<&Attempt>| {
        let n = mine.len();
        let piped = mine.iter().filter(|a| a.covered.is_some()).count();
        let passed = mine.iter().filter(|a| a.passed).count();
        let covered = mine
            .iter()
            .filter(|a| a.covered.unwrap_or(a.passed))
            .count();
        let mut times: Vec<f64> = mine.iter().filter_map(|a| a.agent_ms).collect();
        times.sort_by(f64::total_cmp);
        let median = times.get(times.len() / 2).map_or(0.0, |m| m / 1000.0);
        out.push_str(&format!(
            "| {name} | {n} | {piped} | {passed}/{n} | {covered}/{n} | {median:.0} |\n"
        ));
    };
    for k in &kinds {
        row(k, done.iter().filter(|a| kind(&a.task) == *k).collect());
    }
    row("all", done.iter().collect());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_come_from_task_names() {
        assert_eq!(kind("py-rename-class"), "rename");
        assert_eq!(kind("go-mutant-luhn"), "mutant");
        assert_eq!(kind("rs-cli-flag"), "cli-flag");
        assert_eq!(kind("js-reverse"), "function");
        assert_eq!(kind("py-param-audit-seconds"), "signature");
        assert_eq!(kind("js-cli-envdiff-ignore"), "cli-flag");
        assert_eq!(kind("go-message-ini-line"), "error-message");
        assert_eq!(kind("rs-config-rate-limit"), "config");
    }

    #[test]
    fn attempts_get_distinct_seeds() {
        let (a, _) = config(1, true, false);
        let (b, _) = config(2, false, true);
        assert_ne!(a.seed, b.seed);
        assert!(a.together && !b.together);
        assert!(!a.task_checks && b.task_checks);
    }
}
