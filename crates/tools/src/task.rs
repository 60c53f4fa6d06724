//! `task`: hand a self-contained sub-task to a subagent with a fresh context.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use crate::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec, parse_args};

/// Runs a subagent through [`crate::SubagentRunner`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Task;

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct TaskArgs {
    /// The complete instructions.
    prompt: String,
    /// Optional model name for the subagent.
    #[serde(default)]
    model: Option<String>,
}

#[async_trait]
impl Tool for Task {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "task",
            description: "Delegate a self-contained sub-task (a search across many files, an investigation, a focused change) to a subagent with a fresh context and its own budget. It cannot see this conversation: say everything it needs in `prompt`, and what to report back. Returns the subagent's final summary.",
            parameters: crate::schema::cached!(TaskArgs),
        }
    }

    fn is_mutating(&self) -> bool {
        // The subagent may edit.
        true
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let a: TaskArgs = parse_args("task", args)?;
        if a.prompt.trim().is_empty() {
            return Err(ToolError::invalid_arguments("task: empty prompt"));
        }
        let Some(runner) = &ctx.subagents else {
            return Err(ToolError::environment(
                "task: subagents are not available in this session; do the work yourself",
            ));
        };
        let summary = runner
            .run(
                a.prompt,
                a.model,
                ctx.cancel.child_token(),
                ctx.progress.clone(),
            )
            .await?;
        Ok(ToolOutput::text(summary))
    }
}
