//! Model configuration as users write it (TOML), and turning it into providers.
//!
//! ```toml
//! [models.local]
//! wire = "openai_chat"
//! base_url = "http://127.0.0.1:11434/v1"
//! model = "qwen2.5-coder:7b"
//! first_byte_timeout_secs = 600   # a slow local model
//!
//! [models.sonnet]
//! wire = "anthropic"
//! base_url = "https://api.anthropic.com/v1"
//! model = "claude-sonnet-4-5"
//! api_key_env = "ANTHROPIC_API_KEY"
//! profile = { context_window = 200000 }
//!
//! [router]
//! fast = "local"
//! strong = "sonnet"
//! mode = "plan_strong_implement_fast"
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::client::{ClientOptions, HttpProvider, Provider, ProviderSpec};
use crate::error::{ErrorClass, ModelError};
use crate::profile::{ModelProfile, ProfileOverrides, WireFormat};
use crate::router::{Router, RouterConfig};
use crate::secret::Secret;

/// The `[models]` and `[router]` tables.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelsConfig {
    /// Models by the name users pick them with.
    #[serde(default)]
    pub models: BTreeMap<String, ModelConfig>,
    /// The `auto` router.
    #[serde(default)]
    pub router: Option<RouterConfig>,
}

/// One `[models.NAME]` table.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// Wire format.
    pub wire: WireFormat,
    /// Base URL up to the API version, e.g. `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    /// Model id sent to the provider; the table name when absent.
    #[serde(default)]
    pub model: Option<String>,
    /// Environment variable holding the API key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// The key itself: allowed in the user's own config only, never in a workspace
    /// file (see [`ModelsConfig::reject_inline_keys`]).
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
    /// Parses TOML holding `[models.*]` and `[router]`.
    pub fn from_toml(text: &str) -> Result<Self, ModelError> {
        toml_from_str(text)
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

    /// The profile of a configured model: built-in for its id, then overrides.
    pub fn profile(&self, name: &str) -> Option<ModelProfile> {
        let m = self.models.get(name)?;
        let id = m.model.as_deref().unwrap_or(name);
        Some(ModelProfile::builtin(id).with_overrides(&m.profile))
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
    /// model's own timeouts and retry count override `options`.
    pub fn provider(
        &self,
        name: &str,
        mut options: ClientOptions,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Arc<dyn Provider>, ModelError> {
        let m = self.models.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.models.keys().map(String::as_str).collect();
            ModelError::new(
                ErrorClass::InvalidArguments,
                format!("unknown model {name:?}; configured: {known:?}"),
            )
        })?;
        if let Some(secs) = m.first_byte_timeout_secs {
            options.first_byte_timeout = Duration::from_secs(secs);
        }
        if let Some(secs) = m.idle_timeout_secs {
            options.idle_timeout = Duration::from_secs(secs);
        }
        if let Some(n) = m.max_retries {
            options.retry.max_retries = n;
        }
        let spec = ProviderSpec {
            name: name.to_owned(),
            wire: m.wire,
            base_url: m.base_url.clone(),
            model_id: m.model.clone().unwrap_or_else(|| name.to_owned()),
            key: m.api_key(env)?,
            profile: self.profile(name).unwrap_or_default(),
        };
        Ok(Arc::new(HttpProvider::new(spec, options)?))
    }
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
