//! Why an edit was refused, worded for the model that wrote it.

use std::path::PathBuf;

/// An edit that could not be planned or applied. Nothing was changed when this is
/// returned. The `Display` text is meant to be sent back to the model as is.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    /// The edit text is not valid in its format.
    #[error("{format}: line {line}: {message}")]
    Parse {
        /// The format's name.
        format: &'static str,
        /// One-based line of the edit text.
        line: usize,
        /// What is wrong and how it should look.
        message: String,
    },
    /// Arguments that make no sense (a line past the end, a malformed JSON call).
    #[error("invalid arguments: {0}")]
    Args(String),
    /// The text to replace was not found.
    #[error("{path}: hunk {hunk}: {detail}")]
    NoMatch {
        /// File as written.
        path: String,
        /// One-based hunk number within the whole edit.
        hunk: usize,
        /// The nearest lines and what differs.
        detail: String,
    },
    /// The text to replace occurs several times.
    #[error("{path}: hunk {hunk}: {detail}")]
    Ambiguous {
        /// File as written.
        path: String,
        /// One-based hunk number within the whole edit.
        hunk: usize,
        /// One-based first lines of every candidate.
        lines: Vec<usize>,
        /// The candidates and how to disambiguate.
        detail: String,
    },
    /// The replacement is already there and the text to replace is not.
    #[error(
        "{path}: hunk {hunk}: already applied: the replacement is already at line {line} and the text it replaces is gone; drop this hunk"
    )]
    AlreadyApplied {
        /// File as written.
        path: String,
        /// One-based hunk number within the whole edit.
        hunk: usize,
        /// One-based line where the replacement starts.
        line: usize,
    },
    /// The file does not exist.
    #[error("{path}: file not found; create it with a whole-file write or an Add File")]
    NotFound {
        /// File as written.
        path: String,
    },
    /// The file exists but the edit meant to create it.
    #[error("{path}: file already exists; change it with an update instead of creating it")]
    Exists {
        /// File as written.
        path: String,
    },
    /// The path leaves the workspace.
    #[error("{path}: outside the workspace root; use a path relative to the root")]
    OutsideRoot {
        /// File as written.
        path: String,
    },
    /// The path is under the root as written, but the workspace's links would take it
    /// out (a symbolic link leaving the root, a dangling link, a file with several hard
    /// links). An environment error: the workspace, not the model's path, is at fault.
    #[error("{path}: {reason}")]
    NotBeneath {
        /// File as written.
        path: String,
        /// What leads out, and what to do instead.
        reason: String,
    },
    /// The file cannot be edited as text (binary, too large, unreadable).
    #[error("{path}: {message}")]
    Unreadable {
        /// File as written.
        path: String,
        /// Why.
        message: String,
    },
    /// Writing the result to disk failed (headless runs only); nothing was changed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
}

impl EditError {
    /// Whether the environment, not the edit, is at fault (unreadable file, I/O).
    pub fn is_environment(&self) -> bool {
        matches!(
            self,
            EditError::Unreadable { .. } | EditError::Io { .. } | EditError::NotBeneath { .. }
        )
    }
}
