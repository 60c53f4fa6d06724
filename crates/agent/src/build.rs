//! [`build_session`]: the one session builder every front end goes through (by the
//! session host, `crates/host`): the models resolved, the tools' context (the front
//! end's own, or the workspace's on disk: [`crate::workspace`]), subagents, the
//! trajectory, and the outermost edit sink (`agentls_tools::Recording`), which keeps
//! the files each turn's edits changed. [`BuiltSession::run`] runs one turn, handing
//! every event to the caller as it happens. Approvals go to
//! [`HeadlessOptions::approver`] (everything refused when `None`); what was refused ends
//! up in [`Metrics::refused`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentls_model::{CancellationToken, ClientOptions, ModelsConfig, Provider, Router};
use agentls_tools::{Approver, ToolContext};

use crate::config::SessionConfig;
use crate::context::StaticContext;
use crate::event::Event;
use crate::metrics::Metrics;
use crate::session::Session;
use crate::status::Status;
use crate::subagent::Subagents;
use crate::toolset::ToolSet;
use crate::trajectory::{self, Trajectory};
use crate::workspace::{adopt_unnamed_vectors, workspace_context};

/// What a headless run needs.
pub struct HeadlessOptions {
    /// The workspace root.
    pub workspace: PathBuf,
    /// Model name from `models`, or `auto` (the router); the first configured model when
    /// `None`.
    pub model: Option<String>,
    /// The `[models]` configuration; its summarizer (see
    /// [`ModelsConfig::summarizer_name`]) writes compaction summaries.
    pub models: ModelsConfig,
    /// A provider to use instead of resolving `model` (tests, embedding).
    pub provider: Option<Arc<dyn Provider>>,
    /// The tools; the standard registry when empty.
    pub tools: ToolSet,
    /// Mode, budget, compaction.
    pub session: SessionConfig,
    /// Where the trajectory goes; the user data dir when `None`.
    pub trajectory_dir: Option<PathBuf>,
    /// Cancels the run (Ctrl-C).
    pub cancel: CancellationToken,
    /// Who answers approvals (commands the policy marks `ask`); `agentls_tools::DenyAll` when `None`.
    /// What it refused is listed in [`Metrics::refused`].
    pub approver: Option<Arc<dyn Approver>>,
    /// The workspace's language servers: verify on edit and the `diagnostics` tool.
    pub verify: crate::VerifyConfig,
}

impl HeadlessOptions {
    /// A session in `workspace` with everything else at its default: the first
    /// configured model, the standard tools, the default session, no approver. Callers
    /// set the fields they need.
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        Self {
            workspace: workspace.into(),
            model: None,
            models: ModelsConfig::default(),
            provider: None,
            tools: ToolSet::default(),
            session: SessionConfig::default(),
            trajectory_dir: None,
            cancel: CancellationToken::new(),
            approver: None,
            verify: crate::VerifyConfig::default(),
        }
    }
}

impl std::fmt::Debug for HeadlessOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeadlessOptions")
            .field("workspace", &self.workspace)
            .field("model", &self.model)
            .field("session", &self.session)
            .field("approver", &self.approver.as_ref().map(|_| "…"))
            .finish_non_exhaustive()
    }
}

/// How a headless run ended.
#[derive(Debug)]
pub struct HeadlessOutcome {
    /// The session's status.
    pub status: Status,
    /// Its metrics.
    pub metrics: Metrics,
    /// The trajectory file, if one was written.
    pub trajectory: Option<PathBuf>,
    /// The files the run's edits changed, as the sink applied them (not what the model
    /// says it did), by path; files its commands changed are not in it.
    pub changed: Vec<(PathBuf, agentls_tools::Changed)>,
}

impl HeadlessOutcome {
    /// One line for people: "files the agent's edits changed: M src/lib.rs, A
    /// src/new.rs", paths beneath `root` relative to it, or that none did.
    pub fn changed_line(&self, root: &Path) -> String {
        if self.changed.is_empty() {
            return "no file changed by the agent's edits".to_owned();
        }
        let files: Vec<String> = self
            .changed
            .iter()
            .map(|(p, c)| {
                let shown = p.strip_prefix(root).unwrap_or(p);
                format!("{} {}", c.letter(), shown.display())
            })
            .collect();
        format!("files the agent's edits changed: {}", files.join(", "))
    }
}

/// Why a headless run could not start.
#[derive(Debug, thiserror::Error)]
pub enum HeadlessError {
    /// The model could not be resolved or built. (Not a `#[source]`: the message
    /// already holds it, and `{:#}` would print it twice.)
    #[error("model: {0}")]
    Model(agentls_model::ModelError),
    /// No model was named and none is configured.
    #[error("no model configured: add a [models.NAME] table to the config or pass --model")]
    NoModel,
    /// The workspace is not a directory.
    #[error("workspace {0} is not a directory")]
    Workspace(PathBuf),
}

impl From<agentls_model::ModelError> for HeadlessError {
    fn from(e: agentls_model::ModelError) -> Self {
        HeadlessError::Model(e)
    }
}

/// The router and the models it picks from, for `auto`.
type Routed = (Router, Vec<Arc<dyn Provider>>);

/// The models a run uses.
struct Resolved {
    /// The first model.
    provider: Arc<dyn Provider>,
    /// For `auto` with a `[router]`: the router and its models.
    routing: Option<Routed>,
    /// The compaction summarizer ([`ModelsConfig::summarizer_name`]).
    summarizer: Option<Arc<dyn Provider>>,
}

/// Builds each named model once: a name used twice (the router's fast model as the
/// summarizer) gets the same provider.
struct Built<'a> {
    models: &'a ModelsConfig,
    done: Vec<(String, Arc<dyn Provider>)>,
}

impl Built<'_> {
    fn get(&mut self, name: &str) -> Result<Arc<dyn Provider>, HeadlessError> {
        if let Some((_, p)) = self.done.iter().find(|(n, _)| n == name) {
            return Ok(p.clone());
        }
        let p = provider(self.models, name)?;
        self.done.push((name.to_owned(), p.clone()));
        Ok(p)
    }
}

/// The configured model `name` built, its key read from the environment: the one
/// place a provider is made from the configuration. Blocking: a local model loads its
/// weights here.
pub fn provider(models: &ModelsConfig, name: &str) -> Result<Arc<dyn Provider>, HeadlessError> {
    Ok(models.provider(name, ClientOptions::default(), |k| std::env::var(k).ok())?)
}

/// The first model (`given`, else `model`, else the first configured), for `auto`
/// with a `[router]` the router and its models, and the summarizer. Blocking: a local
/// model loads its weights here.
fn resolve(
    models: &ModelsConfig,
    model: Option<&str>,
    given: Option<Arc<dyn Provider>>,
) -> Result<Resolved, HeadlessError> {
    let mut built = Built {
        models,
        done: Vec::new(),
    };
    let first_configured = || {
        models
            .models
            .keys()
            .next()
            .cloned()
            .ok_or(HeadlessError::NoModel)
    };
    let (provider, routing) = match (given, model) {
        (Some(p), _) => (p, None),
        (None, Some("auto")) => match (models.router()?, &models.router) {
            (Some(router), Some(rc)) => {
                let fast = built.get(&rc.fast)?;
                let strong = built.get(&rc.strong)?;
                // The session asks the router before every call; start on fast.
                (fast.clone(), Some((router, vec![fast, strong])))
            }
            _ => (built.get(&first_configured()?)?, None),
        },
        (None, Some(name)) => (built.get(name)?, None),
        (None, None) => (built.get(&first_configured()?)?, None),
    };
    let summarizer = match models.summarizer_name() {
        Some(name) => Some(built.get(name)?),
        None => None,
    };
    Ok(Resolved {
        provider,
        routing,
        summarizer,
    })
}

/// [`resolve`] on a blocking thread: loading a local model's weights takes seconds.
async fn resolve_off_thread(o: &HeadlessOptions) -> Result<Resolved, HeadlessError> {
    let (models, model, given) = (o.models.clone(), o.model.clone(), o.provider.clone());
    tokio::task::spawn_blocking(move || resolve(&models, model.as_deref(), given))
        .await
        .map_err(|e| {
            HeadlessError::Model(agentls_model::ModelError::new(
                agentls_model::ErrorClass::Unknown,
                format!("building the model failed: {e}"),
            ))
        })?
}

/// Makes the sink edits land through out of the disk sink.
pub type WrapEdits =
    Box<dyn FnOnce(Arc<dyn agentls_tools::EditSink>) -> Arc<dyn agentls_tools::EditSink> + Send>;

/// What a front end may change in [`build_session`].
#[derive(Default)]
pub struct BuildHooks {
    /// Edits land on disk, through whatever this makes of the disk sink (a front end
    /// that lands edits elsewhere, or records them).
    pub wrap_edits: Option<WrapEdits>,
    /// The session's id, for a session loaded again; a fresh one when `None`.
    pub id: Option<String>,
    /// A client holding the user's files: tools read the files they name through it.
    pub client_files: Option<Arc<dyn agentls_tools::ClientFiles>>,
    /// The user's own terminal, offered for commands the policy asks about.
    pub terminal: Option<Arc<dyn agentls_tools::UserTerminal>>,
    /// The front end's own view of the workspace (the language server's: its live
    /// buffers, index, language servers, edit sink and approver), used as is instead
    /// of building one; `subagents` and `cancel` are set here.
    pub context: Option<ToolContext>,
    /// Files open in the editor: they lead the system prompt's context.
    pub open_files: Vec<PathBuf>,
    /// The embedding model for `semantic_search` in a context built here (a front end's
    /// own `context` brings its own); words only when `None`.
    pub embedder: Option<Arc<dyn agentls_semantic::Embedder>>,
    /// A better model to take over from `embedder` once it has every chunk
    /// ([`agentls_semantic::Service::set_successor`]): the tool moves it on when the
    /// first has nothing left to embed.
    pub successor: Option<Arc<dyn agentls_semantic::Embedder>>,
}

impl std::fmt::Debug for BuildHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuildHooks")
            .field("wrap_edits", &self.wrap_edits.is_some())
            .field("id", &self.id)
            .field("client_files", &self.client_files.is_some())
            .field("terminal", &self.terminal.is_some())
            .field("context", &self.context.is_some())
            .field("open_files", &self.open_files.len())
            .finish()
    }
}

/// A session built and ready to run, with the receiver of its events. What every
/// front end starts from (`agentls run`, `agentls eval`, `agentls acp`): they differ
/// only in where the events and the edits go.
pub struct BuiltSession {
    /// The session; [`Session::run`] takes each turn's message.
    pub session: Session,
    /// Its events, as they happen.
    pub events: tokio::sync::mpsc::UnboundedReceiver<Event>,
    /// The trajectory file, if one is written.
    pub trajectory: Option<PathBuf>,
    /// What the session's edits changed, taken at the end of each run.
    changed: Arc<agentls_tools::Recording>,
}

impl std::fmt::Debug for BuiltSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltSession")
            .field("session", &self.session.id())
            .field("trajectory", &self.trajectory)
            .finish_non_exhaustive()
    }
}

/// Builds the session `options` describe: models resolved,
/// the workspace indexed, its language servers started, the sandbox, subagents and
/// trajectory set up. See [`BuildHooks`] for what a front end may change.
pub async fn build_session(
    options: HeadlessOptions,
    hooks: BuildHooks,
) -> Result<BuiltSession, HeadlessError> {
    let root = options
        .workspace
        .canonicalize()
        .map_err(|_| HeadlessError::Workspace(options.workspace.clone()))?;
    if !root.is_dir() {
        return Err(HeadlessError::Workspace(root));
    }
    let Resolved {
        provider,
        routing,
        summarizer,
    } = resolve_off_thread(&options).await?;
    let mut ctx = match hooks.context {
        Some(ctx) => ctx,
        None => {
            let ctx =
                workspace_context(&root, &options.verify, options.session.mode.allows_writes())
                    .await;
            if let Some(embedder) = hooks.embedder {
                let store = agentls_semantic::store::default_path(&root, embedder.id());
                ctx.semantic.set_embedder(embedder);
                // Vectors embedded by earlier sessions (and the server) in this
                // workspace are read back, and new ones kept there.
                if let Some(path) = store {
                    let semantic = ctx.semantic.clone();
                    let at = root.clone();
                    let read = tokio::task::spawn_blocking(move || {
                        adopt_unnamed_vectors(&at);
                        semantic.keep_in(path)
                    })
                    .await;
                    tracing::debug!(vectors = read.unwrap_or(0), "stored semantic vectors read");
                }
                if let Some(successor) = hooks.successor {
                    let store = agentls_semantic::store::default_path(&root, successor.id());
                    let semantic = ctx.semantic.clone();
                    let read = tokio::task::spawn_blocking(move || {
                        semantic.set_successor(
                            successor,
                            store,
                            agentls_semantic::MovedBy::Searches,
                        )
                    })
                    .await;
                    tracing::debug!(
                        vectors = read.unwrap_or(0),
                        "the better model's stored vectors read"
                    );
                }
            }
            ctx
        }
    };
    if let Some(wrap) = hooks.wrap_edits {
        ctx.edits = wrap(ctx.edits.clone());
    }
    // Outermost, so that subagents' edits are counted too.
    let changed = Arc::new(agentls_tools::Recording::new(ctx.edits.clone()));
    ctx.edits = changed.clone();
    if let Some(files) = hooks.client_files {
        ctx.client_files = Some(files);
    }
    if let Some(terminal) = hooks.terminal {
        ctx.terminal = Some(terminal);
    }
    ctx.cancel = options.cancel.clone();
    if let Some(approver) = &options.approver {
        ctx.approver = approver.clone();
    }
    let static_ctx = StaticContext::gather(&root, &hooks.open_files).await;
    let tools = if options.tools.is_empty() {
        ToolSet::from_registry(&agentls_tools::Registry::standard())
    } else {
        options.tools
    };
    if options.session.mode.allows_writes() && tools.get("task").is_some() {
        let runner = Subagents::new(
            provider.clone(),
            tools.clone(),
            ctx.clone(),
            static_ctx.clone(),
        );
        ctx.subagents = Some(Arc::new(runner));
    }
    let (tx, events) = tokio::sync::mpsc::unbounded_channel();
    let mut session =
        Session::new(provider, tools, ctx, options.session, static_ctx).with_events(tx);
    if let Some(id) = hooks.id {
        session = session.with_id(id);
    }
    if let Some((router, providers)) = routing {
        session = session.with_router(router, providers);
    }
    if let Some(summarizer) = summarizer {
        session = session.with_summarizer(summarizer);
    }
    let dir = options.trajectory_dir.or_else(trajectory::default_dir);
    if let Some(dir) = dir {
        match Trajectory::create(&dir, session.id(), key_values(&options.models)) {
            Ok(t) => session = session.with_trajectory(t),
            Err(e) => tracing::warn!("no trajectory ({}): {e}", dir.display()),
        }
    }
    let trajectory = session.trajectory().map(|t| t.path().to_path_buf());
    Ok(BuiltSession {
        session,
        events,
        trajectory,
        changed,
    })
}

impl BuiltSession {
    /// Runs one turn on `message`, calling `print` with every event as it happens.
    pub async fn run(
        &mut self,
        message: String,
        mut print: impl FnMut(&Event) + Send,
    ) -> HeadlessOutcome {
        let (session, rx) = (&mut self.session, &mut self.events);
        let run = async {
            let status = session.run(message).await;
            (status, session.metrics().clone())
        };
        tokio::pin!(run);
        let (status, metrics) = loop {
            tokio::select! {
                Some(ev) = rx.recv() => print(&ev),
                out = &mut run => break out,
            }
        };
        while let Ok(ev) = rx.try_recv() {
            print(&ev);
        }
        HeadlessOutcome {
            status,
            metrics,
            trajectory: self.trajectory.clone(),
            changed: self.changed.take(),
        }
    }
}

/// The API keys of the configured models, so the trajectory can redact them verbatim.
fn key_values(models: &ModelsConfig) -> Vec<String> {
    models
        .models
        .values()
        .filter_map(|m| m.api_key_env.as_deref())
        .filter_map(|var| std::env::var(var).ok())
        .collect()
}
