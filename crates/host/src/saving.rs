//! A session's record as the host saves it, with the front end's part of it
//! ([`agentls_protocol::agent::ops::Op::Save`]): shared by the session and its queue's
//! task, which saves the front end's part at once, while a turn runs too.

use std::sync::Mutex;

use agentls_agent::SavedSession;

/// The front end's part and the record last saved.
#[derive(Debug, Default)]
pub(crate) struct Saving {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    title: Option<String>,
    front_end: serde_json::Value,
    last: Option<SavedSession>,
}

impl Saving {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Puts the front end's part into `saved`.
    pub(crate) fn fill(&self, saved: &mut SavedSession) {
        let inner = self.lock();
        if let Some(title) = &inner.title {
            saved.title.clone_from(title);
        }
        saved.front_end = inner.front_end.clone();
    }

    /// `record` is the session as it is now.
    pub(crate) fn keep(&self, record: SavedSession) {
        self.lock().last = Some(record);
    }

    /// The front end's part is now this: the record to save (the conversation as
    /// last kept).
    pub(crate) fn answer(
        &self,
        title: Option<String>,
        front_end: serde_json::Value,
    ) -> Option<SavedSession> {
        let mut inner = self.lock();
        if title.is_some() {
            inner.title = title;
        }
        inner.front_end = front_end;
        let mut record = inner.last.clone()?;
        if let Some(title) = &inner.title {
            record.title.clone_from(title);
        }
        record.front_end = inner.front_end.clone();
        record.updated_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        inner.last = Some(record.clone());
        Some(record)
    }
}

/// A mode as saved records name it.
pub(crate) fn mode_name(mode: agentls_agent::Mode) -> &'static str {
    match mode {
        agentls_agent::Mode::Agent => "agent",
        agentls_agent::Mode::Ask => "ask",
        agentls_agent::Mode::Plan => "plan",
    }
}
