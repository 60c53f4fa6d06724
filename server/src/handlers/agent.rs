//! The `agent/*` requests, and the session work the standard commands share with them:
//! starting tasks, cancelling, reviewing.

use std::sync::Arc;

use agentls_edit::Source;
use agentls_protocol::agent::{
    cancel, compact, get_transcript, list_changes, list_models, list_sessions, new_session, prompt,
    review, set_model,
};
use agentls_protocol::commands::{Started, TaskArgs};
use agentls_text::DocUri;
use tower_lsp::Client;
use tower_lsp::jsonrpc;

use crate::agent::{Entry, Prompt, TaskKind, create_session, start_run, task_prompt};
use crate::edit_sink::LspEditSink;
use crate::state::State;

/// LSP's `RequestFailed`: the request was valid but could not be carried out.
pub const REQUEST_FAILED: i64 = -32803;

/// An error for a request that could not be carried out.
pub fn failed(message: impl Into<String>) -> jsonrpc::Error {
    jsonrpc::Error {
        code: jsonrpc::ErrorCode::ServerError(REQUEST_FAILED),
        message: message.into().into(),
        data: None,
    }
}

/// An error for bad parameters.
pub fn invalid(message: impl Into<String>) -> jsonrpc::Error {
    jsonrpc::Error {
        code: jsonrpc::ErrorCode::InvalidParams,
        message: message.into().into(),
        data: None,
    }
}

fn session(state: &State, id: &str) -> jsonrpc::Result<Arc<Entry>> {
    state
        .sessions
        .get(id)
        .ok_or_else(|| invalid(format!("no session {id:?}")))
}

/// `agent/newSession`.
pub fn new_session(
    state: &State,
    params: new_session::Params,
) -> jsonrpc::Result<new_session::Result> {
    let entry = create_session(
        state,
        params.model,
        params.mode.unwrap_or_default(),
        String::new(),
    )
    .map_err(failed)?;
    Ok(entry.info())
}

/// `agent/prompt`: starts a run and answers at once.
pub fn prompt(
    state: &Arc<State>,
    client: &Client,
    params: prompt::Params,
) -> jsonrpc::Result<prompt::Result> {
    let entry = session(state, &params.session)?;
    let text = match &params.context {
        Some(c) => {
            let args = TaskArgs {
                uri: Some(c.uri.clone()),
                range: c.range,
                version: c.version,
                instruction: params.text.clone(),
                model: None,
            };
            prompt_for(state, TaskKind::Ask, &args)
        }
        None => params.text.clone(),
    };
    let title = title_of(&params.text);
    let prompt = Prompt {
        text,
        user_text: Some(params.text.clone()),
    };
    start_run(
        state.clone(),
        client.clone(),
        entry.clone(),
        prompt,
        title,
        None,
        false,
    )
    .map_err(failed)?;
    Ok(entry.info())
}

/// `agent/cancel`.
pub fn cancel(state: &State, params: cancel::Params) -> jsonrpc::Result<cancel::Result> {
    let entry = session(state, &params.session)?;
    Ok(cancel::Result {
        cancelled: entry.cancel(),
    })
}

/// `agent/compact`: the session's compaction op, answered once it is done.
pub async fn compact(state: &State, params: compact::Params) -> jsonrpc::Result<compact::Result> {
    let entry = session(state, &params.session)?;
    let (masked, summarized) = crate::agent::compact(&entry).await.map_err(failed)?;
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    Ok(compact::Result {
        masked: count(masked),
        summarized: count(summarized),
    })
}

/// `agent/listSessions`.
pub fn list_sessions(state: &State) -> list_sessions::Result {
    list_sessions::Result {
        sessions: state.sessions.all().iter().map(|e| e.info()).collect(),
    }
}

/// `agent/getTranscript`: the conversation as of the end of the last run.
pub fn get_transcript(
    state: &State,
    params: get_transcript::Params,
) -> jsonrpc::Result<get_transcript::Result> {
    let entry = session(state, &params.session)?;
    Ok(get_transcript::Result {
        session: entry.info(),
        messages: entry.transcript(),
    })
}

/// `agent/setModel`: the next run goes to `model`.
pub fn set_model(state: &State, params: set_model::Params) -> jsonrpc::Result<set_model::Result> {
    let entry = session(state, &params.session)?;
    let models = state.host.models().map_err(failed)?;
    agentls_host::models::check_model(&models, &params.model).map_err(invalid)?;
    // A session not built yet simply starts on the new model.
    let built = match entry.live.try_lock() {
        Ok(live) => live.is_some(),
        Err(_) => true,
    };
    if built {
        *entry
            .pending_model
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(params.model.clone());
    }
    entry.set_model(params.model);
    Ok(entry.info())
}

/// `agent/listModels`.
pub fn list_models(state: &State) -> jsonrpc::Result<list_models::Result> {
    let config = state.config().config;
    let models = config.models().map_err(failed)?;
    let default = config.default_model();
    Ok(list_models::Result {
        models: models
            .models
            .iter()
            .map(|(name, m)| list_models::ModelInfo {
                name: name.clone(),
                model: m.model.clone().unwrap_or_else(|| name.clone()),
                wire: serde_json::to_value(m.wire)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
            })
            .collect(),
        default,
    })
}

/// `agent/listChanges`: the pending review changes (of one session, in one document),
/// where they are in the document now. Reads closed files from disk: run it off the LSP
/// task.
pub fn list_changes(
    state: &State,
    params: list_changes::Params,
) -> jsonrpc::Result<list_changes::Result> {
    let path = match &params.uri {
        Some(uri) => Some(
            DocUri::new(uri.as_str())
                .to_file_path()
                .ok_or_else(|| invalid(format!("not a file URI: {uri}")))?,
        ),
        None => None,
    };
    let entries = match &params.session {
        Some(id) => vec![session(state, id)?],
        None => state.sessions.all(),
    };
    let limits = state.config().config.read_limits();
    let encoding = state.encoding();
    let mut texts = std::collections::HashMap::new();
    let mut changes = Vec::new();
    for entry in entries {
        let pending = entry.pending().clone();
        for change in pending
            .iter()
            .filter(|c| path.as_ref().is_none_or(|p| c.path == *p))
        {
            let current = texts.entry(change.path.clone()).or_insert_with(|| {
                state
                    .store
                    .read(&change.path, &limits)
                    .inspect_err(
                        |e| tracing::warn!(path = %change.path.display(), "pending change: {e}"),
                    )
                    .ok()
            });
            changes.push(crate::convert::to_lsp::pending_change(
                &entry.id,
                change,
                current.as_ref(),
                encoding,
            ));
        }
    }
    // By document, then position; changes the user rewrote (no ranges) last in theirs.
    changes.sort_by_key(|c| {
        let at = c.ranges.first().map(|r| (r.start.line, r.start.character));
        (c.uri.clone(), at.is_none(), at, c.id)
    });
    Ok(list_changes::Result { changes })
}

/// Accepts or rejects pending changes: one (`change`), or all of `session`'s.
/// Rejections land one at a time, each moved over whatever the user typed since.
pub async fn review(
    state: &Arc<State>,
    client: &Client,
    session_id: Option<&str>,
    change: Option<u64>,
    action: review::Action,
) -> jsonrpc::Result<review::Result> {
    let entry = match (session_id, change) {
        (Some(id), _) => session(state, id)?,
        (None, Some(c)) => state
            .sessions
            .by_change(c)
            .ok_or_else(|| invalid(format!("no pending change {c}")))?,
        (None, None) => return Err(invalid("name a session or a change")),
    };
    let taken: Vec<crate::agent::PendingChange> = {
        let mut pending = entry.pending();
        let (take, keep): (Vec<_>, Vec<_>) = pending
            .drain(..)
            .partition(|c| change.is_none_or(|id| c.id == id));
        *pending = keep;
        take
    };
    if let (Some(id), true) = (change, taken.is_empty()) {
        return Err(invalid(format!(
            "change {id} is not pending in session {}",
            entry.id
        )));
    }
    let mut result = review::Result {
        accepted: vec![],
        rejected: vec![],
        failed: vec![],
    };
    if action == review::Action::Accept {
        result.accepted = taken.iter().map(|c| c.id).collect();
        entry.save(&state.host, state.root().as_deref());
        return Ok(result);
    }
    let sink = LspEditSink::new(client.clone(), state.clone());
    let limits = state.config().config.read_limits();
    for c in taken {
        // The live buffer with its version, else the file on disk.
        let current = match state.store.read(&c.path, &limits) {
            Ok(t) => Source {
                rope: t.rope,
                version: t.version,
            },
            Err(e) => {
                result.failed.push((c.id, e.to_string()));
                entry.pending().push(c);
                continue;
            }
        };
        let outcome = match crate::agent::reject_plan(&c, &current) {
            Ok(plan) => sink.land(plan, "reject").await.map_err(|e| e.message),
            Err(e) => Err(e),
        };
        match outcome {
            Ok(_) => result.rejected.push(c.id),
            Err(message) => {
                result.failed.push((c.id, message));
                entry.pending().push(c);
            }
        }
    }
    entry.save(&state.host, state.root().as_deref());
    Ok(result)
}

/// Starts a session for a task command and answers at once.
pub fn start_task(
    state: &Arc<State>,
    client: &Client,
    kind: TaskKind,
    args: TaskArgs,
    given_token: Option<String>,
) -> jsonrpc::Result<Started> {
    let prompt = prompt_for(state, kind, &args);
    let title = match (&args.uri, &args.range) {
        (Some(uri), Some(r)) => format!(
            "{} {}:{}",
            kind.label(),
            uri.rsplit('/').next().unwrap_or(uri),
            r.start.line + 1
        ),
        _ => format!("{}: {}", kind.label(), title_of(&args.instruction)),
    };
    let entry =
        create_session(state, args.model.clone(), kind.mode(), title.clone()).map_err(failed)?;
    let prompt = Prompt {
        text: prompt,
        user_text: None,
    };
    let token = start_run(
        state.clone(),
        client.clone(),
        entry.clone(),
        prompt,
        title,
        given_token,
        true,
    )
    .map_err(failed)?;
    Ok(Started {
        session: entry.id.clone(),
        progress_token: token,
    })
}

/// The user message for a task: the place, the instruction and the code there now.
fn prompt_for(state: &State, kind: TaskKind, args: &TaskArgs) -> String {
    let root = state.root();
    let path = args
        .uri
        .as_deref()
        .and_then(|u| DocUri::new(u).to_file_path());
    let rel = path.as_deref().map(|p| {
        root.as_deref()
            .and_then(|r| p.strip_prefix(r).ok())
            .unwrap_or(p)
    });
    let lines = args.range.map(|r| {
        let last = if r.end.line > r.start.line && r.end.character == 0 {
            r.end.line - 1
        } else {
            r.end.line
        };
        (r.start.line, last)
    });
    let text = match (&args.uri, lines) {
        (Some(uri), Some((a, b))) => state.store.snapshot(&DocUri::new(uri.as_str())).map(|s| {
            let n = s.rope.len_lines();
            let (a, b) = ((a as usize).min(n), (b as usize + 1).min(n));
            s.rope
                .slice(s.rope.line_to_char(a)..s.rope.line_to_char(b))
                .to_string()
        }),
        _ => None,
    };
    let excerpt = crate::agent::Excerpt {
        path: rel,
        lines: lines.map(|(a, b)| (a + 1, b + 1)),
        text,
    };
    task_prompt(kind, &args.instruction, &excerpt)
}

fn title_of(text: &str) -> String {
    let first = text.lines().next().unwrap_or("").trim();
    if first.chars().count() <= 60 {
        first.to_owned()
    } else {
        format!("{}…", first.chars().take(60).collect::<String>())
    }
}
