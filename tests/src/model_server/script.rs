//! Scripted turns and injectable faults.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

/// One scripted answer of the model, rendered in whichever wire format the request
/// used.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// What the model "writes", in order.
    pub events: Vec<TurnEvent>,
    /// Token counts to report.
    #[serde(default)]
    pub usage: TurnUsage,
    /// Stop reason: `end_turn`, `tool_use`, `max_tokens`; derived from the events
    /// when absent.
    #[serde(default)]
    pub stop: Option<String>,
    /// Split text into pieces of this many characters (0: one piece per event).
    #[serde(default)]
    pub chunk_chars: usize,
    /// Pause between SSE frames, in milliseconds.
    #[serde(default)]
    pub frame_delay_ms: u64,
}

/// One thing the model does in a turn.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum TurnEvent {
    /// Text.
    Text(String),
    /// A tool call; `arguments` is a JSON object, or a string sent verbatim (which
    /// may be deliberately malformed).
    ToolCall {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Arguments.
        arguments: Value,
    },
    /// A pause, in milliseconds.
    DelayMs(u64),
}

/// Token counts of a turn (`input` includes the cached part).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnUsage {
    /// All prompt tokens.
    #[serde(default)]
    pub input: u64,
    /// Prompt tokens read from cache.
    #[serde(default)]
    pub cached_input: u64,
    /// Prompt tokens written to cache (Anthropic only).
    #[serde(default)]
    pub cache_write: u64,
    /// Output tokens.
    #[serde(default)]
    pub output: u64,
}

impl Turn {
    /// A turn that only writes `text`.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            events: vec![TurnEvent::Text(text.into())],
            ..Self::default()
        }
    }

    /// Adds a tool call.
    pub fn tool_call(mut self, id: &str, name: &str, arguments: Value) -> Self {
        self.events.push(TurnEvent::ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        });
        self
    }

    /// Sets the usage.
    pub fn usage(mut self, input: u64, cached_input: u64, output: u64) -> Self {
        self.usage = TurnUsage {
            input,
            cached_input,
            cache_write: 0,
            output,
        };
        self
    }

    /// Sets the text chunk size.
    pub fn chunked(mut self, chars: usize) -> Self {
        self.chunk_chars = chars;
        self
    }

    /// Sets a pause between frames.
    pub fn frame_delay(mut self, delay: Duration) -> Self {
        self.frame_delay_ms = delay.as_millis() as u64;
        self
    }

    /// The stop reason, explicit or derived.
    pub fn stop_reason(&self) -> &str {
        match &self.stop {
            Some(s) => s,
            None if self
                .events
                .iter()
                .any(|e| matches!(e, TurnEvent::ToolCall { .. })) =>
            {
                "tool_use"
            }
            None => "end_turn",
        }
    }
}

/// A fault the next request meets. Faulted requests do not consume the scripted
/// turn (so a retry gets it), except [`Fault::MalformedToolCall`], which is a whole
/// answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    /// 429 with `Retry-After` (seconds, fractional allowed).
    RateLimit {
        /// Value of the header.
        retry_after_secs: f64,
    },
    /// An HTTP error status with a provider-style error body.
    Status {
        /// Status code (500, 503, 401 …).
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// An HTTP error status with one extra response header (e.g.
    /// `x-should-retry: false`).
    StatusWithHeader {
        /// Status code.
        status: u16,
        /// The provider's message.
        message: String,
        /// Header name and value.
        header: (String, String),
    },
    /// Answer 401 quoting the `Authorization`/`x-api-key` header back, as some
    /// providers do: for redaction tests.
    EchoKey,
    /// Wait this long before the response headers, then serve the turn.
    SlowFirstByte(Duration),
    /// Serve this many SSE frames of the turn, then break the connection.
    CutAfterFrames(usize),
    /// Serve the turn with every tool call's arguments cut short (invalid JSON).
    MalformedToolCall,
    /// Send an error event inside a 200 stream before anything else.
    StreamError {
        /// The provider's message.
        message: String,
    },
}

/// Why a script could not be loaded.
#[derive(Debug)]
pub struct ScriptError(pub String);

impl std::fmt::Display for ScriptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ScriptError {}

/// The repository's `fixtures/model-turns` directory.
pub fn turns_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("fixtures")
        .join("model-turns")
}

/// Loads `fixtures/model-turns/NAME.json`: a JSON array of [`Turn`]s.
pub fn load_turns(name: &str) -> Result<Vec<Turn>, ScriptError> {
    let path = turns_dir().join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path)
        .map_err(|e| ScriptError(format!("{}: {e}", path.display())))?;
    serde_json::from_str(&text).map_err(|e| ScriptError(format!("{}: {e}", path.display())))
}
