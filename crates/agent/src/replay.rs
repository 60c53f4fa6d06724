//! Replaying a trajectory: its tool calls, in order, against a workspace, each compared
//! with the outcome recorded (success, or the same error class).

use std::path::Path;
use std::time::Duration;

use agentls_model::ToolCall;
use agentls_tools::ToolContext;
use serde_json::Value;
use tokio::sync::RwLock;

use crate::config::Mode;
use crate::dispatch::Dispatch;
use crate::metrics::class_name;
use crate::toolset::ToolSet;

/// One replayed call.
#[derive(Clone, Debug, PartialEq)]
pub struct Replayed {
    /// Tool name.
    pub name: String,
    /// Error class recorded (`None`: it succeeded).
    pub recorded: Option<String>,
    /// Error class now (`None`: it succeeded).
    pub now: Option<String>,
}

impl Replayed {
    /// Whether the call ended as it did when recorded.
    pub fn matches(&self) -> bool {
        self.recorded == self.now
    }
}

/// Why a trajectory could not be replayed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The file could not be read.
    #[error("reading the trajectory: {0}")]
    Io(#[from] std::io::Error),
    /// A line is not JSON.
    #[error("line {line}: not JSON: {message}")]
    Json {
        /// 1-based line.
        line: usize,
        /// The parser's complaint.
        message: String,
    },
}

/// Re-runs the `tool` records of the trajectory at `path`, one at a time, in `ctx`.
pub async fn replay(
    path: &Path,
    tools: &ToolSet,
    ctx: &ToolContext,
) -> Result<Vec<Replayed>, ReplayError> {
    let text = tokio::fs::read_to_string(path).await?;
    let lock = RwLock::new(());
    let dispatch = Dispatch {
        tools,
        ctx,
        lock: &lock,
        mode: Mode::Agent,
        timeout: Duration::from_secs(600),
        events: None,
    };
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line).map_err(|e| ReplayError::Json {
            line: i + 1,
            message: e.to_string(),
        })?;
        if v["kind"] != "tool" {
            continue;
        }
        let call = ToolCall {
            id: v["id"].as_str().unwrap_or_default().to_owned(),
            name: v["name"].as_str().unwrap_or_default().to_owned(),
            arguments: v["arguments"].as_str().unwrap_or_default().to_owned(),
        };
        let outcome = dispatch.run(std::slice::from_ref(&call)).await;
        let now = outcome
            .first()
            .and_then(|o| o.result.as_ref().err())
            .map(|e| class_name(e.class).to_owned());
        out.push(Replayed {
            name: call.name,
            recorded: v["error_class"].as_str().map(str::to_owned),
            now,
        });
    }
    Ok(out)
}
