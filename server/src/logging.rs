//! Tracing setup. Stdout carries LSP, so logs go to stderr or a file, never stdout.
//!
//! Editors show a server's stderr as errors (Neovim and Helix file every line under
//! `[ERROR]`), so while serving, INFO and DEBUG lines go to the client as
//! `window/logMessage` with their own message type, and stderr keeps WARN and ERROR,
//! in plain text unless stderr is a terminal. With `--log-file` everything goes to the
//! file, as before.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::Context;
use tower_lsp::Client;
use tower_lsp::lsp_types::MessageType;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::{Context as LayerContext, Layer, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

/// The environment variable holding the tracing filter.
pub const LOG_ENV: &str = "AGENTLS_LOG";

/// Lines kept before the client is there to take them (the oldest go first).
const EARLY_LINES: usize = 256;
/// Lines queued for the client at most; past that they are dropped, never blocking the
/// code that logs.
const QUEUED_LINES: usize = 1024;

/// Where log lines for the client go: a queue until [`attach`], then a channel.
#[derive(Default)]
struct ClientLog {
    early: VecDeque<(MessageType, String)>,
    tx: Option<tokio::sync::mpsc::Sender<(MessageType, String)>>,
}

static CLIENT_LOG: OnceLock<Arc<Mutex<ClientLog>>> = OnceLock::new();

/// Installs the global subscriber: to `log_file` when given, else WARN and ERROR to
/// stderr and the rest to the client once [`attach`] has given one.
pub fn init(log_file: Option<&Path>) -> anyhow::Result<()> {
    let filter = EnvFilter::try_from_env(LOG_ENV).unwrap_or_else(|_| EnvFilter::new("info"));
    let result = match log_file {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("cannot open log file {}", path.display()))?;
            tracing_subscriber::fmt()
                .with_env_filter(filter)
                .with_target(true)
                .with_ansi(false)
                .with_writer(Mutex::new(file))
                .try_init()
                .map_err(|e| e.to_string())
        }
        None => {
            let shared = CLIENT_LOG
                .get_or_init(|| Arc::new(Mutex::new(ClientLog::default())))
                .clone();
            let stderr = tracing_subscriber::fmt::layer()
                .with_target(true)
                .with_ansi(std::io::stderr().is_terminal())
                .with_writer(std::io::stderr)
                .with_filter(filter_fn(|meta| *meta.level() <= Level::WARN));
            tracing_subscriber::registry()
                .with(filter)
                .with(stderr)
                .with(ClientLayer { shared })
                .try_init()
                .map_err(|e| e.to_string())
        }
    };
    result.map_err(|e| anyhow::anyhow!("cannot install the log subscriber: {e}"))
}

/// From now on, log lines go to `client` as `window/logMessage` (the ones logged
/// before it came first).
pub fn attach(client: Client) {
    let Some(shared) = CLIENT_LOG.get() else {
        return;
    };
    let (tx, mut rx) = tokio::sync::mpsc::channel::<(MessageType, String)>(QUEUED_LINES);
    {
        let mut log = shared.lock().unwrap_or_else(|p| p.into_inner());
        for line in log.early.drain(..) {
            let _ = tx.try_send(line);
        }
        log.tx = Some(tx);
    }
    tokio::spawn(async move {
        while let Some((kind, text)) = rx.recv().await {
            client.log_message(kind, text).await;
        }
    });
}

/// Sends INFO and DEBUG events to the client's log.
struct ClientLayer {
    shared: Arc<Mutex<ClientLog>>,
}

impl<S: Subscriber> Layer<S> for ClientLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: LayerContext<'_, S>) {
        let meta = event.metadata();
        // WARN and ERROR are on stderr. tower-lsp's own events are left out: it logs
        // while sending, and forwarding those would feed on itself.
        if *meta.level() <= Level::WARN || meta.target().starts_with("tower_lsp") {
            return;
        }
        let kind = if *meta.level() == Level::INFO {
            MessageType::INFO
        } else {
            MessageType::LOG
        };
        let mut line = Line::default();
        event.record(&mut line);
        let text = format!("{} {}{}", meta.target(), line.message, line.fields);
        let mut log = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        match &log.tx {
            // Full: dropped rather than blocking the caller.
            Some(tx) => {
                let _ = tx.try_send((kind, text));
            }
            None => {
                if log.early.len() == EARLY_LINES {
                    log.early.pop_front();
                }
                log.early.push_back((kind, text));
            }
        }
    }
}

/// An event's message and its other fields, `key=value`.
#[derive(Default)]
struct Line {
    message: String,
    fields: String,
}

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.fields, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            let _ = write!(self.fields, " {}={value:?}", field.name());
        }
    }
}
