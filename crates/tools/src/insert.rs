//! `insert`: add lines after a given line, without matching any text.

use agentls_edit::Format;
use agentls_model::PathKind;
use async_trait::async_trait;
use serde_json::Value;

use crate::land::{parse_ops, plan_and_land};
use crate::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// Inserts whole lines at a line number; comes with `str_replace`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Insert;

#[async_trait]
impl Tool for Insert {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "insert",
            description: "Insert text (whole lines) after line `line` of an existing file (1-based, as shown by read_file; 0 inserts at the top, the last line number appends). Use when there is no unique text to replace.",
            parameters: crate::schema::cached!(agentls_edit::parse::json::InsertArgs),
        }
    }

    fn is_mutating(&self) -> bool {
        true
    }

    fn path_args(&self) -> &'static [(&'static str, PathKind)] {
        &[("path", PathKind::File)]
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let ops = parse_ops("insert", Format::Insert, &args)?;
        plan_and_land(ctx, "insert", ops).await
    }
}
