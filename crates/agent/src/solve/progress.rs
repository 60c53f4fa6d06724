//! Progress out through the session's event stream: a pipeline run shows as one
//! `solve` tool call whose output lines say what happens.

use std::time::Instant;

use crate::event::{Event, EventSender};

use super::report::SolveReport;

/// Progress out through the session's event stream, as one `solve` tool call.
pub(super) struct Progress<'a> {
    events: Option<&'a EventSender>,
    id: String,
}

impl<'a> Progress<'a> {
    /// A new `solve` call's progress, sent to `events` when there are any.
    pub(super) fn new(events: Option<&'a EventSender>) -> Self {
        Self {
            events,
            id: format!("solve-{:x}", fastrand::u32(..)),
        }
    }

    pub(super) fn send(&self, ev: Event) {
        if let Some(tx) = self.events {
            let _ = tx.send(ev);
        }
    }

    pub(super) fn start(&self, arguments: serde_json::Value) {
        self.send(Event::ToolStarted {
            id: self.id.clone(),
            name: "solve".into(),
            arguments,
        });
    }

    /// The last line (the tally, and what landed or why nothing did) and the end of
    /// the `solve` call.
    pub(super) fn finish(&self, report: &SolveReport, landed: bool, started: Instant) {
        let summary = if landed {
            format!(
                "{}; landed candidate {}",
                report.tally(),
                report.chosen.map_or(0, |i| i + 1)
            )
        } else {
            format!("{}; nothing chosen: {}", report.tally(), report.reason)
        };
        self.line(summary.clone());
        self.send(Event::ToolFinished {
            id: self.id.clone(),
            name: "solve".into(),
            summary,
            error: None,
            failed: !landed,
            ms: started.elapsed().as_millis() as u64,
        });
    }

    pub(super) fn line(&self, text: String) {
        tracing::info!("solve: {text}");
        self.send(Event::ToolOutput {
            id: self.id.clone(),
            stream: "stdout".into(),
            text: format!("{text}\n"),
        });
    }
}
