//! Subagents for the `task` tool: a fresh session (fresh context, its own budget,
//! optionally another model) on the same workspace, returning its final answer.

use std::sync::Arc;

use agentls_model::{CancellationToken, Provider};
use agentls_sandbox::OutputStream;
use agentls_tools::{SubagentRunner, ToolContext, ToolError, ToolProgress};
use async_trait::async_trait;

use crate::config::{Budget, SessionConfig};
use crate::context::StaticContext;
use crate::event::Event;
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
        progress: Option<Arc<dyn ToolProgress>>,
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
        let status = match progress {
            Some(progress) => {
                let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
                session = session.with_events(tx);
                // The session owns the sender: it goes when the run ends, and so
                // does the forwarder.
                let run = async move { session.run(prompt).await };
                let (status, ()) = tokio::join!(run, forward(rx, progress));
                status
            }
            None => session.run(prompt).await,
        };
        match status {
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

/// The subagent's events as lines of the `task` call's output: each tool call with its
/// outcome, its text line by line.
async fn forward(
    mut events: tokio::sync::mpsc::UnboundedReceiver<Event>,
    progress: Arc<dyn ToolProgress>,
) {
    let out = |text: &str| progress.output(OutputStream::Stdout, text);
    let mut line = String::new();
    while let Some(ev) = events.recv().await {
        match ev {
            Event::TextDelta { text } => {
                line.push_str(&text);
                if let Some(end) = line.rfind('\n') {
                    out(&line[..=end]);
                    line.drain(..=end);
                }
            }
            Event::ToolStarted {
                name, arguments, ..
            } => {
                if !line.is_empty() {
                    out(&format!("{}\n", std::mem::take(&mut line)));
                }
                let what = ["path", "command", "pattern", "name", "query"]
                    .iter()
                    .find_map(|k| arguments.get(*k).and_then(serde_json::Value::as_str))
                    .map(|a| format!(" {}", a.chars().take(80).collect::<String>()))
                    .unwrap_or_default();
                out(&format!("▸ {name}{what}\n"));
            }
            Event::ToolFinished { summary, error, .. } => match error {
                Some(class) => out(&format!("  ✗ {class}: {summary}\n")),
                None => out(&format!("  {summary}\n")),
            },
            _ => {}
        }
    }
    if !line.is_empty() {
        out(&format!("{line}\n"));
    }
}
