//! Running one turn's tool calls: read-only calls in parallel, mutating calls one at a
//! time, every call answered exactly once.
//!
//! All calls of a turn start together and queue on one fair read/write lock in the
//! order the model made them: consecutive reads share it, a write waits for the reads
//! before it and holds back the calls after it. So `[read, read, write, read]` runs the
//! two reads together, then the write alone, then the last read.
//!
//! With an event sender, each call gets its own [`ToolProgress`] (in its context's
//! `progress`), so a command's output and plan changes come out as events with the
//! call's id.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentls_model::{ToolCall, ToolResult};
use agentls_sandbox::OutputStream;
use agentls_tools::{TodoItem, ToolContext, ToolError, ToolOutput, ToolProgress};
use futures::FutureExt;
use tokio::sync::RwLock;

use crate::config::Mode;
use crate::event::{Event, EventSender, PlanItem, clip_args};
use crate::metrics::class_name;
use crate::toolset::ToolSet;

/// One answered call.
#[derive(Clone, Debug)]
pub struct CallOutcome {
    /// The call as the model made it.
    pub call: ToolCall,
    /// What it returned.
    pub result: Result<ToolOutput, ToolError>,
    /// When it started and ended, relative to the batch start.
    pub span: (Duration, Duration),
}

impl CallOutcome {
    /// The result as the model sees it.
    pub fn to_tool_result(&self) -> ToolResult {
        match &self.result {
            Ok(out) => ToolResult {
                call_id: self.call.id.clone(),
                content: out.content.clone(),
                is_error: false,
            },
            Err(e) => ToolResult {
                call_id: self.call.id.clone(),
                content: format!("error ({}): {}", class_name(e.class), e.message),
                is_error: true,
            },
        }
    }
}

/// What a batch needs besides the calls.
pub(crate) struct Dispatch<'a> {
    pub tools: &'a ToolSet,
    pub ctx: &'a ToolContext,
    pub lock: &'a RwLock<()>,
    pub mode: Mode,
    pub timeout: Duration,
    pub events: Option<&'a EventSender>,
}

impl Dispatch<'_> {
    /// Runs `calls`, returning one outcome per call, in call order.
    pub(crate) async fn run(&self, calls: &[ToolCall]) -> Vec<CallOutcome> {
        let start = Instant::now();
        let futures = calls.iter().map(|call| self.run_one(call, start));
        futures::future::join_all(futures).await
    }

    async fn run_one(&self, call: &ToolCall, batch_start: Instant) -> CallOutcome {
        let result = match self.prepare(call) {
            Err(e) => {
                let now = batch_start.elapsed();
                let args = call
                    .parse_arguments()
                    .unwrap_or_else(|_| serde_json::Value::String(call.arguments.clone()));
                self.send(Event::ToolStarted {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: clip_args(&args),
                });
                self.finished(call, &Err(e.clone()), Duration::ZERO);
                return CallOutcome {
                    call: call.clone(),
                    result: Err(e),
                    span: (now, now),
                };
            }
            Ok((tool, args)) => {
                let mutating = tool.is_mutating();
                // Held until the call ends; the lock's fairness keeps call order.
                let _guard = if mutating {
                    Guard::Write(self.lock.write().await)
                } else {
                    Guard::Read(self.lock.read().await)
                };
                let began = batch_start.elapsed();
                self.send(Event::ToolStarted {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: clip_args(&args),
                });
                let r = match self.events {
                    Some(events) => {
                        let mut ctx = self.ctx.clone();
                        ctx.progress = Some(Arc::new(CallProgress {
                            id: call.id.clone(),
                            events: events.clone(),
                        }));
                        self.invoke(&ctx, &call.name, tool.as_ref(), args).await
                    }
                    None => self.invoke(self.ctx, &call.name, tool.as_ref(), args).await,
                };
                (began, r)
            }
        };
        let (began, result) = result;
        let ended = batch_start.elapsed();
        self.finished(call, &result, ended.saturating_sub(began));
        CallOutcome {
            call: call.clone(),
            result,
            span: (began, ended),
        }
    }

    fn prepare(
        &self,
        call: &ToolCall,
    ) -> Result<(std::sync::Arc<dyn agentls_tools::Tool>, serde_json::Value), ToolError> {
        let Some(tool) = self.tools.get(&call.name) else {
            return Err(ToolError::invalid_arguments(format!(
                "unknown tool {:?}; the tools are: {}",
                call.name,
                self.tools.names().join(", ")
            )));
        };
        if tool.is_mutating() && !self.mode.allows_writes() {
            return Err(ToolError::invalid_arguments(format!(
                "{} changes the workspace and is not available in {:?} mode; use read-only tools",
                call.name, self.mode
            )));
        }
        let args = call.parse_arguments().map_err(|e| {
            ToolError::invalid_arguments(format!(
                "{}: the arguments are not valid JSON ({e}); send one JSON object matching the tool's schema",
                call.name
            ))
        })?;
        Ok((tool.clone(), args))
    }

    async fn invoke(
        &self,
        ctx: &ToolContext,
        name: &str,
        tool: &dyn agentls_tools::Tool,
        args: serde_json::Value,
    ) -> Result<ToolOutput, ToolError> {
        // The client's buffers of the files the call names (ACP), before it reads or
        // plans on them, and after it changed them.
        let named = agentls_tools::client_files::before(ctx, name, &args).await;
        let result = self.invoke_tool(ctx, tool, args).await;
        if tool.is_mutating() {
            agentls_tools::client_files::after(ctx, &named).await;
        }
        result
    }

    async fn invoke_tool(
        &self,
        ctx: &ToolContext,
        tool: &dyn agentls_tools::Tool,
        args: serde_json::Value,
    ) -> Result<ToolOutput, ToolError> {
        let call = AssertUnwindSafe(tool.call(ctx, args)).catch_unwind();
        tokio::select! {
            biased;
            () = self.ctx.cancel.cancelled() => Err(ToolError::aborted("the user cancelled the session")),
            r = tokio::time::timeout(self.timeout, call) => match r {
                Err(_) => Err(ToolError::timeout(format!(
                    "the call did not finish within {} s and was stopped",
                    self.timeout.as_secs_f64()
                ))),
                Ok(Err(_panic)) => {
                    tracing::error!("tool panicked");
                    Err(ToolError::bug("the tool failed internally (a bug of agentls); try another way"))
                }
                Ok(Ok(r)) => r,
            },
        }
    }

    fn finished(&self, call: &ToolCall, result: &Result<ToolOutput, ToolError>, took: Duration) {
        let (summary, error, failed) = match result {
            Ok(out) => (out.summary.clone(), None, out.failed),
            Err(e) => (
                e.message.lines().next().unwrap_or_default().to_owned(),
                Some(class_name(e.class).to_owned()),
                false,
            ),
        };
        self.send(Event::ToolFinished {
            id: call.id.clone(),
            name: call.name.clone(),
            summary,
            error,
            failed,
            ms: took.as_millis() as u64,
        });
    }

    fn send(&self, ev: Event) {
        if let Some(tx) = self.events {
            let _ = tx.send(ev);
        }
    }
}

/// One call's progress, turned into events carrying its id.
struct CallProgress {
    id: String,
    events: EventSender,
}

impl ToolProgress for CallProgress {
    fn output(&self, stream: OutputStream, text: &str) {
        let _ = self.events.send(Event::ToolOutput {
            id: self.id.clone(),
            stream: stream.as_str().to_owned(),
            text: text.to_owned(),
        });
    }

    fn plan(&self, items: &[TodoItem]) {
        let items = items
            .iter()
            .map(|t| PlanItem {
                text: t.content.clone(),
                status: t.status.as_str().to_owned(),
            })
            .collect();
        let _ = self.events.send(Event::Plan { items });
    }
}

enum Guard<'a> {
    Read(#[allow(dead_code)] tokio::sync::RwLockReadGuard<'a, ()>),
    Write(#[allow(dead_code)] tokio::sync::RwLockWriteGuard<'a, ()>),
}
