//! `textDocument/inlineCompletion` (ghost text) and, for Helix, `textDocument/completion`
//! with one item carrying the whole completion.
//!
//! A request takes its ticket (a newer one answers it with nothing at once), waits
//! `[completion] debounce_ms` when it was typed rather than invoked, builds the
//! fill-in-the-middle request on the blocking pool, and calls the backend with the
//! ticket's token. Nothing to offer, superseded, off for the language, no backend: an
//! empty answer, never an error the editor would show.

use std::sync::Arc;
use std::time::Duration;

use agentls_protocol::agent::{Position, Range};
use agentls_protocol::inline_completion as inline;
use agentls_text::PositionEncoding;
use tower_lsp::lsp_types as lsp;

use crate::completion::context::{Prepared, prepare};
use crate::convert::from_lsp;
use crate::state::State;

/// A completion at the cursor, in the client's terms.
#[derive(Debug)]
pub struct Answer {
    /// The text to insert.
    pub text: String,
    /// The cursor, in the negotiated encoding.
    pub at: Position,
    /// The word before the cursor (for the completion item's filter text).
    pub word: String,
}

/// `textDocument/inlineCompletion`.
pub async fn inline_completion(state: &Arc<State>, params: inline::Params) -> inline::Result {
    let debounce = params.context.trigger_kind != inline::TRIGGER_INVOKED;
    let position = lsp::Position::new(params.position.line, params.position.character);
    let items = complete(state, &params.text_document.uri, position, debounce)
        .await
        .map(|a| inline::InlineCompletionItem {
            insert_text: a.text,
            range: Range {
                start: a.at,
                end: a.at,
            },
        });
    inline::InlineCompletionList {
        items: items.into_iter().collect(),
    }
}

/// `textDocument/completion` for Helix (`[completion] completion_items`): one item
/// inserting the whole completion at the cursor; `None` when the setting is off.
pub async fn completion(
    state: &Arc<State>,
    params: lsp::CompletionParams,
) -> Option<lsp::CompletionResponse> {
    if !state.config().config.completion.completion_items {
        return None;
    }
    let doc = params.text_document_position;
    let answer = complete(state, doc.text_document.uri.as_str(), doc.position, true).await;
    let items = answer.map(|a| {
        let at = lsp::Position::new(a.at.line, a.at.character);
        let first = a.text.lines().next().unwrap_or_default().trim().to_owned();
        let lines = a.text.lines().count();
        let label = if lines > 1 {
            format!("{first} … (+{} lines)", lines - 1)
        } else {
            first
        };
        lsp::CompletionItem {
            label,
            kind: Some(lsp::CompletionItemKind::SNIPPET),
            detail: Some("agentls completion".to_owned()),
            documentation: Some(lsp::Documentation::MarkupContent(lsp::MarkupContent {
                kind: lsp::MarkupKind::Markdown,
                value: format!("```\n{}\n```", a.text),
            })),
            // Matches what the user typed of the word before the cursor.
            filter_text: Some(format!("{}{}", a.word, a.text)),
            sort_text: Some("0".to_owned()),
            preselect: Some(true),
            insert_text_format: Some(lsp::InsertTextFormat::PLAIN_TEXT),
            text_edit: Some(lsp::CompletionTextEdit::Edit(lsp::TextEdit {
                range: lsp::Range::new(at, at),
                new_text: a.text,
            })),
            ..Default::default()
        }
    });
    Some(lsp::CompletionResponse::List(lsp::CompletionList {
        // Typing on asks again: the completion is for this cursor only.
        is_incomplete: true,
        items: items.into_iter().collect(),
    }))
}

/// The completion at `position` of `uri`, or `None`.
async fn complete(
    state: &Arc<State>,
    uri: &str,
    position: lsp::Position,
    debounce: bool,
) -> Option<Answer> {
    let settings = state.config().config.completion;
    let uri = from_lsp::uri(&lsp::Url::parse(uri).ok()?);
    let snapshot = state.store.snapshot(&uri)?;
    if !settings.enabled_for(&snapshot.language_id) {
        return None;
    }
    let ticket = state.completions.begin();
    if debounce {
        tokio::select! {
            () = ticket.token.cancelled() => return None,
            () = tokio::time::sleep(Duration::from_millis(settings.debounce_ms)) => {}
        }
    }
    // The text as it is now: a change since the request moved the cursor's meaning.
    let now = state.store.snapshot(&uri)?;
    if now.version != snapshot.version || !now.in_sync {
        return None;
    }
    let encoding = state.encoding();
    let cursor = now
        .char_idx(from_lsp::position(position), encoding)
        .char_idx;
    let prepared = {
        let state = Arc::clone(state);
        let settings = settings.clone();
        tokio::select! {
            () = ticket.token.cancelled() => return None,
            p = tokio::task::spawn_blocking(move || prepare(&state, now, cursor, &settings)) => p.ok()?,
        }
    };
    let completer = tokio::select! {
        () = ticket.token.cancelled() => return None,
        c = state.completions.completer(state.config().config) => c.ok()?,
    };
    let Prepared {
        request,
        rules,
        cursor,
        snapshot,
    } = prepared;
    let answer = tokio::select! {
        () = ticket.token.cancelled() => return None,
        a = completer.complete(&request, &rules, ticket.token.clone()) => a,
    };
    let answer = match answer {
        Ok(a) => a,
        Err(e) => {
            tracing::info!(class = ?e.class, "completion failed: {}", e.message);
            return None;
        }
    };
    tracing::debug!(
        tokens = answer.tokens,
        cached = answer.cached_tokens,
        prompt = answer.prompt_tokens,
        stop = ?answer.stop,
        "completion"
    );
    let text = answer.text;
    if text.trim().is_empty() || request.suffix.starts_with(&text) {
        return None;
    }
    Some(Answer {
        at: to_position(&snapshot, cursor, encoding),
        word: word_before(&request.prefix),
        text,
    })
}

fn to_position(
    snapshot: &agentls_text::Snapshot,
    cursor: usize,
    encoding: PositionEncoding,
) -> Position {
    let p = snapshot.position(cursor, encoding);
    Position {
        line: p.line,
        character: p.character,
    }
}

/// The identifier characters just before the cursor.
fn word_before(prefix: &str) -> String {
    let start = prefix
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_alphanumeric() || *c == '_')
        .last()
        .map_or(prefix.len(), |(i, _)| i);
    prefix[start..].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_before_the_cursor() {
        assert_eq!(word_before("let x = fo"), "fo");
        assert_eq!(word_before("call("), "");
        assert_eq!(word_before(""), "");
    }
}
