//! The protocol rule checked on every recorded request: each tool call the
//! conversation holds has exactly one result after it, and each result answers a
//! call made before it.

use serde_json::Value;

use super::wire::Wire;

#[derive(Debug, PartialEq)]
enum Item {
    Call(String),
    Result(String),
}

fn items(wire: Wire, body: &Value) -> Vec<Item> {
    let mut out = Vec::new();
    let str_of = |v: &Value, k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    match wire {
        // A completion has no conversation.
        Wire::Completions => {}
        Wire::Chat => {
            for m in body["messages"].as_array().into_iter().flatten() {
                for c in m["tool_calls"].as_array().into_iter().flatten() {
                    out.push(Item::Call(str_of(c, "id")));
                }
                if m["role"] == "tool" {
                    out.push(Item::Result(str_of(m, "tool_call_id")));
                }
            }
        }
        Wire::Responses => {
            for i in body["input"].as_array().into_iter().flatten() {
                match i["type"].as_str() {
                    Some("function_call") => out.push(Item::Call(str_of(i, "call_id"))),
                    Some("function_call_output") => out.push(Item::Result(str_of(i, "call_id"))),
                    _ => {}
                }
            }
        }
        Wire::Anthropic => {
            for m in body["messages"].as_array().into_iter().flatten() {
                for b in m["content"].as_array().into_iter().flatten() {
                    match b["type"].as_str() {
                        Some("tool_use") => out.push(Item::Call(str_of(b, "id"))),
                        Some("tool_result") => out.push(Item::Result(str_of(b, "tool_use_id"))),
                        _ => {}
                    }
                }
            }
        }
    }
    out
}

/// The pairing violations of one request body, as readable sentences.
pub(crate) fn violations(wire: Wire, body: &Value) -> Vec<String> {
    let items = items(wire, body);
    let mut problems = Vec::new();
    let mut calls: Vec<(&str, usize)> = Vec::new();
    for item in &items {
        match item {
            Item::Call(id) => {
                if calls.iter().any(|(c, _)| c == id) {
                    problems.push(format!("tool call {id:?} appears twice"));
                } else {
                    calls.push((id, 0));
                }
            }
            Item::Result(id) => match calls.iter_mut().find(|(c, _)| c == id) {
                Some((_, n)) => {
                    *n += 1;
                    if *n > 1 {
                        problems.push(format!("tool call {id:?} has more than one result"));
                    }
                }
                None => problems.push(format!("tool result {id:?} answers no earlier call")),
            },
        }
    }
    for (id, n) in calls {
        if n == 0 {
            problems.push(format!("tool call {id:?} has no result"));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn each_wire_reports_orphans_both_ways() {
        let chat = json!({"messages": [
            {"role": "assistant", "tool_calls": [{"id": "a"}, {"id": "b"}]},
            {"role": "tool", "tool_call_id": "a"},
            {"role": "tool", "tool_call_id": "z"},
        ]});
        assert_eq!(
            violations(Wire::Chat, &chat),
            [
                "tool result \"z\" answers no earlier call",
                "tool call \"b\" has no result"
            ]
        );
        let responses = json!({"input": [
            {"type": "function_call_output", "call_id": "x"},
            {"type": "function_call", "call_id": "x"},
        ]});
        assert_eq!(violations(Wire::Responses, &responses).len(), 2);
        let anthropic = json!({"messages": [
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}, {"type": "tool_result", "tool_use_id": "t"}]},
        ]});
        assert_eq!(
            violations(Wire::Anthropic, &anthropic),
            ["tool call \"t\" has more than one result"]
        );
    }

    #[test]
    fn paired_conversation_is_clean() {
        let chat = json!({"messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [{"id": "a"}]},
            {"role": "tool", "tool_call_id": "a"},
        ]});
        assert!(violations(Wire::Chat, &chat).is_empty());
    }
}
