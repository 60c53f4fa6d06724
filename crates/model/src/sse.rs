//! An incremental parser for `text/event-stream` (the WHATWG "server-sent events"
//! format): bytes in, events out, whatever the chunk boundaries.

/// One server-sent event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field; empty means "message".
    pub event: String,
    /// The `data:` lines joined by `\n`.
    pub data: String,
}

/// Feeds bytes, yields complete events. Lines end with `\n`, `\r\n` or `\r`; comment
/// lines (`:`) and unknown fields are skipped; an event ends at a blank line.
#[derive(Debug, Default)]
pub struct SseParser {
    buf: Vec<u8>,
    event: String,
    data: String,
    has_data: bool,
    /// A `\r` ended the last chunk: a `\n` starting the next one belongs to it.
    pending_cr: bool,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one chunk; returns the events it completed.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        let mut bytes = chunk;
        if self.pending_cr {
            self.pending_cr = false;
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        let mut start = 0;
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'\n' | b'\r' => {
                    self.buf.extend_from_slice(&bytes[start..i]);
                    let line = std::mem::take(&mut self.buf);
                    self.line(&line, &mut out);
                    if bytes[i] == b'\r' {
                        if i + 1 == bytes.len() {
                            self.pending_cr = true;
                        } else if bytes[i + 1] == b'\n' {
                            i += 1;
                        }
                    }
                    i += 1;
                    start = i;
                }
                _ => i += 1,
            }
        }
        self.buf.extend_from_slice(&bytes[start..]);
        out
    }

    /// Whether a partial event or line is buffered (a stream ending here was cut).
    pub fn has_partial(&self) -> bool {
        !self.buf.is_empty() || self.has_data
    }

    fn line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if self.has_data {
                out.push(SseEvent {
                    event: std::mem::take(&mut self.event),
                    data: std::mem::take(&mut self.data),
                });
            }
            self.event.clear();
            self.has_data = false;
            return;
        }
        if line[0] == b':' {
            return;
        }
        let line = String::from_utf8_lossy(line);
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_ref(), ""),
        };
        match field {
            "event" => self.event = value.to_owned(),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_chunks(input: &[u8], size: usize) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        input.chunks(size).flat_map(|c| p.feed(c)).collect()
    }

    #[test]
    fn events_survive_any_chunking_and_line_ending() {
        let lf = b"event: a\ndata: 1\n\n: comment\ndata: x\ndata: y\n\n".to_vec();
        let crlf = String::from_utf8(lf.clone())
            .unwrap()
            .replace('\n', "\r\n")
            .into_bytes();
        let cr = String::from_utf8(lf.clone())
            .unwrap()
            .replace('\n', "\r")
            .into_bytes();
        let expected = vec![
            SseEvent {
                event: "a".into(),
                data: "1".into(),
            },
            SseEvent {
                event: String::new(),
                data: "x\ny".into(),
            },
        ];
        for input in [lf, crlf, cr] {
            for size in 1..=input.len() {
                assert_eq!(parse_in_chunks(&input, size), expected, "chunk size {size}");
            }
        }
    }

    #[test]
    fn blank_line_without_data_yields_nothing_and_unicode_split_is_kept() {
        let input = "event: ping\n\ndata: {\"t\":\"é😀\"}\n\n".as_bytes();
        let events = parse_in_chunks(input, 1);
        assert_eq!(
            events,
            vec![SseEvent {
                event: String::new(),
                data: "{\"t\":\"é😀\"}".into()
            }]
        );
    }

    #[test]
    fn partial_event_is_reported() {
        let mut p = SseParser::new();
        assert!(p.feed(b"data: {\"a\":").is_empty());
        assert!(p.has_partial());
        assert_eq!(p.feed(b"1}\n\n").len(), 1);
        assert!(!p.has_partial());
    }
}
