//! The inference engine: a quantized GGUF model run by candle on the CPU, with its
//! tokenizer and a KV cache that a new prompt reuses when it extends the last one.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::models::{quantized_llama, quantized_qwen2};
use tracing::{debug, info};

use crate::template::{Piece, Template};
use crate::tokenizer::{Tokenizer, TokenizerData};

/// Longest chunk fed in one forward pass while reading a prompt: bounds the
/// attention mask and activations.
const PREFILL_CHUNK: usize = 256;

/// Why a model could not be loaded or run.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The file could not be opened.
    #[error("cannot open model {path}: {source}")]
    Open {
        /// File.
        path: String,
        /// Error.
        source: std::io::Error,
    },
    /// The GGUF is not one we can run.
    #[error("unsupported model: {0}")]
    Unsupported(String),
    /// candle failed.
    #[error("inference failed: {0}")]
    Candle(#[from] candle_core::Error),
    /// The tokenizer metadata is unusable.
    #[error(transparent)]
    Tokenizer(#[from] crate::tokenizer::TokenizerError),
}

enum Weights {
    Llama(quantized_llama::ModelWeights),
    Qwen2(quantized_qwen2::ModelWeights),
}

impl Weights {
    fn forward(&mut self, x: &Tensor, pos: usize) -> candle_core::Result<Tensor> {
        match self {
            Self::Llama(m) => m.forward(x, pos),
            Self::Qwen2(m) => m.forward(x, pos),
        }
    }

    fn clear(&mut self) {
        match self {
            Self::Llama(m) => m.clear_kv_cache(),
            Self::Qwen2(m) => m.clear_kv_cache(),
        }
    }
}

/// What the GGUF says about the model.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelInfo {
    /// `general.architecture` (`qwen2`, `llama`).
    pub architecture: String,
    /// `general.name`, when present.
    pub name: Option<String>,
    /// Context length it was trained for.
    pub context_length: usize,
    /// The chat template family.
    pub template: Template,
    /// Ids that end the assistant's turn.
    pub end_ids: Vec<u32>,
}

/// A loaded model. Not `Sync`: one generation at a time (the provider holds it
/// behind a mutex).
pub struct Engine {
    weights: Weights,
    /// The model's tokenizer.
    pub tokenizer: Tokenizer,
    /// Its metadata.
    pub info: ModelInfo,
    device: Device,
    /// Tokens whose keys and values sit in the cache, in order.
    cached: Vec<u32>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("info", &self.info)
            .field("cached", &self.cached.len())
            .finish_non_exhaustive()
    }
}

fn md_str(ct: &gguf_file::Content, key: &str) -> Option<String> {
    ct.metadata
        .get(key)
        .and_then(|v| v.to_string().ok())
        .cloned()
}

fn md_u32(ct: &gguf_file::Content, key: &str) -> Option<u32> {
    ct.metadata.get(key).and_then(|v| v.to_u32().ok())
}

fn md_strings(ct: &gguf_file::Content, key: &str) -> Result<Vec<String>, EngineError> {
    let v = ct
        .metadata
        .get(key)
        .ok_or_else(|| EngineError::Unsupported(format!("no {key} in the GGUF")))?;
    v.to_vec()?
        .iter()
        .map(|s| s.to_string().cloned().map_err(EngineError::from))
        .collect()
}

impl Engine {
    /// Loads a GGUF file (Qwen2 or Llama architecture, GPT-2-style BPE, ChatML template).
    pub fn load(path: &Path) -> Result<Self, EngineError> {
        let file = File::open(path).map_err(|source| EngineError::Open {
            path: path.display().to_string(),
            source,
        })?;
        let mut reader = BufReader::new(file);
        let ct = gguf_file::Content::read(&mut reader)?;
        let architecture = md_str(&ct, "general.architecture")
            .ok_or_else(|| EngineError::Unsupported("no general.architecture".into()))?;
        let tok_model = md_str(&ct, "tokenizer.ggml.model").unwrap_or_default();
        if tok_model != "gpt2" {
            return Err(EngineError::Unsupported(format!(
                "tokenizer {tok_model:?} (only byte-level BPE, \"gpt2\", is supported)"
            )));
        }
        let token_types = match ct.metadata.get("tokenizer.ggml.token_type") {
            Some(v) => v
                .to_vec()?
                .iter()
                .map(|t| t.to_i32().map_err(EngineError::from))
                .collect::<Result<Vec<_>, _>>()?,
            None => Vec::new(),
        };
        let tokenizer = Tokenizer::new(TokenizerData {
            tokens: md_strings(&ct, "tokenizer.ggml.tokens")?,
            merges: md_strings(&ct, "tokenizer.ggml.merges")?,
            token_types,
            pre: md_str(&ct, "tokenizer.ggml.pre").unwrap_or_default(),
        })?;
        let chat_template = md_str(&ct, "tokenizer.chat_template");
        let template = Template::detect(chat_template.as_deref()).ok_or_else(|| {
            EngineError::Unsupported("chat template is not ChatML (only ChatML is rendered)".into())
        })?;
        let mut end_ids: Vec<u32> = template
            .end_tokens()
            .iter()
            .filter_map(|t| tokenizer.token_id(t))
            .collect();
        if let Some(eos) = md_u32(&ct, "tokenizer.ggml.eos_token_id")
            && !end_ids.contains(&eos)
        {
            end_ids.push(eos);
        }
        let context_length =
            md_u32(&ct, &format!("{architecture}.context_length")).map_or(4096, |n| n as usize);
        let name = md_str(&ct, "general.name");
        let device = Device::Cpu;
        let weights = match architecture.as_str() {
            "qwen2" => Weights::Qwen2(quantized_qwen2::ModelWeights::from_gguf(
                ct,
                &mut reader,
                &device,
            )?),
            "llama" => Weights::Llama(quantized_llama::ModelWeights::from_gguf(
                ct,
                &mut reader,
                &device,
            )?),
            other => {
                return Err(EngineError::Unsupported(format!(
                    "architecture {other:?} (qwen2 and llama are supported)"
                )));
            }
        };
        info!(%architecture, ?name, context_length, path = %path.display(), "local model loaded");
        Ok(Self {
            weights,
            tokenizer,
            info: ModelInfo {
                architecture,
                name,
                context_length,
                template,
                end_ids,
            },
            device,
            cached: Vec::new(),
        })
    }

    /// Tokenizes rendered pieces; special pieces the vocabulary lacks are an error.
    pub fn encode_pieces(&self, pieces: &[Piece]) -> Result<Vec<u32>, EngineError> {
        let mut ids = Vec::new();
        for p in pieces {
            match p {
                Piece::Special(s) => ids.push(self.tokenizer.token_id(s).ok_or_else(|| {
                    EngineError::Unsupported(format!("the vocabulary has no {s}"))
                })?),
                Piece::Text(t) => ids.extend(self.tokenizer.encode(t)),
            }
        }
        Ok(ids)
    }

    /// Reads a prompt and returns the logits for the next token and how many prompt
    /// tokens came from the cache. The cache is reused when `prompt` strictly extends
    /// the tokens it holds; otherwise it is rebuilt.
    pub fn prefill(&mut self, prompt: &[u32]) -> Result<(Vec<f32>, usize), EngineError> {
        if prompt.is_empty() {
            return Err(EngineError::Unsupported("empty prompt".into()));
        }
        let reuse = !self.cached.is_empty()
            && prompt.len() > self.cached.len()
            && prompt.starts_with(&self.cached);
        let start = if reuse {
            self.cached.len()
        } else {
            self.weights.clear();
            self.cached.clear();
            0
        };
        debug!(prompt = prompt.len(), reused = start, "prefill");
        let mut logits = None;
        for chunk in prompt[start..].chunks(PREFILL_CHUNK) {
            logits = Some(self.feed(chunk)?);
        }
        let logits = logits.ok_or_else(|| EngineError::Unsupported("nothing to feed".into()))?;
        Ok((logits, start))
    }

    /// Feeds one generated token; returns the logits for the next.
    pub fn step(&mut self, token: u32) -> Result<Vec<f32>, EngineError> {
        self.feed(&[token])
    }

    fn feed(&mut self, tokens: &[u32]) -> Result<Vec<f32>, EngineError> {
        let pos = self.cached.len();
        let input = Tensor::new(tokens, &self.device)?.unsqueeze(0)?;
        let out = self.weights.forward(&input, pos);
        let out = match out {
            Ok(o) => o,
            Err(e) => {
                // The cache may hold part of this chunk: don't trust it again.
                self.weights.clear();
                self.cached.clear();
                return Err(e.into());
            }
        };
        self.cached.extend_from_slice(tokens);
        let logits = out
            .squeeze(0)?
            .to_dtype(candle_core::DType::F32)?
            .to_vec1::<f32>()?;
        Ok(logits)
    }

    /// Number of tokens in the KV cache.
    pub fn cached_len(&self) -> usize {
        self.cached.len()
    }

    /// Drops the KV cache.
    pub fn reset(&mut self) {
        self.weights.clear();
        self.cached.clear();
    }
}
