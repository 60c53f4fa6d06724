//! `agentls/semanticSearch`, and `workspace/symbol` queries that start with `?`: code
//! found by what it does, from the same semantic index the agent's tool searches.

use std::path::Path;

use agentls_protocol::semantic_search::{Hit, Params, Result as Answer};
use tower_lsp::jsonrpc;
use tower_lsp::lsp_types as lsp;

use crate::convert::to_lsp;
use crate::state::State;

/// Hits when the request names no limit.
const DEFAULT_LIMIT: u32 = 10;
/// Most hits one answer carries.
const MAX_LIMIT: u32 = 100;

/// A `workspace/symbol` query with this prefix is a semantic search.
pub const SYMBOL_PREFIX: char = '?';

/// The semantic index's answer for `query`, at most `limit` hits, within `glob`.
fn find(
    state: &State,
    query: &str,
    limit: u32,
    glob: Option<&str>,
) -> jsonrpc::Result<agentls_semantic::Answer> {
    let query = query.trim();
    if query.is_empty() {
        return Err(jsonrpc::Error::invalid_params(
            "semanticSearch: empty query",
        ));
    }
    let limit = limit.clamp(1, MAX_LIMIT);
    let filter = match (glob, state.root()) {
        (Some(glob), Some(root)) => {
            Some(agentls_semantic::PathGlob::new(&root, glob).map_err(|e| {
                jsonrpc::Error::invalid_params(format!("semanticSearch: bad glob `{glob}`: {e}"))
            })?)
        }
        _ => None,
    };
    let accept = |p: &Path| filter.as_ref().is_none_or(|g| g.matches(p));
    let index = state.index_handle();
    Ok(state
        .semantic
        .search(&index, query, limit as usize, Some(&accept)))
}

/// `agentls/semanticSearch`.
pub fn search(state: &State, params: Params) -> jsonrpc::Result<Answer> {
    let answer = find(
        state,
        &params.query,
        params.limit.unwrap_or(DEFAULT_LIMIT),
        params.path.as_deref(),
    )?;
    let hits = answer
        .hits
        .iter()
        .filter_map(|h| {
            Some(Hit {
                uri: to_lsp::url(&h.chunk.path)?.to_string(),
                start_line: h.chunk.start_line,
                end_line: h.chunk.end_line,
                symbol: h.chunk.symbol.as_deref().map(str::to_owned),
                kind: h.chunk.kind.map(|k| k.as_str().to_owned()),
                score: h.score,
            })
        })
        .collect();
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    Ok(Answer {
        hits,
        chunks: count(answer.stats.chunks),
        embedded: count(answer.stats.embedded),
        files: count(answer.stats.files),
        ranking: if answer.vectors { "hybrid" } else { "lexical" }.to_owned(),
        model: answer.vectors.then(|| answer.model_id.clone()).flatten(),
    })
}

/// `workspace/symbol` with a `?question`: the semantic hits as symbols (a chunk without
/// a definition is named by its first line), so any editor's symbol picker can search
/// by meaning.
pub fn as_symbols(state: &State, query: &str) -> Vec<lsp::SymbolInformation> {
    let Ok(answer) = find(state, query, 50, None) else {
        return Vec::new();
    };
    answer
        .hits
        .iter()
        .filter_map(|h| {
            let c = &h.chunk;
            let range = lsp::Range::new(
                lsp::Position::new(c.start_line, 0),
                lsp::Position::new(c.end_line + 1, 0),
            );
            #[allow(deprecated)]
            // `deprecated` is a required field of the struct, itself deprecated.
            Some(lsp::SymbolInformation {
                name: match &c.symbol {
                    Some(s) => s.to_string(),
                    None => format!("lines {}-{}", c.start_line + 1, c.end_line + 1),
                },
                kind: c.kind.map_or(lsp::SymbolKind::FILE, to_lsp::symbol_kind),
                tags: None,
                deprecated: None,
                location: lsp::Location::new(to_lsp::url(&c.path)?, range),
                container_name: None,
            })
        })
        .collect()
}
