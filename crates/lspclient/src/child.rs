//! One language server process and the LSP conversation with it: initialize, keep the
//! agent's files open with their live text, collect `publishDiagnostics`.
//!
//! The child runs in its own process group, killed whole when the [`Child`] is dropped
//! (kill_on_drop alone would leave its own children behind), and asks the kernel to kill
//! it when the thread that spawned it exits (`PR_SET_PDEATHSIG`): a server killed with
//! SIGKILL leaves no language server behind. Spawn from an async task (a runtime worker
//! lives as long as the runtime), never from a blocking-pool thread, which exits when
//! idle.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lsp_types as lsp;
use serde_json::{Value, json};
use tokio::io::BufReader;
use tokio::process::ChildStdin;
use tokio::sync::{Notify, oneshot};

use crate::config::ServerSpec;
use crate::framing::{read_message, write_message};
use crate::{Problem, Severity};

/// What a child last published for one file.
#[derive(Debug, Clone, Default)]
struct Published {
    /// The document version the server said it checked, when it says.
    version: Option<i32>,
    /// How many publishes for this file arrived so far (to tell a fresh one).
    count: u64,
    problems: Vec<Problem>,
}

#[derive(Default)]
struct Shared {
    published: Mutex<HashMap<PathBuf, Published>>,
    pending: Mutex<HashMap<i64, oneshot::Sender<Value>>>,
    /// Fires on every publish, every change of `loading`, and when the child's output
    /// ends.
    changed: Notify,
    dead: AtomicBool,
    /// The server said it is still loading the workspace (rust-analyzer's
    /// `experimental/serverStatus` with `quiescent: false`): its diagnostics until then
    /// speak of a half-loaded project.
    loading: AtomicBool,
    /// What the server said when it reported its health as `error`, until it reports
    /// otherwise.
    failed: Mutex<Option<String>>,
}

impl Shared {
    fn lock_published(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Published>> {
        self.published.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A running language server.
pub struct Child {
    name: String,
    language_id: String,
    pid: Option<u32>,
    process: Mutex<Option<tokio::process::Child>>,
    stdin: tokio::sync::Mutex<ChildStdin>,
    shared: Arc<Shared>,
    next_id: AtomicI64,
    /// The version sent last per open file.
    open: tokio::sync::Mutex<HashMap<PathBuf, i32>>,
    /// The server answers `textDocument/diagnostic` (LSP 3.17 pull diagnostics): a check
    /// asks for the text's diagnostics instead of waiting for a publish, which a server
    /// may skip when nothing changed (rust-analyzer does).
    pull: AtomicBool,
}

impl std::fmt::Debug for Child {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Child")
            .field("name", &self.name)
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if let Some(pid) = self.pid.and_then(|p| i32::try_from(p).ok()) {
            // SAFETY: killpg only sends a signal; the group is the child's own
            // (process_group(0) made it its leader), so nothing else is hit.
            unsafe {
                libc::killpg(pid, libc::SIGKILL);
            }
        }
    }
}

/// How a check of one file ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The server published diagnostics for the text sent.
    Published(Vec<Problem>),
    /// No answer for this text within the wait.
    TimedOut,
    /// The server is gone.
    Dead,
    /// The server was still loading the workspace for the whole wait.
    Loading,
    /// The server says it is broken (rust-analyzer's health `error`), in its words.
    Unhealthy(String),
}

impl Child {
    /// Starts `program` for `spec` in `root` and initializes it, waiting at most `wait`
    /// for its answer.
    pub async fn start(
        spec: &ServerSpec,
        program: &Path,
        root: &Path,
        wait: Duration,
    ) -> std::io::Result<Arc<Self>> {
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(&spec.args)
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            // Unread, a chatty stderr would fill its pipe and stall the server.
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .process_group(0);
        // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut process = cmd.spawn()?;
        let stdin = process
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("no stdin"))?;
        let stdout = process
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("no stdout"))?;
        let shared = Arc::new(Shared::default());
        let child = Arc::new(Self {
            name: spec.name.clone(),
            language_id: spec.language_id.clone(),
            pid: process.id(),
            process: Mutex::new(Some(process)),
            stdin: tokio::sync::Mutex::new(stdin),
            shared: shared.clone(),
            next_id: AtomicI64::new(1),
            open: tokio::sync::Mutex::new(HashMap::new()),
            pull: AtomicBool::new(false),
        });
        tokio::spawn(read_loop(
            spec.name.clone(),
            BufReader::new(stdout),
            shared,
            Arc::downgrade(&child),
        ));
        let root_uri = url::Url::from_directory_path(root)
            .map_err(|()| std::io::Error::other("the root is not an absolute path"))?;
        let params = json!({
            "processId": std::process::id(),
            "rootUri": root_uri,
            "workspaceFolders": [{"uri": root_uri, "name": "workspace"}],
            "capabilities": {
                "textDocument": {
                    "synchronization": {"dynamicRegistration": false},
                    "publishDiagnostics": {"versionSupport": true},
                    "diagnostic": {"dynamicRegistration": false},
                    "definition": {"linkSupport": true},
                    "references": {},
                    "hover": {"contentFormat": ["plaintext", "markdown"]},
                    "documentSymbol": {"hierarchicalDocumentSymbolSupport": true}
                },
                "workspace": {"configuration": false, "workspaceFolders": true},
                // rust-analyzer says when it is done loading the workspace.
                "experimental": {"serverStatusNotification": true}
            },
            // rust-analyzer: the repository is untrusted; build scripts, proc macros and
            // `cargo check` would run its code outside the sandbox.
            "initializationOptions": {
                "cargo": {"buildScripts": {"enable": false}},
                "procMacro": {"enable": false},
                "checkOnSave": false
            }
        });
        let answer = tokio::time::timeout(wait, child.request("initialize", params)).await;
        match answer {
            Ok(Some(result)) => {
                // rust-analyzer's first status may come after our first check: until it
                // says it is quiescent, it is loading.
                if result["serverInfo"]["name"] == "rust-analyzer" {
                    child.shared.loading.store(true, Ordering::Release);
                }
                let offers = &result["capabilities"]["diagnosticProvider"];
                child.pull.store(
                    offers.is_object() || offers == &json!(true),
                    Ordering::Release,
                );
            }
            Ok(None) => return Err(std::io::Error::other("exited during initialize")),
            Err(_) => {
                return Err(std::io::Error::other(format!(
                    "no answer to initialize in {wait:?}"
                )));
            }
        }
        child.notify("initialized", json!({})).await?;
        Ok(child)
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its process id.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Whether its output ended or it exited.
    pub fn is_dead(&self) -> bool {
        if self.shared.dead.load(Ordering::Acquire) {
            return true;
        }
        let mut process = self.process.lock().unwrap_or_else(|p| p.into_inner());
        !matches!(process.as_mut().map(|p| p.try_wait()), Some(Ok(None)))
    }

    async fn send(&self, message: Value) -> std::io::Result<()> {
        let body = serde_json::to_vec(&message).map_err(std::io::Error::other)?;
        let mut stdin = self.stdin.lock().await;
        write_message(&mut *stdin, &body).await
    }

    async fn notify(&self, method: &str, params: Value) -> std::io::Result<()> {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await
    }

    /// Sends a request and waits for its result; `None` when the child died first.
    async fn request(&self, method: &str, params: Value) -> Option<Value> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.shared
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, tx);
        let sent = self
            .send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        if sent.is_err() {
            return None;
        }
        rx.await.ok()
    }

    /// Sends `text` as the content of `path` (opening it the first time) and waits at
    /// most `wait` for the diagnostics of that text.
    pub async fn check(&self, path: &Path, text: &str, wait: Duration) -> Outcome {
        let Ok(uri) = url::Url::from_file_path(path) else {
            return Outcome::Published(Vec::new());
        };
        let deadline = tokio::time::Instant::now() + wait;
        let before = self
            .shared
            .lock_published()
            .get(path)
            .map_or(0, |p| p.count);
        let Ok(version) = self.sync(path, text).await else {
            return Outcome::Dead;
        };
        if !self.settled(deadline).await {
            return if self.shared.dead.load(Ordering::Acquire) {
                Outcome::Dead
            } else {
                Outcome::Loading
            };
        }
        if let Some(why) = self.unhealthy() {
            return Outcome::Unhealthy(why);
        }
        if self.pull.load(Ordering::Acquire) {
            let ask = self.request(
                "textDocument/diagnostic",
                json!({"textDocument": {"uri": uri}}),
            );
            match tokio::time::timeout_at(deadline, ask).await {
                Err(_) => return Outcome::TimedOut,
                Ok(None) => return Outcome::Dead,
                Ok(Some(report)) => {
                    // Answered after the text was sent, so about that text. An error
                    // or a report we cannot read: wait for a publish instead.
                    if let Some(problems) = pulled(&report) {
                        store(
                            &self.shared,
                            path.to_path_buf(),
                            Some(version),
                            problems.clone(),
                        );
                        return Outcome::Published(problems);
                    }
                    tracing::debug!("{}: unreadable diagnostic report: {report}", self.name);
                }
            }
        }
        let published = self.until(deadline, || {
            let published = self.shared.lock_published();
            let p = published.get(path)?;
            // A versioned publish names the text it checked; an unversioned one counts
            // if it came after the text was sent.
            let fresh = match p.version {
                Some(v) => v >= version,
                None => p.count > before,
            };
            fresh.then(|| p.problems.clone())
        });
        match published.await {
            Some(problems) => Outcome::Published(problems),
            None if self.shared.dead.load(Ordering::Acquire) => Outcome::Dead,
            None => Outcome::TimedOut,
        }
    }

    /// Waits until the server is not loading the workspace, at most until `deadline`:
    /// whether it got there (alive).
    async fn settled(&self, deadline: tokio::time::Instant) -> bool {
        let quiet = || (!self.shared.loading.load(Ordering::Acquire)).then_some(());
        self.until(deadline, quiet).await.is_some()
    }

    /// Waits until `ready` gives a value, looking again at each change the child
    /// signals (a publish, a status, its end), at most until `deadline`; `None` on
    /// timeout or when the child is gone.
    async fn until<T>(
        &self,
        deadline: tokio::time::Instant,
        ready: impl Fn() -> Option<T>,
    ) -> Option<T> {
        loop {
            // Registered before looking, so a change in between is not missed.
            let changed = self.shared.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if let Some(v) = ready() {
                return Some(v);
            }
            if self.shared.dead.load(Ordering::Acquire) {
                return None;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return None;
            }
        }
    }

    /// What the server said when it reported itself broken, if it did last.
    pub fn unhealthy(&self) -> Option<String> {
        self.shared
            .failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Whether the server is still loading the workspace, by its own word.
    pub fn is_loading(&self) -> bool {
        self.shared.loading.load(Ordering::Acquire)
    }

    /// Sends `text` as the content of `path`, opening it the first time; the version
    /// sent. Two syncs of one file go out in version order.
    async fn sync(&self, path: &Path, text: &str) -> std::io::Result<i32> {
        let uri = url::Url::from_file_path(path)
            .map_err(|()| std::io::Error::other("not an absolute path"))?;
        // Held until the text is sent.
        let mut open = self.open.lock().await;
        match open.get(path).copied() {
            None => {
                open.insert(path.to_path_buf(), 1);
                self.notify(
                    "textDocument/didOpen",
                    json!({"textDocument": {
                        "uri": uri, "languageId": self.language_id, "version": 1, "text": text
                    }}),
                )
                .await
                .map(|()| 1)
            }
            Some(v) => {
                let version = v.saturating_add(1);
                open.insert(path.to_path_buf(), version);
                self.notify(
                    "textDocument/didChange",
                    json!({
                        "textDocument": {"uri": uri, "version": version},
                        "contentChanges": [{"text": text}]
                    }),
                )
                .await
                .map(|()| version)
            }
        }
    }

    /// Asks `query` about `path` as `text` (sent first, so the answer is about exactly
    /// that text). No bound of its own: the caller's.
    pub async fn navigate(
        &self,
        path: &Path,
        text: &str,
        query: &crate::navigate::Query,
    ) -> Result<crate::navigate::Answer, String> {
        self.sync(path, text)
            .await
            .map_err(|e| format!("{}: {e}", self.name))?;
        let (method, params) = query.request(path)?;
        match self.request(method, params).await {
            Some(result) => Ok(query.answer(result)),
            None => Err(format!("{} exited", self.name)),
        }
    }

    /// The last diagnostics published for `path`, without waiting.
    pub fn last(&self, path: &Path) -> Option<Vec<Problem>> {
        self.shared
            .lock_published()
            .get(path)
            .map(|p| p.problems.clone())
    }

    /// The resident memory of the child's process group leader, in KiB, from
    /// `/proc/PID/status` (Linux).
    pub fn rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid?)).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    }
}

/// Reads the child's messages until its output ends: answers to our requests, its
/// diagnostics, and its own requests (answered with empty results: we offer no
/// configuration and no UI).
async fn read_loop(
    name: String,
    mut stdout: BufReader<tokio::process::ChildStdout>,
    shared: Arc<Shared>,
    child: std::sync::Weak<Child>,
) {
    loop {
        let body = match read_message(&mut stdout).await {
            Ok(Some(body)) => body,
            Ok(None) => break,
            Err(e) => {
                tracing::warn!("{name}: {e}");
                break;
            }
        };
        let Ok(msg) = serde_json::from_slice::<Value>(&body) else {
            tracing::debug!("{name}: a message that is not JSON");
            continue;
        };
        match (msg.get("id"), msg.get("method").and_then(Value::as_str)) {
            (Some(id), Some(method)) => {
                let result = match method {
                    "workspace/configuration" => {
                        let n = msg["params"]["items"].as_array().map_or(0, Vec::len);
                        Value::Array(vec![Value::Null; n])
                    }
                    _ => Value::Null,
                };
                if let Some(child) = child.upgrade() {
                    let reply = json!({"jsonrpc": "2.0", "id": id, "result": result});
                    tokio::spawn(async move {
                        let _ = child.send(reply).await;
                    });
                }
            }
            (Some(id), None) => {
                if let Some(tx) = id.as_i64().and_then(|id| {
                    shared
                        .pending
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .remove(&id)
                }) {
                    let _ = tx.send(msg.get("result").cloned().unwrap_or(Value::Null));
                }
            }
            (None, Some("experimental/serverStatus")) => {
                let params = &msg["params"];
                if let Some(quiescent) = params["quiescent"].as_bool() {
                    shared.loading.store(!quiescent, Ordering::Release);
                }
                // `error`: the workspace did not load (a broken Cargo.toml, say), so "no
                // errors" from it would be a false all-clear.
                let failed = (params["health"] == "error").then(|| {
                    params["message"]
                        .as_str()
                        .unwrap_or("its health is `error`")
                        .trim()
                        .to_owned()
                });
                *shared.failed.lock().unwrap_or_else(|p| p.into_inner()) = failed;
                shared.changed.notify_waiters();
            }
            (None, Some("textDocument/publishDiagnostics")) => {
                if let Ok(p) =
                    serde_json::from_value::<lsp::PublishDiagnosticsParams>(msg["params"].clone())
                {
                    record(&shared, p);
                }
            }
            _ => {}
        }
    }
    shared.dead.store(true, Ordering::Release);
    // Waiting requests fail now rather than at their timeouts.
    shared
        .pending
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clear();
    shared.changed.notify_waiters();
    tracing::info!("{name}: output ended");
}

fn record(shared: &Shared, p: lsp::PublishDiagnosticsParams) {
    let Ok(path) = p.uri.to_file_path() else {
        return;
    };
    store(shared, path, p.version, problems(p.diagnostics));
}

/// The problems of a pull report (`textDocument/diagnostic`'s answer); `None` when it is
/// not a full report we can read (an error answer comes as `null`).
fn pulled(report: &Value) -> Option<Vec<Problem>> {
    if report["kind"] != "full" {
        return None;
    }
    let items = serde_json::from_value::<Vec<lsp::Diagnostic>>(report["items"].clone()).ok()?;
    Some(problems(items))
}

fn problems(diagnostics: Vec<lsp::Diagnostic>) -> Vec<Problem> {
    diagnostics
        .into_iter()
        .map(|d| Problem {
            // LSP lines are 0-based and need no encoding; columns are left out so that
            // no position arithmetic happens outside `text`.
            line: d.range.start.line.saturating_add(1),
            severity: match d.severity {
                Some(lsp::DiagnosticSeverity::WARNING) => Severity::Warning,
                Some(lsp::DiagnosticSeverity::INFORMATION) => Severity::Information,
                Some(lsp::DiagnosticSeverity::HINT) => Severity::Hint,
                // The spec leaves a missing severity to the client: treat it as an error.
                _ => Severity::Error,
            },
            message: d.message,
            source: d.source,
        })
        .collect()
}

/// Keeps `problems` as the latest for `path` and wakes the waiters.
fn store(shared: &Shared, path: PathBuf, version: Option<i32>, problems: Vec<Problem>) {
    {
        let mut published = shared.lock_published();
        let entry = published.entry(path).or_default();
        entry.version = version;
        entry.count += 1;
        entry.problems = problems;
    }
    shared.changed.notify_waiters();
}
