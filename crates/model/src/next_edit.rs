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
            let left = lines.saturating_sub(parts.given.lines().count());
            let request = FimRequest {
                path: parts.path,
                language: None,
                prefix: parts.given.clone(),
                suffix: String::new(),
                context,
                max_tokens: shape.max_tokens,
            };
            (request, StopRules::lines(left), parts.given)
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
    let (rewritten, partial) = match asked.format {
        Format::Fill => {
            let mut body = rewrite::parse(Format::Fill, answer)?;
            if stop == FimStop::Rule && !body.ends_with('\n') {
                // The line budget cut it at a line's end.
                body.push('\n');
            }
            (format!("{}{body}", asked.given), stop != FimStop::EndOfText)
        }
        Format::Zeta => (rewrite::parse(Format::Zeta, answer)?, false),
        Format::Sweep => (
            rewrite::parse(Format::Sweep, answer)?,
            stop != FimStop::EndOfText && !answer.contains(rewrite::FILE_SEP),
        ),
    };
    let s = rewrite::smallest_change(&asked.window, &rewritten, partial)?;
    rewrite::keep(text, last, cursor, &s).then_some(s)
}
