//! Tool-call arguments as JSON: `str_replace`, `insert` and whole-file writes. Only
//! [`FileOp`]s leave this module; the argument structs are public for their schemas
//! (what the model is told is what is parsed here).

use serde::Deserialize;

use crate::error::EditError;
use crate::ops::{FileOp, Hunk, SubstringHunk};

/// `str_replace`'s arguments (one edit; the parser also takes an array of them).
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StrReplaceArgs {
    /// File path relative to the workspace root.
    path: String,
    /// Exact text to replace.
    old_string: String,
    /// Replacement text.
    new_string: String,
    /// Replace every occurrence.
    #[serde(default)]
    replace_all: bool,
    /// Line near which old_string is, to choose among several matches.
    #[serde(default)]
    #[schemars(range(min = 1))]
    line_hint: Option<usize>,
}

/// `insert`'s arguments.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InsertArgs {
    /// File path relative to the workspace root.
    path: String,
    /// Insert after this line; 0 for the top.
    line: usize,
    /// Lines to insert.
    text: String,
}

/// `write_file`'s arguments.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    /// File path relative to the workspace root.
    path: String,
    /// The complete new content.
    content: String,
}

/// One object or an array of them.
#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

fn parse<T: for<'de> Deserialize<'de>>(json: &str, what: &str) -> Result<Vec<T>, EditError> {
    match serde_json::from_str::<OneOrMany<T>>(json) {
        Ok(OneOrMany::One(t)) => Ok(vec![t]),
        Ok(OneOrMany::Many(v)) => Ok(v),
        Err(e) => Err(EditError::Args(format!("{what}: {e}"))),
    }
}

/// `{"path", "old_string", "new_string", "replace_all"?, "line_hint"?}` or an array of
/// them (applied in order).
pub fn parse_str_replace(json: &str) -> Result<Vec<FileOp>, EditError> {
    let args: Vec<StrReplaceArgs> = parse(json, "str_replace arguments")?;
    let mut ops: Vec<FileOp> = Vec::new();
    for a in args {
        let hunk = Hunk::Substring(SubstringHunk {
            old: a.old_string,
            new: a.new_string,
            replace_all: a.replace_all,
            line_hint: a.line_hint,
        });
        match ops.last_mut() {
            Some(FileOp::Update { path, hunks, .. }) if *path == a.path => hunks.push(hunk),
            _ => ops.push(FileOp::Update {
                path: a.path,
                move_to: None,
                hunks: vec![hunk],
            }),
        }
    }
    Ok(ops)
}

/// `{"path", "line", "text"}`: insert after one-based `line` (0 = top).
pub fn parse_insert(json: &str) -> Result<Vec<FileOp>, EditError> {
    Ok(parse::<InsertArgs>(json, "insert arguments")?
        .into_iter()
        .map(|a| FileOp::Insert {
            path: a.path,
            line: a.line,
            text: a.text,
        })
        .collect())
}

/// `{"path", "content"}`: write or create a whole file.
pub fn parse_whole_file(json: &str) -> Result<Vec<FileOp>, EditError> {
    Ok(parse::<WriteArgs>(json, "write arguments")?
        .into_iter()
        .map(|a| FileOp::Write {
            path: a.path,
            content: a.content,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn str_replace_args() {
        let ops = parse_str_replace(
            r#"{"path":"a","old_string":"x","new_string":"y","replace_all":true}"#,
        )
        .unwrap();
        assert_eq!(
            ops,
            vec![FileOp::Update {
                path: "a".into(),
                move_to: None,
                hunks: vec![Hunk::Substring(SubstringHunk {
                    old: "x".into(),
                    new: "y".into(),
                    replace_all: true,
                    line_hint: None
                })]
            }]
        );
        let e = parse_str_replace(r#"{"path":"a"}"#).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("invalid arguments: str_replace arguments"),
            "{e}"
        );
    }
}
