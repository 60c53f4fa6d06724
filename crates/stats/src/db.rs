//! The database: schema and migrations, one row per run, tool calls per run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, params};
use serde::Serialize;

use crate::satisfaction::SatisfactionRecord;

/// One run, as stored.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunRecord {
    /// The session it belongs to.
    pub session_id: String,
    /// `editor`, `run`, `acp` or `eval`.
    pub front_end: String,
    /// The model (its configured name).
    pub model: String,
    /// When it started, Unix milliseconds.
    pub started_at_ms: i64,
    /// Wall time of the run.
    pub wall_ms: f64,
    /// Waiting for the model.
    pub model_ms: f64,
    /// Inside tools.
    pub tool_ms: f64,
    /// From the start to the model's first text or tool call.
    pub first_token_ms: Option<f64>,
    /// From the start to the first edit that landed.
    pub first_edit_ms: Option<f64>,
    /// Model calls.
    pub steps: u32,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Of which from the provider's cache.
    pub cached_input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Cost in US dollars, when known.
    pub cost_usd: Option<f64>,
    /// `done`, `cancelled`, `budget` or `provider_error` (`unfinished`: a caller's bug).
    pub status: String,
    /// Steps with a failed call or command.
    pub failed_steps: u32,
    /// Commands that ran and failed.
    pub failed_commands: u32,
    /// Edits that landed.
    pub edits_landed: u32,
    /// Calls per tool.
    pub calls: BTreeMap<String, u32>,
    /// Failed calls per error class.
    pub errors: BTreeMap<String, u32>,
    /// Failed calls per tool.
    pub tool_errors: BTreeMap<String, u32>,
}

/// Why the database could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StatsError {
    /// SQLite said no.
    #[error("stats database: {0}")]
    Sql(#[from] rusqlite::Error),
    /// The directory could not be made.
    #[error("stats database: {0}")]
    Io(#[from] std::io::Error),
    /// A database from a newer agentls.
    #[error("stats database: schema version {0} is newer than this agentls knows ({1})")]
    Newer(i64, i64),
}

/// Migrations, in order: the database's `user_version` is how many have run.
const MIGRATIONS: &[&str] = &[
    // 1: runs and their tool calls.
    "CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL,
        front_end TEXT NOT NULL,
        model TEXT NOT NULL,
        started_at_ms INTEGER NOT NULL,
        wall_ms REAL NOT NULL,
        model_ms REAL NOT NULL,
        tool_ms REAL NOT NULL,
        first_token_ms REAL,
        steps INTEGER NOT NULL,
        input_tokens INTEGER NOT NULL,
        cached_input_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL,
        cost_usd REAL,
        status TEXT NOT NULL,
        failed_steps INTEGER NOT NULL
     );
     CREATE INDEX runs_started ON runs(started_at_ms);
     CREATE TABLE tool_calls (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        tool TEXT NOT NULL,
        calls INTEGER NOT NULL,
        errors INTEGER NOT NULL,
        PRIMARY KEY (run_id, tool)
     );",
    // 2: edits and commands, and errors by class.
    "ALTER TABLE runs ADD COLUMN first_edit_ms REAL;
     ALTER TABLE runs ADD COLUMN edits_landed INTEGER NOT NULL DEFAULT 0;
     ALTER TABLE runs ADD COLUMN failed_commands INTEGER NOT NULL DEFAULT 0;
     CREATE TABLE run_errors (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        class TEXT NOT NULL,
        count INTEGER NOT NULL,
        PRIMARY KEY (run_id, class)
     );",
    // 3: Keep Rate: how many of an edit's lines were still there after a while.
    "CREATE TABLE keep_rate (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL,
        model TEXT NOT NULL,
        after_secs INTEGER NOT NULL,
        lines INTEGER NOT NULL,
        kept INTEGER NOT NULL,
        at_ms INTEGER NOT NULL
     );
     CREATE INDEX keep_rate_at ON keep_rate(at_ms);",
    // 4: Keep Rate per tool, and the last look when the session ended.
    "ALTER TABLE keep_rate ADD COLUMN tool TEXT NOT NULL DEFAULT '';
     ALTER TABLE keep_rate ADD COLUMN at_end INTEGER NOT NULL DEFAULT 0;",
    // 5: Satisfaction: how the user's next message read after an agent turn.
    "CREATE TABLE satisfaction (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL,
        model TEXT NOT NULL,
        label TEXT NOT NULL,
        reason TEXT,
        at_ms INTEGER NOT NULL
     );
     CREATE INDEX satisfaction_at ON satisfaction(at_ms);",
];

/// Deletes all but the newest `max` rows of `table` (one of ours, never user input):
/// every table stays bounded like the runs.
fn keep_newest(tx: &rusqlite::Transaction<'_>, table: &str, max: i64) -> rusqlite::Result<()> {
    tx.execute(
        &format!(
            "DELETE FROM {table} WHERE id <= (SELECT id FROM {table} ORDER BY id DESC LIMIT 1 OFFSET ?1)"
        ),
        params![max],
    )?;
    Ok(())
}

/// One look at an agent edit's lines, some time after it landed.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct KeepRecord {
    /// The session.
    pub session_id: String,
    /// The model that made the edit.
    pub model: String,
    /// The tool that made the edit (empty in looks recorded before tools were).
    pub tool: String,
    /// How long after the edit landed.
    pub after_secs: u64,
    /// The last look, taken when the session ended (the editor closed) rather than
    /// at a fixed delay: `after_secs` is however long that was.
    pub at_end: bool,
    /// The lines the edit added.
    pub lines: u32,
    /// Of which still in the file.
    pub kept: u32,
    /// When it was looked at, Unix ms.
    pub at_ms: i64,
}

/// The stats database.
#[derive(Debug)]
pub struct StatsDb {
    conn: Connection,
    max_runs: i64,
}

impl StatsDb {
    /// Runs kept; past this the oldest go.
    pub const MAX_RUNS: i64 = 100_000;

    /// Where it lives by default: the user data directory's `agentls/stats.sqlite3`.
    pub fn default_path() -> Option<PathBuf> {
        dirs::data_dir().map(|d| d.join("agentls").join("stats.sqlite3"))
    }

    /// Opens (creating it and its directory) and migrates the database at `path`.
    pub fn open(path: &Path) -> Result<Self, StatsError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let conn = Connection::open(path)?;
        // Several agentls processes may record at once.
        conn.busy_timeout(Duration::from_secs(5))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        let mut db = Self {
            conn,
            max_runs: Self::MAX_RUNS,
        };
        db.migrate()?;
        Ok(db)
    }

    /// Keeps at most `n` runs (tests).
    pub fn with_max_runs(mut self, n: i64) -> Self {
        self.max_runs = n;
        self
    }

    /// The schema version.
    pub fn version(&self) -> Result<i64, StatsError> {
        Ok(self
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))?)
    }

    fn migrate(&mut self) -> Result<(), StatsError> {
        let known = MIGRATIONS.len() as i64;
        let at = self.version()?;
        if at > known {
            return Err(StatsError::Newer(at, known));
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(at.max(0) as usize) {
            let tx = self.conn.transaction()?;
            tx.execute_batch(sql)?;
            tx.pragma_update(None, "user_version", (i + 1) as i64)?;
            tx.commit()?;
        }
        Ok(())
    }

    /// Stores `run` (one transaction), then drops the oldest runs past the bound.
    pub fn record(&mut self, run: &RunRecord) -> Result<(), StatsError> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO runs (session_id, front_end, model, started_at_ms, wall_ms, model_ms,
                tool_ms, first_token_ms, steps, input_tokens, cached_input_tokens, output_tokens,
                cost_usd, status, failed_steps, first_edit_ms, edits_landed, failed_commands)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
            params![
                run.session_id,
                run.front_end,
                run.model,
                run.started_at_ms,
                run.wall_ms,
                run.model_ms,
                run.tool_ms,
                run.first_token_ms,
                run.steps,
                run.input_tokens as i64,
                run.cached_input_tokens as i64,
                run.output_tokens as i64,
                run.cost_usd,
                run.status,
                run.failed_steps,
                run.first_edit_ms,
                run.edits_landed,
                run.failed_commands,
            ],
        )?;
        let id = tx.last_insert_rowid();
        for (tool, calls) in &run.calls {
            let errors = run.tool_errors.get(tool).copied().unwrap_or(0);
            tx.execute(
                "INSERT INTO tool_calls (run_id, tool, calls, errors) VALUES (?1, ?2, ?3, ?4)",
                params![id, tool, calls, errors],
            )?;
        }
        for (class, count) in &run.errors {
            tx.execute(
                "INSERT INTO run_errors (run_id, class, count) VALUES (?1, ?2, ?3)",
                params![id, class, count],
            )?;
        }
        keep_newest(&tx, "runs", self.max_runs)?;
        tx.commit()?;
        Ok(())
    }

    /// Stores one Keep Rate look, and keeps at most as many as runs.
    pub fn record_keep(&mut self, k: &KeepRecord) -> Result<(), StatsError> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO keep_rate (session_id, model, after_secs, lines, kept, at_ms, tool, at_end)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                k.session_id,
                k.model,
                k.after_secs as i64,
                k.lines,
                k.kept,
                k.at_ms,
                k.tool,
                k.at_end
            ],
        )?;
        keep_newest(&tx, "keep_rate", self.max_runs)?;
        tx.commit()?;
        Ok(())
    }

    /// Stores one judged message (the reason cut to
    /// [`crate::satisfaction::MAX_REASON_CHARS`]), and keeps at most as many as runs.
    pub fn record_satisfaction(&mut self, s: &SatisfactionRecord) -> Result<(), StatsError> {
        let reason = s
            .reason
            .as_deref()
            .map(|r| crate::cut(r, crate::satisfaction::MAX_REASON_CHARS));
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO satisfaction (session_id, model, label, reason, at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![s.session_id, s.model, s.label, reason, s.at_ms],
        )?;
        keep_newest(&tx, "satisfaction", self.max_runs)?;
        tx.commit()?;
        Ok(())
    }

    /// The judged messages since `since_ms`, of `model` when given, oldest first.
    pub fn satisfactions(
        &mut self,
        since_ms: Option<i64>,
        model: Option<&str>,
    ) -> Result<Vec<SatisfactionRecord>, StatsError> {
        let mut stmt = self.conn.prepare(
            "SELECT session_id, model, label, reason, at_ms FROM satisfaction
             WHERE at_ms >= ?1 AND (?2 IS NULL OR model = ?2) ORDER BY id",
        )?;
        let rows = stmt.query_map(params![since_ms.unwrap_or(i64::MIN), model], |r| {
            Ok(SatisfactionRecord {
                session_id: r.get(0)?,
                model: r.get(1)?,
                label: r.get(2)?,
                reason: r.get(3)?,
                at_ms: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The Keep Rate looks since `since_ms`, of `model` when given.
    pub fn keeps(
        &mut self,
        since_ms: Option<i64>,
        model: Option<&str>,
    ) -> Result<Vec<KeepRecord>, StatsError> {
        let mut stmt = self.conn.prepare(
            "SELECT session_id, model, after_secs, lines, kept, at_ms, tool, at_end FROM keep_rate
             WHERE at_ms >= ?1 AND (?2 IS NULL OR model = ?2) ORDER BY id",
        )?;
        let rows = stmt.query_map(params![since_ms.unwrap_or(i64::MIN), model], |r| {
            Ok(KeepRecord {
                session_id: r.get(0)?,
                model: r.get(1)?,
                after_secs: r.get::<_, i64>(2)? as u64,
                lines: r.get(3)?,
                kept: r.get(4)?,
                at_ms: r.get(5)?,
                tool: r.get(6)?,
                at_end: r.get(7)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The runs since `since_ms` (Unix ms), of `model` when given, oldest first.
    pub fn runs(
        &mut self,
        since_ms: Option<i64>,
        model: Option<&str>,
    ) -> Result<Vec<RunRecord>, StatsError> {
        let mut stmt = self.conn.prepare(
            "SELECT id, session_id, front_end, model, started_at_ms, wall_ms, model_ms, tool_ms,
                first_token_ms, steps, input_tokens, cached_input_tokens, output_tokens, cost_usd,
                status, failed_steps, first_edit_ms, edits_landed, failed_commands
             FROM runs WHERE started_at_ms >= ?1 AND (?2 IS NULL OR model = ?2) ORDER BY id",
        )?;
        let rows = stmt.query_map(params![since_ms.unwrap_or(i64::MIN), model], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                RunRecord {
                    session_id: r.get(1)?,
                    front_end: r.get(2)?,
                    model: r.get(3)?,
                    started_at_ms: r.get(4)?,
                    wall_ms: r.get(5)?,
                    model_ms: r.get(6)?,
                    tool_ms: r.get(7)?,
                    first_token_ms: r.get(8)?,
                    steps: r.get(9)?,
                    input_tokens: r.get::<_, i64>(10)? as u64,
                    cached_input_tokens: r.get::<_, i64>(11)? as u64,
                    output_tokens: r.get::<_, i64>(12)? as u64,
                    cost_usd: r.get(13)?,
                    status: r.get(14)?,
                    failed_steps: r.get(15)?,
                    first_edit_ms: r.get(16)?,
                    edits_landed: r.get(17)?,
                    failed_commands: r.get(18)?,
                    ..RunRecord::default()
                },
            ))
        })?;
        let mut runs: Vec<(i64, RunRecord)> = rows.collect::<Result<_, _>>()?;
        drop(stmt);
        let mut calls = self
            .conn
            .prepare("SELECT run_id, tool, calls, errors FROM tool_calls")?;
        let mut by_run: BTreeMap<i64, Vec<(String, u32, u32)>> = BTreeMap::new();
        for row in calls.query_map([], |r| {
            Ok((r.get::<_, i64>(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })? {
            let (id, tool, n, e) = row?;
            by_run.entry(id).or_default().push((tool, n, e));
        }
        let mut errors = self
            .conn
            .prepare("SELECT run_id, class, count FROM run_errors")?;
        let mut classes: BTreeMap<i64, Vec<(String, u32)>> = BTreeMap::new();
        for row in errors.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get(1)?, r.get(2)?)))? {
            let (id, class, n) = row?;
            classes.entry(id).or_default().push((class, n));
        }
        for (id, run) in &mut runs {
            for (tool, n, e) in by_run.remove(id).unwrap_or_default() {
                run.calls.insert(tool.clone(), n);
                if e > 0 {
                    run.tool_errors.insert(tool, e);
                }
            }
            run.errors = classes.remove(id).unwrap_or_default().into_iter().collect();
        }
        Ok(runs.into_iter().map(|(_, r)| r).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(model: &str, started: i64) -> RunRecord {
        RunRecord {
            session_id: "s".into(),
            front_end: "run".into(),
            model: model.into(),
            started_at_ms: started,
            wall_ms: 100.0,
            status: "done".into(),
            calls: [("grep".to_owned(), 3)].into(),
            tool_errors: [("grep".to_owned(), 1)].into(),
            errors: [("InvalidArguments".to_owned(), 1)].into(),
            ..RunRecord::default()
        }
    }

    #[test]
    fn a_first_version_database_migrates_with_its_runs_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stats.sqlite3");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(MIGRATIONS[0]).unwrap();
            conn.pragma_update(None, "user_version", 1).unwrap();
            conn.execute(
                "INSERT INTO runs (session_id, front_end, model, started_at_ms, wall_ms, model_ms,
                    tool_ms, steps, input_tokens, cached_input_tokens, output_tokens, status,
                    failed_steps) VALUES ('old', 'run', 'm', 5, 1, 0, 0, 1, 10, 0, 2, 'done', 0)",
                [],
            )
            .unwrap();
        }
        let mut db = StatsDb::open(&path).unwrap();
        assert_eq!(db.version().unwrap(), MIGRATIONS.len() as i64);
        let runs = db.runs(None, None).unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!(
            (runs[0].session_id.as_str(), runs[0].edits_landed),
            ("old", 0)
        );
        db.record(&run("m", 6)).unwrap();
        let runs = db.runs(None, None).unwrap();
        assert_eq!(runs[1].calls["grep"], 3);
        assert_eq!(runs[1].tool_errors["grep"], 1);
        assert_eq!(runs[1].errors["InvalidArguments"], 1);
        // Opening again runs nothing twice.
        drop(db);
        assert_eq!(
            StatsDb::open(&path)
                .unwrap()
                .runs(None, None)
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn the_oldest_runs_go_past_the_bound_and_filters_apply() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = StatsDb::open(&dir.path().join("s.sqlite3"))
            .unwrap()
            .with_max_runs(3);
        for i in 0..5 {
            db.record(&run(if i % 2 == 0 { "a" } else { "b" }, i))
                .unwrap();
        }
        let runs = db.runs(None, None).unwrap();
        assert_eq!(
            runs.iter().map(|r| r.started_at_ms).collect::<Vec<_>>(),
            [2, 3, 4]
        );
        assert_eq!(db.runs(Some(3), None).unwrap().len(), 2);
        assert_eq!(db.runs(None, Some("b")).unwrap().len(), 1);
    }

    /// What recording costs a run, printed (a figure, not a limit).
    #[test]
    fn recording_figures() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = StatsDb::open(&dir.path().join("s.sqlite3")).unwrap();
        let mut took: Vec<f64> = (0..100)
            .map(|i| {
                let t = std::time::Instant::now();
                db.record(&run("m", i)).unwrap();
                t.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        took.sort_by(f64::total_cmp);
        assert_eq!(db.runs(None, None).unwrap().len(), 100);
        eprintln!(
            "recording a run: median {:.2} ms, max {:.2} ms",
            took[50], took[99]
        );
    }

    #[test]
    fn keep_rate_looks_are_stored_and_filtered() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = StatsDb::open(&dir.path().join("s.sqlite3")).unwrap();
        for (model, at) in [("a", 1), ("b", 2)] {
            db.record_keep(&KeepRecord {
                session_id: "s".into(),
                model: model.into(),
                tool: "apply_patch".into(),
                after_secs: 30,
                at_end: at == 2,
                lines: 4,
                kept: 3,
                at_ms: at,
            })
            .unwrap();
        }
        assert_eq!(db.keeps(None, None).unwrap().len(), 2);
        let b = db.keeps(None, Some("b")).unwrap();
        assert_eq!((b.len(), b[0].kept, b[0].after_secs), (1, 3, 30));
        assert_eq!((b[0].tool.as_str(), b[0].at_end), ("apply_patch", true));
        assert!(!db.keeps(None, Some("a")).unwrap()[0].at_end);
        assert!(db.keeps(Some(3), None).unwrap().is_empty());
    }

    #[test]
    fn keep_rate_looks_of_a_third_version_database_migrate_without_a_tool() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stats.sqlite3");
        {
            let conn = Connection::open(&path).unwrap();
            for m in &MIGRATIONS[..3] {
                conn.execute_batch(m).unwrap();
            }
            conn.pragma_update(None, "user_version", 3).unwrap();
            conn.execute(
                "INSERT INTO keep_rate (session_id, model, after_secs, lines, kept, at_ms)
                 VALUES ('old', 'm', 300, 2, 1, 7)",
                [],
            )
            .unwrap();
        }
        let mut db = StatsDb::open(&path).unwrap();
        assert_eq!(db.version().unwrap(), MIGRATIONS.len() as i64);
        let k = db.keeps(None, None).unwrap();
        assert_eq!(
            (
                k[0].session_id.as_str(),
                k[0].tool.as_str(),
                k[0].at_end,
                k[0].kept
            ),
            ("old", "", false, 1)
        );
    }

    #[test]
    fn a_fourth_version_database_migrates_and_judged_messages_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stats.sqlite3");
        {
            let conn = Connection::open(&path).unwrap();
            for m in &MIGRATIONS[..4] {
                conn.execute_batch(m).unwrap();
            }
            conn.pragma_update(None, "user_version", 4).unwrap();
        }
        let mut db = StatsDb::open(&path).unwrap().with_max_runs(2);
        assert_eq!(db.version().unwrap(), 5);
        let judged = |label: &str, reason: Option<&str>, at: i64| SatisfactionRecord {
            session_id: "s".into(),
            model: if at == 3 { "b" } else { "a" }.into(),
            label: label.into(),
            reason: reason.map(Into::into),
            at_ms: at,
        };
        // Under privacy the caller passes no reason, and none is stored.
        db.record_satisfaction(&judged("continues", None, 1))
            .unwrap();
        db.record_satisfaction(&judged("corrects", Some(&"x".repeat(300)), 2))
            .unwrap();
        db.record_satisfaction(&judged("rejects", Some("undo"), 3))
            .unwrap();
        let all = db.satisfactions(None, None).unwrap();
        // Bounded like the runs: the oldest went.
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].label, "corrects");
        assert_eq!(all[0].reason.as_ref().unwrap().chars().count(), 201);
        assert_eq!(all[1].reason.as_deref(), Some("undo"));
        let b = db.satisfactions(None, Some("b")).unwrap();
        assert_eq!((b.len(), b[0].label.as_str()), (1, "rejects"));
        assert_eq!(db.satisfactions(Some(3), None).unwrap().len(), 1);
        let mut db = db.with_max_runs(10);
        db.record_satisfaction(&judged("frustrated", None, 4))
            .unwrap();
        let last = db.satisfactions(Some(4), None).unwrap();
        assert_eq!(last[0].reason, None, "NULL stays NULL");
        let raw: Option<String> = db
            .conn
            .query_row("SELECT reason FROM satisfaction WHERE at_ms = 4", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(raw, None);
    }

    #[test]
    fn a_newer_database_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sqlite3");
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", 99)
            .unwrap();
        assert!(matches!(
            StatsDb::open(&path),
            Err(StatsError::Newer(99, _))
        ));
    }
}
