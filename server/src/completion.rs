//! Code completion as the user types: what the server keeps between requests (the
//! newest request, the ring of recently edited places, the backend) and how one
//! fill-in-the-middle request is built from the live buffer and the index.
//!
//! **Supersede.** Every completion request takes a [`Ticket`]; a newer ticket cancels
//! every older one (the user types in one place at a time), so a burst of keystrokes
//! costs one backend call, and at most one completion waits at any moment. A ticket
//! dropped unanswered (tower-lsp drops the handler on `$/cancelRequest`) cancels its
//! own backend call.
//!
//! **Context.** The prefix and suffix are windows of the live buffer cut at line
//! boundaries; other files come as [`ContextChunk`]s: recently edited places (a ring
//! of at most [`RING_CHUNKS`] places, most recent last, as llama.vim keeps) and the
//! definitions of the names used near the cursor, from the symbol index.
//!
//! **Edit history.** Beside the ring, the user's recent edits per document as bursts
//! ([`agentls_text::next_edit::EditHistory`]), for next-edit suggestions
//! ([`next_edit`]). Changes that arrive while an agent edit is in flight for the
//! document are followed but not recorded: the server cannot yet tell them from the
//! agent's own, and an agent edit must never pass for the user's.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use agentls_host::config::Config;
use agentls_model::{CancellationToken, Completer};
use agentls_text::next_edit::{Change, EditHistory};
use agentls_text::position::to_char_idx;
use agentls_text::{ContentChange, DocUri, PositionEncoding};
use ropey::Rope;

pub mod context;
pub mod next_edit;
pub mod rewrite;

/// Most recently edited places kept as context.
pub const RING_CHUNKS: usize = 8;
/// Lines around an edited place that count as the same place.
const RING_LINES: usize = 8;

/// What the server keeps for completion.
#[derive(Debug, Default)]
pub struct Completions {
    line: Line,
    /// Next-edit requests take their turn apart from completions.
    pub next_edits: Line,
    ring: Mutex<VecDeque<(DocUri, usize)>>,
    histories: Mutex<HashMap<DocUri, EditHistory>>,
    backend: tokio::sync::Mutex<Option<Backend>>,
    /// The next-edit model server's completer (`[completion.next_edit] model`).
    next_edit_backend: tokio::sync::Mutex<Option<Backend>>,
}

/// Requests of one kind in line: the newest cancels the others.
#[derive(Debug, Default)]
pub struct Line {
    newest: Mutex<Option<(u64, CancellationToken)>>,
    next: AtomicU64,
}

/// The completer built for one configuration (or why none could be).
#[derive(Debug)]
struct Backend {
    /// What it was built from: `[completion] model` and `stream`, and the models.
    key: BackendKey,
    completer: Result<Arc<dyn Completer>, String>,
}

/// A model's name, whether it streams, and the models it was built from.
type BackendKey = (
    Option<String>,
    bool,
    std::collections::BTreeMap<String, agentls_model::ModelConfig>,
);

/// One request's place in line: cancelled when a newer request comes, and when
/// dropped.
#[derive(Debug)]
pub struct Ticket<'a> {
    id: u64,
    owner: &'a Line,
    /// Cancelled when the request is superseded or dropped.
    pub token: CancellationToken,
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        self.token.cancel();
        let mut newest = self.owner.newest.lock().unwrap_or_else(|p| p.into_inner());
        if newest.as_ref().is_some_and(|(id, _)| *id == self.id) {
            *newest = None;
        }
    }
}

impl Line {
    /// A ticket for a new request, cancelling the one before.
    pub fn begin(&self) -> Ticket<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let token = CancellationToken::new();
        let old = self
            .newest
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .replace((id, token.clone()));
        if let Some((_, old)) = old {
            old.cancel();
        }
        Ticket {
            id,
            owner: self,
            token,
        }
    }
}

impl Completions {
    /// A ticket for a new completion request, cancelling the one before.
    pub fn begin(&self) -> Ticket<'_> {
        self.line.begin()
    }

    /// Records a batch of changes the store accepted for `uri` in its edit history:
    /// as the user's when `user`, otherwise followed only. `before` is the text the
    /// batch applied to.
    pub fn note_changes(
        &self,
        uri: &DocUri,
        before: &Rope,
        changes: &[ContentChange],
        encoding: PositionEncoding,
        user: bool,
    ) {
        let now = Instant::now();
        let mut histories = self.histories.lock().unwrap_or_else(|p| p.into_inner());
        let history = histories.entry(uri.clone()).or_default();
        let mut rope = before.clone();
        for c in changes {
            let (start, end) = match c.range {
                Some(range) => {
                    let start = to_char_idx(&rope, range.start, encoding).char_idx;
                    let end = to_char_idx(&rope, range.end, encoding).char_idx;
                    (start, end.max(start))
                }
                None => whole_change(&rope, &c.text),
            };
            let removed = rope.slice(start..end).to_string();
            let inserted_len = match c.range {
                Some(_) => c.text.chars().count(),
                None => c.text.chars().count() - (rope.len_chars() - (end - start)),
            };
            let inserted: String = match c.range {
                Some(_) => c.text.clone(),
                None => c.text.chars().skip(start).take(inserted_len).collect(),
            };
            let change = Change {
                start,
                removed: &removed,
                inserted: &inserted,
            };
            if user {
                history.record(&change, now);
            } else {
                history.follow(&change);
            }
            rope.remove(start..end);
            rope.insert(start, &inserted);
        }
    }

    /// The edit history of `uri`.
    pub fn history(&self, uri: &DocUri) -> Option<EditHistory> {
        self.histories
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(uri)
            .cloned()
    }

    /// Notes an edit at `line` of `uri` in the ring: a place near one already there
    /// moves to the end, the oldest falls out past [`RING_CHUNKS`].
    pub fn note_edit(&self, uri: &DocUri, line: usize) {
        let mut ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        ring.retain(|(u, l)| !(u == uri && l.abs_diff(line) <= RING_LINES));
        ring.push_back((uri.clone(), line));
        while ring.len() > RING_CHUNKS {
            ring.pop_front();
        }
    }

    /// Forgets the places of a closed document.
    pub fn forget(&self, uri: &DocUri) {
        self.ring
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(u, _)| u != uri);
        self.histories
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(uri);
    }

    pub(crate) fn ring(&self) -> Vec<(DocUri, usize)> {
        self.ring
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned()
            .collect()
    }

    /// The completer of `config`, built once per configuration (a
    /// local model loads on the blocking pool); the reason when there is none, said
    /// once in the log.
    pub async fn completer(&self, config: Config) -> Result<Arc<dyn Completer>, String> {
        let key = (
            config.completion.model.clone(),
            config.completion.stream,
            config.models.clone(),
        );
        cached(&self.backend, key, "completion", move || {
            config.completer(|var| std::env::var(var).ok())
        })
        .await
    }

    /// The completer of the next-edit model server `[completion.next_edit] model`
    /// names (an OpenAI-compatible `/completions` endpoint, asked without streaming:
    /// a rewritten window is read whole); `None` when it names none.
    pub async fn next_edit_completer(
        &self,
        config: Config,
    ) -> Option<Result<Arc<dyn Completer>, String>> {
        let name = config.completion.next_edit.model.clone()?;
        let key = (Some(name.clone()), false, config.models.clone());
        let built = cached(&self.next_edit_backend, key, "next-edit", move || {
            config
                .models()?
                .completer(
                    &name,
                    false,
                    agentls_model::ClientOptions::default(),
                    |var| std::env::var(var).ok(),
                )
                .map_err(|e| e.message)
        })
        .await;
        Some(built)
    }
}

/// The completer in `slot` when it was built from `key`, else built now by `build` (on
/// the blocking pool: a local model loads its weights) and kept; the reason when there
/// is none, said once in the log.
async fn cached(
    slot: &tokio::sync::Mutex<Option<Backend>>,
    key: BackendKey,
    what: &str,
    build: impl FnOnce() -> Result<Arc<dyn Completer>, String> + Send + 'static,
) -> Result<Arc<dyn Completer>, String> {
    let mut backend = slot.lock().await;
    if let Some(b) = backend.as_ref().filter(|b| b.key == key) {
        return b.completer.clone();
    }
    let built = tokio::task::spawn_blocking(build)
        .await
        .unwrap_or_else(|e| Err(format!("building the completer failed: {e}")));
    match &built {
        Ok(c) => tracing::info!(model = c.name(), "{what} backend ready"),
        Err(e) => tracing::warn!("{what} is off: {e}"),
    }
    *backend = Some(Backend {
        key,
        completer: built.clone(),
    });
    built
}

/// The part of `rope` a whole-text replacement by `text` changes: `text` and `rope`
/// share what is before `start` and after `end` (chars of `rope`).
fn whole_change(rope: &Rope, text: &str) -> (usize, usize) {
    let prefix = rope
        .chars()
        .zip(text.chars())
        .take_while(|(a, b)| a == b)
        .count();
    let len = rope.len_chars();
    let new_len = text.chars().count();
    let suffix = rope
        .chars_at(len)
        .reversed()
        .zip(text.chars().rev())
        .take_while(|(a, b)| a == b)
        .count()
        .min(len - prefix)
        .min(new_len - prefix);
    (prefix, len - suffix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_keeps_the_latest_places_once() {
        let c = Completions::default();
        let a = DocUri::new("file:///a.rs");
        let b = DocUri::new("file:///b.rs");
        c.note_edit(&a, 10);
        c.note_edit(&b, 3);
        c.note_edit(&a, 12); // near the first: moves it to the end
        assert_eq!(c.ring(), vec![(b.clone(), 3), (a.clone(), 12)]);
        for line in 0..20 {
            c.note_edit(&b, 100 + line * 20);
        }
        assert_eq!(c.ring().len(), RING_CHUNKS);
        assert_eq!(c.ring().last(), Some(&(b.clone(), 480)));
        c.forget(&b);
        assert!(c.ring().is_empty());
    }

    #[test]
    fn a_newer_ticket_cancels_the_older() {
        let c = Completions::default();
        let first = c.begin();
        assert!(!first.token.is_cancelled());
        let second = c.begin();
        assert!(first.token.is_cancelled());
        assert!(!second.token.is_cancelled());
        let token = second.token.clone();
        drop(second);
        assert!(token.is_cancelled());
    }
}
