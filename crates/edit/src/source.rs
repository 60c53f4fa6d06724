//! How the planner reads the files an edit names: live buffers in the server, the disk
//! in headless runs, both through [`SourceProvider`].

use std::path::Path;

use agentls_text::{DocUri, DocumentStore, ReadError, ReadLimits, read_text_file};

use crate::beneath::Beneath;
use ropey::Rope;

/// The current text of a file and the version it was read at.
#[derive(Debug, Clone)]
pub struct Source {
    /// The text.
    pub rope: Rope,
    /// The client's version for open documents, `None` for text read from disk.
    pub version: Option<i32>,
}

impl From<&agentls_text::Snapshot> for Source {
    /// The snapshot's rope (an O(1) clone) and version.
    fn from(s: &agentls_text::Snapshot) -> Self {
        Source {
            rope: s.rope.clone(),
            version: Some(s.version),
        }
    }
}

/// Why a file could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceError {
    /// No such file: fine for a file the edit creates.
    NotFound,
    /// The file exists but cannot be edited as text; the message says why.
    Unreadable(String),
}

/// Gives the planner "the current text and version of path P, or NotFound". Paths are
/// absolute (resolved under the workspace root by the planner).
pub trait SourceProvider {
    /// Reads `path`.
    fn read(&self, path: &Path) -> Result<Source, SourceError>;

    /// Reads `path` with any disk access beneath the workspace root. Sources that read
    /// no disk (tests, buffers only) need not override it.
    fn read_beneath(&self, path: &Path, _beneath: &Beneath) -> Result<Source, SourceError> {
        self.read(path)
    }
}

impl<F> SourceProvider for F
where
    F: Fn(&Path) -> Result<Source, SourceError>,
{
    fn read(&self, path: &Path) -> Result<Source, SourceError> {
        self(path)
    }
}

/// Reads files from disk (headless runs, the CLI).
#[derive(Debug, Clone, Copy, Default)]
pub struct DiskSource {
    /// Size limit and binary checks.
    pub limits: ReadLimits,
}

impl SourceProvider for DiskSource {
    fn read(&self, path: &Path) -> Result<Source, SourceError> {
        if path.is_dir() {
            return Err(SourceError::Unreadable("is a directory, not a file".into()));
        }
        read_text_file(path, &self.limits)
            .map(|text| Source {
                rope: Rope::from_str(&text),
                version: None,
            })
            .map_err(from_read_error)
    }

    fn read_beneath(&self, path: &Path, beneath: &Beneath) -> Result<Source, SourceError> {
        beneath
            .read_text(path, &self.limits)
            .map(|text| Source {
                rope: Rope::from_str(&text),
                version: None,
            })
            .map_err(from_read_error)
    }
}

/// Reads live buffers first, the disk otherwise (the language server).
#[derive(Debug, Clone, Copy)]
pub struct StoreSource<'a> {
    /// The open documents.
    pub store: &'a DocumentStore,
    /// Limits for files read from disk.
    pub limits: ReadLimits,
}

impl SourceProvider for StoreSource<'_> {
    fn read(&self, path: &Path) -> Result<Source, SourceError> {
        self.store
            .read(path, &self.limits)
            .map(|s| Source {
                rope: s.rope,
                version: s.version,
            })
            .map_err(from_read_error)
    }

    fn read_beneath(&self, path: &Path, beneath: &Beneath) -> Result<Source, SourceError> {
        if let Some(snap) = DocUri::from_file_path(path).and_then(|uri| self.store.snapshot(&uri)) {
            return Ok(Source::from(&snap));
        }
        DiskSource {
            limits: self.limits,
        }
        .read_beneath(path, beneath)
    }
}

fn from_read_error(e: ReadError) -> SourceError {
    match e {
        ReadError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            SourceError::NotFound
        }
        other => SourceError::Unreadable(other.to_string()),
    }
}
