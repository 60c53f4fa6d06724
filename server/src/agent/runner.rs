//! Creating sessions and running them: a run is a task of its own, so the request that
//! starts it answers at once.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agentls_host::{Adapters, Emitted, Spec};
use agentls_model::CancellationToken;
use agentls_protocol::agent::ops::Op;
use agentls_protocol::agent::{Event, Mode, SessionStatus};
use agentls_tools::ToolContext;
use tower_lsp::Client;

use super::approver;
use super::events::Reporter;
use super::sessions::{Entry, Live};
use super::sink::SessionSink;
use crate::config::ReviewMode;
use crate::edit_sink::LspEditSink;
use crate::state::State;

/// A new idle session on `model` (or the configured default), registered in the server.
/// Checks the model exists; builds nothing else until the first run.
pub fn create_session(
    state: &State,
    model: Option<String>,
    mode: Mode,
    title: String,
) -> Result<Arc<Entry>, String> {
    if state.root().is_none() {
        return Err("no workspace folder: the agent needs the client to name one".to_owned());
    }
    let models = state.host.models()?;
    let name = model.or_else(|| state.host.default_model()).ok_or_else(|| {
        "no model configured: add a [models.NAME] table to your agentls config (see docs/models.md)"
            .to_owned()
    })?;
    agentls_host::models::check_model(&models, &name)?;
    let entry = Arc::new(Entry::new(
        agentls_agent::new_session_id(),
        title,
        name,
        mode,
    ));
    state.sessions.insert(entry.clone());
    Ok(entry)
}

/// Registers the workspace's saved sessions, once; requests about sessions wait for it.
pub async fn load_saved_sessions(state: &State) {
    let retention = state.host.config().sessions.retention();
    let store = state.host.store().map(|s| (s, retention));
    let root = state.root();
    state
        .sessions
        .load_saved(store, root, state.host.default_model())
        .await;
}

/// What a run is asked.
#[derive(Debug, Clone)]
pub struct Prompt {
    /// The message the model gets.
    pub text: String,
    /// The user's own words when they follow up in a session the agent answered
    /// (a panel's prompt): judged for `[stats] satisfaction` when that is on.
    pub user_text: Option<String>,
}

/// Starts a run of `entry` on `prompt` and returns at once with the progress token the
/// run reports under, if any. `given_token` is a token the client chose (the request's
/// `workDoneToken`); otherwise, with `create_token`, the server creates one when the
/// client shows progress (not for a panel's prompts: the panel shows their progress).
pub fn start_run(
    state: Arc<State>,
    client: Client,
    entry: Arc<Entry>,
    prompt: Prompt,
    title: String,
    given_token: Option<String>,
    create_token: bool,
) -> Result<Option<String>, String> {
    if !entry.try_start(&title) {
        return Err(format!(
            "session {} is already running; cancel it or wait",
            entry.id
        ));
    }
    let caps = state.client_caps();
    let token = match given_token {
        Some(t) => Some((t, false)),
        None if create_token && caps.work_done_progress => {
            Some((format!("agentls/{}/{}", entry.id, state.next_token()), true))
        }
        None => None,
    };
    if let Some((t, _)) = &token {
        state.sessions.bind_progress(t.clone(), entry.id.clone());
    }
    let reply = token.as_ref().map(|(t, _)| t.clone());
    tokio::spawn(run(state, client, entry, prompt, title, token));
    Ok(reply)
}

async fn run(
    state: Arc<State>,
    client: Client,
    entry: Arc<Entry>,
    prompt: Prompt,
    title: String,
    token: Option<(String, bool)>,
) {
    let extension = state.client_caps().agent_extension;
    let mut reporter =
        Reporter::begin(client.clone(), entry.clone(), token, extension, &title).await;
    reporter.show_document = state.client_caps().show_document;
    let mut guard = entry.live.lock().await;
    if guard.is_none() {
        match build(&state, &client, &entry).await {
            Ok(live) => *guard = Some(live),
            Err(message) => {
                entry.set_status(SessionStatus::Failed);
                reporter.finish(failed(message)).await;
                return;
            }
        }
    }
    let Some(live) = guard.as_mut() else {
        return;
    };
    let turn = turn(&state, &client, &entry, live, prompt, &mut reporter).await;
    let (turn, finished) = match turn {
        Ok(done) => done,
        Err(message) => {
            entry.set_status(SessionStatus::Failed);
            reporter.finish(failed(message)).await;
            return;
        }
    };
    show_alerts(&state, &client, &turn.alerts, &turn.error_examples).await;
    while let Ok(ev) = live.server_events.try_recv() {
        reporter.send(ev).await;
    }
    // The host saved the session at the turn's end, with the review changes the
    // entry handed it (`Entry::save`).
    entry.set_messages(turn.transcript);
    let status = &turn.outcome.status;
    entry.set_status(status.outcome().0);
    let finished =
        finished.unwrap_or_else(|| agentls_agent::event::finished(status, &turn.outcome.metrics));
    reporter.finish(finished).await;
}

/// One turn through the session's queue: a model picked since the last turn, then the
/// prompt; its events rendered (the server's own among them), approval requests asked
/// in the editor and answered with ops, a cancel asked meanwhile sent as an interrupt.
/// The turn and its `finished` event, held back until the server's events are out.
async fn turn(
    state: &State,
    client: &Client,
    entry: &Entry,
    live: &mut Live,
    prompt: Prompt,
    reporter: &mut Reporter,
) -> Result<(agentls_host::Turn, Option<Event>), String> {
    let switch = entry
        .pending_model
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take();
    let switch = switch.map(|name| {
        let op = Op::OverrideTurnContext {
            model: Some(name),
            mode: None,
        };
        live.handle.submit(op)
    });
    let sub = live.handle.submit(Op::Prompt {
        text: prompt.text,
        user_text: prompt.user_text,
    });
    entry.interrupt_if_asked();
    let timeout = Duration::from_secs(state.config().config.agent.approval_timeout_secs);
    let mut finished = None;
    loop {
        tokio::select! {
            emitted = live.events.recv() => match emitted {
                Some(Emitted::Event { event, .. }) => {
                    if let Event::Approval { id: Some(id), what, granted: None, .. } = &event {
                        let to = live.handle.submitter();
                        approver::ask(client.clone(), to, id.clone(), what.clone(), timeout);
                    }
                    match event {
                        Event::Finished { .. } => finished = Some(event),
                        event => reporter.send(event).await,
                    }
                }
                Some(Emitted::TurnEnded { sub: s, turn }) if s == sub => {
                    return Ok((*turn, finished));
                }
                Some(Emitted::Refused { sub: s, error }) if s == sub => return Err(error),
                Some(Emitted::Refused { sub: s, error }) if Some(&s) == switch.as_ref() => {
                    tracing::warn!("session {}: cannot switch model: {error}", entry.id);
                }
                Some(_) => {}
                None => return Err("internal: the session ended without an outcome".to_owned()),
            },
            Some(ev) = live.server_events.recv() => reporter.send(ev).await,
        }
    }
}

/// Compacts `entry`'s session through its queue, after the run going on (which holds
/// it): how many tool outputs were masked and messages folded. A session not built in
/// this server has nothing to compact.
pub async fn compact(entry: &Entry) -> Result<(usize, usize), String> {
    let mut guard = entry.live.lock().await;
    let Some(live) = guard.as_mut() else {
        return Ok((0, 0));
    };
    let sub = live.handle.submit(Op::Compact);
    let mut done = (0, 0);
    loop {
        match live.events.recv().await {
            Some(Emitted::Event {
                sub: s,
                event: Event::Compacted { masked, summarized },
            }) if s == sub => done = (masked, summarized),
            Some(Emitted::Done { sub: s }) if s == sub => return Ok(done),
            Some(Emitted::Refused { sub: s, error }) if s == sub => return Err(error),
            Some(_) => {}
            None => return Err("internal: the session ended".to_owned()),
        }
    }
}

/// The end of a run that failed before the model was asked anything.
fn failed(message: String) -> Event {
    Event::Finished {
        status: SessionStatus::Failed,
        message,
        steps: 0,
        wall_ms: 0.0,
        tokens: [0; 3],
        cost_usd: None,
    }
}

/// Tells the user, once per server process for each model and tool, that the tool's
/// failure rate left its baseline, with what this run's failures said.
async fn show_alerts(
    state: &State,
    client: &Client,
    alerts: &[agentls_stats::Alert],
    examples: &std::collections::BTreeMap<String, Vec<String>>,
) {
    for a in alerts {
        let first = state
            .alerts_shown
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((a.model.clone(), a.tool.clone()));
        if !first {
            continue;
        }
        let mut message = format!(
            "agentls: failing more than usual in the last day: {}",
            a.describe()
        );
        if let Some(ex) = examples.get(&a.tool) {
            message.push_str(&format!(". Lately: {}", ex.join("; ")));
        }
        message.push_str(". See `agentls stats`.");
        client
            .show_message(tower_lsp::lsp_types::MessageType::WARNING, message)
            .await;
    }
}

/// Builds the agent session of `entry` and puts it on its queue: provider, tools
/// writing through the editor, the static context. Approvals come as events of the
/// queue ([`turn`]).
async fn build(state: &Arc<State>, client: &Client, entry: &Arc<Entry>) -> Result<Live, String> {
    let root = state
        .root()
        .ok_or("no workspace folder: the agent needs the client to name one")?;
    let config = state.config().config;
    let review = config.agent.review == ReviewMode::Review;
    let mut inner = LspEditSink::new(client.clone(), state.clone());
    if review {
        inner = inner.confirming(format!("agentls session {}", entry.id));
    }
    let sink = SessionSink {
        inner,
        state: state.clone(),
        entry: Arc::downgrade(entry),
        review,
    };
    let writes = entry.mode == Mode::Agent;
    let sandbox = if writes {
        match agentls_sandbox::Sandbox::new(agentls_sandbox::SandboxConfig::new(&root)) {
            Ok(sb) => Some(Arc::new(sb)),
            Err(e) => {
                tracing::warn!("no sandbox, the agent cannot run commands: {e}");
                None
            }
        }
    } else {
        None
    };
    // The server's own view of the workspace: its live buffers, index and language
    // servers; edits go through the editor. Its approver is the queue's (the host
    // puts it in): this one is never asked.
    let ctx = ToolContext {
        root: root.clone(),
        store: state.store.clone(),
        read_limits: config.read_limits(),
        index: state.index_handle(),
        semantic: state.semantic.clone(),
        sandbox,
        policy: Arc::new(agentls_sandbox::Policy::default()),
        edits: Arc::new(sink),
        approver: Arc::new(agentls_tools::DenyAll),
        diagnostics: Some(Arc::new(state.diagnostics.clone())),
        checker: checker(state, &root, &config)
            .await
            .map(|c| c as Arc<dyn agentls_tools::Checker>),
        subagents: None,
        cancel: CancellationToken::new(),
        progress: None,
        reads: Arc::new(agentls_tools::ReadVersions::new()),
        client_files: None,
        terminal: None,
    };
    let open_files: Vec<PathBuf> = state
        .store
        .snapshots()
        .iter()
        .filter_map(|s| s.uri.to_file_path())
        .collect();
    let mode = match entry.mode {
        Mode::Agent => agentls_agent::Mode::Agent,
        Mode::Ask => agentls_agent::Mode::Ask,
        Mode::Plan => agentls_agent::Mode::Plan,
    };
    // A session saved by an earlier server (or another front end) goes on from there.
    let saved = entry.messages();
    let spec = Spec {
        workspace: root.clone(),
        model: Some(entry.model()),
        mode,
        resume: (!saved.is_empty())
            .then(|| agentls_agent::SavedSession::new(&entry.id, &root, &saved)),
        id: Some(entry.id.clone()),
        user_mcp: true,
        ..Spec::default()
    };
    let adapters = Adapters {
        context: Some(ctx),
        open_files,
        ..Adapters::default()
    };
    let (handle, events) = state.host.open(spec, adapters).await?.spawn();
    let server_events = entry
        .take_server_events()
        .ok_or("internal: the session's event channel was taken twice")?;
    // From now on the host saves the entry's record, with its title and review
    // changes, which the entry hands over with a save op.
    entry.connect(handle.submitter());
    Ok(Live {
        handle,
        events,
        server_events,
    })
}

/// The server's language servers for `root`: detected (a bounded walk, off the async
/// threads) and started by the first session, shared by the next ones. A broken
/// `[verify]` table is logged and leaves them off.
async fn checker(
    state: &Arc<State>,
    root: &std::path::Path,
    config: &crate::config::Config,
) -> Option<Arc<agentls_agent::LspChecker>> {
    let mut slot = state.checker.lock().await;
    if let Some(known) = &*slot {
        return known.clone();
    }
    let verify = config.verify();
    let root = root.to_path_buf();
    let found =
        tokio::task::spawn_blocking(move || agentls_agent::LspChecker::detect(&root, &verify))
            .await
            .ok()
            .flatten()
            .map(Arc::new);
    if let Some(checker) = &found {
        // Started from this task (a runtime worker), so they die with the server.
        checker.warm_up();
    }
    *slot = Some(found.clone());
    found
}
