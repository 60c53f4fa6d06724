//! The full model: all-MiniLM-L6-v2 run by candle on the CPU, pooled as
//! sentence-transformers pools it.

use std::collections::HashMap;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{Tokenizer, TruncationParams};

use crate::ModelError;
use crate::fetch::{ModelFiles, SAFETENSORS_SHA256};

/// Tokens per text the model sees by default, special tokens included (the
/// `max_seq_length` sentence-transformers uses for this model).
pub const DEFAULT_MAX_TOKENS: usize = 256;

/// Texts run through the model together.
const BATCH: usize = 32;

/// all-MiniLM-L6-v2 loaded for inference: a sentence in, a unit vector of
/// [`Bert::dims`] floats out.
pub struct Bert {
    model: BertModel,
    /// Truncates at `max_tokens`, adds `[CLS]`/`[SEP]`, never pads.
    tokenizer: Tokenizer,
    device: Device,
    dims: usize,
    max_tokens: usize,
}

impl std::fmt::Debug for Bert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bert")
            .field("dims", &self.dims)
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
    // tokenizer.json pads every text to 128 and truncates there; we pad per batch.
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
        let device = Device::Cpu;
        let config_path = files.config();
        let config_text =
            std::fs::read_to_string(&config_path).map_err(|source| ModelError::Io {
                context: format!("cannot read {}", config_path.display()),
                source,
            })?;
        let config: Config =
            serde_json::from_str(&config_text).map_err(|e| ModelError::Format {
                path: config_path,
                detail: e.to_string(),
            })?;
        let tensors: HashMap<String, Tensor> =
            candle_core::safetensors::load(files.safetensors(), &device)?;
        let vb = VarBuilder::from_tensors(tensors, DType::F32, &device);
        let model = BertModel::load(vb, &config)?;
        let mut bert = Bert {
            model,
            tokenizer: load_tokenizer(files)?,
            device,
            dims: config.hidden_size,
            max_tokens: 0,
        };
        bert.set_max_tokens(DEFAULT_MAX_TOKENS)?;
        Ok(bert)
    }

    /// Truncates each text at `max_tokens` tokens, `[CLS]` and `[SEP]` included (at
    /// least 2; at most the model's 512 positions).
    pub fn set_max_tokens(&mut self, max_tokens: usize) -> Result<(), ModelError> {
        let max_tokens = max_tokens.clamp(2, 512);
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
        self.dims
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
    /// batches of similar length, mean-pooled over its tokens (padding masked out)
    /// and L2-normalized, as sentence-transformers does. One vector per text, in
    /// order.
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
        // Similar lengths together: less padding to run through the model.
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by_key(|&i| ids[i].len());
        let mut out = vec![Vec::new(); ids.len()];
        for chunk in order.chunks(BATCH) {
            let batch: Vec<&[u32]> = chunk.iter().map(|&i| ids[i].as_slice()).collect();
            for (&i, mut v) in chunk.iter().zip(self.mean_pooled(&batch)?) {
                normalize(&mut v);
                out[i] = v;
            }
        }
        Ok(out)
    }

    /// Runs token sequences through the model and mean-pools each over its own
    /// tokens; not normalized.
    pub(crate) fn mean_pooled(&self, batch: &[&[u32]]) -> Result<Vec<Vec<f32>>, ModelError> {
        let rows = batch.len();
        let width = batch.iter().map(|s| s.len()).max().unwrap_or(0);
        if rows == 0 || width == 0 {
            return Ok(vec![vec![0.0; self.dims]; rows]);
        }
        let mut input = vec![0u32; rows * width];
        let mut mask = vec![0u32; rows * width];
        for (r, seq) in batch.iter().enumerate() {
            input[r * width..r * width + seq.len()].copy_from_slice(seq);
            mask[r * width..r * width + seq.len()].fill(1);
        }
        let input = Tensor::from_vec(input, (rows, width), &self.device)?;
        let mask = Tensor::from_vec(mask, (rows, width), &self.device)?;
        let types = input.zeros_like()?;
        let hidden = self.model.forward(&input, &types, Some(&mask))?;
        let mask = mask.to_dtype(DType::F32)?;
        let summed = hidden.broadcast_mul(&mask.unsqueeze(2)?)?.sum(1)?;
        let counts = mask.sum_keepdim(1)?.clamp(1e-9, f32::MAX)?;
        Ok(summed.broadcast_div(&counts)?.to_vec2::<f32>()?)
    }
}

/// Scales `v` to unit length (a zero vector stays zero).
pub(crate) fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}
