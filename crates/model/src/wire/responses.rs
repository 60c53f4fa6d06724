//! The OpenAI Responses API.

use serde_json::{Map, Value, json};

use super::body::sampling;
use super::decode::{Calls, Decoder, json, tokens};
use crate::error::ModelError;
use crate::event::{StopReason, StreamEvent};
use crate::profile::ModelProfile;
use crate::sse::SseEvent;
use crate::types::{ChatRequest, Part, Role};
use crate::usage::Usage;

/// The request body. Nothing is stored server-side (`store: false`): the harness owns
/// the transcript and sends it whole each turn.
pub(crate) fn body(model: &str, profile: &ModelProfile, req: &ChatRequest) -> Value {
    let mut input = Vec::new();
    for m in &req.messages {
        for p in &m.parts {
            match (m.role, p) {
                (Role::User, Part::Text(t)) => input.push(json!({
                    "type": "message", "role": "user", "content": [{"type": "input_text", "text": t}],
                })),
                (Role::Assistant, Part::Text(t)) => input.push(json!({
                    "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": t}],
                })),
                (_, Part::ToolCall(c)) => input.push(json!({
                    "type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments,
                })),
                (_, Part::ToolResult(r)) => input.push(json!({
                    "type": "function_call_output", "call_id": r.call_id, "output": r.content,
                })),
            }
        }
    }
    let mut obj = Map::new();
    obj.insert("model".into(), model.into());
    if let Some(system) = &req.system {
        obj.insert("instructions".into(), system.clone().into());
    }
    obj.insert("input".into(), input.into());
    obj.insert("stream".into(), true.into());
    obj.insert("store".into(), false.into());
    obj.insert(
        "max_output_tokens".into(),
        req.max_tokens.unwrap_or(profile.max_output).into(),
    );
    sampling(&mut obj, req);
    if profile.native_tools && !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "name": t.name, "description": t.description,
                       "parameters": t.parameters, "strict": false})
            })
            .collect();
        obj.insert("tools".into(), tools.into());
        obj.insert(
            "parallel_tool_calls".into(),
            profile.parallel_tool_calls.into(),
        );
    }
    Value::Object(obj)
}

/// Decodes `response.*` events. Calls are keyed by their item id.
#[derive(Debug, Default)]
pub(crate) struct ResponsesDecoder {
    calls: Calls,
    done: bool,
}

fn failure(v: &Value) -> ModelError {
    let err = v
        .pointer("/response/error")
        .filter(|e| !e.is_null())
        .unwrap_or(v);
    let code = err.get("code").and_then(Value::as_str).unwrap_or("error");
    let msg = err
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("the response failed");
    let retryable = matches!(
        code,
        "server_error" | "rate_limit_exceeded" | "server_is_overloaded"
    );
    ModelError::provider(format!("{msg} ({code})")).retryable(retryable)
}

impl Decoder for ResponsesDecoder {
    fn event(&mut self, ev: &SseEvent) -> Result<Vec<StreamEvent>, ModelError> {
        if self.done || ev.data.trim().is_empty() {
            return Ok(Vec::new());
        }
        let v = json(&ev.data)?;
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(ev.event.as_str());
        let mut out = Vec::new();
        let item_key = |v: &Value| {
            v.get("item_id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        match kind {
            "response.output_text.delta" => {
                if let Some(d) = v
                    .get("delta")
                    .and_then(Value::as_str)
                    .filter(|d| !d.is_empty())
                {
                    out.push(StreamEvent::TextDelta(d.to_owned()));
                }
            }
            "response.output_item.added"
                if v.pointer("/item/type") == Some(&json!("function_call")) =>
            {
                let item = &v["item"];
                let key = item.get("id").and_then(Value::as_str).unwrap_or_default();
                let id = item.get("call_id").and_then(Value::as_str).unwrap_or(key);
                let name = item.get("name").and_then(Value::as_str).unwrap_or_default();
                self.calls.start(key, id, name, &mut out);
                let args = item
                    .get("arguments")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                self.calls.delta(key, args, &mut out);
            }
            "response.function_call_arguments.delta" => {
                let d = v.get("delta").and_then(Value::as_str).unwrap_or_default();
                self.calls.delta(&item_key(&v), d, &mut out);
            }
            "response.function_call_arguments.done" => {
                self.calls.end(
                    &item_key(&v),
                    v.get("arguments").and_then(Value::as_str),
                    &mut out,
                );
            }
            "response.output_item.done"
                if v.pointer("/item/type") == Some(&json!("function_call")) =>
            {
                let key = v
                    .pointer("/item/id")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                self.calls.end(
                    key,
                    v.pointer("/item/arguments").and_then(Value::as_str),
                    &mut out,
                );
            }
            "response.completed" | "response.incomplete" => {
                self.calls.end_all(&mut out);
                let r = &v["response"];
                if let Some(u) = r.get("usage").filter(|u| u.is_object()) {
                    out.push(StreamEvent::Usage(Usage {
                        input: tokens(u, "/input_tokens"),
                        cached_input: tokens(u, "/input_tokens_details/cached_tokens"),
                        cache_write: 0,
                        output: tokens(u, "/output_tokens"),
                    }));
                }
                let reason = r
                    .pointer("/incomplete_details/reason")
                    .and_then(Value::as_str);
                let stop = match (kind, reason) {
                    (_, Some("max_output_tokens")) => StopReason::MaxTokens,
                    (_, Some("content_filter")) => StopReason::ContentFilter,
                    ("response.incomplete", Some(other)) => StopReason::Other(other.to_owned()),
                    _ if self.calls.any() => StopReason::ToolUse,
                    _ => StopReason::EndTurn,
                };
                out.push(StreamEvent::Stop(stop));
                self.done = true;
            }
            "response.failed" | "error" => return Err(failure(&v)),
            _ => {}
        }
        Ok(out)
    }

    fn finish(&mut self) -> Option<Vec<StreamEvent>> {
        self.done.then(Vec::new)
    }

    fn is_done(&self) -> bool {
        self.done
    }
}
