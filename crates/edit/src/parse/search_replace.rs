//! Search/replace blocks (`<<<<<<< SEARCH` / `=======` / `>>>>>>> REPLACE`), several per
//! message and several files per message, each preceded by its file path.

use crate::error::EditError;
use crate::ops::{FileOp, Hunk, LineHunk};

const FORMAT: &str = "search/replace";

fn err(line: usize, message: impl Into<String>) -> EditError {
    EditError::Parse {
        format: FORMAT,
        line,
        message: message.into(),
    }
}

fn is_marker(line: &str, ch: char, word: &str) -> bool {
    let t = line.trim();
    let n = t.chars().take_while(|&c| c == ch).count();
    (5..=9).contains(&n) && t[n..].trim() == word
}

fn is_search(line: &str) -> bool {
    is_marker(line, '<', "SEARCH")
}
fn is_divider(line: &str) -> bool {
    is_marker(line, '=', "")
}
fn is_replace(line: &str) -> bool {
    is_marker(line, '>', "REPLACE")
}

/// A line that names a file: not a fence, not prose ending in a colon with spaces.
fn path_candidate(line: &str) -> Option<String> {
    let t = line
        .trim()
        .trim_start_matches('#')
        .trim()
        .trim_matches(|c| c == '`' || c == '*')
        .trim_end_matches(':')
        .trim();
    if t.is_empty() || t.starts_with("```") || t.contains(char::is_whitespace) {
        return None;
    }
    Some(t.to_owned())
}

/// Parses every block. The path is the nearest path-like line before the block (above
/// any code fence); a block without one reuses the previous block's file. An empty SEARCH
/// on a new file creates it; consecutive blocks of one file stay in order.
pub fn parse_search_replace(text: &str) -> Result<Vec<FileOp>, EditError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut ops: Vec<FileOp> = Vec::new();
    let mut last_path: Option<String> = None;
    let mut i = 0;
    while i < lines.len() {
        if !is_search(lines[i]) {
            if is_divider(lines[i]) || is_replace(lines[i]) {
                return Err(err(
                    i + 1,
                    format!("`{}` without a `<<<<<<< SEARCH` before it", lines[i].trim()),
                ));
            }
            i += 1;
            continue;
        }
        let start = i;
        // The path: walk up past a fence opener to the nearest path-like line.
        let mut path = None;
        let mut j = start;
        while j > 0 {
            j -= 1;
            let l = lines[j].trim();
            if l.starts_with("```") {
                continue;
            }
            if is_replace(l) || l.is_empty() {
                break;
            }
            path = path_candidate(l);
            break;
        }
        let path = match path.or_else(|| last_path.clone()) {
            Some(p) => p,
            None => {
                return Err(err(
                    start + 1,
                    "no file path before this block; put the path alone on the line before `<<<<<<< SEARCH`",
                ));
            }
        };
        i += 1;
        let mut old = Vec::new();
        while i < lines.len() && !is_divider(lines[i]) {
            if is_search(lines[i]) || is_replace(lines[i]) {
                return Err(err(
                    i + 1,
                    "expected `=======` between the SEARCH and REPLACE parts",
                ));
            }
            old.push(lines[i].to_owned());
            i += 1;
        }
        if i == lines.len() {
            return Err(err(
                start + 1,
                "this block has no `=======` line (was it cut off?)",
            ));
        }
        i += 1;
        let mut new = Vec::new();
        while i < lines.len() && !is_replace(lines[i]) {
            if is_search(lines[i]) || is_divider(lines[i]) {
                return Err(err(i + 1, "expected `>>>>>>> REPLACE` to end the block"));
            }
            new.push(lines[i].to_owned());
            i += 1;
        }
        if i == lines.len() {
            return Err(err(
                start + 1,
                "this block has no `>>>>>>> REPLACE` line (was it cut off?)",
            ));
        }
        i += 1;
        last_path = Some(path.clone());
        let hunk = Hunk::Lines(LineHunk {
            old,
            new,
            ..LineHunk::default()
        });
        match ops.last_mut() {
            Some(FileOp::Update { path: p, hunks, .. }) if *p == path => hunks.push(hunk),
            _ => ops.push(FileOp::Update {
                path,
                move_to: None,
                hunks: vec![hunk],
            }),
        }
    }
    if ops.is_empty() {
        return Err(err(
            1,
            "no `<<<<<<< SEARCH` / `=======` / `>>>>>>> REPLACE` block found",
        ));
    }
    Ok(ops)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_blocks_and_files() {
        let t = "Change both:\n\nsrc/a.rs\n```rust\n<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n```\n\n```\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n```\n`b.py`\n<<<<<<< SEARCH\n=======\nprint()\n>>>>>>> REPLACE\n";
        let ops = parse_search_replace(t).unwrap();
        assert_eq!(ops.len(), 2);
        let FileOp::Update { path, hunks, .. } = &ops[0] else {
            panic!()
        };
        assert_eq!(path, "src/a.rs");
        assert_eq!(hunks.len(), 2);
        assert_eq!(ops[1].path(), "b.py");
    }

    #[test]
    fn cut_off_block() {
        let e = parse_search_replace("a.rs\n<<<<<<< SEARCH\nx\n=======\ny\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "search/replace: line 2: this block has no `>>>>>>> REPLACE` line (was it cut off?)"
        );
    }
}
