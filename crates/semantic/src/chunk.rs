//! Chunks: the units search ranks. A definition (function, method, class, impl …) with
//! the comments and decorators right above it and its own lines (a class's methods are
//! chunks of their own, so the class keeps its header and fields); the lines no
//! definition holds, in windows; files without a grammar, in windows of lines. A long
//! definition is split into windows that each start with its first line (the signature),
//! so every piece still says what it belongs to.

use std::path::Path;
use std::sync::Arc;

use agentls_index::{Symbol, SymbolKind};

/// Lines per window of text outside definitions (and of files without a grammar).
const WINDOW: usize = 40;
/// A definition longer than this is split.
const MAX_LINES: usize = 60;
/// Lines shared by consecutive windows of a split definition.
const OVERLAP: usize = 8;

/// One ranked unit of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The file.
    pub path: Arc<Path>,
    /// First line, 0-based.
    pub start_line: u32,
    /// Last line, 0-based, inclusive.
    pub end_line: u32,
    /// The definition it holds, if any (with its container: `Class.method`).
    pub symbol: Option<Arc<str>>,
    /// What that definition is.
    pub kind: Option<SymbolKind>,
    /// How many of the file's lines it holds (a class without its methods holds fewer
    /// than its range; a split definition's pieces share a few).
    pub lines: u32,
    /// The chunk's own lines, joined (a split definition's windows start with its
    /// first line).
    pub text: String,
}

/// Kinds that make a chunk of their own; the rest (fields, constants, variables) stay
/// with the lines around them.
fn chunked(kind: SymbolKind) -> bool {
    !matches!(
        kind,
        SymbolKind::Field | SymbolKind::Constant | SymbolKind::Variable
    )
}

/// The chunks of `text` at `path`, given its definitions from the index (`None`: no
/// grammar, windows of lines only).
pub fn chunk_file(path: &Arc<Path>, text: &str, symbols: Option<&[Symbol]>) -> Vec<Chunk> {
    let lines: Vec<&str> = text.lines().collect();
    let n = lines.len();
    if n == 0 {
        return Vec::new();
    }
    // owner[line] = index of the innermost chunked definition holding the line.
    let mut owner: Vec<Option<usize>> = vec![None; n];
    let defs: Vec<&Symbol> = symbols
        .unwrap_or_default()
        .iter()
        .filter(|s| chunked(s.kind))
        .collect();
    // Outer definitions first, inner ones overwrite: larger spans before smaller.
    let mut order: Vec<usize> = (0..defs.len()).collect();
    order.sort_by_key(|&i| {
        let s = defs[i].span;
        (
            std::cmp::Reverse(s.end.line.saturating_sub(s.start.line)),
            s.start.line,
        )
    });
    let mut first_line = vec![0usize; defs.len()];
    for &i in &order {
        let span = defs[i].span;
        let mut start = (span.start.line as usize).min(n - 1);
        let end = (span.end.line as usize).min(n - 1);
        // Comments, doc comments and decorators right above belong to the definition.
        while start > 0 && owner[start - 1] == owner[start] && is_preamble(lines[start - 1]) {
            start -= 1;
        }
        first_line[i] = span.start.line as usize;
        for o in &mut owner[start..=end] {
            *o = Some(i);
        }
    }
    let mut out = Vec::new();
    for (i, def) in defs.iter().enumerate() {
        let own: Vec<usize> = (0..n).filter(|&l| owner[l] == Some(i)).collect();
        let (Some(&first), Some(&last)) = (own.first(), own.last()) else {
            continue;
        };
        let name: Arc<str> = match &def.container {
            Some(c) => format!("{c}.{}", def.name).into(),
            None => def.name.clone(),
        };
        if own.iter().all(|&l| lines[l].trim().is_empty()) {
            continue;
        }
        if own.len() <= MAX_LINES {
            out.push(Chunk {
                path: path.clone(),
                start_line: first as u32,
                end_line: last as u32,
                symbol: Some(name),
                kind: Some(def.kind),
                lines: own.len() as u32,
                text: join(&lines, &own),
            });
            continue;
        }
        let head = first_line[i].min(n - 1);
        let mut at = 0;
        while at < own.len() {
            let piece = &own[at..(at + MAX_LINES - OVERLAP).min(own.len())];
            let mut text = String::new();
            if piece[0] != head {
                text.push_str(lines[head]);
                text.push('\n');
            }
            text.push_str(&join(&lines, piece));
            out.push(Chunk {
                path: path.clone(),
                start_line: piece[0] as u32,
                end_line: piece[piece.len() - 1] as u32,
                symbol: Some(name.clone()),
                kind: Some(def.kind),
                lines: piece.len() as u32,
                text,
            });
            if at + MAX_LINES - OVERLAP >= own.len() {
                break;
            }
            at += MAX_LINES - 2 * OVERLAP;
        }
    }
    // The rest: windows over the lines no definition holds (imports, top-level code,
    // whole files without a grammar).
    let free: Vec<usize> = (0..n).filter(|&l| owner[l].is_none()).collect();
    for piece in free.chunks(WINDOW) {
        if piece.iter().all(|&l| lines[l].trim().is_empty()) {
            continue;
        }
        out.push(Chunk {
            path: path.clone(),
            start_line: piece[0] as u32,
            end_line: piece[piece.len() - 1] as u32,
            symbol: None,
            kind: None,
            lines: piece.len() as u32,
            text: join(&lines, piece),
        });
    }
    out.sort_by_key(|c| (c.start_line, c.end_line));
    out
}

/// A comment, doc comment or decorator line (what documents the definition below it).
fn is_preamble(line: &str) -> bool {
    let t = line.trim_start();
    ["//", "#", "/*", "*", "--", ";", "@"]
        .iter()
        .any(|p| t.starts_with(p))
        && !t.starts_with("#include")
}

fn join(lines: &[&str], which: &[usize]) -> String {
    let mut s = String::new();
    for &l in which {
        s.push_str(lines[l]);
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentls_index::Index;

    fn chunks(path: &str, text: &str) -> Vec<Chunk> {
        let mut index = Index::default();
        let p = Path::new(path);
        index.update_file(p, text);
        let syms = index.file_symbols(p);
        chunk_file(&Arc::from(p), text, Some(&syms))
    }

    #[test]
    fn methods_are_their_own_chunks_and_the_class_keeps_its_header() {
        let src = "import os\n\n# Uploads files.\nclass Uploader:\n    retries = 3\n\n    def upload(self, f):\n        return os.stat(f)\n\n    # Retries failed uploads.\n    def retry(self):\n        pass\n";
        let got = chunks("/ws/up.py", src);
        let names: Vec<_> = got.iter().map(|c| c.symbol.as_deref()).collect();
        assert_eq!(
            names,
            [
                None,
                Some("Uploader"),
                Some("Uploader.upload"),
                Some("Uploader.retry")
            ]
        );
        let class = &got[1];
        assert!(
            class
                .text
                .starts_with("# Uploads files.\nclass Uploader:\n    retries = 3\n"),
            "{}",
            class.text
        );
        assert!(!class.text.contains("def upload"));
        let retry = &got[3];
        assert!(
            retry
                .text
                .starts_with("    # Retries failed uploads.\n    def retry"),
            "{}",
            retry.text
        );
        assert_eq!(retry.start_line, 9);
    }

    #[test]
    fn a_long_definition_is_split_and_each_piece_starts_with_its_signature() {
        let mut src = String::from("fn long_one() {\n");
        for i in 0..150 {
            src.push_str(&format!("    let x{i} = {i};\n"));
        }
        src.push_str("}\n");
        let got = chunks("/ws/a.rs", &src);
        assert!(got.len() >= 3, "{got:?}");
        for c in &got {
            assert!(c.text.starts_with("fn long_one() {\n"), "{}", c.text);
            assert_eq!(c.symbol.as_deref(), Some("long_one"));
        }
        // Every line is in some piece.
        let last = got.iter().map(|c| c.end_line).max();
        assert_eq!(last, Some(151));
        for w in got.windows(2) {
            assert!(w[1].start_line <= w[0].end_line + 1, "gap between {w:?}");
        }
    }

    #[test]
    fn files_without_a_grammar_are_windows_of_lines() {
        let text: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let got = chunk_file(&Arc::from(Path::new("/ws/notes.txt")), &text, None);
        assert_eq!(got.len(), 3);
        assert_eq!((got[2].start_line, got[2].end_line), (80, 99));
        assert!(chunk_file(&Arc::from(Path::new("/ws/e.txt")), "", None).is_empty());
    }
}
