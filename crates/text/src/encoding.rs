//! The three ways LSP counts columns, and how a server picks one.

use std::fmt;

/// How the `character` of an LSP position counts: in UTF-8 bytes, UTF-16 code units or
/// Unicode scalar values (UTF-32).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PositionEncoding {
    /// `character` counts bytes.
    Utf8,
    /// `character` counts UTF-16 code units: the LSP default.
    #[default]
    Utf16,
    /// `character` counts Unicode scalar values.
    Utf32,
}

impl PositionEncoding {
    /// Every encoding, in the order the server prefers them when the client offers several
    /// and has no order of its own (it always has: see [`PositionEncoding::negotiate`]).
    pub const ALL: [PositionEncoding; 3] = [Self::Utf8, Self::Utf16, Self::Utf32];

    /// The name LSP uses for the encoding (`"utf-8"`, `"utf-16"`, `"utf-32"`).
    pub fn as_lsp_str(self) -> &'static str {
        match self {
            Self::Utf8 => "utf-8",
            Self::Utf16 => "utf-16",
            Self::Utf32 => "utf-32",
        }
    }

    /// Parses an LSP `PositionEncodingKind`; unknown names give `None`.
    pub fn from_lsp_str(name: &str) -> Option<Self> {
        match name {
            "utf-8" => Some(Self::Utf8),
            "utf-16" => Some(Self::Utf16),
            "utf-32" => Some(Self::Utf32),
            _ => None,
        }
    }

    /// Picks the encoding for a session: the client's first preference that we support,
    /// or UTF-16 when it offers none we know (the spec's mandatory default).
    ///
    /// ```
    /// use agentls_text::PositionEncoding;
    /// assert_eq!(PositionEncoding::negotiate(["utf-32", "utf-8"]), PositionEncoding::Utf32);
    /// assert_eq!(PositionEncoding::negotiate(["latin-1"]), PositionEncoding::Utf16);
    /// assert_eq!(PositionEncoding::negotiate(Vec::<&str>::new()), PositionEncoding::Utf16);
    /// ```
    pub fn negotiate<I, S>(client_prefers: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        client_prefers
            .into_iter()
            .find_map(|name| Self::from_lsp_str(name.as_ref()))
            .unwrap_or_default()
    }
}

impl fmt::Display for PositionEncoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_lsp_str())
    }
}
