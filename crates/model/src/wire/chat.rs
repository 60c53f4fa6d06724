//! OpenAI chat completions (and every server that copies it).

use serde_json::{Map, Value, json};

use super::body::sampling;
use super::decode::{Calls, Decoder, json, tokens};
use crate::error::ModelError;
use crate::event::{StopReason, StreamEvent};
use crate::profile::ModelProfile;
use crate::sse::SseEvent;
use crate::types::{ChatRequest, Part, Role};
use crate::usage::Usage;

/// The request body.
pub(crate) fn body(model: &str, profile: &ModelProfile, req: &ChatRequest) -> Value {
    let mut messages = Vec::new();
    if let Some(system) = &req.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    for m in &req.messages {
        let mut text = String::new();
        let mut calls = Vec::new();
        for p in &m.parts {
            match p {
                Part::Text(t) => text.push_str(t),
                Part::ToolCall(c) => calls.push(json!({
                    "id": c.id, "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                })),
                // Results are messages of their own, right after the assistant turn.
                Part::ToolResult(r) => messages.push(json!({
                    "role": "tool", "tool_call_id": r.call_id, "content": r.content,
                })),
            }
        }
        match m.role {
            Role::Assistant => {
                let mut msg = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { text.into() }});
                if !calls.is_empty() {
                    msg["tool_calls"] = calls.into();
                }
                messages.push(msg);
            }
            Role::User if !text.is_empty() => {
                messages.push(json!({"role": "user", "content": text}))
            }
            Role::User => {}
        }
    }
    let mut obj = Map::new();
    obj.insert("model".into(), model.into());
    obj.insert("messages".into(), messages.into());
    obj.insert("stream".into(), true.into());
    obj.insert("stream_options".into(), json!({"include_usage": true}));
    let max = req.max_tokens.unwrap_or(profile.max_output);
    let field = if profile.max_completion_tokens {
        "max_completion_tokens"
    } else {
        "max_tokens"
    };
    obj.insert(field.into(), max.into());
    sampling(&mut obj, req);
    // Chat completions (and llama.cpp's server, vLLM, Ollama) take a seed; the other
    // wire formats have none.
    if let Some(seed) = req.sampling.seed {
        obj.insert("seed".into(), seed.into());
    }
    if !req.stop.is_empty() {
        obj.insert("stop".into(), req.stop.clone().into());
    }
    if profile.native_tools && !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters,
                }})
            })
            .collect();
        obj.insert("tools".into(), tools.into());
        obj.insert(
            "parallel_tool_calls".into(),
            profile.parallel_tool_calls.into(),
        );
    }
    if let Some(p) = req
        .prediction
        .as_ref()
        .filter(|_| profile.supports_prediction)
    {
        obj.insert(
            "prediction".into(),
            json!({"type": "content", "content": p}),
        );
    }
    Value::Object(obj)
}

/// Decodes `chat.completion.chunk` events. Calls are keyed by their `index`; the
/// stop reason waits for the usage chunk and `[DONE]`.
#[derive(Debug, Default)]
pub(crate) struct ChatDecoder {
    calls: Calls,
    usage: Option<Usage>,
    finish: Option<String>,
    done: bool,
}

impl ChatDecoder {
    fn close(&mut self) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        self.calls.end_all(&mut out);
        if let Some(u) = self.usage.take() {
            out.push(StreamEvent::Usage(u));
        }
        let stop = match self.finish.as_deref() {
            // Several local servers say "stop" after a tool call.
            _ if self.calls.any() => StopReason::ToolUse,
            Some("stop") | None => StopReason::EndTurn,
            Some("length") => StopReason::MaxTokens,
            Some("content_filter") => StopReason::ContentFilter,
            Some(other) => StopReason::Other(other.to_owned()),
        };
        out.push(StreamEvent::Stop(stop));
        self.done = true;
        out
    }
}

impl Decoder for ChatDecoder {
    fn event(&mut self, ev: &SseEvent) -> Result<Vec<StreamEvent>, ModelError> {
        let data = ev.data.trim();
        if self.done || data.is_empty() {
            return Ok(Vec::new());
        }
        if data == "[DONE]" {
            return Ok(self.close());
        }
        let v = json(data)?;
        if let Some(err) = v.get("error") {
            // OpenRouter and vLLM report failures inside the stream.
            let msg = super::decode::error_message(&json!({"error": err}).to_string());
            return Err(ModelError::provider(msg).retryable(true));
        }
        let mut out = Vec::new();
        if let Some(choice) = v.pointer("/choices/0") {
            let delta = &choice["delta"];
            if let Some(text) = delta
                .get("content")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
            {
                out.push(StreamEvent::TextDelta(text.to_owned()));
            }
            if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                for (pos, call) in calls.iter().enumerate() {
                    let index = call
                        .get("index")
                        .and_then(Value::as_u64)
                        .unwrap_or(pos as u64);
                    let key = index.to_string();
                    let f = &call["function"];
                    let name = f.get("name").and_then(Value::as_str).unwrap_or_default();
                    if !self.calls.has(&key) {
                        let id = call
                            .get("id")
                            .and_then(Value::as_str)
                            .map_or_else(|| format!("call_{index}"), str::to_owned);
                        self.calls.start(&key, &id, name, &mut out);
                    } else if !name.is_empty() {
                        self.calls.name(&key, name, &mut out);
                    }
                    let args = f
                        .get("arguments")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    self.calls.delta(&key, args, &mut out);
                }
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish = Some(reason.to_owned());
                self.calls.end_all(&mut out);
            }
        }
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(Usage {
                input: tokens(u, "/prompt_tokens"),
                cached_input: tokens(u, "/prompt_tokens_details/cached_tokens"),
                cache_write: 0,
                output: tokens(u, "/completion_tokens"),
            });
        }
        Ok(out)
    }

    fn finish(&mut self) -> Option<Vec<StreamEvent>> {
        if self.done {
            return Some(Vec::new());
        }
        // Some servers close without `[DONE]`; a finish reason means the answer is whole.
        self.finish.is_some().then(|| self.close())
    }

    fn is_done(&self) -> bool {
        self.done
    }
}
