//! Tool-call arguments as JSON: `str_replace`, `insert` and whole-file writes. Only
//! [`FileOp`]s leave this module; the argument structs are public for their schemas
//! (what the model is told is what is parsed here).

use serde::Deserialize;
use serde::de::DeserializeOwned;

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

/// One object or an array of them. Each shape is parsed as itself, so the message names
/// the field that is missing or unknown (an untagged enum would only say that neither
/// shape matched).
fn parse<T: DeserializeOwned>(json: &str, what: &str) -> Result<Vec<T>, EditError> {
    let err = |e: serde_json::Error| EditError::Args(format!("{what}: {e}"));
    let value: serde_json::Value = serde_json::from_str(json).map_err(err)?;
    if value.is_array() {
        serde_json::from_value(value).map_err(err)
    } else {
        serde_json::from_value(value).map(|t| vec![t]).map_err(err)
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
        assert_eq!(
            e.to_string(),
            "invalid arguments: str_replace arguments: missing field `old_string`"
        );
    }

    /// What is wrong is named, in one edit or in an array of them.
    #[test]
    fn a_refused_call_names_the_field() {
        let e = parse_insert(r#"{"path":"a","line":1,"text":"x","txt":"y"}"#).unwrap_err();
        assert!(e.to_string().contains("unknown field `txt`"), "{e}");
        let e = parse_whole_file(r#"[{"path":"a","content":"x"},{"path":"b"}]"#).unwrap_err();
        assert!(e.to_string().contains("missing field `content`"), "{e}");
        let ops =
            parse_whole_file(r#"[{"path":"a","content":"x"},{"path":"b","content":"y"}]"#).unwrap();
        assert_eq!(ops.len(), 2);
        let e = parse_whole_file("{").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("invalid arguments: write arguments: EOF"),
            "{e}"
        );
    }
}
