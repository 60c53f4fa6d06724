//! Approvals through `window/showMessageRequest`: the user picks "Allow" or not; no
//! answer in time, a dismissed message or a client that cannot ask all mean no.

use std::sync::Weak;
use std::time::Duration;

use agentls_protocol::agent::Event;
use async_trait::async_trait;
use tower_lsp::Client;
use tower_lsp::lsp_types as lsp;

use super::sessions::Entry;

/// The action title that allows.
pub const ALLOW: &str = "Allow";
/// The action title that refuses.
pub const DENY: &str = "Deny";

/// Asks the editor's user.
pub struct LspApprover {
    /// The client to ask.
    pub client: Client,
    /// The session asking (for `approval` events).
    pub entry: Weak<Entry>,
    /// How long to wait for an answer.
    pub timeout: Duration,
}

#[async_trait]
impl agentls_tools::Approver for LspApprover {
    async fn approve(&self, what: &str) -> bool {
        let emit = |granted| {
            if let Some(e) = self.entry.upgrade() {
                e.emit(Event::Approval {
                    id: None,
                    what: what.to_owned(),
                    granted,
                });
            }
        };
        emit(None);
        let message = format!("agentls: the agent wants to {what}. Allow it?");
        let actions = vec![
            lsp::MessageActionItem {
                title: ALLOW.to_owned(),
                properties: Default::default(),
            },
            lsp::MessageActionItem {
                title: DENY.to_owned(),
                properties: Default::default(),
            },
        ];
        let answer = tokio::time::timeout(
            self.timeout,
            self.client
                .show_message_request(lsp::MessageType::WARNING, message, Some(actions)),
        )
        .await;
        let granted = matches!(&answer, Ok(Ok(Some(item))) if item.title == ALLOW);
        match answer {
            Err(_) => tracing::info!(what, "no answer to the approval request: refused"),
            Ok(Err(e)) => tracing::info!(what, "approval request failed ({e}): refused"),
            Ok(Ok(_)) => tracing::info!(what, granted, "approval answered"),
        }
        emit(Some(granted));
        granted
    }
}
