//! Several samples of one request decoded together, each handed over the moment it
//! is complete, so that it is verified while the others still decode.
//!
//! Where the provider decodes sequences in one batch ([`Provider::stream_many`]: the
//! embedded engine reads the prompt once and each step costs about one pass whatever
//! the batch holds), a round of samples costs far less than that many calls. The
//! stream is drained by a task of its own into an unbounded queue: the engine's
//! channel is bounded, and a check that runs tests for a minute must not stall the
//! decoding beside it. Dropping the [`Batch`] aborts that task, which drops the
//! stream, which stops the engine: sampling ends as soon as the pick cannot change.
//!
//! An answer is also complete once [`Done`] says so (the function asked for is
//! written and the model has gone on past it): its sequence is ended in the engine
//! and handed over a step later, when the engine has stopped it; when every sequence
//! has been, the stream is dropped. A provider that cannot end one sequence hands it
//! over at its own end.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use agentls_model::{
    Accumulator, CancellationToken, ChatRequest, DecodeStats, ManyEvent, ModelError, Provider,
    Response, Sampling, StreamEvent,
};
use futures::StreamExt;
use tokio::sync::mpsc;

/// One sequence of a batch, complete.
pub(super) struct Finished {
    /// Its index among the samplings asked for.
    pub index: usize,
    /// Its answer.
    pub response: Response,
    /// How it was decoded.
    pub stats: DecodeStats,
}

/// Whether an answer's text so far is all that is needed of it.
pub(super) type Done = Box<dyn Fn(&str) -> bool + Send>;

/// A batch being decoded; its sequences come out as they end.
pub(super) struct Batch {
    rx: mpsc::UnboundedReceiver<Result<Finished, ModelError>>,
    task: tokio::task::JoinHandle<()>,
    started: Instant,
    /// When the first event of any sequence came: the prompt had been read.
    first: Arc<OnceLock<Instant>>,
}

impl Batch {
    /// Starts decoding one answer to `req` per entry of `samplings`; `None` where the
    /// provider cannot decode them together (ask one after another instead).
    pub(super) fn start(
        provider: &Arc<dyn Provider>,
        req: &ChatRequest,
        samplings: &[Sampling],
        cancel: &CancellationToken,
        done: Done,
    ) -> Option<Batch> {
        let stream = provider.stream_many(req, samplings, cancel.clone())?;
        let (tx, rx) = mpsc::unbounded_channel();
        let first = Arc::new(OnceLock::new());
        let task = tokio::spawn(drain(stream, samplings.len(), done, tx, first.clone()));
        Some(Batch {
            rx,
            task,
            started: Instant::now(),
            first,
        })
    }

    /// How long the prompt took to read, as its first token's wait (all the time so
    /// far when none has come): for a round that ends before any sequence has brought
    /// its figures.
    pub(super) fn prompt_ms(&self) -> f64 {
        let at = self.first.get().copied().unwrap_or_else(Instant::now);
        at.duration_since(self.started).as_secs_f64() * 1000.0
    }

    /// The next sequence to end, or the error that ended the batch; `None` when every
    /// sequence has been handed over.
    pub(super) async fn next(&mut self) -> Option<Result<Finished, ModelError>> {
        self.rx.recv().await
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        // Stops the engine: the task owns the stream, whose drop ends decoding.
        self.task.abort();
    }
}

/// Reads `stream` to its end, sending each sequence whole as it stops; one that
/// `done` finds complete (checked at each line's end) is ended in the engine
/// ([`agentls_model::ManyStream::end`]) with its answer as it stood then, and sent
/// when the engine has stopped it, a step later, with its figures (prompt time,
/// drafts). Returns early when the batch is dropped or every sequence has been sent.
async fn drain(
    mut stream: agentls_model::ManyStream,
    n: usize,
    done: Done,
    tx: mpsc::UnboundedSender<Result<Finished, ModelError>>,
    first: Arc<OnceLock<Instant>>,
) {
    let mut accs: Vec<Option<Accumulator>> = (0..n).map(|_| Some(Accumulator::default())).collect();
    // Answers complete before their sequence's end, waiting for its figures.
    let mut complete: Vec<Option<Response>> = (0..n).map(|_| None).collect();
    let mut stats = vec![DecodeStats::default(); n];
    let mut sent = 0;
    while let Some(item) = stream.next().await {
        let (i, ev) = match item {
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
            Ok(ManyEvent::Stats(i, s)) => {
                if let Some(slot) = stats.get_mut(i) {
                    *slot = s;
                }
                continue;
            }
            Ok(ManyEvent::Event(i, ev)) => {
                first.get_or_init(Instant::now);
                (i, ev)
            }
        };
        let response = if let StreamEvent::Stop(_) = ev {
            let early = complete.get_mut(i).and_then(Option::take);
            match (early, accs.get_mut(i).and_then(Option::take)) {
                (Some(response), _) => response,
                (None, Some(mut acc)) => {
                    acc.push(&ev);
                    acc.finish()
                }
                (None, None) => continue,
            }
        } else {
            if let (Some(Some(response)), StreamEvent::Usage(usage)) = (complete.get_mut(i), &ev) {
                // What the sequence cost, counted to its end in the engine.
                response.usage = *usage;
            }
            let Some(acc) = accs.get_mut(i).and_then(Option::as_mut) else {
                continue;
            };
            acc.push(&ev);
            if matches!(&ev, StreamEvent::TextDelta(t) if t.contains('\n')) && done(acc.text()) {
                // The engine need not write the rest, which nobody reads.
                stream.end(i);
                complete[i] = accs[i].take().map(Accumulator::finish);
            }
            continue;
        };
        let finished = Finished {
            index: i,
            response,
            stats: stats.get(i).copied().unwrap_or_default(),
        };
        sent += 1;
        if tx.send(Ok(finished)).is_err() || sent == n {
            return;
        }
    }
}
