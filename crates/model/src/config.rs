//! Model configuration as users write it (TOML), and turning it into providers.
//!
//! ```toml
//! # Who writes compaction summaries; default: the router's fast model, if any.
//! # (Top-level keys come before the first table.)
//! summarizer = "local"
//!
//! [models.ollama]
//! wire = "openai_chat"
//! base_url = "http://127.0.0.1:11434/v1"
//! model = "qwen2.5-coder:7b"
//! first_byte_timeout_secs = 600   # a slow local server
//!
//! [models.sonnet]
//! wire = "anthropic"
//! base_url = "https://api.anthropic.com/v1"
//! model = "claude-sonnet-4-5"
//! api_key_env = "ANTHROPIC_API_KEY"
//! profile = { context_window = 200000 }
//!
//! # The embedded model, in process (a build with the `local` feature).
//! [models.local]
//! wire = "local"
//! model = "qwen2.5-coder-0.5b"    # fetched by `agentls model fetch`; or path = "/x.gguf"
//! threads = 2                     # default: all cores
//! context = 8192                  # default: 8192, capped by the model's training
//! flash_attention = false         # default: off
//! kv_cache = "f16"                # default; or "q8_0", "q4_0" (keys; values too with
//!                                 # flash attention)
//!
//! [router]
//! fast = "local"
//! strong = "sonnet"
//! mode = "plan_strong_implement_fast"
//! ```
//!
//! HTTP models need `base_url`; local models need `model` (a catalog name) or `path`,
//! and take no URL, key, timeout or retry settings. [`ModelsConfig::from_toml`] checks
//! all of it, naming the model at fault.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::client::{ClientOptions, HttpProvider, Provider, ProviderSpec};
use crate::complete::Completer;
use crate::completions::{CompleterSpec, HttpCompleter};
use crate::error::{ErrorClass, ModelError};
use crate::local::{self, LocalModelSpec, LocalSource};
use crate::profile::{ModelProfile, ProfileOverrides, WireFormat};
use crate::router::{Router, RouterConfig};
use crate::secret::Secret;

/// The `[models]` and `[router]` tables, and the `summarizer` key.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelsConfig {
    /// Models by the name users pick them with.
    #[serde(default)]
    pub models: BTreeMap<String, ModelConfig>,
    /// The `auto` router.
    #[serde(default)]
    pub router: Option<RouterConfig>,
    /// The model that writes compaction summaries; the router's `fast` model when
    /// unset (see [`ModelsConfig::summarizer_name`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summarizer: Option<String>,
}

/// One `[models.NAME]` table.
#[derive(Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// Wire format.
    pub wire: WireFormat,
    /// HTTP wires: base URL up to the API version, e.g. `http://127.0.0.1:8080/v1`
    /// (required for them, refused for `local`).
    #[serde(default)]
    pub base_url: Option<String>,
    /// HTTP wires: the model id sent to the provider, the table name when absent.
    /// `local`: a catalog name (`agentls model list`).
    #[serde(default)]
    pub model: Option<String>,
    /// `local` only: a GGUF file instead of a catalog name.
    #[serde(default)]
    pub path: Option<PathBuf>,
    /// `local` only: CPU threads (default: all cores).
    #[serde(default)]
    pub threads: Option<usize>,
    /// `local` only: context size in tokens (default 8192, `local::DEFAULT_CONTEXT`,
    /// capped by the model's training).
    #[serde(default)]
    pub context: Option<u32>,
    /// `local` only: llama.cpp's flash-attention kernel (default off; see
    /// `agentls bench model --flash-attention` for what it does on this machine).
    #[serde(default)]
    pub flash_attention: Option<bool>,
    /// `local` only: how the attention cache stores entries, `f16` (default), `q8_0`
    /// or `q4_0` (keys; values too with flash attention).
    #[serde(default)]
    pub kv_cache: Option<local::KvCache>,
    /// `local` only: a catalog model not on disk is fetched on first use (default
    /// false: the load fails and says to run `agentls model fetch`).
    #[serde(default)]
    pub fetch: Option<bool>,
    /// Environment variable holding the API key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// The key itself: allowed in the user's own config only, never in a workspace
    /// file (`agentls run` and the other command-line front ends refuse it there).
    #[serde(default, skip_serializing)]
    pub api_key: Option<String>,
    /// Profile overrides on top of the built-in profile of `model`.
    #[serde(default)]
    pub profile: ProfileOverrides,
    /// Seconds to wait for the response headers (slow local models need more).
    #[serde(default)]
    pub first_byte_timeout_secs: Option<u64>,
    /// Seconds of silence tolerated inside a stream.
    #[serde(default)]
    pub idle_timeout_secs: Option<u64>,
    /// Retries after the first attempt.
    #[serde(default)]
    pub max_retries: Option<u32>,
}

impl std::fmt::Debug for ModelConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelConfig")
            .field("wire", &self.wire)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("path", &self.path)
            .field("threads", &self.threads)
            .field("context", &self.context)
            .field("flash_attention", &self.flash_attention)
            .field("kv_cache", &self.kv_cache)
            .field("fetch", &self.fetch)
            .field("api_key_env", &self.api_key_env)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("profile", &self.profile)
            .field("first_byte_timeout_secs", &self.first_byte_timeout_secs)
            .field("idle_timeout_secs", &self.idle_timeout_secs)
            .field("max_retries", &self.max_retries)
            .finish()
    }
}

impl ModelConfig {
    /// Checks the keys against the wire: HTTP models need `base_url` and take no
    /// local keys; local models need `model` or `path` and take no HTTP keys.
    pub fn check(&self, name: &str) -> Result<(), ModelError> {
        let invalid = |what: String| {
            Err(ModelError::new(
                ErrorClass::InvalidArguments,
                format!("model {name}: {what}"),
            ))
        };
        if self.wire.is_http() {
            let wire = wire_name(self.wire);
            if self.base_url.is_none() {
                return invalid(format!(
                    "wire = \"{wire}\" needs base_url (the API root, e.g. http://127.0.0.1:8080/v1)"
                ));
            }
            let local_keys = [
                ("path", self.path.is_some()),
                ("threads", self.threads.is_some()),
                ("context", self.context.is_some()),
                ("flash_attention", self.flash_attention.is_some()),
                ("kv_cache", self.kv_cache.is_some()),
                ("fetch", self.fetch.is_some()),
            ];
            if let Some((key, _)) = local_keys.iter().find(|(_, set)| *set) {
                return invalid(format!(
                    "{key} is only for wire = \"local\" models, not wire = \"{wire}\""
                ));
            }
            return Ok(());
        }
        let http_keys = [
            ("base_url", self.base_url.is_some()),
            ("api_key_env", self.api_key_env.is_some()),
            ("api_key", self.api_key.is_some()),
            (
                "first_byte_timeout_secs",
                self.first_byte_timeout_secs.is_some(),
            ),
            ("idle_timeout_secs", self.idle_timeout_secs.is_some()),
            ("max_retries", self.max_retries.is_some()),
        ];
        if let Some((key, _)) = http_keys.iter().find(|(_, set)| *set) {
            return invalid(format!(
                "{key} does not apply to wire = \"local\" (the model runs inside agentls)"
            ));
        }
        match (&self.model, &self.path) {
            (None, None) => invalid(
                "wire = \"local\" needs model (a name from `agentls model list`) or path (a GGUF file)"
                    .to_owned(),
            ),
            (Some(_), Some(_)) => invalid("give model or path, not both".to_owned()),
            _ if self.threads == Some(0) => invalid("threads must be at least 1".to_owned()),
            _ if self.context == Some(0) => invalid("context must be at least 1".to_owned()),
            _ => Ok(()),
        }
    }

    /// What the embedded engine needs to load this model (`wire = "local"` only).
    pub fn local_spec(&self, name: &str) -> Result<LocalModelSpec, ModelError> {
        self.check(name)?;
        let source = match (&self.model, &self.path) {
            (_, Some(path)) => LocalSource::Path(path.clone()),
            (Some(model), None) if !self.wire.is_http() => LocalSource::Catalog(model.clone()),
            _ => {
                return Err(ModelError::new(
                    ErrorClass::InvalidArguments,
                    format!("model {name}: not a wire = \"local\" model"),
                ));
            }
        };
        Ok(LocalModelSpec {
            name: name.to_owned(),
            source,
            threads: self.threads,
            context: self.context,
            flash_attention: self.flash_attention,
            kv_cache: self.kv_cache,
            overrides: self.profile.clone(),
            fetch: self.fetch.unwrap_or(false),
        })
    }

    /// The key: the inline one, else the named variable read through `env`; `None`
    /// when neither is configured (local servers). A named but unset variable is an
    /// error, so that a typo does not silently send unauthenticated requests.
    pub fn api_key(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Secret>, ModelError> {
        if let Some(k) = &self.api_key {
            return Ok(Some(Secret::new(k.clone())));
        }
        let Some(var) = &self.api_key_env else {
            return Ok(None);
        };
        match env(var).filter(|v| !v.trim().is_empty()) {
            Some(v) => Ok(Some(Secret::new(v.trim()))),
            None => Err(ModelError::new(
                ErrorClass::UnexpectedEnvironment,
                format!("the API key variable {var} is not set"),
            )),
        }
    }
}

impl ModelsConfig {
    /// Parses TOML holding `[models.*]`, `[router]` and `summarizer`, and checks it
    /// ([`ModelsConfig::validate`]).
    pub fn from_toml(text: &str) -> Result<Self, ModelError> {
        let config: Self = toml_from_str(text)?;
        config.validate()?;
        Ok(config)
    }

    /// Checks every model's keys against its wire ([`ModelConfig::check`]) and that
    /// `summarizer` names a configured model. (`[router]` is checked when used:
    /// [`ModelsConfig::router`].)
    pub fn validate(&self) -> Result<(), ModelError> {
        for (name, m) in &self.models {
            m.check(name)?;
        }
        if let Some(name) = &self.summarizer
            && !self.models.contains_key(name)
        {
            return Err(ModelError::new(
                ErrorClass::InvalidArguments,
                format!("summarizer names model {name:?}, which is not configured"),
            ));
        }
        Ok(())
    }

    /// The model that writes compaction summaries: `summarizer`, else the router's
    /// `fast` model, else none (compaction then keeps the harness's own notes only).
    pub fn summarizer_name(&self) -> Option<&str> {
        self.summarizer
            .as_deref()
            .or_else(|| self.router.as_ref().map(|r| r.fast.as_str()))
    }

    /// The provider of [`ModelsConfig::summarizer_name`], if one is configured.
    pub fn summarizer(
        &self,
        options: ClientOptions,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Arc<dyn Provider>>, ModelError> {
        match self.summarizer_name() {
            Some(name) => self.provider(name, options, env).map(Some),
            None => Ok(None),
        }
    }

    /// Refuses inline API keys: call it on configuration read from a workspace, which
    /// anyone with commit access could have written.
    pub fn reject_inline_keys(&self) -> Result<(), ModelError> {
        match self.models.iter().find(|(_, m)| m.api_key.is_some()) {
            Some((name, _)) => Err(ModelError::new(
                ErrorClass::InvalidArguments,
                format!(
                    "model {name}: api_key is only accepted in the user's own config; use api_key_env"
                ),
            )),
            None => Ok(()),
        }
    }

    /// The profile of a configured model: built-in for its id, then overrides. For a
    /// local model, the profile of the embedded engine at the configured context (an
    /// estimate until loaded: the engine caps the context at what the model was
    /// trained for).
    pub fn profile(&self, name: &str) -> Option<ModelProfile> {
        let m = self.models.get(name)?;
        let base = if m.wire.is_http() {
            ModelProfile::builtin(m.model.as_deref().unwrap_or(name))
        } else {
            local::profile(m.context.unwrap_or(local::DEFAULT_CONTEXT))
        };
        Some(base.with_overrides(&m.profile))
    }

    /// The `auto` router, if `[router]` is configured; both of its models must be.
    pub fn router(&self) -> Result<Option<Router>, ModelError> {
        let Some(rc) = &self.router else {
            return Ok(None);
        };
        for name in [&rc.fast, &rc.strong] {
            if !self.models.contains_key(name) {
                return Err(ModelError::new(
                    ErrorClass::InvalidArguments,
                    format!("[router] names model {name:?}, which is not configured"),
                ));
            }
        }
        let fast_context = self.profile(&rc.fast).map_or(0, |p| p.context_window);
        Ok(Some(Router::new(rc.clone(), fast_context)))
    }

    /// A provider for a configured model, with the key read through `env`; the
    /// model's own timeouts and retry count override `options`. A `local` model comes
    /// from the engine registered with [`local::register`] (blocking while it loads,
    /// the first time), or fails with [`local::not_built`].
    pub fn provider(
        &self,
        name: &str,
        mut options: ClientOptions,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Arc<dyn Provider>, ModelError> {
        let m = self.checked(name)?;
        if !m.wire.is_http() {
            return local::provider(&m.local_spec(name)?);
        }
        m.apply_timeouts(&mut options);
        if let Some(n) = m.max_retries {
            options.retry.max_retries = n;
        }
        let spec = ProviderSpec {
            name: name.to_owned(),
            wire: m.wire,
            base_url: m.base_url.clone().unwrap_or_default(),
            model_id: m.model.clone().unwrap_or_else(|| name.to_owned()),
            key: m.api_key(env)?,
            profile: self.profile(name).unwrap_or_default(),
        };
        Ok(Arc::new(HttpProvider::new(spec, options)?))
    }
}

impl ModelsConfig {
    /// The configured model `name`, checked ([`ModelConfig::check`]), or an error
    /// naming the configured ones.
    fn checked(&self, name: &str) -> Result<&ModelConfig, ModelError> {
        let m = self.models.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.models.keys().map(String::as_str).collect();
            ModelError::new(
                ErrorClass::InvalidArguments,
                format!("unknown model {name:?}; configured: {known:?}"),
            )
        })?;
        m.check(name)?;
        Ok(m)
    }
}

impl ModelConfig {
    /// The model's own timeouts over `options`.
    fn apply_timeouts(&self, options: &mut ClientOptions) {
        if let Some(secs) = self.first_byte_timeout_secs {
            options.first_byte_timeout = Duration::from_secs(secs);
        }
        if let Some(secs) = self.idle_timeout_secs {
            options.idle_timeout = Duration::from_secs(secs);
        }
    }
}

impl ModelsConfig {
    /// A fill-in-the-middle completer for a configured model: the embedded engine's
    /// for a `local` model (blocking while it loads, the first time), an
    /// [`HttpCompleter`] on the OpenAI-compatible `/completions` endpoint for an
    /// OpenAI wire (`stream` asks for a streamed answer). Anthropic has no such
    /// endpoint: an InvalidArguments error.
    pub fn completer(
        &self,
        name: &str,
        stream: bool,
        mut options: ClientOptions,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Arc<dyn Completer>, ModelError> {
        let m = self.checked(name)?;
        match m.wire {
            WireFormat::Local => return local::completer(&m.local_spec(name)?),
            WireFormat::Anthropic => {
                return Err(ModelError::new(
                    ErrorClass::InvalidArguments,
                    format!(
                        "model {name}: wire = \"anthropic\" has no completions endpoint; \
                         pick a local model or an OpenAI-compatible one for completion"
                    ),
                ));
            }
            WireFormat::OpenaiChat | WireFormat::OpenaiResponses => {}
        }
        m.apply_timeouts(&mut options);
        let spec = CompleterSpec {
            name: name.to_owned(),
            base_url: m.base_url.clone().unwrap_or_default(),
            model_id: m.model.clone().unwrap_or_else(|| name.to_owned()),
            key: m.api_key(env)?,
            stream,
        };
        Ok(Arc::new(HttpCompleter::new(spec, options)?))
    }
}

fn wire_name(wire: WireFormat) -> String {
    serde_json::to_value(wire)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn toml_from_str<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, ModelError> {
    // Only the message: a TOML error may quote the offending line, key included.
    toml::from_str(text).map_err(|e| {
        ModelError::new(
            ErrorClass::InvalidArguments,
            format!("model config: {}", e.message()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(toml: &str) -> ModelError {
        ModelsConfig::from_toml(toml).unwrap_err()
    }

    /// The first ```toml block after `after` in `text`, `//! ` prefixes removed.
    fn toml_block(text: &str, after: &str) -> String {
        let rest = &text[text.find(after).unwrap()..];
        let start = rest.find("```toml\n").unwrap() + "```toml\n".len();
        let end = start + rest[start..].find("```").unwrap();
        rest[start..end]
            .lines()
            .map(|l| {
                l.trim_start_matches("//!")
                    .strip_prefix(' ')
                    .unwrap_or(l.trim_start_matches("//!"))
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn the_documented_examples_are_valid() {
        let doc = toml_block(include_str!("config.rs"), "//! Model configuration");
        let config = ModelsConfig::from_toml(&doc).unwrap();
        assert_eq!(config.summarizer_name(), Some("local"));
        assert_eq!(config.models["local"].wire, WireFormat::Local);
        let guide = toml_block(
            include_str!("../../../docs/models.md"),
            "## Configuring models",
        );
        let config = ModelsConfig::from_toml(&guide).unwrap();
        assert_eq!(config.summarizer_name(), Some("local"));
        assert!(config.router().unwrap().is_some());
    }

    #[test]
    fn local_models_parse_by_catalog_name_or_path() {
        let config = ModelsConfig::from_toml(
            r#"
[models.local]
wire = "local"
model = "qwen2.5-coder-0.5b"
threads = 2
context = 4096
flash_attention = true
kv_cache = "q8_0"
profile = { max_output = 512 }

[models.file]
wire = "local"
path = "/models/x.gguf"
"#,
        )
        .unwrap();
        let spec = config.models["local"].local_spec("local").unwrap();
        assert_eq!(
            spec,
            LocalModelSpec {
                name: "local".into(),
                source: LocalSource::Catalog("qwen2.5-coder-0.5b".into()),
                threads: Some(2),
                context: Some(4096),
                flash_attention: Some(true),
                kv_cache: Some(local::KvCache::Q8_0),
                overrides: ProfileOverrides {
                    max_output: Some(512),
                    ..ProfileOverrides::default()
                },
                fetch: false,
            }
        );
        let spec = config.models["file"].local_spec("file").unwrap();
        assert_eq!(spec.source, LocalSource::Path("/models/x.gguf".into()));
        assert_eq!((spec.threads, spec.context), (None, None));
        assert_eq!((spec.flash_attention, spec.kv_cache), (None, None));

        // The profile before loading: the engine's, at the configured context.
        let p = config.profile("local").unwrap();
        assert_eq!(
            (p.context_window, p.max_output, p.prompt_variant),
            (4096, 512, crate::PromptVariant::Compact)
        );
        assert_eq!(p.edit_format, crate::EditFormat::StrReplace);
        let p = config.profile("file").unwrap();
        assert_eq!(p.context_window, local::DEFAULT_CONTEXT);
    }

    #[test]
    fn keys_must_fit_the_wire() {
        for (toml, wanted) in [
            (
                "[models.gpt]\nwire = \"openai_chat\"\n",
                "model gpt: wire = \"openai_chat\" needs base_url",
            ),
            (
                "[models.claude]\nwire = \"anthropic\"\nbase_url = \"u\"\ncontext = 9\n",
                "model claude: context is only for wire = \"local\" models, not wire = \"anthropic\"",
            ),
            (
                "[models.r]\nwire = \"openai_responses\"\nbase_url = \"u\"\npath = \"/x.gguf\"\n",
                "model r: path is only for wire = \"local\" models",
            ),
            (
                "[models.c]\nwire = \"anthropic\"\nbase_url = \"u\"\nkv_cache = \"q8_0\"\n",
                "model c: kv_cache is only for wire = \"local\" models",
            ),
            (
                "[models.l]\nwire = \"local\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:1/v1\"\n",
                "model l: base_url does not apply to wire = \"local\"",
            ),
            (
                "[models.l]\nwire = \"local\"\nmodel = \"m\"\napi_key_env = \"K\"\n",
                "model l: api_key_env does not apply",
            ),
            (
                "[models.l]\nwire = \"local\"\nthreads = 2\n",
                "model l: wire = \"local\" needs model (a name from `agentls model list`) or path",
            ),
            (
                "[models.l]\nwire = \"local\"\nmodel = \"m\"\npath = \"/x.gguf\"\n",
                "model l: give model or path, not both",
            ),
            (
                "[models.l]\nwire = \"local\"\nmodel = \"m\"\nthreads = 0\n",
                "model l: threads must be at least 1",
            ),
            (
                "summarizer = \"cheap\"\n[models.l]\nwire = \"local\"\nmodel = \"m\"\n",
                "summarizer names model \"cheap\", which is not configured",
            ),
        ] {
            let e = err(toml);
            assert_eq!(e.class, ErrorClass::InvalidArguments, "{toml}");
            assert!(e.message.starts_with(wanted), "{toml}\n{}", e.message);
        }
        // Unknown keys stay unknown.
        let e = err("[models.l]\nwire = \"local\"\nmodel = \"m\"\nthread = 2\n");
        assert!(
            e.message.contains("unknown field `thread`"),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_config_built_without_from_toml_is_checked_when_used() {
        // The server reads the tables through serde_json: `provider` checks too.
        let config: ModelsConfig = serde_json::from_value(serde_json::json!({
            "models": {"gpt": {"wire": "openai_chat"}}
        }))
        .unwrap();
        let e = config
            .provider("gpt", ClientOptions::default(), |_| None)
            .unwrap_err();
        assert!(e.message.contains("needs base_url"), "{}", e.message);
    }

    #[test]
    fn local_models_without_the_engine_say_how_to_get_it() {
        // Nothing registers an engine in this test binary (see tests/local_hook.rs
        // for the registered path).
        assert!(!local::is_registered());
        assert!(
            local::embedded_default_models().is_none(),
            "no engine, no default"
        );
        let config =
            ModelsConfig::from_toml("[models.small]\nwire = \"local\"\npath = \"/x.gguf\"\n")
                .unwrap();
        let e = config
            .provider("small", ClientOptions::default(), |_| None)
            .unwrap_err();
        assert_eq!(e.class, ErrorClass::UnexpectedEnvironment);
        assert_eq!(
            e.message,
            "model small: this agentls was built without the embedded model; rebuild with \
             `--features local` (needs cmake and libclang)"
        );
        // Never through HTTP either.
        let spec = ProviderSpec {
            name: "small".into(),
            wire: WireFormat::Local,
            base_url: String::new(),
            model_id: "small".into(),
            key: None,
            profile: ModelProfile::default(),
        };
        let e = HttpProvider::new(spec, ClientOptions::default()).unwrap_err();
        assert_eq!(e.class, ErrorClass::InvalidArguments);
        assert!(crate::decode_sse_body(WireFormat::Local, b"").is_err());
    }

    #[test]
    fn the_summarizer_defaults_to_the_routers_fast_model() {
        let base = "[models.a]\nwire = \"local\"\nmodel = \"m\"\n[models.b]\nwire = \"openai_chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\n";
        let none = ModelsConfig::from_toml(base).unwrap();
        assert_eq!(none.summarizer_name(), None);
        assert!(
            none.summarizer(ClientOptions::default(), |_| None)
                .unwrap()
                .is_none()
        );
        let routed =
            ModelsConfig::from_toml(&format!("{base}[router]\nfast = \"a\"\nstrong = \"b\"\n"))
                .unwrap();
        assert_eq!(routed.summarizer_name(), Some("a"));
        let named = ModelsConfig::from_toml(&format!(
            "summarizer = \"b\"\n{base}[router]\nfast = \"a\"\nstrong = \"b\"\n"
        ))
        .unwrap();
        assert_eq!(named.summarizer_name(), Some("b"));
        let p = named
            .summarizer(ClientOptions::default(), |_| None)
            .unwrap()
            .unwrap();
        assert_eq!(p.name(), "b");
    }
}
