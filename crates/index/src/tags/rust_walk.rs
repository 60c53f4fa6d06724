//! A hand-written equivalent of `queries/rust.scm` for the cold crawl: one cursor walk
//! over the tree, looking at each node's kind and the kinds of a few field children.
//!
//! Why: tree-sitter's query cursor costs about half as much as the parse itself on Rust
//! code, most of it spent keeping pattern states alive across the tree; this walk does
//! the same work in one pass with a table lookup per node. It must produce exactly the
//! records of the query (after [`super::finalize`]); `super::tests` compares the two on
//! fixtures and on broken input, and the incremental path (which still uses the query
//! over edited regions) checks the same invariant with random edits.

use tree_sitter::{Node, Tree};

use super::file_tags::FileTags;
use crate::Language;
use crate::symbol::{ReferenceKind, SymbolKind};

/// What a node kind means for the walk.
#[derive(Clone, Copy)]
enum Action {
    None,
    /// A definition whose `name` field child must have kind `name_kind`.
    Def(SymbolKind, u16),
    /// `impl_item`: `type:` names the impl, `trait:` is a reference.
    Impl,
    /// `call_expression`: `function:` is an identifier, a field or a scoped name.
    Call,
    /// `scoped_identifier`: `path:` identifier is a module reference.
    Scoped,
    /// `macro_invocation`: `macro:` identifier is a call.
    Macro,
    /// `type_identifier`: itself a type reference.
    TypeRef,
}

/// Node kind ids and field ids of the Rust grammar, resolved once.
pub(super) struct RustKinds {
    actions: Vec<Action>,
    /// Kinds whose error-free subtrees hold nothing the query matches (token trees,
    /// literals, comments): the walk does not descend into them.
    opaque: Vec<bool>,
    identifier: u16,
    type_identifier: u16,
    field_identifier: u16,
    generic_type: u16,
    field_expression: u16,
    scoped_identifier: u16,
    f_name: u16,
    f_type: u16,
    f_trait: u16,
    f_function: u16,
    f_field: u16,
    f_path: u16,
    f_macro: u16,
}

impl RustKinds {
    pub(super) fn new() -> Option<Self> {
        let lang = Language::Rust.grammar();
        let kind = |name: &str| Some(lang.id_for_node_kind(name, true)).filter(|&id| id != 0);
        let field = |name: &str| lang.field_id_for_name(name).map(|f| f.get());
        let identifier = kind("identifier")?;
        let type_identifier = kind("type_identifier")?;
        let field_identifier = kind("field_identifier")?;
        let mut actions = vec![Action::None; lang.node_kind_count()];
        let mut set = |name: &str, action: Action| -> Option<()> {
            *actions.get_mut(usize::from(kind(name)?))? = action;
            Some(())
        };
        set(
            "struct_item",
            Action::Def(SymbolKind::Struct, type_identifier),
        )?;
        set("enum_item", Action::Def(SymbolKind::Enum, type_identifier))?;
        set(
            "union_item",
            Action::Def(SymbolKind::Struct, type_identifier),
        )?;
        set("type_item", Action::Def(SymbolKind::Type, type_identifier))?;
        set(
            "trait_item",
            Action::Def(SymbolKind::Trait, type_identifier),
        )?;
        set("mod_item", Action::Def(SymbolKind::Module, identifier))?;
        set(
            "macro_definition",
            Action::Def(SymbolKind::Macro, identifier),
        )?;
        set(
            "function_item",
            Action::Def(SymbolKind::Function, identifier),
        )?;
        set(
            "function_signature_item",
            Action::Def(SymbolKind::Method, identifier),
        )?;
        set("const_item", Action::Def(SymbolKind::Constant, identifier))?;
        set("static_item", Action::Def(SymbolKind::Constant, identifier))?;
        set("enum_variant", Action::Def(SymbolKind::Field, identifier))?;
        set(
            "field_declaration",
            Action::Def(SymbolKind::Field, field_identifier),
        )?;
        set("impl_item", Action::Impl)?;
        set("call_expression", Action::Call)?;
        set("scoped_identifier", Action::Scoped)?;
        set("macro_invocation", Action::Macro)?;
        set("type_identifier", Action::TypeRef)?;
        let mut opaque = vec![false; lang.node_kind_count()];
        for name in [
            "token_tree",
            "token_repetition",
            "string_literal",
            "raw_string_literal",
            "char_literal",
            "line_comment",
            "block_comment",
        ] {
            *opaque.get_mut(usize::from(kind(name)?))? = true;
        }
        Some(Self {
            actions,
            opaque,
            identifier,
            type_identifier,
            field_identifier,
            generic_type: kind("generic_type")?,
            field_expression: kind("field_expression")?,
            scoped_identifier: kind("scoped_identifier")?,
            f_name: field("name")?,
            f_type: field("type")?,
            f_trait: field("trait")?,
            f_function: field("function")?,
            f_field: field("field")?,
            f_path: field("path")?,
            f_macro: field("macro")?,
        })
    }
}

/// Runs the walk; the result still goes through `finalize`.
pub(super) fn collect(kinds: &RustKinds, tree: &Tree, text: &str) -> FileTags {
    let mut w = Walk {
        kinds,
        text,
        out: FileTags::default(),
        children: tree.walk(),
    };
    let mut cursor = tree.walk();
    'walk: loop {
        let node = cursor.node();
        w.visit(node);
        let opaque = kinds.opaque.get(usize::from(node.kind_id())) == Some(&true);
        if (!opaque || node.has_error()) && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                continue 'walk;
            }
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    w.out
}

struct Walk<'a> {
    kinds: &'a RustKinds,
    text: &'a str,
    out: FileTags,
    /// Scratch cursor for iterating field children.
    children: tree_sitter::TreeCursor<'a>,
}

impl<'a> Walk<'a> {
    fn visit(&mut self, node: Node<'a>) {
        let k = self.kinds;
        let action = k
            .actions
            .get(usize::from(node.kind_id()))
            .copied()
            .unwrap_or(Action::None);
        match action {
            Action::None => {}
            Action::Def(kind, name_kind) => {
                for name in self.fields(node, k.f_name) {
                    if name.kind_id() == name_kind {
                        self.def(kind, node, name);
                    }
                }
            }
            Action::Impl => {
                for ty in self.fields(node, k.f_type) {
                    if ty.kind_id() == k.type_identifier {
                        self.def(SymbolKind::Impl, node, ty);
                    } else if ty.kind_id() == k.generic_type {
                        for inner in self.fields(ty, k.f_type) {
                            if inner.kind_id() == k.type_identifier {
                                self.def(SymbolKind::Impl, node, inner);
                            }
                        }
                    }
                }
                for tr in self.fields(node, k.f_trait) {
                    if tr.kind_id() == k.type_identifier {
                        self.reference(ReferenceKind::Implementation, node, tr);
                    }
                }
            }
            Action::Call => {
                for f in self.fields(node, k.f_function) {
                    let id = f.kind_id();
                    if id == k.identifier {
                        self.reference(ReferenceKind::Call, node, f);
                    } else if id == k.field_expression {
                        for name in self.fields(f, k.f_field) {
                            if name.kind_id() == k.field_identifier {
                                self.reference(ReferenceKind::Call, node, name);
                            }
                        }
                    } else if id == k.scoped_identifier {
                        for name in self.fields(f, k.f_name) {
                            if name.kind_id() == k.identifier {
                                self.reference(ReferenceKind::Call, node, name);
                            }
                        }
                    }
                }
            }
            Action::Scoped => {
                for path in self.fields(node, k.f_path) {
                    if path.kind_id() == k.identifier {
                        self.reference(ReferenceKind::Module, node, path);
                    }
                }
            }
            Action::Macro => {
                for m in self.fields(node, k.f_macro) {
                    if m.kind_id() == k.identifier {
                        self.reference(ReferenceKind::Call, node, m);
                    }
                }
            }
            Action::TypeRef => self.reference(ReferenceKind::Type, node, node),
        }
    }

    /// The children of `node` under `field` (almost always one).
    fn fields(&mut self, node: Node<'a>, field: u16) -> smallvec_like::Children<'a> {
        let mut out = smallvec_like::Children::default();
        let Some(field) = std::num::NonZeroU16::new(field) else {
            return out;
        };
        for child in node.children_by_field_id(field, &mut self.children) {
            out.push(child);
        }
        out
    }

    fn def(&mut self, kind: SymbolKind, node: Node<'_>, name_node: Node<'_>) {
        self.out.push_def(self.text, kind, node, name_node);
    }

    fn reference(&mut self, kind: ReferenceKind, node: Node<'_>, name_node: Node<'_>) {
        self.out.push_ref(self.text, kind, node, name_node);
    }
}

/// A tiny inline list, so looking up a field child allocates nothing in the common case.
mod smallvec_like {
    use tree_sitter::Node;

    #[derive(Default)]
    pub(super) struct Children<'a> {
        first: Option<Node<'a>>,
        rest: Vec<Node<'a>>,
    }

    impl<'a> Children<'a> {
        pub(super) fn push(&mut self, node: Node<'a>) {
            if self.first.is_none() {
                self.first = Some(node);
            } else {
                self.rest.push(node);
            }
        }
    }

    impl<'a> IntoIterator for Children<'a> {
        type Item = Node<'a>;
        type IntoIter =
            std::iter::Chain<std::option::IntoIter<Node<'a>>, std::vec::IntoIter<Node<'a>>>;
        fn into_iter(self) -> Self::IntoIter {
            self.first.into_iter().chain(self.rest)
        }
    }
}
