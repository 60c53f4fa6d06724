//! `write_file`: create a file or replace its whole content. Replacing an existing file
//! is made from the text the model last saw of it ([`crate::ReadVersions`]): changed since,
//! the write is merged three-way so the other change is kept, or refused.

use agentls_edit::{FileOp, Format};
use agentls_model::PathKind;
use async_trait::async_trait;
use serde_json::Value;

use crate::land::{parse_ops, plan_and_land};
use crate::paths::{display, resolve};
use crate::read_versions::reconcile;
use crate::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// Whole-file writes.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteFile;

#[async_trait]
impl Tool for WriteFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write_file",
            description: "Create a file, or replace the whole content of an existing one (parent directories are created). An existing file must have been read whole with read_file first; if it changed since, your content is merged with that change, or the write is refused with the current text. Prefer targeted edits for small changes to existing files.",
            parameters: crate::schema::cached!(agentls_edit::parse::json::WriteArgs),
        }
    }

    fn is_mutating(&self) -> bool {
        true
    }

    fn path_args(&self) -> &'static [(&'static str, PathKind)] {
        &[("path", PathKind::NewFile)]
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let ops = parse_ops("write_file", Format::WholeFile, &args)?;
        let mut notes = Vec::new();
        let mut checked = Vec::with_capacity(ops.len());
        for op in ops {
            let FileOp::Write { path, content } = op else {
                checked.push(op);
                continue;
            };
            let abs = resolve(&ctx.root, &path)?;
            let shown = display(&ctx.root, &abs);
            // A missing file is new; an unreadable one (binary, too large) is refused by
            // the planner with its reason.
            let current = ctx
                .store
                .read(&abs, &ctx.read_limits)
                .ok()
                .map(|src| src.rope.to_string());
            let seen = ctx.reads.get(&abs);
            match reconcile(&shown, seen.as_deref(), current.as_deref(), &content) {
                Ok(r) => {
                    notes.extend(r.note);
                    checked.push(FileOp::Write {
                        path,
                        content: r.content,
                    });
                }
                Err(refusal) => {
                    if refusal.shown_current
                        && let Some(current) = current
                    {
                        ctx.reads.remember(&abs, current);
                    }
                    return Err(ToolError::invalid_arguments(format!(
                        "write_file: {}",
                        refusal.message
                    )));
                }
            }
        }
        let mut out = plan_and_land(ctx, "write_file", checked).await?;
        for note in notes {
            out.content.push_str(&note);
            out.content.push('\n');
        }
        Ok(out)
    }
}
