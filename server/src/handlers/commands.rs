//! `workspace/executeCommand`.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};
use tower_lsp::jsonrpc;

use crate::edit_sink::LspEditSink;
use crate::state::State;
use agentls_tools::TreeSitterCheck;

/// Applies an edit written in one of the engine's formats to the workspace as the editor
/// shows it, through `workspace/applyEdit`.
pub const APPLY_EDIT: &str = agentls_protocol::commands::APPLY_EDIT;

use super::agent::REQUEST_FAILED;

/// Every command the server executes.
pub const COMMANDS: &[&str] = agentls_protocol::commands::ALL;

/// `workspace/executeCommand`: every command answers at once; agent work goes on in
/// the background under `$/progress`.
pub async fn execute(
    state: Arc<State>,
    client: tower_lsp::Client,
    params: tower_lsp::lsp_types::ExecuteCommandParams,
) -> jsonrpc::Result<Option<Value>> {
    use agentls_protocol::agent::review::Action;
    use agentls_protocol::commands as c;
    let token = params
        .work_done_progress_params
        .work_done_token
        .map(|t| match t {
            tower_lsp::lsp_types::NumberOrString::String(s) => s,
            tower_lsp::lsp_types::NumberOrString::Number(n) => n.to_string(),
        });
    let command = params.command.as_str();
    if command == APPLY_EDIT {
        let sink = LspEditSink::new(client, state.clone());
        return apply_edit(state, sink, params.arguments).await.map(Some);
    }
    if let Some(kind) = crate::agent::TaskKind::from_command(command) {
        let mut args: c::TaskArgs = one_arg(command, params.arguments)?;
        if command == c::ASK && args.instruction.trim().is_empty() {
            match pick_question(&client).await {
                Some(question) => args.instruction = question,
                None => return Ok(Some(json!({ "started": false }))),
            }
        }
        let started = super::agent::start_task(&state, &client, kind, args, token)?;
        return Ok(Some(json!(started)));
    }
    let args: c::SessionArgs = if params.arguments.is_empty() {
        c::SessionArgs::default()
    } else {
        one_arg(command, params.arguments)?
    };
    match command {
        c::CANCEL => {
            let cancelled: Vec<String> = state
                .sessions
                .all()
                .into_iter()
                .filter(|e| args.session.as_ref().is_none_or(|s| *s == e.id))
                .filter(|e| e.cancel())
                .map(|e| e.id.clone())
                .collect();
            Ok(Some(json!({ "cancelled": cancelled })))
        }
        c::ACCEPT | c::REJECT => {
            let action = if command == c::ACCEPT {
                Action::Accept
            } else {
                Action::Reject
            };
            let result = super::agent::review(
                &state,
                &client,
                args.session.as_deref(),
                args.change,
                action,
            )
            .await?;
            Ok(Some(json!(result)))
        }
        other => Err(invalid(format!("unknown command {other}"))),
    }
}

/// Questions "Agent: ask…" offers where the editor cannot take free text (Helix's code
/// action menu): read-only, about the code at hand.
pub const QUESTIONS: &[&str] = &[
    "What does this code do?",
    "Are there bugs in this code?",
    "How could this be simpler?",
    "What calls this, and what does it call?",
    "What could break if this changes?",
];

/// Asks the user which of [`QUESTIONS`] to put (`window/showMessageRequest`); `None`
/// when they dismiss it or the client cannot ask.
async fn pick_question(client: &tower_lsp::Client) -> Option<String> {
    use tower_lsp::lsp_types::{MessageActionItem, MessageType};
    let actions = QUESTIONS
        .iter()
        .map(|q| MessageActionItem {
            title: (*q).to_owned(),
            properties: Default::default(),
        })
        .collect();
    let asked = client
        .show_message_request(
            MessageType::INFO,
            "agentls: ask about this code (for a question of your own, use agentls.ask with an instruction)",
            Some(actions),
        )
        .await;
    match asked {
        Ok(Some(item)) if QUESTIONS.contains(&item.title.as_str()) => Some(item.title),
        Ok(_) => None,
        Err(e) => {
            tracing::info!("the client could not ask: {e}");
            None
        }
    }
}

fn one_arg<T: serde::de::DeserializeOwned>(
    command: &str,
    arguments: Vec<Value>,
) -> jsonrpc::Result<T> {
    let [arg] = <[Value; 1]>::try_from(arguments)
        .map_err(|a| invalid(format!("{command} takes one argument, got {}", a.len())))?;
    serde_json::from_value(arg).map_err(|e| invalid(format!("{command}: {e}")))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ApplyEditArgs {
    /// `apply-patch`, `search-replace`, `str-replace`, `whole-file` or `insert`.
    format: String,
    /// The edit as a model would write it.
    edit: String,
}

fn invalid(message: String) -> jsonrpc::Error {
    jsonrpc::Error {
        code: jsonrpc::ErrorCode::InvalidParams,
        message: message.into(),
        data: None,
    }
}

/// `agentls.applyEdit`: parse and plan against live buffers, then land through the
/// editor. Answers `{ files, rebased, retried, repaired }`, or an error with the engine's reason.
pub async fn apply_edit(
    state: Arc<State>,
    sink: LspEditSink,
    arguments: Vec<Value>,
) -> jsonrpc::Result<Value> {
    let [arg] = <[Value; 1]>::try_from(arguments)
        .map_err(|a| invalid(format!("{APPLY_EDIT} takes one argument, got {}", a.len())))?;
    let args: ApplyEditArgs =
        serde_json::from_value(arg).map_err(|e| invalid(format!("{APPLY_EDIT}: {e}")))?;
    let format: agentls_edit::Format = args.format.parse().map_err(|e| invalid(format!("{e}")))?;
    let root = state
        .root()
        .ok_or_else(|| invalid("no workspace folder: edits need a root".to_owned()))?;
    let plan_state = state.clone();
    let plan = tokio::task::spawn_blocking(move || {
        let ops = agentls_edit::parse(format, &args.edit)?;
        let source = agentls_edit::StoreSource {
            store: &plan_state.store,
            limits: plan_state.config().config.read_limits(),
        };
        agentls_edit::Planner::new(&root, &source)
            .with_syntax(&TreeSitterCheck)
            .plan(&ops)
    })
    .await
    .map_err(|e| jsonrpc::Error {
        code: jsonrpc::ErrorCode::InternalError,
        message: e.to_string().into(),
        data: None,
    })?
    .map_err(|e| jsonrpc::Error {
        code: jsonrpc::ErrorCode::ServerError(REQUEST_FAILED),
        message: e.to_string().into(),
        data: None,
    })?;
    let files: Vec<String> = plan
        .changes
        .iter()
        .map(|c| match c {
            agentls_edit::FileChange::Edit(t) => format!("M {}", t.path.display()),
            agentls_edit::FileChange::Create { path, .. } => format!("A {}", path.display()),
            agentls_edit::FileChange::Rename { from, to } => {
                format!("R {} -> {}", from.display(), to.display())
            }
            agentls_edit::FileChange::Delete { path } => format!("D {}", path.display()),
        })
        .collect();
    let landed = sink
        .land(plan, APPLY_EDIT)
        .await
        .map_err(|e| jsonrpc::Error {
            code: jsonrpc::ErrorCode::ServerError(REQUEST_FAILED),
            message: e.message.into(),
            data: None,
        })?;
    Ok(json!({
        "files": files,
        "rebased": landed.rebased,
        "retried": landed.retried,
        "repaired": landed.repaired,
    }))
}
