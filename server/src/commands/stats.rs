//! `agentls stats`: the recorded runs' numbers, per model and per tool.

use std::io::Write;
use std::process::ExitCode;

use agentls_stats::alerts::DAY_MS;
use agentls_stats::now_ms;
use anyhow::Context;

use crate::cli::StatsArgs;

/// Runs `agentls stats`.
pub fn run(args: StatsArgs) -> anyhow::Result<ExitCode> {
    let config =
        agentls_host::config::load_for_cli(args.config.as_deref(), None, serde_json::Value::Null)?;
    let mut settings = config.stats;
    // Reading is asked for explicitly: `enabled = false` only stops recording.
    settings.enabled = true;
    let path = settings
        .db_path(args.stats_db.as_deref())
        .context("no data directory for the stats database; pass --stats-db")?;
    let since = match &args.since {
        Some(s) => Some(since_ms(s, now_ms())?),
        None => None,
    };
    let mut out = std::io::stdout().lock();
    if !path.is_file() {
        writeln!(
            out,
            "no runs recorded yet ({} does not exist)",
            path.display()
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut db = agentls_stats::StatsDb::open(&path)?;
    let runs = db.runs(since, args.model.as_deref())?;
    let tables = agentls_stats::summarize(&runs);
    // Alerts: the window (--since, else the last day) against the 30 days before it.
    let window = since.unwrap_or_else(|| now_ms() - DAY_MS);
    let alerts = db.alerts(window, args.model.as_deref())?;
    let looks = db.keeps(since, args.model.as_deref())?;
    let keeps = agentls_stats::keep::by_model(&looks);
    let keeps_by_tool = agentls_stats::keep::by_tool(&looks);
    let judged = db.satisfactions(since, args.model.as_deref())?;
    let satisfaction = agentls_stats::satisfaction::by_model(&judged);
    if args.json {
        let v = serde_json::json!({
            "database": path,
            "runs": runs.len(),
            "models": tables,
            "alerts": alerts,
            "keep_rate": keeps,
            "keep_rate_by_tool": keeps_by_tool,
            "satisfaction": satisfaction,
            "satisfaction_messages": judged,
        });
        writeln!(out, "{v}")?;
        return Ok(ExitCode::SUCCESS);
    }
    if !alerts.is_empty() {
        writeln!(
            out,
            "alerts (failures since the window's start against the 30 days before; one-sided binomial test, p < {}, at least {} failures):",
            agentls_stats::alerts::ALPHA,
            agentls_stats::alerts::MIN_FAILURES
        )?;
        for a in &alerts {
            writeln!(
                out,
                "  {} · {}: {} of {} calls failed (baseline {:.1}%), p = {:.2e}",
                a.model,
                a.tool,
                a.failures,
                a.calls,
                a.baseline_rate * 100.0,
                a.p
            )?;
        }
    }
    if runs.is_empty() {
        writeln!(
            out,
            "no runs recorded in {} for this filter",
            path.display()
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let ms = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.0} ms"));
    for m in &tables {
        writeln!(
            out,
            "{} · {} run(s) · {:.0}% done",
            m.model,
            m.runs,
            m.done_rate * 100.0
        )?;
        writeln!(
            out,
            "  wall p50 {} p90 {} · first token p50 {} · first edit p50 {}",
            ms(Some(m.wall_ms_p50)),
            ms(Some(m.wall_ms_p90)),
            ms(m.first_token_ms_p50),
            ms(m.first_edit_ms_p50)
        )?;
        writeln!(
            out,
            "  steps/run {:.1} · tokens in {} out {} · cache hits {:.0}% · cost {} · failed steps/run {:.2} · edits {}",
            m.steps_mean,
            m.input_tokens,
            m.output_tokens,
            m.cache_hit_rate * 100.0,
            m.cost_usd.map_or("-".to_owned(), |c| format!("${c:.4}")),
            m.failed_steps_mean,
            m.edits_landed
        )?;
        for t in &m.tools {
            writeln!(
                out,
                "  {:<20} {:>6} call(s) {:>5.1}% failed",
                t.tool,
                t.calls,
                t.error_rate * 100.0
            )?;
        }
        let kept: Vec<String> = keeps
            .iter()
            .filter(|k| k.model.as_deref() == Some(m.model.as_str()))
            .map(|k| k.line())
            .collect();
        if !kept.is_empty() {
            writeln!(out, "  keep rate: {}", kept.join(" · "))?;
        }
        if let Some(s) = satisfaction.iter().find(|s| s.model == m.model) {
            writeln!(out, "  satisfaction: {}", s.line())?;
        }
        if !m.errors.is_empty() {
            let top: Vec<String> = m
                .errors
                .iter()
                .take(5)
                .map(|(c, n)| format!("{c} {n}"))
                .collect();
            writeln!(out, "  errors: {}", top.join(", "))?;
        }
    }
    if !keeps_by_tool.is_empty() {
        writeln!(out, "keep rate by tool (all models):")?;
        let mut rows: Vec<(&str, Vec<String>)> = Vec::new();
        for k in &keeps_by_tool {
            let tool = k.tool.as_deref().unwrap_or_default();
            let look = k.line();
            match rows.last_mut() {
                Some((t, looks)) if *t == tool => looks.push(look),
                _ => rows.push((tool, vec![look])),
            }
        }
        for (tool, looks) in rows {
            writeln!(out, "  {tool:<20} {}", looks.join(" · "))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `24h`, `7d`, `30m` before `now`, or a `YYYY-MM-DD` date (UTC midnight), in Unix ms.
fn since_ms(s: &str, now: i64) -> anyhow::Result<i64> {
    let bad = || anyhow::anyhow!("--since {s:?}: give 30m, 24h, 7d or a date like 2026-11-01");
    let s = s.trim();
    if let Some((y, rest)) = s.split_once('-') {
        let (m, d) = rest.split_once('-').ok_or_else(bad)?;
        let (y, m, d): (i64, i64, i64) = (
            y.parse().map_err(|_| bad())?,
            m.parse().map_err(|_| bad())?,
            d.parse().map_err(|_| bad())?,
        );
        anyhow::ensure!((1..=12).contains(&m) && (1..=31).contains(&d), bad());
        return Ok(days_from_civil(y, m, d) * 86_400_000);
    }
    let unit = s.chars().last().ok_or_else(bad)?;
    let n: i64 = s[..s.len() - unit.len_utf8()].parse().map_err(|_| bad())?;
    let ms = match unit {
        'm' => 60_000,
        'h' => 3_600_000,
        'd' => 86_400_000,
        _ => return Err(bad()),
    };
    Ok(now - n * ms)
}

/// Days from 1970-01-01 to a civil date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_reads_spans_and_dates() {
        let now = 10 * 86_400_000;
        assert_eq!(since_ms("24h", now).unwrap(), 9 * 86_400_000);
        assert_eq!(since_ms("7d", now).unwrap(), 3 * 86_400_000);
        assert_eq!(since_ms("30m", now).unwrap(), now - 1_800_000);
        assert_eq!(since_ms("1970-01-02", now).unwrap(), 86_400_000);
        assert_eq!(since_ms("2026-11-25", now).unwrap(), 1_795_564_800_000);
        assert!(since_ms("yesterday", now).is_err());
        assert!(since_ms("2026-13-01", now).is_err());
    }
}
