//! Static embeddings distilled from the full model (the model2vec idea): one vector
//! per vocabulary token, so embedding a text is tokenizing it and averaging rows.

use std::io::Write;
use std::path::{Path, PathBuf};

use tokenizers::Tokenizer;

use crate::ModelError;
use crate::bert::{Bert, load_tokenizer, normalize, untruncated};
use crate::fetch::{ModelFiles, SAFETENSORS_SHA256};

/// File name of the static model beside the model directory (`<models>/…`).
pub const STATIC_FILE: &str = "all-minilm-l6-v2.static";

/// First bytes of a saved static model.
pub const MAGIC: [u8; 8] = *b"AGLSSTAT";
/// Version of the file format [`StaticModel::save`] writes.
pub const FORMAT_VERSION: u32 = 1;
/// magic, version, vocab, dims, sha256 of the source weights.
const HEADER_LEN: usize = 8 + 4 + 4 + 4 + 32;

/// Vocabulary tokens run through the model together while distilling.
const DISTILL_BATCH: usize = 512;

/// Ids of `[PAD]`, `[UNK]`, `[CLS]`, `[SEP]`, `[MASK]` in this vocabulary: left out of
/// the default weights.
const SPECIAL_IDS: [u32; 5] = [0, 100, 101, 102, 103];

/// A `vocab × dims` matrix of token vectors and the tokenizer that indexes it.
///
/// `embed(text)` = the L2-normalized weighted mean of the rows of `text`'s tokens.
pub struct StaticModel {
    /// Never truncates, adds no special tokens when embedding.
    tokenizer: Tokenizer,
    /// Row-major, `vocab * dims` floats.
    vectors: Vec<f32>,
    vocab: usize,
    dims: usize,
    /// Lower-case hex sha256 of the weights distilled from.
    source_sha256: String,
    /// `ln(1 + id)`, 0.0 for the special tokens: see [`default_weights`].
    default_weights: Vec<f32>,
}

impl std::fmt::Debug for StaticModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticModel")
            .field("vocab", &self.vocab)
            .field("dims", &self.dims)
            .field("source_sha256", &self.source_sha256)
            .finish_non_exhaustive()
    }
}

impl StaticModel {
    /// Runs every vocabulary token alone through `bert` (`[CLS] token [SEP]`, in
    /// batches) and keeps its mean-pooled output, unnormalized, as the token's row;
    /// then subtracts the mean row from every row (the component all tokens share
    /// says nothing about a text: centering raised the agreement with the full
    /// model's neighbours, see the crate doc). `progress(done, total)` is called after
    /// each batch.
    pub fn distill(
        bert: &Bert,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<StaticModel, ModelError> {
        let vocab = bert.tokenizer().get_vocab_size(true);
        let dims = bert.dims();
        let (cls, sep) = (SPECIAL_IDS[2], SPECIAL_IDS[3]);
        let mut vectors = Vec::with_capacity(vocab * dims);
        let ids: Vec<u32> = (0..vocab as u32).collect();
        for chunk in ids.chunks(DISTILL_BATCH) {
            let seqs: Vec<[u32; 3]> = chunk.iter().map(|&id| [cls, id, sep]).collect();
            let batch: Vec<&[u32]> = seqs.iter().map(|s| s.as_slice()).collect();
            for row in bert.mean_pooled(&batch)? {
                vectors.extend_from_slice(&row);
            }
            progress(vectors.len() / dims, vocab);
        }
        center(&mut vectors, dims);
        Ok(StaticModel {
            tokenizer: untruncated(bert.tokenizer().clone())?,
            vectors,
            vocab,
            dims,
            source_sha256: bert.source_sha256().to_owned(),
            default_weights: default_weights(vocab),
        })
    }

    /// Number of token vectors.
    pub fn vocab_size(&self) -> usize {
        self.vocab
    }

    /// Length of a vector.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// sha256 of the weights this was distilled from.
    pub fn source_sha256(&self) -> &str {
        &self.source_sha256
    }

    /// The vector of token `id`, if in the vocabulary.
    pub fn vector(&self, id: u32) -> Option<&[f32]> {
        let start = (id as usize).checked_mul(self.dims)?;
        self.vectors.get(start..start + self.dims)
    }

    /// The token ids `embed` averages over (no special tokens, no truncation): what a
    /// caller counts to build IDF weights.
    pub fn token_ids(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        let enc = self
            .tokenizer
            .encode_fast(text, false)
            .map_err(|e| ModelError::Tokenizer {
                context: "cannot tokenize".into(),
                detail: e.to_string(),
            })?;
        Ok(enc.get_ids().to_vec())
    }

    /// Embeds `text` with the default weights ([`StaticModel::default_weights`]).
    /// A text with no tokens gives the zero vector.
    pub fn embed(&self, text: &str) -> Result<Vec<f32>, ModelError> {
        self.embed_weighted(text, &self.default_weights)
    }

    /// The weights [`StaticModel::embed`] uses: `ln(1 + id)` by token id, 0.0 for
    /// `[PAD]`, `[UNK]`, `[CLS]`, `[SEP]`, `[MASK]`. The WordPiece vocabulary lists
    /// whole words roughly by falling frequency, so this is a Zipf-style weight
    /// (rarer tokens weigh more); it agreed better with the full model than uniform
    /// weights (see the crate doc).
    pub fn default_weights(&self) -> &[f32] {
        &self.default_weights
    }

    /// Embeds `text` as the L2-normalized mean of its tokens' vectors, each weighted
    /// by `weights[id]` (e.g. IDF over the workspace); ids past `weights.len()` weigh
    /// 1.0. A text whose weights are all zero gives the zero vector.
    pub fn embed_weighted(&self, text: &str, weights: &[f32]) -> Result<Vec<f32>, ModelError> {
        let ids = self.token_ids(text)?;
        Ok(self.embed_ids(&ids, weights))
    }

    /// [`StaticModel::embed_weighted`] over ids already tokenized.
    pub fn embed_ids(&self, ids: &[u32], weights: &[f32]) -> Vec<f32> {
        let mut out = vec![0.0f32; self.dims];
        for &id in ids {
            let w = weights.get(id as usize).copied().unwrap_or(1.0);
            if w == 0.0 {
                continue;
            }
            if let Some(row) = self.vector(id) {
                out.iter_mut().zip(row).for_each(|(o, x)| *o += w * x);
            }
        }
        normalize(&mut out);
        out
    }

    /// Writes the model: [`MAGIC`], [`FORMAT_VERSION`], vocab and dims (u32 LE), the
    /// source sha256 (32 bytes), then `vocab * dims` f32 LE. Written beside `path`
    /// and renamed into place.
    pub fn save(&self, path: &Path) -> Result<(), ModelError> {
        let io = |context: String| move |source| ModelError::Io { context, source };
        let digest = unhex(&self.source_sha256).ok_or_else(|| ModelError::Format {
            path: path.to_owned(),
            detail: format!(
                "source sha256 {:?} is not 64 hex digits",
                self.source_sha256
            ),
        })?;
        let mut bytes = Vec::with_capacity(HEADER_LEN + self.vectors.len() * 4);
        bytes.extend_from_slice(&MAGIC);
        bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        bytes.extend_from_slice(&(self.vocab as u32).to_le_bytes());
        bytes.extend_from_slice(&(self.dims as u32).to_le_bytes());
        bytes.extend_from_slice(&digest);
        for x in &self.vectors {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
        let mut partial = path.as_os_str().to_owned();
        partial.push(format!(".partial.{}", std::process::id()));
        let partial = PathBuf::from(partial);
        let mut f = std::fs::File::create(&partial)
            .map_err(io(format!("cannot create {}", partial.display())))?;
        f.write_all(&bytes)
            .and_then(|()| f.sync_all())
            .map_err(io(format!("cannot write {}", partial.display())))?;
        std::fs::rename(&partial, path).map_err(io(format!("cannot rename to {}", path.display())))
    }

    /// Reads a model [`StaticModel::save`] wrote, with the tokenizer of `files`.
    /// Refuses a file distilled from other weights than `files` holds
    /// ([`ModelError::Stale`]) or of another format version.
    pub fn load(path: &Path, files: &ModelFiles) -> Result<StaticModel, ModelError> {
        let tokenizer = load_tokenizer(files)?;
        Self::load_with(path, tokenizer, SAFETENSORS_SHA256)
    }

    /// [`StaticModel::load`] when `path` holds a model distilled from `files`' weights;
    /// otherwise (missing, stale, unreadable) loads [`Bert`] from `files`, distills,
    /// saves to `path` and returns the new model. `progress` sees the distillation
    /// only.
    pub fn load_or_distill(
        path: &Path,
        files: &ModelFiles,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<StaticModel, ModelError> {
        match Self::load(path, files) {
            Ok(model) => return Ok(model),
            Err(e) => tracing::info!(path = %path.display(), "distilling the static model: {e}"),
        }
        let model = Self::distill(&Bert::load(files)?, progress)?;
        model.save(path)?;
        Ok(model)
    }

    fn load_with(
        path: &Path,
        tokenizer: Tokenizer,
        expected_sha256: &str,
    ) -> Result<StaticModel, ModelError> {
        let bytes = std::fs::read(path).map_err(|source| ModelError::Io {
            context: format!("cannot read {}", path.display()),
            source,
        })?;
        let bad = |detail: String| ModelError::Format {
            path: path.to_owned(),
            detail,
        };
        if bytes.len() < HEADER_LEN || bytes[..8] != MAGIC {
            return Err(bad("not a static embedding model (bad magic)".into()));
        }
        let u32_at = |at: usize| {
            let mut b = [0u8; 4];
            b.copy_from_slice(&bytes[at..at + 4]);
            u32::from_le_bytes(b)
        };
        let version = u32_at(8);
        if version != FORMAT_VERSION {
            return Err(bad(format!(
                "format version {version}, expected {FORMAT_VERSION}"
            )));
        }
        let (vocab, dims) = (u32_at(12) as usize, u32_at(16) as usize);
        let found = agentls_wheel::hex(&bytes[20..HEADER_LEN]);
        if found != expected_sha256 {
            return Err(ModelError::Stale {
                path: path.to_owned(),
                expected: expected_sha256.to_owned(),
                found,
            });
        }
        let want = vocab
            .checked_mul(dims)
            .and_then(|n| n.checked_mul(4))
            .and_then(|n| n.checked_add(HEADER_LEN));
        if want != Some(bytes.len()) {
            return Err(bad(format!(
                "{} bytes, expected {HEADER_LEN} + {vocab} * {dims} * 4",
                bytes.len()
            )));
        }
        let tokenizer_vocab = tokenizer.get_vocab_size(true);
        if tokenizer_vocab != vocab {
            return Err(bad(format!(
                "{vocab} vectors for a tokenizer of {tokenizer_vocab} tokens"
            )));
        }
        let vectors = bytes[HEADER_LEN..]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Ok(StaticModel {
            tokenizer,
            vectors,
            vocab,
            dims,
            source_sha256: found,
            default_weights: default_weights(vocab),
        })
    }
}

fn default_weights(vocab: usize) -> Vec<f32> {
    let mut w: Vec<f32> = (0..vocab).map(|id| (id as f32).ln_1p()).collect();
    for id in SPECIAL_IDS {
        if let Some(x) = w.get_mut(id as usize) {
            *x = 0.0;
        }
    }
    w
}

/// Subtracts the mean row from every row of the row-major `vectors`.
fn center(vectors: &mut [f32], dims: usize) {
    let rows = vectors.len() / dims.max(1);
    if rows == 0 {
        return;
    }
    let mut mean = vec![0.0f64; dims];
    for row in vectors.chunks_exact(dims) {
        mean.iter_mut()
            .zip(row)
            .for_each(|(m, &x)| *m += f64::from(x));
    }
    let mean: Vec<f32> = mean.iter().map(|m| (m / rows as f64) as f32).collect();
    for row in vectors.chunks_exact_mut(dims) {
        row.iter_mut().zip(&mean).for_each(|(x, m)| *x -= m);
    }
}

fn unhex(s: &str) -> Option<[u8; 32]> {
    if s.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn center_leaves_a_zero_mean() {
        let mut v = vec![1.0, 10.0, 3.0, 20.0];
        center(&mut v, 2);
        assert_eq!(v, [-1.0, -5.0, 1.0, 5.0]);
    }

    #[test]
    fn default_weights_skip_special_tokens_and_grow_with_id() {
        let w = default_weights(2000);
        assert_eq!((w[0], w[101], w[102]), (0.0, 0.0, 0.0));
        assert!(w[1999] > w[1000] && w[1000] > w[200]);
    }

    #[test]
    fn unhex_round_trips_hex() {
        let d = unhex(SAFETENSORS_SHA256).unwrap();
        assert_eq!(agentls_wheel::hex(&d), SAFETENSORS_SHA256);
        assert_eq!(unhex("zz"), None);
    }
}
