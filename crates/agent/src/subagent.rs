//! Subagents for the `task` tool: a fresh session (fresh context, its own budget,
//! optionally another model) on the same workspace, returning its final answer.

use std::sync::Arc;

use agentls_model::{CancellationToken, Provider};
use agentls_tools::{SubagentRunner, ToolContext, ToolError};
use async_trait::async_trait;

use crate::config::{Budget, SessionConfig};
use crate::context::StaticContext;
use crate::session::Session;
use crate::status::Status;
use crate::toolset::ToolSet;

/// Runs subagents. The parent's `task` call is mutating, so the parent holds its write
/// lock while a subagent runs; the subagent therefore gets its own lock, not the
/// parent's (sharing it would deadlock).
pub struct Subagents {
    /// The default model.
    pub provider: Arc<dyn Provider>,
    /// Other models a task may ask for, by name.
    pub others: Vec<Arc<dyn Provider>>,
    /// Tools (without `task`: subagents do not nest).
    pub tools: ToolSet,
    /// The parent's tool context; `subagents` is cleared for the child.
    pub ctx: ToolContext,
    /// Mode and budget of a subagent.
    pub config: SessionConfig,
    /// The static context (shared, so the child's prompt prefix matches the parent's).
    pub static_ctx: StaticContext,
}

impl std::fmt::Debug for Subagents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subagents")
            .field("provider", &self.provider.name())
            .finish_non_exhaustive()
    }
}

impl Subagents {
    /// Subagents on `provider` with a smaller default budget (30 steps).
    pub fn new(
        provider: Arc<dyn Provider>,
        tools: ToolSet,
        ctx: ToolContext,
        static_ctx: StaticContext,
    ) -> Self {
        Self {
            provider,
            others: Vec::new(),
            tools,
            ctx,
            config: SessionConfig {
                budget: Budget {
                    max_steps: 30,
                    ..Budget::default()
                },
                ..SessionConfig::default()
            },
            static_ctx,
        }
    }
}

#[async_trait]
impl SubagentRunner for Subagents {
    async fn run(
        &self,
        prompt: String,
        model: Option<String>,
        cancel: CancellationToken,
    ) -> Result<String, ToolError> {
        let provider = match model {
            None => self.provider.clone(),
            Some(name) if name == self.provider.name() => self.provider.clone(),
            Some(name) => self
                .others
                .iter()
                .find(|p| p.name() == name)
                .cloned()
                .ok_or_else(|| {
                    let mut known: Vec<&str> = self.others.iter().map(|p| p.name()).collect();
                    known.push(self.provider.name());
                    ToolError::invalid_arguments(format!(
                        "task: unknown model {name:?}; available: {}",
                        known.join(", ")
                    ))
                })?,
        };
        let mut ctx = self.ctx.clone();
        ctx.subagents = None;
        ctx.cancel = cancel;
        let mut tools = self.tools.clone();
        tools.remove("task");
        let mut session = Session::new(
            provider,
            tools,
            ctx,
            self.config.clone(),
            self.static_ctx.clone(),
        );
        match session.run(prompt).await {
            Status::Done { answer } => Ok(answer),
            Status::BudgetExhausted { limit } => Err(ToolError::timeout(format!(
                "task: the subagent ran out of its {limit} budget before finishing"
            ))),
            Status::Cancelled => Err(ToolError::aborted("task: cancelled")),
            Status::ProviderError { message, .. } => Err(ToolError::provider(format!(
                "task: the subagent's model failed: {message}"
            ))),
        }
    }
}
