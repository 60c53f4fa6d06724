//! Model selection as a session config option (`configOptions`, a `select` in the
//! `model` category; `session/set_config_option` picks one): the models of the user's
//! `[models]`. A pick takes effect at the session's next turn, handed over as the
//! editor's model picker does (`Session::switch_model`).

use agent_client_protocol::v1::schema::SessionConfigOption;
use agentls_model::ModelsConfig;
use serde_json::json;

/// The option's id.
pub const CONFIG_ID: &str = "model";

/// The select option with `current` chosen: every configured model (and `auto`, when
/// the session runs on the router).
pub fn options(current: &str, models: &ModelsConfig) -> Vec<SessionConfigOption> {
    let mut choices: Vec<serde_json::Value> = models
        .models
        .iter()
        .map(|(name, m)| {
            json!({
                "value": name,
                "name": name,
                "description": m.model.clone().unwrap_or_else(|| format!("{:?}", m.wire)),
            })
        })
        .collect();
    if current == "auto" {
        choices.insert(
            0,
            json!({"value": "auto", "name": "auto", "description": "the router picks per call"}),
        );
    }
    let v = json!({
        "id": CONFIG_ID,
        "name": "Model",
        "category": "model",
        "type": "select",
        "currentValue": current,
        "options": choices,
    });
    match serde_json::from_value(v) {
        Ok(o) => vec![o],
        Err(e) => {
            tracing::error!("acp: the model option does not fit the schema: {e}");
            Vec::new()
        }
    }
}

/// Whether `name` can be picked: a configured model (not `auto`: the router is chosen
/// when the session starts).
pub fn pickable(name: &str, models: &ModelsConfig) -> bool {
    models.models.contains_key(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_lists_the_configured_models_with_the_current_one() {
        let models: ModelsConfig = toml::from_str(
            "[models.small]\nwire = \"openai_chat\"\nmodel = \"qwen-7b\"\n[models.big]\nwire = \"anthropic\"\nmodel = \"claude\"\n",
        )
        .unwrap();
        let v = serde_json::to_value(&options("small", &models)[0]).unwrap();
        assert_eq!(v["type"], "select");
        assert_eq!(v["currentValue"], "small");
        let values: Vec<&str> = v["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["value"].as_str().unwrap())
            .collect();
        assert_eq!(values, ["big", "small"]);
        assert_eq!(v["options"][1]["description"], "qwen-7b");
        assert!(pickable("big", &models) && !pickable("auto", &models));
    }
}
