//! What the parsers produce and the planner consumes: file operations in library terms,
//! independent of the format the model wrote them in.

/// One operation on one file, with its path as the model wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOp {
    /// Create a file that must not exist yet.
    Add {
        /// Path as written.
        path: String,
        /// Full content.
        content: String,
    },
    /// Delete a file that must exist.
    Delete {
        /// Path as written.
        path: String,
    },
    /// Change an existing file by hunks, optionally moving it.
    Update {
        /// Path as written.
        path: String,
        /// New path (`*** Move to:`).
        move_to: Option<String>,
        /// Applied in order, each to the result of the previous one.
        hunks: Vec<Hunk>,
    },
    /// Replace a file's whole content, creating it if needed.
    Write {
        /// Path as written.
        path: String,
        /// Full content.
        content: String,
    },
    /// Insert text after a line of an existing file.
    Insert {
        /// Path as written.
        path: String,
        /// One-based line after which to insert; 0 inserts at the top.
        line: usize,
        /// Text to insert (whole lines).
        text: String,
    },
}

impl FileOp {
    /// The path the operation names first.
    pub fn path(&self) -> &str {
        match self {
            FileOp::Add { path, .. }
            | FileOp::Delete { path }
            | FileOp::Update { path, .. }
            | FileOp::Write { path, .. }
            | FileOp::Insert { path, .. } => path,
        }
    }
}

/// One change inside a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hunk {
    /// Whole lines to find and replace (patch chunks, search/replace blocks).
    Lines(LineHunk),
    /// A substring to find and replace (`str_replace`), falling back to line matching.
    Substring(SubstringHunk),
}

/// Whole lines to find and replace.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LineHunk {
    /// Lines to find (context and removed lines), without terminators.
    pub old: Vec<String>,
    /// Lines to put in their place.
    pub new: Vec<String>,
    /// A line to find first (`@@ fn foo`); the hunk is then the first match at or after it.
    pub anchor: Option<String>,
    /// One-based line near which the hunk is expected; breaks ties.
    pub line_hint: Option<usize>,
    /// The hunk must end at the end of the file (`*** End of File`).
    pub at_eof: bool,
    /// Search only after the previous hunk of the same file (patch chunks are ordered).
    pub sequential: bool,
}

/// A substring to find and replace.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SubstringHunk {
    /// Text to find; must occur once unless `replace_all`.
    pub old: String,
    /// Replacement.
    pub new: String,
    /// Replace every occurrence.
    pub replace_all: bool,
    /// One-based line near which the text is expected; breaks ties.
    pub line_hint: Option<usize>,
}
