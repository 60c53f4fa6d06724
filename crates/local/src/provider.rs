//! [`LocalProvider`]: the engine behind the model layer's [`Provider`] interface.
//! Generation runs on its own thread; events reach the async consumer through a
//! bounded channel, and cancellation is checked before every token. The consumer
//! also races the cancel token against that channel: the engine notices a cancel only
//! between prefill batches, and a batch of a long prompt can take a second on two
//! cores, which would carry an attempt past its time limit.

use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use agentls_model::{
    ChatRequest, ErrorClass, EventStream, ManyStream, ModelError, ModelProfile, Part, Provider,
    RUNAWAY_STOP, Role, Sampling, ScoreFuture, SequenceEnds, StopReason, StreamEvent, Usage,
    lenient,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info_span, warn};

use crate::constrain::{CallGrammar, Check};
use crate::engine::{Engine, EngineError, EngineOptions};
use crate::prefix_store::PrefixStore;
use crate::sampler::Sampler;
use crate::speculate::{Drafter, Lookup};
use crate::template::TOOL_CALL_OPEN;
use crate::tokenizer::Utf8Stream;

mod many;

/// Seed for temperature > 0 when the request names none; fixed so that runs can be
/// replayed.
const SEED: u64 = 0x5eed;

/// Tokens left in the budget from which an open tool call is watched, to be closed
/// in time (its shortest valid ending is a few tokens in practice).
const CLOSE_WITHIN: usize = 256;

/// Runaway text: answer text whose last tokens are one piece of at most
/// [`RUNAWAY_PERIOD`] tokens over and over, at least [`RUNAWAY_REPEATS`] times and
/// over at least [`RUNAWAY_SPAN`] tokens. Small models at temperature 0 fall into such
/// loops ("done. done. done." to the end of the budget); no answer worth reading
/// repeats itself that way. Tool calls are left alone: their grammar bounds them, and a
/// file's content may repeat lines.
const RUNAWAY_SPAN: usize = 192;
/// See [`RUNAWAY_SPAN`].
const RUNAWAY_REPEATS: usize = 8;
/// See [`RUNAWAY_SPAN`].
const RUNAWAY_PERIOD: usize = 64;

/// The length of the piece `tokens` ends repeating, if it is runaway text.
fn runaway(tokens: &[u32]) -> Option<usize> {
    for period in 1..=RUNAWAY_PERIOD {
        let span = RUNAWAY_SPAN.max(period * RUNAWAY_REPEATS);
        if tokens.len() < span {
            // Spans only grow with the period.
            return None;
        }
        let tail = &tokens[tokens.len() - span..];
        if tail[period..].iter().zip(tail).all(|(a, b)| a == b) {
            return Some(period);
        }
    }
    None
}

/// A GGUF model running in process.
#[derive(Clone)]
pub struct LocalProvider {
    name: String,
    profile: ModelProfile,
    engine: Arc<Mutex<Engine>>,
    constrain: bool,
    speculate: Option<Lookup>,
    call_first: bool,
    prefix_store: Option<PrefixStore>,
}

impl std::fmt::Debug for LocalProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalProvider")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

pub(crate) fn engine_error(e: EngineError) -> ModelError {
    let class = match e {
        EngineError::Open { .. } | EngineError::Unsupported(_) | EngineError::Tokenizer(_) => {
            ErrorClass::UnexpectedEnvironment
        }
        EngineError::Llama(_) => ErrorClass::ProviderError,
        EngineError::Interrupted => return ModelError::aborted(),
    };
    ModelError::new(class, format!("local model: {e}"))
}

impl LocalProvider {
    /// Loads the GGUF at `path` (blocking: seconds for large files).
    pub fn load(name: impl Into<String>, path: &Path) -> Result<Self, ModelError> {
        Self::load_with(name, path, &EngineOptions::default())
    }

    /// Loads the GGUF at `path` with the given engine options.
    pub fn load_with(
        name: impl Into<String>,
        path: &Path,
        opts: &EngineOptions,
    ) -> Result<Self, ModelError> {
        let engine = Engine::load_with(path, opts).map_err(engine_error)?;
        Ok(Self::from_engine(name, engine))
    }

    /// Wraps a loaded engine.
    pub fn from_engine(name: impl Into<String>, engine: Engine) -> Self {
        let profile = ModelProfile {
            context_window: engine.info.context_length.min(32_768) as u32,
            max_output: 2_048,
            // Tools go into the template and calls come back as events.
            native_tools: true,
            // Every tool in the prompt costs prompt processing on each run.
            lean_tools: true,
            ..ModelProfile::builtin("qwen2.5-coder")
        };
        Self {
            name: name.into(),
            profile,
            engine: Arc::new(Mutex::new(engine)),
            constrain: true,
            // Greedy calls only; pays on copies, costs nothing measurable on free
            // text (see `speculate`'s module doc and `bench model`).
            speculate: Some(Lookup::default()),
            call_first: true,
            prefix_store: None,
        }
    }

    /// Whether an answer to a new user message (no tool results in it) must open
    /// with a tool call when tools are offered (on by default). Small models asked
    /// for an action often describe the call in prose or a fenced block instead of
    /// making it; opening the call for them puts the grammar in charge at once.
    pub fn with_call_first(mut self, on: bool) -> Self {
        self.call_first = on;
        self
    }

    /// Sets prompt-lookup drafting (on by default; `None` turns it off). It only
    /// applies at temperature 0; drafts are checked against the greedy choice (see `speculate`'s module doc
    /// for what is and is not guaranteed).
    pub fn with_speculation(mut self, lookup: Option<Lookup>) -> Self {
        self.speculate = lookup;
        self
    }

    /// Keeps the fixed head of prompts (system prompt and tools, when the request
    /// says which part is fixed) read once in `store` across processes; off (`None`)
    /// by default.
    pub fn with_prefix_store(mut self, store: Option<PrefixStore>) -> Self {
        self.prefix_store = store;
        self
    }

    /// Sets how sessions on this provider solve tasks (the profile's `solver`):
    /// `agentls demo` takes the small-model pipeline.
    pub fn with_solver(mut self, solver: agentls_model::Solver) -> Self {
        self.profile.solver = solver;
        self
    }

    /// The engine behind this provider (shared by its clones), for a completer that
    /// shares its context or makes a second one over its weights.
    pub(crate) fn engine(&self) -> &Arc<Mutex<Engine>> {
        &self.engine
    }

    /// Turns constrained tool calls off (for measuring what they buy).
    pub fn with_constrained_calls(mut self, on: bool) -> Self {
        self.constrain = on;
        self
    }
}

type Tx = mpsc::Sender<Result<StreamEvent, ModelError>>;

impl Provider for LocalProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn profile(&self) -> &ModelProfile {
        &self.profile
    }

    fn constrains_arguments(&self) -> bool {
        self.constrain
    }

    fn score<'a>(
        &'a self,
        req: &'a ChatRequest,
        prefix: &'a str,
        continuations: &'a [String],
        cancel: CancellationToken,
    ) -> Option<ScoreFuture<'a>> {
        Some(self.score_owned(req, prefix, continuations, cancel))
    }

    fn stream(&self, req: &ChatRequest, cancel: CancellationToken) -> EventStream {
        let (tx, rx) = mpsc::channel(256);
        let job = self.job(req, cancel.clone());
        let spawned = std::thread::Builder::new()
            .name("agentls-local".into())
            .spawn(move || job.run(&tx));
        if let Err(e) = spawned {
            let (tx, rx) = mpsc::channel(1);
            let _ = tx.try_send(Err(ModelError::new(
                ErrorClass::UnexpectedEnvironment,
                format!("cannot start the local model thread: {e}"),
            )));
            return receiver_stream(rx, cancel);
        }
        receiver_stream(rx, cancel)
    }

    /// `None` for a request with tools (tool calls are decoded one at a time, by
    /// [`Provider::stream`]). More samplings than
    /// [`MAX_SEQUENCES`](crate::engine::MAX_SEQUENCES) are decoded
    /// that many at a time, the prompt read once.
    fn stream_many(
        &self,
        req: &ChatRequest,
        samplings: &[Sampling],
        cancel: CancellationToken,
    ) -> Option<ManyStream> {
        if !req.tools.is_empty() {
            return None;
        }
        let (tx, rx) = mpsc::channel(256);
        let job = self.job(req, cancel.clone());
        let samplings = samplings.to_vec();
        let ends = SequenceEnds::default();
        let theirs = ends.clone();
        let spawned = std::thread::Builder::new()
            .name("agentls-local-many".into())
            .spawn(move || job.run_many(&samplings, &tx, &theirs));
        if let Err(e) = spawned {
            let (tx, rx) = mpsc::channel(1);
            let _ = tx.try_send(Err(ModelError::new(
                ErrorClass::UnexpectedEnvironment,
                format!("cannot start the local model thread: {e}"),
            )));
            return Some(ManyStream::new(receiver_stream(rx, cancel), ends));
        }
        Some(ManyStream::new(receiver_stream(rx, cancel), ends))
    }
}

impl LocalProvider {
    fn job(&self, req: &ChatRequest, cancel: CancellationToken) -> Job {
        Job {
            engine: Arc::clone(&self.engine),
            req: req.clone(),
            max_output: self.profile.max_output,
            constrain: self.constrain,
            speculate: self.speculate,
            call_first: self.call_first,
            prefix_store: self.prefix_store.clone(),
            cancel,
            span: info_span!("local_model_call", model = %self.name),
        }
    }

    /// [`Provider::score`]'s work, on its own thread (the engine blocks).
    pub(crate) fn score_owned(
        &self,
        req: &ChatRequest,
        prefix: &str,
        continuations: &[String],
        cancel: CancellationToken,
    ) -> ScoreFuture<'static> {
        let job = self.job(req, cancel.clone());
        let (prefix, continuations) = (prefix.to_owned(), continuations.to_vec());
        let (tx, rx) = tokio::sync::oneshot::channel();
        let spawned = std::thread::Builder::new()
            .name("agentls-local-score".into())
            .spawn(move || {
                let _enter = job.span.clone().entered();
                let _ = tx.send(job.score(&prefix, &continuations));
            });
        Box::pin(async move {
            spawned.map_err(|e| {
                ModelError::new(
                    ErrorClass::UnexpectedEnvironment,
                    format!("cannot start the local model thread: {e}"),
                )
            })?;
            answer_or_abort(rx, &cancel, || {
                ModelError::new(
                    ErrorClass::ProviderError,
                    "the local model's scoring thread ended without an answer",
                )
            })
            .await
        })
    }
}

/// A model thread's answer, or the abort error as soon as `cancel` fires (the thread
/// then finishes its batch alone; the engine's mutex holds the next call back).
/// `gone` is the error for a thread that ended without answering.
pub(crate) async fn answer_or_abort<T>(
    rx: tokio::sync::oneshot::Receiver<Result<T, ModelError>>,
    cancel: &CancellationToken,
    gone: impl FnOnce() -> ModelError,
) -> Result<T, ModelError> {
    tokio::select! {
        biased;
        answer = rx => answer.unwrap_or_else(|_| Err(gone())),
        () = cancel.cancelled() => Err(ModelError::aborted()),
    }
}

/// The generation thread's events, ended by the abort error as soon as `cancel` fires
/// rather than when the thread next looks at it. Events already sent come first; an
/// error is the thread's last word, so it ends the stream too (no second abort).
fn receiver_stream<T: Send + 'static>(
    rx: mpsc::Receiver<Result<T, ModelError>>,
    cancel: CancellationToken,
) -> Pin<Box<dyn futures::Stream<Item = Result<T, ModelError>> + Send>> {
    Box::pin(futures::stream::unfold(
        Some((rx, cancel)),
        |state| async move {
            let (mut rx, cancel) = state?;
            tokio::select! {
                biased;
                item = rx.recv() => {
                    let item = item?;
                    let more = item.is_ok().then_some((rx, cancel));
                    Some((item, more))
                }
                () = cancel.cancelled() => Some((Err(ModelError::aborted()), None)),
            }
        },
    ))
}

struct Job {
    engine: Arc<Mutex<Engine>>,
    req: ChatRequest,
    max_output: u32,
    constrain: bool,
    speculate: Option<Lookup>,
    call_first: bool,
    prefix_store: Option<PrefixStore>,
    cancel: CancellationToken,
    span: tracing::Span,
}

/// The consumer went away: stop quietly.
struct Gone;

/// Where a call's events go (the stream's channel, or a sequence's tag in a
/// [`ManyStream`]'s).
type Emit<'a> = dyn Fn(StreamEvent) -> Result<(), Gone> + 'a;

fn send(tx: &Tx, ev: StreamEvent) -> Result<(), Gone> {
    tx.blocking_send(Ok(ev)).map_err(|_| Gone)
}

impl Job {
    fn run(self, tx: &Tx) {
        let _enter = self.span.clone().entered();
        let result = self.generate(tx);
        match result {
            Ok(Ok(())) | Err(Gone) => {}
            Ok(Err(e)) => {
                warn!(class = ?e.class, error = %e.message, "local model call failed");
                let _ = tx.blocking_send(Err(e));
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Engine> {
        match self.engine.lock() {
            Ok(e) => e,
            // A panic mid-generation leaves a cache we cannot trust.
            Err(poisoned) => {
                let mut e = poisoned.into_inner();
                e.reset();
                e
            }
        }
    }

    /// The log-likelihood of each continuation after the prompt and `prefix`.
    fn score(&self, prefix: &str, continuations: &[String]) -> Result<Vec<f64>, ModelError> {
        let mut engine = self.lock();
        if self.cancel.is_cancelled() {
            return Err(ModelError::aborted());
        }
        let mut prompt = self.prompt(&engine)?.tokens;
        prompt.extend(engine.tokenizer.encode(prefix));
        let continuations: Vec<Vec<u32>> = continuations
            .iter()
            .map(|c| engine.tokenizer.encode(c))
            .collect();
        engine.set_interrupt(Some(self.cancel.clone()));
        let scored = engine.score(&prompt, &continuations);
        engine.set_interrupt(None);
        scored.map_err(engine_error)
    }

    fn generate(&self, tx: &Tx) -> Result<Result<(), ModelError>, Gone> {
        let mut engine = self.lock();
        let (prompt, logits, cached) = match self.read_prompt(&mut engine) {
            Ok(read) => read,
            Err(e) => return Ok(Err(e)),
        };
        let decoded = match self.decode(&mut engine, &prompt, logits, tx)? {
            Ok(d) => d,
            Err(e) => return Ok(Err(e)),
        };
        self.finish(decoded, prompt.tokens.len(), cached, &|ev| send(tx, ev))
    }

    /// Renders and reads the request's prompt: the prompt, the logits for the first
    /// token and how many of its tokens came from the cache.
    fn read_prompt(&self, engine: &mut Engine) -> Result<(Prompt, Vec<f32>, usize), ModelError> {
        if self.cancel.is_cancelled() {
            return Err(ModelError::aborted());
        }
        let prompt = self.prompt(engine)?;
        let started = Instant::now();
        engine.set_interrupt(Some(self.cancel.clone()));
        let read =
            engine.prefill_with_store(&prompt.tokens, prompt.head, self.prefix_store.as_ref());
        engine.set_interrupt(None);
        let (logits, cached) = read.map_err(engine_error)?;
        debug!(
            prompt = prompt.tokens.len(),
            cached,
            prefill_ms = started.elapsed().as_millis() as u64,
            "prompt read"
        );
        Ok((prompt, logits, cached))
    }

    /// The request's prompt as tokens: the template's rendering, then what the harness
    /// writes for the model at the start of its answer (a tool call's opening, or a code
    /// block's).
    fn prompt(&self, engine: &Engine) -> Result<Prompt, ModelError> {
        let pieces = engine.info.template.render(&self.req);
        // The fixed head's tokens, encoded on their own: their count is where a saved
        // head ends.
        let split = engine.info.template.fixed_head_len(&self.req);
        let (mut tokens, head) = engine
            .encode_pieces(&pieces[..split])
            .and_then(|h| Ok((h, engine.encode_pieces(&pieces[split..])?)))
            .map(|(mut h, rest)| {
                let head = h.len();
                h.extend(rest);
                (h, head)
            })
            .map_err(engine_error)?;
        let mut opened = String::new();
        if self.call_first && !self.req.tools.is_empty() && new_user_turn(&self.req) {
            match engine.tokenizer.token_id(TOOL_CALL_OPEN) {
                Some(id) => {
                    tokens.push(id);
                    tokens.extend(engine.tokenizer.encode("\n"));
                }
                None => tokens.extend(engine.tokenizer.encode(&format!("{TOOL_CALL_OPEN}\n"))),
            }
            opened = format!("{TOOL_CALL_OPEN}\n");
        } else if let Some(fence) = self.code_fence() {
            // The answer is a code block: the harness opens it, and its closing fence
            // (a stop sequence) ends the answer, so format and end are not the
            // model's to break.
            tokens.extend(engine.tokenizer.encode(&fence));
            opened = fence;
            if let Some(start) = self.req.answer_start.as_deref() {
                tokens.extend(engine.tokenizer.encode(start));
                opened.push_str(start);
            }
        }
        let context = engine.info.context_length;
        if tokens.len() >= context {
            return Err(ModelError::new(
                ErrorClass::InvalidArguments,
                format!(
                    "the prompt has {} tokens; the local model's context is {context}",
                    tokens.len()
                ),
            ));
        }
        let max_new =
            (self.req.max_tokens.unwrap_or(self.max_output) as usize).min(context - tokens.len());
        let mut stops = self.req.stop.clone();
        if !opened.is_empty() && self.code_fence().is_some() {
            stops.push(CODE_CLOSE.to_owned());
        }
        Ok(Prompt {
            tokens,
            head,
            opened,
            max_new,
            stops,
        })
    }

    /// The opening of the code block the request asks for, when it asks for one and
    /// offers no tools.
    fn code_fence(&self) -> Option<String> {
        let lang = self.req.code_block.as_deref()?;
        self.req.tools.is_empty().then(|| format!("```{lang}\n"))
    }

    /// Tool calls are constrained to the offered tools and their schemas.
    fn grammar(&self) -> Option<CallGrammar> {
        (self.constrain && !self.req.tools.is_empty()).then(|| {
            // Tools refused this step are left out, unless that leaves none.
            let allowed = |t: &&agentls_model::ToolDef| !self.req.forbidden_tools.contains(&t.name);
            let offered: Vec<_> = if self.req.tools.iter().any(|t| allowed(&t)) {
                self.req.tools.iter().filter(allowed).collect()
            } else {
                self.req.tools.iter().collect()
            };
            CallGrammar::new(
                offered
                    .into_iter()
                    .map(|t| (t.name.clone(), t.parameters.clone()))
                    .collect(),
            )
            .with_paths(self.req.paths.clone())
        })
    }

    /// Generates the answer from the prompt's `logits` on: token by token, or a token
    /// and its prompt-lookup draft per forward pass at temperature 0.
    fn decode(
        &self,
        engine: &mut Engine,
        prompt: &Prompt,
        mut logits: Vec<f32>,
        tx: &Tx,
    ) -> Result<Result<Decoded, ModelError>, Gone> {
        let temperature = self.req.sampling.temperature.unwrap_or(0.0);
        let top_p = self.req.sampling.top_p.unwrap_or(1.0);
        let seed = self.req.sampling.seed.unwrap_or(SEED);
        let mut sampler = Sampler::new(temperature, top_p, seed);
        let mut out = Output::new(!self.req.tools.is_empty(), &prompt.stops);
        out.text.clone_from(&prompt.opened);
        let grammar = self.grammar();
        // Drafts are verified against greedy choices only: sampling would change the
        // output's distribution.
        let mut drafter = self
            .speculate
            .filter(|_| temperature <= 0.0)
            .map(Drafter::new);
        // What drafts are copied from: a predicted output if the caller has one
        // (never fed to the model), the prompt, then the answer as it grows.
        let mut history = self
            .req
            .prediction
            .as_deref()
            .map(|p| engine.tokenizer.encode(p))
            .unwrap_or_default();
        history.extend_from_slice(&prompt.tokens);
        let (max_new, context) = (prompt.max_new, engine.info.context_length);
        let mut dec = Gen {
            utf8: Utf8Stream::default(),
            generated: 0,
            stops: &prompt.stops,
            answer: Vec::new(),
        };
        let mut stop = StopReason::MaxTokens;
        let mut batch = Vec::new();
        let emit = |ev| send(tx, ev);
        'generate: while dec.generated < max_new {
            if self.cancel.is_cancelled() {
                return Ok(Err(ModelError::aborted()));
            }
            if tx.is_closed() {
                return Err(Gone);
            }
            let left = max_new - dec.generated;
            // A call near the end of the budget is closed in time with the shortest
            // valid ending, so that every call the model opens parses and validates.
            let ending = || {
                grammar
                    .as_ref()
                    .zip(out.call_tail())
                    .and_then(|(g, tail)| g.completion(tail))
                    .map(|c| engine.tokenizer.encode(&c))
            };
            let forced = (left <= CLOSE_WITHIN)
                .then(ending)
                .flatten()
                .filter(|ids| ids.len() + 1 >= left);
            let chosen = match forced {
                Some(_) => None,
                None => choose(&mut sampler, &logits, grammar.as_ref(), &out, engine),
            };
            let Some(token) = chosen else {
                // Forced, or no token keeps the call valid: end it the shortest way.
                let Some(ids) = forced.or_else(ending) else {
                    return Ok(Err(ModelError::provider("local model: no token to sample")));
                };
                debug!(
                    tokens = ids.len(),
                    left, "tool call closed by its shortest ending"
                );
                for id in ids {
                    dec.push(id, engine, &mut out, &emit)?;
                }
                stop = StopReason::EndTurn;
                break;
            };
            history.push(token);
            if let Some(reason) = dec.push(token, engine, &mut out, &emit)? {
                stop = reason;
                break;
            }
            if dec.generated >= max_new {
                break;
            }
            batch.clear();
            batch.push(token);
            // No drafts near the budget's end inside a call: the closing must fit.
            let near_end = out.call_tail().is_some() && max_new - dec.generated <= CLOSE_WITHIN;
            if let Some(d) = drafter.as_mut().filter(|_| !near_end) {
                let room = (max_new - dec.generated).min(context - engine.cached_len() - 1);
                let draft = d.draft(&history);
                batch.extend_from_slice(&draft[..draft.len().min(room)]);
            }
            if batch.len() == 1 {
                logits = match engine.step(token) {
                    Ok(l) => l,
                    Err(e) => return Ok(Err(engine_error(e))),
                };
                continue;
            }
            // One forward pass over the token and its draft; keep the drafted
            // tokens greedy decoding picks from the batch's logits, drop the rest.
            let base = engine.cached_len();
            if let Err(e) = engine.eval_in_place(&batch) {
                return Ok(Err(engine_error(e)));
            }
            let drafted = batch.len() - 1;
            let mut accepted = 0;
            let mut ended = None;
            for (i, &d) in batch[1..].iter().enumerate() {
                if self.cancel.is_cancelled() {
                    return Ok(Err(ModelError::aborted()));
                }
                let at = engine.batch_logits(i);
                if choose(&mut sampler, at, grammar.as_ref(), &out, engine) != Some(d) {
                    break;
                }
                accepted += 1;
                history.push(d);
                ended = dec.push(d, engine, &mut out, &emit)?;
                if ended.is_some() || dec.generated >= max_new {
                    break;
                }
            }
            if let Some(d) = drafter.as_mut() {
                d.outcome(drafted, accepted);
            }
            logits = engine.batch_logits(accepted).to_vec();
            if let Err(e) = engine.truncate(base + 1 + accepted) {
                return Ok(Err(engine_error(e)));
            }
            if let Some(reason) = ended {
                stop = reason;
                break 'generate;
            }
        }
        if let Some(d) = drafter.as_ref().filter(|d| d.drafted > 0) {
            debug!(
                drafted = d.drafted,
                accepted = d.accepted,
                "prompt-lookup drafts"
            );
        }
        if stop != StopReason::StopSequence {
            out.text.push_str(&dec.utf8.finish());
        }
        Ok(Ok(Decoded {
            out,
            generated: dec.generated,
            stop,
        }))
    }

    /// Sends what is left of the answer, its tool calls, the usage and the stop.
    fn finish(
        &self,
        decoded: Decoded,
        prompt: usize,
        cached: usize,
        emit: &Emit<'_>,
    ) -> Result<Result<(), ModelError>, Gone> {
        let Decoded {
            mut out,
            generated,
            mut stop,
        } = decoded;
        if self.code_fence().is_some() && !out.text.trim_end().ends_with("```") {
            // The block the harness opened is closed, whether the stop sequence, the
            // end of the turn or the budget ended it.
            out.text.push_str(CODE_CLOSE);
            if stop == StopReason::StopSequence {
                stop = StopReason::EndTurn;
            }
        }
        let offered: Vec<&str> = self.req.tools.iter().map(|t| t.name.as_str()).collect();
        let (rest, calls) = out.finish(&offered);
        if let Some(text) = rest {
            emit(StreamEvent::TextDelta(text))?;
        }
        for (i, call) in calls.iter().enumerate() {
            let id = format!("call_{i}");
            emit(StreamEvent::ToolCallStart {
                id: id.clone(),
                name: call.name.clone(),
            })?;
            emit(StreamEvent::ToolCallDelta {
                id: id.clone(),
                arguments: call.arguments.clone(),
            })?;
            emit(StreamEvent::ToolCallEnd {
                id,
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            })?;
        }
        if !calls.is_empty() && stop == StopReason::EndTurn {
            stop = StopReason::ToolUse;
        }
        emit(StreamEvent::Usage(Usage {
            input: prompt as u64,
            cached_input: cached as u64,
            cache_write: 0,
            output: generated as u64,
        }))?;
        emit(StreamEvent::Stop(stop))?;
        Ok(Ok(()))
    }
}

/// A request's prompt, ready to read.
struct Prompt {
    tokens: Vec<u32>,
    /// Tokens of the fixed head (see [`PrefixStore`]).
    head: usize,
    /// What the harness wrote at the start of the answer (a call's or a code block's
    /// opening): the answer's text starts with it.
    opened: String,
    /// Most tokens to generate.
    max_new: usize,
    /// The request's stop sequences, and a code block's closing fence.
    stops: Vec<String>,
}

/// An answer as generated: its text, tokens and why it ended.
struct Decoded {
    out: Output,
    generated: usize,
    stop: StopReason,
}

/// The closing fence of a code block the harness opened.
const CODE_CLOSE: &str = "\n```";

/// Whether the request ends with a user message that answers no tool call.
fn new_user_turn(req: &ChatRequest) -> bool {
    req.messages.last().is_some_and(|m| {
        m.role == Role::User && !m.parts.iter().any(|p| matches!(p, Part::ToolResult(_)))
    })
}

/// Picks the next token: within a tool call, only one that keeps the call valid.
fn choose(
    sampler: &mut Sampler,
    logits: &[f32],
    grammar: Option<&CallGrammar>,
    out: &Output,
    engine: &Engine,
) -> Option<u32> {
    match (grammar, out.call_tail()) {
        (Some(g), Some(tail)) if g.check(tail) != Check::Invalid => {
            sampler.sample_constrained(logits, &mut |id| {
                if engine.info.end_ids.contains(&id) {
                    return g.check(tail) == Check::Complete;
                }
                let bytes = engine.tokenizer.token_bytes(id);
                let mut next = String::with_capacity(tail.len() + bytes.len());
                next.push_str(tail);
                next.push_str(&String::from_utf8_lossy(&bytes));
                g.check(&next) != Check::Invalid
            })
        }
        // An answer opening with template text (`<tool_response>`, an invented tool
        // result) is what small models write after a tool result when they have
        // nothing to add, and one opening with a fenced or bare JSON object is a tool
        // call written as text (the 1.5B model's `str_replace` came as a ```json
        // block, so nothing ran). Held off `<`, `` ` `` and `{`, they answer in words
        // or call the tool for real.
        (Some(_), None) if out.text.trim().is_empty() => {
            let call_open = engine.tokenizer.token_id(TOOL_CALL_OPEN);
            sampler.sample_constrained(logits, &mut |id| {
                Some(id) == call_open
                    || engine.info.end_ids.contains(&id)
                    || !String::from_utf8_lossy(&engine.tokenizer.token_bytes(id))
                        .trim_start()
                        .starts_with(['<', '`', '{'])
            })
        }
        _ => sampler.sample(logits),
    }
}

/// Per-call decoding state: bytes to characters, and the count of tokens produced.
struct Gen<'a> {
    utf8: Utf8Stream,
    generated: usize,
    stops: &'a [String],
    /// The tokens of answer text (outside tool calls), watched for runaway repetition.
    answer: Vec<u32>,
}

impl Gen<'_> {
    /// Takes one chosen token: streams what may be streamed, and says why to stop,
    /// if it ends the answer.
    fn push(
        &mut self,
        token: u32,
        engine: &Engine,
        out: &mut Output,
        emit: &Emit<'_>,
    ) -> Result<Option<StopReason>, Gone> {
        self.generated += 1;
        if engine.info.end_ids.contains(&token) {
            return Ok(Some(StopReason::EndTurn));
        }
        let text = self.utf8.push(&engine.tokenizer.token_bytes(token));
        out.text.push_str(&text);
        if let Some(at) = find_stop(&out.text, self.stops) {
            out.text.truncate(at);
            return Ok(Some(StopReason::StopSequence));
        }
        if out.call_tail().is_none() {
            self.answer.push(token);
            if let Some(period) = runaway(&self.answer) {
                warn!(
                    period,
                    tokens = self.answer.len(),
                    "local model: answer stopped, it repeats itself"
                );
                return Ok(Some(StopReason::Other(RUNAWAY_STOP.to_owned())));
            }
        }
        if let Some(delta) = out.release() {
            emit(StreamEvent::TextDelta(delta))?;
        }
        Ok(None)
    }
}

fn find_stop(text: &str, stops: &[String]) -> Option<usize> {
    stops
        .iter()
        .filter(|s| !s.is_empty())
        .filter_map(|s| text.find(s.as_str()))
        .min()
}

/// The answer text as it grows, and how much of it has been streamed. Text that may
/// be the start of a stop sequence, or (when tools are offered) of a `<tool_call>`,
/// is held back; nothing after a `<tool_call>` is streamed as text.
#[derive(Debug)]
struct Output {
    text: String,
    streamed: usize,
    tools: bool,
    stops: Vec<String>,
}

impl Output {
    fn new(tools: bool, stops: &[String]) -> Self {
        Self {
            text: String::new(),
            streamed: 0,
            tools,
            stops: stops.iter().filter(|s| !s.is_empty()).cloned().collect(),
        }
    }

    /// The part of the text that may be streamed now, if any is new.
    fn release(&mut self) -> Option<String> {
        let mut safe = self.text.len();
        if self.tools {
            safe = match self.text.find(TOOL_CALL_OPEN) {
                Some(at) => at,
                None => self.text.len() - held_back(&self.text, TOOL_CALL_OPEN),
            };
        }
        for s in &self.stops {
            safe = safe.min(self.text.len() - held_back(&self.text, s));
        }
        if safe <= self.streamed {
            return None;
        }
        let delta = self.text[self.streamed..safe].to_owned();
        self.streamed = safe;
        Some(delta)
    }

    /// The text after `<tool_call>`, once the model has opened a call.
    fn call_tail(&self) -> Option<&str> {
        if !self.tools {
            return None;
        }
        let at = self.text[self.streamed..].find(TOOL_CALL_OPEN)?;
        Some(&self.text[self.streamed + at + TOOL_CALL_OPEN.len()..])
    }

    #[cfg(test)]
    fn push(&mut self, more: &str) -> Option<String> {
        self.text.push_str(more);
        self.release()
    }

    /// Ends the answer: the text still to stream and the calls found.
    fn finish(self, offered: &[&str]) -> (Option<String>, Vec<agentls_model::ToolCall>) {
        let rest = self.text[self.streamed..].to_owned();
        let rest = (!rest.is_empty()).then_some(rest);
        if !self.tools || !self.text.contains(TOOL_CALL_OPEN) {
            return (rest, Vec::new());
        }
        let found = lenient::parse_tool_calls(&self.text[self.streamed..], offered);
        if found.calls.is_empty() {
            // Not a call after all (or a broken one): the model said it, show it.
            return (rest, Vec::new());
        }
        (None, found.calls)
    }
}

/// Length of the longest suffix of `text` that is a proper prefix of `tag`.
fn held_back(text: &str, tag: &str) -> usize {
    (1..tag.len())
        .rev()
        .find(|&n| text.ends_with(&tag[..n]))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    /// Long enough that only a stream waiting on the engine thread could use it up.
    const HANG: std::time::Duration = std::time::Duration::from_secs(60);

    #[tokio::test]
    async fn a_cancelled_stream_ends_at_once_while_the_engine_is_mid_batch() {
        let (tx, rx) = mpsc::channel(4);
        let cancel = CancellationToken::new();
        let mut stream = receiver_stream(rx, cancel.clone());
        tx.send(Ok(StreamEvent::TextDelta("fn".into())))
            .await
            .expect("send");
        let first = stream
            .next()
            .await
            .expect("an event")
            .expect("not an error");
        assert!(matches!(first, StreamEvent::TextDelta(t) if t == "fn"));

        // `tx` stays alive and silent: the engine has not looked at the token yet.
        cancel.cancel();
        let next = tokio::time::timeout(HANG, stream.next())
            .await
            .expect("the stream waited for the engine thread");
        let err = next.expect("an abort error").expect_err("an error");
        assert_eq!(err.class, ErrorClass::UserAborted);
        assert!(
            stream.next().await.is_none(),
            "the stream ends after the abort"
        );
        drop(tx);
    }

    #[tokio::test]
    async fn the_engine_abort_is_passed_on_once_and_ends_the_stream() {
        let (tx, rx) = mpsc::channel(4);
        let mut stream = receiver_stream::<StreamEvent>(rx, CancellationToken::new());
        tx.send(Err(ModelError::aborted())).await.expect("send");
        let err = stream.next().await.expect("an item").expect_err("an error");
        assert_eq!(err.class, ErrorClass::UserAborted);
        assert!(stream.next().await.is_none());
        drop(tx);
    }

    #[tokio::test]
    async fn a_cancelled_score_returns_without_the_thread_answer() {
        let (tx, rx) = tokio::sync::oneshot::channel::<Result<Vec<f64>, ModelError>>();
        let cancel = CancellationToken::new();
        cancel.cancel();
        let answer = tokio::time::timeout(HANG, answer_or_abort(rx, &cancel, ModelError::aborted))
            .await
            .expect("the score waited for the engine thread");
        assert_eq!(answer.expect_err("aborted").class, ErrorClass::UserAborted);
        drop(tx);
    }

    #[tokio::test]
    async fn a_score_answer_comes_through_when_not_cancelled() {
        let (tx, rx) = tokio::sync::oneshot::channel::<Result<Vec<f64>, ModelError>>();
        tx.send(Ok(vec![-1.5])).expect("send");
        let answer = answer_or_abort(rx, &CancellationToken::new(), ModelError::aborted).await;
        assert_eq!(answer.expect("an answer"), vec![-1.5]);
    }

    #[test]
    fn runaway_text_is_one_piece_over_and_over() {
        let cycle = |piece: &[u32], n: usize| -> Vec<u32> {
            piece.iter().copied().cycle().take(n).collect()
        };
        // One token, or a sentence of seven, repeated over the span.
        assert_eq!(runaway(&cycle(&[5], RUNAWAY_SPAN)), Some(1));
        let mut text: Vec<u32> = (100..400).collect();
        text.extend(cycle(&[1, 2, 3, 4, 5, 6, 7], RUNAWAY_SPAN));
        assert_eq!(runaway(&text), Some(7));
        // A long piece must come back often enough.
        let long: Vec<u32> = (0..RUNAWAY_PERIOD as u32).collect();
        assert_eq!(
            runaway(&cycle(&long, RUNAWAY_PERIOD * (RUNAWAY_REPEATS - 1))),
            None
        );
        assert_eq!(
            runaway(&cycle(&long, RUNAWAY_PERIOD * RUNAWAY_REPEATS)),
            Some(RUNAWAY_PERIOD)
        );
        // Too short a stretch, a piece longer than watched, or text that varies.
        assert_eq!(runaway(&cycle(&[5], RUNAWAY_SPAN - 1)), None);
        let longer: Vec<u32> = (0..RUNAWAY_PERIOD as u32 + 1).collect();
        assert_eq!(runaway(&cycle(&longer, 2_000)), None);
        let mut varied = cycle(&[1, 2, 3], RUNAWAY_SPAN);
        varied[RUNAWAY_SPAN / 2] = 9;
        assert_eq!(runaway(&varied), None);
    }

    #[test]
    fn output_streams_plain_text_at_once() {
        let mut o = Output::new(false, &[]);
        assert_eq!(o.push("a <tool").as_deref(), Some("a <tool"));
        assert_eq!(o.finish(&[]), (None, vec![]));
    }

    #[test]
    fn output_holds_back_a_possible_call_and_parses_it() {
        let mut o = Output::new(true, &[]);
        assert_eq!(o.push("Reading. <to").as_deref(), Some("Reading. "));
        assert_eq!(o.push("ol_call>\n{\"name\": \"read_file\", "), None);
        assert_eq!(
            o.push("\"arguments\": {\"path\": \"a.rs\"}}\n</tool_call>"),
            None
        );
        let (rest, calls) = o.finish(&["read_file"]);
        assert_eq!(rest, None);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "read_file");
        assert_eq!(
            calls[0].parse_arguments().unwrap(),
            serde_json::json!({"path": "a.rs"})
        );
    }

    #[test]
    fn output_releases_held_text_that_was_not_a_call() {
        let mut o = Output::new(true, &[]);
        assert_eq!(o.push("x <t").as_deref(), Some("x "));
        assert_eq!(o.push("able>").as_deref(), Some("<table>"));
        let mut o = Output::new(true, &[]);
        o.push("<tool_call>not json</tool_call>");
        let (rest, calls) = o.finish(&["read_file"]);
        assert!(calls.is_empty());
        assert_eq!(rest.as_deref(), Some("<tool_call>not json</tool_call>"));
    }

    #[test]
    fn output_holds_back_a_possible_stop_sequence() {
        let mut o = Output::new(false, &["\n\nEND".to_owned()]);
        assert_eq!(o.push("done\n").as_deref(), Some("done"));
        assert_eq!(o.push("more").as_deref(), Some("\nmore"));
    }

    #[test]
    fn stop_sequences_cut_at_the_earliest() {
        assert_eq!(
            find_stop("abc END x STOP", &["STOP".into(), "END".into()]),
            Some(4)
        );
        assert_eq!(find_stop("abc", &[String::new()]), None);
    }
}
