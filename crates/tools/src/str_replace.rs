//! `str_replace`: replace one exact occurrence of a text in a file.

use agentls_edit::{FileOp, Format, Hunk, SubstringHunk};
use agentls_model::PathKind;
use async_trait::async_trait;
use serde_json::Value;

use crate::land::{parse_ops, plan_and_land};
use crate::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// Search-and-replace editing, for models not trained on the patch format.
#[derive(Debug, Clone, Copy, Default)]
pub struct StrReplace;

#[async_trait]
impl Tool for StrReplace {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "str_replace",
            description: "Edit a file by replacing `old_string` with `new_string`. `old_string` must occur exactly once (include a few surrounding lines to make it unique) unless `replace_all` is set; copy it from read_file output without the line-number prefixes. An empty `old_string` on a missing file creates it. On failure nothing changes and the error shows the nearest lines or every candidate line number; pass `line_hint` to pick one.",
            parameters: crate::schema::cached!(agentls_edit::parse::json::StrReplaceArgs),
        }
    }

    fn is_mutating(&self) -> bool {
        true
    }

    fn path_args(&self) -> &'static [(&'static str, PathKind)] {
        &[("path", PathKind::NewFile)]
    }

    fn edit_args(&self) -> Option<agentls_model::EditArgs> {
        Some(agentls_model::EditArgs {
            path: "path",
            old: "old_string",
            new: "new_string",
        })
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let ops = parse_ops("str_replace", Format::StrReplace, &args)?;
        let is_noop =
            |h: &Hunk| matches!(h, Hunk::Substring(SubstringHunk { old, new, .. }) if old == new);
        if ops
            .iter()
            .any(|op| matches!(op, FileOp::Update { hunks, .. } if hunks.iter().any(is_noop)))
        {
            return Err(ToolError::invalid_arguments(
                "str_replace: the edit changes nothing: old_string and new_string are equal; give new_string as the text should be after the edit",
            ));
        }
        plan_and_land(ctx, "str_replace", ops).await
    }
}
