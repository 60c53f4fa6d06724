//! One event as a line for people: what `agentls run`, the demo and tests print.

use crate::event::{Event, SessionStatus};

/// One event as a line for people (`None` for events not worth a line).
pub fn render_event(ev: &Event) -> Option<String> {
    match ev {
        Event::Status { model, .. } => Some(format!("running on {model}")),
        Event::Step { step } => Some(format!("step {step}")),
        Event::Routed { model, reason } => Some(format!("route → {model}: {reason}")),
        Event::TextDelta { .. }
        | Event::ThinkingDelta { .. }
        | Event::Usage { .. }
        | Event::Edit { .. } => None,
        Event::ToolStarted {
            name, arguments, ..
        } if name == "run_command" => {
            let command = arguments["command"].as_str().unwrap_or_default();
            Some(format!("  $ {command}"))
        }
        Event::ToolStarted { .. } => None,
        Event::ToolOutput { text, .. } => {
            let lines: Vec<String> = text
                .strip_suffix('\n')
                .unwrap_or(text)
                .split('\n')
                .map(|l| format!("    │ {}", l.trim_end_matches('\r')))
                .collect();
            Some(lines.join("\n"))
        }
        Event::Plan { items } => {
            let mut out = String::from("plan:");
            for item in items {
                let mark = match item.status.as_str() {
                    "completed" => "[x]",
                    "in_progress" => "[>]",
                    _ => "[ ]",
                };
                out.push_str(&format!("\n  {mark} {}", item.text));
            }
            Some(out)
        }
        Event::Error { class, message } => Some(format!("error ({class}): {message}")),
        Event::ToolFinished {
            name,
            summary,
            error,
            failed,
            ms,
            ..
        } => Some(match error {
            Some(class) => format!("  ✗ {name} ({class}, {ms} ms): {summary}"),
            None if *failed => format!("  ✗ {name} ({ms} ms): {summary}"),
            None => format!("  ✓ {name} ({ms} ms): {summary}"),
        }),
        Event::Compacted { masked, summarized } => Some(format!(
            "compacted: {masked} outputs masked, {summarized} messages summarised"
        )),
        Event::Approval { what, granted, .. } => Some(match granted {
            None => format!("waiting for approval: {what}"),
            Some(true) => format!("approved: {what}"),
            Some(false) => format!("refused: {what}"),
        }),
        // The totals are the caller's to print: it has the whole metrics.
        Event::Finished {
            status, message, ..
        } => Some(match status {
            SessionStatus::Done => format!("done.\n{message}"),
            _ => message.clone(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finished(error: Option<&str>, failed: bool) -> Event {
        Event::ToolFinished {
            id: "c1".into(),
            name: "run_command".into(),
            summary: "$ cargo test".into(),
            error: error.map(str::to_owned),
            failed,
            ms: 9,
        }
    }

    #[test]
    fn a_command_that_exited_non_zero_reads_as_a_failure() {
        let line = |ev| render_event(&ev).unwrap_or_default();
        assert_eq!(
            line(finished(None, false)),
            "  ✓ run_command (9 ms): $ cargo test"
        );
        assert_eq!(
            line(finished(None, true)),
            "  ✗ run_command (9 ms): $ cargo test"
        );
        assert_eq!(
            line(finished(Some("Timeout"), false)),
            "  ✗ run_command (Timeout, 9 ms): $ cargo test"
        );
    }
}
