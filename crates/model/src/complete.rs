//! Code completion as the user types: fill-in-the-middle (FIM) requests, the
//! [`Completer`] interface every completion backend serves (the embedded model, an
//! OpenAI-compatible `/completions` endpoint), and the [`StopRules`] that end a
//! completion at a sensible place whatever the backend.
//!
//! A completion is judged line by line as it grows: a backend calls
//! [`StopRules::cut`] after each piece of text and stops decoding as soon as it
//! answers `Some`, so a model that would run on to its token budget costs only the
//! lines the user will see.

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;

use agentls_text::next_edit::rewrite::settle;

use crate::{CancellationToken, ModelError};

/// One fill-in-the-middle request: the live buffer around the cursor and the
/// context gathered for it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FimRequest {
    /// The file's path relative to the workspace root (`src/lib.rs`), for
    /// repository-level prompts (`<|file_sep|>`).
    pub path: String,
    /// The LSP language id, when the editor said.
    pub language: Option<String>,
    /// The buffer's text before the cursor (possibly cut to a window).
    pub prefix: String,
    /// The buffer's text after the cursor (possibly cut to a window).
    pub suffix: String,
    /// Pieces of other files, most relevant last (nearest the cursor's file in the
    /// prompt): definitions the cursor's code uses, recently edited places.
    pub context: Vec<ContextChunk>,
    /// Most tokens to generate.
    pub max_tokens: u32,
}

/// A FIM prefix split at the start of the cursor's line: the whole lines before it,
/// and the cursor's line up to the cursor.
///
/// Prompts put the second part after the middle token, as llama.cpp's infill does with
/// its `prompt` field (what llama.vim sends there): a keystroke on the line then
/// changes only the prompt's last tokens, so the KV cache keeps everything before them
/// (the prefix lines, the suffix) and the keystroke re-reads a token or two instead of
/// the whole suffix window.
pub fn split_cursor_line(prefix: &str) -> (&str, &str) {
    let at = prefix.rfind('\n').map_or(0, |i| i + 1);
    prefix.split_at(at)
}

/// A piece of another file given to the model as context.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContextChunk {
    /// Path relative to the workspace root.
    pub path: String,
    /// The text.
    pub text: String,
}

/// Why a completion ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FimStop {
    /// The model ended its answer (end of text, `<|endoftext|>`, `<|fim_pad|>`…).
    EndOfText,
    /// A [`StopRules`] rule cut it.
    Rule,
    /// The token budget ran out.
    Budget,
}

/// A completion's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FimAnswer {
    /// The text to insert at the cursor, already cut by [`StopRules`].
    pub text: String,
    /// Tokens generated.
    pub tokens: u32,
    /// Prompt tokens served from a cache (KV cache or the provider's).
    pub cached_tokens: u32,
    /// Prompt tokens in all.
    pub prompt_tokens: u32,
    /// Why it ended.
    pub stop: FimStop,
}

/// The future a [`Completer`] returns.
pub type FimFuture<'a> = Pin<Box<dyn Future<Output = Result<FimAnswer, ModelError>> + Send + 'a>>;

/// A completion backend.
pub trait Completer: Send + Sync + Debug {
    /// The configured model's name.
    fn name(&self) -> &str;
    /// Completes at the cursor. Cancelling `cancel` stops the work within one
    /// generated token (or drops the HTTP request) and ends with a `UserAborted`
    /// error. Text is cut with `rules` as it grows.
    fn complete<'a>(
        &'a self,
        req: &'a FimRequest,
        rules: &'a StopRules,
        cancel: CancellationToken,
    ) -> FimFuture<'a>;
}

/// Where a completion should end, judged from the text around the cursor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StopRules {
    /// Indentation (in columns, a tab counting 4) of the line the cursor is on:
    /// a later line indented less has left the block being written.
    block_indent: usize,
    /// The first non-blank line of the suffix, trimmed: a completion that writes it
    /// again is repeating what follows.
    suffix_line: String,
    /// The rest of the cursor's line after the cursor, trimmed: the completion's
    /// first line must not end by repeating it.
    rest_of_line: String,
    /// Most lines to keep once the first line opens a block.
    max_lines: usize,
    /// The cursor's line before the cursor, trimmed: code there means the user is
    /// finishing that line, and only a first line that opens a block may go on.
    before: String,
    /// Only the line budget applies ([`StopRules::lines`]).
    lines_only: bool,
    /// The lines a rewrite writes again, changed ([`StopRules::rewrite`]).
    rewrite: Option<String>,
}

impl StopRules {
    /// Rules for a completion between `prefix` and `suffix`, at most `max_lines`
    /// lines long; one line when the cursor follows code on its line and that line,
    /// completed, does not open a block (`let x = |`, `foo(|)`: the user is finishing
    /// that line; `fn f(a: i32, |` completed as `b: i32) {`, or a blank line, may go on).
    pub fn new(prefix: &str, suffix: &str, max_lines: usize) -> Self {
        let line_start = prefix.rfind('\n').map_or(0, |i| i + 1);
        let before = prefix[line_start..].trim().to_string();
        let block_indent = indent_of(&prefix[line_start..]);
        let rest_of_line = suffix.split('\n').next().unwrap_or("").trim().to_string();
        let suffix_line = suffix
            .split('\n')
            .skip(1)
            .map(str::trim)
            .find(|line| !line.is_empty())
            .unwrap_or("")
            .to_string();
        Self {
            block_indent,
            suffix_line,
            rest_of_line,
            max_lines: max_lines.max(1),
            before,
            lines_only: false,
            rewrite: None,
        }
    }

    /// Rules for a rewrite of whole lines (a next-edit window): at most `max_lines`
    /// lines, none of the code rules, the text kept as it came.
    pub fn lines(max_lines: usize) -> Self {
        Self {
            block_indent: 0,
            suffix_line: String::new(),
            rest_of_line: String::new(),
            max_lines: max_lines.max(1),
            before: String::new(),
            lines_only: true,
            rewrite: None,
        }
    }

    /// Rules for an answer that writes `rest` (whole lines) again, changed: it ends as
    /// soon as its lines decide the rewrite ([`settle`]: copied to the end, or
    /// rejoined the original after a change), or after as many lines as `rest` has;
    /// the text kept as it came.
    pub fn rewrite(rest: &str) -> Self {
        Self {
            rewrite: Some(rest.to_owned()),
            ..Self::lines(rest.split_inclusive('\n').count())
        }
    }

    /// The text the answer is expected to write again, mostly copied
    /// ([`StopRules::rewrite`]): what a backend may draft the answer from.
    pub fn copy_of(&self) -> Option<&str> {
        self.rewrite.as_deref()
    }

    /// Most lines for a completion whose first line is `first`.
    fn line_budget(&self, first: &str) -> usize {
        // The completed line's end: the first line's, or the cursor line's when the
        // first line adds nothing (judged per token: no allocation).
        let first = first.trim_end();
        let end = if first.is_empty() {
            self.before.as_str()
        } else {
            first
        };
        let opens_block = ["{", ":", "=>", "(", "["].iter().any(|o| end.ends_with(o));
        if self.before.is_empty() || opens_block {
            self.max_lines
        } else {
            1
        }
    }

    /// Where to cut `text`, a completion so far, when a rule has fired: the byte
    /// length to keep. Only whole lines are judged (a line still being written may
    /// grow), except by [`StopRules::finish`].
    pub fn cut(&self, text: &str) -> Option<usize> {
        self.judge(text, false)
    }

    /// The completion to show once generation ended: `text` cut by the rules,
    /// judging its last line too, with trailing blanks and any repeat of the rest of
    /// the cursor's line removed.
    pub fn finish(&self, text: &str) -> String {
        if self.lines_only {
            return text[..self.judge(text, true).unwrap_or(text.len())].to_string();
        }
        let kept = &text[..self.judge(text, true).unwrap_or(text.len())];
        let mut kept = kept.trim_end().to_string();
        if !kept.contains('\n') && !self.rest_of_line.is_empty() {
            // `foo(|)` completed as `a, b)`: the `)` is already in the buffer.
            if let Some(stripped) = kept.strip_suffix(self.rest_of_line.as_str()) {
                kept = stripped.trim_end().to_string();
            }
        }
        kept
    }

    fn judge(&self, text: &str, at_end: bool) -> Option<usize> {
        if let Some(rest) = &self.rewrite {
            return judge_rewrite(rest, self.max_lines, text);
        }
        let mut offset = 0usize;
        let mut seen_content = false;
        let first = text.split('\n').next().unwrap_or("");
        let max_lines = self.line_budget(first);
        for (index, line) in text.split_inclusive('\n').enumerate() {
            let complete = line.ends_with('\n') || at_end;
            let body = line.trim_end_matches(['\n', '\r']);
            let trimmed = body.trim();
            // The line's start, minus the newline that ended the previous line.
            let cut_here = offset.saturating_sub(1);
            // Rules a line's start decides, judged as soon as it shows: a line past
            // the budget, or code indented less than the block.
            if index > 0 {
                if index >= max_lines {
                    return Some(cut_here);
                }
                if !self.lines_only && !trimmed.is_empty() && indent_of(body) < self.block_indent {
                    return Some(cut_here);
                }
            }
            if !complete {
                break;
            }
            if index > 0 && !self.lines_only {
                if trimmed.is_empty() && seen_content {
                    return Some(cut_here);
                }
                if !self.suffix_line.is_empty() && trimmed == self.suffix_line {
                    return Some(cut_here);
                }
            }
            seen_content |= !trimmed.is_empty();
            offset += line.len();
        }
        None
    }
}

/// Where a rewrite of `rest` ends: once [`settle`] decides it, or once `max_lines`
/// whole lines are written (not a token later).
fn judge_rewrite(rest: &str, max_lines: usize, text: &str) -> Option<usize> {
    if let Some(s) = settle(rest, text) {
        return Some(s.keep);
    }
    text.match_indices('\n')
        .nth(max_lines.saturating_sub(1))
        .map(|(i, _)| i + 1)
}

/// Leading whitespace of `line` in columns, a tab counting 4.
fn indent_of(line: &str) -> usize {
    line.chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .map(|c| if c == '\t' { 4 } else { 1 })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_splits_at_the_start_of_the_cursor_line() {
        assert_eq!(
            split_cursor_line("fn f() {\n    let a = fo"),
            ("fn f() {\n", "    let a = fo")
        );
        assert_eq!(split_cursor_line("x = "), ("", "x = "));
        assert_eq!(split_cursor_line("a\n"), ("a\n", ""));
    }

    #[test]
    fn a_rewrite_is_cut_at_its_line_budget_only() {
        let rules = StopRules::lines(3);
        let text = "    a\n\nb\n  c\n";
        assert_eq!(rules.cut("    a\n\nb"), None);
        assert_eq!(rules.finish(text), "    a\n\nb");
        assert_eq!(rules.finish("x\n\n"), "x\n\n");
    }

    #[test]
    fn a_rewrite_ends_once_its_lines_decide_it() {
        let rest = "    b = 2;\n    c = 3;\n    d = 4;\n";
        let rules = StopRules::rewrite(rest);
        assert_eq!(rules.copy_of(), Some(rest));
        // Copying, or changed and not back: it goes on.
        assert_eq!(rules.cut("    b = 2;\n    c = 3;\n"), None);
        assert_eq!(rules.cut("    b = 5;\n    c ="), None);
        // Changed, then the next original line: decided, cut after it.
        let text = "    b = 5;\n    c = 3;\n";
        assert_eq!(rules.cut(&format!("{text}    d")), Some(text.len()));
        assert_eq!(rules.finish(&format!("{text}    d = 9;\n")), text);
        // Copied to the end: cut there, with no token more.
        assert_eq!(rules.cut(rest), Some(rest.len()));
        // Changed to the end and never back: the line budget, at its last newline.
        let other = "    x = 1;\n    y = 1;\n    z = 1;\n";
        assert_eq!(rules.cut(&other[..other.len() - 1]), None);
        assert_eq!(rules.cut(other), Some(other.len()));
    }

    #[test]
    fn a_blank_line_ends_the_completion() {
        let rules = StopRules::new("def f(x):\n    ", "\n", 16);
        let text = "return x + 1\n\ndef g():\n";
        assert_eq!(rules.cut(text), Some("return x + 1".len()));
        assert_eq!(rules.finish(text), "return x + 1");
    }

    #[test]
    fn a_line_indented_less_than_the_cursor_leaves_the_block() {
        let rules = StopRules::new("fn f() {\n    let a = 1;\n    ", "\n}\n", 16);
        let text = "let b = a + 1;\n    b\n}\nfn g() {}\n";
        assert_eq!(rules.finish(text), "let b = a + 1;\n    b");
    }

    #[test]
    fn repeating_the_suffix_stops_before_it() {
        let rules = StopRules::new("if x:\n    ", "\n    return y\n", 16);
        assert_eq!(rules.finish("y = x * 2\n    return y\n"), "y = x * 2");
    }

    #[test]
    fn the_rest_of_the_line_is_not_written_twice() {
        let rules = StopRules::new("print(", ")\n", 16);
        assert_eq!(rules.finish("a, b)"), "a, b");
    }

    #[test]
    fn a_line_still_growing_is_not_judged() {
        let rules = StopRules::new("    ", "", 1);
        assert_eq!(rules.cut("x = 1"), None);
        assert_eq!(rules.cut("x = 1\ny"), Some(5));
        assert_eq!(rules.finish("x = 1\ny = 2"), "x = 1");
    }

    #[test]
    fn after_code_on_its_line_the_cursor_gets_one_line() {
        let rules = StopRules::new("fn f() {\n    let x = ", "\n}\n", 16);
        assert_eq!(rules.cut("compute(1);\n    let"), Some("compute(1);".len()));
        let rules = StopRules::new("fn f() {", "\n}\n", 16);
        assert_eq!(
            rules.finish("\n    let x = 1;\n    x\n}"),
            "\n    let x = 1;\n    x"
        );
    }

    #[test]
    fn a_first_line_that_opens_a_block_may_go_on() {
        let rules = StopRules::new("pub fn mul(a: i32, ", "\n", 8);
        assert_eq!(
            rules.finish("b: i32) -> i32 {\n    a * b\n}\n"),
            "b: i32) -> i32 {\n    a * b\n}"
        );
        let rules = StopRules::new("    let s = ", "\n}\n", 8);
        assert_eq!(rules.finish("a + b;\n    s\n"), "a + b;");
    }

    #[test]
    fn a_line_indented_less_is_cut_as_soon_as_it_shows() {
        let rules = StopRules::new("if x:\n    ", "", 16);
        assert_eq!(rules.cut("y = 1\nz"), Some(5));
        assert_eq!(rules.cut("y = 1\n    z"), None);
    }

    #[test]
    fn tabs_count_as_indentation() {
        let rules = StopRules::new("func f() {\n\t", "\n}", 16);
        assert_eq!(
            rules.finish("a := 1\n\treturn a\n}\n"),
            "a := 1\n\treturn a"
        );
    }
}
