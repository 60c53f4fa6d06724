//! The embedding model semantic search uses, by name.

use std::sync::Arc;

use agentls_semantic::Embedder;

/// `none`, `static` or `full`; `None` for `none`.
pub fn load(name: &str) -> anyhow::Result<Option<Arc<dyn Embedder>>> {
    match name {
        "none" => Ok(None),
        other => anyhow::bail!("embedder `{other}`: not available in this build (none)"),
    }
}
