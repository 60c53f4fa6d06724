//! What the client reported about the documents agent edits are in flight for.
//!
//! While an edit is in flight, every `didChange` for its document is recorded change by
//! change in a [`Journal`] that starts at the exact text the edit was sent against, so
//! the edit sink can find where the editor applied it ([`agentls_edit::track`]). The
//! journal and the store move together: `didChange` applies to the store and records
//! under [`Journals::lock`], and a watch starts from the store's snapshot under the same
//! lock, so no change can fall between the two.
//!
//! It also keeps, for every document, when the client last reported a change (clients
//! that cannot check versions get edits only after a quiet spell), and which documents
//! have their agent edits paused because an outcome could not be proven.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use agentls_edit::TextEdit;
use agentls_edit::track::Journal;
use agentls_text::position::to_char_idx;
use agentls_text::{ContentChange, DocUri, DocumentStore, PositionEncoding, Snapshot};

/// The journals of documents with edits in flight, and per-document sync facts.
#[derive(Debug, Default)]
pub struct Journals {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    watches: HashMap<DocUri, Watch>,
    last_change: HashMap<DocUri, Instant>,
    /// When the client last reported a change that was the user's, not an agent edit's
    /// own: every change to a document with no edit in flight, and the changes around
    /// an edit once it is proven landed.
    last_user: HashMap<DocUri, Instant>,
    paused: HashMap<DocUri, String>,
}

#[derive(Debug)]
struct Watch {
    journal: Journal,
    /// When each change of the journal arrived.
    times: Vec<Instant>,
    /// The text stopped matching what the client reported (a refused change).
    broken: bool,
    watchers: usize,
}

/// Held while a `didChange` applies to the store and to the journals.
pub struct ChangeLock<'a> {
    inner: MutexGuard<'a, Inner>,
}

impl Journals {
    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Locks the journals for one `didChange`: apply it to the store, then
    /// [`ChangeLock::record`] it, before the lock is released.
    pub fn lock(&self) -> ChangeLock<'_> {
        ChangeLock {
            inner: self.inner(),
        }
    }

    /// Starts recording `uri` from the store's current text, which it returns. Every call
    /// must be matched by [`Journals::unwatch`].
    pub fn watch(&self, store: &DocumentStore, uri: &DocUri) -> Option<Snapshot> {
        let mut inner = self.inner();
        let snapshot = store.snapshot(uri)?;
        let watch = inner.watches.entry(uri.clone()).or_insert_with(|| Watch {
            journal: Journal::new(snapshot.rope.clone()),
            times: Vec::new(),
            broken: false,
            watchers: 0,
        });
        // A watch already running (a second edit of the same file cannot be in flight:
        // the sink serialises them) is restarted from the current text.
        watch.journal = Journal::new(snapshot.rope.clone());
        watch.times.clear();
        watch.broken = false;
        watch.watchers += 1;
        Some(snapshot)
    }

    /// Stops recording `uri` for one watcher.
    pub fn unwatch(&self, uri: &DocUri) {
        let mut inner = self.inner();
        if let Some(w) = inner.watches.get_mut(uri) {
            w.watchers = w.watchers.saturating_sub(1);
            if w.watchers == 0 {
                // Whatever was not accounted for counts as the user's.
                if !w.times.is_empty()
                    && let Some(last) = inner.last_change.get(uri).copied()
                {
                    let user = inner.last_user.entry(uri.clone()).or_insert(last);
                    *user = (*user).max(last);
                }
                inner.watches.remove(uri);
            }
        }
    }

    /// The journal of `uri` so far (`None` when not watched, or when a change could not be
    /// followed).
    pub fn journal(&self, uri: &DocUri) -> Option<Journal> {
        let inner = self.inner();
        let w = inner.watches.get(uri)?;
        (!w.broken).then(|| w.journal.clone())
    }

    /// When the client last reported a change to `uri`.
    pub fn last_change(&self, uri: &DocUri) -> Option<Instant> {
        self.inner().last_change.get(uri).copied()
    }

    /// When the client last reported a change to `uri` that was the user's.
    pub fn last_user_change(&self, uri: &DocUri) -> Option<Instant> {
        self.inner().last_user.get(uri).copied()
    }

    /// The edit in flight for `uri` was proven applied between journal states `at` and
    /// `end`: the changes before and after those are the user's.
    pub fn settle(&self, uri: &DocUri, at: usize, end: usize) {
        let mut inner = self.inner();
        let Some(w) = inner.watches.get_mut(uri) else {
            return;
        };
        let user = w
            .times
            .iter()
            .enumerate()
            .filter(|(i, _)| *i < at || *i >= end)
            .map(|(_, t)| *t)
            .max();
        // Accounted for: unwatching must not count the edit's own changes as typing.
        w.times.clear();
        if let Some(t) = user {
            let last = inner.last_user.entry(uri.clone()).or_insert(t);
            *last = (*last).max(t);
        }
    }

    /// Pauses agent edits to `uri`, saying why, until the client reports its whole text.
    pub fn pause(&self, uri: &DocUri, why: String) {
        self.inner().paused.insert(uri.clone(), why);
    }

    /// Why agent edits to `uri` are paused, if they are.
    pub fn paused(&self, uri: &DocUri) -> Option<String> {
        self.inner().paused.get(uri).cloned()
    }

    /// The client reported the whole text of `uri` (opened, saved with text, or a full
    /// change): whatever was unproven is known again.
    pub fn resynced(&self, uri: &DocUri) {
        self.inner().paused.remove(uri);
    }

    /// Forgets `uri` (closed).
    pub fn forget(&self, uri: &DocUri) {
        let mut inner = self.inner();
        inner.paused.remove(uri);
        inner.last_change.remove(uri);
        inner.last_user.remove(uri);
    }
}

impl ChangeLock<'_> {
    /// Whether `uri` has an edit in flight (its changes must be recorded).
    pub fn watched(&self, uri: &DocUri) -> bool {
        self.inner.watches.contains_key(uri)
    }

    /// Records a batch the store accepted (`ok`) or refused, for `uri`.
    pub fn record(
        &mut self,
        uri: &DocUri,
        changes: &[ContentChange],
        encoding: PositionEncoding,
        ok: bool,
    ) {
        let now = Instant::now();
        self.inner.last_change.insert(uri.clone(), now);
        if changes.iter().any(|c| c.range.is_none()) && ok {
            self.inner.paused.remove(uri);
        }
        let Some(w) = self.inner.watches.get_mut(uri) else {
            // No edit in flight: the change is the user's.
            self.inner.last_user.insert(uri.clone(), now);
            return;
        };
        if !ok {
            w.broken = true;
            return;
        }
        for change in changes {
            w.times.push(now);
            match change.range {
                None => w.journal.push_full(ropey::Rope::from_str(&change.text)),
                Some(range) => {
                    let text = w.journal.latest();
                    let start = to_char_idx(text, range.start, encoding).char_idx;
                    let end = to_char_idx(text, range.end, encoding).char_idx;
                    w.journal
                        .push(TextEdit::new(start..end.max(start), change.text.clone()));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentls_text::{Position, Range};

    #[test]
    fn records_only_while_watched_and_from_the_watch_start() {
        let store = DocumentStore::new();
        let uri = DocUri::new("file:///a.rs");
        store.open(uri.clone(), "rust", 1, "abc\n");
        let journals = Journals::default();
        let edit = [ContentChange::replace(
            Range::new(Position::new(0, 0), Position::new(0, 0)),
            "x",
        )];
        {
            let mut lock = journals.lock();
            assert!(!lock.watched(&uri));
            let ok = store
                .change(&uri, 2, &edit, PositionEncoding::Utf16)
                .is_ok();
            lock.record(&uri, &edit, PositionEncoding::Utf16, ok);
        }
        assert!(journals.journal(&uri).is_none());
        let snap = journals.watch(&store, &uri).map(|s| s.text());
        assert_eq!(snap.as_deref(), Some("xabc\n"));
        {
            let mut lock = journals.lock();
            let ok = store
                .change(&uri, 3, &edit, PositionEncoding::Utf16)
                .is_ok();
            lock.record(&uri, &edit, PositionEncoding::Utf16, ok);
        }
        let j = journals
            .journal(&uri)
            .map(|j| (j.len(), j.latest().to_string()));
        assert_eq!(j, Some((1, "xxabc\n".to_owned())));
        journals.unwatch(&uri);
        assert!(journals.journal(&uri).is_none());
    }
}
