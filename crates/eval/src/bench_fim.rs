//! The reference `agentls bench complete` measures [`LocalCompleter`] against:
//! llama.cpp's own infill path driven directly. Its own tokenizer, its own FIM
//! token ids (`llama_vocab_fim_pre/suf/mid/rep/sep`), its greedy sampler and its
//! end-of-generation set; the prompt laid out as llama.cpp's server lays out an
//! infill request whose whole prefix comes as `input_prefix` (repository and file
//! tokens first, then prefix, suffix, middle: Qwen's own FIM layout, the most accurate
//! way to ask llama.cpp; agentls lays the cursor's line out otherwise, see `fim`) and
//! the KV cache kept up to the longest common prefix with the previous prompt, as its
//! server does with `cache_prompt`. Text is cut with the same [`StopRules`].
//!
//! [`LocalCompleter`]: agentls_local::LocalCompleter

use std::num::NonZeroU32;
use std::path::Path;
use std::time::Instant;

use agentls_model::complete::{FimAnswer, FimRequest, FimStop, StopRules};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;

use agentls_local::engine::{
    EngineError, EngineOptions, backend, flash_attention_policy, with_kv_cache,
};
use agentls_local::fim::FimTiming;
use agentls_local::tokenizer::Utf8Stream;

/// llama.cpp with its own infill prompt, for measuring against.
pub struct FimReference {
    // Drop order: the context borrows the model.
    ctx: LlamaContext<'static>,
    model: Box<LlamaModel>,
    batch: usize,
    cached: Vec<LlamaToken>,
}

impl std::fmt::Debug for FimReference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FimReference")
            .field("cached", &self.cached.len())
            .finish_non_exhaustive()
    }
}

fn llama(e: impl std::fmt::Display) -> EngineError {
    EngineError::Llama(e.to_string())
}

impl FimReference {
    /// Loads the model at `path` (weights of its own) with a context of `context`
    /// tokens and `opts`' threads, batch and attention settings.
    pub fn load(path: &Path, context: u32, opts: &EngineOptions) -> Result<Self, EngineError> {
        let backend = backend()?;
        let model = Box::new(
            LlamaModel::load_from_file(backend, path, &LlamaModelParams::default())
                .map_err(llama)?,
        );
        // SAFETY: boxed, so its address is stable, and dropped after `ctx`.
        let model_ref: &'static LlamaModel = unsafe { &*std::ptr::from_ref(model.as_ref()) };
        let vocab = model_ref.vocab();
        if vocab.fim_pre().0 < 0 || vocab.fim_suf().0 < 0 || vocab.fim_mid().0 < 0 {
            return Err(EngineError::Unsupported(
                "llama.cpp finds no fill-in-the-middle tokens in this model".into(),
            ));
        }
        let threads = i32::try_from(opts.threads.max(1)).unwrap_or(1);
        let batch = opts.batch.clamp(8, context);
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(context))
            .with_n_batch(batch)
            .with_n_ubatch(batch)
            .with_n_threads(threads)
            .with_n_threads_batch(threads)
            .with_flash_attention_policy(flash_attention_policy(opts.flash_attention));
        let ctx = model_ref
            .new_context(backend, with_kv_cache(params, opts))
            .map_err(llama)?;
        Ok(Self {
            ctx,
            model,
            batch: batch as usize,
            cached: Vec::new(),
        })
    }

    /// The infill prompt for `req`, in llama.cpp's tokens.
    pub fn prompt(&self, req: &FimRequest) -> Vec<LlamaToken> {
        let vocab = self.model.vocab();
        let text = |t: &str| vocab.tokenize(t.as_bytes(), false, false);
        let (rep, sep) = (vocab.fim_rep(), vocab.fim_sep());
        let repository = rep.0 >= 0 && sep.0 >= 0;
        let mut out = Vec::new();
        if repository {
            if !req.context.is_empty() {
                out.push(rep);
                out.extend(text("workspace\n"));
                for chunk in &req.context {
                    out.push(sep);
                    let mut t = format!("{}\n{}", chunk.path, chunk.text);
                    if !t.ends_with('\n') {
                        t.push('\n');
                    }
                    out.extend(text(&t));
                }
            }
            if !req.context.is_empty() || !req.path.is_empty() {
                out.push(sep);
                out.extend(text(&format!("{}\n", req.path)));
            }
        }
        out.push(vocab.fim_pre());
        out.extend(text(&req.prefix));
        out.push(vocab.fim_suf());
        out.extend(text(&req.suffix));
        out.push(vocab.fim_mid());
        out
    }

    /// Completes `req` greedily: the answer (cut by `rules`) and its times from the
    /// call.
    pub fn complete(
        &mut self,
        req: &FimRequest,
        rules: &StopRules,
    ) -> Result<(FimAnswer, FimTiming), EngineError> {
        let asked = Instant::now();
        let prompt = self.prompt(req);
        let common = self
            .cached
            .iter()
            .zip(&prompt)
            .take_while(|(a, b)| a == b)
            .count()
            .min(prompt.len().saturating_sub(1));
        self.ctx
            .clear_kv_cache_seq(Some(0), Some(common as u32), None)
            .map_err(llama)?;
        self.cached.truncate(common);
        let mut batch = LlamaBatch::new(self.batch, 1);
        for chunk in prompt[common..].chunks(self.batch) {
            batch.clear();
            let last = chunk.len() - 1;
            for (i, &t) in chunk.iter().enumerate() {
                let pos = i32::try_from(self.cached.len() + i).map_err(llama)?;
                batch.add(t, pos, &[0], i == last).map_err(llama)?;
            }
            self.ctx.decode(&mut batch).map_err(llama)?;
            self.cached.extend_from_slice(chunk);
        }
        let mut timing = FimTiming {
            prompt_read: asked.elapsed(),
            ..FimTiming::default()
        };
        let vocab = self.model.vocab();
        let mut sampler = LlamaSampler::greedy();
        let mut utf8 = Utf8Stream::default();
        let mut text = String::new();
        let mut tokens = 0u32;
        let max_new = req.max_tokens.max(1);
        let mut idx = batch.n_tokens() - 1;
        let stop = loop {
            let token = sampler.sample(&self.ctx, idx);
            sampler.accept(token);
            tokens += 1;
            timing.first_token.get_or_insert_with(|| asked.elapsed());
            if vocab.is_eog(token) || vocab.is_control(token) {
                break FimStop::EndOfText;
            }
            text.push_str(&utf8.push(&vocab.token_to_piece(token, false, None)));
            if rules.cut(&text).is_some() {
                break FimStop::Rule;
            }
            if tokens >= max_new {
                break FimStop::Budget;
            }
            batch.clear();
            let pos = i32::try_from(self.cached.len()).map_err(llama)?;
            batch.add(token, pos, &[0], true).map_err(llama)?;
            self.ctx.decode(&mut batch).map_err(llama)?;
            self.cached.push(token);
            idx = 0;
        };
        timing.last_token = asked.elapsed();
        text.push_str(&utf8.finish());
        Ok((
            FimAnswer {
                text: rules.finish(&text),
                tokens,
                cached_tokens: common as u32,
                prompt_tokens: prompt.len() as u32,
                stop,
            },
            timing,
        ))
    }
}
