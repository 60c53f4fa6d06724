//! `move_file`: rename or move a file.

use agentls_edit::FileOp;
use agentls_model::PathKind;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use crate::land::plan_and_land;
use crate::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec, parse_args};

/// Moves one file, keeping its content (unsaved changes included).
#[derive(Debug, Clone, Copy, Default)]
pub struct MoveFile;

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct MoveFileArgs {
    /// Current path relative to the root.
    from: String,
    /// New path relative to the root.
    to: String,
}

#[async_trait]
impl Tool for MoveFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "move_file",
            description: "Move or rename a file within the workspace. The destination must not exist; parent directories are created. References to the file elsewhere are not updated.",
            parameters: crate::schema::cached!(MoveFileArgs),
        }
    }

    fn is_mutating(&self) -> bool {
        true
    }

    fn path_args(&self) -> &'static [(&'static str, PathKind)] {
        &[("from", PathKind::File), ("to", PathKind::NewFile)]
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let a: MoveFileArgs = parse_args("move_file", args)?;
        let from = crate::paths::resolve(&ctx.root, &a.from)?;
        let to = crate::paths::resolve(&ctx.root, &a.to)?;
        if from == to {
            return Err(ToolError::invalid_arguments(
                "move_file: `from` and `to` are the same path",
            ));
        }
        if to.exists() {
            return Err(ToolError::invalid_arguments(format!(
                "move_file: {} already exists; delete it first or choose another name",
                a.to
            )));
        }
        let op = FileOp::Update {
            path: a.from,
            move_to: Some(a.to),
            hunks: Vec::new(),
        };
        plan_and_land(ctx, "move_file", vec![op]).await
    }
}
