//! `agentls acp`: the agent over the Agent Client Protocol (stable v1) on stdio, for
//! the editors that speak it (Zed, JetBrains IDEs, CodeCompanion, agent-shell, …).
//!
//! Each `session/new` builds a session with the same builder as `agentls run`
//! ([`agentls_agent::build_session`]): models, index, language servers, sandbox. A
//! `session/prompt` runs one turn on it and streams `session/update`s (text, tool calls
//! with diffs, the plan); `session/cancel` stops it and the prompt answers `cancelled`.
//! Commands the policy marks `ask` become `session/request_permission`. The files a
//! tool call names are read through `fs/read_text_file` when the client offers it
//! (`agentls_tools::client_files`: kept as live buffers for every tool and the
//! sandbox). Edits land in the editor's buffers through `fs/*` when the client offers
//! both, checked against the buffer first (see [`edits`]).
//!
//! Sessions are saved after every turn ([`agentls_agent::SessionStore`], under the
//! user data directory or `--sessions-dir`); `session/load` builds the session again
//! with its transcript and replays it to the client as updates.
//!
//! Modes ([`modes`]): edit freely, ask before edits, read-only.
//!
//! MCP servers: the user's `[mcp]` ones and those the client passes with
//! `session/new` or `session/load` (stdio or HTTP), their tools asked about before
//! each call (`agentls_mcp::client`).
//!
//! Terminals: when the client offers them, a command the policy asks about can be
//! run in the user's own terminal instead of the sandbox, if the user picks "Run in my
//! terminal" in the permission request ([`terminal`]).

mod commands;
mod edits;
mod models;
mod modes;
mod permission;
mod terminal;
mod updates;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, Implementation, InitializeRequest, InitializeResponse,
    LoadSessionRequest, LoadSessionResponse, NewSessionRequest, NewSessionResponse,
    PromptCapabilities, PromptRequest, PromptResponse, SessionNotification,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, SetSessionModeRequest,
    SetSessionModeResponse, StopReason,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Stdio};
use agentls_agent::{
    BuildHooks, BuiltSession, Event, HeadlessOptions, SavedSession, Session, SessionConfig,
    SessionStore, Status, ToolSet, VerifyConfig,
};
use agentls_model::{CancellationToken, ModelsConfig};

use crate::cli::AcpArgs;
use edits::{ClientSink, Recorded};
use updates::Updates;

/// What every session of the connection is built from.
struct Shared {
    models: ModelsConfig,
    model: Option<String>,
    verify: VerifyConfig,
    trajectory_dir: Option<PathBuf>,
    final_check: bool,
    /// `[mcp]` of the user config: servers every session gets.
    mcp: agentls_mcp::McpConfig,
    /// The embedding models of `semantic_search` (`[semantic]`), loaded once: with the
    /// whole model, the static vectors first and the whole model taking over.
    embedders: Option<crate::embedding::Tiers>,
    /// Where sessions are saved; none when there is no data directory.
    store: Option<SessionStore>,
    /// The client reads and writes text files for us (both, or we use the disk).
    client_fs: Mutex<bool>,
    /// The client reads text files (its buffers): the tools read through it.
    client_reads: Mutex<bool>,
    /// The client runs terminals: offered for commands the policy asks about.
    client_terminal: Mutex<bool>,
    /// Where runs are recorded for `agentls stats` (`None`: not recorded).
    stats_db: Option<PathBuf>,
    /// Judges follow-up prompts (`[stats] satisfaction`; `None`: off).
    judge: Option<crate::satisfaction::Judge>,
    sessions: Mutex<HashMap<String, Arc<Slot>>>,
}

/// One ACP session.
struct Slot {
    /// The session and its events; held for the length of a turn.
    live: tokio::sync::Mutex<BuiltSession>,
    /// Cancels the running turn.
    cancel: Mutex<Option<CancellationToken>>,
    /// Edits landed during the running tool call.
    recorded: Recorded,
    root: PathBuf,
    /// The mode the client picked (`modes::MODES`); the session takes it at each turn.
    mode: Mutex<&'static str>,
    /// Shared with the edit sink: "ask before edits".
    ask_edits: Arc<AtomicBool>,
    /// The model picked ([`models`]): the session's since its start, or the one it
    /// takes at the next turn.
    model: Mutex<String>,
    /// The model picked while a turn may run: handed over at the next turn.
    pending_model: Mutex<Option<Arc<dyn agentls_model::Provider>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    fn slot(&self, id: &str) -> Option<Arc<Slot>> {
        lock(&self.sessions).get(id).cloned()
    }
}

/// Runs `agentls acp` until the client closes stdin.
pub fn run(args: AcpArgs) -> anyhow::Result<ExitCode> {
    crate::logging::init(args.log_file.as_deref())?;
    let user = crate::commands::run::load_config(args.config.as_deref())?;
    let store = user.session_store(args.sessions_dir.clone());
    let stats_db = user.stats.db_path(args.stats_db.as_deref());
    let judge = crate::satisfaction::Judge::new(&user.stats, stats_db.clone());
    let embedders = user.embedding_tiers();
    let crate::commands::run::UserConfig {
        models,
        verify,
        mcp,
        ..
    } = user;
    let shared = Arc::new(Shared {
        models,
        model: args.model,
        verify,
        trajectory_dir: args.trajectory_dir,
        final_check: !args.no_final_check,
        mcp,
        embedders,
        store,
        client_fs: Mutex::new(false),
        client_reads: Mutex::new(false),
        client_terminal: Mutex::new(false),
        stats_db,
        judge,
        sessions: Mutex::new(HashMap::new()),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let result = runtime.block_on(serve(shared));
    runtime.shutdown_background();
    result.map_err(|e| anyhow::anyhow!("acp connection: {e}"))?;
    Ok(ExitCode::SUCCESS)
}

async fn serve(shared: Arc<Shared>) -> Result<(), agent_client_protocol::Error> {
    let (on_init, on_new, on_load, on_prompt, on_mode, on_config, on_cancel) = (
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared,
    );
    Agent
        .v1()
        .name("agentls")
        .on_receive_request(
            async move |req: InitializeRequest, responder: Responder<InitializeResponse>, _cx| {
                let caps = serde_json::to_value(&req.client_capabilities).unwrap_or_default();
                let reads = caps["fs"]["readTextFile"] == true;
                let fs = reads && caps["fs"]["writeTextFile"] == true;
                *lock(&on_init.client_fs) = fs;
                *lock(&on_init.client_reads) = reads;
                *lock(&on_init.client_terminal) = caps["terminal"] == true;
                tracing::info!(client_fs = fs, "acp: initialize");
                responder.respond(
                    InitializeResponse::new(req.protocol_version)
                        .agent_capabilities(
                            AgentCapabilities::new()
                                .load_session(on_init.store.is_some())
                                .prompt_capabilities(
                                    PromptCapabilities::new().embedded_context(true),
                                ),
                        )
                        .agent_info(Implementation::new("agentls", env!("CARGO_PKG_VERSION"))),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: NewSessionRequest,
                        responder: Responder<NewSessionResponse>,
                        cx: ConnectionTo<Client>| {
                let shared = on_new.clone();
                // Building indexes the workspace and starts its language servers: off
                // the dispatch loop, so the connection keeps answering meanwhile.
                tokio::spawn(async move {
                    let cwd = req.cwd.clone();
                    match open_session(&shared, &cwd, &req.mcp_servers, None, cx.clone()).await {
                        Ok(id) => {
                            let model = shared
                                .slot(&id)
                                .map(|s| lock(&s.model).clone())
                                .unwrap_or_default();
                            let answered = responder.respond(
                                NewSessionResponse::new(id.clone())
                                    .modes(modes::state(modes::MODES[0].id))
                                    .config_options(models::options(&model, &shared.models)),
                            );
                            offer_commands(&cx, &id);
                            answered
                        }
                        Err(e) => responder.respond_with_error(
                            agent_client_protocol::Error::invalid_params().data(e),
                        ),
                    }
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: LoadSessionRequest,
                        responder: Responder<LoadSessionResponse>,
                        cx: ConnectionTo<Client>| {
                let shared = on_load.clone();
                tokio::spawn(async move {
                    let _ = match load_session(&shared, &req, cx.clone()).await {
                        Ok((mode, model)) => {
                            let answered = responder.respond(
                                LoadSessionResponse::new()
                                    .modes(modes::state(mode))
                                    .config_options(models::options(&model, &shared.models)),
                            );
                            offer_commands(&cx, &req.session_id.to_string());
                            answered
                        }
                        Err(e) => responder.respond_with_error(
                            agent_client_protocol::Error::invalid_params().data(e),
                        ),
                    };
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: PromptRequest,
                        responder: Responder<PromptResponse>,
                        cx: ConnectionTo<Client>| {
                let id = req.session_id.to_string();
                let Some(slot) = on_prompt.slot(&id) else {
                    return responder.respond_with_error(
                        agent_client_protocol::Error::invalid_params()
                            .data(format!("no session {id}")),
                    );
                };
                let shared = on_prompt.clone();
                tokio::spawn(async move {
                    let answer = prompt(shared, slot, id, &req, &cx).await;
                    let _ = match answer {
                        Ok(reason) => responder.respond(PromptResponse::new(reason)),
                        Err(e) => responder.respond_with_error(e),
                    };
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: SetSessionConfigOptionRequest,
                        responder: Responder<SetSessionConfigOptionResponse>,
                        _cx| {
                let shared = on_config.clone();
                tokio::spawn(async move {
                    let _ = match set_model(&shared, &req).await {
                        Ok(options) => {
                            responder.respond(SetSessionConfigOptionResponse::new(options))
                        }
                        Err(e) => responder.respond_with_error(
                            agent_client_protocol::Error::invalid_params().data(e),
                        ),
                    };
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: SetSessionModeRequest,
                        responder: Responder<SetSessionModeResponse>,
                        _cx| {
                let id = req.session_id.to_string();
                let mode_id = req.mode_id.to_string();
                let (Some(slot), Some(mode)) = (on_mode.slot(&id), modes::find(&mode_id)) else {
                    return responder.respond_with_error(
                        agent_client_protocol::Error::invalid_params()
                            .data(format!("no session {id} or no mode {mode_id}")),
                    );
                };
                // Edits ask from now on; the tools follow at the next turn.
                *lock(&slot.mode) = mode.id;
                slot.ask_edits.store(mode.ask_edits, Ordering::Relaxed);
                tracing::info!("acp: session {id} in mode {}", mode.id);
                responder.respond(SetSessionModeResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: CancelNotification, _cx| {
                let id = n.session_id.to_string();
                if let Some(slot) = on_cancel.slot(&id)
                    && let Some(token) = lock(&slot.cancel).as_ref()
                {
                    tracing::info!("acp: cancel {id}");
                    token.cancel();
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(Stdio::new())
        .await
}

/// Builds a session in `cwd`, new or (`saved`) going on from a saved one; its id.
async fn open_session(
    shared: &Shared,
    cwd: &std::path::Path,
    client_servers: &[agent_client_protocol::v1::schema::McpServer],
    saved: Option<SavedSession>,
    cx: ConnectionTo<Client>,
) -> Result<String, String> {
    if !cwd.is_absolute() {
        return Err(format!("cwd must be absolute: {}", cwd.display()));
    }
    let root = cwd
        .canonicalize()
        .map_err(|e| format!("{}: {e}", cwd.display()))?;
    let id_cell: Arc<OnceLock<String>> = Arc::new(OnceLock::new());
    let recorded = Recorded::default();
    let client_fs = *lock(&shared.client_fs);
    let user_terminal = lock(&shared.client_terminal).then(|| {
        Arc::new(terminal::ClientTerminal {
            cx: cx.clone(),
            session: id_cell.clone(),
        }) as Arc<dyn agentls_tools::UserTerminal>
    });
    let client_files = lock(&shared.client_reads).then(|| {
        Arc::new(edits::ClientReads {
            cx: cx.clone(),
            session: id_cell.clone(),
        }) as Arc<dyn agentls_tools::ClientFiles>
    });
    let ask_edits = Arc::new(AtomicBool::new(false));
    let wrap: agentls_agent::WrapEdits = {
        let (cx, session, recorded, ask_edits) = (
            cx.clone(),
            id_cell.clone(),
            recorded.clone(),
            ask_edits.clone(),
        );
        Box::new(move |disk| {
            Arc::new(ClientSink {
                disk,
                cx,
                session,
                client_fs,
                ask_edits,
                recorded,
            })
        })
    };
    // A loaded session goes on with the model it was saved with, if still configured.
    let model = saved
        .as_ref()
        .and_then(|s| s.model.clone())
        .filter(|m| models::pickable(m, &shared.models))
        .or_else(|| shared.model.clone());
    let model_name = models::initial(model.as_deref(), &shared.models).unwrap_or_default();
    let options = HeadlessOptions {
        workspace: root.clone(),
        task: String::new(),
        model,
        models: shared.models.clone(),
        provider: None,
        tools: session_tools(shared, client_servers).await,
        session: SessionConfig {
            final_check: shared
                .final_check
                .then(|| agentls_agent::final_check::detect(&root))
                .flatten(),
            ..SessionConfig::default()
        },
        trajectory_dir: shared.trajectory_dir.clone(),
        cancel: CancellationToken::new(),
        approver: Some(Arc::new(permission::AskClient {
            cx,
            session: id_cell.clone(),
        })),
        verify: shared.verify.clone(),
    };
    let hooks = BuildHooks {
        wrap_edits: Some(wrap),
        id: saved.as_ref().map(|s| s.id.clone()),
        client_files,
        terminal: user_terminal,
        embedder: shared.embedders.as_ref().map(|t| t.now.clone()),
        successor: shared.embedders.as_ref().and_then(|t| t.later.clone()),
        ..Default::default()
    };
    let mut built = agentls_agent::build_session(options, hooks)
        .await
        .map_err(|e| e.to_string())?;
    let id = built.session.id().to_owned();
    let _ = id_cell.set(id.clone());
    match saved {
        Some(saved) => built.session.restore(saved.messages),
        None => save(shared, &built.session, &root, &model_name),
    }
    tracing::info!("acp: session {id} in {}", root.display());
    let slot = Arc::new(Slot {
        live: tokio::sync::Mutex::new(built),
        cancel: Mutex::new(None),
        recorded,
        root,
        mode: Mutex::new(modes::MODES[0].id),
        ask_edits,
        model: Mutex::new(model_name),
        pending_model: Mutex::new(None),
    });
    lock(&shared.sessions).insert(id.clone(), slot);
    Ok(id)
}

/// The standard tools, those of the user's `[mcp]` servers and those of the servers
/// the client passed for this session (each connected within its timeout; a server
/// that fails costs its own tools).
async fn session_tools(
    shared: &Shared,
    client_servers: &[agent_client_protocol::v1::schema::McpServer],
) -> ToolSet {
    let mut config = shared.mcp.clone();
    for server in client_servers {
        match client_server_spec(server) {
            Ok((name, spec)) => {
                config.servers.insert(name, spec);
            }
            Err(e) => tracing::warn!("acp: an MCP server of the client is not used: {e}"),
        }
    }
    crate::commands::run::tools_with_mcp(&config).await
}

/// An ACP client's MCP server as our spec: stdio or HTTP (SSE is not supported).
fn client_server_spec(
    server: &agent_client_protocol::v1::schema::McpServer,
) -> Result<(String, agentls_mcp::ServerSpec), String> {
    let v = serde_json::to_value(server).map_err(|e| e.to_string())?;
    let name = v["name"].as_str().unwrap_or_default().to_owned();
    let pairs = |key: &str| -> std::collections::BTreeMap<String, String> {
        v[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| {
                Some((
                    p["name"].as_str()?.to_owned(),
                    p["value"].as_str()?.to_owned(),
                ))
            })
            .collect()
    };
    let mut spec = match (v["command"].as_str(), v["url"].as_str(), v["type"].as_str()) {
        (Some(command), _, _) => {
            let args = v["args"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|a| a.as_str().map(str::to_owned))
                .collect();
            let mut spec = agentls_mcp::ServerSpec::stdio(command, args);
            spec.env = pairs("env");
            spec
        }
        (None, Some(url), Some("http")) => {
            let mut spec = agentls_mcp::ServerSpec::stdio(String::new(), Vec::new());
            spec.command = None;
            spec.url = Some(url.to_owned());
            spec.headers = pairs("headers");
            spec
        }
        _ => return Err(format!("{name}: only stdio and HTTP servers are supported")),
    };
    // The client chose these servers for this session: their tools run without asking
    // again only if the client's user allowed them there, which ACP does not say; ask.
    spec.allow.clear();
    Ok((name, spec))
}

/// Saves `session` (after each turn); a failure is logged, the session goes on.
fn save(shared: &Shared, session: &Session, root: &std::path::Path, model: &str) {
    let Some(store) = &shared.store else {
        return;
    };
    let mut saved = SavedSession::new(session.id(), root, session.transcript());
    saved.model = (!model.is_empty()).then(|| model.to_owned());
    if let Err(e) = store.save(&saved) {
        tracing::warn!("acp: session {} not saved: {e}", session.id());
    }
}

/// `session/load`: the saved session built again in the client's `cwd`, its
/// conversation replayed to the client as updates before the answer.
async fn load_session(
    shared: &Arc<Shared>,
    req: &LoadSessionRequest,
    cx: ConnectionTo<Client>,
) -> Result<(&'static str, String), String> {
    let id = req.session_id.to_string();
    if shared.slot(&id).is_none() {
        let store = shared.store.as_ref().ok_or("sessions are not saved here")?;
        let saved = store.load(&id).map_err(|e| e.to_string())?;
        if saved.cwd != req.cwd {
            tracing::info!(
                "acp: session {id} saved in {}, loaded in {}",
                saved.cwd.display(),
                req.cwd.display()
            );
        }
        open_session(shared, &req.cwd, &req.mcp_servers, Some(saved), cx.clone()).await?;
    }
    let slot = shared
        .slot(&id)
        .ok_or("the session went away while loading")?;
    let live = slot.live.lock().await;
    for update in updates::history(live.session.transcript(), &slot.root) {
        cx.send_notification(SessionNotification::new(id.clone(), update))
            .map_err(|e| e.to_string())?;
    }
    let mode = *lock(&slot.mode);
    let model = lock(&slot.model).clone();
    Ok((mode, model))
}

/// `session/set_config_option` for `model`: the provider is built now (a broken
/// configuration is refused here, not at the next turn) and handed over at the
/// session's next turn.
async fn set_model(
    shared: &Arc<Shared>,
    req: &SetSessionConfigOptionRequest,
) -> Result<Vec<agent_client_protocol::v1::schema::SessionConfigOption>, String> {
    let id = req.session_id.to_string();
    let slot = shared.slot(&id).ok_or_else(|| format!("no session {id}"))?;
    if req.config_id.to_string() != models::CONFIG_ID {
        return Err(format!(
            "no option {}; the options are: {}",
            req.config_id,
            models::CONFIG_ID
        ));
    }
    let value = serde_json::to_value(&req.value).unwrap_or_default();
    let name = value["value"]
        .as_str()
        .or(value.as_str())
        .ok_or("the model is given by name")?
        .to_owned();
    if !models::pickable(&name, &shared.models) {
        return Err(format!(
            "no model {name:?}; configured: {}",
            shared
                .models
                .models
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let (models, picked) = (shared.models.clone(), name.clone());
    let provider = tokio::task::spawn_blocking(move || {
        models.provider(&picked, agentls_model::ClientOptions::default(), |k| {
            std::env::var(k).ok()
        })
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| e.to_string())?;
    *lock(&slot.pending_model) = Some(provider);
    *lock(&slot.model) = name.clone();
    tracing::info!("acp: session {id} switches to {name} at its next turn");
    Ok(models::options(&name, &shared.models))
}

/// Tells the client the session's slash commands ([`commands`]), once it knows the
/// session.
fn offer_commands(cx: &ConnectionTo<Client>, id: &str) {
    if let Some(update) = commands::available()
        && let Err(e) = cx.send_notification(SessionNotification::new(id.to_owned(), update))
    {
        tracing::warn!("acp: commands not offered: {e}");
    }
}

/// Runs one turn, streaming its updates; why it stopped.
async fn prompt(
    shared: Arc<Shared>,
    slot: Arc<Slot>,
    id: String,
    req: &PromptRequest,
    cx: &ConnectionTo<Client>,
) -> Result<StopReason, agent_client_protocol::Error> {
    let Ok(mut live) = slot.live.try_lock() else {
        return Err(agent_client_protocol::Error::invalid_request()
            .data("a prompt is already running in this session; cancel it or wait"));
    };
    let typed = prompt_text(&req.prompt);
    // A prompt after the agent's turn: judged against it, off the turn's path,
    // by the model that took that turn (before a switch below).
    if let Some(judge) = &shared.judge {
        judge.follow_up(
            shared.models.clone(),
            &id,
            live.session.model_name(),
            live.session.transcript(),
            &typed,
        );
    }
    if let Some(m) = modes::find(*lock(&slot.mode)) {
        live.session.set_mode(m.mode);
    }
    let picked = lock(&slot.pending_model).take();
    if let Some(provider) = picked {
        live.session.switch_model(provider);
    }
    *lock(&slot.cancel) = Some(live.session.fresh_cancel_token());
    let message = commands::expand(&typed);
    let mut updates = Updates::new(slot.root.clone()).with_window(live.session.context_window());
    let mut recorder = agentls_stats::RunRecorder::start(
        &id,
        "acp",
        live.session.model_name(),
        live.session.metrics(),
    );
    let send = |ev: &Event| {
        recorder.observe(ev);
        let landed = match ev {
            Event::ToolFinished { .. } => slot.recorded.take(),
            _ => Vec::new(),
        };
        for update in updates.of(ev, landed) {
            if let Err(e) = cx.send_notification(SessionNotification::new(id.clone(), update)) {
                tracing::warn!("acp: update not sent: {e}");
            }
        }
    };
    let status = live.run(message, send).await.status;
    // Recorded before the answer: a client may end the process right after it.
    crate::config::record_run(
        shared.stats_db.clone(),
        recorder.finish(live.session.metrics(), &status),
    )
    .await;
    *lock(&slot.cancel) = None;
    save(&shared, &live.session, &slot.root, &lock(&slot.model));
    match status {
        Status::Done { .. } => Ok(StopReason::EndTurn),
        Status::Cancelled => Ok(StopReason::Cancelled),
        Status::BudgetExhausted { .. } => Ok(StopReason::MaxTurnRequests),
        Status::ProviderError { class, message } => {
            Err(agent_client_protocol::Error::internal_error().data(format!("{class}: {message}")))
        }
    }
}

/// The prompt's blocks as one message: text as is, files the user attached as fenced
/// blocks, links to files by their URI.
fn prompt_text(blocks: &[agent_client_protocol::v1::schema::ContentBlock]) -> String {
    let mut out = String::new();
    for block in blocks {
        let v = serde_json::to_value(block).unwrap_or_default();
        let piece = match v["type"].as_str() {
            Some("text") => v["text"].as_str().unwrap_or_default().to_owned(),
            Some("resource") => {
                let r = &v["resource"];
                match r["text"].as_str() {
                    Some(text) => format!(
                        "\n\nAttached {}:\n```\n{text}\n```\n",
                        r["uri"].as_str().unwrap_or("a file")
                    ),
                    None => String::new(),
                }
            }
            Some("resource_link") => format!(
                " {} ",
                v["uri"].as_str().or(v["name"].as_str()).unwrap_or_default()
            ),
            _ => String::new(),
        };
        out.push_str(&piece);
    }
    out
}
