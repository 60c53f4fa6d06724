//! A run's events on their way out: `agent/event` for clients with the extension,
//! `$/progress` reports, `window/logMessage` lines for clients without a panel, and
//! `window/showMessage` for the outcome.

use std::sync::Arc;

use agentls_protocol::agent::{Event, EventParams, SessionStatus};
use tower_lsp::Client;
use tower_lsp::lsp_types as lsp;

use super::sessions::Entry;

/// The `agent/event` notification.
enum AgentEventNotification {}

impl lsp::notification::Notification for AgentEventNotification {
    type Params = EventParams;
    const METHOD: &'static str = agentls_protocol::agent::EVENT;
}

/// Longest outcome shown in `window/showMessage` (chars); the log has all of it.
const MAX_SHOWN: usize = 400;

/// Sends one run's events to the client in every form it understands.
pub struct Reporter {
    client: Client,
    entry: Arc<Entry>,
    token: Option<lsp::NumberOrString>,
    extension: bool,
    /// The client opens documents the server names (`window/showDocument`): an answer
    /// too long for a message is written to a file and shown whole.
    pub show_document: bool,
}

impl Reporter {
    /// Starts reporting; with a token, creates the progress (unless the client gave the
    /// token itself) and sends `begin`, cancellable.
    pub async fn begin(
        client: Client,
        entry: Arc<Entry>,
        token: Option<(String, bool)>,
        extension: bool,
        title: &str,
    ) -> Self {
        let mut token = token;
        if let Some((t, true)) = &token {
            let params = lsp::WorkDoneProgressCreateParams {
                token: lsp::NumberOrString::String(t.clone()),
            };
            if let Err(e) = client
                .send_request::<lsp::request::WorkDoneProgressCreate>(params)
                .await
            {
                tracing::info!("client refused a progress token ({e}); reporting without");
                token = None;
            }
        }
        let token = token.map(|(t, _)| lsp::NumberOrString::String(t));
        let reporter = Self {
            client,
            entry,
            token,
            extension,
            show_document: false,
        };
        reporter
            .progress(lsp::WorkDoneProgress::Begin(lsp::WorkDoneProgressBegin {
                title: format!("agentls: {title}"),
                cancellable: Some(true),
                message: Some("starting".to_owned()),
                percentage: None,
            }))
            .await;
        reporter
    }

    async fn progress(&self, value: lsp::WorkDoneProgress) {
        if let Some(token) = &self.token {
            self.client
                .send_notification::<lsp::notification::Progress>(lsp::ProgressParams {
                    token: token.clone(),
                    value: lsp::ProgressParamsValue::WorkDone(value),
                })
                .await;
        }
    }

    async fn report(&self, message: String) {
        self.progress(lsp::WorkDoneProgress::Report(lsp::WorkDoneProgressReport {
            cancellable: Some(true),
            message: Some(message),
            percentage: None,
        }))
        .await;
    }

    async fn log(&self, message: String) {
        if !self.extension {
            self.client
                .log_message(
                    lsp::MessageType::INFO,
                    format!("[agentls {}] {message}", self.entry.id),
                )
                .await;
        }
    }

    /// Sends one event.
    pub async fn send(&mut self, event: Event) {
        match &event {
            Event::Step { step } => self.report(format!("step {step}")).await,
            Event::ToolStarted { name, .. } => self.report(format!("{name}…")).await,
            Event::ToolOutput { text, .. } => {
                // The last line a command printed, as a status line shows it.
                if let Some(line) = text.lines().rev().find(|l| !l.trim().is_empty()) {
                    self.report(first_chars(line, 80)).await;
                }
            }
            Event::ToolFinished {
                name,
                summary,
                error,
                failed,
                ms,
                ..
            } => {
                let line = match error {
                    Some(class) => format!("✗ {name} ({class}, {ms} ms): {summary}"),
                    None if *failed => format!("✗ {name} ({ms} ms): {summary}"),
                    None => format!("✓ {name} ({ms} ms): {summary}"),
                };
                self.report(line.clone()).await;
                self.log(line).await;
            }
            Event::Edit {
                uri, change_ids, ..
            } => {
                let review = if change_ids.is_empty() {
                    String::new()
                } else {
                    format!(" ({} change(s) for review)", change_ids.len())
                };
                self.log(format!("edited {uri}{review}")).await;
            }
            Event::Approval { what, granted, .. } => {
                let line = match granted {
                    None => format!("waiting for approval: {what}"),
                    Some(true) => format!("approved: {what}"),
                    Some(false) => format!("refused: {what}"),
                };
                self.report(line.clone()).await;
                self.log(line).await;
            }
            Event::Error { class, message } => {
                self.log(format!("error ({class}): {message}")).await
            }
            Event::Plan { items } => {
                let plan: Vec<String> = items
                    .iter()
                    .map(|i| format!("[{}] {}", i.status, i.text))
                    .collect();
                self.log(format!("plan:\n{}", plan.join("\n"))).await;
            }
            _ => {}
        }
        if self.extension {
            let params = EventParams {
                session: self.entry.id.clone(),
                seq: self.entry.next_seq(),
                event,
            };
            self.client
                .send_notification::<AgentEventNotification>(params)
                .await;
        }
    }

    /// Ends the run with its `finished` event: the event, the progress `end`, the
    /// outcome as a message (not for a panel's own prompts) and, for clients without a
    /// panel, the whole answer in the log.
    pub async fn finish(&mut self, finished: Event) {
        let Event::Finished {
            status,
            ref message,
            ..
        } = finished
        else {
            // Only a `finished` event ends a run; anything else goes out as it is.
            self.send(finished).await;
            return;
        };
        let message = message.clone();
        self.send(finished).await;
        let short = first_chars(&message, MAX_SHOWN);
        self.progress(lsp::WorkDoneProgress::End(lsp::WorkDoneProgressEnd {
            message: Some(short.clone()),
        }))
        .await;
        self.log(format!("finished ({status:?}): {message}")).await;
        let kind = match status {
            SessionStatus::Done => lsp::MessageType::INFO,
            SessionStatus::Failed => lsp::MessageType::ERROR,
            _ => lsp::MessageType::WARNING,
        };
        // A panel already shows the outcome of its own prompts; a run it did not start
        // (a code action's, with progress) still gets a message, as it would anywhere.
        if !self.extension || self.token.is_some() {
            let mut shown = format!("agentls: {short}");
            if short.chars().count() < message.trim().chars().count()
                && self.show_document
                && self.show_whole(&message).await
            {
                shown.push_str(" (the whole answer is open in a document)");
            }
            self.client.show_message(kind, shown).await;
        }
    }

    /// Writes `message` to `<cache>/agentls/answers/<session>.md` and asks the client
    /// to open it; true when it did.
    async fn show_whole(&self, message: &str) -> bool {
        let Some(dir) = dirs::cache_dir().map(|d| d.join("agentls").join("answers")) else {
            return false;
        };
        let path = dir.join(format!("{}.md", self.entry.id));
        let title = self.entry.info().title;
        let text = format!("# {title}\n\n{}\n", message.trim());
        let written = tokio::fs::create_dir_all(&dir).await.is_ok()
            && tokio::fs::write(&path, text).await.is_ok();
        let Some(uri) = written
            .then(|| lsp::Url::from_file_path(&path).ok())
            .flatten()
        else {
            tracing::warn!(path = %path.display(), "could not write the whole answer");
            return false;
        };
        let params = lsp::ShowDocumentParams {
            uri,
            external: Some(false),
            take_focus: Some(true),
            selection: None,
        };
        match self.client.show_document(params).await {
            Ok(shown) => shown,
            Err(e) => {
                tracing::info!("the client did not open the answer: {e}");
                false
            }
        }
    }
}

fn first_chars(s: &str, n: usize) -> String {
    let s = s.trim();
    if s.chars().count() <= n {
        return s.to_owned();
    }
    let cut: String = s.chars().take(n).collect();
    format!("{cut}…")
}
