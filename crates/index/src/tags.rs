//! Running a language's tags query over a syntax tree: definitions with their nesting,
//! and references, with names kept in one buffer per file (interned later, on merge).

use std::ops::Range;
use std::sync::OnceLock;

use tree_sitter::{InputEdit, Query, QueryCursor, StreamingIterator, Tree};

use crate::Language;
use crate::symbol::{Point, ReferenceKind, SymbolKind};

mod file_tags;
mod rust_walk;
mod table_walk;

pub(crate) use file_tags::{FileTags, NO_PARENT, RawDef, RawRef};

/// Marks "no parent" in [`RawDef::parent`].

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
        .get_or_init(|| match new_query(lang) {
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
    new_query(lang).map(drop).map_err(|e| e.to_string())
}

fn new_query(lang: Language) -> Result<Query, tree_sitter::QueryError> {
    crate::alloc::init();
    Query::new(&lang.grammar(), lang.tags_source())
}

/// Runs the tags query of `lang` over `tree` (parsed from `text`).
/// For Rust, C and C++, a hand-written walk that yields the same records as the query,
/// faster (see `rust_walk` and `table_walk`); the query still serves edited regions.
pub(crate) fn extract(lang: Language, tree: &Tree, text: &str) -> FileTags {
    static RUST: OnceLock<Option<rust_walk::RustKinds>> = OnceLock::new();
    static C: OnceLock<Option<table_walk::TableKinds>> = OnceLock::new();
    static CPP: OnceLock<Option<table_walk::TableKinds>> = OnceLock::new();
    let table = |cell: &'static OnceLock<Option<table_walk::TableKinds>>| {
        cell.get_or_init(|| table_walk::TableKinds::new(lang))
            .as_ref()
    };
    let mut out = match lang {
        Language::Rust => match RUST.get_or_init(rust_walk::RustKinds::new) {
            Some(kinds) => rust_walk::collect(kinds, tree, text),
            None => collect(lang, tree, text, None),
        },
        Language::C | Language::Cpp => match table(if lang == Language::C { &C } else { &CPP }) {
            Some(kinds) => table_walk::collect(kinds, tree, text),
            None => collect(lang, tree, text, None),
        },
        _ => collect(lang, tree, text, None),
    };
    finalize(&mut out);
    out
}

/// Re-extracts after an edit: `old` holds the tags before `edit`; only definitions and
/// references whose nodes intersect `affected` (new byte offsets, covering every changed
/// range) are looked up again, the rest are shifted through the edit.
pub(crate) fn reextract(
    lang: Language,
    tree: &Tree,
    text: &str,
    old: &FileTags,
    edit: &InputEdit,
    affected: Range<usize>,
) -> FileTags {
    let hits = |start: usize, end: usize| start <= affected.end && affected.start <= end;
    // Widened by a byte: the cursor's range test is strict, ours is inclusive.
    let query_range = affected.start.saturating_sub(1)..affected.end.saturating_add(1);
    let fresh = collect(lang, tree, text, Some(query_range));
    let mut out = FileTags::default();
    for d in &old.defs {
        let mut d = d.clone();
        shift_def(&mut d, edit);
        if !hits(d.start_byte, d.end_byte) {
            d.name = copy_name(&mut out.names, old.name(d.name));
            out.defs.push(d);
        }
    }
    for d in &fresh.defs {
        if hits(d.start_byte, d.end_byte) {
            let mut d = d.clone();
            d.name = copy_name(&mut out.names, fresh.name(d.name));
            out.defs.push(d);
        }
    }
    for r in &old.refs {
        let mut r = r.clone();
        shift_ref(&mut r, edit);
        if !hits(r.node.0, r.node.1) {
            r.name = copy_name(&mut out.names, old.name(r.name));
            out.refs.push(r);
        }
    }
    for r in &fresh.refs {
        if hits(r.node.0, r.node.1) {
            let mut r = r.clone();
            r.name = copy_name(&mut out.names, fresh.name(r.name));
            out.refs.push(r);
        }
    }
    finalize(&mut out);
    out
}

fn copy_name(names: &mut String, name: &str) -> (u32, u32) {
    let start = u32::try_from(names.len()).unwrap_or(u32::MAX);
    names.push_str(name);
    (start, u32::try_from(names.len()).unwrap_or(u32::MAX))
}

/// Maps a byte offset and its point through `edit`; offsets inside the replaced text
/// move to the edit's start.
fn shift(edit: &InputEdit, byte: &mut usize, point: &mut Point) {
    if *byte < edit.start_byte {
        return;
    }
    if *byte < edit.old_end_byte {
        *byte = edit.start_byte;
        *point = Point::from_ts(edit.start_position);
        return;
    }
    *byte = *byte - edit.old_end_byte + edit.new_end_byte;
    let old_end = Point::from_ts(edit.old_end_position);
    let new_end = Point::from_ts(edit.new_end_position);
    if point.line == old_end.line {
        point.line = new_end.line;
        point.column = point.column.saturating_sub(old_end.column) + new_end.column;
    } else {
        point.line = point.line.saturating_sub(old_end.line) + new_end.line;
    }
}

fn shift_def(d: &mut RawDef, edit: &InputEdit) {
    shift(edit, &mut d.start_byte, &mut d.span.start);
    shift(edit, &mut d.end_byte, &mut d.span.end);
    shift(edit, &mut d.name_byte, &mut d.name_start);
}

fn shift_ref(r: &mut RawRef, edit: &InputEdit) {
    shift(edit, &mut r.name_byte, &mut r.start);
    r.node.0 = shift_byte(edit, r.node.0);
    r.node.1 = shift_byte(edit, r.node.1);
}

fn shift_byte(edit: &InputEdit, byte: usize) -> usize {
    if byte < edit.start_byte {
        byte
    } else if byte < edit.old_end_byte {
        edit.start_byte
    } else {
        byte - edit.old_end_byte + edit.new_end_byte
    }
}

/// Runs the query (over `range` only, if given) without nesting or filtering.
fn collect(lang: Language, tree: &Tree, text: &str, range: Option<Range<usize>>) -> FileTags {
    let mut out = FileTags::default();
    let Some(config) = config(lang) else {
        return out;
    };
    let bytes = text.as_bytes();
    let mut cursor = QueryCursor::new();
    if let Some(range) = range {
        cursor.set_byte_range(range);
    }
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
            Role::Def(kind) => out.push_def(text, kind, node, name_node),
            Role::Ref(kind) => out.push_ref(text, kind, node, name_node),
            _ => {}
        }
    }
    out
}

/// Nests definitions, then drops duplicate references and references that are a
/// definition's own name.
fn finalize(tags: &mut FileTags) {
    nest(&mut tags.defs);
    let mut def_name_bytes: Vec<usize> = tags.defs.iter().map(|d| d.name_byte).collect();
    def_name_bytes.sort_unstable();
    tags.refs.sort_by_key(|r| r.name_byte);
    tags.refs.dedup_by_key(|r| r.name_byte);
    tags.refs
        .retain(|r| def_name_bytes.binary_search(&r.name_byte).is_err());
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
        defs[i].kind = defs[i].query_kind;
        defs[i].parent = NO_PARENT;
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

#[cfg(test)]
mod tests {
    use super::*;

    type Key = (String, String, (u32, u32), (u32, u32), u32, usize, usize);

    fn records(tags: &FileTags) -> (Vec<Key>, Vec<Key>) {
        let defs = tags
            .defs
            .iter()
            .map(|d| {
                (
                    tags.name(d.name).to_owned(),
                    format!("{:?}/{:?}", d.kind, d.query_kind),
                    (d.span.start.line, d.span.start.column),
                    (d.name_start.line, d.name_start.column),
                    d.parent,
                    d.start_byte,
                    d.end_byte,
                )
            })
            .collect();
        let refs = tags
            .refs
            .iter()
            .map(|r| {
                (
                    tags.name(r.name).to_owned(),
                    format!("{:?}", r.kind),
                    (r.start.line, r.start.column),
                    (0, 0),
                    0,
                    r.node.0,
                    r.node.1,
                )
            })
            .collect();
        (defs, refs)
    }

    /// The Rust walk must give exactly the query's records, on real code and on
    /// broken code.
    #[test]
    fn rust_walk_equals_the_query() {
        let Some(kinds) = rust_walk::RustKinds::new() else {
            panic!("Rust grammar lacks a kind the walk needs");
        };
        let mut texts: Vec<String> = Vec::new();
        for dir in [
            concat!(env!("CARGO_MANIFEST_DIR"), "/src"),
            concat!(env!("CARGO_MANIFEST_DIR"), "/../text/src"),
            concat!(env!("CARGO_MANIFEST_DIR"), "/../search/src"),
        ] {
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                if entry.path().extension().is_some_and(|e| e == "rs")
                    && let Ok(text) = std::fs::read_to_string(entry.path())
                {
                    texts.push(text);
                }
            }
        }
        assert!(texts.len() > 5, "too few sources found");
        let sample = texts.join("\n");
        // Broken variants: cut at many points, and lines dropped.
        for cut in (0..sample.len()).step_by(sample.len() / 40 + 1) {
            if let Some(prefix) = sample.get(..cut) {
                texts.push(prefix.to_owned());
            }
        }
        texts.push(sample.lines().step_by(3).collect::<Vec<_>>().join("\n"));
        texts.push(
            "impl<T> Foo<T> for Bar<T> { fn a() { b::c(); x.y(); m!(); } }\n\
             impl Tr for (A, B) {}\nunion U { f: u8 }\nimpl Vec<u8> {}\nfn f( {"
                .to_owned(),
        );
        // Token trees, literals and comments the walk skips, whole and broken.
        texts.push(
            "fn g() { vec![Foo::new(), Bar { x: 1 }]; quote! { impl #t for Y { fn z() {} } };\n\
             m!(a.b(), $x:ty, [Vec<T>], {struct S;}); let s = \"Foo::bar()\"; let r = r#\"T<U>\"#;\n\
             let c = 'x'; /* Foo::baz() */ // call()\n m!(fn ( struct <> Vec<u8>:: ); }\n"
                .to_owned(),
        );
        texts.push(sample);
        for text in &texts {
            let Some(tree) = Language::Rust.parse(text, None) else {
                continue;
            };
            let mut walked = rust_walk::collect(&kinds, &tree, text);
            finalize(&mut walked);
            let mut queried = collect(Language::Rust, &tree, text, None);
            finalize(&mut queried);
            assert_eq!(records(&walked), records(&queried));
        }
    }

    /// Whole texts, prefixes cut at many points and every other line dropped: the walks
    /// must agree with the query on broken trees too.
    fn with_broken_variants(texts: &[String]) -> Vec<String> {
        let mut out = texts.to_vec();
        for text in texts {
            for cut in (0..text.len()).step_by(text.len() / 60 + 1) {
                if let Some(prefix) = text.get(..cut) {
                    out.push(prefix.to_owned());
                }
            }
            out.push(text.lines().step_by(2).collect::<Vec<_>>().join("\n"));
            out.push(
                text.lines()
                    .skip(1)
                    .step_by(3)
                    .collect::<Vec<_>>()
                    .join("\n"),
            );
        }
        out
    }

    fn assert_table_walk_equals_query(lang: Language, texts: &[String]) {
        let Some(kinds) = table_walk::TableKinds::new(lang) else {
            panic!("{lang:?}: no table, or a kind the rules name is missing");
        };
        let mut defs = 0;
        for text in &with_broken_variants(texts) {
            let Some(tree) = lang.parse(text, None) else {
                continue;
            };
            let mut walked = table_walk::collect(&kinds, &tree, text);
            finalize(&mut walked);
            let mut queried = collect(lang, &tree, text, None);
            finalize(&mut queried);
            assert_eq!(records(&walked), records(&queried), "{lang:?}:\n{text}");
            defs += walked.defs.len();
        }
        assert!(
            defs > 100,
            "{lang:?}: too few definitions compared ({defs})"
        );
    }

    fn read_all(paths: &[&str]) -> Vec<String> {
        paths
            .iter()
            .map(|p| {
                let path = format!("{}/{p}", env!("CARGO_MANIFEST_DIR"));
                std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
            })
            .collect()
    }

    #[test]
    fn c_walk_equals_the_query() {
        assert_table_walk_equals_query(
            Language::C,
            &read_all(&[
                "tests/walk/sample.c",
                "../../fixtures/workspaces/c/util.h",
                "../../fixtures/workspaces/c/util.c",
                "../../fixtures/workspaces/c/main.c",
            ]),
        );
    }

    #[test]
    fn cpp_walk_equals_the_query() {
        let mut texts = read_all(&[
            "tests/walk/sample.cpp",
            "../../fixtures/workspaces/cpp/shape.hpp",
            "../../fixtures/workspaces/cpp/shape.cpp",
            "../../fixtures/workspaces/cpp/main.cpp",
        ]);
        // C is (mostly) C++ too.
        texts.extend(read_all(&["tests/walk/sample.c"]));
        assert_table_walk_equals_query(Language::Cpp, &texts);
    }

    /// Every Rust, C and C++ file under `$AGENTLS_WALK_CORPUS` (for instance the cargo
    /// registry sources): the walks equal the query file by file. Slow; run by hand with
    /// `cargo test --release -p agentls-index -- --ignored walks_equal`.
    #[test]
    #[ignore = "needs AGENTLS_WALK_CORPUS; minutes on a large tree"]
    fn walks_equal_the_query_on_a_corpus() {
        let Some(root) = std::env::var_os("AGENTLS_WALK_CORPUS") else {
            panic!("set AGENTLS_WALK_CORPUS to a directory");
        };
        let rust = rust_walk::RustKinds::new().unwrap();
        let c = table_walk::TableKinds::new(Language::C).unwrap();
        let cpp = table_walk::TableKinds::new(Language::Cpp).unwrap();
        let mut files = 0;
        for entry in ignore::WalkBuilder::new(root).build().flatten() {
            let Some(lang) = Language::from_path(entry.path()) else {
                continue;
            };
            let Ok(text) = std::fs::read_to_string(entry.path()) else {
                continue;
            };
            if text.len() > 2 << 20 {
                continue;
            }
            let Some(tree) = lang.parse(&text, None) else {
                continue;
            };
            let mut walked = match lang {
                Language::Rust => rust_walk::collect(&rust, &tree, &text),
                Language::C => table_walk::collect(&c, &tree, &text),
                Language::Cpp => table_walk::collect(&cpp, &tree, &text),
                _ => continue,
            };
            finalize(&mut walked);
            let mut queried = collect(lang, &tree, &text, None);
            finalize(&mut queried);
            assert!(
                records(&walked) == records(&queried),
                "{}: walk and query differ",
                entry.path().display()
            );
            files += 1;
        }
        assert!(files > 0, "no Rust, C or C++ files found");
    }
}
