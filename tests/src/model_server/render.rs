//! Renders a [`Turn`] as the SSE frames of each wire format, the way the real
//! providers stream them.

use std::time::Duration;

use serde_json::{Value, json};

use super::script::{Turn, TurnEvent};
use super::wire::Wire;

/// One piece of a response body.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Frame {
    /// An SSE frame, complete with its blank line.
    Sse(String),
    /// A pause.
    Delay(Duration),
}

fn data(v: &Value) -> Frame {
    Frame::Sse(format!("data: {v}\n\n"))
}

fn named(event: &str, v: &Value) -> Frame {
    Frame::Sse(format!("event: {event}\ndata: {v}\n\n"))
}

/// Pieces of `text`, `size` chars each (whole when 0).
fn pieces(text: &str, size: usize) -> Vec<String> {
    if size == 0 || text.is_empty() {
        return vec![text.to_owned()];
    }
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// Argument text of a call: verbatim strings, serialised objects; `malformed` cuts
/// the last character off (an unterminated object).
fn arguments(v: &Value, malformed: bool) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if malformed {
        let mut s = s;
        s.pop();
        s.push_str(",\"");
        s
    } else {
        s
    }
}

/// Splits argument text in two at a char boundary, so clients must accumulate.
fn halves(s: &str) -> Vec<String> {
    let mid = s
        .char_indices()
        .nth(s.chars().count() / 2)
        .map_or(s.len(), |(i, _)| i);
    [&s[..mid], &s[mid..]]
        .into_iter()
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The frames for `turn` in `wire`.
pub(crate) fn render(wire: Wire, turn: &Turn, malformed: bool) -> Vec<Frame> {
    let frames = match wire {
        Wire::Chat => chat(turn, malformed),
        Wire::Responses => responses(turn, malformed),
        Wire::Anthropic => anthropic(turn, malformed),
        Wire::Completions => completions(turn),
    };
    if turn.frame_delay_ms == 0 {
        return frames;
    }
    let delay = Duration::from_millis(turn.frame_delay_ms);
    frames
        .into_iter()
        .flat_map(|f| [f, Frame::Delay(delay)])
        .collect()
}

/// The error event a provider sends inside a 200 stream.
pub(crate) fn stream_error(wire: Wire, message: &str) -> Frame {
    match wire {
        Wire::Chat | Wire::Completions => {
            data(&json!({"error": {"message": message, "type": "server_error", "code": 502}}))
        }
        Wire::Responses => named(
            "response.failed",
            &json!({"type": "response.failed", "response": {"id": "resp_1", "status": "failed",
                "error": {"code": "server_error", "message": message}}}),
        ),
        Wire::Anthropic => named(
            "error",
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": message}}),
        ),
    }
}

/// The JSON error body of an HTTP error answer.
pub(crate) fn error_body(wire: Wire, status: u16, message: &str) -> Value {
    let kind = match status {
        429 => "rate_limit_error",
        401 => "authentication_error",
        s if s >= 500 => "server_error",
        _ => "invalid_request_error",
    };
    match wire {
        Wire::Anthropic => json!({"type": "error", "error": {"type": kind, "message": message}}),
        _ => json!({"error": {"message": message, "type": kind, "param": null, "code": null}}),
    }
}

fn chat(turn: &Turn, malformed: bool) -> Vec<Frame> {
    let chunk = |delta: Value, finish: Value| {
        data(
            &json!({"id": "chatcmpl-fixture", "object": "chat.completion.chunk", "created": 0, "model": "fixture",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    let mut out = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    let mut index = 0;
    for ev in &turn.events {
        match ev {
            TurnEvent::Text(t) => {
                for p in pieces(t, turn.chunk_chars) {
                    out.push(chunk(json!({"content": p}), Value::Null));
                }
            }
            TurnEvent::ToolCall {
                id,
                name,
                arguments: args,
            } => {
                out.push(chunk(
                    json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                        "function": {"name": name, "arguments": ""}}]}),
                    Value::Null,
                ));
                for h in halves(&arguments(args, malformed)) {
                    out.push(chunk(
                        json!({"tool_calls": [{"index": index, "function": {"arguments": h}}]}),
                        Value::Null,
                    ));
                }
                index += 1;
            }
            TurnEvent::DelayMs(ms) => out.push(Frame::Delay(Duration::from_millis(*ms))),
        }
    }
    let finish = match turn.stop_reason() {
        "tool_use" => "tool_calls",
        "max_tokens" => "length",
        "end_turn" => "stop",
        // A reason of the provider's own (a local server's), verbatim.
        other => other,
    };
    out.push(chunk(json!({}), finish.into()));
    let u = turn.usage;
    out.push(data(&json!({"id": "chatcmpl-fixture", "object": "chat.completion.chunk", "choices": [],
        "usage": {"prompt_tokens": u.input, "completion_tokens": u.output, "total_tokens": u.input + u.output,
            "prompt_tokens_details": {"cached_tokens": u.cached_input}}})));
    out.push(Frame::Sse("data: [DONE]\n\n".into()));
    out
}

/// The finish reason of a legacy completion (or chat) answer for `turn`.
fn completion_finish(turn: &Turn) -> String {
    match turn.stop_reason() {
        "max_tokens" => "length".into(),
        "end_turn" | "tool_use" => "stop".into(),
        other => other.into(),
    }
}

/// A legacy `/completions` answer, streamed: the turn's text (its tool calls are
/// ignored) as `choices[0].text` pieces.
fn completions(turn: &Turn) -> Vec<Frame> {
    let chunk = |text: &str, finish: Value| {
        data(
            &json!({"id": "cmpl-fixture", "object": "text_completion", "created": 0, "model": "fixture",
            "choices": [{"index": 0, "text": text, "finish_reason": finish}]}),
        )
    };
    let mut out = Vec::new();
    for ev in &turn.events {
        match ev {
            TurnEvent::Text(t) => {
                for p in pieces(t, turn.chunk_chars) {
                    out.push(chunk(&p, Value::Null));
                }
            }
            TurnEvent::DelayMs(ms) => out.push(Frame::Delay(Duration::from_millis(*ms))),
            TurnEvent::ToolCall { .. } => {}
        }
    }
    out.push(chunk("", completion_finish(turn).into()));
    let u = turn.usage;
    out.push(data(&json!({"id": "cmpl-fixture", "object": "text_completion", "choices": [],
        "usage": {"prompt_tokens": u.input, "completion_tokens": u.output, "total_tokens": u.input + u.output}})));
    out.push(Frame::Sse("data: [DONE]\n\n".into()));
    out
}

/// A legacy `/completions` answer in one JSON body (`stream` not set).
pub(crate) fn completion_body(turn: &Turn) -> Value {
    let text: String = turn
        .events
        .iter()
        .filter_map(|ev| match ev {
            TurnEvent::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    let u = turn.usage;
    json!({"id": "cmpl-fixture", "object": "text_completion", "created": 0, "model": "fixture",
        "choices": [{"index": 0, "text": text, "finish_reason": completion_finish(turn)}],
        "usage": {"prompt_tokens": u.input, "completion_tokens": u.output, "total_tokens": u.input + u.output}})
}

fn responses(turn: &Turn, malformed: bool) -> Vec<Frame> {
    let mut out = vec![named(
        "response.created",
        &json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}),
    )];
    let mut index = 0;
    let mut open_text: Option<String> = None;
    let close_text = |out: &mut Vec<Frame>, open: &mut Option<String>, index: &mut usize| {
        if let Some(text) = open.take() {
            out.push(named("response.output_item.done", &json!({"type": "response.output_item.done",
                "output_index": *index, "item": {"type": "message", "id": format!("msg_{index}"), "role": "assistant",
                "content": [{"type": "output_text", "text": text}]}})));
            *index += 1;
        }
    };
    for ev in &turn.events {
        match ev {
            TurnEvent::Text(t) => {
                if open_text.is_none() {
                    out.push(named("response.output_item.added", &json!({"type": "response.output_item.added",
                        "output_index": index, "item": {"type": "message", "id": format!("msg_{index}"),
                        "role": "assistant", "content": []}})));
                    open_text = Some(String::new());
                }
                for p in pieces(t, turn.chunk_chars) {
                    out.push(named("response.output_text.delta", &json!({"type": "response.output_text.delta",
                        "item_id": format!("msg_{index}"), "output_index": index, "content_index": 0, "delta": p})));
                }
                if let Some(acc) = open_text.as_mut() {
                    acc.push_str(t);
                }
            }
            TurnEvent::ToolCall {
                id,
                name,
                arguments: args,
            } => {
                close_text(&mut out, &mut open_text, &mut index);
                let item_id = format!("fc_{index}");
                let args = arguments(args, malformed);
                out.push(named("response.output_item.added", &json!({"type": "response.output_item.added",
                    "output_index": index, "item": {"type": "function_call", "id": item_id, "call_id": id,
                    "name": name, "arguments": ""}})));
                for h in halves(&args) {
                    out.push(named(
                        "response.function_call_arguments.delta",
                        &json!({
                        "type": "response.function_call_arguments.delta", "item_id": item_id,
                        "output_index": index, "delta": h}),
                    ));
                }
                out.push(named(
                    "response.function_call_arguments.done",
                    &json!({
                    "type": "response.function_call_arguments.done", "item_id": item_id,
                    "output_index": index, "arguments": args}),
                ));
                out.push(named("response.output_item.done", &json!({"type": "response.output_item.done",
                    "output_index": index, "item": {"type": "function_call", "id": item_id, "call_id": id,
                    "name": name, "arguments": args}})));
                index += 1;
            }
            TurnEvent::DelayMs(ms) => out.push(Frame::Delay(Duration::from_millis(*ms))),
        }
    }
    close_text(&mut out, &mut open_text, &mut index);
    let u = turn.usage;
    let (kind, status, incomplete) = match turn.stop_reason() {
        "max_tokens" => (
            "response.incomplete",
            "incomplete",
            json!({"reason": "max_output_tokens"}),
        ),
        _ => ("response.completed", "completed", Value::Null),
    };
    out.push(named(kind, &json!({"type": kind, "response": {"id": "resp_1", "status": status,
        "incomplete_details": incomplete,
        "usage": {"input_tokens": u.input, "input_tokens_details": {"cached_tokens": u.cached_input},
            "output_tokens": u.output, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": u.input + u.output}}})));
    out
}

fn anthropic(turn: &Turn, malformed: bool) -> Vec<Frame> {
    let u = turn.usage;
    let fresh = u.input.saturating_sub(u.cached_input + u.cache_write);
    let mut out = vec![named(
        "message_start",
        &json!({"type": "message_start", "message": {"id": "msg_fixture",
        "type": "message", "role": "assistant", "content": [], "model": "fixture", "stop_reason": null,
        "stop_sequence": null, "usage": {"input_tokens": fresh, "cache_creation_input_tokens": u.cache_write,
        "cache_read_input_tokens": u.cached_input, "output_tokens": 1}}}),
    )];
    out.push(named("ping", &json!({"type": "ping"})));
    for (index, ev) in turn.events.iter().enumerate() {
        match ev {
            TurnEvent::Text(t) => {
                out.push(named(
                    "content_block_start",
                    &json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "text", "text": ""}}),
                ));
                for p in pieces(t, turn.chunk_chars) {
                    out.push(named(
                        "content_block_delta",
                        &json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "text_delta", "text": p}}),
                    ));
                }
                out.push(named(
                    "content_block_stop",
                    &json!({"type": "content_block_stop", "index": index}),
                ));
            }
            TurnEvent::ToolCall {
                id,
                name,
                arguments: args,
            } => {
                out.push(named(
                    "content_block_start",
                    &json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
                ));
                for h in halves(&arguments(args, malformed)) {
                    out.push(named(
                        "content_block_delta",
                        &json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": h}}),
                    ));
                }
                out.push(named(
                    "content_block_stop",
                    &json!({"type": "content_block_stop", "index": index}),
                ));
            }
            TurnEvent::DelayMs(ms) => out.push(Frame::Delay(Duration::from_millis(*ms))),
        }
    }
    out.push(named(
        "message_delta",
        &json!({"type": "message_delta",
        "delta": {"stop_reason": turn.stop_reason(), "stop_sequence": null},
        "usage": {"output_tokens": u.output}}),
    ));
    out.push(named("message_stop", &json!({"type": "message_stop"})));
    out
}
