//! One model call of the pipeline, counted: calls, tokens and time waiting, which the
//! session adds to its own.

use std::sync::Arc;
use std::time::Instant;

use agentls_model::{CancellationToken, ChatRequest, Provider, Usage};

/// What the pipeline's model calls cost.
#[derive(Debug, Default)]
pub(super) struct ModelUse {
    /// Calls made.
    pub calls: u32,
    /// Their tokens.
    pub usage: Usage,
    /// Time waiting for the model, in ms.
    pub model_ms: f64,
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
        let stream = provider.stream(req, cancel.clone());
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
        answer
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
}
