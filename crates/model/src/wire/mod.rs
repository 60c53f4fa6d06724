//! The three wire formats: request bodies out, SSE events in.
//!
//! Each format has a `build` (neutral request → URL, headers, JSON body) and a
//! [`Decoder`] (SSE events → neutral [`StreamEvent`]s). Decoders are pure state
//! machines: the HTTP loop in [`crate::client`] is shared.

pub(crate) mod anthropic;
mod body;
pub(crate) mod chat;
mod decode;
pub(crate) mod responses;

use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::Value;

use crate::error::ModelError;
use crate::event::StreamEvent;
use crate::profile::{ModelProfile, WireFormat};
use crate::secret::Secret;
use crate::types::ChatRequest;

pub(crate) use decode::{Decoder, error_message};

/// A request ready to send.
pub(crate) struct WireRequest {
    pub url: String,
    pub headers: HeaderMap,
    pub body: Value,
}

/// Builds the HTTP request for `wire`.
pub(crate) fn build(
    wire: WireFormat,
    base_url: &str,
    model_id: &str,
    key: Option<&Secret>,
    profile: &ModelProfile,
    req: &ChatRequest,
) -> Result<WireRequest, ModelError> {
    let base = base_url.trim_end_matches('/');
    let mut headers = HeaderMap::new();
    let (url, body) = match wire {
        WireFormat::OpenaiChat => (
            format!("{base}/chat/completions"),
            chat::body(model_id, profile, req),
        ),
        WireFormat::OpenaiResponses => (
            format!("{base}/responses"),
            responses::body(model_id, profile, req),
        ),
        WireFormat::Anthropic => {
            headers.insert("anthropic-version", HeaderValue::from_static("2023-06-01"));
            (
                format!("{base}/messages"),
                anthropic::body(model_id, profile, req),
            )
        }
        WireFormat::Local => return Err(not_http()),
    };
    headers.insert("accept", HeaderValue::from_static("text/event-stream"));
    if let Some(key) = key {
        let (name, value) = match wire {
            WireFormat::Anthropic => ("x-api-key", key.expose().to_owned()),
            _ => ("authorization", format!("Bearer {}", key.expose())),
        };
        let mut value = HeaderValue::from_str(&value).map_err(|_| {
            ModelError::new(
                crate::ErrorClass::InvalidArguments,
                "the API key holds characters not allowed in a header",
            )
        })?;
        // Sensitive values print as "Sensitive" in any Debug output.
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    Ok(WireRequest { url, headers, body })
}

/// The embedded model has no wire: asking for its HTTP request or decoder is a bug of
/// the caller.
pub(crate) fn not_http() -> ModelError {
    ModelError::new(
        crate::ErrorClass::InvalidArguments,
        "wire \"local\" is the embedded model, not an HTTP API",
    )
}

/// A fresh decoder for `wire`.
pub(crate) fn decoder(wire: WireFormat) -> Result<Box<dyn Decoder>, ModelError> {
    Ok(match wire {
        WireFormat::OpenaiChat => Box::<chat::ChatDecoder>::default(),
        WireFormat::OpenaiResponses => Box::<responses::ResponsesDecoder>::default(),
        WireFormat::Anthropic => Box::<anthropic::AnthropicDecoder>::default(),
        WireFormat::Local => return Err(not_http()),
    })
}

/// Decodes a whole recorded SSE body of `wire` into events, as the streaming client
/// would (for replaying recorded provider answers offline, and for benchmarks).
pub fn decode_sse_body(wire: WireFormat, body: &[u8]) -> Result<Vec<StreamEvent>, ModelError> {
    let mut decoder = decoder(wire)?;
    let mut parser = crate::sse::SseParser::new();
    let mut out = Vec::new();
    for ev in parser.feed(body) {
        out.extend(decoder.event(&ev)?);
        if decoder.is_done() {
            return Ok(out);
        }
    }
    match decoder.finish() {
        Some(rest) => {
            out.extend(rest);
            Ok(out)
        }
        None => Err(ModelError::provider(
            "the stream ended before the model finished",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::StopReason;
    use crate::usage::Usage;

    fn sse(lines: &[&str]) -> Vec<u8> {
        lines
            .iter()
            .map(|l| format!("data: {l}\n\n"))
            .collect::<String>()
            .into_bytes()
    }

    #[test]
    fn chat_without_done_completes_after_a_finish_reason() {
        let body = sse(&[
            r#"{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1}}"#,
        ]);
        let events = decode_sse_body(WireFormat::OpenaiChat, &body).unwrap();
        assert_eq!(
            events,
            [
                StreamEvent::TextDelta("hi".into()),
                StreamEvent::Usage(Usage {
                    input: 5,
                    cached_input: 0,
                    cache_write: 0,
                    output: 1
                }),
                StreamEvent::Stop(StopReason::EndTurn),
            ]
        );
        let cut =
            sse(&[r#"{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}"#]);
        assert!(decode_sse_body(WireFormat::OpenaiChat, &cut).is_err());
    }

    #[test]
    fn chat_whole_call_in_one_chunk_without_index_and_stop_reason() {
        // What several local servers send.
        let body = sse(&[
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"c1","function":{"name":"grep","arguments":"{\"pattern\":\"x\"}"}}]},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
            "[DONE]",
        ]);
        let events = decode_sse_body(WireFormat::OpenaiChat, &body).unwrap();
        assert!(events.contains(&StreamEvent::ToolCallEnd {
            id: "c1".into(),
            name: "grep".into(),
            arguments: r#"{"pattern":"x"}"#.into()
        }));
        assert_eq!(events.last(), Some(&StreamEvent::Stop(StopReason::ToolUse)));
    }

    #[test]
    fn chat_call_named_after_its_id_is_announced_once_named() {
        let body = sse(&[
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c9","function":{"arguments":"{\"a\":"}}]},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"grep","arguments":"1}"}}]},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            "[DONE]",
        ]);
        let events = decode_sse_body(WireFormat::OpenaiChat, &body).unwrap();
        assert_eq!(
            &events[..4],
            [
                StreamEvent::ToolCallStart {
                    id: "c9".into(),
                    name: "grep".into()
                },
                StreamEvent::ToolCallDelta {
                    id: "c9".into(),
                    arguments: "{\"a\":".into()
                },
                StreamEvent::ToolCallDelta {
                    id: "c9".into(),
                    arguments: "1}".into()
                },
                StreamEvent::ToolCallEnd {
                    id: "c9".into(),
                    name: "grep".into(),
                    arguments: "{\"a\":1}".into()
                },
            ]
        );
    }

    #[test]
    fn chat_error_chunk_and_non_json_are_provider_errors() {
        let body = sse(&[r#"{"error":{"message":"upstream overloaded","code":502}}"#]);
        let err = decode_sse_body(WireFormat::OpenaiChat, &body).unwrap_err();
        assert!(
            err.message.contains("upstream overloaded") && err.retryable,
            "{err}"
        );
        let err = decode_sse_body(WireFormat::OpenaiChat, &sse(&["<html>"])).unwrap_err();
        assert!(err.message.contains("not JSON"), "{err}");
    }

    #[test]
    fn anthropic_usage_counts_cache_reads_and_writes_as_input() {
        let body = [
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"cache_read_input_tokens\":900,\"cache_creation_input_tokens\":90,\"output_tokens\":1}}}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":42}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        ]
        .concat();
        let events = decode_sse_body(WireFormat::Anthropic, body.as_bytes()).unwrap();
        assert_eq!(
            events,
            [
                StreamEvent::Usage(Usage {
                    input: 1000,
                    cached_input: 900,
                    cache_write: 90,
                    output: 42
                }),
                StreamEvent::Stop(StopReason::EndTurn),
            ]
        );
    }

    #[test]
    fn responses_incomplete_and_failed() {
        let body = sse(&[
            r#"{"type":"response.output_text.delta","delta":"par"}"#,
            r#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":3,"output_tokens":9}}}"#,
        ]);
        let events = decode_sse_body(WireFormat::OpenaiResponses, &body).unwrap();
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Stop(StopReason::MaxTokens))
        );
        let failed = sse(&[
            r#"{"type":"response.failed","response":{"error":{"code":"server_error","message":"try again"}}}"#,
        ]);
        let err = decode_sse_body(WireFormat::OpenaiResponses, &failed).unwrap_err();
        assert!(
            err.retryable && err.message == "try again (server_error)",
            "{err}"
        );
    }

    #[test]
    fn error_bodies_keep_the_provider_message() {
        assert_eq!(
            error_message(
                r#"{"error":{"message":"Invalid model","type":"invalid_request_error"}}"#
            ),
            "Invalid model (invalid_request_error)"
        );
        assert_eq!(
            error_message(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "Overloaded (overloaded_error)"
        );
        assert_eq!(
            error_message(r#"{"error":"model not found"}"#),
            "model not found"
        );
        assert_eq!(error_message("Bad Gateway"), "Bad Gateway");
    }
}
