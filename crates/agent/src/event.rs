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
    /// The router (`auto`) chose the model for the next call.
    Routed {
        /// Configured name of the chosen model.
        model: String,
        /// Why, the signals that counted joined by `; `.
        reason: String,
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
        /// The call's arguments, string values longer than [`MAX_ARG_CHARS`] cut (an
        /// argument text that is not JSON comes as one string).
        args: serde_json::Value,
    },
    /// Output of a running call (a command's stdout or stderr), in order, coalesced:
    /// whole lines where possible, batches of at most ~50 ms.
    ToolOutput {
        /// Call id.
        id: String,
        /// `stdout` or `stderr`.
        stream: String,
        /// The text (invalid UTF-8 replaced).
        text: String,
    },
    /// The plan changed (the `todo` tool).
    Plan {
        /// The whole plan, in order.
        items: Vec<PlanItem>,
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
    /// The model provider failed; [`AgentEvent::Finished`] follows.
    Error {
        /// Error class (`ProviderError`, `Timeout`, `UnexpectedEnvironment`, …).
        class: String,
        /// What went wrong (keys redacted by the model layer).
        message: String,
    },
    /// The run ended.
    Finished {
        /// Why.
        status: Status,
        /// Totals so far.
        metrics: Box<Metrics>,
    },
}

/// One step of the plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PlanItem {
    /// What to do.
    pub text: String,
    /// `pending`, `in_progress` or `completed`.
    pub status: String,
}

/// String argument values longer than this (chars) are cut in [`AgentEvent::ToolStarted`].
pub const MAX_ARG_CHARS: usize = 300;

/// `args` with long strings cut to [`MAX_ARG_CHARS`], for people watching the calls.
pub fn clip_args(args: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match args {
        Value::String(s) => match s.char_indices().nth(MAX_ARG_CHARS) {
            Some((i, _)) => Value::String(format!("{}… [{} chars]", &s[..i], s.chars().count())),
            None => args.clone(),
        },
        Value::Array(a) => Value::Array(a.iter().map(clip_args).collect()),
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, v)| (k.clone(), clip_args(v))).collect())
        }
        other => other.clone(),
    }
}

/// Where events go. Sending never blocks the loop; a receiver that went away is fine.
pub type EventSender = tokio::sync::mpsc::UnboundedSender<AgentEvent>;

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn ser(ev: &AgentEvent) -> Value {
        serde_json::to_value(ev).unwrap()
    }

    #[test]
    fn new_events_serialise_tagged() {
        let long = "x".repeat(1000);
        let started = AgentEvent::ToolStarted {
            id: "c1".into(),
            name: "write_file".into(),
            args: clip_args(&json!({"path": "a.rs", "content": long, "n": [1, "b"]})),
        };
        let v = ser(&started);
        assert_eq!(v["type"], "tool_started");
        assert_eq!(v["args"]["path"], "a.rs");
        assert_eq!(v["args"]["n"], json!([1, "b"]));
        let content = v["args"]["content"].as_str().unwrap();
        assert!(
            content.len() < 400 && content.ends_with("… [1000 chars]"),
            "{content}"
        );

        assert_eq!(
            ser(&AgentEvent::ToolOutput {
                id: "c2".into(),
                stream: "stderr".into(),
                text: "warning\n".into()
            }),
            json!({"type": "tool_output", "id": "c2", "stream": "stderr", "text": "warning\n"})
        );
        assert_eq!(
            ser(&AgentEvent::Plan {
                items: vec![PlanItem {
                    text: "fix it".into(),
                    status: "in_progress".into()
                }]
            }),
            json!({"type": "plan", "items": [{"text": "fix it", "status": "in_progress"}]})
        );
        assert_eq!(
            ser(&AgentEvent::Error {
                class: "ProviderError".into(),
                message: "503".into()
            }),
            json!({"type": "error", "class": "ProviderError", "message": "503"})
        );
        assert_eq!(
            ser(&AgentEvent::Routed {
                model: "strong".into(),
                reason: "2 failed attempts in a row: escalate".into()
            }),
            json!({"type": "routed", "model": "strong", "reason": "2 failed attempts in a row: escalate"})
        );
    }
}
