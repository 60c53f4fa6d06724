//! Line comparisons for each matching level.

/// Folds the Unicode punctuation models and word processors swap for ASCII: dashes,
/// curly quotes, non-breaking and other odd spaces, the ellipsis character.
pub(crate) fn fold_unicode(s: &str) -> String {
    fold_unicode_cow(s).into_owned()
}

/// [`fold_unicode`] without allocating for ASCII text, which it leaves as is.
pub(crate) fn fold_unicode_cow(s: &str) -> std::borrow::Cow<'_, str> {
    if s.is_ascii() {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(fold_slow(s))
}

fn fold_slow(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}'
            | '\u{2212}' | '\u{FE58}' | '\u{FE63}' | '\u{FF0D}' => out.push('-'),
            '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' | '\u{FF07}' => {
                out.push('\'')
            }
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' | '\u{FF02}' => {
                out.push('"')
            }
            '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => {
                out.push(' ')
            }
            '\u{200B}' | '\u{FEFF}' => {}
            '\u{2026}' => out.push_str("..."),
            c => out.push(c),
        }
    }
    out
}

/// Whether a line of a search text stands for "lines left out here".
pub(crate) fn is_elision(line: &str) -> bool {
    matches!(
        line.trim(),
        "..." | "\u{2026}" | "// ..." | "# ..." | "-- ..." | "/* ... */" | "<!-- ... -->"
    )
}

/// A uniform indentation difference between the file and a search text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Offset<'a> {
    /// File lines carry this extra prefix.
    FileMore(&'a str),
    /// Search lines carry this extra prefix.
    SearchMore(&'a str),
}

impl<'a> Offset<'a> {
    /// The offset that turns `search` into `file`, judged from leading whitespace.
    pub fn between(file: &'a str, search: &'a str) -> Option<Self> {
        let fi = crate::lines::indent_of(file);
        let si = crate::lines::indent_of(search);
        if let Some(extra) = fi.strip_suffix(si) {
            Some(Offset::FileMore(extra))
        } else {
            si.strip_suffix(fi).map(Offset::SearchMore)
        }
    }

    pub fn is_zero(self) -> bool {
        match self {
            Offset::FileMore(x) | Offset::SearchMore(x) => x.is_empty(),
        }
    }

    /// Whether `file` equals `search` shifted by this offset (trailing whitespace and
    /// blank lines ignored).
    pub fn same(self, file: &str, search: &str) -> bool {
        let f = file.trim_end();
        let s = search.trim_end();
        if s.is_empty() {
            return f.is_empty();
        }
        match self {
            Offset::FileMore(x) => f.strip_prefix(x) == Some(s),
            Offset::SearchMore(x) => s.strip_prefix(x) == Some(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_punctuation() {
        assert_eq!(
            fold_unicode("\u{201C}a\u{201D} \u{2014} \u{2018}b\u{2019}\u{00A0}\u{2026}"),
            "\"a\" - 'b' ..."
        );
    }

    #[test]
    fn offsets() {
        let o = Offset::between("        x", "    x").unwrap();
        assert_eq!(o, Offset::FileMore("    "));
        assert!(o.same("        y  ", "    y"));
        assert!(!o.same("      y", "    y"));
        assert!(o.same("", "   "));
        assert_eq!(Offset::between("\tx", "    x"), None);
    }
}
