//! The tool trait: one unit struct per tool, each in its own module.

use async_trait::async_trait;
use serde_json::Value;

use crate::{ToolContext, ToolError};

/// What the model is told about a tool: generated from the tool itself.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// The name the model calls it by (`read_file`).
    pub name: &'static str,
    /// One paragraph: what it does, when to use it, what it returns.
    pub description: &'static str,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

impl ToolSpec {
    /// The model layer's tool definition.
    pub fn to_tool_def(&self) -> agentls_model::ToolDef {
        agentls_model::ToolDef {
            name: self.name.to_owned(),
            description: self.description.to_owned(),
            parameters: self.parameters.clone(),
        }
    }
}

/// A successful tool call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOutput {
    /// What the model reads.
    pub content: String,
    /// One line for people (progress, `agent/event`): "read src/lib.rs:1-80".
    pub summary: String,
    /// The tool worked but what it ran failed: a command that exited non-zero or was
    /// killed by a signal (a failing test run). Counted as a failed step.
    pub failed: bool,
}

impl ToolOutput {
    /// An output whose summary is its first line.
    pub fn text(content: impl Into<String>) -> Self {
        let content = content.into();
        let summary = content
            .lines()
            .next()
            .unwrap_or_default()
            .chars()
            .take(120)
            .collect();
        Self {
            content,
            summary,
            failed: false,
        }
    }

    /// An output with its own summary.
    pub fn with_summary(content: impl Into<String>, summary: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            summary: summary.into(),
            failed: false,
        }
    }

    /// The same output, marked as a failure of what the tool ran.
    pub fn failed(mut self, failed: bool) -> Self {
        self.failed = failed;
        self
    }
}

/// One tool. Implementations are unit structs with a private args struct; bad arguments
/// are [`ToolError::invalid_arguments`] with a message the model can act on.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Name, description and argument schema.
    fn spec(&self) -> ToolSpec;

    /// Whether the tool may change the workspace. Mutating calls run one at a time;
    /// read-only ones in parallel. Answer `true` when unsure.
    fn is_mutating(&self) -> bool;

    /// The arguments that name workspace paths, and what they may name: a model whose
    /// output is constrained (the embedded ones) can then only write paths that exist,
    /// or new ones where the tool creates files.
    fn path_args(&self) -> &'static [(&'static str, agentls_model::PathKind)] {
        &[]
    }

    /// The arguments of an edit that must be copied from the file it names, and the one
    /// that must differ from them: a constrained model can then only write an
    /// `old_string` that is in a file it has seen.
    fn edit_args(&self) -> Option<agentls_model::EditArgs> {
        None
    }

    /// Runs the call. Must return promptly once `ctx.cancel` fires.
    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError>;
}

/// Parses a tool's arguments, turning serde's complaint into a message for the model.
pub fn parse_args<T: serde::de::DeserializeOwned>(tool: &str, args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args)
        .map_err(|e| ToolError::invalid_arguments(format!("{tool}: invalid arguments: {e}")))
}
