//! A next-edit request for any [`crate::Completer`]: the window around the cursor and
//! the user's recent bursts ([`agentls_text::next_edit::rewrite`]) as a
//! [`FimRequest`] in one of the layouts, and the suggestion read back from the answer.
//! The server and `agentls bench next-edit` build and read requests here, so the bench
//! measures what editors get.
//!
//! [`Format::Zeta`] and [`Format::Sweep`] send the whole prompt as the request's
//! prefix (an OpenAI-compatible `/completions` endpoint sends it as `prompt`);
//! [`Format::Fill`] gives a FIM model the `original/` and `current/` windows as
//! repository files and the `updated/` window's lines up to the cursor's as the
//! prefix: it writes the window's rest.
//!
//! The `fill` answer writes the window's rest again, and its [`StopRules::rewrite`]
//! ends it as soon as its lines decide the rewrite
//! ([`rewrite::settle`]): copied to the end, or back on the window's lines after a
//! change (the window's lines after that point complete it). A backend may draft the
//! answer from the text the rules expect ([`StopRules::copy_of`]); the embedded engine
//! does.

use agentls_text::next_edit::rewrite::{self, Format, Window};
use agentls_text::next_edit::{Burst, Suggestion};

use crate::complete::{ContextChunk, FimRequest, FimStop, StopRules};

/// The size of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Lines above the cursor's line the model may rewrite.
    pub lines_before: usize,
    /// Lines below it.
    pub lines_after: usize,
    /// Most tokens to generate.
    pub max_tokens: u32,
}

/// Lines a Zeta answer adds around the region (fence, markers).
const FRAME_LINES: usize = 6;

/// A request ready for a model, and how its answer is read.
#[derive(Debug)]
pub struct Asked {
    /// The request.
    pub request: FimRequest,
    /// Where the answer ends.
    pub rules: StopRules,
    /// The layout.
    pub format: Format,
    /// The window asked about.
    pub window: Window,
    /// Text of the window given to the model as the answer's start ([`Format::Fill`]).
    pub given: String,
}

/// The request for `format` on `text` (the document's chars) with the cursor at
/// `cursor`, `bursts` oldest first.
pub fn ask(
    format: Format,
    path: &str,
    text: &[char],
    bursts: &[Burst],
    cursor: usize,
    shape: Shape,
) -> Asked {
    let window = rewrite::window(text, cursor, shape.lines_before, shape.lines_after);
    let lines = window.text.lines().count();
    let (request, rules, given) = match format {
        Format::Fill => {
            let parts = rewrite::fill_parts(path, bursts, &window);
            let context = parts
                .files
                .iter()
                .map(|(path, text)| ContextChunk {
                    path: path.clone(),
                    text: text.clone(),
                })
                .collect();
            let rest = window.text.get(parts.given.len()..).unwrap_or_default();
            let request = FimRequest {
                path: parts.path,
                language: None,
                prefix: parts.given.clone(),
                suffix: String::new(),
                context,
                max_tokens: shape.max_tokens,
            };
            (request, StopRules::rewrite(rest), parts.given)
        }
        Format::Zeta | Format::Sweep => {
            let request = FimRequest {
                path: path.to_owned(),
                language: None,
                prefix: rewrite::prompt(format, path, text, bursts, &window),
                suffix: String::new(),
                context: Vec::new(),
                max_tokens: shape.max_tokens,
            };
            (
                request,
                StopRules::lines(lines + FRAME_LINES),
                String::new(),
            )
        }
    };
    Asked {
        request,
        rules,
        format,
        window,
        given,
    }
}

/// The suggestion in a model's `answer` to `asked`, past the gates.
pub fn read_answer(
    asked: &Asked,
    answer: &str,
    stop: FimStop,
    text: &[char],
    last: Option<&Burst>,
    cursor: usize,
) -> Option<Suggestion> {
    // An answer its rules settled (ended once it rejoined the window's lines) is the
    // whole rewrite with the window's lines after that point.
    let settled = |body: &str| {
        let rest = asked.rules.copy_of()?;
        rewrite::settle(rest, body).map(|s| format!("{}{}", asked.given, s.rewrite))
    };
    let whole = match asked.format {
        Format::Fill => rewrite::parse(Format::Fill, answer).and_then(|b| settled(&b)),
        Format::Zeta | Format::Sweep => None,
    };
    let (rewritten, partial) = match (whole, asked.format) {
        (Some(whole), _) => (whole, false),
        (None, Format::Fill) => {
            let mut body = rewrite::parse(Format::Fill, answer)?;
            if stop == FimStop::Rule && !body.ends_with('\n') {
                // The line budget cut it at a line's end.
                body.push('\n');
            }
            (format!("{}{body}", asked.given), stop != FimStop::EndOfText)
        }
        (None, Format::Zeta) => (rewrite::parse(Format::Zeta, answer)?, false),
        (None, Format::Sweep) => (
            rewrite::parse(Format::Sweep, answer)?,
            stop != FimStop::EndOfText && !answer.contains(rewrite::FILE_SEP),
        ),
    };
    let s = rewrite::smallest_change(&asked.window, &rewritten, partial)?;
    rewrite::keep(text, last, cursor, &s).then_some(s)
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    const TEXT: &str = "def f():\n    total = 1\n    a = count + 1\n    b = 2\n    return a\n";

    fn asked() -> (Vec<char>, Burst, Asked) {
        let text: Vec<char> = TEXT.chars().collect();
        let start = TEXT.find("total").unwrap_or_default();
        let burst = Burst {
            start,
            old: "count".into(),
            new: "total".into(),
            last: Instant::now(),
        };
        let shape = Shape {
            lines_before: 1,
            lines_after: 3,
            max_tokens: 64,
        };
        let asked = ask(
            Format::Fill,
            "f.py",
            &text,
            std::slice::from_ref(&burst),
            start + 5,
            shape,
        );
        (text, burst, asked)
    }

    #[test]
    fn the_fill_answer_ends_where_it_rejoins_the_window_and_reads_as_one_change() {
        let (text, burst, asked) = asked();
        assert_eq!(
            asked.rules.copy_of(),
            Some("    a = count + 1\n    b = 2\n    return a\n")
        );
        let answer = "    a = total + 1\n    b = 2\n";
        // Decided at the line that is the window's again: no token more.
        assert_eq!(asked.rules.cut(answer), Some(answer.len()));
        let at = burst.start + 5;
        let s = read_answer(&asked, answer, FimStop::Rule, &text, Some(&burst), at).unwrap();
        assert_eq!(TEXT.get(s.range.clone()), Some("count"));
        assert_eq!(s.text, "total");
        // A line inserted, then the window's next line: the insertion alone.
        let answer = "    print(total)\n    a = count + 1\n";
        let s = read_answer(&asked, answer, FimStop::Rule, &text, Some(&burst), at).unwrap();
        assert!(s.range.is_empty(), "{s:?}");
        let mut applied = TEXT.to_owned();
        applied.replace_range(s.range.clone(), &s.text);
        assert_eq!(
            applied,
            TEXT.replace("    a =", "    print(total)\n    a =")
        );
        // The window copied: nothing.
        let copied = asked.rules.copy_of().unwrap_or_default().to_owned();
        assert_eq!(asked.rules.cut(&copied), Some(copied.len()));
        assert_eq!(
            read_answer(&asked, &copied, FimStop::Rule, &text, Some(&burst), at),
            None
        );
    }
}
