//! A fixture model server: real HTTP on 127.0.0.1, the three wire formats over SSE,
//! scripted turns, recorded requests, pairing checks, and faults on demand.
//!
//! It speaks raw HTTP and JSON and knows nothing of `agentls-model`, so that crate
//! can test against it. One server per test; it stops when dropped, and a drop
//! fails the test (panics) if any request broke the tool-call pairing rule, unless the
//! test took the violations with [`ModelServer::take_pairing_violations`].
//!
//! Endpoints, under [`ModelServer::url`] (`http://127.0.0.1:PORT/v1`):
//! `/chat/completions` (OpenAI chat), `/responses` (OpenAI Responses),
//! `/messages` (Anthropic), `/completions` (OpenAI's legacy completions, for code
//! completion: streamed when the body says `stream: true`, one JSON body otherwise;
//! [`ModelServer::calls`] counts them).
//!
//! ```
//! use agentls_testkit::model_server::{Fault, ModelServer, Turn};
//! use serde_json::json;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let server = ModelServer::start().await.unwrap();
//! // Turns come from files under fixtures/model-turns/ …
//! server.load_script("read_then_answer").unwrap();
//! // … or from code.
//! server.push_turn(Turn::text("Done.").tool_call("call_1", "grep", json!({"pattern": "x"})).usage(900, 512, 20));
//! // The next request meets a 429, the one after it a stream cut after 3 frames.
//! server.inject(Fault::RateLimit { retry_after_secs: 0.01 });
//! server.inject(Fault::CutAfterFrames(3));
//! assert_eq!(server.remaining_turns(), 3);
//! // Point a client at server.url(), then assert on server.requests().
//! # });
//! ```

mod pairing;
mod render;
mod script;
mod wire;

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use futures::SinkExt;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame as BodyFrame, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use render::Frame;
pub use script::{Fault, ScriptError, Turn, TurnEvent, TurnUsage, load_turns, turns_dir};
pub use wire::Wire;

/// A request as the server saw it.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    /// Wire format.
    pub wire: Wire,
    /// Request path.
    pub path: String,
    /// Headers, names lower-case.
    pub headers: Vec<(String, String)>,
    /// The JSON body.
    pub body: Value,
    /// The fault it met, if any.
    pub fault: Option<Fault>,
}

impl RecordedRequest {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct State {
    turns: std::collections::VecDeque<Turn>,
    faults: std::collections::VecDeque<Fault>,
    requests: Vec<RecordedRequest>,
    violations: Vec<String>,
}

type Shared = Arc<Mutex<State>>;

fn lock(s: &Shared) -> MutexGuard<'_, State> {
    // A panicking test thread must not hide the state from the drop check.
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// The server. Dropping it stops it.
pub struct ModelServer {
    addr: SocketAddr,
    state: Shared,
    shutdown: CancellationToken,
}

impl ModelServer {
    /// Starts a server on 127.0.0.1 with a random port (inside a tokio runtime).
    pub async fn start() -> io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let state = Shared::default();
        let shutdown = CancellationToken::new();
        tokio::spawn(accept_loop(listener, state.clone(), shutdown.clone()));
        Ok(Self {
            addr,
            state,
            shutdown,
        })
    }

    /// Base URL, `http://127.0.0.1:PORT/v1`.
    pub fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Queues a turn.
    pub fn push_turn(&self, turn: Turn) {
        lock(&self.state).turns.push_back(turn);
    }

    /// Queues the turns of `fixtures/model-turns/NAME.json`.
    pub fn load_script(&self, name: &str) -> Result<(), ScriptError> {
        let turns = load_turns(name)?;
        lock(&self.state).turns.extend(turns);
        Ok(())
    }

    /// Queues a fault for the next request (faults are met in order, one per request).
    pub fn inject(&self, fault: Fault) {
        lock(&self.state).faults.push_back(fault);
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.state).requests.clone()
    }

    /// How many requests of `wire` arrived so far.
    pub fn calls(&self, wire: Wire) -> usize {
        lock(&self.state)
            .requests
            .iter()
            .filter(|r| r.wire == wire)
            .count()
    }

    /// Drops the turns not served yet; returns how many there were.
    pub fn clear_turns(&self) -> usize {
        let mut s = lock(&self.state);
        let n = s.turns.len();
        s.turns.clear();
        n
    }

    /// Turns not served yet.
    pub fn remaining_turns(&self) -> usize {
        lock(&self.state).turns.len()
    }

    /// Pairing violations seen so far (the drop check fails on them).
    pub fn pairing_violations(&self) -> Vec<String> {
        lock(&self.state).violations.clone()
    }

    /// Takes the violations, for tests that send broken conversations on purpose.
    pub fn take_pairing_violations(&self) -> Vec<String> {
        std::mem::take(&mut lock(&self.state).violations)
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
        let violations = self.take_pairing_violations();
        if !violations.is_empty() && !std::thread::panicking() {
            panic!(
                "fixture model server: tool-call pairing broken:\n  {}",
                violations.join("\n  ")
            );
        }
    }
}

async fn accept_loop(listener: TcpListener, state: Shared, shutdown: CancellationToken) {
    loop {
        let stream = tokio::select! {
            () = shutdown.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => continue,
            },
        };
        let state = state.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| handle(req, state.clone()));
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                () = shutdown.cancelled() => {}
                _ = conn => {}
            }
        });
    }
}

type Body = BoxBody<Bytes, io::Error>;

fn full(status: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(
        Full::new(body.into())
            .map_err(|e: Infallible| match e {})
            .boxed(),
    );
    *r.status_mut() = status;
    r.headers_mut().insert(
        "content-type",
        hyper::header::HeaderValue::from_static("application/json"),
    );
    r
}

async fn handle(req: Request<Incoming>, state: Shared) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path().to_owned();
    let headers: Vec<(String, String)> = req
        .headers()
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let Some(wire) = Wire::from_path(&path) else {
        return Ok(full(
            StatusCode::NOT_FOUND,
            format!("{{\"error\":{{\"message\":\"no endpoint {path}\"}}}}"),
        ));
    };
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return Ok(full(
                StatusCode::BAD_REQUEST,
                format!("{{\"error\":{{\"message\":\"{e}\"}}}}"),
            ));
        }
    };
    let body: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            let msg = render::error_body(wire, 400, &format!("request body is not JSON: {e}"));
            return Ok(full(StatusCode::BAD_REQUEST, msg.to_string()));
        }
    };

    // A legacy completion answers in one JSON body unless asked to stream.
    let streamed = wire != Wire::Completions || body["stream"] == true;
    // Record, check pairing, and pick the fault and turn under one lock.
    let (fault, turn) = {
        let mut s = lock(&state);
        let problems = pairing::violations(wire, &body);
        let n = s.requests.len() + 1;
        s.violations.extend(
            problems
                .into_iter()
                .map(|p| format!("request #{n} ({path}): {p}")),
        );
        let fault = s.faults.pop_front();
        let consumes = matches!(fault, None | Some(Fault::MalformedToolCall));
        let turn = if consumes {
            s.turns.pop_front()
        } else {
            s.turns.front().cloned()
        };
        s.requests.push(RecordedRequest {
            wire,
            path: path.clone(),
            headers: headers.clone(),
            body,
            fault: fault.clone(),
        });
        (fault, turn)
    };

    let error = |status: u16, message: &str| {
        let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        full(code, render::error_body(wire, status, message).to_string())
    };
    let mut cut_after = None;
    let mut prefix = Vec::new();
    match &fault {
        Some(Fault::RateLimit { retry_after_secs }) => {
            let mut r = error(
                429,
                "Rate limit reached for requests. Please try again later.",
            );
            if let Ok(v) = hyper::header::HeaderValue::from_str(&retry_after_secs.to_string()) {
                r.headers_mut().insert("retry-after", v);
            }
            return Ok(r);
        }
        Some(Fault::Status { status, message }) => return Ok(error(*status, message)),
        Some(Fault::StatusWithHeader {
            status,
            message,
            header: (name, value),
        }) => {
            let mut r = error(*status, message);
            if let (Ok(n), Ok(v)) = (
                hyper::header::HeaderName::from_bytes(name.as_bytes()),
                hyper::header::HeaderValue::from_str(value),
            ) {
                r.headers_mut().insert(n, v);
            }
            return Ok(r);
        }
        Some(Fault::EchoKey) => {
            let key = headers
                .iter()
                .find(|(n, _)| n == "authorization" || n == "x-api-key")
                .map(|(_, v)| v.trim_start_matches("Bearer ").to_owned())
                .unwrap_or_default();
            return Ok(error(
                401,
                &format!(
                    "Incorrect API key provided: {key}. You can find your API key in your account settings."
                ),
            ));
        }
        Some(Fault::SlowFirstByte(d)) => tokio::time::sleep(*d).await,
        Some(Fault::CutAfterFrames(n)) => cut_after = Some(*n),
        Some(Fault::StreamError { message }) => prefix.push(render::stream_error(wire, message)),
        Some(Fault::MalformedToolCall) | None => {}
    }
    if !streamed
        && fault.is_none()
        && let Some(turn) = &turn
    {
        return Ok(full(
            StatusCode::OK,
            render::completion_body(turn).to_string(),
        ));
    }
    let frames = match (&fault, turn) {
        (Some(Fault::StreamError { .. }), _) => prefix,
        (_, Some(turn)) => {
            render::render(wire, &turn, matches!(fault, Some(Fault::MalformedToolCall)))
        }
        (_, None) => {
            let n = lock(&state).requests.len();
            return Ok(error(
                400,
                &format!("fixture model server: no scripted turn left for request #{n}"),
            ));
        }
    };
    Ok(sse(frames, cut_after))
}

/// A streaming SSE response; with `cut_after`, the connection breaks after that many
/// SSE frames.
fn sse(frames: Vec<Frame>, cut_after: Option<usize>) -> Response<Body> {
    let (mut tx, rx) = futures::channel::mpsc::channel::<Result<BodyFrame<Bytes>, io::Error>>(1);
    tokio::spawn(async move {
        let mut sent = 0;
        for f in frames {
            if cut_after.is_some_and(|n| sent >= n) {
                break;
            }
            match f {
                Frame::Delay(d) => tokio::time::sleep(d).await,
                Frame::Sse(s) => {
                    if tx.send(Ok(BodyFrame::data(Bytes::from(s)))).await.is_err() {
                        return;
                    }
                    sent += 1;
                }
            }
        }
        if cut_after.is_some() {
            // An error body makes hyper drop the connection without the final chunk.
            let _ = tx
                .send(Err(io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    "fixture: stream cut",
                )))
                .await;
        }
    });
    let mut r = Response::new(BodyExt::boxed(StreamBody::new(rx)));
    let h = r.headers_mut();
    h.insert(
        "content-type",
        hyper::header::HeaderValue::from_static("text/event-stream"),
    );
    h.insert(
        "cache-control",
        hyper::header::HeaderValue::from_static("no-cache"),
    );
    r
}

#[cfg(test)]
mod tests {
    use std::panic::AssertUnwindSafe;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// A raw HTTP/1.1 POST: the server must not need any particular client.
    async fn post(server: &ModelServer, path: &str, body: &str) -> String {
        let mut s = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        let req = format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAuthorization: Bearer k\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes()).await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn serves_turns_as_sse_and_records_requests() {
        let server = ModelServer::start().await.unwrap();
        assert!(server.url().starts_with("http://127.0.0.1:"));
        server.push_turn(Turn::text("hi there").usage(10, 4, 2));
        let out = post(
            &server,
            "/v1/chat/completions",
            r#"{"messages": [{"role": "user", "content": "x"}]}"#,
        )
        .await;
        assert!(out.starts_with("HTTP/1.1 200"), "{out}");
        assert!(out.contains("content-type: text/event-stream"), "{out}");
        assert!(out.contains(r#""content":"hi there""#), "{out}");
        assert!(out.contains(r#""cached_tokens":4"#), "{out}");
        assert!(out.contains("data: [DONE]"), "{out}");
        let reqs = server.requests();
        assert_eq!(reqs.len(), 1);
        assert_eq!(reqs[0].wire, Wire::Chat);
        assert_eq!(reqs[0].header("authorization"), Some("Bearer k"));
        assert_eq!(reqs[0].body["messages"][0]["content"], "x");
        assert_eq!(server.remaining_turns(), 0);
    }

    #[tokio::test]
    async fn legacy_completions_stream_or_answer_whole_and_are_counted() {
        let server = ModelServer::start().await.unwrap();
        server.push_turn(Turn::text("a + b").usage(7, 0, 3));
        server.push_turn(Turn::text("a - b"));
        let out = post(
            &server,
            "/v1/completions",
            r#"{"prompt": "fn f() {", "suffix": "}", "stream": true}"#,
        )
        .await;
        assert!(out.contains("content-type: text/event-stream"), "{out}");
        assert!(out.contains(r#""text":"a + b""#), "{out}");
        assert!(out.contains(r#""finish_reason":"stop""#), "{out}");
        assert!(out.contains("data: [DONE]"), "{out}");
        let out = post(
            &server,
            "/v1/completions",
            r#"{"prompt": "x", "suffix": ""}"#,
        )
        .await;
        assert!(out.contains("content-type: application/json"), "{out}");
        assert!(out.contains(r#""text":"a - b""#), "{out}");
        assert_eq!(server.calls(Wire::Completions), 2);
        assert_eq!(server.calls(Wire::Chat), 0);
        assert_eq!(server.requests()[0].body["suffix"], "}");
    }

    #[tokio::test]
    async fn errors_for_unknown_paths_missing_turns_and_injected_statuses() {
        let server = ModelServer::start().await.unwrap();
        assert!(
            post(&server, "/v1/embeddings", "{}")
                .await
                .starts_with("HTTP/1.1 404")
        );
        let out = post(&server, "/v1/messages", "{}").await;
        assert!(
            out.starts_with("HTTP/1.1 400") && out.contains("no scripted turn left"),
            "{out}"
        );
        server.inject(Fault::RateLimit {
            retry_after_secs: 2.0,
        });
        let out = post(&server, "/v1/responses", "{}").await;
        assert!(
            out.starts_with("HTTP/1.1 429") && out.contains("retry-after: 2"),
            "{out}"
        );
    }

    #[tokio::test]
    async fn scripts_load_from_the_fixtures_directory() {
        let server = ModelServer::start().await.unwrap();
        server.load_script("parallel_reads").unwrap();
        assert_eq!(server.remaining_turns(), 2);
        assert!(
            server
                .load_script("no_such_script")
                .unwrap_err()
                .to_string()
                .contains("no_such_script.json")
        );
        for entry in std::fs::read_dir(turns_dir()).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "json") {
                let name = path.file_stem().unwrap().to_str().unwrap().to_owned();
                assert!(!load_turns(&name).unwrap().is_empty(), "{name} is empty");
            }
        }
    }

    #[tokio::test]
    async fn dropping_fails_the_test_when_pairing_broke() {
        let server = ModelServer::start().await.unwrap();
        server.push_turn(Turn::text("ok"));
        let body = r#"{"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}]}]}"#;
        post(&server, "/v1/messages", body).await;
        assert_eq!(
            server.pairing_violations(),
            ["request #1 (/v1/messages): tool call \"t1\" has no result"]
        );
        let dropped = std::panic::catch_unwind(AssertUnwindSafe(|| drop(server)));
        let message = dropped.unwrap_err();
        let message = message.downcast_ref::<String>().unwrap();
        assert!(
            message.contains("tool-call pairing broken") && message.contains("t1"),
            "{message}"
        );
    }
}
