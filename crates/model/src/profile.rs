//! What we know about a model: window, limits, edit format, prompt variant, prices,
//! caching. Built-in profiles for common models; user overrides on top.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::usage::{Price, Usage};

/// How a model is reached: one of the HTTP APIs, or the embedded engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WireFormat {
    /// OpenAI chat completions, also spoken by vLLM, llama.cpp's server, Ollama,
    /// LM Studio and OpenRouter.
    OpenaiChat,
    /// The OpenAI Responses API.
    OpenaiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// No wire: the embedded model runs in process (see [`crate::local`]).
    Local,
}

impl WireFormat {
    /// Whether requests go over HTTP (every format but [`WireFormat::Local`]).
    pub fn is_http(self) -> bool {
        self != WireFormat::Local
    }
}

/// The edit tool a model is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EditFormat {
    /// The `apply_patch` envelope, for models trained on it.
    ApplyPatch,
    /// Search/replace (`str_replace`), which every model handles.
    StrReplace,
}

/// Which flavour of system prompt suits the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PromptVariant {
    /// Tuned for OpenAI models.
    Gpt,
    /// Tuned for Claude models.
    Claude,
    /// Short and explicit, for small local models.
    Compact,
    /// Neutral.
    Default,
}

/// A model's capabilities and costs.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelProfile {
    /// Context window in tokens.
    pub context_window: u32,
    /// Output limit in tokens (sent when the request sets none).
    pub max_output: u32,
    /// Edit tool to give it.
    pub edit_format: EditFormat,
    /// System prompt flavour.
    pub prompt_variant: PromptVariant,
    /// Prices, when known; costs are reported only then.
    pub price: Option<Price>,
    /// Whether the provider caches prompt prefixes (Anthropic gets `cache_control`).
    pub prompt_caching: bool,
    /// Whether `prediction` (predicted outputs) may be sent.
    pub supports_prediction: bool,
    /// Whether tools go through the API; if not, the agent describes them in the
    /// prompt and reads calls from text with [`crate::lenient`].
    pub native_tools: bool,
    /// Whether the model may call several tools in one turn.
    pub parallel_tool_calls: bool,
    /// Chat completions: send `max_completion_tokens` instead of `max_tokens`
    /// (OpenAI reasoning models refuse the latter).
    pub max_completion_tokens: bool,
    /// The lean profile: only the lean tools (find, grep, read, edit, write, run), a
    /// four-step workflow in the prompt and the workspace's files listed. The embedded
    /// models' (they pay for every tool in their prompt on two cores); off for the
    /// others.
    pub lean_tools: bool,
    /// How a task is solved: the tool loop, or the small-model pipeline (localise,
    /// sample whole functions, verify each in an overlay, land the best); `auto` takes
    /// the pipeline for the lean profile's (embedded) models, and is the default:
    /// on the suite the 0.5B model passes 14 of 37 tasks through the pipeline and
    /// none through the loop alone (docs/solve.md).
    pub solver: Solver,
}

/// How a session solves a task (`solver` in `[models.NAME.profile]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Solver {
    /// The pipeline for lean-profile models, the tool loop for the others. A
    /// pipeline that drew candidates and verified none ends the turn saying so: the
    /// loop after it solved none of the suite's tasks on the embedded models and made
    /// unverified edits.
    #[default]
    Auto,
    /// Always the tool loop.
    Loop,
    /// The pipeline first; the tool loop when it finds nothing to change or no
    /// candidate it can verify.
    Pipeline,
}

impl ModelProfile {
    /// Whether a task goes to the small-model pipeline first.
    pub fn uses_pipeline(&self) -> bool {
        match self.solver {
            Solver::Auto => self.lean_tools,
            Solver::Loop => false,
            Solver::Pipeline => true,
        }
    }
}

impl Default for ModelProfile {
    fn default() -> Self {
        Self {
            context_window: 32_768,
            max_output: 4_096,
            edit_format: EditFormat::StrReplace,
            prompt_variant: PromptVariant::Default,
            price: None,
            prompt_caching: false,
            supports_prediction: false,
            native_tools: true,
            parallel_tool_calls: true,
            max_completion_tokens: false,
            lean_tools: false,
            // One default: the enum's own, so the two cannot drift apart again.
            solver: Solver::default(),
        }
    }
}

/// User overrides of a profile, as written under `[models.NAME.profile]`.
/// Each key overrides its namesake of the model's built-in profile.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfileOverrides {
    /// Context window in tokens.
    pub context_window: Option<u32>,
    /// Output limit in tokens (sent when the request sets none).
    pub max_output: Option<u32>,
    /// The edit tool the model is given.
    pub edit_format: Option<EditFormat>,
    /// The system prompt's flavour.
    pub prompt_variant: Option<PromptVariant>,
    /// Prices in US dollars per million tokens; costs are reported only with them.
    pub price: Option<Price>,
    /// Whether the provider caches prompt prefixes (Anthropic gets `cache_control`).
    pub prompt_caching: Option<bool>,
    /// Whether `prediction` (predicted outputs) may be sent.
    pub supports_prediction: Option<bool>,
    /// Whether tools go through the API; if not, the prompt describes them and calls
    /// are read from the text.
    pub native_tools: Option<bool>,
    /// Whether the model may call several tools in one turn.
    pub parallel_tool_calls: Option<bool>,
    /// Chat completions: send `max_completion_tokens` instead of `max_tokens`.
    pub max_completion_tokens: Option<bool>,
    /// The lean profile: only the lean tools and a four-step workflow in the prompt
    /// (the embedded models').
    pub lean_tools: Option<bool>,
    /// How a task is solved: `auto`, `loop` or `pipeline` (docs/solve.md).
    pub solver: Option<Solver>,
}

impl ModelProfile {
    /// The built-in profile for a provider model id (`gpt-4.1-mini`,
    /// `anthropic/claude-sonnet-4-5`, `qwen2.5-coder:7b` …), or the neutral default.
    pub fn builtin(model_id: &str) -> Self {
        let id = model_id.to_ascii_lowercase();
        // OpenRouter-style ids carry the vendor first.
        let id = id.rsplit('/').next().unwrap_or(&id);
        BUILTINS
            .iter()
            .find(|(prefix, _)| id.starts_with(prefix))
            .map(|(_, make)| make())
            .unwrap_or_else(|| {
                if is_local_family(id) {
                    local()
                } else {
                    Self::default()
                }
            })
    }

    /// Cost of one call in US dollars, when prices are known.
    pub fn cost(&self, usage: &Usage) -> Option<f64> {
        self.price.as_ref().map(|p| usage.cost(p))
    }

    /// Applies user overrides.
    pub fn with_overrides(mut self, o: &ProfileOverrides) -> Self {
        macro_rules! set {
            ($($f:ident),*) => { $( if let Some(v) = o.$f.clone() { self.$f = v; } )* };
        }
        set!(
            context_window,
            max_output,
            edit_format,
            prompt_variant,
            prompt_caching,
            supports_prediction,
            native_tools,
            parallel_tool_calls,
            max_completion_tokens,
            lean_tools,
            solver
        );
        if o.price.is_some() {
            self.price = o.price;
        }
        self
    }
}

type Make = fn() -> ModelProfile;

/// Longest prefixes first: the first match wins. Prices in USD per million tokens,
/// as published when this table was written; users override them in config.
const BUILTINS: &[(&str, Make)] = &[
    ("gpt-5-mini", || {
        gpt(
            400_000,
            128_000,
            0.25,
            0.025,
            2.0,
            EditFormat::ApplyPatch,
            true,
        )
    }),
    ("gpt-5-nano", || {
        gpt(
            400_000,
            128_000,
            0.05,
            0.005,
            0.4,
            EditFormat::ApplyPatch,
            true,
        )
    }),
    ("gpt-5", || {
        gpt(
            400_000,
            128_000,
            1.25,
            0.125,
            10.0,
            EditFormat::ApplyPatch,
            true,
        )
    }),
    ("gpt-4.1-mini", || {
        predicting(gpt(
            1_047_576,
            32_768,
            0.4,
            0.1,
            1.6,
            EditFormat::ApplyPatch,
            false,
        ))
    }),
    ("gpt-4.1-nano", || {
        predicting(gpt(
            1_047_576,
            32_768,
            0.1,
            0.025,
            0.4,
            EditFormat::StrReplace,
            false,
        ))
    }),
    ("gpt-4.1", || {
        predicting(gpt(
            1_047_576,
            32_768,
            2.0,
            0.5,
            8.0,
            EditFormat::ApplyPatch,
            false,
        ))
    }),
    ("gpt-4o-mini", || {
        predicting(gpt(
            128_000,
            16_384,
            0.15,
            0.075,
            0.6,
            EditFormat::StrReplace,
            false,
        ))
    }),
    ("gpt-4o", || {
        predicting(gpt(
            128_000,
            16_384,
            2.5,
            1.25,
            10.0,
            EditFormat::StrReplace,
            false,
        ))
    }),
    ("o4-mini", || {
        gpt(
            200_000,
            100_000,
            1.1,
            0.275,
            4.4,
            EditFormat::ApplyPatch,
            true,
        )
    }),
    ("o3", || {
        gpt(
            200_000,
            100_000,
            2.0,
            0.5,
            8.0,
            EditFormat::ApplyPatch,
            true,
        )
    }),
    ("codex-mini", || {
        gpt(
            200_000,
            100_000,
            1.5,
            0.375,
            6.0,
            EditFormat::ApplyPatch,
            true,
        )
    }),
    ("claude-opus-4", || claude(200_000, 32_000, 15.0, 75.0)),
    ("claude-sonnet-4", || claude(200_000, 64_000, 3.0, 15.0)),
    ("claude-3-7-sonnet", || claude(200_000, 64_000, 3.0, 15.0)),
    ("claude-haiku-4", || claude(200_000, 64_000, 1.0, 5.0)),
    ("claude-3-5-haiku", || claude(200_000, 8_192, 0.8, 4.0)),
];

fn gpt(
    ctx: u32,
    out: u32,
    input: f64,
    cached: f64,
    output: f64,
    edit: EditFormat,
    reasoning: bool,
) -> ModelProfile {
    ModelProfile {
        context_window: ctx,
        max_output: out,
        edit_format: edit,
        prompt_variant: PromptVariant::Gpt,
        price: Some(Price {
            input,
            cached_input: Some(cached),
            cache_write: None,
            output,
        }),
        // OpenAI caches prefixes automatically; nothing to mark in the request.
        prompt_caching: true,
        max_completion_tokens: reasoning,
        ..ModelProfile::default()
    }
}

fn predicting(p: ModelProfile) -> ModelProfile {
    ModelProfile {
        supports_prediction: true,
        ..p
    }
}

fn claude(ctx: u32, out: u32, input: f64, output: f64) -> ModelProfile {
    ModelProfile {
        context_window: ctx,
        max_output: out,
        edit_format: EditFormat::StrReplace,
        prompt_variant: PromptVariant::Claude,
        // Anthropic: cache reads cost 10%, 5-minute cache writes 125% of input.
        price: Some(Price {
            input,
            cached_input: Some(input * 0.1),
            cache_write: Some(input * 1.25),
            output,
        }),
        prompt_caching: true,
        ..ModelProfile::default()
    }
}

fn is_local_family(id: &str) -> bool {
    [
        "qwen",
        "llama",
        "deepseek",
        "codestral",
        "mistral",
        "devstral",
        "phi",
        "gemma",
        "starcoder",
        "granite",
    ]
    .iter()
    .any(|f| id.starts_with(f))
}

fn local() -> ModelProfile {
    ModelProfile {
        prompt_variant: PromptVariant::Compact,
        parallel_tool_calls: false,
        ..ModelProfile::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_pick_the_longest_family_and_strip_vendor() {
        assert_eq!(
            ModelProfile::builtin("gpt-4.1-mini").price.unwrap().input,
            0.4
        );
        assert_eq!(
            ModelProfile::builtin("gpt-4.1-2025-04-14")
                .price
                .unwrap()
                .input,
            2.0
        );
        let sonnet = ModelProfile::builtin("anthropic/claude-sonnet-4-5");
        assert_eq!(sonnet.prompt_variant, PromptVariant::Claude);
        assert_eq!(sonnet.edit_format, EditFormat::StrReplace);
        assert!(sonnet.prompt_caching);
        assert_eq!(
            ModelProfile::builtin("gpt-5-codex").edit_format,
            EditFormat::ApplyPatch
        );
        assert!(ModelProfile::builtin("o3").max_completion_tokens);
        assert!(ModelProfile::builtin("gpt-4o").supports_prediction);
        assert!(!ModelProfile::builtin("gpt-5").supports_prediction);
    }

    #[test]
    fn cost_is_known_only_with_prices() {
        let usage = Usage {
            input: 1_000_000,
            cached_input: 0,
            cache_write: 0,
            output: 1_000_000,
        };
        assert_eq!(
            ModelProfile::builtin("claude-sonnet-4").cost(&usage),
            Some(18.0)
        );
        assert_eq!(ModelProfile::builtin("qwen3-coder").cost(&usage), None);
    }

    #[test]
    fn local_and_unknown_models_get_safe_defaults() {
        let q = ModelProfile::builtin("qwen2.5-coder:7b");
        assert_eq!(q.prompt_variant, PromptVariant::Compact);
        assert_eq!(q.edit_format, EditFormat::StrReplace);
        assert!(q.price.is_none());
        assert_eq!(
            ModelProfile::builtin("my-finetune"),
            ModelProfile::default()
        );
    }

    #[test]
    fn auto_is_the_default_and_sends_no_http_model_to_the_pipeline() {
        // The embedded profile's side is in `local`'s tests.
        assert_eq!(ModelProfile::default().solver, Solver::Auto);
        for http in [
            "qwen2.5-coder:7b",
            "gpt-4.1-mini",
            "claude-sonnet-4",
            "my-finetune",
        ] {
            assert!(!ModelProfile::builtin(http).uses_pipeline(), "{http}");
        }
    }

    #[test]
    fn overrides_replace_only_what_they_name() {
        let o = ProfileOverrides {
            context_window: Some(8192),
            edit_format: Some(EditFormat::ApplyPatch),
            ..ProfileOverrides::default()
        };
        let p = ModelProfile::builtin("qwen2.5-coder").with_overrides(&o);
        assert_eq!(p.context_window, 8192);
        assert_eq!(p.edit_format, EditFormat::ApplyPatch);
        assert_eq!(p.prompt_variant, PromptVariant::Compact);
    }
}
