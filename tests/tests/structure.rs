//! The workspace's shape, checked on every `cargo test --workspace`: no import loop
//! between the files of one crate, and no function over [`MAX_FN_LINES`] lines beyond a
//! short allowlist whose every entry says why.
//!
//! Every `.rs` file of every target of the workspace's members (libraries, binaries,
//! tests, benches, examples, build scripts, and the files their `mod` declarations
//! reach) is parsed with tree-sitter-rust; `target/` and `fuzz/` are never reached.
//! The server's end-to-end scenarios (`tests/e2e`, `tests/vscode`, targets whose root
//! lies outside the package's folder) are held to the same rules.
//!
//! **What counts as an edge from file A to file B** (both in one crate): A names an item
//! of module B, or module B itself, through a path that starts with `crate::`,
//! `super::`, `self::` or the name of one of A's own child modules, in a `use`, in code,
//! or in a macro's tokens. The path is followed through `use` bindings (re-exports
//! included) to the module that defines the item, so `crate::Foo`, re-exported by
//! `lib.rs` from `graph.rs`, is an edge to `graph.rs`.
//! - A `mod child;` declaration is not an edge: the parent owns the child, it does not
//!   use it.
//! - A re-export (`pub use`, `pub(crate) use`) is not an edge either, unless the
//!   re-exporting file also uses the name itself.
//! - A child using its parent's items (`use super::Thing`, `crate::Error` defined in
//!   `lib.rs`) is an edge child → parent, and a parent calling into its child
//!   (`child::run()`) is an edge parent → child: a parent and child that use each other
//!   form a loop like two siblings do. Shared items belong in a module below both.
//!
//! Every strongly connected component of more than one file is reported with the edges
//! that close it (file, line, path as written).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use tree_sitter::{Node, Parser, Tree};

/// A function longer than this many lines (from `fn` to its closing brace, attributes
/// and doc comments not counted) must be split or allowlisted.
const MAX_FN_LINES: usize = 150;

/// At most [`MAX_ALLOWED`] functions may stay over [`MAX_FN_LINES`] lines: (file relative
/// to the workspace root, function as the checker names it, why it stays whole).
const LONG_FN_ALLOWLIST: &[(&str, &str, &str)] = &[
    (
        "server/src/acp/mod.rs",
        "serve",
        "one builder expression registering every ACP handler, each a few lines handing \
         the request to a named function: the table of what the agent answers, in one place",
    ),
    (
        "crates/local/src/provider.rs",
        "Job::decode",
        "the token loop: sampling, the grammar, stop sequences, streaming and cancellation \
         share the decoder's state at every token; split, that state would pass through \
         every call of the hot loop",
    ),
    (
        "server/src/edit_sink.rs",
        "LspEditSink::land",
        "the edit path in its order (check every version, send workspace/applyEdit, wait \
         for the didChange, confirm or repair), read top to bottom as the invariant that \
         no stale edit lands",
    ),
];

/// The allowlist's bound, so that it cannot grow into a second backlog.
const MAX_ALLOWED: usize = 3;

#[test]
fn no_import_loop_between_files() {
    let workspace = workspace();
    let mut report = String::new();
    let mut seen = BTreeSet::new();
    for krate in &workspace.crates {
        for component in krate.loops() {
            let files: Vec<String> = component.iter().map(|&f| workspace.rel(f)).collect();
            if !seen.insert(files.clone()) {
                continue; // a module shared by several targets (tests/common) loops once
            }
            let _ = writeln!(report, "loop in {}: {}", krate.name, files.join(" <-> "));
            for (from, to, evidence) in krate.edges_within(&component) {
                let _ = writeln!(
                    report,
                    "    {} -> {}  ({})",
                    workspace.rel(from),
                    workspace.rel(to),
                    evidence
                );
            }
        }
    }
    assert!(
        report.is_empty(),
        "import loops between files (move what both sides share to a module below both):\n{report}"
    );
}

#[test]
fn long_functions_are_allowlisted() {
    assert!(
        LONG_FN_ALLOWLIST.len() <= MAX_ALLOWED,
        "the allowlist of long functions holds at most {MAX_ALLOWED} entries"
    );
    let workspace = workspace();
    let long = workspace.long_functions();
    let mut report = String::new();
    for (file, name, lines) in &long {
        if !LONG_FN_ALLOWLIST
            .iter()
            .any(|(f, n, _)| f == file && n == name)
        {
            let _ = writeln!(report, "{file}: `{name}` is {lines} lines");
        }
    }
    for (file, name, _) in LONG_FN_ALLOWLIST {
        if !long.iter().any(|(f, n, _)| f == file && n == name) {
            let _ = writeln!(
                report,
                "{file}: `{name}` is allowlisted but no longer over {MAX_FN_LINES} lines: drop it from the list"
            );
        }
    }
    assert!(
        report.is_empty(),
        "functions over {MAX_FN_LINES} lines (split them into pieces named for what they do):\n{report}"
    );
}

#[test]
fn checker_sees_the_edges_it_should() {
    // The rules above on a crate written for them, so that a checker that silently saw
    // nothing would fail here rather than pass everywhere.
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("a")).unwrap_or_else(|e| panic!("mkdir: {e}"));
    let files = [
        (
            "lib.rs",
            "mod a; mod b; mod c; mod d; pub use d::Shared;\npub struct Root;\n",
        ),
        (
            "a.rs",
            "mod inner;\nuse crate::b::helper;\npub fn f() { inner::g(); }\n",
        ),
        ("a/inner.rs", "pub fn g() { super::super::Root; }\n"),
        ("b.rs", "pub fn helper() { crate::a::f(); }\n"),
        (
            "c.rs",
            "pub fn c() { println!(\"{}\", crate::Shared::x()); }\n",
        ),
        (
            "d.rs",
            "pub struct Shared;\nfn d() { let _ = self::Shared; }\n",
        ),
    ];
    for (name, text) in files {
        std::fs::write(src.join(name), text).unwrap_or_else(|e| panic!("write: {e}"));
    }
    let mut workspace = Workspace::default();
    let krate = workspace.load_crate("sample", &src.join("lib.rs"));
    let edge = |from: &str, to: &str| {
        let from = workspace.file_id(&src.join(from));
        let to = workspace.file_id(&src.join(to));
        krate.edges.contains_key(&(from, to))
    };
    assert!(
        edge("a.rs", "b.rs") && edge("b.rs", "a.rs"),
        "use and call edges"
    );
    assert!(edge("a.rs", "a/inner.rs"), "a parent calling its child");
    assert!(
        edge("a/inner.rs", "lib.rs"),
        "a child naming its grandparent's item"
    );
    assert!(
        edge("c.rs", "d.rs"),
        "a path through a re-export, inside a macro"
    );
    assert!(!edge("lib.rs", "d.rs"), "a re-export alone is no edge");
    assert!(!edge("lib.rs", "a.rs"), "a `mod` declaration is no edge");
    let loops: Vec<Vec<String>> = krate
        .loops()
        .iter()
        .map(|c| c.iter().map(|&f| workspace.rel(f)).collect())
        .collect();
    assert_eq!(loops.len(), 1, "one loop, a <-> b: {loops:?}");
    assert_eq!(loops[0].len(), 2, "{loops:?}");
}

/// Every file parsed once, and one module graph per target.
#[derive(Default)]
struct Workspace {
    root: PathBuf,
    files: Vec<SourceFile>,
    by_path: HashMap<PathBuf, usize>,
    crates: Vec<Crate>,
}

struct SourceFile {
    path: PathBuf,
    text: String,
    tree: Tree,
}

/// One target's modules, and the edges between its files.
struct Crate {
    name: String,
    modules: Vec<Module>,
    /// (from file, to file) → the first place that makes the edge.
    edges: BTreeMap<(usize, usize), String>,
}

/// A module: a file, or a `mod name { … }` inside one.
struct Module {
    file: usize,
    parent: Option<usize>,
    children: BTreeMap<String, usize>,
    /// Items defined here (not imported).
    items: BTreeSet<String>,
    /// `use` bindings: the name in scope → the path as written.
    bindings: BTreeMap<String, Vec<String>>,
    globs: Vec<Vec<String>>,
    /// Where `mod name;` inside this module finds `name.rs` or `name/mod.rs`.
    dir: PathBuf,
}

/// A path named in a file, to be resolved once every module is known.
struct Reference {
    module: usize,
    segments: Vec<String>,
    line: usize,
    /// For a re-export: the name it binds (an edge only if the file uses that name).
    reexport: Option<String>,
}

fn workspace() -> &'static Workspace {
    static WORKSPACE: OnceLock<Workspace> = OnceLock::new();
    WORKSPACE.get_or_init(|| {
        let root = canonical(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .parent()
                .unwrap_or_else(|| panic!("the tests crate sits in the workspace root")),
        );
        let mut workspace = Workspace {
            root: root.clone(),
            ..Workspace::default()
        };
        for package in member_packages(&root) {
            for (name, target) in targets(&package) {
                let krate = workspace.load_crate(&name, &target);
                workspace.crates.push(krate);
            }
        }
        assert!(
            workspace.crates.len() > 10 && workspace.files.len() > 100,
            "the checker found {} targets and {} files: its discovery is broken",
            workspace.crates.len(),
            workspace.files.len()
        );
        workspace
    })
}

fn read_toml(path: &Path) -> toml::Table {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    toml::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// The directories of the root manifest's `workspace.members` (`dir/*` expanded).
fn member_packages(root: &Path) -> Vec<PathBuf> {
    let manifest = read_toml(&root.join("Cargo.toml"));
    let members = manifest
        .get("workspace")
        .and_then(|w| w.get("members"))
        .and_then(|m| m.as_array())
        .unwrap_or_else(|| panic!("the root Cargo.toml lists workspace.members"));
    let mut packages = Vec::new();
    for member in members.iter().filter_map(|m| m.as_str()) {
        if let Some(parent) = member.strip_suffix("/*") {
            let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join(parent))
                .unwrap_or_else(|e| panic!("listing {parent}: {e}"))
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|dir| dir.join("Cargo.toml").is_file())
                .collect();
            dirs.sort();
            packages.extend(dirs);
        } else {
            packages.push(root.join(member));
        }
    }
    packages
}

/// A package's targets: the ones its manifest names, and the ones cargo finds by itself.
fn targets(package: &Path) -> Vec<(String, PathBuf)> {
    let manifest = read_toml(&package.join("Cargo.toml"));
    let package_name = manifest
        .get("package")
        .and_then(|p| p.get("name"))
        .and_then(|n| n.as_str())
        .unwrap_or("?")
        .to_string();
    let mut found: BTreeMap<PathBuf, String> = BTreeMap::new();
    for section in ["bin", "test", "bench", "example"] {
        let declared = manifest.get(section).and_then(|s| s.as_array());
        for target in declared.into_iter().flatten() {
            if let Some(path) = target.get("path").and_then(|p| p.as_str()) {
                let name = target.get("name").and_then(|n| n.as_str()).unwrap_or(path);
                found.insert(
                    package.join(path),
                    format!("{package_name} {section} {name}"),
                );
            }
        }
    }
    for single in ["src/lib.rs", "src/main.rs", "build.rs"] {
        found
            .entry(package.join(single))
            .or_insert_with(|| format!("{package_name} {single}"));
    }
    for dir in ["src/bin", "tests", "benches", "examples"] {
        for entry in std::fs::read_dir(package.join(dir))
            .into_iter()
            .flatten()
            .flatten()
        {
            let path = entry.path();
            let root = if path.is_dir() {
                path.join("main.rs")
            } else {
                path.clone()
            };
            if root.extension().is_some_and(|e| e == "rs") {
                found.entry(root).or_insert_with(|| {
                    format!(
                        "{package_name} {dir}/{}",
                        entry.file_name().to_string_lossy()
                    )
                });
            }
        }
    }
    found
        .into_iter()
        .filter(|(path, _)| path.is_file())
        .map(|(path, name)| (name, canonical(&path)))
        .collect()
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

impl Workspace {
    fn rel(&self, file: usize) -> String {
        let path = &self.files[file].path;
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned()
    }

    fn file_id(&self, path: &Path) -> usize {
        *self
            .by_path
            .get(path)
            .unwrap_or_else(|| panic!("{} was not loaded", path.display()))
    }

    /// Parses `path` once, however many targets reach it.
    fn load_file(&mut self, path: &Path) -> usize {
        if let Some(&id) = self.by_path.get(path) {
            return id;
        }
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        let mut parser = Parser::new();
        parser
            .set_language(&tree_sitter_rust::LANGUAGE.into())
            .unwrap_or_else(|e| panic!("tree-sitter-rust: {e}"));
        let tree = parser
            .parse(&text, None)
            .unwrap_or_else(|| panic!("parsing {}", path.display()));
        self.files.push(SourceFile {
            path: path.to_path_buf(),
            text,
            tree,
        });
        self.by_path
            .insert(path.to_path_buf(), self.files.len() - 1);
        self.files.len() - 1
    }

    /// The target rooted at `root`: its modules, then its edges.
    fn load_crate(&mut self, name: &str, root: &Path) -> Crate {
        let mut krate = Crate {
            name: name.to_string(),
            modules: Vec::new(),
            edges: BTreeMap::new(),
        };
        let dir = root.parent().unwrap_or(root).to_path_buf();
        self.load_module_file(&mut krate, root, None, dir);
        let mut references = Vec::new();
        let mut used_names: HashMap<usize, BTreeSet<String>> = HashMap::new();
        for module in 0..krate.modules.len() {
            let file = krate.modules[module].file;
            let is_file_root = krate.modules[module]
                .parent
                .is_none_or(|p| krate.modules[p].file != file);
            if is_file_root {
                let source = &self.files[file];
                let mut collector = Collector {
                    krate: &krate,
                    text: &source.text,
                    references: &mut references,
                    names: used_names.entry(file).or_default(),
                };
                collector.visit(source.tree.root_node(), module);
            }
        }
        for reference in references {
            krate.add_edge(&reference, &used_names);
        }
        krate
    }

    fn load_module_file(
        &mut self,
        krate: &mut Crate,
        path: &Path,
        parent: Option<usize>,
        dir: PathBuf,
    ) -> usize {
        let file = self.load_file(path);
        let module = krate.new_module(file, parent, dir);
        let source = &self.files[file];
        let mut declared = Vec::new();
        scan_items(
            krate,
            &source.text,
            source.tree.root_node(),
            module,
            &mut declared,
        );
        for (owner, name) in declared {
            let owner_dir = krate.modules[owner].dir.clone();
            let flat = owner_dir.join(format!("{name}.rs"));
            let nested = owner_dir.join(&name).join("mod.rs");
            let (child_path, child_dir) = if flat.is_file() {
                (flat, owner_dir.join(&name))
            } else if nested.is_file() {
                (nested, owner_dir.join(&name))
            } else {
                panic!("`mod {name};` in {}: no file for it", path.display());
            };
            let child = self.load_module_file(krate, &child_path, Some(owner), child_dir);
            krate.modules[owner].children.insert(name, child);
        }
        module
    }

    /// (file, function, lines) for every function over [`MAX_FN_LINES`] lines.
    fn long_functions(&self) -> Vec<(String, String, usize)> {
        let mut long = Vec::new();
        for (id, file) in self.files.iter().enumerate() {
            let mut found = Vec::new();
            function_lengths(&file.text, file.tree.root_node(), "", &mut found);
            for (name, lines) in found {
                if lines > MAX_FN_LINES {
                    long.push((self.rel(id), name, lines));
                }
            }
        }
        long
    }
}

fn text<'a>(node: Node<'_>, source: &'a str) -> &'a str {
    node.utf8_text(source.as_bytes()).unwrap_or("")
}

/// The items of one module's body: definitions, `use` bindings, inline modules, and the
/// `mod name;` declarations (returned, to be loaded from their files).
fn scan_items(
    krate: &mut Crate,
    source: &str,
    body: Node<'_>,
    module: usize,
    declared: &mut Vec<(usize, String)>,
) {
    let mut cursor = body.walk();
    for item in body.named_children(&mut cursor) {
        let name = item
            .child_by_field_name("name")
            .map(|n| text(n, source).to_string());
        match (item.kind(), name) {
            ("mod_item", Some(name)) => match item.child_by_field_name("body") {
                Some(inner) => {
                    let dir = krate.modules[module].dir.join(&name);
                    let file = krate.modules[module].file;
                    let child = krate.new_module(file, Some(module), dir);
                    krate.modules[module].children.insert(name, child);
                    scan_items(krate, source, inner, child, declared);
                }
                None => declared.push((module, name)),
            },
            ("use_declaration", _) => {
                if let Some(argument) = item.child_by_field_name("argument") {
                    let mut uses = Vec::new();
                    use_paths(argument, source, &[], &mut uses);
                    for (path, bound) in uses {
                        let target = &mut krate.modules[module];
                        match bound {
                            Some(bound) => {
                                target.bindings.insert(bound, path);
                            }
                            None => target.globs.push(path),
                        }
                    }
                }
            }
            (
                "function_item" | "struct_item" | "enum_item" | "trait_item" | "type_item"
                | "const_item" | "static_item" | "union_item" | "macro_definition",
                Some(name),
            ) => {
                krate.modules[module].items.insert(name);
            }
            _ => {}
        }
    }
}

/// The paths one `use` tree imports, each with the name it binds (`None` for a glob).
fn use_paths(
    node: Node<'_>,
    source: &str,
    prefix: &[String],
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    let joined = |tail: &Node<'_>| {
        let mut path = prefix.to_vec();
        path.extend(path_segments(*tail, source).unwrap_or_default());
        path
    };
    match node.kind() {
        "use_as_clause" => {
            if let (Some(path), Some(alias)) = (
                node.child_by_field_name("path"),
                node.child_by_field_name("alias"),
            ) {
                out.push((joined(&path), Some(text(alias, source).to_string())));
            }
        }
        "scoped_use_list" => {
            let base = match node.child_by_field_name("path") {
                Some(path) => joined(&path),
                None => prefix.to_vec(),
            };
            if let Some(list) = node.child_by_field_name("list") {
                use_paths(list, source, &base, out);
            }
        }
        "use_list" => {
            let mut cursor = node.walk();
            for child in node.named_children(&mut cursor) {
                use_paths(child, source, prefix, out);
            }
        }
        "use_wildcard" => {
            let mut cursor = node.walk();
            let path = node.named_children(&mut cursor).next();
            out.push((path.map_or_else(|| prefix.to_vec(), |p| joined(&p)), None));
        }
        "self" if !prefix.is_empty() => {
            out.push((prefix.to_vec(), prefix.last().cloned()));
        }
        _ => {
            let path = joined(&node);
            let bound = path.last().cloned();
            out.push((path, bound));
        }
    }
}

/// The segments of a simple path (`a::b::C`), `None` when a part is not a plain name
/// (`<T as Trait>::f`). A generic part (`Vec::<T>::new`) counts by its name.
fn path_segments(node: Node<'_>, source: &str) -> Option<Vec<String>> {
    match node.kind() {
        "identifier" | "type_identifier" | "crate" | "self" | "super" => {
            Some(vec![text(node, source).to_string()])
        }
        "metavariable" if text(node, source) == "$crate" => Some(vec!["crate".to_string()]),
        "scoped_identifier" | "scoped_type_identifier" => {
            let mut segments = match node.child_by_field_name("path") {
                Some(path) => path_segments(path, source)?,
                None => Vec::new(),
            };
            segments.push(text(node.child_by_field_name("name")?, source).to_string());
            Some(segments)
        }
        "generic_type" | "generic_type_with_turbofish" => {
            path_segments(node.child_by_field_name("type")?, source)
        }
        _ => None,
    }
}

/// Walks one file and records every path it names, and every plain name it uses.
struct Collector<'a> {
    krate: &'a Crate,
    text: &'a str,
    references: &'a mut Vec<Reference>,
    names: &'a mut BTreeSet<String>,
}

impl Collector<'_> {
    fn visit(&mut self, node: Node<'_>, module: usize) {
        match node.kind() {
            "mod_item" => {
                let name = node.child_by_field_name("name").map(|n| text(n, self.text));
                let inline = name.and_then(|n| self.krate.modules[module].children.get(n));
                if let (Some(body), Some(&inner)) = (node.child_by_field_name("body"), inline) {
                    self.visit(body, inner);
                }
            }
            "use_declaration" => self.visit_use(node, module),
            // `pub(in crate::a)` names where an item is visible, not what it uses.
            "visibility_modifier" => {}
            "scoped_identifier" | "scoped_type_identifier" => {
                if let Some(segments) = path_segments(node, self.text) {
                    self.push(module, segments, node, None);
                }
                self.visit_children(node, module);
            }
            "token_tree" => self.visit_tokens(node, module),
            "identifier" | "type_identifier" => {
                self.names.insert(text(node, self.text).to_string());
            }
            _ => self.visit_children(node, module),
        }
    }

    fn visit_children(&mut self, node: Node<'_>, module: usize) {
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            // A path's own prefix (`crate::a` of `crate::a::f`) is not a second path.
            if child.kind().starts_with("scoped_") && node.kind().starts_with("scoped_") {
                continue;
            }
            self.visit(child, module);
        }
    }

    fn visit_use(&mut self, node: Node<'_>, module: usize) {
        let mut visibility = node.walk();
        let reexport = node
            .named_children(&mut visibility)
            .any(|c| c.kind() == "visibility_modifier");
        if let Some(argument) = node.child_by_field_name("argument") {
            let mut uses = Vec::new();
            use_paths(argument, self.text, &[], &mut uses);
            for (segments, bound) in uses {
                let reexported = match (reexport, bound) {
                    (false, _) => None,
                    (true, Some(bound)) => Some(bound),
                    (true, None) => continue, // a glob re-export: nothing named here
                };
                if segments.is_empty() {
                    continue;
                }
                self.push(module, segments, node, reexported);
            }
        }
    }

    /// A macro's tokens: runs of `name::name` (`crate`, `self`, `super`, `$crate` too).
    fn visit_tokens(&mut self, node: Node<'_>, module: usize) {
        let mut run: Vec<String> = Vec::new();
        let mut after_colons = false;
        let mut cursor = node.walk();
        for token in node.children(&mut cursor) {
            let word = match token.kind() {
                "identifier" | "crate" | "self" | "super" => Some(text(token, self.text)),
                "metavariable" if text(token, self.text) == "$crate" => Some("crate"),
                _ => None,
            };
            if token.kind() == "identifier" {
                self.names.insert(text(token, self.text).to_string());
            }
            match word {
                Some(word) if run.is_empty() || after_colons => {
                    run.push(word.to_string());
                    after_colons = false;
                }
                _ if token.kind() == "::" && !run.is_empty() && !after_colons => {
                    after_colons = true;
                }
                _ => {
                    self.flush_run(&mut run, node, module);
                    after_colons = false;
                    if let Some(word) = word {
                        run.push(word.to_string());
                    } else if token.kind() == "token_tree" {
                        self.visit_tokens(token, module);
                    }
                }
            }
        }
        self.flush_run(&mut run, node, module);
    }

    fn flush_run(&mut self, run: &mut Vec<String>, node: Node<'_>, module: usize) {
        let segments = std::mem::take(run);
        if segments.len() >= 2 {
            self.push(module, segments, node, None);
        }
    }

    fn push(
        &mut self,
        module: usize,
        segments: Vec<String>,
        at: Node<'_>,
        reexport: Option<String>,
    ) {
        self.references.push(Reference {
            module,
            segments,
            line: at.start_position().row + 1,
            reexport,
        });
    }
}

/// Where a path leads inside the crate.
enum Resolved {
    /// To the module itself (`crate::a`).
    Module(usize),
    /// To an item of the module (`crate::a::Thing`, `crate::a::Enum::Variant`).
    Item(usize),
}

impl Resolved {
    fn module(&self) -> usize {
        match *self {
            Resolved::Module(m) | Resolved::Item(m) => m,
        }
    }
}

impl Crate {
    fn new_module(&mut self, file: usize, parent: Option<usize>, dir: PathBuf) -> usize {
        self.modules.push(Module {
            file,
            parent,
            children: BTreeMap::new(),
            items: BTreeSet::new(),
            bindings: BTreeMap::new(),
            globs: Vec::new(),
            dir,
        });
        self.modules.len() - 1
    }

    /// A path as written in `from`, resolved within the crate; `None` outside it.
    fn resolve(&self, from: usize, segments: &[String], depth: usize) -> Option<Resolved> {
        let (first, rest) = segments.split_first()?;
        let start = match first.as_str() {
            "crate" => 0,
            "self" => from,
            "super" => {
                let mut module = self.modules[from].parent?;
                let mut rest = rest;
                while rest.first().is_some_and(|s| s == "super") {
                    module = self.modules[module].parent?;
                    rest = &rest[1..];
                }
                return self.walk(module, rest, depth);
            }
            _ if self.modules[from].children.contains_key(first) => {
                return self.walk(from, segments, depth);
            }
            _ => return None,
        };
        self.walk(start, rest, depth)
    }

    /// Follows `rest` down from `module`: child modules, definitions, `use` bindings
    /// (re-exports lead to where the item is defined), then globs.
    fn walk(&self, module: usize, rest: &[String], depth: usize) -> Option<Resolved> {
        let Some((first, tail)) = rest.split_first() else {
            return Some(Resolved::Module(module));
        };
        let here = &self.modules[module];
        if depth > 16 || first.is_empty() || first == "*" {
            return Some(Resolved::Module(module));
        }
        if let Some(&child) = here.children.get(first) {
            return self.walk(child, tail, depth + 1);
        }
        if here.items.contains(first) {
            return Some(Resolved::Item(module));
        }
        if let Some(target) = here.bindings.get(first) {
            return match self.resolve(module, target, depth + 1)? {
                Resolved::Module(m) => self.walk(m, tail, depth + 1),
                item => Some(item),
            };
        }
        for glob in &here.globs {
            if let Some(Resolved::Module(m)) = self.resolve(module, glob, depth + 1) {
                let there = &self.modules[m];
                if there.children.contains_key(first)
                    || there.items.contains(first)
                    || there.bindings.contains_key(first)
                {
                    return self.walk(m, rest, depth + 1);
                }
            }
        }
        // Not found by name (made by a macro, or a variant): the module is the best guess.
        Some(Resolved::Item(module))
    }

    fn add_edge(&mut self, reference: &Reference, used: &HashMap<usize, BTreeSet<String>>) {
        let from = self.modules[reference.module].file;
        if let Some(bound) = &reference.reexport
            && !used.get(&from).is_some_and(|names| names.contains(bound))
        {
            return;
        }
        let Some(target) = self.resolve(reference.module, &reference.segments, 0) else {
            return;
        };
        let to = self.modules[target.module()].file;
        if from != to {
            self.edges.entry((from, to)).or_insert_with(|| {
                format!("line {}: {}", reference.line, reference.segments.join("::"))
            });
        }
    }

    /// The strongly connected components of more than one file (Tarjan's algorithm).
    fn loops(&self) -> Vec<Vec<usize>> {
        let mut graph: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for &(from, to) in self.edges.keys() {
            graph.entry(from).or_default().push(to);
            graph.entry(to).or_default();
        }
        let mut tarjan = Tarjan {
            graph: &graph,
            index: HashMap::new(),
            low: HashMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            components: Vec::new(),
        };
        for &node in graph.keys() {
            if !tarjan.index.contains_key(&node) {
                tarjan.connect(node);
            }
        }
        let mut loops: Vec<Vec<usize>> = tarjan
            .components
            .into_iter()
            .filter(|c| c.len() > 1)
            .collect();
        for component in &mut loops {
            component.sort_unstable();
        }
        loops
    }

    fn edges_within(&self, component: &[usize]) -> Vec<(usize, usize, &str)> {
        self.edges
            .iter()
            .filter(|((from, to), _)| component.contains(from) && component.contains(to))
            .map(|(&(from, to), evidence)| (from, to, evidence.as_str()))
            .collect()
    }
}

struct Tarjan<'a> {
    graph: &'a BTreeMap<usize, Vec<usize>>,
    index: HashMap<usize, usize>,
    low: HashMap<usize, usize>,
    stack: Vec<usize>,
    on_stack: BTreeSet<usize>,
    components: Vec<Vec<usize>>,
}

impl Tarjan<'_> {
    fn connect(&mut self, node: usize) {
        let order = self.index.len();
        self.index.insert(node, order);
        self.low.insert(node, order);
        self.stack.push(node);
        self.on_stack.insert(node);
        for &next in self.graph.get(&node).into_iter().flatten() {
            if !self.index.contains_key(&next) {
                self.connect(next);
                let low = self.low[&node].min(self.low[&next]);
                self.low.insert(node, low);
            } else if self.on_stack.contains(&next) {
                let low = self.low[&node].min(self.index[&next]);
                self.low.insert(node, low);
            }
        }
        if self.low[&node] == self.index[&node] {
            let mut component = Vec::new();
            while let Some(member) = self.stack.pop() {
                self.on_stack.remove(&member);
                component.push(member);
                if member == node {
                    break;
                }
            }
            self.components.push(component);
        }
    }
}

/// Every function's qualified name (`Type::method`, `outer::inner`, `tests::case`) and
/// length in lines.
fn function_lengths(source: &str, node: Node<'_>, scope: &str, out: &mut Vec<(String, usize)>) {
    let qualify = |name: &str| {
        if scope.is_empty() {
            name.to_string()
        } else {
            format!("{scope}::{name}")
        }
    };
    let mut inner_scope = None;
    match node.kind() {
        "function_item" => {
            let name = node
                .child_by_field_name("name")
                .map_or("?", |n| text(n, source));
            let lines = node.end_position().row - node.start_position().row + 1;
            out.push((qualify(name), lines));
            inner_scope = Some(qualify(name));
        }
        "impl_item" => {
            let ty = node.child_by_field_name("type");
            let name = ty.map_or("?", |t| {
                let base = t.child_by_field_name("type").unwrap_or(t);
                text(base, source)
            });
            inner_scope = Some(qualify(name));
        }
        "trait_item" | "mod_item" => {
            let name = node
                .child_by_field_name("name")
                .map_or("?", |n| text(n, source));
            inner_scope = Some(qualify(name));
        }
        _ => {}
    }
    let scope = inner_scope.as_deref().unwrap_or(scope);
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        function_lengths(source, child, scope, out);
    }
}
