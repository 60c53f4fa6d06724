//! Property test: random `didChange` batches over text with ASCII, CJK, emoji, combining
//! marks and every kind of line break, applied in every encoding, must equal a plain
//! `String` reference that implements the LSP rules independently and naively.

use agentls_text::{ContentChange, DocUri, Document, Position, PositionEncoding, Range};
use proptest::prelude::*;

/// Pieces that make text hard: multi-unit characters in each encoding, combining marks,
/// all three line breaks (and a lone `\r` next to a `\n` to merge or split CRLF).
const PIECES: &[&str] = &[
    "a",
    "Z",
    " ",
    "\t",
    "日本",
    "😀",
    "👩‍👩‍👧",
    "e\u{301}",
    "\n",
    "\r\n",
    "\r",
    "é",
    "\u{2028}",
];

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(PIECES), 0..40).prop_map(|v| v.concat())
}

fn encoding() -> impl Strategy<Value = PositionEncoding> {
    prop::sample::select(PositionEncoding::ALL.to_vec())
}

#[derive(Debug, Clone)]
enum Op {
    /// A range change; positions may point anywhere, including past the end and inside
    /// characters, which both sides must clamp the same way.
    Range {
        start: (u32, u32),
        end: (u32, u32),
        text: String,
    },
    /// A full-text change.
    Full(String),
}

fn op() -> impl Strategy<Value = Op> {
    let pos = (0u32..8, 0u32..14);
    prop_oneof![
        8 => (pos.clone(), pos, text()).prop_map(|(a, b, text)| {
            let (start, end) = if a <= b { (a, b) } else { (b, a) };
            Op::Range { start, end, text }
        }),
        1 => text().prop_map(Op::Full),
    ]
}

/// Splits into lines the LSP way: `\n`, `\r\n`, `\r`. Returns (content start, content
/// end) byte offsets of each line.
fn lines(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\r' if b.get(i + 1) == Some(&b'\n') => {
                out.push((start, i));
                i += 2;
                start = i;
            }
            b'\r' | b'\n' => {
                out.push((start, i));
                i += 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    out.push((start, b.len()));
    out
}

fn units(c: char, enc: PositionEncoding) -> usize {
    match enc {
        PositionEncoding::Utf8 => c.len_utf8(),
        PositionEncoding::Utf16 => c.len_utf16(),
        PositionEncoding::Utf32 => 1,
    }
}

/// The reference: a byte offset for a position, by walking characters one by one.
fn reference_offset(text: &str, (line, col): (u32, u32), enc: PositionEncoding) -> usize {
    let lines = lines(text);
    let Some(&(start, end)) = lines.get(line as usize) else {
        return text.len();
    };
    let mut counted = 0;
    for (i, c) in text[start..end].char_indices() {
        let next = counted + units(c, enc);
        if next > col as usize {
            return start + i; // Inside or at the start of this character.
        }
        counted = next;
    }
    end
}

fn apply_reference(text: &mut String, op: &Op, enc: PositionEncoding) {
    match op {
        Op::Full(t) => *text = t.clone(),
        Op::Range {
            start,
            end,
            text: new,
        } => {
            let s = reference_offset(text, *start, enc);
            let e = reference_offset(text, *end, enc);
            text.replace_range(s..e, new);
        }
    }
}

fn to_change(op: &Op) -> ContentChange {
    match op {
        Op::Full(t) => ContentChange::full(t.clone()),
        Op::Range { start, end, text } => ContentChange::replace(
            Range::new(Position::new(start.0, start.1), Position::new(end.0, end.1)),
            text.clone(),
        ),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn changes_match_the_string_reference(
        initial in text(),
        batches in prop::collection::vec(prop::collection::vec(op(), 1..4), 1..6),
        enc in encoding(),
    ) {
        let mut doc = Document::new(DocUri::new("file:///p"), "text", 0, &initial);
        let mut reference = initial.clone();
        let snapshot = doc.snapshot();
        for (v, batch) in batches.iter().enumerate() {
            let changes: Vec<_> = batch.iter().map(to_change).collect();
            let result = doc.apply_changes(v as i32 + 1, &changes, enc);
            prop_assert!(result.is_ok(), "{result:?}");
            for op in batch {
                apply_reference(&mut reference, op, enc);
            }
            prop_assert_eq!(doc.rope().to_string(), reference.clone());
        }
        // The snapshot taken at the start did not move.
        prop_assert_eq!(snapshot.text(), initial);
    }

    #[test]
    fn positions_round_trip(text in text(), enc in encoding()) {
        let rope = ropey::Rope::from_str(&text);
        for c in 0..=rope.len_chars() {
            let pos = agentls_text::position::to_position(&rope, c, enc);
            let back = agentls_text::position::to_char_idx(&rope, pos, enc).char_idx;
            let between_cr_lf = c > 0 && rope.char(c - 1) == '\r' && rope.get_char(c) == Some('\n');
            prop_assert_eq!(back, if between_cr_lf { c - 1 } else { c });
        }
    }
}
