//! API keys never reach a log line or an error message.
//!
//! A test binary of its own: tracing caches callsite interest process-wide, and
//! tests running on other threads without a subscriber could hide events from this
//! test's thread-local one.

use std::io::Write;
use std::sync::{Arc, Mutex};

use std::time::Duration;

use agentls_model::{
    ChatRequest, ClientOptions, ErrorClass, ModelsConfig, Provider, RetryPolicy, collect,
};
use agentls_testkit::model_server::{Fault, ModelServer};
use tokio_util::sync::CancellationToken;

async fn run(p: &dyn Provider) -> Result<agentls_model::Response, agentls_model::ModelError> {
    collect(p.stream(
        &ChatRequest::new(Some("system".into()), "hi"),
        CancellationToken::new(),
    ))
    .await
}

const KEY: &str = "sk-redaction-test-0123456789abcdefXYZ";

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Capture {
    type Writer = Capture;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

// current_thread: every task of the test, the client's included, logs on this thread.
#[tokio::test(flavor = "current_thread")]
async fn keys_never_appear_in_logs_or_errors() {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(capture.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    for wire in ["openai_chat", "openai_responses", "anthropic"] {
        let server = ModelServer::start().await.unwrap();
        server.load_script("hello").unwrap();
        let toml = format!(
            "[models.m]\nwire = \"{wire}\"\nbase_url = \"{}\"\nmodel = \"gpt-4.1\"\napi_key_env = \"AGENTLS_FAKE_KEY\"\n",
            server.url()
        );
        let config = ModelsConfig::from_toml(&toml).unwrap();
        let options = ClientOptions {
            retry: RetryPolicy::fast(2),
            first_byte_timeout: Duration::from_secs(5),
            ..ClientOptions::default()
        };
        let env = |var: &str| (var == "AGENTLS_FAKE_KEY").then(|| KEY.to_owned());
        let p = config.provider("m", options, env).unwrap();

        // A retried 429, then a success: the key is sent…
        server.inject(Fault::RateLimit {
            retry_after_secs: 0.01,
        });
        run(p.as_ref()).await.unwrap();
        let sent = server.requests()[1]
            .header("authorization")
            .or(server.requests()[1].header("x-api-key"))
            .map(str::to_owned);
        assert!(sent.unwrap().contains(KEY), "{wire}: the key must be sent");

        // …and a provider that echoes it back gets redacted.
        server.inject(Fault::EchoKey);
        let err = run(p.as_ref()).await.unwrap_err();
        assert_eq!(
            (err.class, err.status),
            (ErrorClass::ProviderError, Some(401))
        );
        assert!(
            err.message
                .contains("Incorrect API key provided: [redacted]"),
            "{}",
            err.message
        );
        assert!(!err.message.contains("0123456789"), "{}", err.message);
        assert!(!format!("{err:?} {:?}", config.models["m"]).contains("0123456789"));
    }

    let logs = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    // The capture works: the retry and the failure were logged, with provider text.
    assert!(logs.contains("retrying"), "{logs}");
    assert!(
        logs.contains("Incorrect API key provided: [redacted]"),
        "{logs}"
    );
    assert!(!logs.contains(KEY), "key in logs:\n{logs}");
    assert!(
        !logs.contains("0123456789abcdef"),
        "partial key in logs:\n{logs}"
    );
}
