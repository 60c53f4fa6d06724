//! Recording runs in the stats database (`agentls stats`), off the async threads.

use std::path::PathBuf;

use agentls_agent::Metrics;

/// The session's metrics as the stats crate takes them: plain numbers (it sits below
/// the agent and knows nothing of it).
pub fn totals(m: &Metrics) -> agentls_stats::Totals {
    agentls_stats::Totals {
        wall_ms: m.wall_ms,
        model_ms: m.model_ms,
        tool_ms: m.tool_ms,
        steps: m.steps,
        input_tokens: m.input_tokens,
        cached_input_tokens: m.cached_input_tokens,
        output_tokens: m.output_tokens,
        cost_usd: m.cost_usd,
        failed_steps: m.failed_steps,
        failed_commands: m.failed_commands,
    }
}

/// Records `record` in the database at `path`, off the async threads, and returns the
/// alerts it takes part in: tools that failed in this run whose failure rate under its
/// model, over the last day, left the baseline of the 30 days before (each logged as a
/// warning). A failure to record is a warning, never the run's.
pub async fn record_run(
    path: Option<PathBuf>,
    record: agentls_stats::RunRecord,
) -> Vec<agentls_stats::Alert> {
    let Some(path) = path else {
        return Vec::new();
    };
    let written = tokio::task::spawn_blocking(move || {
        let mut db = agentls_stats::StatsDb::open(&path)?;
        db.record(&record)?;
        if record.tool_errors.is_empty() {
            return Ok(Vec::new());
        }
        let window = record.started_at_ms - agentls_stats::alerts::DAY_MS;
        let mut alerts = db.alerts(window, Some(&record.model))?;
        alerts.retain(|a| record.tool_errors.contains_key(&a.tool));
        Ok::<_, agentls_stats::StatsError>(alerts)
    })
    .await;
    match written {
        Ok(Ok(alerts)) => {
            for a in &alerts {
                tracing::warn!("failure rate alert: {} (see `agentls stats`)", a.describe());
            }
            alerts
        }
        Ok(Err(e)) => {
            tracing::warn!("run not recorded: {e}");
            Vec::new()
        }
        Err(e) => {
            tracing::warn!("run not recorded: {e}");
            Vec::new()
        }
    }
}
