//! `wire = "local"` models through the model layer's hook, on SmolLM2-135M-Instruct:
//! `ModelsConfig::provider` loads the configured file once, the provider answers, and
//! a headless run on a configured local model reaches it. Needs the weights (set
//! `AGENTLS_TEST_GGUF`, or `agentls model fetch smollm2-135m`); without them each test
//! prints SKIPPED and passes without checking, except under CI, where it fails.

#![allow(clippy::print_stderr)]
// Setup helpers outside #[test] functions should panic on failure, like the tests.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::PathBuf;

use agentls_agent::Status;
use agentls_host::{Adapters, Host, HostOptions, Op, Spec};
use agentls_local::configured::loaded_engines;
use agentls_local::{catalog_entry, default_data_dir, installed_path};
use agentls_model::{
    CancellationToken, ChatRequest, ClientOptions, ModelsConfig, PromptVariant, StopReason, collect,
};

fn smollm2(test: &str) -> Option<PathBuf> {
    let path = match std::env::var_os("AGENTLS_TEST_GGUF") {
        Some(p) => Some(PathBuf::from(p)),
        None => {
            let (p, present) = installed_path(catalog_entry("smollm2-135m")?, &default_data_dir()?);
            present.then_some(p)
        }
    };
    if path.is_none() {
        common::missing(
            test,
            "SmolLM2 weights (set AGENTLS_TEST_GGUF or fetch smollm2-135m)",
        );
    }
    path
}

/// Four local models on the same weights, as a config file's `[models]` tables.
fn models_toml(path: &std::path::Path) -> String {
    agentls_local::register();
    let path = path.display();
    format!(
        "[models.small]\nwire = \"local\"\npath = \"{path}\"\n\n\
         [models.same]\nwire = \"local\"\npath = \"{path}\"\nprofile = {{ max_output = 4 }}\n\n\
         [models.brief]\nwire = \"local\"\npath = \"{path}\"\nprofile = {{ max_output = 48 }}\n\n\
         [models.short]\nwire = \"local\"\npath = \"{path}\"\ncontext = 1024\nthreads = 1\n"
    )
}

fn config(path: &std::path::Path) -> ModelsConfig {
    ModelsConfig::from_toml(&models_toml(path)).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_configured_local_model_answers_and_shares_its_engine() {
    let Some(path) = smollm2("a_configured_local_model_answers_and_shares_its_engine") else {
        return;
    };
    let models = config(&path);
    let small = models
        .provider("small", ClientOptions::default(), |_| None)
        .unwrap();
    assert_eq!(small.name(), "small");
    let profile = small.profile();
    assert_eq!(profile.prompt_variant, PromptVariant::Compact);
    assert_eq!(profile.edit_format, agentls_model::EditFormat::StrReplace);
    assert_eq!(profile.context_window, 8_192, "SmolLM2 runs its whole 8k");

    let mut req = ChatRequest::new(None, "What is the capital of France?");
    req.max_tokens = Some(8);
    let answer = collect(small.stream(&req, CancellationToken::new()))
        .await
        .unwrap();
    assert!(answer.usage.input > 0 && answer.usage.output > 0);
    assert!(matches!(
        answer.stop,
        StopReason::EndTurn | StopReason::MaxTokens
    ));

    // Same file, threads and context: the loaded engine is shared, and the other
    // name's profile override reaches generation.
    let engines = loaded_engines();
    let same = models
        .provider("same", ClientOptions::default(), |_| None)
        .unwrap();
    assert_eq!(loaded_engines(), engines);
    assert_eq!(same.name(), "same");
    let answer = collect(same.stream(
        &ChatRequest::new(None, "Count from one to twenty in words."),
        CancellationToken::new(),
    ))
    .await
    .unwrap();
    assert_eq!(
        (answer.usage.output, answer.stop),
        (4, StopReason::MaxTokens)
    );

    // Another context is another engine, and the profile says so.
    let short = models
        .provider("short", ClientOptions::default(), |_| None)
        .unwrap();
    assert_eq!(loaded_engines(), engines + 1);
    assert_eq!(short.profile().context_window, 1_024);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_headless_run_reaches_the_configured_local_model() {
    let Some(path) = smollm2("a_headless_run_reaches_the_configured_local_model") else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("notes.txt"), "The answer is 42.\n").unwrap();
    // Through the session host, as `agentls run` drives it, on the configured models.
    let config = agentls_host::config::Config {
        models: ModelsConfig::from_toml(&models_toml(&path)).unwrap().models,
        ..Default::default()
    };
    let host = Host::new(config, HostOptions::unrecorded("run"));
    let spec = Spec {
        workspace: ws.path().to_path_buf(),
        // A short answer per step: SmolLM2 may ramble to its limit.
        model: Some("brief".into()),
        max_steps: Some(2),
        trajectory_dir: Some(ws.path().join(".trajectory")),
        ..Spec::default()
    };
    let mut session = host.open(spec, Adapters::default()).await.unwrap();
    let op = Op::Prompt {
        text: "What does notes.txt say?".into(),
        user_text: None,
    };
    let mut started_on = None;
    let outcome = session
        .submit(op, |ev: &agentls_agent::Event| {
            if let Some(line) = agentls_agent::render_event(ev) {
                eprintln!("{line}");
            }
            if let agentls_agent::Event::Status { model, .. } = ev {
                started_on = Some(model.clone());
            }
        })
        .await
        .unwrap()
        .expect("the turn ends with an outcome")
        .outcome;
    assert_eq!(started_on.as_deref(), Some("brief"));
    assert!(
        !matches!(outcome.status, Status::ProviderError { .. }),
        "{:?}",
        outcome.status
    );
    let m = &outcome.metrics;
    assert!(
        m.steps >= 1 && m.input_tokens > 0 && m.output_tokens > 0,
        "{m:?}"
    );
}
