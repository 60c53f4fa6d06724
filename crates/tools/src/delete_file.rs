//! `delete_file`: remove a file.

use agentls_edit::FileOp;
use agentls_model::PathKind;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use crate::land::plan_and_land;
use crate::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec, parse_args};

/// Deletes one file.
#[derive(Debug, Clone, Copy, Default)]
pub struct DeleteFile;

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct DeleteFileArgs {
    /// File path relative to the workspace root.
    path: String,
}

#[async_trait]
impl Tool for DeleteFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "delete_file",
            description: "Delete a file of the workspace (not a directory).",
            parameters: crate::schema::cached!(DeleteFileArgs),
        }
    }

    fn is_mutating(&self) -> bool {
        true
    }

    fn path_args(&self) -> &'static [(&'static str, PathKind)] {
        &[("path", PathKind::File)]
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let a: DeleteFileArgs = parse_args("delete_file", args)?;
        let path = crate::paths::resolve(&ctx.root, &a.path)?;
        if path.is_dir() {
            return Err(ToolError::invalid_arguments(format!(
                "delete_file: {} is a directory; delete its files one by one",
                a.path
            )));
        }
        plan_and_land(ctx, "delete_file", vec![FileOp::Delete { path: a.path }]).await
    }
}
