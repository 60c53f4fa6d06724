//! Library → LSP.

use agentls_text::PositionEncoding;
use tower_lsp::lsp_types as lsp;

/// The LSP name of an encoding.
pub fn position_encoding(encoding: PositionEncoding) -> lsp::PositionEncodingKind {
    lsp::PositionEncodingKind::new(encoding.as_lsp_str())
}
