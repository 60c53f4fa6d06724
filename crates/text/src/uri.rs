//! [`DocUri`]: which document, as the client named it; below the documents and their
//! snapshots, which both carry one.

use std::sync::Arc;

/// The URI of a document as the client sent it. Kept as a string: the library crates
/// know nothing of LSP, and comparing URIs byte for byte is what clients expect.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DocUri(Arc<str>);

impl DocUri {
    /// Wraps a URI string.
    pub fn new(uri: impl Into<Arc<str>>) -> Self {
        Self(uri.into())
    }

    /// The URI as sent by the client.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The local path of a `file:` URI, `None` for other schemes.
    pub fn to_file_path(&self) -> Option<std::path::PathBuf> {
        let url = url::Url::parse(&self.0).ok()?;
        if url.scheme() != "file" {
            return None;
        }
        url.to_file_path().ok()
    }

    /// The `file:` URI of an absolute path.
    pub fn from_file_path(path: &std::path::Path) -> Option<Self> {
        url::Url::from_file_path(path)
            .ok()
            .map(|u| Self::new(u.as_str()))
    }
}

impl std::fmt::Display for DocUri {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
