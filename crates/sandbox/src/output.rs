//! Output capture that keeps the head and the tail and counts the rest.

use std::collections::VecDeque;

/// What a stream produced, within the limit: the first and last bytes, and how many
/// bytes were dropped between them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CapturedOutput {
    /// The first bytes.
    pub head: Vec<u8>,
    /// The last bytes (empty unless the output overflowed the head).
    pub tail: Vec<u8>,
    /// Every byte the stream produced, kept or not.
    pub total_bytes: u64,
}

impl CapturedOutput {
    /// True when bytes were dropped between head and tail.
    pub fn truncated(&self) -> bool {
        self.total_bytes > (self.head.len() + self.tail.len()) as u64
    }

    /// The output as text, with a marker where bytes were dropped.
    pub fn to_text(&self) -> String {
        let mut s = String::from_utf8_lossy(&self.head).into_owned();
        if self.truncated() {
            let dropped = self.total_bytes - (self.head.len() + self.tail.len()) as u64;
            s.push_str(&format!("\n[... {dropped} bytes omitted ...]\n"));
        }
        s.push_str(&String::from_utf8_lossy(&self.tail));
        s
    }
}

/// Accumulates a stream into a [`CapturedOutput`] with bounded memory.
pub(crate) struct Capture {
    head_cap: usize,
    tail_cap: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
}

impl Capture {
    /// Keeps up to `limit` bytes: half head, half tail.
    pub(crate) fn new(limit: usize) -> Self {
        let head_cap = limit / 2;
        Self {
            head_cap,
            tail_cap: limit - head_cap,
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
        }
    }

    pub(crate) fn push(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        let room = self.head_cap - self.head.len();
        if room > 0 {
            let n = room.min(data.len());
            self.head.extend_from_slice(&data[..n]);
            data = &data[n..];
        }
        if data.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&data[data.len() - self.tail_cap..]);
            return;
        }
        let overflow = (self.tail.len() + data.len()).saturating_sub(self.tail_cap);
        self.tail.drain(..overflow);
        self.tail.extend(data);
    }

    pub(crate) fn finish(self) -> CapturedOutput {
        CapturedOutput {
            head: self.head,
            tail: self.tail.into(),
            total_bytes: self.total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_head_and_tail() {
        let mut c = Capture::new(8);
        for chunk in [&b"0123"[..], b"4567", b"89ab", b"cdef"] {
            c.push(chunk);
        }
        let out = c.finish();
        assert_eq!(out.head, b"0123");
        assert_eq!(out.tail, b"cdef");
        assert_eq!(out.total_bytes, 16);
        assert!(out.truncated());
        assert_eq!(out.to_text(), "0123\n[... 8 bytes omitted ...]\ncdef");
    }

    #[test]
    fn short_output_is_whole() {
        let mut c = Capture::new(100);
        c.push(b"hello\n");
        let out = c.finish();
        assert!(!out.truncated());
        assert_eq!(out.to_text(), "hello\n");
    }

    #[test]
    fn one_huge_chunk() {
        let mut c = Capture::new(4);
        c.push(b"abcdefghij");
        let out = c.finish();
        assert_eq!(
            (out.head.as_slice(), out.tail.as_slice()),
            (&b"ab"[..], &b"ij"[..])
        );
    }
}
