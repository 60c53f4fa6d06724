//! One run's record, from its events and the session's totals around it. The events
//! are the protocol's (`agent/event`), the totals plain numbers: the session hands
//! them over, and this crate knows nothing of the agent.

use std::collections::BTreeMap;
use std::time::Instant;

use agentls_protocol::agent::{Event, SessionStatus};

use crate::{RunRecord, cut};

/// The tools whose success means an edit landed.
const EDIT_TOOLS: &[&str] = &[
    "str_replace",
    "insert",
    "apply_patch",
    "write_file",
    "delete_file",
    "move_file",
];

/// A session's totals over all its runs so far, as far as a run's record needs them
/// (the agent's `Metrics`, as plain numbers).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    /// Wall time inside runs.
    pub wall_ms: f64,
    /// Time spent waiting for the model.
    pub model_ms: f64,
    /// Time spent inside tool calls.
    pub tool_ms: f64,
    /// Model calls.
    pub steps: u32,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Prompt tokens read from the provider's cache.
    pub cached_input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Cost in US dollars, when known.
    pub cost_usd: Option<f64>,
    /// Steps in which a call failed.
    pub failed_steps: u32,
    /// Commands that ran and failed.
    pub failed_commands: u32,
}

/// Watches one run: give it every event ([`RunRecorder::observe`]), then the session's
/// totals and how the run ended ([`RunRecorder::finish`]).
#[derive(Debug)]
pub struct RunRecorder {
    started: Instant,
    record: RunRecord,
    before: Totals,
    examples: BTreeMap<String, Vec<String>>,
}

/// Failures kept per tool as examples, and their length: enough to say what went
/// wrong in an alert. They stay in memory, never in the database.
const EXAMPLES: usize = 3;
const EXAMPLE_CHARS: usize = 160;

impl RunRecorder {
    /// A run of session `session_id` in `front_end` on `model` starting now; `before`
    /// is the session's totals so far (a session's totals add up over its runs).
    pub fn start(session_id: &str, front_end: &str, model: &str, before: &Totals) -> Self {
        let started_at_ms = crate::now_ms();
        Self {
            started: Instant::now(),
            record: RunRecord {
                session_id: session_id.to_owned(),
                front_end: front_end.to_owned(),
                model: model.to_owned(),
                started_at_ms,
                ..RunRecord::default()
            },
            before: before.clone(),
            examples: BTreeMap::new(),
        }
    }

    /// Notes what `ev` says about first token, first edit and tool calls.
    pub fn observe(&mut self, ev: &Event) {
        let now = self.started.elapsed().as_secs_f64() * 1000.0;
        let r = &mut self.record;
        match ev {
            Event::TextDelta { .. } | Event::ToolStarted { .. } => {
                r.first_token_ms.get_or_insert(now);
            }
            _ => {}
        }
        if let Event::ToolStarted { name, .. } = ev {
            *r.calls.entry(name.clone()).or_default() += 1;
        }
        if let Event::ToolFinished {
            name,
            error,
            summary,
            ..
        } = ev
        {
            match error {
                Some(class) => {
                    *r.tool_errors.entry(name.clone()).or_default() += 1;
                    *r.errors.entry(class.clone()).or_default() += 1;
                    let examples = self.examples.entry(name.clone()).or_default();
                    if examples.len() < EXAMPLES {
                        let line = summary.lines().next().unwrap_or_default();
                        examples.push(format!("{class}: {}", cut(line, EXAMPLE_CHARS)));
                    }
                }
                None if EDIT_TOOLS.contains(&name.as_str()) => {
                    r.edits_landed += 1;
                    r.first_edit_ms.get_or_insert(now);
                }
                None => {}
            }
        }
    }

    /// Up to three failures of each tool that failed in this run, each its error class
    /// and the first line of what the tool said (for alerts shown to the user).
    pub fn error_examples(&self) -> &BTreeMap<String, Vec<String>> {
        &self.examples
    }

    /// The record: this run's share of the session's totals (`after` minus what they
    /// were at the start) and how it ended (`status`, the `finished` event's).
    pub fn finish(mut self, after: &Totals, status: SessionStatus) -> RunRecord {
        let (a, b) = (after, &self.before);
        let r = &mut self.record;
        r.wall_ms = (a.wall_ms - b.wall_ms).max(0.0);
        r.model_ms = (a.model_ms - b.model_ms).max(0.0);
        r.tool_ms = (a.tool_ms - b.tool_ms).max(0.0);
        r.steps = a.steps.saturating_sub(b.steps);
        r.input_tokens = a.input_tokens.saturating_sub(b.input_tokens);
        r.cached_input_tokens = a.cached_input_tokens.saturating_sub(b.cached_input_tokens);
        r.output_tokens = a.output_tokens.saturating_sub(b.output_tokens);
        r.cost_usd = a.cost_usd.map(|c| (c - b.cost_usd.unwrap_or(0.0)).max(0.0));
        r.failed_steps = a.failed_steps.saturating_sub(b.failed_steps);
        r.failed_commands = a.failed_commands.saturating_sub(b.failed_commands);
        r.status = match status {
            SessionStatus::Done => "done",
            SessionStatus::Cancelled => "cancelled",
            SessionStatus::BudgetExhausted => "budget",
            SessionStatus::Failed => "provider_error",
            // A run that ended says how; these two would be a bug of the caller's.
            SessionStatus::Idle | SessionStatus::Running => "unfinished",
        }
        .to_owned();
        self.record
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_s_record_comes_from_its_events_and_its_share_of_the_metrics() {
        let before = Totals {
            steps: 3,
            input_tokens: 1000,
            wall_ms: 500.0,
            ..Totals::default()
        };
        let mut rec = RunRecorder::start("s1", "editor", "small", &before);
        let started = |name: &str| Event::ToolStarted {
            id: "c".into(),
            name: name.into(),
            arguments: serde_json::json!({}),
        };
        let finished = |name: &str, error: Option<&str>| Event::ToolFinished {
            id: "c".into(),
            name: name.into(),
            summary: String::new(),
            error: error.map(str::to_owned),
            failed: false,
            ms: 1,
        };
        std::thread::sleep(std::time::Duration::from_millis(5));
        rec.observe(&started("read_file"));
        rec.observe(&finished("read_file", None));
        rec.observe(&started("str_replace"));
        rec.observe(&finished("str_replace", Some("InvalidArguments")));
        rec.observe(&started("str_replace"));
        rec.observe(&finished("str_replace", None));
        let after = Totals {
            steps: 5,
            input_tokens: 1800,
            wall_ms: 900.0,
            cost_usd: Some(0.5),
            ..Totals::default()
        };
        let r = rec.finish(&after, SessionStatus::Done);
        assert_eq!((r.steps, r.input_tokens, r.wall_ms), (2, 800, 400.0));
        assert_eq!(r.cost_usd, Some(0.5));
        assert_eq!(r.calls["str_replace"], 2);
        assert_eq!(r.tool_errors["str_replace"], 1);
        assert_eq!(r.errors["InvalidArguments"], 1);
        assert_eq!(r.edits_landed, 1);
        let (tok, edit) = (r.first_token_ms.unwrap(), r.first_edit_ms.unwrap());
        assert!(tok >= 5.0 && edit >= tok, "{tok} {edit}");
        assert_eq!(
            (r.status.as_str(), r.front_end.as_str()),
            ("done", "editor")
        );
    }

    #[test]
    fn failures_are_kept_as_examples_three_per_tool_first_line_cut() {
        let mut rec = RunRecorder::start("s1", "run", "m", &Totals::default());
        let long = format!("{}\nsecond line", "x".repeat(400));
        for summary in ["no match for old_string", long.as_str(), "c", "d"] {
            rec.observe(&Event::ToolFinished {
                id: "c".into(),
                name: "str_replace".into(),
                summary: summary.into(),
                error: Some("InvalidArguments".into()),
                failed: false,
                ms: 1,
            });
        }
        let ex = &rec.error_examples()["str_replace"];
        assert_eq!(ex.len(), 3);
        assert_eq!(ex[0], "InvalidArguments: no match for old_string");
        assert!(
            ex[1].ends_with('…') && !ex[1].contains("second"),
            "{}",
            ex[1]
        );
        assert_eq!(ex[1].chars().count(), "InvalidArguments: ".len() + 161);
        assert!(!rec.error_examples().contains_key("read_file"));
    }
}
