//! A file watcher for clients that cannot send `workspace/didChangeWatchedFiles`:
//! `notify` events turned into [`FileEvent`]s on a callback (no async runtime).

use std::path::{Path, PathBuf};

use notify::{EventKind, RecursiveMode, Watcher as _};

use crate::Index;

/// A change to one file, as the index needs it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FileEvent {
    /// Created or modified (or renamed to this path).
    Changed(PathBuf),
    /// Deleted (or renamed away from this path).
    Removed(PathBuf),
}

impl FileEvent {
    /// The path concerned.
    pub fn path(&self) -> &Path {
        match self {
            FileEvent::Changed(p) | FileEvent::Removed(p) => p,
        }
    }
}

/// Watches a directory tree until dropped, calling back on notify's thread.
pub struct FileWatcher {
    _inner: notify::RecommendedWatcher,
}

impl std::fmt::Debug for FileWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FileWatcher")
    }
}

impl FileWatcher {
    /// Watches `root` recursively. Every file path in an event becomes
    /// [`FileEvent::Changed`] if it exists afterwards and [`FileEvent::Removed`] if not
    /// (which handles renames whatever the platform reports). Directories and access
    /// events are skipped; filtering by language or ignore files is the consumer's job
    /// ([`Index::apply_event`] does it).
    pub fn new(
        root: &Path,
        on_event: impl Fn(FileEvent) + Send + 'static,
    ) -> Result<Self, notify::Error> {
        let mut inner =
            notify::recommended_watcher(move |res: notify::Result<notify::Event>| match res {
                Ok(event) => {
                    if matches!(event.kind, EventKind::Access(_)) {
                        return;
                    }
                    for path in event.paths {
                        if path.is_dir() {
                            continue;
                        }
                        if path.exists() {
                            on_event(FileEvent::Changed(path));
                        } else {
                            on_event(FileEvent::Removed(path));
                        }
                    }
                }
                Err(err) => tracing::warn!(%err, "file watcher error"),
            })?;
        inner.watch(root, RecursiveMode::Recursive)?;
        Ok(Self { _inner: inner })
    }
}

impl Index {
    /// Applies a file event (watcher or `didChangeWatchedFiles`): removals drop the file;
    /// changes re-read it if it is indexed already, or if it is new, of a known language
    /// (or a text file followed without one, [`crate::plain`]), and a walk of the
    /// crawled root would visit it. Live buffers are left alone.
    pub fn apply_event(&mut self, event: &FileEvent) {
        match event {
            FileEvent::Removed(path) => {
                if !self.is_live(path) {
                    self.remove_file(path);
                }
            }
            FileEvent::Changed(path) => {
                if self.wants_refresh(path) {
                    self.refresh_file(path);
                }
            }
        }
    }

    /// Whether a change of `path` on disk is read: a file of a known language (or a text
    /// file followed without one) that is indexed, or that a walk of the root would visit.
    pub(crate) fn wants_refresh(&self, path: &std::path::Path) -> bool {
        (crate::Language::from_path(path).is_some() || crate::plain::is_plain(path))
            && (self.follows(path) || self.would_visit(path))
    }
}
