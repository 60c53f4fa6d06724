//! The public, owned shapes of what the index answers.

use std::path::Path;
use std::sync::Arc;

use crate::Language;

/// A position: 0-based line and 0-based column counted in UTF-8 bytes from the line's
/// start (tree-sitter's unit). Convert with the line's text to chars or UTF-16 at the
/// LSP boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Point {
    /// 0-based line.
    pub line: u32,
    /// 0-based column in UTF-8 bytes.
    pub column: u32,
}

impl Point {
    /// A point from line and byte column.
    pub fn new(line: u32, column: u32) -> Self {
        Self { line, column }
    }

    pub(crate) fn from_ts(p: tree_sitter::Point) -> Self {
        Self {
            line: u32::try_from(p.row).unwrap_or(u32::MAX),
            column: u32::try_from(p.column).unwrap_or(u32::MAX),
        }
    }
}

/// A half-open range of [`Point`]s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Span {
    /// First position inside.
    pub start: Point,
    /// First position after.
    pub end: Point,
}

/// What a definition is. Languages map their constructs onto this common set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SymbolKind {
    /// A free function.
    Function,
    /// A function inside a class-like definition.
    Method,
    /// A class.
    Class,
    /// A struct or union.
    Struct,
    /// An enum.
    Enum,
    /// An interface or protocol.
    Interface,
    /// A Rust trait.
    Trait,
    /// A type alias or other named type.
    Type,
    /// A module or namespace.
    Module,
    /// A macro.
    Macro,
    /// A constant, enum member or static.
    Constant,
    /// A module-level variable.
    Variable,
    /// A field of a struct or class, or an enum variant.
    Field,
    /// A Rust `impl` block (named after its type; not returned by `definitions`).
    Impl,
}

impl SymbolKind {
    pub(crate) fn from_capture(suffix: &str) -> Option<Self> {
        Some(match suffix {
            "function" => Self::Function,
            "method" => Self::Method,
            "class" => Self::Class,
            "struct" => Self::Struct,
            "enum" => Self::Enum,
            "interface" => Self::Interface,
            "trait" => Self::Trait,
            "type" => Self::Type,
            "module" => Self::Module,
            "macro" => Self::Macro,
            "constant" => Self::Constant,
            "variable" => Self::Variable,
            "field" => Self::Field,
            "impl" => Self::Impl,
            _ => return None,
        })
    }

    /// A short lowercase name, as written in the tags queries.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Function => "function",
            Self::Method => "method",
            Self::Class => "class",
            Self::Struct => "struct",
            Self::Enum => "enum",
            Self::Interface => "interface",
            Self::Trait => "trait",
            Self::Type => "type",
            Self::Module => "module",
            Self::Macro => "macro",
            Self::Constant => "constant",
            Self::Variable => "variable",
            Self::Field => "field",
            Self::Impl => "impl",
        }
    }

    /// Whether definitions nested in this one are members (functions become methods).
    pub fn is_class_like(self) -> bool {
        matches!(
            self,
            Self::Class | Self::Struct | Self::Enum | Self::Interface | Self::Trait | Self::Impl
        )
    }
}

/// How a name is used at a reference site.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReferenceKind {
    /// A call of a function, method or macro.
    Call,
    /// A use as a type.
    Type,
    /// A construction or superclass.
    Class,
    /// A trait or interface implemented.
    Implementation,
    /// A path qualifier (`module::item`).
    Module,
}

impl ReferenceKind {
    pub(crate) fn from_capture(suffix: &str) -> Self {
        match suffix {
            "call" => Self::Call,
            "class" => Self::Class,
            "implementation" => Self::Implementation,
            "module" => Self::Module,
            _ => Self::Type,
        }
    }
}

/// A definition found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// The defined name.
    pub name: Arc<str>,
    /// What it is.
    pub kind: SymbolKind,
    /// The name of the enclosing definition, if any (a method's class or impl type).
    pub container: Option<Arc<str>>,
    /// The file.
    pub path: Arc<Path>,
    /// The file's language.
    pub language: Language,
    /// The whole definition (body included).
    pub span: Span,
    /// Just the name.
    pub name_span: Span,
}

/// A use of a name found in a file (by name only: best effort, not resolved).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The name used.
    pub name: Arc<str>,
    /// How it is used.
    pub kind: ReferenceKind,
    /// The file.
    pub path: Arc<Path>,
    /// The name's range.
    pub span: Span,
}

/// One node of a file's outline: a definition and the definitions nested in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutlineItem {
    /// The defined name.
    pub name: Arc<str>,
    /// What it is.
    pub kind: SymbolKind,
    /// The whole definition.
    pub span: Span,
    /// Just the name.
    pub name_span: Span,
    /// Nested definitions, in document order.
    pub children: Vec<OutlineItem>,
}
