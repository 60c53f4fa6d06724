//! What the three decoders share: the [`Decoder`] trait, the tool calls in flight
//! ([`Calls`]), and readers of a provider's JSON (events, token counts, error bodies).

use serde_json::Value;

use crate::error::ModelError;
use crate::event::StreamEvent;
use crate::sse::SseEvent;

/// Turns a stream's SSE events into neutral events.
pub(crate) trait Decoder: Send {
    /// One SSE event in; events out, or the provider's in-stream error.
    fn event(&mut self, ev: &SseEvent) -> Result<Vec<StreamEvent>, ModelError>;
    /// The byte stream ended: the closing events if the answer was complete, `None` if
    /// it was cut short.
    fn finish(&mut self) -> Option<Vec<StreamEvent>>;
    /// Whether the terminal event arrived (no more bytes are needed).
    fn is_done(&self) -> bool;
}

/// Extracts the human message from a provider's error body (JSON or text).
pub(crate) fn error_message(body: &str) -> String {
    let Ok(v) = serde_json::from_str::<Value>(body) else {
        return body.chars().take(2000).collect();
    };
    let msg = v
        .pointer("/error/message")
        .or_else(|| v.get("message"))
        .or_else(|| v.get("error").filter(|e| e.is_string()))
        .or_else(|| v.get("detail"))
        .and_then(Value::as_str);
    match msg {
        Some(m) => {
            let kind = v
                .pointer("/error/type")
                .or_else(|| v.pointer("/error/code"))
                .and_then(Value::as_str);
            match kind {
                Some(k) => format!("{m} ({k})"),
                None => m.to_owned(),
            }
        }
        None => body.chars().take(2000).collect(),
    }
}

/// Parses an SSE data payload as JSON, as a provider error if it is not.
pub(crate) fn json(data: &str) -> Result<Value, ModelError> {
    serde_json::from_str(data).map_err(|e| {
        ModelError::provider(format!(
            "the provider sent an event that is not JSON ({e}): {}",
            truncate(data, 200)
        ))
    })
}

fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

/// Reads a token count at `path`, 0 when missing.
pub(crate) fn tokens(v: &Value, path: &str) -> u64 {
    v.pointer(path).and_then(Value::as_u64).unwrap_or(0)
}

/// Tool calls in flight, in the order they started. Shared by all decoders.
///
/// A call whose name has not arrived yet (some servers send the id first) is not
/// announced: its argument text is held until the name comes, so consumers always
/// see `ToolCallStart` with a name before any delta.
#[derive(Debug, Default)]
pub(crate) struct Calls {
    calls: Vec<Call>,
}

#[derive(Debug)]
struct Call {
    key: String,
    id: String,
    name: String,
    args: String,
    announced: bool,
    ended: bool,
}

impl Call {
    fn announce(&mut self, out: &mut Vec<StreamEvent>) {
        if self.announced {
            return;
        }
        self.announced = true;
        out.push(StreamEvent::ToolCallStart {
            id: self.id.clone(),
            name: self.name.clone(),
        });
        if !self.args.is_empty() {
            out.push(StreamEvent::ToolCallDelta {
                id: self.id.clone(),
                arguments: self.args.clone(),
            });
        }
    }
}

impl Calls {
    /// Starts a call known under `key` (an index or item id) unless already started.
    pub fn start(&mut self, key: &str, id: &str, name: &str, out: &mut Vec<StreamEvent>) {
        if self.has(key) {
            return;
        }
        let mut call = Call {
            key: key.to_owned(),
            id: id.to_owned(),
            name: name.to_owned(),
            args: String::new(),
            announced: false,
            ended: false,
        };
        if !name.is_empty() {
            call.announce(out);
        }
        self.calls.push(call);
    }

    /// Names a call started without one (and announces it).
    pub fn name(&mut self, key: &str, name: &str, out: &mut Vec<StreamEvent>) {
        if let Some(c) = self.calls.iter_mut().find(|c| c.key == key && !c.announced) {
            c.name.push_str(name);
            if !c.name.is_empty() {
                c.announce(out);
            }
        }
    }

    /// Whether a call is known under `key`.
    pub fn has(&self, key: &str) -> bool {
        self.calls.iter().any(|c| c.key == key)
    }

    /// Appends argument text.
    pub fn delta(&mut self, key: &str, text: &str, out: &mut Vec<StreamEvent>) {
        if text.is_empty() {
            return;
        }
        if let Some(c) = self.calls.iter_mut().find(|c| c.key == key && !c.ended) {
            c.args.push_str(text);
            if c.announced {
                out.push(StreamEvent::ToolCallDelta {
                    id: c.id.clone(),
                    arguments: text.to_owned(),
                });
            }
        }
    }

    /// Ends a call; `full` replaces the accumulated text when the provider sends it.
    pub fn end(&mut self, key: &str, full: Option<&str>, out: &mut Vec<StreamEvent>) {
        if let Some(c) = self.calls.iter_mut().find(|c| c.key == key && !c.ended) {
            c.announce(out);
            c.ended = true;
            if let Some(full) = full.filter(|f| !f.is_empty()) {
                c.args = full.to_owned();
            }
            out.push(StreamEvent::ToolCallEnd {
                id: c.id.clone(),
                name: c.name.clone(),
                arguments: c.args.clone(),
            });
        }
    }

    /// Ends every open call.
    pub fn end_all(&mut self, out: &mut Vec<StreamEvent>) {
        let keys: Vec<String> = self
            .calls
            .iter()
            .filter(|c| !c.ended)
            .map(|c| c.key.clone())
            .collect();
        for k in keys {
            self.end(&k, None, out);
        }
    }

    /// Whether any call was made.
    pub fn any(&self) -> bool {
        !self.calls.is_empty()
    }
}
