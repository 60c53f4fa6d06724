//! [`Host`]: what every front end starts a session through, and [`HostedSession`]: a
//! session the front end drives with [`Op`]s and whose events it renders.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use agentls_agent::{
    BuildHooks, BuiltSession, Event, HeadlessOptions, HeadlessOutcome, SavedSession, SessionConfig,
    SessionStore, ToolSet, WrapEdits,
};
use agentls_model::{CancellationToken, ModelsConfig, Provider};
use agentls_tools::{Approver, ClientFiles, Tool, ToolContext, UserTerminal};

use crate::config::Config;
use crate::embedding::Tiers;
use crate::satisfaction::Judge;

/// What a host is for: set once by the front end that makes it.
pub struct HostOptions {
    /// The front end's name in the stats (`editor`, `run`, `acp`, `eval`, `demo`).
    pub front_end: &'static str,
    /// Record each turn in the stats database (`[stats]`): not for `eval`, whose
    /// attempts are measurements, not a user's work.
    pub record_stats: bool,
    /// Save each session in the session store (`[sessions]`), so that it can be
    /// resumed: the conversation, model and mode, and the front end's part of the
    /// record ([`agentls_protocol::agent::ops::Op::Save`]).
    pub save_sessions: bool,
    /// The embedding models for sessions whose tool context the host builds.
    pub embedders: Option<Tiers>,
}

impl Default for HostOptions {
    /// The editor's: turns recorded, sessions saved (with the editor's pending review
    /// changes, which it hands over with a save op).
    fn default() -> Self {
        Self {
            front_end: "editor",
            record_stats: true,
            save_sessions: true,
            embedders: None,
        }
    }
}

impl HostOptions {
    /// A front end whose turns are measurements or a show, not a user's work
    /// (`eval`, `demo`): nothing recorded, nothing saved, no embedding models.
    pub fn unrecorded(front_end: &'static str) -> Self {
        Self {
            front_end,
            record_stats: false,
            save_sessions: false,
            embedders: None,
        }
    }

    /// A front end the user works in (`run`, `acp`): turns recorded, sessions saved,
    /// semantic search by `[semantic]`'s models (with the whole model, the static
    /// vectors first and the whole model taking over), loaded once.
    pub fn interactive(front_end: &'static str, config: &Config) -> Self {
        Self {
            front_end,
            record_stats: true,
            save_sessions: true,
            embedders: crate::embedding::tiers_for_server(config.semantic.embedder.as_deref()),
        }
    }
}

impl std::fmt::Debug for HostOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostOptions")
            .field("front_end", &self.front_end)
            .field("record_stats", &self.record_stats)
            .field("save_sessions", &self.save_sessions)
            .field("embedders", &self.embedders.is_some())
            .finish()
    }
}

/// The one core of every front end: the configuration in force, the models, the
/// stores, the MCP servers' tools. Cheap to clone.
#[derive(Clone)]
pub struct Host {
    inner: Arc<Inner>,
}

impl Default for Host {
    /// The editor's host on the built-in defaults, until the configuration is loaded.
    fn default() -> Self {
        Self::new(Config::default(), HostOptions::default())
    }
}

struct Inner {
    options: HostOptions,
    config: RwLock<Config>,
    /// The user's `[mcp]` servers' tools: connected by the first session that asks.
    mcp_tools: tokio::sync::Mutex<Option<Vec<Arc<dyn Tool>>>>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

/// A session to open.
#[derive(Default)]
pub struct Spec {
    /// The workspace root.
    pub workspace: PathBuf,
    /// The model, by its `[models]` name or `auto`; else `[agent] model`, else the
    /// first configured.
    pub model: Option<String>,
    /// Agent, ask or plan.
    pub mode: agentls_agent::Mode,
    /// A saved session to go on from: its id and conversation.
    pub resume: Option<SavedSession>,
    /// The session's id, when the front end chose it (the editor's registry).
    pub id: Option<String>,
    /// Most model calls per turn; `[agent] max_steps` when `None`.
    pub max_steps: Option<u32>,
    /// Longest a turn may take.
    pub max_wall: Option<Duration>,
    /// Run the project's check before a turn ends; `[agent] final_check` when `None`.
    pub final_check: Option<bool>,
    /// Where the trajectory goes; the user data dir when `None`.
    pub trajectory_dir: Option<PathBuf>,
    /// Cancels the whole session (a time limit, Ctrl-C).
    pub cancel: Option<CancellationToken>,
    /// Give the session the user's `[mcp]` servers' tools.
    pub user_mcp: bool,
    /// MCP servers of this session's own (an ACP client's).
    pub session_mcp: agentls_mcp::McpConfig,
    /// A model already built (the demo's local model), instead of resolving `model`.
    pub provider: Option<Arc<dyn Provider>>,
    /// The small-model pipeline's settings (samples, temperature, seed, where its
    /// report goes); its defaults when `None`.
    pub solve: Option<agentls_agent::solve::SolveConfig>,
}

impl std::fmt::Debug for Spec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spec")
            .field("workspace", &self.workspace)
            .field("model", &self.model)
            .field("mode", &self.mode)
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// The front end's sinks: where edits, file reads and commands go. Approvals are no
/// sink: they come to the front end as events of the session's queue and go back as
/// ops ([`HostedSession::spawn`], [`agentls_protocol::agent::ops::Op::Approval`]);
/// until the session is spawned every request is refused.
#[derive(Default)]
pub struct Adapters {
    /// What the edits land through, made of the disk sink.
    pub wrap_edits: Option<WrapEdits>,
    /// A client holding the user's files.
    pub client_files: Option<Arc<dyn ClientFiles>>,
    /// The user's own terminal.
    pub terminal: Option<Arc<dyn UserTerminal>>,
    /// The front end's own view of the workspace (the language server's live buffers,
    /// index, language servers, edit sink), used as is but for its approver, which
    /// the queue's takes the place of.
    pub context: Option<ToolContext>,
    /// Files open in the editor: they lead the system prompt's context.
    pub open_files: Vec<PathBuf>,
}

/// What a front end asks of a session.
#[derive(Debug, Clone)]
pub enum Op {
    /// A turn on `text`; `user_text` is the user's own words when they follow up in a
    /// session the agent answered (judged for `[stats] satisfaction` when that is on).
    Prompt {
        /// The message the model gets.
        text: String,
        /// The user's own words, when they are not the whole message.
        user_text: Option<String>,
    },
    /// Run the next turn on this model (`auto`: the router's pick for that turn).
    SetModel(String),
    /// Agent, ask or plan from the next step on.
    SetMode(agentls_agent::Mode),
}

/// How a turn went.
#[derive(Debug)]
pub struct Turn {
    /// The outcome: status, metrics, trajectory, files changed.
    pub outcome: HeadlessOutcome,
    /// Its measurements, as recorded.
    pub record: agentls_stats::RunRecord,
    /// Tools whose failure rate left its baseline with this turn.
    pub alerts: Vec<agentls_stats::Alert>,
    /// What this turn's failures said, by tool.
    pub error_examples: BTreeMap<String, Vec<String>>,
    /// The conversation as of the turn's end (what transcripts show).
    pub transcript: Vec<agentls_model::Message>,
}

/// Why a session could not be opened or a model switched.
pub type HostError = String;

impl Host {
    /// A host on `config` for the front end `options` describe.
    pub fn new(config: Config, options: HostOptions) -> Self {
        let host = Self {
            inner: Arc::new(Inner {
                options,
                config: RwLock::new(config),
                mcp_tools: tokio::sync::Mutex::new(None),
            }),
        };
        // The editor prunes when it lists the workspace's saved sessions, keeping its
        // own: its settings (and so the store) come after the host.
        if host.inner.options.save_sessions
            && host.inner.options.front_end != "editor"
            && let Some(store) = host.store()
        {
            store.prune(host.config().sessions.retention(), &[]);
        }
        host
    }

    /// The configuration in force.
    pub fn config(&self) -> Config {
        self.inner
            .config
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Takes a new configuration (the editor's settings changed); sessions built
    /// before keep what they were built with.
    pub fn reconfigure(&self, config: Config) {
        *self.inner.config.write().unwrap_or_else(|p| p.into_inner()) = config;
    }

    /// The models, checked.
    pub fn models(&self) -> Result<ModelsConfig, HostError> {
        self.config().models()
    }

    /// The session store, unless there is no data directory.
    pub fn store(&self) -> Option<SessionStore> {
        self.config().sessions.store()
    }

    /// Saves `record`; a failure is a warning: the session goes on unsaved.
    pub fn save(&self, record: &SavedSession) {
        if let Some(store) = self.store()
            && let Err(e) = store.save(record)
        {
            tracing::warn!("session {} not saved: {e}", record.id);
        }
    }

    /// The saved session `id`.
    pub fn load(&self, id: &str) -> anyhow::Result<SavedSession> {
        let store = self
            .store()
            .ok_or_else(|| anyhow::anyhow!("no data directory to load sessions from"))?;
        Ok(store.load(id)?)
    }

    /// The user's `[mcp]` servers' tools, connected by the first caller and shared.
    /// A later change of `[mcp]` takes effect in a new host.
    pub async fn user_mcp_tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut cached = self.inner.mcp_tools.lock().await;
        if let Some(tools) = cached.as_ref() {
            return tools.clone();
        }
        let servers = self.config().mcp;
        let tools = crate::mcp::connect(&servers).await;
        *cached = Some(tools.clone());
        tools
    }

    /// The model a session uses when `asked` is `None`.
    pub fn default_model(&self) -> Option<String> {
        self.config().default_model()
    }

    /// Builds the session `spec` describes, with the front end's `adapters`: models
    /// resolved, the workspace indexed (unless the adapters bring a context), tools
    /// (standard, MCP), trajectory; a resumed conversation restored.
    pub async fn open(&self, spec: Spec, adapters: Adapters) -> Result<HostedSession, HostError> {
        let config = self.config();
        let models = config.models()?;
        let model = spec.model.clone().or_else(|| self.default_model());
        if spec.provider.is_none() {
            match &model {
                Some(name) => crate::models::check_model(&models, name)?,
                None => return Err(agentls_agent::HeadlessError::NoModel.to_string()),
            }
        }
        let tools = self.tools(&spec).await;
        let root = spec
            .workspace
            .canonicalize()
            .unwrap_or_else(|_| spec.workspace.clone());
        let final_check = spec
            .final_check
            .unwrap_or(config.agent.final_check)
            .then(|| agentls_agent::final_check::detect(&root))
            .flatten();
        let mut budget = agentls_agent::Budget {
            max_steps: spec.max_steps.unwrap_or(config.agent.max_steps),
            ..agentls_agent::Budget::default()
        };
        if let Some(wall) = spec.max_wall {
            budget.max_wall = wall;
        }
        // Approvals go through the session's queue ([`HostedSession::spawn`]), a front
        // end's own context included; refused while it is not spawned.
        let approvals = Arc::new(crate::approvals::Approvals::default());
        let approver: Arc<dyn Approver> = Arc::new(crate::approvals::OpApprover(approvals.clone()));
        let context = adapters.context.map(|mut ctx| {
            ctx.approver = approver.clone();
            ctx
        });
        let options = HeadlessOptions {
            workspace: spec.workspace.clone(),
            model: model.clone(),
            models,
            provider: spec.provider.clone(),
            tools,
            session: SessionConfig {
                mode: spec.mode,
                budget,
                final_check,
                solve: spec.solve.clone().unwrap_or_default(),
                ..SessionConfig::default()
            },
            trajectory_dir: spec.trajectory_dir.clone(),
            cancel: spec.cancel.clone().unwrap_or_default(),
            approver: Some(approver),
            verify: config.verify(),
        };
        let embedders = self.inner.options.embedders.as_ref();
        let hooks = BuildHooks {
            wrap_edits: adapters.wrap_edits,
            id: spec
                .resume
                .as_ref()
                .map(|s| s.id.clone())
                .or(spec.id.clone()),
            client_files: adapters.client_files,
            terminal: adapters.terminal,
            context,
            open_files: adapters.open_files,
            embedder: embedders.map(|t| t.now.clone()),
            successor: embedders.and_then(|t| t.later.clone()),
        };
        let mut built = agentls_agent::build_session(options, hooks)
            .await
            .map_err(|e| e.to_string())?;
        let resumed = spec.resume.is_some();
        if let Some(saved) = spec.resume {
            built.session.restore(saved.messages);
        }
        let hosted = HostedSession {
            host: self.clone(),
            model: model.unwrap_or_else(|| built.session.model_name().to_owned()),
            built,
            root,
            mode: spec.mode,
            pending_model: None,
            approvals,
            saving: Arc::new(crate::saving::Saving::default()),
        };
        hosted.saving.keep(hosted.record());
        if !resumed {
            hosted.save();
        }
        Ok(hosted)
    }

    /// The session's tools: the standard registry, the user's MCP servers' when asked,
    /// and the session's own servers'.
    async fn tools(&self, spec: &Spec) -> ToolSet {
        let mut tools = ToolSet::from_registry(&agentls_tools::Registry::standard());
        if spec.user_mcp {
            for tool in self.user_mcp_tools().await {
                tools.insert(tool);
            }
        }
        if !spec.session_mcp.servers.is_empty() {
            for tool in crate::mcp::connect(&spec.session_mcp).await {
                tools.insert(tool);
            }
        }
        tools
    }
}

/// A session opened by a [`Host`]; the front end drives it with [`Op`]s.
pub struct HostedSession {
    host: Host,
    built: BuiltSession,
    root: PathBuf,
    /// The model picked, by its configured name (`auto` included).
    model: String,
    /// Agent, ask or plan, as last set.
    mode: agentls_agent::Mode,
    /// A model picked for the next turn.
    pending_model: Option<String>,
    /// Approval requests, answered through the queue.
    pub(crate) approvals: Arc<crate::approvals::Approvals>,
    /// The record as last saved and the front end's part of it, shared with the
    /// queue's task (which saves while a turn runs).
    pub(crate) saving: Arc<crate::saving::Saving>,
}

impl std::fmt::Debug for HostedSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostedSession")
            .field("id", &self.built.session.id())
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl HostedSession {
    /// The session's id.
    pub fn id(&self) -> &str {
        self.built.session.id()
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The model picked, by its configured name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The agent session itself (transcript, metrics, model).
    pub fn session(&self) -> &agentls_agent::Session {
        &self.built.session
    }

    /// A fresh token that cancels the next turn (and only it): the queue's, for
    /// [`agentls_protocol::agent::ops::Op::Interrupt`]; no front end holds one.
    pub(crate) fn fresh_cancel_token(&mut self) -> CancellationToken {
        self.built.session.fresh_cancel_token()
    }

    /// The trajectory file, if one is written.
    pub fn trajectory(&self) -> Option<&Path> {
        self.built.trajectory.as_deref()
    }

    /// Carries out `op`; a prompt runs a turn, calling `render` with every event as it
    /// happens, records it (`[stats]`), judges the user's follow-up (`[stats]
    /// satisfaction`) and saves the session; the other operations answer `None`.
    pub async fn submit(
        &mut self,
        op: Op,
        render: impl FnMut(&Event) + Send,
    ) -> Result<Option<Turn>, HostError> {
        match op {
            Op::SetModel(name) => {
                let models = self.host.models()?;
                crate::models::check_model(&models, &name)?;
                self.pending_model = Some(name);
                Ok(None)
            }
            Op::SetMode(mode) => {
                self.built.session.set_mode(mode);
                self.mode = mode;
                Ok(None)
            }
            Op::Prompt { text, user_text } => Ok(Some(self.turn(text, user_text, render).await)),
        }
    }

    async fn turn(
        &mut self,
        text: String,
        user_text: Option<String>,
        mut render: impl FnMut(&Event) + Send,
    ) -> Turn {
        // One reading of the configuration for the whole turn.
        let config = self.host.config();
        // Judged against the turn before it, by the model that took that turn.
        if let Some(user_text) = &user_text
            && let Some(judge) = Judge::new(&config.stats, config.stats.db_path(None))
            && let Ok(models) = config.models()
        {
            let session = &self.built.session;
            judge.follow_up(
                models,
                session.id(),
                session.model_name(),
                session.transcript(),
                user_text,
            );
        }
        if let Some(name) = self.pending_model.take() {
            let built = match config.models() {
                Ok(models) => crate::models::switch_to(models, name.clone(), text.clone()).await,
                Err(e) => Err(e),
            };
            match built {
                Ok(p) => {
                    self.built.session.switch_model(p);
                    self.model = name;
                }
                Err(e) => {
                    // Said to the user, not only logged: the turn runs on the old model.
                    let message = format!(
                        "cannot switch to {name}: {e}; this turn runs on {}",
                        self.model
                    );
                    tracing::warn!("session {}: {message}", self.id());
                    render(&Event::Error {
                        class: "ProviderError".to_owned(),
                        message,
                    });
                }
            }
        }
        let options = &self.host.inner.options;
        let mut recorder = agentls_stats::RunRecorder::start(
            self.built.session.id(),
            options.front_end,
            self.built.session.model_name(),
            &crate::stats::totals(self.built.session.metrics()),
        );
        let outcome = self
            .built
            .run(text, |ev| {
                recorder.observe(ev);
                render(ev);
            })
            .await;
        let error_examples = recorder.error_examples().clone();
        let record = recorder.finish(
            &crate::stats::totals(&outcome.metrics),
            outcome.status.outcome().0,
        );
        let alerts = if options.record_stats {
            crate::stats::record_run(config.stats.db_path(None), record.clone()).await
        } else {
            Vec::new()
        };
        self.save();
        Turn {
            outcome,
            record,
            alerts,
            error_examples,
            transcript: self.built.session.transcript().to_vec(),
        }
    }

    /// Compacts the conversation now ([`agentls_agent::Session::compact`]), handing
    /// `render` its `compacted` event, and saves it.
    pub(crate) async fn compact(&mut self, mut render: impl FnMut(&Event)) {
        let (masked, summarized) = self.built.session.compact().await;
        while let Ok(ev) = self.built.events.try_recv() {
            if !matches!(ev, Event::Compacted { .. }) {
                render(&ev);
            }
        }
        render(&Event::Compacted { masked, summarized });
        self.save();
    }

    /// The session's record as the host saves it: conversation, model, mode, and the
    /// front end's part ([`agentls_protocol::agent::ops::Op::Save`]).
    pub fn record(&self) -> SavedSession {
        let session = &self.built.session;
        let mut saved = SavedSession::new(session.id(), &self.root, session.transcript());
        saved.model = (!self.model.is_empty()).then(|| self.model.clone());
        saved.mode = Some(crate::saving::mode_name(self.mode).to_owned());
        self.saving.fill(&mut saved);
        saved
    }

    /// Keeps the record as it is now and saves it, when the host saves sessions.
    pub(crate) fn save(&self) {
        let record = self.record();
        self.saving.keep(record.clone());
        if self.host.inner.options.save_sessions {
            self.host.save(&record);
        }
    }

    /// Whether the host saves sessions.
    pub(crate) fn saves(&self) -> bool {
        self.host.inner.options.save_sessions
    }

    /// The host.
    pub(crate) fn host(&self) -> &Host {
        &self.host
    }
}
