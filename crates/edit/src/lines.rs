//! A file seen as lines: content without terminators, each line's own terminator kept so
//! that untouched lines come back byte for byte.

use std::ops::Range;

/// One line of a text, as byte offsets into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Line {
    /// Offset of the first byte.
    pub start: usize,
    /// Offset just past the content (before `\r\n` or `\n`).
    pub content_end: usize,
    /// Offset just past the terminator (equals `content_end` for a last line without one).
    pub end: usize,
}

/// A text split into lines. Only `\n` and `\r\n` end lines: a lone `\r` stays content.
#[derive(Debug, Clone)]
pub(crate) struct Lines<'a> {
    pub text: &'a str,
    pub lines: Vec<Line>,
}

impl<'a> Lines<'a> {
    pub fn new(text: &'a str) -> Self {
        let mut lines = Vec::new();
        let mut start = 0;
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                let content_end = if i > start && text.as_bytes()[i - 1] == b'\r' {
                    i - 1
                } else {
                    i
                };
                lines.push(Line {
                    start,
                    content_end,
                    end: i + 1,
                });
                start = i + 1;
            }
        }
        if start < text.len() {
            lines.push(Line {
                start,
                content_end: text.len(),
                end: text.len(),
            });
        }
        Self { text, lines }
    }

    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// The content of line `i` (zero-based), without its terminator.
    pub fn get(&self, i: usize) -> &'a str {
        let l = self.lines[i];
        &self.text[l.start..l.content_end]
    }

    /// All contents, without terminators.
    pub fn contents(&self) -> Vec<&'a str> {
        (0..self.len()).map(|i| self.get(i)).collect()
    }

    /// The terminator new lines should get: the first one in the file, `\n` by default.
    pub fn eol(&self) -> &'static str {
        match self.lines.first() {
            Some(l) if &self.text[l.content_end..l.end] == "\r\n" => "\r\n",
            _ => "\n",
        }
    }

    /// Whether the last line lacks a terminator (an empty text counts as having one).
    pub fn missing_final_newline(&self) -> bool {
        self.lines.last().is_some_and(|l| l.content_end == l.end)
    }

    /// The terminator of line `i` (`""` for a last line without one).
    fn ending(&self, i: usize) -> &'a str {
        let l = self.lines[i];
        &self.text[l.content_end..l.end]
    }

    /// The text with lines `range` replaced by `new` lines; a missing final newline
    /// stays missing when the last line is replaced or lines are appended.
    ///
    /// Each new line keeps the terminator of the old line it stands for (equal lines and
    /// lines replaced one for one, aligned by a line diff), so in a file with mixed line
    /// endings only the lines whose content changed can change, and only in content.
    /// Added lines take the terminator of the line before them (or after, at the top),
    /// else the file's first one.
    pub fn replace(&self, range: Range<usize>, new: &[String]) -> String {
        let n = self.len();
        let no_final = self.missing_final_newline();
        let touches_end = range.end == n;
        let endings = self.endings_for(range.clone(), new);
        let mut out =
            String::with_capacity(self.text.len() + new.iter().map(|l| l.len() + 2).sum::<usize>());
        let head_end = if range.start < n {
            self.lines[range.start].start
        } else {
            self.text.len()
        };
        out.push_str(&self.text[..head_end]);
        if range.start == n && no_final && !new.is_empty() {
            // Appending after a last line that had no terminator: give it one.
            out.push_str(self.neighbour_ending(range.start));
        }
        for (i, (l, eol)) in new.iter().zip(&endings).enumerate() {
            out.push_str(l);
            let last = i + 1 == new.len();
            if !(last && touches_end && no_final) {
                out.push_str(eol);
            }
        }
        if range.end < n {
            out.push_str(&self.text[self.lines[range.end].start..]);
        } else if new.is_empty() && no_final && range.start > 0 && range.start < n {
            // Deleted the last lines of a file without a final newline: keep it without one.
            let eol = self.ending(range.start - 1);
            let trimmed = out.len() - eol.len().min(out.len());
            if out[trimmed..] == *eol {
                out.truncate(trimmed);
            }
        }
        out
    }

    /// The terminator for a line added at `at` with no old line to inherit from: the
    /// previous line's, else the next line's, else the file's first one.
    fn neighbour_ending(&self, at: usize) -> &'a str {
        let usable = |i: usize| Some(self.ending(i)).filter(|e| !e.is_empty());
        at.checked_sub(1)
            .and_then(usable)
            .or_else(|| (at < self.len()).then(|| usable(at)).flatten())
            .unwrap_or(self.eol())
    }

    /// One terminator per line of `new` replacing `range`: see [`Lines::replace`].
    fn endings_for(&self, range: Range<usize>, new: &[String]) -> Vec<&'a str> {
        let old: Vec<&str> = range.clone().map(|i| self.get(i)).collect();
        let new_refs: Vec<&str> = new.iter().map(String::as_str).collect();
        let mut out = Vec::with_capacity(new.len());
        let mut last_old: Option<usize> = None;
        for op in similar::capture_diff_slices(similar::Algorithm::Myers, &old, &new_refs) {
            let (_, or, nr) = op.as_tag_tuple();
            for (k, _) in nr.enumerate() {
                // The old line this new line stands for: same position in the changed
                // block; past its end, the block's last old line (or the one before).
                let src = if k < or.len() {
                    Some(range.start + or.start + k)
                } else {
                    or.end.checked_sub(1).map(|j| range.start + j).or(last_old)
                };
                let eol = match src {
                    Some(i) if !self.ending(i).is_empty() => self.ending(i),
                    _ => self.neighbour_ending(range.start),
                };
                out.push(eol);
            }
            if !or.is_empty() {
                last_old = Some(range.start + or.end - 1);
            }
        }
        out
    }

    /// One-based line number of the line holding byte `offset`.
    pub fn line_of_byte(&self, offset: usize) -> usize {
        self.lines.partition_point(|l| l.end <= offset) + 1
    }
}

/// Splits text a model wrote into lines: `\n` or `\r\n`, one trailing newline ignored.
pub(crate) fn split_model_lines(text: &str) -> Vec<String> {
    let lines = Lines::new(text);
    lines.contents().into_iter().map(str::to_owned).collect()
}

/// Leading whitespace of a line.
pub(crate) fn indent_of(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replaced(text: &str, range: Range<usize>, new: &[&str]) -> String {
        let new: Vec<String> = new.iter().map(|s| s.to_string()).collect();
        Lines::new(text).replace(range, &new)
    }

    #[test]
    fn splits_and_keeps_terminators() {
        let l = Lines::new("a\r\nb\nc");
        assert_eq!(l.contents(), vec!["a", "b", "c"]);
        assert_eq!(l.eol(), "\r\n");
        assert!(l.missing_final_newline());
        assert_eq!(Lines::new("").len(), 0);
        assert_eq!(Lines::new("\n").contents(), vec![""]);
    }

    #[test]
    fn replace_preserves_endings() {
        assert_eq!(
            replaced("a\r\nb\r\nc\r\n", 1..2, &["x", "y"]),
            "a\r\nx\r\ny\r\nc\r\n"
        );
        assert_eq!(replaced("a\nb", 1..2, &["x"]), "a\nx");
        assert_eq!(replaced("a\nb", 2..2, &["x"]), "a\nb\nx");
        assert_eq!(replaced("a\nb\n", 2..2, &["x"]), "a\nb\nx\n");
        assert_eq!(replaced("", 0..0, &["x"]), "x\n");
        assert_eq!(replaced("a\nb", 1..2, &[]), "a");
        assert_eq!(replaced("a\nb\n", 0..1, &[]), "b\n");
    }

    #[test]
    fn mixed_endings_stay_per_line() {
        // Only the changed line's content changes; every terminator stays its own.
        let text = "a\nb\r\nc\nd\r\n";
        assert_eq!(
            replaced(text, 0..4, &["a", "B", "c", "d"]),
            "a\nB\r\nc\nd\r\n"
        );
        // An added line takes the ending of the line before it.
        assert_eq!(
            replaced(text, 1..3, &["b", "x", "c"]),
            "a\nb\r\nx\r\nc\nd\r\n"
        );
        assert_eq!(replaced(text, 2..2, &["x"]), "a\nb\r\nx\r\nc\nd\r\n");
        assert_eq!(replaced(text, 0..0, &["x"]), "x\na\nb\r\nc\nd\r\n");
    }
}
