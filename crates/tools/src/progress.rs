//! How a running tool reports progress: a command's output as it comes, the plan when
//! the `todo` tool changes it. The orchestrator sets a [`ToolProgress`] per call (it
//! knows the call id); tools without one report nothing.
//!
//! [`forward_output`] turns a command's raw [`OutputChunk`]s into text for
//! [`ToolProgress::output`]: lossy UTF-8, never split inside a character, coalesced so
//! that a chatty command does not become one event per read, and bounded.

use std::time::Duration;

use agentls_sandbox::{OutputChunk, OutputStream};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::TodoItem;

/// Receives a call's progress. Methods must return quickly (they run on the tool's task).
pub trait ToolProgress: Send + Sync {
    /// A piece of a command's output (whole lines where possible).
    fn output(&self, stream: OutputStream, text: &str);

    /// The plan after the `todo` tool changed it.
    fn plan(&self, items: &[TodoItem]) {
        let _ = items;
    }
}

/// Longest wait before pending output is reported.
pub const OUTPUT_BATCH: Duration = Duration::from_millis(50);
/// Pending output above this size is reported at once.
const BATCH_BYTES: usize = 8 * 1024;
/// Output reported per call at most; the rest is only in the final result.
pub const OUTPUT_REPORT_LIMIT: usize = 1 << 20;

/// Reads `rx` until every sender is gone, reporting its text to `progress` in batches:
/// pending bytes go out every [`OUTPUT_BATCH`] up to their last newline (a partial line
/// waits one more batch), or at once past 8 KiB. After [`OUTPUT_REPORT_LIMIT`] bytes a
/// note says that the rest is not shown live.
pub async fn forward_output(mut rx: UnboundedReceiver<OutputChunk>, progress: &dyn ToolProgress) {
    let mut out = Pending::new(OutputStream::Stdout);
    let mut err = Pending::new(OutputStream::Stderr);
    // `None` once the limit was passed (and said so).
    let mut budget = Some(OUTPUT_REPORT_LIMIT);
    let mut tick = tokio::time::interval(OUTPUT_BATCH);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await; // the first tick is immediate
    loop {
        tokio::select! {
            chunk = rx.recv() => match chunk {
                Some(c) => {
                    let p = match c.stream {
                        OutputStream::Stdout => &mut out,
                        OutputStream::Stderr => &mut err,
                    };
                    p.buf.extend_from_slice(&c.data);
                    if p.buf.len() >= BATCH_BYTES {
                        p.flush(false, &mut budget, progress);
                    }
                }
                None => break,
            },
            _ = tick.tick() => {
                out.flush(false, &mut budget, progress);
                err.flush(false, &mut budget, progress);
            }
        }
    }
    out.flush(true, &mut budget, progress);
    err.flush(true, &mut budget, progress);
}

struct Pending {
    stream: OutputStream,
    buf: Vec<u8>,
    /// A partial line was already held back once.
    held: bool,
}

impl Pending {
    fn new(stream: OutputStream) -> Self {
        Self {
            stream,
            buf: Vec::new(),
            held: false,
        }
    }

    fn flush(&mut self, end: bool, budget: &mut Option<usize>, progress: &dyn ToolProgress) {
        if self.buf.is_empty() {
            return;
        }
        let newline = self.buf.iter().rposition(|&b| b == b'\n');
        let mut cut = match newline {
            _ if end => self.buf.len(),
            Some(i) => i + 1,
            None if self.held || self.buf.len() >= BATCH_BYTES => self.buf.len(),
            None => {
                self.held = true;
                return;
            }
        };
        if !end {
            cut = utf8_boundary(&self.buf[..cut]);
        }
        if cut == 0 {
            return;
        }
        let rest = self.buf.split_off(cut);
        let bytes = std::mem::replace(&mut self.buf, rest);
        self.held = false;
        let Some(left) = *budget else {
            return;
        };
        let text = String::from_utf8_lossy(&bytes);
        if bytes.len() <= left {
            *budget = Some(left - bytes.len());
            progress.output(self.stream, &text);
            return;
        }
        let mut n = left.min(text.len());
        while !text.is_char_boundary(n) {
            n -= 1;
        }
        if n > 0 {
            progress.output(self.stream, &text[..n]);
        }
        progress.output(
            self.stream,
            "\n[… more output, not shown live; the result keeps its head and tail]\n",
        );
        *budget = None;
    }
}

/// The longest prefix of `b` that does not end inside a UTF-8 character (invalid bytes
/// count as whole; only an incomplete sequence at the very end is held back).
fn utf8_boundary(b: &[u8]) -> usize {
    let start = b.len().saturating_sub(3);
    for i in (start..b.len()).rev() {
        let byte = b[i];
        if byte & 0xC0 == 0x80 {
            continue;
        }
        let need = match byte {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if b.len() - i < need { i } else { b.len() };
    }
    b.len()
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[derive(Default)]
    struct Record(Mutex<Vec<(OutputStream, String)>>);

    impl ToolProgress for Record {
        fn output(&self, stream: OutputStream, text: &str) {
            self.0.lock().unwrap().push((stream, text.to_owned()));
        }
    }

    fn chunk(stream: OutputStream, data: &[u8]) -> OutputChunk {
        OutputChunk {
            stream,
            data: data.to_vec(),
        }
    }

    #[tokio::test]
    async fn many_small_lines_become_few_events() {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        for i in 0..1000 {
            tx.send(chunk(
                OutputStream::Stdout,
                format!("line {i}\n").as_bytes(),
            ))
            .unwrap();
        }
        drop(tx);
        let rec = Record::default();
        forward_output(rx, &rec).await;
        let events = rec.0.lock().unwrap();
        assert!(events.len() <= 3, "{} events", events.len());
        let all: String = events.iter().map(|(_, t)| t.as_str()).collect();
        assert!(all.starts_with("line 0\nline 1\n") && all.ends_with("line 999\n"));
    }

    #[tokio::test]
    async fn a_partial_line_waits_one_batch_and_characters_stay_whole() {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let rec = std::sync::Arc::new(Record::default());
        let task = {
            let rec = rec.clone();
            tokio::spawn(async move { forward_output(rx, rec.as_ref()).await })
        };
        // "é" is 0xC3 0xA9: split across two reads.
        tx.send(chunk(OutputStream::Stderr, b"ok\ncaf\xC3"))
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while rec.0.lock().unwrap().len() < 2 && std::time::Instant::now() < deadline {
            tokio::time::sleep(OUTPUT_BATCH).await;
        }
        assert_eq!(
            rec.0.lock().unwrap().clone(),
            vec![
                (OutputStream::Stderr, "ok\n".to_owned()),
                (OutputStream::Stderr, "caf".to_owned())
            ],
            "the line first, then the partial line without the half character"
        );
        tx.send(chunk(OutputStream::Stderr, b"\xA9\n")).unwrap();
        drop(tx);
        task.await.unwrap();
        assert_eq!(rec.0.lock().unwrap().last().unwrap().1, "é\n");
    }

    #[tokio::test]
    async fn output_past_the_limit_is_cut_with_a_note() {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let line = vec![b'x'; 1023];
        for _ in 0..(OUTPUT_REPORT_LIMIT / 1024 + 10) {
            let mut l = line.clone();
            l.push(b'\n');
            tx.send(chunk(OutputStream::Stdout, &l)).unwrap();
        }
        drop(tx);
        let rec = Record::default();
        forward_output(rx, &rec).await;
        let events = rec.0.lock().unwrap();
        let shown: usize = events.iter().map(|(_, t)| t.len()).sum();
        assert!(shown < OUTPUT_REPORT_LIMIT + 200, "{shown}");
        assert!(events.last().unwrap().1.contains("not shown live"));
    }
}
