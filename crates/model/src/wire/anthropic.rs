//! Anthropic Messages.

use serde_json::{Map, Value, json};

use super::body::sampling;
use super::decode::{Calls, Decoder, json, tokens};
use crate::error::ModelError;
use crate::event::{StopReason, StreamEvent};
use crate::profile::ModelProfile;
use crate::sse::SseEvent;
use crate::types::{ChatRequest, Part, Role};
use crate::usage::Usage;

/// The request body. With prompt caching on, `cache_control` marks the end of the
/// stable prefix (system, tools) and the end of the conversation so far, so the next
/// turn reads everything before its new messages from cache (3 of the 4 breakpoints
/// Anthropic allows).
pub(crate) fn body(model: &str, profile: &ModelProfile, req: &ChatRequest) -> Value {
    let cache = profile.prompt_caching;
    let mut messages: Vec<Value> = Vec::new();
    for m in &req.messages {
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        let blocks: Vec<Value> = m
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Text(t) if t.is_empty() => None,
                Part::Text(t) => Some(json!({"type": "text", "text": t})),
                Part::ToolCall(c) => {
                    // `input` must be an object; a malformed call goes back as `{}`,
                    // its result explains what was wrong.
                    let input = c.parse_arguments().ok().filter(Value::is_object).unwrap_or_else(|| json!({}));
                    Some(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}))
                }
                Part::ToolResult(r) => Some(json!({
                    "type": "tool_result", "tool_use_id": r.call_id, "content": r.content, "is_error": r.is_error,
                })),
            })
            .collect();
        if blocks.is_empty() {
            continue;
        }
        // Anthropic wants roles to alternate: merge neighbours of the same role.
        match messages.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(content) = last["content"].as_array_mut() {
                    content.extend(blocks);
                }
            }
            _ => messages.push(json!({"role": role, "content": blocks})),
        }
    }
    if cache
        && let Some(block) = messages
            .last_mut()
            .and_then(|m| m["content"].as_array_mut())
            .and_then(|c| c.last_mut())
    {
        block["cache_control"] = json!({"type": "ephemeral"});
    }
    let mut obj = Map::new();
    obj.insert("model".into(), model.into());
    obj.insert(
        "max_tokens".into(),
        req.max_tokens.unwrap_or(profile.max_output).into(),
    );
    if let Some(system) = &req.system {
        let mut block = json!({"type": "text", "text": system});
        if cache {
            block["cache_control"] = json!({"type": "ephemeral"});
        }
        obj.insert("system".into(), json!([block]));
    }
    obj.insert("messages".into(), messages.into());
    obj.insert("stream".into(), true.into());
    sampling(&mut obj, req);
    if !req.stop.is_empty() {
        obj.insert("stop_sequences".into(), req.stop.clone().into());
    }
    if profile.native_tools && !req.tools.is_empty() {
        let mut tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        if cache && let Some(last) = tools.last_mut() {
            last["cache_control"] = json!({"type": "ephemeral"});
        }
        obj.insert("tools".into(), tools.into());
        if !profile.parallel_tool_calls {
            obj.insert(
                "tool_choice".into(),
                json!({"type": "auto", "disable_parallel_tool_use": true}),
            );
        }
    }
    Value::Object(obj)
}

/// Decodes `message_*` / `content_block_*` events. Calls are keyed by block index.
#[derive(Debug, Default)]
pub(crate) struct AnthropicDecoder {
    calls: Calls,
    usage: Usage,
    stop: Option<String>,
    done: bool,
}

impl AnthropicDecoder {
    fn read_usage(&mut self, u: &Value) {
        // `input_tokens` excludes cache reads and writes; ours counts all input.
        if u.get("input_tokens").is_some() || u.get("cache_read_input_tokens").is_some() {
            let read = tokens(u, "/cache_read_input_tokens");
            let write = tokens(u, "/cache_creation_input_tokens");
            self.usage.input = tokens(u, "/input_tokens") + read + write;
            self.usage.cached_input = read;
            self.usage.cache_write = write;
        }
        if let Some(out) = u.get("output_tokens").and_then(Value::as_u64) {
            self.usage.output = out;
        }
    }
}

impl Decoder for AnthropicDecoder {
    fn event(&mut self, ev: &SseEvent) -> Result<Vec<StreamEvent>, ModelError> {
        if self.done || ev.data.trim().is_empty() {
            return Ok(Vec::new());
        }
        let v = json(&ev.data)?;
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(ev.event.as_str());
        let index = v
            .get("index")
            .and_then(Value::as_u64)
            .unwrap_or(0)
            .to_string();
        let mut out = Vec::new();
        match kind {
            "message_start" => self.read_usage(&v["message"]["usage"]),
            "content_block_start" => {
                let block = &v["content_block"];
                match block.get("type").and_then(Value::as_str) {
                    Some("tool_use") => {
                        let id = block.get("id").and_then(Value::as_str).unwrap_or_default();
                        let name = block
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        self.calls.start(&index, id, name, &mut out);
                        // Some proxies send the whole input here instead of deltas.
                        if let Some(input) = block
                            .get("input")
                            .filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
                        {
                            self.calls.delta(&index, &input.to_string(), &mut out);
                        }
                    }
                    Some("text") => {
                        if let Some(t) = block
                            .get("text")
                            .and_then(Value::as_str)
                            .filter(|t| !t.is_empty())
                        {
                            out.push(StreamEvent::TextDelta(t.to_owned()));
                        }
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let d = &v["delta"];
                match d.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        if let Some(t) = d
                            .get("text")
                            .and_then(Value::as_str)
                            .filter(|t| !t.is_empty())
                        {
                            out.push(StreamEvent::TextDelta(t.to_owned()));
                        }
                    }
                    Some("input_json_delta") => {
                        let part = d
                            .get("partial_json")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        self.calls.delta(&index, part, &mut out);
                    }
                    _ => {}
                }
            }
            "content_block_stop" => self.calls.end(&index, None, &mut out),
            "message_delta" => {
                if let Some(r) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop = Some(r.to_owned());
                }
                self.read_usage(&v["usage"]);
            }
            "message_stop" => {
                self.calls.end_all(&mut out);
                out.push(StreamEvent::Usage(self.usage));
                let stop = match self.stop.as_deref() {
                    Some("end_turn") | None => StopReason::EndTurn,
                    Some("tool_use") => StopReason::ToolUse,
                    Some("max_tokens") => StopReason::MaxTokens,
                    Some("stop_sequence") => StopReason::StopSequence,
                    Some("refusal") => StopReason::ContentFilter,
                    Some(other) => StopReason::Other(other.to_owned()),
                };
                out.push(StreamEvent::Stop(stop));
                self.done = true;
            }
            "error" => {
                let kind = v
                    .pointer("/error/type")
                    .and_then(Value::as_str)
                    .unwrap_or("error");
                let msg = v
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("stream error");
                let retryable =
                    matches!(kind, "overloaded_error" | "api_error" | "rate_limit_error");
                return Err(ModelError::provider(format!("{msg} ({kind})")).retryable(retryable));
            }
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
