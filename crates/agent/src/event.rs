//! What a session tells the outside while it runs: the server turns these into
//! `$/progress` and `agent/event`, the CLI into status lines or JSON lines.

use serde::Serialize;

use crate::metrics::Metrics;
use crate::status::Status;

/// One progress event. Serialises as `{"type": "...", ...}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    /// The session started (or resumed) a run.
    Started {
        /// Session id.
        session: String,
        /// Model name.
        model: String,
    },
    /// A model call begins.
    Step {
        /// 1-based step number.
        step: u32,
    },
    /// A piece of the model's text.
    TextDelta {
        /// The text.
        text: String,
    },
    /// A tool call starts.
    ToolStarted {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// A tool call ended (every started call ends exactly once).
    ToolFinished {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// One line for people.
        summary: String,
        /// Error class, when it failed.
        error: Option<String>,
        /// Time it took.
        ms: u64,
    },
    /// Tokens of the last model call.
    Usage {
        /// Prompt tokens.
        input: u64,
        /// Of which read from cache.
        cached_input: u64,
        /// Generated tokens.
        output: u64,
    },
    /// The transcript was compacted.
    Compacted {
        /// Tool outputs masked.
        masked: usize,
        /// Messages folded into a summary.
        summarized: usize,
    },
    /// The run ended.
    Finished {
        /// Why.
        status: Status,
        /// Totals so far.
        metrics: Box<Metrics>,
    },
}

/// Where events go. Sending never blocks the loop; a receiver that went away is fine.
pub type EventSender = tokio::sync::mpsc::UnboundedSender<AgentEvent>;
