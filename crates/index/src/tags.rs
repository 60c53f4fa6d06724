//! Running a language's tags query over a syntax tree: definitions with their nesting,
//! and references, with names kept in one buffer per file (interned later, on merge).

use std::sync::OnceLock;

use tree_sitter::{Query, QueryCursor, StreamingIterator, Tree};

use crate::Language;
use crate::symbol::{Point, ReferenceKind, Span, SymbolKind};

/// Marks "no parent" in [`RawDef::parent`].
pub(crate) const NO_PARENT: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
enum Role {
    Name,
    Def(SymbolKind),
    Ref(ReferenceKind),
    Other,
}

/// A compiled tags query and what each of its captures means.
pub(crate) struct TagsConfig {
    query: Query,
    roles: Vec<Role>,
}

/// The tags configuration for `lang`, compiled once per process. `None` if the query
/// does not compile (a bug the tests catch; logged once).
pub(crate) fn config(lang: Language) -> Option<&'static TagsConfig> {
    static CONFIGS: [OnceLock<Option<TagsConfig>>; 9] = [const { OnceLock::new() }; 9];
    CONFIGS[lang.index()]
        .get_or_init(|| match Query::new(&lang.grammar(), lang.tags_source()) {
            Ok(query) => {
                let roles = query
                    .capture_names()
                    .iter()
                    .map(|name| {
                        if *name == "name" {
                            Role::Name
                        } else if let Some(kind) = name.strip_prefix("definition.") {
                            SymbolKind::from_capture(kind).map_or(Role::Other, Role::Def)
                        } else if let Some(kind) = name.strip_prefix("reference.") {
                            Role::Ref(ReferenceKind::from_capture(kind))
                        } else {
                            Role::Other
                        }
                    })
                    .collect();
                Some(TagsConfig { query, roles })
            }
            Err(err) => {
                tracing::error!(language = ?lang, %err, "tags query does not compile");
                None
            }
        })
        .as_ref()
}

/// Checks that `lang`'s tags query compiles, with the error if not.
pub fn check_query(lang: Language) -> Result<(), String> {
    Query::new(&lang.grammar(), lang.tags_source())
        .map(drop)
        .map_err(|e| e.to_string())
}

/// A definition before interning: its name is `names[name.0..name.1]` of its [`FileTags`].
#[derive(Debug, Clone)]
pub(crate) struct RawDef {
    pub name: (u32, u32),
    pub kind: SymbolKind,
    pub span: Span,
    pub name_start: Point,
    /// Index of the enclosing definition in the same list, or [`NO_PARENT`].
    pub parent: u32,
    start_byte: usize,
    end_byte: usize,
}

/// A reference before interning.
#[derive(Debug, Clone)]
pub(crate) struct RawRef {
    pub name: (u32, u32),
    pub kind: ReferenceKind,
    pub start: Point,
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
    pub fn name(&self, range: (u32, u32)) -> &str {
        self.names
            .get(range.0 as usize..range.1 as usize)
            .unwrap_or_default()
    }
}

/// Runs the tags query of `lang` over `tree` (parsed from `text`).
pub(crate) fn extract(lang: Language, tree: &Tree, text: &str) -> FileTags {
    let mut out = FileTags::default();
    let Some(config) = config(lang) else {
        return out;
    };
    let bytes = text.as_bytes();
    let push_name = |names: &mut String, node: tree_sitter::Node<'_>| -> Option<(u32, u32)> {
        let s = text.get(node.byte_range())?;
        // Identifiers never span lines; a multi-line capture is a query mistake.
        if s.is_empty() || s.contains('\n') {
            return None;
        }
        let start = u32::try_from(names.len()).ok()?;
        names.push_str(s);
        Some((start, u32::try_from(names.len()).ok()?))
    };
    let mut def_name_bytes: Vec<usize> = Vec::new();
    let mut refs: Vec<(usize, RawRef)> = Vec::new();
    let mut cursor = QueryCursor::new();
    let mut matches = cursor.matches(&config.query, tree.root_node(), bytes);
    while let Some(m) = matches.next() {
        let mut name = None;
        let mut role = None;
        for cap in m.captures {
            match config.roles.get(cap.index as usize) {
                Some(Role::Name) => name = Some(cap.node),
                Some(r @ (Role::Def(_) | Role::Ref(_))) => role = Some((*r, cap.node)),
                _ => {}
            }
        }
        let (Some(name_node), Some((role, node))) = (name, role) else {
            continue;
        };
        match role {
            Role::Def(kind) => {
                let Some(name) = push_name(&mut out.names, name_node) else {
                    continue;
                };
                def_name_bytes.push(name_node.start_byte());
                out.defs.push(RawDef {
                    name,
                    kind,
                    span: Span {
                        start: Point::from_ts(node.start_position()),
                        end: Point::from_ts(node.end_position()),
                    },
                    name_start: Point::from_ts(name_node.start_position()),
                    parent: NO_PARENT,
                    start_byte: node.start_byte(),
                    end_byte: node.end_byte(),
                });
            }
            Role::Ref(kind) => {
                let Some(name) = push_name(&mut out.names, name_node) else {
                    continue;
                };
                refs.push((
                    name_node.start_byte(),
                    RawRef {
                        name,
                        kind,
                        start: Point::from_ts(name_node.start_position()),
                    },
                ));
            }
            _ => {}
        }
    }
    nest(&mut out.defs);
    def_name_bytes.sort_unstable();
    refs.sort_by_key(|(b, _)| *b);
    refs.dedup_by_key(|(b, _)| *b);
    out.refs = refs
        .into_iter()
        .filter(|(b, _)| def_name_bytes.binary_search(b).is_err())
        .map(|(_, r)| r)
        .collect();
    out
}

/// Sorts definitions outer-first, drops duplicates (two patterns on one node) and links
/// each to its innermost enclosing definition; functions inside class-like definitions
/// become methods.
fn nest(defs: &mut Vec<RawDef>) {
    defs.sort_by(|a, b| {
        a.start_byte
            .cmp(&b.start_byte)
            .then(b.end_byte.cmp(&a.end_byte))
            .then(a.name_start.cmp(&b.name_start))
    });
    defs.dedup_by(|b, a| {
        a.start_byte == b.start_byte && a.end_byte == b.end_byte && a.name_start == b.name_start
    });
    let mut stack: Vec<usize> = Vec::new();
    for i in 0..defs.len() {
        while let Some(&top) = stack.last() {
            if defs[top].end_byte >= defs[i].end_byte && defs[top].start_byte <= defs[i].start_byte
            {
                break;
            }
            stack.pop();
        }
        if let Some(&top) = stack.last() {
            defs[i].parent = u32::try_from(top).unwrap_or(NO_PARENT);
            if defs[i].kind == SymbolKind::Function && defs[top].kind.is_class_like() {
                defs[i].kind = SymbolKind::Method;
            }
        }
        stack.push(i);
    }
}
