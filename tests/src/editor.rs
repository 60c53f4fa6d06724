//! An editor's side of the buffers, for end-to-end tests: it keeps its own copy of every
//! open document, sends `didOpen`/`didChange` as a user types, and answers
//! `workspace/applyEdit` the way real editors do: it refuses edits computed against
//! another version (Helix, Neovim), applies the rest, and sends the `didChange` before it
//! answers.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agentls_text::{ContentChange, DocUri, Document, Position, PositionEncoding, Range};
use serde_json::{Value, json};

use crate::lsp::LspClient;

/// One text edit: start (line, column), end (line, column), new text.
type Edit = ((u32, u32), (u32, u32), String);

/// The editor's documents, shared with the request handler.
#[derive(Debug)]
pub struct Buffers {
    docs: HashMap<String, Document>,
    encoding: PositionEncoding,
    /// Edits the "user" makes while the next `applyEdit` is in flight:
    /// `(uri, start line, start col, end line, end col, text)`.
    pub type_before_next_apply: Vec<(String, u32, u32, u32, u32, String)>,
    /// Every `applyEdit` answer given, in order.
    pub answers: Vec<Value>,
    /// Every `WorkspaceEdit` received, in order.
    pub edits: Vec<Value>,
    /// Answers to `window/showMessageRequest`, first in first out; `null` (the user
    /// dismissed it) when empty.
    pub message_answers: std::collections::VecDeque<Value>,
    /// Whether the user declines edits whose change annotations need confirmation.
    pub decline_confirmations: bool,
    /// Neovim's way with an edit for an older version of a buffer: skip it silently and
    /// still answer `applied: true` (instead of refusing the whole edit, as Helix does).
    pub skip_stale_silently: bool,
    /// Every `window/showDocument` request's params, in order (each answered `success`).
    pub shown_documents: Vec<Value>,
}

/// A test editor: an LSP client plus its buffers.
pub struct Editor {
    /// The connection to the server.
    pub client: LspClient,
    /// The buffers, shared with the `applyEdit` handler.
    pub buffers: Arc<Mutex<Buffers>>,
}

fn lock(b: &Arc<Mutex<Buffers>>) -> std::sync::MutexGuard<'_, Buffers> {
    b.lock().unwrap_or_else(|p| p.into_inner())
}

impl Editor {
    /// Wraps a client whose `initialize` negotiated `encoding`, and installs the handler.
    pub fn new(mut client: LspClient, encoding: PositionEncoding) -> Self {
        let buffers = Arc::new(Mutex::new(Buffers {
            docs: HashMap::new(),
            encoding,
            type_before_next_apply: Vec::new(),
            answers: Vec::new(),
            edits: Vec::new(),
            message_answers: std::collections::VecDeque::new(),
            decline_confirmations: false,
            skip_stale_silently: false,
            shown_documents: Vec::new(),
        }));
        let shared = buffers.clone();
        client.on_request(move |method, params, outbox| {
            let mut b = lock(&shared);
            if method == "window/showMessageRequest" {
                return Ok(b.message_answers.pop_front().unwrap_or(Value::Null));
            }
            if method == "window/showDocument" {
                b.shown_documents.push(params.clone());
                return Ok(json!({ "success": true }));
            }
            if method != "workspace/applyEdit" {
                return Ok(Value::Null);
            }
            b.edits.push(params["edit"].clone());
            let needs_confirmation = params["edit"]["changeAnnotations"]
                .as_object()
                .is_some_and(|m| m.values().any(|a| a["needsConfirmation"] == true));
            let answer = if b.decline_confirmations && needs_confirmation {
                json!({ "applied": false, "failureReason": "the user declined" })
            } else {
                b.apply_workspace_edit(&params["edit"], outbox)
            };
            b.answers.push(answer.clone());
            Ok(answer)
        });
        Self { client, buffers }
    }

    /// Opens a document with `text`.
    pub fn open(&mut self, uri: &str, text: &str) -> anyhow::Result<()> {
        let msg = lock(&self.buffers).open(uri, text);
        self.client.send(&msg)
    }

    /// Types: replaces a range (in the session's encoding) and sends `didChange`.
    pub fn type_text(
        &mut self,
        uri: &str,
        start: (u32, u32),
        end: (u32, u32),
        text: &str,
    ) -> anyhow::Result<()> {
        let msg = lock(&self.buffers).change(uri, vec![(start, end, text.to_owned())])?;
        self.client.send(&msg)
    }

    /// Applies a `WorkspaceEdit` of the editor's own (a code action's `edit`) as it
    /// applies the server's: refused whole on a stale version. Sends the `didChange`s;
    /// returns the answer it would give to `workspace/applyEdit`.
    pub fn apply_edit(&mut self, edit: &Value) -> anyhow::Result<Value> {
        let mut outbox = Vec::new();
        let answer = lock(&self.buffers).apply_workspace_edit(edit, &mut outbox);
        for msg in &outbox {
            self.client.send(msg)?;
        }
        Ok(answer)
    }

    /// The editor's text of a document.
    pub fn text(&self, uri: &str) -> Option<String> {
        lock(&self.buffers)
            .docs
            .get(uri)
            .map(|d| d.rope().to_string())
    }
}

impl Buffers {
    fn open(&mut self, uri: &str, text: &str) -> Value {
        self.docs.insert(
            uri.to_owned(),
            Document::new(DocUri::new(uri), "text", 1, text),
        );
        json!({ "jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
            "textDocument": { "uri": uri, "languageId": "text", "version": 1, "text": text }
        }})
    }

    /// Applies edits (all against the current text, as LSP's TextEdits are) and returns
    /// the `didChange` to send.
    fn change(&mut self, uri: &str, edits: Vec<Edit>) -> anyhow::Result<Value> {
        let encoding = self.encoding;
        let doc = self
            .docs
            .get_mut(uri)
            .ok_or_else(|| anyhow::anyhow!("{uri} is not open"))?;
        // Applied last to first, each one's positions stay valid.
        let mut edits = edits;
        edits.sort_by_key(|e| std::cmp::Reverse(e.0));
        let changes: Vec<ContentChange> = edits
            .iter()
            .map(|((l0, c0), (l1, c1), text)| {
                ContentChange::replace(
                    Range::new(Position::new(*l0, *c0), Position::new(*l1, *c1)),
                    text.clone(),
                )
            })
            .collect();
        let version = doc.version() + 1;
        doc.apply_changes(version, &changes, encoding)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let content: Vec<Value> = edits
            .iter()
            .map(|((l0, c0), (l1, c1), text)| {
                json!({ "range": { "start": { "line": l0, "character": c0 }, "end": { "line": l1, "character": c1 } }, "text": text })
            })
            .collect();
        Ok(
            json!({ "jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
                "textDocument": { "uri": uri, "version": version }, "contentChanges": content
            }}),
        )
    }

    fn apply_workspace_edit(&mut self, edit: &Value, outbox: &mut Vec<Value>) -> Value {
        // The user was typing while the server computed the edit.
        for (uri, l0, c0, l1, c1, text) in std::mem::take(&mut self.type_before_next_apply) {
            match self.change(&uri, vec![((l0, c0), (l1, c1), text)]) {
                Ok(msg) => outbox.push(msg),
                Err(e) => return json!({ "applied": false, "failureReason": e.to_string() }),
            }
        }
        let ops: Vec<Value> = match (&edit["documentChanges"], &edit["changes"]) {
            (Value::Array(ops), _) => ops.clone(),
            (_, Value::Object(map)) => map
                .iter()
                .map(|(uri, edits)| json!({ "textDocument": { "uri": uri, "version": null }, "edits": edits }))
                .collect(),
            _ => return json!({ "applied": false, "failureReason": "empty edit" }),
        };
        // Refuse the whole edit if any version is stale, before touching anything (or,
        // playing Neovim, skip the stale parts).
        let mut stale = Vec::new();
        for (index, op) in ops.iter().enumerate() {
            let (Some(uri), Some(version)) = (
                op["textDocument"]["uri"].as_str(),
                op["textDocument"]["version"].as_i64(),
            ) else {
                continue;
            };
            if let Some(doc) = self.docs.get(uri)
                && i64::from(doc.version()) != version
            {
                if !self.skip_stale_silently {
                    return json!({ "applied": false, "failureReason": format!("version mismatch for {uri}: editor has {}, edit is for {version}", doc.version()) });
                }
                stale.push(index);
            }
        }
        for (index, op) in ops.iter().enumerate() {
            if stale.contains(&index) {
                continue;
            }
            if let Err(e) = self.apply_op(op, outbox) {
                return json!({ "applied": false, "failureReason": e.to_string(), "failedChange": index });
            }
        }
        json!({ "applied": true })
    }

    fn apply_op(&mut self, op: &Value, outbox: &mut Vec<Value>) -> anyhow::Result<()> {
        let path = |uri: &Value| -> anyhow::Result<PathBuf> {
            DocUri::new(uri.as_str().unwrap_or_default())
                .to_file_path()
                .ok_or_else(|| anyhow::anyhow!("bad uri {uri}"))
        };
        match op["kind"].as_str() {
            Some("create") => std::fs::write(path(&op["uri"])?, "").map_err(Into::into),
            Some("rename") => {
                std::fs::rename(path(&op["oldUri"])?, path(&op["newUri"])?).map_err(Into::into)
            }
            Some("delete") => std::fs::remove_file(path(&op["uri"])?).map_err(Into::into),
            _ => {
                let uri = op["textDocument"]["uri"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                if !self.docs.contains_key(&uri) {
                    // Not open: load it from disk, as an editor opens a buffer.
                    let text = std::fs::read_to_string(path(&op["textDocument"]["uri"])?)?;
                    outbox.push(self.open(&uri, &text));
                }
                let edits = op["edits"]
                    .as_array()
                    .map(|edits| {
                        edits
                            .iter()
                            .map(|e| {
                                let p = |v: &Value| {
                                    (
                                        v["line"].as_u64().unwrap_or(0) as u32,
                                        v["character"].as_u64().unwrap_or(0) as u32,
                                    )
                                };
                                (
                                    p(&e["range"]["start"]),
                                    p(&e["range"]["end"]),
                                    e["newText"].as_str().unwrap_or_default().to_owned(),
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                outbox.push(self.change(&uri, edits)?);
                Ok(())
            }
        }
    }
}
