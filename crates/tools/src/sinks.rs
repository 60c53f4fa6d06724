//! Edit sinks that need no editor: [`DiskSink`] for headless runs and [`MemorySink`]
//! for tests.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use agentls_edit::{Beneath, FileChange, Plan};
use agentls_index::Index;
use agentls_text::{ReadLimits, read_text_file};
use async_trait::async_trait;

use crate::{EditSink, ToolError};

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

fn reindex(index: &RwLock<Index>, plan: &Plan) {
    let Ok(mut index) = index.write() else {
        tracing::warn!("index lock poisoned; not re-indexing edited files");
        return;
    };
    for p in touched(plan) {
        index.refresh_file(&p);
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
