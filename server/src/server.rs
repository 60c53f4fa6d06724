//! The tower-lsp wiring: each LSP method calls its handler under the panic guard.

use std::sync::Arc;

use tower_lsp::jsonrpc;
use tower_lsp::lsp_types as lsp;
use tower_lsp::{Client, LanguageServer, LspService};

use agentls_protocol::agent;

use crate::convert::from_lsp;
use crate::handlers::{self, text_sync::Outcome};
use crate::indexing;
use crate::panic_guard::{guard, guard_notification};
use crate::state::{StartupNote, State};
use crate::transport;

/// Name of the debug-only request that panics on purpose, registered only when the
/// environment variable of the same purpose is set; it exists to prove the panic guard
/// end to end.
pub const DEBUG_PANIC_METHOD: &str = "agentls/debugPanic";
/// Set this environment variable to `1` to register [`DEBUG_PANIC_METHOD`].
pub const DEBUG_PANIC_ENV: &str = "AGENTLS_DEBUG_PANIC";

/// The language server.
#[derive(Debug)]
pub struct Server {
    client: Client,
    state: Arc<State>,
}

impl Server {
    /// Builds the tower-lsp service and the socket for server-to-client messages.
    pub fn service() -> (LspService<Server>, tower_lsp::ClientSocket) {
        let builder = LspService::build(|client| Server {
            client,
            state: Arc::new(State::default()),
        })
        .custom_method(
            agentls_protocol::view_file_text::METHOD,
            Server::view_file_text,
        )
        .custom_method(
            agentls_protocol::semantic_search::METHOD,
            Server::semantic_search,
        )
        .custom_method(
            agentls_protocol::inline_completion::METHOD,
            Server::inline_completion,
        )
        .custom_method(
            agentls_protocol::copilot_inline_edit::METHOD,
            Server::copilot_inline_edit,
        )
        .custom_method("window/workDoneProgress/cancel", Server::progress_cancel)
        .custom_method(transport::INVALID_DID_CHANGE, Server::invalid_did_change)
        .custom_method(agent::new_session::METHOD, Server::agent_new_session)
        .custom_method(agent::prompt::METHOD, Server::agent_prompt)
        .custom_method(agent::cancel::METHOD, Server::agent_cancel)
        .custom_method(agent::compact::METHOD, Server::agent_compact)
        .custom_method(agent::list_sessions::METHOD, Server::agent_list_sessions)
        .custom_method(agent::get_transcript::METHOD, Server::agent_get_transcript)
        .custom_method(agent::set_model::METHOD, Server::agent_set_model)
        .custom_method(agent::list_models::METHOD, Server::agent_list_models)
        .custom_method(agent::review::METHOD, Server::agent_review)
        .custom_method(agent::list_changes::METHOD, Server::agent_list_changes)
        .custom_method(agent::diagnostics::METHOD, Server::agent_diagnostics);
        let builder = if std::env::var(DEBUG_PANIC_ENV).as_deref() == Ok("1") {
            builder.custom_method(DEBUG_PANIC_METHOD, Server::debug_panic)
        } else {
            builder
        };
        builder.finish()
    }

    async fn view_file_text(
        &self,
        params: agentls_protocol::view_file_text::Params,
    ) -> jsonrpc::Result<agentls_protocol::view_file_text::Result> {
        guard(agentls_protocol::view_file_text::METHOD, async {
            handlers::debug::view_file_text(&self.state, params)
        })
        .await
    }

    async fn semantic_search(
        &self,
        params: agentls_protocol::semantic_search::Params,
    ) -> jsonrpc::Result<agentls_protocol::semantic_search::Result> {
        let state = self.state.clone();
        guard(agentls_protocol::semantic_search::METHOD, async move {
            blocking(move || handlers::semantic::search(&state, params)).await?
        })
        .await
    }

    /// `textDocument/inlineCompletion` (LSP 3.18, served as a custom method: tower-lsp
    /// 0.20 predates it). It waits on the model without holding anything else back.
    async fn inline_completion(
        &self,
        params: agentls_protocol::inline_completion::Params,
    ) -> jsonrpc::Result<agentls_protocol::inline_completion::Result> {
        let state = self.state.clone();
        guard(agentls_protocol::inline_completion::METHOD, async move {
            Ok(handlers::completion::inline_completion(&state, params).await)
        })
        .await
    }

    /// `textDocument/copilotInlineEdit`: next-edit suggestions, as Copilot's server
    /// answers them.
    async fn copilot_inline_edit(
        &self,
        params: agentls_protocol::copilot_inline_edit::Params,
    ) -> jsonrpc::Result<agentls_protocol::copilot_inline_edit::Result> {
        let state = self.state.clone();
        guard(agentls_protocol::copilot_inline_edit::METHOD, async move {
            Ok(handlers::next_edit::copilot_inline_edit(&state, params).await)
        })
        .await
    }

    /// A `didChange` the transport could not read, in its place in arrival order.
    async fn invalid_did_change(&self, params: transport::InvalidDidChange) {
        guard_notification(transport::INVALID_DID_CHANGE, async {
            // An edit in flight for this document can no longer be followed.
            let uri = params.uri.clone().map(agentls_text::DocUri::new);
            let outcome = {
                let mut journals = self.state.journals.lock();
                let outcome = handlers::text_sync::invalid_did_change(&self.state, params);
                if let Some(uri) = &uri {
                    journals.record(uri, &[], self.state.encoding(), false);
                }
                outcome
            };
            self.state.changed.notify_waiters();
            self.say(outcome).await;
        })
        .await
    }

    async fn progress_cancel(&self, params: lsp::WorkDoneProgressCancelParams) {
        let token = match params.token {
            lsp::NumberOrString::String(s) => s,
            lsp::NumberOrString::Number(n) => n.to_string(),
        };
        match self.state.sessions.by_progress(&token) {
            Some(entry) => {
                tracing::info!(session = %entry.id, "cancelled through $/progress");
                entry.cancel();
            }
            None => tracing::info!(%token, "cancel for an unknown progress token"),
        }
    }

    async fn agent_new_session(
        &self,
        params: agent::new_session::Params,
    ) -> jsonrpc::Result<agent::new_session::Result> {
        guard(agent::new_session::METHOD, async {
            handlers::agent::new_session(&self.state, params)
        })
        .await
    }

    async fn agent_prompt(
        &self,
        params: agent::prompt::Params,
    ) -> jsonrpc::Result<agent::prompt::Result> {
        guard(agent::prompt::METHOD, async {
            crate::agent::load_saved_sessions(&self.state).await;
            handlers::agent::prompt(&self.state, &self.client, params)
        })
        .await
    }

    async fn agent_compact(
        &self,
        params: agent::compact::Params,
    ) -> jsonrpc::Result<agent::compact::Result> {
        guard(agent::compact::METHOD, async {
            crate::agent::load_saved_sessions(&self.state).await;
            handlers::agent::compact(&self.state, params).await
        })
        .await
    }

    async fn agent_cancel(
        &self,
        params: agent::cancel::Params,
    ) -> jsonrpc::Result<agent::cancel::Result> {
        guard(agent::cancel::METHOD, async {
            crate::agent::load_saved_sessions(&self.state).await;
            handlers::agent::cancel(&self.state, params)
        })
        .await
    }

    async fn agent_list_sessions(&self) -> jsonrpc::Result<agent::list_sessions::Result> {
        guard(agent::list_sessions::METHOD, async {
            crate::agent::load_saved_sessions(&self.state).await;
            Ok(handlers::agent::list_sessions(&self.state))
        })
        .await
    }

    async fn agent_get_transcript(
        &self,
        params: agent::get_transcript::Params,
    ) -> jsonrpc::Result<agent::get_transcript::Result> {
        guard(agent::get_transcript::METHOD, async {
            crate::agent::load_saved_sessions(&self.state).await;
            handlers::agent::get_transcript(&self.state, params)
        })
        .await
    }

    async fn agent_set_model(
        &self,
        params: agent::set_model::Params,
    ) -> jsonrpc::Result<agent::set_model::Result> {
        guard(agent::set_model::METHOD, async {
            crate::agent::load_saved_sessions(&self.state).await;
            handlers::agent::set_model(&self.state, params)
        })
        .await
    }

    async fn agent_list_models(&self) -> jsonrpc::Result<agent::list_models::Result> {
        guard(agent::list_models::METHOD, async {
            handlers::agent::list_models(&self.state)
        })
        .await
    }

    /// `agent/diagnostics`: the editor's diagnostics of one file, for the agent.
    async fn agent_diagnostics(&self, params: agent::diagnostics::Params) {
        guard_notification(agent::diagnostics::METHOD, async {
            let Some(path) = lsp::Url::parse(&params.uri)
                .ok()
                .and_then(|u| u.to_file_path().ok())
            else {
                tracing::warn!(uri = %params.uri, "agent/diagnostics for a URI that is not a file");
                return;
            };
            let found = params
                .diagnostics
                .iter()
                .map(|d| {
                    let severity = match d.severity {
                        Some(1) => "error",
                        Some(2) => "warning",
                        Some(3) => "info",
                        _ => "hint",
                    };
                    (
                        d.range.start.line as usize + 1,
                        severity.to_owned(),
                        d.message.clone(),
                    )
                })
                .collect();
            self.state.diagnostics.replace(&path, found);
        })
        .await
    }

    async fn agent_review(
        &self,
        params: agent::review::Params,
    ) -> jsonrpc::Result<agent::review::Result> {
        guard(agent::review::METHOD, async {
            crate::agent::load_saved_sessions(&self.state).await;
            handlers::agent::review(
                &self.state,
                &self.client,
                Some(&params.session),
                params.change,
                params.action,
            )
            .await
        })
        .await
    }

    async fn agent_list_changes(
        &self,
        params: agent::list_changes::Params,
    ) -> jsonrpc::Result<agent::list_changes::Result> {
        let state = self.state.clone();
        guard(agent::list_changes::METHOD, async move {
            crate::agent::load_saved_sessions(&state).await;
            blocking(move || handlers::agent::list_changes(&state, params)).await?
        })
        .await
    }

    async fn debug_panic(&self) -> jsonrpc::Result<()> {
        guard(DEBUG_PANIC_METHOD, async {
            // Deliberate: this request exists to exercise the panic guard.
            #[allow(clippy::panic)]
            {
                panic!("debugPanic requested")
            }
        })
        .await
    }

    /// Asks the client to send file events; when it cannot, watches the tree ourselves.
    async fn watch_files(&self, root: &std::path::Path) {
        if self.state.client_caps().watched_files_registration {
            let options = lsp::DidChangeWatchedFilesRegistrationOptions {
                watchers: vec![lsp::FileSystemWatcher {
                    glob_pattern: lsp::GlobPattern::String("**/*".to_owned()),
                    kind: None,
                }],
            };
            let registration = lsp::Registration {
                id: format!("agentls/watch/{}", self.state.next_token()),
                method: "workspace/didChangeWatchedFiles".to_owned(),
                register_options: serde_json::to_value(options).ok(),
            };
            match self.client.register_capability(vec![registration]).await {
                Ok(()) => return,
                Err(e) => {
                    tracing::warn!("client refused to watch files ({e}); watching them ourselves")
                }
            }
        }
        let state = self.state.clone();
        match agentls_index::FileWatcher::new(root, move |event| {
            state.index_mut().apply_event(&event);
        }) {
            Ok(watcher) => self.state.set_watcher(watcher),
            Err(e) => tracing::warn!(
                "cannot watch {}: {e}; the index sees disk changes only on reopen",
                root.display()
            ),
        }
    }

    async fn say(&self, outcome: Outcome) {
        match outcome {
            Outcome::Quiet => {}
            Outcome::Warn(message) => {
                self.client
                    .log_message(lsp::MessageType::WARNING, message)
                    .await
            }
            Outcome::LostSync(message) => {
                self.client
                    .log_message(lsp::MessageType::WARNING, message.clone())
                    .await;
                self.client
                    .show_message(lsp::MessageType::WARNING, message)
                    .await;
            }
        }
    }
}

#[tower_lsp::async_trait]
impl LanguageServer for Server {
    async fn initialize(
        &self,
        params: lsp::InitializeParams,
    ) -> jsonrpc::Result<lsp::InitializeResult> {
        guard("initialize", async {
            let client_name = params.client_info.as_ref().map(|c| c.name.clone());
            let folders_note = crate::convert::from_lsp::other_folders_note(&params);
            let result = handlers::lifecycle::initialize(&self.state, params);
            let advice =
                crate::client_advice::slow_path(self.state.client_caps(), client_name.as_deref());
            if let Some(advice) = &advice {
                tracing::warn!(client = ?client_name, "{advice}");
            }
            if let Some(note) = &folders_note {
                tracing::warn!("{note}");
            }
            let notes = advice
                .map(|a| StartupNote {
                    shown: false,
                    text: format!("agentls: {a}"),
                })
                .into_iter()
                .chain(folders_note.map(|text| StartupNote { shown: true, text }));
            *self
                .state
                .startup_notes
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = notes.collect();
            Ok(result)
        })
        .await
    }

    async fn initialized(&self, _: lsp::InitializedParams) {
        // From here INFO and DEBUG lines reach the editor's log, not its stderr.
        crate::logging::attach(self.client.clone());
        let notes = std::mem::take(
            &mut *self
                .state
                .startup_notes
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        );
        for note in notes {
            if note.shown {
                self.client
                    .show_message(lsp::MessageType::WARNING, note.text)
                    .await;
            } else {
                self.client
                    .log_message(lsp::MessageType::WARNING, note.text)
                    .await;
            }
        }
        let problems = self.state.config().problems;
        if !problems.is_empty() {
            let message = format!("agentls configuration: {}", problems.join("; "));
            self.client
                .show_message(lsp::MessageType::WARNING, message)
                .await;
        }
        let Some(root) = self.state.root() else {
            return;
        };
        // Saved sessions (and their pending review changes) come back in the
        // background; requests about sessions wait for them.
        let state = self.state.clone();
        tokio::spawn(async move { crate::agent::load_saved_sessions(&state).await });
        self.watch_files(&root).await;
        tokio::spawn(indexing::crawl(
            self.state.clone(),
            self.client.clone(),
            root,
        ));
    }

    async fn shutdown(&self) -> jsonrpc::Result<()> {
        tracing::info!("shutdown requested");
        crate::agent::keep_rate::at_end(&self.state).await;
        Ok(())
    }

    // The sync handlers below do their work in the first, synchronous poll: see
    // handlers::text_sync for why.
    async fn did_open(&self, params: lsp::DidOpenTextDocumentParams) {
        guard_notification("textDocument/didOpen", async {
            let uri = from_lsp::uri(&params.text_document.uri);
            let outcome = handlers::text_sync::did_open(&self.state, params);
            self.state.journals.resynced(&uri);
            self.state.changed.notify_waiters();
            indexing::schedule_update(&self.state, uri);
            self.say(outcome).await;
        })
        .await
    }

    async fn did_change(&self, params: lsp::DidChangeTextDocumentParams) {
        guard_notification("textDocument/didChange", async {
            let uri = from_lsp::uri(&params.text_document.uri);
            // The store and the journals of edits in flight move together.
            let outcome = {
                let mut journals = self.state.journals.lock();
                let recorded: Vec<_> = if journals.watched(&uri) {
                    params
                        .content_changes
                        .iter()
                        .cloned()
                        .map(from_lsp::content_change)
                        .collect()
                } else {
                    params
                        .content_changes
                        .iter()
                        .filter(|c| c.range.is_none())
                        .cloned()
                        .map(from_lsp::content_change)
                        .collect()
                };
                for change in &params.content_changes {
                    if let Some(range) = change.range {
                        self.state
                            .completions
                            .note_edit(&uri, range.start.line as usize);
                    }
                }
                // The edit history needs the text the batch applies to.
                let before = self.state.store.snapshot(&uri);
                let batch: Vec<_> = params
                    .content_changes
                    .iter()
                    .cloned()
                    .map(from_lsp::content_change)
                    .collect();
                let outcome = handlers::text_sync::did_change(&self.state, params);
                let ok = matches!(outcome, Outcome::Quiet)
                    && self.state.store.snapshot(&uri).is_some_and(|s| s.in_sync);
                if let (true, Some(before)) = (ok, before) {
                    // An agent edit in flight makes the batch's origin unknown.
                    let user = !journals.watched(&uri);
                    let encoding = self.state.encoding();
                    (self.state.completions).note_changes(
                        &uri,
                        &before.rope,
                        &batch,
                        encoding,
                        user,
                    );
                }
                journals.record(&uri, &recorded, self.state.encoding(), ok);
                outcome
            };
            self.state.changed.notify_waiters();
            indexing::schedule_update(&self.state, uri);
            self.say(outcome).await;
        })
        .await
    }

    async fn did_save(&self, params: lsp::DidSaveTextDocumentParams) {
        guard_notification("textDocument/didSave", async {
            let uri = from_lsp::uri(&params.text_document.uri);
            let with_text = params.text.is_some();
            let outcome = handlers::text_sync::did_save(&self.state, params);
            if with_text {
                self.state.journals.resynced(&uri);
            }
            self.state.changed.notify_waiters();
            self.say(outcome).await;
        })
        .await
    }

    async fn did_close(&self, params: lsp::DidCloseTextDocumentParams) {
        guard_notification("textDocument/didClose", async {
            let uri = from_lsp::uri(&params.text_document.uri);
            let outcome = handlers::text_sync::did_close(&self.state, params);
            self.state.journals.forget(&uri);
            self.state.completions.forget(&uri);
            self.state.changed.notify_waiters();
            indexing::close(&self.state, &uri);
            self.say(outcome).await;
        })
        .await
    }

    async fn did_change_watched_files(&self, params: lsp::DidChangeWatchedFilesParams) {
        indexing::apply_events(&self.state, indexing::file_events(params));
    }

    async fn document_symbol(
        &self,
        params: lsp::DocumentSymbolParams,
    ) -> jsonrpc::Result<Option<lsp::DocumentSymbolResponse>> {
        let state = self.state.clone();
        guard(
            "textDocument/documentSymbol",
            blocking(move || handlers::symbols::document_symbol(&state, params)),
        )
        .await
    }

    async fn symbol(
        &self,
        params: lsp::WorkspaceSymbolParams,
    ) -> jsonrpc::Result<Option<Vec<lsp::SymbolInformation>>> {
        let state = self.state.clone();
        guard(
            "workspace/symbol",
            blocking(move || Some(handlers::symbols::workspace_symbol(&state, params))),
        )
        .await
    }

    async fn goto_definition(
        &self,
        params: lsp::GotoDefinitionParams,
    ) -> jsonrpc::Result<Option<lsp::GotoDefinitionResponse>> {
        let state = self.state.clone();
        guard(
            "textDocument/definition",
            blocking(move || handlers::symbols::definition(&state, params)),
        )
        .await
    }

    async fn references(
        &self,
        params: lsp::ReferenceParams,
    ) -> jsonrpc::Result<Option<Vec<lsp::Location>>> {
        let state = self.state.clone();
        guard(
            "textDocument/references",
            blocking(move || handlers::symbols::references(&state, params)),
        )
        .await
    }

    async fn completion(
        &self,
        params: lsp::CompletionParams,
    ) -> jsonrpc::Result<Option<lsp::CompletionResponse>> {
        let state = self.state.clone();
        guard("textDocument/completion", async move {
            Ok(handlers::completion::completion(&state, params).await)
        })
        .await
    }

    async fn execute_command(
        &self,
        params: lsp::ExecuteCommandParams,
    ) -> jsonrpc::Result<Option<serde_json::Value>> {
        let state = self.state.clone();
        let client = self.client.clone();
        guard("workspace/executeCommand", async move {
            handlers::commands::execute(state, client, params).await
        })
        .await
    }

    async fn code_action(
        &self,
        params: lsp::CodeActionParams,
    ) -> jsonrpc::Result<Option<lsp::CodeActionResponse>> {
        let state = self.state.clone();
        guard(
            "textDocument/codeAction",
            blocking(move || Some(handlers::code_actions::code_actions(&state, params))),
        )
        .await
    }

    async fn did_change_configuration(&self, params: lsp::DidChangeConfigurationParams) {
        guard_notification("workspace/didChangeConfiguration", async {
            let problems = handlers::lifecycle::did_change_configuration(&self.state, params);
            if !problems.is_empty() {
                let message = format!("agentls configuration: {}", problems.join("; "));
                self.client
                    .show_message(lsp::MessageType::WARNING, message)
                    .await;
            }
        })
        .await
    }
}

/// Runs a synchronous handler on the blocking pool (index locks and file reads must not
/// stall the LSP task); a panic in it becomes an internal error through [`guard`].
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> jsonrpc::Result<T> {
    match tokio::task::spawn_blocking(f).await {
        Ok(value) => Ok(value),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(jsonrpc::Error {
            code: jsonrpc::ErrorCode::InternalError,
            message: e.to_string().into(),
            data: None,
        }),
    }
}

/// How long work in flight may go on once stdin has closed without `exit`.
const STDIN_CLOSED_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Serves LSP over stdin/stdout until the client sends `exit` or closes the pipe.
///
/// tower-lsp sees stdio only through [`crate::transport`], which keeps malformed frames
/// from ending its read loop.
pub async fn serve_stdio() {
    const PIPE_BYTES: usize = 1 << 16;
    let (service, socket) = Server::service();
    let (server_in, pump_in) = tokio::io::duplex(PIPE_BYTES);
    let (server_out, pump_out) = tokio::io::duplex(PIPE_BYTES);
    // Bounded: a client that stops reading stops the server reading (see OUTGOING_FRAMES).
    let (out_tx, out_rx) = tokio::sync::mpsc::channel(transport::OUTGOING_FRAMES);
    let input = tokio::spawn(transport::pump_input(
        tokio::io::stdin(),
        pump_in,
        out_tx.clone(),
    ));
    tokio::spawn(transport::pump_server_output(pump_out, out_tx));
    let output = tokio::spawn(transport::write_output(tokio::io::stdout(), out_rx));
    let mut serve = Box::pin(tower_lsp::Server::new(server_in, server_out, socket).serve(service));
    let mut input = input;
    tokio::select! {
        () = &mut serve => {}
        _ = &mut input => {
            // Stdin closed without `exit` (the editor died). tower-lsp returns only when
            // every handler has finished, and a handler sending to the client (a log
            // line, a message) waits forever once nothing reads: let work in flight
            // finish for a moment, then go.
            if tokio::time::timeout(STDIN_CLOSED_GRACE, &mut serve).await.is_err() {
                tracing::warn!("stdin closed; handlers still waiting on the client were dropped");
            }
        }
    }
    // Dropping the server closes its side of the output pipe, so the writer can end.
    drop(serve);
    // The reader may be blocked on a stdin the client keeps open after `exit`; ending it
    // drops the last sender, so the writer drains what is queued and stops.
    input.abort();
    if let Err(e) = output.await {
        tracing::error!("stdout writer failed: {e}");
    }
}
