//! Small helpers shared by the tools.

use crate::ToolError;

/// Runs synchronous work (file walks, grep, planning) off the async threads.
pub(crate) async fn blocking<T, F>(f: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ToolError::bug(format!("tool task failed: {e}")))?
}

/// `s` cut to `max` chars, with a marker when cut.
pub(crate) fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}… [line cut at {max} chars]", &s[..i]),
        None => s.to_owned(),
    }
}
