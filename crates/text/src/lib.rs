//! Text as the editor shows it: ropes, positions in every LSP encoding, versions,
//! snapshots, and the store of open documents.
//!
//! The server keeps one [`DocumentStore`]. `didOpen`, `didChange` and `didClose` go
//! through it synchronously and in arrival order; everything else reads [`Snapshot`]s,
//! O(1) clones of a document's rope that later typing does not disturb.
//!
//! **Invariants.**
//! - This crate owns every conversion between line/column positions and offsets
//!   ([`position`]); nothing else computes columns. Conversions are O(log n).
//! - No input panics: positions past the end clamp, positions inside a character snap
//!   to its start, inverted ranges are refused, and every adjustment is reported.
//! - A batch of changes applies whole or not at all; a refused batch, a batch whose
//!   version is not newer, or a change the server could not read marks the document out
//!   of sync until the client sends the full text again (a full-text change, a save with
//!   text, or a reopen).
//! - No LSP types, no JSON, no async here: this crate speaks offsets and versions.
//!
//! ```
//! use agentls_text::{ContentChange, DocUri, DocumentStore, Position, PositionEncoding, Range};
//!
//! let store = DocumentStore::new();
//! let uri = DocUri::new("file:///tmp/a.rs");
//! store.open(uri.clone(), "rust", 1, "let s = \"😀\";\n");
//! let before = store.snapshot(&uri).unwrap();
//! // Replace the emoji: in UTF-16 it spans columns 9..11.
//! let range = Range::new(Position::new(0, 9), Position::new(0, 11));
//! store.change(&uri, 2, &[ContentChange::replace(range, "ok")], PositionEncoding::Utf16).unwrap();
//! assert_eq!(store.snapshot(&uri).unwrap().text(), "let s = \"ok\";\n");
//! assert_eq!(before.text(), "let s = \"😀\";\n");
//! ```

pub mod disk;
mod document;
mod encoding;
pub mod next_edit;
pub mod position;
mod snapshot;
mod store;
mod uri;

pub use disk::{ReadError, ReadLimits, read_text_file, read_text_from};
pub use document::{ContentChange, Document, SyncError, SyncWarning};
pub use encoding::PositionEncoding;
pub use position::{Position, Range};
pub use snapshot::Snapshot;
pub use store::{DocumentStore, Origin, SourceText};
pub use uri::DocUri;
