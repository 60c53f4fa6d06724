//! Files a client holds (ACP's `fs/read_text_file`: the editor's buffers, unsaved
//! typing included). Before a tool call, every file it names is read through the
//! client and, where the client's text is not the disk's, kept in the context's
//! document store as a live buffer: from there every tool sees it (reads, edits
//! planned on it, grep, the sandbox's overlay for commands). After a call that
//! changed files, they are read back the same way, so the store holds what the
//! client holds, not what the agent expects it to hold.

use std::path::Path;
use std::time::Duration;

use agentls_edit::{Beneath, FileOp};
use agentls_text::DocUri;
use serde_json::Value;

use crate::ToolContext;

/// How long one read through the client may take before the disk is used instead.
const READ_WAIT: Duration = Duration::from_secs(10);

/// Before a call of tool `name`: the files it names read through the client (nothing
/// without one). Returns what to give [`after`] once a mutating call is done.
pub async fn before(ctx: &ToolContext, name: &str, args: &Value) -> Vec<String> {
    if ctx.client_files.is_none() {
        return Vec::new();
    }
    let named = named(name, args);
    refresh(ctx, &named).await;
    named
}

/// After a call that changed files: the files it named, read back through the client.
pub async fn after(ctx: &ToolContext, named: &[String]) {
    refresh(ctx, named).await;
}

/// The paths a call of tool `name` names, as the model wrote them.
pub(crate) fn named(name: &str, args: &Value) -> Vec<String> {
    let mut out: Vec<String> = ["path", "from", "to"]
        .iter()
        .filter_map(|k| args.get(k).and_then(Value::as_str))
        .map(str::to_owned)
        .collect();
    if name == "apply_patch"
        && let Some(patch) = ["patch", "input"]
            .iter()
            .find_map(|k| args.get(k).and_then(Value::as_str))
        && let Ok(ops) = agentls_edit::parse::patch::parse_patch(patch)
    {
        for op in ops {
            if let FileOp::Update {
                move_to: Some(to), ..
            } = &op
            {
                out.push(to.clone());
            }
            out.push(op.path().to_owned());
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Brings the store up to date with the client for each of `written` (paths as the
/// model wrote them). Paths that do not resolve beneath the root, are not files, or
/// that the client cannot read are left to the disk (and to the tool's own errors).
async fn refresh(ctx: &ToolContext, written: &[String]) {
    let Some(client) = &ctx.client_files else {
        return;
    };
    for w in written {
        let Ok(path) = crate::paths::resolve(&ctx.root, w) else {
            continue;
        };
        let Some(uri) = DocUri::from_file_path(&path) else {
            continue;
        };
        let held = ctx.store.snapshot(&uri);
        if held.is_none() && !path.is_file() {
            continue;
        }
        let text = match tokio::time::timeout(READ_WAIT, client.read(&path)).await {
            Ok(Ok(text)) => text,
            Ok(Err(why)) => {
                tracing::debug!(path = %path.display(), "client read failed, using the disk: {why}");
                ctx.store.close(&uri);
                continue;
            }
            Err(_) => {
                tracing::warn!(path = %path.display(), "client read timed out, using the disk");
                ctx.store.close(&uri);
                continue;
            }
        };
        keep(
            ctx,
            &path,
            uri,
            held.map(|s| (s.rope.to_string(), s.version)),
            text,
        );
    }
}

/// Puts the client's `text` of `path` in the store unless the store or (when the store
/// holds nothing) the disk already says the same.
fn keep(ctx: &ToolContext, path: &Path, uri: DocUri, held: Option<(String, i32)>, text: String) {
    if text.len() as u64 > ctx.read_limits.max_bytes {
        // The tools refuse a file this big anyway; the disk's refusal says so.
        ctx.store.close(&uri);
        return;
    }
    match held {
        Some((held, _)) if held == text => {}
        Some((_, version)) => {
            ctx.store.open(uri, "", version.saturating_add(1), &text);
        }
        None => {
            let on_disk = Beneath::open(&ctx.root)
                .ok()
                .and_then(|b| b.read_text(path, &ctx.read_limits).ok());
            if on_disk.as_deref() != Some(text.as_str()) {
                ctx.store.open(uri, "", 1, &text);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn calls_name_their_paths_patches_included() {
        assert_eq!(named("read_file", &json!({"path": "a.rs"})), ["a.rs"]);
        assert_eq!(
            named("move_file", &json!({"from": "a.rs", "to": "b/a.rs"})),
            ["a.rs", "b/a.rs"]
        );
        let patch = "*** Begin Patch\n*** Update File: src/x.rs\n*** Move to: src/y.rs\n@@\n-a\n+b\n*** Delete File: old.rs\n*** End Patch\n";
        assert_eq!(
            named("apply_patch", &json!({"patch": patch})),
            ["old.rs", "src/x.rs", "src/y.rs"]
        );
        assert!(named("apply_patch", &json!({"patch": "not a patch"})).is_empty());
        assert!(named("grep", &json!({"pattern": "x"})).is_empty());
    }
}
