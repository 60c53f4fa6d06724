//! The hook through which `wire = "local"` models reach the embedded engine.
//!
//! The engine (crate `agentls-local`, llama.cpp) depends on this crate, so this crate
//! cannot call it. Instead the binary registers the engine's constructor once at
//! startup with [`register`]; [`crate::ModelsConfig::provider`] calls it for every
//! local model. A build without the engine registers nothing, and a local model then
//! fails with [`not_built`]: a clear UnexpectedEnvironment error, never a panic.
//!
//! A process-wide registration rather than a factory handed to every caller: a
//! provider is built from at least five places (editor sessions, model switches,
//! `agentls run`, the router's two models, the summarizer, subagents reuse them), and
//! all of them must see the same engine. One line in `main` covers them all, and a
//! caller that forgot to pass a factory cannot silently lose local models.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use crate::client::Provider;
use crate::complete::Completer;
use crate::error::{ErrorClass, ModelError};
use crate::profile::{ModelProfile, ProfileOverrides};

/// The context size a local model runs with unless `context` says otherwise.
pub const DEFAULT_CONTEXT: u32 = 8_192;

/// The catalog model a build with the engine uses when the config names no model at
/// all (no `[models]` table): fetched on first use.
pub const EMBEDDED_DEFAULT: &str = "qwen2.5-coder-0.5b";

/// The name the embedded default goes by in sessions and logs.
pub const EMBEDDED_DEFAULT_NAME: &str = "local";

/// The `[models]` table of a config that names none, in a build with the engine: the
/// embedded default as `[models.local]`, fetched on first use. `None` in a build
/// without it (then "no model configured" stands).
pub fn embedded_default_models() -> Option<serde_json::Value> {
    is_registered().then(|| {
        serde_json::json!({
            EMBEDDED_DEFAULT_NAME: { "wire": "local", "model": EMBEDDED_DEFAULT, "fetch": true }
        })
    })
}

/// Where the weights of a local model come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LocalSource {
    /// A catalog name (`qwen2.5-coder-0.5b`), fetched with `agentls model fetch NAME`
    /// into the user's data directory.
    Catalog(String),
    /// A GGUF file (a leading `~/` means the home directory).
    Path(PathBuf),
}

/// One `wire = "local"` model as configured.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalModelSpec {
    /// The configured name (`[models.NAME]`): what [`Provider::name`] answers.
    pub name: String,
    /// The weights.
    pub source: LocalSource,
    /// CPU threads; all cores when `None`.
    pub threads: Option<usize>,
    /// Context size in tokens; [`DEFAULT_CONTEXT`] when `None` (capped by what the
    /// model was trained for).
    pub context: Option<u32>,
    /// llama.cpp's flash-attention kernel (off when `None`).
    pub flash_attention: Option<bool>,
    /// How the attention cache stores its entries ([`KvCache::F16`] when `None`).
    pub kv_cache: Option<KvCache>,
    /// Profile overrides on top of what the engine reports.
    pub overrides: ProfileOverrides,
    /// A catalog model not on disk is fetched when first loaded (with progress in
    /// the log) instead of failing with "run `agentls model fetch`".
    pub fetch: bool,
}

impl LocalModelSpec {
    /// A catalog model (`qwen2.5-coder-0.5b`) with every setting at its default and
    /// no fetch on first use.
    pub fn catalog(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            source: LocalSource::Catalog(name.to_owned()),
            threads: None,
            context: None,
            flash_attention: None,
            kv_cache: None,
            overrides: ProfileOverrides::default(),
            fetch: false,
        }
    }
}

/// How a local model's attention (KV) cache stores keys and values: `kv_cache` in a
/// `[models.NAME]` table. Quantised entries take half (`q8_0`) or about a third
/// (`q4_0`) of the memory of `f16`, with a small loss of precision; llama.cpp
/// quantises values only with its flash-attention kernel, so without
/// `flash_attention = true` only the keys are.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum KvCache {
    /// 16-bit floats, llama.cpp's default.
    #[default]
    F16,
    /// 8-bit blocks.
    Q8_0,
    /// 4-bit blocks.
    Q4_0,
}

impl KvCache {
    /// The name as written in the config (`f16`, `q8_0`, `q4_0`).
    pub fn as_str(self) -> &'static str {
        match self {
            KvCache::F16 => "f16",
            KvCache::Q8_0 => "q8_0",
            KvCache::Q4_0 => "q4_0",
        }
    }
}

impl std::str::FromStr for KvCache {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "f16" => Ok(KvCache::F16),
            "q8_0" => Ok(KvCache::Q8_0),
            "q4_0" => Ok(KvCache::Q4_0),
            _ => Err(format!("unknown KV cache type {s:?} (f16, q8_0 or q4_0)")),
        }
    }
}

impl std::fmt::Display for KvCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The profile a small embedded model gets at `context` tokens: the compact prompt,
/// `str_replace` edits, one tool call at a time, the lean tools. The engine's provider reports its
/// own (with the context it actually runs at); this is the estimate before loading.
pub fn profile(context: u32) -> ModelProfile {
    ModelProfile {
        context_window: context,
        max_output: 2_048,
        lean_tools: true,
        ..ModelProfile::builtin("qwen2.5-coder")
    }
}

/// Builds a provider for a local model (blocking: loading weights takes seconds).
pub type Factory = fn(&LocalModelSpec) -> Result<Arc<dyn Provider>, ModelError>;

static FACTORY: OnceLock<Factory> = OnceLock::new();

/// Registers the embedded engine's constructor for this process. Returns `false` if a
/// factory was registered before (the first one stays).
pub fn register(factory: Factory) -> bool {
    FACTORY.set(factory).is_ok()
}

/// Whether an engine is registered (the binary was built with the `local` feature).
pub fn is_registered() -> bool {
    FACTORY.get().is_some()
}

/// The error for a local model in a build without the engine.
pub fn not_built(name: &str) -> ModelError {
    ModelError::new(
        ErrorClass::UnexpectedEnvironment,
        format!(
            "model {name}: this agentls was built without the embedded model; rebuild with \
             `--features local` (needs cmake and libclang)"
        ),
    )
}

/// A provider for `spec` from the registered engine.
pub(crate) fn provider(spec: &LocalModelSpec) -> Result<Arc<dyn Provider>, ModelError> {
    match FACTORY.get() {
        Some(factory) => factory(spec),
        None => Err(not_built(&spec.name)),
    }
}

/// Builds a fill-in-the-middle completer for a local model (blocking, like [`Factory`]).
pub type CompleterFactory = fn(&LocalModelSpec) -> Result<Arc<dyn Completer>, ModelError>;

static COMPLETER_FACTORY: OnceLock<CompleterFactory> = OnceLock::new();

/// Registers the embedded engine's completer constructor for this process (beside
/// [`register`], for the same reason). Returns `false` if one was registered before.
pub fn register_completer(factory: CompleterFactory) -> bool {
    COMPLETER_FACTORY.set(factory).is_ok()
}

/// A completer for `spec` from the registered engine, or [`not_built`].
pub fn completer(spec: &LocalModelSpec) -> Result<Arc<dyn Completer>, ModelError> {
    match COMPLETER_FACTORY.get() {
        Some(factory) => factory(spec),
        None => Err(not_built(&spec.name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Solver;

    #[test]
    fn the_embedded_profile_takes_the_pipeline_unless_pinned_to_the_loop() {
        // `auto`, every profile's default, sends the lean (embedded) profile there.
        assert!(profile(4_096).uses_pipeline());
        let pinned = ProfileOverrides {
            solver: Some(Solver::Loop),
            ..ProfileOverrides::default()
        };
        assert!(!profile(4_096).with_overrides(&pinned).uses_pipeline());
    }
}
