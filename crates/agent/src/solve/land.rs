//! Landing a chosen change: `write_file` through the session's edit sink, so it is
//! planned against the live buffers, versioned, merged with typing, or refused.

use agentls_tools::{Tool, ToolContext};
use serde_json::json;

use super::localise::Target;

/// Lands `text` as the target file's new content: one `write_file` through the
/// session's edit sink (planned against the live buffer, merged with what the user
/// typed since the pipeline read it, or refused).
pub(super) async fn land(
    ctx: &ToolContext,
    target: &Target,
    text: String,
) -> Result<String, String> {
    land_files(ctx, vec![(target.path.clone(), target.text.clone(), text)]).await
}

/// Lands new texts of several files, `(absolute path, text read, new text)`, as one
/// `write_file` of them all: one plan, one edit.
pub(super) async fn land_files(
    ctx: &ToolContext,
    files: Vec<(std::path::PathBuf, String, String)>,
) -> Result<String, String> {
    let mut writes = Vec::with_capacity(files.len());
    for (path, read, text) in files {
        // The pipeline read the file: what it read is the base of the write. A file
        // it found missing has no base: if one appeared since, the write is refused.
        if !read.is_empty() || path.exists() {
            ctx.reads.remember(&path, read);
        }
        let shown = path
            .strip_prefix(&ctx.root)
            .unwrap_or(&path)
            .display()
            .to_string();
        writes.push(json!({ "path": shown, "content": text }));
    }
    let args = serde_json::Value::Array(writes);
    agentls_tools::WriteFile
        .call(ctx, args)
        .await
        .map(|out| out.summary)
        .map_err(|e| e.message)
}
