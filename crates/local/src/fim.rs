//! Fill-in-the-middle completion on the embedded engine: [`LocalCompleter`] serves the
//! model layer's [`Completer`] with Qwen2.5-Coder's own FIM tokens.
//!
//! The prompt, in the model's special tokens by id (text never turns into one):
//!
//! ```text
//! <|repo_name|>workspace\n                      (when there is context and the
//! <|file_sep|>other/path\n<chunk text>\n         vocabulary has repository tokens)
//! <|file_sep|>src/lib.rs\n
//! <|fim_prefix|>lines before the cursor's<|fim_suffix|>suffix<|fim_middle|>cursor line
//! ```
//!
//! Context chunks come first, then the prefix's whole lines and the suffix; the cursor's
//! line up to the cursor comes after `<|fim_middle|>`, as the start of the answer
//! ([`split_cursor_line`], llama.cpp's infill `prompt`). From one keystroke to the next
//! the engine's KV cache (kept up to the longest common prefix with the previous
//! prompt) holds everything but the line's last tokens: a keystroke on the line
//! re-reads those alone, not the suffix window.
//!
//! Decoding is greedy, with token healing at the cursor ([`heal_last_token`]); it stops
//! at any special token (`<|endoftext|>`, `<|fim_pad|>`, `<|file_sep|>`…), when
//! [`StopRules::cut`] fires (checked after every token), or at `max_tokens`; the text
//! returned is [`StopRules::finish`]'s. A rewrite (a next edit's window written again:
//! [`StopRules::rewrite`]) is drafted by prompt lookup ([`crate::speculate`]): the
//! drafter follows the text the rules expect copied from the answer's first token,
//! and one forward pass checks a token and its draft. Cancellation is checked before every token and
//! between prompt batches, and ends with a `UserAborted` error. Each completion runs on
//! a thread that ends with it; requests take the engine in turn, and a superseded one,
//! already cancelled, costs nothing.
//!
//! **Cost control.** A completer either has its own llama.cpp context over the weights
//! the agent's engine loaded ([`ContextChoice::Own`]: a KV cache of
//! [`COMPLETION_CONTEXT`] tokens, tens of MiB for a 0.5B model) or, when that does not
//! fit in available memory ([`CompletionPlan`]), shares the agent's context
//! ([`ContextChoice::Shared`]) and gives way at once, with an empty answer, while the
//! agent uses it.

use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use agentls_model::complete::{
    Completer, FimAnswer, FimFuture, FimRequest, FimStop, StopRules, split_cursor_line,
};
use agentls_model::{CancellationToken, ErrorClass, ModelError};
use tokio::sync::oneshot;
use tracing::debug;

use crate::engine::{Engine, EngineError};
use crate::gguf;
use crate::provider::{answer_or_abort, engine_error};
use crate::sampler::Sampler;
use crate::speculate::{Drafter, Lookup};
use crate::tokenizer::{Tokenizer, Utf8Stream};

/// Context size (tokens) of a completer's own llama.cpp context.
pub const COMPLETION_CONTEXT: u32 = 4_096;

/// Prompt tokens read per forward pass by a completer's own context.
pub const COMPLETION_BATCH: u32 = 256;

/// Memory kept free beside a second context before one is made.
const HEADROOM: u64 = 512 << 20;

static RUNS: AtomicU64 = AtomicU64::new(0);

/// How many completions ran the model in this process (a superseded request that was
/// cancelled before its turn, or one that gave way to the agent, does not count).
pub fn completion_runs() -> u64 {
    RUNS.load(Ordering::Relaxed)
}

/// The FIM special tokens of a vocabulary, by id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FimTokens {
    /// `<|fim_prefix|>`.
    pub prefix: u32,
    /// `<|fim_suffix|>`.
    pub suffix: u32,
    /// `<|fim_middle|>`.
    pub middle: u32,
    /// `<|repo_name|>`, when the model has repository-level tokens.
    pub repo_name: Option<u32>,
    /// `<|file_sep|>`, likewise.
    pub file_sep: Option<u32>,
}

impl FimTokens {
    /// The FIM tokens of `tokenizer`'s vocabulary; an error naming the model's lack
    /// when it has none (a chat-only model cannot fill in the middle).
    pub fn of(tokenizer: &Tokenizer) -> Result<Self, EngineError> {
        let id = |t: &str| tokenizer.token_id(t).filter(|&i| tokenizer.is_special(i));
        match (
            id("<|fim_prefix|>"),
            id("<|fim_suffix|>"),
            id("<|fim_middle|>"),
        ) {
            (Some(prefix), Some(suffix), Some(middle)) => Ok(Self {
                prefix,
                suffix,
                middle,
                repo_name: id("<|repo_name|>"),
                file_sep: id("<|file_sep|>"),
            }),
            _ => Err(EngineError::Unsupported(
                "this model has no fill-in-the-middle tokens (<|fim_prefix|>, <|fim_suffix|>, \
                 <|fim_middle|>); completion needs a code model such as qwen2.5-coder"
                    .into(),
            )),
        }
    }
}

/// The prompt for `req`: context chunks (repository format, when the vocabulary has
/// it), then prefix, suffix, middle. Chunks are left out, oldest first, then the
/// prefix's first lines and the suffix's last lines, until the prompt and `room`
/// generated tokens fit in `context` tokens.
pub fn fim_prompt(
    tokenizer: &Tokenizer,
    ids: &FimTokens,
    req: &FimRequest,
    context: usize,
    room: usize,
) -> Vec<u32> {
    let mut chunks = &req.context[..];
    let mut prefix = req.prefix.as_str();
    let mut suffix = req.suffix.as_str();
    loop {
        let prompt = render(tokenizer, ids, &req.path, chunks, prefix, suffix);
        if prompt.len() + room <= context {
            return prompt;
        }
        if !chunks.is_empty() {
            chunks = &chunks[1..];
        } else if prefix.matches('\n').count() > 1 || suffix.matches('\n').count() > 1 {
            prefix = drop_first_lines(prefix);
            suffix = drop_last_lines(suffix);
        } else {
            // Two lines that do not fit: keep their ends near the cursor, in the plain
            // layout (so rare that the keystroke cache does not matter).
            let keep = context.saturating_sub(room) / 2;
            let p = tokenizer.encode(prefix);
            let s = tokenizer.encode(suffix);
            let mut out = vec![ids.prefix];
            out.extend(&p[p.len().saturating_sub(keep.saturating_sub(2))..]);
            out.push(ids.suffix);
            out.extend(&s[..s.len().min(keep.saturating_sub(2))]);
            out.push(ids.middle);
            return out;
        }
    }
}

fn render(
    tokenizer: &Tokenizer,
    ids: &FimTokens,
    path: &str,
    chunks: &[agentls_model::complete::ContextChunk],
    prefix: &str,
    suffix: &str,
) -> Vec<u32> {
    let mut out = Vec::new();
    if let (Some(repo), Some(sep)) = (ids.repo_name, ids.file_sep) {
        if !chunks.is_empty() {
            out.push(repo);
            out.extend(tokenizer.encode("workspace\n"));
            for chunk in chunks {
                out.push(sep);
                let mut text = format!("{}\n{}", chunk.path, chunk.text);
                if !text.ends_with('\n') {
                    text.push('\n');
                }
                out.extend(tokenizer.encode(&text));
            }
        }
        if !chunks.is_empty() || !path.is_empty() {
            out.push(sep);
            out.extend(tokenizer.encode(&format!("{path}\n")));
        }
    }
    let (lines, line) = split_cursor_line(prefix);
    out.push(ids.prefix);
    out.extend(tokenizer.encode(lines));
    out.push(ids.suffix);
    out.extend(tokenizer.encode(suffix));
    out.push(ids.middle);
    out.extend(tokenizer.encode(line));
    out
}

/// `text` without its first quarter of lines (at least one).
fn drop_first_lines(text: &str) -> &str {
    let lines = text.matches('\n').count();
    let drop = (lines / 4).max(1);
    let at = text
        .match_indices('\n')
        .nth(drop - 1)
        .map_or(text.len(), |(i, _)| i + 1);
    &text[at..]
}

/// `text` without its last quarter of lines (at least one).
fn drop_last_lines(text: &str) -> &str {
    let lines = text.matches('\n').count();
    if lines <= 1 {
        return text;
    }
    let keep = lines - (lines / 4).max(1);
    let at = text
        .match_indices('\n')
        .nth(keep.saturating_sub(1))
        .map_or(text.len(), |(i, _)| i + 1);
    &text[..at]
}

/// Token healing: takes the prompt's last token off when it is text (the cursor's line
/// after `<|fim_middle|>`) and returns its bytes, which the first tokens generated must
/// then spell again ([`heals`]).
///
/// The cursor cuts the text anywhere: in a word (`Pron|`), after an indentation. Read
/// as it is, the line ends in a token the model never saw end a piece of code there
/// (twelve spaces alone, where code has eleven and then ` let`), and the model goes on
/// from that odd split (a thirteenth space). Backed off by one token, the model picks
/// the natural tokens across the cursor.
fn heal_last_token(tokenizer: &Tokenizer, prompt: &mut Vec<u32>) -> Vec<u8> {
    match prompt.last() {
        Some(&last) if !tokenizer.is_special(last) && prompt.len() > 1 => {
            prompt.pop();
            tokenizer.token_bytes(last)
        }
        _ => Vec::new(),
    }
}

/// Whether a token of `bytes` may come next while `heal` is still to be spelled: it
/// spells the start of it, or all of it and more.
fn heals(bytes: &[u8], heal: &[u8]) -> bool {
    !bytes.is_empty() && (bytes.starts_with(heal) || heal.starts_with(bytes))
}

/// When a completion's tokens came, from the moment it was asked for, and what
/// drafting did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FimTiming {
    /// Until its prompt was read.
    pub prompt_read: Duration,
    /// Until its first token was chosen (`None`: none was, e.g. a zero budget).
    pub first_token: Option<Duration>,
    /// Until its last token was chosen (decoding ended).
    pub last_token: Duration,
    /// Tokens drafted by prompt lookup and checked.
    pub drafted: usize,
    /// Drafted tokens greedy decoding agreed with.
    pub accepted: usize,
}

/// Runs one completion on `engine` (greedy), from a request asked for at `asked`,
/// with prompt-lookup drafts when `lookup` is given.
pub fn run_fim(
    engine: &mut Engine,
    ids: &FimTokens,
    req: &FimRequest,
    rules: &StopRules,
    cancel: &CancellationToken,
    asked: Instant,
    lookup: Option<Lookup>,
) -> Result<(FimAnswer, FimTiming), ModelError> {
    if cancel.is_cancelled() {
        return Err(ModelError::aborted());
    }
    let max_new = (req.max_tokens.max(1) as usize).min(engine.info.context_length / 2);
    let mut prompt = fim_prompt(
        &engine.tokenizer,
        ids,
        req,
        engine.info.context_length,
        max_new,
    );
    let heal = heal_last_token(&engine.tokenizer, &mut prompt);
    RUNS.fetch_add(1, Ordering::Relaxed);
    engine.set_interrupt(Some(cancel.clone()));
    let read = engine.prefill(&prompt);
    engine.set_interrupt(None);
    let (logits, cached) = read.map_err(engine_error)?;
    let mut dec = Decoding {
        heal,
        text: String::new(),
        utf8: Utf8Stream::default(),
        tokens: 0,
        max_new,
        timing: FimTiming {
            prompt_read: asked.elapsed(),
            ..FimTiming::default()
        },
        asked,
    };
    let stop = decode(engine, &mut dec, logits, rules, cancel, lookup, &prompt)?;
    dec.timing.last_token = asked.elapsed();
    dec.text.push_str(&dec.utf8.finish());
    debug!(
        prompt = prompt.len(),
        cached,
        tokens = dec.tokens,
        drafted = dec.timing.drafted,
        accepted = dec.timing.accepted,
        ?stop,
        ms = dec.timing.last_token.as_millis() as u64,
        "completion"
    );
    Ok((
        FimAnswer {
            text: rules.finish(&dec.text),
            tokens: dec.tokens,
            cached_tokens: cached as u32,
            prompt_tokens: prompt.len() as u32,
            stop,
        },
        dec.timing,
    ))
}

/// A completion being decoded.
struct Decoding {
    /// Bytes of the user's the first tokens must spell again ([`heal_last_token`]).
    heal: Vec<u8>,
    text: String,
    utf8: Utf8Stream,
    tokens: u32,
    max_new: usize,
    timing: FimTiming,
    asked: Instant,
}

impl Decoding {
    /// Takes `token`, chosen next: `Some` when the completion ends with it.
    fn push(&mut self, engine: &Engine, token: u32, rules: &StopRules) -> Option<FimStop> {
        self.tokens += 1;
        let asked = self.asked;
        self.timing
            .first_token
            .get_or_insert_with(|| asked.elapsed());
        if engine.tokenizer.is_special(token) || engine.info.end_ids.contains(&token) {
            return Some(FimStop::EndOfText);
        }
        let mut bytes = engine.tokenizer.token_bytes(token);
        // The healed bytes were the user's, not the answer's.
        let healed = self.heal.len().min(bytes.len());
        self.heal.drain(..healed);
        bytes.drain(..healed);
        self.text.push_str(&self.utf8.push(&bytes));
        if rules.cut(&self.text).is_some() {
            return Some(FimStop::Rule);
        }
        (self.tokens as usize >= self.max_new).then_some(FimStop::Budget)
    }
}

/// Greedy decoding from the prompt's `logits`: a token per forward pass, or, with
/// `lookup`, the token and a draft of what follows it from the prompt (the text the
/// rules expect copied first: [`StopRules::copy_of`]), of which greedy decoding keeps
/// what it agrees with.
fn decode(
    engine: &mut Engine,
    dec: &mut Decoding,
    mut logits: Vec<f32>,
    rules: &StopRules,
    cancel: &CancellationToken,
    lookup: Option<Lookup>,
    prompt: &[u32],
) -> Result<FimStop, ModelError> {
    let mut sampler = Sampler::new(0.0, 1.0, 0);
    // What drafts are copied from: the text the answer is expected to copy (never fed
    // to the model; the drafter follows it from its first token), then the prompt and
    // the answer as it grows.
    let mut history = rules
        .copy_of()
        .map(|c| engine.tokenizer.encode(c))
        .unwrap_or_default();
    let mut drafter = lookup.map(|l| {
        let mut d = Drafter::new(l);
        if !history.is_empty() {
            d.follow(0);
        }
        d
    });
    history.extend_from_slice(prompt);
    let context = engine.info.context_length;
    let mut batch = Vec::new();
    loop {
        if cancel.is_cancelled() {
            return Err(ModelError::aborted());
        }
        if dec.tokens as usize >= dec.max_new {
            return Ok(FimStop::Budget);
        }
        let choice = if dec.heal.is_empty() {
            sampler.sample(&logits)
        } else {
            let (tokenizer, heal) = (&engine.tokenizer, &dec.heal);
            sampler.sample_constrained(&logits, &mut |t| {
                !tokenizer.is_special(t) && heals(&tokenizer.token_bytes(t), heal)
            })
        };
        let Some(token) = choice else {
            return Err(ModelError::new(
                ErrorClass::ProviderError,
                "local model: no token to choose (non-finite logits)",
            ));
        };
        if let Some(stop) = dec.push(engine, token, rules) {
            return Ok(stop);
        }
        history.push(token);
        batch.clear();
        batch.push(token);
        if let Some(d) = drafter.as_mut().filter(|_| dec.heal.is_empty()) {
            let room = (dec.max_new - dec.tokens as usize)
                .min(context.saturating_sub(engine.cached_len() + 2))
                .min(engine.batch_size().saturating_sub(1));
            let draft = d.draft(&history);
            batch.extend_from_slice(&draft[..draft.len().min(room)]);
        }
        if batch.len() == 1 {
            logits = engine.step(token).map_err(engine_error)?;
            continue;
        }
        // One forward pass over the token and its draft; keep the drafted tokens
        // greedy decoding picks from the batch's logits, drop the rest.
        let base = engine.cached_len();
        engine.eval_in_place(&batch).map_err(engine_error)?;
        let drafted = batch.len() - 1;
        let (mut accepted, mut ended) = (0, None);
        for (i, &t) in batch[1..].iter().enumerate() {
            if sampler.sample(engine.batch_logits(i)) != Some(t) {
                break;
            }
            accepted += 1;
            history.push(t);
            ended = dec.push(engine, t, rules);
            if ended.is_some() {
                break;
            }
        }
        dec.timing.drafted += drafted;
        dec.timing.accepted += accepted;
        if let Some(d) = drafter.as_mut() {
            d.outcome(drafted, accepted);
        }
        if let Some(stop) = ended {
            return Ok(stop);
        }
        logits = engine.batch_logits(accepted).to_vec();
        engine.truncate(base + 1 + accepted).map_err(engine_error)?;
    }
}

/// Whether a completer reads through a llama.cpp context of its own or the agent's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContextChoice {
    /// Its own context over the same weights: completions run beside agent sessions.
    Own,
    /// The agent's engine: a completion asked for while the engine is busy gives way
    /// at once with an empty answer.
    Shared,
}

/// What a completer on a local model will do, and why: what `agentls doctor` prints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompletionPlan {
    /// The choice.
    pub choice: ContextChoice,
    /// Estimated bytes of a second context of [`COMPLETION_CONTEXT`] tokens (its KV
    /// cache and compute buffers; the weights are shared).
    pub context_bytes: u64,
    /// `MemAvailable` from `/proc/meminfo`, when readable.
    pub available_bytes: Option<u64>,
}

impl CompletionPlan {
    /// The choice for a second context of `context_bytes` given `available_bytes`:
    /// its own when twice its estimate and [`HEADROOM`] fit; shared when they do not
    /// or available memory is unknown.
    pub fn decide(context_bytes: u64, available_bytes: Option<u64>) -> Self {
        let fits = available_bytes
            .is_some_and(|a| a >= context_bytes.saturating_mul(2).saturating_add(HEADROOM));
        Self {
            choice: if fits {
                ContextChoice::Own
            } else {
                ContextChoice::Shared
            },
            context_bytes,
            available_bytes,
        }
    }
}

impl fmt::Display for CompletionPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mib = |b: u64| b >> 20;
        let available = self
            .available_bytes
            .map_or("unknown".to_owned(), |a| format!("{} MiB", mib(a)));
        match self.choice {
            ContextChoice::Own => write!(
                f,
                "own context over the agent's weights (~{} MiB; {available} available)",
                mib(self.context_bytes)
            ),
            ContextChoice::Shared => write!(
                f,
                "shares the agent's context (a second needs ~{} MiB; {available} available): \
                 completions give way while an agent session runs",
                mib(self.context_bytes)
            ),
        }
    }
}

/// `MemAvailable` from `/proc/meminfo`, in bytes.
pub fn mem_available() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_mem_available(&info)
}

fn parse_mem_available(info: &str) -> Option<u64> {
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Estimated bytes of a context of `context` tokens reading `batch` tokens at a time
/// for the model at `path`, from its GGUF header: the f16 KV cache and the compute
/// buffers (dominated by a batch of logits).
pub fn context_bytes(path: &Path, context: u32, batch: u32) -> Result<u64, EngineError> {
    let open_err = |source| EngineError::Open {
        path: path.display().to_string(),
        source,
    };
    let file = std::fs::File::open(path).map_err(open_err)?;
    let md = gguf::read_metadata(&mut std::io::BufReader::new(file)).map_err(open_err)?;
    let arch = md
        .get("general.architecture")
        .and_then(gguf::Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let num = |key: &str| {
        md.get(&format!("{arch}.{key}"))
            .and_then(gguf::Value::as_u32)
            .map(u64::from)
    };
    let (Some(layers), Some(embd), Some(heads)) = (
        num("block_count"),
        num("embedding_length"),
        num("attention.head_count"),
    ) else {
        return Err(EngineError::Unsupported(format!(
            "{}: no layer and head counts in the GGUF header",
            path.display()
        )));
    };
    let kv_heads = num("attention.head_count_kv").unwrap_or(heads);
    let vocab = match md.get("tokenizer.ggml.tokens") {
        Some(gguf::Value::Array(a)) => a.len() as u64,
        _ => 0,
    };
    let head_dim = embd / heads.max(1);
    let kv = 2 * layers * u64::from(context) * kv_heads * head_dim * 2;
    let compute = vocab * 4 * u64::from(batch) + embd * u64::from(batch) * 4 * 16;
    Ok(kv + compute)
}

/// A completer on the embedded engine.
pub struct LocalCompleter {
    name: String,
    choice: ContextChoice,
    ids: FimTokens,
    engine: Arc<Mutex<Engine>>,
    /// Completions take turns here first: a completion finishing its last token
    /// does not make the next one see a busy (shared) engine and give way.
    turn: Arc<Mutex<()>>,
    /// Prompt-lookup drafting for rewrites ([`StopRules::copy_of`]).
    speculate: Option<Lookup>,
}

impl fmt::Debug for LocalCompleter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalCompleter")
            .field("name", &self.name)
            .field("choice", &self.choice)
            .finish_non_exhaustive()
    }
}

type Reply = Result<(FimAnswer, FimTiming), ModelError>;

impl LocalCompleter {
    /// A completer on `engine` (a context of its own when `choice` is
    /// [`ContextChoice::Own`], the agent's when [`ContextChoice::Shared`]); an error
    /// when the model has no FIM tokens.
    pub fn new(
        name: impl Into<String>,
        engine: Arc<Mutex<Engine>>,
        choice: ContextChoice,
    ) -> Result<Self, ModelError> {
        let ids = FimTokens::of(&lock(&engine).tokenizer).map_err(engine_error)?;
        Ok(Self {
            name: name.into(),
            choice,
            ids,
            engine,
            turn: Arc::default(),
            speculate: Some(Lookup::default()),
        })
    }

    /// Sets prompt-lookup drafting (on by default; `None` turns it off). It applies to
    /// rewrites ([`StopRules::rewrite`]: a next edit's window written again), whose
    /// answer mostly copies a text the rules know; plain completions decode a token
    /// at a time.
    pub fn with_speculation(mut self, lookup: Option<Lookup>) -> Self {
        self.speculate = lookup;
        self
    }

    /// Whether it has a context of its own or shares the agent's.
    pub fn choice(&self) -> ContextChoice {
        self.choice
    }

    /// Runs one completion on a thread of its own, which ends with it: a thread
    /// that has run llama.cpp keeps its OpenMP team while it lives, and teams beyond
    /// the cores slow every model call in the process (see `bench_model` in agentls-eval).
    /// Requests wait for the engine in turn; one cancelled meanwhile costs nothing.
    fn submit(
        &self,
        req: &FimRequest,
        rules: &StopRules,
        cancel: CancellationToken,
    ) -> Result<oneshot::Receiver<Reply>, ModelError> {
        let (reply, rx) = oneshot::channel();
        let (req, rules, asked) = (req.clone(), rules.clone(), Instant::now());
        let (engine, ids, choice) = (Arc::clone(&self.engine), self.ids, self.choice);
        let lookup = self.speculate.filter(|_| rules.copy_of().is_some());
        let turn = Arc::clone(&self.turn);
        std::thread::Builder::new()
            .name("agentls-complete".into())
            .spawn(move || {
                let _turn = turn
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let job = Job {
                    ids: &ids,
                    choice,
                    req: &req,
                    rules: &rules,
                    cancel: &cancel,
                    asked,
                    lookup,
                };
                let answer = run_job(&engine, &job);
                let _ = reply.send(answer);
            })
            .map_err(|e| {
                ModelError::new(
                    ErrorClass::UnexpectedEnvironment,
                    format!("cannot start a completion thread: {e}"),
                )
            })?;
        Ok(rx)
    }

    /// Completes and waits (blocking; not from inside an async runtime), with the
    /// times of the prompt read and the first and last token: for benchmarks.
    pub fn complete_timed(
        &self,
        req: &FimRequest,
        rules: &StopRules,
        cancel: CancellationToken,
    ) -> Reply {
        self.submit(req, rules, cancel)?
            .blocking_recv()
            .map_err(|_| gone())?
    }
}

fn gone() -> ModelError {
    ModelError::new(
        ErrorClass::ProviderError,
        "the completion thread ended without an answer",
    )
}

impl Completer for LocalCompleter {
    fn name(&self) -> &str {
        &self.name
    }

    fn complete<'a>(
        &'a self,
        req: &'a FimRequest,
        rules: &'a StopRules,
        cancel: CancellationToken,
    ) -> FimFuture<'a> {
        Box::pin(async move {
            // Dropping the future (a request superseded at the LSP layer) stops the
            // work too.
            let job = cancel.child_token();
            let _stop_on_drop = job.clone().drop_guard();
            let rx = self.submit(req, rules, job.clone())?;
            let (answer, _) = answer_or_abort(rx, &job, gone).await?;
            Ok(answer)
        })
    }
}

fn lock(engine: &Mutex<Engine>) -> MutexGuard<'_, Engine> {
    engine.lock().unwrap_or_else(|poisoned| {
        // A panic mid-generation leaves a cache we cannot trust.
        let mut e = poisoned.into_inner();
        e.reset();
        e
    })
}

/// One completion to run.
struct Job<'a> {
    ids: &'a FimTokens,
    choice: ContextChoice,
    req: &'a FimRequest,
    rules: &'a StopRules,
    cancel: &'a CancellationToken,
    asked: Instant,
    lookup: Option<Lookup>,
}

fn run_job(engine: &Mutex<Engine>, job: &Job<'_>) -> Reply {
    if job.cancel.is_cancelled() {
        return Err(ModelError::aborted());
    }
    let guard = match job.choice {
        ContextChoice::Own => Some(lock(engine)),
        ContextChoice::Shared => match engine.try_lock() {
            Ok(g) => Some(g),
            Err(TryLockError::Poisoned(p)) => {
                let mut e = p.into_inner();
                e.reset();
                Some(e)
            }
            Err(TryLockError::WouldBlock) => None,
        },
    };
    match guard {
        Some(mut engine) => run_fim(
            &mut engine,
            job.ids,
            job.req,
            job.rules,
            job.cancel,
            job.asked,
            job.lookup,
        ),
        None => {
            debug!("completion skipped: the agent is using the shared engine");
            Ok((
                FimAnswer {
                    text: String::new(),
                    tokens: 0,
                    cached_tokens: 0,
                    prompt_tokens: 0,
                    stop: FimStop::EndOfText,
                },
                FimTiming::default(),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_context_needs_twice_its_estimate_and_headroom() {
        let need = 100 << 20;
        assert_eq!(
            CompletionPlan::decide(need, Some(2 * need + HEADROOM)).choice,
            ContextChoice::Own
        );
        assert_eq!(
            CompletionPlan::decide(need, Some(2 * need + HEADROOM - 1)).choice,
            ContextChoice::Shared
        );
        let unknown = CompletionPlan::decide(need, None);
        assert_eq!(unknown.choice, ContextChoice::Shared);
        assert!(
            unknown.to_string().contains("unknown available"),
            "{unknown}"
        );
    }

    #[test]
    fn mem_available_is_read_in_kib() {
        let info = "MemTotal:       24000000 kB\nMemAvailable:   1024 kB\n";
        assert_eq!(parse_mem_available(info), Some(1024 * 1024));
        assert_eq!(parse_mem_available("MemTotal: 1 kB\n"), None);
    }

    #[test]
    fn a_healing_token_spells_the_cut_token_first() {
        let heal = b"            ";
        // Eleven spaces, then a word with its space: the natural split.
        assert!(heals(b"           ", heal));
        assert!(heals(b"            let", heal));
        assert!(!heals(b" let", heal));
        assert!(!heals(b"", heal));
        assert!(heals(b"oun", b"o"));
        assert!(!heals(b"x", b"o"));
    }

    #[test]
    fn lines_are_dropped_from_the_far_ends() {
        assert_eq!(drop_first_lines("a\nb\nc\nd\ne\n"), "b\nc\nd\ne\n");
        assert_eq!(drop_last_lines("a\nb\nc\nd\ne\n"), "a\nb\nc\nd\n");
        assert_eq!(drop_last_lines("\nend"), "\nend");
    }
}
