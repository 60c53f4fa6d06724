//! Library → LSP.

use agentls_text::PositionEncoding;
use tower_lsp::lsp_types as lsp;

/// The LSP name of an encoding.
pub fn position_encoding(encoding: PositionEncoding) -> lsp::PositionEncodingKind {
    lsp::PositionEncodingKind::new(encoding.as_lsp_str())
}

/// A tree-sitter span (UTF-8 byte columns) on `rope` as an LSP range in `encoding`.
pub fn range(
    rope: &ropey::Rope,
    span: agentls_index::Span,
    encoding: PositionEncoding,
) -> lsp::Range {
    let point = |p: agentls_index::Point| {
        let pos = agentls_text::position::from_utf8_point(rope, p.line, p.column, encoding);
        lsp::Position::new(pos.line, pos.character)
    };
    lsp::Range::new(point(span.start), point(span.end))
}

/// A symbol kind.
pub fn symbol_kind(kind: agentls_index::SymbolKind) -> lsp::SymbolKind {
    use agentls_index::SymbolKind as K;
    match kind {
        K::Function => lsp::SymbolKind::FUNCTION,
        K::Method => lsp::SymbolKind::METHOD,
        K::Class | K::Impl => lsp::SymbolKind::CLASS,
        K::Struct => lsp::SymbolKind::STRUCT,
        K::Enum => lsp::SymbolKind::ENUM,
        K::Interface | K::Trait => lsp::SymbolKind::INTERFACE,
        K::Type => lsp::SymbolKind::TYPE_PARAMETER,
        K::Module => lsp::SymbolKind::MODULE,
        K::Macro => lsp::SymbolKind::FUNCTION,
        K::Constant => lsp::SymbolKind::CONSTANT,
        K::Variable => lsp::SymbolKind::VARIABLE,
        K::Field => lsp::SymbolKind::FIELD,
    }
}

/// The `file:` URL of a path.
pub fn url(path: &std::path::Path) -> Option<lsp::Url> {
    lsp::Url::from_file_path(path).ok()
}
