//! One model call of the pipeline, counted: calls, tokens and time waiting, which the
//! session adds to its own.

use std::sync::Arc;
use std::time::Instant;

use agentls_model::{CancellationToken, ChatRequest, Message, Provider, Usage};

/// What the pipeline's model calls cost.
#[derive(Debug, Default)]
pub(super) struct ModelUse {
    /// Calls made.
    pub calls: u32,
    /// Their tokens.
    pub usage: Usage,
    /// Time waiting for the model, in ms.
    pub model_ms: f64,
    /// Of that, until each answer's first token: reading the prompt.
    pub prompt_ms: f64,
    /// Tokens drafted from the prompt (the original code) for greedy answers decoded
    /// in batches.
    pub drafted: u64,
    /// Of those, the tokens the model kept.
    pub accepted: u64,
}

impl ModelUse {
    /// One call, counted; its text (empty when the model failed).
    pub(super) async fn ask(
        &mut self,
        provider: &Arc<dyn Provider>,
        req: &ChatRequest,
        cancel: &CancellationToken,
    ) -> String {
        let t0 = Instant::now();
        let first = std::sync::Arc::new(std::sync::OnceLock::new());
        let stream = {
            use futures::StreamExt;
            let first = first.clone();
            provider
                .stream(req, cancel.clone())
                .inspect(move |_| {
                    first.get_or_init(Instant::now);
                })
                .boxed()
        };
        let answer = match agentls_model::collect(stream).await {
            Ok(r) => {
                self.usage.add(&r.usage);
                r.text
            }
            Err(e) => {
                tracing::warn!("solve: the model failed: {}", e.message);
                String::new()
            }
        };
        self.calls += 1;
        self.model_ms += t0.elapsed().as_secs_f64() * 1000.0;
        if let Some(at) = first.get() {
            self.prompt_ms += at.duration_since(t0).as_secs_f64() * 1000.0;
        }
        answer
    }

    /// One answer per entry of `samplings` to `req`, decoded together in one batch
    /// ([`super::batch`]) and counted; `None` when the provider cannot decode them
    /// together (ask one after another instead). An answer the model failed is left
    /// out.
    pub(super) async fn ask_together(
        &mut self,
        provider: &Arc<dyn Provider>,
        req: &ChatRequest,
        samplings: &[agentls_model::Sampling],
        cancel: &CancellationToken,
    ) -> Option<Vec<String>> {
        let t0 = Instant::now();
        let never: super::batch::Done = Box::new(|_: &str| false);
        let mut batch = super::batch::Batch::start(provider, req, samplings, cancel, never)?;
        let mut out = Vec::with_capacity(samplings.len());
        let mut prompt_read = false;
        while let Some(done) = batch.next().await {
            match done {
                Ok(done) => {
                    if !std::mem::replace(&mut prompt_read, true) {
                        self.prompt_ms += done.stats.prompt_ms as f64;
                    }
                    self.answered(&done.response, &done.stats);
                    out.push(done.response.text);
                }
                Err(e) => {
                    tracing::warn!("solve: the model failed: {}", e.message);
                    break;
                }
            }
        }
        if !prompt_read {
            self.prompt_ms += batch.prompt_ms();
        }
        self.model_ms += t0.elapsed().as_secs_f64() * 1000.0;
        Some(out)
    }

    /// One answer of a batch ([`super::batch`]), counted; its time is the round's.
    pub(super) fn answered(
        &mut self,
        response: &agentls_model::Response,
        stats: &agentls_model::DecodeStats,
    ) {
        self.usage.add(&response.usage);
        self.calls += 1;
        self.drafted += stats.drafted;
        self.accepted += stats.accepted;
    }

    /// Where the time went, with `verifier`'s checks (`judge_ms` unset).
    pub(super) fn spent(&self, verifier: &super::verify::Verifier) -> super::report::SolveTimings {
        let (prompt_ms, decode_ms) = self.timings();
        super::report::SolveTimings {
            prompt_ms,
            decode_ms,
            verify_ms: verifier.spent_ms(),
            judge_ms: 0.0,
        }
    }

    /// The time spent on the model, split: reading prompts and scoring, and writing
    /// answers.
    pub(super) fn timings(&self) -> (f64, f64) {
        (self.prompt_ms, (self.model_ms - self.prompt_ms).max(0.0))
    }

    /// The likelihood of each continuation, counted as a call; `None` when the
    /// provider cannot score or failed.
    pub(super) async fn score(
        &mut self,
        provider: &Arc<dyn Provider>,
        req: &ChatRequest,
        prefix: &str,
        continuations: &[String],
        cancel: &CancellationToken,
    ) -> Option<Vec<f64>> {
        let t0 = Instant::now();
        let scored = provider
            .score(req, prefix, continuations, cancel.clone())?
            .await;
        self.calls += 1;
        self.model_ms += t0.elapsed().as_secs_f64() * 1000.0;
        match scored {
            Ok(s) if s.len() == continuations.len() => Some(s),
            Ok(_) => None,
            Err(e) => {
                tracing::warn!("solve: the model could not score: {}", e.message);
                None
            }
        }
    }

    /// How much likelier the model finds `first` than `second` as what `request`
    /// asks for (natural log odds: above 0, `first`); `None` where the provider cannot
    /// score. Asked as a choice between two lettered readings, both ways round, the
    /// two margins averaged: a small model's pull towards one letter (or towards "no"
    /// in a yes/no question, which turned the 0.5B model against every reading)
    /// cancels out, and what is left is its reading of the request.
    pub(super) async fn choose(
        &mut self,
        provider: &Arc<dyn Provider>,
        request: &str,
        first: &str,
        second: &str,
        cancel: &CancellationToken,
    ) -> Option<f64> {
        let asked = |a: &str, b: &str| ChatRequest {
            system: Some(
                "You read requests for changes to a code base and answer with one letter."
                    .to_owned(),
            ),
            messages: vec![Message::user(format!(
                "Request: {request}\n\nWhich does the request ask for?\nA) {a}\nB) {b}\nAnswer A or B."
            ))],
            max_tokens: Some(1),
            ..ChatRequest::default()
        };
        let letters = ["A", "B"].map(str::to_owned);
        let one = self
            .score(provider, &asked(first, second), "", &letters, cancel)
            .await?;
        let other = self
            .score(provider, &asked(second, first), "", &letters, cancel)
            .await?;
        Some(((one[0] - one[1]) + (other[1] - other[0])) / 2.0)
    }
}
