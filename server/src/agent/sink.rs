//! A session's edit sink: lands through the editor, reports each landed edit as an
//! `edit` event with its diff, and in review mode keeps it as pending changes (or, for
//! clients with change annotations, has the editor ask the user first).

use std::sync::{Arc, Weak};

use agentls_edit::{FileChange, Plan};
use agentls_protocol::agent::Event;
use agentls_tools::{EditSink, ToolError};
use async_trait::async_trait;

use super::review;
use super::sessions::Entry;
use crate::convert::to_lsp;
use crate::edit_sink::LspEditSink;
use crate::state::State;

/// The sink a session's tools write through.
pub struct SessionSink {
    /// Lands plans in the editor.
    pub inner: LspEditSink,
    /// The server state (change ids, client capabilities).
    pub state: Arc<State>,
    /// The session (weak: the session owns this sink).
    pub entry: Weak<Entry>,
    /// Keep landed edits for review.
    pub review: bool,
}

#[async_trait]
impl EditSink for SessionSink {
    async fn apply(&self, tool: &str, plan: Plan) -> Result<(), ToolError> {
        let landed = match self.inner.land(plan, "agent edit").await {
            Ok(l) => l,
            Err(e) if e.by_user => return Err(ToolError::aborted(e.message)),
            Err(e) => return Err(ToolError::environment(e.message)),
        };
        let Some(entry) = self.entry.upgrade() else {
            return Ok(());
        };
        // With annotations the user confirmed in the editor: nothing stays pending.
        let keep = self.review && !self.state.client_caps().change_annotations;
        for change in &landed.plan.changes {
            let FileChange::Edit(t) = change else {
                continue;
            };
            let change_ids = if keep {
                let pending = review::split(t, || self.state.sessions.next_change_id());
                let ids = pending.iter().map(|c| c.id).collect();
                entry.pending().extend(pending);
                entry.save(&self.state.host, self.state.root().as_deref());
                ids
            } else {
                Vec::new()
            };
            let old = t.base.to_string();
            super::keep_rate::follow(
                &self.state,
                &entry.id,
                &entry.model(),
                tool,
                t.path.clone(),
                &old,
                &t.new_text,
            );
            let diff = similar::TextDiff::from_lines(&old, &t.new_text)
                .unified_diff()
                .context_radius(3)
                .header(&t.path.display().to_string(), &t.path.display().to_string())
                .to_string();
            entry.emit(Event::Edit {
                uri: to_lsp::url(&t.path)
                    .map(|u| u.to_string())
                    .unwrap_or_default(),
                diff,
                change_ids,
            });
        }
        Ok(())
    }
}
