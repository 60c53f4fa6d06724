//! Creating sessions and running them: a run is a task of its own, so the request that
//! starts it answers at once.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agentls_agent::{Budget, SessionConfig, ToolSet};
use agentls_model::{CancellationToken, ClientOptions, ModelsConfig, Phase, Provider, RouteInput};
use agentls_protocol::agent::{Event, Mode, SessionStatus};
use agentls_tools::{Registry, ToolContext};
use tower_lsp::Client;

use super::approver::LspApprover;
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
    let config = state.config().config;
    let models = config.models()?;
    let name = model.or_else(|| default_model(&config)).ok_or_else(|| {
        "no model configured: add a [models.NAME] table to your agentls config (see README, Models)"
            .to_owned()
    })?;
    check_model(&models, &name)?;
    let entry = Arc::new(Entry::new(
        agentls_agent::new_session_id(),
        title,
        name,
        mode,
    ));
    state.sessions.insert(entry.clone());
    Ok(entry)
}

/// The model sessions use unless told: `[agent] model`, else the first configured.
pub fn default_model(config: &crate::config::Config) -> Option<String> {
    config.agent.model.clone().or_else(|| {
        config
            .models()
            .ok()
            .and_then(|m| m.models.keys().next().cloned())
    })
}

/// Registers the workspace's saved sessions, once; requests about sessions wait for it.
pub async fn load_saved_sessions(state: &State) {
    let config = state.config().config;
    let store = config
        .sessions
        .store()
        .map(|s| (s, config.sessions.retention()));
    let root = state.root();
    state
        .sessions
        .load_saved(store, root, default_model(&config))
        .await;
}

/// Saves `entry` (after a run, a change landed for review, a review): a restart of
/// the server loses neither the conversation nor the review state. A failure is
/// logged: the session goes on unsaved.
pub fn persist(state: &State, entry: &Entry) {
    let (Some(store), Some(root)) = (state.config().config.sessions.store(), state.root()) else {
        return;
    };
    if let Err(e) = store.save(&entry.to_saved(&root)) {
        tracing::warn!("session {} not saved: {e}", entry.id);
    }
}

/// Whether `name` can be used: a configured model, or `auto` with a router.
pub fn check_model(models: &ModelsConfig, name: &str) -> Result<(), String> {
    if name == "auto" {
        return match models.router() {
            Ok(Some(_)) => Ok(()),
            Ok(None) => {
                Err("`auto` needs a [router] table naming a fast and a strong model".to_owned())
            }
            Err(e) => Err(e.to_string()),
        };
    }
    if models.models.contains_key(name) {
        Ok(())
    } else {
        let known: Vec<&str> = models.models.keys().map(String::as_str).collect();
        Err(format!("unknown model {name:?}; configured: {known:?}"))
    }
}

/// The model `name` stands for: itself, or for `auto` the router's pick for `prompt`.
fn resolve_name(models: &ModelsConfig, name: &str, prompt: &str) -> Result<String, String> {
    if name != "auto" {
        return Ok(name.to_owned());
    }
    let router = models
        .router()
        .map_err(|e| e.to_string())?
        .ok_or("`auto` needs a [router] table")?;
    let mut input = RouteInput::new(Phase::Implement);
    input.request_chars = prompt.len();
    Ok(router.route(&input).model)
}

fn build_provider(models: &ModelsConfig, name: &str) -> Result<Arc<dyn Provider>, String> {
    models
        .provider(name, ClientOptions::default(), |k| std::env::var(k).ok())
        .map_err(|e| e.to_string())
}

/// The session's model and, if `with_summarizer`, its compaction summarizer (the
/// same provider when the summarizer is that model). Runs on a blocking thread: a
/// local model loads its weights for seconds the first time, which must not stall the
/// LSP handlers.
async fn providers(
    models: ModelsConfig,
    name: String,
    prompt: String,
    with_summarizer: bool,
) -> Result<(Arc<dyn Provider>, Option<Arc<dyn Provider>>), String> {
    tokio::task::spawn_blocking(move || {
        let name = resolve_name(&models, &name, &prompt)?;
        let main = build_provider(&models, &name)?;
        let summarizer = match models.summarizer_name().filter(|_| with_summarizer) {
            Some(s) if s == name => Some(main.clone()),
            Some(s) => Some(build_provider(&models, s)?),
            None => None,
        };
        Ok((main, summarizer))
    })
    .await
    .map_err(|e| format!("building the model failed: {e}"))?
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
    let Prompt {
        text: prompt,
        user_text,
    } = prompt;
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
                let failed = Event::Finished {
                    status: SessionStatus::Failed,
                    message,
                    steps: 0,
                    wall_ms: 0.0,
                    tokens: [0; 3],
                    cost_usd: None,
                };
                reporter.finish(failed).await;
                return;
            }
        }
    }
    let Some(live) = guard.as_mut() else {
        return;
    };
    // Judged against the turn before it, by the model that took that turn.
    if let Some(user_text) = &user_text {
        let config = state.config().config;
        if let (Some(judge), Ok(models)) = (
            crate::satisfaction::Judge::new(&config.stats, config.stats.db_path(None)),
            config.models(),
        ) {
            judge.follow_up(
                models,
                &entry.id,
                live.session.model_name(),
                live.session.transcript(),
                user_text,
            );
        }
    }
    let switch = entry
        .pending_model
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take();
    if let Some(name) = switch {
        let built = match state.config().config.models() {
            Ok(models) => providers(models, name.clone(), prompt.clone(), false).await,
            Err(e) => Err(e),
        };
        match built {
            Ok((p, _)) => live.session.switch_model(p),
            Err(e) => tracing::warn!("session {}: cannot switch to {name}: {e}", entry.id),
        }
    }
    entry.link_cancel(live.session.fresh_cancel_token());
    let Live {
        session,
        events,
        server_events,
    } = live;
    let mut recorder = agentls_stats::RunRecorder::start(
        &entry.id,
        "editor",
        session.model_name(),
        session.metrics(),
    );
    // The core's `finished` waits until the server's own events of the run are out.
    let mut finished = None;
    let status = {
        let run = session.run(prompt);
        tokio::pin!(run);
        loop {
            tokio::select! {
                Some(ev) = events.recv() => {
                    recorder.observe(&ev);
                    match ev {
                        Event::Finished { .. } => finished = Some(ev),
                        ev => reporter.send(ev).await,
                    }
                }
                Some(ev) = server_events.recv() => reporter.send(ev).await,
                status = &mut run => break status,
            }
        }
    };
    while let Ok(ev) = events.try_recv() {
        recorder.observe(&ev);
        match ev {
            Event::Finished { .. } => finished = Some(ev),
            ev => reporter.send(ev).await,
        }
    }
    let stats_db = state.config().config.stats.db_path(None);
    let examples = recorder.error_examples().clone();
    let alerts =
        crate::config::record_run(stats_db, recorder.finish(session.metrics(), &status)).await;
    show_alerts(&state, &client, &alerts, &examples).await;
    while let Ok(ev) = server_events.try_recv() {
        reporter.send(ev).await;
    }
    entry.set_messages(session.transcript().to_vec());
    persist(&state, &entry);
    entry.set_status(status.outcome().0);
    let finished =
        finished.unwrap_or_else(|| agentls_agent::event::finished(&status, session.metrics()));
    reporter.finish(finished).await;
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

/// Builds the agent session of `entry`: provider, tools writing through the editor,
/// approvals through the editor, the static context.
async fn build(state: &Arc<State>, client: &Client, entry: &Arc<Entry>) -> Result<Live, String> {
    let root = state
        .root()
        .ok_or("no workspace folder: the agent needs the client to name one")?;
    let config = state.config().config;
    let models = config.models()?;
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
    // servers; edits go through the editor, approvals to the user.
    let ctx = ToolContext {
        root: root.clone(),
        store: state.store.clone(),
        read_limits: config.read_limits(),
        index: state.index_handle(),
        semantic: state.semantic.clone(),
        sandbox,
        policy: Arc::new(agentls_sandbox::Policy::default()),
        edits: Arc::new(sink),
        approver: Arc::new(LspApprover {
            client: client.clone(),
            entry: Arc::downgrade(entry),
            timeout: Duration::from_secs(config.agent.approval_timeout_secs),
        }),
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
    let mut tools = ToolSet::from_registry(&Registry::standard());
    for tool in mcp_tools(state, &config).await.0 {
        tools.insert(tool);
    }
    let mode = match entry.mode {
        Mode::Agent => agentls_agent::Mode::Agent,
        Mode::Ask => agentls_agent::Mode::Ask,
        Mode::Plan => agentls_agent::Mode::Plan,
    };
    let options = agentls_agent::HeadlessOptions {
        workspace: root.clone(),
        task: String::new(),
        model: Some(entry.model()),
        models,
        provider: None,
        tools,
        session: SessionConfig {
            mode,
            budget: Budget {
                max_steps: config.agent.max_steps,
                ..Budget::default()
            },
            final_check: config
                .agent
                .final_check
                .then(|| agentls_agent::final_check::detect(&root))
                .flatten(),
            ..SessionConfig::default()
        },
        trajectory_dir: None,
        cancel: CancellationToken::new(),
        approver: None,
        verify: agentls_agent::VerifyConfig::default(),
    };
    // The same builder as `agentls run` and ACP: models (the router asked at every
    // step for `auto`), summarizer, subagents, trajectory.
    let hooks = agentls_agent::BuildHooks {
        id: Some(entry.id.clone()),
        context: Some(ctx),
        open_files,
        ..Default::default()
    };
    let agentls_agent::BuiltSession {
        mut session,
        events,
        ..
    } = agentls_agent::build_session(options, hooks)
        .await
        .map_err(|e| e.to_string())?;
    // A session saved by an earlier server (or another front end) goes on from there.
    let saved = entry.messages();
    if !saved.is_empty() {
        session.restore(saved);
    }
    let server_events = entry
        .take_server_events()
        .ok_or("internal: the session's event channel was taken twice")?;
    Ok(Live {
        session,
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
    let verify = match config.verify() {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!("language servers off: {e}");
            agentls_agent::VerifyConfig {
                enabled: false,
                ..Default::default()
            }
        }
    };
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

/// The tools of the user's `[mcp]` servers: connected by the first session that asks,
/// then shared (a server that fails costs its own tools, with a warning in the log).
/// A later change of `[mcp]` takes effect when the server restarts.
async fn mcp_tools(state: &State, config: &crate::config::Config) -> crate::state::McpTools {
    let mut cached = state.mcp_tools.lock().await;
    if let Some(tools) = cached.as_ref() {
        return tools.clone();
    }
    let mcp: agentls_mcp::McpConfig = if config.mcp.is_null() {
        agentls_mcp::McpConfig::default()
    } else {
        serde_json::from_value(config.mcp.clone()).unwrap_or_else(|e| {
            tracing::warn!("[mcp] is invalid, no MCP server is used: {e}");
            agentls_mcp::McpConfig::default()
        })
    };
    let (connected, _failed) = agentls_mcp::connect_all(&mcp).await;
    let tools = crate::state::McpTools(connected.into_iter().flat_map(|c| c.tools).collect());
    *cached = Some(tools.clone());
    tools
}
