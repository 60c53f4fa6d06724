//! Every conversion between LSP types and library types, in two directions, as in
//! rust-analyzer. Handlers never build library values from LSP ones by hand.

pub mod from_lsp;
pub mod to_lsp;
