//! Next edits from a model: a window of lines around the cursor, the user's recent
//! bursts as unified diffs, and a prompt asking for the window rewritten; the answer is
//! diffed against the window and the suggestion is the smallest changed range.
//!
//! Three prompt layouts ([`Format`]):
//!
//! - **Zeta** (Zed's open next-edit model): the bursts as `User edited "path":` diff
//!   blocks, then the file's excerpt in a fence with the window between
//!   `<|editable_region_start|>` and `<|editable_region_end|>` and
//!   `<|user_cursor_is_here|>` at the cursor; the model answers the excerpt again,
//!   markers included, the region rewritten.
//! - **Sweep** (Sweep's next-edit models): `<|file_sep|>`-headed sections: the file
//!   around the window, the bursts as diffs, then `original/PATH:A:B` (the window before
//!   the last burst), `current/PATH:A:B` (the window now, `<|cursor|>` at the cursor) and
//!   an open `updated/PATH:A:B` the model completes.
//! - **Fill** (the embedded model, a plain FIM coder, no next-edit training): the
//!   `original/` and `current/` windows as repository files before an `updated/` file
//!   whose lines up to the cursor's are given ([`fill_parts`]): the model writes the rest
//!   of the window, a few lines, as the middle.
//!
//! Gates ([`keep`]): nothing that takes the last burst back (in whole or in part),
//! nothing inside the word the cursor is in when the burst ends in it, nothing when the
//! rewrite equals the window.

use std::ops::Range;

use super::history::Burst;
use super::predict::{Suggestion, undoes};

/// Zeta's region start marker.
pub const REGION_START: &str = "<|editable_region_start|>";
/// Zeta's region end marker.
pub const REGION_END: &str = "<|editable_region_end|>";
/// Zeta's cursor marker.
pub const ZETA_CURSOR: &str = "<|user_cursor_is_here|>";
/// Sweep's (and Qwen's repository) file separator.
pub const FILE_SEP: &str = "<|file_sep|>";
/// Sweep's cursor marker.
pub const SWEEP_CURSOR: &str = "<|cursor|>";

/// A prompt layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Zed's Zeta: editable-region markers.
    Zeta,
    /// Sweep: `original/`, `current/`, `updated/` blocks.
    Sweep,
    /// The embedded FIM model: see the module docs.
    Fill,
}

/// The lines around the cursor a model may rewrite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// Chars of the document.
    pub range: Range<usize>,
    /// Its text.
    pub text: String,
    /// The cursor, in chars of `text`.
    pub cursor: usize,
    /// The first line's number (0-based).
    pub first_line: usize,
}

/// The window of `before` whole lines above the cursor's line and `after` below it.
pub fn window(text: &[char], cursor: usize, before: usize, after: usize) -> Window {
    let cursor = cursor.min(text.len());
    let starts = line_starts(text);
    let line = starts.partition_point(|s| *s <= cursor).saturating_sub(1);
    let first = line.saturating_sub(before);
    let last = (line + after + 1).min(starts.len());
    let start = starts[first];
    let end = starts.get(last).copied().unwrap_or(text.len());
    Window {
        range: start..end,
        text: text[start..end].iter().collect(),
        cursor: cursor - start,
        first_line: first,
    }
}

fn line_starts(text: &[char]) -> Vec<usize> {
    std::iter::once(0)
        .chain(
            text.iter()
                .enumerate()
                .filter(|(_, c)| **c == '\n')
                .map(|(i, _)| i + 1),
        )
        .filter(|s| *s <= text.len())
        .collect()
}

/// The burst as a unified diff hunk over the whole lines it touches (no file header).
/// `text` is the document now.
pub fn burst_diff(text: &[char], burst: &Burst) -> String {
    let r = burst.range();
    let end = r.end.min(text.len());
    let start = r.start.min(end);
    let starts = line_starts(text);
    let line = starts.partition_point(|s| *s <= start).saturating_sub(1);
    let line_start = starts[line];
    let mut line_end = end;
    while line_end < text.len() && text[line_end] != '\n' {
        line_end += 1;
    }
    let head: String = text[line_start..start].iter().collect();
    let tail: String = text[end..line_end].iter().collect();
    let old = format!("{head}{}{tail}", burst.old);
    let new = format!("{head}{}{tail}", burst.new);
    let old_lines: Vec<&str> = old.split('\n').collect();
    let new_lines: Vec<&str> = new.split('\n').collect();
    let mut out = format!(
        "@@ -{},{} +{},{} @@\n",
        line + 1,
        old_lines.len(),
        line + 1,
        new_lines.len()
    );
    for l in old_lines {
        out.push_str(&format!("-{l}\n"));
    }
    for l in new_lines {
        out.push_str(&format!("+{l}\n"));
    }
    out
}

/// The window's text as it was before `burst` (the same when the burst is not wholly
/// inside it).
pub fn before_burst(window: &Window, burst: &Burst) -> String {
    let r = burst.range();
    if r.start < window.range.start || r.end > window.range.end {
        return window.text.clone();
    }
    let chars: Vec<char> = window.text.chars().collect();
    let (a, b) = (r.start - window.range.start, r.end - window.range.start);
    chars[..a]
        .iter()
        .copied()
        .chain(burst.old.chars())
        .chain(chars[b..].iter().copied())
        .collect()
}

fn with_marker(window: &Window, marker: &str) -> String {
    let chars: Vec<char> = window.text.chars().collect();
    let at = window.cursor.min(chars.len());
    let mut s: String = chars[..at].iter().collect();
    s.push_str(marker);
    s.extend(chars[at..].iter());
    s
}

/// The prompt for `format` (not [`Format::Fill`], which the embedded model's FIM request
/// carries: [`fill_parts`]). `bursts` oldest first; `text` is the document now.
pub fn prompt(
    format: Format,
    path: &str,
    text: &[char],
    bursts: &[Burst],
    window: &Window,
) -> String {
    match format {
        Format::Zeta | Format::Fill => zeta_prompt(path, text, bursts, window),
        Format::Sweep => sweep_prompt(path, text, bursts, window),
    }
}

fn zeta_prompt(path: &str, text: &[char], bursts: &[Burst], window: &Window) -> String {
    let mut out = String::from(
        "### Instruction:\nYou are a code completion assistant and your task is to analyze user edits and then rewrite an excerpt that the user provides, suggesting the appropriate edits within the excerpt, taking into account the cursor location.\n\n### User Edits:\n\n",
    );
    for b in bursts {
        out.push_str(&format!(
            "User edited \"{path}\":\n```diff\n{}```\n\n",
            burst_diff(text, b)
        ));
    }
    out.push_str(&format!("### User Excerpt:\n\n```{path}\n"));
    if window.range.start == 0 {
        out.push_str("<|start_of_file|>\n");
    }
    out.push_str(REGION_START);
    out.push('\n');
    out.push_str(&with_marker(window, ZETA_CURSOR));
    if !window.text.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(REGION_END);
    out.push_str("\n```\n\n### Response:\n");
    out
}

fn sweep_prompt(path: &str, text: &[char], bursts: &[Burst], window: &Window) -> String {
    let (a, b) = (
        window.first_line + 1,
        window.first_line + window.text.lines().count(),
    );
    let mut out = format!("{FILE_SEP}{path}\n");
    let ctx_start = window.range.start.saturating_sub(2000);
    let ctx_end = (window.range.end + 2000).min(text.len());
    out.extend(text[ctx_start..ctx_end].iter());
    if !out.ends_with('\n') {
        out.push('\n');
    }
    for burst in bursts {
        out.push_str(&format!(
            "{FILE_SEP}{path}.diff\n{}",
            burst_diff(text, burst)
        ));
    }
    let original = bursts
        .last()
        .map_or_else(|| window.text.clone(), |l| before_burst(window, l));
    let mut block = |name: &str, body: &str| {
        out.push_str(&format!("{FILE_SEP}{name}/{path}:{a}:{b}\n{body}"));
        if !body.ends_with('\n') {
            out.push('\n');
        }
    };
    block("original", &original);
    block("current", &with_marker(window, SWEEP_CURSOR));
    out.push_str(&format!("{FILE_SEP}updated/{path}:{a}:{b}\n"));
    out
}

/// The rewritten window in a model's answer: Zeta's region (cursor marker removed),
/// Sweep's `updated/` block up to the next separator or end of text. `None` when the
/// answer holds no region.
pub fn parse(format: Format, answer: &str) -> Option<String> {
    let body = match format {
        Format::Zeta => {
            let start = answer.find(REGION_START)? + REGION_START.len();
            let rest = answer[start..]
                .strip_prefix('\n')
                .unwrap_or(&answer[start..]);
            &rest[..rest.find(REGION_END)?]
        }
        Format::Sweep | Format::Fill => {
            let end = answer.find(FILE_SEP).unwrap_or(answer.len());
            let end = answer[..end].find("<|endoftext|>").unwrap_or(end);
            &answer[..end]
        }
    };
    Some(body.replace(ZETA_CURSOR, "").replace(SWEEP_CURSOR, ""))
}

/// The embedded model's request parts: repository files `original/PATH` (the window
/// before the last burst) and `current/PATH` (now), the answer's file name, and its
/// start given to the model (the window's lines up to and including the cursor's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FillParts {
    /// `(path, text)` of the two files before.
    pub files: [(String, String); 2],
    /// The answer's file name.
    pub path: String,
    /// The window's start, given.
    pub given: String,
}

/// See [`FillParts`].
pub fn fill_parts(path: &str, bursts: &[Burst], window: &Window) -> FillParts {
    let original = bursts
        .last()
        .map_or_else(|| window.text.clone(), |l| before_burst(window, l));
    let chars: Vec<char> = window.text.chars().collect();
    let mut end = window.cursor.min(chars.len());
    while end < chars.len() && chars[end] != '\n' {
        end += 1;
    }
    let given: String = chars[..(end + 1).min(chars.len())].iter().collect();
    FillParts {
        files: [
            (format!("original/{path}"), original),
            (format!("current/{path}"), window.text.clone()),
        ],
        path: format!("updated/{path}"),
        given,
    }
}

/// What an answer so far decides of a rewrite of `rest` (the window's lines after
/// those given to the model): [`settle`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settled {
    /// Bytes of the answer that decided it (whole lines): the rest need not be
    /// generated.
    pub keep: usize,
    /// The whole rewrite of `rest`: the answer's decided lines, then the original
    /// lines after the point where it rejoined them.
    pub rewrite: String,
}

/// Whether `line` (without its newline) has a letter or a digit: a line of brackets or
/// blanks recurs too often to show where an answer rejoins the original.
fn telling(line: &str) -> bool {
    line.chars().any(char::is_alphanumeric)
}

/// The rewrite of `rest` an answer that writes `rest` again, changed, has decided by
/// its whole lines so far; `None` while it has not.
///
/// Decided: the answer copied every line of `rest` (nothing changes); or it left the
/// original at some line and then wrote a line equal to one of the original's lines
/// at or after that one (it rejoined the original there: what follows is the
/// original's rest). The original line rejoined is the one nearest the answer's line
/// number (replaced lines before inserted or deleted ones), and a line with no letter
/// or digit (`}`, a blank) rejoins only at the same line number, as a replacement of
/// as many lines. An answer that would change more lines further down is cut at its
/// first change: the next request suggests the others.
pub fn settle(rest: &str, answer: &str) -> Option<Settled> {
    let bare = |l: &str| -> String { l.strip_suffix('\n').unwrap_or(l).to_owned() };
    let original: Vec<String> = rest.split_inclusive('\n').map(bare).collect();
    if original.is_empty() {
        return Some(Settled {
            keep: 0,
            rewrite: String::new(),
        });
    }
    let mut keep = 0;
    let mut left: Option<usize> = None;
    for (j, line) in answer.split_inclusive('\n').enumerate() {
        if !line.ends_with('\n') {
            break;
        }
        keep += line.len();
        let body = bare(line);
        let Some(i) = left else {
            if original.get(j) == Some(&body) {
                if j + 1 == original.len() {
                    return Some(Settled {
                        keep,
                        rewrite: rest.to_owned(),
                    });
                }
                continue;
            }
            left = Some(j);
            if let Some(m) = rejoins(&original, j, j, &body) {
                return Some(rejoined(rest, answer, keep, m));
            }
            continue;
        };
        if let Some(m) = rejoins(&original, i, j, &body) {
            return Some(rejoined(rest, answer, keep, m));
        }
    }
    None
}

/// The original line at or after `from` that the answer's line `j`, `body`, rejoins.
fn rejoins(original: &[String], from: usize, j: usize, body: &str) -> Option<usize> {
    if !telling(body) {
        return (j > from && original.get(j).is_some_and(|o| o == body)).then_some(j);
    }
    (from..original.len())
        .filter(|&m| original[m] == body && (m > from || j > from))
        .min_by_key(|&m| (m.abs_diff(j), m < j))
}

fn rejoined(rest: &str, answer: &str, keep: usize, m: usize) -> Settled {
    let mut rewrite = answer[..keep].to_owned();
    rewrite.extend(rest.split_inclusive('\n').skip(m + 1));
    Settled { keep, rewrite }
}

/// The smallest change that turns the window into `rewrite`, as a suggestion on the
/// document; `None` when they are equal. With `partial`, the rewrite may stop early
/// (the model ran out of lines): it is compared with as many of the window's lines.
pub fn smallest_change(window: &Window, rewrite: &str, partial: bool) -> Option<Suggestion> {
    let mut old: Vec<char> = window.text.chars().collect();
    let mut new: Vec<char> = rewrite.chars().collect();
    if partial {
        // Whole lines only: a last line cut short is not judged.
        let keep = new.iter().rposition(|c| *c == '\n').map_or(0, |i| i + 1);
        new.truncate(keep);
        let lines = new.iter().filter(|c| **c == '\n').count();
        let cut = old
            .iter()
            .enumerate()
            .filter(|(_, c)| **c == '\n')
            .nth(lines.wrapping_sub(1))
            .map_or(if lines == 0 { 0 } else { old.len() }, |(i, _)| i + 1);
        old.truncate(cut);
    }
    let trailing_newline = |v: &[char]| v.last() == Some(&'\n');
    // A rewrite that lost (or gained) only the final newline is the same text.
    let (old_cmp, new_cmp) = if trailing_newline(&old) != trailing_newline(&new) {
        let trim = |v: &[char]| v.strip_suffix(&['\n']).unwrap_or(v).to_vec();
        (trim(&old), trim(&new))
    } else {
        (old.clone(), new.clone())
    };
    if old_cmp == new_cmp {
        return None;
    }
    let prefix = old_cmp
        .iter()
        .zip(&new_cmp)
        .take_while(|(a, b)| a == b)
        .count();
    let suffix = old_cmp[prefix..]
        .iter()
        .rev()
        .zip(new_cmp[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let start = window.range.start + prefix;
    let end = window.range.start + old_cmp.len() - suffix;
    Some(Suggestion {
        range: start..end,
        text: new_cmp[prefix..new_cmp.len() - suffix].iter().collect(),
    })
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether a model's suggestion may be shown: it changes something, does not take the
/// last burst back (its range overlapping the burst's text without keeping that text),
/// and is not inside the word the cursor is in when that is the word the burst ends in.
pub fn keep(text: &[char], last: Option<&Burst>, cursor: usize, s: &Suggestion) -> bool {
    let Some(here) = text.get(s.range.clone()) else {
        return false;
    };
    if here.iter().copied().eq(s.text.chars()) {
        return false;
    }
    let Some(burst) = last else {
        return true;
    };
    if undoes(text, burst, s) {
        return false;
    }
    let r = burst.range();
    let overlaps = s.range.start < r.end && r.start < s.range.end;
    if overlaps && (burst.new.is_empty() || !s.text.contains(burst.new.as_str())) {
        return false;
    }
    let end = r.end.min(text.len());
    let ends_in_word =
        (end > 0 && is_word(text[end - 1])) || text.get(end).is_some_and(|c| is_word(*c));
    if ends_in_word {
        let mut a = end;
        while a > 0 && is_word(text[a - 1]) {
            a -= 1;
        }
        let mut b = end;
        while b < text.len() && is_word(text[b]) {
            b += 1;
        }
        let cursor_in = a <= cursor && cursor <= b;
        let inside = a <= s.range.start && s.range.end <= b;
        if cursor_in && inside {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    fn chars(s: &str) -> Vec<char> {
        s.chars().collect()
    }

    const TEXT: &str =
        "fn main() {\n    let total = 1;\n    let d = count * 2;\n    println!(\"{count}\");\n}\n";

    fn renamed() -> Burst {
        let start = TEXT.find("total").unwrap();
        Burst {
            start,
            old: "count".into(),
            new: "total".into(),
            last: Instant::now(),
        }
    }

    #[test]
    fn the_window_is_whole_lines_around_the_cursor() {
        let t = chars(TEXT);
        let cursor = TEXT.find("total").unwrap() + 5;
        let w = window(&t, cursor, 1, 1);
        assert_eq!(
            w.text,
            "fn main() {\n    let total = 1;\n    let d = count * 2;\n"
        );
        assert_eq!(w.range.start, 0);
        assert_eq!(w.first_line, 0);
        assert_eq!(&w.text[w.cursor..w.cursor + 3], " = ");
    }

    #[test]
    fn a_burst_is_a_diff_of_its_lines() {
        let t = chars(TEXT);
        assert_eq!(
            burst_diff(&t, &renamed()),
            "@@ -2,1 +2,1 @@\n-    let count = 1;\n+    let total = 1;\n"
        );
    }

    #[test]
    fn zeta_marks_the_region_and_the_cursor_and_its_answer_is_read_back() {
        let t = chars(TEXT);
        let cursor = TEXT.find("total").unwrap() + 5;
        let w = window(&t, cursor, 0, 1);
        let p = prompt(Format::Zeta, "src/main.rs", &t, &[renamed()], &w);
        assert!(
            p.contains("User edited \"src/main.rs\":\n```diff\n@@ -2,1"),
            "{p}"
        );
        assert!(
            p.contains(&format!(
                "{REGION_START}\n    let total{ZETA_CURSOR} = 1;\n"
            )),
            "{p}"
        );
        assert!(
            p.ends_with(&format!("{REGION_END}\n```\n\n### Response:\n")),
            "{p}"
        );
        let answer = format!(
            "```src/main.rs\n{REGION_START}\n    let total{ZETA_CURSOR} = 1;\n    let d = total * 2;\n{REGION_END}\n```"
        );
        let rewrite = parse(Format::Zeta, &answer).unwrap();
        let s = smallest_change(&w, &rewrite, false).unwrap();
        assert_eq!(&TEXT[s.range.clone()], "count");
        assert_eq!(s.text, "total");
        assert!(keep(&t, Some(&renamed()), cursor, &s));
    }

    #[test]
    fn sweep_gives_the_window_before_and_now_and_opens_the_update() {
        let t = chars(TEXT);
        let cursor = TEXT.find("total").unwrap() + 5;
        let w = window(&t, cursor, 0, 1);
        let p = prompt(Format::Sweep, "a.rs", &t, &[renamed()], &w);
        assert!(
            p.contains(&format!(
                "{FILE_SEP}original/a.rs:2:3\n    let count = 1;\n"
            )),
            "{p}"
        );
        assert!(
            p.contains(&format!(
                "{FILE_SEP}current/a.rs:2:3\n    let total{SWEEP_CURSOR} = 1;\n"
            )),
            "{p}"
        );
        assert!(p.ends_with(&format!("{FILE_SEP}updated/a.rs:2:3\n")), "{p}");
        let rewrite = parse(Format::Sweep, &format!("{}<|file_sep|>", w.text)).unwrap();
        assert_eq!(smallest_change(&w, &rewrite, false), None);
    }

    #[test]
    fn a_partial_rewrite_is_compared_with_as_many_lines() {
        let t = chars(TEXT);
        let w = window(&t, 0, 0, 3);
        let s = smallest_change(&w, "fn main() {\n    let total = 2;\n", true).unwrap();
        assert_eq!(s.text, "2");
        assert_eq!(&TEXT[s.range], "1");
        assert_eq!(
            smallest_change(&w, "fn main() {\n    let total = 1;", true),
            None
        );
    }

    #[test]
    fn the_gates_drop_an_undo_and_an_edit_in_the_word_being_typed() {
        let t = chars(TEXT);
        let b = renamed();
        let at = b.start;
        let back = Suggestion {
            range: at..at + 5,
            text: "count".into(),
        };
        assert!(!keep(&t, Some(&b), at + 5, &back));
        // A wider edit that drops the burst's text takes it back too.
        let wide = Suggestion {
            range: at - 4..at + 9,
            text: "let x = 1".into(),
        };
        assert!(!keep(&t, Some(&b), at + 5, &wide));
        // The word the cursor is in, the burst ending in it: nothing inside it.
        let typing = Burst {
            start: at,
            old: String::new(),
            new: "tot".into(),
            last: Instant::now(),
        };
        let text = chars(&TEXT.replacen("total", "tot", 1));
        let finish = Suggestion {
            range: at + 3..at + 3,
            text: "al".into(),
        };
        assert!(!keep(&text, Some(&typing), at + 3, &finish));
        // Elsewhere, it may.
        let below = TEXT.find("count").unwrap();
        let use_below = Suggestion {
            range: below..below + 5,
            text: "total".into(),
        };
        assert!(keep(&t, Some(&b), at + 5, &use_below));
    }

    const REST: &str = "    let d = count * 2;\n    log(d);\n    println!(\"{count}\");\n}\n";

    #[test]
    fn an_answer_is_settled_once_it_rejoins_the_original() {
        // Nothing decided while it copies, or has left the original and not come back.
        assert_eq!(settle(REST, "    let d = count * 2;\n    log(d);\n"), None);
        assert_eq!(settle(REST, "    let d = total * 2;\n"), None);
        // A line still being written decides nothing.
        assert_eq!(settle(REST, "    let d = total * 2;\n    log(d"), None);
        // Replaced, then rejoined at the same line: the original's rest follows.
        let a = "    let d = total * 2;\n    log(d);\n";
        let s = settle(REST, a).unwrap();
        assert_eq!(s.keep, a.len());
        assert_eq!(s.rewrite, REST.replacen("count", "total", 1));
        // More after the rejoined line is not read.
        let s = settle(REST, &format!("{a}    junk\n")).unwrap();
        assert_eq!(s.keep, a.len());
        // Copied to the end: nothing changes.
        let s = settle(REST, REST).unwrap();
        assert_eq!((s.keep, s.rewrite.as_str()), (REST.len(), REST));
    }

    #[test]
    fn a_rejoin_finds_inserted_and_deleted_lines() {
        // A line inserted: the answer's second line is the original's first.
        let a = "    let e = 0;\n    let d = count * 2;\n";
        let s = settle(REST, a).unwrap();
        assert_eq!(s.rewrite, format!("    let e = 0;\n{REST}"));
        // A line deleted: the first line differs and is the original's second.
        let s = settle(REST, "    log(d);\n").unwrap();
        assert_eq!(s.rewrite, REST.replacen("    let d = count * 2;\n", "", 1));
    }

    #[test]
    fn a_line_without_words_rejoins_only_in_place() {
        let rest = "    a = 1;\n    b = 2;\n}\n";
        // `}` where the original has `    b = 2;`: not a rejoin at the original's `}`.
        assert_eq!(settle(rest, "    a = 3;\n}\n"), None);
        // `}` in its own place, after the two lines were replaced: a rejoin.
        let s = settle(rest, "    a = 3;\n    b = 4;\n}\n").unwrap();
        assert_eq!(s.rewrite, "    a = 3;\n    b = 4;\n}\n");
        // An empty rest is decided before anything is written.
        assert_eq!(settle("", "").map(|s| s.keep), Some(0));
    }

    #[test]
    fn a_settled_rewrite_gives_the_change_alone() {
        let t = chars(TEXT);
        let cursor = TEXT.find("total").unwrap();
        let w = window(&t, cursor, 0, 3);
        let f = fill_parts("a.rs", &[renamed()], &w);
        let rest = &w.text[f.given.len()..];
        let s = settle(rest, "    let d = total * 2;\n    println!(\"{count}\");\n").unwrap();
        let change = smallest_change(&w, &format!("{}{}", f.given, s.rewrite), false).unwrap();
        assert_eq!(&TEXT[change.range], "count");
        assert_eq!(change.text, "total");
    }

    #[test]
    fn fill_gives_the_window_up_to_the_cursor_line() {
        let t = chars(TEXT);
        let cursor = TEXT.find("total").unwrap();
        let w = window(&t, cursor, 1, 2);
        let f = fill_parts("a.rs", &[renamed()], &w);
        assert_eq!(f.given, "fn main() {\n    let total = 1;\n");
        assert!(f.files[0].1.contains("let count = 1;"));
        assert_eq!(f.path, "updated/a.rs");
    }
}
