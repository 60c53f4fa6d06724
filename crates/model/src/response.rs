//! Folding a stream of events into one answer.

use futures::StreamExt;

use crate::client::EventStream;
use crate::error::ModelError;
use crate::event::{StopReason, StreamEvent};
use crate::types::{Message, ToolCall};
use crate::usage::Usage;

/// A whole answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    /// The text.
    pub text: String,
    /// Calls, in the order they started.
    pub tool_calls: Vec<ToolCall>,
    /// Token counts (zero if the provider sent none).
    pub usage: Usage,
    /// Why the model stopped.
    pub stop: StopReason,
}

impl Response {
    /// The answer as an assistant message for the transcript.
    pub fn to_message(&self) -> Message {
        let text = (!self.text.is_empty()).then(|| self.text.clone());
        Message::assistant_calls(text, self.tool_calls.clone())
    }
}

/// Builds a [`Response`] event by event, for callers that also show the stream live.
#[derive(Debug, Default)]
pub struct Accumulator {
    text: String,
    open: Vec<ToolCall>,
    done: Vec<ToolCall>,
    usage: Usage,
    stop: Option<StopReason>,
}

impl Accumulator {
    /// Takes one event in.
    pub fn push(&mut self, ev: &StreamEvent) {
        match ev {
            StreamEvent::TextDelta(t) => self.text.push_str(t),
            StreamEvent::ToolCallStart { id, name } => {
                self.open.push(ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: String::new(),
                });
            }
            StreamEvent::ToolCallDelta { id, arguments } => {
                if let Some(c) = self.open.iter_mut().find(|c| &c.id == id) {
                    c.arguments.push_str(arguments);
                }
            }
            StreamEvent::ToolCallEnd {
                id,
                name,
                arguments,
            } => {
                self.open.retain(|c| &c.id != id);
                self.done.push(ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: arguments.clone(),
                });
            }
            StreamEvent::Usage(u) => self.usage = *u,
            StreamEvent::Stop(s) => self.stop = Some(s.clone()),
        }
    }

    /// The text so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The answer so far; calls still open are included as they stand.
    pub fn finish(mut self) -> Response {
        self.done.append(&mut self.open);
        Response {
            text: self.text,
            tool_calls: self.done,
            usage: self.usage,
            stop: self.stop.unwrap_or(StopReason::Other("incomplete".into())),
        }
    }
}

/// Reads a [`ManyStream`](crate::ManyStream) of `n` sequences to its end: each
/// sequence's answer and figures, by index (a sequence that sent nothing has an empty
/// answer and default figures).
pub async fn collect_many(
    mut stream: crate::ManyStream,
    n: usize,
) -> Result<Vec<(Response, crate::DecodeStats)>, ModelError> {
    let mut accs: Vec<Accumulator> = (0..n).map(|_| Accumulator::default()).collect();
    let mut stats = vec![crate::DecodeStats::default(); n];
    while let Some(item) = stream.next().await {
        match item? {
            crate::ManyEvent::Event(i, ev) => {
                if let Some(acc) = accs.get_mut(i) {
                    acc.push(&ev);
                }
            }
            crate::ManyEvent::Stats(i, s) => {
                if let Some(slot) = stats.get_mut(i) {
                    *slot = s;
                }
            }
        }
    }
    Ok(accs
        .into_iter()
        .map(Accumulator::finish)
        .zip(stats)
        .collect())
}

/// Reads a stream to its end.
pub async fn collect(mut stream: EventStream) -> Result<Response, ModelError> {
    let mut acc = Accumulator::default();
    while let Some(ev) = stream.next().await {
        acc.push(&ev?);
    }
    Ok(acc.finish())
}
