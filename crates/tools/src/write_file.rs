//! `write_file`: create a file or replace its whole content.

use agentls_edit::FileOp;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::land::plan_and_land;
use crate::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec, parse_args};

/// Whole-file writes.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteFile;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteFileArgs {
    path: String,
    content: String,
}

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
        let a: WriteFileArgs = parse_args("write_file", args)?;
        let op = FileOp::Write {
            path: a.path,
            content: a.content,
        };
        plan_and_land(ctx, "write_file", vec![op]).await
    }
}
