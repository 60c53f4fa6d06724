//! `agentls acp`: the agent over the Agent Client Protocol (stable v1) on stdio, for
//! the editors that speak it (Zed, JetBrains IDEs, CodeCompanion, agent-shell, …).
//!
//! Each `session/new` opens a session through the session host, as `agentls run` does
//! ([`agentls_host::Host::open`]): models, index, language servers, sandbox. A
//! `session/prompt` runs one turn on it and streams `session/update`s (text, tool calls
//! with diffs, the plan); `session/cancel` stops it and the prompt answers `cancelled`.
//! The session runs on its submission queue ([`agentls_host::SessionHandle`]): each of
//! these is an op (prompt, interrupt, the model and mode, an approval's answer) and
//! the updates are its events. Commands the policy marks `ask` come as approval
//! events, become `session/request_permission`, and the answer goes back as an op. The files a
//! tool call names are read through `fs/read_text_file` when the client offers it
//! (`agentls_tools::client_files`: kept as live buffers for every tool and the
//! sandbox). Edits land in the editor's buffers through `fs/*` when the client offers
//! both, checked against the buffer first (see [`edits`]).
//!
//! Sessions are saved after every turn by the host (under the user data directory or
//! `--sessions-dir`); `session/load` builds the session again
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
use agentls_agent::{Event, SavedSession, Status};
use agentls_host::{Adapters, Emitted, Host, HostOptions, SessionHandle, Spec};
use agentls_model::ModelsConfig;
use agentls_protocol::agent::ops::Op;

use crate::cli::AcpArgs;
use edits::{ClientSink, Recorded};
use updates::Updates;

/// What every session of the connection is built from.
struct Shared {
    /// Opens, records and saves the sessions.
    host: Host,
    /// The configured models, offered as the model option.
    models: ModelsConfig,
    trajectory_dir: Option<PathBuf>,
    final_check: bool,
    /// The client reads and writes text files for us (both, or we use the disk).
    client_fs: Mutex<bool>,
    /// The client reads text files (its buffers): the tools read through it.
    client_reads: Mutex<bool>,
    /// The client runs terminals: offered for commands the policy asks about.
    client_terminal: Mutex<bool>,
    sessions: Mutex<HashMap<String, Arc<Slot>>>,
}

/// One ACP session.
struct Slot {
    /// The session's submission queue.
    handle: SessionHandle,
    /// What the session emits; held by the prompt that runs.
    events: tokio::sync::Mutex<tokio::sync::mpsc::UnboundedReceiver<Emitted>>,
    /// The conversation as of the last turn's end (replayed by `session/load`).
    transcript: Mutex<Vec<agentls_model::Message>>,
    /// The model's context window, for the usage updates.
    window: u32,
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
    pending_model: Mutex<Option<String>>,
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
    let flags = crate::config::session_flags(
        args.model.as_deref(),
        args.sessions_dir.as_deref(),
        args.stats_db.as_deref(),
    );
    let config = crate::config::load_for_cli(args.config.as_deref(), None, flags)?;
    let models = config.models().map_err(anyhow::Error::msg)?;
    let options = HostOptions::interactive("acp", &config);
    let host = Host::new(config, options);
    let shared = Arc::new(Shared {
        host,
        models,
        trajectory_dir: args.trajectory_dir,
        final_check: !args.no_final_check,
        client_fs: Mutex::new(false),
        client_reads: Mutex::new(false),
        client_terminal: Mutex::new(false),
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
                                .load_session(on_init.host.store().is_some())
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
                tokio::spawn(async move {
                    let answer = prompt(slot, id, &req, &cx).await;
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
                if let Some(slot) = on_cancel.slot(&id) {
                    tracing::info!("acp: cancel {id}");
                    slot.handle.submit(Op::Interrupt);
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
        .or_else(|| shared.host.default_model());
    let model_name = model.clone().unwrap_or_default();
    let spec = Spec {
        workspace: root.clone(),
        model,
        resume: saved,
        final_check: (!shared.final_check).then_some(false),
        trajectory_dir: shared.trajectory_dir.clone(),
        user_mcp: true,
        session_mcp: session_servers(client_servers),
        ..Spec::default()
    };
    let adapters = Adapters {
        wrap_edits: Some(wrap),
        client_files,
        terminal: user_terminal,
        ..Adapters::default()
    };
    let hosted = shared.host.open(spec, adapters).await?;
    let id = hosted.id().to_owned();
    let transcript = hosted.session().transcript().to_vec();
    let window = hosted.session().context_window();
    let (handle, events) = hosted.spawn();
    let _ = id_cell.set(id.clone());
    tracing::info!("acp: session {id} in {}", root.display());
    let slot = Arc::new(Slot {
        handle,
        events: tokio::sync::Mutex::new(events),
        transcript: Mutex::new(transcript),
        window,
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

/// The MCP servers the client passed for this session (the host adds the user's
/// `[mcp]` ones; each is connected within its timeout, and one that fails costs its
/// own tools).
fn session_servers(
    client_servers: &[agent_client_protocol::v1::schema::McpServer],
) -> agentls_mcp::McpConfig {
    let mut config = agentls_mcp::McpConfig::default();
    for server in client_servers {
        match client_server_spec(server) {
            Ok((name, spec)) => {
                config.servers.insert(name, spec);
            }
            Err(e) => tracing::warn!("acp: an MCP server of the client is not used: {e}"),
        }
    }
    config
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

/// `session/load`: the saved session built again in the client's `cwd`, its
/// conversation replayed to the client as updates before the answer.
async fn load_session(
    shared: &Arc<Shared>,
    req: &LoadSessionRequest,
    cx: ConnectionTo<Client>,
) -> Result<(&'static str, String), String> {
    let id = req.session_id.to_string();
    if shared.slot(&id).is_none() {
        let saved = shared.host.load(&id).map_err(|e| format!("{e:#}"))?;
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
    let transcript = lock(&slot.transcript).clone();
    for update in updates::history(&transcript, &slot.root) {
        cx.send_notification(SessionNotification::new(id.clone(), update))
            .map_err(|e| e.to_string())?;
    }
    let mode = *lock(&slot.mode);
    let model = lock(&slot.model).clone();
    Ok((mode, model))
}

/// `session/set_config_option` for `model`: a configured model is taken, and the
/// host builds it at the session's next turn (one that cannot be built is said in
/// that turn's updates, and the turn runs on the model before).
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
    *lock(&slot.pending_model) = Some(name.clone());
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

/// Runs one turn through the session's queue (the model and mode picked since the
/// last, then the prompt), streaming its updates; approval requests go to the client
/// as permission requests and their answers back as ops. Why it stopped.
async fn prompt(
    slot: Arc<Slot>,
    id: String,
    req: &PromptRequest,
    cx: &ConnectionTo<Client>,
) -> Result<StopReason, agent_client_protocol::Error> {
    let Ok(mut events) = slot.events.try_lock() else {
        return Err(agent_client_protocol::Error::invalid_request()
            .data("a prompt is already running in this session; cancel it or wait"));
    };
    let typed = prompt_text(&req.prompt);
    let mode = modes::find(*lock(&slot.mode)).map(|m| modes::wire(m.mode));
    let model = lock(&slot.pending_model).take();
    let switch = slot.handle.submit(Op::OverrideTurnContext { model, mode });
    // A prompt after the agent's turn is judged against it (`[stats] satisfaction`);
    // the turn is recorded and saved before its end comes: a client may end the
    // process right after the answer.
    let compacting = commands::is_compact(&typed);
    let sub = if compacting {
        slot.handle.submit(Op::Compact)
    } else {
        slot.handle.submit(Op::Prompt {
            text: commands::expand(&typed),
            user_text: Some(typed.clone()),
        })
    };
    let mut updates = Updates::new(slot.root.clone()).with_window(slot.window);
    let turn = loop {
        match events.recv().await {
            Some(Emitted::Event { event, .. }) => {
                if let Event::Approval {
                    id: Some(request),
                    what,
                    granted: None,
                    in_terminal,
                } = &event
                {
                    permission::ask_for(cx, &slot.handle, &id, request, what, *in_terminal);
                }
                let landed = match event {
                    Event::ToolFinished { .. } => slot.recorded.take(),
                    _ => Vec::new(),
                };
                let mut said = updates.of(&event, landed);
                if let (true, Event::Compacted { masked, summarized }) = (compacting, &event) {
                    said.extend(commands::compacted(*masked, *summarized));
                }
                for update in said {
                    if let Err(e) =
                        cx.send_notification(SessionNotification::new(id.clone(), update))
                    {
                        tracing::warn!("acp: update not sent: {e}");
                    }
                }
            }
            Some(Emitted::TurnEnded { sub: s, turn }) if s == sub => break Ok(turn),
            // `/compact` done: its `compacted` event said what it did.
            Some(Emitted::Done { sub: s }) if s == sub => return Ok(StopReason::EndTurn),
            Some(Emitted::Refused { sub: s, error }) if s == sub => break Err(error),
            Some(Emitted::Refused { sub: s, error }) if s == switch => {
                tracing::warn!("acp: session {id}: {error}");
            }
            Some(_) => {}
            None => break Err("internal: the session ended without an outcome".to_owned()),
        }
    };
    let turn = turn.map_err(|e| agent_client_protocol::Error::internal_error().data(e))?;
    *lock(&slot.transcript) = turn.transcript;
    match turn.outcome.status {
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
