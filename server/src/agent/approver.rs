//! Approvals through `window/showMessageRequest`: the session asks on its queue (an
//! `approval` event with an id), the user picks "Allow" or not, and the answer goes
//! back as an approval op. No answer in time, a dismissed message or a client that
//! cannot ask all mean no.

use std::time::Duration;

use agentls_host::Submitter;
use agentls_protocol::agent::ops::Op;
use tower_lsp::Client;
use tower_lsp::lsp_types as lsp;

/// The action title that allows.
pub const ALLOW: &str = "Allow";
/// The action title that refuses.
pub const DENY: &str = "Deny";

/// Asks the editor's user about request `id` (the agent wants to `what`) on a task of
/// its own, so the run goes on reading its events; the answer goes to `session`.
pub fn ask(client: Client, session: Submitter, id: String, what: String, timeout: Duration) {
    tokio::spawn(async move {
        let approved = allowed(&client, &what, timeout).await;
        session.submit(Op::Approval {
            id,
            approved,
            in_terminal: false,
        });
    });
}

/// `true` when the user picked "Allow" within `timeout`.
async fn allowed(client: &Client, what: &str, timeout: Duration) -> bool {
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
        timeout,
        client.show_message_request(lsp::MessageType::WARNING, message, Some(actions)),
    )
    .await;
    let granted = matches!(&answer, Ok(Ok(Some(item))) if item.title == ALLOW);
    match answer {
        Err(_) => tracing::info!(what, "no answer to the approval request: refused"),
        Ok(Err(e)) => tracing::info!(what, "approval request failed ({e}): refused"),
        Ok(Ok(_)) => tracing::info!(what, granted, "approval answered"),
    }
    granted
}
