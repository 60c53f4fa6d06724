//! Fuzzes change application: arbitrary bytes become an initial text and a stream of
//! changes with arbitrary positions (past the end, inside characters, inverted) in an
//! arbitrary encoding. Nothing may panic, and whatever is accepted must keep the rope
//! consistent with its own conversions.
#![no_main]

use agentls_text::{ContentChange, DocUri, Document, Position, PositionEncoding, Range};
use libfuzzer_sys::fuzz_target;

fn take_u32(data: &mut &[u8]) -> u32 {
    let (head, rest) = data.split_at(data.len().min(2));
    *data = rest;
    head.iter().fold(0u32, |acc, &b| (acc << 8) | u32::from(b)) % 64
}

fn take_text(data: &mut &[u8]) -> String {
    let len = data.first().map_or(0, |&b| usize::from(b % 16));
    let (head, rest) = data.split_at(data.len().min(1 + len));
    *data = rest;
    String::from_utf8_lossy(head.get(1..).unwrap_or_default()).into_owned()
}

fuzz_target!(|data: &[u8]| {
    let mut data = data;
    let enc = match data.first().map(|b| b % 3) {
        Some(0) => PositionEncoding::Utf8,
        Some(1) => PositionEncoding::Utf16,
        _ => PositionEncoding::Utf32,
    };
    data = data.get(1..).unwrap_or_default();
    let initial = take_text(&mut data);
    let mut doc = Document::new(DocUri::new("file:///f"), "text", 0, &initial);
    let mut version = 0;
    while data.len() >= 8 {
        let start = Position::new(take_u32(&mut data), take_u32(&mut data));
        let end = Position::new(take_u32(&mut data), take_u32(&mut data));
        let text = take_text(&mut data);
        let change = if start.line == 63 {
            ContentChange::full(text)
        } else {
            ContentChange::replace(Range::new(start, end), text)
        };
        version += 1;
        let before = doc.rope().clone();
        match doc.apply_changes(version, &[change], enc) {
            Ok(_) => {}
            // A refused change must leave the text exactly as it was.
            Err(_) => assert_eq!(doc.rope(), &before),
        }
        let rope = doc.rope();
        for c in 0..=rope.len_chars() {
            let pos = agentls_text::position::to_position(rope, c, enc);
            let back = agentls_text::position::to_char_idx(rope, pos, enc);
            assert!(back.char_idx <= c && c - back.char_idx <= 1);
        }
    }
});
