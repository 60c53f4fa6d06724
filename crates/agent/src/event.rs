//! What a session tells the outside while it runs. The core emits the protocol's own
//! [`Event`] (`agent/event`), so every front end gets the same events with nothing to
//! translate: the server forwards them (and turns them into `$/progress`), the CLI
//! prints them as lines or as the same JSON, ACP maps them to session updates.

pub use agentls_protocol::agent::{Event, PlanItem, SessionStatus};

use crate::metrics::Metrics;
use crate::status::Status;

/// The `finished` event of a run that ended with `status`, the session's totals in it.
pub fn finished(status: &Status, metrics: &Metrics) -> Event {
    let (status, message) = status.outcome();
    Event::Finished {
        status,
        message,
        steps: metrics.steps,
        wall_ms: metrics.wall_ms,
        tokens: [
            metrics.input_tokens,
            metrics.cached_input_tokens,
            metrics.output_tokens,
        ],
        cost_usd: metrics.cost_usd,
    }
}

/// String argument values longer than this (chars) are cut in [`Event::ToolStarted`].
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
pub type EventSender = tokio::sync::mpsc::UnboundedSender<Event>;

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn ser(ev: &Event) -> Value {
        serde_json::to_value(ev).unwrap()
    }

    #[test]
    fn events_serialise_in_the_protocol_form() {
        let long = "x".repeat(1000);
        let started = Event::ToolStarted {
            id: "c1".into(),
            name: "write_file".into(),
            arguments: clip_args(&json!({"path": "a.rs", "content": long, "n": [1, "b"]})),
        };
        let v = ser(&started);
        assert_eq!(v["type"], "toolStarted");
        assert_eq!(v["arguments"]["path"], "a.rs");
        assert_eq!(v["arguments"]["n"], json!([1, "b"]));
        let content = v["arguments"]["content"].as_str().unwrap();
        assert!(
            content.len() < 400 && content.ends_with("… [1000 chars]"),
            "{content}"
        );
        assert_eq!(
            ser(&Event::Routed {
                model: "strong".into(),
                reason: "2 failed attempts in a row: escalate".into()
            }),
            json!({"type": "routed", "model": "strong", "reason": "2 failed attempts in a row: escalate"})
        );
    }

    #[test]
    fn finished_carries_the_outcome_and_the_totals() {
        let metrics = Metrics {
            steps: 3,
            wall_ms: 12.5,
            input_tokens: 100,
            cached_input_tokens: 40,
            output_tokens: 7,
            cost_usd: Some(0.25),
            ..Metrics::default()
        };
        let done = finished(
            &Status::Done {
                answer: "fixed".into(),
            },
            &metrics,
        );
        assert_eq!(
            ser(&done),
            json!({"type": "finished", "status": "done", "message": "fixed", "steps": 3,
                   "wallMs": 12.5, "tokens": [100, 40, 7], "costUsd": 0.25})
        );
        let budget = finished(
            &Status::BudgetExhausted {
                limit: "steps".into(),
            },
            &Metrics::default(),
        );
        let v = ser(&budget);
        assert_eq!(v["status"], "budgetExhausted");
        assert_eq!(v["message"], "stopped: the steps budget is exhausted");
        assert!(v.get("costUsd").is_none(), "{v}");
    }
}
