//! Which model a session runs on: the name asked for, else `[agent] model`, else the
//! first configured; `auto` is the router. Providers are built by
//! [`agentls_agent::build::provider`], the one place that makes them.

use std::sync::Arc;

use agentls_model::{ModelsConfig, Phase, Provider, RouteInput};

/// Whether `name` can be used: a configured model, or `auto` with a router.
pub fn check_model(models: &ModelsConfig, name: &str) -> Result<(), String> {
    if name == "auto" {
        return match models.router() {
            Ok(Some(_)) => Ok(()),
            Ok(None) => {
                Err("`auto` needs a [router] table naming a fast and a strong model".to_owned())
            }
            Err(e) => Err(e.to_string()),
        };
    }
    if models.models.contains_key(name) {
        Ok(())
    } else {
        let known: Vec<&str> = models.models.keys().map(String::as_str).collect();
        Err(format!("unknown model {name:?}; configured: {known:?}"))
    }
}

/// The model `name` stands for: itself, or for `auto` the router's pick for `prompt`.
fn resolve_name(models: &ModelsConfig, name: &str, prompt: &str) -> Result<String, String> {
    if name != "auto" {
        return Ok(name.to_owned());
    }
    let router = models
        .router()
        .map_err(|e| e.to_string())?
        .ok_or("`auto` needs a [router] table")?;
    let mut input = RouteInput::new(Phase::Implement);
    input.request_chars = prompt.len();
    Ok(router.route(&input).model)
}

/// The provider a running session switches to (`auto`: the router's pick for
/// `prompt`), built on a blocking thread: a local model loads its weights for seconds,
/// which must not stall the caller's event loop.
pub async fn switch_to(
    models: ModelsConfig,
    name: String,
    prompt: String,
) -> Result<Arc<dyn Provider>, String> {
    tokio::task::spawn_blocking(move || {
        let name = resolve_name(&models, &name, &prompt)?;
        agentls_agent::build::provider(&models, &name).map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| format!("building the model failed: {e}"))?
}
