//! [`Provider::stream_many`](agentls_model::Provider::stream_many) for the embedded
//! engine: the prompt is read once as sequence 0, copied to the other sequences
//! ([`Engine::fork`]), and every step feeds each live sequence's token (and its
//! prompt-lookup draft, for a greedy one) in one batch. On a CPU a forward pass costs
//! about the reading of the weights whatever the batch holds, so N answers cost far
//! less than N times one (`agentls bench decode`). Each sequence has its own sampler
//! and seed, stops on its own (end of turn, stop sequence, code block's end, budget,
//! runaway text) and is then sent whole and its cells freed, while the rest decode on.
//!
//! The KV cache is shared: the prompt plus what the live sequences hold must fit the
//! context. A sequence that finds no room left ends with
//! [`StopReason::MaxTokens`], as if its budget had run out.

use std::time::Instant;

use agentls_model::{
    DecodeStats, ManyEvent, ModelError, Sampling, SequenceEnds, StopReason, StreamEvent,
};
use tokio::sync::mpsc;
use tracing::{debug, warn};

use super::{Decoded, Emit, Gen, Gone, Job, Output, Prompt, SEED, choose, engine_error};
use crate::engine::{Engine, MAX_SEQUENCES};
use crate::sampler::Sampler;
use crate::speculate::Drafter;
use crate::tokenizer::Utf8Stream;

type ManyTx = mpsc::Sender<Result<ManyEvent, ModelError>>;

/// `StopReason::Other`'s text for a sequence stopped because its reader ended it
/// ([`agentls_model::ManyStream::end`]).
const ENDED_BY_READER: &str = "ended by its reader";

/// Most tokens one step feeds across sequences (tokens and drafts): drafts beyond it
/// are cut. A pass over 32 tokens costs a CPU about what one over one does; more
/// turns the pass from reading weights into computing.
const STEP_TOKENS: usize = 32;

/// One sequence being decoded.
struct Lane<'p> {
    /// Its index among the samplings asked for (the events' tag).
    index: usize,
    /// Its sequence id in the engine's cache.
    seq: usize,
    sampler: Sampler,
    out: Output,
    dec: Gen<'p>,
    drafter: Option<Drafter>,
    /// What drafts copy from: the prompt, then the answer as it grows.
    history: Vec<u32>,
    /// Logits for its next token.
    logits: Vec<f32>,
    /// Position of its next token in its sequence.
    pos: usize,
    /// Tokens fed this step: the chosen one, then its draft.
    feed: Vec<u32>,
    /// Where its tokens start in this step's batch.
    offset: usize,
    /// Why it ended, once it has.
    stop: Option<StopReason>,
    /// Whether its end has been sent.
    sent: bool,
    started: Instant,
}

/// Per call: what every lane shares.
struct Shared<'a> {
    tx: &'a ManyTx,
    prompt: &'a Prompt,
    cached: usize,
    /// The sequences the reader has ended.
    ends: &'a SequenceEnds,
    prompt_ms: u64,
    width: usize,
}

fn tagged(tx: &ManyTx, index: usize, ev: StreamEvent) -> Result<(), Gone> {
    tx.blocking_send(Ok(ManyEvent::Event(index, ev)))
        .map_err(|_| Gone)
}

impl Job {
    /// The thread's work for [`Provider::stream_many`](agentls_model::Provider::stream_many).
    pub(super) fn run_many(self, samplings: &[Sampling], tx: &ManyTx, ends: &SequenceEnds) {
        let _enter = self.span.clone().entered();
        match self.generate_many(samplings, tx, ends) {
            Ok(Ok(())) | Err(Gone) => {}
            Ok(Err(e)) => {
                warn!(class = ?e.class, error = %e.message, "local model batched call failed");
                let _ = tx.blocking_send(Err(e));
            }
        }
    }

    fn generate_many(
        &self,
        samplings: &[Sampling],
        tx: &ManyTx,
        ends: &SequenceEnds,
    ) -> Result<Result<(), ModelError>, Gone> {
        let mut engine = self.lock();
        let started = Instant::now();
        let (prompt, logits, cached) = match self.read_prompt(&mut engine) {
            Ok(read) => read,
            Err(e) => return Ok(Err(e)),
        };
        let shared = Shared {
            tx,
            prompt: &prompt,
            cached,
            ends,
            prompt_ms: started.elapsed().as_millis() as u64,
            width: samplings.len().min(MAX_SEQUENCES),
        };
        for (chunk, group) in samplings.chunks(MAX_SEQUENCES).enumerate() {
            let first = chunk * MAX_SEQUENCES;
            let done = self.decode_group(&mut engine, &shared, first, group, &logits);
            engine.join(group.len());
            match done? {
                Ok(()) => {}
                Err(e) => return Ok(Err(e)),
            }
        }
        Ok(Ok(()))
    }

    /// Decodes the sequences of `group` (numbered from `first`) together to their
    /// ends, from the prompt's `logits`.
    fn decode_group(
        &self,
        engine: &mut Engine,
        shared: &Shared<'_>,
        first: usize,
        group: &[Sampling],
        logits: &[f32],
    ) -> Result<Result<(), ModelError>, Gone> {
        let prompt = shared.prompt;
        if let Err(e) = engine.fork(group.len()) {
            return Ok(Err(engine_error(e)));
        }
        let mut lanes: Vec<Lane<'_>> = group
            .iter()
            .enumerate()
            .map(|(seq, sampling)| self.lane(engine, prompt, first + seq, seq, sampling, logits))
            .collect();
        let batch_room = engine.batch_size().min(STEP_TOKENS.max(group.len()));
        while lanes.iter().any(|l| !l.sent) {
            if self.cancel.is_cancelled() {
                return Ok(Err(ModelError::aborted()));
            }
            if shared.tx.is_closed() {
                return Err(Gone);
            }
            // A sequence its reader has ended frees its cells and its share of the
            // batch for the others.
            for lane in lanes.iter_mut().filter(|l| l.stop.is_none()) {
                if shared.ends.is_ended(lane.index) {
                    lane.stop = Some(StopReason::Other(ENDED_BY_READER.into()));
                }
            }
            for lane in lanes.iter_mut().filter(|l| l.stop.is_none()) {
                let index = lane.index;
                let emit = |ev| tagged(shared.tx, index, ev);
                lane.choose_next(engine, prompt.max_new, &emit)?;
            }
            self.end_lanes(engine, shared, &mut lanes)?;
            plan_step(&mut lanes, engine.info.context_length, prompt, batch_room);
            let feeds: Vec<(usize, usize, &[u32])> = lanes
                .iter()
                .filter(|l| !l.feed.is_empty())
                .map(|l| (l.seq, l.pos, l.feed.as_slice()))
                .collect();
            if feeds.is_empty() {
                self.end_lanes(engine, shared, &mut lanes)?;
                continue;
            }
            if let Err(e) = engine.decode_seqs(&feeds) {
                return Ok(Err(engine_error(e)));
            }
            for lane in lanes.iter_mut().filter(|l| !l.feed.is_empty()) {
                let index = lane.index;
                let emit = |ev| tagged(shared.tx, index, ev);
                if let Err(e) = lane.take_step(engine, prompt.max_new, &emit)? {
                    return Ok(Err(e));
                }
            }
            self.end_lanes(engine, shared, &mut lanes)?;
        }
        Ok(Ok(()))
    }

    /// Ends the lanes that stopped since the last look.
    fn end_lanes(
        &self,
        engine: &mut Engine,
        shared: &Shared<'_>,
        lanes: &mut [Lane<'_>],
    ) -> Result<(), Gone> {
        for lane in lanes.iter_mut().filter(|l| l.stop.is_some() && !l.sent) {
            self.end_lane(engine, shared, lane)?;
        }
        Ok(())
    }

    fn lane<'p>(
        &self,
        engine: &Engine,
        prompt: &'p Prompt,
        index: usize,
        seq: usize,
        sampling: &Sampling,
        logits: &[f32],
    ) -> Lane<'p> {
        let temperature = sampling.temperature.unwrap_or(0.0);
        let mut out = Output::new(false, &prompt.stops);
        out.text.clone_from(&prompt.opened);
        let mut history = self
            .req
            .prediction
            .as_deref()
            .map(|p| engine.tokenizer.encode(p))
            .unwrap_or_default();
        history.extend_from_slice(&prompt.tokens);
        Lane {
            index,
            seq,
            sampler: Sampler::new(
                temperature,
                sampling.top_p.unwrap_or(1.0),
                sampling.seed.unwrap_or(SEED),
            ),
            out,
            dec: Gen {
                utf8: Utf8Stream::default(),
                generated: 0,
                stops: &prompt.stops,
                answer: Vec::new(),
            },
            // Drafts are checked against greedy choices only.
            drafter: self
                .speculate
                .filter(|_| temperature <= 0.0)
                .map(Drafter::new),
            history,
            logits: logits.to_vec(),
            pos: prompt.tokens.len(),
            feed: Vec::new(),
            offset: 0,
            stop: None,
            sent: false,
            started: Instant::now(),
        }
    }

    /// Sends an ended lane's rest, usage, figures and stop, and frees its cells.
    fn end_lane(
        &self,
        engine: &mut Engine,
        shared: &Shared<'_>,
        lane: &mut Lane<'_>,
    ) -> Result<(), Gone> {
        let Some(stop) = lane.stop.clone() else {
            return Ok(());
        };
        let (drafted, accepted) = lane
            .drafter
            .as_ref()
            .map_or((0, 0), |d| (d.drafted as u64, d.accepted as u64));
        let stats = DecodeStats {
            prompt_ms: shared.prompt_ms,
            decode_ms: lane.started.elapsed().as_millis() as u64,
            drafted,
            accepted,
            width: shared.width,
        };
        if stop != StopReason::StopSequence {
            lane.out.text.push_str(&lane.dec.utf8.finish());
        }
        let decoded = Decoded {
            out: std::mem::replace(&mut lane.out, Output::new(false, &[])),
            generated: lane.dec.generated,
            stop,
        };
        let (tx, index) = (shared.tx, lane.index);
        let emit = |ev: StreamEvent| {
            if matches!(ev, StreamEvent::Stop(_)) {
                tx.blocking_send(Ok(ManyEvent::Stats(index, stats)))
                    .map_err(|_| Gone)?;
            }
            tagged(tx, index, ev)
        };
        debug!(
            index,
            tokens = lane.dec.generated,
            drafted,
            accepted,
            "batched sequence done"
        );
        // Its cells go back to the others (a failure resets the cache, and the next
        // step reports it).
        let _ = engine.drop_seq_from(lane.seq, 0);
        lane.sent = true;
        lane.feed.clear();
        self.finish(decoded, shared.prompt.tokens.len(), shared.cached, &emit)?
            .unwrap_or_else(|e| debug!(error = %e.message, "batched sequence's end"));
        Ok(())
    }
}

/// Cuts this step's feeds to what the batch and the KV cache hold: every feeding
/// lane keeps its chosen token while the cache has room (one without room ends, its
/// budget spent), and drafts share what is left of `batch_room`, first come first
/// served.
fn plan_step(lanes: &mut [Lane<'_>], context: usize, prompt: &Prompt, batch_room: usize) {
    let base = prompt.tokens.len();
    // Every lane not yet ended and freed holds cells (one stopped just now too).
    let mut used = base
        + lanes
            .iter()
            .filter(|l| !l.sent)
            .map(|l| l.pos - base)
            .sum::<usize>();
    let feeding = lanes.iter().filter(|l| !l.feed.is_empty()).count();
    let mut spare = batch_room.saturating_sub(feeding);
    let mut offset = 0;
    for lane in lanes.iter_mut().filter(|l| !l.feed.is_empty()) {
        if used >= context {
            warn!(
                index = lane.index,
                context, "local model: the KV cache is full, a batched sequence ends"
            );
            lane.feed.clear();
            lane.stop = Some(StopReason::MaxTokens);
            continue;
        }
        used += 1;
        let extra = (lane.feed.len() - 1).min(spare).min(context - used);
        lane.feed.truncate(1 + extra);
        spare -= extra;
        used += extra;
        lane.offset = offset;
        offset += lane.feed.len();
    }
}

impl Lane<'_> {
    /// Chooses the lane's next token from its logits and takes it; unless that
    /// ends the lane, it and its draft are what the lane feeds this step.
    fn choose_next(
        &mut self,
        engine: &Engine,
        max_new: usize,
        emit: &Emit<'_>,
    ) -> Result<(), Gone> {
        self.feed.clear();
        let Some(token) = choose(&mut self.sampler, &self.logits, None, &self.out, engine) else {
            self.stop = Some(StopReason::Other("local model: no token to sample".into()));
            return Ok(());
        };
        self.history.push(token);
        if let Some(reason) = self.dec.push(token, engine, &mut self.out, emit)? {
            self.stop = Some(reason);
            return Ok(());
        }
        if self.dec.generated >= max_new {
            self.stop = Some(StopReason::MaxTokens);
            return Ok(());
        }
        self.feed.push(token);
        if let Some(d) = self.drafter.as_mut() {
            let room = max_new - self.dec.generated;
            let draft = d.draft(&self.history);
            self.feed.extend_from_slice(&draft[..draft.len().min(room)]);
        }
        Ok(())
    }

    /// Reads the step's logits for the lane: keeps the drafted tokens its greedy
    /// choice agrees with, drops the rest from its cells, and keeps the logits for
    /// its next token.
    fn take_step(
        &mut self,
        engine: &mut Engine,
        max_new: usize,
        emit: &Emit<'_>,
    ) -> Result<Result<(), ModelError>, Gone> {
        let drafted = self.feed.len() - 1;
        let mut accepted = 0;
        for (i, &d) in self.feed[1..].iter().enumerate() {
            let at = engine.batch_logits(self.offset + i);
            if choose(&mut self.sampler, at, None, &self.out, engine) != Some(d) {
                break;
            }
            accepted += 1;
            self.history.push(d);
            if let Some(reason) = self.dec.push(d, engine, &mut self.out, emit)? {
                self.stop = Some(reason);
                break;
            }
            if self.dec.generated >= max_new {
                self.stop = Some(StopReason::MaxTokens);
                break;
            }
        }
        if drafted > 0
            && let Some(d) = self.drafter.as_mut()
        {
            d.outcome(drafted, accepted);
        }
        self.pos += 1 + accepted;
        if self.stop.is_none() {
            self.logits = engine.batch_logits(self.offset + accepted).to_vec();
        }
        if accepted < drafted
            && let Err(e) = engine.drop_seq_from(self.seq, self.pos)
        {
            return Ok(Err(engine_error(e)));
        }
        Ok(Ok(()))
    }
}
