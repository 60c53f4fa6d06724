//! The full model: all-MiniLM-L6-v2's encoder on the CPU, pooled as
//! sentence-transformers pools it.

use tokenizers::{Tokenizer, TruncationParams};

use crate::ModelError;
use crate::encoder::Encoder;
use crate::fetch::{ModelFiles, SAFETENSORS_SHA256};

/// Tokens per text the model sees by default, special tokens included (the
/// `max_seq_length` sentence-transformers uses for this model).
pub const DEFAULT_MAX_TOKENS: usize = 256;

/// Texts run through the model together.
const BATCH: usize = 32;

/// all-MiniLM-L6-v2 loaded for inference: a sentence in, a unit vector of
/// [`Bert::dims`] floats out.
pub struct Bert {
    encoder: Encoder,
    /// Truncates at `max_tokens`, adds `[CLS]`/`[SEP]`, never pads.
    tokenizer: Tokenizer,
    max_tokens: usize,
}

impl std::fmt::Debug for Bert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bert")
            .field("dims", &self.dims())
            .field("max_tokens", &self.max_tokens)
            .finish_non_exhaustive()
    }
}

pub(crate) fn load_tokenizer(files: &ModelFiles) -> Result<Tokenizer, ModelError> {
    let path = files.tokenizer();
    let tokenizer = Tokenizer::from_file(&path).map_err(|e| ModelError::Tokenizer {
        context: format!("cannot load {}", path.display()),
        detail: e.to_string(),
    })?;
    // tokenizer.json pads every text to 128 and truncates there; the encoder takes
    // sequences unpadded.
    untruncated(tokenizer)
}

/// `tokenizer` without padding or truncation.
pub(crate) fn untruncated(mut tokenizer: Tokenizer) -> Result<Tokenizer, ModelError> {
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(None)
        .map_err(|e| ModelError::Tokenizer {
            context: "cannot turn truncation off".into(),
            detail: e.to_string(),
        })?;
    Ok(tokenizer)
}

impl Bert {
    /// Loads the fetched model (weights read into memory, about 90 MB).
    pub fn load(files: &ModelFiles) -> Result<Bert, ModelError> {
        let mut bert = Bert {
            encoder: Encoder::load(&files.config(), &files.safetensors())?,
            tokenizer: load_tokenizer(files)?,
            max_tokens: 0,
        };
        bert.set_max_tokens(DEFAULT_MAX_TOKENS)?;
        Ok(bert)
    }

    /// Truncates each text at `max_tokens` tokens, `[CLS]` and `[SEP]` included (at
    /// least 2; at most the model's 512 positions).
    pub fn set_max_tokens(&mut self, max_tokens: usize) -> Result<(), ModelError> {
        let max_tokens = max_tokens.clamp(2, self.encoder.positions());
        self.tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                ..TruncationParams::default()
            }))
            .map_err(|e| ModelError::Tokenizer {
                context: "cannot set truncation".into(),
                detail: e.to_string(),
            })?;
        self.max_tokens = max_tokens;
        Ok(())
    }

    /// Tokens per text, special tokens included.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// Length of an embedding (384).
    pub fn dims(&self) -> usize {
        self.encoder.hidden()
    }

    /// sha256 of the weights this model was loaded from.
    pub fn source_sha256(&self) -> &'static str {
        SAFETENSORS_SHA256
    }

    /// The tokenizer (truncating at [`Bert::max_tokens`]).
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// Embeds `texts`: each one tokenized (truncated), run through the model in
    /// batches, mean-pooled over its tokens and L2-normalized, as
    /// sentence-transformers does. One vector per text, in order.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, ModelError> {
        let mut ids = Vec::with_capacity(texts.len());
        for text in texts {
            let enc =
                self.tokenizer
                    .encode_fast(*text, true)
                    .map_err(|e| ModelError::Tokenizer {
                        context: "cannot tokenize".into(),
                        detail: e.to_string(),
                    })?;
            ids.push(enc.get_ids().to_vec());
        }
        // Sequences are not padded, so order costs nothing: batches keep the texts'.
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(BATCH) {
            let batch: Vec<&[u32]> = chunk.iter().map(Vec::as_slice).collect();
            for mut v in self.mean_pooled(&batch)? {
                normalize(&mut v);
                out.push(v);
            }
        }
        Ok(out)
    }

    /// Runs token sequences through the model and mean-pools each over its own
    /// tokens; not normalized. The batch is split across the machine's cores.
    pub(crate) fn mean_pooled(&self, batch: &[&[u32]]) -> Result<Vec<Vec<f32>>, ModelError> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let per_thread = batch.len().div_ceil(threads).max(1);
        let parts: Vec<Result<Vec<Vec<f32>>, ModelError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = batch
                .chunks(per_thread)
                .map(|part| scope.spawn(move || self.pooled_part(part)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                })
                .collect()
        });
        let mut out = Vec::with_capacity(batch.len());
        for part in parts {
            out.extend(part?);
        }
        Ok(out)
    }

    /// [`Bert::mean_pooled`] on this thread.
    fn pooled_part(&self, seqs: &[&[u32]]) -> Result<Vec<Vec<f32>>, ModelError> {
        let dims = self.dims();
        let states = self.encoder.forward(seqs)?;
        let mut rows = states.chunks_exact(dims);
        let mut out = Vec::with_capacity(seqs.len());
        for seq in seqs {
            let mut sum = vec![0.0f32; dims];
            for row in rows.by_ref().take(seq.len()) {
                sum.iter_mut().zip(row).for_each(|(s, v)| *s += v);
            }
            let count = seq.len().max(1) as f32;
            sum.iter_mut().for_each(|s| *s /= count);
            out.push(sum);
        }
        Ok(out)
    }
}

/// Scales `v` to unit length (a zero vector stays zero).
pub(crate) fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}
