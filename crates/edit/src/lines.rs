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

    /// The text with lines `range` replaced by `new` lines, each ending in the file's
    /// terminator; a missing final newline stays missing when the last line is replaced
    /// or lines are appended.
    pub fn replace(&self, range: Range<usize>, new: &[String]) -> String {
        let eol = self.eol();
        let n = self.len();
        let no_final = self.missing_final_newline();
        let touches_end = range.end == n;
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
            out.push_str(eol);
        }
        for (i, l) in new.iter().enumerate() {
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
            let trimmed = out.len() - eol.len().min(out.len());
            if out[trimmed..] == *eol {
                out.truncate(trimmed);
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
}
