//! Next-edit suggestions from the user's last burst in a document, without a model
//! ([`agentls_text::next_edit::predict`]), in the server's terms: the scope a rename is
//! looked for in comes from the index's outline, the edits leave as char ranges of the
//! snapshot they were computed on.
//!
//! **While a word is typed.** When the cursor touches the identifier the last burst
//! ends in and that burst's last keystroke is younger than [`TYPING`], the user may
//! still be typing it (`t`, `to`, `tot`… on the way to `total`): the request waits
//! until [`TYPING`] has passed since that keystroke (a newer request or a change ends
//! the wait with nothing) and predicts from the text then.

use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use agentls_index::symbol::{OutlineItem, SymbolKind};
use agentls_text::Snapshot;
use agentls_text::next_edit::predict::{AddedParameter, added_parameter, call_sites};
use agentls_text::next_edit::{Burst, Kind, Prediction, Suggestion, predict, word_being_typed};

use crate::state::State;

/// How long after its last keystroke a word the cursor touches counts as being typed.
pub const TYPING: Duration = Duration::from_millis(300);

/// What a request should do now.
#[derive(Debug)]
pub enum Step {
    /// Nothing to suggest.
    Nothing,
    /// The word at the cursor is being typed: ask again after this long.
    Wait(Duration),
    /// These edits, and those in other open documents.
    Suggest(Prediction, Vec<(Snapshot, Vec<Suggestion>)>),
}

/// The step for the cursor at `cursor` (a char index of `snapshot`), the document's
/// last burst being `burst`.
pub fn step(state: &State, snapshot: &Snapshot, burst: &Burst, cursor: usize) -> Step {
    let text: Vec<char> = snapshot.rope.chars().collect();
    if word_being_typed(&text, burst, cursor) {
        let age = burst.last.elapsed();
        if age < TYPING {
            return Step::Wait(TYPING - age);
        }
    }
    match prediction(state, snapshot, burst, &text) {
        Some(p) => {
            let others = elsewhere(state, snapshot, burst, &p);
            Step::Suggest(p, others)
        }
        None => Step::Nothing,
    }
}

/// The prediction from `burst` in `snapshot` (whose chars are `text`), asked for
/// explicitly: no wait for a word being typed.
pub fn prediction(
    state: &State,
    snapshot: &Snapshot,
    burst: &Burst,
    text: &[char],
) -> Option<Prediction> {
    let scope = rename_scope(state, snapshot, burst);
    let p = predict(text, burst, scope)?;
    tracing::debug!(edits = p.edits.len(), "next edit: {}", describe(&p.kind));
    Some(p)
}

/// Other open documents the prediction reaches: when the burst added a parameter, the
/// calls of the function in every other open, in-sync document that names it.
pub fn elsewhere(
    state: &State,
    snapshot: &Snapshot,
    burst: &Burst,
    prediction: &Prediction,
) -> Vec<(Snapshot, Vec<Suggestion>)> {
    if !matches!(prediction.kind, Kind::Parameter { .. }) {
        return Vec::new();
    }
    let text: Vec<char> = snapshot.rope.chars().collect();
    let Some(added) = added_parameter(&text, burst) else {
        return Vec::new();
    };
    // No definition of it in the other documents to skip by place.
    let added = AddedParameter {
        definition: usize::MAX,
        ..added
    };
    let mut out = Vec::new();
    for other in state.store.snapshots() {
        if other.uri == snapshot.uri || !other.in_sync {
            continue;
        }
        let words = other.rope.chars().collect::<Vec<_>>();
        let edits = call_sites(&words, &added);
        if !edits.is_empty() {
            out.push((other, edits));
        }
    }
    out
}

/// Where a rename at `burst` is looked for: the innermost function around it, unless
/// the renamed word is that function's own name (then the whole document); the whole
/// document when the index knows no function there.
fn rename_scope(state: &State, snapshot: &Snapshot, burst: &Burst) -> Option<Range<usize>> {
    let rope = &snapshot.rope;
    let start = burst.start.min(rope.len_chars());
    let line = rope.char_to_line(start);
    let path = snapshot.uri.to_file_path()?;
    let outline = state.index().outline(Path::new(&path))?;
    let item = innermost_function(&outline, line)?;
    if item.name_span.start.line as usize == line {
        return None;
    }
    let first = rope.line_to_char((item.span.start.line as usize).min(rope.len_lines()));
    let last = rope.line_to_char((item.span.end.line as usize + 1).min(rope.len_lines()));
    Some(first..last)
}

/// The innermost function or method whose lines hold `line`.
fn innermost_function(items: &[OutlineItem], line: usize) -> Option<&OutlineItem> {
    let holds =
        |i: &OutlineItem| (i.span.start.line as usize) <= line && line <= i.span.end.line as usize;
    let item = items.iter().find(|i| holds(i))?;
    innermost_function(&item.children, line)
        .or_else(|| matches!(item.kind, SymbolKind::Function | SymbolKind::Method).then_some(item))
}

/// A short description of a prediction, for the log and a code action's title.
pub fn describe(kind: &Kind) -> String {
    match kind {
        Kind::Rename { from, to } => format!("rename `{from}` to `{to}`"),
        Kind::Parameter { function, name } => format!("pass `{name}` to `{function}`"),
        Kind::Rewrite { model } => format!("{model}'s next edit"),
    }
}
