//! The `*** Begin Patch` format used by OpenAI's models: Add File, Delete File, Update
//! File (with `*** Move to:`), `@@` hunks and `*** End of File`.

use crate::error::EditError;
use crate::ops::{FileOp, Hunk, LineHunk};
use crate::parse::unwrap_envelope;

const FORMAT: &str = "apply_patch";

fn err(line: usize, message: impl Into<String>) -> EditError {
    EditError::Parse {
        format: FORMAT,
        line,
        message: message.into(),
    }
}

/// A marker line, tolerating surrounding whitespace: `*** Add File: x` -> `("Add File", "x")`.
fn marker(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim().strip_prefix("***")?.trim_start();
    for name in [
        "Begin Patch",
        "End Patch",
        "Add File:",
        "Delete File:",
        "Update File:",
        "Move to:",
        "End of File",
    ] {
        if let Some(arg) = rest.strip_prefix(name) {
            return Some((name.trim_end_matches(':'), arg.trim()));
        }
    }
    None
}

/// Parses a patch. Wrappers (code fences, heredocs) and padding around markers are
/// accepted; anything else that is not the format is refused with its line number.
pub fn parse_patch(text: &str) -> Result<Vec<FileOp>, EditError> {
    let lines = unwrap_envelope(text);
    // Line numbers in messages count from the first line of the envelope's content.
    let offset = text
        .lines()
        .position(|l| Some(l) == lines.first().copied())
        .unwrap_or(0);
    let ln = |i: usize| i + offset + 1;
    match lines.first().and_then(|l| marker(l)) {
        Some(("Begin Patch", _)) => {}
        _ => return Err(err(ln(0), "the patch must start with `*** Begin Patch`")),
    }
    let Some(end) = lines
        .iter()
        .rposition(|l| matches!(marker(l), Some(("End Patch", _))))
    else {
        return Err(err(
            ln(lines.len().saturating_sub(1)),
            "the patch must end with `*** End Patch` (was it cut off?)",
        ));
    };
    if end == 0 {
        return Err(err(ln(0), "the patch must end with `*** End Patch`"));
    }
    let body = &lines[1..end];
    let mut ops = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let line = body[i];
        match marker(line) {
            Some(("Add File", path)) => {
                nonempty(path, ln(i + 1))?;
                i += 1;
                let mut content = String::new();
                while i < body.len() && marker(body[i]).is_none() {
                    let Some(l) = body[i].strip_prefix('+') else {
                        return Err(err(
                            ln(i + 1),
                            format!(
                                "every line of an added file starts with `+`; got `{}`",
                                body[i]
                            ),
                        ));
                    };
                    content.push_str(l);
                    content.push('\n');
                    i += 1;
                }
                ops.push(FileOp::Add {
                    path: path.to_owned(),
                    content,
                });
            }
            Some(("Delete File", path)) => {
                nonempty(path, ln(i + 1))?;
                ops.push(FileOp::Delete {
                    path: path.to_owned(),
                });
                i += 1;
            }
            Some(("Update File", path)) => {
                nonempty(path, ln(i + 1))?;
                i += 1;
                let mut move_to = None;
                if let Some(("Move to", dest)) = body.get(i).and_then(|l| marker(l)) {
                    nonempty(dest, ln(i + 1))?;
                    move_to = Some(dest.to_owned());
                    i += 1;
                }
                let (hunks, next) = parse_hunks(body, i, &ln)?;
                if hunks.is_empty() && move_to.is_none() {
                    return Err(err(
                        ln(i),
                        format!("`*** Update File: {path}` has no hunks"),
                    ));
                }
                i = next;
                ops.push(FileOp::Update {
                    path: path.to_owned(),
                    move_to,
                    hunks,
                });
            }
            _ if line.trim().is_empty() => i += 1,
            _ => {
                return Err(err(
                    ln(i + 1),
                    format!(
                        "expected `*** Add File: PATH`, `*** Delete File: PATH` or `*** Update File: PATH`; got `{line}`"
                    ),
                ));
            }
        }
    }
    if ops.is_empty() {
        return Err(err(ln(0), "the patch changes no file"));
    }
    Ok(ops)
}

fn nonempty(path: &str, line: usize) -> Result<(), EditError> {
    if path.is_empty() {
        return Err(err(line, "missing file path after the marker"));
    }
    Ok(())
}

/// Parses the hunks of one Update File, from `i` up to the next file marker.
fn parse_hunks(
    body: &[&str],
    mut i: usize,
    ln: &dyn Fn(usize) -> usize,
) -> Result<(Vec<Hunk>, usize), EditError> {
    let mut hunks = Vec::new();
    let mut cur: Option<LineHunk> = None;
    let mut changed = false;
    let finish = |cur: &mut Option<LineHunk>, hunks: &mut Vec<Hunk>, changed: bool| {
        if let Some(h) = cur
            .take()
            .filter(|h| changed || !h.new.is_empty() || !h.old.is_empty())
        {
            hunks.push(Hunk::Lines(h));
        }
    };
    while i < body.len() {
        let line = body[i];
        match marker(line) {
            Some(("End of File", _)) => {
                // Nothing can follow the end of the file: the hunk is complete, and
                // blank lines up to the next marker are padding, not context.
                if let Some(h) = cur.as_mut() {
                    h.at_eof = true;
                }
                finish(&mut cur, &mut hunks, changed);
                changed = false;
                i += 1;
                while i < body.len() && body[i].trim().is_empty() {
                    i += 1;
                }
                continue;
            }
            Some(_) => break,
            None => {}
        }
        if let Some(header) = line.trim_end().strip_prefix("@@") {
            finish(&mut cur, &mut hunks, changed);
            changed = false;
            let (anchor, hint) = parse_header(header);
            cur = Some(LineHunk {
                anchor,
                line_hint: hint,
                sequential: true,
                ..LineHunk::default()
            });
            i += 1;
            continue;
        }
        let h = cur.get_or_insert_with(|| LineHunk {
            sequential: true,
            ..LineHunk::default()
        });
        if let Some(rest) = line.strip_prefix('+') {
            h.new.push(rest.to_owned());
            changed = true;
        } else if let Some(rest) = line.strip_prefix('-') {
            h.old.push(rest.to_owned());
            changed = true;
        } else if let Some(rest) = line.strip_prefix(' ') {
            h.old.push(rest.to_owned());
            h.new.push(rest.to_owned());
        } else if line.trim().is_empty() {
            // An empty context line whose leading space was lost.
            h.old.push(String::new());
            h.new.push(String::new());
        } else {
            return Err(err(
                ln(i + 1),
                format!(
                    "a hunk line must start with ` ` (context), `-` (remove) or `+` (add); got `{line}`"
                ),
            ));
        }
        i += 1;
    }
    finish(&mut cur, &mut hunks, changed);
    // Blank context lines trailing a hunk are usually the blank line before the next
    // file marker, not part of the hunk.
    for h in &mut hunks {
        if let Hunk::Lines(h) = h {
            while h.old.last().is_some_and(|l| l.is_empty())
                && h.new.last().is_some_and(|l| l.is_empty())
                && h.old.len() > 1
                && !h.at_eof
            {
                h.old.pop();
                h.new.pop();
            }
        }
    }
    Ok((hunks, i))
}

/// An `@@` header: `@@ fn foo()` is an anchor, `@@ -12,5 +12,6 @@` a line hint.
fn parse_header(header: &str) -> (Option<String>, Option<usize>) {
    let h = header.trim();
    if let Some(rest) = h.strip_prefix('-') {
        let num: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        let after = h.rsplit("@@").next().unwrap_or("").trim();
        let anchor = (h.contains("@@") && !after.is_empty()).then(|| after.to_owned());
        return (anchor, num.parse().ok());
    }
    ((!h.is_empty()).then(|| h.to_owned()), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_every_operation() {
        let p = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** Delete File: b.txt\n*** Update File: c.rs\n*** Move to: d.rs\n@@ fn main\n ctx\n-old\n+new\n*** End of File\n*** End Patch\n";
        let ops = parse_patch(p).unwrap();
        assert_eq!(
            ops[0],
            FileOp::Add {
                path: "a.txt".into(),
                content: "hi\n".into()
            }
        );
        assert_eq!(
            ops[1],
            FileOp::Delete {
                path: "b.txt".into()
            }
        );
        assert_eq!(
            ops[2],
            FileOp::Update {
                path: "c.rs".into(),
                move_to: Some("d.rs".into()),
                hunks: vec![Hunk::Lines(LineHunk {
                    old: lines(&["ctx", "old"]),
                    new: lines(&["ctx", "new"]),
                    anchor: Some("fn main".into()),
                    line_hint: None,
                    at_eof: true,
                    sequential: true,
                })]
            }
        );
    }

    #[test]
    fn lenient_about_wrappers() {
        let p = "```\napply_patch <<'EOF'\n  *** Begin Patch  \n*** Update File: a\n@@ -3,2 +3,2 @@\n-x\n+y\n *** End Patch\nEOF\n```";
        let ops = parse_patch(p).unwrap();
        let FileOp::Update { hunks, .. } = &ops[0] else {
            panic!()
        };
        let Hunk::Lines(h) = &hunks[0] else { panic!() };
        assert_eq!(h.line_hint, Some(3));
    }

    #[test]
    fn errors_name_the_line() {
        let e =
            parse_patch("*** Begin Patch\n*** Update File: a\n@@\nbad\n*** End Patch").unwrap_err();
        assert_eq!(
            e.to_string(),
            "apply_patch: line 4: a hunk line must start with ` ` (context), `-` (remove) or `+` (add); got `bad`"
        );
        let e = parse_patch("*** Begin Patch\n*** Add File: a\n+x\n").unwrap_err();
        assert!(e.to_string().contains("End Patch"), "{e}");
    }
}
