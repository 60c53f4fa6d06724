//! Fuzzes the server's frame decoder (`server/src/transport/framing.rs`, included by
//! path: the server is a binary crate). The input is cut into pieces at boundaries the
//! input itself chooses; any panic is a bug, and so is a decoded body that differs
//! from what decoding the whole input at once gives, or a frame that is not there.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../server/src/transport/framing.rs"]
#[allow(dead_code)]
mod framing;

use framing::{Decoder, Frame};

fn decode(pieces: impl Iterator<Item = Vec<u8>>) -> Vec<Frame> {
    let mut decoder = Decoder::new();
    let mut frames = Vec::new();
    for piece in pieces {
        decoder.push(&piece);
        while let Some(frame) = decoder.next_frame() {
            frames.push(frame);
        }
    }
    frames.extend(decoder.finish());
    frames
}

fuzz_target!(|data: &[u8]| {
    // The first byte picks the piece size; the rest is the stream.
    let Some((&size, stream)) = data.split_first() else {
        return;
    };
    let size = usize::from(size % 64) + 1;
    let whole = decode(std::iter::once(stream.to_vec()));
    let cut = decode(stream.chunks(size).map(<[u8]>::to_vec));
    // Every valid body is a slice of the stream, and the valid bodies do not depend on
    // where the reads were cut (reports of garbage may: it is reported as soon as seen).
    let bodies = |frames: &[Frame]| -> Vec<Vec<u8>> {
        frames
            .iter()
            .filter_map(|f| match f {
                Frame::Body(b) if serde_json::from_slice::<serde_json::Value>(b).is_ok() => {
                    Some(b.clone())
                }
                _ => None,
            })
            .collect()
    };
    let (whole, cut) = (bodies(&whole), bodies(&cut));
    assert_eq!(whole, cut);
    for body in &whole {
        assert!(stream.windows(body.len().max(1)).any(|w| w == body.as_slice()) || body.is_empty());
    }
});
