//! `$/progress` sequences the server starts on its own (indexing, semantic search's
//! embedding): begin, report, end, or nothing when the client cannot show them.

use tower_lsp::Client;
use tower_lsp::lsp_types as lsp;

use crate::state::State;

/// A `$/progress` sequence, or nothing when the client cannot show one.
pub struct Progress {
    token: Option<lsp::NumberOrString>,
}

impl Progress {
    /// Creates the token and sends `begin`.
    pub async fn begin(state: &State, client: &Client, title: &str, message: &str) -> Self {
        if !state.client_caps().work_done_progress {
            return Self { token: None };
        }
        let token = lsp::NumberOrString::String(format!("agentls/{}", state.next_token()));
        let created = client
            .send_request::<lsp::request::WorkDoneProgressCreate>(
                lsp::WorkDoneProgressCreateParams {
                    token: token.clone(),
                },
            )
            .await;
        if let Err(e) = created {
            tracing::debug!("client refused a progress token: {e}");
            return Self { token: None };
        }
        let begin = lsp::WorkDoneProgress::Begin(lsp::WorkDoneProgressBegin {
            title: title.to_owned(),
            cancellable: Some(false),
            message: Some(message.to_owned()),
            percentage: None,
        });
        send_progress(client, &token, begin).await;
        Self { token: Some(token) }
    }

    /// Sends `report` with a message and a percentage.
    pub async fn report(&self, client: &Client, message: String, percentage: u32) {
        if let Some(token) = &self.token {
            let report = lsp::WorkDoneProgress::Report(lsp::WorkDoneProgressReport {
                cancellable: Some(false),
                message: Some(message),
                percentage: Some(percentage.min(100)),
            });
            send_progress(client, token, report).await;
        }
    }

    /// Sends `end` with a final message.
    pub async fn end(self, client: &Client, message: String) {
        if let Some(token) = &self.token {
            let end = lsp::WorkDoneProgress::End(lsp::WorkDoneProgressEnd {
                message: Some(message),
            });
            send_progress(client, token, end).await;
        }
    }
}

async fn send_progress(client: &Client, token: &lsp::NumberOrString, value: lsp::WorkDoneProgress) {
    client
        .send_notification::<lsp::notification::Progress>(lsp::ProgressParams {
            token: token.clone(),
            value: lsp::ProgressParamsValue::WorkDone(value),
        })
        .await;
}
