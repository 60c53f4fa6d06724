//! The user's recent edits to one document, as bursts of typing.
//!
//! A [`Burst`] is what a run of contiguous keystrokes changed: the text that was there
//! (`old`), what it became (`new`), and where it now starts in the document. An edit
//! joins the newest burst when it touches that burst's text and comes within
//! [`COALESCE`] of the burst's last keystroke; otherwise it opens a new burst. Bursts
//! follow later edits (an edit before one moves it; an edit over an older one drops it,
//! since where it was no longer exists), so every burst's `start` is a char offset in
//! the document as it is now. The history keeps at most [`MAX_BURSTS`] bursts and
//! [`MAX_BYTES`] bytes of text; a burst bigger than that alone (a paste of a whole file)
//! is not kept.
//!
//! Edits that are not the user's (an agent's, applied through the editor) go through
//! [`EditHistory::follow`]: bursts move over them, none records them, and the newest
//! burst is closed, so the user's next keystroke starts a burst of its own.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Edits this close to a burst's last one (and touching its text) join it.
pub const COALESCE: Duration = Duration::from_millis(1000);
/// Bursts kept per document.
pub const MAX_BURSTS: usize = 16;
/// Bytes of `old` and `new` text kept per document.
pub const MAX_BYTES: usize = 16 * 1024;

/// What one burst of typing changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Burst {
    /// Where the burst's text starts in the document now (char offset).
    pub start: usize,
    /// The text that was there before the burst.
    pub old: String,
    /// The text the burst left (the document's `start..start + chars(new)`).
    pub new: String,
    /// When its last keystroke came.
    pub last: Instant,
}

impl Burst {
    /// The char range the burst's text covers in the document now.
    pub fn range(&self) -> std::ops::Range<usize> {
        self.start..self.start + self.new.chars().count()
    }

    fn bytes(&self) -> usize {
        self.old.len() + self.new.len()
    }
}

/// One change as the editor reported it: `start..end` (chars, in the text before the
/// change) held `removed` and now holds `inserted`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change<'a> {
    /// The first char replaced.
    pub start: usize,
    /// The text that was at `start`.
    pub removed: &'a str,
    /// The text now at `start`.
    pub inserted: &'a str,
}

/// The recent bursts of one document, oldest first.
#[derive(Debug, Clone, Default)]
pub struct EditHistory {
    bursts: VecDeque<Burst>,
    /// The newest burst may still grow.
    open: bool,
}

impl EditHistory {
    /// The bursts, oldest first.
    pub fn bursts(&self) -> impl DoubleEndedIterator<Item = &Burst> {
        self.bursts.iter()
    }

    /// The newest burst.
    pub fn last(&self) -> Option<&Burst> {
        self.bursts.back()
    }

    /// Records a change the user made at `at`.
    pub fn record(&mut self, change: &Change<'_>, at: Instant) {
        let merged = self.open
            && self.bursts.back().is_some_and(|b| {
                touches(b, change) && at.saturating_duration_since(b.last) <= COALESCE
            });
        let newest = self.bursts.len().saturating_sub(if merged { 1 } else { 0 });
        self.move_over(change, newest);
        if merged {
            if let Some(b) = self.bursts.back_mut() {
                merge(b, change, at);
                if b.old == b.new {
                    // Typed and taken back: nothing changed.
                    self.bursts.pop_back();
                }
            }
        } else if change.removed != change.inserted {
            self.bursts.push_back(Burst {
                start: change.start,
                old: change.removed.to_owned(),
                new: change.inserted.to_owned(),
                last: at,
            });
        }
        self.open = true;
        self.bound();
    }

    /// Follows a change that was not the user's: bursts move over it and the newest is
    /// closed.
    pub fn follow(&mut self, change: &Change<'_>) {
        self.move_over(change, self.bursts.len());
        self.open = false;
    }

    /// Moves the first `count` bursts over `change`: those after it shift, those it
    /// overlaps go.
    fn move_over(&mut self, change: &Change<'_>, count: usize) {
        let end = change.start + change.removed.chars().count();
        let grown = change.inserted.chars().count();
        let mut kept = VecDeque::with_capacity(self.bursts.len());
        for (i, mut b) in std::mem::take(&mut self.bursts).into_iter().enumerate() {
            let r = b.range();
            if i >= count || change.start >= r.end && r.start < r.end {
                // Not to move, or the change comes after it.
            } else if end <= r.start {
                b.start = r.start - (end - change.start) + grown;
            } else if change.start >= r.end {
                // After an empty burst.
            } else {
                continue;
            }
            kept.push_back(b);
        }
        self.bursts = kept;
    }

    fn bound(&mut self) {
        while self.bursts.len() > MAX_BURSTS
            || self.bursts.iter().map(Burst::bytes).sum::<usize>() > MAX_BYTES
        {
            if self.bursts.pop_front().is_none() {
                break;
            }
        }
    }
}

/// Whether `change` touches the text of burst `b` (overlaps it or borders it).
fn touches(b: &Burst, change: &Change<'_>) -> bool {
    let r = b.range();
    let end = change.start + change.removed.chars().count();
    change.start <= r.end && end >= r.start
}

/// Folds `change`, which touches `b`, into it.
fn merge(b: &mut Burst, change: &Change<'_>, at: Instant) {
    let r = b.range();
    let a = change.start;
    let removed: Vec<char> = change.removed.chars().collect();
    let end = a + removed.len();
    // Text the change removed beyond the burst's edges was there before the burst too.
    let pre: String = removed[..r.start.saturating_sub(a).min(removed.len())]
        .iter()
        .collect();
    let post_len = end.saturating_sub(r.end).min(removed.len());
    let post: String = removed[removed.len() - post_len..].iter().collect();
    let from = a.min(r.start);
    let current: Vec<char> = pre
        .chars()
        .chain(b.new.chars())
        .chain(post.chars())
        .collect();
    let (head, tail) = (a - from, (end - from).min(current.len()));
    let mut new: String = current[..head].iter().collect();
    new.push_str(change.inserted);
    new.extend(&current[tail..]);
    b.old = format!("{pre}{}{post}", b.old);
    b.new = new;
    b.start = from;
    b.last = at;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applies `change` to `text` and records it; returns the new text.
    fn typed(
        h: &mut EditHistory,
        text: &str,
        start: usize,
        len: usize,
        ins: &str,
        at: Instant,
    ) -> String {
        let chars: Vec<char> = text.chars().collect();
        let removed: String = chars[start..start + len].iter().collect();
        h.record(
            &Change {
                start,
                removed: &removed,
                inserted: ins,
            },
            at,
        );
        let mut out: String = chars[..start].iter().collect();
        out.push_str(ins);
        out.extend(&chars[start + len..]);
        out
    }

    fn check(h: &EditHistory, text: &str) {
        let chars: Vec<char> = text.chars().collect();
        for b in h.bursts() {
            let r = b.range();
            let here: String = chars[r].iter().collect();
            assert_eq!(here, b.new, "a burst's text is where it says");
        }
    }

    #[test]
    fn keystrokes_of_one_word_make_one_burst() {
        let t0 = Instant::now();
        let mut h = EditHistory::default();
        let mut text = "let count = 1;\nprint(count);\n".to_owned();
        // Select `count`, type `total` key by key.
        text = typed(&mut h, &text, 4, 5, "t", t0);
        for (i, c) in ["o", "t", "a", "l"].iter().enumerate() {
            text = typed(
                &mut h,
                &text,
                5 + i,
                0,
                c,
                t0 + Duration::from_millis(100 * i as u64),
            );
        }
        assert_eq!(text, "let total = 1;\nprint(count);\n");
        let b = h.last().cloned();
        assert_eq!(h.bursts().count(), 1);
        let b = b.unwrap_or_else(|| panic!("a burst"));
        assert_eq!(
            (b.start, b.old.as_str(), b.new.as_str()),
            (4, "count", "total")
        );
        check(&h, &text);
    }

    #[test]
    fn backspace_before_the_burst_and_typing_after_join_it() {
        let t0 = Instant::now();
        let mut h = EditHistory::default();
        let mut text = "abc xyz".to_owned();
        text = typed(&mut h, &text, 5, 0, "Q", t0); // xQyz
        text = typed(&mut h, &text, 4, 1, "", t0); // Qyz: backspace over x
        text = typed(&mut h, &text, 5, 1, "", t0); // Qz: delete y
        assert_eq!(text, "abc Qz");
        let b = h.last().cloned().unwrap_or_else(|| panic!("a burst"));
        assert_eq!((b.start, b.old.as_str(), b.new.as_str()), (4, "xy", "Q"));
        check(&h, &text);
    }

    #[test]
    fn a_pause_or_a_jump_starts_a_new_burst_and_older_ones_follow() {
        let t0 = Instant::now();
        let mut h = EditHistory::default();
        let mut text = "aaa bbb ccc".to_owned();
        text = typed(&mut h, &text, 8, 3, "CC", t0);
        text = typed(&mut h, &text, 0, 0, "zz", t0); // elsewhere: new burst, moves the first
        text = typed(&mut h, &text, 2, 0, "y", t0 + Duration::from_secs(5)); // paused
        assert_eq!(text, "zzyaaa bbb CC");
        let got: Vec<_> = h.bursts().map(|b| (b.start, b.new.clone())).collect();
        assert_eq!(
            got,
            vec![
                (11, "CC".to_owned()),
                (0, "zz".to_owned()),
                (2, "y".to_owned())
            ]
        );
        check(&h, &text);
        // Typing over an older burst drops it.
        text = typed(&mut h, &text, 10, 3, "", t0 + Duration::from_secs(9));
        assert!(h.bursts().all(|b| b.new != "CC"));
        check(&h, &text);
    }

    #[test]
    fn typed_and_taken_back_is_nothing() {
        let t0 = Instant::now();
        let mut h = EditHistory::default();
        let mut text = "fn a() {}".to_owned();
        text = typed(&mut h, &text, 5, 0, "x", t0);
        text = typed(&mut h, &text, 5, 1, "", t0);
        assert_eq!(text, "fn a() {}");
        assert!(h.last().is_none());
    }

    #[test]
    fn an_agent_edit_moves_bursts_and_is_never_recorded() {
        let t0 = Instant::now();
        let mut h = EditHistory::default();
        let text = typed(&mut h, "one two", 4, 3, "TWO", t0);
        h.follow(&Change {
            start: 0,
            removed: "one",
            inserted: "uno!",
        });
        let text = format!("uno!{}", &text[3..]);
        assert_eq!(h.bursts().count(), 1);
        check(&h, &text);
        // The user's next keystroke, even touching the burst, starts its own.
        let text = typed(&mut h, &text, 8, 0, "S", t0);
        assert_eq!(h.bursts().count(), 2);
        check(&h, &text);
    }

    #[test]
    fn the_history_is_bounded() {
        let t0 = Instant::now();
        let mut h = EditHistory::default();
        let mut text = "x".repeat(200);
        for i in 0..40 {
            text = typed(
                &mut h,
                &text,
                i * 4,
                1,
                "y",
                t0 + Duration::from_secs(2 * i as u64),
            );
        }
        assert_eq!(h.bursts().count(), MAX_BURSTS);
        let big = "z".repeat(MAX_BYTES + 1);
        text = typed(&mut h, &text, 0, 0, &big, t0 + Duration::from_secs(999));
        assert!(h.bursts().map(Burst::bytes).sum::<usize>() <= MAX_BYTES);
        check(&h, &text);
    }
}
