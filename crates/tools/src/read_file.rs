//! `read_file`: a window of a file's lines, numbered, as the editor shows it.

use agentls_model::PathKind;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use crate::paths::{display, resolve};
use crate::util::clip;
use crate::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec, parse_args};

const DEFAULT_LIMIT: usize = 2000;
const MAX_LINE_CHARS: usize = 2000;
/// Output past this many bytes stops at a line boundary, with a note how to read on.
const MAX_OUTPUT_BYTES: usize = 128 * 1024;

/// Reads a file (the open buffer when there is one), with line numbers.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadFile;

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReadFileArgs {
    /// File path relative to the workspace root.
    path: String,
    /// First line to read (1-based).
    #[schemars(range(min = 1))]
    #[serde(default)]
    offset: Option<usize>,
    /// Maximum number of lines to read.
    #[schemars(range(min = 1))]
    #[serde(default)]
    limit: Option<usize>,
}

#[async_trait]
impl Tool for ReadFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_file",
            description: "Read a text file of the workspace, as the editor shows it (unsaved changes included). Returns lines prefixed with their 1-based line number and a tab. Reads at most `limit` lines (default 2000) starting at line `offset` (1-based, default 1); long lines are cut. Use offset/limit to page through big files.",
            parameters: crate::schema::cached!(ReadFileArgs),
        }
    }

    fn is_mutating(&self) -> bool {
        false
    }

    fn path_args(&self) -> &'static [(&'static str, PathKind)] {
        &[("path", PathKind::File)]
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let args: ReadFileArgs = parse_args("read_file", args)?;
        let path = resolve(&ctx.root, &args.path)?;
        let shown = display(&ctx.root, &path);
        if path.is_dir() {
            return Err(ToolError::invalid_arguments(format!(
                "{shown}: is a directory; use list_dir to see its entries"
            )));
        }
        let src = crate::paths::read(ctx, &path).map_err(|e| {
            ToolError::environment(match &e {
                agentls_text::ReadError::Io { source, .. }
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    format!(
                        "{shown}: no such file; use find_files or list_dir to find the right path"
                    )
                }
                _ => e.to_string(),
            })
        })?;
        let rope = src.rope;
        // A trailing newline does not open a further line.
        let mut total = rope.len_lines();
        if total > 0 && rope.line(total - 1).len_chars() == 0 {
            total -= 1;
        }
        let offset = args.offset.unwrap_or(1).max(1);
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT).max(1);
        if total == 0 {
            ctx.reads.remember(&path, rope.to_string());
            return Ok(ToolOutput::with_summary(
                format!("{shown}: empty file"),
                format!("read {shown} (empty)"),
            ));
        }
        if offset > total {
            return Err(ToolError::invalid_arguments(format!(
                "{shown}: offset {offset} is past the end; the file has {total} lines"
            )));
        }
        let mut end = (offset - 1 + limit).min(total);
        let mut out = String::new();
        for n in offset..=end {
            let line = rope.line(n - 1).to_string();
            let line = line.trim_end_matches(['\n', '\r']);
            out.push_str(&format!("{n:>6}\t{}\n", clip(line, MAX_LINE_CHARS)));
            if out.len() > MAX_OUTPUT_BYTES && n < end {
                end = n;
                break;
            }
        }
        if end < total {
            out.push_str(&format!(
                "[lines {offset}-{end} of {total}; call again with offset={} to read on]\n",
                end + 1
            ));
        }
        // Only a read of every line counts as having seen the file (long lines are cut
        // in the output, but the model saw where they are).
        if offset == 1 && end == total {
            ctx.reads.remember(&path, rope.to_string());
        } else {
            ctx.reads.glimpse(&path);
        }
        let origin = match src.origin {
            agentls_text::Origin::Buffer => " (unsaved buffer)",
            _ => "",
        };
        Ok(ToolOutput::with_summary(
            out,
            format!("read {shown}:{offset}-{end}{origin}"),
        ))
    }
}
