//! The session's events as ACP `session/update`s: text as agent message chunks, tool
//! calls with their kind, locations, output and diffs, the plan. Built as the
//! protocol's JSON and read back through the schema's own types, so a field the
//! schema does not know fails here, in a test, rather than in a client.

use std::collections::HashMap;

use agent_client_protocol::v1::schema::SessionUpdate;
use agentls_agent::Event;
use serde_json::{Value, json};

use super::edits::Landed;

/// Most output kept per tool call (its tail), in chars.
const OUTPUT_CHARS: usize = 4000;

/// Turns events into updates; keeps each running call's output.
#[derive(Debug, Default)]
pub struct Updates {
    output: HashMap<String, String>,
    /// The workspace root, to make tool paths absolute for locations and diffs.
    root: std::path::PathBuf,
    /// The model's context window, in tokens (`usage_update`'s `size`).
    window: u64,
    /// Tokens in context after the last model call.
    used: u64,
}

impl Updates {
    /// Updates for a session in `root`.
    pub fn new(root: std::path::PathBuf) -> Self {
        Self {
            output: HashMap::new(),
            root,
            window: 0,
            used: 0,
        }
    }

    /// Usage updates say how full a context window of `tokens` is.
    pub fn with_window(mut self, tokens: u32) -> Self {
        self.window = u64::from(tokens);
        self
    }

    /// The updates `ev` makes; `landed` holds the edits a finishing call made.
    pub fn of(&mut self, ev: &Event, landed: Vec<Landed>) -> Vec<SessionUpdate> {
        let json = match ev {
            Event::TextDelta { text } => vec![json!({
                "sessionUpdate": "agent_message_chunk",
                "content": { "type": "text", "text": text },
            })],
            Event::ToolStarted {
                id,
                name,
                arguments: args,
            } => {
                self.output.insert(id.clone(), String::new());
                let locations: Vec<Value> = ["path", "file", "from", "to"]
                    .iter()
                    .filter_map(|k| args.get(*k).and_then(Value::as_str))
                    .map(|p| json!({ "path": self.root.join(p) }))
                    .collect();
                vec![json!({
                    "sessionUpdate": "tool_call",
                    "toolCallId": id,
                    "title": title(name, args),
                    "kind": kind(name),
                    "status": "in_progress",
                    "rawInput": args,
                    "locations": locations,
                })]
            }
            Event::ToolOutput { id, text, .. } => {
                let out = self.output.entry(id.clone()).or_default();
                out.push_str(text);
                let excess = out.chars().count().saturating_sub(OUTPUT_CHARS);
                if excess > 0 {
                    let cut = out.char_indices().nth(excess).map_or(0, |(i, _)| i);
                    out.drain(..cut);
                }
                vec![json!({
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": id,
                    "content": [text_content(out)],
                })]
            }
            Event::ToolFinished {
                id,
                summary,
                error,
                failed,
                ..
            } => {
                let output = self.output.remove(id).unwrap_or_default();
                let mut content = vec![text_content(summary)];
                if !output.is_empty() {
                    content.push(text_content(&output));
                }
                content.extend(landed.iter().map(|l| {
                    json!({
                        "type": "diff",
                        "path": l.path,
                        "oldText": l.old_text,
                        "newText": l.new_text,
                    })
                }));
                vec![json!({
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": id,
                    "status": if error.is_some() || *failed { "failed" } else { "completed" },
                    "content": content,
                })]
            }
            Event::Plan { items } => vec![json!({
                "sessionUpdate": "plan",
                "entries": items.iter().map(|i| json!({
                    "content": i.text,
                    "priority": "medium",
                    "status": i.status,
                })).collect::<Vec<_>>(),
            })],
            // The context in use after each model call: its prompt and its answer.
            Event::Usage { input, output, .. } => {
                self.used = input.saturating_add(*output);
                vec![json!({
                    "sessionUpdate": "usage_update",
                    "used": self.used,
                    "size": self.window,
                })]
            }
            // The session's cost, where the model's prices are known.
            Event::Finished {
                cost_usd: Some(cost),
                ..
            } => vec![json!({
                "sessionUpdate": "usage_update",
                "used": self.used,
                "size": self.window,
                "cost": { "amount": cost, "currency": "USD" },
            })],
            Event::Error { class, message } => vec![json!({
                "sessionUpdate": "agent_message_chunk",
                "content": { "type": "text", "text": format!("\n[{class}] {message}\n") },
            })],
            _ => Vec::new(),
        };
        json.into_iter()
            .filter_map(
                |v| match serde_json::from_value::<SessionUpdate>(v.clone()) {
                    Ok(u) => Some(u),
                    Err(e) => {
                        tracing::error!("acp: an update the schema refuses ({e}): {v}");
                        None
                    }
                },
            )
            .collect()
    }
}

/// A saved conversation as the updates that show it again (`session/load`): the
/// user's and the agent's text, and each tool call with its result.
pub fn history(messages: &[agentls_model::Message], root: &std::path::Path) -> Vec<SessionUpdate> {
    use agentls_model::{Part, Role};
    let mut out = Vec::new();
    for m in messages {
        for part in &m.parts {
            let v = match (m.role, part) {
                (Role::User, Part::Text(text)) => json!({
                    "sessionUpdate": "user_message_chunk",
                    "content": { "type": "text", "text": text },
                }),
                (Role::Assistant, Part::Text(text)) => json!({
                    "sessionUpdate": "agent_message_chunk",
                    "content": { "type": "text", "text": text },
                }),
                (_, Part::ToolCall(call)) => {
                    let args = call.parse_arguments().unwrap_or(Value::Null);
                    let locations: Vec<Value> = ["path", "file", "from", "to"]
                        .iter()
                        .filter_map(|k| args.get(*k).and_then(Value::as_str))
                        .map(|p| json!({ "path": root.join(p) }))
                        .collect();
                    json!({
                        "sessionUpdate": "tool_call",
                        "toolCallId": call.id,
                        "title": title(&call.name, &args),
                        "kind": kind(&call.name),
                        "status": "in_progress",
                        "rawInput": args,
                        "locations": locations,
                    })
                }
                (_, Part::ToolResult(result)) => {
                    let text: String = result.content.chars().take(OUTPUT_CHARS).collect();
                    json!({
                        "sessionUpdate": "tool_call_update",
                        "toolCallId": result.call_id,
                        "status": if result.is_error { "failed" } else { "completed" },
                        "content": [text_content(&text)],
                    })
                }
            };
            match serde_json::from_value::<SessionUpdate>(v) {
                Ok(u) => out.push(u),
                Err(e) => tracing::error!("acp: a history update the schema refuses: {e}"),
            }
        }
    }
    out
}

fn text_content(text: &str) -> Value {
    json!({ "type": "content", "content": { "type": "text", "text": text } })
}

/// ACP's tool kinds, which clients show as icons.
fn kind(tool: &str) -> &'static str {
    match tool {
        "read_file" | "list_dir" | "repo_map" | "symbols" | "navigate" | "diagnostics" => "read",
        "str_replace" | "apply_patch" | "write_file" | "insert" => "edit",
        "delete_file" => "delete",
        "move_file" => "move",
        "grep" | "find_files" => "search",
        "run_command" => "execute",
        "todo" => "think",
        _ => "other",
    }
}

/// A short title: the tool and what it works on.
fn title(tool: &str, args: &Value) -> String {
    let arg = ["command", "path", "pattern", "query", "file"]
        .iter()
        .find_map(|k| args.get(*k).and_then(Value::as_str));
    match arg {
        Some(a) => {
            let a: String = a.chars().take(80).collect();
            format!("{tool} {a}")
        }
        None => tool.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ser(u: &SessionUpdate) -> Value {
        serde_json::to_value(u).unwrap()
    }

    #[test]
    fn a_tool_call_reads_back_through_the_schema_with_its_diff() {
        let mut up = Updates::new("/ws".into());
        let started = up.of(
            &Event::ToolStarted {
                id: "c1".into(),
                name: "str_replace".into(),
                arguments: json!({ "path": "a.py", "old_string": "x", "new_string": "y" }),
            },
            Vec::new(),
        );
        let v = ser(&started[0]);
        assert_eq!(v["sessionUpdate"], "tool_call");
        assert_eq!(v["kind"], "edit");
        assert_eq!(v["locations"][0]["path"], "/ws/a.py");
        assert_eq!(v["title"], "str_replace a.py");
        let done = up.of(
            &Event::ToolFinished {
                id: "c1".into(),
                name: "str_replace".into(),
                summary: "edited a.py".into(),
                error: None,
                failed: false,
                ms: 3,
            },
            vec![Landed {
                path: "/ws/a.py".into(),
                old_text: Some("x\n".into()),
                new_text: "y\n".into(),
            }],
        );
        let v = ser(&done[0]);
        assert_eq!(v["status"], "completed");
        assert_eq!(v["content"][1]["type"], "diff");
        assert_eq!(v["content"][1]["oldText"], "x\n");
        assert_eq!(v["content"][1]["newText"], "y\n");
        // A command that ran and exited non-zero is a failed call, not a completed one.
        let failed = up.of(
            &Event::ToolFinished {
                id: "c2".into(),
                name: "run_command".into(),
                summary: "$ cargo test → exit code 101".into(),
                error: None,
                failed: true,
                ms: 90,
            },
            Vec::new(),
        );
        assert_eq!(ser(&failed[0])["status"], "failed");
    }

    #[test]
    fn usage_says_how_full_the_context_is_and_the_cost_when_known() {
        let mut up = Updates::new("/ws".into()).with_window(8000);
        let usage = up.of(
            &Event::Usage {
                input: 1000,
                cached_input: 800,
                output: 50,
            },
            Vec::new(),
        );
        let v = ser(&usage[0]);
        assert_eq!(v["sessionUpdate"], "usage_update");
        assert_eq!(
            (v["used"].as_u64(), v["size"].as_u64()),
            (Some(1050), Some(8000))
        );
        let finished = |cost| {
            agentls_agent::event::finished(
                &agentls_agent::Status::Cancelled,
                &agentls_agent::Metrics {
                    cost_usd: cost,
                    ..Default::default()
                },
            )
        };
        assert!(up.of(&finished(None), Vec::new()).is_empty());
        let v = ser(&up.of(&finished(Some(0.25)), Vec::new())[0]);
        assert_eq!(v["cost"], json!({"amount": 0.25, "currency": "USD"}));
        assert_eq!(v["used"], 1050);
    }

    #[test]
    fn long_output_keeps_its_tail() {
        let mut up = Updates::default();
        for _ in 0..3 {
            up.of(
                &Event::ToolOutput {
                    id: "c".into(),
                    stream: "stdout".into(),
                    text: "é".repeat(3000),
                },
                Vec::new(),
            );
        }
        assert_eq!(up.output["c"].chars().count(), OUTPUT_CHARS);
    }
}
