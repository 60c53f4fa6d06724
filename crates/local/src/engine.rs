//! The inference engine: a GGUF model run by llama.cpp (built from the source
//! vendored in `llama-cpp-sys-2`) on the CPU, with our tokenizer and a KV cache that
//! the next prompt reuses up to the longest common prefix.

use std::fs::File;
use std::io::BufReader;
use std::num::NonZeroU32;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use agentls_model::local::KvCache;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::{KvCacheType, LlamaContextParams};
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::token::LlamaToken;
use tracing::{debug, info};

use crate::gguf;
use crate::prefix_store::PrefixStore;
use crate::template::{Piece, Template};
use crate::tokenizer::{Tokenizer, TokenizerData};

/// Why a model could not be loaded or run.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The file could not be opened or its header read.
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
    /// llama.cpp failed.
    #[error("inference failed: {0}")]
    Llama(String),
    /// The tokenizer metadata is unusable.
    #[error(transparent)]
    Tokenizer(#[from] crate::tokenizer::TokenizerError),
    /// The interrupt set with [`Engine::set_interrupt`] fired while a prompt was read.
    #[error("interrupted while reading the prompt")]
    Interrupted,
}

fn llama(e: impl std::fmt::Display) -> EngineError {
    EngineError::Llama(e.to_string())
}

/// llama.cpp's `llama_flash_attn_type` for on or off (`_ENABLED`, `_DISABLED`). Public
/// for the benchmarks in `agentls-eval`, which drive llama.cpp directly as the reference.
pub fn flash_attention_policy(on: bool) -> i32 {
    i32::from(on)
}

/// `params` with the KV cache types `opts` asks for: keys as asked, values too when
/// flash attention is on (without it llama.cpp refuses a quantised value cache).
pub fn with_kv_cache(params: LlamaContextParams, opts: &EngineOptions) -> LlamaContextParams {
    let kind = match opts.kv_cache {
        KvCache::F16 => KvCacheType::F16,
        KvCache::Q8_0 => KvCacheType::Q8_0,
        KvCache::Q4_0 => KvCacheType::Q4_0,
    };
    let params = params.with_type_k(kind);
    if opts.flash_attention {
        params.with_type_v(kind)
    } else {
        params
    }
}

/// How to run a model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineOptions {
    /// CPU threads for generation and prompt reading (default: all cores).
    pub threads: usize,
    /// Context size in tokens (capped by what the model was trained for).
    pub context: u32,
    /// Most tokens fed in one forward pass while reading a prompt.
    pub batch: u32,
    /// Use llama.cpp's flash-attention kernel: reads long prompts 10-30% faster
    /// on the CPU, but verifies drafts slowly (see `bench model`).
    pub flash_attention: bool,
    /// How the attention cache stores keys, and values when flash attention is on
    /// (llama.cpp quantises values only with that kernel).
    pub kv_cache: KvCache,
}

impl Default for EngineOptions {
    fn default() -> Self {
        Self {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            context: 8_192,
            batch: 512,
            flash_attention: false,
            kv_cache: KvCache::F16,
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
    /// Context the engine runs with (at most what the model was trained for).
    pub context_length: usize,
    /// The chat template family.
    pub template: Template,
    /// Ids that end the assistant's turn.
    pub end_ids: Vec<u32>,
}

/// The natural log of the probability `logits` give `token` (log-softmax);
/// negative infinity for a token outside them.
fn log_probability(logits: &[f32], token: u32) -> f64 {
    let Some(&at) = logits.get(token as usize) else {
        return f64::NEG_INFINITY;
    };
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f64 = logits.iter().map(|&l| f64::from(l - max).exp()).sum();
    f64::from(at - max) - sum.ln()
}

/// The x86 extensions llama.cpp was built with (`GGML_*` in `.cargo/config.toml` or the
/// build's environment) that this CPU lacks: running it anyway dies of an illegal
/// instruction, so the backend refuses with what to change instead.
pub(crate) fn missing_cpu_features() -> Vec<&'static str> {
    #[cfg(target_arch = "x86_64")]
    {
        let built = |v: Option<&str>| v.is_some_and(|v| v.eq_ignore_ascii_case("on"));
        // Both macros take literals only: one line per (build setting, CPU feature).
        macro_rules! missing {
            ($($var:literal => $feature:tt),* $(,)?) => {{
                let mut out = Vec::new();
                $(
                    if built(option_env!($var)) && !std::is_x86_feature_detected!($feature) {
                        out.push($var);
                    }
                )*
                out
            }};
        }
        missing!(
            "GGML_AVX" => "avx",
            "GGML_AVX2" => "avx2",
            "GGML_FMA" => "fma",
            "GGML_F16C" => "f16c",
            "GGML_BMI2" => "bmi2",
            "GGML_SSE42" => "sse4.2",
        )
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Vec::new()
    }
}

/// llama.cpp's process-wide backend: initialised once, never torn down.
pub fn backend() -> Result<&'static LlamaBackend, EngineError> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            let missing = missing_cpu_features();
            if !missing.is_empty() {
                return Err(format!(
                    "llama.cpp was built for CPU extensions this CPU lacks: rebuild with {} \
                     (in .cargo/config.toml's [env], or the environment)",
                    missing
                        .iter()
                        .map(|m| format!("{m}=OFF"))
                        .collect::<Vec<_>>()
                        .join(" ")
                ));
            }
            llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
            LlamaBackend::init().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| EngineError::Llama(e.clone()))
}

/// A loaded model with its context. One generation at a time (the provider holds it
/// behind a mutex).
pub struct Engine {
    // Field order is drop order: the context and the batch borrow the model, so
    // they go first.
    ctx: LlamaContext<'static>,
    batch: LlamaBatch<'static>,
    /// Heap-pinned: `ctx` points into it for as long as the engine lives. Shared with
    /// the engines made by [`Engine::sibling`] (one set of weights, several contexts).
    model: Arc<LlamaModel>,
    /// The model's tokenizer (shared with siblings).
    pub tokenizer: Arc<Tokenizer>,
    /// Its metadata.
    pub info: ModelInfo,
    batch_size: usize,
    /// Tokens whose keys and values sit in the cache, in order.
    cached: Vec<u32>,
    /// Checked between the batches of a prompt: a long prompt takes a minute on two
    /// cores (a 1.5B model's 5k tokens), too long to wait for after a cancel.
    interrupt: Option<tokio_util::sync::CancellationToken>,
    /// Whether the last batch computed logits at every position.
    all_logits: bool,
    /// The model file and the settings a saved KV state depends on (see
    /// [`PrefixStore`]).
    identity: String,
}

// SAFETY: a llama.cpp context is not tied to the thread that made it; it must only
// not be used from two threads at once, which `&mut self` on every call that touches
// it (and the provider's mutex) guarantees. The model it borrows is `Send + Sync`.
unsafe impl Send for Engine {}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("info", &self.info)
            .field("cached", &self.cached.len())
            .finish_non_exhaustive()
    }
}

fn tokenizer_from(
    md: &std::collections::HashMap<String, gguf::Value>,
) -> Result<Tokenizer, EngineError> {
    let strings = |key: &str| {
        md.get(key)
            .and_then(gguf::Value::as_strings)
            .ok_or_else(|| EngineError::Unsupported(format!("no {key} in the GGUF")))
    };
    let tok_model = md
        .get("tokenizer.ggml.model")
        .and_then(gguf::Value::as_str)
        .unwrap_or_default();
    if tok_model != "gpt2" {
        return Err(EngineError::Unsupported(format!(
            "tokenizer {tok_model:?} (only byte-level BPE, \"gpt2\", is supported)"
        )));
    }
    Ok(Tokenizer::new(TokenizerData {
        tokens: strings("tokenizer.ggml.tokens")?,
        merges: strings("tokenizer.ggml.merges")?,
        token_types: md
            .get("tokenizer.ggml.token_type")
            .and_then(gguf::Value::as_i32s)
            .unwrap_or_default(),
        pre: md
            .get("tokenizer.ggml.pre")
            .and_then(gguf::Value::as_str)
            .unwrap_or_default()
            .to_owned(),
    })?)
}

impl Engine {
    /// Loads a GGUF file with default options.
    pub fn load(path: &Path) -> Result<Self, EngineError> {
        Self::load_with(path, &EngineOptions::default())
    }

    /// Loads a GGUF file (GPT-2-style BPE, ChatML template; any architecture
    /// llama.cpp runs).
    pub fn load_with(path: &Path, opts: &EngineOptions) -> Result<Self, EngineError> {
        let open_err = |source| EngineError::Open {
            path: path.display().to_string(),
            source,
        };
        let file = File::open(path).map_err(open_err)?;
        let md = gguf::read_metadata(&mut BufReader::new(file)).map_err(open_err)?;
        let str_of = |k: &str| md.get(k).and_then(gguf::Value::as_str).map(str::to_owned);
        let architecture = str_of("general.architecture")
            .ok_or_else(|| EngineError::Unsupported("no general.architecture".into()))?;
        let tokenizer = tokenizer_from(&md)?;
        let chat_template = str_of("tokenizer.chat_template");
        let template = Template::detect(chat_template.as_deref()).ok_or_else(|| {
            EngineError::Unsupported("chat template is not ChatML (only ChatML is rendered)".into())
        })?;
        let mut end_ids: Vec<u32> = template
            .end_tokens()
            .iter()
            .filter_map(|t| tokenizer.token_id(t))
            .collect();
        if let Some(eos) = md
            .get("tokenizer.ggml.eos_token_id")
            .and_then(gguf::Value::as_u32)
            && !end_ids.contains(&eos)
        {
            end_ids.push(eos);
        }
        let trained = md
            .get(&format!("{architecture}.context_length"))
            .and_then(gguf::Value::as_u32)
            .unwrap_or(4096);
        let context = opts.context.clamp(64, trained.max(64));
        let name = str_of("general.name");

        let backend = backend()?;
        let model = Arc::new(
            LlamaModel::load_from_file(backend, path, &LlamaModelParams::default())
                .map_err(llama)?,
        );
        // SAFETY: the model lives in an `Arc` the engine holds, so its address is
        // stable and it outlives `ctx` and `batch` (declared before it: dropped first).
        let model_ref: &'static LlamaModel = unsafe { &*Arc::as_ptr(&model) };
        if model_ref.n_vocab() as usize != tokenizer.vocab_size() {
            return Err(EngineError::Unsupported(format!(
                "the tokenizer has {} tokens, the model {}",
                tokenizer.vocab_size(),
                model_ref.n_vocab()
            )));
        }
        let batch_size = opts.batch.clamp(8, context);
        let ctx = new_context(model_ref, backend, context, batch_size, opts)?;
        info!(%architecture, ?name, context, threads = opts.threads, path = %path.display(), "local model loaded");
        let stamp = std::fs::metadata(path)
            .map(|m| format!("{}:{:?}", m.len(), m.modified().ok()))
            .unwrap_or_default();
        let identity = format!(
            "{}:{stamp}:ctx{context}:batch{batch_size}:fa{}:kv{}:seq{MAX_SEQUENCES}",
            path.display(),
            opts.flash_attention,
            opts.kv_cache
        );
        Ok(Self {
            ctx,
            batch: LlamaBatch::new(batch_size as usize, 1),
            model,
            tokenizer: Arc::new(tokenizer),
            info: ModelInfo {
                architecture,
                name,
                context_length: context as usize,
                template,
                end_ids,
            },
            batch_size: batch_size as usize,
            cached: Vec::new(),
            all_logits: false,
            interrupt: None,
            identity,
        })
    }

    /// A second engine over the same loaded weights: its own llama.cpp context (KV
    /// cache) of `context` tokens (at most what this engine runs with), with `opts`'
    /// threads, batch and attention settings. Costs the new context's memory, not the
    /// weights'. Blocking (milliseconds); `&mut self` keeps this engine from decoding
    /// meanwhile (llama.cpp must not make a context while the model is in use).
    pub fn sibling(&mut self, context: u32, opts: &EngineOptions) -> Result<Self, EngineError> {
        let backend = backend()?;
        // SAFETY: as in `load_with`: the `Arc` held by the new engine keeps the model
        // alive and in place for as long as its context.
        let model_ref: &'static LlamaModel = unsafe { &*Arc::as_ptr(&self.model) };
        let context = context.clamp(64, (self.info.context_length as u32).max(64));
        let batch_size = opts.batch.clamp(8, context);
        let ctx = new_context(model_ref, backend, context, batch_size, opts)?;
        debug!(
            context,
            batch = batch_size,
            "second context over the loaded model"
        );
        Ok(Self {
            ctx,
            batch: LlamaBatch::new(batch_size as usize, 1),
            model: Arc::clone(&self.model),
            tokenizer: Arc::clone(&self.tokenizer),
            info: ModelInfo {
                context_length: context as usize,
                ..self.info.clone()
            },
            batch_size: batch_size as usize,
            cached: Vec::new(),
            all_logits: false,
            interrupt: None,
            identity: format!("{}:sibling{context}", self.identity),
        })
    }

    /// The weights' size in bytes, as loaded.
    pub fn model_bytes(&self) -> u64 {
        self.model.size()
    }

    /// The model's vocabulary as llama.cpp sees it (its own tokenizer and special
    /// tokens), for references measured against ours.
    pub fn llama_vocab(&self) -> llama_cpp_2::vocab::LlamaVocab<'_> {
        self.model.vocab()
    }
}

/// Most sequences one context decodes together ([`Engine::fork`]).
pub const MAX_SEQUENCES: usize = 16;

/// Makes a llama.cpp context over `model`; one at a time in the process (llama.cpp's
/// context constructor writes to the model).
fn new_context(
    model: &'static LlamaModel,
    backend: &LlamaBackend,
    context: u32,
    batch_size: u32,
    opts: &EngineOptions,
) -> Result<LlamaContext<'static>, EngineError> {
    static MAKING: Mutex<()> = Mutex::new(());
    let _one = MAKING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let threads = i32::try_from(opts.threads.max(1)).unwrap_or(1);
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(context))
        .with_n_batch(batch_size)
        .with_n_ubatch(batch_size)
        .with_n_threads(threads)
        .with_n_threads_batch(threads)
        // Off by default: llama.cpp's CPU flash-attention kernel reads a batch of
        // 2 to 63 queries one query at a time, which makes verifying a draft cost
        // nearly as much as generating its tokens one by one.
        .with_flash_attention_policy(flash_attention_policy(opts.flash_attention))
        // Several answers decoded in one batch ([`Engine::fork`]): one cache for them
        // all, so that the prompt's cells are shared rather than split per sequence.
        .with_n_seq_max(MAX_SEQUENCES as u32)
        .with_kv_unified(true);
    let params = with_kv_cache(params, opts);
    model.new_context(backend, params).map_err(llama)
}

impl Engine {
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

    /// llama.cpp's own tokenization of plain text (no special tokens parsed, no BOS):
    /// the reference our tokenizer is checked against.
    pub fn reference_encode(&self, text: &str) -> Vec<u32> {
        self.model
            .vocab()
            .tokenize(text.as_bytes(), false, false)
            .into_iter()
            .map(|t| t.0 as u32)
            .collect()
    }

    /// Reads a prompt and returns the logits for the next token and how many prompt
    /// tokens came from the cache. The cache keeps the longest prefix it shares with
    /// `prompt` (at least one token is always computed, for the logits) and drops the
    /// rest.
    pub fn prefill(&mut self, prompt: &[u32]) -> Result<(Vec<f32>, usize), EngineError> {
        if prompt.is_empty() {
            return Err(EngineError::Unsupported("empty prompt".into()));
        }
        if prompt.len() > self.info.context_length {
            return Err(EngineError::Unsupported(format!(
                "the prompt has {} tokens; the context is {}",
                prompt.len(),
                self.info.context_length
            )));
        }
        let common = self.shared_prefix(prompt).min(prompt.len() - 1);
        self.truncate(common)?;
        debug!(prompt = prompt.len(), reused = common, "prefill");
        let mut logits = Vec::new();
        for chunk in prompt[common..].chunks(self.batch_size) {
            if self
                .interrupt
                .as_ref()
                .is_some_and(tokio_util::sync::CancellationToken::is_cancelled)
            {
                // What was fed stays cached, whole batches only: still a true prefix.
                return Err(EngineError::Interrupted);
            }
            logits = self.feed(chunk)?;
        }
        Ok((logits, common))
    }

    /// Makes [`Self::prefill`] stop between batches once `token` is cancelled (`None`:
    /// never).
    pub fn set_interrupt(&mut self, token: Option<tokio_util::sync::CancellationToken>) {
        self.interrupt = token;
    }

    /// [`Self::prefill`], with the prompt's first `head` tokens (its fixed part: system
    /// prompt and tools) loaded from `store` when an earlier engine saved them there,
    /// and saved there when not. The count returned includes tokens loaded from disk.
    pub fn prefill_with_store(
        &mut self,
        prompt: &[u32],
        head: usize,
        store: Option<&PrefixStore>,
    ) -> Result<(Vec<f32>, usize), EngineError> {
        let head = head.min(prompt.len().saturating_sub(1));
        let shared = self.shared_prefix(prompt);
        let Some(store) = store.filter(|_| head > 0 && shared < head) else {
            return self.prefill(prompt);
        };
        let path = store.path(&self.identity, &prompt[..head]);
        if self.load_state(&path, &prompt[..head]) {
            return self.prefill(prompt);
        }
        // Read the head alone, save it, then the rest.
        self.prefill(&prompt[..head])?;
        self.save_state(store, &path);
        let (logits, _) = self.prefill(prompt)?;
        Ok((logits, shared.min(prompt.len() - 1)))
    }

    /// How many of `prompt`'s first tokens the cache holds.
    fn shared_prefix(&self, prompt: &[u32]) -> usize {
        self.cached
            .iter()
            .zip(prompt)
            .take_while(|(a, b)| a == b)
            .count()
    }

    /// Loads the state saved at `path` if it holds exactly `head`; on any mismatch
    /// or failure the cache is left empty (and a file that fails to load removed).
    fn load_state(&mut self, path: &Path, head: &[u32]) -> bool {
        if !path.is_file() {
            return false;
        }
        self.reset();
        match self.ctx.state_load_file(path, head.len()) {
            Ok(tokens)
                if tokens.len() == head.len()
                    && tokens.iter().zip(head).all(|(a, b)| a.0 as u32 == *b) =>
            {
                self.cached = head.to_vec();
                PrefixStore::touch(path);
                debug!(tokens = head.len(), path = %path.display(), "prompt head loaded from disk");
                true
            }
            Ok(_) => {
                self.reset();
                false
            }
            Err(e) => {
                debug!(error = %e, path = %path.display(), "saved prompt head unreadable; removed");
                self.reset();
                let _ = std::fs::remove_file(path);
                false
            }
        }
    }

    /// Saves the cache (exactly the head just read) to `path`, whole or not at all.
    fn save_state(&self, store: &PrefixStore, path: &Path) {
        let tokens: Vec<LlamaToken> = self.cached.iter().map(|&t| LlamaToken(t as i32)).collect();
        let saved = store
            .temporary(path)
            .map_err(|e| e.to_string())
            .and_then(|tmp| {
                let r = self
                    .ctx
                    .state_save_file(&tmp, &tokens)
                    .map_err(|e| e.to_string())
                    .and_then(|()| std::fs::rename(&tmp, path).map_err(|e| e.to_string()));
                if r.is_err() {
                    let _ = std::fs::remove_file(&tmp);
                }
                r
            });
        match saved {
            Ok(()) => {
                debug!(tokens = tokens.len(), path = %path.display(), "prompt head saved");
                store.prune();
            }
            Err(e) => debug!(error = %e, "prompt head not saved"),
        }
    }

    /// Feeds one generated token; returns the logits for the next.
    pub fn step(&mut self, token: u32) -> Result<Vec<f32>, EngineError> {
        self.feed(&[token])
    }

    /// Feeds at most one batch of tokens in one forward pass (for verifying a
    /// draft; callers drop what they reject with [`Self::truncate`]), keeping the
    /// logits after each in llama.cpp's buffer: read them with [`Self::batch_logits`] until
    /// the next call that feeds tokens. Verifying a draft reads them only up to the
    /// first disagreement, without copying a vocabulary-sized row per position.
    pub fn eval_in_place(&mut self, tokens: &[u32]) -> Result<(), EngineError> {
        if tokens.len() > self.batch_size {
            return Err(EngineError::Unsupported(format!(
                "{} tokens in one pass; the batch holds {}",
                tokens.len(),
                self.batch_size
            )));
        }
        self.decode(tokens, true)
    }

    /// The logits after position `i` of the last batch fed with
    /// [`Self::eval_in_place`] (empty when out of range).
    pub fn batch_logits(&self, i: usize) -> &[f32] {
        // llama.cpp panics on a position it computed no logits for.
        if !self.all_logits || i >= self.batch.n_tokens() as usize {
            return &[];
        }
        self.ctx.get_logits_ith(i as i32)
    }

    /// The log-likelihood of each of `continuations` after `prompt`: the sum over its
    /// tokens of the log-probability the model gives each, read from one forward pass
    /// (a continuation longer than a batch is cut to one). The prompt is read once
    /// (its cached prefix reused), each continuation dropped from the cache after.
    pub fn score(
        &mut self,
        prompt: &[u32],
        continuations: &[Vec<u32>],
    ) -> Result<Vec<f64>, EngineError> {
        let (first, _) = self.prefill(prompt)?;
        let base = self.cached.len();
        let mut out = Vec::with_capacity(continuations.len());
        for c in continuations {
            let c = &c[..c.len().min(self.batch_size)];
            let Some((&head, rest)) = c.split_first() else {
                out.push(0.0);
                continue;
            };
            if self
                .interrupt
                .as_ref()
                .is_some_and(tokio_util::sync::CancellationToken::is_cancelled)
            {
                return Err(EngineError::Interrupted);
            }
            let mut sum = log_probability(&first, head);
            self.eval_in_place(c)?;
            for (i, &t) in rest.iter().enumerate() {
                sum += log_probability(self.batch_logits(i), t);
            }
            self.truncate(base)?;
            out.push(sum);
        }
        Ok(out)
    }

    /// Keeps the first `len` cached tokens and drops the rest from the KV cache.
    pub fn truncate(&mut self, len: usize) -> Result<(), EngineError> {
        if len >= self.cached.len() {
            return Ok(());
        }
        if len == 0 {
            self.reset();
            return Ok(());
        }
        let from = u32::try_from(len).map_err(llama)?;
        if let Err(e) = self.ctx.kv_cache_seq_rm(0, Some(from), None) {
            self.reset();
            return Err(llama(e));
        }
        self.cached.truncate(len);
        Ok(())
    }

    /// Runs one batch; returns the logits of the last position.
    fn feed(&mut self, tokens: &[u32]) -> Result<Vec<f32>, EngineError> {
        self.decode(tokens, false)?;
        let last = tokens.len().saturating_sub(1);
        Ok(self.ctx.get_logits_ith(last as i32).to_vec())
    }

    /// Runs one batch, asking llama.cpp for the logits of every position when `all`,
    /// else of the last one only.
    fn decode(&mut self, tokens: &[u32], all: bool) -> Result<(), EngineError> {
        if self.cached.len() + tokens.len() > self.info.context_length {
            return Err(EngineError::Unsupported(format!(
                "the context of {} tokens is full",
                self.info.context_length
            )));
        }
        self.batch.clear();
        self.all_logits = false;
        let start = self.cached.len();
        let last = tokens.len().saturating_sub(1);
        for (i, &t) in tokens.iter().enumerate() {
            let pos = i32::try_from(start + i).map_err(llama)?;
            self.batch
                .add(LlamaToken(t as i32), pos, &[0], all || i == last)
                .map_err(llama)?;
        }
        if let Err(e) = self.ctx.decode(&mut self.batch) {
            // The cache may hold part of this batch: don't trust it again.
            self.reset();
            return Err(llama(e));
        }
        self.cached.extend_from_slice(tokens);
        self.all_logits = all;
        Ok(())
    }

    /// Copies the cached prompt (sequence 0) to sequences `1..n`: they share its
    /// cells, and each then grows on its own with [`Self::decode_seqs`] until
    /// [`Self::join`]. At most [`MAX_SEQUENCES`].
    pub fn fork(&mut self, n: usize) -> Result<(), EngineError> {
        if n > MAX_SEQUENCES || n == 0 {
            return Err(EngineError::Unsupported(format!(
                "{n} sequences at once (at most {MAX_SEQUENCES})"
            )));
        }
        if self.cached.is_empty() {
            return Err(EngineError::Unsupported("no prompt to fork".into()));
        }
        for seq in 1..n as i32 {
            // Left empty by the last `join`; cleared anyway so that no stale cell
            // of a failed call joins the copy.
            let _ = self.ctx.clear_kv_cache_seq(Some(seq as u32), None, None);
            self.ctx
                .kv_cache_seq_cp(0, seq, None, None)
                .map_err(llama)?;
        }
        Ok(())
    }

    /// One forward pass over tokens of several sequences: each `(seq, pos, tokens)`
    /// puts `tokens` at positions `pos..` of sequence `seq` (forked with
    /// [`Self::fork`]; `pos` past the prompt). The logits after every token stay in
    /// llama.cpp's buffer, in the order given: read them with [`Self::batch_logits`]
    /// (index counted across the feeds). Sequence 0's tokens here are not counted in
    /// [`Self::cached`]: [`Self::join`] drops them.
    pub fn decode_seqs(&mut self, feeds: &[(usize, usize, &[u32])]) -> Result<(), EngineError> {
        let total: usize = feeds.iter().map(|f| f.2.len()).sum();
        if total > self.batch_size {
            return Err(EngineError::Unsupported(format!(
                "{total} tokens in one pass; the batch holds {}",
                self.batch_size
            )));
        }
        self.batch.clear();
        self.all_logits = false;
        for &(seq, pos, tokens) in feeds {
            let seq = i32::try_from(seq).map_err(llama)?;
            for (i, &t) in tokens.iter().enumerate() {
                let at = i32::try_from(pos + i).map_err(llama)?;
                self.batch
                    .add(LlamaToken(t as i32), at, &[seq], true)
                    .map_err(llama)?;
            }
        }
        if let Err(e) = self.ctx.decode(&mut self.batch) {
            self.reset();
            return Err(llama(e));
        }
        self.all_logits = true;
        Ok(())
    }

    /// Drops sequence `seq`'s cells from position `from` on (its rejected draft, or
    /// all it generated once it ends), keeping the prompt's.
    pub fn drop_seq_from(&mut self, seq: usize, from: usize) -> Result<(), EngineError> {
        let from = u32::try_from(from.max(self.cached.len())).map_err(llama)?;
        let seq = i32::try_from(seq).map_err(llama)?;
        if let Err(e) = self.ctx.kv_cache_seq_rm(seq, Some(from), None) {
            self.reset();
            return Err(llama(e));
        }
        Ok(())
    }

    /// Ends a [`Self::fork`] of `n` sequences: drops sequences `1..n` and what
    /// sequence 0 generated, leaving the prompt cached for the next call.
    pub fn join(&mut self, n: usize) {
        let prompt = u32::try_from(self.cached.len()).ok();
        let mut ok = prompt.is_some();
        for seq in 1..n.min(MAX_SEQUENCES) as i32 {
            ok &= self.ctx.kv_cache_seq_rm(seq, None, None).is_ok();
        }
        ok &= self.ctx.kv_cache_seq_rm(0, prompt, None).is_ok();
        self.all_logits = false;
        if !ok {
            self.reset();
        }
    }

    /// llama.cpp's batched decoding with nothing around it, as its
    /// `llama-batched-bench` times text generation: the cached prompt forked to
    /// `width` sequences, then `steps` forward passes of one token per sequence
    /// (logits kept, nothing sampled). The passes' time; the prompt stays cached.
    pub fn time_batched_decode(
        &mut self,
        width: usize,
        steps: usize,
    ) -> Result<std::time::Duration, EngineError> {
        let base = self.cached.len();
        let token = *self
            .cached
            .last()
            .ok_or_else(|| EngineError::Unsupported("no prompt to decode after".into()))?;
        self.fork(width)?;
        let started = std::time::Instant::now();
        let one = [token];
        for step in 0..steps {
            let feeds: Vec<(usize, usize, &[u32])> =
                (0..width).map(|seq| (seq, base + step, &one[..])).collect();
            if let Err(e) = self.decode_seqs(&feeds) {
                self.join(width);
                return Err(e);
            }
        }
        let took = started.elapsed();
        self.join(width);
        Ok(took)
    }

    /// Most tokens one forward pass takes.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// The tokens in the KV cache, in order.
    pub fn cached(&self) -> &[u32] {
        &self.cached
    }

    /// Number of tokens in the KV cache.
    pub fn cached_len(&self) -> usize {
        self.cached.len()
    }

    /// Bytes of the context's state as saved (the KV cache of the tokens read and the
    /// last logits): what a quantised KV cache shrinks, and what the prompt's fixed
    /// head costs on disk.
    pub fn state_bytes(&self) -> usize {
        self.ctx.get_state_size()
    }

    /// Drops the KV cache.
    pub fn reset(&mut self) {
        self.ctx.clear_kv_cache();
        self.cached.clear();
        self.all_logits = false;
    }
}

#[cfg(test)]
mod tests {
    /// The build settings of .cargo/config.toml reach this crate's build (so that the
    /// check below knows what llama.cpp was built with), and this CPU has them all.
    #[test]
    fn llama_cpp_is_built_for_extensions_this_cpu_has() {
        #[cfg(target_arch = "x86_64")]
        assert_eq!(option_env!("GGML_AVX2"), Some("ON"));
        // OFF from `.cargo/config.toml`, ON where a native build opts in.
        assert!(option_env!("GGML_LLAMAFILE").is_some());
        assert_eq!(option_env!("GGML_CPU_REPACK"), Some("OFF"));
        assert_eq!(super::missing_cpu_features(), Vec::<&str>::new());
    }
}
