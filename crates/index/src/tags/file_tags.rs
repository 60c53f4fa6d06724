//! What the tags query (or a hand-written walk) found in one file, before interning:
//! below both the query's code (`tags.rs`) and the walks (`rust_walk`, `table_walk`),
//! which all fill it.

use crate::symbol::{Point, ReferenceKind, Span, SymbolKind};

/// The parent index of a definition at the top level.
pub(crate) const NO_PARENT: u32 = u32::MAX;

/// A definition before interning: its name is `names[name.0..name.1]` of its [`FileTags`].
#[derive(Debug, Clone)]
pub(crate) struct RawDef {
    pub name: (u32, u32),
    /// The kind after nesting (functions in classes become methods).
    pub kind: SymbolKind,
    /// The kind the query gave.
    pub(crate) query_kind: SymbolKind,
    pub span: Span,
    pub name_start: Point,
    /// Index of the enclosing definition in the same list, or [`NO_PARENT`].
    pub parent: u32,
    pub(crate) start_byte: usize,
    pub(crate) end_byte: usize,
    pub(crate) name_byte: usize,
}

/// A reference before interning.
#[derive(Debug, Clone)]
pub(crate) struct RawRef {
    pub name: (u32, u32),
    pub kind: ReferenceKind,
    pub start: Point,
    pub(crate) name_byte: usize,
    /// The byte range of the `@reference` capture (the call, the type...).
    pub(crate) node: (usize, usize),
}

/// Everything the tags query found in one file.
#[derive(Debug, Default)]
pub(crate) struct FileTags {
    pub names: String,
    /// Definitions in document order (by start, outer before inner).
    pub defs: Vec<RawDef>,
    pub refs: Vec<RawRef>,
}

impl FileTags {
    /// Copies the name under `node` into `names`; `None` for an empty or multi-line
    /// capture (identifiers never span lines; such a capture is a query mistake).
    pub(crate) fn push_name(
        &mut self,
        text: &str,
        node: tree_sitter::Node<'_>,
    ) -> Option<(u32, u32)> {
        let s = text.get(node.byte_range())?;
        if s.is_empty() || s.contains('\n') {
            return None;
        }
        let start = u32::try_from(self.names.len()).ok()?;
        self.names.push_str(s);
        Some((start, u32::try_from(self.names.len()).ok()?))
    }

    /// Records a definition: `node` is the whole definition, `name_node` its name.
    pub(crate) fn push_def(
        &mut self,
        text: &str,
        kind: SymbolKind,
        node: tree_sitter::Node<'_>,
        name_node: tree_sitter::Node<'_>,
    ) {
        let Some(name) = self.push_name(text, name_node) else {
            return;
        };
        self.defs.push(RawDef {
            name,
            kind,
            query_kind: kind,
            span: Span {
                start: Point::from_ts(node.start_position()),
                end: Point::from_ts(node.end_position()),
            },
            name_start: Point::from_ts(name_node.start_position()),
            parent: NO_PARENT,
            start_byte: node.start_byte(),
            end_byte: node.end_byte(),
            name_byte: name_node.start_byte(),
        });
    }

    /// Records a reference: `node` is the use (the call, the type...), `name_node` its name.
    pub(crate) fn push_ref(
        &mut self,
        text: &str,
        kind: ReferenceKind,
        node: tree_sitter::Node<'_>,
        name_node: tree_sitter::Node<'_>,
    ) {
        let Some(name) = self.push_name(text, name_node) else {
            return;
        };
        self.refs.push(RawRef {
            name,
            kind,
            start: Point::from_ts(name_node.start_position()),
            name_byte: name_node.start_byte(),
            node: (node.start_byte(), node.end_byte()),
        });
    }
}

impl FileTags {
    pub fn name(&self, range: (u32, u32)) -> &str {
        self.names
            .get(range.0 as usize..range.1 as usize)
            .unwrap_or_default()
    }
}
