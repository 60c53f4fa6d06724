//! Configuration: typed settings merged from several sources.
//!
//! Sources, from lowest to highest precedence (a later one overrides an earlier one,
//! key by key, tables merged recursively):
//! 1. built-in defaults;
//! 2. the user config file: `$AGENTLS_CONFIG`, else `<config dir>/agentls/config.toml`
//!    (`~/.config/agentls/config.toml` on Linux);
//! 3. the workspace file `<root>/agentls.toml`;
//! 4. the client's `initializationOptions`;
//! 5. the client's `workspace/didChangeConfiguration` settings (the object itself, or
//!    its `agentls` key, as VS Code sends it);
//! 6. the command line's flags (`--model`, `--sessions-dir`, `--stats-db`, `--approve`).
//!
//! Every entry point loads through [`load`] (the language server adds the client's two
//! layers as they arrive); `docs/config-reference.md` is generated from these types
//! ([`reference`]) and a test keeps it so.
//!
//! Every table is a typed struct, parsed once here: the model tables are the model
//! layer's own types (`agentls_model::ModelConfig`, `RouterConfig`), `[verify]` the
//! agent's, `[language_servers]` the language-server client's, `[mcp]` the MCP crate's.
//! A source that does not parse, or whose values have the wrong type, is skipped whole
//! and reported with the key's path (`models.local.threads: invalid type …`); the others
//! still apply. Unknown keys (found against the types' JSON Schema, inside every table
//! and every `[models.NAME]` alike) are reported with their path and ignored, not fatal.
//! [`Config::models`] checks what only the model layer can (each model's keys against
//! its wire, the router's names); `agentls doctor` prints all of it.
//!
//! The model tables, as the model layer reads them:
//!
//! ```toml
//! summarizer = "local"          # compaction summaries; default: the router's fast model
//!
//! [agent]
//! model = "local"
//!
//! [models.local]
//! wire = "local"                # the embedded model (a build with `--features local`)
//! model = "qwen2.5-coder-0.5b"  # or path = "/x.gguf"; threads, context optional
//!
//! [models.sonnet]
//! wire = "anthropic"
//! base_url = "https://api.anthropic.com/v1"
//! api_key_env = "ANTHROPIC_API_KEY"
//!
//! [router]
//! fast = "local"
//! strong = "sonnet"
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub mod reference;

/// The environment variable naming the user config file.
pub const CONFIG_ENV: &str = "AGENTLS_CONFIG";
/// The workspace config file name.
pub const WORKSPACE_FILE: &str = "agentls.toml";

/// Every setting agentls reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(default, rename_all = "snake_case")]
pub struct Config {
    /// How files that are not open are read.
    pub files: FilesConfig,
    /// `[agent]`: sessions started from the editor.
    pub agent: AgentSettings,
    /// `[index]`: the symbol index.
    pub index: IndexSettings,
    /// `[semantic]`: semantic search's embedding model. Never from the workspace: a
    /// repository must not pick a model to load.
    pub semantic: SemanticSettings,
    /// `[sessions]`: where sessions are saved and for how long. Never from the
    /// workspace: a repository must not pick where agentls writes.
    pub sessions: SessionsSettings,
    /// `[stats]`: whether runs are recorded for `agentls stats`, and where. Never
    /// from the workspace, like `[sessions]`.
    pub stats: StatsSettings,
    /// `[run]`: headless runs (`agentls run`).
    pub run: RunSettings,
    /// `[completion]`: code completion while typing (inline ghost text, and Helix's
    /// completion items).
    pub completion: CompletionSettings,
    /// `[models.NAME]`: a model sessions can use, by the name users pick it with (an
    /// HTTP endpoint, or the embedded engine with `wire = "local"`). Only taken from
    /// the user file, `--config` or the client's settings, never from the workspace.
    pub models: BTreeMap<String, agentls_model::ModelConfig>,
    /// `[router]`: the `auto` model's fast and strong models (never from the workspace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub router: Option<agentls_model::RouterConfig>,
    /// The model that writes compaction summaries (a `[models.NAME]`); the router's
    /// fast model when unset. Never from the workspace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summarizer: Option<String>,
    /// `[verify]`: the workspace's language servers and verify on edit. Never from the
    /// workspace.
    pub verify: agentls_agent::VerifyConfig,
    /// `[language_servers.NAME]`: overrides of the language servers agentls knows, or
    /// new ones (a new one needs `command` and `filetypes`). Never from the workspace:
    /// a repository must not pick programs to run.
    pub language_servers: agentls_lspclient::LanguageServersConfig,
    /// `[mcp]`: MCP servers whose tools the agent gets. Never from the workspace: a
    /// repository must not pick programs to run.
    pub mcp: agentls_mcp::McpConfig,
}

/// `[files]`: reading files from disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, rename_all = "snake_case")]
pub struct FilesConfig {
    /// Files larger than this many bytes are refused by the text tools.
    pub max_bytes: u64,
}

impl Default for FilesConfig {
    fn default() -> Self {
        Self {
            max_bytes: agentls_text::ReadLimits::default().max_bytes,
        }
    }
}

/// `[agent]`: how sessions started from the editor behave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, rename_all = "snake_case")]
pub struct AgentSettings {
    /// The model new sessions use (a `[models.NAME]` name or `auto`); the first
    /// configured model when unset.
    pub model: Option<String>,
    /// `direct`: edits land as they are made. `review`: they land for review (the client
    /// asks the user to confirm each when it supports change annotations; otherwise they
    /// stay pending until accepted or rejected through code actions or `agent/review`).
    pub review: ReviewMode,
    /// Seconds to wait for the user to answer an approval request; no answer means no.
    pub approval_timeout_secs: u64,
    /// Most model calls in one run.
    pub max_steps: u32,
    /// Run the project's check (its test command, detected) before a run ends when the
    /// model edited files and ran nothing after; a failure goes back to the model once.
    pub final_check: bool,
}

impl Default for AgentSettings {
    fn default() -> Self {
        Self {
            model: None,
            review: ReviewMode::Direct,
            approval_timeout_secs: 120,
            max_steps: 50,
            final_check: true,
        }
    }
}

/// `[completion]`: fill-in-the-middle completion as the user types: LSP 3.18's
/// `textDocument/inlineCompletion` (ghost text) and, for Helix, one
/// `textDocument/completion` item. See `docs/completion.md`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct CompletionSettings {
    /// Answer completion requests (languages can be turned on or off one by one with
    /// `languages`).
    pub enabled: bool,
    /// The model that completes: a `[models.NAME]` with `wire = "local"` or an
    /// OpenAI-compatible wire (its `/completions` endpoint, with `suffix`). Unset: the
    /// embedded `qwen2.5-coder-0.5b` (`agentls model fetch qwen2.5-coder-0.5b`, a build
    /// with `--features local`). Never from the workspace file.
    pub model: Option<String>,
    /// Most tokens one completion generates.
    pub max_tokens: u32,
    /// Most lines one completion shows.
    pub max_lines: u32,
    /// Milliseconds a typed (automatic) request waits for the user to pause: a newer
    /// request in that time answers the older one with nothing, without a model call.
    pub debounce_ms: u64,
    /// Bytes of the buffer before the cursor given to the model (cut at a line start).
    pub prefix_bytes: u32,
    /// Bytes of the buffer after the cursor given to the model (cut at a line end).
    pub suffix_bytes: u32,
    /// Ask an HTTP model for a streamed answer (read either way), so that a completion
    /// cut by the stop rules stops the server generating.
    pub stream: bool,
    /// Per language id (`rust`, `python`, `markdown`…): on or off, over `enabled`.
    pub languages: std::collections::BTreeMap<String, bool>,
    /// Helix, which shows no ghost text: answer `textDocument/completion` with one
    /// item carrying the whole (multi-line) completion. Off by default; read when the
    /// client initializes.
    pub completion_items: bool,
    /// `[completion.next_edit]`: next-edit suggestions (`textDocument/copilotInlineEdit`).
    pub next_edit: NextEditSettings,
}

/// `[completion.next_edit]`: the edit that follows the user's last ones. Predictions
/// without a model come first (the rest of a rename, the call sites of a changed
/// signature); when they give nothing, a model rewrites a window of lines around the
/// cursor and the smallest changed range is suggested. See `docs/completion.md`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct NextEditSettings {
    /// A next-edit model server: a `[models.NAME]` on an OpenAI-compatible wire whose
    /// `/completions` endpoint serves a next-edit model (`llama-server` running Zeta or
    /// Sweep's model, Ollama). Never from the workspace file.
    pub model: Option<String>,
    /// The prompt layout `model` was trained on: `zeta` (editable-region markers) or
    /// `sweep` (`original`/`current`/`updated` blocks).
    pub format: NextEditFormat,
    /// Without `model`, ask the completion model (`[completion] model`, by default the
    /// embedded one) with its own layout. Off by default: the embedded 0.5B model's
    /// suggestions are slow and rarely right (`agentls bench next-edit`).
    pub fallback: bool,
    /// Lines above the cursor's line the model may rewrite.
    pub lines_before: u32,
    /// Lines below the cursor's line the model may rewrite.
    pub lines_after: u32,
    /// Most tokens one answer generates.
    pub max_tokens: u32,
}

impl Default for NextEditSettings {
    fn default() -> Self {
        Self {
            model: None,
            format: NextEditFormat::Zeta,
            fallback: false,
            lines_before: 2,
            lines_after: 6,
            max_tokens: 192,
        }
    }
}

/// The prompt layout of a next-edit model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NextEditFormat {
    /// Zed's Zeta: `<|editable_region_start|>`, `<|editable_region_end|>` and
    /// `<|user_cursor_is_here|>`.
    Zeta,
    /// Sweep's next-edit models: `<|file_sep|>original/…`, `current/…`, `updated/…`.
    Sweep,
}

impl Default for CompletionSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            model: None,
            max_tokens: 128,
            max_lines: 8,
            debounce_ms: 150,
            prefix_bytes: 3072,
            suffix_bytes: 1536,
            stream: true,
            languages: std::collections::BTreeMap::new(),
            completion_items: false,
            next_edit: NextEditSettings::default(),
        }
    }
}

/// The embedded model completion uses when `[completion] model` is unset.
pub const DEFAULT_COMPLETION_MODEL: &str = "qwen2.5-coder-0.5b";

impl CompletionSettings {
    /// Whether completion is on for `language` (an LSP language id).
    pub fn enabled_for(&self, language: &str) -> bool {
        self.languages
            .get(language)
            .copied()
            .unwrap_or(self.enabled)
    }

    /// The model's name as the user knows it.
    pub fn model_name(&self) -> &str {
        self.model.as_deref().unwrap_or(DEFAULT_COMPLETION_MODEL)
    }
}

impl Config {
    /// The completer `[completion]` names (blocking: a local model loads its weights
    /// the first time). `env` reads API key variables.
    pub fn completer(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<std::sync::Arc<dyn agentls_model::Completer>, String> {
        let options = agentls_model::ClientOptions::default();
        match &self.completion.model {
            Some(name) => self
                .models()?
                .completer(name, self.completion.stream, options, env)
                .map_err(|e| e.message),
            // Ghost text never starts a 491 MB download by itself (`catalog` does not
            // fetch): the agent's first use (or `agentls model fetch`) brings the weights.
            None => agentls_model::local::completer(&agentls_model::LocalModelSpec::catalog(
                DEFAULT_COMPLETION_MODEL,
            ))
            .map_err(|e| e.message),
        }
    }
}

/// `[run]`: how headless runs (`agentls run`) behave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(default, rename_all = "snake_case")]
pub struct RunSettings {
    /// How commands the policy marks `ask` are answered when `--approve` is not given:
    /// `never`, `ask` (on the terminal) or `always`. Unset: `ask` on a terminal, else
    /// `never`.
    pub approve: Option<Approve>,
}

/// How a headless run answers approvals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Approve {
    /// Refuse.
    Never,
    /// Ask on the terminal (stderr, one line from stdin).
    Ask,
    /// Allow.
    Always,
}

/// `[stats]`: every run's numbers (times, tokens, tool calls and errors, edits; never
/// code) in an SQLite database, for `agentls stats`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct StatsSettings {
    /// Record runs (on by default).
    pub enabled: bool,
    /// The database; the user data directory's `agentls/stats.sqlite3` when unset.
    pub path: Option<PathBuf>,
    /// Judge the user's next message after an agent turn (continues, corrects,
    /// rejects, frustrated) with one model call, off the request path (off by default).
    pub satisfaction: bool,
    /// The model that judges (a `[models.NAME]`): when unset, the first configured
    /// local model if this build has the embedded engine, else the session's own model.
    pub satisfaction_model: Option<String>,
    /// Store nothing free-text: with it on (the default) only the label is kept; off,
    /// the classifier's short reason (at most 200 characters) too.
    pub privacy: bool,
}

impl Default for StatsSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            path: None,
            satisfaction: false,
            satisfaction_model: None,
            privacy: true,
        }
    }
}

impl StatsSettings {
    /// Where runs are recorded: `flag` (a command-line path) over `path` over the
    /// default; `None` when recording is off (a flag turns it on) or there is no data
    /// directory.
    pub fn db_path(&self, flag: Option<&std::path::Path>) -> Option<PathBuf> {
        match flag {
            Some(p) => Some(p.to_path_buf()),
            None if !self.enabled => None,
            None => self
                .path
                .clone()
                .or_else(agentls_stats::StatsDb::default_path),
        }
    }
}

/// `[sessions]`: saved sessions (every front end's: the editor's, `agentls run`'s and
/// ACP's share one store).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, rename_all = "snake_case")]
pub struct SessionsSettings {
    /// The directory; the user data directory's `agentls/sessions` when unset.
    pub dir: Option<PathBuf>,
    /// Sessions not updated for this many days are removed.
    pub max_age_days: u64,
    /// Past this many megabytes in all, the least recently updated are removed.
    pub max_total_mb: u64,
}

impl Default for SessionsSettings {
    fn default() -> Self {
        let r = agentls_agent::Retention::default();
        Self {
            dir: None,
            max_age_days: r.max_age.as_secs() / (24 * 3600),
            max_total_mb: r.max_bytes / (1024 * 1024),
        }
    }
}

impl SessionsSettings {
    /// The store, unless there is no data directory to put it in.
    pub fn store(&self) -> Option<agentls_agent::SessionStore> {
        self.dir
            .clone()
            .or_else(agentls_agent::saved::default_dir)
            .map(agentls_agent::SessionStore::new)
    }

    /// How long sessions are kept.
    pub fn retention(&self) -> agentls_agent::Retention {
        agentls_agent::Retention {
            max_age: std::time::Duration::from_secs(self.max_age_days.saturating_mul(24 * 3600)),
            max_bytes: self.max_total_mb.saturating_mul(1024 * 1024),
        }
    }
}

/// `[index]`: what the symbol index takes in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, rename_all = "snake_case")]
pub struct IndexSettings {
    /// Leave out generated files (a generated marker in the first lines, or over 1 MiB);
    /// grep still finds them and an open buffer is always indexed.
    pub skip_generated: bool,
}

impl Default for IndexSettings {
    fn default() -> Self {
        Self {
            skip_generated: true,
        }
    }
}

/// `[semantic]`: semantic search.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SemanticSettings {
    /// `static` (all-MiniLM-L6-v2's distilled token vectors: microseconds per chunk),
    /// `full` (the whole model: better sentences, ~1000x the cost per chunk) or `none`
    /// (words only). Unset: `static` once `agentls model fetch all-minilm-l6-v2` has
    /// run, else `none`.
    pub embedder: Option<String>,
}

/// Whether agent edits land directly or for review.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReviewMode {
    /// Edits land as they are made.
    #[default]
    Direct,
    /// Edits land for the user to accept or reject.
    Review,
}

impl Config {
    /// The `[models]` and `[router]` tables and `summarizer` as the model layer reads
    /// them, checked (every model's keys against its wire). With no `[models]` at all,
    /// a build with the embedded engine gets the embedded default
    /// ([`agentls_model::local::embedded_default_models`]): `agentls acp`, `agentls run`
    /// and the language server all read their models here.
    pub fn models(&self) -> Result<agentls_model::ModelsConfig, String> {
        let embedded = match self.models.is_empty() {
            true => agentls_model::local::embedded_default_models(),
            false => None,
        };
        let models = match embedded {
            Some(table) => serde_json::from_value(table).map_err(|e| format!("[models]: {e}"))?,
            None => self.models.clone(),
        };
        let models = agentls_model::ModelsConfig {
            models,
            router: self.router.clone(),
            summarizer: self.summarizer.clone(),
        };
        models.validate().map_err(|e| e.message)?;
        Ok(models)
    }

    /// The model sessions use unless told: `[agent] model`, else the first configured.
    pub fn default_model(&self) -> Option<String> {
        self.agent.model.clone().or_else(|| {
            self.models()
                .ok()
                .and_then(|m| m.models.keys().next().cloned())
        })
    }

    /// `[verify]` with `[language_servers]`, as the agent reads them.
    pub fn verify(&self) -> agentls_agent::VerifyConfig {
        agentls_agent::VerifyConfig {
            servers: self.language_servers.clone(),
            ..self.verify.clone()
        }
    }

    /// The read limits these settings ask for.
    pub fn read_limits(&self) -> agentls_text::ReadLimits {
        agentls_text::ReadLimits {
            max_bytes: self.files.max_bytes,
        }
    }
}

/// Where a layer of configuration came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The user's config file.
    User(PathBuf),
    /// The workspace's `agentls.toml`.
    Workspace(PathBuf),
    /// `initializationOptions` from the client.
    InitializationOptions,
    /// `workspace/didChangeConfiguration` from the client.
    Client,
    /// The command line's flags.
    CommandLine,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::User(p) => write!(f, "user config {}", p.display()),
            Source::Workspace(p) => write!(f, "workspace config {}", p.display()),
            Source::InitializationOptions => f.write_str("initializationOptions"),
            Source::Client => f.write_str("workspace/didChangeConfiguration"),
            Source::CommandLine => f.write_str("command line"),
        }
    }
}

/// The configuration in force, with the layers it was merged from and what went wrong.
#[derive(Debug, Clone, Default)]
pub struct Merged {
    /// The result.
    pub config: Config,
    /// The layers that applied, in order.
    pub applied: Vec<Source>,
    /// Problems found: a layer skipped and why, unknown keys.
    pub problems: Vec<String>,
    /// Files that could not be read or parsed; kept across re-merges.
    load_problems: Vec<String>,
    layers: Vec<(Source, Value)>,
}

impl Merged {
    /// Sets (or replaces) the layer from `source` and merges everything again.
    pub fn set_layer(&mut self, source: Source, mut value: Value) {
        if !value.is_object() {
            // Neovim encodes an empty Lua table as `[]`; nothing else but a table is a
            // configuration. Merged, a non-table would replace every setting below it.
            let empty = value.is_null() || value.as_array().is_some_and(Vec::is_empty);
            let problem = format!("{source}: not a table of settings: ignored");
            if !empty && !self.load_problems.contains(&problem) {
                self.load_problems.push(problem);
            }
            self.remerge();
            return;
        }
        if matches!(source, Source::Workspace(_))
            && let Some(table) = value.as_object_mut()
        {
            // Anyone with commit access writes the workspace file: it must not pick
            // the endpoints (and keys) prompts are sent to, nor files to load as
            // weights.
            for key in MODEL_KEYS {
                let problem = format!(
                    "{source}: `{key}` ignored: models are only read from the user's config or the client's settings"
                );
                if table.remove(*key).is_some() && !self.load_problems.contains(&problem) {
                    self.load_problems.push(problem);
                }
            }
            // Nor the models completions and next edits are sent to.
            if let Some(completion) = table.get_mut("completion").and_then(Value::as_object_mut) {
                let mut removed = Vec::new();
                if completion.remove("model").is_some() {
                    removed.push("completion.model");
                }
                if let Some(next) = completion
                    .get_mut("next_edit")
                    .and_then(Value::as_object_mut)
                    && next.remove("model").is_some()
                {
                    removed.push("completion.next_edit.model");
                }
                for key in removed {
                    let problem = format!(
                        "{source}: `{key}` ignored: models are only read from the user's config or the client's settings"
                    );
                    if !self.load_problems.contains(&problem) {
                        self.load_problems.push(problem);
                    }
                }
            }
            // Nor where agentls writes.
            for key in USER_KEYS {
                let problem = format!(
                    "{source}: `{key}` ignored: where agentls saves sessions and stats is only read from the user's config or the client's settings"
                );
                if table.remove(*key).is_some() && !self.load_problems.contains(&problem) {
                    self.load_problems.push(problem);
                }
            }
            // Nor the programs agentls runs on the code.
            for key in PROGRAM_KEYS {
                let problem = format!(
                    "{source}: `{key}` ignored: language servers are only configured in the user's config or the client's settings"
                );
                if table.remove(*key).is_some() && !self.load_problems.contains(&problem) {
                    self.load_problems.push(problem);
                }
            }
        }
        let rank = rank_of(&source);
        self.layers.retain(|(s, _)| rank_of(s) != rank);
        let at = self
            .layers
            .iter()
            .position(|(s, _)| rank_of(s) > rank)
            .unwrap_or(self.layers.len());
        self.layers.insert(at, (source, value));
        self.remerge();
    }

    /// Reads a TOML file as a layer; a missing file is no layer, a broken one a problem.
    pub fn load_file(&mut self, source: Source, path: &Path) {
        let read = match &source {
            Source::Workspace(_) => read_workspace_file(path),
            _ => std::fs::read_to_string(path),
        };
        match read {
            Ok(text) => match toml::from_str::<toml::Table>(&text) {
                Ok(table) => match serde_json::to_value(table) {
                    Ok(value) => self.set_layer(source, value),
                    Err(e) => self.load_problems.push(format!("{source}: {e}")),
                },
                Err(e) => self
                    .load_problems
                    .push(format!("{source}: not valid TOML: {e}")),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => self
                .load_problems
                .push(format!("{source}: cannot read: {e}")),
        }
        self.remerge();
    }

    fn remerge(&mut self) {
        let mut merged = serde_json::to_value(Config::default()).unwrap_or(Value::Null);
        self.applied.clear();
        self.problems = self.load_problems.clone();
        // The model a workspace file chose, with what was in force before it: checked
        // once every layer (and so every configured model) is in.
        let mut workspace_model: Option<(Source, Value, Value)> = None;
        for (source, layer) in &self.layers {
            let mut unknown = Vec::new();
            let mut layer = layer.clone();
            take_unknown(schema(), schema(), &mut layer, "", &mut unknown);
            let layer = &layer;
            let mut candidate = merged.clone();
            merge_into(&mut candidate, layer);
            if matches!(source, Source::Workspace(_)) {
                self.problems
                    .extend(hold_workspace_limits(source, &merged, &mut candidate));
                if let Some(m) = layer.pointer("/agent/model") {
                    let before = merged.pointer("/agent/model").cloned();
                    workspace_model =
                        Some((source.clone(), m.clone(), before.unwrap_or(Value::Null)));
                }
            } else if layer.pointer("/agent/model").is_some() {
                // A later layer chose the model: the workspace's choice is moot.
                workspace_model = None;
            }
            match serde_path_to_error::deserialize::<_, Config>(candidate.clone()) {
                Ok(_) => {
                    merged = candidate;
                    self.applied.push(source.clone());
                    for key in unknown {
                        self.problems
                            .push(format!("{source}: unknown setting `{key}` ignored"));
                    }
                }
                Err(e) => {
                    self.problems
                        .push(format!("{source}: skipped: `{}`: {}", e.path(), e.inner()))
                }
            }
        }
        self.config = serde_json::from_value(merged).unwrap_or_default();
        if let Some((source, chosen, before)) = workspace_model
            && let Some(name) = chosen.as_str()
            && self.config.agent.model.as_deref() == Some(name)
            && let Ok(models) = self.config.models()
            && let Err(why) = crate::models::check_model(&models, name)
        {
            // A workspace file naming a model the user does not have would make every
            // new session fail: the user's choice stands.
            let problem = format!("{source}: `agent.model = {name:?}` ignored: {why}");
            tracing::warn!("{problem}");
            self.problems.push(problem);
            self.config.agent.model = before.as_str().map(str::to_owned);
        }
    }
}

/// Settings a workspace file may only make stricter: numeric limits (`min` with what
/// the user or the defaults set) and review (it may ask for review, not turn it off).
/// Anyone who can commit to the repository writes that file.
const WORKSPACE_LIMITS: &[&str] = &[
    "/agent/max_steps",
    "/agent/approval_timeout_secs",
    "/files/max_bytes",
];

/// Holds `candidate` (the merge with the workspace layer) to no looser than `before`
/// (the merge without it); returns a problem for each setting held back.
fn hold_workspace_limits(source: &Source, before: &Value, candidate: &mut Value) -> Vec<String> {
    let mut problems = Vec::new();
    for pointer in WORKSPACE_LIMITS {
        let (Some(old), Some(new)) = (
            before.pointer(pointer).and_then(Value::as_u64),
            candidate.pointer(pointer).and_then(Value::as_u64),
        ) else {
            continue;
        };
        if new > old
            && let Some(slot) = candidate.pointer_mut(pointer)
        {
            *slot = Value::from(old);
            let key = pointer.trim_start_matches('/').replace('/', ".");
            let problem = format!(
                "{source}: `{key} = {new}` lowered to {old}: a workspace file may lower limits, not raise them"
            );
            tracing::warn!("{problem}");
            problems.push(problem);
        }
    }
    if before.pointer("/agent/review").and_then(Value::as_str) == Some("review")
        && candidate.pointer("/agent/review").and_then(Value::as_str) == Some("direct")
        && let Some(slot) = candidate.pointer_mut("/agent/review")
    {
        *slot = Value::from("review");
        let problem = format!(
            "{source}: `agent.review = \"direct\"` ignored: a workspace file may ask for review, not turn it off"
        );
        tracing::warn!("{problem}");
        problems.push(problem);
    }
    problems
}

/// Most bytes read from a workspace config file.
const MAX_WORKSPACE_FILE_BYTES: u64 = 1024 * 1024;

/// A workspace file read beneath its directory (the workspace root): a link out of the
/// workspace or a hard-linked file is refused, and at most
/// [`MAX_WORKSPACE_FILE_BYTES`] are read (a link to `/dev/zero` ends there).
fn read_workspace_file(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a file path",
        ));
    };
    let beneath = agentls_edit::Beneath::open(dir)?;
    let file = beneath.open_read(Path::new(name)).map_err(|e| match e {
        agentls_edit::EditError::Io { source, .. } => source,
        other => std::io::Error::new(std::io::ErrorKind::PermissionDenied, other.to_string()),
    })?;
    let mut text = String::new();
    file.take(MAX_WORKSPACE_FILE_BYTES)
        .read_to_string(&mut text)?;
    Ok(text)
}

fn rank_of(source: &Source) -> u8 {
    match source {
        Source::User(_) => 1,
        Source::Workspace(_) => 2,
        Source::InitializationOptions => 3,
        Source::Client => 4,
        Source::CommandLine => 5,
    }
}

/// The user config file's path: `$AGENTLS_CONFIG`, else the platform config directory.
pub fn user_config_path() -> Option<PathBuf> {
    match std::env::var_os(CONFIG_ENV) {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => dirs::config_dir().map(|d| d.join("agentls").join("config.toml")),
    }
}

/// What [`load`] reads.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// The user file: `--config`, else [`user_config_path`].
    pub user_file: Option<PathBuf>,
    /// The workspace whose `agentls.toml` is a layer (held to what a workspace may set).
    pub workspace: Option<PathBuf>,
    /// The command line's settings, as a table like the file's (`{"agent": {"model":
    /// "x"}}`): the last layer.
    pub command_line: Value,
}

/// The one loader: defaults, the user file, the workspace file, the command line.
/// The language server adds the client's layers with [`Merged::set_layer`].
pub fn load(options: &LoadOptions) -> Merged {
    let mut merged = Merged::default();
    if let Some(path) = options.user_file.clone().or_else(user_config_path) {
        merged.load_file(Source::User(path.clone()), &path);
    }
    if let Some(root) = &options.workspace {
        let path = root.join(WORKSPACE_FILE);
        merged.load_file(Source::Workspace(path.clone()), &path);
    }
    if !options.command_line.is_null() {
        merged.set_layer(Source::CommandLine, options.command_line.clone());
    }
    merged
}

/// Merges user and workspace files: what the server knows before the client speaks.
pub fn load_files(workspace: Option<&Path>) -> Merged {
    load(&LoadOptions {
        workspace: workspace.map(Path::to_path_buf),
        ..LoadOptions::default()
    })
}

/// The flags every session front end takes (`--model`, `--sessions-dir`, `--stats-db`)
/// as the loader's command-line layer; a flag not given sets nothing.
pub fn session_flags(
    model: Option<&str>,
    sessions_dir: Option<&Path>,
    stats_db: Option<&Path>,
) -> Value {
    let mut flags = serde_json::json!({
        "agent": { "model": model },
        "sessions": { "dir": sessions_dir },
    });
    if let Some(db) = stats_db {
        // A path on the command line records even with `[stats] enabled = false`.
        flags["stats"] = serde_json::json!({ "path": db, "enabled": true });
    }
    flags
}

/// The configuration a command-line front end (`agentls run`, `eval`, `acp`, `mcp`,
/// `stats`) runs with: [`load`] with `file` (`--config`) in place of the user file, the
/// workspace's file when `workspace` is given, and the flags' `command_line` table;
/// an error for a file that cannot be used, and for API keys written in the file
/// rather than named by their environment variable.
pub fn load_for_cli(
    file: Option<&Path>,
    workspace: Option<&Path>,
    command_line: Value,
) -> anyhow::Result<Config> {
    let merged = load(&LoadOptions {
        user_file: file.map(Path::to_path_buf),
        workspace: workspace.map(Path::to_path_buf),
        command_line,
    });
    let config = merged.strict(file)?;
    let models = config.models().map_err(anyhow::Error::msg)?;
    models.reject_inline_keys()?;
    Ok(config)
}

impl Merged {
    /// For the command line's front ends: the configuration, or an error when a file
    /// was named that cannot be read, or a layer was skipped (a user who typed a
    /// setting wants it, not a run without it). Unknown keys are warnings.
    pub fn strict(self, named: Option<&Path>) -> anyhow::Result<Config> {
        if let Some(path) = named
            && !path.is_file()
        {
            anyhow::bail!("config file {} not found", path.display());
        }
        let fatal: Vec<&String> = self
            .problems
            .iter()
            .filter(|p| !p.contains("unknown setting"))
            .filter(|p| !p.contains("ignored") && !p.contains("lowered"))
            .collect();
        if !fatal.is_empty() {
            let joined: Vec<&str> = fatal.iter().map(|s| s.as_str()).collect();
            anyhow::bail!("{}", joined.join("; "));
        }
        for p in &self.problems {
            tracing::warn!("config: {p}");
        }
        Ok(self.config)
    }
}

/// The settings object inside a `didChangeConfiguration` payload.
pub fn client_settings(settings: Value) -> Value {
    match settings {
        Value::Object(mut map) if map.contains_key("agentls") => {
            map.remove("agentls").unwrap_or(Value::Null)
        }
        other => other,
    }
}

fn merge_into(base: &mut Value, layer: &Value) {
    match (base, layer) {
        (Value::Object(base), Value::Object(layer)) => {
            for (k, v) in layer {
                merge_into(base.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (_, Value::Null) => {}
        (base, layer) => *base = layer.clone(),
    }
}

/// Keys that choose programs to run: never taken from a workspace file.
const PROGRAM_KEYS: &[&str] = &["language_servers", "verify", "mcp"];

/// Keys that choose where agentls writes: never taken from a workspace file.
const USER_KEYS: &[&str] = &["sessions", "stats"];

/// Keys that choose models: never taken from a workspace file.
const MODEL_KEYS: &[&str] = &["models", "router", "summarizer", "semantic"];

/// [`Config`]'s JSON Schema, against which every layer's keys are checked.
fn schema() -> &'static Value {
    static SCHEMA: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    SCHEMA.get_or_init(|| {
        serde_json::to_value(schemars::schema_for!(Config)).unwrap_or(Value::Bool(true))
    })
}

/// The schema `s` stands for: a `$ref` followed to its definition, and of the
/// alternatives of an `Option` (`anyOf`, `oneOf`, `allOf`) the one that is a table.
fn resolve<'a>(s: &'a Value, root: &'a Value) -> &'a Value {
    if let Some(name) = s
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
        && let Some(def) = root.get("$defs").and_then(|d| d.get(name))
    {
        return resolve(def, root);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(table) = s
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|alt| resolve(alt, root))
            .find(|alt| alt.get("properties").is_some() || entries(alt).is_some())
        {
            return table;
        }
    }
    s
}

/// A map's value schema (`[models.NAME]`, `[completion.languages]`): its keys are the
/// user's own.
fn entries(s: &Value) -> Option<&Value> {
    s.get("additionalProperties").filter(|a| a.is_object())
}

/// Removes from `layer` the keys that no field of the configuration's types reads
/// (`schema` being the type at `prefix`), and adds their dotted paths to `unknown`.
fn take_unknown(
    schema: &Value,
    root: &Value,
    layer: &mut Value,
    prefix: &str,
    unknown: &mut Vec<String>,
) {
    let Value::Object(table) = layer else {
        return;
    };
    let schema = resolve(schema, root);
    let fields = schema.get("properties").and_then(Value::as_object);
    let entries = entries(schema);
    if fields.is_none() && entries.is_none() {
        // Not a table: any value, or a wrong type the parser reports with its path.
        return;
    }
    let mut gone = Vec::new();
    for (key, value) in table.iter_mut() {
        let path = match prefix {
            "" => key.clone(),
            _ => format!("{prefix}.{key}"),
        };
        match fields.and_then(|f| f.get(key)).or(entries) {
            Some(field) => take_unknown(field, root, value, &path, unknown),
            None => {
                gone.push(key.clone());
                unknown.push(path);
            }
        }
    }
    for key in gone {
        table.remove(&key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentls_model::WireFormat;
    use serde_json::json;

    #[test]
    fn later_sources_win_key_by_key() {
        let mut m = Merged::default();
        m.set_layer(Source::Client, json!({"files": {"max_bytes": 4}}));
        m.set_layer(
            Source::User("u.toml".into()),
            json!({"files": {"max_bytes": 1}}),
        );
        m.set_layer(
            Source::InitializationOptions,
            json!({"files": {"max_bytes": 3}}),
        );
        assert_eq!(m.config.files.max_bytes, 4);
        assert_eq!(
            m.applied,
            vec![
                Source::User("u.toml".into()),
                Source::InitializationOptions,
                Source::Client
            ]
        );
        // Replacing the client layer with one that says nothing falls back to the next.
        m.set_layer(Source::Client, json!({}));
        assert_eq!(m.config.files.max_bytes, 3);
    }

    #[test]
    fn a_bad_layer_is_skipped_and_reported() {
        let mut m = Merged::default();
        m.set_layer(
            Source::InitializationOptions,
            json!({"files": {"max_bytes": 9}}),
        );
        m.set_layer(
            Source::Client,
            json!({"files": {"max_bytes": "lots"}, "colour": 1}),
        );
        assert_eq!(m.config.files.max_bytes, 9);
        assert_eq!(m.problems.len(), 1, "{:?}", m.problems);
        assert!(m.problems[0].starts_with("workspace/didChangeConfiguration: skipped"));
        m.set_layer(Source::Client, json!({"colour": 1}));
        assert_eq!(
            m.problems,
            vec!["workspace/didChangeConfiguration: unknown setting `colour` ignored"]
        );
    }

    #[test]
    fn a_workspace_file_cannot_choose_models() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join(WORKSPACE_FILE);
        std::fs::write(
            &ws,
            "summarizer = \"evil\"\n[files]\nmax_bytes = 99\n[models.evil]\nwire = \"openai_chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\n[router]\nfast = \"evil\"\nstrong = \"evil\"\n",
        )
        .unwrap();
        let mut m = Merged::default();
        m.load_file(Source::Workspace(ws.clone()), &ws);
        m.load_file(Source::Workspace(ws.clone()), &ws);
        // The rest of the file applies; the model keys do not, and each is reported once.
        assert_eq!(m.config.files.max_bytes, 99);
        assert!(m.config.models.is_empty() && m.config.router.is_none());
        assert!(m.config.summarizer.is_none());
        assert_eq!(m.problems.len(), 3, "{:?}", m.problems);
        assert!(
            m.problems
                .iter()
                .all(|p| p.contains("ignored: models are only read"))
        );
        // The same tables from the client are taken.
        m.set_layer(
            Source::Client,
            json!({"models": {"mine": {"wire": "openai_chat", "base_url": "http://127.0.0.1:1/v1"}}}),
        );
        assert_eq!(m.config.models["mine"].wire, WireFormat::OpenaiChat);
    }

    #[test]
    fn completion_settings_merge_and_the_workspace_cannot_pick_their_model() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join(WORKSPACE_FILE);
        std::fs::write(
            &ws,
            "[completion]\nmodel = \"evil\"\ndebounce_ms = 300\nlanguages = { markdown = false }\n\
             [completion.next_edit]\nmodel = \"evil\"\nformat = \"sweep\"\n",
        )
        .unwrap();
        let mut m = Merged::default();
        m.load_file(Source::Workspace(ws.clone()), &ws);
        let c = &m.config.completion;
        assert_eq!((c.model.as_deref(), c.debounce_ms), (None, 300));
        assert_eq!(c.model_name(), DEFAULT_COMPLETION_MODEL);
        assert_eq!(c.next_edit.model, None);
        assert_eq!(c.next_edit.format, NextEditFormat::Sweep);
        assert!(
            m.problems[1].contains("`completion.next_edit.model` ignored"),
            "{:?}",
            m.problems
        );
        // Language ids are the user's keys, not unknown settings.
        assert_eq!(m.problems.len(), 2, "{:?}", m.problems);
        assert!(
            m.problems[0].contains("`completion.model` ignored"),
            "{:?}",
            m.problems
        );
        assert!(!c.enabled_for("markdown") && c.enabled_for("rust"));
        assert!(!c.completion_items);
        // The editor's settings may pick it, and turn Helix's items on.
        m.set_layer(
            Source::InitializationOptions,
            json!({"completion": {"model": "mine", "completion_items": true, "enabled": false, "languages": {"rust": true}}}),
        );
        let c = &m.config.completion;
        assert_eq!(c.model_name(), "mine");
        assert!(c.completion_items && c.enabled_for("rust") && !c.enabled_for("python"));
        // A model that is not configured is a clear error when the completer is built.
        let e = m.config.completer(|_| None).unwrap_err();
        assert!(e.contains("unknown model \"mine\""), "{e}");
    }

    #[test]
    fn a_workspace_file_cannot_pick_language_servers() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join(WORKSPACE_FILE);
        std::fs::write(
            &ws,
            "[verify]\nwait_ms = 1\n[language_servers.pylsp]\ncommand = \"./evil.sh\"\n\
             [mcp.servers.x]\ncommand = \"./evil.sh\"\n\
             [sessions]\ndir = \"/tmp/elsewhere\"\nmax_age_days = 99999\n\
             [stats]\npath = \"/tmp/elsewhere.sqlite3\"\n",
        )
        .unwrap();
        let mut m = Merged::default();
        m.load_file(Source::Workspace(ws.clone()), &ws);
        assert!(m.config.language_servers.is_empty());
        assert_eq!(m.config.verify, agentls_agent::VerifyConfig::default());
        assert!(m.config.mcp.servers.is_empty());
        assert_eq!(m.config.sessions, SessionsSettings::default());
        assert_eq!(m.config.stats, StatsSettings::default());
        assert_eq!(m.problems.len(), 5, "{:?}", m.problems);
        assert_eq!(m.config.verify().wait_ms, 2000);
        // From the user (here the client's settings) they are taken.
        m.set_layer(
            Source::Client,
            json!({"verify": {"wait_ms": 500}, "language_servers": {"pylsp": {"enabled": false}}}),
        );
        let v = m.config.verify();
        assert_eq!(v.wait_ms, 500);
        assert_eq!(v.servers["pylsp"].enabled, Some(false));
    }

    #[test]
    fn a_workspace_file_may_lower_limits_but_not_raise_them() {
        let user =
            json!({"agent": {"max_steps": 80, "review": "review"}, "files": {"max_bytes": 1000}});
        let mut m = Merged::default();
        m.set_layer(Source::User("/u.toml".into()), user.clone());
        m.set_layer(
            Source::Workspace("/w/agentls.toml".into()),
            json!({"agent": {"max_steps": 100000, "approval_timeout_secs": 9999, "review": "direct"}, "files": {"max_bytes": 10}}),
        );
        // Raised: held at the user's (or the default's) value; lowered: taken.
        assert_eq!(m.config.agent.max_steps, 80);
        assert_eq!(
            m.config.agent.approval_timeout_secs,
            AgentSettings::default().approval_timeout_secs
        );
        assert_eq!(m.config.agent.review, ReviewMode::Review);
        assert_eq!(m.config.files.max_bytes, 10);
        let held: Vec<&String> = m
            .problems
            .iter()
            .filter(|p| p.contains("may lower limits") || p.contains("may ask for review"))
            .collect();
        assert_eq!(held.len(), 3, "{:?}", m.problems);
        assert!(
            m.problems
                .iter()
                .any(|p| p.contains("`agent.max_steps = 100000` lowered to 80")),
            "{:?}",
            m.problems
        );
        // A lower value from the workspace is taken as is, and asking for review is fine.
        let mut m = Merged::default();
        m.set_layer(
            Source::Workspace("/w/agentls.toml".into()),
            json!({"agent": {"max_steps": 5, "review": "review"}}),
        );
        assert_eq!(m.config.agent.max_steps, 5);
        assert_eq!(m.config.agent.review, ReviewMode::Review);
        assert!(m.problems.is_empty(), "{:?}", m.problems);
        // The client (the user's editor settings) may still raise them.
        m.set_layer(Source::Client, json!({"agent": {"max_steps": 500}}));
        assert_eq!(m.config.agent.max_steps, 500);
    }

    #[test]
    fn a_workspace_model_the_user_lacks_is_ignored() {
        let models = json!({"models": {"mine": {"wire": "openai_chat", "base_url": "http://127.0.0.1:1/v1"}}, "agent": {"model": "mine"}});
        let mut m = Merged::default();
        m.set_layer(Source::User("/u.toml".into()), models);
        m.set_layer(
            Source::Workspace("/w/agentls.toml".into()),
            json!({"agent": {"model": "evil"}}),
        );
        assert_eq!(m.config.agent.model.as_deref(), Some("mine"));
        assert!(
            m.problems
                .iter()
                .any(|p| p.contains("`agent.model = \"evil\"` ignored")
                    && p.contains("unknown model")),
            "{:?}",
            m.problems
        );
        // New sessions can still start: the model in force is a configured one.
        let cfg = m.config.models().unwrap();
        assert!(crate::models::check_model(&cfg, m.config.agent.model.as_deref().unwrap()).is_ok());
        // A model the user has is a fine choice for the workspace to make.
        m.set_layer(
            Source::User("/u.toml".into()),
            json!({"models": {"mine": {"wire": "openai_chat", "base_url": "http://127.0.0.1:1/v1"}, "other": {"wire": "openai_chat", "base_url": "http://127.0.0.1:2/v1"}}}),
        );
        m.set_layer(
            Source::Workspace("/w/agentls.toml".into()),
            json!({"agent": {"model": "other"}}),
        );
        assert_eq!(m.config.agent.model.as_deref(), Some("other"));
        assert!(m.problems.is_empty(), "{:?}", m.problems);
    }

    #[test]
    fn client_settings_that_are_not_a_table_leave_the_rest_alone() {
        let mut m = Merged::default();
        m.set_layer(
            Source::User("/u.toml".into()),
            json!({"agent": {"model": "mine"}, "models": {"mine": {"wire": "openai_chat", "base_url": "http://127.0.0.1:1/v1"}}}),
        );
        // Neovim sends an empty Lua table as `[]`.
        m.set_layer(Source::InitializationOptions, json!([]));
        assert_eq!(m.config.agent.model.as_deref(), Some("mine"));
        assert!(m.config.models().unwrap().models.contains_key("mine"));
        assert!(m.problems.is_empty(), "{:?}", m.problems);
        m.set_layer(Source::InitializationOptions, json!([1, 2]));
        assert_eq!(m.config.agent.model.as_deref(), Some("mine"));
        assert!(
            m.problems.iter().any(|p| p.contains("not a table")),
            "{:?}",
            m.problems
        );
    }

    #[test]
    fn a_workspace_file_that_links_out_is_not_read() {
        let ws = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let secret = out.path().join("config.toml");
        std::fs::write(&secret, "[files]\nmax_bytes = 7\n").unwrap();
        let file = ws.path().join(WORKSPACE_FILE);
        std::os::unix::fs::symlink(&secret, &file).unwrap();
        let mut m = Merged::default();
        m.load_file(Source::Workspace(file.clone()), &file);
        assert_eq!(m.config.files.max_bytes, FilesConfig::default().max_bytes);
        assert!(
            m.problems
                .iter()
                .any(|p| p.contains("cannot read") && p.contains("outside the workspace root")),
            "{:?}",
            m.problems
        );
    }

    #[test]
    fn files_are_read_as_toml() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join(WORKSPACE_FILE);
        std::fs::write(&ws, "[files]\nmax_bytes = 1234\n").unwrap();
        let mut m = Merged::default();
        m.load_file(Source::Workspace(ws.clone()), &ws);
        assert_eq!(m.config.files.max_bytes, 1234);
        std::fs::write(&ws, "[files\n").unwrap();
        let mut m = Merged::default();
        m.load_file(Source::Workspace(ws.clone()), &ws);
        assert_eq!(m.config, Config::default());
        assert!(m.problems[0].contains("not valid TOML"), "{:?}", m.problems);
    }

    #[test]
    fn the_documented_example_is_read_without_problems() {
        let src = include_str!("config.rs");
        let start = src.find("//! ```toml\n").unwrap() + "//! ```toml\n".len();
        let end = start + src[start..].find("//! ```").unwrap();
        let text: String = src[start..end]
            .lines()
            .map(|l| format!("{}\n", l.trim_start_matches("//!").trim_start()))
            .collect();
        let table: toml::Table = toml::from_str(&text).unwrap();
        let mut m = Merged::default();
        m.set_layer(
            Source::User("u.toml".into()),
            serde_json::to_value(table).unwrap(),
        );
        assert_eq!(m.problems, Vec::<String>::new());
        let models = m.config.models().unwrap();
        assert_eq!(models.summarizer_name(), Some("local"));
        assert_eq!(m.config.agent.model.as_deref(), Some("local"));
    }

    #[test]
    fn model_tables_are_typed_settings() {
        let mut m = Merged::default();
        m.set_layer(
            Source::User("u.toml".into()),
            json!({"models": {"gpt": {"wire": "openai_chat"}}, "router": {"fast": "gpt", "strong": "gpt"}}),
        );
        assert_eq!(m.problems, Vec::<String>::new());
        assert_eq!(m.config.models["gpt"].wire, WireFormat::OpenaiChat);
        assert_eq!(m.config.router.as_ref().map(|r| r.threshold), Some(4));
        assert!(toml::to_string_pretty(&m.config).is_ok_and(|t| t.contains("[models.gpt]")));
        assert!(toml::to_string_pretty(&Config::default()).is_ok());
    }

    #[test]
    fn unknown_keys_in_every_table_are_reported_with_their_path() {
        let mut m = Merged::default();
        m.set_layer(
            Source::User("u.toml".into()),
            json!({
                "models": {"gpt": {"wire": "openai_chat", "base_url": "http://127.0.0.1:1/v1",
                                   "api_key_envv": "K", "profile": {"solvr": "loop"}}},
                "router": {"fast": "gpt", "strong": "gpt", "mod": "auto"},
                "verify": {"wait": 1},
                "language_servers": {"pylsp": {"cmd": "pylsp"}},
                "mcp": {"servers": {"x": {"comand": "x"}}, "timeout": 1},
                "completion": {"languages": {"rust": false}, "debounce": 1},
                "colour": 1,
            }),
        );
        let mut unknown: Vec<&str> = m
            .problems
            .iter()
            .filter_map(|p| p.strip_prefix("user config u.toml: unknown setting `"))
            .filter_map(|p| p.strip_suffix("` ignored"))
            .collect();
        unknown.sort_unstable();
        assert_eq!(
            unknown,
            [
                "colour",
                "completion.debounce",
                "language_servers.pylsp.cmd",
                "mcp.servers.x.comand",
                "mcp.timeout",
                "models.gpt.api_key_envv",
                "models.gpt.profile.solvr",
                "router.mod",
                "verify.wait",
            ],
            "{:?}",
            m.problems
        );
        assert_eq!(m.problems.len(), unknown.len(), "{:?}", m.problems);
        // The rest of every table applies: a typo costs its key, not the file.
        assert_eq!(m.applied.len(), 1);
        assert!(
            m.config
                .models()
                .is_ok_and(|c| c.models.contains_key("gpt"))
        );
        assert!(m.config.mcp.servers.contains_key("x"));
        assert!(!m.config.completion.enabled_for("rust"));
    }

    #[test]
    fn a_wrong_value_names_its_key_and_skips_its_layer() {
        let mut m = Merged::default();
        m.set_layer(
            Source::User("u.toml".into()),
            json!({"files": {"max_bytes": 7}}),
        );
        m.set_layer(
            Source::Client,
            json!({"files": {"max_bytes": 9}, "models": {"local": {"wire": "local", "threads": "two"}}}),
        );
        assert_eq!(m.config.files.max_bytes, 7);
        assert_eq!(m.problems.len(), 1, "{:?}", m.problems);
        assert!(
            m.problems[0].starts_with(
                "workspace/didChangeConfiguration: skipped: `models.local.threads`: invalid type: string \"two\""
            ),
            "{:?}",
            m.problems
        );
        m.set_layer(Source::Client, json!({"verify": {"wait_ms": -1}}));
        assert!(
            m.problems[0].contains("skipped: `verify.wait_ms`: invalid value"),
            "{:?}",
            m.problems
        );
        m.set_layer(Source::Client, json!({"router": {"fast": "a"}}));
        assert!(
            m.problems[0].contains("skipped: `router`: missing field `strong`"),
            "{:?}",
            m.problems
        );
    }

    #[test]
    fn vscode_style_settings_are_unwrapped() {
        assert_eq!(
            client_settings(json!({"agentls": {"a": 1}})),
            json!({"a": 1})
        );
        assert_eq!(client_settings(json!({"a": 1})), json!({"a": 1}));
    }
}
