//! Keep Rate in the editor: after an agent edit lands, the lines it added are looked
//! for in the file (the live buffer when open, else the disk) at fixed delays (30 s,
//! 5 min, 1 h; `AGENTLS_KEEP_RATE_SECS=1,3` for tests), and once more when the server
//! shuts down (the editor closed: "at session end"). Each look is recorded in the
//! stats database (`agentls_stats::keep`), with the model and the tool that made the
//! edit. A server killed without `shutdown` records no end look.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentls_stats::{KeepRecord, StatsDb};

use crate::state::State;

pub(crate) mod followed;

use followed::Edit;

/// The delays, in seconds.
fn delays() -> Vec<u64> {
    std::env::var("AGENTLS_KEEP_RATE_SECS")
        .ok()
        .and_then(|v| v.split(',').map(|s| s.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![30, 300, 3600])
}

impl Edit {
    /// A look at the file as the user has it now.
    fn look(&self, state: &State, after_secs: u64, at_end: bool) -> KeepRecord {
        let text = current_text(state, &self.path);
        KeepRecord {
            session_id: self.session.clone(),
            model: self.model.clone(),
            tool: self.tool.clone(),
            after_secs,
            at_end,
            lines: self.lines.len() as u32,
            kept: text.map_or(0, |t| agentls_stats::keep::kept(&self.lines, &t)),
            at_ms: agentls_stats::now_ms(),
        }
    }
}

/// Follows the lines an edit of `path` added (from `old` to `new`) by `tool` for
/// `session` on `model`; nothing when stats are off or the edit added no line.
pub fn follow(
    state: &Arc<State>,
    session: &str,
    model: &str,
    tool: &str,
    path: PathBuf,
    old: &str,
    new: &str,
) {
    let Some(db) = state.config().config.stats.db_path(None) else {
        return;
    };
    let lines = agentls_stats::keep::added_lines(old, new);
    if lines.is_empty() {
        return;
    }
    let edit = Edit {
        session: session.to_owned(),
        model: model.to_owned(),
        tool: tool.to_owned(),
        path,
        lines: Arc::new(lines),
        landed: Instant::now(),
    };
    state.keep_followed.push(edit.clone());
    let state = state.clone();
    tokio::spawn(async move {
        let mut waited = 0;
        for after in delays() {
            tokio::time::sleep(Duration::from_secs(after.saturating_sub(waited))).await;
            waited = after;
            record(db.clone(), vec![edit.look(&state, after, false)]).await;
        }
    });
}

/// The look at session end of every edit followed, recorded before the server answers
/// `shutdown` (the process may be gone right after).
pub async fn at_end(state: &Arc<State>) {
    let edits = state.keep_followed.take();
    let Some(db) = state.config().config.stats.db_path(None) else {
        return;
    };
    if edits.is_empty() {
        return;
    }
    let looks = edits
        .iter()
        .map(|e| e.look(state, e.landed.elapsed().as_secs(), true))
        .collect();
    record(db, looks).await;
}

/// Writes `looks` off the async threads; a failure is a warning.
async fn record(db: PathBuf, looks: Vec<KeepRecord>) {
    let n = looks.len();
    let written = tokio::task::spawn_blocking(move || {
        let mut d = StatsDb::open(&db)?;
        looks.iter().try_for_each(|l| d.record_keep(l))
    })
    .await;
    if !matches!(written, Ok(Ok(()))) {
        tracing::warn!("keep rate not recorded ({n} look(s)): {written:?}");
    }
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
