//! Disk refreshes without the index's lock while they read and parse: a file event, or a
//! buffer closed (the index goes back to the disk's version), re-reads the file; the
//! read and the parse run with no lock held, and the write lock is taken only to put
//! the result in or drop the file. A buffer opened meanwhile wins; a file that changed
//! on disk again between the read and the swap is read again, under the lock.

use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::time::SystemTime;

use agentls_text::{ReadLimits, read_text_file};

use super::locks::{read, write};
use super::update::{Replaced, parse_file};
use super::{Index, Parsed};
use crate::Language;
use crate::plain::is_plain;
use crate::watch::FileEvent;

/// A disk read of a file, prepared under the index's read lock ([`Index::prepare_refresh`]),
/// run with no lock ([`PendingRefresh::read`]).
#[derive(Debug)]
pub struct PendingRefresh {
    path: PathBuf,
    lang: Language,
    max_bytes: u64,
    /// With `skip_generated`: files over this many bytes, or that say so, are dropped.
    generated_bytes: Option<u64>,
}

/// What a [`PendingRefresh`] read, for [`Index::commit_refresh`].
pub struct DiskRead {
    path: PathBuf,
    /// The file's size and time of change as the read began: a commit that finds them
    /// changed reads it again.
    seen: Option<(u64, SystemTime)>,
    outcome: Outcome,
}

impl std::fmt::Debug for DiskRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiskRead")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

enum Outcome {
    /// Its symbols, to put in.
    Parsed(Parsed),
    /// Gone, unreadable, too large or generated: dropped from the index.
    Drop,
    /// The parser gave up: left as it was.
    Keep,
}

fn stamp(path: &Path) -> Option<(u64, SystemTime)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()?))
}

impl PendingRefresh {
    /// Reads and parses the file: no lock is held here.
    pub fn read(self) -> DiskRead {
        let seen = stamp(&self.path);
        let limits = ReadLimits {
            max_bytes: self.max_bytes,
        };
        let outcome = match read_text_file(&self.path, &limits) {
            Ok(text)
                if self.generated_bytes.is_some_and(|cap| {
                    text.len() as u64 > cap || crate::looks_generated(&text)
                }) =>
            {
                Outcome::Drop
            }
            Ok(text) => {
                #[cfg(test)]
                DURING_READ.fire(&self.path);
                match parse_file(self.path.clone(), self.lang, &text) {
                    Some(parsed) => Outcome::Parsed(parsed),
                    None => Outcome::Keep,
                }
            }
            Err(err) => {
                tracing::debug!(%err, "index: refresh dropped file");
                Outcome::Drop
            }
        };
        DiskRead {
            path: self.path,
            seen,
            outcome,
        }
    }
}

impl Index {
    /// What re-reading `path` from disk takes, for a file of a known language; `None`
    /// when there is nothing to read: a live buffer (the buffer wins), a path of no
    /// language. Text files without a grammar are refreshed by [`Index::refresh_file`]
    /// (a look at their size, no read).
    pub fn prepare_refresh(&self, path: &Path) -> Option<PendingRefresh> {
        if self.is_live(path) {
            return None;
        }
        Some(PendingRefresh {
            path: path.to_owned(),
            lang: Language::from_path(path)?,
            max_bytes: self.options.max_file_bytes,
            generated_bytes: self
                .options
                .skip_generated
                .then_some(self.options.generated_bytes),
        })
    }

    /// Puts what [`PendingRefresh::read`] found in place: the file's new symbols, or
    /// drops it. Nothing when a buffer of the file opened meanwhile; the file is read
    /// again, here, when it changed on disk since the read began. Returns what it
    /// replaced, to drop after letting the lock go.
    pub fn commit_refresh(&mut self, read: DiskRead) -> Option<Replaced> {
        if self.is_live(&read.path) {
            return None;
        }
        if stamp(&read.path) != read.seen {
            let pending = self.prepare_refresh(&read.path)?;
            return self.commit_refresh_now(pending.read());
        }
        self.commit_refresh_now(read)
    }

    fn commit_refresh_now(&mut self, read: DiskRead) -> Option<Replaced> {
        match read.outcome {
            Outcome::Parsed(parsed) => Some(self.insert(parsed)),
            Outcome::Drop => {
                self.remove_file(&read.path);
                None
            }
            Outcome::Keep => None,
        }
    }
}

/// [`Index::refresh_file`] with `index`'s write lock held only to swap the result in:
/// readers go on answering while the file is read and parsed.
pub fn refresh_path(index: &RwLock<Index>, path: &Path) {
    if is_plain(path) {
        write(index).refresh_file(path);
        return;
    }
    let Some(pending) = read(index).prepare_refresh(path) else {
        return;
    };
    let read = pending.read();
    // The guard goes at the end of this statement; what the commit replaced, after it.
    let replaced = write(index).commit_refresh(read);
    drop(replaced);
}

/// [`Index::close_file`] with the disk's version read and parsed outside the lock.
pub fn close_path(index: &RwLock<Index>, path: &Path) {
    let replaced = write(index).drop_live(path);
    drop(replaced);
    refresh_path(index, path);
}

/// [`Index::apply_event`] for each event, reading and parsing outside the lock.
pub fn apply_events(index: &RwLock<Index>, events: &[FileEvent]) {
    for event in events {
        match event {
            FileEvent::Removed(_) => write(index).apply_event(event),
            FileEvent::Changed(path) => {
                if read(index).wants_refresh(path) {
                    refresh_path(index, path);
                }
            }
        }
    }
}

/// Runs while a disk read has its text and holds no lock.
#[cfg(test)]
pub(crate) static DURING_READ: super::locks::PathHooks = super::locks::PathHooks::new();

#[cfg(test)]
mod tests {
    use std::sync::{Arc, mpsc};

    use super::*;

    /// Readers and writers get the index while a file event's read and parse run, and
    /// the file's new symbols are in once it ends.
    #[test]
    fn readers_get_the_index_while_a_disk_refresh_parses() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("refreshed.py");
        std::fs::write(&path, "def before():\n    pass\n").unwrap();
        let index = Arc::new(RwLock::new(Index::default()));
        refresh_path(&index, &path);
        assert_eq!(read(&index).definitions("before").len(), 1);
        std::fs::write(&path, "def after():\n    pass\n").unwrap();
        let (started_tx, started) = mpsc::channel();
        let (go, go_rx) = mpsc::channel::<()>();
        let go_rx = std::sync::Mutex::new(go_rx);
        DURING_READ.on(&path, move || {
            let _ = started_tx.send(());
            let _ = go_rx.lock().map(|rx| rx.recv());
        });
        let refresher = {
            let (index, path) = (index.clone(), path.clone());
            std::thread::spawn(move || {
                apply_events(&index, &[FileEvent::Changed(path)]);
            })
        };
        started.recv().unwrap();
        {
            let reader = index.try_read().expect("a reader waited on a disk refresh");
            assert_eq!(reader.definitions("before").len(), 1);
        }
        assert!(index.try_write().is_ok(), "the refresh held the write lock");
        go.send(()).unwrap();
        refresher.join().unwrap();
        let index = read(&index);
        assert!(index.definitions("before").is_empty());
        assert_eq!(index.definitions("after").len(), 1);
    }

    /// A buffer opened while the disk's version was read wins over it; a file written
    /// again while it was read is read again at the swap.
    #[test]
    fn a_disk_read_loses_to_a_buffer_and_to_a_newer_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("raced.py");
        std::fs::write(&path, "def on_disk():\n    pass\n").unwrap();
        let mut index = Index::default();
        let read = index.prepare_refresh(&path).unwrap().read();
        assert!(index.update_file(&path, "def typed():\n    pass\n"));
        assert!(index.commit_refresh(read).is_none());
        assert_eq!(index.definitions("typed").len(), 1);
        assert!(index.definitions("on_disk").is_empty());

        let other = dir.path().join("rewritten.py");
        std::fs::write(&other, "def first():\n    pass\n").unwrap();
        let read = index.prepare_refresh(&other).unwrap().read();
        std::fs::write(&other, "def second_version():\n    pass\n").unwrap();
        drop(index.commit_refresh(read));
        assert!(index.definitions("first").is_empty());
        assert_eq!(index.definitions("second_version").len(), 1);
    }

    /// A closed buffer gives way to the disk's version (read outside the lock), or to
    /// nothing when the file is not on disk.
    #[test]
    fn a_closed_buffer_goes_back_to_the_disk_or_away() {
        let dir = tempfile::tempdir().unwrap();
        let saved = dir.path().join("saved.py");
        std::fs::write(&saved, "def on_disk():\n    pass\n").unwrap();
        let unsaved = dir.path().join("unsaved.py");
        let index = RwLock::new(Index::default());
        assert!(write(&index).update_file(&saved, "def typed():\n    pass\n"));
        assert!(write(&index).update_file(&unsaved, "def draft():\n    pass\n"));
        close_path(&index, &saved);
        close_path(&index, &unsaved);
        let index = read(&index);
        assert!(!index.is_live(&saved));
        assert_eq!(index.definitions("on_disk").len(), 1);
        assert!(index.definitions("typed").is_empty());
        assert!(index.definitions("draft").is_empty());
        assert!(!index.contains(&unsaved));
    }
}
