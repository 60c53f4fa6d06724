//! The stdio transport in front of tower-lsp.
//!
//! tower-lsp 0.20 reads stdin through a `FramedRead`, which ends its stream after the
//! first decode error: one malformed frame (bad JSON, or JSON that is not JSON-RPC) and
//! the server stops reading. So agentls reads frames itself, forwards only those that
//! tower-lsp can decode, and answers the others with the JSON-RPC error the spec asks
//! for (`-32700` parse error, `-32600` invalid request). The answers are written between
//! whole frames of tower-lsp's own output, so stdout always stays well framed.

use serde_json::{Value, json};
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader,
};
use tokio::sync::mpsc;
use tower_lsp::jsonrpc;

/// Frames larger than this are refused (and skipped) rather than buffered.
const MAX_FRAME_BYTES: usize = 512 * 1024 * 1024;

/// One unit read from the wire.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A body, as bytes.
    Body(Vec<u8>),
    /// Framing was broken; the reader skipped to where the next frame can start.
    Malformed(String),
}

/// Reads the next frame; `None` at end of input.
pub async fn read_frame<R: AsyncBufRead + Unpin>(reader: &mut R) -> std::io::Result<Option<Frame>> {
    let mut content_length: Option<Result<usize, String>> = None;
    let mut saw_header = false;
    loop {
        let mut line = Vec::new();
        if reader.read_until(b'\n', &mut line).await? == 0 {
            return Ok(if saw_header {
                Some(Frame::Malformed("end of input inside a header".to_owned()))
            } else {
                None
            });
        }
        let line = String::from_utf8_lossy(&line);
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            if !saw_header {
                continue; // Stray blank lines between frames are harmless.
            }
            break;
        }
        saw_header = true;
        match line.split_once(':') {
            Some((name, value)) if name.trim().eq_ignore_ascii_case("content-length") => {
                content_length = Some(
                    value
                        .trim()
                        .parse::<usize>()
                        .map_err(|_| format!("bad Content-Length {:?}", value.trim())),
                );
            }
            Some(_) => {} // Content-Type and unknown headers carry nothing we need.
            None => {
                return Ok(Some(Frame::Malformed(format!(
                    "not a header line: {line:?}"
                ))));
            }
        }
    }
    match content_length {
        None => Ok(Some(Frame::Malformed(
            "header without Content-Length".to_owned(),
        ))),
        Some(Err(e)) => Ok(Some(Frame::Malformed(e))),
        Some(Ok(len)) if len > MAX_FRAME_BYTES => {
            // Skip the body so the next frame starts where it should.
            tokio::io::copy(&mut reader.take(len as u64), &mut tokio::io::sink()).await?;
            Ok(Some(Frame::Malformed(format!(
                "frame of {len} bytes is over the limit"
            ))))
        }
        Some(Ok(len)) => {
            let mut body = vec![0; len];
            reader.read_exact(&mut body).await?;
            Ok(Some(Frame::Body(body)))
        }
    }
}

/// Writes one frame.
pub async fn write_frame<W: AsyncWrite + Unpin>(
    writer: &mut W,
    body: &[u8],
) -> std::io::Result<()> {
    writer
        .write_all(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes())
        .await?;
    writer.write_all(body).await?;
    writer.flush().await
}

/// What to do with a body read from the client.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// tower-lsp can decode it.
    Forward,
    /// Answer it with this error response instead.
    Reject(Value),
}

/// Decides whether tower-lsp can decode `body`, mirroring its message types.
pub fn check(body: &[u8]) -> Verdict {
    let value: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            return Verdict::Reject(error_response(
                Value::Null,
                -32700,
                &format!("Parse error: {e}"),
            ));
        }
    };
    if is_json_rpc(&value) {
        return Verdict::Forward;
    }
    let id = match value.get("id") {
        Some(id @ (Value::Number(_) | Value::String(_))) => id.clone(),
        _ => Value::Null,
    };
    Verdict::Reject(error_response(
        id,
        -32600,
        "Invalid request: not a JSON-RPC 2.0 message",
    ))
}

/// Whether `value` is a JSON-RPC 2.0 request, notification or response that tower-lsp's
/// types accept. The shape is checked first because tower-lsp's `Response` accepts
/// objects that are no response at all (and then drops them without a word).
fn is_json_rpc(value: &Value) -> bool {
    let Some(obj) = value.as_object() else {
        return false;
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return false;
    }
    let id_ok = |id: Option<&Value>| {
        matches!(
            id,
            None | Some(Value::Null | Value::Number(_) | Value::String(_))
        )
    };
    if let Some(method) = obj.get("method") {
        let params_ok = matches!(
            obj.get("params"),
            None | Some(Value::Object(_) | Value::Array(_) | Value::Null)
        );
        return method.is_string()
            && id_ok(obj.get("id"))
            && params_ok
            && serde_json::from_value::<jsonrpc::Request>(value.clone()).is_ok();
    }
    let has_result = obj.contains_key("result");
    let has_error = obj.contains_key("error");
    obj.contains_key("id")
        && id_ok(obj.get("id"))
        && has_result != has_error
        && serde_json::from_value::<jsonrpc::Response>(value.clone()).is_ok()
}

fn is_exit(body: &[u8]) -> bool {
    serde_json::from_slice::<Value>(body).is_ok_and(|v| {
        v.get("method").and_then(Value::as_str) == Some("exit") && v.get("id").is_none()
    })
}

fn error_response(id: Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "error": { "code": code, "message": message }, "id": id })
}

/// Copies client frames from `input` to tower-lsp's side (`to_server`), sending the
/// answers for rejected frames to `rejects`. Returns at end of input.
pub async fn pump_input<R, W>(input: R, mut to_server: W, rejects: mpsc::UnboundedSender<Vec<u8>>)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut reader = BufReader::new(input);
    loop {
        let frame = match read_frame(&mut reader).await {
            Ok(Some(frame)) => frame,
            Ok(None) => return,
            Err(e) => {
                tracing::error!("reading stdin failed: {e}");
                return;
            }
        };
        let reject = match frame {
            Frame::Body(body) => match check(&body) {
                Verdict::Forward => {
                    if write_frame(&mut to_server, &body).await.is_err() {
                        return; // tower-lsp has stopped.
                    }
                    if is_exit(&body) {
                        // tower-lsp notices `exit` only when the next message arrives
                        // (tower-lsp issue 239); ending its input makes it stop now.
                        return;
                    }
                    continue;
                }
                Verdict::Reject(response) => {
                    tracing::warn!(
                        "refused a malformed message: {}",
                        response["error"]["message"].as_str().unwrap_or_default()
                    );
                    response
                }
            },
            Frame::Malformed(why) => {
                tracing::warn!("malformed frame: {why}");
                error_response(Value::Null, -32700, &format!("Parse error: {why}"))
            }
        };
        if rejects.send(reject.to_string().into_bytes()).is_err() {
            return;
        }
    }
}

/// Forwards tower-lsp's frames (`from_server`) into `out`, the same queue that carries
/// the answers to rejected frames, so that one writer sees whole frames in order.
pub async fn pump_server_output<R>(from_server: R, out: mpsc::UnboundedSender<Vec<u8>>)
where
    R: AsyncRead + Unpin,
{
    let mut reader = BufReader::new(from_server);
    loop {
        match read_frame(&mut reader).await {
            Ok(Some(Frame::Body(body))) => {
                if out.send(body).is_err() {
                    return;
                }
            }
            Ok(Some(Frame::Malformed(why))) => {
                tracing::error!("tower-lsp wrote a bad frame: {why}")
            }
            Ok(None) | Err(_) => return,
        }
    }
}

/// Writes every queued body to `output` as a frame, until all senders are gone.
pub async fn write_output<W>(mut output: W, mut queue: mpsc::UnboundedReceiver<Vec<u8>>)
where
    W: AsyncWrite + Unpin,
{
    while let Some(body) = queue.recv().await {
        if let Err(e) = write_frame(&mut output, &body).await {
            tracing::error!("writing stdout failed: {e}");
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8]) -> Vec<Frame> {
        let mut reader = BufReader::new(input);
        let mut out = Vec::new();
        while let Some(f) = read_frame(&mut reader).await.unwrap() {
            out.push(f);
        }
        out
    }

    #[tokio::test]
    async fn reads_frames_and_recovers_from_garbage() {
        let input = b"Content-Length: 2\r\n\r\n{}garbage line\r\n\r\nContent-Length: x\r\n\r\nContent-Type: a\r\nContent-Length: 3\r\n\r\n[1]";
        assert_eq!(
            frames(input).await,
            vec![
                Frame::Body(b"{}".to_vec()),
                Frame::Malformed("not a header line: \"garbage line\"".to_owned()),
                Frame::Malformed("bad Content-Length \"x\"".to_owned()),
                Frame::Body(b"[1]".to_vec()),
            ]
        );
    }

    #[test]
    fn checks_bodies_like_tower_lsp_would() {
        assert_eq!(
            check(br#"{"jsonrpc":"2.0","id":1,"method":"shutdown"}"#),
            Verdict::Forward
        );
        assert_eq!(
            check(br#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#),
            Verdict::Forward
        );
        assert_eq!(
            check(br#"{"jsonrpc":"2.0","id":3,"result":null}"#),
            Verdict::Forward
        );
        let Verdict::Reject(e) = check(b"{not json") else {
            panic!()
        };
        assert_eq!(
            (e["error"]["code"].as_i64(), &e["id"]),
            (Some(-32700), &Value::Null)
        );
        let Verdict::Reject(e) = check(br#"{"jsonrpc":"2.0","id":"x","method":7}"#) else {
            panic!()
        };
        assert_eq!(
            (e["error"]["code"].as_i64(), &e["id"]),
            (Some(-32600), &json!("x"))
        );
        let Verdict::Reject(e) = check(b"\xff\xfe") else {
            panic!()
        };
        assert_eq!(e["error"]["code"].as_i64(), Some(-32700));
    }
}
