//! The stdio transport in front of tower-lsp.
//!
//! tower-lsp 0.20 reads stdin through a `FramedRead`, which ends its stream after the
//! first decode error: one malformed frame (bad JSON, or JSON that is not JSON-RPC) and
//! the server stops reading. So agentls reads frames itself, forwards only those that
//! tower-lsp can decode, and answers the others with the JSON-RPC error the spec asks
//! for (`-32700` parse error, `-32600` invalid request). The answers are written between
//! whole frames of tower-lsp's own output, so stdout always stays well framed.

mod framing;

pub use framing::{Decoder, Frame};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tower_lsp::jsonrpc;
use tower_lsp::lsp_types as lsp;

/// How many whole frames may wait for stdout. When a client stops reading, the queue
/// fills, the pumps stop, tower-lsp stops taking requests, and stdin is no longer read:
/// backpressure reaches the client instead of memory growing. Dropping `$/progress` or
/// log notifications instead was rejected: a lost `end` leaves a progress bar spinning
/// forever and a lost log line hides the reason of a refusal, while a client that stops
/// reading gains nothing from the server reading on. Frames are whole messages, so this
/// bounds the queue at this many of the largest answers (a `viewFileText` of a big file).
pub const OUTGOING_FRAMES: usize = 64;

/// The notification the transport sends to the server in place of a `didChange` whose
/// parameters do not parse, so that the document is marked out of sync in arrival order
/// (tower-lsp would drop it without a word). Clients cannot send it themselves.
pub const INVALID_DID_CHANGE: &str = "agentls/internal/invalidDidChange";

/// The key under `capabilities.experimental` of the `initialize` result holding
/// standard capabilities newer than lsp-types 0.94 (LSP 3.18's
/// `inlineCompletionProvider`): [`pump_server_output`] moves each up into
/// `capabilities`, where clients look for them, and drops the key. The handler decides
/// what to advertise; the transport only puts it where the types could not.
pub const LIFTED: &str = "agentls.lift";

/// Moves the capabilities under [`LIFTED`] of an `initialize` result into
/// `capabilities`; any other body is returned as it is.
pub fn lift_capabilities(body: Vec<u8>) -> Vec<u8> {
    // Only the initialize result holds the key: skip parsing everything else.
    let needle = format!("\"{LIFTED}\"");
    if !body.windows(needle.len()).any(|w| w == needle.as_bytes()) {
        return body;
    }
    let Ok(mut value) = serde_json::from_slice::<Value>(&body) else {
        return body;
    };
    let Some(caps) = value
        .pointer_mut("/result/capabilities")
        .and_then(Value::as_object_mut)
    else {
        return body;
    };
    let lifted = caps
        .get_mut("experimental")
        .and_then(Value::as_object_mut)
        .and_then(|e| e.remove(LIFTED));
    let Some(Value::Object(lifted)) = lifted else {
        return body;
    };
    for (key, v) in lifted {
        caps.insert(key, v);
    }
    serde_json::to_vec(&value).unwrap_or(body)
}

/// The parameters of [`INVALID_DID_CHANGE`].
#[derive(Debug, Clone, serde::Serialize, Deserialize)]
pub struct InvalidDidChange {
    /// `params.textDocument.uri`, when it could be read.
    pub uri: Option<String>,
    /// What was wrong.
    pub reason: String,
}

/// Reads bytes into `decoder` until it yields a frame; `None` at end of input.
async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
    decoder: &mut Decoder,
    chunk: &mut [u8],
) -> std::io::Result<Option<Frame>> {
    loop {
        if let Some(frame) = decoder.next_frame() {
            return Ok(Some(frame));
        }
        let n = reader.read(chunk).await?;
        if n == 0 {
            return Ok(decoder.finish());
        }
        decoder.push(&chunk[..n]);
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
    /// Forward this body in its place.
    Rewrite(Vec<u8>),
    /// A notification nobody may act on: log it and drop it.
    Drop(&'static str),
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
    let id = match value.get("id") {
        Some(id @ (Value::Number(_) | Value::String(_))) => Some(id.clone()),
        _ => None,
    };
    if !is_json_rpc(&value) {
        return Verdict::Reject(error_response(
            id.unwrap_or(Value::Null),
            -32600,
            "Invalid request: not a JSON-RPC 2.0 message",
        ));
    }
    let method = value.get("method").and_then(Value::as_str);
    match (method, id) {
        // tower-lsp drops its answer to an unknown `$/` request (the spec lets a server
        // ignore `$/` notifications, not leave requests unanswered), and we know none.
        (Some(m), Some(id)) if m.starts_with("$/") || m == INVALID_DID_CHANGE => Verdict::Reject(
            error_response(id, -32601, &format!("Method not found: {m}")),
        ),
        (Some(INVALID_DID_CHANGE), None) => Verdict::Drop("the server's own notification"),
        (Some("textDocument/didChange"), None) => check_did_change(&value),
        _ => Verdict::Forward,
    }
}

/// A `didChange` tower-lsp cannot decode becomes [`INVALID_DID_CHANGE`].
fn check_did_change(value: &Value) -> Verdict {
    let params = value.get("params").unwrap_or(&Value::Null);
    let Err(e) = lsp::DidChangeTextDocumentParams::deserialize(params) else {
        return Verdict::Forward;
    };
    let uri = params
        .pointer("/textDocument/uri")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let notice = InvalidDidChange {
        uri,
        reason: format!("invalid didChange parameters: {e}"),
    };
    let body = json!({ "jsonrpc": "2.0", "method": INVALID_DID_CHANGE, "params": notice });
    Verdict::Rewrite(body.to_string().into_bytes())
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
/// answers for rejected frames to `rejects`. Returns at end of input. Waiting on either
/// side stops the reading of `input`: that is the backpressure [`OUTGOING_FRAMES`] wants.
pub async fn pump_input<R, W>(mut input: R, mut to_server: W, rejects: mpsc::Sender<Vec<u8>>)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut decoder = Decoder::new();
    let mut chunk = vec![0; 64 * 1024];
    loop {
        let frame = match read_frame(&mut input, &mut decoder, &mut chunk).await {
            Ok(Some(frame)) => frame,
            Ok(None) => return,
            Err(e) => {
                tracing::error!("reading stdin failed: {e}");
                return;
            }
        };
        let reject = match frame {
            Frame::Body(body) => {
                let forward = match check(&body) {
                    Verdict::Forward => body,
                    Verdict::Rewrite(new) => new,
                    Verdict::Drop(why) => {
                        tracing::warn!("dropped a client message: {why}");
                        continue;
                    }
                    Verdict::Reject(response) => {
                        tracing::warn!(
                            "refused a client message: {}",
                            response["error"]["message"].as_str().unwrap_or_default()
                        );
                        if rejects
                            .send(response.to_string().into_bytes())
                            .await
                            .is_err()
                        {
                            return;
                        }
                        continue;
                    }
                };
                if write_frame(&mut to_server, &forward).await.is_err() {
                    return; // tower-lsp has stopped.
                }
                if is_exit(&forward) {
                    // tower-lsp notices `exit` only when the next message arrives
                    // (tower-lsp issue 239); ending its input makes it stop now.
                    return;
                }
                continue;
            }
            Frame::Malformed { reason, id } => {
                tracing::warn!(%id, "malformed frame: {reason}");
                error_response(id, -32700, &format!("Parse error: {reason}"))
            }
        };
        if rejects.send(reject.to_string().into_bytes()).await.is_err() {
            return;
        }
    }
}

/// Forwards tower-lsp's frames (`from_server`) into `out`, the same queue that carries
/// the answers to rejected frames, so that one writer sees whole frames in order.
pub async fn pump_server_output<R>(mut from_server: R, out: mpsc::Sender<Vec<u8>>)
where
    R: AsyncRead + Unpin,
{
    let mut decoder = Decoder::new();
    let mut chunk = vec![0; 64 * 1024];
    loop {
        match read_frame(&mut from_server, &mut decoder, &mut chunk).await {
            Ok(Some(Frame::Body(body))) => {
                if out.send(lift_capabilities(body)).await.is_err() {
                    return;
                }
            }
            Ok(Some(Frame::Malformed { reason, .. })) => {
                tracing::error!("tower-lsp wrote a bad frame: {reason}")
            }
            Ok(None) | Err(_) => return,
        }
    }
}

/// Writes every queued body to `output` as a frame, until all senders are gone.
pub async fn write_output<W>(mut output: W, mut queue: mpsc::Receiver<Vec<u8>>)
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
    use proptest::prelude::*;

    use super::*;

    #[tokio::test]
    async fn reads_frames_through_any_reader() {
        let input: &[u8] =
            b"\r\nContent-Length: 2\r\n\r\n{}garbage\r\nContent-Length: 3\r\n\r\n[1]";
        let (mut decoder, mut chunk) = (Decoder::new(), [0u8; 3]);
        let mut reader = input;
        let mut out = Vec::new();
        while let Some(f) = read_frame(&mut reader, &mut decoder, &mut chunk)
            .await
            .unwrap()
        {
            out.push(f);
        }
        assert_eq!(out.len(), 3, "{out:?}");
        assert_eq!(out[0], Frame::Body(b"{}".to_vec()));
        assert!(matches!(out[1], Frame::Malformed { .. }));
        assert_eq!(out[2], Frame::Body(b"[1]".to_vec()));
    }

    #[test]
    fn dollar_requests_are_refused_and_dollar_notifications_pass() {
        let Verdict::Reject(e) = check(br#"{"jsonrpc":"2.0","id":4,"method":"$/nope"}"#) else {
            panic!()
        };
        assert_eq!(
            (e["error"]["code"].as_i64(), &e["id"]),
            (Some(-32601), &json!(4))
        );
        assert_eq!(
            check(br#"{"jsonrpc":"2.0","method":"$/nope","params":{}}"#),
            Verdict::Forward
        );
    }

    #[test]
    fn lifted_capabilities_move_into_capabilities() {
        let body = json!({"jsonrpc": "2.0", "id": 0, "result": {"capabilities": {
            "definitionProvider": true,
            "experimental": {"agent": {"version": 1}, (LIFTED): {"inlineCompletionProvider": true}}
        }}});
        let out: Value =
            serde_json::from_slice(&lift_capabilities(body.to_string().into_bytes())).unwrap();
        let caps = &out["result"]["capabilities"];
        assert_eq!(caps["inlineCompletionProvider"], true);
        assert_eq!(caps["definitionProvider"], true);
        assert_eq!(caps["experimental"], json!({"agent": {"version": 1}}));
        let other = br#"{"jsonrpc":"2.0","id":1,"result":null}"#.to_vec();
        assert_eq!(lift_capabilities(other.clone()), other);
    }

    #[test]
    fn a_did_change_of_the_wrong_shape_is_rewritten() {
        let body = br#"{"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///a.rs","version":2},"contentChanges":{"text":1}}}"#;
        let Verdict::Rewrite(new) = check(body) else {
            panic!()
        };
        let new: Value = serde_json::from_slice(&new).unwrap();
        assert_eq!(new["method"], INVALID_DID_CHANGE);
        assert_eq!(new["params"]["uri"], "file:///a.rs");
        let good = br#"{"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///a.rs","version":2},"contentChanges":[{"text":"x"}]}}"#;
        assert_eq!(check(good), Verdict::Forward);
        // The client cannot send the server's own notification.
        assert!(matches!(
            check(&new.to_string().into_bytes()),
            Verdict::Drop(_)
        ));
    }

    /// How the one bad frame of a test stream is broken.
    #[derive(Debug, Clone)]
    enum Corruption {
        TooShort(usize),
        TooLong(usize),
        TwoLengths(usize),
        Garbage(String),
    }

    fn body_strategy() -> impl Strategy<Value = String> {
        (
            0..1000i64,
            prop_oneof![
                "[a-zA-Z0-9 :{}\\[\\],\"\\\\é😀\r\n-]{0,60}",
                Just("x}Content-Length: 12\r\n\r\n{}".to_owned())
            ],
        )
            .prop_map(|(id, text)| {
                json!({ "jsonrpc": "2.0", "id": id, "method": "m", "params": { "text": text } })
                    .to_string()
            })
    }

    fn corruption() -> impl Strategy<Value = Corruption> {
        prop_oneof![
            (0..10_000usize).prop_map(Corruption::TooShort),
            (1..400usize).prop_map(Corruption::TooLong),
            (0..400usize).prop_map(Corruption::TwoLengths),
            "[a-z :{}\"\r\n]{1,40}".prop_map(Corruption::Garbage),
        ]
    }

    fn encode(body: &str) -> Vec<u8> {
        format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
    }

    fn encode_bad(body: &str, how: &Corruption) -> Vec<u8> {
        let len = body.len();
        match how {
            Corruption::TooShort(k) => format!("Content-Length: {}\r\n\r\n{body}", k % len),
            Corruption::TooLong(k) => format!("Content-Length: {}\r\n\r\n{body}", len + k),
            Corruption::TwoLengths(other) => {
                format!("Content-Length: {len}\r\nContent-Length: {other}\r\n\r\n{body}")
            }
            Corruption::Garbage(g) => g.clone(),
        }
        .into_bytes()
    }

    proptest! {
        /// Valid frames around one broken frame, cut at random read boundaries: every
        /// valid frame comes out exactly once, in order.
        #[test]
        fn one_bad_frame_costs_only_itself(
            before in prop::collection::vec(body_strategy(), 0..4),
            bad in body_strategy(),
            how in corruption(),
            after in prop::collection::vec(body_strategy(), 1..5),
            cuts in prop::collection::vec(1..200usize, 1..50),
        ) {
            let mut input = Vec::new();
            for b in &before {
                input.extend(encode(b));
            }
            input.extend(encode_bad(&bad, &how));
            for b in &after {
                input.extend(encode(b));
            }
            let mut decoder = Decoder::new();
            let mut frames = Vec::new();
            let mut rest = &input[..];
            let mut cut = cuts.iter().cycle();
            while !rest.is_empty() {
                let n = (*cut.next().unwrap_or(&1)).min(rest.len());
                decoder.push(&rest[..n]);
                rest = &rest[n..];
                while let Some(f) = decoder.next_frame() {
                    frames.push(f);
                }
            }
            frames.extend(decoder.finish());
            // Bodies that parse: the cut body of a too-short frame does not.
            let decoded: Vec<String> = frames
                .iter()
                .filter_map(|f| match f {
                    Frame::Body(b) if serde_json::from_slice::<Value>(b).is_ok() => {
                        Some(String::from_utf8_lossy(b).into_owned())
                    }
                    _ => None,
                })
                .collect();
            let expected: Vec<String> = before.iter().chain(&after).cloned().collect();
            prop_assert_eq!(decoded, expected, "{:?}", frames);
            // The bad frame was reported (garbage may be a harmless unknown header line).
            let reported = frames.iter().any(|f| {
                !matches!(f, Frame::Body(b) if serde_json::from_slice::<Value>(b).is_ok())
            });
            prop_assert!(reported || matches!(how, Corruption::Garbage(_)), "{:?}", frames);
        }
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
