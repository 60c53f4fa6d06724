//! Tracing setup. Stdout carries LSP, so logs go to stderr or a file, never stdout.

use std::path::Path;

use anyhow::Context;
use tracing_subscriber::EnvFilter;

/// The environment variable holding the tracing filter.
pub const LOG_ENV: &str = "AGENTLS_LOG";

/// Installs the global subscriber: to `log_file` when given, else to stderr.
pub fn init(log_file: Option<&Path>) -> anyhow::Result<()> {
    let filter = EnvFilter::try_from_env(LOG_ENV).unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(true);
    let result = match log_file {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("cannot open log file {}", path.display()))?;
            builder
                .with_ansi(false)
                .with_writer(std::sync::Mutex::new(file))
                .try_init()
        }
        None => builder.with_writer(std::io::stderr).try_init(),
    };
    result.map_err(|e| anyhow::anyhow!("cannot install the log subscriber: {e}"))
}
