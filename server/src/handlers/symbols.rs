//! Symbol requests answered from the index, useful even without a model:
//! `textDocument/documentSymbol`, `workspace/symbol`, `textDocument/definition`,
//! `textDocument/references`.
//!
//! Definitions and references are matched by name across files, not resolved: best
//! effort, as documented in the README.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use agentls_index::{OutlineItem, Span};
use agentls_text::{PositionEncoding, ReadLimits, Snapshot};
use ropey::Rope;
use tower_lsp::lsp_types as lsp;

use crate::convert::{from_lsp, to_lsp};
use crate::indexing::{Reads, caught_up};
use crate::state::State;

/// Most results a `workspace/symbol` answer carries.
const WORKSPACE_SYMBOL_LIMIT: usize = 256;

/// Texts of the files one answer touches, read once each (live buffer first), to turn
/// byte columns into the session's encoding.
struct Texts<'a> {
    state: &'a State,
    encoding: PositionEncoding,
    limits: ReadLimits,
    cache: HashMap<PathBuf, Option<Rope>>,
}

impl<'a> Texts<'a> {
    fn new(state: &'a State) -> Self {
        Self {
            state,
            encoding: state.encoding(),
            limits: state.config().config.read_limits(),
            cache: HashMap::new(),
        }
    }

    fn location(&mut self, path: &Path, span: Span) -> Option<lsp::Location> {
        let uri = to_lsp::url(path)?;
        let range = self.range(path, span)?;
        Some(lsp::Location::new(uri, range))
    }

    fn range(&mut self, path: &Path, span: Span) -> Option<lsp::Range> {
        let (state, limits) = (self.state, &self.limits);
        let rope = self
            .cache
            .entry(path.to_owned())
            .or_insert_with(|| state.store.read(path, limits).ok().map(|t| t.rope));
        Some(to_lsp::range(rope.as_ref()?, span, self.encoding))
    }
}

/// `textDocument/documentSymbol`: the file's outline, nested.
pub fn document_symbol(
    state: &State,
    params: lsp::DocumentSymbolParams,
) -> Option<lsp::DocumentSymbolResponse> {
    let path = params.text_document.uri.to_file_path().ok()?;
    let uri = from_lsp::uri(&params.text_document.uri);
    let known = caught_up(state, Reads::One(&uri)).outline(&path);
    let outline = match known {
        Some(outline) => outline,
        // Not indexed (a closed file the crawl has not reached yet; an open one is in
        // the index caught up above): its outline from a parse of its own, with no
        // lock on the index, so that other requests never wait on this parse. The
        // index gets the file from the crawl.
        None => {
            let text = match state.store.snapshot(&uri) {
                Some(snapshot) => snapshot.text(),
                None if state.root().is_some_and(|root| path.starts_with(root)) => state
                    .store
                    .read(&path, &state.config().config.read_limits())
                    .ok()?
                    .rope
                    .to_string(),
                None => return None,
            };
            let mut alone = agentls_index::Index::default();
            alone.update_file(&path, &text);
            alone.outline(&path)?
        }
    };
    let mut texts = Texts::new(state);
    let symbols = outline
        .iter()
        .filter_map(|item| document_symbol_item(&mut texts, &path, item))
        .collect();
    Some(lsp::DocumentSymbolResponse::Nested(symbols))
}

fn document_symbol_item(
    texts: &mut Texts<'_>,
    path: &Path,
    item: &OutlineItem,
) -> Option<lsp::DocumentSymbol> {
    let range = texts.range(path, item.span)?;
    let selection_range = texts.range(path, item.name_span)?;
    let children = item
        .children
        .iter()
        .filter_map(|c| document_symbol_item(texts, path, c))
        .collect::<Vec<_>>();
    #[allow(deprecated)] // `deprecated` is a required field of the struct, itself deprecated.
    Some(lsp::DocumentSymbol {
        name: item.name.to_string(),
        detail: None,
        kind: to_lsp::symbol_kind(item.kind),
        tags: None,
        deprecated: None,
        range,
        selection_range,
        children: (!children.is_empty()).then_some(children),
    })
}

/// `workspace/symbol`: definitions matching the query fuzzily, best first.
pub fn workspace_symbol(
    state: &State,
    params: lsp::WorkspaceSymbolParams,
) -> Vec<lsp::SymbolInformation> {
    if let Some(question) = params.query.strip_prefix(super::semantic::SYMBOL_PREFIX) {
        return super::semantic::as_symbols(state, question);
    }
    let symbols =
        caught_up(state, Reads::All).workspace_symbols(&params.query, WORKSPACE_SYMBOL_LIMIT);
    let mut texts = Texts::new(state);
    symbols
        .into_iter()
        .filter_map(|s| {
            #[allow(deprecated)] // as above
            Some(lsp::SymbolInformation {
                name: s.name.to_string(),
                kind: to_lsp::symbol_kind(s.kind),
                tags: None,
                deprecated: None,
                location: texts.location(&s.path, s.name_span)?,
                container_name: s.container.as_deref().map(str::to_owned),
            })
        })
        .collect()
}

/// The identifier at a position of an open document (or of the file on disk).
fn word_at(state: &State, doc: &lsp::TextDocumentPositionParams) -> Option<String> {
    let uri = from_lsp::uri(&doc.text_document.uri);
    let snapshot = match state.store.snapshot(&uri) {
        Some(s) => s,
        None => {
            // A closed file: its disk text, as a snapshot that no document backs.
            let path = uri.to_file_path()?;
            let text = state
                .store
                .read(&path, &state.config().config.read_limits())
                .ok()?;
            Snapshot {
                uri: uri.clone(),
                language_id: "".into(),
                version: 0,
                revision: 0,
                rope: text.rope,
                in_sync: true,
            }
        }
    };
    let at = snapshot
        .char_idx(from_lsp::position(doc.position), state.encoding())
        .char_idx;
    snapshot.word_at(at)
}

/// `textDocument/definition`: every definition named as the word at the cursor.
pub fn definition(
    state: &State,
    params: lsp::GotoDefinitionParams,
) -> Option<lsp::GotoDefinitionResponse> {
    let name = word_at(state, &params.text_document_position_params)?;
    let definitions = caught_up(state, Reads::All).definitions(&name);
    let mut texts = Texts::new(state);
    let locations: Vec<_> = definitions
        .iter()
        .filter_map(|d| texts.location(&d.path, d.name_span))
        .collect();
    (!locations.is_empty()).then_some(lsp::GotoDefinitionResponse::Array(locations))
}

/// `textDocument/references`: every use of the word at the cursor (by name), and its
/// definitions when the client asks for the declaration too.
pub fn references(state: &State, params: lsp::ReferenceParams) -> Option<Vec<lsp::Location>> {
    let name = word_at(state, &params.text_document_position)?;
    let (definitions, references) = {
        let index = caught_up(state, Reads::All);
        let definitions = if params.context.include_declaration {
            index.definitions(&name)
        } else {
            vec![]
        };
        (definitions, index.references(&name))
    };
    let mut texts = Texts::new(state);
    let mut locations: Vec<_> = definitions
        .iter()
        .filter_map(|d| texts.location(&d.path, d.name_span))
        .collect();
    locations.extend(
        references
            .iter()
            .filter_map(|r| texts.location(&r.path, r.span)),
    );
    Some(locations)
}
