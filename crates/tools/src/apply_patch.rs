//! `apply_patch`: the `*** Begin Patch` envelope, for models trained on it.

use agentls_edit::{Format, parse};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use crate::land::{plan_and_land, refused};
use crate::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec, parse_args};

/// Multi-file patches: add, update (with move), delete.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApplyPatch;

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ApplyPatchArgs {
    /// The patch text, from `*** Begin Patch` to `*** End Patch`.
    #[serde(alias = "input")]
    patch: String,
}

#[async_trait]
impl Tool for ApplyPatch {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "apply_patch",
            description: "Edit files with a patch in this format:\n*** Begin Patch\n*** Add File: path\n+line\n*** Update File: path\n*** Move to: new/path (optional)\n@@ optional line to anchor on (the enclosing signature)\n context line\n-removed line\n+added line\n*** Delete File: path\n*** End Patch\nPaths are relative to the workspace root. Give about 3 lines of context around each change. The whole patch applies or nothing does; on failure the error shows the nearest lines.",
            parameters: crate::schema::cached!(ApplyPatchArgs),
        }
    }

    fn is_mutating(&self) -> bool {
        true
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let a: ApplyPatchArgs = parse_args("apply_patch", args)?;
        let ops = parse(Format::ApplyPatch, &a.patch).map_err(refused)?;
        plan_and_land(ctx, "apply_patch", ops).await
    }
}
