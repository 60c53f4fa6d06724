//! The edit engine's syntax check, backed by the index's tree-sitter grammars. The two
//! crates do not know each other (DESIGN.md: `text` ← `edit`, `text` ← `index`); this
//! adapter is where they meet.

use std::path::Path;

use agentls_edit::{SyntaxCheck, SyntaxError};
use agentls_index::{Language, SyntaxErrorKind};

/// Finds syntax errors with the grammar of the file's language; `None` for languages
/// without one.
#[derive(Debug, Default, Clone, Copy)]
pub struct TreeSitterCheck;

impl SyntaxCheck for TreeSitterCheck {
    fn errors(&self, path: &Path, text: &str) -> Option<Vec<SyntaxError>> {
        let language = Language::from_path(path)?;
        let errors = agentls_index::syntax_errors(language, text)
            .into_iter()
            .map(|e| SyntaxError {
                line: e.line + 1,
                kind: match e.kind {
                    SyntaxErrorKind::Error => "syntax error".to_owned(),
                    SyntaxErrorKind::Missing(what) => format!("missing `{what}`"),
                },
            })
            .collect();
        Some(errors)
    }
}
