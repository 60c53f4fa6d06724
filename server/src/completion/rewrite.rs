//! Next edits from a model, when the predictions without one give nothing: the lines
//! around the cursor rewritten by the next-edit model server `[completion.next_edit]
//! model` names (in the layout it was trained on), or else by the completion model
//! (the embedded one by default) in its own layout; the smallest changed range, past
//! the gates, is the suggestion ([`agentls_text::next_edit::rewrite`]).
//!
//! The request is cancelled with the request's ticket: a newer next-edit request ends
//! the model call (an HTTP request dropped, the embedded engine stopped within a token).

use std::sync::Arc;
use std::time::Instant;

use agentls_host::config::{Config, NextEditFormat};
use agentls_model::next_edit::{Shape, ask, read_answer};
use agentls_model::{CancellationToken, Completer};
use agentls_text::Snapshot;
use agentls_text::next_edit::rewrite::Format;
use agentls_text::next_edit::{Burst, Kind, Prediction};

use crate::completion::context::path_of;
use crate::state::State;

/// The model that answers, and in which layout: the next-edit server when one is
/// named, else the completion model when `fallback` is on.
async fn backend(state: &State, config: Config) -> Option<(Arc<dyn Completer>, Format)> {
    let settings = config.completion.next_edit.clone();
    if let Some(built) = state.completions.next_edit_completer(config.clone()).await {
        let format = match settings.format {
            NextEditFormat::Zeta => Format::Zeta,
            NextEditFormat::Sweep => Format::Sweep,
        };
        return built.ok().map(|c| (c, format));
    }
    if !settings.fallback {
        return None;
    }
    let c = state.completions.completer(config).await.ok()?;
    Some((c, Format::Fill))
}

/// The model's next edit in `snapshot` for the cursor at `cursor` (chars), `bursts`
/// being the document's history, oldest first; `None` when there is no model, it
/// failed, was cancelled, or its rewrite gives nothing past the gates.
pub async fn suggest(
    state: &Arc<State>,
    snapshot: &Snapshot,
    bursts: &[Burst],
    cursor: usize,
    cancel: &CancellationToken,
) -> Option<Prediction> {
    let config = state.config().config;
    let settings = config.completion.next_edit.clone();
    let (completer, format) = backend(state, config).await?;
    let text: Vec<char> = snapshot.rope.chars().collect();
    let asked = ask(
        format,
        &path_of(state, snapshot),
        &text,
        bursts,
        cursor,
        Shape {
            lines_before: settings.lines_before as usize,
            lines_after: settings.lines_after as usize,
            max_tokens: settings.max_tokens,
        },
    );
    let started = Instant::now();
    let answer = completer
        .complete(&asked.request, &asked.rules, cancel.clone())
        .await;
    let answer = match answer {
        Ok(a) => a,
        Err(e) => {
            tracing::debug!("next edit: the model gave nothing: {}", e.message);
            return None;
        }
    };
    let s = read_answer(
        &asked,
        &answer.text,
        answer.stop,
        &text,
        bursts.last(),
        cursor,
    );
    tracing::debug!(
        model = completer.name(),
        ms = started.elapsed().as_millis() as u64,
        tokens = answer.tokens,
        suggested = s.is_some(),
        "next edit from the model"
    );
    Some(Prediction {
        kind: Kind::Rewrite {
            model: completer.name().to_owned(),
        },
        edits: vec![s?],
    })
}
