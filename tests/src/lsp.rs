//! A small, synchronous LSP client that drives a real server process over stdio.
//!
//! A reader thread parses `Content-Length` frames from the server's stdout; anything that
//! is not a well-formed frame fails the test (it would mean something wrote to stdout
//! behind the protocol's back). Requests from the server are answered by a closure, so a
//! test can play an editor that accepts or rejects edits.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

/// How many of the server's last stderr lines are kept, to show when a test fails.
const STDERR_TAIL_LINES: usize = 400;

/// How long to wait for any one message before failing.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(20);

/// Answers a request the server sends to the client: `(method, params, outbox) ->
/// result`. Messages pushed to the outbox are sent before the answer, as an editor sends
/// the `didChange` of an edit before answering `workspace/applyEdit`.
pub type RequestHandler =
    Box<dyn FnMut(&str, &Value, &mut Vec<Value>) -> Result<Value, Value> + Send>;

/// A running server and the client side of its stdio.
pub struct LspClient {
    child: Child,
    stdin: Option<ChildStdin>,
    incoming: Receiver<anyhow::Result<Value>>,
    next_id: i64,
    /// Notifications received from the server, oldest first, not yet taken.
    pub notifications: VecDeque<Value>,
    /// Error responses that answer no request of ours (the server could not parse what
    /// we sent, so it answered with `id: null` or an id we never used).
    pub orphan_errors: Vec<Value>,
    /// Every request the server sent, in order, with the answer given.
    pub server_requests: Vec<(Value, Result<Value, Value>)>,
    on_request: RequestHandler,
    /// How long to wait for one message.
    pub timeout: Duration,
    /// Ids of requests sent with [`LspClient::send_request`] not answered yet, and
    /// answers to them that arrived while waiting for something else.
    outstanding: std::collections::HashSet<i64>,
    early: std::collections::HashMap<i64, Value>,
    /// The server's last stderr lines. They are printed only when the test fails, so a
    /// CI log holds the failing test's server log and not every passing test's.
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
}

impl LspClient {
    /// Starts `bin` with `args` and extra environment variables.
    pub fn start(bin: &Path, args: &[&str], envs: &[(&str, &str)]) -> anyhow::Result<Self> {
        let mut cmd = Command::new(bin);
        cmd.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let mut child = cmd
            .spawn()
            .with_context(|| format!("cannot start {}", bin.display()))?;
        let stderr = child.stderr.take().context("no stderr")?;
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let tail = Arc::clone(&stderr_tail);
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stderr);
            let mut line = Vec::new();
            // Bytes, not `lines()`: a log line need not be UTF-8, and stopping early
            // would block the server on a full pipe.
            while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
                let text = String::from_utf8_lossy(&line).trim_end().to_owned();
                line.clear();
                let Ok(mut t) = tail.lock() else { return };
                if t.len() == STDERR_TAIL_LINES {
                    t.pop_front();
                }
                t.push_back(text);
            }
        });
        let stdin = child.stdin.take().context("no stdin")?;
        let stdout = child.stdout.take().context("no stdout")?;
        let (tx, incoming) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                match read_frame(&mut reader) {
                    Ok(Some(v)) => {
                        if tx.send(Ok(v)).is_err() {
                            return;
                        }
                    }
                    Ok(None) => return,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                }
            }
        });
        Ok(Self {
            child,
            stdin: Some(stdin),
            incoming,
            next_id: 1,
            notifications: VecDeque::new(),
            server_requests: Vec::new(),
            orphan_errors: Vec::new(),
            on_request: Box::new(|_, _, _| Ok(Value::Null)),
            timeout: DEFAULT_TIMEOUT,
            outstanding: Default::default(),
            early: Default::default(),
            stderr_tail,
        })
    }

    /// The server's stderr so far (its last lines), for assertions on what it logged.
    pub fn stderr_tail(&self) -> String {
        self.stderr_tail
            .lock()
            .map(|t| t.iter().cloned().collect::<Vec<_>>().join("\n"))
            .unwrap_or_default()
    }

    /// The server's process id (to read its memory use, say).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Replaces the closure that answers the server's requests.
    pub fn on_request(
        &mut self,
        f: impl FnMut(&str, &Value, &mut Vec<Value>) -> Result<Value, Value> + Send + 'static,
    ) {
        self.on_request = Box::new(f);
    }

    /// Sends `initialize` with `capabilities` (and extra params merged in), then
    /// `initialized`; returns the server's `InitializeResult`.
    pub fn initialize(&mut self, capabilities: Value, extra: Value) -> anyhow::Result<Value> {
        let mut params = json!({ "processId": null, "capabilities": capabilities });
        if let (Some(p), Value::Object(extra)) = (params.as_object_mut(), extra) {
            p.extend(extra);
        }
        let result = self.request_ok("initialize", params)?;
        self.notify("initialized", json!({}))?;
        Ok(result)
    }

    /// Sends a request and waits for its response: `Ok(Ok(result))` or `Ok(Err(error))`.
    pub fn request(&mut self, method: &str, params: Value) -> anyhow::Result<Result<Value, Value>> {
        let id = self.next_id;
        self.next_id += 1;
        // JSON-RPC lets a request without parameters omit them; servers differ on `null`.
        let mut msg = json!({ "jsonrpc": "2.0", "id": id, "method": method });
        if !params.is_null() {
            msg["params"] = params;
        }
        self.send(&msg)?;
        self.wait_response(id, method)
    }

    /// Like [`LspClient::request`], failing on an error response.
    pub fn request_ok(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        match self.request(method, params)? {
            Ok(v) => Ok(v),
            Err(e) => bail!("{method} failed: {e}"),
        }
    }

    /// Sends a notification.
    pub fn notify(&mut self, method: &str, params: Value) -> anyhow::Result<()> {
        let mut msg = json!({ "jsonrpc": "2.0", "method": method });
        if !params.is_null() {
            msg["params"] = params;
        }
        self.send(&msg)
    }

    /// Sends a message.
    pub fn send(&mut self, msg: &Value) -> anyhow::Result<()> {
        let body = serde_json::to_vec(msg)?;
        let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        frame.extend(body);
        self.send_raw(&frame)
    }

    /// Writes bytes as they are, framing or not: for malformed-input tests.
    pub fn send_raw(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        let stdin = self.stdin.as_mut().context("stdin already closed")?;
        stdin.write_all(bytes)?;
        stdin.flush()?;
        Ok(())
    }

    /// Waits for the response with `id`, handling everything that arrives before it
    /// (answers to other requests sent with [`LspClient::send_request`] are kept for
    /// [`LspClient::wait_response_to`]).
    fn wait_response(&mut self, id: i64, method: &str) -> anyhow::Result<Result<Value, Value>> {
        let deadline = Instant::now() + self.timeout;
        let answer = |msg: &Value| match msg.get("error") {
            Some(error) => Err(error.clone()),
            None => Ok(msg.get("result").cloned().unwrap_or(Value::Null)),
        };
        if let Some(msg) = self.early.remove(&id) {
            return Ok(answer(&msg));
        }
        loop {
            let msg = self
                .next_message(deadline)
                .with_context(|| format!("waiting for {method}"))?;
            if msg.get("method").is_none() {
                let got = msg.get("id").and_then(Value::as_i64);
                if got == Some(id) {
                    self.outstanding.remove(&id);
                    return Ok(answer(&msg));
                }
                if let Some(other) = got.filter(|g| self.outstanding.remove(g)) {
                    self.early.insert(other, msg);
                    continue;
                }
            }
            self.dispatch(msg)?;
        }
    }

    /// Waits for the answer to a request sent with [`LspClient::send_request`].
    pub fn wait_response_to(&mut self, id: i64) -> anyhow::Result<Result<Value, Value>> {
        self.wait_response(id, &format!("the answer to request {id}"))
    }

    /// Waits for a notification with `method` (taking it out of the queue), handling
    /// everything else that arrives meanwhile.
    pub fn wait_notification(&mut self, method: &str) -> anyhow::Result<Value> {
        let deadline = Instant::now() + self.timeout;
        loop {
            if let Some(at) = self
                .notifications
                .iter()
                .position(|n| n["method"] == method)
            {
                return Ok(self.notifications.remove(at).unwrap_or(Value::Null));
            }
            let msg = self
                .next_message(deadline)
                .with_context(|| format!("waiting for {method}"))?;
            self.dispatch(msg)?;
        }
    }

    /// Handles what arrives until `deadline` or the first response, which it returns
    /// (`None` when the deadline passed first): for tests that act on a clock of their
    /// own while a request is in flight.
    pub fn pump(&mut self, deadline: Instant) -> anyhow::Result<Option<Value>> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let msg = match self.incoming.recv_timeout(left) {
                Ok(msg) => msg?,
                Err(RecvTimeoutError::Timeout) => return Ok(None),
                Err(RecvTimeoutError::Disconnected) => bail!("the server closed its stdout"),
            };
            if msg.get("method").is_none()
                && msg.get("error").is_none_or(|_| msg["id"] != Value::Null)
            {
                return Ok(Some(msg));
            }
            self.dispatch(msg)?;
        }
    }

    /// Sends a request without waiting for its answer; returns its id.
    pub fn send_request(&mut self, method: &str, params: Value) -> anyhow::Result<i64> {
        let id = self.next_id;
        self.next_id += 1;
        self.outstanding.insert(id);
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))?;
        Ok(id)
    }

    fn next_message(&mut self, deadline: Instant) -> anyhow::Result<Value> {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.incoming.recv_timeout(left) {
            Ok(msg) => msg,
            Err(RecvTimeoutError::Timeout) => bail!("timed out after {:?}", self.timeout),
            Err(RecvTimeoutError::Disconnected) => bail!("the server closed its stdout"),
        }
    }

    fn dispatch(&mut self, msg: Value) -> anyhow::Result<()> {
        match (msg.get("id"), msg.get("method").and_then(Value::as_str)) {
            (Some(id), Some(method)) => {
                let mut outbox = Vec::new();
                let answer = (self.on_request)(method, &msg["params"], &mut outbox);
                for message in &outbox {
                    self.send(message)?;
                }
                let reply = match &answer {
                    Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
                    Err(error) => json!({ "jsonrpc": "2.0", "id": id, "error": error }),
                };
                self.server_requests.push((msg.clone(), answer));
                self.send(&reply)
            }
            (None, Some(_)) => {
                self.notifications.push_back(msg);
                Ok(())
            }
            (Some(_), None) if msg.get("error").is_some() => {
                self.orphan_errors.push(msg);
                Ok(())
            }
            _ => bail!("unexpected response from the server: {msg}"),
        }
    }

    /// `shutdown`, then `exit`; waits for the process, with stdin still open as an
    /// editor would keep it, and returns its status.
    pub fn shutdown(mut self) -> anyhow::Result<ExitStatus> {
        self.request_ok("shutdown", Value::Null)?;
        self.notify("exit", Value::Null)?;
        self.wait_for_process()
    }

    /// Closes stdin and waits (bounded) for the process to end.
    pub fn wait_exit(mut self) -> anyhow::Result<ExitStatus> {
        drop(self.stdin.take());
        self.wait_for_process()
    }

    fn wait_for_process(&mut self) -> anyhow::Result<ExitStatus> {
        let deadline = Instant::now() + self.timeout;
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                bail!("server did not exit within {:?}", self.timeout);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for LspClient {
    fn drop(&mut self) {
        // A test that failed half-way must not leave a server behind.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if std::thread::panicking() {
            // The test harness captures this and prints it with the failure. INFO and
            // DEBUG lines come as window/logMessage, the rest on stderr.
            let logged: Vec<String> = self
                .notifications
                .iter()
                .filter(|n| n["method"] == "window/logMessage")
                .filter_map(|n| n["params"]["message"].as_str().map(str::to_owned))
                .collect();
            let from = logged.len().saturating_sub(STDERR_TAIL_LINES);
            eprintln!(
                "--- the server's log messages (last {STDERR_TAIL_LINES}):\n{}\n--- its stderr (last {STDERR_TAIL_LINES} lines):\n{}",
                logged[from..].join("\n"),
                self.stderr_tail()
            );
        }
    }
}

/// Reads one frame; `None` at end of stream. Public for tests that drive a server's
/// stdio themselves (one that must not read for a while, say).
pub fn read_frame(reader: &mut impl BufRead) -> anyhow::Result<Option<Value>> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            break;
        }
        match line.split_once(':') {
            Some((name, value)) if name.eq_ignore_ascii_case("content-length") => {
                length = Some(value.trim().parse::<usize>()?);
            }
            Some((name, _)) if name.eq_ignore_ascii_case("content-type") => {}
            _ => bail!("not an LSP header on the server's stdout: {line:?}"),
        }
    }
    let length = length.context("frame without Content-Length")?;
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(Some(serde_json::from_slice(&body)?))
}

/// Builds `didChange` content changes: `(start_line, start_char, end_line, end_char, text)`.
pub fn changes(edits: &[(u32, u32, u32, u32, &str)]) -> Value {
    Value::Array(
        edits
            .iter()
            .map(|&(l0, c0, l1, c1, text)| {
                json!({
                    "range": {
                        "start": { "line": l0, "character": c0 },
                        "end": { "line": l1, "character": c1 }
                    },
                    "text": text
                })
            })
            .collect(),
    )
}
