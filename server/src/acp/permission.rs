//! `session/request_permission`: what the policy marks `ask` (commands), and in the
//! "ask before edits" mode every edit with its diff. No answer, or any answer but
//! "allow", is no.

use std::sync::{Arc, OnceLock};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    ToolCallUpdate,
};
use agentls_tools::Approver;
use async_trait::async_trait;
use serde_json::{Value, json};

/// Asks the client about `call` (a tool call update: id, title, content); `true` when
/// the user allowed it.
pub async fn ask(cx: &ConnectionTo<Client>, session: &str, call: Value) -> bool {
    let call: ToolCallUpdate = match serde_json::from_value(call) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!("acp: a permission request the schema refuses ({e}); refused");
            return false;
        }
    };
    let options = vec![
        PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
        PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
    ];
    let answer = cx
        .send_request(RequestPermissionRequest::new(
            session.to_owned(),
            call,
            options,
        ))
        .block_task()
        .await;
    match answer {
        Ok(r) => {
            let v = serde_json::to_value(&r.outcome).unwrap_or(Value::Null);
            matches!(r.outcome, RequestPermissionOutcome::Selected(_)) && v["optionId"] == "allow"
        }
        Err(e) => {
            tracing::warn!("acp: permission request failed ({e}); refused");
            false
        }
    }
}

/// A fresh id for a permission request that is not about a running tool call.
pub fn request_id(what: &str) -> String {
    format!("{what}-{}", agentls_agent::new_session_id())
}

/// The session's approver: commands the policy marks `ask`.
pub struct AskClient {
    pub cx: ConnectionTo<Client>,
    /// Set once the session is built.
    pub session: Arc<OnceLock<String>>,
}

#[async_trait]
impl Approver for AskClient {
    async fn approve(&self, what: &str) -> bool {
        let Some(session) = self.session.get() else {
            return false;
        };
        let call = json!({
            "toolCallId": request_id("approval"),
            "title": format!("The agent wants to {what}"),
            "kind": "execute",
        });
        let allowed = ask(&self.cx, session, call).await;
        tracing::info!(allowed, "acp: permission to {what}");
        allowed
    }
}
