//! Keep Rate in the editor: after an agent edit lands, the lines it added are looked
//! for in the file (the live buffer when open, else the disk) at fixed delays (30 s,
//! 5 min, 1 h; `AGENTLS_KEEP_RATE_SECS=1,3` for tests), and each look is recorded in
//! the stats database (`agentls_stats::keep`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agentls_stats::{KeepRecord, StatsDb};

use crate::state::State;

/// The delays, in seconds.
fn delays() -> Vec<u64> {
    std::env::var("AGENTLS_KEEP_RATE_SECS")
        .ok()
        .and_then(|v| v.split(',').map(|s| s.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![30, 300, 3600])
}

/// Follows the lines an edit of `path` added (from `old` to `new`) for `session` on
/// `model`; nothing when stats are off or the edit added no line.
pub fn follow(state: &Arc<State>, session: &str, model: &str, path: PathBuf, old: &str, new: &str) {
    let Some(db) = state.config().config.stats.db_path(None) else {
        return;
    };
    let lines = agentls_stats::keep::added_lines(old, new);
    if lines.is_empty() {
        return;
    }
    let (state, session, model) = (state.clone(), session.to_owned(), model.to_owned());
    tokio::spawn(async move {
        let mut waited = 0;
        for after in delays() {
            tokio::time::sleep(Duration::from_secs(after.saturating_sub(waited))).await;
            waited = after;
            let text = current_text(&state, &path);
            let look = KeepRecord {
                session_id: session.clone(),
                model: model.clone(),
                after_secs: after,
                lines: lines.len() as u32,
                kept: text.map_or(0, |t| agentls_stats::keep::kept(&lines, &t)),
                at_ms: SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as i64),
            };
            let db = db.clone();
            let written = tokio::task::spawn_blocking(move || {
                StatsDb::open(&db).and_then(|mut d| d.record_keep(&look))
            })
            .await;
            if !matches!(written, Ok(Ok(()))) {
                tracing::warn!("keep rate not recorded: {written:?}");
            }
        }
    });
}

/// The file as the user has it: the open buffer, else the disk (`None`: gone).
fn current_text(state: &State, path: &std::path::Path) -> Option<String> {
    if let Some(snap) =
        agentls_text::DocUri::from_file_path(path).and_then(|u| state.store.snapshot(&u))
    {
        return Some(snap.rope.to_string());
    }
    std::fs::read_to_string(path).ok()
}
