//! What a model stream yields.

use crate::usage::Usage;

/// Why the model stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// It finished its answer.
    EndTurn,
    /// It wants tool results.
    ToolUse,
    /// It hit the output limit.
    MaxTokens,
    /// It wrote a stop sequence.
    StopSequence,
    /// The provider filtered the output.
    ContentFilter,
    /// Anything else, verbatim.
    Other(String),
}

/// `StopReason::Other`'s text when a provider cut an answer short because it repeated
/// one piece over and over (the embedded models' runaway guard).
pub const RUNAWAY_STOP: &str = "runaway repetition";

/// One event of a streamed answer. Tool calls are announced with their id and name,
/// then their argument text arrives in pieces, then they end with the whole text.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamEvent {
    /// A piece of answer text.
    TextDelta(String),
    /// A tool call begins.
    ToolCallStart {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// A piece of a call's argument JSON.
    ToolCallDelta {
        /// Call id.
        id: String,
        /// Argument text to append.
        arguments: String,
    },
    /// A call is complete; `arguments` is the whole text (not necessarily valid JSON:
    /// check with [`crate::ToolCall::parse_arguments`]).
    ToolCallEnd {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Complete argument text.
        arguments: String,
    },
    /// Token counts for the call (sent once, near the end).
    Usage(Usage),
    /// The model stopped; always the last event of a successful stream.
    Stop(StopReason),
}
