//! The edit engine's syntax check, backed by the index's tree-sitter grammars: the two
//! crates do not know each other (`text` ← `edit`, `text` ← `index`); this adapter is
//! where they meet.

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
        Some(
            agentls_index::syntax_errors(language, text)
                .into_iter()
                .map(|e| SyntaxError {
                    line: e.line + 1,
                    kind: match e.kind {
                        SyntaxErrorKind::Error => "syntax error".to_owned(),
                        SyntaxErrorKind::Missing(what) => format!("missing `{what}`"),
                    },
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_rust_errors_and_skips_unknown_languages() {
        let errs = TreeSitterCheck
            .errors(Path::new("a.rs"), "fn a() {\n    let x = ;\n}\n")
            .unwrap();
        assert!(!errs.is_empty());
        assert_eq!(errs[0].line, 2);
        assert!(TreeSitterCheck.errors(Path::new("a.txt"), "(((").is_none());
        assert_eq!(
            TreeSitterCheck
                .errors(Path::new("a.rs"), "fn a() {}\n")
                .unwrap(),
            vec![]
        );
    }
}
