//! The provider-neutral request: what the agent asks of any model.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who wrote a message. Tool results travel in [`Role::User`] messages (as Anthropic
/// wants); the OpenAI wire formats split them into their own items.
// Serialisable so that a session's transcript can be saved and loaded again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The user, or the harness speaking for the tools.
    User,
    /// The model.
    Assistant,
}

/// One piece of a message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum Part {
    /// Plain text.
    Text(String),
    /// A call the model made (only in assistant messages).
    ToolCall(ToolCall),
    /// The answer to a call (only in user messages).
    ToolResult(ToolResult),
}

/// A tool call as the model made it. `arguments` is the raw JSON text the model wrote,
/// kept verbatim so that a malformed call can be shown back to the model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Provider-assigned id; results refer to it.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments as JSON text.
    pub arguments: String,
}

impl ToolCall {
    /// Parses the arguments strictly; an empty string counts as `{}`.
    pub fn parse_arguments(&self) -> Result<Value, serde_json::Error> {
        if self.arguments.trim().is_empty() {
            return Ok(Value::Object(Default::default()));
        }
        serde_json::from_str(&self.arguments)
    }
}

/// The harness's answer to one tool call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the call this answers.
    pub call_id: String,
    /// What the tool returned (or the error message meant for the model).
    pub content: String,
    /// Whether the tool failed.
    pub is_error: bool,
}

/// One turn of the conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Author.
    pub role: Role,
    /// Content, in order.
    pub parts: Vec<Part>,
}

impl Message {
    /// A user message with one text part.
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            parts: vec![Part::Text(text.into())],
        }
    }

    /// An assistant message with one text part.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            parts: vec![Part::Text(text.into())],
        }
    }

    /// An assistant message holding optional text and the calls it made.
    pub fn assistant_calls(text: Option<String>, calls: Vec<ToolCall>) -> Self {
        let mut parts: Vec<Part> = text.into_iter().map(Part::Text).collect();
        parts.extend(calls.into_iter().map(Part::ToolCall));
        Self {
            role: Role::Assistant,
            parts,
        }
    }

    /// A user message carrying tool results.
    pub fn tool_results(results: Vec<ToolResult>) -> Self {
        Self {
            role: Role::User,
            parts: results.into_iter().map(Part::ToolResult).collect(),
        }
    }

    /// All text parts joined.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// A tool offered to the model.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolDef {
    /// Name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

/// Sampling settings; `None` leaves the provider's default.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sampling {
    /// Temperature.
    pub temperature: Option<f32>,
    /// Nucleus sampling.
    pub top_p: Option<f32>,
    /// Seed of the random choices at a temperature above 0: distinct seeds give
    /// distinct samples of one prompt (the small-model pipeline's candidates);
    /// providers that take no seed ignore it.
    pub seed: Option<u64>,
}

/// A request to a model, independent of the wire format.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChatRequest {
    /// System prompt (the stable prefix, cached where the provider allows).
    pub system: Option<String>,
    /// The conversation.
    pub messages: Vec<Message>,
    /// Tools on offer.
    pub tools: Vec<ToolDef>,
    /// Sampling settings.
    pub sampling: Sampling,
    /// Output limit; the profile's `max_output` when `None`.
    pub max_tokens: Option<u32>,
    /// Stop sequences (ignored by the Responses API, which has none).
    pub stop: Vec<String>,
    /// Predicted output (OpenAI "predicted outputs"), sent only where the profile
    /// says the model supports it.
    pub prediction: Option<String>,
    /// The workspace's paths, for providers that constrain tool arguments to them
    /// ([`Provider::constrains_arguments`](crate::Provider::constrains_arguments)).
    pub paths: Option<std::sync::Arc<crate::PathConstraint>>,
    /// Bytes at the start of `system` that are the same in every session of this
    /// model and mode (the instructions before the workspace's context): a provider
    /// may keep their processing across runs.
    pub fixed_system: Option<usize>,
    /// Tools the model may not call in this step (one whose identical call the harness
    /// refuses as a repeat): a provider
    /// that constrains calls leaves them out of what the model can write; others
    /// ignore it.
    pub forbidden_tools: Vec<String>,
    /// The answer is one fenced code block in this language (`rust`, `python` …): a
    /// provider that can hold its output to it opens the block itself and stops at its
    /// closing fence; others get the request as is and the caller reads the first
    /// block of the answer.
    pub code_block: Option<String>,
    /// How that code block begins (a function's first line): a provider that opens
    /// the block writes this after its fence and the model goes on from it, so the
    /// answer is the part asked for rather than the whole file around it. Others
    /// ignore it; the caller reads the block either way.
    pub answer_start: Option<String>,
}

impl ChatRequest {
    /// A request with one user message.
    pub fn new(system: Option<String>, user: impl Into<String>) -> Self {
        Self {
            system,
            messages: vec![Message::user(user)],
            ..Self::default()
        }
    }

    /// Size in characters of everything sent, for rough token estimates.
    pub fn approx_chars(&self) -> usize {
        let msgs: usize = self
            .messages
            .iter()
            .flat_map(|m| &m.parts)
            .map(|p| match p {
                Part::Text(t) => t.len(),
                Part::ToolCall(c) => c.name.len() + c.arguments.len(),
                Part::ToolResult(r) => r.content.len(),
            })
            .sum();
        let tools: usize = self
            .tools
            .iter()
            .map(|t| t.name.len() + t.description.len() + t.parameters.to_string().len())
            .sum();
        self.system.as_ref().map_or(0, String::len) + msgs + tools
    }
}
