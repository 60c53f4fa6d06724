//! The store of open documents, shared between the LSP handlers and everything that
//! reads the workspace.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use dashmap::DashMap;

use crate::disk::{ReadError, ReadLimits, read_text_file};
use crate::{ContentChange, DocUri, Document, PositionEncoding, Snapshot, SyncError, SyncWarning};

/// All open documents, keyed by URI. Each operation locks one shard briefly and never
/// awaits, so LSP handlers can apply changes synchronously in arrival order.
#[derive(Debug, Default)]
pub struct DocumentStore {
    docs: DashMap<DocUri, Document>,
    /// The last revision given out: each change to any document takes the next one, so
    /// a document's revisions increase across a close and reopen too, and a reader that
    /// saw revision `r` of a URI knows any other text of it has another number.
    clock: AtomicU64,
}

/// Where a text came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The live buffer of an open document.
    Buffer,
    /// The file on disk (the document is not open).
    Disk,
}

/// A text read through the store: the live buffer when the document is open, the disk
/// otherwise.
#[derive(Debug, Clone)]
pub struct SourceText {
    /// The text.
    pub rope: ropey::Rope,
    /// Where it came from.
    pub origin: Origin,
    /// The client's version, for open documents.
    pub version: Option<i32>,
}

impl DocumentStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Opens a document. Returns `true` if it was already open (a client bug; the new
    /// text replaces the old).
    pub fn open(&self, uri: DocUri, language_id: &str, version: i32, text: &str) -> bool {
        let mut doc = Document::new(uri.clone(), language_id, version, text);
        doc.stamp(self.tick());
        self.docs.insert(uri, doc).is_some()
    }

    /// The next revision (see [`Document::revision`]).
    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Applies a `didChange` batch to an open document (see [`Document::apply_changes`]).
    pub fn change(
        &self,
        uri: &DocUri,
        version: i32,
        changes: &[ContentChange],
        encoding: PositionEncoding,
    ) -> Result<Vec<SyncWarning>, SyncError> {
        let mut doc = self
            .docs
            .get_mut(uri)
            .ok_or_else(|| SyncError::UnknownDocument(uri.clone()))?;
        let result = doc.apply_changes(version, changes, encoding);
        // Every batch moves the revision, applied or refused (see `Document::finish`).
        doc.stamp(self.tick());
        result
    }

    /// Replaces an open document's text with what the client reports (a save with text).
    pub fn resync(&self, uri: &DocUri, text: &str) -> Result<(), SyncError> {
        let mut doc = self
            .docs
            .get_mut(uri)
            .ok_or_else(|| SyncError::UnknownDocument(uri.clone()))?;
        doc.resync(text);
        doc.stamp(self.tick());
        Ok(())
    }

    /// Marks an open document out of sync (the client sent a change that could not be
    /// read). Returns whether it was in sync before.
    pub fn mark_out_of_sync(&self, uri: &DocUri) -> Result<bool, SyncError> {
        let mut doc = self
            .docs
            .get_mut(uri)
            .ok_or_else(|| SyncError::UnknownDocument(uri.clone()))?;
        let was = doc.mark_out_of_sync();
        doc.stamp(self.tick());
        Ok(was)
    }

    /// Whether an open document is in sync; `None` if it is not open.
    pub fn in_sync(&self, uri: &DocUri) -> Option<bool> {
        self.docs.get(uri).map(|d| d.in_sync())
    }

    /// Closes a document. Returns `false` if it was not open.
    pub fn close(&self, uri: &DocUri) -> bool {
        self.docs.remove(uri).is_some()
    }

    /// A snapshot of an open document.
    pub fn snapshot(&self, uri: &DocUri) -> Option<Snapshot> {
        self.docs.get(uri).map(|d| d.snapshot())
    }

    /// Snapshots of every open document, in URI order.
    pub fn snapshots(&self) -> Vec<Snapshot> {
        let mut all: Vec<Snapshot> = self.docs.iter().map(|d| d.snapshot()).collect();
        all.sort_by(|a, b| a.uri.cmp(&b.uri));
        all
    }

    /// Number of open documents.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// Whether no document is open.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// Reads a file as the editor shows it: the live buffer when it is open, the disk
    /// (within `limits`) otherwise.
    pub fn read(&self, path: &Path, limits: &ReadLimits) -> Result<SourceText, ReadError> {
        if let Some(snap) = DocUri::from_file_path(path).and_then(|uri| self.snapshot(&uri)) {
            return Ok(SourceText {
                rope: snap.rope,
                origin: Origin::Buffer,
                version: Some(snap.version),
            });
        }
        let text = read_text_file(path, limits)?;
        Ok(SourceText {
            rope: ropey::Rope::from_str(&text),
            origin: Origin::Disk,
            version: None,
        })
    }
}
