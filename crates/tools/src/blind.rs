//! Edits written blind: a `str_replace` on a file the model has not seen any of in
//! this session. Small models guess `old_string` (the 0.5B model replaced the first
//! `return` of a file it had never read with `return 0`, and the guess landed). The
//! lean profile's harness answers such a call with the file instead of the edit, unless
//! `old_string` is whole lines of the file found once: then the model knew the text
//! (from the task, say: "replace the line `todo!()`"), and the edit is made.

use serde_json::Value;

use crate::paths::{display, resolve};
use crate::{ReadFile, Tool, ToolContext};

/// For a `str_replace` call (`tool`, its raw JSON `args`) that would change an existing
/// file the model has not seen any lines of in this session, with an `old_string` that
/// is not whole lines found once: why it was not made, followed by the file as
/// `read_file` shows it (which counts as the model's read). `None` for every other
/// call: other tools, a new file (empty `old_string`), paths that do not resolve or are
/// not files (the tool itself says why).
pub async fn read_before_edit(ctx: &ToolContext, tool: &str, args: &str) -> Option<String> {
    if tool != "str_replace" {
        return None;
    }
    let args: Value = serde_json::from_str(args).ok()?;
    let written = args.get("path")?.as_str()?;
    let old = args.get("old_string")?.as_str()?;
    if old.is_empty() {
        return None;
    }
    let path = resolve(&ctx.root, written).ok()?;
    if !path.is_file() || ctx.reads.has_looked(&path) {
        return None;
    }
    if let Ok(text) = crate::paths::read(ctx, &path)
        && whole_lines_once(&text.rope.to_string(), old)
    {
        return None;
    }
    let shown = display(&ctx.root, &path);
    let read = ReadFile
        .call(ctx, serde_json::json!({ "path": written }))
        .await
        .ok()?;
    Some(format!(
        "{shown}: this edit was not made, because you have not read {shown} yet and old_string must be copied from it. Here is the file; call str_replace again with old_string copied exactly from these lines (without the line numbers and the tab).\n\n{}",
        read.content
    ))
}

/// Whether `old`, each line trimmed, is a run of whole lines of `text` (trimmed too)
/// that occurs exactly once.
fn whole_lines_once(text: &str, old: &str) -> bool {
    let want: Vec<&str> = old.trim_matches('\n').lines().map(str::trim).collect();
    if want.iter().all(|l| l.is_empty()) {
        return false;
    }
    let have: Vec<&str> = text.lines().map(str::trim).collect();
    have.windows(want.len())
        .filter(|w| *w == want.as_slice())
        .count()
        == 1
}

/// Files larger than this are not offered as texts to hold an edit to: the check runs
/// for every candidate token while an `old_string` is written.
const MAX_TEXT_BYTES: usize = 256 * 1024;

/// All the texts offered at most: they are read again before every request.
const MAX_TEXTS_BYTES: usize = 4 * 1024 * 1024;

/// The files the model has seen in this session, as the edit tools would match them now
/// (live buffers first): `(path relative to the root, /-separated; text)`. Files gone,
/// unreadable, or over 256 KiB are left out, and the rest past
/// 4 MiB in all (an edit of a file left out is not held, and is answered
/// as the tools answer any edit).
pub fn seen_texts(ctx: &ToolContext) -> Vec<(String, String)> {
    let mut total = 0;
    let mut out = Vec::new();
    for path in ctx.reads.looked_at() {
        let Some(rel) = path
            .strip_prefix(&ctx.root)
            .ok()
            .and_then(|r| r.to_str())
            .map(str::to_owned)
        else {
            continue;
        };
        let Ok(text) = crate::paths::read(ctx, &path) else {
            continue;
        };
        let bytes = text.rope.len_bytes();
        if bytes > MAX_TEXT_BYTES || total + bytes > MAX_TEXTS_BYTES {
            continue;
        }
        total += bytes;
        out.push((rel, text.rope.to_string()));
    }
    out
}
