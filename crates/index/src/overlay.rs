//! Open buffers laid over the disk: for a path in the overlay, its live text is the truth.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentls_text::{DocumentStore, Snapshot};

/// The live text of one open buffer.
#[derive(Debug, Clone)]
pub enum LiveText {
    /// Plain text.
    Text(Arc<str>),
    /// A snapshot from the document store (a rope; flattened when read).
    Snapshot(Snapshot),
}

impl LiveText {
    /// The whole text (borrowed for [`LiveText::Text`], O(n) copy for a snapshot).
    pub fn text(&self) -> Cow<'_, str> {
        match self {
            LiveText::Text(t) => Cow::Borrowed(t),
            LiveText::Snapshot(s) => Cow::Owned(s.text()),
        }
    }
}

/// Paths mapped to live text. Paths are absolute, as the walker under an absolute root
/// produces them (see [`Overlay::from_store`]).
#[derive(Debug, Clone, Default)]
pub struct Overlay {
    map: HashMap<PathBuf, LiveText>,
}

impl Overlay {
    /// An empty overlay: everything comes from disk.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every open document of `store` that has a `file:` URI.
    pub fn from_store(store: &DocumentStore) -> Self {
        let mut overlay = Self::new();
        for snap in store.snapshots() {
            if let Some(path) = snap.uri.to_file_path() {
                overlay.map.insert(path, LiveText::Snapshot(snap));
            }
        }
        overlay
    }

    /// Lays `text` over `path`.
    pub fn insert_text(&mut self, path: impl Into<PathBuf>, text: impl Into<Arc<str>>) {
        self.map.insert(path.into(), LiveText::Text(text.into()));
    }

    /// Lays a snapshot over `path`.
    pub fn insert_snapshot(&mut self, path: impl Into<PathBuf>, snapshot: Snapshot) {
        self.map.insert(path.into(), LiveText::Snapshot(snapshot));
    }

    /// The live text for `path`, if it is open.
    pub fn get(&self, path: &Path) -> Option<&LiveText> {
        self.map.get(path)
    }

    /// Whether `path` is open.
    pub fn contains(&self, path: &Path) -> bool {
        self.map.contains_key(path)
    }

    /// Every open path and its text.
    pub fn iter(&self) -> impl Iterator<Item = (&Path, &LiveText)> {
        self.map.iter().map(|(p, t)| (p.as_path(), t))
    }

    /// Number of open buffers.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no buffer is open.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}
