//! `agentls run`: one agent session, headless, to completion. Edits land on disk;
//! progress goes to stdout as plain lines (a live status line on a terminal) or, with
//! `--json`, as one JSON event per line. Commands the policy marks `ask` are answered
//! by `--approve` (or `[run] approve`): refused, asked on the terminal, or allowed; the
//! summary lists what was refused.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use agentls_agent::headless::render_event;
use agentls_agent::{
    AllowAll, DenyAll, Event, HeadlessOptions, SessionConfig, Status, ToolSet, VerifyConfig,
};
use agentls_model::{CancellationToken, ModelsConfig};
use agentls_tools::Approver;
use anyhow::Context;
use async_trait::async_trait;

use crate::cli::{Approve, RunArgs};
use crate::config;

/// Runs the session described by `args`.
pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    crate::logging::init(args.log_file.as_deref())?;
    let user = load_config(args.config.as_deref())?;
    let store = user.session_store(args.sessions_dir.clone());
    let stats_db = user.stats.db_path(args.stats_db.as_deref());
    // With the whole model configured, the static vectors first and the whole model
    // moved on by each search, as in the server.
    let tiers = user.embedding_tiers();
    let UserConfig {
        models,
        approve: configured,
        verify,
        mcp,
        ..
    } = user;
    let approve = args.approve.or(configured).unwrap_or_else(|| {
        if std::io::stdin().is_terminal() {
            Approve::Ask
        } else {
            Approve::Never
        }
    });
    let approver: Arc<dyn Approver> = match approve {
        Approve::Never => Arc::new(DenyAll),
        Approve::Always => Arc::new(AllowAll),
        Approve::Ask => Arc::new(PromptApprover::default()),
    };
    let mode = args.mode.parse().map_err(anyhow::Error::msg)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let json = args.json;
    let live = !json && std::io::stdout().is_terminal();
    let cancel = CancellationToken::new();
    let tools = runtime.block_on(tools_with_mcp(&mcp));
    // `--resume ID`: the saved conversation, in its own workspace unless told otherwise.
    let saved = match &args.resume {
        Some(id) => {
            let store = store
                .as_ref()
                .context("no data directory to load sessions from; pass --sessions-dir")?;
            Some(store.load(id)?)
        }
        None => None,
    };
    let workspace = match (&args.workspace, &saved) {
        (Some(dir), _) => dir.clone(),
        (None, Some(s)) => s.cwd.clone(),
        (None, None) => std::path::PathBuf::from("."),
    };
    let options = HeadlessOptions {
        workspace: workspace.clone(),
        task: String::new(),
        model: args.model.clone(),
        models,
        provider: None,
        tools,
        session: SessionConfig {
            mode,
            final_check: (!args.no_final_check)
                .then(|| agentls_agent::final_check::detect(&workspace))
                .flatten(),
            ..SessionConfig::default()
        },
        trajectory_dir: args.trajectory_dir.clone(),
        cancel: cancel.clone(),
        approver: Some(approver),
        verify,
    };
    let hooks = agentls_agent::BuildHooks {
        id: saved.as_ref().map(|s| s.id.clone()),
        embedder: tiers.as_ref().map(|t| t.now.clone()),
        successor: tiers.and_then(|t| t.later),
        ..Default::default()
    };
    let task = args.task.join(" ");
    let (outcome, id) = runtime.block_on(async move {
        let ctrl_c = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                ctrl_c.cancel();
            }
        });
        let mut printer = Printer {
            json,
            live,
            tool: String::new(),
            model: String::new(),
        };
        let mut built = agentls_agent::build_session(options, hooks).await?;
        if let Some(saved) = saved {
            built.session.restore(saved.messages);
        }
        let model = args_model_name(&built);
        let mut recorder = agentls_stats::RunRecorder::start(
            built.session.id(),
            "run",
            &model,
            built.session.metrics(),
        );
        printer.begin(built.session.id());
        let outcome = built
            .run(task, |ev| {
                recorder.observe(ev);
                printer.print(ev);
            })
            .await;
        let root = workspace.canonicalize().unwrap_or(workspace);
        printer.end(built.session.id(), &outcome, &root);
        config::record_run(stats_db, recorder.finish(&outcome.metrics, &outcome.status)).await;
        if let Some(store) = &store {
            let record = agentls_agent::SavedSession::new(
                built.session.id(),
                &root,
                built.session.transcript(),
            );
            if let Err(e) = store.save(&record) {
                tracing::warn!("session not saved: {e}");
            }
        }
        anyhow::Ok((outcome, built.session.id().to_owned()))
    })?;
    if let Some(path) = &outcome.trajectory {
        eprintln!("trajectory: {}", path.display());
    }
    eprintln!("session: {id} (go on with `agentls run --resume {id} TASK`)");
    runtime.shutdown_background();
    Ok(match outcome.status {
        Status::Done { .. } => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    })
}

/// The model a session runs on, by the provider's name.
fn args_model_name(built: &agentls_agent::BuiltSession) -> String {
    built.session.model_name().to_owned()
}

/// Prints events: JSON lines, plain lines, or a live status line on a terminal.
struct Printer {
    json: bool,
    live: bool,
    /// The tool whose output the status line shows.
    tool: String,
    /// The model the router chose last: only a change is worth a line.
    model: String,
}

impl Printer {
    /// The session's id, for people (JSON lines are the protocol's events only, until
    /// the summary).
    fn begin(&self, id: &str) {
        if !self.json {
            let _ = writeln!(std::io::stdout().lock(), "session {id}");
        }
    }

    /// The run's totals: the files its edits changed and the metrics line, or with
    /// `--json` a last line `{"type": "summary", "session", "outcome", "changed",
    /// "metrics"}` (the events themselves are `agent/event`'s, which carry neither).
    /// What changed is what the edits landed, whatever the model's answer says.
    fn end(&self, id: &str, outcome: &agentls_agent::HeadlessOutcome, root: &Path) {
        let line = if self.json {
            let changed: Vec<serde_json::Value> = outcome
                .changed
                .iter()
                .map(|(p, c)| {
                    serde_json::json!({
                        "status": c,
                        "path": p.strip_prefix(root).unwrap_or(p),
                    })
                })
                .collect();
            serde_json::json!({
                "type": "summary",
                "session": id,
                "outcome": outcome.status,
                "changed": changed,
                "metrics": outcome.metrics,
            })
            .to_string()
        } else {
            format!(
                "{}\n{}",
                outcome.changed_line(root),
                outcome.metrics.render()
            )
        };
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }

    fn print(&mut self, ev: &Event) {
        if let Event::Routed { model, .. } = ev
            && !self.json
        {
            if *model == self.model {
                return;
            }
            self.model.clone_from(model);
        }
        let mut out = std::io::stdout().lock();
        // A closed stdout (a pipe to `head`) must not stop the session.
        let _ = if self.json {
            serde_json::to_string(ev)
                .map_err(std::io::Error::other)
                .and_then(|line| writeln!(out, "{line}"))
        } else if self.live {
            match ev {
                Event::Step { step } => write!(out, "\r\x1b[Kstep {step}…"),
                Event::ToolStarted { name, .. } => {
                    self.tool.clone_from(name);
                    write!(out, "\r\x1b[K{name}…")
                }
                Event::ToolOutput { text, .. } => {
                    match text.lines().rev().find(|l| !l.trim().is_empty()) {
                        Some(last) => {
                            let last: String = last.trim_end().chars().take(100).collect();
                            write!(out, "\r\x1b[K{}: {last}", self.tool)
                        }
                        None => Ok(()),
                    }
                }
                _ => match render_event(ev) {
                    Some(line) => writeln!(out, "\r\x1b[K{line}"),
                    None => Ok(()),
                },
            }
        } else {
            match render_event(ev) {
                Some(line) => writeln!(out, "{line}"),
                None => Ok(()),
            }
        };
        let _ = out.flush();
    }
}

/// Asks on the terminal: the question on stderr, one line from stdin; only `y` or
/// `yes` allows. One question at a time.
#[derive(Default)]
struct PromptApprover {
    one_at_a_time: tokio::sync::Mutex<()>,
}

#[async_trait]
impl Approver for PromptApprover {
    async fn approve(&self, what: &str) -> bool {
        let _turn = self.one_at_a_time.lock().await;
        let what = what.to_owned();
        let answer = tokio::task::spawn_blocking(move || {
            ask(
                &what,
                &mut std::io::stdin().lock(),
                &mut std::io::stderr().lock(),
            )
        })
        .await;
        answer.unwrap_or(false)
    }
}

/// Asks whether to allow `what` (a verb phrase: "run `cmd`") on `output` and reads the
/// answer from `input`: only `y` or `yes` allows; anything else, or nothing, refuses.
fn ask(what: &str, input: &mut impl BufRead, output: &mut impl Write) -> bool {
    let thing = what.strip_prefix("run ").unwrap_or(what);
    let _ = write!(output, "\nAllow {thing}? [y/N] ");
    let _ = output.flush();
    let mut line = String::new();
    match input.read_line(&mut line) {
        Ok(_) => matches!(line.trim().to_lowercase().as_str(), "y" | "yes"),
        Err(_) => false,
    }
}

/// What the headless front ends read from the user's configuration.
#[derive(Debug, Default)]
pub(crate) struct UserConfig {
    pub models: ModelsConfig,
    /// `[run] approve`.
    pub approve: Option<Approve>,
    pub verify: VerifyConfig,
    /// `[mcp]`: MCP servers whose tools the agent gets.
    pub mcp: agentls_mcp::McpConfig,
    /// `[sessions]`: where sessions are saved, and for how long.
    pub sessions: config::SessionsSettings,
    /// `[stats]`: whether and where runs are recorded.
    pub stats: config::StatsSettings,
    /// `[semantic]`: the embedding model of `semantic_search`.
    pub semantic: config::SemanticSettings,
}

impl UserConfig {
    /// The embedding model sessions search with (see [`crate::embedding::for_server`]):
    /// `$AGENTLS_EMBEDDER`, `[semantic] embedder`, else the static vectors once fetched.
    pub fn embedder(&self) -> Option<Arc<dyn agentls_semantic::Embedder>> {
        crate::embedding::for_server(self.semantic.embedder.as_deref())
    }

    /// The models an interactive session searches with ([`crate::embedding::tiers_for_server`]).
    pub fn embedding_tiers(&self) -> Option<crate::embedding::Tiers> {
        crate::embedding::tiers_for_server(self.semantic.embedder.as_deref())
    }
}

impl UserConfig {
    /// The session store: `dir` (a command-line flag) over `[sessions] dir` over the user
    /// data directory. Sessions past their age or the store's size are removed first.
    pub fn session_store(
        &self,
        dir: Option<std::path::PathBuf>,
    ) -> Option<agentls_agent::SessionStore> {
        let store = match dir {
            Some(d) => agentls_agent::SessionStore::new(d),
            None => self.sessions.store()?,
        };
        store.prune(self.sessions.retention(), &[]);
        Some(store)
    }
}

/// The `[models]` and `[router]` tables and `summarizer` of `path`, else of the user
/// config file, `[run] approve`, `[verify]` with `[language_servers]`, and `[mcp]`.
/// Never the workspace's file: keys and endpoints are the user's choice, not the
/// repository's, and so are what runs without asking and which programs run at all.
pub(crate) fn load_config(path: Option<&Path>) -> anyhow::Result<UserConfig> {
    let path = match path {
        Some(p) => p.to_path_buf(),
        None => match config::user_config_path() {
            Some(p) if p.is_file() => p,
            _ => return Ok(UserConfig::default()),
        },
    };
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let mut table: toml::Table =
        toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let approve =
        match table.get("run").and_then(|r| r.get("approve")) {
            Some(v) => Some(v.clone().try_into::<Approve>().with_context(|| {
                format!("{}: [run] approve: never, ask or always", path.display())
            })?),
            None => None,
        };
    let verify = verify_config(&table).with_context(|| path.display().to_string())?;
    let mcp: agentls_mcp::McpConfig = section(&table, "mcp", &path)?;
    let sessions: config::SessionsSettings = section(&table, "sessions", &path)?;
    let semantic: config::SemanticSettings = section(&table, "semantic", &path)?;
    let stats: config::StatsSettings = section(&table, "stats", &path)?;
    table.retain(|k, _| matches!(k, "models" | "router" | "summarizer"));
    let models = ModelsConfig::from_toml(&toml::to_string(&table)?)?;
    models.reject_inline_keys()?;
    Ok(UserConfig {
        models,
        approve,
        verify,
        mcp,
        sessions,
        stats,
        semantic,
    })
}

/// The `[key]` table of the config file at `path`, or its default when absent.
fn section<T: serde::de::DeserializeOwned + Default>(
    table: &toml::Table,
    key: &str,
    path: &Path,
) -> anyhow::Result<T> {
    match table.get(key) {
        Some(v) => v
            .clone()
            .try_into()
            .with_context(|| format!("{}: [{key}]", path.display())),
        None => Ok(T::default()),
    }
}

/// The standard tools and those of the configured MCP servers (each connected within
/// its timeout; one that fails costs its tools, with a warning).
pub(crate) async fn tools_with_mcp(mcp: &agentls_mcp::McpConfig) -> ToolSet {
    let mut tools = ToolSet::from_registry(&agentls_tools::Registry::standard());
    let (connected, _failed) = agentls_mcp::connect_all(mcp).await;
    for server in connected {
        tracing::info!("mcp server {}: {} tool(s)", server.name, server.tools.len());
        for tool in server.tools {
            tools.insert(tool);
        }
    }
    tools
}

/// `[verify]` and `[language_servers.NAME]` of a config table.
pub fn verify_config(table: &toml::Table) -> anyhow::Result<VerifyConfig> {
    let mut verify: VerifyConfig = match table.get("verify") {
        Some(v) => v.clone().try_into().context("[verify]")?,
        None => VerifyConfig::default(),
    };
    if let Some(servers) = table.get("language_servers") {
        verify.servers = servers.clone().try_into().context("[language_servers]")?;
    }
    Ok(verify)
}

#[cfg(test)]
mod tests {
    use super::ask;

    #[test]
    fn only_yes_allows() {
        for (typed, allowed) in [
            ("y\n", true),
            ("YES\n", true),
            (" yes \n", true),
            ("\n", false),
            ("n\n", false),
            ("yep\n", false),
            ("", false),
        ] {
            let mut out = Vec::new();
            let got = ask("run `sh deploy.sh`", &mut typed.as_bytes(), &mut out);
            assert_eq!(got, allowed, "{typed:?}");
            assert_eq!(
                String::from_utf8(out).unwrap(),
                "\nAllow `sh deploy.sh`? [y/N] "
            );
        }
    }
}
