//! [`ModelError`]: why loading or running a model failed, for every model of the crate.

use std::path::PathBuf;

/// Why loading or running a model failed.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A token sequence the model cannot take (an id outside its vocabulary, more
    /// tokens than it has positions).
    #[error("model input: {0}")]
    Input(String),
    /// The tokenizer could not be loaded or configured, or failed on a text.
    #[error("tokenizer: {context}: {detail}")]
    Tokenizer {
        /// What was being done.
        context: String,
        /// The tokenizer's own words.
        detail: String,
    },
    /// A file is not what it should be (config, saved static model).
    #[error("{}: {detail}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// A saved static model distilled from other weights than the ones loaded.
    #[error(
        "{} was distilled from weights {found}, not {expected}: distill it again",
        path.display()
    )]
    Stale {
        /// The file.
        path: PathBuf,
        /// sha256 of the weights at hand.
        expected: String,
        /// sha256 the file records.
        found: String,
    },
    /// File system trouble.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
}
