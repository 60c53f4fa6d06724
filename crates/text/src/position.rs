//! Line/column positions and their conversion to rope offsets, in O(log n).
//!
//! This module is the only place in agentls that computes columns. The rules follow the
//! LSP specification:
//! - lines break at `\n`, `\r\n` and `\r` (ropey is built with `cr_lines` and without
//!   `unicode_lines` so that it agrees);
//! - "If the character value is greater than the line length it defaults back to the line
//!   length", where the length excludes the line terminator;
//! - a line past the last one clamps to the end of the document (helix does the same;
//!   the spec is silent);
//! - a column that falls inside a character (the second half of a UTF-16 surrogate pair,
//!   the middle of a multi-byte UTF-8 sequence) snaps back to the start of that character.
//!
//! Every adjustment is reported as a [`Fixup`], so that the server can log client bugs
//! instead of hiding them.

use ropey::Rope;

use crate::PositionEncoding;

/// A zero-based line and a column counted in some [`PositionEncoding`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Position {
    /// Zero-based line.
    pub line: u32,
    /// Zero-based column, in the units of the encoding in force.
    pub character: u32,
}

impl Position {
    /// A position from its line and column.
    pub const fn new(line: u32, character: u32) -> Self {
        Self { line, character }
    }
}

/// A half-open range between two positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Range {
    /// First position inside the range.
    pub start: Position,
    /// First position after the range.
    pub end: Position,
}

impl Range {
    /// A range from its two ends.
    pub const fn new(start: Position, end: Position) -> Self {
        Self { start, end }
    }
}

/// What had to be adjusted to turn a client position into an offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fixup {
    /// The line was past the end of the document; the position was moved to its end.
    LinePastEnd,
    /// The column was past the end of its line; it was moved to the line's end.
    ColumnPastEnd,
    /// The column fell inside a character; it was moved to that character's start.
    InsideCharacter,
}

/// A rope offset (in chars) computed from a client position, and what was adjusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resolved {
    /// Char index into the rope.
    pub char_idx: usize,
    /// `None` when the position was exact.
    pub fixup: Option<Fixup>,
}

/// Number of chars on `line`, not counting its terminator. `line` must exist.
fn line_content_chars(rope: &Rope, line: usize) -> usize {
    let slice = rope.line(line);
    let len = slice.len_chars();
    if len == 0 {
        return 0;
    }
    match slice.char(len - 1) {
        '\n' if len >= 2 && slice.char(len - 2) == '\r' => len - 2,
        '\n' | '\r' => len - 1,
        _ => len,
    }
}

/// Converts a position to a char index of `rope`, clamping as the module docs describe.
/// Never panics, whatever the position; runs in O(log n).
///
/// ```
/// use agentls_text::{position::to_char_idx, Position, PositionEncoding};
/// let rope = ropey::Rope::from_str("a😀b\n");
/// // 'b' is at UTF-16 column 3 (the emoji takes two code units) and UTF-8 column 5.
/// assert_eq!(to_char_idx(&rope, Position::new(0, 3), PositionEncoding::Utf16).char_idx, 2);
/// assert_eq!(to_char_idx(&rope, Position::new(0, 5), PositionEncoding::Utf8).char_idx, 2);
/// assert_eq!(to_char_idx(&rope, Position::new(0, 2), PositionEncoding::Utf32).char_idx, 2);
/// ```
pub fn to_char_idx(rope: &Rope, pos: Position, encoding: PositionEncoding) -> Resolved {
    let line = pos.line as usize;
    if line >= rope.len_lines() {
        return Resolved {
            char_idx: rope.len_chars(),
            fixup: Some(Fixup::LinePastEnd),
        };
    }
    let line_start = rope.line_to_char(line);
    let content = line_content_chars(rope, line);
    let line_end = line_start + content;
    let col = pos.character as usize;

    // Each arm measures the line in the encoding's units, clamps, then maps back to chars.
    let (char_idx, exact_units, target_units) = match encoding {
        PositionEncoding::Utf32 => {
            if col > content {
                return Resolved {
                    char_idx: line_end,
                    fixup: Some(Fixup::ColumnPastEnd),
                };
            }
            return Resolved {
                char_idx: line_start + col,
                fixup: None,
            };
        }
        PositionEncoding::Utf16 => {
            let base = rope.char_to_utf16_cu(line_start);
            let end = rope.char_to_utf16_cu(line_end);
            let target = base + col;
            if target > end {
                return Resolved {
                    char_idx: line_end,
                    fixup: Some(Fixup::ColumnPastEnd),
                };
            }
            let c = rope.utf16_cu_to_char(target);
            (c, rope.char_to_utf16_cu(c), target)
        }
        PositionEncoding::Utf8 => {
            let base = rope.char_to_byte(line_start);
            let end = rope.char_to_byte(line_end);
            let target = base + col;
            if target > end {
                return Resolved {
                    char_idx: line_end,
                    fixup: Some(Fixup::ColumnPastEnd),
                };
            }
            let c = rope.byte_to_char(target);
            (c, rope.char_to_byte(c), target)
        }
    };
    // ropey rounds a unit inside a character down to that character's start.
    let fixup = (exact_units != target_units).then_some(Fixup::InsideCharacter);
    Resolved { char_idx, fixup }
}

/// Converts a char index of `rope` to a position; an index past the end is clamped to the
/// end. Runs in O(log n).
pub fn to_position(rope: &Rope, char_idx: usize, encoding: PositionEncoding) -> Position {
    let char_idx = char_idx.min(rope.len_chars());
    let line = rope.char_to_line(char_idx);
    let line_start = rope.line_to_char(line);
    let col = match encoding {
        PositionEncoding::Utf32 => char_idx - line_start,
        PositionEncoding::Utf16 => {
            rope.char_to_utf16_cu(char_idx) - rope.char_to_utf16_cu(line_start)
        }
        PositionEncoding::Utf8 => rope.char_to_byte(char_idx) - rope.char_to_byte(line_start),
    };
    Position {
        line: saturate(line),
        character: saturate(col),
    }
}

/// Converts a (line, UTF-8 byte column) point, the unit of tree-sitter and grep, to a
/// position in `encoding`. A column inside a character snaps to its start; points past
/// the end clamp. Runs in O(log n).
///
/// ```
/// use agentls_text::{position::from_utf8_point, Position, PositionEncoding};
/// let rope = ropey::Rope::from_str("x\nlet é = 1;\n");
/// // `=` is byte 7 of line 1 (é takes two bytes), UTF-16 column 6.
/// assert_eq!(from_utf8_point(&rope, 1, 7, PositionEncoding::Utf16), Position::new(1, 6));
/// ```
pub fn from_utf8_point(
    rope: &Rope,
    line: u32,
    byte_col: u32,
    encoding: PositionEncoding,
) -> Position {
    let resolved = to_char_idx(rope, Position::new(line, byte_col), PositionEncoding::Utf8);
    to_position(rope, resolved.char_idx, encoding)
}

fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idx(text: &str, line: u32, col: u32, enc: PositionEncoding) -> (usize, Option<Fixup>) {
        let r = to_char_idx(&Rope::from_str(text), Position::new(line, col), enc);
        (r.char_idx, r.fixup)
    }

    #[test]
    fn surrogate_pair_middle_snaps_to_char_start() {
        // "😀" is one char, two UTF-16 units, four UTF-8 bytes.
        assert_eq!(
            idx("x😀y", 0, 2, PositionEncoding::Utf16),
            (1, Some(Fixup::InsideCharacter))
        );
        assert_eq!(idx("x😀y", 0, 3, PositionEncoding::Utf16), (2, None));
        assert_eq!(
            idx("x😀y", 0, 3, PositionEncoding::Utf8),
            (1, Some(Fixup::InsideCharacter))
        );
        assert_eq!(idx("x😀y", 0, 5, PositionEncoding::Utf8), (2, None));
    }

    #[test]
    fn columns_clamp_before_any_line_terminator() {
        for text in ["ab\ncd", "ab\r\ncd", "ab\rcd"] {
            for enc in PositionEncoding::ALL {
                assert_eq!(
                    idx(text, 0, 99, enc),
                    (2, Some(Fixup::ColumnPastEnd)),
                    "{text:?} {enc}"
                );
                let start_of_1 = text.find('c').unwrap_or(0);
                assert_eq!(idx(text, 1, 0, enc), (start_of_1, None), "{text:?} {enc}");
            }
        }
    }

    #[test]
    fn line_past_end_clamps_to_document_end() {
        assert_eq!(idx("ab\n", 1, 0, PositionEncoding::Utf16), (3, None));
        assert_eq!(
            idx("ab\n", 2, 0, PositionEncoding::Utf16),
            (3, Some(Fixup::LinePastEnd))
        );
        assert_eq!(
            idx("", 0, 5, PositionEncoding::Utf8),
            (0, Some(Fixup::ColumnPastEnd))
        );
    }

    #[test]
    fn unicode_line_separators_are_not_lsp_line_breaks() {
        // U+2028 breaks lines for ropey's default features, not for LSP.
        assert_eq!(
            idx("a\u{2028}b\nc", 1, 0, PositionEncoding::Utf32),
            (4, None)
        );
    }

    #[test]
    fn round_trip_in_every_encoding() {
        let text = "fn ä() {\r\n  \"日本\"; // 👩‍👩‍👧 e\u{301}\n}\rend";
        let rope = Rope::from_str(text);
        for enc in PositionEncoding::ALL {
            for c in 0..=rope.len_chars() {
                let pos = to_position(&rope, c, enc);
                let back = to_char_idx(&rope, pos, enc);
                // Between \r and \n there is no addressable position: it maps to before \r.
                if c > 0 && rope.char(c - 1) == '\r' && rope.get_char(c) == Some('\n') {
                    assert_eq!(back.char_idx, c - 1);
                } else {
                    assert_eq!(
                        back,
                        Resolved {
                            char_idx: c,
                            fixup: None
                        },
                        "{enc} char {c}"
                    );
                }
            }
        }
    }
}
