//! A table-driven equivalent of simple tags queries (C and C++) for the cold crawl: one
//! cursor walk over the tree; at each node, the rules of its kind follow chains of field
//! children down to the name.
//!
//! Why: as for Rust (`rust_walk`), the query cursor costs a large share of the parse on
//! C and C++ code. Each rule here is one pattern of `queries/c.scm` or
//! `queries/cpp.scm`, written as a path: the pattern's node, then `(field, kind)` steps
//! (`None` for a child pattern without a field), the last step being the `@name`. It
//! must produce exactly the records of the query (after [`super::finalize`]);
//! `super::tests` compares the two, and the incremental path still uses the query.

use std::num::NonZeroU16;

use tree_sitter::{Node, Tree, TreeCursor};

use super::file_tags::FileTags;
use crate::Language;
use crate::symbol::{ReferenceKind, SymbolKind};

/// What a rule records.
#[derive(Clone, Copy)]
enum Role {
    Def(SymbolKind),
    Ref(ReferenceKind),
}

/// One pattern, in source form: the pattern's node kind, the steps to the name
/// (`(field, kind)`, field `""` for none; no steps: the node is its own name), a field
/// that must hold a named child (`body: (_)`), and the capture (`definition.function`).
type Spec = (
    &'static str,
    &'static [(&'static str, &'static str)],
    Option<&'static str>,
    &'static str,
);

const DECL: &str = "declarator";

/// `queries/c.scm`, rule for rule.
const C: &[Spec] = &[
    (
        "function_definition",
        &[(DECL, "function_declarator"), (DECL, "identifier")],
        None,
        "definition.function",
    ),
    (
        "function_definition",
        &[
            (DECL, "pointer_declarator"),
            (DECL, "function_declarator"),
            (DECL, "identifier"),
        ],
        None,
        "definition.function",
    ),
    (
        "declaration",
        &[(DECL, "function_declarator"), (DECL, "identifier")],
        None,
        "definition.function",
    ),
    (
        "declaration",
        &[
            (DECL, "pointer_declarator"),
            (DECL, "function_declarator"),
            (DECL, "identifier"),
        ],
        None,
        "definition.function",
    ),
    (
        "struct_specifier",
        &[("name", "type_identifier")],
        Some("body"),
        "definition.struct",
    ),
    (
        "union_specifier",
        &[("name", "type_identifier")],
        Some("body"),
        "definition.struct",
    ),
    (
        "enum_specifier",
        &[("name", "type_identifier")],
        Some("body"),
        "definition.enum",
    ),
    (
        "type_definition",
        &[(DECL, "type_identifier")],
        None,
        "definition.type",
    ),
    (
        "preproc_def",
        &[("name", "identifier")],
        None,
        "definition.macro",
    ),
    (
        "preproc_function_def",
        &[("name", "identifier")],
        None,
        "definition.macro",
    ),
    (
        "enumerator",
        &[("name", "identifier")],
        None,
        "definition.constant",
    ),
    (
        "call_expression",
        &[("function", "identifier")],
        None,
        "reference.call",
    ),
    (
        "call_expression",
        &[
            ("function", "field_expression"),
            ("field", "field_identifier"),
        ],
        None,
        "reference.call",
    ),
    ("type_identifier", &[], None, "reference.type"),
];

/// `queries/cpp.scm`, rule for rule.
const CPP: &[Spec] = &[
    (
        "function_definition",
        &[(DECL, "function_declarator"), (DECL, "identifier")],
        None,
        "definition.function",
    ),
    (
        "function_definition",
        &[
            (DECL, "pointer_declarator"),
            (DECL, "function_declarator"),
            (DECL, "identifier"),
        ],
        None,
        "definition.function",
    ),
    (
        "function_definition",
        &[
            (DECL, "reference_declarator"),
            ("", "function_declarator"),
            (DECL, "identifier"),
        ],
        None,
        "definition.function",
    ),
    (
        "function_definition",
        &[(DECL, "function_declarator"), (DECL, "field_identifier")],
        None,
        "definition.method",
    ),
    (
        "function_definition",
        &[
            (DECL, "function_declarator"),
            (DECL, "qualified_identifier"),
            ("name", "identifier"),
        ],
        None,
        "definition.method",
    ),
    (
        "declaration",
        &[(DECL, "function_declarator"), (DECL, "identifier")],
        None,
        "definition.function",
    ),
    (
        "field_declaration",
        &[(DECL, "function_declarator"), (DECL, "field_identifier")],
        None,
        "definition.method",
    ),
    (
        "class_specifier",
        &[("name", "type_identifier")],
        Some("body"),
        "definition.class",
    ),
    (
        "struct_specifier",
        &[("name", "type_identifier")],
        Some("body"),
        "definition.struct",
    ),
    (
        "union_specifier",
        &[("name", "type_identifier")],
        Some("body"),
        "definition.struct",
    ),
    (
        "enum_specifier",
        &[("name", "type_identifier")],
        Some("body"),
        "definition.enum",
    ),
    (
        "namespace_definition",
        &[("name", "namespace_identifier")],
        None,
        "definition.module",
    ),
    (
        "type_definition",
        &[(DECL, "type_identifier")],
        None,
        "definition.type",
    ),
    (
        "alias_declaration",
        &[("name", "type_identifier")],
        None,
        "definition.type",
    ),
    (
        "preproc_def",
        &[("name", "identifier")],
        None,
        "definition.macro",
    ),
    (
        "preproc_function_def",
        &[("name", "identifier")],
        None,
        "definition.macro",
    ),
    (
        "call_expression",
        &[("function", "identifier")],
        None,
        "reference.call",
    ),
    (
        "call_expression",
        &[
            ("function", "field_expression"),
            ("field", "field_identifier"),
        ],
        None,
        "reference.call",
    ),
    (
        "call_expression",
        &[("function", "qualified_identifier"), ("name", "identifier")],
        None,
        "reference.call",
    ),
    ("type_identifier", &[], None, "reference.type"),
];

/// Kinds whose error-free subtrees hold nothing the rules match.
const OPAQUE: &[&str] = &[
    "comment",
    "string_literal",
    "char_literal",
    "raw_string_literal",
];

/// One rule with kinds and fields resolved to ids.
struct Rule {
    role: Role,
    /// `(field, kind)`; field `None`: any child.
    steps: Vec<(Option<NonZeroU16>, u16)>,
    require: Option<NonZeroU16>,
}

/// A language's rules by node kind, resolved once.
pub(super) struct TableKinds {
    rules: Vec<Vec<Rule>>,
    opaque: Vec<bool>,
}

impl TableKinds {
    /// The tables for `lang`, if it has one (C and C++). `None` also if the grammar lacks
    /// a kind or field a rule names (the query would not compile either).
    pub(super) fn new(lang: Language) -> Option<Self> {
        let specs = match lang {
            Language::C => C,
            Language::Cpp => CPP,
            _ => return None,
        };
        let grammar = lang.grammar();
        let kind = |name: &str| Some(grammar.id_for_node_kind(name, true)).filter(|&id| id != 0);
        let field = |name: &str| grammar.field_id_for_name(name);
        let mut rules: Vec<Vec<Rule>> =
            (0..grammar.node_kind_count()).map(|_| Vec::new()).collect();
        for &(root, steps, require, capture) in specs {
            let role = if let Some(k) = capture.strip_prefix("definition.") {
                Role::Def(SymbolKind::from_capture(k)?)
            } else {
                Role::Ref(ReferenceKind::from_capture(
                    capture.strip_prefix("reference.")?,
                ))
            };
            let steps = steps
                .iter()
                .map(|&(f, k)| {
                    let f = if f.is_empty() { None } else { Some(field(f)?) };
                    Some((f, kind(k)?))
                })
                .collect::<Option<Vec<_>>>()?;
            let require = match require {
                Some(f) => Some(field(f)?),
                None => None,
            };
            rules.get_mut(usize::from(kind(root)?))?.push(Rule {
                role,
                steps,
                require,
            });
        }
        let mut opaque = vec![false; grammar.node_kind_count()];
        for name in OPAQUE {
            if let Some(slot) = kind(name).and_then(|k| opaque.get_mut(usize::from(k))) {
                *slot = true;
            }
        }
        Some(Self { rules, opaque })
    }
}

/// Runs the walk; the result still goes through `finalize`.
pub(super) fn collect(kinds: &TableKinds, tree: &Tree, text: &str) -> FileTags {
    let mut out = FileTags::default();
    let mut scratch = tree.walk();
    let mut cursor = tree.walk();
    'walk: loop {
        let node = cursor.node();
        let id = usize::from(node.kind_id());
        for rule in kinds.rules.get(id).into_iter().flatten() {
            let required = rule.require.is_none_or(|f| {
                node.child_by_field_id(f.get())
                    .is_some_and(|c| c.is_named())
            });
            if required {
                follow(&mut out, text, rule, node, node, &rule.steps, &mut scratch);
            }
        }
        let opaque = kinds.opaque.get(id) == Some(&true);
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
    out
}

/// Follows `steps` from `at`; records `root` with each name found at the end.
fn follow<'t>(
    out: &mut FileTags,
    text: &str,
    rule: &Rule,
    root: Node<'t>,
    at: Node<'t>,
    steps: &[(Option<NonZeroU16>, u16)],
    scratch: &mut TreeCursor<'t>,
) {
    let Some((&(field, kind), rest)) = steps.split_first() else {
        match rule.role {
            Role::Def(k) => out.push_def(text, k, root, at),
            Role::Ref(k) => out.push_ref(text, k, root, at),
        }
        return;
    };
    // Almost always one child matches; collect first so `scratch` is free for the rest.
    let mut found: Vec<Node<'t>> = Vec::new();
    match field {
        Some(f) => {
            for child in at.children_by_field_id(f, scratch) {
                if child.kind_id() == kind {
                    found.push(child);
                }
            }
        }
        None => {
            for child in at.named_children(scratch) {
                if child.kind_id() == kind {
                    found.push(child);
                }
            }
        }
    }
    for child in found {
        follow(out, text, rule, root, child, rest, scratch);
    }
}
