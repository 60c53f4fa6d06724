//! `session/request_permission`: what the policy marks `ask` (commands), and in the
//! "ask before edits" mode every edit with its diff. No answer, or any answer but
//! "allow", is no.

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    ToolCallUpdate,
};
use agentls_host::SessionHandle;
use agentls_protocol::agent::ops::Op;
use serde_json::{Value, json};

/// Asks the client about `call` (a tool call update: id, title, content); `true` when
/// the user allowed it.
pub async fn ask(cx: &ConnectionTo<Client>, session: &str, call: Value) -> bool {
    choose(cx, session, call, false).await == Some("allow")
}

/// Asks with "Allow", "Reject" and, with `terminal`, "Run in my terminal": the id of
/// the option chosen, `None` for no answer (or one the request did not offer).
async fn choose(
    cx: &ConnectionTo<Client>,
    session: &str,
    call: Value,
    terminal: bool,
) -> Option<&'static str> {
    let call: ToolCallUpdate = match serde_json::from_value(call) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!("acp: a permission request the schema refuses ({e}); refused");
            return None;
        }
    };
    let mut options = vec![PermissionOption::new(
        "allow",
        if terminal {
            "Allow in the sandbox"
        } else {
            "Allow"
        },
        PermissionOptionKind::AllowOnce,
    )];
    if terminal {
        options.push(PermissionOption::new(
            "terminal",
            "Run in my terminal (outside the sandbox)",
            PermissionOptionKind::AllowOnce,
        ));
    }
    options.push(PermissionOption::new(
        "reject",
        "Reject",
        PermissionOptionKind::RejectOnce,
    ));
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
            if !matches!(r.outcome, RequestPermissionOutcome::Selected(_)) {
                return None;
            }
            match v["optionId"].as_str() {
                Some("allow") => Some("allow"),
                Some("terminal") if terminal => Some("terminal"),
                Some("reject") => Some("reject"),
                _ => None,
            }
        }
        Err(e) => {
            tracing::warn!("acp: permission request failed ({e}); refused");
            None
        }
    }
}

/// A fresh id for a permission request that is not about a running tool call.
pub fn request_id(what: &str) -> String {
    format!("{what}-{}", agentls_agent::new_session_id())
}

/// Asks the client about the session's approval request `request` (the agent wants
/// to `what`; with `terminal`, "Run in my terminal" is offered) on a task of its own,
/// so the turn's updates keep flowing; the answer goes back to `session` as an op.
pub fn ask_for(
    cx: &ConnectionTo<Client>,
    session: &SessionHandle,
    id: &str,
    request: &str,
    what: &str,
    terminal: bool,
) {
    let (cx, to, id, request, what) = (
        cx.clone(),
        session.submitter(),
        id.to_owned(),
        request.to_owned(),
        what.to_owned(),
    );
    tokio::spawn(async move {
        let call = json!({
            "toolCallId": request_id("approval"),
            "title": format!("The agent wants to {what}"),
            "kind": "execute",
        });
        let choice = choose(&cx, &id, call, terminal).await;
        tracing::info!(?choice, "acp: permission to {what}");
        to.submit(Op::Approval {
            id: request,
            approved: matches!(choice, Some("allow" | "terminal")),
            in_terminal: choice == Some("terminal"),
        });
    });
}
