//! The `wire = "local"` hook with an engine registered: `ModelsConfig::provider` hands
//! the configured spec to the factory and returns its provider. A test of the hook,
//! not of inference: the factory here answers with what it was given. (In a binary of
//! its own: the registration is process-wide and the unregistered path is tested in
//! the library's unit tests.)
#![allow(missing_docs)]

use std::sync::Arc;

use agentls_model::local::{self, LocalModelSpec, LocalSource};
use agentls_model::{
    CancellationToken, ChatRequest, ClientOptions, ErrorClass, EventStream, ModelError,
    ModelProfile, ModelsConfig, Provider, StopReason, StreamEvent, Usage, collect,
};

/// Answers every request with a description of the spec it was built from.
#[derive(Debug)]
struct Echo {
    spec: LocalModelSpec,
    profile: ModelProfile,
}

impl Provider for Echo {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn profile(&self) -> &ModelProfile {
        &self.profile
    }

    fn stream(&self, _req: &ChatRequest, _cancel: CancellationToken) -> EventStream {
        let text = format!(
            "{:?} threads={:?} context={:?}",
            self.spec.source, self.spec.threads, self.spec.context
        );
        Box::pin(futures::stream::iter([
            Ok(StreamEvent::TextDelta(text)),
            Ok(StreamEvent::Usage(Usage::default())),
            Ok(StreamEvent::Stop(StopReason::EndTurn)),
        ]))
    }
}

fn factory(spec: &LocalModelSpec) -> Result<Arc<dyn Provider>, ModelError> {
    if spec.source == LocalSource::Catalog("missing".into()) {
        return Err(ModelError::new(
            ErrorClass::UnexpectedEnvironment,
            "run `agentls model fetch missing`",
        ));
    }
    let profile = local::profile(spec.context.unwrap_or(local::DEFAULT_CONTEXT))
        .with_overrides(&spec.overrides);
    Ok(Arc::new(Echo {
        spec: spec.clone(),
        profile,
    }))
}

#[tokio::test]
async fn local_models_come_from_the_registered_engine() {
    assert!(local::register(factory));
    assert!(local::is_registered());
    // The first registration stays.
    assert!(!local::register(|_| Err(ModelError::provider("second"))));

    // A config with no models gets the embedded default, fetched on first use.
    let table = local::embedded_default_models().expect("an engine is registered");
    let default: ModelsConfig =
        serde_json::from_value(serde_json::json!({ "models": table })).unwrap();
    default.validate().unwrap();
    let spec = default.models[local::EMBEDDED_DEFAULT_NAME]
        .local_spec(local::EMBEDDED_DEFAULT_NAME)
        .unwrap();
    assert_eq!(
        spec.source,
        LocalSource::Catalog(local::EMBEDDED_DEFAULT.into())
    );
    assert!(spec.fetch, "the default is fetched on first use");

    let config = ModelsConfig::from_toml(
        r#"
summarizer = "small"

[models.small]
wire = "local"
path = "/models/small.gguf"
threads = 3
context = 2048
profile = { context_window = 1024 }

[models.gone]
wire = "local"
model = "missing"
"#,
    )
    .unwrap();
    let p = config
        .provider("small", ClientOptions::default(), |_| None)
        .unwrap();
    assert_eq!(p.name(), "small");
    assert_eq!(p.profile().context_window, 1024, "user overrides reach it");
    let answer = collect(p.stream(&ChatRequest::new(None, "hi"), CancellationToken::new()))
        .await
        .unwrap();
    assert_eq!(
        answer.text,
        "Path(\"/models/small.gguf\") threads=Some(3) context=Some(2048)"
    );

    // The summarizer goes through the same hook.
    let s = config
        .summarizer(ClientOptions::default(), |_| None)
        .unwrap()
        .unwrap();
    assert_eq!(s.name(), "small");

    // The engine's own errors come back as they are.
    let e = config
        .provider("gone", ClientOptions::default(), |_| None)
        .unwrap_err();
    assert_eq!(
        (e.class, e.message.as_str()),
        (
            ErrorClass::UnexpectedEnvironment,
            "run `agentls model fetch missing`"
        )
    );
}
