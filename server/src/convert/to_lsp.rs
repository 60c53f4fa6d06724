//! Library → LSP.

use agentls_model::{Message, Part, Role};
use agentls_protocol::agent::get_transcript;
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

/// The transcript in the protocol's terms.
pub fn transcript(messages: &[Message]) -> Vec<get_transcript::Message> {
    messages
        .iter()
        .map(|m| {
            let only_results =
                !m.parts.is_empty() && m.parts.iter().all(|p| matches!(p, Part::ToolResult(_)));
            let role = match m.role {
                Role::Assistant => "assistant",
                Role::User if only_results => "tool",
                Role::User => "user",
            };
            let parts = m
                .parts
                .iter()
                .map(|p| match p {
                    Part::Text(text) => get_transcript::Part::Text { text: text.clone() },
                    Part::ToolCall(c) => get_transcript::Part::ToolCall {
                        id: c.id.clone(),
                        name: c.name.clone(),
                        arguments: c.arguments.clone(),
                    },
                    Part::ToolResult(r) => get_transcript::Part::ToolResult {
                        call_id: r.call_id.clone(),
                        content: r.content.clone(),
                        is_error: r.is_error,
                    },
                })
                .collect();
            get_transcript::Message {
                role: role.to_owned(),
                parts,
            }
        })
        .collect()
}

/// A char range of `rope` as a protocol range in `encoding`.
pub fn protocol_range(
    rope: &ropey::Rope,
    range: std::ops::Range<usize>,
    encoding: PositionEncoding,
) -> agentls_protocol::agent::Range {
    let point = |c: usize| {
        let p = agentls_text::position::to_position(rope, c, encoding);
        agentls_protocol::agent::Position {
            line: p.line,
            character: p.character,
        }
    };
    agentls_protocol::agent::Range {
        start: point(range.start),
        end: point(range.end),
    }
}

/// A pending review change of `session` as `agent/listChanges` lists it, located on
/// `current`, the document as it is now (`None`: it could not be read, so no ranges).
pub fn pending_change(
    session: &str,
    change: &crate::agent::PendingChange,
    current: Option<&agentls_text::SourceText>,
    encoding: PositionEncoding,
) -> agentls_protocol::agent::list_changes::Change {
    let summary = change.summary();
    let ranges = current
        .and_then(|c| Some((c, change.current_ranges(&c.rope)?)))
        .map(|(c, ranges)| {
            ranges
                .into_iter()
                .map(|r| protocol_range(&c.rope, r, encoding))
                .collect()
        })
        .unwrap_or_default();
    agentls_protocol::agent::list_changes::Change {
        id: change.id,
        session: session.to_owned(),
        uri: url(&change.path).map(|u| u.to_string()).unwrap_or_default(),
        version: current.and_then(|c| c.version),
        ranges,
        kind: summary.kind,
        lines_added: u32::try_from(summary.lines_added).unwrap_or(u32::MAX),
        lines_removed: u32::try_from(summary.lines_removed).unwrap_or(u32::MAX),
    }
}
