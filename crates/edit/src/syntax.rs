//! The syntax check after an edit, through a trait so that the grammars stay in
//! `crates/index` (which owns languages) and this crate does not depend on it.

use std::path::Path;

/// One syntax error in a text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SyntaxError {
    /// One-based line.
    pub line: usize,
    /// What kind of error (`ERROR`, `MISSING }`, ...); compared before vs after.
    pub kind: String,
}

/// Something that can find syntax errors in a file's text.
pub trait SyntaxCheck {
    /// The errors in `text`, or `None` when the language of `path` is unknown.
    fn errors(&self, path: &Path, text: &str) -> Option<Vec<SyntaxError>>;
}

/// Errors of `after` that `before` did not have, counted by kind: if the file had two
/// `ERROR`s and now has three, the last-lying extra one is reported.
pub fn new_errors(before: &[SyntaxError], after: &[SyntaxError]) -> Vec<SyntaxError> {
    let mut budget: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for e in before {
        *budget.entry(e.kind.as_str()).or_default() += 1;
    }
    let mut out = Vec::new();
    for e in after {
        match budget.get_mut(e.kind.as_str()) {
            Some(n) if *n > 0 => *n -= 1,
            _ => out.push(e.clone()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(line: usize, kind: &str) -> SyntaxError {
        SyntaxError {
            line,
            kind: kind.into(),
        }
    }

    #[test]
    fn only_new_errors() {
        let before = vec![e(3, "ERROR")];
        let after = vec![e(4, "ERROR"), e(9, "MISSING }")];
        assert_eq!(new_errors(&before, &after), vec![e(9, "MISSING }")]);
        assert_eq!(new_errors(&after, &before), vec![]);
    }
}
