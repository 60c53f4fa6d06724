//! What every agent run measured, kept for `agentls stats`: an embedded SQLite database
//! (`rusqlite`, SQLite compiled in) under the user's data directory.
//!
//! - [`RunRecorder`] watches one run's [`agentls_protocol::agent::Event`]s (time to
//!   first token, time to first landed edit, edits landed) and turns them, with the
//!   session's [`Totals`] before and after the run (plain numbers the session hands
//!   over: this crate sits below the agent), into a [`RunRecord`].
//! - [`StatsDb`] stores records ([`StatsDb::record`]) and reads them back
//!   ([`StatsDb::runs`]); [`summarize`] makes the per-model tables, [`alerts`] the
//!   tools whose failure rate under a model left its baseline.
//!
//! - [`satisfaction`]: the optional judgement of the user's next message after an agent
//!   turn (the classifier's prompt, its answer's parser, the shares per model).
//!
//! **Invariants.** Only numbers and names (models, tools, error classes, satisfaction
//! labels) are stored, never code, prompts or paths; the one exception is the
//! classifier's short reason (at most 200 characters), stored only when the user turned
//! `[stats] privacy` off. The schema carries its version (`PRAGMA user_version`)
//! and migrates forward in order. The database stays bounded: past
//! [`StatsDb::MAX_RUNS`] runs the oldest go. A failure to record is the caller's
//! warning, never a failed run.
//!
//! ```no_run
//! # fn demo() -> Result<(), agentls_stats::StatsError> {
//! let mut db = agentls_stats::StatsDb::open(std::path::Path::new("/tmp/stats.sqlite3"))?;
//! let runs = db.runs(None, None)?;
//! let tables = agentls_stats::summarize(&runs);
//! # let _ = tables; Ok(()) }
//! ```

pub mod alerts;
mod db;
pub mod keep;
mod recorder;
pub mod satisfaction;
mod summary;

pub use alerts::{Alert, alerts};
pub use db::{KeepRecord, RunRecord, StatsDb, StatsError};
pub use recorder::{RunRecorder, Totals};
pub use satisfaction::SatisfactionRecord;
pub use summary::{ModelSummary, ToolSummary, summarize};

/// `s` cut to at most `max` characters (on a character boundary), `…` marking a cut.
pub fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}

/// Now, in Unix milliseconds: the clock every record is stamped with.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
