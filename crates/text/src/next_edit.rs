//! Next-edit suggestions: the user's recent edits per document
//! ([`history`]), and the edits they imply elsewhere ([`predict`]: the rest of a rename,
//! the calls of a function that gained a parameter), and the pieces of the model path
//! ([`rewrite`]: a window rewritten by a model, diffed back to the smallest edit).
//!
//! Both work in char offsets of the document as it is now; the server converts them to
//! positions, feeds the history from `didChange` and asks for a prediction when the
//! editor does (`textDocument/copilotInlineEdit`).

pub mod history;
pub mod predict;
pub mod rewrite;

pub use history::{Burst, Change, EditHistory};
pub use predict::{Kind, Prediction, Suggestion, predict, word_being_typed};
