//! Edit sinks that need no editor: [`DiskSink`] for headless runs and [`MemorySink`]
//! for tests; [`Recording`] keeps what another sink applied.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use agentls_edit::{Beneath, FileChange, Plan};
use agentls_index::Index;
use agentls_text::{ReadLimits, read_text_file};
use async_trait::async_trait;

use crate::{EditSink, ToolError};

/// How a file stands after a run's edits, as `git status --short` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Changed {
    /// Created (`A`).
    #[serde(rename = "A")]
    Added,
    /// Its text changed (`M`).
    #[serde(rename = "M")]
    Modified,
    /// Deleted (`D`).
    #[serde(rename = "D")]
    Deleted,
}

impl Changed {
    /// `A`, `M` or `D`.
    pub fn letter(self) -> char {
        match self {
            Self::Added => 'A',
            Self::Modified => 'M',
            Self::Deleted => 'D',
        }
    }
}

/// Passes plans to another sink and keeps the files of each it applied without error,
/// so that a run can say which files its edits changed from what landed, not from
/// what the model says. Files a command changed are not seen here. Meant for sinks
/// that apply a plan whole or not at all ([`DiskSink`]).
pub struct Recording {
    inner: Arc<dyn EditSink>,
    changed: Mutex<BTreeMap<PathBuf, Changed>>,
}

impl Recording {
    /// Records what `inner` applies.
    pub fn new(inner: Arc<dyn EditSink>) -> Self {
        Self {
            inner,
            changed: Mutex::new(BTreeMap::new()),
        }
    }

    /// The files changed since the last call, by path, emptied: a file created and
    /// then deleted is not there, one deleted and created again is modified.
    pub fn take(&self) -> Vec<(PathBuf, Changed)> {
        std::mem::take(&mut *self.changed.lock().unwrap_or_else(|p| p.into_inner()))
            .into_iter()
            .collect()
    }

    fn note(map: &mut BTreeMap<PathBuf, Changed>, path: &Path, now: Changed) {
        let before = map.get(path).copied();
        let after = match (before, now) {
            (Some(Changed::Added), Changed::Deleted) => None,
            (Some(Changed::Added), _) => Some(Changed::Added),
            (Some(Changed::Deleted), Changed::Added) => Some(Changed::Modified),
            (_, now) => Some(now),
        };
        match after {
            Some(c) => map.insert(path.to_owned(), c),
            None => map.remove(path),
        };
    }
}

#[async_trait]
impl EditSink for Recording {
    async fn apply(&self, tool: &str, plan: Plan) -> Result<(), ToolError> {
        let mut changes = Vec::new();
        for c in &plan.changes {
            match c {
                FileChange::Create { path, .. } => changes.push((path.clone(), Changed::Added)),
                FileChange::Edit(t) => changes.push((t.path.clone(), Changed::Modified)),
                FileChange::Rename { from, to } => {
                    changes.push((from.clone(), Changed::Deleted));
                    changes.push((to.clone(), Changed::Added));
                }
                FileChange::Delete { path } => changes.push((path.clone(), Changed::Deleted)),
            }
        }
        self.inner.apply(tool, plan).await?;
        let mut map = self.changed.lock().unwrap_or_else(|p| p.into_inner());
        for (path, c) in changes {
            Self::note(&mut map, &path, c);
        }
        Ok(())
    }
}

/// Lands plans on disk (headless runs) through [`agentls_edit::write_plan`]: staged,
/// then renamed into place, all or nothing. Before writing, every edited file is checked
/// from disk against the text the plan was computed on, so a file changed on disk in
/// between is refused rather than overwritten.
#[derive(Debug, Clone, Default)]
pub struct DiskSink {
    index: Option<Arc<RwLock<Index>>>,
}

impl DiskSink {
    /// A sink that only writes.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also re-indexes every written, moved or deleted file, so symbol queries see the
    /// edit at once (headless runs have no editor sending `didChange`).
    pub fn with_index(index: Arc<RwLock<Index>>) -> Self {
        Self { index: Some(index) }
    }
}

#[async_trait]
impl EditSink for DiskSink {
    async fn apply(&self, _tool: &str, plan: Plan) -> Result<(), ToolError> {
        let index = self.index.clone();
        let joined = tokio::task::spawn_blocking(move || {
            check_unchanged(&plan)?;
            agentls_edit::write_plan(&plan).map_err(|e| ToolError::environment(e.to_string()))?;
            if let Some(index) = index {
                reindex(&index, &plan);
            }
            Ok(())
        })
        .await;
        joined.map_err(|e| ToolError::bug(format!("disk sink task failed: {e}")))?
    }
}

/// Refuses the plan if a file it edits from disk is no longer the text it was computed
/// on. Edits computed on a live buffer (`version` set) are the buffer's owner's to check.
fn check_unchanged(plan: &Plan) -> Result<(), ToolError> {
    let beneath = match &plan.root {
        Some(root) => Some(Beneath::open(root).map_err(|e| {
            ToolError::environment(format!("{}: {e}; nothing was changed", root.display()))
        })?),
        None => None,
    };
    for c in &plan.changes {
        let FileChange::Edit(t) = c else { continue };
        if t.version.is_none() {
            let limits = ReadLimits::default();
            let now = match &beneath {
                Some(b) => b.read_text(&t.path, &limits),
                None => read_text_file(&t.path, &limits),
            }
            .map_err(|e| ToolError::environment(format!("{e}; nothing was changed")))?;
            if t.base != now.as_str() {
                return Err(ToolError::environment(format!(
                    "{}: changed on disk since it was read; nothing was changed. Read it again and redo the edit",
                    t.path.display()
                )));
            }
        }
    }
    Ok(())
}

/// Each file the plan touched, read and parsed outside the index's lock.
fn reindex(index: &RwLock<Index>, plan: &Plan) {
    for p in touched(plan) {
        agentls_index::refresh_path(index, &p);
    }
}

/// Every path a plan creates, edits, moves (both ends) or deletes.
pub(crate) fn touched(plan: &Plan) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for c in &plan.changes {
        match c {
            FileChange::Create { path, .. } | FileChange::Delete { path } => out.push(path.clone()),
            FileChange::Edit(t) => out.push(t.path.clone()),
            FileChange::Rename { from, to } => {
                out.push(from.clone());
                out.push(to.clone());
            }
        }
    }
    out
}

/// Keeps plans in memory: every plan it accepted and the resulting file contents. For
/// tests of tools and of the orchestrator; it never touches the disk. It can be told to
/// refuse, to test how callers report a failed landing.
#[derive(Debug, Default)]
pub struct MemorySink {
    state: Mutex<MemoryState>,
}

#[derive(Debug, Default)]
struct MemoryState {
    plans: Vec<Plan>,
    files: BTreeMap<PathBuf, Option<String>>,
    refuse: Option<String>,
}

impl MemorySink {
    /// An empty sink that accepts everything.
    pub fn new() -> Self {
        Self::default()
    }

    /// From now on, refuses every plan with `reason` (class `UnexpectedEnvironment`).
    pub fn refuse_with(&self, reason: impl Into<String>) {
        if let Ok(mut s) = self.state.lock() {
            s.refuse = Some(reason.into());
        }
    }

    /// The plans accepted so far, in order.
    pub fn plans(&self) -> Vec<Plan> {
        self.state
            .lock()
            .map(|s| s.plans.clone())
            .unwrap_or_default()
    }

    /// What the accepted plans left at `path`: `Some(Some(text))` written,
    /// `Some(None)` deleted or moved away, `None` untouched.
    pub fn file(&self, path: &Path) -> Option<Option<String>> {
        self.state.lock().ok()?.files.get(path).cloned()
    }
}

#[async_trait]
impl EditSink for MemorySink {
    async fn apply(&self, _tool: &str, plan: Plan) -> Result<(), ToolError> {
        let mut s = self
            .state
            .lock()
            .map_err(|_| ToolError::bug("memory sink lock poisoned"))?;
        if let Some(reason) = &s.refuse {
            return Err(ToolError::environment(reason.clone()));
        }
        for c in &plan.changes {
            match c {
                FileChange::Create { path, text } => {
                    s.files.insert(path.clone(), Some(text.clone()));
                }
                FileChange::Edit(t) => {
                    s.files.insert(t.path.clone(), Some(t.new_text.clone()));
                }
                FileChange::Rename { from, to } => {
                    let moved = s.files.get(from).cloned().flatten();
                    s.files.insert(from.clone(), None);
                    // Unknown content (a pure move of an untouched file) stays unknown.
                    s.files.insert(to.clone(), moved);
                }
                FileChange::Delete { path } => {
                    s.files.insert(path.clone(), None);
                }
            }
        }
        s.plans.push(plan);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn plan(changes: Vec<FileChange>) -> Plan {
        Plan {
            changes,
            hunks: Vec::new(),
            syntax: Vec::new(),
            root: None,
        }
    }

    fn create(p: &str) -> FileChange {
        FileChange::Create {
            path: PathBuf::from(p),
            text: "x\n".into(),
        }
    }

    fn edit(p: &str) -> FileChange {
        FileChange::Edit(agentls_edit::TextChange {
            path: PathBuf::from(p),
            version: None,
            base: "a\n".into(),
            edits: Vec::new(),
            new_text: "b\n".into(),
        })
    }

    fn delete(p: &str) -> FileChange {
        FileChange::Delete {
            path: PathBuf::from(p),
        }
    }

    #[tokio::test]
    async fn recording_keeps_what_landed_folded_per_file() {
        let memory = Arc::new(MemorySink::new());
        let sink = Recording::new(memory.clone());
        sink.apply(
            "write_file",
            plan(vec![create("/w/new.rs"), edit("/w/a.rs")]),
        )
        .await
        .unwrap();
        sink.apply("str_replace", plan(vec![edit("/w/new.rs")]))
            .await
            .unwrap();
        sink.apply(
            "move",
            plan(vec![FileChange::Rename {
                from: PathBuf::from("/w/b.rs"),
                to: PathBuf::from("/w/c.rs"),
            }]),
        )
        .await
        .unwrap();
        sink.apply("delete", plan(vec![create("/w/tmp.rs")]))
            .await
            .unwrap();
        sink.apply("delete", plan(vec![delete("/w/tmp.rs"), delete("/w/d.rs")]))
            .await
            .unwrap();
        // A plan the sink refused changed nothing, and is not recorded.
        memory.refuse_with("the buffer changed");
        assert!(
            sink.apply("str_replace", plan(vec![edit("/w/e.rs")]))
                .await
                .is_err()
        );
        let got: Vec<(String, char)> = sink
            .take()
            .into_iter()
            .map(|(p, c)| (p.display().to_string(), c.letter()))
            .collect();
        let want: Vec<(String, char)> = [
            ("/w/a.rs", 'M'),
            ("/w/b.rs", 'D'),
            ("/w/c.rs", 'A'),
            ("/w/d.rs", 'D'),
            ("/w/new.rs", 'A'),
        ]
        .iter()
        .map(|(p, c)| (p.to_string(), *c))
        .collect();
        assert_eq!(got, want);
        assert!(sink.take().is_empty(), "taken");
    }
}
