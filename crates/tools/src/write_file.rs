//! `write_file`: create a file or replace its whole content.

use agentls_edit::Format;
use async_trait::async_trait;
use serde_json::{Value, json};

use crate::land::{parse_ops, plan_and_land};
use crate::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// Whole-file writes.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteFile;

#[async_trait]
impl Tool for WriteFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write_file",
            description: "Create a file, or replace the whole content of an existing one (parent directories are created). Prefer targeted edits for small changes to existing files.",
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the workspace root."},
                    "content": {"type": "string", "description": "The complete new content."}
                },
                "required": ["path", "content"],
                "additionalProperties": false
            }),
        }
    }

    fn is_mutating(&self) -> bool {
        true
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let ops = parse_ops("write_file", Format::WholeFile, &args)?;
        plan_and_land(ctx, "write_file", ops).await
    }
}
