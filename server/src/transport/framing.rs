//! Incremental decoding of the LSP base protocol (`Content-Length` framing) that
//! resynchronises after a bad frame instead of misreading everything after it.
//!
//! Bytes go in with [`Decoder::push`] in whatever pieces the pipe delivers; whole frames
//! come out of [`Decoder::next_frame`]. A frame with a wrong `Content-Length` costs that
//! frame only:
//! - **too short**: the body is cut; the rest of it is not a header, so the decoder
//!   reports it and skips to the next `Content-Length:` (anywhere, since a JSON body ends
//!   without a newline and the next header follows it on the same "line");
//! - **too long**: the body swallows the start of the next frame. When the body holds one
//!   complete JSON value followed by more than whitespace, the frame really ended where
//!   the value ends: the frame is reported and decoding restarts there, so the swallowed
//!   bytes are read again as the next frame. This is checked as soon as a
//!   `Content-Length:` arrives inside a body still incomplete, so a client waiting for an
//!   answer does not wait for bytes that never come;
//! - **two `Content-Length` headers**: the frame is refused (with its id, when the body
//!   parses, so a request still gets an answer) and decoding goes on after the body
//!   whose length is confirmed by a complete JSON value.
//!
//! A valid body is one JSON value and nothing but whitespace after it, so none of these
//! rules can split or drop a well-framed message.
//!
//! The module uses only `std` and `serde_json`: the fuzz target includes this file.

use serde::de::IgnoredAny;
use serde_json::Value;

/// Frames larger than this are refused (and skipped) rather than buffered.
pub const MAX_FRAME_BYTES: usize = 512 * 1024 * 1024;
/// A header line longer than this is garbage.
const MAX_HEADER_LINE: usize = 8 * 1024;
/// A header block larger than this is garbage.
const MAX_HEADER_BLOCK: usize = 32 * 1024;
/// What resynchronisation looks for (compared ignoring ASCII case).
const NEEDLE: &[u8] = b"content-length:";

/// One unit read from the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A body, as bytes.
    Body(Vec<u8>),
    /// A frame that was broken and is lost: why, and the request id when the body could
    /// be read (`Null` otherwise), so the answer can still reach the request.
    Malformed {
        /// What was wrong.
        reason: String,
        /// The id of the lost message, or `Null`.
        id: Value,
    },
}

impl Frame {
    fn malformed(reason: impl Into<String>) -> Self {
        Frame::Malformed {
            reason: reason.into(),
            id: Value::Null,
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Expecting a header block at `pos`.
    Header,
    /// A header block was read; the body starts at `pos`.
    Body {
        /// The declared length (the largest one when two headers disagree).
        len: usize,
        /// With two `Content-Length` headers, the smallest one.
        duplicate: Option<usize>,
        /// How much of the body was already searched for a `Content-Length:`.
        scanned: usize,
    },
    /// Discarding garbage until the next `Content-Length:`.
    Skip,
    /// Discarding this many bytes of an over-limit body.
    Discard(usize),
}

/// The incremental frame decoder.
#[derive(Debug)]
pub struct Decoder {
    buf: Vec<u8>,
    pos: usize,
    phase: Phase,
}

impl Default for Decoder {
    fn default() -> Self {
        Self::new()
    }
}

enum HeaderParse {
    NeedMore,
    /// Blank lines before a header: skip this many bytes.
    Blank(usize),
    /// Not a header. `resume_at`: where a `Content-Length:` starts inside the bytes seen,
    /// if one does.
    Garbage {
        reason: String,
        resume_at: Option<usize>,
    },
    /// A complete header block of `len` bytes.
    Block {
        len: usize,
        lengths: Vec<usize>,
        error: Option<String>,
    },
}

impl Decoder {
    /// An empty decoder.
    pub fn new() -> Self {
        Self {
            buf: Vec::new(),
            pos: 0,
            phase: Phase::Header,
        }
    }

    /// Appends bytes read from the wire.
    pub fn push(&mut self, bytes: &[u8]) {
        self.compact();
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes held and not yet decoded.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The next complete frame, or `None` until more bytes arrive.
    pub fn next_frame(&mut self) -> Option<Frame> {
        loop {
            match self.phase {
                Phase::Skip => {
                    let data = &self.buf[self.pos..];
                    match find_needle(data) {
                        Some(at) => {
                            self.pos += at;
                            self.phase = Phase::Header;
                        }
                        None => {
                            // Keep a tail that may be the start of a split needle.
                            self.pos += data.len().saturating_sub(NEEDLE.len() - 1);
                            return None;
                        }
                    }
                }
                Phase::Discard(left) => {
                    let take = left.min(self.buffered());
                    self.pos += take;
                    if take < left {
                        self.phase = Phase::Discard(left - take);
                        return None;
                    }
                    self.phase = Phase::Header;
                }
                Phase::Header => match parse_header(&self.buf[self.pos..]) {
                    HeaderParse::NeedMore => return None,
                    HeaderParse::Blank(n) => self.pos += n,
                    HeaderParse::Garbage { reason, resume_at } => {
                        match resume_at {
                            Some(at) => self.pos += at,
                            None => {
                                // Past the first byte, so the scan cannot find the same
                                // spot again.
                                self.pos += 1;
                                self.phase = Phase::Skip;
                            }
                        }
                        return Some(Frame::malformed(reason));
                    }
                    HeaderParse::Block {
                        len: header_len,
                        lengths,
                        error,
                    } => {
                        self.pos += header_len;
                        let (Some(&min), Some(&max), None) =
                            (lengths.iter().min(), lengths.iter().max(), &error)
                        else {
                            // The body's length is unknown: skip to the next header.
                            self.phase = Phase::Skip;
                            let reason =
                                error.unwrap_or_else(|| "header without Content-Length".into());
                            return Some(Frame::malformed(reason));
                        };
                        if max > MAX_FRAME_BYTES {
                            self.phase = Phase::Discard(max);
                            return Some(Frame::malformed(format!(
                                "frame of {max} bytes is over the limit"
                            )));
                        }
                        self.phase = Phase::Body {
                            len: max,
                            duplicate: (lengths.len() > 1).then_some(min),
                            scanned: 0,
                        };
                    }
                },
                Phase::Body {
                    len,
                    duplicate,
                    scanned,
                } => return self.body(len, duplicate, scanned),
            }
        }
    }

    /// The frame at the end of input: what was left half-read, if anything.
    pub fn finish(&mut self) -> Option<Frame> {
        let rest = &self.buf[self.pos..];
        let frame = match self.phase {
            Phase::Header if rest.iter().all(u8::is_ascii_whitespace) => None,
            Phase::Skip | Phase::Discard(_) => None,
            Phase::Header | Phase::Body { .. } => {
                Some(Frame::malformed("end of input inside a frame"))
            }
        };
        self.buf.clear();
        self.pos = 0;
        self.phase = Phase::Header;
        frame
    }

    fn body(&mut self, len: usize, duplicate: Option<usize>, scanned: usize) -> Option<Frame> {
        let start = self.pos;
        let avail = self.buffered();
        // Two lengths: the smaller wins when it holds exactly one JSON value.
        if let Some(min) = duplicate.filter(|&min| min < len && min <= avail) {
            let body = &self.buf[start..start + min];
            if json_value_len(body).is_some_and(|end| is_blank(&body[end..])) {
                return Some(self.refuse_duplicate(min));
            }
        }
        if avail < len {
            // A header inside an incomplete body: the declared length may be too long,
            // and the client may be waiting for the answer to this frame.
            let from = scanned.saturating_sub(NEEDLE.len() - 1);
            if find_needle(&self.buf[start + from..]).is_some()
                && let Some(frame) = self.too_long(avail, false)
            {
                return Some(frame);
            }
            self.phase = Phase::Body {
                len,
                duplicate,
                scanned: avail,
            };
            return None;
        }
        if let Some(frame) = self.too_long(len, true) {
            return Some(frame);
        }
        if duplicate.is_some() {
            return Some(self.refuse_duplicate(len));
        }
        let body = self.buf[start..start + len].to_vec();
        self.pos += len;
        self.phase = Phase::Header;
        Some(Frame::Body(body))
    }

    /// If the `seen` bytes of the current body (all of it when `complete`) show it ran
    /// into the next frame, reports the frame and restarts decoding where it really ended.
    fn too_long(&mut self, seen: usize, complete: bool) -> Option<Frame> {
        let body = &self.buf[self.pos..self.pos + seen];
        let end = match json_value_len(body) {
            Some(end) if !is_blank(&body[end..]) => end,
            // A complete body that is not JSON but holds a header: it swallowed the
            // next frame (a complete valid body never gets here).
            None if complete => find_needle(body).filter(|&at| at > 0)?,
            _ => return None,
        };
        let id = request_id(&body[..end]);
        self.pos += end;
        self.phase = Phase::Header;
        Some(Frame::Malformed {
            reason: format!("Content-Length is longer than the message ({end} bytes)"),
            id,
        })
    }

    fn refuse_duplicate(&mut self, len: usize) -> Frame {
        let id = request_id(&self.buf[self.pos..self.pos + len]);
        self.pos += len;
        self.phase = Phase::Header;
        Frame::Malformed {
            reason: "two Content-Length headers".to_owned(),
            id,
        }
    }

    /// Drops consumed bytes, and gives back the memory of a large frame once it is gone.
    fn compact(&mut self) {
        if self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        } else if self.pos > 64 * 1024 && self.pos * 2 > self.buf.len() {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        if self.buf.capacity() > 1024 * 1024 && self.buf.len() < 64 * 1024 {
            self.buf.shrink_to(64 * 1024);
        }
    }
}

/// Parses the header block at the start of `data`.
fn parse_header(data: &[u8]) -> HeaderParse {
    let mut at = 0;
    let mut lengths = Vec::new();
    let mut error = None;
    loop {
        let rest = &data[at..];
        let Some(newline) = rest.iter().position(|&b| b == b'\n') else {
            if let Some(k) = find_later_needle(rest) {
                return garbage("bytes before a header", Some(at + k));
            }
            if rest.len() > MAX_HEADER_LINE || !could_be_header(rest) {
                return garbage_line(rest);
            }
            return HeaderParse::NeedMore;
        };
        let raw = &rest[..newline];
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if let Some(k) = find_later_needle(line) {
            return garbage("bytes before a header", Some(at + k));
        }
        if line.is_empty() {
            if at == 0 {
                return HeaderParse::Blank(newline + 1); // Stray blank lines are harmless.
            }
            return HeaderParse::Block {
                len: at + newline + 1,
                lengths,
                error,
            };
        }
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            return garbage_line(line);
        };
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        if name.is_empty() || !name.iter().all(|&b| is_token(b)) || line.len() > MAX_HEADER_LINE {
            return garbage_line(line);
        }
        if name.eq_ignore_ascii_case(b"content-length") {
            let value = String::from_utf8_lossy(value);
            match value.trim().parse::<usize>() {
                Ok(n) => lengths.push(n),
                Err(_) => error = Some(format!("bad Content-Length {:?}", value.trim())),
            }
        }
        // Content-Type and unknown headers carry nothing we need.
        at += newline + 1;
        if at > MAX_HEADER_BLOCK {
            return garbage("header block too large", None);
        }
    }
}

fn garbage(reason: &str, resume_at: Option<usize>) -> HeaderParse {
    HeaderParse::Garbage {
        reason: reason.to_owned(),
        resume_at,
    }
}

fn garbage_line(line: &[u8]) -> HeaderParse {
    const SHOWN: usize = 60;
    let shown = String::from_utf8_lossy(&line[..line.len().min(SHOWN)]);
    garbage(&format!("not a header line: {shown:?}"), None)
}

/// Whether a partial line may still become a header line: its name so far is a token.
fn could_be_header(partial: &[u8]) -> bool {
    let name = match partial.iter().position(|&b| b == b':') {
        Some(0) => return false,
        Some(colon) => &partial[..colon],
        None => partial.strip_suffix(b"\r").unwrap_or(partial),
    };
    name.iter().all(|&b| is_token(b))
}

/// RFC 9110 token characters, which header names are made of.
fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Where the first `Content-Length:` (any case) starts in `data`.
fn find_needle(data: &[u8]) -> Option<usize> {
    data.windows(NEEDLE.len())
        .position(|w| w.eq_ignore_ascii_case(NEEDLE))
}

/// Where a `Content-Length:` starts in `line` after its first byte: what comes before
/// it is not part of a header.
fn find_later_needle(line: &[u8]) -> Option<usize> {
    find_needle(line.get(1..)?).map(|k| k + 1)
}

/// The length of the JSON value at the start of `data`, if one is complete there.
fn json_value_len(data: &[u8]) -> Option<usize> {
    let mut values = serde_json::Deserializer::from_slice(data).into_iter::<IgnoredAny>();
    match values.next() {
        Some(Ok(_)) => Some(values.byte_offset()),
        _ => None,
    }
}

fn is_blank(data: &[u8]) -> bool {
    data.iter().all(u8::is_ascii_whitespace)
}

/// The `id` of a message, when `body` is one with a usable id.
fn request_id(body: &[u8]) -> Value {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(mut map)) => match map.remove("id") {
            Some(id @ (Value::Number(_) | Value::String(_))) => id,
            _ => Value::Null,
        },
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in_pieces(input: &[u8], piece: usize) -> Vec<Frame> {
        let mut decoder = Decoder::new();
        let mut out = Vec::new();
        for chunk in input.chunks(piece.max(1)) {
            decoder.push(chunk);
            while let Some(f) = decoder.next_frame() {
                out.push(f);
            }
        }
        out.extend(decoder.finish());
        out
    }

    fn frame(body: &str) -> Vec<u8> {
        format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
    }

    fn bodies(frames: &[Frame]) -> Vec<String> {
        frames
            .iter()
            .filter_map(|f| match f {
                Frame::Body(b) => Some(String::from_utf8_lossy(b).into_owned()),
                Frame::Malformed { .. } => None,
            })
            .collect()
    }

    const A: &str = r#"{"jsonrpc":"2.0","id":1,"method":"a","params":{"text":"key: value"}}"#;
    const B: &str = r#"{"jsonrpc":"2.0","id":2,"method":"b"}"#;
    const C: &str = r#"{"jsonrpc":"2.0","method":"c","params":[1,2,3]}"#;

    #[test]
    fn too_short_loses_only_that_frame() {
        for short in [1, 10, 20, A.len() - 1] {
            let mut input = format!("Content-Length: {}\r\n\r\n{A}", A.len() - short).into_bytes();
            input.extend(frame(B));
            input.extend(frame(C));
            for piece in [1, 7, 4096] {
                let frames = decode_in_pieces(&input, piece);
                let got = bodies(&frames);
                assert_eq!(
                    got[got.len() - 2..],
                    [B, C],
                    "short by {short}, piece {piece}"
                );
                assert!(frames.iter().any(|f| matches!(f, Frame::Malformed { .. })));
            }
        }
    }

    #[test]
    fn too_long_loses_only_that_frame_and_keeps_its_id() {
        for extra in [1, 5, 30, B.len() + 25, B.len() + 40] {
            let mut input = format!("Content-Length: {}\r\n\r\n{A}", A.len() + extra).into_bytes();
            input.extend(frame(B));
            input.extend(frame(C));
            for piece in [1, 3, 4096] {
                let frames = decode_in_pieces(&input, piece);
                assert_eq!(bodies(&frames), [B, C], "extra {extra}, piece {piece}");
                assert_eq!(
                    frames[0],
                    Frame::Malformed {
                        reason: format!(
                            "Content-Length is longer than the message ({} bytes)",
                            A.len()
                        ),
                        id: serde_json::json!(1)
                    }
                );
            }
        }
    }

    #[test]
    fn too_long_is_noticed_before_the_declared_length_arrives() {
        // The client waits for the answer to B: the decoder must not wait for bytes
        // that never come.
        let mut input = format!("Content-Length: {}\r\n\r\n{A}", A.len() + 1000).into_bytes();
        input.extend(frame(B));
        let mut decoder = Decoder::new();
        decoder.push(&input);
        let mut frames = Vec::new();
        while let Some(f) = decoder.next_frame() {
            frames.push(f);
        }
        assert_eq!(bodies(&frames), [B]);
        assert!(matches!(frames[0], Frame::Malformed { .. }));
    }

    #[test]
    fn two_content_lengths_refuse_the_frame_and_go_on() {
        for (first, second) in [(A.len(), A.len()), (A.len(), 5), (3, A.len())] {
            let mut input =
                format!("Content-Length: {first}\r\nContent-Length: {second}\r\n\r\n{A}")
                    .into_bytes();
            input.extend(frame(B));
            for piece in [1, 4096] {
                let frames = decode_in_pieces(&input, piece);
                assert_eq!(bodies(&frames), [B], "{first}/{second}");
                assert_eq!(
                    frames[0],
                    Frame::Malformed {
                        reason: "two Content-Length headers".to_owned(),
                        id: serde_json::json!(1)
                    }
                );
            }
        }
    }

    #[test]
    fn garbage_and_bad_headers_are_reported_and_skipped() {
        let input = b"Content-Length: 2\r\n\r\n{}garbage line\r\n\r\nContent-Length: x\r\n\r\nContent-Type: a\r\nContent-Length: 3\r\n\r\n[1]";
        for piece in [1, 2, 5, 4096] {
            let frames = decode_in_pieces(input, piece);
            assert_eq!(frames.len(), 4, "piece {piece}: {frames:?}");
            assert_eq!(frames[0], Frame::Body(b"{}".to_vec()));
            // Garbage is reported as soon as it cannot be a header, before its newline.
            let Frame::Malformed { reason, .. } = &frames[1] else {
                panic!("{frames:?}")
            };
            assert!(
                reason.starts_with("not a header line: \"garbage"),
                "{reason}"
            );
            assert_eq!(frames[2], Frame::malformed("bad Content-Length \"x\""));
            assert_eq!(frames[3], Frame::Body(b"[1]".to_vec()));
        }
    }

    #[test]
    fn garbage_without_newline_is_reported_at_once() {
        let mut decoder = Decoder::new();
        decoder.push(b"{\"oops");
        assert!(matches!(
            decoder.next_frame(),
            Some(Frame::Malformed { .. })
        ));
        decoder.push(&frame(B));
        assert_eq!(
            decoder.next_frame(),
            Some(Frame::Body(B.as_bytes().to_vec()))
        );
    }

    #[test]
    fn a_body_mentioning_content_length_is_not_split() {
        let body =
            r#"{"jsonrpc":"2.0","method":"x","params":{"t":"}Content-Length: 5\r\n\r\n{}"}}"#;
        let mut input = frame(body);
        input.extend(frame(B));
        for piece in [1, 9, 4096] {
            assert_eq!(bodies(&decode_in_pieces(&input, piece)), [body, B]);
        }
    }

    #[test]
    fn end_of_input_inside_a_frame_is_reported() {
        assert_eq!(
            decode_in_pieces(b"Content-Length: 10\r\n\r\n{}", 4096),
            vec![Frame::malformed("end of input inside a frame")]
        );
        assert_eq!(decode_in_pieces(b"\r\n\r\n", 1), vec![]);
    }
}
