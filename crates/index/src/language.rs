//! Which language a file is in, and the tree-sitter parser and tags query for it.
//!
//! Public so the edit engine's syntax check reuses the same detection and parsers.

use std::cell::RefCell;
use std::path::Path;
use tree_sitter::{Parser, Tree};

/// A language the index understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Language {
    /// Rust.
    Rust,
    /// Python.
    Python,
    /// JavaScript (and JSX: the grammar accepts both).
    JavaScript,
    /// TypeScript without JSX.
    TypeScript,
    /// TypeScript with JSX.
    Tsx,
    /// Go.
    Go,
    /// C.
    C,
    /// C++.
    Cpp,
    /// Java.
    Java,
}

impl Language {
    /// Every language, in a fixed order (the order of [`Language::index`]).
    pub const ALL: [Language; 9] = [
        Language::Rust,
        Language::Python,
        Language::JavaScript,
        Language::TypeScript,
        Language::Tsx,
        Language::Go,
        Language::C,
        Language::Cpp,
        Language::Java,
    ];

    /// Detects the language from a file name's extension. `.h` counts as C.
    pub fn from_path(path: &Path) -> Option<Language> {
        let ext = path.extension()?.to_str()?;
        Self::from_extension(ext)
    }

    /// Detects the language from an extension without the dot (case-sensitive, as
    /// `.C` is C++ by convention while `.c` is C).
    pub fn from_extension(ext: &str) -> Option<Language> {
        Some(match ext {
            "rs" => Language::Rust,
            "py" | "pyi" | "pyw" => Language::Python,
            "js" | "mjs" | "cjs" | "jsx" => Language::JavaScript,
            "ts" | "mts" | "cts" => Language::TypeScript,
            "tsx" => Language::Tsx,
            "go" => Language::Go,
            "c" | "h" => Language::C,
            "cc" | "cpp" | "cxx" | "c++" | "C" | "hh" | "hpp" | "hxx" | "h++" | "H" | "ipp"
            | "tcc" | "inl" => Language::Cpp,
            "java" => Language::Java,
            _ => return None,
        })
    }

    /// Detects the language from an LSP language identifier (`didOpen`'s `languageId`).
    pub fn from_language_id(id: &str) -> Option<Language> {
        Some(match id {
            "rust" => Language::Rust,
            "python" => Language::Python,
            "javascript" | "javascriptreact" | "jsx" => Language::JavaScript,
            "typescript" => Language::TypeScript,
            "typescriptreact" | "tsx" => Language::Tsx,
            "go" => Language::Go,
            "c" => Language::C,
            "cpp" | "c++" | "cuda-cpp" => Language::Cpp,
            "java" => Language::Java,
            _ => return None,
        })
    }

    /// The LSP language identifier.
    pub fn language_id(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Python => "python",
            Language::JavaScript => "javascript",
            Language::TypeScript => "typescript",
            Language::Tsx => "typescriptreact",
            Language::Go => "go",
            Language::C => "c",
            Language::Cpp => "cpp",
            Language::Java => "java",
        }
    }

    /// A dense index in `0..Language::ALL.len()`, for per-language tables.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The tree-sitter grammar.
    pub fn grammar(self) -> tree_sitter::Language {
        match self {
            Language::Rust => tree_sitter_rust::LANGUAGE.into(),
            Language::Python => tree_sitter_python::LANGUAGE.into(),
            Language::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Language::Go => tree_sitter_go::LANGUAGE.into(),
            Language::C => tree_sitter_c::LANGUAGE.into(),
            Language::Cpp => tree_sitter_cpp::LANGUAGE.into(),
            Language::Java => tree_sitter_java::LANGUAGE.into(),
        }
    }

    /// The tags query source (`queries/<lang>.scm`).
    pub fn tags_source(self) -> &'static str {
        match self {
            Language::Rust => include_str!("../queries/rust.scm"),
            Language::Python => include_str!("../queries/python.scm"),
            Language::JavaScript => include_str!("../queries/javascript.scm"),
            Language::TypeScript => include_str!("../queries/typescript.scm"),
            Language::Tsx => include_str!("../queries/tsx.scm"),
            Language::Go => include_str!("../queries/go.scm"),
            Language::C => include_str!("../queries/c.scm"),
            Language::Cpp => include_str!("../queries/cpp.scm"),
            Language::Java => include_str!("../queries/java.scm"),
        }
    }

    /// A fresh parser for this language.
    pub fn parser(self) -> Parser {
        crate::alloc::init();
        let mut parser = Parser::new();
        if let Err(err) = parser.set_language(&self.grammar()) {
            // Only an ABI mismatch between tree-sitter and a grammar crate gets here.
            tracing::error!(language = ?self, %err, "grammar rejected by tree-sitter");
        }
        parser
    }

    /// Parses `text`, reusing this thread's parser for the language. With `old`, the
    /// parse is incremental: `old` must already have been edited with
    /// [`tree_sitter::Tree::edit`] to match `text`.
    pub fn parse(self, text: &str, old: Option<&Tree>) -> Option<Tree> {
        thread_local! {
            static PARSERS: RefCell<[Option<Parser>; 9]> = RefCell::new(Default::default());
        }
        PARSERS.with(|parsers| {
            let mut parsers = parsers.borrow_mut();
            let parser = parsers[self.index()].get_or_insert_with(|| self.parser());
            parser.parse(text, old)
        })
    }
}

/// The byte ranges of `text`'s string literals parsed as `lang` (quotes and prefix
/// included, a template's substitutions too), outermost only, in document order.
/// Comments and regular expressions are not strings, which is why this asks the
/// parser rather than scanning for quotes.
pub fn string_literals(lang: Language, text: &str) -> Vec<std::ops::Range<usize>> {
    let kinds: &[&str] = match lang {
        Language::Python => &["string"],
        Language::JavaScript | Language::TypeScript | Language::Tsx => {
            &["string", "template_string"]
        }
        Language::Go => &["interpreted_string_literal", "raw_string_literal"],
        Language::Rust => &["string_literal", "raw_string_literal"],
        Language::C | Language::Cpp | Language::Java => &["string_literal"],
    };
    let Some(tree) = lang.parse(text, None) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    preorder(tree.root_node(), |node| {
        let literal = kinds.contains(&node.kind());
        if literal {
            out.push(node.start_byte()..node.end_byte());
        }
        !literal
    });
    out
}

/// Visits `root`'s nodes in document order, parents first; `visit` says whether to go
/// into a node's children.
fn preorder(root: tree_sitter::Node<'_>, mut visit: impl FnMut(tree_sitter::Node<'_>) -> bool) {
    let mut cursor = root.walk();
    'walk: loop {
        if visit(cursor.node()) && cursor.goto_first_child() {
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
}

/// What kind of syntax problem [`syntax_errors`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyntaxErrorKind {
    /// Text the parser could not fit into the grammar.
    Error,
    /// A token the parser had to assume, e.g. a missing `;` or `}`; holds its kind.
    Missing(String),
}

/// A syntax problem at a 0-based line and a 0-based column in UTF-8 bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// 0-based line.
    pub line: usize,
    /// 0-based column, in bytes from the start of the line.
    pub column: usize,
    /// Error or missing node.
    pub kind: SyntaxErrorKind,
}

/// Every error and missing node in `text` parsed as `lang`, outermost first, in document
/// order. Nested errors inside an error node are not reported again. Empty means the
/// file parses cleanly.
pub fn syntax_errors(lang: Language, text: &str) -> Vec<SyntaxError> {
    let Some(tree) = lang.parse(text, None) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let root = tree.root_node();
    if !root.has_error() {
        return out;
    }
    preorder(root, |node| {
        if node.is_error() || node.is_missing() {
            let start = node.start_position();
            let kind = if node.is_missing() {
                SyntaxErrorKind::Missing(node.kind().to_owned())
            } else {
                SyntaxErrorKind::Error
            };
            out.push(SyntaxError {
                line: start.row,
                column: start.column,
                kind,
            });
            return false;
        }
        node.has_error()
    });
    out
}
